"""The fast plan for char-level BPE after a class-run pre-tokenizer: the tokenizer people train themselves.

Hugging Face's quick tour trains ``Tokenizer(BPE(unk_token="[UNK]"))`` with
the ``Whitespace`` pre-tokenizer; ``WhitespaceSplit``, ``BertPreTokenizer``
and a ``Sequence`` of such cuts with ``Punctuation`` and ``Digits`` cut the
same way by char classes (:func:`~pieceworks.fast.bert.class_run_actions`),
and ``Lowercase``, ``BertNormalizer`` or NFD then ``StripAccents`` may come
first (:func:`~pieceworks.fast.bert.normalizer_options`), NFC or NFKC before
those. The general path makes Python objects
for each piece (a megabyte of prose took half a second, more than Hugging
Face). This plan runs the fused scan of :mod:`pieceworks.fast.bert` (the
normalizer and pre-tokenizer as one per-char map) and hands each piece to
the model's BPE encoder (``bpe_encode``: the same chars-to-symbols and merges
as :meth:`BPE.tokenize_chars <pieceworks.models.BPE.tokenize_chars>`,
prefix, suffix, unknown chars and byte fallback included), with a word cache.

With BPE-dropout each piece is merged afresh, no word cache, the draws in
the order the general path makes them (a batch then goes text by text:
:attr:`ClassRunBpePlan.samples`). Not for ``ignore_merges`` (a whole-piece
look-up the kernel does not make): that takes the general path.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import BPE
>>> from pieceworks.pre_tokenizers import Whitespace
>>> vocab = {"[UNK]": 0, "h": 1, "i": 2, "!": 3, "hi": 4}
>>> tok = Tokenizer(BPE(vocab, [("h", "i")], unk_token="[UNK]"))
>>> tok.pre_tokenizer = Whitespace()
>>> class_run_bpe_plan(tok).encode_plain("hi hiq!")
([4, 4, 0, 3], ['hi', 'hi', '[UNK]', '!'], [(0, 2), (3, 5), (5, 6), (6, 7)], [0, 1, 1, 2], 3)
"""

from __future__ import annotations

import sys

from .._unicode_forms import changes_text
from ..models.bpe import BPE
from ..normalizers import Sequence
from . import DrawsFromModel, register_plan
from .bert import BertWordPiecePlan, class_run_stages

__all__ = ["class_run_bpe_plan", "ClassRunBpePlan"]


@register_plan
def class_run_bpe_plan(tokenizer) -> "ClassRunBpePlan | None":
    """A plan for BPE after a char-by-char normalizer (or none) and a class-run pre-tokenizer, else None."""
    stages = class_run_stages(tokenizer, BPE)
    return None if stages is None else ClassRunBpePlan(*stages)


class ClassRunBpePlan(DrawsFromModel, BertWordPiecePlan):
    """:class:`~pieceworks.fast.bert.BertWordPiecePlan` with the pieces merged by the BPE encoder.

    The encoder says what an unknown char becomes (the ``unk_token``,
    fused or not, byte-fallback tokens, or nothing); a piece needing an
    ``unk_token`` the vocabulary lacks sends its text the general way, which
    raises the error.
    """

    def _model_kernel(self):
        """The model's BPE encoder (a new one after training or an option change)."""
        return self.model._get_encoder()

    def _model_limits(self) -> "tuple[int, int] | None":
        """No word-length cap, and the encoder's own unknown token; None with ignore_merges."""
        if self.model.ignore_merges:
            return None
        return sys.maxsize, -1

    def normalizes_nothing(self, text: str) -> bool:
        """Whether the normalizer leaves ``text`` as it is: none does, and a Unicode form alone may
        (Lowercase and BertNormalizer change most texts)."""
        if self.normalizer is None:
            return True
        form = self._form()
        return form is not None and type(self.normalizer) is not Sequence and not changes_text(form, text)
