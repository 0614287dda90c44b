"""Fuzz encode/decode of WordPiece: MiniLM BERT tokenizer.json and one trained here.

    python fuzz/fuzz_encode_wordpiece.py -max_total_time=60 CORPUS_DIR
"""

from _common import hf_json_pair, hf_twin, instrumented, run, trained

with instrumented():
    import pieceworks  # noqa: F401
    from _encode import Target, check_target, pick


def targets() -> list[Target]:
    out = []
    pair = hf_json_pair("tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json")
    if pair is not None:
        out.append(Target("bert", pair[0], pair[1]))
    tok = trained("wordpiece")
    out.append(Target("trained", tok, hf_twin(tok)))
    return out


TARGETS = targets()


def test_one_input(data: bytes) -> None:
    target, rest = pick(TARGETS, data)
    check_target(target, rest)


if __name__ == "__main__":
    run(test_one_input)
