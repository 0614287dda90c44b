"""pieceworks.distributed on a real LocalCluster (2 worker processes): same results as one machine.

One cluster serves the whole module (starting one takes seconds).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask", reason="pieceworks.distributed needs the optional dask[distributed] extra")
pytest.importorskip("distributed", reason="pieceworks.distributed needs the optional dask[distributed] extra")

import pieceworks as pw  # noqa: E402
from pieceworks import distributed as pwd  # noqa: E402
from pieceworks.dataset import encode_dataset, read_npy  # noqa: E402
from pieceworks.errors import PieceworksError  # noqa: E402
from pieceworks.trainers.counts import count_files, count_texts, count_unit  # noqa: E402

PRE = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)


@pytest.fixture(scope="module")
def client():
    import cloudpickle
    from distributed import Client, LocalCluster

    # The worker-killing tasks below live in this test module, which the
    # workers cannot import: ship them by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dist")
    text = folder / "a.txt"
    text.write_bytes("".join(f"line {i}: ids {i * 7919 % 10007} and café 🎉 w{i % 31}\n"
                             for i in range(4000)).encode())
    jsonl = folder / "b.jsonl"
    jsonl.write_text("".join(json.dumps({"text": f"record {i} says hé{i % 13}"}) + "\n" for i in range(500)),
                     encoding="utf-8")
    return [text, jsonl]


def test_counting_files_on_the_cluster_equals_one_machine(client, corpus):
    local = count_files(corpus, pre_tokenizer=PRE, unit_bytes=20_000, progress=False)
    remote = pwd.count_files(corpus, pre_tokenizer=PRE, unit_bytes=20_000, client=client)
    assert list(remote.items()) == list(local.items())
    assert remote.n_texts == local.n_texts == 4500


def test_a_tokenizers_added_tokens_are_split_out_on_the_cluster_too(client, corpus):
    """``tokenizer=`` brings its added tokens, split out of the texts as its own training does."""
    tok = pw.Tokenizer(pw.models.BPE())
    tok.pre_tokenizer = PRE
    tok.add_tokens(["café", pw.AddedToken(" and", special=True)])
    local = count_files(corpus, tok.normalizer, PRE, unit_bytes=20_000, progress=False, added=tok._added)
    remote = pwd.count_files(corpus, tokenizer=tok, unit_bytes=20_000, client=client)
    assert list(remote.items()) == list(local.items())
    assert local["café"] == local[" and"] == 4000


def test_counting_a_bag_and_a_dataframe_column(client):
    import dask.bag as db

    texts = [f"doc {i} with tokens {i % 17} and ✓" for i in range(2000)]
    expected = list(count_texts(texts, None, PRE).items())
    bag = db.from_sequence(texts, npartitions=7)
    assert list(pwd.count_bag(bag, pre_tokenizer=PRE, client=client).items()) == expected
    pd = pytest.importorskip("pandas", reason="the dask.dataframe test needs pandas")
    dd = pytest.importorskip("dask.dataframe", reason="the dask.dataframe test needs dask[dataframe]")
    frame = dd.from_pandas(pd.DataFrame({"text": texts + [None], "n": range(2001)}), npartitions=5)
    assert list(pwd.count_series(frame["text"], pre_tokenizer=PRE, client=client).items()) == expected


def _dies_once(unit, plan, errors, marker_dir):
    """Kill the worker the first time unit 2 runs, then count normally."""
    marker = Path(marker_dir) / f"died-{unit.index}"
    if unit.index == 2 and not marker.exists():
        marker.touch()
        os._exit(1)
    return count_unit(unit, plan, errors)


def test_a_worker_that_dies_mid_job_does_not_lose_data(client, corpus, tmp_path):
    local = count_files(corpus, pre_tokenizer=PRE, unit_bytes=20_000, progress=False)
    task = functools.partial(_dies_once, marker_dir=str(tmp_path))
    remote = pwd.count_files(corpus, pre_tokenizer=PRE, unit_bytes=20_000, client=client, task=task)
    assert (tmp_path / "died-2").exists(), "the worker should have died once"
    assert list(remote.items()) == list(local.items())


def _always_fails(unit, plan, errors):
    if unit.index == 1:
        raise RuntimeError("disk on fire")
    return count_unit(unit, plan, errors)


def test_a_unit_that_keeps_failing_fails_the_job_clearly(client, corpus):
    with pytest.raises(PieceworksError, match=r"failed on unit 1 \(.*a.txt, bytes 20000-40000\).*disk on fire"):
        pwd.count_files(corpus, pre_tokenizer=PRE, unit_bytes=20_000, client=client, task=_always_fails)


def test_encoding_on_the_cluster_writes_the_same_shards(client, corpus, tmp_path):
    tok = pw.Tokenizer(pw.models.BPE())
    tok.pre_tokenizer = PRE
    tok.train_from_iterator([f"line {i} café" for i in range(200)],
                            pw.trainers.BpeTrainer(vocab_size=300, show_progress=False,
                                                   special_tokens=["<|endoftext|>"]))
    local = encode_dataset(corpus, tok, tmp_path / "local", eod_token="<|endoftext|>", shard_bytes=30_000,
                           workers=1, progress=False)
    remote = pwd.encode_dataset(corpus, tok, tmp_path / "remote", eod_token="<|endoftext|>", shard_bytes=30_000,
                                client=client)
    assert remote["shards"] == local["shards"] and remote["tokens"] == local["tokens"]
    for shard in local["shards"]:
        for suffix in (".npy", ".docs.npy"):
            name = shard["name"] + suffix
            assert read_npy(tmp_path / "remote" / name) == read_npy(tmp_path / "local" / name)
