"""SentencePiece's normalization rules, compiled into the ``precompiled_charsmap`` a .model stores.

A trained model carries its normalizer: a darts-clone double-array trie
from source byte strings to offsets of replacement strings, behind a
4-byte little-endian trie size (SentencePiece's ``CompileCharsMap``). This
module makes that blob for the built-in rule sets, from Python's
``unicodedata`` (so from its Unicode version, not ICU's):

* ``nfkc`` — every char whose NFKC differs, and every multi-char NFKD
  sequence that composes (``e`` + U+0301 → ``é``);
* ``nmt_nfkc`` (the default) — nfkc, plus tab/newlines/odd and zero-width
  spaces/``▁``/U+FFFD → space, C0/C1 controls deleted, and FULLWIDTH TILDE
  left alone (SentencePiece's ``BuildNmtNFKCMap`` and its shipped rules);
* ``nfkc_cf``, ``nmt_nfkc_cf`` — the same, case-folded char by char with
  simple folding, as sentencepiece's are (``ß`` stays, ``ᾊ`` → ``ᾂ``);
* ``identity`` — no rules;

or from a ``normalization_rule_tsv`` file (``U+0041 U+0301<TAB>U+00C1``).

>>> from pieceworks._kernels.unigram import Charsmap
>>> Charsmap(compile_charsmap({"ab": "x", "a": "", "c": "yy"})).lookup(b"abc")
(2, b'x')
"""

from __future__ import annotations

import struct
import sys
import unicodedata
from functools import lru_cache

from .._disk_cache import cached_bytes, source_stamp
from ..errors import ConfigError, FileFormatError

__all__ = ["compile_charsmap", "decompile_charsmap", "builtin_rules", "precompiled_charsmap", "fill_normalizer_spec",
           "RULE_NAMES"]

RULE_NAMES = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")

# As sentencepiece 0.2.3 builds nmt_nfkc: ARABIC LETTER MARK becomes a space, and ZERO WIDTH JOINER
# is kept (emoji sequences need it). Older builds, whose charsmaps T5's and BARThez's .model files
# carry, did the opposite; a loaded model always uses the charsmap it carries.
_NMT_SPACES = (0x9, 0xA, 0xC, 0xD, 0x61C, 0x1680, 0x200B, 0x200C, 0x200E, 0x200F, 0x2028, 0x2029, 0x2581,
               0xFEFF, 0xFFFD)
# Control chars that nmt_nfkc deletes (as SentencePiece's shipped nmt_nfkc rules do).
_NMT_DELETED = tuple(range(0x1, 0x9)) + (0xB,) + tuple(range(0xE, 0x20)) + (0x7F, 0x8F, 0x9F)
_FULLWIDTH_TILDE = "\uff5e"


def _is_unicode_char(cp: int) -> bool:
    # ICU's U_IS_UNICODE_CHAR: no surrogates, no noncharacters.
    return not (0xD800 <= cp <= 0xDFFF or 0xFDD0 <= cp <= 0xFDEF or (cp & 0xFFFE) == 0xFFFE)


@lru_cache(maxsize=None)
def builtin_rules(name: str) -> dict[str, str]:
    """The rule set ``name`` as ``{source: replacement}``.

    >>> rules = builtin_rules("nmt_nfkc")
    >>> rules["\\u00a0"], rules["\\t"], rules["e\\u0301"], "\\uff5e" in rules
    (' ', ' ', 'é', False)
    """
    if name not in RULE_NAMES:
        raise ConfigError(f"unknown normalization rule {name!r}",
                          fix=f"use one of {', '.join(RULE_NAMES)}, or --normalization_rule_tsv=FILE")
    if name == "identity":
        return {}
    fold = name.endswith("_cf")

    def nfkc(text: str) -> str:
        out = unicodedata.normalize("NFKC", text)
        return unicodedata.normalize("NFKC", _simple_fold(out)) if fold else out

    rules: dict[str, str] = {}
    for cp in range(1, 0x110000):
        if not _is_unicode_char(cp):
            continue
        ch = chr(cp)
        target = nfkc(ch)
        if target != ch:
            rules[ch] = target
        decomposed = unicodedata.normalize("NFKD", ch)
        if len(decomposed) > 1:
            composed = nfkc(decomposed)
            if composed != decomposed:
                rules[decomposed] = composed
    if name.startswith("nmt_"):
        for cp in _NMT_SPACES:
            rules[chr(cp)] = " "
        for cp in _NMT_DELETED:
            rules[chr(cp)] = ""
        rules.pop(_FULLWIDTH_TILDE, None)
    return rules


def _simple_fold(text: str) -> str:
    """Unicode simple case folding, char by char (Python's ``casefold`` is the full one: ``ß`` → ``ss``).

    A char's full folding when it is one char; else its lowercase when that is one char (the simple
    folding then, as for ``ᾊ``); else the char itself (``ß``, ``İ`` have no simple folding).

    >>> _simple_fold("Straße ᾊ İ ſ")
    'straße ᾂ İ s'
    """
    out = []
    for char in text:
        folded = char.casefold()
        if len(folded) != 1:
            lower = char.lower()
            folded = lower if len(lower) == 1 else char
        out.append(folded)
    return "".join(out)


def load_rule_tsv(path: str) -> dict[str, str]:
    """Rules from a TSV file: ``U+XXXX [U+YYYY...]<TAB>U+ZZZZ [...]`` per line (no target: delete)."""
    rules: dict[str, str] = {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as exc:
        raise FileFormatError(path, f"cannot read the rule file: {exc.strerror}", fix="check the path") from exc
    for n, line in enumerate(lines, 1):
        fields = line.split("\t")
        try:
            src = "".join(chr(int(x.replace("U+", ""), 16)) for x in fields[0].split())
            trg = "".join(chr(int(x.replace("U+", ""), 16)) for x in fields[1].split()) if len(fields) > 1 else ""
        except ValueError as exc:
            raise FileFormatError(path, f"bad code point: {exc}", line=n, fix="write code points as U+XXXX") from exc
        if not src:
            raise FileFormatError(path, "empty source", line=n, fix="each line needs a source sequence")
        rules[src] = trg
    return rules


@lru_cache(maxsize=8)
def precompiled_charsmap(name: str) -> bytes:
    """The ``precompiled_charsmap`` blob of a built-in rule set (empty for identity).

    Building one takes a few seconds, so the blob is cached on disk (see
    :mod:`pieceworks._disk_cache`), keyed by the rule set and a stamp of
    this module and the Unicode version.
    """
    if name == "identity":
        return b""
    # (Named by this module's stamp: a name that changed only by hand once kept a charsmap built
    # by older rules, and a test passed against it.)
    return cached_bytes(f"charsmap-{name}", lambda: _built_charsmap(name), source_stamp(sys.modules[__name__]))


def _built_charsmap(name: str) -> bytes:
    rules = builtin_rules(name)
    return compile_charsmap(rules) if rules else b""


def fill_normalizer_spec(spec) -> None:
    """Give a NormalizerSpec its charsmap, as SentencePiece's trainer does before training."""
    if spec.precompiled_charsmap:
        return
    if spec.normalization_rule_tsv:
        spec.precompiled_charsmap = compile_charsmap(load_rule_tsv(spec.normalization_rule_tsv))
        spec.name = "user_defined"
        return
    spec.precompiled_charsmap = precompiled_charsmap(spec.name or "nmt_nfkc")


# -- darts-clone ----------------------------------------------------------------------
def compile_charsmap(rules: dict[str, str]) -> bytes:
    """``{source: replacement}`` → SentencePiece's blob: trie size, darts-clone units, replacement strings."""
    targets = sorted(set(rules.values()), key=lambda t: [ord(c) for c in t])
    strings = bytearray()
    where: dict[str, int] = {}
    for t in targets:
        where[t] = len(strings)
        strings += t.encode("utf-8") + b"\0"
    keys = sorted((k.encode("utf-8"), where[v]) for k, v in rules.items() if k)
    units = build_double_array(keys)
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(strings)


def decompile_charsmap(blob: bytes) -> list[tuple[str, str]]:
    """The rules of a ``precompiled_charsmap`` as ``(source, replacement)`` pairs, sorted by source bytes
    (SentencePiece's ``Decompile``): the trie walked from the root, each node's children by label.

    >>> decompile_charsmap(compile_charsmap({"ab": "x", "a": "", "c": "yy"}))
    [('a', ''), ('ab', 'x'), ('c', 'yy')]
    """
    if len(blob) < 4:
        raise ConfigError("the precompiled charsmap is empty: there are no rules to list",
                          fix="use a normalizer with rules (not identity)")
    trie_size = struct.unpack_from("<I", blob)[0]
    if trie_size % 4 or 4 + trie_size > len(blob):
        raise ConfigError(f"the precompiled charsmap's trie ({trie_size} bytes) does not fit its {len(blob)} bytes",
                          fix="load the .model file again (it is truncated or corrupted)")
    units = struct.unpack_from(f"<{trie_size // 4}I", blob, 4)
    strings = blob[4 + trie_size:]
    # Each unit labelled c at p is a child of the node whose children's base is p ^ c: one pass
    # finds every node's children (probing 255 labels per node took seconds).
    children: dict[int, list[tuple[int, int]]] = {}
    for pos, unit in enumerate(units):
        label = unit & _LABEL_MASK
        if pos and 0 < label < 256:
            children.setdefault(pos ^ label, []).append((label, pos))
    out: list[tuple[str, str]] = []
    stack = [(0, b"")] if units else []
    # darts-clone shares equal subtrees (a node may have several parents), so a corrupted blob can
    # hold a cycle or paths without end: the walk stops at keys longer than any rule's and at far
    # more visits than a real charsmap needs (about 6 per unit).
    visits_left = _VISITS_PER_UNIT * (len(units) + 16)
    while stack:
        pos, key = stack.pop()
        visits_left -= 1
        if len(key) > _LONGEST_RULE or visits_left < 0:
            raise ConfigError("the precompiled charsmap's trie is corrupted (its walk does not end)",
                              fix="load the .model file again (it is truncated or corrupted)")
        unit = units[pos]
        base = pos ^ _unit_offset(unit)
        if key and unit >> 8 & 1 and base < len(units):
            start = units[base] & 0x7FFFFFFF
            out.append((key.decode("utf-8", "replace"),
                        strings[start:strings.find(b"\0", start)].decode("utf-8", "replace")))
        # Pushed last label first, so they are walked in label order.
        for label, child in sorted(children.get(base, ()), reverse=True):
            stack.append((child, key + bytes([label])))
    return out


_LONGEST_RULE = 1024     # bytes of a rule's source; real ones are under 20
_VISITS_PER_UNIT = 64

# darts-clone's unit: bit 31 and the low byte are the label (bit 31 set: a value unit), bit 8
# says a key ends here, and bits 10.. the offset of the children's base (bit 9: shifted by 8).
_LABEL_MASK = (1 << 31) | 0xFF


def _unit_offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def build_double_array(keys: list[tuple[bytes, int]]) -> list[int]:
    """darts-clone units for sorted ``(key, value)`` pairs (keys without NUL bytes).

    A node's unit holds its label and the offset to its children's base
    (child with label c at ``base ^ c``; its value, if it ends a key, at
    ``base ^ 0``). Bases are unique, since a unit stores no parent check.
    """
    root: dict = {}
    for key, value in keys:
        node = root
        for b in key:
            node = node.setdefault(b, {})
        node[0] = value  # label 0: the value leaf
    units = [0] * 1024
    used = bytearray(1024)
    used[0] = 1
    used_bases: set[int] = set()
    free_from = 1
    queue = [(0, root)]
    for pos, node in queue:
        labels = sorted(node)
        base = _find_base(labels, used, used_bases, free_from)
        used_bases.add(base)
        need = (base | 0xFF) + 1
        if need > len(units):
            grow = max(need, 2 * len(units)) - len(units)
            units.extend([0] * grow)
            used.extend(bytes(grow))
        offset = pos ^ base
        if offset >= 1 << 21:
            raise ConfigError("the normalization rules are too many for one charsmap",
                              fix="use fewer rules")
        units[pos] = (units[pos] & ((1 << 31) | (1 << 8) | 0xFF)) | (offset << 10)
        for label in labels:
            slot = base ^ label
            used[slot] = 1
            if label == 0:
                units[pos] |= 1 << 8
                units[slot] = node[0] | (1 << 31)
            else:
                units[slot] = label
                queue.append((slot, node[label]))
        while free_from < len(used) and used[free_from]:
            free_from += 1
    # SentencePiece reads the trie in whole blocks of 256 units.
    last = max(i for i, u in enumerate(used) if u)
    return units[:(last // 256 + 1) * 256]


def _find_base(labels: list[int], used: bytearray, used_bases: set[int], free: int) -> int:
    """The first base whose slots for ``labels`` are free, trying each free slot for the first label."""
    first = labels[0]
    while True:
        free = used.find(0, free)
        if free < 0:
            free = len(used)
        base = free ^ first
        if base and base not in used_bases and \
                all((base ^ c) >= len(used) or not used[base ^ c] for c in labels):
            return base
        free += 1
