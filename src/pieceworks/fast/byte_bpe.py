"""The fast plan for byte-level BPE (GPT-2, Llama 3, Qwen, GPT-NeoX...) in one kernel pass.

It takes a tokenizer whose model is a byte-level :class:`~pieceworks.models.BPE`
(every byte's token in the vocabulary, no byte fallback, no
continuing-subword prefix or end-of-word suffix) and whose pre-tokenizer is
either ``ByteLevel(use_regex=True)`` (GPT-2's pattern) or, as Llama 3 and
Qwen files have it, ``Sequence([Split(Regex(<pattern>), "isolated"),
ByteLevel(use_regex=False)])`` with a pattern the kernel scans by hand
(:data:`HF_PATTERNS`). The normalizer is none or NFC; a text that NFC
changes is normalized with its alignment, in C (``FormTables.normalize_aligned``:
in a batch, by the thread that encodes it), and the kernel's offsets are
mapped back through it. The kernel
(``_kernels/bytebpe.pyx``) scans the pattern, merges each piece and
reports Hugging Face's ids, tokens, char offsets and one word per piece.

With BPE-dropout the kernel merges every piece as the model's own encoder
does (Hugging Face's heap, no cache), drawing from that encoder's
generator, so a seeded model gives the general path's ids; a batch then
runs on one thread, in order, so that a seed gives the same ids every run.

The plan keeps the tokenizer's stage objects and reads their options on
every call, so a change takes effect at once; options it does not handle
send the text to the general path.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import BPE
>>> from pieceworks.pre_tokenizers import ByteLevel
>>> from pieceworks.byte_level import BYTE_TO_CHAR
>>> vocab = {c: i for i, c in enumerate(BYTE_TO_CHAR)}
>>> vocab.update({"hi": 256, "Ġhi": 257})
>>> tok = Tokenizer(BPE(vocab, [("h", "i"), ("Ġ", "hi")]))
>>> tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
>>> byte_bpe_plan(tok).encode_plain("hi hi!")
([256, 257, 33], ['hi', 'Ġhi', '!'], [(0, 2), (2, 5), (5, 6)], [0, 1, 2], 3)
"""

from __future__ import annotations

from array import array
from functools import partial

from .._kernels.bytebpe import ByteBPE, OneText, Pattern
from .._component import epoch
from .._kernels.raw_encoding import untrack
from ..byte_level import tokens_to_bytes
from ..errors import ConfigError
from ..models.bpe import BPE, id_table
from ..normalizers import NFC
from ..pre_tokenizers import ByteLevel, Sequence, Split
from .._regex import Regex
from .._unicode_forms import changed_among, changes_text, normalize
from ..alignment import NormalizedString
from . import DrawsFromModel, register_plan
from ._aligned import AlignedNfc, nfc_aligned, remap_spans
from ._pool import run_job

__all__ = ["byte_bpe_plan", "ByteBpePlan", "HF_PATTERNS", "TIKTOKEN_PATTERNS", "GPT2_PATTERN",
           "CL100K_PATTERN", "O200K_PATTERN", "QWEN2_PATTERN"]

#: GPT-2's pattern (r50k, p50k; Hugging Face's ByteLevel pre-tokenizer).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
#: cl100k's pattern as first published (and Llama 3's).
CL100K_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                  r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
#: Qwen 2 and 3: cl100k's with single digits.
QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                 r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
#: o200k's pattern.
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
#: tiktoken's own spellings (possessive quantifiers, ``\s++$``). ``$`` is the
#: end of the text for tiktoken's engine but the end of a line for Oniguruma,
#: so these are only recognised for tiktoken: the r50k one matches exactly
#: what GPT-2's does; the cl100k one keeps trailing blanks (newlines and all)
#: as one piece, which the first cl100k pattern does not.
TIKTOKEN_R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
TIKTOKEN_CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                           r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")

#: Split patterns of tokenizer.json files that the kernel scans by hand.
HF_PATTERNS: dict[str, Pattern] = {
    GPT2_PATTERN: Pattern.PAT_GPT2,
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[\p{L}]+| ?[\p{N}]+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""": Pattern.PAT_GPT2,
    CL100K_PATTERN: Pattern.PAT_CL100K,
    QWEN2_PATTERN: Pattern.PAT_QWEN2,
    O200K_PATTERN: Pattern.PAT_O200K,
}
#: tiktoken ``pat_str`` values that the kernel scans by hand.
TIKTOKEN_PATTERNS: dict[str, Pattern] = dict(HF_PATTERNS)
TIKTOKEN_PATTERNS.update({
    TIKTOKEN_R50K_PATTERN: Pattern.PAT_GPT2,
    TIKTOKEN_CL100K_PATTERN: Pattern.PAT_CL100K_EOT,
})

# Texts this long (chars) are encoded without the GIL (see fast/_pool.py).
NOGIL_MIN_CHARS = 64


def _ids_of_nfc_around(encode_around, text: str, around) -> "list[int] | None":
    """The ids of ``text``, NFC normalizing, around the added tokens ``around`` finds: Hugging Face
    splits the tokens not matched after normalizing out of the text as it is, normalizes each
    stretch between them on its own and finds the others in it. Encoded here as the NFC form of
    the whole text, which is the same when those tokens are found in it just where they were
    (each the same token, its chars each its own char's), and no token's edge can be crossed but
    by a composition into it (the caller's promise: see ``ByteBpePlan.ids_around_now``), which
    changes it; else None (the long way).

    >>> from pieceworks._kernels.token_finder import AroundTokens, TokenTrie
    >>> around = AroundTokens(TokenTrie(["<s>", ">"]), [9, 8])
    >>> echo = lambda text, around, holding: text
    >>> _ids_of_nfc_around(echo, "<s>e\u0301", around), _ids_of_nfc_around(echo, "<s>\u0338", around)
    ('<s>é', None)
    """
    if not changes_text("NFC", text):
        return encode_around(text, around, True)
    made, spans = nfc_aligned(text)
    found, there = around.trie.spans(text), around.trie.spans(made)
    if len(found) != len(there):
        return None
    source = array("i", spans)
    for (start, stop, k), (at, end, j) in zip(found, there):
        if k != j or end - at != stop - start or source[2 * at] != start or source[2 * end - 1] != stop:
            return None
    return encode_around(made, around, True)


@register_plan
def byte_bpe_plan(tokenizer) -> "ByteBpePlan | None":
    """A plan for a byte-level BPE tokenizer the kernel handles, else None."""
    plan = ByteBpePlan(tokenizer.model, tokenizer.normalizer, tokenizer.pre_tokenizer)
    return plan if plan.supported() else None


class ByteBpePlan(DrawsFromModel):
    """Encodes plain text of a byte-level BPE tokenizer in the fused kernel (see the module doc)."""

    nogil_min_chars = NOGIL_MIN_CHARS
    #: encode_raw and encode_raw_batch exist (see pieceworks.fast).
    has_raw = True
    #: encode_job encodes around added tokens only in texts the normalizer leaves as they are: a text
    #: it changes that holds a token's string (before NFC or after) is left out (None).
    job_leaves_changed_texts = True

    def __init__(self, model, normalizer, pre_tokenizer):
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self._built_for = None
        self._ready_at: tuple = (None, None)      # (the epoch, what _prepare read at it)
        self._kernel: ByteBPE | None = None
        self._tokens: list | None = None
        self._deferred: tuple | None = None     # (kernel, prefix_space, OneText) of encode_raw_deferred

    def supported(self) -> bool:
        """Whether the stages, as they are now, are ones the kernel reproduces."""
        return self._prepare() is not None

    def encode_plain(self, text: str):
        """``(ids, tokens, offsets, words, n_words)`` of ``text``, or None for the general path."""
        ready = self._prepare()
        if ready is None:
            return None
        kernel, prefix_space = ready
        if self.normalizer is not None and changes_text("NFC", text):
            return None if prefix_space else self._encode_normalized(kernel, text)
        if prefix_space and text and text[0] != " ":
            return kernel.encode_with_offsets(" " + text, self._tokens, True)
        return kernel.encode_with_offsets(text, self._tokens, False)

    def normalizes_nothing(self, text: str) -> bool:
        """Whether the normalizer (none, or NFC) leaves ``text`` as it is."""
        return self.normalizer is None or not changes_text("NFC", text)

    def normalized_among(self, texts: list[str]) -> list[int]:
        """The positions of the ``texts`` the normalizer may change (none without one), in one pass."""
        return [] if self.normalizer is None else changed_among("NFC", texts)

    def encode_raw(self, text: str):
        """``(raw, n_tokens, n_words, strings)`` of :meth:`encode_plain`, or None (see pieceworks.fast)."""
        ready = self._prepare()
        if ready is None or len(text) >= _RAW_MAX_CHARS:
            return None
        kernel, prefix_space = ready
        if self.normalizer is not None and changes_text("NFC", text):
            # (With a prefix space the offsets shift too: encode_plain's job.)
            return None if prefix_space else (*self._encode_raw_nfc(kernel, text), self._tokens)
        if prefix_space and text and text[0] != " ":
            return (*kernel.encode_raw(" " + text, True), self._tokens)
        return (*kernel.encode_raw(text, False), self._tokens)

    def encode_raw_deferred(self, text: str):
        """:meth:`encode_raw` with the offsets and words worked out only when first read:
        ``(raw, n_tokens, n_words, strings, spans_from, source)``, ``raw`` holding the ids alone (see
        raw_encoding's ``make_raw``), or ``spans_from`` None and ``raw`` all of it; or None.

        For the segments between added tokens: most callers read only the ids.
        """
        ready = self._prepare()
        if ready is None:
            return None
        kernel, prefix_space = ready
        deferred = self._deferred
        if deferred is None or deferred[0] is not kernel or deferred[1] != prefix_space:
            one, _ = self.one_text()
            deferred = self._deferred = (kernel, prefix_space, one)
        result = deferred[2](text)
        if result is None:
            return None
        if len(result) == 5:
            raw, n, n_words, spans, source = result
            return raw, n, n_words, self._tokens, spans, source
        return (*result, self._tokens, None, None)

    def _encode_raw_nfc(self, kernel: ByteBPE, text: str, finder=None) -> tuple[bytes, int, int] | None:
        """``kernel.encode_raw`` of NFC(``text``), its offsets mapped back into ``text`` (see :func:`nfc_aligned`);
        None if that NFC form holds one of ``finder``'s strings."""
        made, spans = nfc_aligned(text)
        if finder is not None and finder.holds(made):
            return None
        raw, n_tokens, n_pieces = kernel.encode_raw(made, False)
        return remap_spans(raw, n_tokens, spans), n_tokens, n_pieces

    def aligned_view(self, text: str) -> "AlignedNfc | None":
        """An :class:`AlignedNfc` of ``text`` to fill, for a caller that normalizes parts of it
        (the gaps between added tokens) and encodes the result with :meth:`encode_raw`; or None
        when offsets cannot be mapped back so (no normalizer, or a prefix space to add)."""
        ready = self._prepare()
        if ready is None or ready[1] or self.normalizer is None:
            return None
        return AlignedNfc(text)

    def one_text(self):
        """``(encode(text), strings)`` for ``Tokenizer.encode``'s snapshot: :meth:`encode_raw` fixed to now, or None.

        ``encode(text)`` is ``(raw, n_tokens, n_pieces)``, or None where
        :meth:`encode_raw` would give None (a text NFC changes goes to
        :meth:`_encode_raw_nfc` straight away, as in :meth:`encode_raw`).
        """
        ready = self._prepare()
        if ready is None:
            return None
        kernel, prefix_space = ready
        not_nfc = None if prefix_space else partial(self._encode_raw_nfc, kernel)
        return OneText(kernel, prefix_space, self.normalizer is not None, _RAW_MAX_CHARS, not_nfc), self._tokens

    def one_text_unchanged(self, finder=None):
        """:meth:`one_text` for a tokenizer whose added tokens are matched after normalizing, found
        in the text as it is: a text the normalizer (NFC) would change goes the long way (None)
        if its NFC form holds one of ``finder``'s strings (a ``TokenTrie`` of the tokens), or
        with no ``finder``; the caller asks the text as it is."""
        ready = self._prepare()
        if ready is None:
            return None
        kernel, prefix_space = ready
        not_nfc = None if finder is None or prefix_space else partial(self._encode_raw_nfc, kernel, finder=finder)
        return OneText(kernel, prefix_space, self.normalizer is not None, _RAW_MAX_CHARS, not_nfc), self._tokens

    def encode_job(self, texts: list[str], cls: type, frame, truncation: tuple | None, threads: int,
                   skip: list[int] | None = None, ids_cls: type | None = None, finder=None,
                   around: tuple | None = None, ids_only: bool = False) -> list | None:
        """Lazy ``cls`` encodings of ``texts`` (framed, cut as ``truncation`` says) made on ``threads`` threads.

        A job (``ByteBPE.raw_batch_job``): threads take chunks of the list
        as they come free, and this thread makes the encodings in order
        between its own chunks. An item is None where :meth:`encode_raw`
        would say None (or truncation may not cut it here), and at the
        indices ``skip`` lists: the caller encodes those the long way.
        ``ids_cls``: build each ``ids`` list in the job, and make the
        encodings that need no cut of that class (see ``ByteBPE.raw_batch_job``).
        ``finder`` (a TokenTrie, or None): the texts holding one of its
        strings are None too, found on the threads, unless ``around`` says
        how to encode them around the tokens (see ``ByteBPE.raw_batch_job``). None for the whole list when the kernel
        cannot take it (no kernel, or a prefix space to add). ``ids_only`` (with ``ids_cls``): each item is
        the ids list alone, and no encoding is made.
        """
        ready = self._prepare()
        if ready is None or ready[1]:
            return None
        job = ready[0].raw_batch_job(texts, cls, self._tokens, frame, truncation, self.normalizer is not None,
                                     _RAW_MAX_CHARS, skip, ids_cls, finder, around, ids_only=ids_only)
        return run_job(job, threads)

    def encode_raw_batch(self, texts: list[str]) -> list:
        """``[encode_raw(t) for t in texts]``, encoded with the GIL released once for the list."""
        ready = self._prepare()
        if ready is None:
            return [None] * len(texts)
        kernel, prefix_space = ready
        changed = self.normalized_among(texts)
        if not prefix_space and not changed and max(map(len, texts), default=0) < _RAW_MAX_CHARS:
            # (Every text as it is: the kernel's results in the plan's form, no Python step a text;
            # words and pairs are many short texts.)
            return kernel.encode_raw_batch(texts, False, self._tokens)
        out: list = [None] * len(texts)
        todo, where = [], []
        changed = set(changed)
        for k, text in enumerate(texts):
            if len(text) >= _RAW_MAX_CHARS:
                continue
            if k in changed:
                if not prefix_space:
                    out[k] = (*self._encode_raw_nfc(kernel, text), self._tokens)
                continue
            todo.append(" " + text if prefix_space and text and text[0] != " " else text)
            where.append(k)
        if not prefix_space:
            results = kernel.encode_raw_batch(todo, False)
        else:   # texts that got a space and texts that did not are two batches
            results = self._batch_with_prefix(kernel, todo, [texts[k] for k in where])
        tokens = self._tokens
        for k, result in zip(where, results):
            out[k] = (*result, tokens)
        return out

    @staticmethod
    def _batch_with_prefix(kernel: ByteBPE, todo: list[str], originals: list[str]) -> list:
        spaced = [i for i, (t, o) in enumerate(zip(todo, originals)) if t is not o]
        plain = [i for i, (t, o) in enumerate(zip(todo, originals)) if t is o]
        results: list = [None] * len(todo)
        for indices, flag in ((spaced, True), (plain, False)):
            if indices:
                for i, result in zip(indices, kernel.encode_raw_batch([todo[i] for i in indices], flag)):
                    results[i] = result
        return results

    def encode_ids(self, text: str) -> list[int] | None:
        """Only the ids of :meth:`encode_plain` (much faster: no tokens, offsets or words), or None."""
        ready = self._prepare()
        if ready is None:
            return None
        kernel, prefix_space = ready
        if self.normalizer is not None and changes_text("NFC", text):
            if prefix_space:
                return None
            text = normalize(text, "NFC")
        elif prefix_space and text and text[0] != " ":
            text = " " + text
        return kernel.encode(text)

    def encode_ids_around(self, text: str, around) -> list[int] | None:
        """The ids of ``text`` encoded around the added tokens in it (``bytebpe.AroundTokens``), or
        None: it holds none, or one with no id there, or needs a change first (NFC, a prefix space)."""
        encode = self.ids_around_now()
        return None if encode is None else encode(text, around)

    def ids_around_now(self, tokens_bound_nfc: bool = False):
        """:meth:`encode_ids_around` with the stages read now, as ``encode(text, around)``, or None
        (they need a prefix space): for ``Tokenizer.encode``'s snapshot, kept while the component
        epoch holds, as :meth:`one_text` is (reading the stages was half of a chat turn's time).

        ``tokens_bound_nfc``: every added token is NFC and begins and ends with a starter (combining
        class 0), so NFC can change a text across a token's edge only by composing into it; then a
        text NFC changes is encoded as its NFC form (:func:`_ids_of_nfc_around`). Otherwise, or when
        a token does not stay where it was, None.
        """
        ready = self._prepare()
        if ready is None or ready[1]:
            return None
        encode_around = ready[0].encode_around
        if self.normalizer is None:
            return lambda text, around: encode_around(text, around, True)
        if tokens_bound_nfc:
            return partial(_ids_of_nfc_around, encode_around)
        return lambda text, around: None if changes_text("NFC", text) else encode_around(text, around, True)

    def _encode_normalized(self, kernel: ByteBPE, text: str):
        # NFC through the aligned string, as the general path does; each token's
        # span in the normalized text maps to the original chars it came from.
        normalized = NormalizedString(text)
        self.normalizer.normalize(normalized)
        align = normalized.alignments()
        ids, tokens, offsets, words, n_words = kernel.encode_with_offsets(normalized.normalized, self._tokens, False)
        offsets = [(align[start][0], align[end - 1][1]) for start, end in offsets]
        return ids, tokens, offsets, words, n_words

    # -- what the stages say, read live ---------------------------------------------
    def _prepare(self) -> "tuple[ByteBPE, bool] | None":
        """``(kernel, add_prefix_space)`` for the stages as they are now, or None.

        The kernel is rebuilt when the model gets a new vocabulary or merges
        (training does that) or the pattern changes. What the stages say is
        read again only once a component attribute was assigned (the epoch
        moved): a pre-tokenized sentence asks it once, for all its words,
        and that read was a third of a short sentence's time.
        """
        now = epoch()
        known = self._ready_at
        if known[0] == now:
            return known[1]
        options = self._options()
        ready = None
        if options is not None:
            pattern, prefix_space = options
            model = self.model
            # (Under dropout, a kernel per encoder: it draws from that encoder's generator.)
            encoder = model._get_encoder() if model.dropout else None
            key = (id(model.vocab), id(model._merge_ids), model.ignore_merges, pattern, id(encoder))
            if key != self._built_for:
                self._kernel, self._tokens = build_kernel(model, pattern, encoder)
                self._built_for = key
            ready = None if self._kernel is None else (self._kernel, prefix_space)
        self._ready_at = (now, ready)   # (one tuple: a thread reading it meanwhile sees both or neither)
        return ready

    def token_strings(self) -> list | None:
        """The table that spells each id's token (the kernel's), or None when there is no kernel."""
        ready = self._prepare()
        return None if ready is None else self._tokens

    def _current_kernel(self) -> ByteBPE | None:
        ready = self._prepare()
        return None if ready is None else ready[0]

    def _options(self) -> "tuple[Pattern, bool] | None":
        """``(pattern, add_prefix_space)``, or None when a stage is one the kernel cannot do."""
        if not kernel_takes(self.model, self.normalizer):
            return None
        pre = self.pre_tokenizer
        if type(pre) is ByteLevel:
            return (_GPT2, pre.add_prefix_space) if pre.use_regex else None
        if type(pre) is Sequence and len(pre.pretokenizers) == 2:
            split, byte_level = pre.pretokenizers
            if (type(split) is Split and type(byte_level) is ByteLevel and not byte_level.use_regex
                    and not byte_level.add_prefix_space and split.behavior == "isolated" and not split.invert):
                pattern = split.pattern
                if type(pattern) is Regex:
                    found = HF_PATTERNS.get(pattern.pattern)
                    return None if found is None else (found, False)
        return None


def kernel_takes(model, normalizer) -> bool:
    """Whether the kernel encodes as ``model`` does, after ``normalizer`` (none, or NFC: a text NFC
    changes is each plan's to send elsewhere). BPE-dropout included: the plans' ``samples`` then
    has the Tokenizer encode a batch text by text, in order."""
    # (An empty prefix or suffix is no prefix or suffix.)
    return (type(model) is BPE and not model.byte_fallback
            and not model.continuing_subword_prefix and not model.end_of_word_suffix
            and (normalizer is None or type(normalizer) is NFC))


_GPT2 = Pattern.PAT_GPT2
# Raw encodings hold int32 offsets.
_RAW_MAX_CHARS = 2**31 - 1


def build_kernel(model: BPE, pattern: Pattern, dropout_encoder=None):
    """The kernel for ``model`` and the token string of each id, or ``(None, None)``;
    ``dropout_encoder``: the model's encoder, whose BPE-dropout the kernel does
    (``ByteBPE.use_dropout``)."""
    tokens = id_table(model.vocab_r)
    # (None: a gap in the ids, or a char outside GPT-2's alphabet, so no byte sequence merges into it)
    token_bytes = tokens_to_bytes(tokens)
    merges = model._merge_ids
    if None in token_bytes and not {tid for tid, raw in enumerate(token_bytes) if raw is not None}.issuperset(merges):
        if dropout_encoder is not None:
            return None, None   # (the encoder's merges would make them: the general path)
        # Drop the merges of (or into) a token with no bytes.
        merges = array("I", [x for k in range(0, len(merges), 3) for x in merges[k:k + 3]
                             if all(token_bytes[merges[j]] is not None for j in range(k, k + 3))])
    try:
        kernel = ByteBPE(token_bytes, merges, pattern=pattern, whole_piece=model.ignore_merges, text_only=True)
    except ConfigError:
        return None, None   # a byte without a token: the general path says what happens
    if dropout_encoder is not None:
        kernel.use_dropout(dropout_encoder)
    untrack(tokens)     # strs and None: no collector pass need read them (see raw_encoding's shared ints)
    return kernel, tokens
