"""Every tokenizer.json in ../shared/data through pieceworks.Tokenizer and Hugging Face, in one run.

    python benchmarks/bench_tokenizer_files.py              # 300 KB of prose, code and multilingual text
    python benchmarks/bench_tokenizer_files.py --size 1     # 1 MB each
    python benchmarks/bench_tokenizer_files.py --files qwen3,neox   # only the files whose folder holds one

For each file (byte-level BPE, SentencePiece-style BPE, Unigram, WordPiece)
and each corpus (and the multilingual one in NFD, decomposed: what files with an
NFC normalizer must put back together): the text as one string, and its lines as one batch, on the
default threads of each library; then its lines one ``encode`` call each, as
they are and as turns between the file's own special tokens (its chat template
where bench_bpe_encode knows it: what a data loader or a server does), as
pre-tokenized words (``is_pretokenized=True``, a token-classification pipeline's input; one
call each and batched),
and two lines at a time as pairs, one call each and batched (what a sentence-pair
classifier or a cross-encoder reranker passes; the file's own padding and
truncation apply). Ids are
checked equal before a speed is reported. The last column says which way pieceworks took: the fused plan's
name, or "general" (the Python pipeline, for stages no plan covers). Quote
the ratios: the machine is shared.
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bpe_encode import CHAT_TURNS, corpora  # noqa: E402
from harness import compare, file_bench_options, hugging_face, tokenizer_files  # noqa: E402


def turn_template(path: Path, tok) -> str:
    """The file's chat turn (CHAT_TURNS), else its first and last special tokens around a line."""
    if path.parent.name in CHAT_TURNS:
        return CHAT_TURNS[path.parent.name]
    special = [t.content for _, t in sorted(tok.get_added_tokens_decoder().items()) if t.special]
    return f"{special[0]}{{}}{special[-1]}" if special else "{}"


#: Lines of a corpus encoded one call each (enough for a steady rate, few enough for a quick run).
ONE_BY_ONE_LINES = 3000


def main(argv=None) -> int:
    args = file_bench_options(__doc__, 0.3, 3, argv)
    tokenizers = hugging_face()
    if tokenizers is None:
        return 0
    from pieceworks import Tokenizer

    texts = corpora(int(args.size * 1_000_000))
    texts["multi NFD"] = unicodedata.normalize("NFD", texts["multilingual"])
    print(f"# pieceworks.Tokenizer against tokenizers {tokenizers.__version__}: speed ratio (above 1: "
          f"pieceworks faster), {args.size:g} MB per corpus, median of {args.repeat}")
    print(f"{'file':<28}{'corpus':<14}{'one string':>12}{'lines':>10}{'1 by 1':>10}{'turns 1 by 1':>14}{'words':>10}"
          f"{'word batch':>12}{'pairs':>10}{'pair batch':>12}  way")
    for path in tokenizer_files(args.files):
        ours, theirs = Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
        plan = ours._current_plan()
        way = "general" if plan is None else type(plan).__name__
        template = turn_template(path, ours)
        for corpus, text in texts.items():
            lines = text.splitlines(keepends=True)
            few = [line.strip() for line in lines if line.strip()][:ONE_BY_ONE_LINES]
            turns = [template.format(line) for line in few]
            words = [line.split() for line in few]      # (pre-tokenized, as token-classification pipelines pass it)
            pairs = list(zip(few[::2], few[1::2]))
            size = len(text.encode("utf-8")) / 1e6
            cells = []
            for arg, mine, hf in ((text, lambda t: ours.encode(t).ids, lambda t: theirs.encode(t).ids),
                                  (lines, lambda ts: [e.ids for e in ours.encode_batch(ts)],
                                   lambda ts: [e.ids for e in theirs.encode_batch(ts)]),
                                  (few, lambda ts: [ours.encode(t).ids for t in ts],
                                   lambda ts: [theirs.encode(t).ids for t in ts]),
                                  (turns, lambda ts: [ours.encode(t).ids for t in ts],
                                   lambda ts: [theirs.encode(t).ids for t in ts]),
                                  (words, lambda ws: [ours.encode(w, is_pretokenized=True).ids for w in ws],
                                   lambda ws: [theirs.encode(w, is_pretokenized=True).ids for w in ws]),
                                  (words, lambda ws: [e.ids for e in ours.encode_batch(ws, is_pretokenized=True)],
                                   lambda ws: [e.ids for e in theirs.encode_batch(ws, is_pretokenized=True)]),
                                  (pairs, lambda ps: [ours.encode(a, b).ids for a, b in ps],
                                   lambda ps: [theirs.encode(a, b).ids for a, b in ps]),
                                  (pairs, lambda ps: [e.ids for e in ours.encode_batch(ps)],
                                   lambda ps: [e.ids for e in theirs.encode_batch(ps)])):
                seconds = compare({"pieceworks": mine, "tokenizers": hf}, arg, size, repeat=args.repeat)
                cells.append(f"{seconds['tokenizers'] / seconds['pieceworks']:.2f}x")
            print(f"{path.parent.name[:27]:<28}{corpus:<14}{cells[0]:>12}{cells[1]:>10}{cells[2]:>10}{cells[3]:>14}"
                  f"{cells[4]:>10}{cells[5]:>12}{cells[6]:>10}{cells[7]:>12}  {way}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
