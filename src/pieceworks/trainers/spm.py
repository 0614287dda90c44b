"""SentencePiece training: ``spm_train``'s flags, corpus loading, and the four model types.

What every SentencePiece trainer shares lives here (SentencePiece's
``TrainerInterface``): the options (a ``TrainerSpec`` and a
``NormalizerSpec``, the same protobuf messages a .model file stores, so the
options are data and the model records them), reading and sampling the
sentences, normalizing them as the model will, choosing the required
characters by ``character_coverage``, the meta pieces (``<unk>``, ``<s>``,
``</s>``, ``<pad>``, control and user-defined symbols, byte pieces) and
writing the ``ModelProto``. Each model type adds only its piece selection:

* ``unigram`` — :func:`pieceworks.trainers.unigram.train_spm_unigram`
  (seeds from a suffix array, EM with the digamma update, pruning);
* ``bpe`` — :func:`train_spm_bpe`: merges over the words with ``▁``, the
  most frequent pair first (ties: the shorter piece, then the smaller
  UTF-8 string), scores ``-rank``, the required chars last;
* ``char`` and ``word`` — every char / every whitespace-split word, by
  frequency.

>>> spec, norm = parse_flags("--input=a.txt --model_prefix=m --vocab_size=100 --model_type=bpe --split_digits")
>>> spec.vocab_size, spec.model_type, spec.split_digits, norm.name
(100, 2, True, 'nmt_nfkc')
>>> parse_flags("--vocab_sise=100")  # doctest: +ELLIPSIS
Traceback (most recent call last):
  ...
pieceworks.errors.ConfigError: unknown SentencePiece trainer flag --vocab_sise. Fix: did you mean --vocab_size? ...
"""

from __future__ import annotations

import difflib
import os
import random
import re
import struct
from collections import Counter
from typing import Iterable, Iterator

from ..errors import ConfigError, FileFormatError, InputTypeError, TrainingError
from ..formats._sentencepiece_proto import MODEL_TYPES, PIECE_TYPES, ModelProto, NormalizerSpec, TrainerSpec
from .sources import blocks_of_lines

__all__ = ["parse_flags", "train_model_proto", "load_sentences", "split_into_words", "meta_pieces",
           "is_valid_piece", "train_spm_bpe", "UNK_CHAR", "SPACE", "Loaded"]

SPACE = "\u2581"
#: SentencePiece's stand-in for a char outside the required set during training (U+2585).
UNK_CHAR = "\u2585"
_TAB = "\t"

# spm_train flags that configure the normalizer rather than the trainer.
_NORMALIZER_FLAGS = {"normalization_rule_name": "name", "normalization_rule_tsv": "normalization_rule_tsv",
                     "add_dummy_prefix": "add_dummy_prefix", "remove_extra_whitespaces": "remove_extra_whitespaces",
                     "escape_whitespaces": "escape_whitespaces"}
# Accepted for compatibility; they change nothing in a pieceworks run.
_IGNORED_FLAGS = {"minloglevel", "logtostderr", "log_level", "random_seed", "denormalization_rule_tsv",
                  "differential_privacy_noise_level", "differential_privacy_clipping_threshold",
                  "enable_differential_privacy", "train_extremely_large_corpus", "mining_sentence_size",
                  "training_sentence_size", "self_test_sample_size", "accept_language"}
_MODEL_TYPE_NAMES = {name.lower(): value for name, value in MODEL_TYPES.items()}
_RANGES = {  # SentencePiece's VerifySpec
    "character_coverage": (0.98, 1.0), "max_sentencepiece_length": (1, 512), "num_sub_iterations": (1, 10),
    "num_threads": (1, 128), "shrinking_factor": (0.5, 0.95), "max_sentence_length": (10, 1073741824),
}


# -- flags ---------------------------------------------------------------------------
def parse_flags(args: "str | dict | None" = None, **kwargs) -> tuple[TrainerSpec, NormalizerSpec]:
    """``spm_train`` flags (a string, a dict or keyword arguments) → ``(TrainerSpec, NormalizerSpec)``.

    Flags are the fields of the two specs, spelled as SentencePiece spells
    them; lists are comma-separated; a boolean flag alone means true.
    An unknown flag raises :class:`~pieceworks.errors.ConfigError` naming
    the closest real one.
    """
    pairs = _flag_pairs(args) + [(k, v) for k, v in kwargs.items()]
    spec, norm = TrainerSpec(), NormalizerSpec()
    for key, value in pairs:
        _set_flag(spec, norm, key, value)
    if not norm.name:
        norm.name = "nmt_nfkc" if not norm.normalization_rule_tsv else "user_defined"
    _verify(spec)
    return spec, norm


def _flag_pairs(args) -> list[tuple[str, object]]:
    if args is None:
        return []
    if isinstance(args, dict):
        return list(args.items())
    if not isinstance(args, str):
        raise InputTypeError(f"trainer flags must be a str or dict, got {type(args).__name__}",
                             fix="pass '--input=corpus.txt --model_prefix=m --vocab_size=8000' or keyword arguments")
    out = []
    for token in args.split():
        if not token.startswith("--"):
            raise ConfigError(f"trainer flag {token!r} does not start with --",
                              fix="write flags as --name=value, e.g. --vocab_size=8000")
        key, eq, value = token[2:].partition("=")
        out.append((key, value if eq else True))
    return out


def _set_flag(spec: TrainerSpec, norm: NormalizerSpec, key: str, value) -> None:
    if key in _IGNORED_FLAGS:
        return
    if key in _NORMALIZER_FLAGS:
        _set_field(norm, _NORMALIZER_FLAGS[key], value, key)
        return
    if key == "model_type":
        name = str(value).lower()
        if name not in _MODEL_TYPE_NAMES:
            raise ConfigError(f"--model_type={value} is not a SentencePiece model type",
                              fix="use --model_type=unigram, bpe, char or word")
        spec.model_type = _MODEL_TYPE_NAMES[name]
        return
    if key not in TrainerSpec.DESCRIPTOR.fields_by_name:
        names = list(TrainerSpec.DESCRIPTOR.fields_by_name) + list(_NORMALIZER_FLAGS)
        close = difflib.get_close_matches(key, names, n=1)
        hint = f"did you mean --{close[0]}? " if close else ""
        raise ConfigError(f"unknown SentencePiece trainer flag --{key}",
                          fix=f"{hint}the flags are TrainerSpec's fields (spm_train --help lists them)")
    _set_field(spec, key, value, key)


def _set_field(message, name: str, value, flag: str) -> None:
    field = message.DESCRIPTOR.fields_by_name[name]
    try:
        if field.is_repeated:
            items = value if isinstance(value, (list, tuple)) else [v for v in str(value).split(",") if v]
            getattr(message, name).extend(_convert(field, v) for v in items)
        else:
            setattr(message, name, _convert(field, value))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"--{flag}={value!r}: {exc}",
                          fix=f"give --{flag} a value of type {_type_name(field)}") from None


def _convert(field, value):
    t = field.type
    if t == field.TYPE_BOOL:
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in ("true", "1", "yes", ""):
            return True
        if text in ("false", "0", "no"):
            return False
        raise ValueError(f"{value!r} is not a boolean")
    if t in (field.TYPE_INT32, field.TYPE_UINT64, field.TYPE_INT64):
        if isinstance(value, bool):
            raise ValueError("expected an integer")
        return int(value)
    if t == field.TYPE_FLOAT:
        return float(value)
    if t == field.TYPE_BYTES:
        return value if isinstance(value, bytes) else str(value).encode()
    if t == field.TYPE_ENUM:
        return int(value)
    return str(value)


def _type_name(field) -> str:
    return {field.TYPE_BOOL: "bool (true/false)", field.TYPE_FLOAT: "float", field.TYPE_STRING: "str"}.get(
        field.type, "int")


def _verify(spec: TrainerSpec) -> None:
    if spec.vocab_size <= 0:
        raise ConfigError(f"--vocab_size={spec.vocab_size} must be positive", fix="use e.g. --vocab_size=8000")
    for name, (lo, hi) in _RANGES.items():
        value = getattr(spec, name)
        if not lo <= value <= hi:
            raise ConfigError(f"--{name}={value} is outside SentencePiece's range [{lo}, {hi}]",
                              fix=f"choose --{name} between {lo} and {hi}")
    if 0 < spec.input_sentence_size <= 100:
        raise ConfigError(f"--input_sentence_size={spec.input_sentence_size} is too small",
                          fix="use 0 (all sentences) or more than 100")
    if spec.use_all_vocab and spec.model_type in (MODEL_TYPES["UNIGRAM"], MODEL_TYPES["BPE"]):
        raise ConfigError("--use_all_vocab=true is only for char and word models", fix="drop --use_all_vocab")
    for name in ("unk_piece", "bos_piece", "eos_piece", "pad_piece"):
        if not getattr(spec, name):
            raise ConfigError(f"--{name} is empty", fix=f"give --{name} a non-empty string")
    if spec.seed_sentencepieces_file:
        raise ConfigError("--seed_sentencepieces_file is not supported by pieceworks",
                          fix="drop it; seeds are mined from the corpus")


# -- meta pieces -------------------------------------------------------------------
def meta_pieces(spec: TrainerSpec) -> dict[int, tuple[str, int]]:
    """``{id: (piece, type)}``: unk/bos/eos/pad at their ids, then control, user-defined and byte pieces.

    >>> s, _ = parse_flags(vocab_size=10, control_symbols="<sep>", user_defined_symbols="@")
    >>> meta_pieces(s)
    {0: ('<unk>', 2), 1: ('<s>', 3), 2: ('</s>', 3), 3: ('<sep>', 3), 4: ('@', 4)}
    """
    meta: dict[int, tuple[str, int]] = {}
    has_unk = False
    for id_, piece in ((spec.unk_id, spec.unk_piece), (spec.bos_id, spec.bos_piece),
                       (spec.eos_id, spec.eos_piece), (spec.pad_id, spec.pad_piece)):
        if id_ < 0:
            continue
        if id_ >= spec.vocab_size or id_ in meta or (has_unk and piece == spec.unk_piece):
            raise ConfigError(f"special piece {piece!r} has id {id_}, which is taken or not below vocab_size "
                              f"{spec.vocab_size}", fix="give unk/bos/eos/pad distinct ids below vocab_size "
                                                        "(or -1 to leave one out)")
        if piece == spec.unk_piece:
            has_unk = True
        meta[id_] = (piece, PIECE_TYPES["UNKNOWN"] if piece == spec.unk_piece else PIECE_TYPES["CONTROL"])
    if not has_unk:
        raise ConfigError(f"{spec.unk_piece} must be defined", fix="set --unk_id to a non-negative id")
    seen: set[str] = set()
    next_id = 0
    symbols = [(w, PIECE_TYPES["CONTROL"]) for w in spec.control_symbols]
    symbols += [(w, PIECE_TYPES["USER_DEFINED"]) for w in spec.user_defined_symbols]
    if spec.byte_fallback:
        symbols += [(f"<0x{i:02X}>", PIECE_TYPES["BYTE"]) for i in range(256)]
    for piece, kind in symbols:
        if piece in seen:
            raise ConfigError(f"{piece!r} is defined twice", fix="list each control/user-defined symbol once")
        seen.add(piece)
        if piece == spec.unk_piece:
            raise ConfigError(f"{piece} must not be a control or user-defined symbol",
                              fix="leave it out of --control_symbols/--user_defined_symbols")
        special = {spec.bos_piece: spec.bos_id, spec.eos_piece: spec.eos_id, spec.pad_piece: spec.pad_id}
        if piece in special and special[piece] >= 0:
            meta[special[piece]] = (piece, kind)
            continue
        while next_id in meta:
            next_id += 1
        meta[next_id] = (piece, kind)
    return meta


# -- loading -------------------------------------------------------------------------
class Loaded:
    """The normalized training sentences and what LoadSentences learns about them."""

    def __init__(self, sentences: list[tuple[str, int]], required: dict[str, int], meta: dict):
        self.sentences = sentences      # (normalized text with rare chars as ▅, count)
        self.required = required        # required char → count
        self.meta = meta

    def required_sorted(self) -> list[tuple[str, int]]:
        """Required chars by count (descending), then code point: SentencePiece's ``Sorted``."""
        return sorted(self.required.items(), key=lambda kv: (-kv[1], kv[0]))


_READ_BLOCK = 1 << 22


def read_lines(paths: Iterable[str]) -> Iterator[str]:
    """Lines of the input files (UTF-8; the newline dropped, a ``\\r`` kept, as SentencePiece reads).

    Files are read and decoded a block of whole lines at a time (no byte of a
    UTF-8 sequence is a line feed, so this decodes as line by line would).
    """
    for path in paths:
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise FileFormatError(path, f"cannot read the training input: {exc.strerror}",
                                  fix="check the --input path") from exc
        with fh:
            for data in blocks_of_lines(fh, _READ_BLOCK):
                end = len(data) - 1 if data.endswith(b"\n") else len(data)
                yield from str(memoryview(data)[:end], "utf-8", "replace").split("\n")


def _select(lines: Iterable[str], spec: TrainerSpec) -> list[tuple[str, int]]:
    """Skip what SentencePiece skips; sample ``input_sentence_size`` sentences (seeded reservoir)."""
    limit = spec.input_sentence_size
    tsv = spec.input_format == "tsv"
    if spec.input_format not in ("", "text", "tsv"):
        raise ConfigError(f"--input_format={spec.input_format} is not supported", fix="use text or tsv")
    rng = random.Random(12345678)
    max_bytes = spec.max_sentence_length    # a char is at most 4 UTF-8 bytes: most lines need no encode
    out: list[tuple[str, int]] = []
    seen = 0
    for line in lines:
        freq = 1
        if tsv:
            parts = line.split("\t")
            if len(parts) != 2:
                raise FileFormatError(None, f"tsv input line {line[:40]!r} is not 'text<TAB>count'",
                                      fix="use one 'sentence<TAB>count' per line, or --input_format=text")
            line, freq = parts[0], _tsv_count(parts[1], line)
        if not line or UNK_CHAR in line or (
                4 * len(line) > max_bytes and len(line.encode("utf-8")) > max_bytes):
            continue
        if limit > 0 and spec.shuffle_input_sentence:
            seen += 1
            if len(out) < limit:
                out.append((line, freq))
            else:
                j = rng.randrange(seen)
                if j < limit:
                    out[j] = (line, freq)
            continue
        out.append((line, freq))
        if limit > 0 and len(out) >= limit:
            break
    return out


def _tsv_count(field: str, line: str) -> int:
    """The count of a tsv input line: a positive integer below 2**63 (SentencePiece's int64)."""
    try:
        count = int(field)
    except ValueError:
        count = 0
    if not 0 < count < 2**63:
        raise FileFormatError(None, f"tsv input line {line[:40]!r}: the count {field[:20]!r} is not a positive "
                                    "integer below 2**63", fix="give each sentence a count of 1 or more")
    return count


def load_sentences(spec: TrainerSpec, norm: NormalizerSpec, lines: Iterable[str]) -> Loaded:
    """SentencePiece's LoadSentences: select, normalize, choose required chars, mask the rare ones."""
    from .._kernels.unigram import Charsmap, DoubleArray, SpmNormalizer

    meta = meta_pieces(spec)
    selected = _select(lines, spec)
    charsmap = bytes(norm.precompiled_charsmap)
    user = [p.encode("utf-8") for p in spec.user_defined_symbols]
    matcher = DoubleArray(user, list(range(len(user)))) if user else None
    normalizer = SpmNormalizer(Charsmap(charsmap) if charsmap else None, matcher, norm.add_dummy_prefix,
                               norm.remove_extra_whitespaces, norm.escape_whitespaces,
                               spec.treat_whitespace_as_suffix)
    meta_re = re.compile("|".join(re.escape(p) for p, _ in sorted(meta.values(), key=lambda x: -len(x[0]))))
    try:
        normalized_texts = normalizer.normalize_texts([text for text, _ in selected])
    except UnicodeEncodeError as exc:
        raise TrainingError(f"the sentence {exc.object[:60]!r} holds a lone surrogate, which UTF-8 cannot hold",
                            fix="decode the training text with errors='replace'") from None
    sentences = []
    for normalized, (_, freq) in zip(normalized_texts, selected):
        normalized = meta_re.sub(_TAB, normalized)
        if " " in normalized and norm.escape_whitespaces:
            raise TrainingError("a normalized sentence contains a space", fix="keep --escape_whitespaces=true")
        if normalized:
            sentences.append((normalized, freq))
    if not sentences:
        raise TrainingError("no training sentence is left after reading and normalizing the input",
                            fix="check --input (non-empty UTF-8 lines, at most --max_sentence_length bytes)")
    counts = char_counts(sentences)
    required = _required_chars(counts, spec)
    masked = _mask_rare(sentences, counts, required)
    if spec.model_type in (MODEL_TYPES["UNIGRAM"], MODEL_TYPES["BPE"]) and \
            len(required) + len(meta) > spec.vocab_size:
        raise TrainingError(f"Vocabulary size is smaller than required_chars. {spec.vocab_size} vs "
                            f"{len(required) + len(meta)}",
                            fix="increase --vocab_size or decrease --character_coverage")
    return Loaded(masked, required, meta)


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _required_chars(char_count: dict[str, int], spec: TrainerSpec) -> dict[str, int]:
    counts = {ch: n for ch, n in char_count.items() if ch not in ("\0", " ")}
    forced = set(spec.required_chars) - {"\0"}
    total = sum(counts.values())
    coverage_goal = _f32(spec.character_coverage)   # a float field: compare as SentencePiece does
    ranked = sorted(set(counts) | forced, key=lambda c: (c not in forced, -counts.get(c, 0), c))
    required: dict[str, int] = {}
    covered = 0
    for ch in ranked:
        if not spec.use_all_vocab and total and covered / total >= coverage_goal:
            break
        covered += counts.get(ch, 0)
        if ch == _TAB:
            continue
        required[ch] = counts.get(ch, 0)
    required.pop(UNK_CHAR, None)
    return required


def _mask_rare(sentences: list[tuple[str, int]], alphabet: Iterable[str],
               required: dict[str, int]) -> list[tuple[str, int]]:
    """Each char of ``alphabet`` that is not required becomes ``▅`` (SentencePiece's unknown char)."""
    rare = sorted(set(alphabet) - set(required))
    if not rare:
        return sentences
    # Most sentences hold no rare char: find those that do with one regex scan each, and
    # keep the others' pairs as they are.
    rare_re = re.compile("[" + "".join(re.escape(ch) for ch in rare) + "]")
    return [(rare_re.sub(UNK_CHAR, pair[0]), pair[1]) if rare_re.search(pair[0]) else pair for pair in sentences]


def char_counts(sentences: list[tuple[str, int]]) -> dict[str, int]:
    """``{char: count}`` over ``[(text, count)]``, each char weighted by its sentence's count.

    >>> sorted(char_counts([("bab", 2), ("a", 1)]).items())
    [('a', 3), ('b', 4)]
    """
    from .._kernels.unigram_train import count_chars

    try:
        return count_chars(sentences)
    except OverflowError as exc:
        raise TrainingError(str(exc), fix="scale the sentence counts down (tsv input)") from exc


_WORD_PATTERNS = {
    (False, False): re.compile(f"{SPACE}[^{SPACE}]*|[^{SPACE}]+"),
    (False, True): re.compile(f"{SPACE}+[^{SPACE}]*|[^{SPACE}]+"),
    (True, False): re.compile(f"[^{SPACE}]*{SPACE}|[^{SPACE}]+"),
    (True, True): re.compile(f"[^{SPACE}]*{SPACE}+|[^{SPACE}]+"),
}


def split_into_words(text: str, suffix: bool = False, allow_ws_only: bool = False) -> list[str]:
    """SentencePiece's SplitIntoWords: a word starts at each ``▁`` (or ends there, with ``suffix``).

    >>> split_into_words("▁a▁▁bc"), split_into_words("a▁▁b", suffix=True), split_into_words("▁a▁▁b", allow_ws_only=True)
    (['▁a', '▁', '▁bc'], ['a▁', '▁', 'b'], ['▁a', '▁▁b'])
    """
    return _WORD_PATTERNS[bool(suffix), bool(allow_ws_only)].findall(text)


def count_words(loaded: Loaded, spec: TrainerSpec) -> dict[str, int]:
    """The sentences as ``{word: count}`` (whole sentences when split_by_whitespace is off)."""
    words: Counter = Counter()
    if not spec.split_by_whitespace:
        for text, freq in loaded.sentences:
            words[text] += freq
        return dict(words)
    pattern = _WORD_PATTERNS[bool(spec.treat_whitespace_as_suffix), bool(spec.allow_whitespace_only_pieces)]
    for text, freq in loaded.sentences:
        if freq == 1:
            words.update(pattern.findall(text))
        else:
            for w in pattern.findall(text):
                words[w] += freq
    return dict(words)


# -- piece validity (SentencePiece's IsValidSentencePiece) -----------------------------------
def char_tables(alphabet: list[int]):
    """Per code (index into ``alphabet``): kind (0 plain, 1 ▁, 2 never in a piece), script id, digit flag."""
    from array import array

    from .._unicode_scripts import script_ranges

    ranges = script_ranges()
    starts = [r[0] for r in ranges]
    names: dict[str, int] = {}
    import bisect

    kinds = bytearray(len(alphabet))
    scripts = array("h", [0] * len(alphabet))
    digits = bytearray(len(alphabet))
    for code, cp in enumerate(alphabet):
        ch = chr(cp)
        if cp in (0, 0x20, 0x09) or ch == UNK_CHAR or 0xD800 <= cp <= 0xDFFF:
            kinds[code] = 2
        elif ch == SPACE:
            kinds[code] = 1
        digits[code] = 1 if (0x30 <= cp <= 0x39 or 0xFF10 <= cp <= 0xFF19) else 0
        i = bisect.bisect_right(starts, cp) - 1
        name = ranges[i][2] if i >= 0 and ranges[i][0] <= cp <= ranges[i][1] else "Common"
        if name in ("Hiragana", "Katakana") or cp == 0x30FC:
            name = "Han"
        scripts[code] = -2 if name == "Inherited" else names.setdefault(name, len(names))
    return bytes(kinds), scripts, bytes(digits)


def is_valid_piece(piece: str, spec: TrainerSpec) -> bool:
    """Whether SentencePiece would accept ``piece`` as a vocabulary piece under ``spec``'s split rules.

    >>> s, _ = parse_flags()
    >>> is_valid_piece("▁ab", s), is_valid_piece("a▁b", s), is_valid_piece("aЖ", s)
    (True, False, False)
    """
    from .._kernels.unigram_train import valid_piece_codes

    alphabet = sorted({ord(c) for c in piece})
    index = {cp: i for i, cp in enumerate(alphabet)}
    kinds, scripts, digits = char_tables(alphabet)
    return valid_piece_codes([index[ord(c)] for c in piece], kinds, scripts, digits, _rules(spec))


def _rules(spec: TrainerSpec) -> tuple:
    return (spec.max_sentencepiece_length, spec.split_by_whitespace, spec.treat_whitespace_as_suffix,
            spec.allow_whitespace_only_pieces, spec.split_by_unicode_script, spec.split_by_number,
            spec.split_digits)


# -- BPE, char, word ---------------------------------------------------------------------
def train_spm_bpe(loaded: Loaded, spec: TrainerSpec, progress=None) -> list[tuple[str, float]]:
    """SentencePiece BPE: repeatedly merge the most frequent adjacent pair of symbols.

    Symbols start as the chars of each word (rare chars are ``▅``, never
    merged); a pair is a candidate only if the merged piece is valid. The
    best pair has the highest count; ties go to the shorter piece, then to
    the smaller UTF-8 string. A piece made twice (``aa`` + ``a`` and ``a`` +
    ``aa``) is kept once. Scores are ``-rank``; the required chars follow
    the merges, by count. The merge loop is the Cython kernel
    :mod:`pieceworks._kernels.unigram_train` (``bpe_merges``).
    """
    from .._kernels.unigram_train import bpe_merges

    words = count_words(loaded, spec)
    required = loaded.required_sorted()
    n_merges = spec.vocab_size - len(loaded.meta) - len(required)
    if n_merges < 0:
        raise TrainingError(f"vocab_size {spec.vocab_size} leaves no room for the {len(required)} required chars",
                            fix="increase --vocab_size or decrease --character_coverage")
    alphabet = sorted({ord(c) for w in words for c in w} | {ord(UNK_CHAR)})
    kinds, scripts, digits = char_tables(alphabet)
    merged = bpe_merges(list(words), list(words.values()), alphabet, kinds, scripts, digits, _rules(spec),
                        n_merges, ord(UNK_CHAR), progress)
    pieces = [(p, -float(i)) for i, p in enumerate(merged)]
    for ch, _ in required:
        pieces.append((ch, -float(len(pieces))))
    return pieces


def train_spm_char(loaded: Loaded, spec: TrainerSpec) -> list[tuple[str, float]]:
    """Every required char, scored by its log-probability."""
    import math

    required = loaded.required_sorted()
    total = sum(n for _, n in required) or 1
    out = [(ch, math.log(n / total) if n else -1e9) for ch, n in required]
    limit = spec.vocab_size - len(loaded.meta)
    return out if spec.use_all_vocab else out[:limit]


def train_spm_word(loaded: Loaded, spec: TrainerSpec) -> list[tuple[str, float]]:
    """The most frequent whitespace-split words, scored by their log-probability."""
    import math

    words: Counter = Counter()
    for text, freq in loaded.sentences:
        for w in split_into_words(text, spec.treat_whitespace_as_suffix):
            words[w] += freq
    ranked = [(w, n) for w, n in sorted(words.items(), key=lambda kv: (-kv[1], kv[0])) if UNK_CHAR not in w]
    total = sum(words.values()) or 1
    limit = spec.vocab_size - len(loaded.meta)
    ranked = ranked if spec.use_all_vocab else ranked[:limit]
    return [(w, math.log(n / total)) for w, n in ranked]


# -- the model ---------------------------------------------------------------------------
def serialize(spec: TrainerSpec, norm: NormalizerSpec, meta: dict, pieces: list[tuple[str, float]]) -> ModelProto:
    """SentencePiece's Serialize: meta pieces at their ids, the trained pieces in the other slots."""
    proto = ModelProto()
    fid = 0
    seen: set[str] = set()
    for id_ in range(spec.vocab_size):
        if id_ in meta:
            piece, kind = meta[id_]
            p = proto.pieces.add()
            p.piece, p.type, p.score = piece, kind, 0.0
        elif fid < len(pieces):
            piece, score = pieces[fid]
            fid += 1
            p = proto.pieces.add()
            p.piece, p.score = piece, score
        else:
            continue
        if p.piece in seen:
            raise TrainingError(f"piece {p.piece!r} is already defined",
                                fix="do not list a piece that training also finds as a user-defined symbol twice")
        seen.add(p.piece)
    if fid != len(pieces):
        raise TrainingError(f"{len(pieces) - fid} trained pieces did not fit in vocab_size {spec.vocab_size}",
                            fix="increase --vocab_size")
    proto.trainer_spec.CopyFrom(spec)
    proto.normalizer_spec.CopyFrom(norm)
    if not spec.hard_vocab_limit or spec.model_type == MODEL_TYPES["CHAR"]:
        proto.trainer_spec.vocab_size = len(proto.pieces)
    elif len(proto.pieces) != spec.vocab_size:
        raise TrainingError(f"Vocabulary size too high ({spec.vocab_size}). Please set it to a value <= "
                            f"{len(proto.pieces)}.",
                            fix=f"use --vocab_size={len(proto.pieces)} or less, more training text, or "
                                "--hard_vocab_limit=false")
    return proto


def train_model_proto(spec: TrainerSpec, norm: NormalizerSpec, lines: Iterable[str] | None = None,
                      n_threads: int | None = None, progress=None) -> ModelProto:
    """Train a SentencePiece model as ``spm_train`` would, from ``spec.input`` files or ``lines``."""
    from .spm_rules import fill_normalizer_spec

    fill_normalizer_spec(norm)
    if not norm.escape_whitespaces and spec.model_type in (MODEL_TYPES["UNIGRAM"], MODEL_TYPES["BPE"]):
        raise ConfigError("Unigram and BPE training need --escape_whitespaces=true",
                          fix="drop --escape_whitespaces=false")
    if lines is None:
        if not spec.input:
            raise ConfigError("no training input", fix="pass --input=corpus.txt (or sentence_iterator=...)")
        lines = read_lines(spec.input)
    loaded = load_sentences(spec, norm, lines)
    threads = n_threads if n_threads is not None else min(spec.num_threads, os.cpu_count() or 1)
    kind = spec.model_type
    if kind == MODEL_TYPES["UNIGRAM"]:
        from .unigram import train_spm_unigram

        pieces = train_spm_unigram(loaded, spec, threads, progress)
    elif kind == MODEL_TYPES["BPE"]:
        pieces = train_spm_bpe(loaded, spec, progress)
    elif kind == MODEL_TYPES["CHAR"]:
        pieces = train_spm_char(loaded, spec)
    else:
        pieces = train_spm_word(loaded, spec)
    return serialize(spec, norm, loaded.meta, pieces)
