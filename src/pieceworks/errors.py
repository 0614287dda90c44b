"""One exception hierarchy for pieceworks, with messages that say the fix.

Every error a user can cause (a bad file, a wrong option, an unknown id)
raises a subclass of :class:`PieceworksError`. Each message says *what* was
wrong, *where* (file, line, field, position) and *what to do*:

>>> raise TokenizerFileError("tok.json", "missing field 'model'",
...                          field="model", fix="save it again with Tokenizer.save()")
Traceback (most recent call last):
  ...
pieceworks.errors.TokenizerFileError: tok.json: field 'model': missing field 'model'. Fix: save it again with Tokenizer.save()

The classes also inherit the built-in exception a Python user would expect
(``ValueError``, ``TypeError``, ``KeyError``, ``OSError``), so code written for
Hugging Face ``tokenizers`` that catches those keeps working.
"""

from __future__ import annotations

__all__ = [
    "PieceworksError",
    "ConfigError",
    "InputTypeError",
    "FileFormatError",
    "TokenizerFileError",
    "UnknownComponentError",
    "UnknownIdError",
    "OutOfRangeError",
    "UnknownTokenError",
    "UnknownModelError",
    "TrainingError",
    "DecodeError",
    "SpecialTokenError",
    "FileWriteError",
    "NotSerializableError",
]


class PieceworksError(Exception):
    """Base class of every error pieceworks raises on purpose."""

    def __init__(self, message: str, *, fix: str | None = None):
        self.message = message
        self.fix = fix
        text = message if fix is None else f"{message}. Fix: {fix}"
        super().__init__(text)


class ConfigError(PieceworksError, ValueError):
    """An option or argument has a value that cannot work (vocab_size=-1, ...)."""


class InputTypeError(PieceworksError, TypeError):
    """An argument has the wrong Python type (bytes where str is needed, ...)."""


class FileFormatError(PieceworksError, ValueError):
    """A file could not be parsed: names the file, the line or field, and the fix."""

    def __init__(self, path, problem: str, *, line: int | None = None,
                 field: str | None = None, fix: str | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        where = self.path or "<string>"
        if line is not None:
            where += f":{line}"
        if field is not None:
            where += f": field '{field}'"
        super().__init__(f"{where}: {problem}", fix=fix)


class TokenizerFileError(FileFormatError):
    """A tokenizer.json (or a string of it) is missing, truncated or malformed."""

    def __init__(self, path, problem: str, *, field: str | None = None,
                 line: int | None = None, fix: str | None = None):
        super().__init__(path, problem, line=line, field=field, fix=fix)


class UnknownComponentError(TokenizerFileError):
    """A component ``type`` that pieceworks does not know."""


class UnknownIdError(PieceworksError, IndexError):
    """A token id outside the vocabulary."""


class OutOfRangeError(PieceworksError, OverflowError):
    """An id or index below 0 (or, where ids are 32-bit, past 2**32 - 1): an OverflowError, as
    Hugging Face and tiktoken raise, not a look-up from the end."""


class UnknownTokenError(PieceworksError, KeyError):
    """A token that the vocabulary lacks, where one is required."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class UnknownModelError(PieceworksError, KeyError):
    """A model name that no known encoding belongs to (``tiktoken.encoding_for_model``)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class TrainingError(PieceworksError, ValueError):
    """Training cannot proceed (empty corpus, impossible vocab size, ...)."""


class DecodeError(PieceworksError, ValueError):
    """Ids that do not decode under ``errors="strict"``."""


class SpecialTokenError(PieceworksError, ValueError):
    """Special-token text in input where the caller did not allow it."""


class FileWriteError(PieceworksError, OSError):
    """A file could not be written; the previous file, if any, is intact."""


class NotSerializableError(PieceworksError, ValueError):
    """A component that is Python code (``PreTokenizer.custom(...)``, ...) has no tokenizer.json form."""
