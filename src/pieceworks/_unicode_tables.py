"""Per-code-point tables for the pre-tokenizer scanners (``_kernels/scan.pyx``).

The scanners look every code point up in one flat table of flags, built
once, on first use, from the ``regex`` module's Unicode properties (it
carries a newer Unicode than Python's ``unicodedata``, which stops at 14.0 on
Python 3.11, while Hugging Face's Rust tables are at 16.0 and 17.0):

==============  =============================================  ==================
flag            meaning (the Hugging Face code it stands for)  Unicode version
==============  =============================================  ==================
``WHITESPACE``  White_Space: Rust ``char::is_whitespace``,      any (stable)
                ``\\s`` of the regex crate and of Oniguruma
``WORD``        ``\\w`` of Rust's regex crate (Whitespace)       16.0
``PUNCT``       ASCII punctuation or a ``P*`` category: BERT's   8.0
                ``is_punctuation`` (the ``unicode_categories``
                crate)
``NUMERIC``     Rust ``char::is_numeric`` (``N*``, Digits)       17.0
``LETTER``      ``\\p{L}`` of Oniguruma (GPT-2's pattern)        16.0
``NUMBER``      ``\\p{N}`` of Oniguruma (GPT-2's pattern)        16.0
==============  =============================================  ==================

Where Hugging Face's table is older than ours, the characters it does not know
yet are listed below and taken out, so our splits match theirs exactly.

>>> flags = char_flags()
>>> flags[ord(" ")] == WHITESPACE, bool(flags[ord("a")] & WORD), bool(flags[ord("!")] & PUNCT)
(True, True, True)
"""

from __future__ import annotations

import array
import functools

from ._disk_cache import cached_bytes, source_stamp
from ._unicode_scripts import script_ranges

__all__ = ["WHITESPACE", "WORD", "PUNCT", "NUMERIC", "LETTER", "NUMBER",
           "char_flags", "script_table", "SCRIPT_ANY", "bert_accent_marks", "strip_accents_marks",
           "bert_controls", "LOWERCASE_AFTER_UNICODE_14", "NO_CANONICAL_DECOMPOSITION",
           "NO_COMPATIBILITY_DECOMPOSITION", "NO_COMBINING_CLASS", "code_points", "grapheme_table",
           "GRAPHEME_CLASSES", "PICTOGRAPHIC", "INCB_CONSONANT", "INCB_EXTEND", "INCB_LINKER"]

WHITESPACE = 1
WORD = 2
PUNCT = 4
NUMERIC = 8
LETTER = 16
NUMBER = 32

N_CODE_POINTS = 0x110000

# Letters, marks and digits new in Unicode 17.0: the regex crate's \w and
# Oniguruma's \p{L}/\p{N} in tokenizers 0.23 are at Unicode 16.0 and lack them
# (Rust's std, behind char::is_numeric, already has them).
UNICODE_17_WORD_CHARS = (
    (0x088F, 0x088F), (0x0C5C, 0x0C5C), (0x0CDC, 0x0CDC), (0x1ACF, 0x1ADD), (0x1AE0, 0x1AEB),
    (0xA7CE, 0xA7CF), (0xA7D2, 0xA7D2), (0xA7D4, 0xA7D4), (0xA7F1, 0xA7F1), (0x10940, 0x10959),
    (0x10EC5, 0x10EC7), (0x10EFA, 0x10EFB), (0x11B60, 0x11B67), (0x11DB0, 0x11DDB),
    (0x11DE0, 0x11DE9), (0x16EA0, 0x16EB8), (0x16EBB, 0x16ED3), (0x16FF2, 0x16FF6),
    (0x187F8, 0x187FF), (0x18D09, 0x18D1E), (0x18D80, 0x18DF2), (0x1E6C0, 0x1E6DE),
    (0x1E6E0, 0x1E6F5), (0x1E6FE, 0x1E6FF), (0x2B73A, 0x2B73F), (0x2CEA2, 0x2CEAD),
    (0x323B0, 0x33479),
)

# Punctuation (P*) assigned after Unicode 8.0, the version of the
# `unicode_categories` crate behind BERT's is_punctuation in tokenizers.
PUNCT_AFTER_UNICODE_8 = (
    (0x061D, 0x061D), (0x09FD, 0x09FD), (0x0A76, 0x0A76), (0x0C77, 0x0C77), (0x0C84, 0x0C84),
    (0x1B4E, 0x1B4F), (0x1B7D, 0x1B7F), (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0x10D6E, 0x10D6E),
    (0x10EAD, 0x10EAD), (0x10ED0, 0x10ED0), (0x10F55, 0x10F59), (0x10F86, 0x10F89),
    (0x113D4, 0x113D5), (0x113D7, 0x113D8), (0x1144B, 0x1144F), (0x1145A, 0x1145B),
    (0x1145D, 0x1145D), (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1183B, 0x1183B),
    (0x11944, 0x11946), (0x119E2, 0x119E2), (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C),
    (0x11A9E, 0x11AA2), (0x11B00, 0x11B09), (0x11BE1, 0x11BE1), (0x11C41, 0x11C45),
    (0x11C70, 0x11C71), (0x11EF7, 0x11EF8), (0x11F43, 0x11F4F), (0x11FFF, 0x11FFF),
    (0x12FF1, 0x12FF2), (0x16D6D, 0x16D6F), (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2),
    (0x1E5FF, 0x1E5FF), (0x1E95E, 0x1E95F),
)
# Punctuation in Unicode 8.0 that became a symbol (So) later.
PUNCT_UNTIL_UNICODE_8 = (0x166D, 0x111C9)

# Accent stripping. Hugging Face's two strippers read two different tables, both
# older than the regex module's: BertNormalizer drops what the `unicode_categories`
# crate calls Mn (Unicode 8.0), StripAccents what the `unicode-normalization` crate
# calls a combining mark. Measured against tokenizers 0.23 on every code point NFD
# leaves alone: the marks the regex module knows that each one keeps (MISSING),
# and the chars each drops that are no longer marks (EXTRA: Mn or Mc in their tables).
BERT_MN_MISSING = (
    (0x07FD, 0x07FD), (0x0897, 0x089F), (0x08CA, 0x08E1), (0x09FE, 0x09FE), (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55), (0x0C04, 0x0C04), (0x0C3C, 0x0C3C), (0x0D00, 0x0D00), (0x0D3B, 0x0D3C),
    (0x0D81, 0x0D81), (0x0EBA, 0x0EBA), (0x0ECE, 0x0ECE), (0x180F, 0x180F), (0x1885, 0x1886),
    (0x1ABF, 0x1ADD), (0x1AE0, 0x1AEB), (0x1DF6, 0x1DFB), (0xA82C, 0xA82C), (0xA8C5, 0xA8C5),
    (0xA8FF, 0xA8FF), (0xA9BD, 0xA9BD), (0x10D24, 0x10D27), (0x10D69, 0x10D6D), (0x10EAB, 0x10EAC),
    (0x10EFA, 0x10EFF), (0x10F46, 0x10F50), (0x10F82, 0x10F85), (0x11070, 0x11070), (0x11073, 0x11074),
    (0x110C2, 0x110C2), (0x111C9, 0x111C9), (0x111CF, 0x111CF), (0x1123E, 0x1123E), (0x11241, 0x11241),
    (0x1133B, 0x1133B), (0x113BB, 0x113C0), (0x113CE, 0x113CE), (0x113D0, 0x113D0), (0x113D2, 0x113D2),
    (0x113E1, 0x113E2), (0x11438, 0x1143F), (0x11442, 0x11444), (0x11446, 0x11446), (0x1145E, 0x1145E),
    (0x1182F, 0x11837), (0x11839, 0x1183A), (0x1193B, 0x1193C), (0x1193E, 0x1193E), (0x11943, 0x11943),
    (0x119D4, 0x119D7), (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x11A01, 0x11A0A), (0x11A33, 0x11A38),
    (0x11A3B, 0x11A3E), (0x11A47, 0x11A47), (0x11A51, 0x11A56), (0x11A59, 0x11A5B), (0x11A8A, 0x11A96),
    (0x11A98, 0x11A99), (0x11B60, 0x11B60), (0x11B62, 0x11B64), (0x11B66, 0x11B66), (0x11C30, 0x11C36),
    (0x11C38, 0x11C3D), (0x11C3F, 0x11C3F), (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0), (0x11CB2, 0x11CB3),
    (0x11CB5, 0x11CB6), (0x11D31, 0x11D36), (0x11D3A, 0x11D3A), (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45),
    (0x11D47, 0x11D47), (0x11D90, 0x11D91), (0x11D95, 0x11D95), (0x11D97, 0x11D97), (0x11EF3, 0x11EF4),
    (0x11F00, 0x11F01), (0x11F36, 0x11F3A), (0x11F40, 0x11F40), (0x11F42, 0x11F42), (0x11F5A, 0x11F5A),
    (0x13440, 0x13440), (0x13447, 0x13455), (0x1611E, 0x16129), (0x1612D, 0x1612F), (0x16F4F, 0x16F4F),
    (0x16FE4, 0x16FE4), (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E000, 0x1E006), (0x1E008, 0x1E018),
    (0x1E01B, 0x1E021), (0x1E023, 0x1E024), (0x1E026, 0x1E02A), (0x1E08F, 0x1E08F), (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1E4EC, 0x1E4EF), (0x1E5EE, 0x1E5EF), (0x1E6E3, 0x1E6E3),
    (0x1E6E6, 0x1E6E6), (0x1E6EE, 0x1E6EF), (0x1E6F5, 0x1E6F5), (0x1E944, 0x1E94A),
)
BERT_MN_EXTRA = (
    (0x1734, 0x1734), (0x1171E, 0x1171E),
)
STRIP_ACCENTS_MISSING = (
    (0x07FD, 0x07FD), (0x0897, 0x089F), (0x08CA, 0x08D3), (0x09FE, 0x09FE), (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55), (0x0C04, 0x0C04), (0x0C3C, 0x0C3C), (0x0CF3, 0x0CF3), (0x0D00, 0x0D00),
    (0x0D3B, 0x0D3C), (0x0D81, 0x0D81), (0x0EBA, 0x0EBA), (0x0ECE, 0x0ECE), (0x1715, 0x1715),
    (0x180F, 0x180F), (0x1ABF, 0x1ADD), (0x1AE0, 0x1AEB), (0x1CF7, 0x1CF7), (0x1DF6, 0x1DFA),
    (0xA82C, 0xA82C), (0xA8FF, 0xA8FF), (0x10D24, 0x10D27), (0x10D69, 0x10D6D), (0x10EAB, 0x10EAC),
    (0x10EFA, 0x10EFF), (0x10F46, 0x10F50), (0x10F82, 0x10F85), (0x11070, 0x11070), (0x11073, 0x11074),
    (0x110C2, 0x110C2), (0x11145, 0x11146), (0x111C9, 0x111C9), (0x111CE, 0x111CF), (0x11241, 0x11241),
    (0x1133B, 0x1133B), (0x113B8, 0x113C0), (0x113C2, 0x113C2), (0x113C5, 0x113C5), (0x113C7, 0x113CA),
    (0x113CC, 0x113D0), (0x113D2, 0x113D2), (0x113E1, 0x113E2), (0x1145E, 0x1145E), (0x1182C, 0x1183A),
    (0x11930, 0x11935), (0x11937, 0x11938), (0x1193B, 0x1193E), (0x11940, 0x11940), (0x11942, 0x11943),
    (0x119D1, 0x119D7), (0x119DA, 0x119E0), (0x119E4, 0x119E4), (0x11A01, 0x11A0A), (0x11A33, 0x11A39),
    (0x11A3B, 0x11A3E), (0x11A47, 0x11A47), (0x11A51, 0x11A5B), (0x11A8A, 0x11A99), (0x11B60, 0x11B67),
    (0x11D31, 0x11D36), (0x11D3A, 0x11D3A), (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), (0x11D47, 0x11D47),
    (0x11D8A, 0x11D8E), (0x11D90, 0x11D91), (0x11D93, 0x11D97), (0x11EF3, 0x11EF6), (0x11F00, 0x11F01),
    (0x11F03, 0x11F03), (0x11F34, 0x11F3A), (0x11F3E, 0x11F42), (0x11F5A, 0x11F5A), (0x13440, 0x13440),
    (0x13447, 0x13455), (0x1611E, 0x1612F), (0x16F4F, 0x16F4F), (0x16F7F, 0x16F87), (0x16FE4, 0x16FE4),
    (0x16FF0, 0x16FF1), (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E08F, 0x1E08F), (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1E4EC, 0x1E4EF), (0x1E5EE, 0x1E5EF), (0x1E6E3, 0x1E6E3),
    (0x1E6E6, 0x1E6E6), (0x1E6EE, 0x1E6EF), (0x1E6F5, 0x1E6F5),
)
STRIP_ACCENTS_EXTRA = (
    (0x1CF2, 0x1CF3),
)

# Format chars (Cf) assigned after Unicode 8.0: BertNormalizer's clean_text (the
# `unicode_categories` crate, at 8.0) does not know them as controls and keeps them.
CONTROLS_AFTER_UNICODE_8 = ((0x0890, 0x0891), (0x08E2, 0x08E2), (0x110CD, 0x110CD), (0x13430, 0x1343F))

# Uppercase letters whose lowercase Python 3.11's str.lower (Unicode 14.0) does
# not know and Rust's char::to_lowercase (Hugging Face's Lowercase) does, from
# Unicode 15 on; each maps to one char: (first, last, shift to add). Measured
# against tokenizers 0.23 on every code point.
LOWERCASE_AFTER_UNICODE_14 = (
    (0x1C89, 0x1C89, +1), (0xA7CB, 0xA7CB, -42343), (0xA7CC, 0xA7CC, +1), (0xA7CE, 0xA7CE, +1),
    (0xA7D2, 0xA7D2, +1), (0xA7D4, 0xA7D4, +1), (0xA7DA, 0xA7DA, +1), (0xA7DC, 0xA7DC, -42561),
    (0x10D50, 0x10D65, +32), (0x16EA0, 0x16EB8, +27),
)

# Chars Python 3.11 (Unicode 14.0) decomposes and Hugging Face's normalization
# tables (older) leave as they are: canonically (NFD, NFC) and, a superset, for
# compatibility (NFKD, NFKC). Measured against tokenizers 0.23 on every code point.
NO_CANONICAL_DECOMPOSITION = (
    (0x11938, 0x11938),
)
NO_COMPATIBILITY_DECOMPOSITION = (
    (0x32FF, 0x32FF), (0xA7F2, 0xA7F4), (0xAB69, 0xAB69), (0x10781, 0x10785),
    (0x10787, 0x107B0), (0x107B2, 0x107BA), (0x11938, 0x11938), (0x1F16C, 0x1F16C),
    (0x1FBF0, 0x1FBF9),
)

# Marks with a canonical combining class in Python 3.11 (Unicode 14.0) that Hugging
# Face's normalization tables (older) lack: there they are starters (class 0), so
# NFD and NFC do not reorder them. Measured against tokenizers 0.23 on every code
# point with a class and no decomposition (each after "a", before U+0334 of class 1,
# or after U+0301 of class 230 for those of class 1: reordered or not).
NO_COMBINING_CLASS = (
    (0x07FD, 0x07FD), (0x0898, 0x089F), (0x08CA, 0x08D3), (0x09FE, 0x09FE), (0x0C3C, 0x0C3C),
    (0x0D3B, 0x0D3C), (0x0EBA, 0x0EBA), (0x1715, 0x1715), (0x1ABF, 0x1ACE), (0x1DF6, 0x1DFA),
    (0xA82C, 0xA82C), (0x10D24, 0x10D27), (0x10EAB, 0x10EAC), (0x10F46, 0x10F50), (0x10F82, 0x10F85),
    (0x11070, 0x11070), (0x1133B, 0x1133B), (0x1145E, 0x1145E), (0x11839, 0x1183A), (0x1193D, 0x1193E),
    (0x11943, 0x11943), (0x119E0, 0x119E0), (0x11A34, 0x11A34), (0x11A47, 0x11A47), (0x11A99, 0x11A99),
    (0x11D42, 0x11D42), (0x11D44, 0x11D45), (0x11D97, 0x11D97), (0x16FF0, 0x16FF1), (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF),
)

ASCII_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

# (flag, pattern for runs of it, code points to take out)
_FLAG_SOURCES = (
    (WHITESPACE, r"\p{White_Space}+", ()),
    (WORD, r"\w+", UNICODE_17_WORD_CHARS),
    (PUNCT, r"\p{P}+", PUNCT_AFTER_UNICODE_8),
    (NUMERIC, r"\p{N}+", ()),
    (LETTER, r"\p{L}+", UNICODE_17_WORD_CHARS),
    (NUMBER, r"\p{N}+", UNICODE_17_WORD_CHARS),
)


@functools.cache
def every_code_point() -> str:
    """Every code point as one str (lone surrogates included: a Python str may hold them; they get
    no flag), for the tables' C-level passes. Kept (4.4 MB): the tables of one BERT tokenizer
    scan it six times, and making it took a tenth of a second of their start."""
    return array.array("I", range(N_CODE_POINTS)).tobytes().decode("utf-32-le", "surrogatepass")


def _finditer(pattern: str, text: str):
    """``regex.finditer``: imported here, not at the top, as only a table's first build needs it
    (the disk cache keeps the tables) and it is 20 ms of ``import pieceworks``."""
    import regex

    return regex.finditer(pattern, text)


def _flag_plane(flag: int, pattern: str, removed, text: str) -> int:
    """One flag over all code points, as a big int with byte ``cp`` = flag or 0."""
    plane = bytearray(N_CODE_POINTS)
    one = bytes([flag])
    for m in _finditer(pattern, text):
        start, end = m.span()
        plane[start:end] = one * (end - start)
    for first, last in removed:
        plane[first:last + 1] = bytes(last + 1 - first)
    return int.from_bytes(plane, "little")


def _table_stamp() -> str:
    """What the tables below depend on: this module and ``regex``'s Unicode data (see _disk_cache;
    a new ``regex`` release is a reinstall of the package, which its ``__init__.py`` shows)."""
    import sys

    return source_stamp(sys.modules[__name__], "regex")


def _full_size(table: bytes) -> bool:
    return len(table) == N_CODE_POINTS


@functools.cache
def char_flags() -> bytes:
    """``N_CODE_POINTS`` bytes: the OR of the flags that hold for each code point.

    Built from ``regex``'s Unicode classes in a tenth of a second or more,
    so kept in the disk cache (:mod:`pieceworks._disk_cache`).

    >>> char_flags()[ord("7")] == WORD | NUMERIC | NUMBER
    True
    """
    return cached_bytes("char-flags", _built_char_flags, _table_stamp(), _full_size)


def _built_char_flags() -> bytes:
    text = every_code_point()
    # OR the planes as big integers: one C-level pass per flag, no Python loop per code point.
    combined = 0
    for flag, pattern, removed in _FLAG_SOURCES:
        combined |= _flag_plane(flag, pattern, removed, text)
    flags = bytearray(combined.to_bytes(N_CODE_POINTS, "little"))
    for ch in ASCII_PUNCTUATION:
        flags[ord(ch)] |= PUNCT
    for cp in PUNCT_UNTIL_UNICODE_8:
        flags[cp] |= PUNCT
    return bytes(flags)


# The grapheme table (``grapheme_table``): a char's Grapheme_Cluster_Break value in the low four bits (its
# index in GRAPHEME_CLASSES; 0 is Other), and the flags the extended rules read (UAX #29 GB9c, GB11).
GRAPHEME_CLASSES = ("Other", "CR", "LF", "Control", "Extend", "ZWJ", "SpacingMark", "Prepend",
                    "L", "V", "T", "LV", "LVT", "Regional_Indicator")
PICTOGRAPHIC = 0x10         # Extended_Pictographic
INCB_CONSONANT = 0x20       # Indic_Conjunct_Break, two bits: Consonant, Extend or Linker
INCB_EXTEND = 0x40
INCB_LINKER = 0x60


@functools.cache
def grapheme_table() -> bytes:
    """``N_CODE_POINTS`` bytes: each char's grapheme cluster break class and flags, as ``regex``
    (whose ``\\X`` the Precompiled normalizer cuts text with) has them.

    >>> table = grapheme_table()
    >>> GRAPHEME_CLASSES[table[0x301] & 15], GRAPHEME_CLASSES[table[0x1100] & 15], bool(table[0x1F600] & PICTOGRAPHIC)
    ('Extend', 'L', True)
    """
    return cached_bytes("grapheme-table", _built_grapheme_table, _table_stamp(), _graphemes_valid)


# The bytes whose class index (low four bits) names one of GRAPHEME_CLASSES.
_GRAPHEME_BYTES = bytes(b for b in range(256) if b & 15 < len(GRAPHEME_CLASSES))


def _graphemes_valid(table: bytes) -> bool:
    """Whether ``table`` has a byte per code point, each of a class in GRAPHEME_CLASSES.

    >>> _graphemes_valid(bytes(N_CODE_POINTS)), _graphemes_valid(bytes([15]) * N_CODE_POINTS)
    (True, False)
    """
    return _full_size(table) and not table.translate(None, _GRAPHEME_BYTES)     # (a C pass: what is left is bad)


def _built_grapheme_table() -> bytes:
    text = every_code_point()
    combined = 0
    sources = [(k, rf"\p{{Grapheme_Cluster_Break={name}}}+") for k, name in enumerate(GRAPHEME_CLASSES) if k]
    sources += [(PICTOGRAPHIC, r"\p{Extended_Pictographic}+"),
                (INCB_CONSONANT, r"\p{Indic_Conjunct_Break=Consonant}+"),
                (INCB_EXTEND, r"\p{Indic_Conjunct_Break=Extend}+"),
                (INCB_LINKER, r"\p{Indic_Conjunct_Break=Linker}+")]
    for value, pattern in sources:     # (the values never overlap within a field: OR is assignment)
        combined |= _flag_plane(value, pattern, (), text)
    return combined.to_bytes(N_CODE_POINTS, "little")


SCRIPT_ANY = 0


@functools.cache
def script_table() -> tuple[bytes, tuple[str, ...]]:
    """A script id per code point, and the script names (id 0 is ``"Any"``).

    Applies Hugging Face's ``fixed_script``: Hiragana, Katakana and U+30FC
    count as Han (as SentencePiece does), and the space U+0020 has no script.

    >>> ids, names = script_table()
    >>> names[ids[ord("か")]], names[ids[ord("a")]], names[ids[ord(" ")]]
    ('Han', 'Latin', 'Any')
    """
    names = ["Any"]
    index = {"Any": SCRIPT_ANY}
    table = bytearray(N_CODE_POINTS)
    for first, last, name in script_ranges():
        if name in ("Hiragana", "Katakana"):
            name = "Han"
        if name not in index:
            index[name] = len(names)
            names.append(name)
        table[first:last + 1] = bytes([index[name]]) * (last + 1 - first)
    table[0x30FC] = index["Han"]
    table[0x20] = SCRIPT_ANY
    return bytes(table), tuple(names)


def code_points(ranges) -> frozenset[int]:
    """The code points of inclusive ``(first, last)`` ranges.

    >>> sorted(code_points(((0x61, 0x63), (0x7A, 0x7A))))
    [97, 98, 99, 122]
    """
    return frozenset(cp for first, last in ranges for cp in range(first, last + 1))


def _marks(pattern: str, missing, extra) -> frozenset[int]:
    """The code points in runs of ``pattern``, less the ``missing`` ranges, plus the ``extra`` ones."""
    found = set()
    for m in _finditer(pattern, every_code_point()):
        found.update(range(m.start(), m.end()))
    return frozenset(found - code_points(missing) | code_points(extra))


@functools.cache
def bert_accent_marks() -> frozenset[int]:
    """The code points BertNormalizer's ``strip_accents`` drops after NFD (Hugging Face's Mn).

    >>> marks = bert_accent_marks(); 0x301 in marks, 0x11C30 in marks, 0x1734 in marks
    (True, False, True)
    """
    return _marks(r"\p{Mn}+", BERT_MN_MISSING, BERT_MN_EXTRA)


@functools.cache
def strip_accents_marks() -> frozenset[int]:
    """The code points the StripAccents normalizer drops (Hugging Face's combining marks).

    >>> marks = strip_accents_marks(); 0x301 in marks, 0x11C30 in marks, 0x1CF2 in marks
    (True, True, True)
    """
    return _marks(r"\p{M}+", STRIP_ACCENTS_MISSING, STRIP_ACCENTS_EXTRA)


@functools.cache
def bert_controls() -> frozenset[int]:
    """What BertNormalizer's clean_text removes: general category Cc, Cf or Co as Hugging Face's
    table has them, and NUL and U+FFFD; but tab, newline and carriage return are whitespace.

    >>> controls = bert_controls(); 0x00 in controls, 0x0A in controls, 0x200B in controls, 0x0890 in controls
    (True, False, True, False)
    """
    return (_marks(r"[\p{Cc}\p{Cf}\p{Co}]+", CONTROLS_AFTER_UNICODE_8, ((0x00, 0x00), (0xFFFD, 0xFFFD)))
            - {0x09, 0x0A, 0x0D})
