"""Checks on the Cython sources themselves, for mistakes that compile and run, only slowly.

A hex literal above 0x7FFFFFFF is a Python int to Cython, so ``x & 0xFFFFFFFF``
on a C integer boxes ``x`` and runs the ``&`` as Python does, in a loop that
was meant to have no objects in it (it made the tiktoken face's surrogate
check 30x slower on text with astral chars, and the BPE trainer's pair
splitting box every pair). Such a literal takes a C suffix (``0xFFFFFFFFULL``)
where it is an operand of arithmetic; comparisons and typed declarations
convert it once, in C, and need none.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent.parent / "src" / "pieceworks" / "_kernels"
SOURCES = sorted(KERNELS.glob("*.pyx")) + sorted(KERNELS.glob("*.pxd"))
# A hex literal with no C suffix, and what stands either side of it.
HEX = re.compile(r"(?P<before>(?:<<|>>|[-+*%&|^~])?)\s*\(?\s*(?P<lit>0[xX][0-9A-Fa-f]+)(?![0-9A-Fa-fuUlL])"
                 r"\s*\)?\s*(?P<after>(?:<<|>>|[-+*%&|^])?)")


def unsuffixed_wide_operands(line: str) -> list[str]:
    """The hex literals above 0x7FFFFFFF in ``line`` that are operands of arithmetic, without a C suffix.

    >>> unsuffixed_wide_operands("b = <uint32_t>(pair & 0xFFFFFFFF)")
    ['0xFFFFFFFF']
    >>> unsuffixed_wide_operands("b = <uint32_t>(pair & 0xFFFFFFFFULL)"), unsuffixed_wide_operands("if n == 0xFFFFFFFF:")
    ([], [])
    """
    code = line.split("#", 1)[0]
    return [m.group("lit") for m in HEX.finditer(code)
            if int(m.group("lit"), 16) > 0x7FFFFFFF and (m.group("before") or m.group("after"))]


def test_the_check_finds_what_it_is_for():
    assert unsuffixed_wide_operands("    x = (s4[k] & 0xFFFFF800) == 0xD800") == ["0xFFFFF800"]
    assert unsuffixed_wide_operands("    h = 0x9E3779B97F4A7C15 * x") == ["0x9E3779B97F4A7C15"]
    assert unsuffixed_wide_operands("    h ^= x >> 33  # 0xFF51AFD7ED558CCD & x") == []
    assert unsuffixed_wide_operands("cdef uint32_t NONE32 = 0xFFFFFFFF") == []
    assert unsuffixed_wide_operands("    mask = 0x7F & x") == []


@pytest.mark.skipif(not SOURCES, reason="no Cython sources beside the package (installed without them)")
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_no_wide_literal_does_python_arithmetic(source):
    found = [f"{source.name}:{number}: {line.strip()}"
             for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
             if unsuffixed_wide_operands(line)]
    assert not found, "write these literals with a C suffix (0x...ULL):\n" + "\n".join(found)
