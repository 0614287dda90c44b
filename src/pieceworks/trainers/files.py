"""Reading training files: UTF-8 text, one line at a time, line endings kept.

Lines keep their ``\\n`` (and ``\\r\\n``) as Hugging Face's trainer does, so
a pre-tokenizer that sees newlines counts them the same way.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "t.txt"); _ = open(p, "w").write("a b\\nc")
>>> list(iter_file_lines([p]))
['a b\\n', 'c']
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator

from ..errors import FileFormatError

__all__ = ["iter_file_lines", "total_size"]


def total_size(paths: Iterable["str | os.PathLike"]) -> int | None:
    """Bytes in all the files (None if any size is unknown, e.g. a pipe)."""
    total = 0
    for path in paths:
        try:
            total += os.path.getsize(path)
        except OSError:
            return None
    return total


def iter_file_lines(paths: Iterable["str | os.PathLike"], on_bytes=None) -> Iterator[str]:
    """Yield every line of every file; invalid UTF-8 raises FileFormatError naming file:line.

    ``on_bytes`` (if given) is called with each line's size in bytes, for a
    progress bar.
    """
    for path in paths:
        try:
            fh = open(path, "rb")
        except FileNotFoundError as exc:
            raise FileFormatError(path, "file not found", fix="check the path") from exc
        except IsADirectoryError as exc:
            raise FileFormatError(path, "is a folder, not a file", fix="pass the text files inside it") from exc
        with fh:
            for lineno, raw in enumerate(fh, start=1):
                if on_bytes is not None:
                    on_bytes(len(raw))
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise FileFormatError(
                        path, f"invalid UTF-8 at byte {exc.start} of the line", line=lineno,
                        fix="convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)") from exc
