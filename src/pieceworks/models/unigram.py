"""Unigram: pieces with log-probability scores; the best segmentation by Viterbi.

A Unigram language model scores a segmentation by the sum of its pieces'
log-probabilities and picks the best one (Viterbi over a byte trie of the
vocabulary, in :mod:`pieceworks._kernels.unigram`). A run of characters no
piece covers becomes one unknown token (its text is the token's value), or
``<0xNN>`` byte tokens with ``byte_fallback``. With ``alpha`` set, encoding
samples instead (subword regularization): from the ``nbest_size`` best
segmentations, or from all of them when ``nbest_size`` is None, each with
weight exp(alpha · score). Sampling draws from the calling thread's own
generator, seeded by ``pieceworks.sentencepiece.set_random_generator_seed``.

``tokenize(text, excluded_ids=...)`` leaves some pieces out of the search
(the ids of special tokens, say, so that their text in the input is never
read as them): the best segmentation over the other pieces.

Names, fields and behaviour follow Hugging Face ``tokenizers.models.Unigram``
(scores in double precision, the unknown score is the lowest score minus 10).

>>> m = Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -1.5)], unk_id=0)
>>> [(t.value, t.offsets) for t in m.tokenize("abcab")]
[('ab', (0, 2)), ('c', (2, 3)), ('ab', (3, 5))]
>>> m.token_to_id("ab"), m.id_to_token(1)
(3, 'a')
>>> [t.value for t in m.tokenize("abcab", excluded_ids={3})]
['a', 'b', 'c', 'a', 'b']
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .._component import Fields, state_data
from .._kernels import unigram as K
from ..errors import ConfigError, FileFormatError, InputTypeError, UnknownTokenError
from ..pretokenized import Token
from ._base import Model

__all__ = ["Unigram"]


class Unigram(Model):
    """A vocabulary of ``(piece, score)`` pairs; ids are list positions."""

    type_name = "Unigram"

    def __init__(self, vocab: list | None = None, unk_id: int | None = None, byte_fallback: bool = False,
                 alpha: float | None = None, nbest_size: int | None = None):
        if vocab is None:
            # Hugging Face's empty model: just the unknown token.
            vocab, unk_id = [("<unk>", 0.0)], 0 if unk_id is None else unk_id
        self._vocab = _check_vocab(vocab)
        self._pieces = [p for p, _ in self._vocab]
        self._unk_id = self._checked_unk_id(unk_id)
        self._byte_fallback = bool(byte_fallback)
        self.alpha = _check_alpha(alpha)
        self.nbest_size = _check_nbest(nbest_size)
        self._build_core()

    # -- options the kernel is built with: assigning one builds it again -----------------
    @property
    def unk_id(self) -> int | None:
        """The index of the unknown piece, or None."""
        return self._unk_id

    @unk_id.setter
    def unk_id(self, value: int | None) -> None:
        self._unk_id = self._checked_unk_id(value)
        self._build_core()

    @property
    def byte_fallback(self) -> bool:
        """Whether an unknown char is spelled by its UTF-8 bytes' ``<0xNN>`` pieces.

        >>> m = Unigram([("<unk>", 0.0), ("a", -1.0), ("<0x62>", -1.0)], unk_id=0)
        >>> [t.value for t in m.tokenize("ab")]
        ['a', 'b']
        >>> m.byte_fallback = True
        >>> [t.value for t in m.tokenize("ab")]
        ['a', '<0x62>']
        """
        return self._byte_fallback

    @byte_fallback.setter
    def byte_fallback(self, value: bool) -> None:
        self._byte_fallback = bool(value)
        self._build_core()

    def _checked_unk_id(self, unk_id):
        if unk_id is not None:
            if isinstance(unk_id, bool) or not isinstance(unk_id, int) or unk_id < 0:
                raise ConfigError(f"unk_id must be a non-negative int, got {unk_id!r}",
                                  fix="pass the index of the unknown token in vocab, or None")
            if unk_id >= len(self._vocab):
                raise ConfigError(f"unk_id {unk_id} is not below the vocabulary size {len(self._vocab)}",
                                  fix="pass the index of the unknown token in vocab")
        return unk_id

    def _build_core(self) -> None:
        """The kernel with the vocabulary and the options as they are now (and empty caches)."""
        unk_id = self._unk_id
        self._core = K.SpmCore(self._pieces, [s for _, s in self._vocab], [1] * len(self._vocab), 1,
                               self._byte_fallback, True, -1 if unk_id is None else unk_id)
        self._cache: dict = {}
        self._masks: dict[frozenset, bytes] = {}

    # -- the model -------------------------------------------------------------
    def tokenize_chars(self, sequence: str, excluded_ids=None) -> list[Token]:
        """The tokens of one pre-tokenized piece: the best segmentation (or a sample, with ``alpha``).

        ``excluded_ids`` (an iterable of ints, or None) are pieces the
        segmentation must not use: it is the best one over the other pieces,
        and a run of unknown chars is never given an excluded id either (the
        unknown id itself still stands for unknown text, and the unknown
        score stays the model's). A piece of one char stays usable: it is
        the char's own spelling, and leaving it out would turn the char into
        the unknown token. Ids outside the vocabulary are ignored. None (the
        default) is Hugging Face's behaviour.

        >>> m = Unigram([("<unk>", 0.0), ("<s>", 0.0), ("<", -2.0), ("s", -2.0), (">", -2.0)], unk_id=0)
        >>> [t.id for t in m.tokenize_chars("<s>")], [t.id for t in m.tokenize_chars("<s>", excluded_ids=[1])]
        ([1], [2, 3, 4])
        """
        mask = None if excluded_ids is None else self._exclusion_mask(excluded_ids)
        try:
            found = self._find_tokens(sequence, mask)
        except UnicodeEncodeError:
            # Lone surrogates (a Python str may hold them; UTF-8 cannot): each
            # becomes U+FFFD, one char for one, so offsets stay right.
            found = self._find_tokens(_without_surrogates(sequence), mask)
        if found is None:
            raise UnknownTokenError("Unigram: the text has a character no piece covers and the model has no "
                                    "unk_id", fix="give the model an unk_id (the index of '<unk>' in vocab)")
        return [Token(i, value, (s, e)) for i, value, s, e in found]

    def _find_tokens(self, sequence: str, mask: "bytes | None" = None):
        if self.alpha is not None and self.alpha != 0.0:
            return self._core.hf_sample(sequence, self._pieces, float(self.alpha),
                                        0 if self.nbest_size is None else int(self.nbest_size), mask)
        key = sequence if mask is None else (mask, sequence)
        found = self._cache.get(key)
        if found is None:
            found = self._core.hf_tokenize(sequence, self._pieces, mask)
            if found is not None and len(self._cache) < 10_000 and len(sequence) < 256:
                self._cache[key] = found
        return found

    def _exclusion_mask(self, excluded_ids) -> bytes:
        """The kernel's mask for ``excluded_ids`` (made once per set of ids)."""
        if isinstance(excluded_ids, (str, bytes)) or not hasattr(excluded_ids, "__iter__"):
            raise InputTypeError(f"excluded_ids must be an iterable of ints, got {type(excluded_ids).__name__}",
                                 fix="pass e.g. excluded_ids={1, 2} (the ids of the special tokens), or None")
        key = excluded_ids if isinstance(excluded_ids, frozenset) else frozenset(excluded_ids)
        mask = self._masks.get(key)
        if mask is None:
            try:
                mask = self._core.exclusion_mask(i for i in key if not self._is_one_char(i))
            except TypeError as exc:
                raise InputTypeError(str(exc), fix="pass piece ids (ints) in excluded_ids") from None
            if len(self._masks) >= 16:
                self._masks.clear()
            self._masks[key] = mask
        return mask

    def _is_one_char(self, i) -> bool:
        return isinstance(i, int) and 0 <= i < len(self._pieces) and len(self._pieces[i]) == 1

    def exclusion_matters(self, excluded_ids) -> bool:
        """Whether ``excluded_ids`` leaves out some piece (one-char pieces are never left out).

        >>> m = Unigram([("<unk>", 0.0), ("<s>", 0.0), ("a", -1.0)], unk_id=0)
        >>> m.exclusion_matters({1}), m.exclusion_matters({2}), m.exclusion_matters({9})
        (True, False, False)
        """
        return any(self._exclusion_mask(excluded_ids))

    def token_to_id(self, token: str) -> int | None:
        if not isinstance(token, str):
            return None
        return self._core.lookup(token)

    def id_to_token(self, id: int) -> str | None:
        if isinstance(id, bool) or not isinstance(id, int) or not 0 <= id < len(self._pieces):
            return None
        return self._pieces[id]

    def get_vocab(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, piece in enumerate(self._pieces):
            out[piece] = i  # later duplicates win, as in Hugging Face
        return out

    def get_vocab_size(self) -> int:
        return len(self._pieces)

    def get_score(self, id: int) -> float:
        """The log-probability score of piece ``id``."""
        return self._vocab[id][1]

    @property
    def vocab(self) -> list[tuple[str, float]]:
        return list(self._vocab)

    def nbest(self, sequence: str, nbest_size: int) -> list[tuple[list[str], float]]:
        """The ``nbest_size`` best segmentations of ``sequence`` with their scores, best first."""
        data = sequence.encode("utf-8")
        if not data:
            return [([], 0.0)]
        return [([self._pieces[i] if f != 1 else data[s:e].decode() for i, s, e, f in segs], score)
                for segs, score in self._core.nbest(data, max(1, int(nbest_size)))]

    def get_trainer(self):
        from .. import trainers

        trainer = getattr(trainers, "UnigramTrainer", None)
        if trainer is None:
            raise ConfigError("Unigram training is not available in this version of pieceworks",
                              fix="train with another model type, or load a trained Unigram (tokenizer.json/.model)")
        return trainer()

    def _clear_cache(self) -> None:
        self._cache.clear()
        self._masks.clear()

    def _resize_cache(self, capacity: int) -> None:
        self._cache.clear()

    # -- files ------------------------------------------------------------------
    def save(self, folder: str, prefix: str | None = None) -> list[str]:
        """Write ``unigram.json`` (the model's tokenizer.json object) into ``folder``."""
        from ..fileio import atomic_write_text

        path = self._model_file(folder, prefix, "unigram.json")
        atomic_write_text(path, json.dumps(self.to_json(), ensure_ascii=False, indent=2))
        return [str(path)]

    @classmethod
    def from_file(cls, path: str) -> "Unigram":
        """Load a ``unigram.json`` written by :meth:`save` (or Hugging Face)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise FileFormatError(path, "file not found", fix="check the path") from exc
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FileFormatError(path, f"not JSON: {exc}", fix="pass a unigram.json file") from exc
        if isinstance(data, dict) and "type" not in data:
            data = {"type": "Unigram", **data}
        return Model.from_json(data, "model", str(path))

    @classmethod
    def from_spm(cls, model_file, byte_fallback: bool | None = None) -> "Unigram":
        """The Unigram of a SentencePiece .model (pieces, scores, unknown id, byte fallback)."""
        from ..formats.sentencepiece import read_model_proto

        proto = read_model_proto(model_file)
        if proto.trainer_spec.model_type != 1:
            raise ConfigError("this .model is not a Unigram model", fix="use pieceworks.models.BPE for BPE models")
        unk = next(i for i, p in enumerate(proto.pieces) if p.type == 2)
        bf = proto.trainer_spec.byte_fallback if byte_fallback is None else byte_fallback
        return cls([(p.piece, float(p.score)) for p in proto.pieces], unk_id=unk, byte_fallback=bf)

    # -- tokenizer.json -------------------------------------------------------------
    def _to_fields(self) -> dict:
        return {"unk_id": self.unk_id, "vocab": [[p, s] for p, s in self._vocab],
                "byte_fallback": self.byte_fallback}

    @classmethod
    def _from_fields(cls, fields: Fields) -> "Unigram":
        vocab = fields.get("vocab", list)
        for i, entry in enumerate(vocab):
            ok = (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                  and isinstance(entry[1], (int, float)) and not isinstance(entry[1], bool))
            if not ok:
                raise fields.error("vocab", f"entry {i} is {entry!r}, not [piece, score]",
                                   fix="each vocab entry must be a [string, number] pair")
        unk_id = fields.get("unk_id", int, None, nullable=True)
        if unk_id is not None and not 0 <= unk_id < len(vocab):
            raise fields.error("unk_id", f"unk_id {unk_id} is outside the vocabulary (size {len(vocab)})",
                               fix="set unk_id to the index of the unknown token, or null")
        byte_fallback = fields.get("byte_fallback", bool, False)
        return cls([(p, float(s)) for p, s in vocab], unk_id=unk_id, byte_fallback=byte_fallback)

    def __repr__(self) -> str:
        return (f"Unigram(vocab_size={len(self._vocab)}, unk_id={self.unk_id}, "
                f"byte_fallback={self.byte_fallback})")

    def __setstate__(self, state):
        # (Hugging Face's JSON bytes, or the form earlier versions gave: the JSON and the sampling options.)
        sampling = state if isinstance(state, dict) and "json" in state else None
        alpha, nbest_size = (self.__dict__.get("alpha"), self.__dict__.get("nbest_size")) if sampling is None \
            else (sampling.get("alpha"), sampling.get("nbest_size"))
        clone = Unigram._from_fields(Fields(state_data(state) if sampling is None else sampling["json"], "model"))
        self.__dict__.update(clone.__dict__)
        self.alpha, self.nbest_size = alpha, nbest_size

    def __reduce__(self):
        return (_rebuild, (self.to_json(), self.alpha, self.nbest_size))


def _rebuild(data, alpha, nbest_size):
    model = Unigram._from_fields(Fields(data, "model"))
    model.alpha = alpha
    model.nbest_size = nbest_size
    return model


def _without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (U+D800..U+DFFF) replaced by U+FFFD.

    >>> _without_surrogates("a\\ud800b")
    'a\ufffdb'
    """
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


def _check_vocab(vocab) -> list[tuple[str, float]]:
    if not isinstance(vocab, (list, tuple)):
        raise InputTypeError(f"Unigram vocab must be a list of (piece, score), got {type(vocab).__name__}",
                             fix="pass e.g. [('<unk>', 0.0), ('a', -1.2)]")
    out = []
    for i, entry in enumerate(vocab):
        try:
            piece, score = entry
        except (TypeError, ValueError):
            raise InputTypeError(f"vocab[{i}] is {entry!r}, not a (piece, score) pair",
                                 fix="pass a list of (str, float) pairs") from None
        if not isinstance(piece, str):
            raise InputTypeError(f"vocab[{i}] piece {piece!r} is not a str", fix="pieces must be strings")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or math.isnan(score):
            raise InputTypeError(f"vocab[{i}] score {score!r} is not a number",
                                 fix="scores are log-probabilities (floats)")
        out.append((piece, float(score)))
    bad = first_with_surrogate([p for p, _ in out])
    if bad is not None:
        raise InputTypeError(f"vocab[{bad}] piece {out[bad][0]!r} holds a lone surrogate, which UTF-8 (and so "
                             "a Unigram model) cannot hold", fix="remove the piece, or decode the text it came "
                                                                 "from with errors='replace'")
    return out


def first_with_surrogate(texts: list[str]) -> int | None:
    """The index of the first text holding a lone surrogate (U+D800..U+DFFF), or None.

    >>> first_with_surrogate(["ok", "a\\udc80", "b"]), first_with_surrogate(["ok"])
    (1, None)
    """
    try:
        "".join(texts).encode("utf-8")     # one pass for the usual case: none
        return None
    except UnicodeEncodeError:
        for i, text in enumerate(texts):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return i
    return None


def _check_alpha(alpha):
    if alpha is None:
        return None
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or math.isnan(alpha) or math.isinf(alpha):
        raise ConfigError(f"alpha must be a finite number, got {alpha!r}", fix="use e.g. alpha=0.1, or None")
    return float(alpha)


def _check_nbest(nbest_size):
    if nbest_size is None:
        return None
    if isinstance(nbest_size, bool) or not isinstance(nbest_size, int) or nbest_size < 0:
        raise ConfigError(f"nbest_size must be a non-negative int or None, got {nbest_size!r}",
                          fix="use e.g. nbest_size=64, or None to sample from all segmentations")
    return nbest_size
