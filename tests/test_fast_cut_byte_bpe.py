"""The byte-level BPE plan for pre-tokenizers the kernel has no scanner for (fast/cut_byte_bpe.py).

Held to Hugging Face on real vocabularies (Llama 3, Qwen3 with its NFC)
under pre-tokenizers their files do not have: another digits rule, three
Splits in a row, other behaviours, an inverted Split, StarCoder's Digits
before GPT-2's ByteLevel, Punctuation. And to the general path, field by
field, on a small vocabulary and any text (hypothesis). And a CLIP-style
tokenizer (NFC, Replace(\\s+), Lowercase; a Split that keeps only its matches;
the end-of-word suffix "</w>"), made and trained by Hugging Face here, against
Hugging Face.
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pieceworks import Regex, Tokenizer
from pieceworks.errors import ConfigError
from pieceworks.byte_level import BYTE_TO_CHAR
from pieceworks.fast import plain_from_raw
from pieceworks.fast.byte_bpe import ByteBpePlan
from pieceworks.fast.cut_byte_bpe import CutByteBpePlan, piece_ends
from pieceworks.models import BPE
from pieceworks.normalizers import NFC
from pieceworks.pre_tokenizers import ByteLevel, Digits, Punctuation, Sequence, Split
from parity import (assert_same_as_hugging_face_on_corpora, assert_same_as_hugging_face_on_lines, assert_same_encoding,
                    general_path)

tokenizers = pytest.importorskip("tokenizers")

CORPORA = ["corpora/english/botchan.txt", "corpora/code/llama.cpp_ggml_c_cpp.txt",
           "corpora/multilingual/ja_wagahaiwa_nekodearu.txt", "corpora/multilingual/th_wisesight_social_media.txt"]


def _split(pattern: str, behavior: str = "Isolated", invert: bool = False) -> dict:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert}


def _variants(document: dict) -> dict[str, dict]:
    """The file with pre-tokenizers no file in shared/data has: each a new top level and
    pre-tokenizer, the rest shared with ``document`` (read only: a deep copy of a 10 MB file
    each was most of these tests' time)."""
    splits = document["pre_tokenizer"]["pretokenizers"]
    pattern = splits[0]["pattern"]["Regex"]
    digits = pattern.replace(r"\p{N}{1,3}", r"\p{N}{1,2}").replace(r"|\p{N}|", r"|\p{N}{1,2}|")
    assert digits != pattern
    made = {
        "digits": [_split(digits)] + splits[1:],
        "three splits": [_split(r"\p{N}{1,3}"), _split("[一-龥\u3040-ゟ]+")] + splits,
        "merged with previous": [_split(pattern, "MergedWithPrevious")] + splits[1:],
        "merged with next, inverted": [_split(r"\s+", "MergedWithNext", True)] + splits[1:],
        "contiguous": [_split(r"\p{P}", "Contiguous")] + splits,
        # StarCoder's and Command R's: each digit apart, then GPT-2's pattern.
        "digits, then GPT-2's pattern": [{"type": "Digits", "individual_digits": True},
                                         {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                          "use_regex": True}],
        "punctuation merged, digits together": [{"type": "Punctuation", "behavior": "MergedWithPrevious"},
                                                {"type": "Digits", "individual_digits": False}] + splits,
    }
    return {name: {**document, "pre_tokenizer": {**document["pre_tokenizer"], "pretokenizers": pre}}
            for name, pre in made.items()}


# A tokenizer.json with nothing but a pre-tokenizer (which each library reads from it).
_SHELL = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
          "pre_tokenizer": None, "post_processor": None, "decoder": None,
          "model": {"type": "WordLevel", "vocab": {}, "unk_token": "[UNK]"}}


def _each_variant(document: dict, names=None):
    """``(name, ours, theirs)`` for each variant of :func:`_variants` (those ``names``): the file
    loaded once by each library, then given each variant's pre-tokenizer, as each library reads it
    from JSON, and no truncation (loading the 10 MB file again per variant was most of the time)."""
    text = json.dumps(document)
    ours, theirs = Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    for name, variant in _variants(document).items():
        if names is not None and name not in names:
            continue
        shell = json.dumps({**_SHELL, "pre_tokenizer": variant["pre_tokenizer"]})
        ours.pre_tokenizer = Tokenizer.from_str(shell).pre_tokenizer
        theirs.pre_tokenizer = tokenizers.Tokenizer.from_str(shell).pre_tokenizer
        ours.no_truncation()
        theirs.no_truncation()
        assert ours.pre_tokenizer.to_json() == variant["pre_tokenizer"], name
        yield name, ours, theirs


@pytest.mark.parametrize("file", ["llama3", "qwen3"])
def test_real_vocabularies_under_other_splits_match_hugging_face(shared_data, file):
    document = json.loads((shared_data / f"tokenizers/hf_tokenizer_json/{file}/tokenizer.json").read_text())
    udhr = [json.loads(line)["text"][:300] for line in
            (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").open()][:100]
    udhr = [unicodedata.normalize("NFD" if k % 2 else "NFC", text) for k, text in enumerate(udhr)]
    for name, ours, theirs in _each_variant(document):
        assert type(ours._current_plan()) is CutByteBpePlan, name
        assert_same_as_hugging_face_on_corpora(ours, theirs, shared_data, CORPORA, limit=40_000)
        # Half the lines decomposed: Qwen's NFC changes them.
        assert_same_as_hugging_face_on_lines(ours, theirs, udhr)


def test_neox_with_digits_apart_matches_hugging_face(shared_data):
    # GPT-NeoX's file: NFC, and added tokens (runs of spaces) matched after normalizing, which the
    # plan's aligned view finds in the gaps of a text NFC changes.
    document = json.loads((shared_data / "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json").read_text())
    document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                                      document["pre_tokenizer"]]}
    ours, theirs = Tokenizer.from_str(json.dumps(document)), tokenizers.Tokenizer.from_str(json.dumps(document))
    assert type(ours._current_plan()) is CutByteBpePlan
    assert_same_as_hugging_face_on_corpora(ours, theirs, shared_data, CORPORA, limit=40_000)
    udhr = [json.loads(line)["text"][:300] for line in
            (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").open()][:100]
    lines = [unicodedata.normalize("NFD", text) + "    x  12" for text in udhr]
    assert_same_as_hugging_face_on_lines(ours, theirs, lines)
    # One text a call: a text NFC changes that holds no token, before NFC or after, is the plan's.
    plain = [unicodedata.normalize("NFD", text) for text in udhr if "  " not in text]
    one = ours._current_plan().one_text_unchanged(ours._added.finder)[0]
    assert [text for text in plain if one(text) is None] == []
    assert one("e\u0301  x") is None       # (a run of spaces: GPT-NeoX's added token)
    assert_same_as_hugging_face_on_lines(ours, theirs, plain)


def test_a_pattern_the_kernel_scans_stays_with_the_scanning_plan(shared_data):
    path = str(shared_data / "tokenizers/hf_tokenizer_json/llama3/tokenizer.json")
    assert type(Tokenizer.from_file(path)._current_plan()) is ByteBpePlan


# -- a small vocabulary, against the general path and Hugging Face ---------------------------

_VOCAB = {c: i for i, c in enumerate(BYTE_TO_CHAR)}
_MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("1", "2"), ("Ã", "©"), ("e", "Ì"), ("Ġ", "ĠĠ"), ("Ġ", "Ġ")]
for _a, _b in _MERGES:
    _VOCAB.setdefault(_a + _b, len(_VOCAB))
_MERGES = [(a, b) for a, b in _MERGES if a in _VOCAB and b in _VOCAB]


def _small(pre, normalizer=None) -> Tokenizer:
    tok = Tokenizer(BPE(dict(_VOCAB), list(_MERGES)))
    tok.pre_tokenizer = pre
    tok.normalizer = normalizer
    return tok


PRE_TOKENIZERS = {
    "digits": lambda: Sequence([Split(Regex(r"\p{N}{1,2}| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"), "isolated"),
                                ByteLevel(False, use_regex=False)]),
    "two splits, merged": lambda: Sequence([Split(Regex(r"\d"), "merged_with_previous"),
                                            Split(" ", "merged_with_next"), ByteLevel(False, use_regex=False)]),
    "empty matches": lambda: Sequence([Split(Regex(r"x*"), "isolated"), ByteLevel(False, use_regex=False)]),
    "digits, GPT-2": lambda: Sequence([Digits(True), ByteLevel(False, use_regex=True)]),
    "punctuation, digits": lambda: Sequence([Punctuation("contiguous"), Digits(), ByteLevel(False, use_regex=False)]),
    # (Splits that remove: the tokens spell the kept pieces' bytes, each piece's offsets its own.)
    "spaces removed": lambda: Sequence([Split(" ", "removed"), ByteLevel(False, use_regex=True)]),
    "matches kept": lambda: Sequence([Split(Regex(r"\p{L}+|\p{N}|[^\s\p{L}\p{N}]+"), "removed", invert=True),
                                      ByteLevel(False, use_regex=True)]),
    "punctuation removed": lambda: Sequence([Punctuation("removed"), ByteLevel(False, use_regex=False)]),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=40) | st.text(st.sampled_from(list("the 12 3xé\u0301\u0323中 \n!")), max_size=40),
       kind=st.sampled_from(sorted(PRE_TOKENIZERS)), nfc=st.booleans())
def test_any_text_matches_the_general_path(text, kind, nfc):
    normalizer = NFC() if nfc else None
    fast = _small(PRE_TOKENIZERS[kind](), normalizer)
    assert type(fast._current_plan()) is CutByteBpePlan
    general = general_path(lambda: _small(PRE_TOKENIZERS[kind](), normalizer))
    assert_same_encoding(fast.encode(text), general.encode(text), repr(text))
    assert [e.ids for e in fast.encode_batch([text, text + " 12"])] == \
        [general.encode(text).ids, general.encode(text + " 12").ids]


@settings(max_examples=100, deadline=None)
@given(text=st.text(st.sampled_from(list("the 12 3xé\u0301中 \n!?")), max_size=40))
def test_small_vocabulary_matches_hugging_face(text):
    tok = _small(PRE_TOKENIZERS["two splits, merged"]())
    theirs = tokenizers.Tokenizer.from_str(tok.to_str())
    assert_same_encoding(tok.encode(text), theirs.encode(text), repr(text))


def test_stages_it_does_not_take():
    prefix = _small(Sequence([Split(" ", "isolated"), ByteLevel(True, use_regex=False)]))
    gpt2_alone = _small(ByteLevel(False))       # (the scanning plan's)
    for tok in (prefix, gpt2_alone):
        assert type(tok._current_plan()) is not CutByteBpePlan


def test_an_option_changed_later_is_read():
    tok = _small(PRE_TOKENIZERS["digits"]())
    assert tok.encode("the 123").tokens[-2:] == ["12", "3"]
    single = r"\p{N}| ?\p{L}+|\s+"
    tok.pre_tokenizer.pretokenizers[0].pattern = Regex(single)
    general = general_path(lambda: _small(Sequence([Split(Regex(single), "isolated"),
                                                    ByteLevel(False, use_regex=False)])))
    assert type(tok._current_plan()) is CutByteBpePlan
    assert_same_encoding(tok.encode("the 123"), general.encode("the 123"))
    assert tok.encode("the 123").tokens[-3:] == ["1", "2", "3"]


def test_piece_ends_cover_the_text():
    splits = [Split(Regex(r"\d+"), "isolated"), Split(" ", "merged_with_next")]
    assert piece_ends("ab 12 c", splits) == [2, 3, 5, 7]
    assert piece_ends("", splits) == []
    # (What a Split removes is one negated entry a stretch.)
    assert piece_ends(" ab  12", [Split(" ", "removed"), Split(Regex(r"\d"), "isolated")]) == [-1, 3, -5, 6, 7]


# -- a chain of Splits, cut and encoded in one kernel call (onig_spans.Cutter) ----------------

_PATTERNS = [r"\d", r"\p{N}{1,2}", r"a*", r"x*", " ", r" ?\p{L}+", r"\b", "^", "$", "(?=a)", r"\s+(?!\S)",
             r"[^\s\p{L}\p{N}]+", "b|", r"[一-龥]+", r"\X"]
_BEHAVIORS = ["isolated", "merged_with_previous", "merged_with_next", "contiguous", "removed"]
_CHARS = list("ab x1\n2é日\u0301.,!") + ["\ud800", "\U0001F600"]


def _stage(spec):
    """A pre-tokenizer stage from a hypothesis draw: a Split's (pattern, behavior, invert), or a name."""
    if spec == "digits apart":
        return Digits(individual_digits=True)
    if spec == "digits together":
        return Digits(individual_digits=False)
    if spec in _BEHAVIORS:
        return Punctuation(spec)
    pattern, behavior, invert = spec
    return Split(Regex(pattern), behavior, invert)


@settings(max_examples=400, deadline=None)
@given(stages=st.lists(st.tuples(st.sampled_from(_PATTERNS), st.sampled_from(_BEHAVIORS), st.booleans())
                       | st.sampled_from(["digits apart", "digits together"] + _BEHAVIORS), min_size=1, max_size=3),
       gpt2=st.booleans(),
       text=st.text(st.sampled_from(_CHARS), max_size=30) | st.text(max_size=20))
def test_the_c_cutter_cuts_as_the_stages_do(stages, gpt2, text):
    from pieceworks._regex import _region_address
    from pieceworks.fast.cut_byte_bpe import _cutter_of

    stages = [_stage(spec) for spec in stages] + ([ByteLevel(False, use_regex=True)] if gpt2 else [])
    assert _cutter_of(stages).piece_ends(text, _region_address()) == piece_ends(text, stages)


@pytest.mark.parametrize("stage", [Digits(individual_digits=True), Digits(individual_digits=False),
                                   Punctuation("isolated"), Punctuation("contiguous"), ByteLevel(use_regex=True)],
                         ids=["digits apart", "digits together", "punctuation", "punctuation runs", "GPT-2"])
def test_the_c_cutter_cuts_every_code_point_as_the_stage_does(stage):
    """Digits and Punctuation become Oniguruma classes made from their tables, and ByteLevel
    GPT-2's pattern on Oniguruma: the pieces of each code point between letters, and of runs of
    them, equal the stage's own."""
    from pieceworks._regex import _region_address
    from pieceworks.fast.cut_byte_bpe import _cutter_of

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for text in ("a".join(chars), "".join(chars), " ".join(chars)):
        assert _cutter_of([stage]).piece_ends(text, _region_address()) == piece_ends(text, [stage])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.text(st.sampled_from(list("the 12 3xé\u0301\u0323中 \n!") + ["\ud800"]), max_size=30)
                      | st.text(max_size=20), max_size=6),
       kind=st.sampled_from(sorted(PRE_TOKENIZERS)), nfc=st.booleans())
def test_a_batch_in_one_kernel_call_matches_the_general_path(texts, kind, nfc):
    normalizer = NFC() if nfc else None
    plan = _small(PRE_TOKENIZERS[kind](), normalizer)._current_plan()
    general = general_path(lambda: _small(PRE_TOKENIZERS[kind](), normalizer))
    for text, result in zip(texts, plan.encode_raw_batch(texts), strict=True):
        want = general.encode(text)
        assert plain_from_raw(result)[:4] == (want.ids, want.tokens, want.offsets, want.words), repr(text)


def test_a_search_that_fails_in_a_batch_raises_the_general_paths_error():
    tok = _small(Sequence([Split(Regex(r"(a+)+$"), "isolated"), ByteLevel(False, use_regex=False)]))
    assert tok._current_plan().encode_raw_batch(["ab", "a" * 40 + "b"])[1] is None
    with pytest.raises(ConfigError, match="retry-limit"):
        tok.encode_batch(["ab", "a" * 40 + "b"])


@pytest.mark.parametrize("file", ["llama3", "qwen3"])
def test_texts_holding_added_tokens_match_hugging_face(shared_data, file):
    """Chat turns: the kernel splits the added tokens out and cuts and encodes each stretch between
    them (encode_around_batch); texts NFC changes, and those truncation cuts, go the long way."""
    document = json.loads((shared_data / f"tokenizers/hf_tokenizer_json/{file}/tokenizer.json").read_text())
    specials = [token["content"] for token in document["added_tokens"]][:3]
    prose = (shared_data / CORPORA[0]).read_text().splitlines()[:300]
    udhr = [json.loads(line)["text"][:200] for line in
            (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").open()][:60]
    lines = [f"{specials[0]}user{specials[1]}\n\n{line}{specials[2]}" for line in prose if line.strip()]
    lines += [f"{specials[k % 3]}{unicodedata.normalize('NFD' if k % 2 else 'NFC', text)} 12345{specials[(k + 1) % 3]}"
              for k, text in enumerate(udhr)]
    lines += [specials[0], specials[0] * 2 + "x", "a" + specials[1], ""]
    for name, ours, theirs in _each_variant(document, ("digits", "three splits", "digits, then GPT-2's pattern")):
        assert hasattr(ours._current_plan(), "encode_around_batch")
        assert_same_as_hugging_face_on_lines(ours, theirs, lines)
        for one in lines[:20] + lines[-70:]:
            assert_same_encoding(ours.encode(one), theirs.encode(one), repr(one[:60]))
        ours.enable_truncation(16)
        theirs.enable_truncation(16)
        for mine, hf, line in zip(ours.encode_batch(lines), theirs.encode_batch(lines), lines):
            assert_same_encoding(mine, hf, f"truncated: {line[:60]!r}")


# -- CLIP: its normalizer, a Split that keeps only its matches, the end-of-word suffix --------------

_CLIP_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"
_CLIP: dict = {}


def _clip_json(every_byte_suffixed: bool = True) -> str:
    """A CLIP-style tokenizer.json, made and trained by Hugging Face on the embedded corpus (as
    transformers' converter builds CLIP's), with every byte's suffixed token, as CLIP's vocabulary
    has them (``every_byte_suffixed``; else as the trainer left it)."""
    if every_byte_suffixed not in _CLIP:
        from itertools import islice

        from pieceworks.corpus import iter_default_corpus
        from tokenizers import Regex as HfRegex
        from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

        tok = tokenizers.Tokenizer(models.BPE(continuing_subword_prefix="", end_of_word_suffix="</w>",
                                              unk_token="<|endoftext|>"))
        tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(HfRegex(r"\s+"), " "),
                                               normalizers.Lowercase()])
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(HfRegex(_CLIP_SPLIT), behavior="removed", invert=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False)])
        tok.train_from_iterator(list(islice(iter_default_corpus(), 3000)), trainers.BpeTrainer(
            vocab_size=1500, special_tokens=["<|startoftext|>", "<|endoftext|>"], end_of_word_suffix="</w>",
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
        tok.post_processor = processors.RobertaProcessing(("<|endoftext|>", 1), ("<|startoftext|>", 0),
                                                          add_prefix_space=False, trim_offsets=False)
        tok.decoder = decoders.ByteLevel()
        document = json.loads(tok.to_str())
        if every_byte_suffixed:
            vocab = document["model"]["vocab"]
            for char in BYTE_TO_CHAR:
                vocab.setdefault(char + "</w>", len(vocab))
        _CLIP[every_byte_suffixed] = json.dumps(document)
    return _CLIP[every_byte_suffixed]


CLIP_TEXTS = ["A photo of a cat", "  Two   spaces\tand\ttabs\n", "it's THE cat's toy, isn't it?", "x = f(y) + 12;",
              "caf\u00e9 cafe\u0301 \u00c5ngstr\u00f6m", "\u4e2d\u6587\u3000\u65e5\u672c", "emoji \U0001F600!!",
              "<|startoftext|>a prompt<|endoftext|>", "", "   ", "''s 'T '''s"]


def _clip_pair():
    if "pair" not in _CLIP:
        text = _clip_json()
        _CLIP["pair"] = (Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text))
    return _CLIP["pair"]


def test_clip_takes_the_plan_and_matches_hugging_face(shared_data):
    from pieceworks.fast.normalized_first import NormalizedFirstPlan

    text = _clip_json()
    ours, theirs = Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    plan = ours._current_plan()
    assert type(plan) is NormalizedFirstPlan and type(plan.inner) is CutByteBpePlan
    assert plan.inner._prepare() is not None
    assert_same_as_hugging_face_on_lines(ours, theirs, CLIP_TEXTS)
    assert_same_as_hugging_face_on_corpora(ours, theirs, shared_data, CORPORA, limit=60_000)
    pairs = list(zip(CLIP_TEXTS, reversed(CLIP_TEXTS)))
    for mine, hf in zip(ours.encode_batch(pairs), theirs.encode_batch(pairs)):
        assert_same_encoding(mine, hf, "pairs")
    ids = [e.ids for e in theirs.encode_batch(CLIP_TEXTS)]     # (decoding is the decoder's, not the kernel's)
    assert ours.decode_batch(ids) == theirs.decode_batch(ids)
    for tok in (ours, theirs):      # (CLIP's 77 tokens, padded; 12 here)
        tok.enable_truncation(12)
        tok.enable_padding(pad_id=1, pad_token="<|endoftext|>", length=12)
    for mine, hf, line in zip(ours.encode_batch(CLIP_TEXTS * 2), theirs.encode_batch(CLIP_TEXTS * 2), CLIP_TEXTS * 2):
        assert_same_encoding(mine, hf, repr(line))


@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.sampled_from(list("ab Tc'sdt\t\n 1.,!?é\u0301\u00a0\u3000中") + ["\U0001F600", "'ll",
                                                                                         "<|endoftext|>"]),
                     max_size=40).map("".join) | st.text(max_size=20))
def test_clip_on_any_text_matches_hugging_face(text):
    ours, theirs = _clip_pair()
    assert_same_encoding(ours.encode(text), theirs.encode(text), repr(text))
    assert [e.ids for e in ours.encode_batch([text, text.upper()])] == [e.ids for e in theirs.encode_batch(
        [text, text.upper()])]


def test_clip_without_every_suffixed_byte_goes_the_general_way_and_matches_hugging_face():
    """A byte whose suffixed token the vocabulary lacks is the unknown token at a word's end in Hugging
    Face: the kernel cannot spell that, so such a vocabulary takes the general path."""
    text = _clip_json(every_byte_suffixed=False)
    ours, theirs = Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    plan = ours._current_plan()
    assert plan is None or getattr(plan, "inner", plan)._prepare() is None
    assert_same_as_hugging_face_on_lines(ours, theirs, CLIP_TEXTS + ["\u0100\u0101 \u03a9"])


def test_the_suffixed_kernel_refuses_dropout_and_a_second_mark():
    from pieceworks.fast.cut_byte_bpe import build_suffixed_kernel

    ours = Tokenizer.from_str(_clip_json())
    kernel, _ = build_suffixed_kernel(ours.model, "</w>")
    with pytest.raises(ValueError, match="only once"):
        kernel.mark_piece_ends()
    ours.model.dropout, ours.model.seed = 0.5, 3
    with pytest.raises(ValueError, match="not with marked piece ends"):
        kernel.use_dropout(ours.model._get_encoder())
    # Under dropout the suffix is the general path's (no kernel spells it there): the same draws.
    general = general_path(lambda: Tokenizer.from_str(_clip_json()))
    general.model.dropout, general.model.seed = 0.5, 3
    plan = ours._current_plan()
    assert plan is None or getattr(plan, "inner", plan)._prepare() is None
    for text in CLIP_TEXTS:
        assert_same_encoding(ours.encode(text), general.encode(text), repr(text))


def test_every_char_clips_white_space_pattern_matches_but_the_space_is_unprintable():
    """The CLIP normalizer's shortcut (fast/normalized_first.py): a printable text with no two spaces
    in a row has no run for Replace(\\s+, " ") to change."""
    from pieceworks.fast.normalized_first import WHITE_SPACE_RUNS

    every_char = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    spans = Regex(WHITE_SPACE_RUNS).spans(every_char)
    assert spans
    for start, end in spans:
        for char in every_char[start:end]:
            assert char == " " or not char.isprintable(), hex(ord(char))


def test_clip_with_ignore_merges_looks_words_up_without_their_suffix_as_hugging_face():
    """``ignore_merges`` looks a word up as it is, not suffixed (Hugging Face's BPE): not the kernel's
    way with the suffix, so the general path's."""
    document = json.loads(_clip_json())
    document["model"]["ignore_merges"] = True
    text = json.dumps(document)
    ours, theirs = Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    assert_same_as_hugging_face_on_lines(ours, theirs, CLIP_TEXTS + ["a", "the cat"])
