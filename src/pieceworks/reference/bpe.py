"""Byte-pair encoding the textbook way: count every pair, merge the best, repeat.

This is the walkthrough algorithm (Sennrich et al. 2016, as taught in the
Hugging Face course's BPE chapter), written to be read rather than to be
fast. It recounts every pair after every merge.

Training

1. The vocabulary starts as the special tokens, then the alphabet: every
   char of the corpus, in code-point order.
2. Every word is split into its chars.
3. Every adjacent pair is counted, weighted by the word's count.
4. The most frequent pair is merged everywhere and its concatenation
   joins the vocabulary.
5. Steps 3 and 4 repeat until the vocabulary is big enough, no pair is
   left, or the best pair is rarer than ``min_frequency``.

Ties (several pairs with the best count) go to the pair met first when the
words are scanned in first-seen order, each word left to right. That is
what the walkthrough's ``max`` loop over a dict does, and
``BpeTrainer(tie_break="first_seen")`` reproduces it merge for merge.
(Hugging Face's trainer breaks ties by token ids instead; see
:mod:`pieceworks.trainers.bpe`.)

Encoding

Split the word into chars. An unknown char becomes the unknown token, or is
dropped when there is none. Then repeatedly merge the adjacent pair whose
merge was learned first (the leftmost one on ties) until no learned merge
applies. Except when two merges build the same token, this gives the same
result as the walkthrough's "apply each merge in order".

>>> result = train_bpe({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, vocab_size=10)
>>> result.merges
[('u', 'g'), ('u', 'n'), ('h', 'ug')]
>>> encode_word("unhug", result.vocab, result.merges)
['un', 'hug']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

__all__ = ["MergeStep", "TrainedBpe", "alphabet_of", "count_pairs", "best_pair", "merge_pair",
           "train_bpe", "encode_word"]

#: A symbol of a word being trained: its token and how many chars of the
#: word it covers (prefix and suffix markers do not count).
Symbol = tuple[str, int]
Pair = tuple[str, str]


@dataclass(frozen=True)
class MergeStep:
    """One training step: the pair merged, its count then, and the new token."""

    pair: Pair
    count: int
    token: str


@dataclass
class TrainedBpe:
    """What training learned: the vocabulary (token → id) and every merge, in order."""

    vocab: dict[str, int] = field(default_factory=dict)
    merges: list[Pair] = field(default_factory=list)


def alphabet_of(word_counts: Mapping[str, int], initial_alphabet: Iterable[str] = (),
                limit_alphabet: int | None = None) -> list[str]:
    """The chars to start from, in code-point order.

    ``initial_alphabet`` chars are always kept before any seen char. With
    ``limit_alphabet`` only the most frequent chars are kept; among chars
    with the same count the higher code point goes first.

    >>> alphabet_of({"ab": 2, "b": 1, "c": 1}, limit_alphabet=2)
    ['a', 'b']
    """
    counts: dict[str, float] = {}
    for word, n in word_counts.items():
        for char in word:
            counts[char] = counts.get(char, 0) + n
    for char in initial_alphabet:
        counts[char] = float("inf")
    kept = list(counts)
    if limit_alphabet is not None and len(kept) > limit_alphabet:
        rarest_first = sorted(kept, key=lambda c: (counts[c], -ord(c)))
        kept = rarest_first[len(kept) - limit_alphabet:]
    return sorted(kept)


def initial_split(word: str, vocab: dict[str, int], prefix: str | None, suffix: str | None) -> list[Symbol]:
    """The word as one symbol per known char; new prefixed/suffixed chars join ``vocab``.

    Chars outside the vocabulary (dropped by ``limit_alphabet``) are left out.

    >>> vocab = {"a": 0, "b": 1}
    >>> initial_split("abc", vocab, "##", None), vocab
    ([('a', 1), ('##b', 1)], {'a': 0, 'b': 1, '##b': 2})
    """
    symbols = []
    for i, char in enumerate(word):
        if char not in vocab:
            continue
        token = char
        if prefix is not None and i > 0:
            token = prefix + token
        if suffix is not None and i == len(word) - 1:
            token = token + suffix
        vocab.setdefault(token, len(vocab))
        symbols.append((token, 1))
    return symbols


def count_pairs(splits: Mapping[str, list[Symbol]], word_counts: Mapping[str, int],
                max_token_length: int | None = None) -> dict[Pair, int]:
    """Count adjacent pairs, weighted by word count; dict order is first-seen order.

    Pairs whose merged token would cover more than ``max_token_length``
    chars are not counted.

    >>> count_pairs({"aab": [("a", 1), ("a", 1), ("b", 1)]}, {"aab": 3})
    {('a', 'a'): 3, ('a', 'b'): 3}
    """
    pair_counts: dict[Pair, int] = {}
    for word, split in splits.items():
        for (left, left_width), (right, right_width) in zip(split, split[1:]):
            if max_token_length is not None and left_width + right_width > max_token_length:
                continue
            pair_counts[left, right] = pair_counts.get((left, right), 0) + word_counts[word]
    return pair_counts


def best_pair(pair_counts: Mapping[Pair, int]) -> tuple[Pair, int]:
    """The most frequent pair; on ties the first one in the mapping's order.

    >>> best_pair({("a", "b"): 2, ("b", "c"): 3, ("c", "d"): 3})
    (('b', 'c'), 3)
    """
    best, best_count = None, None
    for pair, count in pair_counts.items():
        if best_count is None or count > best_count:
            best, best_count = pair, count
    return best, best_count


def merged_token(left: str, right: str, prefix: str | None) -> str:
    """The token a merge makes: the right part loses its continuing-subword prefix.

    >>> merged_token("th", "##e", "##")
    'the'
    """
    if prefix and right.startswith(prefix):
        right = right[len(prefix):]
    return left + right


def merge_pair(split: list[Symbol], pair: Pair, token: str) -> list[Symbol]:
    """Merge every occurrence of ``pair`` in one word, left to right.

    >>> merge_pair([("a", 1), ("a", 1), ("a", 1)], ("a", "a"), "aa")
    [('aa', 2), ('a', 1)]
    """
    out: list[Symbol] = []
    i = 0
    while i < len(split):
        if i + 1 < len(split) and (split[i][0], split[i + 1][0]) == pair:
            out.append((token, split[i][1] + split[i + 1][1]))
            i += 2
        else:
            out.append(split[i])
            i += 1
    return out


def train_bpe(word_counts: Mapping[str, int], vocab_size: int, *, min_frequency: int = 0,
              special_tokens: Iterable[str] = (), initial_alphabet: Iterable[str] = (),
              limit_alphabet: int | None = None, continuing_subword_prefix: str | None = None,
              end_of_word_suffix: str | None = None, max_token_length: int | None = None,
              trace: list[MergeStep] | None = None) -> TrainedBpe:
    """Learn merges from ``{word: count}`` until the vocabulary has ``vocab_size`` tokens.

    ``trace``, when given a list, receives one :class:`MergeStep` per merge.

    >>> steps = []
    >>> train_bpe({"low": 5, "lower": 2}, 6, trace=steps).merges
    [('l', 'o')]
    >>> steps
    [MergeStep(pair=('l', 'o'), count=7, token='lo')]
    """
    vocab: dict[str, int] = {}
    for token in special_tokens:
        vocab.setdefault(token, len(vocab))
    for char in alphabet_of(word_counts, initial_alphabet, limit_alphabet):
        vocab.setdefault(char, len(vocab))
    splits = {word: initial_split(word, vocab, continuing_subword_prefix, end_of_word_suffix)
              for word in word_counts}

    merges: list[Pair] = []
    while len(vocab) < vocab_size:
        pair_counts = count_pairs(splits, word_counts, max_token_length)
        if not pair_counts:
            break
        pair, count = best_pair(pair_counts)
        if count < max(1, min_frequency):
            break
        token = merged_token(pair[0], pair[1], continuing_subword_prefix)
        for word, split in splits.items():
            splits[word] = merge_pair(split, pair, token)
        merges.append(pair)
        vocab.setdefault(token, len(vocab))
        if trace is not None:
            trace.append(MergeStep(pair, count, token))
    return TrainedBpe(vocab, merges)


def encode_word(word: str, vocab: Mapping[str, int], merges: Iterable[Pair], *,
                unk_token: str | None = None, continuing_subword_prefix: str | None = None,
                end_of_word_suffix: str | None = None, trace: list[tuple[Pair, int]] | None = None) -> list[str]:
    """The tokens of one word under learned ``merges``.

    ``trace``, when given a list, receives ``(pair, position)`` per merge applied.

    >>> vocab = {c: i for i, c in enumerate("bghnpsu")}
    >>> merges = [("u", "g"), ("u", "n"), ("h", "ug")]
    >>> encode_word("thug", vocab, merges, unk_token="[UNK]")
    ['[UNK]', 'hug']
    """
    prefix, suffix = continuing_subword_prefix, end_of_word_suffix
    symbols: list[str] = []
    for i, char in enumerate(word):
        token = char
        if prefix is not None and i > 0:
            token = prefix + token
        if suffix is not None and i == len(word) - 1:
            token = token + suffix
        if token in vocab:
            symbols.append(token)
        elif unk_token is not None:
            symbols.append(unk_token)

    # A merge listed twice keeps its later rank, as tokenizer files do.
    ranks = {pair: rank for rank, pair in enumerate(merges)}
    while True:
        candidates = [(ranks[pair], i) for i, pair in enumerate(zip(symbols, symbols[1:])) if pair in ranks]
        if not candidates:
            return symbols
        _, i = min(candidates)
        pair = (symbols[i], symbols[i + 1])
        symbols[i:i + 2] = [merged_token(pair[0], pair[1], prefix)]
        if trace is not None:
            trace.append((pair, i))
