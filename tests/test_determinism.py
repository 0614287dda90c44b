"""Determinism: the same input and options give the same bytes, whatever the process.

Training BPE, WordPiece, WordLevel and Unigram tokenizers on the same corpus
with the same options gives a byte-identical tokenizer.json across runs,
counting workers (``PIECEWORKS_WORKERS``), batch threads
(``PIECEWORKS_NUM_THREADS``) and ``PYTHONHASHSEED`` values, each run in a
fresh subprocess. Sampling (BPE-dropout, Unigram sampling) is reproducible
with a seed, in-process and across processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pieceworks as pw

ROOT = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter; prints {what: sha256 of the result}.
SCRIPT = r'''
import hashlib, json, os, sys, tempfile
import pieceworks as pw
from pieceworks.corpus import iter_default_corpus

def digest(text):
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

lines, size = [], 0
for line in iter_default_corpus():
    lines.append(line)
    size += len(line)
    if size > 120_000:
        break
folder = tempfile.mkdtemp()
path = os.path.join(folder, "corpus.txt")
with open(path, "w", encoding="utf-8") as fh:
    # iter_default_corpus() keeps each line's newline, as train() reads them
    fh.write("".join(lines))

specials = ["[UNK]", "[CLS]", "[SEP]"]
out = {}

def train(kind, from_files):
    if kind == "bpe":
        tok = pw.Tokenizer(pw.models.BPE())
        tok.pre_tokenizer = pw.pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = pw.trainers.BpeTrainer(vocab_size=700, special_tokens=specials, show_progress=False,
                                         initial_alphabet=pw.pre_tokenizers.ByteLevel.alphabet())
    elif kind == "wordpiece":
        tok = pw.Tokenizer(pw.models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = pw.normalizers.BertNormalizer()
        tok.pre_tokenizer = pw.pre_tokenizers.BertPreTokenizer()
        trainer = pw.trainers.WordPieceTrainer(vocab_size=700, special_tokens=specials, show_progress=False)
    elif kind == "wordlevel":
        tok = pw.Tokenizer(pw.models.WordLevel(unk_token="[UNK]"))
        tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
        trainer = pw.trainers.WordLevelTrainer(vocab_size=700, special_tokens=specials, show_progress=False)
    else:
        tok = pw.Tokenizer(pw.models.Unigram())
        tok.pre_tokenizer = pw.pre_tokenizers.Metaspace()
        trainer = pw.trainers.UnigramTrainer(vocab_size=400, special_tokens=specials, show_progress=False,
                                             unk_token="[UNK]")
    if from_files:
        tok.train([path], trainer)
    else:
        tok.train_from_iterator(lines, trainer)
    return tok

for kind in sys.argv[1].split(","):
    for from_files in (False, True):
        try:
            tok = train(kind, from_files)
        except (ImportError, NotImplementedError, AttributeError) as exc:
            out[f"{kind}-{from_files}"] = f"unavailable: {exc!r}"
            continue
        text = tok.to_str(pretty=True)
        out[f"{kind}-{'files' if from_files else 'iterator'}"] = digest(text)
        ids = [e.ids for e in tok.encode_batch(lines[:200])]
        out[f"{kind}-encode"] = digest(json.dumps(ids))

# Sampling with a seed.
bpe = train("bpe", False)
dropout = pw.Tokenizer.from_str(bpe.to_str())
dropout.model = pw.models.BPE(bpe.model.get_vocab(), bpe.model.get_merges(), dropout=0.3, seed=1234)
dropout.pre_tokenizer = bpe.pre_tokenizer
out["bpe-dropout"] = digest(json.dumps([dropout.encode(t).ids for t in lines[:100]]))
model = os.environ.get("SPM_MODEL")
if model:
    from pieceworks.sentencepiece import SentencePieceProcessor, set_random_generator_seed
    sp = SentencePieceProcessor(model_file=model)
    set_random_generator_seed(99)
    out["unigram-sampling"] = digest(json.dumps([sp.encode(t, enable_sampling=True, alpha=0.1, nbest_size=-1)
                                                for t in lines[:100]]))
    set_random_generator_seed(99)
    out["unigram-nbest-sampling"] = digest(json.dumps([sp.encode(t, enable_sampling=True, alpha=0.5, nbest_size=4)
                                                      for t in lines[:100]]))
print(json.dumps(out))
'''

KINDS = "bpe,wordpiece,wordlevel,unigram"


def run_script(env_extra: dict, shared_data) -> dict:
    env = dict(os.environ)
    env.pop("PIECEWORKS_NO_FAST", None)
    env.update(env_extra)
    spm = shared_data / "tokenizers/sentencepiece/hf_transformers_fixtures/spiece.model"
    env["SPM_MODEL"] = str(spm)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, KINDS], capture_output=True, text=True, env=env,
                          timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


VARIANTS = [
    {"PYTHONHASHSEED": "0", "PIECEWORKS_WORKERS": "1", "PIECEWORKS_NUM_THREADS": "1"},
    {"PYTHONHASHSEED": "12345", "PIECEWORKS_WORKERS": "2", "PIECEWORKS_NUM_THREADS": "4"},
    {"PYTHONHASHSEED": "random", "PIECEWORKS_WORKERS": "3", "PIECEWORKS_NUM_THREADS": "2"},
]


@pytest.fixture(scope="module")
def variant_results(shared_data) -> list[dict]:
    """The script's digests under each variant (one fresh subprocess each, run once for the module)."""
    return [run_script(v, shared_data) for v in VARIANTS]


@pytest.mark.parametrize("kind", [
    "bpe", "wordpiece", "wordlevel",
    "unigram",
])
def test_training_is_byte_identical_across_processes_threads_and_hash_seeds(variant_results, kind):
    keys = [f"{kind}-iterator", f"{kind}-files", f"{kind}-encode"]
    first = variant_results[0]
    for key in keys:
        assert key in first and not first[key].startswith("unavailable"), first.get(key)
    for variant, result in zip(VARIANTS[1:], variant_results[1:]):
        differ = [k for k in keys if result.get(k) != first[k]]
        assert not differ, f"{differ} differ under {variant}"
    # Training from files (counted in parallel) and from an iterator give the same tokenizer.
    assert first[f"{kind}-files"] == first[f"{kind}-iterator"]


@pytest.mark.parametrize("key", ["bpe-dropout", "unigram-sampling", "unigram-nbest-sampling"])
def test_seeded_sampling_is_identical_across_processes(variant_results, key):
    assert len({result[key] for result in variant_results}) == 1, key


# -- sampling in-process ---------------------------------------------------------

def small_bpe():
    tok = pw.Tokenizer(pw.models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pw.pre_tokenizers.Whitespace()
    tok.train_from_iterator(["the quick brown fox jumps over the lazy dog"] * 20 + ["lorem ipsum dolor sit amet"] * 20,
                            pw.trainers.BpeTrainer(vocab_size=120, special_tokens=["[UNK]"], show_progress=False))
    return tok


def with_dropout(tok, seed):
    out = pw.Tokenizer.from_str(tok.to_str())
    out.model = pw.models.BPE(tok.model.get_vocab(), tok.model.get_merges(), unk_token="[UNK]", dropout=0.5,
                              seed=seed)
    return out


def test_bpe_dropout_is_reproducible_with_a_seed():
    tok = small_bpe()
    text = "the quick brown fox jumps over the lazy dog " * 5
    a = [with_dropout(tok, 7).encode(text).ids for _ in range(3)]
    assert a[0] == a[1] == a[2]
    runs = [with_dropout(tok, 7)] * 1
    sequence = [runs[0].encode(text).ids for _ in range(5)]
    again = with_dropout(tok, 7)
    assert [again.encode(text).ids for _ in range(5)] == sequence          # the same stream of samples
    others = {tuple(with_dropout(tok, seed).encode(text).ids) for seed in range(8)}
    assert len(others) > 1                                                 # the seed matters
    assert len({tuple(s) for s in sequence}) > 1                           # successive samples differ


def test_unigram_sampling_is_reproducible_with_a_seed(shared_data):
    from pieceworks.sentencepiece import SentencePieceProcessor, set_random_generator_seed

    sp = SentencePieceProcessor(model_file=str(shared_data / "tokenizers/sentencepiece/hf_transformers_fixtures/spiece.model"))
    text = "The quick brown fox jumps over the lazy dog, again and again."

    def samples(seed, **kwargs):
        set_random_generator_seed(seed)
        return [sp.encode(text, enable_sampling=True, **kwargs) for _ in range(10)]

    for kwargs in ({"alpha": 0.1, "nbest_size": -1}, {"alpha": 0.5, "nbest_size": 5}):
        assert samples(3, **kwargs) == samples(3, **kwargs)
        assert len({tuple(s) for s in samples(3, **kwargs)}) > 1
        assert samples(3, **kwargs) != samples(4, **kwargs)


def test_unigram_model_sampling_follows_the_same_seed(shared_data):
    from pieceworks.formats.sentencepiece import model_to_tokenizer
    from pieceworks.sentencepiece import set_random_generator_seed

    tok = model_to_tokenizer(str(shared_data / "tokenizers/sentencepiece/hf_transformers_fixtures/spiece.model"))
    tok.model.alpha = 0.3
    text = "The quick brown fox jumps over the lazy dog."

    def samples(seed):
        set_random_generator_seed(seed)
        return [tok.encode(text).ids for _ in range(10)]

    assert samples(11) == samples(11)
    assert len({tuple(s) for s in samples(11)}) > 1
