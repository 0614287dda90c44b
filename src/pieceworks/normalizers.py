"""Normalizers: the first stage, editing the text before it is split.

Every normalizer edits a :class:`~pieceworks.alignment.NormalizedString`
in place through its one edit path, so offsets into the original text stay
exact. Names, fields and behaviour follow Hugging Face ``tokenizers``.

>>> Lowercase().normalize_str("HeLLo")
'hello'
>>> Sequence([NFKC(), Lowercase()]).normalize_str("ＡＢＣ ﬁ")
'abc fi'

Unicode data comes from Python's :mod:`unicodedata` (Unicode 14.0 on
Python 3.11). Hugging Face uses other tables in places. What
``BertNormalizer`` removes as controls or strips as accents, and what
``StripAccents`` strips, follows Hugging Face's own tables
(``_unicode_tables``, measured against it), and so do lowercasing (Rust
knows letters from Unicode 15 on) and NFC/NFD/NFKC/NFKD (Hugging Face's
tables lack some decompositions Python has, such as U+32FF's).
"""

from __future__ import annotations

import re
from functools import cache
from itertools import repeat

from ._component import Component, CustomComponent, Fields, stage_base
from ._regex import Regex, escape
from ._unicode_forms import char_set, normalize, normalize_aligned
from ._unicode_tables import LOWERCASE_AFTER_UNICODE_14, bert_accent_marks, bert_controls, strip_accents_marks
from .alignment import NormalizedString, is_whitespace
from .byte_level import bytes_to_byte_chars
from .errors import ConfigError, InputTypeError

__all__ = [
    "Normalizer", "NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "Strip", "Replace",
    "Prepend", "BertNormalizer", "Sequence", "ByteLevel", "Nmt", "NORMALIZERS", "unicode_normalizer_from_str",
]


@stage_base("normalizer")
class Normalizer(Component):
    """Base class: ``normalize(NormalizedString)`` edits in place."""

    def normalize(self, normalized: NormalizedString) -> None:
        raise NotImplementedError

    def normalize_str(self, sequence: str) -> str:
        """Normalize a plain string (offsets are not kept)."""
        ns = NormalizedString(sequence)
        self.normalize(ns)
        return ns.normalized

    @staticmethod
    def custom(normalizer) -> "Normalizer":
        """A normalizer that calls ``normalizer.normalize(normalized)`` on each
        :class:`~pieceworks.alignment.NormalizedString`, which it edits in place
        with that class's methods (``nfkc()``, ``lowercase()``, ``replace()``,
        ``filter()``, ...), so offsets stay exact. Hugging Face's
        ``Normalizer.custom``; it cannot be saved (see
        :class:`~pieceworks._component.CustomComponent`).

        >>> class Shout:
        ...     def normalize(self, normalized):
        ...         normalized.uppercase()
        >>> Normalizer.custom(Shout()).normalize_str("straße")
        'STRASSE'
        """
        return CustomNormalizer(normalizer)


class CustomNormalizer(CustomComponent, Normalizer):
    """What :meth:`Normalizer.custom` makes."""

    method = "normalize"

    def normalize(self, normalized: NormalizedString) -> None:
        self.inner.normalize(normalized)


class _FieldlessNormalizer(Normalizer):
    """A normalizer with no options: its JSON is just its ``type``."""

    def _to_fields(self) -> dict:
        return {}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls()


# -- Unicode normalization forms ---------------------------------------------

class _UnicodeForm(_FieldlessNormalizer):
    form = ""

    def normalize(self, normalized: NormalizedString) -> None:
        normalize_aligned(normalized, self.form)

    def normalize_str(self, sequence: str) -> str:
        """As :meth:`Normalizer.normalize_str`, with no alignment worked out (adding tokens and
        counting a training corpus normalize text by text)."""
        if type(sequence) is not str:
            return super().normalize_str(sequence)
        return normalize(sequence, self.form)


class NFD(_UnicodeForm):
    """Canonical decomposition: ``é`` → ``e`` + combining acute.

    >>> NFD().normalize_str("é") == "e\\u0301"
    True
    """

    type_name = "NFD"
    form = "NFD"


class NFKD(_UnicodeForm):
    """Compatibility decomposition: ``ﬁ`` → ``fi``, ``é`` → ``e`` + combining acute.

    >>> NFKD().normalize_str("ﬁ²")
    'fi2'
    """

    type_name = "NFKD"
    form = "NFKD"


class NFC(_UnicodeForm):
    """Canonical decomposition, then canonical composition: ``e`` + acute → ``é``.

    >>> NFC().normalize_str("e\\u0301")
    'é'
    """

    type_name = "NFC"
    form = "NFC"


class NFKC(_UnicodeForm):
    """Compatibility decomposition, then canonical composition.

    >>> NFKC().normalize_str("ＡＢＣ①ﬁ")
    'ABC1fi'
    """

    type_name = "NFKC"
    form = "NFKC"


# -- case and accents --------------------------------------------------------

class Lowercase(_FieldlessNormalizer):
    """Lowercase each char on its own (Rust's ``char::to_lowercase``, no final-sigma rule).

    >>> Lowercase().normalize_str("ΣΑΣ İ")
    'σασ i̇'
    """

    type_name = "Lowercase"

    def normalize(self, normalized: NormalizedString) -> None:
        lowercase_aligned(normalized)

    def normalize_str(self, sequence: str) -> str:
        """As :meth:`Normalizer.normalize_str`, with no alignment worked out: each char on its own
        where a Σ is (see :func:`lowercase_aligned`), else the whole text at once."""
        if type(sequence) is not str:
            return super().normalize_str(sequence)
        return "".join(map(lower, sequence)) if "Σ" in sequence else lower(sequence)


def lowercase_aligned(normalized: NormalizedString) -> None:
    """Lowercase in place; a char that lowercases to several (``İ``) adds new chars."""
    # One char for one is a plain swap, unless a Σ is there: str.lower's final-sigma rule looks at
    # the context, which a char on its own (Rust's rule) does not have.
    _recase_aligned(normalized, lower, "Σ" not in normalized.normalized)


def uppercase_aligned(normalized: NormalizedString) -> None:
    """Uppercase in place (``NormalizedString.uppercase``); a char that uppercases to several (``ß``)
    adds new chars. ``str.upper`` has no context rule, so one char for one is a plain swap."""
    _recase_aligned(normalized, upper, True)


def _recase_aligned(normalized: NormalizedString, recase, context_free: bool) -> None:
    """``recase`` (:func:`lower` or :func:`upper`) each char in place, the alignment kept: a swap when
    each char stays one and ``context_free`` (the whole text recased equals the chars recased one by
    one), else char by char, extra chars inserted."""
    text = normalized.normalized
    changed = recase(text)
    if changed == text:
        return
    if len(changed) == len(text) and context_free:
        normalized.transform(zip(changed, repeat(0)), 0)
    else:
        normalized.map_chars(recase)


def lower(text: str) -> str:
    """``str.lower``, with the letters Python's Unicode tables do not lowercase yet and Rust's do.

    >>> lower("AB\u1c89")
    'ab\u1c8a'
    """
    return _with_newer_letters(text.lower(), _newer_letters(upper=True), _NEWER_LOWERCASE)


def upper(text: str) -> str:
    """``str.upper``, with the letters Python's Unicode tables do not uppercase yet and Rust's do
    (the same pairs as :func:`lower`'s, the other way round).

    >>> upper("ab\u1c8a")
    'AB\u1c89'
    """
    return _with_newer_letters(text.upper(), _newer_letters(upper=False), _NEWER_UPPERCASE_MAP)


def _with_newer_letters(recased: str, unmapped, mapping: dict) -> str:
    """``recased`` with the letters ``unmapped`` finds (Python left them as they were) mapped as Rust does."""
    return recased if unmapped.search(recased) is None else recased.translate(mapping)


_NEWER_LOWERCASE = {cp: cp + shift for first, last, shift in LOWERCASE_AFTER_UNICODE_14
                    for cp in range(first, last + 1)}
_NEWER_UPPERCASE_MAP = {lowered: cp for cp, lowered in _NEWER_LOWERCASE.items()}


@cache
def _newer_letters(upper: bool) -> "re.Pattern[str]":
    """The upper-case (or lower-case) letters of :data:`_NEWER_LOWERCASE`, compiled on first use."""
    return re.compile(char_set(sorted(_NEWER_LOWERCASE if upper else _NEWER_UPPERCASE_MAP)))


class StripAccents(_FieldlessNormalizer):
    """Remove every combining mark (general category Mn, Mc or Me, in Hugging Face's table:
    ``_unicode_tables.strip_accents_marks``).

    Run it after NFD or NFKD so that accents are separate marks first.

    >>> Sequence([NFD(), StripAccents()]).normalize_str("Crème brûlée")
    'Creme brulee'
    """

    type_name = "StripAccents"

    def normalize(self, normalized: NormalizedString) -> None:
        _drop_and_map(normalized, _mark_runs(strip_accents_marks))


# -- whitespace, literal edits -----------------------------------------------

class Strip(Normalizer):
    """Remove leading (``left``) and/or trailing (``right``) whitespace.

    >>> Strip().normalize_str("  hi  "), Strip(left=False).normalize_str("  hi  ")
    ('hi', '  hi')
    """

    type_name = "Strip"

    def __init__(self, left: bool = True, right: bool = True):
        self.left = _check_bool("left", left)
        self.right = _check_bool("right", right)

    def normalize(self, normalized: NormalizedString) -> None:
        normalized.strip_whitespace(self.left, self.right)

    def _to_fields(self) -> dict:
        return {"strip_left": self.left, "strip_right": self.right}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("strip_left", bool), fields.get("strip_right", bool))


class Replace(Normalizer):
    """Replace every match of ``pattern`` (a literal ``str`` or a :class:`Regex`) by ``content``.

    Matching follows Hugging Face, which runs even a literal pattern as an
    Oniguruma regex: matches do not overlap, and a pattern that can match
    the empty string matches between chars too (but not right after a match).

    >>> Replace(" ", "▁").normalize_str("a b c")
    'a▁b▁c'
    >>> Replace(Regex(r"\\s+"), " ").normalize_str("a \\t\\n b")
    'a b'
    >>> Replace("", "-").normalize_str("ab")
    '-a-b-'
    """

    type_name = "Replace"

    def __init__(self, pattern: "str | Regex", content: str):
        if not isinstance(pattern, (str, Regex)):
            raise InputTypeError(f"Replace pattern must be a str or a Regex, got {type(pattern).__name__}",
                                 fix="pass a literal string, or wrap a regular expression as Regex(r'...')")
        self.pattern = pattern
        self.content = _check_str("content", content)
        # A literal is matched as its escaped regex, as Hugging Face does.
        self._regex = pattern if isinstance(pattern, Regex) else Regex(escape(pattern))

    def normalize_str(self, sequence: str) -> str:
        """As :meth:`Normalizer.normalize_str`; a non-empty literal pattern is ``str.replace`` (its
        matches are the regex's: left to right, not overlapping), with no alignment worked out."""
        if type(sequence) is str and type(self.pattern) is str and self.pattern:
            return sequence.replace(self.pattern, self.content)
        return super().normalize_str(sequence)

    def normalize(self, normalized: NormalizedString) -> None:
        text = normalized.normalized
        if not text:
            return      # Hugging Face looks for no match, not even an empty one, in empty text
        spans = self._regex.spans(text)
        if not spans:
            return
        stream = _replacement_stream(text, spans, self.content)
        if stream is not None:
            normalized.transform(*stream)
            return
        # Hugging Face's way, one match at a time: every content char is new
        # (it aligns with the last matched char) and the matched chars go.
        replacement = [(c, 1) for c in self.content]
        shift = 0
        for start, end in spans:
            normalized.transform_range(start + shift, end + shift, replacement, end - start)
            shift += len(self.content) - (end - start)

    def _to_fields(self) -> dict:
        kind = "Regex" if isinstance(self.pattern, Regex) else "String"
        source = self.pattern.pattern if isinstance(self.pattern, Regex) else self.pattern
        return {"pattern": {kind: source}, "content": self.content}

    @classmethod
    def _from_fields(cls, fields: Fields):
        pattern = _read_pattern(fields)
        return cls(pattern, fields.get("content", str))


def _replacement_stream(text: str, spans: list[tuple[int, int]],
                        content: str) -> tuple[list[tuple[str, int]], int] | None:
    """One whole-text edit equal to replacing ``spans`` one by one, or None if none exists.

    Replacing match by match costs a pass over the text per match; one
    stream costs one pass. The matched chars are removed by the char before
    them (a negative change) or by the initial offset, so that the content,
    inserted after them, aligns with the last matched char as in Hugging
    Face. A one-char match is simply overwritten by the content's first char
    (same alignment). The one case a stream cannot express is a longer match
    right after inserted content: nothing there can carry the removal.

    >>> _replacement_stream("a  b", [(1, 2), (2, 3)], "_")
    ([('a', 0), ('_', 0), ('_', 0), ('b', 0)], 0)
    >>> _replacement_stream("xyab", [(0, 2)], "_")
    ([('_', 1), ('a', 0), ('b', 0)], 2)
    """
    dest: list[tuple[str, int]] = []
    initial = 0
    done = 0
    for start, end in spans:
        dest.extend(zip(text[done:start], repeat(0)))
        removed = end - start
        if removed == 1 and content:
            dest.append((content[0], 0))
            dest.extend((c, 1) for c in content[1:])
        else:
            if removed and not dest:
                initial += removed
            elif removed and dest[-1][1] <= 0:
                ch, change = dest[-1]
                dest[-1] = (ch, change - removed)
            elif removed:
                return None
            dest.extend((c, 1) for c in content)
        done = end
    dest.extend(zip(text[done:], repeat(0)))
    return dest, initial


def _read_pattern(fields: Fields) -> "str | Regex":
    """``{"String": s}`` → ``s``; ``{"Regex": r}`` → ``Regex(r)``; anything else names the field."""
    pattern = fields.get("pattern", dict)
    if len(pattern) != 1 or next(iter(pattern)) not in ("String", "Regex"):
        raise fields.error("pattern", f"expected {{\"String\": ...}} or {{\"Regex\": ...}}, got {pattern!r}",
                           fix='write the pattern as {"String": "text"} or {"Regex": "regex"}')
    sub = Fields(pattern, fields.field_name("pattern"), fields.path)
    if "String" in pattern:
        return sub.get("String", str)
    source = sub.get("Regex", str)
    try:
        return Regex(source)
    except ConfigError as exc:
        raise sub.error("Regex", exc.message, fix=exc.fix) from None


class Prepend(Normalizer):
    """Put ``prepend`` in front of non-empty text (SentencePiece's ``▁``); it aligns with the first char.

    The default is ``▁``, as in Hugging Face.

    >>> Prepend().normalize_str("hello"), Prepend("▁").normalize_str("")
    ('▁hello', '')
    """

    type_name = "Prepend"

    def __init__(self, prepend: str = "\u2581"):
        self.prepend = _check_str("prepend", prepend)

    def normalize(self, normalized: NormalizedString) -> None:
        normalized.prepend(self.prepend)

    def _to_fields(self) -> dict:
        return {"prepend": self.prepend}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("prepend", str))


# -- BERT --------------------------------------------------------------------

class BertNormalizer(Normalizer):
    """BERT's cleaning: drop control chars, unify whitespace, space out CJK, strip accents, lowercase.

    ``strip_accents=None`` means "strip when lowercasing", as in the original BERT.

    >>> BertNormalizer().normalize_str("Héllo\\tWORLD中文")
    'hello world 中  文 '
    """

    type_name = "BertNormalizer"

    def __init__(self, clean_text: bool = True, handle_chinese_chars: bool = True,
                 strip_accents: bool | None = None, lowercase: bool = True):
        self.clean_text = _check_bool("clean_text", clean_text)
        self.handle_chinese_chars = _check_bool("handle_chinese_chars", handle_chinese_chars)
        self.strip_accents = None if strip_accents is None else _check_bool("strip_accents", strip_accents)
        self.lowercase = _check_bool("lowercase", lowercase)

    def normalize_str(self, sequence: str) -> str:
        """As :meth:`Normalizer.normalize_str`; ASCII text (most of what counting sees) in two C passes.

        On ASCII no char is Chinese, NFD changes nothing and no char is a
        combining mark, so only cleaning and lowercasing act.
        """
        if type(sequence) is not str or not sequence.isascii():
            return super().normalize_str(sequence)
        if self.clean_text:
            sequence = sequence.translate(_ascii_cleaning())
        return sequence.lower() if self.lowercase else sequence

    def normalize(self, normalized: NormalizedString) -> None:
        if self.clean_text:
            _drop_and_map(normalized, _bert_control_runs(), _bert_spaces())
        if self.handle_chinese_chars:
            _space_out_chinese_chars(normalized)
        strip_accents = self.lowercase if self.strip_accents is None else self.strip_accents
        if strip_accents:
            normalize_aligned(normalized, "NFD")
            _drop_and_map(normalized, _mark_runs(bert_accent_marks))
        if self.lowercase:
            lowercase_aligned(normalized)

    def _to_fields(self) -> dict:
        return {"clean_text": self.clean_text, "handle_chinese_chars": self.handle_chinese_chars,
                "strip_accents": self.strip_accents, "lowercase": self.lowercase}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("clean_text", bool), fields.get("handle_chinese_chars", bool),
                   fields.get("strip_accents", bool, None), fields.get("lowercase", bool))


def _ascii_cleaning() -> dict[int, str | None]:
    """``str.translate`` table doing BertNormalizer's cleaning on ASCII: controls go, whitespace is a space.

    >>> "a\\tb\\x00c\\x0b".translate(_ascii_cleaning())
    'a bc'
    """
    table = _RUNS.get("bert-ascii-cleaning")
    if table is None:
        controls = _bert_control_runs()
        table = {cp: " " for cp in _bert_spaces() if cp < 128}
        table.update({cp: None for cp in range(128) if controls.fullmatch(chr(cp))})   # dropping comes first
        _RUNS["bert-ascii-cleaning"] = table
    return table


def _bert_control_runs() -> "re.Pattern[str]":
    # BERT's "control" chars: general categories Cc, Cf and Co (not Cn:
    # unassigned code points are kept), and NUL and U+FFFD; but tab, newline
    # and carriage return are whitespace.
    # (_unicode_tables.bert_controls: Hugging Face's table, at Unicode 8.0)
    return _mark_runs(bert_controls)


@cache
def _bert_spaces() -> dict[int, str]:
    """BertNormalizer's cleaning turns these into a space: tab, newline, carriage return and Unicode
    White_Space (none above U+3000), but the space itself. Made on first use (3 ms).

    >>> sorted(_bert_spaces())[:4], 0x20 in _bert_spaces()
    ([9, 10, 11, 12], False)
    """
    spaces = {cp: " " for cp in range(0x3001) if chr(cp) in "\t\n\r" or is_whitespace(chr(cp))}
    del spaces[0x20]
    return spaces

# The blocks BERT calls Chinese: CJK Unified Ideographs and Extensions A-E,
# and the two CJK Compatibility Ideographs blocks (not kana, not Hangul).
@cache
def _chinese_runs() -> "re.Pattern[str]":
    """Runs of the chars BERT calls Chinese; compiled on first use (3 ms: ``re`` builds a table
    for the ranges above the BMP).

    >>> [m.span() for m in _chinese_runs().finditer("ab中文c")]
    [(2, 4)]
    """
    return re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df"
                      "\U0002a700-\U0002b73f\U0002b740-\U0002b81f\U0002b920-\U0002ceaf\U0002f800-\U0002fa1f]+")


def _space_out_chinese_chars(normalized: NormalizedString) -> None:
    text = normalized.normalized
    dest: list[tuple[str, int]] = []
    done = 0
    for match in _chinese_runs().finditer(text):
        start, end = match.span()
        dest.extend(zip(text[done:start], repeat(0)))
        for ch in match.group():
            # Hugging Face's order: the first space takes the char's place and
            # the char itself counts as new, so all three align with the char.
            dest += ((" ", 0), (ch, 1), (" ", 1))
        done = end
    if dest:
        dest.extend(zip(text[done:], repeat(0)))
        normalized.transform(dest, 0)


# -- composition -------------------------------------------------------------

class Sequence(Normalizer):
    """Run several normalizers in order on the same string.

    As in Hugging Face, a Sequence given to the constructor is spliced in
    (its members join this list); one read from JSON keeps its nesting.

    >>> Sequence([NFD(), StripAccents(), Lowercase()]).normalize_str("Ça Va")
    'ca va'
    >>> len(Sequence([Sequence([NFD(), StripAccents()]), Lowercase()]))
    3
    """

    type_name = "Sequence"

    def __init__(self, normalizers):
        items = list(normalizers) if not isinstance(normalizers, (str, bytes)) else None
        if items is None or not all(isinstance(n, Normalizer) for n in items):
            raise InputTypeError("Sequence takes a list of normalizers",
                                 fix="pass e.g. Sequence([NFD(), Lowercase()])")
        self.normalizers = [member for n in items for member in (n.normalizers if isinstance(n, Sequence) else [n])]

    @classmethod
    def _nested(cls, normalizers: list[Normalizer]) -> "Sequence":
        seq = cls.__new__(cls)
        seq.normalizers = normalizers
        return seq

    def normalize(self, normalized: NormalizedString) -> None:
        for normalizer in self.normalizers:
            normalizer.normalize(normalized)

    def normalize_str(self, sequence: str) -> str:
        """Each member's :meth:`~Normalizer.normalize_str` in turn: what each of ours makes depends
        only on the text before it. (A member of the user's may read the whole NormalizedString,
        its original text too: then the members share one, as :meth:`normalize` does.)"""
        if type(sequence) is not str or not self._reads_only_its_input():
            return super().normalize_str(sequence)
        for normalizer in self.normalizers:
            sequence = normalizer.normalize_str(sequence)
        return sequence

    def _reads_only_its_input(self) -> bool:
        """Whether every member, nested ones too, is one of ours (a custom one's wrapper is not)."""
        return all(type(n).__module__ == __name__ and not isinstance(n, CustomComponent)
                   and (type(n) is not Sequence or n._reads_only_its_input()) for n in self.normalizers)

    def __len__(self) -> int:
        return len(self.normalizers)

    def __getitem__(self, index: int) -> Normalizer:
        return self.normalizers[index]

    def __setitem__(self, index: int, value: Normalizer) -> None:
        """Replace one member, as Hugging Face's ``sequence[i] = normalizer`` does.

        >>> seq = Sequence([NFD(), Lowercase()]); seq[0] = NFC(); seq.normalize_str("E\u0301")
        '\xe9'
        """
        if not isinstance(value, Normalizer):
            raise InputTypeError(f"a Sequence member must be a Normalizer, got {type(value).__name__}",
                                 fix="assign e.g. NFC() or Lowercase()")
        # A new list, assigned: the assignment moves the component epoch (see pre_tokenizers.Sequence).
        items = list(self.normalizers)
        items[index] = value
        self.normalizers = items

    def __iter__(self):
        return iter(self.normalizers)

    def _to_fields(self) -> dict:
        return {"normalizers": [n.to_json() for n in self.normalizers]}

    @classmethod
    def _from_fields(cls, fields: Fields):
        items = fields.get("normalizers", list)
        where = fields.field_name("normalizers")
        return cls._nested([Normalizer.from_json(item, where=f"{where}[{i}]", path=fields.path)
                            for i, item in enumerate(items)])


# -- byte level, SentencePiece's NMT cleanup -----------------------------------

class ByteLevel(_FieldlessNormalizer):
    """Spell the text's UTF-8 bytes in GPT-2's byte alphabet (one char per byte).

    Every byte of a char aligns with that char.

    >>> ByteLevel().normalize_str("hé y")
    'hÃ©Ġy'
    """

    type_name = "ByteLevel"

    def normalize(self, normalized: NormalizedString) -> None:
        text = normalized.normalized
        if not text or _BYTE_LEVEL_IDENTITY.fullmatch(text):
            return
        data = text.encode("utf-8", "surrogatepass")
        # A char's first byte replaces it; its continuation bytes (10xxxxxx) are new.
        changes = [1 if byte & 0xC0 == 0x80 else 0 for byte in data]
        normalized.transform(zip(bytes_to_byte_chars(data), changes), 0)


# ASCII chars that the byte alphabet spells as themselves.
_BYTE_LEVEL_IDENTITY = re.compile("[!-~]*")


class Nmt(_FieldlessNormalizer):
    """SentencePiece's NMT cleanup: drop ASCII control chars, turn other spacing chars into spaces.

    >>> Nmt().normalize_str("a\\x01b\\u200bc\\td")
    'ab c d'
    """

    type_name = "Nmt"

    def normalize(self, normalized: NormalizedString) -> None:
        _drop_and_map(normalized, _NMT_DROPPED, _NMT_SPACES)


# ASCII and C1 control chars that NMT drops, and the spacing chars it turns into spaces.
_NMT_DROPPED = re.compile("[\x01-\x08\x0b\x0e-\x1f\x7f\x8f\x9f]+")
_NMT_SPACES = {cp: " " for cp in [0x09, 0x0A, 0x0C, 0x0D, 0x1680, *range(0x200B, 0x2010),
                                  0x2028, 0x2029, 0x2581, 0xFEFF, 0xFFFD]}


# -- shared edits ----------------------------------------------------------------

def _drop_and_map(normalized: NormalizedString, drop: "re.Pattern[str]", table: dict | None = None) -> None:
    """Remove the runs ``drop`` matches, then map the rest one for one by ``str.translate(table)``.

    One edit with exactly the changes of Hugging Face's ``filter`` followed
    by ``map``: a kept char replaces itself and removes the dropped run after
    it; a run at the very start is the initial offset. The regex finds the
    (usually absent) runs in C, which is the whole point.

    >>> s = NormalizedString("\\x01a\\x02\\x03b\\tc")
    >>> _drop_and_map(s, re.compile("[\\x01-\\x08]+"), {ord("\\t"): " "})
    >>> s.normalized, s.alignments()
    ('ab c', [(1, 2), (4, 5), (5, 6), (6, 7)])
    """
    text = normalized.normalized
    table = table or {}
    runs = [m.span() for m in drop.finditer(text)]
    if not runs:
        mapped = text.translate(table)
        if mapped != text:
            normalized.transform(zip(mapped, repeat(0)), 0)
        return
    dest: list[tuple[str, int]] = []
    initial = 0
    done = 0
    for start, end in runs:
        dest.extend(zip(text[done:start].translate(table), repeat(0)))
        if dest:
            # Runs are maximal, so dest[-1] is a kept char that removes nothing yet.
            dest[-1] = (dest[-1][0], start - end)
        else:
            initial = end - start
        done = end
    dest.extend(zip(text[done:].translate(table), repeat(0)))
    normalized.transform(dest, initial)


_RUNS: dict[str, "re.Pattern[str]"] = {}


def _mark_runs(table) -> "re.Pattern[str]":
    """A regex matching runs of the code points ``table()`` gives (one of ``_unicode_tables``'); built once."""
    pattern = _RUNS.get(table.__name__)
    if pattern is None:
        pattern = _RUNS[table.__name__] = re.compile(f"{char_set(sorted(table()))}+")
    return pattern


# -- argument checks -----------------------------------------------------------

def _check_bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise InputTypeError(f"{name} must be True or False, got {value!r}", fix=f"pass {name}=True or {name}=False")
    return value


def _check_str(name: str, value) -> str:
    if not isinstance(value, str):
        raise InputTypeError(f"{name} must be a str, got {type(value).__name__}", fix=f"pass {name} as text")
    return value


# == SentencePiece: the precompiled charsmap ===================================
# (added by the SentencePiece work; everything below belongs to Precompiled)

__all__ += ["Precompiled"]

class Precompiled(Normalizer):
    """SentencePiece's normalization rules, as stored in a .model's ``precompiled_charsmap``.

    Behaves as Hugging Face's ``Precompiled``: the text is cut into grapheme
    clusters; a cluster shorter than 6 UTF-8 bytes is replaced whole when a
    rule matches its start (the shortest such rule), otherwise each char is
    replaced by its own rule. (SentencePiece itself rewrites by the longest
    match over the raw bytes; :class:`pieceworks.sentencepiece.SentencePieceProcessor`
    does that.) In tokenizer.json the charsmap is base64.

    >>> import base64                                           # doctest: +SKIP
    >>> Precompiled(charsmap).normalize_str("ﬁ①\\u00a0x")        # doctest: +SKIP
    'fi1 x'
    """

    type_name = "Precompiled"

    def __init__(self, precompiled_charsmap: bytes):
        from ._kernels.unigram import Charsmap, KernelError

        if isinstance(precompiled_charsmap, str):
            precompiled_charsmap = _b64decode(precompiled_charsmap)
        if not isinstance(precompiled_charsmap, (bytes, bytearray, memoryview)):
            raise InputTypeError(f"precompiled_charsmap must be bytes, got {type(precompiled_charsmap).__name__}",
                                 fix="pass proto.normalizer_spec.precompiled_charsmap from a .model")
        self.precompiled_charsmap = bytes(precompiled_charsmap)
        self._charsmap = None
        self._starts = None
        if self.precompiled_charsmap:
            try:
                self._charsmap = Charsmap(self.precompiled_charsmap)
            except KernelError as exc:
                raise ConfigError(f"broken precompiled_charsmap: {exc}",
                                  fix="take the charsmap from an intact SentencePiece .model") from exc
            self._starts = _rule_starts(self._charsmap, self.precompiled_charsmap)

    def normalize(self, normalized: NormalizedString) -> None:
        text = normalized.normalized
        if self._charsmap is None or self._starts is None or not self._starts.search(text):
            return
        dest, modified = self._edits(text)
        if modified:
            normalized.transform(dest, 0)

    def changes(self, text: str) -> list[tuple[str, int]]:
        """What this normalizer makes of ``text``, as ``(char, change)`` pairs (see
        :meth:`NormalizedString.transform`): the edit list it applies.

        >>> Precompiled(b"").changes("ab")
        [('a', 0), ('b', 0)]
        """
        if self._charsmap is None:
            return [(ch, 0) for ch in text]
        return self._edits(text)[0]

    def _edits(self, text: str) -> tuple[list[tuple[str, int]], bool]:
        """``(edit list, whether a rule changed anything)`` of ``text``, grapheme by grapheme."""
        dest: list[tuple[str, int]] = []
        modified = False
        lookup = self._charsmap.lookup
        for grapheme in _grapheme_pattern().findall(text):
            data = grapheme.encode("utf-8", "surrogatepass")
            if len(data) < 6:
                found = lookup(data, False)
                if found is not None:
                    modified = True
                    _precompiled_replace(dest, grapheme, found[1].decode("utf-8", "replace"))
                    continue
            for ch in grapheme:
                found = lookup(ch.encode("utf-8", "surrogatepass"), False)
                if found is not None:
                    modified = True
                    _precompiled_replace(dest, ch, found[1].decode("utf-8", "replace"))
                else:
                    dest.append((ch, 0))
        return dest, modified

    def rule_checker(self):
        """The kernel's check of where a charsmap rule matches (``SpmNormalizer``: its ``leaves(text)``
        says no rule matches anywhere in ``text``), made once per charsmap; None without a charsmap."""
        if self._charsmap is None:
            return None
        made = self.__dict__.get("_checker")
        if made is None or made[0] is not self._charsmap:
            from ._kernels.unigram import SpmNormalizer     # (here, not per call: an import costs a short text 10%)

            made = self.__dict__["_checker"] = (self._charsmap, SpmNormalizer(self._charsmap, None, False, False,
                                                                              False, False))
        return made[1]

    def cluster_table(self) -> "tuple[bytes | None, dict]":
        """``(table, edits)`` for the fast plans' aligned normalizing in C (``_aligned.aligned_precompiled``),
        made once per charsmap: ``table`` the grapheme table (``_unicode_tables.grapheme_table``) with
        ``RULE_START`` set on each char a rule begins with; ``edits`` a dict for them to keep each
        cluster's edit in. ``table`` is None without a charsmap, or when a rule begins with bytes no
        char encodes to (SentencePiece makes none: the general path takes such a charsmap).

        >>> Precompiled(b"").cluster_table()
        (None, {})
        """
        made = self.__dict__.get("_clusters")
        if made is None or made[0] is not self.precompiled_charsmap:
            made = self.__dict__["_clusters"] = (self.precompiled_charsmap, self._rule_start_table(), {})
        return made[1], made[2]

    def _rule_start_table(self) -> "bytes | None":
        from ._kernels.aligned_nfc import RULE_START
        from ._unicode_tables import grapheme_table

        if self._charsmap is None:
            return None
        _, firsts, odd = _rule_firsts(self._charsmap, self.precompiled_charsmap)
        if odd:
            return None
        table = bytearray(grapheme_table())
        for first in firsts:
            table[ord(first)] |= RULE_START
        return bytes(table)

    def swap_controls(self, text: str) -> str:
        """``text`` with the control chars :meth:`control_swaps` lists swapped, one for one (so its
        offsets stay); ``text`` itself if it holds a CR (CR LF is one grapheme cluster, which a rule
        may map whole) or the charsmap swaps none.

        >>> Precompiled(b"").swap_controls("a\\nb")
        'a\\nb'
        """
        _, table, finder, _, _ = self._swap_state()
        if not table or "\r" in text:
            return text
        # The few swapped chars a text holds, each replaced by a C scan: str.translate looks up every
        # char of the text (most of a line of UDHR's scripts' time through the SentencePiece plans).
        found = finder.findall(text)
        for ch in found if len(found) < 2 else set(found):
            text = text.replace(ch, table[ord(ch)])
        return text

    def ascii_swaps(self) -> "tuple[bytes | None, bool]":
        """``(table, whole)``: :meth:`control_swaps` of ASCII chars into ASCII chars as 256 bytes (the
        char each byte becomes, or 0), for the kernels to swap as they read a text; None if there are
        none. ``whole``: the table holds every swap (none makes a char outside ASCII, or NUL, which
        0 cannot say).

        >>> Precompiled(b"").ascii_swaps()
        (None, True)
        """
        return self._swap_state()[3:]

    def control_swaps(self) -> dict[int, str]:
        """``{code point: char}`` for the control chars (CR aside) the charsmap makes one other char.

        A control char is a grapheme cluster of its own (CR LF aside), so
        this normalizer swaps it alone, one char for one, and its alignment
        stays: a text whose only changes are these normalizes to
        ``text.translate(control_swaps())``, offsets unchanged. The fast
        plans take such texts (SentencePiece's charsmaps make newlines and
        tabs spaces, and a text of several lines went the general way
        whole). Worked out once per charsmap.
        """
        return self._swap_state()[1]

    def _swap_state(self) -> tuple:
        """``(charsmap, control_swaps, a pattern matching each of its chars, ascii_swaps' table and
        whole)``, worked out once per charsmap (one look-up: a line's encode asks for it)."""
        made = self.__dict__.get("_swap_state_made")
        if made is None or made[0] is not self.precompiled_charsmap:
            table = {}
            for cp in [*range(0x20), *range(0x7F, 0xA0)]:
                out = self.normalize_str(chr(cp)) if cp != 0x0D else chr(cp)
                if len(out) == 1 and out != chr(cp):
                    table[cp] = out
            finder = re.compile(f"[{''.join(re.escape(chr(cp)) for cp in sorted(table))}]" if table else "(?!)")
            ascii_table = bytearray(256)
            for cp, ch in table.items():
                if cp < 0x80 and 0 < ord(ch) < 0x80:     # (0 marks no swap: a NUL is swapped in Python)
                    ascii_table[cp] = ord(ch)
            whole = sum(map(bool, ascii_table)) == len(table)
            made = self.__dict__["_swap_state_made"] = (self.precompiled_charsmap, table, finder,
                                                        bytes(ascii_table) if any(ascii_table) else None, whole)
        return made

    def _to_fields(self) -> dict:
        import base64

        return {"precompiled_charsmap": base64.b64encode(self.precompiled_charsmap).decode("ascii")}

    @classmethod
    def _from_fields(cls, fields: Fields):
        value = fields.get("precompiled_charsmap", str, None, nullable=True) or ""
        try:
            data = _b64decode(value)
        except ConfigError as exc:
            raise fields.error("precompiled_charsmap", exc.message, fix=exc.fix) from None
        try:
            return cls(data)
        except ConfigError as exc:
            raise fields.error("precompiled_charsmap", exc.message, fix=exc.fix) from None

    def __repr__(self) -> str:
        return f"Precompiled(precompiled_charsmap=<{len(self.precompiled_charsmap)} bytes>)"


_RULE_STARTS: dict[bytes, "tuple[re.Pattern[str] | None, frozenset[str], bool]"] = {}


def _rule_starts(charsmap, blob: bytes):
    """A regex of the chars that begin some rule (text without them is left alone); cached per charsmap."""
    return _rule_firsts(charsmap, blob)[0]


def _rule_firsts(charsmap, blob: bytes) -> "tuple[re.Pattern[str] | None, frozenset[str], bool]":
    """``(regex of the chars that begin some rule, those chars, whether a rule begins with bytes no
    char encodes to)``, cached per charsmap (reading its rules takes a SentencePiece charsmap a
    third of a second)."""
    if blob not in _RULE_STARTS:
        firsts, odd = set(), False
        for key, _ in charsmap.rules():
            if _starts_with_invalid_utf8(key):
                odd = True
            elif key:
                firsts.add(key.decode("utf-8", "replace")[0])
        if len(_RULE_STARTS) > 8:
            _RULE_STARTS.clear()
        pattern = re.compile(char_set(sorted(ord(c) for c in firsts))) if firsts else None
        _RULE_STARTS[blob] = (pattern, frozenset(firsts), odd)
    return _RULE_STARTS[blob]


def _starts_with_invalid_utf8(key: bytes) -> bool:
    """True if ``key`` begins with bytes no str char encodes to (such a rule never matches).

    A key that really begins with U+FFFD (EF BF BD) is a rule like any other.

    >>> _starts_with_invalid_utf8(b"\\xff"), _starts_with_invalid_utf8("\ufffd".encode())
    (True, False)
    """
    return key.decode("utf-8", "replace")[:1] == "\ufffd" and not key.startswith(b"\xef\xbf\xbd")


def _b64decode(text: str) -> bytes:
    import base64
    import binascii

    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"precompiled_charsmap is not valid base64 ({exc})",
                          fix="save the tokenizer.json again; the charsmap must be base64 of a .model's "
                              "normalizer_spec.precompiled_charsmap") from exc


@cache
def _grapheme_pattern():
    """Extended grapheme clusters (``regex``'s ``\\X``: ``re`` has none); compiled on first use, as
    ``regex`` is 16 ms of ``import pieceworks`` otherwise."""
    import regex

    return regex.compile(r"\X", regex.DOTALL)


def _precompiled_replace(dest: list, old: str, new: str) -> None:
    """Hugging Face's edit list for ``old`` → ``new``: extra chars are insertions, a shrink removes at the end."""
    diff = len(new) - len(old)
    dest.extend((c, 0) for c in new)
    if diff > 0:
        for k in range(len(dest) - diff, len(dest)):
            dest[k] = (dest[k][0], 1)
    elif diff < 0 and dest:
        ch, change = dest[-1]
        dest[-1] = (ch, change + diff)


#: The Unicode normalizers by lower-case name (Hugging Face's table).
NORMALIZERS = {"nfc": NFC, "nfd": NFD, "nfkc": NFKC, "nfkd": NFKD}


def unicode_normalizer_from_str(normalizer: str) -> Normalizer:
    """``NFC()`` for "nfc", and so on for "nfd", "nfkc" and "nfkd".

    >>> unicode_normalizer_from_str("nfkc").normalize_str("ﬁ")
    'fi'
    """
    if normalizer not in NORMALIZERS:
        raise ConfigError(f"{normalizer!r} is not a known unicode normalizer",
                          fix=f"use one of {', '.join(NORMALIZERS)}")
    return NORMALIZERS[normalizer]()
