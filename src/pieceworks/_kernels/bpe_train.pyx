# cython: language_level=3
# distutils: language = c++
"""The BPE training loop: learn merges from words given as token ids.

Pair counts are built once. A max-heap holds candidate pairs with lazy
invalidation: a popped entry whose count (or first occurrence) is out of
date is corrected and pushed back. Each merge visits only the words that
contain the pair, never the whole corpus.

Two tie rules, chosen by ``first_seen``:

* Hugging Face (``first_seen=False``) reproduces ``tokenizers``' trainer
  step for step, quirks included. Ties go to the pair with the smaller
  ``(left id, right id)``. Each heap entry carries its own word list, so a
  pair that regains occurrences gets a second entry for those words only.
  A merged pair's count is not decreased by its own merges, and pairs over
  ``max_token_length`` are left out only when new (``width < max``).
  Entries equal in count and pair (several entries of one pair) pop oldest
  first, where Hugging Face's heap leaves the order open; counts are 64-bit
  where Hugging Face's are 32-bit (and wrap past 2**31).
* first_seen (``first_seen=True``) keeps exact counts and breaks ties by
  the pair's first occurrence (word order, then char position), as
  :func:`pieceworks.reference.bpe.train_bpe` does. A pair counts only where
  its merged token would cover at most ``max_token_length`` chars.

Invariant for the lazy heap: every pair with a positive count has an entry
whose priority is at least the pair's true priority, so a popped entry
that checks out is the true best.

Memory layout. Measured on 5.25 M distinct web-like words (45 M chars,
byte-level, 32k merges; benchmarks/bench_memory_limit.py): the learner
peaks near 265 MB, about 50 bytes a word, where the previous layout (a C++
vector per word, one unordered_map of pair counts, a vector per word list
that kept its peak capacity) took ~1.9 GB.

* words: every symbol id back to back in one array, uint16 when every id
  the run can make fits (else uint32), a word's dead tail filled with
  ``hole``; per word a uint32 start and a uint8 count (bigger counts in a
  side map): 2 bytes a char and 5 a word, no object per word. Once a
  quarter of the array is dead tails, the words are moved together and the
  rest given back (63 MB of 116 MB by the end above). Char widths (int32
  per symbol) are kept only where they matter (first_seen,
  max_token_length).
* pair counts: one open-addressing table per left id, 8-byte slots
  (right id, int32 count; bigger counts in a side map); a table grows
  alone, so growing never holds two copies of all pairs (4.4 M pairs:
  69 MB).
* heap entries: 24 bytes. In huggingface mode an entry of count <= 8
  waits in a 12-byte record outside the heap until the heap runs empty:
  none of them could be popped before, and most (4.3 M of 4.6 M above)
  never are. They enter in push order, so ties pop as they would have.
* word lists (huggingface mode): a list is made in one step and never
  grows afterwards, so the lists live back to back in one arena, as
  varint deltas of strictly increasing word indices (~1.5 bytes a word
  instead of 4); a list of one word lives in its entry. Freed lists are
  compacted away once they are a quarter of the arena.
* big arrays grow with realloc, which moves large blocks without copying;
  freed blocks of grown tables are handed back to the system
  (``malloc_trim``), or glibc keeps them resident.
"""

cimport cython
from cython.operator cimport dereference as deref
from libc.stdint cimport INT32_MAX, INT32_MIN, INT64_MAX, UINT64_MAX
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memmove, memset
from libcpp.algorithm cimport is_sorted, sort, unique
from libcpp.utility cimport pair as cpair

cdef extern from *:
    """
    #include <stdlib.h>
    #if defined(__GLIBC__)
    #include <malloc.h>
    static void pw_trim_heap(void) { malloc_trim(0); }
    #else
    static void pw_trim_heap(void) {}
    #endif
    """
    void pw_trim_heap() nogil

cdef uint64_t NO_OCCURRENCE = UINT64_MAX
cdef uint32_t EMPTY_SLOT = 0xFFFFFFFF
cdef uint32_t LIST_INLINE = 0x80000000
cdef uint32_t FREE_LIST = 0xFFFFFFFF
cdef uint32_t NONE32 = 0xFFFFFFFF
cdef uint8_t BIG_COUNT = 255
cdef int32_t BIG_PAIR = INT32_MIN     # a pair count outside int32: see big_pairs
cdef int64_t COLD_MAX = 8             # entries of count 0..COLD_MAX wait outside the heap
cdef size_t COMPACT_MIN = 1 << 22      # arena garbage (bytes) or dead symbols worth a compaction
cdef size_t STEP_BYTES_KEEP = 1 << 16  # step buffers larger than this are given back
cdef uint32_t SEQ_START = 0           # the first push sequence (tests start near the end)
cdef size_t TRIM_AFTER = 16 << 20      # freed bytes worth handing back to the system


# -- growable plain arrays ---------------------------------------------------------
cdef int buf_reserve(Buf* b, size_t n, size_t elem) except -1:
    """Make room for ``n`` elements of ``elem`` bytes (grows by half, or to exactly ``n``)."""
    cdef size_t cap
    cdef char* p
    if n <= b.cap:
        return 0
    cap = b.cap + b.cap // 2
    if cap < n:
        cap = n
    p = <char*>realloc(b.data, cap * elem)
    if p == NULL:
        raise MemoryError(f"BPE training could not grow an array to {cap * elem:,} bytes")
    b.data = p
    b.cap = cap
    return 0


cdef void buf_fit(Buf* b, size_t elem) noexcept:
    """Give unused capacity back."""
    cdef char* p
    if b.n == 0:
        free(b.data)
        b.data = NULL
        b.cap = 0
        return
    p = <char*>realloc(b.data, b.n * elem)
    if p != NULL:
        b.data = p
        b.cap = b.n


cdef void buf_free(Buf* b) noexcept:
    free(b.data)
    b.data = NULL
    b.n = 0
    b.cap = 0


# -- small helpers -------------------------------------------------------------------
cdef inline uint64_t pair_key(uint32_t a, uint32_t b) noexcept nogil:
    return ((<uint64_t>a) << 32) | b


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    x ^= x >> 33
    x *= 0xFF51AFD7ED558CCDULL
    x ^= x >> 33
    return x


cdef inline uint32_t varint_size(uint32_t v) noexcept nogil:
    cdef uint32_t n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline uint8_t* put_varint(uint8_t* p, uint32_t v) noexcept nogil:
    while v >= 0x80:
        p[0] = <uint8_t>((v & 0x7F) | 0x80)
        p += 1
        v >>= 7
    p[0] = <uint8_t>v
    return p + 1


cdef inline void push_varint(vector[uint8_t]& out, uint32_t v) noexcept:
    while v >= 0x80:
        out.push_back(<uint8_t>((v & 0x7F) | 0x80))
        v >>= 7
    out.push_back(<uint8_t>v)


cdef inline uint32_t get_varint(const uint8_t** p) noexcept nogil:
    cdef uint32_t v = 0
    cdef int shift = 0
    cdef uint8_t byte
    while True:
        byte = p[0][0]
        p[0] += 1
        v |= (<uint32_t>(byte & 0x7F)) << shift
        if byte < 0x80:
            return v
        shift += 7


cdef inline int64_t utf8_next(const uint8_t[::1] blob, int64_t pos, int64_t end, uint32_t* cp) noexcept:
    """Decode the char at ``pos`` into ``cp``; the next position, or -1 if cut short at ``end``."""
    cdef uint8_t c = blob[pos]
    if c < 0x80:
        cp[0] = c
        return pos + 1
    if c < 0xE0:
        if pos + 1 >= end:
            return -1
        cp[0] = ((c & 0x1F) << 6) | (blob[pos + 1] & 0x3F)
        return pos + 2
    if c < 0xF0:
        if pos + 2 >= end:
            return -1
        cp[0] = ((c & 0x0F) << 12) | ((blob[pos + 1] & 0x3F) << 6) | (blob[pos + 2] & 0x3F)
        return pos + 3
    if pos + 3 >= end:
        return -1
    cp[0] = (((c & 0x07) << 18) | ((blob[pos + 1] & 0x3F) << 12) | ((blob[pos + 2] & 0x3F) << 6)
             | (blob[pos + 3] & 0x3F))
    return pos + 4


cdef inline bint goes_before(const Entry& x, const Entry& y) noexcept nogil:
    if x.count != y.count:
        return x.count > y.count
    if x.key2 != y.key2:
        return x.key2 < y.key2
    if x.x != y.x:
        return x.x < y.x
    return x.y < y.y


cdef int heap_push(Buf* heap, Entry entry) except -1:
    buf_reserve(heap, heap.n + 1, sizeof(Entry))
    cdef Entry* h = <Entry*>heap.data
    cdef size_t i = heap.n
    cdef size_t parent
    heap.n += 1
    while i > 0:
        parent = (i - 1) >> 1
        if not goes_before(entry, h[parent]):
            break
        h[i] = h[parent]
        i = parent
    h[i] = entry
    return 0


cdef Entry heap_pop(Buf* heap) noexcept:
    cdef Entry* h = <Entry*>heap.data
    cdef Entry top = h[0]
    heap.n -= 1
    cdef size_t n = heap.n
    if n == 0:
        return top
    cdef Entry last = h[n]
    cdef size_t i = 0
    cdef size_t child
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and goes_before(h[child + 1], h[child]):
            child += 1
        if not goes_before(h[child], last):
            break
        h[i] = h[child]
        i = child
    h[i] = last
    return top


# -- pair counts: one table per left id ------------------------------------------------
cdef inline uint32_t slot_of(uint32_t right, uint32_t mask) noexcept nogil:
    return (<uint32_t>(((<uint64_t>right) * 0x9E3779B97F4A7C15ULL) >> 32)) & mask


cdef int table_grow(PairTable* t) except -1:
    cdef uint32_t old_cap = t.mask + 1 if t.slots != NULL else 0
    cdef uint32_t cap = 4 if old_cap == 0 else old_cap * 2
    cdef PairSlot* slots = <PairSlot*>malloc(cap * sizeof(PairSlot))
    cdef uint32_t i, pos
    if slots == NULL:
        raise MemoryError("BPE training ran out of memory for pair counts")
    for i in range(cap):
        slots[i].right = EMPTY_SLOT
    for i in range(old_cap):
        if t.slots[i].right != EMPTY_SLOT:
            pos = slot_of(t.slots[i].right, cap - 1)
            while slots[pos].right != EMPTY_SLOT:
                pos = (pos + 1) & (cap - 1)
            slots[pos] = t.slots[i]
    free(t.slots)
    t.slots = slots
    t.mask = cap - 1
    return 0


@cython.final
cdef class MergeLearner:
    """The words of a corpus as id arrays, ready to learn merges.

    ``id_to_token``/``token_to_id`` hold the special tokens and the alphabet;
    chars outside them are left out of the words, and marked chars
    (``prefix + char``, ``char + suffix``) are added as first met. Every
    symbol starts as one char wide. Words come in batches (:meth:`add_words`),
    so no table of all words is ever built in Python.

    ``vocab_size`` bounds the ids the run can make; when they all fit in 16
    bits, symbols take 2 bytes instead of 4.

    >>> tokens, ids = ["a", "b"], {"a": 0, "b": 1}
    >>> learner = MergeLearner(tokens, ids, vocab_size=3)
    >>> learner.add_words((["ab", "b"], [3, 1]))
    >>> learner.learn(3), tokens
    ([(0, 1, 2)], ['a', 'b', 'ab'])
    """

    def __cinit__(self):
        self.step_gen = 1
        self.seq = SEQ_START

    def __init__(self, list id_to_token, dict token_to_id, prefix=None, suffix=None, max_token_length=None,
                 bint first_seen=False, vocab_size=None):
        cdef size_t bound = len(id_to_token)
        self.id_to_token = id_to_token
        self.token_to_id = token_to_id
        self.prefix = prefix
        self.suffix = suffix
        self.max_width = INT64_MAX if max_token_length is None else max_token_length
        self.first_seen = first_seen
        self.cold_limit = -1 if first_seen else COLD_MAX
        self.cold.resize(COLD_MAX + 1)
        self.has_widths = first_seen or max_token_length is not None
        if prefix is not None or suffix is not None:
            bound *= 4   # each char may also appear as prefix+c, c+suffix and prefix+c+suffix
        self.narrow = vocab_size is not None and max(<size_t>vocab_size, bound) < 0xFFFF
        self.vocab_bound = vocab_size if vocab_size is not None else -1
        self.hole = 0xFFFF if self.narrow else 0xFFFFFFFF
        self.memo_bmp.resize(4 << 16, -2)
        buf_reserve(&self.starts, 1, sizeof(uint32_t))
        (<uint32_t*>self.starts.data)[0] = 0
        self.starts.n = 1

    def __dealloc__(self):
        cdef size_t i
        for i in range(self.tables.size()):
            free(self.tables[i].slots)
        buf_free(&self.syms)
        buf_free(&self.widths)
        buf_free(&self.starts)
        buf_free(&self.word_counts)
        buf_free(&self.heap)
        for i in range(self.cold.size()):
            buf_free(&self.cold[i])
        buf_free(&self.step_map)
        buf_free(&self.arena)
        buf_free(&self.lists)

    # -- words ----------------------------------------------------------------------
    cdef uint32_t sym(self, size_t i) noexcept:
        if self.narrow:
            return (<uint16_t*>self.syms.data)[i]
        return (<uint32_t*>self.syms.data)[i]

    cdef void set_sym(self, size_t i, uint32_t v) noexcept:
        if self.narrow:
            (<uint16_t*>self.syms.data)[i] = <uint16_t>v
        else:
            (<uint32_t*>self.syms.data)[i] = v

    cdef int32_t width(self, size_t i) noexcept:
        return (<int32_t*>self.widths.data)[i]

    cdef void move_sym(self, size_t to, size_t frm, uint32_t x) noexcept:
        """Symbol ``x`` (the one at ``frm``) written at ``to``, with its width: closing a hole."""
        self.set_sym(to, x)
        if self.has_widths:
            (<int32_t*>self.widths.data)[to] = self.width(frm)

    cdef size_t word_start(self, size_t w) noexcept:
        return (<uint32_t*>self.starts.data)[w]

    cdef int64_t word_count(self, size_t w) noexcept:
        cdef uint8_t c = (<uint8_t*>self.word_counts.data)[w]
        if c != BIG_COUNT:
            return c
        return <int64_t>self.big_counts[<uint32_t>w]

    def add_words(self, batch):
        """Add a batch of words: ``(blob, offsets, counts)`` (UTF-8; word i is
        ``blob[offsets[i]:offsets[i + 1]]``) or ``(words, counts)`` (a list of str)."""
        if self.learned:
            raise RuntimeError("add_words() after learn()")
        if len(batch) == 3:
            self._add_utf8(batch[0], batch[1], batch[2])
        else:
            self._add_strs(batch[0], batch[1])

    cdef int _add_utf8(self, const uint8_t[::1] blob, const int64_t[::1] offsets,
                       const uint64_t[::1] counts) except -1:
        cdef Py_ssize_t k, n = counts.shape[0]
        cdef int64_t pos, end
        cdef uint32_t cp
        _check_batch(blob, offsets, n)
        for k in range(n):
            pos = offsets[k]
            end = offsets[k + 1]
            self.cps.clear()
            while pos < end:
                pos = utf8_next(blob, pos, end, &cp)
                if pos < 0:
                    raise ValueError(f"word {k} is cut inside a UTF-8 character")
                self.cps.push_back(cp)
            self._add_word(counts[k])
        return 0

    cdef int _add_strs(self, list words, counts) except -1:
        cdef str word
        cdef Py_UCS4 ch
        for word, count in zip(words, counts):
            self.cps.clear()
            for ch in word:
                self.cps.push_back(ch)
            self._add_word(count)
        return 0

    cdef int _add_word(self, uint64_t count) except -1:
        """The word in ``cps`` as ids, as Hugging Face's ``tokenize_words`` makes them.

        A char is kept if it is a token (alphabet or special token); it is
        looked up as ``prefix + char`` unless first and ``char + suffix`` if
        last; marked chars new to the vocabulary are added as first met.
        """
        cdef size_t i, n = self.cps.size()
        cdef bint has_prefix = self.prefix is not None
        cdef bint has_suffix = self.suffix is not None
        cdef int64_t tid
        cdef uint32_t marks
        cdef size_t at
        if self.n_words >= 0x7FFFFFFF:
            raise OverflowError("BPE training takes at most 2**31 - 1 distinct words; prune the counts")
        buf_reserve(&self.syms, self.syms.n + n, 2 if self.narrow else 4)
        if self.has_widths:
            buf_reserve(&self.widths, self.syms.n + n, sizeof(int32_t))
        for i in range(n):
            tid = self._char_id(self.cps[i], 0)
            if tid >= 0 and (has_prefix or has_suffix):
                marks = (1 if has_prefix and i > 0 else 0) | (2 if has_suffix and i == n - 1 else 0)
                if marks:
                    tid = self._char_id(self.cps[i], marks)
            if tid < 0:
                continue
            if <uint64_t>tid >= self.hole:
                raise OverflowError(f"token id {tid} does not fit the symbol array")
            at = self.syms.n
            self.set_sym(at, <uint32_t>tid)
            if self.has_widths:
                (<int32_t*>self.widths.data)[at] = 1
            self.syms.n += 1
        self.widths.n = self.syms.n if self.has_widths else 0
        if self.syms.n > 0xFFFFFFFF:
            raise OverflowError("BPE training takes at most 2**32 - 1 chars in distinct words; prune the counts")
        buf_reserve(&self.starts, self.starts.n + 1, sizeof(uint32_t))
        (<uint32_t*>self.starts.data)[self.starts.n] = <uint32_t>self.syms.n
        self.starts.n += 1
        buf_reserve(&self.word_counts, self.word_counts.n + 1, 1)
        if count < BIG_COUNT:
            (<uint8_t*>self.word_counts.data)[self.word_counts.n] = <uint8_t>count
        else:
            (<uint8_t*>self.word_counts.data)[self.word_counts.n] = BIG_COUNT
            self.big_counts[<uint32_t>self.n_words] = count
        self.word_counts.n += 1
        self.n_words += 1
        return 0

    cdef int64_t _char_id(self, uint32_t cp, uint32_t marks) except -3:
        """The id of char ``cp`` with ``marks`` (1: prefix, 2: suffix), -1 if not a token."""
        cdef uint64_t key = ((<uint64_t>cp) << 2) | marks
        cdef int64_t tid
        cdef unordered_map[uint64_t, int64_t].iterator hit
        if cp < 0x10000:
            tid = self.memo_bmp[key]
            if tid != -2:
                return tid
        else:
            hit = self.memo_astral.find(key)
            if hit != self.memo_astral.end():
                return deref(hit).second
        ch = chr(cp)
        if marks == 0:
            tid = self.token_to_id.get(ch, -1)
        else:
            token = (self.prefix + ch if marks & 1 else ch) + (self.suffix if marks & 2 else "")
            tid = _add_token(token, self.id_to_token, self.token_to_id)
        if cp < 0x10000:
            self.memo_bmp[key] = <int32_t>tid
        else:
            self.memo_astral[key] = tid
        return tid

    def word_ids(self, Py_ssize_t w):
        """The current ids of word ``w`` (for tests and inspection)."""
        cdef size_t i
        if w < 0 or <size_t>w >= self.n_words:
            raise IndexError(f"word {w} of {self.n_words}")
        out = []
        for i in range(self.word_start(w), self.word_start(w + 1)):
            if self.sym(i) == self.hole:
                break
            out.append(self.sym(i))
        return out

    def memory(self):
        """Bytes held, by part: ``{"words", "pairs", "heap", "lists", "steps"}`` (capacities).

        >>> sorted(MergeLearner(["a"], {"a": 0}).memory())
        ['heap', 'lists', 'pairs', 'steps', 'words']
        """
        cdef size_t pairs = self.tables.capacity() * sizeof(PairTable), steps = 0, i
        for i in range(self.tables.size()):
            if self.tables[i].slots != NULL:
                pairs += (self.tables[i].mask + 1) * sizeof(PairSlot)
        for i in range(self.step_bytes.size()):
            steps += self.step_bytes[i].capacity()
        steps += self.step_map.cap * sizeof(StepSlot)
        return {
            "words": (self.syms.cap * (2 if self.narrow else 4) + self.widths.cap * sizeof(int32_t)
                      + self.starts.cap * sizeof(uint32_t) + self.word_counts.cap + self.big_counts.size() * 32),
            "pairs": pairs,
            "heap": self.heap.cap * sizeof(Entry) + sum([self.cold[i].cap * sizeof(Cold)
                                                         for i in range(self.cold.size())]),
            "lists": self.arena.cap + self.lists.cap * sizeof(ListRef) + self.free_lists.capacity() * 4,
            "steps": steps,
        }

    # -- pair counts ------------------------------------------------------------------
    cdef int pair_add(self, uint32_t a, uint32_t b, int64_t delta) except -1:
        cdef PairTable* t = &self.tables[a]
        cdef uint32_t pos
        cdef int64_t value
        if t.slots == NULL or (t.used + 1) * 4 > (t.mask + 1) * 3:
            if t.slots != NULL:
                self.freed += (t.mask + 1) * sizeof(PairSlot)
            table_grow(t)
        pos = slot_of(b, t.mask)
        while True:
            if t.slots[pos].right == b:
                break
            if t.slots[pos].right == EMPTY_SLOT:
                t.slots[pos].right = b
                t.slots[pos].count = 0
                t.used += 1
                break
            pos = (pos + 1) & t.mask
        if t.slots[pos].count == BIG_PAIR:
            self.big_pairs[pair_key(a, b)] += delta
            return 0
        value = t.slots[pos].count + delta
        if BIG_PAIR < value <= INT32_MAX:
            t.slots[pos].count = <int32_t>value
        else:
            t.slots[pos].count = BIG_PAIR
            self.big_pairs[pair_key(a, b)] = value
        return 0

    cdef int64_t pair_get(self, uint32_t a, uint32_t b) noexcept:
        cdef PairTable* t = &self.tables[a]
        cdef uint32_t pos
        if t.slots == NULL:
            return 0
        pos = slot_of(b, t.mask)
        while True:
            if t.slots[pos].right == b:
                if t.slots[pos].count == BIG_PAIR:
                    return self.big_pairs[pair_key(a, b)]
                return t.slots[pos].count
            if t.slots[pos].right == EMPTY_SLOT:
                return 0
            pos = (pos + 1) & t.mask

    cdef int _cover_ids(self, size_t n) except -1:
        """Pair tables for every left id below ``n``."""
        cdef PairTable empty
        empty.slots = NULL
        empty.mask = 0
        empty.used = 0
        if self.tables.size() < n:
            self.tables.resize(n, empty)
        return 0

    # -- the current step's gains ---------------------------------------------------------
    cdef uint32_t _step_index(self, uint64_t pair, bint* fresh) except? 0xFFFFFFFF:
        """The step index of ``pair``, added (``fresh``) if it gained nothing yet this step."""
        cdef StepSlot* slots
        cdef size_t mask, pos
        cdef uint32_t index
        if (self.step_pairs.size() + 1) * 2 > self.step_map.n:
            self._grow_step_map()
        slots = <StepSlot*>self.step_map.data
        mask = self.step_map.n - 1
        pos = mix64(pair) & mask
        while True:
            if slots[pos].gen != self.step_gen:
                index = <uint32_t>self.step_pairs.size()
                slots[pos].pair = pair
                slots[pos].gen = self.step_gen
                slots[pos].index = index
                self.step_pairs.push_back(pair)
                self.step_last.push_back(NONE32)
                self.step_nwords.push_back(0)
                if self.step_bytes.size() <= index:
                    self.step_bytes.push_back(vector[uint8_t]())
                else:
                    self.step_bytes[index].clear()
                fresh[0] = True
                return index
            if slots[pos].pair == pair:
                fresh[0] = False
                return slots[pos].index
            pos = (pos + 1) & mask

    cdef int _grow_step_map(self) except -1:
        cdef size_t size = 1024 if self.step_map.n == 0 else self.step_map.n * 2
        cdef StepSlot* slots = <StepSlot*>calloc(size, sizeof(StepSlot))
        cdef size_t i, pos
        if slots == NULL:
            raise MemoryError("BPE training ran out of memory")
        for i in range(self.step_pairs.size()):
            pos = mix64(self.step_pairs[i]) & (size - 1)
            while slots[pos].gen == self.step_gen:
                pos = (pos + 1) & (size - 1)
            slots[pos].pair = self.step_pairs[i]
            slots[pos].gen = self.step_gen
            slots[pos].index = <uint32_t>i
        free(self.step_map.data)
        self.step_map.data = <char*>slots
        self.step_map.n = size
        self.step_map.cap = size
        return 0

    cdef void _end_step(self) noexcept:
        self.step_pairs.clear()
        self.step_last.clear()
        self.step_nwords.clear()
        self.step_gen += 1
        if self.step_gen == 0:   # wrapped: forget every stamp
            memset(self.step_map.data, 0, self.step_map.n * sizeof(StepSlot))
            self.step_gen = 1

    cdef int _note_gain(self, uint64_t pair, uint32_t w, uint64_t occ) except -1:
        """Remember that ``pair`` gained an occurrence in word ``w`` this step."""
        cdef bint fresh
        cdef uint32_t i = self._step_index(pair, &fresh)
        cdef unordered_map[uint64_t, uint64_t].iterator bound_it
        if self.first_seen:
            bound_it = self.first_bound.find(pair)
            if bound_it == self.first_bound.end():
                self.first_bound[pair] = occ
            elif occ < deref(bound_it).second:
                deref(bound_it).second = occ
            return 0
        if fresh:
            push_varint(self.step_bytes[i], w)
            self.step_last[i] = w
            self.step_nwords[i] = 1
        elif self.step_last[i] != w:
            push_varint(self.step_bytes[i], w - self.step_last[i])
            self.step_last[i] = w
            self.step_nwords[i] += 1
        return 0

    cdef uint32_t _next_seq(self) except? 0xFFFFFFFF:
        if self.seq == 0xFFFFFFFF:
            self._renumber()
        self.seq += 1
        return self.seq - 1

    cdef int _renumber(self) except -1:
        """Push sequences ran out: renumber the entries 0.. keeping their order."""
        cdef Entry* h = <Entry*>self.heap.data
        cdef vector[cpair[uint32_t, uint32_t]] order
        cdef size_t i
        for i in range(self.heap.n):
            order.push_back(cpair[uint32_t, uint32_t](h[i].x, <uint32_t>i))
        sort(order.begin(), order.end())
        for i in range(order.size()):
            h[order[i].second].x = <uint32_t>i
        self.seq = <uint32_t>order.size()
        return 0

    cdef int _push_step_pairs(self) except -1:
        """Push an entry for every pair that gained occurrences in this step."""
        cdef Entry entry
        cdef int64_t count
        cdef uint64_t pair
        cdef size_t i
        cdef vector[uint8_t] empty
        for i in range(self.step_pairs.size()):
            pair = self.step_pairs[i]
            count = self.pair_get(<uint32_t>(pair >> 32), <uint32_t>(pair & 0xFFFFFFFFULL))
            if count > 0:
                entry.count = <uint64_t>count
                if self.first_seen:
                    entry.key2 = self.first_bound[pair]
                    entry.x = <uint32_t>(pair >> 32)
                    entry.y = <uint32_t>(pair & 0xFFFFFFFFULL)
                    heap_push(&self.heap, entry)
                elif self.step_nwords[i] == 1:
                    self._push_hf(entry.count, pair, LIST_INLINE | self.step_last[i])
                else:
                    self._push_hf(entry.count, pair,
                                  self._store_list(self.step_bytes[i].data(), self.step_bytes[i].size()))
            if not self.first_seen and self.step_bytes[i].capacity() > STEP_BYTES_KEEP:
                self.step_bytes[i].swap(empty)
                empty.clear()
                empty.shrink_to_fit()
        self._end_step()
        if self.garbage > COMPACT_MIN and self.garbage * 4 > self.arena.n:
            self._compact_arena()
        if self.holes > COMPACT_MIN and self.holes * 4 > self.syms.n:
            self._compact_words()
        if self.freed > TRIM_AFTER:
            # Grown pair tables leave their old blocks in the C heap; glibc
            # would keep them resident (~10% of the peak) until reused.
            pw_trim_heap()
            self.freed = 0
        return 0

    cdef int _push_hf(self, uint64_t count, uint64_t pair, uint32_t y) except -1:
        """Push a huggingface-mode entry (to ``cold`` if its count is small)."""
        cdef Entry entry
        cdef Buf* bucket
        cdef Cold* rec
        if self.cold_limit >= 0 and count <= <uint64_t>self.cold_limit:
            bucket = &self.cold[count]
            buf_reserve(bucket, bucket.n + 1, sizeof(Cold))
            rec = &(<Cold*>bucket.data)[bucket.n]
            rec.pair = pair
            rec.y = y
            bucket.n += 1
            return 0
        entry.count = count
        entry.key2 = pair
        entry.x = self._next_seq()
        entry.y = y
        heap_push(&self.heap, entry)
        return 0

    cdef int _inject_cold(self) except -1:
        """The heap ran empty: move the waiting entries in (in push order); 0 if there were none."""
        cdef Entry entry
        cdef Cold* recs
        cdef int64_t c
        cdef size_t i
        cdef int moved = 0
        if self.cold_limit < 0:
            return 0
        self.cold_limit = -1
        for c in range(COLD_MAX + 1):
            recs = <Cold*>self.cold[c].data
            for i in range(self.cold[c].n):
                entry.count = <uint64_t>c
                entry.key2 = recs[i].pair
                entry.x = self._next_seq()
                entry.y = recs[i].y
                heap_push(&self.heap, entry)
                moved = 1
            buf_free(&self.cold[c])
        return moved

    # -- word lists (huggingface mode) ------------------------------------------------------
    cdef uint32_t _store_list(self, const uint8_t* data, size_t nbytes) except? 0xFFFFFFFF:
        cdef uint32_t slot
        cdef ListRef* ref
        buf_reserve(&self.arena, self.arena.n + nbytes, 1)
        memcpy(self.arena.data + self.arena.n, data, nbytes)
        if self.free_lists.size():
            slot = self.free_lists.back()
            self.free_lists.pop_back()
        else:
            buf_reserve(&self.lists, self.lists.n + 1, sizeof(ListRef))
            slot = <uint32_t>self.lists.n
            self.lists.n += 1
            if slot >= LIST_INLINE:
                raise OverflowError("too many word lists")
        ref = &(<ListRef*>self.lists.data)[slot]
        ref.offset = self.arena.n
        ref.nbytes = <uint32_t>nbytes
        self.arena.n += nbytes
        return slot

    cdef void _release_list(self, uint32_t y) noexcept:
        cdef ListRef* ref
        if y & LIST_INLINE:
            return
        ref = &(<ListRef*>self.lists.data)[y]
        self.garbage += ref.nbytes
        ref.nbytes = FREE_LIST
        self.free_lists.push_back(y)

    cdef int _compact_arena(self) except -1:
        """Move the live lists to the front of the arena and give the rest back."""
        cdef ListRef* refs = <ListRef*>self.lists.data
        cdef vector[cpair[uint64_t, uint32_t]] live
        cdef size_t i, pos = 0
        cdef ListRef* ref
        cdef uint64_t offset
        for i in range(self.lists.n):
            if refs[i].nbytes != FREE_LIST:
                offset = refs[i].offset
                live.push_back(cpair[uint64_t, uint32_t](offset, <uint32_t>i))
        sort(live.begin(), live.end())
        for i in range(live.size()):
            ref = &refs[live[i].second]
            if ref.offset != pos:
                memmove(self.arena.data + pos, self.arena.data + ref.offset, ref.nbytes)
                ref.offset = pos
            pos += ref.nbytes
        self.arena.n = pos
        self.garbage = 0
        buf_fit(&self.arena, 1)
        return 0

    cdef int _compact_words(self) except -1:
        """Close the holes merges left in the words, and give the space back."""
        cdef uint32_t* starts = <uint32_t*>self.starts.data
        cdef size_t w, r, e, o = 0
        cdef uint32_t x
        for w in range(self.n_words):
            r = starts[w]
            e = starts[w + 1]
            starts[w] = <uint32_t>o
            while r < e:
                x = self.sym(r)
                if x == self.hole:
                    break
                if o != r:
                    self.move_sym(o, r, x)
                o += 1
                r += 1
        starts[self.n_words] = <uint32_t>o
        self.syms.n = o
        self.holes = 0
        buf_fit(&self.syms, 2 if self.narrow else 4)
        if self.has_widths:
            self.widths.n = o
            buf_fit(&self.widths, sizeof(int32_t))
        return 0

    # -- counting the first pairs ----------------------------------------------------------
    cdef int _count_initial_pairs_hf(self) except -1:
        """Every adjacent pair's count and word list, in two passes (sizes, then lists).

        Hugging Face counts every initial pair, whatever max_token_length says.
        """
        cdef size_t w, r, s, e, k, total = 0
        cdef uint32_t a, b, i, last
        cdef uint64_t pair
        cdef int64_t n
        cdef bint fresh
        cdef vector[uint64_t] size, cursor
        cdef uint8_t* p
        for w in range(self.n_words):
            s = self.word_start(w)
            e = self.word_start(w + 1)
            n = self.word_count(w)
            for r in range(s, e - 1 if e > s else s):
                a = self.sym(r)
                b = self.sym(r + 1)
                self.pair_add(a, b, n)
                pair = pair_key(a, b)
                i = self._step_index(pair, &fresh)
                if fresh:
                    size.push_back(varint_size(<uint32_t>w))
                    self.step_last[i] = <uint32_t>w
                    self.step_nwords[i] = 1
                elif self.step_last[i] != w:
                    size[i] += varint_size(<uint32_t>w - self.step_last[i])
                    self.step_last[i] = <uint32_t>w
                    self.step_nwords[i] += 1
        # One arena region per list of two words or more (of a pair that will get an entry).
        cursor.resize(self.step_pairs.size(), UINT64_MAX)
        for k in range(self.step_pairs.size()):
            pair = self.step_pairs[k]
            if self.step_nwords[k] > 1 and self.pair_get(<uint32_t>(pair >> 32), <uint32_t>(pair & 0xFFFFFFFFULL)) > 0:
                cursor[k] = total
                total += size[k]
        buf_reserve(&self.arena, total, 1)
        self.arena.n = total
        for k in range(self.step_pairs.size()):
            self.step_last[k] = NONE32 if cursor[k] != UINT64_MAX else self.step_last[k]
        for w in range(self.n_words):
            s = self.word_start(w)
            e = self.word_start(w + 1)
            for r in range(s, e - 1 if e > s else s):
                i = self._step_index(pair_key(self.sym(r), self.sym(r + 1)), &fresh)
                if cursor[i] == UINT64_MAX:
                    continue
                last = self.step_last[i]
                if last == w:
                    continue
                p = <uint8_t*>self.arena.data + cursor[i]
                p = put_varint(p, <uint32_t>w if last == NONE32 else <uint32_t>w - last)
                cursor[i] = p - <uint8_t*>self.arena.data
                self.step_last[i] = <uint32_t>w
        # Entries, in the order the pairs were first met.
        total = 0
        for k in range(self.step_pairs.size()):
            pair = self.step_pairs[k]
            n = self.pair_get(<uint32_t>(pair >> 32), <uint32_t>(pair & 0xFFFFFFFFULL))
            if n <= 0:
                continue
            if self.step_nwords[k] == 1:
                self._push_hf(<uint64_t>n, pair, LIST_INLINE | self.step_last[k])
            else:
                self._push_hf(<uint64_t>n, pair, self._adopt_list(total, size[k]))
                total += size[k]
        self._end_step()
        return 0

    cdef uint32_t _adopt_list(self, size_t offset, size_t nbytes) except? 0xFFFFFFFF:
        """A list slot for bytes already in the arena."""
        cdef ListRef* ref
        buf_reserve(&self.lists, self.lists.n + 1, sizeof(ListRef))
        ref = &(<ListRef*>self.lists.data)[self.lists.n]
        ref.offset = offset
        ref.nbytes = <uint32_t>nbytes
        self.lists.n += 1
        return <uint32_t>(self.lists.n - 1)

    cdef int _count_initial_pairs_exact(self) except -1:
        cdef size_t w, r, s, e
        cdef uint64_t pair, occ
        cdef int64_t start
        cdef vector[int32_t]* seen_in
        for w in range(self.n_words):
            s = self.word_start(w)
            e = self.word_start(w + 1)
            start = 0
            for r in range(s, e - 1 if e > s else s):
                pair = pair_key(self.sym(r), self.sym(r + 1))
                occ = ((<uint64_t>w) << 32) | <uint64_t>start
                start += self.width(r)
                seen_in = &self.pair_words[pair]
                if seen_in.empty() or seen_in.back() != <int32_t>w:
                    seen_in.push_back(<int32_t>w)
                if self.width(r) + self.width(r + 1) > self.max_width:
                    continue
                self.pair_add(self.sym(r), self.sym(r + 1), self.word_count(w))
                self._note_gain(pair, <uint32_t>w, occ)
        self._push_step_pairs()
        return 0

    # -- merging one word --------------------------------------------------------------------
    cdef int _merge_word_hf(self, uint32_t w, uint32_t a, uint32_t b, uint32_t new_id) except -1:
        """Hugging Face's ``Word::merge``: merge left to right, report neighbour changes.

        Symbols are read at ``r`` and written back at ``o <= r``; the left
        neighbour is the last one written, the right one the next unread.
        """
        cdef size_t s = self.word_start(w)
        cdef size_t e = self.word_start(w + 1)
        cdef size_t r = s, o = s
        cdef int64_t n = self.word_count(w)
        cdef uint32_t x, p, q
        cdef int32_t merged_width = 0
        while r < e:
            x = self.sym(r)
            if x == self.hole:
                break
            if x == a and r + 1 < e and self.sym(r + 1) == b:
                if self.has_widths:
                    merged_width = self.width(r) + self.width(r + 1)
                if o > s:
                    p = self.sym(o - 1)
                    self.pair_add(p, a, -n)
                    if not self.has_widths or self.width(o - 1) + merged_width < self.max_width:
                        self.pair_add(p, new_id, n)
                        self._note_gain(pair_key(p, new_id), w, 0)
                self.set_sym(o, new_id)
                if self.has_widths:
                    (<int32_t*>self.widths.data)[o] = merged_width
                o += 1
                r += 2
                if r < e and self.sym(r) != self.hole:
                    q = self.sym(r)
                    self.pair_add(b, q, -n)
                    if not self.has_widths or self.width(r) + merged_width < self.max_width:
                        self.pair_add(new_id, q, n)
                        self._note_gain(pair_key(new_id, q), w, 0)
            else:
                if o != r:
                    self.move_sym(o, r, x)
                o += 1
                r += 1
        self.holes += r - o
        while o < r:
            self.set_sym(o, self.hole)
            o += 1
        return 0

    cdef int _merge_word_exact(self, uint32_t w, uint32_t a, uint32_t b, uint32_t new_id) except -1:
        """Merge left to right, keeping every pair count exact."""
        cdef size_t s = self.word_start(w)
        cdef size_t e = self.word_start(w + 1)
        cdef size_t r = s, o = s
        cdef int64_t n = self.word_count(w)
        cdef int64_t limit = self.max_width
        cdef uint64_t word_key = (<uint64_t>w) << 32
        cdef uint64_t pair
        cdef int64_t start = 0
        cdef uint32_t x, p, nxt
        cdef int32_t xw, yw, pw, nw, mw
        cdef vector[int32_t]* seen_in
        while r < e:
            x = self.sym(r)
            if x == self.hole:
                break
            if x == a and r + 1 < e and self.sym(r + 1) == b:
                xw = self.width(r)
                yw = self.width(r + 1)
                mw = xw + yw
                if o > s:
                    p = self.sym(o - 1)
                    pw = self.width(o - 1)
                    if pw + xw <= limit:
                        self.pair_add(p, a, -n)
                    pair = pair_key(p, new_id)
                    seen_in = &self.pair_words[pair]
                    if seen_in.empty() or seen_in.back() != <int32_t>w:
                        seen_in.push_back(<int32_t>w)
                    if pw + mw <= limit:
                        self.pair_add(p, new_id, n)
                        self._note_gain(pair, w, word_key | <uint64_t>(start - pw))
                if mw <= limit:
                    self.pair_add(a, b, -n)
                if r + 2 < e and self.sym(r + 2) != self.hole:
                    nxt = self.sym(r + 2)
                    nw = self.width(r + 2)
                    if yw + nw <= limit:
                        self.pair_add(b, nxt, -n)
                    pair = pair_key(new_id, nxt)
                    seen_in = &self.pair_words[pair]
                    if seen_in.empty() or seen_in.back() != <int32_t>w:
                        seen_in.push_back(<int32_t>w)
                    if mw + nw <= limit:
                        self.pair_add(new_id, nxt, n)
                        self._note_gain(pair, w, word_key | <uint64_t>start)
                self.set_sym(o, new_id)
                (<int32_t*>self.widths.data)[o] = mw
                r += 2
            else:
                if o != r:
                    self.move_sym(o, r, x)
                r += 1
            start += self.width(o)
            o += 1
        self.holes += r - o
        while o < r:
            self.set_sym(o, self.hole)
            o += 1
        return 0

    cdef uint64_t _first_occurrence(self, uint64_t pair) noexcept:
        """The first countable occurrence of ``pair`` (word << 32 | char); prunes its word list."""
        cdef vector[int32_t]* ws = &self.pair_words[pair]
        cdef uint32_t a = <uint32_t>(pair >> 32)
        cdef uint32_t b = <uint32_t>(pair & 0xFFFFFFFFULL)
        cdef uint64_t found = NO_OCCURRENCE
        cdef size_t k, i, s, e, kept = 0
        cdef int32_t w
        cdef int64_t start
        cdef bint present
        if not is_sorted(ws.begin(), ws.end()):
            sort(ws.begin(), ws.end())
        ws.resize(unique(ws.begin(), ws.end()) - ws.begin())
        for k in range(ws.size()):
            w = ws[0][k]
            if found != NO_OCCURRENCE:
                ws[0][kept] = w
                kept += 1
                continue
            s = self.word_start(w)
            e = self.word_start(w + 1)
            present = False
            start = 0
            i = s
            while i + 1 < e and self.sym(i + 1) != self.hole:
                if self.sym(i) == a and self.sym(i + 1) == b:
                    present = True
                    if self.width(i) + self.width(i + 1) <= self.max_width:
                        found = ((<uint64_t>w) << 32) | <uint64_t>start
                        break
                start += self.width(i)
                i += 1
            if present:
                ws[0][kept] = w
                kept += 1
        ws.resize(kept)
        return found

    # -- the loop ------------------------------------------------------------------------------
    def learn(self, Py_ssize_t vocab_size, min_frequency=0, progress=None):
        """Merge until ``len(id_to_token) >= vocab_size``; return ``[(left, right, new_id)]``.

        New tokens are appended to ``id_to_token`` and ``token_to_id``;
        a merge that makes an existing token reuses its id. ``progress``,
        if given, is called with the number of merges so far every 256
        merges and at the end. Runs once.
        """
        cdef uint64_t min_count = max(min_frequency, 1)
        cdef Entry top
        cdef int64_t current
        cdef uint64_t occ, pair
        cdef uint32_t a, b, new_id
        cdef vector[int32_t] words
        cdef size_t k
        cdef const uint8_t* p
        cdef const uint8_t* end
        cdef uint32_t w
        cdef ListRef ref
        cdef list id_to_token = self.id_to_token
        cdef list merges = []
        if self.learned:
            raise RuntimeError("learn() runs once per MergeLearner")
        if self.vocab_bound >= 0 and vocab_size > self.vocab_bound:
            raise ValueError(f"learn(vocab_size={vocab_size}) asks for more than the vocab_size="
                             f"{self.vocab_bound} this learner was made for")
        self.learned = True
        self._forget_reading()
        self._cover_ids(len(id_to_token))
        if self.first_seen:
            self._count_initial_pairs_exact()
        else:
            self._count_initial_pairs_hf()
        while len(id_to_token) < vocab_size:
            if self.heap.n == 0 and not self._inject_cold():
                break
            top = heap_pop(&self.heap)
            if self.first_seen:
                a = top.x
                b = top.y
                pair = pair_key(a, b)
                current = self.pair_get(a, b)
                if current <= 0:
                    continue  # the pair is gone
                if <uint64_t>current != top.count:
                    top.count = <uint64_t>current
                    top.key2 = self.first_bound[pair]
                    heap_push(&self.heap, top)
                    continue
                if top.count < min_count:
                    break
                occ = self._first_occurrence(pair)
                if occ != top.key2:
                    self.first_bound[pair] = occ
                    top.key2 = occ
                    heap_push(&self.heap, top)
                    continue
                words.swap(self.pair_words[pair])
                new_id = self._new_token(a, b)
                merges.append((a, b, new_id))
                for k in range(words.size()):
                    self._merge_word_exact(<uint32_t>words[k], a, b, new_id)
                words.clear()
            else:
                a = <uint32_t>(top.key2 >> 32)
                b = <uint32_t>(top.key2 & 0xFFFFFFFFULL)
                current = self.pair_get(a, b)
                # As Hugging Face: compare as unsigned, so a negative count
                # (possible with max_token_length) looks huge.
                if top.count != <uint64_t>current:
                    self._push_hf(<uint64_t>current, top.key2, top.y)
                    continue
                if top.count < min_count:
                    break
                new_id = self._new_token(a, b)
                merges.append((a, b, new_id))
                if top.y & LIST_INLINE:
                    self._merge_word_hf(top.y & ~LIST_INLINE, a, b, new_id)
                else:
                    ref = (<ListRef*>self.lists.data)[top.y]
                    p = <const uint8_t*>self.arena.data + ref.offset
                    end = p + ref.nbytes
                    w = get_varint(&p)
                    self._merge_word_hf(w, a, b, new_id)
                    while p < end:
                        w += get_varint(&p)
                        self._merge_word_hf(w, a, b, new_id)
                    self._release_list(top.y)
            self._push_step_pairs()
            if progress is not None and len(merges) % 256 == 0:
                progress(len(merges))
        if progress is not None:
            progress(len(merges))
        return merges

    cdef uint32_t _new_token(self, uint32_t a, uint32_t b) except? 0xFFFFFFFF:
        cdef int64_t new_id = _token_id_for(self.id_to_token, self.token_to_id, a, b, self.prefix)
        if new_id >= self.hole:
            raise OverflowError(f"token id {new_id} does not fit the symbol array")
        self._cover_ids(<size_t>new_id + 1)
        return <uint32_t>new_id

    cdef void _forget_reading(self) noexcept:
        """Free what only reading words needed, and unused capacity."""
        cdef vector[int32_t] no_memo
        cdef unordered_map[uint64_t, int64_t] no_astral
        cdef vector[uint32_t] no_cps
        self.memo_bmp.swap(no_memo)
        self.memo_astral.swap(no_astral)
        self.cps.swap(no_cps)
        buf_fit(&self.syms, 2 if self.narrow else 4)
        buf_fit(&self.widths, sizeof(int32_t))
        buf_fit(&self.starts, sizeof(uint32_t))
        buf_fit(&self.word_counts, 1)
        pw_trim_heap()


cdef int64_t _add_token(str token, list id_to_token, dict token_to_id) except -1:
    """The id of ``token``, appended to the vocabulary if new."""
    found = token_to_id.get(token)
    if found is not None:
        return found
    new_id = len(id_to_token)
    id_to_token.append(token)
    token_to_id[token] = new_id
    return new_id


def _set_compact_floor(size_t floor):
    """Set the garbage floor below which nothing is compacted; return the old one (tests use 0)."""
    global COMPACT_MIN
    old = COMPACT_MIN
    COMPACT_MIN = floor
    return old


def _set_seq_start(uint32_t start):
    """Set the first push sequence of new learners; return the old one (tests force a renumbering)."""
    global SEQ_START
    old = SEQ_START
    SEQ_START = start
    return old


def release_free_memory():
    """Hand memory freed by this process back to the system, where the C library keeps it.

    glibc returns a freed block in the middle of its heap only on
    ``malloc_trim``; without it, RSS stays at its peak after big tables are
    freed or grown. A no-op elsewhere.
    """
    pw_trim_heap()


def char_counts(batches):
    """``[(char, total count)]`` over every word of ``batches`` (see
    :meth:`MergeLearner.add_words`), in first-seen order.

    >>> char_counts([(["aba", "c"], [2, 1])])
    [('a', 4), ('b', 2), ('c', 1)]
    """
    cdef vector[int32_t] bmp
    cdef unordered_map[uint32_t, size_t] astral
    cdef unordered_map[uint32_t, size_t].iterator hit
    cdef vector[uint32_t] chars
    cdef vector[int64_t] totals
    cdef int64_t pos, end, n
    cdef Py_ssize_t k
    cdef const uint8_t[::1] blob
    cdef const int64_t[::1] offsets
    cdef const uint64_t[::1] counts
    cdef uint32_t cp
    cdef Py_UCS4 ch
    cdef str word
    bmp.resize(1 << 16, -1)
    for batch in batches:
        if len(batch) == 2:
            for word, count in zip(batch[0], batch[1]):
                n = count
                for ch in word:
                    _tally(ch, n, bmp, astral, chars, totals)
            continue
        blob, offsets, counts = batch
        _check_batch(blob, offsets, counts.shape[0])
        for k in range(counts.shape[0]):
            n = <int64_t>counts[k]
            pos = offsets[k]
            end = offsets[k + 1]
            while pos < end:
                pos = utf8_next(blob, pos, end, &cp)
                if pos < 0:
                    raise ValueError(f"word {k} is cut inside a UTF-8 character")
                _tally(cp, n, bmp, astral, chars, totals)
    return [(chr(chars[i]), totals[i]) for i in range(chars.size())]


cdef int _check_batch(const uint8_t[::1] blob, const int64_t[::1] offsets, Py_ssize_t n) except -1:
    """Every word of a UTF-8 batch lies inside its bytes."""
    cdef Py_ssize_t k
    if offsets.shape[0] != n + 1:
        raise ValueError("offsets must have one more entry than counts")
    for k in range(n):
        if offsets[k] < 0 or offsets[k + 1] < offsets[k] or offsets[k + 1] > blob.shape[0]:
            raise ValueError(f"word {k} runs outside the bytes")
    return 0


cdef inline void _tally(uint32_t cp, int64_t n, vector[int32_t]& bmp, unordered_map[uint32_t, size_t]& astral,
                        vector[uint32_t]& chars, vector[int64_t]& totals) noexcept:
    cdef unordered_map[uint32_t, size_t].iterator hit
    if cp < 0x10000:
        if bmp[cp] < 0:
            bmp[cp] = <int32_t>chars.size()
            chars.push_back(cp)
            totals.push_back(n)
        else:
            totals[bmp[cp]] += n
        return
    hit = astral.find(cp)
    if hit == astral.end():
        astral[cp] = chars.size()
        chars.push_back(cp)
        totals.push_back(n)
    else:
        totals[deref(hit).second] += n


cdef int64_t _token_id_for(list id_to_token, dict token_to_id, uint32_t a, uint32_t b, prefix) except -1:
    """The id of ``a`` + ``b`` (the right part's continuing prefix removed), added if new."""
    cdef str left = id_to_token[a]
    cdef str right = id_to_token[b]
    if prefix is not None and right.startswith(prefix):
        right = right[len(prefix):]
    return _add_token(left + right, id_to_token, token_to_id)
