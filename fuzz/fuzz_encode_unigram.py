"""Fuzz encode/decode of Unigram: ruT5 and BARThez-style tokenizer.json (Precompiled normalizer, Metaspace).

    python fuzz/fuzz_encode_unigram.py -max_total_time=60 CORPUS_DIR
"""

import sys

from _common import hf_json_pair, instrumented, run

with instrumented():
    import pieceworks  # noqa: F401
    from _encode import Target, check_target, pick


def targets() -> list[Target]:
    out = []
    pair = hf_json_pair("tokenizers/sentencepiece/ruT5-large/tokenizer.json")
    if pair is not None:
        out.append(Target("ruT5", pair[0], pair[1]))
    return out


TARGETS = targets()


def test_one_input(data: bytes) -> None:
    if not TARGETS:
        return
    target, rest = pick(TARGETS, data)
    check_target(target, rest)


if __name__ == "__main__":
    if not TARGETS:
        print("fuzz_encode_unigram: skipped: ../shared/data is absent (set PIECEWORKS_SHARED_DATA)")
        sys.exit(0)
    run(test_one_input)
