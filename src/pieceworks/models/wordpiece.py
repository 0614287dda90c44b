"""WordPiece: greedy longest-match-first over a vocabulary, as BERT tokenizes.

A piece is cut from its start: take the longest vocabulary token that
matches, then the longest continuing token (``##`` + text) that matches the
rest, and so on. If at some point nothing matches, or the piece is longer
than ``max_input_chars_per_word`` chars, the whole piece is the unknown
token. Behaviour, arguments and tokenizer.json fields are those of Hugging
Face ``tokenizers.models.WordPiece``.

The matching runs in the Cython kernel :mod:`pieceworks._kernels.wordpiece_encode`
in time linear in the piece's length (LinMaxMatch, a trie with failure
links), where the textbook loop is quadratic.

>>> model = WordPiece({"[UNK]": 0, "hug": 1, "##s": 2, "b": 3, "##u": 4, "##gs": 5})
>>> [(t.value, t.offsets) for t in model.tokenize("hugs")]
[('hug', (0, 3)), ('##s', (3, 4))]
>>> [t.value for t in model.tokenize("bugs")], [t.value for t in model.tokenize("mug")]
(['b', '##u', '##gs'], ['[UNK]'])
"""

from __future__ import annotations

import os
import warnings

from .._component import Fields
from ..errors import ConfigError, FileFormatError, InputTypeError, TokenizerFileError, UnknownTokenError
from ..pretokenized import Token
from ._base import Model
from ._vocab import check_vocab, ordered_by_id

__all__ = ["WordPiece"]

# Setting one of these rebuilds the matcher on next use.
_MATCHER_INPUTS = ("vocab", "continuing_subword_prefix")


class WordPiece(Model):
    """A WordPiece model; arguments and defaults as Hugging Face's ``WordPiece``."""

    type_name = "WordPiece"

    def __init__(self, vocab: dict[str, int] | None = None, unk_token: str = "[UNK]",
                 max_input_chars_per_word: int = 100, continuing_subword_prefix: str = "##"):
        if isinstance(vocab, (str, os.PathLike)):
            # Hugging Face still takes a path here, with a deprecation warning.
            warnings.warn("WordPiece(path) is deprecated; use WordPiece.from_file(path)", DeprecationWarning,
                          stacklevel=2)
            vocab = self.read_file(vocab)
        elif vocab is not None and not isinstance(vocab, dict):
            raise InputTypeError(f"vocab must be a dict of token -> id, got {type(vocab).__name__}",
                                 fix="pass {token: id}, or use WordPiece.from_file('vocab.txt')")
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self.continuing_subword_prefix = continuing_subword_prefix
        self.vocab = check_vocab(dict(vocab or {}), "WordPiece vocab")

    def __setattr__(self, name, value):
        if name in ("unk_token", "continuing_subword_prefix"):
            value = _str_option(name, value)
        elif name == "max_input_chars_per_word":
            value = _count_option(name, value)
        super().__setattr__(name, value)      # (moves the component epoch: fast plans re-read options)
        if name == "vocab":
            object.__setattr__(self, "_vocab_r", None)
        if name in _MATCHER_INPUTS:
            object.__setattr__(self, "_matcher", None)

    @property
    def vocab_r(self) -> dict[int, str]:
        """Token by id, made on first use: encoding never reads it, and a BERT vocabulary's took
        5 ms of loading.

        >>> WordPiece({"a": 0, "##b": 1}).vocab_r
        {0: 'a', 1: '##b'}
        """
        vocab_r = self.__dict__.get("_vocab_r")
        if vocab_r is None:
            vocab_r = {i: t for t, i in self.vocab.items()}
            object.__setattr__(self, "_vocab_r", vocab_r)
        return vocab_r

    def _set_trained(self, vocab: dict[str, int], continuing_subword_prefix: str) -> None:
        """What a trainer calls: a new vocabulary and prefix; the other options stay."""
        self.continuing_subword_prefix = continuing_subword_prefix
        self.vocab = dict(vocab)

    def _get_matcher(self):
        matcher = self._matcher
        if matcher is None:
            from .._kernels.wordpiece_encode import WordPieceMatcher

            matcher = WordPieceMatcher(self.vocab, self.continuing_subword_prefix, Token)
            object.__setattr__(self, "_matcher", matcher)
        return matcher

    # -- the model ---------------------------------------------------------------
    def tokenize_chars(self, sequence: str) -> list[Token]:
        """The tokens of one piece, char offsets inside it.

        >>> WordPiece({"un": 0, "##aff": 1, "##able": 2}).tokenize_chars("unaffable")
        [Token(id=0, value='un', offsets=(0, 2)), Token(id=1, value='##aff', offsets=(2, 5)), Token(id=2, value='##able', offsets=(5, 9))]
        """
        if not isinstance(sequence, str):
            raise InputTypeError(f"WordPiece.tokenize expects a str, got {type(sequence).__name__}")
        if len(sequence) <= self.max_input_chars_per_word:
            tokens = self._get_matcher().tokens(sequence)
            if tokens is not None:
                return tokens
        return [Token(self._unk_id(sequence), self.unk_token, (0, len(sequence)))]

    def encode_ids(self, sequence: str) -> list[int]:
        """Only the ids of :meth:`tokenize` (no Token objects)."""
        if len(sequence) <= self.max_input_chars_per_word:
            ids = self._get_matcher().tokenize_ids(sequence)
            if ids is not None:
                return ids
        return [self._unk_id(sequence)]

    def _unk_id(self, sequence: str) -> int:
        unk = self.vocab.get(self.unk_token)
        if unk is None:
            raise UnknownTokenError(
                f"WordPiece error: Missing {self.unk_token!r} token from the vocabulary "
                f"(needed for {sequence[:50]!r}, which cannot be split into vocabulary tokens)",
                fix="add the unk_token to the vocabulary, or set unk_token to a token it has")
        return unk

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, id: int) -> str | None:
        return self.vocab_r.get(id)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    def get_vocab_size(self) -> int:
        return len(self.vocab)

    def get_trainer(self):
        """A WordPieceTrainer with default options (as Hugging Face's, whatever this model's prefix)."""
        from ..trainers.wordpiece import WordPieceTrainer

        return WordPieceTrainer()

    # -- files -------------------------------------------------------------------
    def save(self, folder: str, prefix: str | None = None) -> list[str]:
        """Write ``vocab.txt`` (or ``prefix-vocab.txt``) into ``folder``: one token per line, in id order."""
        from ..formats.bert_vocab import write_bert_vocab

        return [write_bert_vocab(self._model_file(folder, prefix, "vocab.txt"), self.vocab)]

    @staticmethod
    def read_file(vocab: "str | os.PathLike") -> dict[str, int]:
        """Read a BERT ``vocab.txt``: ``{token: line number}``.

        Blank lines and repeated tokens are errors naming the line (Hugging
        Face accepts them and gives ids that cannot be right).
        """
        from ..formats.bert_vocab import read_bert_vocab

        return read_bert_vocab(vocab)

    @classmethod
    def from_file(cls, vocab: "str | os.PathLike", **kwargs) -> "WordPiece":
        """Load from a BERT ``vocab.txt``; ``kwargs`` as the constructor's.

        The file must hold the ``unk_token`` (``[UNK]`` unless given).
        """
        vocab_dict = cls.read_file(vocab)
        model = cls(vocab_dict, **kwargs)
        if model.unk_token not in vocab_dict:
            raise FileFormatError(os.fspath(vocab), f"the unk_token {model.unk_token!r} is not in the vocabulary "
                                  f"({len(vocab_dict)} lines)",
                                  fix=f"add a line {model.unk_token} to the file, or pass the file's unknown token "
                                      f"as unk_token=...")
        return model

    # -- tokenizer.json ----------------------------------------------------------
    def _to_fields(self) -> dict:
        return {
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "vocab": ordered_by_id(self.vocab),
        }

    @classmethod
    def _from_fields(cls, fields: Fields) -> "WordPiece":
        # All four fields are required, as in Hugging Face.
        vocab = fields.get("vocab", dict)
        check_vocab(vocab, fields.field_name("vocab"), path=fields.path, error=TokenizerFileError)
        max_chars = fields.get("max_input_chars_per_word", int)
        if max_chars < 0:
            raise fields.error("max_input_chars_per_word", f"expected a non-negative integer, got {max_chars}")
        model = cls(None, unk_token=fields.get("unk_token", str), max_input_chars_per_word=max_chars,
                    continuing_subword_prefix=fields.get("continuing_subword_prefix", str))
        model.vocab = vocab         # (checked above, and parsed for this model: no second check or copy)
        return model

    def __repr__(self) -> str:
        return (f"WordPiece(vocab_size={len(self.vocab)}, unk_token={self.unk_token!r}, "
                f"continuing_subword_prefix={self.continuing_subword_prefix!r}, "
                f"max_input_chars_per_word={self.max_input_chars_per_word})")


def _str_option(name: str, value) -> str:
    if not isinstance(value, str):
        raise InputTypeError(f"WordPiece {name} must be a str, got {type(value).__name__}",
                             fix='for example unk_token="[UNK]", continuing_subword_prefix="##"')
    return value


def _count_option(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"WordPiece {name} must be a non-negative integer, got {value!r}")
    return value
