"""The readable BPE twin reproduces the textbook walkthroughs step for step."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers.pre_tokenizers import ByteLevel

from pieceworks.reference.bpe import (MergeStep, alphabet_of, count_pairs, encode_word, merge_pair,
                                      train_bpe)

HUG_COUNTS = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}

COURSE_CORPUS = [
    "This is the Hugging Face Course.",
    "This chapter is about tokenization.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]


def gpt2_words(text: str) -> list[str]:
    # Only used to cut the text the way GPT-2 does; the BPE under test is ours.
    return [w for w, _ in ByteLevel(add_prefix_space=False).pre_tokenize_str(text)]


def course_word_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for text in COURSE_CORPUS:
        for word in gpt2_words(text):
            counts[word] = counts.get(word, 0) + 1
    return counts


def test_hug_corpus_learns_the_walkthrough_merges():
    steps: list[MergeStep] = []
    result = train_bpe(HUG_COUNTS, vocab_size=10, trace=steps)
    assert result.merges == [("u", "g"), ("u", "n"), ("h", "ug")]
    assert [(s.token, s.count) for s in steps] == [("ug", 20), ("un", 16), ("hug", 15)]
    assert list(result.vocab) == ["b", "g", "h", "n", "p", "s", "u", "ug", "un", "hug"]


def test_hug_corpus_encodes_with_unknown_chars():
    merges = [("u", "g"), ("u", "n"), ("h", "ug")]
    vocab = {token: i for i, token in enumerate(["[UNK]", "b", "g", "h", "n", "p", "s", "u"])}
    for token in ("ug", "un", "hug"):
        vocab[token] = len(vocab)
    encode = lambda word: encode_word(word, vocab, merges, unk_token="[UNK]")  # noqa: E731
    assert encode("bug") == ["b", "ug"]
    assert encode("mug") == ["[UNK]", "ug"]
    assert encode("thug") == ["[UNK]", "hug"]
    assert encode("unhug") == ["un", "hug"]


def test_unknown_chars_are_dropped_without_an_unknown_token():
    assert encode_word("mug", {"u": 0, "g": 1, "ug": 2}, [("u", "g")]) == ["ug"]


def test_course_corpus_learns_the_19_walkthrough_merges():
    result = train_bpe(course_word_counts(), vocab_size=50, special_tokens=["<|endoftext|>"])
    assert result.merges == [
        ("Ġ", "t"), ("i", "s"), ("e", "r"), ("Ġ", "a"), ("Ġt", "o"), ("e", "n"), ("T", "h"), ("Th", "is"),
        ("o", "u"), ("s", "e"), ("Ġto", "k"), ("Ġtok", "en"), ("n", "d"), ("Ġ", "is"), ("Ġt", "h"),
        ("Ġth", "e"), ("i", "n"), ("Ġa", "b"), ("Ġtoken", "i"),
    ]
    assert len(result.vocab) == 50
    assert next(iter(result.vocab)) == "<|endoftext|>"
    assert list(result.vocab)[1:31] == sorted(set("".join(course_word_counts())))


def test_course_corpus_tokenizes_a_new_sentence():
    result = train_bpe(course_word_counts(), vocab_size=50, special_tokens=["<|endoftext|>"])
    tokens = [t for word in gpt2_words("This is not a token.")
              for t in encode_word(word, result.vocab, result.merges)]
    assert tokens == ["This", "Ġis", "Ġ", "n", "o", "t", "Ġa", "Ġtoken", "."]


def test_first_counted_pair_wins_ties():
    # ("b","c") and ("a","b") both count 2; "bc…" is scanned first.
    assert train_bpe({"bca": 1, "ab": 1, "bc": 1, "xab": 1}, vocab_size=5).merges == [("b", "c")]


def test_prefix_suffix_and_max_token_length():
    result = train_bpe({"abab": 3}, vocab_size=100, continuing_subword_prefix="##",
                       end_of_word_suffix="</w>", max_token_length=2)
    assert list(result.vocab) == ["a", "b", "##b", "##a", "##b</w>", "ab", "##ab</w>"]
    # "ab" + "##ab</w>" would cover 4 chars, over the limit of 2.
    assert result.merges == [("a", "##b"), ("##a", "##b</w>")]


def test_alphabet_limit_keeps_frequent_chars_and_the_initial_alphabet():
    assert alphabet_of({"aab": 1, "c": 1}, initial_alphabet=["z"], limit_alphabet=2) == ["a", "z"]


def test_min_frequency_stops_training():
    assert train_bpe({"ab": 2, "cd": 1}, vocab_size=100, min_frequency=2).merges == [("a", "b")]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(alphabet="abcd", min_size=1, max_size=8), st.integers(1, 5), min_size=1),
       st.integers(0, 20))
def test_training_agrees_with_recounting_and_encoding_inverts(word_counts, extra):
    result = train_bpe(word_counts, vocab_size=4 + extra)
    for word in word_counts:
        assert "".join(encode_word(word, result.vocab, result.merges)) == word
    # Every merge was the best pair of the corpus as split so far.
    splits = {w: [(c, 1) for c in w] for w in word_counts}
    for pair in result.merges:
        counts = count_pairs(splits, word_counts)
        assert counts[pair] == max(counts.values())
        token = pair[0] + pair[1]
        splits = {w: merge_pair(s, pair, token) for w, s in splits.items()}
