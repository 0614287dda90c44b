"""BpeTrainer: exact parity with Hugging Face's trainer, and with the textbook twin."""

from __future__ import annotations

import json
from array import array

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from pieceworks import AddedToken
from pieceworks.byte_level import BYTE_TO_CHAR
from pieceworks.errors import ConfigError, InputTypeError
from pieceworks.models import BPE
from pieceworks.reference.bpe import train_bpe
from pieceworks.trainers import BpeTrainer
from pieceworks.trainers.bpe import compute_alphabet

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- drivers ---------------------------------------------------------------------


def hf_train(counts: dict[str, int], **options) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Hugging Face's trainer on exactly these word counts.

    Without a pre-tokenizer every sequence is one word, so feeding each word
    ``count`` times gives Hugging Face the same table we give ours.
    """
    tokenizer = Tokenizer(models.BPE())
    trainer = trainers.BpeTrainer(show_progress=False, **options)
    tokenizer.train_from_iterator((w for w, n in counts.items() for _ in range(n)), trainer)
    model = json.loads(tokenizer.to_str())["model"]
    return model["vocab"], [tuple(m) for m in model["merges"]]


def our_train(counts: dict[str, int], **options) -> tuple[dict[str, int], list[tuple[str, str]]]:
    model = BPE()
    BpeTrainer(show_progress=False, **options).train(model, counts)
    return model.get_vocab(), model.get_merges()


def dedupe_keep_last(merges):
    last = {pair: i for i, pair in enumerate(merges)}
    return [pair for pair, _ in sorted(last.items(), key=lambda kv: kv[1])]


def in_hf_word_order(counts: dict[str, int], hf_vocab: dict[str, int], **options) -> dict[str, int]:
    """``counts`` reordered so that our marked chars (``##a``) get Hugging Face's ids.

    Hugging Face numbers them while iterating a randomly seeded hash map of
    words; any word order that meets them in the same order gives the same
    ids, and ids are all that decide the rest of training.
    """
    initial, _ = our_train(counts, **{**options, "vocab_size": 0})
    target = sorted(initial, key=hf_vocab.__getitem__)
    assert [hf_vocab[t] for t in target] == list(range(len(target)))
    known = set(target[: len(target) - _marked_count(counts, initial, options)])
    marked = {w: list(dict.fromkeys(_marked_tokens(w, known, options))) for w in counts}
    containing: dict[str, list[str]] = {}
    for word, tokens in marked.items():
        for token in tokens:
            containing.setdefault(token, []).append(word)
    placed: dict[str, None] = {}
    seen = set(known)
    pos = len(known)
    while pos < len(target):
        for word in containing[target[pos]]:
            fresh = [t for t in marked[word] if t not in seen]
            if word not in placed and fresh == target[pos:pos + len(fresh)]:
                placed[word] = None
                seen.update(fresh)
                pos += len(fresh)
                break
        else:
            raise AssertionError("no word order reproduces Hugging Face's ids")
    ordered = list(placed) + [w for w in counts if w not in placed]
    return {w: counts[w] for w in ordered}


def _marked_tokens(word: str, known: set[str], options) -> list[str]:
    prefix, suffix = options.get("continuing_subword_prefix"), options.get("end_of_word_suffix")
    out = []
    for i, char in enumerate(word):
        if char not in known:
            continue
        token = char if prefix is None or i == 0 else prefix + char
        if suffix is not None and i == len(word) - 1:
            token += suffix
        out.append(token)
    return out


def _marked_count(counts, initial, options) -> int:
    specials = [t if isinstance(t, str) else t.content for t in options.get("special_tokens", [])]
    alphabet = compute_alphabet(counts, [s[0] for s in options.get("initial_alphabet", []) if s],
                                options.get("limit_alphabet"))
    base = set(specials) | set(alphabet)
    return len([t for t in initial if t not in base])


def alphabet_cut_is_unambiguous(counts, initial_alphabet, limit) -> bool:
    """Hugging Face picks randomly among chars of equal count at the ``limit_alphabet`` cut."""
    if limit is None:
        return True
    char_counts: dict[str, float] = {}
    for word, n in counts.items():
        for c in word:
            char_counts[c] = char_counts.get(c, 0) + n
    for c in initial_alphabet:
        if c:
            char_counts[c[0]] = float("inf")
    ordered = sorted(char_counts.values())
    cut = len(ordered) - limit
    return cut <= 0 or cut >= len(ordered) or ordered[cut - 1] != ordered[cut]


# -- strategies -------------------------------------------------------------------

# Few letters and small counts: many pairs tie.
tie_words = st.text(alphabet="abcde", min_size=1, max_size=7)
any_words = st.text(min_size=1, max_size=10)
counts_of = lambda words: st.dictionaries(words, st.integers(1, 6), min_size=1, max_size=25)  # noqa: E731
marks = st.sampled_from([None, "", "#", "##", "a", "\u2581"])
suffixes = st.sampled_from([None, "", "</w>", "a", "_"])


@st.composite
def trainer_options(draw, with_marks: bool = True):
    opts = {"vocab_size": draw(st.integers(0, 60))}
    if draw(st.booleans()):
        opts["min_frequency"] = draw(st.integers(0, 8))
    if draw(st.booleans()):
        opts["special_tokens"] = draw(st.lists(st.sampled_from(["<s>", "[UNK]", "a", "ab", "<pad>"]), max_size=3))
    if draw(st.booleans()):
        opts["initial_alphabet"] = draw(st.lists(st.text(max_size=2), max_size=4))
    if draw(st.booleans()):
        opts["limit_alphabet"] = draw(st.integers(0, 8))
    if draw(st.booleans()):
        opts["max_token_length"] = draw(st.integers(0, 5))
    if with_marks:
        prefix, suffix = draw(marks), draw(suffixes)
        if prefix is not None:
            opts["continuing_subword_prefix"] = prefix
        if suffix is not None:
            opts["end_of_word_suffix"] = suffix
    return opts


# -- first_seen: the textbook twin ------------------------------------------------


@SETTINGS
@given(st.one_of(counts_of(tie_words), counts_of(any_words)), trainer_options())
def test_first_seen_matches_the_reference(counts, options):
    ref = train_bpe(counts, options.get("vocab_size", 30000),
                    min_frequency=options.get("min_frequency", 0),
                    special_tokens=options.get("special_tokens", []),
                    initial_alphabet=[s[0] for s in options.get("initial_alphabet", []) if s],
                    limit_alphabet=options.get("limit_alphabet"),
                    continuing_subword_prefix=options.get("continuing_subword_prefix"),
                    end_of_word_suffix=options.get("end_of_word_suffix"),
                    max_token_length=options.get("max_token_length"))
    vocab, merges = our_train(counts, tie_break="first_seen", **options)
    assert vocab == ref.vocab
    assert merges == dedupe_keep_last(ref.merges)


def test_first_seen_reproduces_the_course_walkthrough():
    counts = {}
    for text in ["This is the Hugging Face Course.", "This chapter is about tokenization.",
                 "This section shows several tokenizer algorithms.",
                 "Hopefully, you will be able to understand how they are trained and generate tokens."]:
        for word, _ in pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str(text):
            counts[word] = counts.get(word, 0) + 1
    _, merges = our_train(counts, vocab_size=50, special_tokens=["<|endoftext|>"], tie_break="first_seen")
    assert merges[:4] == [("Ġ", "t"), ("i", "s"), ("e", "r"), ("Ġ", "a")]
    assert merges == train_bpe(counts, 50, special_tokens=["<|endoftext|>"]).merges


# -- huggingface: parity with tokenizers ------------------------------------------


@SETTINGS
@given(st.one_of(counts_of(tie_words), counts_of(any_words)), trainer_options(with_marks=False))
def test_character_level_matches_huggingface(counts, options):
    assume(alphabet_cut_is_unambiguous(counts, options.get("initial_alphabet", []), options.get("limit_alphabet")))
    assert our_train(counts, **options) == hf_train(counts, **options)


@SETTINGS
@given(st.one_of(counts_of(tie_words), counts_of(any_words)), trainer_options(with_marks=True))
def test_prefix_and_suffix_match_huggingface_up_to_its_word_order(counts, options):
    assume(alphabet_cut_is_unambiguous(counts, options.get("initial_alphabet", []), options.get("limit_alphabet")))
    hf = hf_train(counts, **options)
    assert our_train(in_hf_word_order(counts, hf[0], **options), **options) == hf


byte_level_texts = st.lists(st.text(max_size=30), min_size=1, max_size=12)


def byte_level_counts(texts: list[str]) -> dict[str, int]:
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    counts: dict[str, int] = {}
    for text in texts:
        for word, _ in pre.pre_tokenize_str(text):
            counts[word] = counts.get(word, 0) + 1
    return counts


@SETTINGS
@given(byte_level_texts, st.integers(256, 330), st.sampled_from([0, 2]))
def test_byte_level_matches_huggingface(texts, vocab_size, min_frequency):
    counts = byte_level_counts(texts)
    assume(counts)
    options = dict(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=["<|endoftext|>"],
                   initial_alphabet=list(BYTE_TO_CHAR))
    vocab, merges = our_train(counts, **options)
    assert (vocab, merges) == hf_train(counts, **options)
    assert all(vocab[c] == i + 1 for i, c in enumerate(sorted(BYTE_TO_CHAR)))


def _corpus_sample(shared_data, relative: str, chars: int) -> list[str]:
    with open(shared_data / relative, encoding="utf-8") as fh:
        return fh.read(chars).splitlines()


@pytest.mark.parametrize("relative, chars, vocab_size", [
    ("corpora/english/botchan.txt", 300_000, 3000),
    ("corpora/english/linux-6.1_docs_rst.txt", 200_000, 2500),
    ("corpora/multilingual/ko_nsmc_movie_reviews.txt", 150_000, 2000),
])
def test_real_corpus_byte_level_matches_huggingface(shared_data, relative, chars, vocab_size):
    counts = byte_level_counts(_corpus_sample(shared_data, relative, chars))
    options = dict(vocab_size=vocab_size, special_tokens=["<|endoftext|>"], initial_alphabet=list(BYTE_TO_CHAR))
    assert our_train(counts, **options) == hf_train(counts, **options)


def test_real_corpus_with_every_option_matches_huggingface(shared_data):
    pre = pre_tokenizers.Whitespace()
    counts: dict[str, int] = {}
    for line in _corpus_sample(shared_data, "corpora/english/botchan.txt", 200_000):
        for word, _ in pre.pre_tokenize_str(line):
            counts[word] = counts.get(word, 0) + 1
    options = dict(vocab_size=1500, min_frequency=3, special_tokens=["[UNK]", "[CLS]"], limit_alphabet=60,
                   initial_alphabet=["é", "ü"], continuing_subword_prefix="##", end_of_word_suffix="</w>",
                   max_token_length=6)
    assert alphabet_cut_is_unambiguous(counts, options["initial_alphabet"], options["limit_alphabet"])
    hf = hf_train(counts, **options)
    assert our_train(in_hf_word_order(counts, hf[0], **options), **options) == hf


# -- behaviour and options ----------------------------------------------------------


def test_train_fills_the_model_in_place_and_returns_special_tokens():
    model = BPE(unk_token="[UNK]", dropout=0.1)
    specials = BpeTrainer(vocab_size=20, special_tokens=["[UNK]", AddedToken("<x>")], show_progress=False,
                          continuing_subword_prefix="##").train(model, {"hello": 3, "help": 2})
    assert [t.content for t in specials] == ["[UNK]", "<x>"] and all(t.special for t in specials)
    assert model.get_vocab()["[UNK]"] == 0 and model.continuing_subword_prefix == "##"
    assert model.unk_token == "[UNK]" and model.dropout == 0.1
    model.dropout = None
    assert [t.value for t in model.tokenize("help")] == ["help"]


def test_max_token_length_follows_huggingface_or_the_textbook():
    counts = {"abcabc": 5}
    # Hugging Face: a new pair must be shorter than the limit, so "abc" is never made.
    assert our_train(counts, vocab_size=50, max_token_length=3)[1] == [("a", "b")]
    assert our_train(counts, vocab_size=50, max_token_length=3) == hf_train(counts, vocab_size=50, max_token_length=3)
    # The textbook rule allows tokens of exactly the limit.
    vocab, _ = our_train(counts, vocab_size=50, max_token_length=3, tie_break="first_seen")
    assert max(len(t) for t in vocab) == 3


def test_limit_alphabet_ties_drop_the_higher_code_point_first():
    assert compute_alphabet({"ab": 1, "c": 1}, limit_alphabet=2) == ["a", "b"]


def test_same_counts_in_any_order_give_the_same_model():
    counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    shuffled = dict(reversed(list(counts.items())))
    assert our_train(counts, vocab_size=30) == our_train(shuffled, vocab_size=30)


def test_empty_corpus_gives_specials_and_initial_alphabet_only():
    assert our_train({}, vocab_size=100, special_tokens=["<s>"], initial_alphabet=["b", "a"]) == (
        {"<s>": 0, "a": 1, "b": 2}, [])


def test_trainer_options_mirror_huggingface():
    trainer = BpeTrainer(initial_alphabet=["", "ab", "c", "c"], special_tokens=["<s>"])
    theirs = trainers.BpeTrainer(initial_alphabet=["", "ab", "c", "c"], special_tokens=["<s>"])
    assert trainer.initial_alphabet == sorted(theirs.initial_alphabet)
    assert [t.content for t in trainer.special_tokens] == [t.content for t in theirs.special_tokens]
    for name in ("vocab_size", "min_frequency", "show_progress", "limit_alphabet", "max_token_length",
                 "continuing_subword_prefix", "end_of_word_suffix"):
        assert getattr(trainer, name) == getattr(theirs, name), name
    assert BPE().get_trainer().vocab_size == 30000 and trainer.model_type is BPE


@pytest.mark.parametrize("bad", [dict(vocab_size=-1), dict(tie_break="random"), dict(limit_alphabet=-2)])
def test_bad_options_raise_config_errors(bad):
    with pytest.raises(ConfigError):
        BpeTrainer(**bad)


@pytest.mark.parametrize("trainer", ["BpeTrainer", "WordPieceTrainer", "UnigramTrainer", "WordLevelTrainer"])
@pytest.mark.parametrize("option", ["vocab_size", "min_frequency", "limit_alphabet", "max_piece_length",
                                    "n_sub_iterations"])
@pytest.mark.parametrize("value", [None, 1.5, "100"])
def test_an_integer_option_of_another_type_is_a_type_error_as_in_huggingface(trainer, option, value):
    """Hugging Face raises TypeError for vocab_size=None, 1.5 or "100" (an int option it cannot
    read as one); so does pieceworks (InputTypeError is one), saying which option. (Hugging Face
    also refuses an explicit None for limit_alphabet, whose default is None; pieceworks takes it.)"""
    import inspect

    import pieceworks.trainers

    ours = getattr(pieceworks.trainers, trainer)
    parameters = inspect.signature(ours).parameters
    if option not in parameters:
        pytest.skip(f"{trainer} has no {option}")
    if value is None and parameters[option].default is None:
        pytest.skip("None is its default, which pieceworks takes when given (README: departures)")
    with pytest.raises(TypeError):
        getattr(trainers, trainer)(**{option: value})
    with pytest.raises(InputTypeError, match=option):
        ours(**{option: value})


def test_bad_counts_raise_type_errors():
    with pytest.raises(InputTypeError):
        BpeTrainer(show_progress=False).train(BPE(), {"a": "many"})
    with pytest.raises(InputTypeError):
        BpeTrainer(initial_alphabet="abc")


def test_docstring_examples_hold():
    import doctest

    import pieceworks.trainers.bpe
    from pieceworks._kernels import bpe_train

    for module in (bpe_train, pieceworks.trainers.bpe):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_progress_bar_runs(capsys):
    model = BPE()
    BpeTrainer(vocab_size=12, show_progress=True).train(model, {"abcd": 2, "bcd": 1})
    assert model.get_merges()[0] == ("b", "c")


def _json_progress(err: str) -> list[dict]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("show_progress", [True, False])
def test_progress_format_json_lines_as_huggingface(capfd, show_progress):
    """JSON lines on stderr, whatever show_progress says, in Hugging Face's form and key order."""
    from pieceworks import Tokenizer as PwTokenizer
    from pieceworks import models as pw_models
    from pieceworks import pre_tokenizers as pw_pre

    texts = ["hello world hello there " * 50, "a b c d"]
    ours = PwTokenizer(pw_models.BPE())
    ours.pre_tokenizer = pw_pre.Whitespace()
    ours.train_from_iterator(texts, trainer=BpeTrainer(vocab_size=300, progress_format="json",
                                                      show_progress=show_progress))
    mine = _json_progress(capfd.readouterr().err)
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    hf.train_from_iterator(texts, trainer=trainers.BpeTrainer(vocab_size=300, progress_format="json",
                                                              show_progress=show_progress))
    hf_lines = _json_progress(capfd.readouterr().err)
    assert all(list(line) == ["stage", "current", "total"] for line in mine + hf_lines)
    merges = [line for line in mine if line["stage"] == "Compute merges"]
    hf_merges = [line for line in hf_lines if line["stage"] == "Compute merges"]
    # The first line says what is to do, the last what was done: Hugging Face's, for the merge stage.
    assert merges[0] == hf_merges[0] and merges[-1] == hf_merges[-1]
    assert [line["current"] for line in merges] == sorted(line["current"] for line in merges)
    assert mine[0] == {"stage": "Reading texts", "current": 0, "total": None}


def test_progress_format_silent_and_bad(capfd):
    model = BPE()
    BpeTrainer(vocab_size=12, progress_format="silent").train(model, {"abcd": 2, "bcd": 1})
    assert capfd.readouterr().err == "" and model.get_merges()[0] == ("b", "c")
    assert BpeTrainer().progress_format == trainers.BpeTrainer().progress_format == "indicatif"
    with pytest.raises(ConfigError, match="progress_format"):
        BpeTrainer(progress_format="JsonLines")


def test_get_word_count_as_huggingface():
    from pieceworks import Tokenizer as PwTokenizer
    from pieceworks import models as pw_models
    from pieceworks import pre_tokenizers as pw_pre

    texts = ["hello world hello there " * 5, "a b c d é", "hello"]
    ours_trainer, hf_trainer = BpeTrainer(vocab_size=100, show_progress=False), trainers.BpeTrainer(
        vocab_size=100, show_progress=False)
    assert ours_trainer.get_word_count() == hf_trainer.get_word_count() == 0
    ours = PwTokenizer(pw_models.BPE())
    ours.pre_tokenizer = pw_pre.Whitespace()
    ours.train_from_iterator(texts, trainer=ours_trainer)
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    hf.train_from_iterator(texts, trainer=hf_trainer)
    assert ours_trainer.get_word_count() == hf_trainer.get_word_count() == 8


# -- the kernel's memory layout changes nothing ------------------------------------
# The merge loop keeps words in one flat array, lists of words in a compacted
# arena, small-count heap entries aside, and counts past 32 bits in side maps
# (see pieceworks/_kernels/bpe_train.pyx). These tests force each of those
# paths on small inputs and check the result is still Hugging Face's (or the
# textbook's).


class _Forced:
    """Compaction at every chance, or push sequences that run out at once."""

    def __init__(self, compact: bool = False, seq_start: int | None = None):
        self.compact, self.seq_start = compact, seq_start

    def __enter__(self):
        from pieceworks._kernels import bpe_train

        self.floor = bpe_train._set_compact_floor(0) if self.compact else None
        self.seq = bpe_train._set_seq_start(self.seq_start) if self.seq_start is not None else None
        return self

    def __exit__(self, *exc):
        from pieceworks._kernels import bpe_train

        if self.floor is not None:
            bpe_train._set_compact_floor(self.floor)
        if self.seq is not None:
            bpe_train._set_seq_start(self.seq)
        return False


@SETTINGS
@given(st.one_of(counts_of(tie_words), counts_of(any_words)), trainer_options(),
       st.sampled_from(["huggingface", "first_seen"]))
def test_compacting_words_and_lists_changes_nothing(counts, options, tie_break):
    plain = our_train(counts, tie_break=tie_break, **options)
    with _Forced(compact=True):
        assert our_train(counts, tie_break=tie_break, **options) == plain


@SETTINGS
@given(st.dictionaries(tie_words, st.integers(1, 40), min_size=1, max_size=25),
       st.integers(5, 80), st.sampled_from([0, 3, 9, 12]))
def test_counts_around_the_waiting_limit_match_huggingface(counts, vocab_size, min_frequency):
    # Entries of count <= 8 wait outside the heap until it runs empty.
    options = dict(vocab_size=vocab_size, min_frequency=min_frequency)
    assert our_train(counts, **options) == hf_train(counts, **options)


def test_renumbered_push_sequences_change_nothing(shared_data):
    counts = byte_level_counts(_corpus_sample(shared_data, "corpora/english/botchan.txt", 60_000))
    options = dict(vocab_size=800, special_tokens=["<|endoftext|>"], initial_alphabet=list(BYTE_TO_CHAR))
    plain = our_train(counts, **options)
    with _Forced(seq_start=0xFFFFFFFF - 300):
        assert our_train(counts, **options) == plain


def test_real_corpus_with_forced_compaction_matches_huggingface(shared_data):
    counts = byte_level_counts(_corpus_sample(shared_data, "corpora/english/linux-6.1_docs_rst.txt", 150_000))
    options = dict(vocab_size=1500, special_tokens=["<|endoftext|>"], initial_alphabet=list(BYTE_TO_CHAR))
    with _Forced(compact=True):
        ours = our_train(counts, **options)
    assert ours == hf_train(counts, **options)


def test_ids_past_16_bits_match_huggingface():
    # vocab_size >= 65535: symbols are stored as uint32 instead of uint16.
    counts = {"abcabd": 5, "abd": 3, "cab": 2, "dcba": 4}
    assert our_train(counts, vocab_size=70_000) == hf_train(counts, vocab_size=70_000)


@pytest.mark.parametrize("tie_break", ["huggingface", "first_seen"])
def test_counts_past_32_bits_train_as_scaled_counts(tie_break):
    # Word counts >= 255 and pair counts >= 2**31 live in side maps; scaling
    # every count by the same factor changes no ranking and no tie.
    counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5, "gun": 7}
    small = our_train(counts, vocab_size=30, tie_break=tie_break)
    for factor in (300, 1 << 31, 1 << 40):
        assert our_train({w: n * factor for w, n in counts.items()}, vocab_size=30, tie_break=tie_break) == small


def test_first_seen_with_big_counts_matches_the_reference():
    counts = {"low": 5 << 33, "lower": 2 << 33, "newest": 6 << 33, "widest": 3 << 33, "lo": 1}
    ref = train_bpe(counts, 40)
    vocab, merges = our_train(counts, vocab_size=40, tie_break="first_seen")
    assert vocab == ref.vocab and merges == dedupe_keep_last(ref.merges)


def test_words_take_two_bytes_a_char_when_ids_fit_16_bits():
    from pieceworks._kernels.bpe_train import MergeLearner

    words = [f"w{i}x{i * 7919 % 10007}" for i in range(5000)]
    chars = sum(len(w) for w in words)
    sizes = {}
    for vocab_size in (300, 70_000):
        tokens = sorted({c for w in words for c in w})
        learner = MergeLearner(tokens, {t: i for i, t in enumerate(tokens)}, vocab_size=vocab_size)
        learner.add_words((words, [1] * len(words)))
        learner.learn(len(tokens))    # no merges: the arrays as read, trimmed
        sizes[vocab_size] = learner.memory()["words"]
    assert sizes[300] <= 2 * chars + 5 * (len(words) + 1)
    assert sizes[70_000] <= 4 * chars + 5 * (len(words) + 1)


def test_a_learner_learns_once_and_reads_words_before():
    from pieceworks._kernels.bpe_train import MergeLearner

    tokens = ["a", "b"]
    learner = MergeLearner(tokens, {"a": 0, "b": 1}, vocab_size=3)
    learner.add_words((b"abab", array("q", [0, 2, 4]), array("Q", [2, 1])))
    assert learner.word_ids(0) == [0, 1] and learner.word_ids(1) == [0, 1]
    assert learner.learn(3) == [(0, 1, 2)] and learner.word_ids(1) == [2]
    with pytest.raises(RuntimeError):
        learner.learn(4)
    with pytest.raises(RuntimeError):
        learner.add_words((["a"], [1]))
