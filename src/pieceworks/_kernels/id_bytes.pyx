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
nothing more), and read from then on through a C table (a pointer, a length
and flags per id), into a buffer on the stack: a Python object per id (its
tuple, its bytes) cost the loop 30 ns an id.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libcpp.vector cimport vector

from pieceworks._kernels.byte_buffer cimport ByteBuffer, buffer_put, buffer_start
from pieceworks.errors import DecodeError

from pieceworks._kernels.id_list cimport PySequence_Fast_GET_SIZE, PyUnicode_DecodeUTF8, id_at


cdef struct Spelled:
    const char* data        # the token's bytes as the decoder makes them (in its entry's bytes)
    Py_ssize_t size
    const char* first_data  # with first: its bytes as the first token joined
    Py_ssize_t first_size
    int byte                # with fallback: the byte of a <0xAB> token, else -1
    bint special
    bint met                # filled (the rest is zero until then)

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

    cdef list entries       # per id: None until met, then fill's tuple (it owns the bytes spelled below)
    cdef vector[Spelled] spelled    # per id, what the join loop reads: the entry's bytes, flags
    cdef object fill
    cdef Py_ssize_t size
    cdef bint fallback, first

    def __init__(self, Py_ssize_t size, fill, bint fallback=False, bint first=False):
        if size < 0:
            raise ValueError(f"IdBytes: size {size} is negative")
        if fallback and first:
            raise ValueError("IdBytes: fallback or first, not both")
        self.entries = [None] * size
        self.spelled.resize(size)       # (zeroed: no id met yet)
        self.fill = fill
        self.size = size
        self.fallback, self.first = fallback, first

    def join(self, ids, bint skip_special, bint strict=False):
        """The bytes of the tokens of ``ids`` (a list or tuple) joined, special tokens left out with
        ``skip_special``; None where the caller must go its own way: not a list or tuple, an item
        that is not an int (a bool neither), an id with no token, or (``strict``) a run of byte
        tokens that is not valid UTF-8."""
        cdef ByteBuffer out
        if not self._join(ids, skip_special, strict, &out):
            return None
        return PyBytes_FromStringAndSize(out.data, out.size)

    def text(self, ids, bint skip_special):
        """``join(ids, skip_special)`` read as UTF-8, a bad byte becoming U+FFFD, with no bytes object
        between (a streaming server decodes a few ids a call: that object was a fifth of it);
        None where ``join`` says None.

        >>> IdBytes(2, lambda i: [(b"\\xc3", False), (b"\\xa9!", False)][i]).text([0, 1, 1], False)
        '\xe9!\ufffd!'
        """
        return self._text(ids, skip_special)

    cdef str _text(self, ids, bint skip_special):
        cdef ByteBuffer out
        if not self._join(ids, skip_special, False, &out):
            return None
        return PyUnicode_DecodeUTF8(out.data, out.size, "replace")

    cdef bint _join(self, ids, bint skip_special, bint strict, ByteBuffer* out) except -1:
        """Join into ``out`` (see :meth:`join`); False where join says None."""
        cdef vector[char] run
        cdef Py_ssize_t tid, k = 0
        cdef bint first = self.first
        cdef const Spelled* sp
        buffer_start(out)
        if type(ids) is not list and type(ids) is not tuple:
            return False
        # (The size is read each time: fill is Python, which could shorten a list.)
        while k < PySequence_Fast_GET_SIZE(ids):
            tid = id_at(ids, k, self.size)
            k += 1
            if tid < 0:
                return False
            sp = &self.spelled[tid]
            if not sp.met:
                if not self._meet(tid):
                    return False
            if skip_special and sp.special:
                continue
            if sp.byte >= 0:
                run.push_back(<char>sp.byte)
                continue
            if run.size() and not _flush_run(run, out, strict):
                return False
            if first:
                buffer_put(out, sp.first_data, sp.first_size)
                first = False
            else:
                buffer_put(out, sp.data, sp.size)
        if run.size() and not _flush_run(run, out, strict):
            return False
        return True

    cdef bint _meet(self, Py_ssize_t tid) except -1:
        """Fill id ``tid``'s entry and spelling, once; False if it has no token (asked again next time)."""
        cdef Spelled* sp
        cdef Py_ssize_t width = 3 if self.fallback or self.first else 2
        entry = self.fill(tid)
        if entry is None:
            return False
        if type(entry) is not tuple or len(<tuple>entry) != width or type((<tuple>entry)[0]) is not bytes \
                or self.fallback and not -1 <= (<tuple>entry)[2] <= 255 \
                or self.first and type((<tuple>entry)[2]) is not bytes:
            raise TypeError(f"IdBytes: fill({tid}) gave {entry!r}, not (bytes, special"
                            f"{', byte' if self.fallback else ', first_bytes' if self.first else ''})")
        self.entries[tid] = entry       # (keeps the bytes the spelling points into)
        sp = &self.spelled[tid]
        sp.data = PyBytes_AS_STRING((<tuple>entry)[0])
        sp.size = PyBytes_GET_SIZE((<tuple>entry)[0])
        sp.special = bool((<tuple>entry)[1])
        sp.byte = (<tuple>entry)[2] if self.fallback else -1
        if self.first:
            sp.first_data = PyBytes_AS_STRING((<tuple>entry)[2])
            sp.first_size = PyBytes_GET_SIZE((<tuple>entry)[2])
        sp.met = True
        return True


@cython.final
cdef class Remembered:
    """What ``Tokenizer._id_bytes`` made (``made``: the id table and a Strip's fields, or None), kept
    on the tokenizer with what says it still holds, so each decode call checks that in C (about 20 ns;
    the Python check was 150, a third of a stream's step).

    It holds while the component epoch (``epoch[0]``: ``pieceworks._component._EPOCH``, bumped by any
    component's assignment) is the int object it was when made, and a decoder Sequence's list
    (``members``, None if there is none; editing it moves no epoch) has the same items. (The epoch
    only grows, and this keeps the int it saw, so no other int can take that object's place.)

    >>> epoch, members = [7], ["a", "b"]
    >>> memo = Remembered(epoch, members, "table")
    >>> memo.made, memo._holds()
    ('table', True)
    >>> members[1] = "c"; memo._holds()
    False
    >>> epoch[0] += 1; Remembered(epoch, None, None)._holds(), memo._holds()
    (True, False)
    """

    cdef list epoch
    cdef object at
    cdef object members
    cdef tuple expected
    cdef readonly object made

    def __init__(self, list epoch not None, members, made):
        if not epoch:
            raise ValueError("Remembered: the epoch list is empty")
        self.epoch, self.at = epoch, epoch[0]
        self.members, self.expected = members, None if members is None else tuple(members)
        self.made = made

    def _holds(self):
        return self.holds()

    cdef bint holds(self) except -1:
        cdef Py_ssize_t k, n
        if not self.epoch or self.epoch[0] is not self.at:
            return False
        if self.members is None:
            return True
        if type(self.members) is not list:
            return tuple(self.members) == self.expected
        n = len(<list>self.members)
        if n != len(self.expected):
            return False
        for k in range(n):
            # (An equal but new item makes the table again: slower, never wrong.)
            if (<list>self.members)[k] is not self.expected[k]:
                return False
        return True


cpdef object id_bytes_of(tokenizer):
    """``tokenizer``'s ``(table, strip)`` for decoding (see ``Tokenizer._id_bytes``), or None: the one it
    keeps, while that still holds (see Remembered: checked here, in C), else what its
    ``_make_id_bytes()`` makes now (None for an object without one)."""
    memo = getattr(tokenizer, "_id_bytes_for", None)
    if type(memo) is Remembered and (<Remembered>memo).holds():
        return (<Remembered>memo).made
    make = getattr(tokenizer, "_make_id_bytes", None)
    return None if make is None else make()


cdef class StreamWindow:
    """A :class:`~pieceworks.decoders.DecodeStream`'s state, and its step.

    ``ids`` is the window, ``ids[:prefix_index]`` gave the text returned
    last, ``prefix`` is the text of the window's returned part (the
    stream's comment says how they move). One step, two ways to read the
    window's text: through the tokenizer's id table (``id_bytes_of``),
    for one int id when the tokenizer has one, all in C; or through
    ``tokenizer.decode`` (:meth:`_advance`, which the stream's ``_step_long``
    calls after checking what it was given), for anything else and for a
    window the table cannot read (which the table's way hands back,
    unchanged, as :data:`LONG_WAY`).
    """

    cdef public list ids
    cdef public str prefix
    cdef public Py_ssize_t prefix_index
    cdef public bint skip_special_tokens

    def step(self, tokenizer, id):
        """Add the next id (an int) or ids (a list of int); return the new text, or None if none is
        complete yet."""
        cdef object out
        if type(id) is int and 0 <= id < 4294967296:
            out = self._step_table(tokenizer, <Py_ssize_t>id)
            if out is not LONG_WAY:
                return out
        return self._step_long(tokenizer, id)

    def _step_one(self, tokenizer, Py_ssize_t tid):
        """:meth:`_step_table` from Python (for tests)."""
        return self._step_table(tokenizer, tid)

    cdef object _step_table(self, tokenizer, Py_ssize_t tid):
        """The step for id ``tid`` (0 <= tid < 2**32) through the tokenizer's id table, or LONG_WAY
        (the window as it was): no id table, or ids the table cannot decode."""
        made = id_bytes_of(tokenizer)
        if type(made) is not tuple or len(<tuple>made) != 2 or type((<tuple>made)[0]) is not IdBytes:
            return LONG_WAY
        strip = (<tuple>made)[1]
        if strip is not None and (type(strip) is not tuple or len(<tuple>strip) != 3):
            return LONG_WAY
        return self._move(<IdBytes>(<tuple>made)[0], strip, None, None, tid)

    def _advance(self, decode, list new_ids not None):
        """The step for ``new_ids`` (checked: ints from 0 to 2**32 - 1), the window's text read by
        ``decode(ids, skip_special_tokens=...)`` (a tokenizer's decode)."""
        return self._move(None, None, decode, new_ids, 0)

    cdef object _move(self, IdBytes table, tuple strip, decode, list new_ids, Py_ssize_t tid):
        """Add ``new_ids``, or ``tid`` if it is None, and return the new text, reading the window's
        text through ``table`` (LONG_WAY, the window as it was, where it cannot) or else ``decode``.
        The pre-fill's text, when first read, becomes the prefix (that is kept either way)."""
        cdef list ids = self.ids
        cdef str text, prefix = self.prefix
        cdef Py_ssize_t before, n
        if not prefix and ids:
            # Pre-filled ids (or a window whose text is empty): their text, if complete, is context,
            # not output.
            text = self._text(table, strip, decode, ids)
            if text is None:
                return LONG_WAY
            if not text.endswith("\ufffd"):
                prefix = self.prefix = text
                self.prefix_index = len(ids)
        before = len(ids)
        if new_ids is None:
            ids.append(tid)
        else:
            ids.extend(new_ids)
        text = self._text(table, strip, decode, ids)
        if text is None:
            del ids[before:]
            return LONG_WAY
        if text.endswith("\ufffd"):
            return None
        # Hugging Face compares UTF-8 lengths: after the same prefix, more chars is more bytes.
        if text.startswith(prefix):
            if len(text) <= len(prefix):
                return None
        elif _utf8_len(text) <= _utf8_len(prefix):
            return None
        else:
            raise DecodeError(
                f"DecodeStream: the decoder changed text it had already returned: after id "
                f"{ids[len(ids) - 1]} the window decodes to {text!r}, which does not start with {prefix!r}",
                fix="this decoder does not stream (its output for earlier ids depends on later ones); "
                    "decode the whole list of ids with Tokenizer.decode instead")
        n = len(ids) - self.prefix_index
        del ids[:self.prefix_index]
        prefix_text = self._text(table, strip, decode, ids)
        if prefix_text is None:         # (cannot be: these ids decoded a moment ago)
            raise RuntimeError("DecodeStream: the window's ids no longer decode")
        self.prefix, self.prefix_index = prefix_text, n
        return text[len(prefix):]

    cdef str _text(self, IdBytes table, tuple strip, decode, list ids):
        """``Tokenizer.decode(ids, skip_special_tokens)``: through ``table`` (None where it cannot: see
        IdBytes.text) and ``strip``, or by calling ``decode``."""
        cdef str text
        if table is None:
            return decode(ids, skip_special_tokens=self.skip_special_tokens)
        text = table._text(ids, self.skip_special_tokens)
        if text is None or strip is None:
            return text
        return strip_text(text, (<tuple>strip)[0], (<tuple>strip)[1], (<tuple>strip)[2])


cdef Py_ssize_t _utf8_len(str text) except -1:
    return len(text.encode("utf-8", "surrogatepass"))


cpdef str strip_text(str text, str content, start, stop):
    """``text`` with up to ``start`` copies of the char ``content`` cut from its start and up to ``stop``
    from its end, never cutting into what the start cut: Hugging Face's Strip decoder on one token
    (``decoders.Strip`` calls this, and so does decode's SentencePiece chain on its fused text).

    >>> strip_text("  a ", " ", 1, 5), strip_text("aaa", "a", 2, 2), strip_text("ab", "ab", 1, 1)
    (' a', '', 'ab')
    """
    cdef Py_ssize_t n = len(text), start_cut = 0, stop_cut
    cdef Py_ssize_t head = max(0, min(start, n)), tail
    cdef Py_UCS4 char
    if len(content) != 1:       # (a char never equals a longer or empty str)
        return text
    char = content[0]
    while start_cut < head and text[start_cut] == char:
        start_cut += 1
    # (Hugging Face 0.23 panics when the end cuts into the start's cut, e.g. Strip("a", 1, 1) on "a";
    # this is its later fix.)
    stop_cut = n
    tail = max(0, min(stop, n - start_cut))
    while n - stop_cut < tail and text[stop_cut - 1] == char:
        stop_cut -= 1
    if start_cut == 0 and stop_cut == n:
        return text
    return text[start_cut:stop_cut]


#: What StreamWindow._step_table says when the step is tokenizer.decode's to take.
LONG_WAY = object()


cdef bint _flush_run(vector[char]& run, ByteBuffer* out, bint strict) except -1:
    """Put a run of byte tokens' bytes into ``out``: as they are if valid UTF-8, else one U+FFFD per
    byte; False (nothing put) if not valid and ``strict``. The run is emptied."""
    cdef size_t k
    try:
        PyUnicode_DecodeUTF8(run.data(), run.size(), NULL)
        buffer_put(out, run.data(), run.size())
    except UnicodeDecodeError:
        if strict:
            return False
        for k in range(run.size()):
            buffer_put(out, REPLACEMENT, 3)
    run.clear()
    return True
