"""``SentencePieceBPETokenizer``: BPE with SentencePiece's pre-tokenization (``▁`` for spaces), ready-made.

>>> tok = SentencePieceBPETokenizer()
>>> tok.train_from_iterator(["low lower lowest"] * 3, vocab_size=20, show_progress=False)
>>> tok.encode("lowest").tokens, tok.decode(tok.encode("lower low").ids)
(['▁lowest'], 'lower low')
"""

from __future__ import annotations

from typing import Iterable

from .. import decoders, pre_tokenizers, trainers
from ..added_vocabulary import AddedToken
from ..models import BPE
from ..normalizers import NFKC
from ..tokenizer import Tokenizer
from .base_tokenizer import BaseTokenizer, BpeFiles

__all__ = ["SentencePieceBPETokenizer"]


class SentencePieceBPETokenizer(BpeFiles, BaseTokenizer):
    """BPE after NFKC and a Metaspace pre-tokenizer (a ``replacement`` char before each word)."""

    def __init__(self, vocab=None, merges=None, unk_token: str | AddedToken = "<unk>", replacement: str = "▁",
                 add_prefix_space: bool = True, dropout: float | None = None, fuse_unk: bool | None = False):
        if vocab is not None and merges is not None:
            model = BPE(vocab, merges, dropout=dropout, unk_token=str(unk_token), fuse_unk=bool(fuse_unk))
        else:
            model = BPE(dropout=dropout, unk_token=str(unk_token), fuse_unk=bool(fuse_unk))
        tokenizer = Tokenizer(model)
        if tokenizer.token_to_id(str(unk_token)) is not None:
            tokenizer.add_special_tokens([str(unk_token)])
        tokenizer.normalizer = NFKC()
        scheme = "always" if add_prefix_space else "never"
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=replacement, prepend_scheme=scheme)
        tokenizer.decoder = decoders.Metaspace(replacement=replacement, prepend_scheme=scheme)
        super().__init__(tokenizer, {"model": "SentencePieceBPE", "unk_token": unk_token, "replacement": replacement,
                                     "add_prefix_space": add_prefix_space, "dropout": dropout})

    def train(self, files, vocab_size: int = 30000, min_frequency: int = 2, special_tokens: list = ("<unk>",),
              limit_alphabet: int = 1000, initial_alphabet: list = (), show_progress: bool = True) -> None:
        """Train on text files (a path or a list of them)."""
        trainer = _trainer(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet,
                           show_progress)
        self._tokenizer.train(files, trainer=trainer)

    def train_from_iterator(self, iterator: Iterable, vocab_size: int = 30000, min_frequency: int = 2,
                            special_tokens: list = ("<unk>",), limit_alphabet: int = 1000,
                            initial_alphabet: list = (), show_progress: bool = True,
                            length: int | None = None) -> None:
        """Train on texts (or lists of texts) from ``iterator``."""
        trainer = _trainer(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet,
                           show_progress)
        self._tokenizer.train_from_iterator(iterator, trainer=trainer, length=length)


def _trainer(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet,
             show_progress) -> trainers.BpeTrainer:
    return trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                               special_tokens=list(special_tokens), limit_alphabet=limit_alphabet,
                               initial_alphabet=list(initial_alphabet), show_progress=show_progress)
