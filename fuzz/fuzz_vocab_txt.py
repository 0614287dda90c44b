"""Fuzz the BERT vocab.txt reader (WordPiece.from_file) and encoding with what it reads.

    python fuzz/fuzz_vocab_txt.py -max_total_time=60 CORPUS_DIR
"""

import os

from _common import Input, check_encoding, clean, instrumented, run, scratch_dir

with instrumented():
    import pieceworks as pw
    from pieceworks.formats.bert_vocab import format_bert_vocab, parse_bert_vocab

_DIR = scratch_dir("vocab")


def test_one_input(data: bytes) -> None:
    inp = Input(data)
    probe = inp.text(16)
    raw = inp.rest()
    path = os.path.join(_DIR, "vocab.txt")
    with open(path, "wb") as fh:
        fh.write(raw)
    model = clean(pw.models.WordPiece.from_file, path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    vocab = clean(parse_bert_vocab, text)
    if vocab is not None:
        again = clean(format_bert_vocab, vocab)
        if again is not None:
            assert parse_bert_vocab(again) == vocab, "vocab.txt does not survive a write/read round trip"
    if model is not None:
        tok = pw.Tokenizer(model)
        tok.pre_tokenizer = pw.pre_tokenizers.BertPreTokenizer()
        enc = clean(tok.encode, probe)
        if enc is not None:
            check_encoding(probe, enc)


def seeds():
    from _common import shared_file

    path = shared_file("tokenizers/bert_all-MiniLM-L6-v2/vocab.txt")
    if path is not None:
        yield "minilm_head", b"\x03abc" + b"\n".join(path.read_bytes().split(b"\n")[:400])
    yield "tiny", b"\x02hi[UNK]\nhi\n##s\n"


if __name__ == "__main__":
    run(test_one_input, seeds)
