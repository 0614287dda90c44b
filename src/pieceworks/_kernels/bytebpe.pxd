# cython: language_level=3
# distutils: language = c++
"""C-level API of the fused byte-level BPE kernel (see bytebpe.pyx)."""

from cpython.object cimport PyObject
from pieceworks._kernels.byte_buffer cimport ByteBuffer
from pieceworks._kernels.raw_encoding cimport SpanSource
from pieceworks._kernels.bpe_encode cimport Symbol, U64Map
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libcpp.vector cimport vector

# The pre-tokenization patterns the kernel scans by hand (see bytebpe.pyx).
cpdef enum Pattern:
    PAT_GPT2 = 0          # GPT-2, r50k, p50k, ByteLevel(use_regex=True)
    PAT_CL100K = 1        # cl100k as first published, and Llama 3
    PAT_O200K = 2         # o200k
    PAT_QWEN2 = 3         # cl100k with \p{N} instead of \p{N}{1,3} (Qwen 2 and 3)
    PAT_CL100K_EOT = 4    # tiktoken's current cl100k spelling: adds `\s++$` (trailing blanks are one piece)
    PAT_PIECES = 5        # no scanner: the caller cuts pieces (a pattern the kernel does not know)


cdef struct BytesSlot:
    uint64_t hash         # vocabulary: the key's hash; cache: see PieceCache.slots (0: free)
    uint32_t key_off      # the key's bytes: a token's (vocabulary) or the cache's own arena (a key
                          # of up to 8 bytes: the cache keeps the rest of its hash here instead)
    uint32_t key_len      # vocabulary: 0 marks a free slot (no token is empty)
    uint32_t value        # vocabulary: token id; cache: offset of the ids in the cache's id arena
    uint32_t count        # cache: number of ids (vocabulary: unused)


cdef struct HeapItem:
    uint32_t rank
    int32_t pos


cdef struct TokenMerge:
    uint32_t left         # the pair the token's last merge joined (in plain BPE of its bytes)
    uint32_t right
    uint32_t rank         # that merge's rank + 1; 0: a single byte


cdef struct CharEntry:
    uint64_t key          # the char's bytes << 8 | their count; 0: free
    uint32_t count        # tokens of the char alone (at most 4: one per byte)
    uint32_t ids[4]


# The piece cache every thread shares (see bytebpe.pyx): slots are claimed with a
# compare-and-swap and published by their hash; the arenas are claimed by atomic adds.
cdef struct PieceCache:
    BytesSlot* slots              # hash: generation << 48 | the low 48 bits of the key's hash made odd, or | CACHE_BUSY
    size_t mask
    uint64_t gen                  # slots of another generation are free (emptying is one add)
    uint64_t epoch                # how many times it was emptied (gen wraps; this does not)
    uint8_t* keys                 # piece bytes
    uint32_t* ids                 # their token ids
    size_t key_cap
    size_t id_cap
    char _apart[64]               # the counters below change; the fields above are read on every look-up
    size_t keys_used              # (atomic) may pass key_cap: a claim that did not fit
    size_t ids_used               # (atomic)
    size_t slots_used             # (atomic)
    char _after[64]


# Everything the loop reads; built once, read-only afterwards (shared by threads), but
# for the piece cache it points to.
cdef struct Model:
    const uint64_t* pairs         # (left << id_bits | right) << rank_bits | rank, open addressing; all ones: free
    size_t pair_mask
    uint32_t id_bits              # bits of an id in a pair's key (ids stay below 2**id_bits - 1)
    uint32_t rank_bits            # the rest, up to 32: bits of a rank (ranks below 2**rank_bits - 1)
    const uint32_t* merge_new     # the token each merge (by rank) makes; NULL: it is rank >> rank_shift
    uint32_t rank_shift
    const uint64_t* bloom         # a blocked Bloom filter of the pairs (8 words a block)
    size_t bloom_mask             # blocks - 1
    const BytesSlot* vocab
    size_t vocab_mask
    const uint8_t* token_bytes
    const uint32_t* token_off     # token t is token_bytes[token_off[t]:token_off[t + 1]]
    uint32_t n_ids
    uint32_t max_token_len
    int64_t byte_id[256]
    bint whole_piece              # a piece that is a token is that token (tiktoken, ignore_merges)
    int pattern
    PieceCache* cache
    const uint8_t* classes        # per code point: K_* bits
    const uint8_t* rebuilds       # bit t: plain BPE of token t's bytes gives t
    const TokenMerge* token_merge # per token: its last merge
    const uint8_t* inexact        # bit t: token t's merges are not in rank order (see _mark_rebuilds)
    bint any_inexact
    const uint32_t* low_pairs     # rank of a b for ids a, b < 256 at [a << 8 | b] (UINT32_MAX: none)
    # BPE-dropout (ByteBPE.use_dropout): every piece merged by bpe_encode.merge_heap over the model's
    # encoder's merges, drawing from its generator. drop_merges NULL: no dropout.
    const U64Map* drop_merges
    const uint64_t* drop_made_by
    uint64_t* drop_rng
    double dropout
    # An end-of-word suffix (CLIP's "</w>", ByteBPE.mark_piece_ends): a cut piece is encoded with the
    # byte 0xFF after it (never in UTF-8), which the tokens ending in the suffix spell.
    bint end_mark


# Where the texts of a batch keep their chars (pointers into the str objects, which the caller holds).
cdef struct TextRefs:
    vector[const void*] datas
    vector[Py_ssize_t] lengths
    vector[int] kinds
    vector[uint8_t] asciis


# One caller's scratch space and piece cache; one thread uses it at a time.
cdef enum:
    RUN_SLOTS = 64    # State's table of the tokens long runs of one char are cut into


cdef cppclass State:
    vector[uint32_t] ids          # output: token ids
    vector[Py_ssize_t] item_end   # output of batches: where each text's ids end
    vector[uint8_t] buf           # the current piece in UTF-8
    vector[uint32_t] syms         # merge scratch
    vector[uint32_t] cand
    vector[HeapItem] heap
    vector[int32_t] prev
    vector[int32_t] next
    vector[uint32_t] char_syms    # multi-byte text: each char's tokens
    vector[uint32_t] guess        # ... merged from those, then checked
    vector[uint32_t] guess_pos
    vector[CharEntry] chars
    vector[uint64_t] recent       # recent pair look-ups: a pair slot (see Model.pairs; rank all ones: none)
    vector[uint64_t] seams        # recent seam checks: (left << 21 | right) << 1 | valid
    vector[uint32_t] piece_ids    # long pieces: the piece's tokens so far
    vector[uint32_t] piece_pos    # ... and the byte where each starts
    vector[uint32_t] region       # long pieces: a re-encoded stretch
    vector[uint32_t] char_ids     # one char's tokens (char_tokens)
    vector[uint8_t] pair_bytes    # a seam checked by running BPE (pair_ok): the two tokens' bytes
    vector[uint32_t] pair_ids     # ... and their BPE
    uint64_t run_keys[RUN_SLOTS]  # long runs of one char: the char (char_key; 0: empty) ...
    uint32_t run_tokens[RUN_SLOTS]  # ... and the token they are cut into (see run_token)
    uint32_t last_merge[2]        # the pair of the last merge done
    vector[Symbol] drop_syms      # BPE-dropout: the piece's symbols
    uint64_t block_epoch          # the piece cache's epoch when this thread claimed the blocks below
    size_t key_at, key_end        # this thread's claimed part of the cache's key arena
    size_t id_at, id_end          # ... and of its id arena
    size_t slots_left             # ... and how many more slots it may fill


cdef class ByteBPE:
    cdef Model m
    cdef vector[uint64_t] _pairs
    cdef vector[uint32_t] _merge_new
    cdef vector[uint64_t] _bloom
    cdef vector[uint32_t] _low_pairs
    cdef vector[BytesSlot] _vocab
    cdef vector[uint8_t] _token_bytes
    cdef vector[uint32_t] _token_off
    cdef vector[uint8_t] _has_token
    cdef vector[uint8_t] _rebuilds
    cdef vector[TokenMerge] _token_merge
    cdef vector[uint8_t] _inexact
    cdef object _classes_ref
    cdef object _dropout_owner         # the BpeEncoder whose merges and generator Model.drop_* point into
    cdef PyObject** _int_table         # raw_encoding's shared ints, _n_ints of them (at least n_ids)
    cdef Py_ssize_t _n_ints
    cdef list _pool
    cdef Py_ssize_t _busy                 # workspaces checked out (changed holding the GIL)
    cdef bint _clear_when_idle
    cdef PieceCache _cache                # its slots and arenas: calloc'd, freed with the model
    cdef readonly int pattern
    cdef readonly bint whole_piece
    cdef readonly bint complete_bytes
    cdef readonly Py_ssize_t stand_ins_from   # the first byte stand-in's id (see ByteBPE), -1: none
    cdef readonly Py_ssize_t n_merges
    cdef readonly bint ranks_by_id     # a pair's rank gives the id it makes, as rank >> Model.rank_shift

    cdef uint32_t _tie_bits(self, const uint32_t[::1] flat, Py_ssize_t n)
    cdef object _checkout(self)
    cdef void _checkin(self, object ws)
    cdef tuple _encode_raw(self, str text, bint prefix_space)
    cdef tuple _encode_ids_only(self, str text, SpanSource spans)
    cdef bint _fill_job(self, object job_object, list texts, bint refuse_surrogates,
                        Py_ssize_t chunk_chars, bint split) except -1
    cdef list _id_list(self, State* st, size_t start, size_t end)
    cdef int _join_ids(self, ids, ByteBuffer* out) except -1
    cdef list _bytes_piece(self, bytes piece, bint whole)
    cdef bint _bytes_known(self, uint32_t tid)
    cdef bint _spells_pair(self, uint32_t t, uint32_t x, uint32_t y)
    cdef void _mark_by_bpe(self, uint32_t tid, State* st)
    cdef void _load_splits(self, uint32_t tid, vector[uint64_t]& hashes) noexcept
    cdef void _find_splits(self, uint32_t tid, const vector[uint64_t]& hashes, vector[TokenMerge]& found) noexcept
    cdef Py_ssize_t _run(self, State* st, str text, bint one_piece) except -1
    cdef Py_ssize_t _run_more(self, State* st, str text, bint one_piece=*) except -1
    cdef int _read_texts(self, texts, bint refuse_surrogates, TextRefs* refs, tuple keep=*) except -1
    cdef int _encode_all(self, State* st, list texts, bint refuse_surrogates,
                         vector[Py_ssize_t]* pieces, tuple keep) except -1
