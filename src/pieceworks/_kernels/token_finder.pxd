# distutils: language = c++
"""TokenTrie's C side: which texts hold an added or special token (see token_finder.pyx).

A batch job's threads ask :meth:`TokenTrie.holds_chars` of each text
without the GIL (bytebpe.pyx), rather than the caller asking every text
before the threads start.
"""

cimport cython
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.vector cimport vector

ctypedef fused char_t:
    uint8_t
    uint16_t
    uint32_t


cdef struct TrieSlot:
    uint64_t key        # (node << 21 | code point) + 1; 0: an empty slot
    uint32_t child


cdef struct Found:
    int32_t start       # a place some token starts at,
    int32_t length      # the longest token that starts there,
    int32_t index       # and its index in the strings


@cython.final      # (its methods are called directly: the automaton's steps inline)
cdef class TokenTrie:
    cdef vector[TrieSlot] slots          # (node, char) -> child, open addressing
    cdef uint64_t mask
    cdef vector[uint32_t] fail           # per node: its suffix link
    cdef vector[int32_t] best_length     # per node: the longest string among its suffix links' (0: none)
    cdef vector[int32_t] best_index      # and that string's index
    cdef uint8_t last_bits[8192]         # bit c & 0xFFFF: some string ends with char c (or one alike)
    cdef Py_UCS4 only_last               # the one char all strings end with, or SEVERAL
    cdef uint32_t few_lasts[3][8]        # per char width (1, 2, 4 bytes), the chars the strings end with
    cdef int fit_lasts[3]                # that fit it (as fitting() gives them), if at most 8 in all (else 0s)
    cdef Py_ssize_t shortest             # no text shorter holds a string (0: there are no strings)
    cdef vector[uint32_t] firsts         # the chars the strings start with, if at most FEW_FIRSTS
    cdef Py_ssize_t count                # how many strings

    cdef int _build(self, list contents, Py_ssize_t total) except -1
    cdef uint32_t _child(self, uint32_t node, uint32_t c) noexcept nogil
    cdef void _put(self, uint32_t node, uint32_t c, uint32_t child) noexcept
    cdef bint holds_chars(self, int kind, const void* data, Py_ssize_t n) noexcept nogil
    cdef int read_kind(self, int kind, const void* data, Py_ssize_t n, vector[Found]* found) except -1 nogil
    cdef bint _read(self, str text, vector[Found]* found) except -1
    cdef bint _may_hold(self, int kind, const void* data, Py_ssize_t n) noexcept nogil
    cdef Py_ssize_t _skip_at_root(self, const char_t* s, Py_ssize_t i) noexcept nogil
    cdef Py_ssize_t _after_last_of_few(self, const char_t* s, Py_ssize_t i) noexcept nogil
    cdef uint32_t _step(self, uint32_t state, uint32_t c) noexcept nogil
    cdef int _read_chars(self, const char_t* s, Py_ssize_t n, vector[Found]* found) except -1 nogil


cdef class AroundTokens:
    cdef readonly TokenTrie trie
    cdef readonly AroundTokens inner
    cdef vector[int32_t] ids        # per string (-1: None)


cdef cppclass AroundScratch:
    vector[Found] tokens        # tokens_around's: the tokens found, in order, each (start, length, id)
    vector[Found] found         # the matches of the outer pass
    vector[Found] inner         # and of the inner one


cdef Py_ssize_t tokens_around(AroundTokens around, int kind, const char* data, Py_ssize_t n,
                              AroundScratch* scratch) noexcept nogil
