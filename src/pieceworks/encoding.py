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

from typing import Iterable

from .errors import ConfigError

__all__ = ["Encoding"]

Offsets = tuple[int, int]


class Encoding:
    """Ids, tokens, offsets and masks of one encoded input; see the module docstring."""

    __slots__ = ("ids", "type_ids", "tokens", "words", "offsets", "special_tokens_mask",
                 "attention_mask", "overflowing", "_sequence_ranges")

    def __init__(self, ids=None, type_ids=None, tokens=None, words=None, offsets=None,
                 special_tokens_mask=None, attention_mask=None, overflowing=None,
                 sequence_ranges=None):
        self.ids: list[int] = ids if ids is not None else []
        n = len(self.ids)
        self.type_ids: list[int] = type_ids if type_ids is not None else [0] * n
        self.tokens: list[str] = tokens if tokens is not None else []
        self.words: list[int | None] = words if words is not None else [None] * n
        self.offsets: list[Offsets] = offsets if offsets is not None else [(0, 0)] * n
        self.special_tokens_mask: list[int] = special_tokens_mask if special_tokens_mask is not None else [0] * n
        self.attention_mask: list[int] = attention_mask if attention_mask is not None else [1] * n
        self.overflowing: list[Encoding] = overflowing if overflowing is not None else []
        self._sequence_ranges: dict[int, tuple[int, int]] = sequence_ranges if sequence_ranges is not None else {}

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

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return (f"Encoding(num_tokens={len(self.ids)}, attributes=[ids, type_ids, tokens, offsets, "
                f"attention_mask, special_tokens_mask, overflowing])")

    def __eq__(self, other) -> bool:
        if not isinstance(other, Encoding):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def copy(self) -> "Encoding":
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
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self.offsets):
            return None
        return self.offsets[token_index]

    def token_to_word(self, token_index: int) -> int | None:
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self.words):
            return None
        return self.words[token_index]

    def word_to_tokens(self, word_index: int, sequence_index: int = 0) -> Offsets | None:
        """``(first_token, last_token + 1)`` of a word in one input sequence."""
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
        span = self.word_to_tokens(word_index, sequence_index)
        if span is None or span[1] == 0:
            return None
        return (self.offsets[span[0]][0], self.offsets[span[1] - 1][1])

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> int | None:
        """The token whose span holds char ``char_pos`` of input ``sequence_index``."""
        start_r, end_r = self._sequence_range(sequence_index)
        for i in range(start_r, min(end_r, len(self.offsets))):
            s, e = self.offsets[i]
            if s <= char_pos < e:
                return i
        return None

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> int | None:
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
        for slot in self.__slots__:
            setattr(self, slot, getattr(other, slot))

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
