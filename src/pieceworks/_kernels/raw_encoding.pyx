# cython: language_level=3
"""Python lists from a raw encoding: what a lazy :class:`~pieceworks.Encoding` builds on access.

A *raw encoding* is one ``bytes`` object holding ``4 * n`` int32 values in
machine order, in four blocks of ``n``: token ids, start offsets, end
offsets, word indices. The fused kernels write it without the GIL (one
allocation, no Python object per token, nothing for the garbage collector
to walk); an Encoding keeps it and makes each list only when it is first
read, as Hugging Face does on attribute access.

Lists are built here, not with ``memoryview.tolist()``: ids, offsets and
words repeat, so their int objects come from one shared table, and the
offset tuples are untracked by the collector (two ints cannot form a cycle).

A kernel may also hand over the ids alone (:func:`ids_raw`: the ``n`` ids,
then whatever else its :class:`SpanSource` needs, such as where each word
ends) with the SpanSource and the text: the offsets and word indices are
then worked out only when first read (most callers read only the ids), and
the encoding then holds the full form. Or an encoding may hold no raw at
all, only its built ids list (:func:`make_with_ids`, a batch job's): its
SpanSource (the job's chunk) then makes the full form when another list is
first read.

>>> raw = pack([5, 7], [0, 3], [2, 8], [0, 1])
>>> id_list(raw, 2), offset_list(raw, 2, 0), word_list(raw, 2, -1), token_list(raw, 2, {5: "hi", 7: "there"})
([5, 7], [(0, 2), (3, 8)], [0, 1], ['hi', 'there'])
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromSsize_t
from cpython.mem cimport PyMem_Calloc
from cpython.object cimport PyObject
from cpython.object cimport PyObject_GetItem
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_Tailmatch
from libc.stdint cimport INT32_MAX, int32_t, int64_t
from libc.string cimport memcpy
from pieceworks._kernels.sorted_spans cimport first_holding_in_order

from pieceworks.errors import ConfigError

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)
    void PyObject_GC_Track(void* op)
    void PyList_SET_ITEM_p "PyList_SET_ITEM"(object, Py_ssize_t, PyObject*)

# Ints below _n_shared come from one shared table instead of a new object each. It
# starts at 2**16 and grows to cover the ids of each model loaded (share_ints_below),
# up to MAX_SHARED: a Llama 3 or Qwen list of ids then allocates no int, as the
# tiktoken face's does. The pointer array is reserved once at its largest size, so a
# pointer to it stays valid while the table grows (only touched pages take memory).
cdef Py_ssize_t MAX_SHARED = 1 << 21
cdef list _shared = []
cdef PyObject** _shared_ptrs = <PyObject**>PyMem_Calloc(MAX_SHARED, sizeof(PyObject*))
if _shared_ptrs == NULL:
    raise MemoryError("raw_encoding: no memory for the shared int table")
cdef Py_ssize_t _n_shared = 0
# Module-owned lists of ints or strs are untracked: otherwise every full collection in
# the user's process reads the header of each item (a cache miss apiece).
PyObject_GC_UnTrack(<void*>_shared)


cpdef void share_ints_below(Py_ssize_t n) except *:
    """Make the shared int table cover ``0 <= i < n`` (capped at 2**21; it never shrinks).

    >>> share_ints_below(70_000); id_list(pack([69_999], [0], [1], [0]), 1)[0] is id_list(pack([69_999], [0], [1], [0]), 1)[0]
    True
    """
    global _n_shared
    cdef Py_ssize_t i
    if n > MAX_SHARED:
        n = MAX_SHARED
    if n <= _n_shared:
        return
    _shared.extend(range(_n_shared, n))
    for i in range(_n_shared, n):
        _shared_ptrs[i] = <PyObject*>_shared[i]
    _n_shared = n


cdef PyObject** shared_int_table(Py_ssize_t* count):
    """The shared table's pointers (stable for the process) and, in ``count``, how many are set."""
    count[0] = _n_shared
    return _shared_ptrs


share_ints_below(1 << 16)
# A special token's offsets.
cdef tuple _NO_SPAN = (0, 0)
# Spans starting below SPAN_STARTS and shorter than SPAN_LENGTHS chars are shared
# tuples, made on first use (a short line's offsets then allocate nothing; tuples are
# immutable, so sharing one is as good as a new one).
cdef Py_ssize_t SPAN_STARTS = 1024
cdef Py_ssize_t SPAN_LENGTHS = 32
cdef list _spans = [None] * (SPAN_STARTS * SPAN_LENGTHS)
PyObject_GC_UnTrack(<void*>_spans)


cdef object _shared_span(Py_ssize_t start, Py_ssize_t end):
    cdef Py_ssize_t slot = start * SPAN_LENGTHS + (end - start)
    cdef object span = _spans[slot]
    if span is None:
        span = (int_object(start), int_object(end))
        PyObject_GC_UnTrack(<void*>span)
        _spans[slot] = span
    return span


cdef object int_object(Py_ssize_t value):
    if 0 <= value < _n_shared:
        return <object>_shared_ptrs[value]
    return PyLong_FromSsize_t(value)


cdef tuple span_tuple(Py_ssize_t start, Py_ssize_t end, tuple previous):
    """The offsets tuple ``(start, end)``, untracked by the collector (two ints form no cycle).

    A short span near the text's start is a shared tuple (see ``_spans``);
    another is new, its start int the ``previous`` span's end int when the
    token starts where that one ended.
    """
    cdef object start_obj
    cdef tuple span
    if 0 <= start < SPAN_STARTS and 0 <= end - start < SPAN_LENGTHS:
        return <tuple>_shared_span(start, end)
    if previous is not None and <Py_ssize_t>previous[1] == start:
        start_obj = previous[1]
    else:
        start_obj = int_object(start)
    end_obj = int_object(end)
    span = PyTuple_New(2)
    Py_INCREF(start_obj)
    PyTuple_SET_ITEM(span, 0, start_obj)
    Py_INCREF(end_obj)
    PyTuple_SET_ITEM(span, 1, end_obj)
    PyObject_GC_UnTrack(<void*>span)
    return span


cdef const int32_t* block(bytes raw, Py_ssize_t n, int which) except NULL:
    """Block ``which`` (0 ids, 1 starts, 2 ends, 3 words) of a raw encoding of ``n`` tokens.

    The size is checked up to that block: an ids-only raw (see the module
    doc) serves block 0 and refuses the others.
    """
    if raw is None:     # a list set to None on an encoding that has no raw form
        raise ValueError("this encoding has no raw form to build the list from; assign the list itself")
    if PyBytes_GET_SIZE(raw) < 4 * n * (which + 1):
        raise ValueError(f"a raw encoding of {n} tokens needs {4 * n * (which + 1)} bytes for block {which}, "
                         f"got {PyBytes_GET_SIZE(raw)}")
    return (<const int32_t*>PyBytes_AS_STRING(raw)) + which * n


cdef bytes ids_raw(const void* ids, Py_ssize_t n, const void* extra, Py_ssize_t n_extra):
    """``n`` int32 ids (or uint32 below 2**31) then ``n_extra`` int32, as one raw encoding: the ids-only
    form (the extra is the SpanSource's: see the module doc), or with ``3 * n`` extra (starts, ends,
    words) the full one."""
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 4 * (n + n_extra))
    memcpy(PyBytes_AS_STRING(raw), ids, 4 * n)
    memcpy(PyBytes_AS_STRING(raw) + 4 * n, extra, 4 * n_extra)
    return raw


cdef class SpanSource:
    """What works out the offsets and word indices of an ids-only raw encoding (see the module doc).

    ``fill(source, ids, n, extra, n_extra, starts, ends, words)`` writes
    ``n`` of each for the tokens ``ids`` that a kernel made from ``source``
    (the text it encoded); ``extra`` is what the kernel put after the ids.
    A kernel subclasses it (bytebpe.ByteSpans).
    """

    cdef int fill(self, object source, const int32_t* ids, Py_ssize_t n, const int32_t* extra, Py_ssize_t n_extra,
                  int32_t* starts, int32_t* ends, int32_t* words) except -1:
        raise NotImplementedError("SpanSource.fill")

    cdef bytes full(self, object source, Py_ssize_t at, Py_ssize_t n):
        """The four-block raw encoding of the ``n`` tokens at ``at`` of what the kernel made from
        ``source``, for an encoding that holds no raw (see :func:`make_with_ids`)."""
        raise NotImplementedError("SpanSource.full")


cdef bytes full_raw(SpanSource spans_from, object source, bytes ids_only, Py_ssize_t n):
    """The four-block raw encoding of an ids-only one: the ids, then what ``spans_from`` works out."""
    cdef const int32_t* ids = block(ids_only, n, 0)
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16 * n)
    cdef int32_t* out = <int32_t*>PyBytes_AS_STRING(raw)
    memcpy(out, ids, 4 * n)
    spans_from.fill(source, out, n, ids + n, PyBytes_GET_SIZE(ids_only) // 4 - n, out + n, out + 2 * n, out + 3 * n)
    return raw


cdef inline void shifted_spans(const int32_t* src, Py_ssize_t k, Py_ssize_t offset_shift, Py_ssize_t word_shift,
                               int32_t* starts, int32_t* ends, int32_t* words) noexcept nogil:
    """The starts, ends and words of the four-block raw ``src`` of ``k`` tokens, moved by
    ``offset_shift`` chars and ``word_shift`` words (one part of :func:`join` or :class:`JoinedSpans`)."""
    cdef Py_ssize_t i
    for i in range(k):
        starts[i] = <int32_t>(src[k + i] + offset_shift)
        ends[i] = <int32_t>(src[2 * k + i] + offset_shift)
        words[i] = <int32_t>(src[3 * k + i] + word_shift)


cdef class JoinedSpans(SpanSource):
    """The offsets and words of an ids-only encoding joined from parts (:func:`join_lazily`): each
    part's own full form, shifted as :func:`join` shifts it. Its ``source`` is the tuple of parts."""

    cdef int fill(self, object source, const int32_t* ids, Py_ssize_t n, const int32_t* extra, Py_ssize_t n_extra,
                  int32_t* starts, int32_t* ends, int32_t* words) except -1:
        cdef Py_ssize_t at = 0, k
        if type(source) is not tuple:
            raise TypeError(f"JoinedSpans: the source must be join_lazily's tuple of parts, got {type(source).__name__}")
        for part in <tuple>source:
            k = part[1]
            if at + k > n:
                raise ValueError(f"JoinedSpans: the parts hold more than the encoding's {n} tokens")
            raw = part[0] if part[4] is None else full_raw(<SpanSource?>part[4], part[5], <bytes?>part[0], k)
            block(<bytes?>raw, k, 3)      # (raises unless it holds all four blocks)
            shifted_spans(block(<bytes>raw, k, 0), k, part[2], part[3], starts + at, ends + at, words + at)
            at += k
        if at != n:
            raise ValueError(f"JoinedSpans: the parts hold {at} tokens, the encoding {n}")
        return 0


cdef JoinedSpans _JOINED = JoinedSpans()


def join_lazily(list parts) -> tuple:
    """:func:`join`, with the offsets and words worked out only when first read: ``(raw, n, spans, source)``
    for :func:`make_raw`, the raw holding the ids alone.

    Each part is ``(raw, n, offset_shift, word_shift, spans_from, source)``:
    ``raw`` holds the ids alone and ``spans_from`` works out the rest from
    ``source`` (an ids-only part, as a kernel hands it over), or
    ``spans_from`` is None and ``raw`` holds all four blocks.

    >>> raw, n, spans, source = join_lazily([(pack([1], [0], [2], [0]), 1, 0, 0, None, None),
    ...                                      (pack([2], [0], [3], [0]), 1, 5, 1, None, None)])
    >>> e = make_raw(EncodingBase, raw, n, {1: "a", 2: "b"}, None, None, spans, source)
    >>> e.ids, e.offsets, e.words
    ([1, 2], [(0, 2), (5, 8)], [0, 1])
    """
    cdef Py_ssize_t total = 0, k, at = 0
    cdef tuple frozen = tuple(parts)
    for part in frozen:
        k = part[1]
        if k < 0:
            raise ValueError(f"join_lazily: a part of {k} tokens")
        total += k
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 4 * total)
    cdef char* dst = PyBytes_AS_STRING(out)
    for part in frozen:
        k = part[1]
        memcpy(dst + 4 * at, block(<bytes?>part[0], k, 0), 4 * k)
        at += k
    return out, total, _JOINED, frozen


def pack(ids, starts, ends, words) -> bytes:
    """A raw encoding from four equal-length sequences of ints (for tests and pure-Python plans)."""
    cdef Py_ssize_t n = len(ids), i, k
    if not len(starts) == len(ends) == len(words) == n:
        raise ValueError("pack: the four sequences must have the same length")
    cdef bytes raw = PyBytes_FromStringAndSize(NULL, 16 * n)
    cdef int32_t* out = <int32_t*>PyBytes_AS_STRING(raw)
    for k, column in enumerate((ids, starts, ends, words)):
        for i in range(n):
            out[k * n + i] = column[i]
    return raw


def id_list(bytes raw not None, Py_ssize_t n, list before=None, list after=None) -> list:
    """The ids, after the ids ``before`` and followed by ``after`` (a frame's special tokens)."""
    return _id_list(raw, n, before, after)


cdef list _id_list(bytes raw, Py_ssize_t n, list before, list after):
    return framed_ids(block(raw, n, 0), n, before, after)


cdef list framed_ids(const int32_t* ids, Py_ssize_t n, list before, list after):
    """The list of ``before``, the ``n`` ids, then ``after`` (the ints from the shared table),
    untracked by the collector: it holds ints only."""
    if (before is None or not before) and (after is None or not after):
        return _bare_ids(ids, n)
    cdef Py_ssize_t nb = 0 if before is None else len(before), na = 0 if after is None else len(after)
    cdef list out = PyList_New(nb + n + na)
    cdef Py_ssize_t i
    cdef object obj
    for i in range(nb):
        obj = before[i]
        Py_INCREF(obj)
        PyList_SET_ITEM(out, i, obj)
    for i in range(n):
        if i + PREFETCH_AHEAD < n:
            prefetch_int(_shared_ptrs, _n_shared, ids[i + PREFETCH_AHEAD])
        PyList_SET_ITEM_p(out, nb + i, int_ref(_shared_ptrs, _n_shared, ids[i]))
    for i in range(na):
        obj = after[i]
        Py_INCREF(obj)
        PyList_SET_ITEM(out, nb + n + i, obj)
    PyObject_GC_UnTrack(<void*>out)
    return out


cdef inline list _bare_ids(const int32_t* ids, Py_ssize_t n):
    """:func:`framed_ids` with no frame (a batch of lines makes one a line): the tiktoken face's
    loop. The table is in locals (the list's stores made the compiler read it again for each id),
    and there is no look-ahead: on lines it cost 8 instructions an id and saved no time we could
    measure (callgrind: about 170 instructions for a 13-id line, down from 320)."""
    cdef PyObject** table = _shared_ptrs
    cdef Py_ssize_t count = _n_shared, i
    cdef list out = PyList_New(n)
    for i in range(n):
        PyList_SET_ITEM_p(out, i, int_ref(table, count, ids[i]))
    PyObject_GC_UnTrack(<void*>out)
    return out


def token_list(bytes raw not None, Py_ssize_t n, strings, list before=None, list after=None) -> list:
    """``strings[id]`` for each id (``strings``: a list indexed by id, or a dict), framed as id_list."""
    return _token_list(raw, n, strings, before, after)


cdef list _token_list(bytes raw, Py_ssize_t n, strings, list before, list after):
    cdef const int32_t* ids = block(raw, n, 0)
    cdef Py_ssize_t nb = 0 if before is None else len(before), na = 0 if after is None else len(after)
    cdef list out = PyList_New(nb + n + na)
    cdef Py_ssize_t i
    cdef object obj
    cdef list dense = strings if type(strings) is list else None
    for i in range(nb):
        obj = before[i]
        Py_INCREF(obj)
        PyList_SET_ITEM(out, i, obj)
    for i in range(n):
        if dense is not None and 0 <= ids[i] < len(dense):
            obj = dense[ids[i]]
        else:
            obj = PyObject_GetItem(strings, int_object(ids[i]))
        Py_INCREF(obj)
        PyList_SET_ITEM(out, nb + i, obj)
    for i in range(na):
        obj = after[i]
        Py_INCREF(obj)
        PyList_SET_ITEM(out, nb + n + i, obj)
    return out


def offset_list(bytes raw not None, Py_ssize_t n, Py_ssize_t shift, Py_ssize_t nb=0, Py_ssize_t na=0) -> list:
    """``(start + shift, end + shift)`` tuples, after ``nb`` and before ``na`` times ``(0, 0)``."""
    return _offset_list(raw, n, shift, nb, na)


cdef list _offset_list(bytes raw, Py_ssize_t n, Py_ssize_t shift, Py_ssize_t nb, Py_ssize_t na):
    cdef const int32_t* starts = block(raw, n, 1)
    cdef const int32_t* ends = block(raw, n, 2)
    cdef list out = PyList_New(nb + n + na)
    cdef Py_ssize_t i
    cdef tuple span = None
    for i in range(nb):
        Py_INCREF(_NO_SPAN)
        PyList_SET_ITEM(out, i, _NO_SPAN)
    for i in range(na):
        Py_INCREF(_NO_SPAN)
        PyList_SET_ITEM(out, nb + n + i, _NO_SPAN)
    PyObject_GC_UnTrack(<void*>out)     # not walked by a collection while it fills
    for i in range(n):
        span = span_tuple(starts[i] + shift, ends[i] + shift, span)
        Py_INCREF(span)
        PyList_SET_ITEM(out, nb + i, span)
    PyObject_GC_Track(<void*>out)
    return out


def word_list(bytes raw not None, Py_ssize_t n, Py_ssize_t word_index, Py_ssize_t nb=0, Py_ssize_t na=0) -> list:
    """The word indices (all ``word_index`` when it is >= 0), after ``nb`` and before ``na`` Nones."""
    return _word_list(raw, n, word_index, nb, na)


cdef list _word_list(bytes raw, Py_ssize_t n, Py_ssize_t word_index, Py_ssize_t nb, Py_ssize_t na):
    cdef const int32_t* words = block(raw, n, 3)
    cdef list out = PyList_New(nb + n + na)
    cdef Py_ssize_t i
    cdef object obj
    for i in range(nb):
        Py_INCREF(None)
        PyList_SET_ITEM(out, i, None)
    for i in range(na):
        Py_INCREF(None)
        PyList_SET_ITEM(out, nb + n + i, None)
    for i in range(n):
        PyList_SET_ITEM_p(out, nb + i, int_ref(_shared_ptrs, _n_shared,
                                                 word_index if word_index >= 0 else words[i]))
    return out


def pair_encoding(type cls, tuple a not None, tuple b not None, frame, tuple keep_a=None,
                  tuple keep_b=None) -> EncodingBase:
    """The encoding (of type ``cls``) of a pair, ``before + A + middle + B + after``: raw
    results ``a`` and ``b`` (``fill_encodings``' form: ``(raw, n, _, strings[, tokens])``, or
    the ids alone, ``(raw, n, _, strings, spans_from, source)``: see :func:`whole_result`) between the special tokens of ``frame`` (a :class:`~pieceworks.frame.PairFrame`, padding
    included), each sequence's offsets trimmed alone by ``frame.trim``.

    Its ids list is built here; its other lists all at once, when the first
    of them is read (a :class:`PendingPair` in its ``_lists``; see
    :func:`_lists_of`): a classifier's or reranker's batch reads the ids
    alone, and the six other lists were two thirds of a pair's time.
    Each sequence keeps its own offsets and words; a result's own tokens
    list (its fifth item) spells its tokens, else ``strings[id]``.
    ``keep_a``, ``keep_b``: ``(start, stop)``, the tokens of that result
    to keep (a truncated pair's); None keeps them all.

    >>> from pieceworks.frame import PairFrame
    >>> f = PairFrame([(1, "<s>", 0)], 0, [(2, "</s>", 0)], 1, [])
    >>> strings = {5: "hi", 7: "there"}
    >>> e = pair_encoding(EncodingBase, (pack([5], [0], [2], [0]), 1, 0, strings), (pack([7], [3], [8], [4]), 1, 0, strings), f)
    >>> e.ids, e._lists.type_ids, e._pair_pending
    ([1, 5, 2, 7], None, True)
    >>> e.tokens, e.words, e.offsets, e._lists.type_ids, e._lists.special_tokens_mask, e._lists.ranges, e._pair_pending
    (['<s>', 'hi', '</s>', 'there'], [None, 0, None, 4], [(0, 0), (0, 2), (0, 0), (3, 8)], [0, 0, 0, 1], [1, 0, 1, 0], {0: (1, 2), 1: (3, 4)}, False)
    """
    cdef PendingPair pending = PendingPair.__new__(PendingPair)
    pending.a, pending.b, pending.frame = a, b, frame
    pending.first_a = _kept_start(keep_a, a[1])
    pending.n_a = _kept_stop(keep_a, a[1]) - pending.first_a
    pending.first_b = _kept_start(keep_b, b[1])
    pending.n_b = _kept_stop(keep_b, b[1]) - pending.first_b
    pending.in_order_a = pending.in_order_b = -1
    _check_sequence(a)
    _check_sequence(b)
    cdef Py_ssize_t nb = frame.nb, nm = frame.nm, na = frame.na
    cdef list f_ids = frame.ids
    if len(f_ids) != nb + nm + na or len(frame.tokens) != len(f_ids) or len(frame.types) != len(f_ids):
        raise ValueError("pair_encoding: the frame's groups and sizes disagree")
    cdef Py_ssize_t n_a = pending.n_a, n_b = pending.n_b, j
    cdef list ids = PyList_New(nb + n_a + nm + n_b + na)
    for j in range(nb + nm + na):
        _put(ids, _frame_position(j, nb, nm, n_a, n_b), f_ids[j])
    _put_ids(ids, nb, a, pending.first_a, pending.first_a + n_a)
    _put_ids(ids, nb + n_a + nm, b, pending.first_b, pending.first_b + n_b)
    PyObject_GC_UnTrack(<void*>ids)     # (ints only)
    cdef EncodingBase e = <EncodingBase>cls.__new__(cls)
    cdef Lists lists = Lists.__new__(Lists)
    lists.pending = pending
    e._ids = ids
    e._lists = lists
    return e


@cython.no_gc
cdef class PendingPair:
    """What a pair encoding builds its lists but the ids from, when the first is read (see
    :func:`pair_encoding`): the two raw results, the tokens of each kept, and the frame."""
    cdef tuple a, b
    cdef object frame
    cdef Py_ssize_t first_a, n_a, first_b, n_b
    # Whether each sequence's kept spans are in order (starts and ends each never going back): 1
    # yes, 0 no, -1 not looked at yet (see _token_holding).
    cdef signed char in_order_a, in_order_b


cdef inline Py_ssize_t _frame_position(Py_ssize_t j, Py_ssize_t nb, Py_ssize_t nm, Py_ssize_t n_a,
                                       Py_ssize_t n_b) noexcept:
    """Where a pair frame's ``j``-th special token goes among the pair's tokens."""
    return j if j < nb else (j + n_a if j < nb + nm else j + n_a + n_b)


cdef int _settle_pair(Lists lists) except -1:
    """Build every list of a pair encoding but its ids (see :func:`pair_encoding`), then drop its
    :class:`PendingPair`. (Two threads reading at once both build the same lists; either's stay.)"""
    cdef PendingPair p = lists.pending
    cdef tuple a = whole_result(p.a), b = whole_result(p.b)
    frame = p.frame
    cdef Py_ssize_t nb = frame.nb, nm = frame.nm, na = frame.na, n_a = p.n_a, n_b = p.n_b
    cdef Py_ssize_t pads_before = frame.pads_before, pads_after = frame.pads_after
    cdef list f_tokens = frame.tokens, f_types = frame.types
    strings = a[3]
    cdef Py_ssize_t total = nb + n_a + nm + n_b + na, j, at, start_b = nb + n_a + nm
    cdef list types = PyList_New(total), tokens = PyList_New(total)
    cdef list words = PyList_New(total), offsets = PyList_New(total), special = PyList_New(total)
    cdef object one = int_object(1)
    for j in range(nb + nm + na):
        at = _frame_position(j, nb, nm, n_a, n_b)
        _put(types, at, f_types[j])
        _put(tokens, at, f_tokens[j])
        _put(words, at, None)
        _put(offsets, at, _NO_SPAN)
        _put(special, at, one)
    _put_sequence(types, tokens, words, offsets, special, nb, a, p.first_a, p.first_a + n_a, strings,
                  int_object(frame.type_a))
    _put_sequence(types, tokens, words, offsets, special, start_b, b, p.first_b, p.first_b + n_b, strings,
                  int_object(frame.type_b))
    if frame.trim is not None:      # (each sequence alone, as the processor trims each encoding)
        frame.trim(offsets, tokens, nb, nb + n_a)
        frame.trim(offsets, tokens, start_b, start_b + n_b)
    cdef list attention = PyList_New(total)
    cdef object zero = int_object(0)
    for j in range(total):
        _put(attention, j, zero if j < pads_before or j >= total - pads_after else one)
    cdef dict ranges = {0: (nb, nb + n_a), 1: (start_b, start_b + n_b)}
    for out in (types, tokens, words, offsets, special, attention, ranges):
        PyObject_GC_UnTrack(<void*>out)     # (ints, strs, None and untracked int pairs)
    for span in ranges.values():
        PyObject_GC_UnTrack(<void*>span)
    lists.type_ids, lists.tokens, lists.words, lists.offsets = types, tokens, words, offsets
    lists.special_tokens_mask, lists.attention_mask, lists.ranges = special, attention, ranges
    # (No overflowing list until read: an empty one would be one more object for the collector.)
    lists.pending = None
    return 0


cdef Py_ssize_t pending_char_to_token(EncodingBase e, Py_ssize_t pos, Py_ssize_t sequence,
                                      Py_ssize_t* word) except -3:
    """``char_to_token(pos, sequence)`` of a pair encoding whose lists are not built yet (see
    :func:`pair_encoding`), read from its two raw results without building them: the token (and
    its word in ``word``), or -1 if no token holds ``pos``; -2 when this cannot answer (no pending
    pair, or a frame that trims offsets): the caller builds the lists and reads them.

    Building them costs a question-answering pair 40 ns a token, 50 times
    Hugging Face's two look-ups for the answer's first and last char. The
    frame's special tokens have empty spans, which hold no char.
    """
    cdef Lists lists = e._lists
    if lists is None or lists.pending is None:
        return -2
    cdef PendingPair p = lists.pending
    frame = p.frame
    if frame.trim is not None:
        return -2
    cdef Py_ssize_t nb = frame.nb, found = -1
    if sequence != 1:
        p.a = whole_result(p.a)     # (kept worked out: the lists, when built, read the same)
        found = _token_holding(p.a, p.first_a, p.first_a + p.n_a, pos, nb, word, &p.in_order_a)
    if found < 0 and sequence != 0:
        p.b = whole_result(p.b)
        found = _token_holding(p.b, p.first_b, p.first_b + p.n_b, pos, nb + p.n_a + <Py_ssize_t>frame.nm, word,
                               &p.in_order_b)
    return found


cdef Py_ssize_t _token_holding(tuple result, Py_ssize_t first, Py_ssize_t stop, Py_ssize_t pos, Py_ssize_t at,
                               Py_ssize_t* word, signed char* in_order) except -3:
    """The position (from ``at``) of the first of tokens ``first:stop`` of one sequence of
    :func:`pair_encoding` whose span holds ``pos``, its word in ``word``; -1 if none.

    ``in_order`` (worked out on the first call) says whether those spans are in order, as a
    tokenizer's own spans of one text are: they are then searched by halving
    (:mod:`sorted_spans`), not scanned (a 384-token pair's look-up was 0.44x Hugging Face's so).
    """
    cdef bytes raw = result[0]
    cdef Py_ssize_t n = result[1], i
    cdef const int32_t* starts = block(raw, n, 1)
    cdef const int32_t* ends = block(raw, n, 2)
    if in_order[0] < 0:
        in_order[0] = 1
        for i in range(first + 1, stop):
            if starts[i] < starts[i - 1] or ends[i] < ends[i - 1]:
                in_order[0] = 0
                break
    if in_order[0]:
        i = first_holding_in_order(starts, ends, first, stop, pos)
        if i < 0:
            return -1
        word[0] = block(raw, n, 3)[i]
        return at + i - first
    for i in range(first, stop):
        if starts[i] <= pos < ends[i]:
            word[0] = block(raw, n, 3)[i]
            return at + i - first
    return -1


def pad_pending_pair(EncodingBase e not None, Py_ssize_t length, str direction, pad_id, pad_type_id,
                     pad_token) -> bool:
    """Pad a pair encoding none of whose lists but the ids was read yet (see :func:`pair_encoding`):
    its ids now, the rest through its frame, padded, when built. False (nothing done) for any
    other encoding. ``direction``: "right" or "left" (checked by the caller)."""
    cdef Lists lists = e._lists
    if lists is None or lists.pending is None or e._ids is None:
        return False
    cdef PendingPair p = lists.pending
    cdef list ids = e._ids
    cdef Py_ssize_t missing = length - len(ids)
    if missing > 0:
        p.frame = p.frame.padded(missing, direction, pad_id, pad_type_id, pad_token)
        e._ids = ([pad_id] * missing + ids) if direction == "left" else ids + [pad_id] * missing
        PyObject_GC_UnTrack(<void*>e._ids)
    return True


cdef inline void _put(list out, Py_ssize_t i, object obj):
    Py_INCREF(obj)
    PyList_SET_ITEM(out, i, obj)


cdef Py_ssize_t _kept_start(tuple keep, Py_ssize_t n) except -1:
    """Where ``keep`` (:func:`pair_encoding`'s ``(start, stop)``, or None: all ``n``) starts."""
    if keep is None:
        return 0
    if len(keep) != 2 or not 0 <= keep[0] <= keep[1] <= n:
        raise ValueError(f"pair_encoding: cannot keep tokens {keep!r} of a sequence of {n}")
    return keep[0]


cdef inline Py_ssize_t _kept_stop(tuple keep, Py_ssize_t n):
    return n if keep is None else keep[1]      # (checked by _kept_start)


cdef int _check_sequence(tuple result) except -1:
    """A pair's raw result holds its tokens (and its own tokens list, if any, one a token)."""
    if _deferred(result):
        block(result[0], result[1], 0)
        return 0
    block(result[0], result[1], 3)
    if len(result) > 4 and len(result[4]) != result[1]:
        raise ValueError(f"pair_encoding: {len(result[4])} tokens for a sequence of {result[1]}")
    return 0


cdef inline bint _deferred(tuple result):
    return len(result) == 6 and isinstance(result[4], SpanSource)


cpdef tuple whole_result(tuple result):
    """A raw result of :func:`pair_encoding`'s with all four blocks: an ids-alone one,
    ``(raw, n, n_words, strings, spans_from, source)``, as ``(raw, n, n_words, strings)``
    with its offsets and words worked out by ``spans_from``; any other as it is."""
    if not _deferred(result):
        return result
    return (full_raw(result[4], result[5], result[0], result[1]),) + result[1:4]


cdef int _put_ids(list ids, Py_ssize_t at, tuple result, Py_ssize_t first, Py_ssize_t stop) except -1:
    """The ids of tokens ``first:stop`` of one sequence of :func:`pair_encoding`, from position ``at``."""
    cdef const int32_t* block_ids = block(result[0], result[1], 0)
    cdef Py_ssize_t i
    at -= first
    for i in range(first, stop):
        PyList_SET_ITEM_p(ids, at + i, int_ref(_shared_ptrs, _n_shared, block_ids[i]))
    return 0


cdef int _put_sequence(list types, list tokens, list words, list offsets, list special, Py_ssize_t at,
                       tuple result, Py_ssize_t first, Py_ssize_t stop, strings, object type_id) except -1:
    """Tokens ``first:stop`` of one sequence of :func:`pair_encoding` into its lists but the ids,
    from position ``at``."""
    cdef bytes raw = result[0]
    cdef Py_ssize_t n = result[1]
    cdef list own_tokens = result[4] if len(result) > 4 else None
    cdef const int32_t* block_ids = block(raw, n, 0)
    cdef const int32_t* starts = block(raw, n, 1)
    cdef const int32_t* ends = block(raw, n, 2)
    cdef const int32_t* block_words = block(raw, n, 3)
    cdef list dense = strings if type(strings) is list else None
    cdef Py_ssize_t i
    cdef tuple span = None
    cdef object zero = int_object(0)
    at -= first
    for i in range(first, stop):
        _put(types, at + i, type_id)
        if own_tokens is not None:
            obj = own_tokens[i]
        elif dense is not None and 0 <= block_ids[i] < len(dense):
            obj = dense[block_ids[i]]
        else:
            obj = PyObject_GetItem(strings, int_object(block_ids[i]))
        _put(tokens, at + i, obj)
        PyList_SET_ITEM_p(words, at + i, int_ref(_shared_ptrs, _n_shared, block_words[i]))
        span = span_tuple(starts[i], ends[i], span)
        _put(offsets, at + i, span)
        _put(special, at + i, zero)
    return 0


def trim_spans(list offsets not None, list tokens not None, Py_ssize_t first, Py_ssize_t stop,
               bint add_prefix_space, dict counts not None, count_spaces, tuple none) -> None:
    """``offsets[first:stop]`` shrunk in place to leave out each token's leading and trailing space
    chars (``processors.trim_span``'s loop, here for speed: a pair's encoding trims every token).

    ``counts[token]`` is ``(leading, trailing)`` (``count_spaces(token)``
    works it out and keeps it when missing); ``none`` is the ``(0, 0)``
    counts object of tokens with none. A single leading space is kept on
    the first token, or one starting at 0, with ``add_prefix_space``.

    >>> offsets = [(0, 0), (0, 6), (6, 12)]
    >>> none = (0, 0)
    >>> trim_spans(offsets, ["<s>", "Ġhello", "Ġworld"], 1, 3, True, {"Ġhello": (1, 0), "Ġworld": (1, 0)}, None, none)
    >>> offsets
    [(0, 0), (0, 6), (7, 12)]
    """
    cdef Py_ssize_t i, leading, trailing, start, end
    cdef object token, found
    cdef tuple span
    if not 0 <= first <= stop <= min(len(offsets), len(tokens)):
        raise ValueError(f"trim_spans: {first}..{stop} is not within the {len(offsets)} offsets")
    for i in range(first, stop):
        token = tokens[i]
        found = counts.get(token)
        if found is None:
            found = count_spaces(token)
        if found is none:
            continue
        leading, trailing = found
        span = offsets[i]
        start, end = span[0], span[1]
        if leading:
            if (i == first or start == 0) and add_prefix_space and leading == 1:
                leading = 0
            start = min(start + leading, end)
        if trailing and end >= trailing:
            end = max(end - trailing, start)
        offsets[i] = span_tuple(start, end, None)


def ids_bytes(bytes raw not None, Py_ssize_t n) -> bytes:
    """The ids block alone (int32, machine order)."""
    cdef const int32_t* ids = block(raw, n, 0)
    return PyBytes_FromStringAndSize(<const char*>ids, 4 * n)



@cython.no_gc
cdef class Basis:
    """What lazy encodings build their lists from, besides their own raw: shared by all the
    encodings of a call or batch, so each encoding holds one reference, not five.

    ``strings[id]`` is each id's token; ``frame`` the special tokens around
    the sequence (None: none); ``word_index`` (pre-tokenized input) replaces
    every word index; ``spans_from`` (a SpanSource), for an encoding that
    holds its ids alone, works out its offsets and words from ``source``
    (a single text's; a batch job's encodings each hold their own text).

    >>> b = basis_for({5: "hi"}, None, None, None, None)
    >>> b.strings, b is basis_for(b.strings, None, None, None, None)
    ({5: 'hi'}, True)
    """

    cdef Basis with_frame(self, object frame):
        """This basis with ``frame`` instead (padding a never-read encoding), made once per frame."""
        if frame is self.frame:
            return self
        if self.framed is None:
            self.framed = {}
        cdef Basis out = self.framed.get(id(frame))
        if out is None or out.frame is not frame:
            out = _new_basis(self.strings, frame, self.word_index, self.spans_from, self.source)
            if len(self.framed) < 1024:     # (fixed padding makes one per length at most)
                self.framed[id(frame)] = out
        return out

    cdef Basis settled(self):
        """This basis without its SpanSource and source: for an encoding whose raw is full now."""
        if self.spans_from is None:
            return self
        if self.settled_form is None:
            self.settled_form = basis_for(self.strings, self.frame, self.word_index, None, None)
        return self.settled_form


cdef inline Basis _new_basis(object strings, object frame, object word_index, SpanSource spans_from, object source):
    cdef Basis basis = Basis.__new__(Basis)
    basis.strings = strings
    basis.frame = frame
    basis.word_index = word_index
    basis.spans_from = spans_from
    basis.source = source
    return basis


# The basis made last without a SpanSource: the encodings of one batch, or of one tokenizer's
# calls, come one after another with the same strings and frame. (It keeps the last
# tokenizer's token strings and frame alive until another is asked for.)
cdef Basis _last_basis = _new_basis(None, None, None, None, None)


cpdef Basis basis_for(object strings, object frame, object word_index, SpanSource spans_from, object source):
    """The :class:`Basis` of these: the one made last when it holds the same objects and no
    SpanSource (a basis with one is its caller's to share: a batch job's chunk, or one text)."""
    global _last_basis
    cdef Basis last = _last_basis
    if spans_from is not None:
        return _new_basis(strings, frame, word_index, spans_from, source)
    if last.strings is strings and last.frame is frame and last.word_index is word_index:
        return last
    _last_basis = _new_basis(strings, frame, word_index, None, None)
    return _last_basis


@cython.no_gc
cdef class Lists:
    """An encoding's lists other than its ids, each None until built or assigned (see EncodingBase);
    a pair encoding's are built together from its ``pending`` :class:`PendingPair` (see :func:`_lists_of`)."""


cdef Lists _lists_of(EncodingBase e):
    """``e``'s lists, made if none yet; a pair's built first if they are pending (see
    :func:`pair_encoding`): every read or assignment of a list but the ids comes through here."""
    cdef Lists lists = e._lists
    if lists is None:
        lists = e._lists = Lists.__new__(Lists)
    elif lists.pending is not None:
        _settle_pair(lists)
    return lists


cdef Lists _bare_lists(EncodingBase e):
    """``e``'s lists, made if none yet, a pending pair's left pending (for the overflowing parts)."""
    if e._lists is None:
        e._lists = Lists.__new__(Lists)
    return e._lists


@cython.no_gc
# A batch makes an encoding a text and its caller usually drops them all together: kept for reuse
# (at most 2 MB of them), the next batch's are not taken from, and given back to, the allocator one
# by one. (Encoding and EncodingWithIds are this size too, and share it.)
@cython.freelist(32768)
cdef class EncodingBase:
    """The storage of :class:`pieceworks.Encoding`, and its most-read fields as C getters.

    An encoding holds its ids list (``_ids``; None while a lazy one has not
    built it), its other lists in one side object (``_lists``, made when the
    first is built or assigned), and what a lazy one builds them from: its
    ``_data`` (the raw encoding, or the text of a batch job's encoding that
    holds its ids list alone: see :func:`make_with_ids`), ``_n`` tokens, and
    a :class:`Basis` shared with the other encodings of its batch. So an
    encoding of a batch is a 64-byte object: a batch of short lines makes
    one per line, and its size, more than the work, is what each costs.

    ``ids``, ``tokens``, ``offsets``, ``words`` and ``attention_mask`` build
    here, with no Python frame: a short text's encoding is read in about the
    time a Python property takes just to be called. Encoding (a subclass)
    holds the rest.

    Encodings are not tracked by the cyclic garbage collector (the type
    takes no part in it: no GC header, no tracking), and neither are the five lists above (they hold only
    ints, strs, None and int pairs): a program that keeps millions of them
    does not have the collector walk them all, over and over, as they pile
    up (it cost about as much as the encoding itself on short lines). The
    price: a cycle made by putting an encoding, or a container that refers
    back to it or to one of those lists, inside them is not collected.

    >>> e = make_raw(EncodingBase, pack([5], [0], [2], [0]), 1, {5: "hi"}, None, None)
    >>> e.ids, e.tokens, e.offsets, e.words, e._ids
    ([5], ['hi'], [(0, 2)], [0], [5])
    """

    # (No __cinit__: the allocation zeroes _n, and a __cinit__ would cost each of the
    # millions of encodings a batch makes an argument check.)

    def __len__(self):
        if self._ids is None:       # lazy: no need to build the ids to count them
            return self._n + frame_size(self)
        return len(self._ids)

    def _never_read(self):
        return never_read(self)

    def _ready_spans(self):
        """:meth:`spans_ready` from Python: after it ``_raw`` holds all four blocks."""
        spans_ready(self)

    # -- what a lazy encoding is built from, for Encoding's Python code and for tests --
    @property
    def _raw(self):
        """The raw encoding (bytes), or None."""
        return raw_of(self)

    @property
    def _frame(self):
        """The frame of a lazy encoding (None: no special tokens, or an eager encoding)."""
        return frame_of(self)

    @property
    def _spans_from(self):
        """The SpanSource that will work out the offsets and words of an ids-only encoding, or None."""
        return None if self._basis is None else self._basis.spans_from

    @property
    def _source(self):
        """What the SpanSource works them out from (the text), or None."""
        if self._basis is None or self._basis.spans_from is None:
            return None
        return self._data if self._no_raw else self._basis.source

    @property
    def _pair_pending(self):
        """Whether this is a pair encoding whose lists but the ids are not built yet (see :func:`pair_encoding`)."""
        return self._lists is not None and self._lists.pending is not None

    @property
    def _overflowing(self):
        """The overflowing list as set or built so far (None: not yet)."""
        return overflowing_parts(self)

    @property
    def ids(self):
        """The token ids."""
        if self._ids is None:
            self._ids = built_ids(self)
        return self._ids

    @ids.setter
    def ids(self, value):
        self._ids = value

    @property
    def tokens(self):
        """The token strings."""
        cdef object frame
        cdef Lists lists = _lists_of(self)
        if lists.tokens is None:
            spans_ready(self)      # (an encoding that holds its ids list alone: its tokens come from the text)
            frame = frame_of(self)
            strings = self._basis.strings
            lists.tokens = (_token_list(raw_of(self), self._n, strings, None, None) if frame is None else
                            _token_list(raw_of(self), self._n, strings, frame.tokens_before, frame.tokens_after))
            untracked(lists.tokens)
        return lists.tokens

    @tokens.setter
    def tokens(self, value):
        _lists_of(self).tokens = value

    @property
    def offsets(self):
        """The (start, end) char span of each token in its input."""
        cdef object frame
        cdef Py_ssize_t nb
        cdef Lists lists = _lists_of(self)
        if lists.offsets is None:
            spans_ready(self)
            frame = frame_of(self)
            if frame is None:
                lists.offsets = _offset_list(raw_of(self), self._n, 0, 0, 0)
            else:
                nb = len(frame.ids_before)
                lists.offsets = _offset_list(raw_of(self), self._n, 0, nb, len(frame.ids_after))
                if frame.trim is not None:      # (a processor that trims offsets: ByteLevel's)
                    frame.trim(lists.offsets, self.tokens, nb, nb + self._n)
            untracked(lists.offsets)
        return lists.offsets

    @offsets.setter
    def offsets(self, value):
        cdef Lists lists = _lists_of(self)
        lists.offsets = value
        lists.spans_of = None       # (the same list set again may have changed in place)

    @property
    def words(self):
        """The word index of each token (None for special tokens)."""
        cdef object frame
        cdef Py_ssize_t word_index
        cdef Lists lists = _lists_of(self)
        if lists.words is None:
            spans_ready(self)
            frame = frame_of(self)
            word_index = -1 if self._basis.word_index is None else self._basis.word_index
            lists.words = (_word_list(raw_of(self), self._n, word_index, 0, 0) if frame is None else
                           _word_list(raw_of(self), self._n, word_index, len(frame.ids_before), len(frame.ids_after)))
            untracked(lists.words)
        return lists.words

    @words.setter
    def words(self, value):
        cdef Lists lists = _lists_of(self)
        lists.words = value
        lists.words_of = None       # (as the offsets' setter)

    @property
    def attention_mask(self):
        """0 for padding, else 1."""
        cdef object frame
        cdef Py_ssize_t pads_before, pads_after, size
        cdef Lists lists = _lists_of(self)
        if lists.attention_mask is None:
            frame = frame_of(self)
            if frame is None:
                lists.attention_mask = [1] * self._n
            else:
                pads_before, pads_after, size = frame.pads_before, frame.pads_after, frame.size
                attended = [1] * (self._n + size - pads_before - pads_after)
                lists.attention_mask = (([0] * pads_before + attended + [0] * pads_after)
                                        if pads_before or pads_after else attended)
            untracked(lists.attention_mask)
        return lists.attention_mask

    @attention_mask.setter
    def attention_mask(self, value):
        _lists_of(self).attention_mask = value


cdef inline object frame_of(EncodingBase self):
    """The frame of a lazy encoding (None: no special tokens; always None for an eager one)."""
    return None if self._basis is None else self._basis.frame


cdef inline Py_ssize_t frame_size(EncodingBase self) except -1:
    frame = frame_of(self)
    return 0 if frame is None else <Py_ssize_t>frame.size


cdef inline object raw_of(EncodingBase self):
    """The raw encoding (None for an eager encoding, or a batch job's before its spans are read)."""
    return self._data if not self._no_raw else None


cdef list built_ids(EncodingBase self):
    """The ids list of a lazy encoding whose list is not built yet (untracked: ints only)."""
    cdef object frame
    cdef list ids
    if self._no_raw:
        spans_ready(self)
    frame = frame_of(self)
    ids = (_id_list(raw_of(self), self._n, None, None) if frame is None
           else _id_list(raw_of(self), self._n, frame.ids_before, frame.ids_after))
    untracked(ids)
    return ids


cdef bint never_read(EncodingBase self):
    """A lazy encoding none of whose lists was built (or assigned) yet.

    Overflowing parts that raw truncation made (never-read lazy encodings
    themselves) do not count as read.
    """
    cdef Lists lists = self._lists
    if self._basis is None or self._no_raw or self._ids is not None:
        return False
    if lists is None:
        return True
    if not (lists.type_ids is None and lists.tokens is None and lists.words is None and lists.offsets is None
            and lists.special_tokens_mask is None and lists.attention_mask is None and lists.ranges is None):
        return False
    if lists.overflowing is None:
        return True
    if type(lists.overflowing) is not list:
        return False
    for part in <list>lists.overflowing:
        if not isinstance(part, EncodingBase) or overflowing_parts(<EncodingBase>part) is not None \
                or not never_read(<EncodingBase>part):
            return False
    return True


cdef object overflowing_parts(EncodingBase self):
    """The overflowing list as set or built (None: none yet); parts left for later
    (:func:`defer_overflowing`) are made now."""
    if self._lists is None:
        return None
    parts = self._lists.overflowing
    if type(parts) is PendingParts:
        return _made_parts(self._lists, <PendingParts>parts)
    return parts


@cython.no_gc
cdef class PendingParts:
    """Overflowing parts made when first read (see :func:`defer_overflowing`): ``make(pads)``
    gives them, padded by each padding asked for meanwhile in turn."""
    cdef object make
    cdef list pads


def defer_overflowing(EncodingBase e not None, make) -> None:
    """Leave ``e``'s overflowing parts to ``make(pads)`` (a list of encodings), called when they
    are first read, with the arguments of each :meth:`Encoding.pad` called meanwhile, in turn
    (:func:`pad_parts_later`), to pad them by. A truncated pair's main encoding is quick to build
    and its parts are not (Hugging Face's every combination of both sequences' windows), and
    most callers never read them.

    >>> from pieceworks.frame import PLAIN_PAIR_FRAME
    >>> strings = {5: "a", 6: "b"}
    >>> e = pair_encoding(EncodingBase, (pack([5, 6], [0, 1], [1, 2], [0, 1]), 2, 2, strings),
    ...                   (pack([6], [0], [1], [0]), 1, 1, strings), PLAIN_PAIR_FRAME, keep_a=(1, 2))
    >>> defer_overflowing(e, lambda pads: [f"made, padded to {[how[0] for how in pads]}"])
    >>> pad_parts_later(e, (3, "right", 0, 0, "[PAD]")), pad_parts_later(e, (5, "left", 0, 0, "[PAD]"))
    (True, True)
    >>> e.tokens, e._overflowing
    (['b', 'b'], ['made, padded to [3, 5]'])
    """
    cdef PendingParts pending = PendingParts.__new__(PendingParts)
    if not callable(make):
        raise TypeError(f"defer_overflowing: make must be callable, got {type(make).__name__}")
    pending.make = make
    pending.pads = []
    _bare_lists(e).overflowing = pending


def pad_parts_later(EncodingBase e not None, tuple how not None) -> bool:
    """Whether ``e``'s overflowing parts are left for later; if so, ``how`` (``Encoding.pad``'s
    arguments after ``self``) is kept and applied to each part once they are made."""
    if e._lists is None or type(e._lists.overflowing) is not PendingParts:
        return False
    (<PendingParts>e._lists.overflowing).pads.append(how)
    return True


cdef list _made_parts(Lists lists, PendingParts pending):
    cdef list parts = pending.make(list(pending.pads))
    if lists.overflowing is pending:    # (else another thread made them first: its list is the one)
        lists.overflowing = parts
    return lists.overflowing



cdef int spans_ready(EncodingBase self) except -1:
    """Work out the offsets and words of an ids-only raw encoding, once (see the module doc)."""
    cdef Basis basis = self._basis
    if basis is None or basis.spans_from is None:
        return 0
    if self._no_raw:       # (see make_with_ids: _data is its text)
        self._data = basis.spans_from.full(self._data, self._at, self._n)
        self._no_raw = False
    else:
        self._data = full_raw(basis.spans_from, basis.source, self._data, self._n)
    self._basis = basis.settled()
    return 0


cdef inline void untracked(object obj):
    PyObject_GC_UnTrack(<void*>obj)


cpdef EncodingBase make_raw(type cls, bytes raw, Py_ssize_t n, object strings, object word_index, object frame,
                            SpanSource spans_from=None, object source=None):
    """A lazy encoding (of type ``cls``, EncodingBase or a subclass) of the ``n`` tokens in ``raw``.

    ``frame`` None: no special tokens around them. ``spans_from``: ``raw``
    holds the ids alone, and ``spans_from`` works out the rest from
    ``source`` when first asked. Untracked by the collector, as
    :class:`EncodingBase` says.
    """
    if n < 0 or n > INT32_MAX:
        raise ValueError(f"a raw encoding cannot hold {n} tokens")
    block(raw, n, 0 if spans_from is not None else 3)        # (raises unless raw holds n tokens)
    cdef EncodingBase self = <EncodingBase>cls.__new__(cls)
    self._n = <int32_t>n
    self._basis = basis_for(strings, frame, word_index, spans_from, None if spans_from is None else source)
    self._data = raw
    return self


cpdef EncodingBase make_with_ids(type cls, list ids, Py_ssize_t n, object strings, object frame,
                                 SpanSource spans_from, object source, Py_ssize_t at):
    """A lazy encoding of ``n`` tokens that holds its built ``ids`` list (the frame's ids around
    them) and no raw: ``spans_from.full(source, at, n)`` makes the raw when another list is first
    read (a batch job's chunk, shared by its texts' encodings: ``at`` is where this one's begin).

    Its other lists never derive from ``ids``, so a caller that changes that
    list (padding does) does not change them. Untracked, as :func:`make_raw`.
    A kernel making many with one SpanSource shares one basis among them
    (:func:`lazy_with_ids`).
    """
    if spans_from is None:
        raise ValueError("make_with_ids: needs a SpanSource")
    return lazy_with_ids(cls, ids, n, basis_for(strings, frame, None, spans_from, None), source, at)


cdef EncodingBase lazy_with_ids(type cls, list ids, Py_ssize_t n, Basis basis, object source, Py_ssize_t at):
    """:func:`make_with_ids` on a basis of strings, frame and SpanSource the caller made (one for a batch chunk)."""
    if not 0 <= n <= INT32_MAX or not 0 <= at <= INT32_MAX or basis.spans_from is None:
        raise ValueError(f"make_with_ids: need 0 <= n, at < 2**31 and a SpanSource, got n {n}, at {at}, "
                         f"spans_from {basis.spans_from!r}")
    cdef EncodingBase self = <EncodingBase>cls.__new__(cls)
    self._n = <int32_t>n
    self._at = <int32_t>at
    self._no_raw = True
    self._basis = basis
    self._data = source
    self._ids = ids
    return self


cpdef EncodingBase lazy_copy(EncodingBase e):
    """A copy of a never-read lazy encoding: the same raw buffer and basis (raw truncation's
    overflowing parts copied alike, by their ``copy``).

    >>> e = make_raw(EncodingBase, pack([5], [0], [2], [0]), 1, {5: "hi"}, None, None)
    >>> c = lazy_copy(e); c is e, c.tokens, c._raw is e._raw
    (False, ['hi'], True)
    """
    cdef EncodingBase out = <EncodingBase>type(e).__new__(type(e))
    cdef object parts = overflowing_parts(e)
    out._basis = e._basis
    out._data = e._data
    out._n = e._n
    out._at = e._at
    out._no_raw = e._no_raw
    if parts is not None:
        _lists_of(out).overflowing = [part.copy() for part in parts]
    return out


def fill_encodings(type cls, list out, where, list results, object frame, tuple truncation=None,
                   type ids_cls=None):
    """``out[where[k]]``: a lazy ``cls`` encoding (:func:`make_raw`) of ``results[k]``.

    ``results[k]`` is ``(raw, n_tokens, n_words, strings)`` (a plan's
    ``encode_raw_batch``), or with a fifth item, the tokens list when not
    every token is spelled by ``strings[id]`` (an unknown char spelled by
    its own text), or anything else to leave that place None.
    ``truncation``: None, or ``(max_length, stride, left, cut)`` (see
    :func:`truncated`); a result longer than ``max_length`` is cut there if
    ``cut`` and holds no tokens list, else left None. ``ids_cls``: one that
    needs no cut is made an ``ids_cls`` with its ids list built now (for
    callers that read them all: ``encoding.EncodingWithIds`` keeps them in
    a slot); a cut one stays a lazy ``cls``.

    >>> out = [None, None, None]
    >>> fill_encodings(EncodingBase, out, [0, 1], [(pack([5], [0], [2], [0]), 1, 1, {5: "hi"}),
    ...                                            (pack([0], [0], [1], [0]), 1, 1, {0: "<unk>"}, ["?"])], None)
    >>> out[0].tokens, out[1].tokens, out[1].ids, none_positions(out)
    (['hi'], ['?'], [0], [2])
    """
    cdef Py_ssize_t k, n
    cdef object result, encoding
    cdef tuple parts
    if len(where) != len(results):
        raise ValueError("fill_encodings: where and results differ in length")
    for k in range(len(results)):
        result = results[k]
        if type(result) is not tuple or not 4 <= len(<tuple>result) <= 5:
            continue
        parts = <tuple>result
        n = parts[1]
        if len(parts) == 5 and (truncation is not None and n > <Py_ssize_t>truncation[0]
                                or type(parts[4]) is not list or len(<list>parts[4]) != n):
            continue    # (its own tokens, cut: the long way)
        if ids_cls is not None and (truncation is None or n <= <Py_ssize_t>truncation[0]):
            encoding = make_raw(ids_cls, parts[0], n, parts[3], None, frame)
            (<EncodingBase>encoding)._ids = built_ids(<EncodingBase>encoding)
        else:
            encoding = encoding_of(cls, parts[0], n, parts[3], frame, truncation)
        if len(parts) == 5:
            _lists_of(<EncodingBase>encoding).tokens = _framed_tokens(<list>parts[4], frame)
        out[where[k]] = encoding


cdef list _framed_tokens(list tokens, object frame):
    """``tokens`` between ``frame``'s special tokens (None: no frame), untracked (strs only)."""
    cdef list out = tokens if frame is None else frame.around(tokens, frame.tokens_before, frame.tokens_after)
    untracked(out)
    return out


cpdef object encoding_of(type cls, bytes raw, Py_ssize_t n, object strings, object frame, tuple truncation,
                         SpanSource spans_from=None, object source=None):
    """A lazy encoding of a raw result, cut as ``truncation`` says (see :func:`fill_encodings`), or None.

    None: the result is longer than truncation allows and may not be cut
    here (the long way decides). ``spans_from``, ``source``: ``raw`` holds
    the ids alone (see :func:`make_raw`); a result to cut gets its offsets now.
    """
    if truncation is None or n <= <Py_ssize_t>truncation[0]:
        return make_raw(cls, raw, n, strings, None, frame, spans_from, source)
    if not truncation[3]:
        return None
    if spans_from is not None:
        raw = full_raw(spans_from, source, raw, n)
    return truncated(cls, raw, n, strings, frame, truncation[0], truncation[1], truncation[2])


def truncated(type cls, bytes raw not None, Py_ssize_t n, object strings, object frame, Py_ssize_t max_length,
              Py_ssize_t stride, bint left):
    """A lazy encoding of the ``n`` tokens in ``raw`` cut to ``max_length``, the rest in overflowing parts.

    The parts are :meth:`Encoding.truncate`'s: windows of ``max_length``
    tokens that overlap by ``stride``, from the start (or from the end, if
    ``left``); each is a lazy encoding with the same ``frame``, but for the
    type id of an overflowing part's own tokens (``frame.for_overflow()``).

    >>> e = truncated(EncodingBase, pack(range(5), range(5), range(1, 6), range(5)), 5, None, None, 2, 1, False)
    >>> e.ids, [o.ids for o in e._overflowing]
    ([0, 1], [[1, 2], [2, 3], [3, 4]])
    """
    cdef list parts = []
    if max_length <= 0 or stride < 0 or stride >= max_length:
        raise ValueError(f"truncated: need 0 <= stride < max_length, got stride {stride}, max_length {max_length}")
    block(raw, n, 3)        # (raises unless raw holds all four blocks of n tokens)
    if n <= max_length:
        return make_raw(cls, raw, n, strings, None, frame)
    cdef object overflow_frame = None if frame is None else frame.for_overflow()
    for start, stop in truncation_windows(n, max_length, stride, "left" if left else "right"):
        parts.append(make_raw(cls, _slice(raw, n, start, stop), stop - start, strings, None,
                              overflow_frame if parts else frame))
    first = <EncodingBase>parts[0]
    _lists_of(first).overflowing = parts[1:]
    return first


def check_stride(stride, max_length):
    """Raise unless a sequence cut to ``max_length`` tokens can have overflowing windows that
    overlap by ``stride`` (what :meth:`Encoding.truncate` needs)."""
    if stride >= max_length:
        raise ConfigError(f"truncation stride ({stride}) must be smaller than max_length ({max_length})",
                          fix="lower the stride or raise max_length")


def truncation_windows(n, max_length, stride, direction):
    """The ``(start, stop)`` token windows :meth:`Encoding.truncate` cuts ``n`` tokens into: the
    kept ones first, then each overflowing part's, ``max_length`` long and overlapping by
    ``stride``, from the start (``"right"``) or from the end (``"left"``); 0 keeps none and makes
    the whole one part.

    >>> truncation_windows(5, 2, 1, "right"), truncation_windows(5, 3, 0, "left"), truncation_windows(2, 0, 0, "right")
    ([(0, 2), (1, 3), (2, 4), (3, 5)], [(2, 5), (0, 2)], [(0, 0), (0, 2)])
    """
    if max_length >= n:
        return [(0, n)]
    if max_length == 0:
        return [(0, 0), (0, n)]
    check_stride(stride, max_length)
    step = max_length - stride
    parts = []
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
    return parts


cdef bytes _slice(bytes raw, Py_ssize_t n, Py_ssize_t start, Py_ssize_t stop):
    """Tokens ``start:stop`` of a raw encoding of ``n`` (each of its four blocks cut alike)."""
    cdef Py_ssize_t m = stop - start, b
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 16 * m)
    cdef int32_t* dst = <int32_t*>PyBytes_AS_STRING(out)
    cdef const int32_t* src = <const int32_t*>PyBytes_AS_STRING(raw)
    for b in range(4):
        memcpy(dst + b * m, src + b * n + start, 4 * m)
    return out


def pad_never_read(list encodings, Py_ssize_t length, str direction not None, pad_id, pad_type_id, pad_token) -> list:
    """Pad each lazy, never-read encoding to ``length`` tokens through its frame; return the others.

    The padding joins the frame (``Frame.padded``: made once per frame and
    length), so the lists stay unbuilt, as :meth:`Encoding.pad` does for one
    encoding; the caller pads the encodings returned the long way.
    """
    cdef dict padded = {}
    cdef list rest = []
    cdef EncodingBase e
    cdef Py_ssize_t missing
    for obj in encodings:
        if not isinstance(obj, EncodingBase) or not never_read(<EncodingBase>obj) or frame_of(<EncodingBase>obj) is None:
            rest.append(obj)
            continue
        e = <EncodingBase>obj
        _pad_frame(e, length, padded, direction, pad_id, pad_type_id, pad_token)
        for part in overflowing_parts(e) or ():   # raw truncation's parts: padded to the same length
            _pad_frame(<EncodingBase>part, length, padded, direction, pad_id, pad_type_id, pad_token)
    return rest


cdef void _pad_frame(EncodingBase e, Py_ssize_t length, dict padded, str direction, pad_id, pad_type_id,
                     pad_token) except *:
    """Pad ``e`` to ``length`` tokens by its frame (``padded``: the frames made so far, by frame and count)."""
    cdef object own = frame_of(e)
    cdef Py_ssize_t missing = length - (e._n + <Py_ssize_t>own.size)
    if missing <= 0:
        return
    key = (own, missing)
    frame = padded.get(key)
    if frame is None:
        frame = padded[key] = own.padded(missing, direction, pad_id, pad_type_id, pad_token)
    e._basis = e._basis.with_frame(frame)


def remap_offsets(bytes raw not None, Py_ssize_t n, const int64_t[::1] seg_starts, const int64_t[::1] seg_shift,
                  const int64_t[::1] seg_map, const int32_t[::1] map_starts, const int32_t[::1] map_ends) -> bytes:
    """A copy of ``raw`` whose offsets into a normalized text point into the original text instead.

    The normalized text is cut into segments, segment ``k`` starting at char
    ``seg_starts[k]`` (the first at 0, in order). Where ``seg_map[k] < 0``
    its chars only moved: original = normalized + ``seg_shift[k]``; else
    normalized char ``i`` of it came from the original span
    ``map_starts[j], map_ends[j]`` (``j = seg_map[k] + i - seg_starts[k]``)
    moved by ``seg_shift[k]``.
    A token covers the original span from its first char's start to its
    last char's end.

    >>> from array import array
    >>> raw = pack([7, 8], [0, 1], [1, 3], [0, 1])   # normalized "abc": its b was "b" + a mark
    >>> out = remap_offsets(raw, 2, array("q", [0, 1, 2]), array("q", [0, 1, 1]), array("q", [-1, 0, -1]),
    ...                     array("i", [0]), array("i", [2]))
    >>> offset_list(out, 2, 0)
    [(0, 1), (1, 4)]
    """
    cdef Py_ssize_t i, k, segments = seg_starts.shape[0], near = 0
    cdef bytes out
    cdef int32_t* dst
    cdef int64_t s, e
    if segments == 0 or seg_shift.shape[0] != segments or seg_map.shape[0] != segments or seg_starts[0] != 0:
        raise ValueError("remap_offsets: one start, shift and map per segment, the first at 0")
    if map_starts.shape[0] != map_ends.shape[0]:
        raise ValueError("remap_offsets: map_starts and map_ends differ in length")
    block(raw, n, 3)
    out = PyBytes_FromStringAndSize(PyBytes_AS_STRING(raw), 16 * n)
    dst = <int32_t*>PyBytes_AS_STRING(out)
    for i in range(n):
        s = dst[n + i]
        e = dst[2 * n + i]
        dst[n + i] = <int32_t>_original(s, True, seg_starts, seg_shift, seg_map, map_starts, map_ends, &near)
        dst[2 * n + i] = <int32_t>(_original(e - 1, False, seg_starts, seg_shift, seg_map, map_starts, map_ends,
                                             &near) if e > s else dst[n + i])
    return out


def remap_spans(bytes raw not None, Py_ssize_t n, bytes spans not None) -> bytes:
    """A copy of ``raw`` whose offsets into a normalized text point into the original text instead,
    ``spans`` holding, for each normalized char, the ``(start, end)`` int32 pair (machine order)
    of the original chars it came from (``aligned_nfc.FormTables.aligned``'s pairs). A token
    covers the original span from its first char's start to its last char's end, as in
    :func:`remap_offsets`.

    >>> from array import array
    >>> raw = pack([7, 8], [0, 1], [1, 3], [0, 1])   # normalized "abc": its b was "b" + a mark
    >>> offset_list(remap_spans(raw, 2, array("i", [0, 1, 1, 3, 3, 4]).tobytes()), 2, 0)
    [(0, 1), (1, 4)]
    """
    cdef Py_ssize_t i, chars = PyBytes_GET_SIZE(spans) // 8
    cdef const int32_t* starts = block(raw, n, 1)
    cdef const int32_t* ends = block(raw, n, 2)
    for i in range(n):
        if not 0 <= starts[i] <= ends[i] <= chars:
            raise ValueError(f"remap_spans: token {i} spans {starts[i]}:{ends[i]}, "
                             f"outside the {chars} chars the spans cover")
    out = PyBytes_FromStringAndSize(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
    cdef int32_t* blocks = <int32_t*>PyBytes_AS_STRING(out)
    spans_to_original(blocks + n, blocks + 2 * n, n, <const int32_t*>PyBytes_AS_STRING(spans), chars)
    return out


cdef void spans_to_original(int32_t* starts, int32_t* ends, Py_ssize_t n, const int32_t* spans,
                            Py_ssize_t chars) noexcept nogil:
    """:func:`remap_spans` in place on ``n`` tokens' ``starts`` and ``ends``, unchecked: they must lie
    inside the ``chars`` chars ``spans`` covers. (An empty token stays empty, where the char at its
    place, or the text's end, came from.)"""
    cdef Py_ssize_t i
    cdef int32_t s, e
    for i in range(n):
        s = starts[i]
        e = ends[i]
        if e > s:
            starts[i] = spans[2 * s]
            ends[i] = spans[2 * e - 1]
        else:
            starts[i] = ends[i] = spans[2 * s] if s < chars else spans[2 * chars - 1] if chars else 0


cdef int64_t _original(int64_t pos, bint start, const int64_t[::1] seg_starts, const int64_t[::1] seg_shift,
                       const int64_t[::1] seg_map, const int32_t[::1] map_starts,
                       const int32_t[::1] map_ends, Py_ssize_t* near) except? -1:
    """The original start (or, ``start`` False, end) of normalized char ``pos``.

    ``near``: the segment the last call found, where this search starts (and
    where it leaves the one it finds): tokens come in text order, so the
    segment is nearly always that one or a few after it. A binary search
    from there cost a cache miss a step on a text with a segment every
    other char (a megabyte in NFD: a third of its encoding time).
    """
    cdef Py_ssize_t segments = seg_starts.shape[0], lo = near[0], hi, mid, j, step = 1
    if lo < segments and seg_starts[lo] <= pos:
        while lo + step < segments and seg_starts[lo + step] <= pos:     # gallop forward
            lo += step
            step *= 2
        hi = min(lo + step, segments)
    else:
        lo, hi = 0, segments
    while hi - lo > 1:              # the last segment starting at or before pos
        mid = (lo + hi) // 2
        if seg_starts[mid] <= pos:
            lo = mid
        else:
            hi = mid
    near[0] = lo
    if seg_map[lo] < 0:
        return pos + seg_shift[lo] + (0 if start else 1)
    j = seg_map[lo] + (pos - seg_starts[lo])
    if not 0 <= j < map_starts.shape[0]:
        raise ValueError(f"remap_offsets: char {pos} falls outside its segment's map")
    return (map_starts[j] if start else map_ends[j]) + seg_shift[lo]


def none_positions(list items) -> list:
    """The indices of the items that are None (by identity: an Encoding's ``==`` is not asked).

    >>> none_positions([None, 1, None])
    [0, 2]
    """
    cdef Py_ssize_t k
    return [k for k in range(len(items)) if items[k] is None]


def untrack(obj) -> None:
    """Take ``obj`` out of the cyclic garbage collector's sight (it must not be able to join a cycle).

    A lazy Encoding holds bytes, ints, the shared token list, a frame and
    (byte-level, until its spans are read) its text and the kernel's span
    source: nothing that leads back to it. Untracked, the millions an encode_batch
    makes are not walked by every full collection.
    """
    PyObject_GC_UnTrack(<void*>obj)


def join(list parts, bint word_each=False) -> tuple:
    """One raw encoding of several in a row: ``(raw, n)``.

    Each part is ``(raw, n, offset_shift, word_shift)``: its offsets move by
    ``offset_shift`` chars and its word indices by ``word_shift``; with
    ``word_each``, each of its tokens is word ``word_shift`` (a pre-tokenized
    input's words, each a word whatever its pre-tokenizer cut in it).

    >>> raw, n = join([(pack([1], [0], [2], [0]), 1, 0, 0), (pack([2], [0], [3], [0]), 1, 5, 1)])
    >>> n, offset_list(raw, n, 0), word_list(raw, n, -1)
    (2, [(0, 2), (5, 8)], [0, 1])
    >>> raw, n = join([(pack([1, 2], [0, 1], [1, 2], [0, 1]), 2, 0, 0), (pack([3], [0], [1], [0]), 1, 0, 1)], True)
    >>> offset_list(raw, n, 0), word_list(raw, n, -1)
    ([(0, 1), (1, 2), (0, 1)], [0, 0, 1])
    """
    return _join(parts, word_each, False)


cpdef tuple join_words(list results):
    """:func:`join` of the raw results (``(raw, n, ...)``, offsets in itself) of a pre-tokenized
    sequence's words: ``(raw, n)``, each token of result ``j`` word ``j``, no offset moved.

    >>> raw, n = join_words([(pack([1, 2], [0, 1], [1, 2], [0, 1]), 2, 1), (pack([3], [0], [1], [0]), 1, 1)])
    >>> offset_list(raw, n, 0), word_list(raw, n, -1)
    ([(0, 1), (1, 2), (0, 1)], [0, 0, 1])
    """
    return _join(results, True, True)


def joined_words(list results) -> tuple:
    """The raw results of a pre-tokenized sequence's words (``(raw, n, n_words, strings[, tokens])``,
    each word encoded alone) as one, ``(raw, n, n_words, strings[, tokens])``, each word's tokens
    that word; None for none, or for a word the plan left (None).

    >>> made = joined_words([(pack([5], [0], [2], [0]), 1, 1, {5: "hi"}), (pack([5], [0], [2], [0]), 1, 1, {5: "hi"})])
    >>> made[1:], offset_list(made[0], 2, 0), word_list(made[0], 2, -1)
    ((2, 2, {5: 'hi'}), [(0, 2), (0, 2)], [0, 1])
    """
    if not results or None in results:
        return None
    strings = results[0][3]
    raw, n = join_words(results)
    if max(map(len, results)) == 4:
        return raw, n, len(results), strings
    # Some word's tokens are spelled by its own text (an unknown char: Unigram): all the tokens.
    tokens = [token for result in results
              for token in (result[4] if len(result) > 4 else _token_list(result[0], result[1], strings, None, None))]
    return raw, n, len(results), strings, tokens


cdef tuple _join(list parts, bint word_each, bint words_in_order):
    """:func:`join`; ``words_in_order``: each part is a result, ``(raw, n, ...)``, shifted by no
    offset and numbered by its position (:func:`join_words`)."""
    cdef Py_ssize_t total = 0, n, at = 0, k, j = 0, offset_shift, word_shift
    cdef const int32_t* src
    for part in parts:
        total += <Py_ssize_t>part[1]
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 16 * total)
    cdef int32_t* dst = <int32_t*>PyBytes_AS_STRING(out)
    for part in parts:
        n = part[1]
        offset_shift, word_shift = (0, j) if words_in_order else (part[2], part[3])
        block(<bytes>part[0], n, 3)      # (raises unless it holds all four blocks)
        src = block(<bytes>part[0], n, 0)
        memcpy(dst + at, src, 4 * n)
        shifted_spans(src, n, offset_shift, word_shift, dst + total + at, dst + 2 * total + at,
                      dst + 3 * total + at)
        if word_each:
            for k in range(n):
                dst[3 * total + at + k] = <int32_t>word_shift
        at += n
        j += 1
    return out, total


def join_around(list found, list results, Py_ssize_t length) -> tuple:
    """One raw encoding of a text's added tokens and the raw encodings of the segments between them: ``(raw, n)``.

    ``found``: ``(start, stop, id)`` of each token, in order; ``results``:
    ``(raw, n, n_words, ...)`` of each non-empty segment of ``[0, length)``
    between them, in order. Each token is one word, each segment's words
    follow; a segment's offsets move to where it starts. :func:`join` of the
    same parts, without a packed part per token.

    >>> raw, n = join_around([(2, 5, 9)], [(pack([1], [0], [2], [0]), 1, 1), (pack([2, 3], [0, 1], [1, 2], [0, 1]), 2, 2)], 7)
    >>> id_list(raw, n), offset_list(raw, n, 0), word_list(raw, n, -1)
    ([1, 9, 2, 3], [(0, 2), (2, 5), (5, 6), (6, 7)], [0, 1, 2, 3])
    """
    cdef Py_ssize_t total = len(found), n, at = 0, pos = 0, word = 0, k = 0, stop, i
    cdef Py_ssize_t count = len(results)
    cdef const int32_t* src
    cdef tuple result, token
    for result in results:
        total += <Py_ssize_t>result[1]
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 16 * total)
    cdef int32_t* dst = <int32_t*>PyBytes_AS_STRING(out)
    for i in range(len(found) + 1):
        if i < len(found):
            token = <tuple>found[i]
            stop = token[0]
        else:
            stop = length
        if pos < stop:      # a segment before it
            if k >= count:
                raise ValueError(f"join_around: fewer results ({count}) than segments")
            result = <tuple>results[k]
            k += 1
            n = result[1]
            block(<bytes>result[0], n, 3)      # (raises unless it holds all four blocks)
            src = block(<bytes>result[0], n, 0)
            memcpy(dst + at, src, 4 * n)
            shifted_spans(src, n, pos, word, dst + total + at, dst + 2 * total + at, dst + 3 * total + at)
            at += n
            word += <Py_ssize_t>result[2]
        if i < len(found):
            dst[at] = <int32_t>token[2]
            dst[total + at] = <int32_t>token[0]
            dst[2 * total + at] = <int32_t>token[1]
            dst[3 * total + at] = <int32_t>word
            at += 1
            word += 1
            pos = token[1]
    if k != count:
        raise ValueError(f"join_around: {count} results for {k} segments")
    return out, total


cdef class CallbackSpans(SpanSource):
    """The offsets and words of an ids-only encoding made the long way when first read: ``full(source,
    at, n)`` is ``raw_of(source)``, which gives ``(raw, n)``, the whole raw encoding of the text the
    ids came from (for ids a batch joined around added tokens: the offsets wait for a reader, and
    most read only the ids).

    >>> spans = CallbackSpans(lambda text: (pack([5], [0], [len(text)], [0]), 1))
    >>> e = make_with_ids(EncodingBase, [5], 1, {5: "hi"}, None, spans, "hi", 0)
    >>> e.offsets, e.tokens
    ([(0, 2)], ['hi'])
    """

    cdef object raw_of

    def __init__(self, raw_of):
        self.raw_of = raw_of

    cdef bytes full(self, object source, Py_ssize_t at, Py_ssize_t n):
        raw, count = self.raw_of(source)
        if count != n or type(raw) is not bytes:
            raise RuntimeError(f"CallbackSpans: the text's raw encoding has {count} tokens, its ids {n}")
        return <bytes>raw


def layout_segments(list texts, list founds) -> tuple:
    """The segments between the added tokens of each text, all texts in a row: ``(segments, starts,
    counts)``, ``counts[k]`` how many are text ``k``'s (``founds[k]``: its tokens ``(start, stop, id)``,
    in order; the non-empty stretches around them, as ``Tokenizer._gaps`` cuts them).

    >>> layout_segments(["ab\\n", "\\n"], [[(2, 3, 9)], [(0, 1, 9)]])
    (['ab'], [0], [1, 0])
    """
    cdef list segments = [], starts = [], counts = []
    cdef Py_ssize_t k, at, start, before
    cdef str text
    cdef tuple token
    if len(texts) != len(founds):
        raise ValueError("layout_segments: one list of tokens per text")
    for k in range(len(texts)):
        text = <str?>texts[k]
        before = len(segments)
        at = 0
        for token in <list?>founds[k]:
            start = token[0]
            if at < start:
                segments.append(text[at:start])
                starts.append(at)
            at = token[1]
        if at < len(text):
            segments.append(text[at:])
            starts.append(at)
        counts.append(len(segments) - before)
    return segments, starts, counts


def join_layouts(list texts, list founds, list results, list counts, object strings, Py_ssize_t limit) -> list:
    """:func:`join_around` of each text's added tokens and its segments' raw encodings: a list of
    ``(raw, n, 0, strings)`` (for :func:`fill_encodings`), None, or False.

    ``results`` holds the segments' results of all texts in a row (``counts``:
    how many are each text's; :func:`layout_segments`). None where a
    segment's result is not a ``(raw, n, n_words, strings)``, or one with a
    fifth item, its own token strings (an unknown run spelled by its text:
    then the text's result has a fifth item too, all its token strings), or
    where the text joins to more than ``limit`` tokens (``limit`` < 0: none); False
    where ``strings`` does not spell one of its added tokens as the text
    does (the caller then takes a table that holds them).

    >>> texts, founds = ["ab\\n", "?"], [[(2, 3, 9)], [(0, 1, 8)]]
    >>> joined = join_layouts(texts, founds, [(pack([1], [0], [2], [0]), 1, 1, None)], [1, 0], ["", "ab", "", "", "", "", "", "", "", "\\n"], -1)
    >>> id_list(joined[0][0], joined[0][1]), offset_list(joined[0][0], joined[0][1], 0), joined[1]
    ([1, 9], [(0, 2), (2, 3)], False)
    """
    cdef list out = []
    cdef Py_ssize_t k, at = 0, count, j
    cdef str text
    cdef list mine, found
    cdef bint plain, own
    cdef tuple joined
    if not len(texts) == len(founds) == len(counts):
        raise ValueError("join_layouts: one list of tokens and one count per text")
    for k in range(len(texts)):
        text = <str?>texts[k]
        found = <list?>founds[k]
        count = counts[k]
        mine = results[at:at + count]
        at += count
        plain = len(mine) == count
        own = False
        for j in range(len(mine) if plain else 0):
            if type(mine[j]) is not tuple or not 4 <= len(<tuple>mine[j]) <= 5:
                plain = False
                break
            own = own or len(<tuple>mine[j]) == 5
        if not plain:
            out.append(None)
        elif not _spelled(strings, text, found):
            out.append(False)
        else:
            raw, n = join_around(found, mine, len(text))
            if 0 <= limit < n:
                out.append(None)
            else:
                joined = (raw, n, 0, strings, _joined_tokens(found, mine, strings, len(text))) if own else (
                    raw, n, 0, strings)
                untracked(joined)      # (bytes, ints, the strings: a batch makes one a text)
                out.append(joined)
    return out


cdef list _joined_tokens(list found, list results, object strings, Py_ssize_t length):
    """The token strings of a text :func:`join_around` joined: each segment's own (a fifth item of
    its result) or spelled by ``strings``, and each added token's."""
    cdef list out = []
    cdef Py_ssize_t i, pos = 0, k = 0, stop
    cdef tuple result, token
    for i in range(len(found) + 1):
        stop = (<tuple>found[i])[0] if i < len(found) else length
        if pos < stop:
            result = <tuple>results[k]
            k += 1
            out.extend(<list>result[4] if len(result) == 5 else
                       _token_list(<bytes>result[0], <Py_ssize_t>result[1], strings, None, None))
        if i < len(found):
            token = <tuple>found[i]
            out.append(strings[token[2]])
            pos = token[1]
    return out


cdef bint _spelled(object strings, str text, list found) except -1:
    """Whether ``strings[id]`` is the text's own ``text[start:stop]`` for each token ``(start, stop, id)``."""
    cdef tuple token
    cdef Py_ssize_t start, stop, token_id
    cdef list dense = strings if type(strings) is list else None
    for token in found:
        start, stop, token_id = token[0], token[1], token[2]
        if dense is not None:
            if not 0 <= token_id < len(dense):
                return False
            value = dense[token_id]
        else:
            value = strings.get(token_id) if strings is not None else None
        if type(value) is not str or len(<str>value) != stop - start \
                or PyUnicode_Tailmatch(text, value, start, stop, -1) != 1:
            return False
    return True
