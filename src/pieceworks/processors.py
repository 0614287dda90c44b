"""Post-processors: the stage after the model, adding special tokens.

A post-processor takes the encoding of one input (or of a pair) and returns
the final encoding with ``[CLS] … [SEP]``-style special tokens, type ids and
sequence ranges. Names, fields and behaviour follow Hugging Face
``tokenizers``.
"""

from __future__ import annotations

from ._component import Component, Fields, stage_base
from .encoding import Encoding

__all__ = ["PostProcessor"]


@stage_base("post_processor")
class PostProcessor(Component):
    """Base class.

    Subclasses implement ``num_special_tokens_to_add(is_pair)`` and
    ``process_encodings(encodings, add_special_tokens)``; :meth:`process`
    numbers the sequences, runs them and merges the result.
    """

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        raise NotImplementedError

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        raise NotImplementedError

    def process(self, encoding: Encoding, pair: Encoding | None = None,
                add_special_tokens: bool = True) -> Encoding:
        """The final encoding of ``encoding`` (and ``pair``)."""
        encodings = [encoding] if pair is None else [encoding, pair]
        for i, enc in enumerate(encodings):
            enc.set_sequence_id(i)
        return Encoding.merge(self.process_encodings(encodings, add_special_tokens), growing_offsets=False)
