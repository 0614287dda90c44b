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


# Chars of every width (1, 2 and 4 bytes in a str), so texts of each kind are drawn; a surrogate
# may land anywhere, on either side of the 64-char blocks the check reads at a time.
WIDE = st.sampled_from(["a", " ", "\u00e9", "\u4e2d", "\uffff", "\U0001f600", "\ud7ff", "\ue000"])


@settings(max_examples=200, deadline=None)
@given(st.lists(WIDE, max_size=300), st.data())
def test_a_lone_surrogate_is_found_wherever_it_is(bpe, chars, data):
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(chars)))
        chars.insert(at, data.draw(st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])))
    text = "".join(chars)
    holds = any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    assert bpe.has_surrogates(text) == holds
    job = bpe.batch_job(["fine", text, "also fine"], True)
    assert (job is None) == holds
    if job is not None:
        assert job.run() == [bpe.encode("fine"), bpe.encode(text), bpe.encode("also fine")]


def test_a_job_gives_back_every_reference_to_its_texts(bpe):
    # The job holds each text while threads read it and lets go of it once its list is made:
    # neither a reference too many (a leak) nor one too few (a text freed under the user).
    import sys

    texts = [f"text number {k} " * (k % 7 + 1) + "\u00e9" * (k % 3) for k in range(500)] + ["x" * 5000]
    before = [sys.getrefcount(t) for t in texts]
    assert run_job(bpe, texts, 64, 1) == [bpe.encode(t) for t in texts]
    bpe.batch_job(texts, False, 64)                    # made and dropped without running
    assert bpe.batch_job(texts + ["\udfff"], True) is None
    with pytest.raises(TypeError):
        bpe.batch_job(texts + [7], False)
    assert [sys.getrefcount(t) for t in texts] == before


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


# Long texts are cut into segments at a letter after a line feed (bytebpe.safe_cut); the chars
# around such a place are what could make a scanner's pieces differ, so texts are drawn from them.
CUT_CHARS = list("ab \n\r\t.!'s0123") + ["\u00e9", "\u4e2d", "\U0001f600", "\u0301", "\u00a0", "  ", "\n\n", "'ll"]
PATTERNS = [Pattern.PAT_GPT2, Pattern.PAT_CL100K, Pattern.PAT_O200K, Pattern.PAT_QWEN2, Pattern.PAT_CL100K_EOT]


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.sampled_from(CUT_CHARS), min_size=1, max_size=120), chunk_chars=st.integers(1, 8))
def test_long_texts_cut_in_segments_encode_as_whole(pattern, pieces, chunk_chars):
    kernel = ByteBPE([bytes([i]) for i in range(256)] + MERGED, None, pattern=pattern, whole_piece=True)
    text = "".join(pieces)
    texts = [text, "x\ny", text[::-1], ""]
    want = [kernel.encode(t) for t in texts]
    assert run_job(kernel, texts, chunk_chars, 1) == want
    assert run_job(kernel, texts, chunk_chars, 0) == want


def test_a_long_text_is_cut_and_shared_by_threads(bpe):
    text = "".join(f"line {k} of the text, and the thing\nnext " for k in range(3000))
    job = bpe.batch_job([text], False, 4096)
    assert job.n_chunks > 10, "cut into segments, one chunk each"
    want = bpe.encode(text)
    assert run_job(bpe, [text], 4096, 1) == [want]
    assert run_job(bpe, ["a", text, "b", text[:5000]], 1000, 2) == [bpe.encode("a"), want, bpe.encode("b"),
                                                                      bpe.encode(text[:5000])]
    no_cut = "x" * 50_000     # no line feed: one segment
    assert bpe.batch_job([no_cut], False, 4096).n_chunks == 1


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_real_texts_cut_in_segments(shared_data, name):
    from pieceworks import tiktoken as pw_tiktoken

    pw_tiktoken.set_data_dir(shared_data / "tokenizers/tiktoken")
    encoding = pw_tiktoken.get_encoding(name)
    kernel = encoding._core
    corpora = shared_data / "corpora"
    texts = [(corpora / path).read_text(encoding="utf-8", errors="replace")[:150_000]
             for path in ("english/botchan.txt", "code/llama.cpp_ggml_c_cpp.txt", "english/linux-6.1_docs_rst.txt",
                          "multilingual/udhr_532_languages.jsonl")]
    want = [kernel.encode(t) for t in texts]
    job = kernel.batch_job(texts, False, 512)
    assert job.n_chunks > 100, "the texts were cut (whole, they would make 4 chunks)"
    assert run_job(kernel, texts, 512, 1) == want
    # One long text alone is cut too, and the face then runs it on threads.
    assert encoding.encode_ordinary_batch(["\n\n".join(texts)], num_threads=2) == [kernel.encode("\n\n".join(texts))]


def test_batch_inputs_are_not_copied_into_the_collectors_sight():
    # Each collection the new lists of a batch trigger (one per 700) walked a young copy of
    # all its texts: the face reads a list as it is, the Tokenizer's snapshot is untracked.
    import gc

    from pieceworks import tiktoken as pw
    from pieceworks.tiktoken.core import _check_list
    from pieceworks.tokenizer import _as_list

    texts = ["a b", "c"]
    assert _check_list(texts) is texts
    copied = _check_list(t for t in texts)
    assert copied == texts and not gc.is_tracked(copied)
    snapshot = _as_list(texts, "input")
    assert snapshot == texts and snapshot is not texts and not gc.is_tracked(snapshot)
    enc = pw.Encoding("toy", pat_str=pw.core.GPT2_PATTERN, mergeable_ranks={bytes([i]): i for i in range(256)},
                      special_tokens={})
    assert enc.encode_ordinary_batch(iter(texts)) == [[97, 32, 98], [99]]


@pytest.mark.parametrize("method", ["encode_batch", "encode_raw_batch"])
def test_one_thread_batches_hold_their_texts_while_another_thread_changes_the_list(bpe, method):
    # encode_batch and encode_raw_batch read the texts' chars with the GIL released. Another
    # thread that replaces the list's items meanwhile frees the strs they read (texts over 1 MB
    # go back to the system when freed). The batch must encode one whole generation of the
    # texts, the one the list held when it was called.
    from pieceworks._kernels.raw_encoding import id_list
    from racing import list_changed_meanwhile

    def make(generation):
        return [f"the {generation:06d} and " * 80_000 + "\u00e9" * k for k in range(3)]

    with list_changed_meanwhile([], make) as texts:
        for _ in range(6):
            out = getattr(bpe, method)(texts)
            ids = out if method == "encode_batch" else [id_list(raw, n) for raw, n, _ in out]
            generation = int(bpe.decode_bytes(ids[0][:8]).decode().split()[1])
            assert ids == [bpe.encode(t) for t in make(generation)]
