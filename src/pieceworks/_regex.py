"""Regex: a user-supplied regular expression that remembers its source, run on Oniguruma.

Hugging Face ``tokenizers`` wraps patterns in ``tokenizers.Regex`` so that a
component can tell a regex from a literal string and write it back to
tokenizer.json as ``{"Regex": source}``. This class does the same, and runs
the pattern on the engine Hugging Face runs it on: Oniguruma (6.9.10, through
``onigurumacffi``; its classes equal Hugging Face's on every code point),
with its default syntax. So every construct means what it means there: its Unicode
16.0 classes (``\\p{L}``, ``\\w``, POSIX brackets like ``[[:alpha:]]``),
``\\h`` (a hex digit), ``\\x{41}``, ``\\b``, class intersection, full case
folding (``(?i)ß`` matches "ss"), and ``^``/``$`` at every line.

>>> r = Regex(r"\\s+")
>>> r.pattern, r.spans("a  b")
('\\\\s+', [(1, 3)])

:meth:`spans` follows Oniguruma's iterator (the one Hugging Face's
``find_iter`` is) on empty matches: an empty match that starts where the
previous match ended is skipped (Python's ``re`` would report it), so
``a*`` over ``"ab"`` matches ``"a"`` then the empty string at the end only:

>>> Regex("a*").spans("ab")
[(0, 1), (2, 2)]
"""

from __future__ import annotations

import threading
from typing import Iterator

from ._kernels.onig_spans import match_spans
from .errors import ConfigError

__all__ = ["Regex", "escape"]


def _oniguruma():
    """``(compile, OnigError, search, address_of, new_region)`` from onigurumacffi: its public
    ``compile`` and error, the address of the C search under its ``search`` (which takes a byte
    position: its own re-encodes the whole text to find one, so over a text's matches it is
    quadratic), what gives a cffi pointer's address, and a new OnigRegion (freed with its object)."""
    import _onigurumacffi
    import onigurumacffi

    lib, ffi = _onigurumacffi.lib, _onigurumacffi.ffi

    def address_of(pointer) -> int:
        return int(ffi.cast("uintptr_t", pointer))

    def new_region():
        return ffi.gc(lib.onig_region_new(), lib.onigcffi_region_free)

    return (onigurumacffi.compile, onigurumacffi.OnigError, address_of(ffi.addressof(lib, "onigcffi_search")),
            address_of, new_region)


_compile, _OnigError, _SEARCH, _address_of, _new_region = _oniguruma()
#: One OnigRegion per thread (a search writes the match into it), kept with its address.
_regions = threading.local()


def _region_address() -> int:
    made = getattr(_regions, "made", None)
    if made is None:
        region = _new_region()
        made = _regions.made = (region, _address_of(region))
    return made[1]


def escape(literal: str) -> str:
    r"""An Oniguruma pattern matching ``literal`` and nothing else: each ASCII char other than a
    letter, digit or ``_`` is written as its code point (``\x{..}``), which no syntax reads otherwise.

    >>> escape("a.b c"), Regex(escape("a.b")).spans("axb a.b")
    ('a\\x{2e}b\\x{20}c', [(4, 7)])
    """
    return "".join(c if c.isalnum() or c == "_" or not c.isascii() else f"\\x{{{ord(c):x}}}" for c in literal)


class Match:
    """One match of :meth:`Regex.finditer`: its char span, and its text."""

    __slots__ = ("_span", "string")

    def __init__(self, span: tuple[int, int], string: str):
        self._span = span
        self.string = string

    def span(self) -> tuple[int, int]:
        return self._span

    def start(self) -> int:
        return self._span[0]

    def end(self) -> int:
        return self._span[1]

    def group(self) -> str:
        return self.string[self._span[0]:self._span[1]]

    def __repr__(self) -> str:
        return f"<Match span={self._span} match={self.group()!r}>"


class Regex:
    """A compiled regular expression (Oniguruma's syntax) plus its source text."""

    __slots__ = ("pattern", "_compiled", "_address")

    def __init__(self, pattern: str):
        if isinstance(pattern, Regex):
            pattern = pattern.pattern
        if not isinstance(pattern, str):
            raise ConfigError(f"a Regex needs a pattern string, got {type(pattern).__name__}",
                              fix="pass the pattern as a str, e.g. Regex(r'\\s+')")
        try:
            compiled = _compile(pattern)
        except (_OnigError, UnicodeEncodeError) as exc:
            raise ConfigError(f"invalid regular expression {pattern!r}: {exc}",
                              fix="check the pattern's syntax (Oniguruma's, as Hugging Face reads it: escape "
                                  "literal brackets and backslashes)") from None
        self.pattern = pattern
        self._compiled = compiled       # (keeps the regex_t at _address alive)
        self._address = _address_of(compiled._regex_t)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The char spans of the matches in ``text``, left to right, skipping an empty match right
        after the previous match (see the module doc).

        The text goes to Oniguruma as UTF-8 (a lone surrogate as its three
        bytes: one char, as in the str); the matches are found in one C loop
        (``_kernels/onig_spans``), their byte positions counted into chars as
        it goes.

        >>> Regex(r"\\p{L}+").spans("é1日本")
        [(0, 1), (2, 4)]
        """
        found = match_spans(_SEARCH, self._address, _region_address(), text.encode("utf-8", "surrogatepass"))
        if type(found) is int:
            raise self._search_error(found, text)
        return found

    def finditer(self, text: str) -> Iterator[Match]:
        """The matches of :meth:`spans`, as objects with ``span()``, ``start()``, ``end()`` and ``group()``."""
        for span in self.spans(text):
            yield Match(span, text)

    def _search_error(self, code: int, text: str) -> ConfigError:
        import onigurumacffi

        return ConfigError(f"regular expression {self.pattern!r} failed on a text of {len(text)} chars: "
                           f"{onigurumacffi._err(code)}",
                           fix="simplify the pattern: nested quantifiers such as (a+)+ backtrack without end "
                               "on some texts (Hugging Face's Oniguruma stops at the same limit)")

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Regex) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(("Regex", self.pattern))

    def __reduce__(self):
        return (Regex, (self.pattern,))
