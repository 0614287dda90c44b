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

How: a counting sort by the first one or two codes (the buckets), then,
inside each bucket, a sort by packed keys (a multikey sort in the manner of
Bentley & Sedgewick, "Fast algorithms for sorting and searching strings",
1997, with many codes a key). Buckets are independent, so two threads
share them (OpenMP, dynamic schedule). Cost O(n log n · depth / codes a
key), whatever the text (a text of one repeated char included).

Keys: the text is packed into the narrowest code width that holds the
alphabet (1, 2 or 4 bytes a code, each code plus one so that 0 means
"past the end"), and one 64-bit load, byte-swapped to big-endian order, is
a key of 8, 4 or 2 codes that compares as the codes do. Each suffix of a
bucket has its key read once (one cache miss) into an array of (key,
position) pairs, which is sorted in cache; runs of equal keys are sorted
on by their next key. The common prefix of two neighbours falls out of
their keys (leading zero bits of the XOR), so the bucket's LCP array comes
with the sort.

Memory: the text, its packed copy, one ``int32`` per suffix, and 20 bytes
a suffix of the largest bucket, per thread (:func:`bucket_scratch`: its
keyed suffixes and its LCP array). A
full suffix array by SA-IS or doubling was the first plan; at depth 16 the
bounded sort is faster and needs half the memory.

>>> suffix_array([2, 1, 2, 1, 0])
[4, 3, 1, 2, 0]
>>> lcp_array([2, 1, 2, 1, 0], [4, 3, 1, 2, 0])
[0, 0, 1, 0, 2]
"""

from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy
from libcpp.algorithm cimport sort
from libcpp.vector cimport vector

# Two-code buckets while the alphabet is at most this big (σ² counters).
cdef int64_t PAIR_BUCKETS_MAX_SIGMA = 1024

cdef extern from *:
    uint64_t bswap64 "__builtin_bswap64"(uint64_t x) noexcept nogil
    int clz64 "__builtin_clzll"(uint64_t x) noexcept nogil


cdef bint pack_text(const uint32_t* text, int64_t n, Packed* p) noexcept nogil:
    """Fill ``p`` with ``text`` at the narrowest width; False when out of memory (free with free_packed)."""
    return pack_codes(text, 4, n, p)


cdef bint pack_codes(const void* codes, int size, int64_t n, Packed* p) noexcept nogil:
    """:func:`pack_text` from codes of ``size`` bytes each (1, 2 or 4: an array's ``B``, ``H`` or ``I``)."""
    cdef int64_t i
    cdef uint32_t sigma = 0, c
    cdef uint16_t probe = 1
    cdef uint8_t* d8
    cdef uint16_t* d16
    cdef uint32_t* d32
    for i in range(n):
        c = code_in(codes, size, i)
        if c + 1 > sigma:
            sigma = c + 1
    # Codes shift up by one: 0 is "past the end", which sorts before the boundary code.
    p.width = 1 if sigma <= 0xFF else (2 if sigma <= 0xFFFF else 4)
    p.per_key = 8 // p.width
    p.n = n
    p.sigma = sigma
    p.little = (<uint8_t*>&probe)[0] == 1
    p.data = <uint8_t*>calloc(n * p.width + 8, 1)    # 8 zero bytes: a key may read past the last code
    if p.data == NULL:
        return False
    if p.width == 1:
        d8 = p.data
        for i in range(n):
            d8[i] = <uint8_t>(code_in(codes, size, i) + 1)
    elif p.width == 2:
        d16 = <uint16_t*>p.data
        for i in range(n):
            d16[i] = <uint16_t>(code_in(codes, size, i) + 1)
    else:
        d32 = <uint32_t*>p.data
        for i in range(n):
            d32[i] = code_in(codes, size, i) + 1
    return True


cdef void free_packed(Packed* p) noexcept nogil:
    free(p.data)
    p.data = NULL


cdef inline uint64_t key_at(const Packed* p, int64_t pos, int32_t d, int32_t depth) noexcept nogil:
    """Codes ``d .. d + per_key - 1`` of suffix ``pos`` (those below ``depth``) as one big-endian key."""
    cdef uint64_t v
    cdef int32_t left = depth - d
    if pos + d >= p.n:
        return 0
    memcpy(&v, p.data + (pos + d) * p.width, 8)
    if p.little:
        if p.width == 1:
            v = bswap64(v)
        else:
            v = (v << 32) | (v >> 32)
            if p.width == 2:
                v = ((v & 0x0000FFFF0000FFFFULL) << 16) | ((v >> 16) & 0x0000FFFF0000FFFFULL)
    if left < p.per_key:
        v &= ~(0xFFFFFFFFFFFFFFFFULL >> (left * 8 * p.width))
    return v


cdef inline bint ended(const Packed* p, uint64_t key) noexcept nogil:
    # The last code of a key is 0 only past the end of the text (or past the depth).
    return (key & (0xFFFFFFFFFFFFFFFFULL >> (64 - 8 * p.width))) == 0


cdef int32_t common_prefix(const Packed* p, int64_t a, int64_t b, int32_t depth) noexcept nogil:
    """Length of the common prefix of suffixes ``a != b``, at most ``depth``."""
    cdef int32_t k = 0
    cdef uint64_t x
    if a == b:
        return <int32_t>(p.n - a) if p.n - a < depth else depth
    while k < depth:
        x = key_at(p, a, k, depth) ^ key_at(p, b, k, depth)
        if x:
            k += clz64(x) // (8 * p.width)
            return k if k < depth else depth
        k += p.per_key
    return depth


ctypedef struct Run:
    int64_t start
    int64_t size
    int32_t depth


cdef void sort_keyed(const Packed* p, KeyedSuffix* a, int64_t m, int32_t d, int32_t depth,
                     int32_t* lcp) noexcept nogil:
    """Sort ``a[0:m]`` (suffixes equal on their first ``d`` codes) to ``depth``; fill ``lcp[1:m]`` (if not NULL).

    Each suffix's next key is read once into ``a`` (one cache miss), then the
    sort moves keys, not pointers into the text. Runs of equal keys are
    sorted on by their next key (a work list, not recursion: a long repeat
    with a large ``depth`` makes many levels). Where two keys differ, their
    common prefix is read off the keys.
    """
    cdef vector[Run] todo
    cdef Run run, inner
    cdef int64_t i, j, k
    cdef uint64_t key, before = 0
    run.start = 0
    run.size = m
    run.depth = d
    todo.push_back(run)
    while todo.size():
        run = todo.back()
        todo.pop_back()
        for i in range(run.start, run.start + run.size):
            a[i].key = key_at(p, a[i].pos, run.depth, depth)
        sort(a + run.start, a + run.start + run.size)
        i = run.start
        while i < run.start + run.size:
            key = a[i].key
            j = i + 1
            while j < run.start + run.size and a[j].key == key:
                j += 1
            if j - i > 1:
                if run.depth + p.per_key < depth and not ended(p, key):
                    inner.start = i
                    inner.size = j - i
                    inner.depth = run.depth + p.per_key
                    todo.push_back(inner)
                elif lcp != NULL:
                    # Equal keys that reach ``depth`` (two suffixes cannot end at the same place).
                    for k in range(i + 1, j):
                        lcp[k] = depth
            if i > run.start and lcp != NULL:
                lcp[i] = run.depth + clz64(before ^ key) // (8 * p.width)
            before = key
            i = j


cdef bint sort_suffixes(const uint32_t* text, int64_t n, int32_t depth, int32_t* sa,
                        int n_threads) noexcept nogil:
    """Fill ``sa[0:n]`` with the suffixes of ``text`` ordered by their first ``depth`` codes.

    Returns False when out of memory.
    """
    cdef int64_t n_buckets, b, stride
    cdef int32_t first
    cdef int64_t* ends
    cdef char* scratch
    cdef Packed p
    cdef int teams = n_threads if n_threads > 0 else 1
    if n <= 0:
        return True
    if not pack_text(text, n, &p):
        return False
    ends = bucket_suffixes(&p, depth, sa, &n_buckets, &first)
    scratch = bucket_scratch(ends, n_buckets, teams, &stride) if ends != NULL else NULL
    if scratch != NULL:
        for b in prange(n_buckets, nogil=True, num_threads=teams, schedule="dynamic"):
            sort_bucket(&p, sa, ends, b, first, depth, NULL, <KeyedSuffix*>(scratch + threadid() * stride))
    free(scratch)
    free(ends)
    free_packed(&p)
    return scratch != NULL


cdef char* bucket_scratch(const int64_t* ends, int64_t n_buckets, int teams, int64_t* stride) noexcept nogil:
    """One block of scratch for :func:`sort_bucket` on ``teams`` threads (free it); NULL when out of memory.

    Thread ``t``'s part starts at ``t * stride``: room for the largest
    bucket's keyed suffixes, then its LCP array. One block allocated here,
    not one per bucket in the threads: those would stay in the threads'
    malloc arenas after the sort.
    """
    stride[0] = (largest_bucket(ends, n_buckets) * (sizeof(KeyedSuffix) + sizeof(int32_t)) + 15) // 16 * 16
    return <char*>malloc(teams * stride[0] + 1)


cdef int64_t* bucket_suffixes(const Packed* p, int32_t depth, int32_t* sa, int64_t* n_buckets,
                              int32_t* first) noexcept nogil:
    """Counting sort of the suffixes by their first code (two codes for a small alphabet) into ``sa``.

    Returns the end of each bucket in ``sa`` (bucket ``b`` is
    ``sa[ends[b-1]:ends[b]]``, ``ends[-1]`` read as 0; free it), or NULL when
    out of memory. ``first`` is how many codes the buckets have sorted:
    :func:`sort_bucket` goes on from there. Suffixes with a common prefix
    of at least ``first`` codes are in one bucket.
    """
    cdef int64_t sigma = p.sigma, i, b, width, key
    cdef int64_t* start
    width = 2 if sigma <= PAIR_BUCKETS_MAX_SIGMA and depth >= 2 else 1
    n_buckets[0] = (sigma + 1) * (sigma + 1) if width == 2 else sigma + 1
    start = <int64_t*>calloc(n_buckets[0] + 1, sizeof(int64_t))
    if start == NULL:
        return NULL
    for i in range(p.n):
        start[_bucket(p, i, width, sigma) + 1] += 1
    for b in range(n_buckets[0]):
        start[b + 1] += start[b]
    for i in range(p.n):
        key = _bucket(p, i, width, sigma)
        sa[start[key]] = <int32_t>i
        start[key] += 1
    # start[b] is now the end of bucket b.
    first[0] = <int32_t>width if width <= depth else <int32_t>depth
    return start


cdef inline int64_t _bucket(const Packed* p, int64_t i, int64_t width, int64_t sigma) noexcept nogil:
    # Units are codes plus one, so "past the end" (after the last suffix's first code) is 0.
    if width == 1:
        return unit_at(p, i)
    return unit_at(p, i) * (sigma + 1) + unit_at(p, i + 1)


cdef void sort_bucket(const Packed* p, int32_t* sa, const int64_t* ends, int64_t b, int32_t first,
                      int32_t depth, int32_t* lcp, KeyedSuffix* scratch) noexcept nogil:
    """Sort bucket ``b`` of :func:`bucket_suffixes` to ``depth`` codes, in ``scratch`` (:func:`bucket_scratch`).

    With ``lcp`` (room for the bucket's size), ``lcp[i]`` is the common
    prefix of the bucket's suffixes ``i - 1`` and ``i`` (``lcp[0] = 0``).
    """
    cdef int64_t lo = ends[b - 1] if b > 0 else 0
    cdef int64_t m = ends[b] - lo, i
    if lcp != NULL and m > 0:
        lcp[0] = 0
    if m > 1 and first < depth:
        for i in range(m):
            scratch[i].pos = sa[lo + i]
        sort_keyed(p, scratch, m, first, depth, lcp)
        for i in range(m):
            sa[lo + i] = scratch[i].pos
    elif lcp != NULL:
        # Not sorted further: the bucket's suffixes share ``first`` codes.
        for i in range(1, m):
            lcp[i] = first


cdef int64_t largest_bucket(const int64_t* ends, int64_t n_buckets) noexcept nogil:
    """The most suffixes in one bucket of :func:`bucket_suffixes`."""
    cdef int64_t b, most = 0, size
    for b in range(n_buckets):
        size = ends[b] - (ends[b - 1] if b > 0 else 0)
        if size > most:
            most = size
    return most


cdef uint32_t* _codes_in(list codes) except? NULL:
    cdef int64_t n = len(codes), i
    cdef uint32_t* text = <uint32_t*>malloc((n + 1) * sizeof(uint32_t))
    if text == NULL:
        raise MemoryError()
    for i in range(n):
        if not 0 <= codes[i] < 0xFFFFFFFF:
            free(text)
            raise ValueError("codes must be >= 0 and < 2**32 - 1")
        text[i] = <uint32_t>codes[i]
    return text


def suffix_array(list codes, int depth=2147483647, int n_threads=1):
    """The suffix order of ``codes`` (ints >= 0; 0 is the boundary), by their first ``depth`` codes.

    Ties beyond ``depth`` come out in no particular order.
    """
    cdef int64_t n = len(codes), i
    cdef uint32_t* text = _codes_in(codes)
    cdef int32_t* sa = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef bint ok
    try:
        if sa == NULL:
            raise MemoryError()
        with nogil:
            ok = sort_suffixes(text, n, depth, sa, n_threads)
        if not ok:
            raise MemoryError()
        return [sa[i] for i in range(n)]
    finally:
        free(text)
        free(sa)


def lcp_array(list codes, list sa, int depth=2147483647):
    """``lcp[i]``: the common prefix of suffixes ``sa[i-1]`` and ``sa[i]`` (``lcp[0] = 0``), at most ``depth``."""
    cdef int64_t n = len(codes)
    cdef uint32_t* text = _codes_in(codes)
    cdef Packed p
    if not pack_text(text, n, &p):
        free(text)
        raise MemoryError()
    try:
        return [0] + [common_prefix(&p, sa[i - 1], sa[i], depth) for i in range(1, n)]
    finally:
        free_packed(&p)
        free(text)
