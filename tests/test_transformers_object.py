"""A pieceworks Tokenizer inside transformers: ``PreTrainedTokenizerFast(tokenizer_object=ours)``
answers every call as it does around Hugging Face's Tokenizer of the same file (transformers adds
its pad and mask tokens as Hugging Face ``AddedToken`` objects), and ``save_pretrained`` writes a
folder either library loads back.
"""

from __future__ import annotations

import pytest

from pieceworks import Tokenizer
from pieceworks.added_vocabulary import as_added_token

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

FILES = ["hf_tokenizer_json/llama3", "hf_tokenizer_json/gemma3", "bert_all-MiniLM-L6-v2", "sentencepiece/barthez"]
TEXTS = ["Hello world, it's 2024!", "naïve café 中文 😀", "a", "x <mask_x> y"]
PAIRS = [("what is it?", "it is a thing."), ("x", "y z")]


def _answers(wrapped) -> list:
    """What a training or serving script asks of a fast tokenizer."""
    calls = [wrapped(TEXTS, padding=True, truncation=True, max_length=8, return_offsets_mapping=True,
                     return_overflowing_tokens=True, stride=2),
             wrapped([a for a, _ in PAIRS], [b for _, b in PAIRS], padding="max_length", max_length=16,
                     truncation="only_second"),
             wrapped(["hello", "world"], is_split_into_words=True).word_ids()]
    ids = wrapped("Hello world <mask_x>")["input_ids"]
    return [dict(c) if hasattr(c, "keys") else c for c in calls] + [
        wrapped.decode(ids, skip_special_tokens=True), wrapped.batch_decode([ids[:3], ids[1:]]),
        wrapped.convert_ids_to_tokens(ids), wrapped.tokenize("Hello world <mask_x>"), len(wrapped),
        wrapped.vocab_size, wrapped.mask_token_id, wrapped.pad_token_id]


def _wrap(tok):
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=tok.id_to_token(0),
                                                mask_token="<mask_x>")


@pytest.mark.parametrize("relative", FILES)
def test_wrapped_by_transformers_as_hugging_face_is(relative, shared_data, tmp_path):
    path = str(shared_data / f"tokenizers/{relative}/tokenizer.json")
    ours, theirs = _wrap(Tokenizer.from_file(path)), _wrap(tokenizers.Tokenizer.from_file(path))
    assert isinstance(ours.backend_tokenizer, Tokenizer)
    assert _answers(ours) == _answers(theirs)
    ours.save_pretrained(str(tmp_path))
    loaded = transformers.PreTrainedTokenizerFast.from_pretrained(str(tmp_path))
    assert _answers(loaded) == _answers(theirs)
    assert Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode("x <mask_x> y").ids == \
        theirs("x <mask_x> y")["input_ids"]


def test_hugging_faces_added_token_is_taken_with_its_flags():
    theirs = tokenizers.AddedToken("<m>", single_word=True, lstrip=True, rstrip=False, normalized=False,
                                   special=True)
    made = as_added_token(theirs, special=False)
    assert (made.content, made.single_word, made.lstrip, made.rstrip, made.normalized, made.special) == \
        ("<m>", True, True, False, False, True)
    assert as_added_token(tokenizers.AddedToken("<n>"), special=True).special is True
