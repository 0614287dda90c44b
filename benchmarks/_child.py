"""Run one benchmark job in a child process; report its wall time and peak memory.

Two memory numbers, both honest about worker processes:

* ``peak_rss_mb``: the child's own peak (``ru_maxrss`` from ``wait4``, which
  also covers its waited-for workers, as a max, not a sum);
* ``tree_rss_mb``: the peak of the *sum* of the RSS of the child and all its
  descendants, sampled every 20 ms with psutil (absent without psutil).

Caveat on ``ru_maxrss``: Linux carries the spawning process's peak RSS into
the child (``exec`` folds the old address space's high-water mark into the
process's maximum, and ``subprocess`` starts children with ``vfork``, whose
old address space is the parent's). So ``peak_rss_mb`` is never below the
parent's own peak at spawn time, reported as ``parent_peak_rss_mb``: keep
the parent small (stream corpora to disk, import heavy libraries after the
children ran). Two more numbers avoid it:

* ``hwm_mb``: the child's own high-water mark (``VmHWM`` of its address
  space after ``exec``), sampled with the tree; a child that ends with
  :func:`run_job` reports it exactly at its end, and that value wins;
* ``parent_peak_rss_mb``: the floor described above.

``tree_rss_mb`` counts a page shared by several processes (a forked
worker's inherited pages, the shared libraries) once per process, so it is
an upper bound; ``tree_pss_mb`` is the peak of the summed proportional set
size (each shared page split between its sharers), sampled every 100 ms
from ``/proc/PID/smaps_rollup`` (absent where that file is).

:func:`run_contenders` runs several such jobs one after another (never in
parallel: the machine is shared) and records a failure, a timeout or a
missing library as that contender's row instead of stopping the run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from typing import Callable, Iterable


def run_child(args: list[str], env: dict | None = None, timeout: float = 3600) -> dict:
    """Run ``python args...``; return {"seconds", "peak_rss_mb", "tree_rss_mb", "stdout"}.

    The child is killed after ``timeout`` seconds (TimeoutError); a non-zero
    exit raises RuntimeError with the end of its stderr.
    """
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})}, text=True)
    tree_peak = [0]
    own_hwm = [0]
    pss_peak = [0]
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_tree, args=(proc.pid, tree_peak, stop, own_hwm, pss_peak),
                               daemon=True)
    sampler.start()
    out_lines: list[str] = []
    err_lines: list[str] = []
    readers = [threading.Thread(target=lambda s=s, o=o: o.extend(s), daemon=True)
               for s, o in ((proc.stdout, out_lines), (proc.stderr, err_lines))]
    for r in readers:
        r.start()
    timed_out = threading.Event()
    timer = threading.Timer(timeout, lambda: (timed_out.set(), proc.kill()))
    timer.daemon = True
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    timer.cancel()
    stop.set()
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if timed_out.is_set():
        raise TimeoutError(f"child {args} was stopped after {timeout:.0f} s (its time limit)")
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed ({proc.returncode}):\n{''.join(err_lines)[-3000:]}")
    return {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "load_average": os.getloadavg()[0], "peak_rss_mb": usage.ru_maxrss / 1024,
            "tree_rss_mb": tree_peak[0] / (1 << 20) if tree_peak[0] else None,
            "hwm_mb": own_hwm[0] / 1024 if own_hwm[0] else None, "parent_peak_rss_mb": parent_peak_mb(),
            "tree_pss_mb": pss_peak[0] / 1024 if pss_peak[0] else None,
            "stdout": "".join(out_lines)}


def parent_peak_mb() -> float:
    """This process's peak RSS in MB: the floor of any child's ``ru_maxrss`` (see the module docstring)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def vm_hwm_kb(pid: int | str = "self") -> int:
    """Peak RSS (kB) of a process's current address space (``VmHWM``), 0 if unknown.

    >>> vm_hwm_kb() > 0
    True
    """
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kb(pid: int | str = "self") -> int:
    """Proportional set size (kB) of a process: its RSS with each shared page split between its sharers.

    0 where ``/proc/PID/smaps_rollup`` is missing or the process is gone.

    >>> pss_kb() > 0
    True
    """
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _sample_tree(pid: int, peak: list, stop: threading.Event, hwm: list | None = None,
                 pss: list | None = None) -> None:
    try:
        import psutil
    except ImportError:
        return
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    tick = 0
    while not stop.is_set():
        if hwm is not None:
            hwm[0] = max(hwm[0], vm_hwm_kb(pid))
        try:
            procs = [root] + root.children(recursive=True)
            total = 0
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total)
            if pss is not None and tick % 5 == 0:
                pss[0] = max(pss[0], sum(pss_kb(p.pid) for p in procs))
        except psutil.Error:
            return
        tick += 1
        time.sleep(0.02)


def emit(result: dict) -> None:
    """Print a child's result as the last line of stdout (JSON)."""
    print(json.dumps(result))


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def run_job(fn: Callable, *args) -> None:
    """In a child: run ``fn(*args)`` (it returns a dict) and emit it with ``inner_seconds``.

    >>> run_job(lambda n: {"n": n}, 3)  # doctest: +ELLIPSIS
    {"inner_seconds": ..., "n": 3, "hwm_mb": ...}
    """
    started = time.perf_counter()
    info = fn(*args) or {}
    emit({"inner_seconds": time.perf_counter() - started, **info, "hwm_mb": vm_hwm_kb() / 1024 or None})


def training_parser(doc: str, vocab: int, contenders: Iterable[str], mb: float = 20,
                    timeout: float = 1800, child: bool = True) -> argparse.ArgumentParser:
    """The arguments every training benchmark takes (corpus size, vocab, contenders to skip, time
    allowed), and with ``child`` the hidden ``--child NAME CORPUS OUT VOCAB`` its children are started with."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=mb, help=f"corpus size in MB (default {mb:g})")
    parser.add_argument("--vocab", type=int, default=vocab)
    parser.add_argument("--skip", action="append", default=[], choices=list(contenders))
    parser.add_argument("--timeout", type=float, default=timeout, help="seconds allowed per contender")
    if child:
        parser.add_argument("--child", nargs=4, metavar=("NAME", "CORPUS", "OUT", "VOCAB"), help=argparse.SUPPRESS)
    return parser


def run_child_job(args, trainers: dict) -> bool:
    """In a child (``args.child`` set): run ``trainers["train_" + NAME]`` on its arguments; True if it did."""
    if not args.child:
        return False
    name, *rest = args.child
    run_job(trainers[f"train_{name.replace('-', '_')}"], *rest)
    return True


def run_contenders(script: str, names: Iterable[str], child_args: Callable[[str], list[str]],
                   env: dict | None = None, unavailable: Callable[[str], str | None] = lambda name: None,
                   timeout: float = 3600, log=print) -> dict[str, dict]:
    """Run ``python script --child NAME *child_args(NAME)`` for each name, one after another.

    Each row is :func:`run_child`'s result merged with the child's JSON line
    and the 1-minute load average before and after; a contender that
    ``unavailable(name)`` explains away gets ``{"skipped": reason}``, one that
    fails or times out gets ``{"error": message}``.
    """
    rows: dict[str, dict] = {}
    for name in names:
        reason = unavailable(name)
        if reason:
            rows[name] = {"skipped": reason}
            log(f"  {name}: skipped ({reason})", flush=True)
            continue
        load_before = os.getloadavg()[0]
        try:
            result = run_child([script, "--child", name, *child_args(name)], env=env, timeout=timeout)
        except (RuntimeError, TimeoutError) as exc:
            rows[name] = {"error": str(exc).strip().splitlines()[-1][:300]}
            log(f"  {name}: FAILED: {exc}", flush=True)
            continue
        result.update(last_json(result.pop("stdout")))
        result["load_before"] = load_before
        rows[name] = result
        log(f"  {name}: {result['seconds']:.1f} s, peak RSS {result.get('hwm_mb') or result['peak_rss_mb']:.0f} MB"
            + (f", process tree {result['tree_rss_mb']:.0f} MB" if result["tree_rss_mb"] else "")
            + (f" (PSS {result['tree_pss_mb']:.0f} MB)" if result.get("tree_pss_mb") else "")
            + f", load {load_before:.2f} -> {result['load_average']:.2f}", flush=True)
    return rows
