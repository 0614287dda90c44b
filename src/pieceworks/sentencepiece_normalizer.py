"""``sentencepiece.SentencePieceNormalizer``: a SentencePiece normalizer on its own.

The normalizer of a .model file (``model_file``, ``model_proto``), of a
``NormalizerSpec`` (``normalizer_spec``), of a built-in rule set
(``rule_name``: nmt_nfkc, nfkc, nmt_nfkc_cf, nfkc_cf, identity), of a rule
file (``rule_tsv``) or of ``(source, replacement)`` pairs (``norm_map``);
``add_dummy_prefix``, ``escape_whitespaces`` and ``remove_extra_whitespaces``
override the spec's when given. As in sentencepiece, a model's user-defined
symbols and ``treat_whitespace_as_suffix`` play no part: only its spec does.

>>> n = SentencePieceNormalizer(norm_map=[("A", "b"), ("cd", "xy")])
>>> n.normalize(" Acd  A "), n.normalize("Acd", with_offsets=True)
('▁bxy▁b', ('▁bxy', [0, 0, 1, 1, 3]))
>>> n.decompile()
[('A', 'b'), ('cd', 'xy')]
"""

from __future__ import annotations

import os

from google.protobuf.message import DecodeError

from .errors import ConfigError, FileFormatError, InputTypeError
from .formats._sentencepiece_proto import ModelProto, NormalizerSpec
from .formats.sentencepiece import read_model_proto
from .models.spm import normalize_text, spec_normalizer

__all__ = ["SentencePieceNormalizer", "serialized_message", "add_snake_case"]


class SentencePieceNormalizer:
    """A SentencePiece normalizer made from one of its sources (see the module's docstring)."""

    def __init__(self, model_file=None, model_proto=None, normalizer_spec=None, rule_tsv=None, rule_name=None,
                 norm_map=None, add_dummy_prefix=None, escape_whitespaces=None, remove_extra_whitespaces=None):
        spec = _spec_from(model_file, model_proto, normalizer_spec, rule_tsv, rule_name, norm_map)
        # Only the flags given override the spec's (sentencepiece#1334: defaults used to clobber them).
        for name, value in (("add_dummy_prefix", add_dummy_prefix), ("escape_whitespaces", escape_whitespaces),
                            ("remove_extra_whitespaces", remove_extra_whitespaces)):
            if value is not None:
                setattr(spec, name, bool(value))
        self._set_spec(spec)

    def _set_spec(self, spec) -> None:
        self._spec = spec
        self._normalizer = spec_normalizer(spec)

    def Normalize(self, input, with_offsets=None):
        """The normalized text of ``input`` (a str or bytes, or a list of them); with ``with_offsets``,
        ``(text, offsets)``: the original char offset of each normalized char, and of the end."""
        if isinstance(input, list):
            return [normalize_text(self._normalizer, text, bool(with_offsets)) for text in input]
        return normalize_text(self._normalizer, input, bool(with_offsets))

    def Decompile(self) -> list[tuple[str, str]]:
        """The normalizer's rules as ``(source, replacement)`` pairs, sorted by source."""
        from .trainers.spm_rules import decompile_charsmap

        return decompile_charsmap(self._spec.precompiled_charsmap)

    def serialized_normalizer_spec(self) -> bytes:
        return self._spec.SerializeToString()

    def serialized_model_proto(self) -> bytes:
        """A ModelProto holding this normalizer's spec and nothing else, as sentencepiece gives it."""
        proto = ModelProto()
        proto.normalizer_spec.CopyFrom(self._spec)
        return proto.SerializeToString()

    def __getstate__(self) -> bytes:
        return self.serialized_model_proto()

    def __setstate__(self, state: bytes) -> None:
        self._set_spec(ModelProto.FromString(state).normalizer_spec)

    def __repr__(self) -> str:
        return f"SentencePieceNormalizer({self._spec.name or 'unnamed'!r})"


def _spec_from(model_file, model_proto, normalizer_spec, rule_tsv, rule_name, norm_map):
    """The NormalizerSpec of the first source given, in sentencepiece's order."""
    from .trainers import spm_rules

    spec = NormalizerSpec()
    if model_file:
        spec.CopyFrom(read_model_proto(os.fspath(model_file)).normalizer_spec)
    elif model_proto:
        spec.CopyFrom(read_model_proto(serialized_message(model_proto, "model_proto")).normalizer_spec)
    elif normalizer_spec:
        try:
            spec.ParseFromString(serialized_message(normalizer_spec, "normalizer_spec"))
        except DecodeError as exc:
            raise FileFormatError("<normalizer_spec>", f"not a NormalizerSpec: {exc}",
                                  fix="pass a NormalizerSpec's bytes (e.g. model_proto.normalizer_spec"
                                      ".SerializeToString())") from exc
    elif rule_tsv:
        spec.name = "user_defined"
        spec.normalization_rule_tsv = os.fspath(rule_tsv)
        spec.precompiled_charsmap = spm_rules.compile_charsmap(spm_rules.load_rule_tsv(os.fspath(rule_tsv)))
    elif rule_name:
        spec.name = rule_name
        spec.precompiled_charsmap = spm_rules.precompiled_charsmap(rule_name)
    elif norm_map:
        spec.precompiled_charsmap = spm_rules.compile_charsmap(_rules_of(norm_map))
    else:
        raise ConfigError("no normalizer source is given",
                          fix="pass model_file=, model_proto=, normalizer_spec=, rule_tsv=, rule_name= or norm_map=")
    return spec


def serialized_message(message, name: str) -> bytes:
    """The bytes of a protobuf ``message`` given as bytes or as the message itself (argument ``name``)."""
    if hasattr(message, "SerializeToString"):
        return message.SerializeToString()
    if isinstance(message, (bytes, bytearray, memoryview)):
        return bytes(message)
    raise InputTypeError(f"{name} must be bytes or a protobuf message, got {type(message).__name__}",
                         fix=f"pass open('x.model', 'rb').read() or the message itself as {name}=")


def _rules_of(norm_map) -> dict[str, str]:
    """``norm_map``'s ``(source, replacement)`` pairs as a dict (a dict is taken as it is)."""
    pairs = norm_map.items() if isinstance(norm_map, dict) else norm_map
    rules: dict[str, str] = {}
    for n, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
                and pair[0]):
            raise InputTypeError(f"norm_map[{n}] is {pair!r}, not a (source, replacement) pair of strs",
                                 fix="pass e.g. norm_map=[('ﬁ', 'fi'), ('\\u00a0', ' ')] (a non-empty source each)")
        rules[pair[0]] = pair[1]
    return rules


def add_snake_case(cls) -> None:
    """``EncodeAsPieces`` → ``encode_as_pieces`` etc. for every CamelCase method, as sentencepiece does."""
    import re

    for name, value in list(cls.__dict__.items()):
        if re.match(r"^[A-Z]", name):
            snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().replace("n_best", "nbest")
            setattr(cls, snake, value)


add_snake_case(SentencePieceNormalizer)
