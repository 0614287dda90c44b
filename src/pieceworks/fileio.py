"""Writing files so that nothing is ever half-written.

Every file pieceworks writes goes to a temporary name in the same folder,
is flushed and fsync'ed, then renamed over the target: a crash leaves either
the old file or the new one.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "a.txt")
>>> atomic_write_text(p, "hello"); open(p).read()
'hello'
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from .errors import FileWriteError

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_open"]


def atomic_write_bytes(path: "str | os.PathLike", data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise FileWriteError(f"cannot write {target}: folder {folder} does not exist",
                             fix="create the folder first or choose another path")
    tmp_name = None
    try:
        fd, tmp_name = _mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
        tmp_name = None
        _fsync_dir(folder)
    except OSError as exc:
        raise FileWriteError(f"cannot write {target}: {exc.strerror or exc}",
                             fix="check the path, its permissions and free disk space; "
                                 "any previous file there is unchanged") from exc
    finally:
        if tmp_name is not None and os.path.exists(tmp_name):
            os.unlink(tmp_name)


def atomic_write_text(path: "str | os.PathLike", text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


@contextmanager
def atomic_open(path: "str | os.PathLike"):
    """Stream a binary file to ``path`` atomically: write to the yielded handle, rename on success.

    On any error (a full disk included) the temporary file is removed and
    nothing appears under ``path``; OSErrors become FileWriteError.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "b.bin")
    >>> with atomic_open(p) as fh:
    ...     _ = fh.write(b"data")
    >>> open(p, "rb").read()
    b'data'
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise FileWriteError(f"cannot write {target}: folder {folder} does not exist",
                             fix="create the folder first or choose another path")
    tmp_name = None
    try:
        fd, tmp_name = _mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        with _open_temp(fd, tmp_name) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
        tmp_name = None
        _fsync_dir(folder)
    except OSError as exc:
        raise FileWriteError(f"cannot write {target}: {exc.strerror or exc}",
                             fix="check the path, its permissions and free disk space; "
                                 "any previous file there is unchanged") from exc
    finally:
        if tmp_name is not None and os.path.exists(tmp_name):
            os.unlink(tmp_name)


def _mkstemp(**kwargs) -> tuple[int, str]:
    import tempfile     # (here: 13 ms to import, and most programs that import pieceworks write no file)

    return tempfile.mkstemp(**kwargs)


def _open_temp(fd: int, name: str):
    # One place that opens the temporary file, so tests can swap in a full disk.
    return os.fdopen(fd, "wb")


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the directory entry is on disk.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
