"""WordLevelTrainer: keep the most frequent pieces, special tokens first.

Order (as Hugging Face): special tokens, then pieces by descending count,
ties by the piece's text in code-point order; pieces under
``min_frequency`` are dropped; the first ``vocab_size`` are kept.

>>> from pieceworks.models import WordLevel
>>> m = WordLevel()
>>> WordLevelTrainer(vocab_size=3, special_tokens=["[UNK]"]).train(m, {"b": 2, "a": 2, "c": 1})
[AddedToken("[UNK]", rstrip=False, lstrip=False, single_word=False, normalized=False, special=True)]
>>> m.get_vocab()
{'[UNK]': 0, 'a': 1, 'b': 2}
"""

from __future__ import annotations

from typing import Mapping

from ..added_vocabulary import AddedToken, as_added_token
from ._base import Trainer, int_option, memory_limit_option
from .counts import check_training_counts

__all__ = ["WordLevelTrainer"]


class WordLevelTrainer(Trainer):
    """Options as in Hugging Face's ``WordLevelTrainer``."""

    def __init__(self, vocab_size: int = 30000, min_frequency: int = 0, show_progress: bool = True,
                 special_tokens: list | None = None, *, memory_limit=None):
        self.vocab_size = int_option("vocab_size", vocab_size)
        self.min_frequency = int_option("min_frequency", min_frequency)
        self.show_progress = show_progress
        self.special_tokens: list[AddedToken] = [as_added_token(t, special=True) for t in special_tokens or []]
        self.memory_limit = memory_limit_option(memory_limit)

    @property
    def model_type(self):
        from ..models.wordlevel import WordLevel

        return WordLevel

    def train(self, model, counts: Mapping[str, int]) -> list[AddedToken]:
        import heapq

        check_training_counts(counts, "WordLevelTrainer")
        # Only the vocab_size most frequent can be kept: select them without
        # sorting (or holding) the whole table.
        frequent = ((w, n) for w, n in counts.items() if n >= self.min_frequency)
        ordered = heapq.nsmallest(self.vocab_size, frequent, key=lambda kv: (-kv[1], kv[0]))
        words = [t.content for t in self.special_tokens]
        words += [w for w, n in ordered]
        vocab: dict[str, int] = {}
        for i, w in enumerate(words[: self.vocab_size]):
            vocab[w] = i  # a repeated word keeps its later id, as Hugging Face does
        model.vocab = vocab
        model.vocab_r = {i: w for w, i in vocab.items()}
        return list(self.special_tokens)

    def __repr__(self) -> str:
        return (f"WordLevelTrainer(vocab_size={self.vocab_size}, min_frequency={self.min_frequency}, "
                f"special_tokens={[t.content for t in self.special_tokens]})")
