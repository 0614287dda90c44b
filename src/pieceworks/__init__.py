"""pieceworks: train and run subword tokenizers, faithfully and fast.

The public API mirrors Hugging Face ``tokenizers``: switch by changing the
import.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import WordLevel
>>> Tokenizer(WordLevel({"hi": 0}, unk_token="hi")).encode("hi").ids
[0]
"""

from . import errors
from . import decoders, models, normalizers, pre_tokenizers, processors, trainers
from .added_vocabulary import AddedToken
from ._regex import Regex
from .alignment import NormalizedString, SplitDelimiterBehavior
from .encoding import Encoding
from .input_types import (EncodeInput, InputSequence, OffsetReferential, Offsets, OffsetType,
                          PreTokenizedEncodeInput, PreTokenizedInputSequence, TextEncodeInput, TextInputSequence)
from .pretokenized import PreTokenizedString, Token
from .tokenizer import Tokenizer
from .implementations import (BertWordPieceTokenizer, ByteLevelBPETokenizer, CharBPETokenizer,
                              SentencePieceBPETokenizer, SentencePieceUnigramTokenizer)

__version__ = "0.1.0"

__all__ = [
    "AddedToken", "Encoding", "NormalizedString", "PreTokenizedString", "Regex", "SplitDelimiterBehavior",
    "Token", "Tokenizer", "decoders", "models", "normalizers", "pre_tokenizers", "processors",
    "trainers", "__version__", "BertWordPieceTokenizer", "ByteLevelBPETokenizer", "CharBPETokenizer",
    "SentencePieceBPETokenizer", "SentencePieceUnigramTokenizer", "OffsetReferential", "OffsetType", "Offsets",
    "TextInputSequence", "PreTokenizedInputSequence", "TextEncodeInput", "PreTokenizedEncodeInput",
    "InputSequence", "EncodeInput",
]
