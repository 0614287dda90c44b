"""Counting: texts → ``{piece: count}``, the only thing trainers consume.

The tokenizer's normalizer and pre-tokenizer run on every text; each piece
they produce is counted. Counts are plain dicts, so tables from different
shards merge by addition (:func:`merge_counts`), in any order.

>>> from pieceworks.pre_tokenizers import WhitespaceSplit
>>> count_words(["a b a", "b c"], pre_tokenizer=WhitespaceSplit())
{'a': 2, 'b': 2, 'c': 1}
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..alignment import NormalizedString
from ..pretokenized import PreTokenizedString

__all__ = ["count_words", "merge_counts", "pieces_of"]


def pieces_of(text: str, normalizer=None, pre_tokenizer=None) -> list[str]:
    """The normalized pieces a tokenizer's first two stages make of ``text``."""
    ns = NormalizedString(text)
    if normalizer is not None:
        normalizer.normalize(ns)
    if pre_tokenizer is None:
        return [ns.normalized] if ns.normalized else []
    pretok = PreTokenizedString(ns)
    pre_tokenizer.pre_tokenize(pretok)
    return [split.normalized.normalized for split in pretok.splits]


def count_words(texts: Iterable[str], normalizer=None, pre_tokenizer=None, progress=None) -> dict[str, int]:
    """Count the pieces of every text; ``progress`` (if given) is called with each text's length."""
    counts: dict[str, int] = {}
    get = counts.get
    for text in texts:
        for piece in pieces_of(text, normalizer, pre_tokenizer):
            counts[piece] = get(piece, 0) + 1
        if progress is not None:
            progress(len(text))
    return counts


def merge_counts(*tables: Mapping[str, int]) -> dict[str, int]:
    """Add count tables together (associative and commutative).

    >>> merge_counts({"a": 1}, {"a": 2, "b": 1})
    {'a': 3, 'b': 1}
    """
    out: dict[str, int] = {}
    for table in tables:
        for piece, n in table.items():
            out[piece] = out.get(piece, 0) + n
    return out
