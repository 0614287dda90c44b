"""Long ASCII pieces: encoded in chunks side by side, their seams checked and repaired.

A piece of more than 48 ASCII bytes (random letters, digits under GPT-2's
pattern, a line of punctuation) is cut into chunks of about 48 bytes, and
up to eight chunks are merged at once, one merge of each in turn
(``merge_chunks``), before their seams are checked. Whatever the merges,
the result must be plain BPE of the whole piece: here against the kernel's
other route (``encode_bytes_plain``: a heap over the whole piece, no
chunks) on made-up merges over three letters, in any rank order, as a
merges list and as tiktoken-style ranks, with long runs of one letter
among them (a run ends a group of chunks); and against tiktoken on the
real vocabularies.
"""

from __future__ import annotations

import random
from array import array

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pieceworks._kernels.bytebpe import ByteBPE, Pattern
from pieceworks.reference.bpe import encode_word

LETTERS = b"abc"


def made_up_merges(seed: int, count: int, shuffle: bool) -> tuple[list[bytes], array]:
    """256 byte tokens, then up to ``count`` tokens merged from two over LETTERS (some made several
    ways, some longer than a chunk); with ``shuffle``, merges out of rank order too."""
    rng = random.Random(seed)
    token_bytes = [bytes([b]) for b in range(256)]
    ids = {t: i for i, t in enumerate(token_bytes)}
    merges, pairs = [], set()
    for _ in range(count):
        parts = list(LETTERS) + list(range(256, len(token_bytes)))
        x, y = rng.choice(parts), rng.choice(parts)
        joined = token_bytes[x] + token_bytes[y]
        if (x, y) in pairs or len(joined) > 80:
            continue
        if joined not in ids:
            ids[joined] = len(token_bytes)
            token_bytes.append(joined)
        pairs.add((x, y))
        merges.append((x, y, ids[joined]))
    if shuffle:
        for _ in range(rng.randrange(len(merges) + 1)):
            i, j = rng.randrange(len(merges)), rng.randrange(len(merges))
            merges[i], merges[j] = merges[j], merges[i]
    return token_bytes, array("I", [i for merge in merges for i in merge])


_stretch = st.tuples(st.sampled_from(["random", "run"]), st.integers(0, 400))


def long_piece(seed: int, stretches: list[tuple[str, int]]) -> str:
    rng = random.Random(seed)
    return "".join("".join(rng.choices("abc", k=n)) if kind == "random" else rng.choice("abc") * n
                   for kind, n in stretches)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32), count=st.integers(0, 400), shuffle=st.booleans(), ranks=st.booleans(),
       stretches=st.lists(_stretch, min_size=1, max_size=8))
def test_long_ascii_pieces_are_plain_bpe(seed, count, shuffle, ranks, stretches):
    token_bytes, merges = made_up_merges(seed, count, shuffle)
    kernel = ByteBPE(token_bytes, None if ranks else merges, pattern=Pattern.PAT_GPT2, whole_piece=False)
    text = long_piece(seed, stretches)
    assert kernel.encode(text) == kernel.encode_bytes_plain(text.encode()), text


@pytest.fixture(scope="module")
def tiktoken_pairs(shared_data):
    tiktoken = pytest.importorskip("tiktoken")
    import json

    from pieceworks import tiktoken as pw

    folder = shared_data / "tokenizers/tiktoken"
    meta = json.loads((folder / "encodings_meta.json").read_text())
    out = {}
    for name in ["r50k_base", "cl100k_base"]:
        ranks = pw.load_tiktoken_bpe(str(folder / f"{name}.tiktoken"))
        out[name] = (pw.Encoding(name, pat_str=meta[name]["pat_str"], mergeable_ranks=ranks, special_tokens={}),
                     tiktoken.Encoding(name, pat_str=meta[name]["pat_str"], mergeable_ranks=ranks, special_tokens={}))
    return out


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), alphabet=st.sampled_from(["abcdefghijklmnopqrstuvwxyz", "0123456789", "!?.,;:'\"-()[]{}<>/\\|@#$%^&*", "ab", "e-"]),
       size=st.integers(49, 3000))
def test_long_pieces_of_real_vocabularies_match_tiktoken(name, seed, alphabet, size, tiktoken_pairs):
    # Random letters, digits (one piece under GPT-2's pattern) and punctuation: the issue's slow inputs.
    ours, ref = tiktoken_pairs[name]
    text = "".join(random.Random(seed).choices(alphabet, k=size))
    assert ours.encode_ordinary(text) == ref.encode_ordinary(text)



def test_ranks_carrying_ids_past_two_to_the_seventeen():
    # Merges that make ids in order carry the id in the rank (id << bits | which of the merges
    # that make a token this one is), and the merge loops keep that rank above 7 bits of place in
    # 32. One token made 129 ways takes 8 bits, so an id of 2**17 or more would overflow the word
    # and wrap to a low rank: such a model must rank its merges by number instead. Here 'xy' is
    # merged last, with id 2**17: 'xyz' must still be x + yz. The filler is over bytes >= 0x80,
    # so on ASCII text plain BPE with the other merges alone (the reference) is the answer.
    token_bytes = [bytes([b]) for b in range(256)]
    merges, ascii_merges = [], []

    def add(left: int, right: int) -> None:
        token = token_bytes[left] + token_bytes[right]
        if not (merges and token_bytes[merges[-1][2]] == token):
            token_bytes.append(token)
        merges.append((left, right, len(token_bytes) - 1))
        if token.isascii():
            ascii_merges.append((token_bytes[left].decode(), token_bytes[right].decode()))

    for k in range(2, 130):                 # 'aa' ... 'a' * 129
        add(len(token_bytes) - 1 if k > 2 else ord("a"), ord("a"))
    runs = {len(t): i for i, t in enumerate(token_bytes) if t.startswith(b"a")}
    for k in range(1, 130):                 # 'a' * 130, made 129 ways
        add(runs[k], runs[130 - k])
    add(ord("y"), ord("z"))
    high = list(range(0x80, 0x100))
    pairs = []
    for x in high:
        for y in high:
            if len(token_bytes) < 2**17:
                add(x, y)
                pairs.append(len(token_bytes) - 1)
    for k in range(2**17 - len(token_bytes)):
        add(pairs[k // len(high)], high[k % len(high)])
    add(ord("x"), ord("y"))
    assert merges[-1][2] == 2**17
    kernel = ByteBPE(token_bytes, array("I", [i for merge in merges for i in merge]), pattern=Pattern.PAT_GPT2,
                     whole_piece=False)
    vocab = {t.decode("latin-1"): i for i, t in enumerate(token_bytes)}
    rng = random.Random(5)
    texts = ["xyz", "xyzxyz", "a" * 130 + "xyz"] + ["".join(rng.choices("xyza", k=n)) for n in range(2, 300, 7)]
    for text in texts:
        expected = [vocab[t] for t in encode_word(text, vocab, ascii_merges)]
        assert kernel.encode(text) == expected, text
        assert kernel.encode_bytes_plain(text.encode()) == expected, text
