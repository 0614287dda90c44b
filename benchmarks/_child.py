"""Run one benchmark job in a child process; report its wall time and peak memory.

Two memory numbers, both honest about worker processes:

* ``peak_rss_mb``: the child's own peak (``ru_maxrss`` from ``wait4``, which
  also covers its waited-for workers, as a max, not a sum);
* ``tree_rss_mb``: the peak of the *sum* of the RSS of the child and all its
  descendants, sampled every 20 ms with psutil (absent without psutil).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def run_child(args: list[str], env: dict | None = None, timeout: float = 3600) -> dict:
    """Run ``python args...``; return {"seconds", "peak_rss_mb", "tree_rss_mb", "stdout"}."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})}, text=True)
    tree_peak = [0]
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_tree, args=(proc.pid, tree_peak, stop), daemon=True)
    sampler.start()
    out_lines: list[str] = []
    err_lines: list[str] = []
    readers = [threading.Thread(target=lambda s=s, o=o: o.extend(s), daemon=True)
               for s, o in ((proc.stdout, out_lines), (proc.stderr, err_lines))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    stop.set()
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed ({proc.returncode}):\n{''.join(err_lines)[-3000:]}")
    return {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "load_average": os.getloadavg()[0], "peak_rss_mb": usage.ru_maxrss / 1024,
            "tree_rss_mb": tree_peak[0] / (1 << 20) if tree_peak[0] else None,
            "stdout": "".join(out_lines)}


def _sample_tree(pid: int, peak: list, stop: threading.Event) -> None:
    try:
        import psutil
    except ImportError:
        return
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        try:
            procs = [root] + root.children(recursive=True)
            total = 0
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total)
        except psutil.Error:
            return
        time.sleep(0.02)


def emit(result: dict) -> None:
    """Print a child's result as the last line of stdout (JSON)."""
    print(json.dumps(result))


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])
