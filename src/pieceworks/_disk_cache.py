"""Tables that take a second or more to build, kept on disk between processes.

A cache file holds bytes that pieceworks can always build again: a missing,
unreadable, stale or corrupted one costs only the build, and a folder that
cannot be written is simply not used. Where: ``$PIECEWORKS_CACHE``, else
``$XDG_CACHE_HOME/pieceworks``, else ``~/.cache/pieceworks``;
``PIECEWORKS_CACHE=off`` turns the cache off.

The caller names its file by everything the bytes depend on (see
:func:`source_stamp`), so a changed input or a new pieceworks build reads
a new name rather than an old table.

>>> import tempfile, os
>>> os.environ["PIECEWORKS_CACHE"] = tempfile.mkdtemp()
>>> read_cached("demo.bin", b"DEMO"), write_cached("demo.bin", b"DEMO", b"table"), read_cached("demo.bin", b"DEMO")
(None, None, b'table')
>>> del os.environ["PIECEWORKS_CACHE"]
"""

from __future__ import annotations

import os
import sys
import unicodedata

from .errors import FileWriteError
from .fileio import atomic_write_bytes

_OFF = "off"


def cache_folder() -> str | None:
    """The folder cache files go in (see the module docstring); None when the cache is off."""
    chosen = os.environ.get("PIECEWORKS_CACHE")
    if chosen:
        return None if chosen.lower() == _OFF else chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pieceworks")


def read_cached(name: str, magic: bytes) -> bytes | None:
    """The bytes after ``magic`` in cache file ``name``; None if there is no such file with that start.

    A file read is marked as just used (its modification time), so
    :func:`write_cached` keeps it over files not read for longer.
    """
    path = _cache_path(name)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            if fh.read(len(magic)) != magic:
                return None
            blob = fh.read()        # (one bytes object of the rest: no copy of a slice)
    except OSError:
        return None
    _mark_used(path)
    return blob


def map_cached(name: str, magic: bytes) -> memoryview | None:
    """:func:`read_cached`'s bytes as a read-only view of the file mapped into memory, for a reader
    that copies them once anyway: the mapped pages are the page cache's own, where reading
    the file made them twice in fresh memory (a BERT char map's 4.4 MB took 12 ms so on a
    machine slow to hand out pages). ``len(magic)`` sets the data's alignment.

    >>> import tempfile, os
    >>> os.environ["PIECEWORKS_CACHE"] = tempfile.mkdtemp()
    >>> write_cached("demo.bin", b"DEMO", b"table"); bytes(map_cached("demo.bin", b"DEMO"))
    b'table'
    >>> del os.environ["PIECEWORKS_CACHE"]
    """
    import mmap

    path = _cache_path(name)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):       # (ValueError: an empty file, which cannot be mapped)
        return None
    view = memoryview(mapped)
    if view[:len(magic)] != magic:
        return None
    _mark_used(path)
    return view[len(magic):]


def _cache_path(name: str) -> str | None:
    folder = cache_folder()
    return None if folder is None else os.path.join(folder, name)


def _mark_used(path: str) -> None:
    try:
        os.utime(path)
    except OSError:
        pass                    # (a read-only cache: still read, just never pruned)


def write_cached(name: str, magic: bytes, blob: bytes, keep: tuple[str, int] | None = None) -> None:
    """Keep ``magic + blob`` as cache file ``name`` (written whole, then renamed); nothing if it cannot.

    ``keep=(prefix, n)``: then only the ``n`` files named ``prefix...``
    used last stay (big tables, whose names change with every build).
    """
    folder = cache_folder()
    if folder is None:
        return
    try:
        os.makedirs(folder, exist_ok=True)
        atomic_write_bytes(os.path.join(folder, name), magic + blob)
        if keep is not None:
            _remove_least_used(folder, *keep)
    except (OSError, FileWriteError):
        pass


def _remove_least_used(folder: str, prefix: str, kept: int) -> None:
    """Remove the files named ``prefix...`` in ``folder`` beyond the ``kept`` used last."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.is_file():
                found.append((entry.stat().st_mtime_ns, entry.path))
    for _, path in sorted(found, reverse=True)[kept:]:
        try:
            os.remove(path)
        except OSError:
            pass                # (another process removed it, or may not: either way, not ours to fix)


def cached_bytes(name: str, build, stamp: str, valid=None) -> bytes:
    """``build()``, read back from cache file ``name-stamp.bin`` when an earlier process built it
    (and ``valid(blob)`` holds, if given), else built and kept there.

    >>> import os, tempfile; os.environ["PIECEWORKS_CACHE"] = tempfile.mkdtemp()
    >>> cached_bytes("demo", lambda: b"built", "v1"), cached_bytes("demo", lambda: b"not called", "v1")
    (b'built', b'built')
    >>> del os.environ["PIECEWORKS_CACHE"]
    """
    file_name = f"{name}-{stamp}.bin"
    blob = read_cached(file_name, _TABLE_MAGIC)
    if blob is not None and (valid is None or valid(blob)):
        return blob
    blob = build()
    write_cached(file_name, _TABLE_MAGIC, blob, keep=(f"{name}-", _TABLES_KEPT))
    return blob


_TABLE_MAGIC = b"PWTABLE1"
# Builds of one table kept (the stamp changes with every pieceworks build).
_TABLES_KEPT = 3


def source_stamp(*modules) -> str:
    """A short digest of what built tables depend on besides their arguments: these modules' files
    (size and modification time: an edit or a reinstall changes it), Python's Unicode data version
    and the byte order. A module is a module object, or the name of a top-level one (a
    package: its ``__init__.py``), found without importing it.

    >>> import pieceworks.normalizers as n
    >>> len(source_stamp(n)), source_stamp(n) == source_stamp(n), source_stamp(n) != source_stamp(n, "regex")
    (16, True, True)
    """
    import hashlib      # (here: its OpenSSL start is 10 ms of `import pieceworks` otherwise)

    facts = [unicodedata.unidata_version, sys.byteorder, sys.implementation.cache_tag or ""]
    for module in modules:
        name, path = (module, _module_file(module)) if isinstance(module, str) else (module.__name__, module.__file__)
        stat = os.stat(path)
        facts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.blake2b("\n".join(facts).encode(), digest_size=8).hexdigest()


def _module_file(name: str) -> str:
    """The file of top-level module ``name``, not imported (``regex`` is 20 ms to import, and a
    table read back from the cache does not need it).

    >>> _module_file("regex").endswith("__init__.py")
    True
    """
    from importlib.util import find_spec

    spec = find_spec(name)
    if spec is None or not spec.has_location:
        raise ImportError(f"pieceworks needs the {name!r} module and it was not found; pip install {name}")
    return spec.origin
