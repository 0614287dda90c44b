# cython: language_level=3
# distutils: language = c++
"""Bytes joined on the stack, moved to the heap only when they outgrow it.

Shared by the decoders' joins (id_bytes.pyx, bytebpe.pyx): a few ids' bytes,
what most decode calls join, then cost no allocation. Declared here whole, so
each kernel that cimports it compiles its own copy (no module at run time).

    cdef ByteBuffer out
    buffer_start(&out)
    buffer_put(&out, b"ab", 2)      # out.data[:out.size] == b"ab"
"""

from libc.string cimport memcpy
from libcpp.vector cimport vector


cdef struct ByteBuffer:
    char* data              # small, or heap's buffer once past it
    Py_ssize_t size, room
    vector[char] heap
    char small[1024]


cdef inline void buffer_start(ByteBuffer* out) noexcept:
    out.data, out.size, out.room = out.small, 0, sizeof(out.small)


cdef inline void buffer_put(ByteBuffer* out, const char* data, Py_ssize_t size):
    """Append ``size`` bytes to ``out``, moving it to the heap when the stack buffer is full."""
    if out.size + size > out.room:
        if out.data == out.small:
            out.heap.assign(out.small, out.small + out.size)
        out.heap.resize(2 * (out.size + size))
        out.data = out.heap.data()
        out.room = <Py_ssize_t>out.heap.size()
    memcpy(out.data + out.size, data, size)
    out.size += size
