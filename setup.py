"""Build the Cython kernels: one Extension per ``src/pieceworks/_kernels/*.pyx``.

Every kernel is compiled with the same directives, so a new kernel needs no
change here: drop ``name.pyx`` (and its ``name.pxd``/``name.pyi``) into the
folder.  Set ``PIECEWORKS_ASAN=1`` to build with AddressSanitizer, and
``PIECEWORKS_ONLY=bytebpe,unigram`` to rebuild only the kernels named.
"""

import os
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = Path("src/pieceworks/_kernels")

DIRECTIVES = {
    "language_level": "3",
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "embedsignature": True,
}


def compile_args():
    if os.environ.get("PIECEWORKS_ASAN"):
        return ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"], ["-fsanitize=address"]
    return ["-O3"], []


def selected_kernels():
    """All kernels, or only those named in ``PIECEWORKS_ONLY`` (comma-separated), for quick rebuilds."""
    only = {name.strip() for name in os.environ.get("PIECEWORKS_ONLY", "").split(",") if name.strip()}
    return [pyx for pyx in sorted(KERNELS.glob("*.pyx")) if not only or pyx.stem in only]


def extensions():
    cflags, ldflags = compile_args()
    return [
        Extension(
            f"pieceworks._kernels.{pyx.stem}",
            [str(pyx)],
            extra_compile_args=cflags,
            extra_link_args=ldflags,
        )
        for pyx in selected_kernels()
    ]


setup(ext_modules=cythonize(extensions(), compiler_directives=DIRECTIVES, quiet=True))
