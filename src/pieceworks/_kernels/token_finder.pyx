# cython: language_level=3
# distutils: language = c++
"""Where a few strings (added or special tokens) occur in text, and which texts of a batch hold one.

A batch asks every text whether it holds a token before it encodes it
(Tokenizer's added tokens, the tiktoken face's special tokens), so that
must cost next to nothing for texts that hold none; where a text does, the
tokens are found leftmost-longest, as Hugging Face's Aho-Corasick and a
regex alternation of the tokens, longest first, find them.

Both answers come from one Aho-Corasick automaton of the tokens *reversed*,
run from a text's end to its start: after it has read ``text[i:]``
backwards, the longest token its state's suffix links reach is the longest
token that starts at ``i``. So one pass learns, in linear time, the longest
token starting at every place; the leftmost-longest matches are then taken
greedily from the left. While the automaton is at its root it skips, by
memrchr or a bit test, the chars no token ends with. No joined copy of a
batch's texts is made: joining lines of which a few are not Latin-1 widened
all of them (2 MB of code, 34 such lines: 1.4 ms of copying).

Walking a plain trie from every place instead cost the text's length times
the longest token's: tokens ``a`` and ``a``*20000 + ``b`` made 40 KB of
``a`` take seconds; so did comparing a text with each of thousands of
tokens that begin alike.
"""

from cpython.unicode cimport PyUnicode_READ
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.vector cimport vector

cdef extern from "Python.h":
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    void PyObject_GC_UnTrack(void* op)

cdef extern from "<string.h>" nogil:
    void* memchr(const void* s, int c, size_t n)
    void* memrchr(const void* s, int c, size_t n)

cdef uint32_t NO_NODE = 0xFFFFFFFF
# Strings that start with at most this many distinct chars: a text holding none of them is passed over.
cdef size_t FEW_FIRSTS = 4
cdef Py_UCS4 SEVERAL = 0xFFFFFFFF


cdef inline bint has_char(const char_t* s, Py_ssize_t n, uint32_t c) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if s[i] == c:
            return True
    return False


cdef inline uint64_t mix_key(uint64_t x) noexcept nogil:
    x ^= x >> 31
    x *= 0x7fb5d329728ea185ULL
    x ^= x >> 27
    return x


cdef class TokenTrie:
    """Where ``strings`` (non-empty strs) occur in a text, and which texts hold one.

    ``spans``: leftmost-longest and without overlaps, from each place, left
    to right, the longest string that starts there, then on from its end
    (a regex alternation of the strings, longest first, finds the same;
    Hugging Face's added-token rule). ``holds``/``texts_holding``: as
    ``any(s in text for s in strings)``. All in time linear in the text,
    whatever the strings (see the module doc). Of two equal strings the
    later one's index is given.

    >>> t = TokenTrie(["<s>", "<s>x", "ab", "é😀"])
    >>> t.spans("x<s>x <s>abé😀a<s")
    [(1, 5, 1), (6, 9, 0), (9, 11, 2), (11, 13, 3)]
    >>> t.texts_holding(["a < b", "x <s> y", "<s", "é😀", "ba"]), t.holds("no tokens here"), len(t)
    ([1, 3], False, 4)
    """

    def __cinit__(self, strings):
        cdef list contents = list(strings)
        cdef Py_ssize_t total = 0, k
        cdef uint64_t size = 16
        for item in contents:
            if type(item) is not str or not item:
                raise ValueError(f"TokenTrie: each string must be a non-empty str, got {item!r}")
            total += len(<str>item)
        if total >= NO_NODE or len(contents) > 0x7FFFFFFF:
            raise ValueError(f"TokenTrie: {len(contents)} strings of {total} chars in all are too many")
        while size < 2 * <uint64_t>total + 16:
            size *= 2
        self.count = len(contents)
        self.slots.resize(size, TrieSlot(0, 0))
        self.mask = size - 1
        self.only_last = SEVERAL
        self.shortest = min(len(s) for s in contents) if contents else 0
        lasts = {s[len(s) - 1] for s in contents}
        if len(lasts) == 1:
            self.only_last = ord(next(iter(lasts)))
        for c in lasts:
            self.last_bits[(ord(c) & 0xFFFF) >> 3] |= 1 << (ord(c) & 7)
        firsts = {s[0] for s in contents}
        if len(firsts) <= FEW_FIRSTS:
            for c in sorted(firsts):
                self.firsts.push_back(ord(c))
        self._build(contents, total)

    cdef int _build(self, list contents, Py_ssize_t total) except -1:
        """The trie of the reversed strings, then each node's suffix link and longest string, breadth first."""
        cdef vector[uint32_t] parent, char_of, depth, order, start
        cdef vector[int32_t] terminal
        cdef uint32_t node, child, f, v, c, d
        cdef Py_ssize_t k, j, n
        cdef int kind
        cdef void* data
        parent.reserve(total + 1)
        parent.push_back(0)
        char_of.push_back(0)
        depth.push_back(0)
        terminal.push_back(-1)
        for k in range(len(contents)):
            s = contents[k]
            kind, data, n = PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s)
            node = 0
            for j in range(n - 1, -1, -1):
                c = <uint32_t>PyUnicode_READ(kind, data, j)
                child = self._child(node, c)
                if child == NO_NODE:
                    child = <uint32_t>parent.size()
                    parent.push_back(node)
                    char_of.push_back(c)
                    depth.push_back(depth[node] + 1)
                    terminal.push_back(-1)
                    self._put(node, c, child)
                node = child
            terminal[node] = <int32_t>k
        # Breadth first: a node's suffix link is shallower, so it is done before the node.
        n = <Py_ssize_t>parent.size()
        start.resize(n + 2, 0)
        for v in range(<uint32_t>n):
            start[depth[v] + 1] += 1
        for j in range(1, n + 2):
            start[j] += start[j - 1]
        order.resize(n)
        for v in range(<uint32_t>n):
            d = depth[v]
            order[start[d]] = v
            start[d] += 1
        self.fail.resize(n, 0)
        self.best_length.resize(n, 0)
        self.best_index.resize(n, -1)
        for j in range(1, n):
            v = order[j]
            f = 0
            if parent[v] != 0:
                # The longest proper suffix of v's string that is in the trie: extend the parent's.
                f = self.fail[parent[v]]
                while True:
                    child = self._child(f, char_of[v])
                    if child != NO_NODE:
                        f = child
                        break
                    if f == 0:
                        break
                    f = self.fail[f]
            self.fail[v] = f
            if terminal[v] >= 0:
                self.best_length[v], self.best_index[v] = <int32_t>depth[v], terminal[v]
            else:
                self.best_length[v], self.best_index[v] = self.best_length[f], self.best_index[f]
        return 0

    cdef uint32_t _child(self, uint32_t node, uint32_t c) noexcept nogil:
        cdef uint64_t key = ((<uint64_t>node << 21) | c) + 1
        cdef uint64_t at = mix_key(key) & self.mask
        while self.slots[at].key:
            if self.slots[at].key == key:
                return self.slots[at].child
            at = (at + 1) & self.mask
        return NO_NODE

    cdef void _put(self, uint32_t node, uint32_t c, uint32_t child) noexcept:
        cdef uint64_t key = ((<uint64_t>node << 21) | c) + 1
        cdef uint64_t at = mix_key(key) & self.mask
        while self.slots[at].key:
            at = (at + 1) & self.mask
        self.slots[at] = TrieSlot(key, child)

    # -- reading a text backwards -----------------------------------------------------

    def spans(self, str text not None) -> list:
        """``(start, end, index)`` of each match in ``text``, in order (``index``: into the strings)."""
        cdef vector[Found] found
        cdef list out = []
        cdef Py_ssize_t k, at = 0
        self._read(text, &found)
        for k in range(<Py_ssize_t>found.size() - 1, -1, -1):     # (found from the right)
            if found[k].start >= at:
                at = found[k].start + found[k].length
                out.append((found[k].start, at, found[k].index))
        return out

    def spans_of(self, list texts, list ids) -> list:
        """:meth:`spans` of each text (a str), each index given as ``ids[index]``; None for a text
        where a match's id is None (its caller works that text out its own way).

        >>> TokenTrie(["<s>", "ab"]).spans_of(["x<s>y", "", "ab<s>"], [7, None])
        [[(1, 4, 7)], [], None]
        """
        cdef vector[Found] found
        cdef list out = [], spans
        cdef Py_ssize_t k, at
        cdef object token_id
        cdef tuple span
        for text in texts:
            if type(text) is not str:
                raise TypeError(f"expected str, got {type(text).__name__}")
            found.clear()
            self._read(<str>text, &found)
            spans = []
            at = 0
            for k in range(<Py_ssize_t>found.size() - 1, -1, -1):     # (found from the right)
                if found[k].start >= at:
                    at = found[k].start + found[k].length
                    if found[k].index >= len(ids):
                        raise ValueError(f"TokenTrie.spans_of: {len(ids)} ids for string {found[k].index}")
                    token_id = ids[found[k].index]
                    if token_id is None:
                        spans = None
                        break
                    span = (found[k].start, at, token_id)
                    PyObject_GC_UnTrack(<void*>span)     # (ints only: the batches that ask make thousands)
                    spans.append(span)
            if spans is not None:
                PyObject_GC_UnTrack(<void*>spans)   # (untracked tuples only: it can join no cycle)
            out.append(spans)
        return out

    def __len__(self):
        """How many strings it finds (equal ones counted each)."""
        return self.count

    def holds(self, str text not None) -> bool:
        """Whether ``text`` holds one of the strings."""
        return self._read(text, NULL)

    cdef bint holds_chars(self, int kind, const void* data, Py_ssize_t n) noexcept nogil:
        """:meth:`holds` of a str's ``n`` chars of ``kind`` at ``data`` (as PyUnicode_KIND and
        PyUnicode_DATA give them), without the GIL: for a batch's threads."""
        if n < self.shortest or self.shortest == 0 or not self._may_hold(kind, data, n):
            return False
        return self.read_kind(kind, data, n, NULL) == 1     # (nothing is found into, so nothing can fail)

    cdef int read_kind(self, int kind, const void* data, Py_ssize_t n, vector[Found]* found) except -1 nogil:
        """:meth:`_read_chars` of a str's ``n`` chars of ``kind`` at ``data`` (its PEP 393 form)."""
        if kind == 1:
            return self._read_chars(<const uint8_t*>data, n, found)
        if kind == 2:
            return self._read_chars(<const uint16_t*>data, n, found)
        return self._read_chars(<const uint32_t*>data, n, found)

    def texts_holding(self, texts) -> list:
        """Indices, in order, of the texts (an iterable of strs) holding one of the strings.

        TypeError if an item is not a str.
        """
        cdef Py_ssize_t k = 0
        cdef list out = []
        for text in (texts if type(texts) is list else list(texts)):
            if type(text) is not str:
                raise TypeError(f"expected str, got {type(text).__name__}")
            if self._read(<str>text, NULL):
                out.append(k)
            k += 1
        return out

    cdef bint _read(self, str text, vector[Found]* found) except -1:
        """Read ``text`` backwards; into ``found`` each place a string starts, with the longest
        that does, from the right (NULL: stop at the first and answer True)."""
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        if found == NULL:
            return self.holds_chars(kind, data, n)
        if n < self.shortest or self.shortest == 0 or not self._may_hold(kind, data, n):
            return False
        if n > 0x7FFFFFFF:
            raise ValueError(f"TokenTrie: a text of {n} chars is too long (at most 2**31 - 1)")
        return self.read_kind(kind, data, n, found)

    cdef bint _may_hold(self, int kind, const void* data, Py_ssize_t n) noexcept nogil:
        """False if the text holds none of the chars the strings start with (when they are few).

        Tokens that end with chars the text is full of (``aaaaaaaa7`` in a
        megabyte of digits) keep the automaton off its root, a probe a
        char; a find per first char (memchr for Latin-1 text) rules such a
        text out at once.
        """
        cdef size_t k
        if self.firsts.empty():
            return True
        for k in range(self.firsts.size()):
            if kind == 1:
                if self.firsts[k] < 256 and memchr(data, <int>self.firsts[k], <size_t>n) != NULL:
                    return True
            elif kind == 2:
                if has_char(<const uint16_t*>data, n, self.firsts[k]):
                    return True
            elif has_char(<const uint32_t*>data, n, self.firsts[k]):
                return True
        return False

    cdef Py_ssize_t _skip_at_root(self, const char_t* s, Py_ssize_t i) noexcept nogil:
        """How much of ``s[:i]`` is left once the chars no string ends with are dropped from its
        end (0: none is left): at the root only such a char leads anywhere."""
        cdef const uint8_t* hit
        if char_t is uint8_t and self.only_last < 256:
            hit = <const uint8_t*>memrchr(s, <int>self.only_last, <size_t>i)
            return 0 if hit == NULL else hit - s + 1
        while i > 0 and not (self.last_bits[(s[i - 1] & 0xFFFF) >> 3] >> (s[i - 1] & 7)) & 1:
            i -= 1
        return i

    cdef uint32_t _step(self, uint32_t state, uint32_t c) noexcept nogil:
        """The state after reading ``c`` (the text is read backwards)."""
        cdef uint32_t child
        while True:
            child = self._child(state, c)
            if child != NO_NODE:
                return child
            if state == 0:
                return 0
            state = self.fail[state]

    cdef int _read_chars(self, const char_t* s, Py_ssize_t n, vector[Found]* found) except -1 nogil:
        """Into ``found``, from the right, each place in ``s[:n]`` a string starts, with the longest
        that does; whether there was one (``found`` NULL: stop at the first)."""
        cdef Py_ssize_t i = n
        cdef uint32_t state = 0
        while i > 0:
            if state == 0:
                i = self._skip_at_root(s, i)
                if i == 0:
                    break
            i -= 1
            state = self._step(state, s[i])
            if self.best_length[state]:
                if found == NULL:
                    return 1
                found.push_back(Found(<int32_t>i, self.best_length[state], self.best_index[state]))
        return found != NULL and found.size() > 0


cdef class AroundTokens:
    """Added (or allowed special) tokens a text is encoded around: the leftmost-longest matches of
    ``trie``'s strings, string ``k`` the token ``token_ids[k]`` (None: a token whose text is not its
    match, one that strips spaces: a text holding it is not encoded around it), each stretch
    between them encoded on its own, as Hugging Face splits added tokens out before pre-tokenizing
    (``bytebpe.ByteBPE.encode_around``, ``bpe_encode.BpeEncoder.encode_around_batch``).

    ``inner``: tokens looked for only in those stretches, each of those encoded around them in
    turn: Hugging Face's second pass, for the tokens it matches in the normalized text (with no
    normalizer, the text as it is).

    >>> around = AroundTokens(TokenTrie(["<s>", "<s>x", "ab"]), [300, 301, None])
    >>> around.spans("a<s>b<s>x"), around.spans("ab"), around.every_token_has_an_id
    ([(1, 4, 300), (5, 9, 301)], None, False)
    >>> two = AroundTokens(TokenTrie(["<s>"]), [300], AroundTokens(TokenTrie(["a<", "b"]), [400, 401]))
    >>> two.spans("a<s>b")      # ("a<" starts first, but "<s>" is split out first)
    [(1, 4, 300), (4, 5, 401)]
    """

    def __init__(self, TokenTrie trie not None, token_ids, AroundTokens inner=None):
        if len(token_ids) != len(trie):
            raise ValueError(f"AroundTokens: {len(token_ids)} ids for {len(trie)} strings")
        if inner is not None and inner.inner is not None:
            raise ValueError("AroundTokens: an inner pass has no inner pass of its own (two passes at most)")
        self.trie = trie
        self.inner = inner
        for token_id in token_ids:
            if token_id is not None and not 0 <= token_id <= INT32_MAX:
                raise ValueError(f"AroundTokens: token id {token_id} is out of range")
            self.ids.push_back(-1 if token_id is None else <int32_t>token_id)

    @property
    def every_token_has_an_id(self):
        """Whether every string's id is given, the inner pass's too (no text is refused)."""
        cdef size_t k
        for k in range(self.ids.size()):
            if self.ids[k] < 0:
                return False
        return self.inner is None or self.inner.every_token_has_an_id

    def spans(self, str text not None):
        """``(start, stop, id)`` of each token in ``text``, both passes, in order; None if one has no id."""
        cdef AroundScratch scratch
        if tokens_around(self, PyUnicode_KIND(text), <const char*>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
                         &scratch) < 0:
            return None
        return [(t.start, t.start + t.length, t.index) for t in scratch.tokens]


cdef Py_ssize_t tokens_around(AroundTokens around, int kind, const char* data, Py_ssize_t n,
                              AroundScratch* scratch) noexcept nogil:
    """Into ``scratch.tokens``, the tokens of the text (``kind``, ``data``, ``n``) that ``around``
    splits out, both passes, in order, each as ``Found(start, length, id)``: how many, or -1 if
    one has no id (see :class:`AroundTokens`)."""
    scratch.tokens.clear()
    return _tokens_in(around, kind, data, n, 0, scratch.tokens, scratch.found, scratch.inner)


cdef Py_ssize_t _tokens_in(AroundTokens around, int kind, const char* data, Py_ssize_t n, Py_ssize_t offset,
                           vector[Found]& out, vector[Found]& found, vector[Found]& inner_found) noexcept nogil:
    """:func:`tokens_around` of a stretch that starts at ``offset``, appended to ``out`` (nothing
    appended if one has no id). ``found`` and ``inner_found``: room for the matches of each pass."""
    cdef Py_ssize_t at = 0, k, start, before = out.size()
    cdef int32_t token_id = 0
    cdef vector[Found] unused
    found.clear()
    if around.trie.read_kind(kind, data, n, &found) < 0:
        return -1
    # Found from the right, so read from the end; k = -1 stands for the text's end (no token there).
    for k in range(<Py_ssize_t>found.size() - 1, -2, -1):
        start = found[k].start if k >= 0 else n
        if start < at:
            continue        # (inside the longer match taken before it)
        if k >= 0:
            token_id = around.ids[found[k].index]
            if token_id < 0:
                break
        if at < start and around.inner is not None and _tokens_in(
                around.inner, kind, data + kind * at, start - at, offset + at, out, inner_found, unused) < 0:
            break
        if k < 0:
            return <Py_ssize_t>(out.size() - before)
        out.push_back(Found(<int32_t>(start + offset), found[k].length, token_id))
        at = start + found[k].length
    out.resize(before)      # (a token with no id, in this pass or the inner one)
    return -1

