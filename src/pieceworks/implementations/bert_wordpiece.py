"""``BertWordPieceTokenizer``: BERT's WordPiece pipeline, ready-made (Hugging Face's ``tokenizers.implementations``).

With a vocabulary it adds ``[CLS] ... [SEP]`` as BERT does; trained from
scratch it has no post-processor (as Hugging Face's: add one once the
special tokens have their ids). Training scores pairs as Hugging Face's
WordPieceTrainer does (by frequency), for the same vocabulary.

>>> tok = BertWordPieceTokenizer()
>>> tok.train_from_iterator(["Hello, unbelievable world!"] * 3, vocab_size=40, show_progress=False)
>>> tok.encode("Hello, world").tokens
['hel', '##lo', ',', 'wo', '##r', '##ld']
"""

from __future__ import annotations

from typing import Iterable

from .. import decoders, trainers
from ..added_vocabulary import AddedToken
from ..models import WordPiece
from ..normalizers import BertNormalizer
from ..pre_tokenizers import BertPreTokenizer
from ..processors import BertProcessing
from ..tokenizer import Tokenizer
from .base_tokenizer import BaseTokenizer

__all__ = ["BertWordPieceTokenizer"]

_BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class BertWordPieceTokenizer(BaseTokenizer):
    """WordPiece after BertNormalizer and BertPreTokenizer; ``vocab``: a dict or a vocab.txt path."""

    def __init__(self, vocab=None, unk_token: str | AddedToken = "[UNK]", sep_token: str | AddedToken = "[SEP]",
                 cls_token: str | AddedToken = "[CLS]", pad_token: str | AddedToken = "[PAD]",
                 mask_token: str | AddedToken = "[MASK]", clean_text: bool = True, handle_chinese_chars: bool = True,
                 strip_accents: bool | None = None, lowercase: bool = True, wordpieces_prefix: str = "##"):
        if isinstance(vocab, str):
            vocab = WordPiece.read_file(vocab)
        tokenizer = Tokenizer(WordPiece(vocab, unk_token=str(unk_token)))
        for token in (unk_token, sep_token, cls_token, pad_token, mask_token):
            if tokenizer.token_to_id(str(token)) is not None:
                tokenizer.add_special_tokens([str(token)])
        tokenizer.normalizer = BertNormalizer(clean_text=clean_text, handle_chinese_chars=handle_chinese_chars,
                                              strip_accents=strip_accents, lowercase=lowercase)
        tokenizer.pre_tokenizer = BertPreTokenizer()
        if vocab is not None:
            tokenizer.post_processor = BertProcessing(_known(tokenizer, sep_token, "sep_token"),
                                                      _known(tokenizer, cls_token, "cls_token"))
        tokenizer.decoder = decoders.WordPiece(prefix=wordpieces_prefix)
        super().__init__(tokenizer, {
            "model": "BertWordPiece", "unk_token": unk_token, "sep_token": sep_token, "cls_token": cls_token,
            "pad_token": pad_token, "mask_token": mask_token, "clean_text": clean_text,
            "handle_chinese_chars": handle_chinese_chars, "strip_accents": strip_accents, "lowercase": lowercase,
            "wordpieces_prefix": wordpieces_prefix})

    @staticmethod
    def from_file(vocab: str, **kwargs) -> "BertWordPieceTokenizer":
        """A tokenizer from a vocab.txt (other options as keywords)."""
        return BertWordPieceTokenizer(WordPiece.read_file(vocab), **kwargs)

    def train(self, files, vocab_size: int = 30000, min_frequency: int = 2, limit_alphabet: int = 1000,
              initial_alphabet: list = (), special_tokens: list = _BERT_SPECIALS, show_progress: bool = True,
              wordpieces_prefix: str = "##") -> None:
        """Train on text files (a path or a list of them)."""
        trainer = _trainer(vocab_size, min_frequency, limit_alphabet, initial_alphabet, special_tokens,
                           show_progress, wordpieces_prefix)
        self._tokenizer.train(files, trainer=trainer)

    def train_from_iterator(self, iterator: Iterable, vocab_size: int = 30000, min_frequency: int = 2,
                            limit_alphabet: int = 1000, initial_alphabet: list = (),
                            special_tokens: list = _BERT_SPECIALS, show_progress: bool = True,
                            wordpieces_prefix: str = "##", length: int | None = None) -> None:
        """Train on texts (or lists of texts) from ``iterator``."""
        trainer = _trainer(vocab_size, min_frequency, limit_alphabet, initial_alphabet, special_tokens,
                           show_progress, wordpieces_prefix)
        self._tokenizer.train_from_iterator(iterator, trainer=trainer, length=length)


def _known(tokenizer: Tokenizer, token, option: str) -> tuple[str, int]:
    """``(token, id)`` for BertProcessing; a TypeError (Hugging Face's) naming the option if unknown."""
    from ..errors import InputTypeError

    tid = tokenizer.token_to_id(str(token))
    if tid is None:
        raise InputTypeError(f"{option} {str(token)!r} not found in the vocabulary",
                             fix=f"add it to the vocabulary, or pass the {option} the vocabulary has")
    return str(token), tid


def _trainer(vocab_size, min_frequency, limit_alphabet, initial_alphabet, special_tokens, show_progress,
             wordpieces_prefix) -> trainers.WordPieceTrainer:
    # Hugging Face's scoring (the most frequent pair, as its WordPieceTrainer), not WordPiece's
    # likelihood, which pieceworks.trainers.WordPieceTrainer uses by default.
    return trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                     limit_alphabet=limit_alphabet, initial_alphabet=list(initial_alphabet),
                                     special_tokens=list(special_tokens), show_progress=show_progress,
                                     continuing_subword_prefix=wordpieces_prefix, scoring="frequency")
