"""The `pieceworks` command line: train → encode → decode, inspect, errors, colour.

Runs the CLI in-process through ``main([...])`` (fast, exact exit codes) and
as ``python -m pieceworks`` in a subprocess (what a user types: real stdin,
stdout that is not a terminal, the exit status the shell sees).
"""

from __future__ import annotations

import doctest
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pieceworks.cli
import pieceworks.corpus
from pieceworks import Tokenizer
from pieceworks.byte_level import text_to_byte_chars
from pieceworks.cli import display_token, main, parse_ids
from pieceworks.corpus import iter_default_corpus

ESC = "\x1b["
VOCAB = 400

# One line per script, for encode/decode round trips.
LINES = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "Привет, мир! Все люди рождаются свободными.",
    "Γειά σου, κόσμε! Όλοι οι άνθρωποι γεννιούνται ελεύθεροι.",
    "مرحبا بالعالم! يولد جميع الناس أحراراً",
    "नमस्ते दुनिया! सभी मनुष्य जन्म से स्वतंत्र हैं।",
    "สวัสดีชาวโลก! มนุษย์ทั้งหลายเกิดมามีอิสระ 😂😂",
    "안녕하세요, 세계! 모든 인간은 태어날 때부터 자유로우며",
    "你好，世界！人人生而自由，在尊严和权利上一律平等。",
    "吾輩は猫である。名前はまだ無い。🌍🎉 𠀀",
    "tabs\tand  double  spaces, \"quotes\" and \\backslashes\\",
]


# -- fixtures --------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    """~90 KB of the built-in corpus: every 40th line, so all of its scripts appear."""
    path = tmp_path_factory.mktemp("corpus") / "small.txt"
    lines = list(iter_default_corpus())[::40]
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(corpus_file, tmp_path_factory) -> Path:
    """A byte-level BPE tokenizer trained by the CLI, in-process."""
    out = tmp_path_factory.mktemp("tok") / "tok.json"
    code = main(["train", str(corpus_file), "--vocab-size", str(VOCAB), "-o", str(out), "--no-progress"])
    assert code == 0
    return out


def run_cli(*args: str, input: str | bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m pieceworks ARGS`` with text I/O, stdout not a terminal."""
    full_env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "pieceworks", *args], input=input,
                          capture_output=True, text=not isinstance(input, bytes), env=full_env,
                          timeout=300)


def assert_one_line_error(code: int, stderr: str) -> None:
    assert code == 2
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("pieceworks: error: ")


class FakeTerminal(io.StringIO):
    """A stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


# -- help and version ------------------------------------------------------------------
@pytest.mark.parametrize("command", ["train", "encode", "decode", "inspect"])
def test_every_command_has_help(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pieceworks {command}")


def test_no_command_prints_usage_and_fails(capsys):
    assert main([]) == 2
    assert "usage: pieceworks" in capsys.readouterr().err


def test_version_matches_the_package(capsys):
    import pieceworks

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"pieceworks {pieceworks.__version__}"


def test_module_docstrings_examples_hold():
    for module in (pieceworks.cli, pieceworks.corpus):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__


# -- train ---------------------------------------------------------------------------------
def test_train_writes_a_tokenizer_of_the_asked_size(trained):
    tokenizer = Tokenizer.from_file(str(trained))
    assert tokenizer.get_vocab_size() == VOCAB
    assert tokenizer.token_to_id("<|endoftext|>") == 0
    assert type(tokenizer.decoder).__name__ == "ByteLevel"


def test_train_matches_the_python_api(corpus_file, trained):
    # The CLI is the documented recipe and nothing else: the same training
    # through the API gives the same file.
    from pieceworks import decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, min_frequency=2, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train(str(corpus_file), trainer)
    assert tokenizer.to_str() == Tokenizer.from_file(str(trained)).to_str()


def test_train_summary_shows_size_merges_and_sample(corpus_file, tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["train", str(corpus_file), "-v", "300", "-o", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    tokenizer = Tokenizer.from_file(str(out))
    assert f"Vocabulary: {tokenizer.get_vocab_size():,} tokens" in text
    merges = tokenizer.model.merges
    assert f"Merges: {len(merges):,}; the first 20:" in text
    first = merges[0]
    shown = f'"{display_token(first[0], True)}" + "{display_token(first[1], True)}"'
    assert f"     1  {shown}" in text
    sample = tokenizer.encode(pieceworks.cli.SAMPLE_TEXT)
    assert " ".join(map(str, sample.ids)) in text
    assert f"Saved to {out}" in text
    assert ESC not in text


def test_train_reads_stdin_and_files_alike(corpus_file, tmp_path):
    from_file, from_stdin = tmp_path / "f.json", tmp_path / "s.json"
    data = corpus_file.read_bytes()
    result = run_cli("train", "-", "-v", "300", "-o", str(from_stdin), input=data)
    assert result.returncode == 0, result.stderr
    assert main(["train", str(corpus_file), "-v", "300", "-o", str(from_file), "-q"]) == 0
    assert from_stdin.read_text(encoding="utf-8") == from_file.read_text(encoding="utf-8")


def test_train_without_files_uses_the_built_in_corpus(monkeypatch, tmp_path):
    # Which corpus `train` reads with no FILE, checked without a full training run.
    import pieceworks.trainers.counts as counts

    seen = {}

    def fake_count_words(texts, normalizer=None, pre_tokenizer=None, progress=None):
        seen["text"] = "".join(texts)
        raise KeyboardInterrupt  # stop before the trainer runs

    monkeypatch.setattr(counts, "count_words", fake_count_words)
    assert main(["train", "-o", str(tmp_path / "x.json"), "--no-progress"]) == 130
    assert seen["text"] == pieceworks.corpus.default_corpus_text()
    assert not (tmp_path / "x.json").exists()


def test_forced_progress_bar_goes_to_stderr(corpus_file, tmp_path, capsys):
    assert main(["train", str(corpus_file), "-v", "300", "-o", str(tmp_path / "p.json"), "--progress", "-q"]) == 0
    captured = capsys.readouterr()
    assert "reading" in captured.err
    assert captured.out.strip() == str(tmp_path / "p.json")


def test_special_tokens_option_replaces_the_default(corpus_file, tmp_path):
    out = tmp_path / "sp.json"
    assert main(["train", str(corpus_file), "-v", "300", "-o", str(out), "-q",
                 "--special-tokens", "<s>,</s>", "--special-tokens", "<pad>"]) == 0
    tokenizer = Tokenizer.from_file(str(out))
    assert [tokenizer.id_to_token(i) for i in range(3)] == ["<s>", "</s>", "<pad>"]
    assert tokenizer.token_to_id("<|endoftext|>") is None


def test_wordlevel_model(corpus_file, tmp_path, capsys):
    if "wordlevel" not in pieceworks.cli.available_recipes():
        pytest.skip("the Whitespace pre-tokenizer that --model wordlevel needs is not in this build")
    out = tmp_path / "wl.json"
    assert main(["train", str(corpus_file), "--model", "wordlevel", "-v", "200", "-o", str(out), "-q"]) == 0
    tokenizer = Tokenizer.from_file(str(out))
    assert tokenizer.get_vocab_size() == 200
    capsys.readouterr()
    assert main(["encode", "-t", str(out), "--json", "the zyzzyva"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tokens"] == ["the", "[UNK]"]


def test_wordpiece_model(corpus_file, tmp_path, capsys):
    if "wordpiece" not in pieceworks.cli.available_recipes():
        pytest.skip("the WordPiece components that --model wordpiece needs are not in this build")
    out = tmp_path / "wp.json"
    assert main(["train", str(corpus_file), "--model", "wordpiece", "-v", "2000", "-o", str(out), "-q"]) == 0
    tokenizer = Tokenizer.from_file(str(out))
    assert tokenizer.get_vocab_size() == 2000
    assert [tokenizer.id_to_token(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    capsys.readouterr()
    text = "The cat sat on the mat."
    assert main(["encode", "-t", str(out), "--json", text]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tokens"][0] == "[CLS]" and record["tokens"][-1] == "[SEP]"
    assert main(["decode", "-t", str(out), *map(str, record["ids"])]) == 0
    assert capsys.readouterr().out == text.lower() + "\n"


def test_library_warnings_print_as_one_line(monkeypatch, capsys):
    import warnings

    def run_that_warns(args):
        warnings.warn("vocab_size is small:\n  raise it", UserWarning, stacklevel=2)
        return 0

    monkeypatch.setattr(pieceworks.cli, "run_train", run_that_warns)
    assert main(["train"]) == 0
    assert capsys.readouterr().err == "pieceworks: warning: vocab_size is small: raise it\n"


# -- encode / decode -------------------------------------------------------------------
def test_encode_json_matches_the_api(trained, capsys):
    assert main(["encode", "-t", str(trained), "--json", *LINES]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    tokenizer = Tokenizer.from_file(str(trained))
    assert [r["text"] for r in records] == LINES
    for record in records:
        encoding = tokenizer.encode(record["text"])
        assert record["ids"] == encoding.ids
        assert record["tokens"] == encoding.tokens
        assert [tuple(pair) for pair in record["offsets"]] == encoding.offsets


def test_encode_matches_hugging_face_on_the_saved_file(trained, capsys):
    # The file the CLI writes is a real tokenizer.json: HF reads it and
    # splits every line the same way.
    hf = pytest.importorskip("tokenizers")
    reference = hf.Tokenizer.from_file(str(trained))
    assert main(["encode", "-t", str(trained), "--json", *LINES]) == 0
    for line in capsys.readouterr().out.splitlines():
        record = json.loads(line)
        expected = reference.encode(record["text"])
        assert record["ids"] == expected.ids
        assert [tuple(pair) for pair in record["offsets"]] == expected.offsets


def test_encode_then_decode_round_trips_in_process(trained, capsys):
    for line in LINES:
        assert main(["encode", "-t", str(trained), "--ids", line]) == 0
        ids = capsys.readouterr().out.split()
        assert main(["decode", "-t", str(trained), *ids]) == 0
        assert capsys.readouterr().out == line + "\n"


def test_encode_then_decode_round_trips_through_pipes(trained):
    text = "\n".join(LINES) + "\n"
    encoded = run_cli("encode", "-t", str(trained), "--ids", input=text)
    assert encoded.returncode == 0, encoded.stderr
    assert len(encoded.stdout.splitlines()) == len(LINES)
    decoded = run_cli("decode", "-t", str(trained), input=encoded.stdout)
    assert decoded.returncode == 0, decoded.stderr
    assert decoded.stdout == text
    assert ESC not in encoded.stdout + decoded.stdout


def test_decode_keeps_special_tokens_only_when_asked(trained, capsys):
    tokenizer = Tokenizer.from_file(str(trained))
    ids = tokenizer.encode("hello").ids + [tokenizer.token_to_id("<|endoftext|>")]
    assert main(["decode", "-t", str(trained), *map(str, ids)]) == 0
    assert capsys.readouterr().out == "hello\n"
    assert main(["decode", "-t", str(trained), "--keep-special-tokens", *map(str, ids)]) == 0
    assert capsys.readouterr().out == "hello<|endoftext|>\n"


@settings(max_examples=100, deadline=None)
@given(ids=st.lists(st.integers(min_value=0, max_value=10**9), max_size=20),
       style=st.sampled_from(["spaces", "commas", "list"]))
def test_parse_ids_reads_every_documented_style(ids, style):
    text = {"spaces": " ".join(map(str, ids)), "commas": ",".join(map(str, ids)),
            "list": json.dumps(ids)}[style]
    assert parse_ids(text, "test") == ids


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_display_of_a_whole_byte_level_token_is_its_text(text):
    shown = display_token(text_to_byte_chars(text), byte_level=True)
    assert shown == display_token(text, byte_level=False)
    assert "\n" not in shown and "\r" not in shown


# -- colour ------------------------------------------------------------------------------
def test_no_colour_when_stdout_is_not_a_terminal(trained, capsys):
    assert main(["encode", "-t", str(trained), LINES[0]]) == 0
    out = capsys.readouterr().out
    assert ESC not in out
    assert out.splitlines()[0].startswith("[")


def test_colour_on_a_terminal_unless_no_color(trained, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["encode", "-t", str(trained), LINES[0]]) == 0
    assert ESC in terminal.getvalue()

    monkeypatch.setenv("NO_COLOR", "1")
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["encode", "-t", str(trained), LINES[0]]) == 0
    assert ESC not in terminal.getvalue()


def test_colour_always_is_forced_even_into_a_pipe(trained):
    result = run_cli("encode", "-t", str(trained), "--color", "always", LINES[0])
    assert result.returncode == 0
    assert ESC in result.stdout


def test_train_via_subprocess_prints_no_colour(corpus_file, tmp_path):
    result = run_cli("train", str(corpus_file), "-v", "300", "-o", str(tmp_path / "c.json"))
    assert result.returncode == 0, result.stderr
    assert ESC not in result.stdout
    assert "reading" not in result.stderr, "no progress bar when stderr is not a terminal"


# -- inspect ---------------------------------------------------------------------------------
def test_inspect_summarises_the_file(trained, capsys):
    assert main(["inspect", str(trained)]) == 0
    text = capsys.readouterr().out
    tokenizer = Tokenizer.from_file(str(trained))
    assert "model:          BPE(" in text
    assert f"vocab size:     {tokenizer.get_vocab_size():,}" in text
    assert f"merges:         {len(tokenizer.model.merges):,}" in text
    assert "pre-tokenizer:  ByteLevel(add_prefix_space=false" in text
    assert "added tokens:   1 (1 special): <|endoftext|> (0)" in text
    assert "truncation:     off" in text and "padding:        off" in text


def test_inspect_json(trained, capsys):
    assert main(["inspect", str(trained), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    data = json.loads(trained.read_text(encoding="utf-8"))
    assert summary["model"] == "BPE"
    assert summary["merges"] == len(data["model"]["merges"])
    assert summary["vocab_size"] == len(data["model"]["vocab"])
    assert summary["added_tokens"] == [{"id": 0, "content": "<|endoftext|>", "special": True}]


def test_inspect_reads_a_real_bert_file(shared_data, capsys):
    path = shared_data / "tokenizers" / "bert_all-MiniLM-L6-v2" / "tokenizer.json"
    try:
        Tokenizer.from_file(str(path))
    except Exception as exc:  # a component this build does not have yet
        pytest.skip(f"pieceworks cannot load this file yet: {exc}")
    assert main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    assert "model:          WordPiece(" in text
    assert "TemplateProcessing(single='[CLS] $A [SEP]', pair='[CLS] $A [SEP] $B:1 [SEP]')" in text
    assert "truncation:     max_length=128" in text
    assert "padding:        strategy=Fixed(128)" in text


# -- errors: one line, exit 2, no traceback ----------------------------------------------------
def test_missing_tokenizer_file(tmp_path, capsys):
    code = main(["encode", "-t", str(tmp_path / "nope.json"), "hi"])
    assert_one_line_error(code, capsys.readouterr().err)


def test_corrupt_tokenizer_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": ', encoding="utf-8")
    code = main(["inspect", str(bad)])
    err = capsys.readouterr().err
    assert_one_line_error(code, err)
    assert "bad.json" in err


def test_bad_ids(trained, capsys):
    code = main(["decode", "-t", str(trained), "12", "abc"])
    err = capsys.readouterr().err
    assert_one_line_error(code, err)
    assert "'abc'" in err


def test_id_outside_the_vocabulary(trained, capsys):
    code = main(["decode", "-t", str(trained), str(VOCAB + 5)])
    assert_one_line_error(code, capsys.readouterr().err)


def test_missing_training_file(tmp_path, capsys):
    code = main(["train", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert_one_line_error(code, err)
    assert "missing.txt" in err


def test_output_folder_missing_fails_before_training(corpus_file, tmp_path, capsys):
    code = main(["train", str(corpus_file), "-o", str(tmp_path / "no" / "such" / "t.json")])
    assert_one_line_error(code, capsys.readouterr().err)


def test_invalid_utf8_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("first line\ncaf\xe9\n".encode("latin-1"))
    code = main(["train", str(bad), "-o", str(tmp_path / "t.json"), "--no-progress"])
    err = capsys.readouterr().err
    assert_one_line_error(code, err)
    assert f"{bad}:2" in err


def test_empty_corpus(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    code = main(["train", str(empty), "-o", str(tmp_path / "t.json")])
    assert_one_line_error(code, capsys.readouterr().err)
    assert not (tmp_path / "t.json").exists()


def test_errors_in_a_subprocess_have_no_traceback(tmp_path):
    result = run_cli("inspect", str(tmp_path / "absent.json"))
    assert_one_line_error(result.returncode, result.stderr)
    assert result.stdout == ""


def test_usage_errors_exit_2(capsys):
    assert main(["train", "--vocab-size", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err
