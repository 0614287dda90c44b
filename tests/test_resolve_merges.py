"""bpe_encode.resolve_merges (merges as ids, the vocabulary looked up by slices of the merge
strings, no str made) against the plain reading of the same rule in Python."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from pieceworks._kernels.bpe_encode import _VocabTable, resolve_merges


def plain_resolve(vocab: dict, merges: list, prefix: str | None):
    """The rule as resolve_merges' docstring says it, with str operations and dict look-ups."""
    triples = []
    for m in merges:
        if isinstance(m, (list, tuple)) and len(m) == 2 and all(type(x) is str for x in m):
            a, b = m
        elif type(m) is str and len(m.split(" ")) == 2:
            a, b = m.split(" ")
        else:
            return None
        if a not in vocab or b not in vocab:
            return None
        if prefix:
            if not b.startswith(prefix):
                return None
            b_joined = b[len(prefix):]
        else:
            b_joined = b
        if a + b_joined not in vocab:
            return None
        triples.append((vocab[a], vocab[b], vocab[a + b_joined]))
    last = {(a, b): k for k, (a, b, _) in enumerate(triples)}
    return [x for k, t in enumerate(triples) if last[t[:2]] == k for x in t]


# Chars of every str kind (Latin-1, BMP, astral) and the space that separates a merge's sides.
CHARS = st.sampled_from(["a", "b", "é", "Ġ", "ł", "中", "😀", "#", " ", "\x00"])
TOKENS = st.lists(CHARS, min_size=0, max_size=4).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, min_size=1, max_size=12, unique=True), st.data())
def test_resolve_merges_reads_merges_as_the_plain_rule_does(tokens, data):
    vocab = {t: i for i, t in enumerate(data.draw(st.permutations(tokens)))}
    prefix = data.draw(st.sampled_from([None, "", "#", "##", "é"]))
    side = st.sampled_from(tokens) | TOKENS
    merge = st.one_of(
        st.tuples(side, side).map(lambda p: f"{p[0]} {p[1]}"),
        st.tuples(side, side).map(list),
        st.tuples(side, side),
        TOKENS,                                     # a str with no space, or several
        st.just(("a", 5)), st.just(["a"]), st.just(7),
    )
    merges = data.draw(st.lists(merge, max_size=8))
    got = resolve_merges(vocab, merges, prefix)
    want = plain_resolve(vocab, merges, prefix)
    assert (None if got is None else list(got)) == want


def test_resolve_merges_finds_real_merges_among_many_tokens():
    """A vocabulary large enough for many probes and collisions of the slot table: every merge
    of 5000 tokens resolves to the ids the dict gives."""
    words = [f"{c}{k}" for k in range(2500) for c in ("é", "中")]
    vocab = {w: i for i, w in enumerate(words)}
    vocab.update({a + b: len(vocab) + k for k, (a, b) in enumerate(zip(words, words[1:]))})
    merges = [f"{a} {b}" for a, b in zip(words, words[1:])]
    assert list(resolve_merges(vocab, merges, None)) == plain_resolve(vocab, merges, None)
    table = _VocabTable(vocab)
    assert all(table.find_text("<" + w + ">", 1, len(w) + 1) == i for w, i in vocab.items())
    assert table.find_text("中2500", 0, 5) == -1


def test_a_merge_string_has_exactly_one_space():
    """As ``m.split(" ")`` reads it: a token holding a space cannot be a side of a string merge
    (the list form can say it)."""
    vocab = {"a b": 0, "c": 1, "a bc": 2, "a": 3, "b c": 4, "ab c": 5, "": 6, "ab": 7}
    for merge in ["a b c", "a  b", "a\tb", "ab"]:
        assert resolve_merges(vocab, [merge], None) is plain_resolve(vocab, [merge], None) is None, merge
    for merge in [" ab", "ab "]:        # a side may be empty ("" is a token here)
        want = plain_resolve(vocab, [merge], None)
        assert want is not None and list(resolve_merges(vocab, [merge], None)) == want, merge
    assert list(resolve_merges(vocab, [["a b", "c"], ("a", "b c")], None)) == [0, 1, 2, 3, 4, 5]


def test_a_vocabulary_it_cannot_index_sends_the_caller_the_careful_way():
    assert resolve_merges({"a": 0, 1: 1}, [], None) is None              # a key not a str
    assert resolve_merges({"a": 0, "b": -1}, ["a b"], None) is None      # an id not a uint32
    assert resolve_merges({"a": 0, "b": 2**32}, ["a b"], None) is None
    assert list(resolve_merges({"a": 0, "b": 1, "ab": 2}, [], None)) == []
