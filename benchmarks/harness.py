"""A small harness for side-by-side benchmarks: same input, every contender,
one process run, outputs checked equal before any speed is reported.

Times are the median of ``repeat`` runs after one warm-up; the table prints
throughput and each contender's ratio to pieceworks. Quote the ratios, not
the absolute numbers: machines are shared and noisy.

>>> rows = compare({"double": lambda xs: [2 * x for x in xs], "twice": lambda xs: [x + x for x in xs]},
...                list(range(1000)), size=1000, unit="items", repeat=3, check=True)
>>> sorted(rows)
['double', 'twice']
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Callable

SHARED_DATA = Path(os.environ.get("PIECEWORKS_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


class OutputMismatch(AssertionError):
    """Two contenders disagreed: no speed is reported for a wrong answer."""


def time_call(fn: Callable, arg, repeat: int) -> tuple[float, object]:
    """Median wall seconds of ``fn(arg)`` over ``repeat`` runs (after a warm-up) and its output."""
    out = fn(arg)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def compare(contenders: dict[str, Callable], arg, size: float, unit: str = "MB", repeat: int = 5,
            check: bool | Callable = True, reference: str | None = None) -> dict[str, float]:
    """Run every contender on ``arg``; return seconds per contender.

    ``check``: True compares outputs with ``==``; a callable normalizes each
    output first; False skips the check (say why where you call it).
    """
    results: dict[str, float] = {}
    outputs = {}
    for name, fn in contenders.items():
        seconds, out = time_call(fn, arg, repeat)
        results[name] = seconds
        outputs[name] = out
    if check:
        norm = check if callable(check) else (lambda x: x)
        ref_name = reference or next(iter(contenders))
        expected = norm(outputs[ref_name])
        for name, out in outputs.items():
            if norm(out) != expected:
                raise OutputMismatch(f"{name} disagrees with {ref_name}")
    return results


def print_table(title: str, results: dict[str, float], size: float, unit: str = "MB",
                baseline: str = "pieceworks") -> None:
    """Throughput per contender and its speed relative to ``baseline`` (higher = faster)."""
    print(f"\n## {title}")
    base = results.get(baseline)
    print(f"{'contender':<28}{unit + '/s':>12}{'speed vs ' + baseline:>22}")
    for name, seconds in sorted(results.items(), key=lambda kv: kv[1]):
        rate = size / seconds if seconds > 0 else float("inf")
        ratio = f"{base / seconds:.2f}x" if base else "-"
        print(f"{name:<28}{rate:>12.2f}{ratio:>22}")


def read_corpus(relative: str, limit_bytes: int | None = None) -> str:
    """Text of a corpus under ../shared/data (UTF-8), optionally cut to ``limit_bytes``."""
    path = SHARED_DATA / relative
    data = path.read_bytes()
    if limit_bytes is not None:
        data = data[:limit_bytes]
    return data.decode("utf-8", errors="ignore")
