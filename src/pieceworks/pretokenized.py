"""The pre-tokenized string: the input cut into splits, each an aligned string.

Pre-tokenizers cut splits further with :meth:`PreTokenizedString.split`;
the model then turns each split into tokens with
:meth:`PreTokenizedString.tokenize`. A split that already holds tokens (an
added token matched in the text) is never cut again.

>>> from pieceworks.alignment import NormalizedString
>>> p = PreTokenizedString("hello big world")
>>> p.split(lambda i, s: s.split(" ", "removed"))
>>> p.get_splits()
[('hello', (0, 5)), ('big', (6, 9)), ('world', (10, 15))]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from .alignment import NormalizedString

__all__ = ["Token", "Split", "PreTokenizedString"]


@dataclass(slots=True)
class Token:
    """One token from a model: its id, its text, and its span in the split."""

    id: int
    value: str
    offsets: tuple[int, int]


class Split:
    """A piece of the input: aligned text, and tokens once the model has run."""

    __slots__ = ("normalized", "tokens")

    def __init__(self, normalized: NormalizedString, tokens: list[Token] | None = None):
        self.normalized = normalized
        self.tokens = tokens

    def __repr__(self) -> str:
        return f"Split({self.normalized.normalized!r}, tokens={self.tokens!r})"


class PreTokenizedString:
    """The input text as a list of :class:`Split`."""

    __slots__ = ("original", "splits")

    def __init__(self, text: "str | NormalizedString | list[Split]", original: str | None = None):
        if isinstance(text, list):
            self.splits = text
            self.original = original if original is not None else ""
        elif isinstance(text, NormalizedString):
            self.original = text.original
            self.splits = [Split(text)]
        else:
            self.original = text
            self.splits = [Split(NormalizedString(text))]

    def split(self, fn: Callable[[int, NormalizedString], Iterable[NormalizedString]]) -> None:
        """Replace each untokenized split by ``fn(index, split)``; empty pieces are dropped.

        ``fn`` returns NormalizedStrings, or Splits that already carry tokens.
        """
        new: list[Split] = []
        for i, split in enumerate(self.splits):
            if split.tokens is not None:
                new.append(split)
                continue
            for piece in fn(i, split.normalized):
                # fn may return ready Splits (added tokens carry their token).
                piece = piece if isinstance(piece, Split) else Split(piece)
                if len(piece.normalized.normalized):
                    new.append(piece)
        self.splits = new

    def normalize(self, fn: Callable[[NormalizedString], None]) -> None:
        """Apply ``fn`` in place to every untokenized split."""
        for split in self.splits:
            if split.tokens is None:
                fn(split.normalized)

    def tokenize(self, fn: Callable[[str], list[Token]]) -> None:
        """Give every untokenized split its tokens, ``fn(normalized_text)``."""
        for split in self.splits:
            if split.tokens is None:
                split.tokens = fn(split.normalized.normalized)

    def get_splits(self, offset_referential: str = "original") -> list[tuple[str, tuple[int, int]]]:
        """``(text, offsets)`` per split, offsets into the original input.

        With ``offset_referential="normalized"`` the offsets count chars of
        the concatenated normalized splits instead (as Hugging Face does).
        """
        out = []
        pos = 0
        for split in self.splits:
            ns = split.normalized
            if offset_referential == "normalized":
                out.append((ns.normalized, (pos, pos + len(ns.normalized))))
                pos += len(ns.normalized)
            else:
                out.append((ns.normalized, ns.offsets_original()))
        return out

    def __repr__(self) -> str:
        return f"PreTokenizedString({self.splits!r})"
