"""GPT-2's byte ↔ printable-char alphabet, used where tokens are written as text.

Byte-level BPE works on raw bytes; tokenizer.json, vocab.json and
merges.txt spell each byte as one printable char so that tokens are valid
strings. Printable Latin-1 bytes stand for themselves; the other 68 bytes
map to U+0100 onwards, in byte order (space → "Ġ", newline → "Ċ").

>>> BYTE_TO_CHAR[ord(" ")], BYTE_TO_CHAR[ord("\\n")], BYTE_TO_CHAR[ord("a")]
('Ġ', 'Ċ', 'a')
>>> text_to_byte_chars("é")
'Ã©'
>>> byte_chars_to_bytes("Ã©").decode()
'é'
"""

from __future__ import annotations

__all__ = ["BYTE_TO_CHAR", "CHAR_TO_BYTE", "text_to_byte_chars", "bytes_to_byte_chars", "byte_chars_to_bytes",
           "byte_chars_to_bytes_or_none", "tokens_to_bytes"]


def _build_alphabet() -> list[str]:
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAC + 1)) | set(range(0xAE, 0xFF + 1))
    out = []
    extra = 0
    for b in range(256):
        if b in printable:
            out.append(chr(b))
        else:
            out.append(chr(256 + extra))
            extra += 1
    return out


BYTE_TO_CHAR: list[str] = _build_alphabet()
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in enumerate(BYTE_TO_CHAR)}
_ENCODE_TABLE = {b: c for b, c in enumerate(BYTE_TO_CHAR)}


def bytes_to_byte_chars(data: bytes) -> str:
    """Spell raw bytes in the byte-level alphabet (one char per byte)."""
    return data.decode("latin-1").translate(_LATIN1_TO_ALPHABET)


def text_to_byte_chars(text: str) -> str:
    """Spell the UTF-8 bytes of ``text`` in the byte-level alphabet."""
    return bytes_to_byte_chars(text.encode("utf-8", "surrogatepass"))


def byte_chars_to_bytes(chars: str) -> bytes:
    """Inverse of :func:`bytes_to_byte_chars`; raises KeyError on a char outside the alphabet.

    >>> byte_chars_to_bytes("ĠhiĊ"), byte_chars_to_bytes_or_none("a b")
    (b' hi\\n', None)
    """
    raw = byte_chars_to_bytes_or_none(chars)
    if raw is None:
        raise KeyError(next(c for c in chars if c not in CHAR_TO_BYTE))
    return raw


def byte_chars_to_bytes_or_none(chars: str) -> bytes | None:
    """:func:`byte_chars_to_bytes`, or None for a char outside the alphabet (one C pass, no
    Python step per char: a 128k-token vocabulary is spelled in bytes in a few milliseconds)."""
    try:
        return chars.translate(_ALPHABET_TO_LATIN1).encode("latin-1")
    except UnicodeEncodeError:
        return None


def tokens_to_bytes(tokens: list[str | None]) -> list[bytes | None]:
    """:func:`byte_chars_to_bytes_or_none` of each token (None stays None), in one C pass over
    them all (a vocabulary of 150k tokens: a few milliseconds).

    >>> tokens_to_bytes(["Ġa", "b"]), tokens_to_bytes(["Ġa", "中", "\\x00", None])
    ([b' a', b'b'], [b' a', None, None, None])
    """
    from ._kernels.bytebpe import spelled_bytes     # (here: the kernels import this module's users)

    return spelled_bytes(tokens if type(tokens) is list else list(tokens), _ALPHABET)


_ALPHABET = "".join(BYTE_TO_CHAR)
_LATIN1_TO_ALPHABET = str.maketrans({chr(b): c for b, c in enumerate(BYTE_TO_CHAR)})
# The alphabet's chars to the Latin-1 chars of their bytes, every other char below U+0100 to U+FFFF:
# after it, a token encodes to Latin-1 only if all its chars were in the alphabet (the chars the table
# leaves as they are, U+0144 and up, are past Latin-1 too).
_ALPHABET_TO_LATIN1 = str.maketrans({**{chr(c): "\uffff" for c in range(256)},
                                     **{c: chr(b) for b, c in enumerate(BYTE_TO_CHAR)}})
