"""``ByteLevelBPETokenizer``: GPT-2's byte-level BPE, ready-made (Hugging Face's ``tokenizers.implementations``).

>>> tok = ByteLevelBPETokenizer()
>>> tok.train_from_iterator(["low lower lowest"] * 3, vocab_size=262, show_progress=False)
>>> tok.encode("lowest").tokens, tok.decode(tok.encode(" lower").ids)
(['low', 'e', 'st'], ' lower')
"""

from __future__ import annotations

from typing import Iterable

from .. import decoders, pre_tokenizers, processors, trainers
from ..models import BPE
from ..normalizers import Lowercase, unicode_normalizer_from_str
from ..tokenizer import Tokenizer
from .base_tokenizer import BaseTokenizer, BpeFiles, joined_normalizer

__all__ = ["ByteLevelBPETokenizer"]


class ByteLevelBPETokenizer(BpeFiles, BaseTokenizer):
    """Byte-level BPE (GPT-2): ByteLevel pre-tokenizer, decoder and post-processor.

    ``vocab`` and ``merges``: a vocabulary dict and merge list, or the paths
    of vocab.json and merges.txt; without them the model is empty, to train.
    """

    def __init__(self, vocab=None, merges=None, add_prefix_space: bool = False, lowercase: bool = False,
                 dropout: float | None = None, unicode_normalizer: str | None = None,
                 continuing_subword_prefix: str | None = None, end_of_word_suffix: str | None = None,
                 trim_offsets: bool = False):
        if vocab is not None and merges is not None:
            model = BPE(vocab, merges, dropout=dropout, continuing_subword_prefix=continuing_subword_prefix or "",
                        end_of_word_suffix=end_of_word_suffix or "")
        else:
            model = BPE()
        tokenizer = Tokenizer(model)
        normalizer = joined_normalizer(([unicode_normalizer_from_str(unicode_normalizer)] if unicode_normalizer else [])
                                       + ([Lowercase()] if lowercase else []))
        if normalizer is not None:
            tokenizer.normalizer = normalizer
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
        tokenizer.decoder = decoders.ByteLevel()
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=trim_offsets)
        super().__init__(tokenizer, {
            "model": "ByteLevelBPE", "add_prefix_space": add_prefix_space, "lowercase": lowercase,
            "dropout": dropout, "unicode_normalizer": unicode_normalizer,
            "continuing_subword_prefix": continuing_subword_prefix, "end_of_word_suffix": end_of_word_suffix,
            "trim_offsets": trim_offsets})

    def train(self, files, vocab_size: int = 30000, min_frequency: int = 2, show_progress: bool = True,
              special_tokens: list = ()) -> None:
        """Train on text files (a path or a list of them), starting from the 256 byte symbols."""
        self._tokenizer.train(files,
                              trainer=_trainer(vocab_size, min_frequency, show_progress, special_tokens))

    def train_from_iterator(self, iterator: Iterable, vocab_size: int = 30000, min_frequency: int = 2,
                            show_progress: bool = True, special_tokens: list = (), length: int | None = None) -> None:
        """Train on texts (or lists of texts) from ``iterator``."""
        self._tokenizer.train_from_iterator(iterator, trainer=_trainer(vocab_size, min_frequency, show_progress,
                                                                       special_tokens), length=length)


def _trainer(vocab_size: int, min_frequency: int, show_progress: bool, special_tokens) -> trainers.BpeTrainer:
    return trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, show_progress=show_progress,
                               special_tokens=list(special_tokens),
                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
