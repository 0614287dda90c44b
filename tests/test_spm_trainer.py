"""pieceworks.sentencepiece.SentencePieceTrainer against the sentencepiece library (0.2.x).

Quality: on 2 MB of English prose (botchan + the NLTK Gutenberg books), a
Unigram model trained by pieceworks scores held-out text within 1% of the
model sentencepiece trains with the same flags, both in log-likelihood per
byte and in bytes per token. Parity: models sentencepiece trains here
(Unigram, BPE, char and word, several options) load in pieceworks and encode the same;
models pieceworks writes load in sentencepiece and encode the same; BPE
training makes sentencepiece's vocabulary. Flags: the string and keyword
forms, the .vocab file, and clear errors for flags that do not exist.
"""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pieceworks.sentencepiece as pw_spm
import pieceworks.trainers.spm as spm_trainer
from pieceworks.errors import ConfigError, TrainingError
from pieceworks.trainers.spm import parse_flags, split_into_words

spm = pytest.importorskip("sentencepiece")


@lru_cache(maxsize=None)
def _prose(root: str) -> tuple[list[str], list[str]]:
    """~2 MB of training lines and a held-out part (every 10th book line)."""
    base = Path(root) / "corpora" / "english"
    lines = open(base / "botchan.txt", encoding="utf-8-sig").read().splitlines()
    for book in sorted((base / "nltk_data_2008" / "gutenberg").glob("*.txt")):
        lines += open(book, encoding="utf-8", errors="replace").read().splitlines()
        if sum(map(len, lines)) > 2_300_000:
            break
    lines = [line for line in lines if line.strip()]
    train = [line for i, line in enumerate(lines) if i % 10]
    held = [line for i, line in enumerate(lines) if not i % 10]
    return train, held


def prose(shared_data):
    return _prose(str(shared_data))


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def train_both(tmp_path: Path, corpus: Path, flags: str, name: str = "m"):
    pw_prefix, sp_prefix = tmp_path / f"pw_{name}", tmp_path / f"sp_{name}"
    pw_spm.SentencePieceTrainer.train(f"--input={corpus} --model_prefix={pw_prefix} {flags}")
    spm.SentencePieceTrainer.train(f"--input={corpus} --model_prefix={sp_prefix} {flags} --minloglevel=2")
    return Path(f"{pw_prefix}.model"), Path(f"{sp_prefix}.model")


def held_out_scores(model: Path, lines: list[str]) -> tuple[float, float]:
    """(log-likelihood per byte, bytes per token) under the model's own scores (sentencepiece encodes)."""
    sp = spm.SentencePieceProcessor(model_file=str(model))
    ll = 0.0
    tokens = 0
    size = 0
    for line in lines:
        ids = sp.encode(line)
        tokens += len(ids)
        size += len(line.encode("utf-8"))
        ll += sum(sp.get_score(i) for i in ids)
    return ll / size, size / tokens


def assert_same_encoding(pw_model: Path, sp_model: Path, lines: list[str]) -> None:
    """pieceworks and sentencepiece, both loading each model, encode ``lines`` identically."""
    for model in (pw_model, sp_model):
        ours = pw_spm.SentencePieceProcessor(model_file=str(model))
        theirs = spm.SentencePieceProcessor(model_file=str(model))
        assert ours.encode(lines) == theirs.encode(lines)
        assert ours.encode(lines, out_type=str) == theirs.encode(lines, out_type=str)
        assert ours.decode(ours.encode(lines)) == theirs.decode(theirs.encode(lines))


# -- quality ---------------------------------------------------------------------------
def test_unigram_quality_within_one_percent_of_sentencepiece(shared_data, tmp_path):
    train, held = prose(shared_data)
    corpus = write_lines(tmp_path / "train.txt", train)
    pw_model, sp_model = train_both(tmp_path, corpus, "--vocab_size=4000 --model_type=unigram --num_threads=2")
    pw_ll, pw_bpt = held_out_scores(pw_model, held)
    sp_ll, sp_bpt = held_out_scores(sp_model, held)
    assert abs(pw_ll / sp_ll - 1) <= 0.01, (pw_ll, sp_ll)
    assert abs(pw_bpt / sp_bpt - 1) <= 0.01, (pw_bpt, sp_bpt)
    assert_same_encoding(pw_model, sp_model, held[:300])


# -- parity: options ------------------------------------------------------------------------
OPTIONS = [
    "--model_type=unigram --vocab_size=1000",
    "--model_type=unigram --vocab_size=800 --split_digits=true --byte_fallback=true --character_coverage=0.98",
    "--model_type=unigram --vocab_size=600 --user_defined_symbols=Botchan,<sep> --control_symbols=<cls> "
    "--pad_id=3 --bos_id=-1 --normalization_rule_name=identity",
    "--model_type=unigram --vocab_size=700 --split_by_whitespace=false --max_sentencepiece_length=8",
    "--model_type=bpe --vocab_size=1000",
    "--model_type=bpe --vocab_size=800 --split_digits=true --byte_fallback=true --add_dummy_prefix=false",
    "--model_type=bpe --vocab_size=600 --treat_whitespace_as_suffix=true --user_defined_symbols=Botchan",
    "--model_type=char --vocab_size=200 --hard_vocab_limit=false",
    "--model_type=word --vocab_size=1000",
]


@pytest.mark.parametrize("flags", OPTIONS)
def test_models_load_and_encode_identically_both_ways(shared_data, tmp_path, flags):
    train, held = prose(shared_data)
    corpus = write_lines(tmp_path / "train.txt", train[:2500])
    pw_model, sp_model = train_both(tmp_path, corpus, flags)
    lines = held[:200] + ["Botchan <sep> 12345 ¿Qué tal? ﬁ ① x\u00a0y", "  lots   of   space  ", ""]
    assert_same_encoding(pw_model, sp_model, lines)
    ours = spm.SentencePieceProcessor(model_file=str(pw_model))
    theirs = spm.SentencePieceProcessor(model_file=str(sp_model))
    assert ours.vocab_size() == theirs.vocab_size()
    def meta(sp):
        return [(i, sp.id_to_piece(i), sp.is_control(i), sp.is_unknown(i), sp.is_byte(i))
                for i in range(sp.vocab_size()) if sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i)]

    assert meta(ours) == meta(theirs)
    for symbol in ("Botchan", "<sep>"):
        if symbol in flags:
            assert ours.piece_to_id(symbol) == theirs.piece_to_id(symbol)


@pytest.mark.parametrize("flags", ["--model_type=bpe --vocab_size=1000",
                                   "--model_type=bpe --vocab_size=700 --split_digits=true",
                                   "--model_type=char --vocab_size=100 --hard_vocab_limit=false"])
def test_bpe_and_char_vocabularies_match_sentencepiece(shared_data, tmp_path, flags):
    corpus = shared_data / "corpora" / "english" / "botchan.txt"
    pw_model, sp_model = train_both(tmp_path, corpus, flags)
    ours = spm.SentencePieceProcessor(model_file=str(pw_model))
    theirs = spm.SentencePieceProcessor(model_file=str(sp_model))
    assert [ours.id_to_piece(i) for i in range(ours.vocab_size())] == \
        [theirs.id_to_piece(i) for i in range(theirs.vocab_size())]


def test_unigram_vocabulary_is_close_to_sentencepiece(shared_data, tmp_path):
    corpus = shared_data / "corpora" / "english" / "botchan.txt"
    pw_model, sp_model = train_both(tmp_path, corpus, "--vocab_size=2000")
    ours = spm.SentencePieceProcessor(model_file=str(pw_model))
    theirs = spm.SentencePieceProcessor(model_file=str(sp_model))
    a = {ours.id_to_piece(i) for i in range(2000)}
    b = {theirs.id_to_piece(i) for i in range(2000)}
    assert len(a & b) >= 0.9 * 2000


# -- the face: flags, files, errors --------------------------------------------------------
def test_keyword_form_model_writer_and_sentence_iterator(shared_data, tmp_path):
    lines = open(shared_data / "corpora" / "english" / "botchan.txt", encoding="utf-8-sig").read().splitlines()
    out = io.BytesIO()
    pw_spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, vocab_size=500,
                                      user_defined_symbols=["foo", "bar"], split_digits=True)
    sp = spm.SentencePieceProcessor(model_proto=out.getvalue())
    assert sp.vocab_size() == 500
    assert sp.id_to_piece(3) == "foo" and sp.id_to_piece(4) == "bar"
    kw = tmp_path / "kw"
    pw_spm.SentencePieceTrainer.train(input=str(shared_data / "corpora" / "english" / "botchan.txt"),
                                      model_prefix=str(kw), vocab_size=500, model_type="bpe")
    vocab = (tmp_path / "kw.vocab").read_text(encoding="utf-8").splitlines()
    assert len(vocab) == 500 and vocab[0] == "<unk>\t0"
    assert vocab[3].split("\t")[1] == "-0" or vocab[3].split("\t")[1] == "0"


def test_unknown_flag_names_the_fix():
    with pytest.raises(ConfigError, match="--vocab_sise.*did you mean --vocab_size"):
        pw_spm.SentencePieceTrainer.train("--input=x.txt --model_prefix=m --vocab_sise=100")
    with pytest.raises(ConfigError, match="model_type"):
        parse_flags(model_type="wordpiece")
    with pytest.raises(ConfigError, match="character_coverage"):
        parse_flags("--character_coverage=0.5")
    with pytest.raises(ConfigError, match="does not start with --"):
        parse_flags("vocab_size=100")
    with pytest.raises(ConfigError, match="integer|int"):
        parse_flags(vocab_size="many")


def test_too_small_vocabulary_says_what_to_change(tmp_path):
    corpus = write_lines(tmp_path / "c.txt", ["abcdefghij klmnopqrst"] * 20)
    with pytest.raises(TrainingError, match="Vocabulary size"):
        pw_spm.SentencePieceTrainer.train(f"--input={corpus} --model_prefix={tmp_path / 'm'} --vocab_size=10")


def test_split_into_words_matches_sentencepiece_rules():
    assert split_into_words("▁a▁▁bc") == ["▁a", "▁", "▁bc"]
    assert split_into_words("ab▁c", suffix=True) == ["ab▁", "c"]
    assert split_into_words("▁a▁▁b", allow_ws_only=True) == ["▁a", "▁▁b"]


def test_rare_chars_are_masked_as_sentencepiece_masks_them(shared_data, tmp_path):
    # Japanese prose holds thousands of chars; the default 0.9995 coverage leaves
    # the rarest out (masked as unknown), which decides which pairs BPE can merge.
    text = (shared_data / "corpora" / "multilingual" / "ja_wagahaiwa_nekodearu.txt").read_text(encoding="utf-8")
    corpus = write_lines(tmp_path / "ja.txt", text.splitlines()[:3000])
    for flags in ("--model_type=bpe --vocab_size=3000", "--model_type=bpe --vocab_size=2500 --character_coverage=0.98"):
        pw_model, sp_model = train_both(tmp_path, corpus, flags)
        ours = spm.SentencePieceProcessor(model_file=str(pw_model))
        theirs = spm.SentencePieceProcessor(model_file=str(sp_model))
        assert [ours.id_to_piece(i) for i in range(ours.vocab_size())] == \
            [theirs.id_to_piece(i) for i in range(theirs.vocab_size())]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 9))
def test_read_lines_decodes_as_line_by_line(tmp_path_factory, data, block):
    path = tmp_path_factory.mktemp("lines") / "in.txt"
    path.write_bytes(data)
    expected = [raw.rstrip(b"\n").decode("utf-8", "replace") for raw in io.BytesIO(data)]
    original = spm_trainer._READ_BLOCK
    spm_trainer._READ_BLOCK = block     # tiny blocks: lines and UTF-8 sequences cross block ends
    try:
        assert list(spm_trainer.read_lines([str(path)])) == expected
    finally:
        spm_trainer._READ_BLOCK = original


def test_a_count_past_64_bits_is_a_training_error(tmp_path):
    corpus = tmp_path / "c.tsv"
    corpus.write_text(f"abc\t{2**62}\nabd\t{2**62}\n", encoding="utf-8")
    with pytest.raises(TrainingError, match="exceeds 2\\*\\*63"):
        pw_spm.SentencePieceTrainer.train(f"--input={corpus} --model_prefix={tmp_path / 'm'} --vocab_size=10 "
                                          "--input_format=tsv")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=30).filter(lambda t: not any("\ud800" <= c <= "\udfff" for c in t)), max_size=5),
       st.booleans(), st.booleans())
def test_normalize_texts_equals_normalizing_each_text(texts, dummy_prefix, suffix):
    from pieceworks._kernels.unigram import Charsmap, SpmNormalizer
    from pieceworks.trainers.spm_rules import precompiled_charsmap

    normalizer = SpmNormalizer(Charsmap(precompiled_charsmap("nmt_nfkc")), None, dummy_prefix, True, True, suffix)
    expected = [normalizer.normalize(t.encode("utf-8"))[0].decode("utf-8", "replace") for t in texts]
    assert normalizer.normalize_texts(texts) == expected
    with pytest.raises(UnicodeEncodeError):
        normalizer.normalize_texts(texts + ["a\udc80"])


@pytest.mark.parametrize("count", ["0", "-5", "x", str(2**63)])
def test_a_tsv_count_sentencepiece_refuses_is_a_file_format_error(tmp_path, count):
    # sentencepiece: CHECK freq >= 1, and int64 parsing; the math of a bad count used to fail
    # deep inside training (a bare ValueError, or an OverflowError's message).
    from pieceworks.errors import FileFormatError

    corpus = tmp_path / "c.tsv"
    corpus.write_text(f"abc\t{count}\nabd\t5\n", encoding="utf-8")
    with pytest.raises(FileFormatError, match="not a positive integer below 2\\*\\*63"):
        pw_spm.SentencePieceTrainer.train(f"--input={corpus} --model_prefix={tmp_path / 'm'} --vocab_size=10 "
                                          "--input_format=tsv")
