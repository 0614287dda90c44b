"""Unigram training: SentencePiece's algorithm, behind two entry points.

The algorithm (Kudo 2018; SentencePiece's ``unigram_model_trainer.cc``):
seed the vocabulary with every char and the most frequent repeated
substrings (a suffix array), run EM (the E-step's expected counts from
forward-backward over each word's lattice; the M-step's Bayesian update
``digamma(count) − digamma(total)``, dropping pieces expected < 0.5 times),
prune the pieces whose loss of likelihood is smallest down to
``shrinking_factor`` of the vocabulary, and repeat until the vocabulary is
at most 1.1 × ``vocab_size``; finally keep the best ``vocab_size`` pieces
plus every required char. The loops are the Cython kernels in
:mod:`pieceworks._kernels.unigram_train` (two threads for the E-step and
the Viterbi counts by default).

Two entry points, two behaviours:

* :func:`train_spm_unigram` (used by ``SentencePieceTrainer`` with
  ``--model_type=unigram``) follows ``spm_train``: SentencePiece's sentence
  loading, ``character_coverage``, split rules, meta pieces and ``▁``.
* :class:`UnigramTrainer` has Hugging Face's signature and fills a
  :class:`~pieceworks.models.Unigram` from word counts
  (``Tokenizer.train_from_iterator``). Like Hugging Face's trainer it takes
  the pre-tokenized words as sentences, keeps every char it sees
  (``initial_alphabet`` added), puts the special tokens first and the
  ``unk_token`` among them, and stops at ``vocab_size`` pieces including
  them. It uses SentencePiece's seeds (right-maximal repeats scored
  ``freq × length``; Hugging Face's own suffix array counts the same
  substrings), SentencePiece's pruning and SentencePiece's E-step; Hugging
  Face differs in details (its seeds skip pieces over ``max_piece_length``
  *bytes*, its digamma update and pruning differ in rounding), so the
  pieces are close to, not identical with, Hugging Face's.

>>> from pieceworks.models import Unigram
>>> model = Unigram()
>>> trainer = UnigramTrainer(vocab_size=12, show_progress=False, unk_token="<unk>", special_tokens=["<unk>"])
>>> trainer.train(model, {"low": 5, "lower": 2, "newest": 6, "widest": 3})
[AddedToken("<unk>", rstrip=False, lstrip=False, single_word=False, normalized=False, special=True)]
>>> model.get_vocab_size(), model.id_to_token(0)
(12, '<unk>')
"""

from __future__ import annotations

import math
import os
import threading
from array import array
from itertools import accumulate
from typing import Iterable, Mapping

from ..errors import ConfigError, InputTypeError, TrainingError
from ..models.unigram import first_with_surrogate
from ._base import SpecialTokensOption, Trainer, int_option
from .counts import check_training_counts

# mine_seeds' sort comparator reads the text from a module global of the kernel, and
# the GIL is released while it sorts: two trainings on two threads must take turns.
_MINING = threading.Lock()

__all__ = ["UnigramTrainer", "train_spm_unigram", "em_train"]

_DEFAULT_THREADS = 2
_MIN_SCORE_PENALTY_DELTA = 0.0001


def _f32(x: float) -> float:
    import struct

    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def seed_pieces(sentences: list[tuple[str, int]], rules: tuple | None, seed_size: int, n_threads: int,
                excluded_chars: str = "", extra_chars: Iterable[str] = ()) -> list:
    """Every char (by count) then the best repeated substrings, scored by log share: the EM's start.

    Returns ``[data, ends, scores]``: the pieces' UTF-8 one after another,
    where each ends, and their scores (a million seeds as str and float
    objects would take several times the memory), in a list that
    :func:`em_train` empties once the model holds them. ``extra_chars`` not
    in the text come last, 10 below the lowest score. ``rules`` =
    (max_piece_length, split_by_whitespace, treat_whitespace_as_suffix,
    allow_whitespace_only_pieces, split_by_unicode_script, split_by_number,
    split_digits), SentencePiece's; ``(max_piece_length, None)``: Hugging
    Face's, where any substring up to that length is a piece (its
    ``is_valid_sentencepiece`` checks the length alone).

    >>> data, ends, scores = seed_pieces([("abab", 1), ("ab", 1)], (16, False, False, False, False, True, False), 10, 1)
    >>> # a, b (by count), then "ab", the one repeat that is a suffix tree node
    >>> data.decode(), list(ends)
    ('abab', [1, 2, 4])
    """
    from .._kernels.unigram_train import encode_codes, mine_seeds, substrings
    from .spm import char_counts, char_tables

    codes, alphabet = encode_codes([t for t, _ in sentences])
    kinds, scripts, digits = char_tables(alphabet)
    counts = char_counts(sentences)
    for ch in excluded_chars:
        counts.pop(ch, None)
    if rules[1] is None:
        # Only the boundary between sentences is kept out of a piece; no rule for ▁, spaces, scripts or digits.
        kinds = bytes(2 if cp == 0 else 0 for cp in alphabet)
        rules = (rules[0], False, False, False, False, False, False)
    (max_len, split_ws, suffix, ws_only, split_script, split_number, split_digits) = rules
    with _MINING:
        offsets, lengths, freqs = mine_seeds(codes, kinds, scripts, digits, max_len, seed_size, split_ws, suffix,
                                             ws_only, split_script, split_number, split_digits, n_threads)
    # Mined substrings are two chars or more: none repeats a char seed.
    mined, mined_ends = substrings(codes, alphabet, offsets, lengths)
    del codes, offsets
    chars = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    head = "".join(ch for ch, _ in chars).encode("utf-8")
    ends = array("q", accumulate(len(ch.encode("utf-8")) for ch, _ in chars))
    ends.extend(end + len(head) for end in mined_ends)
    logsum = math.log(sum(n for _, n in chars) + sum(f * n for f, n in zip(freqs, lengths)))
    scores = array("d", (math.log(n) - logsum for _, n in chars))
    scores.extend(math.log(f * n) - logsum for f, n in zip(freqs, lengths))
    extra = [ch for ch in dict.fromkeys(extra_chars) if ch not in counts]
    if extra:
        low = min(scores) - 10.0
        for ch in extra:
            ends.append(ends[-1] + len(ch.encode("utf-8")))
            scores.append(low)
    return [head + mined + "".join(extra).encode("utf-8"), ends, scores]


def em_train(words: Mapping[str, int], seeds: list, vocab_size: int, shrinking_factor: float,
             n_sub_iterations: int, n_threads: int, progress=None):
    """EM and pruning from ``seeds`` until at most 1.1 × ``vocab_size`` pieces remain; returns the kernel's model.

    ``seeds`` (:func:`seed_pieces`' ``[data, ends, scores]``) is emptied once
    the model holds them: they can be the largest thing alive, and need not
    outlive the first step.
    """
    from .._kernels.unigram_train import UnigramEM

    em = UnigramEM(list(words), list(words.values()), n_threads)
    em.set_pieces_utf8(*seeds)
    seeds.clear()
    desired = int(vocab_size * 1.1)
    while True:
        for _ in range(n_sub_iterations):
            em.em_iteration()
        if progress is not None:
            progress(em.n_alive)
        if em.n_alive <= desired:
            break
        before = em.n_alive
        em.prune(desired, shrinking_factor)
        if em.n_alive >= before:
            break       # every piece left has no alternative (more chars than room): finalize cuts
        if em.n_alive * 4 < em.n_pieces:
            # Most of the trie is dead: rebuild it from the live pieces.
            live = em.pieces()
            em.set_pieces([p for p, _ in live], [s for _, s in live])
    return em


def finalize(live: list[tuple[str, float]], required: list[tuple[str, int]], size: int) -> list[tuple[str, float]]:
    """SentencePiece's FinalizeSentencePieces: every required char, then the best pieces up to ``size``.

    A required char the model lost scores the lowest score plus a penalty
    growing by 0.0001 (rarer chars lower); the result is sorted by score
    (descending), then piece.
    """
    scores = dict(live)
    min_score = min(scores.values()) if scores else 0.0
    final: dict[str, float] = {}
    penalty = 0.0
    for ch, _ in required:
        if ch in scores:
            final[ch] = scores[ch]
        else:
            final[ch] = _f32(min_score + penalty)
            penalty = _f32(penalty + _MIN_SCORE_PENALTY_DELTA)
    for piece, score in sorted(live, key=lambda ps: (-ps[1], ps[0])):
        if piece in final:
            continue
        if len(final) == size:
            break
        final[piece] = score
    return sorted(final.items(), key=lambda ps: (-ps[1], ps[0]))


def train_spm_unigram(loaded, spec, n_threads: int = _DEFAULT_THREADS, progress=None) -> list[tuple[str, float]]:
    """The pieces ``spm_train --model_type=unigram`` would choose, with their scores (meta pieces aside)."""
    from .spm import UNK_CHAR, _rules, count_words

    sentences = loaded.sentences
    if spec.pretokenization_delimiter:
        delim = spec.pretokenization_delimiter
        seed_input = [(part, f) for t, f in sentences for part in t.split(delim)]
        sentences = [(t.replace(delim, ""), f) for t, f in sentences]
        loaded.sentences = sentences
    else:
        seed_input = sentences
    seeds = seed_pieces(seed_input, _rules(spec), spec.seed_sentencepiece_size, n_threads, UNK_CHAR)
    words = count_words(loaded, spec)
    em = em_train(words, seeds, spec.vocab_size, spec.shrinking_factor, spec.num_sub_iterations, n_threads,
                  progress)
    size = spec.vocab_size - len(loaded.meta)
    return finalize(em.pieces(), loaded.required_sorted(), size)


class UnigramTrainer(SpecialTokensOption, Trainer):
    """Hugging Face's ``UnigramTrainer`` options; SentencePiece's algorithm (see the module docstring)."""

    def __init__(self, vocab_size: int = 8000, show_progress: bool = True, special_tokens: Iterable = (),
                 initial_alphabet: Iterable[str] = (), shrinking_factor: float = 0.75,
                 unk_token: str | None = None, max_piece_length: int = 16, n_sub_iterations: int = 2,
                 *, seed_size: int = 1_000_000, n_threads: int | None = None):
        from ..models.unigram import Unigram

        self.model_type = Unigram
        self.vocab_size = int_option("vocab_size", vocab_size, 1)
        self.show_progress = bool(show_progress)
        self.special_tokens = special_tokens
        self.initial_alphabet = initial_alphabet
        if isinstance(shrinking_factor, bool) or not isinstance(shrinking_factor, (int, float)) or \
                not 0.0 < shrinking_factor < 1.0:
            raise ConfigError(f"shrinking_factor must be in (0, 1), got {shrinking_factor!r}",
                              fix="use e.g. shrinking_factor=0.75")
        self.shrinking_factor = float(shrinking_factor)
        if unk_token is not None and not isinstance(unk_token, str):
            raise InputTypeError(f"unk_token must be a str or None, got {type(unk_token).__name__}")
        self.unk_token = unk_token
        self.max_piece_length = int_option("max_piece_length", max_piece_length, 1)
        self.n_sub_iterations = int_option("n_sub_iterations", n_sub_iterations, 1)
        self.seed_size = int_option("seed_size", seed_size, 1)
        self.n_threads = n_threads if n_threads is not None else min(_DEFAULT_THREADS, os.cpu_count() or 1)

    @property
    def initial_alphabet(self) -> list[str]:
        return list(self._initial_alphabet)

    @initial_alphabet.setter
    def initial_alphabet(self, chars: Iterable[str]) -> None:
        out = []
        for c in chars or ():
            if not isinstance(c, str) or not c:
                raise InputTypeError(f"initial_alphabet entries must be non-empty str, got {c!r}")
            if "\ud800" <= c[0] <= "\udfff":
                raise ConfigError(f"initial_alphabet entry {c!r} starts with a lone surrogate, which a Unigram "
                                  "model (UTF-8 pieces) cannot hold", fix="leave it out")
            if c[0] not in out:
                out.append(c[0])  # Hugging Face keeps the first char of each entry
        self._initial_alphabet = out

    def train(self, model, counts: Mapping[str, int]) -> list:
        """Fill ``model`` (a Unigram) from ``{word: count}``; returns the special tokens."""
        from ..progress import progress_bar

        check_training_counts(counts, "UnigramTrainer")
        words = {w: n for w, n in counts.items() if w and n > 0}
        bad = first_with_surrogate(list(words))
        if bad is not None:
            raise TrainingError(f"the word {list(words)[bad]!r} holds a lone surrogate, which a Unigram model "
                                "(UTF-8 pieces) cannot hold", fix="decode the training text with errors='replace'")
        specials = [t.content for t in self._special_tokens]
        if self.unk_token is not None and self.unk_token not in specials:
            specials.insert(0, self.unk_token)     # (first, as in Hugging Face)
        room = self.vocab_size - len(specials)
        if room <= 0:
            raise TrainingError(f"vocab_size {self.vocab_size} leaves no room beside {len(specials)} special tokens",
                                fix="increase vocab_size")
        sentences = list(words.items())
        pieces: list[tuple[str, float]] = []
        if sentences:
            from .spm import char_counts

            counted = {c: 0 for c in self._initial_alphabet}
            counted.update(char_counts(sentences))
            if len(counted) > self.vocab_size:
                # Every char is kept (nothing else can spell it), as in Hugging Face's trainer.
                raise TrainingError(f"the vocabulary is not large enough to contain all chars: {len(counted)} "
                                    f"chars, vocab_size {self.vocab_size}",
                                    fix=f"use vocab_size >= {len(counted) + len(specials)}")
            rules = (self.max_piece_length, None)     # Hugging Face's: the length alone
            seeds = seed_pieces(sentences, rules, self.seed_size, self.n_threads,
                                extra_chars=self._initial_alphabet)
            with progress_bar(None, "EM training", unit="rounds", enabled=self.show_progress) as bar:
                em = em_train(words, seeds, room, self.shrinking_factor, self.n_sub_iterations, self.n_threads,
                              lambda n: bar.update(1))
            chars = sorted(counted, key=lambda c: (-counted[c], c))
            pieces = finalize(em.pieces(), [(c, 0) for c in chars], room)
            pieces = [(p, s) for p, s in pieces if p not in specials]
        vocab = [(t, 0.0) for t in specials] + pieces
        unk_id = specials.index(self.unk_token) if self.unk_token is not None else None
        _fill_model(model, vocab, unk_id)
        return self.special_tokens

    def __repr__(self) -> str:
        return (f"UnigramTrainer(vocab_size={self.vocab_size}, show_progress={self.show_progress}, "
                f"special_tokens={[t.content for t in self._special_tokens]}, "
                f"initial_alphabet={self._initial_alphabet}, shrinking_factor={self.shrinking_factor}, "
                f"unk_token={self.unk_token!r}, max_piece_length={self.max_piece_length}, "
                f"n_sub_iterations={self.n_sub_iterations})")


def _fill_model(model, vocab: list[tuple[str, float]], unk_id: int | None) -> None:
    """Put a trained vocabulary into an existing Unigram (in place, keeping its sampling options)."""
    from ..models.unigram import Unigram

    alpha, nbest = model.alpha, model.nbest_size
    fresh = Unigram(vocab, unk_id=unk_id, byte_fallback=model.byte_fallback)
    model.__dict__.update(fresh.__dict__)
    model.alpha, model.nbest_size = alpha, nbest
