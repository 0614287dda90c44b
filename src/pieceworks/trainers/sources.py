"""Where texts come from: files (plain, .jsonl, .gz, .zst, Parquet, Arrow) and iterators.

Counting (:mod:`pieceworks.trainers.counts`), ``encode-dataset``
(:mod:`pieceworks.dataset`) and the Dask jobs (:mod:`pieceworks.distributed`)
all read their input through this module, cut into *units* of work:

* a plain, uncompressed text file is cut into byte ranges of about
  ``unit_bytes``; a line belongs to the range where it starts, so a worker
  reads its own range and no line is read twice or lost;
* every other input (compressed files, .jsonl, Parquet/Arrow columns,
  Python iterables) is streamed by the caller and cut into blocks that end
  at a line (or record) boundary; the block travels with its unit.

The cut depends only on the input and ``unit_bytes``, so a resumed job
finds the same units again.

What is one *text*: a line of a text file, with its ``\\n`` kept (as Hugging
Face's trainer reads files); one record's field of a .jsonl file; one value
of a Parquet/Arrow column; one item of an iterable.

Bad input: a line that is not UTF-8 (or a .jsonl line that is not a JSON
object with a string field) is skipped and counted with ``errors="skip"``,
or raises :class:`~pieceworks.errors.FileFormatError` naming file:line with
``errors="strict"``.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "t.txt"); _ = open(p, "w").write("a b\\nc\\n")
>>> [read_unit(u, "strict").texts for u in plan_units(open_sources([p]), unit_bytes=1 << 20)]
[['a b\\nc\\n']]
"""

from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass
from dataclasses import field as _field
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import ConfigError, FileFormatError, InputTypeError

__all__ = ["Source", "Unit", "UnitTexts", "open_sources", "iterable_source", "plan_units", "read_unit",
           "ERRORS", "DEFAULT_UNIT_BYTES", "line_number_at"]

ERRORS = ("skip", "strict")
#: Work units of 8 MiB: big enough that a unit's fixed costs vanish, small
#: enough that two workers stay balanced and a unit's table stays small.
DEFAULT_UNIT_BYTES = 8 << 20

_FORMATS = ("text", "jsonl", "parquet", "arrow")
_COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}


@dataclass(frozen=True)
class Source:
    """One input: a file with its format, or an in-memory iterable."""

    name: str                      # the path as given, or "<iterator>"
    format: str                    # text | jsonl | parquet | arrow
    compression: str | None = None  # None | gzip | zstd
    field: str = "text"            # the .jsonl field / Parquet-Arrow column
    size: int | None = None        # bytes on disk (None for iterables)
    iterable: object = _field(default=None, compare=False, repr=False)

    @property
    def splittable(self) -> bool:
        """Workers can read byte ranges of it themselves (plain, uncompressed text)."""
        return self.format == "text" and self.compression is None and self.iterable is None


@dataclass
class Unit:
    """A unit of work: a byte range of a file, or a block of data read by the caller."""

    index: int
    source: Source
    start: int = 0                 # byte range [start, end) of a splittable file
    end: int = 0
    payload: object = None         # bytes (text/jsonl lines) or list[str] (columns, iterables)
    first_line: int | None = None  # line number of the payload's first line, when known
    size: int = 0                  # bytes this unit stands for (progress bars)

    def __getstate__(self):
        # An iterable source cannot travel to another process; its payload does.
        state = dict(self.__dict__)
        if state["source"].iterable is not None:
            src = state["source"]
            state["source"] = Source(src.name, src.format, src.compression, src.field, src.size)
        return state


@dataclass
class UnitTexts:
    """What reading a unit gives: the texts, and what was skipped."""

    texts: list[str]               # with lines_mode: one str of whole lines, each line one text
    lines_mode: bool = False
    n_texts: int = 0
    n_bytes: int = 0
    skipped: int = 0
    first_skipped: tuple | None = None   # (name, line or None, byte offset or None, reason)


# -- naming the inputs ----------------------------------------------------------
def open_sources(inputs: Iterable, field: str = "text", format: str | None = None) -> list[Source]:
    """Check every input path and work out its format from its name.

    ``name.jsonl[.gz|.zst]`` → records with ``field``; ``.parquet``, ``.arrow``
    / ``.feather`` → the column ``field``; anything else is text (optionally
    ``.gz``/``.zst``). ``format`` forces one format for every file.

    >>> open_sources([__file__])[0].format
    'text'
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if format is not None and format not in _FORMATS:
        raise ConfigError(f"unknown input format {format!r}", fix=f"use one of {', '.join(_FORMATS)}")
    sources = []
    for item in inputs:
        if not isinstance(item, (str, os.PathLike)):
            raise InputTypeError(f"input files must be paths, got {type(item).__name__}",
                                 fix="pass file paths (str or pathlib.Path), or use an iterator of texts")
        sources.append(_file_source(Path(item), str(item), field, format))
    return sources


def _file_source(path: Path, name: str, field: str, format: str | None) -> Source:
    if not path.exists():
        raise FileFormatError(name, "file not found", fix="check the path")
    if path.is_dir():
        raise FileFormatError(name, "is a folder, not a file", fix="pass the files inside it")
    if not os.access(path, os.R_OK):
        raise FileFormatError(name, "cannot be read (permission denied)", fix="check its permissions")
    suffixes = [s.lower() for s in path.suffixes]
    compression = _COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    inner = suffixes[:-1] if compression else suffixes
    fmt = format or _format_of(inner[-1] if inner else "")
    if fmt in ("parquet", "arrow") and compression:
        raise FileFormatError(name, f"{fmt} files are compressed inside; an outer {compression} layer "
                                    "is not supported", fix="decompress the file first")
    if compression == "zstd":
        _require("zstandard", "reading .zst files", "pip install zstandard")
    if fmt in ("parquet", "arrow"):
        _require("pyarrow", f"reading {fmt} files", "pip install pyarrow")
    return Source(name, fmt, compression, field, path.stat().st_size)


def _format_of(suffix: str) -> str:
    return {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".arrow": "arrow",
            ".feather": "arrow", ".ipc": "arrow"}.get(suffix, "text")


def _require(module: str, what: str, fix: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"{what} needs the optional package {module!r}, which is not installed", fix=fix)


def iterable_source(iterable, name: str = "<iterator>") -> Source:
    """An in-memory source: each item a str (or a list/tuple of str, as ``train_from_iterator`` takes)."""
    return Source(name, "iterable", None, "text", None, iterable)


# -- cutting into units ----------------------------------------------------------
def plan_units(sources: list[Source], unit_bytes: int = DEFAULT_UNIT_BYTES) -> Iterator[Unit]:
    """The units of work of ``sources``, in input order (indices count up from 0)."""
    if unit_bytes < 1:
        raise ConfigError(f"unit_bytes must be at least 1, got {unit_bytes}")
    index = 0
    for source in sources:
        for unit in _units_of(source, unit_bytes):
            unit.index = index
            index += 1
            yield unit


def _units_of(source: Source, unit_bytes: int) -> Iterator[Unit]:
    if source.splittable:
        size = source.size or 0
        for start in range(0, size, unit_bytes):
            yield Unit(0, source, start, min(start + unit_bytes, size), size=min(unit_bytes, size - start))
    elif source.iterable is not None:
        yield from _iterable_units(source, unit_bytes)
    elif source.format in ("text", "jsonl"):
        yield from _stream_units(source, unit_bytes)
    else:
        yield from _column_units(source, unit_bytes)


def _stream_units(source: Source, unit_bytes: int) -> Iterator[Unit]:
    """Blocks of whole lines of a (possibly compressed) text or .jsonl file."""
    line = 1
    with _open_binary(source) as fh:
        for data in blocks_of_lines(fh, unit_bytes):
            yield Unit(0, source, payload=data, first_line=line, size=_disk_share(source, len(data)))
            line += data.count(b"\n")


def blocks_of_lines(fh, size: int) -> Iterator[bytes]:
    """The bytes of ``fh`` in blocks of whole lines, about ``size`` bytes each.

    Each block ends with a line feed, but for the last if the file does not.
    A line longer than a block is joined once, when its end comes (not
    copied again with every block read).

    >>> list(blocks_of_lines(io.BytesIO(b"ab\\ncd\\nefgh\\nij"), 4))
    [b'ab\\n', b'cd\\n', b'efgh\\n', b'ij']
    """
    pending: list[bytes] = []
    while block := fh.read(size):
        cut = block.rfind(b"\n") + 1
        if not cut:
            pending.append(block)
            continue
        yield b"".join(pending + [block[:cut]]) if pending else block[:cut]
        pending = [block[cut:]] if cut < len(block) else []
    if pending:
        yield b"".join(pending)


def _disk_share(source: Source, n: int) -> int:
    # Progress counts bytes of input as read (decompressed for .gz/.zst).
    return n


def _open_binary(source: Source):
    try:
        if source.compression == "gzip":
            return gzip.open(source.name, "rb")
        if source.compression == "zstd":
            import zstandard

            raw = open(source.name, "rb")
            return _ClosingReader(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True), raw)
        return open(source.name, "rb")
    except OSError as exc:
        raise FileFormatError(source.name, f"cannot be opened: {exc.strerror or exc}",
                              fix="check the path and its permissions") from exc


class _ClosingReader(io.RawIOBase):
    """A zstd stream reader that also closes the file under it."""

    def __init__(self, reader, raw):
        self._reader, self._raw = reader, raw

    def read(self, n=-1):
        try:
            return self._reader.read(n)
        except Exception as exc:  # zstandard.ZstdError: corrupt frame
            raise FileFormatError(self._raw.name, f"cannot be decompressed: {exc}",
                                  fix="check that the .zst file is complete") from exc

    def close(self):
        self._reader.close()
        self._raw.close()
        super().close()


def _column_units(source: Source, unit_bytes: int) -> Iterator[Unit]:
    """Batches of a Parquet or Arrow column, about ``unit_bytes`` of text each."""
    texts: list[str] = []
    size = 0
    for batch in _column_batches(source):
        for value in batch:
            if value is None:
                continue
            texts.append(value)
            size += len(value)
            if size >= unit_bytes:
                yield Unit(0, source, payload=texts, size=size)
                texts, size = [], 0
    if texts:
        yield Unit(0, source, payload=texts, size=size)


def _column_batches(source: Source) -> Iterator[list]:
    import pyarrow as pa

    try:
        if source.format == "parquet":
            import pyarrow.parquet as pq

            reader = pq.ParquetFile(source.name)
            if source.field not in reader.schema_arrow.names:
                raise FileFormatError(source.name, f"no column {source.field!r} (columns: "
                                                   f"{', '.join(reader.schema_arrow.names)})",
                                      fix="name the text column with field=... (--field)")
            for batch in reader.iter_batches(columns=[source.field], batch_size=8192):
                yield _strings(batch.column(0), source)
            return
        with pa.memory_map(source.name) as mm:
            try:
                reader = pa.ipc.open_file(mm)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            except pa.ArrowInvalid:
                mm.seek(0)
                reader = pa.ipc.open_stream(mm)
                batches = iter(reader)
            if source.field not in reader.schema.names:
                raise FileFormatError(source.name, f"no column {source.field!r} (columns: "
                                                   f"{', '.join(reader.schema.names)})",
                                      fix="name the text column with field=... (--field)")
            for batch in batches:
                yield _strings(batch.column(batch.schema.get_field_index(source.field)), source)
    except (pa.ArrowInvalid, OSError) as exc:
        raise FileFormatError(source.name, f"cannot be read as {source.format}: {exc}",
                              fix="check that the file is complete and of that format") from exc


def _strings(column, source: Source) -> list:
    import pyarrow as pa

    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        raise FileFormatError(source.name, f"column {source.field!r} holds {column.type}, not strings",
                              fix="name a string column with field=... (--field)")
    return column.to_pylist()


def _iterable_units(source: Source, unit_bytes: int) -> Iterator[Unit]:
    texts: list[str] = []
    size = 0
    for i, item in enumerate(source.iterable):
        for text in _texts_of(item, i):
            texts.append(text)
            size += len(text)
        if size >= unit_bytes:
            yield Unit(0, source, payload=texts, size=size)
            texts, size = [], 0
    if texts:
        yield Unit(0, source, payload=texts, size=size)


def _texts_of(item, i: int) -> list[str]:
    if isinstance(item, str):
        return [item]
    if isinstance(item, (list, tuple)) and all(isinstance(t, str) for t in item):
        return list(item)
    raise InputTypeError(f"item {i} of the iterator is a {type(item).__name__}, not a str or a list of str",
                         fix="yield texts (str) or batches of texts (list of str)")


# -- reading a unit ------------------------------------------------------------
def read_unit(unit: Unit, errors: str = "skip") -> UnitTexts:
    """The texts of ``unit`` (run in a worker for file ranges)."""
    if errors not in ERRORS:
        raise ConfigError(f"errors must be one of {ERRORS}, got {errors!r}",
                          fix='use "skip" (count and report bad lines) or "strict" (stop at the first)')
    source = unit.source
    if isinstance(unit.payload, list):
        return UnitTexts(unit.payload, n_texts=len(unit.payload), n_bytes=unit.size)
    data = unit.payload if unit.payload is not None else _read_range(source, unit.start, unit.end)
    base = unit.start if unit.payload is None else None
    if source.format == "jsonl":
        return _jsonl_texts(data, source, unit.first_line, base, errors)
    return _text_lines(data, source, unit.first_line, base, errors)


def _read_range(source: Source, start: int, end: int) -> bytes:
    """The lines that start in ``[start, end)``, read whole."""
    try:
        with open(source.name, "rb") as fh:
            if start > 0:
                fh.seek(start - 1)
                if fh.read(1) != b"\n":
                    fh.readline()          # finish the line that started before us
                if fh.tell() >= end:
                    return b""
            data = fh.read(end - fh.tell())
            if data and not data.endswith(b"\n"):
                data += fh.readline()      # finish our last line
            return data
    except OSError as exc:
        raise FileFormatError(source.name, f"cannot be read: {exc.strerror or exc}",
                              fix="check the file and its permissions") from exc


def _text_lines(data: bytes, source: Source, first_line: int | None, base: int | None,
                errors: str) -> UnitTexts:
    try:
        chunk = data.decode("utf-8")
        return UnitTexts([chunk], lines_mode=True, n_texts=data.count(b"\n") + (not data.endswith(b"\n")),
                         n_bytes=len(data))
    except UnicodeDecodeError:
        pass
    good, skipped, first = [], 0, None
    pos = 0
    for k, raw in enumerate(_lf_lines(data)):
        try:
            good.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            where = _where(source, first_line, k, base, pos, exact=errors == "strict")
            if errors == "strict":
                raise FileFormatError(source.name, f"invalid UTF-8 at byte {exc.start} of the line",
                                      line=where[1], fix='convert the text to UTF-8 (e.g. iconv -f latin1 -t '
                                                         'utf-8), or pass errors="skip" to skip such lines') from None
            skipped += 1
            if first is None:
                first = where + ("invalid UTF-8",)
        pos += len(raw)
    return UnitTexts(["".join(good)], lines_mode=True, n_texts=len(good), n_bytes=len(data),
                     skipped=skipped, first_skipped=first)


def _lf_lines(data: bytes) -> list[bytes]:
    # bytes.splitlines also cuts at \r; lines end at \n only.
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _where(source: Source, first_line: int | None, k: int, base: int | None, pos: int,
           exact: bool = False) -> tuple:
    """(name, line number or None, byte offset or None) of line ``k`` of a unit.

    A worker reading a byte range does not know its line numbers; with
    ``exact`` (an error is about to be raised) it counts the newlines before.
    """
    if first_line is not None:
        return (source.name, first_line + k, None)
    offset = (base or 0) + pos
    if exact:
        return (source.name, line_number_at(source.name, offset), offset)
    return (source.name, None, offset)


def _jsonl_texts(data: bytes, source: Source, first_line: int | None, base: int | None,
                 errors: str) -> UnitTexts:
    texts, skipped, first = [], 0, None
    pos = 0
    for k, raw in enumerate(_lf_lines(data)):
        size = len(raw)
        if raw.strip():
            text, reason = _json_field(raw, source.field)
            if text is not None:
                texts.append(text)
            else:
                where = _where(source, first_line, k, base, pos, exact=errors == "strict")
                if errors == "strict":
                    raise FileFormatError(source.name, reason, line=where[1],
                                          fix='fix the line, or pass errors="skip" to skip bad lines')
                skipped += 1
                if first is None:
                    first = where + (reason,)
        pos += size
    return UnitTexts(texts, n_texts=len(texts), n_bytes=len(data), skipped=skipped, first_skipped=first)


def _json_field(raw: bytes, name: str) -> tuple[str | None, str]:
    try:
        record = json.loads(raw)
    except UnicodeDecodeError:
        return None, "invalid UTF-8"
    except ValueError as exc:
        return None, f"not valid JSON ({exc.msg})"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    value = record.get(name)
    if not isinstance(value, str):
        return None, f"no string field {name!r}"
    return value, ""


def line_number_at(path: str, offset: int) -> int:
    """The 1-based line number of byte ``offset`` of a plain file (counts newlines before it)."""
    line = 1
    with open(path, "rb") as fh:
        left = offset
        while left > 0:
            block = fh.read(min(left, 1 << 20))
            if not block:
                break
            line += block.count(b"\n")
            left -= len(block)
    return line
