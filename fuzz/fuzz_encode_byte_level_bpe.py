"""Fuzz encode/decode of byte-level BPE: Llama 3, Qwen 3 and GPT-NeoX tokenizer.json, and one trained here.

    python fuzz/fuzz_encode_byte_level_bpe.py -max_total_time=60 CORPUS_DIR
"""

from _common import hf_json_pair, hf_twin, instrumented, run, trained

with instrumented():
    import pieceworks  # noqa: F401  (instrumented before the targets load)
    from _encode import Target, check_target, pick


def targets() -> list[Target]:
    out = []
    for name, rel, lossless in [("llama3", "tokenizers/hf_tokenizer_json/llama3/tokenizer.json", "exact"),
                                ("qwen3", "tokenizers/hf_tokenizer_json/qwen3/tokenizer.json", "NFC"),
                                ("neox", "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json", "NFC")]:
        pair = hf_json_pair(rel)
        if pair is not None:
            out.append(Target(name, pair[0], pair[1], lossless))
    tok = trained("bytelevel")
    out.append(Target("trained", tok, hf_twin(tok), "exact"))
    return out


TARGETS = targets()


def test_one_input(data: bytes) -> None:
    target, rest = pick(TARGETS, data)
    check_target(target, rest)


if __name__ == "__main__":
    run(test_one_input)
