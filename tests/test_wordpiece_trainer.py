"""WordPieceTrainer: merge for merge the reference, and Hugging Face's trainer in "frequency" mode."""

from __future__ import annotations

import warnings
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer
from tokenizers import models as hf_models
from tokenizers import pre_tokenizers as hf_pre_tokenizers
from tokenizers import trainers as hf_trainers

from pieceworks import Tokenizer
from pieceworks._kernels.wordpiece_train import compare_scores
from pieceworks.errors import ConfigError, InputTypeError
from pieceworks.models import WordPiece
from pieceworks.reference import wordpiece as reference
from pieceworks.trainers import WordPieceTrainer

from test_reference_wordpiece import (BERT_SPECIALS, COURSE_CORPUS, CROATIAN_CORPUS, HUG_COUNTS, bert_words,
                                      word_counts)


def learn(counts, **options) -> list[str]:
    return WordPieceTrainer(show_progress=False, **options).learn(counts)


def reference_vocab(counts, trainer: WordPieceTrainer) -> list[str]:
    return reference.train(
        counts, trainer.vocab_size, special_tokens=[t.content for t in trainer.special_tokens],
        continuing_subword_prefix=trainer.continuing_subword_prefix,
        end_of_word_suffix=trainer.end_of_word_suffix, min_frequency=trainer.min_frequency,
        limit_alphabet=trainer.limit_alphabet, initial_alphabet=trainer.initial_alphabet,
        scoring=trainer.scoring, tie_break="first_seen" if trainer.tie_break == "first_seen" else "smallest_ids").vocab


# -- the walkthroughs, through the fast trainer ------------------------------------
def test_course_corpus_vocabulary_and_layout():
    vocab = learn(word_counts(COURSE_CORPUS), vocab_size=70, special_tokens=BERT_SPECIALS)
    assert vocab[:5] == BERT_SPECIALS
    assert vocab[5:45] == sorted(vocab[5:45]) and vocab[5] == "##a" and vocab[44] == "y"
    assert vocab[45:] == [
        "ab", "##fu", "Fa", "Fac", "##ct", "##ful", "##full", "##fully", "Th", "ch", "##hm", "cha", "chap",
        "chapt", "##thm", "Hu", "Hug", "Hugg", "sh", "th", "is", "##thms", "##za", "##zat", "##ut"]


def test_croatian_corpus_vocabulary():
    vocab = learn(word_counts(CROATIAN_CORPUS), vocab_size=100, special_tokens=BERT_SPECIALS)
    assert vocab[48:58] == ["##žb", "##gl", "##šl", "##dP", "su", "##ču", "vj", "##čun", "an", "##lj"]
    assert vocab[-6:] == ["Ovo", "Uvo", "Uvod", "##orijsk", "##orijsko", "##rstvo"]


def test_hug_corpus_trace_has_the_walkthrough_counts():
    steps: list = []
    WordPieceTrainer(vocab_size=10, show_progress=False).learn(HUG_COUNTS, steps)
    assert steps == [("##g", "##s", "##gs", 5, 20, 5), ("h", "##u", "hu", 15, 15, 36),
                     ("hu", "##gs", "hugs", 5, 15, 5)]


def test_trained_model_encodes_the_walkthrough_sentence():
    model = WordPiece()
    special = WordPieceTrainer(vocab_size=70, special_tokens=BERT_SPECIALS, show_progress=False).train(
        model, word_counts(COURSE_CORPUS))
    assert [t.content for t in special] == BERT_SPECIALS and all(t.special for t in special)
    tokens = [t.value for w in bert_words("This is the Hugging Face course!") for t in model.tokenize(w)]
    assert tokens == ["Th", "##i", "##s", "is", "th", "##e", "Hugg", "##i", "##n", "##g", "Fac", "##e", "c",
                      "##o", "##u", "##r", "##s", "##e", "[UNK]"]


# -- the kernel against the reference, on any corpus ---------------------------------
# Small alphabets and small counts make ties everywhere; '#' makes tokens that
# collide with prefixed ones; 'é' and an astral char check code points.
WORD = st.text(alphabet=st.sampled_from("abc#é\U0001F600"), min_size=1, max_size=7)
COUNTS = st.dictionaries(WORD, st.integers(1, 4), max_size=10)
OPTIONS = st.fixed_dictionaries({
    "vocab_size": st.integers(0, 45),
    "min_frequency": st.sampled_from([0, 0, 2, 3]),
    "special_tokens": st.sampled_from([[], ["[UNK]"], ["a", "[UNK]"]]),
    "limit_alphabet": st.sampled_from([None, None, 1, 2, 3]),
    "initial_alphabet": st.sampled_from([[], ["z"], ["a", "q"]]),
    "continuing_subword_prefix": st.sampled_from(["##", "##", "#", "", "a"]),
    "end_of_word_suffix": st.sampled_from([None, None, "</w>"]),
    "scoring": st.sampled_from(["likelihood", "likelihood", "frequency"]),
    "tie_break": st.sampled_from(["first_seen", "first_seen", "huggingface"]),
})


@settings(max_examples=400, deadline=None)
@given(COUNTS, OPTIONS)
@example({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, {"vocab_size": 30})
@example({"##a": 2, "a##a": 1, "#": 3}, {"vocab_size": 40})
def test_same_merges_as_the_reference(counts, options):
    trainer = WordPieceTrainer(show_progress=False, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert trainer.learn(counts) == reference_vocab(counts, trainer)


@settings(max_examples=100, deadline=None)
@given(COUNTS)
def test_trace_matches_the_reference_scores(counts):
    steps: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        WordPieceTrainer(vocab_size=40, show_progress=False).learn(counts, steps)
    expected = reference.train(counts, 40).merges
    assert [(a, b, t) for a, b, t, *_ in steps] == [(s.pair[0], s.pair[1], s.token) for s in expected]
    assert [step[3:] for step in steps] == [(s.pair_count, s.left_count, s.right_count) for s in expected]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 2**63 - 1), min_size=6, max_size=6))
def test_scores_compare_exactly(values):
    n1, a1, b1, n2, a2, b2 = values
    diff = Fraction(n1, a1 * b1) - Fraction(n2, a2 * b2)
    assert compare_scores(n1, a1, b1, n2, a2, b2) == (diff > 0) - (diff < 0)


def test_near_equal_scores_are_not_float_ties():
    # score(a ##b) = N / ((N+X)(N+X+2)) beats score(c ##d) = N / (N+X+1)^2 by one part in 4e18:
    # the same double. Met first, (c, ##d) would win a float tie; the exact score picks (a, ##b).
    n, x, z = 10**9, 10**9, 10**15
    counts = {"cd": n, "c": x + 1, "zd": x + 1, "ab": n, "a": x, "zb": x + 2, "z": z}
    left = Fraction(n, (n + x) * (n + x + 2))
    right = Fraction(n, (n + x + 1) ** 2)
    assert left > right and float(left) == float(right)
    trainer = WordPieceTrainer(show_progress=False)
    start = len(trainer.initial_vocab(counts))
    trainer.vocab_size = start + 1
    assert trainer.learn(counts)[start:] == ["ab"] == reference.train(counts, start + 1).vocab[start:]


# -- Hugging Face's trainer, in "frequency" mode ----------------------------------
def hf_train(lines: list[str], **options) -> list[str]:
    tok = HfTokenizer(hf_models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = hf_pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(lines, hf_trainers.WordPieceTrainer(show_progress=False, **options))
    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.get)


def bert_counts(lines: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    pre = hf_pre_tokenizers.BertPreTokenizer()
    for line in lines:
        for word, _ in pre.pre_tokenize_str(line):
            counts[word] = counts.get(word, 0) + 1
    return counts


def assert_same_as_hf(lines: list[str], **options) -> None:
    """Same vocabulary, ids included, once both number the prefixed chars the same way.

    Hugging Face numbers "##x" in the order of a randomly seeded hash map;
    we take its numbering (the first len(initial) ids) and must then make
    exactly its merges.
    """
    theirs = hf_train(lines, **options)
    counts = bert_counts(lines)
    trainer = WordPieceTrainer(show_progress=False, scoring="frequency", **options)
    initial = trainer.initial_vocab(counts)
    assert sorted(theirs[:len(initial)]) == sorted(initial)
    n_fixed = len(trainer.special_tokens)  # then the chars, one-char tokens; marked ones ("##a", "a</w>") follow
    while n_fixed < len(initial) and len(initial[n_fixed]) == 1:
        n_fixed += 1
    assert theirs[:n_fixed] == initial[:n_fixed]  # specials and chars: deterministic in both
    assert trainer.learn(counts, initial_vocab=theirs[:len(initial)]) == theirs


def read_lines(path, limit: int) -> list[str]:
    return path.read_text(encoding="utf-8-sig").splitlines()[:limit]


def test_frequency_mode_matches_hf_on_the_course_corpus():
    assert_same_as_hf(COURSE_CORPUS, vocab_size=70, special_tokens=BERT_SPECIALS)


def test_frequency_mode_matches_hf_on_botchan(shared_data):
    lines = read_lines(shared_data / "corpora/english/botchan.txt", 5000)
    assert_same_as_hf(lines, vocab_size=3000, special_tokens=BERT_SPECIALS)


def test_frequency_mode_matches_hf_with_options(shared_data):
    lines = read_lines(shared_data / "corpora/english/botchan.txt", 2000)
    assert_same_as_hf(lines, vocab_size=1500, min_frequency=3, special_tokens=["[UNK]"],
                      initial_alphabet=["ü", "ß"], continuing_subword_prefix="@@", end_of_word_suffix="</w>")


def test_frequency_mode_matches_hf_with_limit_alphabet(shared_data):
    lines = read_lines(shared_data / "corpora/english/botchan.txt", 3000)
    counts = bert_counts(lines)
    chars: dict[str, int] = {}
    for word, n in counts.items():
        for c in word:
            chars[c] = chars.get(c, 0) + n
    ranked = sorted(chars.values(), reverse=True)
    limit = next(k for k in range(40, len(ranked)) if ranked[k - 1] != ranked[k])  # a cut without ties
    assert_same_as_hf(lines, vocab_size=2000, limit_alphabet=limit, special_tokens=["[UNK]"])


def test_frequency_mode_matches_hf_on_korean(shared_data):
    lines = read_lines(shared_data / "corpora/multilingual/ko_nsmc_movie_reviews.txt", 3000)
    assert_same_as_hf(lines, vocab_size=4000, special_tokens=BERT_SPECIALS)


def test_too_small_vocab_size_keeps_the_alphabet_and_warns_like_hf_keeps_it():
    counts = word_counts(COURSE_CORPUS)
    for scoring in ("likelihood", "frequency"):
        trainer = WordPieceTrainer(vocab_size=5, special_tokens=BERT_SPECIALS, show_progress=False, scoring=scoring)
        with pytest.warns(UserWarning, match="vocab_size=5 is smaller than the"):
            vocab = trainer.learn(counts)
        assert vocab == trainer.initial_vocab(counts)
    assert sorted(vocab) == sorted(hf_train(COURSE_CORPUS, vocab_size=5, special_tokens=BERT_SPECIALS))


# -- layout, options and errors ----------------------------------------------------------
def test_likelihood_layout_is_specials_sorted_alphabet_then_learned():
    trainer = WordPieceTrainer(vocab_size=9, special_tokens=["[UNK]", "[PAD]"], initial_alphabet=["z"],
                               show_progress=False)
    vocab = trainer.learn({"hug": 10, "hugs": 5})
    assert vocab == ["[UNK]", "[PAD]", "##g", "##s", "##u", "##z", "h", "z", "hu"]


def test_frequency_layout_is_hugging_faces():
    vocab = learn({"hug": 10, "hugs": 5}, vocab_size=9, scoring="frequency", special_tokens=["[UNK]"])
    assert vocab == ["[UNK]", "g", "h", "s", "u", "##u", "##g", "##s", "hu"]


def test_special_token_equal_to_a_char_keeps_its_place():
    assert learn({"ab": 1}, vocab_size=0, special_tokens=["a"]) == ["a", "##b"]


def test_zero_counts_and_empty_words_are_ignored():
    assert learn({"ab": 0, "": 5, "c": 1}, vocab_size=10) == ["c"]


def test_training_through_the_tokenizer_keeps_model_options():
    tok = Tokenizer(WordPiece(unk_token="<unk>", max_input_chars_per_word=7))
    trainer = WordPieceTrainer(vocab_size=20, special_tokens=["<unk>"], continuing_subword_prefix="@@",
                               show_progress=False)
    tok.train_from_counts(HUG_COUNTS, trainer)
    model = tok.model
    assert model.unk_token == "<unk>" and model.max_input_chars_per_word == 7
    assert model.continuing_subword_prefix == "@@"
    assert [t.value for t in model.tokenize("hugs")] == ["hugs"]
    assert model.get_vocab() == {t: i for i, t in enumerate(trainer.learn(HUG_COUNTS))}


def test_model_get_trainer_is_a_default_wordpiece_trainer():
    trainer = WordPiece().get_trainer()
    assert isinstance(trainer, WordPieceTrainer)
    assert (trainer.vocab_size, trainer.continuing_subword_prefix, trainer.scoring) == (30000, "##", "likelihood")


def test_defaults_and_tie_break_follow_the_scoring():
    assert WordPieceTrainer().tie_break == "first_seen"
    assert WordPieceTrainer(scoring="frequency").tie_break == "huggingface"
    trainer = WordPieceTrainer(initial_alphabet=["abc", "", "z"])
    assert trainer.initial_alphabet == ["a", "z"]
    assert "WordPieceTrainer(vocab_size=30000" in repr(trainer)


@pytest.mark.parametrize("options, error", [
    ({"vocab_size": -1}, ConfigError),
    ({"vocab_size": 1.5}, InputTypeError),
    ({"vocab_size": None}, InputTypeError),
    ({"min_frequency": True}, InputTypeError),
    ({"limit_alphabet": -3}, ConfigError),
    ({"scoring": "bpe"}, ConfigError),
    ({"tie_break": "random"}, ConfigError),
    ({"continuing_subword_prefix": None}, InputTypeError),
    ({"end_of_word_suffix": 3}, InputTypeError),
    ({"initial_alphabet": "abc"}, InputTypeError),
    ({"special_tokens": [3]}, InputTypeError),
])
def test_bad_options_are_refused_with_the_fix(options, error):
    with pytest.raises(error):
        WordPieceTrainer(**options)


@pytest.mark.parametrize("counts, error", [
    (["a", "b"], InputTypeError),
    ({b"a": 1}, InputTypeError),
    ({"a": -1}, InputTypeError),
    ({"a": 1.0}, InputTypeError),
    ({"a": 2**62, "bc": 2**62}, ConfigError),
])
def test_bad_counts_are_refused(counts, error):
    with pytest.raises(error):
        WordPieceTrainer(show_progress=False).learn(counts)


def test_initial_vocab_must_be_a_reordering():
    trainer = WordPieceTrainer(show_progress=False)
    with pytest.raises(ConfigError, match="initial_vocab"):
        trainer.learn({"ab": 1}, initial_vocab=["a", "##c"])
    assert trainer.learn({"ab": 1}, initial_vocab=["a", "##b"]) == ["a", "##b", "ab"]


def test_larger_corpus_trains_a_consistent_vocabulary(shared_data):
    lines = read_lines(shared_data / "corpora/english/botchan.txt", 4000)
    counts = bert_counts(lines)
    vocab = learn(counts, vocab_size=3000, special_tokens=["[UNK]"])
    assert len(vocab) == 3000 == len(set(vocab))
    model = WordPiece({t: i for i, t in enumerate(vocab)})
    # Every training word splits into learned tokens: none becomes [UNK].
    assert all(t.value != "[UNK]" for word in counts for t in model.tokenize(word))


def test_train_refuses_another_model():
    from pieceworks.models import WordLevel

    with pytest.raises(ConfigError, match="trains WordPiece models"):
        WordPieceTrainer(show_progress=False).train(WordLevel(), {"a": 1})
