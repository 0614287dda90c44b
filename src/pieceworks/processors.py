"""Post-processors: the stage after the model, adding special tokens.

A post-processor takes the encoding of one input (or of a pair) and returns
the final encoding with ``[CLS] … [SEP]``-style special tokens, type ids and
sequence ranges. Names, fields and behaviour follow Hugging Face
``tokenizers``, including how the parts that truncation cut off
(``overflowing``) are processed and paired up.

>>> from pieceworks.encoding import Encoding
>>> bert = TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
...                           special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
>>> a = Encoding.from_tokens([(7, "hi", (0, 2))])
>>> b = Encoding.from_tokens([(8, "you", (0, 3))])
>>> out = bert.process(a, b)
>>> out.tokens, out.type_ids, out.special_tokens_mask
(['[CLS]', 'hi', '[SEP]', 'you', '[SEP]'], [0, 0, 0, 1, 1], [1, 0, 1, 0, 1])
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from ._component import Component, Fields, stage_base
from .alignment import is_whitespace
from .byte_level import BYTE_TO_CHAR
from ._kernels.raw_encoding import trim_spans as _trim_spans
from .encoding import Encoding, Frame
from .frame import PLAIN_PAIR_FRAME, PairFrame
from .errors import ConfigError, InputTypeError, TokenizerFileError

__all__ = ["PostProcessor", "TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel",
           "Sequence", "SpecialToken", "Piece"]


@stage_base("post_processor")
class PostProcessor(Component):
    """Base class.

    Subclasses implement ``num_special_tokens_to_add(is_pair)`` and
    ``process_encodings(encodings, add_special_tokens)``; :meth:`process`
    numbers the sequences, runs them and merges the result.
    """

    def part_types(self, add_special_tokens: bool) -> tuple[int, int] | None:
        """When :meth:`process` does to each overflowing part of a pair's sequences what it does to
        the sequence (special tokens, trimming) but for the type ids of the part's own tokens:
        those of the first's parts and of the second's, and a cut pair's parts are built from
        :meth:`pair_frame` too (``Tokenizer._cut_pair``). None: it does otherwise."""
        return None

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        raise NotImplementedError

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        raise NotImplementedError

    def single_frame(self, add_special_tokens: bool, ids_only: bool = False) -> Frame | None:
        """What :meth:`process` does to one plain sequence, as a :class:`~pieceworks.encoding.Frame`.

        A plain sequence is a fresh encoding of one input: no overflowing
        parts, type ids 0, no special tokens yet. None means the processor
        does more than put special tokens around it (say, trims offsets):
        :meth:`process` must run. ``ids_only``: the caller reads only the
        ids, so what the processor does to offsets does not matter. Made
        once per setting; assigning any attribute of the processor forgets it.

        >>> BertProcessing(("[SEP]", 102), ("[CLS]", 101)).single_frame(True).ids_before
        [101]
        """
        return self._kept_frame((add_special_tokens, ids_only), self._single_frame, add_special_tokens, ids_only)

    def _single_frame(self, add_special_tokens: bool, ids_only: bool) -> Frame | None:
        return None

    def pair_frame(self, add_special_tokens: bool) -> PairFrame | None:
        """What :meth:`process` does to a plain pair of sequences, as a :class:`~pieceworks.frame.PairFrame`.

        As :meth:`single_frame`, for two fresh encodings (types 0 and 1):
        None means :meth:`process` must run. Made once per setting.

        >>> f = BertProcessing(("[SEP]", 102), ("[CLS]", 101)).pair_frame(True)
        >>> f.ids, f.types, f.type_b
        ([101, 102, 102], [0, 0, 1], 1)
        """
        return self._kept_frame(("pair", add_special_tokens), self._pair_frame, add_special_tokens)

    def _pair_frame(self, add_special_tokens: bool) -> PairFrame | None:
        return None

    def _kept_frame(self, key: tuple, make, *args):
        """``make(*args)``, made once per ``key`` (assigning any attribute forgets them all)."""
        frames = self.__dict__.get("_frames")
        if frames is None:
            frames = self.__dict__["_frames"] = {}
        try:
            return frames[key]
        except KeyError:
            frame = frames[key] = make(*args)
            return frame

    def __setattr__(self, name, value):
        self.__dict__.pop("_frames", None)
        super().__setattr__(name, value)

    def process(self, encoding: Encoding, pair: Encoding | None = None,
                add_special_tokens: bool = True) -> Encoding:
        """The final encoding of ``encoding`` (and ``pair``); the inputs are not modified.

        As in Hugging Face, input ``i`` (0 or 1) gets sequence id ``i`` (its
        overflowing parts too) and type id ``i`` (its overflowing parts keep
        theirs) before the processor runs.
        """
        encodings = [_check_encoding(encoding, "encoding").copy()]
        if pair is not None:
            encodings.append(_check_encoding(pair, "pair").copy())
        for i, enc in enumerate(encodings):
            enc.set_sequence_id(i)
            for over in enc.overflowing:
                over.set_sequence_id(i)
            enc.type_ids = [i] * len(enc.ids)
        return Encoding.merge(self.process_encodings(encodings, add_special_tokens), growing_offsets=False)


def _check_encoding(value, name: str) -> Encoding:
    if not isinstance(value, Encoding):
        raise InputTypeError(f"{name} must be a pieceworks Encoding, got {type(value).__name__}",
                             fix="pass the result of Tokenizer.encode(..., add_special_tokens=False)")
    return value


# -- templates -----------------------------------------------------------------

class Piece(NamedTuple):
    """One item of a template: an input sequence (``"A"``/``"B"``) or a special token's name."""

    is_sequence: bool
    id: str
    type_id: int

    def to_json(self) -> dict:
        kind = "Sequence" if self.is_sequence else "SpecialToken"
        return {kind: {"id": self.id, "type_id": self.type_id}}


class SpecialToken(NamedTuple):
    """A special token of a template: its name there, and the ids/tokens it adds.

    >>> SpecialToken.of(("[CLS]", 101))
    SpecialToken(id='[CLS]', ids=[101], tokens=['[CLS]'])
    """

    id: str
    ids: list[int]
    tokens: list[str]

    def to_json(self) -> dict:
        return {"id": self.id, "ids": list(self.ids), "tokens": list(self.tokens)}

    @classmethod
    def of(cls, value) -> "SpecialToken":
        """From ``(token, id)``, ``(id, token)``, ``{"id", "ids", "tokens"}`` or a SpecialToken."""
        if isinstance(value, SpecialToken):
            return value
        if isinstance(value, (tuple, list)) and len(value) == 2:
            a, b = value
            if isinstance(a, str) and _is_u32(b):
                return cls(a, [b], [a])
            if isinstance(b, str) and _is_u32(a):
                return cls(b, [a], [b])
        if isinstance(value, dict) and set(value) == {"id", "ids", "tokens"}:
            name, ids, tokens = value["id"], value["ids"], value["tokens"]
            if (isinstance(name, str) and isinstance(ids, list) and all(_is_u32(i) for i in ids)
                    and isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
                if len(ids) != len(tokens):
                    raise ConfigError(f"special token {name!r}: ids and tokens must have the same length "
                                      f"({len(ids)} ids, {len(tokens)} tokens)",
                                      fix="give one token string per id")
                return cls(name, list(ids), list(tokens))
        raise InputTypeError(f"cannot read a special token from {value!r}",
                             fix="use (token, id), e.g. ('[CLS]', 101), or "
                                 "{'id': name, 'ids': [...], 'tokens': [...]}")


def _is_u32(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 32


# Rust's u32::from_str: ASCII digits with an optional leading '+'.
_U32 = re.compile(r"\+?[0-9]+")


def _parse_u32(text: str) -> int | None:
    if not _U32.fullmatch(text):
        return None
    value = int(text)
    return value if value < 2 ** 32 else None


def parse_piece(text: str) -> Piece:
    """One template piece in Hugging Face's string syntax.

    ``$A``/``$B`` (or ``$a``/``$b``, and ``$`` for ``$A``) name an input,
    ``$1`` means ``$A`` with type id 1; anything else is a special token;
    ``:n`` after either sets the type id.

    >>> parse_piece("$B:1"), parse_piece("[SEP]")
    (Piece(is_sequence=True, id='B', type_id=1), Piece(is_sequence=False, id='[SEP]', type_id=0))
    """
    parts = text.split(":")
    if len(parts) > 2:
        raise _piece_error(text)
    type_id = 0
    if len(parts) == 2:
        type_id = _parse_u32(parts[1])
        if type_id is None:
            raise _piece_error(text)
    name = parts[0]
    if not name.startswith("$"):
        return Piece(False, name, type_id)
    rest = name[1:]
    if rest in ("", "A", "a"):
        return Piece(True, "A", type_id)
    if rest in ("B", "b"):
        return Piece(True, "B", type_id)
    number = _parse_u32(rest)
    if number is None:
        raise _piece_error(text)
    # "$1:2" would name the type id twice; Hugging Face lets the ":2" win.
    return Piece(True, "A", type_id if len(parts) == 2 else number)


def _piece_error(text: str) -> ConfigError:
    return ConfigError(f"cannot build a template piece from {text!r}",
                       fix="use $A or $B (optionally :type_id, e.g. $B:1), $0/$1 for $A with that "
                           "type id, or a special token name such as [CLS] or [SEP]:1")


def _cls_argument(processor: str, cls_token, cls):
    """The class token given as ``cls_token`` (Hugging Face's name) or ``cls`` (its tokenizer.json
    field, which transformers passes back as a keyword), exactly one of them.

    >>> _cls_argument("BertProcessing", None, ("[CLS]", 101))
    ('[CLS]', 101)
    """
    if (cls_token is None) == (cls is None):
        raise InputTypeError(f"{processor}: give the class token once, as cls_token (or cls), got "
                             f"cls_token={cls_token!r}, cls={cls!r}",
                             fix=f"write {processor}((\"[SEP]\", 102), (\"[CLS]\", 101))")
    return cls if cls_token is None else cls_token


def parse_template(value, name: str) -> list[Piece]:
    """A template from a str (pieces separated by single spaces) or a list of pieces.

    >>> [p.id for p in parse_template("[CLS] $A [SEP]", "single")]
    ['[CLS]', 'A', '[SEP]']
    """
    if isinstance(value, str):
        items = value.split(" ")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise InputTypeError(f"TemplateProcessing: {name} must be a str or a list of str, got {value!r}",
                             fix=f"pass {name} like \"[CLS] $A [SEP]\" or [\"[CLS]\", \"$A\", \"[SEP]\"]")
    pieces = []
    for i, item in enumerate(items):
        if isinstance(item, Piece):
            pieces.append(item)
        elif isinstance(item, str):
            pieces.append(parse_piece(item))
        elif isinstance(item, dict):
            pieces.append(_piece_from_json(item, f"{name}[{i}]"))
        else:
            raise InputTypeError(f"TemplateProcessing: {name} holds {item!r}, not a str",
                                 fix="write each piece as a str such as \"$A\" or \"[SEP]:1\"")
    return pieces


def _piece_from_json(data, where: str, path: str | None = None) -> Piece:
    """A piece in the tokenizer.json form, ``{"Sequence": {"id": "A", "type_id": 0}}`` or
    ``{"SpecialToken": {"id": "[CLS]", "type_id": 0}}``."""
    piece = Fields(data, where, path)
    kinds = list(piece.data)
    if len(kinds) != 1 or kinds[0] not in ("Sequence", "SpecialToken"):
        raise TokenizerFileError(path, f"expected {{\"Sequence\": ...}} or {{\"SpecialToken\": ...}}, "
                                       f"got {piece.data!r}", field=where,
                                 fix="write each template piece as {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}} "
                                     "or {\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}")
    kind = kinds[0]
    body = piece.sub(kind)
    piece_id = body.get("id", str)
    type_id = body.get("type_id", int)
    if not _is_u32(type_id):
        raise body.error("type_id", f"expected an integer in 0..2**32, got {type_id}")
    if kind == "Sequence" and piece_id not in ("A", "B"):
        raise body.error("id", f"expected \"A\" or \"B\", got {piece_id!r}")
    return Piece(kind == "Sequence", piece_id, type_id)


def _special_tokens_from_python(value) -> dict[str, SpecialToken]:
    if value is None:
        return {}
    if isinstance(value, dict):
        if set(value) == {"id", "ids", "tokens"} and isinstance(value.get("ids"), list):
            items = [value]
        else:  # the tokenizer.json form, {name: {"id", "ids", "tokens"}}
            return {name: SpecialToken.of(tok) for name, tok in value.items()}
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise InputTypeError(f"TemplateProcessing: special_tokens must be a list, got {type(value).__name__}",
                             fix="pass special_tokens like [(\"[CLS]\", 101), (\"[SEP]\", 102)]")
    out = {}
    for item in items:
        tok = SpecialToken.of(item)
        out[tok.id] = tok
    return out


def _special_tokens_from_json(fields: Fields) -> dict[str, SpecialToken]:
    table = fields.sub("special_tokens")
    out = {}
    for name in table.data:
        entry = table.sub(name)
        tok_id = entry.get("id", str)
        ids = entry.get("ids", list)
        tokens = entry.get("tokens", list)
        if not all(_is_u32(i) for i in ids):
            raise entry.error("ids", f"expected a list of token ids (integers >= 0), got {ids!r}")
        if not all(isinstance(t, str) for t in tokens):
            raise entry.error("tokens", f"expected a list of strings, got {tokens!r}")
        if len(ids) != len(tokens):
            raise entry.error("tokens", f"{len(ids)} ids but {len(tokens)} tokens",
                              fix="give one token string per id")
        out[name] = SpecialToken(tok_id, list(ids), list(tokens))
    return out


def _missing_special_tokens(templates: list[list[Piece]], special_tokens: dict) -> list[str]:
    missing: list[str] = []
    for template in templates:
        for piece in template:
            if not piece.is_sequence and piece.id not in special_tokens and piece.id not in missing:
                missing.append(piece.id)
    return missing


class TemplateProcessing(PostProcessor):
    """Add special tokens by template: ``"[CLS] $A [SEP]"`` and ``"[CLS] $A [SEP] $B:1 [SEP]:1"``.

    Every special token named in a template must be in ``special_tokens``,
    given as ``[("[CLS]", 101), ...]``, as dicts ``{"id", "ids", "tokens"}``
    (one name may add several tokens) or in the tokenizer.json form.

    >>> t = TemplateProcessing(single="<s> $0 </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    >>> t.num_special_tokens_to_add(False), t.num_special_tokens_to_add(True)
    (2, 0)
    """

    type_name = "TemplateProcessing"

    def __init__(self, single=None, pair=None, special_tokens=None):
        self.single = parse_template("$0" if single is None else single, "single")
        self.pair = parse_template("$A:0 $B:1" if pair is None else pair, "pair")
        self.special_tokens = _special_tokens_from_python(special_tokens)
        ids = {p.id for p in self.pair if p.is_sequence}
        if ids != {"A", "B"}:
            raise ConfigError("TemplateProcessing: the pair template must use both sequences $A and $B",
                              fix="write the pair template like \"[CLS] $A [SEP] $B:1 [SEP]:1\"")
        missing = _missing_special_tokens([self.single, self.pair], self.special_tokens)
        if missing:
            raise ConfigError(f"TemplateProcessing: special token(s) {', '.join(map(repr, missing))} "
                              "used in a template but missing from special_tokens",
                              fix="add them to special_tokens, e.g. special_tokens=[(\"[SEP]\", 102)]")

    def __setattr__(self, name, value):
        # As in Hugging Face, ``processor.single = "[CLS] $A [SEP]"`` sets a template from its text
        # (a later check of the tokens it names is the encoding's: Hugging Face's too).
        if name in ("single", "pair"):
            value = parse_template(value, name)
        elif name == "special_tokens" and not isinstance(value, dict):
            value = _special_tokens_from_python(value)
        super().__setattr__(name, value)

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        template = self.pair if is_pair else self.single
        return sum(len(self.special_tokens[p.id].ids) for p in template
                   if not p.is_sequence and p.id in self.special_tokens)

    def part_types(self, add_special_tokens: bool) -> tuple[int, int] | None:
        # (A sequence's parts get no special tokens of their own, but merged in turn with the
        # template's pieces, each combination of them gets them all, as the pair does.)
        return 0, 1

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        template = self.pair if len(encodings) == 2 else self.single
        out = []
        for piece in template:
            if piece.is_sequence:
                index = 0 if piece.id == "A" else 1
                if index >= len(encodings):
                    raise ConfigError("TemplateProcessing: the single template uses $B but only one "
                                      "sequence was given", fix="use only $A in the single template")
                enc = encodings[index]
                enc.type_ids = [piece.type_id] * len(enc.ids)
                enc.set_sequence_id(index)
                out.append(enc.copy())
            elif add_special_tokens:
                out.append(_special_encoding(self.special_tokens[piece.id], piece.type_id))
        return out

    def _single_frame(self, add_special_tokens: bool, ids_only: bool) -> Frame | None:
        before, after, type_id = [], None, None
        for piece in self.single:
            if piece.is_sequence:
                if piece.id != "A" or after is not None:
                    return None     # $B, or $A twice: process() says what happens
                type_id, after = piece.type_id, []
            elif add_special_tokens:
                token = self.special_tokens[piece.id]
                (before if after is None else after).extend(
                    (tid, text, piece.type_id) for tid, text in zip(token.ids, token.tokens))
        if after is None:
            return None
        return Frame(before, type_id, after, True)

    def _pair_frame(self, add_special_tokens: bool) -> PairFrame | None:
        groups, types = [[]], []
        for piece in self.pair:
            if piece.is_sequence:
                if len(types) == 2 or piece.id != "AB"[len(types)]:
                    return None     # B before A, or a sequence twice: process() says what happens
                types.append(piece.type_id)
                groups.append([])
            elif add_special_tokens:
                token = self.special_tokens[piece.id]
                groups[-1].extend((tid, text, piece.type_id) for tid, text in zip(token.ids, token.tokens))
        if len(types) != 2:
            return None
        return PairFrame(groups[0], types[0], groups[1], types[1], groups[2])

    def _to_fields(self) -> dict:
        return {"single": [p.to_json() for p in self.single], "pair": [p.to_json() for p in self.pair],
                "special_tokens": {name: self.special_tokens[name].to_json() for name in sorted(self.special_tokens)}}

    @classmethod
    def _from_fields(cls, fields: Fields):
        templates = {}
        for name in ("single", "pair"):
            where = fields.field_name(name)
            templates[name] = [_piece_from_json(item, f"{where}[{i}]", fields.path)
                               for i, item in enumerate(fields.get(name, list))]
        special_tokens = _special_tokens_from_json(fields)
        for name in ("single", "pair"):
            missing = _missing_special_tokens([templates[name]], special_tokens)
            if missing:
                raise fields.error(name, f"special token(s) {', '.join(map(repr, missing))} missing from "
                                         "special_tokens",
                                   fix="add them to special_tokens or remove them from the template")
        self = cls.__new__(cls)
        # Hugging Face does not re-check a loaded pair template for $A and $B.
        self.single, self.pair, self.special_tokens = templates["single"], templates["pair"], special_tokens
        return self


def _special_encoding(token: SpecialToken, type_id: int) -> Encoding:
    n = len(token.ids)
    return Encoding(list(token.ids), [type_id] * n, list(token.tokens), [None] * n, [(0, 0)] * n,
                    [1] * n, [1] * n, [], {})


# -- fixed layouts ---------------------------------------------------------------

def _check_pair(component: str, name: str, value) -> tuple[str, int]:
    if (isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str)
            and _is_u32(value[1])):
        return (value[0], value[1])
    raise InputTypeError(f"{component}: {name} must be a (token, id) tuple, got {value!r}",
                         fix=f"pass {name} like (\"[SEP]\", 102)")


def _field_pair(fields: Fields, name: str) -> tuple[str, int]:
    value = fields.get(name, list)
    if len(value) == 2 and isinstance(value[0], str) and _is_u32(value[1]):
        return (value[0], value[1])
    raise fields.error(name, f"expected [token, id], got {value!r}")


def _wrap(enc: Encoding, before: list[tuple[str, int]], after: list[tuple[str, int]],
          type_ids: list[int], sequence_id: int, overflowing: list[Encoding]) -> Encoding:
    """``enc`` between special tokens; its own masks are reset as Hugging Face does."""
    n, b = len(enc.ids), len(before)
    specials_before, specials_after = [tok[1] for tok in before], [tok[1] for tok in after]
    ids = specials_before + list(enc.ids) + specials_after
    return Encoding(
        ids, type_ids, [tok[0] for tok in before] + list(enc.tokens) + [tok[0] for tok in after],
        [None] * b + list(enc.words) + [None] * len(after),
        [(0, 0)] * b + list(enc.offsets) + [(0, 0)] * len(after),
        [1] * b + [0] * n + [1] * len(after), [1] * len(ids), overflowing, {sequence_id: (b, b + n)})


class BertProcessing(PostProcessor):
    """``[CLS] A [SEP]`` and ``[CLS] A [SEP] B [SEP]``, with type id 1 on ``B [SEP]``.

    >>> BertProcessing(("[SEP]", 102), ("[CLS]", 101)).num_special_tokens_to_add(True)
    3
    """

    type_name = "BertProcessing"

    def __init__(self, sep: tuple[str, int], cls_token: tuple[str, int] | None = None, *,
                 cls: tuple[str, int] | None = None):
        self.sep = _check_pair("BertProcessing", "sep", sep)
        self.cls = _check_pair("BertProcessing", "cls", _cls_argument("BertProcessing", cls_token, cls))

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return 3 if is_pair else 2

    def part_types(self, add_special_tokens: bool) -> tuple[int, int] | None:
        return 0, 1     # (each part wrapped as its sequence, keeping its own type ids)

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        if not add_special_tokens:
            return encodings
        return [self._first(enc, [self._first(o, []) for o in enc.overflowing]) if i == 0
                else self._second(enc, [self._second(o, []) for o in enc.overflowing])
                for i, enc in enumerate(encodings)]

    def _first(self, enc: Encoding, overflowing: list[Encoding]) -> Encoding:
        return _wrap(enc, [self.cls], [self.sep], [0] + list(enc.type_ids) + [0], 0, overflowing)

    def _single_frame(self, add_special_tokens: bool, ids_only: bool) -> Frame:
        if not add_special_tokens:
            return Frame((), 0, (), True)
        return Frame([(self.cls[1], self.cls[0], 0)], 0, [(self.sep[1], self.sep[0], 0)], True)

    def _pair_frame(self, add_special_tokens: bool) -> PairFrame:
        if not add_special_tokens:
            return PLAIN_PAIR_FRAME
        sep = (self.sep[1], self.sep[0])
        return PairFrame([(self.cls[1], self.cls[0], 0)], 0, [sep + (0,)], 1, [sep + (1,)])

    def _second(self, enc: Encoding, overflowing: list[Encoding]) -> Encoding:
        return _wrap(enc, [], [self.sep], list(enc.type_ids) + [1], 1, overflowing)

    def _to_fields(self) -> dict:
        return {"sep": list(self.sep), "cls": list(self.cls)}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(_field_pair(fields, "sep"), _field_pair(fields, "cls"))


class RobertaProcessing(PostProcessor):
    """``<s> A </s>`` and ``<s> A </s> </s> B </s>``, all type id 0; trims byte-level offsets.

    >>> RobertaProcessing(("</s>", 2), ("<s>", 0)).num_special_tokens_to_add(True)
    4
    """

    type_name = "RobertaProcessing"

    def __init__(self, sep: tuple[str, int], cls_token: tuple[str, int] | None = None, trim_offsets: bool = True,
                 add_prefix_space: bool = True, *, cls: tuple[str, int] | None = None):
        self.sep = _check_pair("RobertaProcessing", "sep", sep)
        self.cls = _check_pair("RobertaProcessing", "cls", _cls_argument("RobertaProcessing", cls_token, cls))
        self.trim_offsets = _check_bool("RobertaProcessing", "trim_offsets", trim_offsets)
        self.add_prefix_space = _check_bool("RobertaProcessing", "add_prefix_space", add_prefix_space)

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return 4 if is_pair else 2

    def part_types(self, add_special_tokens: bool) -> tuple[int, int] | None:
        # (Unwrapped, a part keeps its type ids where the sequence's become 0.)
        return (0, 0) if add_special_tokens else None

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        if self.trim_offsets:
            for enc in encodings:
                _trim_with_overflowing(enc, self.add_prefix_space)
        for enc in encodings:  # RoBERTa has no segment embeddings: every type id is 0
            enc.type_ids = [0] * len(enc.ids)
        if not add_special_tokens:
            return encodings
        return [self._wrap(enc, i, [self._wrap(o, i, []) for o in enc.overflowing])
                for i, enc in enumerate(encodings)]

    def _single_frame(self, add_special_tokens: bool, ids_only: bool) -> Frame | None:
        trim = _trimming(self.trim_offsets and not ids_only, self.add_prefix_space)
        if not add_special_tokens:
            return Frame((), 0, (), True, trim=trim)
        return Frame([(self.cls[1], self.cls[0], 0)], 0, [(self.sep[1], self.sep[0], 0)], True, trim=trim)

    def _pair_frame(self, add_special_tokens: bool) -> PairFrame:
        trim = _trimming(self.trim_offsets, self.add_prefix_space)
        if not add_special_tokens:
            return PairFrame((), 0, (), 0, (), trim)
        sep = (self.sep[1], self.sep[0], 0)
        return PairFrame([(self.cls[1], self.cls[0], 0)], 0, [sep, sep], 0, [sep], trim)

    def _wrap(self, enc: Encoding, index: int, overflowing: list[Encoding]) -> Encoding:
        first = self.cls if index == 0 else self.sep
        return _wrap(enc, [first], [self.sep], [0] * (len(enc.ids) + 2), 0 if index == 0 else 1, overflowing)

    def _to_fields(self) -> dict:
        return {"sep": list(self.sep), "cls": list(self.cls), "trim_offsets": self.trim_offsets,
                "add_prefix_space": self.add_prefix_space}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(_field_pair(fields, "sep"), _field_pair(fields, "cls"), fields.get("trim_offsets", bool),
                   fields.get("add_prefix_space", bool))


def _check_bool(component: str, name: str, value) -> bool:
    if not isinstance(value, bool):
        raise InputTypeError(f"{component}: {name} must be a bool, got {value!r}", fix=f"pass {name}=True or False")
    return value


# -- offset trimming ---------------------------------------------------------------

_SPACE_CHAR = BYTE_TO_CHAR[ord(" ")]  # "Ġ"


def _is_space(ch: str) -> bool:
    return ch == _SPACE_CHAR or is_whitespace(ch)


def trim_offsets(encoding: Encoding, add_prefix_space: bool) -> None:
    """Shrink each token's offsets to exclude its leading/trailing spaces (``Ġ`` or whitespace).

    A single leading space on the first token (or any token starting at 0)
    is kept when ``add_prefix_space`` is set: that space was added, it is not
    in the text, so there is nothing to trim.

    >>> e = Encoding.from_tokens([(0, "Ġhello", (0, 6)), (1, "Ġworld", (6, 12))])
    >>> trim_offsets(e, add_prefix_space=False); e.offsets
    [(1, 6), (7, 12)]
    """
    offsets = encoding.offsets
    trim_span(offsets, encoding.tokens, 0, len(offsets), add_prefix_space)
    encoding.offsets = offsets      # (set again: the position look-ups see the change)


def trim_span(offsets: list, tokens: list, first: int, stop: int, add_prefix_space: bool) -> None:
    """:func:`trim_offsets` on ``offsets[first:stop]``, in place (``tokens`` beside them): a
    sequence among the special tokens a frame put around it (``Frame.trim``).

    >>> offsets = [(0, 0), (0, 6), (6, 12)]
    >>> trim_span(offsets, ["<s>", "Ġhello", "Ġworld"], 1, 3, add_prefix_space=True); offsets
    [(0, 0), (0, 6), (7, 12)]
    """
    _trim_spans(offsets, tokens, first, stop, add_prefix_space, _SPACES_AT_ENDS, _spaces_at_ends, _NO_SPACES)


# Tokens come from a vocabulary, so their counts are kept (a line of 10 tokens
# was 40 us of char tests; the dict bounds itself against strings made on the fly).
_SPACES_AT_ENDS: dict[str, tuple[int, int]] = {}
_NO_SPACES = (0, 0)


def _spaces_at_ends(token: str) -> tuple[int, int]:
    """``(leading, trailing)`` space chars of ``token``, kept in ``_SPACES_AT_ENDS``."""
    counts = (_count_spaces(token), _count_spaces(reversed(token)))
    if counts == _NO_SPACES:
        counts = _NO_SPACES
    if len(_SPACES_AT_ENDS) >= 1 << 20:
        _SPACES_AT_ENDS.clear()
    _SPACES_AT_ENDS[token] = counts
    return counts


def _count_spaces(chars) -> int:
    count = 0
    for ch in chars:
        if not _is_space(ch):
            break
        count += 1
    return count


def _trimming(trims: bool, add_prefix_space: bool):
    """A frame's ``trim`` (see ``Frame.trim``) for a processor that trims offsets, or None if it does not."""
    return functools.partial(trim_span, add_prefix_space=add_prefix_space) if trims else None


def _trim_with_overflowing(encoding: Encoding, add_prefix_space: bool) -> None:
    trim_offsets(encoding, add_prefix_space)
    for over in encoding.overflowing:
        trim_offsets(over, add_prefix_space)


class ByteLevel(PostProcessor):
    """Trim the spaces (``Ġ``) that byte-level tokens carry out of their offsets; adds no tokens.

    ``use_regex`` only round-trips the JSON (Hugging Face shares one
    ByteLevel struct between pre-tokenizer, processor and decoder).

    >>> ByteLevel().num_special_tokens_to_add(True)
    0
    """

    type_name = "ByteLevel"

    def __init__(self, add_prefix_space: bool | None = None, trim_offsets: bool | None = None,
                 use_regex: bool | None = None):
        self.add_prefix_space = True if add_prefix_space is None else _check_bool("ByteLevel", "add_prefix_space",
                                                                                  add_prefix_space)
        self.trim_offsets = True if trim_offsets is None else _check_bool("ByteLevel", "trim_offsets", trim_offsets)
        self.use_regex = True if use_regex is None else _check_bool("ByteLevel", "use_regex", use_regex)

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return 0

    def part_types(self, add_special_tokens: bool) -> tuple[int, int] | None:
        return 0, 1     # (each part trimmed as its sequence)

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        for i, enc in enumerate(encodings):
            if self.trim_offsets:
                _trim_with_overflowing(enc, self.add_prefix_space)
            enc.set_sequence_id(i)
        return encodings

    def _single_frame(self, add_special_tokens: bool, ids_only: bool) -> Frame | None:
        return Frame((), 0, (), True, trim=_trimming(self.trim_offsets and not ids_only, self.add_prefix_space))

    def _pair_frame(self, add_special_tokens: bool) -> PairFrame:
        return PairFrame((), 0, (), 1, (), _trimming(self.trim_offsets, self.add_prefix_space))

    def _to_fields(self) -> dict:
        return {"add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("add_prefix_space", bool), fields.get("trim_offsets", bool),
                   fields.get("use_regex", bool, True))


class Sequence(PostProcessor):
    """Run post-processors one after the other on the same list of encodings.

    >>> Sequence([ByteLevel(), BertProcessing(("[SEP]", 102), ("[CLS]", 101))]).num_special_tokens_to_add(False)
    2
    """

    type_name = "Sequence"

    def __init__(self, processors: list[PostProcessor]):
        if not isinstance(processors, (list, tuple)):
            raise InputTypeError(f"Sequence: processors must be a list, got {type(processors).__name__}",
                                 fix="pass a list such as [ByteLevel(), TemplateProcessing(...)]")
        for i, proc in enumerate(processors):
            if not isinstance(proc, PostProcessor):
                raise InputTypeError(f"Sequence: processors[{i}] is {proc!r}, not a PostProcessor",
                                     fix="pass processor objects from pieceworks.processors")
        self.processors = list(processors)

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return sum(p.num_special_tokens_to_add(is_pair) for p in self.processors)

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        for proc in self.processors:
            encodings = proc.process_encodings(encodings, add_special_tokens)
        return encodings

    def single_frame(self, add_special_tokens: bool, ids_only: bool = False) -> Frame | None:
        """The one member's frame when every member before it adds nothing and none follows it.

        (A member after one that adds tokens would see several encodings;
        that, and the members' own changes, are :meth:`process`'s job.)
        """
        frame = Frame((), 0, (), True)
        trim = None
        for position, proc in enumerate(self.processors):
            if position and (frame.size or frame.type_id):
                return None
            frame = proc.single_frame(add_special_tokens, ids_only)
            if frame is None or frame.trim is not None and trim is not None:
                return None     # (two members that trim: process's job)
            trim = trim or frame.trim
        # A member that trims before the one that frames the sequence trims the sequence alone.
        return frame if frame.trim is trim else frame.with_trim(trim)

    def pair_frame(self, add_special_tokens: bool) -> PairFrame | None:
        """:meth:`single_frame`'s rule for a pair: the last member's frame, every member before it
        adding nothing and keeping the types (at most one of them trims)."""
        frame = PLAIN_PAIR_FRAME
        trim = None
        for position, proc in enumerate(self.processors):
            if position and not frame.is_plain():
                return None
            frame = proc.pair_frame(add_special_tokens)
            if frame is None or frame.trim is not None and trim is not None:
                return None
            trim = trim or frame.trim
        return frame if frame.trim is trim else frame.with_trim(trim)

    def _to_fields(self) -> dict:
        return {"processors": [p.to_json() for p in self.processors]}

    @classmethod
    def _from_fields(cls, fields: Fields):
        items = fields.get("processors", list)
        where = fields.field_name("processors")
        return cls([PostProcessor.from_json(item, f"{where}[{i}]", fields.path) for i, item in enumerate(items)])
