# cython: language_level=3
# distutils: language = c++
"""C-level API of the BPE encoding kernel (see bpe_encode.pyx)."""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libcpp.vector cimport vector
from pieceworks._kernels.token_finder cimport AroundTokens


cdef struct U64Map:
    # Open addressing, linear probing; EMPTY_KEY marks a free slot. A slot is a key and its value
    # side by side (slots[2i], slots[2i + 1]): a hit reads one cache line, not one in each of two arrays.
    uint64_t* slots
    size_t mask
    int shift        # 64 - log2(capacity): a key's home slot is the top bits of its hash
    size_t size


cdef struct Symbol:
    int32_t id
    int32_t nbytes   # UTF-8 bytes it covers, as Hugging Face counts them (offsets add these up)
    int32_t prev     # linked neighbours (heap path only)
    int32_t next
    bint alive


cdef struct Candidate:
    uint32_t rank
    int32_t pos
    uint32_t new_id


# The words one call has merged (see BpeEncoder._split_merged): open addressing on a word's hash,
# each entry in ``data``: [n chars, chars..., n symbols, (id, nbytes)..., n bytes, char of each byte...].
cdef struct WordCache:
    vector[uint64_t] keys         # per slot: the word's hash (0: free)
    vector[size_t] at             # per slot: where its entry starts in data
    vector[int32_t] data
    size_t used


# Long pieces (see BpeEncoder._merge_buckets): the merges still to try, a bucket per rank.
cdef struct MergeQueue:
    vector[int32_t] later_head    # per rank: the newest entry of its list in ``later`` (-1: none)
    vector[uint64_t] later        # entries pushed while merging: (pos << 32 | new_id), and next at [i + 1]
    vector[Candidate] late        # a heap of entries of a rank at or below the one being merged


# Tokens as a call gathers them for its raw encodings (raw_encoding's four int32 blocks: ids, char
# starts, char ends, words), all its texts' in turn, and the scratch a word is merged in.
cdef cppclass RawTokens:
    vector[int32_t] ids
    vector[int32_t] starts
    vector[int32_t] ends
    vector[int32_t] words
    vector[uint32_t] word       # the chars of the word being merged
    vector[Symbol] syms         # and its symbols, with the char of each of its bytes
    vector[int32_t] char_at


# How BpeEncoder._encode_around_all encodes each stretch between added tokens.
cdef struct StretchWay:
    bint by_words       # cut into words at white space (_words_into), or one piece (_piece_into)
    int scheme          # by words: the mode (0 never, 1 every word, 2 the text's first); else AROUND_*
    uint32_t space      # the char a space becomes (by words: the mark in front of a word)
    uint32_t front      # AROUND_FRONT's char in front (0: none)
    bint count_words    # results give their number of words (else 0)


# (Here, not in bpe_encode.pyx: bert_fast's BPE words take their offsets the same way.)
cdef inline void symbol_span(const int32_t* char_at, int64_t last, int64_t pos, int64_t end, bint front,
                             int64_t* start, int64_t* stop) noexcept nogil:
    """The char span of the symbol over the piece's bytes ``[pos, end)``: Hugging Face's byte offsets
    made chars, from the char of its first byte to after the char of its last (``char_at[b]``: the
    char of byte ``b``, ``char_at[last]`` the piece's length). ``front``: the piece's first char was
    put in front (see :meth:`BpeEncoder.encode_raw`), so each char moves one back, and that one
    spans the first char."""
    start[0] = char_at[min(pos, last)]
    stop[0] = char_at[min(end - 1, last - 1)] + 1 if last else 0
    if front:
        start[0] = start[0] - 1 if start[0] > 0 else 0
        stop[0] = stop[0] - 1 if stop[0] > 1 else 1


# Hugging Face's ``merge_all`` (a heap of (rank, position) over linked symbols; with ``dropout``,
# each merge popped is skipped with that chance, drawn from ``rng_state``). Also byte-level BPE's
# kernel's with dropout (bytebpe), drawing from the model's encoder's generator.
cdef void merge_heap(const U64Map* merges, const uint64_t* made_by, uint64_t* rng_state, double dropout,
                     vector[Symbol]& syms, const uint8_t* banned) noexcept nogil


cdef class Exclusion:
    cdef vector[uint8_t] flags   # per id: 1 = must not be produced
    cdef bint active             # some flagged id can come out of a merge, a char or a whole-piece look-up
    cdef dict cache              # piece -> (ids, starts, ends) under this exclusion

    cdef bint banned_id(self, object tid)


cdef class BpeEncoder:
    cdef U64Map merges        # (left << 32 | right) -> (rank << 32 | new_id)
    cdef U64Map chars         # (code point << 2 | marks) -> id; marks: 1 prefix, 2 suffix
    cdef vector[uint64_t] made_by        # per token: the pair key that merges into it (see _index_makers)
    cdef int32_t ascii_ids[128]   # chars's ids of the unmarked ASCII chars, -1 for none (no look-up)
    cdef int64_t byte_ids[256]
    cdef int64_t unk_id       # -1: no unk token; -2: an unk token that is not in the vocab
    cdef object unk_token
    cdef bint fuse_unk
    cdef bint byte_fallback
    cdef bint ignore_merges
    cdef bint has_prefix
    cdef bint has_suffix
    cdef vector[uint8_t] prefix_utf8     # the continuing_subword_prefix's bytes (byte fallback spells them)
    cdef vector[uint8_t] suffix_utf8     # the end_of_word_suffix's
    cdef vector[uint8_t] no_bytes
    cdef double dropout
    # Stepped only by compare-and-swap (see _random); public so that a way which gives up after
    # drawing can put it back (Tokenizer._generator_rewind: the next way then draws the same).
    cdef public uint64_t rng_state
    cdef list id_to_token
    cdef dict vocab
    cdef dict cache
    cdef Py_ssize_t cache_capacity
    cdef object token_cls
    cdef public Py_ssize_t small_piece   # pieces up to this many symbols take the linear path
    cdef public Py_ssize_t bucket_piece  # pieces of at least this many take buckets (see _merge_buckets)
    cdef uint32_t n_ranks                # merges (ranks run 0 .. n_ranks - 1)
    cdef dict exclusions      # frozenset of ids -> Exclusion
    cdef uint32_t cut_mark               # a piece is merged word by word, each word from this char on
    cdef vector[uint32_t] cut_unsafe     #   but where the char before it is one of these
    cdef bint cut_after_unknown          #   or has no token of its own, unless this is set (see _find_cuts)
    cdef WordCache calls_cache           # the words met from call to call (see _claim_calls_cache)
    cdef long calls_cache_busy           # (atomic) 1 while a call holds calls_cache

    cdef int _missing_unk(self) except -1
    cdef void _index_makers(self) noexcept nogil
    cdef int _split_chars(self, int kind, const void* data, Py_ssize_t n, vector[Symbol]& syms,
                          vector[int32_t]& char_at) noexcept nogil
    cdef bint _bytes_known(self, const vector[uint8_t]& data) noexcept nogil
    cdef Py_ssize_t _ascii_run(self, int kind, const void* data, Py_ssize_t i, Py_ssize_t n) noexcept nogil
    cdef void _put_ascii(self, int kind, const void* data, Py_ssize_t i, Py_ssize_t run, vector[Symbol]& syms,
                         vector[int32_t]& char_at) noexcept nogil
    cdef WordCache* _claim_calls_cache(self) noexcept nogil
    cdef WordCache* _word_cache_for(self, WordCache* own, const vector[Py_ssize_t]& lengths) noexcept nogil
    cdef void _free_calls_cache(self, WordCache* claimed) noexcept nogil
    cdef void _drop_calls_cache(self) noexcept
    cdef int _split_merged(self, int kind, const void* data, Py_ssize_t n, vector[Symbol]& syms,
                           vector[int32_t]& char_at, const uint8_t* banned, WordCache* cache=*) noexcept nogil
    cdef bint _cuts_before(self, uint32_t previous) noexcept nogil
    cdef list _encode_around_all(self, list texts, AroundTokens around, StretchWay* way, strings, Py_ssize_t limit,
                                 str name)
    cdef int _piece_into(self, int kind, const void* data, Py_ssize_t at, Py_ssize_t stop, StretchWay* way,
                         WordCache* cache, RawTokens* out, int32_t* word) noexcept nogil
    cdef int _words_into(self, int kind, const void* data, Py_ssize_t begin, Py_ssize_t stop, uint32_t mark,
                         int mode, WordCache* cache, RawTokens* out, int32_t* word) noexcept nogil
    cdef void _merge(self, vector[Symbol]& syms, const uint8_t* banned) noexcept nogil
    cdef void _merge_small(self, vector[Symbol]& syms, const uint8_t* banned) noexcept nogil
    cdef void _merge_heap(self, vector[Symbol]& syms, double dropout, const uint8_t* banned) noexcept nogil
    cdef void _merge_buckets(self, vector[Symbol]& syms, const uint8_t* banned) noexcept nogil
    cdef void _merge_at(self, vector[Symbol]& syms, int32_t pos, uint32_t new_id, uint32_t rank, MergeQueue* q,
                        const uint8_t* banned) noexcept nogil
    cdef double _random(self) noexcept nogil
    cdef int _symbols(self, str piece, vector[Symbol]& syms, vector[int32_t]& char_at,
                      const uint8_t* banned) except -1
    cdef tuple _encode(self, str piece, Exclusion ex)
    cdef object _whole_piece(self, str piece, Exclusion ex)
    cdef Exclusion _exclusion(self, object excluded_ids)
