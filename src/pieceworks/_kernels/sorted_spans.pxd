# cython: language_level=3
"""Finding the span that holds a char among spans in order, by halving.

Spans in order (starts and ends each never going back, as a tokenizer's own
spans of one text are): the first span ending past ``pos`` is the only one
that may hold it (an earlier one ends too soon, a later one starts later).
Shared by the Encoding's look-ups (encoding.pyx, over its packed lists) and a
pending pair's (raw_encoding.pyx, over its raw results). Declared here whole,
so each kernel that cimports it compiles its own copy (no module at run time).
"""

from libc.stdint cimport int32_t


cdef inline Py_ssize_t first_holding_in_order(const int32_t* starts, const int32_t* ends, Py_ssize_t start,
                                              Py_ssize_t stop, Py_ssize_t pos) noexcept nogil:
    """The first ``i`` in ``[start, stop)`` with ``starts[i] <= pos < ends[i]``, or -1, for spans
    in order there."""
    cdef Py_ssize_t lo = start, hi = stop, i
    while lo < hi:
        i = (lo + hi) >> 1
        if ends[i] > pos:
            hi = i
        else:
            lo = i + 1
    return lo if lo < stop and starts[lo] <= pos else -1
