"""Unigram encoding, pieceworks vs sentencepiece: three models, one and two threads.

* a 16k Unigram model trained here (by sentencepiece) on English prose, encoding prose;
* the 30k ``spiece.model`` from the Hugging Face fixtures, encoding prose;
* the Japanese test model, encoding Japanese text.

Outputs are checked equal before any speed is printed. Two threads: each
library encodes a batch (sentencepiece with ``num_threads=2``, pieceworks
on a two-thread pool over halves of the batch).

    python benchmarks/bench_unigram_encode.py
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import SHARED_DATA, compare, print_table

SPM_DIR = SHARED_DATA / "tokenizers" / "sentencepiece"


def lines_of(path: Path, limit: int) -> list[str]:
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
    pool = ThreadPoolExecutor(threads)

    def pw_batch(xs):
        half = len(xs) // 2
        parts = list(pool.map(pw.encode, [xs[:half], xs[half:]]))
        return parts[0] + parts[1]

    return {"pieceworks": pw_batch, "sentencepiece": lambda xs: sp.encode(xs, num_threads=threads)}


def main() -> None:
    import sentencepiece as spm

    prose = lines_of(SHARED_DATA / "corpora" / "english" / "nltk_data_2008" / "gutenberg" / "austen-emma.txt",
                     1_000_000)
    japanese = lines_of(SHARED_DATA / "corpora" / "multilingual" / "ja_wagahaiwa_nekodearu.txt", 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "en16k"
        spm.SentencePieceTrainer.train(
            input=str(SHARED_DATA / "corpora" / "english" / "linux-6.1_docs_rst.txt"), model_prefix=str(prefix),
            vocab_size=16000, input_sentence_size=200000, minloglevel=2, num_threads=2)
        cases = [("16k English Unigram, prose", Path(f"{prefix}.model"), prose),
                 ("spiece.model 30k, prose", SPM_DIR / "hf_transformers_fixtures" / "spiece.model", prose),
                 ("Japanese model, Japanese", SPM_DIR / "sentencepiece_test_ja_model.model", japanese)]
        for title, model, texts in cases:
            size = sum(len(x.encode()) for x in texts) / 1e6
            for threads in (1, 2):
                results = compare(contenders(model, threads), texts, size=size, repeat=3)
                print_table(f"{title} ({threads} thread{'s' if threads > 1 else ''})", results, size)


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - start:.0f} s")
