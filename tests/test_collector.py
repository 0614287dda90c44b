"""pieceworks._collector: the cyclic collector is paused while the general pipeline encodes a long
text, and afterwards is exactly as the program had it."""

from __future__ import annotations

import gc
import threading

import pytest

import pieceworks as pw
from pieceworks._collector import paused
from pieceworks.pre_tokenizers import PreTokenizer


@pytest.fixture(autouse=True)
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_for_the_block_and_back_after_it_even_on_error():
    with paused(False):
        assert gc.isenabled()
    with pytest.raises(ValueError):
        with paused(True):
            assert not gc.isenabled()
            raise ValueError("inside")
    assert gc.isenabled()


def test_a_program_that_turned_it_off_keeps_it_off():
    gc.disable()
    with paused(True):
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_pauses_on_several_threads_end_with_the_last():
    inside, leave = threading.Barrier(3), threading.Event()
    seen = []

    def pause_until_told():
        with paused(True):
            inside.wait()
            leave.wait()
            seen.append(gc.isenabled())

    threads = [threading.Thread(target=pause_until_told) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    leave.set()
    for t in threads:
        t.join()
    assert seen == [False, False] and gc.isenabled()


class _Noting:
    """A custom pre-tokenizer that notes whether the collector runs while it is called."""

    def __init__(self):
        self.seen = []

    def pre_tokenize(self, pretok):
        self.seen.append(gc.isenabled())


def test_the_general_pipeline_pauses_it_for_a_long_text_only():
    tok = pw.Tokenizer(pw.models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    noting = _Noting()
    tok.pre_tokenizer = PreTokenizer.custom(noting)
    assert tok._current_plan() is None
    tok.encode("a" * 10)
    tok.encode("a" * 10_000)
    assert noting.seen == [True, False] and gc.isenabled()
    gc.disable()
    tok.encode("a" * 10_000)
    assert not gc.isenabled()
