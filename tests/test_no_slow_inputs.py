"""No slow inputs: adversarial texts cost about what prose costs, on every model.

A guard against quadratic regressions, with generous bounds (seconds, not
milliseconds) so a busy machine does not make it flaky: for each tokenizer
of the catalog in ``benchmarks/bench_adversarial.py`` (real files from
../shared/data, tokenizers trained here, the fast paths and the general
pipeline), each adversarial input of 40k chars must encode within
``10 × (time of the same amount of prose) + 1 s``. A quadratic step of one
nanosecond per pair of chars already costs 1.6 s there. The benchmark
prints the 1 MB table; this test only catches regressions.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIZE = 40_000
FACTOR = 10.0
SLACK_SECONDS = 1.0


def _bench():
    spec = importlib.util.spec_from_file_location("bench_adversarial", ROOT / "benchmarks" / "bench_adversarial.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _bench()
_LOADED: dict = {}


def load(shared_data, name: str, general_only: bool, monkeypatch):
    """The catalog's ``encode`` for ``name``; with ``general_only`` its fast plan is turned off for good."""
    key = (name, general_only)
    if key not in _LOADED:
        _, loader = bench.tokenizer_catalog(shared_data)[name]
        with monkeypatch.context() as patch:
            if general_only:
                patch.setenv("PIECEWORKS_NO_FAST", "1")
            try:
                encode = loader()
            except ImportError as exc:
                pytest.skip(f"{name}: {exc} (the module is being written; this runs once it lands)")
            encode(bench.prose(500, shared_data))   # the plan (or its absence) is chosen on first use
        _LOADED[key] = encode
    return _LOADED[key]


def seconds(encode, text: str) -> float:
    start = time.perf_counter()
    encode(text)
    return time.perf_counter() - start


def has_fast_plan(encode) -> bool:
    """True if ``encode`` is a Tokenizer's and a fused fast path serves it."""
    from pieceworks import Tokenizer
    from pieceworks.fast import find_plan

    owner = getattr(encode, "__self__", None)
    return isinstance(owner, Tokenizer) and find_plan(owner) is not None


NAMES = ["llama3", "qwen3", "gpt2-files", "mistral", "bert", "ruT5", "spm-llama2", "spm-albert", "trained-bpe",
         "trained-bpe-words", "trained-bpe-metaspace", "trained-wordpiece", "trained-wordlevel", "tiktoken-cl100k",
         "llama3-long-token", "llama3-alike-tokens"]


@pytest.mark.parametrize("general_only", [False, True], ids=["fast", "general"])
@pytest.mark.parametrize("name", NAMES)
def test_adversarial_inputs_cost_about_what_prose_costs(shared_data, monkeypatch, name, general_only):
    encode = load(shared_data, name, general_only, monkeypatch)
    if general_only and not has_fast_plan(encode):
        pytest.skip(f"{name} has no fast path (yet): the 'fast' case already runs the general pipeline")
    inputs = bench.adversarial_inputs(SIZE, shared_data)
    prose = inputs.pop("prose")
    base = seconds(encode, prose)
    per_byte = base / len(prose.encode())
    slow = {}
    for kind, text in inputs.items():
        limit = FACTOR * per_byte * len(text.encode()) + SLACK_SECONDS
        took = seconds(encode, text)
        if took > limit:
            took = min(took, seconds(encode, text))   # one retry: the machine is shared
        if took > limit:
            slow[kind] = f"{took:.2f} s (limit {limit:.2f} s; prose {base:.3f} s)"
    assert not slow, f"{name}: inputs far slower than prose: {slow}"


@pytest.mark.parametrize("name, kind", [("trained-bpe", "one_letter"), ("trained-bpe", "random_letters"),
                                        ("spm-albert", "one_letter"), ("mistral", "random_letters"),
                                        ("trained-wordpiece", "one_letter")])
def test_one_huge_piece_scales_linearly(shared_data, monkeypatch, name, kind):
    """A whole input as one piece for the model kernel: 4x the text must not cost 16x (quadratic).

    (Bound: 10x plus 1 s of slack; n·log n gives about 4.5x.)
    """
    encode = load(shared_data, name, False, monkeypatch)
    small = bench.adversarial_inputs(SIZE, shared_data)[kind]
    large = bench.adversarial_inputs(SIZE * 4, shared_data)[kind]
    t_small = min(seconds(encode, small) for _ in range(2))
    t_large = seconds(encode, large)
    if t_large > 10 * t_small + 1.0:
        t_large = min(t_large, seconds(encode, large))   # one retry: the machine is shared
    assert t_large <= 10 * t_small + 1.0, f"{name} on {kind}: {t_small:.3f} s -> {t_large:.3f} s for 4x the text"
