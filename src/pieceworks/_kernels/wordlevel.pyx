# cython: language_level=3
"""WordLevel lookup over a batch of pieces: one dict probe per piece.

The loop is tiny, but it is the model's whole encode, so it runs here
rather than in a Python comprehension.
"""

cpdef list lookup_ids(dict vocab, list pieces, object unk_id):
    """Ids of ``pieces`` in ``vocab``; ``unk_id`` (or None) where absent.

    >>> lookup_ids({"a": 0}, ["a", "b"], 9)
    [0, 9]
    """
    cdef Py_ssize_t i, n = len(pieces)
    cdef list out = [None] * n
    for i in range(n):
        out[i] = vocab.get(pieces[i], unk_id)
    return out
