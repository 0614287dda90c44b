"""The byte-level BPE plan (fast/byte_bpe.py) against the general path and Hugging Face.

The general path is the same tokenizer with its plan switched off
(``PIECEWORKS_NO_FAST=1`` while the plan is chosen); every field of the
Encoding must agree. Hugging Face ``tokenizers`` is the reference for the
shared tokenizer.json files, and for GPT-2's encoder.json + vocab.bpe.
"""

from __future__ import annotations

import json
import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pieceworks import Regex, Tokenizer
from pieceworks._unicode_tables import UNICODE_17_WORD_CHARS
from pieceworks.fast.byte_bpe import ByteBpePlan
from pieceworks.models import BPE
from pieceworks.normalizers import NFC
from pieceworks.pre_tokenizers import ByteLevel
from parity import general_path

tokenizers = pytest.importorskip("tokenizers")

FILES = ["llama3", "qwen3", "gpt-neox-20b", "vulrepair-codet5-style-bytelevel-bpe"]
NEW_IN_17 = {cp for first, last in UNICODE_17_WORD_CHARS for cp in range(first, last + 1)}
FIELDS = ("ids", "tokens", "offsets", "word_ids", "type_ids", "attention_mask", "special_tokens_mask")


def same(a, b, text) -> None:
    for field in FIELDS:
        assert getattr(a, field) == getattr(b, field), (field, text[:80])


@pytest.fixture(scope="module")
def inputs(shared_data):
    return [json.loads(line)["text"] for line in (shared_data / "testvectors/generated/inputs.jsonl").open()]


@pytest.fixture(scope="module")
def trio(shared_data):
    """``{name: (fast tokenizer, general tokenizer, Hugging Face tokenizer)}``."""
    out = {}
    for name in FILES:
        path = str(shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json")
        fast = Tokenizer.from_file(path)
        assert isinstance(fast._current_plan(), ByteBpePlan), name
        out[name] = (fast, general_path(lambda: Tokenizer.from_file(path)), tokenizers.Tokenizer.from_file(path))
    return out


@pytest.fixture(scope="module")
def gpt2(shared_data):
    folder = shared_data / "tokenizers/gpt2_openai"

    def make(cls, pre_tokenizer, decoder):
        tok = cls(cls_model(cls).from_file(str(folder / "encoder.json"), str(folder / "vocab.bpe")))
        tok.pre_tokenizer = pre_tokenizer
        tok.decoder = decoder
        return tok

    def cls_model(cls):
        return BPE if cls is Tokenizer else tokenizers.models.BPE

    fast = make(Tokenizer, ByteLevel(add_prefix_space=False), None)
    general = general_path(lambda: make(Tokenizer, ByteLevel(add_prefix_space=False), None))
    hf = make(tokenizers.Tokenizer, tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False), None)
    return fast, general, hf


@pytest.mark.parametrize("name", FILES)
def test_golden_vectors_and_hugging_face(name, trio, inputs, shared_data):
    fast, general, hf = trio[name]
    golden = [json.loads(line) for line in (shared_data / f"testvectors/generated/hf/hf_tokenizer_json__{name}.jsonl").open()]
    for text, gold in zip(inputs, golden):
        ours = fast.encode(text, add_special_tokens=False)
        assert ours.ids == gold["ids"], text[:80]
        ref = hf.encode(text, add_special_tokens=False)
        assert (ours.tokens, ours.offsets, ours.word_ids) == (ref.tokens, ref.offsets, ref.word_ids), text[:80]
        with_special = fast.encode(text)
        assert with_special.ids == gold.get("ids_with_special", gold["ids"])


@pytest.mark.parametrize("name", FILES)
def test_plan_is_the_general_path(name, trio, inputs):
    fast, general, _ = trio[name]
    for text in inputs[::3]:
        same(fast.encode(text), general.encode(text), text)


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=50) | st.text(st.sampled_from(list("aS's \n\r\t1234½/.中\u0301é😀<|>")), max_size=40))
def test_any_text(name, text, trio):
    fast, general, hf = trio[name]
    ours = fast.encode(text)
    if not any(ord(ch) in NEW_IN_17 for ch in text):
        # The general path's Split runs the `regex` module, which knows the
        # letters Unicode 17 added; Hugging Face (and the plan) do not yet.
        same(ours, general.encode(text), text)
    if all(not 0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        ref = hf.encode(text)
        assert (ours.ids, ours.offsets) == (ref.ids, ref.offsets)


def test_gpt2_files_against_hugging_face(gpt2, inputs):
    fast, general, hf = gpt2
    assert isinstance(fast._current_plan(), ByteBpePlan)
    for text in inputs:
        ours = fast.encode(text)
        ref = hf.encode(text)
        assert (ours.ids, ours.tokens, ours.offsets) == (ref.ids, ref.tokens, ref.offsets), text[:80]
    for text in inputs[::5]:
        same(fast.encode(text), general.encode(text), text)


def test_options_are_read_live(gpt2, inputs):
    fast, general, _ = gpt2
    for value in (True, False):
        fast.pre_tokenizer.add_prefix_space = value
        general.pre_tokenizer.add_prefix_space = value
        for text in inputs[::7] + ["\nx", " x", "1", "é"]:
            same(fast.encode(text), general.encode(text), text)


def test_unsupported_options_go_to_the_general_path(shared_data, inputs):
    path = str(shared_data / "tokenizers/hf_tokenizer_json/llama3/tokenizer.json")
    fast, general = Tokenizer.from_file(path), general_path(lambda: Tokenizer.from_file(path))
    plan = fast._current_plan()
    split, byte_level = fast.pre_tokenizer.pretokenizers
    general_split, general_byte_level = general.pre_tokenizer.pretokenizers
    for change in (lambda s, b: setattr(s, "behavior", "merged_with_next"),
                   lambda s, b: setattr(b, "add_prefix_space", True),
                   lambda s, b: setattr(s, "pattern", Regex(r"\s+|\S+"))):
        change(split, byte_level)
        change(general_split, general_byte_level)
        assert plan.encode_plain("Hello world") is None
        for text in inputs[::11]:
            same(fast.encode(text), general.encode(text), text)


def test_text_that_nfc_changes(trio):
    fast, general, hf = trio["qwen3"]
    for text in ["e\u0301 cafe\u0301", "ｶﾞ \u1100\u1161\u11a8 x", "already é", "A\u030a\u0323 Å\u0301!",
                 "\u0915\u093c \u0958 क़"]:
        same(fast.encode(text), general.encode(text), text)
        ref = hf.encode(text)
        assert (fast.encode(text).ids, fast.encode(text).offsets) == (ref.ids, ref.offsets)
    assert fast._current_plan().encode_plain("e\u0301") is not None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.sampled_from(list("aeoAEO ,\u0301\u0300\u0323\u0308\u1100\u1161\u11a8가ﬁ1")), max_size=30))
def test_any_text_under_nfc(text, trio):
    fast, general, _ = trio["qwen3"]
    same(fast.encode(text), general.encode(text), text)
    assert fast._current_plan().encode_ids(text) == general.encode(text, add_special_tokens=False).ids


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(["<|endoftext|>", "<|padding|>", " " * 2, " " * 5, "e", "\u0301", "\u0323",
                                       "\u0958", "\u0344", "\u212b", "\u1100", "\u1161", "가", "x", "\n", "ﬁ",
                                       "\u0338", "\u0316", ">", "<"]),
                      max_size=14))
def test_any_text_under_nfc_with_tokens_matched_after_it(parts, trio):
    """The gaps between GPT-NeoX's special tokens normalized one by one, its space-run tokens found
    in them, every offset mapped back: as the general path and Hugging Face, one text and batched."""
    fast, general, hf = trio["gpt-neox-20b"]
    text = "".join(parts)
    ours = fast.encode(text)
    same(ours, general.encode(text), text)
    ref = hf.encode(text)
    assert (ours.ids, ours.tokens, ours.offsets, ours.word_ids) == (ref.ids, ref.tokens, ref.offsets, ref.word_ids)
    same(fast.encode_batch([text, "a"])[0], ours, text)


def test_added_tokens_split_first(trio):
    fast, general, hf = trio["llama3"]
    text = "<|begin_of_text|>Hi<|eot_id|> <|start_header_id|>user<|end_header_id|>\n\nthere"
    same(fast.encode(text), general.encode(text), text)
    assert fast.encode(text).ids == hf.encode(text).ids
    texts = [text, "plain text", ""] * 3
    for add in (True, False):   # (Llama 3's post-processor puts <|begin_of_text|> first)
        assert fast.encode_batch_ids(texts, add_special_tokens=add) == [
            e.ids for e in hf.encode_batch(texts, add_special_tokens=add)]


def test_batches_match_one_by_one(trio, inputs):
    fast, _, hf = trio["qwen3"]
    lines = [line for text in inputs for line in text.split("\n")] * 3
    batch = fast.encode_batch(lines)
    for text, enc in zip(lines, batch):
        same(enc, fast.encode(text), text)
    assert [e.ids for e in batch[:300]] == [e.ids for e in hf.encode_batch(lines[:300])]
    assert fast.encode_batch_ids(lines) == [e.ids for e in batch]


def test_retraining_rebuilds_the_kernel():
    from pieceworks.byte_level import BYTE_TO_CHAR
    from pieceworks.trainers import BpeTrainer

    tok = Tokenizer(BPE({c: i for i, c in enumerate(BYTE_TO_CHAR)}, []))
    tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
    before = tok.encode("hello hello").ids
    trainer = BpeTrainer(vocab_size=300, initial_alphabet=ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(["hello hello world"] * 50, trainer)
    after = tok.encode("hello hello")
    assert len(after.ids) < len(before)
    same(after, general_path(lambda: Tokenizer.from_str(tok.to_str())).encode("hello hello"), "hello hello")


@pytest.mark.parametrize("name", ["llama3", "gpt-neox-20b"])
def test_pathological_inputs_in_bounded_time(name, trio):
    fast, _, hf = trio[name]
    rng = random.Random(0)
    prose_like = " ".join("".join(rng.choice("etaoinshrdlu") for _ in range(rng.randint(1, 9))) for _ in range(40_000))
    start = time.perf_counter()
    fast.encode(prose_like)
    prose_time = time.perf_counter() - start
    for text in ["a" * 300_000, "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(300_000)),
                 "".join(rng.choice("0123456789") for _ in range(300_000)), " " * 300_000, "中文" * 100_000]:
        start = time.perf_counter()
        ours = fast.encode(text)
        elapsed = time.perf_counter() - start
        assert elapsed < max(30 * prose_time, 2.0), (text[:10], elapsed, prose_time)
        assert ours.ids == hf.encode(text).ids


def test_gil_is_released_for_threads():
    plan = ByteBpePlan(BPE(), None, ByteLevel())
    assert plan.releases_gil and plan.nogil_min_chars <= 64


def test_a_vocabulary_missing_bytes_falls_back():
    tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
    tok.normalizer = NFC()
    assert tok._current_plan() is None
    assert tok.encode("abab").ids == [2, 2]


def test_tokens_outside_the_byte_alphabet_drop_their_merges_from_the_kernel():
    """A vocabulary token with a char GPT-2's alphabet has no byte for (a raw space, an é) has no
    bytes: the kernel leaves out the merges into it, and encodes as the general path does, which
    never meets those merges either (no byte-level piece spells such a token)."""
    from pieceworks.byte_level import BYTE_TO_CHAR

    vocab = {c: i for i, c in enumerate(BYTE_TO_CHAR)}
    vocab.update({"ab": 256, " d": 257, "c d": 258, "é": 259, "éa": 260, "ĠaĠ": 261, "Ġa": 262})
    merges = [("a", "b"), ("c", " d"), ("é", "a"), ("Ġ", "a"), ("Ġa", "Ġ")]

    def make():
        tok = Tokenizer(BPE(dict(vocab), list(merges)))
        tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
        return tok

    fast, general = make(), general_path(make)
    assert fast._current_plan() is not None
    for text in ["ab c d éa", "c d", "é a", " a ab", "", "aĠ"]:
        same(fast.encode(text), general.encode(text), text)
    assert fast.encode(" ab").tokens == ["Ġ", "ab"] and fast.encode(" a").tokens == ["Ġa"] and fast.encode("aĠ").tokens == ["a", "Ä", "ł"]


def test_byte_chars_to_bytes_or_none_is_the_alphabet_table_on_every_char():
    from pieceworks.byte_level import CHAR_TO_BYTE, byte_chars_to_bytes, byte_chars_to_bytes_or_none

    for code in range(0x110000):
        char = chr(code)
        want = bytes([CHAR_TO_BYTE[char]]) if char in CHAR_TO_BYTE else None
        assert byte_chars_to_bytes_or_none(char) == want, hex(code)
        assert byte_chars_to_bytes_or_none("Ġ" + char + "a") == (None if want is None else b" " + want + b"a")
    with pytest.raises(KeyError, match="' '"):
        byte_chars_to_bytes("a b")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.none() | st.text(alphabet=st.sampled_from(["a", "Ġ", "Ċ", "\x00", " ", "ÿ", "\uffff", "中", "é",
                                                               "ł", "Ń", "ń", "\u01ff", "\u0200", "😀"]),
                                    max_size=4), max_size=8))
def test_tokens_to_bytes_is_the_one_token_form_on_each(tokens):
    """The C pass over all the tokens gives each token's bytes, or None, as the one-token form does,
    whatever the tokens hold: chars just past the alphabet (Ń) or its table (U+0200), none, or no token."""
    from pieceworks.byte_level import byte_chars_to_bytes_or_none, tokens_to_bytes

    assert tokens_to_bytes(tokens) == [None if t is None else byte_chars_to_bytes_or_none(t) for t in tokens]


def _renumbered(reverse: bool, ignore_merges: bool):
    """A trained byte-level BPE whose merged tokens' ids run backwards (``reverse``), so the merges
    make ever smaller ids, or as trained (ever larger: the kernel then ranks pairs by the new id)."""
    from pieceworks.trainers import BpeTrainer

    corpus = ["the cat sat on the mat, the hat", "naïve café über straße 中文 文本", "x = f(y) + 1; y += 22"] * 30

    def build(tokenizer_model):
        tok = Tokenizer(tokenizer_model)
        tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
        return tok

    trained = build(BPE())
    trained.train_from_iterator(corpus, BpeTrainer(vocab_size=420, initial_alphabet=ByteLevel.alphabet(),
                                                   show_progress=False))
    vocab, merges = trained.model.get_vocab(), trained.model.get_merges()
    if reverse:
        base = 256
        merged = sorted((i, t) for t, i in vocab.items() if i >= base)
        top = max(i for i, _ in merged)
        vocab = {t: (i if i < base else base + top - i) for t, i in vocab.items()}
    make = lambda: build(BPE(vocab, merges, ignore_merges=ignore_merges))  # noqa: E731
    return make(), general_path(make)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("ignore_merges", [False, True])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("the cat sat,mxy=+1 2éüß中文")), max_size=60))
def test_merges_in_any_id_order(reverse, ignore_merges, text):
    if (reverse, ignore_merges) not in _RENUMBERED:
        _RENUMBERED[reverse, ignore_merges] = _renumbered(reverse, ignore_merges)
    fast, general = _RENUMBERED[reverse, ignore_merges]
    assert fast._current_plan()._current_kernel().ranks_by_id == (not reverse)
    same(fast.encode(text), general.encode(text), text)


_RENUMBERED: dict = {}


def _every_split(seed: int):
    """Byte-level BPE merges written as Llama 3's are (tiktoken ranks as merges): every split of
    each token into two tokens, in the order of the token made, the splits of one token in an order
    ``seed`` shuffles. Two letters, so most tokens are made several ways (up to 7), and most
    texts make them."""
    from pieceworks.trainers import BpeTrainer

    words = random.Random(7)
    corpus = [" ".join("".join(words.choice("ab") for _ in range(words.randint(1, 12))) for _ in range(50))
              for _ in range(40)]
    trained = Tokenizer(BPE())
    trained.pre_tokenizer = ByteLevel(add_prefix_space=False)
    trained.train_from_iterator(corpus, BpeTrainer(vocab_size=700, initial_alphabet=ByteLevel.alphabet(),
                                                   show_progress=False))
    vocab = trained.model.get_vocab()
    rng = random.Random(seed)
    merges = []
    for token, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
        splits = [(token[:k], token[k:]) for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab]
        rng.shuffle(splits)
        merges.extend(splits)

    def make():
        tok = Tokenizer(BPE(vocab, merges))
        tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
        return tok
    return make(), general_path(make), vocab, merges


@pytest.mark.parametrize("seed", [0, 1, 2])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("ab ")), max_size=40))
def test_merges_making_a_token_several_ways(seed, text):
    # The kernel ranks each pair by the id it makes and its place among that id's ways
    # (ByteBPE._tie_bits), and reads the id back off the rank: the merges' order, the merges' ids.
    if seed not in _EVERY_SPLIT:
        fast, general, vocab, merges = _every_split(seed)
        hf = tokenizers.Tokenizer(tokenizers.models.BPE(vocab, merges))
        hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        kernel = fast._current_plan()._current_kernel()
        assert kernel.ranks_by_id and len(merges) > len(vocab) - 256     # some token made several ways
        _EVERY_SPLIT[seed] = fast, general, hf
    fast, general, hf = _EVERY_SPLIT[seed]
    ours = fast.encode(text)
    same(ours, general.encode(text), text)
    assert ours.ids == hf.encode(text).ids, text


_EVERY_SPLIT: dict = {}


def test_kernel_refuses_merges_naming_ids_it_lacks():
    from array import array

    from pieceworks._kernels.bytebpe import ByteBPE, Pattern
    from pieceworks.errors import ConfigError

    tokens = [bytes([i]) for i in range(256)] + [b"ab"]
    ok = ByteBPE(tokens, array("I", [97, 98, 256]), pattern=Pattern.PAT_CL100K, whole_piece=False)
    assert ok.encode("abab") == [256, 256]
    with pytest.raises(ConfigError, match="merge 0 names id 257"):
        ByteBPE(tokens, array("I", [97, 98, 257]), pattern=Pattern.PAT_CL100K, whole_piece=False)


def test_tokens_matched_after_normalizing_keep_the_fast_way(trio, monkeypatch, shared_data):
    """GPT-NeoX's space-run added tokens are matched after its NFC normalizer. A text NFC leaves
    as it is has them found as it is; in a text NFC changes, the gaps between its other (raw)
    tokens are normalized with their alignment (``AlignedNfc``) and they are found in those. Both
    the fast way, one text or a batch, as the general path and Hugging Face."""
    from pieceworks.added_vocabulary import AddedVocabulary

    fast, general, hf = trio["gpt-neox-20b"]
    assert fast._added.has_normalized_tokens()
    texts = ["def f(x):\n    return  x", "plain line", "cafe\u0301  x", "  \u212b  ", "e\u0301", "",
             "<|endoftext|>\u0301  x", "\u0958<|endoftext|>\u0958    y", "<|padding|>e\u0301\u0323\n\n\n  z"]
    general_way = []
    real = AddedVocabulary.extract_and_normalize

    def noted(self, normalizer, text, *rest):
        if self is fast._added:
            general_way.append(text)
        return real(self, normalizer, text, *rest)

    monkeypatch.setattr(AddedVocabulary, "extract_and_normalize", noted)
    for text in texts:
        same(fast.encode(text), general.encode(text), text)
        ref = hf.encode(text)
        assert (fast.encode(text).ids, fast.encode(text).offsets, fast.encode(text).tokens) == (
            ref.ids, ref.offsets, ref.tokens), text
    for ours, theirs, ref in zip(fast.encode_batch(texts * 40), general.encode_batch(texts * 40), hf.encode_batch(texts * 40)):
        same(ours, theirs, "batch")
        assert ours.offsets == ref.offsets
    assert general_way == []

    # A token NFC makes: only in the normalized text. One text and batched, it is found (Qwen3
    # also has the raw way: the one-text kernel and the batch job, which must leave such texts out).
    # A token whose content NFC changes ('o\u0301') is matched, and spelled, as NFC makes it.
    for name in ("gpt-neox-20b", "qwen3"):
        path = str(shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json")
        fast, hf = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)
        general = general_path(lambda: Tokenizer.from_file(path))
        for tok in (fast, general, hf):
            tok.add_tokens(["é", "plain", "o\u0301"])
        for text in ["cafe\u0301", "caf\u00e9 e\u0301", "a plain line", "b\u00f3 x", "bo\u0301 x\n b\u00f3"]:
            same(fast.encode(text), general.encode(text), text)
            ref = hf.encode(text)
            assert (fast.encode(text).ids, fast.encode(text).tokens, fast.encode(text).offsets) == (
                ref.ids, ref.tokens, ref.offsets), text
            for ours, theirs in zip(fast.encode_batch([text] * 3), hf.encode_batch([text] * 3)):
                assert (ours.ids, ours.tokens, ours.offsets) == (theirs.ids, theirs.tokens, theirs.offsets), text
        assert fast.token_to_id("é") in fast.encode("cafe\u0301").ids


_nfc_chars = st.sampled_from(list("ae o\nx\u0301\u0323\u0345\u0300\u1100\u1161\u11a8\uac00\u212b\u2126\u0958\u093c"
                                  "\u0915\uf900\u0f73\u0f71\u0f72\u3099\u304b\u00e9\u1e0b\u0307\U0001d15e\U0001d165"
                                  "\U00011099\U000110ba\U0002f800\r"))


@settings(max_examples=400, deadline=None)
@given(text=st.text(_nfc_chars, max_size=40), cut=st.tuples(st.integers(0, 40), st.integers(0, 40)))
def test_aligned_nfc_in_c_is_the_segment_by_segment_splice(text, cut):
    """``AlignedNfc.normalize`` (segments found and spliced in C) against the Python way it replaced:
    ``changed_segments``' segments kept or replaced one by one, on any part of a text that is kept
    before it: the same text, the same maps, so the same offsets back."""
    from pieceworks._unicode_forms import changed_segments
    from pieceworks.fast._aligned import AlignedNfc, AlignedText

    start, end = sorted(min(c, len(text)) for c in cut)
    ours, ref = AlignedNfc(text), AlignedText(text)
    ours.keep(0, start), ref.keep(0, start)
    done = start
    for seg_start, seg_end, changes in changed_segments(text[start:end], "NFC"):
        ref.keep(done, start + seg_start)
        ref.replace(start + seg_start, start + seg_end, changes)
        done = start + seg_end
    ref.keep(done, end)
    made = ours.normalize(start, end)
    assert ours.text == ref.text and made == ref.text[start:]
    for name in ("_seg_starts", "_seg_shift", "_seg_map", "_map_starts", "_map_ends"):
        assert getattr(ours, name) == getattr(ref, name), name
    assert ours.length == ref.length == len(ref.text)


@pytest.mark.parametrize("name", ["qwen3", "gpt-neox-20b"])
def test_a_batch_with_texts_nfc_changes(name, trio, shared_data):
    """Lines NFC changes (here every other one is in NFD), in a batch with lines it leaves: every
    field as the general path and Hugging Face."""
    import unicodedata

    fast, general, hf = trio[name]
    udhr = [json.loads(line)["text"] for line in
            (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").open()][:120]
    lines = [unicodedata.normalize("NFD" if k % 2 else "NFC", text[:300]) for k, text in enumerate(udhr)]
    lines += ["e\u0301", "", "\u0301x", "\u1100\u1161\u11a8 \u0958", "a\u0323\u0302\n"]
    assert sum(not unicodedata.is_normalized("NFC", line) for line in lines) >= 30
    for ours, theirs, ref in zip(fast.encode_batch(lines), general.encode_batch(lines), hf.encode_batch(lines)):
        same(ours, theirs, "batch")
        assert (ours.ids, ours.offsets, ours.tokens) == (ref.ids, ref.offsets, ref.tokens)
    assert fast.encode_batch_ids(lines) == [e.ids for e in hf.encode_batch(lines)]


@pytest.mark.parametrize("name", ["qwen3", "gpt-neox-20b"])
def test_a_batch_holding_tokens_matched_after_nfc(name, trio, shared_data):
    """Tokens from ``add_tokens`` (matched after NFC) and the file's specials, in lines of many
    languages, half of them in NFD: the lines NFC keeps are encoded around the tokens in the
    kernel, the others the long way. Every field as the general path and Hugging Face."""
    import unicodedata

    fast, general, hf = (Tokenizer.from_str(trio[name][0].to_str()),
                         general_path(lambda: Tokenizer.from_str(trio[name][0].to_str())),
                         tokenizers.Tokenizer.from_str(trio[name][2].to_str()))
    special = "<|endoftext|>"
    for tok in (fast, general, hf):
        tok.add_tokens(["<dom_tag>", "caf\u00e9", "de la", "\u4eba"])
    udhr = [json.loads(line)["text"] for line in
            (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").open()][:120]
    lines = [unicodedata.normalize("NFD" if k % 2 else "NFC", text[:200]) for k, text in enumerate(udhr)]
    lines = [f"{special}{line} <dom_tag>cafe\u0301 {line[:20]}" if k % 3 else line + "<dom_tag>"
             for k, line in enumerate(lines)]
    lines += ["<dom_tag>\u0301", "caf\u00e9\u0323", f"{special}\u0301<dom_tag>", "de la\u0301 \u4eba"]
    assert fast._added.has_normalized_tokens()
    assert fast.encode_batch_ids(lines) == [e.ids for e in hf.encode_batch(lines)]
    for ours, theirs, ref in zip(fast.encode_batch(lines), general.encode_batch(lines), hf.encode_batch(lines)):
        same(ours, theirs, "batch")
        assert (ours.ids, ours.offsets, ours.tokens, ours.word_ids) == (ref.ids, ref.offsets, ref.tokens,
                                                                       ref.word_ids)
    for line in lines[:40] + lines[-4:]:
        ours, ref = fast.encode(line), hf.encode(line)
        assert (ours.ids, ours.offsets, ours.tokens) == (ref.ids, ref.offsets, ref.tokens), repr(line[:40])


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_dropout_in_the_kernel_is_the_general_paths_and_of_one_hugging_faces(name, shared_data, inputs):
    """BPE-dropout on a real file: the plan (one thread, in order) draws as the general path does,
    so a seed gives the same ids, offsets and tokens; with dropout 1.0 every merge is dropped, as in
    Hugging Face (whose generator cannot be seeded: only that case compares)."""
    path = shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    lines = [line for text in inputs for line in text.split("\n")][:400]
    for dropout in (0.1, 1.0):
        data["model"]["dropout"] = dropout
        text = json.dumps(data)

        def make():
            tok = Tokenizer.from_str(text)
            tok.model.seed = 2024
            return tok

        fast, general = make(), general_path(make)
        assert isinstance(fast._current_plan(), ByteBpePlan)
        for line in lines[:150]:
            same(fast.encode(line), general.encode(line), line)
        for ours, theirs in zip(fast.encode_batch(lines), general.encode_batch(lines)):
            same(ours, theirs, "batch")
        if dropout == 1.0:
            hf = tokenizers.Tokenizer.from_str(text)
            assert fast.encode_batch_ids(lines) == [e.ids for e in hf.encode_batch(lines)]
