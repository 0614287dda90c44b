"""tiktoken's rank files: ``.tiktoken`` (one ``base64(token) rank`` per line).

A rank is a token's id and its merge priority at once (lower merges first).
Reading is stricter than tiktoken's: a line that is not two fields, a token
that is not base64, a rank that is not a non-negative integer, a rank given
twice or a token listed twice raise
:class:`~pieceworks.errors.FileFormatError` naming the file and the line (and,
for a repeat, the line it repeats), instead of a silently different
vocabulary.

>>> ranks = parse_tiktoken_bpe(b"YQ== 0\\nYg== 1\\nYWI= 2\\n")
>>> ranks
{b'a': 0, b'b': 1, b'ab': 2}
>>> format_tiktoken_bpe(ranks)
b'YQ== 0\\nYg== 1\\nYWI= 2\\n'
"""

from __future__ import annotations

import binascii
import hashlib
import os
from pathlib import Path

from ..errors import ConfigError, FileFormatError

__all__ = ["load_tiktoken_bpe", "parse_tiktoken_bpe", "format_tiktoken_bpe", "dump_tiktoken_bpe"]

_FIX = "the file is damaged or is not a .tiktoken rank file; download or export it again"


def load_tiktoken_bpe(path: "str | os.PathLike", expected_hash: str | None = None) -> dict[bytes, int]:
    """Read a ``.tiktoken`` file: ``{token_bytes: rank}``.

    ``expected_hash``: the file's SHA-256 (hex), checked before parsing.
    Only local files are read (tiktoken also fetches URLs): download the file
    once and pass its path.
    """
    return parse_tiktoken_bpe(read_local_file(path, expected_hash), os.fspath(path))


def read_local_file(path: "str | os.PathLike", expected_hash: str | None = None) -> bytes:
    """The bytes of a file on disk (a URL is refused, saying so), its SHA-256 (hex) checked
    against ``expected_hash`` when given."""
    text = os.fspath(path)
    if "://" in text:
        raise ConfigError(f"{text} is a URL; pieceworks reads rank files from disk only",
                          fix="download the file once (e.g. with curl) and pass its local path")
    try:
        data = Path(text).read_bytes()
    except FileNotFoundError as exc:
        raise FileFormatError(text, "file not found", fix="check the path") from exc
    except IsADirectoryError as exc:
        raise FileFormatError(text, "is a folder, not a file", fix="pass the path of a file") from exc
    if expected_hash is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected_hash.lower():
            raise FileFormatError(text, f"SHA-256 is {digest}, expected {expected_hash}",
                                  fix="the file is not the expected one or was damaged; download it again")
    return data


def parse_tiktoken_bpe(data: bytes, path: str | None = None) -> dict[bytes, int]:
    """``{token_bytes: rank}`` from a ``.tiktoken`` file's bytes (``path`` names it in errors)."""
    decode = binascii.a2b_base64
    fields = data.split()
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if 2 * lines == len(fields):  # one token and one rank per line: the fast path applies
        try:
            tokens, ranks_text = fields[0::2], fields[1::2]
            ranks = {decode(token, strict_mode=True): int(rank) for token, rank in zip(tokens, ranks_text)}
            if (len(ranks) == lines and len(set(ranks.values())) == lines
                    and b"".join(ranks_text).isdigit()):    # (every field is non-empty: split() says so)
                return ranks
        except (ValueError, binascii.Error):
            pass
    return _parse_carefully(data, path)


def _parse_carefully(data: bytes, path: str | None) -> dict[bytes, int]:
    """Line by line, naming the first bad line (for files the fast path did not take)."""
    ranks: dict[bytes, int] = {}
    line_of_rank: dict[int, int] = {}
    line_of_token: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2:
            raise FileFormatError(path, f"expected 'base64-token rank', got {_show(line)}", line=number, fix=_FIX)
        token = _decode_token(fields[0], path, number)
        rank = _parse_rank(fields[1], path, number)
        if rank in line_of_rank:
            raise FileFormatError(path, f"rank {rank} is given twice (also on line {line_of_rank[rank]})",
                                  line=number, fix=_FIX)
        if token in line_of_token:
            raise FileFormatError(path, f"token {token!r} is listed twice (also on line {line_of_token[token]})",
                                  line=number, fix=_FIX)
        line_of_rank[rank] = number
        line_of_token[token] = number
        ranks[token] = rank
    return ranks


def format_tiktoken_bpe(ranks: dict[bytes, int]) -> bytes:
    """The ``.tiktoken`` text of ``ranks``, by rank."""
    import base64

    return b"".join(base64.b64encode(token) + b" " + str(rank).encode() + b"\n"
                    for token, rank in sorted(ranks.items(), key=lambda item: item[1]))


def dump_tiktoken_bpe(ranks: dict[bytes, int], path: "str | os.PathLike") -> None:
    """Write ``ranks`` as a ``.tiktoken`` file (atomically: a temporary file, then a rename)."""
    from ..fileio import atomic_write_bytes

    atomic_write_bytes(path, format_tiktoken_bpe(ranks))


def _decode_token(field: bytes, path, number: int) -> bytes:
    try:
        return binascii.a2b_base64(field, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise FileFormatError(path, f"token {_show(field)} is not valid base64 ({exc})", line=number,
                              fix=_FIX) from None


def _parse_rank(field: bytes, path, number: int) -> int:
    if not field.isdigit():
        raise FileFormatError(path, f"rank {_show(field)} is not a non-negative integer", line=number, fix=_FIX)
    return int(field)


def _show(raw: bytes, limit: int = 60) -> str:
    text = raw.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")
