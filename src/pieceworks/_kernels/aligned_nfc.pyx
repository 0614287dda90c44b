# cython: language_level=3
# distutils: language = c++
"""The segments a Unicode normalization may change, found and spliced in one pass (``fast/_aligned.py``).

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
from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.vector cimport vector

cdef extern from "Python.h":
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) nogil
    int PyUnicode_KIND(object o)
    const void* PyUnicode_DATA(object o)

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
    cdef Py_ssize_t i = start, j, done = start, n_maps = len(map_starts)
    cdef Py_UCS4 c
    cdef vector[int64_t] starts, shifts, maps
    cdef vector[int32_t] map_a, map_b
    cdef PyObject* hit
    cdef const int32_t* pairs
    cdef Py_ssize_t k, count
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
            replacement, pair_bytes = <tuple>entry
            if i > done:                # the stretch kept before it
                starts.push_back(length)
                shifts.push_back(done - length)
                maps.push_back(-1)
                parts.append(PyUnicode_Substring(source, done, i))
                length += i - done
            starts.push_back(length)
            shifts.push_back(i)
            maps.push_back(n_maps)
            pairs = <const int32_t*>PyBytes_AS_STRING(pair_bytes)
            count = PyBytes_GET_SIZE(pair_bytes) // 8
            for k in range(count):
                map_a.push_back(pairs[2 * k])
                map_b.push_back(pairs[2 * k + 1])
            n_maps += count
            parts.append(replacement)
            length += count
            done = j
        i = j
    if end > done:
        starts.push_back(length)
        shifts.push_back(done - length)
        maps.push_back(-1)
        parts.append(PyUnicode_Substring(source, done, end))
        length += end - done
    if starts.size():
        extend_buffer(seg_starts, <char*>starts.data(), starts.size())
        extend_buffer(seg_shift, <char*>shifts.data(), shifts.size())
        extend_buffer(seg_map, <char*>maps.data(), maps.size())
    if map_a.size():
        extend_buffer(map_starts, <char*>map_a.data(), map_a.size())
        extend_buffer(map_ends, <char*>map_b.data(), map_b.size())
    return length


cdef inline uint8_t _kind(Py_UCS4 c, const uint8_t* table, Py_ssize_t table_size) noexcept:
    return table[c] if c < table_size else 0
