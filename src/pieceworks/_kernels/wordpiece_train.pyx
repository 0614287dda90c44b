# distutils: language = c++
# cython: language_level=3
"""WordPiece training: the merge loop of :class:`pieceworks.trainers.WordPieceTrainer`.

The readable twin is :mod:`pieceworks.reference.wordpiece`; this kernel makes
the same merges, in the same order, without rescoring the world each step.

Layout. Every word's initial symbols are laid end to end, words in
first-seen order; a *slot* is the index of one initial symbol. A live symbol
is a run of slots: ``tok[s]`` is its token id at its first slot ``s``
(``-1`` at the slots it has swallowed), ``nxt``/``prv`` link the live symbols
of a word. An occurrence of a pair is named by the slot of its left symbol,
and that slot never moves, so "the pair met first when scanning the words in
order" is the pair whose smallest live slot is smallest.

Invariants the code relies on:

* A merge only makes symbols longer, so once a slot stops holding pair
  ``(a, b)`` it never holds it again. Each pair therefore keeps a lazy
  min-heap of the slots where it was made (``pos``): stale slots are
  dropped when met, and a live occurrence always has its slot there.
* A merge never makes a new occurrence of the pair it merges: ``(c, y)``
  would need ``c == a``, but ``c`` is longer; ``(x, c)`` would need
  ``c == b``, which happens only when ``a`` is the bare prefix, a
  word-initial symbol with nothing on its left. So merging the live slots
  in increasing order is the walkthrough's left-to-right pass.
* A merge changes the counts of three tokens only (``a``, ``b`` and the
  merged one); so with the likelihood score exactly the live pairs that
  contain one of them are rescored (``adj`` lists them), and with the
  frequency score only the pairs whose own count changed.
* The heap holds every pair with count >= max(1, min_frequency), keyed by
  the score computed when it was last rescored; every pair whose score or
  tie key changed is rescored before the next pop, so the top is exact.

Scores ``n / (ca * cb)`` are compared exactly by cross-multiplying in 192-bit
integers, never as floats, so ties are real ties.

Performance notes: the heap is indexed (one entry per pair, sifted in place
when its score changes) rather than a heap of stale entries, because each
merge rescores every pair of its three tokens: a frequent token's hundreds of
pairs would otherwise pile up as dead entries merge after merge. Training a
30,000-token vocabulary on 21 MB of English (76k distinct words) takes about
a second.
"""

from cython.operator cimport dereference as deref
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp.algorithm cimport sort
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

cdef extern from *:
    """
    #include <stdint.h>
    typedef unsigned __int128 wp_u128;

    /* x * y * z as a 192-bit number: (*hi << 64) | *lo. */
    static inline void wp_mul3(uint64_t x, uint64_t y, uint64_t z, wp_u128 *hi, uint64_t *lo) {
        wp_u128 yz = (wp_u128)y * z;
        wp_u128 low = (wp_u128)(uint64_t)yz * x;
        *hi = (yz >> 64) * x + (low >> 64);
        *lo = (uint64_t)low;
    }

    /* Sign of n1/(a1*b1) - n2/(a2*b2), exactly: compares n1*a2*b2 with n2*a1*b1. */
    static inline int wp_compare_scores(uint64_t n1, uint64_t a1, uint64_t b1,
                                        uint64_t n2, uint64_t a2, uint64_t b2) {
        wp_u128 h1, h2;
        uint64_t l1, l2;
        wp_mul3(n1, a2, b2, &h1, &l1);
        wp_mul3(n2, a1, b1, &h2, &l2);
        if (h1 != h2) return h1 > h2 ? 1 : -1;
        if (l1 != l2) return l1 > l2 ? 1 : -1;
        return 0;
    }
    """
    int wp_compare_scores(uint64_t n1, uint64_t a1, uint64_t b1,
                          uint64_t n2, uint64_t a2, uint64_t b2) noexcept nogil


def compare_scores(n1, a1, b1, n2, a2, b2) -> int:
    """Sign of ``n1/(a1*b1) - n2/(a2*b2)``, computed exactly (for tests).

    >>> compare_scores(1, 2, 3, 2, 3, 4), compare_scores(1, 2, 3, 2, 4, 3)
    (0, 0)
    """
    return wp_compare_scores(n1, a1, b1, n2, a2, b2)


def count_chars(list words, list freqs) -> dict:
    """Weighted occurrences of every char (the alphabet's counts).

    >>> count_chars(["ab", "b"], [2, 3])
    {'a': 2, 'b': 5}
    """
    cdef dict counts = {}
    cdef Py_ssize_t w
    cdef str word
    cdef Py_UCS4 ch
    for w in range(len(words)):
        word = words[w]
        n = freqs[w]
        for ch in word:
            counts[ch] = counts.get(ch, 0) + n
    return counts


cdef class InitialSplit:
    """Words cut into one symbol per usable char: ``prefix`` on all but the first, ``suffix`` on the last.

    Chars not in ``usable`` are left out (the others keep the prefix they
    would have had). ``seen`` lists the symbols in the order first met.

    >>> s = InitialSplit(["word", "or"], {"w", "o", "r"}, "##", None)
    >>> s.seen, s.word_symbols(0), s.word_symbols(1)
    (['w', '##o', '##r', 'o'], ['w', '##o', '##r'], ['o', '##r'])
    """

    def __init__(self, list words, usable, str prefix, suffix):
        cdef dict ids = {}
        cdef str word, symbol
        cdef Py_ssize_t i, n
        cdef Py_UCS4 ch
        self.seen = []
        self.starts.push_back(0)
        for word in words:
            n = len(word)
            for i in range(n):
                ch = word[i]
                if ch not in usable:
                    continue
                symbol = ch if i == 0 else prefix + ch
                if suffix is not None and i == n - 1:
                    symbol = symbol + suffix
                sid = ids.get(symbol)
                if sid is None:
                    sid = len(self.seen)
                    ids[symbol] = sid
                    self.seen.append(symbol)
                self.symbols.push_back(sid)
            self.starts.push_back(self.symbols.size())

    def word_symbols(self, Py_ssize_t w) -> list:
        """The symbols of word ``w`` (for tests and debugging)."""
        return [self.seen[self.symbols[i]] for i in range(self.starts[w], self.starts[w + 1])]

    def __len__(self):
        return self.starts.size() - 1


cdef class WordPieceLearner:
    """The merge loop. Build it from an :class:`InitialSplit`, then call :meth:`run`.

    ``mapping[i]`` is the vocabulary id of ``split.seen[i]``; ``tokens`` is the
    initial vocabulary (id order) and grows as tokens are learned.

    >>> split = InitialSplit(["hug", "pug", "pun", "bun", "hugs"], set("hugpnbs"), "##", None)
    >>> tokens = sorted(split.seen)
    >>> learner = WordPieceLearner(split, [10, 5, 12, 4, 5], [tokens.index(s) for s in split.seen],
    ...                            tokens, "##", True, True, 0)
    >>> learner.run(3, 100), learner.vocab[7:]
    (3, ['##gs', 'hu', 'hugs'])
    """

    def __init__(self, InitialSplit split not None, list freqs, mapping, list tokens, str prefix, bint likelihood,
                 bint first_seen, min_frequency):
        cdef Py_ssize_t n_slots = split.symbols.size(), n_words = len(split)
        cdef Py_ssize_t w, s, start, end
        cdef uint64_t f
        cdef int32_t p
        cdef vector[int32_t] ids
        for m in mapping:
            ids.push_back(m)
        self.tokens = tokens
        self.token_ids = {t: i for i, t in enumerate(tokens)}
        self.prefix = prefix
        self.likelihood = likelihood
        self.first_seen = first_seen
        self.threshold = max(1, min_frequency)
        self.step_no = 0
        self.tokcount.resize(len(tokens), 0)
        self.adj.resize(len(tokens))
        self.tok.resize(n_slots)
        self.nxt.resize(n_slots)
        self.prv.resize(n_slots)
        self.wid.resize(n_slots)
        for w in range(n_words):
            f = freqs[w]
            self.freq.push_back(f)
            start, end = split.starts[w], split.starts[w + 1]
            for s in range(start, end):
                self.tok[s] = ids[split.symbols[s]]
                self.wid[s] = w
                self.prv[s] = s - 1 if s > start else -1
                self.nxt[s] = s + 1 if s + 1 < end else -1
                self.tokcount[self.tok[s]] += f
        for s in range(n_slots):
            if self.nxt[s] >= 0:
                self.add_occurrence(self.tok[s], self.tok[s + 1], s, self.freq[self.wid[s]])
        self.touched.clear()
        for p in range(<int32_t>self.left.size()):
            self.rescore(p)

    # -- pairs -------------------------------------------------------------------
    cdef int32_t pair_id(self, int32_t a, int32_t b):
        cdef uint64_t key = (<uint64_t><uint32_t>a << 32) | <uint32_t>b
        cdef unordered_map[uint64_t, int32_t].iterator it = self.pair_ids.find(key)
        if it != self.pair_ids.end():
            return deref(it).second
        cdef int32_t p = self.left.size()
        self.pair_ids[key] = p
        self.left.push_back(a)
        self.right.push_back(b)
        self.count.push_back(0)
        self.pos.resize(p + 1)
        self.in_left.push_back(0)
        self.in_right.push_back(0)
        self.touched_at.push_back(-1)
        self.rescored_at.push_back(-1)
        self.hpos.push_back(-1)
        self.hn.push_back(0)
        self.ha.push_back(0)
        self.hb.push_back(0)
        self.hkey.push_back(0)
        return p

    cdef int32_t find_pair(self, int32_t a, int32_t b) noexcept:
        cdef uint64_t key = (<uint64_t><uint32_t>a << 32) | <uint32_t>b
        cdef unordered_map[uint64_t, int32_t].iterator it = self.pair_ids.find(key)
        return deref(it).second if it != self.pair_ids.end() else -1

    cdef void add_occurrence(self, int32_t a, int32_t b, int32_t slot, uint64_t f):
        cdef int32_t p = self.pair_id(a, b)
        if self.count[p] == 0 and self.likelihood:
            self.list_in_adjacency(p)
        self.count[p] += f
        self.pos_push(p, slot)
        self.touch(p)

    cdef void remove_occurrence(self, int32_t a, int32_t b, uint64_t f) noexcept:
        cdef int32_t p = self.find_pair(a, b)
        self.count[p] -= f
        self.touch(p)

    cdef void touch(self, int32_t p) noexcept:
        if self.touched_at[p] != self.step_no:
            self.touched_at[p] = self.step_no
            self.touched.push_back(p)

    cdef void list_in_adjacency(self, int32_t p):
        cdef int32_t a = self.left[p], b = self.right[p]
        if not self.in_left[p]:
            self.adj[a].push_back(p)
            self.in_left[p] = 1
            if a == b:
                self.in_right[p] = 1
        if a != b and not self.in_right[p]:
            self.adj[b].push_back(p)
            self.in_right[p] = 1

    # -- where each pair is (lazy min-heap of slots) ----------------------------
    cdef void pos_push(self, int32_t p, int32_t slot):
        self.pos[p].push_back(slot)
        cdef Py_ssize_t i = self.pos[p].size() - 1, parent
        while i > 0:
            parent = (i - 1) >> 1
            if self.pos[p][parent] <= slot:
                break
            self.pos[p][i] = self.pos[p][parent]
            i = parent
        self.pos[p][i] = slot

    cdef void pos_pop(self, int32_t p) noexcept:
        cdef Py_ssize_t n = self.pos[p].size() - 1, i = 0, child
        cdef int32_t last = self.pos[p][n]
        self.pos[p].pop_back()
        if n == 0:
            return
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and self.pos[p][child + 1] < self.pos[p][child]:
                child += 1
            if self.pos[p][child] >= last:
                break
            self.pos[p][i] = self.pos[p][child]
            i = child
        self.pos[p][i] = last

    cdef int32_t first_slot(self, int32_t p) noexcept:
        # Only called while count[p] > 0, so a live slot exists.
        cdef int32_t s, a = self.left[p], b = self.right[p]
        while True:
            s = self.pos[p][0]
            if self.tok[s] == a and self.nxt[s] >= 0 and self.tok[self.nxt[s]] == b:
                return s
            self.pos_pop(p)

    # -- scores and the heap -----------------------------------------------------
    cdef void rescore(self, int32_t p):
        if self.count[p] < self.threshold:
            if self.hpos[p] >= 0:
                self.heap_remove(p)
            if self.count[p] == 0:
                self.pos[p].clear()   # every slot left is stale: free them
                self.pos[p].shrink_to_fit()
            return
        self.hn[p] = self.count[p]
        self.ha[p] = self.tokcount[self.left[p]]
        self.hb[p] = self.tokcount[self.right[p]]
        if self.first_seen:
            self.hkey[p] = self.first_slot(p)
        else:
            self.hkey[p] = (<uint64_t><uint32_t>self.left[p] << 32) | <uint32_t>self.right[p]
        self.heap_update(p)

    cdef void rescore_adjacent(self, int32_t t):
        # Rescore every live pair containing t; drop dead ones from the list as we go.
        cdef Py_ssize_t i, kept = 0, n = self.adj[t].size()
        cdef int32_t p
        for i in range(n):
            p = self.adj[t][i]
            if self.count[p] == 0:
                if self.left[p] == t:
                    self.in_left[p] = 0
                if self.right[p] == t:
                    self.in_right[p] = 0
                continue
            self.adj[t][kept] = p
            kept += 1
            if self.rescored_at[p] != self.step_no:
                self.rescored_at[p] = self.step_no
                self.rescore(p)
        self.adj[t].resize(kept)

    cdef bint better(self, int32_t p, int32_t q) noexcept:
        cdef int c
        if self.likelihood:
            c = wp_compare_scores(self.hn[p], self.ha[p], self.hb[p], self.hn[q], self.ha[q], self.hb[q])
            if c != 0:
                return c > 0
        elif self.hn[p] != self.hn[q]:
            return self.hn[p] > self.hn[q]
        return self.hkey[p] < self.hkey[q]

    cdef void sift_up(self, Py_ssize_t i) noexcept:
        cdef int32_t p = self.heap[i], q
        cdef Py_ssize_t parent
        while i > 0:
            parent = (i - 1) >> 1
            q = self.heap[parent]
            if not self.better(p, q):
                break
            self.heap[i] = q
            self.hpos[q] = i
            i = parent
        self.heap[i] = p
        self.hpos[p] = i

    cdef void sift_down(self, Py_ssize_t i) noexcept:
        cdef Py_ssize_t n = self.heap.size(), child
        cdef int32_t p = self.heap[i]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and self.better(self.heap[child + 1], self.heap[child]):
                child += 1
            if not self.better(self.heap[child], p):
                break
            self.heap[i] = self.heap[child]
            self.hpos[self.heap[i]] = i
            i = child
        self.heap[i] = p
        self.hpos[p] = i

    cdef void heap_update(self, int32_t p):
        if self.hpos[p] < 0:
            self.heap.push_back(p)
            self.sift_up(self.heap.size() - 1)
        else:
            self.sift_up(self.hpos[p])
            self.sift_down(self.hpos[p])

    cdef void heap_remove(self, int32_t p) noexcept:
        cdef Py_ssize_t i = self.hpos[p]
        cdef int32_t last = self.heap.back()
        self.heap.pop_back()
        self.hpos[p] = -1
        if i < <Py_ssize_t>self.heap.size():
            self.heap[i] = last
            self.hpos[last] = i
            self.sift_up(i)
            self.sift_down(self.hpos[last])

    # -- one merge -------------------------------------------------------------------
    cdef int32_t token_for(self, int32_t a, int32_t b) except -1:
        # The merged string drops the right part's prefix; a string already known keeps its id.
        cdef str right = self.tokens[b]
        if right.startswith(self.prefix):
            right = right[len(self.prefix):]
        cdef str merged = self.tokens[a] + right
        c = self.token_ids.get(merged)
        if c is None:
            c = len(self.tokens)
            self.tokens.append(merged)
            self.token_ids[merged] = c
            self.tokcount.push_back(0)
            self.adj.resize(c + 1)
        return c

    cdef int merge_best(self) except -1:
        if self.heap.empty():
            return 0
        cdef int32_t p = self.heap[0], a = self.left[p], b = self.right[p], c, s, h, before, after, q
        cdef uint64_t f
        cdef vector[int32_t] slots
        cdef Py_ssize_t i
        self.m_left.push_back(a)
        self.m_right.push_back(b)
        self.m_count.push_back(self.count[p])
        self.m_lcount.push_back(self.tokcount[a])
        self.m_rcount.push_back(self.tokcount[b])
        c = self.token_for(a, b)
        self.m_token.push_back(c)
        self.heap_remove(p)
        self.step_no += 1
        self.touched.clear()

        slots.swap(self.pos[p])
        sort(slots.begin(), slots.end())
        for i in range(<Py_ssize_t>slots.size()):
            s = slots[i]
            h = self.nxt[s]
            if self.tok[s] != a or h < 0 or self.tok[h] != b:
                continue        # stale, or swallowed by the previous merge (a == b)
            f = self.freq[self.wid[s]]
            before = self.prv[s]
            after = self.nxt[h]
            if before >= 0:
                self.remove_occurrence(self.tok[before], a, f)
            if after >= 0:
                self.remove_occurrence(b, self.tok[after], f)
            self.count[p] -= f
            self.touch(p)
            self.tok[s] = c
            self.tok[h] = -1
            self.nxt[s] = after
            if after >= 0:
                self.prv[after] = s
            if before >= 0:
                self.add_occurrence(self.tok[before], c, before, f)
            if after >= 0:
                self.add_occurrence(c, self.tok[after], s, f)
            self.tokcount[a] -= f
            self.tokcount[b] -= f
            self.tokcount[c] += f

        for i in range(<Py_ssize_t>self.touched.size()):
            q = self.touched[i]
            self.rescored_at[q] = self.step_no
            self.rescore(q)
        if self.likelihood:
            self.rescore_adjacent(a)
            self.rescore_adjacent(b)
            self.rescore_adjacent(c)
        return 1

    # -- Python API ----------------------------------------------------------------
    def run(self, Py_ssize_t max_merges, Py_ssize_t vocab_size) -> int:
        """Merge until ``max_merges`` are done, the vocabulary has ``vocab_size`` tokens or no pair is left.

        Returns the number of merges done; 0 means training is over.
        """
        cdef Py_ssize_t done = 0
        while done < max_merges and len(self.tokens) < vocab_size:
            if not self.merge_best():
                break
            done += 1
        return done

    @property
    def vocab(self) -> list:
        """The vocabulary so far, in id order."""
        return list(self.tokens)

    def merges(self) -> list:
        """Every merge so far: ``(left, right, token, count(ab), count(a), count(b))``."""
        t = self.tokens
        return [(t[self.m_left[i]], t[self.m_right[i]], t[self.m_token[i]], self.m_count[i], self.m_lcount[i],
                 self.m_rcount[i]) for i in range(self.m_left.size())]

    @property
    def size(self) -> int:
        """How many tokens the vocabulary has so far."""
        return len(self.tokens)

    @property
    def n_merges(self) -> int:
        """How many merges were made so far (some may have added no token)."""
        return self.m_left.size()
