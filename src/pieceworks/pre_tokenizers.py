"""Pre-tokenizers: the second stage, cutting the normalized text into pieces.

A pre-tokenizer cuts every split of a
:class:`~pieceworks.pretokenized.PreTokenizedString` (and may edit it, as
ByteLevel and Metaspace do); the model then sees one piece at a time.
Names, fields and behaviour follow Hugging Face ``tokenizers``.

>>> Whitespace().pre_tokenize_str("Hey, you!")
[('Hey', (0, 3)), (',', (3, 4)), ('you', (5, 8)), ('!', (8, 9))]
>>> ByteLevel(add_prefix_space=False).pre_tokenize_str("héllo world")
[('hÃ©llo', (0, 5)), ('Ġworld', (5, 11))]

The character-class splits (Whitespace, WhitespaceSplit, BertPreTokenizer,
Punctuation, Digits, UnicodeScripts and ByteLevel's GPT-2 pattern) come from
the Cython scanner ``_kernels/scan.pyx``, whose Unicode tables are pinned to
the versions Hugging Face uses (see ``_unicode_tables.py``). Only ``Split``,
which takes any user pattern, runs Oniguruma (see :class:`~pieceworks.Regex`).
"""

from __future__ import annotations

import functools

from ._component import MISSING, Component, CustomComponent, Fields, stage_base
from ._kernels import scan
from ._regex import Regex, escape
from .alignment import BEHAVIORS, NormalizedString, SplitDelimiterBehavior, find_matches, split_ranges
from .byte_level import BYTE_TO_CHAR, text_to_byte_chars
from .errors import ConfigError, InputTypeError
from .pretokenized import PreTokenizedString

__all__ = [
    "PreTokenizer", "Whitespace", "WhitespaceSplit", "BertPreTokenizer", "Punctuation", "Digits",
    "Split", "ByteLevel", "Metaspace", "CharDelimiterSplit", "UnicodeScripts", "FixedLength",
    "Sequence",
]

Span = tuple[int, int]


@stage_base("pre_tokenizer")
class PreTokenizer(Component):
    """Base class: ``pre_tokenize(PreTokenizedString)`` cuts in place."""

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        raise NotImplementedError

    def pre_tokenize_str(self, sequence: str) -> list[tuple[str, tuple[int, int]]]:
        """The pieces of a plain string with their offsets.

        >>> WhitespaceSplit().pre_tokenize_str("hi  there")
        [('hi', (0, 2)), ('there', (4, 9))]
        """
        if not isinstance(sequence, str):
            raise InputTypeError(f"pre_tokenize_str needs a str, got {type(sequence).__name__}",
                                 fix="decode bytes first, e.g. data.decode('utf-8')")
        pretok = PreTokenizedString(sequence)
        self.pre_tokenize(pretok)
        return [(text, offsets) for text, offsets, _ in pretok.get_splits()]

    @staticmethod
    def custom(pre_tokenizer) -> "PreTokenizer":
        """A pre-tokenizer that calls ``pre_tokenizer.pre_tokenize(pretok)``, which cuts the
        :class:`~pieceworks.pretokenized.PreTokenizedString` in place, usually with
        ``pretok.split(fn)``: ``fn(index, normalized)`` returns the pieces of one
        split as slices of it (``normalized[start:end]``), so offsets stay exact.
        Hugging Face's ``PreTokenizer.custom`` (a word segmenter for Chinese,
        say); it cannot be saved (see :class:`~pieceworks._component.CustomComponent`).

        >>> class Pairs:
        ...     def pre_tokenize(self, pretok):
        ...         pretok.split(lambda i, s: [s[k:k + 2] for k in range(0, len(str(s)), 2)])
        >>> PreTokenizer.custom(Pairs()).pre_tokenize_str("abcde")
        [('ab', (0, 2)), ('cd', (2, 4)), ('e', (4, 5))]
        """
        return CustomPreTokenizer(pre_tokenizer)


class CustomPreTokenizer(CustomComponent, PreTokenizer):
    """What :meth:`PreTokenizer.custom` makes."""

    method = "pre_tokenize"

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        self.inner.pre_tokenize(pretok)


# -- shared helpers ----------------------------------------------------------

def slices(normalized: NormalizedString, spans: list[Span]) -> list[NormalizedString]:
    """``normalized`` cut at ``spans`` (normalized char offsets).

    While the string is unedited its offsets are the original's, so each
    piece is built directly instead of mapping through the alignment.

    >>> [p.offsets_original() for p in slices(NormalizedString("ab cd"), [(0, 2), (3, 5)])]
    [(0, 2), (3, 5)]
    """
    if normalized.is_identity:
        original, shift = normalized.original, normalized.original_shift
        return [NormalizedString(original[s:e], None, None, shift + s) for s, e in spans]
    return normalized.split_spans(spans)


def _cut_by_class(pretok: PreTokenizedString, actions: bytes) -> None:
    _cut_by_spans(pretok, lambda text: scan.class_runs(text, actions))


def _cut_by_spans(pretok: PreTokenizedString, piece_spans) -> None:
    """Cut each split of ``pretok`` where ``piece_spans(text)`` says (a component's own cut)."""
    pretok.split(lambda _, ns: slices(ns, piece_spans(ns.normalized)))


def _check_bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise InputTypeError(f"{name} must be True or False, got {value!r}", fix=f"pass {name}=True or {name}=False")
    return value


def _check_char(name: str, value) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise ConfigError(f"{name} must be a string of exactly one character, got {value!r}",
                          fix=f"pass a single character, e.g. {name}='▁'")
    return value


def _behavior_from_json(fields: Fields, default=MISSING) -> str:
    """Read ``behavior`` spelled as tokenizer.json spells it (``"MergedWithNext"``), strictly."""
    spellings = {SplitDelimiterBehavior.to_json(b): b for b in BEHAVIORS}
    name = "behavior"
    value = fields.get(name, str, default)
    if value not in spellings:
        raise fields.error(name, f"unknown split behavior {value!r}", fix=f"use one of {', '.join(spellings)}")
    return spellings[value]


class _FieldlessPreTokenizer(PreTokenizer):
    """A pre-tokenizer with no options: JSON is just its type."""

    def _to_fields(self) -> dict:
        return {}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls()


# -- the scanner-backed splits -------------------------------------------------

# Chars no rule names form runs of class 2 (actions_for's default); class 3
# is a second kind of run, so that e.g. a word run and a symbol run stay apart.
_OWN_RUN = 3
_WHITESPACE_ACTIONS = scan.actions_for([(scan.FLAG_WHITESPACE, scan.ACTION_DROP), (scan.FLAG_WORD, _OWN_RUN)])
_WHITESPACE_SPLIT_ACTIONS = scan.actions_for([(scan.FLAG_WHITESPACE, scan.ACTION_DROP)])
_BERT_ACTIONS = scan.actions_for([(scan.FLAG_WHITESPACE, scan.ACTION_DROP),
                                  (scan.FLAG_PUNCT, scan.ACTION_ISOLATE)])
_PUNCT_ISOLATED_ACTIONS = scan.actions_for([(scan.FLAG_PUNCT, scan.ACTION_ISOLATE)])
_DIGITS_CONTIGUOUS_ACTIONS = scan.actions_for([(scan.FLAG_NUMERIC, _OWN_RUN)])
_DIGITS_INDIVIDUAL_ACTIONS = scan.actions_for([(scan.FLAG_NUMERIC, scan.ACTION_ISOLATE)])
# Run classes a class-run cut tells apart (0 drops a char, 1 isolates it).
_RUN_CLASSES = (2, _OWN_RUN)
# No pre-tokenizer: the whole text is one run.
_ONE_RUN_ACTIONS = bytes([_RUN_CLASSES[0]]) * 256


def class_run_actions(pre_tokenizer) -> bytes | None:
    """The action table (:func:`~pieceworks._kernels.scan.actions_for`) of a pre-tokenizer that cuts
    by char classes, or None for one that cuts some other way.

    The scanning kernels (the fast plans' char map, counting for training)
    cut with it. A ``Sequence`` of class-run cuts is one cut: a char any
    member drops is dropped, else one any member isolates is isolated, else
    it runs with a neighbour that every member would run it with. The
    kernels tell two kinds of run apart, so a Sequence needing more (a word
    run, a symbol run and a number run of each) gets None. No pre-tokenizer
    (None) is one run of the whole text.

    >>> class_run_actions(Sequence([WhitespaceSplit(), Punctuation()])) == _BERT_ACTIONS
    True
    >>> scan.class_runs("ab12", class_run_actions(Sequence([Whitespace(), Digits(individual_digits=True)])))
    [(0, 2), (2, 3), (3, 4)]
    >>> class_run_actions(Sequence([Whitespace(), Digits()])), class_run_actions(Metaspace())
    (None, None)
    """
    if pre_tokenizer is None:
        return _ONE_RUN_ACTIONS
    if type(pre_tokenizer) is not Sequence:
        return _member_actions(pre_tokenizer)
    tables = [_member_actions(member) for member in pre_tokenizer.pretokenizers]
    if not tables or None in tables:
        return None
    return _composed_actions(tuple(tables))


def _member_actions(pre_tokenizer) -> bytes | None:
    # Exact types: a subclass may cut differently.
    kind = type(pre_tokenizer)
    if kind is Punctuation:
        return _PUNCT_ISOLATED_ACTIONS if pre_tokenizer.behavior == "isolated" else None
    if kind is Digits:
        return _DIGITS_INDIVIDUAL_ACTIONS if pre_tokenizer.individual_digits else _DIGITS_CONTIGUOUS_ACTIONS
    return {Whitespace: _WHITESPACE_ACTIONS, WhitespaceSplit: _WHITESPACE_SPLIT_ACTIONS,
            BertPreTokenizer: _BERT_ACTIONS}.get(kind)


@functools.lru_cache(maxsize=64)
def _composed_actions(tables: tuple[bytes, ...]) -> bytes | None:
    present = _flag_bytes_present()
    runs: dict[tuple, int] = {}
    out = bytearray(256)
    for flags in range(256):
        actions = [table[flags] for table in tables]
        if scan.ACTION_DROP in actions:
            out[flags] = scan.ACTION_DROP
        elif scan.ACTION_ISOLATE in actions:
            out[flags] = scan.ACTION_ISOLATE
        elif flags in present:
            key = tuple(actions)
            if key not in runs:
                if len(runs) == len(_RUN_CLASSES):
                    return None
                runs[key] = _RUN_CLASSES[len(runs)]
            out[flags] = runs[key]
        else:
            out[flags] = _RUN_CLASSES[0]     # (no char has these flags)
    return bytes(out)


@functools.cache
def _flag_bytes_present() -> frozenset[int]:
    from ._unicode_tables import char_flags

    return frozenset(char_flags())


class Whitespace(_FieldlessPreTokenizer):
    """Runs of word chars and runs of other non-space chars: the regex ``\\w+|[^\\w\\s]+``.

    >>> Whitespace().pre_tokenize_str("It's 4pm!!")
    [('It', (0, 2)), ("'", (2, 3)), ('s', (3, 4)), ('4pm', (5, 8)), ('!!', (8, 10))]
    """

    type_name = "Whitespace"

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        _cut_by_class(pretok, _WHITESPACE_ACTIONS)


class WhitespaceSplit(_FieldlessPreTokenizer):
    """Split on whitespace (Unicode White_Space), which is removed.

    >>> WhitespaceSplit().pre_tokenize_str("a\\u3000b  c!")
    [('a', (0, 1)), ('b', (2, 3)), ('c!', (5, 7))]
    """

    type_name = "WhitespaceSplit"

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        _cut_by_class(pretok, _WHITESPACE_SPLIT_ACTIONS)


class BertPreTokenizer(_FieldlessPreTokenizer):
    """BERT's split: whitespace removed, each punctuation char on its own.

    Punctuation is ASCII punctuation (``$``, ``+``, ``^`` … included) or a
    Unicode ``P*`` category, as of the Unicode version Hugging Face uses.

    >>> BertPreTokenizer().pre_tokenize_str("Hey, friend...")
    [('Hey', (0, 3)), (',', (3, 4)), ('friend', (5, 11)), ('.', (11, 12)), ('.', (12, 13)), ('.', (13, 14))]
    """

    type_name = "BertPreTokenizer"

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        _cut_by_class(pretok, _BERT_ACTIONS)


class Punctuation(PreTokenizer):
    """Split on punctuation chars (BERT's definition), each one a delimiter.

    >>> Punctuation().pre_tokenize_str("a,b")
    [('a', (0, 1)), (',', (1, 2)), ('b', (2, 3))]
    >>> Punctuation("merged_with_previous").pre_tokenize_str("a,b")
    [('a,', (0, 2)), ('b', (2, 3))]
    """

    type_name = "Punctuation"

    def __init__(self, behavior: str = "isolated"):
        self.behavior = behavior

    @property
    def behavior(self) -> str:
        return self._behavior

    @behavior.setter
    def behavior(self, value: str) -> None:
        self._behavior = SplitDelimiterBehavior.parse(value)

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        _cut_by_spans(pretok, self.piece_spans)

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        """The char spans of the pieces this cuts ``text`` into (for each piece of a pre-tokenized string).

        >>> Punctuation("merged_with_next").piece_spans("a,b")
        [(0, 1), (1, 3)]
        """
        if self._behavior == "isolated":
            return scan.class_runs(text, _PUNCT_ISOLATED_ACTIONS)
        return split_ranges(scan.char_matches(text, scan.FLAG_PUNCT), self._behavior)

    def _to_fields(self) -> dict:
        return {"behavior": SplitDelimiterBehavior.to_json(self._behavior)}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(_behavior_from_json(fields, default="Isolated"))


class Digits(PreTokenizer):
    """Split numbers (any Unicode ``N*`` char) from the rest; one piece per digit if asked.

    >>> Digits().pre_tokenize_str("Hey 123")
    [('Hey ', (0, 4)), ('123', (4, 7))]
    >>> Digits(individual_digits=True).pre_tokenize_str("12")
    [('1', (0, 1)), ('2', (1, 2))]
    """

    type_name = "Digits"

    def __init__(self, individual_digits: bool = False):
        self.individual_digits = _check_bool("individual_digits", individual_digits)

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        _cut_by_spans(pretok, self.piece_spans)

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        """The char spans of the pieces this cuts ``text`` into.

        >>> Digits().piece_spans("a12b")
        [(0, 1), (1, 3), (3, 4)]
        """
        return scan.class_runs(text, _DIGITS_INDIVIDUAL_ACTIONS if self.individual_digits else _DIGITS_CONTIGUOUS_ACTIONS)

    def _to_fields(self) -> dict:
        return {"individual_digits": self.individual_digits}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("individual_digits", bool))


class UnicodeScripts(_FieldlessPreTokenizer):
    """Split where the Unicode script changes (kana counts as Han; spaces join any script).

    Chars with no script (spaces, unassigned code points) before the first
    char that has one are dropped, as Hugging Face does.

    >>> UnicodeScripts().pre_tokenize_str("Apples are りんご 林檎")
    [('Apples are ', (0, 11)), ('りんご 林檎', (11, 17))]
    """

    type_name = "UnicodeScripts"

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        pretok.split(lambda _, ns: slices(ns, scan.script_spans(ns.normalized)))


# -- the editing pre-tokenizers --------------------------------------------------

class ByteLevel(PreTokenizer):
    """GPT-2's pre-tokenizer: split by GPT-2's pattern, then spell every byte as a char.

    ``add_prefix_space`` puts a space before a piece that lacks one, so the
    first word is spelled like the others; ``trim_offsets`` is used by the
    ByteLevel post-processor only.

    >>> ByteLevel().pre_tokenize_str("Hello my friend")
    [('ĠHello', (0, 5)), ('Ġmy', (5, 8)), ('Ġfriend', (8, 15))]
    """

    type_name = "ByteLevel"

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True,
                 **_kwargs):
        self.add_prefix_space = _check_bool("add_prefix_space", add_prefix_space)
        self.trim_offsets = _check_bool("trim_offsets", trim_offsets)
        self.use_regex = _check_bool("use_regex", use_regex)

    @staticmethod
    def alphabet() -> list[str]:
        """The 256 chars that spell the bytes (GPT-2's alphabet), in byte order.

        >>> ByteLevel.alphabet()[32], len(ByteLevel.alphabet())
        ('Ġ', 256)
        """
        return list(BYTE_TO_CHAR)

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        # Hugging Face splits every split, then spells every split's bytes;
        # both touch the same (untokenized) splits, so one pass does both.
        pretok.split(self._cut_and_spell)

    def _cut_and_spell(self, _, ns: NormalizedString) -> list[NormalizedString]:
        if self.use_regex and ns.is_identity and ns.normalized.isascii():
            return self._ascii_pieces(ns)
        return [spelled(piece) for piece in self._cut(ns)]

    def _ascii_pieces(self, ns: NormalizedString) -> list[NormalizedString]:
        """:meth:`_cut_and_spell` for unedited ASCII text: spelled in one call, then sliced.

        ASCII chars are one byte each, so every piece keeps its chars'
        alignment; only the added space (aligned with the first char, as
        ``prepend`` does) is not in the original.
        """
        text, original, shift = ns.normalized, ns.original, ns.original_shift
        added = 1 if self.add_prefix_space and text and not text.startswith(" ") else 0
        source = " " + text if added else text
        spelled_source = source.translate(_ASCII_SPELLING)
        pieces = []
        for start, end in scan.gpt2_spans(source):
            spelled_piece = spelled_source[start:end]
            if added and start == 0:
                pieces.append(NormalizedString(original[:max(end - 1, 1)], spelled_piece,
                                               [(0, 1)] + identity_alignment(end - 1), shift))
                continue
            piece_original = original[start - added:end - added]
            if spelled_piece == piece_original:
                pieces.append(NormalizedString(piece_original, None, None, shift + start - added))
            else:
                pieces.append(NormalizedString(piece_original, spelled_piece, identity_alignment(end - start),
                                               shift + start - added))
        return pieces

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        """The char spans of the pieces this cuts ``text`` into, the prefix space aside (GPT-2's
        pattern with ``use_regex``, else the whole text).

        >>> ByteLevel(use_regex=False).piece_spans("a b"), ByteLevel().piece_spans("a b")
        ([(0, 3)], [(0, 1), (1, 3)])
        """
        return scan.gpt2_spans(text) if self.use_regex else [(0, len(text))]

    def _cut(self, ns: NormalizedString) -> list[NormalizedString]:
        text = ns.normalized
        prefix = self.add_prefix_space and text and not text.startswith(" ")
        if not self.use_regex:
            if prefix:
                ns.prepend(" ")
            return [ns]
        if not prefix:
            return slices(ns, self.piece_spans(text))
        if ns.is_identity:
            return prefixed_identity_pieces(ns, scan.gpt2_spans(" " + text))
        ns.prepend(" ")
        return slices(ns, scan.gpt2_spans(ns.normalized))

    def _to_fields(self) -> dict:
        return {"add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("add_prefix_space", bool), fields.get("trim_offsets", bool),
                   fields.get("use_regex", bool, True))


def prefixed_identity_pieces(normalized: NormalizedString, spans: list[Span]) -> list[NormalizedString]:
    """Pieces of an unedited string at ``spans`` of ``" " + text``, as if the space were prepended.

    Same result as ``prepend(" ")`` then slicing, but only the first piece
    carries the space (aligned with the first char, as ``prepend`` does):
    the others stay unedited and cheap.

    >>> pieces = prefixed_identity_pieces(NormalizedString("ab c"), [(0, 3), (3, 5)])
    >>> [(p.normalized, p.offsets_original()) for p in pieces]
    [(' ab', (0, 2)), (' c', (2, 4))]
    """
    original, shift = normalized.original, normalized.original_shift
    first_end = spans[0][1] - 1
    if first_end == 0:
        # The space is a piece of its own: it stands for the first char.
        first = NormalizedString(original[:1], " ", [(0, 1)], shift)
    else:
        first = NormalizedString(original[:first_end], None, None, shift)
        first.prepend(" ")
    return [first] + [NormalizedString(original[s - 1:e - 1], None, None, shift + s - 1) for s, e in spans[1:]]


_ASCII_SPELLING = str.maketrans({chr(b): BYTE_TO_CHAR[b] for b in range(128)})
_IDENTITY: list[Span] = []


def identity_alignment(n: int) -> list[Span]:
    """``[(0, 1), (1, 2), …]`` of length ``n``; the tuples are shared between calls.

    >>> identity_alignment(3)
    [(0, 1), (1, 2), (2, 3)]
    """
    if n > len(_IDENTITY):
        _IDENTITY.extend((i, i + 1) for i in range(len(_IDENTITY), max(n, 2 * len(_IDENTITY))))
    return _IDENTITY[:n]


def substitute_chars(normalized: NormalizedString, text: str) -> None:
    """Replace the normalized text by ``text`` of the same length, char for char.

    Each new char keeps the alignment of the char it replaces: the edit
    ``transform`` makes with every change 0, without a Python step per char.

    >>> n = NormalizedString("a b"); substitute_chars(n, "a▁b"); n.normalized, n.alignments()
    ('a▁b', [(0, 1), (1, 2), (2, 3)])
    """
    if len(text) != len(normalized.normalized):
        raise ConfigError(f"substitute_chars needs {len(normalized.normalized)} chars, got {len(text)}")
    if text != normalized.normalized:
        normalized.alignments()  # materialize the alignment before the text changes
        normalized.normalized = text


def spelled(piece: NormalizedString) -> NormalizedString:
    """``piece`` with its bytes spelled: the result of :func:`spell_bytes`, built in one step.

    Each byte char takes the alignment of the char it comes from, which is
    what ``transform`` gives a char's first byte (change 0) and the others
    (change 1); the tests hold this to :func:`spell_bytes`.

    >>> p = spelled(NormalizedString(" é")); p.normalized, p.alignments()
    ('ĠÃ©', [(0, 1), (1, 2), (1, 2)])
    """
    text = piece.normalized
    spelled_text = text_to_byte_chars(text)
    if spelled_text == text:
        return piece
    alignment = identity_alignment(len(text)) if piece.is_identity else piece.alignments()
    if len(spelled_text) != len(text):
        alignment = scan.repeat_per_utf8_byte(text, alignment)
    return NormalizedString(piece.original, spelled_text, alignment, piece.original_shift)


def spell_bytes(normalized: NormalizedString) -> None:
    """Replace each char by its UTF-8 bytes in GPT-2's alphabet; all bytes align with the char.

    The edit as Hugging Face makes it, through ``transform``; the readable
    twin of :func:`spelled`, which the pre-tokenizer uses.

    >>> n = NormalizedString("é!"); spell_bytes(n); n.normalized, n.alignments()
    ('Ã©!', [(0, 1), (0, 1), (1, 2)])
    """
    text = normalized.normalized
    spelled = text_to_byte_chars(text)
    if len(spelled) == len(text):
        # All ASCII: one byte char per char, so every change is 0.
        substitute_chars(normalized, spelled)
        return
    changes = []
    for ch in text:
        changes.append(0)
        changes.extend(_EXTRA_BYTES[_utf8_length(ord(ch))])
    normalized.transform(zip(spelled, changes))


_EXTRA_BYTES = {1: (), 2: (1,), 3: (1, 1), 4: (1, 1, 1)}


def _utf8_length(cp: int) -> int:
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


PREPEND_SCHEMES = ("always", "first", "never")


class Metaspace(PreTokenizer):
    """SentencePiece's spaces: each space becomes ``replacement``, which then starts a piece.

    ``prepend_scheme`` puts a ``replacement`` in front of the text too:
    ``"always"``, ``"first"`` (only before the piece that starts the input)
    or ``"never"``. With ``split=False`` nothing is cut.

    >>> Metaspace().pre_tokenize_str("Hey  friend")
    [('▁Hey', (0, 3)), ('▁', (3, 4)), ('▁friend', (4, 11))]
    """

    type_name = "Metaspace"

    def __init__(self, replacement: str = "▁", prepend_scheme: str = "always", split: bool = True):
        self.replacement = replacement
        self.prepend_scheme = prepend_scheme
        self.split = _check_bool("split", split)

    @property
    def replacement(self) -> str:
        return self._replacement

    @replacement.setter
    def replacement(self, value: str) -> None:
        self._replacement = _check_char("replacement", value)

    @property
    def prepend_scheme(self) -> str:
        return self._prepend_scheme

    @prepend_scheme.setter
    def prepend_scheme(self, value: str) -> None:
        if value not in PREPEND_SCHEMES:
            raise ConfigError(f"unknown prepend_scheme {value!r}", fix=f"use one of {', '.join(PREPEND_SCHEMES)}")
        self._prepend_scheme = value

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        pretok.split(self._cut)

    def _cut(self, _, ns: NormalizedString) -> list[NormalizedString]:
        if ns.is_identity and self.split:
            return self._cut_unedited(ns)
        rep = self._replacement
        # Hugging Face replaces each space by inserting the replacement after
        # it and removing it, so the replacement takes the space's alignment:
        # a char-for-char substitution, done in one step.
        substitute_chars(ns, ns.normalized.replace(" ", rep))
        if self._wants_prefix(ns.normalized, ns.offsets_original()[0]):
            ns.prepend(rep)
        if self.split:
            return ns.split(rep, "merged_with_next")
        return [ns]

    def _wants_prefix(self, text: str, shift: int) -> bool:
        return bool(text) and not text.startswith(self._replacement) and (
            self._prepend_scheme == "always" or (self._prepend_scheme == "first" and shift == 0))

    def _cut_unedited(self, ns: NormalizedString) -> list[NormalizedString]:
        """:meth:`_cut` for an unedited string, without editing the whole string first.

        The substitution keeps every char's alignment, so each piece is built
        straight from its slice; only the first piece gets the prefix. A
        merged-with-next split on one char is a cut before each occurrence.
        """
        rep = self._replacement
        original, shift = ns.original, ns.original_shift
        text = original.replace(" ", rep)
        pieces = []
        start = 0
        for k, part in enumerate(text.split(rep)):
            end = start + len(part) + (k > 0)   # every part but the first follows a replacement char
            if start == end:
                continue
            piece_text, piece_original = text[start:end], original[start:end]
            if piece_text == piece_original:
                pieces.append(NormalizedString(piece_original, None, None, shift + start))
            else:
                pieces.append(NormalizedString(piece_original, piece_text, identity_alignment(end - start),
                                               shift + start))
            start = end
        if self._wants_prefix(text, shift):
            pieces[0].prepend(rep)
        return pieces

    def _to_fields(self) -> dict:
        return {"replacement": self._replacement, "prepend_scheme": self._prepend_scheme, "split": self.split}

    @classmethod
    def _from_fields(cls, fields: Fields):
        replacement = fields.get("replacement", str)
        if len(replacement) != 1:
            raise fields.error("replacement", f"expected exactly one character, got {replacement!r}",
                               fix='use a single character such as "▁"')
        scheme = fields.get("prepend_scheme", str, "always")
        if scheme not in PREPEND_SCHEMES:
            raise fields.error("prepend_scheme", f"unknown prepend_scheme {scheme!r}",
                               fix=f"use one of {', '.join(PREPEND_SCHEMES)}")
        # Older files say add_prefix_space instead. As in Hugging Face, `false`
        # is only accepted next to an explicit "never" (the scheme defaults to
        # "always" before the two are compared).
        if fields.get("add_prefix_space", bool, None) is False and scheme != "never":
            raise fields.error("add_prefix_space", f"add_prefix_space is false but prepend_scheme is {scheme!r}",
                               fix='replace "add_prefix_space": false by "prepend_scheme": "never"')
        return cls(replacement, scheme, fields.get("split", bool, True))


# -- pattern and delimiter splits -------------------------------------------------

class Split(PreTokenizer):
    """Split on a pattern: a literal ``str``, or a :class:`~pieceworks.Regex`.

    ``behavior`` says what becomes of each match (``"removed"``,
    ``"isolated"``, ``"merged_with_previous"``, ``"merged_with_next"``,
    ``"contiguous"``); ``invert=True`` swaps matches and the text between
    them. A literal is matched as its escaped regex, as Hugging Face does.

    Patterns run on Oniguruma, as Hugging Face's do (see :class:`~pieceworks.Regex`).

    >>> Split("-", "merged_with_next").pre_tokenize_str("the-final--countdown")
    [('the', (0, 3)), ('-final', (3, 9)), ('-', (9, 10)), ('-countdown', (10, 20))]
    >>> Split(Regex(r"\\d+"), "removed", invert=True).pre_tokenize_str("a12b3")
    [('12', (1, 3)), ('3', (4, 5))]
    """

    type_name = "Split"

    def __init__(self, pattern: "str | Regex", behavior: str, invert: bool = False):
        self.pattern = pattern
        self.behavior = behavior
        self.invert = _check_bool("invert", invert)

    @property
    def pattern(self) -> "str | Regex":
        return self._pattern

    @pattern.setter
    def pattern(self, value: "str | Regex") -> None:
        if isinstance(value, Regex):
            self._regex = value
        elif isinstance(value, str):
            self._regex = Regex(escape(value))
        else:
            raise InputTypeError(f"Split pattern must be a str or a Regex, got {type(value).__name__}",
                                 fix="pass a literal string, or wrap a regular expression as Regex(r'...')")
        self._pattern = value

    @property
    def behavior(self) -> str:
        return self._behavior

    @behavior.setter
    def behavior(self, value: str) -> None:
        self._behavior = SplitDelimiterBehavior.parse(value)

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        _cut_by_spans(pretok, self.piece_spans)

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        """The char spans of the pieces this cuts ``text`` into.

        >>> Split(Regex(r"\\d+"), "merged_with_previous").piece_spans("a1b22")
        [(0, 2), (2, 5)]
        """
        matches = find_matches(self._regex, text)
        if self.invert:
            matches = [(span, not is_match) for span, is_match in matches]
        return split_ranges(matches, self._behavior)

    def _to_fields(self) -> dict:
        if isinstance(self._pattern, Regex):
            pattern = {"Regex": self._pattern.pattern}
        else:
            pattern = {"String": self._pattern}
        return {"pattern": pattern, "behavior": SplitDelimiterBehavior.to_json(self._behavior),
                "invert": self.invert}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(_pattern_from_json(fields), _behavior_from_json(fields), fields.get("invert", bool))


def _pattern_from_json(fields: Fields) -> "str | Regex":
    """``{"String": s}`` → ``s``; ``{"Regex": r}`` → ``Regex(r)``; anything else names the field."""
    pattern = fields.get("pattern", dict)
    if len(pattern) != 1 or next(iter(pattern)) not in ("String", "Regex"):
        raise fields.error("pattern", f'expected {{"String": ...}} or {{"Regex": ...}}, got {pattern!r}',
                           fix='write the pattern as {"String": "text"} or {"Regex": "regex"}')
    sub = Fields(pattern, fields.field_name("pattern"), fields.path)
    if "String" in pattern:
        return sub.get("String", str)
    source = sub.get("Regex", str)
    try:
        return Regex(source)
    except ConfigError as exc:
        raise sub.error("Regex", exc.message, fix=exc.fix) from None


class CharDelimiterSplit(PreTokenizer):
    """Split on one delimiter char, which is removed.

    >>> CharDelimiterSplit("_").pre_tokenize_str("a_b__c")
    [('a', (0, 1)), ('b', (2, 3)), ('c', (5, 6))]
    """

    type_name = "CharDelimiterSplit"

    def __init__(self, delimiter: str):
        self.delimiter = delimiter

    @property
    def delimiter(self) -> str:
        return self._delimiter

    @delimiter.setter
    def delimiter(self, value: str) -> None:
        self._delimiter = _check_char("delimiter", value)

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        pretok.split(lambda _, ns: slices(ns, delimited_spans(ns.normalized, self._delimiter)))

    def _to_fields(self) -> dict:
        return {"delimiter": self._delimiter}

    @classmethod
    def _from_fields(cls, fields: Fields):
        delimiter = fields.get("delimiter", str)
        if len(delimiter) != 1:
            raise fields.error("delimiter", f"expected exactly one character, got {delimiter!r}",
                               fix='use a single character, e.g. "_"')
        return cls(delimiter)


def delimited_spans(text: str, delimiter: str) -> list[Span]:
    """The non-empty stretches of ``text`` between occurrences of ``delimiter``.

    >>> delimited_spans("a__bc_", "_")
    [(0, 1), (3, 5)]
    """
    spans = []
    pos = 0
    for part in text.split(delimiter):
        if part:
            spans.append((pos, pos + len(part)))
        pos += len(part) + 1
    return spans


class FixedLength(PreTokenizer):
    """Cut into pieces of ``length`` chars (the last may be shorter).

    >>> FixedLength(3).pre_tokenize_str("abcdefg")
    [('abc', (0, 3)), ('def', (3, 6)), ('g', (6, 7))]
    """

    type_name = "FixedLength"

    def __init__(self, length: int = 5):
        self.length = length

    @property
    def length(self) -> int:
        return self._length

    @length.setter
    def length(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputTypeError(f"length must be an int, got {value!r}", fix="pass a positive int, e.g. length=5")
        if value < 1:
            raise ConfigError(f"FixedLength length must be at least 1, got {value}", fix="pass a positive length")
        self._length = value

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        size = self._length

        def cut(_, ns: NormalizedString):
            n = len(ns.normalized)
            return slices(ns, [(i, min(i + size, n)) for i in range(0, n, size)])
        pretok.split(cut)

    def _to_fields(self) -> dict:
        return {"length": self._length}

    @classmethod
    def _from_fields(cls, fields: Fields):
        length = fields.get("length", int, 5)
        if length < 1:
            raise fields.error("length", f"expected a positive integer, got {length}", fix="use a length of 1 or more")
        return cls(length)


class Sequence(PreTokenizer):
    """Run several pre-tokenizers one after the other.

    >>> Sequence([WhitespaceSplit(), Digits(individual_digits=True)]).pre_tokenize_str("a12 b")
    [('a', (0, 1)), ('1', (1, 2)), ('2', (2, 3)), ('b', (4, 5))]
    """

    type_name = "Sequence"

    def __init__(self, pre_tokenizers: list[PreTokenizer]):
        if not isinstance(pre_tokenizers, (list, tuple)):
            raise InputTypeError(f"Sequence needs a list of pre-tokenizers, got {type(pre_tokenizers).__name__}",
                                 fix="pass a list, e.g. Sequence([WhitespaceSplit(), Digits()])")
        for i, item in enumerate(pre_tokenizers):
            _check_pre_tokenizer(i, item)
        self.pretokenizers = list(pre_tokenizers)

    def __getitem__(self, index: int) -> PreTokenizer:
        return self.pretokenizers[index]

    def __setitem__(self, index: int, value: PreTokenizer) -> None:
        # A new list, assigned: the assignment moves the component epoch, so the fast plans and
        # encode's snapshot, which read the stages once per epoch, read them again.
        items = list(self.pretokenizers)
        items[index] = _check_pre_tokenizer(index, value)
        self.pretokenizers = items

    def __len__(self) -> int:
        return len(self.pretokenizers)

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        for item in self.pretokenizers:
            item.pre_tokenize(pretok)

    def pre_tokenize_str(self, sequence: str) -> list[tuple[str, tuple[int, int]]]:
        """As :meth:`PreTokenizer.pre_tokenize_str`; a Sequence of plain cuts (``Split``, ``Digits``,
        ``Punctuation``), maybe then a ``ByteLevel`` that adds no space (Llama 3's, Qwen's), cuts the
        text by spans and spells each piece, with no object per piece (the general way took 2.3
        times Hugging Face's time).

        >>> Sequence([Digits(), ByteLevel(add_prefix_space=False)]).pre_tokenize_str("é 12")
        [('Ã©', (0, 1)), ('Ġ', (1, 2)), ('12', (2, 4))]
        """
        spans = self._plain_spans(sequence) if type(sequence) is str else None
        if spans is None:
            return super().pre_tokenize_str(sequence)
        last = self.pretokenizers[-1]
        if type(last) is not ByteLevel:
            return [(sequence[start:end], (start, end)) for start, end in spans]
        if sequence.isascii():      # (a char a byte: the whole text spelled at once, then sliced)
            spelled_text = sequence.translate(_ASCII_SPELLING)
            return [(spelled_text[start:end], (start, end)) for start, end in spans]
        return [(text_to_byte_chars(sequence[start:end]), (start, end)) for start, end in spans]

    def _plain_spans(self, text: str) -> list[tuple[int, int]] | None:
        """The pieces' spans when every member only cuts (see :meth:`pre_tokenize_str`), else None."""
        members = self.pretokenizers
        last = members[-1] if members else None
        if type(last) is ByteLevel and not last.add_prefix_space:
            members = members[:-1]
        if not members and type(last) is not ByteLevel or any(type(m) not in _PLAIN_CUTS for m in members):
            return None
        spans = [(0, len(text))] if text else []
        for member in self.pretokenizers:
            spans = [(start + a, start + b) for start, end in spans for a, b in member.piece_spans(text[start:end])]
        return spans

    def _to_fields(self) -> dict:
        return {"pretokenizers": [item.to_json() for item in self.pretokenizers]}

    @classmethod
    def _from_fields(cls, fields: Fields):
        items = fields.get("pretokenizers", list)
        where = fields.field_name("pretokenizers")
        return cls([PreTokenizer.from_json(item, where=f"{where}[{i}]", path=fields.path)
                    for i, item in enumerate(items)])


# The pre-tokenizers that only cut a text (by their piece_spans), changing no char of it.
_PLAIN_CUTS = (Split, Digits, Punctuation)


def _check_pre_tokenizer(index: int, value) -> PreTokenizer:
    if not isinstance(value, PreTokenizer):
        raise InputTypeError(f"Sequence item {index} is not a pre-tokenizer: {value!r}",
                             fix="pass pieceworks.pre_tokenizers objects, e.g. Whitespace()")
    return value
