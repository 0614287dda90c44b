"""Unigram training, pieceworks vs sentencepiece, side by side: wall time, peak memory, quality.

Each trainer runs in its own child process (same corpus, same options, the
same thread count) so that its peak resident memory (``ru_maxrss`` of that
process) is its own. The two models are then scored on held-out text: the
log-likelihood per byte under each model (Viterbi segmentation, the model's
own scores) and bytes per token.

    python benchmarks/bench_unigram_train.py                  # 20 MB, vocab 16k, 2 threads
    python benchmarks/bench_unigram_train.py --mb 2 --vocab 4000
    python benchmarks/bench_unigram_train.py --corpus multilingual/th_wisesight_social_media.txt --vocab 8000

The corpus is the start of the Linux documentation in ../shared/data (21 MB
of English technical prose), or ``--corpus`` (a path under
../shared/data/corpora); its last tenth (at most 1 MB) is held out.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import SHARED_DATA

CHILD = r"""
import json, resource, sys, time
which, corpus, prefix, vocab, threads = sys.argv[1:6]
start = time.perf_counter()
flags = (f"--input={corpus} --model_prefix={prefix} --vocab_size={vocab} --model_type=unigram "
         f"--num_threads={threads}")
if which == "pieceworks":
    import pieceworks.sentencepiece as spm
    spm.SentencePieceTrainer.train(flags, n_threads=int(threads))
else:
    import sentencepiece as spm
    spm.SentencePieceTrainer.train(flags + " --minloglevel=2")
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_child(which: str, corpus: Path, prefix: Path, vocab: int, threads: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, which, str(corpus), str(prefix), str(vocab), str(threads)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def quality(model_file: Path, lines: list[str]) -> tuple[float, float]:
    """(log-likelihood per byte, bytes per token) of ``lines`` under a .model (scored by sentencepiece)."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model_file))
    total_ll = 0.0
    tokens = 0
    size = 0
    for line in lines:
        ids = sp.encode(line)
        tokens += len(ids)
        size += len(line.encode("utf-8"))
        total_ll += sum(sp.get_score(i) if not sp.is_unknown(i) else min(0.0, -20.0) for i in ids)
    return total_ll / size, size / max(tokens, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--vocab", type=int, default=16000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--corpus", default="english/linux-6.1_docs_rst.txt",
                    help="a text file under ../shared/data/corpora")
    args = ap.parse_args()
    data = (SHARED_DATA / "corpora" / args.corpus).read_bytes()
    held = min(1_000_000, len(data) // 10)
    held_out = data[-held:].decode("utf-8", "replace").splitlines()[1:5001]    # (the first may be cut)
    train = data[:min(int(args.mb * 1_000_000), len(data) - held)]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_bytes(train)
        rows = {}
        for which in ("sentencepiece", "pieceworks"):
            rows[which] = run_child(which, corpus, Path(tmp) / which, args.vocab, args.threads)
            rows[which]["ll_per_byte"], rows[which]["bytes_per_token"] = quality(Path(tmp) / f"{which}.model",
                                                                                 held_out)
    print(f"Unigram training: {args.corpus}, {len(train) / 1e6:.1f} MB, vocab {args.vocab}, {args.threads} threads")
    print(f"{'':15} {'seconds':>9} {'peak MB':>9} {'LL/byte':>9} {'bytes/tok':>9}")
    for which, r in rows.items():
        print(f"{which:15} {r['seconds']:9.2f} {r['peak_mb']:9.0f} {r['ll_per_byte']:9.4f} "
              f"{r['bytes_per_token']:9.3f}")
    pw, sp = rows["pieceworks"], rows["sentencepiece"]
    print(f"time ratio pieceworks/sentencepiece: {pw['seconds'] / sp['seconds']:.2f} (target <= 0.5); "
          f"memory ratio: {pw['peak_mb'] / sp['peak_mb']:.2f} (target <= 1)")
    print(f"quality: LL/byte differs by {100 * abs(pw['ll_per_byte'] / sp['ll_per_byte'] - 1):.2f}%, "
          f"bytes/token by {100 * abs(pw['bytes_per_token'] / sp['bytes_per_token'] - 1):.2f}% (target <= 1%)")
    if math.isnan(pw["ll_per_byte"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
