"""Models: BPE, WordPiece, WordLevel and Unigram, as in ``tokenizers.models``."""

from ._base import Model
from .wordlevel import WordLevel
from .wordpiece import WordPiece
from .bpe import BPE
