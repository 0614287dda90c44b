"""Encode a whole corpus to token ids: NumPy ``.npy`` shards plus an index of documents.

``encode_dataset(inputs, tokenizer, out_dir)`` reads the same inputs as
counting (text, .jsonl, .gz/.zst, Parquet/Arrow; see
:mod:`pieceworks.trainers.sources`), encodes them on every core, and writes
one shard per unit of input:

* ``shard-00000.npy``: the token ids of the unit's documents, back to back,
  ``uint16`` when the vocabulary has at most 65,536 ids, else ``uint32``;
* ``shard-00000.docs.npy``: ``int64`` end offsets, one per document, so
  document ``i`` is ``ids[docs[i-1]:docs[i]]`` (``docs[-1]`` is the count);
* ``index.json``: the dtype, the tokenizer's hash, every shard with its
  number of tokens and documents and the input range it came from.

A document is a non-empty line of a text file (without its line ending),
or one record's ``field`` of .jsonl / Parquet / Arrow. With ``eod_token``
its id follows every document (and is counted in it).

**Resuming.** ``job.json`` records the inputs (names, sizes, modification
times), the tokenizer's hash and the options. Run the same job again into
the same folder and the shards already there are kept; only the missing
ones are encoded. A shard is written to a temporary name and renamed, its
``.docs.npy`` first and its ``.npy`` last, so a shard exists under its final
name only once it is whole. A different job in the same folder is refused.

The ``.npy`` files are written by hand (a 128-byte header then raw
little-endian data), so encoding needs no NumPy; reading them is
``numpy.load(path, mmap_mode="r")``.

>>> import tempfile, os, json
>>> import pieceworks as pw
>>> tok = pw.Tokenizer(pw.models.WordLevel({"a": 0, "b": 1, "<eod>": 2}, unk_token="a"))
>>> tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "in.txt"); _ = open(p, "w").write("a b\\nb\\n")
>>> index = encode_dataset([p], tok, os.path.join(d, "out"), eod_token="<eod>", progress=False, workers=1)
>>> index["tokens"], index["documents"], read_npy(os.path.join(d, "out", "shard-00000.npy")).tolist()
(5, 2, [0, 1, 2, 1, 2])
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import time
from array import array
from collections import deque
from pathlib import Path

from .errors import ConfigError, FileFormatError, FileWriteError, PieceworksError
from .trainers import sources as _sources
from .trainers.counts import default_workers, pool_context, raise_unit_error, unit_error

__all__ = ["encode_dataset", "encode_unit", "read_npy", "write_npy", "DEFAULT_SHARD_BYTES"]

#: Input bytes per shard (one unit of work each).
DEFAULT_SHARD_BYTES = 64 << 20
_JOB = "job.json"
_INDEX = "index.json"
_ENCODE_BATCH = 1024


# -- .npy files ------------------------------------------------------------------------
def write_npy(path, values: array) -> None:
    """Write a 1-D ``array`` ('H' → <u2, 'I' → <u4, 'q' → <i8) as a .npy file, atomically."""
    from .fileio import atomic_open

    descr = {"H": "<u2", "I": "<u4", "q": "<i8", "Q": "<u8"}[values.typecode]
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len(values)},), }}"
    # Magic (6) + version (2) + length (2) + header + "\n", padded to 64 bytes.
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    data = values
    if sys.byteorder != "little":
        data = array(values.typecode, values)
        data.byteswap()
    with atomic_open(path) as fh:
        fh.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin-1"))
        fh.write(data.tobytes())


def read_npy(path) -> array:
    """Read a 1-D .npy file written by :func:`write_npy` as an ``array`` (no NumPy needed)."""
    import ast

    data = Path(path).read_bytes()
    if data[:6] != b"\x93NUMPY":
        raise FileFormatError(path, "not a .npy file", fix="pass a shard written by encode_dataset")
    (length,) = struct.unpack_from("<H", data, 8)
    header = ast.literal_eval(data[10:10 + length].decode("latin-1"))
    code = {"<u2": "H", "<u4": "I", "<i8": "q", "<u8": "Q"}.get(header.get("descr"))
    if code is None or header.get("fortran_order") or len(header.get("shape", ())) != 1:
        raise FileFormatError(path, f"unexpected .npy header {header}", fix="pass a shard written by encode_dataset")
    out = array(code)
    out.frombytes(data[10 + length:])
    if sys.byteorder != "little":
        out.byteswap()
    if len(out) != header["shape"][0]:
        raise FileFormatError(path, f"holds {len(out)} values but its header says {header['shape'][0]}",
                              fix="the shard is damaged; delete it and run the job again to redo it")
    return out


def _npy_length(path: Path) -> int:
    with open(path, "rb") as fh:
        head = fh.read(10)
        (length,) = struct.unpack_from("<H", head, 8)
        import ast

        return ast.literal_eval(fh.read(length).decode("latin-1"))["shape"][0]


# -- the job -----------------------------------------------------------------------------------
def shard_name(index: int) -> str:
    """``shard-00042``: shards sort in input order."""
    return f"shard-{index:05d}"


def encode_dataset(inputs, tokenizer, out_dir, *, field: str = "text", format: str | None = None,
                   eod_token: str | None = None, add_special_tokens: bool = False, workers: int | None = None,
                   shard_bytes: int = DEFAULT_SHARD_BYTES, errors: str = "skip", progress: bool = True) -> dict:
    """Encode ``inputs`` with ``tokenizer`` into shards in ``out_dir``; return the index (also in index.json).

    ``tokenizer``: a Tokenizer or the path of a tokenizer.json.
    """
    job = prepare_job(inputs, tokenizer, out_dir, field=field, format=format, eod_token=eod_token,
                      add_special_tokens=add_special_tokens, shard_bytes=shard_bytes, errors=errors)
    workers = default_workers() if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    results = {}
    from .progress import progress_bar

    with progress_bar(job.total_bytes, "Encoding", unit="B", enabled=progress) as bar:
        rate = _TokenRate(bar)
        for result in _run(job, workers):
            results[result["shard"]] = result
            bar.update(result["size"])
            rate.add(result["tokens"])
    return job.finish(results)


class _TokenRate:
    """Shows tokens/s beside the bytes bar."""

    def __init__(self, bar):
        self.bar, self.tokens, self.start = bar, 0, time.perf_counter()

    def add(self, tokens: int) -> None:
        self.tokens += tokens
        seconds = max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix_str(f"{self.tokens:,} tokens, {self.tokens / seconds:,.0f} tok/s")


class Job:
    """One encode-dataset job: its folder, options, units and the shards already done."""

    def __init__(self, out_dir: Path, sources, description: dict, tokenizer_json: str, dtype: str,
                 eod_id: int | None, add_special_tokens: bool, shard_bytes: int, errors: str):
        self.out_dir = out_dir
        self.sources = sources
        self.description = description
        self.tokenizer_json = tokenizer_json
        self.dtype = dtype
        self.eod_id = eod_id
        self.add_special_tokens = add_special_tokens
        self.shard_bytes = shard_bytes
        self.errors = errors
        self.total_bytes = sum(s.size or 0 for s in sources)
        self.planned: dict[int, dict] = {}

    def units(self):
        """Every unit with no finished shard yet (resumed jobs skip the rest)."""
        for unit in _sources.plan_units(self.sources, self.shard_bytes):
            ranged = unit.payload is None
            self.planned[unit.index] = {"source": unit.source.name, "start": unit.start if ranged else None,
                                        "end": unit.end if ranged else None}
            if not self.done(unit.index):
                yield unit

    def done(self, index: int) -> bool:
        name = shard_name(index)
        return (self.out_dir / f"{name}.npy").exists() and (self.out_dir / f"{name}.docs.npy").exists()

    def options(self) -> dict:
        return {"dtype": self.dtype, "eod_id": self.eod_id, "add_special_tokens": self.add_special_tokens,
                "errors": self.errors}

    def finish(self, results: dict) -> dict:
        """Write index.json over every shard (new and resumed) and return it."""
        shards, tokens, documents, skipped, first = [], 0, 0, 0, None
        for unit_index in range(len(self.planned)):
            name = shard_name(unit_index)
            result = results.get(name) or self._resumed(name)
            shards.append({"name": name, "tokens": result["tokens"], "documents": result["documents"],
                           **self.planned[unit_index]})
            tokens += result["tokens"]
            documents += result["documents"]
            skipped += result.get("skipped", 0)
            first = first or result.get("first_skipped")
        index = {"format": "pieceworks-token-shards", "version": 1, "dtype": self.dtype,
                 "eod_id": self.eod_id, "tokenizer_sha256": self.description["tokenizer_sha256"],
                 "tokens": tokens, "documents": documents, "skipped_lines": skipped,
                 "first_skipped": first, "shards": shards}
        from .fileio import atomic_write_text

        atomic_write_text(self.out_dir / _INDEX, json.dumps(index, indent=1, ensure_ascii=False))
        if skipped:
            import warnings

            warnings.warn(f"skipped {skipped} unreadable line(s); the first is {first}. Fix: convert the input "
                          f"to UTF-8, or pass errors=\"strict\" to stop at the first", UserWarning, stacklevel=3)
        return index

    def _resumed(self, name: str) -> dict:
        """What a shard left by an earlier run holds (read from its files)."""
        docs_path = self.out_dir / f"{name}.docs.npy"
        ids_path = self.out_dir / f"{name}.npy"
        if not ids_path.exists():
            raise FileFormatError(ids_path, "is missing although later shards exist",
                                  fix="run the same job again to finish it")
        docs = read_npy(docs_path)
        tokens = _npy_length(ids_path)
        if (docs[-1] if docs else 0) != tokens:
            raise FileFormatError(ids_path, f"holds {tokens} tokens but its .docs.npy ends at "
                                            f"{docs[-1] if docs else 0}",
                                  fix="delete both files of this shard and run the job again")
        # (Lines skipped while making it were reported by the run that made it.)
        return {"tokens": tokens, "documents": len(docs)}


def prepare_job(inputs, tokenizer, out_dir, *, field="text", format=None, eod_token=None,
                add_special_tokens=False, shard_bytes=DEFAULT_SHARD_BYTES, errors="skip") -> Job:
    """Check the options, create (or re-open) the output folder, and describe the job."""
    from .tokenizer import Tokenizer

    if errors not in _sources.ERRORS:
        raise ConfigError(f"errors must be one of {_sources.ERRORS}, got {errors!r}",
                          fix='use "skip" (count and report bad lines) or "strict" (stop at the first)')
    if isinstance(shard_bytes, bool) or not isinstance(shard_bytes, int) or shard_bytes < 1:
        raise ConfigError(f"shard_bytes must be a positive number of bytes, got {shard_bytes!r}")
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = Tokenizer.from_file(os.fspath(tokenizer))
    tokenizer_json = tokenizer.to_str()
    vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
    eod_id = None
    if eod_token is not None:
        eod_id = tokenizer.token_to_id(eod_token)
        if eod_id is None:
            raise ConfigError(f"eod_token {eod_token!r} is not in the tokenizer's vocabulary",
                              fix="add it (tokenizer.add_special_tokens([...])) or pass a token it has")
    dtype = "uint16" if vocab_size <= 1 << 16 else "uint32"
    sources = _sources.open_sources(inputs, field=field, format=format)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} exists and is not a folder", fix="pass a folder for the shards")
    out.mkdir(parents=True, exist_ok=True)
    description = {
        "inputs": [{"name": s.name, "size": s.size, "mtime_ns": os.stat(s.name).st_mtime_ns,
                    "format": s.format, "compression": s.compression, "field": s.field} for s in sources],
        "tokenizer_sha256": hashlib.sha256(tokenizer_json.encode("utf-8")).hexdigest(),
        "shard_bytes": shard_bytes, "dtype": dtype, "eod_id": eod_id,
        "add_special_tokens": bool(add_special_tokens), "errors": errors,
    }
    _claim_folder(out, description)
    return Job(out, sources, description, tokenizer_json, dtype, eod_id, bool(add_special_tokens), shard_bytes,
               errors)


def _claim_folder(out: Path, description: dict) -> None:
    from .fileio import atomic_write_text

    job_file = out / _JOB
    if job_file.exists():
        try:
            previous = json.loads(job_file.read_text(encoding="utf-8"))
        except ValueError:
            previous = None
        if previous != description:
            raise ConfigError(f"{out} holds shards of a different job (other inputs, tokenizer or options)",
                              fix="write to a new folder, or delete that one to start over")
        return
    if any(out.glob("shard-*")):
        raise ConfigError(f"{out} holds shards but no {_JOB}", fix="write to a new, empty folder")
    atomic_write_text(job_file, json.dumps(description, indent=1, ensure_ascii=False))


# -- encoding units ---------------------------------------------------------------------------
_TOKENIZERS: dict[str, object] = {}


def _tokenizer_for(tokenizer_json: str):
    key = hashlib.sha256(tokenizer_json.encode("utf-8")).hexdigest()
    found = _TOKENIZERS.get(key)
    if found is None:
        from .tokenizer import Tokenizer

        found = _TOKENIZERS[key] = Tokenizer.from_str(tokenizer_json)
    return found


def encode_unit(unit, tokenizer_json: str, out_dir: str, dtype: str, eod_id: int | None,
                add_special_tokens: bool, errors: str) -> dict:
    """Encode one unit and write its shard (runs in worker processes and on Dask workers)."""
    try:
        read = _sources.read_unit(unit, errors)
        texts = _documents(read)
        tokenizer = _tokenizer_for(tokenizer_json)
        ids = array("H" if dtype == "uint16" else "I")
        ends = array("q")
        for start in range(0, len(texts), _ENCODE_BATCH):
            # The fast paths hand over the ids without a Python int each.
            for values in tokenizer._encode_ids_batch(texts[start:start + _ENCODE_BATCH], add_special_tokens):
                _append_ids(ids, values)
                if eod_id is not None:
                    ids.append(eod_id)
                ends.append(len(ids))
        name = shard_name(unit.index)
        out = Path(out_dir)
        # The index first, the ids last: a shard is done once its .npy exists.
        write_npy(out / f"{name}.docs.npy", ends)
        write_npy(out / f"{name}.npy", ids)
    except FileFormatError as exc:
        return {"shard": shard_name(unit.index), "error": ("format", unit_error(exc))}
    except PieceworksError as exc:
        return {"shard": shard_name(unit.index), "error": (type(exc).__name__, str(exc))}
    first = read.first_skipped
    return {"shard": name, "tokens": len(ids), "documents": len(ends), "size": unit.size,
            "source": unit.source.name, "start": unit.start if unit.payload is None else None,
            "end": unit.end if unit.payload is None else None, "skipped": read.skipped,
            "first_skipped": None if first is None else _first_text(first)}


def _append_ids(ids: array, values: array) -> None:
    """Append int32 ``values`` to the shard's ``ids`` (typecode 'H' or 'I')."""
    if ids.typecode == "I" and values.itemsize == ids.itemsize:
        ids.frombytes(values.tobytes())     # same width: ids are never negative
    else:
        ids.extend(array(ids.typecode, values))


def _documents(read) -> list[str]:
    """Documents of a unit: non-empty lines (endings removed) or non-empty records."""
    if read.lines_mode:
        lines = read.texts[0].split("\n")
        return [line[:-1] if line.endswith("\r") else line for line in lines if line and line != "\r"]
    return [t for t in read.texts if t]


def _first_text(first: tuple) -> str:
    name, line, offset, reason = first
    if line is None and offset is not None:
        line = _sources.line_number_at(name, offset)
    return f"{name}:{line}: {reason}"


def check_result(result: dict) -> dict:
    """Raise the error a worker reported, in this process."""
    error = result.get("error")
    if error is None:
        return result
    kind, payload = error
    if kind == "format":
        raise_unit_error(payload)
    if kind == "FileWriteError":
        raise FileWriteError(payload)
    if kind == "ConfigError":
        raise ConfigError(payload)
    raise PieceworksError(payload)


def _one_thread_each() -> None:
    # The workers are the parallelism: encode_batch's own threads would only oversubscribe the cores.
    os.environ["PIECEWORKS_NUM_THREADS"] = "1"


def _run(job: Job, workers: int):
    args = (job.tokenizer_json, str(job.out_dir), job.dtype, job.eod_id, job.add_special_tokens, job.errors)
    units = job.units()
    if workers == 1:
        for unit in units:
            yield check_result(encode_unit(unit, *args))
        return
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=pool_context(), initializer=_one_thread_each)
    pending: deque = deque()
    try:
        for unit in units:
            pending.append(pool.submit(encode_unit, unit, *args))
            while len(pending) >= 2 * workers:
                yield check_result(pending.popleft().result())
        while pending:
            yield check_result(pending.popleft().result())
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
