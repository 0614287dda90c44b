"""Progress bars for long work (training, counting, encoding datasets).

A thin wrapper over tqdm that writes to stderr, stays quiet when disabled or
when stderr is not a terminal (unless ``PIECEWORKS_PROGRESS=1``), and always
offers ``update(n)`` so callers need no branches.

>>> with progress_bar(10, "Counting", enabled=False) as bar:
...     bar.update(3)

A trainer's ``progress_format`` (Hugging Face's option) picks the form:
``"indicatif"`` (bars, as ``show_progress`` says), ``"json"`` (one JSON
line per update on stderr, at most every quarter second, whatever
``show_progress`` says, as Hugging Face does) or ``"silent"``:

>>> with progress_bar(3, "Compute merges", enabled="json", stream=sys.stdout) as bar:
...     bar.update(3)
{"stage":"Compute merges","current":0,"total":3}
{"stage":"Compute merges","current":3,"total":3}
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager

from .errors import ConfigError

__all__ = ["progress_bar", "progress_wanted", "PROGRESS_FORMATS", "progress_format_option"]

PROGRESS_FORMATS = ("indicatif", "json", "silent")
# The least time between two JSON lines (a line per merge would be tens of thousands).
JSON_INTERVAL_SECONDS = 0.25


def progress_format_option(value) -> str:
    """A trainer's ``progress_format``, checked.

    >>> progress_format_option("json")
    'json'
    """
    if value not in PROGRESS_FORMATS:
        raise ConfigError(f"progress_format must be one of {', '.join(PROGRESS_FORMATS)}, got {value!r}",
                          fix='use "indicatif" (bars), "json" (JSON lines on stderr) or "silent"')
    return value


def progress_wanted(enabled: bool = True) -> bool:
    """Whether to draw a bar: asked for, and stderr is a terminal (or forced by env)."""
    if not enabled:
        return False
    forced = os.environ.get("PIECEWORKS_PROGRESS")
    if forced is not None:
        return forced not in ("", "0", "false", "no")
    return sys.stderr.isatty()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass


class _JsonBar:
    """``{"stage":..., "current":..., "total":...}`` lines: at the start, after updates (at most every
    JSON_INTERVAL_SECONDS) and at the end, where the total is what was done (Hugging Face's lines)."""

    def __init__(self, total: int | None, stage: str, stream):
        self.total, self.stage, self.stream, self.n = total, stage, stream, 0
        self._emit(self.total)

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.monotonic() - self._last >= JSON_INTERVAL_SECONDS:
            self._emit(self.total)

    def set_postfix_str(self, s: str) -> None:
        pass

    def finish(self) -> None:
        self._emit(self.n)

    def _emit(self, total: int | None) -> None:
        self.stream.write(json.dumps({"stage": self.stage, "current": self.n, "total": total},
                                     separators=(",", ":")) + "\n")
        self.stream.flush()
        self._last = time.monotonic()


@contextmanager
def progress_bar(total: int | None, description: str, unit: str = "it", enabled: bool | str = True, stream=None):
    """A tqdm bar (bytes get KB/MB scaling), or a no-op with the same ``update``.

    ``enabled``: a bool, or a ``progress_format`` ("json": JSON lines, on
    ``stream`` (stderr) even when it is not a terminal; "silent": nothing).
    """
    if enabled == "json":
        bar = _JsonBar(total, description, stream or sys.stderr)
        yield bar
        bar.finish()
        return
    if enabled == "silent" or not progress_wanted(bool(enabled)):
        yield _NoBar()
        return
    from tqdm import tqdm

    scale = unit == "B"
    with tqdm(total=total, desc=description, unit=unit, unit_scale=scale, unit_divisor=1024 if scale else 1000,
              file=sys.stderr, dynamic_ncols=True, mininterval=0.2) as bar:
        yield bar
