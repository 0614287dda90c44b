"""The thread pool that ``Tokenizer.encode_batch`` shares out a batch on.

Threads only pay when the encoding runs without the GIL, which a plan says
with ``releases_gil = True`` (it then drops the lock for texts of at least
``nogil_min_chars`` chars). A batch is split into contiguous ranges of
about equal work, one per thread, and the results are joined in order, so
they are exactly the serial results; an error is the one the serial loop
would raise first.

The pool is made on first use with ``PIECEWORKS_NUM_THREADS`` threads
(default: the number of CPUs), and made again in a forked child.

>>> run_in_ranges(lambda start, stop: list(range(start, stop)), ["a", "b", "c"], None)
[0, 1, 2]
"""

from __future__ import annotations

import functools
import os
import threading
from bisect import bisect_left
from itertools import accumulate
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

from .._kernels.single_text import only_str, text_pair
from ..errors import ConfigError

__all__ = ["run_in_ranges", "run_job", "num_threads", "cpu_count"]

# Below this much GIL-free work (chars) in a batch, one thread is faster:
# handing work to threads costs tens of microseconds.
THREAD_MIN_CHARS = 32_768
# A raw batch spends ~1.5 us of GIL-bound Python per item around the kernel
# (~100 chars' worth): below this many chars per item, threads mostly wait
# for each other and one thread is faster.
RAW_MIN_AVERAGE_CHARS = 256

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def num_threads() -> int:
    """Threads for batch encoding: ``PIECEWORKS_NUM_THREADS``, else the CPU count.

    >>> num_threads() >= 1
    True
    """
    value = os.environ.get("PIECEWORKS_NUM_THREADS", "").strip()
    if not value:
        return cpu_count()
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"PIECEWORKS_NUM_THREADS must be a positive integer, got {value!r}",
                          fix="set it to the number of threads, e.g. PIECEWORKS_NUM_THREADS=4, or unset it")
    return int(value)


@functools.lru_cache(maxsize=None)
def cpu_count() -> int:
    """The CPU count, asked once: each ``os.cpu_count()`` took 6 us, a third of a small batch's time."""
    return os.cpu_count() or 1


def run_job(job, threads: int, *run_args):
    """``job.run(*run_args)`` with up to ``threads - 1`` pool threads running ``job.work`` beside it.

    ``job`` is a kernel batch job (``bytebpe.BatchJob``, ``unigram.BatchJob``):
    threads take its chunks as they come free, and ``run`` (this thread)
    also makes the result lists in order between its own chunks. A job of
    one chunk wakes no thread.
    """
    helpers = min(threads, job.n_chunks) - 1
    futures = [_get_pool(helpers).submit(job.work) for _ in range(helpers)]
    try:
        return job.run(*run_args)
    finally:
        for future in futures:
            future.result()


def run_in_ranges(encode_range: Callable[[int, int], list], items: list, plan, whole_range: bool = False) -> list:
    """``encode_range(0, len(items))``, computed as several ranges on threads when that pays.

    ``encode_range(start, stop)`` returns the results of ``items[start:stop]``.
    ``whole_range``: a range runs without the GIL as a whole (the plan's raw
    batch), so short texts count too.
    """
    n = len(items)
    threads = min(num_threads(), n)
    # (A plan whose kernel is slower per char pays threads on shorter items: raw_min_average_chars.)
    least_average = getattr(plan, "raw_min_average_chars", RAW_MIN_AVERAGE_CHARS)
    if threads <= 1 or whole_range and _short_strs(items, least_average):
        return encode_range(0, n)
    weights = _gil_free_work(items, plan, whole_range)
    if not weights or sum(weights) < THREAD_MIN_CHARS or whole_range and sum(weights) < least_average * n:
        return encode_range(0, n)
    bounds = _balanced_bounds(weights, threads)
    pool = _get_pool(threads)
    futures = [pool.submit(encode_range, start, stop) for start, stop in zip(bounds, bounds[1:])]
    out: list = []
    for future in futures:      # in order: the first error is the serial loop's first error
        out += future.result()
    return out


def threads_pay(items: list, plan) -> bool:
    """Whether :func:`run_in_ranges` would have threads encode ``items`` (strs, or pairs of strs: two
    texts' chars) as a raw batch: more than one thread, and on average at least the plan's
    ``raw_min_average_chars`` an item.

    >>> threads_pay([("ab", "cd")] * 3, None)
    False
    """
    if num_threads() <= 1:
        return False
    chars = sum(map(_chars_of, items))
    return chars >= getattr(plan, "raw_min_average_chars", RAW_MIN_AVERAGE_CHARS) * len(items)


def _chars_of(item) -> int:
    """The chars of a str, or of a pair of strs (a tuple or list of two); 0 for anything else."""
    if type(item) is str:
        return len(item)
    return len(item[0]) + len(item[1]) if text_pair(item) else 0


def _short_strs(items: list, least_average: int = RAW_MIN_AVERAGE_CHARS) -> bool:
    """True if ``items`` are all str, fewer than ``least_average`` chars on average (C-level loops:
    for 40k lines the per-item weights cost 15 ms, this 1 ms).

    >>> _short_strs(["ab", "cd"]), _short_strs(["ab", ("cd", "ef")]), _short_strs(["x" * 1000])
    (True, False, False)
    """
    return only_str(items) and sum(map(len, items)) < least_average * len(items)


def _gil_free_work(items: list, plan, whole_range: bool = False) -> list[int] | None:
    """Per item, the chars the plan encodes without the GIL; None when the plan never drops it."""
    if plan is None or not getattr(plan, "releases_gil", False):
        return None
    least = 0 if whole_range else getattr(plan, "nogil_min_chars", 0)
    if only_str(items):     # (the common case, in C-level loops: 7 ms of Python for 19k lines)
        lengths = list(map(len, items))
        return lengths if least <= 0 else [n if n >= least else 0 for n in lengths]
    weights = []
    for item in items:
        texts = item if isinstance(item, (tuple, list)) else (item,)
        weights.append(sum(len(t) for t in texts if isinstance(t, str) and len(t) >= least))
    return weights


def _balanced_bounds(weights: list[int], parts: int) -> list[int]:
    """Cut points splitting ``weights`` into ``parts`` contiguous ranges of about equal sum.

    Every item also counts one unit, so a run of short items still spreads out.

    >>> _balanced_bounds([5, 5, 5, 5], 2)
    [0, 2, 4]
    """
    n = len(weights)
    sums = list(accumulate(weights))
    total = (sums[-1] if n else 0) + n
    bounds = [0]
    # Each cut after the first item i (past the last cut) where the sum so far, items counted,
    # reaches its share: found by bisection, not a Python step per item (1.5 ms for 19k lines).
    while len(bounds) < parts and bounds[-1] < n:
        share = total * len(bounds)
        i = bisect_left(range(n), share, bounds[-1], n, key=lambda j: (sums[j] + j + 1) * parts)
        if i == n:
            break
        bounds.append(i + 1)
    if bounds[-1] != n:
        bounds.append(n)
    return bounds


def _get_pool(threads: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < threads:
            # A smaller old pool is left alone (another batch may be using it); it idles.
            # (Imported here: concurrent.futures, with the logging it imports, is 9 ms of `import pieceworks`.)
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pieceworks-encode")
            _pool_size = threads
        return _pool


def _forget_pool_after_fork() -> None:
    # The child has none of the parent's threads: a new pool is made on demand.
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size = None, 0
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)
