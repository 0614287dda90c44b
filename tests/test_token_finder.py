"""token_finder.TokenFinder: which texts hold one of some strings, as ``any(s in text for s in strings)``.

Batches ask it of every text for the added or special tokens, so it must
be exact: a text it misses would have a token encoded as plain text; one it
lists in vain is only slower. Texts of every PEP 393 width, strings that
start alike, that start another, that are shorter than the hashed width.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks._kernels.token_finder import TokenFinder

# Chars of all three str widths, and some that share their low 16 bits (the first-char filter's key).
CHARS = ["<", "|", "a", "b", ">", " ", "\u00e9", "\u4e2d", "\U0001f600", "\U00010061", "\u0061"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(CHARS), min_size=1, max_size=10), min_size=1, max_size=6),
       st.lists(st.text(alphabet=st.sampled_from(CHARS), max_size=30), max_size=10))
def test_finds_exactly_the_texts_holding_a_string(strings, texts):
    finder = TokenFinder(strings)
    assert finder.texts_holding(texts) == [k for k, t in enumerate(texts) if any(s in t for s in strings)]
    for text in texts:
        assert finder.holds(text) == any(s in text for s in strings)


def test_real_special_tokens_in_text_of_every_width():
    tokens = ["<|endoftext|>", "<|fim_prefix|>"] + [f"<|reserved_special_token_{k}|>" for k in range(250)]
    finder = TokenFinder(tokens)
    for filler in ["plain text < and | and <| ", "中文 <|", "😀 <|reserved_special_token_", "é"]:
        for k, token in [(0, "<|endoftext|>"), (200, "<|reserved_special_token_199|>")]:
            texts = [filler * 3, filler + token + filler, token, token[:-1], token[1:]]
            assert finder.texts_holding(texts) == [1, 2], (filler, k)


def test_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        TokenFinder([])
    with pytest.raises(ValueError, match="non-empty str"):
        TokenFinder(["a", ""])
    finder = TokenFinder(["ab"])
    with pytest.raises(TypeError, match="expected str, got int"):
        finder.texts_holding(["x", 3])
    assert finder.texts_holding(iter(["ab", "b"])) == [0]


def test_docstring_examples_hold():
    import doctest

    from pieceworks import added_vocabulary
    from pieceworks._kernels import token_finder
    from pieceworks.tiktoken import _special

    for module in (token_finder, added_vocabulary, _special):
        assert doctest.testmod(module).failed == 0, module.__name__
