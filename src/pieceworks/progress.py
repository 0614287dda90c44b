"""Progress bars for long work (training, counting, encoding datasets).

A thin wrapper over tqdm that writes to stderr, stays quiet when disabled or
when stderr is not a terminal (unless ``PIECEWORKS_PROGRESS=1``), and always
offers ``update(n)`` so callers need no branches.

>>> with progress_bar(10, "Counting", enabled=False) as bar:
...     bar.update(3)
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

__all__ = ["progress_bar", "progress_wanted"]


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


@contextmanager
def progress_bar(total: int | None, description: str, unit: str = "it", enabled: bool = True):
    """A tqdm bar (bytes get KB/MB scaling), or a no-op with the same ``update``."""
    if not progress_wanted(enabled):
        yield _NoBar()
        return
    from tqdm import tqdm

    scale = unit == "B"
    with tqdm(total=total, desc=description, unit=unit, unit_scale=scale, unit_divisor=1024 if scale else 1000,
              file=sys.stderr, dynamic_ncols=True, mininterval=0.2) as bar:
        yield bar
