# cython: language_level=3
# distutils: language = c++
"""SentencePiece's encoders over UTF-8 bytes: Unigram Viterbi, n-best,
sampling, SentencePiece BPE, the char and word models, and the
precompiled-charsmap normalizer.

Everything here works on the UTF-8 bytes of the normalized text, in C
arrays, as SentencePiece itself does:

* :class:`DoubleArray` — a base/check double-array trie over bytes. One
  transition is ``t = base[s] + byte; check[t] == s``. Built once per model.
* :class:`Charsmap` — reads the darts-clone trie stored in a .model's
  ``precompiled_charsmap`` (never rebuilt; bounds-checked, the blob is
  untrusted input).
* :class:`SpmNormalizer` — SentencePiece's ``Normalizer::Normalize``:
  longest-match rewriting, user-defined symbols kept verbatim, extra
  whitespace removal, dummy prefix, ``▁`` escaping, and the map from each
  normalized byte back to the original byte.
* :class:`SpmCore` — a model: the best segmentation (the one-pass
  "optimized" Viterbi of SentencePiece ≥ 0.1.97: one best-path cell per
  byte, no lattice kept), n-best by A* over a lattice, forward-filtering
  backward-sampling, sampling without replacement (Gumbel-top-k by a
  stochastic A*), the lattice entropy, SentencePiece BPE (merge the
  adjacent pair whose merged piece scores highest; ties to the left; word
  by word where no piece joins across a ``▁``, a long word from a bucket
  per score instead of a heap: :meth:`SpmCore._bpe`), and
  the char and word models (one piece per char or per ``▁``-word). Also
  Hugging Face's Unigram (``hf_tokenize``; pieces can be left out of the
  search by an exclusion mask) and its Metaspace + Unigram pipeline in one
  call (``hf_metaspace_encode``, for :mod:`pieceworks.fast.unigram`).
* :class:`SpmEncoder` — ``SentencePieceProcessor.encode`` in one call:
  text in, ids or pieces out; a list in GIL-free chunks on threads (:class:`BatchJob`).

Sampling draws from a generator per thread (xoshiro256**), restarted from
the seed of :func:`set_random_seed`: no state is shared between threads.

Two score modes. SentencePiece keeps scores in ``float`` and rounds after
every addition, and ties or near-ties decide segmentations, so ``f32`` mode
reproduces its arithmetic step for step (including where C++'s types mix
``float`` and ``double``). Hugging Face's Unigram uses ``f64`` throughout;
``hf`` mode does that, with its vocabulary rules (every entry in the trie,
the minimum over all scores for the unknown penalty).

Performance notes: the Viterbi keeps three arrays of ``len(bytes) + 1``
cells and never allocates per node; the lattice (n-best, sampling) is a
flat node array with CSR lists of the nodes ending at each position. The
A* agenda reproduces libstdc++'s ``std::priority_queue`` sift order so that
hypotheses of equal score come out in SentencePiece's order.

The encoder's hot path (``SpmEncoder``) is tuned further, each step
measured: the normalizer copies chars no rule can touch without searching
the charsmap (a per-char table, plus one trie step into the next char); the
Viterbi runs in ``float`` (exactly SentencePiece's rounding: a double has
more than twice a float's precision, so a sum rounded to double and then to
float is the float sum) over its own 8-byte-cell trie in which every inner node has a
base of its own (transitions checked by label, as darts-clone does), jumps
over the first char of a walk with a table, relaxes best paths without
branches, and reuses its buffers from call to call. A list is encoded in
chunks of about 32 KB that the threads take as they come free (a
:class:`BatchJob`), each into flat arrays without the GIL; the calling
thread makes the Python lists (from shared int objects, one per id) of the
chunks done, in order, between its own chunks (chunks rather than one
range per thread: a thread slowed by a busy core then simply takes fewer).
Tried and dropped, no faster on this machine: two trie walks interleaved to
overlap their loads, and best-path updates by bit masks instead of a jump.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.math cimport exp, expm1, fabs, log, log1p
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy, memset
from libcpp.algorithm cimport sort, stable_sort
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from pieceworks._kernels.token_finder cimport AroundScratch, AroundTokens, Found, tokens_around

import os

# Piece kinds (ModelProto.SentencePiece.Type numbers).
cdef enum:
    K_NORMAL = 1
    K_UNKNOWN = 2
    K_CONTROL = 3
    K_USER = 4
    K_UNUSED = 5
    K_BYTE = 6

cdef enum:
    MODEL_UNIGRAM = 1
    MODEL_BPE = 2
    MODEL_WORD = 3
    MODEL_CHAR = 4

cdef float FLT_MAX_ = 3.4028234663852886e+38
cdef float FLT_MIN_ = 1.1754943508222875e-38
cdef float UNK_PENALTY = 10.0
cdef int MAX_AGENDA = 10000
cdef double INF_D = float("inf")
cdef int MIN_AGENDA = 512

# SentencePiece BPE: words of at least this many symbols (and a sixteenth of the distinct scores: each
# word clears a few words a score) merge through buckets, not the heap (SpmCore._bpe_merge_buckets).
cdef Py_ssize_t BUCKET_WORD = 4096

# A '▁' (U+2581) in UTF-8.
cdef uint8_t WS0 = 0xE2, WS1 = 0x96, WS2 = 0x81


class KernelError(ValueError):
    """A malformed model or charsmap reached the kernel (the Python layer says the fix)."""


cdef inline int one_char_len(uint8_t c) noexcept nogil:
    # SentencePiece's OneCharLen: from the lead byte's top nibble.
    if c < 0xC0:
        return 1
    if c < 0xE0:
        return 2
    if c < 0xF0:
        return 3
    return 4


cdef inline bint is_trail(uint8_t c) noexcept nogil:
    return (c & 0xC0) == 0x80


cdef inline int valid_utf8_len(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Length of the valid UTF-8 char at ``s``, or 0 if it is malformed (SentencePiece's DecodeUTF8)."""
    cdef uint32_t cp
    cdef uint8_t c = s[0]
    if c < 0x80:
        return 1
    if n >= 2 and (c & 0xE0) == 0xC0:
        cp = ((c & 0x1F) << 6) | (s[1] & 0x3F)
        if is_trail(s[1]) and cp >= 0x80:
            return 2
    elif n >= 3 and (c & 0xF0) == 0xE0:
        cp = ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F)
        if is_trail(s[1]) and is_trail(s[2]) and cp >= 0x800 and (cp < 0xD800 or cp >= 0xE000):
            return 3
    elif n >= 4 and (c & 0xF8) == 0xF0:
        cp = ((c & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F)
        if is_trail(s[1]) and is_trail(s[2]) and is_trail(s[3]) and cp >= 0x10000 and cp <= 0x10FFFF:
            return 4
    return 0


cdef extern from *:
    """
    /* Round a double to float precision, and make the compiler keep the
       rounding: GCC otherwise drops (double)(float)x at -O2 when it can see
       where x came from, which silently changes SentencePiece's results. */
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    static inline double pw_f32(double x) { float f = (float)x; __asm__("" : "+x"(f)); return (double)f; }
    #else
    static inline double pw_f32(double x) { volatile float f = (float)x; return (double)f; }
    #endif
    """
    double pw_f32(double x) noexcept nogil


cdef inline double f32(double x) noexcept nogil:
    return pw_f32(x)


# A user-defined piece scores 0.1 per unit of length minus 0.1, whatever the
# other scores (measured against SentencePiece 0.2: the one-pass Viterbi
# counts bytes, the lattice used for n-best and sampling counts chars). The
# sum is taken in double and rounded to float once: rounding 3 * 0.1 to float
# first gives '▁' 0.20000002, not 0.2, and splits '▁b' where SentencePiece
# keeps it on a tie.
cdef inline double _user_score(int length) noexcept nogil:
    return f32(<double>length * 0.1 - 0.1)


# -- random numbers: xoshiro256**, one generator per thread ----------------------
# Sampling must be reproducible (the same seed gives the same samples) and
# safe on threads (two threads sampling at once must not share an unlocked
# state). So each thread owns a generator (C++ thread_local), and a global
# seed with a generation number says how to (re)start it: a thread whose
# generator is older than the last set_random_seed() reseeds it before its
# next draw. After set_random_seed(s), every thread draws the same stream
# it would draw alone, whatever the other threads do (as SentencePiece's
# thread_local std::mt19937 seeded from SetRandomGeneratorSeed). Without a
# seed each thread starts from the OS's entropy.
cdef extern from *:
    """
    typedef struct { uint64_t s[4]; uint64_t generation; } pw_rng;
    static thread_local pw_rng pw_thread_rng_state = {{0, 0, 0, 0}, 0};
    static inline pw_rng* pw_thread_rng(void) { return &pw_thread_rng_state; }
    """
    ctypedef struct Rng "pw_rng":
        uint64_t s[4]
        uint64_t generation
    Rng* pw_thread_rng() noexcept nogil


cdef uint64_t _seed = 0            # the seed of set_random_seed (if _seeded)
cdef bint _seeded = False
cdef uint64_t _generation = 1      # bumped by every set_random_seed; 0 is "never seeded"


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef uint64_t rng_next(Rng* r) noexcept nogil:
    cdef uint64_t result = _rotl(r.s[1] * 5, 7) * 9
    cdef uint64_t t = r.s[1] << 17
    r.s[2] ^= r.s[0]
    r.s[3] ^= r.s[1]
    r.s[1] ^= r.s[2]
    r.s[0] ^= r.s[3]
    r.s[2] ^= t
    r.s[3] = _rotl(r.s[3], 45)
    return result


cdef inline double rng_uniform(Rng* r) noexcept nogil:
    """A double in [0, 1)."""
    return <double>(rng_next(r) >> 11) * (1.0 / 9007199254740992.0)


cdef inline double rng_gumbel(Rng* r) noexcept nogil:
    """A standard Gumbel draw, -log(-log(u)).

    ``u`` is strictly inside (0, 1), so the draw is always finite
    (SentencePiece's float ``u + 1e-7`` can round to 1 and give +inf).
    """
    cdef double u = (<double>(rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0)
    return -log(-log(u))


cdef void _seed_rng(Rng* r, uint64_t z) noexcept nogil:
    # splitmix64 fills the state (never all zero).
    cdef int i
    for i in range(4):
        z += <uint64_t>11400714819323198485ULL
        r.s[i] = z
        r.s[i] = (r.s[i] ^ (r.s[i] >> 30)) * <uint64_t>13787848793156543929ULL
        r.s[i] = (r.s[i] ^ (r.s[i] >> 27)) * <uint64_t>10723151780598845931ULL
        r.s[i] = r.s[i] ^ (r.s[i] >> 31)


cdef Rng* thread_rng() except NULL:
    """This thread's generator, restarted if a seed was set since its last draw. Call with the GIL."""
    cdef Rng* r = pw_thread_rng()
    if r.generation != _generation:
        _seed_rng(r, _seed if _seeded else <uint64_t>int.from_bytes(os.urandom(8), "little"))
        r.generation = _generation
    return r


def set_random_seed(seed):
    """Seed the sampling generators (``None``: from the OS), so samples repeat.

    Every thread's generator restarts from ``seed`` before its next draw.

    >>> set_random_seed(1); a = random_uniform(); set_random_seed(1); a == random_uniform()
    True
    """
    global _seed, _seeded, _generation
    if seed is None:
        _seeded = False
    else:
        _seed = <uint64_t>(int(seed) & 0xFFFFFFFFFFFFFFFFULL)
        _seeded = True
    _generation += 1


def random_uniform():
    """One draw in [0, 1) from this thread's sampling generator."""
    return rng_uniform(thread_rng())


cdef int pick_index(const vector[double]& weights, Rng* rng) noexcept nogil:
    """Index drawn with probability proportional to ``weights`` (std::discrete_distribution)."""
    cdef double total = 0.0, acc = 0.0, r
    cdef size_t i, n = weights.size()
    for i in range(n):
        total += weights[i]
    if n == 0:
        return -1
    if not (total > 0.0):
        return <int>(rng_next(rng) % n)
    r = rng_uniform(rng) * total
    for i in range(n):
        acc += weights[i]
        if r < acc:
            return <int>i
    return <int>(n - 1)


# -- the double-array trie ---------------------------------------------------
cdef class DoubleArray:
    """A byte trie: ``keys`` (bytes) → ``values`` (int ≥ 0) in base/check arrays.

    >>> t = DoubleArray([b"a", b"ab", b"b"], [7, 8, 9])
    >>> t.common_prefix_search(b"abc"), t.exact_match(b"b"), t.exact_match(b"c")
    ([(1, 7), (2, 8)], 9, -1)
    """

    def __init__(self, keys, values):
        cdef list key_list = list(keys), value_list = list(values)
        cdef Py_ssize_t n = len(key_list), i
        cdef vector[KeyRef] refs
        if len(value_list) != n:
            raise ValueError("DoubleArray: keys and values differ in length")
        refs.resize(n)
        for i in range(n):
            key = key_list[i]
            if not isinstance(key, bytes):
                raise TypeError("DoubleArray keys must be bytes")
            refs[i].key = <const uint8_t*>PyBytes_AS_STRING(key)
            refs[i].size = PyBytes_GET_SIZE(key)
            refs[i].value = <int32_t>value_list[i]
        self.build(refs)      # (key_list keeps the keys alive until it returns)

    cdef int build(self, vector[KeyRef]& refs) except -1:
        """Build from ``refs`` (any order; reordered here): the keys, byte strings, map to the values.

        A key given twice is an error; empty keys are left out (they never match).
        """
        cdef Py_ssize_t i, n = refs.size(), shared, nodes = 1, empty = 0
        cdef vector[int32_t] skip
        sort(refs.begin(), refs.end())
        for i in range(n):
            shared = 0
            if i:
                while shared < refs[i].size and shared < refs[i - 1].size and \
                        refs[i].key[shared] == refs[i - 1].key[shared]:
                    shared += 1
                if shared == refs[i].size == refs[i - 1].size:
                    raise KernelError("duplicate key "
                                      f"{PyBytes_FromStringAndSize(<const char*>refs[i].key, refs[i].size)!r}")
            nodes += refs[i].size - shared      # the trie's nodes: each key's bytes past the one before
            if refs[i].size == 0:
                empty += 1      # an empty key never matches anything (it sorts first)
        self.n_keys = <int>(n - empty)
        # Room for every node at once (the cells fill densely), so the arrays are not copied as they grow.
        self._grow(skip, nodes + nodes // 16 + 256)
        self._build(refs.data() + empty, n - empty, skip)
        self._trim()
        return 0

    cdef void _trim(self):
        # The arrays were sized ahead (and grow by half): cells past the last used one are
        # never read (every lookup checks the size), so they go.
        cdef Py_ssize_t used = self.check.size()
        while used > 1 and self.check[used - 1] == -1:
            used -= 1
        self.base.resize(used)
        self.check.resize(used)
        self.value.resize(used)
        self.base.shrink_to_fit()
        self.check.shrink_to_fit()
        self.value.shrink_to_fit()

    cdef void _grow(self, vector[int32_t]& skip, Py_ssize_t need):
        cdef Py_ssize_t old = self.check.size(), size, i
        if need < old:
            return
        size = max(need + 1, old + old // 2, 1024)    # by half: doubling would leave up to half unused
        self.base.resize(size, 0)
        self.check.resize(size, -1)
        self.value.resize(size, -1)
        skip.resize(size + 1)
        for i in range(old, size + 1):
            skip[i] = <int32_t>i

    cdef int32_t _first_free(self, vector[int32_t]& skip, int32_t i):
        # Smallest free cell >= i (union-find "next free" with path halving).
        self._grow(skip, i)
        while skip[i] != i:
            skip[i] = skip[skip[i]]
            i = skip[i]
            self._grow(skip, i)
        return i

    cdef void _build(self, const KeyRef* keys, Py_ssize_t n, vector[int32_t]& skip):
        """The cells of ``keys[:n]`` (sorted, distinct, none empty), in arrays :meth:`build` sized."""
        cdef vector[int32_t] st_node, st_lo, st_hi, st_depth
        cdef vector[int32_t] labels, starts
        cdef int32_t node, lo, hi, depth, j, b, p, q, c, prev
        cdef Py_ssize_t k
        cdef bint ok
        self.check[0] = -2  # the root
        skip[0] = 1
        if n == 0:
            return
        st_node.push_back(0); st_lo.push_back(0); st_hi.push_back(<int32_t>n); st_depth.push_back(0)
        while st_node.size():
            node = st_node.back(); st_node.pop_back()
            lo = st_lo.back(); st_lo.pop_back()
            hi = st_hi.back(); st_hi.pop_back()
            depth = st_depth.back(); st_depth.pop_back()
            if keys[lo].size == depth:  # sorted: the key that ends here comes first
                self.value[node] = keys[lo].value
                lo += 1
            labels.clear()
            starts.clear()
            prev = -1
            for j in range(lo, hi):
                c = keys[j].key[depth]
                if c != prev:
                    labels.push_back(c)
                    starts.push_back(j)
                    prev = c
            if labels.size() == 0:
                continue
            starts.push_back(hi)
            # The smallest base whose cells for every label are free.
            p = self._first_free(skip, labels[0] + 1)
            while True:
                b = p - labels[0]
                ok = True
                for k in range(1, <Py_ssize_t>labels.size()):
                    q = b + labels[k]
                    self._grow(skip, q)
                    if self.check[q] != -1:
                        ok = False
                        break
                if ok:
                    break
                p = self._first_free(skip, p + 1)
            self.base[node] = b
            for k in range(<Py_ssize_t>labels.size()):
                q = b + labels[k]
                self.check[q] = node
                skip[q] = q + 1
                st_node.push_back(q)
                st_lo.push_back(starts[k])
                st_hi.push_back(starts[k + 1])
                st_depth.push_back(depth + 1)

    cdef int32_t exact(self, const uint8_t* key, Py_ssize_t n) noexcept nogil:
        cdef int32_t s = 0, t
        cdef int32_t size = <int32_t>self.check.size()
        cdef const int32_t* base = self.base.data()
        cdef const int32_t* check = self.check.data()
        cdef Py_ssize_t i
        for i in range(n):
            t = base[s] + key[i]
            if t >= size or check[t] != s:
                return -1
            s = t
        return self.value[s]

    def exact_match(self, bytes key not None):
        """The value of ``key``, or -1."""
        return self.exact(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))

    def common_prefix_search(self, bytes key not None):
        """``[(length, value)]`` for every key that is a prefix of ``key``, shortest first."""
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(key)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(key), i
        cdef int32_t node = 0, t, size = <int32_t>self.check.size()
        out = []
        for i in range(n):
            t = self.base[node] + s[i]
            if t >= size or self.check[t] != node:
                break
            node = t
            if self.value[node] >= 0:
                out.append((i + 1, self.value[node]))
        return out

    def __len__(self):
        return self.n_keys

    @property
    def n_cells(self):
        return self.check.size()


# -- the precompiled charsmap (darts-clone) -----------------------------------
# darts-clone: a unit's label is its low byte plus the leaf bit (bit 31).
cdef uint32_t LABEL_MASK = <uint32_t>2147483903u
# Charsmap.after(): a rule may match; take the general path.
cdef uint32_t NO_SHORTCUT = <uint32_t>0xFFFFFFFFu


cdef inline bint _dead_after(const uint8_t* units, Py_ssize_t n_units, uint32_t state, const uint8_t* s,
                             Py_ssize_t n) noexcept nogil:
    # True if the charsmap walk at Charsmap.after()'s ``state`` dies within the next char ``s``
    # (n > 0 bytes left) before any key ends: then no rule matches here.
    cdef Py_ssize_t pos = state - 1, i, length = one_char_len(s[0])
    cdef uint32_t unit, c
    if length > n:
        length = n
    for i in range(length):
        c = s[i]
        pos ^= c
        if pos >= n_units:
            return True
        unit = load_u32(units + 4 * pos)
        if (unit & LABEL_MASK) != c:
            return True
        pos ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
        if pos >= n_units:
            return True
        if (unit >> 8) & 1:
            return False  # a key ends here
    return False


cdef inline uint32_t load_u32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef class Charsmap:
    """The rewrite rules in a ``precompiled_charsmap``: a darts-clone trie + NUL-separated strings.

    Layout: ``<u32 trie size in bytes><trie units, u32 LE each><normalized strings>``.
    """

    def __init__(self, bytes blob not None):
        cdef Py_ssize_t n = PyBytes_GET_SIZE(blob)
        cdef uint32_t trie_size
        if n <= 4:
            raise KernelError("the precompiled charsmap is shorter than its 4-byte header")
        self.blob = blob
        trie_size = load_u32(<const uint8_t*>PyBytes_AS_STRING(blob))
        if trie_size >= n - 4 + 1 or trie_size >= n:
            raise KernelError(f"the precompiled charsmap's trie size ({trie_size}) exceeds the blob ({n} bytes)")
        self.units = <const uint8_t*>PyBytes_AS_STRING(blob) + 4
        self.n_units = trie_size // 4
        self.strings = self.units + trie_size
        self.n_strings = n - 4 - trie_size
        if self.n_units == 0:
            raise KernelError("the precompiled charsmap has an empty trie")

    cdef uint32_t _unit(self, Py_ssize_t i) noexcept nogil:
        return load_u32(self.units + 4 * i)

    cdef Py_ssize_t _child(self, uint32_t unit, Py_ssize_t pos, int c) noexcept nogil:
        """The position of the child labelled ``c`` of ``unit`` (at ``pos``), or -1 if it has none."""
        cdef Py_ssize_t child = pos ^ ((unit >> 10) << ((unit & (1 << 9)) >> 6)) ^ c
        if child >= self.n_units or (self._unit(child) & LABEL_MASK) != <uint32_t>c:
            return -1
        return child

    cdef Py_ssize_t _search(self, const uint8_t* s, Py_ssize_t n, Py_ssize_t* value, bint longest) noexcept nogil:
        # darts-clone commonPrefixSearch; returns the match length (0: none).
        cdef Py_ssize_t pos = 0, i, best = 0
        cdef uint32_t unit, c
        if self.n_units == 0:
            return 0
        unit = self._unit(0)
        pos ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
        for i in range(n):
            c = s[i]
            pos ^= c
            if pos >= self.n_units:
                break
            unit = self._unit(pos)
            if (unit & LABEL_MASK) != c:
                break
            pos ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if pos >= self.n_units:
                break
            if (unit >> 8) & 1:
                best = i + 1
                value[0] = self._unit(pos) & 0x7FFFFFFF
                if not longest:
                    return best
        return best

    cdef Py_ssize_t longest(self, const uint8_t* s, Py_ssize_t n, Py_ssize_t* value) noexcept nogil:
        return self._search(s, n, value, True)

    cdef uint32_t after(self, const uint8_t* s, Py_ssize_t n) noexcept nogil:
        """How a text starting with ``s[:n]`` can match: 0 no rule can (the walk dies inside it),
        ``NO_SHORTCUT`` a rule may end inside it or right at its end, else 1 + the trie position
        from which the bytes after it are looked up (a rule matches only if the walk goes on)."""
        cdef Py_ssize_t pos = 0, i
        cdef uint32_t unit, c
        unit = self._unit(0)
        pos ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
        for i in range(n):
            c = s[i]
            pos ^= c
            if pos >= self.n_units:
                return 0
            unit = self._unit(pos)
            if (unit & LABEL_MASK) != c:
                return 0
            pos ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if pos >= self.n_units:
                return 0
            if (unit >> 8) & 1:
                return NO_SHORTCUT  # a key ends here
        return <uint32_t>(pos + 1)

    cdef Py_ssize_t shortest(self, const uint8_t* s, Py_ssize_t n, Py_ssize_t* value) noexcept nogil:
        return self._search(s, n, value, False)

    cdef Py_ssize_t _string_end(self, Py_ssize_t start) noexcept nogil:
        cdef Py_ssize_t e = start
        while e < self.n_strings and self.strings[e] != 0:
            e += 1
        return e

    def lookup(self, bytes key not None, bint longest=True):
        """``(match length, replacement bytes)`` for the rule matching a prefix of ``key``, or None.

        ``longest=True`` is SentencePiece's rule; ``False`` takes the first
        (shortest) match, as Hugging Face's ``Precompiled`` does.
        """
        cdef Py_ssize_t value = 0, length
        if longest:
            length = self.longest(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), &value)
        else:
            length = self.shortest(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), &value)
        if length == 0:
            return None
        if value >= self.n_strings:
            raise KernelError(f"a charsmap rule points past the end of its strings (offset {value})")
        return length, PyBytes_FromStringAndSize(<const char*>self.strings + value,
                                                 self._string_end(value) - value)

    cdef bint second_chars(self, uint64_t* bits) noexcept nogil:
        """Set bit c of ``bits`` (1024 words) for every char c < U+10000 that a rule's walk can
        go on through right after the rule's first char; False if some walk ends inside that
        char (then no such filter is exact).

        A walk that dies within the next char matched nothing (``_dead_after``),
        and so it is for every next char not marked here.
        """
        cdef uint8_t path[8]
        memset(bits, 0, 1024 * sizeof(uint64_t))
        return self._mark_from(self._unit(0), 0, path, 0, bits)

    cdef bint _mark_from(self, uint32_t unit, Py_ssize_t pos, uint8_t* path, int depth,
                         uint64_t* bits) noexcept nogil:
        cdef Py_ssize_t child
        cdef uint32_t cu
        cdef int c, first, second
        for c in range(1, 256):
            child = self._child(unit, pos, c)
            if child < 0:
                continue
            cu = self._unit(child)
            path[depth] = <uint8_t>c
            first = one_char_len(path[0])
            if depth + 1 <= first:
                if not self._mark_from(cu, child, path, depth + 1, bits):
                    return False
                continue
            second = one_char_len(path[first])
            if depth + 1 - first == second:
                # The walk went through a whole next char. (The filter is asked only about
                # valid chars below U+10000: others take the trie walk.)
                if second < 4 and valid_utf8_len(path + first, second) == second:
                    c = <int>_decode_utf8(path + first, second)
                    bits[c >> 6] |= (<uint64_t>1) << (c & 63)
            elif (cu >> 8) & 1:
                return False   # a rule ends inside the next char
            elif not self._mark_from(cu, child, path, depth + 1, bits):
                return False
        return True

    def rules(self):
        """Every ``(source bytes, replacement bytes)`` rule, by walking the trie."""
        out = []
        self._walk(self._unit(0), 0, b"", out, 0)
        return out

    cdef _walk(self, uint32_t unit, Py_ssize_t pos, bytes prefix, list out, int depth):
        cdef Py_ssize_t child, leaf, value
        cdef uint32_t cu
        cdef int c
        if depth > 64:
            return
        for c in range(1, 256):
            child = self._child(unit, pos, c)
            if child < 0:
                continue
            cu = self._unit(child)
            key = prefix + bytes([c])
            if (cu >> 8) & 1:
                leaf = child ^ ((cu >> 10) << ((cu & (1 << 9)) >> 6))
                if leaf < self.n_units:
                    value = self._unit(leaf) & 0x7FFFFFFF
                    if value < self.n_strings:
                        out.append((key, PyBytes_FromStringAndSize(<const char*>self.strings + value,
                                                                   self._string_end(value) - value)))
            self._walk(cu, child, key, out, depth + 1)


# -- SentencePiece's normalizer ----------------------------------------------
cdef class SpmNormalizer:
    """``Normalizer::Normalize``: rules, whitespace, dummy prefix, ``▁``, offsets.

    >>> SpmNormalizer(None, None, True, True, True, False).normalize(b"  a  b ", False)[0].decode()
    '▁a▁b'

    Most chars of real text are left as they are by every rule. A table
    over U+0000..U+FFFF says, per char, whether a rule can match a text
    starting with it: never (the char is copied as is), only if the next
    byte continues the charsmap walk (one trie step tells), or maybe (the
    general path). So ASCII runs and most CJK text are copied without
    searching the tries, and every other char takes the general path: the
    result is the same either way.
    """

    cdef Charsmap charsmap
    cdef DoubleArray matcher
    cdef readonly bint add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, suffix
    cdef vector[uint32_t] follow    # per char < U+10000: 0, NO_SHORTCUT or 1 + the charsmap walk's state
    # Two bits per char < U+10000, in 16 KB: bit 0 "copied whatever follows" (follow == 0), bit 1
    # "copied unless the next char is one a rule's walk goes on through" (Charsmap.second_chars).
    cdef uint64_t quick[2048]
    cdef uint64_t second[1025]      # bit c: a rule's walk may go on through c; bit 0x10000: any other
    cdef uint64_t ascii_pair[128][2]   # bit b of [a]: ASCII char a before ASCII byte b is copied as is

    def __init__(self, Charsmap charsmap, DoubleArray matcher, bint add_dummy_prefix,
                 bint remove_extra_whitespaces, bint escape_whitespaces, bint treat_whitespace_as_suffix):
        self.charsmap = charsmap
        self.matcher = matcher if matcher is not None and len(matcher) else None
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.suffix = treat_whitespace_as_suffix
        self._mark_plain_chars()

    cdef void _mark_plain_chars(self):
        cdef uint8_t user_first[256]
        cdef uint8_t buf[4]
        cdef int32_t c, t, size
        cdef uint32_t cp
        cdef Py_ssize_t length
        memset(user_first, 0, sizeof(user_first))
        if self.matcher is not None:
            size = <int32_t>self.matcher.check.size()
            for c in range(256):
                t = self.matcher.base[0] + c
                if t < size and self.matcher.check[t] == 0:
                    user_first[c] = 1
        self.follow.assign(0x10000, 0)
        for cp in range(0x10000):
            length = put_utf8(cp, buf)
            if (0xD800 <= cp < 0xE000) or user_first[buf[0]]:
                self.follow[cp] = NO_SHORTCUT
            elif self.charsmap is not None:
                self.follow[cp] = self.charsmap.after(buf, length)
        self._mark_quick()
        memset(self.ascii_pair, 0, sizeof(self.ascii_pair))
        for cp in range(128):
            for c in range(128):
                buf[0] = <uint8_t>cp
                buf[1] = <uint8_t>c
                if self._copied(cp, buf, 1, 2):
                    self.ascii_pair[cp][c >> 6] |= (<uint64_t>1) << (c & 63)

    cdef void _mark_quick(self):
        cdef uint32_t cp, bits
        cdef bint exact = self.charsmap is not None and self.charsmap.second_chars(self.second)
        self.second[1024] = 1   # "the next char is not one the table knows": take the trie walk
        memset(self.quick, 0, sizeof(self.quick))
        for cp in range(0x10000):
            bits = 1 if self.follow[cp] == 0 else (2 if exact and self.follow[cp] != NO_SHORTCUT else 0)
            self.quick[cp >> 5] |= (<uint64_t>bits) << (2 * (cp & 31))

    cdef inline bint _quick_copied(self, uint32_t cp, const uint8_t* s, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
        """``_copied`` by table lookups alone, without a branch on the char (False: ask ``_copied``).

        In CJK text the chars with and without rules alternate at random, so a
        branch on them would be mispredicted at every other char.
        """
        cdef uint32_t bits = (self.quick[cp >> 5] >> (2 * (cp & 31))) & 3
        cdef uint32_t nxt = 0x10000
        cdef Py_ssize_t length
        if k < n:
            length = valid_utf8_len(s + k, n - k)
            if 0 < length < 4:
                nxt = _decode_utf8(s + k, length)
        return (bits & 1) | ((bits >> 1) & ~(<uint32_t>(self.second[nxt >> 6] >> (nxt & 63))) & 1)

    cdef inline bint _ascii_copied(self, const uint8_t* s, Py_ssize_t j, Py_ssize_t n) noexcept nogil:
        """``_copied`` for the ASCII char ``s[j]``, by table when the next byte is ASCII too."""
        cdef uint8_t a = s[j], b
        if j + 1 < n:
            b = s[j + 1]
            if b < 0x80:
                return (self.ascii_pair[a][b >> 6] >> (b & 63)) & 1
        return self._copied(a, s, j + 1, n)

    cdef inline bint _copied(self, uint32_t cp, const uint8_t* s, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
        """True if the char U+cp (< U+10000) before ``s[k]`` is copied as is (``k`` = its end).

        Rules that start with the char (a letter and a combining accent, say)
        are ruled out by walking the charsmap trie on through the next char.
        """
        cdef uint32_t state = self.follow[cp]
        if state == 0:
            return True
        if state == NO_SHORTCUT:
            return False
        return k >= n or _dead_after(self.charsmap.units, self.charsmap.n_units, state, s + k, n - k)

    def leaves(self, str text not None, bytes swaps=None) -> bool:
        """Whether no charsmap rule matches anywhere in ``text`` (so no normalization rule changes it).

        False for a text with a lone surrogate (no UTF-8 form to check).
        ``swaps``: the text is read with them swapped, as
        ``SpmCore.hf_metaspace_raw_batch`` reads it.
        """
        cdef vector[uint8_t] swapped
        cdef const uint8_t* s
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return False
        s = <const uint8_t*>(<bytes>data)
        if swaps is not None:
            s = _swapped(s, len(data), _swap_table(swaps), swapped)
        return self.untouched(s, len(data))

    cdef bint untouched(self, const uint8_t* s, Py_ssize_t n) noexcept nogil:
        """True if no charsmap rule matches anywhere in the valid UTF-8 text ``s[:n]`` (rules only)."""
        cdef Py_ssize_t i = 0, length
        cdef uint32_t state
        while i < n:
            if s[i] < 0x80:
                if not self._ascii_copied(s, i, n):
                    return False
                i += 1
                continue
            length = valid_utf8_len(s + i, n - i)
            if length == 0:
                return False
            if length < 4:
                if not self._copied(_decode_utf8(s + i, length), s, i + length, n):
                    return False
            elif self.charsmap is not None:
                state = self.charsmap.after(s + i, length)
                if state == NO_SHORTCUT or (state != 0 and i + length < n and not _dead_after(
                        self.charsmap.units, self.charsmap.n_units, state, s + i + length, n - i - length)):
                    return False  # (a walk still going at the end of the text matched nothing)
            i += length
        return True

    cdef Py_ssize_t _prefix(self, const uint8_t* s, Py_ssize_t n, const uint8_t** rep,
                            Py_ssize_t* rep_len) noexcept nogil:
        """NormalizePrefix: how many input bytes the next unit takes, and its replacement."""
        cdef Py_ssize_t best = 0, value = 0, length, i
        cdef int32_t node, t, size
        # User-defined symbols are copied verbatim (longest match wins).
        if self.matcher is not None:
            node = 0
            size = <int32_t>self.matcher.check.size()
            for i in range(n):
                t = self.matcher.base[node] + s[i]
                if t >= size or self.matcher.check[t] != node:
                    break
                node = t
                if self.matcher.value[node] >= 0:
                    best = i + 1
            if best:
                rep[0] = s
                rep_len[0] = best
                return best
        if self.charsmap is not None:
            length = self.charsmap.longest(s, n, &value)
            if length > 0 and value < self.charsmap.n_strings:
                rep[0] = self.charsmap.strings + value
                rep_len[0] = self.charsmap._string_end(value) - value
                return length
        length = valid_utf8_len(s, n)
        if length == 0:
            rep[0] = <const uint8_t*>"\xef\xbf\xbd"
            rep_len[0] = 3
            return 1
        rep[0] = s
        rep_len[0] = length
        return length

    cdef Py_ssize_t run(self, const uint8_t* s, Py_ssize_t n, vector[uint8_t]& out, vector[int32_t]& to_orig,
                        bint offsets) noexcept nogil:
        """Normalize ``s[:n]`` into ``out`` (resized to fit); its length.

        With ``offsets``, ``to_orig`` gets the input offset of each output
        byte and one more entry (the end); else it is left alone.
        """
        cdef Py_ssize_t consumed = 0, took, rep_len, j, k, m = 0, length
        cdef const uint8_t* rep = NULL
        cdef uint8_t* o
        cdef int32_t* oo = NULL
        cdef uint32_t c
        cdef bint is_prev_space, remove = self.remove_extra_whitespaces, escape = self.escape_whitespaces
        out.clear()
        if offsets:
            to_orig.clear()
        if n == 0:
            return 0
        if remove:
            while consumed < n:
                took = self._prefix(s + consumed, n - consumed, &rep, &rep_len)
                if not (rep_len == 1 and rep[0] == 32):
                    break
                consumed += took
        if consumed == n:
            return 0
        # Room for the common case (3 bytes per input byte, as for ' ' → '▁'); grown as needed.
        _room(out, to_orig, offsets, 0, 3 * (n - consumed) + 8)
        o = out.data()
        if offsets:
            oo = to_orig.data()
        if not self.suffix and self.add_dummy_prefix:
            m = _put_space(o, oo, m, consumed, escape)
        is_prev_space = remove
        while consumed < n:
            c = s[consumed]
            if c < 0x80 and self._ascii_copied(s, consumed, n):
                if c != 32:
                    # A run of plain ASCII chars other than space: copied as they are.
                    j = consumed + 1
                    while j < n and s[j] < 0x80 and s[j] != 32 and self._ascii_copied(s, j, n):
                        j += 1
                    if m + (j - consumed) + 3 > <Py_ssize_t>out.size():
                        _room(out, to_orig, offsets, m, j - consumed + 3)
                        o = out.data()
                        if offsets:
                            oo = to_orig.data()
                    memcpy(o + m, s + consumed, j - consumed)
                    if offsets:
                        for k in range(j - consumed):
                            oo[m + k] = <int32_t>(consumed + k)
                    m += j - consumed
                    consumed = j
                    is_prev_space = False
                    continue
                # A plain space: one '▁' (or ' '), or nothing after another space.
                if not is_prev_space:
                    if m + 3 > <Py_ssize_t>out.size():
                        _room(out, to_orig, offsets, m, 3)
                        o = out.data()
                        if offsets:
                            oo = to_orig.data()
                    m = _put_space(o, oo, m, consumed, escape)
                    is_prev_space = remove
                consumed += 1
                continue
            if c >= 0xC2 and c < 0xF0:
                length = valid_utf8_len(s + consumed, n - consumed)
                if length and (self._quick_copied(_decode_utf8(s + consumed, length), s, consumed + length, n)
                               or self._copied(_decode_utf8(s + consumed, length), s, consumed + length, n)):
                    if m + length > <Py_ssize_t>out.size():
                        _room(out, to_orig, offsets, m, length)
                        o = out.data()
                        if offsets:
                            oo = to_orig.data()
                    for k in range(length):
                        o[m + k] = s[consumed + k]
                        if offsets:
                            oo[m + k] = <int32_t>consumed
                    m += length
                    consumed += length
                    is_prev_space = False
                    continue
            # Any other char: the general path (user symbols, charsmap rules, bad UTF-8).
            took = self._prefix(s + consumed, n - consumed, &rep, &rep_len)
            if m + 3 * rep_len > <Py_ssize_t>out.size():
                _room(out, to_orig, offsets, m, 3 * rep_len)
                o = out.data()
                if offsets:
                    oo = to_orig.data()
            j = 0
            if is_prev_space:
                while j < rep_len and rep[j] == 32:
                    j += 1
            if j < rep_len:
                while j < rep_len:
                    if rep[j] == 32:
                        m = _put_space(o, oo, m, consumed, escape)
                    else:
                        o[m] = rep[j]
                        if offsets:
                            oo[m] = <int32_t>consumed
                        m += 1
                    j += 1
                is_prev_space = rep[rep_len - 1] == 32
            consumed += took
            if not remove:
                is_prev_space = False
        if remove:
            if escape:
                while m >= 3 and o[m - 3] == WS0 and o[m - 2] == WS1 and o[m - 1] == WS2:
                    m -= 3
                    if offsets:
                        consumed = oo[m]
            else:
                while m >= 1 and o[m - 1] == 32:
                    m -= 1
                    if offsets:
                        consumed = oo[m]
        if self.suffix and self.add_dummy_prefix:
            if m + 3 > <Py_ssize_t>out.size():
                _room(out, to_orig, offsets, m, 3)
                o = out.data()
                if offsets:
                    oo = to_orig.data()
            m = _put_space(o, oo, m, consumed, escape)
        out.resize(m)
        if offsets:
            to_orig.resize(m + 1)
            to_orig[m] = <int32_t>consumed
        return m

    def normalize(self, bytes text not None, bint with_offsets=False):
        """``(normalized bytes, norm_to_orig or None)``; ``norm_to_orig`` has one more entry than bytes."""
        cdef vector[uint8_t] out
        cdef vector[int32_t] to_orig
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(text)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(text)
        with nogil:
            self.run(s, n, out, to_orig, with_offsets)
        result = PyBytes_FromStringAndSize(<const char*>out.data(), out.size())
        if not with_offsets:
            return result, None
        if to_orig.size() == 0:
            return result, [0]
        return result, [to_orig[i] for i in range(to_orig.size())]


    def normalize_texts(self, list texts):
        """Each str of ``texts`` normalized: ``[normalize(t.encode())[0].decode("utf-8", "replace")]``.

        One C buffer serves every text, so the only objects made are the
        results (a trainer keeps them all: no short-lived objects between
        them to leave the heap in holes). A lone surrogate raises
        ``UnicodeEncodeError``, as ``str.encode`` does.

        >>> SpmNormalizer(None, None, True, True, True, False).normalize_texts(["  a  b ", "c"])
        ['▁a▁b', '▁c']
        """
        cdef vector[uint8_t] utf8, out
        cdef vector[int32_t] unused
        cdef list result = []
        cdef str text
        cdef Source src
        cdef const uint8_t* s
        cdef Py_ssize_t n
        for text in texts:
            _source_of(text, &src)
            if src.kind == 0:           # ASCII: the str's own bytes are its UTF-8
                s = <const uint8_t*>src.data
                n = src.length
            else:
                n = _str_to_utf8(&src, utf8)
                if n < 0:
                    text.encode("utf-8")      # a lone surrogate: raises the usual UnicodeEncodeError
                s = utf8.data()
            self.run(s, n, out, unused, False)
            result.append(PyUnicode_DecodeUTF8(<const char*>out.data(), out.size(), "replace"))
        return result


cdef inline void _room(vector[uint8_t]& out, vector[int32_t]& to_orig, bint offsets, Py_ssize_t used,
                       Py_ssize_t more) noexcept nogil:
    # Grow the normalizer's buffers to hold ``more`` bytes after ``used`` (doubling, so amortized O(1)).
    cdef size_t need = <size_t>(used + more)
    if need <= out.size():
        return
    if need < 2 * out.size():
        need = 2 * out.size()
    out.resize(need)
    if offsets:
        to_orig.resize(need + 1)


cdef inline Py_ssize_t _put_space(uint8_t* o, int32_t* oo, Py_ssize_t m, Py_ssize_t consumed,
                                  bint escape) noexcept nogil:
    # One whitespace at o[m]: '▁' (3 bytes) when escaping, else ' '; each byte maps to ``consumed``.
    if escape:
        o[m] = WS0; o[m + 1] = WS1; o[m + 2] = WS2
        if oo != NULL:
            oo[m] = <int32_t>consumed; oo[m + 1] = <int32_t>consumed; oo[m + 2] = <int32_t>consumed
        return m + 3
    o[m] = 32
    if oo != NULL:
        oo[m] = <int32_t>consumed
    return m + 1


cdef inline uint32_t _decode_utf8(const uint8_t* s, Py_ssize_t length) noexcept nogil:
    # The code point of a valid 1-4 byte UTF-8 char.
    if length == 1:
        return s[0]
    if length == 2:
        return ((s[0] & 0x1F) << 6) | (s[1] & 0x3F)
    if length == 3:
        return ((s[0] & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F)
    return ((s[0] & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F)


# -- the Viterbi's packed trie ---------------------------------------------------
# Scores of at most this size keep every sum of the float Viterbi finite
# (1e20 * 2**31 pieces < FLT_MAX), so "no path yet" can be -inf.
cdef double MAX_FAST_SCORE = 1e20
cdef float NEG_INF = -float("inf")
# Bases live in bits 10-31 of a cell's word.
cdef Py_ssize_t VTRIE_MAX_CELLS = (1 << 22) - 256


cdef inline uint32_t _relax(Best* bp, float cand, uint32_t term, int32_t start, uint32_t cell) noexcept nogil:
    """Let the piece ending at ``bp`` (if ``term``) improve its best path; returns ``term``.

    Branch-free: whether a piece ends here and whether it improves the best
    path are data, not jumps (they would mispredict half the time).
    """
    cdef uint32_t upd = term & (cand > bp.score)
    bp.score = cand if upd else bp.score
    bp.start = start if upd else bp.start
    bp.cell = <int32_t>cell if upd else bp.cell
    return term


cdef inline uint32_t _walk(const uint8_t* s, int32_t n, int32_t starts, int32_t mblen, const VCell* C,
                           const uint32_t* jump, uint32_t root, float till, Best* B) noexcept nogil:
    """Relax every piece starting at ``starts`` (its first char ``mblen`` bytes); 1 if one is that char."""
    cdef uint32_t word = root, t, c, term, single = 0
    cdef int32_t pos = starts
    if mblen > 1 and valid_utf8_len(s + starts, n - starts) == mblen and mblen < 4:
        # A 2- or 3-byte char: one table lookup instead of a step per byte (no piece,
        # being valid UTF-8, ends inside a char).
        t = jump[_decode_utf8(s + starts, mblen)]
        if t == 0:
            return 0  # no piece starts with this char
        word = C[t].word
        pos = starts + mblen
        single = _relax(&B[pos], C[t].score + till, (word >> 9) & 1, starts, t)
    while pos < n:
        c = s[pos]
        t = (word >> 10) + c
        word = C[t].word
        if (word & 0x1FF) != (0x100 | c):
            break
        pos += 1
        term = _relax(&B[pos], C[t].score + till, (word >> 9) & 1, starts, t)
        single |= term & (pos - starts == mblen)
    return single


cdef inline int _relax_unknown(Best* B, int32_t starts, int32_t mblen, float cand, int32_t unk_id) noexcept nogil:
    """The unknown piece over the char at ``starts`` (no one-char piece there); -1 if there is no unknown id."""
    if unk_id < 0:
        return -1
    if cand > B[starts + mblen].score:
        B[starts + mblen].score = cand
        B[starts + mblen].start = starts
        B[starts + mblen].cell = -2
    return 0


cdef bint _build_vtrie(vector[const uint8_t*]& kp, vector[Py_ssize_t]& kl, vector[int32_t]& kv,
                       vector[float]& ks, vector[VCell]& cells, vector[int32_t]& cell_id) except -1:
    """A trie of the sorted keys ``kp``/``kl`` in 8-byte cells, each inner node with a base of its own.

    Unique bases let a transition be checked by the target cell's label
    (darts-clone's trick), so a cell needs no parent index. ``cell_id``
    maps a terminal cell to its key's value. False if the trie would need
    more cells than a word can address.
    """
    cdef vector[int32_t] skip             # union-find "next free cell"
    cdef vector[uint8_t] base_used
    cdef vector[int32_t] st_node, st_lo, st_hi, st_depth, labels, starts
    cdef int32_t node, lo, hi, depth, j, b, p, q, c, prev
    cdef Py_ssize_t k
    cdef bint ok
    cells.clear()
    cell_id.clear()
    _vgrow(cells, cell_id, skip, base_used, 1024)
    # The root (cell 0) has no "in use" bit: no transition may land on it (a leaf's base is 0, and
    # 0 + byte 0 must not match); the free-cell search never offers it (skip) nor can a base reach it.
    skip[0] = 1
    if kp.size() == 0:
        return True
    st_node.push_back(0); st_lo.push_back(0); st_hi.push_back(<int32_t>kp.size()); st_depth.push_back(0)
    while st_node.size():
        node = st_node.back(); st_node.pop_back()
        lo = st_lo.back(); st_lo.pop_back()
        hi = st_hi.back(); st_hi.pop_back()
        depth = st_depth.back(); st_depth.pop_back()
        if kl[lo] == depth:  # sorted: the key that ends here comes first
            cells[node].word |= 0x200
            cells[node].score = ks[lo]
            cell_id[node] = kv[lo]
            lo += 1
        labels.clear()
        starts.clear()
        prev = -1
        for j in range(lo, hi):
            c = kp[j][depth]
            if c != prev:
                labels.push_back(c)
                starts.push_back(j)
                prev = c
        if labels.size() == 0:
            continue  # a leaf: base 0
        starts.push_back(hi)
        # The smallest unused base >= 1 whose cells for every label are free.
        p = _vfirst_free(cells, cell_id, skip, base_used, labels[0] + 1)
        while True:
            b = p - labels[0]
            ok = not base_used[b]
            k = 1
            while ok and k < <Py_ssize_t>labels.size():
                q = b + labels[k]
                _vgrow(cells, cell_id, skip, base_used, q + 1)
                if cells[q].word & 0x100:
                    ok = False
                k += 1
            if ok:
                break
            p = _vfirst_free(cells, cell_id, skip, base_used, p + 1)
        if b >= VTRIE_MAX_CELLS:
            return False
        base_used[b] = 1
        cells[node].word |= <uint32_t>b << 10
        for k in range(<Py_ssize_t>labels.size()):
            q = b + labels[k]
            cells[q].word = 0x100 | <uint32_t>labels[k]
            skip[q] = q + 1
            st_node.push_back(q)
            st_lo.push_back(starts[k])
            st_hi.push_back(starts[k + 1])
            st_depth.push_back(depth + 1)
    # 256 spare cells: base + any byte stays inside the array, so the loop needs no bounds check.
    _vgrow(cells, cell_id, skip, base_used, cells.size() + 256)
    return True


cdef void _root_jumps(vector[VCell]& cells, vector[uint32_t]& jump):
    """``jump[cp]``: the cell reached from the root by the UTF-8 of U+cp (2 or 3 bytes), or 0."""
    cdef uint8_t buf[4]
    cdef uint32_t cp, word, t
    cdef Py_ssize_t length, i
    jump.assign(0x10000, 0)
    for cp in range(0x80, 0x10000):
        if 0xD800 <= cp < 0xE000:
            continue
        length = put_utf8(cp, buf)
        word = cells[0].word
        t = 0
        for i in range(length):
            t = (word >> 10) + buf[i]
            word = cells[t].word
            if (word & 0x1FF) != (0x100 | buf[i]):
                t = 0
                break
        jump[cp] = t


cdef void _vgrow(vector[VCell]& cells, vector[int32_t]& cell_id, vector[int32_t]& skip,
                 vector[uint8_t]& base_used, Py_ssize_t need):
    cdef Py_ssize_t old = cells.size(), size = old, i
    cdef VCell empty
    if need <= old:
        return
    while size < need:
        size = size * 2 if size else 1024
    empty.word = 0
    empty.score = 0.0
    cells.resize(size, empty)
    cell_id.resize(size, -1)
    base_used.resize(size, 0)
    skip.resize(size + 1)
    for i in range(old, size + 1):
        skip[i] = <int32_t>i


cdef int32_t _vfirst_free(vector[VCell]& cells, vector[int32_t]& cell_id, vector[int32_t]& skip,
                          vector[uint8_t]& base_used, int32_t i):
    # Smallest free cell >= i (path halving).
    _vgrow(cells, cell_id, skip, base_used, i + 1)
    while skip[i] != i:
        skip[i] = skip[skip[i]]
        i = skip[i]
        _vgrow(cells, cell_id, skip, base_used, i + 1)
    return i


# -- the model ----------------------------------------------------------------
ctypedef struct LNode:
    int32_t pos          # begin, in chars
    int32_t length       # in chars
    int32_t id
    int32_t bstart       # begin, in bytes
    int32_t bend
    double score
    double backtrace
    int32_t prev


ctypedef struct Hyp:
    int32_t node
    int32_t next
    double fx
    double gx


ctypedef struct Pair:
    int32_t left
    int32_t right
    double score
    int32_t size


ctypedef struct Quad:
    int32_t a_start
    int32_t a_len
    int32_t b_start
    int32_t b_len


ctypedef struct VCell:
    # One cell of the Viterbi's own trie, 8 bytes: ``word`` packs the base
    # (bits 10-31; 0 for a leaf), "a usable piece ends here" (bit 9),
    # "cell in use" (bit 8) and the label (bits 0-7). Every inner node has
    # a base of its own, so a transition is checked by its label alone.
    uint32_t word
    float score        # the score the Viterbi adds for the piece ending here


ctypedef struct Best:
    # The best path ending at one byte position (SentencePiece's BestPathNode).
    float score
    int32_t start
    int32_t cell       # the trie cell of its last piece, or -2: the unknown piece


cdef struct Lattice:
    vector[LNode] nodes
    vector[int32_t] char_byte     # byte offset of each char boundary (len + 1 entries)
    vector[int32_t] begin_lo      # nodes beginning at pos: [begin_lo[pos], begin_hi[pos]) (EOS aside)
    vector[int32_t] begin_hi
    vector[int32_t] end_off       # CSR: nodes ending at pos are end_ids[end_off[pos]:end_off[pos+1]]
    vector[int32_t] end_ids
    int32_t length


ctypedef struct HfText:
    # One text through Hugging Face's Metaspace + Unigram (SpmCore._hf_metaspace): ids, char offsets
    # into the text, word indices; the tokens spelled by their own text (an unknown run's token is
    # its text) by index, their normalized UTF-8 one after another (spelled_ends: where each ends).
    vector[int32_t] ids
    vector[int32_t] starts
    vector[int32_t] ends
    vector[int32_t] words
    vector[int32_t] spelled_at
    vector[uint8_t] spelled_text
    vector[Py_ssize_t] spelled_ends
    Py_ssize_t n_words


ctypedef struct HfScratch:
    # SpmCore._hf_metaspace's buffers, reused from text to text.
    vector[uint8_t] utf8
    vector[uint8_t] norm
    vector[int32_t] char_of         # normalized byte -> normalized char
    vector[int32_t] orig_of         # normalized char -> original char
    vector[Seg] raw
    vector[Seg] fused
    vector[double] bscore
    vector[int32_t] bstart
    vector[int32_t] bid
    vector[uint8_t] swapped         # the text with its control chars swapped (see _swapped)


cdef Py_ssize_t HF_SCRATCH_KEPT = 1 << 22


cdef void _trim_hf(HfScratch& w) noexcept:
    """Free ``w``'s buffers if a long text grew them past HF_SCRATCH_KEPT bytes (a model keeps its
    scratch between calls: not a copy of the longest text it ever read)."""
    if (w.utf8.capacity() + w.norm.capacity() + w.swapped.capacity() + 4 * (w.char_of.capacity() + w.orig_of.capacity())
            + sizeof(Seg) * (w.raw.capacity() + w.fused.capacity()) < HF_SCRATCH_KEPT):
        return
    w.utf8.clear(); w.utf8.shrink_to_fit()
    w.norm.clear(); w.norm.shrink_to_fit()
    w.swapped.clear(); w.swapped.shrink_to_fit()
    w.char_of.clear(); w.char_of.shrink_to_fit()
    w.orig_of.clear(); w.orig_of.shrink_to_fit()
    w.raw.clear(); w.raw.shrink_to_fit()
    w.fused.clear(); w.fused.shrink_to_fit()
    w.bscore.clear(); w.bscore.shrink_to_fit()
    w.bstart.clear(); w.bstart.shrink_to_fit()
    w.bid.clear(); w.bid.shrink_to_fit()


cdef bytes _checked_swaps = None     # the last table _swap_table checked (bytes: it cannot change)


cdef const uint8_t* _swap_table(bytes swaps) except NULL:
    """``swaps`` checked: 256 bytes that swap ASCII chars only (a byte of a longer UTF-8 char stays).

    The same table comes with every call (the normalizer's), and checking it each time was a
    tenth of a short call's time: the last one checked is not checked again.
    """
    global _checked_swaps
    cdef const uint8_t* table = <const uint8_t*>PyBytes_AS_STRING(swaps)
    cdef int k
    if swaps is _checked_swaps:
        return table
    if PyBytes_GET_SIZE(swaps) != 256:
        raise ValueError(f"swaps must be 256 bytes, got {PyBytes_GET_SIZE(swaps)}")
    for k in range(256):
        if table[k] and (k >= 128 or table[k] >= 128):
            raise ValueError("swaps may swap ASCII chars for ASCII chars only")
    _checked_swaps = swaps
    return table


cdef const uint8_t* _swapped(const uint8_t* s, Py_ssize_t n, const uint8_t* swaps, vector[uint8_t]& out) noexcept nogil:
    """``s[:n]`` with each byte ``swaps`` gives another swapped for it (into ``out``), or ``s`` itself if it
    holds none, or a CR: CR LF is one grapheme cluster, which a rule may map whole (see
    ``Precompiled.swap_controls``, which does this in Python)."""
    cdef Py_ssize_t i = 0
    while i < n and not swaps[s[i]]:
        i += 1
    if i == n or memchr(s, 13, n) != NULL:
        return s
    out.assign(s, s + n)
    while i < n:
        if swaps[out[i]]:
            out[i] = swaps[out[i]]
        i += 1
    return out.data()


cdef inline void _hf_put(HfText& out, int32_t token_id, int32_t start, int32_t end, int32_t word) noexcept nogil:
    out.ids.push_back(token_id)
    out.starts.push_back(start)
    out.ends.push_back(end)
    out.words.push_back(word)


cdef class SpmCore:
    """A SentencePiece (or Hugging Face) Unigram / SentencePiece BPE model over bytes.

    ``kinds`` are ModelProto piece types. In ``hf`` mode every entry goes into
    the trie (later duplicates win) and scores stay doubles.
    """

    cdef DoubleArray trie          # pieces the text can match
    cdef DoubleArray reserved      # control / unknown / byte pieces (looked up first, as SentencePiece does)
    cdef DoubleArray matcher       # user-defined symbols (BPE's unsplittable initial symbols)
    cdef vector[double] scores
    cdef vector[uint8_t] kinds
    cdef int32_t byte_ids[256]     # SentencePiece: PieceToId("<0xNN>")
    cdef int32_t hf_bytes[256]     # Hugging Face: the vocabulary's "<0xNN>", or -1
    cdef readonly int32_t unk_id
    cdef readonly int model_type
    cdef readonly bint byte_fallback, hf, has_unused, has_user
    cdef public bint bpe_by_words   # BPE merges word by word (see _bpe_word_cuts); settable for tests
    cdef public Py_ssize_t bpe_bucket_word  # words of at least this many symbols merge through buckets
    cdef vector[uint32_t] score_rank  # BPE: each piece's score among the distinct scores, highest first
    cdef Py_ssize_t score_rank_count
    cdef int32_t longest_piece        # bytes of the trie's longest key
    cdef vector[uint32_t] bpe_unsafe  # ... but not where the char before the word's ▁ is one of these
    cdef readonly double min_score, max_score, unk_score
    cdef int32_t n_pieces
    cdef vector[VCell] vcells      # the trie again, packed for the Viterbi (SentencePiece mode)
    cdef vector[int32_t] vcell_id  # the piece id ending at each of its cells
    cdef vector[uint32_t] vroot    # per char U+0080..U+FFFF: its cell one char below the root, or 0
    cdef readonly bint fast_f32    # the float Viterbi over ``vcells`` is exact for this model
    cdef HfScratch hf_scratch      # the hf_metaspace calls' buffers, reused by one call at a time (hf_busy)
    cdef bint hf_busy

    def __init__(self, list pieces, list scores, list kinds, int model_type, bint byte_fallback,
                 bint hf, int unk_id):
        cdef Py_ssize_t i, n = len(pieces)
        cdef list trie_keys = [], trie_vals = [], res_keys = [], res_vals = [], user_keys = []
        cdef dict last = {}
        cdef float mn = FLT_MAX_, mx = FLT_MIN_
        cdef double dmin = float("inf")
        self.n_pieces = <int32_t>n
        self.model_type = model_type
        self.byte_fallback = byte_fallback
        self.hf = hf
        self.unk_id = unk_id
        self.scores.resize(n)
        self.kinds.resize(n)
        self.has_unused = False
        self.has_user = False
        for i in range(n):
            self.scores[i] = scores[i]
            self.kinds[i] = kinds[i]
        if hf:
            for i in range(n):
                last[pieces[i].encode("utf-8")] = i
                if scores[i] < dmin:
                    dmin = scores[i]
            trie_keys = list(last.keys())
            trie_vals = list(last.values())
            self.min_score = dmin
            self.max_score = max(scores) if n else 0.0
            self.unk_score = dmin - 10.0
        else:
            for i in range(n):
                key = pieces[i].encode("utf-8")
                k = kinds[i]
                if k == K_NORMAL or k == K_USER or k == K_UNUSED:
                    trie_keys.append(key); trie_vals.append(i)
                else:
                    res_keys.append(key); res_vals.append(i)
                if k == K_USER:
                    user_keys.append(key)
                    self.has_user = True
                if k == K_UNUSED:
                    self.has_unused = True
                if k == K_NORMAL:
                    mn = min(mn, <float>scores[i])
                    mx = max(mx, <float>scores[i])
            self.min_score = mn
            self.max_score = mx
            self.unk_score = <float>(mn - UNK_PENALTY)
        self.trie = DoubleArray(trie_keys, trie_vals)
        self.reserved = DoubleArray(res_keys, res_vals)
        self.matcher = DoubleArray(user_keys, list(range(len(user_keys))))
        for i in range(256):
            name = f"<0x{i:02X}>".encode()
            self.byte_ids[i] = self._piece_to_id_bytes(name)
            self.hf_bytes[i] = self.trie.exact(<const uint8_t*>PyBytes_AS_STRING(name), 6)
        self.fast_f32 = not hf and model_type == MODEL_UNIGRAM and self._pack_trie(pieces)
        self.bpe_by_words = model_type == MODEL_BPE and self._bpe_word_cuts(trie_keys)
        self.longest_piece = max(map(len, trie_keys), default=0)
        if model_type == MODEL_BPE:
            self._rank_scores(scores)

    def _rank_scores(self, list scores):
        """``score_rank``: each piece's place among the distinct scores, highest first (ties share
        one), for :meth:`_bpe_merge_buckets`; ``bpe_bucket_word``: the word length it takes from."""
        cdef dict place = {score: k for k, score in enumerate(sorted(set(scores), reverse=True))}
        self.score_rank.resize(len(scores))
        for i, score in enumerate(scores):
            self.score_rank[i] = place[score]
        self.score_rank_count = len(place)
        self.bpe_bucket_word = max(BUCKET_WORD, self.score_rank_count // 16)

    def _bpe_word_cuts(self, list keys):
        """Whether BPE may merge word by word, a word from each ▁ on, and the chars before a ▁ where
        it may not (``bpe_unsafe``): those a piece holds just before a ▁ (Llama 2's: ▁ alone).

        A merge makes a piece of the trie, so where no piece holds the char
        before a ▁ followed by that ▁, no merge ever joins across: the words
        merge alone, in the order the whole text would, and each one's heap
        stays small (a megabyte's heap missed the cache at every level).
        Not with unused pieces, whose splits are kept for the whole text.
        """
        cdef set unsafe = set()
        if self.has_unused:
            return False
        for key in keys:
            text = (<bytes>key).decode("utf-8", "replace")
            for k in range(1, len(text)):
                if text[k] == "\u2581":
                    unsafe.add(ord(text[k - 1]))
        if len(unsafe) > 8:
            return False
        self.bpe_unsafe.clear()
        for c in sorted(unsafe):
            self.bpe_unsafe.push_back(c)
        return True

    cdef bint _pack_trie(self, list pieces) except -1:
        """Build ``vcells``, the float Viterbi's trie; False if it cannot be exact (then it is not used)."""
        cdef list keys = []
        cdef Py_ssize_t i
        cdef double sc
        cdef vector[const uint8_t*] kp
        cdef vector[Py_ssize_t] kl
        cdef vector[int32_t] kv
        cdef vector[float] ks
        sc = self.unk_score
        if <double><float>sc != sc or not (-MAX_FAST_SCORE <= sc <= MAX_FAST_SCORE):
            return False
        for i in range(self.n_pieces):
            k = self.kinds[i]
            if k != K_NORMAL and k != K_USER:
                continue  # unused pieces are in the trie but never in a segmentation
            key = (<str>pieces[i]).encode("utf-8")
            if not key:
                continue
            sc = _user_score(len(key)) if k == K_USER else self.scores[i]
            if <double><float>sc != sc or not (-MAX_FAST_SCORE <= sc <= MAX_FAST_SCORE):
                # Not a float, or so large that a sum of n of them could overflow (the
                # float Viterbi starts every position at -inf): the general Viterbi.
                return False
            keys.append((key, i, <float>sc))
        keys.sort()
        for i in range(len(keys)):
            if i and keys[i][0] == keys[i - 1][0]:
                return False
            kp.push_back(<const uint8_t*>PyBytes_AS_STRING(keys[i][0]))
            kl.push_back(PyBytes_GET_SIZE(keys[i][0]))
            kv.push_back(keys[i][1])
            ks.push_back(keys[i][2])
        if not _build_vtrie(kp, kl, kv, ks, self.vcells, self.vcell_id):
            return False
        _root_jumps(self.vcells, self.vroot)
        return True

    cdef int32_t _piece_to_id(self, const uint8_t* s, Py_ssize_t n) noexcept nogil:
        cdef int32_t v
        if not self.hf:
            v = self.reserved.exact(s, n)
            if v >= 0:
                return v
        v = self.trie.exact(s, n)
        return v if v >= 0 else self.unk_id

    cdef int32_t _piece_to_id_bytes(self, bytes key):
        return self._piece_to_id(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))

    def piece_to_id(self, str piece not None):
        """SentencePiece's PieceToId: reserved pieces first, then the trie, else the unknown id."""
        return self._piece_to_id_bytes(piece.encode("utf-8"))

    def lookup(self, str piece not None):
        """The trie's id for ``piece`` (Hugging Face's token_to_id), or None."""
        cdef bytes key = piece.encode("utf-8")
        cdef int32_t v = self.trie.exact(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
        return None if v < 0 else v

    # -- best segmentation ---------------------------------------------------
    cdef int _viterbi(self, const uint8_t* s, int32_t n, vector[Seg]& out, const uint8_t* excl=NULL) noexcept nogil:
        """SentencePiece's EncodeOptimized into ``out`` (unmerged); -1 if an unknown char has no unk id.

        ``excl`` (None: NULL) marks, per piece id, the pieces left out of the
        search, as if they were not in the vocabulary.
        """
        cdef vector[double] bscore
        cdef vector[int32_t] bstart, bid
        return self._viterbi_with(s, n, out, bscore, bstart, bid, excl)

    cdef int _viterbi_with(self, const uint8_t* s, int32_t n, vector[Seg]& out, vector[double]& bscore,
                           vector[int32_t]& bstart, vector[int32_t]& bid, const uint8_t* excl) noexcept nogil:
        """``_viterbi`` with the caller's buffers (reused from call to call)."""
        cdef int32_t starts = 0, pos, node, t, v, mblen, size = <int32_t>self.trie.check.size()
        cdef const int32_t* base = self.trie.base.data()
        cdef const int32_t* check = self.trie.check.data()
        cdef const int32_t* value = self.trie.value.data()
        cdef const double* score = self.scores.data()
        cdef const uint8_t* kind = self.kinds.data()
        cdef double till, cand
        cdef bint single, spm = not self.hf
        cdef Seg seg
        out.clear()
        if n == 0:
            return 0
        bscore.assign(n + 1, 0.0)
        bstart.assign(n + 1, -1)
        bid.assign(n + 1, -1)
        while starts < n:
            till = bscore[starts]
            single = False
            mblen = one_char_len(s[starts])
            if mblen > n - starts:
                mblen = n - starts
            node = 0
            pos = starts
            while pos < n:
                t = base[node] + s[pos]
                if t >= size or check[t] != node:
                    break
                node = t
                pos += 1
                v = value[node]
                if v < 0 or (excl != NULL and excl[v]):
                    continue
                if spm:
                    # Float arithmetic, rounded at every step: ties between
                    # equal-scoring paths must come out as SentencePiece's.
                    if kind[v] == K_UNUSED:
                        continue
                    if kind[v] == K_USER:
                        cand = f32(_user_score(pos - starts) + till)
                    else:
                        cand = f32(score[v] + till)
                else:
                    cand = score[v] + till
                if bstart[pos] == -1 or cand > bscore[pos]:
                    bscore[pos] = cand
                    bstart[pos] = starts
                    bid[pos] = v
                if pos - starts == mblen:
                    single = True
            if not single:
                if self.unk_id < 0 and spm:
                    return -1
                cand = f32(self.unk_score + till) if spm else self.unk_score + till
                pos = starts + mblen
                if bstart[pos] == -1 or cand > bscore[pos]:
                    if self.unk_id < 0:
                        return -1  # Hugging Face fails only when the unknown piece would be taken
                    bscore[pos] = cand
                    bstart[pos] = starts
                    bid[pos] = self.unk_id
            starts += mblen
        pos = n
        while pos > 0:
            seg.start = bstart[pos]
            seg.end = pos
            seg.id = bid[pos]
            seg.flag = SEG_PLAIN
            out.push_back(seg)
            pos = bstart[pos]
        _reverse_segs(out)
        return 0

    cdef int _viterbi_f32(self, const uint8_t* s, int32_t n, vector[Best]& best, vector[Seg]& out) noexcept nogil:
        """``_viterbi`` in SentencePiece mode, in float arithmetic over the packed trie; 1 if the
        path has an unknown piece, 0 if not, -1 as ``_viterbi``.

        A float sum is the double sum rounded to float (a double has more
        than twice a float's precision, so rounding twice is rounding once),
        so the paths and ties are those of ``_viterbi``; 8 bytes per trie
        step, no allocation when ``best`` and ``out`` are reused.
        """
        cdef const VCell* C = self.vcells.data()
        cdef const int32_t* cell_id = self.vcell_id.data()
        cdef const uint32_t* jump = self.vroot.data()
        cdef Best* B
        cdef int32_t starts = 0, pos, mblen, i, cell
        cdef uint32_t single, unknown, root = C[0].word
        cdef float till, unk = <float>self.unk_score
        cdef Seg* O
        out.clear()
        if n == 0:
            return 0
        if <size_t>(n + 1) > best.size():
            best.resize(n + 1)
        B = best.data()
        # No best path yet: -inf, below every candidate (finite: see _pack_trie). Position 0 scores 0.
        for i in range(n + 1):
            B[i].score = NEG_INF
            B[i].start = -1
            B[i].cell = -1
        B[0].score = 0.0
        while starts < n:
            till = B[starts].score
            mblen = one_char_len(s[starts])
            if mblen > n - starts:
                mblen = n - starts
            single = _walk(s, n, starts, mblen, C, jump, root, till, B)
            if not single and _relax_unknown(B, starts, mblen, unk + till, self.unk_id) < 0:
                return -1
            starts += mblen
        # The path, back to front: count it, then write each segment in place
        # (its id lookups are independent loads the CPU can overlap).
        i = 0
        pos = n
        while pos > 0:
            i += 1
            pos = B[pos].start
        out.resize(i)
        O = out.data()
        pos = n
        unknown = 0
        while pos > 0:
            i -= 1
            cell = B[pos].cell
            O[i].start = B[pos].start
            O[i].end = pos
            O[i].id = self.unk_id if cell == -2 else cell_id[cell]
            O[i].flag = SEG_PLAIN
            unknown |= cell == -2
            pos = B[pos].start
        return unknown

    # -- SentencePiece BPE -----------------------------------------------------
    cdef void _bpe(self, const uint8_t* s, int32_t n, double alpha, Rng* rng, vector[Seg]& out) noexcept nogil:
        """SentencePiece BPE; with ``alpha`` > 0 each merge is skipped with that probability (``rng`` draws).
        Without, word by word where :meth:`_bpe_word_cuts` allows (the same merges)."""
        cdef vector[int32_t] prev, nxt, start, length
        cdef vector[uint8_t] freeze
        cdef vector[Pair] heap
        cdef unordered_map[int32_t, Quad] rev
        cdef int32_t i, m, pos = 0, best, word = 0
        cdef bint found, by_words = alpha == 0.0 and self.bpe_by_words
        out.clear()
        if n == 0:
            return
        # Initial symbols: a user-defined symbol (longest match, frozen) or one char.
        while pos < n:
            best = <int32_t>self._user_match(s + pos, n - pos)
            found = best > 0
            if not found:
                best = one_char_len(s[pos])
                if best > n - pos:
                    best = n - pos
            m = <int32_t>start.size()
            prev.push_back(m - 1)
            start.push_back(pos)
            length.push_back(best)
            freeze.push_back(found)
            pos += best
            nxt.push_back(m + 1 if pos < n else -1)
        m = <int32_t>start.size()
        for i in range(1, m + 1):
            if i < m and not (by_words and self._word_starts(s, i, start, length, freeze)):
                continue
            # The word of symbols word .. i - 1, merged alone.
            prev[word] = -1
            nxt[i - 1] = -1
            if alpha == 0.0 and i - word >= self.bpe_bucket_word:
                self._bpe_merge_buckets(s, word, i, prev, nxt, start, length, freeze, rev)
            else:
                self._bpe_merge(s, word, i, alpha, rng, prev, nxt, start, length, freeze, heap, rev)
            while word != -1:
                self._resegment(s, start[word], length[word], rev, out)
                word = nxt[word]
            word = i

    cdef bint _word_starts(self, const uint8_t* s, int32_t i, vector[int32_t]& start, vector[int32_t]& length,
                           vector[uint8_t]& freeze) noexcept nogil:
        """Whether BPE may cut before symbol ``i``: a ▁ that no merge joins to the char before it."""
        cdef int32_t at = start[i], back
        cdef uint32_t before
        cdef size_t k
        if freeze[i] or length[i] != 3 or s[at] != WS0 or s[at + 1] != WS1 or s[at + 2] != WS2:
            return False
        if freeze[i - 1]:
            return True
        back = at - 1
        while back > start[i - 1] and is_trail(s[back]):
            back -= 1
        before = _decode_utf8(s + back, at - back)
        for k in range(self.bpe_unsafe.size()):
            if self.bpe_unsafe[k] == before:
                return False
        return True

    cdef void _bpe_merge(self, const uint8_t* s, int32_t first, int32_t end, double alpha, Rng* rng,
                         vector[int32_t]& prev, vector[int32_t]& nxt, vector[int32_t]& start,
                         vector[int32_t]& length, vector[uint8_t]& freeze, vector[Pair]& heap,
                         unordered_map[int32_t, Quad]& rev) noexcept nogil:
        """The merges of symbols ``first .. end - 1`` (linked, none past them): the pair whose piece
        scores highest first, the leftmost on ties."""
        cdef int32_t i
        cdef Pair top
        heap.clear()
        for i in range(first + 1, end):
            self._add_pair(s, i - 1, i, start, length, freeze, heap, rev)
        while heap.size():
            top = heap[0]
            _heap_pop(heap)
            if not _pair_current(top, length):
                continue
            if alpha > 0.0 and (alpha >= 1.0 or rng_uniform(rng) < alpha):
                continue  # BPE-dropout
            _join_pair(top, prev, nxt, length)
            if prev[top.left] >= 0:
                self._add_pair(s, prev[top.left], top.left, start, length, freeze, heap, rev)
            if nxt[top.left] >= 0:
                self._add_pair(s, top.left, nxt[top.left], start, length, freeze, heap, rev)

    cdef void _add_pair(self, const uint8_t* s, int32_t left, int32_t right, vector[int32_t]& start,
                        vector[int32_t]& length, vector[uint8_t]& freeze, vector[Pair]& heap,
                        unordered_map[int32_t, Quad]& rev) noexcept nogil:
        cdef Pair p
        if self._pair_at(s, left, right, start, length, freeze, rev, &p) >= 0:
            _heap_push(heap, p)

    cdef int32_t _pair_at(self, const uint8_t* s, int32_t left, int32_t right, vector[int32_t]& start,
                          vector[int32_t]& length, vector[uint8_t]& freeze, unordered_map[int32_t, Quad]& rev,
                          Pair* p) noexcept nogil:
        """The piece the symbols ``left`` and ``right`` make (-1: none, or one is frozen), its pair in
        ``p``; an unused piece's split is kept in ``rev`` (the last one made wins, as in SentencePiece)."""
        cdef int32_t v
        cdef Quad q
        if freeze[left] or freeze[right] or length[left] + length[right] > self.longest_piece:
            return -1           # (the last: no walk down the trie, as far as the longest piece)
        v = self.trie.exact(s + start[left], length[left] + length[right])
        if v < 0:
            return -1
        p.left = left
        p.right = right
        p.score = self.scores[v]
        p.size = length[left] + length[right]
        if self.kinds[v] == K_UNUSED:
            q.a_start = start[left]; q.a_len = length[left]
            q.b_start = start[right]; q.b_len = length[right]
            rev[v] = q
        return v

    cdef void _bpe_merge_buckets(self, const uint8_t* s, int32_t first, int32_t end, vector[int32_t]& prev,
                                 vector[int32_t]& nxt, vector[int32_t]& start, vector[int32_t]& length,
                                 vector[uint8_t]& freeze, unordered_map[int32_t, Quad]& rev) noexcept nogil:
        """:meth:`_bpe_merge` without dropout for long words: the same merges in the same order,
        from a bucket per score (``score_rank``, highest first) instead of a heap.

        A heap of a long word's pairs is larger than the caches, and each pop
        walked it down, a cache miss a level. Here the word's first pairs are
        sorted by score in two passes (counted, then placed: each score's in
        text order) and the scores taken in order, each one's pairs left to
        right. A merge's new pairs score below it (a piece is made before
        the pieces made from it): they join their score's bucket, sorted
        when its turn comes. One scoring at or above the current score goes
        to a small heap, drained first: its pairs stand at or left of the
        merge that made them, so before the bucket's next. The pairs are
        found (``_pair_at``) in the heap's order, so unused pieces keep the
        same splits.
        """
        cdef uint32_t n_ranks = <uint32_t>self.score_rank_count, r
        cdef vector[Pair] pairs, initial, bucket, late, later
        cdef vector[uint32_t] ranks
        cdef vector[int32_t] ends, later_head, later_next
        cdef Pair p, top
        cdef int32_t i, v, k
        cdef size_t j, count
        for i in range(first + 1, end):
            v = self._pair_at(s, i - 1, i, start, length, freeze, rev, &p)
            if v >= 0:
                pairs.push_back(p)
                ranks.push_back(self.score_rank[v])
        ends.assign(n_ranks + 1, 0)
        for j in range(ranks.size()):
            ends[ranks[j] + 1] += 1
        for r in range(n_ranks):
            ends[r + 1] += ends[r]
        initial.resize(pairs.size())
        for j in range(pairs.size()):
            initial[ends[ranks[j]]] = pairs[j]
            ends[ranks[j]] += 1
        # (ends[r] now ends score r's pairs: they start where score r - 1's end)
        later_head.assign(n_ranks, -1)
        for r in range(n_ranks):
            j = <size_t>ends[r - 1] if r > 0 else 0
            if j == <size_t>ends[r] and later_head[r] == -1:
                continue
            bucket.assign(initial.begin() + j, initial.begin() + ends[r])
            k = later_head[r]
            if k != -1:
                while k != -1:
                    bucket.push_back(later[k])
                    k = later_next[k]
                stable_sort(bucket.begin(), bucket.end(), _left_before)
            j = 0
            count = bucket.size()
            while True:
                if late.size():
                    top = late[0]
                    _heap_pop(late)
                elif j < count:
                    top = bucket[j]
                    j += 1
                else:
                    break
                if not _pair_current(top, length):
                    continue
                _join_pair(top, prev, nxt, length)
                if prev[top.left] >= 0:
                    v = self._pair_at(s, prev[top.left], top.left, start, length, freeze, rev, &p)
                    if v >= 0:
                        _queue_pair(later, later_next, later_head, late, p, self.score_rank[v], r)
                if nxt[top.left] >= 0:
                    v = self._pair_at(s, top.left, nxt[top.left], start, length, freeze, rev, &p)
                    if v >= 0:
                        _queue_pair(later, later_next, later_head, late, p, self.score_rank[v], r)

    cdef void _resegment(self, const uint8_t* s, int32_t st, int32_t ln, unordered_map[int32_t, Quad]& rev,
                         vector[Seg]& out) noexcept nogil:
        cdef int32_t v = self._piece_to_id(s + st, ln)
        cdef Seg seg
        cdef Quad q
        if v < 0 or self.kinds[v] != K_UNUSED or rev.count(v) == 0:
            seg.start = st
            seg.end = st + ln
            seg.id = v
            seg.flag = SEG_PLAIN
            out.push_back(seg)
            return
        q = rev[v]
        self._resegment(s, q.a_start, q.a_len, rev, out)
        self._resegment(s, q.b_start, q.b_len, rev, out)

    cdef object _unknown_item(self, const uint8_t* s, Py_ssize_t n, str unk_piece):
        """The piece shown for an unknown run ``s[:n]``: its text, or with ``emit_unk_piece`` (``unk_piece`` not
        None) the unknown piece unless the text is itself a piece SentencePiece's PieceToId knows (a control
        piece such as ``<s>`` spelled out: sentencepiece keeps it, measured against 0.2)."""
        cdef int32_t v
        if unk_piece is not None:
            v = self._piece_to_id(s, n)
            if v < 0 or self.kinds[v] == K_UNKNOWN:
                return unk_piece
        return PyUnicode_DecodeUTF8(<const char*>s, n, "replace")

    cdef list _seg_pieces(self, const uint8_t* s, vector[Seg]& segs, list pieces, str unk_piece):
        cdef size_t i
        cdef list out = [None] * segs.size()
        for i in range(segs.size()):
            if segs[i].flag == SEG_UNK:
                out[i] = self._unknown_item(s + segs[i].start, segs[i].end - segs[i].start, unk_piece)
            else:
                out[i] = pieces[segs[i].id]
        return out

    def segments_to_pieces(self, bytes normalized not None, list segments, list pieces, str unk_piece=None):
        """Pieces for ``[(id, start, end, flag)]`` segments (as the encoders return them)."""
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(normalized)
        cdef list out = []
        for seg_id, start, end, flag in segments:
            if flag == SEG_UNK:
                out.append(self._unknown_item(s + <Py_ssize_t>start, end - start, unk_piece))
            else:
                out.append(pieces[seg_id])
        return out

    # -- SentencePiece's character and word models ----------------------------------
    cdef inline Py_ssize_t _user_match(self, const uint8_t* s, Py_ssize_t n) noexcept nogil:
        """Length of the longest user-defined symbol at ``s`` (SentencePiece's PrefixMatcher), or 0."""
        cdef int32_t node = 0, t, size
        cdef Py_ssize_t i, best = 0
        if not self.has_user:
            return 0
        size = <int32_t>self.matcher.check.size()
        for i in range(n):
            t = self.matcher.base[node] + s[i]
            if t >= size or self.matcher.check[t] != node:
                break
            node = t
            if self.matcher.value[node] >= 0:
                best = i + 1
        return best

    cdef int32_t _plain_id(self, const uint8_t* s, Py_ssize_t n) noexcept nogil:
        """The NORMAL or USER_DEFINED piece spelled ``s[:n]``, else the unknown id (char and word models:
        control, unused and byte pieces never match text, measured against SentencePiece 0.2)."""
        cdef int32_t v = self.trie.exact(s, n)
        if v >= 0 and (self.kinds[v] == K_NORMAL or self.kinds[v] == K_USER):
            return v
        return self.unk_id

    cdef inline int _push_plain(self, const uint8_t* s, int32_t start, int32_t end, vector[Seg]& out) noexcept nogil:
        cdef Seg seg
        seg.start = start
        seg.end = end
        seg.id = self._plain_id(s + start, end - start)
        seg.flag = SEG_PLAIN
        out.push_back(seg)
        return -1 if seg.id < 0 else 0

    cdef int _chars(self, const uint8_t* s, int32_t n, vector[Seg]& out) noexcept nogil:
        """``--model_type=char``: each user-defined symbol (longest match) or char is a piece."""
        cdef int32_t pos = 0, length
        out.clear()
        while pos < n:
            length = <int32_t>self._user_match(s + pos, n - pos)
            if length == 0:
                length = one_char_len(s[pos])
                if length > n - pos:
                    length = n - pos
            if self._push_plain(s, pos, pos + length, out) < 0:
                return -1
            pos += length
        return 0

    cdef int _words(self, const uint8_t* s, int32_t n, vector[Seg]& out) noexcept nogil:
        """``--model_type=word``: a piece starts at the text's start and at every ``▁`` (SplitIntoWords).

        SentencePiece's word model splits this way whatever
        ``treat_whitespace_as_suffix`` says (measured against 0.2).
        """
        cdef int32_t pos = 0, start = 0, length
        out.clear()
        while pos < n:
            length = one_char_len(s[pos])
            if length > n - pos:
                length = n - pos
            if pos > 0 and length == 3 and s[pos] == WS0 and s[pos + 1] == WS1 and s[pos + 2] == WS2:
                if self._push_plain(s, start, pos, out) < 0:
                    return -1
                start = pos
            pos += length
        if n > 0 and self._push_plain(s, start, n, out) < 0:
            return -1
        return 0

    # -- SentencePieceProcessor's post-processing ------------------------------
    cdef void _finish(self, const uint8_t* s, vector[Seg]& raw, vector[Seg]& out) noexcept nogil:
        """Merge runs of unknown pieces into one, or split them into byte pieces (byte_fallback)."""
        cdef bint prev_unk = False, unk
        cdef size_t i
        cdef int32_t b
        cdef Seg seg, byte_seg
        out.clear()
        for i in range(raw.size()):
            seg = raw[i]
            unk = seg.id >= 0 and self.kinds[seg.id] == K_UNKNOWN
            if unk and self.byte_fallback:
                for b in range(seg.start, seg.end):
                    byte_seg.start = b
                    byte_seg.end = b + 1
                    byte_seg.id = self.byte_ids[s[b]]
                    byte_seg.flag = SEG_BYTE
                    out.push_back(byte_seg)
            elif unk and prev_unk:
                out[out.size() - 1].end = seg.end
            else:
                if unk:
                    seg.flag = SEG_UNK
                out.push_back(seg)
            prev_unk = unk

    cdef int _segment(self, const uint8_t* s, int32_t n, double alpha, Rng* rng, vector[Seg]& raw) noexcept nogil:
        """The model's segmentation of ``s[:n]`` (before ``_finish``); -1: an unknown char and no unknown piece."""
        if self.model_type == MODEL_BPE:
            self._bpe(s, n, alpha, rng, raw)
            return 0
        if self.model_type == MODEL_CHAR:
            return self._chars(s, n, raw)
        if self.model_type == MODEL_WORD:
            return self._words(s, n, raw)
        return self._viterbi(s, n, raw)

    cdef void _encode(self, const uint8_t* s, int32_t n, double alpha, vector[Seg]& out) except *:
        cdef vector[Seg] raw
        cdef Rng* rng = thread_rng() if alpha > 0.0 else NULL
        if self._segment(s, n, alpha, rng, raw) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        self._finish(s, raw, out)

    def encode_ids(self, bytes normalized not None, double alpha=0.0):
        """Ids of the best segmentation (BPE: with dropout ``alpha``), SentencePiece's post-processing applied."""
        cdef vector[Seg] segs
        self._encode(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                     alpha, segs)
        return [segs[i].id for i in range(segs.size())]

    def encode_pieces(self, bytes normalized not None, list pieces, str unk_piece=None, double alpha=0.0):
        """Pieces of the best segmentation; an unknown run is its own text unless ``unk_piece`` is given."""
        cdef vector[Seg] segs
        self._encode(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                     alpha, segs)
        return self._seg_pieces(<const uint8_t*>PyBytes_AS_STRING(normalized), segs, pieces, unk_piece)

    def encode_segments(self, bytes normalized not None, double alpha=0.0):
        """``[(id, byte start, byte end, flag)]`` of the best segmentation (flag: 0 plain, 1 unknown run, 2 byte)."""
        cdef vector[Seg] segs
        self._encode(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                     alpha, segs)
        return [(segs[i].id, segs[i].start, segs[i].end, segs[i].flag) for i in range(segs.size())]

    # -- the lattice -------------------------------------------------------------
    cdef int _populate(self, const uint8_t* s, int32_t n, Lattice* L, const uint8_t* excl) noexcept nogil:
        """PopulateNodes: every vocabulary match (but the ids marked in ``excl``, if not NULL), and an
        unknown node where no one-char piece starts."""
        cdef int32_t length = 0, p = 0, mb, i, pos, node, t, v, size = <int32_t>self.trie.check.size()
        cdef vector[int32_t] end_count
        cdef vector[int32_t] char_at      # byte offset → char index (boundaries only)
        cdef LNode nd
        cdef bint single, spm = not self.hf
        L.nodes.clear()
        L.char_byte.clear()
        while p < n:
            L.char_byte.push_back(p)
            mb = one_char_len(s[p])
            if mb > n - p:
                mb = n - p
            p += mb
            length += 1
        L.char_byte.push_back(n)
        L.length = length
        char_at.assign(n + 1, -1)
        for i in range(length + 1):
            char_at[L.char_byte[i]] = i
        nd.score = 0.0; nd.backtrace = 0.0; nd.prev = -1; nd.id = -1; nd.length = 0
        nd.pos = 0; nd.bstart = 0; nd.bend = 0
        L.nodes.push_back(nd)                         # BOS: node 0, ends at 0
        nd.pos = length; nd.bstart = n; nd.bend = n
        L.nodes.push_back(nd)                         # EOS: node 1, begins at len
        L.begin_lo.assign(length + 1, 0)
        L.begin_hi.assign(length + 1, 0)
        for i in range(length):
            L.begin_lo[i] = <int32_t>L.nodes.size()
            single = False
            node = 0
            pos = L.char_byte[i]
            while pos < n:
                t = self.trie.base[node] + s[pos]
                if t >= size or self.trie.check[t] != node:
                    break
                node = t
                pos += 1
                v = self.trie.value[node]
                if v < 0 or (excl != NULL and excl[v]):
                    continue
                if spm and self.kinds[v] == K_UNUSED:
                    continue
                if char_at[pos] < 0:
                    continue  # a match ending inside a char (malformed input) cannot be a node
                nd.pos = i
                nd.length = char_at[pos] - i
                nd.id = v
                nd.bstart = L.char_byte[i]
                nd.bend = pos
                if spm and self.kinds[v] == K_USER:
                    nd.score = _user_score(nd.length)  # the lattice counts chars, the Viterbi bytes
                else:
                    nd.score = self.scores[v]
                L.nodes.push_back(nd)
                if nd.length == 1:
                    single = True
            if not single:
                if self.unk_id < 0:
                    return -1
                nd.pos = i
                nd.length = 1
                nd.id = self.unk_id
                nd.bstart = L.char_byte[i]
                nd.bend = L.char_byte[i + 1]
                nd.score = self.unk_score
                L.nodes.push_back(nd)
            L.begin_hi[i] = <int32_t>L.nodes.size()
        # Nodes ending at each position, in insertion order (BOS first at 0).
        end_count.assign(length + 2, 0)
        end_count[1] += 1  # BOS
        for i in range(2, <int32_t>L.nodes.size()):
            end_count[L.nodes[i].pos + L.nodes[i].length + 1] += 1
        for i in range(length + 1):
            end_count[i + 1] += end_count[i]
        L.end_off = end_count
        L.end_ids.assign(L.nodes.size() - 1, 0)
        L.end_ids[end_count[0]] = 0
        end_count[0] += 1
        for i in range(2, <int32_t>L.nodes.size()):
            pos = L.nodes[i].pos + L.nodes[i].length
            L.end_ids[end_count[pos]] = i
            end_count[pos] += 1
        return 0

    cdef void _lattice_viterbi(self, Lattice* L) noexcept nogil:
        cdef int32_t pos, r, j, l, best, idx
        cdef double sc, best_sc
        cdef bint spm = not self.hf
        for pos in range(L.length + 1):
            for idx in range(L.begin_lo[pos], L.begin_hi[pos] + (1 if pos == L.length else 0)):
                r = 1 if pos == L.length else idx  # only EOS begins at the end
                best = -1
                best_sc = 0.0
                for j in range(L.end_off[pos], L.end_off[pos + 1]):
                    l = L.end_ids[j]
                    sc = L.nodes[l].backtrace + L.nodes[r].score
                    if spm:
                        sc = f32(sc)
                    if best < 0 or sc > best_sc:
                        best = l
                        best_sc = sc
                L.nodes[r].prev = best
                L.nodes[r].backtrace = best_sc

    cdef void _forward(self, Lattice* L, double theta, vector[double]& alpha) noexcept nogil:
        cdef int32_t pos, r, j, l, first, idx
        cdef bint spm = not self.hf
        alpha.assign(L.nodes.size(), 0.0)
        if spm:
            theta = f32(theta)
        for pos in range(L.length + 1):
            for idx in range(L.begin_lo[pos], L.begin_hi[pos] + (1 if pos == L.length else 0)):
                r = 1 if pos == L.length else idx  # only EOS begins at the end
                first = 1
                for j in range(L.end_off[pos], L.end_off[pos + 1]):
                    l = L.end_ids[j]
                    if spm:
                        alpha[r] = _log_sum_exp_f32(alpha[r], f32(f32(theta * L.nodes[l].score) + alpha[l]), first)
                    else:
                        alpha[r] = _log_sum_exp(alpha[r], theta * L.nodes[l].score + alpha[l], first)
                    first = 0

    cdef list _path(self, const uint8_t* s, Lattice* L, vector[int32_t]& nodes):
        """A lattice path as ``[(id, start, end, flag)]``, SentencePiece's post-processing applied."""
        cdef vector[Seg] raw, segs
        cdef Seg seg
        cdef size_t i
        for i in range(nodes.size()):
            seg.start = L.nodes[nodes[i]].bstart
            seg.end = L.nodes[nodes[i]].bend
            seg.id = L.nodes[nodes[i]].id
            seg.flag = SEG_PLAIN
            raw.push_back(seg)
        self._finish(s, raw, segs)
        return [(segs[i].id, segs[i].start, segs[i].end, segs[i].flag) for i in range(segs.size())]

    def nbest(self, bytes normalized not None, int nbest_size):
        """Up to ``nbest_size`` best segmentations, best first: ``[(segments, score)]`` (A* over the lattice)."""
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(normalized)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(normalized)
        cdef Lattice L
        cdef vector[vector[int32_t]] paths
        cdef vector[double] path_scores
        cdef size_t i
        if self.model_type != MODEL_UNIGRAM:
            raise KernelError("n-best needs a Unigram model")
        if n == 0:
            return [([], 0.0)]
        if self._populate(s, n, &L, NULL) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        self._lattice_viterbi(&L)
        _astar(&L, nbest_size, not self.hf, paths, path_scores)
        return [(self._path(s, &L, paths[i]), path_scores[i]) for i in range(paths.size())]

    cdef void _draw(self, Lattice* L, double theta, vector[double]& alpha, Rng* rng,
                    vector[int32_t]& path) noexcept nogil:
        """Backward sampling after ``_forward``: from EOS, each step takes a node ending there with
        probability ∝ exp(alpha[l] + theta · score(l) − Z), until BOS; ``path`` in text order."""
        cdef vector[double] probs
        cdef int32_t node = 1, j, l, k, pos
        cdef double Z = alpha[1]
        cdef bint spm = not self.hf
        path.clear()
        while True:
            pos = L.nodes[node].pos
            probs.clear()
            for j in range(L.end_off[pos], L.end_off[pos + 1]):
                l = L.end_ids[j]
                if spm:
                    probs.push_back(exp(f32(f32(alpha[l] + f32(theta * L.nodes[l].score)) - Z)))
                else:
                    probs.push_back(exp(alpha[l] + theta * L.nodes[l].score - Z))
            k = pick_index(probs, rng)
            node = L.end_ids[L.end_off[pos] + k]
            if node == 0:
                break
            Z = alpha[node]
            path.push_back(node)
        _reverse_ints(path)

    cdef void _best_path(self, Lattice* L, vector[int32_t]& path) noexcept nogil:
        """The lattice's Viterbi path (after ``_lattice_viterbi``), in text order."""
        cdef int32_t node = L.nodes[1].prev
        path.clear()
        while node > 0:
            path.push_back(node)
            node = L.nodes[node].prev
        _reverse_ints(path)

    cdef int _lattice_of(self, bytes normalized, Lattice* L) except -1:
        if self.model_type != MODEL_UNIGRAM:
            raise KernelError("lattice sampling needs a Unigram model")
        if self._populate(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                          L, NULL) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        return 0

    def sample(self, bytes normalized not None, double theta):
        """One segmentation drawn with probability ∝ exp(theta · score) (forward filtering, backward sampling)."""
        cdef Lattice L
        cdef vector[double] alpha
        cdef vector[int32_t] path
        if PyBytes_GET_SIZE(normalized) == 0:
            return []
        self._lattice_of(normalized, &L)
        self._forward(&L, theta, alpha)
        self._draw(&L, f32(theta) if not self.hf else theta, alpha, thread_rng(), path)
        return self._path(<const uint8_t*>PyBytes_AS_STRING(normalized), &L, path)

    def sample_and_score(self, bytes normalized not None, double theta, int num_samples, bint wor, bint include_best):
        """``[(segments, score)]``, SentencePiece's SampleEncodeAndScore (Unigram).

        With replacement (``wor`` False): ``num_samples`` draws, each scored
        with its log-probability theta · score − log Z. Without replacement:
        the ``num_samples`` paths with the largest Gumbel-perturbed
        log-probabilities (:func:`_gumbel_top`), each scored with the log of
        its inclusion probability in such a sample, log(1 − exp(−exp(logp −
        κ))) where κ is the perturbed score of the next path (the threshold
        of priority sampling). ``include_best`` puts the Viterbi path first
        (score 0: it is always included) and samples the others among the
        rest. If the lattice has no more paths than asked for, all of them
        come back, each with score 0 (SentencePiece then drops one or fails).
        """
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(normalized)
        cdef Lattice L
        cdef vector[double] alpha, keys
        cdef vector[vector[int32_t]] paths
        cdef vector[int32_t] best, path
        cdef vector[double] scores
        cdef double marginal, kappa = 0.0, x
        cdef Rng* rng = thread_rng()
        cdef bint all_paths
        cdef size_t i
        cdef Py_ssize_t found
        cdef list out = []
        if PyBytes_GET_SIZE(normalized) == 0:
            return [([], 0.0)] * (1 if wor else num_samples)
        self._lattice_of(normalized, &L)
        if not self.hf:
            theta = f32(theta)
        self._forward(&L, theta, alpha)
        marginal = alpha[1]
        if include_best:
            self._lattice_viterbi(&L)
            self._best_path(&L, best)
            out.append((self._path(s, &L, best), 0.0))
        if not wor:
            for i in range(<size_t>num_samples):
                self._draw(&L, theta, alpha, rng, path)
                out.append((self._path(s, &L, path), self._log_prob(&L, path, theta, marginal)))
            return out
        # One more path than asked for: its perturbed score is the threshold kappa.
        _gumbel_top(&L, alpha, theta, num_samples + 1, rng, paths, keys)
        all_paths = paths.size() < <size_t>(num_samples + 1)
        if include_best:
            found = -1
            for i in range(paths.size()):
                if paths[i] == best:
                    found = <Py_ssize_t>i
                    break
            if found >= 0:
                paths.erase(paths.begin() + found)
                keys.erase(keys.begin() + found)
            elif not all_paths:
                paths.pop_back()
                keys.pop_back()
        if not all_paths:
            kappa = keys.back()
            paths.pop_back()
        for i in range(paths.size()):
            x = self._log_prob(&L, paths[i], theta, marginal)
            if not all_paths and x != 0.0:
                x = _log_inclusion(x - kappa)
            elif all_paths:
                x = 0.0
            out.append((self._path(s, &L, paths[i]), x))
        return out

    cdef double _log_prob(self, Lattice* L, vector[int32_t]& path, double theta, double marginal) noexcept nogil:
        """theta · (the path's score) − log Z, summed in float as SentencePiece does (in double in hf mode)."""
        cdef double total = 0.0
        cdef size_t i
        for i in range(path.size()):
            if self.hf:
                total += theta * L.nodes[path[i]].score
            else:
                total = f32(total + f32(theta * L.nodes[path[i]].score))
        return total - marginal if self.hf else f32(total - marginal)

    def log_partition(self, bytes normalized not None, double theta):
        """log Σ over all segmentations of exp(theta · score)."""
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(normalized)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(normalized)
        cdef Lattice L
        cdef vector[double] alpha
        if n == 0:
            return 0.0
        if self._populate(s, n, &L, NULL) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        self._forward(&L, theta, alpha)
        return alpha[1]

    def entropy(self, bytes normalized not None, double theta):
        """The entropy of the segmentation distribution ∝ exp(theta · score) (Lattice::CalculateEntropy)."""
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(normalized)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(normalized)
        cdef Lattice L
        cdef vector[double] alpha, H
        cdef int32_t pos, r, j, l, idx
        cdef double p
        if n == 0:
            return 0.0
        if self._populate(s, n, &L, NULL) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        self._forward(&L, theta, alpha)
        H.assign(L.nodes.size(), 0.0)
        for pos in range(L.length + 1):
            for idx in range(L.begin_lo[pos], L.begin_hi[pos] + (1 if pos == L.length else 0)):
                r = 1 if pos == L.length else idx  # only EOS begins at the end
                for j in range(L.end_off[pos], L.end_off[pos + 1]):
                    l = L.end_ids[j]
                    p = theta * L.nodes[l].score + alpha[l] - alpha[r]
                    H[r] += exp(p) * (H[l] + p)
        return -H[1]

    def lattice_nodes(self, bytes normalized not None):
        """Every lattice node as ``(char pos, char length, id, score)`` (for tests and teaching)."""
        cdef Lattice L
        cdef size_t i
        if PyBytes_GET_SIZE(normalized) == 0:
            return []
        if self._populate(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                          &L, NULL) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        return [(L.nodes[i].pos, L.nodes[i].length, L.nodes[i].id, L.nodes[i].score)
                for i in range(2, L.nodes.size())]

    # -- Hugging Face's Unigram.tokenize ------------------------------------------
    def exclusion_mask(self, ids):
        """A mask for the ``excluded`` argument: byte ``i`` is 1 for each id ``i`` in ``ids``.

        Ids outside the vocabulary are ignored (they can never be matched).

        >>> core = SpmCore(["<unk>", "a", "b"], [0.0, -1.0, -2.0], [2, 1, 1], 1, False, True, 0)
        >>> core.exclusion_mask([2, 7])
        b'\\x00\\x00\\x01'
        """
        cdef bytearray mask = bytearray(self.n_pieces)
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"excluded ids must be ints, got {type(i).__name__}")
            if 0 <= i < self.n_pieces:
                mask[i] = 1
        return bytes(mask)

    cdef const uint8_t* _mask(self, bytes excluded) except? NULL:
        # The mask's bytes, or NULL for None.
        if excluded is None:
            return NULL
        if PyBytes_GET_SIZE(excluded) != self.n_pieces:
            raise KernelError(f"an exclusion mask has {PyBytes_GET_SIZE(excluded)} bytes, the model "
                              f"{self.n_pieces} pieces (make it with exclusion_mask())")
        return <const uint8_t*>PyBytes_AS_STRING(excluded)

    def hf_tokenize(self, str text not None, list pieces, bytes excluded=None):
        """``[(id, value, char start, char end)]`` as Hugging Face's Unigram tokenizes ``text``.

        Unknown runs are fused into one token whose value is their text; with
        ``byte_fallback`` such a run becomes ``<0xNN>`` tokens when all of
        them are in the vocabulary. ``excluded`` (an :meth:`exclusion_mask`)
        leaves pieces out: the best segmentation over the other pieces, and
        no fused run or byte token takes an excluded id (the unknown id
        still stands for unknown text).
        """
        cdef bytes data = text.encode("utf-8")
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(data)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(data)
        cdef const uint8_t* excl = self._mask(excluded)
        cdef vector[Seg] raw
        if n == 0:
            return []
        if self._viterbi(s, n, raw, excl) < 0:
            return None
        return self._hf_tokens(s, n, raw, pieces, excl)

    def hf_sample(self, str text not None, list pieces, double theta, int nbest_size, bytes excluded=None):
        """A sampled tokenization (``nbest_size`` > 0: among the n best, else the whole lattice)."""
        cdef bytes data = text.encode("utf-8")
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(data)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(data)
        cdef const uint8_t* excl = self._mask(excluded)
        cdef Lattice L
        cdef vector[vector[int32_t]] paths
        cdef vector[double] path_scores, weights, alpha
        cdef vector[int32_t] path
        cdef vector[Seg] raw
        cdef Seg seg
        cdef size_t i
        cdef double top
        cdef Rng* rng = thread_rng()
        if n == 0:
            return []
        if self._populate(s, n, &L, excl) < 0:
            return None
        if nbest_size > 0:
            self._lattice_viterbi(&L)
            _astar(&L, nbest_size, False, paths, path_scores)
            if paths.size() == 0:
                return []
            top = path_scores[0]
            for i in range(paths.size()):
                weights.push_back(exp(theta * (path_scores[i] - top)))
            path = paths[pick_index(weights, rng)]
        else:
            self._forward(&L, theta, alpha)
            self._draw(&L, theta, alpha, rng, path)
        for i in range(path.size()):
            seg.start = L.nodes[path[i]].bstart
            seg.end = L.nodes[path[i]].bend
            seg.id = L.nodes[path[i]].id
            seg.flag = SEG_PLAIN
            raw.push_back(seg)
        return self._hf_tokens(s, n, raw, pieces, excl)

    cdef HfScratch* _take_hf(self, HfScratch* own):
        # The shared buffers if no other call (another thread: they are taken and given back with
        # the GIL held) holds them, else the caller's own: a short text's call then allocates
        # none of them.
        if self.hf_busy:
            return own
        self.hf_busy = True
        return &self.hf_scratch

    cdef void _give_hf(self, HfScratch* w):
        if w == &self.hf_scratch:
            _trim_hf(self.hf_scratch)
            self.hf_busy = False

    def hf_metaspace_encode(self, text, list pieces, SpmNormalizer rules, str replacement, bint prepend,
                            bint split, bint collapse_spaces, bytes excluded=None):
        """A whole Hugging Face pipeline in one call: [Precompiled] [Replace(' {2,}', ' ')], Metaspace, Unigram.

        Only for texts Precompiled leaves alone: no charsmap rule of
        ``rules`` (None: no Precompiled) matches anywhere in ``text``. With
        ``collapse_spaces`` each run of spaces becomes one space, standing
        for the run's last space (as Hugging Face aligns it). Metaspace
        turns each space into ``replacement``, puts one in front
        (``prepend``, unless the text starts with one; it stands for the
        first char) and cuts before each (``split``); each piece is
        tokenized as :meth:`hf_tokenize` does. Returns ``(ids, tokens,
        offsets, words, n_words)`` with char offsets into ``text``, or None:
        the general path must run (other texts, a lone surrogate, an
        unknown char and no unknown piece). ``excluded``: as in
        :meth:`hf_tokenize`.
        """
        cdef Source src
        cdef HfScratch w
        cdef HfText out
        cdef bytes rep = replacement.encode("utf-8")
        cdef const uint8_t* s
        cdef Py_ssize_t n, i
        cdef const uint8_t* excl = self._mask(excluded)
        if PyBytes_GET_SIZE(rep) == 0 or _source_of(text, &src) < 0:
            return None
        n = _text_utf8(&src, w.utf8, &s)
        if n < 0 or self._hf_metaspace(s, n, rules, <const uint8_t*>PyBytes_AS_STRING(rep), PyBytes_GET_SIZE(rep),
                                       prepend, split, collapse_spaces, excl, NULL, w, out) < 0:
            return None
        tokens = _hf_token_list(out, pieces)
        offsets = [(out.starts[i], out.ends[i]) for i in range(<Py_ssize_t>out.ids.size())]
        return list(out.ids), tokens, offsets, list(out.words), out.n_words

    def hf_metaspace_raw_batch(self, list texts, list prepends, list pieces, SpmNormalizer rules, str replacement,
                               bint split, bint collapse_spaces, bytes swaps=None):
        """:meth:`hf_metaspace_encode` of each text (``prepends[k]``: its ``prepend``), the GIL released, as
        a plan's ``encode_raw_batch`` gives it (raw encodings, see raw_encoding): ``(raw, n_tokens,
        n_words, pieces)``, or None per text.

        ``swaps`` (with ``rules``): 256 bytes, the ASCII char the charsmap
        makes of each ASCII control char, one for one, or 0
        (``Precompiled.ascii_swaps``); a text without a CR is read with
        them swapped (a newline a space: most lines), its offsets unchanged.

        When a token is spelled by its own text (an unknown run: Hugging
        Face's token is the run's text, not the unknown piece), a fifth item
        is the text's token strings. Out of the collector's sight (bytes,
        ints and strs: no cycle), as they are made here: tracked tuples made
        in Python, one a text, set off collections that walked them again.

        >>> core = SpmCore(["<unk>", "▁a", "b"], [0.0, -1.0, -2.0], [2, 1, 1], 1, False, True, 0)
        >>> [r if r is None else r[1:] for r in core.hf_metaspace_raw_batch(["ab", "a?"], [True, True],
        ...                                                                  ["<unk>", "▁a", "b"], None, "▁", True, False)]
        [(2, 1, ['<unk>', '▁a', 'b']), (2, 1, ['<unk>', '▁a', 'b'], ['▁a', '?'])]
        """
        cdef HfScratch own
        cdef HfScratch* w = self._take_hf(&own)
        try:
            return self._hf_metaspace_raw_batch(w[0], texts, prepends, pieces, rules, replacement, split, collapse_spaces, swaps)
        finally:
            self._give_hf(w)

    cdef object _hf_metaspace_raw_batch(self, HfScratch& w, list texts, list prepends, list pieces,
                                        SpmNormalizer rules, str replacement, bint split, bint collapse_spaces,
                                        bytes swaps):
        cdef Py_ssize_t n_texts = len(texts), k, n
        cdef vector[Source] srcs
        cdef vector[int] status
        cdef vector[char] prepend
        cdef vector[HfText] outs
        cdef bytes rep = replacement.encode("utf-8")
        cdef const uint8_t* r = <const uint8_t*>PyBytes_AS_STRING(rep)
        cdef Py_ssize_t rn = PyBytes_GET_SIZE(rep)
        cdef const uint8_t* s
        cdef const uint8_t* swap_table = NULL
        if len(prepends) != n_texts:
            raise ValueError(f"hf_metaspace_raw_batch: {n_texts} texts, {len(prepends)} prepends")
        if swaps is not None:
            swap_table = _swap_table(swaps)
        srcs.resize(n_texts)
        status.assign(n_texts, -1)
        prepend.resize(n_texts)
        outs.resize(n_texts)
        for k in range(n_texts):
            if rn > 0 and type(texts[k]) is str and _source_of(texts[k], &srcs[k]) == 0:
                status[k] = 0
            prepend[k] = True if prepends[k] else False
        with nogil:
            for k in range(n_texts):
                if status[k] == 0:
                    n = _text_utf8(&srcs[k], w.utf8, &s)
                    status[k] = -1 if n < 0 else self._hf_metaspace(s, n, rules, r, rn, prepend[k], split,
                                                                    collapse_spaces, NULL, swap_table, w, outs[k])
        results = PyList_New(n_texts)
        for k in range(n_texts):
            if status[k] < 0:
                result = None
            elif outs[k].spelled_at.size():
                result = (_hf_raw(outs[k]), <Py_ssize_t>outs[k].ids.size(), outs[k].n_words, pieces,
                          _hf_token_list(outs[k], pieces))
            else:
                result = (_hf_raw(outs[k]), <Py_ssize_t>outs[k].ids.size(), outs[k].n_words, pieces)
            if result is not None:
                PyObject_GC_UnTrack(<void*>result)
            Py_INCREF(result)
            PyList_SET_ITEM(results, k, result)
        return results

    def hf_metaspace_around_batch(self, list texts not None, AroundTokens around not None, int mode, list pieces,
                                  SpmNormalizer rules, str replacement, bint split, bint collapse_spaces,
                                  bytes swaps, strings, Py_ssize_t limit=-1, bint joined=False):
        """Each text around the added tokens ``around`` splits out of it, each stretch between them
        through :meth:`hf_metaspace_encode` on its own (``prepend`` by ``mode``: 0 never, 1 every
        stretch, 2 one at the text's first char only; ``swaps``: see :meth:`hf_metaspace_raw_batch`),
        each token a word of its own, as Hugging Face splits added tokens out before it normalizes
        and pre-tokenizes: ``(raw, n, n_words, strings)`` (untracked), with a fifth item, the
        text's token strings, when an unknown run's token is spelled by its own text (as
        :meth:`hf_metaspace_raw_batch`); or None to take the long way (a token with no id; a
        stretch a charsmap rule matches in; more than ``limit`` tokens if ``limit`` >= 0). All
        without the GIL.

        ``joined``: the texts are a pre-tokenized sequence's words, each encoded alone: the result
        is their one ``(raw, n, n_words, strings[, tokens])``, each token's word its text's
        position; or, when one of them is left (None), the list as without ``joined``, for the
        caller to fill and join.

        >>> from pieceworks._kernels.raw_encoding import id_list, offset_list, word_list
        >>> from pieceworks._kernels.token_finder import AroundTokens, TokenTrie
        >>> core = SpmCore(["<unk>", "▁a", "b", "▁"], [0.0, -1.0, -2.0, -3.0], [2, 1, 1, 1], 1, False, True, 0)
        >>> around = AroundTokens(TokenTrie(["<s>"]), [9])
        >>> (raw, n, n_words, _), = core.hf_metaspace_around_batch(["ab<s> b"], around, 1, [], None, "▁", True,
        ...                                                        False, None, None)
        >>> id_list(raw, n), offset_list(raw, n, 0), word_list(raw, n, -1), n_words
        ([1, 2, 9, 3, 2], [(0, 1), (1, 2), (2, 5), (5, 6), (6, 7)], [0, 0, 1, 2, 2], 3)
        >>> raw, n, n_words, _ = core.hf_metaspace_around_batch(["ab", "b"], around, 1, [], None, "▁", True,
        ...                                                     False, None, None, -1, True)
        >>> id_list(raw, n), offset_list(raw, n, 0), word_list(raw, n, -1), n_words
        ([1, 2, 3, 2], [(0, 1), (1, 2), (0, 1), (0, 1)], [0, 0, 1, 1], 2)
        """
        cdef HfScratch own
        cdef HfScratch* w = self._take_hf(&own)
        try:
            return self._hf_metaspace_around_batch(w[0], texts, around, mode, pieces, rules, replacement, split,
                                                   collapse_spaces, swaps, strings, limit, joined)
        finally:
            self._give_hf(w)

    cdef object _hf_metaspace_around_batch(self, HfScratch& w, list texts, AroundTokens around, int mode,
                                           list pieces, SpmNormalizer rules, str replacement, bint split,
                                           bint collapse_spaces, bytes swaps, strings, Py_ssize_t limit,
                                           bint joined):
        cdef Py_ssize_t count = len(texts), k, j, i, at, nb, word
        cdef size_t first = 0
        cdef vector[int] kinds, status         # status 0: encoded; -1: the long way
        cdef vector[const void*] datas
        cdef vector[Py_ssize_t] lengths
        cdef vector[Source] srcs
        cdef vector[int32_t] byte_at            # a non-ASCII text's char -> UTF-8 byte
        cdef vector[uint8_t] utf8
        cdef vector[size_t] text_end, spelled_end
        cdef vector[Py_ssize_t] word_count
        cdef size_t base, spelled_first = 0
        cdef AroundScratch scratch
        cdef HfText part, made
        cdef Found t
        cdef const uint8_t* s
        cdef bint ascii
        cdef bytes rep = replacement.encode("utf-8")
        cdef const uint8_t* r = <const uint8_t*>PyBytes_AS_STRING(rep)
        cdef Py_ssize_t rn = PyBytes_GET_SIZE(rep)
        cdef const uint8_t* swap_table = NULL
        cdef list out = [None] * count
        cdef tuple result
        if not 0 <= mode <= 2:
            raise ValueError(f"hf_metaspace_around_batch: mode is 0, 1 or 2, got {mode}")
        if rn == 0:
            return out
        if swaps is not None:
            swap_table = _swap_table(swaps)
        srcs.resize(count)
        status.assign(count, 0)
        for k in range(count):
            text = texts[k]
            if type(text) is not str:
                raise TypeError(f"hf_metaspace_around_batch: texts[{k}] is {type(text).__name__}, not str")
            _source_of(text, &srcs[k])
            kinds.push_back(PyUnicode_KIND(text))
            datas.push_back(PyUnicode_DATA(text))
            lengths.push_back(PyUnicode_GET_LENGTH(text))
        with nogil:
            for k in range(count):
                nb = _text_utf8(&srcs[k], utf8, &s)
                if nb < 0 or tokens_around(around, kinds[k], <const char*>datas[k], lengths[k], &scratch) < 0:
                    status[k] = -1
                ascii = nb == lengths[k]
                if status[k] == 0 and not ascii:
                    byte_at.resize(lengths[k] + 1)
                    j = 0
                    for i in range(nb):
                        if not is_trail(s[i]):
                            byte_at[j] = <int32_t>i
                            j += 1
                    byte_at[j] = <int32_t>nb
                at = word = 0
                for j in range(<Py_ssize_t>scratch.tokens.size() + 1 if status[k] == 0 else 0):
                    t = scratch.tokens[j] if j < <Py_ssize_t>scratch.tokens.size() else Found(
                        <int32_t>lengths[k], 0, -1)
                    if at < t.start:        # the stretch before it, normalized and pre-tokenized alone
                        i = at if ascii else byte_at[at]
                        if self._hf_metaspace(s + i, (t.start if ascii else byte_at[t.start]) - i, rules, r, rn,
                                              mode == 1 or mode == 2 and at == 0, split, collapse_spaces, NULL,
                                              swap_table, w, part) < 0:
                            status[k] = -1
                            break
                        base = made.ids.size()
                        for i in range(<Py_ssize_t>part.spelled_at.size()):
                            made.spelled_at.push_back(part.spelled_at[i] + <int32_t>base)
                            made.spelled_ends.push_back(part.spelled_ends[i] + <Py_ssize_t>made.spelled_text.size())
                        made.spelled_text.insert(made.spelled_text.end(), part.spelled_text.begin(),
                                                 part.spelled_text.end())
                        for i in range(<Py_ssize_t>part.ids.size()):
                            _hf_put(made, part.ids[i], part.starts[i] + <int32_t>at, part.ends[i] + <int32_t>at,
                                    part.words[i] + <int32_t>word)
                        word += part.n_words
                    if t.index >= 0:
                        _hf_put(made, t.index, t.start, t.start + t.length, <int32_t>word)
                        word += 1
                    at = t.start + t.length
                if status[k] < 0:       # (what it put is not kept)
                    made.ids.resize(first)
                    made.starts.resize(first)
                    made.ends.resize(first)
                    made.words.resize(first)
                    made.spelled_text.resize(made.spelled_ends[spelled_first - 1] if spelled_first else 0)
                    made.spelled_at.resize(spelled_first)
                    made.spelled_ends.resize(spelled_first)
                text_end.push_back(made.ids.size())
                spelled_end.push_back(made.spelled_at.size())
                word_count.push_back(word)
                first = made.ids.size()
                spelled_first = made.spelled_at.size()
        if joined:
            result = _words_joined(made, status, text_end, strings)
            if result is not None:
                return result
        first = spelled_first = 0
        for k in range(count):
            j = <Py_ssize_t>(text_end[k] - first)
            if status[k] == 0 and (limit < 0 or j <= limit):
                if spelled_end[k] > spelled_first:
                    result = (_hf_raw(made, first, j), j, word_count[k], strings,
                              _hf_token_list(made, strings, first, j, spelled_first, spelled_end[k]))
                else:
                    result = (_hf_raw(made, first, j), j, word_count[k], strings)
                PyObject_GC_UnTrack(<void*>result)
                out[k] = result
            first = text_end[k]
            spelled_first = spelled_end[k]
        return out

    cdef int _hf_metaspace(self, const uint8_t* s, Py_ssize_t n, SpmNormalizer rules, const uint8_t* r, Py_ssize_t rn,
                           bint prepend, bint split, bint collapse_spaces, const uint8_t* excl, const uint8_t* swaps,
                           HfScratch& w, HfText& out) noexcept nogil:
        """:meth:`hf_metaspace_encode` of the UTF-8 text ``s[:n]`` into ``out`` (``w``: buffers reused from
        call to call): 0, or -1 when the general path must run. ``swaps``: see :meth:`hf_metaspace_raw_batch`."""
        cdef Py_ssize_t i, j, m, word_start
        cdef int32_t oc = 0
        out.ids.clear()
        out.starts.clear()
        out.ends.clear()
        out.words.clear()
        out.spelled_at.clear()
        out.spelled_text.clear()
        out.spelled_ends.clear()
        out.n_words = 0
        w.norm.clear()
        w.orig_of.clear()
        if n == 0:
            return 0
        if swaps != NULL:
            s = _swapped(s, n, swaps, w.swapped)
        if rules is not None and not rules.untouched(s, n):
            return -1
        # Metaspace: spaces become the replacement; one goes in front unless the text starts with one.
        if prepend and s[0] != 32 and not (n >= rn and memcmp(s, r, rn) == 0):
            _put_char(w.norm, w.orig_of, r, rn, 0)
        i = 0
        while i < n:
            if s[i] == 32:
                j = i + 1
                if collapse_spaces:
                    while j < n and s[j] == 32:
                        j += 1
                _put_char(w.norm, w.orig_of, r, rn, oc + <int32_t>(j - i - 1))
                oc += <int32_t>(j - i)
                i = j
                continue
            j = i + one_char_len(s[i])
            _put_char(w.norm, w.orig_of, s + i, j - i, oc)
            oc += 1
            i = j
        m = w.norm.size()
        w.char_of.resize(m + 1)
        j = 0
        for i in range(m):
            if not is_trail(w.norm[i]):
                j += 1
            w.char_of[i] = <int32_t>(j - 1)
        w.char_of[m] = <int32_t>j
        # Pieces: a cut before each replacement char (merged with the next piece).
        word_start = 0
        i = 0
        while i <= m:
            if i == m or (split and i > word_start and m - i >= rn and memcmp(w.norm.data() + i, r, rn) == 0):
                if i > word_start:
                    if self._viterbi_with(w.norm.data() + word_start, <int32_t>(i - word_start), w.raw,
                                          w.bscore, w.bstart, w.bid, excl) < 0:
                        return -1
                    if not self._hf_emit(w.norm.data(), word_start, w, <int32_t>out.n_words, out, excl):
                        return -1
                    out.n_words += 1
                word_start = i
            if i == m:
                break
            i += 1
        return 0

    cdef bint _hf_emit(self, const uint8_t* norm, Py_ssize_t word_start, HfScratch& w, int32_t word, HfText& out,
                       const uint8_t* excl) noexcept nogil:
        """Append one Metaspace piece's tokens (as ``_hf_tokens`` makes them), offsets into the original.

        ``w.raw`` holds the piece's segments (bytes from ``word_start``);
        ``w.char_of`` maps normalized bytes to chars, ``w.orig_of`` chars to
        original chars. False: an unknown char and no unknown piece.
        """
        cdef const uint8_t* s = norm + word_start
        cdef Seg seg
        cdef size_t k
        cdef int32_t b, bid, start, end
        cdef bint ok
        _fuse_unknown(w.raw, w.fused, self.unk_id)
        for k in range(w.fused.size()):
            seg = w.fused[k]
            start = w.orig_of[w.char_of[word_start + seg.start]]
            end = w.orig_of[w.char_of[word_start + seg.end] - 1] + 1
            if seg.flag == SEG_PLAIN:
                _hf_put(out, seg.id, start, end, word)
                continue
            bid = self._hf_lookup(s + seg.start, seg.end - seg.start, excl)
            if bid < 0 and self.byte_fallback:
                ok = True
                for b in range(seg.start, seg.end):
                    if not self._hf_byte_ok(s[b], excl):
                        ok = False
                        break
                if ok:      # (each byte's token is its "<0xNN>" piece)
                    for b in range(seg.start, seg.end):
                        _hf_put(out, self.hf_bytes[s[b]], start, end, word)
                    continue
            if bid < 0:
                if self.unk_id < 0:
                    return False
                bid = self.unk_id       # spelled by the run's own text, not the unknown piece
                out.spelled_at.push_back(<int32_t>out.ids.size())
                out.spelled_text.insert(out.spelled_text.end(), s + seg.start, s + seg.end)
                out.spelled_ends.push_back(<Py_ssize_t>out.spelled_text.size())
            _hf_put(out, bid, start, end, word)    # (a run found whole is its piece: the same text)
        return True

    cdef inline int32_t _hf_lookup(self, const uint8_t* s, Py_ssize_t n, const uint8_t* excl) noexcept nogil:
        # Hugging Face's token_to_id for a fused unknown run, an excluded piece counting as absent.
        cdef int32_t v = self.trie.exact(s, n)
        return -1 if v >= 0 and excl != NULL and excl[v] else v

    cdef inline bint _hf_byte_ok(self, uint8_t b, const uint8_t* excl) noexcept nogil:
        # The vocabulary has a usable <0xNN> piece for byte b.
        return self.hf_bytes[b] >= 0 and (excl == NULL or not excl[self.hf_bytes[b]])

    cdef list _hf_tokens(self, const uint8_t* s, int32_t n, vector[Seg]& raw, list pieces, const uint8_t* excl):
        cdef vector[int32_t] char_of
        cdef vector[Seg] fused
        cdef int32_t i, c = 0, b, bid
        cdef size_t k
        cdef Seg seg
        cdef bint ok
        cdef list out = []
        # Byte offset → char offset.
        char_of.assign(n + 1, 0)
        for i in range(n):
            char_of[i] = c
            if not is_trail(s[i]):
                c += 1
                char_of[i] = c - 1
        char_of[n] = c
        _fuse_unknown(raw, fused, self.unk_id)
        for k in range(fused.size()):
            seg = fused[k]
            cs = char_of[seg.start]
            ce = char_of[seg.end]
            if seg.flag == SEG_PLAIN:
                out.append((seg.id, pieces[seg.id], cs, ce))
                continue
            value = PyUnicode_DecodeUTF8(<const char*>s + seg.start, seg.end - seg.start, NULL)
            bid = self._hf_lookup(s + seg.start, seg.end - seg.start, excl)
            if bid >= 0:
                out.append((bid, value, cs, ce))
                continue
            if self.byte_fallback:
                ok = True
                for b in range(seg.start, seg.end):
                    if not self._hf_byte_ok(s[b], excl):
                        ok = False
                        break
                if ok:
                    for b in range(seg.start, seg.end):
                        out.append((self.hf_bytes[s[b]], f"<0x{s[b]:02X}>", cs, ce))
                    continue
            if self.unk_id < 0:
                return None
            out.append((self.unk_id, value, cs, ce))
        return out


# -- the whole encoder: text in, ids or pieces out ---------------------------
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF


cdef extern from *:
    """
    /* list[i] = item, a borrowed reference (the list takes a new one): no refcount round trip. */
    static inline void pw_list_set_borrowed(PyObject* list, Py_ssize_t i, PyObject* item) {
        Py_INCREF(item);
        PyList_SET_ITEM(list, i, item);
    }
    """
    void pw_list_set_borrowed(object lst, Py_ssize_t i, PyObject* item)


cdef extern from "Python.h":
    int PyGC_Enable()
    int PyGC_Disable()
    void PyObject_GC_UnTrack(void* op)
    bint PyUnicode_IS_ASCII(object o)
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)



ctypedef struct Source:
    # Where one input's text is: UTF-8 bytes (kind 0), or a str's 1-, 2- or 4-byte code units.
    const void* data
    Py_ssize_t length
    int kind


cdef struct Batch:
    # A batch's results, flat: each text's codes end at ends[text]; a code is a piece id, or ~k for
    # the k-th unknown run, whose normalized text ends at unk_ends[k] in unk_text.
    vector[int32_t] codes
    vector[Py_ssize_t] ends
    vector[uint8_t] unk_text
    vector[Py_ssize_t] unk_ends


cdef void _release(Batch* batch) noexcept nogil:
    # A listed chunk's memory, back before the whole batch is done.
    batch.codes.clear(); batch.codes.shrink_to_fit()
    batch.ends.clear(); batch.ends.shrink_to_fit()
    batch.unk_text.clear(); batch.unk_text.shrink_to_fit()
    batch.unk_ends.clear(); batch.unk_ends.shrink_to_fit()


cdef int _fill_lists(Batch* batch, SpmCore core, list table, str unk_piece, list out, Py_ssize_t offset,
                     bint hold_gc=True) except -1:
    """``out[offset + i]`` = the list of text ``i`` of ``batch``: shared id objects (or piece strings).

    ``unk_piece``: None, or what an unknown run shows with ``emit_unk_piece``.
    With ``hold_gc`` the cyclic garbage collector is held off while the lists
    are made (they hold only ints and strs, so they make no cycles):
    otherwise every 700 new lists start a collection, and the many young
    lists soon start full ones, about a tenth of the time of a large batch
    (measured). No Python code runs meanwhile, so no other thread sees it.
    """
    cdef Py_ssize_t count = batch.ends.size(), i, k, first = 0, last, u
    cdef const int32_t* codes = batch.codes.data()
    cdef const Py_ssize_t* unk_ends = batch.unk_ends.data()
    cdef int32_t code
    cdef list items
    cdef object item
    cdef int gc_was_on = PyGC_Disable() if hold_gc else 0
    try:
        for i in range(count):
            last = batch.ends[i]
            items = PyList_New(last - first)
            for k in range(last - first):
                code = codes[first + k]
                if code >= 0:
                    pw_list_set_borrowed(items, k, PyList_GET_ITEM(table, code))
                    continue
                u = ~code
                item = core._unknown_item(batch.unk_text.data() + (unk_ends[u - 1] if u else 0),
                                          unk_ends[u] - (unk_ends[u - 1] if u else 0), unk_piece)
                Py_INCREF(item)
                PyList_SET_ITEM(items, k, item)
            Py_INCREF(items)
            PyList_SET_ITEM(out, offset + i, items)
            first = last
    finally:
        if gc_was_on:
            PyGC_Enable()
    return 0


cdef struct Scratch:
    # Buffers one thread reuses from text to text.
    vector[uint8_t] utf8
    vector[uint8_t] norm
    vector[int32_t] no_offsets    # (the normalizer's offsets, not asked for)
    vector[Best] best
    vector[Seg] raw
    vector[Seg] segs


# Texts at least this long (bytes) are encoded without the GIL when encoded one by one.
cdef Py_ssize_t NOGIL_MIN_BYTES = 512

cdef enum:
    ENC_OK = 0
    ENC_NO_UNK = -1       # an unknown char and no unknown piece
    ENC_SURROGATE = -2    # a str holding a lone surrogate (not UTF-8 encodable)
    ENC_NO_ID = -3        # a segment without a valid id


# Texts per chunk of a BatchJob: about this much text (bytes), a millisecond or two of work.
cdef Py_ssize_t CHUNK_BYTES = 32768


cdef class BatchJob


cdef class SpmEncoder:
    """SentencePieceProcessor's encode in one kernel call: normalize, segment, ids or pieces.

    Holds a model (:class:`SpmCore`), its normalizer and its pieces. Each
    text is normalized, segmented (float Viterbi, or BPE) and post-processed
    exactly as ``SpmNormalizer.normalize`` + ``SpmCore.encode_ids`` /
    ``encode_pieces`` do, in C, without the GIL. ``None`` means "use the
    general path" (a lone surrogate, an input that is not str or bytes, an
    unknown char and no unknown piece): that path raises the proper error.

    >>> core = SpmCore(["<unk>", "▁a", "b"], [0.0, -1.0, -2.0], [2, 1, 1], 1, False, False, 0)
    >>> enc = SpmEncoder(core, SpmNormalizer(None, None, True, True, True, False), ["<unk>", "▁a", "b"], "<unk>")
    >>> enc.encode("ab c", False, False), enc.encode("ab c", True, False), enc.encode("ab c", True, True)
    ([1, 2, 0], ['▁a', 'b', '▁c'], ['▁a', 'b', '<unk>'])
    """

    cdef SpmCore core
    cdef SpmNormalizer norm
    cdef list pieces
    cdef list id_objects       # the int objects 0..len(pieces)-1 (lists of ids share them)
    cdef str unk_piece
    cdef Scratch scratch       # reused by one call at a time (``busy``), so most calls allocate nothing
    cdef bint busy

    def __init__(self, SpmCore core not None, SpmNormalizer normalizer, list pieces, str unk_piece):
        self.core = core
        self.norm = normalizer
        self.pieces = list(pieces)
        self.id_objects = list(range(len(pieces)))
        PyObject_GC_UnTrack(<void*>self.id_objects)     # (why: see raw_encoding's shared ints)
        self.unk_piece = unk_piece

    cdef int _segments(self, const uint8_t* s, Py_ssize_t n, Scratch* sc) noexcept nogil:
        """Normalize and segment ``s[:n]``; the final segments are in ``sc.segs``, over ``sc.norm``."""
        cdef Py_ssize_t m = self.norm.run(s, n, sc.norm, sc.no_offsets, False)
        cdef const uint8_t* t = sc.norm.data()
        cdef size_t k
        cdef int found
        if self.core.fast_f32:
            found = self.core._viterbi_f32(t, <int32_t>m, sc.best, sc.raw)
            if found < 0:
                return ENC_NO_UNK
            if found == 0:  # no unknown piece: nothing for _finish to merge or split
                sc.segs.swap(sc.raw)
                return ENC_OK
        elif self.core._segment(t, <int32_t>m, 0.0, NULL, sc.raw) < 0:
            return ENC_NO_UNK
        self.core._finish(t, sc.raw, sc.segs)
        for k in range(sc.segs.size()):
            if sc.segs[k].id < 0 or sc.segs[k].id >= self.core.n_pieces:
                return ENC_NO_ID   # a byte piece the model lacks, with no unknown piece either
        return ENC_OK

    cdef int _encode_source(self, Source* src, Scratch* sc) noexcept nogil:
        cdef const uint8_t* s
        cdef Py_ssize_t n
        if src.kind == 0:
            s = <const uint8_t*>src.data
            n = src.length
        else:
            n = _str_to_utf8(src, sc.utf8)
            if n < 0:
                return ENC_SURROGATE
            s = sc.utf8.data()
        return self._segments(s, n, sc)

    cdef list _output(self, Scratch* sc, bint as_pieces, bint emit_unk):
        """The ids (or pieces) of ``sc.segs`` as a new list."""
        cdef Py_ssize_t k, count = sc.segs.size()
        cdef list out = PyList_New(count)
        cdef const Seg* segs = sc.segs.data()
        cdef object item
        for k in range(count):
            if not as_pieces:
                item = self.id_objects[segs[k].id]
            elif segs[k].flag != SEG_UNK:
                item = self.pieces[segs[k].id]
            else:
                item = self.core._unknown_item(sc.norm.data() + segs[k].start, segs[k].end - segs[k].start,
                                               self.unk_piece if emit_unk else None)
            Py_INCREF(item)
            PyList_SET_ITEM(out, k, item)
        return out

    cdef Scratch* _take_scratch(self, Scratch* local):
        # The shared buffers if no other call (another thread, or a finalizer run by the
        # garbage collector inside this one) holds them, else the caller's own.
        if self.busy:
            return local
        self.busy = True
        return &self.scratch

    cdef void _give_back(self, Scratch* sc):
        if sc == &self.scratch:
            self.busy = False

    def encode(self, text, bint as_pieces=False, bint emit_unk=False):
        """Ids (or pieces) of one text (str or bytes); None: use the general path."""
        return self._encode(text, as_pieces, emit_unk)

    cdef object _encode(self, object text, bint as_pieces, bint emit_unk):
        cdef Source src
        cdef Scratch local
        cdef Scratch* sc
        cdef int status
        if _source_of(text, &src) < 0:
            return None
        sc = self._take_scratch(&local)
        try:
            if src.length * (src.kind if src.kind else 1) >= NOGIL_MIN_BYTES:
                with nogil:
                    status = self._encode_source(&src, sc)
            else:
                status = self._encode_source(&src, sc)
            if status != ENC_OK:
                return None
            return self._output(sc, as_pieces, emit_unk)
        finally:
            self._give_back(sc)

    def encode_batch(self, list texts, Py_ssize_t start, Py_ssize_t stop, bint as_pieces=False,
                     bint emit_unk=False):
        """``[encode(t) for t in texts[start:stop]]`` in one call without the GIL, then the lists; None as encode.

        The kernel reads each text where Python keeps it (a str's code
        units, a bytes' bytes) and writes every text's ids one after another
        into one flat array (for pieces, an unknown run's text aside); the
        Python lists are made at the end.
        """
        cdef tuple keep = tuple(texts[start:stop])   # holds the texts even if the list changes meanwhile
        cdef Py_ssize_t count = len(keep), i
        cdef vector[Source] srcs
        cdef Batch batch
        cdef Scratch local
        cdef Scratch* sc
        cdef int status
        cdef list out
        srcs.resize(count)
        for i in range(count):
            if _source_of(keep[i], &srcs[i]) < 0:
                return None
        sc = self._take_scratch(&local)
        try:
            with nogil:
                status = self._encode_all(srcs.data(), srcs.size(), sc, as_pieces, &batch)
        finally:
            self._give_back(sc)
        if status != ENC_OK:
            return None
        out = PyList_New(count)
        _fill_lists(&batch, self.core, self.pieces if as_pieces else self.id_objects,
                    self.unk_piece if emit_unk else None, out, 0)
        return out

    def batch_job(self, list texts, bint as_pieces=False, Py_ssize_t chunk_bytes=CHUNK_BYTES):
        """A :class:`BatchJob` that encodes ``texts`` on several threads; None if an item is not str or bytes."""
        cdef BatchJob job = BatchJob.__new__(BatchJob)
        cdef Py_ssize_t count, i, acc = 0
        job.keep = tuple(texts)
        count = len(job.keep)
        job.srcs.resize(count)
        job.bounds.push_back(0)
        for i in range(count):
            if _source_of(job.keep[i], &job.srcs[i]) < 0:
                return None
            acc += job.srcs[i].length * (job.srcs[i].kind if job.srcs[i].kind else 1) + 16  # + 16: per-text cost
            if acc >= chunk_bytes:
                job.bounds.push_back(i + 1)
                acc = 0
        if job.bounds.back() != count:
            job.bounds.push_back(count)
        job.results.resize(job.bounds.size() - 1)
        job.board = new pw_board(<Py_ssize_t>job.results.size())
        job.encoder = self
        job.as_pieces = as_pieces
        return job

    cdef int _encode_all(self, Source* srcs, size_t count, Scratch* sc, bint unk_text,
                         Batch* out) noexcept nogil:
        """Encode ``srcs[:count]`` into ``out``: codes (an id, or ~k for the k-th unknown run's text if
        ``unk_text``) and each text's end in them."""
        cdef size_t j, k, first
        cdef int status
        cdef const Seg* segs
        cdef int32_t* codes
        cdef Py_ssize_t total = 0
        for j in range(count):
            total += srcs[j].length
        out.codes.reserve(<size_t>(total // 3 + 16))   # about one piece per 3-4 chars of prose
        out.ends.resize(count)
        for j in range(count):
            status = self._encode_source(&srcs[j], sc)
            if status != ENC_OK:
                return status
            first = out.codes.size()
            out.codes.resize(first + sc.segs.size())
            codes = out.codes.data() + first
            segs = sc.segs.data()
            for k in range(sc.segs.size()):
                if unk_text and segs[k].flag == SEG_UNK:
                    codes[k] = ~(<int32_t>out.unk_ends.size())
                    out.unk_text.insert(out.unk_text.end(), sc.norm.data() + segs[k].start,
                                        sc.norm.data() + segs[k].end)
                    out.unk_ends.push_back(<Py_ssize_t>out.unk_text.size())
                else:
                    codes[k] = segs[k].id
            out.ends[j] = <Py_ssize_t>out.codes.size()
        return ENC_OK


from pieceworks._kernels.board cimport pw_board


cdef class BatchJob:
    """A list of texts encoded by several threads at once, in chunks each takes as it goes.

    Pool threads call :meth:`work`; the calling thread calls :meth:`run`,
    which encodes chunks too and, between them, makes the lists of the
    chunks already done, in order. Chunks are taken as threads come free,
    so a thread slowed down (a busy core, a chunk of long texts) takes
    fewer, and the caller, which also makes every list, takes fewer still:
    the work stays balanced with no guess about the threads' speeds.

    >>> core = SpmCore(["<unk>", "▁a"], [0.0, -1.0], [2, 1], 1, False, False, 0)
    >>> enc = SpmEncoder(core, SpmNormalizer(None, None, True, True, True, False), ["<unk>", "▁a"], "<unk>")
    >>> job = enc.batch_job(["a", "a a", "b"], chunk_bytes=1)
    >>> job.n_chunks, job.run()
    (3, [[1], [1, 1], [0]])
    """

    cdef SpmEncoder encoder
    cdef tuple keep                    # the texts (the Sources point into them)
    cdef vector[Source] srcs
    cdef vector[Py_ssize_t] bounds     # chunk k is texts bounds[k]:bounds[k + 1]
    cdef vector[Batch] results
    cdef pw_board* board
    cdef bint as_pieces

    def __dealloc__(self):
        del self.board

    @property
    def n_chunks(self):
        return self.results.size()

    def work(self):
        """Encode chunks until none is left (a pool thread's part)."""
        cdef Scratch local
        with nogil:
            while self._take_one(&local) >= 0:
                pass

    cdef Py_ssize_t _take_one(self, Scratch* sc) noexcept nogil:
        """Encode the next chunk no thread has taken; its index, or -1 if none is left."""
        cdef Py_ssize_t i = self.board.take()
        cdef int status
        if i >= <Py_ssize_t>self.results.size():
            return -1
        status = self.encoder._encode_all(self.srcs.data() + self.bounds[i], self.bounds[i + 1] - self.bounds[i],
                                          sc, self.as_pieces, &self.results[i])
        self.board.finish(i, status)
        return i

    def run(self, bint emit_unk=False):
        """Encode chunks and make the lists of the finished ones, in order: the result, or None as encode."""
        cdef Py_ssize_t listed = 0, n = self.results.size(), i
        cdef list out = PyList_New(len(self.keep))
        cdef Scratch local
        cdef Scratch* sc = self.encoder._take_scratch(&local)
        cdef list table = self.encoder.pieces if self.as_pieces else self.encoder.id_objects
        cdef str unk_piece = self.encoder.unk_piece if emit_unk else None
        try:
            while listed < n:
                if self.board.is_done(listed):
                    if self.board.status_of(listed) != ENC_OK:
                        break
                    # The collector stays on: its passes over the new lists then run here,
                    # while the other threads encode, not after the last chunk (8% of a
                    # 2-thread batch of short lines, measured).
                    _fill_lists(&self.results[listed], self.encoder.core, table, unk_piece, out,
                                self.bounds[listed], False)
                    _release(&self.results[listed])
                    listed += 1
                    continue
                with nogil:
                    if self._take_one(sc) < 0:
                        self.board.wait(listed)   # the rest is taken: wait for the next chunk to list
        finally:
            self.encoder._give_back(sc)
        if listed < n:
            for i in range(self.bounds[listed], len(self.keep)):   # well-formed, then dropped
                Py_INCREF(None)
                PyList_SET_ITEM(out, i, None)
            return None
        return out


cdef class SpmDefaults:
    """An :class:`SpmEncoder` with one processor's defaults: ``out_type`` and ``emit_unk_piece`` (None: default).

    >>> core = SpmCore(["<unk>", "▁a"], [0.0, -1.0], [2, 1], 1, False, False, 0)
    >>> enc = SpmEncoder(core, SpmNormalizer(None, None, True, True, True, False), ["<unk>", "▁a"], "<unk>")
    >>> d = SpmDefaults(enc, int, False)
    >>> d.encode("a"), d.encode("a", str), d.encode("a", float)
    ([1], ['▁a'], None)
    """

    cdef readonly SpmEncoder encoder
    cdef bint pieces, emit

    def __init__(self, SpmEncoder encoder not None, out_type, emit_unk_piece):
        self.encoder = encoder
        self.pieces = out_type is str
        self.emit = bool(emit_unk_piece)

    def options(self, out_type, emit_unk_piece):
        """``(as_pieces, emit_unk)`` for these arguments, or None if ``out_type`` is neither int nor str."""
        if out_type is None:
            return self.pieces, (self.emit if emit_unk_piece is None else bool(emit_unk_piece))
        if out_type is int or out_type is str:
            return out_type is str, (self.emit if emit_unk_piece is None else bool(emit_unk_piece))
        return None

    def plain(self, text, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling):
        """``encode`` when ``SentencePieceProcessor.Encode``'s other options are off (falsy); else None."""
        if add_bos or add_eos or reverse or enable_sampling:
            return None
        return self._encode(text, out_type, emit_unk_piece)

    def encode(self, text, out_type=None, emit_unk_piece=None):
        """Ids (or pieces) of one text; None: use the general path (which raises the right error, if any)."""
        return self._encode(text, out_type, emit_unk_piece)

    cdef object _encode(self, object text, object out_type, object emit_unk_piece):
        cdef bint as_pieces
        if out_type is None:
            as_pieces = self.pieces
        elif out_type is int:
            as_pieces = False
        elif out_type is str:
            as_pieces = True
        else:
            return None
        return self.encoder._encode(text, as_pieces, self.emit if emit_unk_piece is None else bool(emit_unk_piece))


@cython.binding(True)
def processor_encode(self, input, out_type=None, add_bos=None, add_eos=None, reverse=None, emit_unk_piece=None,
                     enable_sampling=None, nbest_size=None, alpha=None, num_threads=None, thread_pool=None,
                     return_type=None, return_bytes=None):
    """Ids (``out_type=int``) or pieces (``str``) of ``input`` (a str, or a list of str).

    ``return_type`` is ``out_type``'s newer name; besides int and str it
    takes ``bytes`` (pieces as UTF-8), ``"numpy"`` (an int32 array),
    ``"proto"`` (a ``SentencePieceText``: each piece's surface and byte
    offsets in the input), ``"serialized_proto"`` and ``"offset_mapping"``
    (``{"ids", "pieces", "offsets"}``, char offsets; with ``return_bytes``,
    byte offsets and bytes pieces).

    ``enable_sampling=True`` samples a segmentation (subword
    regularization): Unigram with ``nbest_size=-1`` samples from all
    segmentations by forward-filtering backward-sampling, ``nbest_size``
    > 1 from the n best, weights exp(alpha·score); BPE drops merges with
    probability ``alpha`` (BPE-dropout). ``add_bos``/``add_eos`` add
    ``<s>``/``</s>`` after ``reverse``. A list is encoded on ``num_threads``
    threads (-1: one per CPU), the results in order.
    """
    # SentencePieceProcessor.Encode itself: one text with the processor's plain defaults goes
    # straight to the kernel (most calls; a Python method's frame would cost 5-8% of them),
    # everything else to the processor's general ``_encode_rest``.
    cdef object fast
    cdef object out
    if thread_pool is not None and num_threads is None:
        num_threads = thread_pool.num_threads()     # (a sentencepiece.ThreadPool too)
    if type(input) is not list and return_type is None and return_bytes is None:
        fast = self._fast
        if fast is not None and not (add_bos or add_eos or reverse or enable_sampling):
            out = (<SpmDefaults>fast)._encode(input, out_type, emit_unk_piece)
            if out is not None:
                return out
    return self._encode_rest(input, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                             nbest_size, alpha, num_threads, return_type, return_bytes)


cdef inline void _put_char(vector[uint8_t]& out, vector[int32_t]& orig_of, const uint8_t* c, Py_ssize_t length,
                           int32_t orig) noexcept nogil:
    # One char (its UTF-8 bytes) onto ``out``, standing for original char ``orig``.
    out.insert(out.end(), c, c + length)
    orig_of.push_back(orig)


cdef int _source_of(object text, Source* src) except -2:
    """Fill ``src`` for a str or bytes ``text``; -1 for any other type."""
    if isinstance(text, str):
        if PyUnicode_IS_ASCII(text):
            src.kind = 0
        else:
            src.kind = PyUnicode_KIND(text)
        src.data = PyUnicode_DATA(text)
        src.length = PyUnicode_GET_LENGTH(text)
        return 0
    if isinstance(text, bytes):
        src.kind = 0
        src.data = PyBytes_AS_STRING(text)
        src.length = PyBytes_GET_SIZE(text)
        return 0
    return -1


cdef Py_ssize_t _str_to_utf8(Source* src, vector[uint8_t]& buf) noexcept nogil:
    """The UTF-8 of a str's code units into ``buf``; its length, or -1 for a lone surrogate."""
    cdef Py_ssize_t i, m = 0, n = src.length
    cdef uint32_t cp
    cdef uint8_t* o
    if <size_t>(4 * n + 4) > buf.size():
        buf.resize(4 * n + 4)
    o = buf.data()
    if src.kind == 1:
        for i in range(n):
            m += put_utf8((<const uint8_t*>src.data)[i], o + m)
        return m
    for i in range(n):
        cp = (<const uint16_t*>src.data)[i] if src.kind == 2 else (<const uint32_t*>src.data)[i]
        if cp < 0x80:
            o[m] = <uint8_t>cp
            m += 1
        elif 0xD800 <= cp < 0xE000:
            return -1
        else:
            m += put_utf8(cp, o + m)
    return m


cdef Py_ssize_t _text_utf8(Source* src, vector[uint8_t]& buf, const uint8_t** s) noexcept nogil:
    """``src``'s UTF-8 (its own bytes when it has them, else made in ``buf``) in ``s``; its length, or -1
    for a lone surrogate."""
    cdef Py_ssize_t n
    if src.kind == 0:
        s[0] = <const uint8_t*>src.data
        return src.length
    n = _str_to_utf8(src, buf)
    s[0] = buf.data()
    return n


cdef object _words_joined(HfText& made, const vector[int]& status, const vector[size_t]& text_end, strings):
    """``(raw, n, n_words, strings)`` of texts encoded one after another into ``made`` (each ending at
    its ``text_end``) as a pre-tokenized sequence's words, each token's word its text's position,
    with a fifth item, the token strings, when a token is spelled by its own text; None if a
    text was left (``status`` -1)."""
    cdef Py_ssize_t k, i, n = <Py_ssize_t>made.ids.size()
    cdef size_t first = 0
    for k in range(<Py_ssize_t>status.size()):
        if status[k] != 0:
            return None
    cdef bytes raw = _hf_raw(made)
    cdef int32_t* words = <int32_t*>PyBytes_AS_STRING(raw) + 3 * n
    for k in range(<Py_ssize_t>text_end.size()):
        for i in range(<Py_ssize_t>first, <Py_ssize_t>text_end[k]):
            words[i] = <int32_t>k
        first = text_end[k]
    result = (raw, n, <Py_ssize_t>status.size(), strings)
    if made.spelled_at.size():
        result += (_hf_token_list(made, strings),)
    PyObject_GC_UnTrack(<void*>result)
    return result


cdef bytes _hf_raw(HfText& out, size_t first=0, Py_ssize_t n=-1):
    """``out``'s ``n`` tokens from ``first`` on (-1: to its end) as a raw encoding: four blocks of
    int32 (ids, starts, ends, words)."""
    if n < 0:
        n = <Py_ssize_t>(out.ids.size() - first)
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16 * n)
    cdef char* dst = PyBytes_AS_STRING(raw)
    if n:
        memcpy(dst, out.ids.data() + first, 4 * n)
        memcpy(dst + 4 * n, out.starts.data() + first, 4 * n)
        memcpy(dst + 8 * n, out.ends.data() + first, 4 * n)
        memcpy(dst + 12 * n, out.words.data() + first, 4 * n)
    return raw


cdef list _hf_token_list(HfText& out, object pieces, size_t first=0, Py_ssize_t n=-1, size_t spelled_first=0,
                         size_t spelled_last=<size_t>-1):
    """The token strings of ``out``'s ``n`` tokens from ``first`` on (-1: to its end): each id's
    piece (``pieces[id]``), or a spelled token's own text (its ``spelled_first`` to ``spelled_last``
    ones, their indices counted in all of ``out``)."""
    cdef Py_ssize_t i, start
    cdef size_t k
    if n < 0:
        n = <Py_ssize_t>(out.ids.size() - first)
    spelled_last = min(spelled_last, out.spelled_at.size())
    cdef list tokens = [pieces[out.ids[first + i]] for i in range(n)]
    start = out.spelled_ends[spelled_first - 1] if spelled_first else 0
    for k in range(spelled_first, spelled_last):
        tokens[out.spelled_at[k] - first] = PyUnicode_DecodeUTF8(<const char*>out.spelled_text.data() + start,
                                                                 out.spelled_ends[k] - start, NULL)
        start = out.spelled_ends[k]
    return tokens


# -- helpers -------------------------------------------------------------------
cdef void _fuse_unknown(vector[Seg]& raw, vector[Seg]& fused, int32_t unk_id) noexcept nogil:
    """Consecutive unknown segments (by id) as one SEG_UNK segment, as Hugging Face's fuse_unk does."""
    cdef size_t k
    cdef Seg seg
    fused.clear()
    for k in range(raw.size()):
        seg = raw[k]
        if seg.id == unk_id and fused.size() and fused[fused.size() - 1].flag == SEG_UNK:
            fused[fused.size() - 1].end = seg.end
        else:
            seg.flag = SEG_UNK if seg.id == unk_id else SEG_PLAIN
            fused.push_back(seg)


cdef void _reverse_segs(vector[Seg]& v) noexcept nogil:
    cdef size_t i = 0, j = v.size()
    cdef Seg t
    while i + 1 < j:
        j -= 1
        t = v[i]; v[i] = v[j]; v[j] = t
        i += 1


cdef void _reverse_ints(vector[int32_t]& v) noexcept nogil:
    cdef size_t i = 0, j = v.size()
    cdef int32_t t
    while i + 1 < j:
        j -= 1
        t = v[i]; v[i] = v[j]; v[j] = t
        i += 1


cdef inline double _log_sum_exp_f32(double x, double y, int init) noexcept nogil:
    # SentencePiece's LogSumExp on floats.
    cdef float vmin, vmax
    if init:
        return y
    vmin = <float>(x if x < y else y)
    vmax = <float>(y if x < y else x)
    if vmax > <float>(vmin + <float>50.0):
        return vmax
    return f32(vmax + log(exp(<double>(<float>(vmin - vmax))) + 1.0))


cdef inline double _log_sum_exp(double x, double y, int init) noexcept nogil:
    cdef double vmin, vmax
    if init:
        return y
    vmin = x if x < y else y
    vmax = y if x < y else x
    if vmax > vmin + 50.0:
        return vmax
    return vmax + log(exp(vmin - vmax) + 1.0)


# SentencePiece BPE's pairs of linked symbols (SpmCore._bpe_merge, _bpe_merge_buckets).
cdef inline bint _pair_current(const Pair& p, vector[int32_t]& length) noexcept nogil:
    """Whether the pair ``p`` is still there (neither side merged away or grown since it was queued)."""
    return length[p.left] != 0 and length[p.right] != 0 and length[p.left] + length[p.right] == p.size


cdef inline void _join_pair(const Pair& p, vector[int32_t]& prev, vector[int32_t]& nxt,
                            vector[int32_t]& length) noexcept nogil:
    """Merge the pair ``p``: its right symbol joins the left one and leaves the links."""
    length[p.left] += length[p.right]
    nxt[p.left] = nxt[p.right]
    if nxt[p.right] >= 0:
        prev[nxt[p.right]] = p.left
    length[p.right] = 0


cdef bint _left_before(const Pair& a, const Pair& b) noexcept nogil:
    return a.left < b.left


cdef inline void _queue_pair(vector[Pair]& later, vector[int32_t]& later_next, vector[int32_t]& later_head,
                             vector[Pair]& late, const Pair& p, uint32_t rank, uint32_t current) noexcept nogil:
    """Queue a pair of score ``rank`` while score ``current`` merges (``SpmCore._bpe_merge_buckets``):
    in its score's bucket (a list through ``later``) if it comes after, else on the heap of late ones."""
    if rank > current:
        later.push_back(p)
        later_next.push_back(later_head[rank])
        later_head[rank] = <int32_t>later.size() - 1
    else:
        _heap_push(late, p)


# BPE agenda: max-heap by (score, then smaller left first).
cdef inline bint _pair_less(const Pair& a, const Pair& b) noexcept nogil:
    return a.score < b.score or (a.score == b.score and a.left > b.left)


cdef void _heap_push(vector[Pair]& h, Pair p) noexcept nogil:
    cdef size_t i, parent
    h.push_back(p)
    i = h.size() - 1
    while i > 0:
        parent = (i - 1) // 2
        if not _pair_less(h[parent], p):
            break
        h[i] = h[parent]
        i = parent
    h[i] = p


cdef void _heap_pop(vector[Pair]& h) noexcept nogil:
    cdef size_t i = 0, n, child
    cdef Pair last = h.back()
    h.pop_back()
    n = h.size()
    if n == 0:
        return
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _pair_less(h[child], h[child + 1]):
            child += 1
        if not _pair_less(last, h[child]):
            break
        h[i] = h[child]
        i = child
    h[i] = last


# A* agenda: libstdc++'s push_heap/pop_heap, step for step, over hypothesis ids
# (ties between equal f(x) then pop in SentencePiece's order).
cdef inline bint _hyp_less(vector[Hyp]& hyps, int32_t a, int32_t b) noexcept nogil:
    return hyps[a].fx < hyps[b].fx


cdef void _std_push_heap_at(vector[int32_t]& h, vector[Hyp]& hyps, Py_ssize_t hole, Py_ssize_t top,
                            int32_t value) noexcept nogil:
    cdef Py_ssize_t parent = (hole - 1) // 2
    while hole > top and _hyp_less(hyps, h[parent], value):
        h[hole] = h[parent]
        hole = parent
        parent = (hole - 1) // 2
    h[hole] = value


cdef void _std_push(vector[int32_t]& h, vector[Hyp]& hyps, int32_t value) noexcept nogil:
    h.push_back(value)
    _std_push_heap_at(h, hyps, <Py_ssize_t>h.size() - 1, 0, value)


cdef void _std_pop(vector[int32_t]& h, vector[Hyp]& hyps) noexcept nogil:
    cdef Py_ssize_t n = h.size(), length, hole = 0, second = 0
    cdef int32_t value
    if n > 1:
        length = n - 1
        value = h[length]
        h[length] = h[0]
        while second < (length - 1) // 2:
            second = 2 * (second + 1)
            if _hyp_less(hyps, h[second], h[second - 1]):
                second -= 1
            h[hole] = h[second]
            hole = second
        if (length & 1) == 0 and second == (length - 2) // 2:
            second = 2 * (second + 1)
            h[hole] = h[second - 1]
            hole = second - 1
        _std_push_heap_at(h, hyps, hole, 0, value)
    h.pop_back()


cdef void _astar(Lattice* L, int nbest_size, bint spm, vector[vector[int32_t]]& paths,
                 vector[double]& scores) noexcept nogil:
    """Lattice::NBest: exact n-best by A* from EOS, h(x) = the Viterbi score up to x."""
    cdef vector[Hyp] hyps
    cdef vector[int32_t] agenda, fresh
    cdef vector[int32_t] path
    cdef Hyp h
    cdef int32_t top, node, j, l
    cdef double gx
    if nbest_size < 1:
        return
    h.node = 1
    h.next = -1
    h.gx = 0.0
    h.fx = L.nodes[1].backtrace
    hyps.push_back(h)
    _std_push(agenda, hyps, 0)
    while agenda.size():
        top = agenda[0]
        _std_pop(agenda, hyps)
        node = hyps[top].node
        if node == 0:  # reached BOS
            _hyp_path(hyps, top, path)
            paths.push_back(path)
            scores.push_back(hyps[top].fx)
            if <int>paths.size() == nbest_size:
                break
            continue
        gx = hyps[top].gx
        for j in range(L.end_off[L.nodes[node].pos], L.end_off[L.nodes[node].pos + 1]):
            l = L.end_ids[j]
            h.node = l
            h.next = top
            if spm:
                h.gx = f32(L.nodes[l].score + gx)
                h.fx = f32(L.nodes[l].backtrace + gx)
            else:
                h.gx = L.nodes[l].score + gx
                h.fx = L.nodes[l].backtrace + gx
            hyps.push_back(h)
            _std_push(agenda, hyps, <int32_t>hyps.size() - 1)
        if <int>agenda.size() >= MAX_AGENDA:
            _shrink_agenda(agenda, fresh, hyps, nbest_size)


cdef void _hyp_path(vector[Hyp]& hyps, int32_t top, vector[int32_t]& path) noexcept nogil:
    """The lattice nodes of the complete hypothesis ``top``, BOS to EOS excluded, left to right."""
    cdef int32_t k = hyps[top].next
    path.clear()
    while hyps[k].next != -1:
        path.push_back(hyps[k].node)
        k = hyps[k].next


cdef void _shrink_agenda(vector[int32_t]& agenda, vector[int32_t]& fresh, vector[Hyp]& hyps,
                         int wanted) noexcept nogil:
    """Keep only the best hypotheses of a too-big agenda, as SentencePiece does (so results match)."""
    cdef int keep = MIN_AGENDA if MIN_AGENDA < wanted * 10 else wanted * 10
    cdef int i
    fresh.clear()
    for i in range(keep):
        _std_push(fresh, hyps, agenda[0])
        _std_pop(agenda, hyps)
    agenda.swap(fresh)


cdef void _gumbel_top(Lattice* L, vector[double]& alpha, double theta, int k, Rng* rng,
                      vector[vector[int32_t]]& paths, vector[double]& keys) noexcept nogil:
    """The ``k`` paths with the largest Gumbel-perturbed log-probabilities, largest first, and those keys.

    Perturbing every path's log-probability with its own Gumbel noise and
    keeping the top ``k`` is sampling ``k`` paths without replacement (the
    Gumbel-top-k trick). There are too many paths to perturb one by one, so
    the noise is drawn top-down, as in SentencePiece's Lattice::NBest with
    ``sample`` (Kool et al. 2019, "Stochastic Beams and Where to Find
    Them"): A* from EOS, where a partial path's key is the largest
    perturbed score among its completions, its ``gx`` their total log
    probability (``alpha``: the forward log-sums of ``_forward``). A node's
    children get independent Gumbel keys around their own ``gx``, shifted
    (truncated Gumbel, numerically stable form of appendix B.3 of Kool et
    al.) so that their maximum is exactly the parent's key. Keys are in
    double precision.
    """
    cdef vector[Hyp] hyps
    cdef vector[int32_t] agenda, fresh, path
    cdef vector[double] probs, perturbed
    cdef Hyp h
    cdef int32_t top, node, j, l, lo, hi, i
    cdef double gx, fx, Z, biggest, v
    if k < 1:
        return
    h.node = 1
    h.next = -1
    h.gx = 0.0
    h.fx = rng_gumbel(rng)    # the perturbed score of the whole lattice
    hyps.push_back(h)
    _std_push(agenda, hyps, 0)
    while agenda.size():
        top = agenda[0]
        _std_pop(agenda, hyps)
        node = hyps[top].node
        if node == 0:  # reached BOS: a complete path
            _hyp_path(hyps, top, path)
            paths.push_back(path)
            keys.push_back(hyps[top].fx)
            if <int>paths.size() == k:
                break
            continue
        gx = hyps[top].gx
        fx = hyps[top].fx
        lo = L.end_off[L.nodes[node].pos]
        hi = L.end_off[L.nodes[node].pos + 1]
        Z = alpha[node]
        probs.resize(hi - lo)
        perturbed.resize(hi - lo)
        biggest = -INF_D
        for i in range(hi - lo):
            l = L.end_ids[lo + i]
            probs[i] = gx + alpha[l] + theta * L.nodes[l].score - Z
            perturbed[i] = probs[i] + rng_gumbel(rng)
            if perturbed[i] > biggest:
                biggest = perturbed[i]
        for i in range(hi - lo):
            v = fx - perturbed[i] + log1p(-exp(perturbed[i] - biggest))
            h.node = L.end_ids[lo + i]
            h.next = top
            h.gx = probs[i]
            h.fx = fx - (v if v > 0.0 else 0.0) - log1p(exp(-fabs(v)))
            hyps.push_back(h)
            _std_push(agenda, hyps, <int32_t>hyps.size() - 1)
        if <int>agenda.size() >= MAX_AGENDA:
            _shrink_agenda(agenda, fresh, hyps, k)



cdef inline double _log_inclusion(double x) noexcept nogil:
    """log(1 − exp(−exp(x))): the log-probability that a path whose log-probability exceeds the
    sample's threshold κ by ``x`` is in a Gumbel-top-k sample (a series below x = −10, where the
    closed form loses all precision), as SentencePiece computes it."""
    cdef double y = exp(x)
    if x <= -10.0:
        return x - y / 2.0 + y * y / 24.0 - y * y * y * y / 2880.0
    return log(-expm1(-y))
