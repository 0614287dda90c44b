"""Pairs the truncation cuts, pieceworks.Tokenizer against Hugging Face, in one run.

    python benchmarks/bench_pair_windows.py                 # every tokenizer.json in the shared data
    python benchmarks/bench_pair_windows.py --files bert,llama3

What extractive question answering passes: a question (a line of prose) and a
paragraph (the forty lines after it), cut to 384 tokens with ``only_second``, windows overlapping
by 128, padded to 384; and two long lines of multilingual text cut with the
file's own truncation, or ``longest_first`` to 64 tokens. Each is timed as one
batch reading the ids only (a classifier), as one batch reading every
overflowing part's ids, offsets and sequence ids (a question answering
pipeline), and one ``encode`` call a pair reading the same. Outputs are checked
equal before a speed is reported. Quote the ratios: the machine is shared.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bpe_encode import corpora  # noqa: E402
from harness import compare, file_bench_options, hugging_face, tokenizer_files  # noqa: E402


def question_pairs(prose: str, count: int = 100) -> list[tuple[str, str]]:
    """A short line as the question (one that leaves the paragraph more room than the stride:
    Hugging Face panics otherwise), the forty lines after it as the paragraph."""
    lines = [line.strip() for line in prose.splitlines() if line.strip()]
    return [(lines[k], " ".join(lines[k + 1:k + 41])) for k in range(0, min(len(lines) - 41, 41 * count), 41)
            if len(lines[k]) <= 120]


def long_line_pairs(text: str, count: int = 300) -> list[tuple[str, str]]:
    """Consecutive lines of at least 200 chars, two at a time."""
    lines = [line.strip() for line in text.splitlines() if len(line.strip()) >= 200][:2 * count]
    return list(zip(lines[::2], lines[1::2]))


def with_parts(encodings) -> list:
    """What a question answering pipeline reads: each part's ids, offsets and sequence ids."""
    return [[(part.ids, part.offsets, part.sequence_ids) for part in [e] + e.overflowing] for e in encodings]


def main(argv=None) -> int:
    args = file_bench_options(__doc__, 1.0, 3, argv)
    tokenizers = hugging_face()
    if tokenizers is None:
        return 0
    from pieceworks import Tokenizer

    texts = corpora(int(args.size * 1_000_000))
    workloads = {"question + paragraph": (question_pairs(texts["prose"]),
                                          dict(max_length=384, stride=128, strategy="only_second"), 384),
                 "two long lines": (long_line_pairs(texts["multilingual"]), None, None)}
    print(f"# cut pairs, pieceworks.Tokenizer against tokenizers {tokenizers.__version__}: speed ratio "
          f"(above 1: pieceworks faster), median of {args.repeat}")
    print(f"{'file':<28}{'pairs':<22}{'cut':>6}{'batch ids':>12}{'batch parts':>13}{'1 by 1 parts':>14}")
    for path in tokenizer_files(args.files):
        for name, (pairs, truncation, length) in workloads.items():
            if not pairs:
                continue
            ours, theirs = Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
            for tok in (ours, theirs):
                if truncation is not None or tok.truncation is None:
                    tok.enable_truncation(**(truncation or dict(max_length=64)))
                if length is not None:
                    tok.enable_padding(length=length)
            cut = sum(1 for e in theirs.encode_batch(pairs) if e.overflowing)
            size = len(pairs)
            cells = []
            for mine, hf in ((lambda ps: [e.ids for e in ours.encode_batch(ps)],
                              lambda ps: [e.ids for e in theirs.encode_batch(ps)]),
                             (lambda ps: with_parts(ours.encode_batch(ps)), lambda ps: with_parts(theirs.encode_batch(ps))),
                             (lambda ps: with_parts([ours.encode(a, b) for a, b in ps]),
                              lambda ps: with_parts([theirs.encode(a, b) for a, b in ps]))):
                seconds = compare({"pieceworks": mine, "tokenizers": hf}, pairs, size, unit="pairs",
                                  repeat=args.repeat)
                cells.append(f"{seconds['tokenizers'] / seconds['pieceworks']:.2f}x")
            print(f"{path.parent.name[:27]:<28}{name:<22}{cut:>6}{cells[0]:>12}{cells[1]:>13}{cells[2]:>14}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
