"""Unigram training the readable way: seed substrings and the E-step by brute force.

The oracle for :mod:`pieceworks._kernels.unigram_train` (and a teaching aid).

Seeds. A candidate piece is a substring seen at least twice that is a node
of the suffix tree: its occurrences are not all followed by the same char
(the sentence boundary counts as a char). Its score is ``count × length``.

E-step. A word's segmentations each have probability ∝ exp(Σ scores); a
piece's expected count is the sum, over segmentations, of that probability
times how often the piece occurs in it, times the word's count.

>>> sorted(seed_substrings(["abab", "abab"], 16).items())
[('ab', 4)]
>>> {p: round(c, 3) for p, c in expected_counts({"ab": 1}, {"a": -1.0, "b": -1.0, "ab": -1.0}).items()}
{'a': 0.269, 'b': 0.269, 'ab': 0.731}
"""

from __future__ import annotations

import math
from collections import defaultdict

__all__ = ["seed_substrings", "expected_counts", "segmentations"]

BOUNDARY = "\0"


def seed_substrings(sentences: list[str], max_length: int) -> dict[str, int]:
    """``{substring: count}`` for the suffix-tree nodes of 2..max_length chars without the boundary."""
    text = "".join(s + BOUNDARY for s in sentences)
    followers: dict[str, set] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for i in range(len(text)):
        for j in range(i + 2, min(len(text), i + max_length) + 1):
            sub = text[i:j]
            if BOUNDARY in sub:
                break
            counts[sub] += 1
            followers[sub].add(text[j] if j < len(text) else None)
    return {s: n for s, n in counts.items() if n >= 2 and len(followers[s]) >= 2}


def segmentations(word: str, scores: dict[str, float], unk_score: float):
    """Every segmentation as (pieces, log score); a char no one-char piece covers is an unknown (None)."""
    out = []

    def walk(start, path, total):
        if start == len(word):
            out.append((path, total))
            return
        single = False
        for end in range(start + 1, len(word) + 1):
            piece = word[start:end]
            if piece in scores:
                single = single or end == start + 1
                walk(end, path + [piece], total + scores[piece])
        if not single:
            walk(start + 1, path + [None], total + unk_score)

    walk(0, [], 0.0)
    return out


def expected_counts(words: dict[str, int], scores: dict[str, float]) -> dict[str, float]:
    """Each piece's expected count over all segmentations of every word (weighted by word count)."""
    unk_score = min(scores.values()) - 10.0
    out: dict[str, float] = defaultdict(float)
    for word, freq in words.items():
        segs = segmentations(word, scores, unk_score)
        top = max(s for _, s in segs)
        z = sum(math.exp(s - top) for _, s in segs)
        for pieces, s in segs:
            p = math.exp(s - top) / z
            for piece in pieces:
                if piece is not None:
                    out[piece] += freq * p
    return dict(out)
