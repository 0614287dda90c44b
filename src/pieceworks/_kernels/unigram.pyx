# cython: language_level=3
# distutils: language = c++
"""SentencePiece's encoders over UTF-8 bytes: Unigram Viterbi, n-best,
sampling, SentencePiece BPE, and the precompiled-charsmap normalizer.

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
  backward-sampling, the lattice entropy, and SentencePiece BPE (merge the
  adjacent pair whose merged piece scores highest; ties to the left).

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
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.math cimport exp, log
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

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

cdef float FLT_MAX_ = 3.4028234663852886e+38
cdef float FLT_MIN_ = 1.1754943508222875e-38
cdef float UNK_PENALTY = 10.0
cdef int MAX_AGENDA = 10000
cdef int MIN_AGENDA = 512

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
# counts bytes, the lattice used for n-best and sampling counts chars).
cdef float USER_SCORE_UNIT = 0.1


cdef inline double _user_score(int length) noexcept nogil:
    return f32(f32(<double>length * USER_SCORE_UNIT) - 0.1)


# -- random numbers: xoshiro256**, one generator per process ----------------
cdef uint64_t _rng[4]


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef uint64_t rng_next() noexcept nogil:
    cdef uint64_t result = _rotl(_rng[1] * 5, 7) * 9
    cdef uint64_t t = _rng[1] << 17
    _rng[2] ^= _rng[0]
    _rng[3] ^= _rng[1]
    _rng[1] ^= _rng[2]
    _rng[0] ^= _rng[3]
    _rng[2] ^= t
    _rng[3] = _rotl(_rng[3], 45)
    return result


cdef inline double rng_uniform() noexcept nogil:
    """A double in [0, 1)."""
    return <double>(rng_next() >> 11) * (1.0 / 9007199254740992.0)


def set_random_seed(seed):
    """Seed the sampling generator (``None``: from the OS), so samples repeat.

    >>> set_random_seed(1); a = random_uniform(); set_random_seed(1); a == random_uniform()
    True
    """
    cdef uint64_t z
    cdef int i
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    z = <uint64_t>(int(seed) & 0xFFFFFFFFFFFFFFFF)
    for i in range(4):  # splitmix64 fills the state
        z += <uint64_t>11400714819323198485ULL
        _rng[i] = z
        _rng[i] = (_rng[i] ^ (_rng[i] >> 30)) * <uint64_t>13787848793156543929ULL
        _rng[i] = (_rng[i] ^ (_rng[i] >> 27)) * <uint64_t>10723151780598845931ULL
        _rng[i] = _rng[i] ^ (_rng[i] >> 31)


def random_uniform():
    """One draw in [0, 1) from the sampling generator (for tests)."""
    return rng_uniform()


set_random_seed(None)


cdef int pick_index(const vector[double]& weights) noexcept nogil:
    """Index drawn with probability proportional to ``weights`` (std::discrete_distribution)."""
    cdef double total = 0.0, acc = 0.0, r
    cdef size_t i, n = weights.size()
    for i in range(n):
        total += weights[i]
    if n == 0:
        return -1
    if not (total > 0.0):
        return <int>(rng_next() % n)
    r = rng_uniform() * total
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
        cdef list pairs = sorted(zip(keys, values))
        cdef Py_ssize_t n = len(pairs), i
        cdef vector[const uint8_t*] kp
        cdef vector[Py_ssize_t] kl
        cdef vector[int32_t] kv
        cdef list keep = []
        for i in range(n):
            key = pairs[i][0]
            if not isinstance(key, bytes):
                raise TypeError("DoubleArray keys must be bytes")
            if i and key == pairs[i - 1][0]:
                raise KernelError(f"duplicate key {key!r}")
            if PyBytes_GET_SIZE(key) == 0:
                continue  # an empty key never matches anything
            keep.append(key)
            kp.push_back(<const uint8_t*>PyBytes_AS_STRING(key))
            kl.push_back(PyBytes_GET_SIZE(key))
            kv.push_back(<int32_t>pairs[i][1])
        self.n_keys = <int>kp.size()
        self._build(kp, kl, kv)

    cdef void _grow(self, vector[int32_t]& skip, Py_ssize_t need):
        cdef Py_ssize_t old = self.check.size(), size = old, i
        if need < old:
            return
        while size <= need:
            size = size * 2 if size else 1024
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

    cdef void _build(self, vector[const uint8_t*]& kp, vector[Py_ssize_t]& kl, vector[int32_t]& kv):
        cdef vector[int32_t] skip
        cdef vector[int32_t] st_node, st_lo, st_hi, st_depth
        cdef vector[int32_t] labels, starts
        cdef int32_t node, lo, hi, depth, j, b, p, q, c, prev
        cdef Py_ssize_t k
        cdef bint ok
        self._grow(skip, 256)
        self.check[0] = -2  # the root
        skip[0] = 1
        if kp.size() == 0:
            return
        st_node.push_back(0); st_lo.push_back(0); st_hi.push_back(<int32_t>kp.size()); st_depth.push_back(0)
        while st_node.size():
            node = st_node.back(); st_node.pop_back()
            lo = st_lo.back(); st_lo.pop_back()
            hi = st_hi.back(); st_hi.pop_back()
            depth = st_depth.back(); st_depth.pop_back()
            if kl[lo] == depth:  # sorted: the key that ends here comes first
                self.value[node] = kv[lo]
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

    def exact_match(self, bytes key):
        """The value of ``key``, or -1."""
        return self.exact(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))

    def common_prefix_search(self, bytes key):
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


cdef inline uint32_t load_u32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef class Charsmap:
    """The rewrite rules in a ``precompiled_charsmap``: a darts-clone trie + NUL-separated strings.

    Layout: ``<u32 trie size in bytes><trie units, u32 LE each><normalized strings>``.
    """

    def __init__(self, bytes blob):
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

    cdef Py_ssize_t shortest(self, const uint8_t* s, Py_ssize_t n, Py_ssize_t* value) noexcept nogil:
        return self._search(s, n, value, False)

    cdef Py_ssize_t _string_end(self, Py_ssize_t start) noexcept nogil:
        cdef Py_ssize_t e = start
        while e < self.n_strings and self.strings[e] != 0:
            e += 1
        return e

    def lookup(self, bytes key, bint longest=True):
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

    def rules(self):
        """Every ``(source bytes, replacement bytes)`` rule, by walking the trie."""
        out = []
        self._walk(self._unit(0), 0, b"", out, 0)
        return out

    cdef _walk(self, uint32_t unit, Py_ssize_t pos, bytes prefix, list out, int depth):
        cdef Py_ssize_t base, child, leaf, value
        cdef uint32_t cu
        cdef int c
        if depth > 64:
            return
        base = pos ^ ((unit >> 10) << ((unit & (1 << 9)) >> 6))
        for c in range(1, 256):
            child = base ^ c
            if child >= self.n_units:
                continue
            cu = self._unit(child)
            if (cu & LABEL_MASK) != <uint32_t>c:
                continue
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
    """

    cdef Charsmap charsmap
    cdef DoubleArray matcher
    cdef readonly bint add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, suffix

    def __init__(self, Charsmap charsmap, DoubleArray matcher, bint add_dummy_prefix,
                 bint remove_extra_whitespaces, bint escape_whitespaces, bint treat_whitespace_as_suffix):
        self.charsmap = charsmap
        self.matcher = matcher if matcher is not None and len(matcher) else None
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.suffix = treat_whitespace_as_suffix

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

    cdef void _add_ws(self, vector[uint8_t]& out, vector[int32_t]& to_orig, int32_t consumed) noexcept nogil:
        if self.escape_whitespaces:
            out.push_back(WS0); out.push_back(WS1); out.push_back(WS2)
            to_orig.push_back(consumed); to_orig.push_back(consumed); to_orig.push_back(consumed)
        else:
            out.push_back(32)
            to_orig.push_back(consumed)

    cdef void run(self, const uint8_t* s, Py_ssize_t n, vector[uint8_t]& out, vector[int32_t]& to_orig) noexcept nogil:
        cdef Py_ssize_t consumed = 0, took, rep_len, j, length
        cdef const uint8_t* rep = NULL
        cdef bint is_prev_space
        out.clear()
        to_orig.clear()
        if n == 0:
            return
        if self.remove_extra_whitespaces:
            while consumed < n:
                took = self._prefix(s + consumed, n - consumed, &rep, &rep_len)
                if not (rep_len == 1 and rep[0] == 32):
                    break
                consumed += took
        if consumed == n:
            return
        out.reserve(3 * (n - consumed) + 3)
        to_orig.reserve(3 * (n - consumed) + 4)
        if not self.suffix and self.add_dummy_prefix:
            self._add_ws(out, to_orig, <int32_t>consumed)
        is_prev_space = self.remove_extra_whitespaces
        while consumed < n:
            took = self._prefix(s + consumed, n - consumed, &rep, &rep_len)
            j = 0
            if is_prev_space:
                while j < rep_len and rep[j] == 32:
                    j += 1
            if j < rep_len:
                while j < rep_len:
                    if self.escape_whitespaces and rep[j] == 32:
                        out.push_back(WS0); out.push_back(WS1); out.push_back(WS2)
                        to_orig.push_back(<int32_t>consumed)
                        to_orig.push_back(<int32_t>consumed)
                        to_orig.push_back(<int32_t>consumed)
                    else:
                        out.push_back(rep[j])
                        to_orig.push_back(<int32_t>consumed)
                    j += 1
                is_prev_space = rep[rep_len - 1] == 32
            consumed += took
            if not self.remove_extra_whitespaces:
                is_prev_space = False
        if self.remove_extra_whitespaces:
            if self.escape_whitespaces:
                while out.size() >= 3 and out[out.size() - 3] == WS0 and out[out.size() - 2] == WS1 \
                        and out[out.size() - 1] == WS2:
                    length = out.size() - 3
                    consumed = to_orig[length]
                    out.resize(length)
                    to_orig.resize(length)
            else:
                while out.size() >= 1 and out[out.size() - 1] == 32:
                    length = out.size() - 1
                    consumed = to_orig[length]
                    out.resize(length)
                    to_orig.resize(length)
        if self.suffix and self.add_dummy_prefix:
            self._add_ws(out, to_orig, <int32_t>consumed)
        to_orig.push_back(<int32_t>consumed)

    def normalize(self, bytes text, bint with_offsets=False):
        """``(normalized bytes, norm_to_orig or None)``; ``norm_to_orig`` has one more entry than bytes."""
        cdef vector[uint8_t] out
        cdef vector[int32_t] to_orig
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(text)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(text)
        with nogil:
            self.run(s, n, out, to_orig)
        result = PyBytes_FromStringAndSize(<const char*>out.data(), out.size())
        if not with_offsets:
            return result, None
        if to_orig.size() == 0:
            return result, [0]
        return result, [to_orig[i] for i in range(to_orig.size())]


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


cdef struct Lattice:
    vector[LNode] nodes
    vector[int32_t] char_byte     # byte offset of each char boundary (len + 1 entries)
    vector[int32_t] begin_lo      # nodes beginning at pos: [begin_lo[pos], begin_hi[pos]) (EOS aside)
    vector[int32_t] begin_hi
    vector[int32_t] end_off       # CSR: nodes ending at pos are end_ids[end_off[pos]:end_off[pos+1]]
    vector[int32_t] end_ids
    int32_t length


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
    cdef readonly double min_score, max_score, unk_score
    cdef int32_t n_pieces

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

    def piece_to_id(self, str piece):
        """SentencePiece's PieceToId: reserved pieces first, then the trie, else the unknown id."""
        return self._piece_to_id_bytes(piece.encode("utf-8"))

    def lookup(self, str piece):
        """The trie's id for ``piece`` (Hugging Face's token_to_id), or None."""
        cdef bytes key = piece.encode("utf-8")
        cdef int32_t v = self.trie.exact(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
        return None if v < 0 else v

    # -- best segmentation ---------------------------------------------------
    cdef int _viterbi(self, const uint8_t* s, int32_t n, vector[Seg]& out) noexcept nogil:
        """SentencePiece's EncodeOptimized into ``out`` (unmerged); -1 if an unknown char has no unk id."""
        cdef vector[double] bscore
        cdef vector[int32_t] bstart, bid
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
                if v < 0:
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
                if self.unk_id < 0:
                    return -1
                cand = f32(self.unk_score + till) if spm else self.unk_score + till
                pos = starts + mblen
                if bstart[pos] == -1 or cand > bscore[pos]:
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

    # -- SentencePiece BPE -----------------------------------------------------
    cdef void _bpe(self, const uint8_t* s, int32_t n, double alpha, vector[Seg]& out) noexcept nogil:
        cdef vector[int32_t] prev, nxt, start, length
        cdef vector[uint8_t] freeze
        cdef vector[Pair] heap
        cdef unordered_map[int32_t, Quad] rev
        cdef int32_t i, m, pos = 0, best, node, t, size
        cdef Pair top
        cdef bint found
        out.clear()
        if n == 0:
            return
        # Initial symbols: a user-defined symbol (longest match, frozen) or one char.
        size = <int32_t>self.matcher.check.size()
        while pos < n:
            best = 0
            if self.has_user:
                node = 0
                i = pos
                while i < n:
                    t = self.matcher.base[node] + s[i]
                    if t >= size or self.matcher.check[t] != node:
                        break
                    node = t
                    i += 1
                    if self.matcher.value[node] >= 0:
                        best = i - pos
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
        for i in range(1, <int32_t>start.size()):
            self._add_pair(s, i - 1, i, start, length, freeze, heap, rev)
        while heap.size():
            top = heap[0]
            _heap_pop(heap)
            if length[top.left] == 0 or length[top.right] == 0 or \
                    length[top.left] + length[top.right] != top.size:
                continue
            if alpha > 0.0 and (alpha >= 1.0 or rng_uniform() < alpha):
                continue  # BPE-dropout
            length[top.left] += length[top.right]
            nxt[top.left] = nxt[top.right]
            if nxt[top.right] >= 0:
                prev[nxt[top.right]] = top.left
            length[top.right] = 0
            if prev[top.left] >= 0:
                self._add_pair(s, prev[top.left], top.left, start, length, freeze, heap, rev)
            if nxt[top.left] >= 0:
                self._add_pair(s, top.left, nxt[top.left], start, length, freeze, heap, rev)
        i = 0
        while i != -1:
            self._resegment(s, start[i], length[i], rev, out)
            i = nxt[i]

    cdef void _add_pair(self, const uint8_t* s, int32_t left, int32_t right, vector[int32_t]& start,
                        vector[int32_t]& length, vector[uint8_t]& freeze, vector[Pair]& heap,
                        unordered_map[int32_t, Quad]& rev) noexcept nogil:
        cdef int32_t v
        cdef Pair p
        cdef Quad q
        if freeze[left] or freeze[right]:
            return
        v = self.trie.exact(s + start[left], length[left] + length[right])
        if v < 0:
            return
        p.left = left
        p.right = right
        p.score = self.scores[v]
        p.size = length[left] + length[right]
        _heap_push(heap, p)
        if self.kinds[v] == K_UNUSED:
            q.a_start = start[left]; q.a_len = length[left]
            q.b_start = start[right]; q.b_len = length[right]
            rev[v] = q

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

    cdef void _encode(self, const uint8_t* s, int32_t n, double alpha, vector[Seg]& out) except *:
        cdef vector[Seg] raw
        if self.model_type == MODEL_BPE:
            self._bpe(s, n, alpha, raw)
        else:
            if self._viterbi(s, n, raw) < 0:
                raise KernelError("an unknown character needs the unknown piece, but the model has none")
        self._finish(s, raw, out)

    def encode_ids(self, bytes normalized, double alpha=0.0):
        """Ids of the best segmentation (BPE: with dropout ``alpha``), SentencePiece's post-processing applied."""
        cdef vector[Seg] segs
        self._encode(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                     alpha, segs)
        return [segs[i].id for i in range(segs.size())]

    def encode_pieces(self, bytes normalized, list pieces, str unk_piece=None, double alpha=0.0):
        """Pieces of the best segmentation; an unknown run is its own text unless ``unk_piece`` is given."""
        cdef vector[Seg] segs
        self._encode(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                     alpha, segs)
        return _seg_pieces(normalized, segs, pieces, unk_piece)

    def encode_segments(self, bytes normalized, double alpha=0.0):
        """``[(id, byte start, byte end, flag)]`` of the best segmentation (flag: 0 plain, 1 unknown run, 2 byte)."""
        cdef vector[Seg] segs
        self._encode(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                     alpha, segs)
        return [(segs[i].id, segs[i].start, segs[i].end, segs[i].flag) for i in range(segs.size())]

    # -- the lattice -------------------------------------------------------------
    cdef int _populate(self, const uint8_t* s, int32_t n, Lattice* L) noexcept nogil:
        """PopulateNodes: every vocabulary match, and an unknown node where no one-char piece starts."""
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
                if v < 0:
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

    def nbest(self, bytes normalized, int nbest_size):
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
        if self._populate(s, n, &L) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        self._lattice_viterbi(&L)
        _astar(&L, nbest_size, not self.hf, paths, path_scores)
        return [(self._path(s, &L, paths[i]), path_scores[i]) for i in range(paths.size())]

    def sample(self, bytes normalized, double theta):
        """One segmentation drawn with probability ∝ exp(theta · score) (forward filtering, backward sampling)."""
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(normalized)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(normalized)
        cdef Lattice L
        cdef vector[double] alpha, probs
        cdef vector[int32_t] path
        cdef int32_t node, j, l, k, pos
        cdef double Z
        cdef bint spm = not self.hf
        if self.model_type != MODEL_UNIGRAM:
            raise KernelError("lattice sampling needs a Unigram model")
        if n == 0:
            return []
        if self._populate(s, n, &L) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        self._forward(&L, theta, alpha)
        node = 1
        Z = alpha[1]
        while True:
            pos = L.nodes[node].pos
            probs.clear()
            for j in range(L.end_off[pos], L.end_off[pos + 1]):
                l = L.end_ids[j]
                if spm:
                    probs.push_back(exp(f32(f32(alpha[l] + f32(theta * L.nodes[l].score)) - Z)))
                else:
                    probs.push_back(exp(alpha[l] + theta * L.nodes[l].score - Z))
            k = pick_index(probs)
            node = L.end_ids[L.end_off[pos] + k]
            if node == 0:
                break
            Z = alpha[node]
            path.push_back(node)
        _reverse_ints(path)
        return self._path(s, &L, path)

    def log_partition(self, bytes normalized, double theta):
        """log Σ over all segmentations of exp(theta · score)."""
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(normalized)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(normalized)
        cdef Lattice L
        cdef vector[double] alpha
        if n == 0:
            return 0.0
        if self._populate(s, n, &L) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        self._forward(&L, theta, alpha)
        return alpha[1]

    def entropy(self, bytes normalized, double theta):
        """The entropy of the segmentation distribution ∝ exp(theta · score) (Lattice::CalculateEntropy)."""
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(normalized)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(normalized)
        cdef Lattice L
        cdef vector[double] alpha, H
        cdef int32_t pos, r, j, l, idx
        cdef double p
        if n == 0:
            return 0.0
        if self._populate(s, n, &L) < 0:
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

    def lattice_nodes(self, bytes normalized):
        """Every lattice node as ``(char pos, char length, id, score)`` (for tests and teaching)."""
        cdef Lattice L
        cdef size_t i
        if PyBytes_GET_SIZE(normalized) == 0:
            return []
        if self._populate(<const uint8_t*>PyBytes_AS_STRING(normalized), <int32_t>PyBytes_GET_SIZE(normalized),
                          &L) < 0:
            raise KernelError("an unknown character needs the unknown piece, but the model has none")
        return [(L.nodes[i].pos, L.nodes[i].length, L.nodes[i].id, L.nodes[i].score)
                for i in range(2, L.nodes.size())]

    # -- Hugging Face's Unigram.tokenize ------------------------------------------
    def hf_tokenize(self, str text, list pieces):
        """``[(id, value, char start, char end)]`` as Hugging Face's Unigram tokenizes ``text``.

        Unknown runs are fused into one token whose value is their text; with
        ``byte_fallback`` such a run becomes ``<0xNN>`` tokens when all of
        them are in the vocabulary.
        """
        cdef bytes data = text.encode("utf-8")
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(data)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(data)
        cdef vector[Seg] raw
        if n == 0:
            return []
        if self._viterbi(s, n, raw) < 0:
            return None
        return self._hf_tokens(s, n, raw, pieces)

    def hf_sample(self, str text, list pieces, double theta, int nbest_size):
        """A sampled tokenization (``nbest_size`` > 0: among the n best, else the whole lattice)."""
        cdef bytes data = text.encode("utf-8")
        cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(data)
        cdef int32_t n = <int32_t>PyBytes_GET_SIZE(data)
        cdef Lattice L
        cdef vector[vector[int32_t]] paths
        cdef vector[double] path_scores, weights, alpha, probs
        cdef vector[int32_t] path
        cdef vector[Seg] raw
        cdef Seg seg
        cdef int32_t node, j, l, k, pos
        cdef size_t i
        cdef double Z, top
        if n == 0:
            return []
        if self._populate(s, n, &L) < 0:
            return None
        if nbest_size > 0:
            self._lattice_viterbi(&L)
            _astar(&L, nbest_size, False, paths, path_scores)
            if paths.size() == 0:
                return []
            top = path_scores[0]
            for i in range(paths.size()):
                weights.push_back(exp(theta * (path_scores[i] - top)))
            path = paths[pick_index(weights)]
        else:
            self._forward(&L, theta, alpha)
            node = 1
            Z = alpha[1]
            while True:
                pos = L.nodes[node].pos
                probs.clear()
                for j in range(L.end_off[pos], L.end_off[pos + 1]):
                    l = L.end_ids[j]
                    probs.push_back(exp(alpha[l] + theta * L.nodes[l].score - Z))
                k = pick_index(probs)
                node = L.end_ids[L.end_off[pos] + k]
                if node == 0:
                    break
                Z = alpha[node]
                path.push_back(node)
            _reverse_ints(path)
        for i in range(path.size()):
            seg.start = L.nodes[path[i]].bstart
            seg.end = L.nodes[path[i]].bend
            seg.id = L.nodes[path[i]].id
            seg.flag = SEG_PLAIN
            raw.push_back(seg)
        return self._hf_tokens(s, n, raw, pieces)

    cdef list _hf_tokens(self, const uint8_t* s, int32_t n, vector[Seg]& raw, list pieces):
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
        # Fuse consecutive unknown nodes (by id), as Hugging Face's fuse_unk does.
        for k in range(raw.size()):
            seg = raw[k]
            if seg.id == self.unk_id and fused.size() and fused[fused.size() - 1].flag == SEG_UNK:
                fused[fused.size() - 1].end = seg.end
            else:
                seg.flag = SEG_UNK if seg.id == self.unk_id else SEG_PLAIN
                fused.push_back(seg)
        for k in range(fused.size()):
            seg = fused[k]
            cs = char_of[seg.start]
            ce = char_of[seg.end]
            if seg.flag == SEG_PLAIN:
                out.append((seg.id, pieces[seg.id], cs, ce))
                continue
            value = PyUnicode_DecodeUTF8(<const char*>s + seg.start, seg.end - seg.start, NULL)
            bid = self.trie.exact(s + seg.start, seg.end - seg.start)
            if bid >= 0:
                out.append((bid, value, cs, ce))
                continue
            if self.byte_fallback:
                ok = True
                for b in range(seg.start, seg.end):
                    if self.hf_bytes[s[b]] < 0:
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


# -- helpers -------------------------------------------------------------------
cdef list _seg_pieces(bytes normalized, vector[Seg]& segs, list pieces, str unk_piece):
    cdef const char* s = PyBytes_AS_STRING(normalized)
    cdef size_t i
    cdef list out = [None] * segs.size()
    for i in range(segs.size()):
        if segs[i].flag == SEG_UNK:
            if unk_piece is not None:
                out[i] = unk_piece
            else:
                out[i] = PyUnicode_DecodeUTF8(s + segs[i].start, segs[i].end - segs[i].start, "replace")
        else:
            out[i] = pieces[segs[i].id]
    return out


def segments_to_pieces(bytes normalized, list segments, list pieces, str unk_piece=None):
    """Pieces for ``[(id, start, end, flag)]`` segments (as returned by the encoders)."""
    cdef list out = []
    for seg_id, start, end, flag in segments:
        if flag == SEG_UNK:
            out.append(unk_piece if unk_piece is not None else normalized[start:end].decode("utf-8", "replace"))
        else:
            out.append(pieces[seg_id])
    return out


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
    cdef int32_t top, node, j, l, k, keep
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
            path.clear()
            k = hyps[top].next
            while hyps[k].next != -1:
                path.push_back(hyps[k].node)
                k = hyps[k].next
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
            # Keep only the best hypotheses (as SentencePiece does, so results match).
            keep = MIN_AGENDA if MIN_AGENDA < nbest_size * 10 else nbest_size * 10
            fresh.clear()
            for k in range(keep):
                _std_push(fresh, hyps, agenda[0])
                _std_pop(agenda, hyps)
            agenda.swap(fresh)
