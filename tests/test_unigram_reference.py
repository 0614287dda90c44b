"""The SentencePiece kernels against their readable twins in pieceworks.reference.unigram."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from pieceworks.formats._sentencepiece_proto import ModelProto
from pieceworks.models.spm import SentencePieceModel
from pieceworks.reference import unigram as ref

ALPHABET = "ab▁éЖ"
PIECES = st.text(alphabet=ALPHABET, min_size=1, max_size=4)
# Scores exactly representable in float32 and in few bits, so sums are exact in either precision
# (the twin and the kernel then agree even on ties).
SCORES = st.integers(min_value=-40, max_value=-1).map(lambda x: x / 4)


def build(entries: dict, model_type: int, user: frozenset = frozenset()) -> SentencePieceModel:
    proto = ModelProto()
    proto.trainer_spec.model_type = model_type
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = False
    proto.normalizer_spec.remove_extra_whitespaces = False
    p = proto.pieces.add()
    p.piece, p.type = "<unk>", 2
    for piece, score in entries.items():
        p = proto.pieces.add()
        p.piece, p.score, p.type = piece, score, 4 if piece in user else 1
    return SentencePieceModel(proto)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(PIECES, SCORES, min_size=1, max_size=25), st.text(alphabet=ALPHABET + "c", max_size=20))
def test_viterbi_matches_the_twin(vocab, text):
    model = build(vocab, 1)
    assert model.encode_pieces(text) == ref.merge_unknowns(ref.viterbi(text, vocab), vocab)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(PIECES, SCORES, min_size=2, max_size=25), st.text(alphabet=ALPHABET, max_size=16),
       st.data())
def test_user_defined_pieces_match_the_twin(vocab, text, data):
    user = frozenset(data.draw(st.sets(st.sampled_from(sorted(vocab)), max_size=3)))
    model = build(vocab, 1, user)
    assert model.encode_pieces(text) == ref.merge_unknowns(ref.viterbi(text, vocab, user_defined=user), vocab)
    bpe = build(vocab, 2, user)
    assert bpe.encode_pieces(text) == ref.merge_unknowns(ref.bpe(text, vocab, frozen=user), vocab)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(PIECES, SCORES, min_size=1, max_size=25), st.text(alphabet=ALPHABET + "c", max_size=20))
def test_sentencepiece_bpe_matches_the_twin(vocab, text):
    model = build(vocab, 2)
    assert model.encode_pieces(text) == ref.merge_unknowns(ref.bpe(text, vocab), vocab)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(PIECES, SCORES, min_size=1, max_size=15), st.text(alphabet=ALPHABET, min_size=1, max_size=7))
def test_nbest_matches_all_segmentations(vocab, text):
    model = build(vocab, 1)
    everything = ref.all_segmentations(text, vocab)
    normalized, got = model.nbest(text, 8)
    want_scores = [s for _, s in everything[:8]]
    assert [s for _, s in got] == pytest.approx(want_scores, abs=1e-4)
    segmentations = {tuple(p) for p, _ in everything}
    for segs, _ in got:
        pieces = tuple(normalized[s:e].decode() for _, s, e, _ in _split_unknown_runs(segs, normalized))
        assert pieces in segmentations


def _split_unknown_runs(segs, normalized):
    """Undo the merging of unknown runs (the twin lists unknown chars one by one)."""
    for seg in segs:
        pid, start, end, flag = seg
        if flag != 1:
            yield seg
            continue
        text = normalized[start:end].decode()
        pos = start
        for ch in text:
            size = len(ch.encode())
            yield (pid, pos, pos + size, flag)
            pos += size


def test_float32_rounding_decides_ties():
    # '-' twice vs '--' once: equal in exact arithmetic, not in float32 after a long prefix.
    vocab = {"x": -3.3334579467773438, "-": -5.2315802574157715, "--": -7.894176006317139}
    model = build(vocab, 1)
    for text in ["x---", "x" * 7 + "-" * 9]:
        assert model.encode_pieces(text) == ref.viterbi(text, vocab)


# Cases hypothesis found (vocab, user-defined pieces, text).
FOUND = [
    ({"a": -0.25, "ab": -0.25}, {"a", "ab"}, "ab"),
    ({"a": -0.25, "ab": -0.25}, {"a", "ab"}, "abab"),
    ({"a": -0.25, "ab": -0.25}, {"a", "ab"}, "bab"),
    ({"a": -0.25, "bb": -0.25}, {"a", "bb"}, "bbb"),
    ({"b": -0.25, "aaa": -0.25}, set(), "aaaa"),
]


@pytest.mark.parametrize("model_type", [1, 2])
@pytest.mark.parametrize("vocab, user, text", FOUND)
def test_found_cases_against_sentencepiece(model_type, vocab, user, text):
    # With no NORMAL piece, SentencePiece's minimum score stays at FLT_MAX, so an unknown char
    # scores FLT_MAX − 10 and the Unigram path 'a' + unknown 'b' beats the user-defined 'ab'.
    # BPE takes user-defined symbols whole before merging. A run of unknown chars may spell a
    # piece ('b' + 'b' + 'b' around 'bb'). The expected pieces come from the sentencepiece
    # library, on a model built with its own protobuf.
    spm = pytest.importorskip("sentencepiece")
    from sentencepiece import sentencepiece_model_pb2 as spm_pb2

    user = frozenset(user)
    proto = spm_pb2.ModelProto()
    proto.trainer_spec.model_type = model_type
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = False
    proto.normalizer_spec.remove_extra_whitespaces = False
    p = proto.pieces.add()
    p.piece, p.type = "<unk>", 2
    for piece, score in vocab.items():
        p = proto.pieces.add()
        p.piece, p.score, p.type = piece, score, 4 if piece in user else 1
    want = spm.SentencePieceProcessor(model_proto=proto.SerializeToString()).encode(text, out_type=str)
    assert build(vocab, model_type, user).encode_pieces(text) == want
    twin = ref.viterbi(text, vocab, user_defined=user) if model_type == 1 else ref.bpe(text, vocab, frozen=user)
    assert ref.merge_unknowns(twin, vocab) == want
