"""Hugging Face's ready-made tokenizers (``tokenizers.implementations``): a pipeline and a trainer in one.

``ByteLevelBPETokenizer`` (GPT-2), ``CharBPETokenizer`` (Sennrich's BPE with
``</w>``), ``SentencePieceBPETokenizer`` (``▁`` for spaces),
``BertWordPieceTokenizer`` and ``SentencePieceUnigramTokenizer`` wrap a
:class:`~pieceworks.Tokenizer` built the way Hugging Face's are, so code
written for those trains and encodes the same.
"""

from .base_tokenizer import BaseTokenizer
from .bert_wordpiece import BertWordPieceTokenizer
from .byte_level_bpe import ByteLevelBPETokenizer
from .char_level_bpe import CharBPETokenizer
from .sentencepiece_bpe import SentencePieceBPETokenizer
from .sentencepiece_unigram import SentencePieceUnigramTokenizer

__all__ = ["BaseTokenizer", "BertWordPieceTokenizer", "ByteLevelBPETokenizer", "CharBPETokenizer",
           "SentencePieceBPETokenizer", "SentencePieceUnigramTokenizer"]
