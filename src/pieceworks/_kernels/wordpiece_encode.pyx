# distutils: language = c++
# cython: language_level=3
"""WordPiece encoding in linear time: LinMaxMatch (Song et al. 2021, "Fast WordPiece Tokenization").

WordPiece's rule is greedy longest-match-first: at each point of a word take
the longest vocabulary token that matches there (with the ``##`` prefix
after the first), and give up, making the whole word unknown, when none
does. Done naively (``while word[:i] not in vocab: i -= 1``) that is
quadratic in the word's length, or worse.

LinMaxMatch walks a trie of the vocabulary one char at a time and never
reads a char twice. Each trie node ``v`` (a string ``s``) carries

* ``fpop[v]``, the tokens greedy matching pops off ``s`` when the next char
  does not extend it, and
* ``fail[v]``, the trie node of what is left of ``s`` after those pops (as
  a continuing token), or none when greedy matching gets stuck inside ``s``.

They are computed parent before child, like Aho-Corasick's failure links:
if ``v = u + c`` is not a token, ``v`` pops what ``u`` pops and then follows
``u``'s failure links until one of them extends by ``c``. A token node pops
itself and fails to the continuing root.

Encoding reads the word: while the next char does not extend the current
node, emit its failure pops and follow its failure link; at the end, do the
same until the continuing root is reached. Every failure pop is at least one
token, and tokens cover disjoint chars, so the work is linear in the word's
length.

Failure pops are stored shared: a node whose pops are its parent's reuses
the parent's handle, and otherwise stores a short list of handles (its
parent's, then those of the failure links it followed). Expanding a handle
costs O(tokens emitted), and the whole table is O(total token length), even
for vocabularies with very long tokens.

Two roots: word-initial tokens are keyed by their full text under node 0,
continuing tokens by their text after the prefix under ``croot``. A token
that starts with the prefix (``##a``) is both: at the start of a word it
matches as typed, as Hugging Face's ``vocab.contains(word[0..end])`` does.
"""

from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.vector cimport vector


cdef inline uint64_t edge_key(int32_t v, Py_UCS4 c) noexcept nogil:
    return (<uint64_t>v << 21) | <uint64_t>c


# No edge key reaches this: nodes are int32 and code points 21 bits.
cdef uint64_t EMPTY_EDGE = 0xFFFFFFFFFFFFFFFFULL


cdef inline uint64_t slot_of(uint64_t key, uint64_t mask) noexcept nogil:
    # Fibonacci hashing: the high bits of key * 2^64/phi spread nearby keys apart.
    return ((key * 0x9E3779B97F4A7C15ULL) >> 20) & mask


cdef inline int32_t probe(const EdgeSlot* slots, uint64_t mask, int32_t v, Py_UCS4 c) noexcept nogil:
    # The child of node v by char c in the open-addressing table, or -1.
    cdef uint64_t key = edge_key(v, c)
    cdef uint64_t i = slot_of(key, mask)
    while True:
        if slots[i].key == key:
            return slots[i].child
        if slots[i].key == EMPTY_EDGE:
            return -1
        i = (i + 1) & mask


cdef class WordPieceMatcher:
    """Greedy longest-match-first over a vocabulary, in linear time.

    >>> m = WordPieceMatcher({"b": 0, "##u": 1, "##gs": 2, "hug": 3, "##s": 4}, "##")
    >>> m.tokenize("bugs"), m.tokenize("hugs"), m.tokenize("mug")
    ([(0, 0, 1), (1, 1, 2), (2, 2, 4)], [(3, 0, 3), (4, 3, 4)], None)
    """

    def __init__(self, dict vocab, str prefix, token_cls=None):
        cdef str text
        cdef int32_t v
        cdef size_t expected
        self.values = {tid: text for text, tid in vocab.items()}
        self.token_cls = token_cls
        # Sized for about as many trie nodes (and edges) as a BERT vocabulary makes, 2.4 a token, so
        # neither the vectors nor the table grow through copies on the way: each copy is memory
        # touched afresh, and the table's two doublings were a fifth of the build. (More is only
        # a late resize; the vectors' unused room is never touched.)
        expected = 3 * len(vocab) + 2
        self.parent.reserve(expected)
        self.depth.reserve(expected)
        self.token.reserve(expected)
        self.fail.reserve(expected)
        self.fpop.reserve(expected)
        self.label.reserve(expected)
        self.size_slots(expected)
        # With an empty prefix one trie serves both roles: continuing tokens are typed as is.
        self.new_node(-1, 0, 0)                         # node 0: word-initial root
        self.croot = 0
        if prefix:
            self.croot = self.new_node(-1, 0, 0)        # continuing root
        for text, tid in vocab.items():
            if not text:
                continue                                 # an empty token can never match
            v = self.insert(0, text, 0)
            self.token[v] = tid
            if prefix and len(text) > len(prefix) and text.startswith(prefix):
                v = self.insert(self.croot, text, len(prefix))
                self.token[v] = tid
        self.link()

    cdef int32_t new_node(self, int32_t parent, Py_UCS4 c, int32_t depth):
        cdef int32_t v = self.parent.size()
        self.parent.push_back(parent)
        self.label.push_back(c)
        self.depth.push_back(depth)
        self.token.push_back(-1)
        self.fail.push_back(-1)
        self.fpop.push_back(-1)
        return v

    cdef int32_t child(self, int32_t v, Py_UCS4 c) noexcept:
        return probe(self.slots.data(), self.slot_mask, v, c)

    cdef int32_t insert(self, int32_t root, str text, Py_ssize_t skip) except -1:
        cdef int32_t v = root, w
        cdef Py_ssize_t i, n = len(text)
        cdef Py_UCS4 c
        for i in range(skip, n):
            c = text[i]
            w = self.child(v, c)
            if w < 0:
                w = self.new_node(v, c, self.depth[v] + 1)
                self.add_edge(edge_key(v, c), w)
            v = w
        return v

    cdef void link(self):
        # Parents before children: every failure link points to a shallower node.
        cdef vector[int32_t] order = self.by_depth()
        cdef vector[int32_t] pops
        cdef int32_t v, u, z, nxt
        cdef Py_ssize_t i, k
        cdef Py_UCS4 c
        self.starts.push_back(0)
        for k in range(<Py_ssize_t>order.size()):
            v = order[k]
            if self.token[v] >= 0:
                self.fpop[v] = v
                self.fail[v] = self.croot
                continue
            u = self.parent[v]
            z = self.fail[u]
            if u == 0 or u == self.croot or z < 0:
                continue                                  # stuck: nothing before v is a whole token
            c = self.label[v]
            pops.clear()
            pops.push_back(self.fpop[u])
            nxt = self.child(z, c)
            while nxt < 0:
                pops.push_back(self.fpop[z])
                z = self.fail[z]
                if z < 0:
                    break
                nxt = self.child(z, c)
            if z < 0:
                continue
            self.fail[v] = nxt
            if pops.size() == 1:
                self.fpop[v] = pops[0]
            else:
                for i in range(<Py_ssize_t>pops.size()):
                    self.items.push_back(pops[i])
                self.fpop[v] = -2 - (<int32_t>self.starts.size() - 1)
                self.starts.push_back(self.items.size())

    cdef vector[int32_t] by_depth(self):
        """The nodes below the roots, shallowest first, in creation order within a depth (a
        counting sort: one pass to count each depth, one to place)."""
        cdef vector[int32_t] first, order
        cdef Py_ssize_t i, n = self.parent.size()
        cdef int32_t d
        for i in range(n):
            if self.parent[i] >= 0:
                d = self.depth[i]
                if <size_t>d + 1 >= first.size():
                    first.resize(d + 2, 0)
                first[d + 1] += 1
        for i in range(1, <Py_ssize_t>first.size()):
            first[i] += first[i - 1]
        order.resize(first.back() if first.size() else 0)
        for i in range(n):
            if self.parent[i] >= 0:
                d = self.depth[i]
                order[first[d]] = <int32_t>i
                first[d] += 1
        return order

    cdef void expand(self, int32_t handle, vector[int32_t]& out):
        # Depth-first, items in order: push them reversed.
        cdef int32_t h, k
        cdef Py_ssize_t i
        self.stack.clear()
        self.stack.push_back(handle)
        while not self.stack.empty():
            h = self.stack.back()
            self.stack.pop_back()
            if h >= 0:
                out.push_back(h)
            elif h <= -2:
                k = -2 - h
                i = self.starts[k + 1] - 1
                while i >= self.starts[k]:
                    self.stack.push_back(self.items[i])
                    i -= 1

    cdef bint match(self, str word, vector[int32_t]& out):
        # out receives the trie nodes of the tokens; False means the word is unknown.
        # ``steps`` counts trie moves (one per char read, one per failure link
        # followed): the linear-time bound tests check it.
        cdef int32_t u = 0, w
        cdef Py_UCS4 c
        cdef int64_t steps = 0
        out.clear()
        for c in word:
            w = self.child(u, c)
            while w < 0:
                if u == 0 or u == self.croot:
                    self.steps = steps
                    return False
                self.expand(self.fpop[u], out)
                u = self.fail[u]
                steps += 1
                if u < 0:
                    self.steps = steps
                    return False
                w = self.child(u, c)
            u = w
            steps += 1
        while u != self.croot and u != 0:
            self.expand(self.fpop[u], out)
            u = self.fail[u]
            steps += 1
            if u < 0:
                self.steps = steps
                return False
        self.steps = steps
        return True

    # -- the nogil API: C arrays in, trie nodes out; shared by fused kernels ------
    cdef void size_slots(self, uint64_t edges):
        """Empty slots for at least ``edges`` edges at load <= 1/2 (a power of two), the edges
        already in place moved over."""
        cdef uint64_t size = 16, i
        cdef vector[EdgeSlot] old
        cdef EdgeSlot empty
        empty.key = EMPTY_EDGE
        empty.child = -1
        while size < 2 * edges:
            size *= 2
        if size <= self.slots.size():
            return
        old.swap(self.slots)
        self.slots.assign(size, empty)
        self.slot_mask = size - 1
        for item in old:
            if item.key != EMPTY_EDGE:
                self.put_edge(item.key, item.child)

    cdef void add_edge(self, uint64_t key, int32_t child):
        if 2 * (self.n_edges + 1) > self.slots.size():
            self.size_slots(2 * (self.n_edges + 1))
        self.put_edge(key, child)
        self.n_edges += 1

    cdef void put_edge(self, uint64_t key, int32_t child) noexcept:
        # (key is new: a lookup missed it)
        cdef uint64_t i = slot_of(key, self.slot_mask)
        while self.slots[i].key != EMPTY_EDGE:
            i = (i + 1) & self.slot_mask
        self.slots[i].key = key
        self.slots[i].child = child

    cdef int32_t child_nogil(self, int32_t v, Py_UCS4 c) noexcept nogil:
        return probe(self.slots.data(), self.slot_mask, v, c)

    cdef void expand_into(self, int32_t handle, vector[int32_t]& out, vector[int32_t]& stack) noexcept nogil:
        # expand() with the caller's stack, so threads never share scratch.
        cdef int32_t h, k
        cdef Py_ssize_t i
        if handle >= 0:
            out.push_back(handle)                         # the common case: one token
            return
        stack.clear()
        stack.push_back(handle)
        while not stack.empty():
            h = stack.back()
            stack.pop_back()
            if h >= 0:
                out.push_back(h)
            elif h <= -2:
                k = -2 - h
                i = self.starts[k + 1] - 1
                while i >= self.starts[k]:
                    stack.push_back(self.items[i])
                    i -= 1

    cdef bint match_array(self, const Py_UCS4* word, Py_ssize_t n, vector[int32_t]& out,
                          vector[int32_t]& stack) noexcept nogil:
        # match(), step for step, on a C array (see match() for the invariant).
        cdef int32_t u = 0, w
        cdef Py_ssize_t i
        cdef Py_UCS4 c
        cdef const EdgeSlot* slots = self.slots.data()
        cdef uint64_t mask = self.slot_mask
        out.clear()
        for i in range(n):
            c = word[i]
            w = probe(slots, mask, u, c)
            while w < 0:
                if u == 0 or u == self.croot:
                    return False
                self.expand_into(self.fpop[u], out, stack)
                u = self.fail[u]
                if u < 0:
                    return False
                w = probe(slots, mask, u, c)
            u = w
        while u != self.croot and u != 0:
            self.expand_into(self.fpop[u], out, stack)
            u = self.fail[u]
            if u < 0:
                return False
        return True

    def tokenize(self, str word not None):
        """``[(id, start, end), ...]`` in chars, or None when the word cannot be matched."""
        cdef vector[int32_t] nodes
        cdef Py_ssize_t i, start = 0, end
        if not self.match(word, nodes):
            return None
        out = []
        for i in range(<Py_ssize_t>nodes.size()):
            end = start + self.depth[nodes[i]]
            out.append((self.token[nodes[i]], start, end))
            start = end
        return out

    def tokens(self, str word not None):
        """``token_cls(id, value, (start, end))`` per token, or None when the word cannot be matched."""
        cdef vector[int32_t] nodes
        cdef Py_ssize_t i, start = 0, end
        cdef int32_t node
        if not self.match(word, nodes):
            return None
        out = []
        make, values = self.token_cls, self.values
        for i in range(<Py_ssize_t>nodes.size()):
            node = nodes[i]
            end = start + self.depth[node]
            out.append(make(self.token[node], values[self.token[node]], (start, end)))
            start = end
        return out

    def tokenize_ids(self, str word not None):
        """The token ids of one word, or None when it cannot be matched."""
        cdef vector[int32_t] nodes
        cdef Py_ssize_t i
        if not self.match(word, nodes):
            return None
        return [self.token[nodes[i]] for i in range(<Py_ssize_t>nodes.size())]

    @property
    def last_steps(self) -> int:
        """Trie moves made by the last call (chars read + failure links followed)."""
        return self.steps

    @property
    def n_nodes(self) -> int:
        """Trie nodes, both roots included."""
        return self.parent.size()

    @property
    def n_pop_items(self) -> int:
        """Stored failure-pop items: linear in the vocabulary's total length."""
        return self.items.size()
