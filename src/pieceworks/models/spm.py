"""SentencePieceModel: a .model file's whole encoder and decoder, as SentencePiece runs it.

Where the Hugging Face-style :class:`~pieceworks.models.Unigram` sees one
pre-tokenized piece, a SentencePiece model owns the full path from raw
text to ids: its normalizer (the precompiled charsmap, whitespace rules,
dummy prefix, ``▁``), its segmenter (Unigram Viterbi, SentencePiece BPE,
or the char and word models, over the bytes of the whole normalized
sentence), the post-processing of
``SentencePieceProcessor`` (a run of unknown characters becomes one
unknown piece, or ``<0xNN>`` byte pieces with ``byte_fallback``) and the
decoder. :mod:`pieceworks.sentencepiece` is the thin face over it.

>>> import pieceworks.formats.sentencepiece as fmt
>>> m = fmt.ModelProto(); m.trainer_spec.model_type = 1; m.normalizer_spec.name = "identity"
>>> for text, score, kind in [("<unk>", 0, 2), ("▁ab", -1, 1), ("▁a", -2, 1), ("b", -2, 1), ("▁", -3, 1)]:
...     p = m.pieces.add(); p.piece, p.score, p.type = text, score, kind
>>> sp = SentencePieceModel(m)
>>> sp.encode_pieces("ab b"), sp.encode_ids("ab b")
(['▁ab', '▁', 'b'], [1, 4, 3])
>>> sp.decode_ids([1, 4, 3])
'ab b'
"""

from __future__ import annotations

import math
from operator import itemgetter

from .._kernels import unigram as K
from .._kernels.spm_decode import SpmDecoder
from ..errors import ConfigError, InputTypeError, UnknownIdError
from ..formats._sentencepiece_proto import MODEL_TYPES, PIECE_TYPES, ModelProto

__all__ = ["SentencePieceModel", "SPACE", "set_random_seed", "utf8", "normalize_text", "spec_normalizer"]

SPACE = "\u2581"
_UNK_SURFACE = " \u2047 "
_NORMAL, _UNKNOWN, _CONTROL, _USER, _UNUSED, _BYTE = (PIECE_TYPES[k] for k in (
    "NORMAL", "UNKNOWN", "CONTROL", "USER_DEFINED", "UNUSED", "BYTE"))
_BYTE_VALUES = {f"<0x{i:02X}>": i for i in range(256)}
# SentencePieceProcessor refuses larger n-best sampling (kMaxNBestSize).
MAX_SAMPLE_NBEST = 512
MAX_NBEST = 1024


_KIND_NAMES = {MODEL_TYPES["UNIGRAM"]: "Unigram", MODEL_TYPES["BPE"]: "BPE", MODEL_TYPES["WORD"]: "Word",
               MODEL_TYPES["CHAR"]: "Char"}


def set_random_seed(seed: "int | None") -> None:
    """Seed the generators behind every sampling call (``None``: from the OS).

    Each thread samples from its own generator; every one of them restarts
    from ``seed`` before its next draw, so a thread's samples after this call
    are the same whatever other threads do.
    """
    K.set_random_seed(seed)


class SentencePieceModel:
    """The encoder and decoder of one SentencePiece ``ModelProto``."""

    def __init__(self, proto: ModelProto):
        self.proto = proto
        ts = proto.trainer_spec
        from ..formats.sentencepiece import piece_tables

        self.pieces, self.scores, self.types = piece_tables(proto)
        self.model_type = ts.model_type
        self.is_unigram = self.model_type == MODEL_TYPES["UNIGRAM"]
        self.is_bpe = self.model_type == MODEL_TYPES["BPE"]
        self.kind_name = _KIND_NAMES[self.model_type]   # "Unigram", "BPE", "Word" or "Char"
        self.byte_fallback = ts.byte_fallback
        unk = next((i for i, t in enumerate(self.types) if t == _UNKNOWN), -1)
        self._core = K.SpmCore(self.pieces, self.scores, self.types, self.model_type, self.byte_fallback,
                               False, unk)
        user = [p.encode("utf-8") for p, t in zip(self.pieces, self.types) if t == _USER]
        matcher = K.DoubleArray(user, list(range(len(user))))
        self._normalizer = _normalizer(proto.normalizer_spec, matcher, ts.treat_whitespace_as_suffix)
        den = proto.denormalizer_spec
        self._denormalizer = (_normalizer(den, None, False)
                              if proto.HasField("denormalizer_spec") and den.precompiled_charsmap else None)
        spec = proto.normalizer_spec
        self._strip_bos_ws = spec.add_dummy_prefix or spec.remove_extra_whitespaces
        self._strip_all_leading = spec.remove_extra_whitespaces
        self.unk_surface = ts.unk_surface if ts.HasField("unk_surface") else _UNK_SURFACE
        self.unk_piece = ts.unk_piece or "<unk>"
        self.bos_piece = ts.bos_piece or "<s>"
        self.eos_piece = ts.eos_piece or "</s>"
        self.pad_piece = ts.pad_piece or "<pad>"
        # The whole encode (normalize, segment, ids or pieces) in one kernel call.
        self.encoder = K.SpmEncoder(self._core, self._normalizer, self.pieces, self.unk_piece)
        self._id_decoder: SpmDecoder | None = None   # made by the first decode_ids
        self._piece_ids: dict[str, int] | None = None  # piece_to_id of every piece, made by the first decode_pieces

    # -- vocabulary -----------------------------------------------------------
    def __len__(self) -> int:
        return len(self.pieces)

    def piece_to_id(self, piece: str) -> int:
        """The id of ``piece`` (control, unknown and byte pieces first); the unknown id if absent."""
        return self._core.piece_to_id(piece)

    def pieces_to_ids(self, pieces: list) -> list[int]:
        """:meth:`piece_to_id` of each of ``pieces`` (strs), most of them through one dict."""
        table = self._piece_table()
        if len(pieces) > 1:
            try:        # (one C loop with no None to look for after it: a third faster than map)
                return list(itemgetter(*pieces)(table))
            except KeyError:
                pass
        ids = list(map(table.get, pieces))
        if None in ids:     # pieces the model lacks (the unknown id) are rare: ask the kernel
            ids = [self._core.piece_to_id(piece) if tid is None else tid for piece, tid in zip(pieces, ids)]
        return ids

    def ids_to_pieces(self, ids: list) -> list[str]:
        """:meth:`id_to_piece` of each of ``ids``; an id that is not one raises as ``id_to_piece`` does."""
        if all(type(i) is int for i in ids) and (not ids or 0 <= min(ids) and max(ids) < len(self.pieces)):
            return list(map(self.pieces.__getitem__, ids))
        return [self.id_to_piece(i) for i in ids]

    def _piece_table(self) -> dict[str, int]:
        """``piece_to_id`` of every piece the model has, made on first use."""
        if self._piece_ids is None:
            to_id = self._core.piece_to_id
            self._piece_ids = {piece: to_id(piece) for piece in self.pieces}
        return self._piece_ids

    def check_id(self, id, what: str = "id") -> int:
        if isinstance(id, bool) or not isinstance(id, int):
            raise InputTypeError(f"{what} must be an int, got {type(id).__name__}", fix="pass an integer piece id")
        if not 0 <= id < len(self.pieces):
            raise UnknownIdError(f"{what} {id} is out of range: the model has {len(self.pieces)} pieces "
                                 f"(ids 0..{len(self.pieces) - 1})", fix="pass an id below vocab_size()")
        return id

    def id_to_piece(self, id: int) -> str:
        return self.pieces[self.check_id(id)]

    def get_score(self, id: int) -> float:
        return self.scores[self.check_id(id)]

    def piece_type(self, id: int) -> int:
        return self.types[self.check_id(id)]

    def _special_id(self, piece: str, kind: int) -> int:
        i = self.piece_to_id(piece)
        return i if 0 <= i < len(self.types) and self.types[i] == kind else -1

    def unk_id(self) -> int:
        return self._special_id(self.unk_piece, _UNKNOWN)

    def bos_id(self) -> int:
        return self._special_id(self.bos_piece, _CONTROL)

    def eos_id(self) -> int:
        return self._special_id(self.eos_piece, _CONTROL)

    def pad_id(self) -> int:
        return self._special_id(self.pad_piece, _CONTROL)

    # -- normalization ------------------------------------------------------------
    def normalize_bytes(self, text: "str | bytes", with_offsets: bool = False):
        """``(normalized UTF-8 bytes, byte offsets into the input or None)``."""
        return self._normalizer.normalize(utf8(text), with_offsets)

    def normalize(self, text: "str | bytes", with_offsets: bool = False):
        """The normalized text; with offsets, also the original char offset of each normalized char (+ end)."""
        return normalize_text(self._normalizer, text, with_offsets)

    # -- encoding -------------------------------------------------------------------
    def encode_ids(self, text: "str | bytes", alpha: float = 0.0) -> list[int]:
        """Ids of the best segmentation (BPE with ``alpha`` > 0: BPE-dropout)."""
        normalized, _ = self._normalizer.normalize(utf8(text), False)
        return self._core.encode_ids(normalized, alpha)

    def encode_pieces(self, text: "str | bytes", emit_unk_piece: bool = False, alpha: float = 0.0) -> list[str]:
        """Pieces of the best segmentation; an unknown run is its text (or ``<unk>`` with emit_unk_piece)."""
        normalized, _ = self._normalizer.normalize(utf8(text), False)
        return self._core.encode_pieces(normalized, self.pieces, self.unk_piece if emit_unk_piece else None, alpha)

    def encode_segments(self, text: "str | bytes", alpha: float = 0.0):
        """``(normalized bytes, [(id, start, end, flag)])`` — spans are bytes of the normalized text."""
        normalized, _ = self._normalizer.normalize(utf8(text), False)
        return normalized, self._core.encode_segments(normalized, alpha)

    def nbest(self, text: "str | bytes", nbest_size: int):
        """``(normalized, [(segments, score)])``: the ``nbest_size`` best segmentations, best first."""
        if not self.is_unigram:
            raise ConfigError(f"n-best encoding needs a Unigram model; this is a {self.kind_name} model",
                              fix="use encode()" + (" (or BPE-dropout sampling with enable_sampling=True)"
                                                    if self.is_bpe else ""))
        normalized, _ = self._normalizer.normalize(utf8(text), False)
        nbest_size = max(1, min(int(nbest_size), MAX_NBEST))
        if nbest_size == 1 or not normalized:
            return normalized, [(self._core.encode_segments(normalized), 0.0)]
        return normalized, self._core.nbest(normalized, nbest_size)

    def sample(self, text: "str | bytes", nbest_size: int, alpha: float):
        """``(normalized, segments)`` drawn as SentencePiece's SampleEncode does.

        Unigram: ``nbest_size`` < 0 samples the whole lattice with weights
        exp(alpha·score) (forward filtering, backward sampling); 0 or 1 is the
        best segmentation; > 1 samples one of the ``nbest_size`` best with
        weights exp(alpha·score). BPE: BPE-dropout with merge-skip
        probability ``alpha`` (``nbest_size`` is ignored).
        """
        self._check_can_sample()
        check_sampling(nbest_size, alpha, self.is_unigram)
        normalized, _ = self._normalizer.normalize(utf8(text), False)
        if not self.is_unigram:
            return normalized, self._core.encode_segments(normalized, float(alpha))
        if nbest_size < 0:
            return normalized, self._core.sample(normalized, float(alpha))
        if nbest_size <= 1 or not normalized:
            return normalized, self._core.encode_segments(normalized)
        nbests = self._core.nbest(normalized, nbest_size)
        return normalized, nbests[_pick_by_score([s for _, s in nbests], alpha)][0]

    def sample_and_score(self, text: "str | bytes", num_samples: int, alpha: float, wor: bool,
                         include_best: bool):
        """``(normalized, [(segments, score)])``: SentencePiece's SampleEncodeAndScore (Unigram).

        With replacement, each of ``num_samples`` draws is scored with its
        log-probability under exp(alpha·score); without (``wor``), the sample
        is the Gumbel-top-k of the paths and each is scored with the log of
        its inclusion probability; ``include_best`` puts the best
        segmentation first (score 0). See ``SpmCore.sample_and_score``.
        """
        if not self.is_unigram:
            raise ConfigError(f"SampleEncodeAndScore needs a Unigram model; this is a {self.kind_name} model",
                              fix="use a Unigram .model" + (", or encode(enable_sampling=True) for BPE-dropout"
                                                            if self.is_bpe else ""))
        normalized, _ = self._normalizer.normalize(utf8(text), False)
        return normalized, self._core.sample_and_score(normalized, float(alpha), num_samples, wor, include_best)

    def _check_can_sample(self) -> None:
        if not (self.is_unigram or self.is_bpe):
            raise ConfigError(f"sampling needs a Unigram or BPE model; this is a {self.kind_name} model",
                              fix="encode without enable_sampling (SentencePiece cannot sample it either)")

    def entropy(self, text: "str | bytes", alpha: float) -> float:
        """Entropy of the distribution exp(alpha·score) over all segmentations (Unigram)."""
        if not self.is_unigram:
            raise ConfigError(f"entropy needs a Unigram model; this is a {self.kind_name} model",
                              fix="use a Unigram .model")
        normalized, _ = self._normalizer.normalize(utf8(text), False)
        return self._core.entropy(normalized, float(alpha))

    def score(self, pieces: list[str]) -> float:
        """The model score of a segmentation: the sum of its pieces' scores (unknowns at min − 10)."""
        total = 0.0
        for piece in pieces:
            i = self.piece_to_id(piece)
            t = self.types[i]
            if t == _UNKNOWN:
                total += self._core.unk_score
            elif t == _USER:
                total += len(piece) * 0.1 - 0.1  # SentencePiece's lattice score for user-defined pieces
            else:
                total += self.scores[i]
        return total

    def segments_to_pieces(self, normalized: bytes, segments, emit_unk_piece: bool = False) -> list[str]:
        return self._core.segments_to_pieces(normalized, segments, self.pieces,
                                             self.unk_piece if emit_unk_piece else None)

    # -- decoding -----------------------------------------------------------------
    def decode_ids(self, ids) -> str:
        """The text of ``ids``: :meth:`decode_pieces` of their pieces, in one kernel loop."""
        if self._id_decoder is None:
            self._id_decoder = self._decoder()
        text = self._id_decoder.decode(ids)
        if text is not None:
            return text if self._denormalizer is None else self._denormalized(text)
        return self._decode_ids_slowly(ids)     # a bad id: the long way names it

    def _decoder(self) -> SpmDecoder:
        """The kernel's table: per id, its decoded bytes, byte value, and whether it is control or starts
        with "▁" (see :meth:`_decode_piece`, whose rules it follows)."""
        spelled = []
        for piece, kind in zip(self.pieces, self.types):
            if kind == _BYTE:
                spelled.append((b"", _BYTE_VALUES[piece], False, False))
            elif kind == _CONTROL:
                spelled.append((b"", -1, True, False))
            elif kind == _UNKNOWN:
                spelled.append((self.unk_surface.encode("utf-8"), -1, False, False))
            else:
                spelled.append((piece.replace(SPACE, " ").encode("utf-8"), -1, False, piece.startswith(SPACE)))
        return SpmDecoder(spelled, self._strip_bos_ws, self._strip_all_leading)

    def _denormalized(self, text: str) -> str:
        return self._denormalizer.normalize(text.encode("utf-8"), False)[0].decode("utf-8", "replace")

    def _decode_ids_slowly(self, ids) -> str:
        pieces = []
        for n, i in enumerate(ids):
            pieces.append(self.pieces[self.check_id(i, f"ids[{n}]")])
        return self.decode_pieces(pieces)

    def decode_pieces(self, pieces) -> str:
        """SentencePiece's Decode: ``▁`` → space, the first (or every leading) ``▁`` dropped, bytes joined."""
        ids = self._ids_if_all_known(pieces)
        if ids is not None:
            return self.decode_ids(ids)     # the kernel's decode, the same for pieces the model has
        return self.decode_surfaces(pieces)[0]

    def _ids_if_all_known(self, pieces) -> "list[int] | None":
        """The ids of ``pieces`` if each is a str the model has as a piece, else None (an unknown
        piece's text decodes as itself, which only the long way does)."""
        if type(pieces) is not list and type(pieces) is not tuple:
            return None     # (an iterator would be used up before the long way saw it)
        try:
            return list(map(self._piece_table().__getitem__, pieces))
        except (KeyError, TypeError):
            return None

    def decode_surfaces(self, pieces) -> tuple[str, list[str]]:
        """``(text, surfaces)``: the decoded text and what each piece decodes to, as SentencePiece's proto API
        gives them: a byte piece that ends a UTF-8 char has the char, the bytes before it nothing, and a
        byte that starts no valid char U+FFFD. The text is denormalized, the surfaces are not.

        >>> import pieceworks.formats.sentencepiece as fmt
        >>> m = fmt.ModelProto(); m.trainer_spec.model_type = 1; m.normalizer_spec.name = "identity"
        >>> for text, kind in [("<unk>", 2), ("▁a", 1)]:
        ...     p = m.pieces.add(); p.piece, p.type = text, kind
        >>> SentencePieceModel(m).decode_surfaces(["▁a", "<unk>", "▁a"])
        ('a ⁇  a', ['a', ' ⁇ ', ' a'])
        """
        surfaces: list[str] = []
        pending = bytearray()
        text_len = 0
        is_bos_ws = True
        bos_ws_seen = False
        for n, piece in enumerate(pieces):
            if not isinstance(piece, str):
                raise InputTypeError(f"pieces[{n}] is {type(piece).__name__}, not str",
                                     fix="pass a list of piece strings (or ids to decode_ids)")
            i = self.piece_to_id(piece)
            if self.types[i] == _BYTE:
                pending.append(_BYTE_VALUES[self.pieces[i]])
                continue
            if pending:
                text_len += _flush_bytes(pending, surfaces)
            if bos_ws_seen or text_len:
                is_bos_ws = False
            decoded, bos_ws_seen = self._decode_piece(piece, i, is_bos_ws)
            surfaces.append(decoded)
            text_len += len(decoded)
        if pending:
            _flush_bytes(pending, surfaces)
        text = "".join(surfaces)
        return (text if self._denormalizer is None else self._denormalized(text)), surfaces

    def _decode_piece(self, piece: str, i: int, is_bos_ws: bool) -> tuple[str, bool]:
        t = self.types[i]
        if t == _CONTROL:
            return "", False
        if t == _UNKNOWN:
            return (self.unk_surface if self.pieces[i] == piece else piece), False
        has_bos_ws = False
        if is_bos_ws and self._strip_bos_ws and piece.startswith(SPACE):
            piece = piece[1:]
            has_bos_ws = not self._strip_all_leading
        return piece.replace(SPACE, " "), has_bos_ws


def normalize_text(normalizer, text: "str | bytes", with_offsets: bool = False):
    """``normalizer``'s text of ``text`` (a kernel ``SpmNormalizer``); with offsets, also the original
    char offset of each normalized char, and of the end."""
    data = utf8(text)
    normalized, to_orig = normalizer.normalize(data, with_offsets)
    out = normalized.decode("utf-8", "replace")
    if not with_offsets:
        return out
    return out, _byte_to_char_offsets(normalized, to_orig, data)


def spec_normalizer(spec):
    """The kernel normalizer of a NormalizerSpec alone (no user-defined symbols, whitespace as prefix),
    as SentencePiece's own SentencePieceNormalizer makes it."""
    return _normalizer(spec, None, False)


def check_sampling(nbest_size, alpha, is_unigram: bool = True) -> None:
    """Refuse sampling parameters SentencePiece would refuse, saying which value works."""
    if isinstance(nbest_size, bool) or not isinstance(nbest_size, int):
        raise ConfigError(f"nbest_size must be an int, got {nbest_size!r}",
                          fix="use nbest_size=-1 (whole lattice) or an n-best size > 1")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or math.isnan(alpha):
        raise ConfigError(f"alpha must be a number, got {alpha!r}", fix="use e.g. alpha=0.1")
    if nbest_size > MAX_SAMPLE_NBEST:
        raise ConfigError(f"nbest_size={nbest_size} is too large for sampling (at most {MAX_SAMPLE_NBEST})",
                          fix="use nbest_size=-1 to sample from the whole lattice, or a smaller n-best size")
    if not is_unigram and not 0.0 <= alpha <= 1.0:
        raise ConfigError(f"alpha={alpha} is not a BPE-dropout probability",
                          fix="use 0 <= alpha <= 1 with a BPE model")
    if is_unigram and math.isinf(alpha):
        raise ConfigError(f"alpha={alpha} is not a usable smoothing factor", fix="use a finite alpha, e.g. 0.1")


def _pick_by_score(scores: list[float], alpha: float) -> int:
    logs = [alpha * s for s in scores]
    top = max(logs)
    weights = [math.exp(x - top) for x in logs]
    total = sum(weights)
    r = K.random_uniform() * total
    acc = 0.0
    for i, w in enumerate(weights):
        acc += w
        if r < acc:
            return i
    return len(weights) - 1


def utf8(text) -> bytes:
    """``text`` as UTF-8 bytes (a str encoded, bytes as they are); a clear error for anything else."""
    if isinstance(text, str):
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputTypeError(f"the text contains a lone surrogate ({text[exc.start]!r} at char "
                                 f"{exc.start}), which is not valid Unicode text",
                                 fix="clean the text, e.g. text.encode('utf-8', 'replace').decode()") from exc
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise InputTypeError(f"input must be str or bytes, got {type(text).__name__}",
                         fix="pass a str (or a list of str)")


def _normalizer(spec, matcher, suffix: bool):
    charsmap = K.Charsmap(bytes(spec.precompiled_charsmap)) if spec.precompiled_charsmap else None
    return K.SpmNormalizer(charsmap, matcher, spec.add_dummy_prefix, spec.remove_extra_whitespaces,
                           spec.escape_whitespaces, suffix)


def _flush_bytes(pending: bytearray, surfaces: list[str]) -> int:
    """Add the surfaces of a run of byte pieces (see :func:`_byte_surfaces`); the chars they make."""
    decoded = _byte_surfaces(pending)
    pending.clear()
    surfaces.extend(decoded)
    return sum(map(len, decoded))


def _byte_surfaces(data: bytearray) -> list[str]:
    """One surface per byte: a valid UTF-8 char is its last byte's (the bytes before it get ""); each
    structurally invalid byte is its own U+FFFD, as SentencePiece decodes byte pieces.

    >>> _byte_surfaces(bytearray(b"a\\xc3\\xa9\\xff"))
    ['a', '', 'é', '�']
    """
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        for size in (1, 2, 3, 4):
            if i + size <= n:
                try:
                    char = bytes(data[i:i + size]).decode("utf-8")
                except UnicodeDecodeError:
                    continue
                out.extend([""] * (size - 1))
                out.append(char)
                i += size
                break
        else:
            out.append("\ufffd")
            i += 1
    return out


def _byte_to_char_offsets(normalized: bytes, to_orig: list[int], original: bytes) -> list[int]:
    orig_char = [0] * (len(original) + 1)
    c = 0
    for b in range(len(original)):
        orig_char[b] = c
        if (original[b] & 0xC0) != 0x80:
            orig_char[b] = c
            c += 1
    # a continuation byte maps to the char it belongs to
    for b in range(len(original)):
        if (original[b] & 0xC0) == 0x80:
            orig_char[b] = orig_char[b - 1] if b else 0
    orig_char[len(original)] = c
    out = []
    for b in range(len(normalized)):
        if (normalized[b] & 0xC0) != 0x80:
            out.append(orig_char[min(to_orig[b], len(original))])
    out.append(orig_char[min(to_orig[-1], len(original))])
    return out
