"""What ``import pieceworks`` loads: nothing that only training, writing files or threads need.

Every script, CLI call and worker process pays the import; these modules
were most of it (``python -X importtime -c "import pieceworks"``) and are
imported where first used instead. A new top-level import of one of them
fails here, in a fresh interpreter.
"""

import pickle
import subprocess
import sys

import pytest

import pieceworks
from pieceworks import AddedToken
from pieceworks.pretokenized import Token

# Each: what pulls it in when it is needed (so the test says where the import belongs).
DEFERRED = {
    "regex": "the Unicode tables' first build, Split patterns, grapheme clusters",
    "dataclasses": "nothing in the package (it imports inspect: 16 ms)",
    "inspect": "nothing at import",
    "tempfile": "fileio's atomic writes",
    "hashlib": "the disk cache's source stamp",
    "concurrent.futures": "the encode thread pool, made on first batch",
    "pieceworks.trainers": "pieceworks.trainers, first read",
    "pieceworks.implementations": "the ready-made tokenizers, first read",
}


def test_import_pieceworks_loads_none_of_the_deferred_modules():
    code = ("import sys, pieceworks; "
            f"print(','.join(m for m in {sorted(DEFERRED)!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert not loaded, f"import pieceworks loaded {loaded}; import them where used: " + \
        "; ".join(f"{m}: {DEFERRED[m]}" for m in loaded.split(","))


def test_deferred_names_still_resolve_from_the_package():
    code = ("import pieceworks, sys; from pieceworks import BertWordPieceTokenizer; "
            "print(pieceworks.trainers.BpeTrainer.__module__, BertWordPieceTokenizer.__module__, "
            "'trainers' in dir(pieceworks))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["pieceworks.trainers.bpe", "pieceworks.implementations.bert_wordpiece", "True"]


def test_unknown_attribute_of_the_package_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Trainerz'"):
        pieceworks.Trainerz     # noqa: B018
    assert not hasattr(pieceworks, "nope")


# -- the classes written out by hand instead of as dataclasses keep a dataclass's behaviour ------


def test_added_token_equality_hash_and_pickle():
    a = AddedToken("<x>", lstrip=True)
    assert a == AddedToken("<x>", lstrip=True) and hash(a) == hash("<x>")
    assert a != AddedToken("<x>", lstrip=True, special=True)
    assert a != AddedToken("<y>", lstrip=True)
    assert a.normalized is True and AddedToken("<x>", special=True).normalized is False
    back = pickle.loads(pickle.dumps(a))
    assert back == a and back._normalized_given is False
    with pytest.raises(pieceworks.errors.InputTypeError, match="must be a str"):
        AddedToken(5)


def test_made_special_token_keeps_a_given_normalized_flag():
    from pieceworks.added_vocabulary import as_added_token

    given = as_added_token(AddedToken("<x>", normalized=True, single_word=True), special=True)
    assert (given.special, given.normalized, given.single_word) == (True, True, True)
    assert as_added_token(AddedToken("<x>"), special=True).normalized is False


def test_token_is_equal_by_value_and_unhashable():
    t = Token(3, "ab", (0, 2))
    assert t == Token(3, "ab", (0, 2)) and t != Token(3, "ab", (0, 3)) and t != (3, "ab", (0, 2))
    assert repr(t) == "Token(id=3, value='ab', offsets=(0, 2))"
    with pytest.raises(TypeError):
        hash(t)
    with pytest.raises(AttributeError):
        t.other = 1
    match t:
        case Token(i, v, o):
            assert (i, v, o) == t.as_tuple()
    # An extension type (made in C per token): it still pickles, copies, and takes new field values.
    import copy

    assert pickle.loads(pickle.dumps(t)) == t == copy.deepcopy(t) and copy.copy(t) is not t
    t.id, t.offsets = 4, (1, 2)
    assert t.as_tuple() == (4, "ab", (1, 2)) and Token(id=1, value="a", offsets=(0, 1)).id == 1
