# cython: language_level=3
# The C-level layout of the WordPiece matcher (see wordpiece_encode.pyx for the algorithm).

from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.vector cimport vector


ctypedef struct EdgeSlot:
    uint64_t key                                  # (node << 21) | code point, or EMPTY_EDGE
    int32_t child


cdef class WordPieceMatcher:
    # Trie over the vocabulary: node 0 is the root of word-initial tokens, node
    # ``croot`` the root of continuing tokens (prefix removed); they are the
    # same node when the prefix is empty.
    cdef int32_t croot
    # The edges, (node << 21 | code point) -> child, in an open-addressing table:
    # linear probing, a power-of-two size at load <= 1/2, EMPTY_EDGE in unused
    # slots (a std::unordered_map took a 30k vocabulary 60 ms to build, a cache
    # miss a look-up). Complete after __init__: the nogil API below reads it,
    # and never writes the matcher.
    cdef vector[EdgeSlot] slots
    cdef uint64_t slot_mask, n_edges
    cdef vector[int32_t] parent, depth, token     # token: vocabulary id, or -1
    cdef vector[Py_UCS4] label                    # the char on the edge into the node
    # Failure links and failure pops (Song et al. 2021): fail[v] is where
    # matching resumes after popping the tokens of fpop[v]; -1 = no way on.
    cdef vector[int32_t] fail, fpop
    # A failure pop is a handle: -1 empty; >= 0 the one token of that trie
    # node; <= -2 the list -2 - h, whose items (handles again) are
    # items[starts[k]:starts[k + 1]].
    cdef vector[int32_t] items, starts
    cdef vector[int32_t] stack                    # scratch for expanding handles
    cdef dict values                              # id -> token text
    cdef object token_cls                         # what tokens() builds
    cdef int64_t steps                            # trie moves of the last match

    cdef int32_t new_node(self, int32_t parent, Py_UCS4 c, int32_t depth)
    cdef int32_t child(self, int32_t v, Py_UCS4 c) noexcept
    cdef int32_t insert(self, int32_t root, str text, Py_ssize_t skip) except -1
    cdef void size_slots(self, uint64_t edges)
    cdef void add_edge(self, uint64_t key, int32_t child)
    cdef void put_edge(self, uint64_t key, int32_t child) noexcept
    cdef void link(self)
    cdef vector[int32_t] by_depth(self)
    cdef void expand(self, int32_t handle, vector[int32_t]& out)
    cdef bint match(self, str word, vector[int32_t]& out)

    # -- the nogil API (for fused kernels such as bert_fast) -------------------
    # Read-only after construction, so any number of threads may call these at
    # once, each with its own ``out`` and ``stack`` vectors.
    cdef int32_t child_nogil(self, int32_t v, Py_UCS4 c) noexcept nogil
    cdef void expand_into(self, int32_t handle, vector[int32_t]& out, vector[int32_t]& stack) noexcept nogil
    # Match ``word[0:n]``; ``out`` receives the trie nodes of the tokens
    # (token id: token[node], length in chars: depth[node]); False: unknown word.
    cdef bint match_array(self, const Py_UCS4* word, Py_ssize_t n, vector[int32_t]& out,
                          vector[int32_t]& stack) noexcept nogil
