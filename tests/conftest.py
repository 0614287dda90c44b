"""Shared fixtures: where ../shared/data is, and a skip when it is absent."""

from __future__ import annotations

import os
import shutil
import tempfile
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


_OWN_CACHE: list[str] = []


def pytest_configure(config):
    """The tests' disk cache (see pieceworks._disk_cache) is a folder of their own, emptied at the end,
    so no test reads what an older build left in the user's cache, and none leaves files there."""
    if "PIECEWORKS_CACHE" not in os.environ:
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="pieceworks-test-cache-"))
        os.environ["PIECEWORKS_CACHE"] = _OWN_CACHE[-1]


def pytest_unconfigure(config):
    for folder in _OWN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)
        if os.environ.get("PIECEWORKS_CACHE") == folder:
            del os.environ["PIECEWORKS_CACHE"]
