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


def assert_threads_equal_serial(fast, general, lines: list, monkeypatch, every: int = 97) -> None:
    """``fast.encode_batch(lines)`` on 2 threads gives the ids of ``general``'s serial batch, and every
    ``every``-th encoding equals ``general.encode`` of its line, field by field."""
    from pieceworks.fast import _pool

    serial = [e.ids for e in general.encode_batch(lines)]
    monkeypatch.setattr(_pool, "num_threads", lambda: 2)
    batch = fast.encode_batch(lines)
    assert [e.ids for e in batch] == serial
    for k in range(0, len(lines), every):
        assert_same_encoding(batch[k], general.encode(lines[k]), repr(lines[k][:60]))


def assert_same_as_hugging_face_on_corpora(ours, theirs, shared_data, relatives, limit: int = 200_000) -> None:
    """``ours`` and Hugging Face's ``theirs`` agree, field by field, on the first ``limit`` bytes of each
    corpus (``relatives``: paths under ../shared/data) as one text and line by line in a batch."""
    for relative in relatives:
        text = (shared_data / relative).read_bytes()[:limit].decode("utf-8", "ignore")
        assert_same_encoding(ours.encode(text), theirs.encode(text), relative)
        lines = text.splitlines()
        for mine, hf, line in zip(ours.encode_batch(lines), theirs.encode_batch(lines), lines):
            assert_same_encoding(mine, hf, f"{relative}: {line[:60]!r}")


def assert_same_as_hugging_face_on_lines(ours, theirs, lines: list) -> None:
    """``ours`` and Hugging Face's ``theirs`` agree, field by field, on ``lines`` as a batch and
    joined by newlines as one text."""
    for mine, hf, line in zip(ours.encode_batch(lines), theirs.encode_batch(lines), lines):
        assert_same_encoding(mine, hf, repr(line[:60]))
    text = "\n".join(lines)
    assert_same_encoding(ours.encode(text), theirs.encode(text), "the lines as one text")


def both_from_file(relative: str, shared_data):
    """``(pieceworks.Tokenizer, tokenizers.Tokenizer)`` of ``tokenizers/<relative>/tokenizer.json`` in the shared data."""
    import tokenizers

    from pieceworks import Tokenizer

    path = str(shared_data / f"tokenizers/{relative}/tokenizer.json")
    return Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)
