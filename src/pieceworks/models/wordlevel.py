"""WordLevel: the simplest model — each piece is one token, or the unknown token.

>>> m = WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]")
>>> [(t.id, t.value) for t in m.tokenize("hello")], [(t.id, t.value) for t in m.tokenize("bye")]
([(1, 'hello')], [(0, '[UNK]')])
"""

from __future__ import annotations

import json
from pathlib import Path

from .._component import Fields
from ..errors import FileFormatError, TokenizerFileError, UnknownTokenError
from ..pretokenized import Token
from ._base import Model
from ._vocab import check_vocab, ordered_by_id

__all__ = ["WordLevel"]


class WordLevel(Model):
    """A vocabulary of whole pieces; anything else maps to ``unk_token``."""

    type_name = "WordLevel"

    def __init__(self, vocab: dict[str, int] | None = None, unk_token: str | None = None):
        self.vocab: dict[str, int] = check_vocab(dict(vocab or {}), "WordLevel vocab")
        self.vocab_r: dict[int, str] = {i: t for t, i in self.vocab.items()}
        # Hugging Face's serde default; the Python constructor's None means the same.
        self.unk_token = "<unk>" if unk_token is None else unk_token

    # -- the model -------------------------------------------------------
    def tokenize_chars(self, sequence: str) -> list[Token]:
        tid = self.vocab.get(sequence)
        if tid is not None:
            return [Token(tid, sequence, (0, len(sequence)))]
        unk = self.vocab.get(self.unk_token)
        if unk is None:
            raise UnknownTokenError(
                f"WordLevel: {sequence!r} is not in the vocabulary and the unk_token "
                f"{self.unk_token!r} is not either",
                fix="add the unk_token to the vocabulary (or train with it as a special token)")
        return [Token(unk, self.unk_token, (0, len(sequence)))]

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, id: int) -> str | None:
        return self.vocab_r.get(id)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    def get_vocab_size(self) -> int:
        return len(self.vocab)

    def get_trainer(self):
        from ..trainers.wordlevel import WordLevelTrainer

        return WordLevelTrainer()

    # -- files -----------------------------------------------------------
    def save(self, folder: str, prefix: str | None = None) -> list[str]:
        """Write ``vocab.json`` (token → id) into ``folder``."""
        return [self._write_vocab_json(self._model_file(folder, prefix, "vocab.json"), self.vocab)]

    @staticmethod
    def read_file(vocab: str) -> dict[str, int]:
        """Read a ``vocab.json`` (token → id)."""
        try:
            data = json.loads(Path(vocab).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise FileFormatError(vocab, "file not found", fix="check the path") from exc
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FileFormatError(vocab, f"not a JSON vocabulary: {exc}",
                                  fix="give a vocab.json mapping each token to its id") from exc
        if not isinstance(data, dict):
            raise FileFormatError(vocab, "expected a JSON object of token → id",
                                  fix="give a vocab.json mapping each token to its id")
        return check_vocab(data, str(vocab))

    @classmethod
    def from_file(cls, vocab: str, unk_token: str | None = None) -> "WordLevel":
        """Load from a ``vocab.json``."""
        return cls(cls.read_file(vocab), unk_token=unk_token)

    # -- tokenizer.json --------------------------------------------------
    def _to_fields(self) -> dict:
        return {"vocab": ordered_by_id(self.vocab), "unk_token": self.unk_token}

    @classmethod
    def _from_fields(cls, fields: Fields) -> "WordLevel":
        vocab = fields.get("vocab", dict)
        check_vocab(vocab, fields.field_name("vocab"), path=fields.path, error=TokenizerFileError)
        return cls(vocab, unk_token=fields.get("unk_token", str, "<unk>"))

    def __repr__(self) -> str:
        return f"WordLevel(vocab_size={len(self.vocab)}, unk_token={self.unk_token!r})"
