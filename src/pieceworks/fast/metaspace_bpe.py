"""The fast plan for char-level BPE after Metaspace's split (and NFKC or NFC): SentencePiece-style BPE trained here.

Hugging Face's ``SentencePieceBPETokenizer`` (and any BPE trained with the
default ``Metaspace()``) runs NFKC, then Metaspace: each space becomes ``▁``,
a ``▁`` goes in front (``prepend_scheme``), and the text is cut before
each ``▁``. The general path builds Python objects for every word (a
megabyte of prose: about a second, where Hugging Face takes 0.7 s). Here
the fused scan of ``bert_fast`` does it: a char map in which a space maps to
``▁`` and ``▁`` starts a word the chars after it join, the ``▁`` put in
front as the char of source 0, each word merged by the model's BPE encoder
with a word cache (as :mod:`pieceworks.fast.class_run_bpe`). A text the
normalizer changes is normalized with its alignment
(:class:`~pieceworks.fast._aligned.AlignedForm`), encoded, and its offsets
mapped back.

BPE-dropout as in :mod:`pieceworks.fast.class_run_bpe`. Not for ``ignore_merges``, nor ``split=False`` (one piece
per text: :mod:`pieceworks.fast.spm_bpe`'s) or a space as the replacement:
those take another way.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import BPE
>>> from pieceworks.pre_tokenizers import Metaspace
>>> vocab = {"<unk>": 0, "▁": 1, "a": 2, "b": 3, "▁a": 4, "▁ab": 5}
>>> tok = Tokenizer(BPE(vocab, [("▁", "a"), ("▁a", "b")], unk_token="<unk>"))
>>> tok.pre_tokenizer = Metaspace()
>>> metaspace_bpe_plan(tok).encode_plain("ab  b")
([5, 1, 1, 3], ['▁ab', '▁', '▁', 'b'], [(0, 2), (2, 3), (3, 4), (4, 5)], [0, 1, 2, 2], 3)
"""

from __future__ import annotations

import threading

from .._kernels import bert_fast
from ..models.bpe import BPE
from ..pre_tokenizers import Metaspace
from . import plain_from_raw, register_plan
from .bert import UNICODE_FORMS
from .class_run_bpe import ClassRunBpePlan

__all__ = ["metaspace_bpe_plan", "MetaspaceBpePlan"]

@register_plan
def metaspace_bpe_plan(tokenizer) -> "MetaspaceBpePlan | None":
    """A plan for BPE after [NFKC or NFC and] a splitting Metaspace, else None."""
    model, normalizer, pre_tokenizer = tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer
    if type(model) is not BPE or type(pre_tokenizer) is not Metaspace or not pre_tokenizer.split:
        return None     # (split=False: spm_bpe's plan)
    if normalizer is not None and type(normalizer) not in UNICODE_FORMS:     # (a form alone)
        return None
    return MetaspaceBpePlan(model, normalizer, pre_tokenizer)


class MetaspaceBpePlan(ClassRunBpePlan):
    """Encodes plain text as the general path would (see the module doc); the stages' options are
    read on every call."""

    #: encode_plain and encode_raw take ``at``, where the text starts in the input ("first" prepends at 0 only).
    takes_position = True

    def _read_setup(self, kernel):
        pre = self.pre_tokenizer
        limits = self._model_limits()
        if limits is None or not pre.split or pre.replacement == " ":
            return None
        return (pre.replacement, pre.prepend_scheme), metaspace_map(pre.replacement), self._table_for(kernel), *limits

    def _front_of_stretches(self, options: tuple) -> tuple[str, bool]:
        """The Metaspace char in front of each stretch ("always") or of the one at 0 ("first")."""
        replacement, scheme = options
        return (replacement, scheme == "first") if scheme in ("always", "first") else ("", False)

    def _front(self, options: tuple, at: int) -> str:
        """The char put in front of a text starting at ``at`` in its input (the kernel leaves it out
        of a text that starts with a space or one already), or ""."""
        replacement, scheme = options
        return replacement if scheme == "always" or scheme == "first" and at == 0 else ""

    def _fronts(self, options: tuple, n: int, ats: list[int] | None) -> list[str] | None:
        fronts = [self._front(options, at) for at in (ats if ats is not None else [0] * n)]
        return fronts if any(fronts) else None

    def encode_raw(self, text: str, at: int = 0):
        """``(raw, n_tokens, n_words, strings)``, or None; see :mod:`pieceworks.fast`."""
        return self.encode_raw_batch([text], [at])[0]

    def encode_plain(self, text: str, at: int = 0):
        """``(ids, tokens, offsets, words, n_words)`` of :meth:`encode_raw`, or None."""
        return plain_from_raw(self.encode_raw(text, at))



_MAPS: dict[str, bert_fast.CharMap] = {}
_MAPS_LOCK = threading.Lock()


def metaspace_map(replacement: str) -> bert_fast.CharMap:
    """The kernel's char map for Metaspace's split with ``replacement``: a space maps to it, and it
    starts a piece that every other char joins. Built once per replacement (4.4 MB)."""
    found = _MAPS.get(replacement)
    if found is None:
        with _MAPS_LOCK:
            found = _MAPS.get(replacement)
            if found is None:
                actions = bytearray([2]) * 0x110000
                actions[ord(replacement)] = 3
                found = _MAPS[replacement] = bert_fast.CharMap(bytes(actions), {ord(" "): replacement}, (), True)
    return found
