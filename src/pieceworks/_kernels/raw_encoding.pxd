cdef class EncodingBase:
    cdef public object _ids, _type_ids, _tokens, _words, _offsets
    cdef public object _special_tokens_mask, _attention_mask, _overflowing, _ranges
    cdef public object _raw, _strings, _word_index, _frame
    cdef public Py_ssize_t _n

    cdef bint never_read(self)


cpdef EncodingBase make_raw(type cls, bytes raw, Py_ssize_t n, object strings, object word_index, object frame)
cpdef object encoding_of(type cls, bytes raw, Py_ssize_t n, object strings, object frame, tuple truncation)
cdef object int_object(Py_ssize_t value)
cdef tuple span_tuple(Py_ssize_t start, Py_ssize_t end, tuple previous)
