"""Byte-level BPE training, vocabulary 32k, on 20 MB of prose+code: pieceworks against its peers.

Issue 3's training row. Every contender runs in its own child process, one
after another, on the same file, with two cores:

* pieceworks: ``Tokenizer(models.BPE())`` with ``pre_tokenizers.ByteLevel``
  (GPT-2's split and byte alphabet) and ``trainers.BpeTrainer``, its
  defaults on 2 cores (below 32 MB it counts in one process);
* Hugging Face tokenizers: the same pipeline with its ``BpeTrainer``
  (RAYON_NUM_THREADS=2);
* SentencePiece ``model_type=bpe`` (num_threads=2);
* YouTokenToMe (n_threads=2; its source package builds only with
  ``pip install cython wheel && pip install --no-build-isolation youtokentome``);
* bpeasy (RAYON_NUM_THREADS=2), skipped, saying why, when not installed.

Wall time is the whole train call (reading, counting, merges, saving) seen
from the parent; memory is the child's own peak RSS (VmHWM) and the peak
summed RSS and PSS of its process tree (counting pieceworks' workers).

Not everyone trains the same thing. Only pieceworks and Hugging Face are
like for like: the same byte-level pre-tokenization and rules, and the
benchmark checks their vocabularies and merges are identical. The others
are here for speed and memory only:

* SentencePiece works on raw text: NFKC-normalized, whitespace turned into
  ``▁`` and kept inside pieces, split by Unicode script and digits, pieces
  up to 16 chars, chars outside 99.95% coverage replaced by byte fallback;
* YouTokenToMe splits on whitespace with its own ``▁`` rule, starts from
  every char (coverage 1.0), and counts vocabulary slots its own way;
* bpeasy uses GPT-2's split pattern and bytes, as pieceworks does, but
  needs a ``max_token_length`` (128 here) and breaks ties its own way; the
  share of its tokens that pieceworks also learned is printed.

The corpus (``--mb``, default 20) is half English prose (the NLTK Gutenberg
books, then the Linux 6.1 documentation) and half C/C++ source (the start
of llama.cpp/ggml), from ../shared/data/corpora; the files used are printed.

    python benchmarks/bench_train_bpe.py [--mb 20] [--vocab 32000] [--skip bpeasy]

Quote ratios, not absolute numbers, with the load average printed beside
them: the machine is shared. Targets (issue 3): pieceworks <= 0.5x Hugging
Face's wall time, peak RSS no higher than Hugging Face's, faster than
SentencePiece, YouTokenToMe and bpeasy.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import run_child_job, run_contenders, training_parser  # noqa: E402
from harness import build_prose_code_corpus, print_resource_table, print_targets  # noqa: E402

VOCAB = 32000
CONTENDERS = ("pieceworks", "tokenizers", "sentencepiece", "youtokentome", "bpeasy")
MODULES = {"pieceworks": "pieceworks", "tokenizers": "tokenizers", "sentencepiece": "sentencepiece",
           "youtokentome": "youtokentome", "bpeasy": "bpeasy"}
# Two cores for everyone: rayon pools (tokenizers, bpeasy), pieceworks' counting processes, OpenMP.
# pieceworks runs with its defaults on these 2 cores (below 32 MB it counts in one process).
CHILD_ENV = {"RAYON_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
BPEASY_MAX_TOKEN_LENGTH = 128
# SentencePiece: every sentence is used (input_sentence_size=0, its default: no sampling), lines up to
# 64 KiB (longer ones are skipped, as by default beyond 4 KiB); BPE's counts fit in its default int32
# path, so train_extremely_large_corpus stays off.
SPM_OPTIONS = {"model_type": "bpe", "num_threads": 2, "byte_fallback": True, "character_coverage": 0.9995,
               "input_sentence_size": 0, "max_sentence_length": 1 << 16, "train_extremely_large_corpus": False,
               "minloglevel": 2}


# -- the children: train one contender, save its output to ``out`` --------------------------------
def train_pieceworks(corpus: str, out: str, vocab: str) -> dict:
    import pieceworks as pw

    tok = pw.Tokenizer(pw.models.BPE())
    tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = pw.trainers.BpeTrainer(vocab_size=int(vocab), show_progress=False,
                                     initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    tok.save(out)
    return {"vocab": tok.get_vocab_size()}


def train_tokenizers(corpus: str, out: str, vocab: str) -> dict:
    import tokenizers as hf

    tok = hf.Tokenizer(hf.models.BPE())
    tok.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = hf.trainers.BpeTrainer(vocab_size=int(vocab), show_progress=False,
                                     initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    tok.save(out)
    return {"vocab": tok.get_vocab_size()}


def train_sentencepiece(corpus: str, out: str, vocab: str) -> dict:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(input=corpus, model_prefix=out, vocab_size=int(vocab), **SPM_OPTIONS)
    return {"vocab": spm.SentencePieceProcessor(model_file=out + ".model").get_piece_size()}


def train_youtokentome(corpus: str, out: str, vocab: str) -> dict:
    import youtokentome as yttm

    bpe = yttm.BPE.train(data=corpus, model=out, vocab_size=int(vocab), n_threads=2)
    return {"vocab": bpe.vocab_size()}


def train_bpeasy(corpus: str, out: str, vocab: str) -> dict:
    import bpeasy

    with open(corpus, encoding="utf-8") as lines:
        ranks = bpeasy.train_bpe(lines, GPT2_PATTERN, BPEASY_MAX_TOKEN_LENGTH, int(vocab))
    bpeasy.save_vocab_to_tiktoken(ranks, out)
    return {"vocab": len(ranks)}


# -- checks in the parent -------------------------------------------------------------------------
def output_path(tmp: Path, name: str) -> str:
    """Where contender ``name`` saves (SentencePiece and YouTokenToMe add their own suffix or not)."""
    return str(tmp / {"pieceworks": "pieceworks.json", "tokenizers": "tokenizers.json",
                      "sentencepiece": "sentencepiece", "youtokentome": "youtokentome.model",
                      "bpeasy": "bpeasy.tiktoken"}[name])


def compare_merges(pw_path: Path, hf_path: Path) -> tuple[bool, str]:
    """Whether two tokenizer.json files hold the same BPE vocab and the same merges in the same order."""
    ours = json.loads(pw_path.read_text(encoding="utf-8"))["model"]
    theirs = json.loads(hf_path.read_text(encoding="utf-8"))["model"]
    same_vocab = ours["vocab"] == theirs["vocab"]
    same_merges = _merge_pairs(ours["merges"]) == _merge_pairs(theirs["merges"])
    return same_vocab and same_merges, f"vocab identical: {same_vocab}, merges identical: {same_merges}"


def _merge_pairs(merges: list) -> list[tuple[str, ...]]:
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


def shared_tokens(pw_path: Path, tiktoken_path: Path) -> str:
    """How many of a .tiktoken vocabulary's tokens pieceworks' byte-level vocabulary also has."""
    from pieceworks.byte_level import byte_chars_to_bytes

    ours = {byte_chars_to_bytes(t) for t in json.loads(pw_path.read_text(encoding="utf-8"))["model"]["vocab"]}
    theirs = [base64.b64decode(line.split()[0]) for line in tiktoken_path.read_text().splitlines() if line]
    common = sum(t in ours for t in theirs)
    return f"{common} of its {len(theirs)} tokens ({100 * common / max(1, len(theirs)):.1f}%) are in pieceworks' vocab"


def long_lines(corpus: Path, limit: int) -> int:
    """How many lines of ``corpus`` are longer than ``limit`` bytes (SentencePiece skips those)."""
    with open(corpus, "rb") as fh:
        return sum(len(line) > limit for line in fh)


def missing_module(name: str) -> str | None:
    """Why contender ``name`` cannot run here, or None."""
    module = MODULES[name]
    if importlib.util.find_spec(module) is None:
        return f"`{module}` is not installed ({INSTALL.get(module, f'pip install {module}')})"
    return None


#: How to install a peer that a plain ``pip install`` does not build.
INSTALL = {"youtokentome": "its source package imports Cython to build and declares nothing: "
                           "pip install cython wheel && pip install --no-build-isolation youtokentome"}


def print_checks(tmp: Path, rows: dict) -> bool | None:
    """Print what was checked; return whether pieceworks and Hugging Face agree (None: not both ran)."""
    ran = {name for name, row in rows.items() if "seconds" in row}
    agree = None
    if {"pieceworks", "tokenizers"} <= ran:
        agree, text = compare_merges(Path(output_path(tmp, "pieceworks")), Path(output_path(tmp, "tokenizers")))
        print("pieceworks vs tokenizers (like for like):", text)
    if {"pieceworks", "bpeasy"} <= ran:
        print("bpeasy (same split, its own tie rule and max_token_length):",
              shared_tokens(Path(output_path(tmp, "pieceworks")), Path(output_path(tmp, "bpeasy"))))
    print("vocabulary sizes: " + ", ".join(f"{name} {row.get('vocab', '?')}" for name, row in rows.items()
                                          if name in ran))
    return agree


def print_mismatch() -> None:
    """No speed verdict for a wrong answer: say so (the caller exits non-zero)."""
    print("target vs tokenizers: NO VERDICT: pieceworks did not learn Hugging Face's vocab and merges "
          "(a wrong answer has no speed)")


def print_verdict(rows: dict) -> None:
    """Issue 3's targets, met or not, from this run's numbers."""
    print_targets(rows, "tokenizers", wall=0.5, rss=1)
    pw = rows.get("pieceworks", {})
    others = [n for n in ("sentencepiece", "youtokentome", "bpeasy") if "seconds" in rows.get(n, {})]
    if "seconds" not in pw or not others:
        return
    not_behind = [n for n in others if rows[n]["seconds"] <= pw["seconds"]]
    print(f"target: faster than {', '.join(others)}: "
          + ("met" if not not_behind else f"NOT met ({', '.join(not_behind)} as fast or faster)"))


def main() -> None:
    args = training_parser(__doc__, VOCAB, CONTENDERS).parse_args()
    if run_child_job(args, globals()):
        return
    with tempfile.TemporaryDirectory(prefix="pw-bench-bpe-") as tmp_dir:
        tmp = Path(tmp_dir)
        corpus = tmp / "corpus.txt"
        size, sources = build_prose_code_corpus(corpus, args.mb)
        print(f"corpus: {size / 1e6:.1f} MB of prose+code from ../shared/data:\n  " + "\n  ".join(sources))
        print(f"byte-level BPE vocab {args.vocab}, 2 cores, contenders one after another (machine shared)")
        print(f"sentencepiece options: {SPM_OPTIONS} "
              f"({long_lines(corpus, SPM_OPTIONS['max_sentence_length'])} lines longer than max_sentence_length)")
        names = [n for n in CONTENDERS if n not in args.skip]
        rows = run_contenders(__file__, names, lambda n: [str(corpus), output_path(tmp, n), str(args.vocab)],
                              env=CHILD_ENV, unavailable=missing_module, timeout=args.timeout)
        print_resource_table(f"Byte-level BPE {args.vocab}, {size / 1e6:.0f} MB prose+code, 2 cores "
                             "(ratios: contender / pieceworks; load: 1-min average before-after)", rows)
        print()
        agree = print_checks(tmp, rows)
        if agree is False:
            print_mismatch()
            sys.exit(1)
        print_verdict(rows)


if __name__ == "__main__":
    main()
