from collections.abc import Callable

class IdBytes:
    def __init__(self, size: int, fill: Callable[[int], tuple | None], fallback: bool = False,
                 first: bool = False) -> None: ...
    def join(self, ids: object, skip_special: bool, strict: bool = False) -> bytes | None: ...
    def text(self, ids: object, skip_special: bool) -> str | None: ...

class StreamWindow:
    ids: list[int]
    prefix: str
    prefix_index: int
    skip_special_tokens: bool
    def step(self, tokenizer: object, id: int | list[int]) -> str | None: ...
    def _step_one(self, tokenizer: object, tid: int) -> object: ...

LONG_WAY: object
