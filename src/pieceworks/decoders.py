"""Decoders: turn the model's tokens back into text.

A decoder maps the list of token strings to a list of text chunks
(``decode_chain``); ``decode`` joins them. Names, fields and behaviour follow
Hugging Face ``tokenizers``.
"""

from __future__ import annotations

from ._component import Component, Fields, stage_base

__all__ = ["Decoder"]


@stage_base("decoder")
class Decoder(Component):
    """Base class: ``decode_chain(tokens) -> chunks``."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def decode(self, tokens: list[str]) -> str:
        """Decode a list of tokens to text."""
        return "".join(self.decode_chain(list(tokens)))
