"""Unicode normalization (NFD, NFKD, NFC, NFKC) that says where each output char came from.

Hugging Face ``tokenizers`` normalizes with the Rust crate
``unicode-normalization-alignments``, whose iterators yield, with each
output char, a *change* in the sense of
:meth:`~pieceworks.alignment.NormalizedString.transform_range`
(0 replaces an input char, 1 is a new char, -n replaces one and drops n).
Offsets agree with Hugging Face only if the changes agree, so this module
reproduces that crate's two state machines, step for step; the Unicode data
itself comes from Python's :mod:`unicodedata`, less the decompositions the
crate's older tables lack (``_unicode_tables.NO_*_DECOMPOSITION``) and the
combining classes of the marks they lack (``NO_COMBINING_CLASS``: starters
there, never reordered).

>>> changes("ﬁ", "NFKC")                  # one char becomes two: the second is new
[('f', 0), ('i', 1)]
>>> changes("e\\u0301", "NFC")            # two become one: é replaces e, drops the accent
[('é', -1)]

How the crate assigns changes (and so what the offsets mean):

- *Decomposition*: each input char expands to its full decomposition; the
  first char gets 0, the others 1. Then every run of non-starters is sorted
  by canonical combining class (stable), and the changes travel with their
  chars, so after a reordering a 1 can precede a 0.
- *Composition*: when the pending starter ``k`` absorbs a char ``c``, the
  composite gets ``change(k) + change(c) - 1``.

Speed: the state machines run in Python, so :func:`normalize_aligned` only
runs them on the few *segments* that can change. A segment starts at a char
that is a normalization boundary (below) and takes every following
non-boundary char; text is the concatenation of its segments'
normalizations, and the crate's state is fresh at each boundary, so each
segment's changes can be computed alone. A segment that is already
normalized yields only 0s (the tests check this) and is left alone.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from array import array
from itertools import compress, repeat

from . import _unicode_tables
from ._disk_cache import cached_bytes, source_stamp
from ._kernels.aligned_nfc import FormTables, splice_segments
from ._unicode_tables import (NO_CANONICAL_DECOMPOSITION, NO_COMBINING_CLASS, NO_COMPATIBILITY_DECOMPOSITION,
                              code_points, every_code_point)

__all__ = ["FORMS", "changes", "normalize_aligned", "compose_pair", "char_set"]

FORMS = ("NFC", "NFD", "NFKC", "NFKD")
_COMPOSING = {"NFC": True, "NFD": False, "NFKC": True, "NFKD": False}
_DECOMPOSED_FORM = {"NFC": "NFD", "NFD": "NFD", "NFKC": "NFKD", "NFKD": "NFKD"}

# Hangul syllables compose and decompose by arithmetic, not by table (Unicode ch. 3.12).
_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
_L_COUNT, _V_COUNT, _T_COUNT = 19, 21, 28
_S_COUNT = _L_COUNT * _V_COUNT * _T_COUNT

# Every char with a decomposition or a non-zero combining class lies below
# U+30000 (the CJK compatibility ideographs end at U+2FA1D); the tests scan
# all of Unicode to check this, so the tables need not.
_SCAN_END = 0x30000

_NO_CLASS = code_points(NO_COMBINING_CLASS)


def _scanned_chars() -> str:
    """Every code point below ``_SCAN_END`` as one str (lone surrogates included)."""
    return every_code_point()[:_SCAN_END]


@functools.cache
def _decomposing() -> tuple[int, ...]:
    """The code points below ``_SCAN_END`` unicodedata gives a decomposition (canonical or not).

    The table builders loop in Python over these few thousand, found by a
    C-level pass, not over all 196 608 (a third of a second per process).
    """
    return tuple(compress(range(_SCAN_END), map(unicodedata.decomposition, _scanned_chars())))


@functools.cache
def _classes() -> bytes:
    """:func:`_combining` of each code point below ``_SCAN_END``, a byte each."""
    classes = bytearray(map(unicodedata.combining, _scanned_chars()))
    for cp in _NO_CLASS:
        if cp < _SCAN_END:
            classes[cp] = 0
    return bytes(classes)


def _combining(ch: str) -> int:
    """``ch``'s canonical combining class in the crate's tables: unicodedata's, but 0 for the marks
    they lack (``_unicode_tables.NO_COMBINING_CLASS``), which the crate neither reorders nor blocks with.

    >>> _combining("\u0301"), _combining("\u0898"), _combining("a")
    (230, 0, 0)
    """
    return 0 if ord(ch) in _NO_CLASS else unicodedata.combining(ch)


def changes(text: str, form: str) -> list[tuple[str, int]]:
    """``text`` normalized to ``form`` as ``(char, change)`` pairs, exactly as the crate yields them.

    >>> changes("\\u1100\\u1161", "NFC")     # Hangul jamo L + V compose into one syllable
    [('가', -1)]
    >>> changes("가", "NFD")
    [('ᄀ', 0), ('ᅡ', 1)]
    """
    stream = _decompose(text, _DECOMPOSED_FORM[form])
    if _COMPOSING[form]:
        stream = _recompose(stream)
    return stream


def normalize_aligned(normalized, form: str) -> None:
    """Normalize a :class:`~pieceworks.alignment.NormalizedString` in place, through its edit path.

    Text that is already in ``form`` is not touched (its identity alignment
    stays unmaterialized).

    >>> from pieceworks.alignment import NormalizedString
    >>> s = NormalizedString("ﬁx")
    >>> normalize_aligned(s, "NFKC")
    >>> s.normalized, s.alignments()
    ('fix', [(0, 1), (0, 1), (1, 2)])
    """
    text = normalized.normalized
    if unicodedata.is_normalized(form, text):
        return
    dest: list[tuple[str, int]] = []
    done = 0
    for start, end, segment_changes in changed_segments(text, form):
        dest.extend(zip(text[done:start], repeat(0)))
        dest.extend(segment_changes)
        done = end
    dest.extend(zip(text[done:], repeat(0)))
    normalized.transform(dest, 0)


def normalize(text: str, form: str) -> str:
    """``unicodedata.normalize(form, text)`` as Hugging Face's tables have it (see the module doc).

    >>> normalize("cafe\u0301", "NFC"), normalize("\u32ff", "NFKC") == "\u32ff"
    ('café', True)
    """
    if not changes_text(form, text):
        return text
    parts: list[str] = []
    splice_segments(text, 0, len(text), segment_kinds(form), segment_edits(form), _EDIT_OF[form], parts,
                    array("q"), array("q"), array("q"), array("i"), array("i"), 0)
    return "".join(parts)


def changed_segments(text: str, form: str):
    """``(start, end, changes)`` for each segment of ``text`` that ``form`` changes, in order.

    ``changes`` is :func:`changes` of ``text[start:end]``; the chars between
    segments stay as they are (see :func:`_segmenter`). A line feed is a
    boundary nothing composes with, so each line normalizes alone, and the
    segment scan (a regex, slow) runs only on the lines
    ``unicodedata.is_normalized`` (fast) does not rule out.

    >>> list(changed_segments("ok\\ncafe\u0301 ok", "NFC"))
    [(6, 8, [('é', -1)])]
    """
    segmenter = _segmenter(form)
    line_start = 0
    for line in text.split("\n"):
        if not unicodedata.is_normalized(form, line):
            for match in segmenter.finditer(line):
                start, end = match.span()
                segment = line[start:end]
                if not unicodedata.is_normalized(form, segment):
                    yield line_start + start, line_start + end, _cached_changes(segment, form)
        line_start += len(line) + 1


_CHANGES_CACHE: dict[tuple[str, str], list[tuple[str, int]]] = {}
_CHANGES_CACHE_SIZE = 8192
_CACHED_SEGMENT_LENGTH = 32


def _cached_changes(segment: str, form: str) -> list[tuple[str, int]]:
    # Real text repeats its segments (a kana with its voicing mark, a
    # full-width comma), so remembering a few thousand saves most of the work.
    if len(segment) > _CACHED_SEGMENT_LENGTH:
        return changes(segment, form)
    key = (segment, form)
    out = _CHANGES_CACHE.get(key)
    if out is None:
        if len(_CHANGES_CACHE) >= _CHANGES_CACHE_SIZE:
            _CHANGES_CACHE.clear()
        out = _CHANGES_CACHE[key] = changes(segment, form)
    return out


# -- decomposition ---------------------------------------------------------

_DECOMPOSITIONS: dict[str, dict[str, str]] = {"NFD": {}, "NFKD": {}}
# What Hugging Face's tables do not decompose, by form (see _unicode_tables).
_UNDECOMPOSED = {"NFD": code_points(NO_CANONICAL_DECOMPOSITION), "NFKD": code_points(NO_COMPATIBILITY_DECOMPOSITION)}


def _full_decomposition(ch: str, form: str) -> str:
    """The full (recursive) decomposition of one char; cached.

    Python's per-char NFD/NFKD equals the raw recursive decomposition for
    every code point (no single char's decomposition needs reordering), so
    the crate's emission order is preserved.
    """
    cache = _DECOMPOSITIONS[form]
    out = cache.get(ch)
    if out is None:
        out = cache[ch] = ch if ord(ch) in _UNDECOMPOSED[form] else unicodedata.normalize(form, ch)
    return out


def _decompose(text: str, form: str) -> list[tuple[str, int]]:
    """The crate's ``Decompositions`` iterator: expand, then sort each run of non-starters."""
    out: list[tuple[str, int]] = []
    pending = 0          # out[pending:] is a starter (maybe) and the non-starters after it
    unsorted = False     # a non-starter arrived with a lower class than the one before it
    last_class = 0
    for ch in text:
        first = 0
        for piece in _full_decomposition(ch, form):
            klass = _combining(piece)
            if klass == 0:
                if unsorted:
                    _sort_by_class(out, pending)
                    unsorted = False
                pending = len(out)
            elif klass < last_class:
                unsorted = True
            last_class = klass
            out.append((piece, first))
            first = 1
    if unsorted:
        _sort_by_class(out, pending)
    return out


def _sort_by_class(out: list[tuple[str, int]], start: int) -> None:
    # Stable, like the crate's sort_by_key: equal classes keep text order,
    # and the starter at out[start] (class 0) stays first.
    out[start:] = sorted(out[start:], key=lambda pair: _combining(pair[0]))


# -- composition -----------------------------------------------------------

def _recompose(stream: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The crate's ``Recompositions`` state machine over a decomposed stream."""
    out: list[tuple[str, int]] = []
    buffer: list[tuple[str, int]] = []     # non-starters that did not compose, in order
    composee: tuple[str, int] | None = None
    last_class: int | None = None          # class of the last char put in the buffer
    for ch, change in stream:
        klass = _combining(ch)
        if composee is None:
            if klass != 0:
                out.append((ch, change))
            else:
                composee = (ch, change)
            continue
        if last_class is not None and last_class >= klass:
            # ch is blocked from the composee.
            if klass == 0:
                out.append(composee)
                out.extend(buffer)
                buffer.clear()
                composee, last_class = (ch, change), None
            else:
                buffer.append((ch, change))
                last_class = klass
            continue
        composite = compose_pair(composee[0], ch)
        if composite is not None:
            composee = (composite, composee[1] + change - 1)
        elif klass == 0 and last_class is None:
            out.append(composee)
            composee = (ch, change)
        else:
            buffer.append((ch, change))
            last_class = klass
    if composee is not None:
        out.append(composee)
    out.extend(buffer)
    return out


_COMPOSITIONS: dict[str, str] = {}
_BACKWARD_COMBINING: set[str] = set()


def compose_pair(first: str, second: str) -> str | None:
    """The primary composite of two chars, or None (Hangul included).

    >>> compose_pair("e", "\\u0301"), compose_pair("\\u1100", "\\u1161"), compose_pair("a", "b")
    ('é', '가', None)
    """
    a, b = ord(first), ord(second)
    if _L_BASE <= a < _L_BASE + _L_COUNT and _V_BASE <= b < _V_BASE + _V_COUNT:
        return chr(_S_BASE + ((a - _L_BASE) * _V_COUNT + (b - _V_BASE)) * _T_COUNT)
    if (_S_BASE <= a < _S_BASE + _S_COUNT and (a - _S_BASE) % _T_COUNT == 0
            and _T_BASE < b < _T_BASE + _T_COUNT):
        return chr(a + b - _T_BASE)
    if not _COMPOSITIONS:
        _build_composition_table()
    return _COMPOSITIONS.get(first + second)


def _build_composition_table() -> None:
    # Primary composites: two-char canonical decompositions that NFC puts back
    # together (composition exclusions and singletons are left out by NFC itself).
    for cp in _decomposing():
        mapping = unicodedata.decomposition(chr(cp))
        if not mapping or mapping[0] == "<" or cp in _UNDECOMPOSED["NFD"]:
            continue
        parts = mapping.split()
        if len(parts) != 2:
            continue
        pair = chr(int(parts[0], 16)) + chr(int(parts[1], 16))
        if unicodedata.normalize("NFC", pair) == chr(cp):
            _COMPOSITIONS[pair] = chr(cp)
            _BACKWARD_COMBINING.add(pair[1])
    _BACKWARD_COMBINING.update(chr(_V_BASE + i) for i in range(_V_COUNT))
    _BACKWARD_COMBINING.update(chr(_T_BASE + i) for i in range(1, _T_COUNT))


# -- segmentation ----------------------------------------------------------

_SEGMENTERS: dict[str, "re.Pattern[str]"] = {}


def _segmenter(form: str) -> "re.Pattern[str]":
    """A regex whose matches are the segments of a text that may change under ``form``.

    A char is a *boundary* when the first char of its decomposition is a
    starter that composes with nothing before it (for NFC/NFKC). A segment
    is a boundary char plus the non-boundary chars after it (or a run of
    non-boundary chars at the very start). Segments of one boundary char
    matter only if that char changes by itself.
    """
    pattern = _SEGMENTERS.get(form)
    if pattern is None:
        inner, changing = _segment_tables(form)
        alternatives = []
        if inner:
            inner_set = char_set(inner)
            alternatives.append(f"(?:(?!{inner_set})[\\s\\S])?(?:{inner_set})+")
        if changing:
            alternatives.append(char_set(changing))
        pattern = _SEGMENTERS[form] = re.compile("|".join(alternatives) or "(?!)")
    return pattern


_SEGMENT_KINDS: dict[str, bytes] = {}


def segment_kinds(form: str) -> bytes:
    """What each code point is to :func:`_segmenter`, a byte each: 1 if it is a non-boundary char,
    2 if a boundary char that changes alone (``aligned_nfc.INNER`` and ``CHANGING``); code points
    past the table are neither.

    >>> kinds = segment_kinds("NFC")
    >>> kinds[0x301], kinds[ord("e")], kinds[0x212B]      # a mark, a letter, the angstrom sign
    (1, 0, 2)
    """
    table = _SEGMENT_KINDS.get(form)
    if table is None:
        form_tables(form)           # (read from the disk cache with the rest, or built)
        table = _SEGMENT_KINDS[form]
    return table


def _built_segment_kinds(form: str) -> bytes:
    inner, changing = _segment_tables(form)
    kinds = bytearray(max(inner + changing, default=-1) + 1)
    for cp in inner:
        kinds[cp] = 1
    for cp in changing:
        kinds[cp] = 2
    return bytes(kinds)


_EDITS: dict[str, dict[str, tuple[str, bytes] | None]] = {}
_EDITS_SIZE = 16384


def segment_edit(segment: str, form: str) -> tuple[str, bytes] | None:
    """None if ``form`` leaves ``segment`` (one of :func:`_segmenter`'s) as it is; else what it makes of
    it, and the int32 pairs (machine order) of the segment's chars each of those spans, as
    ``AlignedText.replace`` maps them. Short segments are remembered, in ``segment_edits(form)``.

    >>> made, pairs = segment_edit("e\u0301", "NFC")
    >>> made, array("i", pairs).tolist()
    ('é', [0, 1])
    """
    if len(segment) > _CACHED_SEGMENT_LENGTH:       # (a char with thousands of marks: in C, not kept)
        # (Not asking is_normalized first: for a segment of marks it normalizes the whole of it too.)
        edit = form_tables(form).edit(segment)
        return None if edit[0] == segment else edit
    if unicodedata.is_normalized(form, segment):
        entry = None
    else:
        made = changes(segment, form)       # (not _cached_changes: the entry is what is kept)
        entry = ("".join([ch for ch, _ in made]), span_pairs(made).tobytes())
    edits = segment_edits(form)
    if len(edits) >= _EDITS_SIZE:
        edits.clear()
    edits[segment] = entry
    return entry


_EDIT_OF = {form: (lambda segment, form=form: segment_edit(segment, form)) for form in _COMPOSING}


_FORM_TABLES: dict = {}


def form_tables(form: str):
    """``form``'s tables in C (``aligned_nfc.FormTables``), made on first use: their ``edit(text)`` is
    :func:`changes` of ``text``, as :func:`segment_edit` gives it, without a Python step per char.

    What they are made from takes a fifth of a second of Unicode scans, so
    it is kept in the disk cache (:mod:`pieceworks._disk_cache`).
    """
    tables = _FORM_TABLES.get(form)
    if tables is None:
        made = []

        def reads_back(blob: bytes) -> bool:
            made.append(_tables_from_packed(blob, form))
            return made[-1] is not None

        blob = cached_bytes(f"form-tables-{form.lower()}", lambda: _packed_form_facts(form),
                            source_stamp(sys.modules[__name__], _unicode_tables), reads_back)
        tables = made[-1] if made and made[-1] is not None else _tables_from_packed(blob, form)
        if tables is None:
            raise RuntimeError(f"the {form} tables just built do not read back")     # (a bug of ours)
        _FORM_TABLES[form] = tables
    return tables


def _packed_form_facts(form: str) -> bytes:
    """What ``form``'s tables are made from, as bytes: five uint32 sizes (machine order), then the
    classes, the decompositions (code point, length, chars: uint32s), the compositions (first,
    second, composite), the segment kinds and the quick table (none for NFD and NFKD).

    >>> _tables_from_packed(_packed_form_facts("NFC"), "NFC").edit("e\u0301")[0] == "\xe9"
    True
    """
    decomposed = _DECOMPOSED_FORM[form]
    words = array("I")
    for cp in sorted({*_decomposing(), *range(_S_BASE, _S_BASE + _S_COUNT)}):
        full = _full_decomposition(chr(cp), decomposed)
        if full != chr(cp):
            words.extend((cp, len(full), *map(ord, full)))
    if not _COMPOSITIONS:
        _build_composition_table()
    pairs = array("I", [ord(ch) for pair, composite in _COMPOSITIONS.items() for ch in (*pair, composite)])
    classes, kinds = _classes(), _built_segment_kinds(form)
    quick = quick_table(form) if _COMPOSING[form] else b""
    sizes = array("I", [len(classes), len(words), len(pairs), len(kinds), len(quick)])
    return b"".join((sizes.tobytes(), classes, words.tobytes(), pairs.tobytes(), kinds, quick))


def _tables_from_packed(blob: bytes, form: str):
    """``form``'s ``FormTables`` from :func:`_packed_form_facts`' bytes, their segment kinds and
    quick table set (and kept for :func:`segment_kinds` and :func:`quick_check`); None if ``blob``
    is not such bytes.

    >>> _tables_from_packed(bytes(19), "NFC") is None
    True
    """
    sizes = array("I")
    sizes.frombytes(blob[:20] if len(blob) >= 20 else b"\xff" * 20)
    n_classes, n_words, n_pairs, n_kinds, n_quick = sizes
    if max(n_kinds, n_quick) > n_classes or 20 + n_classes + 4 * (n_words + n_pairs) + n_kinds + n_quick != len(blob):
        return None
    words_at = 20 + n_classes
    kinds_at = words_at + 4 * (n_words + n_pairs)
    try:
        tables = FormTables.from_words(blob[20:words_at], blob[words_at:words_at + 4 * n_words],
                                       blob[words_at + 4 * n_words:kinds_at], _COMPOSING[form])
    except ValueError:
        return None
    kinds, quick = blob[kinds_at:kinds_at + n_kinds], blob[kinds_at + n_kinds:]
    tables.set_kinds(kinds)
    _SEGMENT_KINDS.setdefault(form, kinds)
    if quick:
        tables.set_quick(quick)
        _QUICK.setdefault(form, tables.quick)
    return tables


def quick_table(form: str) -> bytes:
    """Unicode's quick-check values for ``form`` (NFC or NFKC), a byte per code point below _SCAN_END:
    1 (no) for a char the form never keeps, 2 (maybe) for one that may compose with the char before
    it, else 0 (yes); from the segment tables, without normalizing each char.

    A boundary char the form changes is in the segment tables' changing
    list; a non-boundary char that decomposes (canonically; for NFKC, at
    all) never recomposes (such decompositions are excluded from
    composition). The maybes are the second chars of the compositions and
    the Hangul vowel and trailing jamo.

    >>> table = quick_table("NFC")
    >>> table[ord("e")], table[0x212B], table[0x301], table[0x340], table[0x1161]
    (0, 1, 2, 1, 2)
    """
    inner, changing = _segment_tables(form)
    table = bytearray(_SCAN_END)
    for cp in changing:
        table[cp] = 1
    for cp in inner:
        decomposition = unicodedata.decomposition(chr(cp))
        if decomposition and (not decomposition.startswith("<") or form == "NFKC"):
            table[cp] = 1
    for pair in _COMPOSITIONS:
        if not table[ord(pair[1])]:
            table[ord(pair[1])] = 2
    for cp in list(range(_V_BASE, _V_BASE + _V_COUNT)) + list(range(_T_BASE + 1, _T_BASE + _T_COUNT)):
        table[cp] = table[cp] or 2
    return bytes(table)


def quick_check(form: str):
    """``form``'s :meth:`FormTables.quick <pieceworks._kernels.aligned_nfc.FormTables.quick>` (0: the
    form keeps a text, 1: it changes it, 2: cannot tell), its tables built on first use."""
    quick = _QUICK.get(form)
    if quick is None:
        tables = form_tables(form)      # (sets the quick table of NFC and NFKC)
        quick = _QUICK.get(form)
        if quick is None:
            tables.set_quick(quick_table(form))
            quick = _QUICK[form] = tables.quick
    return quick


_QUICK: dict = {}


def changes_text(form: str, text: str) -> bool:
    """Whether ``form`` may change ``text`` (False: it surely does not, as Hugging Face's tables have
    it): for NFC and NFKC :func:`quick_check`, and ``unicodedata.is_normalized`` when that cannot
    tell (which normalizes the whole text); for NFD and NFKD that alone. (When unicodedata keeps a
    text, no older table changes it either.)

    >>> changes_text("NFC", "e\u0301"), changes_text("NFC", "x\u0301"), changes_text("NFC", "plain")
    (True, False, False)
    """
    if text.isascii():
        return False
    return verdict_changes(form, text, quick_check(form)(text) if _COMPOSING[form] else 2)


def changes_none_of(form: str, texts: list[str]) -> bool:
    """Whether ``form`` leaves every one of ``texts`` as it is (:func:`changed_among` finds none).

    >>> changes_none_of("NFC", ["plain", "words"]), changes_none_of("NFC", ["x", "e\u0301"])
    (True, False)
    """
    return not changed_among(form, texts)


def changed_among(form: str, texts: list[str]) -> list[int]:
    """The positions of the ``texts`` (a list of strs) that ``form`` may change (:func:`changes_text`
    of each): all ASCII in one C-level pass, and for NFC and NFKC every text's quick check in one
    call (a batch's texts, a pre-tokenized sentence's words, are many).

    >>> changed_among("NFC", ["plain", "e\u0301", "caf\xe9", "x\u0301"]), changed_among("NFD", ["caf\xe9", "ok"])
    ([1], [0])
    """
    if all(map(str.isascii, texts)):
        return []
    if not _COMPOSING[form]:
        return [k for k, text in enumerate(texts) if changes_text(form, text)]
    quick_check(form)   # (sets the tables' quick-check values on first use)
    verdicts = form_tables(form).quick_all(texts)
    if not verdicts.strip(b"\0"):
        return []
    return [k for k, verdict in enumerate(verdicts) if verdict and verdict_changes(form, texts[k], verdict)]


def verdict_changes(form: str, text: str, verdict: int) -> bool:
    """Whether ``form`` changes ``text``, given its quick check's ``verdict`` (0: it keeps it, 1: it
    changes it, 2: ``unicodedata.is_normalized`` tells).

    >>> verdict_changes("NFC", "a\u0316\u0301", 2), verdict_changes("NFC", "x\u0316\u0301", 2)
    (True, False)
    """
    return verdict == 1 or (verdict == 2 and not unicodedata.is_normalized(form, text))


def segment_edits(form: str) -> dict:
    """The segments :func:`segment_edit` remembers for ``form``, with their entries."""
    return _EDITS.setdefault(form, {})


def span_pairs(made: list[tuple[str, int]]) -> array:
    """For each char of ``made`` (what :func:`changes` gives), the ``(start, end)`` of the input chars
    it spans, flat: a char that stands for several spans its first one (Hugging Face's alignment),
    an inserted char (``change`` 1, never the first) the one before it.

    >>> span_pairs([("a", -1), ("b", 1), ("c", 0)]).tolist()     # a of two chars, b inserted after it
    [0, 1, 1, 2, 2, 3]
    """
    pairs = array("i")
    at = 0
    for _, change in made:
        if change > 0:
            pairs.append(at - 1)
            pairs.append(at)
        else:
            pairs.append(at)
            pairs.append(at + 1)
            at += 1 - change if change < 0 else 1
    return pairs


_SEGMENT_TABLES: dict[str, tuple[list[int], list[int]]] = {}


def _segment_tables(form: str) -> tuple[list[int], list[int]]:
    """(non-boundary code points, boundary code points that change alone) for ``form``."""
    if form not in _SEGMENT_TABLES:
        _SEGMENT_TABLES[form] = _find_segment_tables(form)
    return _SEGMENT_TABLES[form]


def _find_segment_tables(form: str) -> tuple[list[int], list[int]]:
    if not _COMPOSITIONS:
        _build_composition_table()
    decomposed = _DECOMPOSED_FORM[form]
    composing = _COMPOSING[form]
    inner: list[int] = []
    changing: list[int] = []
    # Any other char is its own lead, has no class, and changes not: neither list takes it.
    candidates = set(_decomposing()) | set(range(_S_BASE, _S_BASE + _S_COUNT))
    candidates |= set(compress(range(_SCAN_END), _classes()))
    if composing:
        candidates |= {ord(ch) for ch in _BACKWARD_COMBINING if ord(ch) < _SCAN_END}
    for cp in sorted(candidates):
        ch = chr(cp)
        if _S_BASE <= cp < _S_BASE + _S_COUNT:
            lead = chr(_L_BASE + (cp - _S_BASE) // (_V_COUNT * _T_COUNT))
        elif unicodedata.decomposition(ch):
            lead = _full_decomposition(ch, decomposed)[0]
        else:
            lead = ch
        if _combining(lead) or (composing and lead in _BACKWARD_COMBINING):
            inner.append(cp)
        elif lead != ch and unicodedata.normalize(form, ch) != ch:
            changing.append(cp)
    return inner, changing


def char_set(code_points: list[int]) -> str:
    """A regex fragment matching one char of the sorted ``code_points``.

    ``re`` checks a class of BMP chars with a bitmap, but a class that also
    holds astral chars with a list of ranges, several times slower. So the
    astral part is tried only on astral chars.

    >>> re.fullmatch(f"(?:{char_set([0x61, 0x62, 0x63, 0x1F600])})+", "cab😀") is not None
    True
    """
    bmp = [cp for cp in code_points if cp < 0x10000]
    astral = [cp for cp in code_points if cp >= 0x10000]
    parts = []
    if bmp:
        parts.append(f"[{_char_class(bmp)}]")
    if astral:
        parts.append(f"(?=[\\U00010000-\\U0010ffff])[{_char_class(astral)}]")
    return "(?:" + "|".join(parts) + ")" if parts else "(?!)"


def _char_class(code_points: list[int]) -> str:
    """A character-class body for sorted code points, as ranges."""
    parts: list[str] = []
    i = 0
    while i < len(code_points):
        j = i
        while j + 1 < len(code_points) and code_points[j + 1] == code_points[j] + 1:
            j += 1
        lo, hi = code_points[i], code_points[j]
        parts.append(_escape(lo) if lo == hi else f"{_escape(lo)}-{_escape(hi)}")
        i = j + 1
    return "".join(parts)


def _escape(cp: int) -> str:
    return f"\\U{cp:08x}"
