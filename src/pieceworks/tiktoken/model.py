"""tiktoken's ``encoding_for_model`` (``tiktoken.model``): which encoding an OpenAI model uses."""

from __future__ import annotations

from ..errors import UnknownModelError
from .core import Encoding
from .registry import ENCODING_CONSTRUCTORS, get_encoding

__all__ = ["encoding_for_model", "encoding_name_for_model", "MODEL_TO_ENCODING", "MODEL_PREFIX_TO_ENCODING"]

# Which encoding OpenAI's models use, as tiktoken 0.14 maps them: whole names first, then
# name beginnings (so a dated or fine-tuned variant finds its family's encoding).
_MODEL_ENCODINGS = {
    "o200k_base": ("gpt-5", "gpt-4.1", "gpt-4o", "o1", "o3", "o4-mini"),
    "cl100k_base": ("gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
                    "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"),
    "p50k_base": ("text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001",
                  "code-cushman-002", "code-cushman-001", "davinci-codex", "cushman-codex"),
    "p50k_edit": ("text-davinci-edit-001", "code-davinci-edit-001"),
    "r50k_base": ("text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001", "davinci", "curie",
                  "babbage", "ada", *(f"text-similarity-{m}-001" for m in ("davinci", "curie", "babbage", "ada")),
                  *(f"text-search-{m}-doc-001" for m in ("davinci", "curie", "babbage", "ada")),
                  "code-search-babbage-code-001", "code-search-ada-code-001"),
    "gpt2": ("gpt2", "gpt-2"),
}
#: Model name -> encoding name, and model name beginning -> encoding name (looked at in this
#: order: "ft:gpt-4o" before "ft:gpt-4"), as tiktoken's public dicts: an entry added to either
#: is seen by :func:`encoding_name_for_model`.
MODEL_TO_ENCODING = {model: name for name, models in _MODEL_ENCODINGS.items() for model in models}
MODEL_PREFIX_TO_ENCODING = {
    **dict.fromkeys(("o1-", "o3-", "o4-mini-", "gpt-5", "gpt-4.5-", "gpt-4.1-", "chatgpt-4o-", "gpt-4o-"),
                    "o200k_base"),
    **dict.fromkeys(("gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-"), "cl100k_base"),
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": "o200k_base",
    **dict.fromkeys(("ft:gpt-4", "ft:gpt-3.5-turbo", "ft:davinci-002", "ft:babbage-002"), "cl100k_base"),
}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding an OpenAI model uses, as tiktoken says it.

    >>> encoding_name_for_model("gpt-4o-2024-08-06"), encoding_name_for_model("text-davinci-003")
    ('o200k_base', 'p50k_base')

    An unknown name raises :class:`~pieceworks.errors.UnknownModelError` (a
    ``KeyError``, like tiktoken's).
    """
    found = MODEL_TO_ENCODING.get(model_name)
    if found is not None:
        return found
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise UnknownModelError(f"no known encoding for the model {model_name!r}",
                            fix="call get_encoding() with the encoding's name (one of "
                                f"{', '.join(ENCODING_CONSTRUCTORS)})")


def encoding_for_model(model_name: str) -> Encoding:
    """``get_encoding(encoding_name_for_model(model_name))``: the encoding an OpenAI model uses."""
    return get_encoding(encoding_name_for_model(model_name))
