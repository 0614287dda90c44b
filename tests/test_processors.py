"""Post-processors against Hugging Face ``tokenizers``: encodings, JSON, errors.

Hugging Face encodes the text (without special tokens, optionally truncated
so that there are overflowing parts); we rebuild the same encodings as
pieceworks Encodings, run both post-processors on them and compare every
field (ids, tokens, type ids, offsets, masks, word ids, sequence ids), the
overflowing encodings included, for single inputs and pairs, with and
without special tokens.
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
from tokenizers import models as hf_models  # noqa: E402
from tokenizers import pre_tokenizers as hf_pre  # noqa: E402
from tokenizers import processors as hf  # noqa: E402

from pieceworks import processors as pw  # noqa: E402
from pieceworks.encoding import Encoding  # noqa: E402
from pieceworks.errors import (ConfigError, InputTypeError, TokenizerFileError,  # noqa: E402
                               UnknownComponentError)

from parity import assert_same_encoding  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WORDS = ["hello", "world", "how", "are", "you", "fine", "thanks", "a", "b", "c", ",", ".", "!", "?",
         "héllo", "漢字", "🙂", "naïve"]
VOCAB = {tok: i for i, tok in enumerate(["[UNK]", "[CLS]", "[SEP]", "<s>", "</s>", "[X]", "[Y]"] + WORDS)}


# -- building the same encodings on both sides ---------------------------------------

def word_tokenizer(max_length: int | None, stride: int) -> HFTokenizer:
    tok = HFTokenizer(hf_models.WordLevel(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = hf_pre.Whitespace()
    if max_length is not None:
        tok.enable_truncation(max_length, stride=stride)
    return tok


def vocab_tokenizer(pre_tokenizer, text: str, max_length: int | None, stride: int) -> HFTokenizer:
    """A WordLevel tokenizer whose vocabulary is exactly the pieces of ``text``."""
    pieces = sorted({p for p, _ in pre_tokenizer.pre_tokenize_str(text)})
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, **{p: i + 3 for i, p in enumerate(pieces)}}
    tok = HFTokenizer(hf_models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizer
    if max_length is not None:
        tok.enable_truncation(max_length, stride=stride)
    return tok


def to_pieceworks(hf_encoding) -> Encoding:
    """The same encoding as a pieceworks Encoding (a plain one: no special tokens, no ranges)."""
    enc = Encoding.from_tokens(zip(hf_encoding.ids, hf_encoding.tokens, hf_encoding.offsets),
                               words=list(hf_encoding.word_ids))
    enc.overflowing = [to_pieceworks(o) for o in hf_encoding.overflowing]
    return enc


def check_process(ours, theirs, a, b, add_special_tokens: bool) -> None:
    ours_a, ours_b = to_pieceworks(a), None if b is None else to_pieceworks(b)
    assert_same_encoding(ours_a, a, "input")
    before = (ours_a.copy(), None if ours_b is None else ours_b.copy())
    got = ours.process(ours_a, ours_b, add_special_tokens)
    expected = theirs.process(a, b, add_special_tokens)
    context = f"{ours!r} pair={b is not None} add_special_tokens={add_special_tokens}"
    assert_same_encoding(got, expected, context)
    assert _n_sequences(got) == _n_sequences(expected), context
    assert ours_a == before[0] and ours_b == before[1], "process must not modify its inputs"


def _n_sequences(enc):
    return [enc.n_sequences] + [_n_sequences(o) for o in enc.overflowing]


# -- processor pairs built from the same arguments ---------------------------------------

BERT_SPECIALS = [("[CLS]", 1), ("[SEP]", 2)]
MULTI = {"id": "[X]", "ids": [5, 6], "tokens": ["[X]", "[Y]"]}


def _pair(name, *args, **kwargs):
    return (getattr(pw, name)(*args, **kwargs), getattr(hf, name)(*args, **kwargs))


TEMPLATES = [
    _pair("TemplateProcessing", single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
          special_tokens=BERT_SPECIALS),
    _pair("TemplateProcessing", single=["[CLS]", "$0", "[SEP]"], pair=["[CLS]:2", "$B:1", "[SEP]", "$A:3", "[X]:4"],
          special_tokens=[(1, "[CLS]"), ("[SEP]", 2), MULTI]),
    _pair("TemplateProcessing", single="$1 [X]:7 $A:2", pair="$B $A $A:1 [X]", special_tokens=[MULTI]),
    _pair("TemplateProcessing"),
    _pair("TemplateProcessing", single="$", pair="$b:1 $a"),
]
FIXED = TEMPLATES + [
    _pair("BertProcessing", ("[SEP]", 2), ("[CLS]", 1)),
    _pair("RobertaProcessing", ("</s>", 4), ("<s>", 3)),
    _pair("RobertaProcessing", ("</s>", 4), ("<s>", 3), trim_offsets=False),
    _pair("RobertaProcessing", ("</s>", 4), ("<s>", 3), trim_offsets=True, add_prefix_space=False),
    _pair("ByteLevel"),
    _pair("ByteLevel", trim_offsets=False),
    _pair("ByteLevel", add_prefix_space=False, trim_offsets=True, use_regex=False),
    (pw.Sequence([pw.ByteLevel(), TEMPLATES[0][0]]), hf.Sequence([hf.ByteLevel(), TEMPLATES[0][1]])),
    (pw.Sequence([TEMPLATES[1][0], pw.BertProcessing(("[SEP]", 2), ("[CLS]", 1))]),
     hf.Sequence([TEMPLATES[1][1], hf.BertProcessing(("[SEP]", 2), ("[CLS]", 1))])),
    (pw.Sequence([pw.BertProcessing(("[SEP]", 2), ("[CLS]", 1)), pw.RobertaProcessing(("</s>", 4), ("<s>", 3))]),
     hf.Sequence([hf.BertProcessing(("[SEP]", 2), ("[CLS]", 1)), hf.RobertaProcessing(("</s>", 4), ("<s>", 3))])),
    (pw.Sequence([]), hf.Sequence([])),
]
FIXED_IDS = [json.dumps(ours.to_json())[:90] for ours, _ in FIXED]
TRIMMING = [pair for pair in FIXED if isinstance(pair[0], (pw.RobertaProcessing, pw.ByteLevel, pw.Sequence))]

word_texts = st.lists(st.sampled_from(WORDS + ["unknown"]), max_size=8).flatmap(
    lambda words: st.lists(st.sampled_from([" ", "  ", "\t", "\n", " \u3000 "]), min_size=len(words),
                           max_size=len(words)).map(lambda seps: "".join(s + w for s, w in zip(seps, words))))
truncation = st.one_of(st.just((None, 0)),
                       st.integers(1, 4).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))


@pytest.mark.parametrize("pair", FIXED, ids=FIXED_IDS)
@SETTINGS
@given(text_a=word_texts, text_b=st.one_of(st.none(), word_texts), trunc=truncation, add=st.booleans())
def test_process_matches_hf(pair, text_a, text_b, trunc, add):
    ours, theirs = pair
    tok = word_tokenizer(*trunc)
    a = tok.encode(text_a, add_special_tokens=False)
    b = None if text_b is None else tok.encode(text_b, add_special_tokens=False)
    check_process(ours, theirs, a, b, add)


@pytest.mark.parametrize("pair", FIXED, ids=FIXED_IDS)
def test_num_special_tokens_to_add_matches_hf(pair):
    ours, theirs = pair
    for is_pair in (False, True):
        assert ours.num_special_tokens_to_add(is_pair) == theirs.num_special_tokens_to_add(is_pair)


def test_overflowing_pairs_by_hand():
    # Two overflowing parts on each side: HF pairs every part with every part.
    tok = word_tokenizer(2, 0)
    a = tok.encode("hello world how are you", add_special_tokens=False)
    b = tok.encode("a b c , .", add_special_tokens=False)
    assert len(a.overflowing) == 2 and len(b.overflowing) == 2
    for ours, theirs in FIXED:
        for add in (True, False):
            check_process(ours, theirs, a, b, add)


# -- offset trimming (ByteLevel, Roberta) on byte-level and whitespace-carrying tokens ------

space_heavy = st.text(st.sampled_from(list(" \t\n\r\u3000\u00a0\u2028\u0085\x1c\x1fabé漢🙂.")), max_size=16)
any_text = st.one_of(st.text(max_size=16), space_heavy)
BYTE_LEVEL_PRE = [hf_pre.ByteLevel(add_prefix_space=True), hf_pre.ByteLevel(add_prefix_space=False)]
# Pieces that keep real whitespace at both ends, to exercise the is_whitespace side of trimming.
WHITESPACE_PRE = hf_pre.Split(HFRegex(r"\s*\S+\s*|\s+"), behavior="isolated")


@pytest.mark.parametrize("pair", TRIMMING, ids=[json.dumps(p[0].to_json())[:90] for p in TRIMMING])
@SETTINGS
@given(text_a=any_text, text_b=st.one_of(st.none(), any_text), pre=st.sampled_from([0, 1, 2]),
       trunc=truncation, add=st.booleans())
def test_offset_trimming_matches_hf(pair, text_a, text_b, pre, trunc, add):
    ours, theirs = pair
    pre_tokenizer = WHITESPACE_PRE if pre == 2 else BYTE_LEVEL_PRE[pre]
    tok = vocab_tokenizer(pre_tokenizer, text_a + (text_b or ""), *trunc)
    a = tok.encode(text_a, add_special_tokens=False)
    b = None if text_b is None else tok.encode(text_b, add_special_tokens=False)
    check_process(ours, theirs, a, b, add)


def test_trim_offsets_by_hand():
    # " hello  world" through GPT-2's pre-tokenizer: "Ġhello", "Ġ", "Ġworld".
    for add_prefix_space in (True, False):
        tok = vocab_tokenizer(hf_pre.ByteLevel(add_prefix_space=add_prefix_space), " hello  world", None, 0)
        enc = tok.encode(" hello  world", add_special_tokens=False)
        check_process(pw.ByteLevel(add_prefix_space=add_prefix_space), hf.ByteLevel(add_prefix_space=add_prefix_space),
                      enc, None, True)


# -- JSON ---------------------------------------------------------------------------------

def hf_json(processor) -> dict:
    tok = HFTokenizer(hf_models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.post_processor = processor
    return json.loads(tok.to_str())["post_processor"]


def hf_load(data: dict):
    tok = HFTokenizer(hf_models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    full = json.loads(tok.to_str())
    full["post_processor"] = data
    return HFTokenizer.from_str(json.dumps(full)).post_processor


@pytest.mark.parametrize("pair", FIXED, ids=FIXED_IDS)
def test_to_json_is_what_hf_writes(pair):
    ours, theirs = pair
    assert ours.to_json() == hf_json(theirs)


@pytest.mark.parametrize("pair", FIXED, ids=FIXED_IDS)
def test_from_hf_json_round_trips(pair):
    ours, theirs = pair
    data = hf_json(theirs)
    loaded = pw.PostProcessor.from_json(data)
    assert type(loaded) is type(ours) and loaded == ours
    assert loaded.to_json() == data
    assert hf_json(hf_load(ours.to_json())) == data  # Hugging Face reads what we write
    assert pickle.loads(pickle.dumps(ours)) == ours
    for is_pair in (False, True):
        assert loaded.num_special_tokens_to_add(is_pair) == theirs.num_special_tokens_to_add(is_pair)


def test_template_json_pieces_and_token_table():
    data = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[SEP]": {"id": "[SEP]", "ids": [2], "tokens": ["[SEP]"]},
                               "[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]}}}
    ours = pw.PostProcessor.from_json(data)
    assert ours.to_json() == hf_json(hf_load(data))
    # The Python constructor takes the same JSON forms.
    same = pw.TemplateProcessing(single=data["single"], pair=data["pair"], special_tokens=data["special_tokens"])
    assert same == ours
    tok = word_tokenizer(None, 0)
    check_process(ours, hf_load(data), tok.encode("hello you"), tok.encode("a b"), True)


@pytest.mark.parametrize("data, field", [
    ({"type": "TemplateProcessing", "single": [], "pair": []}, "post_processor.special_tokens"),
    ({"type": "TemplateProcessing", "single": "$A", "pair": [], "special_tokens": {}}, "post_processor.single"),
    ({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "C", "type_id": 0}}], "pair": [],
      "special_tokens": {}}, "post_processor.single[0].Sequence.id"),
    ({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A"}}], "pair": [], "special_tokens": {}},
     "post_processor.single[0].Sequence.type_id"),
    ({"type": "TemplateProcessing", "single": [], "pair": [{"Thing": {"id": "A", "type_id": 0}}],
      "special_tokens": {}}, "post_processor.pair[0]"),
    ({"type": "TemplateProcessing", "single": [], "pair": [], "special_tokens": {"X": {"id": "X", "ids": ["1"],
                                                                                      "tokens": ["x"]}}},
     "post_processor.special_tokens.X.ids"),
    ({"type": "BertProcessing", "sep": ["[SEP]", 1]}, "post_processor.cls"),
    ({"type": "BertProcessing", "sep": ["[SEP]", 1, 3], "cls": ["[CLS]", 2]}, "post_processor.sep"),
    ({"type": "BertProcessing", "sep": ["[SEP]", -1], "cls": ["[CLS]", 2]}, "post_processor.sep"),
    ({"type": "ByteLevel", "trim_offsets": False}, "post_processor.add_prefix_space"),
    ({"type": "ByteLevel", "add_prefix_space": "yes", "trim_offsets": False}, "post_processor.add_prefix_space"),
    ({"type": "Sequence"}, "post_processor.processors"),
    ({"type": "Sequence", "processors": [{"type": "ByteLevel", "add_prefix_space": True}]},
     "post_processor.processors[0].trim_offsets"),
])
def test_bad_json_names_the_field(data, field):
    with pytest.raises(TokenizerFileError) as info:
        pw.PostProcessor.from_json(data)
    assert info.value.field == field
    assert f"field '{field}'" in str(info.value) and "Fix:" in str(info.value)
    with pytest.raises(Exception):  # Hugging Face refuses these files too
        hf_load(data)


def test_roberta_json_needs_its_options():
    data = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True}
    with pytest.raises(TokenizerFileError) as info:
        pw.PostProcessor.from_json(data)
    assert info.value.field == "post_processor.add_prefix_space"


def test_json_template_with_unknown_special_token_names_it():
    data = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[MISSING]", "type_id": 0}}],
            "pair": [], "special_tokens": {}}
    with pytest.raises(TokenizerFileError, match=r"\[MISSING\]") as info:
        pw.PostProcessor.from_json(data)
    assert info.value.field == "post_processor.single"


def test_unknown_type():
    with pytest.raises(UnknownComponentError) as info:
        pw.PostProcessor.from_json({"type": "Sequence", "processors": [{"type": "Bogus"}]})
    assert info.value.field == "post_processor.processors[0].type"


# -- constructor errors, compared with Hugging Face's --------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"single": "[CLS] $A [SEP]"},                                    # specials missing
    {"single": "$A", "pair": "$A [SEP]:1 $B", "special_tokens": []},  # [SEP] missing
    {"single": "$C"},
    {"single": "$A:"},
    {"single": "$A:x"},
    {"single": "a:b:c", "special_tokens": [("a", 1)]},
    {"single": "$A", "pair": "$A $A:1"},                             # pair without $B
    {"single": "$A", "pair": "$0 $1"},
    {"single": "$A  [SEP]", "special_tokens": [("[SEP]", 1)]},       # double space: an empty token name
])
def test_template_errors_where_hf_errors(kwargs):
    with pytest.raises(ConfigError):
        pw.TemplateProcessing(**kwargs)
    with pytest.raises(Exception):
        hf.TemplateProcessing(**kwargs)


def test_missing_special_token_is_named():
    with pytest.raises(ConfigError, match=r"'\[SEP\]'"):
        pw.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1)])


@pytest.mark.parametrize("text", ["$A:+1", "$+2", "$b", "$1:3", "[CLS]:+0", "$"])
def test_piece_syntax_matches_hf(text):
    ours = pw.TemplateProcessing(single=text, special_tokens=[("[CLS]", 1)])
    theirs = hf.TemplateProcessing(single=text, special_tokens=[("[CLS]", 1)])
    assert ours.to_json()["single"] == hf_json(theirs)["single"]


def test_constructor_type_errors():
    with pytest.raises(InputTypeError):
        pw.BertProcessing("[SEP]", ("[CLS]", 1))
    with pytest.raises(InputTypeError):
        pw.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets="yes")
    with pytest.raises(InputTypeError):
        pw.TemplateProcessing(special_tokens=[("[CLS]", "1")])
    with pytest.raises(ConfigError, match="same length"):
        pw.TemplateProcessing(special_tokens=[{"id": "x", "ids": [1, 2], "tokens": ["x"]}])
    with pytest.raises(InputTypeError):
        pw.Sequence([pw.ByteLevel(), "Bert"])
    with pytest.raises(InputTypeError):
        pw.ByteLevel().process([1, 2])


def test_single_template_with_b_is_refused_at_processing():
    proc = pw.PostProcessor.from_json({"type": "TemplateProcessing", "pair": [], "special_tokens": {},
                                       "single": [{"Sequence": {"id": "B", "type_id": 0}}]})
    with pytest.raises(ConfigError, match=r"\$B"):
        proc.process(Encoding.from_tokens([(1, "a", (0, 1))]))
