"""SentencePiece .model files: read, check, write; .vocab export; conversion to tokenizer.json.

A .model file is one serialized ``ModelProto`` (see
:mod:`pieceworks.formats._sentencepiece_proto`): the pieces with their
scores and types, the ``trainer_spec`` (model type, special ids, byte
fallback, ...) and the ``normalizer_spec`` (the precompiled charsmap and the
whitespace options). Reading checks what SentencePiece's loader checks and
turns every problem into a :class:`~pieceworks.errors.FileFormatError` that
names the file, the field and the fix.

>>> from pieceworks.formats._sentencepiece_proto import ModelProto
>>> m = ModelProto(); m.trainer_spec.model_type = 1
>>> for text, kind in [("<unk>", 2), ("▁a", 1)]:
...     p = m.pieces.add(); p.piece = text; p.type = kind
>>> m.normalizer_spec.name = "identity"
>>> read_model_proto(m.SerializeToString()).pieces[1].piece
'▁a'
>>> read_model_proto(b"\\x0a\\x05ab")
Traceback (most recent call last):
  ...
pieceworks.errors.FileFormatError: <bytes>: not a SentencePiece model (the protobuf data is truncated or corrupted: ...). Fix: ...
"""

from __future__ import annotations

import os
from pathlib import Path

from google.protobuf.message import DecodeError

from ..errors import ConfigError, FileFormatError
from ._sentencepiece_proto import MODEL_TYPES, PIECE_TYPES, ModelProto

__all__ = ["read_model_proto", "piece_tables", "write_model_proto", "vocab_lines", "write_vocab", "check_model_proto",
           "model_to_tokenizer", "ModelProto", "PIECE_TYPES", "MODEL_TYPES"]

_BYTE_PIECES = {f"<0x{i:02X}>": i for i in range(256)}
_REFETCH = "download the .model file again (it is truncated or corrupted), or pass the right file"
# SentencePiece refuses longer pieces (kMaxPieceSize).
MAX_PIECE_BYTES = 8000


def read_model_proto(source: "str | os.PathLike | bytes | bytearray | memoryview") -> ModelProto:
    """Parse and check a .model file (a path) or its serialized bytes."""
    data, where = _read_source(source)
    if not data:
        raise FileFormatError(where, "the file is empty, not a SentencePiece model", fix=_REFETCH)
    try:
        proto = ModelProto.FromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise FileFormatError(where, f"not a SentencePiece model (the protobuf data is truncated or "
                                     f"corrupted: {exc})", fix=_REFETCH) from exc
    _TABLES[id(proto)] = (proto, check_model_proto(proto, where))
    if len(_TABLES) > 16:
        _TABLES.pop(next(iter(_TABLES)))
    return proto


# The piece tables of recently read protos, so a model built right after reading
# does not read every field a second time (id → (proto kept alive, tables)).
_TABLES: dict[int, tuple] = {}


def piece_tables(proto: ModelProto) -> tuple[list[str], list[float], list[int]]:
    """``(pieces, scores, types)`` of a checked proto (cached from :func:`read_model_proto`)."""
    hit = _TABLES.get(id(proto))
    if hit is not None and hit[0] is proto:
        return hit[1]
    return check_model_proto(proto)


def _read_source(source) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "<bytes>"
    if hasattr(source, "SerializeToString"):
        return source.SerializeToString(), "<ModelProto>"
    if not isinstance(source, (str, os.PathLike)):
        raise FileFormatError(None, f"expected a .model path or its bytes, got {type(source).__name__}",
                              fix="pass model_file='path/to/x.model' or model_proto=open(...,'rb').read()")
    path = Path(source)
    try:
        return path.read_bytes(), os.fspath(path)
    except FileNotFoundError as exc:
        raise FileFormatError(path, "file not found", fix="check the path") from exc
    except IsADirectoryError as exc:
        raise FileFormatError(path, "is a folder", fix="pass the .model file inside it") from exc
    except PermissionError as exc:
        raise FileFormatError(path, "permission denied", fix="check the file's permissions") from exc


def check_model_proto(proto: ModelProto, where: str = "<ModelProto>") -> tuple[list[str], list[float], list[int]]:
    """What SentencePiece's loader checks (ModelInterface::InitializePieces), plus signs of truncation.

    Returns the pieces, scores and types (read once: reading protobuf fields is slow).
    """
    if not proto.pieces:
        raise FileFormatError(where, "no pieces: this is not a SentencePiece ModelProto (a protobuf of "
                                     "another message type, or an empty model)", field="pieces", fix=_REFETCH)
    if not proto.HasField("trainer_spec") or not proto.HasField("normalizer_spec"):
        missing = "trainer_spec" if not proto.HasField("trainer_spec") else "normalizer_spec"
        raise FileFormatError(where, f"{missing} is missing: the file looks truncated (a .model holds "
                                     "pieces, then trainer_spec, then normalizer_spec)", field=missing,
                              fix=_REFETCH)
    for name in ("trainer_spec", "normalizer_spec", "denormalizer_spec"):
        if proto.HasField(name):
            _check_text_fields(getattr(proto, name), name, where)
    model_type = proto.trainer_spec.model_type
    if model_type not in MODEL_TYPES.values():
        raise FileFormatError(where, f"model_type {model_type} is not supported (only UNIGRAM, BPE, WORD and CHAR)",
                              field="trainer_spec.model_type", fix=_REFETCH)
    byte_fallback = proto.trainer_spec.byte_fallback
    rows = [(p.piece, p.score, p.type) for p in proto.pieces]
    texts = [r[0] for r in rows]
    types = [r[2] for r in rows]
    if all(type(t) is str for t in texts) and all(texts) and len(set(texts)) == len(texts) and \
            types.count(PIECE_TYPES["UNKNOWN"]) == 1 and \
            not any("\0" in t for t in texts) and max(map(len, texts)) * 4 < MAX_PIECE_BYTES and \
            set(types) <= {1, 2, 3, 4, 5} and not byte_fallback:
        _check_charsmap(proto, where)
        return texts, [r[1] for r in rows], types  # the common case, checked in bulk
    seen: dict[tuple[bool, str], int] = {}
    unk = -1
    bytes_found = set()
    for i, (text, _, kind) in enumerate(rows):
        field = f"pieces[{i}]"
        if not isinstance(text, str):   # protobuf hands back bytes for a string that is not UTF-8
            raise FileFormatError(where, f"piece {text!r} is not valid UTF-8", field=field, fix=_REFETCH)
        if not text:
            raise FileFormatError(where, "a piece is empty", field=field, fix=_REFETCH)
        if "\0" in text:
            raise FileFormatError(where, f"piece {text!r} contains a NUL character", field=field, fix=_REFETCH)
        if len(text.encode("utf-8")) >= MAX_PIECE_BYTES:
            raise FileFormatError(where, f"piece is {len(text.encode())} bytes long (at most "
                                         f"{MAX_PIECE_BYTES - 1})", field=field, fix=_REFETCH)
        if kind not in PIECE_TYPES.values():
            raise FileFormatError(where, f"piece {text!r} has unknown type {kind}", field=field,
                                  fix=_REFETCH)
        normal = kind in (PIECE_TYPES["NORMAL"], PIECE_TYPES["USER_DEFINED"], PIECE_TYPES["UNUSED"])
        key = (normal, text)
        if key in seen:
            raise FileFormatError(where, f"piece {text!r} is defined twice (ids {seen[key]} and {i})",
                                  field=field, fix=_REFETCH)
        seen[key] = i
        if kind == PIECE_TYPES["UNKNOWN"]:
            if unk >= 0:
                raise FileFormatError(where, f"two unknown pieces (ids {unk} and {i})", field=field,
                                      fix=_REFETCH)
            unk = i
        if kind == PIECE_TYPES["BYTE"]:
            if not byte_fallback:
                raise FileFormatError(where, f"byte piece {text!r} found although byte_fallback is false",
                                      field=field, fix=_REFETCH)
            if text not in _BYTE_PIECES:
                raise FileFormatError(where, f"byte piece {text!r} is not of the form <0xNN>", field=field,
                                      fix=_REFETCH)
            bytes_found.add(text)
    if unk < 0:
        raise FileFormatError(where, "no piece has type UNKNOWN (the <unk> piece)", field="pieces",
                              fix=_REFETCH)
    if byte_fallback and len(bytes_found) != 256:
        raise FileFormatError(where, f"byte_fallback is true but only {len(bytes_found)} of the 256 byte "
                                     "pieces <0x00>..<0xFF> are present", field="pieces", fix=_REFETCH)
    _check_charsmap(proto, where)
    return texts, [r[1] for r in rows], types


def _check_text_fields(message, name: str, where: str) -> None:
    """Refuse string fields that are not UTF-8 (protobuf hands them back as bytes, not str)."""
    from google.protobuf.descriptor import FieldDescriptor

    for field, value in message.ListFields():
        if field.type != FieldDescriptor.TYPE_STRING:
            continue
        values = [value] if isinstance(value, (str, bytes)) else value   # a repeated field is a list
        for v in values:
            if not isinstance(v, str):
                raise FileFormatError(where, f"{name}.{field.name} is not valid UTF-8 ({v!r})",
                                      field=f"{name}.{field.name}", fix=_REFETCH)


def _check_charsmap(proto: ModelProto, where: str) -> None:
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if charsmap:
        from .._kernels.unigram import Charsmap, KernelError

        try:
            Charsmap(bytes(charsmap))
        except KernelError as exc:
            raise FileFormatError(where, f"broken precompiled charsmap: {exc}",
                                  field="normalizer_spec.precompiled_charsmap", fix=_REFETCH) from exc


def write_model_proto(proto: ModelProto, path: "str | os.PathLike") -> None:
    """Write a .model file atomically (temp file, fsync, rename)."""
    from ..fileio import atomic_write_bytes

    atomic_write_bytes(path, proto.SerializeToString())


def vocab_lines(proto: ModelProto) -> list[str]:
    """The lines of the .vocab file SentencePiece writes beside a model: ``piece<TAB>score``.

    The score is printed as C++ streams print a float (6 significant
    digits), or left out when ``vocabulary_output_piece_score`` is false.

    >>> m = ModelProto(); p = m.pieces.add(); p.piece = "▁a"; p.score = -2.181554079
    >>> vocab_lines(m)
    ['▁a\\t-2.18155']
    """
    with_score = proto.trainer_spec.vocabulary_output_piece_score
    return [f"{p.piece}\t{_cpp_float(p.score)}" if with_score else p.piece for p in proto.pieces]


def _cpp_float(value: float) -> str:
    text = "%g" % value
    return "-0" if text == "-0" else text


def write_vocab(proto: ModelProto, path: "str | os.PathLike") -> None:
    """Write the .vocab file (UTF-8, one ``piece<TAB>score`` per line)."""
    from ..fileio import atomic_write_text

    atomic_write_text(path, "".join(line + "\n" for line in vocab_lines(proto)))


# -- conversion to a pieceworks / Hugging Face Tokenizer ------------------------------
def model_to_tokenizer(source, *, exact: bool = True):
    """A :class:`~pieceworks.Tokenizer` (tokenizer.json pipeline) that encodes as the .model does.

    The pipeline is the one transformers' ``convert_slow_tokenizer`` builds
    for SentencePiece models: the model (Unigram with scores, or BPE with
    merges recovered from the scores and byte fallback), the charsmap as a
    ``Precompiled`` normalizer, ``▁`` handling, control and user-defined
    pieces as added tokens, and a decoder that undoes it all.

    With ``exact=True`` (the default) the whitespace steps follow the
    ``normalizer_spec`` of the model (``remove_extra_whitespaces``,
    ``add_dummy_prefix``) so that ids match SentencePiece's wherever the
    Hugging Face components can express it: leading, trailing and repeated
    spaces are removed only when the model does that, and the dummy prefix
    is a ``Prepend("▁")`` normalizer. ``exact=False`` gives transformers'
    generic layout (``Metaspace`` pre-tokenizer, ``prepend_scheme="always"``).
    """
    from .. import decoders, normalizers, pre_tokenizers
    from ..added_vocabulary import AddedToken
    from ..tokenizer import Tokenizer

    proto = source if isinstance(source, ModelProto) else read_model_proto(source)
    spec = proto.normalizer_spec
    model = _hf_model(proto)
    tok = Tokenizer(model)
    steps = []
    if spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(bytes(spec.precompiled_charsmap)))
    if exact:
        if spec.remove_extra_whitespaces:
            steps.append(normalizers.Replace(_regex(r"\A +| +\z"), ""))
            steps.append(normalizers.Replace(_regex(r" {2,}"), " "))
        if spec.add_dummy_prefix and not proto.trainer_spec.treat_whitespace_as_suffix:
            steps.append(normalizers.Prepend("▁"))
        if spec.escape_whitespaces:
            steps.append(normalizers.Replace(" ", "▁"))
        if spec.add_dummy_prefix and proto.trainer_spec.treat_whitespace_as_suffix:
            steps.append(normalizers.Append("▁") if hasattr(normalizers, "Append") else normalizers.Replace(
                _regex(r"$"), "▁"))
        tok.normalizer = steps[0] if len(steps) == 1 else (normalizers.Sequence(steps) if steps else None)
    else:
        steps += [normalizers.Strip(left=False, right=True), normalizers.Replace(_regex(" {2,}"), "▁")]
        tok.normalizer = normalizers.Sequence(steps)
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = _decoder(proto, decoders, exact)
    # Control pieces (<s>, </s>, ...) are special added tokens, as transformers makes them, so
    # decode() drops them as SentencePiece does; the price is that their text in the input is
    # matched (SentencePiece would segment it). User-defined pieces are matched whole in the text
    # by SentencePiece; a Unigram model scores them high already, and an added token would cut the
    # text (and the dummy prefix) where SentencePiece does not, so only BPE gets them as added tokens.
    kinds = (PIECE_TYPES["CONTROL"], PIECE_TYPES["USER_DEFINED"])
    if exact and proto.trainer_spec.model_type == MODEL_TYPES["UNIGRAM"]:
        kinds = (PIECE_TYPES["CONTROL"],)
    added = [AddedToken(p.piece, normalized=False, special=p.type == PIECE_TYPES["CONTROL"])
             for p in proto.pieces if p.type in kinds]
    if added:
        tok.add_tokens(added)
    return tok


def _regex(pattern: str):
    """A Hugging Face ``Regex`` pattern object for Replace/Split."""
    from .. import normalizers

    regex_cls = getattr(normalizers, "Regex", None)
    if regex_cls is None:
        import pieceworks

        regex_cls = getattr(pieceworks, "Regex")
    return regex_cls(pattern)


def _hf_model(proto: ModelProto):
    ts = proto.trainer_spec
    if ts.model_type not in (MODEL_TYPES["UNIGRAM"], MODEL_TYPES["BPE"]):
        kind = {v: k for k, v in MODEL_TYPES.items()}[ts.model_type]
        raise ConfigError(f"a SentencePiece {kind} model has no tokenizer.json form (Hugging Face converts only "
                          "Unigram and BPE models)",
                          fix="encode it with pieceworks.sentencepiece.SentencePieceProcessor(model_file=...)")
    if ts.model_type == MODEL_TYPES["UNIGRAM"]:
        from ..models.unigram import Unigram

        return Unigram([(p.piece, float(p.score)) for p in proto.pieces], unk_id=_unk_index(proto),
                       byte_fallback=ts.byte_fallback)
    from ..models import BPE

    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    merges = bpe_merges_from_scores(proto)
    unk = proto.pieces[_unk_index(proto)].piece
    return BPE(vocab, merges, unk_token=unk, fuse_unk=True, byte_fallback=ts.byte_fallback)


def _unk_index(proto: ModelProto) -> int:
    for i, p in enumerate(proto.pieces):
        if p.type == PIECE_TYPES["UNKNOWN"]:
            return i
    return proto.trainer_spec.unk_id


def bpe_merges_from_scores(proto: ModelProto) -> list[tuple[str, str]]:
    """The merges of a SentencePiece BPE model, best first (as transformers' ``generate_merges``).

    Every split of a piece into two pieces of the vocabulary is a merge.
    SentencePiece merges the adjacent pair whose merged piece scores
    highest, so merges are ordered by that score (then longer left part,
    then longer right part); splits of one piece keep id order.

    >>> m = ModelProto()
    >>> for text, score in [("a", -1), ("b", -2), ("ab", -3), ("abb", -4)]:
    ...     p = m.pieces.add(); p.piece, p.score = text, score
    >>> bpe_merges_from_scores(m)
    [('a', 'b'), ('ab', 'b')]
    """
    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    mergeable = (PIECE_TYPES["NORMAL"], PIECE_TYPES["USER_DEFINED"], PIECE_TYPES["UNUSED"])
    merges = []
    for piece in proto.pieces:
        if piece.type not in mergeable:
            continue
        text = piece.piece
        local = [(text[:k], text[k:]) for k in range(1, len(text)) if text[:k] in vocab and text[k:] in vocab]
        local.sort(key=lambda lr: (vocab[lr[0]], vocab[lr[1]]))
        merges.extend((left, right, piece.score) for left, right in local)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(left, right) for left, right, _ in merges]


def _decoder(proto: ModelProto, decoders, exact: bool = True):
    """``▁`` back to spaces, bytes back to text, and the dummy prefix dropped (once, from the joined text)."""
    spec = proto.normalizer_spec
    if not exact:
        return decoders.Metaspace(replacement="▁", prepend_scheme="always")
    steps = [decoders.Replace("▁", " ")]
    unk = proto.pieces[_unk_index(proto)].piece
    surface = proto.trainer_spec.unk_surface
    if unk != surface:
        steps.append(decoders.Replace(unk, surface))  # SentencePiece shows <unk> as " ⁇ "
    if proto.trainer_spec.byte_fallback:
        steps.append(decoders.ByteFallback())
    steps.append(decoders.Fuse())  # Strip works token by token: join first
    if spec.add_dummy_prefix or spec.remove_extra_whitespaces:
        # One space: SentencePiece drops every leading ▁-space when it removes extra whitespace,
        # but keeps the one in front of an unknown's " ⁇ "; a decoder cannot tell them apart.
        steps.append(decoders.Strip(" ", 1, 0))
    return decoders.Sequence(steps)
