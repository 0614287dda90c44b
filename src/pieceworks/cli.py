"""The ``pieceworks`` command: train, encode, decode and inspect tokenizers.

Each subcommand is one ``run_*`` function over the public Python API, so
what the CLI does, a script can do the same way::

    pieceworks train                        # learn a byte-level BPE from the built-in corpus
    pieceworks train notes.txt -o tok.json --vocab-size 4000
    pieceworks encode -t tok.json "Hello world"
    pieceworks decode -t tok.json 15496 995
    pieceworks inspect tok.json

Errors that pieceworks raises on purpose (a missing file, a bad option)
print as one line, ``pieceworks: error: ...``, and exit with status 2.

>>> main(["--version"])  # doctest: +ELLIPSIS
pieceworks ...
0
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence, TextIO

from .errors import ConfigError, FileFormatError, PieceworksError, TokenizerFileError

__all__ = ["main", "build_parser"]

PROG = "pieceworks"
DEFAULT_OUTPUT = "pieceworks-tokenizer.json"

#: The sentence ``train`` shows split into tokens: one phrase per script.
SAMPLE_TEXT = ("Hello, world! Привет, мир! Γειά σου, κόσμε! مرحبا بالعالم! नमस्ते दुनिया! "
               "สวัสดีชาวโลก! မင်္ဂလာပါ 안녕하세요, 세계! 你好，世界！こんにちは 🌍🎉")

# Background colours (xterm-256) that stay readable under black text; tokens
# alternate through them so that neighbours always differ.
_PALETTE = (153, 223, 194, 225, 229, 189)
_RESET = "\x1b[0m"


# -- entry point ---------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 2 usage or input error).

    >>> main(["decode", "--help"]) == 0  # doctest: +ELLIPSIS
    usage: pieceworks decode ...
    True
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 2
    if args.run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.run(args) or 0
    except PieceworksError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `pieceworks encode ... | head`: the reader left; stop quietly.
        _silence_stdout()
        return 0


def _fail(message: str) -> int:
    one_line = " ".join(message.split())
    print(f"{PROG}: error: {one_line}", file=sys.stderr)
    return 2


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    # A library warning (say, a vocab_size smaller than the alphabet) is
    # advice to the person at the terminal: one line, no source location.
    print(f"{PROG}: warning: {' '.join(str(message).split())}", file=sys.stderr)


def _silence_stdout() -> None:
    # Python would report the broken pipe again when flushing stdout at exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subparser per command."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Train and run subword tokenizers (byte-level BPE, WordPiece, WordLevel, ...). "
                    "Tokenizers are saved as Hugging Face tokenizer.json files.",
        epilog=f"Run '{PROG} COMMAND --help' for the options of one command.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.set_defaults(run=None)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    _add_train(commands)
    _add_encode(commands)
    _add_decode(commands)
    _add_inspect(commands)
    _add_count(commands)            # the scale section, at the end of this file
    _add_encode_dataset(commands)
    # `convert` (tiktoken / SentencePiece / vocab.txt ↔ tokenizer.json) and
    # `bench` join here as their engines land.
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _add_colour_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--color", "--colour", dest="colour", choices=("auto", "always", "never"),
                        default="auto",
                        help="colour token boundaries: auto (default) = only when stdout is a "
                             "terminal and NO_COLOR is unset")


# -- train ---------------------------------------------------------------------
@dataclass(frozen=True)
class Recipe:
    """How ``train --model NAME`` sets up a tokenizer and its trainer."""

    name: str
    summary: str
    default_special_tokens: tuple[str, ...]
    #: Special tokens that are always kept (an unknown token the model needs).
    required_special_tokens: tuple[str, ...]
    build: Callable[..., tuple]
    #: Set-up that needs the trained vocabulary (a post-processor's ids), or None.
    finish: Callable | None = None


def _build_bpe(vocab_size: int, min_frequency: int, special_tokens: list[str], show_progress: bool):
    """Byte-level BPE, set up as GPT-2 / Hugging Face's ByteLevelBPETokenizer are."""
    from . import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=special_tokens, show_progress=show_progress,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    return tokenizer, trainer


def _build_wordlevel(vocab_size: int, min_frequency: int, special_tokens: list[str], show_progress: bool):
    """A word-level vocabulary: words and punctuation runs, rarer ones become [UNK]."""
    from . import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel({}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=special_tokens, show_progress=show_progress)
    return tokenizer, trainer


def _build_wordpiece(vocab_size: int, min_frequency: int, special_tokens: list[str], show_progress: bool):
    """BERT-style WordPiece (uncased), set up as Hugging Face's BertWordPieceTokenizer is."""
    from . import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                      strip_accents=None, lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    # limit_alphabet=1000 as BertWordPieceTokenizer: a multilingual corpus has
    # thousands of rare characters that would otherwise crowd out whole words.
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=special_tokens, show_progress=show_progress,
                                        limit_alphabet=1000, continuing_subword_prefix="##")
    return tokenizer, trainer


def _finish_wordpiece(tokenizer) -> None:
    """Wrap every encoding in [CLS] ... [SEP] when both tokens were trained."""
    from . import processors

    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    if cls_id is not None and sep_id is not None:
        tokenizer.post_processor = processors.BertProcessing(("[SEP]", sep_id), ("[CLS]", cls_id))


_RECIPES = (
    Recipe("bpe", "byte-level BPE (GPT-2 style): any text, no unknown tokens",
           ("<|endoftext|>",), (), _build_bpe),
    Recipe("wordpiece", "BERT-style WordPiece (lowercased, ## continuations, [CLS] ... [SEP])",
           ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"), ("[UNK]",), _build_wordpiece,
           _finish_wordpiece),
    Recipe("wordlevel", "one token per word or punctuation run; the rest is [UNK]",
           ("[UNK]",), ("[UNK]",), _build_wordlevel),
)

# What each recipe needs from the library; a recipe is offered only when all
# of it exists, so new models appear in `--model` as their code lands.
_RECIPE_NEEDS = {
    "bpe": [("models", "BPE"), ("trainers", "BpeTrainer"), ("pre_tokenizers", "ByteLevel"),
            ("decoders", "ByteLevel")],
    "wordpiece": [("models", "WordPiece"), ("trainers", "WordPieceTrainer"), ("normalizers", "BertNormalizer"),
                  ("pre_tokenizers", "BertPreTokenizer"), ("decoders", "WordPiece"),
                  ("processors", "BertProcessing")],
    "wordlevel": [("models", "WordLevel"), ("trainers", "WordLevelTrainer"),
                  ("pre_tokenizers", "Whitespace")],
}


def available_recipes() -> dict[str, Recipe]:
    """The ``--model`` choices whose components this installation has.

    >>> "bpe" in available_recipes() or "wordlevel" in available_recipes()
    True
    """
    import importlib

    found = {}
    for recipe in _RECIPES:
        needs = _RECIPE_NEEDS.get(recipe.name, [])
        if all(hasattr(importlib.import_module(f"pieceworks.{module}"), name) for module, name in needs):
            found[recipe.name] = recipe
    return found


def _add_train(commands) -> None:
    recipes = available_recipes()
    default_model = "bpe" if "bpe" in recipes else next(iter(recipes), None)
    models_help = "; ".join(f"{r.name}: {r.summary}" for r in recipes.values())
    parser = commands.add_parser(
        "train", help="train a tokenizer on text files, stdin, or the built-in corpus",
        description="Train a tokenizer and save it as tokenizer.json. With no FILE, train on the "
                    "multilingual corpus shipped inside pieceworks; '-' reads stdin. Files are "
                    "read as UTF-8, line by line.")
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="text files to learn from ('-' = stdin; none = the built-in corpus)")
    parser.add_argument("--model", "-m", choices=sorted(recipes), default=default_model,
                        help=f"the kind of tokenizer (default: {default_model}). {models_help}")
    parser.add_argument("--vocab-size", "-v", type=_positive_int, default=8000,
                        help="the size of the vocabulary to learn, special tokens included "
                             "(default: 8000)")
    parser.add_argument("--min-frequency", type=_non_negative_int, default=2,
                        help="ignore pairs or words seen fewer times than this (default: 2)")
    parser.add_argument("--special-tokens", action="append", metavar="TOKENS",
                        help="comma-separated special tokens, replacing the model's default "
                             "(bpe: <|endoftext|>; wordpiece: [PAD],[UNK],[CLS],[SEP],[MASK]; "
                             "wordlevel: [UNK]; an [UNK] the model needs is always kept); "
                             "repeatable; '' for none")
    parser.add_argument("--output", "-o", default=DEFAULT_OUTPUT,
                        help=f"where to save the tokenizer (default: ./{DEFAULT_OUTPUT})")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show progress bars on stderr (default: only when stderr is a terminal)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print only the saved file's path, not the summary")
    _add_colour_option(parser)
    parser.set_defaults(run=run_train)


def run_train(args: argparse.Namespace) -> int:
    """``pieceworks train``: read the corpus, train, save, show what was learned."""
    recipes = available_recipes()
    if args.model not in recipes:
        raise ConfigError("no tokenizer model is available in this installation",
                          fix="reinstall pieceworks")
    from .trainers.counts import count_words

    recipe = recipes[args.model]
    output = _check_output_path(args.output)
    corpus = open_corpus(args.files)
    special = _special_tokens(recipe, args.special_tokens)
    show_progress = _want_progress(args.progress)
    tokenizer, trainer = recipe.build(args.vocab_size, args.min_frequency, special, show_progress)

    started = time.perf_counter()
    with _forced_progress(args.progress):
        # Count, then train: the same two steps as Tokenizer.train_from_iterator,
        # taken apart so that the reading bar counts bytes and is closed
        # before the trainer draws its own.
        with _byte_progress(corpus.total_bytes, corpus.description, show_progress) as advance:
            counts = count_words(corpus.lines(advance), tokenizer.normalizer, tokenizer.pre_tokenizer)
        if corpus.lines_read == 0:
            raise ConfigError(f"{corpus.description} is empty: there was nothing to learn from",
                              fix="pass files that contain text")
        tokenizer.train_from_counts(counts, trainer)
    if recipe.finish is not None:
        recipe.finish(tokenizer)
    seconds = time.perf_counter() - started
    tokenizer.save(str(output))

    if args.quiet:
        print(output)
        return 0
    colour = _want_colour(args.colour, sys.stdout)
    _print_train_summary(tokenizer, recipe, corpus, output, seconds, colour, sys.stdout)
    return 0


def _check_output_path(path: str) -> Path:
    """Refuse an output path that cannot be written before spending time on training."""
    output = Path(path)
    if output.is_dir():
        raise ConfigError(f"--output {path} is a folder", fix=f"pass a file name, e.g. {output / DEFAULT_OUTPUT}")
    folder = output.parent
    if not folder.is_dir():
        raise ConfigError(f"--output {path}: folder {folder} does not exist",
                          fix="create it first or choose another path")
    return output


def _special_tokens(recipe: Recipe, given: list[str] | None) -> list[str]:
    """The special tokens to train with: the user's list, else the recipe's default.

    >>> _special_tokens(_RECIPES[2], ["<s>,</s>", "<pad>"])
    ['[UNK]', '<s>', '</s>', '<pad>']
    >>> _special_tokens(_RECIPES[0], [""])
    []
    """
    if given is None:
        tokens = list(recipe.default_special_tokens)
    else:
        tokens = [token.strip() for chunk in given for token in chunk.split(",") if token.strip()]
    required = [token for token in recipe.required_special_tokens if token not in tokens]
    return _unique(required + tokens)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _want_progress(flag: bool | None) -> bool:
    """``--progress``/``--no-progress`` if given, else the library's rule (stderr is a terminal)."""
    from .progress import progress_wanted

    return flag if flag is not None else progress_wanted(True)


@contextlib.contextmanager
def _forced_progress(flag: bool | None):
    """With ``--progress``, let the trainer's own bars show even when stderr is not a terminal."""
    if not flag:
        yield
        return
    saved = os.environ.get("PIECEWORKS_PROGRESS")
    os.environ["PIECEWORKS_PROGRESS"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PIECEWORKS_PROGRESS", None)
        else:
            os.environ["PIECEWORKS_PROGRESS"] = saved


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _NoBar:
    def __enter__(self):
        return lambda n: None

    def __exit__(self, *exc):
        return False


class _ByteBar:
    """A tqdm bar over bytes read; updates are batched so that per-line cost stays tiny."""

    _BATCH = 1 << 16

    def __init__(self, total: int | None, description: str):
        self.total = total
        self.description = description
        self.pending = 0

    def __enter__(self):
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, desc=f"reading {self.description}", unit="B",
                        unit_scale=True, unit_divisor=1024, file=sys.stderr,
                        dynamic_ncols=True)
        return self.advance

    def advance(self, n: int) -> None:
        self.pending += n
        if self.pending >= self._BATCH:
            self.bar.update(self.pending)
            self.pending = 0

    def __exit__(self, *exc):
        self.bar.update(self.pending)
        self.bar.close()
        return False


def _byte_progress(total: int | None, description: str, enabled: bool):
    return _ByteBar(total, description) if enabled else _NoBar()


# -- the corpus ----------------------------------------------------------------
class Corpus:
    """Where training text comes from: files, stdin, or the built-in corpus.

    ``lines(advance)`` yields the text line by line (newlines kept, as HF's
    trainer reads files) and calls ``advance(n_bytes)`` as it goes.
    """

    def __init__(self, description: str, total_bytes: int | None,
                 sources: list[Callable[[], Iterator[tuple[bytes | str, str]]]]):
        self.description = description
        self.total_bytes = total_bytes
        self._sources = sources
        self.lines_read = 0
        self.bytes_read = 0

    def lines(self, advance: Callable[[int], None] = lambda n: None) -> Iterator[str]:
        for source in self._sources:
            yield from self._lines_of(source(), advance)

    def _lines_of(self, raw_lines, advance) -> Iterator[str]:
        for number, (raw, name) in enumerate(raw_lines, start=1):
            if isinstance(raw, str):
                line, size = raw, len(raw.encode("utf-8"))
            else:
                line, size = _decode_line(raw, name, number), len(raw)
            self.lines_read += 1
            self.bytes_read += size
            advance(size)
            yield line


def _decode_line(raw: bytes, name: str, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileFormatError(name, f"invalid UTF-8 at byte {exc.start} of the line", line=number,
                              fix="convert the text to UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None


def open_corpus(files: Sequence[str]) -> Corpus:
    """The corpus named on the command line; checks every file exists first.

    >>> open_corpus([]).description
    'the built-in corpus'
    """
    if not files:
        from .corpus import default_corpus_text, iter_default_corpus

        total = len(default_corpus_text().encode("utf-8"))
        return Corpus("the built-in corpus", total,
                      [lambda: ((line, "built-in corpus") for line in iter_default_corpus())])
    sources, total = [], 0
    for name in files:
        if name == "-":
            sources.append(_stdin_lines)
            continue
        path = Path(name)
        if not path.exists():
            raise FileFormatError(name, "file not found", fix="check the path")
        if path.is_dir():
            raise FileFormatError(name, "is a folder, not a file", fix="pass the text files inside it")
        if not os.access(path, os.R_OK):
            raise FileFormatError(name, "cannot be read (permission denied)", fix="check its permissions")
        total += path.stat().st_size
        sources.append(lambda path=path, name=name: _file_lines(path, name))
    if "-" in files:
        total = None  # stdin's size is unknown: the bar counts bytes without a total
    described = ", ".join("stdin" if f == "-" else f for f in files)
    if len(files) > 3:
        described = f"{len(files)} files"
    return Corpus(described, total, sources)


def _file_lines(path: Path, name: str) -> Iterator[tuple[bytes, str]]:
    with open(path, "rb") as fh:
        for raw in fh:
            yield raw, name


def _stdin_lines() -> Iterator[tuple[bytes, str]]:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a replaced sys.stdin (tests, embedding): already text
        for line in sys.stdin:
            yield line, "<stdin>"
        return
    for raw in stream:
        yield raw, "<stdin>"


# -- the summary after training ----------------------------------------------------
def _print_train_summary(tokenizer, recipe: Recipe, corpus: Corpus, output: Path, seconds: float,
                         colour: bool, out: TextIO) -> None:
    vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
    special = [t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special]
    print(f"Trained a {recipe.summary.split(':')[0]} tokenizer on {corpus.description} "
          f"({corpus.lines_read:,} lines, {_human_bytes(corpus.bytes_read)}) in {seconds:.1f} s.", file=out)
    print(f"Saved to {output}", file=out)
    print(file=out)
    special_text = f", {len(special)} special: {' '.join(special)}" if special else ""
    print(f"Vocabulary: {vocab_size:,} tokens{special_text}", file=out)
    merges = _merges_of(tokenizer)
    if merges is not None:
        byte_level = _is_byte_level(tokenizer)
        print(f"Merges: {len(merges):,}; the first {min(20, len(merges))}:", file=out)
        for line in _merge_columns(merges[:20], byte_level):
            print(line, file=out)
    print(file=out)
    print("A sample, split into tokens:", file=out)
    encoding = tokenizer.encode(SAMPLE_TEXT)
    for line in render_tokens(encoding.tokens, encoding.ids, _is_byte_level(tokenizer), colour):
        print(f"  {line}", file=out)
    print(file=out)
    print(f"Next: {PROG} encode -t {_shell_quote(str(output))} \"your text\"   |   "
          f"{PROG} inspect {_shell_quote(str(output))}", file=out)


def _human_bytes(n: int) -> str:
    """
    >>> _human_bytes(3_900_000)
    '3.7 MiB'
    """
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _merges_of(tokenizer) -> list[tuple[str, str]] | None:
    """The model's merges as (left, right) pairs, or None for a model without merges."""
    merges = getattr(tokenizer.model, "merges", None)
    if merges is None:
        return None
    pairs = []
    for merge in merges:
        if isinstance(merge, str):
            left, _, right = merge.partition(" ")
            pairs.append((left, right))
        else:
            pairs.append((merge[0], merge[1]))
    return pairs


def _merge_columns(merges: list[tuple[str, str]], byte_level: bool, columns: int = 4) -> list[str]:
    """Merges laid out in columns, numbered in merge order (down, then across).

    >>> _merge_columns([("Ġ", "t"), ("h", "e")], True, columns=2)
    ['     1  " " + "t"       2  "h" + "e"']
    """
    cells = [f"{i + 1:6d}  {_quoted(a, byte_level)} + {_quoted(b, byte_level)}"
             for i, (a, b) in enumerate(merges)]
    rows = -(-len(cells) // columns)
    width = max((len(c) for c in cells), default=0) + 2
    lines = []
    for r in range(rows):
        row = [cells[c * rows + r] for c in range(columns) if c * rows + r < len(cells)]
        lines.append("".join(cell.ljust(width) for cell in row).rstrip())
    return lines


def _quoted(token: str, byte_level: bool) -> str:
    return '"' + display_token(token, byte_level).replace('"', '\\"') + '"'


# -- showing tokens --------------------------------------------------------------
def _is_byte_level(tokenizer) -> bool:
    decoder = getattr(tokenizer, "decoder", None)
    return type(decoder).__name__ == "ByteLevel"


def display_token(token: str, byte_level: bool) -> str:
    """How a token reads to a person: byte-level tokens as the text they stand for.

    Bytes that do not make a whole character on their own (a piece of a
    multi-byte character) show as ``\\xNN`` escapes; control characters show
    as escapes too, so that one token never breaks the line.

    >>> display_token("Ġworld", True), display_token("à¸", True), display_token("a\\nb", False)
    (' world', '\\\\xe0\\\\xb8', 'a\\\\nb')
    """
    text = token
    if byte_level:
        from .byte_level import byte_chars_to_bytes

        try:
            text = byte_chars_to_bytes(token).decode("utf-8", errors="backslashreplace")
        except KeyError:  # an added token spelled outside the byte alphabet
            text = token
    return _escape_controls(text)


_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_controls(text: str) -> str:
    out = []
    for ch in text:
        if ch in _CONTROL_ESCAPES:
            out.append(_CONTROL_ESCAPES[ch])
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def render_tokens(tokens: Sequence[str], ids: Sequence[int], byte_level: bool, colour: bool) -> list[str]:
    """Two lines: the tokens, then their ids; coloured alike, or bracketed when plain.

    >>> render_tokens(["Hello", "Ġworld"], [15496, 995], True, colour=False)
    ['[Hello][ world]', '15496 995']
    """
    shown = [display_token(token, byte_level) for token in tokens]
    if not colour:
        return ["".join(f"[{text}]" for text in shown), " ".join(str(i) for i in ids)]
    token_line = "".join(_paint(text, i) for i, text in enumerate(shown))
    id_line = " ".join(_paint(str(token_id), i) for i, token_id in enumerate(ids))
    return [token_line, id_line]


def _paint(text: str, index: int) -> str:
    return f"\x1b[30;48;5;{_PALETTE[index % len(_PALETTE)]}m{text}{_RESET}"


def _want_colour(choice: str, stream) -> bool:
    """Colour for ``always``; for ``auto``, only on a terminal and when NO_COLOR is unset.

    >>> _want_colour("always", None), _want_colour("never", None)
    (True, False)
    """
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    return _isatty(stream)


# -- encode --------------------------------------------------------------------
def _add_encode(commands) -> None:
    parser = commands.add_parser(
        "encode", help="split text into tokens and ids",
        description="Encode text with a tokenizer. Each TEXT argument, or else each line of stdin, "
                    "is one input. By default prints the tokens (coloured on a terminal, "
                    "[bracketed] otherwise) and their ids.")
    parser.add_argument("--tokenizer", "-t", required=True, metavar="TOKENIZER",
                        help="a tokenizer.json file (e.g. one made by 'pieceworks train')")
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="texts to encode (default: stdin lines)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--ids", action="store_const", dest="shape", const="ids",
                       help="print only the ids, space-separated, one input per line")
    shape.add_argument("--tokens", action="store_const", dest="shape", const="tokens",
                       help="print only the tokens")
    shape.add_argument("--json", action="store_const", dest="shape", const="json",
                       help="print one JSON object per input: text, ids, tokens, offsets")
    parser.add_argument("--no-special-tokens", dest="add_special_tokens", action="store_false",
                        help="do not add the post-processor's special tokens ([CLS], ...)")
    _add_colour_option(parser)
    parser.set_defaults(run=run_encode, shape="both")


def run_encode(args: argparse.Namespace) -> int:
    """``pieceworks encode``: one block of output per input text."""
    tokenizer = load_tokenizer(args.tokenizer)
    byte_level = _is_byte_level(tokenizer)
    colour = _want_colour(args.colour, sys.stdout)
    for text in _input_texts(args.texts):
        encoding = tokenizer.encode(text, add_special_tokens=args.add_special_tokens)
        for line in _format_encoding(text, encoding, args.shape, byte_level, colour):
            print(line)
    return 0


def _input_texts(texts: Sequence[str]) -> Iterator[str]:
    """The command-line texts, else stdin's lines without their line ending."""
    if texts:
        yield from texts
        return
    for number, raw in enumerate(_stdin_lines(), start=1):
        line = raw[0] if isinstance(raw[0], str) else _decode_line(raw[0], "<stdin>", number)
        yield line.rstrip("\n").removesuffix("\r")


def _format_encoding(text: str, encoding, shape: str, byte_level: bool, colour: bool) -> list[str]:
    if shape == "json":
        record = {"text": text, "ids": list(encoding.ids), "tokens": list(encoding.tokens),
                  "offsets": [list(pair) for pair in encoding.offsets]}
        return [json.dumps(record, ensure_ascii=False)]
    if shape == "ids":
        return [" ".join(str(i) for i in encoding.ids)]
    tokens_line, ids_line = render_tokens(encoding.tokens, encoding.ids, byte_level, colour)
    return [tokens_line] if shape == "tokens" else [tokens_line, ids_line]


def load_tokenizer(path: str):
    """``Tokenizer.from_file`` with a clear error for a path that is not a file."""
    from . import Tokenizer

    file = Path(path)
    if not file.exists():
        raise TokenizerFileError(path, "file not found",
                                 fix=f"check the path, or make one with '{PROG} train -o {path}'")
    if file.is_dir():
        raise TokenizerFileError(path, "is a folder", fix="pass the tokenizer.json file inside it")
    return Tokenizer.from_file(path)


# -- decode --------------------------------------------------------------------
def _add_decode(commands) -> None:
    parser = commands.add_parser(
        "decode", help="turn ids back into text",
        description="Decode token ids to text. IDS are integers separated by spaces or commas "
                    "('15496 995', '15496,995', '[15496, 995]'); with no IDS, each stdin line "
                    "is one sequence (so 'encode --ids' output pipes straight in).")
    parser.add_argument("--tokenizer", "-t", required=True, metavar="TOKENIZER",
                        help="a tokenizer.json file")
    parser.add_argument("ids", nargs="*", metavar="IDS", help="token ids (default: stdin lines)")
    parser.add_argument("--keep-special-tokens", dest="skip_special_tokens", action="store_false",
                        help="keep special tokens such as <|endoftext|> in the text")
    parser.set_defaults(run=run_decode)


def run_decode(args: argparse.Namespace) -> int:
    """``pieceworks decode``: the arguments as one sequence, or one per stdin line."""
    tokenizer = load_tokenizer(args.tokenizer)
    if args.ids:
        sequences = [parse_ids(" ".join(args.ids), "the command line")]
    else:
        sequences = (parse_ids(text, f"stdin line {n}") for n, text in enumerate(_input_texts([]), start=1))
    for ids in sequences:
        print(tokenizer.decode(ids, skip_special_tokens=args.skip_special_tokens))
    return 0


def parse_ids(text: str, where: str) -> list[int]:
    """Token ids from text such as ``'1 2 3'``, ``'1,2,3'`` or ``'[1, 2, 3]'``.

    >>> parse_ids("[15496, 995]", "x"), parse_ids("7 8,9", "x"), parse_ids("", "x")
    ([15496, 995], [7, 8, 9], [])
    """
    cleaned = text.strip().removeprefix("[").removesuffix("]").replace(",", " ")
    ids = []
    for word in cleaned.split():
        if not (word.isascii() and word.isdigit()):
            raise ConfigError(f"{where}: {word!r} is not a token id",
                              fix=f"pass whole numbers such as '{PROG} decode -t tok.json 15496 995'")
        ids.append(int(word))
    return ids


# -- inspect -------------------------------------------------------------------
def _add_inspect(commands) -> None:
    parser = commands.add_parser(
        "inspect", help="summarise a tokenizer file",
        description="Summarise a tokenizer.json: model, vocabulary, the normalizer / "
                    "pre-tokenizer / post-processor / decoder chain, added tokens, truncation "
                    "and padding.")
    parser.add_argument("tokenizer", metavar="TOKENIZER", help="a tokenizer.json file")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(run=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    """``pieceworks inspect``: load the file (so it is checked), then describe it."""
    tokenizer = load_tokenizer(args.tokenizer)
    data = json.loads(tokenizer.to_str())
    summary = summarise_tokenizer(data, tokenizer, Path(args.tokenizer))
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
        return 0
    for label, value in _summary_lines(summary):
        print(f"{label + ':':16s}{value}")
    return 0


def summarise_tokenizer(data: dict, tokenizer, path: Path) -> dict:
    """The facts ``inspect`` shows, as a JSON-ready dict."""
    model = data.get("model") or {}
    vocab = model.get("vocab")
    added = data.get("added_tokens") or []
    summary = {
        "file": str(path),
        "file_bytes": path.stat().st_size,
        "model": model.get("type"),
        "model_options": {k: v for k, v in model.items() if k not in ("type", "vocab", "merges")},
        "model_vocab_size": len(vocab) if vocab is not None else None,
        "vocab_size": tokenizer.get_vocab_size(with_added_tokens=True),
        "merges": len(model["merges"]) if isinstance(model.get("merges"), list) else None,
        "normalizer": describe_component(data.get("normalizer")),
        "pre_tokenizer": describe_component(data.get("pre_tokenizer")),
        "post_processor": describe_component(data.get("post_processor")),
        "decoder": describe_component(data.get("decoder")),
        "added_tokens": [{"id": t.get("id"), "content": t.get("content"), "special": t.get("special", False)}
                         for t in added],
        "truncation": data.get("truncation"),
        "padding": data.get("padding"),
    }
    return summary


def _summary_lines(summary: dict) -> list[tuple[str, str]]:
    lines = [("file", f"{summary['file']} ({_human_bytes(summary['file_bytes'])})")]
    options = ", ".join(f"{k}={_compact(v)}" for k, v in summary["model_options"].items())
    lines.append(("model", f"{summary['model']}({options})"))
    vocab = f"{summary['vocab_size']:,}"
    if summary["model_vocab_size"] is not None:
        extra = summary["vocab_size"] - summary["model_vocab_size"]
        vocab += f" ({summary['model_vocab_size']:,} in the model, {extra:,} added on top)"
    lines.append(("vocab size", vocab))
    if summary["merges"] is not None:
        lines.append(("merges", f"{summary['merges']:,}"))
    for key, label in (("normalizer", "normalizer"), ("pre_tokenizer", "pre-tokenizer"),
                       ("post_processor", "post-processor"), ("decoder", "decoder")):
        lines.append((label, summary[key]))
    lines.append(("added tokens", _describe_added(summary["added_tokens"])))
    lines.append(("truncation", _describe_truncation(summary["truncation"])))
    lines.append(("padding", _describe_padding(summary["padding"])))
    return lines


def describe_component(component) -> str:
    """One line for a pipeline stage from its tokenizer.json form.

    >>> describe_component({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]})
    'Sequence[NFD, Lowercase]'
    >>> describe_component({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True})
    'ByteLevel(add_prefix_space=false, trim_offsets=true)'
    >>> describe_component(None)
    'none'
    """
    if component is None:
        return "none"
    if not isinstance(component, dict):
        return _compact(component)
    kind = component.get("type", "?")
    members = next((component[key] for key in ("normalizers", "pretokenizers", "processors", "decoders")
                    if isinstance(component.get(key), list)), None)
    if kind == "Sequence" and members is not None:
        return "Sequence[" + ", ".join(describe_component(m) for m in members) + "]"
    if kind == "TemplateProcessing":
        return f"TemplateProcessing(single={_template(component.get('single'))!r}, " \
               f"pair={_template(component.get('pair'))!r})"
    fields = ", ".join(f"{k}={_compact(v)}" for k, v in component.items() if k != "type")
    return f"{kind}({fields})" if fields else kind


def _template(pieces) -> str:
    """A TemplateProcessing template back in its string form: ``[CLS] $A [SEP]``."""
    out = []
    for piece in pieces or []:
        if "SpecialToken" in piece:
            out.append(piece["SpecialToken"]["id"])
        elif "Sequence" in piece:
            seq = piece["Sequence"]
            out.append(f"${seq['id']}" + (f":{seq['type_id']}" if seq.get("type_id") else ""))
    return " ".join(out)


def _compact(value, limit: int = 60) -> str:
    """A field value as short JSON; a long value is cut, ending in an ellipsis.

    >>> _compact({"Regex": "a+"}), _compact(None), _compact("x" * 80)[-3:]
    ('Regex("a+")', 'null', 'xx…')
    """
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("Regex", "String"):
        key, inner = next(iter(value.items()))
        return f"{key}({json.dumps(inner, ensure_ascii=False)})"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _describe_added(tokens: list[dict]) -> str:
    if not tokens:
        return "none"
    special = sum(1 for t in tokens if t["special"])
    shown = ", ".join(f"{t['content']} ({t['id']})" for t in tokens[:10])
    more = f", … {len(tokens) - 10} more" if len(tokens) > 10 else ""
    return f"{len(tokens)} ({special} special): {shown}{more}"


def _describe_truncation(truncation: dict | None) -> str:
    """
    >>> _describe_truncation(None)
    'off'
    >>> _describe_truncation({"direction": "Right", "max_length": 128, "strategy": "LongestFirst", "stride": 0})
    'max_length=128, strategy="LongestFirst", direction="Right", stride=0'
    """
    if not truncation:
        return "off"
    keys = ("max_length", "strategy", "direction", "stride")
    return ", ".join(f"{k}={_compact(truncation.get(k))}" for k in keys)


def _describe_padding(padding: dict | None) -> str:
    """
    >>> _describe_padding({"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": None,
    ...                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"})
    'strategy=Fixed(128), direction="Right", pad_token="[PAD]", pad_id=0, pad_type_id=0, pad_to_multiple_of=null'
    """
    if not padding:
        return "off"
    strategy = padding.get("strategy")
    strategy = f"Fixed({strategy['Fixed']})" if isinstance(strategy, dict) and "Fixed" in strategy else strategy
    keys = ("direction", "pad_token", "pad_id", "pad_type_id", "pad_to_multiple_of")
    return ", ".join([f"strategy={strategy}"] + [f"{k}={_compact(padding.get(k))}" for k in keys])


# -- scale: count, encode-dataset ---------------------------------------------------
# Counting as its own step and encoding whole corpora to token shards
# (pieceworks.trainers.counts, pieceworks.dataset). Same conventions as above:
# errors are one line and exit 2, progress bars go to stderr.
def _add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="inputs: text (one text per line), .jsonl, .parquet, .arrow; "
                             "text and .jsonl may be .gz or .zst")
    parser.add_argument("--field", default="text",
                        help="the .jsonl field or Parquet/Arrow column holding the text (default: text)")
    parser.add_argument("--format", choices=("text", "jsonl", "parquet", "arrow"), default=None,
                        help="read every file as this format (default: from the file name)")
    parser.add_argument("--workers", "-j", type=_positive_int, default=None,
                        help="processes to use (default: every core)")
    parser.add_argument("--errors", choices=("skip", "strict"), default="skip",
                        help="lines that are not UTF-8 (or bad .jsonl records): skip and report them "
                             "(default), or stop at the first")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show a progress bar on stderr (default: only when stderr is a terminal)")


def _pipeline_tokenizer(args: argparse.Namespace):
    """The tokenizer whose normalizer and pre-tokenizer cut the text: -t FILE, else a --model recipe."""
    if args.tokenizer:
        return load_tokenizer(args.tokenizer)
    recipes = available_recipes()
    if args.model not in recipes:
        raise ConfigError(f"no {args.model} recipe in this installation", fix="pass --tokenizer FILE")
    return recipes[args.model].build(1000, 0, [], False)[0]


def _add_count(commands) -> None:
    recipes = sorted(available_recipes())
    parser = commands.add_parser(
        "count", help="count the pieces of a corpus into a counts file (to train from later)",
        description="Normalize and pre-tokenize a corpus as a tokenizer does, count every piece, and "
                    "save the counts. Counts from several runs merge (pass counts files to --merge), "
                    "and 'Tokenizer.train_from_counts' trains from them.")
    _add_input_options(parser)
    parser.add_argument("--tokenizer", "-t", metavar="TOKENIZER",
                        help="a tokenizer.json whose normalizer and pre-tokenizer to use")
    parser.add_argument("--model", "-m", choices=recipes, default="bpe" if "bpe" in recipes else None,
                        help="without --tokenizer: the pipeline of this 'train --model' recipe (default: bpe)")
    parser.add_argument("--output", "-o", required=True, help="the counts file to write")
    parser.add_argument("--merge", action="append", default=[], metavar="COUNTS",
                        help="a counts file to add to the result (repeatable)")
    parser.add_argument("--memory-limit", default=None, metavar="SIZE",
                        help="spill the table to disk past this size, e.g. 2GB (default: no limit)")
    parser.add_argument("--tmp-dir", default=None, help="where to spill (default: the system's temp folder)")
    parser.add_argument("--min-count", type=_non_negative_int, default=1,
                        help="keep only pieces seen at least this often (default: 1, keep all)")
    parser.add_argument("--top-k", type=_positive_int, default=None,
                        help="keep only the K most frequent pieces (default: all)")
    parser.add_argument("--compression", choices=("none", "gzip", "zstd"), default="none",
                        help="compress the counts file (default: none)")
    parser.set_defaults(run=run_count)


def run_count(args: argparse.Namespace) -> int:
    """``pieceworks count``: count, merge, prune, save; print a one-line summary."""
    from .trainers.counts import Counts, count_files

    output = _check_output_path(args.output)
    tokenizer = _pipeline_tokenizer(args)
    show = _want_progress(args.progress)
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = count_files(args.files, tokenizer.normalizer, tokenizer.pre_tokenizer, field=args.field,
                             format=args.format, errors=args.errors, workers=args.workers,
                             memory_limit=args.memory_limit, progress=show, tmp_dir=args.tmp_dir)
    for warning in caught:
        _show_warning(warning.message, warning.category, warning.filename, warning.lineno)
    if args.merge:
        counts = Counts.merge(counts, *(Counts.load(path) for path in args.merge))
    if args.min_count > 1 or args.top_k is not None:
        counts = counts.prune(min_count=args.min_count, top_k=args.top_k)
    counts.save(output, compression=None if args.compression == "none" else args.compression)
    seconds = time.perf_counter() - started
    print(f"Counted {len(counts):,} distinct pieces ({counts.total():,} in all) from {counts.n_texts:,} texts "
          f"({_human_bytes(counts.n_bytes)}) in {seconds:.1f} s; saved to {output}")
    return 0


def _add_encode_dataset(commands) -> None:
    parser = commands.add_parser(
        "encode-dataset", help="encode a corpus to token-id shards (.npy) for model training",
        description="Encode every document (a non-empty line of a text file, or one record of "
                    ".jsonl/Parquet/Arrow) and write the ids as NumPy .npy shards (uint16 when the "
                    "vocabulary fits, else uint32) with an index of document boundaries. Run it again "
                    "into the same folder to resume after a crash: finished shards are kept.")
    _add_input_options(parser)
    parser.add_argument("--tokenizer", "-t", required=True, metavar="TOKENIZER", help="a tokenizer.json file")
    parser.add_argument("--output", "-o", required=True, metavar="FOLDER", help="the folder for the shards")
    parser.add_argument("--eod-token", default=None, metavar="TOKEN",
                        help="append this token's id after every document, e.g. '<|endoftext|>'")
    parser.add_argument("--add-special-tokens", action="store_true",
                        help="let the post-processor add its tokens ([CLS] ... [SEP]) to each document")
    parser.add_argument("--shard-size", default="64MB", metavar="SIZE",
                        help="input bytes per shard (default: 64MB)")
    parser.set_defaults(run=run_encode_dataset)


def run_encode_dataset(args: argparse.Namespace) -> int:
    """``pieceworks encode-dataset``: encode, write shards and index.json, print a summary."""
    from .dataset import encode_dataset
    from .trainers.counts import parse_memory_limit

    tokenizer = load_tokenizer(args.tokenizer)
    try:
        shard_bytes = parse_memory_limit(args.shard_size, minimum=1)
    except ConfigError:
        raise ConfigError(f"--shard-size {args.shard_size!r} is not a size",
                          fix="write it like 64MB or 1GB") from None
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index = encode_dataset(args.files, tokenizer, args.output, field=args.field, format=args.format,
                               eod_token=args.eod_token, add_special_tokens=args.add_special_tokens,
                               workers=args.workers, shard_bytes=shard_bytes, errors=args.errors,
                               progress=_want_progress(args.progress))
    for warning in caught:
        _show_warning(warning.message, warning.category, warning.filename, warning.lineno)
    seconds = time.perf_counter() - started
    print(f"Encoded {index['documents']:,} documents into {index['tokens']:,} tokens ({index['dtype']}) "
          f"in {len(index['shards'])} shard(s) in {seconds:.1f} s; index: {Path(args.output) / 'index.json'}")
    return 0
