"""What code written for Hugging Face ``tokenizers`` does with a tokenizer's parts besides encoding:
``json.loads(stage.__getstate__())`` to read a stage's settings and build an altered one from
them (as transformers' fast tokenizers do), ``__setstate__`` of Hugging Face's state, a
processor's template set as an attribute, and the processors' keyword names.
"""

from __future__ import annotations

import json
import pickle

import pytest

from pieceworks import Tokenizer, pre_tokenizers, processors
from pieceworks.errors import InputTypeError
from parity import assert_same_encoding, both_from_file

tokenizers = pytest.importorskip("tokenizers")

STAGES = ("normalizer", "pre_tokenizer", "model", "post_processor", "decoder")
FILES = ["hf_tokenizer_json/llama3", "hf_tokenizer_json/gemma3", "bert_all-MiniLM-L6-v2", "sentencepiece/barthez"]


@pytest.mark.parametrize("relative", FILES)
def test_getstate_is_hugging_faces_json_bytes(relative, shared_data):
    ours, theirs = both_from_file(relative, shared_data)
    for name in STAGES:
        mine, ref = getattr(ours, name), getattr(theirs, name)
        assert (mine is None) == (ref is None), name
        if mine is not None:
            state = mine.__getstate__()
            assert type(state) is bytes, name
            assert json.loads(state) == json.loads(ref.__getstate__()), f"{relative} {name}"
    assert type(ours.__getstate__()) is bytes
    assert json.loads(ours.__getstate__()) == json.loads(theirs.__getstate__())


@pytest.mark.parametrize("relative", FILES)
def test_setstate_takes_hugging_faces_state(relative, shared_data):
    ours, theirs = both_from_file(relative, shared_data)
    text = "Hello wörld, it's 2024! 中文"
    blank = Tokenizer.from_str(ours.to_str())
    blank.__setstate__(theirs.__getstate__())
    assert_same_encoding(blank.encode(text), theirs.encode(text), relative)
    # A stage set from Hugging Face's state of the same stage is that stage.
    for name in STAGES:
        mine, ref = getattr(ours, name), getattr(theirs, name)
        if mine is not None:
            fresh = pickle.loads(pickle.dumps(mine))
            fresh.__setstate__(ref.__getstate__())
            assert fresh.to_json() == mine.to_json(), f"{relative} {name}"


def test_a_stage_rebuilt_from_its_state_with_one_setting_changed():
    """transformers' way of turning a prefix space on: read the state, change it, rebuild."""
    ours = pre_tokenizers.ByteLevel(add_prefix_space=False)
    theirs = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    rebuilt = []
    for module, stage in ((pre_tokenizers, ours), (tokenizers.pre_tokenizers, theirs)):
        state = json.loads(stage.__getstate__())
        kind = getattr(module, state.pop("type"))
        state["add_prefix_space"] = True
        rebuilt.append(kind(**state))
    assert rebuilt[0].pre_tokenize_str("hi there") == rebuilt[1].pre_tokenize_str("hi there")
    assert rebuilt[0].pre_tokenize_str("hi")[0][0] == "Ġhi"


@pytest.mark.parametrize("kind", ["BertProcessing", "RobertaProcessing"])
def test_processors_take_hugging_faces_keyword_names(kind):
    sep, cls = ("[SEP]", 102), ("[CLS]", 101)
    theirs = getattr(tokenizers.processors, kind)(sep, cls_token=cls)
    for ours in (getattr(processors, kind)(sep, cls_token=cls), getattr(processors, kind)(sep=sep, cls=cls),
                 getattr(processors, kind)(sep, cls)):
        assert json.loads(ours.__getstate__()) == json.loads(theirs.__getstate__())
    for wrong in ({}, {"cls_token": cls, "cls": cls}):
        with pytest.raises(InputTypeError, match="class token once"):
            getattr(processors, kind)(sep, **wrong)


def test_a_template_set_as_an_attribute_is_parsed_as_hugging_face_does(shared_data):
    ours, theirs = both_from_file("bert_all-MiniLM-L6-v2", shared_data)
    for tok in (ours, theirs):
        processor = tok.post_processor
        processor.single = "[SEP] $A"
        tok.post_processor = processor      # (Hugging Face hands out a copy of the stage: set it back)
    assert ours.post_processor.num_special_tokens_to_add(False) == 1
    for args in (("a b c",), ("a b", "c d")):
        assert_same_encoding(ours.encode(*args), theirs.encode(*args), repr(args))


def test_a_pair_template_set_as_an_attribute_is_the_one_built_with_it():
    """(Hugging Face has no ``pair`` attribute to set: ours is the constructor's.)"""
    special = [("[CLS]", 1), ("[SEP]", 2)]
    built = processors.TemplateProcessing(single="[CLS] $A", pair="$A [SEP] $B:1", special_tokens=special)
    changed = processors.TemplateProcessing(single="[CLS] $A", special_tokens=special)
    changed.pair = "$A [SEP] $B:1"
    assert changed.to_json() == built.to_json()
    changed.special_tokens = [("[CLS]", 1), ("[SEP]", 7)]
    assert changed.to_json()["special_tokens"]["[SEP]"]["ids"] == [7]
