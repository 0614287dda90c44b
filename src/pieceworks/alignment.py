"""The aligned string: normalized text that remembers where each char came from.

A :class:`NormalizedString` holds the original text, the normalized text and,
for every normalized character, the span ``(start, end)`` of original
characters it came from. Every normalizer edits through one function,
:meth:`NormalizedString.transform_range`, which takes ``(char, change)``
pairs, so offsets stay right whatever the edit:

- ``change == 0``: the char replaces the current one (keeps its alignment);
- ``change == 1``: the char is new (shares the previous char's alignment);
- ``change == -n``: the char replaces the current one and the ``n`` chars
  after it are removed.

>>> s = NormalizedString("ﬁne")
>>> s.transform([("f", 0), ("i", 1), ("n", 0), ("e", 0)])
>>> s.normalized, s.alignments()
('fine', [(0, 1), (0, 1), (1, 2), (2, 3)])
>>> s.original_span(0, 2)      # "fi" came from "ﬁ"
(0, 1)

The semantics (and the corner cases: an insertion at position 0 aligns to
``(0, 0)``; an empty normalized range maps to the same range) follow
Hugging Face ``tokenizers``' NormalizedString, so offsets agree with it.

Offsets are in characters (code points) of the original Python ``str``.
Until the first edit the alignment is the identity and is not stored at all,
which keeps the common no-normalizer path free.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from ._regex import Regex
from ._unicode_forms import normalize_aligned
from .errors import ConfigError, InputTypeError

__all__ = ["NormalizedString", "SplitDelimiterBehavior", "find_matches", "split_ranges"]

Span = tuple[int, int]
# A pattern is a literal string, a pieceworks Regex (or a compiled `regex`/`re`
# pattern: anything with finditer), or a predicate on one character (each
# matching char is its own match).
Pattern = "str | Regex | regex.Pattern | Callable[[str], bool]"

BEHAVIORS = ("removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous")


class SplitDelimiterBehavior:
    """What a split does with the delimiter (names as in tokenizer.json, lower-cased).

    With ``-`` on ``the-final--countdown``:
    removed → the, final, countdown; isolated → the, -, final, -, -, countdown;
    merged_with_previous → the-, final-, -, countdown;
    merged_with_next → the, -final, -, -countdown;
    contiguous → the, -, final, --, countdown.
    """

    REMOVED = "removed"
    ISOLATED = "isolated"
    MERGED_WITH_PREVIOUS = "merged_with_previous"
    MERGED_WITH_NEXT = "merged_with_next"
    CONTIGUOUS = "contiguous"

    @staticmethod
    def parse(value: str) -> str:
        """Accept ``"merged_with_next"`` or tokenizer.json's ``"MergedWithNext"``.

        >>> SplitDelimiterBehavior.parse("MergedWithNext")
        'merged_with_next'
        """
        if not isinstance(value, str):
            raise ConfigError(f"split behavior must be a string, got {type(value).__name__}",
                              fix=f"use one of {', '.join(BEHAVIORS)}")
        key = value.lower().replace("_", "")
        for name in BEHAVIORS:
            if name.replace("_", "") == key:
                return name
        raise ConfigError(f"unknown split behavior {value!r}", fix=f"use one of {', '.join(BEHAVIORS)}")

    @staticmethod
    def to_json(name: str) -> str:
        """``"merged_with_next"`` → ``"MergedWithNext"`` (tokenizer.json's spelling)."""
        return "".join(part.capitalize() for part in name.split("_"))


def find_matches(pattern, text: str) -> list[tuple[Span, bool]]:
    """Cut ``text`` into consecutive spans, each flagged as a match or not.

    >>> find_matches("-", "a-b")
    [((0, 1), False), ((1, 2), True), ((2, 3), False)]
    >>> find_matches(str.isdigit, "a12")
    [((0, 1), False), ((1, 2), True), ((2, 3), True)]
    """
    if not text:
        return [((0, 0), False)]
    if callable(pattern) and not hasattr(pattern, "finditer"):
        return _find_char_matches(pattern, text)
    if isinstance(pattern, str):
        if not pattern:
            return [((0, len(text)), False)]
        return _find_literal_matches(pattern, text)
    return _find_regex_matches(pattern, text)


def _find_char_matches(predicate: Callable[[str], bool], text: str) -> list[tuple[Span, bool]]:
    out: list[tuple[Span, bool]] = []
    last = 0
    for i, ch in enumerate(text):
        if predicate(ch):
            if last < i:
                out.append(((last, i), False))
            out.append(((i, i + 1), True))
            last = i + 1
    if last < len(text):
        out.append(((last, len(text)), False))
    return out


def _find_literal_matches(literal: str, text: str) -> list[tuple[Span, bool]]:
    out: list[tuple[Span, bool]] = []
    prev = 0
    start = text.find(literal)
    while start != -1:
        if prev != start:
            out.append(((prev, start), False))
        end = start + len(literal)
        out.append(((start, end), True))
        prev = end
        start = text.find(literal, end)
    if prev != len(text):
        out.append(((prev, len(text)), False))
    return out


def _find_regex_matches(pattern, text: str) -> list[tuple[Span, bool]]:
    """Matches of ``pattern`` (a :class:`~pieceworks.Regex`, or anything with ``finditer``) and the text
    between them. Empty matches count (Split cuts at them, Replace inserts there); which ones exist is
    the pattern's business: a Regex follows Oniguruma's rule (none right after a match).

    >>> _find_regex_matches(Regex("a*"), "baac")
    [((0, 0), True), ((0, 1), False), ((1, 3), True), ((3, 4), False), ((4, 4), True)]
    """
    out: list[tuple[Span, bool]] = []
    prev = 0
    spans = pattern.spans(text) if isinstance(pattern, Regex) else (m.span() for m in pattern.finditer(text))
    for start, end in spans:
        if prev != start:
            out.append(((prev, start), False))
        out.append(((start, end), True))
        prev = end
    if prev != len(text):
        out.append(((prev, len(text)), False))
    return out


def split_ranges(matches: Sequence[tuple[Span, bool]], behavior: str) -> list[Span]:
    """Turn :func:`find_matches` output into the spans to keep, per ``behavior``.

    >>> m = find_matches("-", "the-final--countdown")
    >>> split_ranges(m, "merged_with_next")
    [(0, 3), (3, 9), (9, 10), (10, 20)]
    >>> split_ranges(m, "contiguous")
    [(0, 3), (3, 4), (4, 9), (9, 11), (11, 20)]
    """
    if behavior == "isolated":
        return [span for span, _ in matches]
    if behavior == "removed":
        return [span for span, is_match in matches if not is_match]
    acc: list[list[int]] = []
    previous_match = False
    if behavior == "contiguous":
        for (start, end), is_match in matches:
            if is_match == previous_match and acc:
                acc[-1][1] = end
            else:
                acc.append([start, end])
            previous_match = is_match
    elif behavior == "merged_with_previous":
        for (start, end), is_match in matches:
            if is_match and not previous_match and acc:
                acc[-1][1] = end
            else:
                acc.append([start, end])
            previous_match = is_match
    elif behavior == "merged_with_next":
        for (start, end), is_match in reversed(matches):
            if is_match and not previous_match and acc:
                acc[-1][0] = start
            else:
                acc.append([start, end])
            previous_match = is_match
        acc.reverse()
    else:
        raise ConfigError(f"unknown split behavior {behavior!r}", fix=f"use one of {', '.join(BEHAVIORS)}")
    return [(s, e) for s, e in acc]


class NormalizedString:
    """Original text, normalized text, and the span of each normalized char.

    ``original_shift`` is where :attr:`original` starts in the full input,
    so a slice still reports offsets into the whole text.
    """

    __slots__ = ("original", "normalized", "original_shift", "_align")

    def __init__(self, sequence: str, normalized: str | None = None,
                 alignments: list[Span] | None = None, original_shift: int = 0):
        # ``sequence`` (the original text) is Hugging Face's keyword.
        self.original = sequence
        self.normalized = sequence if normalized is None else normalized
        self.original_shift = original_shift
        # None means identity: normalized == original and char i ↔ (i, i+1).
        self._align = alignments
        if alignments is None and normalized is not None and normalized != sequence:
            raise ConfigError("alignments are required when normalized differs from original")

    # -- reading -------------------------------------------------------
    def __len__(self) -> int:
        return len(self.normalized)

    def __repr__(self) -> str:
        return (f"NormalizedString(original={self.original!r}, normalized={self.normalized!r}, "
                f"shift={self.original_shift})")

    def get(self) -> str:
        """The normalized text (Hugging Face's name)."""
        return self.normalized

    @property
    def is_identity(self) -> bool:
        """True while no edit has been made (alignment not materialized)."""
        return self._align is None

    def alignments(self) -> list[Span]:
        """Per normalized char, its ``(start, end)`` in :attr:`original`."""
        if self._align is None:
            self._align = [(i, i + 1) for i in range(len(self.normalized))]
        return self._align

    def original_span(self, start: int, end: int) -> Span | None:
        """Map a normalized ``[start, end)`` to ``[start, end)`` in :attr:`original`.

        An empty range maps to itself (as in Hugging Face); a range past the
        end gives None.

        >>> NormalizedString("abc").original_span(1, 3)
        (1, 3)
        """
        if start == end:
            return (start, end)
        if start > end:
            return None
        if self._align is None:
            if end > len(self.normalized):
                return None
            return (start, end)
        if not self.normalized and (start, end) == (0, 0):
            return (0, len(self.original))
        if end > len(self._align):
            return None
        return (self._align[start][0], self._align[end - 1][1])

    def offsets_in_input(self, start: int, end: int) -> Span | None:
        """Like :meth:`original_span` but in the coordinates of the whole input."""
        span = self.original_span(start, end)
        if span is None:
            return None
        return (span[0] + self.original_shift, span[1] + self.original_shift)

    def offsets_original(self) -> Span:
        """Where this string's original text sits in the whole input."""
        return (self.original_shift, self.original_shift + len(self.original))

    # -- slicing and splitting ----------------------------------------
    def slice(self, range, end: int | None = None) -> "NormalizedString | None":  # noqa: A002 (HF's keyword)
        """The part of this string whose normalized chars are ``[start, end)``.

        With one argument, Hugging Face's ``slice(range)``: ``range`` is an
        int, a ``(start, end)`` pair or a ``slice``, as :meth:`__getitem__`
        takes it, and the answer may be None. With two, ``range`` is the start.

        >>> s = NormalizedString("hello world")
        >>> w = s.slice(6, 11)
        >>> w.normalized, w.offsets_original()
        ('world', (6, 11))
        >>> s.slice((6, 100)).normalized, s.slice(slice(-5, None)).normalized
        ('world', 'world')
        """
        if end is None:
            return self[range]
        start = range
        if self._align is None:
            return NormalizedString(self.original[start:end], None, None, self.original_shift + start)
        span = self.original_span(start, end)
        if span is None:
            raise ConfigError(f"slice [{start}, {end}) is outside a string of length {len(self)}")
        o_start, o_end = span
        if start == end:
            # Hugging Face maps an empty normalized range to the same original range.
            return NormalizedString(self.original[o_start:o_end], "", [], self.original_shift + o_start)
        aligned = [(s - o_start, e - o_start) for s, e in self._align[start:end]]
        return NormalizedString(self.original[o_start:o_end], self.normalized[start:end], aligned,
                                self.original_shift + o_start)

    def split(self, pattern, behavior: str) -> list["NormalizedString"]:
        """Split on ``pattern`` (literal, compiled regex, or char predicate).

        >>> [p.normalized for p in NormalizedString("the-final--countdown").split("-", "removed")]
        ['the', 'final', 'countdown']
        """
        behavior = SplitDelimiterBehavior.parse(behavior)
        spans = split_ranges(find_matches(pattern, self.normalized), behavior)
        return [self.slice(s, e) for s, e in spans]

    def narrowed(self) -> "NormalizedString":
        """This string sliced to its whole normalized text, as Hugging Face passes a normalized input on:
        its original is then only what those chars came from (a normalizer that removed the first or
        last chars shrinks it), so ``offsets_original`` starts where its first char came from.

        >>> s = NormalizedString("xab"); s.filter(lambda c: c != "x"); s.narrowed().offsets_original()
        (1, 3)
        """
        return self if self._align is None or not self.normalized else self.slice(0, len(self.normalized))

    def split_spans(self, spans: Iterable[Span]) -> list["NormalizedString"]:
        """Slice at precomputed normalized spans (what the Cython scanners return)."""
        return [self.slice(s, e) for s, e in spans]

    # -- Hugging Face's Python methods (what custom components call) -----
    def __str__(self) -> str:
        return self.normalized

    def __getitem__(self, where) -> "NormalizedString | None":
        """The part of the normalized text at ``where``, as Hugging Face's ``NormalizedString[...]``.

        ``where`` is an int (negative counts from the end), a ``(start,
        end)`` pair of non-negative ints, or a slice (its step is ignored).
        As in Hugging Face, a start at or past the end gives None (except the
        empty range at 0), and an end before the start or past the end
        means the end of the text.

        >>> s = NormalizedString("hello")
        >>> s[1].normalized, s[-1].normalized, s[(3, 1)].normalized, s[1:3].normalized, s[5]
        ('e', 'o', 'lo', 'el', None)
        """
        n = len(self.normalized)
        if isinstance(where, slice):
            start, end, _ = where.indices(n)
        elif isinstance(where, int) and not isinstance(where, bool):
            if where < -n:
                raise ConfigError(f"index {where} is out of range for a string of {n} chars",
                                  fix=f"use an index from {-n} to {n - 1}")
            start = n + where if where < 0 else where
            end = start + 1
        elif (isinstance(where, tuple) and len(where) == 2
              and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in where)):
            start, end = where
        else:
            raise InputTypeError(f"a NormalizedString is indexed by an int, a (start, end) pair of "
                                 f"non-negative ints or a slice, not {where!r}", fix="e.g. s[2], s[(0, 3)] or s[0:3]")
        if (start, end) != (0, 0):
            if start >= n:
                return None
            if end < start or end > n:
                end = n
        return self.slice(start, end)

    def nfd(self) -> None:
        """Canonical decomposition in place (the NFD normalizer)."""
        normalize_aligned(self, "NFD")

    def nfkd(self) -> None:
        """Compatibility decomposition in place (the NFKD normalizer)."""
        normalize_aligned(self, "NFKD")

    def nfc(self) -> None:
        """Canonical composition in place (the NFC normalizer)."""
        normalize_aligned(self, "NFC")

    def nfkc(self) -> None:
        """Compatibility composition in place (the NFKC normalizer)."""
        normalize_aligned(self, "NFKC")

    def lowercase(self) -> None:
        """Lowercase in place (the Lowercase normalizer: Rust's ``char::to_lowercase``)."""
        from .normalizers import lowercase_aligned     # (normalizers imports this module)

        lowercase_aligned(self)

    def uppercase(self) -> None:
        """Uppercase in place, each char on its own (Rust's ``char::to_uppercase``).

        >>> s = NormalizedString("Straße"); s.uppercase(); s.normalized, s.original_span(4, 6)
        ('STRASSE', (4, 5))
        """
        from .normalizers import uppercase_aligned

        uppercase_aligned(self)

    def lstrip(self) -> None:
        """Remove leading whitespace."""
        self.strip_whitespace(True, False)

    def rstrip(self) -> None:
        """Remove trailing whitespace."""
        self.strip_whitespace(False, True)

    def strip(self) -> None:
        """Remove leading and trailing whitespace."""
        self.strip_whitespace(True, True)

    def clear(self) -> None:
        """Remove every normalized char (the original stays).

        >>> s = NormalizedString("abc"); s.clear(); s.normalized, s.alignments(), s.original
        ('', [], 'abc')
        """
        n = len(self.normalized)
        self.transform_range(0, n, [], n)

    def map(self, func: Callable[[str], str]) -> None:
        """Replace each char by the first char of ``func(char)``, as Hugging Face's ``map``.

        >>> s = NormalizedString("abc"); s.map(str.upper); s.normalized
        'ABC'
        """
        def first_char(ch: str) -> str:
            out = func(ch)
            if not isinstance(out, str) or not out:
                raise InputTypeError(f"NormalizedString.map: the function gave {out!r} for {ch!r}, not a char",
                                     fix="return a one-char str for each char (use filter() to remove chars)")
            return out[0]

        self.map_chars(first_char)

    def for_each(self, func: Callable[[str], object]) -> None:
        """Call ``func`` on each normalized char; nothing changes."""
        for ch in self.normalized:
            func(ch)

    # -- the one edit path --------------------------------------------
    def transform(self, dest: Iterable[tuple[str, int]], initial_offset: int = 0) -> None:
        """Replace the whole normalized text; see the module docstring for ``change``."""
        self.transform_range(0, len(self.normalized), dest, initial_offset)

    def transform_range(self, start: int, end: int, dest: Iterable[tuple[str, int]],
                        initial_offset: int = 0) -> None:
        """Replace normalized chars ``[start, end)`` by ``dest``'s chars.

        ``initial_offset`` counts the chars removed at the very start of the
        range (before the first char of ``dest``).
        """
        align = self.alignments()
        new_chars: list[str] = []
        new_align: list[Span] = []
        idx = start + initial_offset
        for ch, change in dest:
            if change > 0:
                a = align[idx - 1] if idx >= 1 else (0, 0)
            else:
                a = align[idx]
                idx += 1
                if change < 0:
                    idx -= change
            new_chars.append(ch)
            new_align.append(a)
        self._align = align[:start] + new_align + align[end:]
        self.normalized = self.normalized[:start] + "".join(new_chars) + self.normalized[end:]

    # -- the edits normalizers share ----------------------------------
    def map_chars(self, fn: Callable[[str], str]) -> None:
        """Replace each char by ``fn(char)``: one or more chars, never none.

        The first char of a replacement keeps the alignment; extra chars are
        insertions (Hugging Face's lowercase/uppercase). Use :meth:`filter`
        to remove chars.

        >>> s = NormalizedString("Straße")
        >>> s.map_chars(str.upper); s.normalized
        'STRASSE'
        """
        text = self.normalized
        dest: list[tuple[str, int]] = []
        changed = False
        for ch in text:
            out = fn(ch)
            if out != ch:
                changed = True
                if not out:
                    raise ConfigError("map_chars replacement must not be empty", fix="use filter() to remove chars")
            dest.append((out[0], 0))
            dest.extend((c, 1) for c in out[1:])
        if changed:
            self.transform(dest, 0)

    def filter(self, func: Callable[[str], bool]) -> None:
        """Drop every char for which ``func`` is false (Hugging Face's ``filter``).

        >>> s = NormalizedString("a\\u0301b"); s.filter(lambda c: c != "\\u0301")
        >>> s.normalized, s.alignments()
        ('ab', [(0, 1), (2, 3)])
        """
        text = self.normalized
        if all(func(c) for c in text):
            return
        rev: list[tuple[str, int]] = []
        removed = 0
        for ch in reversed(text):
            if func(ch):
                rev.append((ch, -removed))
                removed = 0
            else:
                removed += 1
        rev.reverse()
        self.transform(rev, removed)

    def prepend(self, s: str) -> None:
        """Put ``s`` in front; its chars align with the first char (no-op when empty).

        >>> n = NormalizedString("hi"); n.prepend("▁"); n.normalized, n.alignments()
        ('▁hi', [(0, 1), (0, 1), (1, 2)])
        """
        if not self.normalized or not s:
            return
        first = self.normalized[0]
        dest = [(c, 0 if i == 0 else 1) for i, c in enumerate(s)] + [(first, 1)]
        self.transform_range(0, 1, dest, 0)

    def append(self, s: str) -> None:
        """Put ``s`` at the end; its chars align with the last char.

        On an empty string the new chars align to ``(0, 0)`` (as Hugging
        Face's ``NormalizedString.append`` does).
        """
        if not s:
            return
        if not self.normalized:
            self.transform_range(0, 0, [(c, 1) for c in s], 0)
            return
        last = len(self.normalized) - 1
        dest = [(self.normalized[last], 0)] + [(c, 1) for c in s]
        self.transform_range(last, last + 1, dest, 0)

    def strip_whitespace(self, left: bool, right: bool) -> None:
        """Remove leading and/or trailing whitespace (``str.isspace`` semantics, as Rust's)."""
        text = self.normalized
        n = len(text)
        lead = 0
        if left:
            while lead < n and is_whitespace(text[lead]):
                lead += 1
        trail = 0
        if right:
            while trail < n - lead and is_whitespace(text[n - 1 - trail]):
                trail += 1
        if lead == 0 and trail == 0:
            return
        dest: list[tuple[str, int]] = []
        for i in range(lead, n - trail):
            dest.append((text[i], -trail if i == n - trail - 1 else 0))
        self.transform(dest, lead)

    def replace(self, pattern, content: str) -> None:
        """Replace every match of ``pattern`` by ``content`` (Hugging Face's ``Replace``).

        Inserted chars align with the last matched char (``(0, 0)`` for an
        empty match at the start); one pass over the text, however many matches.

        >>> n = NormalizedString("a b"); n.replace(" ", "▁"); n.normalized, n.alignments()
        ('a▁b', [(0, 1), (1, 2), (2, 3)])
        """
        matches = find_matches(pattern, self.normalized)
        if not any(is_match for _, is_match in matches):
            return
        align = self.alignments()
        text = self.normalized
        chars: list[str] = []
        new_align: list[Span] = []
        for (start, end), is_match in matches:
            if is_match:
                a = align[end - 1] if end >= 1 else (0, 0)
                chars.append(content)
                new_align.extend([a] * len(content))
            else:
                chars.append(text[start:end])
                new_align.extend(align[start:end])
        self.normalized = "".join(chars)
        self._align = new_align


def is_whitespace(ch: str) -> bool:
    """Unicode White_Space (Rust's ``char::is_whitespace``, regex ``\\s``)."""
    # Rust's char::is_whitespace is the Unicode White_Space property; Python's
    # str.isspace adds the four separators U+001C..U+001F. Exclude them.
    return ch.isspace() and ch not in "\x1c\x1d\x1e\x1f"
