"""encode-dataset throughput: 1 process against 2, same input, same shards.

Encodes a slice of the shared corpora with the GPT-NeoX tokenizer (byte-level
BPE, 50k vocabulary, uint16 shards) into fresh folders, once with one
process and once with two, checks that the shards are byte for byte the
same, and prints tokens/s for each and the speed-up. Each run is a child
process (wall time includes starting the workers).

    python benchmarks/bench_encode_dataset.py [--mb 4]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import emit, last_json, run_child  # noqa: E402
from harness import SHARED_DATA  # noqa: E402

TOKENIZER = SHARED_DATA / "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json"
SOURCES = ["corpora/english/linux-6.1_docs_rst.txt", "corpora/code/llama.cpp_ggml_c_cpp.txt",
           "corpora/multilingual/udhr_532_languages.jsonl"]


def build_corpus(path: Path, megabytes: int) -> int:
    target = megabytes * 1_000_000
    written = 0
    with open(path, "wb") as fh:
        for name in SOURCES * 100:
            data = (SHARED_DATA / name).read_bytes()[: target - written]
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # less than a line left to fill
                break
            fh.write(data[:cut])
            written += cut
    return written


def child_main(corpus: str, out: str, workers: str) -> None:
    from pieceworks.dataset import encode_dataset

    index = encode_dataset([corpus], str(TOKENIZER), out, workers=int(workers), shard_bytes=1 << 20,
                           eod_token="<|endoftext|>", progress=False)
    emit({"tokens": index["tokens"], "documents": index["documents"], "dtype": index["dtype"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=4)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="pw-enc-") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        size = build_corpus(corpus, args.mb)
        rows = {}
        for workers in ("1", "2"):
            out = Path(tmp) / f"out{workers}"
            result = run_child([__file__, "--child", str(corpus), str(out), workers])
            result.update(last_json(result.pop("stdout")))
            rows[workers] = result
            print(f"  {workers} process(es): {result['seconds']:.1f} s ({result['cpu_seconds']:.1f} CPU s), "
                  f"{result['tokens'] / result['seconds']:,.0f} tokens/s, peak RSS {result['peak_rss_mb']:.0f} MB, "
                  f"load average {result['load_average']:.1f} on {os.cpu_count()} cores", flush=True)
        same = all((Path(tmp) / "out1" / p.name).read_bytes() == p.read_bytes()
                   for p in (Path(tmp) / "out2").glob("shard-*"))
        index = json.loads((Path(tmp) / "out2" / "index.json").read_text())
        print(f"\n## encode-dataset, {size / 1e6:.0f} MB, GPT-NeoX tokenizer, {index['tokens']:,} tokens "
              f"({index['dtype']}), {len(index['shards'])} shards")
        rate1 = rows["1"]["tokens"] / rows["1"]["seconds"]
        rate2 = rows["2"]["tokens"] / rows["2"]["seconds"]
        print(f"1 process: {rate1:,.0f} tokens/s; 2 processes: {rate2:,.0f} tokens/s; speed-up {rate2 / rate1:.2f}x")
        print(f"shards identical: {same}")
        print("(a load average above the core count means other jobs share the cores: the speed-up is then "
              "bounded by the cores left, not by pieceworks)")


if __name__ == "__main__":
    main()
