"""WordPiece the textbook way: score every pair, merge the best, repeat.

This is the walkthrough algorithm (the Hugging Face course's WordPiece
chapter), written to be read rather than to be fast: it rescores every pair
after every merge. :class:`pieceworks.trainers.WordPieceTrainer` is held to
it merge for merge.

Training

1. Every word is split into chars; every char but the first carries the
   continuing-subword prefix: ``word`` → ``w ##o ##r ##d``.
2. The vocabulary starts as the special tokens, then the alphabet: every
   symbol of step 1, sorted.
3. Every symbol and every adjacent pair is counted, weighted by the word's
   count, and each pair is scored ``count(a b) / (count(a) · count(b))``:
   a pair whose parts are rare apart but often together scores high.
4. The best pair is merged everywhere; the merged token drops the right
   part's prefix (``hu`` + ``##g`` → ``hug``) and joins the vocabulary.
5. Steps 3 and 4 repeat until the vocabulary is big enough or no pair is
   left.

Ties (several pairs with the best score) go to the pair met first when the
words are scanned in first-seen order, each word left to right: what the
walkthrough's ``max`` loop over a dict does. Scores are exact fractions, so
equal scores really are equal.

Two variants, for the trainer's options: ``scoring="frequency"`` scores a
pair by its count alone (what Hugging Face's WordPieceTrainer does: it is its
BPE trainer with a ``##`` prefix, and lays the vocabulary out its way), and
``tie_break="smallest_ids"`` breaks ties by the ids of the two parts, as
Hugging Face does.

Encoding keeps only the vocabulary: from the start of the word take the
longest token that matches, then the longest ``##`` token that matches the
rest, and so on; if at some point nothing matches, the whole word is the
unknown token.

>>> result = train({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, vocab_size=10)
>>> result.vocab[7:]
['##gs', 'hu', 'hugs']
>>> encode_word("hugs", result.vocab + ["[UNK]"])
['hugs']
>>> encode_word("bum", result.vocab + ["[UNK]"])
['[UNK]']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable, Mapping

__all__ = ["MergeStep", "TrainedWordPiece", "kept_chars", "split_word", "initial_vocab", "count_symbols",
           "count_pairs", "pair_scores", "best_pair", "merged_token", "merge_pair", "train", "encode_word",
           "encode_word_with_offsets"]

Pair = tuple[str, str]


@dataclass(frozen=True)
class MergeStep:
    """One training step: the pair merged, the counts behind its score, the new token."""

    pair: Pair
    token: str
    score: Fraction | int
    pair_count: int
    left_count: int
    right_count: int


@dataclass
class TrainedWordPiece:
    """What training learned: the vocabulary in id order, and every merge."""

    vocab: list[str] = field(default_factory=list)
    merges: list[MergeStep] = field(default_factory=list)


# -- step 1: the alphabet and the initial split ------------------------------
def kept_chars(word_freqs: Mapping[str, int], initial_alphabet: Iterable[str] = (),
               limit_alphabet: int | None = None) -> list[str]:
    """The chars training may use, in code-point order.

    ``initial_alphabet`` chars count as infinitely frequent. With
    ``limit_alphabet`` only the most frequent chars are kept; among chars
    with the same count the smaller code point is kept.

    >>> kept_chars({"ab": 2, "b": 1, "c": 1}, limit_alphabet=2)
    ['a', 'b']
    """
    counts: dict[str, float] = {}
    for word, n in word_freqs.items():
        for char in word:
            counts[char] = counts.get(char, 0) + n
    for char in initial_alphabet:
        counts[char] = float("inf")
    kept = list(counts)
    if limit_alphabet is not None and len(kept) > limit_alphabet:
        rarest_first = sorted(kept, key=lambda c: (counts[c], -ord(c)))
        kept = rarest_first[len(kept) - limit_alphabet:]
    return sorted(kept)


def split_word(word: str, usable: set[str] | frozenset[str] | None = None, prefix: str = "##",
               suffix: str | None = None) -> list[str]:
    """The word as one symbol per char: ``prefix`` on all but the first, ``suffix`` on the last.

    Chars not in ``usable`` (dropped by ``limit_alphabet``) are left out; the
    others keep the prefix they would have had.

    >>> split_word("word")
    ['w', '##o', '##r', '##d']
    >>> split_word("word", usable={"o", "r", "d"})
    ['##o', '##r', '##d']
    """
    symbols = []
    for i, char in enumerate(word):
        if usable is not None and char not in usable:
            continue
        symbol = char if i == 0 else prefix + char
        if suffix is not None and i == len(word) - 1:
            symbol += suffix
        symbols.append(symbol)
    return symbols


def initial_vocab(splits: Mapping[str, list[str]], special_tokens: Iterable[str], chars: list[str],
                  initial_alphabet: Iterable[str], prefix: str, scoring: str) -> list[str]:
    """Special tokens first, then the alphabet, each token once.

    The walkthrough's alphabet (``scoring="likelihood"``) is every symbol of
    the initial split, sorted; chars of ``initial_alphabet`` come in both
    forms, ``c`` and ``##c``. Hugging Face's (``"frequency"``) is every kept
    char in code-point order, then the prefixed symbols in the order they are
    first met.

    >>> initial_vocab({"ab": ["a", "##b"]}, ["[UNK]"], ["a", "b"], [], "##", "likelihood")
    ['[UNK]', '##b', 'a']
    >>> initial_vocab({"ab": ["a", "##b"]}, ["[UNK]"], ["a", "b"], [], "##", "frequency")
    ['[UNK]', 'a', 'b', '##b']
    """
    vocab = list(dict.fromkeys(special_tokens))
    if scoring == "likelihood":
        alphabet = {symbol for split in splits.values() for symbol in split}
        for char in initial_alphabet:
            if char in chars:
                alphabet.update((char, prefix + char))
        alphabet = sorted(alphabet)
    else:
        alphabet = list(chars) + [symbol for split in splits.values() for symbol in split]
    for token in alphabet:
        if token not in vocab:
            vocab.append(token)
    return vocab


# -- step 3: counting and scoring --------------------------------------------
def count_symbols(splits: Mapping[str, list[str]], word_freqs: Mapping[str, int]) -> dict[str, int]:
    """How often each symbol occurs, weighted by word count (the walkthrough's ``letter_freqs``).

    >>> count_symbols({"ab": ["a", "##b"], "b": ["b"]}, {"ab": 2, "b": 1})
    {'a': 2, '##b': 2, 'b': 1}
    """
    counts: dict[str, int] = {}
    for word, split in splits.items():
        for symbol in split:
            counts[symbol] = counts.get(symbol, 0) + word_freqs[word]
    return counts


def count_pairs(splits: Mapping[str, list[str]], word_freqs: Mapping[str, int]) -> dict[Pair, int]:
    """Count adjacent pairs, weighted by word count; dict order is the order they are first met.

    >>> count_pairs({"aab": ["a", "##a", "##b"]}, {"aab": 3})
    {('a', '##a'): 3, ('##a', '##b'): 3}
    """
    pairs: dict[Pair, int] = {}
    for word, split in splits.items():
        for pair in zip(split, split[1:]):
            pairs[pair] = pairs.get(pair, 0) + word_freqs[word]
    return pairs


def pair_scores(pairs: Mapping[Pair, int], symbols: Mapping[str, int],
                scoring: str = "likelihood") -> dict[Pair, Fraction | int]:
    """Each pair's score, as an exact fraction (or its count, for ``"frequency"``).

    >>> pair_scores({("##g", "##s"): 5}, {"##g": 20, "##s": 5})
    {('##g', '##s'): Fraction(1, 20)}
    """
    if scoring == "frequency":
        return dict(pairs)
    return {pair: Fraction(n, symbols[pair[0]] * symbols[pair[1]]) for pair, n in pairs.items()}


def best_pair(scores: Mapping[Pair, Fraction | int], vocab: list[str] | None = None,
              tie_break: str = "first_seen") -> Pair | None:
    """The best-scoring pair: on ties the first in ``scores``' order, or the one with the smallest ids.

    >>> best_pair({("a", "b"): Fraction(1, 2), ("b", "c"): Fraction(1, 2)})
    ('a', 'b')
    >>> best_pair({("a", "b"): 1, ("b", "a"): 1}, vocab=["b", "a"], tie_break="smallest_ids")
    ('b', 'a')
    """
    best, best_score = None, None
    for pair, score in scores.items():
        if best_score is None or score > best_score:
            best, best_score = pair, score
        elif score == best_score and tie_break == "smallest_ids":
            if (vocab.index(pair[0]), vocab.index(pair[1])) < (vocab.index(best[0]), vocab.index(best[1])):
                best = pair
    return best


# -- step 4: merging -----------------------------------------------------------
def merged_token(left: str, right: str, prefix: str = "##") -> str:
    """The token a merge makes: the right part loses its continuing-subword prefix.

    >>> merged_token("hu", "##g")
    'hug'
    """
    if right.startswith(prefix):
        right = right[len(prefix):]
    return left + right


def merge_pair(split: list[str], pair: Pair, token: str) -> list[str]:
    """Merge every occurrence of ``pair`` in one word, left to right.

    >>> merge_pair(["##a", "##a", "##a"], ("##a", "##a"), "##aa")
    ['##aa', '##a']
    """
    out: list[str] = []
    i = 0
    while i < len(split):
        if i + 1 < len(split) and (split[i], split[i + 1]) == pair:
            out.append(token)
            i += 2
        else:
            out.append(split[i])
            i += 1
    return out


def train(word_freqs: Mapping[str, int], vocab_size: int, *, special_tokens: Iterable[str] = (),
          continuing_subword_prefix: str = "##", end_of_word_suffix: str | None = None,
          min_frequency: int = 0, limit_alphabet: int | None = None, initial_alphabet: Iterable[str] = (),
          scoring: str = "likelihood", tie_break: str = "first_seen",
          trace: list[MergeStep] | bool | None = None) -> TrainedWordPiece:
    """Learn a WordPiece vocabulary from ``{word: count}`` (in first-seen order).

    Pairs seen fewer than ``min_frequency`` times are never merged. A merge
    that makes a token already in the vocabulary (possible when words contain
    the prefix's chars) merges but adds nothing. ``trace``: a list receives
    one :class:`MergeStep` per merge; ``True`` prints them.

    >>> steps = []
    >>> train({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, 8, trace=steps).vocab
    ['##g', '##n', '##s', '##u', 'b', 'h', 'p', '##gs']
    >>> steps[0].pair, steps[0].score
    (('##g', '##s'), Fraction(1, 20))
    """
    prefix, special_tokens, initial_alphabet = continuing_subword_prefix, list(special_tokens), list(initial_alphabet)
    chars = kept_chars(word_freqs, initial_alphabet, limit_alphabet)
    usable = set(chars) | set(special_tokens)
    splits = {word: split_word(word, usable, prefix, end_of_word_suffix) for word in word_freqs}
    vocab = initial_vocab(splits, special_tokens, chars, initial_alphabet, prefix, scoring)
    merges: list[MergeStep] = []

    while len(vocab) < vocab_size:
        pairs = {pair: n for pair, n in count_pairs(splits, word_freqs).items() if n >= max(1, min_frequency)}
        if not pairs:
            break
        symbols = count_symbols(splits, word_freqs)
        pair = best_pair(pair_scores(pairs, symbols, scoring), vocab, tie_break)
        token = merged_token(pair[0], pair[1], prefix)
        for word, split in splits.items():
            splits[word] = merge_pair(split, pair, token)
        if token not in vocab:
            vocab.append(token)
        step = MergeStep(pair, token, pair_scores({pair: pairs[pair]}, symbols, scoring)[pair], pairs[pair],
                         symbols[pair[0]], symbols[pair[1]])
        merges.append(step)
        if trace is True:
            print(f"merge {pair[0]!r} + {pair[1]!r} -> {token!r}  score {step.score} "
                  f"= {step.pair_count} / ({step.left_count} * {step.right_count})")
        elif isinstance(trace, list):
            trace.append(step)
    return TrainedWordPiece(vocab, merges)


# -- encoding --------------------------------------------------------------------
def encode_word_with_offsets(word: str, vocab: Iterable[str], *, unk_token: str = "[UNK]",
                             continuing_subword_prefix: str = "##",
                             max_input_chars_per_word: int | None = None) -> list[tuple[str, int, int]]:
    """Greedy longest-match-first, with each token's char span in the word.

    At position ``start`` the candidates are ``word[start:end]`` (with the
    prefix when ``start > 0``) for ``end`` from the end of the word down to
    ``start + 1``; the first one in the vocabulary is taken. A word longer
    than ``max_input_chars_per_word``, or with a position where nothing
    matches, is the single token ``unk_token`` spanning the word.

    >>> encode_word_with_offsets("bugs", ["b", "##u", "##gs"])
    [('b', 0, 1), ('##u', 1, 2), ('##gs', 2, 4)]
    """
    vocab = set(vocab)
    whole = [(unk_token, 0, len(word))]
    if max_input_chars_per_word is not None and len(word) > max_input_chars_per_word:
        return whole
    tokens = []
    start = 0
    while start < len(word):
        end = len(word)
        while end > start:
            candidate = word[start:end] if start == 0 else continuing_subword_prefix + word[start:end]
            if candidate in vocab:
                break
            end -= 1
        if end == start:
            return whole
        tokens.append((candidate, start, end))
        start = end
    return tokens


def encode_word(word: str, vocab: Iterable[str], *, unk_token: str = "[UNK]", continuing_subword_prefix: str = "##",
                max_input_chars_per_word: int | None = None) -> list[str]:
    """The tokens of one word (see :func:`encode_word_with_offsets`).

    >>> vocab = ["b", "h", "p", "##g", "##n", "##s", "##u", "##gs", "hu", "hug"]
    >>> encode_word("hugs", vocab), encode_word("mug", vocab)
    (['hug', '##s'], ['[UNK]'])
    """
    return [t for t, _, _ in encode_word_with_offsets(word, vocab, unk_token=unk_token,
                                                      continuing_subword_prefix=continuing_subword_prefix,
                                                      max_input_chars_per_word=max_input_chars_per_word)]
