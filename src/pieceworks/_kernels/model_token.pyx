# cython: language_level=3
"""The Token a model gives for one piece (see :mod:`pieceworks.pretokenized`).

An extension type rather than a Python class with ``__slots__``: a model
makes one per token (``Model.tokenize``, and the general path), and making
a Python instance was 300 ns, most of a WordPiece word's tokenize.

>>> Token(3, "ab", (0, 2)), Token(3, "ab", (0, 2)) == Token(3, "ab", (0, 2))
(Token(id=3, value='ab', offsets=(0, 2)), True)
"""


cdef class Token:
    """One token from a model: its id, its text, and its span in the split (mutable, equal by
    value and so not hashable, as a dataclass's; Hugging Face's ``Token``'s fields)."""

    cdef public object id, value, offsets

    __match_args__ = ("id", "value", "offsets")

    def __init__(self, id, value, offsets):
        self.id = id
        self.value = value
        self.offsets = offsets

    def __repr__(self):
        return f"Token(id={self.id!r}, value={self.value!r}, offsets={self.offsets!r})"

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return (self.id, self.value, self.offsets) == ((<Token>other).id, (<Token>other).value,
                                                       (<Token>other).offsets)

    __hash__ = None

    def as_tuple(self):
        """``(id, value, offsets)``, as Hugging Face's ``Token.as_tuple``."""
        return (self.id, self.value, self.offsets)

    def __reduce__(self):
        return (type(self), (self.id, self.value, self.offsets))
