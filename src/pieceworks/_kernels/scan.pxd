# cython: language_level=3
"""C-level API of the pre-tokenizer scanners (see scan.pyx).

A scanner reads a str's code points (PEP 393 storage, 1, 2 or 4 bytes a
char) and writes spans into a growable SpanBuf without touching Python
objects, so it runs without the GIL. Character classes come from one flat
table of flags per code point (``pieceworks._unicode_tables``).
"""

from libc.stdint cimport uint8_t, uint16_t, uint32_t


cdef inline uint32_t code_point(int kind, const void* data, Py_ssize_t i) noexcept nogil:
    """Code point ``i`` of a str's PEP 393 storage (``kind``: 1, 2 or 4 bytes a char)."""
    if kind == 1:
        return (<const uint8_t*> data)[i]
    if kind == 2:
        return (<const uint16_t*> data)[i]
    return (<const uint32_t*> data)[i]

# Bits of the flags table; keep in step with pieceworks._unicode_tables.
cpdef enum CharFlag:
    FLAG_WHITESPACE = 1
    FLAG_WORD = 2
    FLAG_PUNCT = 4
    FLAG_NUMERIC = 8
    FLAG_LETTER = 16
    FLAG_NUMBER = 32

# What class_runs does with a char, by its flags (see scan_class_runs).
cpdef enum RunAction:
    ACTION_DROP = 0
    ACTION_ISOLATE = 1
    # 2 and above: the char joins a run of chars with the same action

ctypedef struct Span:
    Py_ssize_t start
    Py_ssize_t end
    int tag          # the action that made the span (ISOLATE or a run class)

ctypedef struct SpanBuf:
    Span* items
    Py_ssize_t count
    Py_ssize_t capacity

cdef int spanbuf_init(SpanBuf* buf, Py_ssize_t capacity) noexcept nogil
cdef void spanbuf_free(SpanBuf* buf) noexcept nogil

# The tables (built on first call; raise on failure).
cdef const uint8_t* flags_table() except NULL
cdef const uint8_t* scripts_table() except NULL

# Scanners: return the number of spans written to ``out``, or -1 when out of memory.
cdef Py_ssize_t scan_class_runs(int kind, const void* data, Py_ssize_t n, const uint8_t* flags,
                                const uint8_t* actions, SpanBuf* out) noexcept nogil
cdef Py_ssize_t scan_gpt2(int kind, const void* data, Py_ssize_t n, const uint8_t* flags,
                          SpanBuf* out) noexcept nogil
cdef Py_ssize_t scan_scripts(int kind, const void* data, Py_ssize_t n, const uint8_t* scripts,
                             SpanBuf* out) noexcept nogil
