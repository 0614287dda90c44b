from collections.abc import Callable, Mapping, Sequence

def learn_parity(languages: list[Mapping[str, int]], dev: list[Mapping[str, int]], tokens: list[str],
                 ids: dict[str, int], prefix: str | None, suffix: str | None, *, num_merges: int,
                 window: bool = False, min_frequency: int = 0, ratio: Sequence[float] | None = None,
                 global_merges: int = 0, window_size: int = 100, alpha: float = 2.0, total_symbols: bool = False,
                 max_token_length: int | None = None,
                 on_merge: Callable[[], object] | None = None) -> tuple[list[tuple[int, int, int]], int]: ...
