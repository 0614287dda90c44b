"""The ready-made tokenizers (ByteLevelBPETokenizer, CharBPETokenizer, SentencePieceBPETokenizer) against
Hugging Face's: same vocabulary and merges after training, same encodings and decodings, same files."""

from __future__ import annotations

import pytest
import tokenizers as hf

import pieceworks as pw
from pieceworks.corpus import default_corpus_text
from pieceworks.errors import ConfigError, InputTypeError

from parity import assert_same_encoding

CLASSES = ["ByteLevelBPETokenizer", "CharBPETokenizer", "SentencePieceBPETokenizer"]
# Options each class takes, beyond the defaults (Hugging Face's names).
OPTIONS = {
    "ByteLevelBPETokenizer": [{}, {"add_prefix_space": True, "trim_offsets": True},
                              {"lowercase": True, "unicode_normalizer": "nfkc"}],
    "CharBPETokenizer": [{}, {"bert_normalizer": False, "split_on_whitespace_only": True},
                         {"lowercase": True, "suffix": "@@", "unicode_normalizer": "nfd"}],
    "SentencePieceBPETokenizer": [{}, {"add_prefix_space": False}, {"replacement": "_"}],
}


@pytest.fixture(scope="module")
def lines() -> list[str]:
    """About 150 KB of the built-in corpus: ten scripts, emoji, code."""
    return default_corpus_text()[:150_000].splitlines()


def _pair(name: str, **options):
    return getattr(pw, name)(**options), getattr(hf, name)(**options)


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("k", range(3))
def test_trained_like_huggingface(name, k, lines):
    options = OPTIONS[name][k]
    ours, theirs = _pair(name, **options)
    kwargs = {"vocab_size": 600, "min_frequency": 2, "show_progress": False}
    if name == "CharBPETokenizer":
        kwargs["suffix"] = options.get("suffix", "</w>")
    ours.train_from_iterator(lines, **kwargs)
    theirs.train_from_iterator(lines, **kwargs)
    assert repr(ours) == repr(theirs) and repr(ours.normalizer) == repr(theirs.normalizer)
    assert _merges(ours) == _merges(theirs)
    sample = lines[::7][:300]
    if name == "CharBPETokenizer":
        # Hugging Face numbers the word-final chars ("e</w>") in its hash map's order, which
        # changes from run to run (its merges do not): compare tokens, offsets and texts.
        assert set(ours.get_vocab()) == set(theirs.get_vocab())
        for mine, hfs in zip(ours.encode_batch(sample), theirs.encode_batch(sample)):
            assert (mine.tokens, mine.offsets, mine.word_ids) == (hfs.tokens, hfs.offsets, hfs.word_ids)
        assert ours.decode_batch([e.ids for e in ours.encode_batch(sample)]) == theirs.decode_batch(
            [e.ids for e in theirs.encode_batch(sample)])
        return
    assert ours.get_vocab() == theirs.get_vocab()
    for mine, hfs in zip(ours.encode_batch(sample), theirs.encode_batch(sample)):
        assert_same_encoding(mine, hfs)
    ids = [e.ids for e in theirs.encode_batch(sample)]
    assert ours.decode_batch(ids) == theirs.decode_batch(ids)
    assert ours.encode("a", "b").ids == theirs.encode("a", "b").ids


def _merges(tok) -> list:
    import json

    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in json.loads(tok.to_str())["model"]["merges"]]


@pytest.mark.parametrize("name", CLASSES)
def test_files_round_trip_like_huggingface(name, lines, tmp_path):
    ours, theirs = _pair(name)
    kwargs = {"vocab_size": 400, "show_progress": False}
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines), encoding="utf-8")
    ours.train(str(corpus), **kwargs)
    theirs.train([str(corpus)], **kwargs)
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    mine = ours.save_model(str(tmp_path / "ours"), "m")
    hfs = theirs.save_model(str(tmp_path / "theirs"), "m")
    assert [p.rsplit("/", 1)[1] for p in mine] == [p.rsplit("/", 1)[1] for p in hfs]
    texts = [open(p, encoding="utf-8").read() for p in mine + hfs]
    if name == "CharBPETokenizer":      # (word-final chars' ids: see test_trained_like_huggingface)
        import json

        assert texts[1] == texts[3] and set(json.loads(texts[0])) == set(json.loads(texts[2]))
    else:
        assert texts[:2] == texts[2:]

    # Loaded back two ways, our files give what Hugging Face makes of them. (Trained on lines
    # here: from files, "\n" ends lines and can become a token, and a merge holding it makes
    # a merges.txt that neither library reads back.)
    ours, _ = _pair(name)
    ours.train_from_iterator(lines, **kwargs)
    mine = ours.save_model(str(tmp_path / "ours"), "lines")
    from_file = getattr(pw, name).from_file(*mine)
    from_paths = getattr(pw, name)(*mine)
    reference = getattr(hf, name).from_file(*mine)
    for text in lines[:200:9]:
        expected = reference.encode(text)
        assert_same_encoding(from_file.encode(text), expected)
        assert_same_encoding(from_paths.encode(text), expected)


def test_base_tokenizer_passes_calls_and_stages_on():
    ours, theirs = _pair("ByteLevelBPETokenizer")
    for tok in (ours, theirs):
        tok.train_from_iterator(["hello world, hello there"] * 5, vocab_size=270, show_progress=False)
        tok.add_special_tokens(["<s>"])
        tok.enable_truncation(4)
        tok.enable_padding(length=6)
    assert ours.encode("hello there hello").ids == theirs.encode("hello there hello").ids
    assert ours.padding == theirs.padding and ours.truncation["max_length"] == theirs.truncation["max_length"] == 4
    assert ours.token_to_id("<s>") == theirs.token_to_id("<s>") and ours.id_to_token(0) == theirs.id_to_token(0)
    assert ours.get_vocab_size() == theirs.get_vocab_size() and ours.num_special_tokens_to_add(False) == 0
    ours.no_padding()
    ours.no_truncation()
    assert ours.padding is None and ours.truncation is None
    ours.normalizer = pw.normalizers.Lowercase()
    assert ours.normalize("HeLLo") == "hello" and isinstance(ours._tokenizer.normalizer, pw.normalizers.Lowercase)
    assert '"type":"ByteLevel"' in ours.to_str()


def test_bad_options_name_the_fix():
    with pytest.raises(ConfigError, match="nfc"):
        pw.ByteLevelBPETokenizer(unicode_normalizer="nfx")
    with pytest.raises(InputTypeError, match="both"):
        pw.models.BPE("vocab.json", [("a", "b")])


def test_unicode_normalizer_from_str_like_huggingface():
    for name in ("nfc", "nfd", "nfkc", "nfkd"):
        assert repr(pw.normalizers.unicode_normalizer_from_str(name)) == repr(hf.normalizers.unicode_normalizer_from_str(name))
    assert set(pw.normalizers.NORMALIZERS) == set(hf.normalizers.NORMALIZERS)


def test_doctests():
    import doctest

    from pieceworks import _component, implementations
    from pieceworks.implementations import base_tokenizer, byte_level_bpe, char_level_bpe, sentencepiece_bpe

    for module in (implementations, base_tokenizer, byte_level_bpe, char_level_bpe, sentencepiece_bpe, _component):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
