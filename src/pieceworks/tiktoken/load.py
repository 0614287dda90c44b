"""tiktoken's rank-file functions (``tiktoken.load``), on local files only.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "toy.tiktoken")
>>> dump_tiktoken_bpe({b"a": 0, b"b": 1, b"ab": 2}, path)
>>> load_tiktoken_bpe(path)
{b'a': 0, b'b': 1, b'ab': 2}
"""

from __future__ import annotations

from ..errors import ConfigError
from ..formats.gpt2_files import read_gpt2_ranks
from ..formats.tiktoken import dump_tiktoken_bpe, load_tiktoken_bpe

__all__ = ["load_tiktoken_bpe", "dump_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks"]

def data_gym_to_mergeable_bpe_ranks(vocab_bpe_file: str, encoder_json_file: str,
                                    vocab_bpe_hash: str | None = None, encoder_json_hash: str | None = None,
                                    clobber_one_byte_tokens: bool = False) -> dict[bytes, int]:
    """tiktoken ranks from GPT-2's ``vocab.bpe`` and ``encoder.json`` (local files; hashes are not checked)."""
    if clobber_one_byte_tokens:
        raise ConfigError("clobber_one_byte_tokens is not supported", fix="leave it False")
    return read_gpt2_ranks(encoder_json_file, vocab_bpe_file)
