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
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport INT32_MAX, int32_t

from pieceworks._kernels.raw_encoding cimport (Basis, EncodingBase, Lists, _lists_of, make_raw, never_read,
                                              pending_char_to_token,
                                              overflowing_parts)

from pieceworks._kernels.sorted_spans cimport first_holding_in_order
from pieceworks._kernels.id_list cimport PyErr_Clear, PyErr_Occurred, PyLong_CheckExact, _as_ssize
from pieceworks._kernels import raw_encoding as _raw
from pieceworks.errors import ConfigError, OutOfRangeError
from pieceworks.frame import PLAIN_FRAME

# The attributes, in Encoding.__init__'s order.
_FIELDS = ("ids", "type_ids", "tokens", "words", "offsets", "special_tokens_mask", "attention_mask",
           "overflowing", "_sequence_ranges")


cdef object _packed(Lists lists, list items, bint spans):
    """``items``, the offsets (``spans``) or the words, as int32s (bytes), packed once and kept in
    ``lists`` while its list is the same one at the same length; False if an item does not pack.

    Offsets pack as their starts, their ends (each a pair of ints from
    0 to 2**31 - 1), then where each one's *sorted run* begins: the first
    ``j`` such that the spans ``j..i`` have starts and ends in order, which
    lets :func:`_first_span_holding` search a range halving. Words pack as
    themselves, None as -1, then where each one's sorted run begins (words
    in order, none -1: :func:`_word_span` halves those). A look-up then
    reads packed bytes, not Python objects scattered over the heap (which
    cost ``char_to_token`` 7 times Hugging Face's time on 150 tokens). Like Hugging Face's, whose lists are
    copies, the look-ups do not see an item changed in place (setting the
    list, which every change of ours does, is seen).

    >>> e = Encoding([1, 2], offsets=[(0, 2), (3, 5)]); e.char_to_token(4), e.char_to_token(2)
    (1, None)
    """
    cdef Py_ssize_t n = len(items), i, begin, end
    cdef object item, kept = lists.packed_spans if spans else lists.packed_words
    cdef bytes packed
    cdef int32_t* out
    if (lists.spans_of if spans else lists.words_of) is items and (
            kept is False or len(<bytes>kept) == (12 if spans else 8) * n):
        return kept
    packed = PyBytes_FromStringAndSize(NULL, (12 if spans else 8) * n)
    out = <int32_t*>PyBytes_AS_STRING(packed)
    for i in range(n):
        item = items[i]
        if not spans:
            begin = -1 if item is None else _small_int(item)
            if begin < -1 or begin > INT32_MAX or begin == -1 and item is not None:
                packed = None
                break
            out[i] = <int32_t>begin
            out[n + i] = <int32_t>i if i == 0 or begin < 0 or out[i - 1] < 0 or out[i - 1] > begin else out[n + i - 1]
            continue
        if type(item) is not tuple or len(<tuple>item) != 2:
            packed = None
            break
        begin = _small_int((<tuple>item)[0])
        end = _small_int((<tuple>item)[1])
        if begin < 0 or end < 0 or begin > INT32_MAX or end > INT32_MAX:
            packed = None
            break
        out[i] = <int32_t>begin
        out[n + i] = <int32_t>end
        out[2 * n + i] = <int32_t>i if i == 0 or out[i - 1] > begin or out[n + i - 1] > end else out[2 * n + i - 1]
    kept = False if packed is None else packed
    if spans:
        lists.spans_of, lists.packed_spans = items, kept
    else:
        lists.words_of, lists.packed_words = items, kept
    return kept


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _first_span_holding(bytes packed, Py_ssize_t pos, Py_ssize_t start, Py_ssize_t stop) noexcept:
    """The first ``i`` in ``[start, stop)`` whose packed span (see :func:`_packed`) holds
    ``pos``; -1 if none.

    A range that is one sorted run (every tokenizer's own spans of one
    sequence) is searched by halving (:mod:`sorted_spans`), not a scan
    (which was most of a look-up in an encoding of 384 tokens).
    """
    cdef Py_ssize_t n = len(packed) // 12, i
    cdef const int32_t* starts = <const int32_t*>PyBytes_AS_STRING(packed)
    cdef const int32_t* ends = starts + n
    cdef const int32_t* runs = starts + 2 * n
    if start < stop and runs[stop - 1] <= start:
        return first_holding_in_order(starts, ends, start, stop, pos)
    for i in range(start, stop):
        if starts[i] <= pos < ends[i]:
            return i
    return -1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef object _word_span(bytes packed, Py_ssize_t word, Py_ssize_t start, Py_ssize_t stop):
    """``(first, last + 1)`` of the tokens of ``word`` among packed words ``start:stop`` (see
    :func:`_packed`; in order, -1 for special tokens), None if it has none. A range that is one
    sorted run (a sequence's own words) is searched halving: its word's tokens are together."""
    cdef Py_ssize_t n = len(packed) // 8
    cdef const int32_t* words = <const int32_t*>PyBytes_AS_STRING(packed)
    cdef const int32_t* runs = words + n
    cdef Py_ssize_t i, w, first = -1, last = -1, lo = start, hi = stop
    if start < stop and runs[stop - 1] <= start:
        while lo < hi:                      # (the first word at or past ``word``)
            i = (lo + hi) >> 1
            if words[i] < word:
                lo = i + 1
            else:
                hi = i
        if lo == stop or words[lo] != word:
            return None
        first, hi = lo, stop
        while lo < hi:                      # (the first word past it)
            i = (lo + hi) >> 1
            if words[i] <= word:
                lo = i + 1
            else:
                hi = i
        return (first, lo)
    for i in range(start, stop):
        w = words[i]
        if w < 0:
            continue
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


cdef inline Py_ssize_t _position(str method, object index, object other=0) except -2:
    """``index`` as a Py_ssize_t when it and ``other`` are exact ints from 0 that fit one; -1 for
    the look-ups' Python paths (a bool, a big int, an int subclass); a negative one raises (see
    :func:`_not_negative`)."""
    cdef Py_ssize_t out = _small_int(index)
    if out >= 0 and _small_int(other) >= 0:
        return out
    _not_negative(method, index, other)
    return -1


cdef inline object _built_offsets(Encoding self):
    """``self.offsets`` read from its slot when it is built (the property's call is a third of a look-up)."""
    cdef Lists lists = self._lists
    if lists is not None and lists.pending is None and lists.offsets is not None:
        return lists.offsets
    return self.offsets


cdef inline object _built_words(Encoding self):
    """``self.words``, as :func:`_built_offsets` reads the offsets."""
    cdef Lists lists = self._lists
    if lists is not None and lists.pending is None and lists.words is not None:
        return lists.words
    return self.words


cdef object _item_of_token(Encoding self, object token_index, Py_ssize_t token, object items):
    """``items[token_index]`` (the offsets or words) if a sequence holds that token, else None
    (``token_to_chars``, ``token_to_word``); ``token`` is ``token_index`` checked by :func:`_position`."""
    if _sequence_holding(self, token_index, token) is None:
        return None
    if token >= 0 and type(items) is list:
        return items[token] if token < len(<list>items) else None
    return items[token_index] if 0 <= token_index < len(items) else None


cdef inline object _ranges(Encoding self):
    """``self._sequence_ranges``, read from its slot once built."""
    cdef Lists lists = _lists_of(self)
    return self._sequence_ranges if lists.ranges is None else lists.ranges


cdef object _sequence_holding(Encoding self, object token_index, Py_ssize_t token=-1):
    """Which input sequence token ``token_index`` is of: 0 when the encoding has no ranges, None when
    no range holds it or it is past the end (Hugging Face's ``token_to_sequence``). ``token``:
    ``token_index`` as :func:`_position` read it (-1: compare the objects)."""
    cdef Py_ssize_t start, end
    ranges = _ranges(self)
    if token_index > len(self) if token < 0 else token > len(self):
        return None
    if not ranges:
        return 0
    if token >= 0 and type(ranges) is dict:
        for seq_id, span in (<dict>ranges).items():     # (a C loop over the dict: no items view)
            start = _small_int((<tuple>span)[0]) if type(span) is tuple and len(<tuple>span) == 2 else -2
            end = _small_int((<tuple>span)[1]) if start >= 0 else -2
            if end >= 0:
                if start <= token < end:
                    return seq_id
            elif span[0] <= token_index < span[1]:
                return seq_id
        return None
    for seq_id, (start_at, end_at) in ranges.items():
        if start_at <= token_index < end_at:
            return seq_id
    return None


cdef bint _range_of(Encoding self, object sequence_index, Py_ssize_t* start, Py_ssize_t* stop) except -1:
    """Set ``start``/``stop`` to the token range of input ``sequence_index`` (the whole encoding when
    it has no range for it); False when a range is not a pair of ints from 0 (the Python path)."""
    ranges = _ranges(self)
    found = (<dict>ranges).get(sequence_index) if type(ranges) is dict else None
    if found is None:
        start[0], stop[0] = 0, len(self)
        return type(ranges) is dict
    if type(found) is not tuple or len(<tuple>found) != 2:
        return False
    start[0] = _small_int((<tuple>found)[0])
    stop[0] = _small_int((<tuple>found)[1])
    return start[0] >= 0 and stop[0] >= 0


cdef object _word_tokens(Encoding self, object word_index, object sequence_index, Py_ssize_t word):
    """:meth:`Encoding.word_to_tokens` (``word``: ``word_index`` as :func:`_position` read it, -1
    for the Python path); a C call, which ``word_to_chars`` makes too."""
    cdef Py_ssize_t start, stop
    words = _built_words(self)
    if word >= 0 and type(words) is list and _range_of(self, sequence_index, &start, &stop):
        packed = _packed(_lists_of(self), words, False)
        if packed is not False:
            return _word_span(packed, word, start, min(stop, len(<list>words)))
    start_r, end_r = self._sequence_range(sequence_index)
    first = last = None
    for i in range(start_r, end_r):
        w = words[i]
        if w is not None and w > word_index:
            break
        if w == word_index:
            if first is None:
                first = i
            last = i + 1
    if first is None:
        return None
    return (first, last)


cdef object _built_char_to_token(Encoding self, object char_pos, object sequence_index, Py_ssize_t pos):
    """:meth:`Encoding.char_to_token` once the offsets are built (``pos``: ``char_pos`` as
    :func:`_position` read it, -1 for the Python path); a C call, which ``char_to_word`` makes too
    (a method call from it was a fifth of its time)."""
    cdef Py_ssize_t start, stop, found
    offsets = _built_offsets(self)
    if pos >= 0 and type(offsets) is list and _range_of(self, sequence_index, &start, &stop):
        packed = _packed(_lists_of(self), offsets, True)
        if packed is not False:
            found = _first_span_holding(packed, pos, start, min(stop, len(<list>offsets)))
            return None if found < 0 else found
    start_r, end_r = self._sequence_range(sequence_index)
    for i in range(start_r, min(end_r, len(offsets))):
        s, e = offsets[i]
        if s <= char_pos < e:
            return i
    return None


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
    # (Each has a C path for plain int positions: they are called per token or per answer span, and
    # property reads and Python loops made them 2 to 9 times Hugging Face's time.)
    def token_to_sequence(self, token_index):
        return _sequence_holding(self, token_index, _position("token_to_sequence", token_index))

    def token_to_chars(self, token_index):
        """The char span of a token in its input (None for out of range)."""
        cdef Py_ssize_t token = _position("token_to_chars", token_index)
        return _item_of_token(self, token_index, token, _built_offsets(self))

    def token_to_word(self, token_index):
        cdef Py_ssize_t token = _position("token_to_word", token_index)
        return _item_of_token(self, token_index, token, _built_words(self))

    def word_to_tokens(self, word_index, sequence_index=0):
        """``(first_token, last_token + 1)`` of a word in one input sequence."""
        return _word_tokens(self, word_index, sequence_index,
                            _position("word_to_tokens", word_index, sequence_index))

    def word_to_chars(self, word_index, sequence_index=0):
        cdef Py_ssize_t first, last
        span = _word_tokens(self, word_index, sequence_index, _position("word_to_chars", word_index, sequence_index))
        if span is None or span[1] == 0:
            return None
        offsets = _built_offsets(self)
        if type(span) is tuple and type(offsets) is list:     # (the C path's: indexed without generic calls)
            first, last = (<tuple>span)[0], (<tuple>span)[1]
            if 0 <= first < last <= len(<list>offsets):
                return ((<list>offsets)[first][0], (<list>offsets)[last - 1][1])
        return (offsets[span[0]][0], offsets[span[1] - 1][1])

    def char_to_token(self, char_pos, sequence_index=0):
        """The token whose span holds char ``char_pos`` of input ``sequence_index``."""
        cdef Py_ssize_t pos = _position("char_to_token", char_pos, sequence_index), found, word
        if pos >= 0:
            found = pending_char_to_token(self, pos, _small_int(sequence_index), &word)
            if found != -2:
                return None if found < 0 else found
        return _built_char_to_token(self, char_pos, sequence_index, pos)

    def char_to_word(self, char_pos, sequence_index=0):
        cdef Py_ssize_t pos = _position("char_to_word", char_pos, sequence_index), found, word
        if pos >= 0:
            found = pending_char_to_token(self, pos, _small_int(sequence_index), &word)
            if found != -2:
                return None if found < 0 else word
        token = _built_char_to_token(self, char_pos, sequence_index, pos)
        return None if token is None else _item_of_token(self, token, token, _built_words(self))

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

