"""Fuzz the trainers with arbitrary ``{piece: count}`` tables and options.

Training may refuse (TrainingError, ConfigError); it must not raise anything
else, and a trained tokenizer must save, load and encode its own pieces.

    python fuzz/fuzz_train_counts.py -max_total_time=60 CORPUS_DIR
"""

from _common import Input, check_encoding, clean, instrumented, refused_cleanly, run

with instrumented():
    import pieceworks as pw


def test_one_input(data: bytes) -> None:
    inp = Input(data)
    kind = inp.int_in(4)
    vocab_size = inp.int_in(300)
    min_frequency = inp.int_in(4)
    specials = ["[UNK]", "<s>"][:inp.int_in(3)]
    counts = {}
    for _ in range(inp.int_in(40)):
        piece = inp.text(8)
        counts[piece] = inp.int_in(1000) - (1 if inp.byte() == 255 else 0)
    if kind == 0:
        model = pw.models.BPE(unk_token="[UNK]" if specials else None)
        trainer = clean(pw.trainers.BpeTrainer, vocab_size=vocab_size, min_frequency=min_frequency,
                        special_tokens=specials, show_progress=False,
                        continuing_subword_prefix="##" if inp.flag() else None)
    elif kind == 1:
        model = pw.models.WordPiece(unk_token="[UNK]")
        trainer = clean(pw.trainers.WordPieceTrainer, vocab_size=vocab_size, min_frequency=min_frequency,
                        special_tokens=specials, show_progress=False)
    elif kind == 3:
        model = pw.models.Unigram()
        trainer = clean(pw.trainers.UnigramTrainer, vocab_size=vocab_size, special_tokens=specials,
                        show_progress=False, unk_token="[UNK]" if specials else None,
                        max_piece_length=1 + inp.int_in(16), initial_alphabet=list(inp.text(3)))
    else:
        model = pw.models.WordLevel(unk_token="[UNK]")
        trainer = clean(pw.trainers.WordLevelTrainer, vocab_size=vocab_size, min_frequency=min_frequency,
                        special_tokens=specials, show_progress=False)
    if trainer is None:
        return
    tok = pw.Tokenizer(model)
    try:
        tok.train_from_counts(counts, trainer)
    except Exception as exc:  # noqa: BLE001
        if refused_cleanly(exc):
            return
        raise
    again = pw.Tokenizer.from_str(tok.to_str())
    for piece in list(counts)[:5]:
        enc = clean(again.encode, piece)
        if enc is not None:
            check_encoding(piece, enc)


def seeds():
    yield "small", bytes([0, 200, 0, 2]) + bytes(range(1, 200))


if __name__ == "__main__":
    run(test_one_input, seeds)
