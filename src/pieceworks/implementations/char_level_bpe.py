"""``CharBPETokenizer``: Sennrich-style BPE on chars with an end-of-word suffix, ready-made.

By default the text is cleaned by a BertNormalizer (without lowercasing) and
split on whitespace and punctuation (BertPreTokenizer), as OpenAI's GPT did;
``bert_normalizer=False`` and ``split_on_whitespace_only=True`` turn that off.

>>> tok = CharBPETokenizer()
>>> tok.train_from_iterator(["low lower lowest"] * 3, vocab_size=20, show_progress=False)
>>> tok.encode("lowest!").tokens, tok.decode(tok.encode("lower low").ids)
(['lowest</w>', '<unk>'], 'lower low')
"""

from __future__ import annotations

from typing import Iterable

from .. import decoders, pre_tokenizers, trainers
from ..added_vocabulary import AddedToken
from ..models import BPE
from ..normalizers import BertNormalizer, Lowercase, unicode_normalizer_from_str
from ..tokenizer import Tokenizer
from .base_tokenizer import BaseTokenizer, BpeFiles, joined_normalizer

__all__ = ["CharBPETokenizer"]


class CharBPETokenizer(BpeFiles, BaseTokenizer):
    """Char-level BPE whose word-final pieces end in ``suffix`` ("</w>"), with an unknown token."""

    def __init__(self, vocab=None, merges=None, unk_token: str | AddedToken = "<unk>", suffix: str = "</w>",
                 dropout: float | None = None, lowercase: bool = False, unicode_normalizer: str | None = None,
                 bert_normalizer: bool = True, split_on_whitespace_only: bool = False):
        if vocab is not None and merges is not None:
            model = BPE(vocab, merges, dropout=dropout, unk_token=str(unk_token), end_of_word_suffix=suffix)
        else:
            model = BPE(unk_token=str(unk_token), dropout=dropout, end_of_word_suffix=suffix)
        tokenizer = Tokenizer(model)
        if tokenizer.token_to_id(str(unk_token)) is not None:
            tokenizer.add_special_tokens([str(unk_token)])
        normalizer = joined_normalizer(([unicode_normalizer_from_str(unicode_normalizer)] if unicode_normalizer else [])
                                       + ([BertNormalizer(lowercase=False)] if bert_normalizer else [])
                                       + ([Lowercase()] if lowercase else []))
        if normalizer is not None:
            tokenizer.normalizer = normalizer
        tokenizer.pre_tokenizer = (pre_tokenizers.WhitespaceSplit() if split_on_whitespace_only
                                   else pre_tokenizers.BertPreTokenizer())
        tokenizer.decoder = decoders.BPEDecoder(suffix=suffix)
        super().__init__(tokenizer, {
            "model": "BPE", "unk_token": unk_token, "suffix": suffix, "dropout": dropout, "lowercase": lowercase,
            "unicode_normalizer": unicode_normalizer, "bert_normalizer": bert_normalizer,
            "split_on_whitespace_only": split_on_whitespace_only})

    def train(self, files, vocab_size: int = 30000, min_frequency: int = 2, special_tokens: list = ("<unk>",),
              limit_alphabet: int = 1000, initial_alphabet: list = (), suffix: str | None = "</w>",
              show_progress: bool = True) -> None:
        """Train on text files (a path or a list of them)."""
        trainer = _trainer(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet, suffix,
                           show_progress)
        self._tokenizer.train(files, trainer=trainer)

    def train_from_iterator(self, iterator: Iterable, vocab_size: int = 30000, min_frequency: int = 2,
                            special_tokens: list = ("<unk>",), limit_alphabet: int = 1000,
                            initial_alphabet: list = (), suffix: str | None = "</w>", show_progress: bool = True,
                            length: int | None = None) -> None:
        """Train on texts (or lists of texts) from ``iterator``."""
        trainer = _trainer(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet, suffix,
                           show_progress)
        self._tokenizer.train_from_iterator(iterator, trainer=trainer, length=length)


def _trainer(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet, suffix,
             show_progress) -> trainers.BpeTrainer:
    return trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                               special_tokens=list(special_tokens), limit_alphabet=limit_alphabet,
                               initial_alphabet=list(initial_alphabet), end_of_word_suffix=suffix,
                               show_progress=show_progress)
