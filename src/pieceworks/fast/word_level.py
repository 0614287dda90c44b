"""The fast plan for WordLevel after a class-run pre-tokenizer (Whitespace, as trained in Hugging Face's docs).

A WordLevel piece is one token: the vocabulary's entry for the whole piece,
or the unknown token. That is what WordPiece gives with a
continuing-subword prefix no token starts with (and no length cap): its
longest match from the piece's start is the whole piece when that is a
token, and otherwise nothing can go on from where the match stopped, so
the whole piece is unknown. So this plan runs the fused scan of
:mod:`pieceworks.fast.bert` with a WordPiece matcher made from the
WordLevel vocabulary and such a prefix; the general path made Python
objects for every piece (slower than Hugging Face).

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import WordLevel
>>> from pieceworks.pre_tokenizers import Whitespace
>>> tok = Tokenizer(WordLevel({"[UNK]": 0, "hello": 1, "hell": 2, "!": 3}, unk_token="[UNK]"))
>>> tok.pre_tokenizer = Whitespace()
>>> word_level_plan(tok).encode_plain("hello hellos!")
([1, 0, 3], ['hello', '[UNK]', '!'], [(0, 5), (6, 12), (12, 13)], [0, 1, 2], 3)
"""

from __future__ import annotations

import sys

from .._kernels.wordpiece_encode import WordPieceMatcher
from ..models.wordlevel import WordLevel
from ..pretokenized import Token
from . import register_plan
from .bert import BertWordPiecePlan, class_run_stages

__all__ = ["word_level_plan", "WordLevelPlan", "absent_prefix"]


@register_plan
def word_level_plan(tokenizer) -> "WordLevelPlan | None":
    """A plan for WordLevel after BertNormalizer/Lowercase/None and a class-run pre-tokenizer, else None."""
    stages = class_run_stages(tokenizer, WordLevel)
    return None if stages is None else WordLevelPlan(*stages)


class WordLevelPlan(BertWordPiecePlan):
    """:class:`~pieceworks.fast.bert.BertWordPiecePlan` with whole pieces looked up (see the module doc).

    The matcher is made again when the model gets another vocabulary, or
    its vocabulary another size (a dict edited in place with as many
    entries as before is not seen: assign a new one).
    """

    def __init__(self, model: WordLevel, normalizer, pre_tokenizer):
        super().__init__(model, normalizer, pre_tokenizer)
        self._matcher_for: tuple = (None, None)     # ((id of the vocab, its size), matcher), swapped as one

    def _model_kernel(self) -> WordPieceMatcher:
        vocab = self.model.vocab
        key = (id(vocab), len(vocab))
        known, matcher = self._matcher_for
        if known != key:
            matcher = WordPieceMatcher(vocab, absent_prefix(vocab), Token)
            self._matcher_for = (key, matcher)
        return matcher

    def _model_limits(self) -> tuple[int, int]:
        """No length cap; the unknown token's id (-1: not in the vocabulary, the general path raises)."""
        model = self.model
        unk_id = model.vocab.get(model.unk_token, -1)
        return sys.maxsize, unk_id if 0 <= unk_id < 2**31 else -1


def absent_prefix(vocab: dict[str, int]) -> str:
    """A char no token of ``vocab`` starts with (the highest such code point).

    >>> absent_prefix({"a": 0, "\\U0010ffff": 1}) == "\\U0010fffe"
    True
    """
    firsts = {token[0] for token in vocab if token}
    cp = 0x10FFFF
    while chr(cp) in firsts:
        cp -= 1
    return chr(cp)
