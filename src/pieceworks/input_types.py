"""The names Hugging Face ``tokenizers`` exports for type hints, so code that imports them from
``tokenizers`` can import them from ``pieceworks``.

The two enums name the strings :meth:`PreTokenizedString.get_splits` takes
(which takes their members too); the rest are the input shapes of
``Tokenizer.encode`` and ``encode_batch``.

>>> OffsetReferential.ORIGINAL.value, OffsetType("byte")
('original', <OffsetType.BYTE: 'byte'>)
"""

from __future__ import annotations

from enum import Enum
from typing import List, Tuple, Union

__all__ = ["OffsetReferential", "OffsetType", "Offsets", "TextInputSequence", "PreTokenizedInputSequence",
           "TextEncodeInput", "PreTokenizedEncodeInput", "InputSequence", "EncodeInput"]


class OffsetReferential(Enum):
    ORIGINAL = "original"
    NORMALIZED = "normalized"


class OffsetType(Enum):
    BYTE = "byte"
    CHAR = "char"


Offsets = Tuple[int, int]
TextInputSequence = str
PreTokenizedInputSequence = Union[List[str], Tuple[str]]
TextEncodeInput = Union[TextInputSequence, Tuple[TextInputSequence, TextInputSequence], List[TextInputSequence]]
PreTokenizedEncodeInput = Union[PreTokenizedInputSequence,
                                Tuple[PreTokenizedInputSequence, PreTokenizedInputSequence],
                                List[PreTokenizedInputSequence]]
InputSequence = Union[TextInputSequence, PreTokenizedInputSequence]
EncodeInput = Union[TextEncodeInput, PreTokenizedEncodeInput]
