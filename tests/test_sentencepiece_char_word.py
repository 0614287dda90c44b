"""SentencePiece's char and word models (``--model_type=char|word``) in pieceworks.sentencepiece.

sentencepiece trains small models here (several options: user-defined
symbols, byte fallback, no dummy prefix, whitespace as suffix); pieceworks
loads them and must encode (ids, pieces, lists, unknown runs merged or
split into bytes), normalize and decode exactly as sentencepiece does.
Models pieceworks trains load in sentencepiece and encode identically.
What sentencepiece cannot do with these models (n-best, sampling) is a
clear error, as is converting them to tokenizer.json.
"""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import pieceworks.sentencepiece as pw_spm
from pieceworks.errors import ConfigError

spm = pytest.importorskip("sentencepiece")

OPTIONS = {
    "char": dict(model_type="char"),
    "char-user-bytes": dict(model_type="char", user_defined_symbols=["Botchan", "ab", "abc"], byte_fallback=True,
                            control_symbols=["q"]),
    "char-identity": dict(model_type="char", normalization_rule_name="identity", add_dummy_prefix=False,
                          remove_extra_whitespaces=False),
    "word": dict(model_type="word"),
    "word-suffix": dict(model_type="word", treat_whitespace_as_suffix=True),
    "word-bytes-no-prefix": dict(model_type="word", byte_fallback=True, add_dummy_prefix=False,
                                 user_defined_symbols=["Botchan"]),
}
TEXTS = ["Hello world  Botchan x", "<s> a </s>", "<unk>", "qqqzz ☃ é", "☃☃ abcd", "x<0x41>", "qa", "",
         "   ", "the Botchan's ① ﬁ", "Ж Ж\u3000ｱﾞ", "a\tb\nc", "▁a ▁▁b", "e\u0301"]


@lru_cache(maxsize=None)
def _lines(root: str) -> tuple[list[str], list[str]]:
    lines = [x for x in open(Path(root) / "corpora" / "english" / "botchan.txt", encoding="utf-8-sig")
             .read().splitlines() if x.strip()]
    return lines[:3000], lines[3000:3400]


@lru_cache(maxsize=None)
def _trained(root: str, name: str) -> bytes:
    train, _ = _lines(root)
    out = io.BytesIO()
    options = OPTIONS[name]
    size = 400 if options["model_type"] == "char" else 3000
    spm.SentencePieceTrainer.train(sentence_iterator=iter(train), model_writer=out, vocab_size=size,
                                   hard_vocab_limit=False, minloglevel=2, **options)
    return out.getvalue()


def pair(shared_data, name):
    proto = _trained(str(shared_data), name)
    return pw_spm.SentencePieceProcessor(model_proto=proto), spm.SentencePieceProcessor(model_proto=proto)


@pytest.mark.parametrize("name", OPTIONS)
def test_encode_and_decode_match_sentencepiece(shared_data, name):
    ours, theirs = pair(shared_data, name)
    assert "Char" in repr(ours) if OPTIONS[name]["model_type"] == "char" else "Word" in repr(ours)
    _, held = _lines(str(shared_data))
    texts = held + TEXTS
    for text in texts:
        assert ours.encode(text, out_type=str) == theirs.encode(text, out_type=str), repr(text)
        ids = theirs.encode(text)
        assert ours.encode(text) == ids, repr(text)
        assert ours.encode(text, out_type=str, emit_unk_piece=True) == theirs.encode(text, out_type=str,
                                                                                       emit_unk_piece=True)
        assert ours.decode(ids) == theirs.decode(ids), repr(text)
        pieces = theirs.encode(text, out_type=str)
        assert ours.decode_pieces(pieces) == theirs.decode_pieces(pieces), repr(text)
        assert ours.normalize(text) == theirs.normalize(text)
    for threads in (1, 2):
        assert ours.encode(texts, num_threads=threads) == theirs.encode(texts, num_threads=threads)
        assert ours.encode(texts, out_type=str, num_threads=threads) == theirs.encode(texts, out_type=str,
                                                                                        num_threads=threads)
    for kwargs in (dict(add_bos=True, add_eos=True), dict(reverse=True, out_type=str)):
        assert ours.encode(texts, **kwargs) == theirs.encode(texts, **kwargs)
        assert ours.encode(texts[0], **kwargs) == theirs.encode(texts[0], **kwargs)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "ab", "abc", " ", "  ", "▁", "☃", "q", "é", "Botchan", "<s>", "x",
                                 "the", "\u3000"]), max_size=12).map("".join))
def test_any_mix_matches_sentencepiece(shared_data, text):
    for name in ("char-user-bytes", "word", "word-bytes-no-prefix"):
        ours, theirs = pair(shared_data, name)
        assert ours.encode(text, out_type=str) == theirs.encode(text, out_type=str), (name, text)
        assert ours.encode(text) == theirs.encode(text), (name, text)


@pytest.mark.parametrize("flags", ["--model_type=char --vocab_size=200 --hard_vocab_limit=false",
                                   "--model_type=word --vocab_size=1500 --hard_vocab_limit=false",
                                   "--model_type=word --vocab_size=1500 --byte_fallback=true "
                                   "--user_defined_symbols=Botchan"])
def test_models_pieceworks_trains_encode_the_same_in_both(shared_data, tmp_path, flags):
    train, held = _lines(str(shared_data))
    corpus = tmp_path / "train.txt"
    corpus.write_text("\n".join(train[:2000]) + "\n", encoding="utf-8")
    prefix = tmp_path / "pw"
    pw_spm.SentencePieceTrainer.train(f"--input={corpus} --model_prefix={prefix} {flags}")
    ours = pw_spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    theirs = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    texts = held[:200] + TEXTS
    assert ours.encode(texts) == theirs.encode(texts)
    assert ours.encode(texts, out_type=str) == theirs.encode(texts, out_type=str)
    assert ours.decode(theirs.encode(texts)) == theirs.decode(theirs.encode(texts))


def test_what_sentencepiece_cannot_do_with_them_is_an_error(shared_data):
    from pieceworks.formats.sentencepiece import model_to_tokenizer

    for name in ("char", "word"):
        ours, theirs = pair(shared_data, name)
        for call in (lambda sp: sp.nbest_encode_as_pieces("hello", 3),
                     lambda sp: sp.encode("hello", enable_sampling=True, alpha=0.1, nbest_size=-1),
                     lambda sp: sp.sample_encode_as_ids("hello", 4, 0.5)):
            with pytest.raises(RuntimeError):
                call(theirs)
            with pytest.raises(ConfigError, match=name.capitalize()):
                call(ours)
        with pytest.raises(ConfigError, match="Unigram"):
            ours.SampleEncodeAndScore("hello", wor=True)
        with pytest.raises(ConfigError, match="tokenizer.json"):
            model_to_tokenizer(_trained(str(shared_data), name))
