# cython: language_level=3
"""C-level layout of the fused class-run encoder, WordPiece or BPE (see bert_fast.pyx)."""

from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libcpp.vector cimport vector

from pieceworks._kernels.bpe_encode cimport BpeEncoder, Symbol
from pieceworks._kernels.wordpiece_encode cimport WordPieceMatcher

# A char-map entry: bits 0-20 a code point (or, for ENTRY_MULTI and ENTRY_CHECK, an offset
# into CharMap.multi), bits 21-23 what the char does. Kinds 0-3 are the
# pre-tokenizer's actions on the mapped char (the scan kernel's numbering).
cdef enum:
    ENTRY_SPLIT = 0       # whitespace: ends the current piece, emits nothing
    ENTRY_ISOLATE = 1     # a piece of its own (punctuation, a CJK ideograph)
    ENTRY_RUN = 2         # 2 and 3: extends a piece of chars of the same class
    ENTRY_DELETE = 4      # removed by the normalizer; the piece goes on
    ENTRY_MULTI = 5       # several chars: multi[off] = count, then count entries
    ENTRY_CHECK = 6       # like ENTRY_MULTI, once the caller has checked NFD's order
    NO_RUN = 7            # Scratch.run when no piece is open

cdef enum:
    ENTRY_SHIFT = 21
    ENTRY_PAYLOAD = 0x1FFFFF


cdef class CharMap:
    cdef vector[uint32_t] entries   # one per code point, 0x110000
    cdef vector[uint32_t] multi
    cdef bint merged_with_next      # a char of run class 3 starts a piece that class 2 chars join (Metaspace)

    cdef uint32_t _entry_for(self, str text, const uint8_t* act, bint check) except? 0xFFFFFFFF


ctypedef struct Tok:
    int32_t id
    int32_t word                    # piece index, from 0
    int32_t unk                     # 1: the unknown token (spelled unk_token)
    Py_ssize_t start                # char offsets into the encoded text
    Py_ssize_t end


ctypedef struct Params:
    const uint32_t* entries
    const uint32_t* multi
    Py_ssize_t max_chars            # WordPiece's max_input_chars_per_word
    int32_t unk_id                  # -1: the vocabulary lacks unk_token
    int32_t collect                 # 1: record the pieces' chars instead of matching
    int32_t order_checked           # 1: ENTRY_CHECK chars are safe in this text
    int32_t merged_with_next        # the CharMap's
    uint32_t front                  # a char put before the text (spanning its first char), or 0


# The word cache of a Scratch: pieces of up to CACHE_MAX_CHARS chars and
# their match, in an open-addressing table of CACHE_SLOTS slots.
cdef enum:
    CACHE_SLOTS = 16384
    CACHE_MASK = CACHE_SLOTS - 1
    CACHE_MAX_CHARS = 24
    CACHE_MAX_DATA = 1 << 18        # int32s of cached entries (1 MB), then it starts over


cdef class TokenTable:
    cdef WordPieceMatcher matcher   # the model's matcher (WordPiece), or None
    cdef BpeEncoder bpe             # the model's encoder (BPE), or None
    cdef list ids
    cdef list texts
    cdef dict values

    cdef object id_object(self, int32_t tid)
    cdef object text_object(self, int32_t tid)


cdef class Scratch:
    # Buffers of one encode call; pooled, so each thread reuses its own.
    cdef vector[Py_UCS4] word       # the open piece, mapped chars
    cdef vector[Py_ssize_t] src     # the original char index of each
    cdef vector[int32_t] nodes, stack
    cdef vector[Symbol] syms        # BPE: the open piece's symbols, and the char of each byte
    cdef vector[int32_t] char_at
    cdef vector[Tok] toks
    cdef int32_t n_words
    cdef uint32_t run               # class of the open piece, NO_RUN: none
    # The word cache: slot -> (hash, offset of its entry in cache_data).
    cdef vector[uint64_t] cache_keys
    cdef vector[size_t] cache_at
    cdef vector[int32_t] cache_data
    cdef size_t cache_used
    cdef object cache_owner         # the TokenTable (so the matcher) the cache is for

    cdef int flush(self, WordPieceMatcher m, BpeEncoder b, const Params* p) noexcept nogil
    cdef Tok* more_toks(self, Py_ssize_t count) noexcept nogil
    cdef int flush_bpe(self, BpeEncoder b, int32_t word) noexcept nogil
    cdef void bpe_tokens(self, BpeEncoder b, int32_t* count) noexcept nogil
    cdef void push_tokens(self, WordPieceMatcher m, const int32_t* nodes, int32_t count, int32_t word) noexcept nogil
    cdef const int32_t* tokens_cached(self, WordPieceMatcher m, BpeEncoder b, int32_t* count) noexcept nogil
    cdef void tokens_of(self, WordPieceMatcher m, BpeEncoder b, int32_t* count) noexcept nogil
    cdef void clear_cache(self) noexcept nogil
    cdef void use_cache_of(self, TokenTable table)
    cdef void reset(self) noexcept nogil
    cdef void trim(self)
