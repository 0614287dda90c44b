"""Trainers: learn a model's vocabulary from counted pieces, as in ``tokenizers.trainers``."""

from ._base import Trainer
from .wordlevel import WordLevelTrainer
from .wordpiece import WordPieceTrainer
from .bpe import BpeTrainer
