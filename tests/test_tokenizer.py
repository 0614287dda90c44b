"""The Tokenizer pipeline against Hugging Face tokenizers: added tokens,
pairs, pre-tokenized input, truncation, padding, decode, training, errors."""

from __future__ import annotations

import json

import pytest
import tokenizers as hf
from hypothesis import given, settings, strategies as st

import pieceworks as pw
from pieceworks.errors import ConfigError, InputTypeError, OutOfRangeError, PieceworksError, UnknownIdError

from parity import assert_same_encoding

VOCAB = {"[UNK]": 0, "hello": 1, "world": 2, "a": 3, "b": 4, "my": 5, "name": 6, "is": 7}


def make_pair(added=(), special=(), normalizer=None):
    """The same WordLevel tokenizer in both libraries (no pre-tokenizer)."""
    ours = pw.Tokenizer(pw.models.WordLevel(dict(VOCAB), unk_token="[UNK]"))
    theirs = hf.Tokenizer(hf.models.WordLevel(dict(VOCAB), unk_token="[UNK]"))
    if normalizer == "lowercase":
        theirs.normalizer = hf.normalizers.Lowercase()
        ours.normalizer = pw.normalizers.Normalizer.from_json({"type": "Lowercase"})
    ours.add_special_tokens([pw.AddedToken(**t) if isinstance(t, dict) else t for t in special])
    theirs.add_special_tokens([hf.AddedToken(**t) if isinstance(t, dict) else t for t in special])
    ours.add_tokens([pw.AddedToken(**t) if isinstance(t, dict) else t for t in added])
    theirs.add_tokens([hf.AddedToken(**t) if isinstance(t, dict) else t for t in added])
    return ours, theirs


ADDED_OPTIONS = [
    dict(content="my", lstrip=True, rstrip=True),
    dict(content="name"),
    dict(content="ony", single_word=True),
    dict(content="<mask>", single_word=True, lstrip=True, rstrip=True),
    dict(content="hello world"),
    dict(content="hello"),
]
SPECIAL = ["[CLS]", "[SEP]", dict(content="<|endoftext|>", special=True)]


@pytest.mark.parametrize("text", [
    "[CLS] My name is Anthony [SEP]",
    "<mask> My name <mask> A<mask> <mask>ony <mask>",
    "<mask>, <mask>- \u25cc\u0330<mask>",
    "Hi <mask> there\t<mask>\t<mask>\u2000",
    "hello world hello worldhello",
    "",
    "   ",
    "<|endoftext|><|endoftext|>[CLS][SEP]",
    "my my  my\u00a0my",
])
def test_added_tokens_split_like_huggingface(text):
    ours, theirs = make_pair(ADDED_OPTIONS, SPECIAL)
    assert_same_encoding(ours.encode(text), theirs.encode(text), text)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["my", "name", "ony", "<mask>", "hello", "world", "[CLS]", "<|endoftext|>",
                                 " ", "  ", "\t", "\u2000", "A", "é", "\u0301", "-", ",", "x"]),
                max_size=14).map("".join))
def test_added_tokens_match_huggingface_on_random_mixtures(text):
    ours, theirs = make_pair(ADDED_OPTIONS, SPECIAL, normalizer="lowercase")
    assert_same_encoding(ours.encode(text), theirs.encode(text), repr(text))


def test_single_word_counts_the_word_chars_huggingface_counts():
    """Which chars make a neighbour a word, on every char where two Unicode word classes at hand
    disagree (the `regex` module's \\w has newer Unicode tables, Oniguruma's \\w another
    definition) and on a sample of all the others."""
    import random

    import regex

    from pieceworks._regex import Regex

    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    newer = {m.group() for m in regex.finditer(r"\w", every)}
    onig = {every[i] for a, b in Regex(r"\w").spans(every) for i in range(a, b)}
    chars = sorted(newer ^ onig) + ["\u200c", "\u200d"] + random.Random(5).sample(every, 4000)
    assert len(chars) > 4000 + 1000            # the disagreements are many: Unicode 16 and 17 letters
    ours, theirs = make_pair([dict(content="ony", single_word=True)])
    for texts in (["x" + c + "ony" for c in chars], ["ony" + c for c in chars]):
        got, want = ours.encode_batch(texts), theirs.encode_batch(texts)
        assert [e.ids for e in got] == [e.ids for e in want]


def test_adding_tokens_one_call_at_a_time_makes_their_matchers_once(monkeypatch):
    """An add makes no matcher: the matchers of all the tokens (their finder, and the trie, made
    when a text is searched) are made when next used. Remaking them on every add made n single adds
    cost n passes over all the tokens (3000 single adds: 2.9 s; compiling a regex each time: minutes)."""
    import pieceworks.added_vocabulary as av

    made = []
    real_trie = av.TokenTrie
    monkeypatch.setattr(av, "TokenTrie", lambda strings: made.append(len(strings)) or real_trie(strings))
    ours = pw.Tokenizer(pw.models.WordLevel(dict(VOCAB), unk_token="[UNK]"))
    theirs = hf.Tokenizer(hf.models.WordLevel(dict(VOCAB), unk_token="[UNK]"))
    for k in range(60):
        assert ours.add_tokens([f"<t{k}>"]) == theirs.add_tokens([f"<t{k}>"]) == 1
    assert made == []
    text = "hello <t7> world<t59><t0>"
    for _ in range(3):
        assert ours.encode(text).ids == theirs.encode(text).ids
    assert made == [60, 60]         # the finder of all the tokens, then the normalized ones' trie
    assert ours.add_special_tokens(["<s>"]) == theirs.add_special_tokens(["<s>"]) == 1
    assert ours.encode_batch([text + "<s>"] * 3)[2].ids == theirs.encode_batch([text + "<s>"] * 3)[2].ids
    # Once more each: the finder of all 61, the special token's raw trie and the 60 others' normalized one.
    assert made[2] == 61 and sorted(made[3:]) == [1, 60]


def test_a_normalized_token_is_spelled_as_the_current_normalizer_spells_it():
    """id_to_token and decode give a normalized added token's content as the normalizer set last
    normalizes it; re-added unnormalized, the old spelling stays until a normalizer is set (as in
    Hugging Face: pieceworks kept the first normalizer's spelling for good)."""
    got = {}
    for lib in (pw, hf):
        tok = lib.Tokenizer(lib.models.WordLevel(dict(VOCAB), unk_token="[UNK]"))
        seen = got[lib.__name__] = []

        def normalizer(name):
            tok.normalizer = None if name is None else (
                pw.normalizers.Normalizer.from_json({"type": name}) if lib is pw else getattr(hf.normalizers, name)())

        def note(step):
            ids = [tok.token_to_id("<T>"), tok.token_to_id("<U>")]
            seen.append((step, [tok.id_to_token(i) if i is not None else None for i in ids],
                         tok.decode([i for i in ids if i is not None])))

        normalizer("Lowercase")
        tok.add_tokens(["<T>"])
        note("added under Lowercase")
        tok.add_tokens([lib.AddedToken("<T>", normalized=False)])
        note("re-added unnormalized")
        normalizer("NFKC")
        note("NFKC set")
        normalizer("Lowercase")
        tok.add_tokens(["<U>"])
        note("<U> added under Lowercase")
        normalizer(None)
        note("no normalizer")
    assert got["pieceworks"] == got["tokenizers"]


def test_a_token_added_while_the_matchers_are_made_is_found_next(monkeypatch):
    """Matchers made from the tokens as they were when making began are not taken for the newer
    tokens': a token another thread adds meanwhile is matched on the next use."""
    import pieceworks.added_vocabulary as av

    tok = pw.Tokenizer(pw.models.WordLevel(dict(VOCAB), unk_token="[UNK]"))
    tok.add_tokens(["<a>"])
    real_trie = av.TokenTrie

    def finder_while_another_thread_adds(contents):
        monkeypatch.setattr(av, "TokenTrie", real_trie)
        tok.add_tokens(["<b>"])         # (as if another thread ran here)
        return real_trie(contents)

    monkeypatch.setattr(av, "TokenTrie", finder_while_another_thread_adds)
    first = tok.encode("<a><b>").tokens             # the matchers being made know <a> only
    assert first[0] == "<a>" and tok.encode("<a><b>").tokens == ["<a>", "<b>"]


_TOKEN_OPTIONS = [dict(), dict(special=True), dict(normalized=False), dict(lstrip=True, rstrip=True),
                  dict(single_word=True), dict(normalized=True, special=True)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(
    # (No two tokens that a normalizer makes equal: Hugging Face then picks either, from run to run.)
    st.tuples(st.just("add"), st.sampled_from(["<T>", "<T>x", "My", "ab", "b a", "ẞ", "x"]),
              st.sampled_from(range(len(_TOKEN_OPTIONS)))),
    st.tuples(st.just("normalizer"), st.sampled_from([None, "Lowercase", "NFKD"])),
    st.tuples(st.just("encode"), st.lists(st.sampled_from(["<T>", "<t>", "my", "My", " ", "ab", "a", "b",
                                                            "ẞ", "ß", "x", "hello"]), max_size=8).map("".join))),
    max_size=12))
def test_adds_normalizer_changes_and_encodes_interleaved_match_huggingface(steps):
    """Tokens added one call at a time, with normalizers set between, and texts encoded between:
    the matchers made when next used find what Hugging Face's, remade on every change, find."""
    ours = pw.Tokenizer(pw.models.WordLevel(dict(VOCAB), unk_token="[UNK]"))
    theirs = hf.Tokenizer(hf.models.WordLevel(dict(VOCAB), unk_token="[UNK]"))
    for step in steps:
        if step[0] == "add":
            options = _TOKEN_OPTIONS[step[2]]
            assert ours.add_tokens([pw.AddedToken(step[1], **options)]) == \
                theirs.add_tokens([hf.AddedToken(step[1], **options)])
        elif step[0] == "normalizer":
            ours.normalizer = None if step[1] is None else pw.normalizers.Normalizer.from_json({"type": step[1]})
            theirs.normalizer = None if step[1] is None else getattr(hf.normalizers, step[1])()
        else:
            assert_same_encoding(ours.encode(step[1]), theirs.encode(step[1]), repr((steps, step[1])))
            assert ours.get_vocab() == theirs.get_vocab()
            assert ours.decode(ours.encode(step[1]).ids) == theirs.decode(theirs.encode(step[1]).ids)


def test_an_added_token_that_normalizes_to_nothing_matches_nothing():
    """README departure: Hugging Face's empty pattern cuts the text into chars (and panics on a
    non-ASCII one); pieceworks encodes the text as if the token were not there."""
    vocab = {"[UNK]": 0, "a": 1, "aa": 2, "é": 3}
    tokenizers = []
    for lib in (pw, hf):
        tok = lib.Tokenizer(lib.models.WordLevel(dict(vocab), unk_token="[UNK]"))
        tok.normalizer = lib.normalizers.Replace("x", "")
        tok.add_tokens([lib.AddedToken("xx", normalized=True)])
        tokenizers.append(tok)
    ours, theirs = tokenizers
    plain = pw.Tokenizer(pw.models.WordLevel(dict(vocab), unk_token="[UNK]"))
    plain.normalizer = pw.normalizers.Replace("x", "")
    assert theirs.encode("aa").tokens == ["a", "a"]                  # the departure
    for text in ["aa", "axxa", "xx", "éa", ""]:
        got, want = ours.encode(text), plain.encode(text)
        assert (got.ids, got.offsets) == (want.ids, want.offsets), text
    assert ours.encode("aa").tokens == ["aa"]


def test_add_special_tokens_makes_given_added_tokens_special_like_huggingface():
    # add_special_tokens makes an AddedToken special, and unnormalized unless it says normalized;
    # add_tokens keeps one as given. So decode skips them, and they match the text as it is.
    ours, theirs = make_pair(normalizer="lowercase")
    for lib, tok in ((pw, ours), (hf, theirs)):
        tok.add_special_tokens([lib.AddedToken("RR"), lib.AddedToken("SS", normalized=True),
                                lib.AddedToken("TT", special=False)])
        tok.add_tokens([lib.AddedToken("UU", special=True), lib.AddedToken("VV")])
    flags = [{i: (t.content, t.normalized, t.special) for i, t in tok.get_added_tokens_decoder().items()}
             for tok in (ours, theirs)]
    assert flags[0] == flags[1]
    text = "aRRrrSSssTTUUVVvv"
    assert_same_encoding(ours.encode(text), theirs.encode(text), text)
    ids = ours.encode(text).ids
    assert ours.decode(ids) == theirs.decode(ids) and ours.decode(ids, False) == theirs.decode(ids, False)


def test_empty_added_tokens_are_skipped_like_huggingface(tmp_path):
    """An empty AddedToken can be made; adding it adds nothing, and a tokenizer.json that lists one
    loads without it (with a warning here, silently in Hugging Face)."""
    ours, theirs = make_pair()
    counts = [(tok.add_special_tokens([lib.AddedToken("", special=True), "[X]", ""]),
               tok.add_tokens(["", lib.AddedToken(""), "name"]))
              for lib, tok in ((pw, ours), (hf, theirs))]
    assert counts[0] == counts[1] == (1, 1)
    assert ours.get_vocab() == theirs.get_vocab() and "" not in ours.get_vocab()
    assert_same_encoding(ours.encode("a[X]b"), theirs.encode("a[X]b"), "a[X]b")
    data = json.loads(theirs.to_str())
    data["added_tokens"].append({"id": 9, "content": "", "single_word": False, "lstrip": False, "rstrip": False,
                                 "normalized": False, "special": True})
    with pytest.warns(UserWarning, match="added token 9 has empty content and is left out"):
        loaded = pw.Tokenizer.from_str(json.dumps(data))
    again = hf.Tokenizer.from_str(json.dumps(data))
    assert loaded.get_vocab() == again.get_vocab()
    assert {i: t.content for i, t in loaded.get_added_tokens_decoder().items()} == {
        i: t.content for i, t in again.get_added_tokens_decoder().items()}


@pytest.mark.parametrize("first", [dict(special=True), dict(), dict(special=True, normalized=True)])
@pytest.mark.parametrize("again", [dict(normalized=True), dict(normalized=False), dict(normalized=True, special=True),
                                   dict(lstrip=True, rstrip=True)])
def test_a_token_added_again_with_other_options_like_huggingface(first, again):
    # Adding a content again with other options replaces its token: the new options decide how it is
    # matched. A normalized token is spelled (id_to_token, and so decode's special-token check) by its
    # normalized content: "QQ" decodes as "qq", and is then no special token to skip.
    ours, theirs = make_pair(normalizer="lowercase")
    for lib, tok in ((pw, ours), (hf, theirs)):
        for options in (first, again):
            add = tok.add_special_tokens if options.get("special") else tok.add_tokens
            add([lib.AddedToken("<S>", **{k: v for k, v in options.items() if k != "special"})])
            if options is first:
                tok.add_special_tokens([lib.AddedToken("QQ", normalized=True), lib.AddedToken("RR")])
                tok.add_tokens([lib.AddedToken("ZZ", normalized=True)])
    where = f"first {first}, again {again}"
    for text in ("a<S>a<s> a <S> ZZqq zz QQRR", "<S>", " <s> "):
        encoding = ours.encode(text)
        assert_same_encoding(encoding, theirs.encode(text), f"{text!r}, {where}")
        for skip in (True, False):
            assert ours.decode(encoding.ids, skip) == theirs.decode(encoding.ids, skip), where
    assert ours.get_vocab() == theirs.get_vocab()
    assert [ours.id_to_token(i) for i in range(ours.get_vocab_size())] == \
        [theirs.id_to_token(i) for i in range(theirs.get_vocab_size())], where


def test_split_special_tokens_treats_special_text_as_plain_text():
    ours, theirs = make_pair(ADDED_OPTIONS, SPECIAL)
    text = "<|endoftext|> hello [CLS]"
    special_ids = {ours.token_to_id("<|endoftext|>"), ours.token_to_id("[CLS]")}
    assert special_ids & set(ours.encode(text).ids)
    safe = ours.encode(text, split_special_tokens=True)
    assert not special_ids & set(safe.ids)
    theirs.encode_special_tokens = True
    assert_same_encoding(safe, theirs.encode(text), text)


def test_added_token_ids_follow_the_model_vocabulary():
    ours, theirs = make_pair(ADDED_OPTIONS, SPECIAL)
    assert ours.get_vocab() == theirs.get_vocab()
    assert ours.get_vocab_size() == theirs.get_vocab_size()
    assert ours.get_vocab_size(with_added_tokens=False) == theirs.get_vocab_size(with_added_tokens=False)
    assert {i: t.content for i, t in ours.get_added_tokens_decoder().items()} == \
        {i: t.content for i, t in theirs.get_added_tokens_decoder().items()}
    assert ours.add_tokens(["hello", "brand-new"]) == theirs.add_tokens(["hello", "brand-new"])
    assert ours.get_vocab() == theirs.get_vocab()


@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
@pytest.mark.parametrize("direction", ["right", "left"])
@pytest.mark.parametrize("stride", [0, 1, 2])
@pytest.mark.parametrize("max_length", [3, 4, 7, 30])
def test_truncation_of_pairs_like_huggingface(strategy, direction, stride, max_length):
    ours, theirs = make_pair(added=[dict(content=w) for w in ("hello", "world", "a", "b", "my", "name")])
    for t in (ours, theirs):
        t.enable_truncation(max_length, stride=stride, strategy=strategy, direction=direction)
    first = "hellowordmyname" * 2
    second = "abab"
    try:
        expected = theirs.encode(first, second)
    except BaseException:  # HF raises, or panics (PanicException) on a stride too large
        with pytest.raises(PieceworksError):
            ours.encode(first, second)
        return
    assert_same_encoding(ours.encode(first, second), expected, f"{strategy} {direction} {stride} {max_length}")
    assert ours.truncation == theirs.truncation


def byte_level_pair():
    """A small trained byte-level BPE in both libraries, [CLS] and [SEP] its special tokens (a fast plan:
    single texts take the raw path, which truncates on its own)."""
    ours = pw.Tokenizer(pw.models.BPE())
    ours.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
    ours.train_from_iterator(["hello world, hello there. the world is big and the hello is loud"] * 20,
                             pw.trainers.BpeTrainer(vocab_size=300, special_tokens=["[CLS]", "[SEP]"],
                                                    initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet(),
                                                    show_progress=False))
    assert ours._current_plan() is not None
    return ours, hf.Tokenizer.from_str(ours.to_str())


@pytest.mark.parametrize("model", ["word-level", "byte-level BPE"])
@pytest.mark.parametrize("max_length", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("stride", [0, 1, 3])
def test_truncation_below_the_special_tokens_like_huggingface(model, max_length, stride):
    # The template adds 2 tokens to a text and 3 to a pair. Hugging Face subtracts those from
    # max_length in unsigned arithmetic: below them it wraps round, and nothing is cut.
    if model == "word-level":
        ours, theirs = make_pair(added=[dict(content=w) for w in ("hello", "world", "a", "b")],
                                 special=["[CLS]", "[SEP]"])
    else:
        ours, theirs = byte_level_pair()
    template = dict(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                    special_tokens=[("[CLS]", ours.token_to_id("[CLS]")), ("[SEP]", ours.token_to_id("[SEP]"))])
    ours.post_processor = pw.processors.TemplateProcessing(**template)
    theirs.post_processor = hf.processors.TemplateProcessing(**template)
    try:
        theirs.enable_truncation(max_length, stride=stride)
    except Exception:
        with pytest.raises(ConfigError):
            ours.enable_truncation(max_length, stride=stride)
        return
    if max_length < 2:
        with pytest.warns(UserWarning, match="not cut"):
            ours.enable_truncation(max_length, stride=stride)
    else:
        ours.enable_truncation(max_length, stride=stride)
    for args in (("hellohelloworld",), ("hellohelloworld", "abab")):
        for add in (True, False):
            where = f"{args} max_length {max_length} stride {stride} add_special_tokens {add}"
            try:
                expected = theirs.encode(*args, add_special_tokens=add)
            except BaseException:  # HF raises, or panics (PanicException) on a stride too large
                with pytest.raises(PieceworksError):
                    ours.encode(*args, add_special_tokens=add)
                continue
            assert_same_encoding(ours.encode(*args, add_special_tokens=add), expected, where)
    for add in (True, False):
        batch = ["hellohelloworld", "hello" * 5, ("hellohelloworld", "abab")]
        try:
            expected = theirs.encode_batch(batch, add_special_tokens=add)
        except BaseException:
            with pytest.raises(PieceworksError):
                ours.encode_batch(batch, add_special_tokens=add)
            continue
        for o, t in zip(ours.encode_batch(batch, add_special_tokens=add), expected, strict=True):
            assert_same_encoding(o, t, f"batch, max_length {max_length} stride {stride} add_special_tokens {add}")


@pytest.mark.parametrize("kwargs", [
    dict(), dict(direction="left"), dict(length=9), dict(length=2), dict(pad_to_multiple_of=4),
    dict(pad_id=3, pad_type_id=1, pad_token="<pad>"),
])
def test_padding_of_batches_like_huggingface(kwargs):
    ours, theirs = make_pair(added=[dict(content=w) for w in ("hello", "world", "a", "b")])
    for t in (ours, theirs):
        t.enable_padding(**kwargs)
    batch = ["hello", "helloworldab", ("a", "bbb"), ""]
    for o, t in zip(ours.encode_batch(batch), theirs.encode_batch(batch)):
        assert_same_encoding(o, t, str(kwargs))
    assert ours.padding == theirs.padding


def test_padding_applies_to_overflowing_parts_too():
    ours, theirs = make_pair(added=[dict(content=w) for w in ("hello", "world", "a", "b")])
    for t in (ours, theirs):
        t.enable_truncation(2, stride=1)
        t.enable_padding(length=4)
    assert_same_encoding(ours.encode("helloworldabab"), theirs.encode("helloworldabab"))


def test_pretokenized_input_gives_word_ids_per_word():
    ours, theirs = make_pair(added=[dict(content=w) for w in ("hello", "world")])
    words = ["hello", "big", "worldhello", ""]
    assert_same_encoding(ours.encode(words, is_pretokenized=True), theirs.encode(words, is_pretokenized=True))
    pair = (["a", "hello"], ["world"])
    ours_b = ours.encode_batch([pair], is_pretokenized=True)[0]
    theirs_b = theirs.encode_batch([pair], is_pretokenized=True)[0]
    assert_same_encoding(ours_b, theirs_b)


def test_decode_skips_special_tokens_and_joins_with_spaces_without_decoder():
    ours, theirs = make_pair(ADDED_OPTIONS, SPECIAL)
    ids = ours.encode("[CLS] hello my world").ids
    for skip in (True, False):
        assert ours.decode(ids, skip_special_tokens=skip) == theirs.decode(ids, skip_special_tokens=skip)
    assert ours.decode_batch([ids, ids[:1]]) == theirs.decode_batch([ids, ids[:1]])


def test_decode_rejects_ids_outside_the_vocabulary():
    ours, _ = make_pair()
    with pytest.raises(UnknownIdError, match="not in the vocabulary"):
        ours.decode([1, 999])
    with pytest.raises(InputTypeError):
        ours.decode([1, "2"])


@pytest.mark.parametrize("bad", [b"bytes", 3, None, ["list"]])
def test_encode_rejects_non_str_input_with_a_clear_error(bad):
    ours, _ = make_pair()
    with pytest.raises(InputTypeError, match="must be a str"):
        ours.encode(bad)


def test_wrong_options_raise_config_errors_that_name_the_fix():
    ours, _ = make_pair(added=[dict(content="hello")])
    with pytest.raises(ConfigError, match="strategy"):
        ours.enable_truncation(5, strategy="middle_out")
    with pytest.raises(ConfigError, match="stride"):
        ours.enable_truncation(5, stride=6)
    with pytest.raises(ConfigError, match="direction"):
        ours.enable_padding(direction="up")
    with pytest.raises(ConfigError, match="only_second"):
        ours.enable_truncation(2, strategy="only_second")
        ours.encode("hellohelloworld")


def test_unknown_word_without_unk_token_in_vocab_is_a_clear_error():
    tok = pw.Tokenizer(pw.models.WordLevel({"a": 0}, unk_token="[UNK]"))
    with pytest.raises(PieceworksError, match="unk_token"):
        tok.encode("b")


def test_wordlevel_training_matches_huggingface(tmp_path):
    text = "the cat sat on the mat\nthe dog sat\n\nzebra zebra the\n"
    path = tmp_path / "corpus.txt"
    path.write_text(text)
    ours = pw.Tokenizer(pw.models.WordLevel(unk_token="[UNK]"))
    theirs = hf.Tokenizer(hf.models.WordLevel(unk_token="[UNK]"))
    for kwargs in (dict(), dict(vocab_size=5), dict(min_frequency=2)):
        ours.train([str(path)], pw.trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]"], **kwargs))
        theirs.train([str(path)], hf.trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]"], **kwargs))
        assert ours.get_vocab() == theirs.get_vocab(), kwargs
    assert ours.encode("the zebra\n").ids == theirs.encode("the zebra\n").ids


def test_training_with_the_wrong_trainer_says_which_model_it_needs():
    class Other(pw.models.Model):
        type_name = ""

    tok = pw.Tokenizer(pw.models.WordLevel(unk_token="[UNK]"))
    tok._model = Other()
    with pytest.raises(ConfigError, match="WordLevelTrainer trains WordLevel"):
        tok.train_from_iterator(["a"], pw.trainers.WordLevelTrainer())


def test_training_file_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nbroken \xff here\n")
    tok = pw.Tokenizer(pw.models.WordLevel(unk_token="[UNK]"))
    with pytest.raises(PieceworksError, match=r"bad.txt:2: invalid UTF-8"):
        tok.train([str(bad)], pw.trainers.WordLevelTrainer())
    with pytest.raises(PieceworksError, match="file not found"):
        tok.train([str(tmp_path / "missing.txt")], pw.trainers.WordLevelTrainer())


def test_tokenizer_pickles_and_copies():
    import copy
    import pickle

    ours, _ = make_pair(ADDED_OPTIONS, SPECIAL)
    clone = pickle.loads(pickle.dumps(ours))
    assert clone.to_str() == ours.to_str()
    assert copy.deepcopy(ours).encode("[CLS] my name").ids == ours.encode("[CLS] my name").ids


def test_async_api_gives_what_the_sync_calls_give():
    """Hugging Face's async_* methods: awaited in an event loop, the sync results (and errors)."""
    import asyncio

    ours, theirs = make_pair(special=SPECIAL)
    texts = ["hello world", "my name is a", "[CLS] b [SEP]"]

    async def both(tok):
        one = await tok.async_encode("hello world", "a b")
        many = await tok.async_encode_batch(texts)
        fast = await tok.async_encode_batch_fast(texts, False, False)
        decoded = await tok.async_decode_batch([e.ids for e in many], skip_special_tokens=False)
        return one, many, fast, decoded

    one, many, fast, decoded = asyncio.run(both(ours))
    h_one, h_many, h_fast, h_decoded = asyncio.run(both(theirs))
    assert_same_encoding(one, h_one)
    for mine, hfs in zip(many, h_many):
        assert_same_encoding(mine, hfs)
    # (Hugging Face's fast batch leaves tokens and offsets empty; ours are whole, so compare ids.)
    assert [e.ids for e in fast] == [e.ids for e in h_fast] == [e.ids for e in ours.encode_batch(texts, False, False)]
    assert decoded == h_decoded == [ours.decode(e.ids, skip_special_tokens=False) for e in many]
    with pytest.raises(InputTypeError):
        asyncio.run(ours.async_encode_batch("not a list"))


def test_encode_batch_fast_takes_is_pretokenized_positionally():
    ours, theirs = make_pair()
    words = [["hello", "world"], ["a", "b"]]
    assert ([e.ids for e in ours.encode_batch_fast(words, True, False)]
            == [e.ids for e in theirs.encode_batch_fast(words, True, False)] == [[1, 2], [3, 4]])


def test_from_pretrained_fetches_tokenizer_json_through_huggingface_hub(monkeypatch, tmp_path):
    """From the Hub via huggingface_hub (faked here: no network), or from a local folder."""
    import sys
    import types

    ours, _ = make_pair(special=SPECIAL)
    ours.save(str(tmp_path / "tokenizer.json"))
    asked = []
    fake = types.ModuleType("huggingface_hub")

    def hf_hub_download(**kwargs):
        asked.append(kwargs)
        return str(tmp_path / "tokenizer.json")

    fake.hf_hub_download = hf_hub_download
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    loaded = pw.Tokenizer.from_pretrained("org/model", revision="v1", token="secret")
    assert asked == [{"repo_id": "org/model", "filename": "tokenizer.json", "revision": "v1", "token": "secret"}]
    assert loaded.to_str() == ours.to_str()
    assert pw.Tokenizer.from_pretrained(str(tmp_path)).to_str() == ours.to_str() and len(asked) == 1
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)     # (an import of it now fails)
    with pytest.raises(ConfigError, match="pip install huggingface_hub"):
        pw.Tokenizer.from_pretrained("org/model")


@pytest.mark.parametrize("call", [
    lambda t, e: t.id_to_token(-1), lambda t, e: t.id_to_token(2**32), lambda t, e: t.decode([-1]),
    lambda t, e: t.decode([2**32]), lambda t, e: t.decode_batch([[5, -1]]), lambda t, e: e.token_to_chars(-1),
    lambda t, e: e.token_to_word(-1), lambda t, e: e.token_to_sequence(-1), lambda t, e: e.char_to_token(-1),
    lambda t, e: e.char_to_word(-1), lambda t, e: e.word_to_tokens(-1), lambda t, e: e.word_to_chars(-1),
    lambda t, e: e.char_to_token(0, -1), lambda t, e: e.word_to_tokens(0, -1),
])
def test_a_negative_position_or_id_is_an_overflow_error_as_in_huggingface(call, shared_data):
    """Hugging Face reads ids and positions as unsigned ints: -1 is an OverflowError, not the last
    token (None would have pretended to answer); an id past 2**32 - 1 too."""
    path = str(shared_data / "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json")
    theirs, ours = hf.Tokenizer.from_file(path), pw.Tokenizer.from_file(path)
    with pytest.raises(OverflowError):
        call(theirs, theirs.encode("hello world"))
    with pytest.raises(OutOfRangeError):
        call(ours, ours.encode("hello world"))
