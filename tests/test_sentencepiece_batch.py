"""Lists through pieceworks.sentencepiece: the batch path against sentencepiece's own list encode.

``encode(list)`` runs every text in one kernel call per thread (no GIL) and
makes the Python lists at the end. These tests hold that path to
sentencepiece for every option the batch path serves (ids and pieces,
``emit_unk_piece``, ``add_bos``/``add_eos``/``reverse``, processor
defaults, bytes items, empty texts, unknown runs) on one and several
threads, and check that several Python threads may encode at once.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

import pytest

import pieceworks.sentencepiece as pw_spm
from pieceworks.errors import ConfigError, InputTypeError

spm = pytest.importorskip("sentencepiece")

MODELS = ["sentencepiece_test_model.model",              # Unigram, unknown runs (no byte fallback)
          "hf_transformers_fixtures/spiece.model",       # Unigram, no <s>
          "llama2/tokenizer.model",                      # BPE, byte fallback
          "sentencepiece_test_ja_model.model"]
ODD = ["", " ", "  a  b  ", "ЖЖЖ 😀 x", "\u3000ｱﾞ", "<s></s><unk>", "e\u0301", "a\tb\nc", "☃☃ snow ☃"]


@lru_cache(maxsize=None)
def _texts(root: str) -> list[str]:
    """About 100 KB of prose and Japanese (enough for every thread to get a range), and odd texts."""
    base = Path(root) / "corpora"
    lines = open(base / "english" / "botchan.txt", encoding="utf-8-sig").read().splitlines()[:1200]
    lines += open(base / "multilingual" / "ja_wagahaiwa_nekodearu.txt", encoding="utf-8-sig").read().splitlines()[:200]
    return lines + ODD * 3


@lru_cache(maxsize=None)
def _pair(path: str):
    return pw_spm.SentencePieceProcessor(model_file=path), spm.SentencePieceProcessor(model_file=path)


def pair(shared_data, name):
    return _pair(str(shared_data / "tokenizers" / "sentencepiece" / name))


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_list_encode_matches_sentencepiece(shared_data, name, threads):
    ours, theirs = pair(shared_data, name)
    texts = _texts(str(shared_data))
    for kwargs in ({}, {"out_type": str}, {"out_type": str, "emit_unk_piece": True}):
        assert ours.encode(texts, num_threads=threads, **kwargs) == theirs.encode(texts, num_threads=threads,
                                                                                   **kwargs), kwargs
    # The batch equals the texts one by one (ids are the shared small ints, lists are fresh).
    out = ours.encode(texts, num_threads=threads)
    assert out == [ours.encode(t) for t in texts]
    assert len({id(x) for x in out}) == len(out)


@pytest.mark.parametrize("name", ["sentencepiece_test_model.model", "llama2/tokenizer.model"])
def test_bos_eos_and_reverse_on_the_batch_path(shared_data, name):
    ours, theirs = pair(shared_data, name)
    texts = _texts(str(shared_data))[:300] + ODD
    for kwargs in (dict(add_bos=True), dict(add_eos=True, reverse=True), dict(add_bos=True, add_eos=True),
                   dict(reverse=True, out_type=str), dict(add_bos=True, out_type=str, emit_unk_piece=True)):
        assert ours.encode(texts, num_threads=2, **kwargs) == theirs.encode(texts, num_threads=2, **kwargs), kwargs


def test_processor_defaults_reach_the_batch_path(shared_data):
    path = str(shared_data / "tokenizers" / "sentencepiece" / "llama2" / "tokenizer.model")
    texts = _texts(str(shared_data))[:400]
    for defaults in (dict(out_type=str), dict(add_bos=True, add_eos=True), dict(reverse=True, out_type=str),
                     dict(emit_unk_piece=True, out_type=str)):
        ours = pw_spm.SentencePieceProcessor(model_file=path, **defaults)
        theirs = spm.SentencePieceProcessor(model_file=path, **defaults)
        assert ours.encode(texts) == theirs.encode(texts), defaults
        assert ours.encode(texts, out_type=int, add_bos=False) == theirs.encode(texts, out_type=int, add_bos=False)


def test_bytes_items_empty_lists_and_bad_items(shared_data):
    ours, theirs = pair(shared_data, "llama2/tokenizer.model")
    mixed = ["abc", b"abc", "na\u00efve".encode(), ""]
    assert ours.encode(mixed) == theirs.encode(mixed)
    assert ours.encode([]) == theirs.encode([]) == []
    with pytest.raises(InputTypeError, match="str or bytes"):
        ours.encode(["abc", 5])
    with pytest.raises(InputTypeError, match="surrogate"):
        ours.encode(["abc", "a\ud800b"], num_threads=2)
    with pytest.raises(ConfigError, match="out_type"):
        ours.encode(["abc"], out_type=float)
    no_bos, _ = pair(shared_data, "hf_transformers_fixtures/spiece.model")
    with pytest.raises(ConfigError, match="add_bos"):
        no_bos.encode(["x", "y"], add_bos=True)


def test_python_threads_may_encode_lists_at_once(shared_data):
    ours, _ = pair(shared_data, "hf_transformers_fixtures/spiece.model")
    texts = _texts(str(shared_data))
    want_ids, want_pieces = ours.encode(texts), ours.encode(texts, out_type=str)
    results: list = [None] * 8
    start = threading.Barrier(4)

    def work(k):
        start.wait()
        results[2 * k] = ours.encode(texts, num_threads=2)
        results[2 * k + 1] = ours.encode(texts, out_type=str, num_threads=1)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert results[0::2] == [want_ids] * 4
    assert results[1::2] == [want_pieces] * 4


def test_sampling_lists_still_take_the_general_path(shared_data):
    ours, theirs = pair(shared_data, "sentencepiece_test_model.model")
    texts = ["hello world", "abc"]
    pw_spm.set_random_generator_seed(5)
    samples = ours.encode(texts, enable_sampling=True, alpha=0.1, nbest_size=-1, out_type=str)
    assert [theirs.decode_pieces(p) for p in samples] == texts


def test_batch_jobs_in_many_chunks_on_many_threads(shared_data):
    """The kernel's BatchJob: any chunk size, any number of helper threads, results in order."""
    ours, _ = pair(shared_data, "sentencepiece_test_ja_model.model")
    encoder = ours._defaults.encoder
    texts = _texts(str(shared_data))
    want_ids = [ours.encode(t) for t in texts]
    want_pieces = [ours.encode(t, out_type=str, emit_unk_piece=True) for t in texts]
    for chunk_bytes, helpers, as_pieces in [(1, 3, False), (300, 2, True), (5000, 1, False), (10**9, 2, True)]:
        job = encoder.batch_job(texts, as_pieces, chunk_bytes)
        threads = [threading.Thread(target=job.work) for _ in range(helpers)]
        for t in threads:
            t.start()
        out = job.run(as_pieces)
        for t in threads:
            t.join()
        assert out == (want_pieces if as_pieces else want_ids), (chunk_bytes, helpers)
    # A text the kernel cannot take (a lone surrogate) in a middle chunk: None, the general path decides.
    job = encoder.batch_job(texts[:300] + ["a\ud800"] + texts[300:600], False, 500)
    helper = threading.Thread(target=job.work)
    helper.start()
    assert job.run() is None
    helper.join()
    assert encoder.batch_job(["a", 5], False) is None
