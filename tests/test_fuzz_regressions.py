"""Every input the fuzzers (fuzz/) found a bug with, replayed; and each bug as a readable test.

``fuzz/regressions/<target>/<name>`` holds the input that made
``fuzz/fuzz_<target>.py`` fail; the first test runs each through its
harness (no atheris needed). The other tests state each bug plainly.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

import pieceworks as pw
from pieceworks.errors import ConfigError, FileFormatError, TokenizerFileError

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "fuzz"
CASES = sorted(p for p in (FUZZ / "regressions").glob("*/*") if p.is_file())


def harness(target: str):
    if str(FUZZ) not in sys.path:
        sys.path.insert(0, str(FUZZ))
    return importlib.import_module(f"fuzz_{target}")


@pytest.mark.parametrize("case", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_saved_fuzz_findings_pass_their_harness(case):
    harness(case.parent.name).test_one_input(case.read_bytes())


def test_harnesses_import_and_run_without_atheris_on_empty_input():
    """Every harness replays an input without libFuzzer (its test_one_input is plain Python)."""
    for path in sorted(FUZZ.glob("fuzz_*.py")):
        module = harness(path.stem[len("fuzz_"):])
        module.test_one_input(b"")
        module.test_one_input(b"\x01\x02\x03 some bytes \xff\xfe")


# -- the bugs, one by one ------------------------------------------------------------

@pytest.mark.parametrize("data", [b"\xd1", b'{"model": "\xff"}', "{}".encode("utf-16")])
def test_from_buffer_with_bytes_that_are_not_utf8_is_a_tokenizer_file_error(data):
    # Found by fuzz_tokenizer_json: a bare UnicodeDecodeError escaped.
    with pytest.raises(TokenizerFileError, match="not UTF-8"):
        pw.Tokenizer.from_buffer(data)


def test_precompiled_rule_for_the_replacement_char_is_applied(shared_data):
    # Found by the hypothesis parity test in test_odd_text.py: U+FFFD alone was left alone
    # because the quick "any rule starts here?" check dropped rules that start with U+FFFD.
    import tokenizers as hf

    path = str(shared_data / "tokenizers/sentencepiece/ruT5-large/tokenizer.json")
    ours, theirs = pw.Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    for text in ["\ufffd", "\ufffd\ufffd", "a\ufffd", "\ufffdb"]:
        assert ours.encode(text).ids == theirs.encode(text).ids, repr(text)


def test_unigram_encodes_lone_surrogates(shared_data):
    # Found by test_odd_text.py: the Unigram kernel raised UnicodeEncodeError.
    tok = pw.Tokenizer.from_file(str(shared_data / "tokenizers/sentencepiece/ruT5-large/tokenizer.json"))
    enc = tok.encode("a\ud800b")
    assert enc.offsets and all(0 <= s <= e <= 3 for s, e in enc.offsets)


def test_padding_turned_off_while_encoding_is_not_an_error():
    # Found by test_threads_fork.py: encode checked self._padding, then _pad read it again (None).
    tok = pw.Tokenizer(pw.models.WordLevel({"a": 0, "[PAD]": 1}, unk_token="a"))
    tok.enable_padding(length=4, pad_id=1)
    encodings = tok.encode_batch(["a", "a"])
    assert [e.ids for e in encodings] == [[0, 1, 1, 1]] * 2
    tok.no_padding()
    tok._pad(encodings)          # the late read now sees None: nothing to do
    assert [e.ids for e in encodings] == [[0, 1, 1, 1]] * 2


def _spm_proto(shared_data):
    from pieceworks.formats.sentencepiece import ModelProto

    path = shared_data / "tokenizers/sentencepiece/seqio_test_data/sentencepiece.model"
    return ModelProto.FromString(path.read_bytes())


def _with_invalid_utf8(data: bytes, valid: bytes) -> bytes:
    # Protobuf keeps a string field's bytes as they are: swap one for invalid UTF-8 of the same length.
    assert data.count(valid) >= 1
    return data.replace(valid, b"\xff" * len(valid), 1)


def test_spm_piece_that_is_not_utf8_is_a_file_format_error(shared_data):
    # Found by fuzz_spm_model: protobuf returned the piece as bytes and a str check raised TypeError.
    from pieceworks.errors import FileFormatError
    from pieceworks.sentencepiece import SentencePieceProcessor

    data = _with_invalid_utf8(_spm_proto(shared_data).SerializeToString(), "<unk>".encode())
    with pytest.raises(FileFormatError, match="not valid UTF-8"):
        SentencePieceProcessor(model_proto=data)


def test_spm_trainer_spec_string_that_is_not_utf8_is_a_file_format_error(shared_data):
    # Found by fuzz_spm_model: an invalid unk_surface reached decode and "".join() raised TypeError.
    from pieceworks.errors import FileFormatError
    from pieceworks.sentencepiece import SentencePieceProcessor

    proto = _spm_proto(shared_data)
    proto.trainer_spec.unk_surface = "UNKSURF"
    data = _with_invalid_utf8(proto.SerializeToString(), b"UNKSURF")
    with pytest.raises(FileFormatError, match="trainer_spec.unk_surface is not valid UTF-8"):
        SentencePieceProcessor(model_proto=data)


def test_bpe_ids_far_past_the_vocabulary_are_refused_not_allocated():
    # Found by fuzz_tokenizer_json: a BPE vocabulary holding an id of ~10**69 made the encoder's
    # id-indexed tables raise OverflowError (an id of 10**9 would have allocated gigabytes).
    from pieceworks.models import BPE

    for tid in (10**69, 2**31, 10**9):
        with pytest.raises(FileFormatError, match="far past the vocabulary|largest id"):
            BPE({"a": 0, "b": 1, "ab": tid}, [("a", "b")])
    data = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 10**12}, "merges": []}}
    with pytest.raises(TokenizerFileError, match=r"model\.vocab"):
        pw.Tokenizer.from_str(json.dumps(data))
    gappy = BPE({"a": 0, "b": 1, "ab": 60_000}, [("a", "b")])      # gaps within bounds still work
    assert gappy.encode_ids("abab") == [60_000, 60_000]


def test_wordpiece_ids_past_int32_are_a_file_format_error():
    # Found by fuzz_tokenizer_json: a WordPiece id past int64 overflowed in the matcher (OverflowError).
    from pieceworks.models import WordPiece

    for tid in (2**31, 10**30):
        with pytest.raises(FileFormatError, match="largest id"):
            WordPiece({"[UNK]": 0, "a": tid}, unk_token="[UNK]")
    data = {"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 10**70}}}
    with pytest.raises(TokenizerFileError, match=r"model\.vocab"):
        pw.Tokenizer.from_str(json.dumps(data))


def test_tiktoken_rank_far_past_the_ranks_is_a_config_error():
    # Found by fuzz_tiktoken_file: a rank of ~10**70 made the rank table's allocation raise OverflowError.
    from pieceworks.tiktoken import Encoding

    ranks = {bytes([i]): i for i in range(256)}
    for rank in (10**70, 10**9):
        with pytest.raises(ConfigError, match="largest rank"):
            Encoding("broken", pat_str=r"\S+|\s+", mergeable_ranks={**ranks, b"ab": rank}, special_tokens={})
    gappy = Encoding("gappy", pat_str=r"\S+|\s+", mergeable_ranks={**ranks, b"ab": 1000}, special_tokens={})
    assert gappy.encode("ab") == [1000]


def test_an_excluded_char_token_is_still_the_chars_spelling():
    """The fuzz harness counted this a leak (excluded_char_own_token): a BPE with a ## prefix, the
    piece "s", and the id of "s" excluded. A char's own token is its only spelling, so it is still
    given; a merge's token built from it is not."""
    from pieceworks.models import BPE

    model = BPE({"s": 0, "t": 1, "st": 2, "##t": 3}, [("s", "##t")], continuing_subword_prefix="##")
    assert [t.id for t in model.tokenize("s", frozenset([0]))] == [0]
    assert [t.value for t in model.tokenize("st", frozenset([0]))] == ["st"]
    assert [t.value for t in model.tokenize("st", frozenset([0, 2]))] == ["s", "##t"]


def test_nfc_round_trip_follows_hugging_faces_tables_not_pythons(shared_data):
    """The harness found (nfc-marks-without-a-class-in-hf) that GPT-NeoX's NFC gives back marks in
    another order than Python's unicodedata: Hugging Face's Rust tables give U+1DF7..U+1DFF no
    combining class, so they are never reordered. pieceworks follows Hugging Face; the harness
    now expects its normalizer's text."""
    import unicodedata

    hf = pytest.importorskip("tokenizers")
    path = str(shared_data / "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json")
    ours, theirs = pw.Tokenizer.from_file(path), hf.Tokenizer.from_file(path)
    text = "M\u0301\u0301\u1df7\u1dff x"
    enc = ours.encode(text)
    assert enc.ids == theirs.encode(text).ids
    back = ours.decode(enc.ids)
    assert back == theirs.normalizer.normalize_str(text) == "\u1e3e\u0301\u1df7\u1dff x"
    assert back != unicodedata.normalize("NFC", text)
