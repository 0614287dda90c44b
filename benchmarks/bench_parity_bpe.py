"""Parity-aware BPE training (ParityBpeTrainer): pieceworks against Hugging Face tokenizers.

Three languages (English, Korean, Japanese; ``--kb`` of each from
../shared/data/corpora), split by the Whitespace pre-tokenizer, ``--merges``
merges, in three modes: the training texts' lengths choose the language,
the last 200 lines of each as a dev set do, and ``ratio`` targets do. Both
libraries run in this process, one after the other, with their defaults
(Hugging Face's on its thread pool); the merges are checked identical
before a time is printed.

    python benchmarks/bench_parity_bpe.py [--kb 300] [--merges 2000] [--repeat 3]

Quote the ratios: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import OutputMismatch, hugging_face, read_corpus, time_call  # noqa: E402

LANGUAGES = ("english/botchan.txt", "multilingual/ko_nsmc_movie_reviews.txt",
             "multilingual/ja_wagahaiwa_nekodearu.txt")


def trained_merges(lib, texts, merges: int, mode: str):
    tok = lib.Tokenizer(lib.models.BPE())
    tok.pre_tokenizer = lib.pre_tokenizers.Whitespace()
    trainer = lib.trainers.ParityBpeTrainer(num_merges=merges, show_progress=False)
    extra = {}
    if mode == "dev set":
        extra["dev_iterators"] = [iter(lines[-200:]) for lines in texts]
    elif mode == "ratio":
        extra["ratio"] = [1.0, 1.5, 2.0]
    trainer.train_from_iterator(tok, [iter(lines) for lines in texts], **extra)
    return json.loads(tok.to_str())["model"]["merges"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=int, default=300, help="KB of each language (default 300)")
    parser.add_argument("--merges", type=int, default=2000, help="merges to learn (default 2000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (median; default 3)")
    args = parser.parse_args(argv)
    tokenizers = hugging_face()
    if tokenizers is None or not hasattr(tokenizers.trainers, "ParityBpeTrainer"):
        print("skipped: Hugging Face's ParityBpeTrainer (tokenizers >= 0.23) is not installed")
        return 0
    import pieceworks

    texts = [read_corpus(f"corpora/{name}", args.kb * 1000).splitlines() for name in LANGUAGES]
    print(f"# ParityBpeTrainer, {len(texts)} languages x {args.kb} KB, {args.merges} merges, "
          f"median of {args.repeat}; time ratio above 1: pieceworks slower")
    print(f"{'mode':<16}{'pieceworks s':>14}{'tokenizers s':>14}{'pieceworks / tokenizers':>26}")
    for mode in ("training texts", "dev set", "ratio"):
        ours, made = time_call(lambda _: trained_merges(pieceworks, texts, args.merges, mode), None, args.repeat)
        theirs, expected = time_call(lambda _: trained_merges(tokenizers, texts, args.merges, mode), None,
                                     args.repeat)
        if made != expected:
            raise OutputMismatch(f"{mode}: the merges differ from Hugging Face's")
        print(f"{mode:<16}{ours:>14.2f}{theirs:>14.2f}{ours / theirs:>25.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
