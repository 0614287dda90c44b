# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# distutils: language = c++
"""The parity-aware BPE training loop in C++ containers: :mod:`pieceworks.reference.parity_bpe`,
step for step (its tests compare the two), without a Python object per word, pair or heap entry.

Per language: the words as id vectors (with each symbol's width in chars),
the pair counts, for each pair the words that held it, and a max-heap of
``(count, pair)`` with lazy invalidation, ordered by count and then by the
pair's token strings, larger first (UTF-8 bytes compare in code-point
order). The dev words keep, for each pair, the words that hold it, so a
merge visits only those (Hugging Face's trainer scans them all).

>>> tokens, ids = ["a", "b", "c", "d"], {"a": 0, "b": 1, "c": 2, "d": 3}
>>> merges, stuck = learn_parity([{"aabb": 10}, {"ccdd": 10}], [], tokens, ids, None, None, num_merges=6,
...                              min_frequency=1)
>>> [tokens[a] + " " + tokens[b] for a, b, _ in merges], stuck
(['b b', 'd d', 'a bb', 'c dd', 'a abb', 'c cdd'], 0)
"""

from cython.operator cimport dereference as deref, preincrement as inc
from libc.math cimport INFINITY, NAN
from libc.stdint cimport INT64_MAX, int64_t, uint32_t, uint64_t
from libcpp cimport bool as cbool
from libcpp.deque cimport deque
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.unordered_set cimport unordered_set
from libcpp.utility cimport pair as cpair
from libcpp.vector cimport vector


cdef struct Entry:
    int64_t count
    uint32_t a
    uint32_t b


cdef cppclass Language:
    vector[vector[uint32_t]] words
    vector[vector[int64_t]] widths      # chars under each symbol
    vector[int64_t] counts
    unordered_map[uint64_t, int64_t] pair_counts
    unordered_map[uint64_t, vector[uint32_t]] where    # pair -> words that held it (repeats harmless)
    vector[Entry] heap


cdef inline uint64_t key_of(uint32_t a, uint32_t b) noexcept nogil:
    return ((<uint64_t>a) << 32) | b


cdef inline uint32_t left_of(uint64_t key) noexcept nogil:
    return <uint32_t>(key >> 32)


cdef inline uint32_t right_of(uint64_t key) noexcept nogil:
    return <uint32_t>key


cdef inline int64_t count_of(unordered_map[uint64_t, int64_t]& counts, uint64_t key) noexcept nogil:
    cdef unordered_map[uint64_t, int64_t].iterator hit = counts.find(key)
    return 0 if hit == counts.end() else deref(hit).second


cdef class _Learner:
    """The state of one training run (see :func:`learn_parity`)."""

    cdef vector[string] tokens          # UTF-8, by id
    cdef unordered_map[string, uint32_t] ids
    cdef vector[Language] langs
    cdef Language glob
    cdef vector[vector[uint32_t]] dev_words
    cdef vector[vector[int64_t]] dev_freqs
    cdef unordered_map[uint64_t, vector[uint32_t]] dev_holding
    cdef int n

    # -- the heap: larger count first, then the larger (left, right) strings ------------
    cdef inline bint before(self, const Entry& x, const Entry& y) noexcept:
        cdef int order
        if x.count != y.count:
            return x.count > y.count
        order = self.tokens[x.a].compare(self.tokens[y.a])
        if order != 0:
            return order > 0
        return self.tokens[x.b].compare(self.tokens[y.b]) > 0

    cdef void push(self, vector[Entry]& heap, int64_t count, uint32_t a, uint32_t b) noexcept:
        cdef Entry entry
        cdef size_t i = heap.size(), parent
        entry.count, entry.a, entry.b = count, a, b
        heap.push_back(entry)
        while i > 0:
            parent = (i - 1) >> 1
            if not self.before(entry, heap[parent]):
                break
            heap[i] = heap[parent]
            i = parent
        heap[i] = entry

    cdef Entry pop(self, vector[Entry]& heap) noexcept:
        cdef Entry top = heap[0], last = heap.back()
        cdef size_t i = 0, child, n
        heap.pop_back()
        n = heap.size()
        if n == 0:
            return top
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and self.before(heap[child + 1], heap[child]):
                child += 1
            if not self.before(heap[child], last):
                break
            heap[i] = heap[child]
            i = child
        heap[i] = last
        return top

    cdef bint pop_best(self, Language& lang, Entry* best) noexcept:
        """The pair with the highest current count into ``best``; False if none is left."""
        cdef Entry top
        cdef int64_t current
        while lang.heap.size():
            top = self.pop(lang.heap)
            current = count_of(lang.pair_counts, key_of(top.a, top.b))
            if current <= 0:
                continue
            if current != top.count:
                self.push(lang.heap, current, top.a, top.b)
                continue
            best[0] = top
            return True
        return False

    # -- words -------------------------------------------------------------------------
    cdef uint32_t add_token(self, str token, list tokens, dict ids):
        cdef object known = ids.get(token)
        cdef string utf8
        if known is not None:
            return known
        utf8 = token.encode("utf-8")
        ids[token] = len(tokens)
        tokens.append(token)
        self.ids[utf8] = self.tokens.size()
        self.tokens.push_back(utf8)
        return self.tokens.size() - 1

    cdef void count_pairs(self, Language& lang) noexcept:
        cdef size_t w, i
        cdef uint64_t key
        cdef unordered_map[uint64_t, int64_t].iterator it
        for w in range(lang.words.size()):
            for i in range(1, lang.words[w].size()):
                key = key_of(lang.words[w][i - 1], lang.words[w][i])
                lang.pair_counts[key] += lang.counts[w]
                lang.where[key].push_back(<uint32_t>w)
        it = lang.pair_counts.begin()
        while it != lang.pair_counts.end():
            if deref(it).second > 0:
                self.push(lang.heap, deref(it).second, left_of(deref(it).first), right_of(deref(it).first))
            inc(it)

    cdef void note(self, Language& lang, uint32_t a, uint32_t b, int change, size_t w,
                   vector[uint64_t]& changed) noexcept:
        cdef uint64_t key = key_of(a, b)
        lang.pair_counts[key] += change * lang.counts[w]
        if change > 0:
            lang.where[key].push_back(<uint32_t>w)
        changed.push_back(key)

    cdef int64_t apply_merge(self, Language& lang, uint32_t a, uint32_t b, uint32_t new, int64_t max_length,
                             vector[uint64_t]& changed) noexcept:
        """Merge (a, b) in the words that held it, as Hugging Face's ``Word::merge``: the tokens saved."""
        cdef uint64_t key = key_of(a, b)
        cdef unordered_map[uint64_t, vector[uint32_t]].iterator hit = lang.where.find(key)
        cdef vector[uint32_t] positions
        cdef size_t k, i, w, before
        cdef int64_t width, shorter = 0
        if hit == lang.where.end():
            return 0
        positions.swap(deref(hit).second)
        lang.where.erase(hit)
        for k in range(positions.size()):
            w = positions[k]
            before = lang.words[w].size()
            i = 0
            while i < lang.words[w].size():
                if (lang.words[w][i] == a and i + 1 < lang.words[w].size() and lang.words[w][i + 1] == b):
                    width = lang.widths[w][i] + lang.widths[w][i + 1]
                    if i > 0:
                        self.note(lang, lang.words[w][i - 1], a, -1, w, changed)
                        if lang.widths[w][i - 1] + width < max_length:
                            self.note(lang, lang.words[w][i - 1], new, 1, w, changed)
                    lang.words[w][i] = new
                    lang.widths[w][i] = width
                    lang.words[w].erase(lang.words[w].begin() + i + 1)
                    lang.widths[w].erase(lang.widths[w].begin() + i + 1)
                    if i + 1 < lang.words[w].size():
                        self.note(lang, b, lang.words[w][i + 1], -1, w, changed)
                        if lang.widths[w][i + 1] + width < max_length:
                            self.note(lang, new, lang.words[w][i + 1], 1, w, changed)
                i += 1
            shorter += <int64_t>(before - lang.words[w].size()) * lang.counts[w]
        lang.pair_counts[key] = 0
        return shorter

    cdef void merge_dev(self, uint32_t a, uint32_t b, uint32_t new, vector[double]& lengths) noexcept:
        cdef uint64_t key = key_of(a, b)
        cdef unordered_map[uint64_t, vector[uint32_t]].iterator hit = self.dev_holding.find(key)
        cdef vector[uint32_t] holding
        cdef vector[uint32_t] merged
        cdef unordered_set[uint32_t] seen
        cdef size_t k, i, w, n, old
        cdef int language
        if hit == self.dev_holding.end():
            return
        holding = deref(hit).second
        for k in range(holding.size()):
            w = holding[k]
            if not seen.insert(w).second:
                continue
            n = self.dev_words[w].size()
            merged.clear()
            i = 0
            while i < n:
                if i + 1 < n and self.dev_words[w][i] == a and self.dev_words[w][i + 1] == b:
                    merged.push_back(new)
                    i += 2
                else:
                    merged.push_back(self.dev_words[w][i])
                    i += 1
            if merged.size() == n:
                continue
            for language in range(self.n):
                lengths[language] -= <double>(n - merged.size()) * self.dev_freqs[w][language]
            self.dev_words[w].swap(merged)
            for i in range(1, self.dev_words[w].size()):
                self.dev_holding[key_of(self.dev_words[w][i - 1], self.dev_words[w][i])].push_back(<uint32_t>w)


def _marked(str char, bint first, bint last, prefix, suffix) -> str:
    if prefix is not None and not first:
        char = prefix + char
    if suffix is not None and last:
        char = char + suffix
    return char


cdef void _tokenize(_Learner learner, Language& lang, words, list tokens, dict ids, prefix, suffix) except *:
    """Each word as the ids of its chars (a char outside the vocabulary left out); marked chars
    join the vocabulary as first met."""
    cdef str word, char
    cdef Py_ssize_t i, n
    cdef vector[uint32_t] symbols
    cdef vector[int64_t] widths
    for word, count in words.items():
        symbols.clear()
        n = len(word)
        for i in range(n):
            char = word[i]
            if char not in ids:
                continue
            symbols.push_back(learner.add_token(_marked(char, i == 0, i == n - 1, prefix, suffix), tokens, ids))
        widths.assign(symbols.size(), 1)
        lang.words.push_back(symbols)
        lang.widths.push_back(widths)
        lang.counts.push_back(count)


cdef double _worse(double start, double now, double target, bint with_ratio) noexcept:
    """How badly off a language is: its length in tokens, or its compression against ``target``
    negated (IEEE division: no tokens left gives inf or nan)."""
    cdef double rate
    if not with_ratio:
        return now
    if now == 0:
        rate = NAN if start == 0 else INFINITY
    else:
        rate = start / now
    return -(rate / target)


def learn_parity(list languages, list dev, list tokens, dict ids, prefix, suffix, *, int64_t num_merges,
                 bint window=False, int64_t min_frequency=0, ratio=None, int64_t global_merges=0,
                 int64_t window_size=100, double alpha=2.0, bint total_symbols=False, max_token_length=None,
                 on_merge=None):
    """Parity-aware BPE merges as :func:`pieceworks.reference.parity_bpe.train_parity_bpe` makes them.

    ``tokens`` / ``ids``: the starting vocabulary (special tokens, alphabet),
    extended in place by the marked chars and the merged tokens. Returns
    ``(merges, stuck_choices)``, each merge ``(left, right, new)`` ids.
    """
    cdef _Learner learner = _Learner()
    cdef int n = len(languages), k, chosen, best_k
    cdef size_t i, w
    cdef vector[double] start, lengths, worse
    cdef vector[cbool] out, open_
    cdef deque[int] recent
    cdef vector[uint64_t] changed
    cdef unordered_set[uint64_t] changed_anywhere
    cdef unordered_set[uint64_t].iterator pit
    cdef Entry best
    cdef bint use_dev = bool(dev) and ratio is None, with_ratio = ratio is not None, found, stuck
    cdef int64_t max_length = INT64_MAX if max_token_length is None else max_token_length
    cdef int64_t made = 0, stuck_choices = 0, shorter, total, count
    cdef double threshold = alpha / n, value, best_value
    cdef vector[double] targets
    cdef uint32_t new, a, b
    cdef string part_a, part_b, joined
    cdef bytes prefix_utf8 = b"" if prefix is None else prefix.encode("utf-8")
    cdef uint64_t key
    cdef str token
    cdef bytes joined_utf8
    cdef Language* target_lang
    cdef cpair[uint64_t, int64_t] item
    merges = []
    for token in tokens:
        learner.ids[token.encode("utf-8")] = learner.tokens.size()
        learner.tokens.push_back(token.encode("utf-8"))
    learner.n = n
    learner.langs.resize(n)
    for k in range(n):
        _tokenize(learner, learner.langs[k], languages[k], tokens, ids, prefix, suffix)
        learner.count_pairs(learner.langs[k])
        value = 0
        for w in range(learner.langs[k].words.size()):
            value += <double>learner.langs[k].words[w].size() * learner.langs[k].counts[w]
        start.push_back(value)
    lengths = start
    if with_ratio:
        for k in range(n):
            targets.push_back(ratio[k])
    _dev_words(learner, dev, n, ids, prefix, suffix)
    if use_dev:
        lengths.assign(n, 0)
        for w in range(learner.dev_words.size()):
            for k in range(n):
                lengths[k] += <double>learner.dev_words[w].size() * learner.dev_freqs[w][k]
    if global_merges > 0:
        for k in range(n):
            for item in learner.langs[k].pair_counts:
                if item.second > 0:
                    learner.glob.pair_counts[item.first] += item.second
        for item in learner.glob.pair_counts:
            if item.second > 0:
                learner.push(learner.glob.heap, item.second, left_of(item.first), right_of(item.first))
    if total_symbols:
        num_merges = max(0, num_merges - <int64_t>learner.tokens.size())
    out.assign(n, False)
    cdef int n_out = 0
    while made < num_merges and n_out < n:
        # -- the language to merge for ------------------------------------------------
        if made < global_merges:
            chosen = -1
        else:
            stuck = False
            worse.assign(n, 0)
            found = False
            for k in range(n):
                worse[k] = _worse(start[k], lengths[k], targets[k] if with_ratio else 1.0, with_ratio)
                found = found or (not out[k] and worse[k] > -INFINITY)
            if not found:       # (the languages left have no tokens: see the reference)
                stuck_choices += 1
                break
            if not window:
                chosen, best_value = 0, -INFINITY
                for k in range(n):
                    if not out[k] and worse[k] > best_value:
                        chosen, best_value = k, worse[k]
            else:
                for k in range(n):
                    if out[k]:
                        worse[k] = -INFINITY
                open_.assign(n, True)
                while True:
                    best_k, best_value = 0, -INFINITY
                    for k in range(n):
                        if open_[k] and worse[k] > best_value:
                            best_k, best_value = k, worse[k]
                    if not open_[best_k]:
                        stuck = True
                        for k in range(n):
                            if open_[k]:
                                best_k = k
                                break
                    count = 0
                    for i in range(recent.size()):
                        count += recent[i] == best_k
                    if <double>count / window_size <= threshold:
                        break
                    open_[best_k] = False
                    found = False
                    for k in range(n):
                        found = found or open_[k]
                    if not found:
                        break
                stuck_choices += stuck
                chosen = best_k
                recent.push_back(chosen)
                if <int64_t>recent.size() > window_size:
                    recent.pop_front()
        # -- its best pair ------------------------------------------------------------
        target_lang = &learner.glob if chosen < 0 else &learner.langs[chosen]
        found = learner.pop_best(target_lang[0], &best)
        if not found or best.count < min_frequency:
            if chosen < 0:
                break
            if not out[chosen]:
                out[chosen] = True
                n_out += 1
            continue
        part_a = learner.tokens[best.a]
        part_b = learner.tokens[best.b]
        if prefix is not None and part_b.compare(0, len(prefix_utf8), <string>prefix_utf8) == 0:
            part_b = part_b.substr(len(prefix_utf8))
        joined = part_a + part_b
        if learner.ids.count(joined):
            new = learner.ids[joined]
        else:
            joined_utf8 = joined
            new = learner.add_token(joined_utf8.decode("utf-8"), tokens, ids)
        a, b = best.a, best.b
        merges.append((a, b, new))
        made += 1
        changed_anywhere.clear()
        changed_anywhere.insert(key_of(a, b))
        for k in range(n):
            changed.clear()
            shorter = learner.apply_merge(learner.langs[k], a, b, new, max_length, changed)
            for i in range(changed.size()):
                count = count_of(learner.langs[k].pair_counts, changed[i])
                if count > 0:
                    learner.push(learner.langs[k].heap, count, left_of(changed[i]), right_of(changed[i]))
                if global_merges > 0:
                    changed_anywhere.insert(changed[i])
            if not use_dev:
                lengths[k] -= shorter
        if global_merges > 0:
            pit = changed_anywhere.begin()
            while pit != changed_anywhere.end():
                key = deref(pit)
                total = 0
                for k in range(n):
                    total += count_of(learner.langs[k].pair_counts, key)
                total = max(total, 0)
                learner.glob.pair_counts[key] = total
                if total > 0:
                    learner.push(learner.glob.heap, total, left_of(key), right_of(key))
                inc(pit)
        if use_dev:
            learner.merge_dev(a, b, new, lengths)
        if on_merge is not None:
            on_merge()
    return merges, stuck_choices


cdef void _dev_words(_Learner learner, list dev, int n, dict ids, prefix, suffix) except *:
    """The dev words as ids (a word with a char, or marked char, outside the vocabulary left out,
    and marked chars not added), each with its count in each language."""
    cdef str word, char
    cdef Py_ssize_t i, length
    cdef vector[uint32_t] symbols
    cdef unordered_map[string, uint32_t] index
    cdef string packed
    cdef uint32_t w
    cdef int language
    cdef bint valid
    for language in range(len(dev)):
        for word, count in dev[language].items():
            symbols.clear()
            valid = True
            length = len(word)
            for i in range(length):
                char = word[i]
                tid = ids.get(_marked(char, i == 0, i == length - 1, prefix, suffix)) if char in ids else None
                if tid is None:
                    valid = False
                    break
                symbols.push_back(tid)
            if not valid or symbols.size() == 0:
                continue
            packed = string(<char*>symbols.data(), symbols.size() * sizeof(uint32_t))
            if index.count(packed) == 0:
                w = learner.dev_words.size()
                index[packed] = w
                learner.dev_words.push_back(symbols)
                learner.dev_freqs.push_back(vector[int64_t](n, 0))
                for i in range(1, symbols.size()):
                    learner.dev_holding[key_of(symbols[i - 1], symbols[i])].push_back(w)
            learner.dev_freqs[index[packed]][language] += count
