# cython: language_level=3
# distutils: language = c++
"""SentencePiece's decode of a list of ids, in one loop over a table of what each id spells.

``SentencePieceProcessor.decode(ids)`` turns each piece's ``▁`` into a
space, drops the leading ``▁`` of the first piece (of every piece until
text appears, when the model removes extra whitespace), spells an unknown
piece as its ``unk_surface`` and a control piece as nothing, and joins a
run of ``<0xAB>`` byte pieces into UTF-8, each byte that starts no valid
char becoming U+FFFD. Done a piece at a time in Python that cost about
3 µs a piece, ten times sentencepiece; here the table (bytes, byte value,
flags per id) is made once and the ids are joined in C.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libcpp.vector cimport vector

from pieceworks._kernels.byte_buffer cimport ByteBuffer, buffer_put, buffer_start

from pieceworks._kernels.id_list cimport PySequence_Fast_GET_SIZE, PyUnicode_DecodeUTF8, id_at


cdef struct Spelled:
    Py_ssize_t start, size  # the piece as decoded, in the table's bytes
    int byte                # a byte piece's value, else -1
    bint control            # spells nothing, and leaves the leading-space rule as it was
    bint leading_space      # starts with the space a "▁" became, which the first piece drops

cdef const char* REPLACEMENT = b"\xef\xbf\xbd"


@cython.final
cdef class SpmDecoder:
    """What each id of a SentencePiece model decodes to, and the decode of a list of ids.

    ``spelled``: per id, ``(bytes, byte, control, leading_space)`` as
    :meth:`SentencePieceModel._decoder` makes them. ``strip_first``: the model
    drops the first piece's leading space (it adds a dummy prefix or removes
    extra whitespace); ``strip_all_leading``: every piece's until text appears.

    >>> d = SpmDecoder([(b"", -1, True, False), (b" a", -1, False, True), (b" ", -1, False, True),
    ...                 (b"", 0xC3, False, False), (b"", 0xA9, False, False)], True, False)
    >>> d.decode([0, 1, 2, 1]), d.decode([3, 4, 3, 1]), d.decode([2, 2, 1])
    ('a  a', 'é\ufffd a', '  a')
    >>> SpmDecoder([(b" a", -1, False, True)], True, True).decode([0, 0]), d.decode([5]), d.decode([True])
    ('a a', None, None)
    """

    cdef bytes table              # every id's bytes, one after another
    cdef vector[Spelled] spelled
    cdef bint strip_first, strip_all_leading

    def __init__(self, list spelled, bint strip_first, bint strip_all_leading):
        cdef Spelled sp
        cdef Py_ssize_t start = 0
        parts = []
        for data, byte, control, leading_space in spelled:
            sp.start, sp.size = start, len(data)
            sp.byte, sp.control, sp.leading_space = byte, control, leading_space
            if leading_space and not (sp.size and (<bytes>data)[0] == 0x20):
                raise ValueError(f"SpmDecoder: {data!r} has leading_space but starts with no space")
            self.spelled.push_back(sp)
            parts.append(data)
            start += sp.size
        self.table = b"".join(parts)
        self.strip_first, self.strip_all_leading = strip_first, strip_all_leading

    def decode(self, ids):
        """The text of ``ids`` (a list or tuple of ints); None for anything else or an id out of range
        (the caller's long way says what is wrong)."""
        cdef ByteBuffer out
        cdef vector[char] run
        cdef const char* table = PyBytes_AS_STRING(self.table)
        cdef const Spelled* sp
        cdef Py_ssize_t k, n, tid, size = <Py_ssize_t>self.spelled.size()
        cdef bint at_start = True, dropped_space = False
        if type(ids) is not list and type(ids) is not tuple:
            return None
        buffer_start(&out)
        n = PySequence_Fast_GET_SIZE(ids)
        for k in range(n):
            tid = id_at(ids, k, size)
            if tid < 0:
                return None
            sp = &self.spelled[tid]
            if sp.byte >= 0:
                run.push_back(<char>sp.byte)
                continue
            if run.size():
                _flush_bytes(run, &out)
            # sentencepiece's is_bos_ws: true until text appears or a piece has dropped its space.
            if dropped_space or out.size:
                at_start = False
            dropped_space = False
            if sp.control:
                continue
            if at_start and self.strip_first and sp.leading_space:
                buffer_put(&out, table + sp.start + 1, sp.size - 1)
                dropped_space = not self.strip_all_leading
            else:
                buffer_put(&out, table + sp.start, sp.size)
        if run.size():
            _flush_bytes(run, &out)
        return PyUnicode_DecodeUTF8(out.data, out.size, "replace")


cdef void _flush_bytes(vector[char]& run, ByteBuffer* out):
    """Put a run of byte pieces' bytes: each valid UTF-8 char as it is, each other byte as U+FFFD."""
    cdef Py_ssize_t i = 0, size, n = <Py_ssize_t>run.size()
    cdef const unsigned char* data = <const unsigned char*>run.data()
    while i < n:
        size = _char_size(data + i, n - i)
        if size:
            buffer_put(out, <const char*>data + i, size)
            i += size
        else:
            buffer_put(out, REPLACEMENT, 3)
            i += 1
    run.clear()


cdef inline Py_ssize_t _char_size(const unsigned char* s, Py_ssize_t left) noexcept:
    """The size of the valid UTF-8 char at ``s`` (Python's strict rules: no overlong forms, no
    surrogates, nothing past U+10FFFF), or 0 if none starts there."""
    cdef unsigned char b = s[0], low = 0x80, high = 0xBF
    cdef Py_ssize_t size, j
    if b < 0x80:
        return 1
    if 0xC2 <= b <= 0xDF:
        size = 2
    elif 0xE0 <= b <= 0xEF:
        size = 3
        if b == 0xE0:
            low = 0xA0
        elif b == 0xED:
            high = 0x9F
    elif 0xF0 <= b <= 0xF4:
        size = 4
        if b == 0xF0:
            low = 0x90
        elif b == 0xF4:
            high = 0x8F
    else:
        return 0
    if left < size or not low <= s[1] <= high:
        return 0
    for j in range(2, size):
        if not 0x80 <= s[j] <= 0xBF:
            return 0
    return size
