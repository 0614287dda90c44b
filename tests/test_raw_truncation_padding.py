"""Truncation and padding on the raw (kernel) path, against Hugging Face.

Truncation: a text within the limit keeps the lazy encoding, a longer one
takes the long way; both equal Hugging Face, overflowing parts included.
Padding: a lazy encoding that was never read is padded by its frame (its
lists are built later, padded); every field equals Hugging Face's.

The MiniLM tokenizer.json ships with truncation to 128 and padding to 128,
so this is the path most BERT users take; Llama 3 covers byte-level BPE.
"""

from __future__ import annotations

import pytest

from parity import assert_same_encoding

from pieceworks import Tokenizer

hf = pytest.importorskip("tokenizers")

FILES = {"minilm": "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json",
         "llama3": "tokenizers/hf_tokenizer_json/llama3/tokenizer.json"}


def texts_around_the_limit(shared_data) -> list[str]:
    lines = [line.strip() for line in open(shared_data / "corpora/english/botchan.txt", encoding="utf-8-sig")
             if line.strip()][:400]
    words = " ".join(lines).split()
    # Lengths from a few words to several times the limit, and some with special-token text.
    out = lines[:200] + [" ".join(words[:k]) for k in (50, 90, 100, 110, 120, 126, 127, 128, 129, 130, 200, 600)]
    return out + ["[CLS] inside [SEP] text", "<|begin_of_text|> and more", ""]


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("max_length,stride", [(128, 0), (16, 4), (3, 0), (2, 0)])
def test_truncation_on_the_raw_path_equals_hugging_face(shared_data, name, max_length, stride):
    path = str(shared_data / FILES[name])
    ours, theirs = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    texts = texts_around_the_limit(shared_data)
    for tok in (ours, theirs):
        tok.no_padding()
    try:
        theirs.enable_truncation(max_length, stride=stride)
    except Exception:          # too short for the special tokens: refused up front by both
        with pytest.raises(Exception):
            ours.enable_truncation(max_length, stride=stride)
        return
    ours.enable_truncation(max_length, stride=stride)
    for add in (True, False):
        for text in texts:
            try:
                want = theirs.encode(text, add_special_tokens=add)
            except Exception:      # HF refuses (e.g. max_length below the special tokens): so must we
                with pytest.raises(Exception):
                    ours.encode(text, add_special_tokens=add)
                continue
            assert_same_encoding(ours.encode(text, add_special_tokens=add), want, f"{name} {text[:40]!r}")
        if max_length >= 16:
            for a, b in zip(ours.encode_batch(texts, add_special_tokens=add),
                            theirs.encode_batch(texts, add_special_tokens=add)):
                assert_same_encoding(a, b, f"{name} batch")


def test_minilm_as_shipped_pads_and_truncates_like_hugging_face(shared_data):
    path = str(shared_data / FILES["minilm"])
    ours, theirs = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    assert ours.truncation is not None and ours.padding is not None
    texts = texts_around_the_limit(shared_data)
    for text in texts:
        assert_same_encoding(ours.encode(text), theirs.encode(text), text[:40])
    for a, b in zip(ours.encode_batch(texts), theirs.encode_batch(texts)):
        assert_same_encoding(a, b, "batch")
    # The texts within the limit took the raw path: their encodings are lazy until read.
    short = ours.encode(texts[0])
    assert short._ids is None and len(short) == 128


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("padding", [dict(length=40), dict(length=40, direction="left"),
                                     dict(), dict(direction="left", pad_to_multiple_of=8)])
def test_lazy_padding_equals_hugging_face(shared_data, name, padding):
    path = str(shared_data / FILES[name])
    ours, theirs = Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    texts = texts_around_the_limit(shared_data)[190:]
    for tok in (ours, theirs):
        tok.no_truncation()
        tok.enable_padding(pad_id=3, pad_type_id=1, pad_token="<pad>", **padding)
    for text in texts:
        a, b = ours.encode(text), theirs.encode(text)
        assert_same_encoding(a, b, f"{name} {text[:40]!r}")
    batch = ours.encode_batch(texts)
    for a, b in zip(batch, theirs.encode_batch(texts)):
        assert_same_encoding(a, b, f"{name} batch")


def test_padding_keeps_an_unread_encoding_lazy_and_a_read_one_right(shared_data):
    path = str(shared_data / FILES["minilm"])
    ours = Tokenizer.from_file(path)
    ours.no_truncation()
    ours.enable_padding(length=12, pad_token="[PAD]", pad_id=0)
    lazy = ours.encode("a short line")
    assert lazy._ids is None and len(lazy) == 12
    assert lazy.attention_mask == [1] * 5 + [0] * 7
    assert lazy.special_tokens_mask == [1, 0, 0, 0, 1] + [1] * 7
    # An encoding read before padding is padded list by list, to the same result.
    ours.no_padding()
    read = ours.encode("a short line")
    read.ids
    read.pad(12, pad_id=0, pad_token="[PAD]")
    assert_same_encoding(read, lazy)


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("template", ["$A:1 [SEP]:1", "[CLS]:0 $A:1 [SEP]:0", "$A:2"])
def test_overflowing_parts_keep_type_id_0_as_in_hugging_face(shared_data, name, template):
    """A template giving the sequence a type id gives it to the first part only: an overflowing
    part's own tokens keep 0, its special tokens keep theirs (Hugging Face's rule, which the
    general path follows; the raw path framed every part alike)."""
    path = str(shared_data / FILES[name])
    texts = texts_around_the_limit(shared_data)[200:212] + ["gao,kp,s,x,y,z,w,v", "one two three four five six"]
    results = []
    for lib, tok in ((hf, hf.Tokenizer.from_file(path)), (None, Tokenizer.from_file(path))):
        processors = hf.processors if lib is hf else __import__("pieceworks").processors
        tok.post_processor = processors.TemplateProcessing(
            single=template, pair=f"{template} $B:1", special_tokens=[("[CLS]", 101), ("[SEP]", 102)])
        tok.no_padding()
        tok.enable_truncation(6, stride=1)
        single = [tok.encode(t) for t in texts]
        batch = tok.encode_batch(texts)
        results.append([[(e.ids, e.type_ids) for e in [enc] + list(enc.overflowing)] for enc in single + batch])
    assert results[0] == results[1]
