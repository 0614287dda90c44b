from typing import Any

class Token:
    id: Any
    value: Any
    offsets: Any
    __match_args__: tuple[str, str, str]
    def __init__(self, id: int, value: str, offsets: tuple[int, int]) -> None: ...
    def as_tuple(self) -> tuple[int, str, tuple[int, int]]: ...
