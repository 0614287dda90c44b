"""Byte-level BPE, vocabulary 32k, trained on >= 100 MB: pieceworks against its peers, side by side.

Every contender runs in its own child process, on the same file, with two
cores (Hugging Face: RAYON_NUM_THREADS=2; YouTokenToMe: n_threads=2;
SentencePiece: num_threads=2; pieceworks: 2 counting processes). Wall time
is the whole train call (reading, counting, merges); memory is the peak
RSS of the child (and, for pieceworks, the summed RSS of its process tree).

    python benchmarks/bench_scale_train.py [--mb 100] [--skip sentencepiece]

The corpus is every text corpus in ../shared/data concatenated, repeated
until it reaches --mb megabytes. Quote ratios, not absolute numbers: the
machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import emit, last_json, run_child  # noqa: E402
from harness import SHARED_DATA  # noqa: E402

VOCAB = 32000
CONTENDERS = ("pieceworks", "tokenizers", "youtokentome", "sentencepiece")


def build_corpus(path: Path, megabytes: int) -> int:
    """Concatenate the shared text corpora (UTF-8 files only), repeated up to ``megabytes``."""
    files = sorted(p for p in (SHARED_DATA / "corpora").rglob("*")
                   if p.is_file() and p.suffix in (".txt", ".xml", ".jsonl", ".rst") and "index" not in p.name)
    blocks = []
    for p in files:
        data = p.read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        blocks.append(data if data.endswith(b"\n") else data + b"\n")
    target = megabytes * 1_000_000
    written = 0
    with open(path, "wb") as fh:
        while written < target:
            for block in blocks:
                fh.write(block)
                written += len(block)
                if written >= target:
                    break
    return written


# -- the children --------------------------------------------------------------------------
def train_pieceworks(corpus: str, out: str) -> dict:
    import pieceworks as pw

    tok = pw.Tokenizer(pw.models.BPE())
    tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = pw.trainers.BpeTrainer(vocab_size=VOCAB, show_progress=False,
                                     initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    tok.save(out)
    return {"vocab": tok.get_vocab_size()}


def train_tokenizers(corpus: str, out: str) -> dict:
    import tokenizers as hf

    tok = hf.Tokenizer(hf.models.BPE())
    tok.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = hf.trainers.BpeTrainer(vocab_size=VOCAB, show_progress=False,
                                     initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    tok.save(out)
    return {"vocab": tok.get_vocab_size()}


def train_youtokentome(corpus: str, out: str) -> dict:
    import youtokentome as yttm

    yttm.BPE.train(data=corpus, model=out, vocab_size=VOCAB, n_threads=2)
    return {}


def train_sentencepiece(corpus: str, out: str) -> dict:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(input=corpus, model_prefix=out, vocab_size=VOCAB, model_type="bpe",
                                   num_threads=2, byte_fallback=True, character_coverage=0.9995,
                                   max_sentence_length=1 << 16, minloglevel=2, train_extremely_large_corpus=False)
    return {}


def child_main(name: str, corpus: str, out: str) -> None:
    started = time.perf_counter()
    info = globals()[f"train_{name}"](corpus, out)
    emit({"inner_seconds": time.perf_counter() - started, **info})


def compare_merges(pw_path: Path, hf_path: Path) -> str:
    ours = json.loads(pw_path.read_text(encoding="utf-8"))["model"]
    theirs = json.loads(hf_path.read_text(encoding="utf-8"))["model"]
    same_vocab = ours["vocab"] == theirs["vocab"]
    same_merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in ours["merges"]] == \
                  [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in theirs["merges"]]
    return f"vocab identical: {same_vocab}, merges identical: {same_merges}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100, help="corpus size in MB (default 100)")
    parser.add_argument("--skip", action="append", default=[], choices=CONTENDERS)
    parser.add_argument("--child", nargs=3, metavar=("NAME", "CORPUS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="pw-bench-") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        size = build_corpus(corpus, args.mb)
        print(f"corpus: {size / 1e6:.1f} MB, byte-level BPE vocab {VOCAB}, 2 cores (machine shared)")
        rows = {}
        for name in CONTENDERS:
            if name in args.skip:
                continue
            out = str(Path(tmp) / (f"{name}.json" if name in ("pieceworks", "tokenizers") else f"{name}.model"))
            env = {"RAYON_NUM_THREADS": "2", "PIECEWORKS_WORKERS": "2"}
            result = run_child([__file__, "--child", name, str(corpus), out], env=env)
            result.update(last_json(result.pop("stdout")))
            rows[name] = result
            print(f"  {name}: {result['seconds']:.1f} s, peak RSS {result['peak_rss_mb']:.0f} MB"
                  + (f", process tree {result['tree_rss_mb']:.0f} MB" if result["tree_rss_mb"] else ""), flush=True)
        print(f"\n## Byte-level BPE {VOCAB}, {size / 1e6:.0f} MB, 2 cores")
        print(f"{'contender':<16}{'wall s':>9}{'peak RSS MB':>13}{'tree RSS MB':>13}{'time vs pw':>12}{'RSS vs pw':>11}")
        base = rows.get("pieceworks")
        for name, r in rows.items():
            tree = f"{r['tree_rss_mb']:.0f}" if r["tree_rss_mb"] else "-"
            t_ratio = f"{r['seconds'] / base['seconds']:.2f}x" if base else "-"
            m_ratio = f"{r['peak_rss_mb'] / base['peak_rss_mb']:.2f}x" if base else "-"
            print(f"{name:<16}{r['seconds']:>9.1f}{r['peak_rss_mb']:>13.0f}{tree:>13}{t_ratio:>12}{m_ratio:>11}")
        if "pieceworks" in rows and "tokenizers" in rows:
            print("\npieceworks vs tokenizers:", compare_merges(Path(tmp) / "pieceworks.json",
                                                                Path(tmp) / "tokenizers.json"))


if __name__ == "__main__":
    main()
