"""Decoders: turn the model's tokens back into text.

A decoder maps the list of token strings to a list of text chunks
(``decode_chain``); ``decode`` joins them. Names, fields and behaviour follow
Hugging Face ``tokenizers``, chunk for chunk, so that decoders chained in a
:class:`Sequence` see exactly what Hugging Face's would:

>>> Sequence([ByteFallback(), Metaspace()]).decode(["▁Hi", "<0x21>", "▁there"])
'Hi! there'
>>> WordPiece().decode(["un", "##believ", "##able", "!"])
'unbelievable!'
>>> ByteLevel().decode(["Hello", "Ġw", "Ã¶", "rld"])
'Hello wörld'
"""

from __future__ import annotations

import contextlib
import contextvars

from ._component import Component, CustomComponent, Fields, stage_base
from ._kernels.id_bytes import StreamWindow, strip_text
from ._regex import Regex
from .byte_level import byte_chars_to_bytes_or_none
from .errors import ConfigError, DecodeError, InputTypeError

__all__ = ["Decoder", "ByteLevel", "WordPiece", "Metaspace", "BPEDecoder", "ByteFallback", "Fuse",
           "Strip", "Replace", "CTC", "Sequence", "DecodeStream"]


@stage_base("decoder")
class Decoder(Component):
    """Base class: ``decode_chain(tokens) -> chunks``."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def decode(self, tokens: list[str], errors: str = "replace") -> str:
        """Decode a list of tokens to text.

        Bytes that do not form valid UTF-8 (from :class:`ByteLevel` or
        :class:`ByteFallback` tokens) become U+FFFD with ``errors="replace"``
        (the default, as in Hugging Face) or raise DecodeError with
        ``errors="strict"``.

        >>> ByteFallback().decode(["<0xE5>"])
        '\ufffd'
        """
        with utf8_errors(errors):
            return "".join(self.decode_chain(_check_tokens(tokens)))

    @staticmethod
    def custom(decoder) -> "Decoder":
        """A decoder that calls ``decoder.decode_chain(tokens)``, which returns the text of each
        token as a list of str (joined to make the decoded text). Hugging Face's
        ``Decoder.custom``; it cannot be saved (see
        :class:`~pieceworks._component.CustomComponent`).

        >>> class Dashes:
        ...     def decode_chain(self, tokens):
        ...         return [t + "-" for t in tokens]
        >>> Decoder.custom(Dashes()).decode(["a", "b"])
        'a-b-'
        """
        return CustomDecoder(decoder)


class CustomDecoder(CustomComponent, Decoder):
    """What :meth:`Decoder.custom` makes."""

    method = "decode_chain"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        chunks = self.inner.decode_chain(tokens)
        if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            raise InputTypeError(f"{type(self.inner).__name__}.decode_chain returned {chunks!r:.60}, "
                                 f"not a list of str", fix="return one str per token (or any list of str)")
        return chunks


# -- what to do with invalid UTF-8 ------------------------------------------
# decode_chain keeps Hugging Face's signature (tokens only), so the choice
# travels in a context variable: set for the duration of one decode call,
# private to the calling thread (and asyncio task), read where bytes turn
# into text.
UTF8_ERRORS = ("replace", "strict")
_utf8_errors: contextvars.ContextVar[str] = contextvars.ContextVar("pieceworks_utf8_errors", default="replace")


@contextlib.contextmanager
def utf8_errors(errors: str):
    """Within the block, decoders treat invalid UTF-8 as ``errors`` says ("replace" or "strict")."""
    token = _utf8_errors.set(check_utf8_errors(errors))
    try:
        yield
    finally:
        _utf8_errors.reset(token)


def check_utf8_errors(errors) -> str:
    """``errors`` if it is "replace" or "strict", else ConfigError."""
    if errors not in UTF8_ERRORS:
        raise ConfigError(f"unknown errors={errors!r} for decoding",
                          fix="use errors='replace' (invalid bytes become U+FFFD) or errors='strict' (raise)")
    return errors


def _strict_utf8() -> bool:
    return _utf8_errors.get() == "strict"


def _invalid_utf8(data: bytes, exc: UnicodeDecodeError, decoder: str) -> DecodeError:
    bad = bytes(data[exc.start:exc.end])
    return DecodeError(f"{decoder}: the ids decode to invalid UTF-8 ({bad!r} at byte {exc.start} of "
                       f"{len(data)}; {exc.reason})",
                       fix="decode more ids (a character may be cut off at the end), or pass "
                           "errors='replace' to get U+FFFD for the bad bytes")


# -- argument checks ---------------------------------------------------------

def _check_tokens(tokens) -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
        raise InputTypeError(f"decode expects a list of str tokens, got {type(tokens).__name__}",
                             fix="pass a list such as ['Hello', 'Ġworld']")
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise InputTypeError(f"tokens[{i}] is {token!r}, not a str",
                                 fix="convert ids to tokens first (Tokenizer.id_to_token)")
    return list(tokens)


def _check_type(component: str, name: str, value, kind):
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise InputTypeError(f"{component}: {name} must be a {kind.__name__}, got {value!r}",
                             fix=f"pass {name} as a {kind.__name__}")
    return value


def _check_char(component: str, name: str, value) -> str:
    _check_type(component, name, value, str)
    if len(value) != 1:
        raise ConfigError(f"{component}: {name} must be exactly one character, got {value!r}",
                          fix=f"pass a single character as {name}, e.g. '▁'")
    return value


def _check_count(component: str, name: str, value) -> int:
    _check_type(component, name, value, int)
    if value < 0:
        raise ConfigError(f"{component}: {name} must be >= 0, got {value}", fix=f"pass a count >= 0 as {name}")
    return value


def _field_char(fields: Fields, name: str) -> str:
    value = fields.get(name, str)
    if len(value) != 1:
        raise fields.error(name, f"expected exactly one character, got {value!r}")
    return value


def _field_count(fields: Fields, name: str) -> int:
    value = fields.get(name, int)
    if value < 0:
        raise fields.error(name, f"expected a count >= 0, got {value}")
    return value


# -- the decoders ------------------------------------------------------------

class ByteLevel(Decoder):
    """Map GPT-2 byte chars back to bytes and decode them as UTF-8.

    A token made only of byte-alphabet chars stands for those bytes; any
    other token stands for its own UTF-8. Bytes that are not valid UTF-8
    become U+FFFD, one per maximal invalid run as Rust's ``from_utf8_lossy``
    does. The result is one chunk. The three options only round-trip the
    JSON (Hugging Face shares one ByteLevel struct between stages).

    >>> ByteLevel().decode(["Ġh", "Ã©", "Ã"])
    ' hé�'
    """

    type_name = "ByteLevel"

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True):
        self.add_prefix_space = _check_type("ByteLevel", "add_prefix_space", add_prefix_space, bool)
        self.trim_offsets = _check_type("ByteLevel", "trim_offsets", trim_offsets, bool)
        self.use_regex = _check_type("ByteLevel", "use_regex", use_regex, bool)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        data = bytearray()
        for token in tokens:
            data += token_bytes(token)
        return [self.text_of(data, _strict_utf8())]

    @staticmethod
    def text_of(data: bytes | bytearray, strict: bool = False) -> str:
        """The text of the joined bytes of the tokens (:func:`token_bytes` of each): UTF-8, invalid
        bytes as U+FFFD, or DecodeError if ``strict``.

        >>> ByteLevel.text_of(b"h\\xc3\\xa9\\xc3")
        'hé\\ufffd'
        """
        if strict:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _invalid_utf8(data, exc, "ByteLevel") from None
        return data.decode("utf-8", "replace")

    def _to_fields(self) -> dict:
        return {"add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("add_prefix_space", bool), fields.get("trim_offsets", bool),
                   fields.get("use_regex", bool, True))


def token_bytes(token: str) -> bytes:
    """The bytes a byte-level token stands for (its own UTF-8 if not byte-level).

    >>> token_bytes("Ġh"), token_bytes("<|eot|>"), token_bytes("中")
    (b' h', b'<|eot|>', b'\\xe4\\xb8\\xad')
    """
    raw = byte_chars_to_bytes_or_none(token)
    return token.encode("utf-8", "surrogatepass") if raw is None else raw


class WordPiece(Decoder):
    """Glue ``##`` continuation pieces to the word before; other tokens get a space.

    With ``cleanup`` each chunk also loses the space before punctuation and
    English contractions (``" ."`` → ``"."``, ``" n't"`` → ``"n't"``).

    >>> WordPiece().decode(["I", "do", "n't", "li", "##ke", "it", "."])
    "I don't like it."
    """

    type_name = "WordPiece"

    def __init__(self, prefix: str = "##", cleanup: bool = True):
        self.prefix = _check_type("WordPiece", "prefix", prefix, str)
        self.cleanup = _check_type("WordPiece", "cleanup", cleanup, bool)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for i, token in enumerate(tokens):
            if i != 0:
                token = token[len(self.prefix):] if token.startswith(self.prefix) else " " + token
            out.append(cleanup(token) if self.cleanup else token)
        return out

    def _to_fields(self) -> dict:
        return {"prefix": self.prefix, "cleanup": self.cleanup}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("prefix", str), fields.get("cleanup", bool))


# Applied in this order, each to the whole chunk (the order matters: " ' " must
# go before " 's").
_CLEANUP_RULES = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                  (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def cleanup(text: str) -> str:
    """Remove tokenization artifacts: spaces before punctuation and contractions.

    >>> cleanup("Hello , world ! I 'm here")
    "Hello, world! I'm here"
    """
    for dirty, clean in _CLEANUP_RULES:
        text = text.replace(dirty, clean)
    return text


PREPEND_SCHEMES = ("always", "never", "first")


class Metaspace(Decoder):
    """Turn the ``▁`` replacement char back into spaces.

    In the first token the replacement chars are dropped (they were the
    prepended space) unless ``prepend_scheme`` is ``"never"``.

    >>> Metaspace().decode(["▁Hello", "▁wor", "ld"])
    'Hello world'
    """

    type_name = "Metaspace"

    def __init__(self, replacement: str = "▁", prepend_scheme: str = "always", split: bool = True):
        self.replacement = _check_char("Metaspace", "replacement", replacement)
        _check_type("Metaspace", "prepend_scheme", prepend_scheme, str)
        if prepend_scheme not in PREPEND_SCHEMES:
            raise ConfigError(f"Metaspace: unknown prepend_scheme {prepend_scheme!r}",
                              fix="use 'always', 'never' or 'first'")
        self.prepend_scheme = prepend_scheme
        self.split = _check_type("Metaspace", "split", split, bool)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for i, token in enumerate(tokens):
            space = "" if i == 0 and self.prepend_scheme != "never" else " "
            out.append(token.replace(self.replacement, space))
        return out

    def _to_fields(self) -> dict:
        return {"replacement": self.replacement, "prepend_scheme": self.prepend_scheme, "split": self.split}

    @classmethod
    def _from_fields(cls, fields: Fields):
        replacement = _field_char(fields, "replacement")
        scheme = fields.get("prepend_scheme", str, None)
        if scheme is not None and scheme not in PREPEND_SCHEMES:
            raise fields.error("prepend_scheme", f"unknown prepend scheme {scheme!r}",
                               fix="use 'always', 'never' or 'first'")
        # Files from before prepend_scheme existed say add_prefix_space instead;
        # Hugging Face reads false as "never" and refuses any other scheme with it.
        if fields.get("add_prefix_space", bool, None) is False:
            if scheme != "never":
                raise fields.error("add_prefix_space", "add_prefix_space=false contradicts prepend_scheme "
                                   f"{scheme or 'always'!r}",
                                   fix="drop add_prefix_space and set prepend_scheme to 'never'")
        return cls(replacement, scheme or "always", fields.get("split", bool, True))


class BPEDecoder(Decoder):
    """Replace the end-of-word ``suffix`` by a space (by nothing in the last token).

    >>> BPEDecoder().decode(["hel", "lo</w>", "world</w>"])
    'hello world'
    """

    type_name = "BPEDecoder"

    def __init__(self, suffix: str = "</w>"):
        self.suffix = _check_type("BPEDecoder", "suffix", suffix, str)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        last = len(tokens) - 1
        return [token.replace(self.suffix, "" if i == last else " ") for i, token in enumerate(tokens)]

    def _to_fields(self) -> dict:
        return {"suffix": self.suffix}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("suffix", str))


class ByteFallback(Decoder):
    """Decode runs of ``<0xAB>`` byte tokens as UTF-8.

    A run of byte tokens that is valid UTF-8 becomes its text; a run that is
    not becomes one U+FFFD per byte (not per invalid sequence).

    >>> ByteFallback().decode(["<0xE5>", "<0x8F>", "<0xAB>", "a", "<0xE5>"])
    '叫a�'
    """

    type_name = "ByteFallback"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()
        for token in tokens:
            byte = fallback_byte(token)
            if byte is not None:
                run.append(byte)
                continue
            if run:
                out.extend(_decode_byte_run(run))
                run = bytearray()
            out.append(token)
        if run:
            out.extend(_decode_byte_run(run))
        return out

    def _to_fields(self) -> dict:
        return {}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls()


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def fallback_byte(token: str) -> int | None:
    """The byte of a ``<0xAB>`` token, else None.

    Mirrors the Rust test ``token.len() == 6`` (UTF-8 bytes) and
    ``u8::from_str_radix(hex, 16)``, which also takes a ``+`` sign (``<0x+A>``).
    """
    if not (token.startswith("<0x") and token.endswith(">") and len(token.encode("utf-8")) == 6):
        return None
    hex_part = token[3:-1]
    digits = hex_part[1:] if hex_part.startswith("+") else hex_part
    if not digits or any(c not in _HEX_DIGITS for c in digits):
        return None
    return int(digits, 16)


def _decode_byte_run(run: bytearray) -> list[str]:
    try:
        return [run.decode("utf-8")]
    except UnicodeDecodeError as exc:
        if _strict_utf8():
            raise _invalid_utf8(run, exc, "ByteFallback") from None
        return ["\ufffd"] * len(run)


class Fuse(Decoder):
    """Join all tokens into one chunk (so later decoders see a single string).

    >>> Fuse().decode_chain(["a", "b", "c"])
    ['abc']
    """

    type_name = "Fuse"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]

    def _to_fields(self) -> dict:
        return {}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls()


class Strip(Decoder):
    """Strip up to ``left`` copies of ``content`` from the start of each token, ``right`` from the end.

    The JSON fields are ``start`` and ``stop``; ``start=`` and ``stop=``
    are accepted here too.

    >>> Strip(" ", 1, 0).decode(["  a", " b"])
    ' ab'
    """

    type_name = "Strip"

    def __init__(self, content: str = " ", left: int = 0, right: int = 0, *,
                 start: int | None = None, stop: int | None = None):
        self.content = _check_char("Strip", "content", content)
        self.start = _check_count("Strip", "left", left if start is None else start)
        self.stop = _check_count("Strip", "right", right if stop is None else stop)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._strip(token) for token in tokens]

    def _strip(self, token: str) -> str:
        return strip_text(token, self.content, self.start, self.stop)

    def _to_fields(self) -> dict:
        return {"content": self.content, "start": self.start, "stop": self.stop}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(_field_char(fields, "content"), _field_count(fields, "start"), _field_count(fields, "stop"))


class Replace(Decoder):
    """Replace every match of ``pattern`` (a str, or a :class:`Regex`) in each token by ``content``.

    >>> Replace("▁", " ").decode(["▁Hello", "▁world"])
    ' Hello world'
    >>> Replace(Regex("[0-9]+"), "#").decode(["a12b3"])
    'a#b#'
    """

    type_name = "Replace"

    def __init__(self, pattern, content: str):
        self.pattern = _check_pattern(pattern)
        self.content = _check_type("Replace", "content", content, str)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._replace(token) for token in tokens]

    def _replace(self, token: str) -> str:
        if isinstance(self.pattern, Regex):
            return _replace_spans(token, self.pattern.spans(token), self.content)
        return _replace_spans(token, _literal_spans(self.pattern, token), self.content)

    def _to_fields(self) -> dict:
        kind = "Regex" if isinstance(self.pattern, Regex) else "String"
        source = self.pattern.pattern if isinstance(self.pattern, Regex) else self.pattern
        return {"pattern": {kind: source}, "content": self.content}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(read_pattern(fields, "pattern"), fields.get("content", str))


def _check_pattern(pattern):
    if isinstance(pattern, (str, Regex)):
        return pattern
    if isinstance(pattern, dict) and len(pattern) == 1:
        return read_pattern(Fields({"pattern": pattern}, "Replace"), "pattern")
    raise InputTypeError(f"Replace: pattern must be a str or a Regex, got {pattern!r}",
                         fix="pass a literal str, or pieceworks.Regex(...) for a regular expression")


def read_pattern(fields: Fields, name: str):
    """A ``{"String": s}`` or ``{"Regex": r}`` pattern field as a str or a :class:`Regex`."""
    sub = fields.sub(name)
    keys = list(sub.data)
    if len(keys) != 1 or keys[0] not in ("String", "Regex"):
        raise fields.error(name, f"expected {{\"String\": ...}} or {{\"Regex\": ...}}, got {sub.data!r}")
    source = sub.get(keys[0], str)
    if keys[0] == "String":
        return source
    try:
        return Regex(source)
    except ConfigError as exc:
        raise sub.error("Regex", exc.message, fix=exc.fix) from None


def _literal_spans(literal: str, text: str):
    """Non-overlapping spans of ``literal`` in ``text``; an empty literal matches between all chars."""
    if not literal:
        yield from ((i, i) for i in range(len(text) + 1))
        return
    start = text.find(literal)
    while start != -1:
        yield start, start + len(literal)
        start = text.find(literal, start + len(literal))


def _replace_spans(text: str, spans, content: str) -> str:
    if not text:
        return ""
    parts = []
    prev = 0
    for start, end in spans:
        parts.append(text[prev:start])
        parts.append(content)
        prev = end
    parts.append(text[prev:])
    return "".join(parts)


class CTC(Decoder):
    """Collapse the repeated frames of a CTC model's output into text.

    Consecutive duplicates are merged, ``pad_token`` removed and (with
    ``cleanup``) ``word_delimiter_token`` turned into a space; empty chunks
    are dropped.

    >>> CTC().decode(["<pad>", "h", "h", "e", "<pad>", "l", "l", "<pad>", "l", "o", "|", "|", "!"])
    'hello !'
    """

    type_name = "CTC"

    def __init__(self, pad_token: str = "<pad>", word_delimiter_token: str = "|", cleanup: bool = True):
        self.pad_token = _check_type("CTC", "pad_token", pad_token, str)
        self.word_delimiter_token = _check_type("CTC", "word_delimiter_token", word_delimiter_token, str)
        self.cleanup = _check_type("CTC", "cleanup", cleanup, bool)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for i, token in enumerate(tokens):
            if i > 0 and token == tokens[i - 1]:
                continue
            text = token.replace(self.pad_token, "")
            if self.cleanup:
                text = cleanup(text).replace(self.word_delimiter_token, " ")
            if text:
                out.append(text)
        return out

    def _to_fields(self) -> dict:
        return {"pad_token": self.pad_token, "word_delimiter_token": self.word_delimiter_token,
                "cleanup": self.cleanup}

    @classmethod
    def _from_fields(cls, fields: Fields):
        return cls(fields.get("pad_token", str), fields.get("word_delimiter_token", str),
                   fields.get("cleanup", bool))


class Sequence(Decoder):
    """Run decoders one after the other, each on the chunks of the one before.

    >>> Sequence([Replace("▁", " "), Fuse(), Strip(" ", 1, 0)]).decode(["▁Hi", "▁you"])
    'Hi you'
    """

    type_name = "Sequence"

    def __init__(self, decoders: list[Decoder]):
        if not isinstance(decoders, (list, tuple)):
            raise InputTypeError(f"Sequence: decoders must be a list of decoders, got {type(decoders).__name__}",
                                 fix="pass a list such as [ByteFallback(), Fuse()]")
        for i, dec in enumerate(decoders):
            if not isinstance(dec, Decoder):
                raise InputTypeError(f"Sequence: decoders[{i}] is {dec!r}, not a Decoder",
                                     fix="pass decoder objects from pieceworks.decoders")
        self.decoders = list(decoders)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for dec in self.decoders:
            tokens = dec.decode_chain(tokens)
        return tokens

    def _to_fields(self) -> dict:
        return {"decoders": [dec.to_json() for dec in self.decoders]}

    @classmethod
    def _from_fields(cls, fields: Fields):
        items = fields.get("decoders", list)
        where = fields.field_name("decoders")
        return cls([Decoder.from_json(item, f"{where}[{i}]", fields.path) for i, item in enumerate(items)])


# =============================================================================
# Streaming decode: DecodeStream
# =============================================================================
#
# Text for ids that arrive one at a time (a model generating), as Hugging
# Face's ``tokenizers.decoders.DecodeStream``. Decoding each id alone is wrong
# twice over: a character may be split across ids (byte-level BPE, ``<0xNN>``
# byte fallback), and decoders look at neighbours (Metaspace drops the space of
# the *first* token only, WordPiece glues ``##`` pieces to the word before).
#
# The stream keeps a small window of ids. On each step it decodes the window
# plus the new ids; the new text is what follows the text of the window alone
# (the "prefix"). Nothing is returned while the text ends in U+FFFD: the last
# character is incomplete, so the stream waits for more ids. After returning
# text the window shrinks to the ids of that text, so each step decodes only a
# few ids. Invariant: the text of the window starts with ``prefix``.


class DecodeStream(StreamWindow):
    """Incremental decoding: feed ids as they are generated, get text as soon as it is complete.

    ``ids`` pre-fills the stream with ids already shown (a prompt): their
    text is not returned again, but it gives the context the next ids
    decode in. ``skip_special_tokens`` is passed on to
    ``Tokenizer.decode`` on every step (default False, as Hugging Face's).
    ``step(tokenizer, id)`` takes one id or a list of ids and returns the
    new text, or None while a character is still incomplete.

    >>> from pieceworks import Tokenizer
    >>> from pieceworks.models import BPE
    >>> tok = Tokenizer(BPE({"▁Hi": 0, "<0xE5>": 1, "<0x8F>": 2, "<0xAB>": 3}, [], byte_fallback=True))
    >>> tok.decoder = Sequence([ByteFallback(), Metaspace()])
    >>> stream = DecodeStream()
    >>> [stream.step(tok, i) for i in [0, 1, 2, 3, 0]]
    ['Hi', None, None, '叫', ' Hi']
    """

    def __init__(self, ids: "list[int] | None" = None, skip_special_tokens: "bool | None" = False):
        self.skip_special_tokens = bool(skip_special_tokens)
        # The window: ids[:prefix_index] gave the text returned last; ids
        # after it are pending. ``prefix`` is the text of the window's
        # returned part (empty until the first text is out).
        self.ids: list[int] = [] if ids is None else _stream_ids(ids, "ids")
        self.prefix = ""
        self.prefix_index = 0

    # step(tokenizer, id) is StreamWindow's: one id through the tokenizer's id table, in C, or this.
    def _step_long(self, tokenizer, id) -> "str | None":
        """:meth:`step` through ``tokenizer.decode``: a list of ids, a tokenizer without an id table,
        an id the table cannot decode (decode says why)."""
        new_ids = _stream_ids(id, "id")
        return self._advance(_decode_function(tokenizer), new_ids)

    def __copy__(self) -> "DecodeStream":
        clone = DecodeStream(None, self.skip_special_tokens)
        clone.ids, clone.prefix, clone.prefix_index = list(self.ids), self.prefix, self.prefix_index
        return clone

    def __deepcopy__(self, memo) -> "DecodeStream":
        return self.__copy__()

    def __repr__(self) -> str:
        return (f"DecodeStream(skip_special_tokens={self.skip_special_tokens}, pending_ids={len(self.ids)}, "
                f"prefix_index={self.prefix_index})")


def _stream_ids(value, name: str) -> list[int]:
    """One id or a list of ids as a list of non-negative ints (Hugging Face takes u32)."""
    if isinstance(value, int) and not isinstance(value, bool):
        values = [value]
    elif isinstance(value, (list, tuple)):
        values = list(value)
    else:
        raise InputTypeError(f"DecodeStream: {name} must be an int or a list of int, got {type(value).__name__}",
                             fix="pass a token id such as 42, or a list such as [42, 7]")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**32:
            raise InputTypeError(f"DecodeStream: {name}[{i}] is {v!r}, not a token id",
                                 fix="pass non-negative integer token ids")
    return values


def _decode_function(tokenizer):
    decode = getattr(tokenizer, "decode", None)
    if not callable(decode):
        raise InputTypeError(f"DecodeStream.step needs a Tokenizer, got {type(tokenizer).__name__}",
                             fix="pass the pieceworks.Tokenizer whose ids these are")
    return decode
