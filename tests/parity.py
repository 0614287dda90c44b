"""Helpers to compare pieceworks results with Hugging Face ``tokenizers``."""

from __future__ import annotations

import pytest

FIELDS = ("ids", "tokens", "offsets", "type_ids", "special_tokens_mask", "attention_mask", "word_ids",
          "sequence_ids")


def encoding_fields(enc) -> dict:
    """The comparable fields of an Encoding (ours or Hugging Face's), overflowing included."""
    out = {name: list(getattr(enc, name)) for name in FIELDS}
    out["offsets"] = [tuple(o) for o in out["offsets"]]
    out["overflowing"] = [encoding_fields(o) for o in enc.overflowing]
    return out


def assert_same_encoding(ours, theirs, context: str = "") -> None:
    a, b = encoding_fields(ours), encoding_fields(theirs)
    for name in FIELDS + ("overflowing",):
        assert a[name] == b[name], f"{context}: field {name} differs\n ours:   {a[name]}\n theirs: {b[name]}"


def general_path(make):
    """A tokenizer from ``make()`` whose fast plan is off for good (its stages stay the same): what a
    plan is held to."""
    patch = pytest.MonkeyPatch()
    patch.setenv("PIECEWORKS_NO_FAST", "1")
    try:
        tok = make()
        assert tok._current_plan() is None
    finally:
        patch.undo()
    return tok
