"""Shared fixtures: where ../shared/data is, and a skip when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _find_shared_data() -> Path | None:
    env = os.environ.get("PIECEWORKS_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT.parent / "shared" / "data")
    for path in candidates:
        if (path / "MANIFEST.md").is_file():
            return path
    return None


SHARED_DATA = _find_shared_data()
SKIP_REASON = ("../shared/data is absent (set PIECEWORKS_SHARED_DATA to its path); "
               "this test needs the real tokenizer files and corpora kept there")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The ../shared/data folder; skips the test, saying why, when it is absent."""
    if SHARED_DATA is None:
        pytest.skip(SKIP_REASON)
    return SHARED_DATA


needs_shared_data = pytest.mark.skipif(SHARED_DATA is None, reason=SKIP_REASON)
