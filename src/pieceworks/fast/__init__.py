"""Fused fast paths: whole pipelines that run in one kernel pass.

The general pipeline (normalizer → pre-tokenizer → model, one Python object
per split and per token) is exact for every combination of components but
slow. For the pipelines people actually ship (BERT WordPiece, byte-level
BPE, SentencePiece Unigram and BPE), a *plan* encodes a plain segment of text (one without
added tokens) in a kernel, giving exactly the same ids, tokens, offsets and
word ids.

A plan builder looks at a tokenizer's stages and returns a plan or None.
Plans read the components' options on every call, so changing an option
needs no rebuild; the tokenizer rebuilds its plan when a stage object is
replaced.

A plan has one method::

    encode_plain(text) -> (ids, tokens, offsets, words, n_words) | None

``offsets`` are char spans into ``text``, ``words`` are word indices
counted from 0, ``n_words`` is how many pre-tokenized pieces the text made
(empty pieces excluded, as the general path drops them). None means "this
text needs the general path" (say, a character the kernel does not handle);
the tokenizer then falls back, so a plan may be partial but never wrong.

A plan may also offer the *raw* forms, which the tokenizer prefers: they
make no Python object per token (see :meth:`pieceworks.Encoding.from_raw`)::

    encode_raw(text) -> (raw, n_tokens, n_words, strings) | None
    encode_raw_batch(texts) -> [encode_raw(text) for text in texts]
    normalizes_nothing(text) -> bool   # the normalizer leaves text as it is
    normalized_among(texts) -> [int]   # optional: the positions of those it changes, faster than one by one

A plan whose result depends on where a text starts in its input
(Metaspace's ``prepend_scheme="first"``) sets ``takes_position = True``
and takes it as ``encode_plain(text, at)``, ``encode_raw(text, at)`` and
``encode_raw_batch(texts, ats)``: the segments between added tokens start
past 0.

``raw`` is a raw encoding (:mod:`pieceworks._kernels.raw_encoding`: int32
ids, starts, ends, words) and ``strings[id]`` spells a token. A batch
result may carry a fifth item, the text's token strings, when a token is
spelled by its own text (an unknown char, in Hugging Face's Unigram);
``raw_encoding.fill_encodings`` sets them, and a caller that cannot takes
the text the long way. A plan with
``releases_gil = True`` runs ``encode_raw_batch`` without the GIL for the
whole list, so the threads of ``encode_batch`` overlap fully.

Set ``PIECEWORKS_NO_FAST=1`` to disable every plan (for debugging and for
the tests that hold plans to the general path).
"""

from __future__ import annotations

import os
import threading
from typing import Callable

from .._component import epoch
from .._kernels.raw_encoding import joined_words, whole_result
from ..normalizers import Sequence

__all__ = ["register_plan", "register_fallback_plan", "find_plan", "plain_from_raw"]

_BUILDERS: list[Callable] = []
_FALLBACK_BUILDERS: list[Callable] = []


def register_plan(builder: Callable) -> Callable:
    """Decorator: ``builder(tokenizer) -> plan | None`` is tried when a plan is needed."""
    _BUILDERS.append(builder)
    return builder


def register_fallback_plan(builder: Callable) -> Callable:
    """Decorator: ``builder(tokenizer) -> plan | None`` is tried when no :func:`register_plan`
    builder offers one (a plan that wraps another, see :mod:`pieceworks.fast.normalized_first`)."""
    _FALLBACK_BUILDERS.append(builder)
    return builder


def find_plan(tokenizer, fallbacks: bool = True):
    """The first plan a builder offers for ``tokenizer`` (``fallbacks``: then the fallback
    builders), or None."""
    if os.environ.get("PIECEWORKS_NO_FAST"):
        return None
    _load_builders(type(tokenizer.model).__name__)
    for builder in _BUILDERS + _FALLBACK_BUILDERS if fallbacks else _BUILDERS:
        plan = builder(tokenizer)
        if plan is not None:
            return plan
    return None


# The plan modules whose builders may offer a plan for a model of each type (each builder asks
# for its type exactly): a tokenizer imports only those, as importing every one took a third of a
# BERT tokenizer's first encode. A model of a type not named here imports them all.
# (test_fast_plan_options.py::test_plan_modules_for_each_model_type holds it to what the builders do.)
MODULES_FOR_MODEL = {
    "BPE": ("byte_bpe", "class_run_bpe", "cut_byte_bpe", "metaspace_bpe", "normalized_first", "spm_bpe"),
    "WordPiece": ("bert", "normalized_first"),
    "Unigram": ("normalized_first", "unigram"),
    "WordLevel": ("normalized_first", "word_level"),
}

_loaded: set[str] = set()       # the model types whose modules are all imported ("*": every module)
_loading = threading.Lock()


def _load_builders(model_type: str = "*") -> None:
    # Builders live beside their kernels; importing them registers them. A type is marked loaded
    # only once all its modules are imported: a thread arriving meanwhile waits on the lock
    # instead of seeing a half-filled list (and caching "no plan" for good). Modules are imported
    # in name order whatever the type, so builders that may answer for one model keep the order a
    # whole import gives them.
    if model_type in _loaded or "*" in _loaded:
        return
    with _loading:
        if model_type in _loaded or "*" in _loaded:
            return
        import importlib
        import pkgutil

        names = MODULES_FOR_MODEL.get(model_type)
        if names is None:
            model_type = "*"
            names = [info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
        for name in sorted(names):
            importlib.import_module(f"{__name__}.{name}")
        _loaded.add(model_type)


#: Metaspace's prepend scheme as the kernels take it for a word or a stretch between added tokens
#: (``BpeEncoder.encode_words_raw_batch``, ``SpmCore.hf_metaspace_around_batch``): never, every one,
#: only one at the text's first char.
PREPEND_MODES = {"never": 0, "always": 1, "first": 2}


class DrawsFromModel:
    """A plan mixin for a model that may draw its ids at random (BPE-dropout, ``model.dropout``).

    ``samples`` says it draws: what is read later (offsets, the tokens of a cut text) must come
    from the draws, not from encoding the text again. ``releases_gil`` is then False, so a batch
    goes text by text, in order, on one thread, and a seed gives the general path's ids.

    >>> from types import SimpleNamespace
    >>> plan = DrawsFromModel()
    >>> plan.model = SimpleNamespace(dropout=0.1)
    >>> plan.samples, plan.releases_gil
    (True, False)
    """

    @property
    def samples(self) -> bool:
        return bool(getattr(self.model, "dropout", None))

    @property
    def releases_gil(self) -> bool:
        return not self.samples


def each_alone(encode_batch: Callable, texts: list[str], ats: list[int] | None = None) -> list:
    """``encode_batch(texts, ats)`` made one text at a time, in order: for a plan whose batch call
    puts some texts first (those its kernel takes as they are) while BPE-dropout's draws must come
    in the texts' order, as the general path makes them.

    >>> each_alone(lambda texts, ats: [(t, ats) for t in texts], ["a", "b"], [0, 3])
    [('a', [0]), ('b', [3])]
    """
    if ats is None:
        return [encode_batch([text], None)[0] for text in texts]
    return [encode_batch([text], [at])[0] for text, at in zip(texts, ats)]


def plain_from_raw(result):
    """``encode_plain``'s ``(ids, tokens, offsets, words, n_words)`` made from ``encode_raw``'s
    ``(raw, n_tokens, n_words, strings)``, or None for None (a plan whose raw form is its own).

    >>> from pieceworks._kernels.raw_encoding import pack
    >>> plain_from_raw((pack([7], [0], [2], [0]), 1, 1, {7: "hi"}))
    ([7], ['hi'], [(0, 2)], [0], 1)
    """
    if result is None:
        return None
    from .._kernels.raw_encoding import id_list, offset_list, token_list, word_list

    raw, n, n_words, strings = result
    return id_list(raw, n), token_list(raw, n, strings), offset_list(raw, n, 0), word_list(raw, n, -1), n_words


def fill_plain_left(out: list, texts: list[str], around, encode_raw_batch: Callable, strings,
                    limit: int = -1) -> list:
    """``out`` (an ``encode_around_batch``'s results) with each text its kernel left (None) that
    holds no token of ``around`` encoded by the plan's ``encode_raw_batch`` (which normalizes what
    the kernel would not), its tokens spelled from ``strings``; those that hold one stay None (the
    long way), as do all when ``around`` has a second pass, whose tokens are matched in the text
    normalized.

    >>> from pieceworks._kernels.token_finder import AroundTokens, TokenTrie
    >>> batch = lambda texts: [(t, len(t), 1, None) for t in texts]
    >>> fill_plain_left([None, None, "kept"], ["ab", "a<s>", "x"], AroundTokens(TokenTrie(["<s>"]), [5]), batch, "S")
    [('ab', 2, 1, 'S'), None, 'kept']
    """
    if around.inner is not None or None not in out:
        return out
    left = [k for k, made in enumerate(out) if made is None]
    holding = set(around.trie.texts_holding([texts[k] for k in left]))
    plain = [k for j, k in enumerate(left) if j not in holding]
    for k, made in zip(plain, encode_raw_batch([texts[k] for k in plain])):
        if made is not None and (limit < 0 or made[1] <= limit):
            out[k] = made if len(made) > 4 else (*made[:3], strings)    # (a fifth item: its own tokens)
    return out


def joined_words_of(made, words: list[str], around, encode_raw_batch: Callable, strings) -> tuple | None:
    """A pre-tokenized sequence's words as one raw result (``raw_encoding.joined_words``' form): ``made``
    itself when the kernel joined them (a tuple), else its per-word list with the words it left
    filled (:func:`fill_plain_left`) and joined; None when one is still left (the long way)."""
    if type(made) is tuple or made is None:
        return made
    filled = fill_plain_left(made, words, around, encode_raw_batch, strings)
    return joined_words([None if result is None else whole_result(result) for result in filled])


def stages_key(plan) -> tuple:
    """What a plan's reading of its stages holds for: the component epoch (which every assignment
    to a component's attribute moves), the stage objects, and the members of a normalizer
    Sequence (whose list may be edited in place, which moves no epoch).

    >>> from types import SimpleNamespace
    >>> plan = SimpleNamespace(model=None, pre_tokenizer=None, normalizer=None)
    >>> stages_key(plan) == stages_key(plan)
    True
    """
    normalizer = plan.normalizer
    return (epoch(), id(plan.model), id(plan.pre_tokenizer), id(normalizer),
            tuple(map(id, normalizer.normalizers)) if type(normalizer) is Sequence else ())
