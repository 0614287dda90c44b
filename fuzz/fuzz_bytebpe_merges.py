"""Fuzz the byte-level kernel on merges in any order: its table of the tokens BPE gives back, its
seam checks, and its encoding, each against running plain BPE.

The input picks merges of pairs of tokens over a few letters and a two-byte
char (so tokens are made several ways, and merges name tokens later merges
make: out of rank order), either as a merges list or as tiktoken-style ranks,
then a one-piece text of those letters (up to 1500 of them, or runs of one).

    python fuzz/fuzz_bytebpe_merges.py -max_total_time=60 CORPUS_DIR
"""

import random
from array import array

from _common import Input, instrumented, run

with instrumented():
    from pieceworks._kernels.bytebpe import ByteBPE, Pattern

LETTERS = [b"a", b"b", b"c", b"\xc3", b"\xa9"]     # ("é" is the last two)


def made_merges(inp: Input) -> tuple[list[bytes], array]:
    """256 byte tokens, then tokens the input's merges make; the merges as ``left, right, new`` ids."""
    token_bytes = [bytes([b]) for b in range(256)]
    ids = {t: i for i, t in enumerate(token_bytes)}
    merges, pairs = [], set()
    for _ in range(inp.int_in(80)):
        parts = [ids[letter] for letter in LETTERS] + list(range(256, len(token_bytes)))
        x, y = parts[inp.int_in(len(parts))], parts[inp.int_in(len(parts))]
        if (x, y) in pairs:
            continue
        joined = token_bytes[x] + token_bytes[y]
        if joined not in ids:
            ids[joined] = len(token_bytes)
            token_bytes.append(joined)
        pairs.add((x, y))
        merges.append((x, y, ids[joined]))
    for _ in range(inp.int_in(len(merges) + 1)):       # some swaps: merges out of rank order
        i, j = inp.int_in(len(merges)), inp.int_in(len(merges))
        merges[i], merges[j] = merges[j], merges[i]
    return token_bytes, array("I", [i for merge in merges for i in merge])


def direct_inexact(rebuilds: bytes, last: list) -> list[int]:
    """The tokens some merge below them ranks no higher than its parts' (from the direct table)."""
    inexact: dict[int, bool] = {}

    def of(t: int) -> bool:
        if t not in inexact:
            left, right, rank = last[t]
            inexact[t] = rank > 0 and (rank <= last[left][2] or rank <= last[right][2] or of(left) or of(right))
        return inexact[t]
    return [t for t in range(len(last)) if rebuilds[t >> 3] >> (t & 7) & 1 and of(t)]


def test_one_input(data: bytes) -> None:
    # (Followed by bytes drawn from it: the kernel is not instrumented, so short inputs would mostly
    # give a few merges and an empty text; this way every input gives a full case, and replays it.)
    inp = Input(data + random.Random(data).randbytes(2000))
    token_bytes, merges = made_merges(inp)
    if inp.flag():      # tiktoken's form: ranks are ids, and every split into two tokens merges
        kernel = ByteBPE(token_bytes, None, pattern=Pattern.PAT_GPT2, whole_piece=inp.flag())
    else:
        kernel = ByteBPE(token_bytes, merges, pattern=Pattern.PAT_GPT2, whole_piece=inp.flag())
    table, direct = kernel._rebuild_table(), kernel._rebuild_table_by_bpe()
    assert table == direct, "the table differs from running BPE on each token"
    assert kernel._inexact_tokens() == direct_inexact(*direct)
    for _ in range(4):
        x, y = inp.int_in(kernel.n_ids), inp.int_in(kernel.n_ids)
        check, bpe = kernel._seam_holds(x, y)
        assert check == bpe, (x, y)
    if inp.flag():      # one piece
        text = "".join("abcé"[inp.int_in(4)] for _ in range(inp.int_in(1500)))
    else:               # runs of one char, long ones cut into copies of a token
        text = "".join("abcé"[inp.int_in(4)] * inp.int_in(300) for _ in range(inp.int_in(8)))
    # (a piece that is a token is that token with whole_piece: tiktoken's rule, then BPE)
    plain = kernel.encode_bytes_piece if kernel.whole_piece else kernel.encode_bytes_plain
    assert kernel.encode(text) == plain(text.encode()), text


if __name__ == "__main__":
    run(test_one_input)
