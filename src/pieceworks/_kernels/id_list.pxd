# cython: language_level=3
# distutils: language = c++
"""Reading ids out of a list or tuple in C, for the decoders' join loops.

Shared by id_bytes.pyx and spm_decode.pyx; declared here whole, so each
kernel that cimports it compiles its own copy (no module at run time).

    cdef Py_ssize_t tid = id_at(ids, k, vocab_size)   # -1: not an id below vocab_size
"""

from cpython.object cimport PyObject

cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char* data, Py_ssize_t size, const char* errors)
    # (Borrowed items and no error check by Cython: id_at checks, and says -1.)
    bint PyLong_CheckExact(PyObject*) noexcept
    Py_ssize_t _as_ssize "PyLong_AsSsize_t"(PyObject*) noexcept
    PyObject* PyErr_Occurred() noexcept
    void PyErr_Clear() noexcept
    Py_ssize_t PySequence_Fast_GET_SIZE(object) noexcept
    PyObject** PySequence_Fast_ITEMS(object) noexcept


cdef inline Py_ssize_t id_at(object ids, Py_ssize_t k, Py_ssize_t size) noexcept:
    """Item ``k`` of the list or tuple ``ids`` if it is an id below ``size``; -1 if it is not an exact
    int (a bool is not), is past a Py_ssize_t, or is out of range."""
    cdef PyObject* item = PySequence_Fast_ITEMS(ids)[k]
    cdef Py_ssize_t tid
    if not PyLong_CheckExact(item):
        return -1
    tid = _as_ssize(item)
    if tid == -1 and PyErr_Occurred():
        PyErr_Clear()
        return -1
    if tid < 0 or tid >= size:
        return -1
    return tid
