"""tokenizer.json in and out: pieceworks ↔ Hugging Face tokenizers ↔ transformers.

Both directions, on tokenizers built here and on the real tokenizer.json
files in ../shared/data (each model type as it lands; files whose model
type pieceworks lacks are skipped, saying so).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tokenizers as hf
from hypothesis import given, settings
from hypothesis import strategies as st

import pieceworks as pw
from pieceworks._component import Fields
from pieceworks.added_vocabulary import AddedToken
from pieceworks.errors import PieceworksError, TokenizerFileError, UnknownComponentError

from parity import assert_same_encoding

TEXTS = [
    "Hello, World! hello world.",
    "the quick brown fox",
    "Ünïcödé çafé naïve ﬁne ＡＢＣ１２ ①",
    "中文字符 and 日本語 テキスト 한국어",
    "  leading and trailing  ",
    "[CLS] special [SEP] <mask> tokens",
    "",
    "emoji 👍🏽 👨‍👩‍👧 text",
]
WORDS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "<mask>", "hello", "world", "the", "quick", "brown", "fox",
         ",", "!", ".", "and", "text", "中", "文", "tokens", "special", "café", "cafe", "fine"]


def hf_wordlevel(normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None):
    tok = hf.Tokenizer(hf.models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre_tokenizer is not None:
        tok.pre_tokenizer = pre_tokenizer
    if post_processor is not None:
        tok.post_processor = post_processor
    if decoder is not None:
        tok.decoder = decoder
    tok.add_special_tokens(["[CLS]", "[SEP]", "[PAD]", hf.AddedToken("<mask>", lstrip=True, special=True)])
    tok.add_tokens(["fox", hf.AddedToken("brown", single_word=True)])
    return tok


def configurations():
    """Pipelines built with Hugging Face's classes; each must load in pieceworks."""
    n, p, pp, d = hf.normalizers, hf.pre_tokenizers, hf.processors, hf.decoders
    bert_post = pp.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                      special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    return {
        "bare": dict(),
        "whitespace": dict(pre_tokenizer=p.Whitespace()),
        "bert-like": dict(normalizer=n.BertNormalizer(lowercase=True), pre_tokenizer=p.BertPreTokenizer(),
                          post_processor=bert_post, decoder=d.WordPiece()),
        "nfkc-lower": dict(normalizer=n.Sequence([n.NFKC(), n.Lowercase()]), pre_tokenizer=p.WhitespaceSplit()),
        "strip-accents": dict(normalizer=n.Sequence([n.NFD(), n.StripAccents(), n.Lowercase()]),
                              pre_tokenizer=p.Sequence([p.WhitespaceSplit(), p.Punctuation()])),
        "metaspace": dict(pre_tokenizer=p.Metaspace(), decoder=d.Metaspace()),
        "bytelevel": dict(pre_tokenizer=p.ByteLevel(add_prefix_space=False), post_processor=pp.ByteLevel(),
                          decoder=d.ByteLevel()),
        "split-digits": dict(normalizer=n.Replace("  ", " "),
                             pre_tokenizer=p.Sequence([p.Split(" ", "merged_with_next"), p.Digits(True)])),
        "bert-processing": dict(pre_tokenizer=p.Whitespace(), post_processor=pp.BertProcessing(("[SEP]", 2),
                                                                                              ("[CLS]", 1))),
    }


@pytest.fixture(params=sorted(configurations()))
def hf_tokenizer(request):
    return hf_wordlevel(**configurations()[request.param])


def assert_same_everywhere(ours: pw.Tokenizer, theirs: hf.Tokenizer) -> None:
    for text in TEXTS:
        assert_same_encoding(ours.encode(text), theirs.encode(text), repr(text))
        assert_same_encoding(ours.encode(text, "pair " + text), theirs.encode(text, "pair " + text), repr(text))
        ids = theirs.encode(text).ids
        for skip in (True, False):
            assert ours.decode(ids, skip_special_tokens=skip) == theirs.decode(ids, skip_special_tokens=skip)


def test_huggingface_file_loads_in_pieceworks_and_encodes_identically(hf_tokenizer, tmp_path):
    path = tmp_path / "tokenizer.json"
    hf_tokenizer.save(str(path))
    ours = pw.Tokenizer.from_file(str(path))
    assert_same_everywhere(ours, hf_tokenizer)
    # and what we write is what they wrote (same fields, same values)
    assert json.loads(ours.to_str()) == json.loads(hf_tokenizer.to_str())


def test_pieceworks_file_loads_in_huggingface_and_transformers(hf_tokenizer, tmp_path):
    from transformers import PreTrainedTokenizerFast

    ours = pw.Tokenizer.from_str(hf_tokenizer.to_str())
    ours.enable_truncation(64)
    path = tmp_path / "ours.json"
    ours.save(str(path))
    theirs = hf.Tokenizer.from_file(str(path))
    assert_same_everywhere(ours, theirs)
    fast = PreTrainedTokenizerFast(tokenizer_file=str(path))
    for text in TEXTS:
        expected = ours.encode(text)
        got = fast(text, return_offsets_mapping=True)
        assert got["input_ids"] == expected.ids
        assert [tuple(o) for o in got["offset_mapping"]] == expected.offsets


def test_save_and_load_round_trip_is_byte_identical(hf_tokenizer, tmp_path):
    ours = pw.Tokenizer.from_str(hf_tokenizer.to_str())
    ours.enable_padding(length=40, pad_to_multiple_of=8, direction="left", pad_id=3, pad_token="[PAD]")
    ours.enable_truncation(40, stride=2, strategy="only_first", direction="left")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    ours.save(str(first))
    pw.Tokenizer.from_file(str(first)).save(str(second))
    assert first.read_bytes() == second.read_bytes()
    # Hugging Face writes the same bytes for the same tokenizer
    hf.Tokenizer.from_file(str(first)).save(str(second))
    assert json.loads(first.read_text()) == json.loads(second.read_text())


# -- the real files in ../shared/data -----------------------------------------------
def real_tokenizer_files(shared_data: Path) -> list[Path]:
    files = sorted((shared_data / "tokenizers").rglob("tokenizer.json"))
    return [f for f in files if f.stat().st_size < 40_000_000]


def supported_model_types() -> set[str]:
    return set(pw.models.Model._registry)


def test_real_tokenizer_files_round_trip_where_the_model_exists(shared_data):
    inputs = [json.loads(line)["text"] for line in
              (shared_data / "testvectors/generated/inputs.jsonl").read_text().splitlines()][:200]
    checked = []
    for path in real_tokenizer_files(shared_data):
        data = json.loads(path.read_text(encoding="utf-8"))
        model_type = data["model"].get("type") or pw.models._base._guess_model_type(data["model"])
        if model_type not in supported_model_types():
            continue
        theirs = hf.Tokenizer.from_file(str(path))
        theirs.no_padding()
        theirs.no_truncation()
        ours = pw.Tokenizer.from_file(str(path))
        ours.no_padding()
        ours.no_truncation()
        for text in inputs:
            assert_same_encoding(ours.encode(text), theirs.encode(text), f"{path.name}: {text!r}")
        # Floats too: both read them with serde_json's parser (formats/serde_float.py).
        assert json.loads(ours.to_str()) == json.loads(theirs.to_str()), path.name
        checked.append(path)
    if not checked:
        pytest.skip(f"no tokenizer.json in ../shared/data uses a model type pieceworks has yet "
                    f"({sorted(supported_model_types())})")


# -- bad files -----------------------------------------------------------------------
GOOD = hf_wordlevel(pre_tokenizer=hf.pre_tokenizers.Whitespace()).to_str()


def mutate(fn):
    data = json.loads(GOOD)
    fn(data)
    return json.dumps(data)


BAD_FILES = [
    ("", TokenizerFileError, "empty"),
    (GOOD[: len(GOOD) // 2], TokenizerFileError, "truncated"),
    ("[1, 2]", TokenizerFileError, "expected an object"),
    (mutate(lambda d: d.pop("model")), TokenizerFileError, "'model': missing"),
    (mutate(lambda d: d["model"].update(type="Nope")), UnknownComponentError, "model.type"),
    (mutate(lambda d: d.update(pre_tokenizer={"type": "Whitespacey"})), UnknownComponentError, "Whitespacey"),
    (mutate(lambda d: d["model"].update(vocab=[1, 2])), TokenizerFileError, "model.vocab"),
    (mutate(lambda d: d["model"]["vocab"].update({"dup": 0})), TokenizerFileError, "id 0 is used"),
    (mutate(lambda d: d["added_tokens"][0].update(special="yes")), TokenizerFileError, r"added_tokens\[0\].special"),
    (mutate(lambda d: d.update(truncation={"max_length": -3})), TokenizerFileError, "max_length"),
    (mutate(lambda d: d.update(padding={"strategy": "Sometimes"})), TokenizerFileError, "strategy"),
]


@pytest.mark.parametrize("text, error, needle", BAD_FILES, ids=[case[2] for case in BAD_FILES])
def test_bad_tokenizer_json_names_the_problem_and_the_fix(text, error, needle, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(error, match=needle) as info:
        pw.Tokenizer.from_file(str(path))
    assert "bad.json" in str(info.value)
    assert "Fix:" in str(info.value)


def test_missing_and_non_text_files_are_clear_errors(tmp_path):
    with pytest.raises(TokenizerFileError, match="file not found"):
        pw.Tokenizer.from_file(str(tmp_path / "nope.json"))
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x80\x81\x82")
    with pytest.raises(TokenizerFileError, match="not UTF-8"):
        pw.Tokenizer.from_file(str(binary))
    with pytest.raises(TokenizerFileError, match="folder"):
        pw.Tokenizer.from_file(str(tmp_path))


def test_save_into_a_missing_folder_is_a_clear_error_and_leaves_nothing(tmp_path):
    tok = pw.Tokenizer.from_str(GOOD)
    with pytest.raises(pw.errors.FileWriteError, match="does not exist"):
        tok.save(str(tmp_path / "no" / "such" / "t.json"))


def test_save_replaces_atomically_and_leaves_no_temporary_files(tmp_path):
    tok = pw.Tokenizer.from_str(GOOD)
    path = tmp_path / "t.json"
    path.write_text("old")
    tok.save(str(path))
    assert json.loads(path.read_text())["model"]["type"] == "WordLevel"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


_ENTRY_VALUES = st.sampled_from([True, False, None, 0, 1, 7, "x", "<s>", 1.0, [], {}])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["id", "content", "special", "single_word", "lstrip", "rstrip", "normalized",
                                        "extra"]), _ENTRY_VALUES, max_size=8)
       | st.fixed_dictionaries({"id": st.integers(0, 9), "content": st.text(max_size=4)},
                               optional={k: st.booleans() for k in ("special", "single_word", "lstrip", "rstrip",
                                                                    "normalized")}))
def test_an_added_token_entry_reads_as_through_its_fields(entry):
    # Well-formed entries are read directly (Gemma 3 has 6k); any entry must give what the Fields
    # way gives: the same token and id, or the same error.
    from pieceworks.formats import hf_json

    def through_fields():
        f = Fields(entry, "added_tokens[0]", "t.json")
        special = f.get("special", bool, False)
        token = AddedToken(f.get("content", str), single_word=f.get("single_word", bool, False),
                           lstrip=f.get("lstrip", bool, False), rstrip=f.get("rstrip", bool, False),
                           normalized=f.get("normalized", bool, not special), special=special)
        return f.get("id", int), token

    def outcome(read):
        try:
            tid, token = read()
        except PieceworksError as exc:
            return type(exc), str(exc)
        return tid, token.content, token.single_word, token.lstrip, token.rstrip, token.normalized, token.special
    assert outcome(lambda: hf_json._added_token_of(entry, 0, "t.json")) == outcome(through_fields)
