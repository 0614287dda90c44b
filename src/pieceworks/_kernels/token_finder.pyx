# cython: language_level=3
# distutils: language = c++
"""Which texts of a batch hold one of a few strings (added or special tokens), found text by text.

A batch asks this of every text before it encodes them (Tokenizer's added
tokens, the tiktoken face's special tokens), so it must cost next to
nothing for texts that hold none. Each text is scanned for the chars the
strings start with (memchr, when they all start with one char and the text
is 1 byte a char, as ``<|`` tokens and ASCII text are); where one is, the
next few chars are looked up by hash among the strings' beginnings, and only
a hit is compared with the strings themselves. No joined copy of the texts
is made: joining lines of which a few are not Latin-1 widened all of them
(2 MB of code, 34 such lines: 1.4 ms of copying before any search).
"""

from cpython.mem cimport PyMem_Calloc, PyMem_Free
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.vector cimport vector
from libc.string cimport memchr

cdef extern from "Python.h":
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    Py_ssize_t PyUnicode_Tailmatch(object text, object part, Py_ssize_t start, Py_ssize_t end,
                                   int direction) except -1

ctypedef fused char_t:
    uint8_t
    uint16_t
    uint32_t

# At most this many chars of each string are hashed: enough to tell tokens apart,
# few enough that the hash costs less than the compare it saves.
cdef Py_ssize_t MAX_WIDTH = 8
cdef Py_UCS4 SEVERAL = 0xFFFFFFFF


cdef inline uint64_t hash_chars(const char_t* s, Py_ssize_t width) noexcept nogil:
    """FNV-1a over ``width`` code points, never 0 (0 marks an empty slot)."""
    cdef uint64_t h = 0xcbf29ce484222325ULL
    cdef Py_ssize_t j
    for j in range(width):
        h = (h ^ <uint64_t>s[j]) * 0x100000001b3ULL
    h ^= h >> 29
    return h | 1


cdef class TokenFinder:
    """Finds the texts holding one of ``strings`` (non-empty strs), as ``any(s in text for s in strings)``.

    >>> f = TokenFinder(["<|endoftext|>", "<think>", "</think>"])
    >>> f.texts_holding(["a < b", "x <think> y", "<thin", "k>", "<|endoftext|>", "a </think"])
    [1, 4]
    >>> f.holds("no tokens here"), f.holds("é</think>")
    (False, True)
    """

    cdef Py_ssize_t width                # chars hashed: the shortest string's length, at most MAX_WIDTH
    cdef uint64_t* slots                 # the hash of each string's first ``width`` chars; 0: empty
    cdef Py_ssize_t* group_of_slot       # which tuple of ``groups`` has that beginning
    cdef uint64_t mask
    cdef uint8_t first_bits[8192]        # bit c & 0xFFFF: some string starts with char c (or one alike)
    cdef Py_UCS4 only_first              # the one char all strings start with, or SEVERAL
    cdef list groups                     # tuples of the strings that begin alike

    def __cinit__(self, strings):
        cdef list contents = list(strings)
        cdef str s
        cdef dict by_beginning = {}
        cdef Py_ssize_t size = 16, i
        cdef uint64_t h
        if not contents:
            raise ValueError("TokenFinder needs at least one string")
        for s in contents:
            if type(s) is not str or not s:
                raise ValueError(f"TokenFinder: each string must be a non-empty str, got {s!r}")
        self.width = min(MAX_WIDTH, min(len(s) for s in contents))
        firsts = {s[0] for s in contents}
        self.only_first = ord(next(iter(firsts))) if len(firsts) == 1 else SEVERAL
        for c in firsts:
            self.first_bits[(ord(c) & 0xFFFF) >> 3] |= 1 << (ord(c) & 7)
        for s in contents:
            by_beginning.setdefault(s[:self.width], []).append(s)
        while size < 2 * len(by_beginning):
            size *= 2
        self.mask = size - 1
        self.slots = <uint64_t*>PyMem_Calloc(size, sizeof(uint64_t))
        self.group_of_slot = <Py_ssize_t*>PyMem_Calloc(size, sizeof(Py_ssize_t))
        if self.slots == NULL or self.group_of_slot == NULL:
            raise MemoryError("TokenFinder: no memory for its table")
        self.groups = []
        for beginning, group in by_beginning.items():
            h = _hash_str(beginning, self.width)
            i = h & self.mask
            while self.slots[i] != 0:
                i = (i + 1) & self.mask
            self.slots[i] = h
            self.group_of_slot[i] = len(self.groups)
            self.groups.append(tuple(group))

    def __dealloc__(self):
        PyMem_Free(self.slots)
        PyMem_Free(self.group_of_slot)

    def texts_holding(self, texts) -> list:
        """Indices, in order, of the texts (an iterable of strs) holding one of the strings.

        TypeError if an item is not a str.
        """
        cdef Py_ssize_t k = 0
        cdef list out = []
        for text in (texts if type(texts) is list else list(texts)):
            if type(text) is not str:
                raise TypeError(f"expected str, got {type(text).__name__}")
            if self._holds(<str>text):
                out.append(k)
            k += 1
        return out

    def holds(self, str text not None) -> bool:
        """Whether ``text`` holds one of the strings."""
        return self._holds(text)

    cdef bint _holds(self, str text) except -1:
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        if n < self.width:
            return False
        if kind == 1:
            return self._scan(text, <const uint8_t*>data, n)
        if kind == 2:
            return self._scan(text, <const uint16_t*>data, n)
        return self._scan(text, <const uint32_t*>data, n)

    cdef bint _scan(self, str text, const char_t* s, Py_ssize_t n) except -1:
        cdef Py_ssize_t i = 0, last = n - self.width
        cdef const uint8_t* hit
        cdef uint32_t c
        if char_t is uint8_t:
            if self.only_first < 256:
                while i <= last:
                    hit = <const uint8_t*>memchr(s + i, <int>self.only_first, last + 1 - i)
                    if hit == NULL:
                        return False
                    i = hit - s
                    if self._holds_at(text, s, i, n):
                        return True
                    i += 1
                return False
        while i <= last:
            c = s[i]
            if (self.first_bits[(c & 0xFFFF) >> 3] >> (c & 7)) & 1 and self._holds_at(text, s, i, n):
                return True
            i += 1
        return False

    cdef bint _holds_at(self, str text, const char_t* s, Py_ssize_t i, Py_ssize_t n) except -1:
        """Whether one of the strings starts at char ``i`` of ``text`` (``s``: its chars)."""
        cdef uint64_t h = hash_chars(s + i, self.width)
        cdef uint64_t k = h & self.mask
        while self.slots[k] != 0:
            if self.slots[k] == h:
                for string in <tuple>self.groups[self.group_of_slot[k]]:
                    if PyUnicode_Tailmatch(text, string, i, n, -1):
                        return True
            k = (k + 1) & self.mask
        return False


cdef uint64_t _hash_str(str s, Py_ssize_t width):
    cdef int kind = PyUnicode_KIND(s)
    cdef void* data = PyUnicode_DATA(s)
    cdef uint32_t wide[8]
    cdef Py_ssize_t j
    # The same code points hash alike whatever the width a str stores them in.
    for j in range(width):
        wide[j] = (<const uint8_t*>data)[j] if kind == 1 else (<const uint16_t*>data)[j] if kind == 2 \
            else (<const uint32_t*>data)[j]
    return hash_chars(<const uint32_t*>wide, width)


# -- where the tokens are: leftmost-longest, without overlaps ------------------------------


cdef struct TrieSlot:
    uint64_t key        # (node << 21 | code point) + 1; 0: an empty slot
    uint32_t child


cdef inline uint64_t mix_key(uint64_t x) noexcept nogil:
    x ^= x >> 31
    x *= 0x7fb5d329728ea185ULL
    x ^= x >> 27
    return x


cdef class TokenTrie:
    """Where ``strings`` (non-empty strs) occur in a text, leftmost-longest and without overlaps:
    from each place, left to right, the longest string that starts there, then on from its end.
    That is what a regex alternation of the strings, longest first, finds (and Aho-Corasick's
    leftmost-longest, Hugging Face's added-token rule); a regex of thousands of tokens, though,
    tries each at every char (3000 added tokens: 3 s for 200 KB of text). Here each place walks a
    trie only as far as some string goes, after a one-bit test of its first char.

    >>> t = TokenTrie(["<s>", "<s>x", "ab", "é😀"])
    >>> t.spans("x<s>x <s>abé😀a<s")
    [(1, 5, 1), (6, 9, 0), (9, 11, 2), (11, 13, 3)]
    """

    cdef vector[TrieSlot] slots
    cdef uint64_t mask
    cdef vector[int64_t] terminal        # per node: the index of the string ending there, or -1
    cdef uint8_t first_bits[8192]        # bit c & 0xFFFF: some string starts with char c (or one alike)

    def __cinit__(self, strings):
        cdef list contents = list(strings)
        cdef Py_ssize_t total = 0, k, j, size = 16
        cdef uint64_t node, key, at
        cdef int64_t child
        cdef str s
        for item in contents:
            if type(item) is not str or not item:
                raise ValueError(f"TokenTrie: each string must be a non-empty str, got {item!r}")
            total += len(<str>item)
        while size < 2 * total + 16:
            size *= 2
        self.slots.resize(size, TrieSlot(0, 0))
        self.mask = size - 1
        self.terminal.push_back(-1)          # the root
        for k in range(len(contents)):
            s = contents[k]
            self.first_bits[(ord(s[0]) & 0xFFFF) >> 3] |= 1 << (ord(s[0]) & 7)
            node = 0
            for j in range(len(s)):
                child = self._child(node, ord(s[j]))
                if child < 0:
                    child = <int64_t>self.terminal.size()
                    self.terminal.push_back(-1)
                    key = ((node << 21) | <uint64_t>ord(s[j])) + 1
                    at = mix_key(key) & self.mask
                    while self.slots[at].key:
                        at = (at + 1) & self.mask
                    self.slots[at] = TrieSlot(key, <uint32_t>child)
                node = <uint64_t>child
            self.terminal[node] = k

    cdef inline int64_t _child(self, uint64_t node, uint32_t c) noexcept nogil:
        cdef uint64_t key = ((node << 21) | c) + 1
        cdef uint64_t at = mix_key(key) & self.mask
        while self.slots[at].key:
            if self.slots[at].key == key:
                return self.slots[at].child
            at = (at + 1) & self.mask
        return -1

    def spans(self, str text not None) -> list:
        """``(start, end, index)`` of each match in ``text``, in order (``index``: into the strings)."""
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        if kind == 1:
            return self._spans(<const uint8_t*>data, n)
        if kind == 2:
            return self._spans(<const uint16_t*>data, n)
        return self._spans(<const uint32_t*>data, n)

    cdef list _spans(self, const char_t* s, Py_ssize_t n):
        cdef list out = []
        cdef Py_ssize_t i = 0, j, end
        cdef int64_t node, found
        cdef uint32_t c
        while i < n:
            c = s[i]
            if not (self.first_bits[(c & 0xFFFF) >> 3] >> (c & 7)) & 1:
                i += 1
                continue
            node, j, end, found = 0, i, -1, -1
            while j < n:
                node = self._child(<uint64_t>node, s[j])
                if node < 0:
                    break
                j += 1
                if self.terminal[node] >= 0:
                    end, found = j, self.terminal[node]
            if end < 0:
                i += 1
            else:
                out.append((i, end, found))
                i = end
        return out
