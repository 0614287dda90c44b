"""Frame: the special tokens a post-processor puts around one sequence, shared by lazy encodings.

A post-processor's frame says which tokens go before and after a
sequence's own, with their type ids; a lazy :class:`~pieceworks.Encoding`
is ``before + sequence + after`` and builds each list through its frame
when first read. Padding a never-read encoding pads its frame instead.

>>> f = Frame([(101, "[CLS]", 0)], 0, [(102, "[SEP]", 0)], True)
>>> f.around([7, 8], 1, 1), f.around([0, 0], f.types_before, f.types_after)
([1, 7, 8, 1], [0, 0, 0, 0])
"""

from __future__ import annotations

__all__ = ["Frame", "PLAIN_FRAME", "PairFrame", "PLAIN_PAIR_FRAME"]


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


class PairFrame:
    """The special tokens a post-processor puts around and between a pair's two sequences.

    ``before + A + middle + B + after``: ``ids``, ``tokens`` and ``types``
    hold the three groups one after the other (``nb``, ``nm`` and ``na``
    long); ``type_a`` and ``type_b`` are the sequences' own type ids;
    ``trim`` (see ``Frame.trim``) is run on each sequence's offsets alone.
    A pair's encoding builds its ids from it at once, its other lists when first read.

    >>> f = PairFrame([(101, "[CLS]", 0)], 0, [(102, "[SEP]", 0)], 1, [(102, "[SEP]", 1)])
    >>> f.ids, f.types, (f.nb, f.nm, f.na), f.size
    ([101, 102, 102], [0, 0, 1], (1, 1, 1), 3)
    """

    __slots__ = ("ids", "tokens", "types", "type_a", "type_b", "nb", "nm", "na", "size", "trim", "pads_before",
                 "pads_after", "_groups", "_trimmed", "_padded")

    def __init__(self, before, type_a: int, middle, type_b: int, after, trim=None, pads_before: int = 0,
                 pads_after: int = 0):
        self._groups = (list(before), type_a, list(middle), type_b, list(after))
        self._trimmed: tuple = (None, None)     # (trim, this frame with it)
        self._padded: dict = {}
        self.pads_before = pads_before      # the first pads_before tokens before are padding
        self.pads_after = pads_after        # the last pads_after tokens after are padding
        groups = list(before) + list(middle) + list(after)
        self.ids = [t[0] for t in groups]
        self.tokens = [t[1] for t in groups]
        self.types = [t[2] for t in groups]
        self.type_a, self.type_b = type_a, type_b
        self.nb, self.nm, self.na = len(before), len(middle), len(after)
        self.size = len(groups)
        self.trim = trim

    def is_plain(self) -> bool:
        """No special tokens and the sequences typed 0 and 1 (its trimming aside): what a
        post-processor is handed, so a member of a Sequence after this one sees the pair as it was.

        >>> PairFrame((), 0, (), 1, ()).is_plain(), PairFrame((), 0, (), 0, ()).is_plain()
        (True, False)
        """
        return not self.size and self.type_a == 0 and self.type_b == 1

    def with_types(self, type_a: int, type_b: int) -> "PairFrame":
        """This frame with its sequences' own tokens typed ``type_a`` and ``type_b`` (the special
        tokens, trimming and padding as they are): a cut pair's overflowing parts keep the type
        ids their tokens had before the post-processor ran.

        >>> f = PairFrame([(101, "[CLS]", 0)], 0, [], 0, []).with_types(0, 1); f.type_b, f.ids
        (1, [101])
        """
        if (type_a, type_b) == (self.type_a, self.type_b):
            return self
        before, _, middle, _, after = self._groups
        return PairFrame(before, type_a, middle, type_b, after, self.trim, self.pads_before, self.pads_after)

    def with_trim(self, trim) -> "PairFrame":
        """This frame, its sequences' offsets trimmed by ``trim``; kept for the last ``trim`` asked.

        >>> f = PairFrame((), 0, (), 1, ()); f.with_trim(print).trim is print, f.with_trim(print) is f.with_trim(print)
        (True, True)
        """
        made_for, frame = self._trimmed
        if made_for is not trim or frame is None:
            frame = PairFrame(*self._groups, trim, self.pads_before, self.pads_after)
            self._trimmed = (trim, frame)
        return frame

    def padded(self, missing: int, direction: str, pad_id: int, pad_type_id: int, pad_token: str) -> "PairFrame":
        """This frame with ``missing`` padding tokens on the ``direction`` side (made once, then
        kept), as :meth:`Frame.padded`.

        >>> f = PairFrame([(1, "<s>", 0)], 0, [], 1, []).padded(2, "left", 0, 0, "<pad>")
        >>> f.ids, f.nb, f.pads_before
        ([0, 0, 1], 3, 2)
        """
        key = (missing, direction, pad_id, pad_type_id, pad_token)
        frame = self._padded.get(key)
        if frame is None:
            before, type_a, middle, type_b, after = self._groups
            pads = [(pad_id, pad_token, pad_type_id)] * missing
            if direction == "left":
                frame = PairFrame(pads + before, type_a, middle, type_b, after, self.trim,
                                  self.pads_before + missing, self.pads_after)
            else:
                frame = PairFrame(before, type_a, middle, type_b, after + pads, self.trim, self.pads_before,
                                  self.pads_after + missing)
            if len(self._padded) < 1024:   # (Fixed padding makes at most one per length)
                self._padded[key] = frame
        return frame


#: A pair with no post-processor: the sequences typed 0 and 1, nothing between them.
PLAIN_PAIR_FRAME = PairFrame((), 0, (), 1, ())
