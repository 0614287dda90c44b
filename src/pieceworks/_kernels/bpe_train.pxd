# cython: language_level=3
# distutils: language = c++
"""C-level API of the BPE training kernel (see bpe_train.pyx for the layout and its invariants)."""

cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector


cdef struct Buf:
    # A growable array of plain values, grown with realloc: a big one is
    # moved by the kernel (mremap), not copied, so growing never holds two
    # copies at once.
    char* data
    size_t n        # elements in use
    size_t cap      # elements allocated


cdef struct PairSlot:
    uint32_t right  # the pair's right id; EMPTY_SLOT = free
    int32_t count   # BIG_PAIR: the count is in big_pairs


cdef struct PairTable:
    # The pairs (left, *) of one left id: open addressing, linear probing.
    PairSlot* slots
    uint32_t mask   # capacity - 1 (a power of two); slots is NULL until the first pair
    uint32_t used


cdef struct Entry:
    # Heap order: count descending, then key2, x, y ascending.
    # huggingface mode: key2 = pair, x = push sequence, y = its word list (see LIST_INLINE).
    # first_seen mode:  key2 = first occurrence (word << 32 | char), x = left id, y = right id.
    uint64_t count
    uint64_t key2
    uint32_t x
    uint32_t y


cdef packed struct Cold:
    # A heap entry of a small count, waiting (see MergeLearner.cold).
    uint64_t pair
    uint32_t y


cdef packed struct ListRef:
    uint64_t offset     # where the list starts in the arena
    uint32_t nbytes     # its size; FREE_LIST = slot unused


cdef struct StepSlot:
    # A slot of the step map (pair -> its index in this step's arrays); a
    # slot stamped with another step's gen is free, so a step clears the
    # map by bumping step_gen.
    uint64_t pair
    uint32_t gen
    uint32_t index


@cython.final
cdef class MergeLearner:
    # -- the words: symbol ids back to back -----------------------------------
    cdef Buf syms                   # uint16 (narrow) or uint32 ids; HOLE past a word's live end
    cdef bint narrow
    cdef uint32_t hole
    cdef Buf widths                 # int32 chars per symbol (only with has_widths)
    cdef bint has_widths
    cdef Buf starts                 # uint32: word w is syms[starts[w]:starts[w + 1]]
    cdef Buf word_counts            # uint8; BIG_COUNT: see big_counts
    cdef unordered_map[uint32_t, uint64_t] big_counts
    cdef size_t n_words
    cdef size_t holes               # dead symbols (merged away) in the array

    # -- reading words -----------------------------------------------------------
    cdef list id_to_token
    cdef dict token_to_id
    cdef object prefix, suffix
    cdef vector[int32_t] memo_bmp           # (code point << 2 | marks) -> id, -1 none, -2 unknown
    cdef unordered_map[uint64_t, int64_t] memo_astral
    cdef vector[uint32_t] cps               # one word's code points

    # -- pairs -------------------------------------------------------------------------
    cdef vector[PairTable] tables           # per left id
    cdef unordered_map[uint64_t, int64_t] big_pairs
    cdef size_t freed                       # bytes of grown tables freed since the last trim
    cdef Buf heap                           # Entry
    # huggingface mode: entries of count c in 0..cold_limit wait in cold[c],
    # in push order, until the heap runs empty: every entry in the heap
    # counts more, so none of them could be popped before (and most are
    # never popped at all). They get their push sequence when they enter.
    cdef vector[Buf] cold                   # Cold
    cdef int64_t cold_limit                 # -1: nothing waits (first_seen, or after the move)
    cdef uint32_t seq
    cdef int64_t max_width
    cdef bint first_seen
    cdef bint learned
    cdef Py_ssize_t vocab_bound             # the vocab_size the arrays were sized for (-1: any)

    # Pairs that gained occurrences in the current step, in order of first gain.
    cdef Buf step_map                       # StepSlot, open addressing
    cdef uint32_t step_gen
    cdef vector[uint64_t] step_pairs
    cdef vector[uint32_t] step_last         # last word noted
    cdef vector[uint32_t] step_nwords
    cdef vector[vector[uint8_t]] step_bytes # the words as varint deltas (huggingface mode)

    # huggingface mode: word lists (strictly increasing word indices, varint
    # deltas), immutable once made, in one arena; each heap entry owns one.
    cdef Buf arena
    cdef Buf lists                          # ListRef per list slot
    cdef vector[uint32_t] free_lists
    cdef size_t garbage                     # arena bytes of freed lists

    # first_seen mode: every word a pair may occur in, and a lower bound of
    # its first occurrence.
    cdef unordered_map[uint64_t, vector[int32_t]] pair_words
    cdef unordered_map[uint64_t, uint64_t] first_bound

    cdef uint32_t sym(self, size_t i) noexcept
    cdef void set_sym(self, size_t i, uint32_t v) noexcept
    cdef int32_t width(self, size_t i) noexcept
    cdef void move_sym(self, size_t to, size_t frm, uint32_t x) noexcept
    cdef size_t word_start(self, size_t w) noexcept
    cdef int64_t word_count(self, size_t w) noexcept
    cdef int _add_utf8(self, const uint8_t[::1] blob, const int64_t[::1] offsets,
                       const uint64_t[::1] counts) except -1
    cdef int _add_strs(self, list words, counts) except -1
    cdef int _add_word(self, uint64_t count) except -1
    cdef int64_t _char_id(self, uint32_t cp, uint32_t marks) except -3
    cdef int pair_add(self, uint32_t a, uint32_t b, int64_t delta) except -1
    cdef int64_t pair_get(self, uint32_t a, uint32_t b) noexcept
    cdef int _cover_ids(self, size_t n) except -1
    cdef uint32_t _step_index(self, uint64_t pair, bint* fresh) except? 0xFFFFFFFF
    cdef int _grow_step_map(self) except -1
    cdef void _end_step(self) noexcept
    cdef int _note_gain(self, uint64_t pair, uint32_t w, uint64_t occ) except -1
    cdef uint32_t _next_seq(self) except? 0xFFFFFFFF
    cdef int _renumber(self) except -1
    cdef int _push_step_pairs(self) except -1
    cdef int _push_hf(self, uint64_t count, uint64_t pair, uint32_t y) except -1
    cdef int _inject_cold(self) except -1
    cdef uint32_t _store_list(self, const uint8_t* data, size_t nbytes) except? 0xFFFFFFFF
    cdef void _release_list(self, uint32_t y) noexcept
    cdef int _compact_arena(self) except -1
    cdef int _compact_words(self) except -1
    cdef int _count_initial_pairs_hf(self) except -1
    cdef uint32_t _adopt_list(self, size_t offset, size_t nbytes) except? 0xFFFFFFFF
    cdef int _count_initial_pairs_exact(self) except -1
    cdef int _merge_word_hf(self, uint32_t w, uint32_t a, uint32_t b, uint32_t new_id) except -1
    cdef int _merge_word_exact(self, uint32_t w, uint32_t a, uint32_t b, uint32_t new_id) except -1
    cdef uint64_t _first_occurrence(self, uint64_t pair) noexcept
    cdef uint32_t _new_token(self, uint32_t a, uint32_t b) except? 0xFFFFFFFF
    cdef void _forget_reading(self) noexcept
