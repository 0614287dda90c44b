"""Parity-aware BPE training (Foroutan et al., 2025), the way Hugging Face's ``ParityBpeTrainer`` runs it.

Plain BPE merges the pair most frequent in the whole corpus, so the
language with the most text gets the most merges and the others are left
with long tokenizations. Parity-aware BPE keeps one corpus per language and,
before each merge, picks the language that is worst off; the merge is that
language's most frequent pair, and it is applied to every language.

Which language is worst off:

* with a development set (ideally the same sentences in each language):
  the one whose dev text is longest in tokens;
* with ``ratio`` targets instead: the one whose compression so far
  (chars at the start / tokens now, on its training words), divided by its
  target, is lowest;
* with neither: the one whose training words are longest in tokens.

``variant="window"`` keeps the last ``window_size`` choices and passes over a
language that had more than ``alpha / languages`` of them.
Two states where Hugging Face's trainer may never end are ended here
(``ParityResult.stuck_choices`` counts them): a window choice where every
language left has dropped out and language 0 was passed over (the first
language left is taken, and the window moves on: see ``_choose_in_window``),
and a ``ratio`` choice where no language left has a token (training ends:
no pair is left).
``total_symbols`` takes the size of the starting vocabulary (special
tokens, alphabet, marked chars) off ``num_merges``, as tokenizers 0.23.3
does (the subword-nmt option it is named after counts the chars seen
inside words plus those seen ending one).
``global_merges`` first merges that many pairs by their count over all
languages, as plain BPE does. A language whose best pair is rarer than
``min_frequency`` (or that has none) drops out; training ends after
``num_merges`` merges or when every language has dropped out.

Ties: the pair with the larger ``(left, right)`` strings (Python's
``max((count, pair))``), the language with the smaller index.

The bookkeeping is the incremental one of Hugging Face's trainer, quirks
included, because the results depend on it: each merge only visits the
words that hold the pair; a merged pair's count is set to 0; with
``max_token_length``, a pair made by a merge counts only if its token would
be *shorter* than the limit (while every pair of the starting words counts,
and a pair that was never counted still loses its count when a neighbour
merges, so counts can go below 0 and such pairs are never chosen).

>>> result = train_parity_bpe([{"aabb": 10}, {"ccdd": 10}], num_merges=6, min_frequency=1)
>>> [" ".join(m) for m in result.merges]
['b b', 'd d', 'a bb', 'c dd', 'a abb', 'c cdd']
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from .wordpiece import merge_pair

__all__ = ["ParityResult", "train_parity_bpe", "VARIANTS"]

VARIANTS = ("base", "window")

Pair = tuple[int, int]


@dataclass
class ParityResult:
    """The vocabulary in id order and the merges (as token strings), in the order made."""

    vocab: list[str]
    merges: list[tuple[str, str]]
    merge_ids: list[tuple[int, int, int]] = field(default_factory=list)   # (left, right, new) ids
    #: Window choices where Hugging Face's trainer would loop forever (see _choose_in_window).
    stuck_choices: int = 0


@dataclass
class _Language:
    """One language's training words as symbol ids, with their pair counts."""

    words: list[list[int]]
    widths: list[list[int]]          # chars under each symbol
    counts: list[int]
    pair_counts: dict = field(default_factory=dict)
    where: dict = field(default_factory=dict)       # pair -> indices of words that held it
    heap: list = field(default_factory=list)


def _larger_first(token: str) -> tuple[int, ...]:
    """A key that sorts larger strings first: the chars' code points negated, then 1 (so a string
    comes after the longer strings it starts).

    >>> sorted(["a", "ab", "b"], key=_larger_first)
    ['b', 'ab', 'a']
    """
    return (*(-ord(char) for char in token), 1)


class _Vocab:
    def __init__(self):
        self.tokens: list[str] = []
        self.ids: dict[str, int] = {}
        self.keys: list[tuple[int, ...]] = []       # _larger_first of each token

    def add(self, token: str) -> int:
        if token not in self.ids:
            self.ids[token] = len(self.tokens)
            self.tokens.append(token)
            self.keys.append(_larger_first(token))
        return self.ids[token]

    def entry(self, pair: Pair, count: int) -> tuple:
        """A heap entry: heapq pops the highest count first, then the larger ``(left, right)``."""
        return -count, self.keys[pair[0]], self.keys[pair[1]], pair


def train_parity_bpe(languages: Sequence[Mapping[str, int]], dev: Sequence[Mapping[str, int]] = (), *,
                     num_merges: int = 32000, variant: str = "base", min_frequency: int = 0,
                     ratio: Sequence[float] | None = None, global_merges: int = 0, window_size: int = 100,
                     alpha: float = 2.0, total_symbols: bool = False, special_tokens: Iterable[str] = (),
                     alphabet: Iterable[str] | None = None, prefix: str | None = None,
                     suffix: str | None = None, max_token_length: int | None = None,
                     on_merge=None) -> ParityResult:
    """Learn parity-aware BPE merges from one ``{word: count}`` per language (and, optionally, one
    dev ``{word: count}`` per language); see the module docstring.

    ``alphabet``: the starting chars (default: every char of the train and dev
    words, in code-point order); ``prefix`` / ``suffix``: Hugging Face's
    ``continuing_subword_prefix`` / ``end_of_word_suffix``.
    """
    vocab = _Vocab()
    for token in special_tokens:
        vocab.add(token)
    if alphabet is None:
        alphabet = sorted({char for words in (*languages, *dev) for word in words for char in word})
    for char in alphabet:
        vocab.add(char)
    langs = [_tokenize_language(words, vocab, prefix, suffix) for words in languages]
    for lang in langs:
        _count_pairs(lang, vocab)
    dev_words, dev_lengths = _dev_words(dev, len(langs), vocab, prefix, suffix)
    use_dev, use_ratio = bool(dev) and ratio is None, ratio is not None
    start = [float(sum(len(w) * c for w, c in zip(lang.words, lang.counts))) for lang in langs]
    lengths: list[float] = list(start) if not use_dev else dev_lengths
    glob = _Language([], [], [])
    if global_merges > 0:
        for lang in langs:
            for pair, count in lang.pair_counts.items():
                if count > 0:
                    glob.pair_counts[pair] = glob.pair_counts.get(pair, 0) + count
        glob.heap = [vocab.entry(pair, count) for pair, count in glob.pair_counts.items() if count > 0]
        heapq.heapify(glob.heap)
    if total_symbols:   # (as tokenizers 0.23.3: less every token there is before the first merge)
        num_merges = max(0, num_merges - len(vocab.tokens))
    max_length = math.inf if max_token_length is None else max_token_length
    recent: deque[int] = deque()
    exhausted: set[int] = set()
    merges: list[tuple[int, int, int]] = []
    stuck_choices = 0
    while len(merges) < num_merges and len(exhausted) < len(langs):
        if len(merges) < global_merges:
            chosen = -1
        else:
            chosen, stuck = _choose_language(lengths, start, ratio, exhausted, variant, recent, window_size,
                                             alpha / len(langs))
            stuck_choices += stuck
            if chosen is None:
                break
        best = _pop_best(glob if chosen < 0 else langs[chosen], vocab)
        if best is None or best[1] < min_frequency:
            if chosen < 0:
                break
            exhausted.add(chosen)
            continue
        pair = best[0]
        a, b = vocab.tokens[pair[0]], vocab.tokens[pair[1]]
        if prefix is not None and b.startswith(prefix):
            b = b[len(prefix):]
        new = vocab.add(a + b)
        merges.append((pair[0], pair[1], new))
        changed_anywhere: set[Pair] = {pair}
        for k, lang in enumerate(langs):
            shorter, changed = _apply_merge(lang, pair, new, max_length)
            for p in changed:
                count = lang.pair_counts.get(p, 0)
                if count > 0:
                    heapq.heappush(lang.heap, vocab.entry(p, count))
            changed_anywhere.update(changed)
            if not use_dev:
                lengths[k] -= shorter
        if global_merges > 0:
            for p in changed_anywhere:
                total = max(0, sum(lang.pair_counts.get(p, 0) for lang in langs))
                glob.pair_counts[p] = total
                if total > 0:
                    heapq.heappush(glob.heap, vocab.entry(p, total))
        if use_dev:
            for k, shorter in enumerate(dev_words.merge(pair, new)):
                lengths[k] -= shorter
        if on_merge is not None:
            on_merge()
    return ParityResult(vocab.tokens, [(vocab.tokens[a], vocab.tokens[b]) for a, b, _ in merges], merges,
                        stuck_choices)


def _marked(char: str, first: bool, last: bool, prefix: str | None, suffix: str | None) -> str:
    """``char`` as a word's symbol: the prefix unless first, the suffix if last."""
    if prefix is not None and not first:
        char = prefix + char
    if suffix is not None and last:
        char = char + suffix
    return char


def _tokenize_language(words: Mapping[str, int], vocab: _Vocab, prefix, suffix) -> _Language:
    """Each word as the ids of its chars (a char outside the vocabulary is left out); marked chars
    join the vocabulary as first met."""
    lang = _Language([], [], [])
    for word, count in words.items():
        ids = [vocab.add(_marked(char, i == 0, i == len(word) - 1, prefix, suffix))
               for i, char in enumerate(word) if char in vocab.ids]
        lang.words.append(ids)
        lang.widths.append([1] * len(ids))
        lang.counts.append(count)
    return lang


def _count_pairs(lang: _Language, vocab: _Vocab) -> None:
    for i, (ids, count) in enumerate(zip(lang.words, lang.counts)):
        for pair in zip(ids, ids[1:]):
            lang.pair_counts[pair] = lang.pair_counts.get(pair, 0) + count
            lang.where.setdefault(pair, set()).add(i)
    lang.heap = [vocab.entry(pair, count) for pair, count in lang.pair_counts.items() if count > 0]
    heapq.heapify(lang.heap)


def _pop_best(lang: _Language, vocab: _Vocab) -> tuple[Pair, int] | None:
    """The pair with the highest count (larger strings on ties), or None; stale heap entries are
    dropped or pushed back with their current count."""
    while lang.heap:
        entry = heapq.heappop(lang.heap)
        pair = entry[3]
        current = lang.pair_counts.get(pair, 0)
        if current <= 0:
            continue
        if -entry[0] != current:
            heapq.heappush(lang.heap, (-current, *entry[1:]))
            continue
        return pair, current
    return None


def _merge_word(ids: list[int], widths: list[int], pair: Pair, new: int, max_length) -> list[tuple[Pair, int]]:
    """Merge every ``pair`` in the word, left to right; the pair-count changes, as Hugging Face's
    ``Word::merge`` gives them."""
    changes = []
    a, b = pair
    i = 0
    while i < len(ids):
        if ids[i] == a and i + 1 < len(ids) and ids[i + 1] == b:
            width = widths[i] + widths[i + 1]
            if i > 0:
                changes.append(((ids[i - 1], a), -1))
                if widths[i - 1] + width < max_length:
                    changes.append(((ids[i - 1], new), 1))
            ids[i:i + 2] = [new]
            widths[i:i + 2] = [width]
            if i < len(ids) - 1:
                changes.append(((b, ids[i + 1]), -1))
                if widths[i + 1] + width < max_length:
                    changes.append(((new, ids[i + 1]), 1))
        i += 1
    return changes


def _apply_merge(lang: _Language, pair: Pair, new: int, max_length) -> tuple[int, list[Pair]]:
    """Merge ``pair`` in the words that held it: ``(tokens saved, weighted by count; changed pairs)``."""
    positions = lang.where.pop(pair, None)
    if positions is None:
        return 0, []
    shorter = 0
    changed = []
    for i in positions:
        before = len(lang.words[i])
        changes = _merge_word(lang.words[i], lang.widths[i], pair, new, max_length)
        shorter += (before - len(lang.words[i])) * lang.counts[i]
        for p, change in changes:
            lang.pair_counts[p] = lang.pair_counts.get(p, 0) + change * lang.counts[i]
            if change > 0:
                lang.where.setdefault(p, set()).add(i)
            changed.append(p)
    lang.pair_counts[pair] = 0
    return shorter, changed


class _DevWords:
    """The dev words of every language as ids, each with its count in each language."""

    def __init__(self, n_languages: int):
        self.n = n_languages
        self.words: list[list[int]] = []
        self.freqs: list[list[int]] = []
        self.index: dict[tuple[int, ...], int] = {}
        self.holding: dict[Pair, set[int]] = {}      # pair -> dev words that hold it

    def add(self, ids: list[int], language: int, count: int) -> None:
        k = self.index.get(tuple(ids))
        if k is None:
            k = self.index[tuple(ids)] = len(self.words)
            self.words.append(ids)
            self.freqs.append([0] * self.n)
            for pair in zip(ids, ids[1:]):
                self.holding.setdefault(pair, set()).add(k)
        self.freqs[k][language] += count

    def merge(self, pair: Pair, new: int) -> list[int]:
        """Merge ``pair`` in every dev word (left to right): the tokens saved in each language."""
        shorter = [0] * self.n
        for k in sorted(self.holding.get(pair, ())):
            old = self.words[k]
            if pair not in zip(old, old[1:]):
                continue
            ids = merge_pair(old, pair, new)
            for language in range(self.n):
                shorter[language] += (len(old) - len(ids)) * self.freqs[k][language]
            self.words[k] = ids
            for p in zip(ids, ids[1:]):
                self.holding.setdefault(p, set()).add(k)
        return shorter


def _dev_words(dev: Sequence[Mapping[str, int]], n_languages: int, vocab: _Vocab, prefix, suffix):
    """The dev words as ids (a word with a char, or marked char, outside the vocabulary is left
    out, and marked chars are not added) and each language's length in tokens."""
    words = _DevWords(n_languages)
    for language, counts in enumerate(dev):
        for word, count in counts.items():
            ids = [vocab.ids.get(_marked(char, i == 0, i == len(word) - 1, prefix, suffix)) if char in vocab.ids
                   else None for i, char in enumerate(word)]
            if ids and None not in ids:
                words.add(ids, language, count)
    lengths = [0.0] * n_languages
    for ids, freqs in zip(words.words, words.freqs):
        for language in range(n_languages):
            lengths[language] += len(ids) * freqs[language]
    return words, lengths


def _ratio_of(start: float, now: float, target: float) -> float:
    """``(start / now) / target`` with IEEE division (a language with no tokens left: inf or nan)."""
    if now == 0:
        rate = math.nan if start == 0 else math.inf
    else:
        rate = start / now
    return rate / target


def _choose_language(lengths, start, ratio, exhausted, variant, recent: deque, window_size: int,
                     threshold: float) -> tuple[int | None, bool]:
    """The language to merge for next (see the module docstring), None if none can be; and whether
    Hugging Face's trainer would be stuck here."""
    if ratio is not None:
        worse = [-_ratio_of(s, now, r) for s, now, r in zip(start, lengths, ratio)]
    else:
        worse = list(lengths)
    if not any(value > -math.inf for k, value in enumerate(worse) if k not in exhausted):
        # The languages left have no tokens (compression 0 / 0), so no pairs either: no merge is
        # left to make. Hugging Face's loop may take a language that dropped out again and again
        # (base: language 0; window: whichever its window lets through); here training ends.
        return None, True
    if variant == "base":
        best, best_value = 0, -math.inf
        for k, value in enumerate(worse):
            if k not in exhausted and value > best_value:
                best, best_value = k, value
        return best, False
    for k in exhausted:
        worse[k] = -math.inf
    chosen, stuck = _choose_in_window(worse, recent, window_size, threshold)
    recent.append(chosen)
    if len(recent) > window_size:
        recent.popleft()
    return chosen, stuck


def _choose_in_window(worse: list[float], recent: deque, window_size: int, threshold: float) -> tuple[int, bool]:
    """The worst-off language not chosen more than ``threshold`` of the last ``window_size`` times
    (the last one looked at if every one was), and whether Hugging Face's loop would never end.

    That loop looks at language 0 when no language left has a value above
    -inf (those left have all dropped out); if language 0 was already passed
    over, it looks at it again, forever. Here the first language left is
    looked at instead, so the window moves on.
    """
    open_ = [True] * len(worse)
    stuck = False
    while True:
        best, best_value = 0, -math.inf
        for k, value in enumerate(worse):
            if open_[k] and value > best_value:
                best, best_value = k, value
        if not open_[best]:
            stuck = True
            best = open_.index(True)
        if recent.count(best) / window_size <= threshold:
            return best, stuck
        open_[best] = False
        if not any(open_):
            return best, stuck
