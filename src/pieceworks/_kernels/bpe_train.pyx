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
"""

from cython.operator cimport dereference as deref
from libc.stdint cimport INT64_MAX, UINT64_MAX
from libcpp.algorithm cimport is_sorted, sort, unique

cdef uint64_t NO_OCCURRENCE = UINT64_MAX


cdef inline uint64_t pair_key(uint32_t a, uint32_t b) noexcept nogil:
    return ((<uint64_t>a) << 32) | b


cdef inline bint goes_before(const Entry& x, const Entry& y) noexcept nogil:
    if x.count != y.count:
        return x.count > y.count
    if x.key2 != y.key2:
        return x.key2 < y.key2
    return x.key3 < y.key3


cdef void heap_push(vector[Entry]& heap, Entry entry) noexcept nogil:
    heap.push_back(entry)
    cdef size_t i = heap.size() - 1
    cdef size_t parent
    cdef Entry tmp
    while i > 0:
        parent = (i - 1) >> 1
        if not goes_before(heap[i], heap[parent]):
            break
        tmp = heap[i]
        heap[i] = heap[parent]
        heap[parent] = tmp
        i = parent


cdef Entry heap_pop(vector[Entry]& heap) noexcept nogil:
    cdef Entry top = heap[0]
    cdef Entry last = heap.back()
    heap.pop_back()
    cdef size_t n = heap.size()
    if n == 0:
        return top
    heap[0] = last
    cdef size_t i = 0
    cdef size_t child, best
    cdef Entry tmp
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        best = child
        if child + 1 < n and goes_before(heap[child + 1], heap[child]):
            best = child + 1
        if not goes_before(heap[best], heap[i]):
            break
        tmp = heap[i]
        heap[i] = heap[best]
        heap[best] = tmp
        i = best
    return top


cdef class MergeLearner:
    """The words of a corpus (``{word: count}``) as id arrays, ready to learn merges.

    ``id_to_token``/``token_to_id`` hold the special tokens and the alphabet;
    chars outside them are left out of the words, and marked chars
    (``prefix + char``, ``char + suffix``) are added as first met. Every
    symbol starts as one char wide.

    >>> tokens, ids = ["a", "b"], {"a": 0, "b": 1}
    >>> learner = MergeLearner({"ab": 3, "b": 1}, tokens, ids)
    >>> learner.learn(tokens, ids, vocab_size=3), tokens
    ([(0, 1, 2)], ['a', 'b', 'ab'])
    """

    def __init__(self, counts, list id_to_token, dict token_to_id, prefix=None, suffix=None,
                 max_token_length=None, bint first_seen=False):
        self._add_words(counts, id_to_token, token_to_id, prefix, suffix)
        self.max_width = INT64_MAX if max_token_length is None else max_token_length
        self.first_seen = first_seen
        self.seq = 0

    cdef int _add_words(self, counts, list id_to_token, dict token_to_id, prefix, suffix) except -1:
        """Each word as ids, as Hugging Face's ``tokenize_words`` makes them.

        A char is kept if it is a token (alphabet or special token); it is
        looked up as ``prefix + char`` unless first and ``char + suffix`` if
        last; marked chars new to the vocabulary are added as first met.
        """
        cdef unordered_map[uint64_t, int64_t] memo   # (code point << 2 | marks) -> id, or -1
        cdef unordered_map[uint64_t, int64_t].iterator hit
        cdef bint has_prefix = prefix is not None
        cdef bint has_suffix = suffix is not None
        cdef Py_ssize_t i, n
        cdef Py_UCS4 cp
        cdef uint64_t plain_key, key
        cdef int64_t tid
        cdef Sym sym
        cdef str word
        sym.width = 1
        for word, count in counts.items():
            self.words.push_back(vector[Sym]())
            self.counts.push_back(count)
            n = len(word)
            i = 0
            for cp in word:
                plain_key = (<uint64_t>cp) << 2
                hit = memo.find(plain_key)
                if hit == memo.end():
                    tid = token_to_id.get(cp, -1)
                    memo[plain_key] = tid
                else:
                    tid = deref(hit).second
                if tid >= 0 and (has_prefix or has_suffix):
                    key = plain_key | (1 if has_prefix and i > 0 else 0) | (2 if has_suffix and i == n - 1 else 0)
                    if key != plain_key:
                        hit = memo.find(key)
                        if hit == memo.end():
                            token = (prefix + cp if key & 1 else cp) + (suffix if key & 2 else "")
                            tid = _add_token(token, id_to_token, token_to_id)
                            memo[key] = tid
                        else:
                            tid = deref(hit).second
                if tid >= 0:
                    sym.id = <uint32_t>tid
                    self.words.back().push_back(sym)
                i += 1
        return 0

    # -- bookkeeping -------------------------------------------------------
    cdef int32_t _new_slot(self) noexcept:
        cdef int32_t slot
        if self.free_slots.size():
            slot = self.free_slots.back()
            self.free_slots.pop_back()
            return slot
        self.pool.push_back(vector[int32_t]())
        return <int32_t>(self.pool.size() - 1)

    cdef void _free_slot(self, int32_t slot) noexcept:
        self.pool[slot].clear()
        self.free_slots.push_back(slot)

    cdef void _note_gain(self, uint64_t pair, int32_t w, uint64_t occ) noexcept:
        """Remember that ``pair`` gained an occurrence in word ``w`` this step."""
        cdef vector[int32_t]* words
        cdef unordered_map[uint64_t, int32_t].iterator it = self.step_slots.find(pair)
        cdef unordered_map[uint64_t, uint64_t].iterator bound_it
        if it == self.step_slots.end():
            self.step_slots[pair] = self._new_slot() if not self.first_seen else 0
            self.step_pairs.push_back(pair)
        if self.first_seen:
            bound_it = self.first_bound.find(pair)
            if bound_it == self.first_bound.end():
                self.first_bound[pair] = occ
            elif occ < deref(bound_it).second:
                deref(bound_it).second = occ
        else:
            words = &self.pool[self.step_slots[pair]]
            if words.empty() or words.back() != w:
                words.push_back(w)

    cdef void _count_initial_pairs(self) noexcept:
        cdef size_t w, i
        cdef uint64_t pair, occ
        cdef int64_t start
        cdef vector[int32_t]* seen_in
        for w in range(self.words.size()):
            start = 0
            for i in range(self.words[w].size() - 1 if self.words[w].size() else 0):
                pair = pair_key(self.words[w][i].id, self.words[w][i + 1].id)
                occ = ((<uint64_t>w) << 32) | <uint64_t>start
                start += self.words[w][i].width
                if self.first_seen:
                    seen_in = &self.pair_words[pair]
                    if seen_in.empty() or seen_in.back() != <int32_t>w:
                        seen_in.push_back(<int32_t>w)
                    if self.words[w][i].width + self.words[w][i + 1].width > self.max_width:
                        continue
                # Hugging Face counts every initial pair, whatever max_token_length says.
                self.pair_counts[pair] += self.counts[w]
                self._note_gain(pair, <int32_t>w, occ)
        self._push_step_pairs()

    cdef void _push_step_pairs(self) noexcept:
        """Push an entry for every pair that gained occurrences in this step."""
        cdef Entry entry
        cdef int64_t count
        cdef uint64_t pair
        for pair in self.step_pairs:
            count = self.pair_counts[pair]
            entry.count = <uint64_t>count
            if self.first_seen:
                if count > 0:
                    entry.key2 = self.first_bound[pair]
                    entry.key3 = pair
                    entry.slot = -1
                    heap_push(self.heap, entry)
            elif count > 0:
                entry.key2 = pair
                entry.key3 = self.seq
                self.seq += 1
                entry.slot = self.step_slots[pair]
                heap_push(self.heap, entry)
            else:
                self._free_slot(self.step_slots[pair])
        self.step_pairs.clear()
        self.step_slots.clear()

    # -- merging one word ----------------------------------------------------
    cdef void _merge_word_hf(self, int32_t w, uint32_t a, uint32_t b, uint32_t new_id) noexcept:
        """Hugging Face's ``Word::merge``: merge left to right, report neighbour changes."""
        cdef vector[Sym]* sy = &self.words[w]
        cdef int64_t n = self.counts[w]
        cdef size_t i = 0
        cdef Sym first, second, merged
        while i < sy.size():
            if sy[0][i].id == a and i + 1 < sy.size() and sy[0][i + 1].id == b:
                first = sy[0][i]
                second = sy[0][i + 1]
                merged.id = new_id
                merged.width = first.width + second.width
                if i > 0:
                    self.pair_counts[pair_key(sy[0][i - 1].id, a)] -= n
                    if sy[0][i - 1].width + merged.width < self.max_width:
                        self.pair_counts[pair_key(sy[0][i - 1].id, new_id)] += n
                        self._note_gain(pair_key(sy[0][i - 1].id, new_id), w, 0)
                sy[0][i] = merged
                sy.erase(sy.begin() + i + 1)
                if i + 1 < sy.size():
                    self.pair_counts[pair_key(b, sy[0][i + 1].id)] -= n
                    if sy[0][i + 1].width + merged.width < self.max_width:
                        self.pair_counts[pair_key(new_id, sy[0][i + 1].id)] += n
                        self._note_gain(pair_key(new_id, sy[0][i + 1].id), w, 0)
            i += 1

    cdef void _merge_word_exact(self, int32_t w, uint32_t a, uint32_t b, uint32_t new_id) noexcept:
        """Merge left to right, keeping every pair count exact."""
        cdef vector[Sym]* sy = &self.words[w]
        cdef int64_t n = self.counts[w]
        cdef int64_t limit = self.max_width
        cdef uint64_t word_key = (<uint64_t>w) << 32
        cdef uint64_t pair
        cdef size_t i = 0
        cdef int64_t start = 0
        cdef Sym x, y, p, nxt, merged
        cdef vector[int32_t]* seen_in
        while i + 1 < sy.size():
            x = sy[0][i]
            y = sy[0][i + 1]
            if x.id == a and y.id == b:
                merged.id = new_id
                merged.width = x.width + y.width
                if i > 0:
                    p = sy[0][i - 1]
                    if p.width + x.width <= limit:
                        self.pair_counts[pair_key(p.id, a)] -= n
                    pair = pair_key(p.id, new_id)
                    seen_in = &self.pair_words[pair]
                    if seen_in.empty() or seen_in.back() != w:
                        seen_in.push_back(w)
                    if p.width + merged.width <= limit:
                        self.pair_counts[pair] += n
                        self._note_gain(pair, w, word_key | <uint64_t>(start - p.width))
                if merged.width <= limit:
                    self.pair_counts[pair_key(a, b)] -= n
                if i + 2 < sy.size():
                    nxt = sy[0][i + 2]
                    if y.width + nxt.width <= limit:
                        self.pair_counts[pair_key(b, nxt.id)] -= n
                    pair = pair_key(new_id, nxt.id)
                    seen_in = &self.pair_words[pair]
                    if seen_in.empty() or seen_in.back() != w:
                        seen_in.push_back(w)
                    if merged.width + nxt.width <= limit:
                        self.pair_counts[pair] += n
                        self._note_gain(pair, w, word_key | <uint64_t>start)
                sy[0][i] = merged
                sy.erase(sy.begin() + i + 1)
            start += sy[0][i].width
            i += 1

    cdef uint64_t _first_occurrence(self, uint64_t pair) noexcept:
        """The first countable occurrence of ``pair`` (word << 32 | char); prunes its word list."""
        cdef vector[int32_t]* ws = &self.pair_words[pair]
        cdef uint32_t a = <uint32_t>(pair >> 32)
        cdef uint32_t b = <uint32_t>(pair & 0xFFFFFFFF)
        cdef uint64_t found = NO_OCCURRENCE
        cdef size_t k, i, kept = 0
        cdef int32_t w
        cdef int64_t start
        cdef bint present
        cdef vector[Sym]* sy
        if not is_sorted(ws.begin(), ws.end()):
            sort(ws.begin(), ws.end())
        ws.resize(unique(ws.begin(), ws.end()) - ws.begin())
        for k in range(ws.size()):
            w = ws[0][k]
            if found != NO_OCCURRENCE:
                ws[0][kept] = w
                kept += 1
                continue
            sy = &self.words[w]
            present = False
            start = 0
            for i in range(sy.size() - 1 if sy.size() else 0):
                if sy[0][i].id == a and sy[0][i + 1].id == b:
                    present = True
                    if sy[0][i].width + sy[0][i + 1].width <= self.max_width:
                        found = ((<uint64_t>w) << 32) | <uint64_t>start
                        break
                start += sy[0][i].width
            if present:
                ws[0][kept] = w
                kept += 1
        ws.resize(kept)
        return found

    # -- the loop ------------------------------------------------------------
    def learn(self, list id_to_token, dict token_to_id, Py_ssize_t vocab_size, min_frequency=0,
              prefix=None, progress=None):
        """Merge until ``len(id_to_token) >= vocab_size``; return ``[(left, right, new_id)]``.

        New tokens are appended to ``id_to_token`` and ``token_to_id``;
        a merge that makes an existing token reuses its id. ``progress``,
        if given, is called with the number of merges so far every 256
        merges and at the end.
        """
        cdef uint64_t min_count = max(min_frequency, 1)
        cdef Entry top
        cdef int64_t current
        cdef uint64_t occ, pair
        cdef uint32_t a, b, new_id
        cdef vector[int32_t] words
        cdef size_t k
        cdef list merges = []
        self._count_initial_pairs()
        while len(id_to_token) < vocab_size and not self.heap.empty():
            top = heap_pop(self.heap)
            pair = top.key3 if self.first_seen else top.key2
            current = self.pair_counts[pair]
            if self.first_seen:
                if current <= 0:
                    continue  # the pair is gone
                if <uint64_t>current != top.count:
                    top.count = <uint64_t>current
                    top.key2 = self.first_bound[pair]
                    heap_push(self.heap, top)
                    continue
                if top.count < min_count:
                    break
                occ = self._first_occurrence(pair)
                if occ != top.key2:
                    self.first_bound[pair] = occ
                    top.key2 = occ
                    heap_push(self.heap, top)
                    continue
                words.swap(self.pair_words[pair])
            else:
                # As Hugging Face: compare as unsigned, so a negative count
                # (possible with max_token_length) looks huge.
                if top.count != <uint64_t>current:
                    top.count = <uint64_t>current
                    top.key3 = self.seq
                    self.seq += 1
                    heap_push(self.heap, top)
                    continue
                if top.count < min_count:
                    break
                words.swap(self.pool[top.slot])
                self._free_slot(top.slot)

            a = <uint32_t>(pair >> 32)
            b = <uint32_t>(pair & 0xFFFFFFFF)
            new_id = <uint32_t>_token_id_for(id_to_token, token_to_id, a, b, prefix)
            merges.append((a, b, new_id))
            for k in range(words.size()):
                if self.first_seen:
                    self._merge_word_exact(words[k], a, b, new_id)
                else:
                    self._merge_word_hf(words[k], a, b, new_id)
            words.clear()
            self._push_step_pairs()
            if progress is not None and len(merges) % 256 == 0:
                progress(len(merges))
        if progress is not None:
            progress(len(merges))
        return merges

    def word_ids(self, Py_ssize_t w):
        """The current ids of word ``w`` (for tests and inspection)."""
        return [s.id for s in self.words[w]]


cdef int64_t _add_token(str token, list id_to_token, dict token_to_id) except -1:
    """The id of ``token``, appended to the vocabulary if new."""
    found = token_to_id.get(token)
    if found is not None:
        return found
    new_id = len(id_to_token)
    id_to_token.append(token)
    token_to_id[token] = new_id
    return new_id


def char_counts(counts):
    """``[(char, total count)]`` over every word, in first-seen order.

    >>> char_counts({"aba": 2, "c": 1})
    [('a', 4), ('b', 2), ('c', 1)]
    """
    cdef unordered_map[uint32_t, size_t] index
    cdef unordered_map[uint32_t, size_t].iterator hit
    cdef vector[uint32_t] chars
    cdef vector[int64_t] totals
    cdef Py_UCS4 cp
    cdef int64_t n
    cdef str word
    for word, count in counts.items():
        n = count
        for cp in word:
            hit = index.find(cp)
            if hit == index.end():
                index[cp] = chars.size()
                chars.push_back(cp)
                totals.push_back(n)
            else:
                totals[deref(hit).second] += n
    return [(chr(chars[i]), totals[i]) for i in range(chars.size())]


cdef int64_t _token_id_for(list id_to_token, dict token_to_id, uint32_t a, uint32_t b, prefix) except -1:
    """The id of ``a`` + ``b`` (the right part's continuing prefix removed), added if new."""
    cdef str left = id_to_token[a]
    cdef str right = id_to_token[b]
    if prefix is not None and right.startswith(prefix):
        right = right[len(prefix):]
    return _add_token(left + right, id_to_token, token_to_id)
