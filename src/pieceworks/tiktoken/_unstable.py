"""tiktoken's ``encode_with_unstable`` (and ``_encode_bytes``): the end of a text that more text can change.

A text's last tokens are provisional: text typed after them can merge
with them (``"hello fan"`` + ``"ta"`` is not ``"hello fan"``'s tokens plus
``"ta"``'s). :func:`encode_with_unstable` returns the *stable* tokens, the
ones no continuation changes, and every way the rest can begin once more
text comes: each completion is a list of tokens that covers at least the
unstable bytes. It follows tiktoken 0.14 rule for rule, so the results are
the same sets (tiktoken's order is a hash set's; here it is sorted):

1. The unstable part is the last piece the pattern cut (none if the text
   ends with an allowed special token), grown backwards over tokens made
   only of spaces, tabs and newlines (a pattern like ``\\s*[\\r\\n]+`` can
   join them to what follows).
2. Completions: every token that begins with the unstable bytes; for each
   other place a token could start inside them, every token that begins
   with the bytes after it, re-encoded with the bytes before it and cut
   once the unstable bytes are covered; and, if the unstable bytes end in
   a White_Space char, those bytes and that char encoded apart.

>>> from pieceworks.tiktoken import Encoding, GPT2_PATTERN
>>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257, b" a": 258}
>>> enc = Encoding("toy", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
>>> encode_with_unstable(enc, "x ab", frozenset())
([120], [[32, 256], [32, 257]])
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from .._collector import paused
from ._special import special_scan

if TYPE_CHECKING:
    from .core import Encoding

__all__ = ["encode_with_unstable", "encode_bytes"]

# Token bytes that a pattern may split off or join to what comes next.
_BLANK_BYTES = frozenset(b" \n\t")


def encode_with_unstable(enc: Encoding, text: str, allowed: frozenset[str]) -> tuple[list[int], list[list[int]]]:
    """``(stable tokens, completions)`` of ``text`` (special tokens checked by the caller)."""
    tokens = enc._encode_allowing(text, allowed)
    n_last = _last_piece_token_count(enc, text, allowed)
    if n_last == 0:
        return tokens, []
    n_last = _grow_over_blank_tokens(enc, tokens, n_last)
    unstable = enc.decode_bytes(tokens[len(tokens) - n_last:])
    stable = tokens[:len(tokens) - n_last]
    if not unstable:
        return stable, []
    # A short unstable end (" ") can have a million completions: the collector's passes over
    # them took a third of the time, and they hold no cycles.
    with paused(True):
        completions = _tokens_starting_with(enc, unstable) | _straddling_completions(enc, unstable)
        split = _split_at_last_blank(enc, unstable)
        if split is not None:
            completions.add(split)
        return stable, list(map(list, sorted(completions)))


def encode_bytes(enc: Encoding, data: bytes) -> list[int]:
    """tiktoken's ``_encode_bytes``: tokens of bytes that may not be UTF-8 (no special tokens).

    The valid UTF-8 before the first bad byte is encoded as text; its
    unstable end (as in :func:`encode_with_unstable`) and all the bytes from
    the bad one on are then one piece: a token if they are one, else merges.

    >>> from pieceworks.tiktoken import Encoding, GPT2_PATTERN
    >>> enc = Encoding("toy", pat_str=GPT2_PATTERN, mergeable_ranks={bytes([b]): b for b in range(256)} | {b"ab": 256},
    ...                special_tokens={})
    >>> encode_bytes(enc, b"x a\\xffab"), encode_bytes(enc, b"ab")
    ([120, 32, 97, 255, 256], [256])
    """
    try:
        return enc.encode_ordinary(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        valid = exc.start
    text = data[:valid].decode("utf-8")
    tokens = enc._encode_plain(text)
    n_last = _last_piece_token_count(enc, text, frozenset())
    if tokens and n_last > 0:
        n_last = _grow_over_blank_tokens(enc, tokens, n_last)
        rest = enc.decode_bytes(tokens[len(tokens) - n_last:]) + data[valid:]
        del tokens[len(tokens) - n_last:]
    else:
        rest = data[valid:]
    tokens += enc._core.encode_bytes_piece(rest)     # the token it is, else merges
    return tokens


def _last_piece_token_count(enc: Encoding, text: str, allowed: frozenset[str]) -> int:
    """Tokens of the last piece the pattern cut, 0 if the text ends with a special token (or is empty)."""
    tail = text
    found = special_scan(allowed).spans(text) if allowed else []
    if found:
        tail = text[found[-1][1]:]
    if not tail:
        return 0
    if enc._split_regex is not None:
        start = None
        for match in enc._split_regex.finditer(tail):
            start = match.start()
        if start is None:
            return 0
    else:
        from .._kernels.bytebpe import last_piece_start

        start = last_piece_start(enc._core.pattern, tail)
    return len(enc._encode_single_piece(tail[start:]))


def _grow_over_blank_tokens(enc: Encoding, tokens: list[int], n_last: int) -> int:
    """``n_last``, grown over the blank tokens before the last piece when it starts with one."""
    def blank(token: int) -> bool:
        return token not in enc._special_token_values and set(enc._core.token_bytes(token)) <= _BLANK_BYTES

    if blank(tokens[-n_last]):
        while n_last < len(tokens) and blank(tokens[-n_last - 1]):
            n_last += 1
    return n_last


def _starting_with(sorted_tokens: list[bytes], prefix: bytes) -> range:
    """Where the tokens (bytes, in order) that begin with ``prefix`` are in ``sorted_tokens``.

    >>> _starting_with([b"a", b"ab", b"ab\\xff", b"ac"], b"ab"), _starting_with([b"\\xff", b"\\xff\\xff"], b"\\xff")
    (range(1, 3), range(0, 2))
    """
    start = bisect_left(sorted_tokens, prefix)
    # Past them: the prefix with its trailing 0xFF bytes dropped and its last byte raised.
    head = prefix.rstrip(b"\xff")
    end = bisect_left(sorted_tokens, head[:-1] + bytes([head[-1] + 1]), start) if head else len(sorted_tokens)
    return range(start, end)


def _tokens_starting_with(enc: Encoding, unstable: bytes) -> set[tuple[int, ...]]:
    found = _starting_with(enc._sorted_token_bytes, unstable)
    return set(zip(enc._sorted_token_ranks[found.start:found.stop]))


def _straddling_completions(enc: Encoding, unstable: bytes) -> set[tuple[int, ...]]:
    """For each later start of a token inside ``unstable``: the bytes before it plus each token
    that begins with the bytes after it, re-encoded and cut once ``unstable`` is covered."""
    out = set()
    tokens = enc._sorted_token_bytes
    # A token that begins with the bytes after i is at least that long: earlier starts find none.
    longest = enc._core.max_token_len
    for i in range(max(1, len(unstable) - longest), len(unstable)):
        prefix, suffix = unstable[:i], unstable[i:]
        found = _starting_with(tokens, suffix)
        for token in tokens[found.start:found.stop]:
            possibility = prefix + token
            try:
                encoded = enc.encode_ordinary(possibility.decode("utf-8"))
            except UnicodeDecodeError:
                encoded = enc._core.encode_bytes_plain(possibility)
            out.add(_covering(enc, encoded, len(unstable)))
    return out


def _covering(enc: Encoding, encoded: list[int], length: int) -> tuple[int, ...]:
    """The first tokens of ``encoded`` whose bytes reach ``length``."""
    covered = 0
    for k, token in enumerate(encoded):
        covered += len(enc._core.token_bytes(token))
        if covered >= length:
            return tuple(encoded[:k + 1])
    return tuple(encoded)


def _split_at_last_blank(enc: Encoding, unstable: bytes) -> tuple[int, ...] | None:
    """``unstable`` less its last char, then that char, each by merges alone, if that char is
    White_Space (a pattern's ``\\s+(?!\\S)`` can split it off once more text follows)."""
    if len(unstable) < 2:
        return None
    size = _last_char_size(unstable)
    if size is None or size == len(unstable):
        return None
    import regex

    if not regex.match(r"\p{White_Space}", unstable[-size:].decode("utf-8")):
        return None
    plain = enc._core.encode_bytes_plain
    return tuple(plain(unstable[:-size]) + plain(unstable[-size:]))


def _last_char_size(data: bytes) -> int | None:
    """Bytes of the valid UTF-8 char that ends ``data``, or None if it does not end with one."""
    for size in range(1, min(4, len(data)) + 1):
        try:
            data[-size:].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return size
    return None
