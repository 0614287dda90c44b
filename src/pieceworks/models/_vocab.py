"""Checks shared by every model's vocabulary (token → id)."""

from __future__ import annotations

from itertools import islice
from operator import itemgetter, lt

from ..errors import FileFormatError


#: Token ids live in int32 arrays in the kernels.
MAX_ID = 2**31 - 1


def check_vocab(vocab: dict, where: str, path: str | None = None, error=FileFormatError) -> dict[str, int]:
    """Every key a str, every id a non-negative int, no id used twice.

    >>> check_vocab({"a": 0, "b": 0}, "vocab")
    Traceback (most recent call last):
      ...
    pieceworks.errors.FileFormatError: <string>: field 'vocab': id 0 is used by both 'a' and 'b'. Fix: ...
    """
    ids = vocab.values()
    # The common case in C loops (a 150k-token vocabulary in milliseconds); the loop below names the fault.
    if (not vocab or set(map(type, vocab)) == {str} and set(map(type, ids)) == {int}
            and 0 <= min(ids) and max(ids) <= MAX_ID and len(set(ids)) == len(vocab)):
        return vocab
    seen: dict[int, str] = {}
    for token, tid in vocab.items():
        if not isinstance(token, str):
            raise error(path, f"token {token!r} is not a string", field=where,
                                  fix="vocabulary keys must be token strings")
        if isinstance(tid, bool) or not isinstance(tid, int) or tid < 0:
            raise error(path, f"token {token!r} has id {tid!r}, not a non-negative integer",
                                  field=where, fix="give every token a distinct integer id >= 0")
        if tid > MAX_ID:
            raise error(path, f"token {token!r} has id {tid}, above the largest id a kernel holds ({MAX_ID})",
                        field=where, fix="number the vocabulary from 0 without huge gaps")
        other = seen.get(tid)
        if other is not None:
            raise error(path, f"id {tid} is used by both {other!r} and {token!r}", field=where,
                                  fix="give every token a distinct id")
        seen[tid] = token
    return vocab


def ordered_by_id(vocab: dict[str, int]) -> dict[str, int]:
    """A copy of ``vocab`` in id order, as tokenizer.json lists it (a vocabulary read from one is
    in that order already: a copy, with no sort).

    >>> ordered_by_id({"b": 1, "a": 0}), ordered_by_id({"a": 0, "b": 1})
    ({'a': 0, 'b': 1}, {'a': 0, 'b': 1})
    """
    ids = list(vocab.values())
    if all(map(lt, ids, islice(ids, 1, None))):
        return dict(vocab)
    return dict(sorted(vocab.items(), key=itemgetter(1)))
