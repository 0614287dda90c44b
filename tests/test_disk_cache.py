"""The disk cache of slow-to-build tables (pieceworks._disk_cache): where it is, what it keeps, and
that a cache it cannot use costs only the build."""

from __future__ import annotations

import os
import types

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
