"""WordPieceTrainer: learn a WordPiece vocabulary with the real WordPiece score.

Training starts from chars, every char but a word's first carrying the
continuing-subword prefix (``w ##o ##r ##d``), and repeatedly merges the pair
with the highest score; the merged token drops the right part's prefix
(``hu`` + ``##g`` → ``hug``). Two scores:

* ``scoring="likelihood"`` (the default) is WordPiece's:
  ``count(a b) / (count(a) · count(b))``, counts weighted by word
  frequency, compared as exact fractions. The vocabulary is the special
  tokens, then the alphabet (every symbol of the initial split, sorted),
  then the learned tokens in the order learned. Merge for merge equal to
  :func:`pieceworks.reference.wordpiece.train`, the walkthrough's algorithm.
* ``scoring="frequency"`` is what Hugging Face's ``WordPieceTrainer`` does
  (it is its BPE trainer with a ``##`` prefix): the most frequent pair wins,
  and the vocabulary is laid out its way: special tokens, every kept char
  in code-point order, the prefixed chars in the order first met, then the
  learned tokens.

Ties. ``tie_break="first_seen"`` (the default with the likelihood score)
takes the pair met first when scanning the words in the order of
``counts``, each left to right, as the walkthrough does.
``tie_break="huggingface"`` (the default with the frequency score) takes
the pair with the smallest (left id, right id), as Hugging Face does.

Determinism. Hugging Face numbers the prefixed chars in the order of a
randomly seeded hash map, so two of its runs can give different ids (and,
on ties, different merges); pieceworks numbers them in the order of
``counts``, and given the same numbering it makes Hugging Face's merges.
When ``limit_alphabet`` must choose between chars of equal count, the
smaller code point is kept (Hugging Face's choice there is random).

Other rules, shared by both scores: chars dropped by ``limit_alphabet`` are
left out of their words (the rest keep the prefix they would have had, as
Hugging Face does); pairs seen fewer than ``min_frequency`` times are never
merged; a merge that makes a token already in the vocabulary (possible when
words contain the prefix's chars) merges but adds no token. With the
likelihood score each ``initial_alphabet`` char joins the alphabet in both
forms, ``c`` and ``##c``.

Too small a ``vocab_size``: the special tokens and the alphabet are always
kept, so the vocabulary can end up larger than ``vocab_size``; then no merge
is learned. Hugging Face does the same silently; pieceworks warns.

The merge loop is the Cython kernel :mod:`pieceworks._kernels.wordpiece_train`.

>>> from pieceworks.models import WordPiece
>>> model = WordPiece()
>>> trainer = WordPieceTrainer(vocab_size=10, show_progress=False)
>>> trainer.train(model, {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5})
[]
>>> sorted(model.get_vocab(), key=model.get_vocab().get)[7:]
['##gs', 'hu', 'hugs']
"""

from __future__ import annotations

import warnings
from typing import Iterable, Mapping

from ..added_vocabulary import AddedToken
from ..errors import ConfigError, InputTypeError
from ._base import (InitialAlphabetOption, SpecialTokensOption, Trainer, int_option,
                    memory_limit_option)
from .counts import check_training_counts

__all__ = ["WordPieceTrainer", "SCORINGS", "TIE_BREAKS"]

SCORINGS = ("likelihood", "frequency")
TIE_BREAKS = ("first_seen", "huggingface")
_DEFAULT_TIE_BREAK = {"likelihood": "first_seen", "frequency": "huggingface"}

# Merges per kernel call between progress-bar updates.
_CHUNK = 512


class WordPieceTrainer(SpecialTokensOption, InitialAlphabetOption, Trainer):
    """Options and defaults as in Hugging Face's ``WordPieceTrainer``, plus ``scoring`` and ``tie_break``."""

    def __init__(self, vocab_size: int = 30000, min_frequency: int = 0, show_progress: bool = True,
                 special_tokens: Iterable = (), limit_alphabet: int | None = None,
                 initial_alphabet: Iterable[str] = (), continuing_subword_prefix: str = "##",
                 end_of_word_suffix: str | None = None, *, scoring: str = "likelihood",
                 tie_break: str | None = None, memory_limit=None):
        self.vocab_size = int_option("vocab_size", vocab_size)
        self.min_frequency = int_option("min_frequency", min_frequency)
        self.show_progress = bool(show_progress)
        self.special_tokens = special_tokens
        self.limit_alphabet = None if limit_alphabet is None else int_option("limit_alphabet", limit_alphabet)
        self.initial_alphabet = initial_alphabet
        if not isinstance(continuing_subword_prefix, str):
            raise InputTypeError(f"continuing_subword_prefix must be a str, got "
                                 f"{type(continuing_subword_prefix).__name__}", fix='use "##" (BERT\'s) or ""')
        self.continuing_subword_prefix = continuing_subword_prefix
        if end_of_word_suffix is not None and not isinstance(end_of_word_suffix, str):
            raise InputTypeError(f"end_of_word_suffix must be a str or None, got {type(end_of_word_suffix).__name__}")
        self.end_of_word_suffix = end_of_word_suffix
        if scoring not in SCORINGS:
            raise ConfigError(f"scoring must be one of {SCORINGS}, got {scoring!r}",
                              fix='use "likelihood" (WordPiece\'s score) or "frequency" (as Hugging Face)')
        self.scoring = scoring
        tie_break = _DEFAULT_TIE_BREAK[scoring] if tie_break is None else tie_break
        if tie_break not in TIE_BREAKS:
            raise ConfigError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}",
                              fix='use "first_seen" (as the walkthrough) or "huggingface" (smallest ids)')
        self.tie_break = tie_break
        self.memory_limit = memory_limit_option(memory_limit)

    @property
    def model_type(self):
        from ..models.wordpiece import WordPiece

        return WordPiece

    # -- training --------------------------------------------------------------
    def train(self, model, counts: Mapping[str, int]) -> list[AddedToken]:
        """Fill ``model`` (a WordPiece) from ``{word: count}``; return the special tokens.

        As Hugging Face, the model keeps its ``unk_token`` and
        ``max_input_chars_per_word`` and takes the trainer's
        ``continuing_subword_prefix``.
        """
        if not isinstance(model, self.model_type):
            raise ConfigError(f"WordPieceTrainer trains WordPiece models, got {type(model).__name__}",
                              fix="pass pieceworks.models.WordPiece(...) or use that model's own trainer")
        vocab = self.learn(counts)
        model._set_trained({token: i for i, token in enumerate(vocab)}, self.continuing_subword_prefix)
        return self.special_tokens

    def learn(self, counts: Mapping[str, int], trace: list | None = None, *,
              initial_vocab: list[str] | None = None) -> list[str]:
        """The vocabulary (in id order) that training on ``counts`` gives.

        ``trace``, when given a list, receives one
        ``(left, right, token, count(ab), count(a), count(b))`` per merge.
        ``initial_vocab`` replaces the computed starting vocabulary by a
        reordering of it (it must hold exactly the same tokens); tests use
        it to give both libraries the same numbering.

        >>> steps = []
        >>> WordPieceTrainer(vocab_size=7, show_progress=False).learn({"hug": 10, "hugs": 5}, steps)
        ['##g', '##s', '##u', 'h', 'hu', 'hug', 'hugs']
        >>> steps[0]
        ('h', '##u', 'hu', 15, 15, 15)
        """
        from .._kernels.wordpiece_train import WordPieceLearner

        words, freqs = _checked_counts(counts)
        vocab, split = self._start(words, freqs)
        if initial_vocab is not None:
            vocab = _same_tokens(vocab, list(initial_vocab))
        self._warn_if_too_small(len(vocab), len({t.content for t in self._special_tokens}))
        index = {token: i for i, token in enumerate(vocab)}
        learner = WordPieceLearner(split, freqs, [index[s] for s in split.seen], vocab,
                                   self.continuing_subword_prefix, self.scoring == "likelihood",
                                   self.tie_break == "first_seen", self.min_frequency)
        self._run(learner)
        if trace is not None:
            trace.extend(learner.merges())
        return learner.vocab

    def initial_vocab(self, counts: Mapping[str, int]) -> list[str]:
        """The vocabulary training starts from: special tokens, then the alphabet.

        >>> WordPieceTrainer(special_tokens=["[UNK]"]).initial_vocab({"hug": 1, "pug": 1})
        ['[UNK]', '##g', '##u', 'h', 'p']
        >>> WordPieceTrainer(scoring="frequency").initial_vocab({"hug": 1, "pug": 1})
        ['g', 'h', 'p', 'u', '##u', '##g']
        """
        words, freqs = _checked_counts(counts)
        return self._start(words, freqs)[0]

    def _start(self, words: list[str], freqs: list[int]):
        """The starting vocabulary and every word's initial split."""
        from .._kernels.wordpiece_train import InitialSplit, count_chars

        specials = [t.content for t in self._special_tokens]
        chars = self._kept_chars(count_chars(words, freqs))
        split = InitialSplit(words, set(chars) | set(specials), self.continuing_subword_prefix,
                             self.end_of_word_suffix)
        return self._initial_vocab(split.seen, specials, chars), split

    def _kept_chars(self, char_counts: dict[str, int]) -> list[str]:
        """The alphabet's chars in code-point order: the rarest beyond ``limit_alphabet`` are dropped."""
        counts: dict[str, float] = dict(char_counts)
        for char in self._initial_alphabet:
            counts[char] = float("inf")
        kept = list(counts)
        if self.limit_alphabet is not None and len(kept) > self.limit_alphabet:
            kept.sort(key=lambda c: (counts[c], -ord(c)))
            kept = kept[len(kept) - self.limit_alphabet:]
        return sorted(kept)

    def _initial_vocab(self, seen: list[str], specials: list[str], chars: list[str]) -> list[str]:
        """Special tokens, then the alphabet laid out as the scoring mode says (each token once)."""
        if self.scoring == "likelihood":
            alphabet = set(seen)
            kept = set(chars)
            for char in self._initial_alphabet:
                if char in kept:
                    alphabet.update((char, self.continuing_subword_prefix + char))
            ordered = sorted(alphabet)
        else:
            ordered = chars + seen
        return list(dict.fromkeys(specials + ordered))

    def _warn_if_too_small(self, initial: int, n_specials: int) -> None:
        if initial > self.vocab_size:
            warnings.warn(
                f"WordPieceTrainer: vocab_size={self.vocab_size} is smaller than the {initial} tokens every "
                f"vocabulary starts with ({n_specials} special tokens and {initial - n_specials} alphabet "
                f"symbols); all {initial} are kept and no merge is learned. Fix: raise vocab_size above "
                f"{initial}, or set limit_alphabet to keep fewer chars", UserWarning, stacklevel=4)

    def _run(self, learner) -> None:
        from ..progress import progress_bar

        total = max(0, self.vocab_size - learner.size)
        with progress_bar(total, "Compute merges", unit="token", enabled=self.show_progress) as bar:
            while True:
                before = learner.size
                if not learner.run(_CHUNK, self.vocab_size):
                    break
                bar.update(learner.size - before)

    def __repr__(self) -> str:
        return (f"WordPieceTrainer(vocab_size={self.vocab_size}, min_frequency={self.min_frequency}, "
                f"special_tokens={[t.content for t in self._special_tokens]}, "
                f"limit_alphabet={self.limit_alphabet}, initial_alphabet={self._initial_alphabet}, "
                f"continuing_subword_prefix={self.continuing_subword_prefix!r}, "
                f"end_of_word_suffix={self.end_of_word_suffix!r}, scoring={self.scoring!r}, "
                f"tie_break={self.tie_break!r})")


def _checked_counts(counts: Mapping[str, int]) -> tuple[list[str], list[int]]:
    """The words with a positive count, in the mapping's order, and their counts."""
    check_training_counts(counts, "WordPieceTrainer")
    words, freqs = [], []
    for word, count in counts.items():
        if count and word:
            words.append(word)
            freqs.append(count)
    return words, freqs


def _same_tokens(computed: list[str], given: list[str]) -> list[str]:
    if len(given) != len(set(given)) or set(given) != set(computed):
        missing = sorted(set(computed) - set(given))[:5]
        extra = sorted(set(given) - set(computed))[:5]
        raise ConfigError(f"initial_vocab must reorder the {len(computed)} starting tokens exactly "
                          f"(missing {missing}, unexpected {extra}, or repeated tokens)",
                          fix="pass a permutation of the starting vocabulary, or leave initial_vocab out")
    return given
