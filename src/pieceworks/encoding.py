"""Encoding: the result of encoding one input (or one pair of inputs).

It holds parallel lists, one entry per token: ``ids``, ``tokens``,
``offsets`` (char spans into the ORIGINAL text), ``type_ids``,
``word_ids``, ``special_tokens_mask``, ``attention_mask``; plus the
``overflowing`` encodings that truncation cut off, and which token ranges
belong to which input sequence. The methods and their corner cases follow
Hugging Face ``tokenizers.Encoding``.

>>> e = Encoding.from_tokens([(5, "hi", (0, 2)), (7, "there", (3, 8))], type_id=0)
>>> e.ids, e.attention_mask, e.char_to_token(4)
([5, 7], [1, 1], 1)
>>> e.pad(4, pad_id=0, pad_token="[PAD]"); e.tokens
['hi', 'there', '[PAD]', '[PAD]']
"""

from __future__ import annotations

from array import array
from typing import Iterable

from ._kernels import raw_encoding as _raw
from .errors import ConfigError, OutOfRangeError

__all__ = ["Encoding", "Frame", "PLAIN_FRAME"]

_make_raw = _raw.make_raw

Offsets = tuple[int, int]


class Frame:
    """The special tokens a post-processor puts around one sequence, and its type id.

    A lazy Encoding is ``before + sequence + after``: the sequence's tokens
    come from a raw encoding, each special token has offsets (0, 0), no
    word, special-token mask 1. ``sequence_range``: the processor numbered
    the sequence (so ``sequence_ids`` says 0 for it), as every
    post-processor does.

    >>> f = Frame([(101, "[CLS]", 0)], 0, [(102, "[SEP]", 0)], True)
    >>> f.ids_before, f.ids_after, f.size
    ([101], [102], 2)
    """

    __slots__ = ("ids_before", "tokens_before", "types_before", "type_id", "ids_after", "tokens_after",
                 "types_after", "sequence_range", "size", "pads_before", "pads_after", "trim", "_padded", "_overflow",
                 "_trimmed")

    def __init__(self, before, type_id: int, after, sequence_range: bool, pads_before: int = 0,
                 pads_after: int = 0, trim=None):
        self.ids_before = [t[0] for t in before]
        self.tokens_before = [t[1] for t in before]
        self.types_before = [t[2] for t in before]
        self.type_id = type_id
        self.ids_after = [t[0] for t in after]
        self.tokens_after = [t[1] for t in after]
        self.types_after = [t[2] for t in after]
        self.sequence_range = sequence_range
        self.size = len(before) + len(after)
        self.pads_before = pads_before      # the first pads_before tokens before are padding
        self.pads_after = pads_after        # the last pads_after tokens after are padding
        # trim(offsets, tokens, first, stop): what the processor does to the sequence's offsets
        # (ByteLevel's trimming), in place, when they are first built; None: nothing.
        self.trim = trim
        self._padded: dict = {}
        self._overflow: "Frame | None" = None
        self._trimmed: tuple = (None, None)     # (trim, this frame with it)

    def for_overflow(self) -> "Frame":
        """The frame of an overflowing part: as in Hugging Face, where only the first part gets the
        template's type id for the sequence, the part's own tokens keep type id 0 (its special
        tokens keep theirs).

        >>> f = Frame([], 1, [(102, "[SEP]", 1)], True).for_overflow(); f.type_id, f.types_after
        (0, [1])
        """
        if self.type_id == 0:
            return self
        if self._overflow is None:
            before = list(zip(self.ids_before, self.tokens_before, self.types_before))
            after = list(zip(self.ids_after, self.tokens_after, self.types_after))
            self._overflow = Frame(before, 0, after, self.sequence_range, self.pads_before, self.pads_after,
                                   self.trim)
        return self._overflow

    def with_trim(self, trim) -> "Frame":
        """This frame, its sequence's offsets trimmed by ``trim`` (see ``Frame.trim``); kept for the
        last ``trim`` asked.

        >>> f = Frame([(101, "[CLS]", 0)], 0, [], True); g = f.with_trim(print)
        >>> g.ids_before, g.trim is print, f.trim, f.with_trim(print) is g
        ([101], True, None, True)
        """
        made_for, frame = self._trimmed
        if made_for is not trim or frame is None:
            frame = Frame(list(zip(self.ids_before, self.tokens_before, self.types_before)), self.type_id,
                          list(zip(self.ids_after, self.tokens_after, self.types_after)), self.sequence_range,
                          self.pads_before, self.pads_after, trim)
            self._trimmed = (trim, frame)
        return frame

    def padded(self, missing: int, direction: str, pad_id: int, pad_type_id: int, pad_token: str) -> "Frame":
        """This frame with ``missing`` padding tokens on the ``direction`` side (made once, then kept).

        Padding tokens are special (mask 1), not attended (attention 0), and
        have no offsets and no word, as :meth:`Encoding.pad` makes them.

        >>> f = Frame([(101, "[CLS]", 0)], 0, [(102, "[SEP]", 0)], True).padded(2, "right", 0, 0, "[PAD]")
        >>> f.ids_after, f.tokens_after, f.pads_after, f.size
        ([102, 0, 0], ['[SEP]', '[PAD]', '[PAD]'], 2, 4)
        """
        key = (missing, direction, pad_id, pad_type_id, pad_token)
        frame = self._padded.get(key)
        if frame is None:
            before = list(zip(self.ids_before, self.tokens_before, self.types_before))
            after = list(zip(self.ids_after, self.tokens_after, self.types_after))
            pads = [(pad_id, pad_token, pad_type_id)] * missing
            if direction == "left":
                frame = Frame(pads + before, self.type_id, after, self.sequence_range,
                              self.pads_before + missing, self.pads_after, self.trim)
            else:
                frame = Frame(before, self.type_id, after + pads, self.sequence_range, self.pads_before,
                              self.pads_after + missing, self.trim)
            if len(self._padded) < 1024:   # (Fixed padding makes at most one per length)
                self._padded[key] = frame
        return frame

    def around(self, values: list, before, after) -> list:
        """``values`` between the lists (or fill values) ``before`` and ``after``."""
        if not self.size:
            return values
        head = before if type(before) is list else [before] * len(self.ids_before)
        tail = after if type(after) is list else [after] * len(self.ids_after)
        return head + values + tail


#: No special tokens, type id 0, no sequence numbering (no post-processor).
PLAIN_FRAME = Frame((), 0, (), False)


def _lazy_field(name: str, doc: str) -> property:
    """A property over slot ``_slots[name]``, built from the raw encoding when first read."""
    slot = _SLOTS[name]
    build = getattr(_Builders, name)

    def get(self):
        value = getattr(self, slot)
        if value is None:       # not built yet (a lazy encoding's slots start as None)
            value = build(self)
            setattr(self, slot, value)
        return value

    def set(self, value):
        setattr(self, slot, value)

    return property(get, set, doc=doc)


class _Builders:
    """The fields of a lazy Encoding that EncodingBase does not build, from its raw encoding and frame."""

    @staticmethod
    def type_ids(e) -> list:
        frame = e._frame
        return frame.around([frame.type_id] * e._n, frame.types_before, frame.types_after)

    @staticmethod
    def special_tokens_mask(e) -> list:
        return e._frame.around([0] * e._n, 1, 1)

    @staticmethod
    def overflowing(e) -> list:
        return []

    @staticmethod
    def sequence_ranges(e) -> dict:
        frame = e._frame
        if not frame.sequence_range:
            return {}
        start = len(frame.ids_before)
        return {0: (start, start + e._n)}


# Attribute name → the slot holding its list once built.
_SLOTS = {"ids": "_ids", "type_ids": "_type_ids", "tokens": "_tokens", "words": "_words", "offsets": "_offsets",
          "special_tokens_mask": "_special_tokens_mask", "attention_mask": "_attention_mask",
          "overflowing": "_overflowing", "sequence_ranges": "_ranges"}
# The attributes, in Encoding.__init__'s order.
_FIELDS = ("ids", "type_ids", "tokens", "words", "offsets", "special_tokens_mask", "attention_mask",
           "overflowing", "_sequence_ranges")


def _not_negative(method: str, *indices: int) -> None:
    """Hugging Face reads positions as unsigned ints: a negative one is an OverflowError there, not
    a look-up from the end (which ``None`` would silently pretend to answer)."""
    for index in indices:
        if index < 0:
            raise OutOfRangeError(f"Encoding.{method}: positions start at 0, got {index}",
                                  fix="pass a position counted from the start (len(encoding) - 1 is the last token)")


class Encoding(_raw.EncodingBase):
    """Ids, tokens, offsets and masks of one encoded input; see the module docstring.

    The fast paths make *lazy* encodings (:meth:`from_raw`): the kernel's
    ids, offsets and words stay in one raw buffer, and each list is built
    the first time it is read (Hugging Face builds them on every read).
    Byte-level BPE's encoding of one text holds the ids and the text, and
    works the offsets and words out when first read; one from
    ``encode_batch`` holds its ids list and shares its batch chunk's ids and
    piece ends (about 5 bytes a token of the chunk, some 30 000 chars of
    text) until it first builds its tokens, offsets or words.
    Like Hugging Face's, a lazy encoding is not tracked by the cyclic
    garbage collector, and neither are the ids, tokens, offsets, words and
    attention_mask lists it builds: do not put an encoding, or a container
    that refers back to one of its lists, inside its lists (such a cycle
    would not be collected).
    """

    # The slots (built lists, then what a lazy encoding builds them from) are EncodingBase's,
    # and so are ids, tokens, offsets, words and attention_mask.
    __slots__ = ()

    type_ids = _lazy_field("type_ids", "The type id (segment) of each token.")
    special_tokens_mask = _lazy_field("special_tokens_mask", "1 for a special token added by post-processing.")
    overflowing = _lazy_field("overflowing", "The encodings truncation cut off.")
    _sequence_ranges = _lazy_field("sequence_ranges", "Token range of each input sequence.")

    def __init__(self, ids=None, type_ids=None, tokens=None, words=None, offsets=None,
                 special_tokens_mask=None, attention_mask=None, overflowing=None,
                 sequence_ranges=None):
        self._ids: list[int] = ids if ids is not None else []
        n = len(self._ids)
        self._type_ids: list[int] = type_ids if type_ids is not None else [0] * n
        self._tokens: list[str] = tokens if tokens is not None else []
        self._words: list[int | None] = words if words is not None else [None] * n
        self._offsets: list[Offsets] = offsets if offsets is not None else [(0, 0)] * n
        self._special_tokens_mask: list[int] = special_tokens_mask if special_tokens_mask is not None else [0] * n
        self._attention_mask: list[int] = attention_mask if attention_mask is not None else [1] * n
        self._overflowing: list[Encoding] = overflowing if overflowing is not None else []
        self._ranges: dict[int, tuple[int, int]] = sequence_ranges if sequence_ranges is not None else {}

    @classmethod
    def from_raw(cls, raw: bytes, n: int, strings, word_index: int | None = None,
                 frame: Frame = PLAIN_FRAME, spans_from=None, source=None) -> "Encoding":
        """A lazy encoding of ``n`` tokens held in ``raw`` (see :mod:`pieceworks._kernels.raw_encoding`).

        ``strings[id]`` is each id's token; ``word_index`` (pre-tokenized
        input) replaces every word index; ``frame`` adds special tokens.
        ``spans_from`` (a SpanSource): ``raw`` holds the ids alone, and it
        works out the offsets and words from ``source`` when first read.

        >>> from pieceworks._kernels.raw_encoding import pack
        >>> e = Encoding.from_raw(pack([5], [0], [2], [0]), 1, {5: "hi"}, frame=Frame([(1, "<s>", 0)], 0, [], True))
        >>> e.ids, e.tokens, e.offsets, e.word_ids, e.special_tokens_mask
        ([1, 5], ['<s>', 'hi'], [(0, 0), (0, 2)], [None, 0], [1, 0])
        """
        return _make_raw(cls, raw, n, strings, word_index, frame, spans_from, source)

    def _ids_array(self) -> array:
        """The ids as an ``array('i')``, straight from the raw buffer when the list was never built.

        >>> Encoding([3, 4])._ids_array()
        array('i', [3, 4])
        """
        ids = self._ids
        if ids is not None:
            return array("i", ids)
        frame = self._frame
        out = array("i", frame.ids_before)
        out.frombytes(_raw.ids_bytes(self._raw, self._n))
        out.extend(frame.ids_after)
        return out

    def _any_built(self) -> bool:
        """Whether any list exists yet (always, for an encoding not made by :meth:`from_raw`)."""
        return not self._never_read()

    def __reduce__(self):
        # Pickle the lists, not the raw buffer and the vocabulary it points into.
        return (Encoding, tuple(getattr(self, f) for f in _FIELDS))

    @classmethod
    def from_tokens(cls, tokens: Iterable[tuple[int, str, Offsets]], type_id: int = 0,
                    words: list[int | None] | None = None) -> "Encoding":
        """Build from ``(id, token, offsets)`` triples (no special tokens, all attended)."""
        ids, toks, offs = [], [], []
        for tid, tok, off in tokens:
            ids.append(tid)
            toks.append(tok)
            offs.append(off)
        n = len(ids)
        return cls(ids, [type_id] * n, toks, words if words is not None else [None] * n, offs,
                   [0] * n, [1] * n, [], {})

    # -- Hugging Face's read-only views ---------------------------------
    @property
    def word_ids(self) -> list[int | None]:
        """The index of the word each token came from (None for special tokens)."""
        return list(self.words)

    @property
    def n_sequences(self) -> int:
        """How many input sequences this encoding holds (1, or 2 for a pair)."""
        return len(self._sequence_ranges) or 1

    @property
    def sequence_ids(self) -> list[int | None]:
        """Per token, the index of its input sequence (None for added special tokens)."""
        out: list[int | None] = [None] * len(self.ids)
        for seq_id in range(self.n_sequences):
            start, end = self._sequence_range(seq_id)
            for i in range(start, end):
                out[i] = seq_id
        return out

    def __repr__(self) -> str:
        return (f"Encoding(num_tokens={len(self.ids)}, attributes=[ids, type_ids, tokens, offsets, "
                f"attention_mask, special_tokens_mask, overflowing])")

    def __eq__(self, other) -> bool:
        if not isinstance(other, Encoding):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    def copy(self) -> "Encoding":
        if not self._any_built():
            # Nothing built yet: share the raw buffer (and copy raw truncation's parts alike).
            copied = _make_raw(Encoding, self._raw, self._n, self._strings, self._word_index, self._frame,
                               self._spans_from, self._source)
            if self._overflowing is not None:
                copied._overflowing = [o.copy() for o in self._overflowing]
            return copied
        return Encoding(list(self.ids), list(self.type_ids), list(self.tokens), list(self.words),
                        list(self.offsets), list(self.special_tokens_mask), list(self.attention_mask),
                        [o.copy() for o in self.overflowing], dict(self._sequence_ranges))

    # -- sequences --------------------------------------------------------
    def set_sequence_id(self, sequence_id: int) -> None:
        """Mark every token as belonging to input sequence ``sequence_id``."""
        self._sequence_ranges[sequence_id] = (0, len(self.ids))

    def _sequence_range(self, sequence_id: int) -> Offsets:
        return self._sequence_ranges.get(sequence_id, (0, len(self.ids)))

    # -- position look-ups ------------------------------------------------
    def token_to_sequence(self, token_index: int) -> int | None:
        _not_negative("token_to_sequence", token_index)
        if token_index > len(self.ids):
            return None
        if not self._sequence_ranges:
            return 0
        for seq_id, (start, end) in self._sequence_ranges.items():
            if start <= token_index < end:
                return seq_id
        return None

    def token_to_chars(self, token_index: int) -> Offsets | None:
        """The char span of a token in its input (None for out of range)."""
        _not_negative("token_to_chars", token_index)
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self.offsets):
            return None
        return self.offsets[token_index]

    def token_to_word(self, token_index: int) -> int | None:
        _not_negative("token_to_word", token_index)
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self.words):
            return None
        return self.words[token_index]

    def word_to_tokens(self, word_index: int, sequence_index: int = 0) -> Offsets | None:
        """``(first_token, last_token + 1)`` of a word in one input sequence."""
        _not_negative("word_to_tokens", word_index, sequence_index)
        start_r, end_r = self._sequence_range(sequence_index)
        first = last = None
        for i in range(start_r, end_r):
            w = self.words[i]
            if w is not None and w > word_index:
                break
            if w == word_index:
                if first is None:
                    first = i
                last = i + 1
        if first is None:
            return None
        return (first, last)

    def word_to_chars(self, word_index: int, sequence_index: int = 0) -> Offsets | None:
        _not_negative("word_to_chars", word_index, sequence_index)
        span = self.word_to_tokens(word_index, sequence_index)
        if span is None or span[1] == 0:
            return None
        return (self.offsets[span[0]][0], self.offsets[span[1] - 1][1])

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> int | None:
        """The token whose span holds char ``char_pos`` of input ``sequence_index``."""
        _not_negative("char_to_token", char_pos, sequence_index)
        start_r, end_r = self._sequence_range(sequence_index)
        for i in range(start_r, min(end_r, len(self.offsets))):
            s, e = self.offsets[i]
            if s <= char_pos < e:
                return i
        return None

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> int | None:
        _not_negative("char_to_word", char_pos, sequence_index)
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.token_to_word(token)

    # -- truncation, merging, padding -------------------------------------
    def _slice(self, start: int, stop: int) -> "Encoding":
        return Encoding(self.ids[start:stop], self.type_ids[start:stop], self.tokens[start:stop],
                        self.words[start:stop], self.offsets[start:stop],
                        self.special_tokens_mask[start:stop], self.attention_mask[start:stop], [], {})

    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        """Keep ``max_length`` tokens; what is cut goes to ``overflowing``.

        Overflowing windows overlap by ``stride`` tokens.

        >>> e = Encoding.from_tokens([(i, str(i), (i, i + 1)) for i in range(5)])
        >>> e.truncate(2, stride=1); e.ids, [o.ids for o in e.overflowing]
        ([0, 1], [[1, 2], [2, 3], [3, 4]])
        """
        n = len(self.ids)
        if max_length >= n:
            return
        if max_length == 0:
            whole = Encoding(self.ids, self.type_ids, self.tokens, self.words, self.offsets,
                             self.special_tokens_mask, self.attention_mask, self.overflowing,
                             self._sequence_ranges)
            self.__init__()
            self.overflowing.append(whole)
            return
        if stride >= max_length:
            raise ConfigError(f"truncation stride ({stride}) must be smaller than max_length ({max_length})",
                              fix="lower the stride or raise max_length")
        step = max_length - stride
        parts: list[Offsets] = []
        if direction == "right":
            for start in range(0, n, step):
                stop = min(start + max_length, n)
                parts.append((start, stop))
                if stop == n:
                    break
        elif direction == "left":
            for last in range(n - 1, -1, -step):
                stop = last + 1
                start = max(stop - max_length, 0)
                parts.append((start, stop))
                if start == 0:
                    break
        else:
            raise ConfigError(f"unknown truncation direction {direction!r}", fix="use 'right' or 'left'")
        first = self._slice(*parts[0])
        first.overflowing = [self._slice(*p) for p in parts[1:]]
        self._assign(first)

    def _assign(self, other: "Encoding") -> None:
        for field in _FIELDS:
            setattr(self, field, getattr(other, field))

    @staticmethod
    def merge(encodings: Iterable["Encoding"], growing_offsets: bool = True) -> "Encoding":
        """Concatenate encodings (and combine their overflowing parts)."""
        out = Encoding()
        for enc in encodings:
            out.merge_with(enc, growing_offsets)
        return out

    def merge_with(self, pair: "Encoding", growing_offsets: bool = False) -> None:
        """Append ``pair`` to this encoding in place."""
        overflowings = []
        for own in self.overflowing:
            combined = own.copy()
            combined.merge_with(pair.copy(), growing_offsets)
            overflowings.append(combined)
            for other in pair.overflowing:
                combined = own.copy()
                combined.merge_with(other.copy(), growing_offsets)
                overflowings.append(combined)
        for other in pair.overflowing:
            combined = self.copy()
            combined.merge_with(other.copy(), growing_offsets)
            overflowings.append(combined)
        n = len(self.ids)
        for seq_id, (s, e) in pair._sequence_ranges.items():
            self._sequence_ranges[seq_id] = (n + s, n + e)
        self.ids = self.ids + pair.ids
        self.type_ids = self.type_ids + pair.type_ids
        self.tokens = self.tokens + pair.tokens
        self.words = self.words + pair.words
        shift = self.offsets[-1][1] if growing_offsets and self.offsets else 0
        # Offsets are immutable tuples: unshifted ones are shared, not rebuilt (most merges).
        self.offsets = self.offsets + ([(s + shift, e + shift) for s, e in pair.offsets] if shift else pair.offsets)
        self.special_tokens_mask = self.special_tokens_mask + pair.special_tokens_mask
        self.attention_mask = self.attention_mask + pair.attention_mask
        self.overflowing = overflowings

    def pad(self, length: int, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0,
            pad_token: str = "[PAD]") -> None:
        """Pad to ``length`` tokens (and the overflowing encodings too)."""
        if direction not in ("right", "left"):
            raise ConfigError(f"unknown padding direction {direction!r}", fix="use 'right' or 'left'")
        if self._ids is None and not self._any_built():
            # Lazy and never read: the padding joins the frame, and the lists stay unbuilt
            # (so do those of raw truncation's overflowing parts, padded alike).
            for over in self._overflowing or ():
                over.pad(length, direction, pad_id, pad_type_id, pad_token)
            missing = length - len(self)
            if missing > 0:
                self._frame = self._frame.padded(missing, direction, pad_id, pad_type_id, pad_token)
            return
        for over in self.overflowing:
            over.pad(length, direction, pad_id, pad_type_id, pad_token)
        missing = length - len(self.ids)
        if missing <= 0:
            return
        if direction == "left":
            self.ids = [pad_id] * missing + self.ids
            self.type_ids = [pad_type_id] * missing + self.type_ids
            self.tokens = [pad_token] * missing + self.tokens
            self.words = [None] * missing + self.words
            self.offsets = [(0, 0)] * missing + self.offsets
            self.special_tokens_mask = [1] * missing + self.special_tokens_mask
            self.attention_mask = [0] * missing + self.attention_mask
            self._sequence_ranges = {k: (s + missing, e + missing) for k, (s, e) in self._sequence_ranges.items()}
        else:
            self.ids = self.ids + [pad_id] * missing
            self.type_ids = self.type_ids + [pad_type_id] * missing
            self.tokens = self.tokens + [pad_token] * missing
            self.words = self.words + [None] * missing
            self.offsets = self.offsets + [(0, 0)] * missing
            self.special_tokens_mask = self.special_tokens_mask + [1] * missing
            self.attention_mask = self.attention_mask + [0] * missing
