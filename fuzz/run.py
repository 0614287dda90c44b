"""Run every fuzz harness (``fuzz/fuzz_*.py``) for a set time, a few at once, and report.

Each harness runs under atheris (libFuzzer) in its own process with its own
corpus folder (seeded by the harness) and its own folder for crash
artifacts. The report gives, per target: seconds, executions, corpus size,
and the outcome (ok, skipped with the reason, or FOUND with the artifact to
replay). The exit status is 1 if any target found something.

Usage::

    python fuzz/run.py                        # every target, 30 s each, 2 at a time
    python fuzz/run.py --seconds 300 --jobs 2 # longer
    python fuzz/run.py --only tokenizer_json,vocab_txt --seconds 60
    python fuzz/run.py --list
    python fuzz/run.py --quiet                # only the final table (for CI logs)

Replay one finding (with or without atheris)::

    python fuzz/fuzz_tokenizer_json.py path/to/crash-...     # under atheris: runs that input
    python fuzz/run.py --replay tokenizer_json path/to/crash-...

Needs ``pip install atheris`` (binary wheels for Linux x86-64, CPython 3.11).
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent


@dataclass
class Result:
    target: str
    status: str          # "ok", "skipped", "FOUND", "error"
    seconds: float
    executions: int | None
    corpus: int
    detail: str = ""


def targets() -> list[str]:
    return sorted(p.stem[len("fuzz_"):] for p in FUZZ_DIR.glob("fuzz_*.py"))


def fuzz_one(target: str, seconds: int, workdir: Path, rss_limit_mb: int, input_timeout: int) -> Result:
    """Run one harness for ``seconds``; classify the outcome from libFuzzer's output."""
    corpus = workdir / target / "corpus"
    artifacts = workdir / target / "artifacts"
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(FUZZ_DIR / f"fuzz_{target}.py"), f"-max_total_time={seconds}",
           "-print_final_stats=1", f"-artifact_prefix={artifacts}/", f"-timeout={input_timeout}",
           f"-rss_limit_mb={rss_limit_mb}", str(corpus)]
    started = time.monotonic()
    # The harness's own files go inside the target's folder too (see _common.scratch_dir).
    env = dict(os.environ, PIECEWORKS_FUZZ_SCRATCH=str(workdir / target))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                          timeout=seconds * 3 + 300, cwd=FUZZ_DIR, env=env)
    elapsed = time.monotonic() - started
    out = proc.stdout
    (workdir / target / "log.txt").write_text(out)
    n_corpus = sum(1 for _ in corpus.iterdir())
    executions = _executions(out)
    skipped = re.search(r"^fuzz_\w+: skipped: (.*)$", out, re.M)
    if proc.returncode == 0 and skipped:
        return Result(target, "skipped", elapsed, None, n_corpus, skipped.group(1))
    found = sorted(p.name for p in artifacts.iterdir())
    if proc.returncode != 0 or found:
        reason = _first_error(out)
        where = ""
        if found:
            data = (artifacts / found[0]).read_bytes()
            where = f"\n    replay: python fuzz/run.py --replay {target} {artifacts / found[0]}"
            if len(data) <= 2048:   # small enough to carry in a CI log
                where += (f"\n    the input ({len(data)} bytes), to recreate it: echo "
                          f"{base64.b64encode(data).decode()} | base64 -d > crash")
        return Result(target, "FOUND", elapsed, executions, n_corpus, reason + where)
    return Result(target, "ok", elapsed, executions, n_corpus)


def _executions(out: str) -> int | None:
    match = re.search(r"stat::number_of_executed_units:\s*(\d+)", out) or re.search(r"Done (\d+) runs", out)
    return int(match.group(1)) if match else None


def _first_error(out: str) -> str:
    for pattern in (r"=== Uncaught Python exception: ===\n(.*)", r"(ERROR: libFuzzer: [^\n]*)",
                    r"(==\d+==ERROR: [^\n]*)", r"(Traceback[^\n]*)"):
        match = re.search(pattern, out)
        if match:
            return match.group(1).strip()[:300]
    return out.strip().splitlines()[-1][:300] if out.strip() else "no output"


def replay(target: str, paths: list[str]) -> int:
    """Run saved inputs through a harness's ``test_one_input`` without libFuzzer."""
    sys.path.insert(0, str(FUZZ_DIR))
    module = importlib.import_module(f"fuzz_{target}")
    for path in paths:
        data = Path(path).read_bytes()
        print(f"replaying {path} ({len(data)} bytes) through fuzz_{target}")
        module.test_one_input(data)
    print("no failure")
    return 0


def report(results: list[Result], seconds: int, jobs: int, wall: float) -> None:
    print(f"\n{'target':<26}{'status':>9}{'seconds':>9}{'executions':>12}{'exec/s':>9}{'corpus':>8}")
    for r in sorted(results, key=lambda r: r.target):
        execs = "-" if r.executions is None else f"{r.executions:,}"
        rate = "-" if not r.executions else f"{r.executions / max(r.seconds, 1e-9):.0f}"
        print(f"{r.target:<26}{r.status:>9}{r.seconds:>9.0f}{execs:>12}{rate:>9}{r.corpus:>8}")
        if r.detail:
            print(f"    {r.detail}")
    total = sum(r.executions or 0 for r in results)
    print(f"\n{len(results)} targets, {seconds} s each, {jobs} at a time: {wall:.0f} s wall, {total:,} executions")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", 30)),
                        help="fuzzing time per target (default 30, or $FUZZ_SECONDS)")
    parser.add_argument("--jobs", type=int, default=2, help="targets run at once (default 2)")
    parser.add_argument("--only", help="comma-separated targets (default: all; see --list)")
    parser.add_argument("--workdir", help="where corpora, artifacts and logs go (default: a temp folder, kept "
                                          "when something is found)")
    parser.add_argument("--rss-limit-mb", type=int, default=4096)
    parser.add_argument("--input-timeout", type=int, default=20,
                        help="seconds one input may take before it counts as a finding (slow input)")
    parser.add_argument("--quiet", action="store_true",
                        help="print only the final table, not a line as each target finishes")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--replay", nargs="+", metavar=("TARGET", "FILE"),
                        help="run saved inputs through TARGET's harness (no atheris needed)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(targets()))
        return 0
    if args.replay:
        return replay(args.replay[0], args.replay[1:])
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("fuzz/run.py needs atheris: pip install atheris", file=sys.stderr)
        return 2
    chosen = targets() if not args.only else args.only.split(",")
    unknown = sorted(set(chosen) - set(targets()))
    if unknown:
        print(f"unknown targets: {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="pieceworks-fuzz-"))
    print(f"fuzzing {len(chosen)} targets, {args.seconds} s each, {args.jobs} at a time; work folder {workdir}",
          flush=True)
    started = time.monotonic()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(fuzz_one, t, args.seconds, workdir, args.rss_limit_mb, args.input_timeout): t
                   for t in chosen}
        for future in concurrent.futures.as_completed(futures):
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - a harness that cannot even start is reported
                result = Result(futures[future], "error", 0.0, None, 0, f"{type(exc).__name__}: {exc}")
            results.append(result)
            if not args.quiet:
                print(f"  {result.target}: {result.status}", flush=True)
    report(results, args.seconds, args.jobs, time.monotonic() - started)
    bad = [r for r in results if r.status in ("FOUND", "error")]
    if not bad and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    elif bad:
        print(f"findings and logs kept in {workdir}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
