"""Fuzz encode/decode of byte-level BPE: Llama 3, Qwen 3 and GPT-NeoX tokenizer.json, Qwen 3's with split
patterns no scanner knows and GPT-NeoX's with Digits and Punctuation first (fast/cut_byte_bpe.py), and one
trained here.

    python fuzz/fuzz_encode_byte_level_bpe.py -max_total_time=60 CORPUS_DIR
"""

import json

from _common import hf_json_pair, hf_twin, instrumented, run, shared_file, trained

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
    cut = unscanned_pair("tokenizers/hf_tokenizer_json/qwen3/tokenizer.json")
    if cut is not None:
        out.append(Target("qwen3-cut", cut[0], cut[1], "NFC"))
    digits = digits_apart_pair("tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json")
    if digits is not None:
        out.append(Target("neox-digits-cut", digits[0], digits[1], "NFC"))
    tok = trained("bytelevel")
    out.append(Target("trained", tok, hf_twin(tok), "exact"))
    return out


def unscanned_pair(relative: str):
    """(pieceworks, Hugging Face or None) for the file with digits cut two at a time and then
    punctuation merged with what comes before: patterns the kernel has no scanner for."""
    path = shared_file(relative)
    if path is None:
        return None
    document = json.loads(path.read_text())
    splits = document["pre_tokenizer"]["pretokenizers"]
    splits[0]["pattern"]["Regex"] = splits[0]["pattern"]["Regex"].replace(r"|\p{N}|", r"|\p{N}{1,2}|")
    splits.insert(1, {"type": "Split", "pattern": {"Regex": r"\p{P}+"}, "behavior": "MergedWithPrevious",
                      "invert": False})
    return _pair_of(document)


def digits_apart_pair(relative: str):
    """(pieceworks, Hugging Face or None) for the file with StarCoder's Digits (each digit apart) and
    Punctuation merged with what comes before, ahead of its ByteLevel with GPT-2's pattern: every
    stage cut by Oniguruma in the kernel, and its added tokens (GPT-NeoX's runs of spaces, matched
    after NFC) split out there too."""
    path = shared_file(relative)
    if path is None:
        return None
    document = json.loads(path.read_text())
    document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, {"type": "Punctuation", "behavior": "MergedWithPrevious"},
        document["pre_tokenizer"]]}
    return _pair_of(document)


def _pair_of(document: dict):
    import pieceworks as pw

    text = json.dumps(document)
    try:
        import tokenizers as hf
    except ImportError:
        return pw.Tokenizer.from_str(text), None
    return pw.Tokenizer.from_str(text), hf.Tokenizer.from_str(text)


TARGETS = targets()


def test_one_input(data: bytes) -> None:
    target, rest = pick(TARGETS, data)
    check_target(target, rest)


if __name__ == "__main__":
    run(test_one_input)
