"""Unigram training kernels against their readable twins, and UnigramTrainer (Hugging Face's API).

The suffix sorter against sorting by hand; seed mining against brute-force
substring counting (pieceworks.reference.unigram_train); the E-step's
expected counts against the sum over every segmentation; the charsmap
compiler against the sentencepiece library; UnigramTrainer through
``Tokenizer.train_from_iterator`` and ``Unigram.get_trainer()``, and its
compression against Hugging Face's UnigramTrainer on real prose.
"""

from __future__ import annotations

import io
from array import array

import pytest
from hypothesis import given, settings, strategies as st

import pieceworks as pw
from pieceworks._kernels.suffix_array import lcp_array, suffix_array
from pieceworks._kernels.unigram_train import UnigramEM, digamma, encode_codes, mine_seeds, substrings
from pieceworks.errors import ConfigError, TrainingError
from pieceworks.models import Unigram
from pieceworks.reference import unigram_train as ref
from pieceworks.trainers import UnigramTrainer
from pieceworks.trainers.spm import char_tables
from pieceworks.trainers.spm_rules import builtin_rules, compile_charsmap, precompiled_charsmap

WORDS = st.text(alphabet="ab▁c", min_size=1, max_size=7)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=80), st.sampled_from([1, 2, 3, 5, 8, 9, 16, 64]), st.sampled_from([1, 2]),
       st.sampled_from([1, 100, 30000]))
def test_suffix_array_sorts_to_depth(codes, depth, threads, scale):
    # ``scale`` spreads the codes out so that the sorter packs them 1, 2 and 4 bytes wide.
    codes = [c * scale for c in codes]
    sa = suffix_array(codes, depth, threads)
    assert sorted(sa) == list(range(len(codes)))
    keys = [codes[i:i + depth] for i in sa]
    assert keys == sorted(keys)
    lcp = lcp_array(codes, sa, depth)
    for i in range(1, len(sa)):
        a, b = codes[sa[i - 1]:sa[i - 1] + depth], codes[sa[i]:sa[i] + depth]
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        assert lcp[i] == k


def _mine(sentences, max_len):
    codes, alphabet = encode_codes(sentences)
    kinds, scripts, digits = char_tables(alphabet)
    # No split rules: every substring without the boundary is a valid piece.
    offsets, lengths, freqs = mine_seeds(codes, kinds, scripts, digits, max_len, 10**6, False, False, True, False,
                                         True, False)
    # encode_codes gives the narrowest array (B, H); the 4-byte form mines the same.
    wide = mine_seeds(array("I", codes), kinds, scripts, digits, max_len, 10**6, False, False, True, False, True, False)
    assert [list(a) for a in wide] == [list(offsets), list(lengths), list(freqs)]
    return {"".join(chr(alphabet[c]) for c in codes[o:o + n]): f for o, n, f in zip(offsets, lengths, freqs)}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abc", max_size=12), min_size=1, max_size=6), st.sampled_from([2, 3, 4, 9, 16]),
       st.sampled_from([0, 300]))
def test_seed_mining_matches_brute_force(sentences, max_len, more_chars):
    # ``more_chars`` distinct chars in one more sentence: an alphabet too big for one byte a code.
    sentences = sentences + ["".join(chr(0x400 + i) for i in range(more_chars))]
    assert _mine(sentences, max_len) == ref.seed_substrings(sentences, max_len)


def test_seed_mining_best_first_and_bounded():
    sentences = ["abcabcabc", "abcab", "xyxyxy"]
    codes, alphabet = encode_codes(sentences)
    kinds, scripts, digits = char_tables(alphabet)
    offsets, lengths, freqs = mine_seeds(codes, kinds, scripts, digits, 16, 3, False, False, True, False, True, False)
    brute = ref.seed_substrings(sentences, 16)
    best = sorted(((n * len(s), s) for s, n in brute.items()), reverse=True)[:3]
    assert [f * n for n, f in zip(lengths, freqs)] == [score for score, _ in best]
    # Ties: the smaller substring first (a tie of 12 here: "abc" × 4 and "bcab" × 3).
    data, ends = substrings(codes, alphabet, offsets, lengths)
    assert [data[a:b].decode() for a, b in zip([0, *ends], ends)] == \
        [s for _, s in sorted((-n * len(s), s) for s, n in brute.items())[:3]]


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(WORDS, st.integers(1, 5), min_size=1, max_size=5),
       st.dictionaries(st.text(alphabet="ab▁c", min_size=1, max_size=3), st.integers(-12, -1).map(float),
                       min_size=1, max_size=10), st.sampled_from([1, 2]))
def test_e_step_matches_all_segmentations(words, scores, threads):
    em = UnigramEM(list(words), list(words.values()), threads)
    em.set_pieces(list(scores), list(scores.values()))
    em.em_iteration()
    got = em.expected_counts()
    want = ref.expected_counts(words, scores)
    # The kernel sums expected counts in fixed point (units of 2^-24, so that sums do not depend on
    # the thread schedule): each addition is exact to 2^-25.
    for i, piece in enumerate(scores):
        assert got[i] == pytest.approx(want.get(piece, 0.0), rel=1e-9, abs=1e-6)


def test_m_step_is_the_digamma_update():
    em = UnigramEM(["▁ab", "▁a", "b"], [30, 20, 10])
    em.set_pieces(["▁", "a", "b", "▁a", "ab", "▁ab"], [-2.0, -2.0, -2.0, -1.5, -1.5, -1.0])
    em.em_iteration()
    expected = em.expected_counts()
    kept = [(p, c) for p, c in zip(["▁", "a", "b", "▁a", "ab", "▁ab"], expected) if c >= 0.5]
    total = sum(c for _, c in kept)
    assert em.pieces() == [(p, pytest.approx(digamma(c) - digamma(total))) for p, c in kept]
    assert digamma(1.0) == pytest.approx(-0.5772156649, abs=1e-9)
    assert digamma(10.5) == pytest.approx(2.3030010342, abs=1e-8)


def test_pruning_keeps_the_requested_share():
    words = {"▁" + w: n for w, n in [("the", 50), ("then", 20), ("there", 15), ("other", 10), ("hen", 5)]}
    pieces = sorted({w[i:j] for w in words for i in range(len(w)) for j in range(i + 1, len(w) + 1)})
    em = UnigramEM(list(words), list(words.values()))
    em.set_pieces(pieces, [-float(len(p)) for p in pieces])
    em.em_iteration()
    before = em.n_alive
    after = em.prune(1, 0.75)
    assert after <= max(1, int(0.75 * before))
    chars = {p for p, _ in em.pieces() if len(p) == 1}
    assert chars  # single chars without a second segmentation stay


def test_charsmap_normalizes_as_sentencepiece(shared_data):
    spm = pytest.importorskip("sentencepiece")
    from sentencepiece import sentencepiece_model_pb2 as spm_pb2
    import json

    proto = spm_pb2.ModelProto()
    proto.trainer_spec.model_type = 1
    proto.normalizer_spec.name = "nmt_nfkc"
    proto.normalizer_spec.precompiled_charsmap = precompiled_charsmap("nmt_nfkc")
    for piece, kind in [("<unk>", 2), ("a", 1)]:
        p = proto.pieces.add()
        p.piece, p.type = piece, kind
    ours = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    theirs = spm.SentencePieceProcessor(
        model_file=str(shared_data / "tokenizers" / "sentencepiece" / "hf_transformers_fixtures" / "spiece.model"))
    # That fixture's charsmap comes from a build before 0.2.3: it spaces out ZERO WIDTH JOINER and
    # keeps ARABIC LETTER MARK, where ours does as 0.2.3 does (test_sentencepiece_normalizer holds
    # every char to the installed one). Those two chars leave the inputs; everything else must agree.
    assert theirs.normalize("a\u200db") == "▁a▁b" and ours.normalize("a\u200db") == "▁a\u200db"
    inputs = [json.loads(line)["text"].replace("\u200d", "").replace("\u061c", "")
              for line in open(shared_data / "testvectors" / "generated" / "inputs.jsonl", encoding="utf-8")]
    assert [ours.normalize(x) for x in inputs] == [theirs.normalize(x) for x in inputs]


def test_compiled_charsmap_finds_every_rule():
    from pieceworks._kernels.unigram import Charsmap

    rules = {"a": "x", "ab": "", "abc": "yz", "é": "e", "\u3000": " "}
    cm = Charsmap(compile_charsmap(rules))
    for src, trg in rules.items():
        assert cm.lookup(src.encode()) == (len(src.encode()), trg.encode())
    assert cm.lookup(b"q") is None
    assert builtin_rules("identity") == {}
    with pytest.raises(ConfigError):
        builtin_rules("nfkd_magic")


# -- UnigramTrainer (Hugging Face's API) --------------------------------------------------------
def _lines(shared_data, n=3000):
    path = shared_data / "corpora" / "english" / "botchan.txt"
    return [line for line in open(path, encoding="utf-8-sig").read().splitlines() if line.strip()][:n]


def test_train_from_iterator_with_get_trainer():
    tok = pw.Tokenizer(Unigram())
    tok.pre_tokenizer = pw.pre_tokenizers.Metaspace()
    tok.decoder = pw.decoders.Metaspace()
    trainer = tok.model.get_trainer()
    assert isinstance(trainer, UnigramTrainer)
    trainer.vocab_size = 40
    trainer.show_progress = False
    tok.train_from_iterator(["the cat sat on the mat", "the hat"] * 20, trainer=trainer)
    assert 0 < tok.get_vocab_size() <= 40
    assert tok.decode(tok.encode("the cat").ids) == "the cat"


def test_special_tokens_and_unk_come_first():
    tok = pw.Tokenizer(Unigram())
    trainer = UnigramTrainer(vocab_size=30, show_progress=False, special_tokens=["<pad>", "<unk>"],
                             unk_token="<unk>", initial_alphabet=["z"])
    tok.train_from_iterator(["hello world", "help word"] * 10, trainer=trainer)
    vocab = tok.get_vocab()
    assert vocab["<pad>"] == 0 and vocab["<unk>"] == 1
    assert "z" in vocab
    assert tok.model.unk_id == 1
    assert tok.get_vocab_size() <= 30


def test_bad_options_say_what_to_do():
    with pytest.raises(ConfigError):
        UnigramTrainer(vocab_size=0)
    with pytest.raises(ConfigError):
        UnigramTrainer(shrinking_factor=1.5)
    with pytest.raises(TrainingError):
        UnigramTrainer(vocab_size=2, special_tokens=["<a>", "<b>"], show_progress=False).train(Unigram(), {"x": 1})


def test_compression_close_to_hugging_face(shared_data):
    hf = pytest.importorskip("tokenizers")
    lines = _lines(shared_data)
    train, held = lines[::2], lines[1::2]
    sizes = {}
    for name, lib in (("pw", pw), ("hf", hf)):
        tok = lib.Tokenizer(lib.models.Unigram())
        tok.pre_tokenizer = lib.pre_tokenizers.Metaspace()
        trainer = lib.trainers.UnigramTrainer(vocab_size=1500, show_progress=False, unk_token="<unk>",
                                              special_tokens=["<unk>"])
        tok.train_from_iterator(train, trainer=trainer)
        sizes[name] = sum(len(tok.encode(x).ids) for x in held)
    assert sizes["pw"] <= sizes["hf"] * 1.03, sizes


@pytest.mark.parametrize("specials", [[], ["<s>", "<pad>"], ["<s>", "<unk>"]])
def test_the_unknown_token_comes_first_unless_it_is_a_special_token_as_hugging_face(specials):
    """An ``unk_token`` not among ``special_tokens`` is put before them, as Hugging Face's trainer does
    (every id after it depends on that)."""
    hf = pytest.importorskip("tokenizers")
    corpus = ["hello world", "the world says hello", "low lower lowest"] * 5
    heads = []
    for lib in (pw, hf):
        tok = lib.Tokenizer(lib.models.Unigram())
        tok.pre_tokenizer = lib.pre_tokenizers.Metaspace()
        tok.train_from_iterator(corpus, lib.trainers.UnigramTrainer(vocab_size=30, special_tokens=specials,
                                                                    unk_token="<unk>", show_progress=False))
        vocab = tok.get_vocab(with_added_tokens=False)
        heads.append((sorted(vocab, key=vocab.get)[:3], tok.token_to_id("<unk>"), tok.encode("hello zz").tokens))
    assert heads[0] == heads[1]


@pytest.mark.parametrize("pre", ["metaspace-unsplit", "none", "whitespace"])
def test_any_substring_can_be_a_piece_as_in_hugging_face(pre):
    """Hugging Face's trainer checks a piece's length alone, not SentencePiece's rules: a piece may end
    with ▁, hold a space, or mix digits and letters (pieceworks applied SentencePiece's rules)."""
    hf = pytest.importorskip("tokenizers")
    corpus = ["hello world and the world 42x", "and the hello world and x42", "the end and the start 4242"] * 3
    learned = []
    for lib in (pw, hf):
        tok = lib.Tokenizer(lib.models.Unigram())
        if pre == "metaspace-unsplit":
            tok.pre_tokenizer = lib.pre_tokenizers.Metaspace(prepend_scheme="never", split=False)
        elif pre == "whitespace":
            tok.pre_tokenizer = lib.pre_tokenizers.Whitespace()
        tok.train_from_iterator(corpus, lib.trainers.UnigramTrainer(vocab_size=40, show_progress=False))
        learned.append(sorted(tok.get_vocab()))
    assert learned[0] == learned[1]
    assert pre == "whitespace" or any(p.endswith(("▁", " ")) and len(p) > 1 for p in learned[0])


def test_doctests():
    import doctest

    import pieceworks.trainers.spm
    import pieceworks.trainers.unigram
    from pieceworks._kernels import suffix_array, unigram_train

    for module in (suffix_array, unigram_train, pieceworks.trainers.spm, pieceworks.trainers.unigram):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_a_lone_surrogate_is_a_clear_error_in_unigram_training_and_models():
    # Python text may hold one; a Unigram model's pieces are UTF-8, which cannot.
    tok = pw.Tokenizer(Unigram())
    with pytest.raises(TrainingError, match="lone surrogate"):
        tok.train_from_counts({"ab\udfff": 3, "cd": 2}, UnigramTrainer(vocab_size=20, show_progress=False))
    with pytest.raises(ConfigError, match="lone surrogate"):
        UnigramTrainer(initial_alphabet=["a", "\udfff"])
    with pytest.raises(pw.errors.InputTypeError, match=r"vocab\[1\].*lone surrogate"):
        Unigram([("a", -1.0), ("\udfff", -2.0)])
    import pieceworks.sentencepiece as pw_spm

    with pytest.raises(TrainingError, match="lone surrogate"):
        pw_spm.SentencePieceTrainer.train(sentence_iterator=iter(["fine", "not \ud800 fine"]),
                                          model_writer=io.BytesIO(), vocab_size=20)


def test_a_vocabulary_smaller_than_the_alphabet_is_refused_as_huggingface_refuses_it():
    # Found by fuzz_train_counts: pruning could not go below the single chars (each has no
    # alternative), so the EM loop never reached the size and never ended.
    hf = pytest.importorskip("tokenizers")
    texts = ["abcdefghij"] * 5 + ["klmnop"] * 3
    theirs = hf.Tokenizer(hf.models.Unigram())
    with pytest.raises(Exception, match="not large enough to contain all chars"):
        theirs.train_from_iterator(texts, hf.trainers.UnigramTrainer(vocab_size=6, show_progress=False))
    tok = pw.Tokenizer(Unigram())
    with pytest.raises(TrainingError, match="not large enough to contain all chars"):
        tok.train_from_iterator(texts, UnigramTrainer(vocab_size=6, show_progress=False))
    tok.train_from_iterator(texts, UnigramTrainer(vocab_size=16, show_progress=False))
    assert tok.get_vocab_size() == 16
