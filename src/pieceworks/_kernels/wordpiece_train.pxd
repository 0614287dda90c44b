# cython: language_level=3
# The C-level layout of the WordPiece trainer (see wordpiece_train.pyx for the invariants).

from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector


cdef class InitialSplit:
    # Every word's symbols, concatenated in word order: local ids into ``seen``.
    cdef vector[int32_t] symbols
    # Word w is symbols[starts[w]:starts[w + 1]].
    cdef vector[int64_t] starts
    # The distinct symbol strings, in the order first met.
    cdef readonly list seen


cdef class WordPieceLearner:
    # -- positions: one slot per initial symbol of every word ----------------
    cdef vector[int32_t] tok        # token id of the symbol starting here; -1 once merged into its left
    cdef vector[int32_t] nxt        # next live symbol of the same word, or -1
    cdef vector[int32_t] prv        # previous live symbol of the same word, or -1
    cdef vector[int32_t] wid        # the word this slot belongs to
    cdef vector[uint64_t] freq      # per word: its count

    # -- tokens --------------------------------------------------------------
    cdef list tokens                # id -> string
    cdef dict token_ids             # string -> id
    cdef str prefix
    cdef vector[uint64_t] tokcount  # weighted occurrences of each token in the current split
    cdef vector[vector[int32_t]] adj  # per token: live pairs it is part of (likelihood scoring only)

    # -- pairs -----------------------------------------------------------------
    cdef unordered_map[uint64_t, int32_t] pair_ids
    cdef vector[int32_t] left, right
    cdef vector[int64_t] count      # weighted occurrences of the pair
    cdef vector[vector[int32_t]] pos  # min-heap of slots where the pair was made (some no longer hold it)
    cdef vector[char] in_left, in_right  # listed in adj[left] / adj[right]
    cdef vector[int32_t] touched_at, rescored_at
    cdef vector[int32_t] touched

    # -- the heap of candidate pairs, with each pair's score as last computed ---
    cdef vector[int32_t] heap
    cdef vector[int32_t] hpos       # index in heap, or -1
    cdef vector[uint64_t] hn, ha, hb  # count(ab), count(a), count(b) when last scored
    cdef vector[uint64_t] hkey      # tie key: first slot, or (id_a << 32 | id_b)

    # -- options and trace -------------------------------------------------------
    cdef bint likelihood, first_seen
    cdef int64_t threshold
    cdef int32_t step_no
    cdef vector[int32_t] m_left, m_right, m_token
    cdef vector[uint64_t] m_count, m_lcount, m_rcount

    cdef int32_t pair_id(self, int32_t a, int32_t b)
    cdef int32_t find_pair(self, int32_t a, int32_t b) noexcept
    cdef void add_occurrence(self, int32_t a, int32_t b, int32_t slot, uint64_t f)
    cdef void remove_occurrence(self, int32_t a, int32_t b, uint64_t f) noexcept
    cdef void touch(self, int32_t p) noexcept
    cdef void list_in_adjacency(self, int32_t p)
    cdef int32_t first_slot(self, int32_t p) noexcept
    cdef void pos_push(self, int32_t p, int32_t slot)
    cdef void pos_pop(self, int32_t p) noexcept
    cdef void rescore(self, int32_t p)
    cdef void rescore_adjacent(self, int32_t t)
    cdef bint better(self, int32_t p, int32_t q) noexcept
    cdef void sift_up(self, Py_ssize_t i) noexcept
    cdef void sift_down(self, Py_ssize_t i) noexcept
    cdef void heap_update(self, int32_t p)
    cdef void heap_remove(self, int32_t p) noexcept
    cdef int32_t token_for(self, int32_t a, int32_t b) except -1
    cdef int merge_best(self) except -1
