def pack(ids: list[int], starts: list[int], ends: list[int], words: list[int]) -> bytes: ...
def id_list(raw: bytes, n: int, before: list[int] | None = None, after: list[int] | None = None) -> list[int]: ...
def token_list(raw: bytes, n: int, strings: list[str] | dict[int, str], before: list[str] | None = None,
               after: list[str] | None = None) -> list[str]: ...
def offset_list(raw: bytes, n: int, shift: int, nb: int = 0, na: int = 0) -> list[tuple[int, int]]: ...
def word_list(raw: bytes, n: int, word_index: int, nb: int = 0, na: int = 0) -> list[int | None]: ...
def ids_bytes(raw: bytes, n: int) -> bytes: ...
def untrack(obj: object) -> None: ...
def join(parts: list[tuple[bytes, int, int, int]]) -> tuple[bytes, int]: ...

class EncodingBase:
    _ids: list[int] | None
    _type_ids: list[int] | None
    _tokens: list[str] | None
    _words: list[int | None] | None
    _offsets: list[tuple[int, int]] | None
    _special_tokens_mask: list[int] | None
    _attention_mask: list[int] | None
    _overflowing: list | None
    _ranges: dict | None
    _raw: bytes | None
    _n: int
    _strings: object
    _word_index: int | None
    _frame: object
    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    words: list[int | None]
    attention_mask: list[int]

def make_raw(cls: type, raw: bytes, n: int, strings: object, word_index: int | None, frame: object) -> EncodingBase: ...
def make_with_ids(cls: type, ids: list[int], n: int, strings: object, frame: object, spans_from: object,
                  source: object, at: int) -> EncodingBase: ...
