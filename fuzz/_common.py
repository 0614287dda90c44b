"""What every fuzz harness shares: the input reader, the error rule, the tokenizers.

A harness is a module ``fuzz/fuzz_<target>.py`` with ``test_one_input(data:
bytes)``. Under atheris it is run by libFuzzer (``python fuzz/fuzz_x.py``);
without atheris the same function replays saved inputs (the regression
tests in ``tests/test_fuzz_regressions.py`` do that), so the structured
values are read from the bytes by :class:`Input`, ours, not atheris'
``FuzzedDataProvider``.

The rule: an input may make pieceworks raise a
:class:`~pieceworks.errors.PieceworksError` (that is a clean refusal, with a
message and a fix). Any other exception, a wrong answer where the harness
checks one, or a crash of the process, is a finding.

>>> inp = Input(b"\\x03abc\\x01")
>>> inp.int_in(10), inp.take(3), inp.flag()
(3, b'abc', True)
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PIECEWORKS_SHARED_DATA", ROOT.parent / "shared" / "data"))
if str(ROOT / "src") not in sys.path and not any(Path(p, "pieceworks").is_dir() for p in sys.path if p):
    sys.path.insert(0, str(ROOT / "src"))

#: Chars the text reader favours: the ones tokenizers trip on.
INTERESTING = ("\x00", " ", "\n", "\r", "\t", "\u00a0", "\u200d", "\u200f", "\u202e", "\ufeff", "\u0301",
               "\ufffd", "\ud800", "\udfff", "é", "叫", "🌍", "👩", "\U0001f3fb", "\ufe0f", "\U000e0067",
               "<", ">", "|", "[", "]", "#", "▁", "Ġ", "'s", "<s>", "</s>", "<|endoftext|>", "[CLS]",
               "<0x41>", "##", "1", "A", "a")


class Input:
    """Structured values read off fuzzer bytes, deterministically; past the end everything is 0/empty."""

    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def int_in(self, n: int) -> int:
        """An int in [0, n) from one or two bytes."""
        value = self.byte()
        if n > 256:
            value = value << 8 | self.byte()
        return value % n if n > 0 else 0

    def flag(self) -> bool:
        return bool(self.byte() & 1)

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def rest(self) -> bytes:
        return self.take(len(self.data))

    def text(self, max_chars: int = 64) -> str:
        """A str of up to ``max_chars`` pieces: ASCII, interesting chars, or any code point (surrogates too)."""
        out = []
        for _ in range(self.int_in(max_chars + 1)):
            kind = self.byte()
            if kind < 128:
                out.append(chr(kind))
            elif kind < 192:
                out.append(INTERESTING[kind % len(INTERESTING)])
            else:
                out.append(chr((self.byte() << 16 | self.byte() << 8 | self.byte()) % 0x110000))
        return "".join(out)

    def ids(self, vocab_size: int, max_ids: int = 24) -> list[int]:
        """Token ids, mostly in range; a few out of it (negative or too large) to test the checks."""
        out = []
        for _ in range(self.int_in(max_ids + 1)):
            kind = self.byte()
            if kind == 255:
                out.append(vocab_size + self.byte())
            elif kind == 254:
                out.append(-1 - self.byte())
            else:
                out.append(self.int_in(vocab_size) if vocab_size > 256 else kind % max(vocab_size, 1))
        return out


def scratch_dir(kind: str) -> str:
    """A folder for the files a harness writes, removed when the process exits.

    Under fuzz/run.py it is made inside the target's work folder
    (``PIECEWORKS_FUZZ_SCRATCH``): libFuzzer may end the process without
    running Python's exit handlers, and run.py removes that folder itself.
    """
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix=f"pieceworks-fuzz-{kind}-", dir=os.environ.get("PIECEWORKS_FUZZ_SCRATCH"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def refused_cleanly(exc: BaseException) -> bool:
    """True if ``exc`` is a deliberate pieceworks error (a clean refusal), not a bug."""
    from pieceworks.errors import PieceworksError

    return isinstance(exc, PieceworksError)


def clean(fn, *args, **kwargs):
    """``fn(*args)``, or None if it refused the input cleanly; any other exception propagates."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the point is to sort them
        if refused_cleanly(exc):
            return None
        raise


def has_surrogates(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


#: Categories that no Hugging Face Unicode table decides anything about (for the normalizers
#: and pre-tokenizers the encode harnesses use), so a symbol newer than its tables is still comparable.
_SYMBOLS = frozenset({"So", "Sk", "Sm", "Sc"})


def hf_comparable(text: str) -> bool:
    """True if Hugging Face's older Unicode tables cannot disagree with ours on ``text``.

    Hugging Face's normalizers use Unicode 8.0/9.0 tables, ours Python's
    (14.0): chars added or re-categorised since are known, accepted
    differences (see tests/test_normalizers.py). A char counts as safe if
    Unicode 3.2 already gave it today's category, or it is a symbol.

    >>> hf_comparable("héllo 🌍"), hf_comparable("\u0d00")
    (True, False)
    """
    import unicodedata

    old = unicodedata.ucd_3_2_0
    return all(old.category(c) == unicodedata.category(c) or unicodedata.category(c) in _SYMBOLS
               for c in text)


def utf8_view(text: str) -> str:
    """What a UTF-8 round trip can give back: lone surrogates become U+FFFD per byte."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


# -- tokenizers the encode harnesses use -----------------------------------------

def shared_file(relative: str) -> Path | None:
    path = SHARED_DATA / relative
    return path if path.is_file() else None


@functools.lru_cache(maxsize=None)
def hf_json_pair(relative: str):
    """(pieceworks, Hugging Face or None) for a tokenizer.json under shared data, padding/truncation off."""
    import pieceworks as pw

    path = shared_file(relative)
    if path is None:
        return None
    ours = pw.Tokenizer.from_file(str(path))
    ours.no_padding()
    ours.no_truncation()
    try:
        import tokenizers as hf
    except ImportError:
        return ours, None
    theirs = hf.Tokenizer.from_file(str(path))
    theirs.no_padding()
    theirs.no_truncation()
    return ours, theirs


@functools.lru_cache(maxsize=None)
def small_corpus() -> list[str]:
    """About 300 KB of the package's own multilingual corpus (no shared data needed)."""
    from pieceworks.corpus import iter_default_corpus

    out, size = [], 0
    for line in iter_default_corpus():
        out.append(line)
        size += len(line)
        if size > 300_000:
            break
    return out


def trained(kind: str):
    """A small tokenizer trained on :func:`small_corpus`: "bytelevel", "wordpiece", "wordlevel", "bpe"."""
    return _trained(kind)


@functools.lru_cache(maxsize=None)
def _trained(kind: str):
    import pieceworks as pw

    specials = ["[UNK]", "[CLS]", "[SEP]", "<|endoftext|>"]
    if kind == "bytelevel":
        tok = pw.Tokenizer(pw.models.BPE())
        tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = pw.decoders.ByteLevel()
        trainer = pw.trainers.BpeTrainer(vocab_size=600, special_tokens=specials, show_progress=False,
                                         initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet())
    elif kind == "wordpiece":
        tok = pw.Tokenizer(pw.models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = pw.normalizers.BertNormalizer()
        tok.pre_tokenizer = pw.pre_tokenizers.BertPreTokenizer()
        tok.decoder = pw.decoders.WordPiece()
        trainer = pw.trainers.WordPieceTrainer(vocab_size=600, special_tokens=specials, show_progress=False)
    elif kind == "wordlevel":
        tok = pw.Tokenizer(pw.models.WordLevel(unk_token="[UNK]"))
        tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
        trainer = pw.trainers.WordLevelTrainer(vocab_size=600, special_tokens=specials, show_progress=False)
    elif kind == "bpe":
        tok = pw.Tokenizer(pw.models.BPE(unk_token="[UNK]", continuing_subword_prefix="##"))
        tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
        tok.decoder = pw.decoders.WordPiece()
        trainer = pw.trainers.BpeTrainer(vocab_size=600, special_tokens=specials, show_progress=False,
                                         continuing_subword_prefix="##")
    else:
        raise ValueError(kind)
    tok.train_from_iterator(small_corpus(), trainer)
    return tok


def hf_twin(tokenizer):
    """The same tokenizer in Hugging Face ``tokenizers`` (through tokenizer.json), or None if not installed."""
    try:
        import tokenizers as hf
    except ImportError:
        return None
    return hf.Tokenizer.from_str(tokenizer.to_str())


def check_encoding(text: str, enc) -> None:
    """Shape checks every Encoding must pass."""
    n = len(enc.ids)
    assert len(enc.tokens) == n and len(enc.offsets) == n and len(enc.type_ids) == n, "ragged encoding"
    for start, end in enc.offsets:
        assert 0 <= start <= end <= len(text), f"offset ({start}, {end}) outside the text of {len(text)} chars"


def run(test_one_input, seeds=None) -> None:
    """Hand ``test_one_input`` to atheris/libFuzzer with this process's command-line arguments.

    ``seeds`` (a callable yielding ``(name, bytes)``) fills an empty corpus
    folder (the first argument that is a folder) before fuzzing starts.
    """
    import atheris

    folders = [Path(a) for a in sys.argv[1:] if not a.startswith("-") and Path(a).is_dir()]
    if seeds is not None and folders and not any(folders[0].iterdir()):
        for name, data in seeds():
            (folders[0] / f"seed-{name}").write_bytes(data)
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


def instrumented():
    """Instruments pieceworks for coverage when a harness runs under atheris (not when replaying)."""
    import contextlib

    if not Path(sys.argv[0]).name.startswith("fuzz_"):
        return contextlib.nullcontext()
    try:
        import atheris
    except ImportError:
        return contextlib.nullcontext()
    return atheris.instrument_imports(include=["pieceworks"])
