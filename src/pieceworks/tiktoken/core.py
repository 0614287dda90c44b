"""tiktoken's ``Encoding`` (``tiktoken.core``) on pieceworks' byte-level BPE kernel.

``Encoding(name, pat_str=, mergeable_ranks=, special_tokens=, explicit_n_vocab=)``
takes tiktoken's arguments and has its methods. The work is done by the
kernel (``_kernels/bytebpe.pyx``): the patterns of the public encodings are
scanned by hand there; any other ``pat_str`` is split with the ``regex``
module (same result, slower). The batch methods run on pieceworks' shared
thread pool (``PIECEWORKS_NUM_THREADS``); ``num_threads`` caps how many
threads a call uses.

>>> ranks = {bytes([b]): b for b in range(256)} | {b"he": 256, b"ll": 257, b"hell": 258, b"hello": 259}
>>> Encoding("toy", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={}).encode("hello hell")
[259, 32, 258]
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from typing import AbstractSet, Collection, Literal, Sequence

from .._kernels.bytebpe import ByteBPE, Pattern, rank_table
from .._kernels.token_finder import AroundTokens
from .._kernels.raw_encoding import untrack
from ..errors import (ConfigError, DecodeError, InputTypeError, OutOfRangeError, SpecialTokenError,
                      UnknownTokenError)
from ..fast.byte_bpe import GPT2_PATTERN, TIKTOKEN_PATTERNS  # noqa: F401 (GPT2_PATTERN: the doctest's)
from .._kernels.single_text import holds
from ._special import special_scan

__all__ = ["Encoding"]

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

_ALL = "all"
# encode's default allowed_special: nothing allowed. Its own object, so the common call is told
# apart without building a set (tiktoken's default, set(), is one object made once too).
_NOTHING: AbstractSet[str] = frozenset()


class Encoding:
    """A byte-level BPE encoding with tiktoken's constructor and methods."""

    def __init__(self, name: str, *, pat_str: str, mergeable_ranks: dict[bytes, int],
                 special_tokens: dict[str, int], explicit_n_vocab: int | None = None):
        self.name = name
        self._pat_str = pat_str
        self._mergeable_ranks = mergeable_ranks
        self._special_tokens = special_tokens
        self.max_token_value = max(max(mergeable_ranks.values(), default=0),
                                   max(special_tokens.values(), default=0))
        if explicit_n_vocab:
            _check_n_vocab(name, mergeable_ranks, special_tokens, explicit_n_vocab, self.max_token_value)
        self._special_token_values = set(special_tokens.values())
        self._all_special = frozenset(special_tokens)
        self._core = _build_core(name, pat_str, mergeable_ranks, special_tokens)
        if self._core.stand_ins_from >= 0:
            _refuse_missing_bytes(self)
        self._split_regex = None if self._core.pattern != Pattern.PAT_PIECES else _compile(pat_str)
        self._arounds: dict[frozenset[str], AroundTokens] = {}      # (see _around)
        # What every special token starts with ("" when they share no start), None if there are none.
        self._refused_prefix = special_scan(self._all_special).prefix if special_tokens else None

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # -- encoding ---------------------------------------------------------------------
    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of ``text``, special-token text encoded as plain text.

        >>> get_encoding("cl100k_base").encode_ordinary("hello world")  # doctest: +SKIP
        [15339, 1917]
        """
        if self._split_regex is None and type(text) is str:
            ids = self._core.encode(text, True)   # the common case, in one call
            if ids is not None:
                return ids
        return self._encode_plain(_fix_surrogates(self._core, _check_text(text)))

    def encode(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
               disallowed_special: Literal["all"] | Collection[str] = _ALL) -> list[int]:
        """Token ids of ``text``; special tokens only where ``allowed_special`` says.

        By default any special-token text raises SpecialTokenError (tiktoken's
        rule): pass ``allowed_special={...}`` (or ``"all"``) to encode it as the
        special token, or ``disallowed_special=()`` to encode it as plain text.
        """
        if type(text) is str and disallowed_special is _ALL and self._split_regex is None:
            ids = self._encode_usual(text, allowed_special)
            if ids is not None:
                return ids
        text = _check_text(text)
        allowed = self._allowed(allowed_special)
        self._refuse_disallowed(text, allowed, disallowed_special)
        return self._encode_allowing(_fix_surrogates(self._core, text), allowed)

    def encode_to_numpy(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                        disallowed_special: Literal["all"] | Collection[str] = _ALL):
        """:meth:`encode` as a NumPy ``uint32`` array (no Python int per token)."""
        import numpy as np

        text = _check_text(text)
        allowed = self._allowed(allowed_special)
        self._refuse_disallowed(text, allowed, disallowed_special)
        text = _fix_surrogates(self._core, text)
        if allowed or self._split_regex is not None:
            return np.array(self._encode_allowing(text, allowed), dtype=np.uint32)
        return np.frombuffer(self._core.encode_to_bytes(text), dtype=np.uint32)

    def encode_ordinary_batch(self, text: list[str], *, num_threads: int = 8) -> list[list[int]]:
        """:meth:`encode_ordinary` of each text, on threads."""
        _check_threads(num_threads)
        texts = _check_list(text)
        if self._split_regex is None:
            try:
                # The kernel checks types and surrogates as it reads the pointers: no Python loop here.
                out = _run_job(self._core, texts, num_threads, refuse_surrogates=True)
                if out is not None:
                    return out
            except TypeError:
                pass
        texts = [_fix_surrogates(self._core, _check_text(t)) for t in texts]
        if self._split_regex is not None:
            return _run_batch(lambda chunk: [self._encode_plain(t) for t in chunk], texts, num_threads)
        return _run_job(self._core, texts, num_threads)

    def encode_batch(self, text: list[str], *, num_threads: int = 8,
                     allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                     disallowed_special: Literal["all"] | Collection[str] = _ALL) -> list[list[int]]:
        """:meth:`encode` of each text, on threads.

        The texts holding a disallowed special token are looked for first, in
        one pass over all of them (:mod:`pieceworks.tiktoken._special`), to
        refuse the first; the threads that encode the texts find the allowed
        ones in each and encode the text between them on its own.
        """
        _check_threads(num_threads)
        texts = _check_list(text)
        allowed = self._allowed(allowed_special)
        disallowed = self._disallowed(allowed, disallowed_special)
        try:
            refused = special_scan(disallowed).texts_holding(texts) if disallowed else []
        except TypeError:       # an item is not a str: say which
            for t in texts:
                _check_text(t)
            raise
        for k in refused:
            self._refuse_disallowed(texts[k], allowed, disallowed_special)
        if self._split_regex is not None:
            texts = [_check_text(t) for t in texts]
            return _run_batch(lambda chunk: [self._encode_allowing(_fix_surrogates(self._core, t), allowed)
                                             for t in chunk], texts, num_threads)
        if not allowed:
            return self.encode_ordinary_batch(texts, num_threads=num_threads)
        around = self._around(allowed)
        try:
            out = _run_job(self._core, texts, num_threads, refuse_surrogates=True, around=around)
        except TypeError:
            out = None
        if out is not None:
            return out
        # (A text with a lone surrogate, or an item that is not a str: one by one, as encode.)
        texts = [_fix_surrogates(self._core, _check_text(t)) for t in texts]
        return _run_job(self._core, texts, num_threads, around=around)

    def encode_with_unstable(self, text: str, *,
                             allowed_special: Literal["all"] | AbstractSet[str] = _NOTHING,
                             disallowed_special: Literal["all"] | Collection[str] = _ALL,
                             ) -> tuple[list[int], list[list[int]]]:
        """``(stable tokens, completions)``: the tokens more text cannot change, and each way the
        rest may be tokenized once text follows (tiktoken's sets; sorted here, see
        :mod:`pieceworks.tiktoken._unstable`). Special tokens as :meth:`encode`.
        """
        from ._unstable import encode_with_unstable

        text = _check_text(text)
        allowed = self._allowed(allowed_special)
        self._refuse_disallowed(text, allowed, disallowed_special)
        return encode_with_unstable(self, _fix_surrogates(self._core, text), allowed)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of text that is exactly one token: a mergeable rank first, then a special
        token (tiktoken's order, for text that is both); KeyError of its bytes otherwise."""
        if isinstance(text_or_bytes, str):
            piece = text_or_bytes.encode("utf-8")
        elif isinstance(text_or_bytes, (bytes, bytearray, memoryview)):
            piece = bytes(text_or_bytes)
        else:       # (bytes(5) would be five NUL bytes)
            raise InputTypeError(f"encode_single_token expects a str or bytes, got {type(text_or_bytes).__name__}",
                                 fix="pass the token's text or bytes, e.g. enc.encode_single_token('hello')")
        tid = self._core.token_id(piece)
        if tid is not None:
            return tid
        try:
            special = self._special_tokens.get(piece.decode("utf-8"))
        except UnicodeDecodeError:
            special = None
        if special is None:
            raise KeyError(piece)
        return special

    # -- decoding ---------------------------------------------------------------------
    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of ``tokens`` joined (KeyError for an unknown id, OverflowError for one below 0 or
        past 2**32 - 1, as tiktoken)."""
        return _known_ids(self._core.decode_bytes, tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of ``tokens``. Bytes that are not valid UTF-8 (a character cut
        between tokens) become U+FFFD; ``errors="strict"`` raises DecodeError instead."""
        if type(tokens) is list or type(tokens) is tuple:     # (read again below if it fails)
            try:
                return self._core.decode_utf8(tokens, errors)
            except (KeyError, UnicodeDecodeError, TypeError, OverflowError):
                pass        # the long way says what is wrong
        data = _known_ids(self._core.decode_bytes, tokens)
        try:
            return data.decode("utf-8", errors=errors)
        except UnicodeDecodeError as exc:
            raise DecodeError(f"the tokens decode to bytes that are not valid UTF-8 (at byte {exc.start}: "
                              f"{data[exc.start:exc.end]!r})",
                              fix="pass errors='replace' to get U+FFFD there, or decode_bytes() for the raw bytes"
                              ) from exc

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (special tokens included); KeyError for an unknown id."""
        return _known_ids(self._core.token_bytes, token)

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each token."""
        token_bytes = self._core.token_bytes
        return [_known_ids(token_bytes, token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text and, per token, the index of the first char it has bytes of (tiktoken's rule)."""
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets = []
        for token in token_bytes:
            offsets.append(max(0, text_len - (0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        return b"".join(token_bytes).decode("utf-8", errors="strict"), offsets

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        """:meth:`decode` of each list of tokens."""
        _check_threads(num_threads)
        return [self.decode(tokens, errors=errors) for tokens in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        """:meth:`decode_bytes` of each list of tokens."""
        _check_threads(num_threads)
        return [self.decode_bytes(tokens) for tokens in batch]

    # -- vocabulary ---------------------------------------------------------------------
    def token_byte_values(self) -> list[bytes]:
        """The bytes of every mergeable token, sorted."""
        return list(self._sorted_token_bytes)

    @functools.cached_property
    def _sorted_token_bytes(self) -> list[bytes]:
        """:meth:`token_byte_values`, sorted once (encode_with_unstable searches it)."""
        return sorted(self._mergeable_ranks)

    @functools.cached_property
    def _sorted_token_ranks(self) -> list[int]:
        """The rank of each of :attr:`_sorted_token_bytes`."""
        return list(map(self._mergeable_ranks.__getitem__, self._sorted_token_bytes))

    @property
    def eot_token(self) -> int:
        return self._special_tokens[ENDOFTEXT]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        if type(token) is not int and (isinstance(token, bool) or not isinstance(token, int)):
            raise InputTypeError(f"is_special_token expects an int, got {type(token).__name__}")
        return token in self._special_token_values

    @property
    def n_vocab(self) -> int:
        """``max_token_value + 1`` (tiktoken's definition)."""
        return self.max_token_value + 1

    # -- tiktoken's private helpers that other libraries call ------------------------------
    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self._core.encode_bytes_piece(bytes(text_or_bytes))

    def _encode_bytes(self, text: bytes) -> list[int]:
        """Tokens of bytes that need not be UTF-8, as tiktoken's (see :mod:`pieceworks.tiktoken._unstable`)."""
        from ._unstable import encode_bytes

        if not isinstance(text, (bytes, bytearray, memoryview)):
            raise InputTypeError(f"expected bytes, got {type(text).__name__}", fix="pass text.encode('utf-8')")
        return encode_bytes(self, bytes(text))

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        import regex

        return self._core.encode_pieces(regex.findall(_compile(self._pat_str), text))

    def __getstate__(self) -> object:
        return {"name": self.name, "pat_str": self._pat_str, "mergeable_ranks": self._mergeable_ranks,
                "special_tokens": self._special_tokens}

    def __setstate__(self, value) -> None:
        if isinstance(value, str):
            from .registry import get_encoding

            self.__dict__ = get_encoding(value).__dict__
            return
        self.__init__(**value)

    # -- internals ----------------------------------------------------------------------
    def _encode_usual(self, text: str, allowed_special) -> list[int] | None:
        """:meth:`encode`'s two usual calls in one kernel call, or None for the general way.

        Nothing allowed (the default): a text without the special tokens'
        common prefix holds none to refuse (a short text's encode was three
        quarters sets and scans in Python). ``"all"`` allowed: the text is
        encoded around them. None for a text that may hold a refused token, or
        holds a lone surrogate: the general way raises, or mends it.
        """
        if allowed_special is _NOTHING:
            refused = self._refused_prefix
            if refused is not None and (not refused or holds(text, refused)):
                return None
            return self._core.encode(text, True)
        if allowed_special == _ALL and not self._core.has_surrogates(text):
            if not self._all_special:
                return self._core.encode(text)
            return self._core.encode_around(text, self._around(self._all_special))
        return None

    def _encode_plain(self, text: str) -> list[int]:
        if self._split_regex is None:
            return self._core.encode(text)
        return self._core.encode_pieces(self._split_regex.findall(text))

    def _encode_allowing(self, text: str, allowed: frozenset[str]) -> list[int]:
        """Allowed special tokens become their ids; the text between is encoded on its own."""
        if allowed and self._split_regex is None:
            return self._core.encode_around(text, self._around(allowed))
        found = special_scan(allowed).spans(text) if allowed else []
        if not found:
            return self._encode_plain(text)
        out: list[int] = []
        at = 0
        for start, end, token in found:
            out += self._encode_plain(text[at:start])
            out.append(self._special_tokens[token])
            at = end
        out += self._encode_plain(text[at:])
        return out

    def _around(self, allowed: frozenset[str]) -> AroundTokens:
        """The kernel's form of the allowed special tokens, to encode a text around (made once per set)."""
        around = self._arounds.get(allowed)
        if around is None:
            scan = special_scan(allowed)
            around = self._arounds[allowed] = AroundTokens(scan.trie, [self._special_tokens[t] for t in scan.tokens])
        return around

    def _allowed(self, allowed_special) -> frozenset[str]:
        """The special tokens ``allowed_special`` names; a name that is not one is ignored (as tiktoken)."""
        if allowed_special == _ALL:
            return self._all_special
        allowed = _token_set(allowed_special, "allowed_special")
        return allowed if allowed <= self._all_special else allowed & self._all_special

    def _disallowed(self, allowed: frozenset[str], disallowed_special) -> frozenset[str]:
        """The texts to refuse; None, like an empty collection, refuses nothing (as tiktoken)."""
        if disallowed_special == _ALL:
            return self._all_special - allowed if allowed else self._all_special
        return frozenset() if disallowed_special is None else _token_set(disallowed_special, "disallowed_special")

    def _refuse_disallowed(self, text: str, allowed: frozenset[str], disallowed_special) -> None:
        disallowed = self._disallowed(allowed, disallowed_special)
        found = special_scan(disallowed).search(text) if disallowed else None
        if found is not None:
            token = found[2]
            raise SpecialTokenError(
                f"Encountered text corresponding to disallowed special token {token!r}",
                fix=f"to encode it as the special token, pass it to allowed_special, e.g. "
                    f"allowed_special={{{token!r}, ...}}; to encode it as normal text, disable the check for it "
                    f"with disallowed_special=(enc.special_tokens_set - {{{token!r}}}); "
                    f"to disable the check for all special tokens, pass disallowed_special=()")


def _known_ids(decode, ids):
    """``decode(ids)``, where an id below 0 or past 2**32 - 1 is an OverflowError (tiktoken's ids are
    unsigned 32-bit ints, which such an int cannot become) rather than the kernel's KeyError."""
    try:
        return decode(ids)
    except KeyError as exc:
        tid = exc.args[0] if exc.args else None
        if type(tid) is int and not 0 <= tid <= 2**32 - 1:
            raise OutOfRangeError(f"token id {tid} is out of range: ids are 0 to 2**32 - 1",
                                  fix="pass ids this encoding produced") from None
        raise


# -- building ---------------------------------------------------------------------------


def _build_core(name: str, pat_str: str, ranks: dict[bytes, int], special_tokens: dict[str, int]) -> ByteBPE:
    if not isinstance(ranks, dict) or not ranks:
        raise ConfigError(f"encoding {name!r}: mergeable_ranks must be a non-empty dict of bytes -> rank",
                          fix="load one with pieceworks.tiktoken.load_tiktoken_bpe(path)")
    token_bytes = _tokens_by_rank(name, ranks)
    size = len(token_bytes)
    decode_only = {}
    for text, tid in special_tokens.items():
        if not isinstance(text, str) or not text:
            raise ConfigError(f"encoding {name!r}: special token {text!r} is not a non-empty str "
                              f"(an empty one would match between every two chars)",
                              fix="give each special token its text, e.g. '<|endoftext|>'")
        if tid < size and token_bytes[tid] is not None:
            raise ConfigError(f"encoding {name!r}: special token {text!r} has id {tid}, which is also the rank "
                              f"of {token_bytes[tid]!r}", fix="give special tokens ids above the ranks")
        decode_only[tid] = text.encode("utf-8")
    pattern = TIKTOKEN_PATTERNS.get(pat_str, Pattern.PAT_PIECES)
    if pattern == Pattern.PAT_PIECES:
        _compile(pat_str)  # a bad pattern fails here, not at the first encode
    return ByteBPE(token_bytes, None, pattern=pattern, whole_piece=True, decode_only=decode_only,
                   byte_stand_ins=True)


# -- ranks that lack a single byte ------------------------------------------------------
# tiktoken takes such ranks, and encodes with them until a token it would output is missing: then
# it panics. The kernel encodes them with a stand-in id for each missing byte (see ByteBPE); these
# methods check what they return for one and raise instead.
_METHODS_RETURNING_IDS = ("encode_ordinary", "encode", "encode_to_numpy", "encode_ordinary_batch", "encode_batch",
                          "encode_with_unstable", "_encode_single_piece", "_encode_bytes",
                          "_encode_only_native_bpe")


def _refuse_missing_bytes(enc: Encoding) -> None:
    """Make ``enc``'s methods that return ids raise UnknownTokenError on a stand-in id.

    >>> ranks = {bytes([b]): b for b in range(97, 123)} | {b"ab": 200}
    >>> enc = Encoding("lower", pat_str=r"\\S+", mergeable_ranks=ranks, special_tokens={})
    >>> enc.encode("ab c")
    [200, 99]
    >>> enc.encode("aZ")
    Traceback (most recent call last):
    pieceworks.errors.UnknownTokenError: encoding 'lower' has no token for the byte 0x5a ('Z'), which the text needs at byte 1 of its UTF-8; ...
    """
    for name in _METHODS_RETURNING_IDS:
        setattr(enc, name, _checking_ids(enc, getattr(enc, name)))


def _checking_ids(enc: Encoding, method):
    @functools.wraps(method)
    def checked(*args, **kwargs):
        out = method(*args, **kwargs)
        _check_ids(enc, out, "")
        return out
    return checked


def _check_ids(enc: Encoding, out, where: str) -> None:
    """Raise if ``out`` (ids, or lists of them, or a NumPy array of them) holds a stand-in id."""
    start = enc._core.stand_ins_from
    if isinstance(out, int):
        out = [out]
    elif not isinstance(out, (list, tuple)):    # (a NumPy array)
        out = out.tolist()
    if not out:
        return
    if not isinstance(out[0], int):
        for k, part in enumerate(out):
            _check_ids(enc, part, f"{where}[{k}]")
        return
    if max(out) < start:
        return
    at = next(k for k, tid in enumerate(out) if tid >= start)
    missing = [b for b in range(256) if bytes([b]) not in enc._mergeable_ranks]
    byte = missing[out[at] - start]
    offset = sum(1 if tid >= start else len(enc._core.token_bytes(tid)) for tid in out[:at])
    shown = f" ({chr(byte)!r})" if 0x20 <= byte < 0x7F else ""
    raise UnknownTokenError(f"encoding {enc.name!r} has no token for the byte {byte:#04x}{shown}, which the text "
                            f"needs at byte {offset} of its UTF-8{f' (in output{where})' if where else ''}; "
                            f"tiktoken panics there",
                            fix="give mergeable_ranks a rank for each of the 256 single bytes (tiktoken's "
                                "encodings all have them), or keep that byte out of the text")


def _tokens_by_rank(name: str, ranks: dict[bytes, int]) -> list[bytes | None]:
    """Each rank's token (None in a gap), after checking ``ranks`` maps bytes to distinct small ranks.

    >>> _tokens_by_rank("toy", {b"a": 0, b"b": 2})
    [b'a', None, b'b']
    """
    table = rank_table(ranks, _max_table(len(ranks)))     # (the common case: 200k ranks in milliseconds)
    if table is not None:
        return table
    by_rank = {}                            # one at a time, to name the fault
    for token, rank in ranks.items():
        if not isinstance(token, (bytes, bytearray)) or isinstance(rank, bool) or not isinstance(rank, int) \
                or rank < 0:
            raise ConfigError(f"encoding {name!r}: mergeable_ranks must map bytes to non-negative ints, "
                              f"got {token!r}: {rank!r}")
        if rank in by_rank:
            raise ConfigError(f"encoding {name!r}: rank {rank} is given to both {by_rank[rank]!r} and {token!r}",
                              fix="each token needs its own rank")
        by_rank[int(rank)] = bytes(token)
    return _rank_table(name, by_rank)


def _max_table(n_ranks: int) -> int:
    # Ranks index a table: a few gaps are fine, a rank of 10**9 (or 10**70) is a broken file.
    return min(2**31 - 1, 4 * n_ranks + 65536)


def _rank_table(name: str, by_rank: dict[int, bytes]) -> list[bytes | None]:
    size = max(by_rank) + 1
    if size > _max_table(len(by_rank)):
        raise ConfigError(f"encoding {name!r}: the largest rank is {size - 1:,} for {len(by_rank):,} tokens",
                          fix="ranks must number the tokens from 0 with few gaps; check the .tiktoken file")
    return list(map(by_rank.get, range(size)))


def _check_n_vocab(name, ranks, special_tokens, explicit_n_vocab, max_token_value) -> None:
    if len(ranks) + len(special_tokens) != explicit_n_vocab or max_token_value != explicit_n_vocab - 1:
        raise ConfigError(f"encoding {name!r}: explicit_n_vocab is {explicit_n_vocab}, but there are "
                          f"{len(ranks)} ranks and {len(special_tokens)} special tokens, the largest id "
                          f"{max_token_value}", fix="pass the rank file and special tokens of that encoding")


@functools.lru_cache(maxsize=64)
def _compile(pat_str: str):
    import regex

    try:
        return regex.compile(pat_str)
    except regex.error as exc:
        raise ConfigError(f"invalid pat_str {pat_str!r}: {exc}", fix="check the pattern's syntax") from None


def _token_set(tokens, name: str) -> frozenset[str]:
    """``tokens`` (a collection of str) as a frozenset; a lone str other than "all" is an error.

    >>> sorted(_token_set(["<|a|>", "<|b|>"], "allowed_special"))
    ['<|a|>', '<|b|>']
    """
    if isinstance(tokens, str) or not hasattr(tokens, "__iter__"):
        raise InputTypeError(f"{name} must be a set of special-token strings or 'all', got {tokens!r}",
                             fix=f"wrap one token in a set: {name}={{{tokens!r}}}")
    return tokens if type(tokens) is frozenset else frozenset(tokens)


def _check_threads(num_threads) -> None:
    """tiktoken's thread pool refuses fewer than one worker; so does the face (None: as many as
    the pool has, as a ThreadPoolExecutor's default)."""
    if num_threads is None:
        return
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise InputTypeError(f"num_threads must be an int, got {type(num_threads).__name__}",
                             fix="pass a whole number of threads, e.g. num_threads=8")
    if num_threads < 1:
        raise ConfigError(f"num_threads must be greater than 0, got {num_threads}",
                          fix="pass num_threads=1 to encode on the calling thread only")


def _check_text(text) -> str:
    if not isinstance(text, str):
        raise InputTypeError(f"expected a str, got {type(text).__name__}",
                             fix="decode bytes first (data.decode('utf-8')), or use _encode_bytes for raw bytes")
    return text


def _check_list(texts) -> list:
    if isinstance(texts, (str, bytes)):
        raise InputTypeError("expected a list of str, got a single " + type(texts).__name__,
                             fix="wrap it in a list: [text]")
    if type(texts) is list:
        return texts        # only read (a batch job reads a tuple of it)
    # Out of the collector's sight: every collection the batch's new lists trigger would
    # walk a young list of all the texts (a fresh copy: nothing can refer back to it).
    texts = list(texts)
    untrack(texts)
    return texts


def _fix_surrogates(core: ByteBPE, text: str) -> str:
    # As tiktoken: lone surrogates cannot be UTF-8, so a text holding one is
    # round-tripped through UTF-16, which pairs what pairs and makes the rest U+FFFD.
    if core.has_surrogates(text):
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


# Below this many texts, a batch too small for threads is found by counting its chars (above, by the job).
_FEW_TEXTS = 512


def _run_job(core, texts: list[str], num_threads: int, refuse_surrogates: bool = False,
             around: tuple | None = None) -> list[list[int]] | None:
    """``core.encode_batch(texts)`` on up to ``num_threads`` threads (None: a text has a lone surrogate
    and ``refuse_surrogates`` is set); ``around``: the special tokens to encode around (see
    ``ByteBPE.batch_job``), which only the job does.

    The list is cut into chunks of about 32 K chars; pool threads and the
    calling thread each take the next chunk as they come free and encode it
    without the GIL, and the calling thread makes the lists of the chunks
    done, in order, between its own chunks (see ``bytebpe.BatchJob``).
    """
    from ..fast._pool import THREAD_MIN_CHARS, num_threads as pool_threads, run_job

    # (Not capped by the number of texts: the job cuts a long text into parts that threads share.)
    threads = pool_threads() if num_threads is None else min(pool_threads(), num_threads)
    # A long list needs no count of its chars first: a job of one chunk runs on this thread alone.
    if around is None and (threads <= 1 or not texts or len(texts) < _FEW_TEXTS
                           and sum(map(len, texts)) < THREAD_MIN_CHARS):
        return core.encode_batch(texts, refuse_surrogates)
    job = core.batch_job(texts, refuse_surrogates, around=around)
    return None if job is None else run_job(job, max(threads, 1))


def _run_batch(encode_chunk, texts: list[str], num_threads: int) -> list[list[int]]:
    """``encode_chunk`` over contiguous ranges of ``texts`` of about equal size, on the shared pool.

    The calling thread encodes the first range itself; the kernel drops the
    GIL for each range, so the ranges run in parallel.
    """
    from itertools import accumulate

    from ..fast._pool import THREAD_MIN_CHARS, _get_pool, num_threads as pool_threads

    threads = min(pool_threads() if num_threads is None else min(pool_threads(), num_threads), len(texts))
    if threads <= 1:
        return encode_chunk(texts)
    ends = list(accumulate(map(len, texts)))
    total = ends[-1]
    if total < THREAD_MIN_CHARS:
        return encode_chunk(texts)
    bounds = [0] + [bisect_left(ends, total * k // threads) + 1 for k in range(1, threads)] + [len(texts)]
    bounds = sorted(set(min(b, len(texts)) for b in bounds))
    pool = _get_pool(threads)
    futures = [pool.submit(encode_chunk, texts[a:b]) for a, b in zip(bounds[1:-1], bounds[2:])]
    out = encode_chunk(texts[bounds[0]:bounds[1]])
    for future in futures:
        out += future.result()
    return out
