"""SentencePiece's segmenters the readable way: Unigram Viterbi, all segmentations, SentencePiece BPE.

The oracle for :mod:`pieceworks._kernels.unigram` (and a teaching aid for
the SentencePiece walkthrough). Nothing here is fast; everything is a
plain loop over the normalized text (the ``▁``-escaped string a model
sees).

Unigram. A segmentation's score is the sum of its pieces' scores (their
log-probabilities). :func:`viterbi` keeps, for every end position, the best
path ending there: ``best[end] = max over pieces p ending at end of
best[start] + score(p)``. A char that no one-char piece covers gets an
unknown node scored ``min(scores) − 10``. Ties keep the first candidate
found, which is the one starting earliest. SentencePiece adds in ``float``
(rounding after every addition), so near-ties come out as it decides only
if we do the same: :func:`f32` rounds.

SentencePiece BPE. Start from chars; repeatedly merge the adjacent pair
whose merged piece is in the vocabulary with the highest score, leftmost
on ties. (Hugging Face's BPE ranks merges instead of scoring pieces.)

>>> scores = {"▁a": -1.0, "▁": -3.0, "a": -2.0, "b": -2.0, "ab": -1.5}
>>> viterbi("▁ab", scores)
['▁a', 'b']
>>> bpe("▁ab", scores)
['▁a', 'b']
"""

from __future__ import annotations

import math
import struct

__all__ = ["f32", "viterbi", "merge_unknowns", "all_segmentations", "bpe", "UNK_PENALTY", "FLT_MAX"]

UNK_PENALTY = 10.0
#: The largest float32. SentencePiece starts its minimum score there, so a model with
#: no NORMAL piece scores an unknown char ``FLT_MAX − 10`` (= ``FLT_MAX`` in float).
FLT_MAX = 3.4028234663852886e+38


def f32(x: float) -> float:
    """``x`` rounded to the nearest float32, as C's ``(float)x``.

    Past the float range the result is infinite, as in C.

    >>> f32(0.1), f32(2 * FLT_MAX)
    (0.10000000149011612, inf)
    """
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def viterbi(text: str, scores: dict[str, float], unk: str = "<unk>", user_defined: frozenset = frozenset(),
            float32: bool = True, excluded: frozenset = frozenset()) -> list[str]:
    """The best segmentation of ``text`` (unknown chars come back as themselves, one per char).

    ``user_defined`` pieces score ``0.1 · len(UTF-8 bytes) − 0.1`` (SentencePiece's bonus that
    makes them win); all others score their value in ``scores``. An unknown char scores the
    lowest NORMAL score minus 10; with no NORMAL piece that minimum is still SentencePiece's
    starting value ``FLT_MAX``, so unknown chars then beat every user-defined piece:

    >>> viterbi("ab", {"a": -1.0, "ab": -1.0}, user_defined=frozenset({"a", "ab"}))
    ['a', 'b']

    ``excluded`` pieces are never matched (the unknown score still counts them):

    >>> viterbi("ab", {"a": -1.0, "b": -1.0, "ab": -0.5}, excluded=frozenset({"ab"}))
    ['a', 'b']
    """
    rnd = f32 if float32 else (lambda x: x)
    normal = [s for p, s in scores.items() if p not in user_defined]
    unk_score = rnd(min(normal, default=FLT_MAX) - UNK_PENALTY)
    longest = max((len(p) for p in scores), default=1)
    n = len(text)
    best: list[float | None] = [0.0] + [None] * n
    back: list[tuple[int, str] | None] = [None] * (n + 1)
    for start in range(n):
        if best[start] is None:
            continue
        single = False
        for end in range(start + 1, min(n, start + longest) + 1):
            piece = text[start:end]
            if piece not in scores or piece in excluded:
                continue
            if piece in user_defined:
                # Taken in double, rounded once: rounding 3 * 0.1 first gives '▁' 0.20000002.
                score = rnd(0.1 * len(piece.encode("utf-8")) - 0.1)
            else:
                score = scores[piece]
            cand = rnd(best[start] + score)
            if best[end] is None or cand > best[end]:
                best[end], back[end] = cand, (start, piece)
            single = single or end == start + 1
        if not single:
            cand = rnd(best[start] + unk_score)
            if best[start + 1] is None or cand > best[start + 1]:
                best[start + 1], back[start + 1] = cand, (start, text[start])
    out = []
    end = n
    while end > 0:
        start, piece = back[end]
        out.append(piece)
        end = start
    return out[::-1]


def merge_unknowns(pieces: list[str], vocab) -> list[str]:
    """Join each run of unknown pieces (not in ``vocab``) into one, as SentencePieceProcessor does.

    Whether the previous piece was unknown is remembered, not looked up: a
    merged run can spell a vocabulary piece.

    >>> merge_unknowns(["x", "b", "b", "a"], {"a": -1.0, "bb": -1.0})
    ['xbb', 'a']
    """
    out: list[str] = []
    prev_unknown = False
    for piece in pieces:
        unknown = piece not in vocab
        if unknown and prev_unknown:
            out[-1] += piece
        else:
            out.append(piece)
        prev_unknown = unknown
    return out


def all_segmentations(text: str, scores: dict[str, float]) -> list[tuple[list[str], float]]:
    """Every segmentation into vocabulary pieces (unknown chars alone), with its score, best first.

    Exponential: for short strings only (the n-best oracle).
    """
    normal = list(scores.values())
    unk_score = min(normal) - UNK_PENALTY if normal else 0.0
    out: list[tuple[list[str], float]] = []

    def walk(start: int, path: list[str], total: float) -> None:
        if start == len(text):
            out.append((list(path), total))
            return
        single = False
        for end in range(start + 1, len(text) + 1):
            piece = text[start:end]
            if piece in scores:
                single = single or end == start + 1
                walk(end, path + [piece], total + scores[piece])
        if not single:
            walk(start + 1, path + [text[start]], total + unk_score)

    walk(0, [], 0.0)
    out.sort(key=lambda ps: -ps[1])
    return out


def bpe(text: str, scores: dict[str, float], frozen: frozenset = frozenset()) -> list[str]:
    """SentencePiece BPE: merge the best-scoring adjacent pair (leftmost on ties) until none is in the vocabulary.

    ``frozen`` pieces (user-defined symbols) are taken whole first and never merged.
    """
    symbols: list[str] = []
    locked: list[bool] = []
    i = 0
    while i < len(text):
        match = max((p for p in frozen if text.startswith(p, i)), key=len, default=None)
        piece = match or text[i]
        symbols.append(piece)
        locked.append(match is not None)
        i += len(piece)
    while True:
        best = None
        for k in range(len(symbols) - 1):
            if locked[k] or locked[k + 1]:
                continue
            merged = symbols[k] + symbols[k + 1]
            if merged in scores and (best is None or scores[merged] > best[0]):
                best = (scores[merged], k)
        if best is None:
            return symbols
        k = best[1]
        symbols[k:k + 2] = [symbols[k] + symbols[k + 1]]
        locked[k:k + 2] = [False]
