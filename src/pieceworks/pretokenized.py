"""The pre-tokenized string: the input cut into splits, each an aligned string.

Pre-tokenizers cut splits further with :meth:`PreTokenizedString.split`;
the model then turns each split into tokens with
:meth:`PreTokenizedString.tokenize`. A split that already holds tokens (an
added token matched in the text) is never cut again.

>>> from pieceworks.alignment import NormalizedString
>>> p = PreTokenizedString("hello big world")
>>> p.split(lambda i, s: s.split(" ", "removed"))
>>> p.get_splits()
[('hello', (0, 5), None), ('big', (6, 9), None), ('world', (10, 15), None)]
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Callable, Iterable

from ._kernels.model_token import Token
from .alignment import NormalizedString
from .errors import ConfigError, InputTypeError

__all__ = ["Token", "Split", "PreTokenizedString", "in_byte_offsets"]


class Split:
    """A piece of the input: aligned text, and tokens once the model has run.

    ``byte_offsets``: the tokens' offsets count UTF-8 bytes of the split's
    normalized text (tokens from :meth:`PreTokenizedString.tokenize`, as
    Hugging Face's are), not chars.
    """

    __slots__ = ("normalized", "tokens", "byte_offsets")

    def __init__(self, normalized: NormalizedString, tokens: list[Token] | None = None):
        self.normalized = normalized
        self.tokens = tokens
        self.byte_offsets = False

    def __repr__(self) -> str:
        return f"Split({self.normalized.normalized!r}, tokens={self.tokens!r})"


class PreTokenizedString:
    """The input text as a list of :class:`Split`."""

    __slots__ = ("original", "splits")

    def __init__(self, sequence: "str | NormalizedString | list[Split]", original: str | None = None):
        # ``sequence`` is Hugging Face's keyword.
        if isinstance(sequence, list):
            self.splits = sequence
            self.original = original if original is not None else ""
        elif isinstance(sequence, NormalizedString):
            self.original = sequence.original
            self.splits = [Split(sequence)]
        else:
            self.original = sequence
            self.splits = [Split(NormalizedString(sequence))]

    def split(self, func: Callable[[int, NormalizedString], Iterable[NormalizedString]]) -> None:
        """Replace each untokenized split by ``func(index, split)``; empty pieces are dropped.

        ``func`` returns NormalizedStrings, or Splits that already carry tokens.
        """
        new: list[Split] = []
        for i, split in enumerate(self.splits):
            if split.tokens is not None:
                new.append(split)
                continue
            for piece in func(i, split.normalized):
                # func may return ready Splits (added tokens carry their token).
                if not isinstance(piece, Split):
                    if not isinstance(piece, NormalizedString):
                        raise InputTypeError(f"PreTokenizedString.split: the function gave a "
                                             f"{type(piece).__name__} ({piece!r:.40}), not a NormalizedString",
                                             fix="return slices of the NormalizedString it is given, "
                                                 "e.g. [normalized[0:3], normalized[3:]]")
                    piece = Split(piece)
                if len(piece.normalized.normalized):
                    new.append(piece)
        self.splits = new

    def normalize(self, func: Callable[[NormalizedString], None]) -> None:
        """Apply ``func`` in place to every untokenized split."""
        for split in self.splits:
            if split.tokens is None:
                func(split.normalized)

    def tokenize(self, func: Callable[[str], list[Token]]) -> None:
        """Give every untokenized split its tokens, ``func(normalized_text)``, whose offsets are UTF-8
        byte offsets in that text, as Hugging Face's are (a model's ``tokenize`` gives such tokens).

        >>> p = PreTokenizedString("üb"); p.tokenize(lambda s: [Token(7, s, (0, len(s.encode())))])
        >>> p.to_encoding().offsets
        [(0, 2)]
        """
        for split in self.splits:
            if split.tokens is None:
                text = split.normalized.normalized
                split.tokens = _checked_tokens(func(text), _utf8_size(text), "bytes")
                split.byte_offsets = True

    def tokenize_chars(self, fn: Callable[[str], list[Token]]) -> None:
        """:meth:`tokenize` with ``fn``'s offsets in chars (a model's ``tokenize_chars``: the pipeline's way)."""
        for split in self.splits:
            if split.tokens is None:
                split.tokens = fn(split.normalized.normalized)

    def get_splits(self, offset_referential: str = "original",
                   offset_type: str = "char") -> list[tuple[str, tuple[int, int], list[Token] | None]]:
        """``(text, offsets, tokens)`` per split, as Hugging Face's: offsets into the original input,
        tokens None until :meth:`tokenize` ran.

        ``offset_referential="normalized"``: offsets into the concatenated
        normalized splits instead. ``offset_type="byte"``: in UTF-8 bytes.
        The members of :class:`~pieceworks.OffsetReferential` and
        :class:`~pieceworks.OffsetType` are taken too (Hugging Face takes only the strs).

        >>> PreTokenizedString("añb").get_splits("original", "byte")
        [('añb', (0, 4), None)]
        """
        offset_referential = getattr(offset_referential, "value", offset_referential)   # (an OffsetReferential)
        offset_type = getattr(offset_type, "value", offset_type)
        if offset_referential not in ("original", "normalized"):
            raise ConfigError(f"unknown offset_referential {offset_referential!r}", fix='use "original" or "normalized"')
        if offset_type not in ("char", "byte"):
            raise ConfigError(f"unknown offset_type {offset_type!r}", fix='use "char" or "byte"')
        out = []
        pos = 0
        bytes_at = _byte_starts(self.original) if offset_type == "byte" and offset_referential == "original" else None
        for split in self.splits:
            ns = split.normalized
            if offset_referential == "normalized":
                size = len(ns.normalized) if offset_type == "char" else _utf8_size(ns.normalized)
                span = (pos, pos + size)
                pos += size
            else:
                span = ns.offsets_original()
                if bytes_at is not None:
                    span = (bytes_at[span[0]], bytes_at[span[1]])
            out.append((ns.normalized, span, split.tokens))
        return out

    def to_encoding(self, type_id: int = 0, word_idx: int | None = None):
        """The :class:`~pieceworks.encoding.Encoding` of the tokens of every split (each split a word,
        or all of them word ``word_idx``), offsets into the original input, as Hugging Face's.

        >>> p = PreTokenizedString("ab cd"); p.split(lambda i, s: s.split(" ", "removed"))
        >>> p.tokenize(lambda s: [Token(len(s), s, (0, len(s)))])
        >>> e = p.to_encoding(type_id=1); e.ids, e.offsets, e.word_ids, e.type_ids
        ([2, 2], [(0, 2), (3, 5)], [0, 1], [1, 1])
        """
        from .encoding import Encoding      # (encoding builds on this module)

        ids, tokens, offsets, words = [], [], [], []
        for index, split in enumerate(self.splits):
            if split.tokens is None:
                raise ConfigError(f"split {index} ({split.normalized.normalized!r:.40}) has no tokens yet",
                                  fix="call tokenize() before to_encoding()")
            ns = split.normalized
            word = index if word_idx is None else word_idx
            shift = ns.original_shift
            chars_at = _char_of_byte(ns.normalized) if split.byte_offsets and not ns.normalized.isascii() else None
            for tok in split.tokens:
                s, e = tok.offsets
                if chars_at is not None:
                    s, e = chars_at(s, e)
                if not ns.is_identity:
                    span = ns.original_span(s, e)
                    if span is not None:
                        s, e = span
                ids.append(tok.id)
                tokens.append(tok.value)
                offsets.append((s + shift, e + shift))
                words.append(word)
        n = len(ids)
        return Encoding(ids, [type_id] * n, tokens, words, offsets, [0] * n, [1] * n, [], {})

    def __repr__(self) -> str:
        return f"PreTokenizedString({self.splits!r})"


def in_byte_offsets(tokens: list[Token], text: str) -> list[Token]:
    """``tokens`` with their char offsets in ``text`` turned into UTF-8 byte offsets.

    >>> in_byte_offsets([Token(0, "ü", (0, 1)), Token(1, "a", (1, 2))], "üa")
    [Token(id=0, value='ü', offsets=(0, 2)), Token(id=1, value='a', offsets=(2, 3))]
    """
    at = _byte_starts(text)
    return [Token(t.id, t.value, (at[t.offsets[0]], at[t.offsets[1]])) for t in tokens]


def _utf8_size(ch_or_text: str) -> int:
    return len(ch_or_text.encode("utf-8", "surrogatepass"))


def _byte_starts(text: str) -> list[int]:
    """Where each char of ``text`` starts in its UTF-8 form, and its length last.

    >>> _byte_starts("aü€")
    [0, 1, 3, 6]
    """
    out = [0]
    pos = 0
    for ch in text:
        cp = ord(ch)
        pos += 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
        out.append(pos)
    return out


def _char_of_byte(text: str) -> Callable[[int, int], tuple[int, int]]:
    """A function from a byte span of ``text`` to the char span that covers it.

    >>> _char_of_byte("aü")(1, 3), _char_of_byte("aü")(2, 3)
    ((1, 2), (1, 2))
    """
    starts = _byte_starts(text)

    def chars(start: int, end: int) -> tuple[int, int]:
        return bisect_right(starts, start) - 1, bisect_left(starts, end)

    return chars


def _checked_tokens(tokens, size: int, unit: str) -> list[Token]:
    """``tokens`` if it is a list of Token whose offsets lie within ``size`` ``unit``, else an error."""
    if not isinstance(tokens, list):
        raise InputTypeError(f"PreTokenizedString.tokenize: the function gave {type(tokens).__name__}, not a list "
                             f"of Token", fix="return a list of pieceworks.Token(id, value, (start, end))")
    for k, tok in enumerate(tokens):
        if not isinstance(tok, Token):
            raise InputTypeError(f"PreTokenizedString.tokenize: item {k} is {tok!r:.40}, not a Token",
                                 fix="return a list of pieceworks.Token(id, value, (start, end))")
        start, end = tok.offsets
        if not 0 <= start <= end <= size:
            raise ConfigError(f"PreTokenizedString.tokenize: token {k} ({tok.value!r:.20}) has offsets "
                              f"{tok.offsets}, outside the split's {size} {unit}",
                              fix=f"give offsets in UTF-8 {unit} within the text the function is given")
    return tokens
