"""Which tokens plain BPE of their own bytes gives back, the last merge that makes each, and the
seam check built on them.

The byte-level kernel works this table out from the merges, shortest tokens
first, with the seam check (``ByteBPE._mark_rebuilds``); ``_rebuild_table_by_bpe``
works it out the direct way, running BPE on every token's bytes. Every
encoding reads the table (whole-piece look-ups and the seam check trust it),
so the two must agree exactly: on the real vocabularies, and on made-up merges
in any order, a token made several ways, or made before its parts.

The seam check replays merges highest rank first, which is BPE's order only
when each merge ranks above its parts' merges; tokens made otherwise (Llama 3
has some) are "inexact", and their seams are checked by running BPE.
"""

from __future__ import annotations

import json
import random
import sys
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks import Tokenizer
from pieceworks._kernels.bytebpe import ByteBPE, Pattern
from pieceworks.tiktoken import Encoding, load_tiktoken_bpe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
from _common import Input  # noqa: E402
from fuzz_bytebpe_merges import direct_inexact, made_merges  # noqa: E402

JSON_FILES = ["llama3", "qwen3", "gpt-neox-20b"]
RANK_FILES = ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"]


def assert_same_table(kernel: ByteBPE) -> None:
    ours, direct = kernel._rebuild_table(), kernel._rebuild_table_by_bpe()
    assert ours[0] == direct[0], "tokens marked as rebuilding differ"
    assert ours[1] == direct[1], "last merges differ"
    assert kernel._inexact_tokens() == direct_inexact(*direct)


@pytest.mark.parametrize("name", JSON_FILES)
def test_tokenizer_json_vocabularies(name, shared_data):
    tok = Tokenizer.from_file(str(shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json"))
    kernel = tok._current_plan()._current_kernel()
    assert kernel is not None
    assert_same_table(kernel)


@pytest.mark.parametrize("name", RANK_FILES)
def test_tiktoken_rank_files(name, shared_data):
    folder = shared_data / "tokenizers/tiktoken"
    meta = json.loads((folder / "encodings_meta.json").read_text())[name]
    enc = Encoding(name, pat_str=meta["pat_str"], mergeable_ranks=load_tiktoken_bpe(str(folder / f"{name}.tiktoken")),
                   special_tokens=meta["special_tokens"])
    assert_same_table(enc._core)


def made_up_merges(seed: int) -> tuple[list[bytes], array]:
    """The fuzz harness's merges (pairs of tokens over a few letters, so most tokens are made several
    ways, some swapped out of rank order: merges then name tokens later merges make, and many tokens
    are not what BPE of their bytes gives), read off ``seed``'s random bytes."""
    return made_merges(Input(random.Random(seed).randbytes(600)))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_made_up_merges(seed):
    token_bytes, merges = made_up_merges(seed)
    assert_same_table(ByteBPE(token_bytes, merges, pattern=Pattern.PAT_GPT2, whole_piece=False))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_made_up_ranks(seed):
    # tiktoken's form: a token's rank is its id, and every split into two tokens merges into it,
    # ties and all; ranks shuffled, so a token may rank before its parts.
    token_bytes, _ = made_up_merges(seed)
    rng = random.Random(seed)
    merged = token_bytes[256:]
    rng.shuffle(merged)
    assert_same_table(ByteBPE(token_bytes[:256] + merged, None, pattern=Pattern.PAT_GPT2, whole_piece=True))


def test_made_up_merges_reach_the_hard_cases():
    # What makes the table hard occurs among the cases the tests above draw from: tokens BPE does
    # not give back, tokens made several ways, and merges out of rank order (inexact tokens).
    seen = {"not given back": 0, "made several ways": 0, "some tokens inexact": 0, "all exact": 0}
    for seed in range(40):
        token_bytes, merges = made_up_merges(seed)
        kernel = ByteBPE(token_bytes, merges, pattern=Pattern.PAT_GPT2, whole_piece=False)
        rebuilds, _ = kernel._rebuild_table()
        seen["not given back"] += any(not rebuilds[t >> 3] >> (t & 7) & 1 for t in range(256, len(token_bytes)))
        made = [merges[k + 2] for k in range(0, len(merges), 3)]
        seen["made several ways"] += len(set(made)) < len(made)
        seen["some tokens inexact" if kernel._inexact_tokens() else "all exact"] += 1
    assert all(count >= 4 for count in seen.values()), seen


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32), length=st.integers(40, 1500), accents=st.booleans())
def test_encoding_is_plain_bpe_with_merges_in_any_order(seed, length, accents):
    # Long pieces are cut into chunks whose seams are checked, and text with multi-byte chars is
    # merged from its chars' tokens, its seams checked too: by the replay, or by BPE next to an
    # inexact token.
    token_bytes, merges = made_up_merges(seed)
    kernel = ByteBPE(token_bytes, merges, pattern=Pattern.PAT_GPT2, whole_piece=False)
    rng = random.Random(seed)
    text = "".join(rng.choice("abcé" if accents else "abc") for _ in range(length))     # one piece
    assert kernel.encode(text) == kernel.encode_bytes_plain(text.encode()), (kernel._inexact_tokens(), text)


def made_up_runs(seed: int, unit: bytes) -> tuple[list[bytes], array]:
    """Tokens of runs of the char ``unit`` (its bytes merged first, when it has several), each
    merged from two runs already made (lengths double quickly, so some reach hundreds of bytes; a
    run may be made several ways), then some merges swapped out of rank order."""
    rng = random.Random(seed)
    token_bytes = [bytes([b]) for b in range(256)]
    ids, merges = {}, []
    made = unit[:1]
    for b in unit[1:]:      # the char itself
        token_bytes.append(made + bytes([b]))
        merges.append((token_bytes.index(made), b, len(token_bytes) - 1))
        made += bytes([b])
    ids[1] = token_bytes.index(unit)
    pairs = set()
    for _ in range(rng.randrange(1, 40)):
        x, y = rng.choice(list(ids)), rng.choice(list(ids))
        if (x, y) in pairs or (x + y) * len(unit) > 400:
            continue
        if x + y not in ids:
            ids[x + y] = len(token_bytes)
            token_bytes.append(unit * (x + y))
        pairs.add((x, y))
        merges.append((ids[x], ids[y], ids[x + y]))
    for _ in range(rng.randrange(len(merges) + 1)):
        i, j = rng.randrange(len(merges)), rng.randrange(len(merges))
        merges[i], merges[j] = merges[j], merges[i]
    return token_bytes, array("I", [i for merge in merges for i in merge])


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32), unit=st.sampled_from(["a", "é", "—", "😀"]),
       runs=st.lists(st.integers(0, 600), min_size=1, max_size=4), ranks=st.booleans())
def test_long_runs_of_one_char_are_plain_bpe(seed, unit, runs, ranks):
    # A long run of one char is cut into copies of the longest token of it that BPE gives back and
    # that does not merge with itself; here runs with a char between them (of the run's class, so
    # the text is one piece), over run tokens that BPE may not give back, that may merge with
    # themselves, with merges out of rank order.
    token_bytes, merges = made_up_runs(seed, unit.encode())
    kernel = ByteBPE(token_bytes, None if ranks else merges, pattern=Pattern.PAT_GPT2, whole_piece=ranks)
    text = ("b" if unit.isalpha() else "-").join(unit * count for count in runs)
    plain = kernel.encode_bytes_piece if ranks else kernel.encode_bytes_plain
    assert kernel.encode(text) == plain(text.encode()), (text.count(unit), [len(t) for t in token_bytes[256:]])



def test_a_run_is_cut_into_the_char_alone_only_when_its_copies_stay_apart():
    # With no longer token of a run that BPE gives back and that stays apart from its copies, the
    # char's own token may be the one: each copy one char ('é' here, no 'éé' token). But not when
    # two copies merge: 'a' with tokens of 2, 4, ..., 512 'a's, each the next one's half, so none
    # the run search reads (256 bytes at most) stays apart, and neither does 'a'.
    token_bytes = [bytes([b]) for b in range(256)] + ["é".encode()]
    merges = [(0xC3, 0xA9, 256)]
    made = ord("a")
    for length in [2, 4, 8, 16, 32, 64, 128, 256, 512]:
        token_bytes.append(b"a" * length)
        merges.append((made, made, len(token_bytes) - 1))
        made = len(token_bytes) - 1
    kernel = ByteBPE(token_bytes, array("I", [i for merge in merges for i in merge]), pattern=Pattern.PAT_GPT2,
                     whole_piece=False)
    for text in ["é" * 3000, "xé" * 40 + "é" * 3000 + "a", "a" * 3000, "é" + "a" * 1500 + "é" * 700 + "a" * 90]:
        assert kernel.encode(text) == kernel.encode_bytes_plain(text.encode()), text[:20]
    assert kernel.encode("é" * 3000) == [256] * 3000


@pytest.mark.parametrize("name", ["qwen3", "llama3", "gpt-neox-20b"])
def test_runs_of_chars_no_longer_token_holds_match_hugging_face(name, shared_data):
    # Combining marks after a letter (one piece: letters and marks), CJK, emoji, Thai: long runs
    # whose char is, in most vocabularies, the longest token of the run that stays apart.
    tokenizers = pytest.importorskip("tokenizers")
    path = str(shared_data / f"tokenizers/hf_tokenizer_json/{name}/tokenizer.json")
    ours, theirs = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)
    for text in ["e" + "\u0301" * 3000, "a" + "\u0316" * 200 + "\u0301" * 2000, "漢" * 2000 + "字",
                 "😀" * 1500, "ก" * 2500 + "ข", "x" + "\u0301\u0302" * 1500, "\u0301" * 2500]:
        assert ours.encode(text).ids == theirs.encode(text).ids, text[:4]


def test_llama3_seams_next_to_its_inexact_tokens(shared_data):
    # Llama 3's tokens added after tiktoken's make some of tiktoken's (".:." of ".:.:"), so their
    # merges run out of rank order; the replay got some seams next to them wrong (" б" "ерату").
    tok = Tokenizer.from_file(str(shared_data / "tokenizers/hf_tokenizer_json/llama3/tokenizer.json"))
    kernel = tok._current_plan()._current_kernel()
    inexact = kernel._inexact_tokens()
    assert 50 < len(inexact) < 1000
    rebuilds, _ = kernel._rebuild_table()
    given_back = [t for t in range(kernel.n_ids) if rebuilds[t >> 3] >> (t & 7) & 1]
    rng = random.Random(5)
    for x in inexact:
        for y in rng.sample(given_back, 300):
            for pair in ((x, y), (y, x)):
                check, bpe = kernel._seam_holds(*pair)
                assert check == bpe, [kernel.token_bytes(t) for t in pair]
