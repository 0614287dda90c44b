"""Fuzz the SentencePiece .model (protobuf) loader and the tokenizer built from it.

    python fuzz/fuzz_spm_model.py -max_total_time=60 CORPUS_DIR
"""

from _common import Input, check_encoding, clean, instrumented, run

with instrumented():
    from pieceworks.formats.sentencepiece import model_to_tokenizer
    from pieceworks.sentencepiece import SentencePieceNormalizer, SentencePieceProcessor


def test_one_input(data: bytes) -> None:
    inp = Input(data)
    probe = inp.text(12).replace("\ud800", "").replace("\udfff", "")
    blob = inp.rest()
    sp = SentencePieceProcessor()
    if clean(sp.LoadFromSerializedProto, blob) is not None:
        ids = clean(sp.encode, probe)
        if ids is not None:
            clean(sp.decode, ids)
            clean(sp.encode, probe, out_type=str)
    normalizer = clean(SentencePieceNormalizer, model_proto=blob)
    if normalizer is not None:
        clean(normalizer.normalize, probe, with_offsets=True)
        clean(normalizer.decompile)     # walks the charsmap's trie: must end, even on a corrupted one
    tok = clean(model_to_tokenizer, blob)
    if tok is not None:
        enc = clean(tok.encode, probe)
        if enc is not None:
            check_encoding(probe, enc)
            clean(tok.decode, enc.ids)


def seeds():
    """Small real models, their 200 KB normalization charsmap dropped (so each run takes milliseconds)."""
    from _common import shared_file
    from pieceworks.formats.sentencepiece import ModelProto

    for rel in ("tokenizers/sentencepiece/seqio_test_data/sentencepiece.model",
                "tokenizers/sentencepiece/hf_transformers_fixtures/test_sentencepiece_bpe.model",
                "tokenizers/sentencepiece/hf_transformers_fixtures/test_sentencepiece.model"):
        path = shared_file(rel)
        if path is None:
            continue
        proto = ModelProto.FromString(path.read_bytes())
        proto.normalizer_spec.precompiled_charsmap = b""
        proto.normalizer_spec.name = "identity"
        yield path.stem, b"\x02ab" + proto.SerializeToString()


if __name__ == "__main__":
    run(test_one_input, seeds)
