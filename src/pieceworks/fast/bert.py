"""The fast plan for BERT-style WordPiece: normalizer, pre-tokenizer and model in one kernel pass.

It takes a tokenizer whose model is :class:`~pieceworks.models.WordPiece`,
whose normalizer works char by char (:func:`normalizer_options`:
:class:`~pieceworks.normalizers.BertNormalizer`, ``Lowercase``, NFD then
``StripAccents``, or none), maybe after NFC or NFKC (:func:`normalizer_form`:
a text the form changes is normalized with its alignment first, in C, and
the offsets mapped back), and whose pre-tokenizer cuts by char classes
(:func:`class_run_actions`: ``BertPreTokenizer``, ``Whitespace``,
``WhitespaceSplit``, or a ``Sequence`` of those with ``Punctuation`` and
``Digits``). The kernel (``_kernels/bert_fast.pyx``) reads each
code point once, looks up what the normalizer makes of it and what the
pre-tokenizer does with that, and hands finished pieces to the model's
LinMaxMatch matcher.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import WordPiece
>>> from pieceworks.normalizers import BertNormalizer
>>> from pieceworks.pre_tokenizers import BertPreTokenizer
>>> tok = Tokenizer(WordPiece({"[UNK]": 0, "hello": 1, "!": 2, "wo": 3, "##rld": 4}))
>>> tok.normalizer, tok.pre_tokenizer = BertNormalizer(), BertPreTokenizer()
>>> plan = bert_plan(tok)
>>> plan.encode_plain("Héllo WORLD!")
([1, 3, 4, 2], ['hello', 'wo', '##rld', '!'], [(0, 5), (6, 8), (8, 11), (11, 12)], [0, 1, 1, 2], 3)

The per-char map is exact because each step of BertNormalizer works on one
char at a time, except the canonical reordering inside NFD (strip_accents),
which only moves combining marks. Those are dropped as Hugging Face's Mn
(``_unicode_tables.bert_accent_marks``: its crate is at Unicode 8.0), except
194 of them: spacing marks (Mc with a non-zero combining class: some viramas,
Hangul tone marks, musical symbols) and marks newer than Unicode 8.0; a text
holding one of those is encoded by
the map only if NFD moves nothing in it, else by the general path. The
``StripAccents`` normalizer drops Mc and Me too, so fewer marks are left to
check. The map
is built once per set of options, with the general path's own Unicode data
(``unicodedata``, the normalizer's whitespace and CJK tables, the
pre-tokenizer's flags); the tests compare the two over all of Unicode.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import re
import sys
import threading
import unicodedata
from functools import partial
from itertools import compress, count
from typing import NamedTuple

from .. import _unicode_forms, _unicode_tables, normalizers
from .._component import epoch
from .._disk_cache import map_cached, source_stamp, write_cached
from .._kernels import bert_fast
from .._unicode_forms import changed_among, changes_text, form_tables, normalize
from .._unicode_tables import bert_accent_marks, bert_controls, char_flags, every_code_point, strip_accents_marks
from ..models.wordpiece import WordPiece
from ..normalizers import (_bert_spaces, _chinese_runs, _NEWER_LOWERCASE, NFC, NFD, NFKC, BertNormalizer, Lowercase,
                           StripAccents, _bert_control_runs, lower)
from ..normalizers import Sequence as NormalizerSequence
from ..pre_tokenizers import class_run_actions
from . import each_alone, register_plan
from ._aligned import AlignedForm

__all__ = ["bert_plan", "BertWordPiecePlan", "class_run_stages"]

# Texts this long (in chars) are encoded without holding the GIL: below it,
# releasing and re-taking the lock costs more than other threads gain.
NOGIL_MIN_CHARS = 1024


@register_plan
def bert_plan(tokenizer) -> "BertWordPiecePlan | None":
    """A plan for WordPiece after a char-by-char normalizer (or none) and a class-run pre-tokenizer, else None."""
    stages = class_run_stages(tokenizer, WordPiece)
    return None if stages is None else BertWordPiecePlan(*stages)


def class_run_stages(tokenizer, model_type: type) -> tuple | None:
    """``(model, normalizer, pre_tokenizer)`` if the model is a ``model_type`` and the char map
    follows the other two stages (:func:`normalizer_options`, a class-run pre-tokenizer), else None."""
    model, normalizer, pre_tokenizer = tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer
    if type(model) is not model_type or normalizer_options(normalizer) is None:
        return None
    return (model, normalizer, pre_tokenizer) if class_run_actions(pre_tokenizer) is not None else None


class BertWordPiecePlan:
    """Encodes plain text as the general path would; options are read on every call.

    The plan keeps the stage objects it was built for; the tokenizer builds a
    new plan when one of them is replaced. A subclass for another model
    gives :meth:`_model_kernel` and :meth:`_model_limits`
    (:class:`~pieceworks.fast.class_run_bpe.ClassRunBpePlan`).
    """

    #: The kernel drops the GIL on texts this long, so threads pay (see Tokenizer.encode_batch).
    releases_gil = True
    nogil_min_chars = NOGIL_MIN_CHARS
    #: encode_raw and encode_raw_batch exist (see pieceworks.fast).
    has_raw = True

    def __init__(self, model: WordPiece, normalizer: BertNormalizer | None, pre_tokenizer):
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self._tokens: tuple = (None, None)      # (matcher, TokenTable(matcher)), swapped as one
        self._setup_for: tuple = (-1, None, None)  # (epoch, matcher, _read_setup()), swapped as one

    def encode_plain(self, text: str):
        """``(ids, tokens, offsets, words, n_words)`` of a text without added tokens, or None.

        None sends the text to the general path: a spacing mark that NFD
        reorders in this text, a piece needing an ``unk_token`` the
        vocabulary lacks (the general path raises the error), or a text the
        normalizer's Unicode form changes (:meth:`encode_raw` aligns those).
        """
        setup = self._setup()
        if setup is None:
            return None
        form = self._form()
        if form is not None and changes_text(form, text):
            return None
        options, cmap, table, max_chars, unk_id = setup
        unk_token = self.model.unk_token
        result = bert_fast.encode(text, cmap, table, max_chars, unk_id, unk_token, NOGIL_MIN_CHARS)
        if result == bert_fast.NEEDS_ORDER_CHECK and nfd_keeps_order(text, options[0]):
            result = bert_fast.encode(text, cmap, table, max_chars, unk_id, unk_token, NOGIL_MIN_CHARS,
                                      order_checked=True)
        return result if type(result) is tuple else None

    def normalizes_nothing(self, text: str) -> bool:
        """Never promised: BertNormalizer changes most texts (it lowercases)."""
        return False

    def encode_raw(self, text: str):
        """``(raw, n_tokens, n_words, strings)``, or None; see :mod:`pieceworks.fast`.

        The tokens of :meth:`encode_plain` without a Python object per token;
        a text the normalizer's Unicode form changes is normalized with its
        alignment first (:class:`~pieceworks.fast._aligned.AlignedForm`), and
        the offsets mapped back.
        """
        setup = self._setup()
        if setup is None:
            return None
        result = self._encode_one(text, setup, self._form(), "")
        return None if result is None else (*result, setup[2].strings)

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot: :meth:`encode_raw` fixed to now.

        ``encode(text)`` is ``(raw, n_tokens, n_words)`` or a status int
        (then :meth:`encode_raw` finishes the text). None when the model's
        options are ones the kernel cannot follow. With a Unicode form first,
        a text it changes is aligned first.
        """
        setup = self._setup()
        if setup is None:
            return None
        options, cmap, table, max_chars, unk_id = setup
        front = self._front(options, 0)
        one = bert_fast.OneText(cmap, table, max_chars, unk_id, self.nogil_min_chars, front)
        form = self._form()
        if form is None:
            return one, table.strings

        def encode(text: str):
            return self._encode_one(text, setup, form, front) if changes_text(form, text) else one(text)
        return encode, table.strings

    def token_strings(self) -> list | None:
        """The table that spells each id's token (the kernel's), or None when the stages are not ones
        it follows."""
        setup = self._setup()
        return None if setup is None else setup[2].strings

    def encode_around_batch(self, texts: list[str], around, strings, limit: int = -1) -> list | None:
        """Each text encoded around the added tokens ``around`` (a ``token_finder.AroundTokens``) splits
        out of it, in the kernel (``bert_fast.encode_around_batch``): ``(raw, n, n_words, strings)`` or
        None (the long way) for each; None for all when the stages are not ones it follows.

        With a Unicode form first, a text it changes goes the long way
        (each stretch between tokens is normalized on its own). One it keeps
        as it is is encoded here: each stretch of it is kept as it is too.
        """
        setup = self._setup()
        if setup is None:
            return None
        options, cmap, table, max_chars, unk_id = setup
        form = self._form()
        changed = changed_among(form, texts) if form is not None else ()
        kept = _all_but(len(texts), changed)
        found = bert_fast.encode_around_batch(texts if not changed else [texts[k] for k in kept], around, cmap,
                                              table, max_chars, unk_id, strings, *self._front_of_stretches(options))
        out = found if not changed else _scattered(len(texts), kept, found)
        if limit >= 0:
            out = [None if result is None or result[1] > limit else result for result in out]
        return out

    def _front_of_stretches(self, options) -> tuple[str, bool]:
        """``(front, first_only)`` of ``bert_fast.encode_around_batch``: no char in front here."""
        return "", False

    def _front(self, options, at: int) -> str:
        """The char put in front of a text starting at ``at`` in its input: none here."""
        return ""

    def _fronts(self, options, n: int, ats: list[int] | None) -> list[str] | None:
        """:meth:`_front` of each of ``n`` texts starting at ``ats`` (0s if None), or None when no text
        gets one (here, none ever does: no call per text)."""
        return None

    def _form(self) -> str | None:
        """The Unicode form the normalizer applies before its char-by-char steps, or None."""
        return normalizer_form(self.normalizer)

    def encode_raw_batch(self, texts: list[str], ats: list[int] | None = None) -> list:
        """``[encode_raw(t) for t in texts]``: the texts the normalizer's Unicode form keeps (all,
        without one) scanned with the GIL released once for the list, the others aligned one by
        one. ``ats``: where each text starts in its input (see :meth:`_front`), 0s if None."""
        setup = self._setup()
        if setup is None:
            return [None] * len(texts)
        options, cmap, table, max_chars, unk_id = setup
        fronts = self._fronts(options, len(texts), ats)
        form = self._form()
        changed = changed_among(form, texts) if form is not None else ()
        if not changed:
            return self._scanned(texts, setup, fronts)
        if getattr(self, "samples", False) and len(texts) > 1:
            return each_alone(self.encode_raw_batch, texts, ats)
        kept = _all_but(len(texts), changed)
        out = _scattered(len(texts), kept, self._scanned([texts[k] for k in kept], setup,
                                                         None if fronts is None else [fronts[k] for k in kept]))
        for k in changed:
            result = self._encode_one(texts[k], setup, form, "" if fronts is None else fronts[k])
            out[k] = None if result is None else (*result, table.strings)
        return out

    def _scanned(self, texts: list[str], setup, fronts: list[str] | None) -> list:
        # (The results come made, each (raw, n, n_words, strings), untracked: see bert_fast.encode_raw_batch.)
        options, cmap, table, max_chars, unk_id = setup
        strings, statuses = table.strings, []
        results = bert_fast.encode_raw_batch(texts, cmap, table, max_chars, unk_id, fronts, strings, statuses)
        for k in statuses:      # (the few texts the batch scan could not finish)
            result = self._finished(texts[k], results[k], setup, "" if fronts is None else fronts[k])
            results[k] = None if result is None else (*result, strings)
        return results

    def _encode_one(self, text: str, setup, form: str | None, front: str) -> tuple | None:
        """``(raw, n_tokens, n_words)`` of one text, aligned first if ``form`` changes it; or None."""
        if form is not None and changes_text(form, text):
            view = AlignedForm(text, form)
            result = self._encode_one(view.normalize(0, len(text)), setup, None, front)
            return None if result is None else (view.remap(result[0], result[1]), *result[1:])
        options, cmap, table, max_chars, unk_id = setup
        result = bert_fast.encode_raw(text, cmap, table, max_chars, unk_id, self.nogil_min_chars, False, front)
        return result if type(result) is tuple else self._finished(text, result, setup, front)

    def _finished(self, text: str, status: int, setup, front: str) -> tuple | None:
        """``(raw, n_tokens, n_words)`` of a text the kernel gave ``status`` for, where the status only
        asks whether NFD moves a mark in it (and it does not); else None (the long way, as under
        BPE-dropout, ``samples``: encoding the text again would draw again)."""
        options, cmap, table, max_chars, unk_id = setup
        if status == bert_fast.NEEDS_ORDER_CHECK and nfd_keeps_order(text, options[0]) \
                and not getattr(self, "samples", False):
            result = bert_fast.encode_raw(text, cmap, table, max_chars, unk_id, self.nogil_min_chars, True, front)
            return result if type(result) is tuple else None
        return None

    def _setup(self):
        """``(normalizer options, char map, token table, max chars per word, unk id)``, read live;
        None when the stages, as they are now, are not ones the kernel follows.

        Remembered until a component attribute is assigned (the epoch moves)
        or the model's kernel changes (its vocabulary was edited).
        """
        kernel = self._model_kernel()
        known = self._setup_for
        if known[0] == epoch() and known[1] is kernel:
            return known[2]
        setup = self._read_setup(kernel)
        self._setup_for = (epoch(), kernel, setup)
        return setup

    def _read_setup(self, kernel):
        options = normalizer_options(self.normalizer)
        limits = self._model_limits()
        actions = class_run_actions(self.pre_tokenizer)
        if options is None or limits is None or actions is None:
            return None
        cmap = char_map(options, actions)
        return (options, cmap, self._table_for(kernel), *limits)

    def _table_for(self, kernel) -> bert_fast.TokenTable:
        """The :class:`~pieceworks._kernels.bert_fast.TokenTable` of ``kernel``, made once per kernel."""
        known, table = self._tokens
        if known is not kernel:
            table = bert_fast.TokenTable(kernel)
            self._tokens = (kernel, table)
        return table

    def _model_kernel(self):
        """What the kernel encodes a piece with: WordPiece's matcher."""
        return self.model._get_matcher()

    def _model_limits(self) -> "tuple[int, int] | None":
        """``(max chars per word, unk id)`` for the kernel (None: the model's options are not its own)."""
        model = self.model
        unk_id = model.vocab.get(model.unk_token, -1)
        if not 0 <= unk_id < 2**31:
            unk_id = -1                          # the general path decides what that means
        return min(model.max_input_chars_per_word, sys.maxsize), unk_id


# strip_accents of normalizer_options for NFD then StripAccents: all combining marks, not only Mn.
STRIP_ALL_MARKS = "marks"


def _all_but(n: int, left_out) -> list[int]:
    """``range(n)`` without the sorted positions ``left_out``.

    >>> _all_but(5, [1, 3])
    [0, 2, 4]
    """
    out = list(range(n))
    for k in reversed(left_out):
        del out[k]
    return out


def _scattered(n: int, at: list[int], results: list) -> list:
    """A list of ``n`` Nones, with ``results[j]`` at ``at[j]``.

    >>> _scattered(4, [0, 2], ["a", "b"])
    ['a', None, 'b', None]
    """
    out = [None] * n
    for k, result in zip(at, results):
        out[k] = result
    return out


# Unicode forms a normalizer may apply before the char-by-char steps: a text one changes is
# normalized with its alignment, then scanned (NFC and NFKC keep every stretch of a text they keep).
UNICODE_FORMS = {NFC: "NFC", NFKC: "NFKC"}


def normalizer_form(normalizer) -> str | None:
    """``"NFC"`` or ``"NFKC"`` when the normalizer is that form, or a ``Sequence`` starting with it;
    else None.

    >>> from pieceworks.normalizers import Sequence
    >>> normalizer_form(NFKC()), normalizer_form(Sequence([NFC(), Lowercase()])), normalizer_form(Lowercase())
    ('NFKC', 'NFC', None)
    """
    if type(normalizer) is NormalizerSequence and normalizer.normalizers:
        normalizer = normalizer.normalizers[0]
    return UNICODE_FORMS.get(type(normalizer))


def normalizer_options(normalizer) -> tuple[bool, bool, bool | str, bool] | None:
    """``(clean_text, handle_chinese_chars, strip_accents, lowercase)``, strip_accents resolved, for
    the normalizers the char map follows; None for any other.

    Lowercase is BertNormalizer's lowercase step alone: each char on its own
    (:func:`map_char`, Rust's ``char::to_lowercase``). ``strip_accents`` is
    True for BertNormalizer's (NFD, then drop Mn) and :data:`STRIP_ALL_MARKS`
    for a ``Sequence`` of NFD then StripAccents (drop Mn, Mc and Me), with
    or without Lowercase before or after StripAccents: each char comes out
    the same either way (a test checks every code point).

    >>> normalizer_options(BertNormalizer(lowercase=False)), normalizer_options(None)
    ((True, True, False, False), (False, False, False, False))
    >>> from pieceworks.normalizers import NFKD, Sequence
    >>> normalizer_options(Lowercase()), normalizer_options(NFKD())
    ((False, False, False, True), None)
    >>> normalizer_options(Sequence([NFD(), Lowercase(), StripAccents()]))
    (False, False, 'marks', True)

    A Unicode form (:func:`normalizer_form`) may come first, alone or
    before Lowercase; these are the options of what follows it.

    >>> normalizer_options(NFKC()), normalizer_options(Sequence([NFKC(), Lowercase()]))
    ((False, False, False, False), (False, False, False, True))
    """
    if normalizer is None or type(normalizer) in UNICODE_FORMS:
        return (False, False, False, False)
    if type(normalizer) is Lowercase:
        return (False, False, False, True)
    if type(normalizer) is NormalizerSequence:
        shape = tuple(map(type, normalizer.normalizers))
        if shape and shape[0] in UNICODE_FORMS:
            return _SEQUENCE_SHAPES[shape[1:]] if shape[1:] in ((), (Lowercase,)) else None
        return _sequence_options(shape, normalizer.normalizers)
    if type(normalizer) is not BertNormalizer:
        return None
    lowercase = normalizer.lowercase
    strip = lowercase if normalizer.strip_accents is None else normalizer.strip_accents
    return (normalizer.clean_text, normalizer.handle_chinese_chars, strip, lowercase)


# The shapes of Sequence the map follows (exact types), and what each is.
_SEQUENCE_SHAPES = {
    (NFD, StripAccents): (False, False, STRIP_ALL_MARKS, False),
    (NFD, StripAccents, Lowercase): (False, False, STRIP_ALL_MARKS, True),
    (NFD, Lowercase, StripAccents): (False, False, STRIP_ALL_MARKS, True),
    (Lowercase,): (False, False, False, True),
    (): (False, False, False, False),
}


def _sequence_options(shape: tuple, members: list):
    if shape == (BertNormalizer,):
        return normalizer_options(members[0])
    return _SEQUENCE_SHAPES.get(shape)


# -- the per-char map --------------------------------------------------------------

_MAPS: dict[tuple, bert_fast.CharMap] = {}
_MAPS_LOCK = threading.Lock()
# A map is 4.4 MB; a process rarely uses more than one or two option sets.
_MAPS_KEPT = 8


def char_map(options: tuple[bool, bool, bool, bool], actions: bytes) -> bert_fast.CharMap:
    """The kernel's char map for these normalizer options and pre-tokenizer actions; built once a
    process, and read from the disk cache (:mod:`pieceworks._disk_cache`) when an earlier process
    built it."""
    key = (options, actions)
    found = _MAPS.get(key)
    if found is None:
        with _MAPS_LOCK:
            found = _MAPS.get(key)
            if found is None:
                found = _cached_char_map(options, actions)
                if len(_MAPS) >= _MAPS_KEPT:
                    del _MAPS[next(iter(_MAPS))]
                _MAPS[key] = found
    return found


_MAP_MAGIC = b"PWBERTMAP2".ljust(16, b"\0")     # (16 bytes: the map after it is read as uint32s)
# Maps kept in the disk cache (4.6 MB each): a new build or option set replaces the least used.
_MAPS_ON_DISK = 6


def _cached_char_map(options: tuple[bool, bool, bool, bool], actions: bytes) -> bert_fast.CharMap:
    """:func:`char_map`'s map, from the disk cache or built (and then cached).

    Building takes about half a second of Unicode scans (its inputs are
    every code point's NFD, case and class); a process that reads it back
    starts its first encode in milliseconds, as Hugging Face's does.
    """
    name = f"bert-char-map-{_map_stamp(options, actions)}.bin"
    saved = map_cached(name, _MAP_MAGIC)
    if saved is not None:
        try:
            return bert_fast.CharMap.from_bytes(saved)
        except ValueError:
            pass                                # (damaged: built again and rewritten below)
    built = bert_fast.CharMap(char_flags().translate(actions), special_chars(*options), _checked_chars(options[2]))
    write_cached(name, _MAP_MAGIC, built.to_bytes(), keep=("bert-char-map-", _MAPS_ON_DISK))
    return built


def _map_stamp(options: tuple[bool, bool, bool, bool], actions: bytes) -> str:
    """A digest of what a char map is made from: the options, the actions and the code that reads them."""
    code = source_stamp(sys.modules[__name__], bert_fast, _unicode_tables, _unicode_forms, normalizers, "regex")
    return hashlib.blake2b(repr((options, code)).encode() + actions, digest_size=12).hexdigest()


def _checked_chars(strip_accents: bool | str) -> tuple[int, ...]:
    """The chars the kernel asks about (see :func:`reorderable_chars`) when accents are stripped so."""
    if not strip_accents:
        return ()
    facts = _unicode_facts()
    return facts.reorderable_past_all_marks if strip_accents == STRIP_ALL_MARKS else facts.reorderable


def special_chars(clean_text: bool, chinese: bool, strip_accents: bool | str, lowercase: bool) -> dict[int, str]:
    """``{code point: what BertNormalizer makes of it alone}`` for every char it changes.

    An empty string is a char it removes.

    >>> special = special_chars(True, True, True, True)
    >>> special[ord("É")], special[ord("中")], special[0], ord("a") in special
    ('e', ' 中 ', '', False)
    """
    facts = _unicode_facts()
    out: dict[int, str] = {}
    if clean_text:
        # Removed first, so no later step sees them (the bulk: private use planes).
        for start, end in facts.controls:
            out.update(dict.fromkeys(range(start, end), ""))
    candidates = set(_bert_spaces()) if clean_text else set()
    if strip_accents:
        candidates |= facts.strip_candidates
    if lowercase:
        candidates |= facts.lower_candidates
    chars = [chr(cp) for cp in candidates if cp not in out]
    # (Their NFDs in one C call: char by char, in Python, they took half a second of the map's start.)
    nfds = _nfd_each([_bert_spaces().get(ord(ch), ch) if clean_text else ch for ch in chars]) if strip_accents \
        else [None] * len(chars)
    for ch, nfd in zip(chars, nfds):
        mapped = map_char(ch, clean_text, chinese, strip_accents, lowercase, nfd)
        if mapped != ch:
            out[ord(ch)] = mapped
    if chinese:
        for start, end in facts.chinese:
            for cp in range(start, end):
                if cp not in out:
                    out[cp] = f" {chr(cp)} "      # (mapped above if another step changes it too)
    return out


def _nfd_each(chars: list[str]) -> list[str]:
    """NFD of each of ``chars`` (as Hugging Face's tables have it), normalized as one text: a line
    feed between them is a boundary nothing composes or reorders across.

    >>> _nfd_each(["é", "a", "\u212b"]) == ["e\u0301", "a", "A\u030a"]
    True
    """
    made = form_tables("NFD").aligned("\n".join(chars))[0].split("\n")
    return made if len(made) == len(chars) else [normalize(ch, "NFD") for ch in chars]


def map_char(ch: str, clean_text: bool, chinese: bool, strip_accents: bool | str, lowercase: bool,
             nfd: str | None = None) -> str:
    """BertNormalizer's steps, in its order, applied to one char (``strip_accents`` as
    :func:`normalizer_options` gives it; ``nfd``: the NFD of ``ch`` as clean_text leaves it, if known).

    >>> map_char("Å", True, True, True, True), map_char("\\t", True, True, True, True)
    ('a', ' ')
    >>> map_char("\\u0903", False, False, True, False), map_char("\\u0903", False, False, STRIP_ALL_MARKS, False)
    ('\u0903', '')
    """
    if clean_text:
        if _is_bert_control(ch):
            return ""
        ch = _bert_spaces().get(ord(ch), ch)
    spaced = chinese and _chinese_runs().fullmatch(ch) is not None
    out = ch
    if strip_accents:
        marks = strip_accents_marks() if strip_accents == STRIP_ALL_MARKS else bert_accent_marks()
        out = "".join(c for c in (normalize(out, "NFD") if nfd is None else nfd) if ord(c) not in marks)
    if lowercase:
        out = "".join(lower(c) for c in out)    # char by char, as the general path: no final sigma
    return f" {out} " if spaced else out


def reorderable_chars(strip_accents: bool | str = True) -> list[int]:
    """Chars whose NFD holds a mark that NFD may move and accent stripping keeps (non-zero class, kept).

    Their per-char mapping is exact only where NFD reorders nothing
    (:func:`nfd_keeps_order`): the kernel asks before using it.

    >>> [f"U+{cp:04X}" for cp in reorderable_chars()][:3]
    ['U+07FD', 'U+0898', 'U+0899']
    >>> len(reorderable_chars(STRIP_ALL_MARKS)) < len(reorderable_chars())
    True
    """
    return list(_checked_chars(strip_accents))


def nfd_keeps_order(text: str, clean_text: bool) -> bool:
    """Whether NFD of ``text`` (as BertNormalizer sees it) is each char's NFD, in order.

    Then canonical reordering moves nothing, and the per-char map is exact.

    >>> nfd_keeps_order("\\ua9a4\\ua9c0", True), nfd_keeps_order("a\\u0301\\ua9c0", True)
    (True, False)
    """
    if clean_text:
        text = _bert_control_runs().sub("", text)    # removed before NFD: their neighbours meet
    return unicodedata.normalize("NFD", text) == "".join(map(partial(unicodedata.normalize, "NFD"), text))


def bert_control_chars() -> list[int]:
    """What clean_text removes (``_unicode_tables.bert_controls``: Cc, Cf or Co in Hugging Face's
    Unicode 8.0 table, and NUL and U+FFFD, but not ``\\t\\n\\r``), as sorted code points.

    >>> controls = bert_control_chars()
    >>> 0 in controls, 0xFFFD in controls, ord("\\t") in controls, 0x200B in controls
    (True, True, False, True)
    """
    return [cp for start, end in _unicode_facts().controls for cp in range(start, end)]


class _UnicodeFacts(NamedTuple):
    """What the maps are built from, found once per process (about 0.3 s)."""

    controls: tuple[tuple[int, int], ...]       # runs [start, end) that clean_text removes
    chinese: tuple[tuple[int, int], ...]        # runs handle_chinese_chars spaces out
    strip_candidates: frozenset[int]            # chars NFD changes, combining marks, the accents stripped
    lower_candidates: frozenset[int]            # chars str.lower changes
    reorderable: tuple[int, ...]                # see reorderable_chars()
    reorderable_past_all_marks: tuple[int, ...]  # the same when StripAccents drops the marks


# Above this, no char has a canonical decomposition, a combining class or a
# lowercase form (checked when the facts are gathered, so a newer Unicode cannot slip by).
_PER_CHAR_SCAN_END = 0x30000


@functools.cache
def _unicode_facts() -> _UnicodeFacts:
    # compress/map keep the passes over ~10^6 code points in C.
    every = every_code_point()
    scan_end = _PER_CHAR_SCAN_END
    rest = every[scan_end:]
    if not unicodedata.is_normalized("NFD", rest) or any(map(unicodedata.combining, rest)) or rest.lower() != rest:
        scan_end = len(every)
    head = every[:scan_end]
    controls = sorted(bert_controls())
    marks = set(compress(count(), map(unicodedata.combining, head)))
    decomposing = set(compress(count(), map(operator.not_, map(partial(unicodedata.is_normalized, "NFD"), head))))
    accents, all_marks = bert_accent_marks(), strip_accents_marks()
    keeps_a_mark = lambda cp, stripped: any(unicodedata.combining(c) and ord(c) not in stripped  # noqa: E731
                                            for c in unicodedata.normalize("NFD", every[cp]))
    return _UnicodeFacts(
        controls=_as_runs(controls),
        chinese=tuple(m.span() for m in _chinese_runs().finditer(every)),
        strip_candidates=frozenset(marks | decomposing | accents | all_marks),
        lower_candidates=frozenset(compress(count(), map(operator.ne, map(str.lower, head), head)))
        | frozenset(_NEWER_LOWERCASE),
        reorderable=tuple(sorted(cp for cp in marks | decomposing if keeps_a_mark(cp, accents))),
        reorderable_past_all_marks=tuple(sorted(cp for cp in marks | decomposing if keeps_a_mark(cp, all_marks))),
    )


def _as_runs(code_points: list[int]) -> tuple[tuple[int, int], ...]:
    """Sorted code points as ``[start, end)`` runs.

    >>> _as_runs([1, 2, 3, 7])
    ((1, 4), (7, 8))
    """
    runs: list[list[int]] = []
    for cp in code_points:
        if runs and runs[-1][1] == cp:
            runs[-1][1] += 1
        else:
            runs.append([cp, cp + 1])
    return tuple((start, end) for start, end in runs)


def _is_bert_control(ch: str) -> bool:
    return ord(ch) in bert_controls()
