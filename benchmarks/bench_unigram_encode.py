"""Unigram encoding, pieceworks vs sentencepiece: three models, one and two threads.

* a 16k Unigram model trained here (by sentencepiece) on English prose, encoding prose;
* the 30k ``spiece.model`` from the Hugging Face fixtures, encoding prose;
* the Japanese test model, encoding Japanese text.

Outputs are checked equal before any speed is printed. One thread: each
library encodes the texts one call per text (``sp.encode(text)``), the way
most code calls it. Two threads: each library encodes the whole list in one
call with ``num_threads=2``.

The machine may be shared and loaded, so each configuration is measured in
several rounds; in a round the two libraries run alternately, five times
each, and the fastest run of each counts. The table gives the throughputs
of the last round and the median of the per-round speed ratios.

    python benchmarks/bench_unigram_encode.py [--rounds 5] [--only spiece]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from harness import SHARED_DATA, compare, print_table

SPM_DIR = SHARED_DATA / "tokenizers" / "sentencepiece"


def lines_of(path: Path, limit: int) -> list[str]:
    """Non-empty stripped lines of ``path``, about ``limit`` bytes of them."""
    out, size = [], 0
    for line in open(path, encoding="utf-8-sig", errors="replace"):
        line = line.strip()
        if line:
            out.append(line)
            size += len(line.encode())
        if size > limit:
            break
    return out


def contenders(model: Path, threads: int):
    import sentencepiece as spm

    import pieceworks.sentencepiece as pw_spm

    sp = spm.SentencePieceProcessor(model_file=str(model))
    pw = pw_spm.SentencePieceProcessor(model_file=str(model))
    if threads == 1:
        return {"pieceworks": lambda xs: [pw.encode(x) for x in xs],
                "sentencepiece": lambda xs: [sp.encode(x) for x in xs]}
    return {"pieceworks": lambda xs: pw.encode(xs, num_threads=threads),
            "sentencepiece": lambda xs: sp.encode(xs, num_threads=threads)}


def interleaved_times(fns: dict, arg, repeat: int) -> dict[str, float]:
    """The fastest of ``repeat`` runs of each contender, runs alternating between contenders.

    On a shared machine the load changes from second to second: alternating
    exposes both contenders to the same load, and the fastest run is the one
    least disturbed.
    """
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns)
    for i in range(repeat):
        for name in (order if i % 2 == 0 else order[::-1]):
            start = time.perf_counter()
            fns[name](arg)
            times[name].append(time.perf_counter() - start)
    return {name: min(ts) for name, ts in times.items()}


def train_english_16k(folder: str) -> Path:
    import sentencepiece as spm

    prefix = Path(folder) / "en16k"
    spm.SentencePieceTrainer.train(
        input=str(SHARED_DATA / "corpora" / "english" / "linux-6.1_docs_rst.txt"), model_prefix=str(prefix),
        vocab_size=16000, input_sentence_size=200000, minloglevel=2, num_threads=2)
    return Path(f"{prefix}.model")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per configuration (median ratio)")
    parser.add_argument("--only", default="", help="run only the cases whose title contains this")
    args = parser.parse_args()
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg())
    prose = lines_of(SHARED_DATA / "corpora" / "english" / "nltk_data_2008" / "gutenberg" / "austen-emma.txt",
                     1_000_000)
    japanese = lines_of(SHARED_DATA / "corpora" / "multilingual" / "ja_wagahaiwa_nekodearu.txt", 1_000_000)
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("16k English Unigram, prose", lambda: train_english_16k(tmp), prose),
                 ("spiece.model 30k, prose", lambda: SPM_DIR / "hf_transformers_fixtures" / "spiece.model", prose),
                 ("Japanese model, Japanese", lambda: SPM_DIR / "sentencepiece_test_ja_model.model", japanese)]
        for title, model_of, texts in cases:
            if args.only and args.only.lower() not in title.lower():
                continue
            model = model_of()
            size = sum(len(x.encode()) for x in texts) / 1e6
            for threads in (1, 2):
                fns = contenders(model, threads)
                compare(fns, texts, size=size, repeat=1)  # raises OutputMismatch unless the outputs are equal
                ratios = []
                for _ in range(args.rounds):
                    results = interleaved_times(fns, texts, repeat=5)
                    ratios.append(results["sentencepiece"] / results["pieceworks"])
                name = f"{title} ({threads} thread{'s' if threads > 1 else ''})"
                print_table(name, results, size)
                print(f"median speed ratio over {args.rounds} rounds: {statistics.median(ratios):.2f}x "
                      f"({', '.join(f'{r:.2f}' for r in ratios)})")
                summary.append((name, statistics.median(ratios)))
    print("\n## pieceworks / sentencepiece throughput (median of rounds)")
    for name, ratio in summary:
        print(f"{name:<45}{ratio:>8.2f}x")
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - start:.0f} s")
