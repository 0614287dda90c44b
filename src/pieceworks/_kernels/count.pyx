# cython: language_level=3
# distutils: language = c++
"""Counting pieces: texts in, a compact ``{piece: count}`` hash table out.

The general counting path runs the tokenizer's pre-tokenizer objects on
every text, one Python object per piece. For the pre-tokenizers whose cut
is a scanner in :mod:`pieceworks._kernels.scan` (GPT-2's pattern for
ByteLevel, the class runs of Whitespace / WhitespaceSplit / BertPreTokenizer
/ Punctuation / Digits, the script runs of UnicodeScripts) this kernel cuts
and counts in one pass over the str's code points, without a Python object
per piece:

* each piece is encoded to UTF-8 into a scratch buffer and looked up in an
  open-addressing hash table whose keys live back to back in one arena;
* every entry remembers the piece's count (u64) and a *first-seen key*,
  ``(chunk index << 32) | rank``, the order in which the piece was first met,
  so that tables counted apart (processes, spills, cluster workers) merge
  into exactly the order a single pass would give.

ByteLevel's spelling (bytes → GPT-2's alphabet) is applied once per distinct
piece (:func:`spell_byte_level`), not once per occurrence.

>>> t = PieceTable()
>>> t.count_texts(["a b a"], MODE_CLASS_RUNS, WHITESPACE_SPLIT_ACTIONS, False, 0)
>>> blob, lengths, counts, keys = t.export()
>>> blob, list(memoryview(counts).cast("Q"))
(b'ab', [2, 1])

Performance notes: entries are 40 bytes plus the piece's bytes plus 8 bytes
of slots at the worst load factor (0.5), about 60 bytes for a word, against
~110 for a Python dict of str -> int. Hashing takes 8 bytes at a time.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport uint16_t
from libc.string cimport memcmp, memcpy
from libcpp.algorithm cimport sort
from libcpp.utility cimport pair

from pieceworks._kernels.scan cimport (SpanBuf, code_point, flags_table, scan_class_runs, scan_gpt2, scan_scripts,
                                       scripts_table, spanbuf_free, spanbuf_init)

cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)

# What cuts a text into pieces.
MODE_WHOLE = 0        # the whole text is one piece (no pre-tokenizer; ByteLevel without regex)
MODE_GPT2 = 1         # GPT-2's pattern (ByteLevel)
MODE_CLASS_RUNS = 2   # runs of one char class (Whitespace, BertPreTokenizer, ...)
MODE_SCRIPTS = 3      # runs of one script (UnicodeScripts)

# WhitespaceSplit's action table, for the doctest above (pre_tokenizers.py owns the real ones).
WHITESPACE_SPLIT_ACTIONS = bytes([0 if f & 1 else 2 for f in range(256)])

cdef uint8_t ZERO_BYTE = 0   # a valid pointer for empty pieces


# -- hashing ----------------------------------------------------------------
cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    # splitmix64's finalizer: every input bit reaches every output bit.
    x ^= x >> 30
    x *= 0xBF58476D1CE4E5B9ULL
    x ^= x >> 27
    x *= 0x94D049BB133111EBULL
    x ^= x >> 31
    return x


cdef inline uint64_t hash_bytes(const uint8_t* p, size_t n) noexcept nogil:
    cdef uint64_t h = (<uint64_t>n) * 0x9E3779B97F4A7C15ULL
    cdef uint64_t v
    while n >= 8:
        memcpy(&v, p, 8)
        h = (h ^ mix64(v)) * 0x9FB21C651E98DF25ULL
        p += 8
        n -= 8
    if n:
        v = 0
        memcpy(&v, p, n)
        h = (h ^ mix64(v ^ 0xA5)) * 0x9FB21C651E98DF25ULL
    return mix64(h)


def piece_hash(bytes data not None):
    """The 64-bit hash the table files ``data`` under (spill partitions use it)."""
    return hash_bytes(<const uint8_t*> PyBytes_AS_STRING(data), len(data))


# -- UTF-8 ------------------------------------------------------------------
cdef inline void put_utf8(vector[uint8_t]& out, uint32_t cp) noexcept nogil:
    # Lone surrogates are written as their 3-byte form ("surrogatepass"),
    # so any Python str round-trips.
    if cp < 0x80:
        out.push_back(<uint8_t>cp)
    elif cp < 0x800:
        out.push_back(<uint8_t>(0xC0 | (cp >> 6)))
        out.push_back(<uint8_t>(0x80 | (cp & 0x3F)))
    elif cp < 0x10000:
        out.push_back(<uint8_t>(0xE0 | (cp >> 12)))
        out.push_back(<uint8_t>(0x80 | ((cp >> 6) & 0x3F)))
        out.push_back(<uint8_t>(0x80 | (cp & 0x3F)))
    else:
        out.push_back(<uint8_t>(0xF0 | (cp >> 18)))
        out.push_back(<uint8_t>(0x80 | ((cp >> 12) & 0x3F)))
        out.push_back(<uint8_t>(0x80 | ((cp >> 6) & 0x3F)))
        out.push_back(<uint8_t>(0x80 | (cp & 0x3F)))


# -- the table --------------------------------------------------------------
cdef class PieceTable:
    """A hash table of UTF-8 pieces → (count, first-seen key), filled by the count_* methods."""

    def __cinit__(self):
        self.slots.resize(1024, 0)
        self.mask = 1023
        self.total_count = 0

    def __len__(self):
        return self.entries.size()

    @property
    def total(self):
        """The sum of all counts."""
        return self.total_count

    def nbytes(self):
        """Bytes the table holds (capacities, so what the allocator really gave)."""
        return (self.entries.capacity() * sizeof(Entry) + self.slots.capacity() * sizeof(uint32_t)
                + self.arena.capacity() + self.scratch.capacity())

    def clear(self):
        """Empty the table and give its memory back."""
        cdef vector[Entry] no_entries
        cdef vector[uint32_t] no_slots
        cdef vector[uint8_t] no_bytes
        self.entries.swap(no_entries)
        self.arena.swap(no_bytes)
        self.slots.swap(no_slots)
        self.slots.resize(1024, 0)
        self.mask = 1023
        self.total_count = 0

    cdef Entry* _find(self, const uint8_t* data, uint32_t n, uint64_t h) noexcept nogil:
        cdef uint64_t pos = h & self.mask
        cdef uint32_t slot
        cdef Entry* e
        while True:
            slot = self.slots[pos]
            if slot == 0:
                return NULL
            e = &self.entries[slot - 1]
            if e.hash == h and e.length == n and (n == 0 or memcmp(self.arena.data() + e.offset, data, n) == 0):
                return e
            pos = (pos + 1) & self.mask

    cdef int _grow(self) except -1 nogil:
        cdef size_t size = self.slots.size() * 2
        cdef size_t i
        cdef uint64_t pos
        self.slots.clear()
        self.slots.shrink_to_fit()
        self.slots.resize(size, 0)
        self.mask = size - 1
        for i in range(self.entries.size()):
            pos = self.entries[i].hash & self.mask
            while self.slots[pos] != 0:
                pos = (pos + 1) & self.mask
            self.slots[pos] = <uint32_t>(i + 1)
        return 0

    cdef int _add(self, const uint8_t* data, uint32_t n, uint64_t count, uint64_t key) except -1 nogil:
        """Add ``count`` to the piece; a new piece takes ``key``, an old one keeps the smaller key.

        Returns 1 when the piece was new.
        """
        cdef uint64_t h = hash_bytes(data, n)
        cdef Entry* e = self._find(data, n, h)
        cdef Entry fresh
        cdef uint64_t pos
        self.total_count += count
        if e != NULL:
            e.count += count
            if key < e.key:
                e.key = key
            return 0
        if (self.entries.size() + 1) * 2 > self.slots.size():
            self._grow()
        fresh.hash = h
        fresh.count = count
        fresh.key = key
        fresh.offset = self.arena.size()
        fresh.length = n
        self.arena.insert(self.arena.end(), data, data + n)
        self.entries.push_back(fresh)
        pos = h & self.mask
        while self.slots[pos] != 0:
            pos = (pos + 1) & self.mask
        self.slots[pos] = <uint32_t>self.entries.size()
        return 1

    # -- counting ------------------------------------------------------------
    cdef uint64_t _count_text(self, int kind, const void* data, Py_ssize_t start, Py_ssize_t end, int mode,
                              const uint8_t* actions, bint prefix_space, uint64_t key,
                              SpanBuf* buf, vector[uint32_t]& wide) except? 0xFFFFFFFFFFFFFFFF:
        """Count the pieces of ``data[start:end]``; return the next free key."""
        cdef Py_ssize_t n = end - start, k, i, got
        cdef const void* text = <const char*> data + start * kind
        cdef int text_kind = kind
        if n == 0:
            return key
        if prefix_space and (mode == 0 or mode == 1) and code_point(kind, text, 0) != 32:
            # ByteLevel's add_prefix_space: scan " " + text (the space can change the first cut).
            wide.resize(n + 1)
            wide[0] = 32
            for i in range(n):
                wide[i + 1] = code_point(kind, text, i)
            text = wide.data()
            text_kind = 4
            n += 1
        if mode == 0:
            return key + self._count_piece(text_kind, text, 0, n, key)
        buf.count = 0
        if mode == 1:
            got = scan_gpt2(text_kind, text, n, flags_table(), buf)
        elif mode == 2:
            got = scan_class_runs(text_kind, text, n, flags_table(), actions, buf)
        else:
            got = scan_scripts(text_kind, text, n, scripts_table(), buf)
        if got < 0:
            raise MemoryError()
        for k in range(buf.count):
            key += self._count_piece(text_kind, text, buf.items[k].start, buf.items[k].end, key)
        return key

    cdef int _count_piece(self, int kind, const void* text, Py_ssize_t s, Py_ssize_t e,
                                 uint64_t key) except -1:
        cdef Py_ssize_t i
        if e <= s:
            return 0
        if kind == 1:
            # Latin-1 storage: ASCII bytes are already UTF-8.
            if self._ascii(<const uint8_t*> text + s, e - s):
                return self._add(<const uint8_t*> text + s, <uint32_t>(e - s), 1, key)
        self.scratch.clear()
        for i in range(s, e):
            put_utf8(self.scratch, code_point(kind, text, i))
        return self._add(self.scratch.data(), <uint32_t>self.scratch.size(), 1, key)

    cdef bint _ascii(self, const uint8_t* p, Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t i
        for i in range(n):
            if p[i] >= 0x80:
                return False
        return True

    def count_texts(self, list texts, int mode, const uint8_t[::1] actions, bint prefix_space,
                    uint64_t key_base):
        """Count the pieces of every text (each str is one text).

        ``key_base`` is ``chunk index << 32``: pieces new to the table take
        ``key_base + rank`` in the order they are first met.
        """
        cdef SpanBuf buf
        cdef vector[uint32_t] wide
        cdef uint64_t key = key_base
        cdef const uint8_t* acts = _actions_ptr(actions, mode)
        cdef str text
        if spanbuf_init(&buf, 256) < 0:
            raise MemoryError()
        try:
            for item in texts:
                text = <str?> item
                key = self._count_text(PyUnicode_KIND(text), PyUnicode_DATA(text), 0,
                                       PyUnicode_GET_LENGTH(text), mode, acts, prefix_space, key, &buf, wide)
        finally:
            spanbuf_free(&buf)

    def count_lines(self, str chunk not None, int mode, const uint8_t[::1] actions, bint prefix_space,
                    uint64_t key_base):
        """Count ``chunk`` as texts of one line each: cut after every ``\\n``, which stays in its line.

        That is how files are read for training (as Hugging Face reads them).
        """
        cdef SpanBuf buf
        cdef vector[uint32_t] wide
        cdef uint64_t key = key_base
        cdef const uint8_t* acts = _actions_ptr(actions, mode)
        cdef int kind = PyUnicode_KIND(chunk)
        cdef const void* data = PyUnicode_DATA(chunk)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(chunk), start = 0, i
        if spanbuf_init(&buf, 256) < 0:
            raise MemoryError()
        try:
            for i in range(n):
                if code_point(kind, data, i) == 10:
                    key = self._count_text(kind, data, start, i + 1, mode, acts, prefix_space, key, &buf, wide)
                    start = i + 1
            if start < n:
                self._count_text(kind, data, start, n, mode, acts, prefix_space, key, &buf, wide)
        finally:
            spanbuf_free(&buf)

    # -- merging and export ----------------------------------------------------
    def add_arrays(self, const uint8_t[::1] blob, const uint32_t[::1] lengths, const uint64_t[::1] counts,
                   const uint64_t[::1] keys):
        """Add a table given as arrays (see :meth:`export`): counts add, the smaller key wins."""
        cdef Py_ssize_t i, n = lengths.shape[0]
        cdef int64_t off = 0
        if counts.shape[0] != n or keys.shape[0] != n:
            raise ValueError("lengths, counts and keys must have the same length")
        for i in range(n):
            if off + lengths[i] > blob.shape[0]:
                raise ValueError(f"piece {i} runs past the end of the bytes")
            self._add(&blob[off] if lengths[i] else &ZERO_BYTE, lengths[i], counts[i], keys[i])
            off += lengths[i]
        if off != blob.shape[0]:
            raise ValueError(f"{blob.shape[0] - off} bytes are left over after the last piece")

    def export(self, int partitions=1):
        """The table as arrays ordered by first-seen key: ``(blob, lengths u32, counts u64, keys u64)``.

        With ``partitions > 1``, a list of that many such tuples: entry goes
        to partition ``(hash >> 40) % partitions``, the same for every table,
        so partition p of two tables never shares a piece with partition q.
        """
        cdef vector[pair[uint64_t, uint32_t]] order
        cdef size_t i
        cdef int p
        order.reserve(self.entries.size())
        for i in range(self.entries.size()):
            order.push_back(pair[uint64_t, uint32_t](self.entries[i].key, <uint32_t>i))
        sort(order.begin(), order.end())
        if partitions <= 1:
            return self._export_part(order, 0, 1)
        return [self._export_part(order, p, partitions) for p in range(partitions)]

    cdef tuple _export_part(self, vector[pair[uint64_t, uint32_t]]& order, int part, int partitions):
        cdef vector[uint8_t] blob
        cdef vector[uint32_t] lengths
        cdef vector[uint64_t] counts, keys
        cdef Entry* e
        cdef size_t i
        for i in range(order.size()):
            e = &self.entries[order[i].second]
            if partitions > 1 and <int>((e.hash >> 40) % <uint64_t>partitions) != part:
                continue
            blob.insert(blob.end(), self.arena.data() + e.offset, self.arena.data() + e.offset + e.length)
            lengths.push_back(e.length)
            counts.push_back(e.count)
            keys.push_back(e.key)
        return (_to_bytes(blob.data(), blob.size()),
                _to_bytes(lengths.data(), lengths.size() * sizeof(uint32_t)),
                _to_bytes(counts.data(), counts.size() * sizeof(uint64_t)),
                _to_bytes(keys.data(), keys.size() * sizeof(uint64_t)))


cdef const uint8_t* _actions_ptr(const uint8_t[::1] actions, int mode) except? NULL:
    if mode == 2:
        if actions is None or actions.shape[0] != 256:
            raise ValueError("MODE_CLASS_RUNS needs a 256-byte action table")
        return &actions[0]
    return NULL


cdef bytes _to_bytes(const void* data, size_t n):
    if n == 0:
        return b""
    return PyBytes_FromStringAndSize(<const char*> data, n)


# -- helpers over arrays ----------------------------------------------------
def spell_byte_level(const uint8_t[::1] blob, const uint32_t[::1] lengths):
    """Each piece's bytes spelled in GPT-2's alphabet, as UTF-8: ``(blob, lengths)``.

    >>> b, l = spell_byte_level(b" \\xc3\\xa9", memoryview(bytes([1, 0, 0, 0, 2, 0, 0, 0])).cast("I"))
    >>> b.decode(), list(memoryview(l).cast("I"))
    ('ĠÃ©', [2, 4])
    """
    from pieceworks.byte_level import BYTE_TO_CHAR

    cdef uint32_t table[256]
    cdef int b
    for b in range(256):
        table[b] = ord(BYTE_TO_CHAR[b])
    cdef vector[uint8_t] out
    cdef vector[uint32_t] out_lengths
    cdef Py_ssize_t i, k, off = 0, n = lengths.shape[0]
    cdef size_t before
    out.reserve(blob.shape[0] + blob.shape[0] // 2)
    for i in range(n):
        if off + lengths[i] > blob.shape[0]:
            raise ValueError(f"piece {i} runs past the end of the bytes")
        before = out.size()
        for k in range(off, off + lengths[i]):
            put_utf8(out, table[blob[k]])
        out_lengths.push_back(<uint32_t>(out.size() - before))
        off += lengths[i]
    return (_to_bytes(out.data(), out.size()),
            _to_bytes(out_lengths.data(), out_lengths.size() * sizeof(uint32_t)))


def order_by_keys(const uint64_t[::1] keys):
    """The permutation (u32 bytes) that sorts ``keys`` ascending; ``keys`` must be distinct."""
    cdef vector[pair[uint64_t, uint32_t]] order
    cdef vector[uint32_t] perm
    cdef Py_ssize_t i, n = keys.shape[0]
    if n >= 0xFFFFFFFF:
        raise ValueError("too many pieces for a u32 permutation")
    order.reserve(n)
    for i in range(n):
        order.push_back(pair[uint64_t, uint32_t](keys[i], <uint32_t>i))
    sort(order.begin(), order.end())
    perm.reserve(n)
    for i in range(n):
        perm.push_back(order[i].second)
    return _to_bytes(perm.data(), perm.size() * sizeof(uint32_t))


def take_pieces(const uint8_t[::1] blob, const uint32_t[::1] lengths, const uint64_t[::1] counts,
                const uint32_t[::1] order):
    """The pieces (and counts) at positions ``order``: ``(blob, lengths u32 bytes, counts u64 bytes)``.

    >>> b, l, c = take_pieces(b"abc", memoryview(bytes([2, 0, 0, 0, 1, 0, 0, 0])).cast("I"),
    ...                       memoryview(bytes([5] + [0] * 7 + [7] + [0] * 7)).cast("Q"),
    ...                       memoryview(bytes([1, 0, 0, 0, 0, 0, 0, 0])).cast("I"))
    >>> b, list(memoryview(l).cast("I")), list(memoryview(c).cast("Q"))
    (b'cab', [1, 2], [7, 5])
    """
    cdef Py_ssize_t i, n = lengths.shape[0], m = order.shape[0]
    cdef vector[int64_t] starts
    cdef vector[uint8_t] out
    cdef vector[uint32_t] out_lengths
    cdef vector[uint64_t] out_counts
    cdef int64_t off = 0
    cdef uint32_t k
    if counts.shape[0] != n:
        raise ValueError("lengths and counts must have the same length")
    starts.reserve(n)
    for i in range(n):
        starts.push_back(off)
        off += lengths[i]
    if off > blob.shape[0]:
        raise ValueError("the pieces run past the end of the bytes")
    out.reserve(off)
    out_lengths.reserve(m)
    out_counts.reserve(m)
    for i in range(m):
        k = order[i]
        if k >= n:
            raise ValueError(f"order[{i}] = {k} is not a piece index")
        if lengths[k]:
            out.insert(out.end(), &blob[starts[k]], &blob[starts[k]] + lengths[k])
        out_lengths.push_back(lengths[k])
        out_counts.push_back(counts[k])
    return (_to_bytes(out.data(), out.size()),
            _to_bytes(out_lengths.data(), out_lengths.size() * sizeof(uint32_t)),
            _to_bytes(out_counts.data(), out_counts.size() * sizeof(uint64_t)))


def decode_pieces(const uint8_t[::1] blob, const int64_t[::1] offsets, const uint32_t[::1] order,
                  Py_ssize_t start, Py_ssize_t stop):
    """``[(piece, index)]`` for positions ``start:stop`` of ``order`` (an empty order = identity)."""
    cdef list out = []
    cdef Py_ssize_t pos, i
    cdef bint identity = order.shape[0] == 0
    cdef const char* p
    for pos in range(start, stop):
        i = pos if identity else order[pos]
        p = <const char*> &blob[offsets[i]] if offsets[i + 1] > offsets[i] else <const char*> &ZERO_BYTE
        out.append((PyUnicode_DecodeUTF8(p, offsets[i + 1] - offsets[i], "surrogatepass"), i))
    return out


def weighted_total(const int64_t[::1] offsets, const uint64_t[::1] counts, uint64_t limit):
    """The sum of ``count × max(length, 1)`` over the pieces, or ``limit + 1`` once it passes ``limit``.

    >>> from array import array
    >>> weighted_total(array("q", [0, 2, 5]), array("Q", [3, 1]), 100)
    9
    >>> weighted_total(array("q", [0, 2, 5]), array("Q", [3, 1]), 8)
    9
    """
    cdef Py_ssize_t k
    cdef uint64_t total = 0, length
    for k in range(counts.shape[0]):
        length = <uint64_t>(offsets[k + 1] - offsets[k]) if offsets[k + 1] > offsets[k] else 1
        # Dividing first: the product itself can wrap around 64 bits.
        if counts[k] > (limit - total) // length:
            return limit + 1
        total += counts[k] * length
    return total


def first_bad_piece(const uint8_t[::1] blob, const int64_t[::1] offsets):
    """The index of the first piece that starts or ends inside a UTF-8 char, or -1.

    With the whole blob valid UTF-8 (checked apart), this makes every piece valid.
    """
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    cdef int64_t size = blob.shape[0]
    for i in range(n):
        if offsets[i] > offsets[i + 1] or offsets[i + 1] > size:
            return i
        if offsets[i] < size and offsets[i + 1] > offsets[i] and (blob[offsets[i]] & 0xC0) == 0x80:
            return i
    if n >= 0 and offsets[n] != size:
        return n - 1 if n > 0 else 0
    return -1
