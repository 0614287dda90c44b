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

from . import core, load, model, registry
from ..fast.byte_bpe import GPT2_PATTERN, O200K_PATTERN, TIKTOKEN_CL100K_PATTERN, TIKTOKEN_R50K_PATTERN
from .core import ENDOFPROMPT, ENDOFTEXT, FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX, Encoding
from .load import data_gym_to_mergeable_bpe_ranks, dump_tiktoken_bpe, load_tiktoken_bpe
from .model import encoding_for_model, encoding_name_for_model
from .registry import DATA_DIR_ENV, get_data_dir, get_encoding, list_encoding_names, set_data_dir

__all__ = ["Encoding", "get_encoding", "list_encoding_names", "encoding_for_model", "encoding_name_for_model",
           "load_tiktoken_bpe", "dump_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks", "set_data_dir",
           "get_data_dir", "GPT2_PATTERN", "DATA_DIR_ENV", "core", "load", "model", "registry"]
