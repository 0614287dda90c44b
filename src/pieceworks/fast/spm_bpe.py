"""The fast plan for converted SentencePiece BPE tokenizers (Llama 2, Mistral, Gemma): one kernel call.

A tokenizer.json converted from a SentencePiece BPE model runs
``Sequence([Prepend("▁"), Replace(" ", "▁")])`` (Llama 2, Mistral v0.1) or
just ``Replace(" ", "▁")`` (Gemma), then no pre-tokenizer, or a ``Split``
on ``" "``, which finds nothing once every space is a ``▁``; or no
normalizer and ``Metaspace(split=False)`` (Mistral v0.3), which does the
same as a pre-tokenizer: a ``▁`` for each space, and one in front unless
the text starts with one (for ``prepend_scheme="first"``, only the text's
first stretch, not one after an added token). Then a char-level
:class:`~pieceworks.models.BPE`, usually with byte fallback. So the whole
normalized text is one piece, and the stages only swap one char for
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

import sys
from functools import lru_cache
from typing import Callable
from itertools import repeat

from .._kernels.bpe_encode import (AROUND_ALWAYS, AROUND_FIRST, AROUND_FRONT, AROUND_NEVER, OneSpmText,
                                   same_objects)
from ..models.bpe import BPE
from ..normalizers import Precompiled, Prepend, Replace, Sequence
from ..pre_tokenizers import Metaspace, Split, WhitespaceSplit
from ..pre_tokenizers import Sequence as PreSequence
from . import (PREPEND_MODES, DrawsFromModel, each_alone, fill_plain_left, joined_words_of, plain_from_raw,
               register_plan, stages_key)
from ._aligned import aligned_precompiled

__all__ = ["spm_bpe_plan", "SpmBpePlan", "SpmBpeWordsPlan"]


@register_plan
def spm_bpe_plan(tokenizer) -> "SpmBpePlan | SpmBpeWordsPlan | None":
    """A plan for BPE after [Prepend(c)] Replace(" ", c) and no pre-tokenizer (or a Split on " "), or after
    Metaspace(split=False) alone, or after [Precompiled] and WhitespaceSplit then Metaspace; else None."""
    for kind in (SpmBpePlan, SpmBpeWordsPlan):
        plan = kind(tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer)
        if plan._stages() is not None:
            return plan
    return None


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


class _BpeKernelPlan(DrawsFromModel):
    """What the SentencePiece-style BPE plans share: the stages, the raw way, the one-text call.

    Subclasses give ``_stages()`` (None when the stages, as they are now,
    are not theirs: a Sequence may have been edited since the plan was
    made) and ``encode_raw(text, at)``. ``encode_raw_batch`` drops the GIL
    while the kernel encodes, so ``encode_batch`` runs ranges of a batch on
    threads; ``encode_plain`` keeps it throughout (``nogil_min_chars``: no
    text is long enough).
    """

    nogil_min_chars = sys.maxsize
    # The kernel takes ~60 ns a char, so ranges of lines pay on threads from ~32 chars a line
    # (Gemma 3, 2 MB of prose lines, 2 threads: 0.26 s at the byte-level plan's 256, 0.20 s here).
    raw_min_average_chars = 32
    #: encode_raw and encode_raw_batch exist (see pieceworks.fast).
    has_raw = True
    #: encode_plain and encode_raw take ``at``, where the text starts in the input (see the module doc).
    takes_position = True
    #: ``encode_around_batch`` makes each text's whole encoding at once (nothing encoded again when
    #: read), so it stays under BPE-dropout (see ``Tokenizer._around_parts``).
    around_whole = True

    def __init__(self, model, normalizer, pre_tokenizer):
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer

    def encode_raw_batch(self, texts: list[str], ats: list[int] | None = None) -> list:
        """``[encode_raw(t, at) for t, at in zip(texts, ats)]`` (``ats``: each text's start in its input; 0s if None)."""
        encode = self.encode_raw
        return [encode(text) for text in texts] if ats is None else [encode(t, at) for t, at in zip(texts, ats)]

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot: ``encode(text)`` is
        :meth:`encode_raw` less its strings, the stages read on each call."""
        return self._encode_one, self.model._get_encoder().strings

    def _encode_one(self, text: str):
        result = self.encode_raw(text)
        return None if result is None else result[:3]


#: Each prepend scheme (None: a normalizer's Prepend) as the kernel names it.
_AROUND_SCHEMES = {None: AROUND_FRONT, "always": AROUND_ALWAYS, "first": AROUND_FIRST, "never": AROUND_NEVER}


class SpmBpePlan(_BpeKernelPlan):
    """Encodes a plain text segment in one kernel call (see the module doc); reads the stages'
    options on every call (what it read is kept while no component changes), but for
    ``Tokenizer.encode``'s snapshot (:meth:`one_text`), which reads them once per component epoch."""

    _stages_for: tuple = ()     # (what the stages were read for, what was read)

    def _stages(self) -> "tuple[str, str, str | None] | None":
        """``(front, space, prepend scheme)`` if the stages, as they are now, are ones this plan
        reproduces (a Sequence may have been edited since the plan was made), else None. The scheme
        is None for a normalizer's Prepend (``front``, always), else Metaspace's.

        Read again when a component's attribute is assigned (the epoch moves) or the normalizer
        Sequence's list of members changes in place (a Tokenizer.encode of a short text spent a
        tenth of its time reading them).
        """
        key = stages_key(self)
        known = self._stages_for
        if known and known[0] == key:
            return known[1]
        stages = self._read_stages()
        self._stages_for = (key, stages)
        return stages

    def _read_stages(self) -> "tuple[str, str, str | None] | None":
        model, pre = self.model, self.pre_tokenizer
        if type(model) is not BPE:
            return None
        if type(pre) is Metaspace:
            if self.normalizer is not None or pre.split or pre.replacement == " ":
                return None
            return pre.replacement, pre.replacement, pre.prepend_scheme
        parts = _normalizer_parts(self.normalizer) if _splits_nothing(pre) else None
        return None if parts is None else (*parts, None)

    @staticmethod
    def _front(stages: tuple, text: str, at: int) -> str:
        """What goes in front of non-empty ``text`` (starting at char ``at`` of the input)."""
        front, space, scheme = stages
        if scheme is None:
            return front
        if scheme == "never" or scheme == "first" and at or text[0] == " " or text[0] == space:
            return ""
        return space

    def encode_plain(self, text: str, at: int = 0):
        """``(ids, tokens, offsets, words, n_words)`` of a text without added tokens, or None."""
        stages = self._stages()
        if stages is None:
            return None
        if not text:
            return [], [], [], [], 0
        front = self._front(stages, text, at)
        ids, tokens, starts, ends = self.model._get_encoder().encode_spans(front + text.replace(" ", stages[1]))
        if front:   # normalized char k is original char k - 1; the one in front spans the first char
            offsets = [(s - 1 if s else 0, e - 1 if e > 1 else 1) for s, e in zip(starts, ends)]
        else:
            offsets = list(zip(starts, ends))
        return ids, tokens, offsets, [0] * len(ids), 1

    def encode_raw(self, text: str, at: int = 0):
        """``(raw, n_tokens, n_words, strings)`` of :meth:`encode_plain`, or None (see pieceworks.fast)."""
        stages = self._stages()
        if stages is None:
            return None
        encoder = self.model._get_encoder()
        if not text:
            return b"", 0, 0, encoder.strings
        front = self._front(stages, text, at)
        raw, n = encoder.encode_raw(front + text.replace(" ", stages[1]), bool(front))
        return raw, n, 1, encoder.strings

    def encode_raw_batch(self, texts: list[str], ats: list[int] | None = None) -> list:
        """``[encode_raw(t, at) for t, at in zip(texts, ats)]`` (0s if None), the kernel's work done with
        the GIL released once."""
        stages = self._stages()
        if stages is None:
            return [None] * len(texts)
        encoder = self.model._get_encoder()
        strings, front_of, space = encoder.strings, self._front, stages[1]
        fronts = [front_of(stages, text, at) if text else "" for text, at in zip(texts, ats or repeat(0))]
        pieces = [front + text.replace(" ", space) for front, text in zip(fronts, texts)]
        # (A piece is empty exactly when its text is: a text's front goes only before some text.)
        return encoder.encode_raw_batch(pieces, [bool(front) for front in fronts], strings)

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot: :meth:`encode_raw` of a text
        at 0 less its strings, the stages read now, in C (``bpe_encode.OneSpmText``: the Python
        around the kernel cost a short text twice the kernel's time); None when they need the long way."""
        stages = self._stages()
        if stages is None:
            return None
        front, space, scheme = stages
        if scheme is not None and len(space) != 1:
            return super().one_text()
        normalizer = self.normalizer
        encoder = self.model._get_encoder()
        members = normalizer.normalizers if type(normalizer) is Sequence else None
        return OneSpmText(encoder, front, space, _AROUND_SCHEMES[scheme], members), encoder.strings

    def token_strings(self) -> list:
        """The table that spells each id's token (the kernel's)."""
        return self.model._get_encoder().strings

    def encode_around_batch(self, texts: list[str], around, strings, limit: int = -1) -> list | None:
        """Each text encoded around the added tokens ``around`` (a ``token_finder.AroundTokens``)
        splits out of it, in the kernel (``BpeEncoder.encode_around_batch``): ``(raw, n, 0,
        strings)`` or None (the long way) for each; None for all when the stages need more (a
        Prepend of several chars)."""
        encode = self.around_batch_now()
        return None if encode is None else encode(texts, around, strings, limit)

    def around_batch_now(self):
        """:meth:`encode_around_batch` with the stages read now, as ``encode(texts, around, strings,
        limit)``, or None: for ``Tokenizer.encode``'s snapshot, kept while the component epoch
        holds (reading the stages was a fifth of a Gemma 3 chat turn's time). A normalizer
        Sequence's list edited in place since (which moves no epoch) makes a call give None: the
        long way reads the stages again."""
        stages = self._stages()
        if stages is None:
            return None
        front, space, scheme = stages
        code = _AROUND_SCHEMES.get(scheme)
        if code is None or len(space) != 1 or scheme is None and len(front) > 1:
            return None
        encode_around = self.model._get_encoder().encode_around_batch
        front = front if scheme is None else ""
        members = self.normalizer.normalizers if type(self.normalizer) is Sequence else None
        expected = None if members is None else tuple(members)

        def encode(texts: list[str], around, strings, limit: int = -1) -> list | None:
            if members is not None and not same_objects(members, expected):
                return None
            return encode_around(texts, around, front, space, code, strings, limit)
        return encode

    def normalizes_nothing(self, text: str) -> bool:
        """Whether the normalizer leaves ``text`` as it is: only a text with no space, and nothing
        to put in front of it (Metaspace, a pre-tokenizer, changes no normalized text)."""
        stages = self._stages()
        if stages is None:
            return False
        return stages[2] is not None or " " not in text and not (stages[0] and text)


@lru_cache(maxsize=8)
def _white_space_to_spaces(swaps: "bytes | None") -> bool:
    """Whether ``swaps`` (``Precompiled.ascii_swaps``) only make white space controls (tab, line feed,
    vertical tab, form feed: Unicode White_Space, at which the kernel cuts words) spaces.

    >>> _white_space_to_spaces(bytes(9) + b"  " + bytes(245)), _white_space_to_spaces(bytes(1) + b" " + bytes(254))
    (True, False)
    """
    return swaps is None or all(to == 0 or to == 0x20 and cp in (9, 10, 11, 12) for cp, to in enumerate(swaps))


class SpmBpeWordsPlan(_BpeKernelPlan):
    """BPE after [Precompiled] then ``Sequence([WhitespaceSplit, Metaspace])`` (BARThez): each word,
    a ``▁`` in front, through the BPE kernel, all the text's words in one GIL-free call.

    A text the charsmap leaves alone but for control chars it makes one other char (each a grapheme
    of its own, swapped one for one: ``Precompiled.control_swaps``) is encoded as it is; any other
    is normalized cluster by cluster with its alignment (``_aligned.aligned_precompiled``), encoded, and
    its offsets mapped back. A text that holds a ``▁`` (Metaspace would cut a word there), before
    or after normalizing, takes the general way.
    """

    def _stages(self) -> "tuple | None":
        """``(Precompiled or None, replacement, prepend scheme)`` for stages this plan reproduces, else None."""
        model, normalizer, pre = self.model, self.normalizer, self.pre_tokenizer
        # (ignore_merges: a word in the vocabulary is one token, which the kernel's words do not look up.)
        if type(model) is not BPE or model.ignore_merges or normalizer is not None \
                and type(normalizer) is not Precompiled:
            return None
        if type(pre) is not PreSequence or len(pre.pretokenizers) != 2:
            return None
        split, meta = pre.pretokenizers
        if type(split) is not WhitespaceSplit or type(meta) is not Metaspace or meta.replacement.isspace():
            return None
        return normalizer, meta.replacement, meta.prepend_scheme

    @staticmethod
    def _taker(stages: tuple) -> "Callable[[str], str | None]":
        """What the kernel is given for a text (see the class doc): the text, its control chars swapped
        where that changes its words; or None where the plan does not take it as it is. The stages
        are read once, for every text it is asked of (per text, they were a third of a line's time).
        """
        precompiled, replacement = stages[0], stages[1]
        checker = None if precompiled is None else precompiled.rule_checker()
        if checker is None:
            return lambda text: None if replacement in text else text
        swaps, whole = precompiled.ascii_swaps()
        leaves = checker.leaves
        if whole and _white_space_to_spaces(swaps):
            # WhitespaceSplit cuts at such a char as at the space it becomes: only the check swaps it.
            return lambda text: None if replacement in text or not leaves(text, swaps) else text
        swap = precompiled.swap_controls
        return lambda text: None if replacement in text else swapped if leaves(swapped := swap(text)) else None

    def encode_raw(self, text: str, at: int = 0):
        """``(raw, n_tokens, n_words, strings)`` of ``text``, or None (see pieceworks.fast)."""
        return self.encode_raw_batch([text], [at])[0]

    def encode_raw_batch(self, texts: list[str], ats: list[int] | None = None) -> list:
        """``[encode_raw(t, at) for t, at in zip(texts, ats)]`` (0s if None): the words of every text
        the plan takes cut, merged and joined in one kernel call, without the GIL."""
        stages = self._stages()
        out: list = [None] * len(texts)
        if stages is None or len(stages[1]) != 1 or stages[2] not in PREPEND_MODES:
            return out
        precompiled, replacement, scheme = stages
        taken = list(map(self._taker(stages), texts))
        views = [None] * len(texts)
        for k, text in enumerate(taken):
            if text is None and precompiled is not None and replacement not in texts[k]:
                # A text the charsmap changes: normalized with its alignment, offsets mapped back.
                view = views[k] = aligned_precompiled(precompiled, texts[k])
                if view is not None and replacement not in view.text:
                    taken[k] = view.text
        where = [k for k, text in enumerate(taken) if text is not None]
        if not where:
            return out
        mode = PREPEND_MODES[scheme]
        if mode == 2 and ats is not None:   # "first": only where the text starts the input
            fronts = [2 if ats[k] == 0 else 0 for k in where]
        else:
            fronts = [mode] * len(where)
        encoder = self.model._get_encoder()
        results = encoder.encode_words_raw_batch([taken[k] for k in where], ord(replacement), fronts)
        strings = encoder.strings
        for k, (raw, n, n_words) in zip(where, results):
            out[k] = (raw if views[k] is None else views[k].remap(raw, n), n, n_words, strings)
        return out

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot: ``encode(text)`` is
        :meth:`encode_raw` of a text at 0 less its strings, the stages read now (a short line spent
        half its time reading them and going through the batch's lists).

        A text the plan takes as it is (see :meth:`_taker`) is one kernel call; any other takes
        :meth:`encode_raw`'s ways. (The normalizer is Precompiled itself, no Sequence whose list
        could change in place, and every other change moves the epoch.)
        """
        stages = self._stages()
        if stages is None or len(stages[1]) != 1 or stages[2] not in PREPEND_MODES:
            return super().one_text()
        take = self._taker(stages)
        encoder = self.model._get_encoder()
        words, mark, fronts = encoder.encode_words_raw_batch, ord(stages[1]), [PREPEND_MODES[stages[2]]]
        changed = self._encode_one

        def encode(text: str):
            taken = take(text)
            return changed(text) if taken is None else words([taken], mark, fronts)[0]
        return encode, encoder.strings

    def encode_plain(self, text: str, at: int = 0):
        """``(ids, tokens, offsets, words, n_words)`` of :meth:`encode_raw`, or None."""
        return plain_from_raw(self.encode_raw(text, at))

    def token_strings(self) -> list:
        """The table that spells each id's token (the kernel's)."""
        return self.model._get_encoder().strings

    def encode_around_batch(self, texts: list[str], around, strings, limit: int = -1) -> list | None:
        """Each text encoded around the added tokens ``around`` (a ``token_finder.AroundTokens``)
        splits out of it, in the kernel (``BpeEncoder.encode_words_around_batch``): ``(raw, n,
        n_words, strings)``, or None for a text to take the long way (one the plan does not take
        as it is: see :meth:`_taker`); None for all when the stages need more."""
        encode = self.around_batch_now()
        return None if encode is None else encode(texts, around, strings, limit)

    def around_batch_now(self):
        """:meth:`encode_around_batch` with the stages read now, as ``encode(texts, around, strings,
        limit)``, or None (for ``Tokenizer.encode``'s snapshot: see :meth:`one_text`).

        A text the charsmap leaves as it is leaves each stretch between its tokens so too (a rule
        that matches in a stretch matches in the text), so the kernel normalizes nothing. Of the
        others, those that hold no token take :meth:`encode_raw_batch` (normalized with their
        alignment); those that hold one, the long way.
        """
        stages = self._stages()
        if stages is None or len(stages[1]) != 1 or stages[2] not in PREPEND_MODES:
            return None
        take = self._taker(stages)
        encode_around = self.model._get_encoder().encode_words_around_batch
        mark, mode = ord(stages[1]), PREPEND_MODES[stages[2]]
        plain_batch = self.encode_raw_batch

        def encode(texts: list[str], around, strings, limit: int = -1) -> list:
            keep = [k for k, text in enumerate(texts) if take(text) == text]
            if len(keep) == len(texts):
                return encode_around(texts, around, mark, mode, strings, limit)
            if len(texts) > 1 and self.samples:
                return each_alone(lambda one, _: encode(one, around, strings, limit), texts)
            out: list = [None] * len(texts)
            for k, made in zip(keep, encode_around([texts[k] for k in keep], around, mark, mode, strings, limit)):
                out[k] = made
            return fill_plain_left(out, texts, around, plain_batch, strings, limit)

        def encode_words(words: list[str], around, strings) -> tuple | None:
            """A pre-tokenized sequence's words, each as ``encode`` takes a text, as one raw result
            (``raw_encoding.joined_words``' form), in one kernel call; None: the long way."""
            if not all(take(word) == word for word in words):
                return joined_words_of(encode(words, around, strings), words, around, plain_batch, strings)
            return joined_words_of(encode_around(words, around, mark, mode, strings, -1, True), words, around,
                                   plain_batch, strings)

        encode.encode_words = encode_words      # (SingleText finds it there: see its words_in_one_call)
        return encode

    def normalizes_nothing(self, text: str) -> bool:
        """Whether the normalizer (Precompiled) leaves ``text`` as it is: no rule matches in it."""
        stages = self._stages()
        if stages is None:
            return False
        checker = None if stages[0] is None else stages[0].rule_checker()
        return checker is None or checker.leaves(text)
