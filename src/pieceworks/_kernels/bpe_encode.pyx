# cython: language_level=3
# distutils: language = c++
"""BPE encoding of one piece: chars to ids, then merges by rank.

The merge table is a C hash map from ``(left_id, right_id)`` to ``(rank,
new_id)``. A piece is first split into one symbol per char (prefix/suffix
marks, unknown chars and byte fallback as Hugging Face does), then the
adjacent pair with the lowest rank (the leftmost on ties) is merged until
none is left:

* short pieces (at most ``small_piece`` = 96 symbols): a linear scan over a rank
  array that is updated only beside each merge (at most two lookups per
  merge);
* long pieces and BPE-dropout: Hugging Face's heap of ``(rank, position)``
  over a doubly linked list of symbols, so no input is quadratic;
* very long pieces (``bucket_piece``: 4096 symbols, more for big
  vocabularies), without dropout: the same merges in the same order from a
  bucket per rank (:meth:`BpeEncoder._merge_buckets`), which stays in cache
  where a heap of a megabyte's pairs does not.

All give the same result: a stale heap entry is skipped when its pair no
longer makes the same token, and tokens only grow, so the lowest rank
present is always the one merged.

Excluded ids: ``tokenize(piece, excluded_ids)`` never builds an id of that
set from several chars: a merge that would make one is not applied (the
pair has no merge) and the whole-piece look-up (``ignore_merges``) skips
it. A char's own token is still given even when it is in the set: it is the
char's only spelling (in byte-level BPE, the byte's), and leaving it out
would lose the char. The C form of a set (a flag per id, a char's token never
flagged) is made once and kept, with its own piece cache; a set none of
whose ids the merges or the whole-piece look-up can give changes nothing
and takes the plain path (same cache, same result).

Threads: an encoder is read-only after ``__init__`` but for the piece
caches (Python dicts: each operation is atomic, with or without the GIL)
and the dropout generator, whose state steps by compare-and-swap, so
threads running without the GIL never lose or repeat a draw.

Performance notes: a Python dict of pairs costs about as much as the whole
merge loop; the open-addressing map keeps a lookup to a multiply and one or
two probes. The linear path beats the heap (allocation and sifting) up to about
128 symbols on GPT-2's merges; the cut is set a little below, at 96. The
32-bit masks are written ``0xFFFFFFFFULL``: to Cython a bare ``0xFFFFFFFF``
is a Python int, and the merge loop did its arithmetic on objects (1.4x
slower on Mistral's pieces, uncached).
"""

from array import array
from operator import index

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ, PyUnicode_READ_CHAR
from cython.operator cimport dereference as deref
from libcpp.algorithm cimport sort
from libcpp.vector cimport vector
from libc.stdint cimport UINT32_MAX, UINT64_MAX, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy

from pieceworks._kernels.raw_encoding cimport join_words, pw_prefetch_read
from pieceworks._kernels.token_finder cimport AroundScratch, AroundTokens, Found, tokens_around
from pieceworks.errors import InputTypeError

cpdef enum:
    # What goes in front of each stretch between added tokens (BpeEncoder.encode_around_batch).
    AROUND_FRONT = 0        # a given char (or none): a normalizer's Prepend
    AROUND_ALWAYS = 1       # Metaspace's prepend schemes
    AROUND_FIRST = 2
    AROUND_NEVER = 3


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)


cdef extern from *:
    """
    // xorshift64* on state shared by threads: one compare-and-swap per step,
    // so concurrent callers (free-threaded Python) never lose or repeat one.
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline uint64_t pw_bpe_rng_step(uint64_t* state) {
        uint64_t old, x;
        do {
            old = *(volatile uint64_t*)state;
            x = old; x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        } while ((uint64_t)_InterlockedCompareExchange64((volatile long long*)state, (long long)x,
                                                         (long long)old) != old);
        return x;
    }
    #else
    static inline uint64_t pw_bpe_rng_step(uint64_t* state) {
        uint64_t old = __atomic_load_n(state, __ATOMIC_RELAXED), x;
        do {
            x = old; x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        } while (!__atomic_compare_exchange_n(state, &old, x, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        return x;
    }
    #endif

    // A flag one caller at a time holds: set from 0 to 1 (1 if this call set it), and back.
    #if defined(_MSC_VER)
    static inline int pw_bpe_try_claim(long* flag) { return _InterlockedCompareExchange(flag, 1, 0) == 0; }
    static inline void pw_bpe_unclaim(long* flag) { _InterlockedExchange(flag, 0); }
    #else
    static inline int pw_bpe_try_claim(long* flag) {
        long expected = 0;
        return __atomic_compare_exchange_n(flag, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
    }
    static inline void pw_bpe_unclaim(long* flag) { __atomic_store_n(flag, 0, __ATOMIC_RELEASE); }
    #endif
    """
    uint64_t rng_step "pw_bpe_rng_step"(uint64_t* state) noexcept nogil
    bint try_claim "pw_bpe_try_claim"(long* flag) noexcept nogil
    void unclaim "pw_bpe_unclaim"(long* flag) noexcept nogil

cdef uint64_t EMPTY_KEY = UINT64_MAX
# In BpeEncoder.made_by: a token that more than one pair merges into (no pair key is this).
cdef uint64_t MANY_MAKERS = UINT64_MAX - 1
# SentencePiece's word mark: pieces that hold whole lines (no pre-tokenizer) are merged word by word.
cdef uint32_t WORD_MARK = 0x2581
cdef uint32_t NO_MARK = UINT32_MAX
cdef Py_ssize_t SMALL_PIECE = 96
# Pieces of at least this many symbols (and a sixteenth of the ranks: each piece clears a few
# words a rank) merge through buckets, not the heap.
cdef Py_ssize_t BUCKET_PIECE = 4096
# How many of a rank's pairs ahead _merge_buckets starts loading the symbols of.
cdef size_t BUCKET_PREFETCH = 8

# -- the hash map ---------------------------------------------------------------


cdef inline uint64_t mix(uint64_t x) noexcept nogil:
    # splitmix64's finalizer: spreads ids that differ in a few low bits.
    x ^= x >> 30
    x *= 0xbf58476d1ce4e5b9ULL
    x ^= x >> 27
    x *= 0x94d049bb133111ebULL
    x ^= x >> 31
    return x


cdef inline size_t slot_of(const U64Map* m, uint64_t key) noexcept nogil:
    # Fibonacci hashing: the top bits of one multiply. Both ids of a pair reach them, and it is
    # a few cycles where mix() is a chain of two multiplies, on the look-up every merge waits for.
    return <size_t>((key * 0x9E3779B97F4A7C15ULL) >> m.shift)


cdef int map_init(U64Map* m, size_t expected) except -1:
    cdef size_t capacity = 16
    while capacity < expected * 2:
        capacity <<= 1
    m.slots = <uint64_t*>malloc(2 * capacity * sizeof(uint64_t))
    if m.slots == NULL:
        raise MemoryError()
    cdef size_t i
    for i in range(capacity):
        m.slots[2 * i] = EMPTY_KEY
    m.mask = capacity - 1
    m.shift = 64
    while capacity > 1:
        capacity >>= 1
        m.shift -= 1
    m.size = 0
    return 0


cdef void map_free(U64Map* m) noexcept nogil:
    free(m.slots)
    m.slots = NULL


cdef inline void map_put(U64Map* m, uint64_t key, uint64_t value) noexcept nogil:
    """Insert or overwrite (the map was sized for every key, so it never fills)."""
    cdef size_t i = slot_of(m, key)
    while m.slots[2 * i] != EMPTY_KEY and m.slots[2 * i] != key:
        i = (i + 1) & m.mask
    if m.slots[2 * i] == EMPTY_KEY:
        m.size += 1
    m.slots[2 * i] = key
    m.slots[2 * i + 1] = value


cdef inline bint map_get(const U64Map* m, uint64_t key, uint64_t* value) noexcept nogil:
    cdef size_t i = slot_of(m, key)
    cdef uint64_t k
    while True:
        k = m.slots[2 * i]
        if k == key:
            value[0] = m.slots[2 * i + 1]
            return True
        if k == EMPTY_KEY:
            return False
        i = (i + 1) & m.mask


cdef inline uint64_t pair_key(uint32_t a, uint32_t b) noexcept nogil:
    return ((<uint64_t>a) << 32) | b


cdef inline bint merge_of(const U64Map* merges, uint32_t a, uint32_t b, uint64_t* value,
                          const uint8_t* banned) noexcept nogil:
    """The merge of ``(a, b)`` into ``value`` (rank << 32 | new_id); False if none, or if it makes a banned id."""
    if not map_get(merges, pair_key(a, b), value):
        return False
    return banned == NULL or not banned[<uint32_t>(value[0] & 0xFFFFFFFFULL)]


# -- the candidate heap (min rank, then leftmost) --------------------------------


cdef inline bint comes_first(const Candidate& x, const Candidate& y) noexcept nogil:
    if x.rank != y.rank:
        return x.rank < y.rank
    return x.pos < y.pos


cdef void heap_push(vector[Candidate]& heap, Candidate c) noexcept nogil:
    heap.push_back(c)
    cdef size_t i = heap.size() - 1
    cdef size_t parent
    cdef Candidate tmp
    while i > 0:
        parent = (i - 1) >> 1
        if not comes_first(heap[i], heap[parent]):
            break
        tmp = heap[i]
        heap[i] = heap[parent]
        heap[parent] = tmp
        i = parent


cdef Candidate heap_pop(vector[Candidate]& heap) noexcept nogil:
    cdef Candidate top = heap[0]
    cdef Candidate last = heap.back()
    heap.pop_back()
    cdef size_t n = heap.size()
    cdef size_t i = 0
    cdef size_t child, best
    cdef Candidate tmp
    if n == 0:
        return top
    heap[0] = last
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        best = child
        if child + 1 < n and comes_first(heap[child + 1], heap[child]):
            best = child + 1
        if not comes_first(heap[best], heap[i]):
            break
        tmp = heap[i]
        heap[i] = heap[best]
        heap[best] = tmp
        i = best
    return top


cdef inline int utf8_encode(uint32_t cp, unsigned char* out) noexcept nogil:
    if cp < 0x80:
        out[0] = <unsigned char>cp
        return 1
    if cp < 0x800:
        out[0] = <unsigned char>(0xC0 | (cp >> 6))
        out[1] = <unsigned char>(0x80 | (cp & 0x3F))
        return 2
    if cp < 0x10000:
        out[0] = <unsigned char>(0xE0 | (cp >> 12))
        out[1] = <unsigned char>(0x80 | ((cp >> 6) & 0x3F))
        out[2] = <unsigned char>(0x80 | (cp & 0x3F))
        return 3
    out[0] = <unsigned char>(0xF0 | (cp >> 18))
    out[1] = <unsigned char>(0x80 | ((cp >> 12) & 0x3F))
    out[2] = <unsigned char>(0x80 | ((cp >> 6) & 0x3F))
    out[3] = <unsigned char>(0x80 | (cp & 0x3F))
    return 4


cdef inline bint all_bytes_known(const int64_t* byte_ids, const uint8_t* data, int n) noexcept nogil:
    """Whether every byte of ``data[:n]`` has a byte-fallback token."""
    cdef int k
    for k in range(n):
        if byte_ids[data[k]] < 0:
            return False
    return True


cdef inline void set_symbol(Symbol* s, int64_t id, Py_ssize_t nbytes) noexcept nogil:
    # Each field written in place: a Symbol built on the stack and pushed was copied with one
    # 16-byte load of its fresh 4-byte stores, which stalls (store forwarding fails), and that
    # stall was most of the time of splitting a piece into chars.
    s.id = <int32_t>id
    s.nbytes = <int32_t>nbytes
    s.alive = True
    s.prev = -1
    s.next = -1


cdef inline void push_symbol(vector[Symbol]& syms, int64_t id, Py_ssize_t nbytes) noexcept nogil:
    syms.resize(syms.size() + 1)
    set_symbol(&syms.back(), id, nbytes)


# The word cache of a call (see BpeEncoder._split_merged): words of up to WORD_CACHE_CHARS chars, in
# WORD_CACHE_SLOTS slots (a quarter left free) and at most WORD_CACHE_DATA int32s, then it starts over;
# a text of WORD_CACHE_MIN_TEXT chars or more gets one of its own, and a batch shares one only when its
# texts hold that many (the slots are set up on first use: half a megabyte, 20 us, for a line or two).
cdef Py_ssize_t WORD_CACHE_CHARS = 32
cdef size_t WORD_CACHE_SLOTS = 1 << 15
cdef size_t WORD_CACHE_MASK = (1 << 15) - 1
cdef size_t WORD_CACHE_DATA = 1 << 20
cdef Py_ssize_t WORD_CACHE_MIN_TEXT = 2048
cdef uint64_t FNV_START = 0xCBF29CE484222325ULL


cdef inline WordCache* batch_cache(WordCache* cache, const vector[Py_ssize_t]& lengths) noexcept nogil:
    """``cache`` for a batch whose texts hold WORD_CACHE_MIN_TEXT chars or more in all, else NULL."""
    cdef Py_ssize_t total = 0
    cdef size_t k
    for k in range(lengths.size()):
        total += lengths[k]
        if total >= WORD_CACHE_MIN_TEXT:
            return cache
    return NULL
cdef uint64_t FNV_PRIME = 0x100000001B3ULL


cdef inline bint same_chars(int kind, const void* data, Py_ssize_t start, Py_ssize_t n,
                            const int32_t* chars) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        if read_char(kind, data, start + k) != <uint32_t>chars[k]:
            return False
    return True


cdef inline size_t word_slot(const WordCache* cache, int kind, const void* data, Py_ssize_t start, Py_ssize_t n,
                      uint64_t h) noexcept nogil:
    """The slot of the word ``[start, start + n)`` (hash ``h``) in ``cache``: its own, or the free one
    where it goes."""
    cdef size_t slot = h & WORD_CACHE_MASK
    while cache.keys[slot]:
        if cache.keys[slot] == h and cache.data[cache.at[slot]] == n \
                and same_chars(kind, data, start, n, cache.data.data() + cache.at[slot] + 1):
            break
        slot = (slot + 1) & WORD_CACHE_MASK
    return slot


cdef bint copy_cached_word(const WordCache* cache, int kind, const void* data, Py_ssize_t start, Py_ssize_t n,
                           uint64_t h, vector[Symbol]& syms, vector[int32_t]& char_at) noexcept nogil:
    """Append the symbols of the word ``[start, start + n)`` (hash ``h``) and the char of each of
    its bytes, if ``cache`` holds it; else False."""
    cdef size_t slot, e, k, base, count, nbytes
    cdef const int32_t* entry
    if cache.keys.size() == 0:
        return False
    slot = word_slot(cache, kind, data, start, n, h)
    if not cache.keys[slot]:
        return False
    entry = cache.data.data() + cache.at[slot]
    e = 1 + <size_t>n
    count = <size_t>entry[e]
    base = syms.size()
    syms.resize(base + count)
    for k in range(count):
        set_symbol(&syms[base + k], entry[e + 1 + 2 * k], entry[e + 2 + 2 * k])
    e += 1 + 2 * count
    nbytes = <size_t>entry[e]
    base = char_at.size()
    char_at.resize(base + nbytes)
    for k in range(nbytes):
        char_at[base + k] = entry[e + 1 + k] + <int32_t>start
    return True


cdef void cache_word(WordCache* cache, int kind, const void* data, Py_ssize_t start, Py_ssize_t n, uint64_t h,
                     const vector[Symbol]& word, const vector[int32_t]& word_at) noexcept nogil:
    """Keep the word ``[start, start + n)`` (hash ``h``): its merged symbols and the char of each of its
    bytes (``word_at``, less its last entry)."""
    cdef size_t slot, k, at
    if cache.keys.size() == 0 or cache.used >= WORD_CACHE_SLOTS * 3 // 4 or cache.data.size() > WORD_CACHE_DATA:
        cache.keys.assign(WORD_CACHE_SLOTS, 0)      # (first use, or full: start over)
        cache.at.resize(WORD_CACHE_SLOTS)
        cache.data.clear()
        cache.used = 0
    slot = word_slot(cache, kind, data, start, n, h)
    if cache.keys[slot]:
        return      # (already there)
    at = cache.data.size()
    cache.data.push_back(<int32_t>n)
    for k in range(<size_t>n):
        cache.data.push_back(<int32_t>read_char(kind, data, start + <Py_ssize_t>k))
    cache.data.push_back(<int32_t>word.size())
    for k in range(word.size()):
        cache.data.push_back(word[k].id)
        cache.data.push_back(word[k].nbytes)
    cache.data.push_back(<int32_t>(word_at.size() - 1))
    for k in range(word_at.size() - 1):
        cache.data.push_back(word_at[k])
    cache.keys[slot] = h
    cache.at[slot] = at
    cache.used += 1


cdef class Exclusion:
    """A set of ids that must not come out of one encoder, in C form, with its own piece cache.

    ``active``: some flagged id is a merge's result, or (with ``ignore_merges``)
    any token, so the set changes results. A char's own token is never flagged.
    """

    cdef bint banned_id(self, object tid):
        return 0 <= tid < <Py_ssize_t>self.flags.size() and self.flags[<Py_ssize_t>tid]


cdef bint map_gives_flagged(const U64Map* m, const vector[uint8_t]& flags) noexcept nogil:
    """Whether some value of ``m`` (its low 32 bits: an id) is flagged."""
    cdef size_t i
    cdef uint64_t tid
    if m.slots == NULL:
        return False
    for i in range(m.mask + 1):
        if m.slots[2 * i] != EMPTY_KEY:
            tid = m.slots[2 * i + 1] & 0xFFFFFFFFULL
            if tid < flags.size() and flags[tid]:
                return True
    return False


cdef void unflag_values(const U64Map* m, vector[uint8_t]& flags) noexcept nogil:
    """Clear the flag of every id that is a value of ``m`` (its low 32 bits)."""
    cdef size_t i
    cdef uint64_t tid
    if m.slots == NULL:
        return
    for i in range(m.mask + 1):
        if m.slots[2 * i] != EMPTY_KEY:
            tid = m.slots[2 * i + 1] & 0xFFFFFFFFULL
            if tid < flags.size():
                flags[tid] = 0


cdef bytes _raw_of(const Symbol* syms, Py_ssize_t n, const int32_t* char_at, Py_ssize_t last, bint front):
    """A raw encoding (``raw_encoding``'s int32 blocks: ids, char starts, char ends, words 0) of a piece's
    ``n`` merged symbols; ``char_at[b]``: the char of the piece's byte ``b``, ``char_at[last]`` its length.
    ``front``: see :meth:`BpeEncoder.encode_raw`."""
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16 * n)
    cdef int32_t* out = <int32_t*>PyBytes_AS_STRING(raw)
    cdef Py_ssize_t i
    cdef int64_t pos = 0, end, start, stop
    for i in range(n):
        end = pos + syms[i].nbytes
        symbol_span(char_at, last, pos, end, front, &start, &stop)
        pos = end
        out[i] = syms[i].id
        out[n + i] = <int32_t>start
        out[2 * n + i] = <int32_t>stop
        out[3 * n + i] = 0
    return raw


cdef bytes _raw_block(RawTokens* made, size_t first, Py_ssize_t n):
    """The raw encoding (four int32 blocks) of the ``n`` tokens of ``made`` from ``first`` on."""
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16 * n)
    cdef int32_t* dst = <int32_t*>PyBytes_AS_STRING(raw)
    memcpy(dst, made.ids.data() + first, 4 * n)
    memcpy(dst + n, made.starts.data() + first, 4 * n)
    memcpy(dst + 2 * n, made.ends.data() + first, 4 * n)
    memcpy(dst + 3 * n, made.words.data() + first, 4 * n)
    return raw


cdef inline void _push_token(RawTokens* made, int32_t token_id, int32_t start, int32_t stop, int32_t word) noexcept nogil:
    made.ids.push_back(token_id)
    made.starts.push_back(start)
    made.ends.push_back(stop)
    made.words.push_back(word)


cdef inline void _drop_tokens_from(RawTokens* made, size_t first) noexcept nogil:
    made.ids.resize(first)
    made.starts.resize(first)
    made.ends.resize(first)
    made.words.resize(first)


cdef int read_strs(list texts, str name, vector[int]& kinds, vector[const void*]& datas,
                   vector[Py_ssize_t]& lengths) except -1:
    """Where each str of ``texts`` keeps its chars, for a loop without the GIL (``name`` names the list)."""
    cdef Py_ssize_t k
    for k in range(len(texts)):
        text = texts[k]
        if type(text) is not str:
            raise TypeError(f"{name}[{k}] is {type(text).__name__}, not str")
        kinds.push_back(PyUnicode_KIND(text))
        datas.push_back(PyUnicode_DATA(text))
        lengths.push_back(PyUnicode_GET_LENGTH(text))
    return 0


cdef inline uint32_t read_char(int kind, const void* data, Py_ssize_t i) noexcept nogil:
    return ((<const uint8_t*>data)[i] if kind == 1 else (<const uint16_t*>data)[i] if kind == 2
            else (<const uint32_t*>data)[i])


cdef inline bint is_white_space(uint32_t cp) noexcept nogil:
    """Unicode's White_Space property (Rust's ``char::is_whitespace``, which WhitespaceSplit cuts at)."""
    if cp <= 0x20:
        return cp == 0x20 or 0x09 <= cp <= 0x0D
    if cp < 0x85:
        return False
    return (cp == 0x85 or cp == 0xA0 or cp == 0x1680 or 0x2000 <= cp <= 0x200A or cp == 0x2028 or cp == 0x2029
            or cp == 0x202F or cp == 0x205F or cp == 0x3000)


def _is_white_space(str ch not None) -> bool:
    """:func:`is_white_space` of one char, for tests."""
    return is_white_space(<uint32_t>ord(ch))


cdef bytes _whole_raw(object tid, Py_ssize_t length, bint front):
    """The raw encoding of a piece of ``length`` chars that is the one token ``tid``."""
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16)
    cdef int32_t* out = <int32_t*>PyBytes_AS_STRING(raw)
    out[0] = <int32_t>tid
    out[1] = 0
    out[2] = <int32_t>(length - 1 if front and length > 1 else 1 if front else length)
    out[3] = 0
    return raw


cdef inline void link_symbols(vector[Symbol]& syms) noexcept nogil:
    """Link each symbol to its neighbours (-1: none), for the heap and bucket paths."""
    cdef size_t i, n = syms.size()
    for i in range(n):
        syms[i].prev = <int32_t>i - 1
        syms[i].next = <int32_t>i + 1 if i + 1 < n else -1


cdef inline void drop_merged(vector[Symbol]& syms) noexcept nogil:
    """Keep the symbols still alive (the others were merged into their left neighbours), in order."""
    cdef size_t i, kept = 0
    for i in range(syms.size()):
        if syms[i].alive:
            syms[kept] = syms[i]
            kept += 1
    syms.resize(kept)


cdef inline bint still_makes(const U64Map* merges, const uint64_t* made_by, vector[Symbol]& syms, int32_t pos,
                             uint32_t new_id, const uint8_t* banned) noexcept nogil:
    """Whether the pair at ``pos`` (linked symbols) is still there and merges into ``new_id``
    (``made_by``: see :meth:`BpeEncoder._index_makers`)."""
    cdef uint64_t value
    cdef uint64_t pair, maker
    if not syms[pos].alive or syms[pos].next == -1:
        return False
    pair = pair_key(syms[pos].id, syms[syms[pos].next].id)
    maker = made_by[new_id]
    if maker != MANY_MAKERS:
        return pair == maker      # (a queued pair's new id is never banned: merge_of said so)
    return merge_of(merges, syms[pos].id, syms[syms[pos].next].id, &value, banned) \
        and <uint32_t>(value & 0xFFFFFFFFULL) == new_id


cdef inline void join_next(vector[Symbol]& syms, int32_t pos, uint32_t new_id) noexcept nogil:
    """Merge the symbol at ``pos`` with the next one into ``new_id``, the next one unlinked."""
    cdef int32_t nxt = syms[pos].next
    syms[pos].id = <int32_t>new_id
    syms[pos].nbytes += syms[nxt].nbytes
    syms[pos].next = syms[nxt].next
    syms[nxt].alive = False
    if syms[pos].next != -1:
        syms[syms[pos].next].prev = pos


cdef inline void queue_pair(MergeQueue* q, int32_t pos, uint64_t merge, uint32_t rank) noexcept nogil:
    """Queue the pair at ``pos`` (``merge``: its rank << 32 | new_id) while rank ``rank`` merges:
    in its rank's bucket if it ranks after, else on the heap of late ones."""
    cdef uint32_t r = <uint32_t>(merge >> 32)
    cdef Candidate c
    if r > rank:
        q.later.push_back(((<uint64_t>pos) << 32) | (merge & 0xFFFFFFFFULL))
        q.later.push_back(<uint64_t>q.later_head[r])     # (-1 reads back as -1 through int32)
        q.later_head[r] = <int32_t>(q.later.size() - 2)
    else:
        c.rank = r
        c.pos = pos
        c.new_id = <uint32_t>(merge & 0xFFFFFFFFULL)
        heap_push(q.late, c)


cdef inline double draw(uint64_t* rng_state) noexcept nogil:
    """A uniform double in [0, 1) from the generator at ``rng_state`` (xorshift64*: plenty for
    dropout, and reproducible from a seed; stepped by compare-and-swap, so threads may share it)."""
    cdef uint64_t x = rng_step(rng_state)
    return <double>((x * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0)


cdef inline void push_merge(vector[Candidate]& heap, const U64Map* merges, int32_t left, int32_t right,
                            int32_t pos, const uint8_t* banned) noexcept nogil:
    """Push the merge of ids ``left right`` (the pair at ``pos``) onto ``heap``, if they have one."""
    cdef uint64_t value
    cdef Candidate c
    if merge_of(merges, left, right, &value, banned):
        c.rank = <uint32_t>(value >> 32)
        c.pos = pos
        c.new_id = <uint32_t>(value & 0xFFFFFFFFULL)
        heap_push(heap, c)


cdef void merge_heap(const U64Map* merges, const uint64_t* made_by, uint64_t* rng_state, double dropout,
                     vector[Symbol]& syms, const uint8_t* banned) noexcept nogil:
    """Hugging Face's ``merge_all``: a heap of (rank, position) over linked symbols (merges making a
    banned id skipped); with ``dropout``, a merge popped is skipped with that chance (a draw from
    ``rng_state`` each pop, as Hugging Face draws) and comes back after the next merge done."""
    cdef vector[Candidate] heap
    cdef vector[Candidate] skipped
    cdef Candidate top
    cdef size_t i
    cdef int32_t pos
    link_symbols(syms)
    for i in range(syms.size() - 1 if syms.size() else 0):
        push_merge(heap, merges, syms[i].id, syms[i + 1].id, <int32_t>i, banned)
    while heap.size():
        top = heap_pop(heap)
        if dropout > 0.0 and draw(rng_state) < dropout:
            skipped.push_back(top)  # dropped this time; back after the next merge
            continue
        for i in range(skipped.size()):
            heap_push(heap, skipped[i])
        skipped.clear()
        pos = top.pos
        if not still_makes(merges, made_by, syms, pos, top.new_id, banned):
            continue        # a stale entry: the pair here changed since it was pushed
        join_next(syms, pos, top.new_id)
        if syms[pos].prev != -1:
            push_merge(heap, merges, syms[syms[pos].prev].id, syms[pos].id, syms[pos].prev, banned)
        if syms[pos].next != -1:
            push_merge(heap, merges, syms[pos].id, syms[syms[pos].next].id, pos, banned)
    drop_merged(syms)


cdef class BpeEncoder:
    """Everything a BPE model needs to encode, in C form.

    ``merges``: ``left_id, right_id, new_id`` per merge, flat, by rank (a
    repeated pair keeps its last rank); ``chars``: ``[(code_point << 2 | marks, id)]``
    for the one-char tokens, ``marks`` 1 = prefixed, 2 = suffixed;
    ``byte_ids``: the id of ``<0xNN>`` for each byte, or -1.

    >>> from array import array
    >>> enc = BpeEncoder(array("I", [0, 1, 2]), [(ord("a") << 2, 0), (ord("b") << 2, 1)], [-1] * 256,
    ...                  ["a", "b", "ab"], {"a": 0, "b": 1, "ab": 2})
    >>> enc.encode_ids("abba")
    [2, 1, 0]
    """

    def __cinit__(self):
        self.merges.slots = NULL
        self.chars.slots = NULL

    def __init__(self, const uint32_t[::1] merges, list chars, list byte_ids, list id_to_token, dict vocab, *,
                 unk_token=None, bint fuse_unk=False, bint byte_fallback=False, bint ignore_merges=False,
                 prefix=None, suffix=None, dropout=None, seed=None, Py_ssize_t cache_capacity=10000,
                 token_cls=None):
        cdef Py_ssize_t rank, n = merges.shape[0] // 3
        self.n_ranks = <uint32_t>n
        map_init(&self.merges, n)
        for rank in range(n):
            map_put(&self.merges, pair_key(merges[3 * rank], merges[3 * rank + 1]),
                    ((<uint64_t>rank) << 32) | merges[3 * rank + 2])
        self._index_makers()
        map_init(&self.chars, len(chars))
        for rank in range(128):
            self.ascii_ids[rank] = -1
        for key, tid in chars:
            map_put(&self.chars, key, tid)
            if key < (128 << 2) and key & 3 == 0:
                self.ascii_ids[key >> 2] = tid
        for rank in range(256):
            self.byte_ids[rank] = byte_ids[rank]
        self.id_to_token = id_to_token
        self.vocab = vocab
        self.unk_token = unk_token
        if unk_token is None:
            self.unk_id = -1
        else:
            self.unk_id = vocab.get(unk_token, -2)
        self.fuse_unk = fuse_unk
        self.byte_fallback = byte_fallback
        self.ignore_merges = ignore_merges
        self.has_prefix = prefix is not None
        self.has_suffix = suffix is not None
        cdef bytes mark = (prefix or "").encode("utf-8", "surrogatepass")
        self.prefix_utf8.assign(<const uint8_t*>mark, <const uint8_t*>mark + len(mark))
        mark = (suffix or "").encode("utf-8", "surrogatepass")
        self.suffix_utf8.assign(<const uint8_t*>mark, <const uint8_t*>mark + len(mark))
        self.dropout = 0.0 if dropout is None else dropout
        if seed is None:
            import os
            seed = int.from_bytes(os.urandom(8), "little")
        self.rng_state = mix(<uint64_t>(seed & 0xFFFFFFFFFFFFFFFFULL) + 0x9E3779B97F4A7C15ULL) | 1
        self.cache = {}
        self.cache_capacity = cache_capacity
        if token_cls is None:
            from pieceworks.pretokenized import Token as token_cls
        self.token_cls = token_cls
        self.small_piece = SMALL_PIECE
        self.bucket_piece = max(BUCKET_PIECE, n // 16)
        self.exclusions = {}
        self._find_cuts(merges, WORD_MARK)

    cdef void _index_makers(self) noexcept nogil:
        """``made_by[t]``: the one pair that merges into token ``t``, or ``MANY_MAKERS``.

        A queued merge is still due if its pair still makes its token.
        Asking the merge map that is a hash look-up a queued pair, most of
        them stale in a long piece; a token almost always has one pair that
        makes it, and then comparing the pair with it says the same.
        """
        cdef size_t i
        cdef uint32_t tid, top = 0
        for i in range(self.merges.mask + 1):
            if self.merges.slots[2 * i] != EMPTY_KEY:
                top = max(top, <uint32_t>(self.merges.slots[2 * i + 1] & 0xFFFFFFFFULL) + 1)
        self.made_by.assign(top, EMPTY_KEY)
        for i in range(self.merges.mask + 1):
            if self.merges.slots[2 * i] != EMPTY_KEY:
                tid = <uint32_t>(self.merges.slots[2 * i + 1] & 0xFFFFFFFFULL)
                if self.made_by[tid] == EMPTY_KEY:
                    self.made_by[tid] = self.merges.slots[2 * i]
                else:
                    self.made_by[tid] = MANY_MAKERS

    def __dealloc__(self):
        map_free(&self.merges)
        map_free(&self.chars)

    cdef double _random(self) noexcept nogil:
        return draw(&self.rng_state)

    # -- piece -> symbols --------------------------------------------------------
    cdef int _missing_unk(self) except -1:
        """Raise what :meth:`_split_chars`'s -1 means: an unknown char, and no unk token to spell it."""
        from pieceworks.errors import UnknownTokenError
        raise UnknownTokenError(
            f"BPE: the unk_token {self.unk_token!r} is not in the vocabulary",
            fix="add it to the vocabulary (train with it as a special token) or set unk_token=None")

    cdef int _split_chars(self, int kind, const void* data, Py_ssize_t n, vector[Symbol]& syms,
                          vector[int32_t]& char_at) noexcept nogil:
        """One symbol per char of ``data`` (PEP 393 ``kind``), as Hugging Face's ``merge_word`` builds
        them, without the GIL: 0, or -1 for an unknown char when the ``unk_token`` is missing from the
        vocabulary (the caller raises).

        Each symbol records the UTF-8 bytes it stands for, as Hugging Face
        does: a char its own bytes, an unknown token the bytes of the chars
        it replaces, a byte-fallback token one byte. A char that is dropped
        (unknown, and no unknown token) counts nothing, so later offsets
        shift left exactly as Hugging Face's do. ``char_at`` receives the
        char index of every byte of the piece.
        """
        cdef Py_ssize_t i, c, k
        cdef uint32_t cp
        cdef uint64_t found, marks
        cdef int64_t unk_bytes = -1
        cdef unsigned char buf[4]
        cdef int nb
        cdef const vector[uint8_t]* before
        cdef const vector[uint8_t]* after
        cdef bint unmarked = not self.has_prefix and not self.has_suffix
        cdef Py_ssize_t run
        i = 0
        while i < n:
            # The common case first: a run of ASCII chars that are tokens, written in place (no UTF-8
            # encoding, no map look-up, one resize).
            run = self._ascii_run(kind, data, i, n) if unmarked and unk_bytes < 0 else 0
            if run:
                self._put_ascii(kind, data, i, run, syms, char_at)
                i += run
                continue
            c = i
            cp = read_char(kind, data, c)
            i += 1
            nb = utf8_encode(cp, buf)
            for k in range(nb):
                char_at.push_back(<int32_t>c)
            marks = 0
            if self.has_prefix and c > 0:
                marks |= 1
            if self.has_suffix and c == n - 1:
                marks |= 2
            if map_get(&self.chars, ((<uint64_t>cp) << 2) | marks, &found):
                if unk_bytes >= 0:
                    push_symbol(syms, self.unk_id, unk_bytes)
                    unk_bytes = -1
                push_symbol(syms, <int64_t>found, nb)
                continue
            # The bytes of the marked char (prefix and suffix included), all or none; as Hugging
            # Face, a pending unknown token waits until the next known char.
            before = &self.prefix_utf8 if marks & 1 else &self.no_bytes
            after = &self.suffix_utf8 if marks & 2 else &self.no_bytes
            if self.byte_fallback and self._bytes_known(deref(before)) and self._bytes_known(deref(after)) \
                    and all_bytes_known(self.byte_ids, buf, nb):
                for k in range(<Py_ssize_t>before.size()):
                    push_symbol(syms, self.byte_ids[deref(before)[k]], 1)
                for k in range(nb):
                    push_symbol(syms, self.byte_ids[buf[k]], 1)
                for k in range(<Py_ssize_t>after.size()):
                    push_symbol(syms, self.byte_ids[deref(after)[k]], 1)
                continue
            if self.unk_id != -1:
                if self.unk_id == -2:
                    return -1
                if unk_bytes >= 0 and self.fuse_unk:
                    unk_bytes += nb
                else:
                    if unk_bytes >= 0:
                        push_symbol(syms, self.unk_id, unk_bytes)
                    unk_bytes = nb
        if unk_bytes >= 0:
            push_symbol(syms, self.unk_id, unk_bytes)
        char_at.push_back(<int32_t>n)
        return 0

    cdef inline Py_ssize_t _ascii_run(self, int kind, const void* data, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
        """How many chars from ``i`` on are ASCII chars with a token of their own."""
        cdef Py_ssize_t j = i
        cdef uint32_t cp
        while j < n:
            cp = read_char(kind, data, j)
            if cp >= 128 or self.ascii_ids[cp] < 0:
                break
            j += 1
        return j - i

    cdef inline void _put_ascii(self, int kind, const void* data, Py_ssize_t i, Py_ssize_t run,
                                vector[Symbol]& syms, vector[int32_t]& char_at) noexcept nogil:
        """The symbols of the ``run`` chars from ``i`` on, which :meth:`_ascii_run` found: a byte each."""
        cdef size_t base = syms.size(), at = char_at.size()
        cdef Py_ssize_t k
        syms.resize(base + <size_t>run)
        char_at.resize(at + <size_t>run)
        for k in range(run):
            set_symbol(&syms[base + k], self.ascii_ids[read_char(kind, data, i + k)], 1)
            char_at[at + k] = <int32_t>(i + k)

    cdef inline bint _bytes_known(self, const vector[uint8_t]& data) noexcept nogil:
        return all_bytes_known(self.byte_ids, data.data(), <int>data.size())

    # -- merging -------------------------------------------------------------------
    cdef void _merge_small(self, vector[Symbol]& syms, const uint8_t* banned) noexcept nogil:
        """Lowest rank first, leftmost on ties, by scanning a rank array (merges making a banned id skipped)."""
        cdef size_t m = syms.size()
        cdef vector[uint64_t] cand      # rank << 32 | new_id, or UINT64_MAX
        cdef size_t i, best
        cdef uint64_t value, best_value
        cand.resize(m - 1 if m else 0)
        for i in range(cand.size()):
            if not merge_of(&self.merges, syms[i].id, syms[i + 1].id, &cand[i], banned):
                cand[i] = UINT64_MAX
        while cand.size():
            best_value = UINT64_MAX
            best = 0
            for i in range(cand.size()):
                if cand[i] < best_value:
                    best_value = cand[i]
                    best = i
            if best_value == UINT64_MAX:
                return
            syms[best].id = <int32_t>(best_value & 0xFFFFFFFFULL)
            syms[best].nbytes += syms[best + 1].nbytes
            syms.erase(syms.begin() + best + 1)
            cand.erase(cand.begin() + best)
            if best > 0 and not merge_of(&self.merges, syms[best - 1].id, syms[best].id, &cand[best - 1], banned):
                cand[best - 1] = UINT64_MAX
            if best < cand.size() and not merge_of(&self.merges, syms[best].id, syms[best + 1].id, &cand[best],
                                                   banned):
                cand[best] = UINT64_MAX

    cdef void _merge_heap(self, vector[Symbol]& syms, double dropout, const uint8_t* banned) noexcept nogil:
        """Hugging Face's ``merge_all`` (:func:`merge_heap`), drawing from this encoder's generator."""
        merge_heap(&self.merges, self.made_by.data(), &self.rng_state, dropout, syms, banned)

    cdef void _merge_buckets(self, vector[Symbol]& syms, const uint8_t* banned) noexcept nogil:
        """:meth:`_merge_heap` without dropout, for long pieces: the same merges in the same order
        (lowest rank first, leftmost on ties), from a bucket per rank instead of a heap.

        A heap of a long piece's pairs is larger than the caches, and each
        pop walked it down, a cache miss a level (a megabyte of random
        letters under Mistral's merges: 60% of the time). Here the pairs
        of the piece as it starts are sorted by rank in two passes (counted,
        then placed: each rank's in text order), and the ranks are taken in
        order, each rank's pairs left to right. A merge's new pairs rank
        after it (trained merges make a token before they use it): they
        join their rank's bucket, which is sorted when its turn comes. A new
        pair ranking at or below the current one (merges out of order) goes
        to a small heap that is drained before the bucket goes on, so the
        order is exactly the heap's.
        """
        cdef size_t n = syms.size(), i, j, count
        cdef uint32_t r, n_ranks = self.n_ranks
        cdef uint64_t value
        cdef int32_t k
        cdef vector[uint32_t] rank_at
        cdef vector[uint32_t] id_at
        cdef vector[int32_t] first
        cdef vector[uint64_t] initial
        cdef vector[uint64_t] bucket
        cdef Candidate c
        cdef MergeQueue q
        link_symbols(syms)
        rank_at.resize(n - 1)
        id_at.resize(n - 1)
        first.assign(n_ranks + 1, 0)
        for i in range(n - 1):
            if merge_of(&self.merges, syms[i].id, syms[i + 1].id, &value, banned):
                rank_at[i] = <uint32_t>(value >> 32)
                id_at[i] = <uint32_t>(value & 0xFFFFFFFFULL)
                first[rank_at[i] + 1] += 1
            else:
                rank_at[i] = UINT32_MAX
        for r in range(n_ranks):
            first[r + 1] += first[r]
        initial.resize(first[n_ranks])
        for i in range(n - 1):
            if rank_at[i] != UINT32_MAX:
                initial[first[rank_at[i]]] = ((<uint64_t>i) << 32) | id_at[i]
                first[rank_at[i]] += 1
        # (first[r] now ends rank r's entries: they start where rank r - 1's end)
        q.later_head.assign(n_ranks, -1)
        for r in range(n_ranks):
            i = first[r - 1] if r > 0 else 0
            if i == <size_t>first[r] and q.later_head[r] == -1:
                continue
            bucket.assign(initial.begin() + i, initial.begin() + first[r])
            k = q.later_head[r]
            if k != -1:
                while k != -1:
                    bucket.push_back(q.later[k])
                    k = <int32_t>q.later[k + 1]
                sort(bucket.begin(), bucket.end())
            j = 0
            count = bucket.size()
            # A rank's pairs lie far apart in a long piece (a cache miss, and a TLB miss, each):
            # start loading the symbols of the next few while merging this one.
            for i in range(min(count, BUCKET_PREFETCH)):
                pw_prefetch_read(&syms[bucket[i] >> 32])
            while True:
                # Late pairs come before the bucket's next: they rank no higher, and stand at or
                # left of the merge that queued them (its place, or the one before it).
                if q.late.size():
                    c = heap_pop(q.late)
                    self._merge_at(syms, c.pos, c.new_id, r, &q, banned)
                elif j < count:
                    if j + BUCKET_PREFETCH < count:
                        pw_prefetch_read(&syms[bucket[j + BUCKET_PREFETCH] >> 32])
                    self._merge_at(syms, <int32_t>(bucket[j] >> 32), <uint32_t>(bucket[j] & 0xFFFFFFFFULL), r, &q,
                                   banned)
                    j += 1
                else:
                    break
        drop_merged(syms)

    cdef void _merge_at(self, vector[Symbol]& syms, int32_t pos, uint32_t new_id, uint32_t rank, MergeQueue* q,
                        const uint8_t* banned) noexcept nogil:
        """Merge the pair at ``pos`` into ``new_id`` unless it changed since it was queued; queue its
        new neighbours' pairs (``rank``: the rank being merged, see :meth:`_merge_buckets`)."""
        cdef int32_t nxt, prv
        cdef uint64_t value
        if not still_makes(&self.merges, self.made_by.data(), syms, pos, new_id, banned):
            return
        join_next(syms, pos, new_id)
        prv = syms[pos].prev
        if prv != -1 and merge_of(&self.merges, syms[prv].id, syms[pos].id, &value, banned):
            queue_pair(q, prv, value, rank)
        nxt = syms[pos].next
        if nxt != -1 and merge_of(&self.merges, syms[pos].id, syms[nxt].id, &value, banned):
            queue_pair(q, pos, value, rank)

    cdef tuple _encode(self, str piece, Exclusion ex):
        """``(ids, starts, ends)`` of one piece, through the cache when there is no dropout.

        ``ex``: ids to keep out (None: none); it brings its own cache.

        Offsets are Hugging Face's byte offsets turned into char offsets:
        a token starts at the char holding its first byte and ends after
        the char holding its last.
        """
        cdef vector[Symbol] syms
        cdef vector[int32_t] char_at
        cdef size_t i, last = 0
        cdef int64_t pos = 0, end, start, stop
        cdef bint use_cache = self.dropout <= 0.0
        cdef tuple result
        cdef dict cache = self.cache
        cdef const uint8_t* banned = NULL
        if ex is not None:
            cache = ex.cache
            banned = ex.flags.data()
        if use_cache:
            hit = cache.get(piece)
            if hit is not None:
                return <tuple>hit
        self._symbols(piece, syms, char_at, banned)
        ids = [syms[i].id for i in range(syms.size())]
        starts = []
        ends = []
        last = char_at.size() - 1      # char_at[last] is the piece's length
        for i in range(syms.size()):
            end = pos + syms[i].nbytes
            symbol_span(char_at.data(), <int64_t>last, pos, end, False, &start, &stop)
            starts.append(start)
            ends.append(stop)
            pos = end
        result = (ids, starts, ends)
        if use_cache and len(cache) < self.cache_capacity and PyUnicode_GET_LENGTH(piece) < 256:
            cache[piece] = result
        return result

    cdef WordCache* _claim_calls_cache(self) noexcept nogil:
        """The encoder's own word cache, kept from call to call, if no other call holds it now
        (give it back with :meth:`_free_calls_cache`), else NULL.

        A short text (``Tokenizer.encode`` of a line, a chat turn) is too short to fill a cache of
        its own, and a line of prose repeats the words of the lines before it: with this one, a
        line of Gemma 3 took 1.8 us, not 4.1. Calls on other threads at the same time go without
        (or make their own, for a long text or batch).
        """
        return &self.calls_cache if try_claim(&self.calls_cache_busy) else NULL

    cdef WordCache* _word_cache_for(self, WordCache* own, const vector[Py_ssize_t]& lengths) noexcept nogil:
        """The word cache of a batch of texts ``lengths`` long: the encoder's own if free, else
        ``own`` (the call's) if they are long enough to fill it (:func:`batch_cache`), else NULL;
        give it back with :meth:`_free_calls_cache`."""
        cdef WordCache* claimed = self._claim_calls_cache()
        return claimed if claimed != NULL else batch_cache(own, lengths)

    cdef void _free_calls_cache(self, WordCache* claimed) noexcept nogil:
        """Give back what :meth:`_claim_calls_cache` gave, if it was the encoder's cache."""
        if claimed == &self.calls_cache:
            unclaim(&self.calls_cache_busy)

    cdef int _symbols(self, str piece, vector[Symbol]& syms, vector[int32_t]& char_at,
                      const uint8_t* banned) except -1:
        """The piece's symbols, split and merged (:meth:`_split_merged`, with the encoder's word
        cache if free); raises the error it reports."""
        cdef WordCache* claimed = self._claim_calls_cache()
        cdef int status = self._split_merged(PyUnicode_KIND(piece), PyUnicode_DATA(piece),
                                             PyUnicode_GET_LENGTH(piece), syms, char_at, banned, claimed)
        self._free_calls_cache(claimed)
        if status < 0:
            self._missing_unk()
        return 0

    cdef int _split_merged(self, int kind, const void* data, Py_ssize_t n, vector[Symbol]& syms,
                           vector[int32_t]& char_at, const uint8_t* banned, WordCache* cache=NULL) noexcept nogil:
        """:meth:`_split_chars` then the merges, without the GIL; -1 as :meth:`_split_chars`.

        Word by word where no merge can join two words (see
        :meth:`_find_cuts`): the same symbols as merging the whole piece,
        but short words take the linear path, where a whole line (a
        SentencePiece-style tokenizer has no pre-tokenizer) would take the heap.
        A short word met before, in ``cache`` (a batch's, or one made here for
        a long text), is copied from there: prose repeats most of its words.
        """
        cdef vector[Symbol] word
        cdef vector[int32_t] word_at
        cdef Py_ssize_t start = 0, i, k
        cdef size_t base
        cdef uint32_t cp, previous = NO_MARK
        cdef bint cut, cached
        cdef WordCache own
        cdef uint64_t h = FNV_START
        if self.cut_mark == NO_MARK or self.dropout > 0.0:
            if self._split_chars(kind, data, n, syms, char_at) < 0:
                return -1
            self._merge(syms, banned)
            return 0
        if banned != NULL or self.cache_capacity <= 0:
            cache = NULL        # (a cache is of words merged with nothing excluded; 0: no cache at all)
        elif cache == NULL and n >= WORD_CACHE_MIN_TEXT:
            cache = &own
        for i in range(n + 1):
            if i < n:
                cp = read_char(kind, data, i)
                cut = cp == self.cut_mark and i > start and self._cuts_before(previous)
                previous = cp
                if not cut:
                    h = (h ^ cp) * FNV_PRIME
                    continue
            cached = cache != NULL and i - start <= WORD_CACHE_CHARS
            if not cached or not copy_cached_word(cache, kind, data, start, i - start, h | 1, syms, char_at):
                word.clear()
                word_at.clear()
                if self._split_chars(kind, <const char*>data + kind * start, i - start, word, word_at) < 0:
                    return -1
                self._merge(word, banned)
                syms.insert(syms.end(), word.begin(), word.end())
                base = char_at.size()
                char_at.resize(base + word_at.size() - 1)       # (word_at's last entry: the word's length)
                for k in range(<Py_ssize_t>word_at.size() - 1):
                    char_at[base + k] = word_at[k] + <int32_t>start
                if cached:
                    cache_word(cache, kind, data, start, i - start, h | 1, word, word_at)
            start = i
            h = (FNV_START ^ cp) * FNV_PRIME
        char_at.push_back(<int32_t>n)
        return 0

    cdef bint _cuts_before(self, uint32_t previous) noexcept nogil:
        """Whether a word may start at a ``cut_mark`` that follows the char ``previous``."""
        cdef uint64_t found
        cdef size_t k
        if previous == self.cut_mark:
            return False
        if not map_get(&self.chars, (<uint64_t>previous) << 2, &found):
            return self.cut_after_unknown
        for k in range(self.cut_unsafe.size()):
            if self.cut_unsafe[k] == previous:
                return False
        return True

    cdef void _merge(self, vector[Symbol]& syms, const uint8_t* banned) noexcept nogil:
        """The merges, on the linear path or the heap (with dropout, always the heap)."""
        if self.dropout > 0.0:
            self._merge_heap(syms, self.dropout, banned)
        elif <Py_ssize_t>syms.size() <= self.small_piece:
            self._merge_small(syms, banned)
        elif <Py_ssize_t>syms.size() >= self.bucket_piece:
            self._merge_buckets(syms, banned)
        else:
            self._merge_heap(syms, 0.0, banned)

    def _find_cuts(self, const uint32_t[::1] merges, uint32_t mark):
        """Merge pieces word by word, a word starting at each ``mark`` char, where that gives the same
        symbols as merging the whole piece; or leave ``cut_mark`` off.

        A merge makes a token of its two tokens' strings (one that is not
        in the vocabulary cannot be loaded). So two words are never joined
        unless some merge's right token starts with ``mark`` and its left
        token ends in something else: the chars those end in are unsafe to
        cut after (``cut_unsafe``). Each char's first symbol is its own
        token; a char without one becomes byte-fallback tokens (ending in
        ``>``) or the unknown token (or nothing: then the symbol before
        ends in another char), so a word starts after such a char only when
        byte fallback spells every byte and no ``>`` is unsafe.

        Only for an encoder without a continuing-subword prefix or an
        end-of-word suffix (they mark a piece's ends) that has ``mark`` as a
        token of its own.

        >>> from array import array
        >>> m = ord("\u2581")
        >>> enc = BpeEncoder(array("I", [0, 1, 3]), [(ord("a") << 2, 0), (m << 2, 1), (ord("b") << 2, 2)],
        ...                  [-1] * 256, ["a", "\u2581", "b", "a\u2581"], {})
        >>> enc._word_cuts()        # a word may start after "b", not after "a"
        (9601, [97], False)
        >>> enc.encode_ids("b\u2581a\u2581b")
        [2, 1, 3, 2]
        """
        cdef Py_ssize_t rank, n = merges.shape[0] // 3
        cdef uint64_t found
        cdef set unsafe = set()
        cdef list id_to_token = self.id_to_token
        cdef object left, right
        cdef Py_UCS4 last
        self.cut_mark = NO_MARK
        self.cut_unsafe.clear()
        if self.has_prefix or self.has_suffix or not map_get(&self.chars, (<uint64_t>mark) << 2, &found):
            return
        for rank in range(n):     # (514k merges in Gemma 3: chars read in C, no 1-char strs made)
            right = id_to_token[merges[3 * rank + 1]]
            if right is None or PyUnicode_GET_LENGTH(right) == 0 or PyUnicode_READ_CHAR(right, 0) != mark:
                continue
            left = id_to_token[merges[3 * rank]]
            if left is not None and PyUnicode_GET_LENGTH(left):
                last = PyUnicode_READ_CHAR(left, PyUnicode_GET_LENGTH(left) - 1)
                if last != mark:
                    unsafe.add(<uint32_t>last)     # (code points: ints)
        for cp in unsafe:
            self.cut_unsafe.push_back(<uint32_t>cp)
        self.cut_after_unknown = (self.byte_fallback and all(b >= 0 for b in self.byte_ids)
                                  and ord(">") not in unsafe)
        self.cut_mark = mark

    def _word_cuts(self):
        """``(mark, unsafe chars, cut after an unknown char)`` (None: pieces are merged whole), for tests."""
        if self.cut_mark == NO_MARK:
            return None
        return self.cut_mark, sorted(self.cut_unsafe), bool(self.cut_after_unknown)

    cdef object _whole_piece(self, str piece, Exclusion ex):
        """With ``ignore_merges``, the id of a piece that is a token whole (and not excluded), else None.
        As in Hugging Face, not with dropout: then every piece is merged."""
        if not self.ignore_merges or self.dropout > 0.0:
            return None
        tid = self.vocab.get(piece)
        return tid if tid is not None and (ex is None or not ex.banned_id(tid)) else None

    # -- excluded ids ------------------------------------------------------------------
    cdef Exclusion _exclusion(self, object excluded_ids):
        """The C form of ``excluded_ids`` (None: none), made once per set; None when it changes nothing."""
        cdef Exclusion ex
        cdef Py_ssize_t n_ids = len(self.id_to_token)
        if excluded_ids is None:
            return None
        key = excluded_ids if type(excluded_ids) is frozenset else frozenset(_checked_ids(excluded_ids))
        ex = self.exclusions.get(key)
        if ex is None:
            ex = Exclusion()
            ex.flags.assign(n_ids, 0)
            for tid in _checked_ids(key):
                if 0 <= tid < n_ids and self.id_to_token[tid] is not None:
                    ex.flags[<Py_ssize_t>tid] = 1
            unflag_values(&self.chars, ex.flags)
            ex.active = map_gives_flagged(&self.merges, ex.flags) or (
                self.ignore_merges and any(ex.flags[i] for i in range(n_ids)))
            ex.cache = {}
            if len(self.exclusions) >= 16:    # a caller making new sets all the time: forget the old ones
                self.exclusions.clear()
            self.exclusions[key] = ex
        return ex if ex.active else None

    # -- Python API ----------------------------------------------------------------
    def tokenize(self, str piece not None, excluded_ids=None):
        """The piece's tokens (``Token(id, value, (start, end))``, char offsets).

        ``excluded_ids``: ids the text must not give (see the module doc); a
        frozenset is fastest (its C form is found by the set itself).
        """
        cdef Exclusion ex = self._exclusion(excluded_ids)
        if not piece:
            return []
        tid = self._whole_piece(piece, ex)
        if tid is not None:
            return [self.token_cls(tid, piece, (0, len(piece)))]
        ids, starts, ends = self._encode(piece, ex)
        cdef list id_to_token = self.id_to_token
        make = self.token_cls
        return [make(ids[k], id_to_token[ids[k]], (starts[k], ends[k])) for k in range(len(ids))]

    def tokenize_bytes(self, str piece not None, excluded_ids=None):
        """:meth:`tokenize` with Hugging Face's UTF-8 byte offsets, exactly: a dropped unknown char
        counts no bytes, a byte-fallback token one (char offsets cannot say either). Not cached.

        >>> from array import array
        >>> enc = BpeEncoder(array("I"), [(ord("é") << 2, 0)], [-1] * 256, ["é"], {"é": 0})
        >>> [t.offsets for t in enc.tokenize_bytes("éé")], [t.offsets for t in enc.tokenize("éé")]
        ([(0, 2), (2, 4)], [(0, 1), (1, 2)])
        """
        cdef Exclusion ex = self._exclusion(excluded_ids)
        cdef vector[Symbol] syms
        cdef vector[int32_t] char_at
        cdef size_t i
        cdef int64_t pos = 0
        cdef const uint8_t* banned = NULL
        if not piece:
            return []
        tid = self._whole_piece(piece, ex)
        if tid is not None:
            return [self.token_cls(tid, piece, (0, len(piece.encode("utf-8", "surrogatepass"))))]
        if ex is not None:
            banned = ex.flags.data()
        self._symbols(piece, syms, char_at, banned)
        out = []
        for i in range(syms.size()):
            out.append(self.token_cls(syms[i].id, self.id_to_token[syms[i].id], (pos, pos + syms[i].nbytes)))
            pos += syms[i].nbytes
        return out

    def encode_spans(self, str piece not None):
        """``(ids, tokens, starts, ends)`` of the piece's tokens, char offsets: :meth:`tokenize` as four
        lists, with no Token object per token (a fast plan's call).

        >>> from array import array
        >>> BpeEncoder(array("I", [0, 1, 2]), [(ord("a") << 2, 0), (ord("b") << 2, 1)], [-1] * 256,
        ...            ["a", "b", "ab"], {"a": 0, "b": 1, "ab": 2}).encode_spans("abb")
        ([2, 1], ['ab', 'b'], [0, 2], [2, 3])
        """
        cdef list id_to_token = self.id_to_token
        if not piece:
            return [], [], [], []
        tid = self._whole_piece(piece, None)
        if tid is not None:
            return [tid], [id_to_token[tid]], [0], [len(piece)]
        ids, starts, ends = self._encode(piece, None)     # (kept in the cache: copied, not handed out)
        return list(ids), [id_to_token[i] for i in ids], list(starts), list(ends)

    @property
    def strings(self):
        """The token of each id (None where no token has it): what a raw encoding's ids spell."""
        return self.id_to_token

    def encode_raw(self, str piece not None, bint front=False):
        """``(raw, n)``: the piece's tokens as a raw encoding (``raw_encoding``'s int32 blocks of ids,
        char starts, char ends and words, the words all 0), with no Python object per token.

        ``front``: the piece's first char was put in front of the text (a
        Prepend), so char ``k`` of the piece is char ``k - 1`` of the text,
        and the one put in front spans the text's first char.

        >>> from array import array
        >>> enc = BpeEncoder(array("I", [0, 1, 2]), [(ord("a") << 2, 0), (ord("b") << 2, 1)], [-1] * 256,
        ...                  ["a", "b", "ab"], {"a": 0, "b": 1, "ab": 2})
        >>> raw, n = enc.encode_raw("abb")
        >>> n, array("i", raw).tolist(), array("i", enc.encode_raw("abb", front=True)[0]).tolist()
        (2, [2, 1, 0, 2, 2, 3, 0, 0], [2, 1, 0, 1, 1, 2, 0, 0])
        """
        return _piece_raw(self, piece, front)

    def encode_raw_batch(self, list pieces not None, fronts not None, strings=None):
        """``[encode_raw(piece, front) for piece, front in zip(pieces, fronts)]``, the pieces split and
        merged with the GIL released once for the list (so a fast plan's batch ranges overlap on
        threads). An encoder with dropout takes them one by one.

        ``strings`` (not None): each result comes as a plan's ``encode_raw_batch`` gives it,
        ``(raw, n, n_words, strings)`` (a piece is one word, an empty one none), out of the cyclic
        collector's sight (it holds bytes, ints and the token strings: no cycle). Made in Python,
        a tracked tuple a line started a collection every 700 lines, a sixth of a batch's time.

        >>> from array import array
        >>> enc = BpeEncoder(array("I", [0, 1, 2]), [(ord("a") << 2, 0), (ord("b") << 2, 1)], [-1] * 256,
        ...                  ["a", "b", "ab"], {"a": 0, "b": 1, "ab": 2})
        >>> enc.encode_raw_batch(["abb", "", "ba"], [False, False, True]) == [
        ...     enc.encode_raw("abb"), enc.encode_raw(""), enc.encode_raw("ba", True)]
        True
        """
        cdef Py_ssize_t count = len(pieces), k, start_sym = 0, start_char = 0
        cdef vector[int] kinds
        cdef vector[const void*] datas
        cdef vector[Py_ssize_t] lengths
        cdef vector[int] status             # 0: to encode here; 1: done (empty, whole); -1: one by one
        cdef vector[Symbol] syms, all_syms
        cdef vector[int32_t] char_at, all_chars
        cdef vector[size_t] sym_end, char_end
        cdef list out = [None] * count
        cdef tuple made
        cdef WordCache cache       # (the batch's words: lines repeat most of theirs)
        cdef WordCache* shared
        if len(fronts) != count:
            raise ValueError(f"encode_raw_batch: {count} pieces but {len(fronts)} fronts")
        if self.dropout > 0.0:
            out = [self.encode_raw(piece, front) for piece, front in zip(pieces, fronts)]
            return out if strings is None else [(*r, 1 if piece else 0, strings) for r, piece in zip(out, pieces)]
        read_strs(pieces, "encode_raw_batch: pieces", kinds, datas, lengths)
        for k in range(count):
            piece = pieces[k]
            if not piece or self._whole_piece(piece, None) is not None:
                out[k] = self.encode_raw(piece, fronts[k])
                status.push_back(1)
            else:
                status.push_back(0)
        with nogil:
            shared = self._word_cache_for(&cache, lengths)
            for k in range(count):
                if status[k] == 0:
                    syms.clear()
                    char_at.clear()
                    if self._split_merged(kinds[k], datas[k], lengths[k], syms, char_at, NULL, shared) < 0:
                        status[k] = -1
                    else:
                        all_syms.insert(all_syms.end(), syms.begin(), syms.end())
                        all_chars.insert(all_chars.end(), char_at.begin(), char_at.end())
                sym_end.push_back(all_syms.size())
                char_end.push_back(all_chars.size())
            self._free_calls_cache(shared)
        for k in range(count):
            if status[k] == 0:
                out[k] = (_raw_of(all_syms.data() + start_sym, <Py_ssize_t>(sym_end[k] - start_sym),
                                  all_chars.data() + start_char, <Py_ssize_t>(char_end[k] - start_char) - 1,
                                  fronts[k]),
                          <Py_ssize_t>(sym_end[k] - start_sym))
            elif status[k] < 0:
                out[k] = self.encode_raw(pieces[k], fronts[k])      # (raises the error _missing_unk names)
            if strings is not None:
                made = (out[k][0], out[k][1], 1 if lengths[k] else 0, strings)
                PyObject_GC_UnTrack(<void*>made)
                out[k] = made
            start_sym, start_char = sym_end[k], char_end[k]
        return out

    def encode_around_batch(self, list texts not None, AroundTokens around not None, str front not None,
                            str space not None, int scheme, strings, Py_ssize_t limit=-1):
        """Each text SentencePiece-style around the added tokens ``around`` splits out of it: its
        result as a plan's ``encode_raw_batch`` gives it, ``(raw, n, 0, strings)`` (untracked), or
        None to take the long way (a token with no id, a char with no token and no unk token, more
        than ``limit`` tokens if ``limit`` >= 0); all None where ``ignore_merges`` (its whole-piece
        look-ups) asks for the long way. With BPE-dropout the stretches draw in order, text by
        text (one that goes the long way has drawn: see ``Tokenizer._generator_rewind``).

        Hugging Face splits the tokens out first, then makes each stretch between them a piece on
        its own: each space ``space`` (one char), and in front, by ``scheme``: ``front`` (no char or
        one) before each (AROUND_FRONT: a normalizer's Prepend), or ``space`` unless the stretch
        begins with a space (AROUND_ALWAYS), only at the text's start (AROUND_FIRST), or nothing
        (AROUND_NEVER) (Metaspace's prepend schemes). Each stretch is one word, each token one.
        The stretches, all texts' in turn, are merged without the GIL, with one word cache.

        >>> from array import array
        >>> from pieceworks._kernels.raw_encoding import id_list, offset_list, word_list
        >>> from pieceworks._kernels.token_finder import AroundTokens, TokenTrie
        >>> enc = BpeEncoder(array("I", [0, 1, 2, 3]), [(ord("a") << 2, 0), (ord("b") << 2, 1), (ord("_") << 2, 3)],
        ...                  [-1] * 256, ["a", "b", "ab", "_"], {"a": 0, "b": 1, "ab": 2, "_": 3})
        >>> around = AroundTokens(TokenTrie(["<s>", "<x>"]), [9, None])     # ("<x>": a token with no id)
        >>> (raw, n, words, _), none = enc.encode_around_batch(["ab<s>a b", "<x>"], around, "", "_", AROUND_FRONT, None)
        >>> id_list(raw, n), offset_list(raw, n, 0), word_list(raw, n, -1), none
        ([2, 9, 0, 3, 1], [(0, 2), (2, 5), (5, 6), (6, 7), (7, 8)], [0, 1, 2, 2, 2], None)
        """
        cdef StretchWay way
        if PyUnicode_GET_LENGTH(space) != 1 or PyUnicode_GET_LENGTH(front) > 1:
            raise ValueError(f"encode_around_batch: space is one char and front at most one, got {space!r}, {front!r}")
        if not AROUND_FRONT <= scheme <= AROUND_NEVER:
            raise ValueError(f"encode_around_batch: no prepend scheme {scheme}")
        way.by_words = False
        way.scheme = scheme
        way.space = PyUnicode_READ_CHAR(space, 0)
        way.front = PyUnicode_READ_CHAR(front, 0) if PyUnicode_GET_LENGTH(front) else 0
        way.count_words = False
        return self._encode_around_all(texts, around, &way, strings, limit, "encode_around_batch: texts")

    def encode_words_around_batch(self, list texts not None, AroundTokens around not None, uint32_t mark, int mode,
                                  strings, Py_ssize_t limit=-1, bint joined=False):
        """Each text around the added tokens ``around`` splits out of it, each stretch between them
        cut into words at white space and merged as :meth:`encode_words_raw_batch` does a text
        (``mark`` in front of a word by ``mode``; 2: only of a word at the text's first char), each
        token a word of its own: ``(raw, n, n_words, strings)`` (untracked), or None to take the
        long way (a token with no id, a char with no token and no unk token, more than ``limit``
        tokens if ``limit`` >= 0); all None with ``ignore_merges``. Hugging Face's
        added tokens, then WhitespaceSplit and Metaspace on each stretch (BARThez's chat turns).
        All the texts' words are merged without the GIL, with one word cache. ``joined``: the
        texts are a pre-tokenized sequence's words, each encoded alone: the result is their one
        ``(raw, n, n_words, strings)``, each token's word its text's position; or, when one of
        them is left (None), the list as without ``joined``, for the caller to fill and join.

        >>> from array import array
        >>> from pieceworks._kernels.raw_encoding import id_list, offset_list, word_list
        >>> from pieceworks._kernels.token_finder import AroundTokens, TokenTrie
        >>> enc = BpeEncoder(array("I", [2, 0, 3]), [(ord("a") << 2, 0), (ord("b") << 2, 1), (ord("_") << 2, 2)],
        ...                  [-1] * 256, ["a", "b", "_", "_a"], {})
        >>> around = AroundTokens(TokenTrie(["<s>"]), [9])
        >>> (raw, n, n_words, _), = enc.encode_words_around_batch([" ab<s>a "], around, ord("_"), 1, None)
        >>> id_list(raw, n), offset_list(raw, n, 0), word_list(raw, n, -1), n_words
        ([3, 1, 9, 3], [(1, 2), (2, 3), (3, 6), (6, 7)], [0, 0, 1, 2], 3)
        >>> raw, n, n_words, _ = enc.encode_words_around_batch(["ab", "a"], around, ord("_"), 1, None, -1, True)
        >>> id_list(raw, n), offset_list(raw, n, 0), word_list(raw, n, -1), n_words
        ([3, 1, 3], [(0, 1), (1, 2), (0, 1)], [0, 0, 1], 2)
        """
        cdef StretchWay way
        cdef list made
        if not 0 <= mode <= 2:
            raise ValueError(f"encode_words_around_batch: mode is 0, 1 or 2, got {mode}")
        way.by_words = True
        way.scheme = mode
        way.space = mark
        way.front = 0
        way.count_words = True
        made = self._encode_around_all(texts, around, &way, strings, limit, "encode_words_around_batch: texts")
        if not joined or None in made:
            return made
        return join_words(made) + (len(made), strings)

    cdef list _encode_around_all(self, list texts, AroundTokens around, StretchWay* way, strings, Py_ssize_t limit,
                                 str name):
        """:meth:`encode_around_batch` and :meth:`encode_words_around_batch`: each text's stretches
        between the tokens ``around`` finds through :meth:`_piece_into` or :meth:`_words_into`
        (``way`` says which, and how), each token a word of its own, all without the GIL."""
        cdef Py_ssize_t count = len(texts), k, j, at, n
        cdef size_t first = 0
        cdef vector[int] kinds
        cdef vector[const void*] datas
        cdef vector[Py_ssize_t] lengths
        cdef vector[int] status                 # 0: encoded; -1: the long way
        cdef vector[size_t] text_end
        cdef vector[int32_t] word_count
        cdef RawTokens made
        cdef AroundScratch scratch
        cdef WordCache cache
        cdef WordCache* shared
        cdef Found t
        cdef int32_t word
        cdef int failed
        cdef list out = [None] * count
        cdef tuple result
        if self.ignore_merges:
            return out      # (it looks whole pieces up: the long way)
        read_strs(texts, name, kinds, datas, lengths)
        status.assign(count, 0)
        with nogil:
            shared = self._word_cache_for(&cache, lengths)
            for k in range(count):
                if tokens_around(around, kinds[k], <const char*>datas[k], lengths[k], &scratch) < 0:
                    status[k] = -1
                at = word = 0
                for j in range(<Py_ssize_t>scratch.tokens.size() + 1 if status[k] == 0 else 0):
                    t = scratch.tokens[j] if j < <Py_ssize_t>scratch.tokens.size() else Found(
                        <int32_t>lengths[k], 0, -1)
                    if at < t.start:        # the stretch before it
                        if way.by_words:
                            failed = self._words_into(kinds[k], datas[k], at, t.start, way.space, way.scheme, shared,
                                                      &made, &word)
                        else:
                            failed = self._piece_into(kinds[k], datas[k], at, t.start, way, shared, &made, &word)
                        if failed < 0:
                            status[k] = -1
                            break
                    if t.index >= 0:
                        _push_token(&made, t.index, t.start, t.start + t.length, word)
                        word += 1
                    at = t.start + t.length
                if status[k] < 0:       # (what it pushed is not kept)
                    _drop_tokens_from(&made, first)
                text_end.push_back(made.ids.size())
                word_count.push_back(word if way.count_words else 0)
                first = made.ids.size()
            self._free_calls_cache(shared)
        first = 0
        for k in range(count):
            n = <Py_ssize_t>(text_end[k] - first)
            if status[k] == 0 and (limit < 0 or n <= limit):
                result = (_raw_block(&made, first, n), n, word_count[k], strings)
                PyObject_GC_UnTrack(<void*>result)
                out[k] = result
            first = text_end[k]
        return out

    cdef int _piece_into(self, int kind, const void* data, Py_ssize_t at, Py_ssize_t stop, StretchWay* way,
                         WordCache* cache, RawTokens* out, int32_t* word) noexcept nogil:
        """Chars ``[at, stop)`` of a text as one piece (see :meth:`encode_around_batch`): each space
        ``way.space``, a char in front by ``way.scheme``; its tokens put on ``out`` with offsets in
        the text, all word ``word[0]`` (left one past it). -1 as :meth:`_split_merged`."""
        cdef Py_ssize_t i
        cdef int64_t pos = 0, end, start, finish
        cdef uint32_t c, lead = read_char(kind, data, at)
        cdef bint fronted
        if way.scheme == AROUND_FRONT:
            fronted = way.front != 0
        else:
            fronted = way.scheme != AROUND_NEVER and not (way.scheme == AROUND_FIRST and at) \
                and lead != 0x20 and lead != way.space
        out.word.resize(fronted + stop - at)
        if fronted:
            out.word[0] = way.front if way.scheme == AROUND_FRONT else way.space
        for i in range(at, stop):
            c = read_char(kind, data, i)
            out.word[fronted + i - at] = way.space if c == 0x20 else c
        out.syms.clear()
        out.char_at.clear()
        if self._split_merged(4, out.word.data(), <Py_ssize_t>out.word.size(), out.syms, out.char_at, NULL, cache) < 0:
            return -1
        for i in range(<Py_ssize_t>out.syms.size()):
            end = pos + out.syms[i].nbytes
            symbol_span(out.char_at.data(), <int64_t>out.char_at.size() - 1, pos, end, fronted, &start, &finish)
            pos = end
            _push_token(out, out.syms[i].id, <int32_t>(start + at), <int32_t>(finish + at), word[0])
        word[0] += 1
        return 0

    cdef int _words_into(self, int kind, const void* data, Py_ssize_t begin, Py_ssize_t stop, uint32_t mark,
                         int mode, WordCache* cache, RawTokens* out, int32_t* word) noexcept nogil:
        """Chars ``[begin, stop)`` of a text cut into words at white space (Hugging Face's
        WhitespaceSplit: Unicode White_Space), each merged alone with ``mark`` in front of it by
        ``mode`` (0 never, 1 every word, 2 a word at the text's first char only); their tokens put
        on ``out`` with offsets in the text, word numbers from ``word[0]`` on (left one past the
        last). -1 where a char has no token and there is no unk token."""
        cdef Py_ssize_t i = begin, start, s
        cdef int64_t pos, end, a, b, last
        cdef uint32_t cp
        cdef bint front
        while i < stop:
            while i < stop and is_white_space(read_char(kind, data, i)):
                i += 1
            if i == stop:
                break
            start = i
            out.word.clear()
            front = mode == 1 or mode == 2 and start == 0
            if front:
                out.word.push_back(mark)
            while i < stop:
                cp = read_char(kind, data, i)
                if is_white_space(cp):
                    break
                out.word.push_back(cp)
                i += 1
            out.syms.clear()
            out.char_at.clear()
            if self._split_merged(4, out.word.data(), <Py_ssize_t>out.word.size(), out.syms, out.char_at, NULL,
                                  cache) < 0:
                return -1
            # Offsets as _raw_of gives them, moved to where the word starts.
            last = <int64_t>out.char_at.size() - 1
            pos = 0
            for s in range(<Py_ssize_t>out.syms.size()):
                end = pos + out.syms[s].nbytes
                symbol_span(out.char_at.data(), last, pos, end, front, &a, &b)
                pos = end
                _push_token(out, out.syms[s].id, <int32_t>(a + start), <int32_t>(b + start), word[0])
            word[0] += 1
        return 0

    def encode_words_raw_batch(self, list texts not None, uint32_t mark, fronts not None):
        """``(raw, n, n_words)`` of each text cut into words at whitespace (Hugging Face's
        WhitespaceSplit: Unicode White_Space), each word merged alone, ``mark`` put in front of it
        where its text's ``fronts`` entry says (Metaspace): 0 never, 1 every word, 2 a word at the
        text's start only. A word's tokens are one word of the raw encoding; the char put in front
        spans the word's first char, as :meth:`encode_raw` ``front``. All with the GIL released once
        (with BPE-dropout each word draws, in order: no word cache).

        >>> from array import array
        >>> enc = BpeEncoder(array("I", [2, 0, 3]), [(ord("a") << 2, 0), (ord("b") << 2, 1), (ord("_") << 2, 2)],
        ...                  [-1] * 256, ["a", "b", "_", "_a"], {})
        >>> raw, n, n_words = enc.encode_words_raw_batch([" ab\\ta "], ord("_"), [1])[0]
        >>> n, n_words, array("i", raw).tolist()
        (3, 2, [3, 1, 3, 1, 2, 4, 2, 3, 5, 0, 0, 1])
        """
        cdef Py_ssize_t count = len(texts), k, n
        cdef size_t first
        cdef vector[int] kinds, modes
        cdef vector[const void*] datas
        cdef vector[Py_ssize_t] lengths
        cdef vector[int] status             # 0: done here; -1: the unk token is missing (raise)
        cdef RawTokens made
        cdef vector[size_t] text_end
        cdef vector[int32_t] word_count
        cdef int32_t w
        cdef list out = [None] * count
        cdef WordCache cache        # (the batch's words, if the encoder's own cache is taken)
        cdef WordCache* shared
        if len(fronts) != count:
            raise ValueError(f"encode_words_raw_batch: {count} texts but {len(fronts)} fronts")
        read_strs(texts, "encode_words_raw_batch: texts", kinds, datas, lengths)
        for k in range(count):
            modes.push_back(fronts[k])
            status.push_back(0)
        with nogil:
            shared = self._word_cache_for(&cache, lengths)
            for k in range(count):
                w = 0
                if self._words_into(kinds[k], datas[k], 0, lengths[k], mark, modes[k], shared, &made, &w) < 0:
                    status[k] = -1
                text_end.push_back(made.ids.size())
                word_count.push_back(w)
            self._free_calls_cache(shared)
        first = 0
        for k in range(count):
            if status[k] < 0:
                self._missing_unk()
            n = <Py_ssize_t>(text_end[k] - first)
            out[k] = (_raw_block(&made, first, n), n, word_count[k])
            first = text_end[k]
        return out

    def encode_ids(self, str piece not None, excluded_ids=None):
        """Just the ids of the piece's tokens."""
        cdef Exclusion ex = self._exclusion(excluded_ids)
        if not piece:
            return []
        tid = self._whole_piece(piece, ex)
        if tid is not None:
            return [tid]
        return list(self._encode(piece, ex)[0])

    def exclusion_matters(self, excluded_ids):
        """Whether ``excluded_ids`` can change a result (some id of it, not a char's own token, is a
        merge's result or, with ``ignore_merges``, any token); if not, tokenize ignores it."""
        return self._exclusion(excluded_ids) is not None

    def clear_cache(self):
        """Empty the piece cache, the exclusions' and the word cache kept from call to call."""
        self.cache.clear()
        self.exclusions.clear()
        self._drop_calls_cache()

    def resize_cache(self, Py_ssize_t capacity):
        self.cache_capacity = capacity
        if len(self.cache) > capacity:
            self.cache.clear()
        if capacity <= 0:       # (no caching: the word cache's memory goes too)
            self._drop_calls_cache()

    cdef void _drop_calls_cache(self) noexcept:
        """Free the word cache kept from call to call (unless a call on another thread holds it)."""
        cdef WordCache* claimed = self._claim_calls_cache()
        if claimed != NULL:
            vector[uint64_t]().swap(claimed.keys)
            vector[size_t]().swap(claimed.at)
            vector[int32_t]().swap(claimed.data)
            claimed.used = 0
            self._free_calls_cache(claimed)

    def merge_count(self):
        return self.merges.size


def _checked_ids(ids):
    """The items of ``ids`` as ints (anything with ``__index__``); InputTypeError for anything else.

    >>> _checked_ids({3})
    [3]
    """
    out = []
    for tid in ids:
        if not isinstance(tid, bool):
            try:
                out.append(index(tid))
                continue
            except TypeError:
                pass
        raise InputTypeError(f"excluded_ids must hold token ids (int), got {tid!r}",
                             fix="pass a set of ids, e.g. frozenset({tokenizer.token_to_id('<|endoftext|>')})")
    return out


# -- merges as ids: the vocabulary looked up by slices of the merge strings --------------


cdef struct Span:
    # chars start:end of a str (kind and data as PyUnicode_KIND/DATA give them)
    int kind
    const void* data
    Py_ssize_t start
    Py_ssize_t end


cdef struct VocabSlot:
    uint64_t h               # 0: an empty slot
    PyObject* key            # borrowed from the vocab dict, which the table keeps
    uint32_t id


cdef inline Span span_of(str s, Py_ssize_t start, Py_ssize_t end) noexcept:
    return Span(PyUnicode_KIND(s), PyUnicode_DATA(s), start, end)


cdef inline uint64_t hash_spans(const Span* a, const Span* b) noexcept:
    """FNV-1a over the code points of ``a`` then ``b``, mixed; never 0 (an empty slot)."""
    cdef uint64_t h = 0xcbf29ce484222325ULL
    cdef Py_ssize_t i
    for i in range(a.start, a.end):
        h = (h ^ <uint32_t>PyUnicode_READ(a.kind, a.data, i)) * 0x100000001b3ULL
    for i in range(b.start, b.end):
        h = (h ^ <uint32_t>PyUnicode_READ(b.kind, b.data, i)) * 0x100000001b3ULL
    h ^= h >> 33
    h *= 0xff51afd7ed558ccdULL
    h ^= h >> 33
    return h | 1


cdef inline bint spells(PyObject* key, const Span* a, const Span* b) noexcept:
    """Whether the str ``key`` is the chars of ``a`` followed by those of ``b``."""
    cdef Py_ssize_t i, j = 0
    cdef int kind = PyUnicode_KIND(<object>key)
    cdef const void* data = PyUnicode_DATA(<object>key)
    if PyUnicode_GET_LENGTH(<object>key) != (a.end - a.start) + (b.end - b.start):
        return False
    for i in range(a.start, a.end):
        if PyUnicode_READ(kind, data, j) != PyUnicode_READ(a.kind, a.data, i):
            return False
        j += 1
    for i in range(b.start, b.end):
        if PyUnicode_READ(kind, data, j) != PyUnicode_READ(b.kind, b.data, i):
            return False
        j += 1
    return True


cdef tuple _piece_raw(BpeEncoder enc, str piece, bint front):
    """:meth:`BpeEncoder.encode_raw`."""
    cdef vector[Symbol] syms
    cdef vector[int32_t] char_at
    if not piece:
        return b"", 0
    tid = enc._whole_piece(piece, None)
    if tid is not None:
        return _whole_raw(tid, PyUnicode_GET_LENGTH(piece), front), 1
    enc._symbols(piece, syms, char_at, NULL)
    return _raw_of(syms.data(), <Py_ssize_t>syms.size(), char_at.data(), <Py_ssize_t>char_at.size() - 1,
                   front), <Py_ssize_t>syms.size()


cpdef bint same_objects(list items, tuple expected) except -1:
    """Whether ``items`` holds the very objects ``expected`` does, in order (a normalizer Sequence's
    list, edited in place since a snapshot of it: see :class:`OneSpmText`).

    >>> a = object(); same_objects([a], (a,)), same_objects([a], (object(),)), same_objects([], (a,))
    (True, False, False)
    """
    cdef Py_ssize_t k
    if len(items) != len(expected):
        return False
    for k in range(len(expected)):
        if items[k] is not expected[k]:
            return False
    return True


cdef class OneSpmText:
    """``SpmBpePlan.encode_raw`` of one text (at 0) less its strings, fixed to one reading of the
    stages: ``Tokenizer.encode``'s snapshot, kept while the component epoch holds (see
    ``single_text.pyx``). Called with a str: ``(raw, n, 1)``, or None for the long way.

    ``scheme`` is where ``space`` goes in front (an ``AROUND_*``: ``front``
    always for a normalizer's Prepend, else Metaspace's prepend scheme);
    every space of the text becomes ``space``. ``members``: the
    normalizer Sequence's list, which the user may edit in place without
    moving the epoch: a call finds its members as they were, or goes the
    long way (which reads the stages again).

    >>> from array import array
    >>> enc = BpeEncoder(array("I", [0, 1, 2]), [(ord("_") << 2, 0), (ord("a") << 2, 1)], [-1] * 256,
    ...                  ["_", "a", "_a"], {"_": 0, "a": 1, "_a": 2})
    >>> raw, n, words = OneSpmText(enc, "", "_", AROUND_FIRST)("a a")
    >>> n, array("i", raw).tolist()         # ids, char starts, char ends, words
    (2, [2, 2, 0, 1, 1, 3, 0, 0])
    """

    cdef BpeEncoder encoder
    cdef str front, space
    cdef int scheme
    cdef list members
    cdef tuple expected

    def __init__(self, BpeEncoder encoder not None, str front not None, str space not None, int scheme,
                 list members=None):
        if not AROUND_FRONT <= scheme <= AROUND_NEVER:
            raise ValueError(f"OneSpmText: unknown prepend scheme {scheme}")
        if scheme != AROUND_FRONT and len(space) != 1:
            raise ValueError(f"OneSpmText: Metaspace's replacement must be one char, got {space!r}")
        self.encoder, self.front, self.space, self.scheme = encoder, front, space, scheme
        self.members = members
        self.expected = None if members is None else tuple(members)

    def __call__(self, str text not None):
        if self.members is not None and not same_objects(self.members, self.expected):
            return None
        return self._one(text) + (1,) if PyUnicode_GET_LENGTH(text) else (b"", 0, 0)

    def encode_words(self, list words not None):
        """``(raw, n_tokens, n_words)`` of a pre-tokenized sequence: each word encoded as ``one(word)``
        encodes it, its tokens' offsets within that word and their word its position; None for
        the long way (a word not a str, or the normalizer's list edited).

        >>> from array import array
        >>> enc = BpeEncoder(array("I", [0, 1, 2]), [(ord("_") << 2, 0), (ord("a") << 2, 1)], [-1] * 256,
        ...                  ["_", "a", "_a"], {"_": 0, "a": 1, "_a": 2})
        >>> raw, n, n_words = OneSpmText(enc, "", "_", AROUND_FIRST).encode_words(["a", "a"])
        >>> n, n_words, array("i", raw).tolist()         # ids, char starts, char ends, words
        (2, 2, [2, 2, 0, 0, 1, 1, 0, 1])
        """
        cdef list parts = []
        if self.members is not None and not same_objects(self.members, self.expected):
            return None
        for word in words:
            if type(word) is not str:
                return None
            parts.append(self._one(<str>word))
        return join_words(parts) + (len(parts),)

    cdef tuple _one(self, str text):
        """``(raw, n)`` of ``text`` (see :meth:`__call__`)."""
        cdef str front
        cdef Py_UCS4 first
        if PyUnicode_GET_LENGTH(text) == 0:
            return b"", 0
        if self.scheme == AROUND_FRONT:
            front = self.front
        elif self.scheme == AROUND_NEVER:
            front = ""
        else:       # ("first": the text is at 0)
            first = PyUnicode_READ_CHAR(text, 0)
            front = "" if first == u" " or first == PyUnicode_READ_CHAR(self.space, 0) else self.space
        piece = text.replace(" ", self.space)
        return _piece_raw(self.encoder, front + piece if front else piece, front != "")


cdef class _VocabTable:
    """``vocab`` (str -> id) looked up by a slice of a str, or two joined, with no str made: a
    merge's two sides and their join are slices of the merge (Llama 3's 280k merges: three str
    objects and three dict look-ups each were most of loading its tokenizer.json).

    >>> t = _VocabTable({"ab": 7, "a": 1})
    >>> t.find_text("xab", 1, 3), t.find_text("a b", 0, 1), t.find_text("a b", 2, 3)
    (7, 1, -1)
    """
    cdef vector[VocabSlot] slots
    cdef size_t mask
    cdef dict vocab
    cdef bint usable         # every key a str, every id within uint32

    def __cinit__(self, dict vocab):
        cdef size_t size = 16
        cdef Span key_span, empty
        cdef size_t i
        cdef uint64_t h
        self.vocab = vocab
        self.usable = True
        while size < 2 * <size_t>len(vocab) + 16:
            size *= 2
        self.slots.resize(size, VocabSlot(0, NULL, 0))
        self.mask = size - 1
        for key, value in vocab.items():
            if type(key) is not str or type(value) is not int or not 0 <= value <= UINT32_MAX:
                self.usable = False
                return
            key_span = span_of(key, 0, PyUnicode_GET_LENGTH(key))
            empty = Span(1, NULL, 0, 0)
            h = hash_spans(&key_span, &empty)
            i = h & self.mask
            while self.slots[i].h:
                i = (i + 1) & self.mask
            self.slots[i] = VocabSlot(h, <PyObject*>key, <uint32_t>value)

    cdef int64_t find(self, const Span* a, const Span* b) noexcept:
        """The id of the chars of ``a`` then ``b``; -1 if no key spells them."""
        return self.find_hashed(a, b, hash_spans(a, b))

    cdef void load_slot(self, uint64_t h) noexcept:
        """Start loading the slot where a look-up of hash ``h`` begins."""
        pw_prefetch_read(&self.slots[h & self.mask])

    cdef void load_key(self, uint64_t h) noexcept:
        """Start loading the key a look-up of hash ``h`` compares first (its slot loaded already)."""
        cdef size_t i = h & self.mask
        while self.slots[i].h:
            if self.slots[i].h == h:
                pw_prefetch_read(self.slots[i].key)     # (a compact str: its chars follow its header)
                return
            i = (i + 1) & self.mask

    cdef int64_t find_hashed(self, const Span* a, const Span* b, uint64_t h) noexcept:
        """:meth:`find` with the hash of ``a`` then ``b`` given."""
        cdef size_t i = h & self.mask
        while self.slots[i].h:
            if self.slots[i].h == h and spells(self.slots[i].key, a, b):
                return self.slots[i].id
            i = (i + 1) & self.mask
        return -1

    def find_text(self, str text not None, Py_ssize_t start, Py_ssize_t end) -> int:
        """The id of ``text[start:end]``, or -1 (for tests)."""
        if not 0 <= start <= end <= len(text):
            raise IndexError(f"find_text: {start}:{end} is not a slice of a text of {len(text)} chars")
        cdef Span a = span_of(text, start, end), empty = Span(1, NULL, 0, 0)
        return self.find(&a, &empty)


cdef bint merge_sides(object m, Span* left, Span* right) noexcept:
    """The two sides of merge ``m`` (a two-str list or tuple, or one str with one space);
    False if it is neither."""
    cdef Py_ssize_t i, space = -1, n
    cdef int kind
    cdef const void* data
    if (type(m) is list or type(m) is tuple) and len(m) == 2:
        if type(m[0]) is not str or type(m[1]) is not str:
            return False
        left[0] = span_of(m[0], 0, PyUnicode_GET_LENGTH(m[0]))
        right[0] = span_of(m[1], 0, PyUnicode_GET_LENGTH(m[1]))
        return True
    if type(m) is not str:
        return False
    n = PyUnicode_GET_LENGTH(m)
    kind = PyUnicode_KIND(m)
    data = PyUnicode_DATA(m)
    for i in range(n):
        if PyUnicode_READ(kind, data, i) == 0x20:
            if space >= 0:
                return False    # ("a b c".split(" ") is three parts)
            space = i
    if space < 0:
        return False
    left[0] = Span(kind, data, 0, space)
    right[0] = Span(kind, data, space + 1, n)
    return True


cdef struct MergeLookup:
    # one merge's sides, the token they join into (``joined`` after ``left``) and the hash of each
    Span left, right, joined, empty
    uint64_t h[3]


cdef enum:
    MERGE_RING = 32         # merges in flight in resolve_merges (more than SLOTS_AHEAD)
    SLOTS_AHEAD = 16
    KEYS_AHEAD = 6


cdef bint _hash_merge(_VocabTable table, object merge, Py_ssize_t cut, const Span* want,
                      MergeLookup* look) noexcept:
    """Fill ``look`` for ``merge`` (its right side less the prefix ``want[:cut]`` for the joined
    token), start loading its three slots; False if it is malformed."""
    cdef Py_ssize_t k
    if not merge_sides(merge, &look.left, &look.right):
        return False
    look.empty = Span(1, NULL, 0, 0)
    look.joined = look.right
    if cut:
        if look.right.end - look.right.start < cut:
            return False
        for k in range(cut):
            if (PyUnicode_READ(look.right.kind, look.right.data, look.right.start + k)
                    != PyUnicode_READ(want.kind, want.data, k)):
                return False
        look.joined.start += cut
    look.h[0] = hash_spans(&look.left, &look.empty)
    look.h[1] = hash_spans(&look.right, &look.empty)
    look.h[2] = hash_spans(&look.left, &look.joined)
    table.load_slot(look.h[0])
    table.load_slot(look.h[1])
    table.load_slot(look.h[2])
    return True


def resolve_merges(dict vocab, list merges, prefix):
    """Merges as a flat ``array("I")`` of ``left_id, right_id, new_id`` per merge.

    Each merge is a two-string list/tuple or a ``"left right"`` string; the
    new token is ``left + right`` minus ``prefix`` at the right's start. A
    pair listed twice keeps only its later place (Hugging Face keeps a
    pair -> rank map). Returns ``None`` at the first merge that is
    malformed or names a token outside ``vocab`` (or when a vocab key is not
    a str or an id not a uint32); the caller then finds and reports it.

    >>> list(resolve_merges({"a": 0, "##b": 1, "ab": 2}, [["a", "##b"]], "##"))
    [0, 1, 2]
    >>> resolve_merges({"a": 0}, ["a b"], None) is None
    True
    """
    cdef Py_ssize_t i, n = len(merges)
    cdef Py_ssize_t cut = 0 if prefix is None else len(prefix)
    cdef vector[uint32_t] flat
    cdef _VocabTable table = _VocabTable(vocab)
    cdef Span want
    cdef MergeLookup ring[MERGE_RING]
    cdef MergeLookup* look
    cdef int64_t a_id, b_id, new_id
    if not table.usable or cut and type(prefix) is not str:
        return None
    if cut:
        want = span_of(prefix, 0, cut)
    flat.reserve(3 * n)
    # Three look-ups a merge, each two cache misses (its slot, then its key's chars) in tables
    # of megabytes: a merge's slots start loading SLOTS_AHEAD merges before it is resolved,
    # and its keys KEYS_AHEAD before, so the misses of several merges overlap.
    for i in range(-SLOTS_AHEAD, n):
        if i + SLOTS_AHEAD < n and not _hash_merge(table, merges[i + SLOTS_AHEAD], cut, &want,
                                                   &ring[(i + SLOTS_AHEAD) % MERGE_RING]):
            return None     # (the caller's careful pass says which merge, and what is wrong)
        if 0 <= i + KEYS_AHEAD < n:
            look = &ring[(i + KEYS_AHEAD) % MERGE_RING]
            table.load_key(look.h[0])
            table.load_key(look.h[1])
            table.load_key(look.h[2])
        if i < 0:
            continue
        look = &ring[i % MERGE_RING]
        a_id = table.find_hashed(&look.left, &look.empty, look.h[0])
        b_id = table.find_hashed(&look.right, &look.empty, look.h[1])
        new_id = table.find_hashed(&look.left, &look.joined, look.h[2])
        if a_id < 0 or b_id < 0 or new_id < 0:
            return None
        flat.push_back(<uint32_t>a_id)
        flat.push_back(<uint32_t>b_id)
        flat.push_back(<uint32_t>new_id)
    return _keep_last_of_each_pair(flat, n)


cdef object _keep_last_of_each_pair(const vector[uint32_t]& flat, Py_ssize_t n):
    """``flat``'s merges as an ``array("I")``, a pair listed twice only at its later place
    (None for the pair of two ids 2**32 - 1, whose key is the map's empty mark)."""
    cdef U64Map last
    cdef uint64_t key, seen
    cdef size_t ahead
    cdef Py_ssize_t i
    cdef bint repeated = False
    out = array("I")
    map_init(&last, <size_t>n)
    try:
        for i in range(n):
            if i + SLOTS_AHEAD < n:     # (the map is megabytes: its slots load a few pairs ahead)
                ahead = slot_of(&last, pair_key(flat[3 * (i + SLOTS_AHEAD)], flat[3 * (i + SLOTS_AHEAD) + 1]))
                pw_prefetch_read(&last.slots[2 * ahead])
            key = pair_key(flat[3 * i], flat[3 * i + 1])
            if key == EMPTY_KEY:
                return None
            if map_get(&last, key, &seen):
                repeated = True
            map_put(&last, key, <uint64_t>i)
        if not repeated:
            out.frombytes((<char*>flat.data())[:flat.size() * sizeof(uint32_t)])
            return out
        for i in range(n):
            map_get(&last, pair_key(flat[3 * i], flat[3 * i + 1]), &seen)
            if seen == <uint64_t>i:
                out.extend((flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]))
        return out
    finally:
        map_free(&last)
