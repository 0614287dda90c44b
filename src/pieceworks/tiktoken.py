"""tiktoken's module API on pieceworks' engine: a drop-in for ``import tiktoken``.

``Encoding(name, pat_str=, mergeable_ranks=, special_tokens=, explicit_n_vocab=)``
takes tiktoken's arguments and has its methods; :func:`load_tiktoken_bpe`
reads ``.tiktoken`` rank files; :func:`get_encoding` builds r50k_base,
p50k_base, p50k_edit, cl100k_base, o200k_base and o200k_harmony (and gpt2)
from rank files in a folder you choose (pieceworks downloads nothing): set
``PIECEWORKS_TIKTOKEN_DIR`` or call :func:`set_data_dir`;
:func:`encoding_for_model` picks one by OpenAI model name, as tiktoken does.

>>> import os, tempfile
>>> ranks = {bytes([b]): b for b in range(256)}
>>> ranks[b"he"] = 256; ranks[b"ll"] = 257; ranks[b"hell"] = 258; ranks[b"hello"] = 259
>>> enc = Encoding("toy", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 260})
>>> enc.encode("hello hell")
[259, 32, 258]
>>> enc.decode([259, 32, 258])
'hello hell'
>>> enc.encode("<|endoftext|>", allowed_special={"<|endoftext|>"})
[260]
>>> enc.encode("<|endoftext|>")
Traceback (most recent call last):
  ...
pieceworks.errors.SpecialTokenError: Encountered text corresponding to disallowed special token '<|endoftext|>'. Fix: ...

Special tokens are refused unless allowed, exactly as tiktoken does:
``encode`` raises :class:`~pieceworks.errors.SpecialTokenError` (a
``ValueError``, like tiktoken's) on special-token text that is not in
``allowed_special``, and the message says how to allow it or encode it as
plain text. ``encode_ordinary`` never produces a special token.

The work is done by the byte-level BPE kernel (``_kernels/bytebpe.pyx``):
the patterns of the public encodings are scanned by hand there; any other
``pat_str`` is split with the ``regex`` module (same result, slower). The
batch methods run on pieceworks' shared thread pool
(``PIECEWORKS_NUM_THREADS``); ``num_threads`` caps how many threads a call uses.
"""

from __future__ import annotations

import functools
import os
from bisect import bisect_left
from pathlib import Path
from typing import AbstractSet, Collection, Literal, Sequence

from ._kernels.bytebpe import ByteBPE, Pattern
from .errors import ConfigError, DecodeError, InputTypeError, SpecialTokenError, UnknownModelError
from .fast.byte_bpe import GPT2_PATTERN, O200K_PATTERN, TIKTOKEN_CL100K_PATTERN, TIKTOKEN_PATTERNS, \
    TIKTOKEN_R50K_PATTERN
from .formats.gpt2_files import read_gpt2_ranks
from .formats.tiktoken import dump_tiktoken_bpe, load_tiktoken_bpe

__all__ = ["Encoding", "get_encoding", "list_encoding_names", "encoding_for_model", "encoding_name_for_model",
           "load_tiktoken_bpe", "dump_tiktoken_bpe",
           "data_gym_to_mergeable_bpe_ranks", "set_data_dir", "get_data_dir", "GPT2_PATTERN",
           "DATA_DIR_ENV"]

#: The environment variable naming the folder of ``.tiktoken`` files for :func:`get_encoding`.
DATA_DIR_ENV = "PIECEWORKS_TIKTOKEN_DIR"

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

_ALL = "all"


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
        self._core = _build_core(name, pat_str, mergeable_ranks, special_tokens)
        self._split_regex = None if self._core.pattern != Pattern.PAT_PIECES else _compile(pat_str)
        self._sorted_token_bytes: list[bytes] | None = None     # (encode_with_unstable, made on first use)

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

    def encode(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
               disallowed_special: Literal["all"] | Collection[str] = _ALL) -> list[int]:
        """Token ids of ``text``; special tokens only where ``allowed_special`` says.

        By default any special-token text raises SpecialTokenError (tiktoken's
        rule): pass ``allowed_special={...}`` (or ``"all"``) to encode it as the
        special token, or ``disallowed_special=()`` to encode it as plain text.
        """
        text = _check_text(text)
        allowed = self._allowed(allowed_special)
        self._refuse_disallowed(text, allowed, disallowed_special)
        return self._encode_allowing(_fix_surrogates(self._core, text), allowed)

    def encode_to_numpy(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
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
                     allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
                     disallowed_special: Literal["all"] | Collection[str] = _ALL) -> list[list[int]]:
        """:meth:`encode` of each text, on threads."""
        texts = [_check_text(t) for t in _check_list(text)]
        allowed = self._allowed(allowed_special)
        for t in texts:
            self._refuse_disallowed(t, allowed, disallowed_special)
        if allowed or self._split_regex is not None:
            return _run_batch(lambda chunk: [self._encode_allowing(_fix_surrogates(self._core, t), allowed)
                                             for t in chunk], texts, num_threads)
        return _run_job(self._core, [_fix_surrogates(self._core, t) for t in texts], num_threads)

    def encode_with_unstable(self, text: str, *,
                             allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
                             disallowed_special: Literal["all"] | Collection[str] = _ALL,
                             ) -> tuple[list[int], list[list[int]]]:
        """``(stable tokens, completions)``: the tokens more text cannot change, and each way the
        rest may be tokenized once text follows (tiktoken's sets; sorted here, see
        :mod:`pieceworks.tiktoken_unstable`). Special tokens as :meth:`encode`.
        """
        from .tiktoken_unstable import encode_with_unstable

        text = _check_text(text)
        allowed = self._allowed(allowed_special)
        self._refuse_disallowed(text, allowed, disallowed_special)
        return encode_with_unstable(self, _fix_surrogates(self._core, text), allowed)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of text that is exactly one token (special tokens included); KeyError otherwise."""
        if isinstance(text_or_bytes, str):
            if text_or_bytes in self._special_tokens:
                return self._special_tokens[text_or_bytes]
            text_or_bytes = text_or_bytes.encode("utf-8")
        tid = self._core.token_id(bytes(text_or_bytes))
        if tid is None:
            special = self._special_tokens.get(bytes(text_or_bytes).decode("utf-8", "replace"))
            if special is None:
                raise KeyError(text_or_bytes)
            return special
        return tid

    # -- decoding ---------------------------------------------------------------------
    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of ``tokens`` joined (KeyError for an unknown id, as tiktoken)."""
        return self._core.decode_bytes(tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of ``tokens``. Bytes that are not valid UTF-8 (a character cut
        between tokens) become U+FFFD; ``errors="strict"`` raises DecodeError instead."""
        data = self._core.decode_bytes(tokens)
        try:
            return data.decode("utf-8", errors=errors)
        except UnicodeDecodeError as exc:
            raise DecodeError(f"the tokens decode to bytes that are not valid UTF-8 (at byte {exc.start}: "
                              f"{data[exc.start:exc.end]!r})",
                              fix="pass errors='replace' to get U+FFFD there, or decode_bytes() for the raw bytes"
                              ) from exc

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (special tokens included); KeyError for an unknown id."""
        return self._core.token_bytes(token)

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each token."""
        return [self._core.token_bytes(token) for token in tokens]

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
        return [self.decode(tokens, errors=errors) for tokens in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        """:meth:`decode_bytes` of each list of tokens."""
        return [self.decode_bytes(tokens) for tokens in batch]

    # -- vocabulary ---------------------------------------------------------------------
    def token_byte_values(self) -> list[bytes]:
        """The bytes of every mergeable token, sorted."""
        return sorted(self._mergeable_ranks)

    @property
    def eot_token(self) -> int:
        return self._special_tokens[ENDOFTEXT]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        if isinstance(token, bool) or not isinstance(token, int):
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
        """Tokens of bytes that need not be UTF-8, as tiktoken's (see :mod:`pieceworks.tiktoken_unstable`)."""
        from .tiktoken_unstable import encode_bytes

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
            self.__dict__ = get_encoding(value).__dict__
            return
        self.__init__(**value)

    # -- internals ----------------------------------------------------------------------
    def _encode_plain(self, text: str) -> list[int]:
        if self._split_regex is None:
            return self._core.encode(text)
        return self._core.encode_pieces(self._split_regex.findall(text))

    def _encode_allowing(self, text: str, allowed: frozenset[str]) -> list[int]:
        """Allowed special tokens become their ids; the text between is encoded on its own."""
        if not allowed or not any(token in text for token in allowed):
            return self._encode_plain(text)
        out: list[int] = []
        start = 0
        for match in _special_token_regex(allowed).finditer(text):
            out += self._encode_plain(text[start:match.start()])
            out.append(self._special_tokens[match.group()])
            start = match.end()
        out += self._encode_plain(text[start:])
        return out

    def _allowed(self, allowed_special) -> frozenset[str]:
        if allowed_special == _ALL:
            return frozenset(self._special_tokens)
        return frozenset(allowed_special)

    def _refuse_disallowed(self, text: str, allowed: frozenset[str], disallowed_special) -> None:
        if disallowed_special == _ALL:
            disallowed = frozenset(self._special_tokens) - allowed
        else:
            disallowed = frozenset(disallowed_special)
        if not disallowed or not any(token in text for token in disallowed):
            return
        match = _special_token_regex(disallowed).search(text)
        if match:
            token = match.group()
            raise SpecialTokenError(
                f"Encountered text corresponding to disallowed special token {token!r}",
                fix=f"to encode it as the special token, pass it to allowed_special, e.g. "
                    f"allowed_special={{{token!r}, ...}}; to encode it as normal text, disable the check for it "
                    f"with disallowed_special=(enc.special_tokens_set - {{{token!r}}}); "
                    f"to disable the check for all special tokens, pass disallowed_special=()")


# -- building ---------------------------------------------------------------------------


def _build_core(name: str, pat_str: str, ranks: dict[bytes, int], special_tokens: dict[str, int]) -> ByteBPE:
    if not isinstance(ranks, dict) or not ranks:
        raise ConfigError(f"encoding {name!r}: mergeable_ranks must be a non-empty dict of bytes -> rank",
                          fix="load one with pieceworks.tiktoken.load_tiktoken_bpe(path)")
    for token, rank in ranks.items():
        if not isinstance(token, (bytes, bytearray)) or isinstance(rank, bool) or not isinstance(rank, int) \
                or rank < 0:
            raise ConfigError(f"encoding {name!r}: mergeable_ranks must map bytes to non-negative ints, "
                              f"got {token!r}: {rank!r}")
    size = max(ranks.values()) + 1
    # Ranks index a table: a few gaps are fine, a rank of 10**9 (or 10**70) is a broken file.
    if size > min(2**31 - 1, 4 * len(ranks) + 65536):
        raise ConfigError(f"encoding {name!r}: the largest rank is {size - 1:,} for {len(ranks):,} tokens",
                          fix="ranks must number the tokens from 0 with few gaps; check the .tiktoken file")
    token_bytes: list[bytes | None] = [None] * size
    for token, rank in ranks.items():
        if token_bytes[rank] is not None:
            raise ConfigError(f"encoding {name!r}: rank {rank} is given to both {token_bytes[rank]!r} and {token!r}",
                              fix="each token needs its own rank")
        token_bytes[rank] = bytes(token)
    decode_only = {}
    for text, tid in special_tokens.items():
        if tid < size and token_bytes[tid] is not None:
            raise ConfigError(f"encoding {name!r}: special token {text!r} has id {tid}, which is also the rank "
                              f"of {token_bytes[tid]!r}", fix="give special tokens ids above the ranks")
        decode_only[tid] = text.encode("utf-8")
    pattern = TIKTOKEN_PATTERNS.get(pat_str, Pattern.PAT_PIECES)
    if pattern == Pattern.PAT_PIECES:
        _compile(pat_str)  # a bad pattern fails here, not at the first encode
    return ByteBPE(token_bytes, None, pattern=pattern, whole_piece=True, decode_only=decode_only)


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


@functools.lru_cache(maxsize=128)
def _special_token_regex(tokens: frozenset[str]):
    import regex

    # Longest first, so a special token that starts another never hides it.
    return regex.compile("|".join(regex.escape(t) for t in sorted(tokens, key=len, reverse=True)))


def _check_text(text) -> str:
    if not isinstance(text, str):
        raise InputTypeError(f"expected a str, got {type(text).__name__}",
                             fix="decode bytes first (data.decode('utf-8')), or use _encode_bytes for raw bytes")
    return text


def _check_list(texts) -> list:
    if isinstance(texts, (str, bytes)):
        raise InputTypeError("expected a list of str, got a single " + type(texts).__name__,
                             fix="wrap it in a list: [text]")
    return list(texts)


def _fix_surrogates(core: ByteBPE, text: str) -> str:
    # As tiktoken: lone surrogates cannot be UTF-8, so a text holding one is
    # round-tripped through UTF-16, which pairs what pairs and makes the rest U+FFFD.
    if core.has_surrogates(text):
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _run_job(core, texts: list[str], num_threads: int, refuse_surrogates: bool = False) -> list[list[int]] | None:
    """``core.encode_batch(texts)`` on up to ``num_threads`` threads (None: a text has a lone surrogate
    and ``refuse_surrogates`` is set).

    The list is cut into chunks of about 32 K chars; pool threads and the
    calling thread each take the next chunk as they come free and encode it
    without the GIL, and the calling thread makes the lists of the chunks
    done, in order, between its own chunks (see ``bytebpe.BatchJob``).
    """
    from .fast._pool import THREAD_MIN_CHARS, num_threads as pool_threads, run_job

    # (Not capped by the number of texts: the job cuts a long text into parts that threads share.)
    threads = min(pool_threads(), max(num_threads or 1, 1))
    if threads <= 1 or not texts or sum(map(len, texts)) < THREAD_MIN_CHARS:
        return core.encode_batch(texts, refuse_surrogates)
    job = core.batch_job(texts, refuse_surrogates)
    return None if job is None else run_job(job, threads)


def _run_batch(encode_chunk, texts: list[str], num_threads: int) -> list[list[int]]:
    """``encode_chunk`` over contiguous ranges of ``texts`` of about equal size, on the shared pool.

    The calling thread encodes the first range itself; the kernel drops the
    GIL for each range, so the ranges run in parallel.
    """
    from itertools import accumulate

    from .fast._pool import THREAD_MIN_CHARS, _get_pool, num_threads as pool_threads

    threads = min(pool_threads(), max(num_threads or 1, 1), len(texts))
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


# -- the public encodings ---------------------------------------------------------------

_data_dir: str | None = None


def set_data_dir(path: "str | os.PathLike | None") -> None:
    """Use the ``.tiktoken`` files in ``path`` for :func:`get_encoding` (None: back to the environment)."""
    global _data_dir
    _data_dir = None if path is None else os.fspath(path)
    get_encoding.cache_clear()


def get_data_dir() -> str | None:
    """The folder :func:`get_encoding` reads: :func:`set_data_dir`'s, else ``$PIECEWORKS_TIKTOKEN_DIR``."""
    return _data_dir if _data_dir is not None else os.environ.get(DATA_DIR_ENV) or None


def _ranks_file(name: str, file_name: str) -> Path:
    folder = get_data_dir()
    how = (f"put the rank files (r50k_base.tiktoken, cl100k_base.tiktoken, ...) in a folder and set "
           f"{DATA_DIR_ENV}=/that/folder, or call pieceworks.tiktoken.set_data_dir(path); "
           f"pieceworks downloads nothing")
    if folder is None:
        raise ConfigError(f"get_encoding({name!r}) needs {file_name}, and no folder of rank files is set", fix=how)
    path = Path(folder) / file_name
    if not path.is_file():
        raise ConfigError(f"get_encoding({name!r}): {path} does not exist", fix=how)
    return path


def _r50k_like(name: str, n_vocab: int | None, special: dict[str, int], file_name: str = "r50k_base.tiktoken"):
    return {"name": name, "pat_str": TIKTOKEN_R50K_PATTERN, "explicit_n_vocab": n_vocab,
            "mergeable_ranks": load_tiktoken_bpe(_ranks_file(name, file_name)), "special_tokens": special}


def _harmony_specials() -> dict[str, int]:
    named = {"<|startoftext|>": 199998, ENDOFTEXT: 199999, "<|return|>": 200002, "<|constrain|>": 200003,
             "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008,
             "<|call|>": 200012}
    reserved = {f"<|reserved_{i}|>": i for i in (200000, 200001, 200004, 200009, 200010, 200011)}
    reserved.update({f"<|reserved_{i}|>": i for i in range(200013, 201088)})
    return {ENDOFPROMPT: 200018, **named, **reserved}


_ENCODINGS = {
    "gpt2": lambda: _r50k_like("gpt2", 50257, {ENDOFTEXT: 50256}),
    "r50k_base": lambda: _r50k_like("r50k_base", 50257, {ENDOFTEXT: 50256}),
    "p50k_base": lambda: _r50k_like("p50k_base", 50281, {ENDOFTEXT: 50256}, "p50k_base.tiktoken"),
    "p50k_edit": lambda: _r50k_like("p50k_edit", None, {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282,
                                                        FIM_SUFFIX: 50283}, "p50k_base.tiktoken"),
    "cl100k_base": lambda: {
        "name": "cl100k_base", "pat_str": TIKTOKEN_CL100K_PATTERN,
        "mergeable_ranks": load_tiktoken_bpe(_ranks_file("cl100k_base", "cl100k_base.tiktoken")),
        "special_tokens": {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260,
                           ENDOFPROMPT: 100276}},
    "o200k_base": lambda: {
        "name": "o200k_base", "pat_str": O200K_PATTERN,
        "mergeable_ranks": load_tiktoken_bpe(_ranks_file("o200k_base", "o200k_base.tiktoken")),
        "special_tokens": {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}},
    "o200k_harmony": lambda: {
        "name": "o200k_harmony", "pat_str": O200K_PATTERN,
        "mergeable_ranks": load_tiktoken_bpe(_ranks_file("o200k_harmony", "o200k_base.tiktoken")),
        "special_tokens": _harmony_specials()},
}


def list_encoding_names() -> list[str]:
    """The encodings :func:`get_encoding` knows."""
    return list(_ENCODINGS)


@functools.lru_cache(maxsize=None)
def get_encoding(encoding_name: str) -> Encoding:
    """One of OpenAI's public encodings, from the rank files in :func:`get_data_dir`.

    The patterns and special tokens are tiktoken's (0.14); only the rank
    files are read from disk (``gpt2`` uses r50k_base.tiktoken: the same ranks).
    """
    if encoding_name not in _ENCODINGS:
        raise ConfigError(f"unknown encoding {encoding_name!r}",
                          fix=f"use one of {', '.join(_ENCODINGS)}, or build Encoding(...) yourself")
    return Encoding(**_ENCODINGS[encoding_name]())


# Which encoding OpenAI's models use, as tiktoken 0.14 maps them: whole names first, then
# name beginnings (so a dated or fine-tuned variant finds its family's encoding).
_MODEL_ENCODINGS = {
    "o200k_base": ("gpt-5", "gpt-4.1", "gpt-4o", "o1", "o3", "o4-mini"),
    "cl100k_base": ("gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
                    "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"),
    "p50k_base": ("text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001",
                  "code-cushman-002", "code-cushman-001", "davinci-codex", "cushman-codex"),
    "p50k_edit": ("text-davinci-edit-001", "code-davinci-edit-001"),
    "r50k_base": ("text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001", "davinci", "curie",
                  "babbage", "ada", *(f"text-similarity-{m}-001" for m in ("davinci", "curie", "babbage", "ada")),
                  *(f"text-search-{m}-doc-001" for m in ("davinci", "curie", "babbage", "ada")),
                  "code-search-babbage-code-001", "code-search-ada-code-001"),
    "gpt2": ("gpt2", "gpt-2"),
}
_MODEL_PREFIX_ENCODINGS = (
    ("o200k_base", ("o1-", "o3-", "o4-mini-", "gpt-5", "gpt-4.5-", "gpt-4.1-", "chatgpt-4o-", "gpt-4o-",
                    "ft:gpt-4o")),
    ("cl100k_base", ("gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-", "ft:gpt-4", "ft:gpt-3.5-turbo",
                     "ft:davinci-002", "ft:babbage-002")),
    ("o200k_harmony", ("gpt-oss-",)),
)
_MODEL_TO_ENCODING = {model: name for name, models in _MODEL_ENCODINGS.items() for model in models}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding an OpenAI model uses, as tiktoken says it.

    >>> encoding_name_for_model("gpt-4o-2024-08-06"), encoding_name_for_model("text-davinci-003")
    ('o200k_base', 'p50k_base')

    An unknown name raises :class:`~pieceworks.errors.UnknownModelError` (a
    ``KeyError``, like tiktoken's).
    """
    found = _MODEL_TO_ENCODING.get(model_name)
    if found is not None:
        return found
    for name, prefixes in _MODEL_PREFIX_ENCODINGS:
        if model_name.startswith(prefixes):
            return name
    raise UnknownModelError(f"no known encoding for the model {model_name!r}",
                            fix="call get_encoding() with the encoding's name (one of "
                                f"{', '.join(_ENCODINGS)})")


def encoding_for_model(model_name: str) -> Encoding:
    """``get_encoding(encoding_name_for_model(model_name))``: the encoding an OpenAI model uses."""
    return get_encoding(encoding_name_for_model(model_name))


def data_gym_to_mergeable_bpe_ranks(vocab_bpe_file: str, encoder_json_file: str,
                                    vocab_bpe_hash: str | None = None, encoder_json_hash: str | None = None,
                                    clobber_one_byte_tokens: bool = False) -> dict[bytes, int]:
    """tiktoken ranks from GPT-2's ``vocab.bpe`` and ``encoder.json`` (local files; hashes are not checked)."""
    if clobber_one_byte_tokens:
        raise ConfigError("clobber_one_byte_tokens is not supported", fix="leave it False")
    return read_gpt2_ranks(encoder_json_file, vocab_bpe_file)
