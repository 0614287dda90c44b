from typing import Callable

class SingleText:
    epoch: int
    usable: bool
    def __init__(self, epoch: int, encoder: Callable | None = None, strings: object = None,
                 encoding_type: type | None = None, finder: object = None, frames: tuple = (None, None),
                 truncations: tuple = (None, None), default_split: bool = False, split_matters: bool = False,
                 pads: bool = False) -> None: ...

def tokenizer_encode(self, sequence, pair=None, is_pretokenized: bool = False, add_special_tokens: bool = True,
                     split_special_tokens: bool | None = None): ...

def holds(text: str, part: str) -> bool: ...
def only_str(items) -> bool: ...
