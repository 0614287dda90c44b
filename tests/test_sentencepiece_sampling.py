"""Sampling in pieceworks.sentencepiece: SampleEncodeAndScore and thread-safe, seeded generators.

sentencepiece 0.2.3 no longer has ``SampleEncodeAndScore`` (0.2.0 did), and
no two libraries share a random stream, so the samples are held to the
model's own distribution, computed exactly from the enumerated
segmentations (``NBestEncodeWithScores`` with a large n):

* with replacement, each sample's score is its log-probability;
* without replacement (``wor=True``), samples are distinct, the first
  follows the model's distribution and the first two the law of sampling
  without replacement; each score is the log of the path's inclusion
  probability, checked two ways: every sample of one call implies the same
  threshold κ, and the Horvitz-Thompson estimates p/q average to p;
* ``include_best=True`` puts the Viterbi path first with score 0.

Seeds: the same seed gives the same samples, also when two threads sample
at once (each thread has its own generator), on the SentencePiece face and
on :class:`pieceworks.models.Unigram`.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from functools import lru_cache

import pytest

import pieceworks.sentencepiece as pw_spm
from pieceworks.errors import ConfigError

spm = pytest.importorskip("sentencepiece")

SMALL = "sentencepiece_test_model.model"
SPIECE = "hf_transformers_fixtures/spiece.model"


def chi2_999(dof: int) -> float:
    """The 99.9% point of chi-square with ``dof`` degrees of freedom (Wilson-Hilferty; 11.1 for 1 dof
    where the exact value is 10.83). The seeds are fixed, so the tests are deterministic."""
    z = 3.0902
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


@lru_cache(maxsize=None)
def _processor(path: str):
    return pw_spm.SentencePieceProcessor(model_file=path)


def processor(shared_data, name):
    return _processor(str(shared_data / "tokenizers" / "sentencepiece" / name))


def distribution(sp, text: str, alpha: float) -> dict[tuple, float]:
    """Every segmentation of ``text`` and its probability ∝ exp(alpha · score), exactly."""
    every = sp.NBestEncodeWithScores(text, 1000, out_type=str)
    assert len(every) < 1000
    logz = math.log(sum(math.exp(alpha * s) for _, s in every))
    return {tuple(p): math.exp(alpha * s - logz) for p, s in every}


def chi_square_ok(counts: Counter, probs: dict, n: int) -> bool:
    """Pearson's test at 99.9%, cells expected below 5 pooled into one."""
    big = {k: p for k, p in probs.items() if p * n >= 5}
    observed = Counter({k: counts.get(k, 0) for k in big})
    expected = {k: p * n for k, p in big.items()}
    rest = 1.0 - sum(big.values())
    if rest * n >= 1e-9:
        observed["rest"] = n - sum(observed.values())
        expected["rest"] = rest * n
    stat = sum((observed[k] - e) ** 2 / e for k, e in expected.items())
    dof = len(expected) - 1
    assert dof >= 1
    return stat < chi2_999(dof)


# -- with replacement -------------------------------------------------------------------
def test_with_replacement_scores_are_log_probabilities(shared_data):
    sp = processor(shared_data, SPIECE)
    probs = distribution(sp, "hello", 0.2)
    pw_spm.set_random_generator_seed(11)
    results = sp.SampleEncodeAndScore("hello", out_type=str, num_samples=3000, alpha=0.2)
    assert len(results) == 3000
    for pieces, score in results[:200]:
        assert score == pytest.approx(math.log(probs[tuple(pieces)]), abs=1e-4)
    assert chi_square_ok(Counter(tuple(p) for p, _ in results), probs, len(results))
    ids = sp.SampleEncodeAndScore("hello", out_type=int, num_samples=5, alpha=0.2)
    assert all(sp.decode(seq) == "hello" for seq, _ in ids)


# -- without replacement ------------------------------------------------------------------
def test_without_replacement_samples_are_distinct_and_scores_imply_one_threshold(shared_data):
    sp = processor(shared_data, SPIECE)
    alpha = 0.2
    probs = distribution(sp, "hello", alpha)
    pw_spm.set_random_generator_seed(3)
    for _ in range(100):
        results = sp.sample_encode_and_score("hello", out_type=str, num_samples=5, alpha=alpha, wor=True)
        assert len(results) == 5
        paths = [tuple(p) for p, _ in results]
        assert len(set(paths)) == 5 and set(paths) <= set(probs)
        # score = log(1 - exp(-exp(log p - kappa))): every sample of one call gives back the same kappa.
        kappas = [math.log(probs[p]) - math.log(-math.log1p(-math.exp(score)))
                  for p, (_, score) in zip(paths, results)]
        assert max(kappas) - min(kappas) < 1e-3, kappas
        assert all(s <= 0.0 for _, s in results)


def test_without_replacement_follows_the_law_of_sampling_without_replacement(shared_data):
    sp = processor(shared_data, SMALL)
    alpha = 0.2
    probs = distribution(sp, "hello", alpha)
    assert len(probs) == 7
    pw_spm.set_random_generator_seed(2024)
    n = 4000
    pairs = [tuple(tuple(p) for p, _ in sp.SampleEncodeAndScore("hello", out_type=str, num_samples=2, alpha=alpha,
                                                                 wor=True)) for _ in range(n)]
    # The samples come largest perturbed score first: the first is a draw from the model ...
    assert chi_square_ok(Counter(a for a, _ in pairs), probs, n)
    # ... and the pair is (a, b) with probability p(a) p(b) / (1 - p(a)).
    law = {(a, b): pa * pb / (1 - pa) for a, pa in probs.items() for b, pb in probs.items() if a != b}
    assert chi_square_ok(Counter(pairs), law, n)


def test_inclusion_scores_make_unbiased_estimates(shared_data):
    """Horvitz-Thompson: the mean over samples of [a in S] · p(a) / q(a) is p(a) for every path a."""
    sp = processor(shared_data, SPIECE)
    alpha = 0.2
    probs = distribution(sp, "hello", alpha)
    pw_spm.set_random_generator_seed(99)
    n = 3000
    terms: dict[tuple, list[float]] = {p: [0.0] * n for p in probs}
    for trial in range(n):
        for pieces, score in sp.SampleEncodeAndScore("hello", out_type=str, num_samples=3, alpha=alpha, wor=True):
            terms[tuple(pieces)][trial] = probs[tuple(pieces)] / math.exp(score)
    totals = [sum(terms[p][t] for p in probs) for t in range(n)]
    for values, want in [(totals, 1.0)] + [(terms[p], probs[p]) for p in sorted(probs, key=probs.get)[-6:]]:
        mean = sum(values) / n
        error = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
        assert abs(mean - want) < 5 * error + 1e-9, (want, mean, error)


def test_include_best_puts_the_viterbi_path_first(shared_data):
    sp = processor(shared_data, SPIECE)
    pw_spm.set_random_generator_seed(8)
    best = sp.encode("thesis", out_type=str)
    for _ in range(50):
        results = sp.SampleEncodeAndScore("thesis", out_type=str, num_samples=4, alpha=0.3, wor=True,
                                          include_best=True)
        assert len(results) == 4
        assert results[0] == (best, 0.0)
        rest = [tuple(p) for p, _ in results[1:]]
        assert tuple(best) not in rest and len(set(rest)) == 3
        assert all(s < 0.0 for _, s in results[1:])
    ids = sp.sample_encode_and_score_as_ids("thesis", num_samples=2, alpha=0.3, wor=True, include_best=True)
    assert ids[0] == (sp.encode("thesis"), 0.0)


def test_few_segmentations_come_back_whole(shared_data):
    sp = processor(shared_data, SMALL)
    probs = distribution(sp, "abab", 0.5)
    assert len(probs) == 2
    both = sp.SampleEncodeAndScore("abab", out_type=str, num_samples=5, alpha=0.5, wor=True)
    assert sorted(tuple(p) for p, _ in both) == sorted(probs) and {s for _, s in both} == {0.0}
    one = sp.SampleEncodeAndScore("abab", out_type=str, num_samples=1, alpha=0.5, wor=True)
    assert len(one) == 1 and one[0][1] < 0.0
    assert sp.SampleEncodeAndScore("", num_samples=3, wor=True) == [([], 0.0)]
    assert sp.SampleEncodeAndScore("", num_samples=2) == [([], 0.0), ([], 0.0)]
    lists = sp.sample_encode_and_score_as_pieces(["abab", "b"], num_samples=1, alpha=0.5, wor=True,
                                                 add_bos=True, add_eos=True)
    assert [p[0][0][0] for p in lists] == ["<s>", "<s>"] and all(p[0][0][-1] == "</s>" for p in lists)


def test_sample_encode_and_score_refuses_what_sentencepiece_refuses(shared_data):
    sp = processor(shared_data, SPIECE)
    for kwargs, match in [(dict(num_samples=0), "num_samples"), (dict(num_samples=True), "num_samples"),
                          (dict(include_best=True), "wor=True"), (dict(alpha=float("nan")), "alpha"),
                          (dict(out_type=float), "out_type")]:
        with pytest.raises(ConfigError, match=match):
            sp.SampleEncodeAndScore("hello", **kwargs)
    bpe = processor(shared_data, "llama2/tokenizer.model")
    with pytest.raises(ConfigError, match="Unigram"):
        bpe.SampleEncodeAndScore("hello", wor=True)


# -- seeds and threads --------------------------------------------------------------------
def samplers(shared_data):
    """Sampling calls of every kind, each returning something comparable."""
    from pieceworks.formats.sentencepiece import model_to_tokenizer

    uni, bpe = processor(shared_data, SPIECE), processor(shared_data, "llama2/tokenizer.model")
    hf_model = model_to_tokenizer(str(shared_data / "tokenizers" / "sentencepiece" / SPIECE)).model
    hf_model.alpha = 0.3
    nbest_model = model_to_tokenizer(str(shared_data / "tokenizers" / "sentencepiece" / SPIECE)).model
    nbest_model.alpha, nbest_model.nbest_size = 0.5, 8
    text = "The quick brown fox jumps over the lazy dog"
    return {
        "lattice": lambda: uni.encode(text, enable_sampling=True, alpha=0.1, nbest_size=-1),
        "nbest": lambda: uni.encode(text, enable_sampling=True, alpha=0.5, nbest_size=6),
        "dropout": lambda: bpe.encode(text, enable_sampling=True, alpha=0.2),
        "wor": lambda: uni.SampleEncodeAndScore(text, num_samples=3, alpha=0.2, wor=True),
        "Unigram": lambda: [t.id for t in hf_model.tokenize("▁" + text.replace(" ", "▁"))],
        "Unigram n-best": lambda: [t.id for t in nbest_model.tokenize("▁quick▁brown")],
    }


def test_the_same_seed_gives_the_same_samples(shared_data):
    for name, draw in samplers(shared_data).items():
        runs = []
        for seed in (5, 5, 6):
            pw_spm.set_random_generator_seed(seed)
            runs.append([draw() for _ in range(30)])
        assert runs[0] == runs[1], name
        assert runs[0] != runs[2], name
        assert len({repr(x) for x in runs[0]}) > 1, name


def test_threads_sampling_at_once_each_get_the_seeded_stream(shared_data):
    """Two threads sampling at the same time: each draws exactly what it draws alone after the seed."""
    for name, draw in samplers(shared_data).items():
        pw_spm.set_random_generator_seed(77)
        alone = [draw() for _ in range(150)]
        pw_spm.set_random_generator_seed(77)
        results: list = [None, None]
        start = threading.Barrier(2)

        def work(k):
            start.wait()
            results[k] = [draw() for _ in range(150)]

        workers = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        assert results[0] == alone and results[1] == alone, name
