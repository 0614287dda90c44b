"""The default corpus shipped inside pieceworks.

``pieceworks train`` with no corpus argument learns from this text: about
3.8 MB of freely licensed prose and messages in some 30 scripts (Latin,
Cyrillic, Greek, Arabic, Hebrew, Devanagari and other Indic scripts, Thai,
Myanmar, Khmer, Georgian, Armenian, Ethiopic, Hangul, Japanese, Chinese,
emoji, ...), stored xz-compressed as ``data/corpus.txt.xz``. ``data/CORPUS.md``
states each part's source and licence; ``tools/build_corpus.py`` rebuilds it.

>>> lines = list(iter_default_corpus())
>>> len(lines) > 10_000, lines[0].endswith("\\n")
(True, True)
"""

from __future__ import annotations

import functools
import lzma
from importlib import resources
from pathlib import Path
from typing import Iterator

__all__ = ["default_corpus_path", "default_corpus_text", "iter_default_corpus"]

_CORPUS_NAME = "corpus.txt.xz"


def default_corpus_path() -> Path:
    """The path of the compressed default corpus inside the installed package.

    >>> default_corpus_path().name
    'corpus.txt.xz'
    """
    return Path(str(resources.files("pieceworks") / "data" / _CORPUS_NAME))


@functools.lru_cache(maxsize=1)
def default_corpus_text() -> str:
    """The whole default corpus as one string (decompressed once, then cached).

    >>> "Universal Declaration of Human Rights" in default_corpus_text()
    True
    """
    return lzma.decompress(default_corpus_path().read_bytes()).decode("utf-8")


def iter_default_corpus() -> Iterator[str]:
    """The default corpus line by line, each line keeping its ``"\\n"``.

    Lines keep their newline as lines read from a file do, so training on
    the embedded corpus and on the same text saved to a file give the same
    tokenizer.

    >>> next(iter_default_corpus())
    'Universal Declaration of Human Rights\\n'
    """
    text = default_corpus_text()
    # Split on "\n" only, as reading a file does (str.splitlines would also
    # split on U+2028, U+0085, ... which the corpus may contain).
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end
