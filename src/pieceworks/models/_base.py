"""The Model interface: turn one pre-tokenized piece into tokens.

A model sees one piece of normalized, pre-tokenized text at a time and
returns :class:`~pieceworks.pretokenized.Token` objects whose offsets are
char spans inside that piece (:meth:`Model.tokenize_chars`; ``tokenize``
gives UTF-8 byte spans, as Hugging Face does). It owns the vocabulary (token ↔ id).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .._component import Component, stage_base
from ..pretokenized import Token, in_byte_offsets
from ._vocab import ordered_by_id

__all__ = ["Model", "Token"]


@stage_base("model")
class Model(Component):
    """Base class of BPE, WordPiece, WordLevel and Unigram."""

    @classmethod
    def from_json(cls, data: dict, where: str | None = None, path: str | None = None):
        """Build the model ``data["type"]`` names; older files omit ``type``.

        Without ``type`` the model is recognised by its fields, as Hugging
        Face's untagged fallback does: ``merges`` → BPE,
        ``max_input_chars_per_word`` → WordPiece, a list ``vocab`` → Unigram,
        else WordLevel.
        """
        if cls is Model and isinstance(data, dict) and "type" not in data:
            data = {"type": _guess_model_type(data), **data}
        return super().from_json(data, where, path)

    def tokenize(self, sequence: str, *args, **kwargs) -> list[Token]:
        """The tokens of one piece, with UTF-8 *byte* offsets inside it, as Hugging Face's
        ``Model.tokenize`` gives them (and ``PreTokenizedString.tokenize`` takes them).

        The rest of the arguments go to :meth:`tokenize_chars`, which gives
        char offsets (what the pipeline uses).

        >>> from pieceworks.models import WordLevel
        >>> m = WordLevel({"ü": 0, "x": 1}, unk_token="x")
        >>> [t.offsets for t in m.tokenize("ü")], [t.offsets for t in m.tokenize_chars("ü")]
        ([(0, 2)], [(0, 1)])
        """
        tokens = self.tokenize_chars(sequence, *args, **kwargs)
        return tokens if sequence.isascii() else in_byte_offsets(tokens, sequence)

    def tokenize_chars(self, sequence: str) -> list[Token]:
        """The tokens of one piece, char offsets inside it."""
        raise NotImplementedError

    def token_to_id(self, token: str) -> int | None:
        raise NotImplementedError

    def id_to_token(self, id: int) -> str | None:
        raise NotImplementedError

    def get_vocab(self) -> dict[str, int]:
        raise NotImplementedError

    def get_vocab_size(self) -> int:
        return len(self.get_vocab())

    def get_trainer(self):
        """A trainer of the matching kind, with default options."""
        raise NotImplementedError

    def save(self, folder: str, prefix: str | None = None) -> list[str]:
        """Write the model's own files (vocab.json, ...) into ``folder``; return their paths."""
        raise NotImplementedError

    # Subclasses call this to write files atomically.
    @staticmethod
    def _model_file(folder: str, prefix: str | None, name: str) -> Path:
        return Path(folder) / (f"{prefix}-{name}" if prefix else name)

    @staticmethod
    def _write_vocab_json(path: Path, vocab: dict[str, int]) -> str:
        from ..fileio import atomic_write_text

        ordered = ordered_by_id(vocab)
        atomic_write_text(path, json.dumps(ordered, ensure_ascii=False, separators=(",", ":")))
        return os.fspath(path)


def _guess_model_type(data: dict) -> str:
    if "merges" in data:
        return "BPE"
    if "max_input_chars_per_word" in data:
        return "WordPiece"
    if isinstance(data.get("vocab"), list):
        return "Unigram"
    return "WordLevel"
