"""BERT's ``vocab.txt``: one token per line, its id the line number (from 0).

Reading follows Hugging Face (``WordPiece.read_file``): lines end at ``\\n``,
trailing whitespace is stripped (Unicode White_Space, as Rust's
``trim_end``), the file must be UTF-8. Where Hugging Face silently accepts a
file that cannot mean what it says, pieceworks refuses it, naming the line:

* a blank line (or one of only whitespace) would be the token ``""``;
* a token on two lines would get the later line's id, and the earlier id
  would point at it too.

Writing puts the tokens in id order and refuses a vocabulary that would
not read back the same (ids with gaps, empty tokens, tokens with a newline or
trailing whitespace).

>>> parse_bert_vocab("[PAD]\\n[UNK]\\nhello\\n##s\\n")
{'[PAD]': 0, '[UNK]': 1, 'hello': 2, '##s': 3}
>>> format_bert_vocab({"[UNK]": 0, "a": 1})
'[UNK]\\na\\n'
"""

from __future__ import annotations

import os

from ..errors import ConfigError, FileFormatError

__all__ = ["parse_bert_vocab", "read_bert_vocab", "format_bert_vocab", "write_bert_vocab", "RUST_WHITESPACE"]

#: Rust's ``char::is_whitespace`` (Unicode White_Space): what ``trim_end`` strips.
#: Not Python's ``str.isspace``, which also counts U+001C..U+001F.
RUST_WHITESPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                   "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")

_FIX_IDS = "ids are line numbers, so removing a line shifts every later id; rebuild the file from its source"


def parse_bert_vocab(text: str, path: str | None = None) -> dict[str, int]:
    """The vocabulary of a vocab.txt's text (``path`` only names it in errors).

    >>> parse_bert_vocab("a\\n\\nb\\n", "v.txt")
    Traceback (most recent call last):
      ...
    pieceworks.errors.FileFormatError: v.txt:2: line 2 is blank: it would be the token ''. Fix: ...
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line
    vocab: dict[str, int] = {}
    for index, line in enumerate(lines):
        token = line.rstrip(RUST_WHITESPACE)
        if not token:
            raise FileFormatError(path, f"line {index + 1} is blank: it would be the token ''", line=index + 1,
                                  fix="put one token on every line (and no empty line); " + _FIX_IDS)
        first = vocab.get(token)
        if first is not None:
            raise FileFormatError(path, f"token {token!r} is on line {first + 1} and again on line {index + 1}",
                                  line=index + 1,
                                  fix="list every token once; " + _FIX_IDS)
        vocab[token] = index
    return vocab


def read_bert_vocab(path: "str | os.PathLike") -> dict[str, int]:
    """Read a vocab.txt file: ``{token: line number}``."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            data = fh.read()
    except FileNotFoundError as exc:
        raise FileFormatError(name, "file not found", fix="check the path to vocab.txt") from exc
    except OSError as exc:
        raise FileFormatError(name, f"cannot read: {exc.strerror or exc}", fix="check the path and permissions") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FileFormatError(name, f"not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})", line=line,
                              fix="save vocab.txt as UTF-8") from exc
    return parse_bert_vocab(text, name)


def format_bert_vocab(vocab: dict[str, int]) -> str:
    """vocab.txt's text: the tokens in id order, one per line.

    >>> format_bert_vocab({"a": 0, "c": 2})
    Traceback (most recent call last):
      ...
    pieceworks.errors.ConfigError: cannot write vocab.txt: no token has id 1 (ids must be 0..1 with no gap). Fix: ...
    """
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    for expected, (token, tid) in enumerate(by_id):
        if tid != expected:
            raise ConfigError(f"cannot write vocab.txt: no token has id {expected} "
                              f"(ids must be 0..{len(by_id) - 1} with no gap)",
                              fix="in vocab.txt ids are line numbers; save the tokenizer as tokenizer.json "
                                  "(Tokenizer.save) to keep these ids")
        problem = _unwritable(token)
        if problem:
            raise ConfigError(f"cannot write vocab.txt: token {tid} ({token!r}) {problem}",
                              fix="save the tokenizer as tokenizer.json (Tokenizer.save), which keeps any token")
    return "".join(token + "\n" for token, _ in by_id)


def write_bert_vocab(path: "str | os.PathLike", vocab: dict[str, int]) -> str:
    """Write vocab.txt atomically; return its path."""
    from ..fileio import atomic_write_text

    atomic_write_text(path, format_bert_vocab(vocab))
    return os.fspath(path)


def _unwritable(token: str) -> str | None:
    if not token:
        return "is empty"
    if "\n" in token:
        return "contains a newline"
    if token != token.rstrip(RUST_WHITESPACE):
        return "ends in whitespace, which reading strips"
    return None
