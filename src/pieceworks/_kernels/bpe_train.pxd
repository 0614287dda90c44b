# cython: language_level=3
# distutils: language = c++
"""C-level API of the BPE training kernel (see bpe_train.pyx)."""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector


cdef struct Sym:
    uint32_t id      # token id
    int32_t width    # chars of the word it covers (markers excluded)


cdef struct Entry:
    # Heap order: count descending, then key2 ascending, then key3 ascending.
    # huggingface mode: key2 = pair, key3 = push sequence, slot = its word list.
    # first_seen mode:  key2 = first occurrence (word << 32 | char), key3 = pair.
    uint64_t count
    uint64_t key2
    uint64_t key3
    int32_t slot


cdef class MergeLearner:
    cdef vector[vector[Sym]] words
    cdef vector[int64_t] counts
    cdef unordered_map[uint64_t, int64_t] pair_counts
    cdef vector[Entry] heap
    cdef uint64_t seq
    cdef int64_t max_width
    cdef bint first_seen

    # Words touched by the current merge, per pair that gained occurrences.
    cdef unordered_map[uint64_t, int32_t] step_slots
    cdef vector[uint64_t] step_pairs

    # huggingface mode: each heap entry owns a word list in this pool.
    cdef vector[vector[int32_t]] pool
    cdef vector[int32_t] free_slots

    # first_seen mode: every word a pair may occur in, and a lower bound of
    # its first occurrence.
    cdef unordered_map[uint64_t, vector[int32_t]] pair_words
    cdef unordered_map[uint64_t, uint64_t] first_bound

    cdef int _add_words(self, counts, list id_to_token, dict token_to_id, prefix, suffix) except -1
    cdef int32_t _new_slot(self) noexcept
    cdef void _free_slot(self, int32_t slot) noexcept
    cdef void _note_gain(self, uint64_t pair, int32_t w, uint64_t occ) noexcept
    cdef void _count_initial_pairs(self) noexcept
    cdef void _merge_word_hf(self, int32_t w, uint32_t a, uint32_t b, uint32_t new_id) noexcept
    cdef void _merge_word_exact(self, int32_t w, uint32_t a, uint32_t b, uint32_t new_id) noexcept
    cdef uint64_t _first_occurrence(self, uint64_t pair) noexcept
    cdef void _push_step_pairs(self) noexcept
