# cython: language_level=3, boundscheck=True, wraparound=True, cdivision=False, annotation_typing=False
"""The Encoding type: a Cython extension type, so the million encodings a batch makes are cheap.

This is :class:`pieceworks.Encoding` (see :mod:`pieceworks.encoding`): the
lists of one encoded input, and Hugging Face ``tokenizers.Encoding``'s
methods. Its code is plain Python compiled as an extension type: a Python
class would make each encoding a garbage-collected heap-type instance,
which cost a batch of short lines a sixth of its time against the tiktoken
face on the same ranks (the lists and their builders are
:class:`~pieceworks._kernels.raw_encoding.EncodingBase`'s).

>>> e = Encoding.from_tokens([(5, "hi", (0, 2)), (7, "there", (3, 8))], type_id=0)
>>> e.ids, e.attention_mask, e.char_to_token(4)
([5, 7], [1, 1], 1)
"""

cimport cython
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from array import array

from pieceworks._kernels.raw_encoding cimport (Basis, EncodingBase, Lists, _lists_of, make_raw, never_read,
                                              overflowing_parts)

from pieceworks._kernels.id_list cimport PyErr_Clear, PyErr_Occurred, PyLong_CheckExact, _as_ssize
from pieceworks._kernels import raw_encoding as _raw
from pieceworks.errors import ConfigError, OutOfRangeError
from pieceworks.frame import PLAIN_FRAME

# The attributes, in Encoding.__init__'s order.
_FIELDS = ("ids", "type_ids", "tokens", "words", "offsets", "special_tokens_mask", "attention_mask",
           "overflowing", "_sequence_ranges")


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _first_span_holding(list offsets, Py_ssize_t pos, Py_ssize_t start, Py_ssize_t stop):
    """The first ``i`` in ``[start, stop)`` whose ``offsets[i]`` span holds ``pos``; -1 if none; -2 if
    some span is not a pair of ints this loop reads (the caller's Python loop then decides).
    (The loop in Python cost 15 µs a call on 1300 tokens, 60 times Hugging Face's.)"""
    cdef Py_ssize_t i, begin, end
    cdef object span
    for i in range(start, stop):
        span = offsets[i]
        if type(span) is not tuple or len(<tuple>span) != 2:
            return -2
        begin = _small_int((<tuple>span)[0])
        end = _small_int((<tuple>span)[1])
        if begin == -2 or end == -2:
            return -2
        if begin <= pos < end:
            return i
    return -1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef object _word_span(list words, Py_ssize_t word, Py_ssize_t start, Py_ssize_t stop):
    """``(first, last + 1)`` of the tokens of ``word`` in ``words[start:stop]`` (words in order, None for
    special tokens), None if it has none, False if some item is not an int this loop reads."""
    cdef Py_ssize_t i, w, first = -1, last = -1
    cdef object item
    for i in range(start, stop):
        item = words[i]
        if item is None:
            continue
        w = _small_int(item)
        if w == -2:
            return False
        if w > word:
            break
        if w == word:
            if first < 0:
                first = i
            last = i + 1
    return None if first < 0 else (first, last)


cdef inline Py_ssize_t _small_int(object value) noexcept:
    """``value`` as a Py_ssize_t if it is an exact int from -1 up that fits, else -2."""
    cdef Py_ssize_t out
    if not PyLong_CheckExact(<PyObject*>value):
        return -2
    out = _as_ssize(<PyObject*>value)
    if out == -1 and PyErr_Occurred():
        PyErr_Clear()
        return -2
    return out if out >= -1 else -2


cdef inline int _not_negative(str method, object index, object other=0) except -1:
    """Hugging Face reads positions as unsigned ints: a negative one is an OverflowError there, not
    a look-up from the end (which ``None`` would silently pretend to answer). (A C function: the
    look-ups are called per token, and a Python call with ``*indices`` was a third of one.)"""
    if index < 0 or other < 0:
        bad = index if index < 0 else other
        raise OutOfRangeError(f"Encoding.{method}: positions start at 0, got {bad}",
                              fix="pass a position counted from the start (len(encoding) - 1 is the last token)")
    return 0


cdef extern from *:
    """
    #include <structmember.h>
    /* EncodingWithIds.ids: a member descriptor over EncodingBase's _ids field, which lives as
       long as the type (static). */
    static PyMemberDef pw_ids_member[2] = {{"ids", T_OBJECT_EX, 0, 0, "The token ids."}, {NULL}};

    static int pw_add_ids_member(PyTypeObject* type, Py_ssize_t offset) {
        PyObject* descr;
        pw_ids_member[0].offset = offset;
        descr = PyDescr_NewMember(type, &pw_ids_member[0]);
        if (descr == NULL)
            return -1;
        if (PyDict_SetItemString(type->tp_dict, "ids", descr) < 0) {
            Py_DECREF(descr);
            return -1;
        }
        Py_DECREF(descr);
        PyType_Modified(type);
        return 0;
    }
    """
    int pw_add_ids_member(PyTypeObject* type, Py_ssize_t offset) except -1


@cython.no_gc
cdef class Encoding(EncodingBase):
    """Ids, tokens, offsets and masks of one encoded input; see the module docstring.

    The fast paths make *lazy* encodings (:meth:`from_raw`): the kernel's
    ids, offsets and words stay in one raw buffer, and each list is built
    the first time it is read (Hugging Face builds them on every read).
    Byte-level BPE's encoding of one text holds the ids and the text, and
    works the offsets and words out when first read; one from
    ``encode_batch`` holds its ids list and shares its batch chunk's ids
    (4 bytes a token of the chunk, some 30 000 chars of text) until it
    first builds its tokens, offsets or words.
    Unlike Hugging Face's, an encoding is not tracked by the cyclic garbage
    collector, and neither are the ids, tokens, offsets, words and
    attention_mask lists it builds: do not put an encoding, or a container
    that refers back to it or to one of its lists, inside its lists (such a
    cycle would not be collected).
    """

    def __init__(self, ids=None, type_ids=None, tokens=None, words=None, offsets=None,
                 special_tokens_mask=None, attention_mask=None, overflowing=None,
                 sequence_ranges=None):
        cdef Lists lists = Lists.__new__(Lists)
        self._basis = None
        self._data = None
        self._no_raw = False
        self._n = 0
        self._ids = ids if ids is not None else []
        n = len(self._ids)
        lists.type_ids = type_ids if type_ids is not None else [0] * n
        lists.tokens = tokens if tokens is not None else []
        lists.words = words if words is not None else [None] * n
        lists.offsets = offsets if offsets is not None else [(0, 0)] * n
        lists.special_tokens_mask = special_tokens_mask if special_tokens_mask is not None else [0] * n
        lists.attention_mask = attention_mask if attention_mask is not None else [1] * n
        lists.overflowing = overflowing if overflowing is not None else []
        lists.ranges = sequence_ranges if sequence_ranges is not None else {}
        self._lists = lists

    # -- the lists EncodingBase does not build: from a lazy encoding's frame -------------
    @property
    def type_ids(self):
        """The type id (segment) of each token."""
        cdef Lists lists = _lists_of(self)
        if lists.type_ids is None:
            frame = self._lazy_frame()
            lists.type_ids = frame.around([frame.type_id] * self._n, frame.types_before, frame.types_after)
        return lists.type_ids

    @type_ids.setter
    def type_ids(self, value):
        _lists_of(self).type_ids = value

    @property
    def special_tokens_mask(self):
        """1 for a special token added by post-processing."""
        cdef Lists lists = _lists_of(self)
        if lists.special_tokens_mask is None:
            lists.special_tokens_mask = self._lazy_frame().around([0] * self._n, 1, 1)
        return lists.special_tokens_mask

    @special_tokens_mask.setter
    def special_tokens_mask(self, value):
        _lists_of(self).special_tokens_mask = value

    @property
    def overflowing(self):
        """The encodings truncation cut off."""
        cdef Lists lists = _lists_of(self)
        if lists.overflowing is None:
            lists.overflowing = []
        return overflowing_parts(self)      # (made now if left for later: a truncated pair's)

    @overflowing.setter
    def overflowing(self, value):
        _lists_of(self).overflowing = value

    @property
    def _sequence_ranges(self):
        """Token range of each input sequence."""
        cdef Lists lists = _lists_of(self)
        if lists.ranges is None:
            frame = self._lazy_frame()
            start = len(frame.ids_before)
            lists.ranges = {0: (start, start + self._n)} if frame.sequence_range else {}
        return lists.ranges

    @_sequence_ranges.setter
    def _sequence_ranges(self, value):
        _lists_of(self).ranges = value

    def _lazy_frame(self):
        """The frame a lazy encoding builds its lists through (PLAIN_FRAME when it has none)."""
        frame = self._frame
        return PLAIN_FRAME if frame is None else frame

    @classmethod
    def from_raw(cls, raw, n, strings, word_index=None, frame=PLAIN_FRAME, spans_from=None, source=None):
        """A lazy encoding of ``n`` tokens held in ``raw`` (see :mod:`pieceworks._kernels.raw_encoding`).

        ``strings[id]`` is each id's token; ``word_index`` (pre-tokenized
        input) replaces every word index; ``frame`` adds special tokens.
        ``spans_from`` (a SpanSource): ``raw`` holds the ids alone, and it
        works out the offsets and words from ``source`` when first read.

        >>> from pieceworks._kernels.raw_encoding import pack
        >>> from pieceworks.frame import Frame
        >>> e = Encoding.from_raw(pack([5], [0], [2], [0]), 1, {5: "hi"}, frame=Frame([(1, "<s>", 0)], 0, [], True))
        >>> e.ids, e.tokens, e.offsets, e.word_ids, e.special_tokens_mask
        ([1, 5], ['<s>', 'hi'], [(0, 0), (0, 2)], [None, 0], [1, 0])
        """
        return make_raw(cls, raw, n, strings, word_index, frame, spans_from, source)

    def _ids_array(self):
        """The ids as an ``array('i')``, straight from the raw buffer when the list was never built.

        >>> Encoding([3, 4])._ids_array()
        array('i', [3, 4])
        """
        ids = self._ids
        if ids is not None:
            return array("i", ids)
        frame = self._lazy_frame()
        out = array("i", frame.ids_before)
        out.frombytes(_raw.ids_bytes(self._raw, self._n))
        out.extend(frame.ids_after)
        return out

    def _any_built(self):
        """Whether any list exists yet (always, for an encoding not made by :meth:`from_raw`)."""
        return not never_read(self)

    def __reduce__(self):
        # Pickle the lists, not the raw buffer and the vocabulary it points into.
        return (Encoding, tuple(getattr(self, f) for f in _FIELDS))

    @classmethod
    def from_tokens(cls, tokens, type_id=0, words=None):
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
    def word_ids(self):
        """The index of the word each token came from (None for special tokens)."""
        return list(self.words)

    @property
    def n_sequences(self):
        """How many input sequences this encoding holds (1, or 2 for a pair)."""
        return len(self._sequence_ranges) or 1

    @property
    def sequence_ids(self):
        """Per token, the index of its input sequence (None for added special tokens)."""
        out = [None] * len(self.ids)
        for seq_id in range(self.n_sequences):
            start, end = self._sequence_range(seq_id)
            end = min(end, len(out))    # (a slice past the end would grow the list)
            if start < end:
                out[start:end] = [seq_id] * (end - start)
        return out

    def __repr__(self):
        return (f"Encoding(num_tokens={len(self.ids)}, attributes=[ids, type_ids, tokens, offsets, "
                f"attention_mask, special_tokens_mask, overflowing])")

    def __eq__(self, other):
        if not isinstance(other, Encoding):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    def copy(self):
        """A copy whose lists are its own (a never-read lazy encoding shares its raw buffer instead).

        >>> e = Encoding([1, 2]); c = e.copy(); c.ids.append(3); e.ids, c.ids
        ([1, 2], [1, 2, 3])
        """
        if not self._any_built():
            # Nothing built yet: share the raw buffer (and copy raw truncation's parts alike).
            return _raw.lazy_copy(self)
        return Encoding(list(self.ids), list(self.type_ids), list(self.tokens), list(self.words),
                        list(self.offsets), list(self.special_tokens_mask), list(self.attention_mask),
                        [o.copy() for o in self.overflowing], dict(self._sequence_ranges))

    # -- sequences --------------------------------------------------------
    def set_sequence_id(self, sequence_id):
        """Mark every token as belonging to input sequence ``sequence_id``."""
        self._sequence_ranges[sequence_id] = (0, len(self.ids))

    def _sequence_range(self, sequence_id):
        return self._sequence_ranges.get(sequence_id, (0, len(self.ids)))

    # -- position look-ups ------------------------------------------------
    def token_to_sequence(self, token_index):
        _not_negative("token_to_sequence", token_index)
        if token_index > len(self.ids):
            return None
        if not self._sequence_ranges:
            return 0
        for seq_id, (start, end) in self._sequence_ranges.items():
            if start <= token_index < end:
                return seq_id
        return None

    def token_to_chars(self, token_index):
        """The char span of a token in its input (None for out of range)."""
        _not_negative("token_to_chars", token_index)
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self.offsets):
            return None
        return self.offsets[token_index]

    def token_to_word(self, token_index):
        _not_negative("token_to_word", token_index)
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self.words):
            return None
        return self.words[token_index]

    def word_to_tokens(self, word_index, sequence_index=0):
        """``(first_token, last_token + 1)`` of a word in one input sequence."""
        _not_negative("word_to_tokens", word_index, sequence_index)
        start_r, end_r = self._sequence_range(sequence_index)
        words = self.words
        if type(words) is list and type(word_index) is int and word_index < 2 ** 62:
            found = _word_span(words, word_index, start_r, min(end_r, len(words)))
            if found is not False:
                return found
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

    def word_to_chars(self, word_index, sequence_index=0):
        _not_negative("word_to_chars", word_index, sequence_index)
        span = self.word_to_tokens(word_index, sequence_index)
        if span is None or span[1] == 0:
            return None
        return (self.offsets[span[0]][0], self.offsets[span[1] - 1][1])

    def char_to_token(self, char_pos, sequence_index=0):
        """The token whose span holds char ``char_pos`` of input ``sequence_index``."""
        _not_negative("char_to_token", char_pos, sequence_index)
        start_r, end_r = self._sequence_range(sequence_index)
        offsets = self.offsets
        if type(offsets) is list and type(char_pos) is int and char_pos < 2 ** 62:
            found = _first_span_holding(offsets, char_pos, start_r, min(end_r, len(offsets)))
            if found != -2:
                return None if found == -1 else found
        for i in range(start_r, min(end_r, len(self.offsets))):
            s, e = self.offsets[i]
            if s <= char_pos < e:
                return i
        return None

    def char_to_word(self, char_pos, sequence_index=0):
        _not_negative("char_to_word", char_pos, sequence_index)
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.token_to_word(token)

    # -- truncation, merging, padding -------------------------------------
    def _slice(self, start, stop):
        return Encoding(self.ids[start:stop], self.type_ids[start:stop], self.tokens[start:stop],
                        self.words[start:stop], self.offsets[start:stop],
                        self.special_tokens_mask[start:stop], self.attention_mask[start:stop], [], {})

    def truncate(self, max_length, stride=0, direction="right"):
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
        parts = _raw.truncation_windows(n, max_length, stride, direction)
        first = self._slice(*parts[0])
        first.overflowing = [self._slice(*p) for p in parts[1:]]
        self._assign(first)

    def _assign(self, other):
        for field in _FIELDS:
            setattr(self, field, getattr(other, field))

    @staticmethod
    def merge(encodings, growing_offsets=True):
        """Concatenate encodings (and combine their overflowing parts)."""
        out = Encoding()
        for enc in encodings:
            out.merge_with(enc, growing_offsets)
        return out

    def merge_with(self, pair, growing_offsets=False):
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
        self.offsets        # (built first: a frame that trims them reads the tokens, about to change)
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

    def pad(self, length, direction="right", pad_id=0, pad_type_id=0,
            pad_token="[PAD]"):
        """Pad to ``length`` tokens (and the overflowing encodings too)."""
        if direction not in ("right", "left"):
            raise ConfigError(f"unknown padding direction {direction!r}", fix="use 'right' or 'left'")
        # (Parts left for later are padded once made.)
        parts_later = _raw.pad_parts_later(self, (length, direction, pad_id, pad_type_id, pad_token))
        if self._ids is None and not self._any_built():
            # Lazy and never read: the padding joins the frame, and the lists stay unbuilt
            # (so do those of raw truncation's overflowing parts, padded alike).
            for over in self._overflowing or ():
                over.pad(length, direction, pad_id, pad_type_id, pad_token)
            missing = length - len(self)
            if missing > 0:
                self._basis = self._basis.with_frame(self._lazy_frame().padded(missing, direction, pad_id,
                                                                               pad_type_id, pad_token))
            return
        for over in () if parts_later else self._overflowing or ():
            over.pad(length, direction, pad_id, pad_type_id, pad_token)
        if _raw.pad_pending_pair(self, length, direction, pad_id, pad_type_id, pad_token):
            return      # (a pair none of whose other lists was read: they are built padded)
        missing = length - len(self.ids)
        if missing <= 0:
            return
        self.offsets        # (built first: a frame that trims them reads the tokens, about to change)
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


@cython.no_gc
cdef class EncodingWithIds(Encoding):
    """An :class:`Encoding` made with its ``ids`` list built (``Tokenizer.encode_batch``'s, when
    the ids are built in the batch job): ``ids`` is then a plain slot, not a property.

    CPython reads a slot (a member descriptor, as ``__slots__`` makes) in
    about half the time it takes to call a property's getter, and
    ``[e.ids for e in tokenizer.encode_batch(lines)]`` reads one per line:
    about 11 ns a line here against 22. Everything else is Encoding's.

    >>> from pieceworks._kernels.raw_encoding import make_with_ids, SpanSource
    >>> e = make_with_ids(EncodingWithIds, [5, 7], 2, {5: "a", 7: "b"}, None, SpanSource(), "ab", 0)
    >>> e.ids, isinstance(e, Encoding), type(EncodingWithIds.__dict__["ids"]).__name__
    ([5, 7], True, 'member_descriptor')
    """

    def __delattr__(self, name):
        if name == "ids":       # (the slot left empty would be read as an object by the kernels)
            raise AttributeError("Encoding.ids cannot be deleted")
        object.__delattr__(self, name)


cdef Py_ssize_t _field_offset(EncodingBase probe, object value) except -1:
    """Where in ``probe``'s struct the one object field holding ``value`` is (a byte offset)."""
    cdef PyObject** words = <PyObject**><PyObject*>probe
    cdef Py_ssize_t k
    for k in range(Py_TYPE(probe).tp_basicsize // <Py_ssize_t>sizeof(PyObject*)):
        if words[k] == <PyObject*>value:
            return k * <Py_ssize_t>sizeof(PyObject*)
    raise RuntimeError("EncodingWithIds: the ids field was not found in the object")


def _install_ids_slot():
    cdef EncodingBase probe = EncodingWithIds.__new__(EncodingWithIds)
    marker = object()
    probe._ids = marker
    pw_add_ids_member(<PyTypeObject*>EncodingWithIds, _field_offset(probe, marker))


_install_ids_slot()

