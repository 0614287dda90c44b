"""Pre-tokenizers: the second stage, cutting the normalized text into pieces.

A pre-tokenizer cuts every split of a
:class:`~pieceworks.pretokenized.PreTokenizedString` (and may edit it, as
ByteLevel and Metaspace do); the model then sees one piece at a time.
Names, fields and behaviour follow Hugging Face ``tokenizers``.
"""

from __future__ import annotations

from ._component import Component, Fields, stage_base
from .pretokenized import PreTokenizedString

__all__ = ["PreTokenizer"]


@stage_base("pre_tokenizer")
class PreTokenizer(Component):
    """Base class: ``pre_tokenize(PreTokenizedString)`` cuts in place."""

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        raise NotImplementedError

    def pre_tokenize_str(self, sequence: str) -> list[tuple[str, tuple[int, int]]]:
        """The pieces of a plain string with their offsets.

        >>> WhitespaceSplit().pre_tokenize_str("hi  there")
        [('hi', (0, 2)), ('there', (4, 9))]
        """
        pretok = PreTokenizedString(sequence)
        self.pre_tokenize(pretok)
        return pretok.get_splits()
