"""bytebpe.BatchJob: a list encoded by several threads in chunks equals the serial encoding.

The job hands out chunks of texts as threads come free, and the calling
thread makes the lists of finished chunks in order; whatever the chunk
size and the number of threads, the result must be the one-thread one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks._kernels.bytebpe import ByteBPE, Pattern

# 256 bytes, then a few merged tokens in rank order (tiktoken style: the rank is the id).
MERGED = [b"th", b"he", b"the", b" t", b" the", b"in", b"ing", b"an", b"and", b" a", b" and", b"\xc3\xa9",
          b"\xe3\x81", b"\xe3\x81\xae", b"12", b"123", b"  ", b"\n\n"]


@pytest.fixture(scope="module")
def bpe():
    return ByteBPE([bytes([i]) for i in range(256)] + MERGED, None, pattern=Pattern.PAT_CL100K, whole_piece=True)


TEXTS = ["the thing and the other", "", "é café naïve", "日本語のテキスト", "12345 123 12", "  \n\n x",
         "emoji 🙂 and 😀", "a" * 500, "the" * 300 + " and"]


def run_job(bpe, texts, chunk_chars, helpers):
    job = bpe.batch_job(texts, False, chunk_chars)
    with ThreadPoolExecutor(max(helpers, 1)) as pool:
        futures = [pool.submit(job.work) for _ in range(helpers)]
        out = job.run()
        for future in futures:
            future.result()
    return out


@pytest.mark.parametrize("chunk_chars", [1, 7, 100, 32_768])
@pytest.mark.parametrize("helpers", [0, 1, 3])
def test_job_equals_serial_encoding(bpe, chunk_chars, helpers):
    texts = TEXTS * 40
    want = [bpe.encode(t) for t in texts]
    assert bpe.encode_batch(texts) == want
    assert run_job(bpe, texts, chunk_chars, helpers) == want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40).filter(lambda t: not any(0xD800 <= ord(c) < 0xE000 for c in t)), max_size=30),
       st.integers(1, 64))
def test_any_list_any_chunking(bpe, texts, chunk_chars):
    assert run_job(bpe, texts, chunk_chars, 1) == [bpe.encode(t) for t in texts]


def test_chunks_and_empty_list(bpe):
    assert bpe.batch_job(["ab", "cd", "ef"], False, 1).n_chunks == 3
    assert bpe.batch_job(["ab", "cd", "ef"], False, 1 << 20).n_chunks == 1
    # The default groups short texts (a chunk per text would cost a lock and an allocation each).
    assert bpe.batch_job(["a line of text"] * 1000).n_chunks == 1
    assert 10 <= bpe.batch_job(["x" * 1000] * 1000).n_chunks <= 100
    job = bpe.batch_job([], False)
    assert job.n_chunks == 0 and job.run() == []


def test_surrogates_and_wrong_types(bpe):
    assert bpe.batch_job(["fine", "a\udfffb"], True) is None     # the caller takes the replacing path
    with pytest.raises(TypeError):
        bpe.batch_job(["fine", b"bytes"], False)


def test_the_list_may_change_while_the_job_runs(bpe):
    texts = TEXTS * 10
    want = [bpe.encode(t) for t in texts]
    job = bpe.batch_job(texts, False, 16)
    texts.clear()                       # the job holds its own tuple of the texts
    assert job.run() == want


def test_result_lists_are_plain_lists_the_collector_skips(bpe):
    # Ints cannot form a cycle: untracked lists keep a batch's many results out of
    # every collection pass (see the bytebpe module doc), and still behave as lists.
    import gc

    texts = ["hello world", "a b", ""] * 50
    job_out = bpe.batch_job(texts, chunk_chars=8).run()
    for out in (job_out, bpe.encode_batch(texts), [bpe.encode("hello world")]):
        assert all(type(ids) is list and not gc.is_tracked(ids) for ids in out)
    assert gc.is_tracked(job_out)           # the outer list holds lists: tracked as usual
    first = job_out[0]
    first.append(7)
    assert first[-1] == 7 and first[:-1] == bpe.encode("hello world")
