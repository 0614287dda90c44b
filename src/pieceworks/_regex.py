"""Regex: a user-supplied regular expression that remembers its source.

Hugging Face ``tokenizers`` wraps patterns in ``tokenizers.Regex`` so that a
component can tell a regex from a literal string and write it back to
tokenizer.json as ``{"Regex": source}``. This class does the same, compiling
with the ``regex`` module (close to Oniguruma, the engine Hugging Face uses;
as in Oniguruma's Ruby syntax, ``^`` and ``$`` match at every line).

>>> r = Regex(r"\\s+")
>>> r.pattern, [m.span() for m in r.finditer("a  b")]
('\\\\s+', [(1, 3)])

:meth:`finditer` follows Oniguruma's rule for empty matches: an empty match
that starts where the previous match ended is skipped (Python's ``re`` and
``regex`` would report it), so ``a*`` over ``"ab"`` matches ``"a"`` then the
empty string at the end only:

>>> [m.span() for m in Regex("a*").finditer("ab")]
[(0, 1), (2, 2)]
"""

from __future__ import annotations

from typing import Iterator

import regex

from .errors import ConfigError

__all__ = ["Regex", "any_of"]


def any_of(strings) -> "regex.Pattern":
    """A regex matching any of ``strings`` (non-empty) literally, longest first: the engine's
    leftmost-first choice is then the leftmost-longest one (Aho-Corasick's, Hugging Face's rule
    for added tokens), and a string that starts another never hides it.

    >>> [m.group() for m in any_of(["<s>", "<s>x", "a.b"]).finditer("<s>x <s> a.b axb")]
    ['<s>x', '<s>', 'a.b']
    """
    return regex.compile("|".join(regex.escape(s) for s in sorted(strings, key=lambda s: (-len(s), s))))


class Regex:
    """A compiled regular expression plus its source text."""

    __slots__ = ("pattern", "compiled")

    def __init__(self, pattern: str):
        if isinstance(pattern, Regex):
            pattern = pattern.pattern
        if not isinstance(pattern, str):
            raise ConfigError(f"a Regex needs a pattern string, got {type(pattern).__name__}",
                              fix="pass the pattern as a str, e.g. Regex(r'\\s+')")
        try:
            # Oniguruma's Ruby syntax, which Hugging Face uses, makes ^ and $ line anchors.
            compiled = regex.compile(pattern, regex.MULTILINE)
        except regex.error as exc:
            raise ConfigError(f"invalid regular expression {pattern!r}: {exc}",
                              fix="check the pattern's syntax (escape literal brackets and backslashes)") from None
        self.pattern = pattern
        self.compiled = compiled

    def finditer(self, text: str, pos: int = 0) -> Iterator["regex.Match"]:
        """Matches left to right, skipping an empty match right after the previous match."""
        last_match_end = None
        n = len(text)
        while pos <= n:
            m = self.compiled.search(text, pos)
            if m is None:
                return
            start, end = m.span()
            if start == end == last_match_end:
                # Oniguruma's iterator refuses this empty match and retries one char on.
                pos = start + 1
                continue
            yield m
            pos = last_match_end = end

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Regex) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(("Regex", self.pattern))

    def __reduce__(self):
        return (Regex, (self.pattern,))
