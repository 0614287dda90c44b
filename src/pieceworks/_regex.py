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

It also sees the letters, marks and digits new in Unicode 17.0 as Hugging
Face's Oniguruma (at Unicode 16.0) does, as unassigned chars: ``\\p{L}``,
``\\w``, ``\\d`` and ``\\p{N}`` do not match them. The text is searched
with each replaced by U+0378 (unassigned in both), one char for one, so
spans hold (a match's ``group()`` shows U+0378; read spans).

>>> [m.span() for m in Regex(r"\\p{L}+").finditer("a\u088fb")]
[(0, 1), (2, 3)]
"""

from __future__ import annotations

from typing import Iterator

import regex

from ._unicode_tables import UNICODE_17_WORD_CHARS
from .errors import ConfigError

__all__ = ["Regex", "any_of"]

_AS_UNASSIGNED = {cp: 0x0378 for first, last in UNICODE_17_WORD_CHARS for cp in range(first, last + 1)}
_NEWER_WORD_CHARS = regex.compile("[" + "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in UNICODE_17_WORD_CHARS)
                                  + "]")


# Oniguruma's \w, for the `regex` module, whose own \w holds U+200C/U+200D (Join_Control, as UTS #18
# says). Oniguruma's does not, and outside a bracket class it also holds the Latin-1 superscripts and
# fractions (inside one it does not). Each equals Hugging Face's on every code point (with the
# Unicode 16 view of as_unicode_16).
_WORD_ITEMS = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}"
_WORD = rf"[{_WORD_ITEMS}\u00b2\u00b3\u00b9\u00bc-\u00be]"
_NOT_WORD = rf"[^{_WORD_ITEMS}\u00b2\u00b3\u00b9\u00bc-\u00be]"
# \b and \B on that word class (the regex module's own use its \w).
_BOUNDARY = rf"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = rf"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"


def from_oniguruma(pattern: str) -> str:
    r"""``pattern`` (Oniguruma's Ruby syntax, as Hugging Face reads it) for the `regex` module.

    ``\w`` is spelled as Oniguruma's word class (``\W`` outside a bracket
    class as its complement, ``\b`` and ``\B`` on it), ``\h``/``\H`` are hex digits (not horizontal
    space), ``\x{41}`` is a code point, ``\Z`` also matches before a final
    newline, and an inline ``m`` flag lets ``.`` match a newline (Ruby's
    ``m``; ``^`` and ``$`` are line anchors anyway). The rest is kept.

    >>> from_oniguruma(r"\w+|[^\w\s]") == rf"{_WORD}+|[^{_WORD_ITEMS}\s]"
    True
    >>> from_oniguruma(r"\\w") == r"\\w"                 # an escaped backslash, then a letter
    True
    >>> from_oniguruma(r"[]\w]") == rf"[]{_WORD_ITEMS}]"     # "]" first in a class is a member
    True
    >>> from_oniguruma(r"(?im:\h+)\x{41}\Z")
    '(?is:[0-9a-fA-F]+)\\U00000041(?=\\n?\\Z)'
    """
    if "\\" not in pattern and "(?" not in pattern:
        return pattern
    out = []
    i, n = 0, len(pattern)
    first_member = -1          # inside a bracket class: where its first member is (a "]" there is literal)
    while i < n:
        ch = pattern[i]
        in_class = first_member >= 0
        if ch == "\\" and i + 1 < n:
            escape = pattern[i:i + 2]
            code = _CODE_POINT.match(pattern, i)
            if code is not None:
                out.append(f"\\U{int(code.group(1), 16):08x}")
                i = code.end()
                continue
            if escape in ("\\w", "\\h"):
                items = _WORD_ITEMS if escape == "\\w" else "0-9a-fA-F"
                out.append(items if in_class else (_WORD if escape == "\\w" else f"[{items}]"))
            elif escape in ("\\W", "\\H") and not in_class:
                out.append(_NOT_WORD if escape == "\\W" else "[^0-9a-fA-F]")
            elif escape == "\\Z" and not in_class:
                out.append("(?=\\n?\\Z)")
            elif escape in ("\\b", "\\B") and not in_class:
                out.append(_BOUNDARY if escape == "\\b" else _NOT_BOUNDARY)
            else:
                out.append(escape)
            i += 2
            continue
        if in_class:
            if ch == "]" and i > first_member:
                first_member = -1
            elif ch == "[" and pattern.startswith("[:", i) and pattern.find(":]", i + 2) != -1:
                end = pattern.find(":]", i + 2) + 2
                out.append(pattern[i:end])
                i = end
                continue
        elif ch == "[":
            first_member = i + (2 if pattern.startswith("[^", i) else 1)
        elif ch == "(":
            flags = _INLINE_FLAGS.match(pattern, i)
            if flags is not None:
                out.append(flags.group().replace("m", "s"))
                i = flags.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


_CODE_POINT = regex.compile(r"\\x\{([0-9a-fA-F]{1,8})\}")
_INLINE_FLAGS = regex.compile(r"\(\?[imx]*(?:-[imx]*)?[:)]")


def as_unicode_16(text: str) -> str:
    """``text`` with each letter, mark or digit new in Unicode 17.0 replaced by U+0378 (see the
    module doc); ``text`` itself when it holds none.

    >>> as_unicode_16("a\u088fb")
    'a\u0378b'
    """
    if text.isascii() or _NEWER_WORD_CHARS.search(text) is None:
        return text
    return text.translate(_AS_UNASSIGNED)


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
            compiled = regex.compile(from_oniguruma(pattern), regex.MULTILINE)
        except regex.error as exc:
            raise ConfigError(f"invalid regular expression {pattern!r}: {exc}",
                              fix="check the pattern's syntax (escape literal brackets and backslashes)") from None
        self.pattern = pattern
        self.compiled = compiled

    def finditer(self, text: str, pos: int = 0) -> Iterator["regex.Match"]:
        """Matches left to right, skipping an empty match right after the previous match."""
        last_match_end = None
        text = as_unicode_16(text)
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
