"""ParityBpeTrainer: BPE that keeps tokenization fair across languages, as Hugging Face's.

Hugging Face ``tokenizers`` 0.23 added this trainer (parity-aware BPE,
Foroutan et al. 2025). Unlike the other trainers it is not passed to
``Tokenizer.train``: its own :meth:`ParityBpeTrainer.train_from_iterator`
takes one iterator of texts per language (and optionally one dev iterator
per language), counts each through the tokenizer's normalizer and
pre-tokenizer, and replaces the tokenizer's model by the trained BPE. The
algorithm and its tie rules are in :mod:`pieceworks.reference.parity_bpe`.

Same merges as Hugging Face's on the same data and options, except where it
chooses at random (chars of equal count at the ``limit_alphabet`` cut: the
higher code point is dropped first here, as in
:func:`~pieceworks.trainers.bpe.compute_alphabet`)
or never ends (see :mod:`pieceworks.reference.parity_bpe`). The ids of the
special tokens, the alphabet and the merged tokens are its ids too; with a
prefix or suffix, the marked chars (``##b``) get their ids in the order the
words first show them, where Hugging Face's follow a hash map's random order.

The merge loop is the Cython kernel :mod:`pieceworks._kernels.parity_train`
(C++ containers, no Python object per word or pair), which makes the same
merges as the readable :mod:`pieceworks.reference.parity_bpe`.

>>> from pieceworks import Tokenizer
>>> from pieceworks.models import BPE
>>> tok = Tokenizer(BPE())
>>> ParityBpeTrainer(num_merges=4, min_frequency=1, show_progress=False).train_from_iterator(
...     tok, [["aabb"] * 10, ["ccdd"] * 10])
>>> tok.model.get_merges()
[('b', 'b'), ('d', 'd'), ('a', 'bb'), ('c', 'dd')]
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from ..added_vocabulary import AddedToken
from ..errors import ConfigError, InputTypeError
from ..progress import progress_bar
from ._base import InitialAlphabetOption, SpecialTokensOption, int_option
from .bpe import _model_merges, initial_vocab, set_word_options

__all__ = ["ParityBpeTrainer"]


class ParityBpeTrainer(SpecialTokensOption, InitialAlphabetOption):
    """Options and defaults as in Hugging Face's ``ParityBpeTrainer``; ``num_merges`` replaces
    ``vocab_size``. See the module docstring. Not a :class:`~pieceworks.trainers.Trainer` (nor is
    Hugging Face's): ``Tokenizer.train`` takes one corpus, this trainer one per language."""

    def __init__(self, num_merges: int = 32000, variant: str = "base", min_frequency: int = 0,
                 ratio: Sequence[float] | None = None, global_merges: int = 0, window_size: int = 100,
                 alpha: float = 2.0, total_symbols: bool = False, special_tokens: Iterable = (),
                 show_progress: bool = True, limit_alphabet: int | None = None,
                 initial_alphabet: Iterable[str] = (), continuing_subword_prefix: str | None = None,
                 end_of_word_suffix: str | None = None, max_token_length: int | None = None):
        from ..reference.parity_bpe import VARIANTS

        self.num_merges = int_option("num_merges", num_merges)
        if variant not in VARIANTS:
            raise ConfigError(f"unknown variant {variant!r}", fix='use "base" or "window"')
        self.variant = variant
        self.min_frequency = int_option("min_frequency", min_frequency)
        self.ratio = None if ratio is None else [float(r) for r in ratio]
        self.global_merges = int_option("global_merges", global_merges)
        self.window_size = int_option("window_size", window_size)
        self.alpha = float(alpha)
        if variant == "window" and self.window_size == 0:
            raise ConfigError("window_size must be > 0 when variant is 'window'", fix="pass window_size=100")
        if variant == "window" and not (math.isfinite(self.alpha) and self.alpha > 0):
            raise ConfigError(f"alpha must be a positive finite number when variant is 'window', got {alpha!r}",
                              fix="pass alpha=2.0 (a language may take up to alpha / languages of the window)")
        self.total_symbols = bool(total_symbols)
        self.special_tokens = special_tokens
        self.show_progress = bool(show_progress)
        set_word_options(self, limit_alphabet, initial_alphabet, continuing_subword_prefix, end_of_word_suffix,
                         max_token_length)

    def train_from_iterator(self, tokenizer, train_iterators: Sequence, dev_iterators: Sequence | None = None,
                            ratio: Sequence[float] | None = None) -> None:
        """Train ``tokenizer`` on one iterator of texts (str, or lists of str) per language.

        ``dev_iterators`` (one per language, ideally the same sentences in
        each) drive which language is merged for next; without them,
        ``ratio`` (here, or the trainer's) gives each language's target
        compression; without either, the training texts' lengths do. The
        tokenizer's normalizer and pre-tokenizer split the texts, and its model
        becomes the trained BPE; the special tokens become added tokens.
        """
        from ..models.bpe import BPE
        from ..tokenizer import _flatten_texts
        from .counts import count_texts

        train_iterators, dev_iterators = list(train_iterators or ()), list(dev_iterators or ())
        if not train_iterators:
            raise ConfigError("train_iterators must not be empty", fix="pass one iterator of texts per language")
        if dev_iterators and len(dev_iterators) != len(train_iterators):
            raise ConfigError(f"dev_iterators has {len(dev_iterators)} iterators for {len(train_iterators)} "
                              f"languages", fix="pass one dev iterator per language, in the same order")
        # As Hugging Face: dev data beats ratio targets, and the call's ratio beats the trainer's.
        ratio = None if dev_iterators else (ratio if ratio is not None else self.ratio)

        def count(texts):
            return count_texts(_flatten_texts(texts), tokenizer.normalizer, tokenizer.pre_tokenizer)

        model = BPE()
        special = self.train_languages(model, [count(t) for t in train_iterators],
                                       [count(t) for t in dev_iterators], ratio)
        tokenizer.model = model
        tokenizer.add_special_tokens(special)

    def train_languages(self, model, languages: Sequence[Mapping[str, int]],
                        dev: Sequence[Mapping[str, int]] = (), ratio: Sequence[float] | None = None
                        ) -> list[AddedToken]:
        """Fill ``model`` (a BPE) from one ``{word: count}`` per language; return the special tokens."""
        from .._kernels.parity_train import learn_parity

        from ..models.bpe import BPE

        if not isinstance(model, BPE):
            raise InputTypeError(f"ParityBpeTrainer trains BPE models, got {type(model).__name__}",
                                 fix="pass a pieceworks.models.BPE")
        _check_ratio(ratio, len(languages))
        # (One pass over each Counts: its items are decoded as they are read.)
        languages = [words if type(words) is dict else dict(words.items()) for words in languages]
        dev = [words if type(words) is dict else dict(words.items()) for words in dev]
        everything: dict[str, int] = {}
        for words in (*languages, *dev):
            for word, n in words.items():
                everything[word] = everything.get(word, 0) + n
        tokens, ids = initial_vocab(self, everything)
        with progress_bar(self.num_merges, "Compute merges", unit="merges", enabled=self.show_progress) as bar:
            made, stuck = learn_parity(
                languages, dev, tokens, ids,
                self.continuing_subword_prefix, self.end_of_word_suffix, num_merges=self.num_merges,
                window=self.variant == "window", min_frequency=self.min_frequency, ratio=ratio,
                global_merges=self.global_merges, window_size=self.window_size, alpha=self.alpha,
                total_symbols=self.total_symbols, max_token_length=self.max_token_length,
                on_merge=lambda: bar.update(1))
        # (Tests read it: where it is not 0, Hugging Face's trainer would not have ended.)
        self._stuck_choices = stuck
        merges, merge_ids = _model_merges(made, tokens)
        model._set_trained(ids, merges, self.continuing_subword_prefix, self.end_of_word_suffix,
                           merge_ids=merge_ids)
        return self.special_tokens

    def __repr__(self) -> str:
        return (f'ParityBpeTrainer(num_merges={self.num_merges}, variant="{self.variant}", '
                f"min_frequency={self.min_frequency}, global_merges={self.global_merges}, "
                f"window_size={self.window_size}, alpha={self.alpha:g}, total_symbols={self.total_symbols})")


def _check_ratio(ratio: Sequence[float] | None, n_languages: int) -> None:
    if ratio is None:
        return
    if len(ratio) != n_languages:
        raise ConfigError(f"ratio has {len(ratio)} values for {n_languages} languages",
                          fix="give one target compression rate per language")
    for k, value in enumerate(ratio):
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(f"ratio[{k}] must be a positive finite number, got {value!r}",
                              fix="give each language's target compression rate, e.g. ratio=[1.0, 2.57]")
