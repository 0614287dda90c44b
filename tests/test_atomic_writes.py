"""Nothing lost: every file pieceworks writes is written to a temporary name, fsync'ed and renamed.

* A source audit: no module writes a file except through
  :mod:`pieceworks.fileio` (a short allow-list names the exceptions and why).
* Kill tests: a subprocess saves a large tokenizer (and the model files, a
  .model, a vocab.txt) in a loop and is SIGKILLed at random moments; the
  file on disk is then always either the old version or the new one, byte
  for byte, and parses. The same for ``pieceworks train -o`` killed
  mid-training: the previous tokenizer.json survives intact.
"""

from __future__ import annotations

import ast
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pieceworks as pw
from pieceworks.errors import FileWriteError
from pieceworks.fileio import atomic_write_bytes, atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "pieceworks"

#: (file, function) pairs allowed to open files for writing directly, and why.
ALLOWED_WRITERS = {
    ("fileio.py", "*"): "the atomic writers themselves",
    ("cli.py", "_silence_stdout"): "opens /dev/null to silence a broken stdout pipe",
    ("trainers/counts.py", "_scratch_writer"): "scratch files inside a TemporaryDirectory, never a user's file",
}
_WRITE_METHODS = {"write_text", "write_bytes"}


def _write_mode(call: ast.Call) -> str | None:
    """The mode string of an ``open``-like call if it writes, else None."""
    mode = None
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        mode = call.args[1].value
    for kw in call.keywords:
        if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
            mode = kw.value.value
    return mode if isinstance(mode, str) and any(c in mode for c in "wax+") else None


def _writers(path: Path) -> list[tuple[str, int, str]]:
    """(function, line, what) for each direct file write in the module at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call):
                func = child.func
                callee = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if callee in ("open", "fdopen") and (mode := _write_mode(child)):
                    found.append((name, child.lineno, f"{callee}(..., {mode!r})"))
                elif callee in _WRITE_METHODS:
                    found.append((name, child.lineno, f".{callee}(...)"))
                elif callee == "open" and isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "os":
                    flags = ast.unparse(child.args[1]) if len(child.args) > 1 else ""
                    if any(f in flags for f in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND")):
                        found.append((name, child.lineno, f"os.open(..., {flags})"))
            visit(child, name)

    visit(tree, "<module>")
    return found


def test_every_writer_goes_through_fileio():
    stray = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for function, line, what in _writers(path):
            if (rel, "*") in ALLOWED_WRITERS or (rel, function) in ALLOWED_WRITERS:
                continue
            stray.append(f"{rel}:{line} in {function}(): {what}")
    assert not stray, ("files written without pieceworks.fileio (use atomic_write_text/atomic_write_bytes/"
                       "atomic_open, or add to ALLOWED_WRITERS with the reason):\n" + "\n".join(stray))


def test_the_audit_sees_a_stray_writer(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def save(p):\n    with open(p, 'w') as fh:\n        fh.write('x')\n"
                     "def dump(p):\n    p.write_text('x')\n")
    assert [w[:2] for w in _writers(probe)] == [("save", 2), ("dump", 5)]


# -- fileio itself -----------------------------------------------------------------

def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "tok.json"
    atomic_write_text(target, "old")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(FileWriteError, match="unchanged"):
        atomic_write_bytes(target, b"new" * 1000)
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok.json"]


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileWriteError, match="does not exist"):
        atomic_write_text(tmp_path / "nope" / "tok.json", "x")


def test_a_save_replaces_the_file_it_does_not_append(tmp_path):
    tok = pw.Tokenizer(pw.models.WordLevel({"a": 0, "b": 1}, unk_token="a"))
    path = tmp_path / "tok.json"
    path.write_text("x" * 100_000)
    tok.save(str(path))
    assert json.loads(path.read_text())["model"]["vocab"] == {"a": 0, "b": 1}


# -- SIGKILL at random moments ---------------------------------------------------------

# Saves two versions (A, B) of each file in turn, forever; the parent kills it.
SAVER = r'''
import sys, os
import pieceworks as pw
from pieceworks.formats.sentencepiece import read_model_proto, write_model_proto
from pieceworks.formats.bert_vocab import write_bert_vocab
kind, source, out = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "tokenizer":
    tok = pw.Tokenizer.from_file(source)
    versions = [lambda: tok.save(out, pretty=True), lambda: tok.save(out, pretty=False)]
elif kind == "bpe-files":
    model = pw.Tokenizer.from_file(source).model
    os.makedirs(out, exist_ok=True)
    versions = [lambda: model.save(out, "a"), lambda: model.save(out, "a")]
elif kind == "spm-model":
    proto = read_model_proto(source)
    other = read_model_proto(source)
    other.trainer_spec.model_prefix = "version-b"
    versions = [lambda: write_model_proto(proto, out), lambda: write_model_proto(other, out)]
elif kind == "vocab-txt":
    vocab = pw.models.WordPiece.read_file(source)
    shorter = dict(list(vocab.items())[: len(vocab) // 2])
    versions = [lambda: write_bert_vocab(out, vocab), lambda: write_bert_vocab(out, shorter)]
print("ready", flush=True)
i = 0
while True:
    versions[i % 2]()
    i += 1
'''


def _kill_loop(kind: str, source: Path, out: Path, rounds: int, check) -> int:
    """Start the saver ``rounds`` times, SIGKILL it at a random moment, run ``check()`` after each kill."""
    rng = random.Random(20240611)
    kills = 0
    for _ in range(rounds):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, kind, str(source), str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
            time.sleep(rng.uniform(0.0, 0.6))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        kills += 1
        check()
    return kills


def test_killed_tokenizer_saves_leave_the_old_or_the_new_file(shared_data, tmp_path):
    source = shared_data / "tokenizers/hf_tokenizer_json/qwen3/tokenizer.json"   # 11 MB of JSON
    tok = pw.Tokenizer.from_file(str(source))
    versions = {tok.to_str(pretty=True).encode(), tok.to_str(pretty=False).encode()}
    out = tmp_path / "tokenizer.json"
    tok.save(str(out))

    def check():
        data = out.read_bytes()
        assert data in versions, f"a broken tokenizer.json of {len(data)} bytes after SIGKILL"

    assert _kill_loop("tokenizer", source, out, 8, check) == 8
    assert pw.Tokenizer.from_file(str(out)).get_vocab_size() == tok.get_vocab_size()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "tokenizer.json"]
    assert all(name.startswith(".tokenizer.json.") and name.endswith(".tmp") for name in leftovers), leftovers


def test_killed_model_file_saves_leave_whole_files(shared_data, tmp_path):
    source = shared_data / "tokenizers/hf_tokenizer_json/gpt-neox-20b/tokenizer.json"
    model = pw.Tokenizer.from_file(str(source)).model
    reference = tmp_path / "reference"
    reference.mkdir()
    expected = {Path(p).name: Path(p).read_bytes() for p in model.save(str(reference), "a")}
    out = tmp_path / "out"

    def check():
        present = {p.name: p.read_bytes() for p in out.iterdir() if not p.name.endswith(".tmp")} \
            if out.is_dir() else {}
        for name, data in present.items():
            assert data == expected[name], f"{name} is broken after SIGKILL ({len(data)} bytes)"

    _kill_loop("bpe-files", source, out, 5, check)


def test_killed_spm_and_vocab_writes_leave_whole_files(shared_data, tmp_path):
    from pieceworks.formats.sentencepiece import read_model_proto

    model = shared_data / "tokenizers/sentencepiece/hebrew-modernbert-100k/spiece.model"
    out = tmp_path / "x.model"
    out.write_bytes(model.read_bytes())

    def check_model():
        proto = read_model_proto(str(out))             # parses and passes the checks
        assert proto.trainer_spec.model_prefix in ("version-b", read_model_proto(str(model)).trainer_spec.model_prefix)

    _kill_loop("spm-model", model, out, 5, check_model)

    vocab = shared_data / "tokenizers/bert_all-MiniLM-L6-v2/vocab.txt"
    out_vocab = tmp_path / "vocab.txt"
    out_vocab.write_bytes(vocab.read_bytes())
    full = pw.models.WordPiece.read_file(str(vocab))

    def check_vocab():
        got = pw.models.WordPiece.read_file(str(out_vocab))
        assert len(got) in (len(full), len(full) // 2) and all(full[k] == v for k, v in got.items())

    _kill_loop("vocab-txt", vocab, out_vocab, 5, check_vocab)


def test_killed_training_keeps_the_previous_tokenizer(tmp_path):
    """``pieceworks train -o`` SIGKILLed while training: the old tokenizer.json is untouched."""
    out = tmp_path / "tok.json"
    old = pw.Tokenizer(pw.models.WordLevel({"old": 0}, unk_token="old"))
    old.save(str(out))
    before = out.read_bytes()
    rng = random.Random(7)
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "pieceworks", "train", "--vocab-size", "4000",
                                 "--no-progress", "-o", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
        time.sleep(rng.uniform(0.5, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        data = out.read_bytes()
        # The kill may land before, during or after the save: the file is
        # either the old one, byte for byte, or the new one, whole.
        if data != before:
            pw.Tokenizer.from_str(data.decode())
            out.write_bytes(before)
