"""tiktoken's ``get_encoding`` (``tiktoken.registry``): OpenAI's public encodings from local rank files.

pieceworks downloads nothing: :func:`get_encoding` reads the ``.tiktoken``
files in the folder :func:`set_data_dir` or ``PIECEWORKS_TIKTOKEN_DIR``
names; the patterns and special tokens are tiktoken's (0.14).

>>> list_encoding_names()
['gpt2', 'r50k_base', 'p50k_base', 'p50k_edit', 'cl100k_base', 'o200k_base', 'o200k_harmony']
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..errors import ConfigError
from ..fast.byte_bpe import O200K_PATTERN, TIKTOKEN_CL100K_PATTERN, TIKTOKEN_R50K_PATTERN
from .core import ENDOFPROMPT, ENDOFTEXT, FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX, Encoding
from .load import load_tiktoken_bpe

__all__ = ["get_encoding", "list_encoding_names", "set_data_dir", "get_data_dir", "DATA_DIR_ENV", "ENCODINGS",
           "ENCODING_CONSTRUCTORS"]

#: The environment variable naming the folder of ``.tiktoken`` files for :func:`get_encoding`.
DATA_DIR_ENV = "PIECEWORKS_TIKTOKEN_DIR"

_data_dir: str | None = None


def set_data_dir(path: "str | os.PathLike | None") -> None:
    """Use the ``.tiktoken`` files in ``path`` for :func:`get_encoding` (None: back to the environment)."""
    global _data_dir
    _data_dir = None if path is None else os.fspath(path)
    with _lock:
        ENCODINGS.clear()


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


#: Each encoding's name and what makes the keyword arguments of its :class:`Encoding`, as
#: tiktoken's ``ENCODING_CONSTRUCTORS`` (a new entry makes a new name for :func:`get_encoding`).
ENCODING_CONSTRUCTORS = {
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
    return list(ENCODING_CONSTRUCTORS)


#: The encodings :func:`get_encoding` made, by name (tiktoken's ``ENCODINGS``): each is made once.
ENCODINGS: dict[str, Encoding] = {}
_lock = threading.Lock()


def get_encoding(encoding_name: str) -> Encoding:
    """One of OpenAI's public encodings, from the rank files in :func:`get_data_dir`.

    The patterns and special tokens are tiktoken's (0.14); only the rank
    files are read from disk (``gpt2`` uses r50k_base.tiktoken: the same ranks).
    """
    made = ENCODINGS.get(encoding_name)
    if made is not None:
        return made
    if encoding_name not in ENCODING_CONSTRUCTORS:
        raise ConfigError(f"unknown encoding {encoding_name!r}",
                          fix=f"use one of {', '.join(ENCODING_CONSTRUCTORS)}, or build Encoding(...) yourself")
    with _lock:     # (one thread reads the ranks; the others wait for its encoding)
        if encoding_name not in ENCODINGS:
            ENCODINGS[encoding_name] = Encoding(**ENCODING_CONSTRUCTORS[encoding_name]())
        return ENCODINGS[encoding_name]
