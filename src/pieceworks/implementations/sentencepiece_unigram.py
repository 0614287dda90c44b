"""``SentencePieceUnigramTokenizer``: Unigram with SentencePiece's pre-tokenization, ready-made.

Trained here, or loaded from a SentencePiece unigram ``.model``
(:meth:`SentencePieceUnigramTokenizer.from_spm`, which needs no protobuf
file of its own: pieceworks reads the model format itself).

>>> tok = SentencePieceUnigramTokenizer()
>>> tok.train_from_iterator(["low lower lowest newer"] * 20, vocab_size=30, show_progress=False, unk_token="<unk>",
...                         special_tokens=["<unk>"])
>>> tok.decode(tok.encode("lowest newer").ids)
'lowest newer'
"""

from __future__ import annotations

from typing import Iterable

from .. import decoders, normalizers, pre_tokenizers, trainers
from .._regex import Regex
from ..models import Unigram
from ..tokenizer import Tokenizer
from .base_tokenizer import BaseTokenizer

__all__ = ["SentencePieceUnigramTokenizer"]


class SentencePieceUnigramTokenizer(BaseTokenizer):
    """Unigram after Nmt, NFKC and runs of spaces made one, and a Metaspace pre-tokenizer."""

    def __init__(self, vocab: list | None = None, replacement: str = "▁", add_prefix_space: bool = True):
        tokenizer = Tokenizer(Unigram(vocab) if vocab is not None else Unigram())
        tokenizer.normalizer = normalizers.Sequence([normalizers.Nmt(), normalizers.NFKC(), _one_space()])
        _set_metaspace(tokenizer, replacement, add_prefix_space)
        super().__init__(tokenizer, {"model": "SentencePieceUnigram", "replacement": replacement,
                                     "add_prefix_space": add_prefix_space})

    def train(self, files, vocab_size: int = 8000, show_progress: bool = True, special_tokens: list | None = None,
              initial_alphabet: list | None = None, unk_token: str | None = None) -> None:
        """Train on text files (a path or a list of them)."""
        trainer = _trainer(vocab_size, show_progress, special_tokens, initial_alphabet, unk_token)
        self._tokenizer.train(files, trainer=trainer)

    def train_from_iterator(self, iterator: Iterable, vocab_size: int = 8000, show_progress: bool = True,
                            special_tokens: list | None = None, initial_alphabet: list | None = None,
                            unk_token: str | None = None, length: int | None = None) -> None:
        """Train on texts (or lists of texts) from ``iterator``."""
        trainer = _trainer(vocab_size, show_progress, special_tokens, initial_alphabet, unk_token)
        self._tokenizer.train_from_iterator(iterator, trainer=trainer, length=length)

    @staticmethod
    def from_spm(filename: str) -> "SentencePieceUnigramTokenizer":
        """The pieces, scores, unknown id and byte fallback of a SentencePiece unigram ``.model``, its
        normalization rules (precompiled charsmap) and runs of spaces made one, as Hugging Face builds it."""
        from ..errors import ConfigError
        from ..formats.sentencepiece import read_model_proto

        proto = read_model_proto(filename)
        if proto.trainer_spec.model_type != 1:
            raise ConfigError(f"{filename}: a SentencePieceUnigramTokenizer needs a unigram model",
                              fix="load other .model files with pieceworks.sentencepiece or Tokenizer.from_file")
        vocab = [(piece.piece, piece.score) for piece in proto.pieces]
        tokenizer = Tokenizer(Unigram(vocab, proto.trainer_spec.unk_id, proto.trainer_spec.byte_fallback))
        charsmap = proto.normalizer_spec.precompiled_charsmap
        tokenizer.normalizer = normalizers.Sequence(
            ([normalizers.Precompiled(charsmap)] if charsmap else []) + [_one_space()])
        _set_metaspace(tokenizer, "▁", True)
        wrapped = SentencePieceUnigramTokenizer.__new__(SentencePieceUnigramTokenizer)
        BaseTokenizer.__init__(wrapped, tokenizer, {"model": "SentencePieceUnigram"})
        return wrapped


def _one_space():
    return normalizers.Replace(Regex(" {2,}"), " ")


def _set_metaspace(tokenizer: Tokenizer, replacement: str, add_prefix_space: bool) -> None:
    scheme = "always" if add_prefix_space else "never"
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=replacement, prepend_scheme=scheme)
    tokenizer.decoder = decoders.Metaspace(replacement=replacement, prepend_scheme=scheme)


def _trainer(vocab_size, show_progress, special_tokens, initial_alphabet, unk_token) -> trainers.UnigramTrainer:
    return trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens or []),
                                   show_progress=show_progress, initial_alphabet=list(initial_alphabet or []),
                                   unk_token=unk_token)
