"""Decoding ids back to text: pieceworks against Hugging Face and tiktoken, in one process run.

    python benchmarks/bench_decode.py               # every tokenizer.json in ../shared/data, and cl100k/o200k
    python benchmarks/bench_decode.py --files gemma3,ruT5

For each tokenizer.json (ByteLevel, SentencePiece's Replace/ByteFallback/Fuse/Strip
chain, Metaspace, WordPiece): the ids of the prose, multilingual and code corpora
(0.2 MB each) decoded as one list, as lists of 8 ids, one decode call each,
and one id at a time through a DecodeStream (what a server streaming a
generation does: Hugging Face's DecodeStream is the peer). Then tiktoken's encodings through
the tiktoken face and tiktoken, and SentencePiece .model files (Llama 2's with byte
fallback, T5's, the Japanese test model) through the SentencePiece face and
sentencepiece (no stream column: sentencepiece has none). Outputs are checked equal before a speed is
reported; the table prints speed ratios (above 1: pieceworks faster). Quote the
ratios: the machine is shared.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bpe_encode import corpora  # noqa: E402
from harness import SHARED_DATA, chosen, compare, file_bench_options, hugging_face, tokenizer_files  # noqa: E402

#: Ids a decode call gets in the one-call-each column.
STEP = 8


def main(argv=None) -> int:
    args = file_bench_options(__doc__, 0.2, 5, argv)
    from pieceworks import Tokenizer

    texts = corpora(int(args.size * 1_000_000))
    print(f"# decode: speed ratio to the peer (above 1: pieceworks faster), {args.size:g} MB per corpus, "
          f"median of {args.repeat}")
    print(f"{'file':<28}{'corpus':<14}{'tokens':>9}{'one list':>10}{f'{STEP} ids a call':>14}{'stream':>8}  peer")
    tokenizers = hugging_face("no tokenizer.json rows")
    for path in tokenizer_files(args.files) if tokenizers else []:
        ours, theirs = Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
        for tok in (ours, theirs):
            tok.no_truncation()
            tok.no_padding()
        for corpus, text in texts.items():
            ids = ours.encode(text).ids
            row(path.parent.name, corpus, ids, ours.decode, theirs.decode, "tokenizers", args.repeat,
                streams=(lambda: stream_all(ours, ids), lambda: stream_all(theirs, ids)))
    spm_rows(texts, args)
    try:
        import tiktoken
    except ImportError:
        print("tiktoken is not installed: no tiktoken rows")
        return 0
    from pieceworks import tiktoken as face

    face.set_data_dir(SHARED_DATA / "tokenizers/tiktoken")
    for name in ("cl100k_base", "o200k_base"):
        if not chosen(name, args.files):
            continue
        ours = face.get_encoding(name)
        # (tiktoken's own get_encoding downloads the ranks: the same ranks are given to it here.)
        theirs = tiktoken.Encoding(name, pat_str=ours._pat_str, mergeable_ranks=ours._mergeable_ranks,
                                   special_tokens=ours._special_tokens)
        for corpus, text in texts.items():
            row(name, corpus, ours.encode_ordinary(text), ours.decode, theirs.decode, "tiktoken", args.repeat)
    return 0


#: SentencePiece models the sentencepiece rows decode with (under tokenizers/sentencepiece).
SPM_MODELS = ["llama2/tokenizer.model", "hf_transformers_fixtures/spiece.model", "sentencepiece_test_ja_model.model"]


def spm_rows(texts: dict[str, str], args) -> None:
    """The SentencePiece face against sentencepiece: each model's ids of each corpus decoded."""
    try:
        import sentencepiece
    except ImportError:
        print("sentencepiece is not installed: no sentencepiece rows")
        return
    from pieceworks import sentencepiece as face

    for name in SPM_MODELS:
        if not chosen(name, args.files):
            continue
        path = str(SHARED_DATA / "tokenizers/sentencepiece" / name)
        ours, theirs = face.SentencePieceProcessor(model_file=path), sentencepiece.SentencePieceProcessor(model_file=path)
        for corpus, text in texts.items():
            row(name.split("/")[0], corpus, theirs.encode(text), ours.decode, theirs.decode, "sentencepiece",
                args.repeat)


def row(name: str, corpus: str, ids: list[int], ours, theirs, peer: str, repeat: int, streams=None) -> None:
    """One line of the table; ``streams``: (ours, theirs), each streaming all the ids (None: no column)."""
    chunks = [ids[k:k + STEP] for k in range(0, len(ids), STEP)]
    cells = []
    runs = [(ids, ours, theirs), (chunks, lambda cs: [ours(c) for c in cs], lambda cs: [theirs(c) for c in cs])]
    if streams is not None:
        runs.append((None, lambda _: streams[0](), lambda _: streams[1]()))
    for arg, mine, other in runs:
        seconds = compare({"pieceworks": mine, peer: other}, arg, len(ids), unit="tokens", repeat=repeat)
        cells.append(f"{seconds[peer] / seconds['pieceworks']:.2f}x")
    stream = cells[2] if streams is not None else "-"
    print(f"{name[:27]:<28}{corpus:<14}{len(ids):>9}{cells[0]:>10}{cells[1]:>14}{stream:>8}  {peer}", flush=True)


def stream_all(tokenizer, ids: list[int]) -> list:
    """Each id through a DecodeStream of ``tokenizer``'s library, one step each: the pieces."""
    if type(tokenizer).__module__.startswith("pieceworks"):
        from pieceworks.decoders import DecodeStream
    else:
        from tokenizers.decoders import DecodeStream
    stream = DecodeStream(skip_special_tokens=False)
    return [stream.step(tokenizer, tid) for tid in ids]


if __name__ == "__main__":
    sys.exit(main())
