"""The disk cache of slow-to-build tables (pieceworks._disk_cache): where it is, what it keeps, and
that a cache it cannot use costs only the build."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import types

import pytest

from pieceworks import _disk_cache as cache


def test_the_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path / "mine"))
    assert cache.cache_folder() == str(tmp_path / "mine")
    monkeypatch.setenv("PIECEWORKS_CACHE", "OFF")
    assert cache.cache_folder() is None
    monkeypatch.delenv("PIECEWORKS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_folder() == str(tmp_path / "xdg" / "pieceworks")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_folder() == str(tmp_path / "home" / ".cache" / "pieceworks")


def test_what_is_written_is_read_back_only_under_its_magic(tmp_path, monkeypatch):
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path / "new folder"))
    assert cache.read_cached("t.bin", b"MAG1") is None
    cache.write_cached("t.bin", b"MAG1", b"\x00table")
    assert cache.read_cached("t.bin", b"MAG1") == b"\x00table"
    assert cache.read_cached("t.bin", b"MAG2") is None
    assert os.listdir(tmp_path / "new folder") == ["t.bin"]       # (no temporary file left behind)


def test_a_mapped_file_gives_the_bytes_read_gives(tmp_path, monkeypatch):
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path))
    assert cache.map_cached("t.bin", b"MAG1") is None                 # (no file)
    (tmp_path / "empty.bin").write_bytes(b"")
    assert cache.map_cached("empty.bin", b"MAG1") is None             # (an empty file cannot be mapped)
    cache.write_cached("t.bin", b"MAG1", b"\x00table")
    view = cache.map_cached("t.bin", b"MAG1")
    assert view.readonly and bytes(view) == cache.read_cached("t.bin", b"MAG1") == b"\x00table"
    assert cache.map_cached("t.bin", b"MAG2") is None
    cache.write_cached("t.bin", b"MAG1", b"new")                      # (replaced while mapped: the view keeps the old)
    assert bytes(view) == b"\x00table" and bytes(cache.map_cached("t.bin", b"MAG1")) == b"new"


def test_off_and_unwritable_caches_are_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PIECEWORKS_CACHE", "off")
    cache.write_cached("t.bin", b"M", b"x")
    assert cache.read_cached("t.bin", b"M") is None and not list(tmp_path.iterdir())
    (tmp_path / "a file").write_bytes(b"")
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path / "a file" / "cache"))
    cache.write_cached("t.bin", b"M", b"x")                        # (a file where the folder would be)
    assert cache.read_cached("t.bin", b"M") is None


def test_only_the_files_used_last_are_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path))
    (tmp_path / "other.bin").write_bytes(b"not one of them")
    for n in range(4):
        cache.write_cached(f"map-{n}.bin", b"M", b"x")
        os.utime(tmp_path / f"map-{n}.bin", ns=(n * 10**9, n * 10**9))
    assert cache.read_cached("map-0.bin", b"M") == b"x"           # used now: the newest
    cache.write_cached("map-4.bin", b"M", b"x", keep=("map-", 3))
    assert sorted(os.listdir(tmp_path)) == ["map-0.bin", "map-3.bin", "map-4.bin", "other.bin"]


def test_the_source_stamp_changes_with_a_module_file(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text("x = 1\n")
    module = types.SimpleNamespace(__file__=str(source), __name__="mod")
    before = cache.source_stamp(module)
    assert cache.source_stamp(module) == before
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert cache.source_stamp(module) != before
    source.write_text("x = 22\n")
    assert cache.source_stamp(module) not in (before, cache.source_stamp(types.SimpleNamespace(
        __file__=str(source), __name__="other")))


def test_a_table_is_built_once_then_read_back_while_it_passes_its_check(tmp_path, monkeypatch):
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path))
    builds = []

    def build():
        builds.append(1)
        return b"table %d" % len(builds)

    def valid(blob):
        return blob.startswith(b"table")

    assert cache.cached_bytes("t", build, "s1", valid) == b"table 1"
    assert cache.cached_bytes("t", build, "s1", valid) == b"table 1" and len(builds) == 1
    assert cache.cached_bytes("t", build, "s2", valid) == b"table 2"      # another stamp: built again
    (tmp_path / "t-s1.bin").write_bytes(cache._TABLE_MAGIC + b"damaged")
    assert cache.cached_bytes("t", build, "s1", valid) == b"table 3"
    assert cache.cached_bytes("t", build, "s1", valid) == b"table 3" and len(builds) == 3


@pytest.mark.parametrize("name", ["char_flags", "grapheme_table"])
def test_unicode_tables_read_back_are_the_ones_built(tmp_path, monkeypatch, name):
    from pieceworks import _unicode_tables

    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path))
    table = getattr(_unicode_tables, name).__wrapped__          # (without the per-process functools.cache)
    built = getattr(_unicode_tables, f"_built_{name}")()
    assert table() == built                                     # built, and written
    [path] = tmp_path.iterdir()
    monkeypatch.setattr(_unicode_tables, f"_built_{name}", lambda: pytest.fail("built again"))
    assert table() == built                                     # read back
    bad = bytearray(path.read_bytes())
    bad[-1] = 0x0F                                              # (no flag combination, no grapheme class)
    path.write_bytes(bytes(bad[:-1]))                           # one byte short
    monkeypatch.undo()
    monkeypatch.setenv("PIECEWORKS_CACHE", str(tmp_path))
    assert table() == built
    if name == "grapheme_table":
        path.write_bytes(bytes(bad))                            # the right size, a class past the list
        assert table() == built and path.read_bytes()[-1] != 0x0F


def test_the_byte_level_class_table_from_the_cache_is_the_one_built(tmp_path):
    from pieceworks._kernels import bytebpe

    # The table is kept per process, so two new processes: one builds and writes it, one reads it.
    show = "import hashlib; from pieceworks._kernels import bytebpe; print(hashlib.sha256(bytebpe.build_classes()).hexdigest())"
    env = {**os.environ, "PIECEWORKS_CACHE": str(tmp_path)}
    digests = [subprocess.run([sys.executable, "-c", show], env=env, capture_output=True, text=True, check=True).stdout
               for _ in range(2)]
    assert [p.name.startswith("byte-bpe-classes-") for p in tmp_path.iterdir()] == [True]
    assert digests == [hashlib.sha256(bytebpe._built_classes()).hexdigest() + "\n"] * 2


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_form_tables_from_their_packed_bytes_are_the_ones_made_from_dicts(form):
    """The cached form (uint32 lists, read in C) against the tables made from Python dicts, on
    every code point with a decomposition or a class, alone and in a row."""
    from pieceworks import _unicode_forms as forms
    from pieceworks._kernels.aligned_nfc import FormTables

    decomposed = forms._DECOMPOSED_FORM[form]
    decompositions = {}
    for cp in sorted({*forms._decomposing(), *range(forms._S_BASE, forms._S_BASE + forms._S_COUNT)}):
        full = forms._full_decomposition(chr(cp), decomposed)
        if full != chr(cp):
            decompositions[cp] = full
    forms.compose_pair("a", "b")                                 # (builds the composition table)
    from_dicts = FormTables(forms._classes(), decompositions, forms._COMPOSITIONS, forms._COMPOSING[form])
    from_dicts.set_kinds(forms._built_segment_kinds(form))
    packed = forms._tables_from_packed(forms._packed_form_facts(form), form)
    chars = [chr(cp) for cp in sorted({*decompositions, *forms._decomposing(), *(
        cp for cp, klass in enumerate(forms._classes()) if klass)})]
    for text in ("".join(chars), "\n".join(chars), "e\u0301\u0323a\u0308\u1100\u1161\u11a8"):
        assert packed.aligned(text) == from_dicts.aligned(text)
    if forms._COMPOSING[form]:
        from_dicts.set_quick(forms.quick_table(form))
        assert [packed.quick(ch) for ch in chars] == [from_dicts.quick(ch) for ch in chars]


@pytest.mark.parametrize("words, pairs, message", [
    ([0xE9, 2, 0x65], [], "does not fit"),                      # the length runs past the end
    ([0xE9], [], "does not fit"),
    ([0x400, 1, 0x65], [], "does not fit"),                     # past the class table
    ([0xE9, 1, 0x110000], [], "no code point"),
    ([], [0x65, 0x301], "triples"),
    ([], [0x65, 0x301, 0x110000], "not of code points"),
])
def test_packed_form_tables_that_do_not_fit_are_refused(words, pairs, message):
    from array import array

    from pieceworks import _unicode_forms as forms
    from pieceworks._kernels.aligned_nfc import FormTables

    with pytest.raises(ValueError, match=message):
        FormTables.from_words(bytes(0x400), array("I", words).tobytes(), array("I", pairs).tobytes(), True)
    good = forms._packed_form_facts("NFD")
    assert forms._tables_from_packed(good[:-1], "NFD") is None
    first_word = 20 + array("I", good[:4])[0]                   # (after the sizes and the classes)
    assert forms._tables_from_packed(good[:first_word] + b"\xff" * 4 + good[first_word + 4:], "NFD") is None
