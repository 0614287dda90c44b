"""The fast plan for byte-level BPE after pre-tokenizers the kernel has no scanner for.

:mod:`pieceworks.fast.byte_bpe` scans the split patterns of GPT-2, cl100k,
o200k, Llama 3 and Qwen by hand. A file with any other pattern (another
rule for digits, a model's own pattern, several Splits in a row) went the
general path, a Python object per piece and per char: about half Hugging
Face's speed. Here each stage is an Oniguruma pattern (a Split's own; for
``Digits`` and ``Punctuation`` a class of the chars their tables flag; GPT-2's
pattern for a ``ByteLevel``, which Hugging Face runs on Oniguruma too), and
one kernel call cuts the texts as the general path cuts them
(``_kernels/onig_spans``'s :class:`Cutter`, held to :func:`piece_ends`) and
encodes the pieces, giving each raw encoding with its offsets and words
(``ByteBPE.encode_raw_cut_batch``), the GIL released for the whole batch.

The stages taken: ``Split``, ``Digits`` and ``Punctuation`` stages, in any
number and order (StarCoder's ``Digits`` before GPT-2's ``ByteLevel``, Tekken's
or DeepSeek's Splits, CLIP's Split that keeps only its matches), then a
``ByteLevel``, with GPT-2's pattern or not, no prefix space; the model and
the normalizer (none, or NFC) as :mod:`~pieceworks.fast.byte_bpe` takes them,
BPE-dropout included (a batch then text by text, in order), and also with an
end-of-word suffix (CLIP's ``"</w>"``, no dropout): the kernel spells it as a
byte no UTF-8 holds, put after each piece (``ByteBPE.mark_piece_ends``). A
text NFC changes is cut and encoded normalized, its offsets moved back.
(CLIP's normalizer, NFC, a Replace and Lowercase, is
:mod:`~pieceworks.fast.normalized_first`'s, around this plan.)

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

import functools
import sys
from array import array

from .._kernels import scan
from .._kernels.bytebpe import ByteBPE, Pattern
from .._kernels.onig_spans import Behavior, Cutter
from .._kernels.raw_encoding import untrack
from .._regex import _SEARCH, Regex, _region_address
from .._unicode_forms import changed_among, changes_text
from ..byte_level import tokens_to_bytes
from ..errors import ConfigError
from ..models.bpe import BPE, id_table
from ..normalizers import NFC
from ..pre_tokenizers import ByteLevel, Digits, Punctuation, Sequence, Split
from . import DrawsFromModel, plain_from_raw, register_plan, stages_key
from ._aligned import AlignedNfc, nfc_aligned, remap_spans
from .byte_bpe import GPT2_PATTERN, ByteBpePlan, build_kernel, kernel_takes

__all__ = ["cut_byte_bpe_plan", "CutByteBpePlan", "piece_ends"]

# Raw encodings hold int32 offsets, and the kernel cuts the text's UTF-8 (up to 4 bytes a char).
_RAW_MAX_CHARS = 2**29


@register_plan
def cut_byte_bpe_plan(tokenizer) -> "CutByteBpePlan | None":
    """A plan for byte-level BPE after Splits the kernel does not scan (see the module doc), else None."""
    model, normalizer, pre = tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer
    if ByteBpePlan(model, normalizer, pre)._options() is not None:
        return None     # (a pattern the kernel scans: that plan's)
    plan = CutByteBpePlan(model, normalizer, pre)
    return plan if plan.supported() else None


class CutByteBpePlan(DrawsFromModel):
    """Encodes plain text of a byte-level BPE tokenizer: its stages, as Oniguruma patterns, cut it and
    the kernel encodes the pieces, both in C (see the module doc)."""

    has_raw = True
    raw_min_average_chars = 16
    #: encode_around_batch leaves out (None) every text the normalizer (NFC) would change, so added
    #: tokens matched after normalizing are found in the texts it takes as they are.
    job_leaves_changed_texts = True

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

    def _prepare(self) -> "tuple[ByteBPE, Cutter] | None":
        """``(kernel, cutter)`` for the stages as they are now, or None: read again when they may
        have changed (``stages_key``, and the pre-tokenizer Sequence's members, whose list may be
        edited in place); the kernel is made again for a new vocabulary or merges."""
        pre = self.pre_tokenizer
        key = (stages_key(self), tuple(map(id, pre.pretokenizers)) if type(pre) is Sequence else ())
        known = self._ready_for
        if known[0] == key:
            return known[1]
        splits = self._splits()
        model = self.model
        suffix = _end_of_word_suffix(model)
        ready = None
        if splits is not None and (kernel_takes(model, self.normalizer) or suffix is not None and (
                self.normalizer is None or type(self.normalizer) is NFC)):
            # (Under dropout, a kernel per encoder: see ByteBpePlan._prepare.)
            encoder = model._get_encoder() if model.dropout else None
            built = (id(model.vocab), id(model._merge_ids), model.ignore_merges, id(encoder), suffix)
            if built != self._built_for:
                self._kernel, self._tokens = (build_kernel(model, Pattern.PAT_PIECES, encoder) if suffix is None
                                              else build_suffixed_kernel(model, suffix))
                self._built_for = built
            ready = None if self._kernel is None else (self._kernel, _cutter_of(splits))
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
        if type(byte_level) is not ByteLevel or byte_level.add_prefix_space or any(
                type(split) not in _CUTTERS for split in splits):
            return None
        return splits + [byte_level] if byte_level.use_regex else splits

    def encode_raw(self, text: str):
        """``(raw, n_tokens, n_words, strings)`` of :meth:`encode_plain`, or None (see pieceworks.fast).

        The stages cut in C (the :class:`Cutter`) in the kernel call that encodes. A text NFC
        changes is cut and encoded normalized, its offsets moved back (:func:`nfc_aligned`).
        """
        return self._encode_raw(text, None)

    def _encode_raw(self, text: str, finder):
        """:meth:`encode_raw`, but None for a text NFC changes whose NFC form holds one of
        ``finder``'s strings (a ``TokenTrie``, or None: no such check)."""
        ready = self._prepare()
        if ready is None or len(text) >= _RAW_MAX_CHARS:
            return None
        kernel, cutter = ready
        made, spans = (text, None) if self.normalizes_nothing(text) else nfc_aligned(text)
        if spans is not None and finder is not None and finder.holds(made):
            return None
        [result] = kernel.encode_raw_cut_batch([made], cutter, _region_address())
        if result is None:
            return None     # (a search failed: the general path raises its error)
        raw, n_tokens, n_pieces = result
        return (raw if spans is None else remap_spans(raw, n_tokens, spans)), n_tokens, n_pieces, self._tokens

    def encode_raw_batch(self, texts: list[str]) -> list:
        """``[encode_raw(t) for t in texts]``, in one kernel call without the GIL (texts NFC changes,
        and overlong ones, one by one)."""
        ready = self._prepare()
        if ready is None:
            return [None] * len(texts)
        kernel, cutter = ready
        out, apart = self._in_kernel(texts, lambda some: kernel.encode_raw_cut_batch(some, cutter, _region_address(),
                                                                                     self._tokens))
        for k in apart:
            out[k] = self.encode_raw(texts[k])
        return out

    def encode_around_batch(self, texts: list[str], around, strings, limit: int = -1) -> list | None:
        """Each text encoded around the added tokens ``around`` (a ``token_finder.AroundTokens``)
        splits out of it, each stretch between them cut and encoded, in one kernel call without
        the GIL: ``(raw, n, 0, strings)``, or None (the long way: a text NFC changes, or of more
        than ``limit`` >= 0 tokens); None for all when the stages are not this plan's."""
        ready = self._prepare()
        if ready is None:
            return None
        kernel, cutter = ready
        return self._in_kernel(texts, lambda some: kernel.encode_raw_cut_batch(some, cutter, _region_address(),
                                                                               strings, around, limit))[0]

    def _in_kernel(self, texts: list[str], encode) -> tuple[list, list[int]]:
        """``(results, apart)``: ``encode`` of the texts the kernel takes as they are, in one call, and
        the indices of the others (NFC changes them, or too long), whose results are None."""
        apart = sorted({k for k, text in enumerate(texts) if len(text) >= _RAW_MAX_CHARS}
                       .union(self.normalized_among(texts)))
        if not apart:
            return encode(texts), apart
        taken = sorted(set(range(len(texts))).difference(apart))
        out = [None] * len(texts)
        for k, result in zip(taken, encode([texts[k] for k in taken])):
            out[k] = result
        return out, apart

    def encode_plain(self, text: str):
        """``(ids, tokens, offsets, words, n_words)`` of ``text``, or None for the general path."""
        return plain_from_raw(self.encode_raw(text))

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot: ``encode(text)`` is
        ``(raw, n_tokens, n_pieces)``, or None for the long way; or None."""
        return self._one_text(False)

    def one_text_unchanged(self, finder=None):
        """:meth:`one_text` for a tokenizer whose added tokens are matched after normalizing, found in
        the text as it is: a text the normalizer (NFC) would change goes the long way if its NFC
        form holds one of ``finder``'s strings (a ``TokenTrie``), or with no ``finder``."""
        return self._one_text(True, finder)

    def _one_text(self, unchanged_only: bool, finder=None):
        if self._prepare() is None:
            return None
        encode_raw, unchanged = self._encode_raw, self.normalizes_nothing
        refuse_changed = unchanged_only and finder is None

        def encode(text: str):
            if refuse_changed and not unchanged(text):
                return None
            result = encode_raw(text, finder if unchanged_only else None)
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

    def normalized_among(self, texts: list[str]) -> list[int]:
        """The positions of the ``texts`` the normalizer may change (none without one), in one pass."""
        return [] if self.normalizer is None else changed_among("NFC", texts)

    def _current_kernel(self) -> ByteBPE | None:
        ready = self._prepare()
        return None if ready is None else ready[0]

    def token_strings(self) -> list | None:
        """The table that spells each id's token (the kernel's), or None when there is no kernel."""
        return None if self._prepare() is None else self._tokens


def piece_ends(text: str, splits: list) -> list[int]:
    """Where each non-empty piece of ``text`` ends after ``splits`` (stages with a ``piece_spans``),
    each cutting the pieces the one before made, as the general path cuts them; each stretch no
    piece covers (a ``"removed"`` Split took it out) as one entry, its end negated. The readable
    statement of what the plan's :class:`Cutter` does in C (the tests hold the two equal).

    >>> from pieceworks import Regex
    >>> piece_ends("ab12 c", [Split(Regex(r"\\d"), "isolated"), Split(" ", "merged_with_next")])
    [2, 3, 4, 6]
    >>> piece_ends(" ab  c", [Split(Regex(r"\\w+"), "removed", invert=True)])
    [-1, 3, -5, 6]
    """
    ranges = [(0, len(text))]
    for split in splits:
        cut = []
        for start, end in ranges:
            cut += [(start + a, start + b) for a, b in split.piece_spans(text[start:end]) if b > a]
        ranges = cut
    ends, reached = [], 0
    for start, end in ranges:
        if start != reached:
            ends.append(-start)
        ends.append(end)
        reached = end
    if reached != len(text):
        ends.append(-len(text))
    return ends


#: The stages that cut (each has ``piece_spans``); what a ``"removed"`` one takes out stays a marked piece,
#: not encoded (``Cutter``).
_CUTTERS = (Split, Digits, Punctuation)

_BEHAVIORS = {"isolated": Behavior.CUT_ISOLATED, "merged_with_previous": Behavior.CUT_MERGED_WITH_PREVIOUS,
              "merged_with_next": Behavior.CUT_MERGED_WITH_NEXT, "contiguous": Behavior.CUT_CONTIGUOUS,
              "removed": Behavior.CUT_REMOVED}


def _end_of_word_suffix(model) -> "str | None":
    """The model's end-of-word suffix where the kernel spells it (``ByteBPE.mark_piece_ends``): a
    byte-level BPE as :func:`kernel_takes` takes it but for the suffix, and no dropout,
    continuing-subword prefix or ``ignore_merges`` (which looks a word up without its suffix, as
    Hugging Face does); else None."""
    if (type(model) is not BPE or not model.end_of_word_suffix or model.continuing_subword_prefix
            or model.byte_fallback or model.dropout or model.ignore_merges):
        return None
    return model.end_of_word_suffix


def build_suffixed_kernel(model: BPE, suffix: str):
    """:func:`build_kernel` for a model with an end-of-word suffix (CLIP): a token ending in it spells
    its bytes then 0xFF, the byte the kernel puts after each piece, and the merge of each byte
    with that one into the byte's suffixed token ranks first; ``(None, None)`` when a byte has
    no suffixed token (Hugging Face would give the unknown token for it: the general path).

    >>> from pieceworks.byte_level import BYTE_TO_CHAR
    >>> vocab = {c: i for i, c in enumerate(BYTE_TO_CHAR)}
    >>> vocab.update({c + "</w>": 256 + i for i, c in enumerate(BYTE_TO_CHAR)})
    >>> vocab["ab</w>"] = 512
    >>> kernel, tokens = build_suffixed_kernel(BPE(vocab, [("a", "b</w>")], end_of_word_suffix="</w>"), "</w>")
    >>> kernel is not None, tokens[512]
    (True, 'ab</w>')
    """
    tokens = id_table(model.vocab_r)
    cut = len(suffix)
    stems = [None if token is None or token == suffix else token[:-cut] if token.endswith(suffix) else token
             for token in tokens]
    token_bytes = [None if raw is None else raw + b"\xff" if tokens[tid].endswith(suffix) else raw
                   for tid, raw in enumerate(tokens_to_bytes(stems))]
    by_bytes = {raw: tid for tid, raw in enumerate(token_bytes) if raw is not None}
    end = by_bytes.get(b"\xff")
    firsts = [(by_bytes.get(bytes([b])), end, by_bytes.get(bytes([b, 0xFF]))) for b in range(256)]
    if end is None or any(None in first for first in firsts):
        return None, None
    merges = model._merge_ids
    kept = [x for k in range(0, len(merges), 3) for x in merges[k:k + 3]
            if all(token_bytes[merges[j]] is not None for j in range(k, k + 3))]
    try:
        kernel = ByteBPE(token_bytes, array("I", [x for first in firsts for x in first] + kept),
                         pattern=Pattern.PAT_PIECES, whole_piece=False, text_only=True)
    except ConfigError:
        return None, None
    kernel.mark_piece_ends()
    untrack(tokens)
    return kernel, tokens


def _cutter_of(stages: list) -> Cutter:
    """The :class:`Cutter` that cuts as ``stages`` (``_splits``': none removes) do, each an Oniguruma
    pattern: a Split's own; for Digits and Punctuation a class of exactly the chars their tables
    flag (Oniguruma's ``\\p{N}`` and ``\\p{P}`` follow another Unicode version); GPT-2's pattern, which
    Hugging Face runs on Oniguruma too, for a ByteLevel.

    >>> _cutter_of([Digits(individual_digits=False), ByteLevel(use_regex=True)]).piece_ends("ab 12c", _region_address())
    [2, 3, 5, 6]
    """
    return Cutter(_SEARCH, [_stage_of(stage) for stage in stages])


def _stage_of(stage) -> tuple:
    """``(regex, behavior, invert)`` of one stage (see :func:`_cutter_of`)."""
    kind = type(stage)
    if kind is Split:
        return stage._regex, _BEHAVIORS[stage.behavior], stage.invert
    if kind is Digits:
        return _class_regex(scan.FLAG_NUMERIC, not stage.individual_digits), Behavior.CUT_ISOLATED, False
    if kind is Punctuation:
        return _class_regex(scan.FLAG_PUNCT, False), _BEHAVIORS[stage.behavior], False
    return Regex(GPT2_PATTERN), Behavior.CUT_ISOLATED, False      # (ByteLevel: _splits keeps it with use_regex alone)


@functools.lru_cache(maxsize=None)
def _class_regex(flag: int, runs: bool) -> Regex:
    """A pattern matching one char that ``flag`` marks in the scanners' tables (``runs``: a run of
    them), spelled as ranges of code points: built from the tables, so it flags what they flag."""
    # Every code point, each at its own index (surrogates too: the tables flag none of them).
    every_char = array("I", range(0x110000)).tobytes().decode("utf-32-le" if sys.byteorder == "little"
                                                               else "utf-32-be", "surrogatepass")
    ranges: list[list[int]] = []
    for (first, _), flagged in scan.char_matches(every_char, flag):
        if not flagged:
            continue
        if ranges and ranges[-1][1] + 1 == first:
            ranges[-1][1] = first
        else:
            ranges.append([first, first])
    spelled = "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges)
    return Regex(f"[{spelled}]" + ("+" if runs else ""))

