"""What every pipeline stage shares: a ``type`` name, JSON in and out, a registry.

Each stage has one base class (``Normalizer``, ``PreTokenizer``, ``Model``,
``PostProcessor``, ``Decoder``) made with :func:`stage_base`; each component
subclasses it with a ``type_name`` (its ``"type"`` in tokenizer.json) and is
registered automatically. Loading dispatches on ``"type"``:

>>> from pieceworks.normalizers import Normalizer
>>> Normalizer.from_json({"type": "Lowercase"})
Lowercase()

A component implements ``_to_fields()`` (its JSON fields, without ``type``)
and ``_from_fields(fields)`` (a classmethod reading them through
:class:`Fields`, which turns a missing or mistyped field into a
:class:`~pieceworks.errors.TokenizerFileError` that names it).
"""

from __future__ import annotations

import json

from typing import Any, ClassVar

from ._collector import paused

from .errors import InputTypeError, NotSerializableError, TokenizerFileError, UnknownComponentError

__all__ = ["Component", "CustomComponent", "Fields", "MISSING"]

MISSING = object()

_TYPE_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
               list: "a list", dict: "an object"}


class Fields:
    """Typed access to one JSON object, with errors that name the field.

    >>> Fields({"lowercase": "yes"}, "normalizer").get("lowercase", bool)
    Traceback (most recent call last):
      ...
    pieceworks.errors.TokenizerFileError: <string>: field 'normalizer.lowercase': expected a boolean, got 'yes'. Fix: ...
    """

    def __init__(self, data: dict, where: str, path: str | None = None):
        if not isinstance(data, dict):
            raise TokenizerFileError(path, f"expected an object, got {_describe(data)}", field=where,
                                     fix="check the file against the tokenizer.json schema")
        self.data = data
        self.where = where
        self.path = path

    def field_name(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def error(self, name: str, problem: str, fix: str | None = None) -> TokenizerFileError:
        return TokenizerFileError(self.path, problem, field=self.field_name(name),
                                  fix=fix or "check the file against the tokenizer.json schema; "
                                             "re-save it with tokenizers or pieceworks")

    def get(self, name: str, kind=None, default: Any = MISSING, *, nullable: bool = False):
        """The value of ``name``, checked against ``kind`` (a type or tuple of types)."""
        if name not in self.data:
            if default is MISSING:
                raise self.error(name, "missing required field")
            return default
        value = self.data[name]
        if value is None and (nullable or default is None):
            return None
        if kind is not None and not _is_kind(value, kind):
            expected = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise self.error(name, f"expected {expected}, got {_describe(value)}")
        return value

    def sub(self, name: str, default: Any = MISSING) -> "Fields | None":
        """A nested object as Fields (None if absent/null and a default of None is given)."""
        value = self.get(name, dict, default, nullable=default is None)
        if value is None:
            return None
        return Fields(value, self.field_name(name), self.path)


def _is_kind(value, kind) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if k is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if k is int and isinstance(value, bool):
            continue
        if isinstance(value, k):
            return True
    return False


def _describe(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: Bumped whenever an attribute of any component is assigned. A cache of state derived
#: from components (a fast plan's settings) is valid while the number is unchanged.
_EPOCH = [0]


def epoch() -> int:
    """The current component epoch (see ``_EPOCH``).

    >>> before = epoch(); Component().x = 1; epoch() > before
    True
    """
    return _EPOCH[0]


class Component:
    """Base of every stage's base class; see the module docstring."""

    type_name: ClassVar[str] = ""
    _registry: ClassVar[dict[str, type]]
    stage: ClassVar[str] = "component"

    def __setattr__(self, name, value):
        _EPOCH[0] += 1
        object.__setattr__(self, name, value)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_registry" not in cls.__dict__ and cls.__dict__.get("type_name"):
            cls._registry[cls.type_name] = cls

    # -- JSON ----------------------------------------------------------
    def _to_fields(self) -> dict:
        raise NotImplementedError

    @classmethod
    def _from_fields(cls, fields: Fields):
        raise NotImplementedError

    def to_json(self) -> dict:
        """This component as a tokenizer.json object, ``type`` first."""
        return {"type": self.type_name, **self._to_fields()}

    def _text_json(self) -> dict:
        """:meth:`to_json` to be written as text at once: a big part may be a stand-in that the
        writer spells (see :mod:`pieceworks.formats.json_text`)."""
        return self.to_json()

    @classmethod
    def from_json(cls, data: dict, where: str | None = None, path: str | None = None):
        """Build the component that ``data["type"]`` names."""
        where = where or cls.stage
        fields = Fields(data, where, path)
        type_name = fields.get("type", str)
        target = cls._registry.get(type_name)
        if target is None or (cls.type_name and target is not cls):
            known = ", ".join(sorted(cls._registry))
            raise UnknownComponentError(path, f"unknown {cls.stage} type {type_name!r}",
                                        field=f"{where}.type",
                                        fix=f"use one of: {known}")
        return target._from_fields(fields)

    # -- Python niceties -----------------------------------------------
    def __repr__(self) -> str:
        args = ", ".join(f"{k}={_field_repr(v, type(self))}" for k, v in self._to_fields().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return id(self)

    # (Writing and reading the JSON form pause the collector: a big model's vocabulary and merges
    # are a million new containers, and each collection while they pile up walks them all.)
    @paused(True)
    def __getstate__(self) -> bytes:
        """The tokenizer.json form as compact JSON bytes, as Hugging Face gives it (transformers reads
        a stage's settings with ``json.loads(stage.__getstate__())``). Pickling uses ``__reduce__``."""
        return state_bytes(self._text_json())

    @paused(True)
    def __setstate__(self, state):
        clone = type(self).from_json(state_data(state))
        for klass in type(clone).__mro__:
            for slot in klass.__dict__.get("__slots__", ()):
                if hasattr(clone, slot):
                    setattr(self, slot, getattr(clone, slot))
        if hasattr(clone, "__dict__"):
            self.__dict__.update(clone.__dict__)

    @paused(True)
    def __reduce__(self):
        # Pickled as its JSON text (a str: a lone surrogate in a token survives), not as the data:
        # pickling a big model's half a million merge lists took a second, its text a third of one.
        from .formats.json_text import dumps

        return (_rebuild_from_text, (type(self), dumps(self._text_json())))


@paused(True)
def _rebuild_from_text(cls, text: str):
    """What a pickle of a component holds: its class and its JSON text."""
    return cls.from_json(json.loads(text))


@paused(True)
def _rebuild(cls, state):
    """What a pickle made by pieceworks 0.1 before 2026-12 holds: the class and the JSON data."""
    return cls.from_json(state)


def state_bytes(data) -> bytes:
    """``data`` as the compact JSON bytes Hugging Face's ``__getstate__`` gives.

    >>> state_bytes({"type": "NFC", "x": "é"})
    b'{"type":"NFC","x":"\\xc3\\xa9"}'
    """
    from .formats.json_text import dumps     # (a model's vocabulary and merges written by a kernel)

    return dumps(data).encode("utf-8")


def state_data(state):
    """What ``__setstate__`` was given, as data: JSON bytes or str (Hugging Face's ``__getstate__``,
    or ours) read, anything else as it is (the tokenizer.json form, as earlier versions gave it).

    >>> state_data(b'{"type":"NFC"}'), state_data({"type": "NFC"})
    ({'type': 'NFC'}, {'type': 'NFC'})
    """
    if isinstance(state, (bytes, bytearray)):
        state = bytes(state).decode("utf-8")
    return json.loads(state) if isinstance(state, str) else state


class CustomComponent:
    """A stage made of a Python object's method (Hugging Face's ``PreTokenizer.custom(obj)`` and its
    kin): mixed in before the stage's base class, which gives ``custom`` a subclass naming ``method``.

    Such a stage is Python code, so it has no tokenizer.json form (saving,
    pickling or sending it to worker processes raises
    :class:`~pieceworks.errors.NotSerializableError`, as Hugging Face
    refuses to serialize it), and no fast plan takes it: a tokenizer holding
    one runs the general path.

    >>> from pieceworks.pre_tokenizers import PreTokenizer
    >>> class Halves:
    ...     def pre_tokenize(self, pretok):
    ...         pretok.split(lambda i, s: [s[:len(str(s)) // 2], s[len(str(s)) // 2:]])
    >>> PreTokenizer.custom(Halves()).pre_tokenize_str("abcd")
    [('ab', (0, 2)), ('cd', (2, 4))]
    """

    method: ClassVar[str] = ""

    def __init__(self, inner):
        if not callable(getattr(inner, self.method, None)):
            raise InputTypeError(f"{self._spelling()} needs an object with a {self.method}() method, "
                                 f"got {type(inner).__name__}",
                                 fix=f"pass an instance of a class that defines {self.method}()")
        self.inner = inner

    def _spelling(self) -> str:
        stage_class = next(k for k in type(self).__mro__ if "_registry" in k.__dict__)    # (see stage_base)
        return f"{stage_class.__name__}.custom"

    def to_json(self) -> dict:
        raise NotSerializableError(f"{self._spelling()}({type(self.inner).__name__}) is Python code: it has no "
                                   f"tokenizer.json form and cannot be saved, pickled or sent to another process",
                                   fix=f"put a built-in {self.stage.replace('_', '-')} in its place before saving "
                                       f"(and attach the custom one again after loading)")

    _to_fields = to_json

    def __repr__(self) -> str:
        return f"{self._spelling()}({self.inner!r})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.inner is other.inner

    def __hash__(self) -> int:
        return id(self)

    def __reduce__(self):
        self.to_json()      # (raises)


def stage_base(name: str):
    """Decorator for a stage's base class: give it its own registry and name."""

    def wrap(cls):
        cls._registry = {}
        cls.stage = name
        return cls

    return wrap


def _field_repr(value, cls: type) -> str:
    """A field in a repr: a component of ``cls``'s stage (a Sequence's parts) as its own repr, as
    Hugging Face shows them, not as its JSON.

    >>> from pieceworks.normalizers import Sequence, NFKC, Lowercase
    >>> Sequence([NFKC(), Lowercase()])
    Sequence(normalizers=[NFKC(), Lowercase()])
    """
    registry = getattr(cls, "_registry", {})
    if isinstance(value, dict) and value.get("type") in registry:
        return repr(registry[value["type"]].from_json(value))
    if isinstance(value, list) and value and all(isinstance(v, dict) and v.get("type") in registry for v in value):
        return "[" + ", ".join(_field_repr(v, cls) for v in value) + "]"
    return repr(value)
