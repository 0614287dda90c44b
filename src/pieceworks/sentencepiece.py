"""The SentencePiece face: ``SentencePieceProcessor`` with sentencepiece's names and defaults.

A drop-in for ``sentencepiece.SentencePieceProcessor`` (0.2.x): load a
.model file, encode to ids or pieces (one string or a list), sample
(subword regularization), n-best, decode, and the vocabulary queries.
``out_type`` (or its newer name ``return_type``) also takes 0.2.3's
``bytes``, ``"numpy"``, ``"proto"``, ``"serialized_proto"`` and
``"offset_mapping"``: a ``SentencePieceText`` gives each piece's surface and
its byte offsets in the text (see :mod:`pieceworks.models.spm_text`). Each
method is a thin adapter over :class:`pieceworks.models.spm.SentencePieceModel`;
errors are pieceworks errors (which are also ``ValueError``/``IndexError``/
``OSError``, as sentencepiece's are).

>>> import pieceworks.sentencepiece as spm          # doctest: +SKIP
>>> sp = spm.SentencePieceProcessor(model_file="m.model")   # doctest: +SKIP
>>> sp.encode("Hello world", out_type=str)          # doctest: +SKIP
['▁He', 'llo', '▁world']
"""

from __future__ import annotations

import os

from ._kernels.single_text import only_str
from ._kernels.unigram import SpmDefaults, processor_encode
from .errors import ConfigError, InputTypeError
from .fast._pool import cpu_count, run_job
from .formats._sentencepiece_proto import NBestSentencePieceText, SentencePieceText
from .formats.sentencepiece import ModelProto, read_model_proto, write_vocab
from .models.spm import SentencePieceModel, check_sampling, set_random_seed
from .models.spm_text import as_proto, decoded_spans, encoded_spans, offset_mapping
from .sentencepiece_normalizer import SentencePieceNormalizer, add_snake_case, serialized_message

__all__ = ["SentencePieceProcessor", "SentencePieceNormalizer", "ThreadPool", "set_random_generator_seed",
           "SetRandomGeneratorSeed", "set_min_log_level", "SetMinLogLevel", "set_nbest_timeout", "SetNBestTimeout",
           "set_data_dir", "SetDataDir", "ModelProto", "SentencePieceText", "NBestSentencePieceText"]

#: What ``out_type`` / ``return_type`` may be, as in sentencepiece 0.2.1+.
_RETURN_TYPES = (int, str, bytes, "proto", "serialized_proto", "numpy", "offset_mapping")
#: The ones that carry offsets; sentencepiece gives them without bos/eos/reverse/emit_unk_piece.
_PROTO_TYPES = ("proto", "serialized_proto", "offset_mapping")
_NOT_LOADED = "load a model first: SentencePieceProcessor(model_file='x.model') or sp.load('x.model')"


def set_random_generator_seed(seed: int) -> None:
    """Seed every sampling call (``enable_sampling``, ``sample_encode_*``) for reproducible samples.

    Each thread samples from its own generator, and each restarts from
    ``seed``: after this call a thread draws the same samples whatever other
    threads sample meanwhile (as sentencepiece's per-thread generators do).
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputTypeError(f"seed must be an int, got {type(seed).__name__}", fix="pass e.g. 42")
    set_random_seed(seed)


SetRandomGeneratorSeed = set_random_generator_seed


def set_min_log_level(level: int) -> None:
    """Accepted for sentencepiece's API: it quiets sentencepiece's C++ log, and pieceworks logs
    nothing there (its warnings go through Python's ``warnings``)."""
    _check_int("level", level)


def set_nbest_timeout(milliseconds: int) -> None:
    """Accepted for sentencepiece's API: pieceworks' n-best search has no time limit (it is bounded by
    ``nbest_size``, at most 1024, and the text's length)."""
    _check_int("milliseconds", milliseconds)


def set_data_dir(path: str) -> None:
    """Accepted for sentencepiece's API: sentencepiece reads its built-in rule sets (``rule_name``) from
    that folder; pieceworks builds them from Python's Unicode data and needs none."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputTypeError(f"path must be a str, got {type(path).__name__}", fix="pass a folder's path")


SetMinLogLevel, SetNBestTimeout, SetDataDir = set_min_log_level, set_nbest_timeout, set_data_dir


class ThreadPool:
    """``sentencepiece.ThreadPool``: pass it as ``thread_pool=`` to encode lists on ``num_threads``
    threads (pieceworks runs them on its shared pool; this says how many; decoding takes and
    ignores it, a list's decode being faster than handing it to threads).

    >>> ThreadPool(2).num_threads()
    2
    """

    def __init__(self, num_threads: int):
        _check_int("num_threads", num_threads)
        self._num_threads = num_threads

    def num_threads(self) -> int:
        return self._num_threads


def _check_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputTypeError(f"{name} must be an int, got {type(value).__name__}", fix=f"pass an int {name}")


class SentencePieceProcessor:
    """Encode and decode with a SentencePiece .model, as ``sentencepiece.SentencePieceProcessor``."""

    def __init__(self, model_file=None, model_proto=None, out_type=None, add_bos: bool = False,
                 add_eos: bool = False, reverse: bool = False, emit_unk_piece: bool = False,
                 enable_sampling: bool = False, nbest_size: int = -1, alpha: float = 0.1,
                 num_threads: int = -1, return_type=None):
        self._model: SentencePieceModel | None = None
        self._out_type = _return_type(return_type, out_type, int)
        self._add_bos = add_bos
        self._add_eos = add_eos
        self._reverse = reverse
        self._emit_unk_piece = emit_unk_piece
        self._enable_sampling = enable_sampling
        self._nbest_size = nbest_size
        self._alpha = alpha
        self._num_threads = num_threads
        self._defaults: SpmDefaults | None = None   # the kernel encoder with this processor's out_type
        self._fast: SpmDefaults | None = None       # the same, when no default asks for bos/eos/reverse/sampling
        if model_file or model_proto:
            self.Load(model_file=model_file, model_proto=model_proto)

    # -- loading -----------------------------------------------------------------
    def Load(self, model_file=None, model_proto=None) -> bool:
        """Load a .model from a path (``model_file``) or from its bytes (``model_proto``)."""
        if model_file and model_proto:
            raise ConfigError("model_file and model_proto are exclusive", fix="pass only one of them")
        if model_proto:
            return self.LoadFromSerializedProto(model_proto)
        if model_file:
            return self.LoadFromFile(model_file)
        raise ConfigError("either model_file or model_proto must be given",
                          fix="pass model_file='path/to/x.model'")

    def LoadFromFile(self, filename) -> bool:
        self._set_model(SentencePieceModel(read_model_proto(os.fspath(filename))))
        return True

    def _set_model(self, model: SentencePieceModel) -> None:
        self._model = model
        # The one-call kernel encoder serves plain encodes: no sampling, no bos/eos, no reverse.
        plain = (self._out_type in (int, str)
                 and not (self._add_bos or self._add_eos or self._reverse or self._enable_sampling))
        self._defaults = SpmDefaults(model.encoder, self._out_type if self._out_type in (int, str) else int,
                                     self._emit_unk_piece)
        self._fast = self._defaults if plain else None

    def LoadFromSerializedProto(self, serialized) -> bool:
        self._set_model(SentencePieceModel(read_model_proto(serialized_message(serialized, "model_proto"))))
        return True

    @classmethod
    def from_file(cls, model_file, **kwargs) -> "SentencePieceProcessor":
        sp = cls(**kwargs)
        sp.LoadFromFile(model_file)
        return sp

    @classmethod
    def from_proto(cls, model_proto, **kwargs) -> "SentencePieceProcessor":
        """A processor of a serialized ``ModelProto`` (or the message itself)."""
        sp = cls(**kwargs)
        sp.LoadFromSerializedProto(model_proto)
        return sp

    @property
    def model(self) -> SentencePieceModel:
        if self._model is None:
            raise ConfigError("no model is loaded", fix=_NOT_LOADED)
        return self._model

    def serialized_model_proto(self) -> bytes:
        return self.model.proto.SerializeToString()

    def model_proto(self) -> ModelProto:
        """The loaded ``ModelProto`` (a copy you may edit and save)."""
        copy = ModelProto()
        copy.CopyFrom(self.model.proto)
        return copy

    def save_vocab(self, path) -> None:
        """Write the .vocab file (``piece<TAB>score`` per line)."""
        write_vocab(self.model.proto, path)

    # -- encoding -------------------------------------------------------------------
    # Encode is written in Cython (the common call, one text with plain defaults, never enters a
    # Python frame); its docstring says what it does. Every other call lands in _encode_rest.
    Encode = processor_encode

    def _encode_rest(self, input, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                     nbest_size, alpha, num_threads, return_type=None, return_bytes=None):
        """Encode for a list, or for options the kernel's one-text path does not take."""
        out_type = _return_type(return_type, out_type, self._out_type)
        if return_bytes is not None and out_type != "offset_mapping":
            raise ConfigError("return_bytes is only for out_type='offset_mapping'",
                              fix="drop return_bytes, or pass out_type='offset_mapping'")
        if out_type is bytes or out_type == "numpy":
            inner = self._encode_rest(input, str if out_type is bytes else int, add_bos, add_eos, reverse,
                                      emit_unk_piece, enable_sampling, nbest_size, alpha, num_threads)
            return _each_sequence(inner, _as_bytes if out_type is bytes else _as_numpy, type(input) is list)
        if out_type in _PROTO_TYPES:
            return self._encode_general(input, out_type, add_bos, add_eos, reverse, emit_unk_piece,
                                        enable_sampling, nbest_size, alpha, _offsets_in_bytes(input, return_bytes))
        if type(input) is list:
            out = self._encode_batch(input, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                                     num_threads)
            if out is not None:
                return out
        return self._encode_general(input, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                                    nbest_size, alpha)

    def _encode_batch(self, texts: list, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                      num_threads):
        """A list without sampling: all texts in the kernel (on threads), then bos/eos/reverse; else None."""
        defaults = self._defaults
        if defaults is None or (self._enable_sampling if enable_sampling is None else enable_sampling):
            return None
        options = defaults.options(out_type, emit_unk_piece)
        if options is None:
            return None
        out = _encode_list(defaults.encoder, texts, *options, self._num_threads if num_threads is None else num_threads)
        if out is None:
            return None
        add_bos = self._add_bos if add_bos is None else add_bos
        add_eos = self._add_eos if add_eos is None else add_eos
        reverse = self._reverse if reverse is None else reverse
        if add_bos or add_eos or reverse:
            kind = str if options[0] else int
            bos = self._special(self.model.bos_piece, "bos", kind) if add_bos else None
            eos = self._special(self.model.eos_piece, "eos", kind) if add_eos else None
            for seq in out:
                if reverse:
                    seq.reverse()
                if add_bos:
                    seq.insert(0, bos)
                if add_eos:
                    seq.append(eos)
        return out

    def _encode_general(self, input, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                        nbest_size, alpha, return_bytes=False):
        # Kept apart from Encode so that the common call's frame stays small.
        out_type = _return_type(None, out_type, self._out_type)
        add_bos = self._add_bos if add_bos is None else add_bos
        add_eos = self._add_eos if add_eos is None else add_eos
        reverse = self._reverse if reverse is None else reverse
        emit_unk_piece = self._emit_unk_piece if emit_unk_piece is None else emit_unk_piece
        if out_type in _PROTO_TYPES:
            _refuse_extras_with_offsets(out_type, add_bos, add_eos, reverse, emit_unk_piece)
        enable_sampling = self._enable_sampling if enable_sampling is None else enable_sampling
        nbest_size = self._nbest_size if nbest_size is None else nbest_size
        alpha = self._alpha if alpha is None else alpha
        model = self.model
        if enable_sampling:
            model._check_can_sample()
        if enable_sampling is True:
            if nbest_size is None or nbest_size in (0, 1) or alpha is None:
                raise ConfigError(
                    f"enable_sampling=True needs nbest_size > 1 or nbest_size = -1, and alpha (got "
                    f"nbest_size={nbest_size}, alpha={alpha})",
                    fix="pass e.g. nbest_size=-1, alpha=0.1 (whole lattice) or nbest_size=64, alpha=0.1")
            check_sampling(nbest_size, alpha, model.is_unigram)
        if isinstance(input, list):
            return [self._encode_one(x, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                                     nbest_size, alpha, return_bytes) for x in input]
        return self._encode_one(input, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                                nbest_size, alpha, return_bytes)

    def _encode_one(self, text, out_type, add_bos, add_eos, reverse, emit_unk_piece, enable_sampling,
                    nbest_size, alpha, return_bytes=False):
        model = self.model
        _check_text(text)
        if out_type in _PROTO_TYPES:
            segments = model.sample(text, nbest_size, alpha)[1] if enable_sampling else model.encode_segments(text)[1]
            return _spans_as(encoded_spans(model, text, segments), out_type, return_bytes)
        if enable_sampling:
            normalized, segs = model.sample(text, nbest_size, alpha)
            out = ([s[0] for s in segs] if out_type is int
                   else model.segments_to_pieces(normalized, segs, emit_unk_piece))
        elif out_type is int:
            out = model.encode_ids(text)
        else:
            out = model.encode_pieces(text, emit_unk_piece)
        return self._extras(out, out_type, add_bos, add_eos, reverse)

    def _extras(self, out: list, out_type, add_bos, add_eos, reverse) -> list:
        model = self.model
        if reverse:
            out.reverse()
        if add_bos:
            out.insert(0, self._special(model.bos_piece, "bos", out_type))
        if add_eos:
            out.append(self._special(model.eos_piece, "eos", out_type))
        return out

    def _special(self, piece: str, name: str, out_type):
        i = self.model.piece_to_id(piece)
        if self.model.types[i] == 2 and piece != self.model.pieces[i]:
            raise ConfigError(f"add_{name}=True but the model has no {piece!r} piece",
                              fix=f"pass add_{name}=False, or use a model trained with a {name} piece")
        return i if out_type is int else piece

    def EncodeAsPieces(self, input, **kwargs):
        return self.Encode(input, out_type=str, **kwargs)

    def EncodeAsIds(self, input, **kwargs):
        return self.Encode(input, out_type=int, **kwargs)

    def EncodeAsNumpy(self, input, **kwargs):
        return self.Encode(input, return_type="numpy", **kwargs)

    def EncodeAsProto(self, input, **kwargs):
        return self.Encode(input, return_type="proto", **kwargs)

    def EncodeAsOffsetMapping(self, input, **kwargs):
        return self.Encode(input, return_type="offset_mapping", **kwargs)

    def ParallelEncode(self, input, add_bos=None, add_eos=None, reverse=None, emit_unk_piece=None, chunk_len=None,
                       num_threads=None, thread_pool=None, return_type=None, out_type=None):
        """``Encode`` of a long text that sentencepiece cuts at whitespace into ``chunk_len``-byte chunks
        to encode them in parallel; the result is the same as ``Encode``'s, which is what this returns."""
        if isinstance(chunk_len, bool) or not isinstance(chunk_len, int) or chunk_len <= 0:
            raise ConfigError(f"chunk_len must be a positive int, got {chunk_len!r}", fix="pass e.g. chunk_len=4096")
        kind = _return_type(return_type, out_type, self._out_type)
        if kind == "offset_mapping":
            raise ConfigError("ParallelEncode does not give offset_mapping (nor does sentencepiece)",
                              fix="use encode(..., out_type='offset_mapping')")
        return self.Encode(input, add_bos=add_bos, add_eos=add_eos, reverse=reverse, emit_unk_piece=emit_unk_piece,
                           num_threads=num_threads, thread_pool=thread_pool, return_type=kind)

    def ParallelEncodeAsPieces(self, input, **kwargs):
        return self.ParallelEncode(input, return_type=str, **kwargs)

    def ParallelEncodeAsIds(self, input, **kwargs):
        return self.ParallelEncode(input, return_type=int, **kwargs)

    def ParallelEncodeAsNumpy(self, input, **kwargs):
        return self.ParallelEncode(input, return_type="numpy", **kwargs)

    def ParallelEncodeAsProto(self, input, **kwargs):
        return self.ParallelEncode(input, return_type="proto", **kwargs)

    def SampleEncodeAsPieces(self, input, nbest_size=None, alpha=None, **kwargs):
        return self.Encode(input, out_type=str, enable_sampling=True, nbest_size=nbest_size, alpha=alpha,
                           **kwargs)

    def SampleEncodeAsIds(self, input, nbest_size=None, alpha=None, **kwargs):
        return self.Encode(input, out_type=int, enable_sampling=True, nbest_size=nbest_size, alpha=alpha,
                           **kwargs)

    def SampleEncodeAsNumpy(self, input, nbest_size=None, alpha=None, **kwargs):
        return self.Encode(input, return_type="numpy", enable_sampling=True, nbest_size=nbest_size, alpha=alpha,
                           **kwargs)

    def SampleEncodeAsProto(self, input, nbest_size=None, alpha=None, **kwargs):
        return self.Encode(input, return_type="proto", enable_sampling=True, nbest_size=nbest_size, alpha=alpha,
                           **kwargs)

    def NBestEncode(self, input, out_type=None, add_bos=None, add_eos=None, reverse=None, emit_unk_piece=None,
                    nbest_size=None, return_type=None):
        """The ``nbest_size`` best segmentations of ``input``, best first (Unigram models).

        As ids, pieces, bytes pieces or int32 arrays; or as one
        ``NBestSentencePieceText`` (``"proto"``, ``"serialized_proto"``), each
        segmentation with its pieces' surfaces and offsets and its score.
        """
        out_type = _return_type(return_type, out_type, self._out_type)
        if out_type == "offset_mapping":
            raise ConfigError("NBestEncode does not give offset_mapping (nor does sentencepiece)",
                              fix="use out_type='proto': each piece has its begin and end")
        nbest_size = self._nbest_size if nbest_size is None else nbest_size
        if isinstance(nbest_size, bool) or not isinstance(nbest_size, int):
            raise ConfigError(f"nbest_size must be an int, got {nbest_size!r}", fix="pass e.g. nbest_size=10")
        nbest_size = max(nbest_size, 1)
        if isinstance(input, list):
            return [self.NBestEncode(x, out_type, add_bos, add_eos, reverse, emit_unk_piece, nbest_size)
                    for x in input]
        if out_type in _PROTO_TYPES:
            return self._nbest_text(input, out_type, add_bos, add_eos, reverse, emit_unk_piece, nbest_size)
        inner = str if out_type is bytes else int if out_type == "numpy" else out_type
        best = [out for out, _ in self._nbest(input, inner, add_bos, add_eos, reverse, emit_unk_piece, nbest_size)]
        if inner is out_type:
            return best
        return _each_sequence(best, _as_bytes if out_type is bytes else _as_numpy, True)

    def _nbest_text(self, text, out_type, add_bos, add_eos, reverse, emit_unk_piece, nbest_size):
        _refuse_extras_with_offsets(out_type, self._add_bos if add_bos is None else add_bos,
                                    self._add_eos if add_eos is None else add_eos,
                                    self._reverse if reverse is None else reverse,
                                    self._emit_unk_piece if emit_unk_piece is None else emit_unk_piece)
        model = self.model
        _check_text(text)
        nbests = NBestSentencePieceText()
        for segments, score in model.nbest(text, nbest_size)[1]:
            nbests.nbests.append(as_proto(encoded_spans(model, text, segments), score))
        return nbests.SerializeToString() if out_type == "serialized_proto" else nbests

    def NBestEncodeWithScores(self, input, nbest_size, out_type=int):
        """``[(ids or pieces, score)]``: the n best segmentations with their model scores."""
        return self._nbest(input, _check_out_type(out_type), None, None, None, None, max(int(nbest_size), 1))

    def _nbest(self, text, out_type, add_bos, add_eos, reverse, emit_unk_piece, nbest_size):
        model = self.model
        _check_text(text)
        add_bos = self._add_bos if add_bos is None else add_bos
        add_eos = self._add_eos if add_eos is None else add_eos
        reverse = self._reverse if reverse is None else reverse
        emit_unk_piece = self._emit_unk_piece if emit_unk_piece is None else emit_unk_piece
        normalized, results = model.nbest(text, nbest_size)
        return self._scored(normalized, results, out_type, add_bos, add_eos, reverse, emit_unk_piece)

    def NBestEncodeAsPieces(self, input, nbest_size=None, **kwargs):
        return self.NBestEncode(input, out_type=str, nbest_size=nbest_size, **kwargs)

    def NBestEncodeAsIds(self, input, nbest_size=None, **kwargs):
        return self.NBestEncode(input, out_type=int, nbest_size=nbest_size, **kwargs)

    def NBestEncodeAsNumpy(self, input, nbest_size=None, **kwargs):
        return self.NBestEncode(input, return_type="numpy", nbest_size=nbest_size, **kwargs)

    def NBestEncodeAsProto(self, input, nbest_size=None, **kwargs):
        return self.NBestEncode(input, return_type="proto", nbest_size=nbest_size, **kwargs)

    def SampleEncodeAndScore(self, input, out_type=None, add_bos=None, add_eos=None, reverse=None,
                             emit_unk_piece=None, num_samples=None, alpha=None, wor=None, include_best=None):
        """``[(ids or pieces, score)]``: ``num_samples`` sampled segmentations of ``input`` (a str, or each of a list).

        Unigram models, with sentencepiece's defaults (``num_samples=1``,
        ``alpha=1.0``, the inverse temperature). With replacement (``wor=False``)
        each sample is drawn from all segmentations with probability
        ∝ exp(alpha·score) and scored with that log-probability. Without
        replacement (``wor=True``) the samples are distinct: the
        ``num_samples`` segmentations with the largest Gumbel-perturbed
        log-probabilities (the Gumbel-top-k trick), each scored with the
        log-probability that it is in such a sample. ``include_best=True``
        (needs ``wor=True``) puts the best segmentation first, with score 0,
        and samples the others among the rest. When a text has no more
        segmentations than ``num_samples``, all of them come back, each
        with score 0 (sentencepiece 0.2.0 drops one of them, or fails).

        >>> sp.SampleEncodeAndScore("hello", out_type=str, num_samples=2, wor=True, include_best=True)  # doctest: +SKIP
        [(['▁he', 'll', 'o'], 0.0), (['▁he', 'l', 'l', 'o'], -0.0266)]
        """
        out_type = _check_out_type(self._out_type if out_type is None else out_type)
        add_bos = self._add_bos if add_bos is None else add_bos
        add_eos = self._add_eos if add_eos is None else add_eos
        reverse = self._reverse if reverse is None else reverse
        emit_unk_piece = self._emit_unk_piece if emit_unk_piece is None else emit_unk_piece
        num_samples = 1 if num_samples is None else num_samples
        alpha = 1.0 if alpha is None else alpha
        wor = False if wor is None else wor
        include_best = False if include_best is None else include_best
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ConfigError(f"num_samples must be a positive int, got {num_samples!r}", fix="pass e.g. num_samples=4")
        if include_best and not wor:
            raise ConfigError("include_best=True needs sampling without replacement",
                              fix="pass wor=True with include_best=True")
        check_sampling(-1, alpha, True)
        if isinstance(input, list):
            return [self._sample_and_score(x, out_type, add_bos, add_eos, reverse, emit_unk_piece, num_samples, alpha,
                                           wor, include_best) for x in input]
        return self._sample_and_score(input, out_type, add_bos, add_eos, reverse, emit_unk_piece, num_samples, alpha,
                                      wor, include_best)

    def _sample_and_score(self, text, out_type, add_bos, add_eos, reverse, emit_unk_piece, num_samples, alpha, wor,
                          include_best):
        model = self.model
        _check_text(text)
        normalized, results = model.sample_and_score(text, num_samples, alpha, bool(wor), bool(include_best))
        return self._scored(normalized, results, out_type, add_bos, add_eos, reverse, emit_unk_piece)

    def _scored(self, normalized, results, out_type, add_bos, add_eos, reverse, emit_unk_piece) -> list:
        """``(ids or pieces, score)`` of each scored segmentation of ``normalized``, bos/eos/reverse applied."""
        out = []
        for segs, score in results:
            seq = ([s[0] for s in segs] if out_type is int
                   else self.model.segments_to_pieces(normalized, segs, emit_unk_piece))
            out.append((self._extras(seq, out_type, add_bos, add_eos, reverse), score))
        return out

    def SampleEncodeAndScoreAsPieces(self, input, num_samples=None, alpha=None, **kwargs):
        return self.SampleEncodeAndScore(input, out_type=str, num_samples=num_samples, alpha=alpha, **kwargs)

    def SampleEncodeAndScoreAsIds(self, input, num_samples=None, alpha=None, **kwargs):
        return self.SampleEncodeAndScore(input, out_type=int, num_samples=num_samples, alpha=alpha, **kwargs)

    def CalculateEntropy(self, input, alpha: float):
        """Entropy of the segmentation distribution exp(alpha·score) of ``input`` (or each of a list)."""
        if isinstance(input, list):
            return [self.model.entropy(x, alpha) for x in input]
        return self.model.entropy(input, alpha)

    def Normalize(self, input, with_offsets: bool = False):
        """The normalized text (with ``with_offsets``: and each normalized char's original char offset)."""
        if isinstance(input, list):
            return [self.model.normalize(x, with_offsets) for x in input]
        return self.model.normalize(input, with_offsets)

    # -- decoding --------------------------------------------------------------------
    def Decode(self, input, out_type=None, num_threads=None, return_type=None, thread_pool=None,
               return_bytes=None):
        """Text of ids or pieces (or of a list of such sequences).

        ``out_type`` (or ``return_type``): ``str``, ``bytes`` (the text as
        UTF-8), ``"proto"``/``"serialized_proto"`` (a ``SentencePieceText``:
        each piece's surface and byte offsets in the text) or
        ``"offset_mapping"`` (``{"text", "ids", "pieces", "offsets"}``, char
        offsets; with ``return_bytes``, bytes and byte offsets).
        """
        kind = _return_type(return_type, out_type, str)
        if kind not in (str, bytes) + _PROTO_TYPES:
            raise ConfigError(f"Decode cannot give out_type={kind!r}",
                              fix="use str, bytes, 'proto', 'serialized_proto' or 'offset_mapping'")
        if return_bytes is not None and kind != "offset_mapping":
            raise ConfigError("return_bytes is only for out_type='offset_mapping'",
                              fix="drop return_bytes, or pass out_type='offset_mapping'")
        if input is None:
            input = []
        if isinstance(input, (str, int)) and not isinstance(input, bool):
            input = [input] if input != "" else []
        if not isinstance(input, (list, tuple)) and not hasattr(input, "tolist"):
            raise InputTypeError(f"decode takes ids or pieces, got {type(input).__name__}",
                                 fix="pass a list of ints, a list of str, or a list of such lists")
        if hasattr(input, "tolist"):
            input = input.tolist()
        if input and all(isinstance(x, (list, tuple)) for x in input):
            if kind is str and all(type(x) is list for x in input):
                decode = self.model.decode_ids      # (pieces, and bad ids, take its long way)
                return [decode(x) if not x or type(x[0]) is int else self.Decode(x) for x in input]
            return [self.Decode(list(x), kind, return_bytes=return_bytes) for x in input]
        return self._decode_one(input, kind, bool(return_bytes))

    def _decode_one(self, input: list, kind, return_bytes: bool):
        model = self.model
        if kind is str or kind is bytes:
            text = model.decode_pieces(input) if input and isinstance(input[0], str) else model.decode_ids(input)
            return text if kind is str else text.encode("utf-8")
        if input and isinstance(input[0], str):
            pieces, ids = input, model.pieces_to_ids(input)
        else:
            ids = [model.check_id(i, f"ids[{n}]") for n, i in enumerate(input)]
            pieces = [model.pieces[i] for i in ids]
        return _spans_as(decoded_spans(model, pieces, ids), kind, return_bytes, with_text=True)

    def DecodePieces(self, input, out_type=None, **kwargs):
        return self.Decode(input, out_type, **kwargs)

    def DecodeIds(self, input, out_type=None, **kwargs):
        return self.Decode(input, out_type, **kwargs)

    def DecodePiecesAsProto(self, input, **kwargs):
        return self.Decode(input, return_type="proto", **kwargs)

    def DecodeIdsAsProto(self, input, **kwargs):
        return self.Decode(input, return_type="proto", **kwargs)

    # -- vocabulary -----------------------------------------------------------------
    def GetPieceSize(self) -> int:
        return len(self.model)

    def PieceToId(self, piece):
        model = self._model
        if type(piece) is str and model is not None:
            found = model._piece_table().get(piece)    # (the common call: one dict look-up, no kernel call)
            return model.piece_to_id(piece) if found is None else found
        if isinstance(piece, (list, tuple)):
            if only_str(piece):
                return self.model.pieces_to_ids(piece)
            return [self.PieceToId(p) for p in piece]
        if not isinstance(piece, str):
            raise InputTypeError(f"piece must be a str, got {type(piece).__name__}", fix="pass a piece string")
        return self.model.piece_to_id(piece)

    def IdToPiece(self, id):
        model = self._model
        if type(id) is int and model is not None and 0 <= id < len(model.pieces):
            return model.pieces[id]     # (the common call, without a method frame)
        if isinstance(id, (list, tuple)):
            if all(type(i) is int for i in id):
                return self.model.ids_to_pieces(id)
            return [self.IdToPiece(i) for i in id]
        return self.model.id_to_piece(id)

    def GetScore(self, id):
        model = self._model
        if type(id) is int and model is not None and 0 <= id < len(model.scores):
            return model.scores[id]     # (the common call, without a method frame)
        if isinstance(id, (list, tuple)):
            return [self.GetScore(i) for i in id]
        return self.model.get_score(id)

    def _is(self, id, kind: int):
        if isinstance(id, (list, tuple)):
            return [self._is(i, kind) for i in id]
        return self.model.piece_type(id) == kind

    def IsUnknown(self, id):
        return self._is(id, 2)

    def IsControl(self, id):
        return self._is(id, 3)

    def IsUnused(self, id):
        return self._is(id, 5)

    def IsByte(self, id):
        return self._is(id, 6)

    def unk_id(self) -> int:
        return self.model.unk_id()

    def bos_id(self) -> int:
        return self.model.bos_id()

    def eos_id(self) -> int:
        return self.model.eos_id()

    def pad_id(self) -> int:
        return self.model.pad_id()

    piece_size = GetPieceSize
    vocab_size = GetPieceSize

    def __len__(self) -> int:
        return self.GetPieceSize()

    def __getitem__(self, piece):
        return self.PieceToId(piece)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_model"] = None if self._model is None else self.serialized_model_proto()
        state["_fast"] = state["_defaults"] = None  # made again by the load in __setstate__
        return state

    def __setstate__(self, state):
        proto = state.pop("_model", None)
        self.__dict__.update(state)
        self._model = None
        if proto is not None:
            self.LoadFromSerializedProto(proto)

    def __repr__(self) -> str:
        if self._model is None:
            return "SentencePieceProcessor(<no model>)"
        return f"SentencePieceProcessor({self._model.kind_name}, vocab_size={len(self._model)})"

    Tokenize = Encode
    Detokenize = Decode


def _encode_list(encoder, texts: list, as_pieces: bool, emit_unk, num_threads):
    """``encoder.encode`` of every text, on up to ``num_threads`` threads (sentencepiece: -1 = CPUs).

    The list is cut into chunks of about 32 KB of text; pool threads and the
    calling thread each take the next chunk as they come free and encode it
    without the GIL; the calling thread also makes the result lists of the
    chunks done, in order, between its own chunks. So the result equals
    the serial one, and a thread slowed down by a busy core does less. None:
    some text needs the general path.
    """
    threads = _thread_count(num_threads, len(texts))
    if threads <= 1:
        return encoder.encode_batch(texts, 0, len(texts), as_pieces, emit_unk)
    job = encoder.batch_job(texts, as_pieces)
    return None if job is None else run_job(job, threads, emit_unk)


def _thread_count(num_threads, n_items: int) -> int:
    # sentencepiece's rule: a negative count means one thread per CPU; at least 1, at most one per item.
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise InputTypeError(f"num_threads must be an int, got {type(num_threads).__name__}",
                             fix="pass e.g. num_threads=4, or -1 for one thread per CPU")
    if num_threads < 0:
        num_threads = cpu_count()
    return max(1, min(num_threads, n_items, 256))




def _return_type(return_type, out_type, default):
    """The one output type ``return_type`` or its older name ``out_type`` asks for (else ``default``)."""
    if out_type is not None:
        if return_type is not None:
            raise ConfigError(f"out_type={out_type!r} and return_type={return_type!r} are one option given twice",
                              fix="pass only return_type (out_type is its older name)")
        return_type = out_type
    if return_type is None:
        return default
    if return_type == "immutable_proto":
        raise ConfigError("out_type='immutable_proto' is gone from sentencepiece", fix="use out_type='proto'")
    if not any(return_type is t if isinstance(t, type) else return_type == t for t in _RETURN_TYPES):
        raise ConfigError(f"out_type must be one of int, str, bytes, 'proto', 'serialized_proto', 'numpy', "
                          f"'offset_mapping'; got {return_type!r}", fix="pass out_type=int or out_type=str")
    return return_type


def _refuse_extras_with_offsets(out_type, add_bos, add_eos, reverse, emit_unk_piece) -> None:
    # sentencepiece refuses these too ("not supported in proto API"): a bos or a reversed order
    # has no place in the text the offsets point into.
    asked = [name for name, value in (("add_bos", add_bos), ("add_eos", add_eos), ("reverse", reverse),
                                      ("emit_unk_piece", emit_unk_piece)) if value]
    if asked:
        raise ConfigError(f"out_type={out_type!r} gives the pieces as they sit in the text, so it cannot "
                          f"{' or '.join(asked)}", fix=f"pass {', '.join(n + '=False' for n in asked)} "
                                                      f"(or use out_type=int or str)")


def _offsets_in_bytes(input, return_bytes) -> bool:
    """sentencepiece's default for offset_mapping: byte offsets when the input is bytes."""
    if return_bytes is not None:
        return bool(return_bytes)
    first = input[0] if type(input) is list and input else input
    return isinstance(first, bytes)


def _spans_as(spans, out_type, return_bytes: bool, with_text: bool = False):
    """An encoding's or decoding's spans as ``out_type`` asks: a SentencePieceText, serialized, or the
    offset mapping."""
    if out_type == "proto":
        return as_proto(spans)
    if out_type == "serialized_proto":
        return as_proto(spans).SerializeToString()
    return offset_mapping(spans, return_bytes, with_text)


def _each_sequence(out, convert, is_list: bool):
    return [convert(seq) for seq in out] if is_list else convert(out)


def _as_bytes(pieces: list) -> list:
    return [piece.encode("utf-8") for piece in pieces]


def _as_numpy(ids: list):
    try:
        import numpy
    except ImportError as exc:  # NumPy is not a dependency of pieceworks
        raise ConfigError("out_type='numpy' needs NumPy, which is not installed",
                          fix="pip install numpy, or use out_type=int") from exc
    return numpy.asarray(ids, dtype=numpy.int32)


def _check_out_type(out_type):
    if out_type is not int and out_type is not str:
        raise ConfigError(f"out_type must be int or str, got {out_type!r}", fix="pass out_type=int or out_type=str")
    return out_type


def _check_text(text) -> None:
    if not isinstance(text, (str, bytes)):
        raise InputTypeError(f"input must be str or bytes, got {type(text).__name__}",
                             fix="pass a str, or a list of str")


add_snake_case(SentencePieceProcessor)
SentencePieceProcessor.load = SentencePieceProcessor.Load


# == training (SentencePieceTrainer) ==========================================================
__all__ += ["SentencePieceTrainer"]


class SentencePieceTrainer:
    """``sentencepiece.SentencePieceTrainer``: train a .model with ``spm_train``'s flags.

    ``train('--input=corpus.txt --model_prefix=m --vocab_size=8000 --model_type=unigram')``
    or the same as keyword arguments (``input=..., model_prefix=..., vocab_size=8000``;
    lists for repeated flags, Python bools). Writes ``m.model`` and ``m.vocab``;
    with ``model_writer=f`` (a binary file object) writes the serialized model to ``f``
    instead; ``sentence_iterator`` replaces ``--input``. A flag SentencePiece does
    not have raises :class:`~pieceworks.errors.ConfigError` naming the closest one.

    Unigram follows ``spm_train``'s algorithm (seeds, EM, pruning) and BPE its merge
    rule (see :mod:`pieceworks.trainers.spm`); the result is close to, not
    byte-identical with, SentencePiece's (a different suffix sorter and float
    summation order break its ties differently).
    """

    @staticmethod
    def train(arg=None, logstream=None, **kwargs) -> None:
        from .formats.sentencepiece import write_model_proto
        from .trainers.spm import parse_flags, train_model_proto

        iterator = kwargs.pop("sentence_iterator", None) or kwargs.pop("sentence_reader", None)
        writer = kwargs.pop("model_writer", None)
        n_threads = kwargs.pop("n_threads", None)
        spec, norm = parse_flags(arg, **kwargs)
        if not spec.model_prefix and writer is None:
            raise ConfigError("no --model_prefix", fix="pass --model_prefix=NAME (writes NAME.model and NAME.vocab) "
                                                       "or model_writer=a binary file")
        lines = None
        if iterator is not None:
            if spec.input:
                raise ConfigError("--input and sentence_iterator are exclusive", fix="pass only one of them")
            lines = (_check_sentence(s) for s in iterator)
        proto = train_model_proto(spec, norm, lines, n_threads=n_threads)
        if writer is not None:
            writer.write(proto.SerializeToString())
            return None
        write_model_proto(proto, spec.model_prefix + ".model")
        write_vocab(proto, spec.model_prefix + ".vocab")
        return None

    Train = train


def _check_sentence(sentence) -> str:
    if isinstance(sentence, bytes):
        return sentence.decode("utf-8", "replace")
    if not isinstance(sentence, str):
        raise InputTypeError(f"sentence_iterator must yield str, got {type(sentence).__name__}",
                             fix="yield one sentence (a str) at a time")
    return sentence
