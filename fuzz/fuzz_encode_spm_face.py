"""Fuzz the SentencePiece face: encode/decode/sample with .model files, against sentencepiece.

    python fuzz/fuzz_encode_spm_face.py -max_total_time=60 CORPUS_DIR
"""

import sys

from _common import Input, clean, has_surrogates, instrumented, run, shared_file

with instrumented():
    from pieceworks.sentencepiece import SentencePieceProcessor

MODELS = ["tokenizers/sentencepiece/llama2/tokenizer.model",
          "tokenizers/sentencepiece/hf_transformers_fixtures/spiece.model",
          "tokenizers/sentencepiece/hf_transformers_fixtures/test_sentencepiece_bpe.model",
          "tokenizers/sentencepiece/seqio_test_data/sentencepiece.model"]


def targets():
    try:
        import sentencepiece as reference
    except ImportError:
        reference = None
    out = []
    for rel in MODELS:
        path = shared_file(rel)
        if path is not None:
            theirs = reference.SentencePieceProcessor(model_file=str(path)) if reference else None
            out.append((SentencePieceProcessor(model_file=str(path)), theirs))
    return out


TARGETS = targets()


def test_one_input(data: bytes) -> None:
    if not TARGETS:
        return
    inp = Input(data)
    ours, theirs = TARGETS[inp.int_in(len(TARGETS))]
    text = inp.text(40)
    ids = clean(ours.encode, text)
    if ids is None:
        assert has_surrogates(text), f"encode refused {text!r}"
        return
    pieces = ours.encode(text, out_type=str)
    if theirs is not None:
        assert ids == theirs.encode(text), f"ids differ from sentencepiece for {text!r}"
        assert pieces == theirs.encode(text, out_type=str)
    back = ours.decode(ids)
    if theirs is not None:
        assert back == theirs.decode(ids)
        # Each piece's surface and offsets (the serialized SentencePieceText), byte for byte.
        assert ours.encode(text, out_type="serialized_proto") == theirs.encode(text, out_type="serialized_proto")
        assert ours.encode(text, out_type="offset_mapping") == theirs.encode(text, out_type="offset_mapping")
    arbitrary = inp.ids(ours.get_piece_size())
    decoded = clean(ours.decode, arbitrary)
    if decoded is not None and theirs is not None:
        assert decoded == theirs.decode(arbitrary), f"decode({arbitrary}) differs from sentencepiece"
        assert ours.decode(arbitrary, out_type="serialized_proto") == \
            theirs.decode(arbitrary, out_type="serialized_proto"), f"decode proto of {arbitrary} differs"
    clean(ours.encode, text, enable_sampling=True, alpha=0.1, nbest_size=-1)
    clean(ours.nbest_encode_as_pieces, text, 3) if hasattr(ours, "nbest_encode_as_pieces") else None


if __name__ == "__main__":
    if not TARGETS:
        print("fuzz_encode_spm_face: skipped: ../shared/data is absent (set PIECEWORKS_SHARED_DATA)")
        sys.exit(0)
    run(test_one_input)
