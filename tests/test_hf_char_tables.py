"""BertNormalizer, StripAccents and Lowercase follow Hugging Face's own char tables, on every code point.

Hugging Face reads older tables than ours (``_unicode_tables``): Python's
``unicodedata`` and the ``regex`` module know a few hundred marks and a few
format chars those do not, a few chars changed category since, and Rust
lowercases letters Python 3.11's Unicode 14.0 does not know. Each test runs
both libraries on every code point between two letters.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


FORMS = ["NFC", "NFD", "NFKC", "NFKD"]


def python_edit(text: str, form: str) -> tuple[str, bytes]:
    from pieceworks._unicode_forms import changes, span_pairs

    made = changes(text, form)
    return "".join(ch for ch, _ in made), span_pairs(made).tobytes()


@pytest.mark.parametrize("form", FORMS)
def test_form_tables_in_c_edit_every_char_as_python_does(form):
    # A long segment (a char with thousands of marks) is edited by the C tables: the same output
    # and the same alignment as the Python decompose / reorder / compose, on every code point.
    from pieceworks._unicode_forms import form_tables

    tables = form_tables(form)
    for low in range(0, 0x30000, 4000):
        text = "".join(chr(cp) for cp in range(low, low + 4000) if not 0xD800 <= cp <= 0xDFFF)
        assert tables.edit(text) == python_edit(text, form), f"U+{low:04X}.."


_marked = st.lists(st.tuples(st.sampled_from(list("ae\u1100\uac00\u0915\u0f40\u212b\u3131\u304b\u00c5")),
                             st.lists(st.sampled_from(list("\u0301\u0323\u0345\u0300\u031b\u0f71\u0f72\u0f80"
                                                           "\u093c\u3099\u1161\u11a8\u05b0\U0001d165")),
                                      max_size=60)), max_size=5)


@settings(max_examples=200, deadline=None)
@given(parts=_marked, form=st.sampled_from(FORMS))
def test_form_tables_in_c_edit_marked_text_as_python_does(parts, form):
    # Reordering by class (marks out of order, classes tied), composition blocked and not, Hangul.
    from pieceworks._unicode_forms import form_tables

    text = "".join(base + "".join(marks) for base, marks in parts)
    assert form_tables(form).edit(text) == python_edit(text, form)


@pytest.mark.parametrize("form", FORMS)
def test_aligned_in_c_is_the_whole_text_edit_on_every_char(form):
    # normalize_aligned runs the state machine only on the segments the kinds table finds (a
    # char and the marks after it, a char that changes alone) and copies the rest: the same
    # text and alignment as running it over the whole text, on every code point, each alone
    # between letters and all in a row.
    from pieceworks._unicode_forms import form_tables

    tables = form_tables(form)
    for low in range(0, 0x30000, 4000):
        chars = [chr(cp) for cp in range(low, low + 4000) if not 0xD800 <= cp <= 0xDFFF]
        for text in ("".join(chars), "a" + "a\n".join(chars) + "\n"):
            assert tables.aligned(text) == tables.edit(text), f"U+{low:04X}.."


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.one_of(_marked.map(lambda parts: "".join(b + "".join(m) for b, m in parts)),
                                st.sampled_from(["\n", "\r\n", "plain ", "\u212b", "\uf900", "\u0344", "x"])),
                      max_size=8),
       form=st.sampled_from(FORMS))
def test_aligned_in_c_edits_marked_text_as_python_does(parts, form):
    # Segments next to each other, marks after a line feed or at the start, chars that change alone.
    from pieceworks._unicode_forms import form_tables

    text = "".join(parts)
    assert form_tables(form).aligned(text) == python_edit(text, form)


@pytest.mark.parametrize("form", FORMS)
def test_every_mark_reorders_as_hugging_face(form):
    # Hugging Face's tables lack the classes of marks newer than them (U+0898...): starters there,
    # never reordered. Each char with a class in unicodedata, between "a" and marks of class 1 and
    # 230, on either side, through each form (the Python path and the C one of long segments).
    import unicodedata

    from pieceworks._unicode_forms import form_tables

    mine, theirs = getattr(ours, form)(), getattr(hf, form)()
    marked = [chr(cp) for cp in range(0x110000) if unicodedata.combining(chr(cp))]
    texts = [probe for ch in marked for probe in ("a" + ch + "\u0334", "a\u0301" + ch, "a" + ch + "\u0316\u0301")]
    assert [mine.normalize_str(t) for t in texts] == [theirs.normalize_str(t) for t in texts]
    long_text = "a" + "".join(texts) + "\u0301" * 40
    assert form_tables(form).edit(long_text)[0] == theirs.normalize_str(long_text)


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
def test_quick_check_is_sound_on_every_code_point(form):
    # 0 only for a text our form keeps, 1 only for one it changes (2: cannot tell), for each char
    # alone, after a starter it may compose with, and before marks. (Ours, as the fast path then
    # normalizes with it, not unicodedata's: a char newer than Hugging Face's tables, as U+32FF,
    # both leave alone.)
    from pieceworks._unicode_forms import quick_check

    quick, theirs = quick_check(form), getattr(ours, form)()
    alone = 0
    for cp in range(0x30000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        for text in (ch, "e" + ch, "\u1100" + ch, ch + "\u0301", ch + "\u0316\u0301"):
            verdict = quick(text)
            if verdict != 2:
                assert verdict == (0 if theirs.normalize_str(text) == text else 1), (f"U+{cp:04X}", text)
        alone += quick(ch) != 2
    assert alone > 0.99 * 0x2F800      # (a char alone is told without normalizing, but for a few marks)


_quick_parts = st.lists(st.sampled_from(list("ae\u1100\u1161\u11a8\uac00\u0915\u093c\u0301\u0316\u0323\u0345"
                                             "\u212b\u00c5\u0340\u0bc6\u0bbe\u3099\u304b\uff76\u32ffx ")), max_size=12)


@settings(max_examples=500, deadline=None)
@given(parts=_quick_parts, form=st.sampled_from(["NFC", "NFKC"]))
def test_quick_check_is_sound_on_mixed_text(parts, form):
    import unicodedata

    from pieceworks._unicode_forms import changes_text, quick_check

    text = "".join(parts)
    verdict = quick_check(form)(text)
    if verdict != 2:
        assert verdict == (0 if getattr(ours, form)().normalize_str(text) == text else 1), text
    else:
        assert changes_text(form, text) == (not unicodedata.is_normalized(form, text))


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
def test_quick_check_reads_long_plain_runs_in_blocks(form):
    # Runs of chars below the first mark are skipped 16 at a time: a mark, or a char the form
    # changes, at any place in (or right after) such a block must still be seen.
    from pieceworks._unicode_forms import quick_check

    # (Against Hugging Face's normalizer: ours asks this very check whether to normalize.)
    quick, theirs = quick_check(form), getattr(hf, form)()
    told = 0
    for plain in ("a", "\u0141"):        # (Latin-1 text, and text of 2-byte chars)
        for odd in ("\u0301", "\u0316\u0301", "\u212b", "\u0340", "\u0bc6\u0bbe", "\u3099", "\uff76"):
            for at in range(40):
                text = plain * at + odd + plain * (40 - at)
                verdict = quick(text)
                if verdict != 2:
                    assert verdict == (0 if theirs.normalize_str(text) == text else 1), (at, text)
                    told += 1
    assert told > 300       # (most are told without normalizing)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("segment", ["x" + "\u0301" * 100, "a" + "\u0316" * 50 + "\u0301" * 50, "e" + "\u0301" * 100,
                                     "a" + "\u0301\u0316" * 50, "\u212b" + "\u0316" * 80, "\uff21" + "\u0301" * 80])
def test_a_long_segment_is_left_exactly_when_the_form_keeps_it(form, segment):
    # A segment past the cached length is edited in C and compared, not checked by is_normalized
    # first (which normalizes all of it too): None exactly when the form leaves it as it is.
    import unicodedata

    from pieceworks._unicode_forms import _CACHED_SEGMENT_LENGTH, form_tables, segment_edit

    assert len(segment) > _CACHED_SEGMENT_LENGTH
    edit = segment_edit(segment, form)
    if unicodedata.is_normalized(form, segment):
        assert edit is None
    else:
        assert edit == form_tables(form).edit(segment)
        assert edit[0] == unicodedata.normalize(form, segment)


@pytest.mark.parametrize("form", FORMS)
def test_a_char_with_thousands_of_marks_normalizes_as_hugging_face(form):
    text = "ab" + "e" + "\u0301\u0323" * 2000 + " x\u0345\u0300" * 50 + "\u1100\u1161\u11a8" + "\u0300" * 40
    assert getattr(ours, form)().normalize_str(text) == getattr(hf, form)().normalize_str(text)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.builds("".join, _quick_parts), max_size=8),
       form=st.sampled_from(["NFC", "NFKC", "NFD", "NFKD"]))
def test_changed_among_is_changes_text_of_each(texts, form):
    # (One C call for a batch's quick checks: it must pick the very texts the per-text check does,
    # which the test above holds to Hugging Face's normalizer.)
    from pieceworks._unicode_forms import changed_among, changes_none_of, changes_text

    expected = [k for k, text in enumerate(texts) if changes_text(form, text)]
    assert changed_among(form, texts) == expected
    assert changes_none_of(form, texts) == (not expected)
