# cython: language_level=3
# distutils: language = c++
"""C-level API of aligned_nfc: a Unicode form's tables, and NFC (or another form) of a text with
where each output char came from, without the GIL (see aligned_nfc.pyx)."""

cimport cython
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

ctypedef fused ucs_t:     # a str's chars in its PEP 393 form
    uint8_t
    uint16_t
    uint32_t


cdef struct Item:         # a char of a segment being normalized, with its change and combining class
    uint32_t cp
    int32_t change
    uint8_t klass


@cython.final
cdef class FormTables:
    cdef vector[uint8_t] classes
    cdef vector[uint32_t] decomp_at     # per code point: 0, or 1 + where its decomposition starts in decomp
    cdef vector[uint32_t] decomp        # each decomposition: its length, then its chars
    cdef unordered_map[uint64_t, uint32_t] pairs
    cdef vector[uint8_t] seconds        # per code point: 1 if it is the second char of a pair
    cdef bint composing
    cdef vector[uint8_t] qc             # per code point (see quick): 0 yes, 1 no, 2 maybe; empty: not set
    cdef uint32_t plain_below           # every char below it is a starter the form keeps (quick's fast run)
    cdef uint32_t plain_bits            # the greatest power of two not above it (0 if it is 0)
    cdef vector[uint8_t] kinds          # per code point: INNER, CHANGING or 0 (see set_kinds); empty: not set

    cdef int _quick(self, const ucs_t* s, Py_ssize_t n) noexcept
    cdef int _quick_text(self, str text)
    cdef uint8_t klass(self, uint32_t c) noexcept nogil
    cdef uint32_t compose(self, uint32_t a, uint32_t b) noexcept nogil
    cdef void _decompose(self, int kind, const void* data, Py_ssize_t start, Py_ssize_t end,
                         vector[Item]& items) noexcept nogil
    cdef void _recompose(self, vector[Item]& items) noexcept nogil
    cdef tuple _edit_of(self, vector[Item]& items)
    cdef uint8_t _kind_of(self, uint32_t c) noexcept nogil
    cdef Py_ssize_t normalize_aligned(self, int kind, const void* data, Py_ssize_t n, vector[uint32_t]& out,
                                      vector[int32_t]& spans, vector[Item]& items) noexcept nogil
