"""Adding many tokens (one call each, and all in one call), and encoding with many added tokens,
pieceworks against Hugging Face.

    python benchmarks/bench_add_tokens.py            # 3000 tokens
    python benchmarks/bench_add_tokens.py --n 10000

Both libraries get the same WordLevel model and an NFKC + Lowercase
normalizer (so every added token is normalized), then the same ``n`` tokens
(``<tok0>``, ``<tok1>``, ...); a text holding some of them is encoded after,
and the ids must be equal before a time is printed. Hugging Face remakes the
matchers of all the tokens on every add, so adding one call at a time grows
faster than linearly there; pieceworks normalizes only the tokens given and
makes the matchers when a text is next encoded.

The second table loads Llama 3's tokenizer.json (from ../shared/data, if
there), adds ``n`` tokens (``<dom0>``, ... and 50 words of the text), and
encodes 200 KB of English prose as one text and as its lines: a regex of
thousands of added tokens tried at every char was the slow way (3000 tokens:
3.4 s for the one text; Hugging Face's Aho-Corasick: 0.07 s). The third
does the same with the tiktoken face against tiktoken: cl100k's ranks and
``n`` more special tokens, all allowed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import tokenizers as hf

import pieceworks as pw

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import SHARED_DATA  # noqa: E402


def build(lib):
    tok = lib.Tokenizer(lib.models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.normalizer = lib.normalizers.Sequence([lib.normalizers.NFKC(), lib.normalizers.Lowercase()])
    return tok


def timed_adds(lib, tokens: list[str], one_call: bool) -> tuple[float, list[int]]:
    """Seconds to add ``tokens`` (and encode a text holding some), and that text's ids."""
    tok = build(lib)
    start = time.perf_counter()
    if one_call:
        tok.add_tokens(tokens)
    else:
        for token in tokens:
            tok.add_tokens([token])
    ids = tok.encode("a " + " a ".join(tokens[::97]) + " a").ids
    return time.perf_counter() - start, ids


def timed_encodes(lib, path: Path, tokens: list[str], text: str) -> tuple[float, float, list]:
    """Seconds to encode ``text`` as one and as its lines with ``tokens`` added, and the ids."""
    tok = lib.Tokenizer.from_file(str(path))
    tok.add_tokens(tokens)
    tok.encode("warm up " + tokens[0])
    start = time.perf_counter()
    ids = tok.encode(text).ids
    one = time.perf_counter() - start
    start = time.perf_counter()
    batch = [e.ids for e in tok.encode_batch(text.splitlines())]
    return one, time.perf_counter() - start, [ids, batch]


def encoding_table(n: int) -> None:
    path = SHARED_DATA / "tokenizers/hf_tokenizer_json/llama3/tokenizer.json"
    prose = SHARED_DATA / "corpora/english/nltk_data_2008/gutenberg/austen-emma.txt"
    if not path.exists() or not prose.exists():
        print("\n(encoding with added tokens: ../shared/data not found, skipped)")
        return
    text = prose.read_text(encoding="utf-8")[:200_000]
    words = random.Random(0).sample(sorted(set(text.split())), 50)
    print(f"\n{'Llama 3, 200 KB of prose':<36}{'pieceworks s':>14}{'tokenizers s':>14}{'pieceworks speed':>18}")
    for count in sorted({100, n}):
        tokens = [f"<dom{k}>" for k in range(count)] + words
        ours = timed_encodes(pw, path, tokens, text)
        theirs = timed_encodes(hf, path, tokens, text)
        if ours[2] != theirs[2]:
            raise SystemExit("ids differ: no speed")
        for k, mode in enumerate(("one text", "its lines")):
            title = f"{count} + 50 added tokens, {mode}"
            print(f"{title:<36}{ours[k]:>14.3f}{theirs[k]:>14.3f}{theirs[k] / ours[k]:>17.2f}x")


def special_table(n: int) -> None:
    """The tiktoken face against tiktoken with cl100k's ranks and ``n`` more special tokens, all
    allowed: 200 KB of prose holding two of them, as one text and as its lines (one thread)."""
    import json

    import tiktoken
    import tiktoken.load

    from pieceworks import tiktoken as pw_tiktoken

    ranks_path = SHARED_DATA / "tokenizers/tiktoken/cl100k_base.tiktoken"
    prose = SHARED_DATA / "corpora/english/nltk_data_2008/gutenberg/austen-emma.txt"
    if not ranks_path.exists() or not prose.exists():
        print("\n(special tokens: ../shared/data not found, skipped)")
        return
    meta = json.loads((SHARED_DATA / "tokenizers/tiktoken/encodings_meta.json").read_text())["cl100k_base"]
    specials = {**meta["special_tokens"], **{f"<|sp{k}|>": 100_300 + k for k in range(n)}}
    text = prose.read_text(encoding="utf-8")[:200_000].replace("Emma", "<|sp7|>").replace("Harriet", f"<|sp{n - 1}|>")
    print(f"\n{'cl100k, 200 KB, all allowed':<36}{'pieceworks s':>14}{'tiktoken s':>14}{'pieceworks speed':>18}")
    results = []
    for lib, load in ((pw_tiktoken, pw_tiktoken.load_tiktoken_bpe), (tiktoken, tiktoken.load.load_tiktoken_bpe)):
        enc = lib.Encoding("x", pat_str=meta["pat_str"], mergeable_ranks=load(str(ranks_path)), special_tokens=specials)
        start = time.perf_counter()
        ids = enc.encode(text, allowed_special="all")
        one = time.perf_counter() - start
        start = time.perf_counter()
        batch = enc.encode_batch(text.splitlines(), allowed_special="all", num_threads=1)
        results.append((one, time.perf_counter() - start, [ids, batch]))
    if results[0][2] != results[1][2]:
        raise SystemExit("ids differ: no speed")
    for k, mode in enumerate(("one text", "its lines")):
        title = f"{n} special tokens, {mode}"
        print(f"{title:<36}{results[0][k]:>14.3f}{results[1][k]:>14.3f}{results[1][k] / results[0][k]:>17.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="tokens to add (default 3000)")
    args = parser.parse_args()
    tokens = [f"<Tok{k}>" for k in range(args.n)]
    print(f"{'mode':<28}{'pieceworks s':>14}{'tokenizers s':>14}{'pieceworks speed':>18}")
    for one_call in (False, True):
        ours, our_ids = timed_adds(pw, tokens, one_call)
        theirs, their_ids = timed_adds(hf, tokens, one_call)
        if our_ids != their_ids:
            raise SystemExit("ids differ: no speed")
        mode = f"{args.n} tokens, " + ("one call" if one_call else "one call each")
        print(f"{mode:<28}{ours:>14.2f}{theirs:>14.2f}{theirs / ours:>17.2f}x")
    encoding_table(args.n)
    special_table(args.n)


if __name__ == "__main__":
    main()
