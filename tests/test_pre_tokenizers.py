"""Pre-tokenizers: parity with Hugging Face ``tokenizers`` (pieces AND offsets), JSON, errors.

Every configuration below is built twice, once with pieceworks and once
with ``tokenizers.pre_tokenizers``, and both must cut the same text into the
same pieces at the same offsets: on hypothesis text over all of Unicode, on
targeted alphabets (every kind of space, punctuation and symbols, digits of
other scripts, combining marks, emoji, CJK, characters new in Unicode 17),
on every code point (the scanner's tables), on already-edited strings, and
on the shared test inputs and corpora.
"""

from __future__ import annotations

import json
import pickle
import re
import string
import time

import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

hf = pytest.importorskip("tokenizers")
from tokenizers import pre_tokenizers as hp  # noqa: E402

from pieceworks import pre_tokenizers as pp  # noqa: E402
from pieceworks._kernels import scan  # noqa: E402
from pieceworks._regex import Regex  # noqa: E402
from pieceworks import _unicode_tables as tables  # noqa: E402
from pieceworks._unicode_tables import UNICODE_17_WORD_CHARS  # noqa: E402
from pieceworks.errors import ConfigError, InputTypeError, TokenizerFileError, UnknownComponentError  # noqa: E402
from pieceworks.pretokenized import PreTokenizedString  # noqa: E402

BEHAVIORS = ("removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous")
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


# -- building the same configuration in both libraries -------------------------------

class R(str):
    """A regex pattern in a case: becomes pieceworks' or tokenizers' ``Regex``."""


def make(lib, case):
    """Build ``case`` = (class name, args, kwargs) with ``lib`` (``pp`` or ``hp``)."""
    name, args, kwargs = case
    regex_cls = Regex if lib is pp else hf.Regex

    def convert(value):
        if isinstance(value, R):
            return regex_cls(str(value))
        if isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], str):
            return make(lib, value)
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value

    return getattr(lib, name)(*[convert(a) for a in args], **{k: convert(v) for k, v in kwargs.items()})


def case_id(case) -> str:
    name, args, kwargs = case
    parts = [repr(a) if not isinstance(a, list) else "[" + ",".join(c[0] for c in a) + "]" for a in args]
    parts += [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


SCANNER_CASES = [
    ("Whitespace", (), {}),
    ("WhitespaceSplit", (), {}),
    ("BertPreTokenizer", (), {}),
    *[("Punctuation", (b,), {}) for b in BEHAVIORS],
    ("Digits", (), {}),
    ("Digits", (), {"individual_digits": True}),
    ("UnicodeScripts", (), {}),
]
EDITING_CASES = [
    ("ByteLevel", (), {}),
    ("ByteLevel", (), {"add_prefix_space": False}),
    ("ByteLevel", (), {"use_regex": False}),
    ("ByteLevel", (), {"add_prefix_space": False, "use_regex": False}),
    *[("Metaspace", (), {"prepend_scheme": s, "split": split})
      for s in ("always", "first", "never") for split in (True, False)],
    ("Metaspace", ("_",), {}),
]
OTHER_CASES = [
    ("CharDelimiterSplit", (" ",), {}),
    ("CharDelimiterSplit", ("-",), {}),
    ("FixedLength", (), {}),
    ("FixedLength", (1,), {}),
    ("FixedLength", (3,), {}),
    ("Sequence", ([("WhitespaceSplit", (), {}), ("Digits", (), {"individual_digits": True})],), {}),
    ("Sequence", ([("WhitespaceSplit", (), {}), ("Metaspace", (), {"prepend_scheme": "first"})],), {}),
    ("Sequence", ([("Punctuation", ("merged_with_next",), {}), ("ByteLevel", (), {})],), {}),
    ("Sequence", ([("Split", (R(r"\d{1,3}"), "isolated"), {}), ("ByteLevel", (), {"add_prefix_space": False})],),
     {}),
    ("Sequence", ([],), {}),
    # Plain cuts, maybe then a ByteLevel adding no space: Sequence.pre_tokenize_str's span path.
    ("Sequence", ([("Split", (R(LLAMA3_PATTERN), "isolated"), {}),
                   ("ByteLevel", (), {"add_prefix_space": False, "use_regex": False})],), {}),
    ("Sequence", ([("Split", (R(r"\s+"), "merged_with_next"), {}), ("Digits", (), {"individual_digits": True}),
                   ("ByteLevel", (), {"add_prefix_space": False})],), {}),
    ("Sequence", ([("Punctuation", ("contiguous",), {}), ("Split", (R(r"\d"), "removed"), {"invert": True})],), {}),
    ("Sequence", ([("ByteLevel", (), {"add_prefix_space": False, "use_regex": False})],), {}),
]
SPLIT_PATTERNS = [" ", "-", "ab", "", "▁", R(r"\s+"), R(r"\w+|[^\w\s]+"), R(r"\p{L}+"), R("a*"), R(r"(?=\d)"),
                  R(GPT2_PATTERN), R(r"(?i)ab"), R(r"\d")]
SPLIT_CASES = [("Split", (p, b), {"invert": inv}) for p in SPLIT_PATTERNS for b in BEHAVIORS
               for inv in (False, True)]
ALL_CASES = SCANNER_CASES + EDITING_CASES + OTHER_CASES + SPLIT_CASES


def pair(case):
    return make(pp, case), make(hp, case)


def assert_same_pieces(ours, theirs, text: str) -> None:
    expected = theirs.pre_tokenize_str(text)
    got = ours.pre_tokenize_str(text)
    assert got == expected, f"{ours!r} on {text!r}"


_U17_RE = regex.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in UNICODE_17_WORD_CHARS) + "]")


def without_unicode_17(text: str) -> str:
    return _U17_RE.sub("", text)


# -- text strategies --------------------------------------------------------------------

SPACES = (" \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
          "\u2028\u2029\u202f\u205f\u3000\x1c\x1d\x1e\x1f\u200b\u180e\ufeff\u2060")
PUNCT_SYMBOLS = (string.punctuation + "¡¿«»§¶·–—‘’“”…‰′″‹›※‼⁇、。「」『』【】〜・！？，．：；￥＄＋＝＜＞＾｀｜～€£¥©®°±×÷™→∀∑√∞≠"
                 "■▲●★♠♥♪✓❤\u00ad\u166d\U000111c9\u2e43\u2e52\u061d\u0589\u061c\u05be\u0f14\u1800"
                 "\U0001e95e\u2e5d\U00011b00")
DIGITS = ("0123456789٠١٢٣٤٥٦٧٨٩۰۱۲०१२३০১২๐๑๒໐໑０１２①②⑳ⅠⅡⅫⅰ½¼¾²³¹𝟎𝟘𝟙\u16ee\u3007\u3021"
          "\U00011de0\U00011de9\U000116d0\U00010d40\U00016ff4")
MARKS = ("\u0300\u0301\u0302\u0308\u0323\u0327\u034f\u0483\u0591\u05b0\u0610\u064b\u0670\u0900\u0901"
         "\u093c\u0941\u094d\u0951\u0952\u0953\u0954\u0e31\u0e48\u1ab0\u1dc0\u200c\u200d\u20d0\u20dd"
         "\u20e3\ufe0f\ufe0e\U000e0100\u1acf")
LETTERS = ("abcXYZéßøłñΩαβЖжяאבגعربهिन्दीไทยქართᎠᚠ𐌰漢字中文日本語ひらがなカタカナーｶﾀｶﾅ한국어ㄅ〆々"
           "\u088f\U00011db0\U000323b0\U0001e6c0\U00020000\u30fc\uff21")
ODD = "▁_'\ue000\uffff\U0010ffff\u0378\U000e0001\x00\x7f\u200e\u0600"
ATOMS = (list(SPACES + PUNCT_SYMBOLS + DIGITS + MARKS + LETTERS + ODD)
         + ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'x", " '", "  ", "   ", "\r\n", " \n", "\n\n",
            "Hello", " world", "it's", "3.14", "1,000", "😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "1️⃣", "❤️", "🏳️‍🌈",
            "e\u0301", "▁▁", " ▁", "aa", "ab", "--", "-", " - "])

TARGETED = st.lists(st.sampled_from(ATOMS), max_size=25).map("".join)
ANY_TEXT = st.one_of(st.text(max_size=30), TARGETED)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
QUICK = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- parity on generated text -----------------------------------------------------------

@pytest.mark.parametrize("case", SCANNER_CASES + EDITING_CASES + OTHER_CASES, ids=case_id)
@FAST
@given(text=ANY_TEXT)
def test_same_pieces_as_hf(case, text):
    ours, theirs = pair(case)
    assert_same_pieces(ours, theirs, text)


@FAST
@given(text=ANY_TEXT, cuts=st.lists(st.sampled_from([("Split", (R(r"\p{N}{1,3}"), "isolated"), {}),
                                                   ("Split", (" ", "merged_with_previous"), {"invert": True}),
                                                   ("Digits", (), {}), ("Punctuation", ("merged_with_next",), {})]),
                                    max_size=3),
       byte_level=st.sampled_from([None, True, False]))
def test_sequence_span_path_is_the_general_path(text, cuts, byte_level):
    """Sequence.pre_tokenize_str's span path gives what the PreTokenizedString path gives."""
    members = [make(pp, cut) for cut in cuts]
    if byte_level is not None:
        members.append(pp.ByteLevel(add_prefix_space=False, use_regex=byte_level))
    sequence = pp.Sequence(members)
    assert sequence.pre_tokenize_str(text) == pp.PreTokenizer.pre_tokenize_str(sequence, text)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=case_id)
@QUICK
@given(text=ANY_TEXT)
def test_split_same_pieces_as_hf(case, text):
    ours, theirs = pair(case)
    assert_same_pieces(ours, theirs, text)


EDITS = {
    # An edit both NormalizedStrings make alike, so the pre-tokenizer sees edited (non-identity) text.
    "replace a→XY": (lambda ns: ns.replace("a", "XY"), lambda ns: ns.replace("a", "XY")),
    "replace space→▁": (lambda ns: ns.replace(" ", "▁"), lambda ns: ns.replace(" ", "▁")),
    "drop e": (lambda ns: ns.replace("e", ""), lambda ns: ns.replace("e", "")),
    "prepend+append": (lambda ns: (ns.prepend("»"), ns.append(" ¿")),
                       lambda ns: (ns.prepend("»"), ns.append(" ¿"))),
}


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("case", SCANNER_CASES + EDITING_CASES + OTHER_CASES[:6], ids=case_id)
@settings(max_examples=8, deadline=None)
@given(text=ANY_TEXT)
def test_same_pieces_on_edited_text(case, edit, text):
    """Pre-tokenizing an edited string: offsets still map into the original exactly as in HF."""
    # An empty input that an edit made non-empty has no original chars to align
    # with; tokenizers' ByteLevel garbles that case (it leaves chars unspelled).
    assume(text)
    ours, theirs = pair(case)
    our_edit, their_edit = EDITS[edit]
    mine = PreTokenizedString(text)
    mine.normalize(our_edit)
    ours.pre_tokenize(mine)
    other = hf.PreTokenizedString(text)
    other.normalize(their_edit)
    theirs.pre_tokenize(other)
    assert mine.get_splits() == other.get_splits(offset_type="char")


@pytest.mark.parametrize("case", SCANNER_CASES + EDITING_CASES, ids=case_id)
def test_same_pieces_after_a_first_split(case):
    """Pieces that do not start at offset 0 (``original_shift``), as after WhitespaceSplit."""
    first = ("WhitespaceSplit", (), {})
    ours, theirs = pair(("Sequence", ([first, case],), {}))
    for text in ["Hello big  world", "  a1 b2\u3000c3 ", "x 'sy 'll 漢字 ｶﾀ ▁q", "12 ab 34", " \n "]:
        assert_same_pieces(ours, theirs, text)


def test_targeted_characters_one_by_one():
    """Every targeted char alone and between letters, spaces, digits and punctuation."""
    pairs = [pair(c) for c in SCANNER_CASES + EDITING_CASES]
    for ch in SPACES + PUNCT_SYMBOLS + DIGITS + MARKS + LETTERS + ODD:
        for text in (ch, f"a{ch}b", f" {ch} ", f"1{ch}2", f"!{ch}?", f"{ch}{ch}", f"'{ch}"):
            for ours, theirs in pairs:
                assert_same_pieces(ours, theirs, text)


# -- every code point ---------------------------------------------------------------------

def _sweep_code_points() -> list[int]:
    """Every assigned code point but Han ideographs (every 11th) and private use; every 199th of the rest."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assigned = {ord(c) for c in regex.findall(r"[^\p{Cn}\p{Co}\p{Han}]", every)}
    han = {ord(c) for c in regex.findall(r"\p{Han}", every)}
    return [ord(c) for i, c in enumerate(every)
            if ord(c) in assigned or (ord(c) in han and i % 11 == 0) or i % 199 == 0]


SWEEP_CHECKS = [
    (("Whitespace", (), {}), "a!"),
    (("WhitespaceSplit", (), {}), "a"),
    (("BertPreTokenizer", (), {}), "a"),
    (("Punctuation", ("isolated",), {}), "a"),
    (("Digits", (), {"individual_digits": True}), "a"),
    (("ByteLevel", (), {"add_prefix_space": False}), "a"),
    (("ByteLevel", (), {"add_prefix_space": False}), "1"),
    (("UnicodeScripts", (), {}), "a"),
    (("UnicodeScripts", (), {}), "\u05d0"),
]


@pytest.fixture(scope="module")
def sweep_code_points():
    return _sweep_code_points()


@pytest.mark.parametrize("case,filler", SWEEP_CHECKS, ids=lambda v: case_id(v) if isinstance(v, tuple) else repr(v))
def test_every_code_point_between_fillers(case, filler, sweep_code_points):
    """Each code point between filler chars: its class decides its piece, so every table entry is checked."""
    ours, theirs = pair(case)
    text = "".join(filler + chr(c) for c in sweep_code_points)
    expected = theirs.pre_tokenize_str(text)
    got = ours.pre_tokenize_str(text)
    if got != expected:
        first = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
        pytest.fail(f"{case_id(case)}: first difference at piece {first}: ours {got[first]!r}, "
                    f"HF {expected[first]!r} (code points {[hex(ord(c)) for c in expected[first][0][:4]]})")
    assert got == expected


# -- real inputs --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared_inputs(shared_data):
    path = shared_data / "testvectors" / "generated" / "inputs.jsonl"
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


SHARED_INPUT_SPLITS = [c for c in SPLIT_CASES if c[1][1] in ("isolated", "merged_with_next")
                       and c[1][0] not in ("", "a*") and not c[2]["invert"]]


@pytest.mark.parametrize("case", SCANNER_CASES + EDITING_CASES + OTHER_CASES + SHARED_INPUT_SPLITS, ids=case_id)
def test_shared_inputs(case, shared_inputs):
    ours, theirs = pair(case)
    for text in shared_inputs:
        assert_same_pieces(ours, theirs, text)


CORPORA = ["corpora/english/botchan.txt", "corpora/multilingual/ja_wagahaiwa_nekodearu.txt",
           "corpora/multilingual/th_wisesight_social_media.txt", "corpora/multilingual/ko_nsmc_movie_reviews.txt"]


@pytest.mark.parametrize("corpus", CORPORA)
def test_long_text_from_corpora(corpus, shared_data):
    """Long strings (the scanner drops the GIL past 4096 chars) of 2- and 4-byte storage."""
    text = (shared_data / corpus).read_text(encoding="utf-8")[:30_000]
    for case in SCANNER_CASES + EDITING_CASES[:2] + EDITING_CASES[4:5]:
        assert_same_pieces(*pair(case), text)


# -- pathological input -------------------------------------------------------------------

@pytest.mark.parametrize("text", ["a" * 60_000, " " * 60_000, "1" * 60_000, "'" * 60_000,
                                  "a " * 30_000, "\n" * 60_000, "漢" * 60_000],
                         ids=lambda text: f"{text[:2]!r}*{len(text) // 2}")
def test_long_runs_take_linear_time(text):
    for case in SCANNER_CASES[:6] + [("ByteLevel", (), {}), ("Metaspace", (), {}),
                                     ("Metaspace", (), {"split": False}), ("Split", (" ", "isolated"), {})]:
        ours, theirs = pair(case)
        start = time.perf_counter()
        got = ours.pre_tokenize_str(text)
        elapsed = time.perf_counter() - start
        # Linear work is ~0.1 s here; one quadratic pass (a copy per piece) would take tens of seconds.
        assert elapsed < 3, f"{case_id(case)} took {elapsed:.1f}s on {len(text)} chars"
        assert got == theirs.pre_tokenize_str(text)


def test_lone_surrogates_do_not_break_the_scanners():
    # tokenizers refuses such strings; pieceworks treats a surrogate as an "other" char.
    text = "a\ud800b c\udfff"
    assert pp.Whitespace().pre_tokenize_str(text) == [("a", (0, 1)), ("\ud800", (1, 2)), ("b", (2, 3)),
                                                     ("c", (4, 5)), ("\udfff", (5, 6))]
    assert pp.ByteLevel().pre_tokenize_str(text)[0] == ("Ġa", (0, 1))
    assert pp.UnicodeScripts().pre_tokenize_str(text) == [("a\ud800b c\udfff", (0, 6))]


# -- the kernel on its own ----------------------------------------------------------------

def test_gpt2_scanner_matches_the_gpt2_regex():
    """On text without Unicode 17 chars, the scanner's spans are the regex's matches."""
    compiled = regex.compile(GPT2_PATTERN)

    @settings(max_examples=300, deadline=None)
    @given(text=ANY_TEXT.map(without_unicode_17))
    def check(text):
        assert scan.gpt2_spans(text) == [m.span() for m in compiled.finditer(text)]
    check()


def test_class_runs_on_all_storage_widths():
    actions = scan.actions_for([(scan.FLAG_WHITESPACE, scan.ACTION_DROP), (scan.FLAG_PUNCT, scan.ACTION_ISOLATE)])
    for tail in ("", "é", "漢", "😀"):   # 1-, 1-, 2- and 4-byte storage
        text = f"ab, c{tail}" * 3000
        spans = scan.class_runs(text, actions)
        assert spans == [m.span() for m in regex.finditer(r"[^\s\p{P}]+|\p{P}", text)]


@settings(max_examples=150, deadline=None)
@given(text=ANY_TEXT, edit=st.sampled_from([None, *EDITS]))
def test_spelled_is_spell_bytes_in_one_step(text, edit):
    """The fast byte spelling equals the edit through ``transform`` (Hugging Face's way)."""
    from pieceworks.alignment import NormalizedString
    reference, fast = NormalizedString(text), NormalizedString(text)
    if edit is not None:
        EDITS[edit][0](reference)
        EDITS[edit][0](fast)
    pp.spell_bytes(reference)
    result = pp.spelled(fast)
    assert (result.normalized, result.alignments(), result.original, result.original_shift) == \
        (reference.normalized, reference.alignments(), reference.original, reference.original_shift)


def test_kernel_flags_are_the_table_flags():
    assert [scan.FLAG_WHITESPACE, scan.FLAG_WORD, scan.FLAG_PUNCT, scan.FLAG_NUMERIC, scan.FLAG_LETTER,
            scan.FLAG_NUMBER] == [tables.WHITESPACE, tables.WORD, tables.PUNCT, tables.NUMERIC, tables.LETTER,
                                  tables.NUMBER]
    assert scan.char_flags("7") == tables.char_flags()[ord("7")] == tables.WORD | tables.NUMERIC | tables.NUMBER
    ids, names = tables.script_table()
    assert names[scan.script_id("ア")] == "Han" and scan.script_id(" ") == tables.SCRIPT_ANY


def test_action_table_must_have_256_entries():
    with pytest.raises(ValueError, match="256"):
        scan.class_runs("abc", b"\x02" * 64)


def test_char_matches_is_find_matches_for_a_char_class():
    assert scan.char_matches("", scan.FLAG_PUNCT) == [((0, 0), False)]
    assert scan.char_matches("a,,b", scan.FLAG_PUNCT) == [((0, 1), False), ((1, 2), True), ((2, 3), True),
                                                          ((3, 4), False)]


# -- JSON -----------------------------------------------------------------------------------

def hf_json(pre_tokenizer) -> dict:
    tok = hf.Tokenizer(hf.models.WordLevel({"a": 0}, unk_token="a"))
    tok.pre_tokenizer = pre_tokenizer
    return json.loads(tok.to_str())["pre_tokenizer"]


def hf_load(data: dict):
    """Load a pre_tokenizer object through tokenizers (raises on what it refuses)."""
    base = json.loads(hf.Tokenizer(hf.models.WordLevel({"a": 0}, unk_token="a")).to_str())
    base["pre_tokenizer"] = data
    return hf.Tokenizer.from_str(json.dumps(base))


JSON_CASES = SCANNER_CASES + EDITING_CASES + OTHER_CASES + [c for c in SPLIT_CASES if c[1][1] != "removed"][::3]


@pytest.mark.parametrize("case", JSON_CASES, ids=case_id)
def test_to_json_is_hf_serialization(case):
    ours, theirs = pair(case)
    # Same keys in the same order, as tokenizer.json text.
    assert json.dumps(ours.to_json(), ensure_ascii=False) == json.dumps(hf_json(theirs), ensure_ascii=False)


@pytest.mark.parametrize("case", JSON_CASES, ids=case_id)
def test_from_hf_json_round_trips(case):
    theirs = make(hp, case)
    data = hf_json(theirs)
    loaded = pp.PreTokenizer.from_json(data)
    assert type(loaded).__name__ == case[0]
    assert loaded.to_json() == data
    for text in ["Hello, my  friend's 42 cats!", " ½ 漢字 ｶﾀ \u3000x\n", ""]:
        assert_same_pieces(loaded, theirs, text)


@pytest.mark.parametrize("case", JSON_CASES[::4], ids=case_id)
def test_pickle_round_trips(case):
    ours = make(pp, case)
    clone = pickle.loads(pickle.dumps(ours))
    assert clone == ours and clone.to_json() == ours.to_json()
    assert clone.pre_tokenize_str("Hi there, 12 you") == ours.pre_tokenize_str("Hi there, 12 you")


@pytest.mark.parametrize("data,expected", [
    ({"type": "Punctuation"}, {"type": "Punctuation", "behavior": "Isolated"}),
    ({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
     {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}),
    ({"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
     {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}),
    ({"type": "Metaspace", "replacement": "_", "str_rep": "_", "add_prefix_space": True},
     {"type": "Metaspace", "replacement": "_", "prepend_scheme": "always", "split": True}),
    ({"type": "Metaspace", "replacement": "▁", "add_prefix_space": False, "prepend_scheme": "never"},
     {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True}),
    ({"type": "Metaspace", "replacement": "▁", "add_prefix_space": True, "prepend_scheme": "first"},
     {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True}),
    ({"type": "FixedLength"}, {"type": "FixedLength", "length": 5}),
    ({"type": "Whitespace", "unknown_field": 1}, {"type": "Whitespace"}),
])
def test_defaults_and_legacy_fields_load_as_in_hf(data, expected):
    assert pp.PreTokenizer.from_json(data).to_json() == expected
    assert json.loads(hf_load(data).to_str())["pre_tokenizer"] == expected


BAD_JSON = [
    ({}, TokenizerFileError, "pre_tokenizer.type"),
    ({"type": "Nope"}, UnknownComponentError, "pre_tokenizer.type"),
    ({"type": 3}, TokenizerFileError, "pre_tokenizer.type"),
    ({"type": "Digits"}, TokenizerFileError, "pre_tokenizer.individual_digits"),
    ({"type": "Digits", "individual_digits": 1}, TokenizerFileError, "pre_tokenizer.individual_digits"),
    ({"type": "ByteLevel"}, TokenizerFileError, "pre_tokenizer.add_prefix_space"),
    ({"type": "ByteLevel", "add_prefix_space": True}, TokenizerFileError, "pre_tokenizer.trim_offsets"),
    ({"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": "yes"},
     TokenizerFileError, "pre_tokenizer.use_regex"),
    ({"type": "Metaspace"}, TokenizerFileError, "pre_tokenizer.replacement"),
    ({"type": "Metaspace", "replacement": "__"}, TokenizerFileError, "pre_tokenizer.replacement"),
    ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"},
     TokenizerFileError, "pre_tokenizer.prepend_scheme"),
    ({"type": "Metaspace", "replacement": "▁", "add_prefix_space": False},
     TokenizerFileError, "pre_tokenizer.add_prefix_space"),
    ({"type": "Metaspace", "replacement": "▁", "split": "no"}, TokenizerFileError, "pre_tokenizer.split"),
    ({"type": "Punctuation", "behavior": "Bogus"}, TokenizerFileError, "pre_tokenizer.behavior"),
    ({"type": "Split", "pattern": {"String": "a"}, "behavior": "Isolated"}, TokenizerFileError,
     "pre_tokenizer.invert"),
    ({"type": "Split", "pattern": {"String": "a"}, "invert": False}, TokenizerFileError, "pre_tokenizer.behavior"),
    ({"type": "Split", "pattern": {"String": "a"}, "behavior": "isolated", "invert": False},
     TokenizerFileError, "pre_tokenizer.behavior"),
    ({"type": "Split", "pattern": "a", "behavior": "Isolated", "invert": False},
     TokenizerFileError, "pre_tokenizer.pattern"),
    ({"type": "Split", "pattern": {"Str": "a"}, "behavior": "Isolated", "invert": False},
     TokenizerFileError, "pre_tokenizer.pattern"),
    ({"type": "Split", "pattern": {"String": "a", "Regex": "b"}, "behavior": "Isolated", "invert": False},
     TokenizerFileError, "pre_tokenizer.pattern"),
    ({"type": "Split", "pattern": {"String": 1}, "behavior": "Isolated", "invert": False},
     TokenizerFileError, "pre_tokenizer.pattern.String"),
    ({"type": "Split", "pattern": {"Regex": "(ab"}, "behavior": "Isolated", "invert": False},
     TokenizerFileError, "pre_tokenizer.pattern.Regex"),
    ({"type": "CharDelimiterSplit"}, TokenizerFileError, "pre_tokenizer.delimiter"),
    ({"type": "CharDelimiterSplit", "delimiter": "ab"}, TokenizerFileError, "pre_tokenizer.delimiter"),
    ({"type": "FixedLength", "length": -1}, TokenizerFileError, "pre_tokenizer.length"),
    ({"type": "FixedLength", "length": "5"}, TokenizerFileError, "pre_tokenizer.length"),
    ({"type": "Sequence"}, TokenizerFileError, "pre_tokenizer.pretokenizers"),
    ({"type": "Sequence", "pretokenizers": {"type": "Whitespace"}}, TokenizerFileError,
     "pre_tokenizer.pretokenizers"),
    ({"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, {"type": "Nope"}]},
     UnknownComponentError, "pre_tokenizer.pretokenizers[1].type"),
    ({"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": None}]},
     TokenizerFileError, "pre_tokenizer.pretokenizers[0].individual_digits"),
]


@pytest.mark.parametrize("data,error,field", BAD_JSON, ids=lambda v: json.dumps(v) if isinstance(v, dict) else None)
def test_bad_json_names_the_field(data, error, field):
    with pytest.raises(error) as caught:
        pp.PreTokenizer.from_json(data)
    assert caught.value.field == field
    assert f"field '{field}'" in str(caught.value) and "Fix:" in str(caught.value)
    with pytest.raises(Exception):   # tokenizers refuses the same objects
        hf_load(data)


def test_invalid_regex_in_json_says_which_pattern():
    data = {"type": "Split", "pattern": {"Regex": "[a-"}, "behavior": "Isolated", "invert": False}
    with pytest.raises(TokenizerFileError, match=re.escape("'[a-'")):
        pp.PreTokenizer.from_json(data, path="tok.json")


def test_fixed_length_zero_is_refused_up_front():
    # tokenizers loads length 0 and then panics on the first text ("chunk size must be non-zero").
    with pytest.raises(TokenizerFileError, match="pre_tokenizer.length"):
        pp.PreTokenizer.from_json({"type": "FixedLength", "length": 0})
    with pytest.raises(ConfigError, match="at least 1"):
        pp.FixedLength(0)


# -- the Python API -------------------------------------------------------------------------

def test_invalid_regex_raises_config_error_naming_the_pattern():
    with pytest.raises(ConfigError, match=re.escape("'(unclosed'")):
        pp.Split(Regex("(unclosed"), "isolated")


@pytest.mark.parametrize("build,error", [
    (lambda: pp.Split("a", "bogus"), ConfigError),
    (lambda: pp.Split(3, "isolated"), InputTypeError),
    (lambda: pp.Split("a", "isolated", invert="no"), InputTypeError),
    (lambda: pp.Punctuation("sideways"), ConfigError),
    (lambda: pp.Metaspace("__"), ConfigError),
    (lambda: pp.Metaspace(""), ConfigError),
    (lambda: pp.Metaspace(prepend_scheme="sometimes"), ConfigError),
    (lambda: pp.CharDelimiterSplit("ab"), ConfigError),
    (lambda: pp.Digits("yes"), InputTypeError),
    (lambda: pp.ByteLevel(add_prefix_space=1), InputTypeError),
    (lambda: pp.FixedLength(2.5), InputTypeError),
    (lambda: pp.Sequence([pp.Whitespace(), "Digits"]), InputTypeError),
    (lambda: pp.Whitespace().pre_tokenize_str(b"bytes"), InputTypeError),
])
def test_bad_arguments_raise_pieceworks_errors_with_a_fix(build, error):
    with pytest.raises(error) as caught:
        build()
    assert caught.value.fix


def test_bad_arguments_are_refused_by_hf_too():
    for build in [lambda: hp.Split("a", "bogus"), lambda: hp.Metaspace("__"),
                  lambda: hp.Metaspace(prepend_scheme="sometimes"), lambda: hp.CharDelimiterSplit("ab"),
                  lambda: hp.Punctuation("sideways")]:
        with pytest.raises(Exception):
            build()


def test_attributes_read_like_hf():
    pairs = [pair(("ByteLevel", (), {"add_prefix_space": False})), pair(("Metaspace", ("_", "first", False), {})),
             pair(("Split", ("-", "contiguous"), {"invert": True})), pair(("Punctuation", ("contiguous",), {})),
             pair(("Digits", (True,), {})), pair(("CharDelimiterSplit", ("x",), {})), pair(("FixedLength", (7,), {}))]
    names = ["add_prefix_space", "trim_offsets", "use_regex", "replacement", "prepend_scheme", "split", "behavior",
             "invert", "individual_digits", "delimiter", "length"]
    for ours, theirs in pairs:
        for name in names:
            if hasattr(theirs, name) and name in type(theirs).__dict__:
                assert getattr(ours, name) == getattr(theirs, name), (ours, name)


def test_setters_change_behaviour():
    m = pp.Metaspace()
    m.prepend_scheme = "never"
    m.replacement = "_"
    assert m.pre_tokenize_str("a b") == hp.Metaspace("_", "never").pre_tokenize_str("a b")
    s = pp.Split(" ", "removed")
    s.pattern = Regex(r"\d")
    s.behavior = "isolated"
    assert s.pre_tokenize_str("a1b") == [("a", (0, 1)), ("1", (1, 2)), ("b", (2, 3))]
    seq = pp.Sequence([pp.WhitespaceSplit()])
    seq[0] = pp.Digits(individual_digits=True)
    assert len(seq) == 1 and seq[0] == pp.Digits(True)


def test_byte_level_alphabet_is_hf_alphabet():
    alphabet = pp.ByteLevel.alphabet()
    assert len(alphabet) == 256 and set(alphabet) == set(hp.ByteLevel.alphabet())


def test_metaspace_first_prepends_only_at_the_start_of_the_input():
    seq = pp.Sequence([pp.WhitespaceSplit(), pp.Metaspace(prepend_scheme="first")])
    assert seq.pre_tokenize_str("ab cd") == [("▁ab", (0, 2)), ("cd", (3, 5))]


def test_pre_tokenize_leaves_tokenized_splits_alone():
    pretok = PreTokenizedString("ab cd")
    pp.WhitespaceSplit().pre_tokenize(pretok)
    pretok.splits[0].tokens = []      # as if an added token had matched "ab"
    pp.FixedLength(1).pre_tokenize(pretok)
    assert pretok.get_splits() == [("ab", (0, 2), []), ("c", (3, 4), None), ("d", (4, 5), None)]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["strip", "replace-first", "replace-spaces", "strip-accents", "none"]),
       st.text(st.sampled_from("ab x\u0301é"), max_size=10), st.sampled_from(["first", "always"]))
def test_metaspace_first_prefixes_where_the_first_char_came_from_as_huggingface(normalizer, text, scheme):
    """``prepend_scheme="first"`` adds the replacement only when the first normalized char comes
    from the start of the input: a normalizer that removed or replaced the input's first chars
    (Strip, Replace, StripAccents on a leading mark) stops it, as in Hugging Face."""
    import tokenizers as hf
    from pieceworks import Tokenizer, models, normalizers

    def build(lib_tokenizer, lib_models, lib_normalizers, lib_pre):
        # One token per char, so a prepended replacement shows as its own token.
        tok = lib_tokenizer(lib_models.BPE({c: i for i, c in enumerate("▁abxXYé\u0301e ")}, []))
        made = {"strip": lambda: lib_normalizers.Strip(left=True, right=False),
                "replace-first": lambda: lib_normalizers.Replace("x", ""),
                "replace-spaces": lambda: lib_normalizers.Replace("  ", "XY"),
                "strip-accents": lambda: lib_normalizers.Sequence([lib_normalizers.NFD(),
                                                                   lib_normalizers.StripAccents()]),
                "none": lambda: None}[normalizer]()
        if made is not None:
            tok.normalizer = made
        tok.pre_tokenizer = lib_pre.Metaspace(prepend_scheme=scheme)
        return tok

    ours, theirs = build(Tokenizer, models, normalizers, pp), build(hf.Tokenizer, hf.models, hf.normalizers, hp)
    mine, want = ours.encode(text), theirs.encode(text)
    assert (mine.tokens, mine.offsets) == (want.tokens, want.offsets)
    # Training counts the same pieces (its own path: normalized, then pre-tokenized).
    from pieceworks import trainers

    ours.train_from_iterator([text, text], trainers.BpeTrainer(show_progress=False))
    theirs.train_from_iterator([text, text], hf.trainers.BpeTrainer(show_progress=False))
    assert ours.get_vocab() == theirs.get_vocab()


@pytest.mark.parametrize("pattern", [r"\p{L}+", r"\w+", r"\d+", r"\p{N}", r"[^\s\p{L}\p{N}]+", r"\p{M}"])
def test_a_user_regex_sees_unicode_17_letters_as_huggingface_does(pattern):
    """Hugging Face's Oniguruma is at Unicode 16.0: the letters, marks and digits new in 17.0 are
    unassigned chars to it. A Split (and Replace) with a user Regex must cut them the same way."""
    import tokenizers as hf
    from pieceworks import normalizers as pn

    newer = "".join(chr(cp) for cp in sorted(tables.code_points(UNICODE_17_WORD_CHARS)))
    text = "".join(f"a{ch}1 " for ch in newer)
    ours = pp.Split(Regex(pattern), "isolated").pre_tokenize_str(text)
    theirs = hp.Split(hf.Regex(pattern), "isolated").pre_tokenize_str(text)
    assert ours == theirs
    assert pn.Replace(Regex(pattern), "_").normalize_str(text) == \
        hf.normalizers.Replace(hf.Regex(pattern), "_").normalize_str(text)


@pytest.mark.parametrize("pattern", [r"\w", r"\W", r"[\w]", r"[^\w]", r"[\w-]", r"\w+", r"[^\w\s]+"])
def test_a_user_regex_word_class_is_onigurumas_on_every_code_point(pattern):
    """Oniguruma's \\w (Hugging Face's user regexes) leaves out U+200C/U+200D, which Unicode's
    (and the `regex` module's) holds, and holds ²³¹¼½¾ outside a bracket class only: every code
    point is cut alike."""
    import tokenizers as hf

    text = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)
    ours = pp.Split(Regex(pattern), "isolated").pre_tokenize_str(text)
    theirs = hp.Split(hf.Regex(pattern), "isolated").pre_tokenize_str(text)
    assert ours == theirs


@pytest.mark.parametrize("pattern", [r"\h+", r"[\h]+", r"\H+", r"[\h-]+", r"\x{41}", r"[\x{41}-\x{43}]+", r"\x{1F600}",
                                     r"(?m).+", r"(?m:.+)", r"(?im).+", r"(?-m:.)+", r"a\Z", r"\Z", r"(?i:ab)+",
                                     r"\\h", r"(?:\w+)\s", r"\b", r"\B", r"\bx", r"a\b", r"\b\w+\b", r"[\b]"])
def test_a_user_regex_reads_onigurumas_syntax(pattern):
    """Oniguruma's syntax where other engines read it otherwise: \\h is a hex digit, \\x{..} a code
    point, \\Z also matches before a final newline, the m flag lets "." match a newline, and \\b, \\B
    stand on Oniguruma's word class (a ZWJ is not a word char, ² is)."""
    import tokenizers as hf

    for text in ["af 09 gG\n", "ABCD\n\nb", "a\n", "a", "😀x\\h", "AB ab\nab ", "", "\n", "a\u200db x²y",
                 "x² ²x \u200dx a\x08b"]:
        ours = pp.Split(Regex(pattern), "isolated").pre_tokenize_str(text)
        theirs = hp.Split(hf.Regex(pattern), "isolated").pre_tokenize_str(text)
        assert ours == theirs, text


ONIGURUMA_ONLY = [
    r"[[:alpha:]]+", r"[[:punct:]]+", r"[[:^space:]]+", r"[[:upper:][:digit:]]+", r"[\W]+", r"[^\W\d]+",
    r"[a-z&&[^aeiou]]+", r"[\w&&\D]+", r"[\p{L}&&\p{^Ll}]+", r"(?i)ß", r"(?i)straße", r"(?i)ǅ+", r"(?<x>a)\k<x>",
    r"\cA", r"\e", r"\O+", r"\X", r"\R", r"\N+", r"\A.", r".\z", r"(?~ab)", r"a*+a", r"(?>a+)a", r"\p{Greek}+",
    r"\p{Han}+", r"\p{Hiragana}|\p{Katakana}", r"\P{L}+", r"\p{^N}+", r"\y", r"\Y", r"(?W)\w+", r"(?D)\d+",
    r"(?P)[[:alpha:]]+", r"(?x) a  b # comment", r"\u0041", r"\101", r"\o{101}", r"^\s*$", r"$",
]


@pytest.mark.parametrize("pattern", ONIGURUMA_ONLY)
def test_a_user_regex_means_what_oniguruma_says(pattern):
    """Constructs whose meaning differs from one engine to the next, or that only Oniguruma has
    (POSIX brackets, class intersection, full case folding, \\k<name>, \\cA, \\O, \\y, the absent
    operator, option letters): a Split and a Replace with each cut as Hugging Face's do."""
    import tokenizers as hf
    from pieceworks import normalizers as pn

    texts = ["Hello, world! aa straSSe STRASSE Straße \x01\x1b ²³ x\u200dy 12٣ \r\n naïve ǅǆǄ 日本語ひらカタ.\n end",
             "", "\n", "ab", "aab b", "αβγ ΑΒΓ 12", "e\u0301\U0001F1EB\U0001F1F7 \u0915\u094d\u0937"]
    for text in texts:
        ours = pp.Split(Regex(pattern), "isolated").pre_tokenize_str(text)
        theirs = hp.Split(hf.Regex(pattern), "isolated").pre_tokenize_str(text)
        assert ours == theirs, text
        assert pn.Replace(Regex(pattern), "<>").normalize_str(text) == \
            hf.normalizers.Replace(hf.Regex(pattern), "<>").normalize_str(text), text


_PATTERN_ATOMS = ["a", "b", "é", "日", " ", r"\.", r"\-", ".", r"\w", r"\W", r"\d", r"\D", r"\s", r"\S", r"\h",
                  r"\p{L}", r"\p{Lu}", r"\p{N}", r"\p{P}", r"\p{M}", r"\P{L}", r"\p{Han}", r"[[:alpha:]]",
                  r"[[:punct:]]", r"[^\s\p{L}]", r"[a-z&&[^aeiou]]", r"[\w-]", r"[^\W\d]", r"\X", r"\R", "^", "$",
                  r"\b", r"\B", r"\A", r"\z", r"\Z", r"(?=a)", r"(?!\d)", r"(?<=\s)", r"(?<!\w)", "(?i:a)", "(?i)ß"]
_QUANTIFIERS = ["", "", "*", "+", "?", "{1,3}", "*?", "+?", "*+", "{2}"]


@st.composite
def oniguruma_patterns(draw, depth=0):
    """A random Oniguruma pattern: atoms, quantified, grouped and alternated."""
    def term():
        if depth < 2 and draw(st.integers(0, 4)) == 0:
            inner = draw(oniguruma_patterns(depth + 1))
            opener = draw(st.sampled_from(["(", "(?:", "(?>", "(?i:", "(?m:"]))
            atom = f"{opener}{inner})"
        else:
            atom = draw(st.sampled_from(_PATTERN_ATOMS))
        quantifiable = not atom.startswith(("^", "$", "\\b", "\\B", "\\A", "\\z", "\\Z", "(?=", "(?!", "(?<", "(?i)"))
        return atom + (draw(st.sampled_from(_QUANTIFIERS)) if quantifiable else "")
    alternatives = ["".join(term() for _ in range(draw(st.integers(1, 3)))) for _ in range(draw(st.integers(1, 2)))]
    return "|".join(alternatives)


def _split_or_error(build, text, refusal):
    """The pieces, or "error" where ``build`` or the split raises ``refusal`` (pieceworks: ConfigError,
    for a pattern Oniguruma refuses or its backtracking limit; Hugging Face: any error, or a panic)."""
    try:
        return build().pre_tokenize_str(text)
    except refusal:
        return "error"
    except BaseException as exc:      # pyo3's PanicException
        if refusal is ConfigError or type(exc).__name__ != "PanicException":
            raise
        return "error"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=oniguruma_patterns(), text=ANY_TEXT)
def test_random_user_regexes_cut_as_huggingface_does(pattern, text):
    """Random patterns over Unicode classes, anchors, lookarounds and groups, on random text: the
    same pieces as Hugging Face's Split, or both refuse the pattern."""
    import tokenizers as hf

    ours = _split_or_error(lambda: pp.Split(Regex(pattern), "isolated"), text, ConfigError)
    theirs = _split_or_error(lambda: hp.Split(hf.Regex(pattern), "isolated"), text, Exception)
    assert ours == theirs


@pytest.mark.parametrize("literal", ["", " ", ".", "a.b", "\\", "(", "[]", "{2}", "$^", "|", "#x", "\n", "\t ",
                                     "-", "&&", "\\h", "ß", "日本", string.punctuation])
def test_a_literal_pattern_matches_itself_only(literal):
    """A str pattern (Split, Replace) is matched literally, as Hugging Face escapes it, whatever
    Oniguruma would make of its chars."""
    import tokenizers as hf
    from pieceworks import normalizers as pn

    text = f"x{literal}y {literal}{literal} ss a.b \\h \n" + string.punctuation
    assert pp.Split(literal, "isolated").pre_tokenize_str(text) == \
        hp.Split(literal, "isolated").pre_tokenize_str(text)
    assert pn.Replace(literal, "<>").normalize_str(text) == hf.normalizers.Replace(literal, "<>").normalize_str(text)


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|a)+c"])
def test_a_backtracking_pattern_stops_with_an_error_not_a_hang(pattern):
    """These backtrack without end on "aaa…b" (the regex module took 20 s for (a|a)+c on 27 chars,
    twice as long for each more); Oniguruma gives up at its retry limit (Hugging Face panics
    there), and pieceworks says which pattern and how to fix it."""
    with pytest.raises(ConfigError, match=re.escape(repr(pattern)) + ".*retry-limit"):
        pp.Split(Regex(pattern), "isolated").pre_tokenize_str("a" * 40 + "b")


def test_a_user_regex_takes_lone_surrogates_as_chars():
    """Python text may hold a lone surrogate (Rust's cannot): it is one char to the pattern, and
    spans stay in chars."""
    assert Regex(r"\p{L}+|.").spans("a\ud800bé\udfff") == [(0, 1), (1, 2), (2, 4), (4, 5)]
    assert Regex(".").spans("\ud83d\ude00") == [(0, 1), (1, 2)]


def test_a_user_regex_gives_the_same_spans_on_many_threads():
    from concurrent.futures import ThreadPoolExecutor

    pattern = Regex(r"\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+")
    texts = [f"word{i} 日本語 {i * 7919} ¿qué? " * 200 for i in range(16)]
    expected = [pattern.spans(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(pattern.spans, texts * 4)) == expected * 4
