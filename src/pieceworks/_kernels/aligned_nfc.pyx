# cython: language_level=3
# distutils: language = c++
"""The segments a Unicode normalization may change, found and spliced in one pass (``fast/_aligned.py``).

Two normalizers: the Unicode forms (:func:`splice_segments`, below) and
SentencePiece's charsmap (:func:`splice_clusters`: the grapheme clusters
holding a char some rule begins with, cut by UAX #29's rules from a table,
each replaced by the normalizer's own edit of it; before, each word such a
cluster was in took a regex and the edit list per char, in Python).

:class:`~pieceworks.fast._aligned.AlignedNfc` normalizes a text part by
part: the segments NFC may change (a char and the marks after it, or a char
that changes alone: ``_unicode_forms.changed_segments``) are replaced by
what the normalizer's own edit list makes of them, the stretches between
them kept. In Python each segment cost a regex match, a slice, a check and
the bookkeeping of two appends (about 7 µs); text in NFD has a segment
every other char, and its encoding took twelve times as long as the same
text in NFC. Here one loop reads the chars, finds the segments by a table
of each char's kind, looks each up in a dict of the segments seen (their
text and their map, worked out once by Python) and writes the
:class:`AlignedText` arrays in C.

Segments are found exactly as ``_unicode_forms._segmenter``'s regex finds
them, line by line: an INNER char (one that may join the char before it)
run after any other char, or at a line's start; or a CHANGING char alone.

A long segment (a char with thousands of marks) is not remembered, and its
edit, worked out per char in Python, cost over a microsecond a char: a
megabyte of one letter and its marks took fifty times as long as prose.
:class:`FormTables` works it out in C from the same tables.

A text normalized whole needs no dict: :meth:`FormTables.normalize_aligned`
finds the same segments and edits each in C, without the GIL (about 8 ns a
char of text in NFD), writing each output char's span in the input; the
byte-level BPE kernel's batch jobs normalize so on their threads.

>>> kinds = bytearray(0x80); kinds[ord("~")] = INNER; kinds[ord("*")] = CHANGING
>>> edits = {"a~": ("A", b"\\x00\\x00\\x00\\x00\\x01\\x00\\x00\\x00"), "*": None}
>>> from array import array
>>> parts, arrays = [], [array("q"), array("q"), array("q"), array("i"), array("i")]
>>> splice_segments("xa~*b", 0, 5, bytes(kinds), edits, None, parts, *arrays, 0)
4
>>> parts, [a.tolist() for a in arrays]
(['x', 'A', '*b'], [[0, 1, 2], [0, 1, 1], [-1, 0, -1], [0], [1]])
"""

from cpython.array cimport array, extend_buffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_Substring
from cython.operator cimport dereference as deref
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

cdef extern from "<algorithm>" namespace "std" nogil:
    # (It cannot fail: without memory for its buffer it sorts in place, more slowly.)
    void stable_sort[Iter, Compare](Iter first, Iter last, Compare comp) noexcept nogil

cdef extern from "Python.h":
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    int PyUnicode_4BYTE_KIND
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) nogil
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value) nogil
    object PyBytes_FromStringAndSize(const char* v, Py_ssize_t size)
    int PyUnicode_KIND(object o)
    const void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)

# A char's kind, one byte each in the table (code points past it are neither).
cpdef enum:
    INNER = 1       # may join the char before it (a mark, a jamo vowel or trailing consonant)
    CHANGING = 2    # changes when alone


def splice_segments(str source, Py_ssize_t start, Py_ssize_t end, bytes kinds, dict edits, edit_of,
                    list parts, array seg_starts, array seg_shift, array seg_map, array map_starts,
                    array map_ends, Py_ssize_t length):
    """Append ``source[start:end]`` to an :class:`AlignedText`'s parts and arrays, its segments
    replaced by their edits; the text's new length.

    ``edits`` maps a segment to None (no change) or ``(replacement, map)``:
    ``map`` the int32 pairs, in machine order, of the source chars each
    replacement char spans (relative to the segment's start). A segment not
    in it is given to ``edit_of``, which returns its entry (and may keep it
    in ``edits``). The arrays are ``AlignedText``'s, ``length`` its length.
    """
    cdef int kind = PyUnicode_KIND(source)
    cdef const void* data = PyUnicode_DATA(source)
    cdef const uint8_t* table = <const uint8_t*>PyBytes_AS_STRING(kinds)
    cdef Py_ssize_t table_size = PyBytes_GET_SIZE(kinds)
    cdef Py_ssize_t i = start, j
    cdef Py_UCS4 c
    cdef Splice splice = Splice(source, start, parts, length, len(map_starts))
    cdef PyObject* hit
    _check_range("splice_segments", source, start, end)
    while i < end:
        c = PyUnicode_READ(kind, data, i)
        j = i + 1
        if _kind(c, table, table_size) & INNER:
            pass        # marks at a line's start (anywhere else they follow a segment's first char)
        elif c != u"\n" and j < end and _kind(PyUnicode_READ(kind, data, j), table, table_size) & INNER:
            pass        # a char and the marks after it (a line feed ends a line: not one of them)
        elif c < table_size and table[c] & CHANGING:
            j = i       # a char that changes alone
        else:
            i += 1
            continue
        while j < end and _kind(PyUnicode_READ(kind, data, j), table, table_size) & INNER:
            j += 1
        if j == i:
            j = i + 1
        segment = PyUnicode_Substring(source, i, j)
        hit = PyDict_GetItem(edits, segment)
        entry = <object>hit if hit != NULL else edit_of(segment)
        if entry is not None:
            splice.replace(i, j, (<tuple>entry)[0], (<tuple>entry)[1])
        i = j
    return splice.finish(end, seg_starts, seg_shift, seg_map, map_starts, map_ends)


cdef int _check_range(str name, str source, Py_ssize_t start, Py_ssize_t end) except -1:
    if not 0 <= start <= end <= PyUnicode_GET_LENGTH(source):
        raise ValueError(f"{name}: the range {start}:{end} is not inside the text of {PyUnicode_GET_LENGTH(source)} chars")
    return 0


cdef class Splice:
    """An :class:`AlignedText`'s parts and arrays as a splice appends to them: stretches of
    ``source`` kept as they are, between segments replaced by an edit (see ``splice_segments``)."""

    cdef str source
    cdef list parts
    cdef Py_ssize_t done             # where the stretch not yet kept begins in source
    cdef Py_ssize_t length           # chars made so far
    cdef Py_ssize_t n_maps           # map pairs so far
    cdef vector[int64_t] starts, shifts, maps
    cdef vector[int32_t] map_a, map_b

    def __cinit__(self, str source, Py_ssize_t start, list parts, Py_ssize_t length, Py_ssize_t n_maps):
        self.source, self.parts, self.done, self.length, self.n_maps = source, parts, start, length, n_maps

    cdef void keep_to(self, Py_ssize_t i) except *:
        """Keep ``source[done:i]`` as it is."""
        if i > self.done:
            self.starts.push_back(self.length)
            self.shifts.push_back(self.done - self.length)
            self.maps.push_back(-1)
            self.parts.append(PyUnicode_Substring(self.source, self.done, i))
            self.length += i - self.done
            self.done = i

    cdef void replace(self, Py_ssize_t i, Py_ssize_t j, str replacement, bytes pair_bytes) except *:
        """Put ``replacement`` for ``source[i:j]`` (``pair_bytes``: its map, relative to ``i``)."""
        cdef const int32_t* pairs = <const int32_t*>PyBytes_AS_STRING(pair_bytes)
        cdef Py_ssize_t k, count = PyBytes_GET_SIZE(pair_bytes) // 8
        self.keep_to(i)
        self.starts.push_back(self.length)
        self.shifts.push_back(i)
        self.maps.push_back(self.n_maps)
        for k in range(count):
            self.map_a.push_back(pairs[2 * k])
            self.map_b.push_back(pairs[2 * k + 1])
        self.n_maps += count
        self.parts.append(replacement)
        self.length += count
        self.done = j

    cdef void charge_last(self, Py_ssize_t i) noexcept:
        """The last char made, inserted by the replacement that ends at ``i``, now stands for ``source[i]``
        (a deletion there is charged to it)."""
        cdef size_t last = self.map_a.size() - 1
        self.map_a[last] = <int32_t>(i - self.shifts.back())
        self.map_b[last] = <int32_t>(i - self.shifts.back() + 1)

    cdef Py_ssize_t finish(self, Py_ssize_t end, array seg_starts, array seg_shift, array seg_map, array map_starts,
                           array map_ends) except -1:
        """Keep the rest up to ``end``, write the arrays; the text's new length."""
        self.keep_to(end)
        if self.starts.size():
            extend_buffer(seg_starts, <char*>self.starts.data(), self.starts.size())
            extend_buffer(seg_shift, <char*>self.shifts.data(), self.shifts.size())
            extend_buffer(seg_map, <char*>self.maps.data(), self.maps.size())
        if self.map_a.size():
            extend_buffer(map_starts, <char*>self.map_a.data(), self.map_a.size())
            extend_buffer(map_ends, <char*>self.map_b.data(), self.map_b.size())
        return self.length


# -- grapheme clusters, for the Precompiled (SentencePiece charsmap) normalizer ------------------------

# A char's grapheme cluster break class, the low four bits of its byte in the grapheme table
# (``_unicode_tables.grapheme_table``, in the order of its GRAPHEME_CLASSES), and the flags above them.
cdef enum:
    G_OTHER, G_CR, G_LF, G_CONTROL, G_EXTEND, G_ZWJ, G_SPACING_MARK, G_PREPEND, G_L, G_V, G_T, G_LV, G_LVT, G_RI
    G_CLASS = 0x0F
    G_PICTOGRAPHIC = 0x10
    G_INCB = 0x60
    G_INCB_CONSONANT = 0x20
    G_INCB_EXTEND = 0x40
    G_INCB_LINKER = 0x60

cpdef enum:
    RULE_START = 0x80       # (set by the caller's table) a charsmap rule may begin with this char

DEF N_CODE_POINTS = 0x110000


cdef int _check_table(str name, bytes table) except -1:
    if PyBytes_GET_SIZE(table) != N_CODE_POINTS:
        raise ValueError(f"{name}: the table has {PyBytes_GET_SIZE(table)} bytes, not one per code point")
    return 0


def splice_clusters(str source, Py_ssize_t start, Py_ssize_t end, bytes table, dict edits, edit_of,
                    list parts, array seg_starts, array seg_shift, array seg_map, array map_starts,
                    array map_ends, Py_ssize_t length):
    """:func:`splice_segments` for the Precompiled normalizer: the segments are the grapheme clusters
    (as ``regex``'s ``\\X`` cuts them) that hold a char ``table`` flags RULE_START, or in a cluster
    of 6 UTF-8 bytes or more, each such char (the normalizer's rules then apply char by char); -1
    when Hugging Face's alignment cannot be made so.

    ``table``: the grapheme table with RULE_START set (a byte per code
    point). ``edits`` and ``edit_of`` give a cluster's entry: None, or
    ``(replacement, map, charged, inserts_last)``. ``charged``: the
    cluster's first chars are deleted while it has made nothing yet, which
    Hugging Face charges to the char made before it (the map already starts
    past them). That char's span holds, unless it was inserted (the last
    char of a replacement with ``inserts_last``): it then stands for the
    first char deleted. With no char made before it in
    ``source[start:end]``, the deletion is charged to nothing, and every
    later char aligns one place early: -1, for the caller's general path to
    do the same.

    >>> from pieceworks._unicode_tables import grapheme_table
    >>> table = bytearray(grapheme_table()); table[ord("e")] |= RULE_START
    >>> edits = {"e\\u0301": ("\\xe9", b"\\x00\\x00\\x00\\x00\\x01\\x00\\x00\\x00", False, False), "e": None}
    >>> from array import array
    >>> parts, arrays = [], [array("q"), array("q"), array("q"), array("i"), array("i")]
    >>> splice_clusters("xe\\u0301e!", 0, 5, bytes(table), edits, None, parts, *arrays, 0)
    4
    >>> parts, [a.tolist() for a in arrays]
    (['x', '\\xe9', 'e!'], [[0, 1, 2], [0, 1, 1], [-1, 0, -1], [0], [1]])
    """
    cdef int kind = PyUnicode_KIND(source)
    cdef const void* data = PyUnicode_DATA(source)
    cdef const uint8_t* classes = <const uint8_t*>PyBytes_AS_STRING(table)
    cdef Py_ssize_t i = start, j, step
    cdef bint made = False          # some char made before i (one a deletion may be charged to)
    cdef bint inserted = False      # the last char made was inserted by the replacement right before i
    cdef uint8_t seen
    cdef Splice splice = Splice(source, start, parts, length, len(map_starts))
    cdef PyObject* hit
    _check_table("splice_clusters", table)
    _check_range("splice_clusters", source, start, end)
    while i < end:
        j = _cluster_end(kind, data, i, end, classes, &seen)
        if not seen & RULE_START:
            made, inserted = True, False
            i = j
            continue
        # Hugging Face replaces a cluster of fewer than 6 UTF-8 bytes whole, a longer one char by char:
        # each char is then a segment of its own (a letter with a megabyte of marks is no key to keep).
        step = j - i if _utf8_below_6(kind, data, i, j) else 1
        while i < j:
            if step == 1 and not classes[PyUnicode_READ(kind, data, i)] & RULE_START:
                made, inserted = True, False
                i += 1
                continue
            segment = PyUnicode_Substring(source, i, i + step)
            hit = PyDict_GetItem(edits, segment)
            entry = <object>hit if hit != NULL else edit_of(segment)
            if entry is None:
                made, inserted = True, False
            else:
                replacement, pair_bytes, charged, inserts_last = <tuple>entry
                if charged:
                    if not made:
                        return -1
                    if inserted:
                        splice.charge_last(i)
                        inserted = False
                splice.replace(i, i + step, replacement, pair_bytes)
                if len(replacement):
                    made, inserted = True, inserts_last
            i += step
    return splice.finish(end, seg_starts, seg_shift, seg_map, map_starts, map_ends)


cdef bint _utf8_below_6(int kind, const void* data, Py_ssize_t i, Py_ssize_t j) noexcept:
    """Whether the chars ``i:j`` take fewer than 6 bytes in UTF-8 (a surrogate, as surrogatepass
    writes it, 3)."""
    cdef Py_ssize_t total = 0
    cdef Py_UCS4 c
    while i < j and total < 6:
        c = PyUnicode_READ(kind, data, i)
        total += 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4
        i += 1
    return total < 6


def cluster_ends(str text, bytes table):
    """Where each grapheme cluster of ``text`` ends (for tests against ``regex``'s ``\\X``).

    >>> from pieceworks._unicode_tables import grapheme_table
    >>> cluster_ends("ae\\u0301\\r\\n\\U0001F1EB\\U0001F1F7\\U0001F1EB", grapheme_table())
    [1, 3, 5, 7, 8]
    """
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(text)
    cdef uint8_t seen
    _check_table("cluster_ends", table)
    out = []
    while i < n:
        i = _cluster_end(kind, data, i, n, <const uint8_t*>PyBytes_AS_STRING(table), &seen)
        out.append(i)
    return out


cdef Py_ssize_t _cluster_end(int kind, const void* data, Py_ssize_t i, Py_ssize_t end, const uint8_t* table,
                             uint8_t* seen) noexcept:
    """Where the grapheme cluster starting at ``i`` ends (UAX #29's rules, read pair by pair with the
    state the extended ones need); ``seen``: the OR of its chars' table bytes."""
    cdef uint8_t prev = table[PyUnicode_READ(kind, data, i)], cur
    cdef uint8_t before = prev & G_CLASS, klass
    cdef Py_ssize_t j = i + 1
    cdef int emoji = 1 if prev & G_PICTOGRAPHIC else 0     # GB11: 1 after ExtPict Extend*, 2 after its ZWJ
    cdef int flags = 1 if before == G_RI else 0           # GB12/13: regional indicators in a row
    cdef int conjunct = 1 if prev & G_INCB == G_INCB_CONSONANT else 0    # GB9c: 1 after a consonant, 2 its linker
    seen[0] = prev
    if before == G_CR:                                      # GB3, GB4
        if j < end and table[PyUnicode_READ(kind, data, j)] & G_CLASS == G_LF:
            seen[0] |= table[PyUnicode_READ(kind, data, j)]
            j += 1
        return j
    if before == G_LF or before == G_CONTROL:               # GB4
        return j
    while j < end:
        cur = table[PyUnicode_READ(kind, data, j)]
        klass = cur & G_CLASS
        if klass == G_CR or klass == G_LF or klass == G_CONTROL:
            break                                           # GB5
        if not (klass == G_EXTEND or klass == G_ZWJ or klass == G_SPACING_MARK          # GB9, GB9a
                or before == G_PREPEND                                                  # GB9b
                or before == G_L and (klass == G_L or klass == G_V or klass == G_LV or klass == G_LVT)  # GB6
                or (before == G_LV or before == G_V) and (klass == G_V or klass == G_T)                 # GB7
                or (before == G_LVT or before == G_T) and klass == G_T                                  # GB8
                or cur & G_INCB == G_INCB_CONSONANT and conjunct == 2                                   # GB9c
                or cur & G_PICTOGRAPHIC and emoji == 2                                                  # GB11
                or klass == G_RI and flags % 2 == 1):                                                   # GB12, GB13
            break
        if cur & G_PICTOGRAPHIC:
            emoji = 1
        elif emoji == 1 and klass == G_EXTEND:
            emoji = 1
        elif emoji == 1 and klass == G_ZWJ:
            emoji = 2
        else:
            emoji = 0
        flags = flags + 1 if klass == G_RI else 0
        if cur & G_INCB == G_INCB_CONSONANT:
            conjunct = 1
        elif conjunct and cur & G_INCB == G_INCB_LINKER:
            conjunct = 2
        elif not (conjunct and cur & G_INCB == G_INCB_EXTEND):
            conjunct = 0
        seen[0] |= cur
        before = klass
        j += 1
    return j


cdef inline uint8_t _kind(Py_UCS4 c, const uint8_t* table, Py_ssize_t table_size) noexcept:
    return table[c] if c < table_size else 0


# -- a long segment's edit ---------------------------------------------------------------

cdef inline int32_t span_of(int32_t change, int32_t at, int32_t* pair) noexcept nogil:
    """Write into ``pair`` the input chars an output char with this ``change`` spans, ``at`` being
    the first input char not yet consumed; where the next one starts. A new char (change 1) spans
    the char before it; one that replaces a char and drops ``-change`` more spans that first char.

    (Hugging Face's alignment: the é of e + U+0301 spans the e.)"""
    if change > 0:
        pair[0], pair[1] = at - 1, at
        return at
    pair[0], pair[1] = at, at + 1
    return at + 1 - change


cdef bint by_class(const Item& a, const Item& b) noexcept nogil:
    return a.klass < b.klass

# Hangul: syllables compose algorithmically from leading, vowel and trailing jamo.
cdef enum:
    S_BASE = 0xAC00
    L_BASE = 0x1100
    V_BASE = 0x1161
    T_BASE = 0x11A7
    L_COUNT = 19
    V_COUNT = 21
    T_COUNT = 28
    S_COUNT = L_COUNT * V_COUNT * T_COUNT


cdef class FormTables:
    """One normalization form's tables in C, for :meth:`edit` (the edit of a long segment).

    ``classes``: each code point's canonical combining class, a byte each;
    ``decompositions``: code point to its full decomposition (a str), for
    every char that has one other than itself; ``compositions``: two-char
    str to its primary composite (Hangul is worked out, not listed);
    ``composing``: whether the form composes (NFC, NFKC).

    >>> from array import array
    >>> tables = FormTables(bytes(0x301) + bytes([230]), {0xe9: "e\\u0301"}, {"e\\u0301": "\\xe9"}, True)
    >>> made, pairs = tables.edit("e\\u0301\\u0301")       # e and a mark compose; the second mark stays
    >>> made == "\\xe9\\u0301", array("i", pairs).tolist()
    (True, [0, 1, 2, 3])
    """

    # (Its fields are declared in aligned_nfc.pxd.)

    def __init__(self, bytes classes, dict decompositions, dict compositions, bint composing):
        cdef Py_ssize_t k
        self.classes.assign(<const uint8_t*>PyBytes_AS_STRING(classes),
                            <const uint8_t*>PyBytes_AS_STRING(classes) + PyBytes_GET_SIZE(classes))
        self.decomp_at.assign(self.classes.size(), 0)
        for cp, chars in decompositions.items():
            if cp >= <Py_ssize_t>self.decomp_at.size():
                raise ValueError(f"FormTables: U+{cp:04X} decomposes but is past the class table")
            self.decomp_at[cp] = self.decomp.size() + 1
            self.decomp.push_back(len(chars))
            for k in range(len(chars)):
                self.decomp.push_back(ord(chars[k]))
        for pair, composite in compositions.items():
            self.pairs[(<uint64_t>ord(pair[0])) << 21 | ord(pair[1])] = ord(composite)
            if ord(pair[1]) >= <Py_ssize_t>self.seconds.size():
                self.seconds.resize(ord(pair[1]) + 1, 0)
            self.seconds[ord(pair[1])] = 1
        self.composing = composing

    @staticmethod
    def from_words(bytes classes not None, bytes words not None, bytes pairs not None, bint composing):
        """The tables of ``FormTables(classes, decompositions, compositions, composing)`` from
        uint32s in machine order (``_unicode_forms``' disk cache keeps them so): ``words`` holds
        each decomposition as its code point, its length and its chars, ``pairs`` each
        composition as its first char, second char and composite. ValueError if they are not
        such lists.

        >>> from array import array
        >>> words, pairs = array("I", [0xe9, 2, 0x65, 0x301]), array("I", [0x65, 0x301, 0xe9])
        >>> t = FormTables.from_words(bytes(0x301) + bytes([230]), words.tobytes(), pairs.tobytes(), True)
        >>> t.edit("e\u0301")[0] == "\xe9"
        True
        """
        cdef FormTables tables = FormTables.__new__(FormTables)
        cdef const uint32_t* w = <const uint32_t*>PyBytes_AS_STRING(words)
        cdef const uint32_t* p = <const uint32_t*>PyBytes_AS_STRING(pairs)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(words) // 4, n_pairs = PyBytes_GET_SIZE(pairs) // 4, i = 0, k
        if PyBytes_GET_SIZE(words) % 4 or PyBytes_GET_SIZE(pairs) % 12:
            raise ValueError("FormTables.from_words: the lists are not whole uint32s (pairs: triples)")
        tables.classes.assign(<const uint8_t*>PyBytes_AS_STRING(classes),
                              <const uint8_t*>PyBytes_AS_STRING(classes) + PyBytes_GET_SIZE(classes))
        tables.decomp_at.assign(tables.classes.size(), 0)
        while i < n:
            if i + 1 >= n or w[i] >= tables.decomp_at.size() or w[i + 1] > <uint32_t>(n - i - 2):
                raise ValueError(f"FormTables.from_words: the decomposition at word {i} does not fit")
            tables.decomp_at[w[i]] = tables.decomp.size() + 1
            tables.decomp.push_back(w[i + 1])
            for k in range(i + 2, i + 2 + w[i + 1]):
                if w[k] > 0x10FFFF:
                    raise ValueError(f"FormTables.from_words: word {k} is no code point")
                tables.decomp.push_back(w[k])
            i += 2 + w[i + 1]
        for i in range(0, n_pairs, 3):
            if p[i] > 0x10FFFF or p[i + 1] > 0x10FFFF or p[i + 2] > 0x10FFFF:
                raise ValueError(f"FormTables.from_words: pair {i // 3} is not of code points")
            tables.pairs[(<uint64_t>p[i]) << 21 | p[i + 1]] = p[i + 2]
            if p[i + 1] >= tables.seconds.size():
                tables.seconds.resize(p[i + 1] + 1, 0)
            tables.seconds[p[i + 1]] = 1
        tables.composing = composing
        return tables

    def set_quick(self, bytes qc not None):
        """The form's quick-check values a byte per code point (0 yes, 1 no, 2 maybe: ``_unicode_forms``'s
        ``quick_table``), for :meth:`quick`; no longer than the class table."""
        if PyBytes_GET_SIZE(qc) > <Py_ssize_t>self.classes.size():
            raise ValueError("FormTables.set_quick: the table is longer than the class table")
        self.qc.assign(<const uint8_t*>PyBytes_AS_STRING(qc), <const uint8_t*>PyBytes_AS_STRING(qc) + PyBytes_GET_SIZE(qc))
        self.plain_below = 0
        while self.plain_below < self.qc.size() and self.qc[self.plain_below] == 0 \
                and self.classes[self.plain_below] == 0:
            self.plain_below += 1
        self.plain_bits = 0 if self.plain_below == 0 else 1
        while self.plain_bits * 2 <= self.plain_below:
            self.plain_bits *= 2

    def quick(self, str text not None):
        """0 if the form leaves ``text`` as it is, 1 if it changes it, 2 if this cannot tell.

        Unicode's quick check (UAX #15): marks out of canonical order, or a
        char the form never keeps (``no``), change the text; a text of chars
        it always keeps, in order, stays. A char that may join the one
        before it (``maybe``) changes the text when it stands right after a
        starter it composes with; otherwise only normalizing tells (2).
        ``unicodedata.is_normalized`` normalizes the whole text in that
        case, as the caller then does anyway for a text it changes.

        >>> from pieceworks._unicode_forms import quick_check
        >>> [quick_check("NFC")(t) for t in ["plain é", "e\u0301", "x\u0301", "\u212b", "x\u0316", "x\u0301\u0316"]]
        [0, 1, 2, 1, 0, 1]
        """
        return self._quick_text(text)

    def quick_all(self, list texts not None) -> bytes:
        """:meth:`quick` of each of ``texts`` (strs), a byte each, in one call (a batch's texts,
        a pre-tokenized sentence's words: no Python call a text).

        >>> from pieceworks._unicode_forms import form_tables, quick_check
        >>> quick_check("NFC") and list(form_tables("NFC").quick_all(["plain", "e\u0301", "x\u0301"]))
        [0, 1, 2]
        """
        cdef Py_ssize_t n = len(texts), i
        cdef bytes out = PyBytes_FromStringAndSize(NULL, n)
        cdef char* verdicts = PyBytes_AS_STRING(out)
        for i in range(n):
            text = texts[i]
            if type(text) is not str:
                raise TypeError(f"FormTables.quick_all: texts[{i}] is {type(text).__name__}, not str")
            verdicts[i] = <char>self._quick_text(text)
        return out

    cdef int _quick_text(self, str text):
        cdef int kind = PyUnicode_KIND(text)
        cdef const void* data = PyUnicode_DATA(text)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        if self.qc.empty():
            return 2
        if kind == 1:
            return self._quick(<const uint8_t*>data, n)
        if kind == 2:
            return self._quick(<const uint16_t*>data, n)
        return self._quick(<const uint32_t*>data, n)

    cdef int _quick(self, const ucs_t* s, Py_ssize_t n) noexcept:
        """:meth:`quick` of the chars ``s[:n]``."""
        cdef Py_ssize_t i = 0, k
        cdef uint32_t c, before = 0, plain = self.plain_below, bits = self.plain_bits, block
        cdef uint8_t cls, last = 0, q
        cdef bint after_starter = False, unsure = False
        if ucs_t is uint8_t and plain > 0xFF:
            return 0    # (Latin-1 alone: no mark, nothing to compose)
        while i < n:
            c = s[i]
            if c < plain:   # (most text: a run of starters kept as they are, read alone)
                i += 1
                # 16 chars at a time while all are below a power of two that is plain (an OR of them: the
                # compiler's vector loop), then one by one
                while i + 16 <= n:
                    block = 0
                    for k in range(16):
                        block |= s[i + k]
                    if block >= bits:
                        break
                    i += 16
                while i < n and s[i] < plain:
                    i += 1
                before = s[i - 1]
                last = 0
                after_starter = True
                continue
            if c >= self.qc.size():
                return 2
            cls = self.classes[c]
            if cls != 0 and last > cls:
                return 1
            q = self.qc[c]
            if q == 1:
                return 1
            if q == 2:
                if after_starter and self.compose(before, c) != 0:
                    return 1
                unsure = True
            last = cls
            before = c
            after_starter = cls == 0
            i += 1
        return 2 if unsure else 0

    cdef uint8_t klass(self, uint32_t c) noexcept nogil:
        return self.classes[c] if c < self.classes.size() else 0

    cdef uint32_t compose(self, uint32_t a, uint32_t b) noexcept nogil:
        """The primary composite of ``a b``, or 0."""
        if L_BASE <= a < L_BASE + L_COUNT and V_BASE <= b < V_BASE + V_COUNT:
            return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT
        if S_BASE <= a < S_BASE + S_COUNT and (a - S_BASE) % T_COUNT == 0 and T_BASE < b < T_BASE + T_COUNT:
            return a + b - T_BASE
        if b >= self.seconds.size() or not self.seconds[b]:
            return 0        # (most pairs a text holds: no hash lookup for them)
        cdef unordered_map[uint64_t, uint32_t].iterator found = self.pairs.find((<uint64_t>a) << 21 | b)
        return 0 if found == self.pairs.end() else deref(found).second

    def edit(self, str segment):
        """What the form makes of ``segment`` and the int32 pairs of the chars each output char spans,
        as ``_unicode_forms.segment_edit`` gives them (the crate's decompose, reorder and compose)."""
        cdef vector[Item] items
        cdef Py_ssize_t n = len(segment)
        items.reserve(n)        # (a char makes one item at least: no growing a megabyte's items by copies)
        self._decompose(PyUnicode_KIND(segment), PyUnicode_DATA(segment), 0, n, items)
        if self.composing:
            self._recompose(items)
        return self._edit_of(items)

    cdef void _decompose(self, int kind, const void* data, Py_ssize_t start, Py_ssize_t end,
                         vector[Item]& items) noexcept nogil:
        """Append the crate's ``Decompositions`` of chars ``start:end`` to ``items``: each char's full
        decomposition (its first char a change of 0, the others 1), each run of marks sorted by class."""
        cdef Py_ssize_t i, pending = items.size()
        cdef uint32_t c, at, length, k
        cdef uint8_t last = 0
        cdef bint unsorted = False
        cdef Item item
        for i in range(start, end):
            c = PyUnicode_READ(kind, data, i)
            at = self.decomp_at[c] if c < self.decomp_at.size() else 0
            length = self.decomp[at - 1] if at else 1
            for k in range(length):
                item.cp = self.decomp[at + k] if at else c
                item.change = 1 if k else 0
                item.klass = self.klass(item.cp)
                if item.klass == 0:
                    if unsorted:
                        stable_sort(items.begin() + pending, items.end(), by_class)
                        unsorted = False
                    pending = items.size()
                elif item.klass < last:
                    unsorted = True
                last = item.klass
                items.push_back(item)
        if unsorted:
            stable_sort(items.begin() + pending, items.end(), by_class)

    def set_kinds(self, bytes kinds not None):
        """What each code point is to the segment scan of :meth:`normalize_aligned` (INNER, CHANGING
        or 0, a byte each: ``_unicode_forms.segment_kinds``); no longer than the class table."""
        if PyBytes_GET_SIZE(kinds) > <Py_ssize_t>self.classes.size():
            raise ValueError("FormTables.set_kinds: the table is longer than the class table")
        self.kinds.assign(<const uint8_t*>PyBytes_AS_STRING(kinds),
                          <const uint8_t*>PyBytes_AS_STRING(kinds) + PyBytes_GET_SIZE(kinds))

    cdef uint8_t _kind_of(self, uint32_t c) noexcept nogil:
        return self.kinds[c] if c < self.kinds.size() else 0

    def aligned(self, str text not None):
        """The form of the whole of ``text``, and the int32 pairs (machine order) of the chars of
        ``text`` each of its chars spans: :meth:`normalize_aligned` from Python.

        >>> from array import array
        >>> from pieceworks._unicode_forms import form_tables
        >>> made, pairs = form_tables("NFC").aligned("ae\\u0301\\u1100\\u1161!")
        >>> made == "a\\xe9\\uac00!", array("i", pairs).tolist()     # (a char composed: the first it was made of)
        (True, [0, 1, 1, 2, 3, 4, 5, 6])
        """
        cdef vector[uint32_t] out
        cdef vector[int32_t] spans
        cdef vector[Item] items
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), k
        if n > INT32_MAX:
            raise ValueError(f"FormTables.aligned: a text of {n} chars is past the int32 spans")
        self.normalize_aligned(PyUnicode_KIND(text), PyUnicode_DATA(text), n, out, spans, items)
        made = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.data(), out.size())
        return made, PyBytes_FromStringAndSize(<const char*>spans.data(), 4 * spans.size())

    cdef Py_ssize_t normalize_aligned(self, int kind, const void* data, Py_ssize_t n, vector[uint32_t]& out,
                                      vector[int32_t]& spans, vector[Item]& items) noexcept nogil:
        """The form of the ``n`` chars at ``data`` (a PEP 393 ``kind``) into ``out``, and for each of its
        chars the ``(start, end)`` of the input chars it spans into ``spans``; their count.

        The crate's state is fresh at a char that nothing before it can
        change (see ``_unicode_forms``), so only the segments
        :func:`splice_segments` finds (from :meth:`set_kinds`' table) go
        through the state machine; the chars between are copied. With no
        table set, the whole text is one segment (the same output,
        slower). ``items``: scratch. At most ``INT32_MAX`` chars.
        """
        cdef Py_ssize_t i = 0, j, k
        cdef uint32_t c
        cdef int32_t at
        cdef size_t base
        out.clear()
        spans.clear()
        out.reserve(n + n // 8 + 4)
        spans.reserve(2 * (n + n // 8 + 4))
        while i < n:
            if self.kinds.empty():
                j, i = n, 0
            else:
                c = PyUnicode_READ(kind, data, i)
                j = i + 1
                if self._kind_of(c) & INNER:
                    pass        # marks at a line's start (anywhere else they follow a segment's first char)
                elif c != u"\n" and j < n and self._kind_of(PyUnicode_READ(kind, data, j)) & INNER:
                    pass        # a char and the marks after it
                elif self._kind_of(c) & CHANGING:
                    j = i       # a char that changes alone
                else:
                    out.push_back(c)
                    spans.push_back(<int32_t>i)
                    spans.push_back(<int32_t>i + 1)
                    i += 1
                    continue
                while j < n and self._kind_of(PyUnicode_READ(kind, data, j)) & INNER:
                    j += 1
                if j == i:
                    j = i + 1
            items.clear()
            self._decompose(kind, data, i, j, items)
            if self.composing:
                self._recompose(items)
            at = <int32_t>i
            base = spans.size()
            spans.resize(base + 2 * items.size())
            for k in range(<Py_ssize_t>items.size()):
                out.push_back(items[k].cp)
                at = span_of(items[k].change, at, spans.data() + base + 2 * k)
            i = j
        return out.size()

    cdef void _recompose(self, vector[Item]& items) noexcept nogil:
        """The crate's ``Recompositions`` state machine (``_unicode_forms._recompose``), in place.

        The crate holds the starter that may still compose (the composee) and
        the chars it passed over (a buffer), and writes the composee, then the
        buffer, when the next starter takes its place. Here the composee is
        written when it is met, at its place in the output (``at``; updated
        there as it composes), and each char it passes over right after: the
        same output, with no buffer to copy. Each item read writes one at
        most, at or before its own place, so the output overwrites ``items``.
        """
        cdef Item ch
        cdef size_t k, write = 0, at = 0
        cdef bint have = False
        cdef int last = -1          # the class of the last char passed over (-1: none since the composee)
        cdef uint32_t composite
        for k in range(items.size()):
            ch = items[k]
            if have and not (last >= 0 and last >= ch.klass):     # (else blocked)
                composite = self.compose(items[at].cp, ch.cp)
                if composite:
                    items[at].cp = composite
                    items[at].change = items[at].change + ch.change - 1
                    continue
            if ch.klass == 0:       # a new composee
                at, have, last = write, True, -1
            elif have:
                last = ch.klass
            items[write] = ch
            write += 1
        items.resize(write)

    cdef tuple _edit_of(self, vector[Item]& items):
        """The text ``items`` spell and the int32 pairs of the chars each spans, made in place (a
        megabyte's text and pairs were a vector each, copied into their objects)."""
        cdef Py_ssize_t k, n = items.size()
        cdef uint32_t widest = 0
        cdef int32_t at = 0
        for k in range(n):
            widest = max(widest, items[k].cp)
        text = PyUnicode_New(n, widest)
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        pairs = PyBytes_FromStringAndSize(NULL, 8 * n)
        cdef int32_t* spans = <int32_t*>PyBytes_AS_STRING(pairs)
        for k in range(n):
            PyUnicode_WRITE(kind, data, k, items[k].cp)
            at = span_of(items[k].change, at, spans + 2 * k)
        return text, pairs


# -- spans through several steps (fast/normalized_first.py) ----------------------------------------

def composed_spans(bytes outer not None, bytes inner not None) -> bytes:
    """Spans into a source, made of ``outer`` (each char's span in a middle text, int32 pairs) and
    ``inner`` (each middle char's span in the source): a char spans from its first middle char's
    start to its last one's end (an empty span: from its first one's start, to it).

    One C loop (in Python, a 64 KB chunk's took 25 ms).

    >>> from array import array
    >>> pairs = lambda *xs: array("i", xs).tobytes()
    >>> array("i", composed_spans(pairs(0, 2, 2, 3, 3, 3), pairs(0, 1, 0, 1, 1, 3, 4, 5))).tolist()
    [0, 1, 1, 3, 4, 4]
    """
    cdef Py_ssize_t n = PyBytes_GET_SIZE(outer) // 8, m = PyBytes_GET_SIZE(inner) // 8, k, start, end
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 8 * n)
    cdef const int32_t* src = <const int32_t*>PyBytes_AS_STRING(outer)
    cdef const int32_t* mid = <const int32_t*>PyBytes_AS_STRING(inner)
    cdef int32_t* dst = <int32_t*>PyBytes_AS_STRING(out)
    for k in range(n):
        start, end = src[2 * k], src[2 * k + 1]
        if not 0 <= start < m or end > m or end < start:
            raise ValueError(f"composed_spans: span ({start}, {end}) is not within the {m} middle chars")
        dst[2 * k] = mid[2 * start]
        dst[2 * k + 1] = mid[2 * end - 1] if end > start else mid[2 * start]
    return out


def edited_spans(bytes base, Py_ssize_t n, list edits not None) -> bytes:
    """Each char's span after ``edits`` (``(start, end, content)``, in order, not overlapping) are
    made to a text of ``n`` chars whose spans are ``base`` (int32 pairs; None: each char's own):
    a kept char keeps its span, each content char takes the span of the last char its edit took
    out (``(0, 0)`` if it took none at the start), as Hugging Face aligns ``Replace`` and
    ``StripAccents``.

    >>> from array import array
    >>> array("i", edited_spans(None, 5, [(1, 3, "_"), (4, 5, "")])).tolist()
    [0, 1, 2, 3, 3, 4]
    """
    cdef Py_ssize_t total = n, done = 0, at = 0, k, start, end, size, j
    cdef const int32_t* own = NULL
    cdef int32_t pair0, pair1
    if base is not None:
        if PyBytes_GET_SIZE(base) != 8 * n:
            raise ValueError(f"edited_spans: {PyBytes_GET_SIZE(base) // 8} spans for a text of {n} chars")
        own = <const int32_t*>PyBytes_AS_STRING(base)
    for edit in edits:
        start, end = edit[0], edit[1]
        if not done <= start <= end <= n:
            raise ValueError(f"edited_spans: edit ({start}, {end}) is out of order or past the {n} chars")
        total += len(<str>edit[2]) - (end - start)
        done = end
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 8 * total)
    cdef int32_t* dst = <int32_t*>PyBytes_AS_STRING(out)
    done = 0
    for edit in edits:
        start, end, size = edit[0], edit[1], len(<str>edit[2])
        at = _kept_spans(own, done, start, dst, at)
        if end == 0:
            pair0 = pair1 = 0
        elif own == NULL:
            pair0, pair1 = <int32_t>(end - 1), <int32_t>end
        else:
            pair0, pair1 = own[2 * end - 2], own[2 * end - 1]
        for j in range(size):
            dst[2 * at], dst[2 * at + 1] = pair0, pair1
            at += 1
        done = end
    _kept_spans(own, done, n, dst, at)
    return out


cdef inline Py_ssize_t _kept_spans(const int32_t* own, Py_ssize_t first, Py_ssize_t stop, int32_t* dst,
                                   Py_ssize_t at) noexcept:
    """Chars ``first:stop``'s spans (``own``'s, or their own if NULL) written from ``dst[at]``; the next ``at``."""
    cdef Py_ssize_t k
    for k in range(first, stop):
        if own == NULL:
            dst[2 * at], dst[2 * at + 1] = <int32_t>k, <int32_t>(k + 1)
        else:
            dst[2 * at], dst[2 * at + 1] = own[2 * k], own[2 * k + 1]
        at += 1
    return at
