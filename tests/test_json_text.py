"""tokenizer.json text written by the kernel (``_kernels.json_text``) is, character for
character, what ``json.dumps`` writes: on any JSON data (hypothesis), compact and indented, and
on real tokenizer files, whose BPE merges are written from the merge table's ids."""

import gc
import json
import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pieceworks import Tokenizer
from pieceworks._kernels.json_text import PairsById, pair_lists
from pieceworks._kernels.json_text import dumps as kernel_dumps
from pieceworks.formats.hf_json import tokenizer_to_dict
from pieceworks.formats.json_text import dumps


def reference(data, pretty: bool) -> str:
    if pretty:
        return json.dumps(data, ensure_ascii=False, indent=2)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


# Every char, controls, quotes and backslashes and astral ones more often than chance would give.
texts = st.text(st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from('"\\\n\t\x00\x1f\x7f\u2028é😀')))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-2**70, 2**70), st.floats(), texts)
json_data = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                          st.tuples(inner, inner),
                                                          st.dictionaries(texts, inner, max_size=5)), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(json_data, st.booleans())
def test_any_data_is_written_as_json_dumps_writes_it(data, pretty):
    assert dumps(data, pretty) == reference(data, pretty)


@given(st.dictionaries(st.one_of(st.integers(), st.booleans(), st.none(), texts), st.integers(), max_size=5),
       st.booleans())
def test_keys_that_are_not_strs_go_to_json_dumps(data, pretty):
    # (json.dumps turns them into strs; the kernel leaves such data to it)
    assert dumps(data, pretty) == reference(data, pretty)


def test_a_lone_surrogate_is_left_to_json_dumps():
    data = {"vocab": {"a\ud800": 0}}
    assert kernel_dumps(data) is None
    assert dumps(data) == reference(data, False)


def test_special_floats_and_huge_ints_as_json_dumps():
    data = [math.nan, math.inf, -math.inf, -0.0, 1e-320, 2**64, -2**63, 5e-324]
    assert dumps(data) == reference(data, False)


def test_merges_by_id_are_the_merge_lists():
    tokens = ["a", "b", "ab", None, 'q"\n']
    ids = array("I", [0, 1, 2, 2, 4, 2])
    merges = PairsById(ids, tokens)
    assert merges.as_lists() == [["a", "b"], ["ab", 'q"\n']]
    for pretty in (False, True):
        assert dumps({"merges": merges}, pretty) == reference({"merges": merges.as_lists()}, pretty)
    assert dumps({"merges": PairsById(array("I"), [])}) == '{"merges":[]}'


def test_merges_naming_an_id_without_a_token_raise_key_error():
    for ids in (array("I", [0, 3, 2]), array("I", [0, 9, 2])):      # (None at 3, past the end at 9)
        with pytest.raises(KeyError):
            dumps({"merges": PairsById(ids, ["a", "b", "ab", None])})


def test_pair_lists_are_the_pairs_and_not_tracked_by_the_collector():
    tokens = ["x", "y", "xy"]
    pairs = pair_lists(array("I", [0, 1, 2, 2, 2, 2]), tokens)
    assert pairs == [["x", "y"], ["xy", "xy"]]
    assert not any(gc.is_tracked(pair) for pair in pairs)


@pytest.mark.parametrize("relative", ["hf_tokenizer_json/qwen3", "bert_all-MiniLM-L6-v2",
                                      "hf_tokenizer_json/gpt-neox-20b"])
def test_real_files_are_written_as_json_dumps_writes_their_data(relative, shared_data):
    tok = Tokenizer.from_file(str(shared_data / f"tokenizers/{relative}/tokenizer.json"))
    data = tokenizer_to_dict(tok)
    assert kernel_dumps(tokenizer_to_dict(tok, for_text=True)) is not None     # (not json.dumps's text)
    for pretty in (False, True):
        assert tok.to_str(pretty) == reference(data, pretty), pretty
    assert json.loads(tok.model.__getstate__()) == tok.model.to_json()
    assert tok.__getstate__() == tok.to_str().encode()


def test_a_component_pickles_as_its_json_text_and_older_pickles_still_load():
    import pickle

    from pieceworks.models import BPE

    model = BPE({"a\ud800": 0, "b": 1, "a\ud800b": 2, "é": 3}, [("a\ud800", "b")], unk_token="é")
    rebuild, (cls, text) = model.__reduce__()
    assert cls is BPE and type(text) is str and json.loads(text) == model.to_json()
    back = pickle.loads(pickle.dumps(model))
    assert back.to_json() == model.to_json() and back.merges == model.merges
    # A pickle made before: the class and the JSON data.
    older = pickle.loads(pickle.dumps(_OldPickle(model)))
    assert type(older) is BPE and older.to_json() == model.to_json()


class _OldPickle:
    """Pickles as pieceworks 0.1 pickled a component before 2026-12."""

    def __init__(self, component):
        self.component = component

    def __reduce__(self):
        from pieceworks import _component

        return (_component._rebuild, (type(self.component), self.component.to_json()))
