"""Lazy encodings (Encoding.from_raw) and post-processor frames, held to the eager path.

The fast plans hand the tokenizer a raw buffer (int32 ids, offsets, words)
and the post-processor's :meth:`single_frame`; the Encoding builds each list
on first read. Every observable of such an encoding must equal the eager
encoding the general path builds: the lists, the look-ups, and what
truncate/pad/merge/copy/pickle do afterwards.
"""

from __future__ import annotations

import gc
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity import assert_same_encoding, encoding_fields
from pieceworks import Tokenizer
from pieceworks._kernels.encoding import EncodingWithIds
from pieceworks._kernels.raw_encoding import pack
from pieceworks.encoding import PLAIN_FRAME, Encoding
from pieceworks.models import WordPiece
from pieceworks.normalizers import BertNormalizer
from pieceworks.pre_tokenizers import BertPreTokenizer
from pieceworks.processors import BertProcessing, ByteLevel, RobertaProcessing, Sequence, TemplateProcessing

VOCAB = ["[UNK]", "[CLS]", "[SEP]", "<s>", "</s>", "hello", "world", "##s", "a", "b", "##b", ",", "!"]


def bert_like(processor) -> Tokenizer:
    tok = Tokenizer(WordPiece({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = BertNormalizer()
    tok.pre_tokenizer = BertPreTokenizer()
    tok.post_processor = processor
    return tok


def general_twin(tok: Tokenizer, monkeypatch) -> Tokenizer:
    """``tok``'s stages in a tokenizer whose fast plan is off."""
    monkeypatch.setenv("PIECEWORKS_NO_FAST", "1")
    twin = Tokenizer(tok.model)
    twin.normalizer, twin.pre_tokenizer, twin.post_processor = tok.normalizer, tok.pre_tokenizer, tok.post_processor
    assert twin._current_plan() is None
    monkeypatch.delenv("PIECEWORKS_NO_FAST")
    return twin


PROCESSORS = {
    "none": None,
    "bert": BertProcessing(("[SEP]", 2), ("[CLS]", 1)),
    "roberta-no-trim": RobertaProcessing(("</s>", 4), ("<s>", 3), trim_offsets=False),
    "roberta-trim": RobertaProcessing(("</s>", 4), ("<s>", 3)),       # a frame that trims offsets
    "template": TemplateProcessing(single="[CLS]:1 $A:2 [SEP]:3 [SEP]:0", pair="$A $B:1",
                                   special_tokens=[("[CLS]", 1), ("[SEP]", 2)]),
    "template-b-only": TemplateProcessing(single="$B", pair="$A $B", special_tokens=[]),   # an error, both ways
    "bytelevel-then-template": Sequence([ByteLevel(trim_offsets=False),
                                         TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 3)])]),
    "template-then-bytelevel": Sequence([TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 3)]),
                                         ByteLevel(trim_offsets=False)]),
}

TEXTS = ["hello world", "hellos, a b!", "", "   ", "ab bb zz", "HELLO Wörld", "a [CLS] b", "[SEP]"]


@pytest.mark.parametrize("name", sorted(PROCESSORS))
@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_fast_encode_equals_the_general_path(name, add_special_tokens, monkeypatch):
    tok = bert_like(PROCESSORS[name])
    general = general_twin(tok, monkeypatch)
    for text in TEXTS:
        try:
            expected = general.encode(text, add_special_tokens=add_special_tokens)
        except Exception as exc:    # the same error from both paths
            with pytest.raises(type(exc)):
                tok.encode(text, add_special_tokens=add_special_tokens)
            continue
        ours = tok.encode(text, add_special_tokens=add_special_tokens)
        assert_same_encoding(ours, expected, f"{name} {text!r}")
        assert ours.n_sequences == expected.n_sequences
        assert len(ours) == len(expected)


@pytest.mark.parametrize("name", ["bert", "template", "bytelevel-then-template", "none"])
def test_batches_mix_raw_items_with_others(name, monkeypatch):
    tok = bert_like(PROCESSORS[name])
    general = general_twin(tok, monkeypatch)
    items = TEXTS + [("hello", "world")] * (name != "none") + ["a b " * 5000]
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    ours = tok.encode_batch(items)
    theirs = general.encode_batch(items)
    assert len(ours) == len(theirs)
    for a, b, item in zip(ours, theirs, items):
        assert_same_encoding(a, b, repr(item)[:40])


@pytest.mark.parametrize("name", ["bert", "roberta-trim", "template", "none"])
@pytest.mark.parametrize("truncate", [None, 5])
def test_batch_encodings_made_with_their_ids_change_like_the_general_paths(name, truncate, monkeypatch):
    # Without padding, a batch's encodings that need no cut are made with their ids list built
    # (EncodingWithIds: the ids in a slot); a cut one stays lazy. Read, padded, merged, truncated,
    # copied and pickled, each must still equal the general path's.
    tok = bert_like(PROCESSORS[name])
    general = general_twin(tok, monkeypatch)
    if truncate:
        for t in (tok, general):
            t.enable_truncation(truncate, stride=1)
    texts = [t for t in TEXTS if "[" not in t] * 3
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    ours, theirs = tok.encode_batch(texts), general.encode_batch(texts)
    kinds = {type(e) for e in ours}
    assert EncodingWithIds in kinds and (Encoding in kinds) == bool(truncate)
    for a, b, text in zip(ours, theirs, texts):
        assert_same_encoding(a, b, repr(text))
        assert pickle.loads(pickle.dumps(a)) == b and a.copy() == b
        for e in (a, b):
            e.pad(len(b) + 2, pad_id=0, pad_token="[UNK]")
            e.merge_with(general.encode("a b", add_special_tokens=False))
            e.truncate(3)
        assert_same_encoding(a, b, repr(text))


def test_single_frame_is_none_when_the_processor_does_more_than_frame_and_trim():
    assert RobertaProcessing(("</s>", 4), ("<s>", 3)).single_frame(True).trim is not None
    assert ByteLevel().single_frame(True).trim is not None and ByteLevel().single_frame(True, True).trim is None
    assert PROCESSORS["template-then-bytelevel"].single_frame(True) is None   # ByteLevel after added tokens
    assert PROCESSORS["template-b-only"].single_frame(True) is None
    assert Sequence([ByteLevel(), ByteLevel()]).single_frame(True) is None    # two that trim: process() runs


def test_a_frame_is_forgotten_when_the_processor_changes():
    proc = BertProcessing(("[SEP]", 2), ("[CLS]", 1))
    assert proc.single_frame(True).ids_before == [1]
    proc.cls = ("<s>", 3)
    assert proc.single_frame(True).ids_before == [3]
    tok = bert_like(proc)
    assert tok.encode("hello").ids == [3, 5, 2]


# -- the Encoding itself -------------------------------------------------------------------

token_rows = st.lists(st.tuples(st.integers(0, len(VOCAB) - 1), st.integers(0, 50), st.integers(0, 5),
                                st.integers(0, 9)), max_size=12)
frames = st.sampled_from([PLAIN_FRAME] + [p.single_frame(add) for p in PROCESSORS.values() if p is not None
                                           for add in (True, False) if p.single_frame(add) is not None])


def lazy_and_eager(rows, frame, word_index=None):
    ids = [r[0] for r in rows]
    starts = [r[1] for r in rows]
    ends = [r[1] + r[2] for r in rows]
    words = sorted(r[3] for r in rows)
    lazy = Encoding.from_raw(pack(ids, starts, ends, words), len(ids), VOCAB, word_index, frame)
    n = len(ids)
    eager = Encoding(frame.ids_before + ids + frame.ids_after,
                     frame.types_before + [frame.type_id] * n + frame.types_after,
                     frame.tokens_before + [VOCAB[i] for i in ids] + frame.tokens_after,
                     [None] * len(frame.ids_before) + ([word_index] * n if word_index is not None else words)
                     + [None] * len(frame.ids_after),
                     [(0, 0)] * len(frame.ids_before) + list(zip(starts, ends)) + [(0, 0)] * len(frame.ids_after),
                     [1] * len(frame.ids_before) + [0] * n + [1] * len(frame.ids_after),
                     [1] * (n + frame.size), [],
                     {0: (len(frame.ids_before), len(frame.ids_before) + n)} if frame.sequence_range else {})
    return lazy, eager


@settings(max_examples=150, deadline=None)
@given(token_rows, frames, st.sampled_from([None, 3]))
def test_lazy_encoding_reads_like_the_eager_one(rows, frame, word_index):
    lazy, eager = lazy_and_eager(rows, frame, word_index)
    assert len(lazy) == len(eager)                     # before anything is built
    assert encoding_fields(lazy) == encoding_fields(eager)
    assert lazy == eager
    assert lazy.words == eager.words and lazy.n_sequences == eager.n_sequences
    for pos in range(0, 60, 7):      # (a negative one is an error: test_tokenizer)
        assert lazy.char_to_token(pos) == eager.char_to_token(pos)
        assert lazy.char_to_word(pos) == eager.char_to_word(pos)
    for word in range(0, 11):
        assert lazy.word_to_tokens(word) == eager.word_to_tokens(word)
        assert lazy.word_to_chars(word) == eager.word_to_chars(word)
    for index in range(0, len(eager) + 1):
        assert lazy.token_to_sequence(index) == eager.token_to_sequence(index)
        assert lazy.token_to_chars(index) == eager.token_to_chars(index)
        assert lazy.token_to_word(index) == eager.token_to_word(index)
    assert lazy._ids_array().tolist() == eager.ids


@settings(max_examples=100, deadline=None)
@given(token_rows, frames, st.integers(0, 14), st.integers(0, 3), st.sampled_from(["left", "right"]))
def test_lazy_encoding_changes_like_the_eager_one(rows, frame, length, stride, direction):
    def check(change):
        lazy, eager = lazy_and_eager(rows, frame)
        try:
            change(eager)
        except Exception as exc:
            with pytest.raises(type(exc)):
                change(lazy)
            return
        change(lazy)
        assert encoding_fields(lazy) == encoding_fields(eager)

    check(lambda e: e.pad(length, direction, 0, 0, "[PAD]"))
    check(lambda e: e.truncate(length, stride, direction))
    check(lambda e: e.merge_with(Encoding.from_tokens([(5, "hello", (0, 5))]), True))
    check(lambda e: e.set_sequence_id(1))


def test_copy_and_pickle_give_equal_independent_encodings():
    lazy, eager = lazy_and_eager([(5, 0, 5, 0), (6, 6, 5, 1)], PROCESSORS["bert"].single_frame(True))
    clone = lazy.copy()
    clone.ids.append(99)
    assert lazy.ids == eager.ids
    restored = pickle.loads(pickle.dumps(lazy))
    assert type(restored) is Encoding and encoding_fields(restored) == encoding_fields(eager)
    # Pickling writes the lists, not the vocabulary the raw buffer points into.
    assert len(pickle.dumps(lazy)) < 1000


def test_pickled_encoding_does_not_drag_the_vocabulary_along():
    big = [f"tok{i}" for i in range(100_000)]
    lazy = Encoding.from_raw(pack([7], [0], [1], [0]), 1, big)
    assert lazy.tokens == ["tok7"]
    assert len(pickle.dumps(lazy)) < 1000


def test_lazy_encodings_are_not_walked_by_the_garbage_collector():
    import gc

    lazy, _ = lazy_and_eager([(5, 0, 5, 0)], PLAIN_FRAME)
    assert not gc.is_tracked(lazy)
    # No encoding is (the type takes no part in collection: a batch's million cost no GC header,
    # no tracking, no walks); a Python subclass of it is an ordinary collected class.
    assert not gc.is_tracked(Encoding([1]))
    assert not type(lazy).__flags__ & (1 << 14)         # Py_TPFLAGS_HAVE_GC
    assert gc.is_tracked(type("Mine", (Encoding,), {})([1]))
    # Nor the lists it builds (ints, strs, None and int pairs: no cycle through them).
    for name in ("ids", "tokens", "offsets", "words", "attention_mask"):
        assert not gc.is_tracked(getattr(lazy, name)), name
    lists = [lazy.ids, lazy.offsets]
    lazy.ids.append(9)              # still ordinary lists, and the encoding's own
    assert lazy.ids[-1] == 9 and lists[0] is lazy.ids


# -- texts holding added tokens: segments through the plan, joined raw ------------------------

MIXED = ["<|begin_of_text|>Hello<|eot_id|> world", "x <|start_header_id|>user<|end_header_id|>\n\nhi",
         "no special here", "<|eot_id|>", "<|eot_id|><|eot_id|> a", "tail <|reserved_special_token_3|>"]


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_texts_with_added_tokens_match_huggingface(name, shared_data):
    hf = pytest.importorskip("tokenizers")
    path = str(shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json")
    ours, theirs = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    texts = MIXED + ["<|im_start|>system\nYou are<|im_end|>", "ünïcode <|im_end|> 東京"]
    for split in (False, True):
        theirs.encode_special_tokens = split
        for add in (True, False):
            expected = [theirs.encode(t, add_special_tokens=add) for t in texts]
            for text, got, want in zip(texts, [ours.encode(t, add_special_tokens=add, split_special_tokens=split)
                                                for t in texts], expected):
                assert_same_encoding(got, want, f"{name} {text!r} split={split} add={add}")
            batch = ours.encode_batch(texts, add_special_tokens=add, split_special_tokens=split)
            for text, got, want in zip(texts, batch, expected):
                assert_same_encoding(got, want, f"batch {name} {text!r} split={split} add={add}")
    # The llama3 specials are beyond the model's vocabulary: spelled from the added tokens.
    assert ours.encode("a<|eot_id|>").tokens[-1] == "<|eot_id|>" or name != "llama3"


CHAT_CORPORA = ["english/botchan.txt", "code/llama.cpp_ggml_c_cpp.txt", "multilingual/ko_nsmc_movie_reviews.txt",
                "multilingual/linux-6.1_docs_translation_zh_CN.rst.txt"]


@pytest.mark.parametrize("name, added", [("llama3", None), ("qwen3", None),
                                         ("llama3", ["the", " of", "ing", "ggml", "영화", "内核", "<", "\n\n"])])
def test_chat_turns_of_corpus_lines_match_huggingface(name, added, shared_data):
    # Each line as a chat turn (the file's own special tokens around it): one by one and batched
    # (threads on), every field against Hugging Face; the ids come from the kernel around the
    # tokens, the rest the long way when read. With tokens add_tokens added too (matched after
    # normalizing: with no normalizer, in the stretches between the specials), around those.
    hf = pytest.importorskip("tokenizers")
    path = str(shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json")
    ours, theirs = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    if added:
        ours.add_tokens(added)
        theirs.add_tokens(added)
    begin, end = (("<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>") if name == "llama3"
                  else ("<|im_start|>user\n", "<|im_end|>\n"))
    lines = []
    for corpus in CHAT_CORPORA:
        with open(shared_data / "corpora" / corpus, encoding="utf-8") as f:
            lines += [line.rstrip("\n") for _, line in zip(range(150), f)]
    texts = [f"{begin}{line}{end}" for line in lines]
    batch = ours.encode_batch(texts)
    ids_first = [e.ids for e in ours.encode_batch(texts)]
    for text, one, many, first, want in zip(texts, [ours.encode(t) for t in texts], batch, ids_first,
                                            theirs.encode_batch(texts)):
        assert first == want.ids, f"{name} {text[:60]!r}"
        assert_same_encoding(one, want, f"{name} {text[:60]!r}")
        assert_same_encoding(many, want, f"batch {name} {text[:60]!r}")


@pytest.mark.parametrize("name", ["gpt-neox-20b", "llama3", "qwen3"])
def test_ids_batch_equals_the_ids_of_encode_batch(name, shared_data):
    # GPT-NeoX: normalized added tokens (runs of spaces) under NFC, and a ByteLevel
    # post-processor that trims offsets: the ids-only path must still give the same ids.
    hf = pytest.importorskip("tokenizers")
    path = str(shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json")
    ours, theirs = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    texts = MIXED + ["def f():\n        return  1\n", "  two  spaces  ", "e\u0301 not NFC", "<|endoftext|> x",
                     "x" * 3000, ""]
    for add in (True, False):
        want = [e.ids for e in theirs.encode_batch(texts, add_special_tokens=add)]
        assert [a.tolist() for a in ours._encode_ids_batch(texts, add)] == want
        assert [e.ids for e in ours.encode_batch(texts, add_special_tokens=add)] == want
        for text, ids in zip(texts, want):
            assert_same_encoding(ours.encode(text, add_special_tokens=add), theirs.encode(text, add_special_tokens=add),
                                 f"{name} {text!r}")


# -- fill_encodings: a raw batch's results into lazy encodings, in C ----------------------------

def test_fill_encodings_places_each_result_and_leaves_the_rest_none():
    from pieceworks._kernels.raw_encoding import fill_encodings, none_positions

    strings = {5: "hi", 6: "there"}
    results = [(pack([5], [0], [2], [0]), 1, 1, strings), None, 7,
               (pack([5, 6], [0, 3], [2, 8], [0, 1]), 2, 2, strings)]
    out = [None] * 6
    fill_encodings(Encoding, out, [0, 2, 3, 5], results, PLAIN_FRAME, None)
    assert none_positions(out) == [1, 2, 3, 4]      # 1 and 4 never asked, 2 and 3 not tuples
    assert [type(e).__name__ if e is not None else None for e in out] == \
        ["Encoding", None, None, None, None, "Encoding"]
    assert out[5].tokens == ["hi", "there"] and out[5].offsets == [(0, 2), (3, 8)]
    # More tokens than truncation keeps, and not to be cut here: left for the long way.
    out = [None]
    fill_encodings(Encoding, out, [0], results[3:], PLAIN_FRAME, (1, 0, False, False))
    assert out == [None]
    # To be cut here: as Encoding.truncate cuts the eager encoding.
    out = [None]
    fill_encodings(Encoding, out, [0], results[3:], PLAIN_FRAME, (1, 0, False, True))
    assert none_positions(out) == []
    eager = Encoding.from_tokens([(5, "hi", (0, 2)), (6, "there", (3, 8))], words=[0, 1])
    eager.truncate(1)
    assert_same_encoding(out[0], eager)
    with pytest.raises(ValueError):
        fill_encodings(Encoding, [None], [0, 1], results[:1], PLAIN_FRAME, None)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 30), st.integers(1, 12), st.integers(0, 11), st.booleans())
def test_raw_truncation_cuts_as_encoding_truncate(n, max_length, stride, left):
    from pieceworks._kernels.raw_encoding import truncated

    stride = stride % max_length
    ids = list(range(100, 100 + n))
    raw = pack(ids, range(n), range(1, n + 1), [k // 2 for k in range(n)])
    strings = {i: f"t{i}" for i in ids}
    frame = PROCESSORS["bert"].single_frame(True)
    lazy = truncated(Encoding, raw, n, strings, frame, max_length, stride, left)
    eager = Encoding.from_tokens([(i, f"t{i}", (k, k + 1)) for k, i in enumerate(ids)],
                                 words=[k // 2 for k in range(n)])
    eager.truncate(max_length, stride, "left" if left else "right")
    want = PROCESSORS["bert"].process(eager)
    assert_same_encoding(lazy, want)
    # Padding a cut encoding pads its parts too, lists unbuilt until read.
    padded = truncated(Encoding, raw, n, strings, frame, max_length, stride, left)
    padded.pad(max_length + 4)
    assert padded._never_read()
    want.pad(max_length + 4)
    assert_same_encoding(padded, want)


def test_docstring_examples_hold():
    import doctest

    import pieceworks.encoding
    from pieceworks._kernels import raw_encoding

    for module in (raw_encoding, pieceworks.encoding):
        assert doctest.testmod(module).failed == 0, module.__name__


@pytest.mark.parametrize("length,multiple,direction", [(None, None, "right"), (12, None, "left"),
                                                       (None, 4, "right"), (3, None, "right")])
def test_batch_padding_through_frames_equals_the_general_path(monkeypatch, length, multiple, direction):
    tok = bert_like(PROCESSORS["bert"])
    twin = general_twin(tok, monkeypatch)
    texts = ["hello world", "a b b", "", "hellos, world!", "hello " * 7]
    for t in (tok, twin):
        t.enable_padding(direction=direction, pad_id=0, pad_token="[UNK]", length=length, pad_to_multiple_of=multiple)
    ours, theirs = tok.encode_batch(texts), twin.encode_batch(texts)
    assert [e._never_read() for e in ours] == [True] * len(texts)    # padded by frame, nothing built
    for a, b in zip(ours, theirs):
        assert_same_encoding(a, b)
    # A read encoding is padded the long way, a never-read one by its frame: both right.
    first = tok.encode_batch(texts[:2])
    first[0].ids
    tok._pad(first)
    want = twin.encode_batch(texts[:2])
    twin._pad(want)
    for a, b in zip(first, want):
        assert_same_encoding(a, b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1100), st.integers(0, 40)), max_size=30),
       st.integers(0, 40), st.integers(0, 3), st.integers(0, 3))
def test_offset_list_equals_the_plain_pairs(spans, shift, nb, na):
    # Short spans near the start come from a shared table, others are made per token;
    # both kinds, side by side and across the table's edges, must read the same.
    from pieceworks._kernels.raw_encoding import offset_list

    spans.sort()
    starts = [s for s, _ in spans]
    ends = [s + length for s, length in spans]
    raw = pack([0] * len(spans), starts, ends, [0] * len(spans))
    got = offset_list(raw, len(spans), shift, nb, na)
    assert got == [(0, 0)] * nb + [(s + shift, e + shift) for s, e in zip(starts, ends)] + [(0, 0)] * na
    assert all(type(span) is tuple and not gc.is_tracked(span) for span in got)


def test_a_cut_encoding_copies_pickles_and_compares_as_the_eager_one():
    from pieceworks._kernels.raw_encoding import truncated

    ids = list(range(100, 109))
    raw = pack(ids, range(9), range(1, 10), range(9))
    frame = PROCESSORS["bert"].single_frame(True)
    lazy = truncated(Encoding, raw, 9, {i: f"t{i}" for i in ids}, frame, 4, 1, False)
    eager = Encoding.from_tokens([(i, f"t{i}", (k, k + 1)) for k, i in enumerate(ids)], words=list(range(9)))
    eager.truncate(4, 1)
    want = PROCESSORS["bert"].process(eager)
    copied = lazy.copy()
    assert copied._never_read() and len(copied.overflowing) == len(want.overflowing)
    assert copied.overflowing[0] is not lazy._overflowing[0]           # the parts are copied too
    assert_same_encoding(copied, want)
    assert_same_encoding(pickle.loads(pickle.dumps(lazy)), want)
    assert lazy == want


TRIMMING = {
    "bytelevel": lambda aps: ByteLevel(add_prefix_space=aps, trim_offsets=True),
    "roberta": lambda aps: RobertaProcessing(("</s>", 50256), ("<s>", 50256), trim_offsets=True, add_prefix_space=aps),
    "bytelevel-then-template": lambda aps: Sequence([
        ByteLevel(add_prefix_space=aps, trim_offsets=True),
        TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 50256)])]),
}
TRIM_TEXTS = ["Hello  world ", " x", "   ", "", "a\n\n  b\t c", "  é 😀  ", "tail   ", "<|endoftext|> a  b"]


@pytest.mark.parametrize("name", sorted(TRIMMING))
@pytest.mark.parametrize("aps", [False, True])
def test_trimmed_offsets_on_the_raw_way_equal_hugging_face(name, aps, shared_data, monkeypatch):
    """A processor that trims byte-level offsets gives a frame that trims them when first read: one
    text, batches, overflowing parts (whose first token is a sequence's first) and padding on either
    side, as the general path and Hugging Face trim them."""
    hf = pytest.importorskip("tokenizers")
    from pieceworks.models import BPE
    from pieceworks.pre_tokenizers import ByteLevel as ByteLevelPre

    folder = shared_data / "tokenizers/gpt2_openai"
    tok = Tokenizer(BPE.from_file(str(folder / "encoder.json"), str(folder / "vocab.bpe")))
    tok.pre_tokenizer = ByteLevelPre(add_prefix_space=aps)
    tok.post_processor = TRIMMING[name](aps)
    tok.add_special_tokens(["<|endoftext|>"])
    general = general_twin(tok, monkeypatch)
    general.add_special_tokens(["<|endoftext|>"])
    ref = hf.Tokenizer.from_str(tok.to_str())
    assert tok._current_plan() is not None and tok.post_processor.single_frame(True).trim is not None
    for setup in ({}, {"truncation": dict(max_length=4, stride=1), "padding": dict(direction="left", length=9)},
                     {"truncation": dict(max_length=5, stride=0), "padding": dict(direction="right")}):
        for t in (tok, general, ref):
            t.no_truncation()
            t.no_padding()
            if setup:
                t.enable_truncation(**setup["truncation"])
                t.enable_padding(pad_id=0, pad_token="!", **setup["padding"])
        ours = tok.encode_batch(TRIM_TEXTS)
        for text, a, b, c in zip(TRIM_TEXTS, ours, general.encode_batch(TRIM_TEXTS), ref.encode_batch(TRIM_TEXTS)):
            assert_same_encoding(a, b, f"{name} {text!r}")
            assert_same_encoding(tok.encode(text), general.encode(text), f"{name} one {text!r}")
            assert (a.ids, a.offsets) == (c.ids, c.offsets), (name, text, setup)
            assert [(o.ids, o.offsets) for o in a.overflowing] == [(o.ids, o.offsets) for o in c.overflowing]


def test_padding_or_merging_before_the_offsets_are_read_keeps_them_trimmed(shared_data, monkeypatch):
    # A frame that trims offsets reads the encoding's tokens when it builds them; an encoding that
    # holds its ids (a batch's, or a text holding added tokens) pads and merges its lists at once,
    # so the offsets must be built before the tokens list changes.
    from pieceworks.models import BPE
    from pieceworks.pre_tokenizers import ByteLevel as ByteLevelPre

    folder = shared_data / "tokenizers/gpt2_openai"
    tok = Tokenizer(BPE.from_file(str(folder / "encoder.json"), str(folder / "vocab.bpe")))
    tok.pre_tokenizer = ByteLevelPre(add_prefix_space=False)
    tok.post_processor = ByteLevel(trim_offsets=True)
    tok.add_special_tokens(["<|endoftext|>"])
    general = general_twin(tok, monkeypatch)
    general.add_special_tokens(["<|endoftext|>"])
    texts = ["<|endoftext|> a  b", "a  b   c", " x <|endoftext|>  y "]
    for ours, theirs in ((tok.encode_batch(texts), general.encode_batch(texts)),
                         ([tok.encode(t) for t in texts], [general.encode(t) for t in texts])):
        for a, b in zip(ours, theirs):
            for e in (a, b):
                e.pad(len(b) + 3, direction="left", pad_id=0, pad_token="!")
            assert a.offsets == b.offsets
        for a, b, text in zip(ours[1:], theirs[1:], texts):
            a, b = a.copy(), b.copy()
            for e in (a, b):
                e.merge_with(general.encode(text))
            assert_same_encoding(a, b, repr(text))


def _original_by_the_doc(pos: int, start: bool, starts, shifts, maps, map_starts, map_ends) -> int:
    """``remap_offsets``' rule as its docstring says it, for one char: the last segment starting at
    or before ``pos``; moved chars shift, mapped chars take their span's start or end."""
    k = max(i for i, first in enumerate(starts) if first <= pos)
    if maps[k] < 0:
        return pos + shifts[k] + (0 if start else 1)
    j = maps[k] + pos - starts[k]
    return (map_starts[j] if start else map_ends[j]) + shifts[k]


@st.composite
def segmented_texts(draw):
    """Segments of a normalized text (some empty: a deleted stretch), each moved or mapped char by
    char, and tokens over it, in text order or not."""
    starts, shifts, maps, map_starts, map_ends = [], [], [], [], []
    at = 0
    for _ in range(draw(st.integers(1, 40))):
        length = draw(st.integers(0 if starts else 1, 4))
        starts.append(at)
        shifts.append(draw(st.integers(0, 50)))
        if draw(st.booleans()):
            maps.append(-1)
        else:
            maps.append(len(map_starts))
            for _ in range(length):
                first = draw(st.integers(0, 20))
                map_starts.append(first)
                map_ends.append(first + draw(st.integers(0, 3)))
        at += length
    length = at
    spans = draw(st.lists(st.tuples(st.integers(0, max(length - 1, 0)), st.integers(0, 4)), max_size=30))
    if draw(st.booleans()):
        spans.sort()
    return starts, shifts, maps, map_starts, map_ends, [(s, min(s + w, length)) for s, w in spans if length]


@settings(max_examples=300, deadline=None)
@given(case=segmented_texts())
def test_remap_offsets_follows_its_rule_for_tokens_in_any_order(case):
    # It searches from the segment it found last (tokens nearly always come in text order); tokens
    # out of order, empty segments and runs of them must give what the rule gives.
    from array import array

    from pieceworks._kernels.raw_encoding import offset_list, remap_offsets

    starts, shifts, maps, map_starts, map_ends, spans = case
    n = len(spans)
    raw = pack(list(range(n)), [s for s, _ in spans], [e for _, e in spans], [0] * n)
    out = remap_offsets(raw, n, array("q", starts), array("q", shifts), array("q", maps), array("i", map_starts),
                        array("i", map_ends))
    tables = (starts, shifts, maps, map_starts, map_ends)
    expected = []
    for s, e in spans:
        first = _original_by_the_doc(s, True, *tables)
        expected.append((first, _original_by_the_doc(e - 1, False, *tables) if e > s else first))
    assert offset_list(out, n, 0) == expected
