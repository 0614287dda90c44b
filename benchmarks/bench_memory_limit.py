"""memory_limit at scale: >= 300 MB of web-like text with millions of distinct words.

Real web text is full of pieces seen once: hashes, ids, numbers, URLs. This
benchmark writes such a corpus (every line mixes prose with a random hex
hash, a user id, a big number and a URL slug, so the distinct pieces run to
millions), then trains a byte-level BPE (vocabulary 32k) twice, each run in
its own child process:

* with ``BpeTrainer(memory_limit="300MB")``;
* with no limit;

then counts once more with the limit and stops there (no training), and
reports each run's wall time and peak RSS (the child's own, and the sum
over its process tree, counting workers), and whether the two tokenizers are
identical byte for byte.

The target: with ``memory_limit="300MB"`` the whole process tree stays
under 400 MB, training included, and trains the unlimited run's tokenizer.
The counts stay on disk after spilling and stream into the BPE kernel's
flat arrays, so training adds ~50 bytes per distinct word, not a table.

    python benchmarks/bench_memory_limit.py [--mb 300] [--limit 300MB] [--workers 2]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import emit, last_json, run_child  # noqa: E402
from harness import SHARED_DATA  # noqa: E402

VOCAB = 32000
TARGET_MB = 400


def build_corpus(path: Path, megabytes: int, seed: int = 1) -> int:
    """Prose lines from the shared corpora, each salted with unique-looking tokens."""
    rng = random.Random(seed)
    prose_source = SHARED_DATA / "corpora/english/linux-6.1_docs_rst.txt"
    prose = [line for line in prose_source.read_text(encoding="utf-8").splitlines() if len(line) > 20][:200_000]
    target = megabytes * 1_000_000
    written = 0
    i = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < target:
            parts = []
            for _ in range(64):
                i += 1
                digest = hashlib.blake2b(i.to_bytes(8, "little"), digest_size=8).hexdigest()
                parts.append(f"{rng.choice(prose)} commit {digest} by user{rng.randrange(10**7)} "
                             f"id={rng.randrange(10**12)} see /r/{digest[:6]}x{i % 9973}\n")
            block = "".join(parts)
            fh.write(block)
            written += len(block.encode("utf-8"))
    return written


def child_main(corpus: str, out: str, limit: str, workers: str) -> None:
    import os

    os.environ["PIECEWORKS_WORKERS"] = workers
    import pieceworks as pw
    from pieceworks.trainers.counts import count_files

    started = time.perf_counter()
    tok = pw.Tokenizer(pw.models.BPE())
    tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = pw.trainers.BpeTrainer(vocab_size=VOCAB, show_progress=False,
                                     initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet(),
                                     memory_limit=None if limit == "none" else limit)
    counts = count_files([corpus], tok.normalizer, tok.pre_tokenizer, format="text", errors="strict",
                         memory_limit=trainer.memory_limit, progress=False)
    counted = time.perf_counter() - started
    distinct, spills = len(counts), counts.spills
    if out == "-":   # counting only
        emit({"inner_seconds": counted, "count_seconds": counted, "distinct": distinct, "spills": spills})
        return
    tok.train_from_counts(counts, trainer)
    del counts
    tok.save(out)
    emit({"inner_seconds": time.perf_counter() - started, "count_seconds": counted, "distinct": distinct,
          "spills": spills})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--limit", default="300MB")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="pw-mem-") as tmp:
        corpus = Path(tmp) / "web.txt"
        started = time.perf_counter()
        size = build_corpus(corpus, args.mb)
        print(f"corpus: {size / 1e6:.0f} MB of web-like text (written in {time.perf_counter() - started:.0f} s)")
        rows = {}
        for limit in (args.limit, "none", "count only"):
            out = Path(tmp) / f"tok-{limit}.json" if limit != "count only" else "-"
            given = args.limit if limit == "count only" else limit
            result = run_child([__file__, "--child", str(corpus), str(out), given, args.workers])
            result.update(last_json(result.pop("stdout")))
            rows[limit] = result
            print(f"  memory_limit={limit}: {result['seconds']:.0f} s (counting {result['count_seconds']:.0f} s), "
                  f"{result['distinct']:,} distinct pieces, {result['spills']} spills, "
                  f"peak RSS {result['peak_rss_mb']:.0f} MB, process tree {result['tree_rss_mb'] or 0:.0f} MB",
                  flush=True)
        same = (Path(tmp) / f"tok-{args.limit}.json").read_bytes() == (Path(tmp) / "tok-none.json").read_bytes()
        print(f"\n## memory_limit={args.limit} on {size / 1e6:.0f} MB, byte-level BPE {VOCAB}, "
              f"{args.workers} counting processes")
        print(f"{'run':<22}{'wall s':>8}{'distinct':>12}{'spills':>8}{'peak RSS MB':>13}{'tree RSS MB':>13}")
        for limit, r in rows.items():
            label = f"count only, {args.limit}" if limit == "count only" else f"memory_limit={limit}"
            print(f"{label:<22}{r['seconds']:>8.0f}{r['distinct']:>12,}{r['spills']:>8}"
                  f"{r['peak_rss_mb']:>13.0f}{(r['tree_rss_mb'] or 0):>13.0f}")
        print(f"tokenizers identical byte for byte: {same}")
        loads = ", ".join(f"{r['load_average']:.1f}" for r in rows.values())
        print(f"1-min load average after each run: {loads} (2 cores, shared machine)")
        tree = rows[args.limit]["tree_rss_mb"] or rows[args.limit]["peak_rss_mb"]
        verdict = "met" if tree <= TARGET_MB and same else "NOT met"
        print(f"target: memory_limit={args.limit} process tree <= {TARGET_MB} MB and the same tokenizer: "
              f"{tree:.0f} MB, {verdict}")


if __name__ == "__main__":
    main()
