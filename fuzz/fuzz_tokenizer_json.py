"""Fuzz the tokenizer.json loader: arbitrary bytes, and mutations of real files.

Loading may refuse the input (TokenizerFileError and friends); it must not
raise anything else. A file that loads must encode, decode, and save to
JSON that loads again to the same JSON.

    python fuzz/fuzz_tokenizer_json.py -max_total_time=60 CORPUS_DIR
"""


from _common import Input, check_encoding, clean, instrumented, run

with instrumented():
    import pieceworks as pw


def test_one_input(data: bytes) -> None:
    inp = Input(data)
    probe = inp.text(16)
    tok = clean(pw.Tokenizer.from_buffer, inp.rest())
    if tok is None:
        return
    enc = clean(tok.encode, probe)
    if enc is not None:
        check_encoding(probe, enc)
        clean(tok.decode, enc.ids)
    saved = tok.to_str()
    again = pw.Tokenizer.from_str(saved)
    assert again.to_str() == saved, "tokenizer.json does not survive a save/load round trip"


def seeds():
    """Small real files to start from (written by fuzz/run.py into the corpus folder)."""
    from _common import trained

    for kind in ("bytelevel", "wordpiece", "wordlevel", "bpe"):
        yield kind, b"\x00" + trained(kind).to_str().encode()


if __name__ == "__main__":
    run(test_one_input, seeds)
