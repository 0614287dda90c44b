"""token_finder.TokenTrie: which texts hold one of some strings, as ``any(s in text for s in strings)``,
and where they are, as a regex alternation of them, longest first, finds them.

Batches ask it of every text for the added or special tokens, so it must
be exact: a text it misses would have a token encoded as plain text; one it
lists in vain is only slower. Texts of every PEP 393 width, strings that
start or end alike, that start, end or sit inside another.
"""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks._kernels.token_finder import TokenTrie

def any_of(strings):
    """The oracle: a regex alternation of ``strings``, longest first (the engine's leftmost-first
    choice is then the leftmost-longest one), as the added tokens were once found."""
    return regex.compile("|".join(regex.escape(s) for s in sorted(strings, key=lambda s: (-len(s), s))))


# Chars of all three str widths, and some that share their low 16 bits (the last-char filter's key).
CHARS = ["<", "|", "a", "b", ">", " ", "\u00e9", "\u4e2d", "\U0001f600", "\U00010061", "\u0061"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(CHARS), min_size=1, max_size=10), min_size=1, max_size=6),
       st.lists(st.text(alphabet=st.sampled_from(CHARS), max_size=30), max_size=10))
def test_finds_exactly_the_texts_holding_a_string(strings, texts):
    finder = TokenTrie(strings)
    assert finder.texts_holding(texts) == [k for k, t in enumerate(texts) if any(s in t for s in strings)]
    for text in texts:
        assert finder.holds(text) == any(s in text for s in strings)


def test_real_special_tokens_in_text_of_every_width():
    tokens = ["<|endoftext|>", "<|fim_prefix|>"] + [f"<|reserved_special_token_{k}|>" for k in range(250)]
    finder = TokenTrie(tokens)
    for filler in ["plain text < and | and <| ", "中文 <|", "😀 <|reserved_special_token_", "é"]:
        for k, token in [(0, "<|endoftext|>"), (200, "<|reserved_special_token_199|>")]:
            texts = [filler * 3, filler + token + filler, token, token[:-1], token[1:]]
            assert finder.texts_holding(texts) == [1, 2], (filler, k)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(CHARS), min_size=1, max_size=6), min_size=1, max_size=8, unique=True),
       st.lists(st.text(alphabet=st.sampled_from(CHARS), max_size=40), max_size=6))
def test_trie_finds_what_the_longest_first_alternation_finds(strings, texts):
    """Leftmost-longest and without overlaps, on strings that start or end alike, that start, end
    or sit inside another, of every str width (and chars that share their low 16 bits: the
    last-char filter)."""
    trie, regex = TokenTrie(strings), any_of(strings)
    for text in texts + ["".join(strings), "".join(reversed(strings))]:
        want = [(m.start(), m.end(), strings.index(m.group())) for m in regex.finditer(text)]
        assert trie.spans(text) == want, text


# Token sets by how many chars their strings end with: one (memrchr on Latin-1), a few (blocks of
# chars compared with them all at once), more than eight (a bit test a char).
ENDINGS = {
    "one last": ["<|x|>", "<|eot|>", "中>"],
    "few lasts": ["<|x|>", "[y]", "éé", "中文", "😀!", "𐁡"],
    "many lasts": [f"<{c}" for c in "abcdefghij"] + ["中文", "😀"],
}
# Fillers of each str width, with and without chars that share their low 16 bits with a last char
# (U+10061 with "a", U+14E2D with U+4E2D).
FILLERS = ["xyz ", "xày ", "文字 ", "😁 x", "𔸭𐁡 "]


@pytest.mark.parametrize("ending", sorted(ENDINGS))
@pytest.mark.parametrize("filler", FILLERS)
def test_a_token_at_every_place_of_a_long_text(ending, filler):
    """A token, or a token's last char alone, at every place of a 700-char text (either side of the
    skip's first chars, its blocks and their vector lanes), of every str width."""
    strings = ENDINGS[ending]
    trie, pattern = TokenTrie(strings), any_of(strings)
    base = (filler * 700)[:700]
    for at in range(0, 700, 3):
        for piece in (strings[at % len(strings)], strings[at % len(strings)][-1]):
            text = base[:at] + piece + base[at:]
            want = [(m.start(), m.end(), strings.index(m.group())) for m in pattern.finditer(text)]
            assert trie.spans(text) == want, (at, piece)
            assert trie.holds(text) == bool(want), (at, piece)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(ENDINGS)), st.sampled_from(FILLERS),
       st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 9)), max_size=8))
def test_sparse_tokens_in_long_texts(ending, filler, parts):
    """Tokens (or parts of them) far apart in long texts: found as the alternation finds them."""
    strings = ENDINGS[ending]
    pieces = strings + [s[:-1] for s in strings if len(s) > 1] + [s[-1] for s in strings]
    text = "".join((filler * (gap // len(filler) + 1))[:gap] + pieces[k % len(pieces)] for gap, k in parts)
    trie, pattern = TokenTrie(strings), any_of(strings)
    want = [(m.start(), m.end(), strings.index(m.group())) for m in pattern.finditer(text)]
    assert trie.spans(text) == want
    assert trie.holds(text) == bool(want)


def test_trie_on_many_tokens_and_long_runs():
    """Ten thousand tokens, one a long run of one char."""
    strings = [f"<t{k}>" for k in range(10_000)] + ["a" * 50, "a" * 49 + "b", "中文"]
    trie, regex = TokenTrie(strings), any_of(strings)
    text = "x<t9999><t1>a" + "a" * 120 + "b<t77" + "中文中" + "<t10000>"
    assert trie.spans(text) == [(m.start(), m.end(), strings.index(m.group())) for m in regex.finditer(text)]
    assert trie.spans("") == [] and trie.spans("zzz") == []


@pytest.mark.parametrize("strings, text", [
    # A short token that begins a long one: walking a trie from each place went 2000 deep each time.
    (["a", "a" * 2000 + "b"], "a" * 6000 + "b" + "a" * 3),
    (["ab", "b" * 1500, "a" * 1500 + "c"], "a" * 3000 + "b" * 4000 + "c"),
    # Thousands of tokens that begin alike, none of which the text holds but one at its end.
    ([f"aaaaaaaa{k}" for k in range(3000)], "a" * 5000 + "aaaaaaaa2999"),
    # Tokens that end alike, that sit inside others (the suffix links' cases).
    (["xab", "ab", "b", "yxab", "cyxa"], "cyxabyxabxab" * 50),
])
def test_trie_on_tokens_that_made_a_trie_walk_slow(strings, text):
    """The inputs on which the trie and the finder it replaced cost the text's length times the
    longest token's (or times the tokens that begin alike): found exactly as the alternation finds them."""
    trie, regex = TokenTrie(strings), any_of(strings)
    want = [(m.start(), m.end(), strings.index(m.group())) for m in regex.finditer(text)]
    assert trie.spans(text) == want and want
    assert trie.holds(text) and trie.texts_holding([text[:-1], text]) == ([0, 1] if any(
        s in text[:-1] for s in strings) else [1])


def test_bad_input():
    with pytest.raises(ValueError, match="non-empty str"):
        TokenTrie(["a", ""])
    with pytest.raises(ValueError, match="non-empty str"):
        TokenTrie(["a", 5])
    empty = TokenTrie([])
    assert empty.spans("abc") == [] and not empty.holds("abc") and empty.texts_holding(["abc"]) == []
    finder = TokenTrie(["ab"])
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


def test_spans_of_lists_are_out_of_the_collectors_sight():
    # A batch asks for the spans of every text: thousands of lists of int tuples, which the cyclic
    # collector walked again and again (a quarter of a Gemma batch of lines). They hold ints only.
    import gc

    from pieceworks._kernels.raw_encoding import join_layouts, pack

    trie = TokenTrie(["<s>", "\n"])
    out = trie.spans_of(["a<s>b\n", "", "plain", "<s>x"], [7, 9])
    assert out == [[(1, 4, 7), (5, 6, 9)], [], [], [(0, 3, 7)]]
    assert not any(gc.is_tracked(spans) for spans in out)
    assert not any(gc.is_tracked(span) for spans in out for span in spans)
    assert trie.spans_of(["x<s>"], [None, 9]) == [None]
    strings = [""] * 7 + ["<s>"]
    joined = join_layouts(["a<s>"], [[(1, 4, 7)]], [(pack([1], [0], [1], [0]), 1, 1, strings)], [1], strings, -1)
    assert joined[0][1:] == (2, 0, strings) and not gc.is_tracked(joined[0])
