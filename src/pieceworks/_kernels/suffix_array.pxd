# cython: language_level=3
# distutils: language = c++
"""C-level API of the suffix sorter (see suffix_array.pyx).

Texts are arrays of small integer codes (``uint32``); code 0 is the
sentence boundary and sorts first. Suffixes are sorted by their first
``depth`` codes only: everything a piece miner needs when pieces are at
most ``depth`` characters long, and far cheaper than a full suffix array.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t


cdef void sort_suffixes(const uint32_t* text, int64_t n, int32_t depth, int32_t* sa,
                        int n_threads) noexcept nogil

cdef int32_t common_prefix(const uint32_t* text, int64_t n, int64_t a, int64_t b,
                           int32_t depth) noexcept nogil
