# cython: language_level=3
"""``Tokenizer.encode`` for one plain str (a pair of them, a pre-tokenized sequence of them), with
no Python frame between the call and the kernel.

Most calls of ``encode`` are one short text, and for a short text the
layers of Python around the kernel (argument checks, finding the plan,
asking the added vocabulary, building the encoding) cost several times what
the kernel does. :func:`tokenizer_encode` is ``Tokenizer.encode`` itself
(bound as the method, as ``SentencePieceProcessor.Encode`` is): for a str,
two strs, or a list or tuple of strs with ``is_pretokenized=True`` (each
word encoded alone, then joined), it asks a :class:`SingleText`, which holds everything those
layers would work out, fixed at one *component epoch* (the counter every
assignment to a component or a tokenizer moves). When the epoch has moved,
the tokenizer builds a new one (``Tokenizer._single_text``). Anything the
snapshot cannot promise to encode exactly as the long way does (an added
token's first char in the text, a status from the kernel, more tokens than
truncation allows, arguments other than the plain defaults) goes the long
way, ``Tokenizer._encode_general``, which is the same code as before.
"""

cimport cython

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_FindChar(object text, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t end, int direction) except -2
    Py_ssize_t PyUnicode_Tailmatch(object text, object part, Py_ssize_t start, Py_ssize_t end, int direction) except -1

from pieceworks._kernels.raw_encoding cimport encoding_of
from pieceworks._kernels.raw_encoding cimport SpanSource
from pieceworks._kernels.raw_encoding import fill_encodings, joined_words, pair_encoding, whole_result

from pieceworks._component import _EPOCH


cdef class SingleText:
    """What ``encode`` needs for one plain str at one component epoch (see the module doc).

    ``encoder(text)``: the plan's one-text kernel call, ``(raw, n_tokens,
    ...)`` or anything else for the long way; a fifth item or more means
    ``(raw, n_tokens, _, spans_from, source)``, the ids alone (see
    ``raw_encoding.make_raw``), unless the fifth is a list: then the result
    is ``(raw, n_tokens, n_words, strings, tokens)``, its own token strings
    (an unknown char spelled by its text; ``raw_encoding.fill_encodings``).
    ``strings[id]``: a token's string. ``finder``: a TokenTrie of the added tokens' contents (None:
    no token): a text it says ``holds`` one goes the long way.
    ``frames``/``truncations``: the post-processing frame and what
    truncation does (``raw_encoding.encoding_of``), for
    ``add_special_tokens`` True and False; a frame of None sends those
    calls the long way. ``default_split``: the tokenizer's encode_special_tokens;
    ``split_matters``: splitting special tokens changes what the model may
    produce (then split calls go the long way). ``pads``: padding is on.
    ``around(tokenizer, text, frame, truncation)``: the Encoding of a text
    the finder says holds a token, encoded around them, or None (the long
    way; padding, if on, is done after); or a plan's kernel call as
    ``(encode_around_batch, tokens, strings)``, whose result for ``[text]``
    (as ``encoder``'s, or None) is made the Encoding here; None: all such
    texts go the long way, and so do they with special tokens split.
    ``pair_frames``: the post-processor's ``PairFrame`` for a pair of strs,
    for ``add_special_tokens`` True and False (None: the long way), whose two
    texts go through ``encoder`` and are put together by
    ``raw_encoding.pair_encoding``, or by ``Tokenizer._pair_of_results``
    when truncation or padding is on (a text the finder says holds a token
    sends the pair the long way). ``words_in_one_call``: a pre-tokenized
    sequence's words go through ``around``'s kernel call (when it is one)
    all at once, not ``encoder`` one by one (for an encoder in Python), joined by that call's
    own ``encode_words(words, tokens, strings)`` where it has one.
    An ``encoder`` with an ``encode_words(words)`` method (``bytebpe.OneText``) encodes a
    sequence's words in that one call, ``(raw, n_tokens, n_words)`` or None (the long way).
    With no encoder every call goes the long way.
    """
    cdef readonly long long epoch
    cdef object encoder, strings, encoding_type, words_encoder, around_words
    cdef object finder, around
    cdef object frame_with, frame_without, pair_with, pair_without
    cdef tuple truncation_with, truncation_without
    cdef bint default_split, split_matters, pads, words_in_one_call
    #: The plan draws its ids at random (BPE-dropout): ``encode`` then puts the model's generator
    #: back before the long way when this one gives up (as ``Tokenizer._generator_rewind``).
    cdef public bint samples

    def __init__(self, long long epoch, encoder=None, strings=None, encoding_type=None, finder=None,
                 frames=(None, None), truncations=(None, None), bint default_split=False, bint split_matters=False,
                 bint pads=False, around=None, pair_frames=(None, None), bint words_in_one_call=False):
        self.epoch = epoch
        self.encoder, self.strings, self.encoding_type = encoder, strings, encoding_type
        self.words_encoder = getattr(encoder, "encode_words", None)
        self.finder, self.around = finder, around
        self.frame_with, self.frame_without = frames
        self.pair_with, self.pair_without = pair_frames
        self.truncation_with, self.truncation_without = truncations
        self.default_split, self.split_matters, self.pads = default_split, split_matters, pads
        self.words_in_one_call = words_in_one_call
        self.around_words = getattr(around[0], "encode_words", None) \
            if words_in_one_call and type(around) is tuple else None

    @property
    def usable(self) -> bool:
        """Whether some calls can take this way (an encoder exists)."""
        return self.encoder is not None

    cdef object encode_one(self, tokenizer, str text, object add_special, object split):
        """The Encoding of ``text``, or None for the long way."""
        cdef object frame, result
        cdef tuple truncation
        cdef str lead
        settings = self._single_settings(add_special, split)
        if settings is None:
            return None
        frame, truncation = settings
        if self.finder is not None and self.finder.holds(text):
            if self.around is None or split is True or split is None and self.default_split:
                return None     # (the tokens it finds are the ones matched with no special token split)
            if type(self.around) is tuple:      # a kernel call (no Python frame between)
                call, tokens, strings = <tuple>self.around
                results = call([text], tokens, strings, -1)
                encoding = None if results is None else self._encoding_of(results[0], strings, frame, truncation)
            else:
                encoding = self.around(tokenizer, text, frame, truncation)
        else:
            encoding = self._encoding_of(self.encoder(text), self.strings, frame, truncation)
        if encoding is None:
            return None
        if self.pads:
            tokenizer._pad([encoding])
        return encoding

    cdef object encode_words(self, tokenizer, object words, object add_special, object split, bint pad=True):
        """The Encoding of a pre-tokenized sequence (a list or tuple of strs, no pair): each word
        through ``encoder`` (or all through ``around``'s kernel call, where it is one), joined
        (``raw_encoding.joined_words``), framed, cut as one text is and (``pad``) padded; or None
        for the long way (an empty sequence, a word not a str, or holding a token)."""
        cdef object frame
        cdef tuple truncation
        cdef list results
        settings = self._single_settings(add_special, split)
        if settings is None or not words:
            return None
        frame, truncation = settings
        for word in words:
            if type(word) is not str or self.finder is not None and self.finder.holds(<str>word):
                return None
        # A call that joins the words itself (the encoder's, or ``around``'s call's, ``encode_words``)
        # says None only where a word alone would take the long way too.
        if self.words_encoder is not None:
            joined = self.words_encoder(list(words))
            if joined is None:
                return None
            joined = (<tuple>joined)[:3] + (self.strings,)
        elif self.around_words is not None:
            _, tokens, strings = <tuple>self.around
            joined = self.around_words(list(words), tokens, strings)
            if joined is None:
                return None
        else:
            if self.words_in_one_call and type(self.around) is tuple:     # (the kernel call's own strings)
                call, tokens, strings = <tuple>self.around
                made = call(list(words), tokens, strings, -1)
                if made is None:
                    return None
                results = [self._pair_result(result, strings) for result in made]
            else:
                results = [self._pair_result(self.encoder(word), self.strings) for word in words]
            for k in range(len(results)):
                if results[k] is None:
                    return None
                results[k] = whole_result(results[k])
            joined = joined_words(results)
        made = [None]
        fill_encodings(self.encoding_type, made, (0,), [joined], frame, truncation)
        encoding = made[0]
        if encoding is not None and pad and self.pads:
            tokenizer._pad([encoding])
        return encoding

    def encode_words_batch(self, tokenizer, list items not None, add_special, split) -> list:
        """Each of ``items`` that is a pre-tokenized sequence (a list or tuple of strs) encoded as
        ``encode_words`` does it, not padded (the batch is padded as a whole); None for the
        others (pairs of sequences, odd items) and for the sequences that take the long way.

        Only where a sequence's words go to the kernel in one call that joins them
        (``encode_words``, the encoder's or ``around``'s call's): a call a line then cost less
        than all the words of a range in one call and a join a line in Python, which stays the
        way for the others (there it cost less).
        """
        cdef Py_ssize_t n = len(items), i
        cdef list out = [None] * n
        if self.words_encoder is None and self.around_words is None or \
                self._single_settings(add_special, split) is None:
            return out
        for i in range(n):
            item = items[i]
            if type(item) is list or type(item) is tuple:
                out[i] = self.encode_words(tokenizer, item, add_special, split, False)
        return out

    cdef tuple _single_settings(self, object add_special, object split):
        """``(frame, truncation)`` for one sequence called with these arguments, or None: the long way."""
        if self.encoder is None or not self._split_allowed(split):
            return None
        if add_special is True:
            frame, truncation = self.frame_with, self.truncation_with
        elif add_special is False:
            frame, truncation = self.frame_without, self.truncation_without
        else:
            return None
        return None if frame is None else (frame, truncation)

    cdef bint _split_allowed(self, object split):
        """Whether ``split_special_tokens`` (None: the tokenizer's) leaves a call this way."""
        if split is None:
            return not (self.default_split and self.split_matters)
        if split is True:
            return not self.split_matters
        return split is False

    cdef object encode_pair(self, tokenizer, str first, str second, object add_special, object split):
        """The Encoding of the pair ``first``, ``second``, or None for the long way."""
        frame = self._pair_frame(add_special, split)
        if frame is None:
            return None
        return self._pair(tokenizer, first, second, frame, add_special, tokenizer._truncation, tokenizer._padding)

    def encode_pairs(self, tokenizer, list items not None, add_special, split, padding) -> list:
        """Each of ``items`` that is a pair of strs (a tuple or list of two) encoded as
        ``encode_pair`` does it, padded by ``padding`` for itself alone (None: not); None for
        the others, and for the pairs that take the long way (a batch's: ``encode_batch``)."""
        cdef Py_ssize_t n = len(items), i
        cdef list out = [None] * n
        frame = self._pair_frame(add_special, split)
        if frame is None:
            return out
        truncation = tokenizer._truncation     # (read once: another thread may change it meanwhile)
        for i in range(n):
            item = items[i]
            if text_pair(item):
                out[i] = self._pair(tokenizer, item[0], item[1], frame, add_special, truncation, padding)
        return out

    cdef object _pair_frame(self, object add_special, object split):
        """The PairFrame a pair call with these arguments takes this way, or None: the long way."""
        if self.encoder is None or not self._split_allowed(split):
            return None
        return self.pair_with if add_special is True else self.pair_without if add_special is False else None

    cdef object _pair(self, tokenizer, str first, str second, object frame, object add_special, object truncation,
                      object padding):
        """The Encoding of the pair ``first``, ``second`` (see ``pair_frames``), or None for the long way."""
        if self.finder is not None and (self.finder.holds(first) or self.finder.holds(second)):
            return None
        a = self._pair_result(self.encoder(first), self.strings)
        if a is None:
            return None
        b = self._pair_result(self.encoder(second), self.strings)
        if b is None:
            return None
        if truncation is None and padding is None:
            return pair_encoding(self.encoding_type, a, b, frame)
        return tokenizer._pair_of_results(whole_result(a), whole_result(b), frame, add_special, truncation, padding)

    cdef tuple _pair_result(self, object result, object strings):
        """A kernel's ``result`` for one text (see ``encoder``; ``strings`` spell its ids) in
        ``pair_encoding``'s form, or None."""
        if type(result) is not tuple or len(<tuple>result) < 3:
            return None
        if len(<tuple>result) <= 4:
            return (<tuple>result)[:3] + (strings,)
        if len(<tuple>result) == 5 and type((<tuple>result)[4]) is list:      # its own token strings
            return <tuple>result
        if len(<tuple>result) == 5 and isinstance((<tuple>result)[3], SpanSource):    # the ids alone
            return (<tuple>result)[:3] + (strings,) + (<tuple>result)[3:]
        return None

    cdef object _encoding_of(self, object result, object strings, object frame, tuple truncation):
        """The Encoding of a kernel's ``result`` for one text (see ``encoder``), or None."""
        if type(result) is not tuple:
            return None
        spans_from = source = None
        if len(<tuple>result) == 5 and type((<tuple>result)[4]) is list:     # its own token strings
            made = [None]
            fill_encodings(self.encoding_type, made, (0,), [result], frame, truncation)
            return made[0]
        if len(<tuple>result) >= 5:     # the ids alone, with what works out the offsets if asked
            spans_from, source = (<tuple>result)[3], (<tuple>result)[4]
        return encoding_of(self.encoding_type, (<tuple>result)[0], (<tuple>result)[1], strings, frame, truncation,
                           spans_from, source)


cpdef bint holds(str text, str part) except -1:
    """``part in text``, found by its first char (a memchr-speed scan; ``str.__contains__`` is
    several times slower for a needle of 2-4 chars, and most texts hold no such char).

    >>> holds("a < b <| c", "<|"), holds("a < b", "<|"), holds("abc", "")
    (True, False, True)
    """
    cdef Py_ssize_t n = len(text), pos
    cdef Py_UCS4 first
    if not part:
        return True
    first = part[0]
    pos = PyUnicode_FindChar(text, first, 0, n, 1)
    while pos >= 0:
        if PyUnicode_Tailmatch(text, part, pos, n, -1):
            return True
        pos = PyUnicode_FindChar(text, first, pos + 1, n, 1)
    return False


cpdef bint text_pair(item) except -1:
    """Whether a batch item is a pair of strs (a tuple or list of two).

    >>> text_pair(("a", "b")), text_pair(["a", "b"]), text_pair(("a", ["b"])), text_pair("ab")
    (True, True, False, False)
    """
    return (type(item) is tuple or type(item) is list) and len(item) == 2 and type(item[0]) is str \
        and type(item[1]) is str


cpdef bint only_str(items) except -1:
    """Whether every item is exactly a str (not a subclass): ``set(map(type, items)) == {str}``
    without a set, for a batch's fast paths (True for an empty batch).

    >>> only_str(["a", "b"]), only_str(["a", ("b", "c")]), only_str([])
    (True, False, True)
    """
    cdef object item
    if type(items) is list:
        for item in <list>items:
            if type(item) is not str:
                return False
        return True
    for item in items:
        if type(item) is not str:
            return False
    return True


cpdef SingleText current_single(tokenizer):
    """``tokenizer``'s snapshot at this epoch, built anew (``Tokenizer._single_text``) once the epoch moved."""
    return _snapshot(tokenizer)


cdef inline SingleText _snapshot(tokenizer):
    cdef SingleText single = tokenizer._single
    if single is None or single.epoch != <long long>_EPOCH[0]:
        single = tokenizer._single_text()
    return single


@cython.binding(True)
def tokenizer_encode(self, sequence, pair=None, is_pretokenized=False, add_special_tokens=True,
                     split_special_tokens=None):
    """Encode one input (or a pair) into an :class:`Encoding`.

    ``split_special_tokens=True`` treats special-token text in the input
    as plain text (safe for untrusted input); the default follows
    :attr:`encode_special_tokens` (False: matched, as in Hugging Face).
    """
    encoding = drawer = state = None
    cdef SingleText single = _snapshot(self)
    if single.samples:      # (this way may draw, then give up: the long way must draw the same)
        drawer = self._model._get_encoder()
        state = drawer.rng_state
    if pair is None and is_pretokenized is True and (type(sequence) is list or type(sequence) is tuple):
        encoding = single.encode_words(self, sequence, add_special_tokens, split_special_tokens)
    elif type(sequence) is str and is_pretokenized is False:
        if pair is None:
            encoding = single.encode_one(self, <str>sequence, add_special_tokens, split_special_tokens)
        elif type(pair) is str:
            encoding = single.encode_pair(self, <str>sequence, <str>pair, add_special_tokens,
                                          split_special_tokens)
    if encoding is not None:
        return encoding
    if drawer is not None:
        drawer.rng_state = state
    return self._encode_general(sequence, pair, is_pretokenized, add_special_tokens, split_special_tokens)
