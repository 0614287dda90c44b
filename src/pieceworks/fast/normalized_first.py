"""The fast plan for a normalizer applied up front: the text normalized whole, then the plan of the same
tokenizer without one.

Hugging Face's docs train a byte-level BPE after ``NFKC()``, and its
``ByteLevelBPETokenizer`` takes ``lowercase`` and ``unicode_normalizer``;
the byte-level kernel itself follows no normalizer but NFC. Here a text is
normalized first, in C where the normalizer changes it: a Unicode form with
each char's span in the input (``aligned_nfc.FormTables.aligned``), and
``Lowercase``, which keeps offsets where they are when each char
lowercases to one char (in a text with one that lowercases to several,
``İ``, each of those spans the char it came from: worked out in Python,
as such texts are rare). The plan the tokenizer would have without its
normalizer encodes the result, and the tokens' offsets are moved back into
the input (``raw_encoding.remap_spans``).

Those (NFC, NFKC, NFD, NFKD or ``Lowercase``, or a ``Sequence`` of one
form and ``Lowercase`` in either order) are the quick ones, and so are
``Replace`` and ``StripAccents`` anywhere in such a ``Sequence``: their
edits are found in C (the pattern's matches, the runs of marks) and the
spans built from slices, a kept char keeping its span and the chars an
edit puts in taking the span of the last char it took out, as Hugging
Face aligns them (Hugging Face's course trains its Unigram after
``Replace``, ``NFKD``, ``StripAccents`` and ``Replace``). Any other
built-in normalizer (``Strip``, ``Prepend``, ``Nmt``, two forms, ...)
runs as the general path runs it, on a
:class:`~pieceworks.alignment.NormalizedString` whose alignment gives the
spans: still one Python step per text, but the pre-tokenizer and the model
run in the kernel. (A custom normalizer, which may keep state or look at
more than its text, sends the tokenizer the general way.) A builder of
its own (:func:`~pieceworks.fast.register_fallback_plan`): tried only when
no plan takes the normalizer itself (the class-run and Metaspace plans do).

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import BPE
>>> from pieceworks.normalizers import NFKC
>>> from pieceworks.pre_tokenizers import ByteLevel
>>> vocab = {ch: i for i, ch in enumerate(sorted(ByteLevel.alphabet()))}
>>> tok = Tokenizer(BPE({**vocab, "fi": 256}, [("f", "i")]))
>>> tok.normalizer, tok.pre_tokenizer = NFKC(), ByteLevel(add_prefix_space=False)
>>> plan = normalized_first_plan(tok)
>>> plan.encode_plain("\\ufb01!")            # the ligature ﬁ is "fi" in NFKC: the token spans it
([256, 0], ['fi', '!'], [(0, 1), (1, 2)], [0, 1], 2)
"""

from __future__ import annotations

import re
import struct
from array import array
from itertools import chain
from types import SimpleNamespace

from .._component import CustomComponent
from .._kernels.aligned_nfc import composed_spans, edited_spans
from .._kernels.raw_encoding import remap_spans
from .._unicode_forms import changes_text, form_tables
from ..alignment import NormalizedString
from .._regex import Regex
from .._unicode_tables import strip_accents_marks
from ..normalizers import NFC, NFD, NFKC, NFKD, Lowercase, Replace, Sequence, StripAccents, _mark_runs, lower
from . import find_plan, plain_from_raw, register_fallback_plan, stages_key

__all__ = ["normalized_first_plan", "NormalizedFirstPlan", "normalizing_steps"]

_FORMS = {NFC: "NFC", NFKC: "NFKC", NFD: "NFD", NFKD: "NFKD"}
LOWERCASE = "lowercase"
STRIP_ACCENTS = "strip_accents"
_LOWERCASE = Lowercase()
#: The steps of a normalizer run as the general path runs it (see the module doc).
GENERAL = ("general",)


def normalizing_steps(normalizer) -> tuple | None:
    """The steps this plan applies for ``normalizer``, in order, or None for a normalizer it does not
    apply: form names and :data:`LOWERCASE` (one form at most, and ``Lowercase`` once), and any
    number of edits, ``Replace`` (the member itself) and :data:`STRIP_ACCENTS`.

    >>> from pieceworks.normalizers import Replace, StripAccents
    >>> normalizing_steps(Sequence([NFKC(), Lowercase()])), normalizing_steps(Lowercase())
    (('NFKC', 'lowercase'), ('lowercase',))
    >>> steps = normalizing_steps(Sequence([Replace("``", '"'), NFKD(), StripAccents()]))
    >>> type(steps[0]).__name__, steps[1:]
    ('Replace', ('NFKD', 'strip_accents'))
    >>> normalizing_steps(Sequence([NFC(), NFKC()])), normalizing_steps(None)
    (None, None)
    """
    steps = tuple(_step_of(member) for member in _members(normalizer))
    kept = [step for step in steps if type(step) is str and step != STRIP_ACCENTS]     # forms and Lowercase
    if not steps or None in steps or len(kept) > 2 or len(set(kept)) < len(kept) or kept.count(LOWERCASE) == 0 \
            and len(kept) == 2:
        return None
    return steps


def _step_of(member):
    """The step of one normalizer (see :func:`normalizing_steps`), or None."""
    if type(member) is Lowercase:
        return LOWERCASE
    if type(member) is StripAccents:
        return STRIP_ACCENTS
    if type(member) is Replace:
        return member
    return _FORMS.get(type(member))


def steps_of(normalizer) -> tuple | None:
    """:func:`normalizing_steps`, else :data:`GENERAL` for a built-in normalizer; None for none and
    for one holding a custom normalizer.

    >>> from pieceworks.normalizers import Strip, Normalizer
    >>> steps_of(NFKC()), steps_of(Sequence([Strip(), Lowercase()])), steps_of(None)
    (('NFKC',), ('general',), None)
    >>> class Shout:
    ...     def normalize(self, normalized):
    ...         normalized.uppercase()
    >>> steps_of(Sequence([NFKC(), Normalizer.custom(Shout())])) is None
    True
    """
    if normalizer is None:
        return None
    if any(isinstance(member, CustomComponent) for member in _members(normalizer)):
        return None
    return normalizing_steps(normalizer) or GENERAL


def _members(normalizer) -> list:
    """The normalizers ``normalizer`` runs, in order (a Sequence's are flat)."""
    return normalizer.normalizers if type(normalizer) is Sequence else [normalizer]


@register_fallback_plan
def normalized_first_plan(tokenizer) -> "NormalizedFirstPlan | None":
    """A plan for a normalizer :func:`steps_of` takes, wrapping the plan of the same model and
    pre-tokenizer without a normalizer; else None."""
    if steps_of(tokenizer.normalizer) is None:
        return None
    inner = find_plan(SimpleNamespace(model=tokenizer.model, normalizer=None, pre_tokenizer=tokenizer.pre_tokenizer),
                      fallbacks=False)
    if inner is None or not getattr(inner, "has_raw", False):
        return None
    return NormalizedFirstPlan(tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer, inner)


class NormalizedFirstPlan:
    """Normalizes each text (see the module doc), then encodes it with ``inner``, the plan of the same
    stages without a normalizer. The normalizer is read on every call; one that has become
    something else sends every text the general way."""

    has_raw = True

    def __init__(self, model, normalizer, pre_tokenizer, inner):
        self.model, self.normalizer, self.pre_tokenizer, self.inner = model, normalizer, pre_tokenizer, inner
        #: encode_raw and encode_raw_batch take where each text starts in its input, when inner's do
        #: (Metaspace's prepend_scheme="first"; see pieceworks.fast).
        self.takes_position = getattr(inner, "takes_position", False)
        self.nogil_min_chars = getattr(inner, "nogil_min_chars", 0)
        self._steps_for: tuple = (None, None)      # (stages_key, steps), swapped as one

    @property
    def releases_gil(self) -> bool:
        """As ``inner``'s, read live (BPE-dropout turns a byte-level plan's off)."""
        return getattr(self.inner, "releases_gil", False)

    @property
    def samples(self) -> bool:
        """Whether ``inner`` draws its ids at random (BPE-dropout: see ``DrawsFromModel``)."""
        return getattr(self.inner, "samples", False)

    def _steps(self) -> tuple | None:
        key = stages_key(self)
        known, steps = self._steps_for
        if known != key:
            steps = steps_of(self.normalizer)
            self._steps_for = (key, steps)
        return steps

    def normalized(self, text: str, steps: tuple) -> "tuple[str, bytes | None]":
        """``(made, spans)``: ``text`` normalized, and each made char's span in ``text`` (int32 pairs),
        or None when every char is where it was.

        >>> from array import array
        >>> plan = NormalizedFirstPlan(None, None, None, None)
        >>> plan.normalized("AB", ("NFKC", "lowercase"))
        ('ab', None)
        >>> made, spans = plan.normalized("\\u0130x", ("lowercase",))      # İ lowercases to two chars
        >>> made == "i\\u0307x", array("i", spans).tolist()
        (True, [0, 1, 0, 1, 1, 2])
        """
        if steps is GENERAL:
            return _normalized_generally(self.normalizer, text)
        made, spans = text, None
        for step in steps:
            if type(step) is Replace or step is STRIP_ACCENTS:
                edits = _edits(step, made)
                if edits is None:       # (an empty match: rare, so left to the general way)
                    return _normalized_generally(self.normalizer, text)
                if edits:
                    made, spans = _edited(made, spans, edits)
            elif step == LOWERCASE:
                lowered = _LOWERCASE.normalize_str(made)
                if len(lowered) != len(made):   # (a char lowercases to several: rare, so done in Python)
                    lowered, moved = lowercase_aligned(made)
                    spans = moved if spans is None else composed_spans(moved, spans)
                made = lowered
            elif changes_text(step, made):
                made, moved = form_tables(step).aligned(made)
                spans = moved if spans is None else composed_spans(moved, spans)
        return made, spans

    def normalizes_nothing(self, text: str) -> bool:
        """Whether the normalizer leaves ``text`` as it is."""
        steps = self._steps()
        if steps is None:
            return False
        made, spans = self.normalized(text, steps)
        return spans is None and made == text

    def token_strings(self):
        return self.inner.token_strings()

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot, or None: ``inner``'s own
        one-text call on the normalized text (its result as it is where offsets stay put)."""
        steps, strings = self._steps(), self.inner.token_strings()
        if steps is None or strings is None:
            return None
        found = self.inner.one_text()
        # (Not under BPE-dropout: a result it cannot move back is encoded again below, which would
        # draw again.)
        inner_one = None if found is None or found[1] is not strings or self.samples else found[0]

        def encode(text: str):
            made, spans = self.normalized(text, steps)
            if inner_one is not None and not (self.takes_position and _first_start(spans)):
                result = inner_one(made)
                if type(result) is not tuple or spans is None:
                    return result
                if len(result) == 3 or len(result) == 5 and type(result[4]) is list:    # (its own token strings)
                    return remap_spans(result[0], result[1], spans), *result[1:]
            result = self.encode_raw_batch([text])[0]
            if result is not None and len(result) == 5 and type(result[4]) is list:
                return result       # (a text with an unknown char: its own token strings)
            return None if result is None or len(result) != 4 else result[:3]
        return encode, strings

    def encode_raw(self, text: str, *at: int):
        """``(raw, n_tokens, n_words, strings)`` of ``text`` normalized, its offsets in ``text``; or None.
        (``at``: where it starts in its input, for an ``inner`` that takes it.)"""
        steps = self._steps()
        if steps is None:
            return None
        made, spans = self.normalized(text, steps)
        if not self.takes_position:
            return self._moved_back(self.inner.encode_raw(made), spans)
        return self._moved_back(self.inner.encode_raw(made, (at[0] if at else 0) + _first_start(spans)), spans)

    def encode_plain(self, text: str, *at: int):
        """``(ids, tokens, offsets, words, n_words)`` of :meth:`encode_raw`, or None; a text
        :meth:`encode_raw` leaves (an unknown char, spelled by its own text) as the batch makes it."""
        result = self.encode_raw_batch([text], list(at) if at else None)[0]
        if result is not None and len(result) == 5 and type(result[4]) is list:
            ids, _, offsets, words, n_words = plain_from_raw(result[:4])
            return ids, result[4], offsets, words, n_words
        return plain_from_raw(result) if result is not None and len(result) == 4 else None

    def encode_raw_batch(self, texts: list[str], ats: list[int] | None = None) -> list:
        """``[encode_raw(t) for t in texts]``: normalized one by one, encoded by ``inner`` in one call."""
        steps = self._steps()
        if steps is None:
            return [None] * len(texts)
        done = [self.normalized(text, steps) for text in texts]
        made = [item[0] for item in done]
        if not self.takes_position:
            found = self.inner.encode_raw_batch(made)
        else:   # (where the made text's first char was: a normalizer may drop the chars before it)
            starts = [(0 if ats is None else ats[k]) + _first_start(item[1]) for k, item in enumerate(done)]
            found = self.inner.encode_raw_batch(made, starts)
        return [self._moved_back(result, item[1]) for result, item in zip(found, done)]

    @staticmethod
    def _moved_back(result, spans: bytes | None):
        """``inner``'s ``result`` with its offsets moved back into the input (``spans``: see
        :meth:`normalized`)."""
        if result is None or spans is None:
            return result
        return (remap_spans(result[0], result[1], spans), *result[1:])


# The chars whose lowercase is several chars (İ alone; a test checks every code point).
_LOWERCASES_TO_SEVERAL = re.compile("[\u0130]")


def lowercase_aligned(text: str) -> tuple[str, bytes]:
    """``Lowercase`` of ``text``, char by char, and each made char's span in ``text`` (int32 pairs):
    a char that lowercases to several gives each of them its own span.

    >>> from array import array
    >>> made, spans = lowercase_aligned("A\\u0130")
    >>> made == "ai\\u0307", array("i", spans).tolist()
    (True, [0, 1, 1, 2, 1, 2])
    """
    # (Each such char is an edit whose chars all take its span, as edited_spans aligns them.)
    edits = [(*found.span(), lower(found.group())) for found in _LOWERCASES_TO_SEVERAL.finditer(text)]
    return _LOWERCASE.normalize_str(text), edited_spans(None, len(text), edits)


#: CLIP's normalizer replaces the runs this matches with one space.
WHITE_SPACE_RUNS = r"\s+"


def _edits(step, text: str) -> list[tuple[int, int, str]] | None:
    """The edits a ``Replace`` or :data:`STRIP_ACCENTS` step makes to ``text``: ``(start, end,
    content)``, left to right, not overlapping; None for an empty match.

    >>> from pieceworks.normalizers import Regex, Replace
    >>> _edits(Replace(Regex(" {2,}"), " "), "a   b  c"), _edits(STRIP_ACCENTS, "e\u0301te\u0301")
    ([(1, 4, ' '), (5, 7, ' ')], [(1, 2, ''), (4, 5, '')])
    """
    if step is STRIP_ACCENTS:
        return [] if text.isascii() else [(*found.span(), "") for found in _mark_runs(strip_accents_marks).finditer(text)]
    if not text or type(step.pattern) is str and step.pattern and step.pattern not in text:
        return []       # (Hugging Face looks for no match, not even an empty one, in empty text)
    if step.content == " " and type(step.pattern) is Regex and step.pattern.pattern == WHITE_SPACE_RUNS \
            and "  " not in text and text.isprintable():
        return []       # (CLIP's: every white space char but the space is unprintable, so each match is a space)
    found = step._regex.spans(text)
    if any(start == end for start, end in found):
        return None
    content = step.content
    # (A match that is its content already, each space of CLIP's Replace(\s+, " "), edits nothing:
    # its chars keep their own spans, as Hugging Face aligns a char replaced by itself.)
    return [(start, end, content) for start, end in found if text[start:end] != content]


def _edited(text: str, spans: bytes | None, edits: list[tuple[int, int, str]]) -> tuple[str, bytes]:
    """``text`` with each edit made, and each made char's span in the input (``spans``: each char
    of ``text``'s, None when each is where it was; see ``aligned_nfc.edited_spans``).

    >>> made, spans = _edited("a  b", None, [(1, 3, "_")])
    >>> made, array("i", spans).tolist()
    ('a_b', [0, 1, 2, 3, 3, 4])
    """
    ends = [0] + [end for _, end, _ in edits]
    pieces = [part for (start, _, content), done in zip(edits, ends) for part in (text[done:start], content)]
    pieces.append(text[ends[-1]:])
    return "".join(pieces), edited_spans(spans, len(text), edits)


def _first_start(spans: bytes | None) -> int:
    """Where the first made char came from (0 when offsets stay put, or nothing was made).

    >>> _first_start(array("i", [2, 3, 3, 4]).tobytes()), _first_start(None)
    (2, 0)
    """
    return struct.unpack_from("i", spans)[0] if spans else 0


def _normalized_generally(normalizer, text: str) -> tuple[str, bytes | None]:
    """``(made, spans)`` of :meth:`NormalizedFirstPlan.normalized`, the normalizer run as the general
    path runs it."""
    # A step whose text comes out as it went in made no edit, so its alignment is the identity:
    # normalize_str (no alignment) tells it at C speed for most texts.
    if all(member.normalize_str(text) == text for member in _members(normalizer)):
        return text, None
    normalized = NormalizedString(text)
    normalizer.normalize(normalized)
    if normalized.is_identity:
        return text, None
    return normalized.normalized, array("i", chain.from_iterable(normalized.alignments())).tobytes()
