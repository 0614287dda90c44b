# distutils: language = c++
# cython: language_level=3
"""BERT's whole encode pipeline in one pass over the code points, with WordPiece or BPE.

BertNormalizer (clean text, space out CJK ideographs, strip accents,
lowercase), a class-run pre-tokenizer (BertPreTokenizer, Whitespace,
WhitespaceSplit) and WordPiece, fused: each code point is looked up once in
a :class:`CharMap` that says what the normalizer turns it into and what the
pre-tokenizer does with the result; word chars collect into a buffer with
their original index, and a finished piece goes straight to the LinMaxMatch
matcher of ``wordpiece_encode``. Token ids and original-text offsets land in
C buffers; Python lists are built once at the end.

A :class:`TokenTable` made for a BPE model's encoder (``bpe_encode``) in
place of a matcher hands each piece to that encoder's merges instead: the
same stages with char-level BPE (a tokenizer trained with ``BpeTrainer``
and ``Whitespace``, Hugging Face's quick tour).

Why a per-char map is exact: every step of BertNormalizer is a function of
one char except NFD's canonical reordering, which only moves chars of
non-zero combining class. When accents are stripped those are all dropped
(Hugging Face's Mn) except 194 (spacing marks, and marks newer than Hugging
Face's Unicode 8.0 table). Their entries are ENTRY_CHECK: a text
holding one comes back as NEEDS_ORDER_CHECK, and the caller runs it again
with ``order_checked=True`` once it knows NFD reorders nothing in it (else
it takes the general path). Every char a char maps to aligns with that
char, so a token's offsets are (first char's source, last char's source + 1).

>>> actions = bytearray([2]) * 0x110000               # every char joins a run, but a space splits
>>> actions[ord(" ")] = 0
>>> cmap = CharMap(bytes(actions), {ord("É"): "e", ord("X"): " x "})
>>> pieces("ÉtÉ Xy", cmap)
[('ete', [0, 1, 2]), ('x', [4]), ('y', [5])]

Performance notes: the map is flat (4 bytes per code point, 4.4 MB, of
which a text touches a few pages); the matcher's child lookups use its
open-addressing edge table; each pooled Scratch caches the match of short
pieces (about +10% on English and code: most words repeat); the GIL is
released for texts of at least ``nogil_min`` chars, so threads encode in
parallel. Building the Python lists costs about as much as the scan: the
offsets tuples are untracked by the garbage collector (two ints cannot
form a cycle), and ids, tokens and small ints are shared objects.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLong
from cpython.ref cimport Py_INCREF
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy
from libcpp.vector cimport vector

from pieceworks._kernels.bpe_encode cimport BpeEncoder, symbol_span
from pieceworks._kernels.raw_encoding cimport int_object, span_tuple
from pieceworks._kernels.token_finder cimport AroundScratch, AroundTokens, Found, tokens_around
from pieceworks._kernels.wordpiece_encode cimport WordPieceMatcher

cdef Py_ssize_t N_CODE_POINTS = 0x110000

# What a call returns instead of tokens (Python sees these as module ints).
cdef enum:
    NEEDS_ORDER_CHECK = 1       # an ENTRY_CHECK char, and order_checked was not set
    NO_UNK_TOKEN = 2            # a piece needs unk_token, which the vocabulary lacks (BPE: or names one it lacks)
    TOO_LONG = 3                # encode_raw: offsets past int32 (use encode)
    PAST_PIECE = 4              # a BPE token starts past its piece's end: the general path's offsets

cdef Py_ssize_t INT32_LIMIT = 0x7FFFFFFF

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)
    void PyObject_GC_Track(void* op)

ctypedef fused char_t:
    uint8_t
    uint16_t
    uint32_t


cdef inline uint32_t make_entry(uint32_t kind, uint32_t payload) noexcept nogil:
    return (kind << ENTRY_SHIFT) | payload


# CharMap.to_bytes's first word: "PWC1" as a little-endian uint32 (its layout's version is the 1).
cdef uint32_t _SAVED_MAGIC = 0x31435750


cdef inline bint _plain_entry(uint32_t e) noexcept nogil:
    """Whether ``e`` is a pre-tokenizer action (kind 0-3) on a code point."""
    return (e >> ENTRY_SHIFT) <= 3 and (e & ENTRY_PAYLOAD) < <uint32_t>N_CODE_POINTS


cdef class CharMap:
    """What each code point becomes: the normalizer's output and the pre-tokenizer's action on it.

    ``actions`` holds the pre-tokenizer's action for each code point (0
    split, 1 isolate, 2/3 run class); ``special`` maps the code points the
    normalizer changes to their output (a str, maybe empty); every other
    char maps to itself. Chars in ``check`` are ENTRY_CHECK (see the module
    docstring). ``merged_with_next``: a char of class 3 is not a run of its
    own but starts a piece that the class 2 chars after it join
    (Metaspace's split: each ``▁`` begins a word).
    """

    def __init__(self, bytes actions not None, dict special, check=(), bint merged_with_next=False):
        cdef Py_ssize_t cp
        cdef const uint8_t* act
        if len(actions) != N_CODE_POINTS:
            raise ValueError(f"actions needs one byte per code point ({N_CODE_POINTS}), got {len(actions)}")
        act = <const uint8_t*> (<char*> actions)
        self.entries.resize(N_CODE_POINTS)
        for cp in range(N_CODE_POINTS):
            if act[cp] > 3:
                raise ValueError(f"action {act[cp]} of U+{cp:04X} is not 0-3")
            self.entries[cp] = make_entry(act[cp], cp)
        self.multi.push_back(0)                     # offset 0 is never a real list
        self.merged_with_next = merged_with_next
        for key, out in special.items():
            self.entries[<Py_ssize_t> key] = self._entry_for(out, act, False)
        for key in check:
            self.entries[<Py_ssize_t> key] = self._entry_for(special.get(key, chr(key)), act, True)

    cdef uint32_t _entry_for(self, str text, const uint8_t* act, bint check) except? 0xFFFFFFFF:
        cdef Py_UCS4 c
        cdef size_t offset
        if not check:                               # (a checked char is always a list)
            if len(text) == 0:
                return make_entry(ENTRY_DELETE, 0)
            if len(text) == 1:
                c = text[0]
                return make_entry(act[c], c)
            if len(text) == 3 and text[0] == " " and text[2] == " " and act[32] == ENTRY_SPLIT:
                # A CJK ideograph spaced out: a piece of its own (or nothing, if a space).
                c = text[1]
                return make_entry(ENTRY_SPLIT if act[c] == ENTRY_SPLIT else ENTRY_ISOLATE, c)
        offset = self.multi.size()
        if offset > ENTRY_PAYLOAD:
            raise ValueError("too many multi-char mappings for the char map")
        self.multi.push_back(len(text))
        for c in text:
            self.multi.push_back(make_entry(act[c], c))
        return make_entry(ENTRY_CHECK if check else ENTRY_MULTI, offset)

    def entry(self, Py_UCS4 ch):
        """``(kind, payload)`` of one code point (for tests and debugging)."""
        cdef uint32_t e = self.entries[ch]
        return e >> ENTRY_SHIFT, e & ENTRY_PAYLOAD

    def to_bytes(self) -> bytes:
        """The map as bytes, for :meth:`from_bytes` in this process or another on this machine.

        A header (``_SAVED_MAGIC``, merged_with_next, the multi list's
        length: three uint32 in native order), then the entries and the
        multi list as native uint32s. It is a cache format, not a file
        format: native byte order, and no promise across pieceworks builds.

        >>> cmap = CharMap(bytes(0x110000), {ord("a"): "bc"})
        >>> CharMap.from_bytes(cmap.to_bytes()).to_bytes() == cmap.to_bytes()
        True
        """
        cdef size_t n = self.entries.size(), n_multi = self.multi.size()
        cdef bytes out = PyBytes_FromStringAndSize(NULL, 4 * (3 + n + n_multi))
        cdef uint32_t* words = <uint32_t*>PyBytes_AS_STRING(out)
        words[0] = _SAVED_MAGIC
        words[1] = self.merged_with_next
        words[2] = <uint32_t>n_multi
        memcpy(words + 3, self.entries.data(), 4 * n)
        memcpy(words + 3 + n, self.multi.data(), 4 * n_multi)
        return out

    @staticmethod
    def from_bytes(saved not None) -> CharMap:
        """The map :meth:`to_bytes` gave; ValueError if ``saved`` is not one.

        ``saved`` is bytes or any buffer of them (a mapped cache file,
        copied here once). Every entry is checked before the kernel may read
        it: its kind, its code point, and a multi entry's list within the
        multi list. Bytes that pass cannot make a scan read outside the map,
        whatever they are (the map is read from a cache file, which anything
        can touch: so the map is a copy, which no later write to the file
        reaches).

        >>> CharMap.from_bytes(b"not a map")
        Traceback (most recent call last):
        ValueError: not a saved CharMap (9 bytes)
        """
        cdef const unsigned char[::1] view = saved
        cdef Py_ssize_t size = view.shape[0]
        cdef const uint32_t* words
        cdef size_t n_multi, i, count, k
        cdef uint32_t e, kind
        cdef CharMap cmap
        if size >= 12 and (<size_t>&view[0]) % 4:
            view = bytes(view)                  # (uint32s read in place must be aligned)
        words = <const uint32_t*>&view[0] if size >= 12 else NULL
        if size % 4 or size < 12 or words[0] != _SAVED_MAGIC or words[1] > 1 \
                or <size_t>size != 4 * (3 + <size_t>N_CODE_POINTS + words[2]):
            raise ValueError(f"not a saved CharMap ({size} bytes)")
        n_multi = words[2]
        if n_multi == 0 or n_multi > ENTRY_PAYLOAD + 1:
            raise ValueError(f"a saved CharMap's multi list has {n_multi} entries (1 to {ENTRY_PAYLOAD + 1})")
        cmap = CharMap.__new__(CharMap)
        cmap.merged_with_next = words[1]
        cmap.entries.assign(words + 3, words + 3 + N_CODE_POINTS)
        cmap.multi.assign(words + 3 + N_CODE_POINTS, words + 3 + N_CODE_POINTS + n_multi)
        for i in range(<size_t>N_CODE_POINTS):
            e = cmap.entries[i]
            kind = e >> ENTRY_SHIFT
            if kind == ENTRY_MULTI or kind == ENTRY_CHECK:
                k = e & ENTRY_PAYLOAD
                if k == 0 or k >= n_multi or cmap.multi[k] > n_multi - 1 - k:
                    raise ValueError(f"a saved CharMap's entry for U+{i:04X} points outside its multi list")
                for count in range(cmap.multi[k]):
                    if not _plain_entry(cmap.multi[k + 1 + count]):
                        raise ValueError(f"a saved CharMap's entry for U+{i:04X} lists a bad char")
            elif kind != ENTRY_DELETE and not _plain_entry(e):
                raise ValueError(f"a saved CharMap's entry for U+{i:04X} is not one a map holds ({e:#x})")
        return cmap


cdef class Scratch:
    """Per-call buffers, reused through a pool (so one per thread at a time)."""

    cdef int flush(self, WordPieceMatcher m, BpeEncoder b, const Params* p) noexcept nogil:
        # The open piece is complete: WordPiece (or BPE, when b is given) it into toks.
        cdef Py_ssize_t n = self.word.size(), i
        cdef int status
        cdef int32_t count
        cdef const int32_t* nodes
        cdef Tok tok
        self.run = NO_RUN
        if n == 0:
            return 0
        tok.word = self.n_words
        self.n_words += 1
        if b is not None and not p.collect:
            status = self.flush_bpe(b, tok.word)
            if status:
                return status
        elif p.collect:
            # Pieces only (for the tests): each char as a "token" (id = the char).
            tok.unk = 0
            for i in range(n):
                tok.id = self.word[i]
                tok.start = self.src[i]
                tok.end = self.src[i] + 1
                self.toks.push_back(tok)
        else:
            count = -1
            if n <= p.max_chars:
                nodes = self.tokens_cached(m, None, &count)
            if count < 0:
                if p.unk_id < 0:
                    return NO_UNK_TOKEN
                tok.id = p.unk_id
                tok.unk = 1
                tok.start = self.src[0]
                tok.end = self.src[n - 1] + 1
                self.toks.push_back(tok)
            else:
                self.push_tokens(m, nodes, count, tok.word)
        self.word.clear()
        self.src.clear()
        return 0

    cdef int flush_bpe(self, BpeEncoder b, int32_t word) noexcept nogil:
        # The open piece's BPE tokens into toks, or a status: NO_UNK_TOKEN, or PAST_PIECE for a token
        # that starts at the piece's end (byte fallback spells a prefix's and a suffix's bytes too, so
        # the tokens can cover more bytes than the piece has; Hugging Face's offsets then run past the
        # text, and the general path's past the piece: it is left to say where).
        # Each cached token is (id, first char, end char) in the piece, which src maps to the text.
        cdef int32_t count, k
        cdef int32_t n = <int32_t>self.word.size()
        cdef const int32_t* spans = self.tokens_cached(None, b, &count)
        cdef Tok* tok
        if count < 0:
            return NO_UNK_TOKEN
        for k in range(count):
            if spans[3 * k + 1] >= n:
                return PAST_PIECE
        tok = self.more_toks(count)
        for k in range(count):
            tok[k].id = spans[3 * k]
            tok[k].word = word
            tok[k].unk = 0
            tok[k].start = self.src[spans[3 * k + 1]]
            tok[k].end = self.src[spans[3 * k + 2] - 1] + 1
        return 0

    cdef inline Tok* more_toks(self, Py_ssize_t count) noexcept nogil:
        # Room for ``count`` more tokens at the end of toks, for the caller to fill in place: a Tok
        # built on the stack and pushed is copied by a wide load of its fresh narrow stores, which
        # stalls (store forwarding fails), and that stall was 8% of encoding random letters.
        cdef size_t at = self.toks.size()
        self.toks.resize(at + <size_t>count)
        return &self.toks[at]

    cdef void bpe_tokens(self, BpeEncoder b, int32_t* count) noexcept nogil:
        # The open piece split into chars and merged (BpeEncoder's own steps), as triples in nodes.
        cdef Py_ssize_t s, last
        cdef int64_t pos = 0, end, start, stop
        self.syms.clear()
        self.char_at.clear()
        self.nodes.clear()
        if b._split_merged(4, self.word.data(), <Py_ssize_t>self.word.size(), self.syms, self.char_at, NULL) < 0:
            count[0] = -1
            return
        last = <Py_ssize_t>self.char_at.size() - 1     # char_at[last] is the piece's length
        self.nodes.resize(3 * self.syms.size())
        for s in range(<Py_ssize_t>self.syms.size()):
            end = pos + self.syms[s].nbytes
            symbol_span(self.char_at.data(), last, pos, end, False, &start, &stop)
            pos = end
            self.nodes[3 * s] = self.syms[s].id
            self.nodes[3 * s + 1] = <int32_t>start
            self.nodes[3 * s + 2] = <int32_t>stop
        count[0] = <int32_t>self.syms.size()

    cdef void push_tokens(self, WordPieceMatcher m, const int32_t* nodes, int32_t count, int32_t word) noexcept nogil:
        # One token per trie node; each covers depth[node] chars of the piece.
        cdef Py_ssize_t pos = 0, length
        cdef int32_t k, node
        cdef Tok* tok = self.more_toks(count)
        for k in range(count):
            node = nodes[k]
            length = m.depth[node]
            tok[k].id = m.token[node]
            tok[k].word = word
            tok[k].unk = 0
            tok[k].start = self.src[pos]
            tok[k].end = self.src[pos + length - 1] + 1
            pos += length

    cdef const int32_t* tokens_cached(self, WordPieceMatcher m, BpeEncoder b, int32_t* count) noexcept nogil:
        # The open piece's tokens, from the word cache when the piece is short enough to cache (and
        # BPE draws nothing):
        # WordPiece's trie nodes (m), or BPE's (id, start, end) triples (b); count = -1 for none
        # (WordPiece: an unknown word; BPE: an unknown char and no unk token to spell it).
        cdef Py_ssize_t n = self.word.size()
        cdef const Py_UCS4* chars = self.word.data()
        cdef uint64_t h
        cdef size_t slot, at
        cdef Py_ssize_t i
        cdef int32_t* entry
        if n > CACHE_MAX_CHARS or b is not None and b.dropout > 0.0:
            # (Under BPE-dropout each piece draws its own merges, in the order the pieces come.)
            self.tokens_of(m, b, count)
            return self.nodes.data()
        h = hash_chars(chars, n)
        slot = h & CACHE_MASK
        while self.cache_keys[slot]:
            if self.cache_keys[slot] == h:
                entry = &self.cache_data[self.cache_at[slot]]
                if entry[0] == n and memcmp(entry + 1, chars, n * sizeof(Py_UCS4)) == 0:
                    count[0] = entry[1 + n]
                    return entry + 2 + n
            slot = (slot + 1) & CACHE_MASK
        self.tokens_of(m, b, count)
        if self.cache_used >= CACHE_SLOTS * 3 // 4 or self.cache_data.size() > CACHE_MAX_DATA:
            self.clear_cache()                      # full: start over (a cheap, rare event)
            slot = h & CACHE_MASK
        # Entry: [n, chars..., count, tokens...] (count -1: no tokens).
        at = self.cache_data.size()
        self.cache_data.push_back(<int32_t> n)
        for i in range(n):
            self.cache_data.push_back(<int32_t> chars[i])
        self.cache_data.push_back(count[0])
        if count[0] > 0:
            self.cache_data.insert(self.cache_data.end(), self.nodes.begin(), self.nodes.end())
        self.cache_keys[slot] = h
        self.cache_at[slot] = at
        self.cache_used += 1
        return self.nodes.data()

    cdef void tokens_of(self, WordPieceMatcher m, BpeEncoder b, int32_t* count) noexcept nogil:
        # tokens_cached's tokens, worked out (into nodes).
        if b is not None:
            self.bpe_tokens(b, count)
        else:
            count[0] = self.nodes.size() if m.match_array(self.word.data(), self.word.size(), self.nodes,
                                                          self.stack) else -1

    cdef void clear_cache(self) noexcept nogil:
        self.cache_keys.assign(CACHE_SLOTS, 0)
        self.cache_at.assign(CACHE_SLOTS, 0)
        self.cache_data.clear()
        self.cache_used = 0

    cdef void use_cache_of(self, TokenTable table):
        # Cached matches belong to one matcher: TokenTable(matcher) stands for
        # it (and holding it keeps its address from being reused).
        if self.cache_owner is not table:
            self.clear_cache()
            self.cache_owner = table

    cdef void reset(self) noexcept nogil:
        """Ready for the next text (its cache kept)."""
        self.word.clear()
        self.src.clear()
        self.toks.clear()
        self.n_words = 0
        self.run = NO_RUN

    cdef void trim(self):
        # Give back the memory of a huge text rather than keep it pooled.
        cdef vector[Tok] no_toks
        cdef vector[Py_UCS4] no_word
        cdef vector[Py_ssize_t] no_src
        if self.toks.capacity() > 65536:
            self.toks.swap(no_toks)
        if self.word.capacity() > 65536:
            self.word.swap(no_word)
            self.src.swap(no_src)


cdef inline uint64_t hash_chars(const Py_UCS4* s, Py_ssize_t n) noexcept nogil:
    # FNV-1a over the code points, made non-zero (0 marks an empty slot).
    cdef uint64_t h = 0xCBF29CE484222325ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ <uint64_t> s[i]) * <uint64_t> 0x100000001B3ULL
    return h | 1


cdef inline int emit(Scratch sc, WordPieceMatcher m, BpeEncoder b, const Params* p, uint32_t kind, Py_UCS4 c,
                     Py_ssize_t src) noexcept nogil:
    # One mapped char (kind 0-3) into the piece buffer.
    cdef int status
    if kind >= ENTRY_RUN:
        if kind != sc.run:
            status = sc.flush(m, b, p)
            if status:
                return status
            # (Metaspace: the mark opens a piece of class 2, so the next class 3 char ends it.)
            sc.run = ENTRY_RUN if p.merged_with_next else kind
        sc.word.push_back(c)
        sc.src.push_back(src)
        return 0
    status = sc.flush(m, b, p)
    if status or kind == ENTRY_SPLIT:
        return status
    sc.word.push_back(c)
    sc.src.push_back(src)
    return sc.flush(m, b, p)


cdef int scan_text(const char_t* s, Py_ssize_t n, Scratch sc, WordPieceMatcher m, BpeEncoder b,
                   const Params* p) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint32_t e, kind, k, count
    cdef const uint32_t* entries = p.entries
    cdef const uint32_t* multi = p.multi
    cdef int status
    for i in range(n):
        e = entries[s[i]]
        kind = e >> ENTRY_SHIFT
        if kind == sc.run:                          # the hot case: one more char of the open piece
            sc.word.push_back(e & ENTRY_PAYLOAD)
            sc.src.push_back(i)
            continue
        if kind <= 3:
            status = emit(sc, m, b, p, kind, e & ENTRY_PAYLOAD, i)
        elif kind == ENTRY_DELETE:
            continue
        elif kind == ENTRY_MULTI or p.order_checked:   # (else ENTRY_CHECK)
            k = e & ENTRY_PAYLOAD
            count = multi[k]
            status = 0
            while count and not status:
                k += 1
                count -= 1
                status = emit(sc, m, b, p, multi[k] >> ENTRY_SHIFT, multi[k] & ENTRY_PAYLOAD, i)
        else:
            return NEEDS_ORDER_CHECK
        if status:
            return status
    return sc.flush(m, b, p)


cdef int scan_any(int kind, const void* data, Py_ssize_t n, Scratch sc, WordPieceMatcher m, BpeEncoder b,
                  const Params* p) noexcept nogil:
    # (m or b: the model, a TokenTable's; both None only when collecting pieces)
    cdef uint32_t e
    cdef int status
    if p.front and n > 0:
        # Put in front unless the text starts with what the front char is (Metaspace's rule: a
        # space or a mark already there), as the char of source 0.
        e = p.entries[(<const uint8_t*>data)[0] if kind == 1 else
                      (<const uint16_t*>data)[0] if kind == 2 else (<const uint32_t*>data)[0]]
        if e != p.entries[p.front]:
            e = p.entries[p.front]
            status = emit(sc, m, b, p, e >> ENTRY_SHIFT, e & ENTRY_PAYLOAD, 0)
            if status:
                return status
    if kind == 1:
        return scan_text(<const uint8_t*> data, n, sc, m, b, p)
    if kind == 2:
        return scan_text(<const uint16_t*> data, n, sc, m, b, p)
    return scan_text(<const uint32_t*> data, n, sc, m, b, p)


cdef list _pool = []
# Pooled scratches keep their word caches; a few per thread are plenty.
cdef Py_ssize_t POOL_SIZE = 16


cdef Scratch take_scratch():
    # Pop, and catch the empty case: no gap between checking and taking.
    try:
        return _pool.pop()
    except IndexError:
        return Scratch()


cdef void give_back(Scratch sc):
    sc.trim()
    if len(_pool) < POOL_SIZE:
        _pool.append(sc)


cdef class TokenTable:
    """A matcher (or BPE encoder) with the id and text objects of its tokens, made once, shared by every call.

    Dense (indexed by id) when the ids are; otherwise looked up by id. Word
    caches are keyed by the table, so one table must stay with one matcher.
    """

    def __init__(self, model not None):
        cdef dict values
        if isinstance(model, BpeEncoder):
            self.bpe = model
            values = {tid: token for tid, token in enumerate((<BpeEncoder>model).id_to_token) if token is not None}
        elif isinstance(model, WordPieceMatcher):
            self.matcher = model
            values = (<WordPieceMatcher>model).values
        else:
            raise TypeError(f"TokenTable takes a WordPieceMatcher or a BpeEncoder, got {type(model).__name__}")
        self.values = values
        self.ids = None
        self.texts = None
        top = max(values, default=-1)
        if 0 <= top < 4 * len(values) + 1024 and min(values, default=0) >= 0:
            self.ids = list(range(top + 1))
            self.texts = [values.get(i) for i in range(top + 1)]
            # Ints, strs and None: untracked, as raw_encoding's shared ints are (see there).
            PyObject_GC_UnTrack(<void*>self.ids)
            PyObject_GC_UnTrack(<void*>self.texts)

    @property
    def strings(self):
        """Each id's token: a list indexed by id when the ids are dense, else the id → token dict."""
        return self.texts if self.texts is not None else self.values

    cdef object id_object(self, int32_t tid):
        if self.ids is not None:
            return self.ids[tid]
        return PyLong_FromLong(tid)

    cdef object text_object(self, int32_t tid):
        if self.texts is not None:
            return self.texts[tid]
        return self.values[tid]


def encode(str text not None, CharMap cmap not None, TokenTable table not None, Py_ssize_t max_chars, int unk_id,
           str unk_token, Py_ssize_t nogil_min=2048, bint order_checked=False, str front=""):
    """``(ids, tokens, offsets, words, n_words)`` of ``text``, or an int status instead.

    ``table`` is ``TokenTable(matcher)`` of the model's current matcher (or
    ``TokenTable(encoder)`` of a BPE model's encoder). ``front``: a char to put
    before a text that does not start with one mapping as it does
    (Metaspace's prepended ``▁``); it spans the text's first char.

    NEEDS_ORDER_CHECK: ``text`` has an ENTRY_CHECK char (call again with
    ``order_checked=True`` if NFD reorders nothing in it). NO_UNK_TOKEN: a
    piece needs the unknown token and ``unk_id`` is -1 (the vocabulary lacks
    it; the general path raises the error).
    """
    cdef Params p
    cdef int kind = PyUnicode_KIND(text), status
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef Scratch sc = take_scratch()
    set_params(&p, cmap, max_chars, unk_id, order_checked, front_char(front))
    sc.reset()
    sc.use_cache_of(table)
    try:
        if n >= nogil_min:
            with nogil:
                status = scan_any(kind, data, n, sc, table.matcher, table.bpe, &p)
        else:
            status = scan_any(kind, data, n, sc, table.matcher, table.bpe, &p)
        if status:
            return status
        return build_result(sc, table, unk_token)
    finally:
        give_back(sc)


cdef uint32_t front_char(str front) except? 0xFFFFFFFF:
    """A ``front`` argument as Params takes it: "" (or None) for none, else its one char."""
    if not front:
        return 0
    if len(front) != 1:
        raise ValueError(f"front: one char or none, got {front!r}")
    return ord(front)


cdef inline void set_params(Params* p, CharMap cmap, Py_ssize_t max_chars, int unk_id, bint order_checked,
                            uint32_t front):
    p.entries = cmap.entries.data()
    p.multi = cmap.multi.data()
    p.max_chars = max_chars
    p.unk_id = unk_id
    p.collect = 0
    p.order_checked = order_checked
    p.merged_with_next = cmap.merged_with_next
    p.front = front


cdef bytes raw_of(const Tok* toks, Py_ssize_t n):
    """The raw encoding (see raw_encoding.pyx) of ``n`` tokens."""
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16 * n)
    cdef int32_t* out = <int32_t*>PyBytes_AS_STRING(raw)
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = toks[i].id
        out[n + i] = <int32_t>toks[i].start
        out[2 * n + i] = <int32_t>toks[i].end
        out[3 * n + i] = toks[i].word
    return raw


def encode_raw(str text not None, CharMap cmap not None, TokenTable table not None, Py_ssize_t max_chars, int unk_id,
               Py_ssize_t nogil_min=2048, bint order_checked=False, str front=""):
    """``(raw, n_tokens, n_words)`` of ``text`` (a raw encoding: see raw_encoding.pyx), or a status int.

    The same tokens as :func:`encode`, without a Python object per token; a
    token's string is ``strings[id]`` (the unknown token's id is ``unk_id``).
    Texts past 2**31 chars get the status TOO_LONG (offsets are int32).
    """
    return _encode_raw(text, cmap, table, max_chars, unk_id, nogil_min, order_checked, front_char(front))


cdef object _encode_raw(str text, CharMap cmap, TokenTable table, Py_ssize_t max_chars, int unk_id,
                        Py_ssize_t nogil_min, bint order_checked, uint32_t front):
    cdef Params p
    cdef int kind = PyUnicode_KIND(text), status
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef Scratch sc
    if n >= INT32_LIMIT:
        return TOO_LONG
    sc = take_scratch()
    set_params(&p, cmap, max_chars, unk_id, order_checked, front)
    sc.reset()
    sc.use_cache_of(table)
    try:
        if n >= nogil_min:
            with nogil:
                status = scan_any(kind, data, n, sc, table.matcher, table.bpe, &p)
        else:
            status = scan_any(kind, data, n, sc, table.matcher, table.bpe, &p)
        if status:
            return status
        return raw_of(sc.toks.data(), sc.toks.size()), sc.toks.size(), sc.n_words
    finally:
        give_back(sc)


cdef int scan_words(const vector[const void*]& datas, const vector[Py_ssize_t]& lengths, const vector[int]& kinds,
                    Scratch sc, TokenTable table, Params* p, vector[Tok]& out) noexcept nogil:
    """Each word's tokens in turn into ``out``, each token's word that word's position: 0, or the
    first word's status (see :func:`encode_raw`), ``out`` then unfinished."""
    cdef Py_ssize_t k, j, first
    cdef int status
    for k in range(<Py_ssize_t>datas.size()):
        sc.reset()
        status = scan_any(kinds[k], datas[k], lengths[k], sc, table.matcher, table.bpe, p)
        if status:
            return status
        first = out.size()
        out.insert(out.end(), sc.toks.begin(), sc.toks.end())
        for j in range(first, <Py_ssize_t>out.size()):
            out[j].word = <int32_t>k
    return 0


cdef class OneText:
    """:func:`encode_raw` with all but the text fixed: ``one(text)``, for ``Tokenizer.encode``'s fast way.

    Returns ``(raw, n_tokens, n_words)`` or a status int (then the caller
    takes the long way, which handles every status). ``front``: as
    :func:`encode`'s, for every text (one that starts an input).
    """
    cdef CharMap cmap
    cdef TokenTable table
    cdef Py_ssize_t max_chars, nogil_min
    cdef int unk_id
    cdef uint32_t front

    def __init__(self, CharMap cmap not None, TokenTable table not None, Py_ssize_t max_chars, int unk_id,
                 Py_ssize_t nogil_min, str front=""):
        self.cmap, self.table, self.max_chars, self.unk_id, self.nogil_min = cmap, table, max_chars, unk_id, nogil_min
        self.front = front_char(front)

    def __call__(self, str text not None):
        return _encode_raw(text, self.cmap, self.table, self.max_chars, self.unk_id, self.nogil_min, False,
                           self.front)

    def encode_words(self, list words not None):
        """``(raw, n_tokens, n_words)`` of a pre-tokenized sequence: each word encoded as ``one(word)``
        encodes it, its tokens' offsets within that word and their word its position; None for
        the long way (a word not a str, or one ``one`` gives a status for).

        One call for all the words: a word through ``one`` and then joined cost half a
        microsecond of tuples and buffers each.
        """
        cdef Params p
        cdef vector[const void*] datas
        cdef vector[Py_ssize_t] lengths
        cdef vector[int] kinds
        cdef vector[Tok] all_toks
        cdef Py_ssize_t k, total = 0
        cdef int status
        cdef Scratch sc
        try:
            keep = read_texts(words, datas, lengths, kinds)
        except TypeError:
            return None     # (the long way names the item that is not a str)
        for k in range(len(keep)):
            if lengths[k] >= INT32_LIMIT:
                return None
            total += lengths[k]
        sc = scratch_for(&p, self.cmap, self.table, self.max_chars, self.unk_id)
        p.front = self.front
        try:
            if total >= self.nogil_min:
                with nogil:
                    status = scan_words(datas, lengths, kinds, sc, self.table, &p, all_toks)
            else:
                status = scan_words(datas, lengths, kinds, sc, self.table, &p, all_toks)
            if status:
                return None
            return raw_of(all_toks.data(), all_toks.size()), all_toks.size(), len(keep)
        finally:
            sc.reset()
            give_back(sc)


def encode_raw_batch(list texts, CharMap cmap not None, TokenTable table not None, Py_ssize_t max_chars, int unk_id,
                     fronts=None, strings=None, list status_at=None):
    """``[encode_raw(t, ...) for t in texts]``, the whole list scanned with the GIL released once.

    An item is ``(raw, n_tokens, n_words)`` or a status int (then call
    :func:`encode_raw` for that text with what the status asks for).
    ``fronts``: each text's ``front`` (a str of one char, or "" for none), or None for none.
    ``strings`` (not None): each item is ``(raw, n_tokens, n_words, strings)`` instead, as a
    plan's ``encode_raw_batch`` gives it, and out of the cyclic collector's sight (bytes, ints
    and the token strings: it can join no cycle); ``status_at``: a list that gets the index of
    each item that is a status, so that the caller need not look at every item.
    """
    cdef Params p
    cdef Py_ssize_t count = len(texts), k, i, first
    cdef vector[const void*] datas
    cdef vector[Py_ssize_t] lengths
    cdef vector[int] kinds
    cdef vector[uint32_t] front_chars
    cdef vector[int] statuses
    cdef vector[Py_ssize_t] ends
    cdef vector[int32_t] n_words
    cdef vector[Tok] all_toks
    cdef Scratch sc
    cdef tuple keep = read_texts(texts, datas, lengths, kinds)
    count = len(keep)
    if fronts is not None:
        if len(fronts) != count:
            raise ValueError(f"encode_raw_batch: {count} texts but {len(fronts)} fronts")
        for front in fronts:
            front_chars.push_back(front_char(front))
    sc = scratch_for(&p, cmap, table, max_chars, unk_id)
    try:
        with nogil:
            for k in range(count):
                sc.reset()
                if front_chars.size():
                    p.front = front_chars[k]
                if lengths[k] >= INT32_LIMIT:
                    statuses.push_back(TOO_LONG)
                else:
                    statuses.push_back(scan_any(kinds[k], datas[k], lengths[k], sc, table.matcher, table.bpe, &p))
                if statuses[k] == 0:
                    all_toks.insert(all_toks.end(), sc.toks.begin(), sc.toks.end())
                ends.push_back(all_toks.size())
                n_words.push_back(sc.n_words)
        return made_results(all_toks, ends, n_words, statuses, strings, status_at, True)
    finally:
        sc.reset()
        give_back(sc)


cdef Scratch scratch_for(Params* p, CharMap cmap, TokenTable table, Py_ssize_t max_chars, int unk_id):
    """A pooled scratch with ``table``'s word cache, ``p`` set for a batch (give it back when done)."""
    cdef Scratch sc = take_scratch()
    set_params(p, cmap, max_chars, unk_id, False, 0)
    sc.use_cache_of(table)
    return sc


cdef tuple read_texts(list texts, vector[const void*]& datas, vector[Py_ssize_t]& lengths, vector[int]& kinds):
    """Where each str of ``texts`` keeps its chars; a tuple of them, which holds them while the GIL is
    released (another thread may change the list meanwhile)."""
    cdef tuple keep = tuple(texts)
    for text in keep:
        if type(text) is not str:
            raise TypeError(f"expected str, got {type(text).__name__}")
        datas.push_back(PyUnicode_DATA(text))
        lengths.push_back(PyUnicode_GET_LENGTH(text))
        kinds.push_back(PyUnicode_KIND(text))
    return keep


cdef list made_results(const vector[Tok]& toks, const vector[Py_ssize_t]& ends, const vector[int32_t]& n_words,
                       const vector[int]& statuses, object strings, list status_at, bint status_items):
    """What a batch call returns: each text's ``(raw, n_tokens, n_words)`` (its tokens ``toks[ends[k -
    1]:ends[k]]``), or with ``strings`` ``(raw, n_tokens, n_words, strings)``, untracked; where its
    status is not 0, that status (``status_items``) or None, its index put in ``status_at``."""
    cdef Py_ssize_t count = statuses.size(), k, first = 0
    cdef list out = PyList_New(count)
    cdef tuple result
    for k in range(count):
        if statuses[k]:
            item = statuses[k] if status_items else None
            if status_at is not None:
                status_at.append(k)
        elif strings is None:
            item = (raw_of(toks.data() + first, ends[k] - first), ends[k] - first, n_words[k])
        else:
            # (Untracked at once: a batch of lines made a tuple each, and every 700 of them started a
            # collection that walked them all again, a sixth of the time of a batch of lines.)
            result = (raw_of(toks.data() + first, ends[k] - first), ends[k] - first, n_words[k], strings)
            PyObject_GC_UnTrack(<void*>result)
            item = result
        first = ends[k]
        Py_INCREF(item)
        PyList_SET_ITEM(out, k, item)
    return out


def encode_around_batch(list texts, AroundTokens around not None, CharMap cmap not None, TokenTable table not None,
                        Py_ssize_t max_chars, int unk_id, strings, str front="", bint first_only=False):
    """Each text encoded around the added tokens ``around`` splits out of it (Hugging Face splits
    them out first, then normalizes and pre-tokenizes each stretch between them on its own): its
    ``(raw, n_tokens, n_words, strings)``, untracked as :func:`encode_raw_batch`'s, or None for
    the caller's way (a token with no id, a stretch :func:`encode_raw` would give a status). The
    whole list with the GIL released once.

    Each token is one word; a stretch's words follow the ones before it. ``front`` (one char, or
    none): put in front of each stretch as :func:`encode_raw` does (a Metaspace's), with
    ``first_only`` only of a stretch at the text's start.
    """
    cdef Params p
    cdef Py_ssize_t count, k, j, first, at, word
    cdef int status
    cdef vector[const void*] datas
    cdef vector[Py_ssize_t] lengths
    cdef vector[int] kinds
    cdef vector[int] statuses
    cdef vector[Py_ssize_t] ends
    cdef vector[int32_t] n_words
    cdef vector[Tok] all_toks
    cdef AroundScratch found
    cdef Found t
    cdef Tok* tok
    cdef size_t i, base
    cdef Scratch sc
    cdef tuple keep = read_texts(texts, datas, lengths, kinds)
    cdef uint32_t front_cp = front_char(front)
    count = len(keep)
    sc = scratch_for(&p, cmap, table, max_chars, unk_id)
    try:
        with nogil:
            for k in range(count):
                first = all_toks.size()
                status = 0 if lengths[k] < INT32_LIMIT and tokens_around(
                    around, kinds[k], <const char*>datas[k], lengths[k], &found) >= 0 else -1
                at = word = 0
                for j in range(<Py_ssize_t>found.tokens.size() + 1 if status == 0 else 0):
                    t = found.tokens[j] if j < <Py_ssize_t>found.tokens.size() else Found(<int32_t>lengths[k], 0, -1)
                    if at < t.start:        # the stretch before it, scanned alone
                        sc.reset()
                        p.front = 0 if first_only and at else front_cp
                        if scan_any(kinds[k], <const char*>datas[k] + kinds[k] * at, t.start - at, sc, table.matcher,
                                    table.bpe, &p):
                            status = -1
                            break
                        base = all_toks.size()
                        all_toks.insert(all_toks.end(), sc.toks.begin(), sc.toks.end())
                        for i in range(base, all_toks.size()):
                            tok = &all_toks[i]
                            tok.start += at
                            tok.end += at
                            tok.word += <int32_t>word
                        word += sc.n_words
                    if t.index >= 0:
                        all_toks.resize(all_toks.size() + 1)
                        tok = &all_toks.back()
                        tok.id = t.index
                        tok.word = <int32_t>word
                        tok.unk = 0
                        tok.start = t.start
                        tok.end = t.start + t.length
                        word += 1
                    at = t.start + t.length
                if status:
                    all_toks.resize(first)
                statuses.push_back(status)
                ends.push_back(all_toks.size())
                n_words.push_back(<int32_t>word)
        return made_results(all_toks, ends, n_words, statuses, strings, None, False)
    finally:
        sc.reset()
        give_back(sc)


cdef tuple build_result(Scratch sc, TokenTable table, str unk_token):
    cdef Py_ssize_t n = sc.toks.size(), i
    cdef list ids = PyList_New(n), tokens = PyList_New(n), offsets = PyList_New(n), words = PyList_New(n)
    cdef object obj, word_obj = None
    cdef tuple span = None
    cdef Tok* tok
    cdef int32_t last_word = -1
    cdef bint dense = table.ids is not None
    # Every 700 new tuples start a collection, which would walk these growing
    # lists again and again: hide them from the collector until they are full.
    # (Pausing the collector instead, PyGC_Disable, measured slower: the one
    # deferred collection then lands on the caller's fresh objects.)
    for obj in (ids, tokens, offsets, words):
        PyObject_GC_UnTrack(<void*> obj)
    for i in range(n):
        tok = &sc.toks[i]
        obj = table.ids[tok.id] if dense else table.id_object(tok.id)
        Py_INCREF(obj)
        PyList_SET_ITEM(ids, i, obj)
        obj = unk_token if tok.unk else (table.texts[tok.id] if dense else table.text_object(tok.id))
        Py_INCREF(obj)
        PyList_SET_ITEM(tokens, i, obj)
        # Consecutive tokens share offsets and words: reuse those int objects.
        span = span_tuple(tok.start, tok.end, span)
        Py_INCREF(span)
        PyList_SET_ITEM(offsets, i, span)
        if tok.word != last_word:
            word_obj = int_object(tok.word)
            last_word = tok.word
        Py_INCREF(word_obj)
        PyList_SET_ITEM(words, i, word_obj)
    for obj in (ids, tokens, offsets, words):
        PyObject_GC_Track(<void*> obj)
    return ids, tokens, offsets, words, sc.n_words


def pieces(str text not None, CharMap cmap not None, bint order_checked=False, str front=""):
    """The pieces the encoder hands WordPiece: ``[(piece, [source index per char]), ...]``, or None.

    The same scan as :func:`encode`, stopped before matching; the tests hold
    it to BertNormalizer followed by the pre-tokenizer. None: an
    ENTRY_CHECK char, and ``order_checked`` was not set.

    >>> actions = bytearray([2]) * 0x110000               # every char joins a run, but
    >>> actions[ord(" ")], actions[ord(",")] = 0, 1         # a space splits, a comma is isolated
    >>> pieces("Hi, ÉTÉ", CharMap(bytes(actions), {ord("H"): "h", ord("É"): "e", ord("T"): "t"}))
    [('hi', [0, 1]), (',', [2]), ('ete', [4, 5, 6])]
    """
    cdef Params p
    cdef Scratch sc = Scratch()
    cdef Tok* tok
    cdef Py_ssize_t i
    cdef list out = []
    set_params(&p, cmap, 0, -1, order_checked, front_char(front))
    p.collect = 1
    sc.reset()
    if scan_any(PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), sc, None, None, &p):
        return None
    chars, sources, word = [], [], -1
    for i in range(<Py_ssize_t> sc.toks.size()):
        tok = &sc.toks[i]
        if tok.word != word:
            if word >= 0:
                out.append(("".join(chars), sources))
            chars, sources, word = [], [], tok.word
        chars.append(chr(tok.id))
        sources.append(tok.start)
    if word >= 0:
        out.append(("".join(chars), sources))
    return out


# The statuses and the cache size, for Python callers.
globals().update(NEEDS_ORDER_CHECK=NEEDS_ORDER_CHECK, NO_UNK_TOKEN=NO_UNK_TOKEN, TOO_LONG=TOO_LONG, PAST_PIECE=PAST_PIECE,
                 CACHE_SLOTS=CACHE_SLOTS)
