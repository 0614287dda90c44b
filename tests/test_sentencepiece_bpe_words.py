"""SentencePiece BPE merged word by word: the same pieces as merging the whole text at once.

SentencePiece merges a whole text in one heap. The kernel cuts it before
each ▁ that no piece joins to the char before it (Llama 2: only ▁ itself
does, in its runs of ▁), merges each word alone and, without BPE-dropout,
gets the same pieces: here on made-up BPE models whose pieces hold ▁ after
other chars too, with user-defined symbols, against sentencepiece itself
and against the kernel merging the whole text.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pieceworks.sentencepiece as pw_spm
from pieceworks.formats import sentencepiece as fmt

spm = pytest.importorskip("sentencepiece")

NORMAL, UNKNOWN, USER, UNUSED = 1, 2, 4, 5
CHARS = ["a", "b", "x", "▁"]


def bpe_model(pieces: list[tuple[str, float, int]]) -> bytes:
    """A BPE ModelProto: <unk>, the base chars, then ``pieces`` as (text, score, type)."""
    m = fmt.ModelProto()
    m.trainer_spec.model_type = 2
    m.normalizer_spec.name = "identity"
    entries = [("<unk>", 0.0, UNKNOWN)] + [(c, -100.0, NORMAL) for c in CHARS] + pieces
    seen = set()
    for text, score, kind in entries:
        if text in seen:
            continue
        seen.add(text)
        p = m.pieces.add()
        p.piece, p.score, p.type = text, score, kind
    return m.SerializeToString()


_piece = st.tuples(st.lists(st.sampled_from(CHARS), min_size=2, max_size=4).map("".join),
                   st.integers(-50, 0).map(float), st.sampled_from([NORMAL] * 6 + [USER]))
_text = st.lists(st.sampled_from(["a", "b", "x", " ", "  ", "ab", "xa ", "▁"]), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_piece, max_size=25), texts=st.lists(_text, min_size=1, max_size=4))
def test_word_by_word_is_sentencepiece_on_made_up_models(pieces, texts):
    raw = bpe_model(pieces)
    ours, theirs = pw_spm.SentencePieceProcessor(model_proto=raw), spm.SentencePieceProcessor(model_proto=raw)
    core = ours._model._core
    for text in texts:
        want = theirs.encode(text, out_type=str)
        assert ours.encode(text, out_type=str) == want, (text, core.bpe_by_words)
        core.bpe_by_words = False
        assert ours.encode(text, out_type=str) == want
        core.bpe_by_words = True


# (Doubled units too: "▁▁" then "▁▁▁▁" puts the second one's pairs side by side in a run, where
# which of them merges first is the order the buckets must keep.)
_any_piece = st.tuples(st.lists(st.sampled_from(CHARS), min_size=2, max_size=4).map("".join)
                       | st.sampled_from(["▁▁", "▁▁▁▁", "▁▁▁▁▁▁▁▁", "ab", "abab", "ababab"]),
                       st.integers(-12, 0).map(float), st.sampled_from([NORMAL] * 6 + [USER, UNUSED]))
_runs = st.lists(st.tuples(st.sampled_from([" ", "ab", "x", "a b"]), st.integers(1, 20)), max_size=6).map(
    lambda runs: "".join(unit * count for unit, count in runs))


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_any_piece, max_size=25), texts=st.lists(_text | _runs, min_size=1, max_size=4),
       by_words=st.booleans())
def test_buckets_are_sentencepiece_on_made_up_models(pieces, texts, by_words):
    # Long words merge from a bucket per score instead of a heap (here every word, and the whole
    # text when it is not cut): few scores, so many pairs tie; unused pieces keep their splits.
    raw = bpe_model(pieces)
    ours, theirs = pw_spm.SentencePieceProcessor(model_proto=raw), spm.SentencePieceProcessor(model_proto=raw)
    core = ours._model._core
    core.bpe_by_words = core.bpe_by_words and by_words
    for text in texts:
        want = theirs.encode(text, out_type=str)
        core.bpe_bucket_word = 0
        assert ours.encode(text, out_type=str) == want, text
        core.bpe_bucket_word = 10**9
        assert ours.encode(text, out_type=str) == want, text


def test_which_models_merge_word_by_word():
    # x▁ in a piece: a word may still start at a ▁ after a or b, not after x; an unused piece keeps
    # its split for the whole text, so a model with one merges the text at once.
    cut = pw_spm.SentencePieceProcessor(model_proto=bpe_model([("x▁", -1.0, NORMAL), ("▁a", -2.0, NORMAL)]))
    assert cut._model._core.bpe_by_words
    assert cut.encode("x a", out_type=str) == spm.SentencePieceProcessor(
        model_proto=bpe_model([("x▁", -1.0, NORMAL), ("▁a", -2.0, NORMAL)])).encode("x a", out_type=str)
    unused = pw_spm.SentencePieceProcessor(model_proto=bpe_model([("ab", -1.0, UNUSED)]))
    assert not unused._model._core.bpe_by_words


@pytest.mark.shared_data
def test_llama2_merges_word_by_word_as_sentencepiece_does(shared_data):
    path = str(shared_data / "tokenizers/sentencepiece/llama2/tokenizer.model")
    ours, theirs = pw_spm.SentencePieceProcessor(model_file=path), spm.SentencePieceProcessor(model_file=path)
    assert ours._model._core.bpe_by_words        # (so the parity tests on Llama 2 run this way)
    text = (shared_data / "corpora/english/botchan.txt").read_text(encoding="utf-8-sig")[:200_000]
    text += "   indented\n\tx  ▁▁ y" * 50
    assert ours.encode(text) == theirs.encode(text)
