from pieceworks._kernels.wordpiece_encode import WordPieceMatcher

NEEDS_ORDER_CHECK: int
NO_UNK_TOKEN: int
TOO_LONG: int
CACHE_SLOTS: int

class CharMap:
    """What each code point becomes: the normalizer's output and the pre-tokenizer's action on it."""

    def __init__(self, actions: bytes, special: dict[int, str], check: "list[int] | tuple[int, ...]" = ()) -> None: ...
    def entry(self, ch: str) -> tuple[int, int]: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(saved: bytes) -> CharMap: ...

class Scratch:
    """Per-call buffers (pooled)."""

class TokenTable:
    """A matcher with the id and text objects of its tokens."""

    def __init__(self, matcher: WordPieceMatcher) -> None: ...
    @property
    def strings(self) -> "list[str | None] | dict[int, str]": ...

def encode(
    text: str, cmap: CharMap, table: TokenTable, max_chars: int, unk_id: int, unk_token: str,
    nogil_min: int = 2048, order_checked: bool = False,
) -> "tuple[list[int], list[str], list[tuple[int, int]], list[int], int] | int": ...
def encode_raw(
    text: str, cmap: CharMap, table: TokenTable, max_chars: int, unk_id: int, nogil_min: int = 2048,
    order_checked: bool = False,
) -> "tuple[bytes, int, int] | int": ...
def encode_raw_batch(
    texts: list[str], cmap: CharMap, table: TokenTable, max_chars: int, unk_id: int,
    fronts: list[str] | None = None, strings: object = None, status_at: list[int] | None = None,
) -> "list[tuple[bytes, int, int] | tuple[bytes, int, int, object] | int]": ...
def pieces(text: str, cmap: CharMap, order_checked: bool = False) -> list[tuple[str, list[int]]] | None: ...

class OneText:
    def __init__(self, cmap: CharMap, table: TokenTable, max_chars: int, unk_id: int, nogil_min: int) -> None: ...
    def __call__(self, text: str) -> "tuple[bytes, int, int] | int": ...
