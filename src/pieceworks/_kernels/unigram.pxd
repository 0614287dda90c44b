# cython: language_level=3
# distutils: language = c++
"""C-level API of the SentencePiece kernels (see unigram.pyx).

A :class:`DoubleArray` is a byte trie in two int arrays (base, check): one
transition is one add and one compare, with no Python object touched. The
Viterbi, n-best, sampling and BPE loops of :class:`SpmCore` run over the
UTF-8 bytes of the normalized text with these tries.
"""

from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libcpp.vector cimport vector


ctypedef struct Seg:
    int32_t start      # byte offset in the normalized text
    int32_t end
    int32_t id
    int32_t flag       # SEG_* below


cdef enum:
    SEG_PLAIN = 0
    SEG_UNK = 1        # an unknown run (merged), its text is the piece
    SEG_BYTE = 2       # a byte-fallback piece of an unknown run


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include <Python.h>
    /* A key of a DoubleArray being built; sorts as Python sorts bytes. */
    struct KeyRef {
        const uint8_t* key;
        Py_ssize_t size;
        int32_t value;
        bool operator<(const KeyRef& o) const {
            int c = memcmp(key, o.key, size < o.size ? size : o.size);
            return c != 0 ? c < 0 : size < o.size;
        }
    };
    """
    ctypedef struct KeyRef:
        const uint8_t* key
        Py_ssize_t size
        int32_t value


cdef class DoubleArray:
    cdef vector[int32_t] base
    cdef vector[int32_t] check
    cdef vector[int32_t] value
    cdef readonly int n_keys
    cdef int32_t exact(self, const uint8_t* key, Py_ssize_t n) noexcept nogil
    cdef void _grow(self, vector[int32_t]& skip, Py_ssize_t need)
    cdef int32_t _first_free(self, vector[int32_t]& skip, int32_t i)
    cdef void _build(self, const KeyRef* keys, Py_ssize_t n, vector[int32_t]& skip)
    cdef void _trim(self)
    cdef int build(self, vector[KeyRef]& refs) except -1


cdef class Charsmap:
    cdef bytes blob
    cdef const uint8_t* units
    cdef Py_ssize_t n_units
    cdef const uint8_t* strings
    cdef Py_ssize_t n_strings
    cdef Py_ssize_t longest(self, const uint8_t* s, Py_ssize_t n, Py_ssize_t* value) noexcept nogil
    cdef Py_ssize_t shortest(self, const uint8_t* s, Py_ssize_t n, Py_ssize_t* value) noexcept nogil
    cdef uint32_t after(self, const uint8_t* s, Py_ssize_t n) noexcept nogil
    cdef uint32_t _unit(self, Py_ssize_t i) noexcept nogil
    cdef Py_ssize_t _child(self, uint32_t unit, Py_ssize_t pos, int c) noexcept nogil
    cdef Py_ssize_t _search(self, const uint8_t* s, Py_ssize_t n, Py_ssize_t* value, bint longest) noexcept nogil
    cdef Py_ssize_t _string_end(self, Py_ssize_t start) noexcept nogil
    cdef _walk(self, uint32_t unit, Py_ssize_t pos, bytes prefix, list out, int depth)
    cdef bint second_chars(self, uint64_t* bits) noexcept nogil
    cdef bint _mark_from(self, uint32_t unit, Py_ssize_t pos, uint8_t* path, int depth,
                         uint64_t* bits) noexcept nogil


cdef inline Py_ssize_t put_utf8(uint32_t cp, uint8_t* o) noexcept nogil:
    """Write ``cp`` as UTF-8 at ``o`` (room for 4 bytes); the number of bytes."""
    if cp < 0x80:
        o[0] = <uint8_t>cp
        return 1
    if cp < 0x800:
        o[0] = <uint8_t>(0xC0 | (cp >> 6)); o[1] = <uint8_t>(0x80 | (cp & 0x3F))
        return 2
    if cp < 0x10000:
        o[0] = <uint8_t>(0xE0 | (cp >> 12)); o[1] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
        o[2] = <uint8_t>(0x80 | (cp & 0x3F))
        return 3
    o[0] = <uint8_t>(0xF0 | (cp >> 18)); o[1] = <uint8_t>(0x80 | ((cp >> 12) & 0x3F))
    o[2] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F)); o[3] = <uint8_t>(0x80 | (cp & 0x3F))
    return 4
