"""The fast plan for converted SentencePiece BPE tokenizers (Llama 2, Mistral, Gemma): one kernel call.

A tokenizer.json converted from a SentencePiece BPE model runs
``Sequence([Prepend("▁"), Replace(" ", "▁")])`` (Llama 2, Mistral) or just
``Replace(" ", "▁")`` (Gemma), then no pre-tokenizer, or a ``Split`` on
``" "``, which finds nothing once every space is a ``▁``; then a char-level
:class:`~pieceworks.models.BPE`, usually with byte fallback. So the whole
normalized text is one piece, and the normalizers only swap one char for
another and put one in front. The general path does that with a Python
alignment per char (2 MB of prose: 6 s, where Hugging Face takes 3). Here
the text is normalized with ``str.replace``, the BPE kernel encodes it in
one call, and each token's offsets follow from its place: a normalized
char is the original char one place to the left, and the ``▁`` put in front
spans the first char, as Hugging Face aligns it.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import BPE
>>> from pieceworks.normalizers import Prepend, Replace, Sequence
>>> vocab = {"▁": 0, "a": 1, "b": 2, "▁a": 3, "ab": 4, "▁ab": 5}
>>> tok = Tokenizer(BPE(vocab, [("▁", "a"), ("▁a", "b"), ("a", "b")]))
>>> tok.normalizer = Sequence([Prepend("▁"), Replace(" ", "▁")])
>>> spm_bpe_plan(tok).encode_plain("ab  b")
([5, 0, 0, 2], ['▁ab', '▁', '▁', 'b'], [(0, 2), (2, 3), (3, 4), (4, 5)], [0, 0, 0, 0], 1)
"""

from __future__ import annotations

from ..models.bpe import BPE
from ..normalizers import Prepend, Replace, Sequence
from ..pre_tokenizers import Split
from . import register_plan

__all__ = ["spm_bpe_plan", "SpmBpePlan"]


@register_plan
def spm_bpe_plan(tokenizer) -> "SpmBpePlan | None":
    """A plan for BPE after [Prepend(c)] Replace(" ", c) and no pre-tokenizer (or a Split on " "), else None."""
    plan = SpmBpePlan(tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer)
    return plan if plan._stages() is not None else None


def _normalizer_parts(normalizer) -> "tuple[str, str] | None":
    """``(what is put in front or "", what a space becomes)`` for a normalizer the plan reproduces, else None.

    Both are one char, and not a space: then every normalized char stands
    for one original char, the one put in front for the first.

    >>> _normalizer_parts(Sequence([Prepend("▁"), Replace(" ", "▁")])), _normalizer_parts(Replace(" ", "▁"))
    (('▁', '▁'), ('', '▁'))
    >>> _normalizer_parts(Prepend("▁")), _normalizer_parts(Replace(" ", "__")), _normalizer_parts(None)
    (None, None, None)
    """
    members = list(normalizer.normalizers) if type(normalizer) is Sequence else [normalizer]
    front, space = "", None
    for member in members:
        if type(member) is Prepend and not front and len(member.prepend) == 1 and member.prepend != " ":
            front = member.prepend
        elif (type(member) is Replace and space is None and type(member.pattern) is str and member.pattern == " "
              and len(member.content) == 1 and member.content != " "):
            space = member.content
        else:
            return None
    return None if space is None else (front, space)


def _splits_nothing(pre_tokenizer) -> bool:
    """No pre-tokenizer, or a Split on the literal " " (the normalizer leaves none), not inverted."""
    return pre_tokenizer is None or (type(pre_tokenizer) is Split and type(pre_tokenizer.pattern) is str
                                     and pre_tokenizer.pattern == " " and not pre_tokenizer.invert)


class SpmBpePlan:
    """Encodes a plain text segment in one kernel call; reads the stages' options on every call.

    The kernel holds the GIL, so ``encode_batch`` keeps such a tokenizer on
    one thread.
    """

    releases_gil = False
    #: encode_raw and encode_raw_batch exist (see pieceworks.fast).
    has_raw = True

    def __init__(self, model, normalizer, pre_tokenizer):
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer

    def _stages(self) -> "tuple[str, str] | None":
        """The normalizer's ``(front, space)`` if the stages, as they are now, are ones this plan
        reproduces (a Sequence may have been edited since the plan was made), else None."""
        if type(self.model) is not BPE or self.model.dropout or not _splits_nothing(self.pre_tokenizer):
            return None
        return _normalizer_parts(self.normalizer)

    def encode_plain(self, text: str):
        """``(ids, tokens, offsets, words, n_words)`` of a text without added tokens, or None."""
        parts = self._stages()
        if parts is None:
            return None
        if not text:
            return [], [], [], [], 0
        front, space = parts
        ids, tokens, starts, ends = self.model._get_encoder().encode_spans(front + text.replace(" ", space))
        if front:   # normalized char k is original char k - 1; the one in front spans the first char
            offsets = [(s - 1 if s else 0, e - 1 if e > 1 else 1) for s, e in zip(starts, ends)]
        else:
            offsets = list(zip(starts, ends))
        return ids, tokens, offsets, [0] * len(ids), 1

    def encode_raw(self, text: str):
        """``(raw, n_tokens, n_words, strings)`` of :meth:`encode_plain`, or None (see pieceworks.fast)."""
        parts = self._stages()
        if parts is None:
            return None
        encoder = self.model._get_encoder()
        if not text:
            return b"", 0, 0, encoder.strings
        front, space = parts
        raw, n = encoder.encode_raw(front + text.replace(" ", space), bool(front))
        return raw, n, 1, encoder.strings

    def encode_raw_batch(self, texts: list[str]) -> list:
        """``[encode_raw(t) for t in texts]``."""
        encode = self.encode_raw
        return [encode(text) for text in texts]

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot: ``encode(text)`` is
        :meth:`encode_raw` less its strings, the stages read on each call."""
        return self._encode_one, self.model._get_encoder().strings

    def _encode_one(self, text: str):
        result = self.encode_raw(text)
        return None if result is None else result[:3]

    def normalizes_nothing(self, text: str) -> bool:
        """Whether the normalizer leaves ``text`` as it is: only a text with no space, and nothing
        to put in front of it."""
        parts = self._stages()
        return parts is not None and " " not in text and not (parts[0] and text)
