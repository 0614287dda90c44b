"""The hand-written pre-tokenization scanners of _kernels/bytebpe.pyx against the ``regex`` module.

Each scanner must cut text exactly where the pattern's matches are. The
``regex`` module knows Unicode 17.0, while Hugging Face and tiktoken (and
so the scanners) are at 16.0: the few letters, marks and digits 17.0 added
are kept out of the comparison with ``regex`` and checked against Hugging
Face's own Split instead.
"""

from __future__ import annotations

import json

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks._kernels.bytebpe import Pattern, build_classes, last_piece_start, piece_spans
from pieceworks._unicode_tables import UNICODE_17_WORD_CHARS
from pieceworks.fast.byte_bpe import (CL100K_PATTERN, GPT2_PATTERN, HF_PATTERNS, O200K_PATTERN, QWEN2_PATTERN,
                                      TIKTOKEN_CL100K_PATTERN, TIKTOKEN_R50K_PATTERN)

# tiktoken's engine reads `$` as the end of the text: `\Z` in the `regex` module.
ORACLES = {
    Pattern.PAT_GPT2: regex.compile(GPT2_PATTERN),
    Pattern.PAT_CL100K: regex.compile(CL100K_PATTERN),
    Pattern.PAT_QWEN2: regex.compile(QWEN2_PATTERN),
    Pattern.PAT_O200K: regex.compile(O200K_PATTERN),
    Pattern.PAT_CL100K_EOT: regex.compile(TIKTOKEN_CL100K_PATTERN.replace("$", r"\Z")),
}
KINDS = list(ORACLES)

NEW_IN_17 = {cp for first, last in UNICODE_17_WORD_CHARS for cp in range(first, last + 1)}

# Chars where the patterns' rules meet: contraction letters (and long s, which
# folds to s), CR/LF and other blanks, '/', marks, the letter classes of o200k
# (Lu, Ll, Lt, Lm, Lo), numbers of each kind, an astral char and a lone surrogate.
TRICKY = list("aAbZsStTmMdDlLrRvVeE'’ \t\n\r\x0b\x0c/\\.,!?-_09") + [
    "\x85", "\u2028", "\u3000", "\xa0", "\x1c", "ſ", "É", "é", "ǅ", "ʰ", "ª", "中", "\u0301", "\u0345",
    "\u0903", "٣", "Ⅷ", "½", "😀", "\ud800", "ß", "ﬁ", "İ", "ǈ", "ก", "\u0e31"]


def unicode_16_chars():
    return st.characters(codec=None).filter(lambda ch: ord(ch) not in NEW_IN_17)


def text_strategy():
    return (st.text(unicode_16_chars(), max_size=40)
            | st.text(st.sampled_from(TRICKY), max_size=30)
            | st.text(st.sampled_from(TRICKY) | unicode_16_chars(), max_size=30))


def expected_spans(kind, text):
    return [m.span() for m in ORACLES[kind].finditer(text)]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@settings(max_examples=400, deadline=None)
@given(text=text_strategy())
def test_scanner_matches_the_regex(kind, text):
    assert piece_spans(kind, text) == expected_spans(kind, text)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@settings(max_examples=200, deadline=None)
@given(text=text_strategy())
def test_last_piece_start_is_the_regexs(kind, text):
    spans = expected_spans(kind, text)
    assert last_piece_start(kind, text) == (spans[-1][0] if spans else 0)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_tricky_pair_and_triple(kind):
    # Exhaustive over short strings of the tricky chars: every rule's boundary cases.
    chars = TRICKY
    for a in chars:
        for b in chars:
            text = a + b
            assert piece_spans(kind, text) == expected_spans(kind, text), repr(text)
            for c in ("s", "'", "\n", " ", "A", "\u0301"):
                assert piece_spans(kind, text + c) == expected_spans(kind, text + c), repr(text + c)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_corpus_lines(kind, shared_data):
    texts = []
    for path in sorted((shared_data / "corpora").rglob("*")):
        if path.is_file() and path.suffix != ".tsv":
            data = path.read_bytes()
            texts.append(data[:40_000].decode("utf-8", "ignore"))
            texts.append(data[len(data) // 2:len(data) // 2 + 40_000].decode("utf-8", "ignore"))
    texts += [json.loads(line)["text"] for line in (shared_data / "testvectors/generated/inputs.jsonl").open()]
    for text in texts:
        text = "".join(ch for ch in text if ord(ch) not in NEW_IN_17)
        assert piece_spans(kind, text) == expected_spans(kind, text)


def test_pathological_runs_are_linear():
    # Long runs that make a backtracking engine (or a careless scanner) quadratic.
    for text in ["a" * 200_000, " " * 200_000, "\n " * 100_000, "Ǆ" * 100_000 + "'", "ʰÀ" * 100_000 + "!",
                 "1" * 200_000, "'" * 200_000, "!" + "À" * 200_000]:
        for kind in KINDS:
            spans = piece_spans(kind, text)
            assert spans[0][0] == 0 and spans[-1][1] == len(text)
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_unicode_17_chars_follow_hugging_face():
    tokenizers = pytest.importorskip("tokenizers")
    new = sorted(NEW_IN_17)[::7]
    for pattern, kind in HF_PATTERNS.items():
        split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), "isolated")
        for cp in new:
            text = f"a{chr(cp)}b 1{chr(cp)}2 {chr(cp)}{chr(cp)}"
            ours = [(s, e) for s, e in piece_spans(kind, text)]
            assert ours == [offsets for _, offsets in split.pre_tokenize_str(text)], hex(cp)


def test_tiktoken_r50k_spelling_is_gpt2s():
    # tiktoken 0.14 spells r50k's pattern with possessives and `\s++$`; it matches GPT-2's.
    oracle = regex.compile(TIKTOKEN_R50K_PATTERN.replace("$", r"\Z"))
    for a in TRICKY:
        for b in TRICKY:
            for text in (a + b, a + b + " ", a + " \n " + b):
                assert [m.span() for m in oracle.finditer(text)] == piece_spans(Pattern.PAT_GPT2, text)


def test_class_table_bits():
    table = build_classes()
    assert len(table) == 0x110000
    # letter, number, whitespace; Lu vs Ll vs Lo vs M for o200k
    assert table[ord("a")] == 2 | 16 and table[ord("A")] == 2 | 8 and table[ord("中")] == 2 | 8 | 16
    assert table[0x301] == 8 | 16 and table[ord("7")] == 4 and table[0x85] == 1 and table[0x1C] == 0
    assert all(table[cp] == 0 for cp in NEW_IN_17)
