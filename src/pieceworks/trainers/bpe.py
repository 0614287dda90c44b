"""BpeTrainer: learn a BPE vocabulary and its merges from word counts.

The steps are Hugging Face's, in its order, which also fixes the ids:

1. special tokens, in the order given;
2. the alphabet: every char of the corpus plus ``initial_alphabet``, cut to
   the ``limit_alphabet`` most frequent, in code-point order;
3. each word becomes ids; with ``continuing_subword_prefix`` /
   ``end_of_word_suffix`` the marked chars (``##b``, ``c</w>``) get ids in
   the order the words first show them;
4. merges, most frequent pair first, each new token taking the next id,
   until the vocabulary has ``vocab_size`` tokens, no pair is left, or the
   best pair is rarer than ``min_frequency``.

The merge loop is the Cython kernel :mod:`pieceworks._kernels.bpe_train`.
The words stream into it in batches (:func:`pieceworks.trainers.counts.word_batches`),
also from counts that spilled to disk, and it keeps about 50 bytes per
distinct word (5 M words: ~265 MB at the peak), no Python object per word.

Ties. ``tie_break="huggingface"`` (the default) breaks ties between pairs
of equal count by the smaller (left id, right id), and reproduces
``tokenizers.trainers.BpeTrainer`` exactly, including its quirks.
``tie_break="first_seen"`` takes the pair met first when scanning the words
in the order of ``counts``, each left to right: the textbook walkthrough,
merge for merge equal to :func:`pieceworks.reference.bpe.train_bpe`.

Determinism. With a prefix or suffix, Hugging Face numbers the marked chars
in the order of a randomly seeded hash map, so two of its runs can differ.
pieceworks numbers them in the order of ``counts``. When ``limit_alphabet``
must choose between chars of equal count, the higher code point is dropped
first (Hugging Face's choice there is random too).

``max_token_length``: in ``huggingface`` mode a new pair is counted only if
its token would be *shorter* than the limit, and the two-char pairs of the
initial words always count, as in Hugging Face. In ``first_seen`` mode
no token longer than the limit is made.

>>> from pieceworks.models import BPE
>>> model = BPE()
>>> BpeTrainer(vocab_size=10, show_progress=False).train(model, {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5})
[]
>>> model.get_merges()
[('u', 'g'), ('u', 'n'), ('h', 'ug')]
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..added_vocabulary import AddedToken
from ..errors import ConfigError, InputTypeError
from ..progress import progress_bar, progress_format_option
from ._base import (InitialAlphabetOption, SpecialTokensOption, Trainer, int_option,
                    memory_limit_option)
from .counts import check_training_counts, word_batches

__all__ = ["BpeTrainer", "compute_alphabet"]

TIE_BREAKS = ("huggingface", "first_seen")


class BpeTrainer(SpecialTokensOption, InitialAlphabetOption, Trainer):
    """Options and defaults as in Hugging Face's ``BpeTrainer``, plus ``tie_break``."""

    def __init__(self, vocab_size: int = 30000, min_frequency: int = 0, show_progress: bool = True,
                 special_tokens: Iterable = (), limit_alphabet: int | None = None,
                 initial_alphabet: Iterable[str] = (), continuing_subword_prefix: str | None = None,
                 end_of_word_suffix: str | None = None, max_token_length: int | None = None,
                 tie_break: str = "huggingface", *, memory_limit=None, progress_format: str = "indicatif"):
        self.vocab_size = int_option("vocab_size", vocab_size)
        self.min_frequency = int_option("min_frequency", min_frequency)
        self.show_progress = bool(show_progress)
        self.special_tokens = special_tokens
        set_word_options(self, limit_alphabet, initial_alphabet, continuing_subword_prefix, end_of_word_suffix,
                         max_token_length)
        if tie_break not in TIE_BREAKS:
            raise ConfigError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}",
                              fix='use "huggingface" (as tokenizers) or "first_seen" (as the textbook)')
        self.tie_break = tie_break
        self.memory_limit = memory_limit_option(memory_limit)
        self.progress_format = progress_format_option(progress_format)
        self._word_count = 0

    @property
    def model_type(self):
        from ..models.bpe import BPE

        return BPE

    def train(self, model, counts: Mapping[str, int]) -> list[AddedToken]:
        """Fill ``model`` (a BPE) from ``{word: count}``; return the special tokens."""
        from .._kernels.bpe_train import MergeLearner

        if not isinstance(model, self.model_type):
            raise InputTypeError(f"BpeTrainer trains BPE models, got {type(model).__name__}",
                                 fix="pass a pieceworks.models.BPE")
        check_training_counts(counts, "BpeTrainer")
        self._word_count = len(counts)
        id_to_token, token_to_id = initial_vocab(self, counts)
        # The words stream into the kernel's flat arrays batch by batch: no
        # table of all words is built in Python, even from counts on disk.
        learner = MergeLearner(id_to_token, token_to_id, self.continuing_subword_prefix,
                               self.end_of_word_suffix, self.max_token_length, self.tie_break == "first_seen",
                               self.vocab_size)
        for batch in word_batches(counts):
            learner.add_words(batch)
        # (Hugging Face's JSON lines give vocab_size as this stage's total; the bar counts the merges to do.)
        to_do = self.vocab_size if self.progress_format == "json" else max(0, self.vocab_size - len(id_to_token))
        with progress_bar(to_do, "Compute merges", unit="merges", enabled=self.progress_setting()) as bar:
            raw = learner.learn(self.vocab_size, self.min_frequency, _Advance(bar))
        del learner   # its arrays go before the model's tables are built
        merges, merge_ids = _model_merges(raw, id_to_token)
        model._set_trained(token_to_id, merges, self.continuing_subword_prefix, self.end_of_word_suffix,
                           merge_ids=merge_ids)
        return self.special_tokens


    def get_word_count(self) -> int:
        """How many distinct words the last training counted (0 before any), as Hugging Face's."""
        return self._word_count

    def __repr__(self) -> str:
        return (f"BpeTrainer(vocab_size={self.vocab_size}, min_frequency={self.min_frequency}, "
                f"special_tokens={[t.content for t in self._special_tokens]}, "
                f"limit_alphabet={self.limit_alphabet}, initial_alphabet={self._initial_alphabet}, "
                f"continuing_subword_prefix={self.continuing_subword_prefix!r}, "
                f"end_of_word_suffix={self.end_of_word_suffix!r}, max_token_length={self.max_token_length}, "
                f"tie_break={self.tie_break!r})")


def compute_alphabet(counts: Mapping[str, int], initial_alphabet: Iterable[str] = (),
                     limit_alphabet: int | None = None) -> list[str]:
    """The starting chars in code-point order: seen chars plus ``initial_alphabet``.

    With ``limit_alphabet``, the rarest chars go first (``initial_alphabet``
    chars count as infinitely frequent); among equal counts the higher code
    point goes first.

    >>> compute_alphabet({"ab": 2, "c": 1, "d": 1}, ["z"], limit_alphabet=3)
    ['a', 'b', 'z']
    """
    from .._kernels.bpe_train import char_counts as count_chars

    char_counts: dict[str, float] = dict(count_chars(word_batches(counts)))
    for char in initial_alphabet:
        char_counts[char] = float("inf")
    kept = list(char_counts)
    if limit_alphabet is not None and len(kept) > limit_alphabet:
        kept.sort(key=lambda c: (char_counts[c], -ord(c)))
        kept = kept[len(kept) - limit_alphabet:]
    return sorted(kept)


def _model_merges(raw: list[tuple[int, int, int]], id_to_token: list[str]):
    """Merges as the model keeps them (as strings, and as id triples).

    A pair merged twice keeps its later place: Hugging Face stores merges
    in a map from pair to rank, so the later rank wins.

    >>> _model_merges([(0, 1, 2), (2, 0, 3), (0, 1, 2)], ["a", "b", "ab", "aba"])[0]
    [('ab', 'a'), ('a', 'b')]
    """
    last: dict[tuple[int, int], int] = {}
    for rank, (a, b, _) in enumerate(raw):
        last[a, b] = rank
    kept = [raw[rank] for rank in sorted(last.values())]
    return [(id_to_token[a], id_to_token[b]) for a, b, _ in kept], kept


class _Advance:
    """Feeds the kernel's running merge count to a progress bar as increments."""

    def __init__(self, bar):
        self.bar, self.done = bar, 0

    def __call__(self, merges: int) -> None:
        self.bar.update(merges - self.done)
        self.done = merges


def _add_token(token: str, id_to_token: list[str], token_to_id: dict[str, int]) -> int:
    found = token_to_id.get(token)
    if found is None:
        found = token_to_id[token] = len(id_to_token)
        id_to_token.append(token)
    return found


def initial_vocab(trainer, counts: Mapping[str, int]) -> tuple[list[str], dict[str, int]]:
    """Special tokens, then the alphabet of ``counts``: the ids every BPE model ``trainer`` trains
    starts with (``trainer``: its special tokens and alphabet options).

    >>> initial_vocab(BpeTrainer(special_tokens=["<s>", "a"]), {"ab": 2})
    (['<s>', 'a', 'b'], {'<s>': 0, 'a': 1, 'b': 2})
    """
    id_to_token: list[str] = []
    token_to_id: dict[str, int] = {}
    for token in trainer._special_tokens:
        _add_token(token.content, id_to_token, token_to_id)
    for char in compute_alphabet(counts, trainer._initial_alphabet, trainer.limit_alphabet):
        _add_token(char, id_to_token, token_to_id)
    return id_to_token, token_to_id


def set_word_options(trainer, limit_alphabet, initial_alphabet, continuing_subword_prefix, end_of_word_suffix,
                     max_token_length) -> None:
    """Check and set the options a BPE trainer shares on how words start: the alphabet, the marks
    of non-first and last chars, the longest token."""
    trainer.limit_alphabet = None if limit_alphabet is None else int_option("limit_alphabet", limit_alphabet)
    trainer.initial_alphabet = initial_alphabet
    trainer.continuing_subword_prefix = _optional_str("continuing_subword_prefix", continuing_subword_prefix)
    trainer.end_of_word_suffix = _optional_str("end_of_word_suffix", end_of_word_suffix)
    trainer.max_token_length = None if max_token_length is None else int_option("max_token_length", max_token_length)


def _optional_str(name: str, value) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InputTypeError(f"{name} must be a str or None, got {type(value).__name__}")
    return value
