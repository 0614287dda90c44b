"""Fuzz the tiktoken face's encode/decode against tiktoken (cl100k_base), special-token policy included.

Skips (exit status 0, saying why) while ``pieceworks.tiktoken`` does not exist.

    python fuzz/fuzz_encode_tiktoken.py -max_total_time=60 CORPUS_DIR
"""

import json
import sys

from _common import SHARED_DATA, Input, clean, has_surrogates, instrumented, run

with instrumented():
    try:
        from pieceworks import tiktoken as face
        MISSING = None
    except ImportError as exc:
        face = None
        MISSING = f"pieceworks.tiktoken is not importable yet ({exc})"


def targets():
    if face is None:
        return []
    folder = SHARED_DATA / "tokenizers/tiktoken"
    if not (folder / "encodings_meta.json").is_file():
        return []
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    meta = json.loads((folder / "encodings_meta.json").read_text())["cl100k_base"]
    path = str(folder / "cl100k_base.tiktoken")
    ours = face.Encoding("cl100k_base", pat_str=meta["pat_str"], mergeable_ranks=face.load_tiktoken_bpe(path),
                         special_tokens=meta["special_tokens"])
    theirs = tiktoken.Encoding("cl100k_base", pat_str=meta["pat_str"], mergeable_ranks=load_tiktoken_bpe(path),
                               special_tokens=meta["special_tokens"])
    return [(ours, theirs)]


TARGETS = targets()


def test_one_input(data: bytes) -> None:
    if not TARGETS:
        return
    ours, theirs = TARGETS[0]
    inp = Input(data)
    text = inp.text(40)
    if has_surrogates(text):
        clean(ours.encode_ordinary, text)
        return
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text
    for allowed in ("all", set()):
        try:
            expected = theirs.encode(text, allowed_special=allowed)
        except ValueError:
            try:
                ours.encode(text, allowed_special=allowed)
            except ValueError:
                continue
            raise AssertionError(f"special-token text accepted without being allowed: {text!r}")
        assert ours.encode(text, allowed_special=allowed) == expected, text
        # A batch finds the texts holding a special token on its own (token_finder): the text cut
        # in two must come out as the two halves encoded alone, whatever the cut does to a token.
        cut = inp.int_in(len(text) + 1)
        halves = [text[:cut], text[cut:]]     # (parts of a text the policy accepts: so are they)
        want = [expected] + [theirs.encode(half, allowed_special=allowed) for half in halves]
        assert ours.encode_batch([text] + halves, allowed_special=allowed) == want, (text, cut)
    ids = [i % theirs.n_vocab for i in inp.ids(theirs.n_vocab)]
    assert _outcome(ours.decode_bytes, ids) == _outcome(theirs.decode_bytes, ids), ids


def _outcome(fn, *args):
    """The result, or the kind of error: tiktoken raises KeyError for an id it lacks, and so must we."""
    try:
        return fn(*args)
    except KeyError:
        return "KeyError"


if __name__ == "__main__":
    if not TARGETS:
        print(f"fuzz_encode_tiktoken: skipped: {MISSING or '../shared/data is absent'}")
        sys.exit(0)
    run(test_one_input)
