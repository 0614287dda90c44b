"""Normalizers: the first stage, editing the text before it is split.

Every normalizer edits a :class:`~pieceworks.alignment.NormalizedString`
in place through its one edit path, so offsets into the original text stay
exact. Names, fields and behaviour follow Hugging Face ``tokenizers``.

>>> Lowercase().normalize_str("HeLLo")
'hello'
"""

from __future__ import annotations

from ._component import Component, Fields, stage_base
from .alignment import NormalizedString

__all__ = ["Normalizer"]


@stage_base("normalizer")
class Normalizer(Component):
    """Base class: ``normalize(NormalizedString)`` edits in place."""

    def normalize(self, normalized: NormalizedString) -> None:
        raise NotImplementedError

    def normalize_str(self, sequence: str) -> str:
        """Normalize a plain string (offsets are not kept)."""
        ns = NormalizedString(sequence)
        self.normalize(ns)
        return ns.normalized
