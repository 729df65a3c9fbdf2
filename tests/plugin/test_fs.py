"""Artifacts are written atomically with the permissions the user's umask gives."""

from __future__ import annotations

import os
import stat

import pytest

from pytest_violin import _fs
from pytest_violin._fs import atomic_write

CACHEABLE_MODEL = '''
class Model:
    """The exact answer, cacheable so the run writes cache entries too."""

    cacheable = True

    def generate(self, request):
        return request.sample.expected()
'''


@pytest.fixture
def umask():
    """Set the process umask for one test (restored afterwards)."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664),
                                            (0o077, 0o600)])
def test_new_file_gets_the_umask_permissions(tmp_path, umask, mask, expected):
    umask(mask)
    atomic_write(tmp_path / "a.json", "{}\n")
    atomic_write(tmp_path / "sub" / "b.png", b"\x89PNG")
    assert _mode(tmp_path / "a.json") == expected
    assert _mode(tmp_path / "sub" / "b.png") == expected
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.json", "b.png", "sub"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_replacing_a_file_keeps_it_atomic_and_umask_mode(tmp_path, umask, monkeypatch):
    umask(0o022)
    target = tmp_path / "baseline.json"
    atomic_write(target, "old\n", fsync=True)
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        # the content is complete before it takes the destination's name
        seen.append(((tmp_path / os.path.basename(src)).read_text(), _mode(src),
                     target.read_text()))
        return real_replace(src, dst)

    monkeypatch.setattr(_fs.os, "replace", spy)
    atomic_write(target, "new\n", fsync=True)
    assert seen == [("new\n", 0o644, "old\n")]
    assert target.read_text() == "new\n" and _mode(target) == 0o644


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    atomic_write(target, "old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(_fs.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_temporary_name_collisions_are_retried_then_refused(tmp_path, monkeypatch):
    names = iter([b"\x00" * 8, b"\x00" * 8, b"\x01" * 8])
    monkeypatch.setattr(_fs.os, "urandom", lambda n: next(names))
    (tmp_path / f".x.bin.{'00' * 8}.tmp").write_bytes(b"someone else's")
    atomic_write(tmp_path / "x.bin", b"mine")  # first two names taken, third is free
    assert (tmp_path / "x.bin").read_bytes() == b"mine"
    assert (tmp_path / f".x.bin.{'00' * 8}.tmp").read_bytes() == b"someone else's"
    monkeypatch.setattr(_fs.os, "urandom", lambda n: b"\x00" * n)
    with pytest.raises(FileExistsError, match="x.bin"):
        atomic_write(tmp_path / "x.bin", b"again")


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_every_run_artifact_gets_the_umask_permissions(pytester, umask):
    """Baseline, reports, saved images and cache entries of a real run: 0644 under umask 022."""
    umask(0o022)
    pytester.makepyfile(cachemodel=CACHEABLE_MODEL)
    result = pytester.runpytest(
        "-q", "-p", "no:cacheprovider", "--violin-model=python:cachemodel:Model",
        "--violin-suite=violin-extra", "--violin-limit=3", "--violin-save-baseline=base/b.json",
        "--violin-report=rep", "--violin-save-outputs=out", "--violin-cache-dir=cache")
    assert result.ret == 0, result.stdout.str()[-2000:]
    written = {name: [p for p in (pytester.path / name).rglob("*") if p.is_file()]
               for name in ("base", "rep", "out", "cache")}
    assert all(written.values()), written  # every kind of artifact was written
    modes = {str(p.relative_to(pytester.path)): oct(_mode(p))
             for files in written.values() for p in files}
    assert set(modes.values()) == {oct(0o644)}, modes
