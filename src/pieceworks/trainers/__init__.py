"""Trainers: learn a model's vocabulary from counted pieces, as in ``tokenizers.trainers``."""

from ._base import Trainer
from .wordlevel import WordLevelTrainer
from .bpe import BpeTrainer
from .parity_bpe import ParityBpeTrainer
from .wordpiece import WordPieceTrainer
from .unigram import UnigramTrainer
