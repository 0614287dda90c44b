"""Byte-level offsets and words worked out from the ids, the piece ends and the text (``spans_of_ids``).

``Tokenizer.encode`` of one str hands over the ids alone and keeps the text
(``raw_encoding.SpanSource``, ``bytebpe.ByteSpans``): the spans are worked
out when first read. ``encode_batch``'s kernel job keeps each chunk's ids
and piece ends (``bytebpe.ChunkSpans``), shared by the chunk's encodings,
which hold their ids list alone until another list is read. Each test holds what an encoding reads to what the kernel
gives with its spans made at once (``ByteBPE.encode_raw``), and to the
general pipeline, field by field.
"""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity import assert_same_encoding
from pieceworks import Encoding, Tokenizer
from pieceworks._kernels import raw_encoding
from pieceworks.models import BPE
from pieceworks.pre_tokenizers import ByteLevel
from pieceworks.trainers import BpeTrainer

CORPUS = ["hello world, hello worlds", "the cat sat on the mat", "héllo wörld ünïcode café", "x = f(y) + 1;",
          "中文 文本 😀 emoji", "ﬁne ǅ Ǆ"] * 20


def trained(prefix_space: bool) -> Tokenizer:
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = ByteLevel(add_prefix_space=prefix_space)
    tok.train_from_iterator(CORPUS, BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                               initial_alphabet=ByteLevel.alphabet(), show_progress=False))
    return tok


TOKENIZERS = {"plain": trained(False), "prefix space": trained(True)}
# Latin-1, BMP and astral texts (the three str kinds), marks, blanks, digits, and tokens
# that cut a multi-byte char.
CHARS = list("helo wrdsabxyz,!'0123456789\t\n\u00e9\u00ff\u0301\u4e2d\u6587\U0001f600\U00010348 ") + ["  ", "'s"]


def eager_spans(tok: Tokenizer, text: str):
    """Offsets and words as the kernel gives them when it tracks offsets while it encodes."""
    plan = tok._current_plan()
    kernel = plan._current_kernel()
    prefix = tok.pre_tokenizer.add_prefix_space and text[:1] != " " and text != ""
    raw, n, _ = kernel.encode_raw(" " + text if prefix else text, prefix)
    return raw_encoding.offset_list(raw, n, 0), raw_encoding.word_list(raw, n, -1)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(CHARS), max_size=40).map("".join))
def test_worked_out_spans_equal_the_kernels_and_the_general_path(name, text):
    tok = TOKENIZERS[name]
    enc = tok.encode(text)
    assert enc._spans_from is not None or not text, "encode must take the ids-only way here"
    assert (enc.offsets, enc.words) == eager_spans(tok, text)
    assert_same_encoding(tok.encode(text), tok._encode_general(text), repr(text))


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_batch_jobs_work_out_the_same_spans_from_their_chunks(name):
    tok = TOKENIZERS[name]
    texts = [c * k for k, c in enumerate(CHARS)] + CORPUS[:6] + ["", " ", "a" * 5000]
    batch = tok.encode_batch(texts)
    if name == "plain":     # (a prefix space to add keeps a batch off the kernel job)
        assert all(enc._raw is None and enc._spans_from is not None for enc in batch), "the job's way"
    for text, enc in zip(texts, batch):
        assert_same_encoding(enc, tok._encode_general(text), repr(text[:30]))
    assert all(enc._spans_from is None and enc._source is None for enc in batch), "each let its chunk go"


def test_a_batch_encodings_lists_do_not_follow_changes_to_its_ids():
    # Padding replaces the ids list; the tokens, offsets and words still come from the chunk.
    tok = TOKENIZERS["plain"]
    texts = ["héllo wörld", "the cat", "中文 😀 emoji, x = f(y) + 1;"]
    batch = tok.encode_batch(texts)
    for text, enc in zip(texts, batch):
        enc.pad(40, pad_id=0, pad_token="<pad>")
        want = tok._encode_general(text)
        want.pad(40, pad_id=0, pad_token="<pad>")
        assert_same_encoding(enc, want, repr(text))


def test_batch_spans_on_a_thread_pool(monkeypatch):
    # Many chunks on two threads: each encoding must read its own chunk's piece ends.
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    tok = TOKENIZERS["plain"]
    texts = [CORPUS[k % len(CORPUS)] + " " + str(k) for k in range(6000)]
    batch = tok.encode_batch(texts)
    for k in list(range(0, 6000, 97)) + [5999]:
        assert_same_encoding(batch[k], tok._encode_general(texts[k]), repr(texts[k]))


def test_spans_are_worked_out_once_and_the_text_let_go():
    tok = TOKENIZERS["plain"]
    text = "héllo wörld 中文 😀"
    enc = tok.encode(text, add_special_tokens=False)
    n = len(enc)
    assert len(enc._raw) == 4 * n and enc._source == text     # the ids alone: the pieces are scanned again
    enc.ids         # the ids need no spans
    assert enc._spans_from is not None
    offsets = enc.offsets
    assert enc._spans_from is None and enc._source is None and len(enc._raw) == 16 * n
    assert enc.offsets is offsets and enc.words == eager_spans(tok, text)[1]


def test_copies_and_pickles_of_an_unread_encoding():
    tok = TOKENIZERS["prefix space"]
    text = "wörld of 中文 😀, x = 1"
    want = tok._encode_general(text)
    for make in (lambda e: e.copy(), copy.deepcopy, lambda e: pickle.loads(pickle.dumps(e))):
        enc = tok.encode(text)
        assert enc._spans_from is not None
        assert_same_encoding(make(enc), want)


def test_truncation_cuts_the_worked_out_spans():
    tok = trained(True)
    tok.enable_truncation(max_length=5, stride=2)
    text = "héllo wörld, the cat sat on the mat 中文 😀"
    assert_same_encoding(tok.encode(text), tok._encode_general(text))
    batch = tok.encode_batch([text, text[:3]])
    assert_same_encoding(batch[0], tok._encode_general(text))
    assert_same_encoding(batch[1], tok._encode_general(text[:3]))


def with_added(prefix_space: bool) -> Tokenizer:
    tok = trained(prefix_space)
    tok.add_tokens(["wörld", "cat"])         # (added tokens the model also spells otherwise)
    return tok


WITH_ADDED = {"plain": with_added(False), "prefix space": with_added(True)}


def huggingface_twin(tok: Tokenizer):
    """The same tokenizer in Hugging Face ``tokenizers`` (its file read back there), or a skip."""
    hf = pytest.importorskip("tokenizers")
    return hf.Tokenizer.from_str(tok.to_str())
ADDED_PIECES = CHARS + ["<|endoftext|>", "wörld", "cat", "ca", "<|endof"]


@pytest.mark.parametrize("name", sorted(WITH_ADDED))
@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(ADDED_PIECES), max_size=30).map("".join), offsets_first=st.booleans())
def test_texts_cut_around_added_tokens_work_out_their_spans_joined(name, text, offsets_first):
    # The segments between added tokens hand over their ids alone; the joined encoding works out
    # every segment's offsets and words, shifted into the text, when one is first read.
    tok = WITH_ADDED[name]
    enc = tok.encode(text)
    splits = tok._added.extract_and_normalize(None, text, False).splits
    if any(s.tokens is not None for s in splits) and any(s.tokens is None and s.normalized.normalized for s in splits):
        # The kernel encodes around the tokens (no normalizer: the added ones are a second pass in
        # the text), unless a prefix space is to be added first: then the joined ids-only way.
        way = "JoinedSpans" if name == "prefix space" else "CallbackSpans"
        assert type(enc._spans_from).__name__ == way
    if offsets_first:
        enc.offsets
    # (Against Hugging Face: the pipeline's _encode_general takes this same way for such texts.)
    assert_same_encoding(enc, huggingface_twin(tok).encode(text), repr(text))


def test_joined_spans_survive_copies_pickles_and_truncation():
    text = "héllo <|endoftext|>wörld 中文 cat😀 x"
    tok = with_added(True)
    want = huggingface_twin(tok).encode(text)
    for make in (lambda e: e.copy(), copy.deepcopy, lambda e: pickle.loads(pickle.dumps(e))):
        enc = tok.encode(text)
        assert type(enc._spans_from).__name__ == "JoinedSpans"
        assert_same_encoding(make(enc), want)
    tok.enable_truncation(max_length=6, stride=2)
    assert_same_encoding(tok.encode(text), huggingface_twin(tok).encode(text))


def test_joined_spans_refuse_parts_that_disagree_with_the_encoding():
    part = (raw_encoding.pack([5], [0], [2], [0]), 1, 0, 0, None, None)
    raw, n, spans, source = raw_encoding.join_lazily([part, part])
    with pytest.raises(ValueError, match="hold 2 tokens, the encoding 3|more than"):
        raw_encoding.make_raw(Encoding, raw + raw[:4], 3, {5: "a"}, None, None, spans, source).offsets
    with pytest.raises(TypeError, match="tuple of parts"):
        raw_encoding.make_raw(Encoding, raw, n, {5: "a"}, None, None, spans, "text").offsets


def test_an_ids_only_raw_refuses_the_other_blocks():
    raw = raw_encoding.pack([5, 6], [0, 1], [1, 2], [0, 1])[:8]      # the ids block alone
    assert raw_encoding.id_list(raw, 2) == [5, 6]
    with pytest.raises(ValueError, match="block 1"):
        raw_encoding.offset_list(raw, 2, 0)
    with pytest.raises(ValueError, match="block 3"):
        raw_encoding.word_list(raw, 2, -1)


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_real_tokenizer_json_spans(shared_data, name):
    import tokenizers

    path = shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json"
    ours, theirs = Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
    text = (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").read_text(encoding="utf-8")[:200_000]
    a, b = ours.encode(text), theirs.encode(text)
    # (Qwen3's NFC normalizer changes this text, which then takes the NFC way, offsets and all.)
    assert (a._spans_from is not None) == (name == "llama3")
    assert (a.ids, a.offsets, a.word_ids) == (b.ids, b.offsets, b.word_ids)
    lines = text.splitlines()[:300]
    for x, y in zip(ours.encode_batch(lines), theirs.encode_batch(lines)):
        assert (x.ids, x.offsets, x.word_ids) == (y.ids, y.offsets, y.word_ids)


def test_a_chunk_refuses_what_is_not_its_own():
    from pieceworks._kernels.bytebpe import ChunkSpans
    from pieceworks.encoding import Encoding

    empty = ChunkSpans()      # (a chunk no job filled: it holds no text)
    cases = [("x", 0, 1, ValueError, "no text 0"), (None, 0, 0, TypeError, "must be the str")]
    for source, k, n, error, match in cases:
        enc = raw_encoding.make_with_ids(Encoding, [5] * n, n, None, None, empty, source, k)
        with pytest.raises(error, match=match):
            enc.offsets
    tok = TOKENIZERS["plain"]
    enc = tok.encode_batch(["hello world"])[0]
    wrong = raw_encoding.make_with_ids(Encoding, [5], 1, None, None, enc._spans_from, "hello world", 0)
    with pytest.raises(ValueError, match=r"has \d+ tokens, not 1"):
        wrong.tokens


def test_a_hand_made_ids_only_encoding_gets_an_error_not_a_bad_read():
    from pieceworks._kernels.bytebpe import ByteSpans
    from pieceworks.encoding import Encoding

    tok = TOKENIZERS["plain"]
    kernel = tok._current_plan()._current_kernel()
    ids = raw_encoding.pack([5, 6], [0, 0], [0, 0], [0, 0])[:8]
    no_text = raw_encoding.make_raw(Encoding, ids, 2, None, None, None, ByteSpans(kernel, False), None)
    with pytest.raises(TypeError, match="source must be the str"):
        no_text.offsets
    unknown_id = raw_encoding.pack([10**6], [0], [0], [0])[:4]
    bad = raw_encoding.make_raw(Encoding, unknown_id, 1, None, None, None, ByteSpans(kernel, False), "x")
    with pytest.raises(ValueError, match="not in this model"):
        bad.words


def test_a_batch_chunks_encodings_share_one_small_basis():
    # What each encoding of a batch costs is mostly its size: 64 bytes, its strings, frame and
    # chunk held once per chunk, not once per encoding.
    import sys

    tok = TOKENIZERS["plain"]
    texts = CORPUS[:6] * 50
    batch = tok.encode_batch(texts)
    assert all(enc._spans_from is not None for enc in batch), "the job's way"
    chunks = {id(enc._spans_from) for enc in batch}
    assert len({id(enc._basis) for enc in batch}) == len(chunks) < len(batch) // 10
    assert sys.getsizeof(batch[0]) <= 64
    # Read, an encoding takes its settled basis, shared in turn, and its other lists' side object.
    tokens = [enc.tokens for enc in batch]
    assert len({id(enc._basis) for enc in batch}) == len(chunks)
    assert all(enc._basis.spans_from is None and enc._lists.tokens is t for enc, t in zip(batch, tokens))


def test_no_text_or_chunk_outlives_the_encodings_that_hold_it():
    # The one basis kept between calls (for the next call's encodings to share) holds the
    # strings and frame alone: a text encoded the ids-only way, or a batch job's chunk, goes
    # when its encodings go.
    import gc
    import sys

    tok = TOKENIZERS["plain"]
    text = "hello world, a text only this test holds " * 100
    held = sys.getrefcount(text)
    enc = tok.encode(text)
    assert enc._source is text and sys.getrefcount(text) > held
    del enc
    gc.collect()
    assert sys.getrefcount(text) == held
    batch = tok.encode_batch(CORPUS[:6] * 10)
    chunk = batch[0]._spans_from
    del batch
    gc.collect()
    assert sys.getrefcount(chunk) == 2      # (this name and the call's argument)
