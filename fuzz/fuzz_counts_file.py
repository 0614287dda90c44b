"""Fuzz the counts-file loader (saved ``{piece: count}`` tables) and training from what it reads.

The loader is looked up as ``LOADER`` below; while it does not exist the
harness skips (exit status 0, saying why). Training from fuzzed counts
tables is covered by fuzz_train_counts.py in any case.

    python fuzz/fuzz_counts_file.py -max_total_time=60 CORPUS_DIR
"""

import importlib
import os
import sys

from _common import Input, clean, instrumented, run, scratch_dir

#: module:attribute (dotted) that reads a counts file into a {piece: count} mapping.
LOADER = os.environ.get("PIECEWORKS_FUZZ_COUNTS_LOADER", "pieceworks.trainers.counts:Counts.load")

with instrumented():
    import pieceworks as pw

    _module, _, _name = LOADER.partition(":")
    try:
        load_counts = importlib.import_module(_module)
        for _part in _name.split("."):
            load_counts = getattr(load_counts, _part)
        MISSING = None
    except (ImportError, AttributeError) as exc:
        load_counts = None
        MISSING = f"{LOADER} does not exist yet ({exc}); set PIECEWORKS_FUZZ_COUNTS_LOADER to the loader"

_DIR = scratch_dir("counts")


def test_one_input(data: bytes) -> None:
    if load_counts is None:
        return
    inp = Input(data)
    kind = inp.int_in(3)
    path = os.path.join(_DIR, "counts")
    with open(path, "wb") as fh:
        fh.write(inp.rest())
    counts = clean(load_counts, path)
    if not counts:
        return
    assert all(isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in dict(counts).items()), \
        "the loader returned something that is not {str: count}"
    model, trainer = [(pw.models.BPE(), pw.trainers.BpeTrainer(vocab_size=60, show_progress=False)),
                      (pw.models.WordPiece(), pw.trainers.WordPieceTrainer(vocab_size=60, show_progress=False)),
                      (pw.models.WordLevel(), pw.trainers.WordLevelTrainer(vocab_size=60, show_progress=False))][kind]
    tok = pw.Tokenizer(model)
    clean(tok.train_from_counts, counts, trainer)


def seeds():
    """Counts files as Counts.save writes them (plain and gzip), from small tables."""
    from pieceworks.trainers.counts import Counts

    for name, compression in (("plain", None), ("gzip", "gzip")):
        path = os.path.join(_DIR, f"seed-{name}")
        Counts({"hello": 3, "world": 2, "é": 1, "叫🌍": 7, "": 1}).save(path, compression=compression)
        with open(path, "rb") as fh:
            yield name, b"\x00" + fh.read()


if __name__ == "__main__":
    if load_counts is None:
        print(f"fuzz_counts_file: skipped: {MISSING}")
        sys.exit(0)
    run(test_one_input, seeds)
