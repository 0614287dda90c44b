"""The byte-level kernel's look-ups of byte strings (``bytebpe.vocab_find``, ``cache_find``) are exact.

A key of up to 8 bytes is found by its 64-bit hash alone, with no compare of
its bytes: a token in the vocabulary, a piece in the piece cache (whose slots
keep the hash in two parts). That is exact only because the hash is one-to-one
on such keys (``bytebpe.hash_bytes``). These tests keep a readable copy of the
hash, check that it is the kernel's, and invert it: to show it is one-to-one,
and to build keys whose hash is one bit away from a token's or a cached
piece's (8 bytes) or equal to it (16 bytes, where the bytes must be compared).
None of them may be taken for the other.
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks._kernels.bytebpe import ByteBPE, Pattern, _key_hash

pytestmark = pytest.mark.skipif(sys.byteorder != "little",
                                reason="the copy of the hash reads 8-byte words little-endian, as x86 and ARM do")

M64 = (1 << 64) - 1
START = 0x9E3779B97F4A7C15
PER_BYTE_OF_LENGTH = 0xFF51AFD7ED558CCD
ROUND = 0x9FB21C651E98DF25
MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def xorshift(x: int, s: int) -> int:
    return x ^ (x >> s)


def unxorshift(y: int, s: int) -> int:
    """The x with ``xorshift(x, s) == y``."""
    x = y
    for _ in range(64 // s + 1):
        x = y ^ (x >> s)
    return x


def mix64(x: int) -> int:
    x = xorshift(x, 30) * MIX[0] & M64
    x = xorshift(x, 27) * MIX[1] & M64
    return xorshift(x, 31)


def unmix64(y: int) -> int:
    y = unxorshift(y, 31) * pow(MIX[1], -1, 1 << 64) & M64
    y = unxorshift(y, 27) * pow(MIX[0], -1, 1 << 64) & M64
    return unxorshift(y, 30)


def start(n: int) -> int:
    return START ^ (n * PER_BYTE_OF_LENGTH & M64)


def full_round(h: int, word: int) -> int:
    """One 8-byte step of the hash."""
    return xorshift((h ^ word) * ROUND & M64, 29)


def word_for(h_before: int, h_after: int) -> int:
    """The 8-byte word that takes the hash from ``h_before`` to ``h_after`` in a full round."""
    return (unxorshift(h_after, 29) * pow(ROUND, -1, 1 << 64) & M64) ^ h_before


def key_hash(key: bytes) -> int:
    """What ``bytebpe.hash_bytes`` computes, step by step."""
    h = start(len(key))
    while len(key) >= 8:
        h = full_round(h, int.from_bytes(key[:8], "little"))
        key = key[8:]
    if key:
        h = (h ^ int.from_bytes(key, "little")) * ROUND & M64
    return mix64(h)


def key_of_hash(h: int, n: int) -> bytes | None:
    """The ``n``-byte key (``1 <= n <= 8``) whose hash is ``h``, or None if there is none."""
    before = unmix64(h)
    if n == 8:
        word = word_for(start(8), before)
    else:
        word = (before * pow(ROUND, -1, 1 << 64) & M64) ^ start(n)
        if word >> (8 * n):
            return None
    return word.to_bytes(8, "little")[:n]


def model_with(token: bytes) -> ByteBPE:
    """The 256 bytes (ids 0-255) and ``token`` (id 256), no merges."""
    return ByteBPE([bytes([i]) for i in range(256)] + [token], None, pattern=Pattern.PAT_CL100K, whole_piece=True)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=40))
def test_the_copy_is_the_kernels_hash(key):
    assert _key_hash(key) == key_hash(key)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=8))
def test_the_hash_is_one_to_one_up_to_8_bytes(key):
    # Each key's hash leads back to it: no other key of its length has that hash.
    assert key_of_hash(key_hash(key), len(key)) == key


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=8, max_size=8), st.integers(0, 63))
def test_an_8_byte_key_one_hash_bit_away_is_not_the_token(token, bit):
    near = key_of_hash(key_hash(token) ^ (1 << bit), 8)
    assert near != token and _key_hash(near) == key_hash(token) ^ (1 << bit)
    bpe = model_with(token)
    assert bpe.encode_bytes_piece(token) == [256]
    assert bpe.encode_bytes_piece(near) == list(near)


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=16, max_size=16), st.binary(min_size=8, max_size=8))
def test_a_16_byte_key_with_the_tokens_hash_is_not_the_token(token, first):
    # The same length and the same 64-bit hash, other bytes: only comparing the bytes tells them apart.
    second = word_for(full_round(start(16), int.from_bytes(first, "little")), unmix64(key_hash(token)))
    twin = first + second.to_bytes(8, "little")
    if twin == token:
        return
    assert _key_hash(twin) == _key_hash(token)
    bpe = model_with(token)
    assert bpe.encode_bytes_piece(token) == [256]
    assert bpe.encode_bytes_piece(twin) == list(twin)


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=8, max_size=8), st.sampled_from([0, *range(48, 64)]))
def test_an_8_byte_piece_one_hash_bit_away_from_a_cached_one_is_not_it(piece, bit):
    # The bits a cache slot's tag leaves out (the lowest, which the tag sets, and the top 16, where the
    # tag keeps the generation): the two pieces have the same tag and start at the same slot.
    near = key_of_hash(key_hash(piece) ^ (1 << bit), 8)
    bpe = ByteBPE([bytes([i]) for i in range(256)], None, pattern=Pattern.PAT_CL100K, whole_piece=True)
    assert bpe.encode_bytes_piece(piece) == list(piece)      # (not a token: merged, then cached)
    assert bpe.encode_bytes_piece(near) == list(near)
    assert bpe.encode_bytes_piece(piece) == list(piece)
