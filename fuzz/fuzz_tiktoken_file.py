"""Fuzz the .tiktoken loader (``pieceworks.tiktoken.load_tiktoken_bpe``) and Encoding built from it.

Skips (exit status 0, saying why) while ``pieceworks.tiktoken`` does not exist.

    python fuzz/fuzz_tiktoken_file.py -max_total_time=60 CORPUS_DIR
"""

import os
import sys

from _common import Input, clean, instrumented, run, scratch_dir

with instrumented():
    try:
        from pieceworks import tiktoken as face
    except ImportError as exc:  # being written by another engineer
        face = None
        MISSING = f"pieceworks.tiktoken is not importable yet ({exc})"

_DIR = scratch_dir("tiktoken")
PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def test_one_input(data: bytes) -> None:
    if face is None:
        return
    inp = Input(data)
    probe = inp.text(16)
    path = os.path.join(_DIR, "x.tiktoken")
    with open(path, "wb") as fh:
        fh.write(inp.rest())
    ranks = clean(face.load_tiktoken_bpe, path)
    if not ranks:
        return
    enc = clean(face.Encoding, "fuzz", pat_str=PAT, mergeable_ranks=ranks,
                special_tokens={"<|endoftext|>": max(ranks.values()) + 1})
    if enc is None:
        return
    ids = clean(enc.encode_ordinary, probe)
    if ids is not None:
        clean(enc.decode_bytes, ids)
    # (Refused cleanly: special-token text, as tiktoken refuses it; a byte the ranks lack, where
    # tiktoken panics.)
    clean(enc.encode, probe)


def seeds():
    from _common import shared_file

    path = shared_file("tokenizers/tiktoken/r50k_base.tiktoken")
    if path is not None:
        yield "r50k_head", b"\x02ab" + b"\n".join(path.read_bytes().split(b"\n")[:600])
    yield "tiny", b"\x01a" + b"YQ== 0\nYg== 1\nYWI= 2\n"


if __name__ == "__main__":
    if face is None:
        print(f"fuzz_tiktoken_file: skipped: {MISSING}")
        sys.exit(0)
    run(test_one_input, seeds)
