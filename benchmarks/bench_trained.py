"""A tokenizer you train yourself, encoding: pieceworks against Hugging Face ``tokenizers``, side by side.

Hugging Face's quick-tour tokenizer: char-level ``BPE(unk_token="[UNK]")``
(or ``--model wordlevel``: ``WordLevel``; ``--model wordpiece``) after the ``Whitespace`` pre-tokenizer (or ``--pre bert``,
``--pre whitespace-split``, ``--pre metaspace``: ``Metaspace()``, as
Hugging Face's ``SentencePieceBPETokenizer``, ``--pre digits``: ``Whitespace`` then
``Digits(individual_digits=True)``, ``--pre punctuation``: ``WhitespaceSplit`` then
``Punctuation``, ``--pre bytelevel``: ``ByteLevel()``, as Hugging Face's docs train byte-level BPE;
``--normalizer lowercase``, ``nfkc``, ``nfd-lower-strip``, the
course's ``Sequence([NFD(), Lowercase(), StripAccents()])``, or ``course-unigram``, the course's
``Replace``, ``NFKD``, ``StripAccents``, ``Replace``, first; ``--model unigram`` with ``--pre metaspace``
is the course's Unigram), trained here on the embedded corpus to ``--vocab`` tokens;
or, with ``--implementation NAME``, one of Hugging Face's ready-made classes
(``pieceworks.implementations``: ``SentencePieceUnigramTokenizer``, ...); or, with ``--clip``,
CLIP's stages as transformers' converter builds them (NFC, ``Replace(\\s+, " ")`` and
``Lowercase``; a ``Split`` that keeps only its matches, then ``ByteLevel``; byte-level BPE with
the end-of-word suffix ``"</w>"``, every byte's suffixed token in the vocabulary, as CLIP's has
them; ``RobertaProcessing``). With ``--dropout P`` both sides' models get BPE-dropout ``P``
(pieceworks seeded, a batch text by text on one thread; Hugging Face on its 2): the ids are
random, so instead of comparing them each side's tokens are checked to spell what the
tokens without dropout spell, and pieceworks's to differ from them. Both
libraries load the same tokenizer.json. The inputs and modes are
``bench_wordpiece``'s (prose, code and multilingual text; per line, 64 KB
chunks, and ``encode_batch`` of each on 2 threads), ids and offsets built on
both sides and checked equal before any time is printed.

Usage::

    python benchmarks/bench_trained.py                     # 2 MB of each corpus
    python benchmarks/bench_trained.py --mb 1 --repeat 3 --only prose
    python benchmarks/bench_trained.py --pre bert --normalizer lowercase --vocab 30000
    python benchmarks/bench_trained.py --pre metaspace --normalizer nfkc    # SentencePieceBPETokenizer
    python benchmarks/bench_trained.py --model wordlevel
    python benchmarks/bench_trained.py --model wordpiece --normalizer nfd-lower-strip --pre punctuation
    python benchmarks/bench_trained.py --pre bytelevel --normalizer nfkc-lower
    python benchmarks/bench_trained.py --model unigram --pre metaspace --normalizer course-unigram
    python benchmarks/bench_trained.py --implementation SentencePieceUnigramTokenizer
    python benchmarks/bench_trained.py --clip --vocab 30000
    python benchmarks/bench_trained.py --pre metaspace --normalizer nfkc --dropout 0.1
"""

from __future__ import annotations

import argparse
import os
import sys
from itertools import islice
from pathlib import Path

# Both thread pools are sized when first used: set them before importing anything.
os.environ.setdefault("RAYON_NUM_THREADS", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
os.environ["PIECEWORKS_NUM_THREADS"] = "2"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_wordpiece as wp  # noqa: E402
from harness import compare, print_table  # noqa: E402

PRE_TOKENIZERS = {"whitespace": "Whitespace", "bert": "BertPreTokenizer", "whitespace-split": "WhitespaceSplit",
                  "metaspace": "Metaspace", "digits": "Sequence([Whitespace(), Digits(individual_digits=True)])",
                  "punctuation": "Sequence([WhitespaceSplit(), Punctuation()])", "bytelevel": "ByteLevel"}
NORMALIZERS = {"none": None, "lowercase": "Lowercase", "nfkc": "NFKC",
               "nfd-lower-strip": "Sequence([NFD(), Lowercase(), StripAccents()])",
               "nfkc-lower": "Sequence([NFKC(), Lowercase()])",
               # Hugging Face's course, building a Unigram tokenizer block by block.
               "course-unigram": "Sequence([Replace('``', '\"'), Replace(\"''\", '\"'), NFKD(), StripAccents(), "
                                 "Replace(Regex(' {2,}'), ' ')])"}


MODELS = {"bpe": ("BPE", "BpeTrainer"), "wordlevel": ("WordLevel", "WordLevelTrainer"),
          "wordpiece": ("WordPiece", "WordPieceTrainer"), "unigram": ("Unigram", "UnigramTrainer")}


def _stage(module, spelled: str | None):
    """The stage ``spelled`` names (a class name or a Python expression over ``module``'s names)."""
    if spelled is None:
        return None
    return eval(spelled if "(" in spelled else spelled + "()", vars(module))  # noqa: S307 - our own table


def trained_pair(model: str, pre: str, normalizer: str, vocab_size: int, implementation: str | None = None):
    """(pieceworks, Hugging Face) tokenizers from one tokenizer.json trained here."""
    import pieceworks as pw
    from pieceworks.corpus import iter_default_corpus

    if implementation:
        impl = getattr(pw.implementations, implementation)()
        options = {"special_tokens": ["<unk>"], "unk_token": "<unk>"} if "Unigram" in implementation else {}
        impl.train_from_iterator(islice(iter_default_corpus(), 200_000), vocab_size=vocab_size, show_progress=False,
                                 **options)
        return _both_loading(impl._tokenizer.to_str())
    model_name, trainer_name = MODELS[model]
    # (Unigram names its unknown token to the trainer, and the model gets its id from it.)
    unk = {"unk_token": "[UNK]"}
    tok = pw.Tokenizer(pw.models.Unigram() if model == "unigram" else getattr(pw.models, model_name)(**unk))
    tok.pre_tokenizer = _stage(pw.pre_tokenizers, PRE_TOKENIZERS[pre])
    tok.normalizer = _stage(pw.normalizers, NORMALIZERS[normalizer])
    # (Byte-level: every byte in the vocabulary, as Hugging Face's docs train it.)
    alphabet = {"initial_alphabet": pw.pre_tokenizers.ByteLevel.alphabet()} if pre == "bytelevel" else {}
    trainer = getattr(pw.trainers, trainer_name)(vocab_size=vocab_size, special_tokens=["[UNK]"], show_progress=False,
                                                 **alphabet, **(unk if model == "unigram" else {}))
    tok.train_from_iterator(islice(iter_default_corpus(), 200_000), trainer)
    return _both_loading(tok.to_str())


#: CLIP's pre-tokenizing Split (transformers' converter), whose matches are the pieces.
CLIP_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"


def clip_pair(vocab_size: int):
    """(pieceworks, Hugging Face) tokenizers of a CLIP-style tokenizer.json trained here (see the module doc)."""
    import json

    import pieceworks as pw
    from pieceworks.byte_level import BYTE_TO_CHAR
    from pieceworks.corpus import iter_default_corpus

    tok = pw.Tokenizer(pw.models.BPE(continuing_subword_prefix="", end_of_word_suffix="</w>",
                                     unk_token="<|endoftext|>"))
    tok.normalizer = pw.normalizers.Sequence([pw.normalizers.NFC(), pw.normalizers.Replace(pw.Regex(r"\s+"), " "),
                                              pw.normalizers.Lowercase()])
    tok.pre_tokenizer = pw.pre_tokenizers.Sequence([pw.pre_tokenizers.Split(pw.Regex(CLIP_SPLIT), "removed", invert=True),
                                                    pw.pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.train_from_iterator(islice(iter_default_corpus(), 200_000), pw.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|startoftext|>", "<|endoftext|>"], end_of_word_suffix="</w>",
        initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tok.post_processor = pw.processors.RobertaProcessing(("<|endoftext|>", 1), ("<|startoftext|>", 0),
                                                         add_prefix_space=False, trim_offsets=False)
    tok.decoder = pw.decoders.ByteLevel()
    document = json.loads(tok.to_str())
    vocab = document["model"]["vocab"]
    for char in BYTE_TO_CHAR:
        vocab.setdefault(char + "</w>", len(vocab))
    return _both_loading(json.dumps(document))


def _both_loading(saved: str):
    """(pieceworks, Hugging Face) tokenizers loading the same tokenizer.json. (Both load it: a
    Unigram score read back from JSON may differ from the trained one in its last bit, as Hugging
    Face's reader rounds it, and that decides ties between segmentations.)"""
    import tokenizers

    import pieceworks as pw

    return pw.Tokenizer.from_str(saved), tokenizers.Tokenizer.from_str(saved)


def with_dropout(pw, hf, dropout: float):
    """``(pw, hf, plain)``: both tokenizers given BPE-dropout ``dropout`` (pieceworks's seeded), and a
    pieceworks tokenizer without it, for the check."""
    import pieceworks

    plain = pieceworks.Tokenizer.from_str(pw.to_str())
    pw.model.dropout, pw.model.seed = dropout, 1
    hf.model.dropout = dropout
    return pw, hf, plain


def check_dropout(plain, contenders: dict, items: list, what: str) -> None:
    """Each side's tokens spell, item by item, what the tokens without dropout spell (dropping merges
    only splits tokens), and pieceworks's ids are not those without dropout (unless Hugging Face's
    are not either: a merge dropped in a long piece comes back after the next one made)."""
    items = items[:200]
    without = [ids for ids, _ in wp.ids_and_offsets(plain.encode_batch(items))]
    spelled = [[plain.id_to_token(i) for i in ids] for ids in without]
    outputs = {name: [ids for ids, _ in run_once(items)] for name, run_once in contenders.items()}
    for name, out in outputs.items():
        if ["".join(plain.id_to_token(i) for i in ids) for ids in out] != ["".join(t) for t in spelled]:
            raise SystemExit(f"[dropout] {what}: {name}'s tokens do not spell the text's")
    if outputs[wp.PW] == without and outputs[wp.HF] != without:
        raise SystemExit(f"[dropout] {what}: pieceworks's ids are those without dropout, Hugging Face's not")


def run(n_bytes: int, repeat: int, only: set[str] | None, modes: list[str], model: str, pre: str, normalizer: str,
        vocab_size: int, implementation: str | None = None, clip: bool = False,
        dropout: float | None = None) -> list[tuple[str, str, float]]:
    pw, hf = clip_pair(vocab_size) if clip else trained_pair(model, pre, normalizer, vocab_size, implementation)
    plain = None
    if dropout:
        pw, hf, plain = with_dropout(pw, hf, dropout)
    stages = "CLIP's stages" if clip else (
        implementation or f"{MODELS[model][0]}, {PRE_TOKENIZERS[pre]}, normalizer {NORMALIZERS[normalizer]}")
    print(f"# {stages}, {vocab_size} tokens, trained on the embedded corpus"
          + (f", BPE-dropout {dropout}" if dropout else ""))
    summary = []
    for name, (kind, text) in wp.corpora(n_bytes).items():
        if only and kind not in only and name not in only:
            continue
        lines = text.splitlines()
        size_mb = len(text.encode("utf-8")) / 1e6
        print(f"\n# {name} [{kind}]: {size_mb:.2f} MB, {len(lines)} lines")
        inputs = {"per line": lines, "chunks": wp.chunks_of(text), "batch lines x2": lines,
                  "batch chunks x2": wp.chunks_of(text)}
        for mode in modes:
            contenders = wp.mode_contenders(mode, pw, hf)
            if plain is not None:       # (random ids: checked apart, not compared)
                check_dropout(plain, contenders, inputs[mode], f"{name}: {mode}")
            results = compare(contenders, inputs[mode], size=size_mb, repeat=repeat,
                              check=plain is None, reference=wp.HF)
            print_table(f"{name}: {mode}", results, size_mb, baseline=wp.HF)
            summary.append((name, mode, results[wp.HF] / results[wp.PW]))
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=2.0, help="MB of each corpus (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per contender (median)")
    parser.add_argument("--only", default="", help="comma-separated kinds or corpus names (prose, code, ...)")
    parser.add_argument("--modes", default=",".join(wp.MODES), help=f"comma-separated, of: {', '.join(wp.MODES)}")
    parser.add_argument("--model", choices=sorted(MODELS), default="bpe", help="the model to train")
    parser.add_argument("--pre", choices=sorted(PRE_TOKENIZERS), default="whitespace", help="the pre-tokenizer")
    parser.add_argument("--normalizer", choices=sorted(NORMALIZERS), default="none", help="the normalizer")
    parser.add_argument("--vocab", type=int, default=8000, help="vocabulary size to train (default 8000)")
    parser.add_argument("--implementation", help="a class of pieceworks.implementations instead (its own stages)")
    parser.add_argument("--clip", action="store_true", help="CLIP's stages instead (see above)")
    parser.add_argument("--dropout", type=float, help="BPE-dropout for both sides' models (see above)")
    args = parser.parse_args(argv)
    only = {x.strip() for x in args.only.split(",") if x.strip()} or None
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    summary = run(int(args.mb * 1e6), args.repeat, only, modes, args.model, args.pre, args.normalizer, args.vocab,
                  args.implementation, args.clip, args.dropout)
    print("\n## Summary: pieceworks speed / Hugging Face's (>= 1.00 means pieceworks is at least as fast)")
    for name, mode, ratio in summary:
        print(f"{name + ': ' + mode:<48}{ratio:>8.2f}x")


if __name__ == "__main__":
    main()
