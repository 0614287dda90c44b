# cython: language_level=3
# distutils: language = c++
"""C-level API of the counting kernel (see count.pyx)."""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from pieceworks._kernels.scan cimport SpanBuf


cdef struct Entry:
    uint64_t hash     # hash of the piece's UTF-8 bytes
    uint64_t count    # occurrences (u64: never wraps on real corpora)
    uint64_t key      # first-seen order: (chunk index << 32) | rank of first sight in the chunk
    int64_t offset    # where the piece's bytes start in the arena
    uint32_t length   # piece length in bytes


cdef class PieceTable:
    cdef vector[Entry] entries
    cdef vector[uint32_t] slots     # open addressing: 0 = empty, else entry index + 1
    cdef uint64_t mask
    cdef vector[uint8_t] arena      # every piece's UTF-8 bytes, back to back
    cdef vector[uint8_t] scratch    # one piece being encoded to UTF-8
    cdef uint64_t total_count       # sum of all counts

    cdef Entry* _find(self, const uint8_t* data, uint32_t n, uint64_t h) noexcept nogil
    cdef int _add(self, const uint8_t* data, uint32_t n, uint64_t count, uint64_t key) except -1 nogil
    cdef int _grow(self) except -1 nogil
    cdef uint64_t _count_text(self, int kind, const void* data, Py_ssize_t start, Py_ssize_t end, int mode,
                              const uint8_t* actions, bint prefix_space, uint64_t key,
                              SpanBuf* buf, vector[uint32_t]& wide) except? 0xFFFFFFFFFFFFFFFF
    cdef int _count_piece(self, int kind, const void* text, Py_ssize_t s, Py_ssize_t e,
                          uint64_t key) except -1
    cdef bint _ascii(self, const uint8_t* p, Py_ssize_t n) noexcept nogil
    cdef tuple _export_part(self, vector[pair[uint64_t, uint32_t]]& order, int part, int partitions)
