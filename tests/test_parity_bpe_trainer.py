"""ParityBpeTrainer against Hugging Face's (tokenizers 0.23): same merges, vocabulary and added
tokens on any corpora and options, and the errors of bad options."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter

import pytest
from hypothesis import assume, given, settings, strategies as st

import pieceworks as pw
from pieceworks.errors import ConfigError
from pieceworks._kernels.parity_train import learn_parity
from pieceworks.reference.parity_bpe import train_parity_bpe

hf = pytest.importorskip("tokenizers")
if not hasattr(hf.trainers, "ParityBpeTrainer"):
    pytest.skip("this tokenizers has no ParityBpeTrainer (new in 0.23)", allow_module_level=True)


def train(lib, options: dict, train_texts, dev_texts=None, ratio=None):
    """``(merges, vocab, added tokens)`` of a Whitespace-split BPE trained by ``lib``, and our
    trainer's count of stuck window choices (0 for Hugging Face's)."""
    tok = lib.Tokenizer(lib.models.BPE())
    tok.pre_tokenizer = lib.pre_tokenizers.Whitespace()
    trainer = lib.trainers.ParityBpeTrainer(show_progress=False, **options)
    extra = {}
    if dev_texts:
        extra["dev_iterators"] = [iter(texts) for texts in dev_texts]
    if ratio is not None:
        extra["ratio"] = ratio
    trainer.train_from_iterator(tok, [iter(texts) for texts in train_texts], **extra)
    data = json.loads(tok.to_str())
    made = ([tuple(m) for m in data["model"]["merges"]], data["model"]["vocab"],
            [(t["id"], t["content"], t["special"]) for t in data["added_tokens"]])
    return made, getattr(trainer, "_stuck_choices", 0)


def _train_and_send(pipe, *args) -> None:
    pipe.send(train(hf, *args)[0])


def hugging_face_in_a_child(options: dict, train_texts, dev_texts, ratio, seconds: float = 60.0):
    """Hugging Face's training, in a forked process: where its loop never ends, the test fails
    instead of hanging (Rust code does not stop for a signal)."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_train_and_send, args=(send, options, train_texts, dev_texts, ratio))
    child.start()
    try:
        if not receive.poll(seconds):
            pytest.fail(f"Hugging Face's trainer did not end in {seconds:g} s on {options}, {train_texts}, "
                        f"{dev_texts}, {ratio}: a state ours does not count as stuck")
        return receive.recv()
    finally:
        child.kill()
        child.join()


def same_as_hugging_face(options: dict, train_texts, dev_texts=None, ratio=None) -> bool:
    """Whether both trained (then the same); False where Hugging Face's trainer would loop forever
    (see test_a_stuck_window_ends), so it is not run."""
    ours, stuck = train(pw, options, train_texts, dev_texts, ratio)
    if stuck:
        return False
    theirs = hugging_face_in_a_child(options, train_texts, dev_texts, ratio)
    assert ours[0] == theirs[0]
    if options.get("continuing_subword_prefix") is None and options.get("end_of_word_suffix") is None:
        assert ours[1] == theirs[1]
    else:   # (Hugging Face numbers the marked chars in a hash map's random order)
        assert set(ours[1]) == set(theirs[1])
    assert ours[2] == theirs[2]
    return True


# Hugging Face's own unit tests of the trainer (tokenizers/src/models/bpe/parity_trainer.rs), run
# on both libraries: two or three languages, each with its worked-out merge order.
CASES = [
    (dict(num_merges=6, min_frequency=1), [["aabb"] * 10, ["ccdd"] * 10], None, None),
    (dict(num_merges=2, min_frequency=1), [["ab"] * 10, ["cd"] * 5], [["ab"], ["cd"] * 10], None),
    (dict(num_merges=6, min_frequency=1), [["aabb"] * 100, ["ccdd"]], None, None),
    (dict(num_merges=6, min_frequency=1, variant="window", window_size=2, alpha=1.0),
     [["aabb"] * 100, ["ccdd"]], None, None),
    (dict(num_merges=10, min_frequency=1), [["ab"] * 10, ["cdef"] * 10], None, None),
    (dict(num_merges=2, min_frequency=1, global_merges=1), [["ab"] * 5 + ["cd"], ["ab"] + ["cd"] * 5], None, None),
    (dict(num_merges=4, min_frequency=1, global_merges=4), [["abab"] * 10 + ["xyxy"] * 5, ["abab"] * 5 + ["xyxy"] * 10],
     None, None),
    (dict(num_merges=10, min_frequency=5), [["ab"] * 10 + ["cd"] * 3, ["ef"] * 10 + ["gh"] * 10], None, None),
    (dict(num_merges=4, min_frequency=1), [["aabb"] * 10, ["ccdd"] * 10], None, [1.0, 2.0]),
    (dict(num_merges=2, min_frequency=1), [["ab"] * 100, ["cd"] * 10], None, [1.0, 0.5]),
    (dict(num_merges=4, min_frequency=1, variant="window", window_size=2, alpha=1.0),
     [["aabb"] * 10, ["ccdd"] * 10], None, [1.0, 3.0]),
    (dict(num_merges=3, min_frequency=1), [["ab"] * 10, ["cd"] * 10, ["ef"] * 10], [["ab"], [], ["ef"] * 10], None),
]


@pytest.mark.parametrize("options, train_texts, dev_texts, ratio", CASES)
def test_hugging_faces_own_cases(options, train_texts, dev_texts, ratio):
    assert same_as_hugging_face(options, train_texts, dev_texts, ratio)


def test_the_first_case_gives_hugging_faces_worked_out_merges():
    """Its comment works the order out by hand: the languages take turns (ties to the lower index),
    and equal counts go to the larger strings."""
    result = train_parity_bpe([{"aabb": 10}, {"ccdd": 10}], num_merges=6, min_frequency=1)
    assert [" ".join(m) for m in result.merges] == ["b b", "d d", "a bb", "c dd", "a abb", "c cdd"]


_words = st.lists(st.text(st.sampled_from("abcxé中"), min_size=1, max_size=6), min_size=1, max_size=8)
_texts = _words.map(" ".join)


@st.composite
def corpora(draw):
    n = draw(st.integers(1, 3))
    train_texts = [draw(st.lists(_texts, min_size=1, max_size=5)) for _ in range(n)]
    dev_texts = draw(st.none() | st.just(None).flatmap(
        lambda _: st.tuples(*[st.lists(_texts, max_size=3) for _ in range(n)]).map(list)))
    ratio = draw(st.none() | st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=n, max_size=n))
    return train_texts, dev_texts, ratio


@st.composite
def trainer_options(draw):
    options = dict(num_merges=draw(st.integers(0, 30)), min_frequency=draw(st.integers(0, 3)))
    if draw(st.booleans()):
        options.update(variant="window", window_size=draw(st.integers(1, 5)),
                       alpha=draw(st.sampled_from([0.5, 1.0, 2.0])))
    options["global_merges"] = draw(st.sampled_from([0, 0, 2, 5]))
    options["total_symbols"] = draw(st.booleans())
    options["max_token_length"] = draw(st.none() | st.integers(1, 4))
    options["special_tokens"] = draw(st.sampled_from([[], ["<s>"], ["<s>", "a"]]))
    options["initial_alphabet"] = draw(st.sampled_from([[], ["q"]]))
    if draw(st.booleans()):
        options["continuing_subword_prefix"] = "##"
        options["end_of_word_suffix"] = draw(st.sampled_from([None, "</w>"]))
    return options


@settings(max_examples=150, deadline=None)
@given(corpus=corpora(), options=trainer_options(), limit=st.none() | st.integers(1, 5))
def test_any_corpora_and_options_train_as_hugging_face(corpus, options, limit):
    train_texts, dev_texts, ratio = corpus
    if limit is not None:
        # Hugging Face cuts the alphabet among chars of equal count at random: only a clean cut.
        chars = Counter(c for texts in train_texts + (dev_texts or []) for text in texts for c in text if c != " ")
        counts = sorted([*chars.values(), *[float("inf")] * len(set(options["initial_alphabet"]) - set(chars))])
        assume(len(counts) <= limit or counts[-limit] != counts[-limit - 1])
        options["limit_alphabet"] = limit
    assume(same_as_hugging_face(options, train_texts, dev_texts, ratio))


_counts = st.dictionaries(st.text(st.sampled_from("abcé中#"), min_size=1, max_size=7), st.integers(1, 6), max_size=8)


@settings(max_examples=300, deadline=None)
@given(languages=st.lists(_counts, min_size=1, max_size=3), data=st.data(), options=trainer_options(),
       alphabet=st.sampled_from([None, ["a", "b", "c"], ["a", "é", "中", "#"]]))
def test_the_kernel_makes_the_references_merges(languages, data, options, alphabet):
    """The Cython loop against the readable one, stuck states included (no Hugging Face here)."""
    n = len(languages)
    dev = data.draw(st.sampled_from([[], None]) | st.lists(_counts, min_size=n, max_size=n)) or []
    ratio = data.draw(st.none() | st.lists(st.sampled_from([0.5, 1.0, 3.0]), min_size=n, max_size=n))
    prefix, suffix = options.get("continuing_subword_prefix"), options.get("end_of_word_suffix")
    if alphabet is None:
        alphabet = sorted({c for words in languages + dev for word in words for c in word})
    common = dict(num_merges=options["num_merges"], min_frequency=options["min_frequency"], ratio=ratio,
                  global_merges=options["global_merges"], window_size=options.get("window_size", 100),
                  alpha=options.get("alpha", 2.0), total_symbols=options["total_symbols"],
                  max_token_length=options["max_token_length"])
    expected = train_parity_bpe(languages, dev, variant=options.get("variant", "base"),
                                special_tokens=options["special_tokens"], alphabet=alphabet, prefix=prefix,
                                suffix=suffix, **common)
    tokens, ids = [], {}
    for token in options["special_tokens"] + alphabet:
        if token not in ids:
            ids[token] = len(tokens)
            tokens.append(token)
    made, stuck = learn_parity(languages, dev, tokens, ids, prefix, suffix,
                               window=options.get("variant") == "window", **common)
    assert [(tokens[a], tokens[b]) for a, b, _ in made] == expected.merges
    assert tokens == expected.vocab and stuck == expected.stuck_choices


def test_a_stuck_window_ends():
    """Window variant, language 0 over its share, the other language out of pairs: Hugging Face's
    selection loop looks at language 0 again forever; ours takes the language left, so the window
    moves on and training ends."""
    train_texts = [["b babb aaabba aaabb", "bb a", "a aabb babbba aab abbaaa aaa a", "abbaaa ba",
                    "baa bb bbba aabab aa aaa bba ab"], ["bb babbb"]]
    dev_texts = [["abbabb abbb a b a bbabba", "babb ababab baaba babbab", "bbaab aabbbb b baa"], []]
    options = dict(num_merges=18, min_frequency=2, variant="window", window_size=2, alpha=0.5, global_merges=2,
                   max_token_length=2)
    (merges, vocab, _), stuck = train(pw, options, train_texts, dev_texts)
    assert stuck > 0
    assert merges and all(a + b in vocab for a, b in merges)


@pytest.mark.parametrize("variant", [dict(variant="base"), dict(variant="window", window_size=1, alpha=2.0)])
def test_a_language_without_tokens_ends_ratio_training(variant):
    """With ``ratio``, a language whose chars the alphabet cut has no tokens (its compression is
    0 / 0): once the others are done, Hugging Face's loop picks language 0 forever (the window
    lets it through, as it never passes over a language with window_size 1 and alpha / 2 = 1);
    ours ends, the kernel as the reference."""
    result = train_parity_bpe([{"abab": 3}, {"zz": 2}], num_merges=10, ratio=[1.0, 1.0], alphabet=["a", "b"],
                              **variant)
    assert result.stuck_choices == 1
    assert result.merges == [("a", "b"), ("ab", "ab")]
    tokens, ids = ["a", "b"], {"a": 0, "b": 1}
    made, stuck = learn_parity([{"abab": 3}, {"zz": 2}], [], tokens, ids, None, None, num_merges=10,
                               ratio=[1.0, 1.0], window=variant["variant"] == "window",
                               **{k: v for k, v in variant.items() if k != "variant"})
    assert ([(tokens[a], tokens[b]) for a, b, _ in made], stuck) == (result.merges, 1)


def test_the_trained_tokenizer_encodes_as_hugging_face_loading_it():
    texts = [["the cat sat on the mat"] * 3, ["le chat est sur le tapis"] * 2]
    tok = pw.Tokenizer(pw.models.BPE())
    tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
    pw.trainers.ParityBpeTrainer(num_merges=20, special_tokens=["<unk>"], show_progress=False).train_from_iterator(
        tok, texts)
    theirs = hf.Tokenizer.from_str(tok.to_str())
    for text in ["the chat sat", "tapis mat <unk>"]:
        assert tok.encode(text).tokens == theirs.encode(text).tokens


@pytest.mark.parametrize("options, message", [
    (dict(variant="diagonal"), "unknown variant 'diagonal'"),
    (dict(variant="window", window_size=0), "window_size must be > 0"),
    (dict(variant="window", alpha=0.0), "alpha must be a positive finite number"),
    (dict(variant="window", alpha=float("nan")), "alpha must be a positive finite number"),
])
def test_bad_options_are_refused_when_made(options, message):
    with pytest.raises(ConfigError, match=message):
        pw.trainers.ParityBpeTrainer(**options)
    with pytest.raises((ValueError, RuntimeError)):      # (Hugging Face's, when made or at training)
        trainer = hf.trainers.ParityBpeTrainer(show_progress=False, **options)
        trainer.train_from_iterator(hf.Tokenizer(hf.models.BPE()), [["ab"], ["cd"]])


@pytest.mark.parametrize("call, message", [
    (dict(train_iterators=[]), "train_iterators must not be empty"),
    (dict(train_iterators=[["ab"], ["cd"]], dev_iterators=[["ab"]]), "dev_iterators has 1 iterators for 2"),
    (dict(train_iterators=[["ab"], ["cd"]], ratio=[1.0]), "ratio has 1 values for 2 languages"),
    (dict(train_iterators=[["ab"], ["cd"]], ratio=[1.0, -1.0]), r"ratio\[1\] must be a positive finite number"),
])
def test_bad_calls_say_what_is_wrong(call, message):
    with pytest.raises(ConfigError, match=message):
        pw.trainers.ParityBpeTrainer(show_progress=False).train_from_iterator(pw.Tokenizer(pw.models.BPE()), **call)


def test_tokenizer_train_refuses_it_and_names_the_call_to_make():
    tok = pw.Tokenizer(pw.models.BPE())
    with pytest.raises(ConfigError, match="train_from_iterator"):
        tok.train_from_iterator(["ab"], trainer=pw.trainers.ParityBpeTrainer())
