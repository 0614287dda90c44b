"""Hugging Face's ready-made tokenizers (``tokenizers.implementations``): a pipeline and a trainer in one.

``ByteLevelBPETokenizer`` (GPT-2), ``CharBPETokenizer`` (Sennrich's BPE with
``</w>``) and ``SentencePieceBPETokenizer`` (``▁`` for spaces) wrap a
:class:`~pieceworks.Tokenizer` built the way Hugging Face's are, so code
written for those trains and encodes the same.
"""

from .base_tokenizer import BaseTokenizer
from .byte_level_bpe import ByteLevelBPETokenizer
from .char_level_bpe import CharBPETokenizer
from .sentencepiece_bpe import SentencePieceBPETokenizer

__all__ = ["BaseTokenizer", "ByteLevelBPETokenizer", "CharBPETokenizer", "SentencePieceBPETokenizer"]
