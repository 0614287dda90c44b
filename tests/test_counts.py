"""Counting: the kernel fast path against the general pipeline, sources, merging, the counts file.

The general path (:func:`pieces_of`, one NormalizedString and pre-tokenizer
run per text) is the oracle: every fast path must give the same table in
the same first-seen order.
"""

from __future__ import annotations

import gzip
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pieceworks as pw
from pieceworks import normalizers, pre_tokenizers
from pieceworks.errors import ConfigError, FileFormatError, FileWriteError, InputTypeError
from pieceworks.trainers import counts as counting
from pieceworks.trainers.counts import (CountPlan, Counts, count_files, count_texts, count_words, merge_counts,
                                        pieces_of)

SCANNED = {
    "none": lambda: None,
    "bytelevel": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False),
    "bytelevel-prefix": lambda: pre_tokenizers.ByteLevel(add_prefix_space=True),
    "bytelevel-noregex": lambda: pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False),
    "whitespace": pre_tokenizers.Whitespace,
    "whitespace-split": pre_tokenizers.WhitespaceSplit,
    "bert": pre_tokenizers.BertPreTokenizer,
    "punctuation": pre_tokenizers.Punctuation,
    "digits": pre_tokenizers.Digits,
    "digits-individual": lambda: pre_tokenizers.Digits(individual_digits=True),
    "scripts": pre_tokenizers.UnicodeScripts,
    # Sequences of class-run cuts the kernel takes as one cut (pre_tokenizers.class_run_actions).
    "whitespace+digits-individual": lambda: pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                                                     pre_tokenizers.Digits(individual_digits=True)]),
    "whitespace-split+punctuation+digits": lambda: pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(), pre_tokenizers.Digits()]),
}

# Text that exercises the scanners: every category, contractions, runs of
# spaces before words, line breaks of every kind, astral chars, surrogates.
interesting = st.sampled_from(list("aZé1٣ \t\n\r\x0b\x85\u2028\u3000'sdl!?,.$^中文한글ก🎉\U0002070e\ud800-_"))
texts = st.lists(st.one_of(st.text(max_size=30), st.text(interesting, max_size=30)), max_size=8)


def general(texts, normalizer=None, pre_tokenizer=None) -> dict:
    """The oracle: the full pipeline on every text, counted in a dict (first-seen order)."""
    out: dict[str, int] = {}
    for text in texts:
        for piece in pieces_of(text, normalizer, pre_tokenizer):
            if piece:
                out[piece] = out.get(piece, 0) + 1
    return out


def lines_of(text: str) -> list[str]:
    """Lines as files are read for training: cut after each \\n only."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@pytest.mark.parametrize("name", sorted(SCANNED))
@settings(max_examples=40, deadline=None)
@given(texts)
def test_fast_path_matches_the_pipeline_in_content_and_order(name, batch):
    pre = SCANNED[name]()
    assert CountPlan.build(None, pre).mode is not None
    expected = general(batch, None, pre)
    got = count_words(batch, pre_tokenizer=pre)
    assert list(got.items()) == list(expected.items())


@pytest.mark.parametrize("normalizer", [normalizers.Lowercase(), normalizers.NFKC(),
                                        normalizers.BertNormalizer(), normalizers.Prepend("▁")],
                         ids=["lowercase", "nfkc", "bert", "prepend"])
@settings(max_examples=30, deadline=None)
@given(texts)
def test_fast_path_with_a_normalizer(normalizer, batch):
    pre = pre_tokenizers.BertPreTokenizer()
    got = count_texts(batch, normalizer, pre)
    assert list(got.items()) == list(general(batch, normalizer, pre).items())


def test_pipelines_without_a_scanner_take_the_general_path():
    pre = pre_tokenizers.Metaspace()
    assert CountPlan.build(None, pre).mode is None
    batch = ["Hey  friend", "a b", "Hey"]
    assert list(count_texts(batch, None, pre).items()) == list(general(batch, None, pre).items())
    # ... also through worker processes and lines of a file
    assert CountPlan.build(None, pre_tokenizers.Punctuation("merged_with_next")).mode is None
    # Word, symbol and number runs of each: more kinds of run than the kernel tells apart.
    four_runs = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits()])
    assert CountPlan.build(None, four_runs).mode is None
    batch = ["ab12 x²3 $%4", "ⅻ1"]
    assert list(count_texts(batch, None, four_runs).items()) == list(general(batch, None, four_runs).items())


@settings(max_examples=25, deadline=None)
@given(st.text(interesting, max_size=200), st.sampled_from(["bytelevel", "whitespace", "none"]))
def test_files_count_line_by_line_with_newlines_kept(tmp_path_factory, text, name):
    path = tmp_path_factory.mktemp("c") / "t.txt"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    pre = SCANNED[name]()
    if "\ud800" in text:
        with pytest.raises(FileFormatError):
            count_files([path], pre_tokenizer=pre, errors="strict", progress=False)
        return
    got = count_files([path], pre_tokenizer=pre, workers=1, progress=False, unit_bytes=7)
    assert list(got.items()) == list(general(lines_of(text), None, pre).items())


def corpus_file(tmp_path, shared=None, lines=3000):
    if shared is not None:
        data = (shared / "corpora/english/botchan.txt").read_bytes()
    else:
        data = "".join(f"line {i} of the café, with word{i % 97} and 🎉{i % 5}\r\n" if i % 7 else "\n"
                       for i in range(lines)).encode()
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    return path


def test_unit_boundaries_and_worker_counts_change_nothing(tmp_path):
    path = corpus_file(tmp_path)
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    one = count_files([path], pre_tokenizer=pre, workers=1, progress=False)
    for workers, unit in [(1, 100), (2, 997), (2, 64 << 10)]:
        other = count_files([path], pre_tokenizer=pre, workers=workers, unit_bytes=unit, progress=False)
        assert list(other.items()) == list(one.items())
        assert other.n_texts == one.n_texts == 3000
    assert one.n_bytes == path.stat().st_size


def test_real_corpus_matches_the_general_path(shared_data, tmp_path):
    path = corpus_file(tmp_path, shared_data)
    pre = pre_tokenizers.ByteLevel(add_prefix_space=True)
    lines = lines_of(path.read_bytes().decode("utf-8"))
    got = count_files([path], pre_tokenizer=pre, workers=2, unit_bytes=50_000, progress=False)
    assert list(got.items()) == list(general(lines, None, pre).items())


# -- merging ---------------------------------------------------------------------
tables = st.dictionaries(st.text(max_size=4), st.integers(0, 2**40), max_size=8)


@settings(max_examples=60, deadline=None)
@given(tables, tables, tables)
def test_merging_is_associative_and_commutative_as_tables(a, b, c):
    A, B, C = Counts(a), Counts(b), Counts(c)
    expected = merge_counts(a, b, c)
    assert dict((A + B) + C) == dict(A + (B + C)) == dict(C + B + A) == expected
    assert list((A + B).items())[: len(a)] == list(merge_counts(a, b).items())[: len(a)]  # A's order first


def test_shards_counted_apart_merge_to_the_whole(tmp_path):
    pre = pre_tokenizers.Whitespace()
    lines = [f"w{i % 13} x{i % 7} shared" for i in range(500)]
    whole = count_texts(lines, None, pre)
    shards = [count_texts(lines[k::3], None, pre) for k in range(3)]
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        merged = Counts.merge(*(shards[k] for k in order))
        assert dict(merged) == dict(whole)
        assert merged.total() == whole.total() == 1500


def test_counts_checks_its_input():
    with pytest.raises(InputTypeError, match="non-negative"):
        Counts({"a": -1})
    with pytest.raises(InputTypeError, match="keys must be str"):
        Counts({b"a": 1})


def test_prune_by_min_count_and_top_k():
    c = Counts({"a": 1, "b": 3, "c": 3, "d": 2, "e": 5})
    assert list(c.prune(min_count=2).items()) == [("b", 3), ("c", 3), ("d", 2), ("e", 5)]
    assert list(c.prune(top_k=3).items()) == [("b", 3), ("c", 3), ("e", 5)]
    assert list(c.prune(min_count=4, top_k=3).items()) == [("e", 5)]
    with pytest.raises(ConfigError):
        c.prune(top_k=-1)


def _batch_items(batches) -> list[tuple[str, int]]:
    """The (piece, count) pairs a list of word batches holds."""
    out = []
    for batch in batches:
        if len(batch) == 2:
            out.extend(zip(*batch))
            continue
        blob, offsets, values = batch
        out.extend((bytes(blob[offsets[i]:offsets[i + 1]]).decode("utf-8", "surrogatepass"), values[i])
                   for i in range(len(values)))
    return out


def test_docstring_examples_hold():
    import doctest

    assert doctest.testmod(counting).failed == 0


def test_word_batches_hold_every_piece_in_order_whatever_the_form():
    table = {"hé": 2, "\ud800x": 1, "": 4, "🎉🎉": 3, **{f"w{i}": i + 1 for i in range(300)}}
    forms = {
        "dict": table,
        "Counts from a dict": Counts(table),
        "compact Counts": Counts.merge(table),
    }
    for name, counts in forms.items():
        batches = list(counting.word_batches(counts, size=64))
        assert _batch_items(batches) == list(table.items()), name
        assert all(len(b[-1]) <= 64 for b in batches), name


# -- the counts file -------------------------------------------------------------------
@pytest.mark.parametrize("compression", [None, "gzip", "zstd"])
def test_save_and_load_round_trip(tmp_path, compression):
    if compression == "zstd":
        pytest.importorskip("zstandard", reason="zstd needs the optional zstandard package")
    c = count_texts(["hé llo 🎉 \ud800 wörld"] * 3 + ["x" * 70000], None, pre_tokenizers.WhitespaceSplit())
    c = c + Counts({f"p{i}": i + 1 for i in range(70_000)})   # more than one block
    path = tmp_path / "c.counts"
    c.save(path, compression=compression)
    back = Counts.load(path)
    assert list(back.items()) == list(c.items())
    assert back.total() == c.total()


def test_corrupt_counts_files_name_the_file_and_offset(tmp_path):
    path = tmp_path / "c.counts"
    Counts({"a": 2, "bc": 3}).save(path)
    data = path.read_bytes()
    cases = {
        "truncated": data[:-5],
        "no header": b"hello" + data[5:],
        "extra": data + b"x",
        "bad utf8": data.replace(b"bc", b"\xff\xfe"),
        "version": data[:8] + b"\x09" + data[9:],
    }
    for name, bad in cases.items():
        broken = tmp_path / f"{name}.counts"
        broken.write_bytes(bad)
        with pytest.raises(FileFormatError, match=str(broken.name)) as info:
            Counts.load(broken)
        if name in ("truncated", "extra", "bad utf8"):
            assert "at byte" in str(info.value)
    with pytest.raises(FileFormatError, match="not found"):
        Counts.load(tmp_path / "absent.counts")


def test_a_full_disk_leaves_no_counts_file(tmp_path, monkeypatch):
    import pieceworks.fileio as fileio

    def full_disk(fd, name):
        os.close(fd)
        return open("/dev/full", "wb")

    if not os.path.exists("/dev/full"):
        pytest.skip("/dev/full is needed to simulate a full disk")
    monkeypatch.setattr(fileio, "_open_temp", full_disk)
    path = tmp_path / "c.counts"
    with pytest.raises(FileWriteError, match="free disk space"):
        Counts({f"w{i}": i for i in range(100_000)}).save(path)
    assert os.listdir(tmp_path) == []


# -- sources ------------------------------------------------------------------------------
DOCS = ["Hello world, café!\nsecond line", "ids 1234 5678 0xdeadbeef", "", "中文 text 🎉"]


def test_jsonl_gzip_zstd_parquet_arrow_and_iterators_agree(tmp_path):
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    expected = general(DOCS, None, pre)
    records = "".join(json.dumps({"text": d, "id": i}) + "\n" for i, d in enumerate(DOCS))
    (tmp_path / "d.jsonl").write_text(records, encoding="utf-8")
    with gzip.open(tmp_path / "d.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(records)
    inputs = [tmp_path / "d.jsonl", tmp_path / "d.jsonl.gz"]
    try:
        import zstandard

        (tmp_path / "d.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(records.encode()))
        inputs.append(tmp_path / "d.jsonl.zst")
    except ImportError:
        pass
    for path in inputs:
        got = count_files([path], pre_tokenizer=pre, progress=False, unit_bytes=20)
        assert list(got.items()) == list(expected.items()), path
    assert list(count_texts(iter(DOCS), None, pre).items()) == list(expected.items())


def test_parquet_and_arrow_columns(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="Parquet/Arrow input needs the optional pyarrow package")
    import pyarrow.parquet as pq

    pre = pre_tokenizers.Whitespace()
    table = pa.table({"body": DOCS + [None], "n": list(range(len(DOCS) + 1))})
    pq.write_table(table, tmp_path / "d.parquet")
    with pa.OSFile(str(tmp_path / "d.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    expected = general(DOCS, None, pre)
    for name in ("d.parquet", "d.arrow"):
        got = count_files([tmp_path / name], pre_tokenizer=pre, field="body", progress=False)
        assert list(got.items()) == list(expected.items())
    with pytest.raises(FileFormatError, match="no column 'text'"):
        count_files([tmp_path / "d.parquet"], pre_tokenizer=pre, progress=False)


def test_bad_lines_are_skipped_and_reported(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"good one\nbad \xff line\nfine\nalso \xc3 bad\n")
    pre = pre_tokenizers.WhitespaceSplit()
    with pytest.warns(UserWarning, match=r"skipped 2 unreadable line\(s\); the first is .*mixed.txt:2"):
        got = count_files([path], pre_tokenizer=pre, progress=False)
    assert dict(got) == {"good": 1, "one": 1, "fine": 1}
    assert got.skipped == 2 and got.first_skipped.endswith("mixed.txt:2: invalid UTF-8")
    with pytest.raises(FileFormatError, match=r"mixed.txt:2: invalid UTF-8"):
        count_files([path], pre_tokenizer=pre, errors="strict", progress=False)
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"text": "ok"}\nnot json\n{"other": 1}\n', encoding="utf-8")
    with pytest.warns(UserWarning, match="bad.jsonl:2: not valid JSON"):
        assert dict(count_files([jsonl], pre_tokenizer=pre, progress=False)) == {"ok": 1}
    with pytest.raises(FileFormatError, match="bad.jsonl:2: not valid JSON"):
        count_files([jsonl], pre_tokenizer=pre, errors="strict", progress=False, unit_bytes=5)


def test_empty_corpus_and_missing_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    got = count_files([empty], progress=False)
    assert len(got) == 0 and got.n_texts == 0
    with pytest.raises(FileFormatError, match="file not found"):
        count_files([tmp_path / "absent.txt"], progress=False)


# -- training from counts ---------------------------------------------------------------------
def trainers_and_tokenizers():
    bpe = pw.Tokenizer(pw.models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    wp = pw.Tokenizer(pw.models.WordPiece(unk_token="[UNK]"))
    wp.normalizer = normalizers.BertNormalizer()
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wl = pw.Tokenizer(pw.models.WordLevel(unk_token="[UNK]"))
    wl.pre_tokenizer = pre_tokenizers.Whitespace()
    return {
        "bpe": (bpe, lambda: pw.trainers.BpeTrainer(vocab_size=400, show_progress=False)),
        "wordpiece": (wp, lambda: pw.trainers.WordPieceTrainer(vocab_size=300, show_progress=False,
                                                                special_tokens=["[UNK]"])),
        "wordlevel": (wl, lambda: pw.trainers.WordLevelTrainer(vocab_size=200, special_tokens=["[UNK]"])),
    }


@pytest.mark.parametrize("name", ["bpe", "wordpiece", "wordlevel"])
def test_training_from_files_is_counting_plus_train_from_counts(tmp_path, name, monkeypatch):
    path = corpus_file(tmp_path)
    tokenizer, make_trainer = trainers_and_tokenizers()[name]
    from_files = pw.Tokenizer.from_str(tokenizer.to_str())
    from_files.train([str(path)], make_trainer())
    counts = count_files([path], tokenizer.normalizer, tokenizer.pre_tokenizer, progress=False)
    counts.save(tmp_path / "c.counts")
    for source in (counts, str(tmp_path / "c.counts"), dict(counts.items())):
        from_counts = pw.Tokenizer.from_str(tokenizer.to_str())
        from_counts.train_from_counts(source, make_trainer())
        assert from_counts.to_str() == from_files.to_str()
    # ... and the same whatever the number of counting processes
    monkeypatch.setenv("PIECEWORKS_WORKERS", "1")
    one = pw.Tokenizer.from_str(tokenizer.to_str())
    one.train([str(path)], make_trainer())
    assert one.to_str() == from_files.to_str()


def test_parallel_counting_trains_the_same_as_the_old_single_pass(tmp_path, monkeypatch):
    # The old path: one dict filled line by line through the general pipeline.
    path = corpus_file(tmp_path)
    tokenizer, make_trainer = trainers_and_tokenizers()["wordpiece"]
    lines = lines_of(path.read_bytes().decode("utf-8"))
    reference = pw.Tokenizer.from_str(tokenizer.to_str())
    reference.train_from_counts(general(lines, tokenizer.normalizer, tokenizer.pre_tokenizer), make_trainer())
    monkeypatch.setattr(counting._sources, "DEFAULT_UNIT_BYTES", 10_000)
    ours = pw.Tokenizer.from_str(tokenizer.to_str())
    ours.train([str(path)], make_trainer())
    assert ours.to_str() == reference.to_str()


def test_memory_limit_option_is_parsed_and_checked():
    assert pw.trainers.BpeTrainer(memory_limit="2GB").memory_limit == 2_000_000_000
    assert pw.trainers.WordLevelTrainer(memory_limit=64 << 20).memory_limit == 64 << 20
    for bad in ("lots", "-1GB", "1KB", True):
        with pytest.raises(ConfigError):
            pw.trainers.WordPieceTrainer(memory_limit=bad)


def test_unigram_trains_from_counts_exactly_as_from_the_texts(tmp_path):
    # Issue 7: Unigram from counted pieces. Training from texts is counting + train_from_counts,
    # so counts made elsewhere (a dict, a Counts, a counts file) give the same tokenizer.
    from pieceworks.corpus import iter_default_corpus

    texts = [t for _, t in zip(range(1500), iter_default_corpus())]

    def fresh():
        tok = pw.Tokenizer(pw.models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        return tok, pw.trainers.UnigramTrainer(vocab_size=300, show_progress=False)

    from_texts, trainer = fresh()
    from_texts.train_from_iterator(texts, trainer)
    counts = count_texts(texts, None, pre_tokenizers.Metaspace())
    counts.save(tmp_path / "pieces.counts")
    for source in (counts, dict(counts.items()), str(tmp_path / "pieces.counts")):
        from_counts, trainer = fresh()
        from_counts.train_from_counts(source, trainer)
        assert from_counts.to_str() == from_texts.to_str()
    assert from_texts.get_vocab_size() == 300
