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

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Callable, Iterable

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


def file_bench_options(doc: str, size: float, repeat: int, argv=None) -> argparse.Namespace:
    """``--size`` (MB of each corpus), ``--repeat`` and ``--files``: the options of the benches that run
    every tokenizer.json in the shared data (``doc``: the bench's docstring, its first paragraph the
    description)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=size, help=f"MB of each corpus (default {size:g})")
    parser.add_argument("--repeat", type=int, default=repeat, help=f"timed runs per cell (median; default {repeat})")
    parser.add_argument("--files", default="", help="comma-separated parts of folder names (default: every file)")
    return parser.parse_args(argv)


def chosen(name: str, files: str) -> bool:
    """Whether ``name`` holds one of the comma-separated parts of ``files`` (``--files``; empty: all)."""
    parts = [part for part in files.split(",") if part]
    return not parts or any(part in name for part in parts)


def hugging_face(without: str = "nothing to compare with"):
    """The ``tokenizers`` module, or None after saying it is not installed and what goes ``without`` it."""
    try:
        import tokenizers
    except ImportError:
        print(f"tokenizers is not installed: {without}")
        return None
    return tokenizers


def tokenizer_files(files: str = "") -> list[Path]:
    """The shared data's tokenizer.json files whose folder ``chosen`` takes, sorted."""
    return [path for path in sorted((SHARED_DATA / "tokenizers").rglob("tokenizer.json"))
            if chosen(path.parent.name, files)]


def read_corpus(relative: str, limit_bytes: int | None = None) -> str:
    """Text of a corpus under ../shared/data (UTF-8), optionally cut to ``limit_bytes``."""
    path = SHARED_DATA / relative
    data = path.read_bytes()
    if limit_bytes is not None:
        data = data[:limit_bytes]
    return data.decode("utf-8", errors="ignore")


# -- training corpora ------------------------------------------------------------------------
# The prose+code corpus of the training benchmarks: half English prose (the
# NLTK Gutenberg books, then the Linux documentation), half C/C++ source
# (llama.cpp/ggml), each cut at a line end.
PROSE_SOURCES = ("corpora/english/nltk_data_2008/gutenberg", "corpora/english/linux-6.1_docs_rst.txt")
CODE_SOURCES = ("corpora/code/llama.cpp_ggml_c_cpp.txt",)


def text_files(relative: str) -> list[Path]:
    """A shared-data file, or a folder's files in name order (READMEs left out).

    >>> [p.name for p in text_files("corpora/english/nltk_data_2008/gutenberg")][:2]  # doctest: +SKIP
    ['austen-emma.txt', 'austen-persuasion.txt']
    """
    path = SHARED_DATA / relative
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file() and p.name != "README")


def copy_lines(out, files: Iterable[Path], limit: int) -> tuple[int, list[str], bool]:
    """Append ``files`` to the open binary ``out``, the last one cut at a line end to stay within ``limit`` bytes.

    Returns the bytes written, per file used ``"name (N bytes)"``, and
    whether every file went in whole. Files are streamed in blocks, so the
    benchmark's parent stays small (its peak RSS is the floor of its
    children's ``ru_maxrss``).
    """
    written, used = 0, []
    for path in files:
        copied, whole = _copy_file_lines(out, path, limit - written)
        written += copied
        if copied:
            used.append(f"{path.relative_to(SHARED_DATA)} ({copied:,} bytes)")
        if not whole:
            return written, used, False
    return written, used, True


def _copy_file_lines(out, path: Path, room: int, block: int = 1 << 20) -> tuple[int, bool]:
    """Copy ``path`` (ending it with a newline) into ``out``, cut at the last line end within ``room`` bytes.

    Returns the bytes copied and whether that was the whole file.
    """
    copied = 0
    pending = b""
    with open(path, "rb") as fh:
        while data := fh.read(block):
            pending += data
            cut = pending.rfind(b"\n") + 1
            if copied + cut > room:
                cut = pending.rfind(b"\n", 0, room - copied) + 1
                out.write(pending[:cut])
                return copied + cut, False
            out.write(pending[:cut])
            copied += cut
            pending = pending[cut:]
    if pending:
        if copied + len(pending) + 1 > room:
            return copied, False
        out.write(pending + b"\n")
        copied += len(pending) + 1
    return copied, True


def build_prose_code_corpus(path: Path, megabytes: float = 20) -> tuple[int, list[str]]:
    """Write ``megabytes`` MB of English prose then as much C/C++ code; return (bytes, sources used).

    Prose: the Gutenberg books in name order, then the Linux docs; code:
    the start of llama.cpp/ggml. Each half is cut at a line end.
    """
    half = int(megabytes * 1_000_000) // 2
    with open(path, "wb") as out:
        prose_bytes, prose, _ = copy_lines(out, [f for rel in PROSE_SOURCES for f in text_files(rel)], half)
        code_bytes, code, _ = copy_lines(out, [f for rel in CODE_SOURCES for f in text_files(rel)], half)
    return prose_bytes + code_bytes, prose + code


def build_repeated_corpus(path: Path, megabytes: float) -> int:
    """Every UTF-8 text corpus in the shared data concatenated, repeated up to ``megabytes`` MB.

    The last copy is cut at a line end, so the file is at most ``megabytes`` MB.
    """
    files = sorted(p for p in (SHARED_DATA / "corpora").rglob("*")
                   if p.is_file() and p.suffix in (".txt", ".xml", ".jsonl", ".rst") and "index" not in p.name)
    usable = [p for p in files if _is_utf8(p)]
    target = int(megabytes * 1_000_000)
    written = 0
    with open(path, "wb") as out:
        whole = True
        while whole and usable:
            added, _, whole = copy_lines(out, usable, target - written)
            written += added
            if added == 0:
                break
    return written


def _is_utf8(path: Path, block: int = 1 << 16) -> bool:
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as fh:
            while data := fh.read(block):
                decoder.decode(data)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


# -- wall time and memory tables -------------------------------------------------------------
def print_resource_table(title: str, rows: dict[str, dict], baseline: str = "pieceworks") -> None:
    """Wall time, peak RSS and their ratios to ``baseline`` (lower = better), one row per contender.

    ``rows`` are :func:`_child.run_contenders` results: ``seconds``,
    ``hwm_mb`` (the child's own peak RSS; ``peak_rss_mb`` when absent),
    ``tree_rss_mb`` and ``tree_pss_mb`` (the summed RSS and PSS of the child and its workers, or None),
    ``load_before``, ``load_average`` (after); or ``skipped`` / ``error``.

    >>> print_resource_table("t", {"pieceworks": {"seconds": 2.0, "hwm_mb": 100.0, "tree_rss_mb": None,
    ...                                           "load_before": 1.0, "load_average": 2.0},
    ...                            "other": {"skipped": "not installed"}})  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    <BLANKLINE>
    ## t
    contender wall s peak RSS MB tree RSS MB tree PSS MB time vs pw RSS vs pw tree vs pw PSS vs pw load
    pieceworks 2.0 100 - - 1.00x 1.00x - - 1.0-2.0
    other skipped: not installed
    peak RSS: the child's own high-water mark (VmHWM)
    tree RSS / PSS: ...
    """
    print(f"\n## {title}")
    print(f"{'contender':<21}{'wall s':>8}{'peak RSS MB':>13}{'tree RSS MB':>13}{'tree PSS MB':>13}"
          f"{'time vs pw':>12}{'RSS vs pw':>11}{'tree vs pw':>12}{'PSS vs pw':>11}{'load':>12}")
    base = rows.get(baseline, {})
    for name, r in rows.items():
        if "seconds" not in r:
            print(f"{name:<21}  " + (f"skipped: {r['skipped']}" if "skipped" in r else f"FAILED: {r['error']}"))
            continue
        has_base = "seconds" in base
        t_ratio = f"{r['seconds'] / base['seconds']:.2f}x" if has_base else "-"
        m_ratio = f"{own_peak_mb(r) / own_peak_mb(base):.2f}x" if has_base else "-"
        load = f"{r['load_before']:.1f}-{r['load_average']:.1f}"
        print(f"{name:<21}{r['seconds']:>8.1f}{own_peak_mb(r):>13.0f}{_mb(r, 'tree_rss_mb'):>13}"
              f"{_mb(r, 'tree_pss_mb'):>13}{t_ratio:>12}{m_ratio:>11}{_ratio(r, base, 'tree_rss_mb'):>12}"
              f"{_ratio(r, base, 'tree_pss_mb'):>11}{load:>12}")
    floors = [r["parent_peak_rss_mb"] for r in rows.values() if r.get("parent_peak_rss_mb")]
    print("peak RSS: the child's own high-water mark (VmHWM)")
    print("tree RSS / PSS: the peak of the summed RSS / proportional set size of the child and its worker "
          "processes (RSS counts shared pages once per process)")
    if floors:
        print(f"this parent's peak RSS (the floor of every child's ru_maxrss, not used here): {max(floors):.0f} MB")


def _mb(row: dict, key: str) -> str:
    return f"{row[key]:.0f}" if row.get(key) else "-"


def _ratio(row: dict, base: dict, key: str) -> str:
    return f"{row[key] / base[key]:.2f}x" if row.get(key) and base.get(key) else "-"


def own_peak_mb(row: dict) -> float:
    """A contender's own peak RSS: its VmHWM when known, else ``ru_maxrss`` (which has the parent's floor)."""
    return row.get("hwm_mb") or row["peak_rss_mb"]


def print_targets(rows: dict[str, dict], against: str, wall: float, rss: float, baseline: str = "pieceworks") -> None:
    """One line: ``baseline``'s wall time and peak RSS as multiples of ``against``'s, each against its limit.

    Memory is judged on the process's own peak and on its process tree's
    summed RSS and PSS (which count worker processes).

    >>> print_targets({"pieceworks": {"seconds": 1.0, "hwm_mb": 50.0, "tree_rss_mb": 90.0},
    ...                "hf": {"seconds": 4.0, "hwm_mb": 100.0, "tree_rss_mb": 100.0}}, "hf", wall=0.5, rss=0.5)
    target vs hf: wall <= 0.5x: 0.25x (met); peak RSS <= 0.5x: own 0.50x (met), process tree RSS 0.90x (NOT met)
    """
    ours, theirs = rows.get(baseline, {}), rows.get(against, {})
    if "seconds" not in ours or "seconds" not in theirs:
        print(f"target vs {against}: not measured (a contender did not run)")
        return
    parts = [f"wall <= {wall}x: {_judged(ours['seconds'] / theirs['seconds'], wall)}",
             f"peak RSS <= {rss}x: own {_judged(own_peak_mb(ours) / own_peak_mb(theirs), rss)}"]
    for key, label in (("tree_rss_mb", "process tree RSS"), ("tree_pss_mb", "process tree PSS")):
        if ours.get(key) and theirs.get(key):
            parts[-1] += f", {label} {_judged(ours[key] / theirs[key], rss)}"
    print(f"target vs {against}: " + "; ".join(parts))


def _judged(ratio: float, limit: float) -> str:
    return f"{ratio:.2f}x ({'met' if ratio <= limit else 'NOT met'})"
