# cython: language_level=3
# distutils: language = c++
"""tokenizer.json text: a tokenizer's JSON data written character for character as
``json.dumps(data, ensure_ascii=False)`` writes it, compact or indented.

``json.dumps`` takes about 1 us a merge and 0.5 us a vocabulary entry (with
``indent`` its encoder is pure Python): Gemma 3's tokenizer.json (262 K tokens,
515 K merges, 6 K added tokens) took it most of a second, more than Hugging
Face's time to write the file. Here each value is written into one UTF-8
buffer, read as a str once at the end; a model's merges may come as
:class:`PairsById`, spelled from the merge table without a list for each.

>>> dumps({"a": 0, 'q"': [1, "x"]}), dumps([["a", "b"]], 2)
('{"a":0,"q\\\\"":[1,"x"]}', '[\\n  [\\n    "a",\\n    "b"\\n  ]\\n]')
"""

from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.math cimport INFINITY
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy, memset
from libcpp.vector cimport vector

from array import array     # (for the examples)

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)
    object PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)
    long long PyLong_AsLongLongAndOverflow(object obj, int* overflow) except? -1

# Not JSON text: a lone surrogate (json.dumps writes it, but it is not UTF-8), a key that is not a
# str, a value that is not an int, an item that is not a pair of strs. The caller then uses json.dumps.
cdef int NOT_WRITABLE = 1

cdef const char* HEX = b"0123456789abcdef"


cdef struct Writer:
    vector[char] buf        # the text so far is buf[:at - buf.data()]
    char* at
    char* end


cdef inline void room_for(Writer* w, size_t n):
    """At least ``n`` free bytes at ``w.at`` (the buffer doubles when short)."""
    cdef size_t used
    if <size_t>(w.end - w.at) < n:
        used = w.at - w.buf.data() if w.buf.size() else 0
        w.buf.resize(2 * (used + n))
        w.at = w.buf.data() + used
        w.end = w.buf.data() + w.buf.size()


cdef inline void put_char(Writer* w, char c):
    room_for(w, 1)
    w.at[0] = c
    w.at += 1


cdef int put_str(Writer* w, str s) except -1:
    """``s`` as a JSON string, escaped as json.dumps(ensure_ascii=False) escapes (``"``, ``\\``,
    and the controls below 0x20: \\b \\f \\n \\r \\t by name, the rest as \\u00xx); NOT_WRITABLE
    on a lone surrogate."""
    cdef Py_ssize_t i, n = PyUnicode_GET_LENGTH(s)
    cdef int kind = PyUnicode_KIND(s)
    cdef void* data = PyUnicode_DATA(s)
    cdef uint32_t c         # (a number: Cython makes a Py_UCS4 in arithmetic a str)
    cdef char* p
    room_for(w, 6 * <size_t>n + 2)      # (the most a char takes: \u00xx)
    p = w.at
    p[0] = b'"'
    p += 1
    for i in range(n):
        c = PyUnicode_READ(kind, data, i)
        if c < 0x80:
            if c >= 0x20 and c != 0x22 and c != 0x5C:
                p[0] = <char>c
                p += 1
            elif c == 0x22 or c == 0x5C:
                p[0] = b'\\'
                p[1] = <char>c
                p += 2
            elif c == 0x0A or c == 0x0D or c == 0x09 or c == 0x08 or c == 0x0C:
                p[0] = b'\\'
                p[1] = b'n' if c == 0x0A else b'r' if c == 0x0D else b't' if c == 0x09 else b'b' if c == 0x08 else b'f'
                p += 2
            else:
                p[0], p[1], p[2], p[3], p[4], p[5] = b'\\', b'u', b'0', b'0', HEX[c >> 4], HEX[c & 15]
                p += 6
        elif c < 0x800:
            p[0] = <char>(0xC0 | (c >> 6))
            p[1] = <char>(0x80 | (c & 0x3F))
            p += 2
        elif c < 0x10000:
            if 0xD800 <= c < 0xE000:
                return NOT_WRITABLE
            p[0] = <char>(0xE0 | (c >> 12))
            p[1] = <char>(0x80 | ((c >> 6) & 0x3F))
            p[2] = <char>(0x80 | (c & 0x3F))
            p += 3
        else:
            p[0] = <char>(0xF0 | (c >> 18))
            p[1] = <char>(0x80 | ((c >> 12) & 0x3F))
            p[2] = <char>(0x80 | ((c >> 6) & 0x3F))
            p[3] = <char>(0x80 | (c & 0x3F))
            p += 4
    p[0] = b'"'
    w.at = p + 1
    return 0


cdef int put_int(Writer* w, object value) except -1:
    """An exact int as decimal digits (NOT_WRITABLE for anything else, a bool too: json writes ``true``)."""
    cdef int overflow = 0
    cdef long long v
    cdef uint64_t magnitude
    cdef char digits[24]
    cdef int k = 24
    if type(value) is not int:
        return NOT_WRITABLE
    v = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow:
        return NOT_WRITABLE
    if v < 0:
        magnitude = <uint64_t>(-(v + 1)) + 1
    else:
        magnitude = <uint64_t>v
    while True:
        k -= 1
        digits[k] = <char>(48 + magnitude % 10)
        magnitude //= 10
        if magnitude == 0:
            break
    room_for(w, 25)
    if v < 0:
        w.at[0] = b'-'
        w.at += 1
    memcpy(w.at, digits + k, 24 - k)
    w.at += 24 - k
    return 0


cdef inline void put_break(Writer* w, int indent, int depth):
    """Pretty output's line break and the indentation of nesting level ``depth`` (none when compact)."""
    cdef size_t spaces = <size_t>(indent * depth)
    if indent > 0:
        room_for(w, spaces + 1)
        w.at[0] = b'\n'
        memset(w.at + 1, 32, spaces)
        w.at += spaces + 1


cdef inline void put_comma(Writer* w, int indent, int depth):
    put_char(w, b',')
    put_break(w, indent, depth)


cdef object as_str(Writer* w):
    return PyUnicode_DecodeUTF8(w.buf.data(), w.at - w.buf.data(), NULL)


cdef inline void start(Writer* w, size_t guess):
    w.buf.resize(guess)
    w.at = w.buf.data()
    w.end = w.at + guess


cdef class PairsById:
    """Merges as flat ``(left, right, merged)`` id triples and the tokens by id, written as
    ``[[tokens[left], tokens[right]], ...]`` with no list made for each merge (a big
    model's merges: half a million). BPE's ``_text_json`` gives its merges so.

    >>> PairsById(array("I", [0, 1, 2]), ["a", "b", "ab"]).as_lists()
    [['a', 'b']]
    """

    cdef readonly object ids
    cdef readonly list tokens

    def __init__(self, ids not None, list tokens not None):
        self.ids = ids
        self.tokens = tokens

    def as_lists(self) -> list:
        """The merges as lists (KeyError for an id without a token)."""
        return pair_lists(self.ids, self.tokens)


cdef int put_pair(Writer* w, object left, object right, int indent, int depth) except -1:
    """One merge, ``[left, right]``, at nesting level ``depth``; NOT_WRITABLE unless both are strs
    that can be written."""
    if type(left) is not str or type(right) is not str:
        return NOT_WRITABLE
    put_char(w, b'[')
    put_break(w, indent, depth + 1)
    if put_str(w, <str>left) == NOT_WRITABLE:
        return NOT_WRITABLE
    put_comma(w, indent, depth + 1)
    if put_str(w, <str>right) == NOT_WRITABLE:
        return NOT_WRITABLE
    put_break(w, indent, depth)
    put_char(w, b']')
    return 0


cdef int put_pairs_by_id(Writer* w, PairsById pairs, int indent, int depth) except -1:
    cdef const unsigned int[::1] ids = pairs.ids
    cdef list tokens = pairs.tokens
    cdef Py_ssize_t k, n = ids.shape[0] // 3, size = len(tokens)
    cdef unsigned int a, b
    if n == 0:
        put_char(w, b'[')
        put_char(w, b']')
        return 0
    put_char(w, b'[')
    for k in range(n):
        if k:
            put_char(w, b',')
        put_break(w, indent, depth + 1)
        a, b = ids[3 * k], ids[3 * k + 1]
        if a >= <size_t>size or b >= <size_t>size:
            return NOT_WRITABLE
        if put_pair(w, tokens[a], tokens[b], indent, depth + 1) == NOT_WRITABLE:
            return NOT_WRITABLE
    put_break(w, indent, depth)
    put_char(w, b']')
    return 0


cdef int put_float(Writer* w, double x) except -1:
    """As json.dumps writes a float: its repr, or NaN, Infinity, -Infinity."""
    cdef bytes text
    if x != x:
        text = b"NaN"
    elif x == INFINITY:
        text = b"Infinity"
    elif x == -INFINITY:
        text = b"-Infinity"
    else:
        text = repr(x).encode("ascii")
    room_for(w, len(text))
    memcpy(w.at, <const char*>text, len(text))
    w.at += len(text)
    return 0


cdef int put_value(Writer* w, object obj, int indent, int depth) except -1:
    """``obj`` at nesting level ``depth``, as json.dumps writes it; NOT_WRITABLE for what only
    json.dumps writes (a type other than dict, list, tuple, str, int, float, bool, None and
    PairsById; a key that is not a str; a lone surrogate; nesting past 100 levels: a cycle)."""
    cdef type kind = type(obj)
    cdef bint first = True
    if depth > 100:
        return NOT_WRITABLE
    if kind is str:
        return put_str(w, <str>obj)
    if obj is None or obj is True or obj is False:
        text = b"null" if obj is None else b"true" if obj is True else b"false"
        room_for(w, 5)
        memcpy(w.at, <const char*>text, len(text))
        w.at += len(text)
        return 0
    if kind is int:
        return put_int(w, obj)
    if kind is float:
        return put_float(w, <double>obj)
    if kind is dict:
        if not obj:
            put_char(w, b'{')
            put_char(w, b'}')
            return 0
        put_char(w, b'{')
        for key, value in (<dict>obj).items():
            if not first:
                put_char(w, b',')
            first = False
            put_break(w, indent, depth + 1)
            if type(key) is not str or put_str(w, <str>key) == NOT_WRITABLE:
                return NOT_WRITABLE
            put_char(w, b':')
            if indent > 0:
                put_char(w, b' ')
            if put_value(w, value, indent, depth + 1) == NOT_WRITABLE:
                return NOT_WRITABLE
        put_break(w, indent, depth)
        put_char(w, b'}')
        return 0
    if kind is list or kind is tuple:
        if not obj:
            put_char(w, b'[')
            put_char(w, b']')
            return 0
        put_char(w, b'[')
        for item in obj:
            if not first:
                put_char(w, b',')
            first = False
            put_break(w, indent, depth + 1)
            if put_value(w, item, indent, depth + 1) == NOT_WRITABLE:
                return NOT_WRITABLE
        put_break(w, indent, depth)
        put_char(w, b']')
        return 0
    if kind is PairsById:
        return put_pairs_by_id(w, <PairsById>obj, indent, depth)
    return NOT_WRITABLE


def dumps(obj, int indent=0, Py_ssize_t size_hint=4096):
    """``json.dumps(obj, ensure_ascii=False)``'s text, compact (``indent`` 0: ``,`` and ``:``) or
    with ``indent`` spaces a level, for what it can write (see ``put_value``), else None.

    >>> dumps({"a": [1, 2.5, None, True], "b": {}, "c": "é\\n"}), dumps({"a": [1, []]}, 2)
    ('{"a":[1,2.5,null,true],"b":{},"c":"é\\\\n"}', '{\\n  "a": [\\n    1,\\n    []\\n  ]\\n}')
    >>> dumps({1: 2}), dumps([float("nan"), -1e300])
    (None, '[NaN,-1e+300]')
    """
    cdef Writer w
    start(&w, <size_t>max(size_hint, 64))
    if put_value(&w, obj, indent, 0) == NOT_WRITABLE:
        return None
    return as_str(&w)


def pair_lists(const unsigned int[::1] ids not None, list tokens not None):
    """tokenizer.json's merges, ``[[tokens[left], tokens[right]], ...]``, of flat ``(left, right,
    merged)`` id triples (BPE's merge table): 515 K two-item lists in one C loop, untracked by the
    collector (they hold strs only), instead of a map and a zip that took 0.3-0.6 s. KeyError for
    an id without a token.

    >>> pair_lists(array("I", [0, 1, 2, 2, 0, 3]), ["a", "b", "ab", "aba"])
    [['a', 'b'], ['ab', 'a']]
    """
    cdef Py_ssize_t k, n = ids.shape[0] // 3, size = len(tokens)
    cdef unsigned int side, i
    cdef list out = PyList_New(n), pair
    cdef object token
    for k in range(n):
        pair = PyList_New(2)
        for side in range(2):
            i = ids[3 * k + side]
            token = tokens[i] if i < <size_t>size else None
            if token is None:
                raise KeyError(i)
            Py_INCREF(token)
            PyList_SET_ITEM(pair, side, token)
        PyObject_GC_UnTrack(<void*>pair)
        Py_INCREF(pair)
        PyList_SET_ITEM(out, k, pair)
    return out
