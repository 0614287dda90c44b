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
>>> spans = encoded_spans(sp, "ab b", sp.encode_segments("ab b")[1])
>>> [(p.piece, p.surface, p.begin, p.end) for p in as_proto(spans).pieces]
[('▁ab', 'ab', 0, 2), ('▁', ' ', 2, 3), ('b', 'b', 3, 4)]
>>> offset_mapping(spans, return_bytes=False)
{'ids': [1, 2, 3], 'pieces': ['▁ab', '▁', 'b'], 'offsets': [(0, 2), (2, 3), (3, 4)]}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..formats._sentencepiece_proto import SentencePieceText
from .spm import _BYTE_VALUES, SentencePieceModel, utf8

__all__ = ["Spans", "encoded_spans", "decoded_spans", "as_proto", "offset_mapping"]

# SpmCore's segment flags (unigram.pxd): a plain piece, a run of unknown text, a byte-fallback piece.
_SEG_UNK, _SEG_BYTE = 1, 2


@dataclass(slots=True)
class Spans:
    """An encoding or decoding as columns: per piece its text, id, surface (None: unset, which only
    the byte pieces before a char's last have) and UTF-8 byte span in ``text``."""

    text: str
    pieces: list[str] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    surfaces: list["str | None"] = field(default_factory=list)
    begins: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)

    def add(self, piece: str, piece_id: int, surface: "str | None", begin: int, end: int) -> None:
        self.pieces.append(piece)
        self.ids.append(piece_id)
        self.surfaces.append(surface)
        self.begins.append(begin)
        self.ends.append(end)


def encoded_spans(model: SentencePieceModel, text: "str | bytes", segments) -> Spans:
    """The spans of ``segments`` (``[(id, start, end, flag)]`` over the normalized ``text``) in ``text``."""
    data = utf8(text)
    normalized, to_orig = model.normalize_bytes(data, True)
    spans = Spans(data.decode("utf-8", "replace"))
    n = len(segments)
    k = 0
    while k < n:
        seg_id, start, end, flag = segments[k]
        if flag == _SEG_BYTE:
            k = _add_byte_pieces(spans, model, data, to_orig, segments, k)
            continue
        begin, stop = to_orig[start], to_orig[end]
        piece = normalized[start:end].decode("utf-8", "replace") if flag == _SEG_UNK else model.pieces[seg_id]
        spans.add(piece, seg_id, data[begin:stop].decode("utf-8", "replace"), begin, stop)
        k += 1
    return spans


def _add_byte_pieces(spans: Spans, model: SentencePieceModel, data: bytes, to_orig: list, segments, k: int) -> int:
    """Add the byte pieces of the unknown char whose first byte is ``segments[k]``; the next segment's index."""
    first = segments[k][1]
    stop = k + 1
    while stop < len(segments) and segments[stop][3] == _SEG_BYTE and _continues_a_char(model, segments[stop][0]):
        stop += 1
    begin, end = to_orig[first], to_orig[segments[stop - 1][2]]
    for j in range(k, stop - 1):
        spans.add(model.pieces[segments[j][0]], segments[j][0], None, begin, begin)
    last = segments[stop - 1][0]
    spans.add(model.pieces[last], last, data[begin:end].decode("utf-8", "replace"), begin, end)
    return stop


def _continues_a_char(model: SentencePieceModel, byte_id: int) -> bool:
    """Whether the byte piece ``byte_id`` (``<0xNN>``) is a UTF-8 continuation byte."""
    return _BYTE_VALUES[model.pieces[byte_id]] & 0xC0 == 0x80


def decoded_spans(model: SentencePieceModel, pieces: list[str], ids: list[int]) -> Spans:
    """The spans of decoding ``pieces`` (whose ids are ``ids``): each one's surface and where it is."""
    text, surfaces = model.decode_surfaces(pieces)
    spans = Spans(text, list(pieces), list(ids), surfaces)
    at = 0
    for surface in surfaces:
        size = len(surface.encode("utf-8"))
        spans.begins.append(at)
        spans.ends.append(at + size)
        at += size
    return spans


def as_proto(spans: Spans, score: "float | None" = None) -> SentencePieceText:
    """``spans`` as a SentencePieceText. ``score`` (an n-best's) is set only when given, and a surface
    only when there is one, so the message serializes to sentencepiece's bytes."""
    spt = SentencePieceText(text=spans.text)
    if score is not None:
        spt.score = score
    add = spt.pieces.add
    for piece, piece_id, surface, begin, end in zip(spans.pieces, spans.ids, spans.surfaces, spans.begins,
                                                    spans.ends):
        if surface is None:
            add(piece=piece, id=piece_id, begin=begin, end=end)
        else:
            add(piece=piece, id=piece_id, surface=surface, begin=begin, end=end)
    return spt


def offset_mapping(spans: Spans, return_bytes: bool, with_text: bool = False) -> dict:
    """``{"ids", "pieces", "offsets"}`` (and ``"text"``) of ``spans``: offsets in chars, or with ``return_bytes``
    in bytes (and pieces and text as bytes), as SentencePiece's ``out_type="offset_mapping"``."""
    offsets = list(zip(spans.begins, spans.ends))
    if return_bytes:
        out = {"ids": spans.ids, "pieces": [piece.encode("utf-8") for piece in spans.pieces], "offsets": offsets}
    else:
        if not spans.text.isascii():  # (ASCII: a byte offset is the char offset)
            chars = _char_offsets(spans.text, offsets)
            offsets = [(chars[begin], chars[end]) for begin, end in offsets]
        out = {"ids": spans.ids, "pieces": spans.pieces, "offsets": offsets}
    if with_text:
        out = {"text": spans.text.encode("utf-8") if return_bytes else spans.text, **out}
    return out


def _char_offsets(text: str, offsets: list[tuple[int, int]]) -> dict[int, int]:
    """For each UTF-8 byte offset in ``offsets`` (all at char starts, or the end), the char offset in ``text``.

    >>> _char_offsets("aé☃b", [(0, 1), (1, 3), (3, 6), (6, 7)])
    {0: 0, 1: 1, 3: 2, 6: 3, 7: 4}
    """
    data = text.encode("utf-8")
    chars: dict[int, int] = {}
    at_byte = at_char = 0
    for mark in sorted({b for span in offsets for b in span}):
        at_char += len(data[at_byte:mark].decode("utf-8", "replace"))
        at_byte = mark
        chars[mark] = at_char
    return chars
