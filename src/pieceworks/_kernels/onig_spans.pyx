# cython: language_level=3
# distutils: language = c++
"""The matches of an Oniguruma pattern in a text, found in one C loop.

``pieceworks.Regex`` runs patterns on Oniguruma through ``onigurumacffi``,
as Hugging Face runs them. Going back to Python for each match (a cffi call,
a region read, a char count) took about 1.2 us a match: 250 ms for 1 MB of
prose cut by a pre-tokenizer pattern, most of the time of a tokenizer with a
split pattern the byte-level kernel has no scanner for. Here the same
search function (its address, from cffi) is called in a loop, and the byte
positions it gives are counted into chars as the loop goes.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uintptr_t
from libcpp.vector cimport vector


cdef struct Region:         # the head of Oniguruma's OnigRegion (struct re_registers)
    int allocated
    int num_regs
    int* beg
    int* end

ctypedef int (*search_t)(void* regex, unsigned char* text, size_t size, size_t start, Region* region,
                         unsigned int options) noexcept nogil

cdef enum:
    ONIG_MISMATCH = -1


cdef inline Py_ssize_t chars_in(const unsigned char* data, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    """The chars of UTF-8 ``data[start:end]`` (whole chars): its bytes that are not continuation bytes."""
    cdef Py_ssize_t k, count = 0
    for k in range(start, end):
        count += (data[k] & 0xC0) != 0x80
    return count


cdef inline Py_ssize_t char_size(unsigned char lead) noexcept nogil:
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def match_spans(uintptr_t search, uintptr_t regex, uintptr_t region, bytes data not None):
    """The char spans of the matches of ``regex`` in ``data`` (a text's UTF-8, a lone surrogate as
    its three bytes), left to right, an empty match right after the previous match skipped (as
    Oniguruma's iterator, and Hugging Face's ``find_iter``, skip it); or, if a search fails, its
    (negative) error code.

    ``search`` is the address of ``onigcffi_search``, ``regex`` of a compiled ``regex_t`` and
    ``region`` of an ``OnigRegion`` no other thread uses; the caller keeps all three alive.
    """
    cdef vector[Py_ssize_t] spans
    cdef Py_ssize_t k
    cdef int found = find_all(search, regex, region, data, &spans)
    if found < ONIG_MISMATCH:
        return found
    return [(spans[k], spans[k + 1]) for k in range(0, <Py_ssize_t>spans.size(), 2)]


def isolated_ends(uintptr_t search, uintptr_t regex, uintptr_t region, bytes data not None):
    """Where each piece ends (in chars) when the matches are isolated (Split's ``"isolated"``): each
    non-empty match, and each stretch between them, is a piece; or a search's error code. The
    arguments are :func:`match_spans`'."""
    cdef vector[Py_ssize_t] spans
    cdef Py_ssize_t k, last = 0, n_chars
    cdef list out = []
    cdef int found = find_all(search, regex, region, data, &spans)
    if found < ONIG_MISMATCH:
        return found
    for k in range(0, <Py_ssize_t>spans.size(), 2):
        if spans[k] > last:
            out.append(spans[k])
        if spans[k + 1] > spans[k]:
            out.append(spans[k + 1])
        last = spans[k + 1]
    n_chars = chars_in(<unsigned char*>PyBytes_AS_STRING(data), 0, PyBytes_GET_SIZE(data))
    if last < n_chars:
        out.append(n_chars)
    return out


cdef int find_all(uintptr_t search, uintptr_t regex, uintptr_t region, bytes data,
                  vector[Py_ssize_t]* spans) noexcept:
    """The matches' char starts and ends into ``spans``, the GIL released; ONIG_MISMATCH when done,
    or a search's error code (below it)."""
    cdef search_t find = <search_t>search
    cdef Region* r = <Region*>region
    cdef unsigned char* text = <unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t at = 0, last_end = -1, start, end, byte_at = 0, char_at = 0
    cdef int found = ONIG_MISMATCH
    with nogil:
        while at <= size:
            found = find(<void*>regex, text, <size_t>size, <size_t>at, r, 0)
            if found < 0:
                break
            start, end = r.beg[0], r.end[0]
            if start == end == last_end:
                # Oniguruma's iterator refuses this empty match and retries one char on.
                at = start + (char_size(text[start]) if start < size else 1)
                continue
            char_at += chars_in(text, byte_at, start)
            spans.push_back(char_at)
            char_at += chars_in(text, start, end)
            spans.push_back(char_at)
            byte_at = end
            at = last_end = end
    return found if found < 0 else ONIG_MISMATCH
