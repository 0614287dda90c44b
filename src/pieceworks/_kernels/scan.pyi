"""Type stubs for the pre-tokenizer scanners (scan.pyx)."""

import enum
from typing import Iterable, TypeVar

T = TypeVar("T")

Span = tuple[int, int]

class CharFlag(enum.IntEnum):
    FLAG_WHITESPACE = 1
    FLAG_WORD = 2
    FLAG_PUNCT = 4
    FLAG_NUMERIC = 8
    FLAG_LETTER = 16
    FLAG_NUMBER = 32

class RunAction(enum.IntEnum):
    ACTION_DROP = 0
    ACTION_ISOLATE = 1

FLAG_WHITESPACE: CharFlag
FLAG_WORD: CharFlag
FLAG_PUNCT: CharFlag
FLAG_NUMERIC: CharFlag
FLAG_LETTER: CharFlag
FLAG_NUMBER: CharFlag
ACTION_DROP: RunAction
ACTION_ISOLATE: RunAction

def actions_for(rules: Iterable[tuple[int, int]], default: int = 2) -> bytes: ...
def class_runs(text: str, actions: bytes) -> list[Span]: ...
def char_matches(text: str, mask: int) -> list[tuple[Span, bool]]: ...
def gpt2_spans(text: str) -> list[Span]: ...
def script_spans(text: str) -> list[Span]: ...
def repeat_per_utf8_byte(text: str, per_char: list[T]) -> list[T]: ...
def char_flags(ch: str) -> int: ...
def script_id(ch: str) -> int: ...
