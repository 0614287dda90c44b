"""A pre-tokenized sequence's words in one kernel call (the one-text calls' ``encode_words``:
``bytebpe.OneText``, ``bert_fast.OneText``, ``bpe_encode.OneSpmText``; for plans whose one-text
call is Python, Unigram's and BARThez's, their around-tokens call's): every field as Hugging
Face gives it, on any words and batches of them, for each kind of call, and the same result as
the words encoded one by one and joined, which is what the call replaces.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pieceworks import Tokenizer, decoders, normalizers, pre_tokenizers
from pieceworks.models import BPE, Unigram, WordPiece
from pieceworks.trainers import BpeTrainer, UnigramTrainer, WordPieceTrainer
from pieceworks._kernels.raw_encoding import join_words, whole_result
from parity import assert_same_encoding

tokenizers = pytest.importorskip("tokenizers")

CORPUS = ["hello world, hello worlds", "the cat sat on the mat", "héllo wörld ünïcode café",
          "中文 文字 😀 naïve", "x = f(a, b)  # two  spaces"] * 20
# Letters, spaces, marks NFC composes, CJK, an emoji, a char no corpus has, the ▁ Metaspace uses.
WORD = st.text(alphabet=st.sampled_from(list("ab xyzéü\u0301\u0323中文😀Ω\u2581\t,")), max_size=8)
WORDS = st.lists(WORD, min_size=1, max_size=6)


def byte_level(prefix_space: bool, nfc: bool) -> Tokenizer:
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
    tok.decoder = decoders.ByteLevel()
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.train_from_iterator(CORPUS, BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                               special_tokens=["<|endoftext|>"], show_progress=False))
    return tok


def word_piece() -> Tokenizer:
    tok = Tokenizer(WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(CORPUS, WordPieceTrainer(vocab_size=120, special_tokens=["[UNK]", "[CLS]"],
                                                     show_progress=False))
    return tok


def metaspace_bpe(scheme: str) -> Tokenizer:
    tok = Tokenizer(BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme=scheme)
    tok.train_from_iterator(CORPUS, BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>"], show_progress=False))
    return tok


def spm_bpe() -> Tokenizer:
    """SentencePiece-style BPE as Gemma's file has it: spaces replaced by ▁, no pre-tokenizer, byte fallback."""
    tok = metaspace_bpe("always")
    made = tokenizers.Tokenizer.from_str(tok.to_str())
    made.normalizer = tokenizers.normalizers.Replace(" ", "\u2581")
    made.pre_tokenizer = None
    return Tokenizer.from_str(made.to_str())


def unigram_metaspace() -> Tokenizer:
    tok = Tokenizer(Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.train_from_iterator(CORPUS, UnigramTrainer(vocab_size=60, special_tokens=["<unk>", "<s>"], unk_token="<unk>",
                                                   show_progress=False))
    return tok


def bpe_by_words() -> Tokenizer:
    """BARThez's stages: words split at white space, then Metaspace, a SentencePiece BPE model."""
    tok = Tokenizer(BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()])
    tok.train_from_iterator(CORPUS, BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>"], show_progress=False))
    return tok


MAKERS = {"byte-level": lambda: byte_level(False, False), "byte-level prefix space": lambda: byte_level(True, False),
          "byte-level NFC": lambda: byte_level(False, True), "wordpiece": word_piece,
          "metaspace first": lambda: metaspace_bpe("first"), "metaspace always": lambda: metaspace_bpe("always"),
          "metaspace never": lambda: metaspace_bpe("never"), "sentencepiece bpe": spm_bpe}
# Plans whose one-text call is Python: the words go through their around-tokens kernel call, which
# joins them (its encode_words).
AROUND_MAKERS = {"unigram metaspace": unigram_metaspace, "bpe by words": bpe_by_words}


@pytest.fixture(scope="module", params=list(MAKERS) + list(AROUND_MAKERS))
def pair(request):
    """``(name, ours, Hugging Face's twin, the one-text call with encode_words or None)``."""
    ours = {**MAKERS, **AROUND_MAKERS}[request.param]()
    plan = ours._current_plan()
    if request.param in AROUND_MAKERS:
        call = plan.around_batch_now()
        assert hasattr(call, "encode_words"), f"{request.param}: no around call with encode_words: nothing tested"
        encoder = None
    else:
        one = plan.one_text()
        encoder = None if one is None else one[0]     # (what encode's snapshot calls)
        assert encoder is not None and hasattr(encoder, "encode_words"), \
            f"{request.param}: no one-text call with encode_words, so these tests test nothing"
    return request.param, ours, tokenizers.Tokenizer.from_str(ours.to_str()), encoder


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=WORDS)
def test_words_as_hugging_face(pair, words):
    name, ours, theirs, _ = pair
    for add in (True, False):
        assert_same_encoding(ours.encode(words, is_pretokenized=True, add_special_tokens=add),
                             theirs.encode(words, is_pretokenized=True, add_special_tokens=add), f"{name} {words!r}")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=WORDS)
def test_one_call_is_the_words_one_by_one_joined(pair, words):
    name, _, _, one = pair
    if one is None:
        pytest.skip(f"{name}: the words go through the around call, compared with Hugging Face above")
    made = one.encode_words(words)
    parts = [_whole(one(word)) for word in words]
    if made is None:
        # (The call leaves a sequence only when a word would go the long way alone.)
        assert None in parts, f"{name} {words!r}"
        return
    assert made[1:] == (sum(part[1] for part in parts), len(words))
    assert made[0] == join_words(list(parts))[0], f"{name} {words!r}"


def _whole(result):
    """A one-text call's result with its offsets and words (an ids-alone one worked out), or None
    where the call sends the word the long way (None, or a status int)."""
    if type(result) is not tuple:
        return None
    if len(result) == 5:    # (raw ids, n, n_words, spans_from, source)
        return whole_result(result[:3] + (None,) + result[3:])
    return result


def test_a_word_not_a_str_is_left_to_the_long_way(pair):
    name, ours, _, one = pair
    assert one is None or one.encode_words(["a", 3]) is None
    with pytest.raises(Exception, match=r"\[1\]"):
        ours.encode(["a", 3], is_pretokenized=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(WORDS, min_size=1, max_size=5), pad=st.booleans(), cut=st.booleans())
def test_a_batch_of_word_sequences_as_hugging_face(pair, batch, pad, cut):
    """A batch's sequences go one call each (``SingleText.encode_words_batch``), unpadded, and the
    batch is padded as a whole; a pair of sequences or one holding an added token goes the long way."""
    name, ours, theirs, _ = pair
    special = next(t.content for t in ours.get_added_tokens_decoder().values())
    items = batch + [(batch[0], batch[-1]), batch[0] + [special], []]
    for tok in (ours, theirs):
        if pad:
            tok.enable_padding(pad_id=0, pad_token=ours.id_to_token(0))
        if cut:
            tok.enable_truncation(max_length=5, stride=1)
    try:
        for k, (mine, ref) in enumerate(zip(ours.encode_batch(items, is_pretokenized=True),
                                            theirs.encode_batch(items, is_pretokenized=True))):
            assert_same_encoding(mine, ref, f"{name} item {k} of {items!r}")
    finally:
        for tok in (ours, theirs):
            tok.no_padding()
            tok.no_truncation()
