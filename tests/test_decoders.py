"""Decoders against Hugging Face ``tokenizers``: output, JSON, errors.

Every decoder is built twice, once here and once in ``tokenizers``, from the
same arguments; both decode the same hypothesis token lists (wordpiece
``##`` pieces, ``▁`` pieces, GPT-2 byte chars including broken UTF-8,
``<0x41>`` byte tokens, empty tokens, all of Unicode) and must agree.
"""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex as HFRegex  # noqa: E402
from tokenizers import Tokenizer as HFTokenizer  # noqa: E402
from tokenizers import decoders as hf  # noqa: E402
from tokenizers import models as hf_models  # noqa: E402

from pieceworks import decoders as pw  # noqa: E402
from pieceworks._regex import Regex  # noqa: E402
from pieceworks.byte_level import BYTE_TO_CHAR, bytes_to_byte_chars  # noqa: E402
from pieceworks.errors import (ConfigError, InputTypeError, TokenizerFileError,  # noqa: E402
                               UnknownComponentError)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- token strategies ----------------------------------------------------------

_byte_chars = st.sampled_from(BYTE_TO_CHAR)
_interesting_chars = st.sampled_from(list(" .,?!'|▁#<>x0aAéñ漢🙂\u200d\t\n\u3000") + ["<pad>", "</w>"])

byte_level_tokens = st.one_of(
    st.text(_byte_chars, max_size=6),                                      # any bytes, broken UTF-8 too
    st.text(max_size=4).map(lambda t: bytes_to_byte_chars(t.encode())),    # valid UTF-8 cut anywhere below
    st.binary(max_size=4).map(bytes_to_byte_chars),
)
byte_fallback_tokens = st.one_of(
    st.integers(0, 255).map(lambda b: f"<0x{b:02X}>"),
    st.integers(0, 255).map(lambda b: f"<0x{b:02x}>"),
    st.sampled_from(["<0x+A>", "<0x-1>", "<0xG1>", "<0xé>", "<0x1>", "<0x123>", "<0x>", "<0X41>", "<0x 1>"]),
)
word_tokens = st.one_of(
    st.text(max_size=6),
    st.lists(_interesting_chars, max_size=5).map("".join),
    st.text(max_size=4).map(lambda t: "##" + t),
    st.text(max_size=4).map(lambda t: "▁" + t),
    st.sampled_from([" .", " ?", " !", " ,", " ' ", "n't", " n't", " 'm", " do not", " 's", " 've", " 're",
                     "do", "not", "'s", ".", "", "##", "▁", "▁▁", "|", "<pad>", "</w>", "a</w>", "Ġ"]),
)
any_token = st.one_of(word_tokens, byte_level_tokens, byte_fallback_tokens)
token_lists = st.lists(any_token, max_size=12)


def hf_decode(decoder, tokens):
    """Hugging Face's decode, or None where it panics (a Rust bug, e.g. in Strip)."""
    try:
        return decoder.decode(tokens)
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        if type(exc).__name__ == "PanicException":
            return None
        raise


# -- decoder pairs built from the same arguments -----------------------------------

def _pair(name, *args, **kwargs):
    return (getattr(pw, name)(*args, **kwargs), getattr(hf, name)(*args, **kwargs))


FIXED = [
    _pair("ByteLevel"),
    _pair("WordPiece"),
    _pair("WordPiece", prefix="##", cleanup=False),
    _pair("WordPiece", prefix="▁", cleanup=True),
    _pair("WordPiece", prefix="", cleanup=True),
    _pair("Metaspace"),
    _pair("Metaspace", prepend_scheme="never"),
    _pair("Metaspace", prepend_scheme="first", split=False),
    _pair("Metaspace", replacement="#"),
    _pair("BPEDecoder"),
    _pair("BPEDecoder", suffix="a"),
    _pair("BPEDecoder", suffix=""),
    _pair("ByteFallback"),
    _pair("Fuse"),
    _pair("Strip"),
    _pair("Strip", " ", 1, 0),
    _pair("Strip", "▁", 2, 1),
    _pair("Strip", "a", 0, 3),
    (pw.Replace("▁", " "), hf.Replace("▁", " ")),
    (pw.Replace("", "-"), hf.Replace("", "-")),
    (pw.Replace("aa", "b"), hf.Replace("aa", "b")),
    (pw.Replace(Regex(r"\s+"), "_"), hf.Replace(HFRegex(r"\s+"), "_")),
    (pw.Replace(Regex("a*"), "X"), hf.Replace(HFRegex("a*"), "X")),
    (pw.Replace(Regex(r"(?<=a)|(?=b)"), "|"), hf.Replace(HFRegex(r"(?<=a)|(?=b)"), "|")),
    (pw.Replace(Regex(r"[#▁]+"), ""), hf.Replace(HFRegex(r"[#▁]+"), "")),
    _pair("CTC"),
    _pair("CTC", pad_token="a", word_delimiter_token="▁", cleanup=True),
    _pair("CTC", pad_token="", word_delimiter_token="", cleanup=True),
    _pair("CTC", cleanup=False),
]
FIXED_IDS = [json.dumps(ours.to_json(), ensure_ascii=False) for ours, _ in FIXED]


def _sequence_pair(indices):
    return (pw.Sequence([FIXED[i][0] for i in indices]), hf.Sequence([FIXED[i][1] for i in indices]))


FIXED.append(_sequence_pair([12, 5]))     # ByteFallback, Metaspace (a LLaMA-style chain)
FIXED.append(_sequence_pair([18, 12, 13, 15]))  # Replace ▁, ByteFallback, Fuse, Strip
FIXED.append(_sequence_pair([0, 1, 9]))   # ByteLevel then chunk-sensitive decoders
FIXED.append((pw.Sequence([]), hf.Sequence([])))
FIXED_IDS += ["seq-bytefallback-metaspace", "seq-llama", "seq-bytelevel-wordpiece-bpe", "seq-empty"]


@pytest.mark.parametrize("pair", FIXED, ids=FIXED_IDS)
@SETTINGS
@given(tokens=token_lists)
def test_decode_matches_hf(pair, tokens):
    ours, theirs = pair
    expected = hf_decode(theirs, tokens)
    got = ours.decode(tokens)
    if expected is not None:
        assert got == expected, tokens


@pytest.mark.parametrize("pair", FIXED, ids=FIXED_IDS)
def test_decode_empty_and_edge_lists(pair):
    ours, theirs = pair
    for tokens in ([], [""], ["", ""], ["##"], ["▁"], ["<0xE5>", "<0x8F>"], ["Ã", "©"]):
        expected = hf_decode(theirs, tokens)
        if expected is not None:
            assert ours.decode(tokens) == expected, tokens


@SETTINGS
@given(tokens=st.lists(byte_level_tokens, max_size=10))
def test_byte_level_broken_utf8_like_from_utf8_lossy(tokens):
    assert pw.ByteLevel().decode(tokens) == hf.ByteLevel().decode(tokens)


@SETTINGS
@given(data=st.binary(max_size=12), cut=st.integers(0, 12))
def test_byte_level_arbitrary_bytes(data, cut):
    tokens = [bytes_to_byte_chars(data[:cut]), bytes_to_byte_chars(data[cut:])]
    assert pw.ByteLevel().decode(tokens) == hf.ByteLevel().decode(tokens)


@SETTINGS
@given(data=st.binary(max_size=10), extra=st.lists(word_tokens, max_size=3))
def test_byte_fallback_runs(data, extra):
    tokens = [f"<0x{b:02X}>" for b in data] + extra + [f"<0x{b:02x}>" for b in data]
    assert pw.ByteFallback().decode(tokens) == hf.ByteFallback().decode(tokens)


# -- decoders whose options come from hypothesis -------------------------------------

# No lone surrogates: Hugging Face takes a str it can encode as UTF-8, and so does every file format.
_one_char = st.one_of(st.characters(exclude_categories=("Cs",)), st.sampled_from(list(" ▁a#")))
_short = st.one_of(st.text(max_size=3), st.sampled_from(["##", "▁", "</w>", "<pad>", "|", ""]))


@st.composite
def decoder_pairs(draw):
    kind = draw(st.sampled_from(["WordPiece", "Metaspace", "BPEDecoder", "Strip", "Replace", "CTC"]))
    if kind == "WordPiece":
        return _pair(kind, prefix=draw(_short), cleanup=draw(st.booleans()))
    if kind == "Metaspace":
        scheme = draw(st.sampled_from(["always", "never", "first"]))
        return _pair(kind, replacement=draw(_one_char), prepend_scheme=scheme, split=draw(st.booleans()))
    if kind == "BPEDecoder":
        return _pair(kind, suffix=draw(_short))
    if kind == "Strip":
        return _pair(kind, draw(_one_char), draw(st.integers(0, 4)), draw(st.integers(0, 4)))
    if kind == "Replace":
        literal, content = draw(_short), draw(_short)
        return (pw.Replace(literal, content), hf.Replace(literal, content))
    return _pair(kind, pad_token=draw(_short), word_delimiter_token=draw(_short), cleanup=draw(st.booleans()))


@SETTINGS
@given(pair=decoder_pairs(), tokens=token_lists)
def test_decoder_options_match_hf(pair, tokens):
    ours, theirs = pair
    expected = hf_decode(theirs, tokens)
    if expected is not None:
        assert ours.decode(tokens) == expected


@settings(max_examples=80, deadline=None)
@given(chain=st.lists(st.one_of(st.sampled_from(range(len(FIXED) - 4)).map(lambda i: FIXED[i]), decoder_pairs()),
                      min_size=1, max_size=4),
       tokens=token_lists)
def test_random_sequences_match_hf(chain, tokens):
    ours = pw.Sequence([o for o, _ in chain])
    theirs = hf.Sequence([t for _, t in chain])
    expected = hf_decode(theirs, tokens)
    if expected is not None:
        assert ours.decode(tokens) == expected


@pytest.mark.parametrize("pattern", [r"\d+", r"(a|b)c", r"^x", r"x$", r"\bw", r"[^\s]+", r"(?i)abc", r"\p{L}+"])
@SETTINGS
@given(tokens=st.lists(st.text(st.sampled_from(list("abcxw1 23\nABCé漢")), max_size=8), max_size=5))
def test_replace_regex_matches_hf(pattern, tokens):
    ours = pw.Replace(Regex(pattern), "<$>")
    theirs = hf.Replace(HFRegex(pattern), "<$>")
    assert ours.decode(tokens) == theirs.decode(tokens)


def test_strip_where_hf_panics_still_strips():
    # Hugging Face 0.23 panics when the two cuts overlap; we stop the right cut at the left one.
    assert pw.Strip("a", 2, 2).decode_chain(["a", "aa", "aaa", "", "aaaab"]) == ["", "", "", "", "aab"]
    assert pw.Strip("a", 1, 3).decode_chain(["aab", "a"]) == ["ab", ""]


def test_decode_chain_keeps_hf_chunks():
    tokens = ["▁Hey", "<0x21>", "▁", "<0xE5>", "<0x8F>"]
    for ours, theirs in FIXED:
        if hasattr(theirs, "decode_chain"):
            assert ours.decode_chain(tokens) == theirs.decode_chain(tokens)


# -- JSON ----------------------------------------------------------------------------

def hf_json(decoder) -> dict:
    tok = HFTokenizer(hf_models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.decoder = decoder
    return json.loads(tok.to_str())["decoder"]


def hf_load(data: dict):
    tok = HFTokenizer(hf_models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    full = json.loads(tok.to_str())
    full["decoder"] = data
    return HFTokenizer.from_str(json.dumps(full)).decoder


@pytest.mark.parametrize("pair", FIXED, ids=FIXED_IDS)
def test_to_json_is_what_hf_writes(pair):
    ours, theirs = pair
    assert ours.to_json() == hf_json(theirs)


@pytest.mark.parametrize("pair", FIXED, ids=FIXED_IDS)
def test_from_hf_json_round_trips(pair):
    ours, theirs = pair
    data = hf_json(theirs)
    loaded = pw.Decoder.from_json(data)
    assert type(loaded) is type(ours)
    assert loaded == ours
    assert loaded.to_json() == data
    # ... and Hugging Face reads what we write.
    assert hf_json(hf_load(ours.to_json())) == data
    assert pickle.loads(pickle.dumps(ours)) == ours


def test_byte_level_options_round_trip():
    data = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
    assert pw.Decoder.from_json(data).to_json() == hf_json(hf_load(data))


@pytest.mark.parametrize("data", [
    {"type": "Metaspace", "replacement": "▁"},
    {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
    {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True, "prepend_scheme": "first"},
    {"type": "Metaspace", "replacement": "▁", "add_prefix_space": False, "prepend_scheme": "never"},
    {"type": "Metaspace", "replacement": "▁", "split": False, "str_rep": "▁"},
])
def test_metaspace_legacy_fields_like_hf(data):
    assert pw.Decoder.from_json(data).to_json() == hf_json(hf_load(data))


@pytest.mark.parametrize("data, field", [
    ({"type": "WordPiece", "prefix": "##"}, "decoder.cleanup"),
    ({"type": "WordPiece", "prefix": 3, "cleanup": True}, "decoder.prefix"),
    ({"type": "ByteLevel", "add_prefix_space": 1, "trim_offsets": True}, "decoder.add_prefix_space"),
    ({"type": "ByteLevel", "trim_offsets": True}, "decoder.add_prefix_space"),
    ({"type": "Metaspace"}, "decoder.replacement"),
    ({"type": "Metaspace", "replacement": "ab"}, "decoder.replacement"),
    ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"}, "decoder.prepend_scheme"),
    ({"type": "Metaspace", "replacement": "▁", "add_prefix_space": False}, "decoder.add_prefix_space"),
    ({"type": "BPEDecoder"}, "decoder.suffix"),
    ({"type": "BPEDecoder", "suffix": 3}, "decoder.suffix"),
    ({"type": "Strip", "content": " ", "start": 1}, "decoder.stop"),
    ({"type": "Strip", "content": " ", "start": 1, "stop": -1}, "decoder.stop"),
    ({"type": "Strip", "content": "ab", "start": 1, "stop": 1}, "decoder.content"),
    ({"type": "Replace", "content": "x"}, "decoder.pattern"),
    ({"type": "Replace", "pattern": "a", "content": "b"}, "decoder.pattern"),
    ({"type": "Replace", "pattern": {"Glob": "a"}, "content": "b"}, "decoder.pattern"),
    ({"type": "Replace", "pattern": {"Regex": "("}, "content": "b"}, "decoder.pattern.Regex"),
    ({"type": "Replace", "pattern": {"String": "a"}}, "decoder.content"),
    ({"type": "CTC", "pad_token": "x"}, "decoder.word_delimiter_token"),
    ({"type": "Sequence"}, "decoder.decoders"),
    ({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "WordPiece"}]}, "decoder.decoders[1].prefix"),
])
def test_bad_json_names_the_field(data, field):
    with pytest.raises(TokenizerFileError) as info:
        pw.Decoder.from_json(data)
    assert info.value.field == field
    assert f"field '{field}'" in str(info.value) and "Fix:" in str(info.value)
    with pytest.raises(Exception):  # Hugging Face refuses these files too
        hf_load(data)


@pytest.mark.parametrize("data, field, name", [
    ({"type": "Bogus"}, "decoder.type", "Bogus"),
    ({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Nope"}]}, "decoder.decoders[1].type", "Nope"),
])
def test_unknown_type_names_the_field(data, field, name):
    with pytest.raises(UnknownComponentError) as info:
        pw.Decoder.from_json(data)
    assert info.value.field == field
    assert repr(name) in str(info.value) and "ByteFallback" in str(info.value)  # the fix lists known types


def test_constructor_errors():
    with pytest.raises(ConfigError, match="replacement"):
        pw.Metaspace(replacement="ab")
    with pytest.raises(ConfigError, match="prepend_scheme"):
        pw.Metaspace(prepend_scheme="sometimes")
    with pytest.raises(ConfigError, match="content"):
        pw.Strip("ab")
    with pytest.raises(ConfigError, match="left"):
        pw.Strip(" ", -1, 0)
    with pytest.raises(ConfigError, match="invalid regular expression"):
        Regex("(")
    with pytest.raises(InputTypeError):
        pw.Replace(3, "x")
    with pytest.raises(InputTypeError):
        pw.Sequence([pw.Fuse(), "Strip"])
    with pytest.raises(InputTypeError, match=r"tokens\[1\]"):
        pw.Fuse().decode(["a", 3])
    with pytest.raises(InputTypeError):
        pw.Fuse().decode("abc")


def test_strip_accepts_json_names():
    assert pw.Strip(" ", start=2, stop=1) == pw.Strip(" ", 2, 1)
