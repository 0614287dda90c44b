"""pieceworks: train and run subword tokenizers, faithfully and fast.

The public API mirrors Hugging Face ``tokenizers``: switch by changing the
import.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import WordLevel
>>> Tokenizer(WordLevel({"hi": 0}, unk_token="hi")).encode("hi").ids
[0]
"""

from . import errors
from . import decoders, models, normalizers, pre_tokenizers, processors
from .added_vocabulary import AddedToken
from ._regex import Regex
from .alignment import NormalizedString, SplitDelimiterBehavior
from .encoding import Encoding
from .input_types import (EncodeInput, InputSequence, OffsetReferential, Offsets, OffsetType,
                          PreTokenizedEncodeInput, PreTokenizedInputSequence, TextEncodeInput, TextInputSequence)
from .pretokenized import PreTokenizedString, Token
from .tokenizer import Tokenizer

__version__ = "0.1.0"

__all__ = [
    "AddedToken", "Encoding", "NormalizedString", "PreTokenizedString", "Regex", "SplitDelimiterBehavior",
    "Token", "Tokenizer", "decoders", "models", "normalizers", "pre_tokenizers", "processors",
    "trainers", "__version__", "BertWordPieceTokenizer", "ByteLevelBPETokenizer", "CharBPETokenizer",
    "SentencePieceBPETokenizer", "SentencePieceUnigramTokenizer", "OffsetReferential", "OffsetType", "Offsets",
    "TextInputSequence", "PreTokenizedInputSequence", "TextEncodeInput", "PreTokenizedEncodeInput",
    "InputSequence", "EncodeInput",
]

# Imported on first use (PEP 562): the trainers, and the ready-made tokenizers that train with
# them, were a tenth of the time `import pieceworks` took, and encoding needs neither.
_LAZY = {"trainers": "trainers", "implementations": "implementations",
         **dict.fromkeys(("BertWordPieceTokenizer", "ByteLevelBPETokenizer", "CharBPETokenizer",
                          "SentencePieceBPETokenizer", "SentencePieceUnigramTokenizer"), "implementations")}


def __getattr__(name: str):
    """``pieceworks.trainers`` and the ready-made tokenizers, imported when first asked for.

    >>> import pieceworks
    >>> pieceworks.trainers.BpeTrainer.__name__, pieceworks.CharBPETokenizer.__name__
    ('BpeTrainer', 'CharBPETokenizer')
    """
    from importlib import import_module

    if name not in _LAZY:
        raise AttributeError(f"module 'pieceworks' has no attribute {name!r}")
    module = import_module(f".{_LAZY[name]}", __name__)
    value = module if name == _LAZY[name] else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
