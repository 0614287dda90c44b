"""The readable WordPiece twin reproduces the textbook walkthroughs step for step."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers.pre_tokenizers import BertPreTokenizer

from pieceworks.reference.wordpiece import (MergeStep, count_pairs, count_symbols, encode_word,
                                            encode_word_with_offsets, kept_chars, merge_pair, merged_token,
                                            pair_scores, split_word, train)

HUG_COUNTS = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

COURSE_CORPUS = [
    "This is the Hugging Face Course.",
    "This chapter is about tokenization.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]

CROATIAN_CORPUS = [
    "Ovo su šeste vježbe iz Uvoda u teorijsko računarstvo.",
    "Na ovim vježbama raditi ćete tokenizaciju i jednostavnu analizu teksta.",
    "Ovo poglavlje raspravlja o WordPiece tokenizatoru.",
    "Dobrodošli!",
]


def bert_words(text: str) -> list[str]:
    # Only used to cut text the way BERT does; the WordPiece under test is ours.
    return [w for w, _ in BertPreTokenizer().pre_tokenize_str(text)]


def word_counts(corpus: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for text in corpus:
        for word in bert_words(text):
            counts[word] = counts.get(word, 0) + 1
    return counts


def tokenize(text: str, vocab: list[str]) -> list[str]:
    return [token for word in bert_words(text) for token in encode_word(word, vocab)]


# -- the "hug" walkthrough ------------------------------------------------------
def test_hug_corpus_splits_and_alphabet():
    assert split_word("hugs") == ["h", "##u", "##g", "##s"]
    result = train(HUG_COUNTS, vocab_size=0)
    assert result.vocab == ["##g", "##n", "##s", "##u", "b", "h", "p"]


def test_hug_corpus_first_merges_follow_the_formula():
    steps: list[MergeStep] = []
    result = train(HUG_COUNTS, vocab_size=10, trace=steps)
    assert [s.pair for s in steps] == [("##g", "##s"), ("h", "##u"), ("hu", "##gs")]
    assert [s.token for s in steps] == ["##gs", "hu", "hugs"]
    # 5 / (20 * 5), then every "##u" pair ties at 1/36 and the first one met wins,
    # then ("hu", "##gs") at 5 / (15 * 5) beats the prose's ("hu", "##g") at 10 / (15 * 15).
    assert steps[0].score == Fraction(1, 20)
    assert (steps[1].pair_count, steps[1].left_count, steps[1].right_count) == (15, 15, 36)
    assert steps[1].score == Fraction(1, 36)
    assert (steps[2].pair_count, steps[2].left_count, steps[2].right_count) == (5, 15, 5)
    assert steps[2].score == Fraction(5, 15 * 5) > Fraction(10, 15 * 15)
    assert result.vocab[7:] == ["##gs", "hu", "hugs"]


def test_hug_corpus_second_step_is_a_tie_among_all_u_pairs():
    splits = {w: split_word(w) for w in HUG_COUNTS}
    splits = {w: merge_pair(s, ("##g", "##s"), "##gs") for w, s in splits.items()}
    scores = pair_scores(count_pairs(splits, HUG_COUNTS), count_symbols(splits, HUG_COUNTS))
    assert {pair for pair, score in scores.items() if score == max(scores.values())} == {
        ("h", "##u"), ("##u", "##g"), ("p", "##u"), ("##u", "##n"), ("b", "##u"), ("##u", "##gs")}
    assert next(iter(scores)) == ("h", "##u")


def test_hug_vocabulary_encodes_as_the_walkthrough():
    vocab = ["b", "h", "p", "##g", "##n", "##s", "##u", "##gs", "hu", "hug", "[UNK]"]
    assert encode_word("hugs", vocab) == ["hug", "##s"]
    assert encode_word("bugs", vocab) == ["b", "##u", "##gs"]
    assert encode_word("mug", vocab) == ["[UNK]"]
    assert encode_word("bum", vocab) == ["[UNK]"]
    assert encode_word("pugs", vocab) == ["p", "##u", "##gs"]


# -- the 4-sentence course corpus at vocab 70 --------------------------------------
def test_course_corpus_learns_the_walkthrough_vocabulary():
    result = train(word_counts(COURSE_CORPUS), vocab_size=70, special_tokens=BERT_SPECIALS)
    assert result.vocab[:5] == BERT_SPECIALS
    assert result.vocab[5:45] == sorted(result.vocab[5:45])
    assert result.vocab[45:] == [
        "ab", "##fu", "Fa", "Fac", "##ct", "##ful", "##full", "##fully", "Th", "ch", "##hm", "cha", "chap",
        "chapt", "##thm", "Hu", "Hug", "Hugg", "sh", "th", "is", "##thms", "##za", "##zat", "##ut"]
    assert len(result.vocab) == 70


def test_course_corpus_first_scores():
    counts = word_counts(COURSE_CORPUS)
    splits = {w: split_word(w) for w in counts}
    scores = pair_scores(count_pairs(splits, counts), count_symbols(splits, counts))
    assert list(scores.items())[:4] == [(("T", "##h"), Fraction(1, 8)), (("##h", "##i"), Fraction(3, 88)),
                                        (("##i", "##s"), Fraction(3, 110)), (("i", "##s"), Fraction(1, 10))]
    assert max(scores, key=scores.get) == ("a", "##b") and scores["a", "##b"] == Fraction(1, 5)


def test_course_corpus_encodes_as_the_walkthrough():
    vocab = train(word_counts(COURSE_CORPUS), vocab_size=70, special_tokens=BERT_SPECIALS).vocab
    assert encode_word("Hugging", vocab) == ["Hugg", "##i", "##n", "##g"]
    assert encode_word("HOgging", vocab) == ["[UNK]"]
    assert tokenize("This is the Hugging Face course!", vocab) == [
        "Th", "##i", "##s", "is", "th", "##e", "Hugg", "##i", "##n", "##g", "Fac", "##e", "c", "##o", "##u",
        "##r", "##s", "##e", "[UNK]"]


# -- the Croatian notebook at vocab 100 --------------------------------------------
def test_croatian_corpus_learns_the_notebook_vocabulary():
    result = train(word_counts(CROATIAN_CORPUS), vocab_size=100, special_tokens=BERT_SPECIALS)
    assert len(result.vocab) == 100
    learned = result.vocab[48:]
    assert learned[:10] == ["##žb", "##gl", "##šl", "##dP", "su", "##ču", "vj", "##čun", "an", "##lj"]
    assert learned[-6:] == ["Ovo", "Uvo", "Uvod", "##orijsk", "##orijsko", "##rstvo"]
    assert result.merges[0].pair == ("##ž", "##b") and result.merges[0].score == Fraction(1, 3)


def test_croatian_corpus_encodes_as_the_notebook():
    vocab = train(word_counts(CROATIAN_CORPUS), vocab_size=100, special_tokens=BERT_SPECIALS).vocab
    assert encode_word("vježba", vocab) == ["vj", "##e", "##žb", "##a"]
    assert tokenize("Ovo su vježbe iz Uvoda u teorijsko računarstvo", vocab) == [
        "Ovo", "su", "vj", "##e", "##žb", "##e", "iz", "Uvod", "##a", "u", "t", "##e", "##orijsko", "r", "##a",
        "##čun", "##a", "##rstvo"]


# -- the helpers on their own -------------------------------------------------------
def test_trace_true_prints_each_merge(capsys):
    train(HUG_COUNTS, vocab_size=8, trace=True)
    assert capsys.readouterr().out.strip() == "merge '##g' + '##s' -> '##gs'  score 1/20 = 5 / (20 * 5)"


def test_frequency_scoring_and_smallest_id_ties():
    # Hugging Face's layout: chars, then prefixed chars as met; the most frequent pair wins.
    result = train(HUG_COUNTS, vocab_size=13, scoring="frequency", tie_break="smallest_ids")
    assert result.vocab[:11] == ["b", "g", "h", "n", "p", "s", "u", "##u", "##g", "##n", "##s"]
    assert [s.pair for s in result.merges] == [("##u", "##g"), ("##u", "##n")]
    assert result.merges[0].score == 20


def test_min_frequency_excludes_rare_pairs():
    result = train({"ab": 1, "cd": 3}, vocab_size=100, min_frequency=2)
    assert [s.token for s in result.merges] == ["cd"]


def test_limit_alphabet_drops_rare_chars_from_words():
    assert kept_chars({"abc": 1, "bc": 5}, limit_alphabet=2) == ["b", "c"]
    assert kept_chars({"ab": 1}, initial_alphabet=["z"], limit_alphabet=2) == ["a", "z"]
    assert split_word("abc", usable={"b", "c"}) == ["##b", "##c"]


def test_merged_token_drops_only_a_leading_prefix():
    assert merged_token("hu", "##g") == "hug"
    assert merged_token("a", "b##") == "ab##"
    assert merged_token("a", "@@b", prefix="@@") == "ab"


def test_encode_respects_max_input_chars_per_word():
    assert encode_word_with_offsets("aaa", ["a", "##a"], max_input_chars_per_word=2) == [("[UNK]", 0, 3)]
    assert encode_word_with_offsets("aa", ["a", "##a"], max_input_chars_per_word=2) == [("a", 0, 1), ("##a", 1, 2)]


def test_a_bare_prefix_never_matches_after_the_first_char():
    # The candidate after the start is prefix + at least one char of the word.
    assert encode_word("a#", ["a", "##", "#", "###"]) == ["a", "###"]
    assert encode_word("##", ["#", "##"]) == ["##"]


WORDS = st.text(alphabet="abc", min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(WORDS, st.integers(1, 5), max_size=8), st.integers(0, 30))
def test_training_invariants(counts, vocab_size):
    result = train(counts, vocab_size)
    assert len(result.vocab) == len(set(result.vocab))
    assert len(result.vocab) <= max(vocab_size, len(train(counts, 0).vocab))
    for step in result.merges:
        assert step.token == merged_token(*step.pair)
        assert step.score == Fraction(step.pair_count, step.left_count * step.right_count)
        assert step.token in result.vocab
    # Every word still splits into vocabulary tokens, so every training word encodes without [UNK].
    for word in counts:
        assert "[UNK]" not in encode_word(word, result.vocab)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "##a", "##b"]), max_size=10))
def test_merge_pair_is_left_to_right_and_non_overlapping(split):
    merged = merge_pair(split, ("##a", "##a"), "##aa")
    assert "".join(merged) == "".join(split).replace("##a##a", "##aa") or "##a##a" not in "".join(split)
    assert len(merged) == len(split) - sum(1 for t in merged if t == "##aa")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab#", min_size=1, max_size=4), max_size=8), st.text(alphabet="ab#", max_size=10))
def test_encoding_covers_the_word_with_vocabulary_tokens(tokens, word):
    vocab = set(tokens) | {"[UNK]"}
    pieces = encode_word_with_offsets(word, vocab)
    if not word:
        assert pieces == []
        return
    if pieces == [("[UNK]", 0, len(word))]:
        return  # some position matched nothing
    assert [s for _, s, _ in pieces] == [0] + [e for _, _, e in pieces[:-1]]
    assert (pieces[-1][2] if pieces else 0) == len(word)
    for i, (token, start, end) in enumerate(pieces):
        assert token in vocab
        assert token == (word[start:end] if i == 0 else "##" + word[start:end])
