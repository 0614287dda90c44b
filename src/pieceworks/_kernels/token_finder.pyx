# cython: language_level=3
# distutils: language = c++
"""Where a few strings (added or special tokens) occur in text, and which texts of a batch hold one.

A batch asks every text whether it holds a token before it encodes it
(Tokenizer's added tokens, the tiktoken face's special tokens), so that
must cost next to nothing for texts that hold none; where a text does, the
tokens are found leftmost-longest, as Hugging Face's Aho-Corasick and a
regex alternation of the tokens, longest first, find them.

Both answers come from one Aho-Corasick automaton of the tokens *reversed*,
run from a text's end to its start: after it has read ``text[i:]``
backwards, the longest token its state's suffix links reach is the longest
token that starts at ``i``. So one pass learns, in linear time, the longest
token starting at every place; the leftmost-longest matches are then taken
greedily from the left. While the automaton is at its root it skips the
chars no token ends with: by memrchr, or by blocks of chars each compared
with the few chars the tokens end with at once (vector code), or else by a
bit test a char. Most texts are not Latin-1 (one curly quote will do), and
there the bit test alone took 0.4-0.5 ms a MB of code or docs for Llama 3's
tokens, the blocks 0.14-0.23 ms: each encode of a text pays it. No joined copy of a
batch's texts is made: joining lines of which a few are not Latin-1 widened
all of them (2 MB of code, 34 such lines: 1.4 ms of copying).

Walking a plain trie from every place instead cost the text's length times
the longest token's: tokens ``a`` and ``a``*20000 + ``b`` made 40 KB of
``a`` take seconds; so did comparing a text with each of thousands of
tokens that begin alike.
"""

from cpython.unicode cimport PyUnicode_READ
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.vector cimport vector

cdef extern from "Python.h":
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    void PyObject_GC_UnTrack(void* op)

cdef extern from "<string.h>" nogil:
    void* memchr(const void* s, int c, size_t n)
    void* memrchr(const void* s, int c, size_t n)

cdef uint32_t NO_NODE = 0xFFFFFFFF
# Strings that start with at most this many distinct chars: a text holding none of them is passed over.
cdef size_t FEW_FIRSTS = 8
# At most this many distinct last chars are looked for by blocks of chars (see _few_in); more, by a bit test.
cdef int FEW_LASTS = 8
cdef Py_UCS4 SEVERAL = 0xFFFFFFFF

cdef enum:
    NEAR = 32               # TokenTrie._after_last_of_few: chars tested one by one before its blocks,
    FIRST_BLOCK = 64        # its first block,
    LAST_BLOCK = 1024       # and the most a block grows to
    WHOLE_BLOCK = 1024      # holds_one_of's blocks (it stops at the first that holds one)


cdef inline int fitting(const uint32_t* chars, Py_ssize_t count, uint32_t top, uint32_t* out) noexcept nogil:
    """Into ``out[:8]`` those of ``chars[:count]`` (at most 8) no greater than ``top`` (the text's
    widest char), the first of them again in the slots left; how many there were (0: the text
    can hold none)."""
    cdef Py_ssize_t k
    cdef int fit = 0
    for k in range(count):
        if chars[k] <= top:
            out[fit] = chars[k]
            fit += 1
    for k in range(fit, 8):
        out[k] = out[0]
    return fit


cdef extern from *:
    """
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* Whether s[lo:hi] holds one of v[:width] (width 1, 2, 4 or 8), 16 bytes at a time: each
       lane compared with every value, the answers ORed, one test at the end. The compiler's own
       vector code of the plain loop took 3 to 7 times as long. */
    #if defined(__SSE2__)
    /* One vector's lanes equal to one of the values a..h (the first WIDTH of them). */
    #define PW_MATCH(x, CMPEQ, WIDTH)                                                            \
        ((WIDTH) == 1 ? CMPEQ(x, a) :                                                            \
         (WIDTH) == 2 ? _mm_or_si128(CMPEQ(x, a), CMPEQ(x, b)) :                                 \
         (WIDTH) == 4 ? _mm_or_si128(_mm_or_si128(CMPEQ(x, a), CMPEQ(x, b)),                     \
                                     _mm_or_si128(CMPEQ(x, c), CMPEQ(x, d))) :                   \
         _mm_or_si128(_mm_or_si128(_mm_or_si128(CMPEQ(x, a), CMPEQ(x, b)),                       \
                                   _mm_or_si128(CMPEQ(x, c), CMPEQ(x, d))),                      \
                      _mm_or_si128(_mm_or_si128(CMPEQ(x, e), CMPEQ(x, f)),                       \
                                   _mm_or_si128(CMPEQ(x, g), CMPEQ(x, h)))))
    /* Four vectors a step, each into its own accumulator: the loads, not one chain of ORs, set
       the pace. */
    #define PW_FEW_IN_WIDTH(NAME, T, LANES, SET1, CAST, CMPEQ, WIDTH)                            \
    static inline int NAME(const T* s, Py_ssize_t lo, Py_ssize_t hi, const uint32_t* v) {        \
        const __m128i a = SET1((CAST)v[0]), b = SET1((CAST)v[1]), c = SET1((CAST)v[2]);          \
        const __m128i d = SET1((CAST)v[3]), e = SET1((CAST)v[4]), f = SET1((CAST)v[5]);          \
        const __m128i g = SET1((CAST)v[6]), h = SET1((CAST)v[7]);                                \
        __m128i s0 = _mm_setzero_si128(), s1 = s0, s2 = s0, s3 = s0, x;                          \
        Py_ssize_t j = lo;                                                                       \
        (void)b; (void)c; (void)d; (void)e; (void)f; (void)g; (void)h;                           \
        for (; j + 4 * LANES <= hi; j += 4 * LANES) {                                            \
            x = _mm_loadu_si128((const __m128i*)(s + j));                                        \
            s0 = _mm_or_si128(s0, PW_MATCH(x, CMPEQ, WIDTH));                                    \
            x = _mm_loadu_si128((const __m128i*)(s + j + LANES));                                \
            s1 = _mm_or_si128(s1, PW_MATCH(x, CMPEQ, WIDTH));                                    \
            x = _mm_loadu_si128((const __m128i*)(s + j + 2 * LANES));                            \
            s2 = _mm_or_si128(s2, PW_MATCH(x, CMPEQ, WIDTH));                                    \
            x = _mm_loadu_si128((const __m128i*)(s + j + 3 * LANES));                            \
            s3 = _mm_or_si128(s3, PW_MATCH(x, CMPEQ, WIDTH));                                    \
        }                                                                                        \
        for (; j + LANES <= hi; j += LANES) {                                                    \
            x = _mm_loadu_si128((const __m128i*)(s + j));                                        \
            s0 = _mm_or_si128(s0, PW_MATCH(x, CMPEQ, WIDTH));                                    \
        }                                                                                        \
        if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(s0, s1), _mm_or_si128(s2, s3)))) return 1; \
        for (; j < hi; j++)                                                                      \
            if (s[j] == (T)v[0] || s[j] == (T)v[1] || s[j] == (T)v[2] || s[j] == (T)v[3] ||      \
                s[j] == (T)v[4] || s[j] == (T)v[5] || s[j] == (T)v[6] || s[j] == (T)v[7]) return 1; \
        return 0;                                                                                \
    }
    #define PW_FEW_IN(NAME, T, LANES, SET1, CAST, CMPEQ)                                         \
    PW_FEW_IN_WIDTH(NAME##_1, T, LANES, SET1, CAST, CMPEQ, 1)                                    \
    PW_FEW_IN_WIDTH(NAME##_2, T, LANES, SET1, CAST, CMPEQ, 2)                                    \
    PW_FEW_IN_WIDTH(NAME##_4, T, LANES, SET1, CAST, CMPEQ, 4)                                    \
    PW_FEW_IN_WIDTH(NAME##_8, T, LANES, SET1, CAST, CMPEQ, 8)                                    \
    static inline int NAME(const T* s, Py_ssize_t lo, Py_ssize_t hi, const uint32_t* v, int width) { \
        return width == 1 ? NAME##_1(s, lo, hi, v) : width == 2 ? NAME##_2(s, lo, hi, v) :       \
               width == 4 ? NAME##_4(s, lo, hi, v) : NAME##_8(s, lo, hi, v);                     \
    }
    PW_FEW_IN(pw_few_in_u8, uint8_t, 16, _mm_set1_epi8, char, _mm_cmpeq_epi8)
    PW_FEW_IN(pw_few_in_u16, uint16_t, 8, _mm_set1_epi16, short, _mm_cmpeq_epi16)
    PW_FEW_IN(pw_few_in_u32, uint32_t, 4, _mm_set1_epi32, int, _mm_cmpeq_epi32)
    #else
    #define PW_FEW_IN(NAME, T)                                                                   \
    static inline int NAME(const T* s, Py_ssize_t lo, Py_ssize_t hi, const uint32_t* v, int width) { \
        (void)width;                                                                             \
        for (Py_ssize_t j = lo; j < hi; j++)                                                     \
            if (s[j] == (T)v[0] || s[j] == (T)v[1] || s[j] == (T)v[2] || s[j] == (T)v[3] ||      \
                s[j] == (T)v[4] || s[j] == (T)v[5] || s[j] == (T)v[6] || s[j] == (T)v[7]) return 1; \
        return 0;                                                                                \
    }
    PW_FEW_IN(pw_few_in_u8, uint8_t)
    PW_FEW_IN(pw_few_in_u16, uint16_t)
    PW_FEW_IN(pw_few_in_u32, uint32_t)
    #endif
    """
    bint pw_few_in_u8(const uint8_t* s, Py_ssize_t lo, Py_ssize_t hi, const uint32_t* v, int width) noexcept nogil
    bint pw_few_in_u16(const uint16_t* s, Py_ssize_t lo, Py_ssize_t hi, const uint32_t* v, int width) noexcept nogil
    bint pw_few_in_u32(const uint32_t* s, Py_ssize_t lo, Py_ssize_t hi, const uint32_t* v, int width) noexcept nogil


cdef inline bint _few_in(const char_t* s, Py_ssize_t lo, Py_ssize_t hi, const uint32_t* v, int fit) noexcept nogil:
    """Whether ``s[lo:hi]`` holds one of ``v[:fit]`` (each fits a ``char_t``; ``v[fit:8]`` repeat
    ``v[0]``), by vector code (see ``PW_FEW_IN``)."""
    cdef int width = 1 if fit == 1 else 2 if fit == 2 else 4 if fit <= 4 else 8
    if char_t is uint8_t:
        return pw_few_in_u8(s, lo, hi, v, width)
    if char_t is uint16_t:
        return pw_few_in_u16(s, lo, hi, v, width)
    return pw_few_in_u32(s, lo, hi, v, width)


cdef inline uint32_t widest(const char_t* s) noexcept nogil:
    """The greatest char a ``char_t`` holds (``s`` only names the type)."""
    if char_t is uint8_t:
        return 0xFF
    if char_t is uint16_t:
        return 0xFFFF
    return 0xFFFFFFFF


cdef bint holds_one_of(const char_t* s, Py_ssize_t n, const uint32_t* chars, Py_ssize_t count) noexcept nogil:
    """Whether ``s[:n]`` holds one of ``chars[:count]`` (at most 8), by blocks (see :func:`_few_in`).

    >>> TokenTrie(["<s>", "[x]"]).holds("\u0101 [ <")      # ('[' and '<' begin strings: the text is read)
    False
    """
    cdef uint32_t v[8]
    cdef int fit = fitting(chars, count, widest(s), v)
    cdef Py_ssize_t lo = 0
    if fit == 0:
        return False
    while lo < n:
        if _few_in(s, lo, lo + WHOLE_BLOCK if n - lo > WHOLE_BLOCK else n, v, fit):
            return True
        lo += WHOLE_BLOCK
    return False


cdef inline uint64_t mix_key(uint64_t x) noexcept nogil:
    x ^= x >> 31
    x *= 0x7fb5d329728ea185ULL
    x ^= x >> 27
    return x


cdef class TokenTrie:
    """Where ``strings`` (non-empty strs) occur in a text, and which texts hold one.

    ``spans``: leftmost-longest and without overlaps, from each place, left
    to right, the longest string that starts there, then on from its end
    (a regex alternation of the strings, longest first, finds the same;
    Hugging Face's added-token rule). ``holds``/``texts_holding``: as
    ``any(s in text for s in strings)``. All in time linear in the text,
    whatever the strings (see the module doc). Of two equal strings the
    later one's index is given.

    >>> t = TokenTrie(["<s>", "<s>x", "ab", "é😀"])
    >>> t.spans("x<s>x <s>abé😀a<s")
    [(1, 5, 1), (6, 9, 0), (9, 11, 2), (11, 13, 3)]
    >>> t.texts_holding(["a < b", "x <s> y", "<s", "é😀", "ba"]), t.holds("no tokens here"), len(t)
    ([1, 3], False, 4)
    """

    def __cinit__(self, strings):
        cdef list contents = list(strings)
        cdef Py_ssize_t total = 0, k
        cdef uint64_t size = 16
        cdef uint32_t codes[8]
        for item in contents:
            if type(item) is not str or not item:
                raise ValueError(f"TokenTrie: each string must be a non-empty str, got {item!r}")
            total += len(<str>item)
        if total >= NO_NODE or len(contents) > 0x7FFFFFFF:
            raise ValueError(f"TokenTrie: {len(contents)} strings of {total} chars in all are too many")
        while size < 2 * <uint64_t>total + 16:
            size *= 2
        self.count = len(contents)
        self.slots.resize(size, TrieSlot(0, 0))
        self.mask = size - 1
        self.only_last = SEVERAL
        self.shortest = min(len(s) for s in contents) if contents else 0
        lasts = {s[len(s) - 1] for s in contents}
        if len(lasts) == 1:
            self.only_last = ord(next(iter(lasts)))
        if len(lasts) <= FEW_LASTS:
            for k, c in enumerate(sorted(lasts)):
                codes[k] = ord(c)
            for k, top in enumerate((0xFF, 0xFFFF, 0xFFFFFFFF)):
                self.fit_lasts[k] = fitting(codes, len(lasts), top, self.few_lasts[k])
        for c in lasts:
            self.last_bits[(ord(c) & 0xFFFF) >> 3] |= 1 << (ord(c) & 7)
        firsts = {s[0] for s in contents}
        if len(firsts) <= FEW_FIRSTS:
            for c in sorted(firsts):
                self.firsts.push_back(ord(c))
        self._build(contents, total)

    cdef int _build(self, list contents, Py_ssize_t total) except -1:
        """The trie of the reversed strings, then each node's suffix link and longest string, breadth first."""
        cdef vector[uint32_t] parent, char_of, depth, order, start
        cdef vector[int32_t] terminal
        cdef uint32_t node, child, f, v, c, d
        cdef Py_ssize_t k, j, n
        cdef int kind
        cdef void* data
        parent.reserve(total + 1)
        parent.push_back(0)
        char_of.push_back(0)
        depth.push_back(0)
        terminal.push_back(-1)
        for k in range(len(contents)):
            s = contents[k]
            kind, data, n = PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s)
            node = 0
            for j in range(n - 1, -1, -1):
                c = <uint32_t>PyUnicode_READ(kind, data, j)
                child = self._child(node, c)
                if child == NO_NODE:
                    child = <uint32_t>parent.size()
                    parent.push_back(node)
                    char_of.push_back(c)
                    depth.push_back(depth[node] + 1)
                    terminal.push_back(-1)
                    self._put(node, c, child)
                node = child
            terminal[node] = <int32_t>k
        # Breadth first: a node's suffix link is shallower, so it is done before the node.
        n = <Py_ssize_t>parent.size()
        start.resize(n + 2, 0)
        for v in range(<uint32_t>n):
            start[depth[v] + 1] += 1
        for j in range(1, n + 2):
            start[j] += start[j - 1]
        order.resize(n)
        for v in range(<uint32_t>n):
            d = depth[v]
            order[start[d]] = v
            start[d] += 1
        self.fail.resize(n, 0)
        self.best_length.resize(n, 0)
        self.best_index.resize(n, -1)
        for j in range(1, n):
            v = order[j]
            f = 0
            if parent[v] != 0:
                # The longest proper suffix of v's string that is in the trie: extend the parent's.
                f = self.fail[parent[v]]
                while True:
                    child = self._child(f, char_of[v])
                    if child != NO_NODE:
                        f = child
                        break
                    if f == 0:
                        break
                    f = self.fail[f]
            self.fail[v] = f
            if terminal[v] >= 0:
                self.best_length[v], self.best_index[v] = <int32_t>depth[v], terminal[v]
            else:
                self.best_length[v], self.best_index[v] = self.best_length[f], self.best_index[f]
        return 0

    cdef uint32_t _child(self, uint32_t node, uint32_t c) noexcept nogil:
        cdef uint64_t key = ((<uint64_t>node << 21) | c) + 1
        cdef uint64_t at = mix_key(key) & self.mask
        while self.slots[at].key:
            if self.slots[at].key == key:
                return self.slots[at].child
            at = (at + 1) & self.mask
        return NO_NODE

    cdef void _put(self, uint32_t node, uint32_t c, uint32_t child) noexcept:
        cdef uint64_t key = ((<uint64_t>node << 21) | c) + 1
        cdef uint64_t at = mix_key(key) & self.mask
        while self.slots[at].key:
            at = (at + 1) & self.mask
        self.slots[at] = TrieSlot(key, child)

    # -- reading a text backwards -----------------------------------------------------

    def spans(self, str text not None) -> list:
        """``(start, end, index)`` of each match in ``text``, in order (``index``: into the strings)."""
        cdef vector[Found] found
        cdef list out = []
        cdef Py_ssize_t k, at = 0
        self._read(text, &found)
        for k in range(<Py_ssize_t>found.size() - 1, -1, -1):     # (found from the right)
            if found[k].start >= at:
                at = found[k].start + found[k].length
                out.append((found[k].start, at, found[k].index))
        return out

    def spans_of(self, list texts, list ids) -> list:
        """:meth:`spans` of each text (a str), each index given as ``ids[index]``; None for a text
        where a match's id is None (its caller works that text out its own way).

        >>> TokenTrie(["<s>", "ab"]).spans_of(["x<s>y", "", "ab<s>"], [7, None])
        [[(1, 4, 7)], [], None]
        """
        cdef vector[Found] found
        cdef list out = [], spans
        cdef Py_ssize_t k, at
        cdef object token_id
        cdef tuple span
        for text in texts:
            if type(text) is not str:
                raise TypeError(f"expected str, got {type(text).__name__}")
            found.clear()
            self._read(<str>text, &found)
            spans = []
            at = 0
            for k in range(<Py_ssize_t>found.size() - 1, -1, -1):     # (found from the right)
                if found[k].start >= at:
                    at = found[k].start + found[k].length
                    if found[k].index >= len(ids):
                        raise ValueError(f"TokenTrie.spans_of: {len(ids)} ids for string {found[k].index}")
                    token_id = ids[found[k].index]
                    if token_id is None:
                        spans = None
                        break
                    span = (found[k].start, at, token_id)
                    PyObject_GC_UnTrack(<void*>span)     # (ints only: the batches that ask make thousands)
                    spans.append(span)
            if spans is not None:
                PyObject_GC_UnTrack(<void*>spans)   # (untracked tuples only: it can join no cycle)
            out.append(spans)
        return out

    def __len__(self):
        """How many strings it finds (equal ones counted each)."""
        return self.count

    def holds(self, str text not None) -> bool:
        """Whether ``text`` holds one of the strings."""
        return self._read(text, NULL)

    cdef bint holds_chars(self, int kind, const void* data, Py_ssize_t n) noexcept nogil:
        """:meth:`holds` of a str's ``n`` chars of ``kind`` at ``data`` (as PyUnicode_KIND and
        PyUnicode_DATA give them), without the GIL: for a batch's threads."""
        if n < self.shortest or self.shortest == 0 or not self._may_hold(kind, data, n):
            return False
        return self.read_kind(kind, data, n, NULL) == 1     # (nothing is found into, so nothing can fail)

    cdef int read_kind(self, int kind, const void* data, Py_ssize_t n, vector[Found]* found) except -1 nogil:
        """:meth:`_read_chars` of a str's ``n`` chars of ``kind`` at ``data`` (its PEP 393 form)."""
        if kind == 1:
            return self._read_chars(<const uint8_t*>data, n, found)
        if kind == 2:
            return self._read_chars(<const uint16_t*>data, n, found)
        return self._read_chars(<const uint32_t*>data, n, found)

    def texts_holding(self, texts) -> list:
        """Indices, in order, of the texts (an iterable of strs) holding one of the strings.

        TypeError if an item is not a str.
        """
        cdef Py_ssize_t k = 0
        cdef list out = []
        for text in (texts if type(texts) is list else list(texts)):
            if type(text) is not str:
                raise TypeError(f"expected str, got {type(text).__name__}")
            if self._read(<str>text, NULL):
                out.append(k)
            k += 1
        return out

    cdef bint _read(self, str text, vector[Found]* found) except -1:
        """Read ``text`` backwards; into ``found`` each place a string starts, with the longest
        that does, from the right (NULL: stop at the first and answer True)."""
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        if found == NULL:
            return self.holds_chars(kind, data, n)
        if n < self.shortest or self.shortest == 0 or not self._may_hold(kind, data, n):
            return False
        if n > 0x7FFFFFFF:
            raise ValueError(f"TokenTrie: a text of {n} chars is too long (at most 2**31 - 1)")
        return self.read_kind(kind, data, n, found)

    cdef bint _may_hold(self, int kind, const void* data, Py_ssize_t n) noexcept nogil:
        """False if the text holds none of the chars the strings start with (when they are few).

        Tokens that end with chars the text is full of (``aaaaaaaa7`` in a
        megabyte of digits) keep the automaton off its root, a probe a
        char; a find per first char (memchr for Latin-1 text) rules such a
        text out at once.
        """
        if self.firsts.empty():
            return True
        cdef size_t k
        if kind == 1:       # (memchr's vector code is wider than ours: a pass per char is faster)
            for k in range(self.firsts.size()):
                if self.firsts[k] < 256 and memchr(data, <int>self.firsts[k], <size_t>n) != NULL:
                    return True
            return False
        if kind == 2:
            return holds_one_of(<const uint16_t*>data, n, self.firsts.data(), self.firsts.size())
        return holds_one_of(<const uint32_t*>data, n, self.firsts.data(), self.firsts.size())

    cdef Py_ssize_t _skip_at_root(self, const char_t* s, Py_ssize_t i) noexcept nogil:
        """How much of ``s[:i]`` is left once the chars no string ends with are dropped from its
        end (0: none is left): at the root only such a char leads anywhere.

        A bit test a char; past the nearest few chars, when the strings end
        with at most 8 chars, blocks of chars each compared with them all at
        once (:meth:`_after_last_of_few`): where such chars are dense (spaces,
        newlines) the first few chars hold one, and a block would cost more.
        """
        cdef const uint8_t* hit
        cdef Py_ssize_t lo
        if char_t is uint8_t and self.only_last < 256:
            hit = <const uint8_t*>memrchr(s, <int>self.only_last, <size_t>i)
            return 0 if hit == NULL else hit - s + 1
        lo = i - NEAR if i > NEAR and self.fit_lasts[2] else 0
        while i > lo and not (self.last_bits[(s[i - 1] & 0xFFFF) >> 3] >> (s[i - 1] & 7)) & 1:
            i -= 1
        return i if i > lo or i == 0 else self._after_last_of_few(s, i)

    cdef Py_ssize_t _after_last_of_few(self, const char_t* s, Py_ssize_t i) noexcept nogil:
        """:meth:`_skip_at_root` by blocks of chars, each compared with the few chars strings end
        with at once (see :func:`_few_in`), the blocks growing as none holds one; the block that
        holds one is then read char by char."""
        cdef int width = 0 if char_t is uint8_t else 1 if char_t is uint16_t else 2
        cdef const uint32_t* v = self.few_lasts[width]
        cdef int fit = self.fit_lasts[width]
        cdef Py_ssize_t lo, block = FIRST_BLOCK
        if fit == 0:
            return 0
        while True:
            lo = i - block if i > block else 0
            if _few_in(s, lo, i, v, fit):
                while not (self.last_bits[(s[i - 1] & 0xFFFF) >> 3] >> (s[i - 1] & 7)) & 1:
                    i -= 1          # (the block holds one: it stops there, or sooner)
                return i
            if lo == 0:
                return 0
            i = lo
            if block < LAST_BLOCK:
                block *= 2

    cdef uint32_t _step(self, uint32_t state, uint32_t c) noexcept nogil:
        """The state after reading ``c`` (the text is read backwards)."""
        cdef uint32_t child
        while True:
            child = self._child(state, c)
            if child != NO_NODE:
                return child
            if state == 0:
                return 0
            state = self.fail[state]

    cdef int _read_chars(self, const char_t* s, Py_ssize_t n, vector[Found]* found) except -1 nogil:
        """Into ``found``, from the right, each place in ``s[:n]`` a string starts, with the longest
        that does; whether there was one (``found`` NULL: stop at the first)."""
        cdef Py_ssize_t i = n
        cdef uint32_t state = 0
        while i > 0:
            if state == 0:
                i = self._skip_at_root(s, i)
                if i == 0:
                    break
            i -= 1
            state = self._step(state, s[i])
            if self.best_length[state]:
                if found == NULL:
                    return 1
                found.push_back(Found(<int32_t>i, self.best_length[state], self.best_index[state]))
        return found != NULL and found.size() > 0


cdef class AroundTokens:
    """Added (or allowed special) tokens a text is encoded around: the leftmost-longest matches of
    ``trie``'s strings, string ``k`` the token ``token_ids[k]`` (None: a token whose text is not its
    match, one that strips spaces: a text holding it is not encoded around it), each stretch
    between them encoded on its own, as Hugging Face splits added tokens out before pre-tokenizing
    (``bytebpe.ByteBPE.encode_around``, ``bpe_encode.BpeEncoder.encode_around_batch``).

    ``inner``: tokens looked for only in those stretches, each of those encoded around them in
    turn: Hugging Face's second pass, for the tokens it matches in the normalized text (with no
    normalizer, the text as it is).

    >>> around = AroundTokens(TokenTrie(["<s>", "<s>x", "ab"]), [300, 301, None])
    >>> around.spans("a<s>b<s>x"), around.spans("ab"), around.every_token_has_an_id
    ([(1, 4, 300), (5, 9, 301)], None, False)
    >>> two = AroundTokens(TokenTrie(["<s>"]), [300], AroundTokens(TokenTrie(["a<", "b"]), [400, 401]))
    >>> two.spans("a<s>b")      # ("a<" starts first, but "<s>" is split out first)
    [(1, 4, 300), (4, 5, 401)]
    """

    def __init__(self, TokenTrie trie not None, token_ids, AroundTokens inner=None):
        if len(token_ids) != len(trie):
            raise ValueError(f"AroundTokens: {len(token_ids)} ids for {len(trie)} strings")
        if inner is not None and inner.inner is not None:
            raise ValueError("AroundTokens: an inner pass has no inner pass of its own (two passes at most)")
        self.trie = trie
        self.inner = inner
        for token_id in token_ids:
            if token_id is not None and not 0 <= token_id <= INT32_MAX:
                raise ValueError(f"AroundTokens: token id {token_id} is out of range")
            self.ids.push_back(-1 if token_id is None else <int32_t>token_id)

    @property
    def every_token_has_an_id(self):
        """Whether every string's id is given, the inner pass's too (no text is refused)."""
        cdef size_t k
        for k in range(self.ids.size()):
            if self.ids[k] < 0:
                return False
        return self.inner is None or self.inner.every_token_has_an_id

    def spans(self, str text not None):
        """``(start, stop, id)`` of each token in ``text``, both passes, in order; None if one has no id."""
        cdef AroundScratch scratch
        if tokens_around(self, PyUnicode_KIND(text), <const char*>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
                         &scratch) < 0:
            return None
        return [(t.start, t.start + t.length, t.index) for t in scratch.tokens]


cdef Py_ssize_t tokens_around(AroundTokens around, int kind, const char* data, Py_ssize_t n,
                              AroundScratch* scratch) noexcept nogil:
    """Into ``scratch.tokens``, the tokens of the text (``kind``, ``data``, ``n``) that ``around``
    splits out, both passes, in order, each as ``Found(start, length, id)``: how many, or -1 if
    one has no id (see :class:`AroundTokens`)."""
    scratch.tokens.clear()
    return _tokens_in(around, kind, data, n, 0, scratch.tokens, scratch.found, scratch.inner)


cdef Py_ssize_t _tokens_in(AroundTokens around, int kind, const char* data, Py_ssize_t n, Py_ssize_t offset,
                           vector[Found]& out, vector[Found]& found, vector[Found]& inner_found) noexcept nogil:
    """:func:`tokens_around` of a stretch that starts at ``offset``, appended to ``out`` (nothing
    appended if one has no id). ``found`` and ``inner_found``: room for the matches of each pass."""
    cdef Py_ssize_t at = 0, k, start, before = out.size()
    cdef int32_t token_id = 0
    cdef vector[Found] unused
    found.clear()
    if around.trie.read_kind(kind, data, n, &found) < 0:
        return -1
    # Found from the right, so read from the end; k = -1 stands for the text's end (no token there).
    for k in range(<Py_ssize_t>found.size() - 1, -2, -1):
        start = found[k].start if k >= 0 else n
        if start < at:
            continue        # (inside the longer match taken before it)
        if k >= 0:
            token_id = around.ids[found[k].index]
            if token_id < 0:
                break
        if at < start and around.inner is not None and _tokens_in(
                around.inner, kind, data + kind * at, start - at, offset + at, out, inner_found, unused) < 0:
            break
        if k < 0:
            return <Py_ssize_t>(out.size() - before)
        out.push_back(Found(<int32_t>(start + offset), found[k].length, token_id))
        at = start + found[k].length
    out.resize(before)      # (a token with no id, in this pass or the inner one)
    return -1

