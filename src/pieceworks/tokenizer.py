"""Tokenizer: the whole pipeline, with Hugging Face ``tokenizers``' Python API.

encode: text → added tokens found → normalizer → pre-tokenizer → model →
truncation → post-processor → padding → :class:`~pieceworks.encoding.Encoding`.
decode: ids → tokens → decoder → text.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import WordLevel
>>> from pieceworks.pre_tokenizers import WhitespaceSplit
>>> tok = Tokenizer(WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
>>> tok.pre_tokenizer = WhitespaceSplit()
>>> enc = tok.encode("hello big world")
>>> enc.ids, enc.tokens, enc.offsets
([1, 0, 2], ['hello', '[UNK]', 'world'], [(0, 5), (6, 9), (10, 15)])
>>> tok.decode(enc.ids)
'hello [UNK] world'
"""

from __future__ import annotations

import os
import warnings
from functools import lru_cache, partial
from itertools import accumulate
from operator import itemgetter
from types import FunctionType, MethodType
from typing import Callable, Iterable, Iterator

from ._collector import paused as _collector_paused
from .added_vocabulary import AddedToken, AddedVocabulary, as_added_token, spans_in_passes, spans_in_passes_of
from ._component import _EPOCH, epoch
from ._kernels.token_finder import AroundTokens, TokenTrie
from ._kernels.encoding import EncodingWithIds
from ._kernels.id_bytes import IdBytes, Remembered, id_bytes_of, strip_text
from ._kernels.raw_encoding import (CallbackSpans, fill_encodings as _fill_encodings,
                                    join_around as _raw_join_around,
                                    joined_words as _joined_words,
                                    join_layouts as _raw_join_layouts,
                                    join_lazily as _raw_join_lazily, layout_segments as _raw_layout_segments,
                                    check_stride, defer_overflowing as _defer_overflowing,
                                    make_with_ids as _make_with_ids, none_positions as _none_positions,
                                    pack as _raw_pack, pad_never_read as _pad_never_read,
                                    pair_encoding as _pair_encoding_of, truncation_windows,
                                    untrack as _untrack)
from ._kernels.single_text import SingleText, current_single, only_str, text_pair as _text_pair, tokenizer_encode
from .decoders import (ByteFallback, ByteLevel, Fuse, Metaspace, Replace, Sequence as DecoderSequence, Strip, WordPiece,
                       check_utf8_errors, fallback_byte, token_bytes)
from .encoding import PLAIN_FRAME, Encoding
from .frame import PLAIN_PAIR_FRAME, Frame, PairFrame
from ._unicode_forms import _combining, changes_text
from .fast._pool import num_threads, run_in_ranges, threads_pay
from .errors import ConfigError, InputTypeError, OutOfRangeError, UnknownIdError

__all__ = ["Tokenizer"]

_STRATEGIES = ("longest_first", "only_first", "only_second")
# Token ids are unsigned 32-bit ints (Hugging Face and tiktoken read them so).
_MAX_ID = 2**32 - 1


class Tokenizer:
    """A model plus the optional normalizer, pre-tokenizer, post-processor and decoder."""

    #: encode's snapshot for one plain str (see _kernels/single_text.pyx); None: not built yet.
    _single = None

    def __setattr__(self, name, value):
        # Any change to the tokenizer's settings makes encode's snapshot stale, as a
        # change to a component does (both move the same epoch).
        _EPOCH[0] += 1
        object.__setattr__(self, name, value)

    def __init__(self, model):
        from .models import Model

        if not isinstance(model, Model):
            raise InputTypeError(f"Tokenizer needs a pieceworks model, got {type(model).__name__}",
                                 fix="pass e.g. pieceworks.models.BPE() or WordLevel(vocab, unk_token)")
        self._model = model
        self._normalizer = None
        self.pre_tokenizer = None
        self.post_processor = None
        self.decoder = None
        self._added = AddedVocabulary()
        self._truncation: dict | None = None
        self._padding: dict | None = None
        #: When True, special tokens in the text are encoded as plain text.
        self.encode_special_tokens = False

    # -- the stages --------------------------------------------------------
    @property
    def model(self):
        return self._model

    @model.setter
    def model(self, model):
        self._model = model
        self._added.refresh(model, self._normalizer)

    @property
    def normalizer(self):
        return self._normalizer

    @normalizer.setter
    def normalizer(self, normalizer):
        # Normalized added tokens are matched in their normalized form.
        self._normalizer = normalizer
        self._added.forget_normalized_forms()      # (Hugging Face normalizes them all again here)
        self._added.refresh(self._model, normalizer)

    # -- vocabulary --------------------------------------------------------
    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        vocab = self._model.get_vocab()
        if with_added_tokens:
            vocab.update(self._added.by_content)
        return vocab

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        if with_added_tokens:
            return len(self.get_vocab(True))
        return self._model.get_vocab_size()

    def get_added_tokens_decoder(self) -> dict[int, AddedToken]:
        """Added tokens by id."""
        return dict(sorted(self._added.by_id.items()))

    def token_to_id(self, token: str) -> int | None:
        # (AddedVocabulary.token_to_id, inlined: a call frame was a third of the time.)
        tid = self._added.by_content.get(token)
        return tid if tid is not None else self._model.token_to_id(token)

    def id_to_token(self, id: int) -> str | None:
        """The token of ``id``, or None; OutOfRangeError (an OverflowError, as Hugging Face raises)
        for an id below 0 or past 2**32 - 1."""
        if not 0 <= id <= _MAX_ID:
            raise OutOfRangeError(f"id_to_token: token ids are 0 to 2**32 - 1, got {id}",
                                  fix="pass an id this tokenizer produced")
        return self._added.id_to_token(id, self._model)

    def add_tokens(self, tokens: list) -> int:
        """Add tokens matched whole in the text (not special); returns how many were new."""
        return self._added.add([as_added_token(t, special=False) for t in _as_list(tokens, "tokens")],
                               self._model, self._normalizer)

    def add_special_tokens(self, tokens: list) -> int:
        """Add special tokens (skipped by ``decode(skip_special_tokens=True)``)."""
        return self._added.add([as_added_token(t, special=True) for t in _as_list(tokens, "tokens")],
                               self._model, self._normalizer)

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return 0 if self.post_processor is None else self.post_processor.num_special_tokens_to_add(is_pair)

    # -- truncation and padding ------------------------------------------
    def enable_truncation(self, max_length: int, stride: int = 0, strategy: str = "longest_first",
                          direction: str = "right") -> None:
        """Cut encodings to ``max_length`` tokens (special tokens included).

        As in Hugging Face, a ``max_length`` below the number of special
        tokens the post-processor adds leaves the encodings that get them
        uncut (Hugging Face's unsigned subtraction wraps round); a warning
        says so.
        """
        _check_count(max_length, "max_length")
        _check_count(stride, "stride")
        if strategy not in _STRATEGIES:
            raise ConfigError(f"unknown truncation strategy {strategy!r}", fix=f"use one of {', '.join(_STRATEGIES)}")
        if direction not in ("right", "left"):
            raise ConfigError(f"unknown truncation direction {direction!r}", fix="use 'right' or 'left'")
        n_added = self.num_special_tokens_to_add(False)
        room = _room_for_content(max_length, n_added)
        if room is None:
            warnings.warn(f"enable_truncation: max_length ({max_length}) is below the {n_added} special tokens the "
                          f"post-processor adds, so an encoding with special tokens is not cut (as in Hugging "
                          f"Face). Fix: raise max_length to at least {n_added}", UserWarning, stacklevel=2)
        elif room < stride:
            raise ConfigError(
                f"truncation stride ({stride}) must be smaller than max_length ({max_length}) minus the "
                f"{n_added} special tokens the post-processor adds",
                fix="lower the stride or raise max_length")
        self._truncation = {"max_length": max_length, "stride": stride, "strategy": strategy,
                            "direction": direction}

    def no_truncation(self) -> None:
        self._truncation = None

    @property
    def truncation(self) -> dict | None:
        """The truncation settings (a dict), or None."""
        params = self._truncation
        return None if params is None else dict(params)

    def enable_padding(self, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0,
                       pad_token: str = "[PAD]", length: int | None = None,
                       pad_to_multiple_of: int | None = None) -> None:
        """Pad to ``length`` tokens, or (``length=None``) to the longest in the batch."""
        if direction not in ("right", "left"):
            raise ConfigError(f"unknown padding direction {direction!r}", fix="use 'right' or 'left'")
        if length is not None:
            _check_count(length, "length")
        if pad_to_multiple_of is not None:
            _check_count(pad_to_multiple_of, "pad_to_multiple_of")
        self._padding = {"length": length, "pad_to_multiple_of": pad_to_multiple_of, "pad_id": pad_id,
                         "pad_token": pad_token, "pad_type_id": pad_type_id, "direction": direction}

    def no_padding(self) -> None:
        self._padding = None

    @property
    def padding(self) -> dict | None:
        """The padding settings (a dict), or None."""
        params = self._padding
        return None if params is None else dict(params)

    # -- encoding ----------------------------------------------------------
    #: Encode one input (or a pair) into an :class:`Encoding` (a Cython function: one plain
    #: str takes a snapshot of the fast way, anything else :meth:`_encode_general`).
    encode = tokenizer_encode

    def _encode_general(self, sequence, pair=None, is_pretokenized: bool = False, add_special_tokens: bool = True,
                        split_special_tokens: bool | None = None) -> Encoding:
        """:meth:`encode` for every input: the fused fast plan when it applies, else the pipeline."""
        split = self.encode_special_tokens if split_special_tokens is None else split_special_tokens
        encoding = None
        rewind = self._generator_rewind()
        if pair is None and is_pretokenized:
            encoding = self._encode_words_framed(sequence, add_special_tokens, split)
        elif pair is None and type(sequence) is str and not (split and self._split_exclusion() is not None):
            encoding = self._encode_raw(sequence, add_special_tokens, split, self._raw_limit(add_special_tokens))
        elif pair is not None:      # (padded as it is built)
            encoding = self._encode_pair_raw(sequence, pair, is_pretokenized, add_special_tokens, split,
                                             self._padding)
            if encoding is not None:
                return encoding
        if encoding is not None:
            if self._padding is not None:
                self._pad([encoding])
            return encoding
        if rewind is not None:
            rewind()
        encoding = self._encode_sequence(sequence, 0, is_pretokenized, split, "sequence")
        pair_encoding = None
        if pair is not None:
            pair_encoding = self._encode_sequence(pair, 1, is_pretokenized, split, "pair")
        encoding = self.post_process(encoding, pair_encoding, add_special_tokens)
        if self._padding is not None:
            self._pad([encoding])
        return encoding

    def encode_batch(self, input: list, is_pretokenized: bool = False, add_special_tokens: bool = True,
                     split_special_tokens: bool | None = None) -> list[Encoding]:
        """Encode many inputs; each item is a sequence or a ``(sequence, pair)``.

        When the fast plan encodes without the GIL and the batch is big
        enough, ranges of it run on ``PIECEWORKS_NUM_THREADS`` threads
        (default: the CPU count); the result is the serial one.
        """
        items = _as_list(input, "input")
        split = self.encode_special_tokens if split_special_tokens is None else split_special_tokens
        plan = None if is_pretokenized else self._current_plan()
        # Under BPE-dropout (a plan that samples) each input in turn, through the plan one by one:
        # the draws then come in the order a serial loop makes them, so a seed gives its ids.
        in_turn = getattr(plan if plan is not None else self._current_plan(), "samples", False)
        raw_ready = None if is_pretokenized or in_turn else self._raw_batch_ready(plan, add_special_tokens, split)

        def encode_range(start: int, stop: int) -> list[Encoding]:
            if raw_ready is not None:
                return self._encode_range_raw(items, start, stop, plan, raw_ready, split, add_special_tokens,
                                              self._ids_class(), None if done is None else done[start:stop])
            out = []
            words = self._encode_words_framed_batch(items[start:stop], add_special_tokens, split,
                                                    None if done is None else done[start:stop]) \
                if is_pretokenized and not in_turn else None
            for i in range(start, stop):
                if words is not None and words[i - start] is not None:
                    out.append(words[i - start])
                    continue
                first, second = _split_batch_item(items[i], is_pretokenized, i)
                if in_turn:     # (as encode takes it; padded again with the batch below, to the same end)
                    out.append(self.encode(first, second, is_pretokenized, add_special_tokens, split))
                    continue
                if is_pretokenized and second is None:
                    enc = self._encode_words_framed(first, add_special_tokens, split)
                    if enc is not None:
                        out.append(enc)
                        continue
                enc = self._encode_sequence(first, 0, is_pretokenized, split, f"input[{i}]")
                pair = None if second is None else self._encode_sequence(second, 1, is_pretokenized, split,
                                                                        f"input[{i}]")
                out.append(self.post_process(enc, pair, add_special_tokens))
            return out

        out = None
        if raw_ready is not None and hasattr(plan, "encode_job"):
            out = self._encode_batch_job(items, plan, raw_ready, split, add_special_tokens)
        done = None
        if raw_ready is not None and out is None and not only_str(items) and not threads_pay(items, plan):
            # Each pair of strs as one encode call takes it, in one C loop (pairs too short for threads to
            # pay: they would only pass the GIL to and fro); the rest as below.
            done = current_single(self).encode_pairs(self, items, add_special_tokens, split, self._fixed_padding())
            if None not in done:
                out = done
        elif is_pretokenized and items and not in_turn:
            # Each sequence of words as one encode call takes it, in one C loop; the rest as below.
            done = current_single(self).encode_words_batch(self, items, add_special_tokens, split)
            if None not in done:
                out = done
        if out is None:     # (pre-tokenized: a range's words are one kernel call, as a raw batch's texts)
            words_plan = self._current_plan() if is_pretokenized else None
            out = run_in_ranges(encode_range, items, words_plan or plan,
                                raw_ready is not None or words_plan is not None and words_plan.has_raw)
        if self._padding is not None:
            self._pad(out)
        return out

    def encode_batch_ids(self, input: list, is_pretokenized: bool = False, add_special_tokens: bool = True,
                         split_special_tokens: bool | None = None) -> list[list[int]]:
        """``[e.ids for e in encode_batch(input, ...)]``, without making an :class:`Encoding` when it can.

        For callers that read only the ids (a pieceworks addition: Hugging
        Face has no such call). A byte-level BPE tokenizer's batch of plain
        texts, unpadded, goes through its kernel job with no object a text
        but the ids list, as the tiktoken face's ``encode_batch``; anything
        else is ``encode_batch`` and its ids.

        >>> from pieceworks import Tokenizer
        >>> from pieceworks.models import WordLevel
        >>> from pieceworks.pre_tokenizers import Whitespace
        >>> tok = Tokenizer(WordLevel({"hi": 0, "there": 1, "[UNK]": 2}, unk_token="[UNK]"))
        >>> tok.pre_tokenizer = Whitespace()
        >>> tok.encode_batch_ids(["hi there", "there you"])
        [[0, 1], [1, 2]]
        """
        if not is_pretokenized and self._padding is None:
            items = _as_list(input, "input")
            split = self.encode_special_tokens if split_special_tokens is None else split_special_tokens
            plan = self._current_plan()
            frame = self._raw_batch_ready(plan, add_special_tokens, split, ids_only=True)
            if frame is not None and hasattr(plan, "encode_job") and not getattr(plan, "samples", False):
                out = self._encode_batch_job(items, plan, frame, split, add_special_tokens, ids_only=True)
                if out is not None:
                    return out
        return [e.ids for e in self.encode_batch(input, is_pretokenized, add_special_tokens, split_special_tokens)]

    def _encode_batch_job(self, items: list, plan, frame, split: bool, add_special_tokens: bool,
                          ids_only: bool = False) -> list | None:
        """The batch as one kernel job on the pool's threads (see ``plan.encode_job``), or None.

        For plain texts; those that hold an added token (the job's threads
        find them as they go) are encoded around them in the job too (see
        :meth:`_around_added`), and the few others it leaves out (None)
        afterwards, on threads. ``ids_only`` (unpadded only): each item is
        the ids list alone.
        """
        added = self._added
        if type(items) is not list or not items or not only_str(items):
            return None
        if (self._normalizer is not None and added.has_normalized_tokens()
                and not getattr(plan, "job_leaves_changed_texts", False)):
            return None     # tokens matched after normalizing: the finder reads the texts as they are
        # The ids are built in the job, on the calling thread while the pool's threads still encode.
        ids_cls = self._ids_class()
        finder = added.finder if added.by_content else None
        around = self._around_added(plan, split) if finder is not None and ids_cls is not None else None
        out = plan.encode_job(items, Encoding, frame, self._raw_truncation(add_special_tokens), num_threads(), None,
                              ids_cls=ids_cls, finder=finder, around=around, ids_only=ids_only)
        if out is None:
            return None
        left = _none_positions(out)
        if left:    # (all strs: no input error whose index the sub-list would shift)
            rest = [items[k] for k in left]
            encoded = run_in_ranges(lambda start, stop: self._encode_range_raw(rest, start, stop, plan, frame, split,
                                                                               add_special_tokens, ids_cls),
                                    rest, plan, True)
            for k, encoding in zip(left, encoded):
                out[k] = encoding.ids if ids_only else encoding
        return out

    def _around_added(self, plan, split: bool) -> tuple | None:
        """How the byte-level kernel encodes a text holding added tokens around them: ``(tokens,
        strings, spans_from)`` (:meth:`_around_parts`'), or None to leave such texts to the long way.

        The kernel joins the ids of the stretches between the tokens (each
        encoded on its own) and the tokens'; the encoding spells them from
        the plan's table with the added tokens, and works out its offsets,
        words and tokens the long way (:meth:`_raw_around_found`, on the
        tokens the kernel found) only when first read (``CallbackSpans``):
        for chat-formatted texts, most callers read only the ids.
        """
        parts = self._around_parts(plan, split)
        if parts is None:
            return None
        tokens, table, passes = parts
        # (Made anew, not kept: it refers to this tokenizer, which would then refer to itself.)
        return tokens, table, CallbackSpans(partial(self._raw_around_found, plan, split, passes))

    def _around_parts(self, plan, split: bool) -> tuple | None:
        """``(tokens, strings, passes)``: the added tokens a kernel encodes around
        (``token_finder.AroundTokens``), the plan's table of token strings with them, and
        :meth:`AddedVocabulary.exact_matcher`'s passes; None to leave texts holding them to the
        long way (so too under BPE-dropout, ``plan.samples``, unless the plan's call makes each
        text's whole encoding at once, ``around_whole``: the byte-level job's rest, worked out when
        read by encoding the text again, would draw other ids). Made once per state of the tokens."""
        if getattr(plan, "samples", False) and not getattr(plan, "around_whole", False):
            return None
        strings = plan.token_strings() if hasattr(plan, "token_strings") else None
        key = (epoch(), split, id(plan), id(strings))
        cached = self.__dict__.get("_around")
        if cached is None or cached[0] != key:
            # The tokens matched after normalizing are a second pass in the text as it is: with no
            # normalizer, or one the plan encodes around tokens only in texts it leaves as they are
            # (NFC: then each stretch between the first pass's tokens is one NFC keeps too).
            as_is = self._normalizer is None or getattr(plan, "job_leaves_changed_texts", False)
            passes = self._added.exact_matcher(split, as_is=as_is)
            table = None if passes is None or strings is None else self._strings_with_added(strings)
            made = None if table is None else (_around_tokens(passes), table, passes)
            cached = self.__dict__["_around"] = (key, made, plan, strings)    # (keeps what the key names alive)
        return cached[1]

    def _encode_ids_around_added(self, plan, text: str, split: bool, frame, limit: int | None) -> Encoding | None:
        """One text holding added tokens as :meth:`_around_added` encodes a batch's: its ids now, the
        rest when read; None to take the long way (a text holding none; with padding, which would
        build the rest at once)."""
        encode_around = getattr(plan, "encode_ids_around", None)
        if encode_around is None or self._padding is not None or len(text) >= _RAW_MAX_CHARS:
            return None
        around = self._around_added(plan, split)
        if around is None:
            return None
        ids = encode_around(text, around[0])
        if ids is None or limit is not None and len(ids) > limit:
            return None
        return _encoding_of_ids(ids, around[1], frame, around[2], text)

    def _raw_around_found(self, plan, split: bool, passes: tuple, text: str) -> tuple[bytes, int]:
        """``(raw, n)``: the whole raw encoding of ``text`` around its added tokens, found by the
        ``passes`` a job found them with (see :meth:`_around_added`), when first read. (A text the
        normalizer changes, whose ids were its NFC form's, has its tokens found as the long way
        finds them: the second pass's in its normalized stretches.)"""
        if self._matched_after_normalizing(plan, text) and not plan.normalizes_nothing(text):
            layout = None
        else:
            found = spans_in_passes(passes, text)
            if found is None:
                raise RuntimeError(f"pieceworks: an added token in {text[:40]!r} moves its span: no ids joined "
                                   "around it")
            layout = (text, found, None)
        encoding = self._encode_raw_around_added(plan, text, split, PLAIN_FRAME, None, layout)
        if encoding is None:
            raise RuntimeError(f"pieceworks: the offsets of {text[:40]!r} could not be worked out again")
        encoding._ready_spans()
        return encoding._raw, encoding._n

    def encode_batch_fast(self, input: list, is_pretokenized: bool = False,
                          add_special_tokens: bool = True) -> list[Encoding]:
        """Same as :meth:`encode_batch` (Hugging Face's name for the offsets-light path)."""
        return self.encode_batch(input, is_pretokenized, add_special_tokens)

    # -- Hugging Face's async API: the same work on a thread, so an event loop keeps running ---------
    async def async_encode(self, sequence, pair=None, is_pretokenized: bool = False,
                           add_special_tokens: bool = True) -> Encoding:
        """``await``-able :meth:`encode`, run on a worker thread (the kernels drop the GIL)."""
        return await _on_thread(self.encode, sequence, pair, is_pretokenized, add_special_tokens)

    async def async_encode_batch(self, input: list, is_pretokenized: bool = False,
                                 add_special_tokens: bool = True) -> list[Encoding]:
        """``await``-able :meth:`encode_batch`, run on a worker thread."""
        return await _on_thread(self.encode_batch, input, is_pretokenized, add_special_tokens)

    async def async_encode_batch_fast(self, input: list, is_pretokenized: bool = False,
                                      add_special_tokens: bool = True) -> list[Encoding]:
        """``await``-able :meth:`encode_batch_fast`, run on a worker thread."""
        return await _on_thread(self.encode_batch_fast, input, is_pretokenized, add_special_tokens)

    def _encode_ids_batch(self, texts: list[str], add_special_tokens: bool = True) -> list:
        """``[array('i', e.ids) for e in encode_batch(texts)]``, without building Python ids when it can.

        Only the ids are read, so a post-processor that just trims offsets
        does not stop the raw path (encode-dataset uses this).
        """
        plan = self._current_plan()
        split = self.encode_special_tokens
        in_turn = self._padding is not None or getattr(plan, "samples", False)     # (see encode_batch)
        frame = None if in_turn else self._raw_batch_ready(plan, add_special_tokens, split, ids_only=True)
        if frame is None:
            return [e._ids_array() for e in self.encode_batch(texts, add_special_tokens=add_special_tokens)]
        encodings = run_in_ranges(lambda start, stop: self._encode_range_raw(texts, start, stop, plan, frame, split,
                                                                             add_special_tokens),
                                  texts, plan, True)
        return [e._ids_array() for e in encodings]

    def _encode_sequence(self, sequence, type_id: int, is_pretokenized: bool, split_special: bool,
                         name: str) -> Encoding:
        if is_pretokenized:
            if isinstance(sequence, str) or not isinstance(sequence, (list, tuple)):
                raise InputTypeError(f"{name}: with is_pretokenized=True each input must be a list of str, "
                                     f"got {type(sequence).__name__}",
                                     fix="pass a list of words, or is_pretokenized=False for a plain str")
            words = [_check_str(w, f"{name}[{j}]") for j, w in enumerate(sequence)]
            rewind = self._generator_rewind()
            encoding = self._encode_words_raw(words, type_id, split_special)
            if encoding is not None:
                return encoding
            if rewind is not None:
                rewind()
            parts = [self._encode_text(w, type_id, j, split_special) for j, w in enumerate(words)]
            return Encoding.merge(parts, growing_offsets=False)
        return self._encode_text(_check_str(sequence, name), type_id, None, split_special)

    def _encode_words_raw(self, words: list[str], type_id: int, split_special: bool) -> Encoding | None:
        """The words of a pre-tokenized sequence, not post-processed (:meth:`_words_raw`), or None."""
        made = self._words_raw(words, split_special)
        return None if made is None else _encoding_of_result(made, PLAIN_FRAME if type_id == 0 else _type_frame(type_id),
                                                             None)

    def _encode_words_framed(self, sequence, add_special_tokens: bool, split_special: bool) -> Encoding | None:
        """A pre-tokenized sequence with no pair, its special tokens a frame and cut as
        :meth:`_encode_raw` cuts a text (:meth:`_words_raw`; no post-processing in Python); or None."""
        return self._encode_words_framed_batch([sequence], add_special_tokens, split_special)[0]

    def _encode_words_framed_batch(self, items: list, add_special_tokens: bool, split_special: bool,
                                   done: list | None = None) -> list:
        """:meth:`_encode_words_framed` of each pre-tokenized sequence of ``items``, the words of all
        of them in one :meth:`_texts_raw` call; None for an item left to the long way (a pair,
        an empty or odd sequence, a word the plan leaves). ``done``: the encodings of the items
        already made (None for the others), kept."""
        processor = self.post_processor
        frame = PLAIN_FRAME if processor is None else processor.single_frame(add_special_tokens)
        out: list = [None] * len(items) if done is None else list(done)
        picked = [k for k, item in enumerate(items) if out[k] is None and _words_list(item) and item] \
            if frame is not None else []
        results = self._texts_raw([word for k in picked for word in items[k]], split_special) if picked else None
        if results is None:
            return out
        truncation = self._raw_truncation(add_special_tokens)
        at = 0
        for k in picked:
            made = _joined_words(results[at:at + len(items[k])])
            at += len(items[k])
            out[k] = None if made is None else _encoding_of_result(made, frame, truncation)
        return out

    def _words_raw(self, words: list[str], split_special: bool) -> tuple | None:
        """The words of a pre-tokenized sequence (each word encoded alone, its offsets in itself, each
        of its tokens that word) as one raw result, ``(raw, n, n_words, strings[, tokens])`` (see
        ``raw_encoding.fill_encodings``): :meth:`_texts_raw` of the words, joined in C (the words
        one by one took twice Hugging Face's time). None to take the long way."""
        return _joined_words(self._texts_raw(words, split_special))

    def _texts_raw(self, texts: list[str], split_special: bool) -> list | None:
        """Each of ``texts`` encoded alone as a raw result (``raw_encoding.fill_encodings``' form,
        offsets in itself; None where the plan left it), with no post-processing, all on one
        token table: through the plan's in-kernel around-tokens call where it has one, else
        their added tokens found in C and every stretch between them through one
        ``plan.encode_raw_batch`` call (tokens matched after normalizing: :meth:`_texts_raw_as_is`).
        None to take the long way (no raw plan, a text too long, special tokens split that the
        model could spell)."""
        plan = self._current_plan()
        if plan is None or not plan.has_raw or split_special and self._split_exclusion() is not None \
                or max(map(len, texts), default=0) >= _RAW_MAX_CHARS:
            return None
        if len(texts) > 1 and getattr(plan, "samples", False):
            return None     # (BPE-dropout: the texts below need not go in order; the long way takes each in turn)
        if self._matched_after_normalizing(plan, ""):
            return self._texts_raw_as_is(plan, texts, split_special)
        # A plan that encodes around added tokens in its kernel takes every text, holding one or not,
        # in one call (the Python around the kernel cost a word more than the kernel did).
        results = self._encode_around_in_kernel(plan, texts, split_special, None)
        if results is None:
            return self._one_table(self._texts_found_raw(plan, texts, split_special))
        left = _none_positions(results)
        if left:
            for k, result in zip(left, self._texts_found_raw(plan, [texts[k] for k in left], split_special)):
                results[k] = result
        return self._one_table(results)

    def _texts_found_raw(self, plan, texts: list[str], split_special: bool) -> list:
        """:meth:`_texts_raw`'s results with the added tokens found first (``token_spans_of``),
        the stretches between them through one ``plan.encode_raw_batch`` call."""
        founds = self._added.token_spans_of(texts, split_special) if self._added.by_content else None
        return self._raw_around(plan, texts, founds)

    def _raw_around(self, plan, texts: list[str], founds: list | None) -> list:
        """The raw result of each text with its added tokens ``founds`` (in the text as it is; None:
        none looked for), the stretches between them through one ``plan.encode_raw_batch`` call."""
        # (A text holding no added token is the plan's as it is, at 0: one call for all of those.)
        holding = [k for k, found in enumerate(founds) if found] if founds else ()
        if not holding:
            return plan.encode_raw_batch(texts)
        if len(holding) == len(texts):
            return self._joined_layouts(plan, texts, founds, None)
        results = plan.encode_raw_batch([text for text, found in zip(texts, founds) if not found])
        joined = iter(self._joined_layouts(plan, [texts[k] for k in holding], [founds[k] for k in holding], None))
        plain = iter(results)
        return [next(joined) if found else next(plain) for found in founds]

    def _one_table(self, results: list) -> list | None:
        """``results`` with one token table for all (a plan's, whatever its path; see
        :meth:`_on_one_table`), or None."""
        if None not in results:     # (the common case, in C-level loops: words are many)
            tables = set(map(id, map(_STRINGS_OF, results)))
            return results if len(tables) <= 1 else self._on_one_table(results)
        strings = None
        for result in results:
            if result is not None:
                if strings is None:
                    strings = result[3]
                elif result[3] is not strings:
                    return self._on_one_table(results)
        return results if strings is not None or not results else None

    def _texts_raw_as_is(self, plan, texts: list[str], split_special: bool) -> list | None:
        """:meth:`_texts_raw` with added tokens matched after normalizing (GPT-NeoX's, under NFC):
        in a text the normalizer leaves as it is, so it leaves each stretch between the tokens
        matched first, they are found in the text as it is (the second of
        :meth:`AddedVocabulary.exact_matcher`'s passes); a text it changes is left (None)."""
        passes = self._added.exact_matcher(split_special, as_is=True)
        if passes is None:
            return None
        changed = _normalized_among(plan, texts)    # (none, the common case: a sentence's words)
        kept = sorted(set(range(len(texts))).difference(changed)) if changed else range(len(texts))
        results: list = [None] * len(texts)
        founds = spans_in_passes_of(passes, [texts[k] for k in kept])
        found_in = [j for j, found in enumerate(founds) if found is not None]   # (None: a token moved its span)
        for j, result in zip(found_in, self._raw_around(plan, [texts[kept[j]] for j in found_in],
                                                        [founds[j] for j in found_in])):
            results[kept[j]] = result
        if changed:     # (their tokens matched in their normalized gaps)
            layouts = [self._added_layout(plan, texts[k], split_special) for k in changed]
            for k, result in zip(changed, self._layout_results(plan, layouts, None)):
                results[k] = result
        return self._one_table(results)

    def _on_one_table(self, results: list) -> list | None:
        """``results`` whose token tables are the plan's and that table with the added tokens
        (:meth:`_strings_with_added`: the texts that held one), all on the second; else None."""
        tables = {id(result[3]): result[3] for result in results if result is not None}
        if len(tables) != 2:
            return None
        narrow, wide = sorted(tables.values(), key=len)
        if self._strings_with_added(narrow) is not wide:
            narrow, wide = wide, narrow     # (as long, when every added token is in the vocabulary)
            if self._strings_with_added(narrow) is not wide:
                return None
        return [result if result is None or result[3] is wide else result[:3] + (wide,) + result[4:]
                for result in results]

    def _encode_pair_raw(self, first, second, is_pretokenized: bool, add_special_tokens: bool,
                         split_special: bool, padding: dict | None = None) -> Encoding | None:
        """A pair (two strs, or two lists of words) encoded whole from the plan's raw form, built in C
        with its post-processor's :class:`PairFrame` (and ``padding``, for one encoding alone), cut
        as the truncation says (:meth:`_pair_of_results`). None to take the long way (a processor
        that does more, anything :meth:`_texts_raw` leaves)."""
        if not is_pretokenized:
            if type(first) is not str or type(second) is not str:
                return None
            return self._encode_pairs_raw([(first, second)], add_special_tokens, split_special, padding)[0]
        if not _words_list(first) or not _words_list(second):
            return None     # (the long way names what is wrong)
        frame = self._pair_frame(add_special_tokens)
        results = None if frame is None else self._texts_raw(list(first) + list(second), split_special)
        if results is None:
            return None
        return self._pair_of_results(_joined_words(results[:len(first)]), _joined_words(results[len(first):]), frame,
                                     add_special_tokens, self._truncation, padding)

    def _encode_pairs_raw(self, pairs: list, add_special_tokens: bool, split_special: bool,
                          padding: dict | None) -> list:
        """:meth:`_encode_pair_raw` of many pairs of strs, their texts in one :meth:`_texts_raw` call
        (one token table for all); None for each pair left to the long way."""
        frame = self._pair_frame(add_special_tokens)
        results = None if frame is None else self._texts_raw([text for pair in pairs for text in pair], split_special)
        if results is None:
            return [None] * len(pairs)
        truncation = self._truncation   # (read once: another thread may change it meanwhile)
        return [self._pair_of_results(a, b, frame, add_special_tokens, truncation, padding)
                for a, b in zip(results[::2], results[1::2])]

    def _pair_frame(self, add_special_tokens: bool) -> PairFrame | None:
        processor = self.post_processor
        return PLAIN_PAIR_FRAME if processor is None else processor.pair_frame(add_special_tokens)

    def _pair_of_results(self, a: tuple | None, b: tuple | None, frame: PairFrame, add_special_tokens: bool,
                         truncation: dict | None, padding: dict | None) -> Encoding | None:
        """The encoding of a pair's two raw results (None if the plan left one), padded as
        ``padding`` says for it alone: built in C (:func:`_pair_encoding`; :meth:`_cut_pair` when
        the truncation cuts it), or, for the few cuts that cannot be so, the results as the
        sequences' encodings through :meth:`post_process`; never encoded again."""
        if a is None or b is None:
            return None
        encoding = _pair_encoding(a, b, frame, truncation, padding)
        if encoding is None:
            encoding = self._cut_pair(a, b, frame, add_special_tokens, truncation, padding)
        if encoding is None:
            encoding = self.post_process(_encoding_of_result(a, PLAIN_FRAME, None),
                                         _encoding_of_result(b, _type_frame(1), None), add_special_tokens)
            if padding is not None:
                self._pad([encoding])
        return encoding

    def _cut_pair(self, a: tuple, b: tuple, frame: PairFrame, add_special_tokens: bool, truncation: dict,
                  padding: dict | None) -> Encoding | None:
        """A pair of raw results the truncation cuts: the kept tokens of each built in C, as
        :meth:`post_process` keeps them (:func:`_pair_cut_lengths`), and the overflowing parts,
        Hugging Face's every combination of both sequences' windows, made only when first read
        (``raw_encoding.defer_overflowing``: made, they cost ten times the encoding, and a
        classifier's batch never reads them). None for the cuts :meth:`post_process` makes
        otherwise (none at all, or to nothing)."""
        params = self._content_truncation(True, add_special_tokens, truncation)
        if params is None or params["max_length"] == 0:
            return None
        n_a, n_b = _pair_cut_lengths(a[1], b[1], params)
        for kept, n in ((n_a, a[1]), (n_b, b[1])):
            if 0 < kept < n:
                check_stride(params["stride"], kept)      # (now, as the cut itself would raise)
        left = params["direction"] == "left"
        keep_a = (a[1] - n_a, a[1]) if left else (0, n_a)
        keep_b = (b[1] - n_b, b[1]) if left else (0, n_b)
        processor = self.post_processor
        part_types = None if processor is None else processor.part_types(add_special_tokens)
        if part_types is not None:
            make_parts = partial(_cut_pair_parts, a, b, frame, part_types, params, n_a, n_b)
        else:
            make_parts = partial(_cut_pair_overflowing, processor, a, b, params, add_special_tokens)
        target = None
        if padding is not None:     # (the padding joins the frame, as for a pair left whole)
            target = _pad_target(padding, n_a + n_b + frame.size)
            if target > n_a + n_b + frame.size:
                frame = frame.padded(target - (n_a + n_b + frame.size), padding["direction"], padding["pad_id"],
                                     padding["pad_type_id"], padding["pad_token"])
        encoding = _pair_encoding_of(Encoding, a, b, frame, keep_a, keep_b)
        _defer_overflowing(encoding, make_parts)
        if target is not None:      # (padded already: this pads the parts, once made)
            encoding.pad(target, padding["direction"], padding["pad_id"], padding["pad_type_id"], padding["pad_token"])
        return encoding

    def _encode_text(self, text: str, type_id: int, word_index: int | None, split_special: bool) -> Encoding:
        excluded = self._split_exclusion() if split_special else None
        plan = self._current_plan() if excluded is None else None
        if plan is not None:
            rewind = self._generator_rewind()
            encoding = self._encode_with_plan(plan, text, type_id, word_index, split_special)
            if encoding is not None:
                return encoding
            if rewind is not None:
                rewind()
        with _collector_paused(len(text) >= _PAUSE_COLLECTOR_CHARS):
            pretok = self._added.extract_and_normalize(self._normalizer, text, split_special)
            if self.pre_tokenizer is not None:
                self.pre_tokenizer.pre_tokenize(pretok)
            model = self._model
            pretok.tokenize_chars(model.tokenize_chars if excluded is None
                                  else partial(model.tokenize_chars, excluded_ids=excluded))
            encoding = pretok.to_encoding(type_id, word_index)
            del pretok      # (freed before the collector runs again, which would walk it all once more)
        return encoding

    def _split_exclusion(self) -> frozenset | None:
        """The special tokens' ids, when the model could spell one from plain text; else None.

        With ``split_special_tokens`` special-token text is plain text, and
        no path may build a special id from it: a model that could (a BPE
        whose merges rebuild ``<|endoftext|>``, a Unigram holding ``<s>`` as
        a piece) is asked to leave those ids out. The models still give a
        char's own token (its only spelling). Models that cannot spell one
        are left alone, so Hugging Face parity holds for them.
        """
        model, added = self._model, self._added
        # (Adding tokens moves the epoch on, as any change of a component does.)
        key = (id(model), epoch(), getattr(model, "_generation", None))
        cached = self.__dict__.get("_exclusion")
        if cached is not None and cached[0] == key:
            return cached[1]
        ids = frozenset(added.by_content[tok.content] for tok in added.special if tok.content in added.by_content)
        result = None
        if ids and _takes_excluded_ids(model):
            check = getattr(model, "exclusion_matters", None)
            matters = check(ids) if check is not None else any(model.id_to_token(i) is not None for i in ids)
            result = ids if matters else None
        self.__dict__["_exclusion"] = (key, result, model)    # (keeps the model alive: its id is the key)
        return result

    # -- the fused fast path (pieceworks.fast) ---------------------------------
    def _raw_limit(self, add_special_tokens: bool, truncation: dict | None = None) -> int | None:
        """Most tokens a single text may have for truncation to leave it alone (None: no truncation).

        A text within it keeps every token and gets no overflowing part, so
        its raw encoding is already the truncated one; a longer text takes
        the long way, which truncates.
        """
        if truncation is None:
            truncation = self._truncation  # read once: another thread may change it meanwhile
        if truncation is None:
            return None
        n_added = self.num_special_tokens_to_add(False) if add_special_tokens else 0
        return _room_for_content(truncation["max_length"], n_added)

    def _raw_truncation(self, add_special_tokens: bool) -> tuple | None:
        """What truncation does to one text's raw encoding: None (nothing), or ``(max_length, stride, left, cut)``.

        ``cut``: a longer text is cut in C (:func:`raw_encoding.truncated`),
        which is :meth:`Encoding.truncate` exactly when the strategy cuts the
        one sequence to ``max_length`` (longest_first, only_first) and
        ``max_length`` is above 0; else the long way truncates it.
        """
        truncation = self._truncation  # read once: another thread may change it meanwhile
        if truncation is None:
            return None
        limit = self._raw_limit(add_special_tokens, truncation)
        if limit is None:
            return None
        cut = (limit > 0 and truncation["strategy"] in ("longest_first", "only_first")
               and 0 <= truncation["stride"] < limit)
        return (limit, truncation["stride"], truncation["direction"] == "left", cut)

    def _encode_raw(self, text: str, add_special_tokens: bool, split_special: bool,
                    limit: int | None = None) -> Encoding | None:
        """A lazy encoding of ``text`` from the plan's raw form, post-processed; None to take the long way.

        Only for what needs nothing but the kernel and a frame of special
        tokens: no added token in the text, a post-processor that just adds
        tokens, and at most ``limit`` tokens before the frame (see :meth:`_raw_limit`).
        """
        plan = self._current_plan()
        if plan is None or not plan.has_raw:
            return None
        added = self._added
        processor = self.post_processor
        frame = PLAIN_FRAME if processor is None else processor.single_frame(add_special_tokens)
        if frame is None:
            return None
        if added.by_content:
            encoding = self._encode_ids_around_added(plan, text, split_special, frame, limit)
            if encoding is not None:
                return encoding
            if self._matched_after_normalizing(plan, text) and not plan.normalizes_nothing(text):
                return self._encode_raw_around_added(plan, text, split_special, frame, limit)
            # A plan that encodes around the tokens in its kernel finds them as it goes (none found:
            # the text whole; Tokenizer.encode sends here the texts that hold one).
            rewind = self._generator_rewind()
            joined = self._encode_around_in_kernel(plan, [text], split_special, limit)
            if joined is not None and joined[0] is not None:    # (with its own tokens list, if it has one)
                return _encoding_of_result(joined[0], frame, None)
            if rewind is not None:      # (BPE-dropout: it may have drawn, then given up)
                rewind()
            # Where the tokens are, or that there are none: one read of the text (asking first whether
            # it holds one read it again up to the first).
            found = added.token_spans(text, split_special) if len(text) < _RAW_MAX_CHARS else None
            if found is None or found:
                return self._encode_raw_around_added(plan, text, split_special, frame, limit,
                                                     None if found is None else (text, found, None))
        result = plan.encode_raw(text)
        if result is None or limit is not None and result[1] > limit:
            return None
        return Encoding.from_raw(result[0], result[1], result[3], None, frame)

    def _matched_after_normalizing(self, plan, text: str) -> bool:
        """Whether added tokens matched in normalized text may hide in ``text``."""
        return self._normalizer is not None and self._added.has_normalized_tokens()

    def _encode_raw_around_added(self, plan, text: str, split_special: bool, frame,
                                 limit: int | None = None, layout: tuple | None = None) -> Encoding | None:
        """Added tokens found in ``text`` (:meth:`_added_layout`, unless ``layout`` is it already), the
        segments between them through the plan, joined raw; None to take the long way."""
        layout = layout or self._added_layout(plan, text, split_special)
        if layout is None:
            return None
        text, found, view = layout
        # The segments' offsets are worked out when first read, where the plan can defer them (not
        # through a view: its map moves them once, all made); else one batch call for them all.
        deferred = None if view is not None else getattr(plan, "encode_raw_deferred", None)
        if deferred is None:
            return self._encode_layouts(plan, [layout], frame, limit)[0]
        results = []
        for start, stop in _gaps(found, len(text)):
            result = deferred(text[start:stop])
            if result is None:
                return None
            results.append(result)
        return self._joined_around_added(plan, text, found, results, view, frame, limit)

    def _plain_texts(self, plan, chunk: list) -> tuple[list[str], list[int]]:
        """``(texts, where)``: the texts of ``chunk`` that hold no added token (nor, with a
        normalizer, one it may make), which the plan encodes as they are, and their indices."""
        added = self._added
        check_added = bool(added.by_content)
        normalized_added = self._normalizer is not None and added.has_normalized_tokens()
        asked = added.texts_to_ask(chunk) if check_added and not normalized_added and only_str(chunk) else None
        if not normalized_added and only_str(chunk) and not asked:
            return chunk, range(len(chunk))   # every text plain, found without a loop per text
        if asked is not None:     # the texts that hold no added token, found in C
            holding = set(asked)
            where = [k for k in range(len(chunk)) if k not in holding]
            return [chunk[k] for k in where], where
        plain, where = [], []
        for k, item in enumerate(chunk):
            if type(item) is str and not (check_added and (added.may_occur_in(item) or normalized_added
                                                           and not plan.normalizes_nothing(item))):
                plain.append(item)
                where.append(k)
        return plain, where

    def _encode_raw_around_added_batch(self, plan, texts: list[str], split_special: bool, frame,
                                       limit: int | None = None, try_kernel: bool = True) -> list:
        """:meth:`_encode_raw_around_added` of each text, the segments of all of them encoded by one
        ``plan.encode_raw_batch`` call (the GIL released once: lines that each end in an added
        token, Gemma's newline, or hold one, GPT-NeoX's indents). ``try_kernel`` False: the plan's
        ``encode_around_batch`` has had these texts already and left them."""
        normalized = self._normalizer is not None and self._added.has_normalized_tokens()
        if normalized or max(map(len, texts), default=0) >= _RAW_MAX_CHARS:
            layouts = [self._added_layout(plan, text, split_special) for text in texts]
        else:       # (tokens matched in each text as it is, so no view: found for all the texts at once)
            out: list = [None] * len(texts)
            where = range(len(texts))
            in_kernel = self._encode_around_in_kernel(plan, texts, split_special, limit) if try_kernel else None
            if in_kernel is not None:
                _fill_encodings(Encoding, out, where, in_kernel, frame, None)
                where = _none_positions(out)
                texts = [texts[k] for k in where]
            if texts:
                founds = self._added.token_spans_of(texts, split_special)
                _fill_encodings(Encoding, out, where, self._joined_layouts(plan, texts, founds, limit), frame, None)
            return out
        return self._encode_layouts(plan, layouts, frame, limit)

    def _encode_around_in_kernel(self, plan, texts: list[str], split_special: bool, limit: int | None) -> list | None:
        """The raw result of each text, or None: encoded around its added tokens in one kernel call
        (a plan's ``encode_around_batch``: finding the tokens, cutting and merging the stretches
        between them, joining, all in C); None for all when the plan has none."""
        encode = getattr(plan, "encode_around_batch", None)
        if encode is None:
            return None
        around = self._around_parts(plan, split_special) if self._added.by_content else (
            _NO_TOKENS, plan.token_strings())
        if around is None:
            return None
        return encode(texts, around[0], around[1], -1 if limit is None else limit)

    def _encode_layouts(self, plan, layouts: list, frame, limit: int | None) -> list:
        """The encoding of each :meth:`_added_layout` (None stays None), from :meth:`_layout_results`."""
        results = self._layout_results(plan, layouts, limit)
        keep = [k for k, result in enumerate(results) if result is not None]
        out: list = [None] * len(layouts)
        _fill_encodings(Encoding, out, keep, [results[k] for k in keep], frame, None)
        return out

    def _layout_results(self, plan, layouts: list, limit: int | None) -> list:
        """The raw result of each :meth:`_added_layout` (None stays None), the segments of all of
        them through one ``plan.encode_raw_batch`` call, joined in C (``raw_encoding.join_layouts``),
        offsets in a view's normalized text mapped back to the text's."""
        keep = [k for k, layout in enumerate(layouts) if layout is not None]
        joined = self._joined_layouts(plan, [layouts[k][0] for k in keep], [layouts[k][1] for k in keep], limit)
        out: list = [None] * len(layouts)
        for j, k in enumerate(keep):
            view, made = layouts[k][2], joined[j]
            if view is not None and made:
                made = (view.remap(made[0], made[1]),) + made[1:]
            out[k] = made
        return out

    def _joined_layouts(self, plan, texts: list[str], founds: list, limit: int | None) -> list:
        """The raw result (or None) of each text with its added tokens ``founds`` (in the text as it
        is), the segments between them through one ``plan.encode_raw_batch`` call."""
        segments, starts, counts = _raw_layout_segments(texts, founds)
        if not segments:
            results = []
        elif getattr(plan, "takes_position", False):    # (Metaspace's "first" prepends at 0 only)
            results = plan.encode_raw_batch(segments, starts)
        else:
            results = plan.encode_raw_batch(segments)
        # Tokens are spelled from one table: the plan's (the same for every segment), with the added
        # tokens it lacks if a text's are not in it.
        strings = next((result[3] for result in results if result is not None), None)
        if strings is None:     # (only added tokens, or no segment the plan took)
            empty = plan.encode_raw("")
            strings = None if empty is None else empty[3]
        joined = _raw_join_layouts(texts, founds, results, counts, strings, -1 if limit is None else limit)
        if False in joined:     # added tokens the plan's table lacks (no result is equal to False): a table with them
            again = [j for j, made in enumerate(joined) if made is False]
            extended = None if strings is None else self._strings_with_added(strings)
            moved = [None] * len(again) if extended is None else _raw_join_layouts(
                [texts[j] for j in again], [founds[j] for j in again], _results_of(results, counts, again),
                [counts[j] for j in again], extended, -1 if limit is None else limit)
            for j, made in zip(again, moved):
                joined[j] = made or None
        return joined

    def _added_layout(self, plan, text: str, split_special: bool) -> tuple | None:
        """``(text, found, view)``: the added tokens ``(start, stop, id)`` found in ``text``, or None.

        Tokens matched after normalization are matched in ``text`` itself,
        which is exact when the normalizer leaves the text unchanged (and
        so every part of it: NFC text stays NFC when cut); ``view`` is None.
        Otherwise the plan's ``aligned_view`` normalizes the gaps between
        the other tokens (:meth:`AddedVocabulary.token_spans_normalized`):
        ``text`` is then the view's normalized text, which the spans are
        in, and ``view.remap`` maps offsets in it back; without one, None.
        """
        if len(text) >= _RAW_MAX_CHARS:
            return None
        if self._matched_after_normalizing(plan, text) and not plan.normalizes_nothing(text):
            make_view = getattr(plan, "aligned_view", None)
            view = None if make_view is None else make_view(text)
            if view is None:
                return None
            found = self._added.token_spans_normalized(view, split_special)
            return view.text, found, view
        return text, self._added.token_spans(text, split_special), None

    def _joined_around_added(self, plan, text: str, found: list, results: list, view, frame,
                             limit: int | None) -> Encoding | None:
        """The raw encodings of ``text``'s segments (``results``: ``(raw, n, n_words, strings, spans,
        source)`` of each gap of ``found``, in order) and its added tokens, joined; None to take the long way."""
        # Tokens are spelled from one table: the plan's, with the added tokens it lacks.
        strings = results[-1][3] if results else None
        if strings is None:     # only added tokens: the plan's table all the same
            empty = plan.encode_raw("")
            if empty is None:
                return None
            strings = empty[3]
        if not all([_spells(strings, token_id, text[start:stop]) for start, stop, token_id in found]):
            strings = self._strings_with_added(strings)
            if strings is None or not all([_spells(strings, token_id, text[start:stop])
                                           for start, stop, token_id in found]):
                return None
        if any([result[4] is not None for result in results]):     # segments whose offsets wait to be read
            parts, word, at = [], 0, 0
            gaps = iter(results)
            for start, stop, token_id in found + [(len(text), len(text), -1)]:
                if at < start:
                    raw, n, n_words, _, spans, source = next(gaps)
                    parts.append((raw, n, at, word, spans, source))
                    word += n_words
                if token_id >= 0:
                    parts.append((_raw_pack([token_id], [0], [stop - start], [0]), 1, start, word, None, None))
                    word += 1
                at = stop
            raw, n, spans, source = _raw_join_lazily(parts)
        else:
            (raw, n), spans, source = _raw_join_around(found, results, len(text)), None, None
            if view is not None:
                raw = view.remap(raw, n)
        if limit is not None and n > limit:
            return None
        return Encoding.from_raw(raw, n, strings, None, frame, spans, source)

    def _strings_with_added(self, strings):
        """The plan's token table extended with the added tokens beyond it (made once); None if they clash."""
        key = (id(strings), epoch())    # (adding tokens moves the epoch on)
        cached = self.__dict__.get("_spelling")
        if cached is not None and (cached[0] == key or strings is cached[1] and cached[0][1] == key[1]):
            return cached[1]    # (asked of the table it made: that one, not another made from it)
        if type(strings) is list:
            top = max(self._added.by_content.values(), default=-1)
            table = list(strings) + [None] * max(0, top + 1 - len(strings))
        else:
            table = dict(strings)
        for token_id in self._added.by_content.values():
            # (As id_to_token spells it: a token matched after normalizing, as the normalizer makes
            # its content, which is what the text holds where it is found.)
            spelled = self._added.id_to_token(token_id, self._model)
            known = table[token_id] if type(table) is list else table.get(token_id)
            if known is None:
                table[token_id] = spelled
            elif known != spelled:
                table = None    # an added token shares an id with a different model token
                break
        self.__dict__["_spelling"] = (key, table, strings)     # (keeps ``strings`` alive: its id is the key)
        return table

    def _raw_batch_ready(self, plan, add_special_tokens: bool, split: bool, ids_only: bool = False):
        """The frame for a batch of single texts through ``plan.encode_raw_batch``, or None."""
        if plan is None or not plan.has_raw or split and self._split_exclusion() is not None:
            return None
        processor = self.post_processor
        return PLAIN_FRAME if processor is None else processor.single_frame(add_special_tokens, ids_only)

    def _ids_class(self) -> type | None:
        """The class of a batch's encodings made with their ids list built, or None: all lazy.

        Nearly every caller of a batch reads the ids, and an EncodingWithIds
        reads them from a slot at half the cost of a property; built in the
        batch, they are built on the threads that encode (the ranges path)
        or while they encode (a job). With padding, which pads unread
        encodings by their frames, they stay lazy.
        """
        return EncodingWithIds if self._padding is None else None

    def _encode_range_raw(self, items: list, start: int, stop: int, plan, frame, split: bool,
                          add_special_tokens: bool, ids_cls: type | None = None, done: list | None = None) -> list:
        """``items[start:stop]`` encoded: plain texts in one raw batch, anything else one by one.

        ``ids_cls``: see :meth:`_ids_class` (None for callers that read the raw ids alone).
        ``done``: the encodings of the range's items made already (None where not).
        """
        out: list = [None] * (stop - start) if done is None else list(done)   # (done are pairs: no str is)
        chunk = items[start:stop]
        truncation = self._raw_truncation(add_special_tokens)
        # A plan that encodes around added tokens in its kernel takes every text, holding one or not,
        # in one call (no Python step a text), cut as truncation says; those it leaves (None) go on below.
        in_kernel = self._encode_around_in_kernel(plan, chunk, split, None) if only_str(chunk) else None
        if in_kernel is not None:
            _fill_encodings(Encoding, out, range(len(chunk)), in_kernel, frame, truncation, ids_cls)
        else:
            plain, where = self._plain_texts(plan, chunk)
            _fill_encodings(Encoding, out, where, plan.encode_raw_batch(plain) if plain else [], frame, truncation,
                            ids_cls)
        limit = None if truncation is None else truncation[0]
        around = _none_positions(out)
        if not only_str(chunk):
            around = [k for k in around if type(chunk[k]) is str]
        if around:
            for k, encoding in zip(around, self._encode_raw_around_added_batch(
                    plan, [chunk[k] for k in around], split, frame, limit, in_kernel is None)):
                out[k] = encoding
        left = _none_positions(out)
        pairs = [k for k in left if _text_pair(chunk[k])]
        if pairs:
            # (Padded here only to a fixed length: the batch's longest is its caller's to find.)
            for k, encoding in zip(pairs, self._encode_pairs_raw([chunk[k] for k in pairs], add_special_tokens, split,
                                                                 self._fixed_padding())):
                out[k] = encoding
            left = _none_positions(out)
        for k in left:
            i = start + k
            first, second = _split_batch_item(items[i], False, i)
            enc = self._encode_sequence(first, 0, False, split, f"input[{i}]")
            pair = None if second is None else self._encode_sequence(second, 1, False, split, f"input[{i}]")
            out[k] = self.post_process(enc, pair, add_special_tokens)
        return out

    def _fixed_padding(self) -> dict | None:
        """The padding settings if they pad to a fixed length, else None (a batch's longest is found
        once the batch is made)."""
        padding = self._padding     # (read once: another thread may change it meanwhile)
        return None if padding is None or padding["length"] is None else padding

    def _single_text(self) -> SingleText:
        """encode's snapshot for one plain str at this epoch (see _kernels/single_text.pyx), built and kept.

        Unusable (every call goes the long way) unless the plan has a
        one-text kernel call. With added tokens matched after normalizing,
        only a plan that can send the texts its normalizer changes the long
        way (``one_text_unchanged``) gives one: the finder reads a text as
        it is. A text the batch finder says holds an added token goes the
        long way.
        """
        plan = self._current_plan()
        added = self._added
        one = None
        if plan is not None and plan.has_raw:
            if not self._matched_after_normalizing(plan, ""):
                one = plan.one_text()
            elif hasattr(plan, "one_text_unchanged"):
                # Tokens matched after normalizing are found in a text the normalizer leaves as it is
                # (and in the normalized form of one it changes, if the plan looks there).
                one = plan.one_text_unchanged(added.finder)
        if one is None:
            single = SingleText(epoch())
        else:
            processor = self.post_processor
            frames = ((PLAIN_FRAME, PLAIN_FRAME) if processor is None
                      else (processor.single_frame(True), processor.single_frame(False)))
            truncations = (self._raw_truncation(True), self._raw_truncation(False))
            single = SingleText(epoch(), one[0], one[1], Encoding, added.finder, frames, truncations,
                                bool(self.encode_special_tokens), self._split_exclusion() is not None,
                                self._padding is not None, self._single_around(plan),
                                (self._pair_frame(True), self._pair_frame(False)),
                                # (A Python encoder costs a word more than one kernel call for all of them.)
                                type(one[0]) in (FunctionType, MethodType))
        single.samples = getattr(plan, "samples", False)
        self.__dict__["_single"] = single
        return single

    def _generator_rewind(self) -> "Callable[[], None] | None":
        """Under BPE-dropout (a model with ``dropout``): a call that puts the model's generator back
        where it is now; else None. A way that draws and then gives up (a text too long for the
        truncation's room, a stretch the plan leaves) rewinds before the next way, which then
        draws what the general path draws: a seed gives its ids, each text drawn once. (A way
        that gave up before drawing leaves nothing to put back: the call changes nothing.)"""
        model = self._model
        if not getattr(model, "dropout", None):
            return None
        encoder = model._get_encoder()
        state = encoder.rng_state

        def rewind() -> None:
            encoder.rng_state = state
        return rewind

    def _single_around(self, plan):
        """For encode's snapshot: ``around(tokenizer, text, frame, truncation)``, the Encoding of a
        text holding added tokens encoded around them, as :meth:`_encode_raw` encodes it (cut as
        ``truncation`` says: ``raw_encoding.fill_encodings``; the snapshot pads it), or None for the
        long way; or the plan's kernel call that does it (see ``SingleText``); None when all such
        texts take the long way (tokens matched after normalizing, but by the byte-level plan,
        which takes the texts NFC keeps).

        A chat turn of Gemma 3 or Llama 3 (a few tokens and a line) took 4.5 us the long way,
        mostly layers of Python; the snapshot keeps what they work out. Nothing here refers to
        the tokenizer (it keeps the snapshot): the call is given it.
        """
        if plan is None or not self._added.by_content or self.encode_special_tokens:
            return None
        if self._matched_after_normalizing(plan, ""):
            # Only a plan that encodes around tokens in texts its normalizer leaves as they are (NFC:
            # then the tokens matched after normalizing are found in the text as it is).
            if not getattr(plan, "job_leaves_changed_texts", False):
                return None
        if hasattr(plan, "ids_around_now"):
            return self._single_ids_around(plan)
        if hasattr(plan, "encode_around_batch"):
            return self._single_kernel_around(plan)
        return None     # (every raw plan has one of the two)

    def _single_ids_around(self, plan):
        """:meth:`_single_around` for the byte-level kernel: the ids now, the rest when read, as
        :meth:`_encode_ids_around_added` makes them (not cut or padded: that would build the
        offsets at once, which is the long way's job)."""
        parts = self._around_parts(plan, False)
        encode_ids = plan.ids_around_now(_bound_nfc(self._added.by_content))
        if parts is None or encode_ids is None:
            return None
        tokens, table, passes = parts
        raw_around_found = Tokenizer._raw_around_found

        def around(tokenizer, text: str, frame, truncation) -> Encoding | None:
            ids = encode_ids(text, tokens) if (truncation is None and tokenizer._padding is None
                                               and len(text) < _RAW_MAX_CHARS) else None
            if ids is None:
                return None
            return _encoding_of_ids(ids, table, frame, CallbackSpans(partial(raw_around_found, tokenizer, plan, False,
                                                                             passes)), text)
        return around

    def _single_kernel_around(self, plan):
        """:meth:`_single_around` for a plan that encodes around the tokens in its kernel
        (``encode_around_batch``: SentencePiece BPE, word by word too, WordPiece, Metaspace BPE,
        Unigram): that call, as ``(encode_around_batch, tokens, strings)``."""
        parts = self._around_parts(plan, False)
        if parts is None:
            return None
        tokens, table, _ = parts
        now = getattr(plan, "around_batch_now", None)
        encode_batch = plan.encode_around_batch if now is None else now()
        # (As SingleText takes a kernel call: it makes the Encoding of ``[text]``'s result itself.)
        return None if encode_batch is None else (encode_batch, tokens, table)

    def _current_plan(self):
        """The fast plan for the current stages (rebuilt when a stage object is replaced)."""
        key = (type(self._model), id(self._model), id(self._normalizer), id(self.pre_tokenizer))
        cached = self.__dict__.get("_plan")
        if cached is None or cached[0] != key:
            from .fast import find_plan

            cached = (key, find_plan(self))
            self.__dict__["_plan"] = cached
        return cached[1]

    def _encode_with_plan(self, plan, text: str, type_id: int, word_index: int | None,
                          split_special: bool) -> Encoding | None:
        """Added tokens split off in Python, each plain segment through the plan; None to fall back."""
        if self._normalizer is not None and self._added.has_normalized_tokens() and not plan.normalizes_nothing(text):
            return None  # those are matched after normalization: the general path's job
        if not self._added.by_content or not self._added.may_occur_in(text):
            result = plan.encode_plain(text)
            if result is None:
                return None
            ids, tokens, offsets, words, _ = result
            if word_index is not None:
                words = [word_index] * len(ids)
            n = len(ids)
            return Encoding(ids, [type_id] * n, tokens, words, offsets, [0] * n, [1] * n, [], {})
        pretok = self._added.extract_and_normalize(None, text, split_special)
        positional = getattr(plan, "takes_position", False)    # (Metaspace's "first" prepends at 0 only)
        ids, tokens, offsets, words = [], [], [], []
        word = 0
        for split in pretok.splits:
            ns = split.normalized
            base = ns.original_shift
            if split.tokens is not None:
                for tok in split.tokens:
                    ids.append(tok.id)
                    tokens.append(tok.value)
                    offsets.append((base + tok.offsets[0], base + tok.offsets[1]))
                    words.append(word)
                word += 1
                continue
            result = plan.encode_plain(ns.normalized, base) if positional else plan.encode_plain(ns.normalized)
            if result is None:
                return None
            seg_ids, seg_tokens, seg_offsets, seg_words, n_words = result
            ids += seg_ids
            tokens += seg_tokens
            offsets += [(s + base, e + base) for s, e in seg_offsets] if base else seg_offsets
            words += [w + word for w in seg_words] if word else seg_words
            word += n_words
        if word_index is not None:
            words = [word_index] * len(ids)
        n = len(ids)
        return Encoding(ids, [type_id] * n, tokens, words, offsets, [0] * n, [1] * n, [], {})

    def post_process(self, encoding: Encoding, pair: Encoding | None = None,
                     add_special_tokens: bool = True) -> Encoding:
        """Truncate, add special tokens (post-processor); padding is not applied here."""
        params = self._content_truncation(pair is not None, add_special_tokens)
        if params is not None:
            encoding, pair = _truncate_pair(encoding, pair, params)
        return _processed(self.post_processor, encoding, pair, add_special_tokens)

    def _content_truncation(self, is_pair: bool, add_special_tokens: bool,
                            truncation: dict | None = None) -> dict | None:
        """The truncation settings (``truncation``, or the tokenizer's) for the sequences' own tokens:
        ``max_length`` less the special tokens the post-processor adds; None when nothing is cut
        (no truncation, or the special tokens alone do not fit)."""
        if truncation is None:
            truncation = self._truncation  # read once: another thread may change it meanwhile
        if truncation is None:
            return None
        params = dict(truncation)
        if add_special_tokens:
            params["max_length"] = _room_for_content(params["max_length"], self.num_special_tokens_to_add(is_pair))
        return params if params["max_length"] is not None else None

    def _pad(self, encodings: list[Encoding]) -> None:
        p = self._padding  # read once: another thread may change it meanwhile
        if p is None:
            return
        target = _pad_target(p, max((len(e) for e in encodings), default=0))
        for enc in _pad_never_read(encodings, target, p["direction"], p["pad_id"], p["pad_type_id"], p["pad_token"]):
            enc.pad(target, p["direction"], p["pad_id"], p["pad_type_id"], p["pad_token"])

    # -- decoding ----------------------------------------------------------
    def decode(self, ids: list[int], skip_special_tokens: bool = True, errors: str = "replace") -> str:
        """Text of ``ids``; an id outside the vocabulary raises UnknownIdError.

        Ids whose bytes are not valid UTF-8 (a byte-level or ``<0xNN>``
        token cut off mid-character) give U+FFFD, or raise DecodeError with
        ``errors="strict"``.
        """
        if errors != "replace":
            check_utf8_errors(errors)
        made = id_bytes_of(self)      # (self._id_bytes(), with no Python call while it holds)
        if made is not None:
            if errors == "replace":
                text = made[0].text(ids, skip_special_tokens)
            else:
                data = made[0].join(ids, skip_special_tokens, True)
                text = None if data is None else ByteLevel.text_of(data, True)
            if text is not None:
                return text if made[1] is None else strip_text(text, *made[1])
        tokens = []
        for i, tid in enumerate(_as_list(ids, "ids")):
            if isinstance(tid, bool) or not isinstance(tid, int):
                raise InputTypeError(f"ids[{i}] is {tid!r}, not an int", fix="pass a list of integer token ids")
            if not 0 <= tid <= _MAX_ID:
                raise OutOfRangeError(f"ids[{i}] = {tid}: token ids are 0 to 2**32 - 1",
                                      fix="pass ids this tokenizer produced")
            token = self._added.id_to_token(tid, self._model)
            if token is None:
                raise UnknownIdError(f"ids[{i}] = {tid} is not in the vocabulary (size "
                                     f"{self.get_vocab_size()})", fix="pass ids this tokenizer produced")
            if skip_special_tokens and self._added.is_special(token):
                continue
            tokens.append(token)
        if self.decoder is None:
            return " ".join(tokens)
        return self.decoder.decode(tokens, errors=errors)

    def _id_bytes(self) -> tuple | None:
        """decode's way for the two decoders most files have: ``(table, strip)``, the bytes of each
        id's token as the decoder makes them (``_kernels/id_bytes.IdBytes``, filled as ids are met),
        and a final Strip's ``(content, start, stop)`` for the text they make (``strip_text``; None:
        no Strip); kept per component epoch.
        None for any other decoder. Ids it cannot take (unknown, not ints) go the long way, which
        says what is wrong. (Kept as a ``Remembered`` by :meth:`_make_id_bytes`, and given while it
        holds.)

        - Hugging Face's ByteLevel alone (GPT-2, Llama 3, Qwen): each token's bytes.
        - SentencePiece's chain, ``Replace(str, str)``, ``ByteFallback``, ``Fuse`` and an optional
          ``Strip`` (Llama 2, Mistral, Gemma): each token replaced, ``<0xAB>`` tokens as bytes,
          then the Strip of the one fused text.
        - Metaspace (T5, BARThez) and WordPiece (BERT): each token's chunk depends on it alone and
          on whether it comes first; both are spelled by the decoder itself, once.
        """
        return id_bytes_of(self)

    def _make_id_bytes(self) -> tuple | None:
        """:meth:`_id_bytes` made for the decoder as it is now, and kept."""
        decoder = self.decoder
        members = decoder.decoders if type(decoder) is DecoderSequence else None
        chain = _fallback_chain(decoder)
        made = None
        if type(decoder) is ByteLevel:
            made = self._id_table(lambda token: (token_bytes(token),)), None
        elif chain is not None:
            old, new, strip = chain

            def spell(token: str) -> tuple[bytes, int]:
                piece = token.replace(old, new)
                byte = fallback_byte(piece)
                return piece.encode("utf-8"), -1 if byte is None else byte
            made = self._id_table(spell, fallback=True), strip
        elif type(decoder) in (Metaspace, WordPiece):
            chain_of = decoder.decode_chain     # (as the second token, and as the first)
            made = self._id_table(lambda token: (chain_of([token, token])[1].encode("utf-8"),
                                                 chain_of([token])[0].encode("utf-8")), first=True), None
        # (A Sequence's list edited in place moves no epoch: its members are checked too.)
        self.__dict__["_id_bytes_for"] = Remembered(_EPOCH, members, made)
        return made

    def _id_table(self, spell, **mode) -> IdBytes:
        """An IdBytes of this vocabulary (``mode``: its ``fallback`` or ``first``), each id's entry
        ``spell(token)`` with the token's special flag put second; None (the long way) for an id
        with no token, or one ``spell`` cannot encode (a lone surrogate)."""
        added, model = self._added, self._model

        def fill(tid: int) -> tuple | None:
            token = added.id_to_token(tid, model)
            if token is None:
                return None
            try:
                data, *rest = spell(token)
            except UnicodeEncodeError:
                return None
            return (data, added.is_special(token), *rest)
        return IdBytes(max(model.get_vocab_size(), max(added.by_id, default=-1) + 1), fill, **mode)

    def decode_batch(self, sequences: list[list[int]], skip_special_tokens: bool = True,
                     errors: str = "replace") -> list[str]:
        return [self.decode(ids, skip_special_tokens, errors) for ids in _as_list(sequences, "sequences")]

    async def async_decode_batch(self, sequences: list[list[int]], skip_special_tokens: bool = True,
                                 errors: str = "replace") -> list[str]:
        """``await``-able :meth:`decode_batch`, run on a worker thread."""
        return await _on_thread(self.decode_batch, sequences, skip_special_tokens, errors)

    # -- training ----------------------------------------------------------
    def train(self, files: list[str], trainer=None) -> None:
        """Train the model on text files (read line by line, UTF-8), with a progress bar.

        Counting runs on every core, within ``trainer.memory_limit`` if set
        (see :mod:`pieceworks.trainers.counts`); then the trainer learns from
        the counts, exactly as :meth:`train_from_counts` would.
        """
        from .trainers.counts import count_files

        paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        trainer = trainer if trainer is not None else self._model.get_trainer()
        _check_trainer(trainer, self._model)
        # As Hugging Face: every file is text, one text per line, and a line
        # that is not UTF-8 is an error.
        counts = count_files(paths, self._normalizer, self.pre_tokenizer, format="text", errors="strict",
                             memory_limit=getattr(trainer, "memory_limit", None), progress=trainer.progress_setting(),
                             added=self._added, split_special=bool(self.encode_special_tokens))
        self.train_from_counts(counts, trainer)

    def train_from_iterator(self, iterator: Iterable, trainer=None, length: int | None = None) -> None:
        """Train the model on texts (str, or lists of str) from ``iterator``.

        ``length`` (the number of items, if known) sizes the progress bar.
        """
        from .progress import progress_bar

        trainer = trainer if trainer is not None else self._model.get_trainer()
        _check_trainer(trainer, self._model)
        with progress_bar(length, "Reading texts", unit="texts", enabled=trainer.progress_setting()) as bar:
            self._count_and_train(_flatten_texts(iterator, bar.update), trainer)

    def _count_and_train(self, texts: Iterable[str], trainer) -> None:
        from .trainers.counts import count_texts

        # As Hugging Face: tokens added before training are split out of the texts, each one piece.
        counts = count_texts(texts, self._normalizer, self.pre_tokenizer,
                             memory_limit=getattr(trainer, "memory_limit", None), added=self._added,
                             split_special=bool(self.encode_special_tokens))
        self.train_from_counts(counts, trainer)

    def train_from_counts(self, counts, trainer=None) -> None:
        """Train the model from counts made elsewhere.

        ``counts``: a ``{piece: count}`` mapping, a
        :class:`~pieceworks.trainers.counts.Counts`, or the path of a counts
        file (``Counts.save``, ``pieceworks count``). The pieces must come
        from this tokenizer's normalizer and pre-tokenizer.
        """
        trainer = trainer if trainer is not None else self._model.get_trainer()
        _check_trainer(trainer, self._model)
        if isinstance(counts, (str, os.PathLike)):
            from .trainers.counts import Counts

            counts = Counts.load(counts)
        special = trainer.train(self._model, counts)
        self.add_special_tokens(special)
        self._added.refresh(self._model, self._normalizer)

    # -- files ---------------------------------------------------------------
    def to_str(self, pretty: bool = False) -> str:
        """This tokenizer as tokenizer.json text."""
        from .formats.hf_json import tokenizer_to_str

        return tokenizer_to_str(self, pretty)

    def save(self, path: str, pretty: bool = True) -> None:
        """Write tokenizer.json to ``path`` (atomically: temp file, fsync, rename)."""
        from .fileio import atomic_write_text

        atomic_write_text(path, self.to_str(pretty))

    @staticmethod
    def from_str(json: str) -> "Tokenizer":
        from .formats.hf_json import tokenizer_from_str

        return tokenizer_from_str(json)

    @staticmethod
    def from_file(path: str) -> "Tokenizer":
        from .formats.hf_json import tokenizer_from_file

        return tokenizer_from_file(path)

    @staticmethod
    def from_buffer(buffer: bytes) -> "Tokenizer":
        from .formats.hf_json import tokenizer_from_bytes

        return tokenizer_from_bytes(bytes(buffer))

    @staticmethod
    def from_pretrained(identifier: str, revision: str = "main", token: str | None = None) -> "Tokenizer":
        """The tokenizer.json of a Hugging Face Hub repository, fetched (and cached) by ``huggingface_hub``.

        ``huggingface_hub`` is not a dependency of pieceworks: install it to
        fetch from the Hub. A local folder holding a tokenizer.json needs no
        download (Hugging Face's takes Hub names only).
        """
        folder_file = os.path.join(identifier, "tokenizer.json")
        if os.path.isdir(identifier) and os.path.isfile(folder_file):
            return Tokenizer.from_file(folder_file)
        try:
            from huggingface_hub import hf_hub_download
        except ImportError:
            raise ConfigError(f"from_pretrained({identifier!r}) fetches from the Hugging Face Hub with "
                              f"huggingface_hub, which is not installed",
                              fix="pip install huggingface_hub, or download the repository's tokenizer.json "
                                  "and use Tokenizer.from_file(path)") from None
        return Tokenizer.from_file(hf_hub_download(repo_id=identifier, filename="tokenizer.json", revision=revision,
                                                   token=token))

    def __getstate__(self) -> bytes:
        """The tokenizer.json as compact JSON bytes, as Hugging Face gives it (and pickles it)."""
        return self.to_str().encode("utf-8")

    def __setstate__(self, state):
        if isinstance(state, (bytes, bytearray)):
            state = bytes(state).decode("utf-8")
        self.__dict__.update(Tokenizer.from_str(state).__dict__)

    def __repr__(self) -> str:
        return (f"Tokenizer(model={self._model!r}, normalizer={self._normalizer!r}, "
                f"pre_tokenizer={self.pre_tokenizer!r}, post_processor={self.post_processor!r}, "
                f"decoder={self.decoder!r}, added_tokens={len(self._added)})")


# -- helpers ---------------------------------------------------------------
def _room_for_content(max_length: int, n_added: int) -> int | None:
    """What ``max_length`` leaves for the text's own tokens beside ``n_added`` special tokens, or None
    when they do not fit: then nothing is cut, as in Hugging Face (its unsigned subtraction wraps round).

    >>> _room_for_content(5, 2), _room_for_content(2, 2), _room_for_content(1, 2)
    (3, 0, None)
    """
    return None if n_added > max_length else max_length - n_added


def _truncate_pair(encoding: Encoding, pair: Encoding | None, params: dict):
    """Cut ``encoding`` and ``pair`` in place to :func:`_pair_cut_lengths`' (``truncate`` leaves one
    that fits as it is)."""
    n_first, n_second = _pair_cut_lengths(len(encoding), None if pair is None else len(pair), params)
    encoding.truncate(n_first, params["stride"], params["direction"])
    if pair is not None:
        pair.truncate(n_second, params["stride"], params["direction"])
    return encoding, pair


def _pair_cut_lengths(n_first: int, n_second: int | None, params: dict) -> tuple[int, int | None]:
    """How many tokens each of a first sequence of ``n_first`` and a second of ``n_second`` (None: no
    pair) keeps under ``params`` (truncation settings for the sequences' own tokens), as in
    Hugging Face: ``longest_first`` takes from the longer until they are equal, then from both.

    >>> rules = {"max_length": 10, "strategy": "longest_first"}
    >>> _pair_cut_lengths(3, 20, rules), _pair_cut_lengths(20, 20, rules), _pair_cut_lengths(30, None, rules)
    ((3, 7), (5, 5), (10, None))
    """
    max_length = params["max_length"]
    if max_length == 0:
        return 0, None if n_second is None else 0
    total = n_first + (n_second or 0)
    if total <= max_length:
        return n_first, n_second
    to_remove = total - max_length
    strategy = params["strategy"]
    if strategy == "longest_first":
        if n_second is None:
            return max_length, None
        n1, n2 = n_first, n_second
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        return (n2, n1) if swap else (n1, n2)
    if strategy == "only_second" and n_second is None:
        raise ConfigError("truncation strategy 'only_second' needs a pair of sequences",
                          fix="pass a pair, or use strategy='longest_first' or 'only_first'")
    target = n_first if strategy == "only_first" else n_second
    if target <= to_remove:
        raise ConfigError(
            f"cannot truncate with strategy {strategy!r}: that sequence has {target} tokens but "
            f"{to_remove} must go", fix="use strategy='longest_first' or raise max_length")
    if strategy == "only_first":
        return n_first - to_remove, n_second
    return n_first, n_second - to_remove


def _normalized_among(plan, texts: list[str]) -> list[int]:
    """The positions of the ``texts`` ``plan``'s normalizer may change (its ``normalized_among``
    where it has one: one pass for all)."""
    among = getattr(plan, "normalized_among", None)
    if among is not None:
        return among(texts)
    return [k for k, text in enumerate(texts) if not plan.normalizes_nothing(text)]


def _processed(processor, encoding: Encoding, pair: Encoding | None, add_special_tokens: bool) -> Encoding:
    """``processor`` (None: none) run on sequences already truncated (:meth:`Tokenizer.post_process`'s last step)."""
    if processor is not None:
        return processor.process(encoding, pair, add_special_tokens)
    if pair is None:
        return encoding
    encoding.set_sequence_id(0)
    pair.set_sequence_id(1)
    return Encoding.merge([encoding, pair], growing_offsets=False)


def _cut_pair_parts(a: tuple, b: tuple, frame: PairFrame, part_types: tuple[int, int], params: dict, n_a: int,
                    n_b: int, pads: list) -> list[Encoding]:
    """The overflowing parts of the pair of raw results ``a`` and ``b`` cut to ``n_a`` and ``n_b``
    tokens, each built in C with ``frame`` (for a processor that treats each part as its
    sequence: ``PostProcessor.part_types``, the types of a part's own tokens), padded by each of
    ``pads`` in turn (``Encoding.pad``'s arguments), in Hugging Face's order: each window of
    the first with the second kept (itself holding that window with each of the second's), then
    with each of the second's; then the first kept with each window of the second (itself
    holding each of the first's windows with that one)."""
    kept_a, *over_a = truncation_windows(a[1], n_a, params["stride"], params["direction"])
    kept_b, *over_b = truncation_windows(b[1], n_b, params["stride"], params["direction"])
    typed = {}      # (kept or not, kept or not): the frame

    def part(window_a, window_b, nested=None):
        key = (window_a is kept_a, window_b is kept_b)
        own = typed.get(key)
        if own is None:
            own = typed[key] = frame.with_types(frame.type_a if key[0] else part_types[0],
                                                frame.type_b if key[1] else part_types[1])
        size = window_a[1] - window_a[0] + window_b[1] - window_b[0] + frame.size
        for length, direction, pad_id, pad_type_id, pad_token in pads:    # (as pad() would, each in turn)
            if length > size:
                own = own.padded(length - size, direction, pad_id, pad_type_id, pad_token)
                size = length
        made = _pair_encoding_of(Encoding, a, b, own, window_a, window_b)
        if nested:
            made.overflowing = nested
        return made

    parts = []
    for window_a in over_a:
        parts.append(part(window_a, kept_b, [part(window_a, window_b) for window_b in over_b]))
        parts.extend(part(window_a, window_b) for window_b in over_b)
    for window_b in over_b:
        parts.append(part(kept_a, window_b, [part(window_a, window_b) for window_a in over_a]))
    return parts


def _cut_pair_overflowing(processor, a: tuple, b: tuple, params: dict, add_special_tokens: bool,
                          pads: list) -> list[Encoding]:
    """The overflowing parts of the pair of raw results ``a`` and ``b`` cut by ``params``, as
    :meth:`Tokenizer.post_process` makes them (see :meth:`Tokenizer._cut_pair`), padded by each
    of ``pads`` in turn."""
    first, second = _truncate_pair(_encoding_of_result(a, PLAIN_FRAME, None),
                                   _encoding_of_result(b, _type_frame(1), None), params)
    parts = _processed(processor, first, second, add_special_tokens).overflowing
    for how in pads:
        for part in parts:
            part.pad(*how)
    return parts


def _check_str(value, name: str) -> str:
    if not isinstance(value, str):
        raise InputTypeError(f"{name} must be a str, got {type(value).__name__}",
                             fix="decode bytes first (e.g. data.decode('utf-8')) or pass text")
    return value


def _check_count(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name} must be a non-negative integer, got {value!r}")


def _takes_excluded_ids(model) -> bool:
    """Whether ``model.tokenize_chars`` accepts ``excluded_ids`` (BPE and Unigram do)."""
    import inspect

    try:
        return "excluded_ids" in inspect.signature(model.tokenize_chars).parameters
    except (TypeError, ValueError):
        return False


# Raw encodings hold int32 offsets.
_RAW_MAX_CHARS = 2**31 - 1


def _fallback_chain(decoder) -> tuple | None:
    """``(old, new, strip)`` if ``decoder`` is exactly ``Sequence([Replace(old, new), ByteFallback(),
    Fuse()])``, perhaps with a ``Strip`` after (``strip``: its ``(content, start, stop)``; else None), with
    ``old`` a non-empty str: SentencePiece's decoding as tokenizer.json files spell it. Else None.

    >>> from pieceworks.decoders import Sequence as Chain, Replace, ByteFallback, Fuse, Strip
    >>> _fallback_chain(Chain([Replace("▁", " "), ByteFallback(), Fuse()]))
    ('▁', ' ', None)
    >>> _fallback_chain(Chain([Replace("▁", " "), Fuse(), ByteFallback()])) is None
    True
    """
    if type(decoder) is not DecoderSequence:
        return None
    members = list(decoder.decoders)
    strip = None
    if len(members) == 4 and type(members[3]) is Strip:
        last = members.pop()
        strip = last.content, last.start, last.stop
    if len(members) != 3 or [type(m) for m in members] != [Replace, ByteFallback, Fuse]:
        return None
    replace = members[0]
    if type(replace.pattern) is not str or not replace.pattern or type(replace.content) is not str:
        return None
    return replace.pattern, replace.content, strip


def _encoding_of_ids(ids: list, strings, frame, spans_from, text: str) -> Encoding:
    """A lazy Encoding of ``text``'s token ids (a new list, framed here in place: a new list would
    take a reference to each id again), its offsets worked out by ``spans_from`` when first read."""
    n = len(ids)
    if frame.ids_before:
        ids[0:0] = frame.ids_before
    if frame.ids_after:
        ids += frame.ids_after
    return _make_with_ids(Encoding, ids, n, strings, frame, spans_from, text, 0)


def _encoding_of_result(result, frame, truncation: tuple | None) -> Encoding | None:
    """The lazy Encoding of one raw result in ``raw_encoding.fill_encodings``' form (its tokens list
    too, if it has one), framed and cut as ``truncation`` says; None for None, or a result that
    may not be cut so."""
    out = [None]
    _fill_encodings(Encoding, out, (0,), [result], frame, truncation)
    return out[0]

# The general pipeline pauses the cyclic collector for texts this long (see pieceworks._collector).
_PAUSE_COLLECTOR_CHARS = 4096


#: No added token: a text is one stretch (``_encode_around_in_kernel`` with none added).
_NO_TOKENS = AroundTokens(TokenTrie([]), [])


@lru_cache(maxsize=8)
def _type_frame(type_id: int) -> Frame:
    """No special tokens, every token of type ``type_id`` (a pair's second sequence, before post-processing)."""
    return Frame((), type_id, (), False)


def _pair_encoding(a: tuple, b: tuple, frame: PairFrame, truncation: dict | None,
                   padding: dict | None = None) -> Encoding | None:
    """The Encoding of two raw results (``fill_encodings``' form) between ``frame``'s special tokens,
    every list built, padded as ``padding`` says for one encoding alone; None when ``truncation``
    would cut it (Hugging Face's pair rules run in :func:`_truncate_pair`)."""
    n_a, n_b = a[1], b[1]
    if truncation is not None and n_a + n_b + frame.size > truncation["max_length"]:
        return None
    if padding is not None:     # (the padding joins the frame: no list is made twice)
        missing = _pad_target(padding, n_a + n_b + frame.size) - (n_a + n_b + frame.size)
        if missing > 0:
            frame = frame.padded(missing, padding["direction"], padding["pad_id"], padding["pad_type_id"],
                                 padding["pad_token"])
    return _pair_encoding_of(Encoding, a, b, frame)


#: A raw result's token table.
_STRINGS_OF = itemgetter(3)


def _pad_target(padding: dict, longest: int) -> int:
    """The length ``padding`` (the tokenizer's settings) pads to, given the longest encoding's.

    >>> _pad_target({"length": None, "pad_to_multiple_of": 8}, 13), _pad_target({"length": 16, "pad_to_multiple_of": None}, 3)
    (16, 16)
    """
    target = padding["length"] if padding["length"] is not None else longest
    multiple = padding["pad_to_multiple_of"]
    if multiple and target % multiple:
        target += multiple - target % multiple
    return target


def _words_list(sequence) -> bool:
    """Whether ``sequence`` is a list or tuple of strs (a pre-tokenized input as it should be)."""
    return (type(sequence) is list or type(sequence) is tuple) and only_str(list(sequence))


def _bound_nfc(contents) -> bool:
    """Whether each of ``contents`` (added tokens' strings) is NFC and begins and ends with a
    starter (combining class 0): then NFC reorders no mark across a token's edge.

    >>> _bound_nfc(["<s>", "\u00e9"]), _bound_nfc(["e\u0301"]), _bound_nfc(["\u0301x"])
    (True, False, False)
    """
    return all(not changes_text("NFC", content) and not _combining(content[0]) and not _combining(content[-1])
               for content in contents)


def _around_tokens(passes: tuple) -> AroundTokens:
    """The kernel's form of :meth:`AddedVocabulary.exact_matcher`'s passes (the second one inner)."""
    around = None
    for trie, ids in reversed(passes):
        around = AroundTokens(trie, ids, around)
    return around


def _gaps(found: list, length: int):
    """``(start, stop)`` of each non-empty stretch of ``[0, length)`` between the spans ``found``.

    >>> list(_gaps([(2, 4, 7), (4, 5, 8)], 8))
    [(0, 2), (5, 8)]
    """
    at = 0
    for start, stop, _ in found:
        if at < start:
            yield at, start
        at = stop
    if at < length:
        yield at, length


def _results_of(results: list, counts: list[int], picks: list[int]) -> list:
    """The results of the texts ``picks``, in a row, from ``results`` (``counts[k]`` of them text ``k``'s, in a row).

    >>> _results_of(["a", "b", "c", "d"], [1, 0, 3], [0, 2])
    ['a', 'b', 'c', 'd']
    """
    starts = list(accumulate(counts, initial=0))
    return [result for k in picks for result in results[starts[k]:starts[k] + counts[k]]]


def _spells(strings, token_id: int, value: str) -> bool:
    """Whether ``strings[token_id]`` (a list or a dict of the plan's tokens) is ``value``."""
    if type(strings) is list:
        return 0 <= token_id < len(strings) and strings[token_id] == value
    return strings.get(token_id) == value


async def _on_thread(fn, *args):
    """``fn(*args)`` on the event loop's worker threads (asyncio is imported only here: it is slow to import)."""
    import asyncio

    return await asyncio.to_thread(fn, *args)


def _as_list(value, name: str) -> list:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InputTypeError(f"{name} must be a list, got {type(value).__name__}",
                             fix=f"wrap a single value in a list: [{name}]")
    # A snapshot, out of the collector's sight: every collection the new encodings and lists
    # of a batch trigger would walk a young list of all its inputs (it is a fresh copy: no
    # cycle can run through it).
    out = list(value)
    _untrack(out)
    return out


def _split_batch_item(item, is_pretokenized: bool, i: int):
    if not is_pretokenized:
        if isinstance(item, str):
            return item, None
        if isinstance(item, (list, tuple)) and len(item) == 2:
            return item[0], item[1]
        raise InputTypeError(f"input[{i}] must be a str or a (str, str) pair, got {type(item).__name__}")
    if isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, (list, tuple)) for x in item):
        return item[0], item[1]
    return item, None


def _flatten_texts(iterator, on_item=None) -> Iterator[str]:
    for item in iterator:
        if on_item is not None:
            on_item(1)
        if isinstance(item, str):
            yield item
        elif isinstance(item, (list, tuple)):
            for sub in item:
                yield _check_str(sub, "training text")
        else:
            _check_str(item, "training text")


def _check_trainer(trainer, model) -> None:
    from .trainers import ParityBpeTrainer, Trainer

    if isinstance(trainer, ParityBpeTrainer):
        raise ConfigError("ParityBpeTrainer takes one corpus per language, so it trains through its own call",
                          fix="call trainer.train_from_iterator(tokenizer, [texts of language 1, ...])")
    if not isinstance(trainer, Trainer):
        raise InputTypeError(f"expected a pieceworks trainer, got {type(trainer).__name__}",
                             fix="pass e.g. pieceworks.trainers.BpeTrainer(...)")
    expected = trainer.model_type
    if expected is not None and not isinstance(model, expected):
        raise ConfigError(f"{type(trainer).__name__} trains {expected.__name__} models, but this tokenizer's "
                          f"model is {type(model).__name__}",
                          fix=f"use Tokenizer({expected.__name__}(...)) or the trainer of "
                              f"{type(model).__name__}")
