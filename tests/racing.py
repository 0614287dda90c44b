"""A helper for tests of kernels that read a list's strs with the GIL released."""

from __future__ import annotations

import threading
from contextlib import contextmanager


@contextmanager
def list_changed_meanwhile(texts: list, make):
    """While the block runs, another thread keeps replacing ``texts``' items with ``make(generation)``.

    Each replacement frees the strs the list held (when nothing else holds
    them): a kernel that reads a str it holds no reference to reads freed
    memory. ``make(0)`` is what the list holds first.

    >>> texts = ["a"]
    >>> with list_changed_meanwhile(texts, lambda g: [str(g)]):
    ...     pass
    >>> texts[0].isdigit()
    True
    """
    texts[:] = make(0)
    busy = threading.Event()
    busy.set()

    def replace() -> None:
        generation = 1
        while busy.is_set():
            texts[:] = make(generation)
            generation += 1

    changer = threading.Thread(target=replace)
    changer.start()
    try:
        yield texts
    finally:
        busy.clear()
        changer.join()
