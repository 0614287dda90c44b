"""Models: BPE, WordPiece, WordLevel and Unigram, as in ``tokenizers.models``."""

from ._base import Model
from .wordlevel import WordLevel
from .bpe import BPE
from .wordpiece import WordPiece
from .unigram import Unigram
