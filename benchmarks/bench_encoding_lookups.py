"""Encoding's position look-ups (char_to_token, char_to_word, token_to_chars, token_to_word,
token_to_sequence, word_to_tokens, word_to_chars) against Hugging Face's, on real encodings.

Question answering and span labelling call them per answer and per
entity: each ``Encoding`` here is a pair (a question-sized text and a
context) truncated to ``--max-length`` tokens, as a QA pipeline makes them,
of English prose and of multilingual text. The first row encodes the pairs
and looks up an answer's first and last char in each (a pieceworks encoding
works out its offsets when first read); each other row calls one look-up at
every position of every encoding already read once. Every row checks that
both libraries answer the same, and prints pieceworks' speed relative to
Hugging Face's (higher is faster). Quote the ratios: the machine is shared.

    python benchmarks/bench_encoding_lookups.py --files llama3,bert --max-length 384
"""

from __future__ import annotations

import argparse
import json

from harness import SHARED_DATA, chosen, compare, hugging_face, read_corpus

FILES = {
    "llama3": "tokenizers/hf_tokenizer_json/llama3/tokenizer.json",
    "gpt-neox-20b": "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json",   # trims offsets
    "bert": "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json",
}


def pairs(kind: str, count: int, context_chars: int) -> list[tuple[str, str]]:
    """``count`` (question, context) pairs cut from a corpus: the question is the context's next 80 chars."""
    if kind == "prose":
        text = read_corpus("corpora/english/nltk_data_2008/gutenberg/austen-emma.txt", 2_000_000)
    else:
        with (SHARED_DATA / "corpora/multilingual/udhr_532_languages.jsonl").open(encoding="utf-8") as f:
            text = "\n".join(json.loads(line)["text"] for line in f)
    step = context_chars + 80
    return [(text[k + context_chars:k + step], text[k:k + context_chars])
            for k in range(0, min(len(text) - step, count * step), step)]


def lookups(max_chars: int) -> dict[str, callable]:
    """``{name: calls(encodings)}``: each calls its look-up at every position of every encoding."""
    return {
        "char_to_token": lambda es: [e.char_to_token(p, 1) for e in es for p in range(0, max_chars, 3)],
        "char_to_word": lambda es: [e.char_to_word(p, 1) for e in es for p in range(0, max_chars, 3)],
        "token_to_chars": lambda es: [e.token_to_chars(i) for e in es for i in range(len(e))],
        "token_to_word": lambda es: [e.token_to_word(i) for e in es for i in range(len(e))],
        "token_to_sequence": lambda es: [e.token_to_sequence(i) for e in es for i in range(len(e))],
        "word_to_tokens": lambda es: [e.word_to_tokens(w, 1) for e in es for w in range(0, len(e), 2)],
        "word_to_chars": lambda es: [e.word_to_chars(w, 1) for e in es for w in range(0, len(e), 2)],
    }


def answer_spans(ours, theirs, batch: list, repeat: int) -> float:
    """Hugging Face's time over ours for a QA pipeline's step: encode the pairs, then find the tokens
    of an answer's first and last char in each. (Timed together: a pieceworks encoding works out
    its offsets when first read, where Hugging Face's encoding already spent the time.)"""
    answers = [(len(context) // 3, len(context) // 2) for _, context in batch]

    def step(tok):
        return lambda _: [(e.char_to_token(a, 1), e.char_to_token(b, 1))
                          for e, (a, b) in zip(tok.encode_batch(batch), answers)]

    seconds = compare({"pieceworks": step(ours), "tokenizers": step(theirs)}, None, size=1, repeat=repeat)
    return seconds["tokenizers"] / seconds["pieceworks"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", default="", help="comma-separated names of " + ", ".join(FILES))
    parser.add_argument("--max-length", type=int, default=384, help="tokens an encoding is truncated to")
    parser.add_argument("--pairs", type=int, default=200, help="encodings per corpus")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per row (median)")
    args = parser.parse_args(argv)
    tokenizers = hugging_face()
    if tokenizers is None:
        return
    from pieceworks import Tokenizer

    context_chars = 4 * args.max_length
    for name, relative in FILES.items():
        if not chosen(name, args.files):
            continue
        ours = Tokenizer.from_file(str(SHARED_DATA / relative))
        theirs = tokenizers.Tokenizer.from_file(str(SHARED_DATA / relative))
        for tok in (ours, theirs):
            tok.enable_truncation(args.max_length, strategy="only_second")
        for kind in ("prose", "multilingual"):
            batch = pairs(kind, args.pairs, context_chars)
            mine, hf = ours.encode_batch(batch), theirs.encode_batch(batch)
            print(f"\n## {name}, {kind}: {len(batch)} pairs of {args.max_length} tokens at most")
            print(f"{'look-up':<20}{'pieceworks vs Hugging Face':>28}")
            print(f"{'encode + answer':<20}{answer_spans(ours, theirs, batch, args.repeat):>27.2f}x")
            for lookup, calls in lookups(context_chars).items():
                seconds = compare({"pieceworks": lambda _: calls(mine), "tokenizers": lambda _: calls(hf)},
                                  None, size=1, repeat=args.repeat)
                print(f"{lookup:<20}{seconds['tokenizers'] / seconds['pieceworks']:>27.2f}x")


if __name__ == "__main__":
    main()
