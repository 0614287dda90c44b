"""The Trainer interface: learn a model's vocabulary from word counts.

Trainers never read text: :func:`pieceworks.trainers.counts.count_words`
turns texts into a ``{piece: count}`` table (after the tokenizer's
normalizer and pre-tokenizer), and :meth:`Trainer.train` fills a model
from it. So training from files = counting + ``train``, and counts made
elsewhere (another machine, a cluster) train the same model.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..added_vocabulary import AddedToken
from ..errors import ConfigError, InputTypeError

__all__ = ["Trainer", "SpecialTokensOption", "InitialAlphabetOption", "as_trainer_special"]


class Trainer:
    """Base class: ``train(model, counts)`` fills ``model`` in place.

    Returns the special tokens the tokenizer must register as added tokens.
    """

    #: The model class this trainer fills (checked by Tokenizer.train).
    model_type: type | None = None
    show_progress: bool = True
    special_tokens: list
    #: Bytes the counting step may hold before it spills to disk (None: no
    #: limit); set with ``memory_limit="2GB"`` (see trainers.counts).
    memory_limit: int | None = None
    #: "indicatif" (bars, if show_progress), "json" or "silent" (see pieceworks.progress).
    progress_format: str = "indicatif"

    def train(self, model, counts: Mapping[str, int]) -> list:
        raise NotImplementedError

    def progress_setting(self) -> bool | str:
        """What this trainer's progress bars show (``progress_bar``'s ``enabled``).

        >>> Trainer().progress_setting(), Trainer().show_progress
        (True, True)
        """
        return self.show_progress if self.progress_format == "indicatif" else self.progress_format


def int_option(name: str, value, low: int = 0) -> int:
    """A trainer's integer option: an int (not a bool) of at least ``low``. A value of another
    type is a TypeError, as in Hugging Face (``vocab_size=None`` too); a smaller one a ValueError.

    >>> int_option("vocab_size", 8000)
    8000
    >>> int_option("vocab_size", "8000")
    Traceback (most recent call last):
      ...
    pieceworks.errors.InputTypeError: vocab_size must be an integer, got str. Fix: pass an int, e.g. vocab_size=8000
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputTypeError(f"{name} must be an integer, got {type(value).__name__}",
                             fix=f"pass an int, e.g. {name}=8000" if name == "vocab_size" else f"pass an int >= {low}")
    if value < low:
        raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}", fix=f"pass {name} >= {low}")
    return value


def memory_limit_option(value) -> int | None:
    """A trainer's ``memory_limit`` in bytes (``"300MB"``, ``"2GiB"``, an int, or None).

    >>> memory_limit_option("2GB")
    2000000000
    """
    from .counts import parse_memory_limit

    return parse_memory_limit(value)


def as_trainer_special(token) -> AddedToken:
    """A trainer's special token: always ``special=True`` (Hugging Face forces it)."""
    if isinstance(token, str):
        return AddedToken(token, special=True)
    if isinstance(token, AddedToken):
        return AddedToken(token.content, single_word=token.single_word, lstrip=token.lstrip,
                          rstrip=token.rstrip, normalized=token.normalized if token.special else False,
                          special=True)
    raise InputTypeError(f"special tokens must be str or AddedToken, got {type(token).__name__}",
                         fix="pass token strings or pieceworks.AddedToken objects")


class SpecialTokensOption:
    """``special_tokens`` converted as it is stored, as Hugging Face's setters do."""

    @property
    def special_tokens(self) -> list[AddedToken]:
        return list(self._special_tokens)

    @special_tokens.setter
    def special_tokens(self, tokens: Iterable) -> None:
        self._special_tokens = [as_trainer_special(t) for t in tokens or ()]


class InitialAlphabetOption:
    """``initial_alphabet``: the first char of each string, sorted (empty strings ignored), as Hugging Face."""

    @property
    def initial_alphabet(self) -> list[str]:
        return list(self._initial_alphabet)

    @initial_alphabet.setter
    def initial_alphabet(self, chars: Iterable[str]) -> None:
        if isinstance(chars, str):
            raise InputTypeError("initial_alphabet must be a list of strings, got a str",
                                 fix='write list("abc") or ["a", "b", "c"]')
        firsts = set()
        for s in chars or ():
            if not isinstance(s, str):
                raise InputTypeError(f"initial_alphabet entries must be str, got {type(s).__name__}")
            if s:
                firsts.add(s[0])
        self._initial_alphabet = sorted(firsts)
