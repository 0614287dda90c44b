# cython: language_level=3
# distutils: language = c++
"""C-level API of onig_spans: a chain of Oniguruma Splits that cuts UTF-8 into pieces (see onig_spans.pyx)."""

from libcpp.vector cimport vector


cdef struct Region:         # the head of Oniguruma's OnigRegion (struct re_registers)
    int allocated
    int num_regs
    int* beg
    int* end

ctypedef int (*search_t)(void* regex, unsigned char* text, size_t size, size_t start, Region* region,
                         unsigned int options) noexcept nogil


cdef struct CutStage:
    void* regex             # a compiled regex_t, kept alive by the Cutter's Regex objects
    int behavior            # a Behavior
    bint invert             # matches and the text between them swap roles


cpdef enum Behavior:
    CUT_ISOLATED = 0
    CUT_MERGED_WITH_PREVIOUS = 1
    CUT_MERGED_WITH_NEXT = 2
    CUT_CONTIGUOUS = 3
    CUT_REMOVED = 4         # each span a piece, those flagged (matches, after invert) removed


# A removed piece's end carries this bit (cut_text's ``ends``): its bytes are no piece's.
cdef extern from *:
    """
    #define PW_PIECE_REMOVED (((Py_ssize_t)1) << 62)
    """
    const Py_ssize_t PW_PIECE_REMOVED


cdef inline Py_ssize_t chars_in(const unsigned char* data, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    """The chars of UTF-8 ``data[start:end]`` (whole chars): its bytes that are not continuation bytes."""
    cdef Py_ssize_t k, count = 0
    for k in range(start, end):
        count += (data[k] & 0xC0) != 0x80
    return count


cdef class Cutter:
    cdef vector[CutStage] stages
    cdef search_t search
    cdef readonly tuple regexes


cdef int cut_text(const CutStage* stages, size_t n_stages, search_t search, const unsigned char* text,
                  Py_ssize_t size, Region* region, vector[Py_ssize_t]* ends,
                  vector[Py_ssize_t]* scratch) noexcept nogil
