"""Byte-level BPE, vocabulary 32k, trained on >= 100 MB: pieceworks against its peers, side by side.

Issue 7's table. The contenders and their settings are those of
``bench_train_bpe.py`` (issue 3's 20 MB row), run through its child mode:
each in its own child process, one after another, on the same file, with
two cores (Hugging Face and bpeasy: RAYON_NUM_THREADS=2; YouTokenToMe:
n_threads=2; SentencePiece: num_threads=2; pieceworks: 2 counting
processes). Wall time is the whole train call (reading, counting, merges,
saving); memory is the child's own peak RSS (VmHWM) and the peak summed
RSS and PSS of its process tree (counting pieceworks' workers).

As there, only pieceworks and Hugging Face train the same thing (checked:
identical vocab and merges); SentencePiece (raw text with ``▁``), YouTokenToMe
(its own whitespace rules) and bpeasy (GPT-2 split, its own ties and a
max token length) are in the table for speed and memory. SentencePiece
uses every sentence (input_sentence_size=0: no sampling, it warns that
this is many) and skips lines over max_sentence_length (65536 bytes; the
count is printed); its BPE trainer needs no train_extremely_large_corpus
at this size.

    python benchmarks/bench_scale_train.py [--mb 100] [--skip sentencepiece]

The corpus is every UTF-8 text corpus in ../shared/data concatenated
(English, code and multilingual text), repeated until it reaches --mb
megabytes (the last copy cut at a line end). Quote ratios, not absolute
numbers, with the load average printed beside them: the machine is shared.
Targets (issue 7): pieceworks wall <= 0.5x Hugging Face's, peak RSS <= 0.5x.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_train_bpe as bpe  # noqa: E402
from _child import run_contenders, training_parser  # noqa: E402
from harness import build_repeated_corpus, print_resource_table, print_targets  # noqa: E402


def main() -> None:
    # (Its children are bench_train_bpe.py's.)
    args = training_parser(__doc__, bpe.VOCAB, bpe.CONTENDERS, mb=100, timeout=3600, child=False).parse_args()
    with tempfile.TemporaryDirectory(prefix="pw-bench-scale-") as tmp_dir:
        tmp = Path(tmp_dir)
        corpus = tmp / "corpus.txt"
        size = build_repeated_corpus(corpus, args.mb)
        print(f"corpus: {size / 1e6:.1f} MB (every shared text corpus, repeated), byte-level BPE vocab "
              f"{args.vocab}, 2 cores, contenders one after another (machine shared)")
        print(f"sentencepiece options: {bpe.SPM_OPTIONS} "
              f"({bpe.long_lines(corpus, bpe.SPM_OPTIONS['max_sentence_length'])} lines longer than "
              "max_sentence_length)")
        names = [n for n in bpe.CONTENDERS if n not in args.skip]
        rows = run_contenders(bpe.__file__, names,
                              lambda n: [str(corpus), bpe.output_path(tmp, n), str(args.vocab)],
                              env=bpe.CHILD_ENV, unavailable=bpe.missing_module, timeout=args.timeout)
        print_resource_table(f"Byte-level BPE {args.vocab}, {size / 1e6:.0f} MB, 2 cores "
                             "(ratios: contender / pieceworks; load: 1-min average before-after)", rows)
        print()
        if bpe.print_checks(tmp, rows) is False:
            bpe.print_mismatch()
            sys.exit(1)
        print_targets(rows, "tokenizers", wall=0.5, rss=0.5)


if __name__ == "__main__":
    main()
