"""The char-level BPE plan (pieceworks.fast.class_run_bpe): BPE after a class-run pre-tokenizer, fused.

Every test holds the plan to the general pipeline (one Python object per
split, the model's ``tokenize_chars`` per piece) on the same input, field by
field; the parity tests hold both to Hugging Face ``tokenizers`` loading the
same tokenizer.json. A "twin" shares the stage objects but never has a plan.
"""

from __future__ import annotations

import itertools
import random
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer

from parity import assert_same_as_hugging_face_on_corpora, assert_same_encoding, assert_threads_equal_serial
from pieceworks import Tokenizer
from pieceworks.corpus import iter_default_corpus
from pieceworks.errors import UnknownTokenError
from pieceworks.fast import bert, class_run_bpe
from pieceworks.models import BPE
from pieceworks.normalizers import NFKD, BertNormalizer, Lowercase
from pieceworks.pre_tokenizers import BertPreTokenizer, ByteLevel, CharDelimiterSplit, Metaspace, Whitespace, WhitespaceSplit
from pieceworks.trainers import BpeTrainer
from test_fast_bert import INTERESTING, twin

PRE_TOKENIZERS = (Whitespace, WhitespaceSplit, BertPreTokenizer)
NORMALIZERS = (lambda: None, Lowercase, BertNormalizer)


def training_lines(limit: int = 3000) -> list[str]:
    return list(islice(iter_default_corpus(), limit))


def trained(normalizer=None, pre_tokenizer=None, vocab_size: int = 600, **model_options) -> Tokenizer:
    """A BPE tokenizer trained here on the embedded corpus; ``model_options`` go to the trainer's model."""
    options = {"unk_token": "[UNK]", **model_options}
    prefix, suffix = options.pop("continuing_subword_prefix", None), options.pop("end_of_word_suffix", None)
    tok = Tokenizer(BPE(**options))
    tok.normalizer, tok.pre_tokenizer = normalizer, pre_tokenizer or Whitespace()
    specials = ["[UNK]"] if options["unk_token"] == "[UNK]" else []
    # (limit_alphabet: the corpus has ~2,000 chars; the rest become unknown, and the merges get the vocabulary.)
    tok.train_from_iterator(training_lines(), BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                         limit_alphabet=150, continuing_subword_prefix=prefix,
                                                         end_of_word_suffix=suffix, show_progress=False))
    return tok


def assert_same(fast: Tokenizer, general: Tokenizer, text: str, context: str = "") -> None:
    assert_same_encoding(fast.encode(text), general.encode(text), context or repr(text[:60]))


@pytest.fixture(scope="module")
def plain():
    """(a trained BPE + Whitespace tokenizer with its plan, its general twin)."""
    tok = trained()
    assert isinstance(tok._current_plan(), class_run_bpe.ClassRunBpePlan)
    return tok, twin(tok)


# -- which tokenizers get the plan ---------------------------------------------------

def test_the_plan_takes_bpe_after_class_run_pre_tokenizers_only():
    model = BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
    for make_normalizer, pre in itertools.product(NORMALIZERS, PRE_TOKENIZERS):
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = make_normalizer(), pre()
        assert isinstance(tok._current_plan(), class_run_bpe.ClassRunBpePlan), (tok.normalizer, pre)
    for normalizer, pre in [(None, Metaspace()), (None, ByteLevel()), (None, CharDelimiterSplit(" ")), (NFKD(), Whitespace())]:
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = normalizer, pre
        assert class_run_bpe.class_run_bpe_plan(tok) is None, (normalizer, pre)


def test_the_plan_encodes_the_general_paths_result(plain):
    fast, general = plain
    text = "Hello, world! Naïve café — 東京 x1 2nd... ☃"
    assert fast._current_plan().encode_plain(text) is not None
    assert_same(fast, general, text)


# -- the plan against the general path ----------------------------------------------

# Model options the kernel follows (each a model of its own: the encoder is per option set).
MODEL_OPTIONS = [
    {},
    {"unk_token": None},                                   # unknown chars dropped: offsets shift as HF's
    {"fuse_unk": True},
    {"byte_fallback": True},
    {"continuing_subword_prefix": "##"},
    {"end_of_word_suffix": "</w>"},
    {"continuing_subword_prefix": "##", "end_of_word_suffix": "</w>", "fuse_unk": True},
    # Byte fallback spells the prefix's and suffix's bytes too: a word's tokens then cover more
    # bytes than it has, and the last ones start at its end.
    {"continuing_subword_prefix": "##", "end_of_word_suffix": "</w>", "byte_fallback": True},
]


@pytest.fixture(scope="module")
def twins_by_options():
    """For each model option set, each normalizer and pre-tokenizer: (fast, general)."""
    out = {}
    for k, options in enumerate(MODEL_OPTIONS):
        base = trained(**options)
        if options.get("byte_fallback"):     # the <0xNN> tokens byte fallback spells bytes with
            base.model = BPE(dict(base.model.vocab, **{f"<0x{b:02X}>": 10_000 + b for b in range(256)}),
                             base.model.merges, unk_token="[UNK]", byte_fallback=True,
                             continuing_subword_prefix=options.get("continuing_subword_prefix"),
                             end_of_word_suffix=options.get("end_of_word_suffix"))
        assert len(base.model.merges) > 100, options
        for n, make_normalizer in enumerate(NORMALIZERS):
            for pre in PRE_TOKENIZERS:
                fast = Tokenizer(base.model)
                fast.normalizer, fast.pre_tokenizer = make_normalizer(), pre()
                assert fast._current_plan() is not None
                out[k, n, pre] = (fast, twin(fast))
    return out


interesting_text = st.lists(st.sampled_from(INTERESTING), max_size=40).map("".join)
words_text = st.lists(st.sampled_from(["the", "The", "café", "naïve", "tion", "ing", " ", "  ", "\t", ".", ",",
                                       "İ", "Σ", "東", "qz", "\u0301", "x" * 30, "de" * 15]),
                      max_size=30).map("".join)
any_text = st.one_of(st.text(max_size=40), interesting_text, words_text)


@settings(max_examples=400, deadline=None)
@given(text=any_text, which=st.tuples(st.integers(0, len(MODEL_OPTIONS) - 1), st.integers(0, len(NORMALIZERS) - 1),
                                      st.sampled_from(PRE_TOKENIZERS)))
def test_plan_equals_general_path_on_any_text(twins_by_options, text, which):
    fast, general = twins_by_options[which]
    assert_same(fast, general, text, context=f"{MODEL_OPTIONS[which[0]]} {which[1:]} {text!r}")
    if fast._current_plan().encode_plain(text) is None:
        # Only where NFD moves a spacing mark, or where byte fallback spelled a prefix or suffix
        # past a piece's end (PAST_PIECE: the general path says where those tokens are).
        clean, _, strip, _ = bert.normalizer_options(fast.normalizer)
        model = fast.model
        marks = model.continuing_subword_prefix or model.end_of_word_suffix
        assert strip and not bert.nfd_keeps_order(text, clean) or model.byte_fallback and marks, repr(text)


def test_tokens_past_a_pieces_end_take_the_general_way():
    # Byte fallback spells "##" and "</w>" too when they are not tokens: "000"'s tokens cover 11
    # bytes, and the last 8 start past the piece (Hugging Face's offsets run past the text there).
    vocab = {"[UNK]": 0, "0": 1, **{f"<0x{b:02X}>": 10 + b for b in range(256)}}
    tok = Tokenizer(BPE(vocab, [], unk_token="[UNK]", byte_fallback=True, continuing_subword_prefix="##",
                        end_of_word_suffix="</w>"))
    tok.pre_tokenizer = Whitespace()
    assert tok._current_plan().encode_plain("000") is None
    assert tok._current_plan().encode_plain("") is not None
    general = twin(tok)
    for text in ("000", "0 00 x", "0"):
        assert_same(tok, general, text)


def test_long_words_and_repeated_words(plain):
    # Words past the cache's 24 chars are merged each time; short ones come from the cache.
    fast, general = plain
    rng = random.Random(3)
    words = ["".join(rng.choice("etaoinshrdlu") for _ in range(rng.randint(1, 60))) for _ in range(300)]
    text = " ".join(rng.choice(words) for _ in range(3000))
    assert_same(fast, general, text)
    assert_same(fast, general, "thethethe" * 40_000)     # one word of 360,000 chars


def test_word_cache_starts_over_when_full(plain):
    fast, general = plain
    rng = random.Random(5)
    # More distinct short words than the cache keeps (3/4 of its slots), then the first ones again.
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(20_000)]
    text = " ".join(words + words[:2000])
    assert_same(fast, general, text)


def test_lowercase_char_map_agrees_with_the_general_path_on_every_code_point():
    from test_fast_bert import general_pieces
    from pieceworks._kernels import bert_fast

    normalizer = Lowercase()
    cmap = bert.char_map(bert.normalizer_options(normalizer), bert.class_run_actions(Whitespace()))
    chars = [chr(cp) for cp in range(0x110000)]
    for start in range(0, len(chars), 50_000):
        text = "".join(chars[start:start + 50_000])
        assert bert_fast.pieces(text, cmap) == general_pieces(normalizer, Whitespace(), text), f"from U+{start:04X}"


# -- options and errors -----------------------------------------------------------

def test_options_are_read_live():
    tok = trained()
    general = twin(tok)
    text = "Hello there, general Kenobi. Antidisestablishmentarianism!"
    before = tok.encode(text).tokens
    tok.model.continuing_subword_prefix = "##"      # the encoder is rebuilt; the plan follows
    assert_same(tok, general, text)
    assert tok.encode(text).tokens != before
    tok.model.dropout = 0.5                         # dropout: the plan still, text by text
    assert tok._current_plan().samples and not tok._current_plan().releases_gil
    tok.model.dropout = None
    assert not tok._current_plan().samples and tok._current_plan().releases_gil
    tok.model.ignore_merges = True                  # a whole-piece look-up the kernel does not make
    assert tok._current_plan().encode_plain(text) is None
    assert_same(tok, general, text)
    tok.model.ignore_merges = False
    assert tok._current_plan().encode_plain(text) is not None


def test_retraining_rebuilds_the_kernel():
    tok = trained(vocab_size=300)
    first = tok.encode("the quick brown fox").ids
    tok.train_from_iterator(training_lines(), BpeTrainer(vocab_size=900, special_tokens=["[UNK]"],
                                                         show_progress=False))
    general = twin(tok)
    assert_same(tok, general, "the quick brown fox")
    assert tok.encode("the quick brown fox").ids != first


@pytest.mark.parametrize("pre_tokenizer", [Whitespace(), Metaspace()])     # (and fast.metaspace_bpe's plan)
def test_missing_unk_token_falls_back_and_raises_the_general_error(pre_tokenizer):
    tok = Tokenizer(BPE({"a": 0, "b": 1, "▁": 2}, [], unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizer
    assert tok._current_plan().encode_plain("ab") is not None
    assert tok._current_plan().encode_plain("ab q") is None
    with pytest.raises(UnknownTokenError, match="unk_token"):
        tok.encode("ab q")
    with pytest.raises(UnknownTokenError, match="unk_token"):
        tok.encode_batch(["ab", "ab q"])


def test_batches_equal_one_by_one_and_threads_equal_serial(plain, monkeypatch):
    fast, general = plain
    lines = training_lines(4000)[1000:]
    assert_threads_equal_serial(fast, general, lines, monkeypatch)


# -- against Hugging Face ----------------------------------------------------------

# (Hugging Face takes no lone surrogate.)
HF_INTERESTING = [ch for ch in INTERESTING if not 0xD800 <= ord(ch) < 0xE000]


def hf_twin(tok: Tokenizer) -> HfTokenizer:
    return HfTokenizer.from_str(tok.to_str())


# (Byte fallback needs <0xNN> tokens, which training does not make: see the test after this one.)
@pytest.mark.parametrize("options", [o for o in MODEL_OPTIONS if not o.get("byte_fallback")])
@pytest.mark.parametrize("pre_tokenizer", PRE_TOKENIZERS)
def test_same_as_hugging_face_on_the_embedded_corpus(options, pre_tokenizer):
    tok = trained(pre_tokenizer=pre_tokenizer(), normalizer=Lowercase(), **options)
    theirs = hf_twin(tok)
    lines = training_lines(6000)[3000:] + HF_INTERESTING
    for ours, hf, line in zip(tok.encode_batch(lines), theirs.encode_batch(lines), lines):
        assert_same_encoding(ours, hf, repr(line[:60]))


def test_same_as_hugging_face_with_byte_fallback():
    vocab = {"[UNK]": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}}
    for ch in "abcdefghijklmnopqrstuvwxyz":
        vocab[ch] = len(vocab)
    merges = [("t", "h"), ("th", "e"), ("i", "n"), ("in", "g")]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    tok = Tokenizer(BPE(vocab, merges, unk_token="[UNK]", byte_fallback=True))
    tok.normalizer, tok.pre_tokenizer = BertNormalizer(), BertPreTokenizer()
    assert tok._current_plan() is not None
    theirs = hf_twin(tok)
    texts = ["the thing é 東京!", "ÀÉÎ õü ñ", "x" * 40 + "é", *HF_INTERESTING]
    for text in texts:
        assert_same_encoding(tok.encode(text), theirs.encode(text), repr(text))


def test_same_as_hugging_face_on_corpora(shared_data):
    tok = trained(vocab_size=2000)
    theirs = hf_twin(tok)
    corpora = ("corpora/english/botchan.txt", "corpora/code/llama.cpp_ggml_c_cpp.txt",
               "corpora/multilingual/ja_wagahaiwa_nekodearu.txt")
    assert_same_as_hugging_face_on_corpora(tok, theirs, shared_data, corpora)
