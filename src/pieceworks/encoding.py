"""Encoding: the result of encoding one input (or one pair of inputs).

It holds parallel lists, one entry per token: ``ids``, ``tokens``,
``offsets`` (char spans into the ORIGINAL text), ``type_ids``,
``word_ids``, ``special_tokens_mask``, ``attention_mask``; plus the
``overflowing`` encodings that truncation cut off, and which token ranges
belong to which input sequence. The methods and their corner cases follow
Hugging Face ``tokenizers.Encoding``.

The type is compiled (:mod:`pieceworks._kernels.encoding`, plain Python
code in an extension type): a batch makes one encoding per text, and a
Python class's instances cost a batch of short lines a sixth of its time.
:class:`~pieceworks.frame.Frame` is how a lazy encoding holds the special
tokens a post-processor adds.

>>> e = Encoding.from_tokens([(5, "hi", (0, 2)), (7, "there", (3, 8))], type_id=0)
>>> e.ids, e.attention_mask, e.char_to_token(4)
([5, 7], [1, 1], 1)
>>> e.pad(4, pad_id=0, pad_token="[PAD]"); e.tokens
['hi', 'there', '[PAD]', '[PAD]']
"""

from __future__ import annotations

from ._kernels.encoding import Encoding
from .frame import PLAIN_FRAME, Frame

__all__ = ["Encoding", "Frame", "PLAIN_FRAME"]
