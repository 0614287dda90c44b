# cython: language_level=3
# distutils: language = c++
"""Byte-level BPE in one pass: scan the text into pieces, then merge each piece.

One loop reads a Python str (its PEP 393 code points, no copy), cuts it into
the pieces a pre-tokenization pattern would match, turns each piece into
UTF-8 and appends its token ids to a C buffer. The GIL is released for the
whole loop; the Python list is built once at the end.

**Scanners.** GPT-2's pattern, cl100k's (also Llama 3's), o200k's and Qwen's
are hand-written here with the exact semantics of the regular expression
(alternatives tried in order, greedy quantifiers that backtrack, ``\\s+(?!\\S)``,
the case-insensitive contractions, ``[\\r\\n]`` runs, ``\\p{N}{1,3}``). Each
``next_*`` function below carries the pattern it implements and the reasoning
that reduces the backtracking to one or two passes. Character classes come
from a one-byte-per-code-point table (``K_*`` bits) at the Unicode version of
Hugging Face and tiktoken (16.0: the letters, marks and digits new in 17.0
count as unassigned).

**Pieces.** A piece that is itself a token (``whole_piece``: tiktoken, and
Hugging Face's ``ignore_merges``) is looked up whole. Otherwise a cache that
all threads share maps piece bytes to ids; a miss runs the merges: the adjacent pair
with the lowest rank is merged first, the leftmost on ties. Pair ranks come
from a C hash map ``(left_id, right_id) -> rank`` (for tiktoken ranks: a pair
for every token ``t = a + b`` with ``a`` and ``b`` tokens, ranked by ``t``;
for Hugging Face: the merge list). Short stretches scan a rank array; long
ones use a heap over linked symbols.

**Checking instead of merging.** A property of BPE (proved in the README of
github/rust-gems ``bpe``): a token sequence is the BPE encoding of its bytes
if and only if every two adjacent tokens ``x y`` are, i.e. ``bpe(bytes(x) +
bytes(y)) == [x, y]``. :func:`pair_ok` checks that without running BPE, by
replaying the two tokens' merges backwards, highest rank first: BPE's own
order when each merge ranks above the merges that made its parts, as trained
merges do. For a token made otherwise (an "inexact" one: Llama 3 has about a
hundred) the check runs BPE on the two tokens instead. Two routes use it:

* text with multi-byte chars (CJK, Thai, Cyrillic...) is first encoded char
  by char (cached by char), then merged from those tokens: a guess that
  skips the two merges inside every 3-byte char, nearly always right; every
  seam of the guess is checked, and one that fails is re-encoded from bytes;
* long ASCII pieces (more than ``LONG_PIECE`` bytes: a megabyte of one
  letter, random letters, digits under GPT-2's pattern) are cut into chunks
  encoded alone, eight side by side (:func:`merge_chunks`); only the seams
  between chunks need checking. A long run of
  one char (indentation, a line of dashes or em dashes) is cut into copies
  of the longest token of that char that BPE makes and that does not merge
  with itself (cl100k: 128 spaces, 96 dashes): chunks shorter than that
  token failed nearly every seam, and each repair re-encoded hundreds of
  bytes (a megabyte of spaces took 20 times as long as one of prose).

A failed seam is re-encoded from a stretch of tokens around it, the stretch
doubling until both of its own seams hold. No input is quadratic.

**Threads.** The model (pair map, vocabulary, token bytes) is read-only after
construction and shared. Each call checks a ``Workspace`` (scratch buffers
plus its small caches) out of a pool while holding the GIL and puts it back
at the end, so a workspace is only ever used by one thread. The piece cache
is shared, without locks (see :func:`cache_put`): with a cache per thread,
each of two threads merged most of a text's distinct pieces itself, and a
quarter of the time of one thread on prose is that first merging.

Performance notes (what the merge loop waits for is memory, not arithmetic):

* a per-piece Python dict lookup costs about as much as the whole C loop, so
  the piece cache is an open-addressing table of byte strings with its own
  arenas, emptied when full and idle; the vocabulary probe comes first, because most
  pieces of prose are one token;
* a key of up to 8 bytes (nine pieces of prose in ten), a token in the
  vocabulary or a piece in the cache, is known by its hash alone (the hash
  is one-to-one there: see :func:`hash_bytes`), with no compare of its
  bytes: that compare read the key's bytes elsewhere, a second cache miss
  per piece (memcmp was 14% of the time on prose);
* pair slots pack ``left, right, rank`` in 8 bytes; a blocked Bloom filter
  (16 bits a pair, about 1 MB) answers the two thirds of look-ups that find
  no merge; a per-thread table of recent answers (16k slots) serves the pairs
  text keeps reusing. A second table for the lowest-ranked pairs was tried
  and dropped: it cost more than it saved;
* a merge loop keeps each pair's rank and place in one word (:func:`candidate`),
  so the next merge is one vectorized min with no search after it, and
  leaves its symbols in place, linked (a merge moved the rest left); on a
  megabyte of random letters, that and merging chunks side by side, so
  that their look-ups wait for memory together, took 30% off the time;
* chunking alone (without the char-level guess) left CJK and Thai at two
  look-ups per byte; the guess cut Thai under o200k from about 10 to 30 MB/s;
* ASCII strings are already UTF-8: their pieces are encoded in place; Python
  ints for token ids are made once (raw_encoding's shared table covers every
  id), so a result list costs a pointer copy per token;
* result lists of ids are untracked by the cyclic garbage collector (ints
  cannot form a cycle): a batch's tens of thousands of lists otherwise make
  the collector run pass after pass over all of them on the calling thread,
  which was what kept two threads from doing twice the work of one.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New
from cpython.tuple cimport PyTuple_New
from cpython.pyport cimport PY_SSIZE_T_MAX

from pieceworks._kernels.board cimport pw_board
from pieceworks._kernels.bpe_encode cimport BpeEncoder, merge_heap as merge_like_hugging_face
from pieceworks._kernels.token_finder cimport AroundScratch, AroundTokens, Found, TokenTrie, tokens_around
from pieceworks._kernels.scan cimport code_point
from pieceworks._kernels.onig_spans cimport (Cutter, CutStage, PW_PIECE_REMOVED, Region, chars_in, cut_text,
                                             search_t)
from pieceworks._kernels.aligned_nfc cimport FormTables, Item
from cython.operator cimport dereference as deref
from pieceworks._kernels.raw_encoding cimport (PREFETCH_AHEAD, Basis, EncodingBase, SpanSource, basis_for, encoding_of,
                                               framed_ids, ids_raw, int_ref, lazy_with_ids, prefetch_int,
                                               prefetch_next_ints, pw_prefetch_read, pw_prefetch_write,
                                               share_ints_below, shared_int_table, spans_to_original)
from pieceworks._kernels.raw_encoding import id_list, offset_list, token_list, word_list
from pieceworks._kernels.byte_buffer cimport buffer_put, buffer_start
from cpython.unicode cimport PyUnicode_AsUTF8, PyUnicode_DATA, PyUnicode_DecodeUTF8, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport INT32_MAX, UINT32_MAX, UINT64_MAX, int16_t, uint16_t, uintptr_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcmp, memcpy, memmove, memset

cdef extern from *:
    """
    static inline uint64_t pw_load_acquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void pw_store_release(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline int pw_claim(uint64_t* p, uint64_t expected, uint64_t v) {
        return __atomic_compare_exchange_n(p, &expected, v, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
    }
    static inline size_t pw_fetch_add(size_t* p, size_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
    static inline size_t pw_load_relaxed(const size_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    """
    uint64_t pw_load_acquire(const uint64_t* p) noexcept nogil
    void pw_store_release(uint64_t* p, uint64_t v) noexcept nogil
    bint pw_claim(uint64_t* p, uint64_t expected, uint64_t v) noexcept nogil
    size_t pw_fetch_add(size_t* p, size_t v) noexcept nogil
    size_t pw_load_relaxed(const size_t* p) noexcept nogil

cdef extern from *:
    """
    #if defined(__SSE2__)
    #include <emmintrin.h>
    /* The lesser of each lane, signed: SSE2 has no min of 32-bit ints (SSE4.1 does). */
    static inline __m128i pw_min_i32(__m128i a, __m128i b) {
    #if defined(__SSE4_1__)
        return _mm_min_epi32(a, b);
    #else
        __m128i a_above = _mm_cmpgt_epi32(a, b);
        return _mm_or_si128(_mm_and_si128(a_above, b), _mm_andnot_si128(a_above, a));
    #endif
    }
    #endif
    /* The least of cand[:width] (width a multiple of 16), each stored with its top bit flipped
       (so that an unsigned order is a signed one: SSE2 compares signed ints only), unflipped. */
    static inline uint32_t pw_least_of(const uint32_t* cand, size_t width) {
    #if defined(__SSE2__)
        __m128i a = _mm_loadu_si128((const __m128i*)cand), b = _mm_loadu_si128((const __m128i*)(cand + 4));
        __m128i c = _mm_loadu_si128((const __m128i*)(cand + 8)), d = _mm_loadu_si128((const __m128i*)(cand + 12));
        for (size_t k = 16; k < width; k += 16) {
            a = pw_min_i32(a, _mm_loadu_si128((const __m128i*)(cand + k)));
            b = pw_min_i32(b, _mm_loadu_si128((const __m128i*)(cand + k + 4)));
            c = pw_min_i32(c, _mm_loadu_si128((const __m128i*)(cand + k + 8)));
            d = pw_min_i32(d, _mm_loadu_si128((const __m128i*)(cand + k + 12)));
        }
        a = pw_min_i32(pw_min_i32(a, b), pw_min_i32(c, d));
        a = pw_min_i32(a, _mm_shuffle_epi32(a, 0x4E));
        a = pw_min_i32(a, _mm_shuffle_epi32(a, 0xB1));
        return (uint32_t)_mm_cvtsi128_si32(a) ^ 0x80000000u;
    #else
        int32_t least = (int32_t)cand[0];
        for (size_t k = 1; k < width; k++) least = (int32_t)cand[k] < least ? (int32_t)cand[k] : least;
        return (uint32_t)least ^ 0x80000000u;
    #endif
    }
    """
    uint32_t pw_least_of(const uint32_t* cand, size_t width) noexcept nogil

cdef extern from "Python.h":
    int PyUnicode_IS_ASCII(object)
    Py_UCS4 PyUnicode_READ_CHAR(object, Py_ssize_t)
    bint PyBytes_CheckExact_p "PyBytes_CheckExact"(PyObject*)
    bint PyLong_CheckExact_p "PyLong_CheckExact"(PyObject*)
    bint PyDict_Next(object, Py_ssize_t*, PyObject**, PyObject**)
    Py_ssize_t PyLong_AsSsize_t(object) noexcept    # (-1 with an error set: see rank_table)
    void PyErr_Clear()
    void Py_INCREF_p "Py_INCREF"(PyObject*)
    void PyList_SET_ITEM_p "PyList_SET_ITEM"(object, Py_ssize_t, PyObject*)
    void PyObject_GC_UnTrack(void* op)
    void PyObject_GC_Track(void* op)
    # Borrowed pointers, read without Cython's reference counting (batches read thousands of texts).
    PyObject** PySequence_Fast_ITEMS(object)
    void PyTuple_SET_ITEM_p "PyTuple_SET_ITEM"(object, Py_ssize_t, PyObject*)
    PyObject* PyTuple_GET_ITEM_p "PyTuple_GET_ITEM"(object, Py_ssize_t)
    void Py_DECREF_p "Py_DECREF"(PyObject*)
    bint PyUnicode_CheckExact_p "PyUnicode_CheckExact"(PyObject*)
    const void* PyUnicode_DATA_p "PyUnicode_DATA"(PyObject*)
    Py_ssize_t PyUnicode_GET_LENGTH_p "PyUnicode_GET_LENGTH"(PyObject*)
    int PyUnicode_KIND_p "PyUnicode_KIND"(PyObject*)
    bint PyUnicode_IS_ASCII_p "PyUnicode_IS_ASCII"(PyObject*)

ctypedef fused char_t:
    uint8_t
    uint16_t
    uint32_t

# Character classes (one byte per code point).
cdef enum:
    K_WS = 1       # White_Space: \s
    K_L = 2        # \p{L}
    K_N = 4        # \p{N}
    K_UP = 8       # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]: o200k's first class
    K_LO = 16      # [\p{Ll}\p{Lm}\p{Lo}\p{M}]: o200k's second class
    K_WLN = 7      # K_WS | K_L | K_N

# Keys of up to this many bytes are known by their hash alone (hash_bytes is one-to-one on them).
cdef enum:
    HASH_KNOWS_KEY = 8

cdef uint64_t EMPTY_PAIR = UINT64_MAX
cdef uint32_t DEAD = UINT32_MAX

# ASCII pieces longer than this (in bytes) are encoded in chunks of about CHUNK bytes. (Chunks of
# 48 bytes, not 32: a third fewer seams to check and repair, for a min over 48 places a merge,
# which costs little since it is done four SSE2 registers at a time: 5-7% less time on random
# letters and digits; 64 bytes measured the same as 48.)
cdef size_t LONG_PIECE = 48
cdef size_t CHUNK = 48
# Runs of one char at least this many bytes long are cut into copies of one token (see run_token);
# more than CHUNK, which a run leaves to BPE.
cdef size_t RUN_MIN = 64
# The longest token of a run looked for (in bytes).
cdef enum:
    RUN_MAX_TOKEN = 256
# The shared piece cache: slots (at most half used), and the arenas' sizes. When one is
# full it takes nothing more until no thread uses the kernel; then it is emptied.
cdef size_t CACHE_SLOTS = 1 << 17
cdef size_t CACHE_KEY_BYTES = 1 << 21
cdef size_t CACHE_IDS = 1 << 19
cdef size_t CACHE_MAX_KEY = 96
# A slot's hash while its writer fills it (real hashes are odd, so never this).
cdef uint64_t CACHE_BUSY = 2
cdef uint64_t LOW48 = (1ULL << 48) - 1
# What a thread claims of the arenas at a time (CACHE_MAX_KEY bytes and ids fit in one).
cdef size_t CACHE_KEY_BLOCK = 4096
cdef size_t CACHE_ID_BLOCK = 1024
cdef size_t CACHE_SLOT_BLOCK = 64
# The per-thread table of recent pair look-ups (direct-mapped, 8 bytes a slot).
cdef size_t RECENT_PAIRS = 1 << 14
# The per-thread table of recent seam checks (pair_ok), direct-mapped.
cdef size_t RECENT_SEAMS = 1 << 14
# The per-thread cache of one char's tokens (direct-mapped).
cdef size_t CHAR_SLOTS = 1 << 12
# Strings shorter than this are encoded holding the GIL (releasing it costs more).
cdef Py_ssize_t NOGIL_MIN_CHARS = 64


# -- hashing ---------------------------------------------------------------------------


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    # splitmix64's finalizer.
    x ^= x >> 30
    x *= 0xbf58476d1ce4e5b9ULL
    x ^= x >> 27
    x *= 0x94d049bb133111ebULL
    x ^= x >> 31
    return x


cdef inline uint64_t hash_bytes(const uint8_t* p, size_t n) noexcept nogil:
    """A 64-bit hash of ``p[:n]``; for ``n <= 8`` one-to-one (see :func:`vocab_find`).

    Each step is a bijection of the 64-bit state: xor with the bytes,
    multiplication by an odd constant, xor-shifts; so two keys of at most
    8 bytes with the same length and hash are the same key.
    """
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xff51afd7ed558ccdULL)
    cdef uint64_t w
    cdef size_t k
    while n >= 8:
        memcpy(&w, p, 8)
        h = (h ^ w) * 0x9FB21C651E98DF25ULL
        h ^= h >> 29
        p += 8
        n -= 8
    if n:
        w = 0
        for k in range(n):
            w |= (<uint64_t>p[k]) << (8 * k)
        h = (h ^ w) * 0x9FB21C651E98DF25ULL
    return mix64(h)


# -- the pair map ----------------------------------------------------------------------


# A slot packs ``(left << id_bits | right) << rank_bits | rank`` in 64 bits: half
# the size of a key/value pair, so twice as many of the pairs a text uses stay in
# cache (the merge loop's cost is these look-ups). ``id_bits`` fits the model's
# ids (at most 21: ids below 2**21 - 1), and the rest, up to 32 bits, holds the
# rank (at least 22 bits: ranks below 2**22 - 1; ByteBPE._tie_bits says why a
# smaller vocabulary's wider ranks help).
cdef uint64_t MAX_PAIR_ID = (1 << 21) - 2
cdef uint64_t MAX_RANK = (1 << 22) - 2


cdef inline uint64_t rank_mask(const Model* m) noexcept nogil:
    """All ones in a slot's rank bits: more than any rank (a free slot, or "no such pair")."""
    return ((<uint64_t>1) << m.rank_bits) - 1


cdef inline uint64_t pair_key(const Model* m, uint32_t a, uint32_t b) noexcept nogil:
    return ((<uint64_t>a) << m.id_bits) | b


cdef inline bint bloom_has(const uint64_t* block, uint64_t h) noexcept nogil:
    # Bit ((h >> 6j) & 63) of word j, for the 8 words of the key's 64-byte block.
    return ((block[0] >> (h & 63)) & (block[1] >> ((h >> 6) & 63)) & (block[2] >> ((h >> 12) & 63))
            & (block[3] >> ((h >> 18) & 63)) & (block[4] >> ((h >> 24) & 63)) & (block[5] >> ((h >> 30) & 63))
            & (block[6] >> ((h >> 36) & 63)) & (block[7] >> ((h >> 42) & 63)) & 1)


cdef inline uint32_t pair_rank(const Model* m, uint32_t a, uint32_t b) noexcept nogil:
    """The rank of merging ``a b`` (lower merges first), or UINT32_MAX.

    Most pairs a merge loop asks about do not merge at all (two thirds, in
    Chinese text); a blocked Bloom filter small enough for the L2 cache says
    so without touching the big table.
    """
    cdef uint64_t key = pair_key(m, a, b)
    return pair_rank_h(m, key, mix64(key))


cdef inline uint32_t pair_rank_h(const Model* m, uint64_t key, uint64_t h) noexcept nogil:
    if not bloom_has(m.bloom + 8 * ((h >> 48) & m.bloom_mask), h):
        return UINT32_MAX
    cdef size_t i = h & m.pair_mask
    cdef uint64_t slot = m.pairs[i]
    while slot != EMPTY_PAIR:
        if (slot >> m.rank_bits) == key:
            return <uint32_t>(slot & rank_mask(m))
        i = (i + 1) & m.pair_mask
        slot = m.pairs[i]
    return UINT32_MAX


cdef inline uint32_t pair_rank_cached(const Model* m, uint64_t* recent, uint32_t a, uint32_t b) noexcept nogil:
    """:func:`pair_rank` through a small per-thread table of recent answers.

    Text reuses the same few thousand pairs (bytes inside a char, common
    syllables); this table stays in the L1/L2 cache where the full pair
    table and its filter do not. Pairs of two of the first 256 ids (the
    bytes, in most vocabularies) are read from a direct table instead.
    """
    if (a | b) < 256:
        return m.low_pairs[(a << 8) | b]
    cdef uint64_t key = pair_key(m, a, b)
    cdef uint64_t h = mix64(key)
    cdef uint32_t r
    if recent_answer(m, recent, key, h, &r):
        return r
    r = pair_rank_h(m, key, h)
    remember_answer(m, recent, key, h, r)
    return r


cdef inline bint recent_answer(const Model* m, const uint64_t* recent, uint64_t key, uint64_t h,
                               uint32_t* rank) noexcept nogil:
    """Whether the table of recent answers knows the pair ``key`` (hash ``h``); its rank (or
    UINT32_MAX: no merge) into ``rank``. A slot is a pair slot (see Model.pairs), rank all ones: none."""
    cdef uint64_t slot = recent[h & (RECENT_PAIRS - 1)]
    cdef uint64_t none = rank_mask(m)
    if (slot >> m.rank_bits) != key:
        return False
    rank[0] = UINT32_MAX if (slot & none) == none else <uint32_t>(slot & none)
    return True


cdef inline void remember_answer(const Model* m, uint64_t* recent, uint64_t key, uint64_t h,
                                 uint32_t rank) noexcept nogil:
    """Keep the rank of the pair ``key`` (UINT32_MAX: no merge) in the table of recent answers."""
    recent[h & (RECENT_PAIRS - 1)] = (key << m.rank_bits) | (rank_mask(m) if rank == UINT32_MAX else rank)


cdef inline uint32_t merged_id(const Model* m, uint32_t rank) noexcept nogil:
    """The token a merge of this rank makes (tiktoken: the rank itself)."""
    return m.merge_new[rank] if m.merge_new != NULL else rank >> m.rank_shift


cdef void fill_bloom(vector[uint64_t]& bloom, const vector[uint64_t]& slots, size_t count,
                     uint32_t rank_bits) noexcept:
    """One bit in each word of one 64-byte block per pair: about 16 bits a pair."""
    cdef size_t blocks = 1, i, mask, j
    cdef uint64_t h
    cdef uint64_t* block
    while blocks * 32 < count and blocks < (1 << 16):
        blocks <<= 1
    bloom.assign(8 * blocks, 0)
    mask = blocks - 1
    for i in range(slots.size()):
        if slots[i] == EMPTY_PAIR:
            continue
        h = mix64(slots[i] >> rank_bits)
        block = bloom.data() + 8 * ((h >> 48) & mask)
        for j in range(8):
            block[j] |= (<uint64_t>1) << ((h >> (6 * j)) & 63)


cdef void pair_put(const Model* m, vector[uint64_t]& slots, uint32_t a, uint32_t b, uint32_t rank,
                   bint keep_first) noexcept:
    cdef uint64_t key = pair_key(m, a, b)
    cdef size_t mask = slots.size() - 1
    cdef size_t i = mix64(key) & mask
    while slots[i] != EMPTY_PAIR and (slots[i] >> m.rank_bits) != key:
        i = (i + 1) & mask
    if slots[i] != EMPTY_PAIR and keep_first:
        return
    slots[i] = (key << m.rank_bits) | rank


# -- the vocabulary and the cache (byte strings -> values) -----------------------------


cdef inline const BytesSlot* vocab_find(const Model* m, const uint8_t* p, size_t n, uint64_t h) noexcept nogil:
    cdef size_t i = h & m.vocab_mask
    cdef const BytesSlot* s
    while True:
        s = &m.vocab[i]
        if s.hash == h and s.key_len == n:
            # Up to 8 bytes, equal hashes mean equal bytes (hash_bytes): no second cache
            # miss on the token's bytes, the look-up's costliest part on prose.
            if n <= HASH_KNOWS_KEY or memcmp(m.token_bytes + s.key_off, p, n) == 0:
                return s
        elif s.key_len == 0:
            return NULL
        i = (i + 1) & m.vocab_mask


cdef inline uint32_t hash_rest(uint64_t h) noexcept nogil:
    """The bits of the hash ``h`` a cache slot's tag leaves out: the top 16 and the lowest."""
    return <uint32_t>((h >> 48) << 1 | (h & 1))


cdef inline const BytesSlot* cache_find(PieceCache* c, const uint8_t* p, size_t n, uint64_t h) noexcept nogil:
    """The published slot of the piece ``p[:n]`` (hash ``h``), or NULL.

    A slot's fields are written before its hash is published (release), and
    read only after the hash is seen (acquire); a slot still being written
    reads as another key's, and one of an older generation as free. A key
    of up to 8 bytes is known by its whole hash (as in :func:`vocab_find`):
    the tag's bits and, in ``key_off``, the rest.
    """
    cdef size_t i = (h >> 17) & c.mask
    cdef const BytesSlot* s
    cdef uint64_t seen, want = (c.gen << 48) | ((h | 1) & LOW48)
    while True:
        s = &c.slots[i]
        seen = pw_load_acquire(&s.hash)
        if (seen >> 48) != c.gen:
            return NULL
        if seen == want and s.key_len == n:
            if n <= HASH_KNOWS_KEY:
                if s.key_off == hash_rest(h):
                    return s
            elif memcmp(c.keys + s.key_off, p, n) == 0:
                return s
        i = (i + 1) & c.mask


cdef void cache_clear(PieceCache* c) noexcept nogil:
    """Empty the cache (only while no thread uses it: see ``ByteBPE._checkout``): a new generation,
    so the slots need no writing (and no core's cache fills with them); every 65535th time, zeros."""
    c.epoch += 1
    c.gen += 1
    if c.gen > 0xFFFF:
        memset(c.slots, 0, (c.mask + 1) * sizeof(BytesSlot))
        c.gen = 1
    c.keys_used = c.ids_used = c.slots_used = 0


cdef bint cache_full(PieceCache* c) noexcept nogil:
    """Whether the slots (half of them: open addressing wants room) or an arena are all claimed."""
    return (2 * pw_load_relaxed(&c.slots_used) >= c.mask + 1 or pw_load_relaxed(&c.keys_used) >= c.key_cap
            or pw_load_relaxed(&c.ids_used) >= c.id_cap)


cdef bint claim_space(PieceCache* c, State* st, size_t n, size_t count) noexcept nogil:
    """Make room for a slot, ``n`` key bytes and ``count`` ids in this thread's blocks of the
    cache, claiming new blocks (one atomic add each) when they are used up; False if the cache is."""
    cdef size_t at
    if st.block_epoch != c.epoch:
        st.block_epoch = c.epoch
        st.key_at = st.key_end = st.id_at = st.id_end = st.slots_left = 0
    if st.slots_left == 0:
        at = pw_fetch_add(&c.slots_used, CACHE_SLOT_BLOCK)
        if 2 * (at + CACHE_SLOT_BLOCK) > c.mask + 1:
            return False
        st.slots_left = CACHE_SLOT_BLOCK
    if st.key_at + n > st.key_end:
        at = pw_fetch_add(&c.keys_used, CACHE_KEY_BLOCK)
        if at + CACHE_KEY_BLOCK > c.key_cap:
            return False
        st.key_at, st.key_end = at, at + CACHE_KEY_BLOCK
    if st.id_at + count > st.id_end:
        at = pw_fetch_add(&c.ids_used, CACHE_ID_BLOCK)
        if at + CACHE_ID_BLOCK > c.id_cap:
            return False
        st.id_at, st.id_end = at, at + CACHE_ID_BLOCK
    return True


cdef void cache_put(PieceCache* c, State* st, const uint8_t* p, size_t n, uint64_t h, const uint32_t* ids,
                    size_t count) noexcept nogil:
    """Add the piece ``p[:n]`` and its ``count`` ids, unless the cache is full.

    Threads add at once: each writes into its own blocks of the arenas
    (:func:`claim_space`) and claims a free slot with a compare-and-swap to
    busy, then publishes the hash. Two threads adding one piece make two
    slots; a look-up finds either.
    """
    cdef size_t key_at, id_at, i
    cdef size_t key_bytes = 0 if n <= HASH_KNOWS_KEY else n     # (a short key is known by its hash: see cache_find)
    cdef BytesSlot* s
    cdef uint64_t seen, tag = c.gen << 48
    if cache_full(c) or not claim_space(c, st, key_bytes, count):
        return
    key_at, id_at = st.key_at, st.id_at
    st.key_at += key_bytes
    st.id_at += count
    st.slots_left -= 1
    memcpy(c.keys + key_at, p, key_bytes)
    memcpy(c.ids + id_at, ids, 4 * count)
    i = (h >> 17) & c.mask
    while True:
        s = &c.slots[i]
        seen = pw_load_acquire(&s.hash)
        if (seen >> 48) != c.gen and pw_claim(&s.hash, seen, tag | CACHE_BUSY):
            break
        i = (i + 1) & c.mask
    s.key_off = hash_rest(h) if n <= HASH_KNOWS_KEY else <uint32_t>key_at
    s.key_len = <uint32_t>n
    s.value = <uint32_t>id_at
    s.count = <uint32_t>count
    pw_store_release(&s.hash, tag | ((h | 1) & LOW48))


# -- merging ---------------------------------------------------------------------------


cdef inline uint32_t token_len(const Model* m, uint32_t t) noexcept nogil:
    return m.token_off[t + 1] - m.token_off[t]


# A pair's rank and place in one word (see candidate); places below SCAN_MAX, so stretches
# up to SCAN_MAX symbols merge by a scan (merge_scan), longer ones through a heap (merge_heap).
cdef enum:
    PLACE_BITS = 7
    SCAN_MAX = 1 << PLACE_BITS
    PLACE_MASK = SCAN_MAX - 1

# A candidate that does not merge: above every rank (ranks stay below 2**25: ByteBPE._tie_bits).
cdef uint32_t NO_MERGE = UINT32_MAX << PLACE_BITS

# Candidates are kept with their top bit flipped, so the unsigned order of the words is the
# signed order of what is stored: the min over a stretch is then SSE2's signed compare, not
# an unsigned one built from it (half again as many instructions, and the min is most of a
# merge's work on a long piece).
cdef uint32_t FLIP = 1u << 31
cdef uint32_t NO_MERGE_KEPT = NO_MERGE ^ FLIP


cdef inline uint32_t candidate(uint32_t rank, uint32_t place) noexcept nogil:
    """A pair's rank and place in one word, kept flipped (see FLIP): the least of a stretch's is its
    next merge (the lowest rank, then the leftmost place: BPE's order), one min with no search after it.
    Rank 3 at place 5 is kept as ``(3 << PLACE_BITS | 5) ^ FLIP``."""
    return ((NO_MERGE if rank == UINT32_MAX else rank << PLACE_BITS) | place) ^ FLIP


cdef inline size_t candidate_width(size_t size) noexcept nogil:
    """The places :func:`least_candidate` reads for a stretch of ``size`` symbols: ``size`` rounded
    up to a multiple of 16 (places from ``size - 1`` on must hold NO_MERGE_KEPT)."""
    return (size + 15) & ~(<size_t>15)


cdef inline size_t close_candidates(uint32_t* cand, size_t size) noexcept nogil:
    """Fill ``cand`` from place ``size - 1`` (the last symbol: no pair) to the stretch's
    :func:`candidate_width` with NO_MERGE_KEPT; returns that width."""
    cdef size_t k, width = candidate_width(size)
    for k in range(size - 1, width):
        cand[k] = NO_MERGE_KEPT
    return width


cdef size_t merge_scan(const Model* m, uint32_t* syms, size_t cnt, uint32_t* cand, uint32_t* last,
                       uint64_t* recent) noexcept nogil:
    """Merge ``syms[:cnt]`` (at most SCAN_MAX) in place, lowest rank first, leftmost on ties;
    returns the new count. ``last`` receives the pair of the last merge.

    ``cand[k]`` holds the :func:`candidate` of the pair at ``k`` (``cand``
    has room for :func:`candidate_width` places): the least is the next
    merge, found by one min (:func:`least_candidate`) with no search after
    it. Symbols stay where they start, linked to their live neighbours: a merge marks its right one dead instead of
    moving the rest left, and costs two look-ups, for its new neighbours.
    """
    cdef uint8_t nxt[SCAN_MAX]
    cdef uint8_t prv[SCAN_MAX]
    cdef size_t k, best, nn, pv, width, live = cnt
    cdef uint32_t least
    if cnt < 2:
        return cnt
    for k in range(cnt):
        nxt[k] = <uint8_t>(k + 1)
        prv[k] = <uint8_t>(k - 1)       # (k = 0: 255, no place)
    for k in range(cnt - 1):
        cand[k] = candidate(pair_rank_cached(m, recent, syms[k], syms[k + 1]), <uint32_t>k)
    width = close_candidates(cand, cnt)
    while live > 1:
        least = least_candidate(cand, width)
        if least >= NO_MERGE:
            break
        last[0] = syms[least & PLACE_MASK]
        last[1] = syms[nxt[least & PLACE_MASK]]
        best = merge_least(m, syms, cand, nxt, prv, cnt, least, &nn)
        live -= 1
        if best > 0:
            pv = prv[best]
            cand[pv] = candidate(pair_rank_cached(m, recent, syms[pv], syms[best]), <uint32_t>pv)
        if nn < cnt:
            cand[best] = candidate(pair_rank_cached(m, recent, syms[best], syms[nn]), <uint32_t>best)
    compact_linked(syms, nxt, cnt, NULL)
    return live


cdef inline uint32_t least_candidate(const uint32_t* cand, size_t width) noexcept nogil:
    """The least of ``cand[:width]`` (a :func:`candidate_width`; the places past the last pair hold
    NO_MERGE_KEPT), unflipped: the next merge, or NO_MERGE or above. Four SSE2 registers' worth of
    places at a time, no branch, no scalar tail (a 31-place loop spent a third of its time on its tail)."""
    return pw_least_of(cand, width)


cdef inline size_t merge_least(const Model* m, uint32_t* syms, uint32_t* cand, uint8_t* nxt, uint8_t* prv,
                               size_t size, uint32_t least, size_t* after) noexcept nogil:
    """Do the merge the candidate ``least`` names, over symbols linked in place (``nxt``/``prv``;
    ``size`` past the last): its symbol takes the next one's place, which dies. Returns its place;
    ``after`` gets its new right neighbour (``size``: none), whose pair's candidate is left to the
    caller, as is the one on its left (set to NO_MERGE_KEPT here when there is no right neighbour)."""
    cdef size_t best = least & PLACE_MASK
    cdef size_t nx = nxt[best]
    cdef size_t nn = nxt[nx]
    syms[best] = merged_id(m, least >> PLACE_BITS)
    cand[nx] = NO_MERGE_KEPT
    nxt[best] = <uint8_t>nn
    if nn < size:
        prv[nn] = <uint8_t>best
    else:
        cand[best] = NO_MERGE_KEPT
    after[0] = nn
    return best


cdef inline size_t compact_linked(uint32_t* syms, const uint8_t* nxt, size_t size, uint8_t* starts) noexcept nogil:
    """Move the live symbols (linked from place 0) to the front; their first places into ``starts``
    (if not NULL). Returns how many live."""
    cdef size_t k = 0, c = 0
    while k < size:
        syms[c] = syms[k]
        if starts != NULL:
            starts[c] = <uint8_t>k
        c += 1
        k = nxt[k]
    return c


# Chunks of a long ASCII piece merged side by side (see merge_chunks).
cdef enum:
    GROUP = 8
    GROUP_CHUNK_MAX = 80    # bytes of one chunk at most (a last chunk is under CHUNK + CHUNK // 2)


cdef struct Lookup:
    uint64_t key            # a pair look-up under way: the pair, its hash, where its candidate goes
    uint64_t h
    uint32_t* target
    uint32_t place


cdef inline size_t ask_pair(const Model* m, uint64_t* recent, uint32_t a, uint32_t b, uint32_t* target,
                            uint32_t place, Lookup* pending) noexcept nogil:
    """Set ``*target`` to the candidate of ``a b`` at ``place`` if it is a pair of bytes (returns
    0); else describe the look-up in ``*pending``, start loading its slot of the table of recent
    answers, and return 1: :func:`recall_pair` and :func:`answer_pair` finish it, once the other
    chunks' look-ups are loading too."""
    cdef uint64_t key
    if (a | b) < 256:
        target[0] = candidate(m.low_pairs[(a << 8) | b], place)
        return 0
    key = pair_key(m, a, b)
    pending.key = key
    pending.h = mix64(key)
    pending.target = target
    pending.place = place
    pw_prefetch_read(recent + (pending.h & (RECENT_PAIRS - 1)))
    return 1


cdef inline bint recall_pair(const Model* m, const uint64_t* recent, const Lookup* q) noexcept nogil:
    """Answer a look-up from the table of recent answers (True), or start loading the Bloom filter's
    block and the pair table's slot it will read (False)."""
    cdef uint32_t r
    if recent_answer(m, recent, q.key, q.h, &r):
        q.target[0] = candidate(r, q.place)
        return True
    pw_prefetch_read(m.bloom + 8 * ((q.h >> 48) & m.bloom_mask))
    pw_prefetch_read(m.pairs + (q.h & m.pair_mask))
    return False


cdef inline void answer_pair(const Model* m, uint64_t* recent, const Lookup* q) noexcept nogil:
    """Finish a look-up the recent answers did not know, keeping its answer there."""
    cdef uint32_t r = pair_rank_h(m, q.key, q.h)
    remember_answer(m, recent, q.key, q.h, r)
    q.target[0] = candidate(r, q.place)


cdef inline void answer_all(const Model* m, uint64_t* recent, Lookup* pending, size_t n) noexcept nogil:
    """Finish ``pending[:n]`` in two sweeps: the recent answers first (the misses start loading),
    then the misses, kept at the front."""
    cdef size_t k, missed = 0
    for k in range(n):
        if not recall_pair(m, recent, &pending[k]):
            pending[missed] = pending[k]
            missed += 1
    for k in range(missed):
        answer_pair(m, recent, &pending[k])


cdef void merge_chunks(const Model* m, const uint8_t* p, const size_t* bounds, size_t count,
                       uint32_t (*syms)[GROUP_CHUNK_MAX], uint8_t (*starts)[GROUP_CHUNK_MAX], size_t* cnt,
                       uint64_t* recent) noexcept nogil:
    """:func:`merge_scan` of each of ``count`` (at most GROUP) chunks ``p[bounds[g]:bounds[g + 1]]``
    into ``syms[g][:cnt[g]]``, the chunks side by side: one merge of each in turn. Where each
    token starts in its chunk goes to ``starts[g][:cnt[g]]``.

    On text that never repeats (random letters), most pair look-ups miss
    the table of recent ones and wait for memory, one after another in a
    single chunk: each merge needs the ranks its last one made. The chunks
    do not depend on each other, so a round starts every chunk's look-ups
    loading before it reads any of them, and the waits overlap.

    Symbols stay where they start, linked to their live neighbours: a
    merge marks the right one dead instead of moving the rest left, and
    the next merge is the least candidate over all places (the dead ones
    never least), a min over four SSE2 registers at a time.
    """
    cdef uint32_t cand[GROUP][GROUP_CHUNK_MAX]
    cdef uint8_t nxt[GROUP][GROUP_CHUNK_MAX]
    cdef uint8_t prv[GROUP][GROUP_CHUNK_MAX]
    cdef size_t size[GROUP]
    cdef size_t width[GROUP]
    cdef Lookup pending[GROUP * GROUP_CHUNK_MAX]
    cdef bint live[GROUP]
    cdef size_t g, k, c, best, nn, pv, n_pending = 0, active = 0
    cdef uint32_t least
    for g in range(count):
        c = bounds[g + 1] - bounds[g]
        for k in range(c):
            syms[g][k] = <uint32_t>m.byte_id[p[bounds[g] + k]]
            nxt[g][k] = <uint8_t>(k + 1)
            prv[g][k] = <uint8_t>(k - 1)        # (k = 0: 255, no place)
        for k in range(c - 1):
            n_pending += ask_pair(m, recent, syms[g][k], syms[g][k + 1], &cand[g][k], <uint32_t>k,
                                  &pending[n_pending])
        width[g] = close_candidates(cand[g], c)
        size[g] = c
        cnt[g] = c
        live[g] = c > 1
        active += live[g]
    while True:
        answer_all(m, recent, pending, n_pending)
        n_pending = 0
        if active == 0:
            break
        for g in range(count):
            if not live[g]:
                continue
            least = least_candidate(cand[g], width[g])
            if least >= NO_MERGE:
                live[g] = False
                active -= 1
                continue
            best = merge_least(m, syms[g], cand[g], nxt[g], prv[g], size[g], least, &nn)
            cnt[g] -= 1
            if cnt[g] == 1:
                live[g] = False
                active -= 1
                continue
            if best > 0:
                pv = prv[g][best]
                n_pending += ask_pair(m, recent, syms[g][pv], syms[g][best], &cand[g][pv], <uint32_t>pv,
                                      &pending[n_pending])
            if nn < size[g]:
                n_pending += ask_pair(m, recent, syms[g][best], syms[g][nn], &cand[g][best], <uint32_t>best,
                                      &pending[n_pending])
    for g in range(count):
        compact_linked(syms[g], nxt[g], size[g], starts[g])


cdef inline bint heap_before(const HeapItem& a, const HeapItem& b) noexcept nogil:
    if a.rank != b.rank:
        return a.rank < b.rank
    return a.pos < b.pos


cdef void heap_push(vector[HeapItem]& heap, uint32_t rank, int32_t pos) noexcept nogil:
    cdef HeapItem item
    item.rank = rank
    item.pos = pos
    heap.push_back(item)
    cdef size_t i = heap.size() - 1, parent
    while i > 0:
        parent = (i - 1) >> 1
        if not heap_before(item, heap[parent]):
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = item


cdef HeapItem heap_pop(vector[HeapItem]& heap) noexcept nogil:
    cdef HeapItem top = heap[0]
    cdef HeapItem last = heap.back()
    heap.pop_back()
    cdef size_t n = heap.size(), i = 0, child
    if n == 0:
        return top
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and heap_before(heap[child + 1], heap[child]):
            child += 1
        if not heap_before(heap[child], last):
            break
        heap[i] = heap[child]
        i = child
    heap[i] = last
    return top


cdef void merge_heap(const Model* m, State* st, size_t n, vector[uint32_t]& out) noexcept nogil:
    """The merges of :func:`merge_scan` on ``st.syms[:n]`` through a heap of (rank, position)
    over linked symbols: O(n log n) for long stretches. Appends the result to ``out``."""
    cdef size_t k
    cdef int32_t pos, nx, pv
    cdef uint32_t v
    cdef HeapItem top
    st.prev.resize(n)
    st.next.resize(n)
    st.heap.clear()
    cdef uint32_t* syms = st.syms.data()
    cdef uint64_t* recent = st.recent.data()
    cdef int32_t* prv = st.prev.data()
    cdef int32_t* nxt = st.next.data()
    for k in range(n):
        prv[k] = <int32_t>k - 1
        nxt[k] = <int32_t>k + 1 if k + 1 < n else -1
    for k in range(n - 1):
        v = pair_rank_cached(m, recent, syms[k], syms[k + 1])
        if v != UINT32_MAX:
            heap_push(st.heap, v, <int32_t>k)
    while st.heap.size():
        top = heap_pop(st.heap)
        pos = top.pos
        if syms[pos] == DEAD or nxt[pos] == -1:
            continue
        nx = nxt[pos]
        # A stale entry: the pair here changed since it was pushed.
        if pair_rank_cached(m, recent, syms[pos], syms[nx]) != top.rank:
            continue
        st.last_merge[0] = syms[pos]
        st.last_merge[1] = syms[nx]
        syms[pos] = merged_id(m, top.rank)
        syms[nx] = DEAD
        nxt[pos] = nxt[nx]
        if nxt[pos] != -1:
            prv[nxt[pos]] = pos
        pv = prv[pos]
        if pv != -1:
            v = pair_rank_cached(m, recent, syms[pv], syms[pos])
            if v != UINT32_MAX:
                heap_push(st.heap, v, pv)
        if nxt[pos] != -1:
            v = pair_rank_cached(m, recent, syms[pos], syms[nxt[pos]])
            if v != UINT32_MAX:
                heap_push(st.heap, v, pos)
    pos = 0
    while pos != -1:
        out.push_back(syms[pos])
        pos = nxt[pos]


cdef void merge_syms(const Model* m, State* st, size_t n, vector[uint32_t]& out) noexcept nogil:
    """Merge ``st.syms[:n]`` (scan for short stretches, heap for long) and append to ``out``."""
    cdef size_t cnt
    if n <= SCAN_MAX:
        st.cand.resize(candidate_width(n))
        cnt = merge_scan(m, st.syms.data(), n, st.cand.data(), st.last_merge, st.recent.data())
        out.insert(out.end(), st.syms.data(), st.syms.data() + cnt)
    else:
        merge_heap(m, st, n, out)


cdef void bpe_plain(const Model* m, const uint8_t* p, size_t n, vector[uint32_t]& out,
                    State* st) noexcept nogil:
    """Plain BPE of ``p[:n]``, from its bytes (no whole-piece look-up), appended to ``out``."""
    cdef size_t k
    if n == 1:
        out.push_back(<uint32_t>m.byte_id[p[0]])
        return
    st.syms.resize(n)
    for k in range(n):
        st.syms[k] = <uint32_t>m.byte_id[p[k]]
    merge_syms(m, st, n, out)


cdef bint pair_ok(const Model* m, uint32_t x, uint32_t y, State* st) noexcept nogil:
    """Whether ``x y`` is the BPE encoding of its own bytes (no merge crosses between them).

    Without running BPE: replay the merges that built ``x`` and ``y``
    backwards, latest first (each token records the pair its last merge
    joined, and that merge's rank). While ``a`` ends the left part and ``b``
    starts the right one, the pair ``a b`` sits at the seam until the merge
    just undone absorbs one of them (``limit``); if ``a b`` merges at a lower
    rank, BPE would have merged it first and ``x y`` is not its output. On a
    tie the leftmost merge wins: the seam pair loses to a merge on its left
    and beats one on its right. This is the check of github/rust-gems ``bpe``,
    with ranks kept apart from ids so it also serves Hugging Face merges.
    """
    # Adjacent pairs repeat (common words in a row): remember recent answers.
    cdef uint64_t key = ((<uint64_t>x) << 21) | y
    cdef uint64_t* slot = st.seams.data() + (mix64(key ^ 0x5bd1e995) & (RECENT_SEAMS - 1))
    if (slot[0] >> 1) == key:
        return slot[0] & 1
    cdef bint valid = seam_holds(m, x, y, st)
    slot[0] = (key << 1) | valid
    return valid


cdef bint seam_holds(const Model* m, uint32_t x, uint32_t y, State* st) noexcept nogil:
    """:func:`pair_ok` without its table of answers: the replay, or BPE run on the two tokens
    when the replay cannot take one of them (see ``ByteBPE._mark_rebuilds``)."""
    if token_inexact(m, x) or token_inexact(m, y):
        return seam_by_bpe(m, x, y, st)
    return seam_valid(m, x, y, st, False)


cdef bint seam_by_bpe(const Model* m, uint32_t x, uint32_t y, State* st) noexcept nogil:
    """Whether plain BPE of the bytes of ``x`` then ``y`` gives ``x y``, by running it (for tokens
    whose merges are out of rank order, which the replay of :func:`seam_valid` cannot take)."""
    cdef const uint8_t* bx = m.token_bytes + m.token_off[x]
    cdef const uint8_t* by = m.token_bytes + m.token_off[y]
    st.pair_bytes.assign(bx, bx + token_len(m, x))
    st.pair_bytes.insert(st.pair_bytes.end(), by, by + token_len(m, y))
    st.pair_ids.clear()
    bpe_plain(m, st.pair_bytes.data(), st.pair_bytes.size(), st.pair_ids, st)
    return st.pair_ids.size() == 2 and st.pair_ids[0] == x and st.pair_ids[1] == y


cdef bint seam_valid(const Model* m, uint32_t x, uint32_t y, State* st, bint merging) noexcept nogil:
    """The replay of :func:`pair_ok` (for tokens whose merges are in rank order); ``merging``: whether
    BPE of the bytes of ``x y`` reaches ``x y`` and then merges it (only the steps before are checked)."""
    cdef uint32_t limit = UINT32_MAX, r, ra, rb
    cdef const TokenMerge* tm = m.token_merge
    if not (token_rebuilds(m, x) and token_rebuilds(m, y)):
        return False        # a token plain BPE never makes cannot be in its output
    while True:
        r = pair_rank_cached(m, st.recent.data(), x, y)
        if r < limit and not merging:
            return False
        merging = False
        ra = tm[x].rank
        rb = tm[y].rank
        if ra == 0 and rb == 0:
            return True
        if ra > rb:
            limit = ra - 1          # the seam pair lasts until x's last merge absorbs its right part
            x = tm[x].right
        else:
            limit = rb              # ... or until y's last merge, which wins a tie (it is on the right)
            y = tm[y].left


cdef size_t repair_seam(const Model* m, const uint8_t* p, size_t n, size_t seam, vector[uint32_t]* ids,
                        vector[uint32_t]* pos, State* st) noexcept nogil:
    """Make the tokens ``ids`` (starting at bytes ``pos``, covering ``p[:n]``) valid across
    ``seam`` (between tokens ``seam - 1`` and ``seam``); returns the index of the first token
    after the re-encoded stretch.

    Tokens ``[lo, hi)`` around the seam are re-encoded from their bytes; if a
    seam of that stretch with its outer neighbours fails, the stretch grows on
    that side by its own width, so the work stays O(n log n) at worst.
    """
    cdef size_t total = ids.size()
    cdef size_t lo = seam - 1, hi = seam + 1, width, begin, end, k
    cdef bint left_ok, right_ok
    while True:
        begin = pos[0][lo]
        end = pos[0][hi] if hi < total else n
        st.region.clear()
        bpe_plain(m, p + begin, end - begin, st.region, st)
        left_ok = lo == 0 or pair_ok(m, ids[0][lo - 1], st.region[0], st)
        right_ok = hi >= total or pair_ok(m, st.region.back(), ids[0][hi], st)
        if left_ok and right_ok:
            break
        width = hi - lo
        if not left_ok:
            lo = lo - width if lo > width else 0
        if not right_ok:
            hi = hi + width if hi + width < total else total
    ids.erase(ids.begin() + lo, ids.begin() + hi)
    ids.insert(ids.begin() + lo, st.region.begin(), st.region.end())
    pos.erase(pos.begin() + lo, pos.begin() + hi)
    for k in range(st.region.size()):
        pos.insert(pos.begin() + lo + k, <uint32_t>begin)
        begin += token_len(m, st.region[k])
    return lo + st.region.size()


cdef inline size_t char_length(const uint8_t* p, size_t n) noexcept nogil:
    """Bytes in the UTF-8 char at ``p`` (1 for a stray byte; never more than ``n``)."""
    cdef uint8_t b = p[0]
    cdef size_t want = 1 if b < 0xC0 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
    cdef size_t k = 1
    while k < want and k < n and (p[k] & 0xC0) == 0x80:
        k += 1
    return k


cdef inline uint64_t char_key(const uint8_t* p, size_t n) noexcept nogil:
    """One char's ``n`` bytes (at most 4) and its width in one word: a key no other char has, never 0."""
    cdef uint64_t key = n
    cdef size_t k
    for k in range(n):
        key |= (<uint64_t>p[k]) << (8 * k + 8)
    return key


cdef void char_tokens(const Model* m, const uint8_t* p, size_t n, State* st) noexcept nogil:
    """Append the BPE of one char's bytes to ``st.syms`` (through a small cache by char)."""
    cdef uint64_t key = char_key(p, n)
    cdef size_t k
    cdef CharEntry* e = &st.chars[mix64(key) & (CHAR_SLOTS - 1)]
    if e.key != key:
        st.char_ids.clear()
        bpe_plain(m, p, n, st.char_ids, st)
        e.key = key
        e.count = <uint32_t>st.char_ids.size()
        for k in range(e.count):
            e.ids[k] = st.char_ids[k]
    for k in range(e.count):
        st.char_syms.push_back(e.ids[k])


cdef void bpe_text(const Model* m, const uint8_t* p, size_t n, vector[uint32_t]& out, State* st) noexcept nogil:
    """Exact BPE of ``p[:n]``; text with multi-byte chars takes a faster route.

    Merging bytes costs two look-ups per merge, and CJK or Thai text has two
    merges inside each char before any between chars. So each char is encoded
    alone first (cached by char), and the merges run from those tokens. That
    is a guess, not BPE: a merge across a char could have come first. The
    guess is then checked seam by seam (see the module doc), and a seam that
    fails is re-encoded from its bytes, so the result is exact.
    """
    cdef size_t k = 0, step, first
    cdef bint ascii = True
    for k in range(n):
        if p[k] & 0x80:
            ascii = False
            break
    if ascii or n < 4:
        bpe_plain(m, p, n, out, st)
        return
    st.char_syms.clear()
    k = 0
    while k < n:
        step = char_length(p + k, n - k)
        char_tokens(m, p + k, step, st)
        k += step
    st.syms.assign(st.char_syms.begin(), st.char_syms.end())
    st.guess.clear()
    merge_syms(m, st, st.syms.size(), st.guess)
    if st.guess.size() == 1:
        if not token_rebuilds(m, st.guess[0]):
            bpe_plain(m, p, n, out, st)
            return
        out.push_back(st.guess[0])
        return
    st.guess_pos.clear()
    first = 0
    for k in range(st.guess.size()):
        st.guess_pos.push_back(<uint32_t>first)
        first += token_len(m, st.guess[k])
    k = 1
    while k < st.guess.size():
        if pair_ok(m, st.guess[k - 1], st.guess[k], st):
            k += 1
        else:
            k = repair_seam(m, p, n, k, &st.guess, &st.guess_pos, st) + 1
    out.insert(out.end(), st.guess.begin(), st.guess.end())


cdef inline bint token_rebuilds(const Model* m, uint32_t t) noexcept nogil:
    """Whether plain BPE of the token's bytes gives the token (it can be a BPE output)."""
    return m.rebuilds[t >> 3] >> (t & 7) & 1


cdef inline bint token_inexact(const Model* m, uint32_t t) noexcept nogil:
    """Whether the merges that make the token are out of rank order (its seams are checked by BPE)."""
    return m.any_inexact and m.inexact[t >> 3] >> (t & 7) & 1


cdef void bpe_cached(const Model* m, const uint8_t* p, size_t n, uint64_t h, vector[uint32_t]& out,
                     State* st) noexcept nogil:
    """:func:`bpe_text` through the cache (``h``: the hash of the bytes, or 0 to compute it)."""
    cdef const BytesSlot* hit
    cdef size_t first
    if n > CACHE_MAX_KEY or n == 1:
        bpe_text(m, p, n, out, st)
        return
    if h == 0:
        h = hash_bytes(p, n)
    hit = cache_find(m.cache, p, n, h)
    if hit != NULL:
        out.insert(out.end(), m.cache.ids + hit.value, m.cache.ids + hit.value + hit.count)
        return
    first = out.size()
    bpe_text(m, p, n, out, st)
    cache_put(m.cache, st, p, n, h, out.data() + first, out.size() - first)


cdef uint32_t run_token(const Model* m, const uint8_t* unit, size_t width, State* st) noexcept nogil:
    """The token a long run of the char ``unit[:width]`` is cut into, or DEAD: the longest run of
    it that is a token BPE makes (it rebuilds) and whose copies stay apart (``pair_ok(t, t)``),
    so that copies of it are the BPE of their bytes; remembered per workspace. That may be the
    char alone, when no longer run of it is such a token (a combining mark, in most vocabularies:
    then each copy is one char, instead of a megabyte of them merged and checked char by char).

    (Only long runs ask: what the copies meet at either end is checked as any seam is.)
    """
    cdef uint8_t run[RUN_MAX_TOKEN]
    cdef const BytesSlot* hit
    cdef uint64_t key = char_key(unit, width)
    cdef size_t j, k
    cdef size_t slot = mix64(key) & (RUN_SLOTS - 1)
    if st.run_keys[slot] == key:
        return st.run_tokens[slot]
    for k in range(RUN_MAX_TOKEN // width):
        memcpy(run + k * width, unit, width)
    st.run_keys[slot] = key
    st.run_tokens[slot] = DEAD
    j = min(<size_t>m.max_token_len, <size_t>RUN_MAX_TOKEN) // width * width
    while j >= width:
        hit = vocab_find(m, run, j, hash_bytes(run, j))
        if hit != NULL and token_rebuilds(m, hit.value) and pair_ok(m, hit.value, hit.value, st):
            st.run_tokens[slot] = hit.value
            break
        j -= width
    return st.run_tokens[slot]


cdef inline size_t run_length(const uint8_t* p, size_t n, size_t width) noexcept nogil:
    """How many bytes from ``p`` (at most ``n``) repeat its first char (``width`` bytes), in whole chars."""
    cdef size_t k = width
    while k < n and p[k] == p[k - width]:
        k += 1
    return k // width * width


cdef inline bint run_may_start(const uint8_t* p, size_t start, size_t n, size_t width) noexcept nogil:
    """:func:`encode_run`'s first test at ``start``, a char of ``width`` bytes: at least RUN_MIN bytes
    left, the next 8 bytes repeating the char, and the char CHUNK bytes on the same; False rules out
    a run there. (The char CHUNK bytes on alone held at every chunk of text with a period that
    divides CHUNK, as " \t\n" repeated: each chunk then ended its group, merged on its own.)"""
    return (n - start >= RUN_MIN and memcmp(p + start, p + start + width, 8) == 0
            and p[start + CHUNK // width * width] == p[start])


cdef size_t encode_run(const Model* m, const uint8_t* p, size_t start, size_t n, vector[uint32_t]* ids,
                       vector[uint32_t]* pos, State* st) noexcept nogil:
    """Copies of :func:`run_token` for the run of one char at ``p[start:]`` (a char's start), if it
    is long; the bytes covered (0: none). At least CHUNK bytes of the run are left to BPE, which
    ends it, and the seam with the tokens before is checked and repaired as a chunk's is.
    """
    cdef size_t r, count, k, first, width, length
    cdef uint32_t t
    if n - start < RUN_MIN:
        return 0
    width = char_length(p + start, n - start)
    if (not run_may_start(p, start, n, width)
            or run_length(p + start, min(n - start, RUN_MIN + width), width) < RUN_MIN):
        return 0    # (most chunks of a long piece: no run; whole chars, so RUN_MIN + width bytes are read)
    t = run_token(m, p + start, width, st)
    if t == DEAD:
        return 0    # (before the whole run's length: chunk after chunk of one run asks again)
    r = run_length(p + start, n - start, width)
    length = token_len(m, t)
    count = (r - CHUNK) // length
    if count == 0:
        return 0
    first = ids.size()
    for k in range(count):
        ids.push_back(t)
        pos.push_back(<uint32_t>(start + k * length))
    if first > 0 and not pair_ok(m, ids[0][first - 1], t, st):
        repair_seam(m, p, start + count * length, first, ids, pos, st)
    return count * length


cdef size_t next_run(const uint8_t* p, size_t start, size_t n) noexcept nogil:
    """Where the first run of one char of at least RUN_MIN bytes begins after ``start``
    (both char starts), or ``n``; a run that begins at ``start`` is passed over."""
    cdef size_t k = start, width, r
    while k < n:
        width = char_length(p + k, n - k)
        r = run_length(p + k, n - k, width) if k + width < n and p[k + width] == p[k] else width
        if r >= RUN_MIN and k > start:
            return k
        k += r
    return n


cdef size_t encode_chunks(const Model* m, const uint8_t* p, size_t start, size_t n, vector[uint32_t]* ids,
                          vector[uint32_t]* pos, State* st) noexcept nogil:
    """Encode up to GROUP chunks of the ASCII piece ``p[:n]`` from ``start`` (about CHUNK bytes
    each, the last one taking a short rest) with :func:`merge_chunks`, append their tokens, check
    and repair their seams; returns where the next chunk starts.

    A chunk start where a long run might begin ends the group: the caller
    tries :func:`encode_run` there, as it does at every chunk start.
    """
    cdef size_t bounds[GROUP + 1]
    cdef uint32_t syms[GROUP][GROUP_CHUNK_MAX]
    cdef uint8_t starts[GROUP][GROUP_CHUNK_MAX]
    cdef size_t cnt[GROUP]
    cdef size_t count = 0, s = start, e, g, k, first
    bounds[0] = start
    while count < GROUP and s < n:
        if count > 0 and run_may_start(p, s, n, 1):
            break
        e = s + CHUNK
        if e + CHUNK // 2 >= n:
            e = n
        count += 1
        bounds[count] = e
        s = e
    merge_chunks(m, p, bounds, count, syms, starts, cnt, st.recent.data())
    for g in range(count):
        first = ids.size()
        ids.insert(ids.end(), &syms[g][0], &syms[g][0] + cnt[g])
        for k in range(cnt[g]):
            pos.push_back(<uint32_t>(bounds[g] + starts[g][k]))
        if first > 0 and not pair_ok(m, ids[0][first - 1], ids[0][first], st):
            repair_seam(m, p, bounds[g + 1], first, ids, pos, st)
    return bounds[count]


cdef void encode_long(const Model* m, const uint8_t* p, size_t n, vector[uint32_t]& out,
                      State* st) noexcept nogil:
    """BPE of a long piece: chunks encoded alone, seams checked and repaired (see the module doc).

    Pieces with multi-byte chars go to :func:`bpe_text` whole instead, but for
    their long runs of one char, which are cut into copies of a token.
    """
    cdef vector[uint32_t]* ids = &st.piece_ids
    cdef vector[uint32_t]* pos = &st.piece_pos
    cdef size_t start = 0, end, first, k, b, step
    cdef bint ascii = True
    for k in range(n):
        if p[k] & 0x80:
            ascii = False
            break
    if not ascii and next_run(p, 0, n) == n and run_length(p, n, char_length(p, n)) < RUN_MIN:
        # Text with multi-byte chars: the guess from whole chars (bpe_text) is
        # nearly always right, while chunk seams cut words and fail often.
        bpe_text(m, p, n, out, st)
        return
    ids.clear()
    pos.clear()
    if ascii and ids.capacity() < n:
        # At most a token a byte: no growing (and copying) a megabyte's tokens piece by piece.
        ids.reserve(n)
        pos.reserve(n)
    while start < n:
        step = encode_run(m, p, start, n, ids, pos, st)
        if step:
            start += step
            continue
        if ascii:
            start = encode_chunks(m, p, start, n, ids, pos, st)
            continue
        end = next_run(p, start, n)
        first = ids.size()
        # Not cached: chunks of long pieces seldom repeat, and would push out pieces that do.
        bpe_text(m, p + start, end - start, ids[0], st)
        b = start
        for k in range(first, ids.size()):
            pos.push_back(<uint32_t>b)
            b += token_len(m, ids[0][k])
        if first > 0 and not pair_ok(m, ids[0][first - 1], ids[0][first], st):
            repair_seam(m, p, end, first, ids, pos, st)
        start = end
    out.insert(out.end(), ids.begin(), ids.end())


cdef void dropout_piece(const Model* m, const uint8_t* p, size_t n, vector[uint32_t]& out,
                        State* st) noexcept nogil:
    """The ids of one piece under BPE-dropout: its bytes' tokens merged as the general path
    merges them (``bpe_encode.merge_heap``, Hugging Face's ``merge_all``: no cache, no whole-piece
    look-up), drawing from the same generator, so that one seeded model gives the same ids either way."""
    cdef size_t i
    cdef vector[Symbol]* syms = &st.drop_syms
    syms.resize(n)
    for i in range(n):
        syms[0][i].id = <int32_t>m.byte_id[p[i]]
        syms[0][i].nbytes = 1
        syms[0][i].alive = True
    merge_like_hugging_face(m.drop_merges, m.drop_made_by, m.drop_rng, m.dropout, syms[0], NULL)
    for i in range(syms.size()):
        out.push_back(<uint32_t>syms[0][i].id)


cdef void encode_piece(const Model* m, const uint8_t* p, size_t n, vector[uint32_t]& out,
                       State* st) noexcept nogil:
    """The ids of one pre-tokenized piece (``n >= 1`` bytes), appended to ``out``."""
    cdef uint64_t h
    cdef const BytesSlot* hit
    if m.drop_merges != NULL:
        dropout_piece(m, p, n, out, st)
        return
    if n == 1:
        out.push_back(<uint32_t>m.byte_id[p[0]])
        return
    if n > LONG_PIECE:
        if m.whole_piece and n <= m.max_token_len:
            hit = vocab_find(m, p, n, hash_bytes(p, n))
            if hit != NULL:
                out.push_back(hit.value)
                return
        encode_long(m, p, n, out, st)
        return
    h = hash_bytes(p, n)
    if n <= m.max_token_len:
        hit = vocab_find(m, p, n, h)
        if hit != NULL and (m.whole_piece or token_rebuilds(m, hit.value)):
            out.push_back(hit.value)
            return
    bpe_cached(m, p, n, h, out, st)


# -- the scanners ------------------------------------------------------------------------
# Each returns the end of the piece that starts at i (i < n); pieces cover the text.


cdef inline Py_ssize_t run_of(const char_t* s, Py_ssize_t i, Py_ssize_t n, const uint8_t* cls,
                              uint8_t want) noexcept nogil:
    """End of the run from ``i`` of chars whose (whitespace, letter, number) bits equal ``want``."""
    while i < n and (cls[s[i]] & K_WLN) == want:
        i += 1
    return i


cdef inline Py_ssize_t run_newlines(const char_t* s, Py_ssize_t i, Py_ssize_t n, bint slash) noexcept nogil:
    """``[\\r\\n]*`` (``[\\r\\n/]*`` with ``slash``) from ``i``."""
    while i < n and (s[i] == 10 or s[i] == 13 or (slash and s[i] == 47)):
        i += 1
    return i


cdef inline Py_ssize_t contraction(const char_t* s, Py_ssize_t i, Py_ssize_t n, bint any_case) noexcept nogil:
    """Length of ``'s|'t|'re|'ve|'m|'ll|'d`` at ``i`` (0: none); ``any_case`` for ``(?i:...)``.

    Case-insensitive matching folds case as the regex engines do: only
    ASCII letters and U+017F (long s, which folds to s) are involved.
    """
    cdef uint32_t c1, c2
    if i + 1 >= n or s[i] != 39:
        return 0
    c1 = s[i + 1]
    if any_case:
        if c1 == 0x17F:
            return 2
        if 65 <= c1 <= 90:
            c1 += 32
    if c1 == 115 or c1 == 116 or c1 == 109 or c1 == 100:    # s t m d
        return 2
    if i + 2 >= n:
        return 0
    c2 = s[i + 2]
    if any_case and 65 <= c2 <= 90:
        c2 += 32
    if (c2 == 101 and (c1 == 114 or c1 == 118)) or (c1 == 108 and c2 == 108):    # re ve ll
        return 3
    return 0


cdef inline Py_ssize_t blanks(const char_t* s, Py_ssize_t i, Py_ssize_t n, const uint8_t* cls,
                              bint newline_rule, bint end_rule) noexcept nogil:
    """The whitespace alternatives at ``i`` (a whitespace char), after the others failed.

    ``\\s++$`` (``end_rule``): a run that reaches the end is one piece.
    ``\\s*[\\r\\n]+`` (``newline_rule``): ``\\s*`` backtracks from the end of the
    run to its last CR/LF, so the piece ends just after that.
    ``\\s+(?!\\S)``: the run minus its last char when a non-space follows (that
    char starts the next piece), or the whole run at the end of the text.
    ``\\s+``: a run of one char followed by a non-space.
    """
    cdef Py_ssize_t j = i + 1, k
    while j < n and (cls[s[j]] & K_WS):
        j += 1
    if end_rule and j == n:
        return n
    if newline_rule:
        k = j - 1
        while k >= i:
            if s[k] == 10 or s[k] == 13:
                return k + 1
            k -= 1
    if j == n or j - i == 1:
        return j
    return j - 1


cdef inline Py_ssize_t next_gpt2(const char_t* s, Py_ssize_t i, Py_ssize_t n, const uint8_t* cls) noexcept nogil:
    # 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    # A char is a letter, a number, whitespace or "other" (exactly one), so after
    # the contractions the pattern is: an optional space and a run of one class,
    # else the whitespace alternatives.
    cdef uint32_t c = s[i]
    cdef uint8_t k
    cdef Py_ssize_t length
    if c == 39:
        length = contraction(s, i, n, False)
        if length:
            return i + length
    if c == 32 and i + 1 < n:
        k = cls[s[i + 1]] & K_WLN
        if k != K_WS:
            return run_of(s, i + 2, n, cls, k)
    k = cls[c] & K_WLN
    if k != K_WS:
        return run_of(s, i + 1, n, cls, k)
    return blanks(s, i, n, cls, False, False)


cdef inline Py_ssize_t next_cl100k(const char_t* s, Py_ssize_t i, Py_ssize_t n, const uint8_t* cls,
                                   Py_ssize_t max_digits, bint end_rule) noexcept nogil:
    # (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
    # |\s*[\r\n]+|\s+(?!\S)|\s+          (Qwen: \p{N} instead of \p{N}{1,3})
    # `[^\r\n\p{L}\p{N}]?\p{L}+`: a letter run, or one char that is neither a
    # letter, a number nor CR/LF (a space, punctuation...) followed by one.
    cdef uint32_t c = s[i]
    cdef uint8_t k = cls[c] & K_WLN
    cdef Py_ssize_t j
    if c == 39:
        j = contraction(s, i, n, True)
        if j:
            return i + j
    if k == K_L:
        return run_of(s, i + 1, n, cls, K_L)
    if k != K_N and c != 10 and c != 13 and i + 1 < n and (cls[s[i + 1]] & K_WLN) == K_L:
        return run_of(s, i + 2, n, cls, K_L)
    if k == K_N:
        j = i + 1
        while j < n and j - i < max_digits and (cls[s[j]] & K_N):
            j += 1
        return j
    if c == 32 and i + 1 < n and (cls[s[i + 1]] & K_WLN) == 0:
        return run_newlines(s, run_of(s, i + 2, n, cls, 0), n, False)
    if k == 0:
        return run_newlines(s, run_of(s, i + 1, n, cls, 0), n, False)
    return blanks(s, i, n, cls, True, end_rule)


cdef inline Py_ssize_t o200k_lower_word(const char_t* s, Py_ssize_t p, Py_ssize_t n,
                                        const uint8_t* cls) noexcept nogil:
    # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|...)? from p: its end, or -1.
    # The first class (UP) runs greedily to q. If s[q] is in the second class (LO)
    # it is Ll, and LO+ runs on from it. Otherwise UP* backtracks: LO+ can only
    # take one char, the last char before q that is in both classes (Lm, Lo, M).
    cdef Py_ssize_t q = p, r
    while q < n and (cls[s[q]] & K_UP):
        q += 1
    if q < n and (cls[s[q]] & K_LO):
        r = q + 1
        while r < n and (cls[s[r]] & K_LO):
            r += 1
        return r + contraction(s, r, n, True)
    r = q - 1
    while r >= p and not (cls[s[r]] & K_LO):
        r -= 1
    if r < p:
        return -1
    return r + 1 + contraction(s, r + 1, n, True)


cdef inline Py_ssize_t o200k_upper_word(const char_t* s, Py_ssize_t p, Py_ssize_t n,
                                        const uint8_t* cls) noexcept nogil:
    # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...)? from p: its end, or -1.
    cdef Py_ssize_t q = p
    while q < n and (cls[s[q]] & K_UP):
        q += 1
    if q == p:
        return -1
    while q < n and (cls[s[q]] & K_LO):
        q += 1
    return q + contraction(s, q, n, True)


cdef inline Py_ssize_t next_o200k(const char_t* s, Py_ssize_t i, Py_ssize_t n, const uint8_t* cls) noexcept nogil:
    # [^\r\n\p{L}\p{N}]?[UP]*[LO]+C?|[^\r\n\p{L}\p{N}]?[UP]+[LO]*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*
    # |\s*[\r\n]+|\s+(?!\S)|\s+         (UP, LO: see o200k_*_word; C: the contractions)
    # Each of the first two alternatives tries its optional first char taken,
    # then not taken (a mark can be both that char and part of the word).
    cdef uint32_t c = s[i]
    cdef uint8_t k = cls[c]
    cdef bint optional_first = c != 10 and c != 13 and not (k & (K_L | K_N))
    cdef Py_ssize_t e
    if optional_first:
        e = o200k_lower_word(s, i + 1, n, cls)
        if e >= 0:
            return e
    e = o200k_lower_word(s, i, n, cls)
    if e >= 0:
        return e
    if optional_first:
        e = o200k_upper_word(s, i + 1, n, cls)
        if e >= 0:
            return e
    e = o200k_upper_word(s, i, n, cls)
    if e >= 0:
        return e
    k &= K_WLN
    if k == K_N:
        e = i + 1
        while e < n and e - i < 3 and (cls[s[e]] & K_N):
            e += 1
        return e
    if c == 32 and i + 1 < n and (cls[s[i + 1]] & K_WLN) == 0:
        return run_newlines(s, run_of(s, i + 2, n, cls, 0), n, True)
    if k == 0:
        return run_newlines(s, run_of(s, i + 1, n, cls, 0), n, True)
    return blanks(s, i, n, cls, True, False)


cdef inline Py_ssize_t next_piece(int pattern, const char_t* s, Py_ssize_t i, Py_ssize_t n,
                                  const uint8_t* cls) noexcept nogil:
    if pattern == PAT_CL100K:
        return next_cl100k(s, i, n, cls, 3, False)
    if pattern == PAT_O200K:
        return next_o200k(s, i, n, cls)
    if pattern == PAT_GPT2:
        return next_gpt2(s, i, n, cls)
    if pattern == PAT_QWEN2:
        return next_cl100k(s, i, n, cls, 1, False)
    if pattern == PAT_CL100K_EOT:
        return next_cl100k(s, i, n, cls, 3, True)
    return n


cdef Py_ssize_t safe_cut(const uint8_t* cls, int kind, const void* data, Py_ssize_t n, Py_ssize_t lo,
                         Py_ssize_t hi, bint gpt2) noexcept nogil:
    r"""The first place ``p`` in ``lo..hi`` (and ``2 <= p < n``) where the scanner's pieces end
    whatever follows, or -1: a letter after a line feed (under GPT-2's pattern, a line feed
    after a char that is not white space).

    Cutting the text there and scanning the two parts alone gives the same
    pieces as scanning it whole. No pattern lets a piece take a letter after
    a line feed (the letters' optional lead char is never one). The white
    space before the letter ends in the line feed, so cl100k's, o200k's and
    Qwen's ``\s*[\r\n]+`` (tiktoken's ``\s*[\r\n]``, or ``\s++$`` at the
    part's end) takes all of it from wherever a piece starts in it, in the
    part as in the whole text. GPT-2's ``\s+(?!\S)`` would take two blanks
    at the part's end where the whole text gives two pieces: there the line
    feed must be the only blank.
    """
    cdef Py_ssize_t p
    if lo < 2:
        lo = 2
    if hi > n - 1:
        hi = n - 1
    for p in range(lo, hi + 1):
        if (code_point(kind, data, p - 1) == 10 and (cls[code_point(kind, data, p)] & K_L)
                and not (gpt2 and (cls[code_point(kind, data, p - 2)] & K_WS))):
            return p
    return -1


# -- text -> pieces -> ids -----------------------------------------------------------------


cdef inline int utf8_put(uint32_t c, uint8_t* out) noexcept nogil:
    # Lone surrogates get their 3-byte form, as "surrogatepass" gives.
    if c < 0x80:
        out[0] = <uint8_t>c
        return 1
    if c < 0x800:
        out[0] = <uint8_t>(0xC0 | (c >> 6))
        out[1] = <uint8_t>(0x80 | (c & 0x3F))
        return 2
    if c < 0x10000:
        out[0] = <uint8_t>(0xE0 | (c >> 12))
        out[1] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
        out[2] = <uint8_t>(0x80 | (c & 0x3F))
        return 3
    out[0] = <uint8_t>(0xF0 | (c >> 18))
    out[1] = <uint8_t>(0x80 | ((c >> 12) & 0x3F))
    out[2] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
    out[3] = <uint8_t>(0x80 | (c & 0x3F))
    return 4


cdef size_t piece_to_utf8(const char_t* s, Py_ssize_t i, Py_ssize_t j, State* st) noexcept nogil:
    """UTF-8 of chars ``[i, j)`` into ``st.buf``."""
    cdef size_t need = 4 * <size_t>(j - i), used = 0
    cdef Py_ssize_t k
    if st.buf.size() < need:
        st.buf.resize(need)
    cdef uint8_t* out = st.buf.data()
    for k in range(i, j):
        used += utf8_put(s[k], out + used)
    return used


cdef Py_ssize_t scan_and_encode(const Model* m, const char_t* s, Py_ssize_t n, bint ascii, State* st,
                                bint one_piece) noexcept nogil:
    """Encode ``s[:n]`` into ``st``; returns the number of pieces.

    Where the pieces end is not kept: :func:`spans_of_ids` scans them
    again, if the offsets are read (pushing each piece's end here cost
    a batch of lines 6%, for what most callers never read).
    """
    cdef Py_ssize_t i = 0, j
    cdef Py_ssize_t pieces = 0
    cdef size_t length
    cdef int pattern = PAT_PIECES if one_piece else m.pattern
    cdef const uint8_t* cls = m.classes
    cdef bint utf8_already = False      # ASCII text in one byte per char: its chars are its UTF-8
    if char_t is uint8_t:
        utf8_already = ascii
    while i < n:
        j = next_piece(pattern, s, i, n, cls)
        if utf8_already:
            encode_piece(m, <const uint8_t*>(s + i), <size_t>(j - i), st.ids, st)
        else:
            length = piece_to_utf8(s, i, j, st)
            encode_piece(m, st.buf.data(), length, st.ids, st)
        pieces += 1
        i = j
    return pieces


cdef Py_ssize_t encode_str(const Model* m, int kind, const void* data, Py_ssize_t n, bint ascii,
                           State* st, bint one_piece) noexcept nogil:
    if kind == 1:
        return scan_and_encode(m, <const uint8_t*>data, n, ascii, st, one_piece)
    if kind == 2:
        return scan_and_encode(m, <const uint16_t*>data, n, False, st, one_piece)
    return scan_and_encode(m, <const uint32_t*>data, n, False, st, one_piece)


cdef Py_ssize_t cut_and_encode(const Model* m, const CutStage* stages, size_t n_stages, search_t search,
                               const void* data, Py_ssize_t n, int kind, bint ascii, Region* region, State* st,
                               vector[uint8_t]* utf8, vector[Py_ssize_t]* ends, vector[Py_ssize_t]* scratch,
                               vector[int32_t]* spans, int32_t char_base, int32_t word_base) noexcept nogil:
    """Cut the str ``data[:n]`` (its PEP 393 form) with ``stages`` and append its tokens to
    ``st.ids``, and each token's start, end (chars, plus ``char_base``) and piece (plus
    ``word_base``) to ``spans``; the number of pieces, or a search's (negative) error code,
    nothing appended."""
    cdef const unsigned char* p
    cdef Py_ssize_t size = 0, k, piece_start = 0
    cdef size_t first = st.ids.size(), t
    cdef int found
    if kind == 1 and ascii:
        p = <const unsigned char*>data
        size = n
    else:
        for k in range(n):      # (its exact size: a long text's buffer is not made four times too big)
            size += <Py_ssize_t>utf8_length(code_point(kind, data, k))
        utf8.resize(size + 1)
        size = 0
        for k in range(n):
            size += utf8_put(code_point(kind, data, k), utf8.data() + size)
        p = utf8.data()
    found = cut_text(stages, n_stages, search, p, size, region, ends, scratch)
    if found < 0:
        return found
    if m.end_mark or any_removed(ends):
        return encode_pieces_apart(m, p, kind == 1 and ascii, ends, st, spans, char_base, word_base)
    for k in range(<Py_ssize_t>ends.size()):
        encode_piece(m, p + piece_start, <size_t>(deref(ends)[k] - piece_start), st.ids, st)
        for t in range(spans.size() // 3, st.ids.size()):
            spans.push_back(0)
            spans.push_back(0)
            spans.push_back(word_base + <int32_t>k)
        piece_start = deref(ends)[k]
    token_spans(m, p, kind == 1 and ascii, st.ids.data() + first, st.ids.size() - first,
                spans.data() + 3 * first, char_base)
    return <Py_ssize_t>ends.size()


cdef inline bint any_removed(const vector[Py_ssize_t]* ends) noexcept nogil:
    """Whether a Split that removes took a piece out of ``ends`` (see onig_spans.cut_text)."""
    cdef size_t k
    for k in range(ends.size()):
        if deref(ends)[k] & PW_PIECE_REMOVED:
            return True
    return False


cdef Py_ssize_t encode_pieces_apart(const Model* m, const unsigned char* p, bint ascii,
                                    const vector[Py_ssize_t]* ends, State* st, vector[int32_t]* spans,
                                    int32_t char_base, int32_t word_base) noexcept nogil:
    """:func:`cut_and_encode`'s pieces, each encoded and its tokens' spans worked out on its own,
    for pieces whose tokens do not spell the text's bytes in order: a removed piece
    (``PW_PIECE_REMOVED``) is left out, its chars counted; with ``m.end_mark`` each piece is
    encoded with the byte 0xFF after it (the suffix its last token spells), whose span then
    ends where the piece does. The number of pieces kept (each a word)."""
    cdef vector[uint8_t] marked
    cdef const unsigned char* q
    cdef size_t n, first, t
    cdef Py_ssize_t k, start = 0, end, kept = 0
    cdef int32_t chars = 0, piece_chars
    for k in range(<Py_ssize_t>ends.size()):
        end = deref(ends)[k] & ~PW_PIECE_REMOVED
        piece_chars = <int32_t>(end - start if ascii else chars_in(p, start, end))
        if not (deref(ends)[k] & PW_PIECE_REMOVED):
            q = p + start
            n = <size_t>(end - start)
            if m.end_mark:
                marked.assign(q, q + n)
                marked.push_back(0xFF)
                q = marked.data()
                n += 1
            first = st.ids.size()
            encode_piece(m, q, n, st.ids, st)
            for t in range(first, st.ids.size()):
                spans.push_back(0)
                spans.push_back(0)
                spans.push_back(word_base + <int32_t>kept)
            token_spans(m, q, ascii, st.ids.data() + first, st.ids.size() - first, spans.data() + 3 * first,
                        char_base + chars)
            if m.end_mark and st.ids.size() > first:     # (the 0xFF counted as a char of its own)
                t = 3 * (st.ids.size() - 1) + 1
                deref(spans)[t] = min(deref(spans)[t], char_base + chars + piece_chars)
            kept += 1
        chars += piece_chars
        start = end
    return kept


cdef Py_ssize_t cut_around(const Model* m, const CutStage* stages, size_t n_stages, search_t search,
                           AroundTokens around, const char* data, Py_ssize_t n, int kind, bint ascii,
                           Region* region, State* st, AroundScratch* found, vector[uint8_t]* utf8,
                           vector[Py_ssize_t]* ends, vector[Py_ssize_t]* scratch,
                           vector[int32_t]* spans) noexcept nogil:
    """:func:`cut_and_encode` of each stretch of the text between the added tokens ``around``
    finds in it, each token its own id and word between them (``raw_encoding.join_around``'s
    layout); the number of words, or a negative number, nothing appended: a search failed, or a
    token has no id."""
    cdef size_t first = st.ids.size(), k
    cdef Py_ssize_t at = 0, made
    cdef int32_t word = 0
    cdef Found t
    if tokens_around(around, kind, data, n, found) < 0:
        return -1
    for k in range(found.tokens.size() + 1):
        t = found.tokens[k] if k < found.tokens.size() else Found(<int32_t>n, 0, -1)
        if at < t.start:
            made = cut_and_encode(m, stages, n_stages, search, data + kind * at, t.start - at, kind, ascii, region,
                                  st, utf8, ends, scratch, spans, <int32_t>at, word)
            if made < 0:
                st.ids.resize(first)
                spans.resize(3 * first)
                return made
            word += <int32_t>made
        if t.index >= 0:
            st.ids.push_back(<uint32_t>t.index)
            spans.push_back(t.start)
            spans.push_back(t.start + t.length)
            spans.push_back(word)
            word += 1
        at = t.start + t.length
    return word


cdef void token_spans(const Model* m, const unsigned char* p, bint ascii, const uint32_t* ids, size_t count,
                      int32_t* spans, int32_t base) noexcept nogil:
    """Each token's char start and end, plus ``base``, into ``spans`` (every third slot, from 0 and
    1): the tokens' bytes are the UTF-8 ``p`` in order, and a token covers each char one of whose
    bytes it holds (Hugging Face's byte-to-char alignment, as :func:`spans_of_ids`)."""
    cdef size_t k, at = 0, seen = 0, length
    cdef int32_t leads = 0      # the chars begun in p[:seen]
    for k in range(count):
        length = token_len(m, ids[k])
        if ascii:
            spans[3 * k] = base + <int32_t>at
            spans[3 * k + 1] = base + <int32_t>(at + length)
        else:
            while seen < at + 1:
                leads += (p[seen] & 0xC0) != 0x80
                seen += 1
            spans[3 * k] = base + leads - 1
            while seen < at + length:
                leads += (p[seen] & 0xC0) != 0x80
                seen += 1
            spans[3 * k + 1] = base + leads
        at += length


cdef inline size_t utf8_length(uint32_t c) noexcept nogil:
    """Bytes of code point ``c`` in the kernel's UTF-8 (a lone surrogate takes 3, as utf8_put writes it)."""
    return 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4


cdef void spans_of_ids(const Model* m, const char_t* s, Py_ssize_t n, bint ascii,
                       const int32_t* ids, Py_ssize_t count,
                       int32_t* starts, int32_t* ends, int32_t* words) noexcept nogil:
    """The char offsets and piece indices of ``ids``, the tokens :func:`scan_and_encode` made of
    ``s[:n]``.

    The tokens' bytes are the text's UTF-8 in order, so each token's span
    follows from its length alone: it covers each char one of whose bytes
    it holds (Hugging Face's byte-to-char alignment). No token spans two
    pieces, so its piece is the one its first char is in: the pieces are
    scanned again, as the encoding scanned them.
    """
    cdef Py_ssize_t k, char_at = 0, first, piece = -1, piece_end = 0
    cdef size_t at = 0, char_start = 0, char_len = 0, length, last
    if n > 0 and not ascii:
        char_len = utf8_length(s[0])
    for k in range(count):
        length = token_len(m, <uint32_t>ids[k])
        if ascii:
            first = <Py_ssize_t>at
            ends[k] = <int32_t>(at + length)
        else:
            # (the bound on char_at only guards against ids that are not this text's)
            while at >= char_start + char_len and char_at + 1 < n:      # to the char holding the first byte
                char_start += char_len
                char_at += 1
                char_len = utf8_length(s[char_at])
            first = char_at
            last = at + length - 1
            while last >= char_start + char_len and char_at + 1 < n:    # to the char holding its last byte
                char_start += char_len
                char_at += 1
                char_len = utf8_length(s[char_at])
            ends[k] = <int32_t>(char_at + 1)
        starts[k] = <int32_t>first
        while first >= piece_end and piece_end < n:
            piece_end = next_piece(m.pattern, s, piece_end, n, m.classes)
            piece += 1
        words[k] = <int32_t>piece
        at += length


cdef void spans_of_str(const Model* m, int kind, const void* data, Py_ssize_t length, bint ascii,
                       const int32_t* ids, Py_ssize_t n, int32_t* starts, int32_t* ends, int32_t* words) noexcept nogil:
    """:func:`spans_of_ids` of a str's chars (``kind``, ``data``, ``length``: its PEP 393 form)."""
    if kind == 1:
        spans_of_ids(m, <const uint8_t*>data, length, ascii, ids, n, starts, ends, words)
    elif kind == 2:
        spans_of_ids(m, <const uint16_t*>data, length, False, ids, n, starts, ends, words)
    else:
        spans_of_ids(m, <const uint32_t*>data, length, False, ids, n, starts, ends, words)


cdef int fill_spans(ByteBPE bpe, str text, bint prefix_space, const int32_t* ids, Py_ssize_t n,
                    int32_t* starts, int32_t* ends, int32_t* words) except -1:
    """:func:`spans_of_ids` of ``text``'s tokens (``prefix_space``: the text began with an added
    space, whose span the offsets leave out: it shares the first char's)."""
    cdef Py_ssize_t k, length = PyUnicode_GET_LENGTH(text)
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* data = PyUnicode_DATA(text)
    cdef bint ascii = PyUnicode_IS_ASCII(text)
    with nogil:
        spans_of_str(&bpe.m, kind, data, length, ascii, ids, n, starts, ends, words)
        if prefix_space:
            for k in range(n):
                starts[k] = starts[k] - 1 if starts[k] > 0 else 0
                ends[k] = ends[k] - 1 if ends[k] > 1 else 1
    return 0


cdef class ByteSpans(SpanSource):
    """The offsets and words of a lazy encoding that :class:`OneText` made with its ids alone (see
    raw_encoding's ``ids_raw``): :func:`fill_spans` on the text the kernel encoded."""

    cdef ByteBPE bpe
    cdef bint prefix_space

    def __cinit__(self, ByteBPE bpe not None, bint prefix_space):
        self.bpe, self.prefix_space = bpe, prefix_space

    cdef int fill(self, object source, const int32_t* ids, Py_ssize_t n, const int32_t* extra, Py_ssize_t n_extra,
                  int32_t* starts, int32_t* ends, int32_t* words) except -1:
        cdef Py_ssize_t k
        # (Only this kernel's encodings of ``source`` reach here; a hand-made one gets an error, not a bad read.)
        if type(source) is not str:
            raise TypeError(f"ByteSpans: the source must be the str the ids came from, got {type(source).__name__}")
        for k in range(n):
            if <uint32_t>ids[k] >= self.bpe.m.n_ids:
                raise ValueError(f"ByteSpans: token id {ids[k]} is not in this model")
        return fill_spans(self.bpe, <str>source, self.prefix_space, ids, n, starts, ends, words)


cdef class ChunkSpans(SpanSource):
    """What the encodings of one chunk of a raw :class:`BatchJob`'s texts share: its ids, from
    which (and its text) an encoding that holds its ids list alone (``lazy_with_ids``) works
    out its offsets and words when first read, as :class:`ByteSpans` does for one text.

    ``full(text, k, n)``: the raw encoding of the chunk's text ``k`` (of
    ``n`` tokens). Until every encoding of the chunk has read them (or
    died), the chunk stays: 4 bytes a token.
    """

    cdef ByteBPE bpe
    cdef vector[uint32_t] ids
    cdef vector[Py_ssize_t] ends         # where text k's ids end

    cdef bytes full(self, object source, Py_ssize_t k, Py_ssize_t n):
        cdef Py_ssize_t first
        if type(source) is not str:
            raise TypeError(f"ChunkSpans: the source must be the str the ids came from, got {type(source).__name__}")
        if not 0 <= k < <Py_ssize_t>self.ends.size():
            raise ValueError(f"ChunkSpans: no text {k} in a chunk of {self.ends.size()}")
        first = 0 if k == 0 else self.ends[k - 1]
        if self.ends[k] - first != n:
            raise ValueError(f"ChunkSpans: text {k} has {self.ends[k] - first} tokens, not {n}")
        return raw_of(self.bpe, self.ids.data() + first, n, <str>source, False)


# -- a vocabulary's bytes, from its token strings or tiktoken's ranks ---------------------------

cdef enum:
    ALPHABET_LIMIT = 0x200  # byte-level alphabets (GPT-2's ends at U+0143) are chars below this
    PAIR_PREFETCH = 16      # pairs put ahead of the one whose slot is loading (_fill_pairs_from_ranks)

def spelled_bytes(list tokens not None, str alphabet not None) -> list:
    """The bytes each token spells in ``alphabet`` (256 chars: the char of byte 0, 1, ...), None for a
    token with a char outside it, or None itself (a 128k-token vocabulary in a few milliseconds).

    >>> spelled_bytes(["ab", None, "a?"], "".join(map(chr, range(256))).replace("?", "\\u0100"))
    [b'ab', None, None]
    """
    cdef int16_t table[ALPHABET_LIMIT]
    cdef Py_ssize_t i, k, n = len(tokens), length
    cdef Py_UCS4 c
    cdef int kind
    cdef const void* data
    cdef char* out_bytes
    cdef str token
    if PyUnicode_GET_LENGTH(alphabet) != 256:
        raise ValueError(f"spelled_bytes: the alphabet has 256 chars, got {len(alphabet)}")
    memset(table, 0xFF, sizeof(table))      # (-1: no byte)
    for i in range(256):
        c = PyUnicode_READ_CHAR(alphabet, i)
        if c >= ALPHABET_LIMIT:
            raise ValueError(f"spelled_bytes: alphabet char U+{c:04X} is past U+{ALPHABET_LIMIT - 1:04X}")
        table[c] = <int16_t>i
    out = PyList_New(n)
    for i in range(n):
        item = tokens[i]
        spelled = None
        if item is not None:
            token = item
            length = PyUnicode_GET_LENGTH(token)
            kind, data = PyUnicode_KIND(token), PyUnicode_DATA(token)
            spelled = PyBytes_FromStringAndSize(NULL, length)
            out_bytes = PyBytes_AS_STRING(spelled)
            for k in range(length):
                c = code_point(kind, data, k)
                if c >= ALPHABET_LIMIT or table[c] < 0:
                    spelled = None
                    break
                out_bytes[k] = <char>table[c]
        Py_INCREF_p(<PyObject*>spelled)
        PyList_SET_ITEM_p(out, i, <PyObject*>spelled)
    return out


def rank_table(dict ranks not None, Py_ssize_t max_size):
    """Each rank's token (None in a gap) from tiktoken's ``bytes -> rank`` dict, in two C passes;
    None when a key is not bytes, a rank not an int from 0, two tokens share a rank, or the largest
    rank reaches ``max_size`` (the caller's careful pass then says which).

    >>> rank_table({b"a": 0, b"b": 2}, 100), rank_table({b"a": 0, b"b": 0}, 100)
    ([b'a', None, b'b'], None)
    """
    cdef Py_ssize_t pos = 0, rank, size = 0
    cdef PyObject* key
    cdef PyObject* value
    while PyDict_Next(ranks, &pos, &key, &value):
        if not PyBytes_CheckExact_p(key) or not PyLong_CheckExact_p(value):
            return None
        rank = PyLong_AsSsize_t(<object>value)      # (past Py_ssize_t: -1, an error set, refused below)
        if rank < 0 or rank >= max_size:
            PyErr_Clear()
            return None
        size = max(size, rank + 1)
    out = PyList_New(size)
    cdef Py_ssize_t i
    for i in range(size):
        Py_INCREF_p(<PyObject*>None)
        PyList_SET_ITEM_p(out, i, <PyObject*>None)
    cdef PyObject** items = PySequence_Fast_ITEMS(out)
    pos = 0
    while PyDict_Next(ranks, &pos, &key, &value):
        rank = PyLong_AsSsize_t(<object>value)
        if items[rank] != <PyObject*>None:
            return None     # (two tokens, one rank)
        Py_DECREF_p(items[rank])
        Py_INCREF_p(key)
        items[rank] = key
    return out


# -- the class table -----------------------------------------------------------------------

cdef object _classes_bytes = None


def _key_hash(bytes key not None) -> int:
    """The vocabulary's hash of ``key`` (for tests of :func:`vocab_find`'s exactness)."""
    return hash_bytes(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))


def build_classes() -> bytes:
    """One byte of ``K_*`` bits per code point, at the Unicode version Hugging Face and tiktoken use.

    >>> t = build_classes(); t[ord("a")], t[ord("A")], t[ord("7")], t[ord(" ")], t[0x301]
    (18, 10, 4, 1, 24)
    """
    global _classes_bytes
    if _classes_bytes is not None:
        return _classes_bytes
    import sys

    from pieceworks import _unicode_tables
    from pieceworks._disk_cache import cached_bytes, source_stamp

    # (Built from regex's Unicode classes in a fifth of a second: kept in the disk cache. Stamped
    # with the regex package's file, found without importing it: 20 ms of a load otherwise.)
    _classes_bytes = cached_bytes("byte-bpe-classes", _built_classes,
                                  source_stamp(sys.modules[__name__], _unicode_tables, "regex"),
                                  lambda table: len(table) == 0x110000)
    return _classes_bytes


def _built_classes() -> bytes:
    """:func:`build_classes`'s table, built."""
    import array

    import regex

    from pieceworks._unicode_tables import UNICODE_17_WORD_CHARS
    every = array.array("I", range(0x110000)).tobytes().decode("utf-32-le", "surrogatepass")
    combined = 0
    for bit, pattern in ((K_WS, r"\p{White_Space}+"), (K_L, r"\p{L}+"), (K_N, r"\p{N}+"),
                         (K_UP, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"), (K_LO, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]+")):
        plane = bytearray(0x110000)
        one = bytes([bit])
        for match in regex.finditer(pattern, every):
            start, end = match.span()
            plane[start:end] = one * (end - start)
        # OR the planes as big integers: one C-level pass each, no Python loop per code point.
        combined |= int.from_bytes(plane, "little")
    table = bytearray(combined.to_bytes(0x110000, "little"))
    # Hugging Face's Oniguruma and tiktoken's regex crate are at Unicode 16.0:
    # what 17.0 added is unassigned to them ("other").
    for first, last in UNICODE_17_WORD_CHARS:
        table[first:last + 1] = bytes(last + 1 - first)
    return bytes(table)


# -- Python API ------------------------------------------------------------------------------


cdef list spans_of(int pattern, const char_t* s, Py_ssize_t n, const uint8_t* cls):
    cdef Py_ssize_t i = 0, j
    cdef list out = []
    while i < n:
        j = next_piece(pattern, s, i, n, cls)
        out.append((i, j))
        i = j
    return out


def piece_spans(int pattern, str text not None):
    """The ``(start, end)`` char spans of the pieces the scanner cuts ``text`` into.

    >>> piece_spans(Pattern.PAT_CL100K, "Hello world's 1234!")
    [(0, 5), (5, 11), (11, 13), (13, 14), (14, 17), (17, 18), (18, 19)]
    """
    if not 0 <= pattern < Pattern.PAT_PIECES:
        raise ValueError(f"no scanner for pattern {pattern}")
    cdef const uint8_t* cls = <const uint8_t*>PyBytes_AS_STRING(build_classes())
    cdef int kind = PyUnicode_KIND(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    if kind == 1:
        return spans_of(pattern, <const uint8_t*>PyUnicode_DATA(text), n, cls)
    if kind == 2:
        return spans_of(pattern, <const uint16_t*>PyUnicode_DATA(text), n, cls)
    return spans_of(pattern, <const uint32_t*>PyUnicode_DATA(text), n, cls)


cdef Py_ssize_t last_start_of(int pattern, const char_t* s, Py_ssize_t n, const uint8_t* cls) noexcept nogil:
    cdef Py_ssize_t i = 0, start = 0
    while i < n:
        start = i
        i = next_piece(pattern, s, i, n, cls)
    return start


def last_piece_start(int pattern, str text not None):
    """Where the last of :func:`piece_spans` begins (0 for an empty text), with no list of them all.

    >>> last_piece_start(Pattern.PAT_CL100K, "Hello world's 1234!"), last_piece_start(Pattern.PAT_CL100K, "")
    (18, 0)
    """
    if not 0 <= pattern < Pattern.PAT_PIECES:
        raise ValueError(f"no scanner for pattern {pattern}")
    cdef const uint8_t* cls = <const uint8_t*>PyBytes_AS_STRING(build_classes())
    cdef int kind = PyUnicode_KIND(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t start
    with nogil:
        if kind == 1:
            start = last_start_of(pattern, <const uint8_t*>data, n, cls)
        elif kind == 2:
            start = last_start_of(pattern, <const uint16_t*>data, n, cls)
        else:
            start = last_start_of(pattern, <const uint32_t*>data, n, cls)
    return start


#: Bytes that never occur in UTF-8 (nor in the "surrogatepass" form of lone surrogates).
NOT_IN_UTF8 = frozenset([0xC0, 0xC1] + list(range(0xF5, 0x100)))



cdef bytes raw_of(ByteBPE bpe, const uint32_t* ids, Py_ssize_t n, str text, bint prefix_space):
    """The raw encoding (see raw_encoding.pyx) of ``text``: its ``n`` tokens ``ids`` (``prefix_space``:
    see :func:`fill_spans`)."""
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16 * n)
    cdef int32_t* out = <int32_t*>PyBytes_AS_STRING(raw)
    memcpy(out, ids, 4 * n)
    fill_spans(bpe, text, prefix_space, out, n, out + n, out + 2 * n, out + 3 * n)
    return raw


cdef list id_list_of(ByteBPE bpe, const uint32_t* ids, size_t n):
    """A list of ``n`` token ids (the model's shared int objects), untracked: ints only (see the module doc)."""
    cdef list out = PyList_New(n)
    cdef size_t k
    for k in range(n):
        if k + PREFETCH_AHEAD < n:
            prefetch_int(bpe._int_table, bpe._n_ints, ids[k + PREFETCH_AHEAD])
        PyList_SET_ITEM_p(out, k, int_ref(bpe._int_table, bpe._n_ints, ids[k]))
    PyObject_GC_UnTrack(<void*>out)
    return out


cdef bint has_lone_surrogate(str text) noexcept:
    """Whether ``text`` holds a lone surrogate (U+D800..U+DFFF), which has no UTF-8 form.

    A C function, not the method: batches ask it of every text.
    """
    return holds_surrogate(PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text))


cdef bint holds_surrogate(int kind, const void* data, Py_ssize_t n) noexcept nogil:
    """Whether the ``n`` chars of width ``kind`` at ``data`` hold a surrogate code point.

    Blocks of 64 chars with no branch inside, so the compiler makes them
    vector code: 1 MB of text in tens of microseconds, not hundreds.
    """
    cdef const uint16_t* s2 = <const uint16_t*>data
    cdef const uint32_t* s4 = <const uint32_t*>data
    cdef Py_ssize_t k, j, stop
    cdef unsigned int seen = 0
    if kind == 1:
        return False
    k = 0
    while k < n:
        stop = min(k + 64, n)
        if kind == 2:
            for j in range(k, stop):
                seen |= (s2[j] & 0xF800) == 0xD800
        else:
            for j in range(k, stop):
                seen |= (s4[j] - 0xD800) < 0x800
        if seen:
            return True
        k = stop
    return False


cdef class Workspace:
    """Scratch buffers and small caches for one thread at a time (see the module doc)."""

    cdef State* st
    cdef bint stale         # its small caches are to be emptied before its next use

    def __cinit__(self):
        self.st = new State()
        self.st.chars.assign(CHAR_SLOTS, CharEntry(0, 0, [0, 0, 0, 0]))
        self.st.recent.assign(RECENT_PAIRS, EMPTY_PAIR)
        self.st.seams.assign(RECENT_SEAMS, EMPTY_PAIR)
        memset(self.st.run_keys, 0, sizeof(self.st.run_keys))

    cdef void forget(self) noexcept:
        memset(self.st.chars.data(), 0, self.st.chars.size() * sizeof(CharEntry))
        memset(self.st.recent.data(), 0xFF, self.st.recent.size() * sizeof(uint64_t))
        memset(self.st.seams.data(), 0xFF, self.st.seams.size() * sizeof(uint64_t))
        memset(self.st.run_keys, 0, sizeof(self.st.run_keys))
        self.stale = False

    def __dealloc__(self):
        del self.st


def with_byte_stand_ins(list token_bytes, dict decode_only):
    """``(token_bytes, first stand-in id)``: a stand-in token for each single byte ``token_bytes``
    lacks, after its ids and ``decode_only``'s; ``(token_bytes, -1)`` when none is missing.

    >>> tokens, start = with_byte_stand_ins([bytes([b]) for b in range(1, 256)] + [b"ab"], {257: b"<s>"})
    >>> start, tokens[start:], len(tokens)
    (258, [b'\\x00'], 259)
    """
    present = bytearray(256)
    for value in token_bytes:
        if value is not None and len(value) == 1:
            present[value[0]] = 1
    missing = [bytes([b]) for b in range(256) if not present[b]]
    if not missing:
        return token_bytes, -1
    start = max(len(token_bytes), max(decode_only) + 1 if decode_only else 0)
    return token_bytes + [None] * (start - len(token_bytes)) + missing, start


# Texts per chunk of a BatchJob: about this many chars (defined before ByteBPE, whose
# batch_job takes it as a default).
cdef Py_ssize_t CHUNK_CHARS = 32768


cdef class ByteBPE:
    """A byte-level BPE model and its pre-tokenization pattern, in C form.

    ``token_bytes[i]``: the bytes of token id ``i`` (None: no such id).
    ``merges``: None for tiktoken ranks (the id is the rank; a pair merges
    into each token it concatenates to), or ``left, right, new`` ids per merge,
    flat, by rank (Hugging Face). ``whole_piece``: a piece that is a token is
    that token (tiktoken; Hugging Face's ``ignore_merges``). ``decode_only``:
    extra ``{id: bytes}`` that decode but are never produced (special tokens).
    ``byte_stand_ins`` (tiktoken ranks only): a single byte without a rank
    gets a stand-in id from ``stand_ins_from`` on, after every other id, so
    the ranks encode as tiktoken's do (which only fails when a token it would
    output is missing); the stand-ins never decode, and the caller refuses an
    output holding one (see ``pieceworks.tiktoken.core``).

    >>> bpe = ByteBPE([b"a", b"b", b"ab"] + [bytes([i]) for i in range(256) if i not in b"ab"],
    ...               None, pattern=Pattern.PAT_GPT2, whole_piece=True)
    >>> bpe.encode("abab ba")
    [2, 2, 35, 1, 0]
    """

    def __init__(self, list token_bytes, merges=None, *, int pattern, bint whole_piece, dict decode_only=None,
                 bint text_only=False, bint byte_stand_ins=False):
        cdef Py_ssize_t n_ids, i
        cdef uint32_t tid
        self.stand_ins_from = -1
        if byte_stand_ins and merges is None:
            token_bytes, self.stand_ins_from = with_byte_stand_ins(token_bytes, decode_only)
        n_ids = len(token_bytes)
        if decode_only:
            n_ids = max(n_ids, max(decode_only) + 1)
        self.pattern = pattern
        self.whole_piece = whole_piece
        self._fill_tokens(token_bytes, decode_only or {}, n_ids)
        self._fill_vocab(token_bytes)
        self._fill_bytes(text_only)
        if merges is None:
            self._fill_pairs_from_ranks(token_bytes)
        else:
            self._fill_pairs_from_merges(merges)
        self._classes_ref = build_classes()
        self.m.rebuilds = NULL
        self.m.classes = <const uint8_t*>PyBytes_AS_STRING(self._classes_ref)
        self.m.pattern = pattern
        self.m.whole_piece = whole_piece
        share_ints_below(n_ids)
        self._int_table = shared_int_table(&self._n_ints)
        self._pool = []
        self._mark_rebuilds()
        self._make_cache()
        if self.stand_ins_from >= 0:     # (a stand-in is a byte for BPE, not a token: no decode, no token_id)
            for i in range(self.stand_ins_from, n_ids):
                self._has_token[i] = 0

    # -- construction ------------------------------------------------------------------
    def _make_cache(self, size_t slots=CACHE_SLOTS):
        """(Re)make the shared piece cache with ``slots`` slots (a power of two; its arenas in
        proportion). Only while no thread encodes: tests make a small one to fill it."""
        if slots < 2 or slots & (slots - 1) or self._busy:
            raise ValueError(f"_make_cache: need a power of two and no encoding under way, got {slots}")
        self._free_cache()
        # calloc, not a vector: the zero pages are only mapped, so a model that caches little
        # (or is never used) costs little memory.
        self._cache.key_cap = slots * (CACHE_KEY_BYTES // CACHE_SLOTS)
        self._cache.id_cap = slots * (CACHE_IDS // CACHE_SLOTS)
        self._cache.slots = <BytesSlot*>calloc(slots, sizeof(BytesSlot))
        self._cache.keys = <uint8_t*>calloc(self._cache.key_cap, 1)
        self._cache.ids = <uint32_t*>calloc(self._cache.id_cap, sizeof(uint32_t))
        if self._cache.slots == NULL or self._cache.keys == NULL or self._cache.ids == NULL:
            self._free_cache()
            raise MemoryError("ByteBPE: no memory for the piece cache")
        self._cache.mask = slots - 1
        self._cache.gen = 1         # (the slots are zeros: generation 0, free)
        self._cache.epoch += 1      # (no workspace keeps blocks of the arenas this replaces)
        self._cache.keys_used = self._cache.ids_used = self._cache.slots_used = 0
        self.m.cache = &self._cache

    def use_dropout(self, BpeEncoder encoder not None):
        """Merge every piece as ``encoder`` (the model's, built with its ``dropout`` and ``seed``)
        merges under BPE-dropout, from its merges and drawing from its generator (see
        :func:`dropout_piece`). Once, on a kernel no thread has used yet (the plan builds one
        for each such encoder); byte-level merges only (``merges`` given, ids as ``encoder``'s).
        """
        if self._dropout_owner is not None or self._busy or len(self._pool) or self.m.end_mark:
            raise ValueError("use_dropout: only once, on a kernel not used yet, not with marked piece ends")
        if encoder.dropout <= 0.0:
            raise ValueError("use_dropout: the encoder has no dropout")
        self._dropout_owner = encoder       # (keeps the tables the pointers below point into)
        self.m.drop_made_by = encoder.made_by.data()
        self.m.drop_rng = &encoder.rng_state
        self.m.dropout = encoder.dropout
        self.m.drop_merges = &encoder.merges

    def mark_piece_ends(self):
        """Encode each piece a :class:`Cutter` cuts (:meth:`encode_raw_cut_batch`) with the byte 0xFF
        after it: an end-of-word suffix (CLIP's ``"</w>"``), which the plan spells as that byte in
        the tokens ending with it (the merges of a char with it ranked first, so the piece's last
        char takes its suffixed token, as Hugging Face's BPE gives it). Once, on a kernel not
        used yet, not with dropout; only the cut pieces have it, not the scanners' (the plan
        gives such a kernel no scanner)."""
        if self.m.end_mark or self._busy or len(self._pool) or self._dropout_owner is not None:
            raise ValueError("mark_piece_ends: only once, on a kernel not used yet, not with dropout")
        if self.m.byte_id[0xFF] < 0:
            raise ValueError("mark_piece_ends: no token is the byte 0xFF alone")
        self.m.end_mark = True

    @property
    def dropout(self):
        """The BPE-dropout probability this kernel merges with (0.0: none; see :meth:`use_dropout`)."""
        return self.m.dropout if self.m.drop_merges != NULL else 0.0

    def _free_cache(self):
        free(self._cache.slots)
        free(self._cache.keys)
        free(self._cache.ids)
        self._cache.slots = NULL
        self._cache.keys = NULL
        self._cache.ids = NULL

    def __dealloc__(self):
        self._free_cache()

    def _fill_tokens(self, list token_bytes, dict decode_only, Py_ssize_t n_ids):
        cdef Py_ssize_t i
        cdef bytes b
        self._token_off.resize(n_ids + 1)
        self._has_token.assign(n_ids, 0)
        self._token_bytes.clear()
        cdef size_t longest = 0
        for i in range(n_ids):
            self._token_off[i] = <uint32_t>self._token_bytes.size()
            value = token_bytes[i] if i < len(token_bytes) else None
            if value is None:
                value = decode_only.get(i)
            if value is None:
                continue
            b = <bytes>value
            self._has_token[i] = 1
            self._token_bytes.insert(self._token_bytes.end(), <const uint8_t*>PyBytes_AS_STRING(b),
                                     <const uint8_t*>PyBytes_AS_STRING(b) + PyBytes_GET_SIZE(b))
        self._token_off[n_ids] = <uint32_t>self._token_bytes.size()
        self._token_bytes.push_back(0)    # never empty, so .data() is a valid pointer
        self.m.token_bytes = self._token_bytes.data()
        self.m.token_off = self._token_off.data()
        self.m.n_ids = <uint32_t>n_ids
        # The pair table's keys: as few bits an id as the ids need (below 2**id_bits - 1, so a
        # free slot, all ones, is no key), the rest for ranks (see _fill_pairs_from_merges).
        self.m.id_bits = 9
        while self.m.id_bits < 21 and (<Py_ssize_t>1 << self.m.id_bits) <= n_ids:
            self.m.id_bits += 1
        self.m.rank_bits = min(64 - 2 * self.m.id_bits, 32)     # (ranks are uint32_t)

    def _fill_vocab(self, list token_bytes):
        cdef size_t capacity = 16, i, mask
        cdef Py_ssize_t tid, n = 0
        cdef uint32_t length, longest = 0
        cdef uint64_t h
        for value in token_bytes:
            if value is not None:
                n += 1
        while capacity < 2 * <size_t>n + 2:
            capacity <<= 1
        self._vocab.assign(capacity, BytesSlot(0, 0, 0, 0, 0))
        mask = capacity - 1
        for tid in range(len(token_bytes)):
            if token_bytes[tid] is None:
                continue
            length = token_len(&self.m, <uint32_t>tid)
            if length == 0:
                continue
            h = hash_bytes(self.m.token_bytes + self.m.token_off[tid], length)
            i = h & mask
            while self._vocab[i].key_len != 0:
                if (self._vocab[i].hash == h and self._vocab[i].key_len == length and
                        memcmp(self.m.token_bytes + self._vocab[i].key_off,
                               self.m.token_bytes + self.m.token_off[tid], length) == 0):
                    break   # the same bytes twice: the later id wins, as a dict would keep it
                i = (i + 1) & mask
            self._vocab[i] = BytesSlot(h, self.m.token_off[tid], length, <uint32_t>tid, 1)
            if length > longest:
                longest = length
        self.m.vocab = self._vocab.data()
        self.m.vocab_mask = mask
        self.m.max_token_len = longest

    def _fill_bytes(self, bint text_only):
        # Every byte needs a token, except (for ``text_only`` models, which only
        # ever see UTF-8 from a str) the 13 bytes UTF-8 never uses: GPT-NeoX's
        # vocabulary lacks those.
        cdef int b
        cdef uint8_t one[1]
        cdef const BytesSlot* hit
        missing = []
        for b in range(256):
            one[0] = <uint8_t>b
            hit = vocab_find(&self.m, one, 1, hash_bytes(one, 1))
            self.m.byte_id[b] = -1 if hit == NULL else hit.value
            if hit == NULL:
                missing.append(b)
        self.complete_bytes = not missing
        if text_only:
            missing = [b for b in missing if b not in NOT_IN_UTF8]
        if missing:
            from pieceworks.errors import ConfigError
            raise ConfigError(f"a byte-level BPE needs a token for each of the 256 bytes; "
                              f"{len(missing)} are missing (first: {missing[0]:#04x})",
                              fix="check that the vocabulary is a byte-level one (tiktoken ranks, "
                                  "or a ByteLevel tokenizer's vocab)")

    def _fill_pairs_from_ranks(self, list token_bytes):
        # tiktoken merges the adjacent pair whose concatenation has the lowest
        # rank. Parts are always tokens, so that is the pair (a, b) for every
        # token t = a + b with a and b tokens, ranked by t: rank = id.
        #
        # Each look-up here is a cache miss (the vocabulary and the pair table are
        # megabytes), and waiting for them one at a time was most of a tiktoken load:
        # a token's splits are looked up while the next token's slots load, and each
        # pair is put while the slots of the pairs a little further on load.
        cdef Py_ssize_t tid, pending = -1, n = len(token_bytes)
        cdef size_t count, i, capacity = 16
        cdef vector[uint64_t] hashes[2]     # a token's prefix hashes, then its suffix hashes
        cdef vector[TokenMerge] found       # (left, right, rank = the token they make)
        cdef int turn = 0
        if n > MAX_PAIR_ID:
            from pieceworks.errors import ConfigError
            raise ConfigError(f"{n} tokens: the kernel handles at most {MAX_PAIR_ID}")
        for tid in range(n):
            if token_bytes[tid] is None:
                continue
            self._load_splits(<uint32_t>tid, hashes[turn])
            if pending >= 0:
                self._find_splits(<uint32_t>pending, hashes[1 - turn], found)
            pending, turn = tid, 1 - turn
        if pending >= 0:
            self._find_splits(<uint32_t>pending, hashes[1 - turn], found)
        count = found.size()
        while capacity < 2 * count + 16:
            capacity <<= 1
        self._pairs.assign(capacity, EMPTY_PAIR)
        for i in range(count):
            if i + PAIR_PREFETCH < count:
                pw_prefetch_read(&self._pairs[mix64(pair_key(&self.m, found[i + PAIR_PREFETCH].left,
                                                             found[i + PAIR_PREFETCH].right)) & (capacity - 1)])
            pair_put(&self.m, self._pairs, found[i].left, found[i].right, found[i].rank, False)
        self.n_merges = count
        self._install_pairs(count)
        self.m.merge_new = NULL
        self.m.rank_shift = 0
        self.ranks_by_id = True

    cdef void _load_splits(self, uint32_t tid, vector[uint64_t]& hashes) noexcept:
        """Hash each split of token ``tid`` (prefixes, then suffixes) and start loading their slots."""
        cdef uint32_t length = token_len(&self.m, tid), k
        cdef const uint8_t* p = self.m.token_bytes + self.m.token_off[tid]
        hashes.resize(2 * length)
        for k in range(1, length):
            hashes[k] = hash_bytes(p, k)
            hashes[length + k] = hash_bytes(p + k, length - k)
            pw_prefetch_read(&self.m.vocab[hashes[k] & self.m.vocab_mask])
            pw_prefetch_read(&self.m.vocab[hashes[length + k] & self.m.vocab_mask])

    cdef void _find_splits(self, uint32_t tid, const vector[uint64_t]& hashes, vector[TokenMerge]& found) noexcept:
        """Append ``(left, right, tid)`` for each split of token ``tid`` into two tokens."""
        cdef uint32_t length = token_len(&self.m, tid), k
        cdef const uint8_t* p = self.m.token_bytes + self.m.token_off[tid]
        cdef const BytesSlot* left
        cdef const BytesSlot* right
        cdef TokenMerge pair
        for k in range(1, length):
            left = vocab_find(&self.m, p, k, hashes[k])
            if left == NULL:
                continue
            right = vocab_find(&self.m, p + k, length - k, hashes[length + k])
            if right == NULL:
                continue
            pair.left, pair.right, pair.rank = left.value, right.value, tid
            found.push_back(pair)

    def _fill_pairs_from_merges(self, merges):
        cdef const uint32_t[::1] flat = merges
        cdef Py_ssize_t rank, n = flat.shape[0] // 3, k
        cdef size_t capacity = 16
        while capacity < 2 * <size_t>n + 16:
            capacity <<= 1
        if n > MAX_RANK or self.m.n_ids > MAX_PAIR_ID:
            from pieceworks.errors import ConfigError
            raise ConfigError(f"{n} merges over {self.m.n_ids} ids: the kernel handles at most "
                              f"{MAX_RANK} merges and {MAX_PAIR_ID} ids")
        for k in range(3 * n):
            if flat[k] >= self.m.n_ids:
                from pieceworks.errors import ConfigError
                raise ConfigError(f"merge {k // 3} names id {flat[k]}, but the model has {self.m.n_ids} ids")
        self._pairs.assign(capacity, EMPTY_PAIR)
        cdef uint32_t tie_bits = self._tie_bits(flat, n)
        cdef bint ids_as_ranks = tie_bits != UINT32_MAX
        cdef uint32_t place = 0
        if not ids_as_ranks:
            self._merge_new.resize(n + 1)
        for rank in range(n):
            if ids_as_ranks:
                place = place + 1 if rank > 0 and flat[3 * rank + 2] == flat[3 * rank - 1] else 0
            # The lower rank wins if a pair repeats (the caller normally resolved that).
            pair_put(&self.m, self._pairs, flat[3 * rank], flat[3 * rank + 1],
                     (flat[3 * rank + 2] << tie_bits) | place if ids_as_ranks else <uint32_t>rank, True)
            if not ids_as_ranks:
                self._merge_new[rank] = flat[3 * rank + 2]
        self.n_merges = n
        self._install_pairs(n)
        self.m.merge_new = NULL
        if not ids_as_ranks:
            self.m.merge_new = self._merge_new.data()
        self.m.rank_shift = tie_bits if ids_as_ranks else 0
        self.ranks_by_id = ids_as_ranks

    cdef uint32_t _tie_bits(self, const uint32_t[::1] flat, Py_ssize_t n):
        """How a pair's rank can carry the id its merge makes: ``rank = id << bits | place``, or
        UINT32_MAX when it cannot (the merges then go by number, and merge_new gives the id).

        When the merges make ids in order (never a smaller one than the merge
        before), the id orders them as their number does, up to the merges
        that make one token: Qwen's make each token once (``bits`` 0: the rank
        is the id); Llama 3's, tiktoken's ranks written as every split of each
        token, make a token up to 80 ways, and ``place`` (which of them, in
        order) keeps their order exactly. (Ties, as tiktoken has, gave the
        same output in every search we ran, but nothing here proves they
        always would.) The merge loop then reads the id off the rank instead
        of looking it up in merge_new, a cache miss per merge.
        """
        cdef Py_ssize_t rank, group = 1, widest = 1
        cdef uint32_t bits = 0
        if n == 0:
            return 0
        for rank in range(1, n):
            if flat[3 * rank + 2] < flat[3 * rank - 1]:
                return UINT32_MAX
            group = group + 1 if flat[3 * rank + 2] == flat[3 * rank - 1] else 1
            if group > widest:
                widest = group
        while (<Py_ssize_t>1 << bits) < widest:
            bits += 1
        # (A candidate holds the rank above PLACE_BITS bits in 32: the highest must stay below NO_MERGE's.)
        if ((<uint64_t>flat[3 * n - 1] << bits) | <uint64_t>(widest - 1)) >= min(rank_mask(&self.m),
                                                                              NO_MERGE >> PLACE_BITS):
            return UINT32_MAX
        return bits

    def _install_pairs(self, size_t count):
        cdef uint32_t a, b
        fill_bloom(self._bloom, self._pairs, count, self.m.rank_bits)
        self.m.bloom = self._bloom.data()
        self.m.bloom_mask = self._bloom.size() // 8 - 1
        self.m.pairs = self._pairs.data()
        self.m.pair_mask = self._pairs.size() - 1
        # The pairs of the first 256 ids (the bytes, in tiktoken's ranks and most vocabularies) in a
        # direct table: every merge loop starts from byte pairs, and this needs no hash.
        self._low_pairs.resize(1 << 16)
        for a in range(256):
            for b in range(256):
                self._low_pairs[(a << 8) | b] = pair_rank(&self.m, a, b)
        self.m.low_pairs = self._low_pairs.data()

    def _mark_rebuilds(self):
        # Whether plain BPE of a token's bytes gives the token: only those can
        # come out of the merges. Without whole-piece look-ups, a piece that is
        # such a token is that token, and the merges can be skipped.
        # Each such token also records its last merge (pair and rank + 1; 0 for
        # a single byte), which the seam check (pair_ok) replays backwards.
        #
        # The seam check replays a token's merges highest rank first: the order BPE made
        # them in when each merge ranks above the merges that made its two parts. Trained
        # merges do; merges listed in another order may not (Llama 3 has 81 tokens whose
        # last merge ranks below a part's: tokens added after tiktoken's, that tiktoken's
        # own tokens are made of). A token with such a merge anywhere among those that made
        # it is ``inexact``, and a seam next to it is checked by running BPE.
        #
        # Worked out from the merges, shortest tokens first, rather than by running BPE on
        # each token (that was most of a load): BPE of t's bytes ends in a merge ``x y``
        # -> t ranked above x's and y's last merges, x and y exact, exactly when x and y
        # each come out of their own bytes and no merge crosses between them on the way
        # (merges inside x see only x's pairs, so they run as in x alone): the seam check,
        # less its last step, where ``x y`` merges. A token no such merge makes, that
        # another merge may make, is run through BPE (before any longer token is looked at).
        # _rebuild_table_by_bpe is the direct way, for tests.
        cdef TokenMerge none
        cdef Workspace ws = Workspace()
        cdef vector[TokenMerge] made, order        # (x, y, rank) of each merge, then by length made
        cdef vector[uint32_t] lengths, doubtful
        cdef vector[size_t] starts
        cdef size_t i, k, group_end
        cdef uint64_t slot, key, id_mask = ((<uint64_t>1) << self.m.id_bits) - 1
        cdef uint32_t x, y, new, length, longest = 0
        cdef int b
        none.left = none.right = none.rank = 0
        self._rebuilds.assign(self.m.n_ids // 8 + 1, 0)
        self._inexact.assign(self.m.n_ids // 8 + 1, 0)
        self._token_merge.assign(self.m.n_ids, none)
        self.m.rebuilds = self._rebuilds.data()
        self.m.inexact = self._inexact.data()
        self.m.any_inexact = False
        self.m.token_merge = self._token_merge.data()
        for b in range(256):
            if self.m.byte_id[b] >= 0 and self._has_token[self.m.byte_id[b]]:
                self._rebuilds[self.m.byte_id[b] >> 3] |= 1 << (self.m.byte_id[b] & 7)
        # The merges out of the pair table, ordered by the length of the token each makes
        # (a counting sort); merges that make no token of the vocabulary are left out.
        made.reserve(self.n_merges)
        lengths.reserve(self.n_merges)
        for i in range(self._pairs.size()):
            slot = self._pairs[i]
            if slot == EMPTY_PAIR:
                continue
            key = slot >> self.m.rank_bits
            none.rank = <uint32_t>(slot & rank_mask(&self.m))
            new = merged_id(&self.m, none.rank)
            if new >= self.m.n_ids or not self._has_token[new]:
                continue
            none.left, none.right = <uint32_t>(key >> self.m.id_bits), <uint32_t>(key & id_mask)
            made.push_back(none)
            lengths.push_back(token_len(&self.m, new))
            longest = max(longest, lengths.back())
        starts.assign(longest + 2, 0)
        for length in lengths:
            starts[length + 1] += 1
        for k in range(1, longest + 2):
            starts[k] += starts[k - 1]
        order.resize(made.size())
        for i in range(made.size()):
            order[starts[lengths[i]]] = made[i]
            starts[lengths[i]] += 1
        # (starts[L] is now where the merges making tokens of L bytes end)
        i = 0
        for length in range(longest + 1):
            group_end = starts[length]
            while i < group_end:
                x, y = order[i].left, order[i].right
                new = merged_id(&self.m, order[i].rank)
                if (token_rebuilds(&self.m, new) or not token_rebuilds(&self.m, x)
                        or not token_rebuilds(&self.m, y) or not self._spells_pair(new, x, y)):
                    pass
                elif (token_inexact(&self.m, x) or token_inexact(&self.m, y)
                        or order[i].rank < self._token_merge[x].rank or order[i].rank < self._token_merge[y].rank):
                    doubtful.push_back(new)     # (the seam check cannot say)
                elif seam_valid(&self.m, x, y, ws.st, True):
                    self._rebuilds[new >> 3] |= 1 << (new & 7)
                    self._token_merge[new] = order[i]
                    self._token_merge[new].rank += 1
                i += 1
            for new in doubtful:
                if not token_rebuilds(&self.m, new):
                    self._mark_by_bpe(new, ws.st)
            doubtful.clear()

    cdef void _mark_by_bpe(self, uint32_t tid, State* st):
        """Mark token ``tid`` as :meth:`_mark_rebuilds` does if plain BPE of its bytes gives it
        back, with its last merge, and as inexact if that merge ranks below a part's or a part is."""
        cdef vector[uint32_t] out
        cdef uint32_t x, y
        bpe_plain(&self.m, self.m.token_bytes + self.m.token_off[tid], token_len(&self.m, tid), out, st)
        if out.size() != 1 or out[0] != tid:
            return
        x, y = st.last_merge[0], st.last_merge[1]
        self._rebuilds[tid >> 3] |= 1 << (tid & 7)
        self._token_merge[tid].left, self._token_merge[tid].right = x, y
        self._token_merge[tid].rank = pair_rank(&self.m, x, y) + 1
        if (token_inexact(&self.m, x) or token_inexact(&self.m, y)
                or self._token_merge[tid].rank <= self._token_merge[x].rank
                or self._token_merge[tid].rank <= self._token_merge[y].rank):
            self._inexact[tid >> 3] |= 1 << (tid & 7)
            self.m.any_inexact = True

    def _inexact_tokens(self):
        """The tokens whose seams are checked by running BPE (see :meth:`_mark_rebuilds`)."""
        cdef uint32_t tid
        return [tid for tid in range(self.m.n_ids) if token_inexact(&self.m, tid)]

    def _seam_holds(self, uint32_t x, uint32_t y):
        """``(seam check, plain BPE)``: whether ``x y`` is the BPE encoding of its bytes, as the
        encoder's seam check says and as running BPE on them says (for tests)."""
        if x >= self.m.n_ids or y >= self.m.n_ids:
            raise IndexError(f"_seam_holds: ids below {self.m.n_ids}, got {x} and {y}")
        cdef Workspace ws = Workspace()
        cdef vector[uint32_t] out
        joined = self.token_bytes(x) + self.token_bytes(y)
        bpe_plain(&self.m, <const uint8_t*>PyBytes_AS_STRING(joined), len(joined), out, ws.st)
        return (bool(seam_holds(&self.m, x, y, ws.st)),
                out.size() == 2 and out[0] == x and out[1] == y)

    cdef bint _spells_pair(self, uint32_t t, uint32_t x, uint32_t y):
        """Whether token ``t``'s bytes are ``x``'s then ``y``'s, neither empty."""
        cdef uint32_t lx = token_len(&self.m, x), ly = token_len(&self.m, y)
        cdef const uint8_t* p = self.m.token_bytes + self.m.token_off[t]
        return (lx > 0 and ly > 0 and token_len(&self.m, t) == lx + ly
                and memcmp(p, self.m.token_bytes + self.m.token_off[x], lx) == 0
                and memcmp(p + lx, self.m.token_bytes + self.m.token_off[y], ly) == 0)

    def _rebuild_table_by_bpe(self):
        """``(rebuilds, token_merge)`` as :meth:`_rebuild_table` gives them, worked out by running
        plain BPE on each token's bytes: the direct way, which the kernel's must equal."""
        cdef Workspace ws = Workspace()
        cdef uint32_t tid, length
        cdef vector[uint32_t] out
        rebuilds = bytearray(self.m.n_ids // 8 + 1)
        merges = [(0, 0, 0)] * self.m.n_ids
        for tid in range(self.m.n_ids):
            length = token_len(&self.m, tid)
            if length == 0 or not self._has_token[tid] or not self._bytes_known(tid):
                continue
            out.clear()
            bpe_plain(&self.m, self.m.token_bytes + self.m.token_off[tid], length, out, ws.st)
            if out.size() == 1 and out[0] == tid:
                rebuilds[tid >> 3] |= 1 << (tid & 7)
                if length > 1:
                    merges[tid] = (ws.st.last_merge[0], ws.st.last_merge[1],
                                   pair_rank(&self.m, ws.st.last_merge[0], ws.st.last_merge[1]) + 1)
        return bytes(rebuilds), merges

    def _rebuild_table(self):
        """``(rebuilds, token_merge)``: the bit of each token plain BPE of its bytes gives, and each
        one's last merge ``(left, right, rank + 1)``, ``(0, 0, 0)`` for the others and single bytes."""
        cdef uint32_t tid
        return (bytes(self._rebuilds), [(self._token_merge[tid].left, self._token_merge[tid].right,
                                         self._token_merge[tid].rank) for tid in range(self.m.n_ids)])

    cdef bint _bytes_known(self, uint32_t tid):
        cdef uint32_t k
        if self.complete_bytes:
            return True
        for k in range(self.m.token_off[tid], self.m.token_off[tid + 1]):
            if self.m.byte_id[self.m.token_bytes[k]] < 0:
                return False
        return True

    # -- workspaces ----------------------------------------------------------------------
    cdef object _checkout(self):
        # Called holding the GIL, as _checkin is: so _busy counts the workspaces in use, and
        # the shared piece cache is emptied only when none is (when it is full, or was asked to
        # be). A list pop is atomic, so each workspace has one user at a time.
        cdef Workspace ws
        if self._busy == 0 and (self._clear_when_idle or cache_full(&self._cache)):
            cache_clear(&self._cache)
            self._clear_when_idle = False
        self._busy += 1
        try:
            ws = <Workspace>self._pool.pop()
        except IndexError:
            return Workspace()
        if ws.stale:
            ws.forget()     # here, on the thread that uses it: its caches then fill that core's
        return ws

    cdef void _checkin(self, object ws):
        self._busy -= 1
        if len(self._pool) < 64:
            self._pool.append(ws)

    cdef list _id_list(self, State* st, size_t start, size_t end):
        return id_list_of(self, st.ids.data() + start, end - start)

    # -- encoding --------------------------------------------------------------------------
    def encode(self, str text not None, bint refuse_surrogates=False):
        """Token ids of ``text`` (pre-tokenized by the pattern).

        With ``refuse_surrogates``, a text holding a lone surrogate gives None
        (the caller decides what they mean; tiktoken replaces them).

        >>> bpe = ByteBPE([bytes([i]) for i in range(256)], None, pattern=Pattern.PAT_CL100K, whole_piece=True)
        >>> bpe.encode("hi!")
        [104, 105, 33]
        """
        if refuse_surrogates and has_lone_surrogate(text):
            return None
        cdef Workspace ws = <Workspace>self._checkout()
        try:
            self._run(ws.st, text, False)
            return self._id_list(ws.st, 0, ws.st.ids.size())
        finally:
            self._checkin(ws)

    def encode_to_bytes(self, str text not None):
        """Token ids of ``text`` as the bytes of a uint32 array (machine byte order)."""
        cdef Workspace ws = <Workspace>self._checkout()
        try:
            self._run(ws.st, text, False)
            return PyBytes_FromStringAndSize(<char*>ws.st.ids.data(), ws.st.ids.size() * sizeof(uint32_t))
        finally:
            self._checkin(ws)

    def encode_single_piece(self, str piece not None):
        """Ids of ``piece`` as one piece (no pattern): whole-piece look-up, then merges."""
        cdef Workspace ws = <Workspace>self._checkout()
        try:
            self._run(ws.st, piece, True)
            return self._id_list(ws.st, 0, ws.st.ids.size())
        finally:
            self._checkin(ws)

    def encode_bytes_piece(self, bytes piece not None):
        """Ids of raw bytes as one piece (they need not be UTF-8)."""
        return self._bytes_piece(piece, True)

    def encode_bytes_plain(self, bytes piece not None):
        """Ids of raw bytes by merges alone, no whole-piece look-up (tiktoken's ``byte_pair_encode``).

        >>> bpe = ByteBPE([bytes([i]) for i in range(256)] + [b"ab", b"bc", b"abcd"], None, pattern=Pattern.PAT_CL100K,
        ...               whole_piece=True)
        >>> bpe.encode_bytes_piece(b"abcd"), bpe.encode_bytes_plain(b"abcd")
        ([258], [256, 99, 100])
        """
        return self._bytes_piece(piece, False)

    cdef list _bytes_piece(self, bytes piece, bint whole):
        cdef Workspace ws
        cdef State* st
        if not self.complete_bytes:
            from pieceworks.errors import ConfigError
            raise ConfigError("this vocabulary lacks some single bytes, so it encodes text only",
                              fix="encode a str instead of raw bytes")
        ws = <Workspace>self._checkout()
        st = ws.st
        try:
            st.ids.clear()
            if PyBytes_GET_SIZE(piece) and whole:
                encode_piece(&self.m, <const uint8_t*>PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece), st.ids, st)
            elif PyBytes_GET_SIZE(piece):
                bpe_plain(&self.m, <const uint8_t*>PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece), st.ids, st)
            return self._id_list(st, 0, st.ids.size())
        finally:
            self._checkin(ws)

    def encode_pieces(self, list pieces):
        """Ids of pieces cut by the caller (a pattern the kernel has no scanner for)."""
        cdef Workspace ws = <Workspace>self._checkout()
        cdef State* st = ws.st
        try:
            st.ids.clear()
            for piece in pieces:
                self._run_more(st, <str>piece)
            return self._id_list(st, 0, st.ids.size())
        finally:
            self._checkin(ws)

    def encode_batch(self, list texts, bint refuse_surrogates=False):
        """``[encode(t) for t in texts]``, with the GIL released once for the whole list.

        With ``refuse_surrogates``, a list holding a text with a lone surrogate gives None.
        """
        cdef Workspace ws = <Workspace>self._checkout()
        cdef State* st = ws.st
        cdef Py_ssize_t k
        cdef size_t start = 0
        cdef list out
        cdef tuple keep = PyTuple_New(len(texts))
        try:
            if self._encode_all(st, texts, refuse_surrogates, NULL, keep):
                return None
            out = PyList_New(0)
            for k in range(len(keep)):
                out.append(self._id_list(st, start, st.item_end[k]))
                start = st.item_end[k]
            return out
        finally:
            self._checkin(ws)

    def batch_job(self, list texts, bint refuse_surrogates=False, Py_ssize_t chunk_chars=CHUNK_CHARS,
                  AroundTokens around=None):
        """A :class:`BatchJob` that encodes ``texts`` on several threads (None as :meth:`encode_batch`).

        ``around``: a text holding one of its tokens (each with an id: tiktoken's
        allowed special tokens) is encoded around them (see ``token_finder.AroundTokens``).

        >>> from pieceworks._kernels.token_finder import AroundTokens, TokenTrie
        >>> bpe = ByteBPE([bytes([i]) for i in range(256)], None, pattern=Pattern.PAT_CL100K, whole_piece=True)
        >>> bpe.batch_job(["a<s>b", "<s>"], around=AroundTokens(TokenTrie(["<s>"]), [300])).run()
        [[97, 300, 98], [300]]
        """
        cdef BatchJob job = BatchJob.__new__(BatchJob)
        if around is not None:
            if not around.every_token_has_an_id:
                raise ValueError("batch_job: around needs an id for each of its strings")
            if around.inner is not None:     # (its trie finds the texts to encode around: the outer pass's)
                raise ValueError("batch_job: around has one pass here (no inner one)")
            job.around, job.finder = around, around.trie
        return job if self._fill_job(job, texts, refuse_surrogates, chunk_chars, True) else None

    def encode_around(self, str text not None, AroundTokens around not None, bint holding_only=False):
        """The ids of ``text`` encoded around the tokens in it (``token_finder.AroundTokens``), or None
        if it holds one with no id (or, with ``holding_only``, none of them). A lone surrogate is
        encoded as :meth:`encode` does.

        >>> from pieceworks._kernels.token_finder import AroundTokens, TokenTrie
        >>> bpe = ByteBPE([bytes([i]) for i in range(256)], None, pattern=Pattern.PAT_CL100K, whole_piece=True)
        >>> around = AroundTokens(TokenTrie(["<s>", "<s>x", "ab"]), [300, 301, None])
        >>> bpe.encode_around("a<s>b<s>x", around), bpe.encode_around("ab", around), bpe.encode_around("a b", around)
        ([97, 300, 98, 301], None, [97, 32, 98])
        >>> bpe.encode_around("a b", around, holding_only=True) is None
        True
        >>> two = AroundTokens(TokenTrie(["<s>"]), [300], AroundTokens(TokenTrie(["a<", "b"]), [400, 401]))
        >>> bpe.encode_around("a<s>b", two)      # ("a<" starts first, but "<s>" is split out first)
        [97, 300, 401]
        """
        cdef Workspace ws = <Workspace>self._checkout()
        cdef AroundScratch scratch
        cdef bint ascii = PyUnicode_IS_ASCII(text)
        cdef Py_ssize_t count
        cdef int kind = PyUnicode_KIND(text)
        cdef const char* data = <const char*>PyUnicode_DATA(text)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        try:
            ws.st.ids.clear()
            if n >= NOGIL_MIN_CHARS:
                with nogil:
                    count = encode_around(&self.m, around, kind, data, n, ascii, ws.st, &scratch)
            else:
                count = encode_around(&self.m, around, kind, data, n, ascii, ws.st, &scratch)
            if count < 0 or holding_only and count == 0:
                return None
            return self._id_list(ws.st, 0, ws.st.ids.size())
        finally:
            self._checkin(ws)

    def raw_batch_job(self, list texts, type cls, strings, frame, tuple truncation, bint nfc, Py_ssize_t max_chars,
                      list skip=None, type ids_cls=None, TokenTrie finder=None, tuple around=None,
                      Py_ssize_t chunk_chars=CHUNK_CHARS, bint ids_only=False):
        """A :class:`BatchJob` whose result is a lazy ``cls`` encoding of each text (``Tokenizer.encode_batch``).

        Each is a lazy encoding of the text's tokens (``strings``, ``frame``,
        cut as ``truncation`` says), or None for the long way:
        the texts whose indices ``skip`` lists, a text of ``max_chars`` or
        more, or one truncation may not cut here. No prefix space is added.
        With ``nfc``, a text NFC would change is normalized (with each
        char's span in the text) by the thread that takes it and encoded
        in that form, its offsets moved back; unless it holds one of the
        ``finder``'s strings before or after: then it is left out. ``ids_cls``: each
        encoding's ``ids`` list is built as it is made (on the calling
        thread, while the others encode), for callers that read them all;
        one that needs no cut is an ``ids_cls`` (a subclass of ``cls``
        that may keep ``ids`` in a slot: ``encoding.EncodingWithIds``).
        ``finder``: a text holding one of its strings (an added token) is
        left out too, found by the thread that takes it (the texts are
        asked in parallel, as they are encoded, not all before).

        ``around`` (with ``ids_cls``): ``(tokens, strings, spans_from)``,
        and a text holding one of the ``token_finder.AroundTokens`` is encoded
        around them (one holding a token with no id is left out; the
        finder is then the tokens' trie, unless they have an inner pass:
        then ``finder`` must find both passes' strings). Its encoding (an ``ids_cls``)
        holds the ids; it spells its tokens from ``strings`` and works its
        offsets out through ``spans_from`` (from the text) when first read.

        ``ids_only`` (with ``ids_cls``): each item is the ids list its
        encoding would hold, and no encoding is made (None stays None).
        """
        from pieceworks._unicode_forms import form_tables, quick_check, verdict_changes

        cdef BatchJob job = BatchJob.__new__(BatchJob)
        cdef Py_ssize_t k
        # (The quick check in C, as changes_text does, without its Python frame a text: is_normalized
        # alone took half again as long on lines of the multilingual corpus, and normalizes a text
        # with marks whole to answer.)
        quick = quick_check("NFC") if nfc else None
        self._fill_job(job, texts, False, chunk_chars, False)
        job.raw_mode = True
        if ids_only and ids_cls is None:
            raise ValueError("raw_batch_job: ids_only needs an ids_cls (the encodings it stands for)")
        job.eager_ids = ids_cls is not None
        job.ids_cls = ids_cls
        job.ids_only = ids_only
        job.finder = finder
        if around is not None and ids_cls is not None:
            job.around = <AroundTokens?>around[0]
            if job.around.inner is None:
                job.finder = job.around.trie
            elif finder is None:
                raise ValueError("raw_batch_job: an around with an inner pass needs a finder of both passes' strings")
            job.around_basis = basis_for(around[1], frame, None, <SpanSource?>around[2], None)
            job.held.resize(len(job.keep), 0)
        job.cls, job.strings, job.frame, job.truncation = cls, strings, frame, truncation
        job.skip.resize(len(job.keep), 0)
        for k in skip or ():
            job.skip[k] = 1
        for k in range(len(job.keep)):
            if job.texts.lengths[k] >= max_chars:
                job.skip[k] = 1
            elif nfc and not job.texts.asciis[k]:
                verdict = quick(job.keep[k])
                if verdict and verdict_changes("NFC", job.keep[k], verdict):
                    if job.normal.empty():
                        job.nfc = form_tables("NFC")
                        job.normal.resize(len(job.keep), 0)
                        job.normal_spans.resize(len(job.keep))
                    job.normal[k] = 1
        return job

    cdef bint _fill_job(self, object job_object, list texts, bint refuse_surrogates,
                        Py_ssize_t chunk_chars, bint split) except -1:
        """Point ``job`` at ``texts`` and cut them into chunks; False if a text held a refused surrogate.

        A chunk is about ``chunk_chars`` chars of whole texts; with ``split``
        a longer text is cut into segments of about a chunk (at
        :func:`safe_cut`), so that threads share its work too. The last
        eighth of the chars goes in quarter chunks: the threads then run out
        of work at nearly the same moment, instead of one finishing a whole
        chunk while the others wait.
        """
        cdef BatchJob job = <BatchJob>job_object
        cdef Py_ssize_t count, i, acc = 0, start, cut, length, total = 0, before = 0, tail, limit
        cdef Py_ssize_t first = 0, first_start = 0, quarter = max(chunk_chars // 4, 1)
        cdef const Py_ssize_t* lengths
        job.bpe = self
        count = len(texts)
        job.keep = PyTuple_New(count)   # holds the texts even if the list changes meanwhile
        if self._read_texts(texts, refuse_surrogates, &job.texts, job.keep):
            return False
        # Strs only (checked above), so no cycle runs through it: the collector need not walk it
        # (the lists a job makes trigger a collection every few hundred texts).
        PyObject_GC_UnTrack(<void*>job.keep)
        split = split and self.m.pattern != PAT_PIECES      # (cut pieces: the caller's, not the scanner's)
        lengths = job.texts.lengths.data()
        for i in range(count):
            total += lengths[i]
        tail = total - total // 8 if total > chunk_chars else total     # (one chunk in all: no thread waits)
        for i in range(count):
            start = 0
            length = lengths[i]
            limit = chunk_chars if before < tail else quarter
            while split and length - start > limit + limit // 2 and not (
                    job.around is not None and job.around.trie.holds_chars(job.texts.kinds[i], job.texts.datas[i],
                                                                            length)):
                # (A text holding tokens to encode around is not cut: its segments would not see them.)
                # The first place after a chunk (or the rest of the text, if need be: one scan).
                cut = safe_cut(self.m.classes, job.texts.kinds[i], job.texts.datas[i], length,
                               start + limit, length - limit // 2, self.m.pattern == PAT_GPT2)
                if cut < 0:
                    break
                if acc:     # the open chunk (whole texts before this one) ends here
                    job.chunks.push_back(ChunkRange(first, first_start, i - 1, lengths[i - 1]))
                    acc = 0
                job.chunks.push_back(ChunkRange(i, start, i, cut))
                start = cut
                limit = chunk_chars if before + start < tail else quarter
            if acc == 0:
                first, first_start = i, start
            acc += length - start + 16   # + 16: a text's own cost
            if acc >= limit:
                job.chunks.push_back(ChunkRange(first, first_start, i, length))
                acc = 0
            before += length
        if acc:
            job.chunks.push_back(ChunkRange(first, first_start, count - 1, lengths[count - 1]))
        job.results.resize(job.chunks.size())
        job.board = new pw_board(<Py_ssize_t>job.results.size())
        return True

    def encode_raw_batch(self, list texts, bint prefix_space=False, strings=None):
        """``[encode_raw(t, prefix_space) for t in texts]``, the GIL released once for the whole list;
        with ``strings``, each result ends with it, ``(raw, n, n_words, strings)`` (a plan's form,
        untracked: no Python step a text to add it)."""
        cdef Workspace ws = <Workspace>self._checkout()
        cdef State* st = ws.st
        cdef Py_ssize_t k
        cdef vector[Py_ssize_t] pieces
        cdef size_t start = 0
        cdef list out
        cdef tuple keep = PyTuple_New(len(texts)), item
        try:
            self._encode_all(st, texts, False, &pieces, keep)
            out = PyList_New(0)
            for k in range(len(keep)):
                raw = raw_of(self, st.ids.data() + start, st.item_end[k] - start, keep[k], prefix_space)
                if strings is None:
                    item = (raw, st.item_end[k] - start, pieces[k])
                else:
                    item = (raw, st.item_end[k] - start, pieces[k], strings)
                    PyObject_GC_UnTrack(<void*>item)
                out.append(item)
                start = st.item_end[k]
            return out
        finally:
            self._checkin(ws)

    cdef int _read_texts(self, texts, bint refuse_surrogates, TextRefs* refs, tuple keep=None) except -1:
        """Where each str of the list or tuple ``texts`` keeps its chars (for the kernel to read without
        the GIL); 1, with ``refs`` unfinished, if one holds a lone surrogate and ``refuse_surrogates``
        is set. ``keep``: a new tuple as long as ``texts``, given a reference to each text.

        One pass over the texts' headers, which a long list of lines has mostly out of the CPU's
        caches: this runs before the threads start, so its time is not shared.
        """
        cdef Py_ssize_t n = len(texts), i
        cdef PyObject** items = PySequence_Fast_ITEMS(texts)
        cdef PyObject* text
        if keep is not None and len(keep) != n:     # (a collection the tuple's allocation ran changed the list)
            raise RuntimeError(f"the list of texts changed size while being read ({len(keep)} -> {n}); "
                               "do not change a list another thread is encoding")
        refs.datas.resize(n)
        refs.lengths.resize(n)
        refs.kinds.resize(n)
        refs.asciis.resize(n)
        cdef const void** datas = refs.datas.data()
        cdef Py_ssize_t* lengths = refs.lengths.data()
        cdef int* kinds = refs.kinds.data()
        cdef uint8_t* asciis = refs.asciis.data()
        for i in range(n):
            text = items[i]
            if not PyUnicode_CheckExact_p(text):
                raise TypeError(f"expected str, got {type(<object>text).__name__}")
            if keep is not None:
                Py_INCREF_p(text)
                PyTuple_SET_ITEM_p(keep, i, text)
            datas[i] = PyUnicode_DATA_p(text)
            lengths[i] = PyUnicode_GET_LENGTH_p(text)
            kinds[i] = PyUnicode_KIND_p(text)
            asciis[i] = PyUnicode_IS_ASCII_p(text)
            if refuse_surrogates and holds_surrogate(kinds[i], datas[i], lengths[i]):
                return 1
        return 0

    cdef int _encode_all(self, State* st, list texts, bint refuse_surrogates,
                         vector[Py_ssize_t]* pieces, tuple keep) except -1:
        """Encode every text into ``st`` (``item_end[k]``: where text k's ids end) with the GIL
        released once; with ``pieces``, each text's piece count too. 1: a text held a lone surrogate and
        ``refuse_surrogates`` was set (nothing encoded).

        ``keep`` (a new tuple as long as ``texts``) takes a reference to each text: another
        thread may change the list while the GIL is released, and the texts read must live on
        (the caller reads them, and their count, from ``keep`` after)."""
        cdef Py_ssize_t n = len(texts), k, count
        cdef TextRefs refs
        if self._read_texts(texts, refuse_surrogates, &refs, keep):
            return 1
        st.ids.clear()
        st.item_end.clear()
        with nogil:
            for k in range(n):
                count = encode_str(&self.m, refs.kinds[k], refs.datas[k], refs.lengths[k], refs.asciis[k], st, False)
                st.item_end.push_back(<Py_ssize_t>st.ids.size())
                if pieces != NULL:
                    pieces.push_back(count)
        return 0

    def encode_with_offsets(self, str text not None, list token_strings, bint prefix_space=False):
        """``(ids, tokens, offsets, words, n_pieces)`` of ``text``, Hugging Face style.

        Offsets are char spans: a token covers every char one of whose UTF-8
        bytes it holds. ``prefix_space``: ``text`` starts with a space that
        was added in front of the original (ByteLevel's ``add_prefix_space``);
        that space has the first char's span, and offsets are into the
        original (``text[1:]``). ``token_strings[id]`` gives each token.
        """
        cdef tuple result = self._encode_raw(text, prefix_space)
        cdef bytes raw = result[0]
        cdef Py_ssize_t n = result[1]
        return (id_list(raw, n), token_list(raw, n, token_strings), offset_list(raw, n, 0), word_list(raw, n, -1),
                result[2])

    def encode_raw(self, str text not None, bint prefix_space=False):
        """``(raw, n_tokens, n_pieces)``: :meth:`encode_with_offsets` as a raw encoding.

        (See raw_encoding.pyx: int32 ids, starts, ends, words in one bytes
        object; a token's string is ``token_strings[id]``.)
        """
        return self._encode_raw(text, prefix_space)

    cdef tuple _encode_raw(self, str text, bint prefix_space):
        cdef Workspace ws = <Workspace>self._checkout()
        cdef State* st = ws.st
        cdef Py_ssize_t pieces
        try:
            pieces = self._run(st, text, False)
            return (raw_of(self, st.ids.data(), st.ids.size(), text, prefix_space),
                    st.ids.size(), pieces)
        finally:
            self._checkin(ws)

    cdef tuple _encode_ids_only(self, str text, SpanSource spans):
        """``(raw, n_tokens, n_pieces, spans, text)``: :meth:`encode_raw` with the ids alone in ``raw``
        (see raw_encoding's module doc); ``spans`` works out the offsets and words from ``text`` if asked."""
        cdef Workspace ws = <Workspace>self._checkout()
        cdef State* st = ws.st
        cdef Py_ssize_t pieces
        try:
            pieces = self._run(st, text, False)
            return (ids_raw(st.ids.data(), st.ids.size(), NULL, 0), st.ids.size(), pieces,
                    spans, text)
        finally:
            self._checkin(ws)

    cdef Py_ssize_t _run(self, State* st, str text, bint one_piece) except -1:
        st.ids.clear()
        return self._run_more(st, text, one_piece)

    cdef Py_ssize_t _run_more(self, State* st, str text, bint one_piece=True) except -1:
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), pieces
        cdef int kind = PyUnicode_KIND(text)
        cdef const void* data = PyUnicode_DATA(text)
        cdef bint ascii = PyUnicode_IS_ASCII(text)
        if n >= NOGIL_MIN_CHARS:
            with nogil:
                pieces = encode_str(&self.m, kind, data, n, ascii, st, one_piece)
        else:
            pieces = encode_str(&self.m, kind, data, n, ascii, st, one_piece)
        return pieces

    def encode_raw_cut_batch(self, list texts not None, Cutter cutter not None, uintptr_t region, strings=None,
                             AroundTokens around=None, Py_ssize_t limit=-1):
        """``[(raw, n_tokens, n_pieces) or None, ...]``: :meth:`encode_raw` of each str of ``texts``
        cut into pieces by ``cutter`` (a chain of Oniguruma patterns, not a scanner of this kernel),
        each token's word its piece, the GIL released once for the list;
        None for a text a search failed on (the caller's long way raises its error), or of
        ``2**29`` chars or more.
        ``region``: an ``OnigRegion`` no other thread uses; ``strings``, if given, ends each tuple.
        ``around``: the added tokens to split out first (``token_finder.AroundTokens``), each
        stretch between them cut and encoded on its own, each token one word (``n_pieces`` is then
        0, as ``raw_encoding.join_around`` gives it); None also for a text one of them has no id
        for, or of more than ``limit`` (>= 0) tokens.

        >>> from array import array
        >>> from pieceworks import Regex
        >>> from pieceworks._kernels.onig_spans import Behavior, Cutter
        >>> from pieceworks._regex import _SEARCH, _region_address
        >>> bpe = ByteBPE([bytes([i]) for i in range(256)] + [b"ab"], array("I", [97, 98, 256]),
        ...               pattern=Pattern.PAT_PIECES, whole_piece=False)
        >>> cutter = Cutter(_SEARCH, [(Regex("b"), Behavior.CUT_MERGED_WITH_PREVIOUS, False)])
        >>> [(raw, n, pieces)] = bpe.encode_raw_cut_batch(["abab"], cutter, _region_address())
        >>> id_list(raw, n), offset_list(raw, n, 0), word_list(raw, n, -1), pieces
        ([256, 256], [(0, 2), (2, 4)], [0, 1], 2)
        """
        cdef Py_ssize_t n = len(texts), k, j, count, start = 0
        cdef tuple keep = PyTuple_New(n)
        cdef TextRefs refs
        cdef vector[Py_ssize_t] token_end, pieces, ends, scratch
        cdef vector[uint8_t] utf8
        cdef vector[int32_t] spans
        cdef AroundScratch found
        cdef const CutStage* stages = cutter.stages.data()
        cdef size_t n_stages = cutter.stages.size()
        cdef Workspace ws
        cdef State* st
        cdef bytes raw
        cdef int32_t* out
        cdef list results = PyList_New(0)
        self._read_texts(texts, False, &refs, keep)
        ws = <Workspace>self._checkout()
        st = ws.st
        try:
            st.ids.clear()
            with nogil:
                for k in range(n):
                    if refs.lengths[k] > INT32_MAX // 4:     # (offsets are int32, the UTF-8 up to 4 bytes a char)
                        pieces.push_back(-1)
                    elif around is None:
                        pieces.push_back(cut_and_encode(&self.m, stages, n_stages, cutter.search, refs.datas[k],
                                                        refs.lengths[k], refs.kinds[k], refs.asciis[k],
                                                        <Region*>region, st, &utf8, &ends, &scratch, &spans, 0, 0))
                    elif cut_around(&self.m, stages, n_stages, cutter.search, around, <const char*>refs.datas[k],
                                    refs.lengths[k], refs.kinds[k], refs.asciis[k], <Region*>region, st, &found,
                                    &utf8, &ends, &scratch, &spans) >= 0:
                        pieces.push_back(0)
                    else:
                        pieces.push_back(-1)
                    token_end.push_back(st.ids.size())
            for k in range(n):
                count = token_end[k] - start
                if pieces[k] < 0 or 0 <= limit < count:
                    results.append(None)
                else:
                    raw = PyBytes_FromStringAndSize(NULL, 16 * count)
                    out = <int32_t*>PyBytes_AS_STRING(raw)
                    memcpy(out, st.ids.data() + start, 4 * count)
                    for j in range(count):     # (the spans are kept a token's three together)
                        out[count + j] = spans[3 * (start + j)]
                        out[2 * count + j] = spans[3 * (start + j) + 1]
                        out[3 * count + j] = spans[3 * (start + j) + 2]
                    results.append((raw, count, pieces[k]) if strings is None else (raw, count, pieces[k], strings))
                start = token_end[k]
            return results
        finally:
            self._checkin(ws)

    def has_surrogates(self, str text not None):
        """Whether ``text`` holds a lone surrogate (U+D800..U+DFFF), which has no UTF-8 form."""
        return has_lone_surrogate(text)

    # -- decoding and inspection -------------------------------------------------------------
    def decode_bytes(self, ids):
        """The bytes of ``ids`` joined; an unknown id raises KeyError (as tiktoken does)."""
        cdef ByteBuffer out
        self._join_ids(ids, &out)
        return PyBytes_FromStringAndSize(out.data, out.size)

    def decode_utf8(self, ids, str errors not None="replace"):
        """``decode_bytes(ids).decode("utf-8", errors)``, with no bytes object between (tiktoken's
        ``decode``; for a chat turn's ids the bytes were a fifth of the call). KeyError for an
        unknown id, UnicodeDecodeError as ``bytes.decode`` raises it.

        >>> bpe = ByteBPE([bytes([i]) for i in range(256)], None, pattern=Pattern.PAT_CL100K, whole_piece=True)
        >>> bpe.decode_utf8([104, 105, 0xC3]), bpe.decode_utf8([0xC3, 0xA9])
        ('hi\ufffd', 'é')
        """
        cdef ByteBuffer out
        self._join_ids(ids, &out)
        return PyUnicode_DecodeUTF8(out.data, out.size, PyUnicode_AsUTF8(errors))

    cdef int _join_ids(self, ids, ByteBuffer* out) except -1:
        """The bytes of ``ids`` into ``out`` (on the stack while they fit); KeyError for an unknown id."""
        cdef Py_ssize_t tid
        buffer_start(out)
        for item in ids:
            tid = item
            if tid < 0 or tid >= self.m.n_ids or not self._has_token[tid]:
                raise KeyError(tid)
            buffer_put(out, <const char*>self.m.token_bytes + self.m.token_off[tid],
                       token_len(&self.m, <uint32_t>tid))
        return 0

    def token_bytes(self, Py_ssize_t tid):
        """The bytes of one id (KeyError if there is no such id)."""
        if tid < 0 or tid >= self.m.n_ids or not self._has_token[tid]:
            raise KeyError(tid)
        return PyBytes_FromStringAndSize(<char*>self.m.token_bytes + self.m.token_off[tid],
                                         token_len(&self.m, <uint32_t>tid))

    def token_merges(self):
        """Per id, the pair of ids its last merge joins (plain BPE of its bytes); None for a
        single byte or a token plain BPE never makes. Gives Hugging Face merges for tiktoken ranks."""
        cdef uint32_t tid
        out = []
        for tid in range(self.m.n_ids):
            if self.m.token_merge[tid].rank == 0 or not token_rebuilds(&self.m, tid):
                out.append(None)
            else:
                out.append((self.m.token_merge[tid].left, self.m.token_merge[tid].right))
        return out

    def token_id(self, bytes value not None):
        """The id of a token given its bytes, or None (decode-only ids are not looked up)."""
        cdef size_t n = PyBytes_GET_SIZE(value)
        cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(value)
        if n == 0:
            return None
        cdef const BytesSlot* hit = vocab_find(&self.m, p, n, hash_bytes(p, n))
        return None if hit == NULL or not self._has_token[hit.value] else hit.value

    @property
    def n_ids(self):
        """One more than the largest id."""
        return self.m.n_ids

    @property
    def max_token_len(self):
        """Bytes in the longest token."""
        return self.m.max_token_len

    def clear_cache(self):
        """Forget the cached pieces (now, or when no thread is encoding), and what every idle
        workspace cached (chars, pairs: each empties them when next used); the buffers are kept."""
        if self._busy == 0:
            cache_clear(&self._cache)
        else:
            self._clear_when_idle = True
        for item in self._pool:
            (<Workspace>item).stale = True


# -- lists of texts on several threads ------------------------------------------------------


cdef struct Segment:
    Py_ssize_t text               # which text, and its chars start:end
    Py_ssize_t start
    Py_ssize_t end


cdef struct ChunkRange:
    Py_ssize_t first              # a chunk: the texts first..last, from char start of the first
    Py_ssize_t start              # to char end of the last (a text cut in parts spreads over
    Py_ssize_t last               # several chunks; no memory per text, so a list of short
    Py_ssize_t end                # lines costs the job no writes of its own)


cdef inline Segment segment_at(const ChunkRange* c, const Py_ssize_t* lengths, Py_ssize_t k) noexcept nogil:
    """The ``k``-th text (or part of one) of chunk ``c``."""
    cdef Py_ssize_t text = c.first + k
    return Segment(text, c.start if k == 0 else 0, c.end if text == c.last else lengths[text])


cdef struct ChunkIds:
    vector[uint32_t] ids          # the chunk's texts' ids, one after another
    vector[Py_ssize_t] ends       # where each text's ids end


cdef class OneText:
    """:meth:`ByteBPE.encode_raw` of one text as the byte-level plan takes it, for ``Tokenizer.encode``'s fast way.

    ``one(text)`` is ``(raw, n_tokens, n_pieces, spans, source)`` with the
    ids alone in ``raw`` (see ``_encode_ids_only``), or None for the long
    way: a text of ``max_chars`` or more, or (``nfc``: the tokenizer has an
    NFC normalizer) one that NFC would change, unless ``not_nfc(text)``
    encodes those. ``prefix_space``: a text not starting with a space gets
    one, as ByteLevel(add_prefix_space) does.
    """
    cdef ByteBPE kernel
    cdef bint prefix_space, nfc
    cdef Py_ssize_t max_chars
    cdef object changes_text, not_nfc
    cdef ByteSpans spans, prefixed_spans

    def __init__(self, ByteBPE kernel not None, bint prefix_space, bint nfc, Py_ssize_t max_chars, not_nfc=None):
        from pieceworks._unicode_forms import changes_text

        self.kernel, self.prefix_space, self.nfc, self.max_chars = kernel, prefix_space, nfc, max_chars
        self.changes_text = changes_text
        self.not_nfc = not_nfc
        self.spans, self.prefixed_spans = ByteSpans(kernel, False), ByteSpans(kernel, True)

    def __call__(self, str text not None):
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        if n >= self.max_chars:
            return None
        if self.nfc and not PyUnicode_IS_ASCII(text) and self.changes_text("NFC", text):
            return None if self.not_nfc is None else self.not_nfc(text)
        # The ids alone: most callers read only them, and the offsets are worked out if asked.
        if self.prefix_space and n and PyUnicode_READ_CHAR(text, 0) != 0x20:
            return self.kernel._encode_ids_only(" " + text, self.prefixed_spans)
        return self.kernel._encode_ids_only(text, self.spans)

    def encode_words(self, list words not None):
        """``(raw, n_tokens, n_words)`` of a pre-tokenized sequence: each word encoded as ``one(word)``
        encodes it, its tokens' offsets within that word and their word its position; None for
        the long way (a word not a str, or one ``one`` sends there: too long, or changed by NFC
        with no ``not_nfc``, or refused by it).

        One call for all the words: a word through ``one`` and then joined cost a microsecond
        of tuples and buffers each.

        >>> one = OneText(ByteBPE([bytes([i]) for i in range(256)], None, pattern=Pattern.PAT_CL100K, whole_piece=True),
        ...               False, False, 100)
        >>> from pieceworks._kernels.raw_encoding import offset_list, word_list
        >>> raw, n, n_words = one.encode_words(["hi", "a b"])
        >>> n, n_words, offset_list(raw, n, 0), word_list(raw, n, -1)
        (5, 2, [(0, 1), (1, 2), (0, 1), (1, 2), (2, 3)], [0, 0, 1, 1, 1])
        """
        cdef Workspace ws
        cdef State* st
        cdef vector[int32_t] starts, ends, word_of
        cdef Py_ssize_t k, j, first, count, total
        cdef bint prefixed
        cdef bytes raw
        cdef int32_t* out
        cdef const int32_t* made
        cdef tuple items = tuple(words)      # (a long word drops the GIL: another thread may change the list)
        for word in items:
            if type(word) is not str or PyUnicode_GET_LENGTH(word) >= self.max_chars:
                return None
        ws = <Workspace>self.kernel._checkout()
        st = ws.st
        try:
            st.ids.clear()
            for k in range(len(items)):
                text = <str>items[k]
                first = st.ids.size()
                if self.nfc and not PyUnicode_IS_ASCII(text) and self.changes_text("NFC", text):
                    result = None if self.not_nfc is None else self.not_nfc(text)
                    if result is None:
                        return None
                    count = (<tuple>result)[1]      # (raw, n, n_pieces), offsets in the text as it is
                    made = <const int32_t*>PyBytes_AS_STRING(<bytes>(<tuple>result)[0])
                    st.ids.insert(st.ids.end(), <const uint32_t*>made, <const uint32_t*>made + count)
                    starts.insert(starts.end(), made + count, made + 2 * count)
                    ends.insert(ends.end(), made + 2 * count, made + 3 * count)
                else:
                    prefixed = self.prefix_space and PyUnicode_GET_LENGTH(text) and PyUnicode_READ_CHAR(text, 0) != 0x20
                    if prefixed:
                        text = " " + text
                    self.kernel._run_more(st, text, False)
                    count = st.ids.size() - first
                    starts.resize(first + count)
                    ends.resize(first + count)
                    word_of.resize(first + count)
                    # (Its words column is written over below: each token's word is its word's position.)
                    fill_spans(self.kernel, text, prefixed, <const int32_t*>st.ids.data() + first, count,
                               starts.data() + first, ends.data() + first, word_of.data() + first)
                word_of.resize(first + count)
                for j in range(first, first + count):
                    word_of[j] = <int32_t>k
            total = st.ids.size()
            raw = PyBytes_FromStringAndSize(NULL, 16 * total)
            out = <int32_t*>PyBytes_AS_STRING(raw)
            memcpy(out, st.ids.data(), 4 * total)
            memcpy(out + total, starts.data(), 4 * total)
            memcpy(out + 2 * total, ends.data(), 4 * total)
            memcpy(out + 3 * total, word_of.data(), 4 * total)
            return raw, total, len(items)
        finally:
            self.kernel._checkin(ws)


cdef Py_ssize_t encode_around(const Model* m, AroundTokens around, int kind, const char* data, Py_ssize_t n,
                              bint ascii, State* st, AroundScratch* scratch) noexcept nogil:
    """Append to ``st.ids`` the ids of the text (``kind``, ``data``, ``n``) encoded around the
    tokens in it (``token_finder.AroundTokens``), each stretch between them on its own: how many
    tokens it found, or -1, with nothing appended, if one has no id."""
    cdef Py_ssize_t at = 0, count = tokens_around(around, kind, data, n, scratch)
    cdef size_t k
    cdef Found t
    if count < 0:
        return -1
    for k in range(scratch.tokens.size() + 1):
        t = scratch.tokens[k] if k < scratch.tokens.size() else Found(<int32_t>n, 0, -1)
        if at < t.start:
            encode_str(m, kind, data + kind * at, t.start - at, ascii, st, False)
        if t.index >= 0:
            st.ids.push_back(<uint32_t>t.index)
        at = t.start + t.length
    return count


cdef class BatchJob:
    """A list of texts encoded by several threads at once, in chunks each takes as it goes.

    Pool threads call :meth:`work`; the calling thread calls :meth:`run`,
    which encodes chunks too and, between them, makes the lists of the
    chunks already done, in order (the lists need the GIL, the encoding
    does not: so they overlap). A thread slowed down takes fewer chunks, and
    the caller, which also makes every list, fewer still. A text much longer
    than a chunk is cut into segments that scan alone as they scan in the
    text (:func:`safe_cut`), spread over chunks, and its list is made from
    them all. Each thread keeps one workspace for the whole list.

    >>> bpe = ByteBPE([bytes([i]) for i in range(256)], None, pattern=Pattern.PAT_CL100K, whole_piece=True)
    >>> job = bpe.batch_job(["hi", "a b", "!"], chunk_chars=1)
    >>> job.n_chunks, job.run()
    (3, [[104, 105], [97, 32, 98], [33]])
    """

    cdef ByteBPE bpe
    cdef tuple keep                    # the texts (the pointers below point into them; a plain job lets go
                                       # of each, leaving NULL, once its list is made: see _let_go)
    cdef TextRefs texts                # where each text keeps its chars
    cdef vector[ChunkRange] chunks     # which texts (or parts of the long ones) each chunk is
    cdef vector[ChunkIds] results
    cdef pw_board* board
    # Raw jobs (ByteBPE.raw_batch_job): lazy encodings instead of id lists.
    cdef bint raw_mode, eager_ids
    cdef bint ids_only                 # raw jobs: each text's ids list alone, no encoding (encode_batch_ids)
    cdef vector[char] skip             # texts left for the long way
    cdef object cls, ids_cls, strings, frame
    cdef TokenTrie finder               # raw jobs: a text holding one of its strings is skipped (None: no check)
    cdef AroundTokens around            # ... or encoded around its tokens (see raw_batch_job; None: not)
    cdef Basis around_basis             # of those texts' encodings
    cdef vector[char] held              # the texts encoded around their tokens
    cdef tuple truncation
    # Raw jobs with an NFC normalizer: the texts NFC changes are normalized by the thread that takes
    # them, and encoded from that (see _encode_normalized). Empty: none.
    cdef FormTables nfc
    cdef vector[char] normal
    cdef vector[vector[int32_t]] normal_spans   # each one's tokens' starts, ends and words, in turn

    def __dealloc__(self):
        del self.board

    @property
    def n_chunks(self):
        return self.results.size()

    def work(self):
        """Encode chunks until none is left (a pool thread's part)."""
        cdef Workspace ws = <Workspace>self.bpe._checkout()
        try:
            with nogil:
                while self._take_one(ws.st) >= 0:
                    pass
        finally:
            self.bpe._checkin(ws)

    cdef Py_ssize_t _take_one(self, State* st) noexcept nogil:
        """Encode the next chunk no thread has taken; its index, or -1 if none is left."""
        cdef Py_ssize_t i = self.board.take(), k
        cdef ChunkIds* out
        if i >= <Py_ssize_t>self.results.size():
            return -1
        st.ids.clear()
        st.item_end.clear()
        cdef Segment g
        cdef int kind
        cdef bint held
        cdef AroundScratch scratch
        cdef vector[Item] items
        cdef const ChunkRange* c = &self.chunks[i]
        for k in range(c.last - c.first + 1):
            g = segment_at(c, self.texts.lengths.data(), k)
            held = False
            if self.normal.size() and self.normal[g.text]:
                self._encode_normalized(g.text, st, items)
                st.item_end.push_back(<Py_ssize_t>st.ids.size())
                continue
            # (A raw job cuts no text, and a plain one none holding tokens to encode around: the thread
            # that takes the text alone reads and writes its flags.)
            if self.finder is not None and (not self.raw_mode or not self.skip[g.text]) \
                    and g.start == 0 and g.end == self.texts.lengths[g.text] \
                    and self.finder.holds_chars(self.texts.kinds[g.text], self.texts.datas[g.text], g.end):
                if self.around is not None and encode_around(
                        &self.bpe.m, self.around, self.texts.kinds[g.text], <const char*>self.texts.datas[g.text],
                        g.end, self.texts.asciis[g.text], st, &scratch) >= 0:
                    held = True
                    if self.raw_mode:
                        self.held[g.text] = 1
                elif self.raw_mode:
                    self.skip[g.text] = 1
            if not held and (not self.raw_mode or not self.skip[g.text]):
                kind = self.texts.kinds[g.text]
                encode_str(&self.bpe.m, kind, <const char*>self.texts.datas[g.text] + kind * g.start,
                           g.end - g.start, self.texts.asciis[g.text], st, False)
            st.item_end.push_back(<Py_ssize_t>st.ids.size())
        # Into the shared results only once per chunk: neighbouring chunks' results share cache
        # lines, and a write per text would bounce them between the cores.
        out = &self.results[i]
        out.ids.assign(st.ids.begin(), st.ids.end())
        out.ends.assign(st.item_end.begin(), st.item_end.end())
        self.board.finish(i, 0)
        return i

    cdef void _encode_normalized(self, Py_ssize_t t, State* st, vector[Item]& items) noexcept nogil:
        """Encode text ``t`` (one NFC changes) in its NFC form, and work out its tokens' offsets (moved
        back into ``t``) and words, kept for :meth:`_list_raw`; or skip it (the long way) if it
        holds an added token to look for (the finder's strings), before NFC or after. (The thread
        that takes the text alone reads and writes its entries.)"""
        cdef int kind = self.texts.kinds[t]
        cdef const void* data = self.texts.datas[t]
        cdef vector[uint32_t] made
        cdef vector[int32_t] spans
        cdef vector[int32_t]* out = &self.normal_spans[t]
        cdef size_t first = st.ids.size(), n
        if self.finder is not None and self.finder.holds_chars(kind, data, self.texts.lengths[t]):
            self.skip[t] = 1
            return
        self.nfc.normalize_aligned(kind, data, self.texts.lengths[t], made, spans, items)
        if self.finder is not None and self.finder.holds_chars(4, made.data(), made.size()):
            self.skip[t] = 1
            return
        encode_str(&self.bpe.m, 4, <const char*>made.data(), made.size(), False, st, False)
        n = st.ids.size() - first
        out.resize(3 * n)       # starts, ends, words: here, on the threads, not on the calling one
        spans_of_str(&self.bpe.m, 4, made.data(), made.size(), False, <const int32_t*>st.ids.data() + first, n,
                     out.data(), out.data() + n, out.data() + 2 * n)
        spans_to_original(out.data(), out.data() + n, n, spans.data(), made.size())

    cdef object _normalized_encoding(self, ChunkSpans shared, Py_ssize_t item, Py_ssize_t first, Py_ssize_t n):
        """The encoding of text ``item`` (its ``n`` ids at ``first`` in the chunk's) that
        :meth:`_encode_normalized` encoded, made whole now from its ids and the rest it kept."""
        cdef vector[int32_t]* rest = &self.normal_spans[item]
        cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16 * n)
        cdef int32_t* blocks = <int32_t*>PyBytes_AS_STRING(raw)
        memcpy(blocks, shared.ids.data() + first, 4 * n)
        memcpy(blocks + n, rest.data(), 12 * n)
        vector[int32_t]().swap(rest[0])
        encoding = encoding_of(self.cls, raw, n, self.strings, self.frame, self.truncation)
        if self.eager_ids and encoding is not None:
            encoding.ids        # built now, while the other threads still encode
        return encoding

    cdef int _list_raw(self, Py_ssize_t i, list out) except -1:
        """Put the lazy encodings of chunk ``i``'s texts (None where skipped) into ``out``; the chunk's
        ids move into a :class:`ChunkSpans`, which lives as long as an encoding needs it.

        With ``eager_ids`` and no cut to make, an encoding (an ``ids_cls``) holds its ids list
        alone, made here from the chunk's ids as the tiktoken face makes its
        lists, and the chunk's :class:`ChunkSpans`: no buffer of its own.
        Otherwise each gets its raw encoding, offsets and all. With ``ids_only``, each
        item is that ids list (or the cut encoding's), and no encoding is kept.
        """
        cdef ChunkIds* chunk = &self.results[i]
        cdef Py_ssize_t k, first = 0, n, item
        cdef Py_ssize_t max_length = PY_SSIZE_T_MAX if self.truncation is None else <Py_ssize_t>self.truncation[0]
        cdef list before = None if self.frame is None else self.frame.ids_before
        cdef list after = None if self.frame is None else self.frame.ids_after
        cdef ChunkSpans shared = ChunkSpans.__new__(ChunkSpans)
        cdef Basis basis = basis_for(self.strings, self.frame, None, shared, None)     # (the chunk's encodings share it)
        shared.bpe = self.bpe
        shared.ids.swap(chunk.ids)
        shared.ends.swap(chunk.ends)
        for k in range(<Py_ssize_t>shared.ends.size()):
            item = self.chunks[i].first + k     # (raw jobs cut no text: one segment each)
            n = shared.ends[k] - first
            text = self.keep[item]
            if self.skip[item]:
                encoding = None
            elif self.normal.size() and self.normal[item]:
                encoding = self._normalized_encoding(shared, item, first, n)
                if self.ids_only and encoding is not None:
                    encoding = encoding.ids
            elif self.held.size() and self.held[item]:       # (made eager: see raw_batch_job's around)
                if n > max_length:
                    encoding = None
                else:
                    encoding = framed_ids(<const int32_t*>shared.ids.data() + first, n, before, after)
                    if not self.ids_only:
                        encoding = lazy_with_ids(self.ids_cls, encoding, n, self.around_basis, text, 0)
            elif self.eager_ids and n <= max_length:
                prefetch_next_ints(self.bpe._int_table, self.bpe._n_ints, <const uint32_t*>shared.ids.data(),
                                   shared.ends[k], shared.ids.size())
                encoding = framed_ids(<const int32_t*>shared.ids.data() + first, n, before, after)
                if not self.ids_only:
                    encoding = lazy_with_ids(self.ids_cls, encoding, n, basis, text, k)
            else:
                encoding = encoding_of(self.cls, shared.full(text, k, n), n, self.strings, self.frame,
                                       self.truncation)
                if self.eager_ids and encoding is not None:
                    ids = encoding.ids      # built now, while the other threads still encode
                    if self.ids_only:
                        encoding = ids
            Py_INCREF_p(<PyObject*>encoding)
            PyList_SET_ITEM_p(out, item, <PyObject*>encoding)
            first = shared.ends[k]
        return 0

    cdef list _joined_ids(self, Py_ssize_t c0, Py_ssize_t at0, Py_ssize_t c1, Py_ssize_t end1):
        """The ids list of a text that begins at ``at0`` in chunk ``c0`` and ends at ``end1`` in
        chunk ``c1`` (its middle parts fill the chunks between: a long text cut in segments)."""
        cdef Py_ssize_t total, c, k = 0, start, stop, i
        cdef list out
        if c0 == c1:
            return id_list_of(self.bpe, self.results[c0].ids.data() + at0, end1 - at0)
        total = <Py_ssize_t>self.results[c0].ids.size() - at0 + end1
        for c in range(c0 + 1, c1):
            total += self.results[c].ids.size()
        out = PyList_New(total)
        for c in range(c0, c1 + 1):
            start = at0 if c == c0 else 0
            stop = end1 if c == c1 else <Py_ssize_t>self.results[c].ids.size()
            for i in range(start, stop):
                if i + PREFETCH_AHEAD < stop:
                    prefetch_int(self.bpe._int_table, self.bpe._n_ints, self.results[c].ids[i + PREFETCH_AHEAD])
                PyList_SET_ITEM_p(out, k, int_ref(self.bpe._int_table, self.bpe._n_ints, self.results[c].ids[i]))
                k += 1
        PyObject_GC_UnTrack(<void*>out)
        return out

    cdef void _let_go(self, Py_ssize_t item) noexcept:
        """Drop the job's reference to text ``item``, all of whose segments are encoded: here, while
        the other threads still encode, rather than all at once after them, with ``keep``."""
        cdef PyObject* text = PyTuple_GET_ITEM_p(self.keep, item)
        cdef PyObject* following
        PyTuple_SET_ITEM_p(self.keep, item, NULL)
        if item + 1 < len(self.keep):
            # Its refcount is written next time, after a list is made: start loading it now
            # (the texts are scattered, and this wait was a twentieth of the calling thread's time).
            following = PyTuple_GET_ITEM_p(self.keep, item + 1)
            if following != NULL:
                pw_prefetch_write(following)
        Py_DECREF_p(text)

    def run(self):
        """Encode chunks and make the lists of the finished ones, in order: the result."""
        cdef Py_ssize_t listed = 0, n = self.results.size(), k, first, c
        cdef Py_ssize_t open_chunk = -1, open_at = 0     # where the text being listed began
        cdef list out = PyList_New(len(self.keep))
        cdef list ids
        cdef ChunkIds* chunk
        cdef Segment g
        # Out of the collector's sight while it fills (no other code sees it yet): each collection
        # the new lists trigger would walk it again. Tracked again before it is returned.
        PyObject_GC_UnTrack(<void*>out)
        cdef Workspace ws = <Workspace>self.bpe._checkout()
        try:
            while listed < n:
                if not self.board.is_done(listed):
                    with nogil:
                        if self._take_one(ws.st) < 0:
                            self.board.wait(listed)   # the rest is taken: wait for the next chunk to list
                    continue
                chunk = &self.results[listed]
                if self.raw_mode:
                    self._list_raw(listed, out)
                    listed += 1
                    continue
                first = 0
                for k in range(<Py_ssize_t>chunk.ends.size()):
                    g = segment_at(&self.chunks[listed], self.texts.lengths.data(), k)
                    if g.start == 0:
                        open_chunk, open_at = listed, first
                    if g.end == self.texts.lengths[g.text]:     # the text's last segment: list it
                        prefetch_next_ints(self.bpe._int_table, self.bpe._n_ints, chunk.ids.data(), chunk.ends[k],
                                           chunk.ids.size())
                        ids = self._joined_ids(open_chunk, open_at, listed, chunk.ends[k])
                        Py_INCREF_p(<PyObject*>ids)
                        PyList_SET_ITEM_p(out, g.text, <PyObject*>ids)
                        self._let_go(g.text)
                        for c in range(open_chunk, listed):     # chunks kept for this text's first parts
                            vector[uint32_t]().swap(self.results[c].ids)
                        open_chunk = -1
                    first = chunk.ends[k]
                if open_chunk < 0:
                    vector[uint32_t]().swap(chunk.ids)
                listed += 1
        finally:
            self.bpe._checkin(ws)
        PyObject_GC_Track(<void*>out)
        return out
