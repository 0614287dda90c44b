"""tokenizer.json: pieceworks' native file, Hugging Face's schema.

Writing puts the fields in Hugging Face's order (version, truncation,
padding, added_tokens, normalizer, pre_tokenizer, post_processor, decoder,
model) with the same indentation, so a file round-trips through both
libraries unchanged. Reading checks every field and raises
:class:`~pieceworks.errors.TokenizerFileError` naming the file and the field.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import WordLevel
>>> text = Tokenizer(WordLevel({"a": 0}, unk_token="a")).to_str()
>>> Tokenizer.from_str(text).to_str() == text
True
"""

from __future__ import annotations

import json
import os
import warnings

from .._collector import paused
from .._component import Fields
from ..added_vocabulary import AddedToken
from ..errors import TokenizerFileError
from .serde_float import serde_json_float

__all__ = ["tokenizer_to_dict", "tokenizer_to_str", "tokenizer_from_str", "tokenizer_from_file",
           "tokenizer_from_dict"]

_DIRECTIONS = {"right": "Right", "left": "Left"}
_STRATEGIES = {"longest_first": "LongestFirst", "only_first": "OnlyFirst", "only_second": "OnlySecond"}


# -- writing -------------------------------------------------------------------
def tokenizer_to_dict(tok, for_text: bool = False) -> dict:
    """The tokenizer.json object of ``tok`` (``for_text``: to be written at once, by
    :func:`.json_text.dumps`, which spells its model's stand-ins)."""
    return {
        "version": "1.0",
        "truncation": _truncation_to_json(tok.truncation),
        "padding": _padding_to_json(tok.padding),
        "added_tokens": [t.to_json(i) for i, t in tok.get_added_tokens_decoder().items()],
        "normalizer": _component(tok.normalizer),
        "pre_tokenizer": _component(tok.pre_tokenizer),
        "post_processor": _component(tok.post_processor),
        "decoder": _component(tok.decoder),
        "model": tok.model._text_json() if for_text else tok.model.to_json(),
    }


@paused(True)     # (a big model's vocabulary and merges are a million new containers)
def tokenizer_to_str(tok, pretty: bool = False) -> str:
    """The tokenizer.json text of ``tok``: compact, or indented by two spaces a level as Hugging Face
    writes files (its vocabulary and merges written by a kernel: see :mod:`.json_text`)."""
    from .json_text import dumps

    return dumps(tokenizer_to_dict(tok, for_text=True), pretty)


def _component(obj):
    return None if obj is None else obj.to_json()


def _truncation_to_json(params):
    if params is None:
        return None
    return {"direction": _DIRECTIONS[params["direction"]], "max_length": params["max_length"],
            "strategy": _STRATEGIES[params["strategy"]], "stride": params["stride"]}


def _padding_to_json(params):
    if params is None:
        return None
    strategy = "BatchLongest" if params["length"] is None else {"Fixed": params["length"]}
    return {"strategy": strategy, "direction": _DIRECTIONS[params["direction"]],
            "pad_to_multiple_of": params["pad_to_multiple_of"], "pad_id": params["pad_id"],
            "pad_type_id": params["pad_type_id"], "pad_token": params["pad_token"]}


# -- reading -------------------------------------------------------------------
def tokenizer_from_file(path: "str | os.PathLike"):
    """Load a tokenizer.json file."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError as exc:
        raise TokenizerFileError(path, "file not found", fix="check the path") from exc
    except IsADirectoryError as exc:
        raise TokenizerFileError(path, "is a folder", fix="pass the tokenizer.json file inside it") from exc
    return tokenizer_from_bytes(raw, path=os.fspath(path))


def tokenizer_from_bytes(raw: bytes, path: str | None = None):
    """Load tokenizer.json from its bytes (UTF-8)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokenizerFileError(path, f"not UTF-8 text (bad byte at offset {exc.start})",
                                 fix="this is not a tokenizer.json; pass the JSON file") from exc
    return tokenizer_from_str(text, path=path)


# (The collector paused: a big model's vocabulary and merges are a million new containers, and each
# collection while they pile up walks them all: a quarter of reading Gemma 3's file.)
@paused(True)
def tokenizer_from_str(text: str, path: str | None = None):
    """Load tokenizer.json text."""
    if not isinstance(text, str):
        raise TokenizerFileError(path, f"expected JSON text, got {type(text).__name__}",
                                 fix="pass the file's contents as str (or use Tokenizer.from_file)")
    try:
        # Floats as Hugging Face reads them (see serde_float.py): Unigram ties depend on the last bit.
        data = json.loads(text, parse_float=serde_json_float)
    except json.JSONDecodeError as exc:
        problem = "the file is empty" if not text.strip() else f"invalid JSON: {exc.msg} at column {exc.colno}"
        raise TokenizerFileError(path, problem, line=exc.lineno,
                                 fix="the file is truncated or not JSON; download or save it again") from exc
    return tokenizer_from_dict(data, path)


def tokenizer_from_dict(data: dict, path: str | None = None):
    """Build a Tokenizer from a parsed tokenizer.json object."""
    from ..decoders import Decoder
    from ..models import Model
    from ..normalizers import Normalizer
    from ..pre_tokenizers import PreTokenizer
    from ..processors import PostProcessor
    from ..tokenizer import Tokenizer

    top = Fields(data, "", path)
    model = Model.from_json(top.get("model", dict), "model", path)
    tok = Tokenizer(model)
    tok.normalizer = _load_stage(top, "normalizer", Normalizer, path)
    tok.pre_tokenizer = _load_stage(top, "pre_tokenizer", PreTokenizer, path)
    tok.post_processor = _load_stage(top, "post_processor", PostProcessor, path)
    tok.decoder = _load_stage(top, "decoder", Decoder, path)
    _load_added_tokens(tok, top.get("added_tokens", list, []), path)
    _load_truncation(tok, top.sub("truncation", None))
    _load_padding(tok, top.sub("padding", None))
    return tok


def _load_stage(top: Fields, name: str, base, path):
    value = top.get(name, dict, None, nullable=True)
    return None if value is None else base.from_json(value, name, path)


def _load_added_tokens(tok, entries: list, path) -> None:
    tokens = [_added_token_of(entry, i, path) for i, entry in enumerate(entries)]
    # Hugging Face re-adds the tokens and keeps the ids that gives; say so if
    # the file disagrees, as it does.
    tok._added.add([t for _, t in tokens], tok.model, tok.normalizer)
    for tid, token in tokens:
        if not token.content:
            warnings.warn(f"{path or 'tokenizer.json'}: added token {tid} has empty content and is left out, "
                          f"as in Hugging Face tokenizers", stacklevel=4)
            continue
        got = tok.token_to_id(token.content)
        if got != tid:
            warnings.warn(f"{path or 'tokenizer.json'}: added token {token.content!r} has id {tid} in the "
                          f"file but gets id {got}, as in Hugging Face tokenizers", stacklevel=4)


def _added_token_of(entry, i: int, path) -> tuple[int, AddedToken]:
    """``(id, AddedToken)`` of one ``added_tokens`` entry: a well-formed one read directly (Gemma 3
    has 6k), any other through Fields, which names what is wrong."""
    if type(entry) is dict:
        get = entry.get
        content, tid, special = get("content"), get("id"), get("special", False)
        flags = (special, get("single_word", False), get("lstrip", False), get("rstrip", False),
                 get("normalized", not special))
        if type(content) is str and type(tid) is int and all([type(flag) is bool for flag in flags]):
            return tid, AddedToken(content, single_word=flags[1], lstrip=flags[2], rstrip=flags[3],
                                   normalized=flags[4], special=special)
    f = Fields(entry, f"added_tokens[{i}]", path)
    special = f.get("special", bool, False)
    token = AddedToken(
        f.get("content", str), single_word=f.get("single_word", bool, False),
        lstrip=f.get("lstrip", bool, False), rstrip=f.get("rstrip", bool, False),
        normalized=f.get("normalized", bool, not special), special=special)
    return f.get("id", int), token


def _load_truncation(tok, f: Fields | None) -> None:
    if f is None:
        return
    direction = _enum(f, "direction", _DIRECTIONS, "Right")
    strategy = _enum(f, "strategy", _STRATEGIES, "LongestFirst")
    tok._truncation = {"max_length": _count(f, "max_length", None), "stride": _count(f, "stride", 0),
                       "strategy": strategy, "direction": direction}


def _load_padding(tok, f: Fields | None) -> None:
    if f is None:
        return
    strategy = f.get("strategy", (str, dict), "BatchLongest")
    if strategy == "BatchLongest":
        length = None
    elif isinstance(strategy, dict) and set(strategy) == {"Fixed"}:
        length = _count(Fields(strategy, f.field_name("strategy"), f.path), "Fixed", None)
    else:
        raise f.error("strategy", f"expected \"BatchLongest\" or {{\"Fixed\": n}}, got {strategy!r}")
    multiple = f.get("pad_to_multiple_of", int, None, nullable=True)
    tok._padding = {"length": length, "pad_to_multiple_of": multiple,
                    "pad_id": _count(f, "pad_id", 0), "pad_token": f.get("pad_token", str, "[PAD]"),
                    "pad_type_id": _count(f, "pad_type_id", 0),
                    "direction": _enum(f, "direction", _DIRECTIONS, "Right")}


def _enum(f: Fields, name: str, table: dict, default: str) -> str:
    value = f.get(name, str, default)
    for py, js in table.items():
        if value == js:
            return py
    raise f.error(name, f"unknown value {value!r}", fix=f"use one of {', '.join(table.values())}")


def _count(f: Fields, name: str, default):
    from .._component import MISSING

    value = f.get(name, int, MISSING if default is None else default)
    if value < 0:
        raise f.error(name, f"must not be negative, got {value}")
    return value
