"""The fast plan for converted SentencePiece tokenizers: Precompiled, Metaspace and Unigram in one call.

A tokenizer.json converted from a SentencePiece Unigram model (T5, mT5,
ruT5, ...) runs ``Sequence([Precompiled, Replace(" {2,}", " ")])`` (or
just ``Precompiled``, or no normalizer), then ``Metaspace``, then a
:class:`~pieceworks.models.Unigram`. On most text the normalizers change
nothing: no charsmap rule matches anywhere, and there are no two spaces in
a row. For such a text the kernel (``SpmCore.hf_metaspace_encode``)
checks exactly that, turns spaces into ``▁``, cuts the pieces and runs the
Viterbi on each, giving the general path's ids, tokens, offsets and word
ids. A text whose only changes are control chars the charsmap makes one
other char (newlines and tabs, which become spaces) is encoded after they
are swapped (``Precompiled.control_swaps``). Any other text the charsmap
changes is normalized cluster by cluster with its alignment
(``_aligned.aligned_precompiled``), encoded, and its offsets mapped back;
where that cannot be done the tokenizer takes the general path.

Hugging Face's ``SentencePieceUnigramTokenizer`` runs ``Nmt``, ``NFKC`` and
the same ``Replace`` instead. Nmt drops control chars (the rest keep their
alignment) and turns spacing chars into spaces one for one, NFKC
changes a text only where its quick check says so (normalized then with its
alignment), and a run of spaces is cut to its last space (where Hugging
Face's ``Replace`` aligns the one it leaves); each step that changed the text
keeps a view (``_aligned``) that maps the offsets back, last step first.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import Unigram
>>> from pieceworks.pre_tokenizers import Metaspace
>>> tok = Tokenizer(Unigram([("<unk>", 0.0), ("▁a", -1.0), ("b", -2.0), ("▁", -3.0)], unk_id=0))
>>> tok.pre_tokenizer = Metaspace()
>>> unigram_plan(tok).encode_plain("ab a")
([1, 2, 1], ['▁a', 'b', '▁a'], [(0, 1), (1, 2), (2, 4)], [0, 0, 1], 2)
"""

from __future__ import annotations

import re
import sys

from .._kernels.bpe_encode import same_objects
from .._kernels.raw_encoding import offset_list, pack
from .._regex import Regex
from .._unicode_forms import changes_text
from ..models.unigram import Unigram
from ..normalizers import _NMT_DROPPED, _NMT_SPACES, NFKC, Nmt, Precompiled, Replace, Sequence
from ..pre_tokenizers import Metaspace
from . import PREPEND_MODES, fill_plain_left, joined_words_of, register_plan, stages_key
from ._aligned import AlignedForm, AlignedText, aligned_precompiled
from .bert import UNICODE_FORMS     # (the forms it checks a text against, after Nmt if that comes first)

__all__ = ["unigram_plan", "UnigramMetaspacePlan"]

# What the SentencePiece converters append: runs of spaces become one space.
_COLLAPSE_SPACES = " {2,}"
_SPACE_RUNS = re.compile(_COLLAPSE_SPACES)


@register_plan
def unigram_plan(tokenizer) -> "UnigramMetaspacePlan | None":
    """A plan for Unigram + Metaspace + [Precompiled | [Nmt] [NFKC | NFC]] [Replace(' {2,}', ' ')], else None."""
    if type(tokenizer.model) is not Unigram or type(tokenizer.pre_tokenizer) is not Metaspace:
        return None
    if _normalizer_parts(tokenizer.normalizer) is None:
        return None
    return UnigramMetaspacePlan(tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer)


def _normalizer_parts(normalizer) -> "tuple[bytes | None, bool, bool, str | None] | None":
    """``(charsmap or None, collapses spaces, Nmt first, Unicode form or None)`` for a normalizer the
    plan can check, else None.

    >>> _normalizer_parts(None), _normalizer_parts(Replace(Regex(" {2,}"), " "))
    ((None, False, False, None), (None, True, False, None))
    >>> _normalizer_parts(Sequence([Nmt(), NFKC(), Replace(Regex(" {2,}"), " ")]))   # SentencePieceUnigramTokenizer's
    (None, True, True, 'NFKC')
    """
    members = [] if normalizer is None else (
        list(normalizer.normalizers) if type(normalizer) is Sequence else [normalizer])
    charsmap, collapse, nmt, form = None, False, False, None
    for position, member in enumerate(members):
        kind = type(member)
        if kind is Precompiled and position == 0:
            charsmap = member.precompiled_charsmap or None
        elif kind is Nmt and position == 0:
            nmt = True
        elif kind in UNICODE_FORMS and position == (1 if nmt else 0):
            form = member.form
        elif kind is Replace and _collapses_spaces(member) and position == len(members) - 1:
            collapse = True
        else:
            return None
    return charsmap, collapse, nmt, form


def _cleaned(text: str, nmt: bool, form: str | None, collapse: bool) -> "tuple[str, list]":
    """``(text through Nmt, the form and the collapse, the views of the steps that changed it)``.

    >>> text, views = _cleaned("a\t\x01 b\u2581ﬁ", True, "NFKC", True)
    >>> text, len(views)
    ('a b fi', 3)
    """
    views = []
    if nmt:
        if _NMT_DROPPED.search(text):
            # The control chars Nmt drops go; every other char keeps its own alignment (Hugging
            # Face's filter charges a dropped run to the char before it, which still spans itself).
            text = _kept_between(text, _NMT_DROPPED, 0, views)
        text = text.translate(_NMT_SPACES)      # (one for one: offsets hold)
    if form is not None and changes_text(form, text):
        view = AlignedForm(text, form)
        text = view.normalize(0, len(text))
        views.append(view)
    if collapse and "  " in text:
        text = _kept_between(text, _SPACE_RUNS, 1, views)     # a run's last space stays, with its alignment
    return text, views


def _starts_input(text: str, at: int, nmt: bool) -> bool:
    """Whether ``text`` (at ``at`` in its input) still starts the input once normalized: Metaspace's
    "first" prepends only there, and a control char Nmt drops at the start moves it on (in Hugging
    Face as here: the first char left aligns past 0).

    >>> _starts_input("ab", 0, True), _starts_input("\x01ab", 0, True), _starts_input("ab", 3, False)
    (True, False, False)
    """
    return not at and not (nmt and _NMT_DROPPED.match(text))


def _kept_between(text: str, runs: "re.Pattern[str]", last: int, views: list) -> str:
    """``text`` without what ``runs`` matches but each match's ``last`` chars, every char kept with
    its own alignment; the view that maps offsets back goes on ``views``.

    >>> views = []; _kept_between("a   b  c", _SPACE_RUNS, 1, views), len(views)
    ('a b c', 1)
    """
    view = AlignedText(text)
    kept = 0
    for run in runs.finditer(text):
        view.keep(kept, run.start())
        kept = run.end() - last
    view.keep(kept, len(text))
    views.append(view)
    return view.text


def _remapped(raw: bytes, n: int, views: list) -> bytes:
    """``raw``'s offsets moved back through ``views`` (the last step's first)."""
    for view in reversed(views):
        raw = view.remap(raw, n)
    return raw


def _collapses_spaces(replace: Replace) -> bool:
    return (isinstance(replace.pattern, Regex) and replace.pattern.pattern == _COLLAPSE_SPACES
            and replace.content == " ")


class UnigramMetaspacePlan:
    """Encodes a plain text segment in one kernel call; reads the stages' options on every call.

    ``encode_raw_batch`` runs the kernel on the whole list with the GIL
    released (``SpmCore.hf_metaspace_raw_batch``), so ``encode_batch`` runs
    ranges of a batch on threads; only the texts the charsmap changes come
    back to Python.
    """

    releases_gil = True
    nogil_min_chars = sys.maxsize       # (encode_plain keeps the GIL: no text is long enough)
    # The Viterbi costs ~100 ns a char: ranges of lines pay on threads from ~32 chars a line.
    raw_min_average_chars = 32
    #: encode_raw and encode_raw_batch exist (see pieceworks.fast): the kernel's lists packed, so
    #: frames (the post-processor's special tokens) and batches are put together in C.
    has_raw = True

    def __init__(self, model: Unigram, normalizer, pre_tokenizer: Metaspace):
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self._handed: "tuple | None" = None     # (text, setup, result) encode_raw made and declined

    #: encode_plain takes ``at``, where the text starts in the input (Metaspace's "first" prepends at 0 only).
    takes_position = True

    def encode_plain(self, text: str, at: int = 0):
        """``(ids, tokens, offsets, words, n_words)``, or None for the general path."""
        return self._encode(text, at)[1]

    def _encode(self, text: str, at: int) -> tuple:
        """``(setup, encode_plain's result)``: ``setup`` what it depends on, None if it went no further."""
        model, pre = self.model, self.pre_tokenizer
        if model.alpha:
            return None, None  # sampling: the general path draws
        parts = self._parts()   # (the Sequence may have been edited)
        if parts is None:
            return None, None
        charsmap, collapse, nmt, form = parts
        prepend = pre.prepend_scheme == "always" or pre.prepend_scheme == "first" and _starts_input(text, at, nmt)
        setup = (model._pieces, charsmap, collapse, pre.replacement, prepend, pre.split, nmt, form)
        handed = self._handed
        if handed is not None and handed[0] is text and handed[1] == setup:
            self._handed = None         # (made by encode_raw for this very text and setup, then declined)
            return setup, handed[2]
        if nmt or form is not None:
            return setup, self._encode_cleaned(text, setup)
        rules = None if charsmap is None else self._precompiled().rule_checker()
        result = model._core.hf_metaspace_encode(text, model._pieces, rules, pre.replacement, prepend, pre.split,
                                                 collapse)
        if result is None and charsmap is not None:
            # Most often a newline, which the charsmap makes a space: see Precompiled.control_swaps.
            plain = self._precompiled().swap_controls(text)
            if plain is not text and plain != text:
                result = model._core.hf_metaspace_encode(plain, model._pieces, rules, pre.replacement, prepend,
                                                         pre.split, collapse)
        if result is None and charsmap is not None:
            result = self._encode_aligned(text, setup)
        return setup, result

    def _encode_aligned(self, text: str, setup: tuple):
        """:meth:`encode_plain`'s result for a text the charsmap changes: normalized cluster by cluster with its
        alignment (``_aligned.aligned_precompiled``), encoded, offsets mapped back; or None."""
        view = aligned_precompiled(self._precompiled(), text)
        return None if view is None else self._encode_through(view.text, [view], setup)

    def _encode_cleaned(self, text: str, setup: tuple):
        """:meth:`encode_plain`'s result after Nmt, a Unicode form or both (see :func:`_cleaned`), or None."""
        return self._encode_through(*_cleaned(text, setup[6], setup[7], setup[2]), setup)

    def _encode_through(self, text: str, views: list, setup: tuple):
        """The kernel's result for ``text`` (normalized already), its offsets moved back through ``views``."""
        pieces, _, collapse, replacement, prepend, split = setup[:6]
        result = self.model._core.hf_metaspace_encode(text, pieces, None, replacement, prepend, split, collapse)
        if result is None or not views:
            return result
        ids, tokens, offsets, words, n_words = result
        n = len(ids)
        raw = _remapped(pack(ids, [a for a, _ in offsets], [b for _, b in offsets], words), n, views)
        return ids, tokens, offset_list(raw, n, 0), words, n_words

    def encode_raw(self, text: str, at: int = 0):
        """``(raw, n_tokens, n_words, strings)`` of :meth:`encode_plain`, or None (see pieceworks.fast).

        A token is spelled by its piece, so a text with an unknown char (spelled by its own text, as
        in Hugging Face) is None: ``encode_plain`` takes it, and is handed the result made here
        rather than encoding the text again.
        """
        setup, result = self._encode(text, at)
        if result is None:
            return None
        ids, _, offsets, words, n_words = result
        unk_id = self.model.unk_id
        if unk_id is not None and unk_id in ids:
            self._handed = (text, setup, result)
            return None
        return pack(ids, [s for s, _ in offsets], [e for _, e in offsets], words), len(ids), n_words, \
            self.model._pieces

    def encode_raw_batch(self, texts: list[str], ats: list[int] | None = None) -> list:
        """``[encode_raw(t, at) for t, at in zip(texts, ats)]`` (``ats``: each text's start in its input; 0s if
        None), but a text with an unknown char comes as ``(raw, n_tokens, n_words, strings, tokens)``:
        ``tokens`` its token strings, for a caller that sets them (one that cannot takes it as None).

        All texts go through the kernel at once, the GIL released; those the
        charsmap changes then again, swapped or normalized (:meth:`_changed_results`).
        """
        model, pre = self.model, self.pre_tokenizer
        parts = self._parts()
        if model.alpha or parts is None:
            return [None] * len(texts)      # sampling, or an edited normalizer: the general path
        charsmap, collapse, nmt, form = parts
        ats = ats if ats is not None else [0] * len(texts)
        scheme = pre.prepend_scheme
        prepends = [scheme == "always" or scheme == "first" and _starts_input(text, at, nmt)
                    for text, at in zip(texts, ats)]
        if nmt or form is not None:
            return self._cleaned_results(texts, prepends, nmt, form, collapse)
        rules = None if charsmap is None else self._precompiled().rule_checker()
        results = self._raw_results(texts, prepends, rules, collapse)
        if charsmap is not None:
            self._changed_results(texts, prepends, rules, collapse, results)
        return results

    def _changed_results(self, texts: list[str], prepends: list[bool], rules, collapse: bool, results: list) -> None:
        """The results still None in ``results`` (texts a charsmap rule matches in), made again: with the
        control chars the charsmap swaps one for one swapped (most often a newline, which it makes a
        space: see Precompiled.control_swaps), else normalized with their alignment."""
        redo = [k for k, result in enumerate(results) if result is None]
        if not redo:
            return
        precompiled = self._precompiled()
        if not precompiled.ascii_swaps()[1]:    # (else the kernel swapped them all as it read)
            swap = precompiled.swap_controls
            swapped = [(k, plain) for k in redo for plain in (swap(texts[k]),)
                       if plain is not texts[k] and plain != texts[k]]
            for (k, _), result in zip(swapped, self._raw_results([plain for _, plain in swapped],
                                                                 [prepends[k] for k, _ in swapped], rules, collapse)):
                results[k] = result     # (a swap is one char for one: the offsets hold)
            redo = [k for k in redo if results[k] is None]
        if redo:
            self._aligned_results(texts, prepends, collapse, redo, results)

    def _aligned_results(self, texts: list[str], prepends: list[bool], collapse: bool, redo: list[int],
                         results: list) -> None:
        """:meth:`encode_raw_batch`'s results for ``texts[k]``, ``k`` in ``redo`` (texts the charsmap
        changes), put in ``results``: each normalized with its alignment (``_aligned.aligned_precompiled``),
        all through the kernel at once, offsets moved back. A text no view takes stays None."""
        precompiled = self._precompiled()
        views = [(k, view) for k in redo for view in (aligned_precompiled(precompiled, texts[k]),) if view is not None]
        made = self._raw_results([view.text for _, view in views], [prepends[k] for k, _ in views], None, collapse)
        for (k, view), result in zip(views, made):
            if result is not None:
                results[k] = (view.remap(result[0], result[1]), *result[1:])

    def _cleaned_results(self, texts: list[str], prepends: list[bool], nmt: bool, form: str | None,
                         collapse: bool) -> list:
        """:meth:`encode_raw_batch` after Nmt, a Unicode form or both: every text the plan takes
        cleaned (:func:`_cleaned`), all through the kernel at once, offsets moved back."""
        cleaned = [_cleaned(text, nmt, form, collapse) for text in texts]
        out = self._raw_results([text for text, _ in cleaned], prepends, None, collapse)
        for k, (result, (_, views)) in enumerate(zip(out, cleaned)):
            if result is not None and views:
                out[k] = (_remapped(result[0], result[1], views), *result[1:])
        return out

    def _raw_results(self, texts: list[str], prepends: list[bool], rules, collapse: bool) -> list:
        """The kernel's batch, as ``encode_raw_batch`` hands its results on (made so in C)."""
        model = self.model
        return model._core.hf_metaspace_raw_batch(texts, prepends, model._pieces, rules, self.pre_tokenizer.replacement,
                                                  self.pre_tokenizer.split, collapse, self._swaps(rules))

    def _swaps(self, rules):
        """The table of ASCII chars the kernel swaps as it reads (``Precompiled.ascii_swaps``); None without rules."""
        return None if rules is None else self._precompiled().ascii_swaps()[0]

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot, or None (the long way).

        ``encode(text)`` is :meth:`encode_raw_batch`'s result for a text at
        0: the kernel's batch call on the one text, the stages read
        now (a short text spent most of its time reading them, and making
        the kernel's lists into a raw encoding). The normalizer Sequence's
        members are checked per call (editing its list moves no epoch). A
        text the charsmap changes, or holding an unknown char, takes
        :meth:`encode_raw_batch`'s ways; after Nmt or a Unicode form, every
        text. A text holding an unknown char comes with its own token strings
        (a fifth item: see ``SingleText``).
        """
        model, pre = self.model, self.pre_tokenizer
        parts = self._parts()
        if model.alpha or parts is None:
            return None
        charsmap, collapse, nmt, form = parts
        if nmt or form is not None:
            return self._encode_one, model._pieces
        rules = None if charsmap is None else self._precompiled().rule_checker()
        members = self.normalizer.normalizers if type(self.normalizer) is Sequence else ()
        expected = tuple(members)
        # (At 0, with no Nmt, a text starts its input: "first" prepends as "always" does.)
        prepends = [pre.prepend_scheme in ("always", "first")]
        batch, pieces, replacement, split = model._core.hf_metaspace_raw_batch, model._pieces, pre.replacement, pre.split
        swaps = self._swaps(rules)
        changed = self._changed_results

        def encode(text: str):
            if members and tuple(members) != expected:
                return None
            results = batch([text], prepends, pieces, rules, replacement, split, collapse, swaps)
            if results[0] is None and rules is not None:    # (a char the charsmap changes)
                changed([text], prepends, rules, collapse, results)
            return results[0]
        return encode, pieces

    def _encode_one(self, text: str):
        return self.encode_raw_batch([text])[0]

    def token_strings(self) -> list:
        """The table that spells each id's token (the model's pieces)."""
        return self.model._pieces

    def encode_around_batch(self, texts: list[str], around, strings, limit: int = -1) -> list | None:
        """Each text encoded around the added tokens ``around`` (a ``token_finder.AroundTokens``)
        splits out of it, in the kernel (``SpmCore.hf_metaspace_around_batch``): ``(raw, n,
        n_words, strings[, tokens])``, or None for a text to take the long way; None for all after
        Nmt or a Unicode form, or when sampling.

        A text the kernel leaves (a stretch the charsmap changes) that holds no token takes
        :meth:`encode_raw_batch` (normalized with its alignment); one that holds one, the long way.
        """
        encode = self.around_batch_now()
        return None if encode is None else encode(texts, around, strings, limit)

    def around_batch_now(self):
        """:meth:`encode_around_batch` with the stages read now, as ``encode(texts, around, strings,
        limit)``, or None: for ``Tokenizer.encode``'s snapshot, kept while the component epoch
        holds (reading them was a third of a chat turn's time). A normalizer Sequence's list
        edited in place since (which moves no epoch) makes a call give None: the long way reads
        the stages again."""
        model, pre = self.model, self.pre_tokenizer
        parts = self._parts()
        if model.alpha or parts is None or parts[2] or parts[3] is not None:
            return None
        charsmap, collapse = parts[0], parts[1]
        rules = None if charsmap is None else self._precompiled().rule_checker()
        members = self.normalizer.normalizers if type(self.normalizer) is Sequence else None
        expected = None if members is None else tuple(members)
        encode_around, plain_batch = model._core.hf_metaspace_around_batch, self.encode_raw_batch
        mode, pieces, replacement, split, swaps = (PREPEND_MODES[pre.prepend_scheme], model._pieces, pre.replacement,
                                                   pre.split, self._swaps(rules))

        def encode(texts: list[str], around, strings, limit: int = -1) -> list | None:
            if members is not None and not same_objects(members, expected):
                return None
            # (All positional: keywords cost a short text's call a tenth of its time.)
            return fill_plain_left(encode_around(texts, around, mode, pieces, rules, replacement, split, collapse,
                                                 swaps, strings, limit), texts, around, plain_batch, strings, limit)

        def encode_words(words: list[str], around, strings) -> tuple | None:
            """A pre-tokenized sequence's words, each as ``encode`` takes a text, as one raw result
            (``raw_encoding.joined_words``' form), in one kernel call; None: the long way."""
            if members is not None and not same_objects(members, expected):
                return None
            return joined_words_of(encode_around(words, around, mode, pieces, rules, replacement, split, collapse,
                                                 swaps, strings, -1, True), words, around, plain_batch, strings)

        encode.encode_words = encode_words      # (SingleText finds it there: see its words_in_one_call)
        return encode

    def normalizes_nothing(self, text: str) -> bool:
        """Not promised (the Precompiled rules are not checked here): tokens matched after normalizing
        take the general way."""
        return False

    _parts_for: tuple = ()      # (the stages_key the normalizer was read for, what was read)

    def _parts(self) -> "tuple[bytes | None, bool, bool, str | None] | None":
        """:func:`_normalizer_parts` of the normalizer, read again when the stages may have changed
        (``fast.stages_key``; a short text spent a fifth of its time reading them)."""
        key = stages_key(self)
        known = self._parts_for
        if known and known[0] == key:
            return known[1]
        parts = _normalizer_parts(self.normalizer)
        self._parts_for = (key, parts)
        return parts

    def _precompiled(self) -> Precompiled:
        return self.normalizer.normalizers[0] if type(self.normalizer) is Sequence else self.normalizer
