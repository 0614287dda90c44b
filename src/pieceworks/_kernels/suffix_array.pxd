# cython: language_level=3
# distutils: language = c++
"""C-level API of the suffix sorter (see suffix_array.pyx).

Texts are arrays of small integer codes (``uint32``); code 0 is the
sentence boundary and sorts first. Suffixes are sorted by their first
``depth`` codes only: everything a piece miner needs when pieces are at
most ``depth`` characters long, and far cheaper than a full suffix array.
The sort and the common prefixes read a packed copy of the text
(:func:`pack_text`).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


cdef extern from *:
    """
    #include <stdint.h>
    struct KeyedSuffix {
        uint64_t key;   /* the suffix's codes from the current depth, packed */
        int32_t pos;    /* where the suffix starts */
        bool operator<(const KeyedSuffix& other) const { return key < other.key; }
    };
    """
    ctypedef struct KeyedSuffix:
        uint64_t key
        int32_t pos


ctypedef struct Packed:
    uint8_t* data       # each code + 1 in ``width`` bytes, then 8 zero bytes
    int32_t width       # 1, 2 or 4: the narrowest that holds the alphabet
    int32_t per_key     # codes in one 64-bit key: 8 // width
    int64_t n
    uint32_t sigma      # the largest unit (code + 1)
    bint little         # little-endian machine: keys are byte-swapped


cdef bint pack_text(const uint32_t* text, int64_t n, Packed* p) noexcept nogil

cdef bint pack_codes(const void* codes, int size, int64_t n, Packed* p) noexcept nogil


cdef inline uint32_t code_in(const void* codes, int size, int64_t i) noexcept nogil:
    """Code ``i`` of an array of ``size``-byte codes (1, 2 or 4)."""
    if size == 1:
        return (<const uint8_t*>codes)[i]
    if size == 2:
        return (<const uint16_t*>codes)[i]
    return (<const uint32_t*>codes)[i]


cdef inline uint32_t unit_at(const Packed* p, int64_t i) noexcept nogil:
    """Code ``i`` plus one (0 past the end)."""
    if i >= p.n:
        return 0
    if p.width == 1:
        return p.data[i]
    if p.width == 2:
        return (<const uint16_t*>p.data)[i]
    return (<const uint32_t*>p.data)[i]

cdef void free_packed(Packed* p) noexcept nogil

cdef bint sort_suffixes(const uint32_t* text, int64_t n, int32_t depth, int32_t* sa,
                        int n_threads) noexcept nogil

cdef int64_t* bucket_suffixes(const Packed* p, int32_t depth, int32_t* sa, int64_t* n_buckets,
                              int32_t* first) noexcept nogil

cdef void sort_bucket(const Packed* p, int32_t* sa, const int64_t* ends, int64_t b, int32_t first,
                      int32_t depth, int32_t* lcp, KeyedSuffix* scratch) noexcept nogil

cdef char* bucket_scratch(const int64_t* ends, int64_t n_buckets, int teams, int64_t* stride) noexcept nogil
