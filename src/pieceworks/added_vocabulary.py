"""Added tokens: strings matched in the raw text before pre-tokenization.

An :class:`AddedToken` (``[CLS]``, ``<|endoftext|>``, a user's domain word)
is found in the input before the normalizer and pre-tokenizer run and is
never split. ``special`` tokens are also skipped by ``decode(...,
skip_special_tokens=True)``. Matching follows Hugging Face ``tokenizers``:
the leftmost-longest match wins; ``single_word`` requires word boundaries
around it; ``lstrip``/``rstrip`` swallow the whitespace beside it;
``normalized`` tokens are matched in the normalized text, the others in
the original.
"""

from __future__ import annotations

from operator import attrgetter
from typing import NamedTuple

from ._component import _EPOCH
from ._kernels.token_finder import TokenTrie
from .errors import ConfigError, InputTypeError

__all__ = ["AddedToken"]

# What an AddedToken is: equality, pickles and other libraries' tokens go by these.
_ADDED_TOKEN_FIELDS = ("content", "single_word", "lstrip", "rstrip", "normalized", "special")
_fields_of = attrgetter(*_ADDED_TOKEN_FIELDS)


class AddedToken:
    """A token added to the vocabulary and matched whole in the input.

    >>> AddedToken("[MASK]", lstrip=True, special=True)
    AddedToken("[MASK]", rstrip=False, lstrip=True, single_word=False, normalized=False, special=True)

    ``normalized`` defaults to ``not special``, as in Hugging Face. Tokens
    are equal when all six fields are.
    """

    _normalized_given = False       # (what a token read back from a pickle, which does not keep it, has)

    def __init__(self, content: str, single_word: bool = False, lstrip: bool = False, rstrip: bool = False,
                 normalized: bool | None = None, special: bool = False):
        if not isinstance(content, str):
            raise InputTypeError(f"AddedToken content must be a str, got {type(content).__name__}")
        self.content = content
        self.single_word = single_word
        self.lstrip = lstrip
        self.rstrip = rstrip
        # Whether ``normalized`` was given: if not, a token made special (add_special_tokens) is not normalized.
        self._normalized_given = normalized is not None
        self.normalized = not special if normalized is None else normalized
        self.special = special

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _fields_of(self) == _fields_of(other)

    def __repr__(self) -> str:
        return (f'AddedToken("{self.content}", rstrip={self.rstrip}, lstrip={self.lstrip}, '
                f"single_word={self.single_word}, normalized={self.normalized}, special={self.special})")

    def __str__(self) -> str:
        return self.content

    def __hash__(self) -> int:
        return hash(self.content)

    def to_json(self, id: int) -> dict:
        """tokenizer.json's ``added_tokens`` entry."""
        return {"id": id, "content": self.content, "single_word": self.single_word, "lstrip": self.lstrip,
                "rstrip": self.rstrip, "normalized": self.normalized, "special": self.special}

    def __getstate__(self):
        return dict(zip(_ADDED_TOKEN_FIELDS, _fields_of(self)))

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)


def as_added_token(token, special: bool) -> AddedToken:
    """A str or AddedToken as an AddedToken (a str becomes one with default flags).

    As in Hugging Face, ``special=True`` (add_special_tokens) makes a given
    AddedToken special, and not normalized unless it says ``normalized``;
    ``special=False`` (add_tokens) keeps it as it is.

    >>> as_added_token(AddedToken("<x>"), special=True)
    AddedToken("<x>", rstrip=False, lstrip=False, single_word=False, normalized=False, special=True)
    """
    if isinstance(token, AddedToken):
        if not special or token.special:
            return token
        return AddedToken(token.content, token.single_word, token.lstrip, token.rstrip,
                          normalized=token.normalized if token._normalized_given else False, special=True)
    if isinstance(token, str):
        return AddedToken(token, special=special)
    if all(hasattr(token, name) for name in _ADDED_TOKEN_FIELDS) and isinstance(token.content, str):
        # Another library's AddedToken (Hugging Face's: transformers adds its pad and mask tokens as
        # those): the same flags, its normalized taken as given.
        return as_added_token(AddedToken(**{name: getattr(token, name) for name in _ADDED_TOKEN_FIELDS}), special)
    raise InputTypeError(f"expected a str or AddedToken, got {type(token).__name__}",
                         fix="pass token strings or pieceworks.AddedToken objects")



class AddedVocabulary:
    """The added tokens of one tokenizer, and how they are found in text.

    Ids: a token already in the model's vocabulary keeps its id; a new one
    gets the next id after the model's vocabulary (and after earlier added
    tokens). Two matchers are kept, as in Hugging Face: tokens with
    ``normalized=False`` are found in the original text, the others in the
    normalized text.
    """

    def __init__(self):
        self.by_content: dict[str, int] = {}
        self.by_id: dict[int, AddedToken] = {}
        self.added: list[AddedToken] = []      # non-special, in the order given
        self.special: list[AddedToken] = []    # special, in the order given
        self.special_set: set[str] = set()
        self._top = -1                         # the largest id in by_content
        self._spelled: dict[int, str] = {}     # id -> the normalized content of a normalized token
        self._keys: dict[str, str] = {}        # content -> its normalized form, while _keys_for holds
        self._keys_for: tuple | None = None    # (id of the normalizer, component epoch) they were made with
        self._version = 0                      # moves on with every change of the tokens or their forms
        # The matchers and the version they were made for, made again on first use after a change:
        # adding n tokens one call at a time then makes them once.
        self._made: tuple[int, _Matchers] = (0, _NO_MATCHERS)

    def __len__(self) -> int:
        return len(self.by_content)

    # Pickled for training's worker processes (see trainers.counts.CountPlan): the matchers hold
    # C state (the finder) and are made again from the tokens and their kept normalized forms.
    def __getstate__(self):
        return {**self.__dict__, "_made": (-1, _NO_MATCHERS), "_keys_for": None}

    def __setstate__(self, state):
        self.__dict__.update(state)

    # The matchers (see _Matchers), made when first read after a change.
    @property
    def _raw_matcher(self):
        return self._current().raw

    @property
    def _normalized_matcher(self):
        return self._current().normalized

    @property
    def finder(self) -> TokenTrie | None:
        """What :meth:`may_occur_in` asks (None: no token), for callers that ask it in C."""
        return self._current().finder

    def _current(self) -> "_Matchers":
        version, made = self._made
        return made if version == self._version else self._make_matchers()

    def token_to_id(self, token: str, model) -> int | None:
        tid = self.by_content.get(token)
        return tid if tid is not None else model.token_to_id(token)

    def id_to_token(self, id: int, model) -> str | None:
        """The token of ``id``: an added token's content, normalized if the token is (as Hugging Face
        spells it, so ``decode`` does not skip a special token the normalizer changes), else the model's."""
        tok = self.by_id.get(id)
        if tok is None:
            return model.id_to_token(id)
        return self._spelled.get(id, tok.content)

    def has_normalized_tokens(self) -> bool:
        """Whether some added token is matched in the normalized text."""
        return self._current().normalized is not None

    def may_occur_in(self, text: str) -> bool:
        """Whether some added token occurs in ``text`` as it is (not normalized).

        False is a promise that :meth:`extract_and_normalize` with no
        normalizer finds nothing (whatever ``split_special``), so the caller
        can skip splitting. With a normalizer, tokens matched after
        normalization may still appear: see :meth:`has_normalized_tokens`.
        The same search as :meth:`texts_to_ask`, for one text.
        """
        finder = self._current().finder
        return finder is not None and finder.holds(text)

    def may_occur_in_any(self, texts: list[str]) -> bool:
        """Whether :meth:`may_occur_in` is True for some text (see :meth:`texts_to_ask`)."""
        return bool(self.texts_to_ask(texts))

    def texts_to_ask(self, texts: list[str]) -> list[int]:
        """Indices of the texts for which :meth:`may_occur_in` is True: those holding a token's content.

        Each text is read once, whatever the number and length of the
        tokens (a :class:`~pieceworks._kernels.token_finder.TokenTrie`): the
        chars the tokens end with are looked for, and only from there is
        the automaton walked. An end as common as ``>`` (Qwen's) costs a
        few look-ups per ``>``, not a regex search per line that holds one.

        >>> from pieceworks.models import BPE
        >>> v = AddedVocabulary(); v.add([AddedToken("<|endoftext|>"), AddedToken("<|start|>")], BPE(), None)
        2
        >>> v.texts_to_ask(["a <|endo", "b < c", "<|start|>", "<|x", "<|end", "oftext|>", "x<|endoftext|>"])
        [2, 6]
        """
        finder = self._current().finder
        return finder.texts_holding(texts) if finder is not None else []

    def is_special(self, content: str) -> bool:
        return content in self.special_set

    def add(self, tokens: list[AddedToken], model, normalizer) -> int:
        """Add tokens (special ones are remembered as such); return how many were new. A token
        with empty content is not added, as in Hugging Face.

        Only the tokens given are normalized (while the normalizer and the
        components are unchanged: see :meth:`refresh`); the matchers are
        made again when next used, so adding one token at a time costs no
        pass over all the others.
        """
        for tok in tokens:
            if tok.special and tok.content and tok.content not in self.special_set:
                self.special.append(tok)
                self.special_set.add(tok.content)
        ignored = 0
        for tok in tokens:
            if not tok.content:     # (it would match between every two chars; Hugging Face skips it too)
                ignored += 1
                continue
            known_id = self.by_content.get(tok.content)
            if known_id is not None and self.by_id.get(known_id) == tok:  # an equal token has the same content
                ignored += 1
                continue
            new_id = self.token_to_id(tok.content, model)
            if new_id is None:
                new_id = self._next_id(model)
            old_id = self.by_content.get(tok.content)
            self.by_content[tok.content] = new_id
            self._top = max(self._top, new_id)
            if old_id is not None and old_id != new_id:
                self.by_id.pop(old_id, None)
            self.by_id[new_id] = tok
            if tok.content not in self.special_set:
                self.added.append(tok)
        self._note_forms(normalizer, tokens)
        return len(tokens) - ignored

    def _next_id(self, model) -> int:
        size = model.get_vocab_size()
        if not self.by_content:
            return size
        top = self._top
        return top + 1 if top >= size or size == 0 else size

    def forget_normalized_forms(self) -> None:
        """Normalize every token's content again at the next :meth:`refresh`, and forget how each was
        spelled (a normalizer was set: Hugging Face then spells them as the new one does)."""
        self._keys_for = None
        self._spelled = {}

    def refresh(self, model, normalizer) -> None:
        """Take in a new model or normalizer (or a change to them): the matchers are made again.

        A token's normalized form is kept while the normalizer is the same
        object and no component has changed since (:func:`epoch`), so adding
        tokens one call at a time normalizes each once, as in Hugging Face;
        otherwise all are normalized again here.
        """
        self._note_forms(normalizer, None)

    def _note_forms(self, normalizer, tokens: list[AddedToken] | None) -> None:
        """Normalize the contents of ``tokens`` (None: all, as must be when the keys are stale) and
        note how the normalized ones are spelled; the matchers are to be made again."""
        if self._keys_for != (id(normalizer), _EPOCH[0]):
            self._keys, tokens = {}, None
        spelled: dict[int, str] = {}
        for listed in self.special + self.added if tokens is None else tokens:
            tid = self.by_content.get(listed.content)
            if tid is None:     # (an empty token, never added)
                continue
            # The token as last added: adding a content again with other options replaces it (in
            # by_id), and, as in Hugging Face, its new options decide which matcher finds it.
            tok = self.by_id.get(tid, listed)
            if tok.normalized:
                key = self._key(tok.content, normalizer)
                if key and key != tok.content:
                    # Only a spelling the normalizer changed replaces the id's token, as in Hugging
                    # Face: so a token that took the id since (tokens added before training keep
                    # their ids, which the trainer's special tokens may get) answers for it.
                    spelled[tid] = key
        # Added to until a normalizer is set: Hugging Face keeps spelling a token as normalized once it
        # was, even after it is added again unnormalized, until then.
        self._spelled.update(spelled)
        self._version += 1
        _EPOCH[0] += 1      # what a tokenizer's encode snapshot knows of these tokens is stale
        self._keys_for = (id(normalizer), _EPOCH[0])

    def _key(self, content: str, normalizer) -> str:
        """``content`` normalized (kept in ``_keys``: see :meth:`refresh`)."""
        key = self._keys.get(content)
        if key is None:
            key = self._keys[content] = content if normalizer is None else normalizer.normalize_str(content)
        return key

    def _make_matchers(self) -> "_Matchers":
        """Make both matchers, without and with the special tokens, from the tokens and their keys.

        They are kept with the version they were made from: a change made
        meanwhile (another thread) leaves them stale, to be made again.
        """
        version = self._version
        raw: dict[str, int] = {}
        normed: dict[str, int] = {}
        for listed in self.special + self.added:
            tid = self.by_content[listed.content]
            tok = self.by_id.get(tid, listed)
            if tok.normalized:
                key = self._keys[tok.content]      # (_note_forms made it)
                if key:
                    normed.setdefault(key, tid)
            else:
                raw.setdefault(tok.content, tid)
        raw_matcher, normalized_matcher = _compile_matcher(raw), _compile_matcher(normed)
        contents = [c for c in list(raw) + list(normed) if c]
        made = _Matchers(raw_matcher, normalized_matcher,
                         (self._without_special(raw_matcher), self._without_special(normalized_matcher)),
                         TokenTrie(contents) if contents else None)
        self._made = (version, made)
        return made

    # -- matching ------------------------------------------------------
    def extract_and_normalize(self, normalizer, sequence: str, split_special: bool = False):
        """Find added tokens in ``sequence``, normalize the rest: a PreTokenizedString.

        With ``split_special=True`` special tokens are treated as plain text
        (not matched); other added tokens still are.
        """
        from .pretokenized import PreTokenizedString

        pretok = PreTokenizedString(sequence)
        raw, normed = self._matchers(split_special)
        if raw is not None:
            pretok.split(lambda _, ns: self._split_on_matches(ns, raw))

        def normalize_then_match(_, ns):
            if normalizer is not None and len(ns):     # (an empty input: Hugging Face calls no normalizer)
                normalizer.normalize(ns)
            if normed is None:
                return [ns.narrowed()]
            return self._split_on_matches(ns, normed)

        pretok.split(normalize_then_match)
        return pretok

    def _matchers(self, split_special: bool) -> tuple:
        """The raw and the normalized matcher; with ``split_special``, those without the special tokens."""
        made = self._current()
        return made.plain if split_special else (made.raw, made.normalized)

    def _without_special(self, matcher):
        """``matcher`` for ``split_special``: as in Hugging Face, a special token is still found (its
        chars are taken: no other token matches across them) and then left as plain text."""
        if matcher is None:
            return None
        _, table = matcher
        skipped = frozenset([i for i in table.values() if self.is_special(self.by_id[i].content)])
        return (_Tokens(tuple(table), skipped), table) if skipped else matcher

    def token_spans(self, text: str, split_special: bool = False) -> list[tuple[int, int, int]]:
        """``(start, stop, id)`` of each added token :meth:`extract_and_normalize` finds in ``text``
        with no normalizer, in order: the same two passes, without a NormalizedString.

        >>> from pieceworks.models import BPE
        >>> v = AddedVocabulary()
        >>> v.add([AddedToken("<s>", special=True), AddedToken("ab", normalized=True, rstrip=True)], BPE(), None)
        2
        >>> v.token_spans("x<s>ab  y"), v.token_spans("x<s>ab  y", split_special=True)
        ([(1, 4, 0), (4, 8, 1)], [(4, 8, 1)])
        """
        raw, normed = self._matchers(split_special)
        spans = self._match_spans(text, raw) if raw is not None else []
        if normed is None:
            return spans
        # (Each gap is the second pass's text: with no normalizer, as it is.)
        return _with_second_pass(text, spans, lambda gap: self._match_spans(gap, normed))

    def token_spans_of(self, texts: list[str], split_special: bool = False) -> list[list[tuple[int, int, int]]]:
        """:meth:`token_spans` of each text; with no token matched after normalizing, found in C
        for all the texts at once (``TokenTrie.spans_of``), but those a token's options move.

        >>> from pieceworks.models import BPE
        >>> v = AddedVocabulary()
        >>> v.add([AddedToken("<s>", special=True), AddedToken("ab", rstrip=True)], BPE(), None)
        2
        >>> v.token_spans_of(["x<s>y", "ab  c"]), v.token_spans_of(["x<s>y"], split_special=True)
        ([[(1, 4, 0)], [(0, 4, 1)]], [[]])
        """
        raw, normed = self._matchers(split_special)
        if normed is not None:
            return [self.token_spans(text, split_special) for text in texts]
        if raw is None:
            return [[] for _ in texts]
        tokens, table = raw
        out = tokens.trie().spans_of(texts, tokens.ids(table, self.by_id))
        for k, spans in enumerate(out):
            if spans is None:
                out[k] = self._match_spans(texts[k], raw)
        return out

    def exact_matcher(self, split_special: bool = False, as_is: bool = False) -> tuple | None:
        """The passes that find the tokens in a text as it is: ``((trie, ids),)``, or with a second
        pass in the stretches between the first's matches ``((trie, ids), (trie, ids))``. A pass is
        the TokenTrie of its tokens (strings) and each one's id, None for a token whose options move
        its span from the match (see ``_Tokens.ids``). None when no token is added, or some is matched
        after normalizing, unless ``as_is`` (the caller's texts are ones the normalizer keeps, as is
        each stretch of them: no normalizer, or NFC): then those are the second pass, as
        :meth:`token_spans` finds them.

        >>> from pieceworks.models import BPE
        >>> v = AddedVocabulary()
        >>> v.add([AddedToken("<s>", normalized=False), AddedToken("ab", normalized=False, rstrip=True)], BPE(), None)
        2
        >>> ((trie, ids),) = v.exact_matcher(); trie.spans("x<s>ab"), ids
        ([(1, 4, 0), (4, 6, 1)], [0, None])
        >>> v.add([AddedToken("cd")], BPE(), None), v.exact_matcher()     # (matched after normalizing)
        (1, None)
        >>> [trie.spans("cd<s>") for trie, _ in v.exact_matcher(as_is=True)]
        [[(2, 5, 0)], [(0, 2, 0)]]
        """
        raw, normed = self._matchers(split_special)
        if normed is not None and not as_is:
            return None
        passes = tuple((matcher[0].trie(), matcher[0].ids(matcher[1], self.by_id))
                       for matcher in (raw, normed) if matcher is not None)
        return passes or None

    def token_spans_normalized(self, view, split_special: bool = False) -> list[tuple[int, int, int]]:
        """:meth:`token_spans` with a normalizer: ``(start, stop, id)`` in the text ``view`` makes.

        The same two passes as :meth:`extract_and_normalize`: tokens not
        matched after normalizing are found in ``view.source`` and kept as
        they are (``view.keep(start, stop)``); each gap between them is
        normalized on its own (``view.normalize(start, stop)``, which returns
        the gap's normalized text) and the other tokens are found in it.
        ``view.length`` is how many chars the view has made.

        >>> from pieceworks.models import BPE
        >>> class Upper:        # a view that upper-cases each gap
        ...     def __init__(self, source): self.source, self.text = source, ""
        ...     length = property(lambda self: len(self.text))
        ...     def keep(self, a, b): self.text += self.source[a:b]
        ...     def normalize(self, a, b): self.text += self.source[a:b].upper(); return self.source[a:b].upper()
        >>> v = AddedVocabulary()
        >>> v.add([AddedToken("<s>", special=True), AddedToken("AB", normalized=True)], BPE(), None)
        2
        >>> view = Upper("x<s>ab")
        >>> v.token_spans_normalized(view), view.text
        ([(1, 4, 0), (4, 6, 1)], 'X<s>AB')
        """
        raw, normed = self._matchers(split_special)
        text = view.source
        spans = self._match_spans(text, raw) if raw is not None else []
        out: list[tuple[int, int, int]] = []
        at = 0
        for start, stop, tid in spans + [(len(text), len(text), -1)]:
            if at < start:
                base = view.length
                gap = view.normalize(at, start)
                if normed is not None:
                    out += [(a + base, b + base, t) for a, b, t in self._match_spans(gap, normed)]
            if tid >= 0:
                base = view.length
                view.keep(start, stop)
                out.append((base, base + stop - start, tid))
            at = stop
        return out

    def _match_spans(self, text: str, matcher) -> list[tuple[int, int, int]]:
        """``(start, stop, id)`` of each token ``matcher`` finds in ``text``, as its single_word,
        lstrip and rstrip options say."""
        tokens, table = matcher
        found = tokens.spans(text)
        ids = tokens.ids(table, self.by_id)
        if all([ids[k] is not None for _, _, k in found]):     # no option moves a span: them as found
            return [(start, stop, ids[k]) for start, stop, k in found]
        contents = tokens.contents
        out = []
        start_offset = 0
        for start, stop, k in found:
            tid = table[contents[k]]
            tok = self.by_id[tid]
            if tid in tokens.skipped:
                continue        # (found, so its chars are taken, but left as text)
            if tok.single_word:
                start_space = start == 0 or not _is_word_char(text[start - 1])
                stop_space = stop == len(text) or not _is_word_char(text[stop])
                if not (start_space and stop_space):
                    continue
            if tok.lstrip:
                start = max(_leftmost_space_at_end(text, start), start_offset)
            if tok.rstrip:
                stop = _rightmost_space_at_start(text, stop)
            out.append((start, stop, tid))
            start_offset = stop
        return out

    def _split_on_matches(self, ns, matcher):
        from .pretokenized import Split, Token

        text = ns.normalized
        out = []
        start_offset = 0
        for start, stop, tid in self._match_spans(text, matcher):
            if start_offset < start:
                out.append(Split(ns.slice(start_offset, start)))
            piece = ns.slice(start, stop)
            out.append(Split(piece, [Token(tid, piece.normalized, (0, len(piece.normalized)))]))
            start_offset = stop
        if not out:
            return [ns.narrowed()]
        if start_offset != len(text):
            out.append(Split(ns.slice(start_offset, len(text))))
        return out


from functools import lru_cache  # noqa: E402  (kept beside its only users)

from ._regex import Regex  # noqa: E402
from .alignment import is_whitespace  # noqa: E402

# Hugging Face's single_word test is Rust's regex \w: Alphabetic, marks,
# decimal digits, connector punctuation and the two joiners, in the Unicode
# version of the regex crate's tables. Oniguruma's tables (pieceworks'
# Regex) have the same version, the `regex` module's a newer one (it counts
# Unicode 16 and 17 letters); Oniguruma's own \w is another class (it
# counts ² and ½, not U+200D), so the class is spelled out.
_WORD_CLASS = r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]"


@lru_cache(maxsize=1)
def _word_regex() -> Regex:
    return Regex(_WORD_CLASS)


@lru_cache(maxsize=4096)
def _is_word_char(char: str) -> bool:
    """Whether ``char`` is a word char to ``single_word`` (Hugging Face's, Rust's ``\\w``).

    >>> _is_word_char("é"), _is_word_char("_"), _is_word_char("\u200d"), _is_word_char("²"), _is_word_char("-")
    (True, True, True, False, False)
    """
    return bool(_word_regex().spans(char))


def _leftmost_space_at_end(text: str, end: int) -> int:
    """Start of the whitespace run that ends at ``end``."""
    while end > 0 and is_whitespace(text[end - 1]):
        end -= 1
    return end


def _rightmost_space_at_start(text: str, start: int) -> int:
    """End of the whitespace run that starts at ``start``."""
    n = len(text)
    while start < n and is_whitespace(text[start]):
        start += 1
    return start


def _compile_matcher(table: dict[str, int]):
    return (_Tokens(tuple(table)), table) if table else None


class _Matchers(NamedTuple):
    """What finds added tokens in text, made from the tokens at once (see AddedVocabulary._current)."""

    raw: tuple | None            # (a _Tokens, {content: id}) of the tokens matched in the raw text
    normalized: tuple | None     # the same for those matched in the normalized text
    plain: tuple                 # the two without the special tokens (split_special)
    finder: TokenTrie | None     # finds the texts of a batch that hold a token


_NO_MATCHERS = _Matchers(None, None, (None, None), None)


def spans_in_passes(passes: tuple, text: str) -> list[tuple[int, int, int]] | None:
    """``(start, stop, id)`` of the tokens the passes of :meth:`AddedVocabulary.exact_matcher` find
    in ``text``: the first pass's, and the second's in the stretches between them; None if one of
    them is a token with no id (its options move its span).

    >>> from pieceworks._kernels.token_finder import TokenTrie
    >>> spans_in_passes(((TokenTrie(["<s>"]), [7]), (TokenTrie(["a<", "b"]), [8, 9])), "a<s>b")
    [(1, 4, 7), (4, 5, 9)]
    """
    (trie, ids), inner = passes[0], passes[1] if len(passes) > 1 else None
    spans = trie.spans_of([text], ids)[0]
    if spans is None or inner is None:
        return spans
    return _with_second_pass(text, spans, lambda gap: inner[0].spans_of([gap], inner[1])[0])


def spans_in_passes_of(passes: tuple, texts: list[str]) -> list:
    """:func:`spans_in_passes` of each text, each pass one C call for all of them (the second on
    the stretches between the first's tokens; a text the first finds none in is one stretch).

    >>> from pieceworks._kernels.token_finder import TokenTrie
    >>> spans_in_passes_of(((TokenTrie(["<s>"]), [7]), (TokenTrie(["a<", "b"]), [8, 9])), ["a<s>b", "ab", "x"])
    [[(1, 4, 7), (4, 5, 9)], [(1, 2, 9)], []]
    """
    (trie, ids), inner = passes[0], passes[1] if len(passes) > 1 else None
    firsts = trie.spans_of(texts, ids)
    if inner is None:
        return firsts
    whole = [k for k, spans in enumerate(firsts) if spans == []]
    out = list(firsts)
    for k, spans in zip(whole, inner[0].spans_of([texts[k] for k in whole], inner[1])):
        out[k] = spans
    for k, spans in enumerate(firsts):
        if spans:       # (a text holding a first-pass token: its stretches one by one)
            out[k] = _with_second_pass(texts[k], spans, lambda gap: inner[0].spans_of([gap], inner[1])[0])
    return out


def _with_second_pass(text: str, spans: list, find_in) -> list[tuple[int, int, int]] | None:
    """``spans`` (``(start, stop, id)``, in order) with, in each gap of ``text`` between them, the spans
    ``find_in(gap)`` gives, moved to where the gap starts; None if it gives None for one.

    >>> _with_second_pass("xaby", [(1, 3, 7)], lambda gap: [(0, 1, ord(gap))])
    [(0, 1, 120), (1, 3, 7), (3, 4, 121)]
    """
    out: list[tuple[int, int, int]] = []
    at = 0
    for start, stop, tid in spans + [(len(text), len(text), -1)]:
        if at < start:
            found = find_in(text[at:start])
            if found is None:
                return None
            out += [(a + at, b + at, t) for a, b, t in found]
        if tid >= 0:
            out.append((start, stop, tid))
        at = stop
    return out


class _Tokens:
    """Where some tokens occur in a text, leftmost-longest (a :class:`TokenTrie`, made when first
    searched: the matchers without the special tokens are made with the others, and rarely used).

    >>> _Tokens(("<s>", "<s>x", "ab")).spans("x<s>ab<s>x")
    [(1, 4, 0), (4, 6, 2), (6, 10, 1)]
    """

    __slots__ = ("contents", "skipped", "_trie", "_ids")

    def __init__(self, contents: tuple[str, ...], skipped: frozenset = frozenset()):
        self.contents = contents
        self.skipped = skipped      # ids of tokens found but left as text (special ones, split_special)
        self._trie = None
        self._ids = None

    def ids(self, table: dict[str, int], by_id: dict) -> list:
        """Per token, its id when it has no single_word, lstrip or rstrip option (its span is the
        match as found), else None; made on first use (the tokens of a matcher do not change).
        A ``skipped`` token's is None too (found, it is left as text).

        >>> from pieceworks.added_vocabulary import AddedToken
        >>> _Tokens(("<s>", "ab")).ids({"<s>": 0, "ab": 1}, {0: AddedToken("<s>"), 1: AddedToken("ab", rstrip=True)})
        [0, None]
        """
        ids = self._ids
        if ids is None:
            ids = []
            for content in self.contents:
                tok = by_id[table[content]]
                moved = tok.single_word or tok.lstrip or tok.rstrip or table[content] in self.skipped
                ids.append(None if moved else table[content])
            self._ids = ids
        return ids

    def spans(self, text: str) -> list[tuple[int, int, int]]:
        """``(start, end, k)`` of each token found, ``contents[k]``."""
        return self.trie().spans(text)

    def trie(self) -> TokenTrie:
        """The tokens' trie, made on first use (two threads may both make it; either is kept)."""
        trie = self._trie
        if trie is None:
            trie = self._trie = TokenTrie(self.contents)
        return trie

    def __getstate__(self):
        return self.contents, self.skipped

    def __setstate__(self, state):
        self.contents, self.skipped = state
        self._trie = None
        self._ids = None
