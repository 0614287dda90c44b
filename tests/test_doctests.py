"""Every docstring example in the package holds (the worked examples are documentation: a wrong
one misleads). One test per module, so a failure names it."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import pieceworks

MODULES = sorted(info.name for info in pkgutil.walk_packages(pieceworks.__path__, "pieceworks."))


def test_the_package_has_its_modules():
    assert {"pieceworks._regex", "pieceworks.normalizers", "pieceworks._kernels.bytebpe"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (above)"
