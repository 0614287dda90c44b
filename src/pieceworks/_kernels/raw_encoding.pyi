def pack(ids: list[int], starts: list[int], ends: list[int], words: list[int]) -> bytes: ...
def id_list(raw: bytes, n: int, before: list[int] | None = None, after: list[int] | None = None) -> list[int]: ...
def token_list(raw: bytes, n: int, strings: list[str] | dict[int, str], before: list[str] | None = None,
               after: list[str] | None = None) -> list[str]: ...
def offset_list(raw: bytes, n: int, shift: int, nb: int = 0, na: int = 0) -> list[tuple[int, int]]: ...
def word_list(raw: bytes, n: int, word_index: int, nb: int = 0, na: int = 0) -> list[int | None]: ...
def ids_bytes(raw: bytes, n: int) -> bytes: ...
def untrack(obj: object) -> None: ...
def join(parts: list[tuple[bytes, int, int, int]], word_each: bool = False) -> tuple[bytes, int]: ...
def join_around(found: list[tuple[int, int, int]], results: list[tuple], length: int) -> tuple[bytes, int]: ...

class Basis:
    strings: object
    frame: object
    word_index: int | None
    spans_from: object
    source: object

class Lists:
    type_ids: list[int] | None
    tokens: list[str] | None
    words: list[int | None] | None
    offsets: list[tuple[int, int]] | None
    special_tokens_mask: list[int] | None
    attention_mask: list[int] | None
    overflowing: list | None
    ranges: dict | None

class EncodingBase:
    _ids: list[int] | None
    _basis: Basis | None
    _lists: Lists | None
    _n: int
    _raw: bytes | None              # (read-only)
    _frame: object                  # (read-only)
    _spans_from: object             # (read-only)
    _source: object                 # (read-only)
    _overflowing: list | None       # (read-only)
    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    words: list[int | None]
    attention_mask: list[int]
    def _never_read(self) -> bool: ...
    def _ready_spans(self) -> None: ...

def basis_for(strings: object, frame: object, word_index: int | None, spans_from: object, source: object) -> Basis: ...
def lazy_copy(e: EncodingBase) -> EncodingBase: ...

def make_raw(cls: type, raw: bytes, n: int, strings: object, word_index: int | None, frame: object) -> EncodingBase: ...
def make_with_ids(cls: type, ids: list[int], n: int, strings: object, frame: object, spans_from: object,
                  source: object, at: int) -> EncodingBase: ...
