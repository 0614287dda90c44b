"""The names Hugging Face ``tokenizers`` exports are pieceworks' too, so code written against it
imports them unchanged (only the ones the issues leave out on purpose are listed as missing)."""

from __future__ import annotations

import enum

import pytest

import pieceworks as pw

hf = pytest.importorskip("tokenizers")

#: Hugging Face names pieceworks does not have yet.
NOT_YET: dict[str, set[str]] = {}
#: Top-level names that are Python's own (typing's, enum's) or the package itself, not API.
NOT_API = {"Enum", "List", "Tuple", "Union", "tokenizers"}


@pytest.mark.parametrize("module", ["normalizers", "pre_tokenizers", "decoders", "processors", "models", "trainers"])
def test_every_component_class_of_hugging_face_is_here(module):
    theirs = {name for name in dir(getattr(hf, module)) if name[0].isupper()}
    ours = {name for name in dir(getattr(pw, module)) if name[0].isupper()}
    assert theirs - ours <= NOT_YET.get(module, set())


def test_every_top_level_name_of_hugging_face_is_here():
    theirs = {name for name in dir(hf) if not name.startswith("_")} - NOT_API
    assert theirs - set(dir(pw)) == set()


@pytest.mark.parametrize("name", ["Offsets", "TextInputSequence", "PreTokenizedInputSequence", "TextEncodeInput",
                                  "PreTokenizedEncodeInput", "InputSequence", "EncodeInput"])
def test_input_type_hints_are_hugging_faces(name):
    assert getattr(pw, name) == getattr(hf, name)


@pytest.mark.parametrize("name", ["OffsetReferential", "OffsetType"])
def test_offset_enums_have_hugging_faces_members(name):
    ours, theirs = getattr(pw, name), getattr(hf, name)
    assert issubclass(ours, enum.Enum)
    assert {m.name: m.value for m in ours} == {m.name: m.value for m in theirs}


def test_get_splits_takes_the_enum_members_as_their_strs():
    text = pw.PreTokenizedString("añb c")
    text.split(lambda i, s: s.split(" ", "removed"))
    for referential in pw.OffsetReferential:
        for kind in pw.OffsetType:
            assert text.get_splits(referential, kind) == text.get_splits(referential.value, kind.value)
    assert text.get_splits(pw.OffsetReferential.ORIGINAL, pw.OffsetType.BYTE)[0][1] == (0, 4)


def _hugging_face_classes_made_without_arguments():
    for module in ("normalizers", "pre_tokenizers", "decoders", "processors", "models"):
        for name in sorted(dir(getattr(hf, module))):
            cls = getattr(getattr(hf, module), name)
            if not (isinstance(cls, type) and name[0].isupper()) or name == "Model":
                continue  # Hugging Face's abstract Model() quietly makes an empty BPE; ours is abstract
            try:
                made = cls()
            except TypeError:
                continue  # needs arguments in Hugging Face too
            if isinstance(made.__getstate__(), bytes):  # a component (DecodeStream is not)
                yield module, name, made


@pytest.mark.parametrize("module, name, theirs", list(_hugging_face_classes_made_without_arguments()),
                         ids=lambda value: value if isinstance(value, str) else "")
def test_components_hugging_face_makes_without_arguments_have_its_defaults(module, name, theirs):
    import json

    ours = getattr(getattr(pw, module), name)()
    assert json.loads(ours.__getstate__()) == json.loads(theirs.__getstate__())


@pytest.mark.parametrize("name", ["BpeTrainer", "WordPieceTrainer", "WordLevelTrainer", "UnigramTrainer",
                                  "ParityBpeTrainer"])
def test_trainers_made_without_arguments_have_hugging_faces_defaults(name):
    theirs, ours = getattr(hf.trainers, name)(), getattr(pw.trainers, name)()
    for attribute in (a for a in dir(theirs) if not a.startswith("_")):
        value = getattr(theirs, attribute)
        if not callable(value):
            assert getattr(ours, attribute) == value, attribute


def _keyword_calls(lib):
    """Calls that pass Hugging Face's own keyword names, each giving something comparable."""
    def filtered():
        text = lib.NormalizedString(sequence="abc")
        text.filter(func=lambda c: c != "b")
        return text.normalized

    def split_then_normalize():
        text = lib.PreTokenizedString("ab cd")
        text.split(func=lambda i, s: s.split(" ", "removed"))
        text.normalize(func=lambda s: s.uppercase())
        return [piece for piece, _, _ in text.get_splits()]

    return {
        "NormalizedString(sequence=).filter(func=)": filtered,
        "NormalizedString.slice(range=)": lambda: lib.NormalizedString("abcdef").slice(range=(1, 3)).normalized,
        "PreTokenizedString.split(func=).normalize(func=)": split_then_normalize,
    }


@pytest.mark.parametrize("call", list(_keyword_calls(hf)))
def test_hugging_faces_keyword_names_work_here(call):
    assert _keyword_calls(pw)[call]() == _keyword_calls(hf)[call]()
