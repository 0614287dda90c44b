"""The fast plan for byte-level BPE after pre-tokenizers the kernel has no scanner for.

:mod:`pieceworks.fast.byte_bpe` scans the split patterns of GPT-2, cl100k,
o200k, Llama 3 and Qwen by hand. A file with any other pattern (another
rule for digits, a model's own pattern, several Splits in a row) went the
general path, a Python object per piece and per char: about half Hugging
Face's speed. Here the stages cut the text as the general path cuts it
(their own ``piece_spans``: the same Oniguruma matches, found in one C loop
by ``_kernels/onig_spans``, the same scanners and behaviours), and the
kernel encodes those pieces in one call, giving the raw encoding with its
offsets and words (``ByteBPE.encode_raw_cut``).

The stages taken: ``Split``, ``Digits`` and ``Punctuation`` stages, in any
number and order (StarCoder's ``Digits`` before GPT-2's ``ByteLevel``, Tekken's
or DeepSeek's Splits), then a ``ByteLevel``, with GPT-2's pattern or not; none
that removes what it matches (so the pieces cover the text, whose UTF-8 the
tokens spell in order), no prefix space; the model and the
normalizer (none, or NFC) as :mod:`~pieceworks.fast.byte_bpe` takes them. A
text NFC changes is cut and encoded normalized, its offsets moved back.

>>> from pieceworks import Regex, Tokenizer
>>> from pieceworks.models import BPE
>>> from pieceworks.pre_tokenizers import ByteLevel, Sequence, Split
>>> from pieceworks.byte_level import BYTE_TO_CHAR
>>> vocab = {c: i for i, c in enumerate(BYTE_TO_CHAR)}
>>> vocab.update({"ab": 256, "Ġb": 257})
>>> tok = Tokenizer(BPE(vocab, [("a", "b"), ("Ġ", "b")]))
>>> tok.pre_tokenizer = Sequence([Split(Regex(r" ?\\p{L}"), "isolated"), ByteLevel(False, use_regex=False)])
>>> cut_byte_bpe_plan(tok).encode_plain("ab b")
([97, 98, 257], ['a', 'b', 'Ġb'], [(0, 1), (1, 2), (2, 4)], [0, 1, 2], 3)
"""

from __future__ import annotations

from .._kernels.bytebpe import ByteBPE, Pattern
from .._kernels.onig_spans import Behavior, Cutter
from .._regex import _SEARCH, _region_address
from .._unicode_forms import changes_text
from ..pre_tokenizers import ByteLevel, Digits, Punctuation, Sequence, Split
from . import plain_from_raw, register_plan, stages_key
from ._aligned import AlignedNfc
from .byte_bpe import ByteBpePlan, build_kernel, kernel_takes

__all__ = ["cut_byte_bpe_plan", "CutByteBpePlan", "piece_ends"]

# Raw encodings hold int32 offsets.
_RAW_MAX_CHARS = 2**31 - 1


@register_plan
def cut_byte_bpe_plan(tokenizer) -> "CutByteBpePlan | None":
    """A plan for byte-level BPE after Splits the kernel does not scan (see the module doc), else None."""
    model, normalizer, pre = tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer
    if ByteBpePlan(model, normalizer, pre)._options() is not None:
        return None     # (a pattern the kernel scans: that plan's)
    plan = CutByteBpePlan(model, normalizer, pre)
    return plan if plan.supported() else None


class CutByteBpePlan:
    """Encodes plain text of a byte-level BPE tokenizer: Splits cut it, the kernel encodes the pieces."""

    has_raw = True
    # A batch cut by Splits alone runs in one kernel call without the GIL (Oniguruma's search is
    # most of its time: threads pay on short lines too).
    raw_min_average_chars = 16

    @property
    def releases_gil(self) -> bool:
        """Whether batches run without the GIL: when every stage that cuts is a ``Split``
        (:class:`~pieceworks._kernels.onig_spans.Cutter`); else each text takes a few microseconds
        of Python around its C calls, and two threads were no faster than one."""
        ready = self._prepare()
        return ready is not None and ready[2] is not None

    def __init__(self, model, normalizer, pre_tokenizer):
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self._built_for = None
        self._ready_for: tuple = (None, None)     # (the stages' key, what _prepare read for it)
        self._kernel: ByteBPE | None = None
        self._tokens: list | None = None

    def supported(self) -> bool:
        """Whether the stages, as they are now, are ones this plan reproduces."""
        return self._prepare() is not None

    def _prepare(self) -> "tuple[ByteBPE, list, Cutter | None] | None":
        """``(kernel, splits, cutter)`` for the stages as they are now, or None (``cutter``: the
        :class:`Cutter` of a chain of Splits alone, else None): read again when they may
        have changed (``stages_key``, and the pre-tokenizer Sequence's members, whose list may be
        edited in place); the kernel is made again for a new vocabulary or merges."""
        pre = self.pre_tokenizer
        key = (stages_key(self), tuple(map(id, pre.pretokenizers)) if type(pre) is Sequence else ())
        known = self._ready_for
        if known[0] == key:
            return known[1]
        splits = self._splits()
        model = self.model
        ready = None
        if splits is not None and kernel_takes(model, self.normalizer):
            built = (id(model.vocab), id(model._merge_ids), model.ignore_merges)
            if built != self._built_for:
                self._kernel, self._tokens = build_kernel(model, Pattern.PAT_PIECES)
                self._built_for = built
            ready = None if self._kernel is None else (self._kernel, splits, _cutter_of(splits))
        self._ready_for = (key, ready)
        return ready

    def _splits(self) -> "list | None":
        """The stages that cut the text (Split, Digits, Punctuation, then the ByteLevel, which cuts
        with GPT-2's pattern or not at all), or None when a stage is one this plan does not take."""
        pre = self.pre_tokenizer
        stages = list(pre.pretokenizers) if type(pre) is Sequence else [pre]
        if not stages:
            return None
        *splits, byte_level = stages
        if (type(byte_level) is not ByteLevel or byte_level.add_prefix_space
                or any(type(split) not in _CUTTERS or getattr(split, "behavior", "") == "removed"
                       for split in splits)):
            return None
        return splits + [byte_level] if byte_level.use_regex else splits

    def encode_raw(self, text: str):
        """``(raw, n_tokens, n_words, strings)`` of :meth:`encode_plain`, or None (see pieceworks.fast).

        Splits alone cut in C (the :class:`Cutter`), with the encoding; other stages in Python
        (:func:`piece_ends`), the kernel encoding the pieces. A text NFC changes is cut and encoded
        normalized, its offsets moved back (:class:`AlignedNfc`).
        """
        ready = self._prepare()
        if ready is None or len(text) >= _RAW_MAX_CHARS:
            return None
        kernel, splits, cutter = ready
        view = None if self.normalizes_nothing(text) else AlignedNfc(text)
        cut = text if view is None else view.normalize(0, len(text))
        if cutter is not None:
            [result] = kernel.encode_raw_cut_batch([cut], cutter, _region_address())
            if result is None:
                return None
            raw, n_tokens, n_pieces = result
        else:
            ends = piece_ends(cut, splits)
            if ends is None:
                return None
            raw, n_tokens, n_pieces = kernel.encode_raw_cut(cut, ends)
        return (raw if view is None else view.remap(raw, n_tokens)), n_tokens, n_pieces, self._tokens

    def encode_raw_batch(self, texts: list[str]) -> list:
        """``[encode_raw(t) for t in texts]``: with a :class:`Cutter`, in one kernel call without the
        GIL (texts NFC changes, and overlong ones, one by one); else text by text."""
        ready = self._prepare()
        if ready is None or ready[2] is None:
            return [self.encode_raw(text) for text in texts]
        kernel, _, cutter = ready
        apart = [k for k, text in enumerate(texts) if len(text) >= _RAW_MAX_CHARS
                 or self.normalizer is not None and not text.isascii() and changes_text("NFC", text)]
        if not apart:
            return kernel.encode_raw_cut_batch(texts, cutter, _region_address(), self._tokens)
        in_kernel = sorted(set(range(len(texts))).difference(apart))
        out = [None] * len(texts)
        for k, result in zip(in_kernel, kernel.encode_raw_cut_batch([texts[k] for k in in_kernel], cutter,
                                                                     _region_address(), self._tokens)):
            out[k] = result
        for k in apart:
            out[k] = self.encode_raw(texts[k])
        return out

    def encode_plain(self, text: str):
        """``(ids, tokens, offsets, words, n_words)`` of ``text``, or None for the general path."""
        return plain_from_raw(self.encode_raw(text))

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot: ``encode(text)`` is
        ``(raw, n_tokens, n_pieces)``, or None for the long way; or None."""
        return self._one_text(False)

    def one_text_unchanged(self):
        """:meth:`one_text`, but a text the normalizer (NFC) would change goes the long way: for a
        tokenizer whose added tokens are matched after normalizing, found in the text as it is."""
        return self._one_text(True)

    def _one_text(self, unchanged_only: bool):
        if self._prepare() is None:
            return None
        encode_raw, unchanged = self.encode_raw, self.normalizes_nothing

        def encode(text: str):
            result = None if unchanged_only and not unchanged(text) else encode_raw(text)
            return None if result is None else result[:3]
        return encode, self._tokens

    def aligned_view(self, text: str) -> "AlignedNfc | None":
        """An :class:`AlignedNfc` of ``text`` to fill, for a caller that normalizes parts of it (the gaps
        between added tokens) and encodes them with :meth:`encode_raw`; None with no normalizer."""
        if self.normalizer is None or self._prepare() is None:
            return None
        return AlignedNfc(text)

    def normalizes_nothing(self, text: str) -> bool:
        """Whether the normalizer (none, or NFC) leaves ``text`` as it is."""
        return self.normalizer is None or not changes_text("NFC", text)

    def _current_kernel(self) -> ByteBPE | None:
        ready = self._prepare()
        return None if ready is None else ready[0]

    def token_strings(self) -> list | None:
        """The table that spells each id's token (the kernel's), or None when there is no kernel."""
        return None if self._prepare() is None else self._tokens


def piece_ends(text: str, splits: list) -> list[int] | None:
    """Where each non-empty piece of ``text`` ends after ``splits`` (stages with a ``piece_spans``
    that removes nothing), each cutting the pieces the one before made, as the general path cuts
    them; None if the pieces do not cover the text (the general path then says what happens).

    >>> from pieceworks import Regex
    >>> piece_ends("ab12 c", [Split(Regex(r"\\d"), "isolated"), Split(" ", "merged_with_next")])
    [2, 3, 4, 6]
    """
    if len(splits) == 1 and type(splits[0]) is Split and splits[0].behavior == "isolated" and not splits[0].invert:
        return splits[0]._regex.isolated_ends(text)     # (the usual one: no list of matches made first)
    ranges = [(0, len(text))]
    for split in splits:
        cut = []
        for start, end in ranges:
            cut += [(start + a, start + b) for a, b in split.piece_spans(text[start:end]) if b > a]
        ranges = cut
    ends, reached = [], 0
    for start, end in ranges:
        if start != reached:
            return None
        ends.append(end)
        reached = end
    return ends if reached == len(text) else None


#: The stages that only cut (each has ``piece_spans``): with no behaviour that removes, they keep every char.
_CUTTERS = (Split, Digits, Punctuation)

_BEHAVIORS = {"isolated": Behavior.CUT_ISOLATED, "merged_with_previous": Behavior.CUT_MERGED_WITH_PREVIOUS,
              "merged_with_next": Behavior.CUT_MERGED_WITH_NEXT, "contiguous": Behavior.CUT_CONTIGUOUS}


def _cutter_of(splits: list) -> "Cutter | None":
    """The :class:`Cutter` that cuts as ``splits`` do when all are Splits (none removes: see
    ``_splits``), else None (Digits, Punctuation and GPT-2's pattern cut in Python)."""
    if not all(type(split) is Split for split in splits):      # (GPT-2's pattern is ByteLevel's)
        return None
    return Cutter(_SEARCH, [(split._regex, _BEHAVIORS[split.behavior], split.invert) for split in splits])

