"""WordPiece training, vocabulary 30k, on 20 MB of English prose+code: pieceworks against Hugging Face.

Issue 4's training row. Three runs, each in its own child process, one after
another, on the same file, with two cores:

* pieceworks ``trainers.WordPieceTrainer`` with the real WordPiece score
  (``scoring="likelihood"``, the default): merge the pair with the highest
  ``count(ab) / (count(a) * count(b))``;
* pieceworks ``WordPieceTrainer(scoring="frequency")``: the most frequent
  pair, what Hugging Face does;
* Hugging Face ``tokenizers.trainers.WordPieceTrainer`` (its BPE trainer
  with a ``##`` prefix, frequency-scored), RAYON_NUM_THREADS=2.

All three tokenizers have ``BertNormalizer()`` and ``BertPreTokenizer()``
(BERT's defaults: clean text, Chinese chars split, accents stripped,
lowercased) and the special tokens [PAD] [UNK] [CLS] [SEP] [MASK];
pieceworks runs with its defaults (2 cores; 20 MB is counted in one process). Wall time is the
whole train call (reading, normalizing, counting, merges, saving) seen from
the parent; memory is the child's own peak RSS (VmHWM) and the peak
summed RSS and PSS of its process tree (counting pieceworks' workers).

The likelihood run learns a different vocabulary from the frequency runs by
design. pieceworks' frequency run is compared with Hugging Face's, as sets
of tokens; they can differ on ties, because Hugging Face numbers the
``##`` chars in the order of a randomly seeded hash map (two of its own runs
differ the same way) and breaks ties by id. So the parent then counts the
corpus once more and trains pieceworks' frequency scoring with Hugging
Face's numbering of the starting alphabet (outside the timed runs;
``--no-check`` skips it): that vocabulary must equal Hugging Face's, id for
id.

The corpus (``--mb``, default 20) is half English prose (the NLTK Gutenberg
books, then the Linux 6.1 documentation) and half C/C++ source (the start
of llama.cpp/ggml), from ../shared/data/corpora; the files used are printed.

    python benchmarks/bench_train_wordpiece.py [--mb 20] [--vocab 30000] [--no-check]

Quote ratios, not absolute numbers, with the load average printed beside
them: the machine is shared. Target (issue 4): the likelihood trainer no
slower than Hugging Face's, peak memory no higher.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import run_child_job, run_contenders, training_parser  # noqa: E402
from harness import build_prose_code_corpus, print_resource_table, print_targets  # noqa: E402

VOCAB = 30000
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CONTENDERS = ("pieceworks", "pieceworks-frequency", "tokenizers")
# pieceworks runs with its defaults on these 2 cores (below 32 MB it counts in one process).
CHILD_ENV = {"RAYON_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}


# -- the children: train one contender, save its tokenizer.json to ``out`` ----------------------
def train_pieceworks(corpus: str, out: str, vocab: str, scoring: str = "likelihood") -> dict:
    import pieceworks as pw

    tok = pw.Tokenizer(pw.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = pw.normalizers.BertNormalizer()
    tok.pre_tokenizer = pw.pre_tokenizers.BertPreTokenizer()
    trainer = pw.trainers.WordPieceTrainer(vocab_size=int(vocab), special_tokens=SPECIALS, show_progress=False,
                                           scoring=scoring)
    tok.train([corpus], trainer)
    tok.save(out)
    return {"vocab": tok.get_vocab_size()}


def train_pieceworks_frequency(corpus: str, out: str, vocab: str) -> dict:
    return train_pieceworks(corpus, out, vocab, scoring="frequency")


def train_tokenizers(corpus: str, out: str, vocab: str) -> dict:
    import tokenizers as hf

    tok = hf.Tokenizer(hf.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = hf.normalizers.BertNormalizer()
    tok.pre_tokenizer = hf.pre_tokenizers.BertPreTokenizer()
    trainer = hf.trainers.WordPieceTrainer(vocab_size=int(vocab), special_tokens=SPECIALS, show_progress=False)
    tok.train([corpus], trainer)
    tok.save(out)
    return {"vocab": tok.get_vocab_size()}


# -- checks in the parent -------------------------------------------------------------------------
def vocab_of(path: Path) -> set[str]:
    return set(json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"])


def compare_vocabs(ours: Path, theirs: Path) -> str:
    """Whether two WordPiece tokenizer.json files hold the same tokens (ids aside)."""
    a, b = vocab_of(ours), vocab_of(theirs)
    if a == b:
        return f"same {len(a)} tokens"
    return f"{len(a & b)} tokens shared, {len(a - b)} only in pieceworks, {len(b - a)} only in tokenizers"


def same_numbering_check(corpus: Path, hf_json: Path, vocab: int) -> tuple[bool, str]:
    """Train pieceworks' frequency scoring from Hugging Face's starting ids; compare with its vocabulary."""
    import pieceworks as pw
    from pieceworks.trainers.counts import count_files

    theirs = json.loads(hf_json.read_text(encoding="utf-8"))["model"]["vocab"]
    their_order = sorted(theirs, key=theirs.get)
    counts = count_files([str(corpus)], pw.normalizers.BertNormalizer(), pw.pre_tokenizers.BertPreTokenizer(),
                         format="text", errors="strict", progress=False)
    trainer = pw.trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=SPECIALS, show_progress=False,
                                           scoring="frequency")
    start = len(trainer.initial_vocab(counts))
    ours = trainer.learn(counts, initial_vocab=their_order[:start])
    if ours == their_order:
        return True, f"identical, id for id ({len(ours)} tokens)"
    first = next((i for i, (a, b) in enumerate(zip(ours, their_order)) if a != b), min(len(ours), len(their_order)))
    return False, f"DIFFERENT from id {first} on ({len(ours)} vs {len(their_order)} tokens)"


def print_verdict(rows: dict) -> None:
    """Issue 4's target (the likelihood trainer against Hugging Face), met or not, from this run's numbers."""
    print_targets(rows, "tokenizers", wall=1, rss=1)


def main() -> None:
    parser = training_parser(__doc__, VOCAB, CONTENDERS)
    parser.add_argument("--no-check", action="store_true",
                        help="skip the untimed same-numbering check against Hugging Face")
    args = parser.parse_args()
    if run_child_job(args, globals()):
        return
    with tempfile.TemporaryDirectory(prefix="pw-bench-wordpiece-") as tmp_dir:
        tmp = Path(tmp_dir)
        corpus = tmp / "corpus.txt"
        size, sources = build_prose_code_corpus(corpus, args.mb)
        print(f"corpus: {size / 1e6:.1f} MB of English prose+code from ../shared/data:\n  " + "\n  ".join(sources))
        print(f"WordPiece vocab {args.vocab}, BERT normalizer and pre-tokenizer, 2 cores, "
              "contenders one after another (machine shared)")
        names = [n for n in CONTENDERS if n not in args.skip]
        rows = run_contenders(__file__, names, lambda n: [str(corpus), str(tmp / f"{n}.json"), str(args.vocab)],
                              env=CHILD_ENV, timeout=args.timeout)
        print_resource_table(f"WordPiece {args.vocab}, {size / 1e6:.0f} MB prose+code, 2 cores "
                             "(ratios: contender / pieceworks likelihood; load: 1-min average before-after)", rows)
        print()
        if "seconds" in rows.get("pieceworks-frequency", {}) and "seconds" in rows.get("tokenizers", {}):
            print("pieceworks frequency vs tokenizers, token sets (ties may differ: see the docstring):",
                  compare_vocabs(tmp / "pieceworks-frequency.json", tmp / "tokenizers.json"))
        same = True
        if "seconds" in rows.get("tokenizers", {}) and not args.no_check:
            same, text = same_numbering_check(corpus, tmp / "tokenizers.json", args.vocab)
            print("pieceworks frequency trained from tokenizers' numbering of the alphabet vs tokenizers:", text)
        if not same:
            print("target vs tokenizers: NO VERDICT: pieceworks' frequency scoring did not reproduce Hugging "
                  "Face's vocabulary (a wrong answer has no speed)")
            sys.exit(1)
        print_verdict(rows)


if __name__ == "__main__":
    main()
