# cython: language_level=3
"""Pre-tokenizer scanners: one pass over a str's code points, spans out.

The splits of Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation,
Digits, ByteLevel (GPT-2's pattern) and UnicodeScripts are all "runs of
chars of one class" or close to it, so instead of a regex engine a small
loop reads each code point, looks its class up in a flat table (one byte of
flags per code point, all of Unicode, built once from
``pieceworks._unicode_tables``) and emits ``(start, end)`` spans in code
points. The pre-tokenizers slice the aligned string at those spans.

>>> class_runs("hi, you", actions_for([(FLAG_WHITESPACE, ACTION_DROP), (FLAG_PUNCT, ACTION_ISOLATE)]))
[(0, 2), (2, 3), (4, 7)]
>>> gpt2_spans("Hello world's 42!")
[(0, 5), (5, 11), (11, 13), (13, 16), (16, 17)]

Performance notes: the loops are specialised per PEP 393 storage width
(fused types), hold no Python object, and drop the GIL for long strings.
A two-stage (block-indexed) table would be smaller (~40 KB against 1.1 MB),
but a flat table costs one load per char and only the pages of planes that
texts use are ever touched.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport uint8_t, uint16_t, uint32_t

# Strings shorter than this are scanned holding the GIL: releasing it costs more.
cdef Py_ssize_t NOGIL_MIN_CHARS = 4096
cdef Py_ssize_t N_CODE_POINTS = 0x110000

ctypedef fused char_t:
    uint8_t
    uint16_t
    uint32_t


# -- the span buffer ------------------------------------------------------
cdef int spanbuf_init(SpanBuf* buf, Py_ssize_t capacity) noexcept nogil:
    if capacity < 16:
        capacity = 16
    buf.items = <Span*> PyMem_RawMalloc(capacity * sizeof(Span))
    buf.count = 0
    buf.capacity = capacity if buf.items != NULL else 0
    return 0 if buf.items != NULL else -1


cdef void spanbuf_free(SpanBuf* buf) noexcept nogil:
    PyMem_RawFree(buf.items)
    buf.items = NULL
    buf.count = buf.capacity = 0


cdef inline int push(SpanBuf* buf, Py_ssize_t start, Py_ssize_t end, int tag) noexcept nogil:
    cdef Span* grown
    if buf.count == buf.capacity:
        grown = <Span*> PyMem_RawRealloc(buf.items, 2 * buf.capacity * sizeof(Span))
        if grown == NULL:
            return -1
        buf.items = grown
        buf.capacity *= 2
    buf.items[buf.count].start = start
    buf.items[buf.count].end = end
    buf.items[buf.count].tag = tag
    buf.count += 1
    return 0


# -- the tables -----------------------------------------------------------
cdef object _flags_bytes = None
cdef object _scripts_bytes = None
cdef const uint8_t* _flags = NULL
cdef const uint8_t* _scripts = NULL


cdef const uint8_t* flags_table() except NULL:
    global _flags_bytes, _flags
    if _flags == NULL:
        from pieceworks._unicode_tables import char_flags
        table = char_flags()
        if PyBytes_GET_SIZE(table) != N_CODE_POINTS:
            raise RuntimeError("pieceworks._unicode_tables.char_flags() has the wrong size")
        if _flags == NULL:   # another thread may have built it meanwhile: keep theirs alive
            _flags_bytes = table
            _flags = <const uint8_t*> PyBytes_AS_STRING(table)
    return _flags


cdef const uint8_t* scripts_table() except NULL:
    global _scripts_bytes, _scripts
    if _scripts == NULL:
        from pieceworks._unicode_tables import script_table
        table = script_table()[0]
        if PyBytes_GET_SIZE(table) != N_CODE_POINTS:
            raise RuntimeError("pieceworks._unicode_tables.script_table() has the wrong size")
        if _scripts == NULL:
            _scripts_bytes = table
            _scripts = <const uint8_t*> PyBytes_AS_STRING(table)
    return _scripts


# -- runs of one class ----------------------------------------------------
cdef Py_ssize_t _class_runs(const char_t* s, Py_ssize_t n, const uint8_t* flags,
                            const uint8_t* actions, SpanBuf* out) noexcept nogil:
    # Invariant: chars [start, i) form an open run of class `current` (0: no run).
    cdef Py_ssize_t i, start = 0
    cdef int action, current = 0
    for i in range(n):
        action = actions[flags[s[i]]]
        if action >= 2:
            if action == current:
                continue
            if current and push(out, start, i, current) < 0:
                return -1
            start = i
            current = action
        else:
            if current and push(out, start, i, current) < 0:
                return -1
            current = 0
            if action == ACTION_ISOLATE and push(out, i, i + 1, ACTION_ISOLATE) < 0:
                return -1
    if current and push(out, start, n, current) < 0:
        return -1
    return out.count


cdef Py_ssize_t scan_class_runs(int kind, const void* data, Py_ssize_t n, const uint8_t* flags,
                                const uint8_t* actions, SpanBuf* out) noexcept nogil:
    """Cut ``data`` by each char's action: drop it, isolate it, or join runs of one class."""
    if kind == 1:
        return _class_runs(<const uint8_t*> data, n, flags, actions, out)
    if kind == 2:
        return _class_runs(<const uint16_t*> data, n, flags, actions, out)
    return _class_runs(<const uint32_t*> data, n, flags, actions, out)


# -- GPT-2's pattern ------------------------------------------------------
# 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
# Every char falls in exactly one of four classes, so the alternatives
# reduce to: a contraction; else an optional space and a run of one class;
# else a run of whitespace, minus its last char when a non-space follows
# (what `\s+(?!\S)` backtracks to), unless that leaves nothing.
cdef enum:
    GPT2_OTHER = 0
    GPT2_LETTER = 1
    GPT2_NUMBER = 2
    GPT2_SPACE = 3


cdef inline int gpt2_class(uint8_t f) noexcept nogil:
    if f & FLAG_LETTER:
        return GPT2_LETTER
    if f & FLAG_NUMBER:
        return GPT2_NUMBER
    if f & FLAG_WHITESPACE:
        return GPT2_SPACE
    return GPT2_OTHER


cdef inline Py_ssize_t contraction_length(const char_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    # 's 't 'm 'd → 2; 're 've 'll → 3; else 0 (s[i] is an apostrophe).
    cdef uint32_t c1, c2
    if i + 1 >= n:
        return 0
    c1 = s[i + 1]
    if c1 == 115 or c1 == 116 or c1 == 109 or c1 == 100:
        return 2
    if i + 2 >= n:
        return 0
    c2 = s[i + 2]
    if (c2 == 101 and (c1 == 114 or c1 == 118)) or (c1 == 108 and c2 == 108):
        return 3
    return 0


cdef Py_ssize_t _gpt2(const char_t* s, Py_ssize_t n, const uint8_t* flags, SpanBuf* out) noexcept nogil:
    cdef Py_ssize_t i = 0, j, start, length
    cdef int cls, next_cls
    while i < n:
        start = i
        if s[i] == 39:
            length = contraction_length(s, i, n)
            if length:
                if push(out, i, i + length, 0) < 0:
                    return -1
                i += length
                continue
        cls = gpt2_class(flags[s[i]])
        if s[i] == 32 and i + 1 < n:
            next_cls = gpt2_class(flags[s[i + 1]])
            if next_cls != GPT2_SPACE:
                i += 1            # the optional leading space of ` ?X+`
                cls = next_cls
        if cls != GPT2_SPACE:
            i += 1
            while i < n and gpt2_class(flags[s[i]]) == cls:
                i += 1
            if push(out, start, i, 0) < 0:
                return -1
            continue
        j = i + 1
        while j < n and gpt2_class(flags[s[j]]) == GPT2_SPACE:
            j += 1
        if j < n and j - i >= 2:
            j -= 1                # leave the last space to start the next piece
        if push(out, i, j, 0) < 0:
            return -1
        i = j
    return out.count


cdef Py_ssize_t scan_gpt2(int kind, const void* data, Py_ssize_t n, const uint8_t* flags,
                          SpanBuf* out) noexcept nogil:
    """The matches of GPT-2's pre-tokenization pattern (they cover the whole text)."""
    if kind == 1:
        return _gpt2(<const uint8_t*> data, n, flags, out)
    if kind == 2:
        return _gpt2(<const uint16_t*> data, n, flags, out)
    return _gpt2(<const uint32_t*> data, n, flags, out)


# -- scripts --------------------------------------------------------------
cdef Py_ssize_t _scripts_runs(const char_t* s, Py_ssize_t n, const uint8_t* scripts,
                              SpanBuf* out) noexcept nogil:
    # Hugging Face cuts before every char whose script (not Any) differs from
    # the last script seen; chars of script Any join whatever surrounds them.
    # Pieces run from cut to cut, so Any chars before the first cut are lost.
    cdef Py_ssize_t i, cut = -1
    cdef int script, last = -1
    for i in range(n):
        script = scripts[s[i]]
        if script == 0 or script == last:
            continue
        if cut >= 0 and push(out, cut, i, 0) < 0:
            return -1
        cut = i
        last = script
    if cut >= 0 and push(out, cut, n, 0) < 0:
        return -1
    return out.count


cdef Py_ssize_t scan_scripts(int kind, const void* data, Py_ssize_t n, const uint8_t* scripts,
                             SpanBuf* out) noexcept nogil:
    """Pieces of one Unicode script each (UnicodeScripts)."""
    if kind == 1:
        return _scripts_runs(<const uint8_t*> data, n, scripts, out)
    if kind == 2:
        return _scripts_runs(<const uint16_t*> data, n, scripts, out)
    return _scripts_runs(<const uint32_t*> data, n, scripts, out)


# -- Python entry points --------------------------------------------------
cdef enum ScannerKind:
    SCAN_CLASS_RUNS
    SCAN_GPT2
    SCAN_SCRIPTS


cdef int run_scanner(ScannerKind which, str text, const uint8_t* table, const uint8_t* actions,
                     SpanBuf* buf) except -1:
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), got
    if spanbuf_init(buf, n // 4 + 1) < 0:
        raise MemoryError()
    if n >= NOGIL_MIN_CHARS:
        with nogil:
            got = _dispatch(which, kind, data, n, table, actions, buf)
    else:
        got = _dispatch(which, kind, data, n, table, actions, buf)
    if got < 0:
        spanbuf_free(buf)
        raise MemoryError()
    return 0


cdef inline Py_ssize_t _dispatch(ScannerKind which, int kind, const void* data, Py_ssize_t n,
                                 const uint8_t* table, const uint8_t* actions, SpanBuf* buf) noexcept nogil:
    if which == SCAN_CLASS_RUNS:
        return scan_class_runs(kind, data, n, table, actions, buf)
    if which == SCAN_GPT2:
        return scan_gpt2(kind, data, n, table, buf)
    return scan_scripts(kind, data, n, table, buf)


cdef list spans_to_list(SpanBuf* buf):
    cdef Py_ssize_t k
    cdef list out = []
    try:
        for k in range(buf.count):
            out.append((buf.items[k].start, buf.items[k].end))
    finally:
        spanbuf_free(buf)
    return out


cdef const uint8_t* checked_actions(const uint8_t[::1] actions) except NULL:
    if actions.shape[0] != 256:
        raise ValueError(f"an action table has 256 entries (one per flags byte), got {actions.shape[0]}")
    return &actions[0]


def actions_for(rules, int default=2):
    """An action table: the first ``(flag, action)`` rule whose flag a char has wins.

    Chars matching no rule get ``default`` (a run of "other" chars).

    >>> actions_for([(FLAG_WHITESPACE, ACTION_DROP)])[FLAG_WHITESPACE | FLAG_PUNCT]
    0
    """
    table = bytearray(256)
    for flags in range(256):
        table[flags] = default
        for flag, action in rules:
            if flags & flag:
                table[flags] = action
                break
    return bytes(table)


def class_runs(str text not None, const uint8_t[::1] actions):
    """Spans of ``text`` cut by each char's action (see :func:`actions_for`).

    >>> class_runs("a1b", actions_for([(FLAG_NUMERIC, ACTION_ISOLATE)]))
    [(0, 1), (1, 2), (2, 3)]
    """
    cdef SpanBuf buf
    run_scanner(SCAN_CLASS_RUNS, text, flags_table(), checked_actions(actions), &buf)
    return spans_to_list(&buf)


cdef dict _match_actions = {}   # mask -> action table, for char_matches


def char_matches(str text not None, int mask):
    """``find_matches`` for "a char with any flag in ``mask``": each such char is a match.

    >>> char_matches("a, b", FLAG_PUNCT)
    [((0, 1), False), ((1, 2), True), ((2, 4), False)]
    """
    cdef SpanBuf buf
    cdef Py_ssize_t k
    cdef list out = []
    if not text:
        return [((0, 0), False)]
    actions = _match_actions.get(mask)
    if actions is None:
        actions = _match_actions[mask] = actions_for([(mask, ACTION_ISOLATE)])
    run_scanner(SCAN_CLASS_RUNS, text, flags_table(), checked_actions(actions), &buf)
    try:
        for k in range(buf.count):
            out.append(((buf.items[k].start, buf.items[k].end), buf.items[k].tag == ACTION_ISOLATE))
    finally:
        spanbuf_free(&buf)
    return out


def gpt2_spans(str text not None):
    """Spans of GPT-2's pre-tokenization regex matches in ``text``.

    >>> gpt2_spans("a  b\\n")
    [(0, 1), (1, 2), (2, 4), (4, 5)]
    """
    cdef SpanBuf buf
    run_scanner(SCAN_GPT2, text, flags_table(), NULL, &buf)
    return spans_to_list(&buf)


def script_spans(str text not None):
    """Spans of one Unicode script each, as Hugging Face's UnicodeScripts cuts them.

    >>> script_spans("abc Δx")
    [(0, 4), (4, 5), (5, 6)]
    """
    cdef SpanBuf buf
    run_scanner(SCAN_SCRIPTS, text, scripts_table(), NULL, &buf)
    return spans_to_list(&buf)


def repeat_per_utf8_byte(str text not None, list per_char):
    """``per_char[i]`` repeated once per UTF-8 byte of ``text[i]`` (a lone surrogate counts 3).

    This is the alignment of byte-level spelling: each byte of a char maps
    back to that char.

    >>> repeat_per_utf8_byte("aé😀", ["a", "e", "s"])
    ['a', 'e', 'e', 's', 's', 's', 's']
    """
    cdef Py_ssize_t i, k, n = len(text)
    cdef Py_UCS4 cp
    cdef int width
    cdef list out = []
    if len(per_char) < n:
        raise ValueError(f"per_char has {len(per_char)} items for {n} chars")
    for i in range(n):
        cp = text[i]
        width = 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
        item = per_char[i]
        for k in range(width):
            out.append(item)
    return out


def char_flags(Py_UCS4 ch):
    """The flags byte of one char.

    >>> char_flags(" ") == FLAG_WHITESPACE
    True
    """
    return flags_table()[ch]


def script_id(Py_UCS4 ch):
    """The script id of one char (0: no script, "Any")."""
    return scripts_table()[ch]


# The enum members as module attributes (scan.FLAG_PUNCT, ...) for Python callers.
globals().update(CharFlag.__members__)
globals().update(RunAction.__members__)
