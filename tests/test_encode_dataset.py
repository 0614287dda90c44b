"""encode-dataset: shards hold exactly tokenizer.encode of every document; resumable; atomic."""

from __future__ import annotations

import json
import os

import pytest

import pieceworks as pw
from pieceworks.cli import main
from pieceworks.dataset import encode_dataset, read_npy
from pieceworks.errors import ConfigError, FileWriteError


def documents(n: int = 1200) -> list[str]:
    return [f"Document {i}: the café ships {i * 37 % 1000} parcels 🎉 to user_{i % 89}" for i in range(n)]


@pytest.fixture(scope="module")
def tokenizer():
    tok = pw.Tokenizer(pw.models.BPE())
    tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = pw.decoders.ByteLevel()
    trainer = pw.trainers.BpeTrainer(vocab_size=400, show_progress=False, special_tokens=["<|endoftext|>"],
                                     initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(documents(300), trainer)
    return tok


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "docs.txt"
    # Blank lines are not documents; \r\n endings are removed like \n.
    path.write_bytes("".join(d + ("\r\n" if i % 5 == 0 else "\n") + ("\n" if i % 9 == 0 else "")
                             for i, d in enumerate(documents())).encode("utf-8"))
    return path


def read_shards(folder) -> tuple[list[int], list[list[int]], dict]:
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    ids, docs = [], []
    for shard in index["shards"]:
        shard_ids = read_npy(folder / f"{shard['name']}.npy").tolist()
        ends = read_npy(folder / f"{shard['name']}.docs.npy").tolist()
        assert len(shard_ids) == shard["tokens"] and len(ends) == shard["documents"]
        start = 0
        for end in ends:
            docs.append(shard_ids[start:end])
            start = end
        ids.extend(shard_ids)
    return ids, docs, index


def test_shards_hold_every_document_encoded_with_an_end_token(tokenizer, corpus, tmp_path):
    out = tmp_path / "out"
    index = encode_dataset([corpus], tokenizer, out, eod_token="<|endoftext|>", shard_bytes=9_000,
                           workers=1, progress=False)
    eod = tokenizer.token_to_id("<|endoftext|>")
    expected = [tokenizer.encode(d).ids + [eod] for d in documents()]
    ids, docs, written = read_shards(out)
    assert docs == expected
    assert index == written and index["dtype"] == "uint16" and index["documents"] == len(expected)
    assert len(index["shards"]) > 3
    assert index["tokens"] == sum(map(len, expected)) == len(ids)


def test_numpy_reads_the_shards(tokenizer, corpus, tmp_path):
    np = pytest.importorskip("numpy", reason="reading shards back with NumPy needs numpy")
    encode_dataset([corpus], tokenizer, tmp_path / "o", shard_bytes=50_000, workers=1, progress=False)
    arr = np.load(tmp_path / "o" / "shard-00000.npy", mmap_mode="r")
    assert arr.dtype == np.uint16 and arr.tolist() == read_npy(tmp_path / "o" / "shard-00000.npy").tolist()
    assert np.load(tmp_path / "o" / "shard-00000.docs.npy").dtype == np.int64


def test_two_processes_write_the_same_shards(tokenizer, corpus, tmp_path):
    for workers in (1, 2):
        encode_dataset([corpus], tokenizer, tmp_path / f"w{workers}", shard_bytes=9_000, workers=workers,
                       progress=False)
    names = sorted(p.name for p in (tmp_path / "w1").iterdir() if p.name != "job.json")
    assert names == sorted(p.name for p in (tmp_path / "w2").iterdir() if p.name != "job.json")
    for name in names:
        assert (tmp_path / "w1" / name).read_bytes() == (tmp_path / "w2" / name).read_bytes(), name


def test_a_big_vocabulary_gets_uint32(tmp_path):
    vocab = {f"w{i}": i for i in range(70_000)}
    tok = pw.Tokenizer(pw.models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = pw.pre_tokenizers.WhitespaceSplit()
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": f"w1 w69999 w{i}"}) + "\n" for i in range(10)), encoding="utf-8")
    index = encode_dataset([path], tok, tmp_path / "o", workers=1, progress=False)
    assert index["dtype"] == "uint32"
    ids, docs, _ = read_shards(tmp_path / "o")
    assert docs == [[1, 69999, i] for i in range(10)]


def test_resume_keeps_finished_shards_and_redoes_the_rest(tokenizer, corpus, tmp_path):
    out = tmp_path / "out"
    first = encode_dataset([corpus], tokenizer, out, shard_bytes=9_000, workers=1, progress=False)
    # A crash: shard 2 lost its ids file, shard 3 never started, and a temp file is left over.
    os.unlink(out / "shard-00002.npy")
    os.unlink(out / "shard-00003.npy")
    os.unlink(out / "shard-00003.docs.npy")
    (out / ".shard-00004.npy.abc.tmp").write_bytes(b"partial")
    kept = {p.name: p.stat().st_mtime_ns for p in out.glob("shard-0000[01]*")}
    again = encode_dataset([corpus], tokenizer, out, shard_bytes=9_000, workers=2, progress=False)
    assert again == first
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("shard-0000[01]*")} == kept
    assert read_shards(out)[1] == [tokenizer.encode(d).ids for d in documents()]


def test_another_job_in_the_same_folder_is_refused(tokenizer, corpus, tmp_path):
    out = tmp_path / "out"
    encode_dataset([corpus], tokenizer, out, shard_bytes=50_000, workers=1, progress=False)
    with pytest.raises(ConfigError, match="different job"):
        encode_dataset([corpus], tokenizer, out, shard_bytes=50_000, eod_token="<|endoftext|>", workers=1,
                       progress=False)
    with pytest.raises(ConfigError, match="not in the tokenizer's vocabulary"):
        encode_dataset([corpus], tokenizer, tmp_path / "x", eod_token="<eos>", progress=False)


def test_a_full_disk_leaves_no_shard_under_its_final_name(tokenizer, corpus, tmp_path, monkeypatch):
    import pieceworks.fileio as fileio

    if not os.path.exists("/dev/full"):
        pytest.skip("/dev/full is needed to simulate a full disk")

    def full_disk(fd, name):
        os.close(fd)
        return open("/dev/full", "wb")

    monkeypatch.setattr(fileio, "_open_temp", full_disk)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(FileWriteError, match="free disk space"):
        encode_dataset([corpus], tokenizer, out, workers=1, progress=False)
    # No shard, finished or partial, and no temporary file is left; only the job description.
    assert sorted(p.name for p in out.iterdir()) == ["job.json"]


def test_cli_encode_dataset_and_count(tokenizer, corpus, tmp_path, capsys):
    tok_path = tmp_path / "tok.json"
    tokenizer.save(str(tok_path))
    out = tmp_path / "shards"
    code = main(["encode-dataset", str(corpus), "-t", str(tok_path), "-o", str(out), "--eod-token",
                 "<|endoftext|>", "--shard-size", "20KB", "--no-progress", "-j", "2"])
    assert code == 0
    assert "Encoded 1,200 documents" in capsys.readouterr().out
    assert read_shards(out)[2]["documents"] == 1200
    code = main(["count", str(corpus), "-t", str(tok_path), "-o", str(tmp_path / "c.counts"), "--no-progress"])
    assert code == 0 and "distinct pieces" in capsys.readouterr().out
    from pieceworks.trainers.counts import Counts, count_files

    expected = count_files([corpus], None, tokenizer.pre_tokenizer, progress=False)
    assert list(Counts.load(tmp_path / "c.counts").items()) == list(expected.items())
    code = main(["encode-dataset", str(corpus), "-t", str(tok_path), "-o", str(out / "x"), "--eod-token", "<eos>"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("pieceworks: error:") and len(err.strip().splitlines()) == 1


def test_cli_count_reports_skipped_lines(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok line\nbad \xff\n")
    code = main(["count", str(bad), "-o", str(tmp_path / "c.counts"), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0 and "skipped 1 unreadable line(s)" in captured.err and "bad.txt:2" in captured.err
    code = main(["count", str(bad), "-o", str(tmp_path / "c.counts"), "--errors", "strict"])
    assert code == 2 and "bad.txt:2" in capsys.readouterr().err
