# cython: language_level=3
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
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
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
