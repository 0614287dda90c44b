#!/usr/bin/env bash
# Build the Cython kernels with AddressSanitizer and run the test suite under it.
#
# Works on a copy of the tree (in a temp folder), so the in-place .so files
# of the working tree are left alone. CPython itself is not instrumented: the
# ASan runtime is preloaded (LD_PRELOAD) and checks the kernels' memory
# accesses; leak checking is off (CPython keeps objects alive at exit).
#
# Usage: bash fuzz/asan_tests.sh [pytest args]      e.g.  bash fuzz/asan_tests.sh tests/test_bpe_model.py -x
# Environment: KEEP=1 keeps the copy; PYTHON picks the interpreter.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
copy="$(mktemp -d "${TMPDIR:-/tmp}/pieceworks-asan.XXXXXX")"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$copy"' EXIT

libasan="$(${CC:-gcc} -print-file-name=libasan.so)"
libstdcxx="$(${CC:-gcc} -print-file-name=libstdc++.so)"
[ -f "$libasan" ] || { echo "asan: libasan.so not found (apt-get install gcc or libasan8)" >&2; exit 2; }
# libstdc++ is preloaded too: python does not link it, and without it ASan cannot find the real
# __cxa_throw, so the first C++ exception in any extension (ours, or sentencepiece's) aborts.

echo "== copying the tree to $copy"
(cd "$repo" && tar --exclude='./build' --exclude='./.git' --exclude='*.so' --exclude='__pycache__' \
    --exclude='./.hypothesis' --exclude='./.pytest_cache' -cf - .) | (cd "$copy" && tar xf -)

echo "== building the kernels with -fsanitize=address (PIECEWORKS_ASAN=1)"
(cd "$copy" && PIECEWORKS_ASAN=1 "$python" setup.py build_ext --inplace -q)

echo "== pytest under AddressSanitizer (LD_PRELOAD=$libasan $libstdcxx)"
shared="${PIECEWORKS_SHARED_DATA:-$repo/../shared/data}"
cd "$copy"
ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" LD_PRELOAD="$libasan $libstdcxx" PYTHONPATH="$copy/src" \
    PIECEWORKS_SHARED_DATA="$shared" "$python" -m pytest -q -p no:cacheprovider \
    --ignore=tests/test_no_slow_inputs.py "$@"
