"""GPT-2's original files: ``encoder.json`` (token -> id) and ``vocab.bpe`` (merges).

Both spell bytes in GPT-2's printable alphabet (:mod:`pieceworks.byte_level`).
:func:`read_gpt2_ranks` turns them into tiktoken ranks (token bytes -> rank)
as tiktoken's ``data_gym_to_mergeable_bpe_ranks`` does: the 256 single bytes
first (printable ones in byte order, then the others), then one token per
merge line, in order; the ids of ``encoder.json`` must be those ranks. Errors
name the file and the line.

>>> import json, os, tempfile
>>> d = tempfile.mkdtemp()
>>> merges = os.path.join(d, "vocab.bpe"); _ = open(merges, "w").write("#version: 0.2\\nh i\\n")
>>> enc = os.path.join(d, "encoder.json")
>>> ranks = read_gpt2_ranks(enc, merges, check_encoder=False)
>>> ranks[b"hi"], len(ranks)
(256, 257)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..byte_level import byte_chars_to_bytes, byte_chars_to_bytes_or_none
from ..errors import FileFormatError

__all__ = ["read_gpt2_ranks", "gpt2_byte_order"]

#: Tokens in encoder.json that are not mergeable (tiktoken drops them too).
SPECIAL_TOKENS = ("<|endoftext|>", "<|startoftext|>")


def gpt2_byte_order() -> list[int]:
    """The byte of each single-byte rank: printable bytes (not space) first, then the rest.

    >>> gpt2_byte_order()[:3], gpt2_byte_order()[188]
    ([33, 34, 35], 0)
    """
    order = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    order += [b for b in range(256) if b not in set(order)]
    return order


def read_gpt2_ranks(encoder_json: "str | os.PathLike", vocab_bpe: "str | os.PathLike",
                    check_encoder: bool = True) -> dict[bytes, int]:
    """tiktoken ranks from GPT-2's ``encoder.json`` and ``vocab.bpe``.

    With ``check_encoder`` (the default) every id in ``encoder.json`` must
    equal the rank the merges give its token, as tiktoken asserts.
    """
    ranks = {bytes([b]): rank for rank, b in enumerate(gpt2_byte_order())}
    path = os.fspath(vocab_bpe)
    for number, first, second in _merge_lines(path):
        token = _to_bytes(first, path, number) + _to_bytes(second, path, number)
        ranks[token] = len(ranks)
    if check_encoder:
        _check_encoder(os.fspath(encoder_json), ranks)
    return ranks


def _merge_lines(path: str):
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise FileFormatError(path, "file not found", fix="check the path of vocab.bpe") from exc
    except UnicodeDecodeError as exc:
        raise FileFormatError(path, f"not UTF-8 text ({exc.reason})", fix="give GPT-2's vocab.bpe") from exc
    lines = text.split("\n")
    # As tiktoken: the first line is the "#version" header, and the file ends with a newline.
    for number, line in enumerate(lines[1:-1] if len(lines) > 1 else [], start=2):
        fields = line.split()
        if len(fields) != 2:
            raise FileFormatError(path, f"expected two tokens separated by a space, got {line!r}", line=number,
                                  fix="each line after the header is one merge: 'left right'")
        yield number, fields[0], fields[1]


def _to_bytes(token: str, path: str, number: int) -> bytes:
    try:
        return byte_chars_to_bytes(token)
    except KeyError as exc:
        raise FileFormatError(path, f"token {token!r} has {exc.args[0]!r}, which is not in GPT-2's byte alphabet",
                              line=number, fix="give a byte-level BPE's vocab.bpe (GPT-2, RoBERTa style)") from None


def _check_encoder(path: str, ranks: dict[bytes, int]) -> None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise FileFormatError(path, "file not found", fix="check the path of encoder.json") from exc
    except json.JSONDecodeError as exc:
        raise FileFormatError(path, f"not valid JSON: {exc.msg}", line=exc.lineno,
                              fix="give GPT-2's encoder.json") from exc
    if not isinstance(data, dict):
        raise FileFormatError(path, "expected a JSON object of token -> id", fix="give GPT-2's encoder.json")
    seen = 0
    for token, tid in data.items():
        if token in SPECIAL_TOKENS:
            continue
        raw = byte_chars_to_bytes_or_none(token)
        if raw is None or ranks.get(raw) != tid:
            expected = None if raw is None else ranks.get(raw)
            raise FileFormatError(path, f"token {token!r} has id {tid!r} but the merges give it "
                                        f"{'no rank' if expected is None else f'rank {expected}'}",
                                  field=token, fix="encoder.json and vocab.bpe must come from the same tokenizer")
        seen += 1
    if seen != len(ranks):
        raise FileFormatError(path, f"has {seen} mergeable tokens but vocab.bpe makes {len(ranks)}",
                              fix="encoder.json and vocab.bpe must come from the same tokenizer")
