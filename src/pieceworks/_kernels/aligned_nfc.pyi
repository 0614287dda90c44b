from array import array
from typing import Callable

INNER: int
CHANGING: int

def splice_segments(source: str, start: int, end: int, kinds: bytes, edits: dict[str, tuple[str, bytes] | None],
                    edit_of: Callable[[str], tuple[str, bytes] | None], parts: list[str], seg_starts: array,
                    seg_shift: array, seg_map: array, map_starts: array, map_ends: array, length: int) -> int: ...

class FormTables:
    def __init__(self, classes: bytes, decompositions: dict[int, str], compositions: dict[str, str],
                 composing: bool) -> None: ...
    def edit(self, segment: str) -> tuple[str, bytes]: ...
    def set_kinds(self, kinds: bytes) -> None: ...
    def aligned(self, text: str) -> tuple[str, bytes]: ...

RULE_START: int

def splice_clusters(source: str, start: int, end: int, table: bytes,
                    edits: dict[str, tuple[str, bytes, bool, bool] | None],
                    edit_of: Callable[[str], tuple[str, bytes, bool, bool] | None], parts: list[str], seg_starts: array,
                    seg_shift: array, seg_map: array, map_starts: array, map_ends: array, length: int) -> int: ...

def cluster_ends(text: str, table: bytes) -> list[int]: ...
