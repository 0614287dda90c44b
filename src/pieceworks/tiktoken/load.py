"""tiktoken's rank-file functions (``tiktoken.load``), on local files only.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "toy.tiktoken")
>>> dump_tiktoken_bpe({b"a": 0, b"b": 1, b"ab": 2}, path)
>>> load_tiktoken_bpe(path)
{b'a': 0, b'b': 1, b'ab': 2}
"""

from __future__ import annotations

import hashlib
import os

from ..errors import ConfigError
from ..formats.gpt2_files import read_gpt2_ranks
from ..formats.tiktoken import dump_tiktoken_bpe, load_tiktoken_bpe, read_local_file

__all__ = ["load_tiktoken_bpe", "dump_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks", "read_file",
           "read_file_cached", "check_hash"]


def read_file(blobpath: "str | os.PathLike") -> bytes:
    """The bytes of a local file (tiktoken also fetches URLs; here a URL is refused, saying so).

    >>> import tempfile; path = os.path.join(tempfile.mkdtemp(), "x.bin"); _ = open(path, "wb").write(b"hi")
    >>> read_file(path), check_hash(b"hi", hashlib.sha256(b"hi").hexdigest())
    (b'hi', True)
    """
    return read_local_file(blobpath)


def read_file_cached(blobpath: "str | os.PathLike", expected_hash: str | None = None) -> bytes:
    """:func:`read_file`, its SHA-256 checked against ``expected_hash`` (hex) when given.

    tiktoken keeps downloads in a cache folder; a local file needs none.
    """
    return read_local_file(blobpath, expected_hash)


def check_hash(data: bytes, expected_hash: str) -> bool:
    """Whether ``data``'s SHA-256 (hex) is ``expected_hash``, as tiktoken's."""
    return hashlib.sha256(data).hexdigest() == expected_hash

def data_gym_to_mergeable_bpe_ranks(vocab_bpe_file: str, encoder_json_file: str,
                                    vocab_bpe_hash: str | None = None, encoder_json_hash: str | None = None,
                                    clobber_one_byte_tokens: bool = False) -> dict[bytes, int]:
    """tiktoken ranks from GPT-2's ``vocab.bpe`` and ``encoder.json`` (local files; hashes are not checked)."""
    if clobber_one_byte_tokens:
        raise ConfigError("clobber_one_byte_tokens is not supported", fix="leave it False")
    return read_gpt2_ranks(encoder_json_file, vocab_bpe_file)
