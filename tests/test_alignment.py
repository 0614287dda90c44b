"""The aligned string: its one edit path, slicing and splitting, against
Hugging Face's NormalizedString (which exposes split/slice/strip/replace)."""

from __future__ import annotations

import pytest
import regex
import tokenizers as hf
from hypothesis import given, settings, strategies as st

from pieceworks.alignment import NormalizedString, SplitDelimiterBehavior, find_matches, split_ranges
from pieceworks.errors import ConfigError

BEHAVIORS = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
text_st = st.text(alphabet=st.sampled_from(list("ab- \t\u00e9\u0301x中👍")), max_size=24)


def hf_split(text, pattern, behavior):
    pat = hf.Regex(pattern.pattern) if isinstance(pattern, regex.Pattern) else pattern
    return [(p.normalized, p.original) for p in hf.NormalizedString(text).split(pat, behavior)]


@settings(max_examples=200, deadline=None)
@given(text_st, st.sampled_from(BEHAVIORS), st.sampled_from(["-", "ab", " ", regex.compile(r"\s+"),
                                                              regex.compile(r"[a\u0301]")]))
def test_split_matches_huggingface(text, behavior, pattern):
    ours = [(p.normalized, p.original) for p in NormalizedString(text).split(pattern, behavior)]
    assert ours == hf_split(text, pattern, behavior)


def test_split_behaviors_on_the_documented_example():
    # tokenizers' own documentation of SplitDelimiterBehavior, with '-' on this text
    text = "the-final--countdown"
    expected = {
        "removed": ["the", "final", "countdown"],
        "isolated": ["the", "-", "final", "-", "-", "countdown"],
        "merged_with_previous": ["the-", "final-", "-", "countdown"],
        "merged_with_next": ["the", "-final", "-", "-countdown"],
        "contiguous": ["the", "-", "final", "--", "countdown"],
    }
    for behavior, pieces in expected.items():
        got = [p.normalized for p in NormalizedString(text).split("-", behavior) if p.normalized]
        assert got == pieces, behavior


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20), st.sampled_from(["strip", "lstrip", "rstrip", "lowercase", "uppercase"]))
def test_edits_keep_original_and_match_huggingface(text, op):
    ours = NormalizedString(text)
    {"strip": lambda: ours.strip_whitespace(True, True), "lstrip": lambda: ours.strip_whitespace(True, False),
     "rstrip": lambda: ours.strip_whitespace(False, True), "lowercase": lambda: ours.map_chars(_rust_lower),
     "uppercase": lambda: ours.map_chars(_rust_upper)}[op]()
    theirs = hf.NormalizedString(text)
    getattr(theirs, op)()
    assert ours.normalized == theirs.normalized
    assert ours.original == theirs.original == text
    _check_alignment_invariants(ours)


def _rust_lower(c: str) -> str:
    # Rust's char::to_lowercase: İ → i̇ like Python; final-sigma context is not applied per char.
    return c.lower()


def _rust_upper(c: str) -> str:
    return c.upper()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=16), st.text(min_size=1, max_size=3), st.text(max_size=3))
def test_replace_prepend_append_match_huggingface(text, pattern, content):
    ours, theirs = NormalizedString(text), hf.NormalizedString(text)
    ours.replace(pattern, content)
    theirs.replace(pattern, content)
    assert ours.normalized == theirs.normalized
    _check_alignment_invariants(ours)
    ours.prepend("▁")
    theirs.prepend("▁")
    ours.append("</w>")
    theirs.append("</w>")
    assert ours.normalized == theirs.normalized
    _check_alignment_invariants(ours)


def _check_alignment_invariants(ns: NormalizedString) -> None:
    spans = ns.alignments()
    assert len(spans) == len(ns.normalized)
    last_start = 0
    for s, e in spans:
        assert 0 <= s <= e <= len(ns.original)
        assert s >= last_start
        last_start = s


def test_transform_semantics_insert_replace_remove():
    ns = NormalizedString("abcd")
    # 'X' replaces 'a', 'Y' is inserted, 'c' replaces 'b' and removes 'c'... then 'd' kept
    ns.transform([("X", 0), ("Y", 1), ("c", -1), ("d", 0)])
    assert ns.normalized == "XYcd"
    assert ns.alignments() == [(0, 1), (0, 1), (1, 2), (3, 4)]
    # an insertion at the very start aligns to the empty span (0, 0), as in Hugging Face
    ns = NormalizedString("ab")
    ns.transform([("_", 1), ("a", 0), ("b", 0)])
    assert ns.alignments() == [(0, 0), (0, 1), (1, 2)]


def test_slice_keeps_offsets_into_the_whole_input():
    ns = NormalizedString("ﬁne day")
    ns.transform([("f", 0), ("i", 1)] + [(c, 0) for c in "ne day"])
    day = ns.slice(5, 8)
    assert day.normalized == "day"
    assert day.offsets_original() == (4, 7)
    assert day.offsets_in_input(0, 3) == (4, 7)
    fi = ns.slice(0, 2)
    assert fi.original == "ﬁ" and fi.offsets_in_input(0, 1) == (0, 1)


def test_identity_strings_do_not_materialize_alignments():
    ns = NormalizedString("plain text")
    parts = ns.split(" ", "removed")
    assert all(p.is_identity for p in parts)
    assert [p.offsets_original() for p in parts] == [(0, 5), (6, 10)]


def test_find_matches_covers_the_whole_text():
    for pattern in ["-", regex.compile("a+"), str.isdigit]:
        text = "a-1-aa2"
        spans = [span for span, _ in find_matches(pattern, text)]
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_unknown_behavior_names_the_choices():
    with pytest.raises(ConfigError, match="merged_with_next"):
        SplitDelimiterBehavior.parse("sideways")
    with pytest.raises(ConfigError):
        split_ranges([((0, 1), True)], "sideways")
    assert SplitDelimiterBehavior.parse("MergedWithPrevious") == "merged_with_previous"
    assert SplitDelimiterBehavior.to_json("merged_with_previous") == "MergedWithPrevious"
