"""tokenizer.json text, exactly as ``json.dumps`` writes it, written by a kernel
(``_kernels.json_text``): with ``indent`` Python's encoder is pure Python, and a big model's
vocabulary and merges took it most of a second (Gemma 3's: 262 K tokens, 515 K merges).

A model's merges may come as a :class:`PairsById` (``Component._text_json``): spelled from
the merge table's ids, with no list made for each merge. What the kernel does not write (a
key that is not a str, a lone surrogate, a type of its own) goes to ``json.dumps``.

>>> data = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}}
>>> dumps(data) == json.dumps(data, ensure_ascii=False, separators=(",", ":"))
True
>>> dumps(data, pretty=True) == json.dumps(data, ensure_ascii=False, indent=2)
True
"""

from __future__ import annotations

import json

from .._collector import paused
from .._kernels.json_text import PairsById
from .._kernels.json_text import dumps as _kernel_dumps

__all__ = ["dumps", "PairsById"]

# Spaces a level of pretty output indents (Hugging Face's, and json.dumps(indent=2)'s).
INDENT = 2


def dumps(data, pretty: bool = False) -> str:
    """``json.dumps(data, ensure_ascii=False)``, compact (``,`` and ``:``) or with ``indent=2``."""
    # (The collector paused: json.dumps's fallback and the caller's data are many new containers.)
    with paused(True):
        text = _kernel_dumps(data, INDENT if pretty else 0)
        if text is not None:
            return text
        if pretty:
            return json.dumps(data, ensure_ascii=False, indent=INDENT, default=_as_json)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=_as_json)


def _as_json(value):
    """json.dumps's ``default``: a stand-in as the data it stands for.

    >>> from array import array
    >>> json.dumps({"merges": PairsById(array("I", [0, 1, 2]), ["a", "b", "ab"])}, default=_as_json)
    '{"merges": [["a", "b"]]}'
    """
    if type(value) is PairsById:
        return value.as_lists()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
