"""``BaseTokenizer``: the wrapper Hugging Face's ready-made tokenizers share (``tokenizers.implementations``).

It holds a :class:`~pieceworks.Tokenizer` and passes each call to it; the
subclasses (:class:`ByteLevelBPETokenizer`, ...) only assemble the pipeline
and the trainer's options.

>>> from pieceworks import Tokenizer, models
>>> wrapped = BaseTokenizer(Tokenizer(models.WordLevel({"hi": 0, "[UNK]": 1}, unk_token="[UNK]")), {"model": "x"})
>>> wrapped, wrapped.encode("hi").ids
(Tokenizer(vocabulary_size=2, model=x), [0])
"""

from __future__ import annotations

from ..tokenizer import Tokenizer

__all__ = ["BaseTokenizer", "BpeFiles", "joined_normalizer"]


def _passed_on(name: str, doc: str):
    """A method that calls the wrapped Tokenizer's method of the same name."""
    def method(self, *args, **kwargs):
        return getattr(self._tokenizer, name)(*args, **kwargs)

    method.__name__ = name
    method.__doc__ = doc
    return method


def _stage(name: str):
    """A property that reads and sets the wrapped Tokenizer's pipeline stage ``name``."""
    return property(lambda self: getattr(self._tokenizer, name),
                    lambda self, value: setattr(self._tokenizer, name, value),
                    doc=f"The wrapped tokenizer's {name}.")


class BaseTokenizer:
    """A :class:`~pieceworks.Tokenizer` and the options it was built with."""

    def __init__(self, tokenizer: Tokenizer, parameters: dict | None = None):
        self._tokenizer = tokenizer
        self._parameters = parameters if parameters is not None else {}

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v}" for k, v in self._parameters.items())
        return f"Tokenizer(vocabulary_size={self._tokenizer.get_vocab_size()}, {options})"

    num_special_tokens_to_add = _passed_on("num_special_tokens_to_add", "Special tokens post-processing adds.")
    get_vocab = _passed_on("get_vocab", "The vocabulary, token -> id.")
    get_added_tokens_decoder = _passed_on("get_added_tokens_decoder", "The added tokens, id -> AddedToken.")
    get_vocab_size = _passed_on("get_vocab_size", "The size of the vocabulary.")
    enable_padding = _passed_on("enable_padding", "Pad encodings of a batch (see Tokenizer.enable_padding).")
    no_padding = _passed_on("no_padding", "Stop padding.")
    enable_truncation = _passed_on("enable_truncation", "Truncate encodings (see Tokenizer.enable_truncation).")
    no_truncation = _passed_on("no_truncation", "Stop truncating.")
    add_tokens = _passed_on("add_tokens", "Add tokens to the vocabulary; how many were new.")
    add_special_tokens = _passed_on("add_special_tokens", "Add special tokens; how many were new.")
    encode = _passed_on("encode", "Encode a sequence (and its pair).")
    encode_batch = _passed_on("encode_batch", "Encode a list of inputs.")
    async_encode_batch = _passed_on("async_encode_batch", "``await``-able encode_batch.")
    async_encode_batch_fast = _passed_on("async_encode_batch_fast", "``await``-able encode_batch_fast.")
    decode = _passed_on("decode", "Text of ids.")
    decode_batch = _passed_on("decode_batch", "Texts of lists of ids.")
    async_decode_batch = _passed_on("async_decode_batch", "``await``-able decode_batch.")
    token_to_id = _passed_on("token_to_id", "The id of a token, or None.")
    id_to_token = _passed_on("id_to_token", "The token of an id, or None.")
    save = _passed_on("save", "Write the tokenizer.json (atomically).")
    to_str = _passed_on("to_str", "The tokenizer.json as a string.")
    post_process = _passed_on("post_process", "Apply truncation, the post-processor and padding.")

    @property
    def padding(self) -> dict | None:
        return self._tokenizer.padding

    @property
    def truncation(self) -> dict | None:
        return self._tokenizer.truncation

    def normalize(self, sequence: str) -> str:
        """``sequence`` after the normalizer."""
        return self._tokenizer.normalizer.normalize_str(sequence)

    def save_model(self, directory: str, prefix: str | None = None) -> list[str]:
        """Write the model's own files (vocab.json and merges.txt for BPE) into ``directory``."""
        return self._tokenizer.model.save(directory, prefix=prefix)

    model = _stage("model")
    normalizer = _stage("normalizer")
    pre_tokenizer = _stage("pre_tokenizer")
    post_processor = _stage("post_processor")
    decoder = _stage("decoder")


def joined_normalizer(parts: list):
    """None, the one normalizer, or a Sequence of them (as the ready-made tokenizers set theirs).

    >>> from pieceworks.normalizers import Lowercase, NFKC
    >>> joined_normalizer([]), joined_normalizer([Lowercase()]), joined_normalizer([NFKC(), Lowercase()])
    (None, Lowercase(), Sequence(normalizers=[NFKC(), Lowercase()]))
    """
    from ..normalizers import Sequence

    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Sequence(parts)


class BpeFiles:
    """``from_file(vocab.json, merges.txt, **options)`` for the ready-made BPE tokenizers."""

    @classmethod
    def from_file(cls, vocab_filename: str, merges_filename: str, **kwargs):
        """A tokenizer of this class from vocab.json and merges.txt (other options as keywords)."""
        from ..models import BPE

        vocab, merges = BPE.read_file(vocab_filename, merges_filename)
        return cls(vocab, merges, **kwargs)
