from collections.abc import Callable, Mapping

def char_counts(counts: Mapping[str, int]) -> list[tuple[str, int]]: ...

class MergeLearner:
    """Words as id arrays; ``learn`` runs the BPE merge loop (see bpe_train.pyx)."""

    def __init__(self, counts: Mapping[str, int], id_to_token: list[str], token_to_id: dict[str, int],
                 prefix: str | None = None, suffix: str | None = None, max_token_length: int | None = None,
                 first_seen: bool = False) -> None: ...
    def learn(self, id_to_token: list[str], token_to_id: dict[str, int], vocab_size: int,
              min_frequency: int = 0, prefix: str | None = None,
              progress: Callable[[int], object] | None = None) -> list[tuple[int, int, int]]: ...
    def word_ids(self, w: int) -> list[int]: ...
