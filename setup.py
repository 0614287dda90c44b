"""Build the Cython kernels: one Extension per ``src/pieceworks/_kernels/*.pyx``.

Every kernel is compiled with the same directives, so a new kernel needs no
change here: drop ``name.pyx`` (and its ``name.pxd``/``name.pyi``) into the
folder.  Set ``PIECEWORKS_ASAN=1`` to build with AddressSanitizer, and
``PIECEWORKS_ONLY=bytebpe,unigram`` to rebuild only the kernels named, and
``PIECEWORKS_BUILD_JOBS=1`` to build one kernel at a time (default: one per core).
"""

import os
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = Path("src/pieceworks/_kernels")

# Free-threaded Python (3.13t, 3.14t): the kernels are not yet declared safe without
# the GIL ("freethreading_compatible": True, Cython >= 3.1), so importing pieceworks
# on such a build turns the GIL back on (Python warns) and everything runs as today.
# Audited (see README, Development): bpe_encode (its word cache across calls: claimed by
# compare-and-swap), single_text, wordlevel, suffix_array,
# count, bpe_train, wordpiece_train, onig_spans (a match region per thread) and spm_decode (its table is
# read-only after construction) are safe (read-only after construction, per-call objects, or atomic state).
# Not yet, and why:
#   id_bytes            IdBytes fills its C table of each id's bytes as ids are met (a
#                       pointer into the entry's bytes, then the flag that says it is there),
#                       with no lock: two threads meeting one id at once race;
#   aligned_nfc         splice_segments and splice_clusters read the caller's shared dict
#                       of edits by borrowed reference (PyDict_GetItem), which another
#                       thread may clear: PyDict_GetItemRef (3.13) is the fix;
#   raw_encoding        basis_for's one-entry cache (_last_basis) is a module global
#                       replaced without a lock, and a Basis fills its with_frame and
#                       settled() caches on first use;
#   bert_fast, bytebpe  (scratch pools now pop-or-create, bert_fast's int table is
#                       built at import) bytebpe's _classes_bytes is still built lazily
#                       into a module global, and its count of workspaces in use (the
#                       shared piece cache is emptied only at zero) is a plain int kept
#                       right by the GIL; clear_cache marks pooled workspaces that another
#                       thread may be checking out;
#   scan                the lazily built flag/script tables (same pattern, narrower);
#   wordpiece_encode    WordPieceMatcher.match() expands pops on a member vector
#                       (self.stack) shared by every caller;
#   unigram             SpmEncoder and SpmCore (its Hugging Face Metaspace calls) claim
#                       their shared scratch with an unlocked busy flag;
#   unigram_train       mine_seeds' comparator reads the text from a module global
#                       (_cand_text) while the GIL is released; trainers/unigram.py
#                       serializes mine_seeds with a lock (two trainings on threads
#                       crashed before), the kernel itself still needs the functor fix.
# When those are fixed, add "freethreading_compatible": True below (one switch for all:
# a single module without it re-enables the GIL for the whole process).
DIRECTIVES = {
    "language_level": "3",
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "embedsignature": True,
}


# Cython and the C compiler run on every core: a from-source install (pip install .) took
# 300 s one kernel at a time on a 2-core machine, 175 s on both.
JOBS = int(os.environ.get("PIECEWORKS_BUILD_JOBS") or os.cpu_count() or 1)


def compile_args():
    if os.environ.get("PIECEWORKS_ASAN"):
        return ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"], ["-fsanitize=address"]
    return ["-O3"], []


def selected_kernels():
    """All kernels, or only those named in ``PIECEWORKS_ONLY`` (comma-separated), for quick rebuilds.

    Largest first: the kernels compile in parallel (see ``JOBS``), and the
    biggest, started last, would leave the other cores idle while it ends.
    """
    only = {name.strip() for name in os.environ.get("PIECEWORKS_ONLY", "").split(",") if name.strip()}
    chosen = [pyx for pyx in sorted(KERNELS.glob("*.pyx")) if not only or pyx.stem in only]
    return sorted(chosen, key=lambda pyx: -pyx.stat().st_size)


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


setup(ext_modules=cythonize(extensions(), compiler_directives=DIRECTIVES, quiet=True, nthreads=JOBS),
      options={"build_ext": {"parallel": JOBS}})
