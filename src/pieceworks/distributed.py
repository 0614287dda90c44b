"""Counting and encoding on a Dask cluster (``pip install pieceworks[dask]``).

The same units of work as on one machine (:mod:`pieceworks.trainers.sources`)
run as Dask tasks: byte ranges of text files are read by the workers
themselves (the files must be on a filesystem every worker sees), other
inputs are read here and their blocks shipped. Count tables come back as
compact arrays and are merged here, in unit order, so the result is
*identical* to :func:`pieceworks.trainers.counts.count_files` on one
machine, first-seen order included. Encoding writes shards from the workers
into ``out_dir`` (again a shared filesystem), exactly as
:func:`pieceworks.dataset.encode_dataset` does, and is resumable the same
way.

``client`` is a ``dask.distributed.Client`` you made (for your cluster); by
default a ``LocalCluster`` with one single-threaded worker process per core
is started and closed around the call.

A worker that dies mid-job: Dask runs its tasks again elsewhere (up to the
scheduler's ``allowed-failures``); if a task keeps killing workers, the job
fails with :class:`~pieceworks.errors.PieceworksError` naming the unit, and
nothing is merged or indexed silently without it.

Example (needs a running cluster)::

    from dask.distributed import Client
    from pieceworks import distributed, pre_tokenizers
    counts = distributed.count_files(["a.txt", "b.jsonl.zst"], pre_tokenizer=pre_tokenizers.ByteLevel(),
                                     client=Client("scheduler:8786"))
    counts.save("corpus.counts")
"""

from __future__ import annotations

import contextlib
from collections import deque
from typing import Iterator

from .errors import ConfigError, PieceworksError
from .trainers import sources as _sources
from .trainers.counts import CountPlan, Counts, UnitResult, _Merger, _report_skipped, count_unit

__all__ = ["count_files", "count_bag", "count_series", "encode_dataset", "local_client"]

#: Tasks in flight per worker thread: keeps workers busy without shipping the whole input at once.
_IN_FLIGHT = 4


def _require_dask():
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ConfigError("pieceworks.distributed needs Dask, which is not installed",
                          fix="pip install 'pieceworks[dask]' (dask[distributed])") from exc


@contextlib.contextmanager
def local_client(client=None, workers: int | None = None):
    """``client`` itself, or a Client on a new LocalCluster (closed on exit)."""
    _require_dask()
    if client is not None:
        yield client
        return
    from distributed import Client, LocalCluster

    from .trainers.counts import default_workers

    with LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as own:
        yield own


def _slots(client) -> int:
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:
        return 2


def _ordered_results(client, task, units: Iterator, describe, **kwargs) -> Iterator:
    """Submit ``task(unit, **kwargs)`` for every unit; yield results in unit order."""
    window = _IN_FLIGHT * _slots(client)
    pending: deque = deque()

    def take():
        unit, future = pending.popleft()
        try:
            return future.result()
        except PieceworksError:
            raise
        except Exception as exc:  # KilledWorker, CommClosedError, a worker's crash...
            raise PieceworksError(f"the Dask job failed on {describe(unit)}: {type(exc).__name__}: {exc}",
                                  fix="check the workers' logs (memory, disk, a crashing input), then run the "
                                      "job again; encode jobs resume where they stopped") from exc
        finally:
            future.release()

    try:
        for unit in units:
            pending.append((unit, client.submit(task, unit, pure=False, retries=1, **kwargs)))
            while len(pending) >= window:
                yield take()
        while pending:
            yield take()
    finally:
        for _, future in pending:
            future.cancel()


def _describe_unit(unit) -> str:
    where = unit.source.name
    if unit.payload is None:
        return f"unit {unit.index} ({where}, bytes {unit.start}-{unit.end})"
    return f"unit {unit.index} ({where})"


def _merge(results, plan: CountPlan, memory_limit, tmp_dir, errors: str) -> Counts:
    with _Merger(plan, _parse(memory_limit), tmp_dir) as merger:
        for result in results:
            merger.add(result)
        counts = merger.finish()
    _report_skipped(counts, errors)
    return counts


def _parse(memory_limit):
    from .trainers.counts import parse_memory_limit

    return parse_memory_limit(memory_limit)


def _components(tokenizer, normalizer, pre_tokenizer):
    """CountPlan.build's arguments: a tokenizer's stages and added tokens (split out of the texts, as
    its training does), or the stages given."""
    if tokenizer is not None:
        return tokenizer.normalizer, tokenizer.pre_tokenizer, tokenizer._added, bool(tokenizer.encode_special_tokens)
    return normalizer, pre_tokenizer


# -- counting -------------------------------------------------------------------------------------
def count_files(files, normalizer=None, pre_tokenizer=None, *, tokenizer=None, client=None, field: str = "text",
                format: str | None = None, errors: str = "skip", unit_bytes: int | None = None,
                memory_limit=None, tmp_dir=None, task=None) -> Counts:
    """:func:`pieceworks.trainers.counts.count_files`, with the units counted on Dask workers.

    ``tokenizer`` (instead of ``normalizer`` / ``pre_tokenizer``) takes both
    from a Tokenizer. ``memory_limit`` bounds the merged table here, as on
    one machine. ``task`` replaces the per-unit function (tests use it).
    """
    if errors not in _sources.ERRORS:
        raise ConfigError(f"errors must be one of {_sources.ERRORS}, got {errors!r}")
    plan = CountPlan.build(*_components(tokenizer, normalizer, pre_tokenizer))
    sources = _sources.open_sources(files, field=field, format=format)
    units = _sources.plan_units(sources, unit_bytes or _sources.DEFAULT_UNIT_BYTES)
    with local_client(client) as c:
        results = _ordered_results(c, task or count_unit, units, _describe_unit, plan=plan, errors=errors)
        return _merge(results, plan, memory_limit, tmp_dir, errors)


def _count_partition(texts, index: int, plan: CountPlan) -> UnitResult:
    """Count one partition of a bag or series (a list of str; other values are refused)."""
    items = list(texts)
    source = _sources.iterable_source(None, f"partition {index}")
    if any(not isinstance(t, str) for t in items):
        bad = next(t for t in items if not isinstance(t, str))
        raise PieceworksError(f"partition {index} holds a {type(bad).__name__}, not a str",
                              fix="map the collection to text first (e.g. bag.map(str) or series.astype(str))")
    unit = _sources.Unit(index, source, payload=items, size=sum(len(t) for t in items))
    return count_unit(unit, plan, "strict")


def _count_delayed(parts, plan: CountPlan, client, memory_limit, tmp_dir, what: str) -> Counts:
    from dask import delayed

    tasks = [delayed(_count_partition)(part, i, plan) for i, part in enumerate(parts)]
    with local_client(client) as c:
        futures = c.compute(tasks)

        def results():
            for i, future in enumerate(futures):
                try:
                    yield future.result()
                except PieceworksError:
                    raise
                except Exception as exc:
                    raise PieceworksError(f"the Dask job failed on {what} partition {i}: {type(exc).__name__}: {exc}",
                                          fix="check the workers' logs, then run the job again") from exc
        return _merge(results(), plan, memory_limit, tmp_dir, "strict")


def count_bag(bag, normalizer=None, pre_tokenizer=None, *, tokenizer=None, client=None, memory_limit=None,
              tmp_dir=None) -> Counts:
    """Count a ``dask.bag`` of texts (str); partitions in order give the first-seen order."""
    _require_dask()
    plan = CountPlan.build(*_components(tokenizer, normalizer, pre_tokenizer))
    return _count_delayed(bag.to_delayed(), plan, client, memory_limit, tmp_dir, "bag")


def count_series(series, normalizer=None, pre_tokenizer=None, *, tokenizer=None, client=None, memory_limit=None,
                 tmp_dir=None) -> Counts:
    """Count a ``dask.dataframe`` column (``df["text"]``); missing values are left out."""
    _require_dask()
    from dask import delayed

    plan = CountPlan.build(*_components(tokenizer, normalizer, pre_tokenizer))
    parts = [delayed(_series_texts)(part) for part in series.to_delayed()]
    return _count_delayed(parts, plan, client, memory_limit, tmp_dir, "column")


def _series_texts(part) -> list:
    """A pandas Series partition as a list of str, missing values (None, NaN, NA) left out."""
    return part.dropna().tolist()


# -- encoding ----------------------------------------------------------------------------------------
def encode_dataset(inputs, tokenizer, out_dir, *, client=None, field: str = "text", format: str | None = None,
                   eod_token: str | None = None, add_special_tokens: bool = False,
                   shard_bytes: int | None = None, errors: str = "skip", task=None) -> dict:
    """:func:`pieceworks.dataset.encode_dataset` with the shards written by Dask workers."""
    from .dataset import DEFAULT_SHARD_BYTES, check_result, encode_unit, prepare_job

    job = prepare_job(inputs, tokenizer, out_dir, field=field, format=format, eod_token=eod_token,
                      add_special_tokens=add_special_tokens, shard_bytes=shard_bytes or DEFAULT_SHARD_BYTES,
                      errors=errors)
    results = {}
    with local_client(client) as c:
        for result in _ordered_results(c, task or encode_unit, job.units(), _describe_unit,
                                       tokenizer_json=job.tokenizer_json, out_dir=str(job.out_dir),
                                       dtype=job.dtype, eod_id=job.eod_id,
                                       add_special_tokens=job.add_special_tokens, errors=job.errors):
            result = check_result(result)
            results[result["shard"]] = result
    return job.finish(results)
