"""Unigram (Hugging Face API), Precompiled, the double-array trie, and .model → tokenizer.json.

The model and the normalizer are held to Hugging Face ``tokenizers``
(ids, tokens, offsets) on random vocabularies and texts and on the real
tokenizer.json files; the conversion from .model files to a pipeline is held
to the sentencepiece library.
"""

from __future__ import annotations

import json
import math
import pickle
from collections import Counter
from functools import lru_cache

import pytest
import tokenizers as hf
from hypothesis import given, settings, strategies as st

import pieceworks as pw
from pieceworks._kernels.unigram import DoubleArray, set_random_seed
from pieceworks.errors import ConfigError, InputTypeError, TokenizerFileError, UnknownTokenError
from pieceworks.formats import sentencepiece as fmt
from pieceworks.models import Unigram
from pieceworks.normalizers import Precompiled

from parity import assert_same_encoding

BYTES = [(f"<0x{i:02X}>", -20.0) for i in range(256)]


def both(vocab, unk_id=0, byte_fallback=False):
    return (pw.Tokenizer(Unigram(vocab, unk_id=unk_id, byte_fallback=byte_fallback)),
            hf.Tokenizer(hf.models.Unigram(vocab, unk_id=unk_id, byte_fallback=byte_fallback)))


# -- the model against Hugging Face ---------------------------------------------------------
ALPHABET = "abcé▁😀Ж"
PIECES = st.text(alphabet=ALPHABET, min_size=1, max_size=4)
SCORES = st.floats(min_value=-20, max_value=0, allow_nan=False).map(lambda x: round(x, 2))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(PIECES, SCORES), min_size=1, max_size=30), st.text(alphabet=ALPHABET + "xy", max_size=25),
       st.booleans())
def test_random_vocab_matches_hugging_face(entries, text, byte_fallback):
    vocab = [("<unk>", 0.0)] + entries + (BYTES if byte_fallback else [])
    ours, theirs = both(vocab, byte_fallback=byte_fallback)
    assert_same_encoding(ours.encode(text), theirs.encode(text), repr(text))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30))
def test_any_text_matches_hugging_face(text):
    vocab = [("<unk>", 0.0), ("a", -1.0), ("ab", -1.5), ("▁", -2.0), ("é", -3.0), ("😀", -3.0)] + BYTES
    for byte_fallback in (False, True):
        ours, theirs = both(vocab, byte_fallback=byte_fallback)
        assert_same_encoding(ours.encode(text), theirs.encode(text), repr(text))


def test_duplicates_ties_and_missing_unk():
    vocab = [("<unk>", 0.0), ("a", -1.0), ("a", -0.5), ("aa", -2.0), ("b", -1.0), ("bb", -2.0)]
    ours, theirs = both(vocab)
    for text in ["aaaa", "abab", "bbbbb", "aab", ""]:
        assert_same_encoding(ours.encode(text), theirs.encode(text), text)
    assert ours.token_to_id("a") == theirs.token_to_id("a") == 2
    assert ours.get_vocab() == theirs.get_vocab()
    no_unk = pw.Tokenizer(Unigram([("a", -1.0)]))
    assert no_unk.encode("aa").tokens == ["a", "a"]
    with pytest.raises(UnknownTokenError, match="unk_id"):
        no_unk.encode("ab")
    with pytest.raises(Exception, match="unk_id"):
        hf.Tokenizer(hf.models.Unigram([("a", -1.0)])).encode("ab")


def test_model_api():
    m = Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -1.5)], unk_id=0)
    h = hf.models.Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -1.5)], unk_id=0)
    assert [(t.id, t.value, t.offsets) for t in m.tokenize("abxab")] == \
        [(t.id, t.value, t.offsets) for t in h.tokenize("abxab")]
    assert m.id_to_token(3) == h.id_to_token(3) == "ab"
    assert m.id_to_token(99) is None and m.token_to_id("zz") is None
    assert m.get_vocab_size() == 4
    assert m.nbest("abab", 3) == [(["ab", "ab"], -3.0), (["a", "b", "ab"], -4.5), (["ab", "a", "b"], -4.5)]
    empty = Unigram()
    assert empty.to_json() == json.loads(hf.models.Unigram().__getstate__())


def test_bad_arguments():
    with pytest.raises(ConfigError, match="unk_id"):
        Unigram([("a", -1.0)], unk_id=5)
    with pytest.raises(InputTypeError):
        Unigram([("a",)])
    with pytest.raises(InputTypeError):
        Unigram([(1, -1.0)])
    with pytest.raises(InputTypeError):
        Unigram([("a", "high")])
    with pytest.raises(ConfigError, match="alpha"):
        Unigram([("a", -1.0)], alpha=float("inf"))
    with pytest.raises(ConfigError, match="nbest_size"):
        Unigram([("a", -1.0)], nbest_size=-3)


def test_json_save_and_pickle(tmp_path):
    vocab = [("<unk>", 0.0), ("a", -1.25), ("b", -2.0)] + BYTES
    ours, theirs = both(vocab, byte_fallback=True)
    assert json.loads(ours.to_str()) == json.loads(theirs.to_str())
    again = pw.Tokenizer.from_str(theirs.to_str())
    assert again.encode("abЖ").ids == theirs.encode("abЖ").ids
    files = ours.model.save(str(tmp_path))
    assert json.loads(open(files[0]).read()) == json.loads(open(theirs.model.save(str(tmp_path), "hf")[0]).read())
    assert Unigram.from_file(files[0]).to_json() == ours.model.to_json()
    clone = pickle.loads(pickle.dumps(ours.model))
    assert clone.to_json() == ours.model.to_json()
    for bad, field in [({"type": "Unigram", "vocab": [["a"]]}, "vocab"),
                       ({"type": "Unigram", "vocab": [["a", -1.0]], "unk_id": 3}, "unk_id"),
                       ({"type": "Unigram", "vocab": [["a", "x"]]}, "vocab")]:
        with pytest.raises(TokenizerFileError, match=field):
            pw.models.Model.from_json(bad)


def _chi2_ok(counts: Counter, probs: dict, n: int) -> bool:
    stat = sum((counts.get(k, 0) - n * p) ** 2 / (n * p) for k, p in probs.items())
    critical = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52}  # 99.9%
    return stat < critical[len(probs) - 1]


@pytest.mark.parametrize("alpha,nbest_size", [(0.5, None), (1.0, None), (0.5, 2), (0.3, 3)])
def test_sampling_follows_the_distribution(alpha, nbest_size):
    vocab = [("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -1.5)]
    model = Unigram(vocab, unk_id=0, alpha=alpha, nbest_size=nbest_size)
    segmentations = Unigram(vocab, unk_id=0).nbest("abab", 100)
    pool = segmentations if nbest_size is None else segmentations[:nbest_size]
    weights = {tuple(p): math.exp(alpha * s) for p, s in pool}
    probs = {k: w / sum(weights.values()) for k, w in weights.items()}
    set_random_seed(99)
    n = 3000
    counts = Counter(tuple(t.value for t in model.tokenize("abab")) for _ in range(n))
    assert set(counts) <= set(probs)
    assert _chi2_ok(counts, probs, n)


# -- the double-array trie -----------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.sets(st.binary(min_size=1, max_size=6), max_size=60), st.binary(max_size=10))
def test_double_array_matches_a_dict(keys, probe):
    keys = sorted(keys)
    trie = DoubleArray(keys, list(range(len(keys))))
    table = {k: i for i, k in enumerate(keys)}
    for k in keys:
        assert trie.exact_match(k) == table[k]
    assert trie.exact_match(probe) == table.get(probe, -1)
    want = [(n, table[probe[:n]]) for n in range(1, len(probe) + 1) if probe[:n] in table]
    assert trie.common_prefix_search(probe) == want


# -- Precompiled -----------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _charsmap(path: str) -> bytes:
    return bytes(fmt.read_model_proto(path).normalizer_spec.precompiled_charsmap)


def charsmaps(shared_data):
    base = shared_data / "tokenizers" / "sentencepiece"
    return [_charsmap(str(base / "ruT5-large" / "spiece.model")),           # nmt_nfkc
            _charsmap(str(base / "sentencepiece_test_model.model"))]        # nfkc


NORMALIZING = st.sampled_from(["ﬁ", "①", "ⅷ", "\u00a0", "\u3000", "e\u0301", "ｱﾞ", "ﾊﾟ", "\r\n", "\t", "\u200b",
                               "ǅ", "Å", "😀", "\U0001F1FA\U0001F1F8", "Ａ", "㍻", "x", " ", "\x00", "\u00ad"])


@pytest.mark.shared_data
@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=30), st.lists(NORMALIZING, max_size=10).map("".join)))
def test_precompiled_matches_hugging_face(shared_data, text):
    for blob in charsmaps(shared_data):
        theirs = hf.normalizers.Precompiled(blob)
        ours = Precompiled(blob)
        assert ours.normalize_str(text) == theirs.normalize_str(text)


@pytest.mark.shared_data
def test_precompiled_offsets_match_hugging_face(shared_data):
    texts = [json.loads(line)["text"] for line in
             open(shared_data / "testvectors" / "generated" / "inputs.jsonl", encoding="utf-8")][::3]
    texts += ["ﬁx", "aﬁb", "ⅷz", "xe\u0301y", "\r\nab", "aｱﾞb", "a\u200bb", "\u200bx"]
    for blob in charsmaps(shared_data):
        h = hf.normalizers.Precompiled(blob)
        chars = sorted(set("".join(h.normalize_str(t) for t in texts)))
        ours, theirs = both([("<unk>", 0.0)] + [(c, -1.0) for c in chars])
        ours.normalizer = Precompiled(blob)
        theirs.normalizer = h
        for text in texts:
            assert_same_encoding(ours.encode(text), theirs.encode(text), repr(text[:40]))
    p = Precompiled(charsmaps(shared_data)[0])
    assert Precompiled._from_fields(pw._component.Fields(p._to_fields(), "normalizer")).precompiled_charsmap == \
        p.precompiled_charsmap
    with pytest.raises(TokenizerFileError, match="base64"):
        pw.normalizers.Normalizer.from_json({"type": "Precompiled", "precompiled_charsmap": "%%%"})
    with pytest.raises(TokenizerFileError, match="charsmap"):
        pw.normalizers.Normalizer.from_json({"type": "Precompiled", "precompiled_charsmap": "AAAA"})


# -- tokenizer.json files -----------------------------------------------------------------------
@pytest.mark.shared_data
def test_ru_t5_tokenizer_json_golden(shared_data):
    gen = shared_data / "testvectors" / "generated"
    texts = [json.loads(line)["text"] for line in open(gen / "inputs.jsonl", encoding="utf-8")]
    path = shared_data / "tokenizers" / "sentencepiece" / "ruT5-large" / "tokenizer.json"
    ours = pw.Tokenizer.from_file(str(path))
    theirs = hf.Tokenizer.from_file(str(path))
    for line in open(gen / "hf" / "sentencepiece__ruT5-large.jsonl", encoding="utf-8"):
        gold = json.loads(line)
        text = texts[gold["id"]]
        assert ours.encode(text, add_special_tokens=False).ids == gold["ids"], gold["id"]
        if "ids_with_special" in gold:
            assert ours.encode(text).ids == gold["ids_with_special"]
    for text in texts[::7]:
        assert_same_encoding(ours.encode(text), theirs.encode(text), repr(text[:40]))
        ids = theirs.encode(text).ids
        assert ours.decode(ids) == theirs.decode(ids)
    # Hugging Face parses JSON floats with serde_json's default parser (not always correctly
    # rounded), and so do we (formats/serde_float.py): we hold, and save, exactly its scores,
    # and Hugging Face reading our saved file gets those same doubles back.
    mine, hfs = json.loads(ours.to_str())["model"], json.loads(theirs.to_str())["model"]
    assert mine["vocab"] == hfs["vocab"]
    assert (mine["unk_id"], mine["byte_fallback"]) == (hfs["unk_id"], hfs["byte_fallback"])
    assert json.loads(hf.Tokenizer.from_str(ours.to_str()).to_str())["model"]["vocab"] == hfs["vocab"]
    raw = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    assert [p for p, _ in mine["vocab"]] == [p for p, _ in raw]
    assert all(math.isclose(a, b, rel_tol=1e-15) for (_, a), (_, b) in zip(mine["vocab"], raw))
    assert json.loads(ours.to_str())["normalizer"] == json.loads(theirs.to_str())["normalizer"]


# -- .model → tokenizer.json -----------------------------------------------------------------------
CONVERTED = ["sentencepiece_test_model.model", "llama2/tokenizer.model", "barthez/sentencepiece.bpe.model",
             "hf_transformers_fixtures/spiece.model", "seqio_test_data/sentencepiece.model"]
CONTROL_TEXT = ("<s>", "</s>", "<pad>", "<unk>")


@pytest.mark.shared_data
@pytest.mark.parametrize("name", CONVERTED)
def test_converted_model_encodes_as_sentencepiece(shared_data, name):
    spm = pytest.importorskip("sentencepiece")
    path = shared_data / "tokenizers" / "sentencepiece" / name
    sp = spm.SentencePieceProcessor(model_file=str(path))
    ours = fmt.model_to_tokenizer(path)
    theirs = hf.Tokenizer.from_str(ours.to_str())  # the file works in Hugging Face too
    texts = [json.loads(line)["text"] for line in
             open(shared_data / "testvectors" / "generated" / "inputs.jsonl", encoding="utf-8")]
    decode_differs = 0
    for text in texts:
        want = sp.encode(text)
        got = ours.encode(text, add_special_tokens=False)
        assert got.ids == theirs.encode(text, add_special_tokens=False).ids
        assert ours.decode(want) == theirs.decode(want)
        if ours.decode(want) != sp.decode(want):
            decode_differs += 1  # only when the ids start with several "▁" pieces
        if any(c in text for c in CONTROL_TEXT):
            continue  # a tokenizer.json matches control pieces in text; SentencePiece does not
        assert got.ids == want, repr(text[:50])
    assert decode_differs <= 1


def test_options_assigned_after_encoding_are_the_kernels():
    """``byte_fallback`` and ``unk_id`` assigned on a model that has encoded: the kernel is built
    again with them (it was built once, and kept the old ones while the file said the new),
    encode and batch alike; as Hugging Face loading the tokenizer as it now is."""
    tokenizers = pytest.importorskip("tokenizers")
    from pieceworks import Tokenizer

    vocab = [["<unk>", 0.0], ["\u2581", -1.0], ["a", -2.0], ["<0x09>", -3.0], ["<x>", -3.0]]
    config = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
              "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                                "split": True},
              "post_processor": None, "decoder": None,
              "model": {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": False}}
    tok = Tokenizer.from_str(json.dumps(config))
    texts = ["a\t", "a b\ta"]
    assert "<0x09>" not in tok.encode("a\t").tokens
    for change in (("byte_fallback", True), ("unk_id", 4), ("byte_fallback", False)):
        setattr(tok.model, *change)
        hf = tokenizers.Tokenizer.from_str(tok.to_str())
        for text, batched in zip(texts, tok.encode_batch(texts)):
            want = hf.encode(text)
            assert (tok.encode(text).tokens, tok.encode(text).ids) == (want.tokens, want.ids), change
            assert (batched.tokens, batched.ids) == (want.tokens, want.ids), change
        if change == ("byte_fallback", True):
            assert "<0x09>" in tok.encode("a\t").tokens
    with pytest.raises(ConfigError):
        tok.model.unk_id = 9
