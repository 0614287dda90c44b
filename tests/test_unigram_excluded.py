"""``Unigram.tokenize(text, excluded_ids=...)``: a segmentation that never uses the excluded pieces.

A tokenizer.json converted from a SentencePiece model lists control pieces
(``<s>``, ``</s>``, ``<pad>``, ...) both as special added tokens and as
Unigram pieces, so with ``split_special_tokens=True`` the Viterbi could
still read the text ``</s>`` as that piece. SentencePiece never matches
control pieces in text; with ``excluded_ids`` the model doesn't either.

The result must be the best segmentation over the remaining pieces. Two
oracles: the readable twin (``pieceworks.reference.unigram.viterbi`` with
``excluded``) and Hugging Face's own Unigram given the same vocabulary with
the excluded pieces renamed to strings no text contains (same ids, same
scores, so the same unknown score), which also covers fused unknown runs
and byte fallback. A piece of one char is never left out (it is the char's
own spelling; leaving it out would make the char unknown), so the oracles
get the excluded set without those. Default (None) stays Hugging Face's
behaviour.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import pieceworks as pw
from pieceworks.errors import InputTypeError
from pieceworks.models import Unigram
from pieceworks.reference import unigram as ref

hf = pytest.importorskip("tokenizers")

ALPHABET = "ab▁éЖ<s>"
PIECES = st.text(alphabet=ALPHABET, min_size=1, max_size=4)
# Quarter steps: sums are exact, so ties come out the same in every implementation.
SCORES = st.integers(min_value=-40, max_value=-1).map(lambda x: x / 4)
BYTES = [(f"<0x{b:02X}>", -20.0) for b in range(256)]


def renamed(vocab: list[tuple[str, float]], excluded: set[int]) -> list[tuple[str, float]]:
    """The vocabulary with each excluded piece renamed to a string no test text contains."""
    return [(f"\ue000{i}" if i in excluded else piece, score) for i, (piece, score) in enumerate(vocab)]


def multi_char(vocab, excluded: set[int]) -> set[int]:
    """The ids of ``excluded`` that the model does leave out: those of pieces longer than one char."""
    return {i for i in excluded if len(vocab[i][0]) != 1}


def tokens(model, text: str, **kwargs) -> list[tuple[int, str]]:
    """Ids and values (a model's offsets are chars here, bytes in Hugging Face)."""
    return [(t.id, t.value) for t in model.tokenize(text, **kwargs)]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(PIECES, SCORES, min_size=1, max_size=25), st.data(), st.text(alphabet=ALPHABET + "c",
                                                                                    max_size=20))
def test_the_segmentation_is_the_twins_viterbi_over_the_other_pieces(vocab, data, text):
    entries = [("<unk>", 0.0)] + sorted(vocab.items())
    drawn = data.draw(st.sets(st.integers(0, len(entries) - 1)))
    model = Unigram(entries, unk_id=0)
    got = model.tokenize(text, excluded_ids=drawn)
    excluded = multi_char(entries, drawn)
    left_out = frozenset(entries[i][0] for i in excluded)
    scores = dict(entries)
    best = ref.viterbi(text, scores, float32=False, excluded=left_out)
    want = ref.merge_unknowns(best, set(scores) - set(left_out))  # Hugging Face's fuse_unk
    assert [t.value for t in got] == want
    assert not {t.id for t in got} & (excluded - {0})
    ids = {p: i for i, (p, _) in enumerate(entries)}
    for token in got:
        if token.id != 0:
            assert ids[token.value] == token.id and token.id not in excluded


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(PIECES, SCORES), min_size=1, max_size=25, unique_by=lambda e: e[0]), st.booleans(),
       st.data(), st.text(alphabet=ALPHABET + "cZ", max_size=20))
def test_matches_hugging_face_on_the_renamed_vocabulary(entries, byte_fallback, data, text):
    vocab = [("<unk>", 0.0)] + entries + (BYTES if byte_fallback else [])
    vocab = list({p: (p, s) for p, s in vocab}.values())          # a piece may also be a byte piece
    excluded = data.draw(st.sets(st.integers(0, len(vocab) - 1), max_size=8))
    ours = Unigram(vocab, unk_id=0, byte_fallback=byte_fallback)
    theirs = hf.models.Unigram(renamed(vocab, multi_char(vocab, excluded)), 0, byte_fallback)
    assert tokens(ours, text, excluded_ids=excluded) == tokens(theirs, text)
    assert ours.exclusion_matters(excluded) == bool(multi_char(vocab, excluded))
    assert tokens(ours, text) == tokens(hf.models.Unigram(vocab, 0, byte_fallback), text)   # None: HF as is


def test_converted_models_never_read_control_text_as_control_pieces(shared_data):
    """ruT5's tokenizer.json: its specials are Unigram pieces too; excluded, plain text never yields them."""
    tok = pw.Tokenizer.from_file(str(shared_data / "tokenizers" / "sentencepiece" / "ruT5-large" / "tokenizer.json"))
    model = tok.model
    specials = frozenset(i for i, t in tok.get_added_tokens_decoder().items() if t.special)
    assert {tok.token_to_id(s) for s in ("</s>", "<pad>", "<extra_id_0>")} <= specials
    theirs = hf.models.Unigram(renamed(model.vocab, specials), model.unk_id, model.byte_fallback)
    words = ["▁</s>", "▁<pad>", "▁<extra_id_0>", "▁<s>Привет</s>", "</s></s>", "▁<unk>", "<extra_id_99>x",
             "▁Привет,▁мир!", "▁" + "".join(tok.id_to_token(i) for i in sorted(specials)[:20])]
    leaked = 0
    for word in words:
        plain = tokens(model, word)
        leaked += bool({i for i, _ in plain} & specials)
        safe = tokens(model, word, excluded_ids=specials)
        assert not {i for i, _ in safe} & (specials - {model.unk_id}), word
        assert safe == tokens(theirs, word), word
    assert leaked >= 3            # without the exclusion the Viterbi does read them (Hugging Face's behaviour)


def test_sampling_and_the_metaspace_kernel_honour_the_exclusion(shared_data):
    from pieceworks.formats.sentencepiece import model_to_tokenizer
    from pieceworks.sentencepiece import set_random_generator_seed

    tok = model_to_tokenizer(str(shared_data / "tokenizers" / "sentencepiece" / "hf_transformers_fixtures" /
                                 "spiece.model"))
    model = tok.model
    word = "▁hello</s>▁world"
    excluded = {model.token_to_id("ll"), model.token_to_id("▁hello"), model.token_to_id("▁world")}
    assert None not in excluded
    set_random_generator_seed(4)
    for alpha, nbest in ((0.3, None), (0.5, 6)):
        model.alpha, model.nbest_size = alpha, nbest
        for _ in range(50):
            assert not {t.id for t in model.tokenize(word, excluded_ids=excluded)} & excluded
    model.alpha, model.nbest_size = None, None
    # The one-call Metaspace + Unigram kernel (pieceworks.fast.unigram) takes the same mask.
    text = "hello</s> world  and </s>"
    words = ["▁hello</s>", "▁world", "▁", "▁and", "▁</s>"]         # Metaspace: prepend, split before each ▁
    core, mask = model._core, model._exclusion_mask(excluded)
    ids = core.hf_metaspace_encode(text, model._pieces, None, "▁", True, True, False, mask)[0]
    assert ids == [t.id for w in words for t in model.tokenize(w, excluded_ids=excluded)]
    plain = core.hf_metaspace_encode(text, model._pieces, None, "▁", True, True, False)[0]
    assert plain == [t.id for w in words for t in model.tokenize(w)] != ids


def test_arguments(shared_data):
    model = Unigram([("<unk>", 0.0), ("<s>", 0.0), ("<", -2.0), ("s", -2.0), (">", -2.0)], unk_id=0)
    assert [t.id for t in model.tokenize("<s>")] == [1]
    for excluded in ([1], {1}, frozenset({1}), (1, 99, -5), iter([1])):
        assert [t.id for t in model.tokenize("<s>", excluded_ids=excluded)] == [2, 3, 4]
    assert tokens(model, "<s>", excluded_ids=None) == tokens(model, "<s>") == tokens(model, "<s>", excluded_ids=())
    for bad in ("<s>", 5, [1.5], [None]):
        with pytest.raises(InputTypeError):
            model.tokenize("<s>", excluded_ids=bad)
    # The cache keeps the two kinds of result apart.
    assert [t.id for t in model.tokenize("<s>")] == [1]
    # A one-char piece is its char's own spelling: excluding it changes nothing, and no text is lost.
    assert [t.id for t in model.tokenize("<s>", excluded_ids={1, 3})] == [2, 3, 4]
    assert not model.exclusion_matters({2, 3, 4, 99}) and model.exclusion_matters({1})
