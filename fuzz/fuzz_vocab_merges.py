"""Fuzz vocab.json + merges.txt (BPE.from_file): both files cut from one fuzzer input.

    python fuzz/fuzz_vocab_merges.py -max_total_time=60 CORPUS_DIR
"""

import os

from _common import Input, check_encoding, clean, instrumented, run, scratch_dir

with instrumented():
    import pieceworks as pw

_DIR = scratch_dir("bpe")
SEPARATOR = b"\n=====\n"


def test_one_input(data: bytes) -> None:
    inp = Input(data)
    probe = inp.text(16)
    options = inp.byte()
    vocab_bytes, _, merges_bytes = inp.rest().partition(SEPARATOR)
    vocab_path, merges_path = os.path.join(_DIR, "vocab.json"), os.path.join(_DIR, "merges.txt")
    with open(vocab_path, "wb") as fh:
        fh.write(vocab_bytes)
    with open(merges_path, "wb") as fh:
        fh.write(merges_bytes)
    kwargs = {}
    if options & 1:
        kwargs["unk_token"] = "<unk>"
    if options & 2:
        kwargs["byte_fallback"] = True
    if options & 4:
        kwargs["continuing_subword_prefix"] = "##"
    if options & 8:
        kwargs["end_of_word_suffix"] = "</w>"
    if options & 16:
        kwargs["fuse_unk"] = True
    model = clean(pw.models.BPE.from_file, vocab_path, merges_path, **kwargs)
    if model is None:
        return
    tok = pw.Tokenizer(model)
    if options & 32:
        tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = pw.decoders.ByteLevel()
    enc = clean(tok.encode, probe)
    if enc is not None:
        check_encoding(probe, enc)
        clean(tok.decode, enc.ids)
    saved = model.save(_DIR, "again")
    # (The same options: vocab.json and merges.txt do not hold them, and a continuing prefix
    # changes what a merge makes.)
    pw.models.BPE.from_file(*saved, **kwargs)


def seeds():
    from _common import trained

    tok = trained("bytelevel")
    vocab_path, merges_path = tok.model.save(_DIR, "seed")
    with open(vocab_path, "rb") as v, open(merges_path, "rb") as m:
        yield "trained_bytelevel", b"\x02ab\x20" + v.read() + SEPARATOR + b"\n".join(m.read().split(b"\n")[:200])
    yield "tiny", b"\x01a\x01" + b'{"a":0,"b":1,"ab":2,"<unk>":3}' + SEPARATOR + b"#version: 0.2\na b\n"


if __name__ == "__main__":
    run(test_one_input, seeds)
