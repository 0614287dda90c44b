# cython: language_level=3
# distutils: language = c++
# distutils: extra_compile_args = -fopenmp
# distutils: extra_link_args = -fopenmp
"""Suffixes sorted by their first ``depth`` codes, and their common prefixes.

The Unigram trainer seeds its vocabulary with the substrings that occur
most often (SentencePiece's "frequent substrings" from a suffix array).
Only substrings of at most ``max_piece_length`` characters can become
pieces, so the suffixes need to be in order only up to that depth: a
suffix tree node deeper than ``depth`` is never used, and one at exactly
``depth`` is recognised by looking one code further (see
:func:`pieceworks._kernels.unigram_train`).

How: a counting sort by the first one or two codes (the buckets), then a
multikey quicksort (Bentley & Sedgewick, "Fast algorithms for sorting and
searching strings", 1997) inside each bucket, down to ``depth``. Buckets
are independent, so two threads share them (OpenMP, dynamic schedule).
Cost O(n · depth) in the worst case (long repeats), O(n log n) typically;
memory: the text and one ``int32`` per suffix, nothing else of size n.

Performance notes: a full suffix array (SA-IS, doubling) was the first
plan; at depth 16 the bounded multikey sort is as fast on 20 MB of prose
and needs no rank or LCP arrays, which is half the memory.

>>> suffix_array([2, 1, 2, 1, 0])
[4, 3, 1, 2, 0]
>>> lcp_array([2, 1, 2, 1, 0], [4, 3, 1, 2, 0])
[0, 0, 1, 0, 2]
"""

from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport calloc, free, malloc

# Below this many suffixes a range is insertion-sorted.
cdef int64_t SMALL = 12
# Two-code buckets while the alphabet is at most this big (σ² counters).
cdef int64_t PAIR_BUCKETS_MAX_SIGMA = 1024


cdef inline int64_t key_at(const uint32_t* text, int64_t n, int64_t pos) noexcept nogil:
    # Past the end sorts before everything (before the boundary code 0).
    return <int64_t>text[pos] if pos < n else -1


cdef int32_t common_prefix(const uint32_t* text, int64_t n, int64_t a, int64_t b,
                           int32_t depth) noexcept nogil:
    """Length of the common prefix of suffixes ``a`` and ``b``, at most ``depth``."""
    cdef int32_t k = 0
    while k < depth and a + k < n and b + k < n and text[a + k] == text[b + k]:
        k += 1
    return k


cdef inline bint suffix_less(const uint32_t* text, int64_t n, int32_t a, int32_t b, int32_t d,
                             int32_t depth) noexcept nogil:
    cdef int64_t ka, kb
    while d < depth:
        ka = key_at(text, n, a + d)
        kb = key_at(text, n, b + d)
        if ka != kb:
            return ka < kb
        if ka < 0:
            return False
        d += 1
    return False


cdef void insertion_sort(const uint32_t* text, int64_t n, int32_t* a, int64_t m, int32_t d,
                         int32_t depth) noexcept nogil:
    cdef int64_t i, j
    cdef int32_t v
    for i in range(1, m):
        v = a[i]
        j = i
        while j > 0 and suffix_less(text, n, v, a[j - 1], d, depth):
            a[j] = a[j - 1]
            j -= 1
        a[j] = v


cdef inline int64_t median3(int64_t x, int64_t y, int64_t z) noexcept nogil:
    if x < y:
        if y < z:
            return y
        return z if x < z else x
    if x < z:
        return x
    return z if y < z else y


cdef void mkqsort(const uint32_t* text, int64_t n, int32_t* a, int64_t m, int32_t d,
                  int32_t depth) noexcept nogil:
    """Multikey quicksort of the suffixes ``a[0:m]``, all equal on their first ``d`` codes."""
    cdef int64_t v, k, lt, gt, i
    cdef int32_t t
    while m > 1 and d < depth:
        if m <= SMALL:
            insertion_sort(text, n, a, m, d, depth)
            return
        v = median3(key_at(text, n, a[0] + d), key_at(text, n, a[m // 2] + d), key_at(text, n, a[m - 1] + d))
        # Three-way partition: [0, lt) < v, [lt, gt] == v, (gt, m) > v.
        lt = 0
        gt = m - 1
        i = 0
        while i <= gt:
            k = key_at(text, n, a[i] + d)
            if k < v:
                t = a[lt]; a[lt] = a[i]; a[i] = t
                lt += 1
                i += 1
            elif k > v:
                t = a[gt]; a[gt] = a[i]; a[i] = t
                gt -= 1
            else:
                i += 1
        mkqsort(text, n, a, lt, d, depth)
        if v >= 0:
            mkqsort(text, n, a + lt, gt - lt + 1, d + 1, depth)
        # Loop (not recurse) on the part above the pivot.
        a = a + gt + 1
        m = m - gt - 1


cdef void sort_suffixes(const uint32_t* text, int64_t n, int32_t depth, int32_t* sa,
                        int n_threads) noexcept nogil:
    """Fill ``sa[0:n]`` with the suffixes of ``text`` ordered by their first ``depth`` codes."""
    cdef int64_t sigma = 0, i, b, n_buckets, width, key
    cdef int64_t* start
    cdef int32_t first
    if n <= 0:
        return
    for i in range(n):
        if text[i] + 1 > sigma:
            sigma = text[i] + 1
    # Bucket key: the first code, or the first two when the alphabet is small.
    width = 2 if sigma <= PAIR_BUCKETS_MAX_SIGMA and depth >= 2 else 1
    n_buckets = (sigma + 1) * (sigma + 1) if width == 2 else sigma + 1
    start = <int64_t*>calloc(n_buckets + 1, sizeof(int64_t))
    if start == NULL:
        # Out of memory for the buckets: one bucket, sorted from depth 0.
        for i in range(n):
            sa[i] = <int32_t>i
        mkqsort(text, n, sa, n, 0, depth)
        return
    for i in range(n):
        start[_bucket(text, n, i, width, sigma) + 1] += 1
    for b in range(n_buckets):
        start[b + 1] += start[b]
    for i in range(n):
        key = _bucket(text, n, i, width, sigma)
        sa[start[key]] = <int32_t>i
        start[key] += 1
    # start[b] is now the end of bucket b; its beginning is start[b - 1].
    first = <int32_t>width if width <= depth else <int32_t>depth
    for b in prange(n_buckets, nogil=True, num_threads=n_threads if n_threads > 0 else 1, schedule="dynamic"):
        _sort_bucket(text, n, sa, start, b, first, depth)
    free(start)


cdef inline int64_t _bucket(const uint32_t* text, int64_t n, int64_t i, int64_t width, int64_t sigma) noexcept nogil:
    # Codes shift up by one so that "past the end" (for the last suffix) is bucket 0.
    if width == 1:
        return text[i] + 1
    return (text[i] + 1) * (sigma + 1) + (key_at(text, n, i + 1) + 1)


cdef inline void _sort_bucket(const uint32_t* text, int64_t n, int32_t* sa, int64_t* start, int64_t b,
                              int32_t first, int32_t depth) noexcept nogil:
    cdef int64_t lo = start[b - 1] if b > 0 else 0
    cdef int64_t hi = start[b]
    if hi - lo > 1:
        mkqsort(text, n, sa + lo, hi - lo, first, depth)


def suffix_array(list codes, int depth=2147483647, int n_threads=1):
    """The suffix order of ``codes`` (ints >= 0; 0 is the boundary), by their first ``depth`` codes.

    Ties beyond ``depth`` come out in no particular order.
    """
    cdef int64_t n = len(codes), i
    cdef uint32_t* text = <uint32_t*>malloc((n + 1) * sizeof(uint32_t))
    cdef int32_t* sa = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    try:
        for i in range(n):
            if codes[i] < 0:
                raise ValueError("codes must be >= 0")
            text[i] = <uint32_t>codes[i]
        with nogil:
            sort_suffixes(text, n, depth, sa, n_threads)
        return [sa[i] for i in range(n)]
    finally:
        free(text)
        free(sa)


def lcp_array(list codes, list sa, int depth=2147483647):
    """``lcp[i]``: the common prefix of suffixes ``sa[i-1]`` and ``sa[i]`` (``lcp[0] = 0``), at most ``depth``."""
    cdef int64_t n = len(codes), i
    cdef uint32_t* text = <uint32_t*>malloc((n + 1) * sizeof(uint32_t))
    try:
        for i in range(n):
            text[i] = <uint32_t>codes[i]
        return [0] + [common_prefix(text, n, sa[i - 1], sa[i], depth) for i in range(1, n)]
    finally:
        free(text)
