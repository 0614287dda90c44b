"""BertNormalizer, StripAccents and Lowercase follow Hugging Face's own char tables, on every code point.

Hugging Face reads older tables than ours (``_unicode_tables``): Python's
``unicodedata`` and the ``regex`` module know a few hundred marks and a few
format chars those do not, a few chars changed category since, and Rust
lowercases letters Python 3.11's Unicode 14.0 does not know. Each test runs
both libraries on every code point between two letters.
"""

from __future__ import annotations

import pytest

from pieceworks import normalizers as ours

tokenizers = pytest.importorskip("tokenizers")
hf = tokenizers.normalizers


def every_char_between_letters() -> list[str]:
    return ["a" + chr(cp) + "b" for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]


def differing(theirs, mine) -> list[str]:
    return [f"U+{ord(t[1]):04X}" for t in every_char_between_letters()
            if theirs.normalize_str(t) != mine.normalize_str(t)]


def test_bert_strip_accents_drops_what_hugging_face_drops():
    options = dict(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
    assert differing(hf.BertNormalizer(**options), ours.BertNormalizer(**options)) == []


def test_strip_accents_drops_what_hugging_face_drops():
    assert differing(hf.StripAccents(), ours.StripAccents()) == []


def test_bert_clean_text_removes_what_hugging_face_removes():
    options = dict(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    assert differing(hf.BertNormalizer(**options), ours.BertNormalizer(**options)) == []


def test_lowercasing_is_hugging_faces():
    options = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True)
    assert differing(hf.BertNormalizer(**options), ours.BertNormalizer(**options)) == []
    assert differing(hf.Lowercase(), ours.Lowercase()) == []


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_unicode_forms_are_hugging_faces(form):
    # Python 3.11 decomposes some chars from Unicode 10-14 that Hugging Face's tables leave alone.
    assert differing(getattr(hf, form)(), getattr(ours, form)()) == []


def test_a_pair_only_newer_tables_compose_stays_apart():
    # U+11935 U+11930 composes to U+11938 at Unicode 13.0; Hugging Face's NFC keeps the pair.
    text = "a\U00011935\U00011930b \u32ff"
    for form in ("NFC", "NFKC"):
        assert ours.__dict__[form]().normalize_str(text) == getattr(hf, form)().normalize_str(text)
