"""The Trainer interface: learn a model's vocabulary from word counts.

Trainers never read text: :func:`pieceworks.trainers.counts.count_words`
turns texts into a ``{piece: count}`` table (after the tokenizer's
normalizer and pre-tokenizer), and :meth:`Trainer.train` fills a model
from it. So training from files = counting + ``train``, and counts made
elsewhere (another machine, a cluster) train the same model.
"""

from __future__ import annotations

from typing import Mapping

__all__ = ["Trainer"]


class Trainer:
    """Base class: ``train(model, counts)`` fills ``model`` in place.

    Returns the special tokens the tokenizer must register as added tokens.
    """

    #: The model class this trainer fills (checked by Tokenizer.train).
    model_type: type | None = None
    show_progress: bool = True
    special_tokens: list
    #: Bytes the counting step may hold before it spills to disk (None: no
    #: limit); set with ``memory_limit="2GB"`` (see trainers.counts).
    memory_limit: int | None = None

    def train(self, model, counts: Mapping[str, int]) -> list:
        raise NotImplementedError


def memory_limit_option(value) -> int | None:
    """A trainer's ``memory_limit`` in bytes (``"300MB"``, ``"2GiB"``, an int, or None).

    >>> memory_limit_option("2GB")
    2000000000
    """
    from .counts import parse_memory_limit

    return parse_memory_limit(value)
