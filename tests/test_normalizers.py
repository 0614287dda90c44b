"""Normalizers against Hugging Face ``tokenizers``: text, offsets, JSON, errors.

Offsets are compared without a model: a Hugging Face tokenizer with the same
normalizer, a pre-tokenizer that cuts the normalized text into single chars
and a one-entry WordLevel model yields one token per normalized char, whose
offsets are that char's span in the original text. Ours is
``NormalizedString.alignments()``.

Unicode versions. Our Unicode data is Python's ``unicodedata`` (14.0).
Hugging Face's is older for NFC/NFD/NFKC/NFKD and ``StripAccents`` (the
``unicode-normalization-alignments`` crate: Unicode 9.0) and for
``BertNormalizer``'s control/accent classes (the ``unicode_categories``
crate, about 8.0), and newer for ``Lowercase`` (Rust's std). The parity
tests leave out, per normalizer, exactly the characters on which the two
Unicode databases disagree: the :func:`_disagreeing_chars` probes ask
Hugging Face about each property char by char and compare with
``unicodedata`` (not with our code). They are characters added after
Unicode 9.0 (or after 14.0 for case mappings) and a handful whose general
category was revised (e.g. U+1CF2 VEDIC SIGN ARDHAVISARGA, Mc → Lo).
"""

from __future__ import annotations

import json
import pickle
import random
import unicodedata
from functools import lru_cache

import pytest
import tokenizers as hf
from hypothesis import given, settings, strategies as st
from tokenizers import normalizers as hfn

from pieceworks._regex import Regex
from pieceworks._unicode_forms import _SCAN_END, changes
from pieceworks._unicode_tables import NO_COMBINING_CLASS, code_points
from pieceworks.alignment import NormalizedString
from pieceworks.errors import InputTypeError, TokenizerFileError, UnknownComponentError
from pieceworks.normalizers import (
    NFC, NFD, NFKC, NFKD, BertNormalizer, ByteLevel, Lowercase, Nmt, Normalizer, Prepend, Replace,
    Sequence, Strip, StripAccents,
)

FORMS = {"NFC": NFC, "NFD": NFD, "NFKC": NFKC, "NFKD": NFKD}

# Every component, in the configurations worth telling apart.
NORMALIZERS = {
    "NFC": NFC(), "NFD": NFD(), "NFKC": NFKC(), "NFKD": NFKD(),
    "Lowercase": Lowercase(), "StripAccents": StripAccents(),
    "Strip": Strip(), "Strip-left": Strip(right=False), "Strip-right": Strip(left=False),
    "Replace-space": Replace(" ", "▁"), "Replace-multichar": Replace("ab", "XYZ"),
    "Replace-regex": Replace(Regex(r"\s+"), " "), "Replace-empty-matches": Replace(Regex("a*"), "_"),
    "Replace-empty-string": Replace("", "-"), "Replace-delete": Replace(Regex("[0-9]+"), ""),
    "Prepend": Prepend("▁"),
    "Bert": BertNormalizer(),
    "Bert-cased-strip": BertNormalizer(strip_accents=True, lowercase=False),
    "Bert-no-clean-no-cjk": BertNormalizer(clean_text=False, handle_chinese_chars=False),
    "Bert-lower-keep-accents": BertNormalizer(strip_accents=False),
    "Seq-nfkd-strip-lower": Sequence([NFKD(), StripAccents(), Lowercase()]),
    "Seq-llama": Sequence([Prepend("▁"), Replace(" ", "▁")]),
    "Seq-nfc-strip-nmt": Sequence([Nmt(), NFKC(), Strip()]),
    "ByteLevel": ByteLevel(), "Nmt": Nmt(),
}

# Characters that exercise every code path: marks of many classes, Hangul
# syllables and jamo, CJK, full-width forms, ligatures, compatibility digits,
# special casing, whitespace, controls, format chars, byte-level edge cases.
INTERESTING = (
    "aeiouAEIOU xyz09-\t\n\r\x00\x01\x0b\x1c\x7f\x85\x8f\xa0\u00ad"
    "\u0300\u0301\u0308\u0316\u0323\u0327\u0340\u0344\u0345\u034f\u05b0\u064b\u0e38\u0e48"
    "\u0f71\u0f72\u0f73\u0f80\u1dce\u20d0\u302a\u3099\u309a\u0b47\u0b3e\u0b57\u0dd9\u0dcf"
    "ÅÉéñçǺḕȧṩẛ\u212b\u2126\u1e9b\u1fee\u0385Σσςİıßẞǅΐΰﬀﬁﬃﬅﬆ"
    "가각힣\u1100\u1161\u11a8\u1112\u1175\u11c2\u3131ﾡ"
    "中文字\u3400\U00020000\uf900\U0002f800かカｶ"
    "ＡＢＣ１２！　①②⑩²³¹⁴₅½㍿㎏℡™ℌ\u2000\u200b\u200d\u2028\u202f\u3000\ufeff\ufffd\ue000"
    "😀👍🏽\U0001f1fa\U0001f1f8ﷺ"
)

text_st = st.one_of(
    st.text(max_size=24),
    st.text(alphabet=st.sampled_from(INTERESTING), max_size=24),
    st.text(alphabet=st.characters(categories=["Mn", "Mc", "Me", "Lo", "Lu", "Ll", "Nd", "No", "Zs", "Cc", "Cf"]),
            max_size=16),
)


# -- Hugging Face twins and offsets -------------------------------------------------

def _tokenizer_json(normalizer_json) -> str:
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": normalizer_json,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": r"[\s\S]"}, "behavior": "Isolated",
                          "invert": False},
        "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
    })


@lru_cache(maxsize=None)
def _hf_twin(name: str) -> hf.Tokenizer:
    """A Hugging Face tokenizer whose normalizer is built from our JSON (so JSON is exercised too)."""
    return hf.Tokenizer.from_str(_tokenizer_json(NORMALIZERS[name].to_json()))


def hf_result(name: str, text: str) -> tuple[str, list[tuple[int, int]]]:
    """(normalized text, per normalized char its span in ``text``) according to Hugging Face."""
    tok = _hf_twin(name)
    encoding = tok.encode(text, add_special_tokens=False)
    return tok.normalizer.normalize_str(text), [tuple(o) for o in encoding.offsets]


def our_result(normalizer: Normalizer, text: str) -> tuple[str, list[tuple[int, int]]]:
    ns = NormalizedString(text)
    normalizer.normalize(ns)
    return ns.normalized, [tuple(a) for a in ns.alignments()]


# -- where the Unicode databases disagree -------------------------------------------

def _chunks(code_points, size):
    chars = [chr(c) for c in code_points if not 0xD800 <= c < 0xE000]
    for i in range(0, len(chars), size):
        yield chars[i:i + size]


def _probe(hf_normalizer, expected_for_char, code_points=range(0x110000), size=1024) -> set[str]:
    """Chars where Hugging Face's per-char output differs from ``expected_for_char`` (unicodedata).

    Runs whole chunks first (one call per 1024 chars) and char by char only
    inside chunks that differ. Only valid for per-char operations.
    """
    out: set[str] = set()
    for chunk in _chunks(code_points, size):
        if hf_normalizer.normalize_str("".join(chunk)) == "".join(map(expected_for_char, chunk)):
            continue
        out.update(c for c in chunk if hf_normalizer.normalize_str(c) != expected_for_char(c))
    return out


@lru_cache(maxsize=None)
def _disagreeing_chars(kind: str) -> frozenset[str]:
    """The chars whose ``kind`` of Unicode data differs between Hugging Face and unicodedata."""
    if kind == "forms":
        return frozenset(_forms_disagreements())
    if kind == "marks":        # StripAccents: general category M (Mn, Mc, Me)
        return frozenset(_probe(hfn.StripAccents(), lambda c: "" if unicodedata.category(c)[0] == "M" else c))
    if kind == "lowercase":    # per-char full lowercase mapping
        return frozenset(_probe(hfn.Lowercase(), str.lower))
    if kind == "bert_control":  # Cc, Cf, Co are dropped; Unicode whitespace becomes " "
        clean = hfn.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
        return frozenset(_probe(clean, _bert_clean_expected))
    if kind == "bert_mn":      # Mn is dropped after NFD; probe chars NFD leaves alone
        strip = hfn.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
        expected = lambda c: "" if unicodedata.category(c) == "Mn" else c  # noqa: E731
        stable = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000
                  and unicodedata.is_normalized("NFD", chr(cp))]
        starters = [cp for cp in stable if not unicodedata.combining(chr(cp))]
        marks = [cp for cp in stable if unicodedata.combining(chr(cp))]
        # Marks one at a time: in a chunk, NFD would reorder them.
        return frozenset(_probe(strip, expected, starters) | _probe(strip, expected, marks, size=1))
    raise KeyError(kind)


def _bert_clean_expected(c: str) -> str:
    # Controls go first (so \x0b, \x0c, \x85 are dropped, not spaced); tab, LF, CR are whitespace.
    if c not in "\t\n\r" and (c in "\x00\ufffd" or unicodedata.category(c) in ("Cc", "Cf", "Co")):
        return ""
    if c in "\t\n\r" or (c.isspace() and c not in "\x1c\x1d\x1e\x1f"):
        return " "
    return c


def _forms_disagreements() -> set[str]:
    """Chars whose decomposition, combining class or composition differs from Unicode 9.0 tables."""
    forms = {f: getattr(hfn, f)() for f in FORMS}
    bad: set[str] = set()
    for cp in range(_SCAN_END):
        ch = chr(cp)
        if not (unicodedata.decomposition(ch) or unicodedata.combining(ch)):
            continue
        # Decomposition mappings.
        if any(n.normalize_str(ch) != unicodedata.normalize(f, ch) for f, n in forms.items()):
            bad.add(ch)
        # Combining class: placed before a mark of a lower (or, for 240, higher) class it must
        # be reordered after; a char Hugging Face sees as a starter stays put.
        klass = unicodedata.combining(ch)
        if klass:
            probe = "a\u0345" + ch if klass < 240 else "a" + ch + "\u0334"
            if forms["NFD"].normalize_str(probe) != unicodedata.normalize("NFD", probe):
                bad.add(ch)
        # Primary composites.
        mapping = unicodedata.decomposition(ch)
        if mapping and mapping[0] != "<" and len(mapping.split()) == 2:
            pair = "".join(chr(int(x, 16)) for x in mapping.split())
            if forms["NFC"].normalize_str(pair) != unicodedata.normalize("NFC", pair):
                bad.update(pair + ch)
    # A char that decomposes into a disagreeing char disagrees too, in context.
    for cp in range(_SCAN_END):
        ch = chr(cp)
        if unicodedata.decomposition(ch) and set(unicodedata.normalize("NFKD", ch)) & bad:
            bad.add(ch)
    return bad


def excluded_chars(normalizer: Normalizer) -> frozenset[str]:
    """The chars left out of the parity tests for ``normalizer`` (see the module docstring)."""
    kinds: set[str] = set()
    _collect_kinds(normalizer, kinds)
    return frozenset().union(*(_disagreeing_chars(k) for k in kinds))


def _collect_kinds(normalizer: Normalizer, kinds: set[str]) -> None:
    if isinstance(normalizer, Sequence):
        for n in normalizer:
            _collect_kinds(n, kinds)
    elif isinstance(normalizer, (NFC, NFD, NFKC, NFKD)):
        kinds.add("forms")
    elif isinstance(normalizer, Lowercase):
        kinds.add("lowercase")
    elif isinstance(normalizer, StripAccents):
        kinds.add("marks")
    elif isinstance(normalizer, BertNormalizer):
        if normalizer.clean_text:
            kinds.add("bert_control")
        if normalizer.lowercase if normalizer.strip_accents is None else normalizer.strip_accents:
            kinds.update(("forms", "bert_mn"))
        if normalizer.lowercase:
            kinds.add("lowercase")


def without(chars: frozenset[str], text: str) -> str:
    return "".join(c for c in text if c not in chars) if chars else text


def test_disagreements_are_few_and_explained():
    # The exclusions must stay a small, explained set, not a blanket that hides bugs.
    forms = _disagreeing_chars("forms")
    assert 100 < len(forms) < 400
    assert "\u32ff" in forms            # SQUARE ERA NAME REIWA: Unicode 12.1, NFKC → 令和
    assert "\u1df6" in forms            # COMBINING KAVYKA ABOVE RIGHT: Unicode 10.0, ccc 232
    assert {"\U00011935", "\U00011930", "\U00011938"} <= forms  # DIVES AKURU composition (13.0)
    assert not forms & set("aeé\u0301\u0323가ﬁ①ＡＢ")
    assert len(_disagreeing_chars("marks")) < 500
    assert len(_disagreeing_chars("bert_mn")) < 500
    # Only format chars of Unicode 9.0-14.0 (e.g. U+0890 ARABIC POUND MARK ABOVE) differ for BERT cleaning.
    assert set(_disagreeing_chars("bert_control")) <= {chr(c) for c in range(0x0800, 0x14000)}
    assert len(_disagreeing_chars("bert_control")) < 20
    # Lowercase: only chars unassigned in Python's Unicode 14 (Rust knows newer letters).
    assert all(unicodedata.category(c) == "Cn" for c in _disagreeing_chars("lowercase"))


def test_rust_and_python_agree_on_whitespace():
    # Strip and BertNormalizer rely on alignment.is_whitespace being Rust's char::is_whitespace.
    strip = hfn.Strip()
    candidates = [chr(c) for c in range(0x3100)] + ["\ufeff", "\u180e"]
    for ch in candidates:
        assert (strip.normalize_str(ch) == "") == (ch.isspace() and ch not in "\x1c\x1d\x1e\x1f"), hex(ord(ch))


# -- parity: normalized text and offsets ---------------------------------------------

@pytest.mark.parametrize("name", list(NORMALIZERS))
@settings(max_examples=100, deadline=None)
@given(text=text_st)
def test_text_and_offsets_match_huggingface(name, text):
    normalizer = NORMALIZERS[name]
    text = without(excluded_chars(normalizer), text)
    assert our_result(normalizer, text) == hf_result(name, text)
    assert normalizer.normalize_str(text) == hf_result(name, text)[0]


@pytest.mark.parametrize("name", ["NFC", "NFD", "NFKC", "NFKD", "Bert", "Seq-nfkd-strip-lower"])
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(
    [chr(c) for c in range(0x300, 0x370)] + list("aeouAEOUs \u1100\u1161\u11a8가각\u0b47\u0b3e\u0f71\u0f72"
                                                 "\u0f73\u0e38\u0e48\u05b0\u0345\u0316\u0323ȧḕǺÅẛ")),
    max_size=12))
def test_mark_heavy_text_matches_huggingface(name, text):
    # Reordering and blocked compositions: where the crate's change values are subtle.
    normalizer = NORMALIZERS[name]
    text = without(excluded_chars(normalizer), text)
    assert our_result(normalizer, text) == hf_result(name, text)


@pytest.mark.parametrize("name", ["Replace-space", "Replace-multichar", "Replace-empty-matches",
                                  "Replace-empty-string", "Replace-delete", "Seq-llama"])
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab a1 23xY\u00e9")), max_size=16))
def test_replace_with_adjacent_and_empty_matches_matches_huggingface(name, text):
    # Adjacent multi-char matches take the match-by-match path; the rest one stream.
    assert our_result(NORMALIZERS[name], text) == hf_result(name, text)


@pytest.mark.shared_data
def test_shared_inputs_match_huggingface(shared_data):
    lines = (shared_data / "testvectors" / "generated" / "inputs.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in lines]
    sample = random.Random(20240601).sample(texts, 160)
    for name, normalizer in NORMALIZERS.items():
        excluded = excluded_chars(normalizer)
        for text in sample:
            text = without(excluded, text)
            assert our_result(normalizer, text) == hf_result(name, text), (name, text[:80])


def _normalization_test_rows(shared_data):
    path = shared_data / "unicode-15.0" / "NormalizationTest.txt"
    part = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("@"):
            part = line.split()[0]
        elif line and not line.startswith("#"):
            columns = ["".join(chr(int(x, 16)) for x in col.split()) for col in line.split(";")[:5]]
            yield part, columns


@pytest.mark.shared_data
def test_unicode_conformance_file(shared_data):
    # NormalizationTest.txt's invariants (c2 = NFC(c1), c3 = NFD(c1), c4 = NFKC(c1), c5 = NFKD(c1)),
    # on its multi-char parts. Rows with chars new in Unicode 15.0 are skipped: Python 3.11 knows 14.0.
    # So are rows with a mark Hugging Face's tables give no class (NO_COMBINING_CLASS): the forms
    # follow Hugging Face there, as test_hf_char_tables checks, not the standard.
    no_class = code_points(NO_COMBINING_CLASS)
    rows = [(p, cols) for p, cols in _normalization_test_rows(shared_data)
            if p != "@Part1" and all(unicodedata.category(c) != "Cn" and ord(c) not in no_class for c in cols[0])]
    assert len(rows) > 1300         # (of 2025 rows past Part 1 that Python knows: the file was read)
    forms_excluded = _disagreeing_chars("forms")
    for _, (c1, c2, c3, c4, c5) in rows:
        expected = {"NFC": c2, "NFD": c3, "NFKC": c4, "NFKD": c5}
        for form, cls in FORMS.items():
            assert cls().normalize_str(c1) == expected[form], (form, c1)
        if not set(c1) & forms_excluded and len(c1) > 1:
            for form in ("NFC", "NFKD"):
                assert our_result(NORMALIZERS[form], c1) == hf_result(form, c1), (form, c1)


# -- properties every normalizer's offsets have --------------------------------------

# Normalizers whose output depends on where a piece sits in the whole text,
# so normalizing a piece alone cannot reproduce its part of the output:
# Strip (only the ends of the whole text lose whitespace), Prepend (only its
# start gets the prefix), a Replace whose pattern matches the empty string
# (a cut point is matched from both sides).
POSITION_DEPENDENT = {"Strip", "Strip-left", "Strip-right", "Prepend", "Seq-llama", "Seq-nfc-strip-nmt",
                      "Replace-empty-matches", "Replace-empty-string"}


@pytest.mark.parametrize("name", list(NORMALIZERS))
@settings(max_examples=80, deadline=None)
@given(text=text_st)
def test_offsets_are_in_bounds_and_monotone(name, text):
    ns = NormalizedString(text)
    NORMALIZERS[name].normalize(ns)
    spans = ns.alignments()
    assert len(spans) == len(ns.normalized)
    assert ns.original == text
    for (s, e), (s2, e2) in zip(spans, spans[1:]):
        assert s <= s2 and e <= e2
    for s, e in spans:
        # Every char comes from at least one original char, except an
        # insertion before everything (Hugging Face aligns it to (0, 0)).
        assert 0 <= s < e <= len(text) or (s, e) == (0, 0)


@pytest.mark.parametrize("name", sorted(set(NORMALIZERS) - POSITION_DEPENDENT))
@settings(max_examples=100, deadline=None)
@given(text=text_st)
def test_each_aligned_group_normalizes_to_its_own_output(name, text):
    """Cut the original where the alignment allows; each piece must normalize to its part.

    A cut at original position p is allowed when (1) every normalized char
    lies wholly before or wholly after p, in order; (2) the chars on both
    sides of p are covered by some normalized char (a char that was dropped
    or absorbed - an accent composed into its base by NFC, the start of a
    Replace match - cannot be assigned to a side by the offsets alone); and
    (3) for the Unicode forms, p is a normalization boundary: Hugging Face
    aligns a mark that canonical reordering moved with the char it landed
    next to, not the one it came from, so offsets cannot cut inside a run
    of combining marks.
    """
    normalizer = NORMALIZERS[name]
    ns = NormalizedString(text)
    normalizer.normalize(ns)
    pieces = _aligned_pieces(ns, needs_boundary=_uses_unicode_forms(normalizer))
    for (o_start, o_end), (n_start, n_end) in pieces:
        assert normalizer.normalize_str(text[o_start:o_end]) == ns.normalized[n_start:n_end]
    assert "".join(ns.normalized[a:b] for _, (a, b) in pieces) == ns.normalized


def _uses_unicode_forms(normalizer: Normalizer) -> bool:
    if isinstance(normalizer, Sequence):
        return any(_uses_unicode_forms(n) for n in normalizer)
    return isinstance(normalizer, (NFC, NFD, NFKC, NFKD, BertNormalizer))


def _aligned_pieces(ns: NormalizedString, needs_boundary: bool):
    """Consecutive (original span, normalized span) pairs at every allowed cut."""
    text, spans = ns.original, ns.alignments()
    covered = [False] * len(text)
    for s, e in spans:
        covered[s:e] = [True] * (e - s)
    cuts = [(0, 0)]
    q = 0                      # normalized chars wholly before p (a prefix: ends never decrease)
    for p in range(1, len(text)):
        while q < len(spans) and spans[q][1] <= p:
            q += 1
        splits_cleanly = q == len(spans) or spans[q][0] >= p
        if splits_cleanly and covered[p - 1] and covered[p] and (not needs_boundary or _is_boundary(text[p])):
            cuts.append((p, q))
    cuts.append((len(text), len(spans)))
    return [((a, b), (qa, qb)) for (a, qa), (b, qb) in zip(cuts, cuts[1:])]


def _is_boundary(ch: str) -> bool:
    """True when ``ch`` decomposes (canonically or not) to a starter that composes with nothing before it."""
    return all(unicodedata.combining(d[0]) == 0 and d[0] not in _backward_combining()
               for d in (unicodedata.normalize("NFD", ch), unicodedata.normalize("NFKD", ch)) if d)


@lru_cache(maxsize=None)
def _backward_combining() -> frozenset[str]:
    """Second chars of primary composites (from unicodedata), and Hangul V and T jamo."""
    out = {chr(c) for c in [*range(0x1161, 0x1176), *range(0x11A8, 0x11C3)]}
    for cp in range(_SCAN_END):
        mapping = unicodedata.decomposition(chr(cp))
        if mapping and mapping[0] != "<" and len(mapping.split()) == 2:
            pair = "".join(chr(int(x, 16)) for x in mapping.split())
            if unicodedata.normalize("NFC", pair) == chr(cp):
                out.add(pair[1])
    return frozenset(out)


# -- the segment shortcut of the Unicode forms ----------------------------------------

@pytest.mark.parametrize("form", list(FORMS))
@settings(max_examples=200, deadline=None)
@given(text=text_st)
def test_normalized_text_yields_only_unchanged_chars(form, text):
    # normalize_aligned skips segments that are already normalized; that is
    # only faithful if the crate's stream on normalized text is all zeros.
    normalized = unicodedata.normalize(form, text)
    assert changes(normalized, form) == [(c, 0) for c in normalized]


@pytest.mark.parametrize("form", list(FORMS))
def test_normalized_text_keeps_the_identity_alignment(form):
    ns = NormalizedString(unicodedata.normalize(form, "plain ascii, é, 가, ﬁ and ①, already " + form))
    FORMS[form]().normalize(ns)
    assert ns.is_identity


def test_tables_need_not_look_past_their_end():
    # _unicode_forms scans code points below _SCAN_END only; nothing above has
    # a decomposition or a combining class.
    for cp in range(_SCAN_END, 0x110000):
        ch = chr(cp)
        assert not unicodedata.combining(ch) and not unicodedata.decomposition(ch), hex(cp)


@pytest.mark.parametrize("form", list(FORMS))
def test_long_runs_of_marks_stay_linear(form):
    # One base and 60 000 marks out of canonical order: one segment, one sort.
    # Canonical order puts U+0316 (class 220) before U+0301 (230); a + U+0301 composes
    # to U+00E1 and blocks the other acutes (same class). No compatibility mappings here.
    # (unicodedata itself reorders by insertion sort: too slow to be the oracle here.)
    text = "a" + "\u0301\u0316" * 30_000 + "b"
    decomposed = "a" + "\u0316" * 30_000 + "\u0301" * 30_000 + "b"
    composed = "\u00e1" + "\u0316" * 30_000 + "\u0301" * 29_999 + "b"
    expected = composed if form in ("NFC", "NFKC") else decomposed
    ns = NormalizedString(text)
    FORMS[form]().normalize(ns)
    assert ns.normalized == expected
    assert ns.alignments()[-1] == (len(text) - 1, len(text))


# -- pinned cases, from the Unicode Character Database -------------------------------

def test_nfkc_ligature_fi():
    # U+FB01 LATIN SMALL LIGATURE FI has the compatibility mapping <compat> 0066 0069.
    # The first char replaces the ligature, the second is new: both align with it.
    assert our_result(NFKC(), "ﬁ") == ("fi", [(0, 1), (0, 1)]) == hf_result("NFKC", "ﬁ")
    assert NFC().normalize_str("ﬁ") == "ﬁ"      # no canonical mapping


def test_nfkc_full_width_letters_and_digits():
    # U+FF21.. FULLWIDTH LATIN CAPITAL LETTER A.. and U+FF11 DIGIT ONE map <wide> to ASCII, one for one.
    text = "ＡＢＣ１２"
    expected = ("ABC12", [(i, i + 1) for i in range(5)])
    assert our_result(NFKC(), text) == expected == hf_result("NFKC", text)


def test_nfkc_compatibility_digits():
    # U+2460 CIRCLED DIGIT ONE is <circle> 0031; U+00B2 SUPERSCRIPT TWO is <super> 0032.
    assert our_result(NFKC(), "①²") == ("12", [(0, 1), (1, 2)]) == hf_result("NFKC", "①²")


def test_nfkc_composes_combining_accent():
    # e + U+0301 COMBINING ACUTE ACCENT is canonically equivalent to U+00E9 (a primary
    # composite). The composite replaces the e and the absorbed accent is dropped
    # (change -1), so é aligns with the e alone, as in Hugging Face.
    for form in ("NFC", "NFKC"):
        assert our_result(FORMS[form](), "e\u0301") == ("\u00e9", [(0, 1)]) == hf_result(form, "e\u0301")
    assert our_result(NFKC(), "e\u0301x") == ("\u00e9x", [(0, 1), (2, 3)])


def test_hangul_jamo_compose_and_syllables_decompose():
    # Hangul composition is arithmetic (Unicode 15, section 3.12): L=U+1100 (LIndex 0) and
    # V=U+1161 (VIndex 0) give SBase + (0*21 + 0)*28 = U+AC00 가; adding T=U+11A8 (TIndex 1)
    # gives U+AC01 각.
    assert our_result(NFKC(), "\u1100\u1161") == ("\uac00", [(0, 1)]) == hf_result("NFKC", "\u1100\u1161")
    assert our_result(NFC(), "\u1100\u1161\u11a8") == ("\uac01", [(0, 1)])
    # NFD splits them back; every jamo aligns with its syllable.
    assert our_result(NFD(), "\uac00") == ("\u1100\u1161", [(0, 1), (0, 1)]) == hf_result("NFD", "\uac00")
    assert our_result(NFD(), "x\uac01") == ("x\u1100\u1161\u11a8", [(0, 1), (1, 2), (1, 2), (1, 2)])


def test_reordered_mark_aligns_where_it_lands():
    # U+0227 ȧ = a + U+0307 (class 230); U+0323 (class 220) after it must move before
    # U+0307. The crate's changes travel with the chars (a:0, U+0323:0, U+0307:1),
    # so U+0307 aligns with U+0323's position. Surprising, but Hugging Face's.
    assert our_result(NFD(), "\u0227\u0323") == ("a\u0323\u0307", [(0, 1), (1, 2), (1, 2)])
    assert hf_result("NFD", "\u0227\u0323") == our_result(NFD(), "\u0227\u0323")


def test_casing_special_cases():
    # U+0130 İ lowercases to i + U+0307 (SpecialCasing.txt); Σ is always σ, char by char.
    assert our_result(Lowercase(), "İΣ") == ("i\u0307σ", [(0, 1), (0, 1), (1, 2)]) == hf_result("Lowercase", "İΣ")
    assert Lowercase().normalize_str("ΑΣ ẞß") == "ασ ßß"


# -- JSON --------------------------------------------------------------------------

JSON_TWINS = [
    (NFC(), hfn.NFC()), (NFD(), hfn.NFD()), (NFKC(), hfn.NFKC()), (NFKD(), hfn.NFKD()),
    (Lowercase(), hfn.Lowercase()), (StripAccents(), hfn.StripAccents()),
    (Strip(), hfn.Strip()), (Strip(left=False), hfn.Strip(left=False)), (Strip(True, False), hfn.Strip(True, False)),
    (Replace("''", '"'), hfn.Replace("''", '"')), (Replace(Regex(r"\s+"), " "), hfn.Replace(hf.Regex(r"\s+"), " ")),
    (Prepend("▁"), hfn.Prepend("▁")),
    (BertNormalizer(), hfn.BertNormalizer()),
    (BertNormalizer(False, False, True, False), hfn.BertNormalizer(False, False, True, False)),
    (BertNormalizer(strip_accents=False), hfn.BertNormalizer(strip_accents=False)),
    (Sequence([NFD(), StripAccents(), Lowercase()]), hfn.Sequence([hfn.NFD(), hfn.StripAccents(), hfn.Lowercase()])),
    (Sequence([Sequence([Nmt(), NFC()]), Replace(Regex("a|b"), "")]),       # flattened, as HF does
     hfn.Sequence([hfn.Sequence([hfn.Nmt(), hfn.NFC()]), hfn.Replace(hf.Regex("a|b"), "")])),
    (Sequence([]), hfn.Sequence([])),
    (ByteLevel(), hfn.ByteLevel()), (Nmt(), hfn.Nmt()),
]


@pytest.mark.parametrize("ours,theirs", JSON_TWINS, ids=lambda x: repr(x)[:40])
def test_json_equals_huggingface(ours, theirs):
    expected = json.loads(theirs.__getstate__())
    assert ours.to_json() == expected
    assert json.dumps(ours.to_json()) == json.dumps(expected)        # key order too
    assert Normalizer.from_json(expected) == ours
    assert type(ours).from_json(expected) == ours


def test_nested_sequence_from_json_keeps_its_nesting():
    data = {"type": "Sequence", "normalizers": [{"type": "Sequence", "normalizers": [{"type": "Nmt"}]},
                                                {"type": "NFC"}]}
    written = json.loads(hf.Tokenizer.from_str(_tokenizer_json(data)).to_str())["normalizer"]
    assert Normalizer.from_json(data).to_json() == written == data


def test_json_inside_a_tokenizer_file():
    ours = Sequence([Prepend("▁"), Replace(" ", "▁")])
    written = json.loads(hf.Tokenizer.from_str(_tokenizer_json(ours.to_json())).to_str())
    assert written["normalizer"] == ours.to_json()
    assert Normalizer.from_json(written["normalizer"]) == ours


def test_json_ignores_unknown_fields_like_huggingface():
    assert Normalizer.from_json({"type": "NFC", "extra": 1}) == NFC()
    assert Normalizer.from_json({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                                 "lowercase": True}) == BertNormalizer()


@pytest.mark.parametrize("data,field", [
    ({"type": "Strip", "strip_left": True}, "normalizer.strip_right"),
    ({"type": "Strip", "strip_left": 1, "strip_right": True}, "normalizer.strip_left"),
    ({"type": "Prepend"}, "normalizer.prepend"),
    ({"type": "Prepend", "prepend": 3}, "normalizer.prepend"),
    ({"type": "Replace", "pattern": {"String": "a"}}, "normalizer.content"),
    ({"type": "Replace", "pattern": "a", "content": "b"}, "normalizer.pattern"),
    ({"type": "Replace", "pattern": {}, "content": "b"}, "normalizer.pattern"),
    ({"type": "Replace", "pattern": {"String": "a", "Regex": "b"}, "content": "b"}, "normalizer.pattern"),
    ({"type": "Replace", "pattern": {"Regex": 5}, "content": "b"}, "normalizer.pattern.Regex"),
    ({"type": "Replace", "pattern": {"Regex": "("}, "content": "b"}, "normalizer.pattern.Regex"),
    ({"type": "BertNormalizer", "clean_text": True}, "normalizer.handle_chinese_chars"),
    ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "lowercase": True,
      "strip_accents": "yes"}, "normalizer.strip_accents"),
    ({"type": "Sequence"}, "normalizer.normalizers"),
    ({"type": "Sequence", "normalizers": {"type": "NFC"}}, "normalizer.normalizers"),
    ({"type": "Sequence", "normalizers": [{"type": "NFC"}, "NFD"]}, "normalizer.normalizers[1]"),
    ({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip", "strip_left": True}]},
     "normalizer.normalizers[1].strip_right"),
    ({"clean_text": True}, "normalizer.type"),
    ({"type": 7}, "normalizer.type"),
])
def test_bad_json_names_the_field(data, field):
    with pytest.raises(TokenizerFileError) as info:
        Normalizer.from_json(data)
    assert info.value.field == field
    assert f"field '{field}'" in str(info.value) and "Fix:" in str(info.value)
    # Hugging Face refuses the same objects.
    with pytest.raises(Exception):
        hf.Tokenizer.from_str(_tokenizer_json(data))


@pytest.mark.parametrize("data,field", [
    ({"type": "Lowercaser"}, "normalizer.type"),
    ({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Precompiledd"}]},
     "normalizer.normalizers[1].type"),
])
def test_unknown_type_lists_the_known_ones(data, field):
    with pytest.raises(UnknownComponentError) as info:
        Normalizer.from_json(data)
    assert info.value.field == field
    assert "BertNormalizer" in str(info.value) and "NFKC" in str(info.value)
    with pytest.raises(Exception):
        hf.Tokenizer.from_str(_tokenizer_json(data))


def test_a_component_class_only_loads_its_own_type():
    with pytest.raises(UnknownComponentError):
        NFC.from_json({"type": "NFD"})


# -- the Python API ------------------------------------------------------------------

def test_attributes_and_defaults_match_huggingface():
    for ours, theirs in [(Strip(), hfn.Strip()), (Strip(False, True), hfn.Strip(False, True))]:
        assert (ours.left, ours.right) == (theirs.left, theirs.right)
    ours, theirs = BertNormalizer(), hfn.BertNormalizer()
    for name in ("clean_text", "handle_chinese_chars", "strip_accents", "lowercase"):
        assert getattr(ours, name) == getattr(theirs, name)
    assert Prepend("▁").prepend == hfn.Prepend("▁").prepend
    assert Replace("a", "b").content == hfn.Replace("a", "b").content
    seq = Sequence([NFC(), Lowercase()])
    assert len(seq) == 2 and seq[1] == Lowercase() and list(seq) == [NFC(), Lowercase()]


@pytest.mark.parametrize("build", [
    lambda: Strip(left="yes"), lambda: BertNormalizer(lowercase=1), lambda: BertNormalizer(strip_accents="no"),
    lambda: Prepend(None), lambda: Replace(3, "x"), lambda: Replace("a", None), lambda: Sequence([NFC(), "NFD"]),
    lambda: Sequence("NFC"),
])
def test_wrong_argument_types_raise_with_a_fix(build):
    with pytest.raises(InputTypeError, match="Fix:"):
        build()


@pytest.mark.parametrize("normalizer", [n for n, _ in JSON_TWINS], ids=lambda x: repr(x)[:40])
def test_pickle_round_trip(normalizer):
    clone = pickle.loads(pickle.dumps(normalizer))
    assert clone == normalizer
    text = "Héllo  WORLD ﬁ 中 \u1100\u1161"
    assert clone.normalize_str(text) == normalizer.normalize_str(text)


def test_normalize_edits_the_given_string_in_place():
    ns = NormalizedString("  Ça Va  ")
    Sequence([Strip(), NFD(), StripAccents(), Lowercase()]).normalize(ns)
    assert ns.normalized == "ca va"
    assert ns.original == "  Ça Va  "
    assert ns.original_span(0, 5) == (2, 7)


def test_regex_source_is_kept_for_json():
    pattern = r"(?i)\bfoo\b"
    assert Replace(Regex(pattern), "").to_json()["pattern"] == {"Regex": pattern}
    assert Replace(Regex(pattern), "bar").normalize_str("Foo food FOO") == "bar food bar"
    # A literal pattern is matched literally (Hugging Face escapes it into a regex).
    assert Replace("a.b", "!").normalize_str("a.b axb") == "! axb"


# BertNormalizer.normalize_str takes a translate/lower shortcut on ASCII text: it
# must equal the aligned path and Hugging Face on every option set.
ASCII_PAIRS = [chr(a) + chr(b) for a in range(128) for b in range(0, 128, 3)]


@pytest.mark.parametrize("clean_text", [True, False])
@pytest.mark.parametrize("strip_accents", [None, True, False])
@pytest.mark.parametrize("lowercase", [True, False])
def test_bert_normalize_str_on_ascii_equals_the_aligned_path_and_huggingface(clean_text, strip_accents, lowercase):
    ours = BertNormalizer(clean_text=clean_text, strip_accents=strip_accents, lowercase=lowercase)
    theirs = hfn.BertNormalizer(clean_text=clean_text, strip_accents=strip_accents, lowercase=lowercase)
    rng = random.Random(7)
    texts = ASCII_PAIRS + ["".join(chr(rng.randrange(128)) for _ in range(rng.randrange(40))) for _ in range(300)]
    for text in texts:
        aligned = NormalizedString(text)
        ours.normalize(aligned)
        assert ours.normalize_str(text) == aligned.normalized == theirs.normalize_str(text), repr(text)


# NFC/NFD/NFKC/NFKD, Lowercase and Sequence give normalize_str its own plain-string way (no
# alignment: adding many tokens and counting a training corpus normalize text by text). It must
# give the aligned way's text, Σ (lowercased char by char, as Rust does) and compatibility forms too.
PLAIN_WAY = {name: NORMALIZERS[name] for name in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Seq-nfkd-strip-lower",
                                                  "Seq-llama", "Seq-nfc-strip-nmt")}
PLAIN_WAY["Seq-nfkc-lower"] = Sequence([NFKC(), Lowercase()])


@pytest.mark.parametrize("name", list(PLAIN_WAY))
@settings(max_examples=150, deadline=None)
@given(text=text_st | st.text(st.sampled_from(list("ΑΣσς ΌΣ.İIıẞßǅﬁ\u0301\u0345e\n")), max_size=30))
def test_normalize_str_is_the_aligned_text(name, text):
    normalizer = PLAIN_WAY[name]
    aligned = NormalizedString(text)
    normalizer.normalize(aligned)
    assert normalizer.normalize_str(text) == aligned.normalized


def test_a_sequence_with_a_normalizer_of_the_users_shares_one_normalized_string():
    # Its own normalize_str chains the members' plain strings; a member of the user's may read the
    # original text, which is the Sequence's input only when they share one NormalizedString.
    class Original(Normalizer):
        def normalize(self, normalized):
            normalized.append("|" + normalized.original)

    sequence = Sequence([Lowercase(), Original()])
    assert sequence.normalize_str("AB") == "ab|AB"
    custom = Sequence([Lowercase(), Normalizer.custom(Original())])
    assert custom.normalize_str("AB") == "ab|AB"
    nested = Sequence([Lowercase(), Sequence([NFC(), Normalizer.custom(Original())])])
    assert nested.normalize_str("AB") == "ab|AB"


@settings(max_examples=150, deadline=None)
@given(pattern=st.text(st.sampled_from("ab▁ "), min_size=1, max_size=3), content=st.text(st.sampled_from("xb "), max_size=2),
       text=st.text(st.sampled_from("ab▁ c"), max_size=14))
def test_literal_replace_shortcut_matches_the_aligned_way_and_huggingface(pattern, content, text):
    """normalize_str of a literal pattern is str.replace: overlapping candidates ("aaa" by "aa")
    are taken left to right, as the regex does."""
    ours = Replace(pattern, content)
    assert ours.normalize_str(text) == our_result(ours, text)[0] == hfn.Replace(pattern, content).normalize_str(text)
