import enum

def match_spans(search: int, regex: int, region: int, data: bytes) -> list[tuple[int, int]] | int: ...

class Behavior(enum.IntEnum):
    CUT_ISOLATED = 0
    CUT_MERGED_WITH_PREVIOUS = 1
    CUT_MERGED_WITH_NEXT = 2
    CUT_CONTIGUOUS = 3

class Cutter:
    regexes: tuple
    def __init__(self, search: int, stages: list[tuple[object, int, bool]]) -> None: ...
    def piece_ends(self, text: str, region: int) -> list[int] | int: ...
