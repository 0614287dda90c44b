"""SentencePieceText: an encoding or a decoding, each piece with its surface and its offsets.

What ``SentencePieceProcessor.encode(..., out_type="proto")`` and
``decode(..., out_type="proto")`` return, and what ``"offset_mapping"`` is
read from. Each piece has ``piece``, ``id``, ``surface`` (the text it
stands for) and ``begin``/``end``, UTF-8 byte offsets: into the original
text for an encoding, into the decoded text for a decoding.

SentencePiece's rules, which the tests check against it:

- an encoded piece's surface is the original text its normalized bytes
  came from, so ``▁`` standing for two spaces has both, and the dummy-prefix
  ``▁`` has none;
- byte-fallback pieces of one unknown char: the last has the char as its
  surface and offsets, the ones before it nothing, at the char's start;
- a decoded control piece has no surface; a byte piece has its char if it
  ends one (U+FFFD if it starts no valid char).

>>> import pieceworks.formats.sentencepiece as fmt
>>> from pieceworks.models.spm import SentencePieceModel
>>> m = fmt.ModelProto(); m.trainer_spec.model_type = 1; m.normalizer_spec.name = "identity"
>>> for text, score, kind in [("<unk>", 0, 2), ("▁ab", -1, 1), ("▁", -3, 1), ("b", -2, 1)]:
...     p = m.pieces.add(); p.piece, p.score, p.type = text, score, kind
>>> sp = SentencePieceModel(m)
>>> text = encoded_text(sp, "ab b", sp.encode_segments("ab b")[1])
>>> [(p.piece, p.surface, p.begin, p.end) for p in text.pieces]
[('▁ab', 'ab', 0, 2), ('▁', ' ', 2, 3), ('b', 'b', 3, 4)]
>>> offset_mapping(text, return_bytes=False)
{'ids': [1, 2, 3], 'pieces': ['▁ab', '▁', 'b'], 'offsets': [(0, 2), (2, 3), (3, 4)]}
"""

from __future__ import annotations

from ..formats._sentencepiece_proto import SentencePieceText
from .spm import SentencePieceModel, utf8

__all__ = ["encoded_text", "decoded_text", "offset_mapping"]

# SpmCore's segment flags (unigram.pxd): a plain piece, a run of unknown text, a byte-fallback piece.
_SEG_UNK, _SEG_BYTE = 1, 2


def encoded_text(model: SentencePieceModel, text: "str | bytes", segments,
                 score: "float | None" = None) -> SentencePieceText:
    """The SentencePieceText of ``segments`` (``[(id, start, end, flag)]`` over the normalized ``text``).

    ``score`` (an n-best's) is set only when given, so the message serializes
    to sentencepiece's bytes, as the pieces' unset fields do.
    """
    data = utf8(text)
    normalized, to_orig = model.normalize_bytes(data, True)
    spt = SentencePieceText(text=data.decode("utf-8", "replace"))
    if score is not None:
        spt.score = score
    n = len(segments)
    k = 0
    while k < n:
        seg_id, start, end, flag = segments[k]
        if flag == _SEG_BYTE:
            k = _add_byte_pieces(spt, model, data, to_orig, segments, k)
            continue
        begin, stop = to_orig[start], to_orig[end]
        piece = normalized[start:end].decode("utf-8", "replace") if flag == _SEG_UNK else model.pieces[seg_id]
        spt.pieces.add(piece=piece, id=seg_id, surface=data[begin:stop].decode("utf-8", "replace"),
                       begin=begin, end=stop)
        k += 1
    return spt


def _add_byte_pieces(spt: SentencePieceText, model: SentencePieceModel, data: bytes, to_orig: list, segments,
                     k: int) -> int:
    """Add the byte pieces of the unknown char whose first byte is ``segments[k]``; the next segment's index."""
    first = segments[k][1]
    stop = k + 1
    while stop < len(segments) and segments[stop][3] == _SEG_BYTE and _continues_a_char(model, segments[stop][0]):
        stop += 1
    begin, end = to_orig[first], to_orig[segments[stop - 1][2]]
    for j in range(k, stop):
        seg_id = segments[j][0]
        if j == stop - 1:
            spt.pieces.add(piece=model.pieces[seg_id], id=seg_id, surface=data[begin:end].decode("utf-8", "replace"),
                           begin=begin, end=end)
        else:
            spt.pieces.add(piece=model.pieces[seg_id], id=seg_id, begin=begin, end=begin)  # no surface
    return stop


def _continues_a_char(model: SentencePieceModel, byte_id: int) -> bool:
    """Whether the byte piece ``byte_id`` (``<0xNN>``) is a UTF-8 continuation byte."""
    return int(model.pieces[byte_id][3:5], 16) & 0xC0 == 0x80


def decoded_text(model: SentencePieceModel, pieces: list[str], ids: list[int]) -> SentencePieceText:
    """The SentencePieceText of decoding ``pieces`` (whose ids are ``ids``): each one's surface and where it is."""
    text, surfaces = model.decode_surfaces(pieces)
    spt = SentencePieceText(text=text)
    at = 0
    for piece, piece_id, surface in zip(pieces, ids, surfaces):
        size = len(surface.encode("utf-8"))
        spt.pieces.add(piece=piece, id=piece_id, surface=surface, begin=at, end=at + size)
        at += size
    return spt


def offset_mapping(spt: SentencePieceText, return_bytes: bool, with_text: bool = False) -> dict:
    """``{"ids", "pieces", "offsets"}`` (and ``"text"``) of ``spt``: offsets in chars, or with ``return_bytes``
    in bytes (and pieces and text as bytes), as SentencePiece's ``out_type="offset_mapping"``."""
    ids = [p.id for p in spt.pieces]
    if return_bytes:
        out = {"ids": ids, "pieces": [p.piece.encode("utf-8") for p in spt.pieces],
               "offsets": [(p.begin, p.end) for p in spt.pieces]}
    else:
        chars = _char_index_of_bytes(spt.text)
        out = {"ids": ids, "pieces": [p.piece for p in spt.pieces],
               "offsets": [(chars[p.begin], chars[p.end]) for p in spt.pieces]}
    if with_text:
        out = {"text": spt.text.encode("utf-8") if return_bytes else spt.text, **out}
    return out


def _char_index_of_bytes(text: str) -> list[int]:
    """For each UTF-8 byte offset of ``text`` (and its end), the index of the char it falls in."""
    index = []
    for i, char in enumerate(text):
        index.extend([i] * len(char.encode("utf-8")))
    index.append(len(text))
    return index
