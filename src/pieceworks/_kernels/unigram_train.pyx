# cython: language_level=3
# distutils: language = c++
# distutils: extra_compile_args = -fopenmp
# distutils: extra_link_args = -fopenmp
"""The hot loops of SentencePiece's Unigram training: seed mining, EM, pruning.

The algorithm (Kudo 2018, and SentencePiece's ``unigram_model_trainer.cc``):

1. **Seeds.** Every substring that occurs at least twice and is a node of
   the suffix tree (a *right-maximal* repeat) is a candidate, scored
   ``frequency × length``; the ``seed_size`` best, plus every character,
   start the vocabulary, each with the log of its share of the scores.
   :func:`mine_seeds` buckets the suffixes by their first two chars; a
   repeat of two or more chars lies inside one bucket, so each bucket is
   sorted to depth ``max_piece_length`` (:mod:`pieceworks._kernels.suffix_array`,
   which gives its LCP array too) and its LCP intervals walked bottom-up
   with a stack, at once and on ``n_threads`` threads.
2. **EM.** E-step: for every word, the lattice of all vocabulary matches
   (plus an unknown node where no one-char piece starts), forward-backward,
   and each piece's expected count. M-step: pieces expected fewer than 0.5
   times go; the rest score ``digamma(count) − digamma(total)`` (the
   Bayesian, sparse-prior update).
3. **Pruning.** Each piece's loss is how much the corpus likelihood drops if
   its occurrences are re-segmented by its second-best segmentation; the
   pieces with the largest losses stay (a ``shrinking_factor`` share).

Lattices here are per word and positional: node scores depend on the node
only, so forward and backward keep one value per char position, computed
as a log-sum-exp over the nodes ending (starting) there with one ``exp``
per node and one ``log`` per position (SentencePiece does an ``exp`` and a
``log`` per node). Words are independent, so the E-step and the Viterbi
counts run on ``n_threads`` OpenMP threads, each with its own workspace
and accumulators, summed at the end (in thread order: the result does not
depend on scheduling beyond float summation order per thread).

The vocabulary lives in one :class:`~pieceworks._kernels.unigram.DoubleArray`
trie built from the seeds; a piece that training drops is marked dead, not
removed, and the trie is rebuilt only when most of it is dead.

>>> em = UnigramEM(["▁ab", "▁a"], [3, 1])
>>> em.set_pieces(["▁", "a", "b", "▁a", "ab", "▁ab"], [-2.0, -2.0, -2.0, -1.5, -1.5, -1.0])
>>> round(em.em_iteration(), 4) > 0
True
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String, PyUnicode_DecodeUTF8
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport exp, log, INFINITY
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libcpp.algorithm cimport sort
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref

from array import array

from .suffix_array cimport (KeyedSuffix, Packed, bucket_scratch, bucket_suffixes, code_in, free_packed, pack_codes,
                            sort_bucket, unit_at)
from .unigram cimport DoubleArray, KeyRef, put_utf8

cdef extern from "Python.h":
    int PyUnicode_IS_ASCII(object)

# Character kinds for piece validity (see mine_seeds).
cdef enum:
    CH_PLAIN = 0
    CH_SPACE = 1       # '▁'
    CH_BAD = 2         # the boundary, '▅' (rare chars), ' ', tab: never inside a piece

cdef int16_t SCRIPT_ANY = -1
cdef int16_t SCRIPT_INHERITED = -2

cdef double UNK_PENALTY = 10.0
cdef double EXPECTED_MIN = 0.5      # SentencePiece's kExpectedFrequencyThreshold
cdef int32_t CHUNK = 64             # words per OpenMP work item
# Expected counts are summed in fixed point (units of 2^-24): integer sums do not depend on the
# order of the additions, so the result is the same on any thread count and schedule.
cdef double FIXED_SCALE = 16777216.0


cdef extern from "<algorithm>" namespace "std" nogil:
    void nth_element[Iter, Compare](Iter first, Iter nth, Iter last, Compare comp) except +


def digamma(double x):
    """ψ(x), by the recurrence up to 7 and the asymptotic series (as SentencePiece computes it).

    >>> round(digamma(1.0), 6)
    -0.577216
    """
    return _digamma(x)


cdef double _digamma(double x) noexcept nogil:
    cdef double result = 0.0, xx, xx2, xx4
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 1.0 / 2.0
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    result += log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2 \
        - (127.0 / 30720.0) * xx4 * xx4
    return result


cdef inline int one_char_len(uint8_t c) noexcept nogil:
    if c < 0xC0:
        return 1
    if c < 0xE0:
        return 2
    if c < 0xF0:
        return 3
    return 4


# -- sentences → codes ---------------------------------------------------------
def encode_codes(list sentences):
    """Sentences → one array of small codes: each char's rank in the alphabet (from 1), 0 after each sentence.

    Returns ``(codes, alphabet)`` where ``alphabet[code]`` is the code point (``alphabet[0]`` = 0);
    ``codes`` is an array of the narrowest type that holds them (``B``, ``H`` or ``I``).

    >>> codes, alphabet = encode_codes(["bab", "a"])
    >>> list(codes), alphabet
    ([2, 1, 2, 0, 1, 0], [0, 97, 98])
    """
    cdef int32_t* table
    cdef Py_ssize_t total = 0, i, j, n
    cdef str s
    cdef Py_UCS4 c
    cdef list alphabet = [0]
    cdef uint32_t* out
    cdef int32_t* remap
    for s in sentences:
        total += len(s) + 1
    if total == 0:
        return array("I"), alphabet
    table = <int32_t*>calloc(0x110000, sizeof(int32_t))
    if table == NULL:
        raise MemoryError()
    try:
        codes = array("I", bytes(4 * total))
        out = <uint32_t*>_array_ptr(codes)
        j = 0
        for s in sentences:
            n = len(s)
            for i in range(n):
                c = s[i]
                if table[c] == 0:
                    table[c] = <int32_t>len(alphabet)
                    alphabet.append(<long>c)
                out[j] = <uint32_t>table[c]
                j += 1
            out[j] = 0
            j += 1
        # Renumber in code point order, so that code order is text order (ties in mine_seeds).
        order = sorted(range(1, len(alphabet)), key=alphabet.__getitem__)
        remap = <int32_t*>malloc(len(alphabet) * sizeof(int32_t))
        if remap == NULL:
            raise MemoryError()
        remap[0] = 0
        for i in range(len(order)):
            remap[order[i]] = <int32_t>(i + 1)
        try:
            return _renumbered(codes, remap, len(alphabet)), [0] + [alphabet[k] for k in order]
        finally:
            free(remap)
    finally:
        free(table)


cdef object _renumbered(codes, const int32_t* remap, Py_ssize_t n_codes):
    """``remap[c]`` for each code of ``codes`` (an ``I`` array), in the narrowest array that holds
    ``n_codes`` codes (``B``, ``H``, or ``codes`` itself, renumbered in place).

    Mining packs the codes again; a 4-byte array beside it would be most of the memory.
    """
    cdef uint32_t* src = <uint32_t*>_array_ptr(codes)
    cdef Py_ssize_t i, n = len(codes)
    cdef uint8_t* d8
    cdef uint16_t* d16
    if n_codes > 0x10000:
        for i in range(n):
            src[i] = <uint32_t>remap[src[i]]
        return codes
    narrow = array("B" if n_codes <= 0x100 else "H", bytes((1 if n_codes <= 0x100 else 2) * n))
    d8 = <uint8_t*>_array_ptr(narrow)
    d16 = <uint16_t*>d8
    if n_codes <= 0x100:
        for i in range(n):
            d8[i] = <uint8_t>remap[src[i]]
    else:
        for i in range(n):
            d16[i] = <uint16_t>remap[src[i]]
    return narrow


cdef extern from *:
    bint _add_overflows "__builtin_add_overflow"(int64_t a, int64_t b, int64_t* out) noexcept nogil


def count_chars(list sentences):
    """``{char: Σ count}`` over ``[(text, count)]``: each char weighted by its sentence's count.

    Raises ``OverflowError`` if a char's total does not fit in 64 bits.

    >>> sorted(count_chars([("bab", 2), ("a", 1)]).items())
    [('a', 3), ('b', 4)]
    """
    cdef int64_t* table
    cdef uint8_t* seen
    cdef int64_t freq
    cdef Py_ssize_t i, n, k
    cdef Py_UCS4 c
    cdef Py_ssize_t low = 0x10FFFF, high = 0
    cdef str s
    cdef dict out = {}
    table = <int64_t*>calloc(0x110000, sizeof(int64_t) + 1)
    if table == NULL:
        raise MemoryError()
    seen = <uint8_t*>(table + 0x110000)
    try:
        for s, freq in sentences:
            n = len(s)
            for i in range(n):
                c = s[i]
                if _add_overflows(table[c], freq, &table[c]):
                    raise OverflowError(f"the count of {chr(c)!r} exceeds 2**63 - 1")
                seen[c] = 1
                if c < low:
                    low = c
                if c > high:
                    high = c
        for k in range(low, high + 1):
            if seen[k]:
                out[chr(k)] = table[k]
        return out
    finally:
        free(table)


cdef void* _array_ptr(object arr) except NULL:
    cdef const unsigned char[::1] view = memoryview(arr).cast("B")
    return <void*>&view[0]


# -- seeds ---------------------------------------------------------------------
ctypedef struct Cand:
    int64_t score
    int64_t offset     # where one occurrence starts in the codes
    int32_t length
    int64_t freq


# The packed codes the candidates point into (set while mining; the comparator reads it).
cdef const Packed* _cand_text = NULL


cdef bint _cand_better(const Cand& a, const Cand& b) noexcept nogil:
    """Higher score first; ties: the smaller substring (by code, i.e. code point order), then shorter."""
    cdef int32_t i, n
    cdef uint32_t x, y
    if a.score != b.score:
        return a.score > b.score
    n = a.length if a.length < b.length else b.length
    for i in range(n):
        x = unit_at(_cand_text, a.offset + i)
        y = unit_at(_cand_text, b.offset + i)
        if x != y:
            return x < y
    return a.length < b.length


ctypedef struct PieceRules:
    const uint8_t* kinds
    const int16_t* scripts
    const uint8_t* digits
    int32_t max_len
    bint split_by_whitespace
    bint suffix
    bint allow_ws_only
    bint split_by_script
    bint split_by_number
    bint split_digits


cdef bint valid_piece(const uint32_t* t, int32_t length, const PieceRules* r) noexcept nogil:
    """SentencePiece's IsValidSentencePiece over codes."""
    cdef int32_t pos
    cdef bint all_ws = True
    cdef int16_t prev = SCRIPT_ANY, s
    cdef uint8_t k
    if length <= 0 or length > r.max_len:
        return False
    for pos in range(length):
        if r.kinds[t[pos]] != CH_SPACE:
            all_ws = False
            break
    for pos in range(length):
        k = r.kinds[t[pos]]
        if k == CH_BAD:
            return False
        if k == CH_SPACE:
            if not (r.allow_ws_only and all_ws):
                if r.suffix:
                    if (r.split_by_whitespace and pos < length - 1) or \
                            (not r.split_by_whitespace and pos < length - 1 and pos == 0):
                        return False
                else:
                    if (r.split_by_whitespace and pos > 0) or \
                            (not r.split_by_whitespace and pos > 0 and pos == length - 1):
                        return False
            continue
        s = r.scripts[t[pos]]
        if s == SCRIPT_INHERITED:
            s = prev
        if r.digits[t[pos]]:
            if not r.split_by_number:
                s = SCRIPT_ANY
            if r.split_digits and length > 1:
                return False
        if r.split_by_script and s != SCRIPT_ANY and prev != SCRIPT_ANY and prev != s:
            return False
        prev = s
    return True


cdef void _keep_best(vector[Cand]& cands, size_t k) noexcept nogil:
    if cands.size() > k:
        nth_element(cands.begin(), cands.begin() + k, cands.end(), _cand_better)
        cands.resize(k)


cdef bint _right_maximal(const Packed* p, const int32_t* sa, int64_t lb, int64_t rb, int32_t depth) noexcept nogil:
    """Do the suffixes sa[lb..rb] (equal on ``depth`` codes) continue differently? (a suffix tree node)"""
    cdef int64_t j, first, k
    first = sa[lb] + depth
    if first >= p.n:
        return True
    for j in range(lb + 1, rb + 1):
        k = sa[j] + depth
        if k >= p.n or unit_at(p, k) != unit_at(p, first):
            return True
    return False


cdef bint _valid_at(const Packed* p, int64_t start, int32_t length, const PieceRules* r) noexcept nogil:
    """:func:`valid_piece` of the ``length`` codes at ``start`` (a piece is short: copied out first)."""
    cdef uint32_t piece[256]
    cdef int32_t k
    if length > 256:
        return False if length > r.max_len else _valid_long(p, start, length, r)
    for k in range(length):
        piece[k] = unit_at(p, start + k) - 1
    return valid_piece(piece, length, r)


cdef bint _valid_long(const Packed* p, int64_t start, int32_t length, const PieceRules* r) noexcept nogil:
    cdef vector[uint32_t] piece
    cdef int32_t k
    piece.resize(length)
    for k in range(length):
        piece[k] = unit_at(p, start + k) - 1
    return valid_piece(piece.data(), length, r)


def mine_seeds(codes, bytes kinds not None, scripts, bytes digits not None, int max_piece_length, long long seed_size,
               bint split_by_whitespace, bint treat_whitespace_as_suffix, bint allow_whitespace_only_pieces,
               bint split_by_unicode_script, bint split_by_number, bint split_digits, int n_threads=1):
    """The ``seed_size`` best repeated substrings, best first: ``(offsets, lengths, freqs)``, three arrays.

    A candidate is a node of the suffix tree of ``codes`` (a substring seen
    at least twice that is followed by two different codes, or ends the
    text), at least 2 and at most ``max_piece_length`` chars long, that is
    a valid piece under the split rules; its score is ``freq × length``.
    Ties: the smaller substring first (by code, so codes should follow code
    point order, as :func:`encode_codes` makes them): the result does not
    depend on the order of the sentences. ``codes``: an array of type
    ``B``, ``H`` or ``I``.

    Here "ab" is followed by "a" and by the boundary, a node; "abab" is
    seen twice but always followed by the boundary, so it is not:

    >>> codes, alphabet = encode_codes(["abab", "abab"])
    >>> kinds = b"\\x02" + bytes(len(alphabet) - 1)   # code 0 (the boundary) never in a piece
    >>> offsets, lengths, freqs = mine_seeds(codes, kinds, array("h", [0] * len(alphabet)), bytes(len(alphabet)),
    ...                                      16, 10, True, False, False, True, True, False)
    >>> list(offsets), list(lengths), list(freqs), substrings(codes, alphabet, offsets, lengths)[0]
    ([7], [2], [4], b'ab')
    """
    cdef const void* t
    cdef int64_t n = len(codes), b, n_buckets = 0, i
    cdef int32_t depth = max_piece_length, first = 0, tid
    cdef int32_t* sa
    cdef int64_t* ends
    cdef Packed packed
    cdef int64_t stride
    cdef char* scratch
    cdef int n_teams = n_threads if n_threads > 0 else 1
    cdef vector[vector[Cand]] found
    cdef vector[Cand] cands
    cdef PieceRules r
    cdef const int16_t[::1] script_view = scripts
    if n == 0 or seed_size <= 0:
        return array("q"), array("i"), array("q")
    t = <const void*>_array_ptr(codes)
    if codes.itemsize not in (1, 2, 4):
        raise ValueError(f"codes must be an array of 1, 2 or 4 byte items, got {codes.itemsize}")
    r.kinds = <const uint8_t*>PyBytes_AS_STRING(kinds)
    r.scripts = &script_view[0]
    r.digits = <const uint8_t*>PyBytes_AS_STRING(digits)
    r.max_len = max_piece_length
    r.split_by_whitespace = split_by_whitespace
    r.suffix = treat_whitespace_as_suffix
    r.allow_ws_only = allow_whitespace_only_pieces
    r.split_by_script = split_by_unicode_script
    r.split_by_number = split_by_number
    r.split_digits = split_digits
    sa = <int32_t*>malloc(n * sizeof(int32_t))
    if sa == NULL:
        raise MemoryError()
    if not pack_codes(t, codes.itemsize, n, &packed):
        free(sa)
        raise MemoryError()
    global _cand_text
    _cand_text = &packed
    found.resize(n_teams)
    try:
        with nogil:
            ends = bucket_suffixes(&packed, depth, sa, &n_buckets, &first)
            if ends == NULL:
                with gil:
                    raise MemoryError()
            # A repeat of two or more codes lies inside one bucket, so each bucket is
            # sorted and mined at once, while its suffixes are still in cache.
            scratch = bucket_scratch(ends, n_buckets, n_teams, &stride)
            if scratch == NULL:
                free(ends)
                with gil:
                    raise MemoryError()
            for b in prange(n_buckets, num_threads=n_teams, schedule="dynamic"):
                tid = threadid()
                _sort_and_mine(&packed, sa, ends, b, first, depth, &r, &found[tid], <size_t>seed_size,
                               <KeyedSuffix*>(scratch + tid * stride))
            free(scratch)
            free(ends)
            for tid in range(n_teams):
                cands.insert(cands.end(), found[tid].begin(), found[tid].end())
                found[tid].clear()
            _keep_best(cands, <size_t>seed_size)
            sort(cands.begin(), cands.end(), _cand_better)
    finally:
        free_packed(&packed)
        free(sa)
    # Arrays, not a tuple per candidate: a million small objects would outlive their use
    # as holes among the seeds' strings.
    offsets = array("q", bytes(8 * cands.size()))
    lengths = array("i", bytes(4 * cands.size()))
    freqs = array("q", bytes(8 * cands.size()))
    cdef int64_t[::1] o = offsets, f = freqs
    cdef int32_t[::1] l = lengths
    for i in range(<int64_t>cands.size()):
        o[i] = cands[i].offset
        l[i] = cands[i].length
        f[i] = cands[i].freq
    return offsets, lengths, freqs


def substrings(codes, list alphabet, offsets, lengths):
    """``codes[o:o + n]`` for each offset and length, as UTF-8 one after another: ``(data, ends)``.

    ``alphabet[code]`` is a code point; substring ``i`` is
    ``data[ends[i - 1]:ends[i]]`` (``ends[-1]`` read as 0). One bytes object
    and one array, however many substrings (the seeds can be a million).

    >>> codes, alphabet = encode_codes(["héllo"])
    >>> data, ends = substrings(codes, alphabet, array("q", [1, 0]), array("i", [3, 1]))
    >>> data.decode(), list(ends)
    ('éllh', [4, 5])
    """
    cdef const void* c = <const void*>_array_ptr(codes) if len(codes) else NULL
    cdef int item = codes.itemsize
    cdef Py_ssize_t n_codes = len(codes)
    cdef const int64_t[::1] o = offsets
    cdef const int32_t[::1] l = lengths
    cdef Py_ssize_t i, k, n = len(o), size = 0
    cdef vector[uint8_t] out
    table = array("I", alphabet)
    cdef const uint32_t[::1] points = table
    ends = array("q", bytes(8 * n))
    cdef int64_t[::1] e = ends
    if len(l) != n:
        raise ValueError("offsets and lengths differ in length")
    for i in range(n):
        if o[i] < 0 or l[i] < 0 or o[i] + l[i] > n_codes:
            raise ValueError(f"substring {i} ({o[i]}, {l[i]}) is outside the codes")
        out.resize(size + 4 * l[i])
        for k in range(l[i]):
            size += put_utf8(points[code_in(c, item, o[i] + k)], out.data() + size)
        e[i] = size
    return PyBytes_FromStringAndSize(<const char*>out.data(), size), ends


cdef void _sort_and_mine(const Packed* p, int32_t* sa, const int64_t* ends, int64_t b,
                         int32_t first, int32_t depth, const PieceRules* r, vector[Cand]* cands,
                         size_t seed_size, KeyedSuffix* scratch) noexcept nogil:
    """Sort bucket ``b`` and add its candidates to ``cands``.

    ``scratch``: room for the largest bucket's keyed suffixes, then its LCP array.
    """
    cdef int64_t lo = ends[b - 1] if b > 0 else 0
    cdef int64_t m = ends[b] - lo
    cdef int32_t* lcp = <int32_t*>(scratch + m)
    if m < 2:
        return
    sort_bucket(p, sa, ends, b, first, depth, lcp, scratch)
    _mine_bucket(p, sa + lo, lcp, m, depth, r, cands, seed_size)


cdef void _mine_bucket(const Packed* p, const int32_t* sa, const int32_t* lcp, int64_t m,
                       int32_t depth, const PieceRules* r, vector[Cand]* cands, size_t seed_size) noexcept nogil:
    """The candidates among the sorted suffixes ``sa[0:m]``: a bottom-up walk of their LCP intervals.

    (Abouelhoda, Kurtz & Ohlebusch 2004; one stack of open intervals.)
    """
    cdef vector[int32_t] st_lcp
    cdef vector[int64_t] st_lb
    cdef int64_t i, lb, rb, size
    cdef int32_t l, top_lcp
    cdef Cand c
    st_lcp.push_back(0)
    st_lb.push_back(0)
    for i in range(1, m + 1):
        l = lcp[i] if i < m else -1
        lb = i - 1
        while st_lcp.size() and l < st_lcp.back():
            top_lcp = st_lcp.back()
            lb = st_lb.back()
            st_lcp.pop_back()
            st_lb.pop_back()
            rb = i - 1
            size = rb - lb + 1
            if top_lcp >= 2 and (top_lcp < depth or _right_maximal(p, sa, lb, rb, depth)) and \
                    _valid_at(p, sa[lb], top_lcp, r):
                c.score = size * top_lcp
                c.offset = sa[lb]
                c.length = top_lcp
                c.freq = size
                cands.push_back(c)
                if cands.size() > 4 * seed_size + 1024:
                    _keep_best(deref(cands), seed_size)
        if i == m:
            break
        if not st_lcp.size() or l > st_lcp.back():
            st_lcp.push_back(l)
            st_lb.push_back(lb)


# -- the lattice of one word ------------------------------------------------------
ctypedef struct Trie:
    const int32_t* base
    const int32_t* check
    const int32_t* value
    int32_t size


cdef int32_t populate(const uint8_t* s, int32_t n, const Trie* trie, const double* scores,
                      const uint8_t* alive, double unk_score, int32_t exclude, Work* w) noexcept nogil:
    """All nodes of the word ``s`` (``n`` bytes) into ``w.nodes`` (start order); returns the char count.

    A node for every live piece matching at a char boundary; an unknown node
    (id -1) where no one-char piece starts. ``exclude`` (a piece id, or -1)
    is left out of the lattice when it spans the whole word (for the
    second-best segmentation), but still counts as a one-char piece.
    """
    cdef int32_t nc = 0, p = 0, mb, i, node, t, v, pos, ci
    cdef bint single
    cdef TNode nd
    w.cb.clear()
    while p < n:
        w.cb.push_back(p)
        mb = one_char_len(s[p])
        if mb > n - p:
            mb = n - p
        p += mb
        nc += 1
    w.cb.push_back(n)
    w.nodes.clear()
    w.start_off.resize(nc + 1)
    for i in range(nc):
        w.start_off[i] = <int32_t>w.nodes.size()
        single = False
        node = 0
        pos = w.cb[i]
        ci = i
        while pos < n:
            t = trie.base[node] + s[pos]
            if t >= trie.size or t < 0 or trie.check[t] != node:
                break
            node = t
            pos += 1
            if pos == w.cb[ci + 1]:
                ci += 1
            v = trie.value[node]
            if v < 0 or pos != w.cb[ci] or not alive[v]:
                continue
            if ci - i == 1:
                single = True
            if v == exclude and i == 0 and ci == nc:
                continue
            nd.start = i
            nd.end = ci
            nd.id = v
            nd.score = scores[v]
            w.nodes.push_back(nd)
        if not single:
            nd.start = i
            nd.end = i + 1
            nd.id = -1
            nd.score = unk_score
            w.nodes.push_back(nd)
    w.start_off[nc] = <int32_t>w.nodes.size()
    return nc


cdef void index_by_end(Work* w, int32_t nc) noexcept nogil:
    cdef size_t k, m = w.nodes.size()
    cdef int32_t e
    w.end_off.assign(nc + 2, 0)
    for k in range(m):
        w.end_off[w.nodes[k].end + 1] += 1
    for e in range(nc + 1):
        w.end_off[e + 1] += w.end_off[e]
    w.by_end.resize(m)
    # end_off[e] is used as a cursor, then restored.
    for k in range(m):
        e = w.nodes[k].end
        w.by_end[w.end_off[e]] = <int32_t>k
        w.end_off[e] += 1
    for e in range(nc, 0, -1):
        w.end_off[e] = w.end_off[e - 1]
    w.end_off[0] = 0


cdef double forward_backward(Work* w, int32_t nc) noexcept nogil:
    """Fill w.alpha (log mass of all paths to each position) and w.beta (from it to the end); return log Z."""
    cdef int32_t e, s, j, k
    cdef double m, acc, x
    cdef TNode* nd
    index_by_end(w, nc)
    w.alpha.resize(nc + 1)
    w.beta.resize(nc + 1)
    w.alpha[0] = 0.0
    for e in range(1, nc + 1):
        m = -INFINITY
        for j in range(w.end_off[e], w.end_off[e + 1]):
            nd = &w.nodes[w.by_end[j]]
            x = w.alpha[nd.start] + nd.score
            if x > m:
                m = x
        acc = 0.0
        if m > -INFINITY:
            for j in range(w.end_off[e], w.end_off[e + 1]):
                nd = &w.nodes[w.by_end[j]]
                acc += exp(w.alpha[nd.start] + nd.score - m)
            w.alpha[e] = m + log(acc)
        else:
            w.alpha[e] = -INFINITY
    w.beta[nc] = 0.0
    for s in range(nc - 1, -1, -1):
        m = -INFINITY
        for k in range(w.start_off[s], w.start_off[s + 1]):
            nd = &w.nodes[k]
            x = w.beta[nd.end] + nd.score
            if x > m:
                m = x
        acc = 0.0
        if m > -INFINITY:
            for k in range(w.start_off[s], w.start_off[s + 1]):
                nd = &w.nodes[k]
                acc += exp(w.beta[nd.end] + nd.score - m)
            w.beta[s] = m + log(acc)
        else:
            w.beta[s] = -INFINITY
    return w.alpha[nc]


cdef int32_t viterbi(Work* w, int32_t nc) noexcept nogil:
    """Best path into w.path (node indices, in order); returns its length (0: no path)."""
    cdef int32_t s, e, k
    cdef double cand
    cdef TNode* nd
    w.best.assign(nc + 1, -INFINITY)
    w.back.assign(nc + 1, -1)
    w.best[0] = 0.0
    for s in range(nc):
        if w.best[s] == -INFINITY:
            continue
        for k in range(w.start_off[s], w.start_off[s + 1]):
            nd = &w.nodes[k]
            cand = w.best[s] + nd.score
            if w.back[nd.end] < 0 or cand > w.best[nd.end]:
                w.best[nd.end] = cand
                w.back[nd.end] = k
    w.path.clear()
    if w.back[nc] < 0:
        return 0
    e = nc
    while e > 0:
        k = w.back[e]
        w.path.push_back(k)
        e = w.nodes[k].start
    # reverse
    s = 0
    e = <int32_t>w.path.size() - 1
    while s < e:
        k = w.path[s]; w.path[s] = w.path[e]; w.path[e] = k
        s += 1
        e -= 1
    return <int32_t>w.path.size()


# -- EM ------------------------------------------------------------------------------
cdef Py_ssize_t _utf8_size(str text) except -1:
    """How many bytes ``text`` takes in UTF-8 (a lone surrogate counts 3; encoding it fails later)."""
    cdef Py_ssize_t i, size = 0, n = len(text)
    cdef uint32_t c
    if PyUnicode_IS_ASCII(text):
        return n
    for i in range(n):
        c = <uint32_t>(<Py_UCS4>text[i])
        size += 1 if c < 0x80 else (2 if c < 0x800 else (3 if c < 0x10000 else 4))
    return size


cdef class UnigramEM:
    """The words (with counts) and the current vocabulary; E/M steps and pruning in C.

    Piece ids are positions in the list given to :meth:`set_pieces`; dropped
    pieces stay as dead ids until the next :meth:`set_pieces`.
    """

    cdef bytes data
    cdef vector[int64_t] offsets
    cdef vector[double] freqs
    cdef readonly long long total_freq
    cdef int n_threads
    cdef DoubleArray trie
    cdef bytes _piece_data              # the pieces' UTF-8, one after another
    cdef vector[int64_t] _piece_off     # piece i is _piece_data[_piece_off[i]:_piece_off[i + 1]]
    cdef vector[double] scores
    cdef vector[uint8_t] alive
    cdef vector[double] expected
    cdef readonly Py_ssize_t n_alive

    def __init__(self, list words, list freqs, int n_threads=1):
        cdef Py_ssize_t i, n = len(words)
        cdef list encoded = [PyUnicode_AsUTF8String(w) for w in words]
        cdef int64_t pos = 0
        if len(freqs) != n:
            raise ValueError("words and freqs differ in length")
        self.data = b"".join(encoded)
        self.offsets.resize(n + 1)
        self.freqs.resize(n)
        self.total_freq = 0
        for i in range(n):
            self.offsets[i] = pos
            pos += PyBytes_GET_SIZE(encoded[i])
            self.freqs[i] = freqs[i]
            self.total_freq += freqs[i]
        self.offsets[n] = pos
        self.n_threads = max(1, n_threads)
        self._piece_data = b""
        self._piece_off.assign(1, 0)
        self.n_alive = 0

    @property
    def n_pieces(self):
        return self._piece_off.size() - 1

    def set_pieces(self, list pieces, list scores):
        """A new vocabulary (all alive): ids are list positions."""
        cdef Py_ssize_t i, n = len(pieces)
        if len(scores) != n:
            raise ValueError("pieces and scores differ in length")
        ends = array("q", bytes(8 * n))
        cdef int64_t[::1] e = ends
        cdef int64_t end = 0
        for i in range(n):
            end += _utf8_size(pieces[i])
            e[i] = end
        self.set_pieces_utf8(PyUnicode_AsUTF8String("".join(pieces)), ends, array("d", scores))

    def set_pieces_utf8(self, bytes data not None, ends, scores):
        """:meth:`set_pieces` from the pieces' UTF-8 one after another (piece ``i`` ends at ``ends[i]``).

        One bytes object and two arrays instead of a str and a float per
        piece (:func:`substrings` makes them for the seeds).
        """
        cdef const int64_t[::1] e = ends
        cdef const double[::1] sc = scores
        cdef Py_ssize_t i, n = len(e)
        cdef vector[KeyRef] refs
        cdef const uint8_t* base = <const uint8_t*>PyBytes_AS_STRING(data)
        if len(sc) != n:
            raise ValueError("ends and scores differ in length")
        for i in range(n):
            if e[i] < (e[i - 1] if i else 0) or e[i] > PyBytes_GET_SIZE(data):
                raise ValueError(f"piece {i} ends at {e[i]}, outside its data")
        self._piece_data = data
        self._piece_off.resize(n + 1)
        self._piece_off[0] = 0
        for i in range(n):
            self._piece_off[i + 1] = e[i]
        refs.resize(n)
        for i in range(n):
            refs[i].key = base + self._piece_off[i]
            refs[i].size = self._piece_off[i + 1] - self._piece_off[i]
            refs[i].value = <int32_t>i
        self.trie = DoubleArray.__new__(DoubleArray)
        self.trie.build(refs)
        self.scores.resize(n)
        self.alive.assign(n, 1)
        for i in range(n):
            self.scores[i] = sc[i]
        self.n_alive = n

    cdef Trie _trie(self):
        cdef Trie t
        t.base = self.trie.base.data()
        t.check = self.trie.check.data()
        t.value = self.trie.value.data()
        t.size = <int32_t>self.trie.check.size()
        return t

    def min_score(self):
        """The lowest live score (the unknown node scores this minus 10)."""
        cdef double m = INFINITY
        cdef size_t i
        for i in range(self.scores.size()):
            if self.alive[i] and self.scores[i] < m:
                m = self.scores[i]
        return m

    def expected_counts(self):
        return [self.expected[i] for i in range(self.expected.size())]

    cdef void _run_words(self, bint e_step, vector[Work]& works, Trie trie, double unk,
                         const uint8_t* data) noexcept nogil:
        """E-step (expected counts, objective) or Viterbi counts over all words, on n_threads threads."""
        cdef int32_t n_words = <int32_t>self.freqs.size()
        cdef int32_t n_chunks = (n_words + CHUNK - 1) // CHUNK
        cdef int32_t chunk, i, end, nc, k
        cdef Work* w
        cdef double z, f
        cdef size_t j
        for chunk in prange(n_chunks, num_threads=self.n_threads, schedule="dynamic"):
            w = &works[threadid()]
            end = chunk * CHUNK + CHUNK
            if end > n_words:
                end = n_words
            for i in range(chunk * CHUNK, end):
                f = self.freqs[i]
                nc = populate(data + self.offsets[i], <int32_t>(self.offsets[i + 1] - self.offsets[i]), &trie,
                              self.scores.data(), self.alive.data(), unk, -1, w)
                w.total = w.total + f
                if e_step:
                    z = forward_backward(w, nc)
                    w.obj = w.obj - f * z
                    for j in range(w.nodes.size()):
                        if w.nodes[j].id >= 0:
                            w.iacc[w.nodes[j].id] += <int64_t>(FIXED_SCALE * f * exp(
                                w.alpha[w.nodes[j].start] + w.nodes[j].score + w.beta[w.nodes[j].end] - z) + 0.5)
                else:
                    viterbi(w, nc)
                    for k in range(<int32_t>w.path.size()):
                        if w.nodes[w.path[k]].id >= 0:
                            w.acc[w.nodes[w.path[k]].id] += f

    cdef double _unk_score(self) noexcept nogil:
        cdef double m = INFINITY
        cdef size_t i
        for i in range(self.scores.size()):
            if self.alive[i] and self.scores[i] < m:
                m = self.scores[i]
        return m - UNK_PENALTY

    cdef double _sum_works(self, bint e_step, vector[double]& out, double* total) except? -1:
        cdef vector[Work] works
        cdef int t
        cdef size_t i, n = self.scores.size()
        cdef double obj = 0.0
        cdef Trie trie = self._trie()
        cdef double unk = self._unk_score()
        cdef const uint8_t* data = <const uint8_t*>PyBytes_AS_STRING(self.data)
        works.resize(self.n_threads)
        cdef int64_t fixed
        for t in range(self.n_threads):
            if e_step:
                works[t].iacc.assign(n, 0)
            else:
                works[t].acc.assign(n, 0.0)
            works[t].obj = 0.0
            works[t].total = 0.0
        with nogil:
            self._run_words(e_step, works, trie, unk, data)
        out.assign(n, 0.0)
        total[0] = 0.0
        if e_step:
            for i in range(n):
                fixed = 0
                for t in range(self.n_threads):
                    fixed += works[t].iacc[i]
                out[i] = fixed / FIXED_SCALE
        else:
            for t in range(self.n_threads):
                for i in range(n):
                    out[i] += works[t].acc[i]
        for t in range(self.n_threads):
            obj += works[t].obj
            total[0] += works[t].total
        return obj

    def em_iteration(self):
        """One E-step and M-step; returns the objective (negative log-likelihood per sentence)."""
        cdef double total = 0.0, obj, s = 0.0, logsum
        cdef size_t i, n = self.scores.size()
        obj = self._sum_works(True, self.expected, &total)
        for i in range(n):
            if self.alive[i] and self.expected[i] < EXPECTED_MIN:
                self.alive[i] = 0
                self.n_alive -= 1
        for i in range(n):
            if self.alive[i]:
                s += self.expected[i]
        logsum = _digamma(s)
        for i in range(n):
            if self.alive[i]:
                self.scores[i] = _digamma(self.expected[i]) - logsum
        return obj / total if total > 0 else 0.0

    def viterbi_counts(self):
        """How often each piece is on the best path of the words (weighted by word count)."""
        cdef vector[double] out
        cdef double total = 0.0
        self._sum_works(False, out, &total)
        return [out[i] for i in range(out.size())]

    def prune(self, long long desired_size, double shrinking_factor):
        """Drop the pieces whose removal costs the least likelihood; returns the live count.

        SentencePiece's PruneSentencePieces: a piece whose best segmentation
        is not itself, or that is never on a best path, goes; a piece with
        no second-best segmentation stays; the rest are ranked by the loss
        ``freq/N · (log p(piece) − Σ log p'(alternative))`` and the best
        ``max(desired_size, shrinking_factor · size)`` survive.
        """
        cdef size_t n = self.scores.size(), i
        cdef vector[uint8_t] keep_always
        cdef vector[int32_t] alt_off, alt_ids
        cdef vector[double] freq
        cdef vector[Work] works
        cdef vector[vector[int32_t]] alts
        cdef Trie trie = self._trie()
        cdef double unk = self._unk_score(), vsum = 0.0, total_freq = 0.0, logsum, logprob_sp, logsum_alt
        cdef double logprob_alt, F, fa
        cdef int32_t nc, k, m, t
        cdef Py_ssize_t pi
        cdef Work* w
        cdef const uint8_t* s
        cdef list candidates = []
        cdef list kept = []
        cdef long long pruned_size
        cdef const uint8_t* data = <const uint8_t*>PyBytes_AS_STRING(self._piece_data)
        cdef vector[const uint8_t*] pp
        cdef vector[int32_t] pl
        keep_always.assign(n, 1)
        alts.resize(n)
        works.resize(self.n_threads)
        pp.resize(n)
        pl.resize(n)
        for i in range(n):
            pp[i] = data + self._piece_off[i]
            pl[i] = <int32_t>(self._piece_off[i + 1] - self._piece_off[i])
        # 1. How each piece would be segmented without itself.
        with nogil:
            for pi in prange(<Py_ssize_t>n, num_threads=self.n_threads, schedule="dynamic", chunksize=256):
                if not self.alive[pi]:
                    continue
                w = &works[threadid()]
                nc = populate(pp[pi], pl[pi], &trie, self.scores.data(), self.alive.data(), unk, -1, w)
                m = viterbi(w, nc)
                if m >= 2:
                    keep_always[pi] = 0
                elif m == 1:
                    nc = populate(pp[pi], pl[pi], &trie, self.scores.data(), self.alive.data(), unk,
                                  <int32_t>pi, w)
                    if viterbi(w, nc) > 0:
                        for k in range(<int32_t>w.path.size()):
                            alts[pi].push_back(w.nodes[w.path[k]].id)
        # 2. Viterbi counts over the corpus.
        self._sum_works(False, freq, &vsum)
        for i in range(n):
            if self.alive[i]:
                total_freq += freq[i]
        logsum = log(total_freq)
        # 3. Losses.
        for i in range(n):
            if not self.alive[i]:
                continue
            if freq[i] == 0 or not keep_always[i]:
                continue
            if alts[i].size() == 0:
                kept.append(i)
                continue
            F = freq[i] / vsum
            logprob_sp = log(freq[i]) - logsum
            logsum_alt = log(total_freq + freq[i] * (<double>alts[i].size() - 1))
            logprob_alt = 0.0
            for k in range(<int32_t>alts[i].size()):
                fa = freq[alts[i][k]] if alts[i][k] >= 0 else 0.0
                logprob_alt += log(fa + freq[i]) - logsum_alt
            candidates.append((-(F * (logprob_sp - logprob_alt)), i))
        pruned_size = max(desired_size, <long long>(shrinking_factor * self.n_alive))
        candidates.sort()
        for _, i in candidates:
            if len(kept) == pruned_size:
                break
            kept.append(i)
        self.alive.assign(n, 0)
        for i in kept:
            self.alive[i] = 1
        self.n_alive = len(kept)
        return self.n_alive

    def pieces(self):
        """The live pieces with their scores, in id order."""
        cdef size_t i
        cdef const char* data = PyBytes_AS_STRING(self._piece_data)
        return [(PyUnicode_DecodeUTF8(data + self._piece_off[i], self._piece_off[i + 1] - self._piece_off[i], NULL),
                 self.scores[i]) for i in range(self.scores.size()) if self.alive[i]]


# -- piece validity from Python ----------------------------------------------------------
cdef PieceRules _rules_from(bytes kinds, const int16_t[::1] scripts, bytes digits, tuple rules):
    cdef PieceRules r
    r.kinds = <const uint8_t*>PyBytes_AS_STRING(kinds)
    r.scripts = &scripts[0]
    r.digits = <const uint8_t*>PyBytes_AS_STRING(digits)
    (r.max_len, r.split_by_whitespace, r.suffix, r.allow_ws_only, r.split_by_script, r.split_by_number,
     r.split_digits) = rules
    return r


def valid_piece_codes(list codes, bytes kinds not None, scripts, bytes digits not None, tuple rules):
    """IsValidSentencePiece for one piece given as codes (see :func:`mine_seeds` for the tables).

    ``rules`` = (max_piece_length, split_by_whitespace, treat_whitespace_as_suffix,
    allow_whitespace_only_pieces, split_by_unicode_script, split_by_number, split_digits).
    """
    cdef PieceRules r = _rules_from(kinds, scripts, digits, rules)
    cdef vector[uint32_t] t
    for c in codes:
        t.push_back(c)
    if t.size() == 0:
        return False
    return valid_piece(t.data(), <int32_t>t.size(), &r)


# -- SentencePiece BPE merges --------------------------------------------------------------
ctypedef struct Entry:
    int64_t count
    int32_t sym


ctypedef struct Symbols:
    vector[uint32_t] codes      # every symbol's codes, back to back
    vector[int64_t] off         # symbol s: codes[off[s]:off[s+1]]
    vector[int64_t] count       # pair symbols: current count
    vector[uint8_t] active
    vector[int32_t] left        # the pair a symbol merges (-1 for a char)
    vector[int32_t] right


cdef inline bint _entry_better(const Entry& a, const Entry& b, const Symbols* S) noexcept nogil:
    """Higher count; then the shorter piece; then the smaller code sequence (= UTF-8 order)."""
    cdef int64_t la, lb, i
    if a.count != b.count:
        return a.count > b.count
    la = S.off[a.sym + 1] - S.off[a.sym]
    lb = S.off[b.sym + 1] - S.off[b.sym]
    if la != lb:
        return la < lb
    for i in range(la):
        if S.codes[S.off[a.sym] + i] != S.codes[S.off[b.sym] + i]:
            return S.codes[S.off[a.sym] + i] < S.codes[S.off[b.sym] + i]
    return a.sym < b.sym


cdef void _heap_push(vector[Entry]& h, Entry e, const Symbols* S) noexcept nogil:
    cdef size_t i, parent
    h.push_back(e)
    i = h.size() - 1
    while i > 0:
        parent = (i - 1) // 2
        if not _entry_better(e, h[parent], S):
            break
        h[i] = h[parent]
        i = parent
    h[i] = e


cdef Entry _heap_pop(vector[Entry]& h, const Symbols* S) noexcept nogil:
    cdef Entry top = h[0], last = h.back()
    cdef size_t i = 0, n, child
    h.pop_back()
    n = h.size()
    if n:
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and _entry_better(h[child + 1], h[child], S):
                child += 1
            if not _entry_better(h[child], last, S):
                break
            h[i] = h[child]
            i = child
        h[i] = last
    return top


cdef int32_t _pair_symbol(Symbols* S, unordered_map[uint64_t, int32_t]& pairs, int32_t a, int32_t b,
                          int32_t unk, const PieceRules* r, vector[vector[int32_t]]& occ) noexcept nogil:
    """The symbol for ``a`` + ``b``, made on first use; -1 if the merged piece is not valid."""
    cdef uint64_t key = (<uint64_t><uint32_t>a << 32) | <uint32_t>b
    cdef unordered_map[uint64_t, int32_t].iterator it = pairs.find(key)
    cdef int32_t s
    cdef int64_t i, start
    if it != pairs.end():
        return deref(it).second
    if a == unk or b == unk:
        pairs[key] = -1
        return -1
    start = <int64_t>S.codes.size()
    for i in range(S.off[a], S.off[a + 1]):
        S.codes.push_back(S.codes[i])
    for i in range(S.off[b], S.off[b + 1]):
        S.codes.push_back(S.codes[i])
    if not valid_piece(S.codes.data() + start, <int32_t>(S.codes.size() - start), r):
        S.codes.resize(start)
        pairs[key] = -1
        return -1
    s = <int32_t>S.off.size() - 1
    S.off.push_back(<int64_t>S.codes.size())
    S.count.push_back(0)
    S.active.push_back(1)
    S.left.push_back(a)
    S.right.push_back(b)
    occ.resize(occ.size() + 1)
    pairs[key] = s
    return s


cdef void _merge_everywhere(Symbols* S, unordered_map[uint64_t, int32_t]& pairs, int32_t sym, vector[int32_t]& seq,
                            vector[int32_t]& word_start, vector[int32_t]& word_len, vector[int64_t]& wfreq,
                            vector[int32_t]& stamp, vector[vector[int32_t]]& occ, vector[Entry]& heap,
                            int32_t unk, const PieceRules* r, int32_t round_) noexcept nogil:
    """Replace every (left, right) by ``sym`` in the words that have it; update the pair counts."""
    cdef int32_t L = S.left[sym], R = S.right[sym], w, i, j, end, p, n_out
    cdef int64_t f
    cdef size_t k, n_occ = occ[sym].size()
    cdef vector[int32_t] touched
    cdef vector[int32_t] words
    cdef bint found
    cdef Entry e
    words.swap(occ[sym])
    for k in range(n_occ):
        w = words[k]
        if stamp[w] == round_:
            continue
        stamp[w] = round_
        end = word_start[w] + word_len[w]
        found = False
        for i in range(word_start[w], end - 1):
            if seq[i] == L and seq[i + 1] == R:
                found = True
                break
        if not found:
            continue
        f = wfreq[w]
        for i in range(word_start[w], end - 1):
            p = _known_pair(pairs, seq[i], seq[i + 1])
            if p >= 0:
                S.count[p] -= f
                touched.push_back(p)
        # Merge left to right, compacting the word in place.
        j = word_start[w]
        i = word_start[w]
        while i < end:
            if i + 1 < end and seq[i] == L and seq[i + 1] == R:
                seq[j] = sym
                i += 2
            else:
                seq[j] = seq[i]
                i += 1
            j += 1
        word_len[w] = j - word_start[w]
        end = j
        for i in range(word_start[w], end - 1):
            p = _pair_symbol(S, pairs, seq[i], seq[i + 1], unk, r, occ)
            if p >= 0:
                S.count[p] += f
                touched.push_back(p)
                if seq[i] == sym or seq[i + 1] == sym:
                    if occ[p].size() == 0 or occ[p].back() != w:
                        occ[p].push_back(w)
    for k in range(touched.size()):
        p = touched[k]
        if S.active[p] and S.count[p] > 0 and stamp_ok(S, p):
            e.count = S.count[p]
            e.sym = p
            _heap_push(heap, e, S)
            S.active[p] = 2   # pushed in this round (reset below)
    for k in range(touched.size()):
        if S.active[touched[k]] == 2:
            S.active[touched[k]] = 1


cdef inline bint stamp_ok(Symbols* S, int32_t p) noexcept nogil:
    return S.active[p] == 1


cdef inline int32_t _known_pair(unordered_map[uint64_t, int32_t]& pairs, int32_t a, int32_t b) noexcept nogil:
    cdef uint64_t key = (<uint64_t><uint32_t>a << 32) | <uint32_t>b
    cdef unordered_map[uint64_t, int32_t].iterator it = pairs.find(key)
    if it == pairs.end():
        return -1
    return deref(it).second


def bpe_merges(list words, list freqs, list alphabet, bytes kinds not None, scripts, bytes digits not None, tuple rules,
               long long n_merges, long unk_char, progress=None):
    """SentencePiece's BPE merge loop over ``{word: count}``; returns the merged pieces in order.

    Each word starts as its chars (one symbol per code; ``alphabet`` maps
    codes, in code point order, to chars). The pair with the highest count
    is merged everywhere (left to right within a word); ties: the shorter
    piece, then the smaller string. Pairs with the unknown char or whose
    merge is not a valid piece are never made.

    >>> al = [ord(c) for c in "▁ab"]
    >>> kinds = b"\\x01\\x00\\x00"                          # '▁' is the whitespace char
    >>> bpe_merges(["▁ab", "▁a", "ab"], [3, 2, 1], al, kinds, array("h", [0, 1, 1]), bytes(3),
    ...            (16, True, False, False, True, True, False), 3, ord("▅"))
    ['▁a', '▁ab', 'ab']
    """
    cdef PieceRules r = _rules_from(kinds, scripts, digits, rules)
    cdef Symbols S
    cdef unordered_map[uint64_t, int32_t] pairs
    cdef unordered_map[uint32_t, int32_t] code_of
    cdef vector[int32_t] seq, word_start, word_len, stamp, tmp, dirty
    cdef vector[int64_t] wfreq
    cdef vector[vector[int32_t]] occ
    cdef vector[Entry] heap
    cdef vector[uint8_t] is_dirty
    cdef Entry e
    cdef int32_t unk = -1, w, i, s, a, b, L, R, n_words = len(words), k, m
    cdef int64_t f
    cdef long long done = 0
    cdef set seen = set()
    cdef list out = []
    cdef str word, piece
    cdef Py_UCS4 ch
    # Unit symbols: one per alphabet code.
    S.off.push_back(0)
    for i in range(len(alphabet)):
        S.codes.push_back(<uint32_t>i)
        S.off.push_back(i + 1)
        S.count.push_back(0)
        S.active.push_back(0)
        S.left.push_back(-1)
        S.right.push_back(-1)
        occ.resize(occ.size() + 1)
        code_of[<uint32_t>alphabet[i]] = i
        if alphabet[i] == unk_char:
            unk = i
    for w in range(n_words):
        word = words[w]
        word_start.push_back(<int32_t>seq.size())
        for ch in word:
            seq.push_back(code_of[<uint32_t>ch])
        word_len.push_back(<int32_t>(seq.size() - word_start[w]))
        wfreq.push_back(freqs[w])
    stamp.assign(n_words, -1)
    for w in range(n_words):
        for i in range(word_start[w], word_start[w] + word_len[w] - 1):
            s = _pair_symbol(&S, pairs, seq[i], seq[i + 1], unk, &r, occ)
            if s >= 0:
                S.count[s] += wfreq[w]
                if occ[s].size() == 0 or occ[s].back() != w:
                    occ[s].push_back(w)
    for s in range(<int32_t>S.count.size()):
        if S.count[s] > 0:
            e.count = S.count[s]
            e.sym = s
            _heap_push(heap, e, &S)
    while done < n_merges and heap.size():
        e = _heap_pop(heap, &S)
        s = e.sym
        if not S.active[s] or S.count[s] != e.count:
            continue
        S.active[s] = 0
        piece = "".join([chr(alphabet[S.codes[k]]) for k in range(S.off[s], S.off[s + 1])])
        if piece in seen:
            continue  # the same piece made from other parts ("aa"+"a" after "a"+"aa")
        seen.add(piece)
        out.append(piece)
        done += 1
        if progress is not None and done % 1000 == 0:
            progress(1000)
        _merge_everywhere(&S, pairs, s, seq, word_start, word_len, wfreq, stamp, occ, heap, unk, &r,
                          <int32_t>done)
    if progress is not None and done % 1000:
        progress(done % 1000)
    return out
