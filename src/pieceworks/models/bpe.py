"""BPE: split a piece into chars, then apply learned merges, lowest rank first.

The model holds a vocabulary (token → id) and an ordered list of merges
``(left, right)``. The first merge has rank 0 and goes first. Encoding a
piece works like Hugging Face ``tokenizers.models.BPE``:

1. One symbol per char. With ``continuing_subword_prefix`` every char but
   the first is looked up as ``prefix + char``; with ``end_of_word_suffix``
   the last is looked up as ``char + suffix``. A char not in the vocabulary
   becomes its ``<0xNN>`` byte tokens (``byte_fallback``, all bytes or
   none), else the unknown token (consecutive ones fused into one with
   ``fuse_unk``), else it is dropped.
2. Repeatedly merge the adjacent pair with the lowest rank, the leftmost on
   ties. The new token is ``left + right`` with the right part's prefix
   removed.

With ``ignore_merges`` a piece that is itself in the vocabulary is one
token. ``dropout`` (BPE-dropout) skips each merge with that probability;
pass ``seed`` for reproducible samples.

``tokenize(piece, excluded_ids=...)`` (ours) keeps a set of ids from being
built out of several chars, for special tokens in untrusted text: a merge
that would make one is not applied and the whole-piece look-up skips them.
Merges learned across ``<|endoftext|>`` can otherwise spell the special
token again from plain text. A char's own token is still given (it is the
char's only spelling: a byte's in byte-level BPE), and so are the unknown
token and byte-fallback tokens (they do not spell their text). Without
``excluded_ids`` the result is Hugging Face's.

Threads: one model may be shared. Its encoder is built on first use and
rebuilt after an option or the vocabulary changes; an encode running while
an option changes uses the old or the new encoder, never a mix.

Offsets are char offsets inside the piece, computed as Hugging Face does:
each symbol stands for some UTF-8 bytes (a char its own, a byte-fallback
token one), offsets add those up, and a byte offset maps to the char that
holds it. So all byte-fallback tokens of a char get that char's span, and
a dropped char (unknown, with no ``unk_token``) shifts later offsets left
(Hugging Face's behaviour, kept on purpose).

The loop runs in the Cython kernel :mod:`pieceworks._kernels.bpe_encode`.

>>> model = BPE({"u": 0, "g": 1, "h": 2, "ug": 3, "hug": 4}, [("u", "g"), ("h", "ug")])
>>> [(t.value, t.offsets) for t in model.tokenize("hugug")]
[('hug', (0, 3)), ('ug', (3, 5))]
"""

from __future__ import annotations

import json
import os
import struct
from array import array
from pathlib import Path
from typing import Iterable

from .._component import Fields
from ..errors import ConfigError, FileFormatError, InputTypeError, TokenizerFileError
from .._kernels.json_text import PairsById
from ..pretokenized import Token
from ._base import Model
from ._vocab import check_vocab, ordered_by_id

__all__ = ["BPE"]

#: merges.txt's first line as Hugging Face writes it (and skips it on reading).
MERGES_HEADER = "#version: 0.2"

_OPTION_NAMES = ("dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                 "byte_fallback", "ignore_merges")


class BPE(Model):
    """A byte-pair-encoding model; arguments and defaults as Hugging Face's ``BPE``.

    ``seed`` (ours) makes BPE-dropout reproducible; it is not saved.
    """

    type_name = "BPE"

    def __init__(self, vocab: dict[str, int] | None = None, merges: Iterable | None = None,
                 cache_capacity: int | None = 10000, dropout: float | None = None,
                 unk_token: str | None = None, continuing_subword_prefix: str | None = None,
                 end_of_word_suffix: str | None = None, fuse_unk: bool = False,
                 byte_fallback: bool = False, ignore_merges: bool = False, *, seed: int | None = None):
        if (vocab is None) != (merges is None):
            raise ConfigError("`vocab` and `merges` must be both specified",
                              fix="pass both, or neither for an empty model to train")
        from_files = isinstance(vocab, (str, os.PathLike))
        if from_files != isinstance(merges, (str, os.PathLike)):
            raise InputTypeError("vocab and merges must both be file paths, or a dict and a list of pairs",
                                 fix="use BPE.from_file(vocab_path, merges_path) or BPE(vocab_dict, merges_list)")
        self._encoder = None      # (generation, BpeEncoder) once built
        self._generation = 0      # bumped by every change the encoder depends on
        self.cache_capacity = 10000 if cache_capacity is None else _int_option("cache_capacity", cache_capacity)
        self.dropout = dropout
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix
        self.end_of_word_suffix = end_of_word_suffix
        self.fuse_unk = fuse_unk
        self.byte_fallback = byte_fallback
        self.ignore_merges = ignore_merges
        self.seed = seed
        if from_files:      # (Hugging Face's BPE takes the files' paths too: BPE.from_file)
            self._set_vocab_and_merges(*_read_files(vocab, merges))
        else:
            self._set_vocab_and_merges(dict(vocab or {}), list(merges or []))

    # -- options: changing one rebuilds the encoder (and empties the cache) -----
    def __setattr__(self, name, value):
        if name in _OPTION_NAMES:
            value = _check_option(name, value)
        super().__setattr__(name, value)      # (moves the component epoch: fast plans re-read options)
        if name in _OPTION_NAMES or name in ("seed", "cache_capacity"):
            self._forget_encoder()

    def _forget_encoder(self) -> None:
        # The generation, not only the cached encoder, marks the change: an encoder
        # being built from the old options meanwhile (another thread) is not kept.
        object.__setattr__(self, "_generation", self.__dict__.get("_generation", 0) + 1)
        object.__setattr__(self, "_encoder", None)

    def _set_vocab_and_merges(self, vocab: dict[str, int], merges: list, source: "_Source | None" = None) -> None:
        """Check and install a vocabulary and merges; ``source`` says where they came from."""
        from .._kernels.bpe_encode import resolve_merges

        source = source or _Source()
        if source.check_vocab:
            check_vocab(vocab, source.vocab_field(), source.path, error=source.error_class())
        _check_id_range(vocab, source)
        merge_ids = resolve_merges(vocab, merges, self.continuing_subword_prefix)
        if merge_ids is None:  # something is off, or unusual: the careful path finds it and says what
            pairs = [_as_pair(m, i, source) for i, m in enumerate(merges)]
            merge_ids = _flat_keep_last(_merge_ids(vocab, pairs, self.continuing_subword_prefix, source))
        self._install(vocab, merge_ids)

    def _install(self, vocab: dict[str, int], merge_ids: array) -> None:
        set_attr = super().__setattr__        # (moves the component epoch, skips the option checks)
        set_attr("vocab", vocab)
        set_attr("vocab_r", {i: t for t, i in vocab.items()})
        set_attr("_merge_ids", merge_ids)
        set_attr("_merge_strings", None)
        self._forget_encoder()

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The merges as ``(left, right)`` token pairs, first rank first."""
        if self._merge_strings is None:
            ids, token = self._merge_ids, self.vocab_r
            object.__setattr__(self, "_merge_strings",
                               [(token[ids[k]], token[ids[k + 1]]) for k in range(0, len(ids), 3)])
        return self._merge_strings

    def _set_trained(self, vocab: dict[str, int], merges: list[tuple[str, str]],
                     continuing_subword_prefix: str | None, end_of_word_suffix: str | None, *,
                     merge_ids: list[tuple[int, int, int]] | None = None) -> None:
        """What a trainer calls: new vocab, merges, prefix and suffix; other options stay.

        ``merge_ids`` (the trainer's own ``(left, right, new)`` ids, one per
        merge, no pair twice) skips re-checking what the trainer built.
        """
        object.__setattr__(self, "continuing_subword_prefix", continuing_subword_prefix)
        object.__setattr__(self, "end_of_word_suffix", end_of_word_suffix)
        if merge_ids is None:
            self._set_vocab_and_merges(dict(vocab), list(merges))
        else:
            self._install(dict(vocab), array("I", [i for triple in merge_ids for i in triple]))

    def _get_encoder(self):
        built = self._encoder
        generation = self._generation
        if built is None or built[0] != generation:
            from .._kernels.bpe_encode import BpeEncoder
            from .._kernels.raw_encoding import untrack

            id_to_token = id_table(self.vocab_r)
            untrack(id_to_token)    # strs and None: no collector pass need read them
            encoder = BpeEncoder(
                self._merge_ids, _char_table(self.vocab, self.continuing_subword_prefix, self.end_of_word_suffix),
                _byte_table(self.vocab), id_to_token, self.vocab, unk_token=self.unk_token,
                fuse_unk=self.fuse_unk, byte_fallback=self.byte_fallback, ignore_merges=self.ignore_merges,
                prefix=self.continuing_subword_prefix, suffix=self.end_of_word_suffix,
                dropout=self.dropout if self.dropout else None, seed=self.seed,
                cache_capacity=self.cache_capacity, token_cls=Token)
            if self._generation == generation:   # else an option changed meanwhile: the next call rebuilds
                object.__setattr__(self, "_encoder", (generation, encoder))
            return encoder
        return built[1]

    # -- the model ---------------------------------------------------------------
    def tokenize_chars(self, sequence: str, excluded_ids: "frozenset[int] | Iterable[int] | None" = None) -> list[Token]:
        """The tokens of one piece, char offsets inside it.

        ``excluded_ids``: ids the merges must not build (special tokens, for
        text that may spell them; a char's own token is still given); see
        the module doc. None (the default)
        is Hugging Face's behaviour. Pass the same frozenset on every call:
        its prepared form is kept per set.

        >>> model = BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
        >>> model.tokenize_chars("aba")
        [Token(id=2, value='ab', offsets=(0, 2)), Token(id=0, value='a', offsets=(2, 3))]
        >>> [t.value for t in model.tokenize_chars("aba", excluded_ids=frozenset({2}))]
        ['a', 'b', 'a']
        """
        if not isinstance(sequence, str):
            raise InputTypeError(f"BPE.tokenize expects a str, got {type(sequence).__name__}")
        return self._get_encoder().tokenize(sequence, excluded_ids)

    def tokenize(self, sequence: str, excluded_ids: "frozenset[int] | Iterable[int] | None" = None) -> list[Token]:
        """:meth:`tokenize_chars` with Hugging Face's UTF-8 byte offsets, exactly as its ``BPE.tokenize``
        gives them: a dropped unknown char (no ``unk_token``) counts no bytes, so the offsets after it
        shift, and each byte-fallback token spans one byte.

        >>> BPE({"é": 0, "<0x41>": 1}, [], byte_fallback=True).tokenize("éA")
        [Token(id=0, value='é', offsets=(0, 2)), Token(id=1, value='<0x41>', offsets=(2, 3))]
        """
        if not isinstance(sequence, str):
            raise InputTypeError(f"BPE.tokenize expects a str, got {type(sequence).__name__}")
        return self._get_encoder().tokenize_bytes(sequence, excluded_ids)

    def encode_ids(self, sequence: str, excluded_ids: "frozenset[int] | Iterable[int] | None" = None) -> list[int]:
        """Only the ids of :meth:`tokenize` (faster: no Token objects)."""
        return self._get_encoder().encode_ids(sequence, excluded_ids)

    def exclusion_matters(self, excluded_ids: "frozenset[int] | Iterable[int]") -> bool:
        """Whether ``tokenize(..., excluded_ids)`` can differ from ``tokenize(...)`` for some text.

        False when no id of the set is a merge's result (nor, with
        ``ignore_merges``, any token but a char's own): then the merges can
        never spell one, and a path that ignores the set (a fused fast path)
        is safe. A char's own token is never left out.

        >>> model = BPE({"a": 0, "b": 1, "ab": 2, "<s>": 3}, [("a", "b")])
        >>> model.exclusion_matters({3}), model.exclusion_matters({2}), model.exclusion_matters({0})
        (False, True, False)

        Read off the vocabulary and merges, not the encoder: a byte-level
        tokenizer asks this on its first encode, and its fast path never
        needs the encoder (Llama 3's took tens of milliseconds to make).
        """
        from .._kernels.bpe_encode import _checked_ids

        vocab_r, prefix, suffix = self.vocab_r, self.continuing_subword_prefix, self.end_of_word_suffix
        spelled = {tid for tid in _checked_ids(excluded_ids)
                   if tid in vocab_r and not _is_char_token(vocab_r[tid], prefix, suffix)}
        return bool(spelled) and (bool(self.ignore_merges) or not spelled.isdisjoint(self._merge_ids[2::3]))

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, id: int) -> str | None:
        return self.vocab_r.get(id)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    def get_vocab_size(self) -> int:
        return len(self.vocab)

    def get_merges(self) -> list[tuple[str, str]]:
        """The merges, first rank first."""
        return list(self.merges)

    def get_trainer(self):
        from ..trainers.bpe import BpeTrainer

        return BpeTrainer()

    def _clear_cache(self) -> None:
        built = self._encoder
        if built is not None:
            built[1].clear_cache()

    def _resize_cache(self, capacity: int) -> None:
        object.__setattr__(self, "cache_capacity", _int_option("cache_capacity", capacity))
        built = self._encoder
        if built is not None:
            built[1].resize_cache(capacity)

    # -- files -------------------------------------------------------------------
    def save(self, folder: str, prefix: str | None = None) -> list[str]:
        """Write ``vocab.json`` and ``merges.txt`` (``prefix-vocab.json``, ...) into ``folder``."""
        from ..fileio import atomic_write_text

        vocab_path = self._write_vocab_json(self._model_file(folder, prefix, "vocab.json"), self.vocab)
        merges_path = self._model_file(folder, prefix, "merges.txt")
        lines = [MERGES_HEADER] + [f"{a} {b}" for a, b in self.merges]
        atomic_write_text(merges_path, "\n".join(lines) + "\n")
        return [vocab_path, os.fspath(merges_path)]

    @staticmethod
    def read_file(vocab: str, merges: str) -> tuple[dict[str, int], list[tuple[str, str]]]:
        """Read ``vocab.json`` and ``merges.txt``: ``(vocab, merges)``.

        >>> import tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> _ = open(os.path.join(d, "v.json"), "w").write('{"a": 0, "b": 1, "ab": 2}')
        >>> _ = open(os.path.join(d, "m.txt"), "w").write("#version: 0.2\\na b\\n")
        >>> BPE.read_file(os.path.join(d, "v.json"), os.path.join(d, "m.txt"))
        ({'a': 0, 'b': 1, 'ab': 2}, [('a', 'b')])
        """
        vocab_dict = _read_vocab_json(vocab)
        pairs, _ = _read_merges_txt(merges)
        return vocab_dict, pairs

    @classmethod
    def from_file(cls, vocab: str, merges: str, **kwargs) -> "BPE":
        """A model from ``vocab.json`` and ``merges.txt``; other options as keywords.

        Merges naming tokens the vocabulary lacks raise
        :class:`~pieceworks.errors.FileFormatError` with the merges file and line.
        """
        read = _read_files(vocab, merges)
        model = cls(**kwargs)
        model._set_vocab_and_merges(*read)
        return model

    # -- tokenizer.json ----------------------------------------------------------
    def _to_fields(self, merges_by_id: bool = False) -> dict:
        tokens = _tokens_by_id(self.vocab_r) if merges_by_id else None
        return {
            "dropout": self.dropout,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "end_of_word_suffix": self.end_of_word_suffix,
            "fuse_unk": self.fuse_unk,
            "byte_fallback": self.byte_fallback,
            "ignore_merges": self.ignore_merges,
            "vocab": ordered_by_id(self.vocab),
            "merges": _merge_lists(self._merge_ids, self.vocab_r) if tokens is None
            else PairsById(self._merge_ids, tokens),
        }

    def _text_json(self) -> dict:
        """:meth:`to_json` to be written as text: its merges a stand-in that the writer spells from
        the merge table's ids (see :mod:`pieceworks.formats.json_text`), not half a million lists."""
        return {"type": self.type_name, **self._to_fields(merges_by_id=True)}

    @classmethod
    def _from_fields(cls, fields: Fields) -> "BPE":
        dropout = fields.get("dropout", (int, float), None)
        if dropout is not None and not 0.0 <= dropout <= 1.0:
            raise fields.error("dropout", f"dropout must be between 0 and 1, got {dropout!r}")
        model = cls(
            dropout=dropout,
            unk_token=fields.get("unk_token", str, None),
            continuing_subword_prefix=fields.get("continuing_subword_prefix", str, None),
            end_of_word_suffix=fields.get("end_of_word_suffix", str, None),
            fuse_unk=fields.get("fuse_unk", bool, False),
            byte_fallback=fields.get("byte_fallback", bool, False),
            ignore_merges=fields.get("ignore_merges", bool, False),
        )
        vocab = fields.get("vocab", dict, {})
        merges = fields.get("merges", list, [])
        model._set_vocab_and_merges(vocab, merges, _Source(path=fields.path, fields=fields))
        return model

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={getattr(self, k)!r}" for k in _OPTION_NAMES if getattr(self, k) not in (None, False))
        return f"BPE(vocab_size={len(self.vocab)}, merges={len(self._merge_ids) // 3}{', ' + opts if opts else ''})"


# -- building the kernel's tables ----------------------------------------------


class _Source:
    """Where a vocabulary and merges came from, to name it in errors."""

    def __init__(self, path=None, lines: list[int] | None = None, fields: Fields | None = None,
                 check_vocab: bool = True):
        self.path = path
        self.lines = lines
        self.fields = fields
        self.check_vocab = check_vocab

    def error_class(self):
        return TokenizerFileError if self.fields is not None else FileFormatError

    def vocab_field(self) -> str:
        return self.fields.field_name("vocab") if self.fields is not None else "vocab"

    def merge_error(self, index: int, problem: str, fix: str) -> FileFormatError:
        if self.fields is not None:
            return TokenizerFileError(self.path, problem, field=self.fields.field_name(f"merges[{index}]"), fix=fix)
        if self.lines is not None:
            return FileFormatError(self.path, problem, line=self.lines[index], fix=fix)
        return FileFormatError(self.path, problem, field=f"merges[{index}]", fix=fix)


#: The encoder keeps tables indexed by id (int32 in the kernel): ids stay below this,
#: and below ``_SPARSE_FACTOR`` times the vocabulary size plus ``_SPARSE_SLACK``.
_MAX_ID = 2**31 - 1
_SPARSE_FACTOR = 4
_SPARSE_SLACK = 1 << 16


def _check_id_range(vocab: dict[str, int], source: "_Source") -> None:
    """Refuse ids the encoder's id-indexed tables cannot hold (a file with one id of 10**12).

    Hugging Face keeps ids in a hash map and accepts any u32; ours are table
    indices, so an id far past the vocabulary's size is refused instead of
    allocating gigabytes. Real vocabularies number their tokens densely.

    >>> _check_id_range({"a": 0, "b": 5}, _Source())
    >>> try:
    ...     _check_id_range({"a": 0, "b": 10**12}, _Source())
    ... except FileFormatError as exc:
    ...     print(str(exc)[:53])
    <string>: field 'vocab': id 1000000000000 (token 'b')
    """
    if not vocab:
        return
    top = max(vocab.values())
    if top <= min(_MAX_ID, _SPARSE_FACTOR * len(vocab) + _SPARSE_SLACK):
        return
    token = next(t for t, i in vocab.items() if i == top)
    raise source.error_class()(
        source.path, f"id {top} (token {token!r}) is far past the vocabulary's {len(vocab)} tokens; BPE ids "
        f"must be below {_MAX_ID + 1} and at most {_SPARSE_FACTOR}x the vocabulary size + {_SPARSE_SLACK}",
        field=source.vocab_field(), fix="number the tokens 0, 1, 2, ... (as tokenizer files do)")


def _as_pair(merge, index: int, source: _Source) -> tuple[str, str]:
    """A merge as ``(left, right)``: from a pair or a legacy ``"left right"`` string."""
    if isinstance(merge, str):
        parts = merge.split(" ")
        if len(parts) == 2:
            return parts[0], parts[1]
        problem = f"merge {merge!r} is not two tokens separated by one space"
    elif isinstance(merge, (list, tuple)) and len(merge) == 2 and all(isinstance(t, str) for t in merge):
        return merge[0], merge[1]
    else:
        problem = f"merge {merge!r} is not a pair of token strings"
    raise source.merge_error(index, problem, 'write each merge as ["left", "right"] or "left right"')


def _merge_ids(vocab: dict[str, int], pairs: list[tuple[str, str]], prefix: str | None,
               source: _Source) -> list[tuple[int, int, int]]:
    """``(left_id, right_id, new_id)`` per merge; every token must be in the vocabulary."""
    prefix_len = len(prefix.encode("utf-8")) if prefix else 0
    get = vocab.get
    out = []
    for i, (a, b) in enumerate(pairs):
        a_id = get(a)
        b_id = get(b)
        if a_id is not None and b_id is not None:
            right = b[len(prefix):] if prefix and b.startswith(prefix) else _strip_prefix(b, prefix, prefix_len)
            new_id = get(a + right) if right is not None else None
            if new_id is not None:
                out.append((a_id, b_id, new_id))
                continue
            if right is None:
                problem = f"merge {a!r} {b!r}: {b!r} does not start with the continuing prefix {prefix!r}"
            else:
                problem = f"merge {a!r} {b!r} makes {a + right!r}, which is not in the vocabulary"
        else:
            missing = a if a_id is None else b
            problem = f"merge {a!r} {b!r} uses {missing!r}, which is not in the vocabulary"
        raise source.merge_error(i, problem, "the vocabulary and merges must come from the same tokenizer")
    return out


def _merge_lists(ids: array, token: dict[int, str]) -> list[list[str]]:
    """tokenizer.json's ``merges``: ``[[left, right], ...]``.

    >>> _merge_lists(array("I", [0, 1, 2]), {0: "a", 1: "b", 2: "ab"})
    [['a', 'b']]
    """
    tokens = _tokens_by_id(token)
    if tokens is None:
        spell = token.__getitem__
        return list(map(list, zip(map(spell, ids[0::3]), map(spell, ids[1::3]))))
    from .._kernels.json_text import pair_lists

    return pair_lists(ids, tokens)


def id_table(token: dict[int, str]) -> list[str | None]:
    """``token`` as a list indexed by id, None for a missing id.

    >>> id_table({0: "a", 2: "c"})
    ['a', None, 'c']
    """
    return list(map(token.get, range(max(token, default=-1) + 1)))


def _tokens_by_id(token: dict[int, str]) -> list[str | None] | None:
    """:func:`id_table`, or None when the ids are too far apart for one (writing needs no table).

    >>> _tokens_by_id({10**9: "a"}) is None
    True
    """
    if max(token, default=-1) + 1 > 4 * len(token) + 1024:
        return None
    return id_table(token)


def _flat_keep_last(triples: list[tuple[int, int, int]]) -> array:
    """Triples flattened; a pair listed twice keeps its later place.

    >>> list(_flat_keep_last([(0, 1, 2), (1, 1, 3), (0, 1, 2)]))
    [1, 1, 3, 0, 1, 2]
    """
    last = {(a, b): rank for rank, (a, b, _) in enumerate(triples)}
    return array("I", [i for rank, t in enumerate(triples) if last[t[0], t[1]] == rank for i in t])


def _strip_prefix(right: str, prefix: str | None, prefix_len: int) -> str | None:
    """The right part without its continuing prefix (None when it cannot be cut)."""
    if not prefix:
        return right
    if right.startswith(prefix):
        return right[len(prefix):]
    # Hugging Face cuts the prefix's byte length whatever the text; keep that.
    raw = right.encode("utf-8")
    if len(raw) < prefix_len:
        return None
    try:
        return raw[prefix_len:].decode("utf-8")
    except UnicodeDecodeError:
        return None


def _is_char_token(token: str, prefix: str | None, suffix: str | None) -> bool:
    """Whether ``token`` is one char, marked or not (a key of :func:`_char_table`).

    >>> _is_char_token("##a", "##", None), _is_char_token("a</w>", None, "</w>"), _is_char_token("ab", "##", None)
    (True, True, False)
    """
    n = len(token)
    if n == 1:
        return True
    has_prefix = prefix is not None and token.startswith(prefix)
    has_suffix = suffix is not None and token.endswith(suffix)
    lp = len(prefix) if prefix is not None else 0
    ls = len(suffix) if suffix is not None else 0
    return (has_prefix and n == lp + 1 or has_suffix and n == ls + 1
            or has_prefix and has_suffix and n == lp + ls + 1)


def _char_table(vocab: dict[str, int], prefix: str | None, suffix: str | None) -> list[tuple[int, int]]:
    """``(code_point << 2 | marks, id)`` for every token that is one marked char.

    ``marks``: 1 = ``prefix + char``, 2 = ``char + suffix``, 3 = both.

    >>> _char_table({"a": 0, "##a": 1, "ab": 2}, "##", None)
    [(388, 0), (389, 1)]
    """
    lp = -1 if prefix is None else len(prefix)
    ls = -1 if suffix is None else len(suffix)
    longest = 1 + max(lp, 0) + max(ls, 0)
    out = []
    for token, tid in vocab.items():
        n = len(token)
        if n > longest or n == 0:
            continue
        if n == 1:
            out.append((ord(token) << 2, tid))
        if n == lp + 1 and token.startswith(prefix):
            out.append((ord(token[lp]) << 2 | 1, tid))
        if n == ls + 1 and token.endswith(suffix):
            out.append((ord(token[0]) << 2 | 2, tid))
        if lp >= 0 and ls >= 0 and n == lp + ls + 1 and token.startswith(prefix) and token.endswith(suffix):
            out.append((ord(token[lp]) << 2 | 3, tid))
    return out


def _byte_table(vocab: dict[str, int]) -> list[int]:
    """The id of each ``<0xNN>`` byte token, or -1."""
    return [vocab.get(f"<0x{b:02X}>", -1) for b in range(256)]


# -- reading files -----------------------------------------------------------------


def _read_files(vocab, merges) -> "tuple[dict[str, int], list[tuple[str, str]], _Source]":
    """vocab.json and merges.txt, and where the merges came from (for errors that name a line)."""
    vocab_dict = _read_vocab_json(vocab)
    pairs, lines = _read_merges_txt(merges)
    return vocab_dict, pairs, _Source(path=os.fspath(merges), lines=lines, check_vocab=False)


def _read_vocab_json(path) -> dict[str, int]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise FileFormatError(path, "file not found", fix="check the vocab.json path") from exc
    except UnicodeDecodeError as exc:
        raise FileFormatError(path, f"not UTF-8 text: {exc}", fix="give a vocab.json") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FileFormatError(path, f"not valid JSON: {exc.msg}", line=exc.lineno,
                              fix="give a vocab.json mapping each token to its id") from exc
    if not isinstance(data, dict):
        raise FileFormatError(path, "expected a JSON object of token -> id",
                              fix="give a vocab.json mapping each token to its id")
    return check_vocab(data, "vocab", path)


def _read_merges_txt(path) -> tuple[list[tuple[str, str]], list[int]]:
    """Merges and their line numbers; ``#version`` lines are skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise FileFormatError(path, "file not found", fix="check the merges.txt path") from exc
    except UnicodeDecodeError as exc:
        raise FileFormatError(path, f"not UTF-8 text: {exc}", fix="give a merges.txt") from exc
    pairs: list[tuple[str, str]] = []
    lines: list[int] = []
    raw_lines = text.split("\n")
    if raw_lines and raw_lines[-1] == "":
        raw_lines.pop()  # the final newline ends the last line
    for number, line in enumerate(raw_lines, start=1):
        line = line[:-1] if line.endswith("\r") else line
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise FileFormatError(path, f"expected two tokens separated by one space, got {line!r}", line=number,
                                  fix="each merges.txt line is 'left right'")
        pairs.append((parts[0], parts[1]))
        lines.append(number)
    return pairs, lines


# -- option checks ----------------------------------------------------------------


def _as_f32(value: float) -> float:
    """The shortest decimal with the same 32-bit float as ``value``.

    Hugging Face keeps dropout as an f32 and writes its shortest form, so
    0.123456789 is saved as 0.12345679; keeping that form saves the same.

    >>> _as_f32(0.123456789), _as_f32(0.1)
    (0.12345679, 0.1)
    """
    single = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        text = f"{single:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            return float(text)
    return single


def _int_option(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _check_option(name: str, value):
    if name == "dropout":
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"dropout should be between 0 and 1, inclusive, got {value!r}",
                              fix="pass a probability like 0.1, or None for no dropout")
        return _as_f32(float(value))
    if name in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
        if value is not None and not isinstance(value, str):
            raise InputTypeError(f"{name} must be a str or None, got {type(value).__name__}")
        return value
    if not isinstance(value, bool):
        raise InputTypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value
