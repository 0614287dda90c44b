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
from cython.operator cimport dereference as deref
from libc.stdint cimport uintptr_t
from libcpp.vector cimport vector


cdef enum:
    ONIG_MISMATCH = -1


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


cdef int find_all(uintptr_t search, uintptr_t regex, uintptr_t region, bytes data,
                  vector[Py_ssize_t]* spans) noexcept:
    """The matches' char starts and ends into ``spans``, the GIL released; ONIG_MISMATCH when done,
    or a search's error code (below it)."""
    cdef unsigned char* text = <unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t at = 0, start, end = -1, byte_at = 0, char_at = 0
    cdef int found
    with nogil:
        while True:
            found = next_match(<search_t>search, <void*>regex, text, size, <Region*>region, &at, &start, &end)
            if found < 0:
                break
            char_at += chars_in(text, byte_at, start)
            spans.push_back(char_at)
            char_at += chars_in(text, start, end)
            spans.push_back(char_at)
            byte_at = end
    return found


cdef inline int next_match(search_t search, void* regex, unsigned char* text, Py_ssize_t size, Region* r,
                           Py_ssize_t* at, Py_ssize_t* start, Py_ssize_t* end) noexcept nogil:
    """The next match of Oniguruma's iterator (Hugging Face's ``find_iter``) in ``text[:size]``:
    its byte span into ``start`` and ``end``; 0, or ONIG_MISMATCH when there is none, or a
    search's error code (below it). ``at`` is where to search from: 0 before the first call,
    then the previous match's end, where this leaves it.

    An empty match right where the previous one ended (``end`` holds that
    end: -1 before the first call) is refused and the search retried one
    char on, as the iterator does.
    """
    cdef int found
    cdef Py_ssize_t last_end = end[0]
    while at[0] <= size:
        found = search(regex, text, <size_t>size, <size_t>at[0], r, 0)
        if found < 0:
            return found
        start[0], end[0] = r.beg[0], r.end[0]
        if start[0] == end[0] == last_end:
            at[0] = start[0] + (char_size(text[start[0]]) if start[0] < size else 1)
            continue
        at[0] = end[0]
        return 0
    return ONIG_MISMATCH


# -- a chain of Splits, cut in C ------------------------------------------------------------

cdef class Cutter:
    """The pieces a chain of ``Split`` pre-tokenizers (Oniguruma patterns, any behaviour,
    inverted or not) cuts a text into, each stage cutting each piece the one before made, as
    the general path cuts them (``Split.piece_spans``): for a kernel that encodes a batch of
    texts without the GIL (``ByteBPE.encode_raw_cut_batch``). A ``"removed"`` stage's removed
    spans stay pieces, marked (``PW_PIECE_REMOVED``), which later stages do not cut and the
    kernel does not encode.

    ``stages``: ``(regex, behavior, invert)`` with ``regex`` a :class:`pieceworks.Regex`, kept
    alive here, and ``behavior`` a :class:`Behavior`; ``search``: the address of
    ``onigcffi_search``.

    >>> from pieceworks import Regex
    >>> from pieceworks._regex import _SEARCH, _region_address
    >>> cutter = Cutter(_SEARCH, [(Regex(r"\\d"), Behavior.CUT_ISOLATED, False),
    ...                           (Regex(" "), Behavior.CUT_MERGED_WITH_NEXT, False)])
    >>> cutter.piece_ends("ab12 c", _region_address())
    [2, 3, 4, 6]
    """

    def __init__(self, uintptr_t search, list stages not None):
        cdef CutStage stage
        self.search = <search_t>search
        self.stages.clear()
        for regex, behavior, invert in stages:
            if not CUT_ISOLATED <= behavior <= CUT_REMOVED:
                raise ValueError(f"Cutter: behavior {behavior!r} is not one this cutter takes")
            stage.regex = <void*><uintptr_t>regex._address
            stage.behavior = behavior
            stage.invert = invert
            self.stages.push_back(stage)
        self.regexes = tuple(regex for regex, _, _ in stages)

    def piece_ends(self, str text not None, uintptr_t region):
        """Where each piece of ``text`` ends, in chars (a lone surrogate is one), or a search's
        (negative) error code; ``region``: an ``OnigRegion`` no other thread uses. A stretch of
        removed pieces is one entry, its end negated.

        >>> from pieceworks import Regex
        >>> from pieceworks._regex import _SEARCH, _region_address
        >>> Cutter(_SEARCH, [(Regex(r"\\w+"), Behavior.CUT_REMOVED, True)]).piece_ends(" ab  c", _region_address())
        [-1, 3, -5, 6]
        """
        cdef bytes data = text.encode("utf-8", "surrogatepass")
        cdef const unsigned char* p = <const unsigned char*>PyBytes_AS_STRING(data)
        cdef vector[Py_ssize_t] ends, scratch
        cdef int found
        cdef Py_ssize_t k, end, byte_at = 0, char_at = 0, size = PyBytes_GET_SIZE(data)
        with nogil:
            found = cut_text(self.stages.data(), self.stages.size(), self.search, p, size, <Region*>region,
                             &ends, &scratch)
        if found < 0:
            return found
        out = []
        for k in range(<Py_ssize_t>ends.size()):
            end = ends[k] & ~PW_PIECE_REMOVED
            char_at += chars_in(p, byte_at, end)
            byte_at = end
            if ends[k] & PW_PIECE_REMOVED:
                if out and out[len(out) - 1] < 0:     # (no wraparound here: no out[-1])
                    out[len(out) - 1] = -char_at
                else:
                    out.append(-char_at)
            else:
                out.append(char_at)
        return out


cdef int cut_text(const CutStage* stages, size_t n_stages, search_t search, const unsigned char* text,
                  Py_ssize_t size, Region* region, vector[Py_ssize_t]* ends,
                  vector[Py_ssize_t]* scratch) noexcept nogil:
    """Where each non-empty piece of UTF-8 ``text[:size]`` ends after ``stages`` (bytes, rising,
    the last ``size``; none for an empty text), into ``ends``, a removed piece's with the
    ``PW_PIECE_REMOVED`` bit (later stages leave it as it is); 0, or a search's error code."""
    cdef size_t s, k
    cdef Py_ssize_t start, end
    cdef int found
    ends.clear()
    if size == 0:
        return 0
    ends.push_back(size)
    for s in range(n_stages):
        scratch.swap(deref(ends))
        ends.clear()
        start = 0
        for k in range(scratch.size()):
            end = deref(scratch)[k]
            if end & PW_PIECE_REMOVED:
                ends.push_back(end)
                start = end & ~PW_PIECE_REMOVED
                continue
            found = cut_piece(&stages[s], search, text, start, end, region, ends)
            if found < 0:
                return found
            start = end
    return 0


cdef inline bint cuts_before(int behavior, bint before, bint flag) noexcept nogil:
    """Whether a piece ends between two spans (matches, or text between them) flagged ``before``
    and ``flag`` (a match, after ``invert``): Hugging Face's ``split_ranges``, span by span."""
    if behavior == CUT_ISOLATED or behavior == CUT_REMOVED:
        return True
    if behavior == CUT_CONTIGUOUS:
        return before != flag
    if behavior == CUT_MERGED_WITH_PREVIOUS:
        return not (flag and not before)       # (a match joins the text before it)
    return not (before and not flag)           # merged with next: a match joins the text after it


cdef int cut_piece(const CutStage* stage, search_t search, const unsigned char* text, Py_ssize_t a,
                   Py_ssize_t b, Region* r, vector[Py_ssize_t]* out) noexcept nogil:
    """Append where the pieces ``stage`` cuts ``text[a:b]`` into end (empty ones left out); 0, or
    a search's error code. The piece is searched alone (its start and end are the text's)."""
    cdef unsigned char* p = <unsigned char*>(text + a)
    cdef Py_ssize_t size = b - a, at = 0, start, end = -1, prev = 0, last_cut = 0
    cdef int found, before = -1          # the flag of the span before (-1: none yet)
    while True:
        found = next_match(search, stage.regex, p, size, r, &at, &start, &end)
        if found < 0:
            if found != ONIG_MISMATCH:
                return found
            break
        if prev != start:       # the text before the match
            span_at(stage, prev, False, &before, &last_cut, a, out)
        span_at(stage, start, True, &before, &last_cut, a, out)
        prev = end
    if prev != size:
        span_at(stage, prev, False, &before, &last_cut, a, out)
    if size > last_cut:
        out.push_back(b | (PW_PIECE_REMOVED if stage.behavior == CUT_REMOVED and before == 1 else 0))
    return 0


cdef inline void span_at(const CutStage* stage, Py_ssize_t start, bint is_match, int* before, Py_ssize_t* last_cut,
                         Py_ssize_t base, vector[Py_ssize_t]* out) noexcept nogil:
    """The next span (a match, or text between matches) begins at ``start`` of a piece that begins
    at ``base``: a piece ends there if ``stage``'s behaviour cuts between it and the span before
    (flagged ``before``: -1 for none) and that piece is not empty (``last_cut``: where the last one
    ended). Under CUT_REMOVED the piece ending there is the span before, removed if flagged."""
    cdef bint flag = is_match != stage.invert
    if before[0] >= 0 and cuts_before(stage.behavior, before[0], flag) and start > last_cut[0]:
        out.push_back((base + start) | (PW_PIECE_REMOVED if stage.behavior == CUT_REMOVED and before[0] == 1 else 0))
        last_cut[0] = start
    before[0] = flag
