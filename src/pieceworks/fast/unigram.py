"""The fast plan for converted SentencePiece tokenizers: Precompiled, Metaspace and Unigram in one call.

A tokenizer.json converted from a SentencePiece Unigram model (T5, mT5,
ruT5, ...) runs ``Sequence([Precompiled, Replace(" {2,}", " ")])`` (or
just ``Precompiled``, or no normalizer), then ``Metaspace``, then a
:class:`~pieceworks.models.Unigram`. On most text the normalizers change
nothing: no charsmap rule matches anywhere, and there are no two spaces in
a row. For such a text the kernel (``SpmCore.hf_metaspace_encode``)
checks exactly that, turns spaces into ``▁``, cuts the pieces and runs the
Viterbi on each, giving the general path's ids, tokens, offsets and word
ids. For any other text it says so, and the tokenizer takes the general
path.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import Unigram
>>> from pieceworks.pre_tokenizers import Metaspace
>>> tok = Tokenizer(Unigram([("<unk>", 0.0), ("▁a", -1.0), ("b", -2.0), ("▁", -3.0)], unk_id=0))
>>> tok.pre_tokenizer = Metaspace()
>>> unigram_plan(tok).encode_plain("ab a")
([1, 2, 1], ['▁a', 'b', '▁a'], [(0, 1), (1, 2), (2, 4)], [0, 0, 1], 2)
"""

from __future__ import annotations

from .._kernels import unigram as K
from .._regex import Regex
from ..models.unigram import Unigram
from ..normalizers import Precompiled, Replace, Sequence
from ..pre_tokenizers import Metaspace
from . import register_plan

__all__ = ["unigram_plan", "UnigramMetaspacePlan"]

# What the SentencePiece converters append: runs of spaces become one space.
_COLLAPSE_SPACES = " {2,}"


@register_plan
def unigram_plan(tokenizer) -> "UnigramMetaspacePlan | None":
    """A plan for Unigram + Metaspace + [Precompiled] [Replace(' {2,}', ' ')], else None."""
    if type(tokenizer.model) is not Unigram or type(tokenizer.pre_tokenizer) is not Metaspace:
        return None
    if _normalizer_parts(tokenizer.normalizer) is None:
        return None
    return UnigramMetaspacePlan(tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer)


def _normalizer_parts(normalizer) -> "tuple[bytes | None, bool] | None":
    """``(charsmap or None, collapses spaces)`` for a normalizer the plan can check, else None.

    >>> _normalizer_parts(None), _normalizer_parts(Replace(Regex(" {2,}"), " "))
    ((None, False), (None, True))
    """
    members = [] if normalizer is None else (
        list(normalizer.normalizers) if type(normalizer) is Sequence else [normalizer])
    charsmap, collapse = None, False
    for position, member in enumerate(members):
        if type(member) is Precompiled and position == 0:
            charsmap = member.precompiled_charsmap or None
        elif type(member) is Replace and _collapses_spaces(member) and position == len(members) - 1:
            collapse = True
        else:
            return None
    return charsmap, collapse


def _collapses_spaces(replace: Replace) -> bool:
    return (isinstance(replace.pattern, Regex) and replace.pattern.pattern == _COLLAPSE_SPACES
            and replace.content == " ")


class UnigramMetaspacePlan:
    """Encodes a plain text segment in one kernel call; reads the stages' options on every call.

    The kernel builds the result lists as it goes, holding the GIL, so
    ``encode_batch`` keeps such a tokenizer on one thread.
    """

    releases_gil = False
    has_raw = False

    def __init__(self, model: Unigram, normalizer, pre_tokenizer: Metaspace):
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self._rules_for: "tuple[bytes | None, K.SpmNormalizer | None]" = (None, None)

    def encode_plain(self, text: str):
        """``(ids, tokens, offsets, words, n_words)``, or None for the general path."""
        model, pre = self.model, self.pre_tokenizer
        if model.alpha:
            return None  # sampling: the general path draws
        parts = _normalizer_parts(self.normalizer)   # the Sequence may have been edited
        if parts is None or pre.prepend_scheme == "first":
            return None  # "first" depends on where the segment sits in the text
        charsmap, collapse = parts
        return model._core.hf_metaspace_encode(text, model._pieces, self._rules(charsmap), pre.replacement,
                                               pre.prepend_scheme == "always", pre.split, collapse)

    def _rules(self, charsmap: "bytes | None"):
        # The charsmap's "no rule can match here" table, made once per charsmap.
        if charsmap is None:
            return None
        blob, rules = self._rules_for
        if blob is not charsmap:
            rules = K.SpmNormalizer(K.Charsmap(charsmap), None, False, False, False, False)
            self._rules_for = (charsmap, rules)
        return rules
