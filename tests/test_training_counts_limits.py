"""Counts that a trainer cannot sum in 64 bits get a clear error, not an OverflowError or a wrapped sum.

Every trainer adds up ``count × length`` over the table in 64-bit
integers (pair counts, char counts, likelihoods). Tables whose weights
pass 2**63 - 1 are refused up front by one check,
``counts.check_training_counts``, whatever form the table takes: a dict,
a :class:`Counts` in arrays, or a :class:`Counts` read back from a file.
"""

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pieceworks as pw
from pieceworks._kernels.count import weighted_total
from pieceworks.errors import ConfigError, InputTypeError
from pieceworks.trainers.counts import MAX_SYMBOLS, Counts, check_training_counts

TRAINERS = {
    "bpe": (pw.models.BPE, pw.trainers.BpeTrainer),
    "wordpiece": (pw.models.WordPiece, pw.trainers.WordPieceTrainer),
    "wordlevel": (pw.models.WordLevel, pw.trainers.WordLevelTrainer),
    "unigram": (pw.models.Unigram, pw.trainers.UnigramTrainer),
}

# 'b' is in all three words: 3 × 2**62 of it wraps a signed 64-bit char count.
WRAPPING = {"ab": 2**62, "abc": 2**62, "b": 2**62}


def _as(form: str, table: dict, tmp_path):
    if form == "dict":
        return table
    counts = Counts.merge(table)   # the compact (array) form
    if form == "arrays":
        return counts
    path = tmp_path / "counts.pwc"
    counts.save(str(path))
    return str(path)


@pytest.mark.parametrize("form", ["dict", "arrays", "file"])
@pytest.mark.parametrize("kind", sorted(TRAINERS))
def test_counts_past_int64_are_refused_by_every_trainer(kind, form, tmp_path):
    model, trainer = TRAINERS[kind]
    tok = pw.Tokenizer(model())
    with pytest.raises(ConfigError, match=r"more than \w+Trainer can sum.*scale the counts down"):
        tok.train_from_counts(_as(form, WRAPPING, tmp_path), trainer(vocab_size=60, show_progress=False))


@pytest.mark.parametrize("kind", sorted(TRAINERS))
def test_one_count_past_int64_is_refused(kind):
    # A counts file stores u64; 2**64 - 1 once crashed BPE's char count with OverflowError (fuzz).
    model, trainer = TRAINERS[kind]
    with pytest.raises(ConfigError):
        pw.Tokenizer(model()).train_from_counts({"a": 2**64 - 1}, trainer(vocab_size=60, show_progress=False))


@pytest.mark.parametrize("kind", sorted(TRAINERS))
def test_negative_counts_are_refused(kind):
    model, trainer = TRAINERS[kind]
    with pytest.raises(InputTypeError, match="non-negative int"):
        pw.Tokenizer(model()).train_from_counts({"ab": -1, "b": 3}, trainer(vocab_size=60, show_progress=False))


@pytest.mark.parametrize("form", ["dict", "arrays"])
def test_the_limit_itself_is_accepted(form, tmp_path):
    # A 1-char piece counted 2**63 - 1 times weighs exactly the limit; one more symbol passes it.
    check_training_counts(_as(form, {"a": MAX_SYMBOLS}, tmp_path), "BpeTrainer")
    with pytest.raises(ConfigError):
        check_training_counts(_as(form, {"a": MAX_SYMBOLS, "b": 1}, tmp_path), "BpeTrainer")


def test_large_but_summable_counts_still_train():
    # 2**40 per word is far past any corpus, but sums fine: training must go on as before.
    table = {"hug": 2**40, "pug": 2**39, "hugs": 2**38}
    tok = pw.Tokenizer(pw.models.BPE())
    tok.train_from_counts(table, pw.trainers.BpeTrainer(vocab_size=10, show_progress=False))
    assert "hug" in tok.get_vocab()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 2**64 - 1)), max_size=8),
       st.integers(0, 2**64 - 2))
def test_weighted_total_matches_exact_arithmetic(pieces, limit):
    offsets, values = array("q", [0]), array("Q")
    for length, count in pieces:
        offsets.append(offsets[-1] + length)
        values.append(count)
    exact = sum(count * max(length, 1) for length, count in pieces)
    got = weighted_total(offsets, values, limit)
    assert got == (exact if exact <= limit else limit + 1)


def test_docstring_examples_hold():
    import doctest

    from pieceworks._kernels import count
    from pieceworks.trainers import counts

    for module in (count, counts):
        assert doctest.testmod(module).failed == 0, module.__name__
