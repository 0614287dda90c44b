"""The default corpus shipped in the package: present, multilingual, documented, reproducible."""

from __future__ import annotations

import importlib.util
import lzma
import re
import sys
import unicodedata
from pathlib import Path

import pytest

from pieceworks.corpus import default_corpus_path, default_corpus_text, iter_default_corpus

ROOT = Path(__file__).resolve().parents[1]

# Each script the foundation issue asks for, with a test on one character.
SCRIPTS = {
    "Latin": lambda ch: unicodedata.name(ch, "").startswith("LATIN"),
    "Cyrillic": lambda ch: unicodedata.name(ch, "").startswith("CYRILLIC"),
    "Greek": lambda ch: unicodedata.name(ch, "").startswith("GREEK"),
    "Arabic": lambda ch: unicodedata.name(ch, "").startswith("ARABIC"),
    "Hebrew": lambda ch: unicodedata.name(ch, "").startswith("HEBREW"),
    "Devanagari": lambda ch: unicodedata.name(ch, "").startswith("DEVANAGARI"),
    "Bengali": lambda ch: unicodedata.name(ch, "").startswith("BENGALI"),
    "Tamil": lambda ch: unicodedata.name(ch, "").startswith("TAMIL"),
    "Thai": lambda ch: unicodedata.name(ch, "").startswith("THAI"),
    "Myanmar": lambda ch: unicodedata.name(ch, "").startswith("MYANMAR"),
    "Khmer": lambda ch: unicodedata.name(ch, "").startswith("KHMER"),
    "Georgian": lambda ch: unicodedata.name(ch, "").startswith("GEORGIAN"),
    "Armenian": lambda ch: unicodedata.name(ch, "").startswith("ARMENIAN"),
    "Ethiopic": lambda ch: unicodedata.name(ch, "").startswith("ETHIOPIC"),
    "Hangul": lambda ch: unicodedata.name(ch, "").startswith("HANGUL"),
    "Hiragana": lambda ch: unicodedata.name(ch, "").startswith("HIRAGANA"),
    "Katakana": lambda ch: unicodedata.name(ch, "").startswith("KATAKANA"),
    "CJK ideographs": lambda ch: unicodedata.name(ch, "").startswith("CJK UNIFIED IDEOGRAPH"),
    "astral CJK": lambda ch: ord(ch) >= 0x20000 and unicodedata.name(ch, "").startswith("CJK"),
    "emoji": lambda ch: 0x1F300 <= ord(ch) <= 0x1FAFF,
}


@pytest.fixture(scope="module")
def text() -> str:
    return default_corpus_text()


def test_the_compressed_file_ships_inside_the_package():
    path = default_corpus_path()
    assert path.is_file()
    assert path.parent.name == "data" and path.parent.parent.name == "pieceworks"
    assert path.stat().st_size <= 1_500_000, "keep the wheel small: the corpus must stay under 1.5 MB"


def test_size_is_a_few_megabytes(text):
    size = len(text.encode("utf-8"))
    assert 2_000_000 <= size <= 4_000_000


def test_decompresses_to_valid_utf8_lines(text):
    raw = lzma.decompress(default_corpus_path().read_bytes())
    assert raw.decode("utf-8") == text
    assert text.endswith("\n")
    assert "\r" not in text and "\ufeff" not in text


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_script_is_present(text, script):
    found = sum(1 for ch in set(text) if SCRIPTS[script](ch))
    assert found > 0, f"no {script} characters in the default corpus"


def test_lines_rebuild_the_text_exactly(text):
    lines = list(iter_default_corpus())
    assert "".join(lines) == text
    assert all(line.endswith("\n") for line in lines)
    # Split on "\n" only, as reading the text from a file would.
    assert len(lines) == text.count("\n")


def test_corpus_md_states_source_and_licence_of_every_part():
    md = (default_corpus_path().parent / "CORPUS.md").read_text(encoding="utf-8")
    sections = re.findall(r"^### (.+)$", md, re.M)
    assert len(sections) >= 5
    for name in sections:
        body = md.split(f"### {name}", 1)[1].split("###", 1)[0]
        assert "**Source:**" in body and "**Licence:**" in body, name
    for licence in ("Public domain", "CC0-1.0", "MIT"):
        assert licence in md


def _load_builder():
    spec = importlib.util.spec_from_file_location("build_corpus", ROOT / "tools" / "build_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_build_script_reproduces_the_shipped_corpus(shared_data, tmp_path):
    # The committed corpus must be exactly what the committed script makes,
    # so that its stated sources are the true ones.
    _load_builder().build(shared_data, tmp_path)
    rebuilt = lzma.decompress((tmp_path / "corpus.txt.xz").read_bytes()).decode("utf-8")
    assert rebuilt == default_corpus_text()
    shipped_md = (default_corpus_path().parent / "CORPUS.md").read_text(encoding="utf-8")
    assert (tmp_path / "CORPUS.md").read_text(encoding="utf-8") == shipped_md


def test_builder_helpers_behave_as_documented():
    builder = _load_builder()
    assert builder.clean_lines("\ufeffa \r\n\r\n b\n") == ["a", " b"]
    assert builder.strip_aozora_markup("一番｜獰悪《どうあく》な種族［＃注］") == "一番獰悪な種族"
    lines = [f"line {i}" for i in range(1000)]
    sample = builder.every_nth(lines, 700)
    assert sum(len(line) + 1 for line in sample) <= 700
    assert sample[0] == "line 0" and int(sample[-1].split()[1]) > 500, "the sample spans the whole file"
