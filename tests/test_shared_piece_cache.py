"""The byte-level kernel's piece cache, which every thread shares (``bytebpe.cache_put``).

Threads add pieces at once, each into its own blocks of the arenas, and a
full cache takes nothing more until no thread encodes. Whatever the cache
holds, and however the threads interleave, every text must encode as it
does alone with an empty cache.
"""

from __future__ import annotations

import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks import tiktoken as pw_tiktoken
from pieceworks._kernels.bytebpe import ByteBPE, Pattern
from pieceworks.fast._pool import run_job


def small_model() -> ByteBPE:
    """A byte-level kernel whose merges make many distinct multi-token pieces (few whole-piece hits)."""
    tokens = [bytes([i]) for i in range(256)]
    for a in b"aeiou":
        for b in b"bcdfgklmnprst":
            tokens.append(bytes([b, a]))
    return ByteBPE(tokens, None, pattern=Pattern.PAT_CL100K, whole_piece=True)


def words(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join("".join(rng.choice("bcdfgklmnprstaeiou") for _ in range(rng.randint(2, 12)))
                     for _ in range(rng.randint(1, 30))) for _ in range(n)]


def alone(texts: list[str]) -> list[list[int]]:
    fresh = small_model()
    out = []
    for text in texts:
        fresh.clear_cache()
        out.append(fresh.encode(text))
    return out


@pytest.mark.parametrize("slots", [2 ** 17, 1024, 128])
def test_batches_on_threads_match_each_text_alone(slots):
    # 128 slots: the arenas are smaller than one thread's block, so nothing is ever cached.
    kernel = small_model()
    kernel._make_cache(slots)
    texts = words(slots, 3000)
    want = alone(texts)
    for threads in (1, 2, 4):
        for _ in range(2):      # the second time over a cache that holds (some of) the pieces
            assert run_job(kernel.batch_job(texts, chunk_chars=512), threads) == want


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 32), threads=st.integers(2, 4))
def test_threads_encoding_at_once_into_a_small_cache(seed, threads):
    kernel = small_model()
    kernel._make_cache(1024)
    texts = words(seed, 400)
    want = alone(texts)
    results: dict[int, list] = {}

    def encode(k: int) -> None:
        order = list(range(len(texts)))
        random.Random(seed + k).shuffle(order)
        results[k] = {i: kernel.encode(texts[i]) for i in order}

    workers = [threading.Thread(target=encode, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for k in range(threads):
        assert [results[k][i] for i in range(len(texts))] == want


def test_a_full_cache_is_emptied_when_no_thread_encodes():
    kernel = small_model()
    kernel._make_cache(1024)
    texts = words(7, 2000)
    want = alone(texts)
    for _ in range(3):      # fills it, then each call starts from an emptied one
        assert [kernel.encode(t) for t in texts] == want
    kernel.clear_cache()
    assert kernel.encode_batch(texts) == want


def test_a_cache_is_remade_only_when_idle():
    kernel = small_model()
    with pytest.raises(ValueError, match="power of two"):
        kernel._make_cache(1000)


def test_real_ranks_on_threads(shared_data):
    pw_tiktoken.set_data_dir(shared_data / "tokenizers/tiktoken")
    enc = pw_tiktoken.get_encoding("o200k_base")
    text = (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").read_text(encoding="utf-8")[:400_000]
    lines = text.splitlines(keepends=True)
    enc._core.clear_cache()
    want = [enc.encode_ordinary(t) for t in lines]
    for threads in (2, 3):
        enc._core.clear_cache()
        assert enc.encode_ordinary_batch(lines, num_threads=threads) == want
