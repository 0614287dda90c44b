"""Adding many tokens: one call each, and all in one call, pieceworks against Hugging Face.

    python benchmarks/bench_add_tokens.py            # 3000 tokens
    python benchmarks/bench_add_tokens.py --n 10000

Both libraries get the same WordLevel model and an NFKC + Lowercase
normalizer (so every added token is normalized), then the same ``n`` tokens
(``<tok0>``, ``<tok1>``, ...); a text holding some of them is encoded after,
and the ids must be equal before a time is printed. Hugging Face remakes the
matchers of all the tokens on every add, so adding one call at a time grows
faster than linearly there; pieceworks normalizes only the tokens given and
makes the matchers when a text is next encoded.
"""

from __future__ import annotations

import argparse
import time

import tokenizers as hf

import pieceworks as pw


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


if __name__ == "__main__":
    main()
