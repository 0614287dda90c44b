# cython: language_level=3
# distutils: language = c++
"""Per token id, the bytes a decoder makes of its token, kept as ids are met.

``Tokenizer.decode`` with Hugging Face's ByteLevel decoder joins the bytes of
each token's chars (GPT-2's alphabet) and reads them as UTF-8; with
SentencePiece's chain (Replace "▁" by " ", ByteFallback, Fuse, Strip) it joins
each token's text, ``<0xAB>`` tokens as bytes, a run of them that is not valid
UTF-8 as one U+FFFD per byte. Done a token at a time in Python (look the id
up, spell the token, map it) that took about 0.7 us a token, five times
Hugging Face's; here a list of ids is joined in one loop, each token's bytes
worked out once, the first time its id is met (so loading a tokenizer costs
nothing more).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libcpp.vector cimport vector

cdef extern from "Python.h":
    Py_ssize_t PyLong_AsSsize_t(object) except? -1
    object PyUnicode_DecodeUTF8(const char* data, Py_ssize_t size, const char* errors)

# U+FFFD, which a run of byte tokens that is not valid UTF-8 becomes, once per byte (ByteFallback's rule).
cdef const char* REPLACEMENT = b"\xef\xbf\xbd"


cdef class IdBytes:
    """The bytes of each id's token, and whether it is a special token, as ``fill(id)`` gives them:
    ``(bytes, special)``, or None for an id with no token. ``size``: ids are below it.

    With ``fallback``, ``fill(id)`` gives ``(bytes, special, byte)``: ``byte``
    (0-255) for a ``<0xAB>`` token, -1 for any other. Each run of byte
    tokens is then valid UTF-8 as it is, or becomes one U+FFFD per byte (or,
    with ``strict``, None: the caller's long way raises).

    >>> f = IdBytes(4, lambda i: [(b"a", False, -1), (b"", False, 0xC3), (b"", False, 0xA9), (b"", True, -1)][i],
    ...             fallback=True)
    >>> f.join([1, 2, 0, 1, 0], False).decode(), f.join([1, 3, 2], True).decode(), f.join([1], False, strict=True)
    ('\xe9a\ufffda', '\xe9', None)

    With ``first``, ``fill(id)`` gives ``(bytes, special, first_bytes)``:
    the first token joined (specials skipped first) is spelled by
    ``first_bytes`` (Metaspace drops its "▁", WordPiece puts no space
    before it).

    >>> w = IdBytes(3, lambda i: [(b" a", False, b"a"), (b"b", False, b"b"), (b"[C]", True, b"[C]")][i], first=True)
    >>> w.join([0, 1, 0], False), w.join([2, 0, 0], True), w.join([2, 0], False)
    (b'ab a', b'a a', b'[C] a')

    >>> t = IdBytes(4, lambda i: None if i == 3 else (b"ab", False) if i == 1 else (b"<s>", True))
    >>> t.join([1, 2, 1], True), t.join((1, 2), False), t.join([], True)
    (b'abab', b'ab<s>', b'')
    >>> t.join([3], False), t.join([9], False), t.join([-1], False), t.join([True], False), t.join("12", False)
    (None, None, None, None, None)
    """

    cdef list entries       # per id: None until met, then fill's tuple
    cdef object fill
    cdef Py_ssize_t size
    cdef bint fallback, first

    def __init__(self, Py_ssize_t size, fill, bint fallback=False, bint first=False):
        if size < 0:
            raise ValueError(f"IdBytes: size {size} is negative")
        if fallback and first:
            raise ValueError("IdBytes: fallback or first, not both")
        self.entries = [None] * size
        self.fill = fill
        self.size = size
        self.fallback, self.first = fallback, first

    def join(self, ids, bint skip_special, bint strict=False):
        """The bytes of the tokens of ``ids`` (a list or tuple) joined, special tokens left out with
        ``skip_special``; None where the caller must go its own way: not a list or tuple, an item
        that is not an int (a bool neither), an id with no token, or (``strict``) a run of byte
        tokens that is not valid UTF-8."""
        cdef vector[char] out, run
        cdef Py_ssize_t tid, width = 3 if self.fallback or self.first else 2
        cdef bint first = self.first
        cdef object entry
        cdef bytes data
        cdef int byte
        if type(ids) is not list and type(ids) is not tuple:
            return None
        for item in ids:
            if type(item) is not int:
                return None
            try:
                tid = PyLong_AsSsize_t(item)
            except OverflowError:
                return None
            if tid < 0 or tid >= self.size:
                return None
            entry = self.entries[tid]
            if entry is None:
                entry = self.fill(tid)
                if entry is None:
                    return None
                if type(entry) is not tuple or len(<tuple>entry) != width or type((<tuple>entry)[0]) is not bytes \
                        or self.fallback and not -1 <= (<tuple>entry)[2] <= 255 \
                        or self.first and type((<tuple>entry)[2]) is not bytes:
                    raise TypeError(f"IdBytes: fill({tid}) gave {entry!r}, not (bytes, special"
                                    f"{', byte' if self.fallback else ', first_bytes' if self.first else ''})")
                self.entries[tid] = entry
            if skip_special and (<tuple>entry)[1]:
                continue
            if self.fallback:
                byte = (<tuple>entry)[2]
                if byte >= 0:
                    run.push_back(<char>byte)
                    continue
                if run.size() and not _flush_run(run, out, strict):
                    return None
            if first:
                data = <bytes>(<tuple>entry)[2]
                first = False
            else:
                data = <bytes>(<tuple>entry)[0]
            out.insert(out.end(), PyBytes_AS_STRING(data), PyBytes_AS_STRING(data) + PyBytes_GET_SIZE(data))
        if run.size() and not _flush_run(run, out, strict):
            return None
        return PyBytes_FromStringAndSize(out.data(), out.size())


cdef bint _flush_run(vector[char]& run, vector[char]& out, bint strict) except -1:
    """Put a run of byte tokens' bytes into ``out``: as they are if valid UTF-8, else one U+FFFD per
    byte; False (nothing put) if not valid and ``strict``. The run is emptied."""
    cdef size_t k
    try:
        PyUnicode_DecodeUTF8(run.data(), run.size(), NULL)
        out.insert(out.end(), run.begin(), run.end())
    except UnicodeDecodeError:
        if strict:
            return False
        for k in range(run.size()):
            out.insert(out.end(), REPLACEMENT, REPLACEMENT + 3)
    run.clear()
    return True
