"""Counting: texts → ``{piece: count}``, the only thing trainers consume.

The tokenizer's normalizer and pre-tokenizer run on every text; each piece
they produce is counted. Counting is its own step, so that it can run on all
cores, on a cluster (:mod:`pieceworks.distributed`), in bounded memory, and
be saved and merged:

>>> from pieceworks.pre_tokenizers import WhitespaceSplit
>>> count_words(["a b a", "b c"], pre_tokenizer=WhitespaceSplit())
{'a': 2, 'b': 2, 'c': 1}
>>> c = count_texts(["a b a", "b c"], pre_tokenizer=WhitespaceSplit())
>>> c + count_texts(["c d"], pre_tokenizer=WhitespaceSplit())
Counts({'a': 2, 'b': 2, 'c': 2, 'd': 1})

**Order.** A :class:`Counts` lists its pieces in the order they were first
met in the input (as a dict filled by one pass would). Some trainers break
ties by that order (``tie_break="first_seen"``, the numbering of
``##``-prefixed chars), so every path here keeps it: units of input counted
in separate processes, tables spilled to disk, partitions counted on Dask
workers all carry a *first-seen key* per piece, ``(unit index << 32) |
rank in the unit``, and the merge keeps the smallest. Training from files
is therefore exactly counting + ``train_from_counts``, whatever the number of
workers or the memory limit. Merging two separately made tables (``a + b``)
keeps ``a``'s order, then ``b``'s new pieces: as tables, ``a + b == b + a``.

**The fast path.** For the pre-tokenizers whose cut is a scanner
(ByteLevel, Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation
"isolated", Digits, a Sequence of those class-run cuts that
``pre_tokenizers.class_run_actions`` makes one cut, UnicodeScripts, or none) the Cython kernel
:mod:`pieceworks._kernels.count` cuts and counts without a Python object per
piece; a normalizer, if any, runs as ``normalize_str`` per text. Other
pipelines use :func:`pieces_of` (the general path); the tests hold the two
equal.

**Bounded memory.** With ``memory_limit``, the table is spilled to disk when
it outgrows its share of the limit, split by piece hash into partitions;
at the end each partition is summed on its own into a run sorted by
first-seen key, and the runs are merged, a block at a time, into one counts
file. The resulting :class:`Counts` stays on disk and is read block by block
(the file goes when the Counts goes); trainers stream it
(:func:`word_batches`) without building a table of all pieces in memory.
The result equals an unlimited run's, byte for byte once saved.

**Pruning** (:meth:`Counts.prune`) drops rare pieces: ``min_count`` keeps
pieces seen at least that often, ``top_k`` the ``k`` most frequent (ties
go to the piece seen first). Pruned counts train a different (smaller)
model than the full counts: every pair inside a dropped piece is lost too.
Prune to fit memory, not by default.

**The file** (:meth:`Counts.save` / :meth:`Counts.load`): ``PWCOUNTS``
magic, a version, then blocks of (piece lengths u32, counts u64, UTF-8
bytes) in first-seen order, an end block with the number of pieces and
the total, all optionally gzip- or zstd-compressed; written atomically.
"""

from __future__ import annotations

import heapq
import os
import re
import struct
import sys
import tempfile
import warnings
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import ItemsView, Mapping, ValuesView
from dataclasses import dataclass
from itertools import accumulate
from typing import Iterable, Iterator

from ..alignment import NormalizedString
from ..errors import ConfigError, FileFormatError, InputTypeError, NotSerializableError, PieceworksError
from ..pretokenized import PreTokenizedString
from . import sources as _sources

__all__ = ["Counts", "CountPlan", "count_words", "count_texts", "count_files", "count_sources",
           "merge_counts", "pieces_of", "parse_memory_limit", "default_workers", "word_batches",
           "check_training_counts", "MAX_SYMBOLS"]

_BATCH = 1 << 16            # pieces decoded per kernel call when iterating
_NO_ORDER = array("I")      # an empty order: identity
_PARTITIONS = 32            # spill partitions: each is summed alone at the end
# Share of memory_limit the live table may use; the rest covers the final
# arrays, the interpreter and the units in flight.
_TABLE_SHARE = 0.35


# -- the general path ----------------------------------------------------------
def pieces_of(text: str, normalizer=None, pre_tokenizer=None, added=None, split_special: bool = False) -> list[str]:
    """The normalized pieces a tokenizer's first two stages make of ``text``.

    ``added`` (an :class:`~pieceworks.added_vocabulary.AddedVocabulary`):
    its tokens are split out first, as Hugging Face's training does, and
    each is one piece, spelled as the text has it (``split_special``:
    special tokens are plain text).

    >>> from pieceworks.added_vocabulary import AddedVocabulary, AddedToken
    >>> from pieceworks.models import WordLevel
    >>> from pieceworks.pre_tokenizers import Whitespace
    >>> added = AddedVocabulary(); added.add([AddedToken("ab")], WordLevel(), None)
    1
    >>> pieces_of("xaby z", None, Whitespace()), pieces_of("xaby z", None, Whitespace(), added)
    (['xaby', 'z'], ['x', 'ab', 'y', 'z'])
    """
    if added is not None:
        pretok = added.extract_and_normalize(normalizer, text, split_special)
        if pre_tokenizer is not None:
            pre_tokenizer.pre_tokenize(pretok)
        return [split.normalized.normalized for split in pretok.splits]
    ns = NormalizedString(text)
    if normalizer is not None:
        normalizer.normalize(ns)
    if pre_tokenizer is None:
        return [ns.normalized] if ns.normalized else []
    pretok = PreTokenizedString(ns.narrowed())     # (as extract_and_normalize passes it on)
    pre_tokenizer.pre_tokenize(pretok)
    return [split.normalized.normalized for split in pretok.splits]


def count_words(texts: Iterable[str], normalizer=None, pre_tokenizer=None, progress=None) -> dict[str, int]:
    """Count the pieces of every text; ``progress`` (if given) is called with each text's length.

    The one-process, in-memory form (a plain dict in first-seen order); it
    takes the fast path when the pipeline has one.
    """
    plan = CountPlan.build(normalizer, pre_tokenizer)
    if plan.mode is None:
        counts: dict[str, int] = {}
        get = counts.get
        for text in texts:
            for piece in pieces_of(text, normalizer, pre_tokenizer):
                counts[piece] = get(piece, 0) + 1
            if progress is not None:
                progress(len(text))
        return counts
    from .._kernels.count import PieceTable

    table = PieceTable()
    batch: list[str] = []
    size = 0
    chunk = 0
    for text in texts:
        batch.append(text)
        size += len(text)
        if size >= 1 << 20:
            plan.count_into(table, batch, False, chunk)
            chunk += 1
            if progress is not None:
                progress(size)
            batch, size = [], 0
    if batch:
        plan.count_into(table, batch, False, chunk)
        if progress is not None:
            progress(size)
    return dict(_counts_from_table(table, plan.spell).items())


def word_batches(counts: Mapping[str, int], size: int = _BATCH) -> Iterator[tuple]:
    """The pieces of ``counts`` in order, in batches a kernel reads without a Python object per piece.

    A batch is ``(blob, offsets, counts)`` (UTF-8 bytes; piece i is
    ``blob[offsets[i]:offsets[i + 1]]``, offsets int64, counts uint64) for a
    compact or file-backed :class:`Counts`, else ``(pieces, counts)`` (lists).

    >>> list(word_batches({"ab": 2, "c": 1}))
    [(['ab', 'c'], [2, 1])]
    >>> blob, offsets, values = next(word_batches(Counts.merge({"ab": 2, "c": 1})))
    >>> bytes(blob), list(offsets), list(values)
    (b'abc', [0, 2, 3], [2, 1])
    """
    if isinstance(counts, Counts):
        return counts._word_batches(size)
    return _list_batches(counts.items(), size)


def _list_batches(items: Iterable[tuple[str, int]], size: int) -> Iterator[tuple[list[str], list[int]]]:
    pieces: list[str] = []
    values: list[int] = []
    for piece, count in items:
        pieces.append(piece)
        values.append(count)
        if len(pieces) == size:
            yield pieces, values
            pieces, values = [], []
    if pieces:
        yield pieces, values


def merge_counts(*tables: Mapping[str, int]) -> dict[str, int]:
    """Add count tables together (associative and commutative).

    >>> merge_counts({"a": 1}, {"a": 2, "b": 1})
    {'a': 3, 'b': 1}
    """
    out: dict[str, int] = {}
    for table in tables:
        for piece, n in table.items():
            out[piece] = out.get(piece, 0) + n
    return out


# -- memory limits ------------------------------------------------------------------
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 10**3, "KIB": 1 << 10, "M": 1 << 20, "MB": 10**6,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 10**9, "GIB": 1 << 30, "T": 1 << 40, "TB": 10**12, "TIB": 1 << 40}


def parse_memory_limit(value, minimum: int = 16_000_000) -> int | None:
    """Bytes from ``"300MB"``, ``"2GiB"``, ``"1.5G"`` or an int; None stays None.

    >>> parse_memory_limit("300MB"), parse_memory_limit("2GiB"), parse_memory_limit(None)
    (300000000, 2147483648, None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"memory_limit must be a size such as '2GB' or a number of bytes, got {value!r}")
    if isinstance(value, int):
        number, unit = float(value), ""
    elif isinstance(value, str):
        text = value.strip().upper().replace(" ", "")
        digits = text.rstrip("KMGTIB")
        unit = text[len(digits):]
        try:
            number = float(digits)
        except ValueError:
            number = -1.0
        if unit not in _UNITS:
            number = -1.0
    else:
        raise ConfigError(f"memory_limit must be a size such as '2GB' or a number of bytes, got {value!r}")
    if number <= 0:
        raise ConfigError(f"memory_limit {value!r} is not a size", fix="write it like '300MB', '2GB' or 2_000_000_000")
    limit = int(number * _UNITS[unit])
    if limit < minimum:
        raise ConfigError(f"memory_limit {value!r} is below {minimum:,} bytes, too small to count anything",
                          fix="allow at least '64MB'")
    return limit


#: Below this much known input, counting stays in this process unless workers are asked for:
#: a worker process costs about a second to start and 45 MB of memory, which a few
#: seconds of counting do not win back.
POOL_MIN_BYTES = 32 << 20
#: The unit of work when counting in this process (workers get DEFAULT_UNIT_BYTES).
IN_PROCESS_UNIT_BYTES = 2 << 20


def default_workers() -> int:
    """The cores this process may run on, or ``PIECEWORKS_WORKERS`` if set."""
    forced = os.environ.get("PIECEWORKS_WORKERS", "").strip()
    if forced:
        if not forced.isdigit() or int(forced) < 1:
            raise ConfigError(f"PIECEWORKS_WORKERS={forced!r} is not a positive whole number",
                              fix="set it to the number of processes to use, e.g. 2, or unset it")
        return int(forced)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# -- the fast-path plan -------------------------------------------------------------
@dataclass(frozen=True)
class CountPlan:
    """How to cut texts: a scanner mode for the kernel (or None: the general path).

    Plans travel to worker processes, so they hold the components as
    tokenizer.json dicts and rebuild them once per process. A component
    that is Python code (``PreTokenizer.custom(...)``) has no such form:
    the plan then holds the components themselves (``live``), and counts
    in this process only (pickling it raises NotSerializableError).
    """

    normalizer_json: dict | None
    pre_tokenizer_json: dict | None
    mode: int | None
    actions: bytes | None = None
    prefix_space: bool = False
    spell: bool = False
    live: tuple | None = None
    added: object = None            # an AddedVocabulary whose tokens are split out first (see pieces_of)
    split_special: bool = False

    @classmethod
    def build(cls, normalizer=None, pre_tokenizer=None, added=None, split_special: bool = False) -> "CountPlan":
        """The plan for a normalizer and pre-tokenizer (either may be None), and the added tokens
        of the tokenizer being trained (None: none; see :meth:`_count_around_added`)."""
        added = added if added is not None and added.by_content else None
        mode, actions, prefix, spell = _scanner_for(pre_tokenizer)
        if added is not None and spell and not _spelled_as_themselves(added):
            # Byte-level pieces are spelled at the end, every one: an added token's piece that spelling
            # changes (a space, a non-ASCII char) must not be, so all take the general path.
            mode, actions, prefix, spell = None, None, False, False
        try:
            return cls(None if normalizer is None else normalizer.to_json(),
                       None if pre_tokenizer is None else pre_tokenizer.to_json(), mode, actions, prefix, spell,
                       added=added, split_special=split_special)
        except NotSerializableError:
            return cls(None, None, mode, actions, prefix, spell, live=(normalizer, pre_tokenizer), added=added,
                       split_special=split_special)

    def components(self):
        """``(normalizer, pre_tokenizer)`` rebuilt from JSON (cached per process)."""
        if self.live is not None:
            return self.live
        key = id(self)
        found = _COMPONENTS.get(key)
        if found is None or found[0] is not self:
            from ..normalizers import Normalizer
            from ..pre_tokenizers import PreTokenizer

            normalizer = None if self.normalizer_json is None else Normalizer.from_json(self.normalizer_json)
            pre = None if self.pre_tokenizer_json is None else PreTokenizer.from_json(self.pre_tokenizer_json)
            found = _COMPONENTS[key] = (self, normalizer, pre)
        return found[1], found[2]

    def count_into(self, table, texts: list[str], lines_mode: bool, chunk: int) -> None:
        """Count ``texts`` into a PieceTable (``lines_mode``: texts[0] is whole lines, each a text)."""
        normalizer, pre_tokenizer = self.components()
        key_base = chunk << 32
        if self.mode is None:
            self._count_general(table, texts, lines_mode, key_base, normalizer, pre_tokenizer)
            return
        if self.added is not None:
            self._count_around_added(table, _split_lines(texts[0]) if lines_mode else texts, key_base, normalizer)
            return
        if normalizer is not None:
            texts = [normalizer.normalize_str(t) for t in (_split_lines(texts[0]) if lines_mode else texts)]
            lines_mode = False
        if lines_mode:
            table.count_lines(texts[0], self.mode, self.actions, self.prefix_space, key_base)
        else:
            table.count_texts(texts, self.mode, self.actions, self.prefix_space, key_base)

    def _count_around_added(self, table, texts: list[str], key_base: int, normalizer) -> None:
        """The scanner's path, with the added tokens split out first (as :func:`pieces_of` does).

        Texts that hold none go to the scanner in runs; in one that does,
        each token is one piece and the text between is scanned on its own,
        in the text's order, so pieces are first seen where the general
        path sees them.
        """
        from .._kernels.count import MODE_WHOLE

        added, run = self.added, []
        for text in texts:
            seen = text if normalizer is None else normalizer.normalize_str(text)
            if not (added.may_occur_in(text) or seen is not text and added.may_occur_in(seen)):
                run.append(seen)
                continue
            if run:
                table.count_texts(run, self.mode, self.actions, self.prefix_space, key_base)
                run = []
            for split in added.extract_and_normalize(normalizer, text, self.split_special).splits:
                if split.tokens is not None:
                    table.count_texts([split.normalized.normalized], MODE_WHOLE, None, False, key_base)
                else:
                    table.count_texts([split.normalized.normalized], self.mode, self.actions, self.prefix_space,
                                      key_base)
        if run:
            table.count_texts(run, self.mode, self.actions, self.prefix_space, key_base)

    def _count_general(self, table, texts, lines_mode, key_base, normalizer, pre_tokenizer) -> None:
        from .._kernels.count import MODE_WHOLE

        counts: dict[str, int] = {}
        get = counts.get
        for text in (_split_lines(texts[0]) if lines_mode else texts):
            for piece in pieces_of(text, normalizer, pre_tokenizer, self.added, self.split_special):
                if piece:
                    counts[piece] = get(piece, 0) + 1
        # Feed the table in first-seen order: each piece once, then its extra count.
        pieces = list(counts)
        table.count_texts(pieces, MODE_WHOLE, None, False, key_base)
        _add_extra(table, pieces, counts, key_base)


_COMPONENTS: dict[int, tuple] = {}
# Chars byte-level spelling leaves as they are (printable ASCII but the space).
_SPELLED_AS_ITSELF = re.compile("[!-~]*")


def _spelled_as_themselves(added) -> bool:
    """Whether every piece an added token can make is left as it is by byte-level spelling: its text as
    matched (the content, or its normalized form) in printable ASCII, and no whitespace taken in by
    ``lstrip``/``rstrip``."""
    if any(tok.lstrip or tok.rstrip for tok in added.by_id.values()):
        return False
    keys = [key for matcher in (added._raw_matcher, added._normalized_matcher) if matcher is not None
            for key in matcher[1]]
    return all(_SPELLED_AS_ITSELF.fullmatch(key) for key in keys)


def _add_extra(table, pieces: list[str], counts: dict[str, int], key_base: int) -> None:
    """Add ``counts[p] - 1`` to every piece (count_texts counted each once)."""
    blob = bytearray()
    lengths = array("I")
    extra = array("Q")
    for piece in pieces:
        n = counts[piece] - 1
        if n:
            data = piece.encode("utf-8", "surrogatepass")
            blob += data
            lengths.append(len(data))
            extra.append(n)
    if lengths:
        table.add_arrays(bytes(blob), lengths, extra, array("Q", [key_base + (1 << 31)] * len(lengths)))


def _split_lines(chunk: str) -> list[str]:
    """Lines of ``chunk`` cut after each ``\\n`` only (str.splitlines also cuts at \\r, \\x85, ...)."""
    parts = chunk.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _scanner_for(pre_tokenizer):
    """``(mode, actions, prefix_space, spell)`` of a pre-tokenizer with a scanner; mode None otherwise."""
    from .. import pre_tokenizers as pt
    from .._kernels import count as k

    if pre_tokenizer is None:
        return k.MODE_WHOLE, None, False, False
    kind = type(pre_tokenizer)
    if kind is pt.ByteLevel:
        mode = k.MODE_GPT2 if pre_tokenizer.use_regex else k.MODE_WHOLE
        return mode, None, pre_tokenizer.add_prefix_space, True
    if kind is pt.UnicodeScripts:
        return k.MODE_SCRIPTS, None, False, False
    table = pt.class_run_actions(pre_tokenizer)
    if table is None:
        return None, None, False, False
    return k.MODE_CLASS_RUNS, table, False, False


# -- Counts ------------------------------------------------------------------------
class Counts(Mapping):
    """Counted pieces (str → int), in first-seen order, stored compactly.

    Build one with :func:`count_files`, :func:`count_texts`, from a dict
    (``Counts({"a": 2})``), by adding two (``a + b``) or with
    :meth:`load`. Besides the table it says what the input held:
    ``n_texts``, ``n_bytes``, ``skipped`` lines and the first one
    (``first_skipped``, ``"file:line: reason"``).

    >>> c = Counts({"low": 5, "lower": 2})
    >>> c["low"], len(c), c.total()
    (5, 2, 7)
    >>> c.prune(min_count=3)
    Counts({'low': 5})
    """

    def __init__(self, table: Mapping[str, int] | None = None):
        self._dict: dict[str, int] | None = None
        self._blob = b""
        self._offsets = array("q", [0])
        self._counts = array("Q")
        self._order = array("I")      # empty: identity
        self._file: _CountsFile | None = None   # the pieces on disk (a spilled count), else None
        self.n_texts = 0
        self.n_bytes = 0
        self.skipped = 0
        self.first_skipped: str | None = None
        self.spills = 0                  # times counting spilled its table to disk
        if table is not None:
            checked = {}
            for piece, count in table.items():
                _check_entry(piece, count)
                checked[piece] = count
            self._dict = checked

    @classmethod
    def _from_arrays(cls, blob: bytes, lengths, counts, order=b"") -> "Counts":
        self = cls()
        self._blob = bytes(blob)
        self._offsets = array("q", accumulate(lengths, initial=0))
        self._counts = counts if isinstance(counts, array) else _u64(counts)
        self._order = order if isinstance(order, array) else _u32(order)
        return self

    @classmethod
    def _from_file(cls, file: "_CountsFile") -> "Counts":
        """Counts whose pieces stay in a counts file on disk, read block by block when iterated."""
        self = cls()
        self._file = file
        return self

    # -- the Mapping ------------------------------------------------------------------
    def __len__(self) -> int:
        if self._file is not None:
            return self._file.n
        return len(self._dict) if self._dict is not None else len(self._counts)

    def __iter__(self) -> Iterator[str]:
        for piece, _ in self._iter_items():
            yield piece

    def __getitem__(self, piece: str) -> int:
        return self._as_dict()[piece]

    def __contains__(self, piece) -> bool:
        return piece in self._as_dict()

    def items(self):
        """``(piece, count)`` in first-seen order, decoded lazily (no dict is built)."""
        return _CountsItems(self)

    def values(self):
        return _CountsValues(self)

    def _iter_items(self) -> Iterator[tuple[str, int]]:
        if self._dict is not None:
            yield from self._dict.items()
            return
        from .._kernels.count import decode_pieces

        if self._file is not None:
            for text, offsets, counts in self._file.batches():
                for piece, i in decode_pieces(text, offsets, _NO_ORDER, 0, len(counts)):
                    yield piece, counts[i]
            return
        counts, n = self._counts, len(self._counts)
        for start in range(0, n, _BATCH):
            for piece, i in decode_pieces(self._blob, self._offsets, self._order, start, min(n, start + _BATCH)):
                yield piece, counts[i]

    def _word_batches(self, size: int) -> Iterator[tuple]:
        """See :func:`word_batches`."""
        if self._file is not None:
            yield from self._file.batches()
            return
        if self._dict is not None or len(self._order):
            yield from _list_batches(self._iter_items(), size)
            return
        offsets, counts = memoryview(self._offsets), memoryview(self._counts)
        for start in range(0, len(self._counts), size):
            stop = min(len(self._counts), start + size)
            yield self._blob, offsets[start:stop + 1], counts[start:stop]

    def _as_dict(self) -> dict[str, int]:
        # Lookups need an index; the compact form builds a dict once (it costs memory).
        if self._dict is None:
            self._dict = dict(self._iter_items())
            self._release_arrays()
        return self._dict

    def _release_arrays(self) -> None:
        self._blob, self._offsets, self._counts, self._order = b"", array("q", [0]), array("Q"), array("I")
        self._file = None

    def total(self) -> int:
        """The sum of all counts."""
        if self._file is not None:
            return self._file.total
        return sum(self._dict.values()) if self._dict is not None else sum(self._counts)

    def __getstate__(self) -> dict:
        # A spill file belongs to this process: pickles carry the pieces themselves.
        state = self.__dict__.copy()
        if self._file is not None:
            blob, offsets, counts = self.to_arrays()
            state.update(_blob=blob, _offsets=offsets, _counts=counts, _order=array("I"), _file=None)
        return state

    def __repr__(self) -> str:
        shown = []
        for i, (piece, count) in enumerate(self._iter_items()):
            if i == 20:
                shown.append("...")
                break
            shown.append(f"{piece!r}: {count}")
        return f"Counts({{{', '.join(shown)}}})"

    # -- merging, pruning ----------------------------------------------------------------
    def __add__(self, other: Mapping[str, int]) -> "Counts":
        if not isinstance(other, Mapping):
            return NotImplemented
        return Counts.merge(self, other)

    @staticmethod
    def merge(*tables: Mapping[str, int]) -> "Counts":
        """Add tables: counts add; order is the first table's, then each later table's new pieces."""
        from .._kernels.count import PieceTable

        table = PieceTable()
        out = Counts()
        for i, t in enumerate(tables):
            _add_mapping(table, t, i)
            if isinstance(t, Counts):
                out._add_stats(t)
        merged = _counts_from_table(table, False)
        merged._copy_stats(out)
        return merged

    def prune(self, min_count: int = 1, top_k: int | None = None) -> "Counts":
        """Keep pieces seen at least ``min_count`` times, then at most the ``top_k`` most frequent.

        Ties at the ``top_k`` cut go to the piece seen first; the result keeps
        first-seen order.

        >>> Counts({"a": 1, "b": 3, "c": 3, "d": 2}).prune(top_k=2)
        Counts({'b': 3, 'c': 3})
        """
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 0:
            raise ConfigError(f"min_count must be a non-negative integer, got {min_count!r}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
            raise ConfigError(f"top_k must be a non-negative integer or None, got {top_k!r}")
        kept = [(p, c) for p, c in self._iter_items() if c >= min_count]
        if top_k is not None and len(kept) > top_k:
            chosen = set(heapq.nsmallest(top_k, range(len(kept)), key=lambda i: (-kept[i][1], i)))
            kept = [item for i, item in enumerate(kept) if i in chosen]
        out = Counts()
        out._dict = dict(kept)
        out._copy_stats(self)
        return out

    def _add_stats(self, other: "Counts") -> None:
        self.n_texts += other.n_texts
        self.n_bytes += other.n_bytes
        self.skipped += other.skipped
        if self.first_skipped is None:
            self.first_skipped = other.first_skipped

    def _copy_stats(self, other: "Counts") -> None:
        self.n_texts, self.n_bytes = other.n_texts, other.n_bytes
        self.skipped, self.first_skipped = other.skipped, other.first_skipped

    # -- arrays ---------------------------------------------------------------------------
    def to_arrays(self) -> tuple[bytes, array, array]:
        """``(blob, offsets, counts)`` in first-seen order: piece i is ``blob[offsets[i]:offsets[i+1]]`` (UTF-8).

        >>> blob, offsets, counts = Counts({"ab": 2, "c": 1}).to_arrays()
        >>> blob, list(offsets), list(counts)
        (b'abc', [0, 2, 3], [2, 1])
        """
        if self._dict is None and len(self._order) == 0 and self._file is None:
            return self._blob, self._offsets, self._counts
        if self._file is not None:
            return self._file.arrays()
        blob = bytearray()
        lengths = array("I")
        counts = array("Q")
        for piece, count in self._iter_items():
            data = piece.encode("utf-8", "surrogatepass")
            blob += data
            lengths.append(len(data))
            counts.append(count)
        return bytes(blob), array("q", accumulate(lengths, initial=0)), counts

    # -- the file ----------------------------------------------------------------------------
    def save(self, path, compression: str | None = None) -> None:
        """Write the counts file (atomically); ``compression``: None, ``"gzip"`` or ``"zstd"``.

        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "c.counts")
        >>> Counts({"a": 2, "é": 1}).save(p); Counts.load(p)
        Counts({'a': 2, 'é': 1})
        """
        from ..fileio import atomic_open

        if compression not in (None, "gzip", "zstd"):
            raise ConfigError(f"unknown compression {compression!r}", fix='use None, "gzip" or "zstd"')
        with atomic_open(path) as raw:
            with _compressed_writer(raw, compression) as fh:
                _write_counts(fh, self)

    @classmethod
    def load(cls, path) -> "Counts":
        """Read a counts file written by :meth:`save` (compression is detected)."""
        return _read_counts_file(os.fspath(path))


class _CountsItems(ItemsView):
    def __iter__(self):
        return self._mapping._iter_items()


class _CountsValues(ValuesView):
    def __iter__(self):
        for _, count in self._mapping._iter_items():
            yield count


def _check_entry(piece, count) -> None:
    if not isinstance(piece, str):
        raise InputTypeError(f"counts keys must be str, got {type(piece).__name__}: {piece!r}",
                             fix="build counts with pieceworks.trainers.counts.count_files or count_texts")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0 or count >= 1 << 64:
        raise InputTypeError(f"count of {piece!r} must be a non-negative int below 2**64, got {count!r}",
                             fix="build counts with pieceworks.trainers.counts.count_files or count_texts")


#: Trainers sum counts times piece lengths in signed 64-bit integers.
MAX_SYMBOLS = 2**63 - 1


def check_training_counts(counts: Mapping[str, int], trainer: str) -> None:
    """Raise unless ``counts`` is a ``{str: non-negative int}`` table a trainer can sum.

    Each piece weighs ``count × length`` (UTF-8 bytes for a :class:`Counts`,
    an upper bound on its chars); the weights must add up to at most
    :data:`MAX_SYMBOLS`, or the trainers' 64-bit sums would wrap around.

    >>> check_training_counts({"ab": 2**62}, "BpeTrainer")
    Traceback (most recent call last):
    ...
    pieceworks.errors.ConfigError: the counts add up to more than 2**63 - 1 symbols (count × length), more than BpeTrainer can sum. Fix: scale the counts down (divide them all by the same number)
    """
    if isinstance(counts, Counts) and counts._dict is None and not len(counts._order):
        from .._kernels.count import weighted_total

        total = 0   # entries were checked when the Counts was built
        for _, offsets, values in counts._word_batches(_BATCH):
            total += weighted_total(offsets, values, MAX_SYMBOLS - total)
            if total > MAX_SYMBOLS:
                break
    elif isinstance(counts, Mapping):
        total = 0
        for piece, count in counts.items():
            _check_entry(piece, count)
            total += count * max(len(piece), 1)
    else:
        raise InputTypeError(f"counts must be a mapping of word -> count, got {type(counts).__name__}",
                             fix="build counts with pieceworks.trainers.counts.count_words")
    if total > MAX_SYMBOLS:
        raise ConfigError(f"the counts add up to more than 2**63 - 1 symbols (count × length), "
                          f"more than {trainer} can sum", fix="scale the counts down (divide them all by the same number)")


def _u64(data) -> array:
    out = array("Q")
    out.frombytes(bytes(data))
    return out


def _u32(data) -> array:
    out = array("I")
    out.frombytes(bytes(data))
    return out


def _add_mapping(table, mapping: Mapping[str, int], chunk: int) -> None:
    """Add a mapping to a PieceTable, keyed in its order under ``chunk``."""
    if isinstance(mapping, Counts) and mapping._file is not None:
        done = 0
        for lengths, counts, text in mapping._file.blocks():
            table.add_arrays(text, lengths, counts, array("Q", range((chunk << 32) + done,
                                                                    (chunk << 32) + done + len(lengths))))
            done += len(lengths)
        return
    if isinstance(mapping, Counts) and mapping._dict is None and len(mapping._order) == 0:
        blob, offsets, counts = mapping._blob, mapping._offsets, mapping._counts
        lengths = array("I", (offsets[i + 1] - offsets[i] for i in range(len(counts))))
    else:
        blob_parts, lengths, counts = bytearray(), array("I"), array("Q")
        for piece, count in mapping.items():
            _check_entry(piece, count)
            data = piece.encode("utf-8", "surrogatepass")
            blob_parts += data
            lengths.append(len(data))
            counts.append(count)
        blob = bytes(blob_parts)
    if len(lengths) >= 1 << 32:
        raise ConfigError("a table of 2**32 pieces or more cannot be merged")
    keys = array("Q", range(chunk << 32, (chunk << 32) + len(lengths)))
    table.add_arrays(blob, lengths, counts, keys)


def _counts_from_table(table, spell: bool) -> Counts:
    """The table's entries, in first-seen order, as Counts (byte-level pieces spelled if asked).

    Empties the table: its memory goes before the arrays are converted.
    """
    blob, lengths, counts, keys = table.export()
    del keys
    table.clear()
    counts = _u64(counts)
    if spell:
        from .._kernels.count import spell_byte_level

        blob, lengths = spell_byte_level(blob, _u32(lengths))
    return Counts._from_arrays(blob, _u32(lengths), counts)


# -- the counts file ---------------------------------------------------------------------------
_MAGIC = b"PWCOUNTS"
_END = b"PWCEND\0\0"
_VERSION = 1
_HEADER = struct.Struct("<8sII")        # magic, version, flags (0)
_BLOCK = struct.Struct("<IQ")           # pieces in the block (0 = end), bytes of text
_FOOTER = struct.Struct("<QQ8s")        # pieces, total count, end magic
_FILE_BLOCK = 1 << 16


class _compressed_writer:
    def __init__(self, raw, compression):
        self.raw, self.compression, self.fh = raw, compression, None

    def __enter__(self):
        if self.compression == "gzip":
            import gzip

            self.fh = gzip.GzipFile(fileobj=self.raw, mode="wb", mtime=0)
        elif self.compression == "zstd":
            _sources._require("zstandard", "writing zstd-compressed counts", "pip install zstandard")
            import zstandard

            self.fh = zstandard.ZstdCompressor(level=3).stream_writer(self.raw, closefd=False)
        else:
            self.fh = self.raw
        return self.fh

    def __exit__(self, *exc):
        if self.fh is not self.raw:
            if exc[0] is None:
                self.fh.close()
        return False


def _write_counts(fh, counts: Counts) -> None:
    fh.write(_HEADER.pack(_MAGIC, _VERSION, 0))
    if counts._file is not None:   # already in this format: copy block by block
        for lengths, values, text in counts._file.blocks():
            fh.write(_BLOCK.pack(len(lengths), len(text)))
            fh.write(_little(lengths))
            fh.write(_little(values))
            fh.write(text)
        fh.write(_BLOCK.pack(0, 0))
        fh.write(_FOOTER.pack(counts._file.n, counts._file.total % (1 << 64), _END))
        return
    blob, offsets, values = counts.to_arrays()
    n = len(values)
    total = 0
    for start in range(0, n, _FILE_BLOCK):
        stop = min(n, start + _FILE_BLOCK)
        lengths = array("I", (offsets[i + 1] - offsets[i] for i in range(start, stop)))
        part = values[start:stop]
        text = blob[offsets[start]:offsets[stop]]
        total += sum(part)
        fh.write(_BLOCK.pack(stop - start, len(text)))
        fh.write(_little(lengths))
        fh.write(_little(part))
        fh.write(text)
    fh.write(_BLOCK.pack(0, 0))
    fh.write(_FOOTER.pack(n, total % (1 << 64), _END))


def _little(arr: array) -> bytes:
    if sys.byteorder == "little":
        return arr.tobytes()
    swapped = array(arr.typecode, arr)
    swapped.byteswap()
    return swapped.tobytes()


def _read_counts_file(path: str) -> Counts:
    try:
        with open(path, "rb") as raw:
            head = raw.read(4)
            raw.seek(0)
            if head[:2] == b"\x1f\x8b":
                import gzip

                data = gzip.GzipFile(fileobj=raw).read()
            elif head == b"\x28\xb5\x2f\xfd":
                _sources._require("zstandard", "reading zstd-compressed counts", "pip install zstandard")
                import zstandard

                data = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True).read()
            else:
                data = raw.read()
    except FileNotFoundError as exc:
        raise FileFormatError(path, "file not found", fix="check the path") from exc
    except (OSError, EOFError) as exc:
        raise FileFormatError(path, f"cannot be read or decompressed: {exc}",
                              fix="the file is damaged; count the corpus again") from exc
    except Exception as exc:  # zstandard.ZstdError
        raise FileFormatError(path, f"cannot be decompressed: {exc}",
                              fix="the file is damaged; count the corpus again") from exc
    return _parse_counts(data, path)


def _parse_counts(data: bytes, path: str) -> Counts:
    def bad(offset: int, problem: str) -> FileFormatError:
        return FileFormatError(path, f"{problem} at byte {offset}",
                               fix="the file is damaged or not a pieceworks counts file; count the corpus again")

    if len(data) < _HEADER.size or data[:8] != _MAGIC:
        raise FileFormatError(path, "not a pieceworks counts file (no PWCOUNTS header)",
                              fix="pass a file written by Counts.save or 'pieceworks count'")
    _, version, flags = _HEADER.unpack_from(data, 0)
    if version != _VERSION:
        raise FileFormatError(path, f"counts file version {version}, this pieceworks reads version {_VERSION}",
                              fix="upgrade pieceworks, or count again with this version")
    pos = _HEADER.size
    blobs, lengths, counts = [], array("I"), array("Q")
    while True:
        if pos + _BLOCK.size > len(data):
            raise bad(pos, "the file ends inside a block header (truncated?)")
        n, text_size = _BLOCK.unpack_from(data, pos)
        pos += _BLOCK.size
        if n == 0:
            break
        need = 12 * n + text_size
        if pos + need > len(data):
            raise bad(pos, f"a block of {n} pieces needs {need} bytes but the file ends first (truncated?)")
        block_lengths = _read_array("I", data, pos, n)
        if sum(block_lengths) != text_size:
            raise bad(pos, "piece lengths do not add up to the block's text size")
        lengths.extend(block_lengths)
        counts.extend(_read_array("Q", data, pos + 4 * n, n))
        blobs.append(data[pos + 12 * n:pos + need])
        pos += need
    if pos + _FOOTER.size != len(data):
        raise bad(pos, "the end block is missing or followed by extra bytes")
    n_total, total, end = _FOOTER.unpack_from(data, pos)
    if end != _END or n_total != len(counts) or total != sum(counts) % (1 << 64):
        raise bad(pos, "the end block does not match the pieces read")
    blob = b"".join(blobs)
    out = Counts._from_arrays(blob, lengths, counts)
    try:
        blob.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise bad(exc.start, "a piece is not valid UTF-8 (offset into the pieces' text)") from None
    from .._kernels.count import first_bad_piece

    bad_piece = first_bad_piece(out._blob, out._offsets)
    if bad_piece >= 0:
        raise FileFormatError(path, f"piece {bad_piece} is cut inside a UTF-8 character",
                              fix="the file is damaged; count the corpus again")
    return out


def _read_array(code: str, data: bytes, pos: int, n: int) -> array:
    out = array(code)
    out.frombytes(data[pos:pos + out.itemsize * n])
    if sys.byteorder != "little":
        out.byteswap()
    return out


# -- counting sources ------------------------------------------------------------------------
def count_texts(texts: Iterable, normalizer=None, pre_tokenizer=None, *, workers: int | None = None,
                memory_limit=None, progress: bool | str = False, unit_bytes: int | None = None,
                tmp_dir=None, added=None, split_special: bool = False) -> Counts:
    """Count the pieces of texts from an iterable (each item a str, or a list of str).

    ``added``, ``split_special``: a tokenizer's added tokens, split out
    first (see :func:`pieces_of`).

    >>> from pieceworks.pre_tokenizers import Whitespace
    >>> count_texts(["Hi, you!", ["you"]], pre_tokenizer=Whitespace())
    Counts({'Hi': 1, ',': 1, 'you': 2, '!': 1})
    """
    return count_sources([_sources.iterable_source(texts)], normalizer, pre_tokenizer, workers=workers,
                         memory_limit=memory_limit, progress=progress, unit_bytes=unit_bytes, errors="strict",
                         tmp_dir=tmp_dir, description="texts", added=added, split_special=split_special)


def count_files(files, normalizer=None, pre_tokenizer=None, *, field: str = "text", format: str | None = None,
                errors: str = "skip", workers: int | None = None, memory_limit=None, progress: bool | str = True,
                unit_bytes: int | None = None, tmp_dir=None, added=None, split_special: bool = False) -> Counts:
    """Count the pieces of files: text (one text per line, ``\\n`` kept), .jsonl (``field`` of each
    record), Parquet / Arrow (column ``field``), plain or ``.gz`` / ``.zst``.

    ``workers`` processes count in parallel (default: every core);
    ``memory_limit`` (``"2GB"``) bounds the table, spilling to ``tmp_dir``;
    ``errors="skip"`` skips lines that are not UTF-8 (or bad .jsonl records)
    and warns with their number and the first file:line; ``"strict"`` raises.
    ``added``, ``split_special``: as :func:`count_texts`.
    """
    sources = _sources.open_sources(files, field=field, format=format)
    return count_sources(sources, normalizer, pre_tokenizer, workers=workers, memory_limit=memory_limit,
                         progress=progress, unit_bytes=unit_bytes, errors=errors, tmp_dir=tmp_dir,
                         description=_describe(sources), added=added, split_special=split_special)


def _describe(sources) -> str:
    if len(sources) == 1:
        return os.path.basename(sources[0].name)
    return f"{len(sources)} files"


def count_sources(sources, normalizer=None, pre_tokenizer=None, *, workers: int | None = None,
                  memory_limit=None, progress: bool | str = False, unit_bytes: int | None = None,
                  errors: str = "skip", tmp_dir=None, description: str = "input", added=None,
                  split_special: bool = False) -> Counts:
    """Count every unit of ``sources`` (see :mod:`.sources`) with ``workers`` processes.

    ``workers=None``: one per core (or ``PIECEWORKS_WORKERS``), but none
    besides this process for inputs under ``POOL_MIN_BYTES``.
    """
    if errors not in _sources.ERRORS:
        raise ConfigError(f"errors must be one of {_sources.ERRORS}, got {errors!r}",
                          fix='use "skip" (count and report bad lines) or "strict" (stop at the first)')
    total = sum(s.size for s in sources if s.size is not None) if all(s.size is not None for s in sources) else None
    if workers is None:
        workers = default_workers()
        if total is not None and total < POOL_MIN_BYTES and not os.environ.get("PIECEWORKS_WORKERS", "").strip():
            workers = 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    plan = CountPlan.build(normalizer, pre_tokenizer, added, split_special)
    if plan.live is not None:
        workers = 1     # (Python code cannot be sent to worker processes)
    limit = parse_memory_limit(memory_limit)
    if unit_bytes is None:
        # In this process, smaller units hold less text in memory at once (same counts).
        unit_bytes = _sources.DEFAULT_UNIT_BYTES if workers > 1 else IN_PROCESS_UNIT_BYTES
    from ..progress import progress_bar

    with _Merger(plan, limit, tmp_dir) as merger, \
            progress_bar(total, f"Counting {description}", unit="B", enabled=progress) as bar:
        units = _sources.plan_units(sources, unit_bytes)
        for result in _run_units(units, plan, errors, workers):
            merger.add(result)
            bar.update(result.size)
        counts = merger.finish()
    _report_skipped(counts, errors)
    return counts


def _report_skipped(counts: Counts, errors: str) -> None:
    if counts.skipped:
        warnings.warn(f"skipped {counts.skipped} unreadable line(s); the first is {counts.first_skipped}. "
                      f"Fix: convert the input to UTF-8, or pass errors=\"strict\" to stop at the first",
                      UserWarning, stacklevel=3)


@dataclass
class UnitResult:
    """A unit's table as arrays, and what reading it found."""

    index: int
    arrays: tuple            # (blob, lengths u32 bytes, counts u64 bytes, keys u64 bytes)
    size: int
    n_texts: int
    n_bytes: int
    skipped: int
    first_skipped: tuple | None
    error: tuple | None = None   # a FileFormatError raised in a worker (see unit_error)


def count_unit(unit, plan: CountPlan, errors: str) -> UnitResult:
    """Read and count one unit into a fresh table (runs in worker processes and on Dask workers)."""
    from .._kernels.count import PieceTable

    try:
        read = _sources.read_unit(unit, errors)
    except FileFormatError as exc:
        return UnitResult(unit.index, (b"", b"", b"", b""), unit.size, 0, 0, 0, None, unit_error(exc))
    table = PieceTable()
    if read.texts:
        plan.count_into(table, read.texts, read.lines_mode, unit.index)
    return UnitResult(unit.index, table.export(), unit.size, read.n_texts, read.n_bytes, read.skipped,
                      read.first_skipped)


def raise_unit_error(error: tuple) -> None:
    """Re-raise, in the caller's process, the FileFormatError a worker reported.

    (Our exceptions take keyword arguments, which pickling between processes
    loses, so workers send the fields instead.)
    """
    path, line, field, message, fix = error
    exc = FileFormatError.__new__(FileFormatError)
    PieceworksError.__init__(exc, message, fix=fix)
    exc.path, exc.line, exc.field = path, line, field
    raise exc


def unit_error(exc: FileFormatError) -> tuple:
    """The fields of a FileFormatError, to send to another process."""
    return (exc.path, exc.line, exc.field, exc.message, exc.fix)


def _run_units(units: Iterator, plan: CountPlan, errors: str, workers: int) -> Iterator[UnitResult]:
    """Count units in order: in this process, or in a pool once there is a second unit."""
    first = next(units, None)
    if first is None:
        return
    second = next(units, None)
    if second is None or workers == 1:
        for unit in ([first] if second is None else _chain(first, second, units)):
            yield count_unit(unit, plan, errors)
        return
    yield from _pool_units(_chain(first, second, units), plan, errors, workers)


def _chain(first, second, rest):
    yield first
    yield second
    yield from rest


def _pool_units(units: Iterator, plan: CountPlan, errors: str, workers: int) -> Iterator[UnitResult]:
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=pool_context())
    pending: deque = deque()
    try:
        for unit in units:
            pending.append(pool.submit(count_unit, unit, plan, errors))
            # Two units in flight per worker: enough to keep them busy, little memory.
            while len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def pool_context():
    """The multiprocessing start method for worker pools.

    ``fork`` is fastest, but forking a process that runs other threads can
    deadlock a child, so it is used only while this process has one thread;
    otherwise ``forkserver`` (a clean process that forks the workers).
    """
    import multiprocessing
    import threading

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class _Merger:
    """Adds unit tables into one table, spilling partitions to disk past the memory budget."""

    def __init__(self, plan: CountPlan, limit: int | None, tmp_dir):
        from .._kernels.count import PieceTable

        self.plan = plan
        self.table = PieceTable()
        self.budget = None if limit is None else int(limit * _TABLE_SHARE)
        self.tmp_dir = tmp_dir
        self.spill_dir = None
        self.spills = 0
        self.stats = Counts()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.spill_dir is not None:   # None once finish() handed it to the Counts
            self.spill_dir.cleanup()
            self.spill_dir = None
        return False

    def add(self, result: UnitResult) -> None:
        if result.error is not None:
            raise_unit_error(result.error)
        stats = self.stats
        stats.n_texts += result.n_texts
        stats.n_bytes += result.n_bytes
        stats.skipped += result.skipped
        if stats.first_skipped is None and result.first_skipped is not None:
            stats.first_skipped = _where_text(result.first_skipped)
        blob, lengths, counts, keys = result.arrays
        if lengths:
            self.table.add_arrays(blob, _u32(lengths), _u64(counts), _u64(keys))
        if self.budget is not None and self.table.nbytes() > self.budget:
            self._spill()

    def _spill(self) -> None:
        if self.spill_dir is None:
            self.spill_dir = tempfile.TemporaryDirectory(prefix="pieceworks-counts-", dir=self.tmp_dir)
        parts = self.table.export(_PARTITIONS)
        try:
            for p, (blob, lengths, counts, keys) in enumerate(parts):
                if not lengths:
                    continue
                with _scratch_writer(os.path.join(self.spill_dir.name, f"part-{p:03d}"), "ab") as fh:
                    fh.write(_BLOCK.pack(len(lengths) // 4, len(blob)))
                    fh.write(lengths)
                    fh.write(counts)
                    fh.write(keys)
                    fh.write(blob)
        except OSError as exc:
            from ..errors import FileWriteError

            raise FileWriteError(f"cannot spill counts to {self.spill_dir.name}: {exc.strerror or exc}",
                                 fix="free disk space there, pass tmp_dir= (--tmp-dir) on a bigger disk, "
                                     "or raise memory_limit") from exc
        del parts
        self.table.clear()
        self.spills += 1

    def finish(self) -> Counts:
        if self.spills == 0:
            counts = _counts_from_table(self.table, self.plan.spell)
        else:
            self._spill()
            counts = self._merge_partitions()
        self.table.clear()
        counts._copy_stats(self.stats)
        counts.spills = self.spills
        # The table and the spill buffers are freed, but glibc keeps freed
        # blocks from the middle of its heap: give them back, or training
        # starts at the counting peak.
        release_free_memory()
        return counts

    def _merge_partitions(self) -> Counts:
        """Sum each partition alone into a run sorted by first-seen key, then merge the runs
        into one counts file in first-seen order; the Counts reads it from disk.

        Only one partition's table, and one block per run, is in memory at a time.
        """
        from .._kernels.count import PieceTable

        folder = self.spill_dir.name
        runs = []
        try:
            for p in range(_PARTITIONS):
                path = os.path.join(folder, f"part-{p:03d}")
                if not os.path.exists(path):
                    continue
                table = PieceTable()
                for block in _spill_blocks(path):
                    table.add_arrays(*block)
                os.unlink(path)
                runs.append(os.path.join(folder, f"run-{p:03d}"))
                _write_run(runs[-1], table.export())
                del table
            merged = os.path.join(folder, "merged.counts")
            n, total = _merge_runs(runs, merged, self.plan.spell)
        except OSError as exc:
            from ..errors import FileWriteError

            raise FileWriteError(f"cannot merge the spilled counts in {folder}: {exc.strerror or exc}",
                                 fix="free disk space there, pass tmp_dir= (--tmp-dir) on a bigger disk, "
                                     "or raise memory_limit") from exc
        for run in runs:
            os.unlink(run)
        owner, self.spill_dir = self.spill_dir, None   # the Counts owns the folder now
        return Counts._from_file(_CountsFile(merged, n, total, owner))


_RUN_BLOCK = 1 << 13        # pieces per block of a sorted run (one block per run is in memory)


def _scratch_writer(path: str, mode: str = "wb"):
    """Open a scratch file of counting (spills, sorted runs, the merged counts) for writing.

    These live in a TemporaryDirectory and are never a user's file, so they
    are written in place, not through pieceworks.fileio's atomic writers.
    """
    return open(path, mode)


def _write_run(path: str, arrays: tuple) -> None:
    """A partition's table (sorted by key) as blocks of ``_RUN_BLOCK`` pieces, in the spill block format."""
    blob, lengths, counts, keys = arrays
    lengths = _u32(lengths)
    counts, keys = memoryview(counts).cast("Q"), memoryview(keys).cast("Q")
    start_byte = 0
    with _scratch_writer(path) as fh:
        for start in range(0, len(lengths), _RUN_BLOCK):
            stop = min(len(lengths), start + _RUN_BLOCK)
            part = lengths[start:stop]
            size = sum(part)
            fh.write(_BLOCK.pack(stop - start, size))
            fh.write(part.tobytes())
            fh.write(counts[start:stop].tobytes())
            fh.write(keys[start:stop].tobytes())
            fh.write(blob[start_byte:start_byte + size])
            start_byte += size


class _RunCursor:
    """The current block of one sorted run, and how much of it was taken."""

    def __init__(self, path: str):
        self.blocks = _spill_blocks(path)
        self.pos = 0
        self.keys = array("Q")

    def load(self) -> bool:
        """The next block (False at the end of the run)."""
        block = next(self.blocks, None)
        if block is None:
            return False
        self.text, self.lengths, self.counts, self.keys = block
        self.offsets = array("q", accumulate(self.lengths, initial=0))
        self.pos = 0
        return True

    def take(self, bound: int, out: tuple) -> None:
        """Move this block's pieces with keys up to ``bound`` into ``out`` (text, lengths, counts, keys)."""
        stop = bisect_right(self.keys, bound, self.pos)
        if stop > self.pos:
            text, lengths, counts, keys = out
            text += self.text[self.offsets[self.pos]:self.offsets[stop]]
            lengths.extend(self.lengths[self.pos:stop])
            counts.extend(self.counts[self.pos:stop])
            keys.extend(self.keys[self.pos:stop])
            self.pos = stop


def _merge_runs(runs: list[str], out_path: str, spell: bool) -> tuple[int, int]:
    """Merge runs sorted by first-seen key into one counts file; return (pieces, total count).

    Window by window: every piece with a key up to the smallest last key of
    the blocks in memory is there, so it can be sorted and written. The file
    is cut into blocks as :meth:`Counts.save` cuts them, so saving it is a copy.
    """
    from .._kernels.count import order_by_keys, spell_byte_level, take_pieces

    cursors = [c for c in map(_RunCursor, runs) if c.load()]
    pending = _BlockWriter()
    with _scratch_writer(out_path) as fh:
        fh.write(_HEADER.pack(_MAGIC, _VERSION, 0))
        while cursors:
            bound = min(c.keys[-1] for c in cursors)
            window = (bytearray(), array("I"), array("Q"), array("Q"))
            for c in cursors:
                c.take(bound, window)
            cursors = [c for c in cursors if c.pos < len(c.keys) or c.load()]
            text, lengths, counts, keys = window
            blob, lengths, counts = take_pieces(bytes(text), lengths, counts, _u32(order_by_keys(keys)))
            lengths = _u32(lengths)
            if spell:
                blob, spelled = spell_byte_level(blob, lengths)
                lengths = _u32(spelled)
            pending.add(fh, blob, lengths, _u64(counts))
        pending.flush(fh)
        fh.write(_BLOCK.pack(0, 0))
        fh.write(_FOOTER.pack(pending.n, pending.total % (1 << 64), _END))
    return pending.n, pending.total


class _BlockWriter:
    """Pieces written as counts-file blocks of ``_FILE_BLOCK`` pieces, whatever sizes they come in."""

    def __init__(self):
        self.text, self.lengths, self.counts = bytearray(), array("I"), array("Q")
        self.n = self.total = 0

    def add(self, fh, text: bytes, lengths: array, counts: array) -> None:
        self.text += text
        self.lengths.extend(lengths)
        self.counts.extend(counts)
        self.n += len(lengths)
        self.total += sum(counts)
        while len(self.lengths) >= _FILE_BLOCK:
            self._write(fh, _FILE_BLOCK)

    def flush(self, fh) -> None:
        if self.lengths:
            self._write(fh, len(self.lengths))

    def _write(self, fh, k: int) -> None:
        lengths = self.lengths[:k]
        size = sum(lengths)
        fh.write(_BLOCK.pack(k, size))
        fh.write(_little(lengths))
        fh.write(_little(self.counts[:k]))
        fh.write(self.text[:size])
        del self.text[:size], self.lengths[:k], self.counts[:k]


class _CountsFile:
    """A counts file (see :meth:`Counts.save`, uncompressed) that a Counts reads block by block.

    ``owner`` (a TemporaryDirectory holding the file, or None) lives as long
    as this object, so the file is removed when the last Counts using it goes.
    """

    def __init__(self, path: str, n: int, total: int, owner=None):
        self.path, self.n, self.total, self.owner = path, n, total, owner

    def blocks(self) -> Iterator[tuple[array, array, bytes]]:
        """``(lengths u32, counts u64, text)`` per block, in order."""
        with open(self.path, "rb") as fh:
            fh.read(_HEADER.size)
            while True:
                n, text_size = _BLOCK.unpack(fh.read(_BLOCK.size))
                if n == 0:
                    return
                lengths = _read_array("I", fh.read(4 * n), 0, n)
                counts = _read_array("Q", fh.read(8 * n), 0, n)
                yield lengths, counts, fh.read(text_size)

    def batches(self) -> Iterator[tuple[bytes, array, array]]:
        """``(text, offsets int64, counts u64)`` per block (see :func:`word_batches`)."""
        for lengths, counts, text in self.blocks():
            yield text, array("q", accumulate(lengths, initial=0)), counts

    def arrays(self) -> tuple[bytes, array, array]:
        """All pieces in memory: ``(blob, offsets, counts)``."""
        blob, lengths, counts = bytearray(), array("I"), array("Q")
        for block_lengths, block_counts, text in self.blocks():
            blob += text
            lengths.extend(block_lengths)
            counts.extend(block_counts)
        return bytes(blob), array("q", accumulate(lengths, initial=0)), counts


def release_free_memory() -> None:
    """Hand memory this process freed back to the system (see the BPE kernel's helper)."""
    from .._kernels.bpe_train import release_free_memory as release

    release()


def _spill_blocks(path: str) -> Iterator[tuple]:
    with open(path, "rb") as fh:
        while True:
            head = fh.read(_BLOCK.size)
            if not head:
                return
            n, text_size = _BLOCK.unpack(head)
            lengths = _u32(fh.read(4 * n))
            counts = _u64(fh.read(8 * n))
            keys = _u64(fh.read(8 * n))
            yield fh.read(text_size), lengths, counts, keys


def _where_text(first: tuple) -> str:
    name, line, offset, reason = first
    if line is None and offset is not None:
        try:
            line = _sources.line_number_at(name, offset)
        except OSError:
            return f"{name} (byte {offset}): {reason}"
    return f"{name}:{line}: {reason}" if line is not None else f"{name}: {reason}"
