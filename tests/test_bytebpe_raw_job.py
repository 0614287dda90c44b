"""``Tokenizer.encode_batch`` of byte-level BPE as one kernel job (``ByteBPE.raw_batch_job``).

Threads encode chunks of the list as they come free and the calling thread
makes lazy encodings of the finished ones; texts NFC changes are normalized
by the thread that takes them. Texts that may hold an added token (and
those NFC changes that hold one's string), and texts truncation may not cut
here, are left out (None) and encoded one by one. Every test holds the batch to the
same tokenizer with its plan switched off (the general pipeline), field by
field, overflowing parts and padding included.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from parity import assert_same_encoding, general_path
from pieceworks import AddedToken, Tokenizer
from pieceworks._kernels.encoding import EncodingWithIds
from pieceworks.byte_level import byte_chars_to_bytes
from pieceworks.encoding import Encoding, PLAIN_FRAME
from pieceworks.models import BPE
from pieceworks.normalizers import NFC
from pieceworks.pre_tokenizers import ByteLevel, Digits, Sequence
from pieceworks.processors import TemplateProcessing
from pieceworks.trainers import BpeTrainer

CORPUS = ["hello world, hello worlds", "the cat sat on the mat", "héllo wörld ünïcode café", "x = f(y) + 1;"] * 20


def trained(normalizer=None) -> Tokenizer:
    tok = Tokenizer(BPE())
    tok.normalizer = normalizer
    tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(CORPUS, BpeTrainer(vocab_size=320, special_tokens=["<|endoftext|>", "<|pad|>"],
                                               initial_alphabet=ByteLevel.alphabet(), show_progress=False))
    tok.post_processor = TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)])
    return tok


def general_twin(tok: Tokenizer, monkeypatch) -> Tokenizer:
    monkeypatch.setenv("PIECEWORKS_NO_FAST", "1")
    twin = Tokenizer.from_str(tok.to_str())
    assert twin._current_plan() is None
    monkeypatch.delenv("PIECEWORKS_NO_FAST")
    return twin


TEXTS = ["hello world", "", "a <|endoftext|> b", "cafe\u0301 and caf\u00e9", "the cat " * 40, "<|pad|>",
         "x = f(y) + 1;", "ünïcode " * 3, "< | not a token", "tail <|endof"] * 7


def assert_batches_equal(tok, twin, texts, **kwargs):
    ours, theirs = tok.encode_batch(texts, **kwargs), twin.encode_batch(texts, **kwargs)
    assert len(ours) == len(theirs)
    for text, a, b in zip(texts, ours, theirs):
        assert_same_encoding(a, b, repr(text[:40]))


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("normalizer", [None, "nfc"])
def test_job_batches_equal_the_general_path(monkeypatch, threads, normalizer):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", threads)
    tok = trained(NFC() if normalizer else None)
    twin = general_twin(tok, monkeypatch)
    for add in (True, False):
        assert_batches_equal(tok, twin, TEXTS, add_special_tokens=add)


@pytest.mark.parametrize("strategy,stride,direction", [("longest_first", 0, "right"), ("longest_first", 2, "left"),
                                                       ("only_first", 1, "right"), ("only_second", 0, "right")])
@pytest.mark.parametrize("normalizer", [None, "nfc"])     # (NFC: 'cafe\u0301' is cut after it, in the job)
def test_job_batches_truncate_and_pad_as_the_general_path(monkeypatch, strategy, stride, direction, normalizer):
    tok = trained(NFC() if normalizer else None)
    twin = general_twin(tok, monkeypatch)
    texts = [t for t in TEXTS if "<|" not in t]
    for t in (tok, twin):
        t.enable_truncation(6, stride=stride, strategy=strategy, direction=direction)
        t.enable_padding(pad_id=1, pad_token="<|pad|>")
    if strategy == "only_second":       # refused for single texts, both ways
        with pytest.raises(Exception) as ours:
            tok.encode_batch(texts)
        with pytest.raises(Exception) as theirs:
            twin.encode_batch(texts)
        assert type(ours.value) is type(theirs.value)
        return
    assert_batches_equal(tok, twin, texts)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_encodings_made_with_their_ids_behave_as_any_encoding(monkeypatch, threads):
    # Without padding the job builds each ids list and keeps it in EncodingWithIds's slot: those
    # encodings must read, pad, merge, copy, pickle and truncate as the general path's do.
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", threads)
    tok = trained()
    twin = general_twin(tok, monkeypatch)
    texts = [t for t in TEXTS if "<|" not in t]
    ours, theirs = tok.encode_batch(texts), twin.encode_batch(texts)
    assert all(type(e) is EncodingWithIds for e in ours)
    for text, a, b in zip(texts, ours, theirs):
        assert_same_encoding(a, b, repr(text[:40]))
        assert pickle.loads(pickle.dumps(a)) == b
        copied = a.copy()
        copied.ids.append(7)
        assert a.ids == b.ids
        with pytest.raises(AttributeError):
            del a.ids
        assert a.ids == b.ids
        for e in (a, b):
            e.pad(len(b) + 3, direction="left", pad_id=1, pad_token="<|pad|>")
            e.merge_with(twin.encode("the cat", add_special_tokens=False))
        assert_same_encoding(a, b, repr(text[:40]))
        for e in (a, b):
            e.truncate(4, stride=1)
        assert_same_encoding(a, b, repr(text[:40]))


def test_truncated_batches_without_padding_keep_their_cut_ids(monkeypatch):
    # Texts truncation cuts are not made with their ids list (only the rest are EncodingWithIds):
    # the cut ones and their overflowing parts build theirs as any lazy encoding.
    tok = trained()
    twin = general_twin(tok, monkeypatch)
    texts = [t for t in TEXTS if "<|" not in t]
    for t in (tok, twin):
        t.enable_truncation(6, stride=2)
    ours = tok.encode_batch(texts)
    assert {type(e) for e in ours} == {Encoding, EncodingWithIds}
    assert_batches_equal(tok, twin, texts)
    assert_batches_equal(tok, twin, texts, add_special_tokens=False)


def test_the_job_is_the_path_taken(monkeypatch):
    # Without this the tests above could pass on the ranges path alone.
    tok = trained()
    calls = []
    plan = tok._current_plan()
    real = type(plan).encode_job

    def spy(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        calls.append([e is None for e in out])
        return out

    monkeypatch.setattr(type(plan), "encode_job", spy)
    texts = ["hello world", "a <|endoftext|> b", "cat"]
    batch = tok.encode_batch(texts)
    # The text holding an added token is encoded around it in the job too; with padding (whose
    # encodings stay lazy) it is left to the one-by-one path, which finds the token.
    tok.enable_padding(pad_id=1, pad_token="<|pad|>")
    padded = tok.encode_batch(texts)
    assert calls == [[False, False, False], [False, True, False]]
    assert tok.token_to_id("<|endoftext|>") in batch[1].ids and batch[1].ids == padded[1].ids


def _nones_from_the_job(tok, monkeypatch) -> list[int]:
    """How many texts each ``encode_job`` call of ``tok``'s plan leaves to the long way (None), as it goes."""
    calls = []
    plan = tok._current_plan()
    real = type(plan).encode_job

    def spy(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        calls.append(sum(e is None for e in out))
        return out

    monkeypatch.setattr(type(plan), "encode_job", spy)
    return calls


@pytest.mark.parametrize("threads", ["1", "2"])
def test_texts_holding_added_tokens_are_encoded_around_them_in_the_job(monkeypatch, threads):
    # The job's threads ask each text whether it holds an added token as they take it, and encode
    # such texts (here most of the batch, as in chat-formatted data) around the tokens: the
    # specials first, then, in the stretches between them, the tokens add_tokens added (matched
    # after normalizing, and with no normalizer that is the text as it is).
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", threads)
    tok = trained()
    tok.add_tokens(["cat", "wörld"])
    twin = general_twin(tok, monkeypatch)
    texts = [f"<|endoftext|>{t}<|pad|>" if k % 3 else t for k, t in enumerate(TEXTS * 40)]
    calls = _nones_from_the_job(tok, monkeypatch)
    assert_batches_equal(tok, twin, texts)
    assert calls == [0]


@pytest.mark.parametrize("threads", ["1", "2"])
def test_texts_holding_a_token_that_strips_are_left_to_the_long_way(monkeypatch, threads):
    # A token that strips the spaces beside it has no span of its own to encode around: the texts
    # holding it come back None from the job, found by its threads, and go the long way.
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", threads)
    tok = trained()
    tok.add_tokens([AddedToken("cat", rstrip=True), "wörld"])
    twin = general_twin(tok, monkeypatch)
    texts = [f"<|endoftext|>{t}<|pad|>" if k % 3 else t for k, t in enumerate(TEXTS * 40)]
    calls = _nones_from_the_job(tok, monkeypatch)
    assert_batches_equal(tok, twin, texts)
    holding = sum("cat" in t for t in texts)
    assert calls == [holding] and holding >= 100


def test_texts_holding_added_tokens_give_their_ids_first_and_the_rest_when_read(monkeypatch):
    # Such a text's encoding holds its ids, joined around its tokens, and works out its offsets,
    # words and tokens on the tokens found at encoding time, when first read: adding a token
    # afterwards changes nothing (the general path's encodings are made whole at once).
    tok = trained()
    tok.add_tokens([AddedToken("cat", normalized=False)])   # (matched in the text as it is, as the specials)
    twin = general_twin(tok, monkeypatch)
    texts = [f"<|endoftext|>user\n{t}<|pad|>" for t in TEXTS if "<|" not in t] * 5
    ours, theirs = tok.encode_batch(texts), twin.encode_batch(texts)
    assert all(type(e) is EncodingWithIds and e._spans_from is not None for e in ours)
    for t in (tok, twin):
        t.enable_truncation(4)      # (longer texts go the long way, cut there)
    assert_batches_equal(tok, twin, texts[:7])
    tok.add_tokens(["user", "hello"])
    for text, a, b in zip(texts, ours, theirs):
        assert_same_encoding(a, b, repr(text[:40]))


def test_a_tokenizer_is_freed_when_its_encodings_are_without_the_collector():
    # Encodings that work their offsets out later refer to their tokenizer; the tokenizer must not
    # refer back to what they hold, or it would wait for the cyclic collector to be freed.
    import gc
    import weakref

    tok = trained()
    alive = weakref.ref(tok)
    encodings = [tok.encode("a <|endoftext|> b"), *tok.encode_batch(["x <|endoftext|>", "<|pad|> y"])]
    assert all(e._spans_from is not None for e in encodings)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del tok
        assert alive() is not None and encodings[0].offsets
        del encodings
        assert alive() is None
    finally:
        if enabled:
            gc.enable()


def test_skipped_texts_come_back_none_from_the_kernel():
    tok = trained(NFC())
    plan = tok._current_plan()
    kernel = plan._current_kernel()
    texts = ["hello", "cafe\u0301", "world", "x" * 10, "ae\u0316\u0301", "x\u0316\u0301"]
    job = kernel.raw_batch_job(texts, Encoding, plan._tokens, PLAIN_FRAME, None, True, 8, [2], EncodingWithIds)
    out = job.run()
    assert [e is None for e in out] == [False, False, True, True, False, False]    # skip list, too long
    assert out[0].ids == tok.encode("hello", add_special_tokens=False).ids


def test_texts_nfc_changes_are_normalized_in_the_job():
    # NFC changes 'cafe\u0301' (a mark right after the letter it joins: the quick check knows) and
    # 'ae\u0316\u0301' (the mark joins the 'e' across another: only normalizing tells); not
    # 'x\u0316\u0301'. The threads encode their NFC forms; the offsets point into the texts.
    tok = trained(NFC())
    general = general_path(lambda: trained(NFC()))
    plan = tok._current_plan()
    texts = ["cafe\u0301 \u212b", "ae\u0316\u0301", "x\u0316\u0301", "\u1100\u1161\u11a8 e\u0301\u0301"] * 3
    job = plan._current_kernel().raw_batch_job(texts, Encoding, plan._tokens, PLAIN_FRAME, None, True, 1 << 20)
    for text, encoding in zip(texts, job.run()):
        assert_same_encoding(encoding, general.encode(text, add_special_tokens=False), repr(text))


def test_a_text_holding_an_added_token_only_once_normalized_takes_the_long_way(monkeypatch):
    # 'e\u0301' holds no added token, but its NFC form is the token '\u00e9' (matched after
    # normalizing): the job leaves it out, as it does a text holding one before NFC.
    tok = _with_tokens_matched_after_nfc()
    plan = tok._current_plan()
    texts = ["cafe\u0301 x", "ab\u0301", "u\u0301"]
    job = plan._current_kernel().raw_batch_job(texts, Encoding, plan._tokens, PLAIN_FRAME, None, True, 1 << 20,
                                               finder=tok._added.finder)
    assert [e is None for e in job.run()] == [True, True, False]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("helo wrdcat<|>é\u0301ü;\n")), max_size=30), max_size=40))
def test_any_batch_equals_one_by_one(texts):
    tok = _TOK
    batch = tok.encode_batch(texts)
    for text, enc in zip(texts, batch):
        assert_same_encoding(enc, tok._encode_general(text), repr(text))


def _with_overlapping_tokens(strip: bool, second_pass: bool) -> Tokenizer:
    tok = trained()
    tok.add_special_tokens(["<s>", "<s>x", "b<"])       # (leftmost-longest: '<s>x' over '<s>', 'b<s>' is 'b<' 's>')
    tok.add_tokens([AddedToken("ab", normalized=False, rstrip=strip)])
    if second_pass:     # matched after normalizing: only between the others ('a<s>' is 'a' '<s>', not 'a<' 's>')
        tok.add_tokens(["a<", "s>", "xb", "x"])
    return tok


_OVERLAPPING = {(strip, second): (_with_overlapping_tokens(strip, second),
                                  general_path(lambda: _with_overlapping_tokens(strip, second)))
                for strip in (False, True) for second in (False, True)}


_PARTS = st.sampled_from(["<s>", "<s>x", "b<", "ab", "a", "b", "x", "s", ">", "<", " ", "é", "\n"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(_PARTS, max_size=12).map("".join), min_size=1, max_size=30), st.booleans(),
       st.booleans())
@example(["b<s>", "<s>x", "ab<s>xb<", "xb<s>x ab", "<s><s>x", ""], False, False)
@example(["a<s>", "xa<s>x", "s>a<", "b<s>>", "a<b<s>xb"], False, True)
def test_batches_of_texts_with_overlapping_tokens_equal_the_general_path(texts, strip, second_pass):
    # Around the tokens in the job: leftmost-longest, each stretch between them alone, looked at
    # again for the tokens matched after normalizing (second_pass); a token that strips spaces
    # (strip) sends its texts the long way. Field by field, and ids first.
    tok, general = _OVERLAPPING[strip, second_pass]
    ids = [e.ids for e in tok.encode_batch(texts)]
    batch = tok.encode_batch(texts)
    for text, enc, first in zip(texts, batch, ids):
        expected = general.encode(text)
        assert first == expected.ids, repr(text)
        assert_same_encoding(enc, expected, repr(text))
        one = tok.encode(text)      # (one text: the same ids first, the rest when read)
        assert one.ids == expected.ids, repr(text)
        assert_same_encoding(one, expected, repr(text))


def _with_tokens_matched_after_nfc() -> Tokenizer:
    tok = trained(NFC())
    tok.add_special_tokens(["<s>"])
    # Matched in the NFC text: 'e\u0301' is 'é' there; 'x\u0301' has no composite, so stays; the
    # token 'o\u0301' is matched as NFC spells it ('ó') and spelled so in the tokens.
    tok.add_tokens(["ab", "\u00e9", "s>", "x\u0301", "o\u0301"])
    return tok


_NFC_ADDED = (_with_tokens_matched_after_nfc(), general_path(_with_tokens_matched_after_nfc))
_NFC_PARTS = st.sampled_from(["<s>", "ab", "a", "b", "e", "\u0301", "\u00e9", "x", "s", ">", " ", "\u0323", "\n",
                              "o", "\u00f3"])


@settings(max_examples=120, deadline=None)
@given(st.lists(st.lists(_NFC_PARTS, max_size=12).map("".join), min_size=1, max_size=30))
@example(["<s>\u0301ab", "e<s>\u0301", "x\u0323\u0301", "ab\u0301", "\u00e9\u0323", "e\u0301s>", "b\u00f3 o\u0301"])
def test_nfc_texts_with_added_tokens_equal_the_general_path(texts):
    # With NFC, the tokens add_tokens added are matched in the normalized text. A text NFC keeps
    # is encoded around them in the kernel, a second pass in the text as it is (each stretch
    # between the specials is one NFC keeps too); the others take the long way. Batches (ids
    # first, then field by field) and one text.
    tok, general = _NFC_ADDED
    ids = [e.ids for e in tok.encode_batch(texts)]
    for text, enc, first in zip(texts, tok.encode_batch(texts), ids):
        expected = general.encode(text)
        assert first == expected.ids, repr(text)
        assert_same_encoding(enc, expected, repr(text))
        one = tok.encode(text)
        assert one.ids == expected.ids, repr(text)
        assert_same_encoding(one, expected, repr(text))


def test_one_text_takes_texts_nfc_changes_unless_their_nfc_form_holds_a_token():
    # Tokenizer.encode's snapshot with tokens matched after NFC: a text NFC changes is normalized
    # and encoded in C, unless its NFC form holds a token's string ('cafe\u0301': 'é').
    tok, general = _NFC_ADDED
    plan = tok._current_plan()
    one = plan.one_text_unchanged(tok._added.finder)[0]
    assert one("a\u0301 b") is not None
    assert one("cafe\u0301") is None
    assert plan.one_text_unchanged()[0]("a\u0301 b") is None      # (no finder: every such text)
    for text in ["a\u0301 b", "cafe\u0301"]:
        assert_same_encoding(tok.encode(text), general.encode(text), repr(text))


@pytest.mark.parametrize("threads", ["1", "2"])
def test_the_job_encodes_around_tokens_matched_after_nfc_in_texts_nfc_keeps(monkeypatch, threads):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", threads)
    tok, general = _NFC_ADDED
    texts = ["ab<s>x\u0301 \u00e9", "cafe\u0301 ab", "the <s> cat s>", "plain"] * 300
    calls = _nones_from_the_job(tok, monkeypatch)
    batch = tok.encode_batch(texts)
    assert calls == [300]       # only the texts NFC changes ('cafe\u0301 ab')
    for text, enc in zip(texts[:4], batch):
        assert_same_encoding(enc, general.encode(text), repr(text))


_TOK = trained(NFC())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("<|>abe ndtx")), max_size=12), max_size=12),
       st.lists(st.sampled_from(["<|endoftext|>", "<|eot|>", "<|bad", "ab", "<x>", "|"]), min_size=1, max_size=4))
def test_texts_to_ask_lists_every_text_that_may_hold_a_token(texts, tokens):
    tok = Tokenizer(BPE())
    tok.add_special_tokens(tokens)
    added = tok._added
    # Exactly the texts the long way would split a token out of (its matcher finds one); a
    # token cut between two texts is in neither.
    def matched(text):
        return any(m is not None and m[0].spans(text) for m in (added._raw_matcher, added._normalized_matcher))

    assert added.texts_to_ask(texts) == [k for k, text in enumerate(texts) if matched(text)]
    assert [added.may_occur_in(text) for text in texts] == [bool(matched(text)) for text in texts]
    assert added.texts_to_ask(["".join(texts)]) == ([0] if matched("".join(texts)) else [])


# -- texts NFC changes: NFC line by line, the aligned normalizer only where a line changes ------

NFC_ALPHABET = list("ae x\n\r") + ["\u0301", "\u0344", "\uf900", "\u1100", "\u1161", "\u11a8", "\u00e9", "\u212b",
                                   "\u0327", "\u0323", "\U0001d15e"]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(NFC_ALPHABET), max_size=40))
def test_texts_nfc_changes_encode_as_the_general_path(text):
    tok, twin = _NFC_PAIR
    assert_same_encoding(tok.encode(text), twin.encode(text), repr(text))


def test_texts_nfc_changes_take_the_raw_path_and_batch_alike():
    tok, twin = _NFC_PAIR
    texts = ["cafe\u0301\nplain line\n\u0301starts with a mark\nA\u030a and \u212b\n", "\n\n", "e\u0301",
             "x\r\ne\u0301\r\n", "\uf900\u1100\u1161\u11a8 end"]
    plan = tok._current_plan()
    one_text = plan.one_text()[0]
    for text in texts:
        assert plan.encode_raw(text) is not None, repr(text)      # no longer sent down the pipeline
        assert one_text(text) is not None, repr(text)             # nor by encode's snapshot
    for a, b in zip(tok.encode_batch(texts * 3), twin.encode_batch(texts * 3)):
        assert_same_encoding(a, b)


def _nfc_pair():
    tok = trained(NFC())
    mp = pytest.MonkeyPatch()
    twin = general_twin(tok, mp)
    mp.undo()
    return tok, twin


_NFC_PAIR = _nfc_pair()


def test_ids_are_built_in_the_job_unless_padding_will_pad_by_frames(monkeypatch):
    tok = trained()
    twin = general_twin(tok, monkeypatch)
    texts = ["hello world", "the cat sat", "x = f(y) + 1;"] * 5
    batch = tok.encode_batch(texts)
    assert all(e._ids is not None for e in batch)          # built on the calling thread in the job
    for a, b in zip(batch, twin.encode_batch(texts)):
        assert_same_encoding(a, b)
    for t in (tok, twin):
        t.enable_padding(pad_id=1, pad_token="<|pad|>", length=20)
    padded = tok.encode_batch(texts)
    assert all(e._ids is None for e in padded)             # left for padding by frames
    for a, b in zip(padded, twin.encode_batch(texts)):
        assert_same_encoding(a, b)


# -- encode_batch_ids: the job's ids lists alone, no Encoding a text ---------------------------------

def _ids_of(batch) -> list[list[int]]:
    return [e.ids for e in batch]


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("normalizer", [None, "nfc"])
@pytest.mark.parametrize("truncate", [False, True])
def test_encode_batch_ids_equals_the_ids_of_the_general_path(monkeypatch, threads, normalizer, truncate):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", threads)
    tok = trained(NFC() if normalizer else None)
    twin = general_twin(tok, monkeypatch)
    if truncate:        # (the cat text is cut: it goes through its encoding's ids in the job)
        for t in (tok, twin):
            t.enable_truncation(12)
    for add in (True, False):
        ids = tok.encode_batch_ids(TEXTS, add_special_tokens=add)
        assert all(type(x) is list for x in ids)
        assert ids == _ids_of(twin.encode_batch(TEXTS, add_special_tokens=add))


def test_encode_batch_ids_makes_no_encoding_in_the_job(monkeypatch):
    tok = trained()
    seen = []
    plan = tok._current_plan()
    real = type(plan).encode_job

    def spy(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        seen.append((kwargs.get("ids_only"), {type(x).__name__ for x in out}))
        return out

    monkeypatch.setattr(type(plan), "encode_job", spy)
    texts = ["hello world", "a <|endoftext|> b", "cat", "caf\u00e9"]
    assert tok.encode_batch_ids(texts) == _ids_of(tok.encode_batch(texts))
    # The text holding an added token is encoded around it in the job, and its ids come back too.
    assert seen == [(True, {"list"}), (False, {"EncodingWithIds"})]


def test_encode_batch_ids_falls_back_to_encodings_where_the_job_does_not_go(monkeypatch):
    tok = trained()
    twin = general_twin(tok, monkeypatch)
    pairs = [("hello world", "the cat"), ("a <|endoftext|> b", "x")]
    words = [["hello", " world"], ["the", " cat", " sat"]]
    assert tok.encode_batch_ids(pairs) == _ids_of(twin.encode_batch(pairs))
    assert tok.encode_batch_ids(words, is_pretokenized=True) == _ids_of(twin.encode_batch(words, is_pretokenized=True))
    for t in (tok, twin):
        t.enable_padding(pad_id=1, pad_token="<|pad|>")
    padded = tok.encode_batch_ids(TEXTS)
    assert padded == _ids_of(twin.encode_batch(TEXTS)) and len({len(x) for x in padded}) == 1


def test_the_kernel_refuses_ids_only_without_the_encodings_class():
    tok = trained()
    kernel = tok._current_plan()._prepare()[0]
    with pytest.raises(ValueError, match="ids_only needs an ids_cls"):
        kernel.raw_batch_job(["a"], Encoding, tok._current_plan()._tokens, PLAIN_FRAME, None, False, 1 << 20,
                             ids_only=True)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(_PARTS, max_size=12).map("".join), min_size=1, max_size=30), st.booleans(),
       st.booleans())
def test_encode_batch_ids_of_texts_with_overlapping_tokens_equal_the_general_path(texts, strip, second_pass):
    tok, twin = _OVERLAPPING[(strip, second_pass)]
    assert tok.encode_batch_ids(texts) == _ids_of(twin.encode_batch(texts))


# -- BPE-dropout in the kernel: the general path's ids from the same seed, on one thread ---------------

PLAIN = ["hello world", "", "the cat sat on the mat", "cafe\u0301 and caf\u00e9", "the cat " * 40,
         "x = f(y) + 1;", "in 2024 or 1999", "\u00fcn\u00efcode " * 3, "tail <|endof"] * 4


def _dropout_pair(dropout: float, seed: int, normalizer=None, cut: bool = False) -> tuple[Tokenizer, Tokenizer]:
    """A trained tokenizer with BPE-dropout (its plan on), and its general-path twin, seeded alike;
    ``cut``: digits cut apart before the ByteLevel (the cut plan's, fast/cut_byte_bpe.py)."""
    def make():
        tok = trained(normalizer)
        if cut:
            tok.pre_tokenizer = Sequence([Digits(individual_digits=True), ByteLevel(add_prefix_space=False)])
        tok.model.dropout = dropout
        tok.model.seed = seed
        return tok

    return make(), general_path(make)


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("dropout", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("normalizer", [None, "nfc"])
@pytest.mark.parametrize("cut", [False, True])
def test_dropout_is_merged_in_the_kernel_as_the_general_path_merges(monkeypatch, threads, dropout, normalizer, cut):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", threads)
    fast, general = _dropout_pair(dropout, 11, NFC() if normalizer else None, cut)
    plan = fast._current_plan()
    assert type(plan).__name__ == ("CutByteBpePlan" if cut else "ByteBpePlan")
    assert plan._prepare()[0].dropout == dropout
    for text in PLAIN:      # (one by one, the draws in the same order)
        assert_same_encoding(fast.encode(text), general.encode(text), repr(text[:40]))
    for a, b in zip(fast.encode_batch(PLAIN * 3), general.encode_batch(PLAIN * 3)):
        assert_same_encoding(a, b)
    assert fast.encode_batch_ids(PLAIN) == _ids_of(general.encode_batch(PLAIN))


@pytest.mark.parametrize("cut", [False, True])
def test_dropout_after_a_normalizer_the_kernel_lacks_is_in_turn_too(monkeypatch, cut):
    """NFKC then Lowercase (normalized_first.py wraps the byte-level plan): still one by one, in order."""
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    from pieceworks.normalizers import NFKC, Lowercase
    from pieceworks.normalizers import Sequence as NormalizerSequence

    fast, general = _dropout_pair(0.3, 4, NormalizerSequence([NFKC(), Lowercase()]), cut)
    assert type(fast._current_plan()).__name__ == "NormalizedFirstPlan" and fast._current_plan().samples
    texts = [t.upper() for t in PLAIN + ["\ufb01ne \u00bd \uff21\uff22"]] * 20
    assert _ids_of(fast.encode_batch(texts)) == _ids_of(general.encode_batch(texts))
    fast, general = _dropout_pair(0.3, 4, NormalizerSequence([NFKC(), Lowercase()]), cut)
    for text in texts[:len(PLAIN) + 1]:     # (one text: not encoded twice where offsets move)
        assert_same_encoding(fast.encode(text), general.encode(text), repr(text[:40]))


@pytest.mark.parametrize("padding", [dict(), dict(pad_to_multiple_of=8), dict(length=64)])
def test_dropout_batches_of_pairs_cut_and_padded_equal_the_general_path(padding):
    fast, general = _dropout_pair(0.4, 9)
    # (A pair whose first text holds an added token: the batch way took the second first.)
    items = [*PLAIN[:6], ("hello world", "the cat sat"), ("a <|endoftext|> b", ""),
             ("a <|endoftext|> hello world the cat", "the cat sat on the mat hello"), "the cat " * 40]
    for tok in (fast, general):
        tok.enable_truncation(24)
        tok.enable_padding(pad_id=1, pad_token="<|pad|>", **padding)
    for a, b in zip(fast.encode_batch(items), general.encode_batch(items)):
        assert_same_encoding(a, b)
    assert fast.encode_batch_ids(items) == _ids_of(general.encode_batch(items))
    words = [["hello", " world"], ["a<|endoftext|>b", " x"], ["the", " cat", " sat"], [], ["cafe\u0301", " x"] * 5]
    for a, b in zip(fast.encode_batch(words, is_pretokenized=True), general.encode_batch(words, is_pretokenized=True)):
        assert_same_encoding(a, b)


def test_dropout_of_one_drops_every_merge_and_of_none_none():
    fast, _ = _dropout_pair(1.0, 3)
    plain = trained()
    batch = fast.encode_batch(PLAIN, add_special_tokens=False)
    assert all(len(byte_chars_to_bytes(t)) == 1 for e in batch for t in e.tokens)
    assert [b"".join(map(byte_chars_to_bytes, e.tokens)) for e in batch] == [t.encode() for t in PLAIN]
    fast.model.dropout = None       # (the plan's kernel is the plain one again)
    assert fast._current_plan()._current_kernel().dropout == 0.0
    assert _ids_of(fast.encode_batch(PLAIN)) == _ids_of(plain.encode_batch(PLAIN))


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_seeded_dropout_batch_gives_the_same_ids_every_run(monkeypatch, threads):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", threads)
    texts = PLAIN * 60 + ["a <|endoftext|> b"] * 3      # (enough for threads, were they used)
    runs = []
    for _ in range(3):
        fast, _ = _dropout_pair(0.3, 5)
        runs.append((_ids_of(fast.encode_batch(texts)), fast.encode_batch_ids(texts)))
    assert runs[0] == runs[1] == runs[2]
    others = {str(_dropout_pair(0.3, seed)[0].encode_batch_ids(texts)) for seed in range(4)}
    assert len(others) == 4


def test_the_kernel_takes_dropout_once_and_only_from_an_encoder_with_it():
    from pieceworks._kernels.bpe_encode import BpeEncoder  # noqa: F401  (the type use_dropout takes)
    from pieceworks.fast.byte_bpe import build_kernel
    from pieceworks._kernels.bytebpe import Pattern

    fast, _ = _dropout_pair(0.2, 1)
    kernel = fast._current_plan()._current_kernel()
    with pytest.raises(ValueError, match="only once"):
        kernel.use_dropout(fast.model._get_encoder())
    plain = trained()
    fresh, _ = build_kernel(plain.model, Pattern.PAT_GPT2)
    with pytest.raises(ValueError, match="no dropout"):
        fresh.use_dropout(plain.model._get_encoder())
    with pytest.raises(TypeError):
        fresh.use_dropout(None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("helo wrdcat\u00e9\u0301\u00fc;\n\U0001F60012")), max_size=30),
                min_size=1, max_size=20), st.sampled_from([0.05, 0.3, 0.9]), st.integers(0, 2**64 - 1), st.booleans())
def test_any_dropout_batch_equals_the_general_path(texts, dropout, seed, cut):
    fast, general = _dropout_pair(dropout, seed, cut=cut)
    assert _ids_of(fast.encode_batch(texts)) == _ids_of(general.encode_batch(texts))
    fast, general = _dropout_pair(dropout, seed, cut=cut)      # (each generator from the seed again)
    general_ids = [general.encode(t).ids for t in texts]
    assert [fast.encode(t).ids for t in texts] == general_ids
