"""memory_limit: counting spills its table to disk and still gives the unlimited result.

The corpus looks like web text at its worst for counting: every line holds
hashes, ids and numbers, so most pieces are seen once and the table is far
bigger than the limit allows. (The peak-RSS side is measured by
benchmarks/bench_memory_limit.py, which runs at full size.)
"""

from __future__ import annotations

import gc
import hashlib
import os

import pytest

import pieceworks as pw
from pieceworks import pre_tokenizers
from pieceworks.errors import FileWriteError
from pieceworks.trainers.counts import count_files, count_texts


def web_like_lines(n: int) -> list[str]:
    lines = []
    for i in range(n):
        digest = hashlib.sha1(str(i).encode()).hexdigest()
        lines.append(f"user_{i * 7919 % 1000003} posted {digest[:12]} at id={i * 31337} "
                     f"the quick brown fox {i % 50}\n")
    return lines


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("mem") / "web.txt"
    path.write_text("".join(web_like_lines(60_000)), encoding="utf-8")
    return path


def test_spilled_counts_equal_unlimited_counts(corpus, tmp_path):
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    unlimited = count_files([corpus], pre_tokenizer=pre, progress=False, unit_bytes=256 << 10)
    limited = count_files([corpus], pre_tokenizer=pre, progress=False, unit_bytes=256 << 10,
                          memory_limit="16MB", tmp_dir=tmp_path)
    assert len(unlimited) > 150_000
    assert limited.spills >= 2, "the limit should have forced spills"
    assert list(limited.items()) == list(unlimited.items())
    assert limited.total() == unlimited.total()
    # The spilled counts stay on disk (one merged file) until the Counts goes.
    assert len(os.listdir(tmp_path)) == 1
    del limited
    gc.collect()
    assert os.listdir(tmp_path) == [], "spill files are removed"


def test_spilled_counts_on_disk_act_like_counts_in_memory(corpus, tmp_path):
    import pickle

    from pieceworks.trainers.counts import Counts, word_batches

    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    unlimited = count_files([corpus], pre_tokenizer=pre, progress=False, unit_bytes=256 << 10)
    limited = count_files([corpus], pre_tokenizer=pre, progress=False, unit_bytes=256 << 10,
                          memory_limit="16MB", tmp_dir=tmp_path)
    assert limited.spills >= 2 and len(limited) == len(unlimited)
    # Saved, the two are the same file.
    limited.save(tmp_path / "limited.counts")
    unlimited.save(tmp_path / "unlimited.counts")
    assert (tmp_path / "limited.counts").read_bytes() == (tmp_path / "unlimited.counts").read_bytes()
    # Pickled (to another process), merged, pruned, looked up: the same.
    assert list(pickle.loads(pickle.dumps(limited)).items()) == list(unlimited.items())
    extra = {"Ġzz": 3, "Ġthe": 2}
    assert list((limited + extra).items()) == list((unlimited + extra).items())
    assert list(Counts.merge(extra, limited).items()) == list(Counts.merge(extra, unlimited).items())
    assert list(limited.prune(min_count=3).items()) == list(unlimited.prune(min_count=3).items())
    # Word batches stream from disk, in blocks, in first-seen order.
    pieces = [p for blob, offsets, _ in word_batches(limited)
              for p in (bytes(blob[offsets[i]:offsets[i + 1]]).decode() for i in range(len(offsets) - 1))]
    assert pieces == list(unlimited)
    assert limited["Ġthe"] == unlimited["Ġthe"]


def test_spilling_from_an_iterator_and_one_worker(corpus):
    pre = pre_tokenizers.Whitespace()
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    unlimited = count_texts(lines, None, pre, workers=1, unit_bytes=128 << 10)
    limited = count_texts(iter(lines), None, pre, workers=1, unit_bytes=128 << 10, memory_limit="16MB")
    assert limited.spills >= 1
    assert list(limited.items()) == list(unlimited.items())


@pytest.mark.parametrize("kind", ["bpe", "wordpiece"])
def test_trainers_with_a_memory_limit_train_the_same_tokenizer(corpus, kind):
    if kind == "bpe":
        tokenizer = pw.Tokenizer(pw.models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)

        def make(limit):
            return pw.trainers.BpeTrainer(vocab_size=600, show_progress=False, memory_limit=limit)
    else:
        tokenizer = pw.Tokenizer(pw.models.WordPiece(unk_token="[UNK]"))
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()

        def make(limit):
            return pw.trainers.WordPieceTrainer(vocab_size=400, show_progress=False, memory_limit=limit,
                                                special_tokens=["[UNK]"])
    results = []
    for limit in (None, "16MB"):
        trained = pw.Tokenizer.from_str(tokenizer.to_str())
        trained.train([str(corpus)], make(limit))
        results.append(trained.to_str())
    assert results[0] == results[1]


def test_a_spill_on_a_full_disk_fails_clearly(corpus, tmp_path, monkeypatch):
    import builtins

    real_open = open

    def full_disk(path, mode="r", *args, **kwargs):
        if "pieceworks-counts-" in str(path) and "a" in mode:
            return real_open("/dev/full", "wb")
        return real_open(path, mode, *args, **kwargs)

    if not os.path.exists("/dev/full"):
        pytest.skip("/dev/full is needed to simulate a full disk")
    monkeypatch.setattr(builtins, "open", full_disk)
    with pytest.raises(FileWriteError, match="cannot spill counts"):
        count_files([corpus], progress=False, unit_bytes=256 << 10, memory_limit="16MB", tmp_dir=tmp_path,
                    workers=1)
    assert os.listdir(tmp_path) == []
