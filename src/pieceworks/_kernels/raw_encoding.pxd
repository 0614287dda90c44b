cimport cython
from cpython.object cimport PyObject
from libc.stdint cimport int32_t, uint32_t

cdef extern from "Python.h":
    void _pw_incref "Py_INCREF"(PyObject*)
    PyObject* _pw_long_from "PyLong_FromSsize_t"(Py_ssize_t) except NULL


cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline void pw_prefetch_write(const void* p) { _mm_prefetch((const char*)p, _MM_HINT_T0); }
    static inline void pw_prefetch_read(const void* p) { _mm_prefetch((const char*)p, _MM_HINT_T0); }
    #else
    static inline void pw_prefetch_write(const void* p) { __builtin_prefetch(p, 1, 3); }
    static inline void pw_prefetch_read(const void* p) { __builtin_prefetch(p, 0, 3); }
    #endif
    """
    # Start loading the cache line at p (tables megabytes wide: a look-up is a cache miss,
    # and several started at once wait together).
    void pw_prefetch_write(const void* p) noexcept nogil
    void pw_prefetch_read(const void* p) noexcept nogil


cdef enum:
    PREFETCH_AHEAD = 8      # how many ids ahead a list fill starts loading the int it will hand out


cdef inline void prefetch_int(PyObject** table, Py_ssize_t count, Py_ssize_t value) noexcept:
    """Start loading the shared int ``value``, whose refcount :func:`int_ref` will write: the
    table spans megabytes, and a fill that waits for each int in turn spends most of its time
    on those misses (they are independent, so loading a few ahead overlaps them)."""
    if 0 <= value < count:
        pw_prefetch_write(table[value])


cdef inline void prefetch_next_ints(PyObject** table, Py_ssize_t count, const uint32_t* ids, size_t at,
                                    size_t size) noexcept:
    """:func:`prefetch_int` for the first few of ``ids[at:size]``: the start of the next list a fill
    will make (a short list, a line's, would otherwise begin each time on misses)."""
    cdef size_t k
    for k in range(at, min(at + PREFETCH_AHEAD, size)):
        prefetch_int(table, count, ids[k])


cdef inline PyObject* int_ref(PyObject** table, Py_ssize_t count, Py_ssize_t value) except NULL:
    """A new reference to the int ``value``: ``table[value]`` (see ``shared_int_table``) when
    ``value < count``, else a new int. For lists filled with PyList_SET_ITEM, which steals it."""
    cdef PyObject* obj
    if 0 <= value < count:
        obj = table[value]
        _pw_incref(obj)
        return obj
    return _pw_long_from(value)


cdef class SpanSource:
    cdef int fill(self, object source, const int32_t* ids, Py_ssize_t n, const int32_t* extra, Py_ssize_t n_extra,
                  int32_t* starts, int32_t* ends, int32_t* words) except -1
    cdef bytes full(self, object source, Py_ssize_t at, Py_ssize_t n)


@cython.no_gc
cdef class Basis:
    cdef readonly object strings, frame, word_index, source
    cdef readonly SpanSource spans_from
    cdef dict framed                  # with_frame's bases, by id(frame)
    cdef Basis settled_form           # settled()'s, once made

    cdef Basis with_frame(self, object frame)
    cdef Basis settled(self)


@cython.no_gc
cdef class Lists:
    cdef public object type_ids, tokens, words, offsets, special_tokens_mask, attention_mask, overflowing, ranges
    cdef object pending               # a pair's PendingPair until its lists are built (see pair_encoding)
    # The offsets and words lists the position look-ups last packed (see encoding.pyx's _packed), and
    # them as int32s (bytes: the spans' starts, then their ends; the words, None as -1), or False if
    # an item is not what packs.
    cdef object spans_of, packed_spans, words_of, packed_words


@cython.no_gc
cdef class EncodingBase:
    cdef public object _ids
    cdef public Basis _basis          # None: an eager encoding (its lists all set)
    cdef object _data                 # the raw encoding, or (_no_raw) a batch job's text
    cdef public Lists _lists          # the other lists, once one is built or set
    cdef public int32_t _n
    cdef int32_t _at                  # make_with_ids: where its tokens begin in its SpanSource
    cdef bint _no_raw                 # make_with_ids, until its spans are worked out



cpdef Basis basis_for(object strings, object frame, object word_index, SpanSource spans_from, object source)
cdef Lists _lists_of(EncodingBase e)
cdef Py_ssize_t pending_char_to_token(EncodingBase e, Py_ssize_t pos, Py_ssize_t sequence,
                                      Py_ssize_t* word) except -3
cdef object overflowing_parts(EncodingBase self)
cpdef EncodingBase lazy_copy(EncodingBase e)
cdef EncodingBase lazy_with_ids(type cls, list ids, Py_ssize_t n, Basis basis, object source, Py_ssize_t at)
cdef bint never_read(EncodingBase self)
cdef list built_ids(EncodingBase self)
cdef int spans_ready(EncodingBase self) except -1
cpdef EncodingBase make_raw(type cls, bytes raw, Py_ssize_t n, object strings, object word_index, object frame,
                            SpanSource spans_from=*, object source=*)
cpdef object encoding_of(type cls, bytes raw, Py_ssize_t n, object strings, object frame, tuple truncation,
                         SpanSource spans_from=*, object source=*)
cpdef EncodingBase make_with_ids(type cls, list ids, Py_ssize_t n, object strings, object frame,
                                 SpanSource spans_from, object source, Py_ssize_t at)
cpdef tuple join_words(list results)
cdef list framed_ids(const int32_t* ids, Py_ssize_t n, list before, list after)
cdef bytes ids_raw(const void* ids, Py_ssize_t n, const void* extra, Py_ssize_t n_extra)
cdef object int_object(Py_ssize_t value)
cdef PyObject** shared_int_table(Py_ssize_t* count)
cpdef void share_ints_below(Py_ssize_t n) except *
cdef void spans_to_original(int32_t* starts, int32_t* ends, Py_ssize_t n, const int32_t* spans,
                            Py_ssize_t chars) noexcept nogil
cdef tuple span_tuple(Py_ssize_t start, Py_ssize_t end, tuple previous)
