"""The encode/decode harness shared by the per-model fuzz targets.

Each target names some tokenizers; for every input the harness picks one,
reads a text and some ids from the fuzzer bytes, and checks:

* ``encode`` refuses cleanly or gives a well-formed Encoding (offsets inside
  the text), with and without ``split_special_tokens``; ``encode_batch``
  gives the same encodings; the text cut in two, as a pair, gives Hugging
  Face's encoding, alone and in a batch;
* the same ids and offsets as Hugging Face ``tokenizers`` (when installed and
  the text has no lone surrogates, which it refuses);
* a lossless model gives the text back (``decode(encode(text))``);
* ``decode`` of arbitrary ids refuses cleanly (unknown id) or matches Hugging
  Face; ``errors="strict"`` raises DecodeError exactly when the text has bad bytes;
* the text's words (cut at spaces) as a pre-tokenized sequence give Hugging Face's encoding.
"""

from __future__ import annotations

import unicodedata

from _common import Input, check_encoding, clean, has_surrogates, hf_comparable, utf8_view


class Target:
    """One tokenizer under test: ours, Hugging Face's twin (or None), and what a round trip gives back."""

    def __init__(self, name: str, ours, theirs=None, lossless: str | None = None, unless: str = "",
                 byte_fallback: bool = False):
        self.name, self.ours, self.theirs, self.lossless = name, ours, theirs, lossless
        #: Chars whose presence makes the round trip lossy (Metaspace's "▁" turns into a space).
        self.unless = unless
        #: ByteFallback turns a whole run of byte tokens that is not UTF-8 into U+FFFD, byte by
        #: byte (a lone surrogate's bytes take valid neighbours such as NUL with them).
        self.byte_fallback = byte_fallback
        self.vocab_size = ours.get_vocab_size()

    def round_trip(self, text: str) -> str:
        text = utf8_view(text)
        if self.lossless in (None, "exact"):
            return text
        # Hugging Face's normalizer when there is one: its Rust tables are older than Python's
        # unicodedata, and lack the combining classes of some marks (U+1DF7..U+1DFF are starters
        # there, so never reordered), which pieceworks follows.
        normalizer = None if self.theirs is None or has_surrogates(text) else self.theirs.normalizer
        return normalizer.normalize_str(text) if normalizer is not None else unicodedata.normalize(self.lossless, text)


def check_target(target: Target, data: bytes) -> None:
    from pieceworks.errors import DecodeError

    inp = Input(data)
    text = inp.text(48)
    split, add_special = inp.flag(), inp.flag()
    ours, theirs = target.ours, target.theirs
    enc = clean(ours.encode, text, add_special_tokens=add_special, split_special_tokens=split)
    if enc is None:
        return
    check_encoding(text, enc)
    check_batch(ours, text, enc, add_special_tokens=add_special, split_special_tokens=split)
    if theirs is not None and not has_surrogates(text) and hf_comparable(text):
        theirs.encode_special_tokens = split
        expected = theirs.encode(text, add_special_tokens=add_special)
        excluded = ours._split_exclusion() if split else None

        def from_text(e):   # special tokens the text spelled (not added by post-processing;
            # an unknown char may still get the unknown id, but not the unknown token's spelling)
            return {i for i, token, special in zip(e.ids, e.tokens, e.special_tokens_mask)
                    if not special and token == ours.id_to_token(i)}

        if excluded is not None and excluded & from_text(expected):
            # Where pieceworks departs from HF on purpose: HF's model spelled a special
            # token from plain text; ours must not (and encodes the rest as it can).
            assert not excluded & from_text(enc), f"{target.name}: a special id from plain text {text!r}"
        else:
            assert enc.ids == expected.ids, f"{target.name}: ids differ from Hugging Face for {text!r}"
            assert enc.offsets == expected.offsets, f"{target.name}: offsets differ from Hugging Face for {text!r}"
    if target.lossless and split and not add_special and not any(c in text for c in target.unless) and \
            not (target.byte_fallback and has_surrogates(text)):
        back = ours.decode(enc.ids, skip_special_tokens=False)
        assert back == target.round_trip(text), f"{target.name}: {text!r} came back as {back!r}"
    ids = inp.ids(target.vocab_size)
    skip = inp.flag()
    decoded = clean(ours.decode, ids, skip_special_tokens=skip)
    if decoded is None:
        return
    if theirs is not None:
        assert decoded == theirs.decode(ids, skip_special_tokens=skip), \
            f"{target.name}: decode({ids}) differs from Hugging Face"
    try:
        strict = ours.decode(ids, skip_special_tokens=skip, errors="strict")
    except DecodeError:
        assert "\ufffd" in decoded, f"{target.name}: strict decode refused ids whose text is clean"
    else:
        assert strict == decoded
    # (Read last, so the inputs saved before it still mean what they meant.)
    check_pair(target, text[:inp.int_in(len(text) + 1)], text, add_special)
    check_words(target, text.split(" "), add_special)


def check_words(target: Target, words: list[str], add_special: bool) -> None:
    """The text's words (cut at each space, empty ones too) as a pre-tokenized sequence: well formed,
    and Hugging Face's encoding (the kernels' ``encode_words``: all the words in one call)."""
    ours, theirs = target.ours, target.theirs
    enc = clean(ours.encode, words, is_pretokenized=True, add_special_tokens=add_special)
    if enc is None or theirs is None or any(has_surrogates(w) or not hf_comparable(w) for w in words):
        return
    theirs.encode_special_tokens = False
    expected = theirs.encode(words, is_pretokenized=True, add_special_tokens=add_special)
    assert (enc.ids, enc.offsets, enc.word_ids, enc.tokens) == \
        (expected.ids, expected.offsets, expected.word_ids, expected.tokens), \
        f"{target.name}: the words {words!r} differ from Hugging Face"


def check_pair(target: Target, first: str, text: str, add_special: bool) -> None:
    """``encode(first, rest)`` (the text cut in two) is well formed, one pair of a batch gives the
    same, and it is Hugging Face's."""
    ours, theirs = target.ours, target.theirs
    second = text[len(first):]
    enc = clean(ours.encode, first, second, add_special_tokens=add_special)
    if enc is None:
        return
    batch = clean(ours.encode_batch, [(first, second), first], add_special_tokens=add_special)
    if batch is not None:
        assert (batch[0].ids, batch[0].type_ids, batch[0].offsets) == (enc.ids, enc.type_ids, enc.offsets), \
            f"{target.name}: encode_batch of the pair {(first, second)!r}"
    if theirs is not None and not has_surrogates(text) and hf_comparable(first) and hf_comparable(second):
        theirs.encode_special_tokens = False
        try:
            expected = theirs.encode(first, second, add_special_tokens=add_special)
        except Exception:   # noqa: BLE001 - a pair Hugging Face refuses (ours refused or not: no twin)
            return
        assert _pair_fields(enc) + _other_fields(enc) == _pair_fields(expected) + _other_fields(expected), \
            f"{target.name}: the pair {(first, second)!r} differs from Hugging Face"
        check_cut_pair(target, first, second, add_special)


def _pair_fields(enc) -> tuple:
    """What a cut pair is compared on: its lists and, nested, its overflowing parts'."""
    return (enc.ids, enc.type_ids, enc.offsets, enc.sequence_ids, enc.attention_mask,
            [_pair_fields(part) for part in enc.overflowing])


def _other_fields(enc) -> tuple:
    """The rest of a pair's lists (its tokens, words and special tokens mask: built when first read)."""
    return enc.tokens, enc.word_ids, enc.special_tokens_mask


def check_cut_pair(target: Target, first: str, second: str, add_special: bool) -> None:
    """The pair cut by a truncation its lengths pick (strategy, direction, stride, a room of about a
    third of its chars, so that each side has a few windows: every combination of them is a part)
    is Hugging Face's, overflowing parts and all (built in C, the parts made when read)."""
    ours, theirs = target.ours, target.theirs
    if len(first) + len(second) > 200 or (len(first) + len(second)) % 8:
        return      # (short pairs, one in eight: the cut's rules show on them, and every input would slow
                    # the instrumented fuzzer five times)
    room = max(1, len(first + second) // 3) + len(first) % 3
    strategy = ("longest_first", "only_first", "only_second")[len(first) % 3]
    # (A stride the cut side's length does not exceed: Hugging Face panics otherwise, slowly. Cut
    # longest first, each side keeps at least half the room; cut alone, as little as one token.)
    stride = len(second) % max(1, room // 2) if strategy == "longest_first" else 0
    options = dict(max_length=room + ours.num_special_tokens_to_add(True), stride=stride, strategy=strategy,
                   direction=("right", "left")[len(second) % 2])
    for tok in (ours, theirs):
        tok.enable_truncation(**options)
    try:
        try:
            expected = theirs.encode(first, second, add_special_tokens=add_special)
        except BaseException as exc:    # noqa: BLE001 - a cut it refuses (pyo3's panic is a BaseException)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return
        enc = clean(ours.encode, first, second, add_special_tokens=add_special)
        assert enc is not None, f"{target.name}: the cut pair {(first, second)!r} ({options}) refused"
        assert _pair_fields(enc) == _pair_fields(expected), \
            f"{target.name}: the cut pair {(first, second)!r} ({options}) differs from Hugging Face"
    finally:
        for tok in (ours, theirs):
            tok.no_truncation()


def check_batch(ours, text: str, enc, **options) -> None:
    """``encode_batch`` (the kernels' batch jobs, whose encodings share their chunk) gives each
    text's ``encode``, offsets and all."""
    texts = [text, text + "\n" + text, ""]
    batch = clean(ours.encode_batch, texts, **options)
    if batch is None:
        return
    for one, got in zip(texts, batch):
        want = enc if one is text else ours.encode(one, **options)
        assert (got.ids, got.tokens, got.offsets, got.word_ids) == (want.ids, want.tokens, want.offsets,
                                                                     want.word_ids), f"encode_batch of {one!r}"


def pick(targets: list[Target], data: bytes) -> tuple[Target, bytes]:
    if not data:
        return targets[0], b""
    return targets[data[0] % len(targets)], data[1:]
