"""Kernel entry points refuse None where they read a str's or bytes' buffer, or a kernel object's fields.

Cython lets None through an argument typed ``str``, ``bytes`` or a cdef
class unless it says ``not None``; the kernel then read None's memory as
chars (a wrong answer) or as a table (bert_fast.encode crashed the process).
Each call runs in a child process, so a crash fails the test instead of
ending the run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Each line: a call with None where the kernel needs a real object.
CALLS = {
    "bert_fast.encode": "bert_fast.encode(None, None, None, 10, 0, None)",
    "bert_fast.pieces": "bert_fast.pieces(None, None)",
    "bytebpe.piece_spans": "bytebpe.piece_spans(0, None)",
    "ByteBPE.encode": "bpe.encode(None, True)",
    "ByteBPE.encode_bytes_piece": "bpe.encode_bytes_piece(None)",
    "ByteBPE.token_id": "bpe.token_id(None)",
    "ByteBPE.has_surrogates": "bpe.has_surrogates(None)",
    "scan.class_runs": "scan.class_runs(None, bytes(256))",
    "scan.char_matches": "scan.char_matches(None, 1)",
    "scan.gpt2_spans": "scan.gpt2_spans(None)",
    "scan.script_spans": "scan.script_spans(None)",
    "count.piece_hash": "count.piece_hash(None)",
}

PRELUDE = """
from pieceworks._kernels import bert_fast, bytebpe, count, scan
bpe = bytebpe.ByteBPE([bytes([i]) for i in range(256)], None, pattern=bytebpe.Pattern.PAT_CL100K, whole_piece=True)
"""


@pytest.mark.parametrize("name", sorted(CALLS))
def test_none_is_a_type_error(name):
    script = PRELUDE + textwrap.dedent(f"""
        try:
            {CALLS[name]}
        except TypeError as error:
            print("TypeError:", error)
        else:
            print("accepted None")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{name}(None) ended the process ({run.returncode}): {run.stderr[-500:]}"
    assert run.stdout.startswith("TypeError:"), f"{name}: {run.stdout or run.stderr}"
