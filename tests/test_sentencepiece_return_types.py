"""sentencepiece 0.2.1+'s output types, against sentencepiece itself.

``encode``/``decode`` with ``out_type`` (or ``return_type``) ``bytes``,
``"numpy"``, ``"proto"`` (a ``SentencePieceText``: each piece's surface and
byte offsets), ``"serialized_proto"`` and ``"offset_mapping"``; n-best as
protos; ``ParallelEncode``; and the errors for the options those outputs
cannot take. Protos are compared serialized, so every field, set or unset,
must match.
"""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import given, settings, strategies as st

import pieceworks.sentencepiece as pw_spm
from pieceworks.errors import ConfigError

spm = pytest.importorskip("sentencepiece")
np = pytest.importorskip("numpy")

# Unigram, BPE with byte fallback (Llama 2), a Japanese Unigram with unknown chars, T5's
# nmt_nfkc Unigram (normalization moves offsets), and BARThez's BPE.
MODELS = ["sentencepiece_test_model.model", "llama2/tokenizer.model", "sentencepiece_test_ja_model.model",
          "hf_transformers_fixtures/spiece.model", "barthez/sentencepiece.bpe.model"]
UNIGRAM = ["sentencepiece_test_model.model", "sentencepiece_test_ja_model.model",
           "hf_transformers_fixtures/spiece.model"]
TEXTS = ["Hello wörld  ЖЖ 😀", "", "  lead and trail  ", "ｱﾞ①ﬁ e\u0301 ☃😀x", "<s> </s> <unk>", "a\tb\nc\u3000d",
         "吾輩は猫である。名前はまだ無い。", "\ufffd\x00 ▁▁ ab"]
PIECES = st.sampled_from([" ", "  ", "\t", "\u3000", "▁", "ﬁ", "①", "e\u0301", "😀", "☃", "\u200d", "<s>", "ｱﾞ",
                          "\ufffd", "é", "Ж", "ab", "猫", "!!", "x"])
ANY_TEXT = st.one_of(st.text(max_size=30), st.lists(PIECES, max_size=10).map("".join)).map(
    lambda t: t.encode("utf-8", "replace").decode("utf-8"))  # sentencepiece refuses lone surrogates


@lru_cache(maxsize=None)
def _pair(path: str):
    return pw_spm.SentencePieceProcessor(model_file=path), spm.SentencePieceProcessor(model_file=path)


def pair(shared_data, name):
    return _pair(str(shared_data / "tokenizers" / "sentencepiece" / name))


def comparable(value):
    """Protos as their bytes and arrays as (list, dtype), so == compares everything."""
    if hasattr(value, "SerializeToString"):
        return value.SerializeToString()
    if isinstance(value, np.ndarray):
        return value.tolist(), str(value.dtype)
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def test_sentencepiece_text_schema_is_sentencepieces():
    from google.protobuf import descriptor_pb2
    from sentencepiece import sentencepiece_pb2

    theirs = descriptor_pb2.FileDescriptorProto()
    sentencepiece_pb2.DESCRIPTOR.CopyToProto(theirs)
    ours = descriptor_pb2.FileDescriptorProto()
    pw_spm.SentencePieceText.DESCRIPTOR.file.CopyToProto(ours)
    for file in (ours, theirs):  # json_name is derived from the name; sentencepiece's copy leaves it out
        for message in file.message_type:
            for field in [*message.field, *(f for nested in message.nested_type for f in nested.field)]:
                field.ClearField("json_name")
    assert ours.package == theirs.package
    assert list(ours.message_type) == list(theirs.message_type)


@pytest.mark.shared_data
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("out_type", [bytes, "numpy", "proto", "serialized_proto", "offset_mapping"])
def test_encode_output_types_match_sentencepiece(shared_data, name, out_type):
    ours, theirs = pair(shared_data, name)
    for text in TEXTS:
        assert comparable(ours.encode(text, out_type=out_type)) == comparable(theirs.encode(text, out_type=out_type))
        data = text.encode("utf-8")
        assert comparable(ours.encode(data, return_type=out_type)) == \
            comparable(theirs.encode(data, return_type=out_type))
    assert comparable(ours.encode(TEXTS, out_type=out_type)) == comparable(theirs.encode(TEXTS, out_type=out_type))


@pytest.mark.shared_data
@settings(max_examples=120, deadline=None)
@given(text=ANY_TEXT, name=st.sampled_from(MODELS))
def test_offsets_of_any_text_match_sentencepiece(shared_data, text, name):
    ours, theirs = pair(shared_data, name)
    assert comparable(ours.encode(text, out_type="proto")) == comparable(theirs.encode(text, out_type="proto"))
    for return_bytes in (False, True):
        assert ours.encode(text, out_type="offset_mapping", return_bytes=return_bytes) == \
            theirs.encode(text, out_type="offset_mapping", return_bytes=return_bytes)


@pytest.mark.shared_data
@settings(max_examples=120, deadline=None)
@given(text=ANY_TEXT, name=st.sampled_from(MODELS), extra=st.lists(st.integers(0, 400), max_size=4))
def test_decode_output_types_match_sentencepiece(shared_data, text, name, extra):
    ours, theirs = pair(shared_data, name)
    ids = extra[:2] + theirs.encode(text) + extra[2:]  # control, unknown and byte ids among them
    pieces = theirs.id_to_piece(ids)
    for out_type in (str, bytes, "proto", "serialized_proto", "offset_mapping"):
        assert comparable(ours.decode(ids, out_type=out_type)) == comparable(theirs.decode(ids, out_type=out_type))
        assert comparable(ours.decode_pieces(pieces, return_type=out_type)) == \
            comparable(theirs.decode_pieces(pieces, return_type=out_type))
    assert ours.decode(ids, out_type="offset_mapping", return_bytes=True) == \
        theirs.decode(ids, out_type="offset_mapping", return_bytes=True)


@pytest.mark.shared_data
def test_decode_batches_and_broken_bytes_match_sentencepiece(shared_data):
    ours, theirs = pair(shared_data, "llama2/tokenizer.model")
    broken = ["▁a", "<0xE2>", "<0x82>", "b", "<0xFF>", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>", "<0xC3>"]
    batch = [[1, 2, 3], theirs.encode("héllo"), [], theirs.piece_to_id(broken)]
    for out_type in (str, bytes, "proto", "serialized_proto", "offset_mapping"):
        assert comparable(ours.decode(batch, out_type=out_type)) == comparable(theirs.decode(batch, out_type=out_type))
        assert comparable(ours.decode(broken, out_type=out_type)) == comparable(theirs.decode(broken, out_type=out_type))
    assert comparable(ours.decode_ids_as_proto(batch[1])) == comparable(theirs.decode_ids_as_proto(batch[1]))


@pytest.mark.shared_data
@pytest.mark.parametrize("name", UNIGRAM)
def test_nbest_output_types_match_sentencepiece(shared_data, name):
    ours, theirs = pair(shared_data, name)
    for text in TEXTS:
        for out_type in (bytes, "numpy"):
            assert comparable(ours.nbest_encode(text, nbest_size=3, out_type=out_type)) == \
                comparable(theirs.nbest_encode(text, nbest_size=3, out_type=out_type))
        got, want = ours.nbest_encode_as_proto(text, 3), theirs.nbest_encode_as_proto(text, 3)
        assert len(got.nbests) == len(want.nbests)
        for mine, their in zip(got.nbests, want.nbests):
            # Scores are float sums in another order: compare them to float precision, the rest exactly.
            assert mine.score == pytest.approx(their.score, rel=1e-5, abs=1e-4)
            mine.score = their.score
            assert mine.SerializeToString() == their.SerializeToString()
        assert pw_spm.NBestSentencePieceText.FromString(
            ours.nbest_encode(text, nbest_size=3, out_type="serialized_proto")).nbests[0].pieces == got.nbests[0].pieces


@pytest.mark.shared_data
def test_sampled_proto_holds_the_sampled_segmentation(shared_data):
    ours, _ = pair(shared_data, "sentencepiece_test_ja_model.model")
    text = "吾輩は猫である。 hello  world"
    for seed in range(5):
        pw_spm.set_random_generator_seed(seed)
        ids = ours.sample_encode_as_ids(text, nbest_size=-1, alpha=0.5)
        pw_spm.set_random_generator_seed(seed)
        spt = ours.sample_encode_as_proto(text, nbest_size=-1, alpha=0.5)
        assert [p.id for p in spt.pieces] == ids
        # The pieces tile the text: each starts where the one before ends, and their surfaces are it.
        assert all(a.end == b.begin for a, b in zip(spt.pieces, spt.pieces[1:]))
        assert "".join(p.surface for p in spt.pieces) == text.encode()[spt.pieces[0].begin:spt.pieces[-1].end].decode()
        assert spt.pieces[-1].end == len(text.encode())


@pytest.mark.shared_data
def test_parallel_encode_and_the_default_return_type_match_sentencepiece(shared_data):
    path = str(shared_data / "tokenizers" / "sentencepiece" / "llama2/tokenizer.model")
    text = " ".join(TEXTS) * 20
    for return_type in (int, str, bytes, "numpy", "proto"):
        ours = pw_spm.SentencePieceProcessor(model_file=path, return_type=return_type)
        theirs = spm.SentencePieceProcessor(model_file=path, return_type=return_type)
        assert comparable(ours.encode(text)) == comparable(theirs.encode(text))
        assert comparable(ours.parallel_encode(text, chunk_len=64)) == \
            comparable(theirs.parallel_encode(text, chunk_len=64))
    ours = pw_spm.SentencePieceProcessor.from_proto(open(path, "rb").read())
    assert ours.encode(text) == spm.SentencePieceProcessor(model_file=path).encode(text)


@pytest.mark.shared_data
@pytest.mark.parametrize("call", [
    lambda sp: sp.encode("a b", out_type="proto", add_bos=True),
    lambda sp: sp.encode("a b", out_type="offset_mapping", reverse=True),
    lambda sp: sp.encode("a b", out_type="serialized_proto", emit_unk_piece=True),
    lambda sp: sp.encode("a b", out_type=str, return_type=str),
    lambda sp: sp.encode("a b", out_type=int, return_bytes=True),
    lambda sp: sp.encode("a b", out_type="immutable_proto"),
    lambda sp: sp.encode("a b", out_type=float),
    lambda sp: sp.decode([5, 6], out_type=int),
    lambda sp: sp.decode([5, 6], out_type=bytes, return_bytes=True),
    lambda sp: sp.parallel_encode("a b", chunk_len=0),
    lambda sp: sp.nbest_encode("a b", nbest_size=2, out_type="offset_mapping"),
], ids=["proto+bos", "offsets+reverse", "serialized+emit_unk", "both-names", "return_bytes-with-ids",
        "immutable_proto", "float", "decode-to-int", "decode-return_bytes", "chunk_len-0", "nbest-offsets"])
def test_what_sentencepiece_refuses_is_a_config_error_naming_the_fix(shared_data, call):
    ours, theirs = pair(shared_data, "sentencepiece_test_model.model")
    with pytest.raises((RuntimeError, ValueError, TypeError)):
        call(theirs)
    with pytest.raises(ConfigError, match="Fix:"):
        call(ours)
