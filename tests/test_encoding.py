"""Encoding's look-ups, truncation, merging and padding against Hugging Face."""

from __future__ import annotations

import pytest
import tokenizers as hf
from hypothesis import given, settings, strategies as st

import pieceworks as pw
from pieceworks.encoding import Encoding
from pieceworks.errors import ConfigError

from parity import assert_same_encoding, both_from_file

WORDS = ["a", "bb", "ccc", "dddd"]


def tokenizers_over_words():
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(WORDS)}}
    ours = pw.Tokenizer(pw.models.WordLevel(dict(vocab), unk_token="[UNK]"))
    theirs = hf.Tokenizer(hf.models.WordLevel(dict(vocab), unk_token="[UNK]"))
    # Added tokens cut the text into words without needing a pre-tokenizer.
    ours.add_tokens(WORDS + [" "])
    theirs.add_tokens(WORDS + [" "])
    return ours, theirs


texts = st.lists(st.sampled_from(WORDS + [" ", "x"]), max_size=12).map("".join)


@settings(max_examples=80, deadline=None)
@given(texts, texts)
def test_position_lookups_match_huggingface(first, second):
    ours, theirs = tokenizers_over_words()
    a, b = ours.encode(first, second), theirs.encode(first, second)
    assert_same_encoding(a, b)
    assert a.n_sequences == b.n_sequences
    n = len(a.ids)
    for i in range(n + 2):
        assert a.token_to_sequence(i) == b.token_to_sequence(i), i
        assert a.token_to_chars(i) == b.token_to_chars(i), i
        assert a.token_to_word(i) == b.token_to_word(i), i
    for seq in (0, 1):
        for pos in range(max(len(first), len(second)) + 2):
            assert a.char_to_token(pos, seq) == b.char_to_token(pos, seq), (pos, seq)
            assert a.char_to_word(pos, seq) == b.char_to_word(pos, seq), (pos, seq)
        for word in range(n + 2):
            assert a.word_to_tokens(word, seq) == b.word_to_tokens(word, seq), (word, seq)
            assert a.word_to_chars(word, seq) == b.word_to_chars(word, seq), (word, seq)


@settings(max_examples=80, deadline=None)
@given(texts, st.integers(0, 8), st.integers(0, 7), st.sampled_from(["right", "left"]))
def test_truncate_matches_huggingface(text, max_length, stride, direction):
    ours, theirs = tokenizers_over_words()
    a, b = ours.encode(text), theirs.encode(text)
    if max_length and stride >= max_length and max_length < len(a.ids):
        with pytest.raises(ConfigError, match="stride"):
            a.truncate(max_length, stride, direction)
        return
    a.truncate(max_length, stride=stride, direction=direction)
    b.truncate(max_length, stride=stride, direction=direction)
    assert_same_encoding(a, b)


@settings(max_examples=50, deadline=None)
@given(texts, texts, st.integers(0, 20), st.sampled_from(["right", "left"]))
def test_pad_and_merge_match_huggingface(first, second, length, direction):
    ours, theirs = tokenizers_over_words()
    a, b = ours.encode(first, second), theirs.encode(first, second)
    a.pad(length, direction=direction, pad_id=9, pad_type_id=2, pad_token="<p>")
    b.pad(length, direction=direction, pad_id=9, pad_type_id=2, pad_token="<p>")
    assert_same_encoding(a, b)
    for growing in (True, False):
        merged_a = Encoding.merge([ours.encode(first), ours.encode(second)], growing_offsets=growing)
        merged_b = hf.Encoding.merge([theirs.encode(first), theirs.encode(second)], growing_offsets=growing)
        assert_same_encoding(merged_a, merged_b)


def test_from_tokens_builds_an_unmasked_encoding():
    e = Encoding.from_tokens([(3, "x", (0, 1)), (4, "y", (1, 2))], type_id=1)
    assert e.type_ids == [1, 1]
    assert e.attention_mask == [1, 1]
    assert e.special_tokens_mask == [0, 0]
    assert e.word_ids == [None, None]
    assert len(e) == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8)), max_size=12), st.integers(0, 40))
def test_char_to_token_reads_any_spans_as_the_first_holding_the_char(spans, pos):
    """The C scan (tuples of ints) and the Python one (anything else: lists here) agree with the rule."""
    offsets = [(start, start + width) for start, width in spans]
    want = next((i for i, (start, end) in enumerate(offsets) if start <= pos < end), None)
    as_tuples = Encoding.from_tokens([(i, "t", span) for i, span in enumerate(offsets)])
    as_lists = Encoding.from_tokens([(i, "t", list(span)) for i, span in enumerate(offsets)])
    assert as_tuples.char_to_token(pos) == as_lists.char_to_token(pos) == want
    assert as_tuples.char_to_token(2 ** 70) is None


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(0, 9)), max_size=40),
       st.integers(0, 40), st.integers(0, 40), st.integers(0, 120), st.integers(0, 2))
def test_char_to_token_halves_sorted_runs_as_it_scans(spans, cut_a, cut_b, pos, seq):
    """Spans in order (each starts and ends no earlier than the one before), as a tokenizer makes a
    sequence's, now and then out of order (a restart, as a pair's second text): within a sorted
    range the look-up halves, elsewhere it scans, and both give the first span holding the char
    in the sequence's range, as ``char_to_word`` does its word."""
    offsets, at = [], 0
    for gap, width, restart in spans:
        at = 0 if restart == 0 else at + gap
        offsets.append((at, at + width))
        at += width // 2 if restart == 1 else width    # (1: the next span may start inside this one)
    n = len(offsets)
    enc = Encoding.from_tokens([(i, "t", span) for i, span in enumerate(offsets)], words=list(range(n)))
    first, second = sorted((min(cut_a, n), min(cut_b, n)))
    enc._sequence_ranges = {0: (0, first), 1: (first, second)}
    start, stop = enc._sequence_ranges.get(seq, (0, n))
    want = next((i for i in range(start, stop) if offsets[i][0] <= pos < offsets[i][1]), None)
    assert enc.char_to_token(pos, seq) == want
    # (Its word only when a sequence holds the token, as Hugging Face's token_to_word says.)
    held = want is not None and any(s <= want < e for s, e in enc._sequence_ranges.values())
    assert enc.char_to_word(pos, seq) == (want if held else None)


def assert_char_look_ups_match(mine, hf_encoding, first: str, second: str) -> None:
    for seq in (0, 1, 2):
        for pos in range(0, max(len(first), len(second)) + 2, 3):
            assert mine.char_to_token(pos, seq) == hf_encoding.char_to_token(pos, seq), (pos, seq)
            assert mine.char_to_word(pos, seq) == hf_encoding.char_to_word(pos, seq), (pos, seq)


@pytest.mark.parametrize("direction", ["left", "right"])
def test_char_look_ups_of_fresh_padded_pairs_match_huggingface(direction):
    """A batch's pair encodings answer char look-ups before their lists are built (from the raw
    results), padded on either side, truncated, and for a sequence index that is no sequence."""
    ours, theirs = tokenizers_over_words()
    ours.post_processor = pw.processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                          special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    theirs.post_processor = hf.processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                            special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    pairs = [("a bb ccc", "dddd a x bb"), ("x", "a a a a a a a bb"), ("", "ccc"), ("dddd dddd", "")]
    for tok in (ours, theirs):
        tok.enable_padding(direction=direction, length=16)
        tok.enable_truncation(10, strategy="longest_first")
    for mine, hf_encoding, (first, second) in zip(ours.encode_batch(pairs), theirs.encode_batch(pairs), pairs):
        assert_char_look_ups_match(mine, hf_encoding, first, second)
        assert_same_encoding(mine, hf_encoding)


def test_look_ups_see_offsets_and_words_set_after_a_look_up():
    """The look-ups pack the offsets and words once; setting them (even the same list changed in
    place, or a longer one) is seen by the next look-up, as the Python rule reads them."""
    e = Encoding.from_tokens([(1, "a", (0, 2)), (2, "b", (2, 4))])
    assert e.char_to_token(3) == 1
    e.offsets = [(0, 1), (1, 2)]
    assert e.char_to_token(3) is None and e.char_to_token(1) == 1
    offsets = e.offsets
    offsets[0] = (5, 9)
    e.offsets = offsets
    assert e.char_to_token(6) == 0 and e.char_to_token(0) is None
    e.offsets.append((9, 12))       # a longer list: packed again
    e.ids.append(3)
    assert e.char_to_token(10) == 2
    e.offsets = [(0, 2), ("x", 3)]   # not ints: the Python rule, which compares them
    with pytest.raises(TypeError):
        e.char_to_token(2)
    e.words = [0, 1, 1]
    assert e.word_to_tokens(1) == (1, 3)
    words = e.words
    words[2] = 2
    e.words = words
    assert e.word_to_tokens(1) == (1, 2) and e.word_to_tokens(2) == (2, 3)


@pytest.mark.parametrize("direction", ["right", "left"])
@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "hf_tokenizer_json/gpt-neox-20b",
                                      "bert_all-MiniLM-L6-v2"])
def test_position_lookups_match_huggingface_on_real_pairs(relative, direction, shared_data):
    """Every look-up at every position of real pairs, with the files' post-processors (a template
    around two sequences; GPT-NeoX's ByteLevel trimming offsets), and of their truncated windows;
    the char look-ups first, before any list is built."""
    ours, theirs = both_from_file(relative, shared_data)
    text = (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").read_text(encoding="utf-8")[:3000]
    first, second = text[:1700], text[1700:]
    for tok in (ours, theirs):
        tok.enable_truncation(300, stride=20, direction=direction)
    a, b = ours.encode(first, second), theirs.encode(first, second)
    for k, hf_encoding in enumerate([b] + b.overflowing):
        mine = a if k == 0 else a.overflowing[k - 1]
        assert_char_look_ups_match(mine, hf_encoding, first, second)
        assert_same_encoding(mine, hf_encoding)
        n = len(mine.ids)
        for i in range(n + 2):
            assert mine.token_to_sequence(i) == hf_encoding.token_to_sequence(i), i
            assert mine.token_to_chars(i) == hf_encoding.token_to_chars(i), i
            assert mine.token_to_word(i) == hf_encoding.token_to_word(i), i
        for seq in (0, 1, 2):
            for word in range(0, n + 2, 2):
                assert mine.word_to_tokens(word, seq) == hf_encoding.word_to_tokens(word, seq), (word, seq)
                assert mine.word_to_chars(word, seq) == hf_encoding.word_to_chars(word, seq), (word, seq)
    assert len(a.overflowing) == len(b.overflowing) > 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 6)), max_size=14), st.integers(0, 7), st.booleans())
def test_word_to_tokens_reads_any_words_by_the_rule(words, word, in_order):
    """The C loop (ints and None) and the Python one (anything else: numpy ints here) both give the
    first and last-plus-one token of ``word``, stopping at the first larger word, as Hugging Face does.
    ``in_order``: the words sorted around their Nones, as a tokenizer numbers them (the C look-up
    halves a sorted run with no None, and scans the rest)."""
    import numpy as np

    if in_order:
        ints = iter(sorted(w for w in words if w is not None))
        words = [None if w is None else next(ints) for w in words]

    def rule():
        first = last = None
        for i, w in enumerate(words):
            if w is not None and w > word:
                break
            if w == word:
                first = i if first is None else first
                last = i + 1
        return None if first is None else (first, last)

    tokens = [(i, "t", (i, i + 1)) for i in range(len(words))]
    as_ints = Encoding.from_tokens(tokens, words=list(words))
    as_numpy = Encoding.from_tokens(tokens, words=[None if w is None else np.int64(w) for w in words])
    assert as_ints.word_to_tokens(word) == as_numpy.word_to_tokens(word) == rule()
