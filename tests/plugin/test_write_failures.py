"""A report or baseline that could not be written fails the session and leaves nothing stale.

Tests run as root, where a read-only folder still takes writes, so the
failures are made in ways root cannot get around: a report folder or a
baseline below a regular file, and a full disk (``ENOSPC``) raised at the
atomic-write layer of one writer. The session must exit non-zero, say what
was not written, and never leave the previous run's files looking like this
run's.
"""

from __future__ import annotations

import errno
import json
import os

import pytest


LIMIT = "--violin-limit=3"


def _full_disk_for(monkeypatch, name: str):
    """A full disk for every atomic write of a file called ``name``.

    Raised where :func:`pytest_violin._fs.atomic_write` moves its finished
    temporary file into place (``os.replace``), whichever module called it:
    pytester's in-process runs may import the report modules afresh, so a
    patch of one module's ``atomic_write`` could miss the one the run uses.
    """
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith(name) and ".tmp" in str(src):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


def _run(pytester, *args):
    return pytester.runpytest("--violin-model=oracle", LIMIT, *args, "-p", "no:cacheprovider")


def test_a_report_folder_below_a_regular_file_fails_the_session(pytester):
    (pytester.path / "afile").write_text("not a folder")
    result = _run(pytester, "--violin-report=afile/out")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "reports NOT written" in out and "afile" in out and "session fails" in out


def test_a_full_disk_for_one_report_removes_the_stale_ones_and_fails(pytester, monkeypatch):
    out = pytester.path / "out"
    out.mkdir()
    for name in ("results.json", "summary.md", "report.html"):
        (out / name).write_text("from the previous run")
    _full_disk_for(monkeypatch, "report.html")
    result = _run(pytester, "--violin-report=out")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    assert "reports NOT written" in text and "No space left on device" in text
    assert "not written: report.html" in text
    # what this run wrote is this run's; the stale page is gone, not left looking current
    doc = json.loads((out / "results.json").read_text())
    assert doc["metadata"]["samples"] == 3
    assert "previous run" not in (out / "summary.md").read_text()
    assert not (out / "report.html").exists()


def test_a_full_disk_for_results_json_writes_nothing_stale(pytester, monkeypatch):
    out = pytester.path / "out"
    out.mkdir()
    for name in ("results.json", "summary.md", "report.html"):
        (out / name).write_text("from the previous run")
    _full_disk_for(monkeypatch, "results.json")
    result = _run(pytester, "--violin-report=out")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "reports NOT written" in result.stdout.str()
    leftovers = [p.name for p in out.iterdir()
                 if p.is_file() and p.read_text(errors="replace") == "from the previous run"]
    assert leftovers == []  # the previous run's summary.md and report.html are removed too
    assert "removed (not this run's)" in result.stdout.str()


def test_a_baseline_below_a_regular_file_fails_the_session(pytester):
    (pytester.path / "afile").write_text("not a folder")
    result = _run(pytester, "--violin-save-baseline=afile/base.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "baseline NOT written" in out and "afile" in out


def test_a_full_disk_for_the_baseline_says_the_old_one_is_not_this_runs(pytester, monkeypatch):
    old = pytester.path / "base.json"
    old.write_text("{}")
    _full_disk_for(monkeypatch, "base.json")
    result = _run(pytester, "--violin-save-baseline=base.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "baseline NOT written" in out and "No space left on device" in out
    assert "EARLIER run's baseline" in out
    assert old.read_text() == "{}"  # never half-written: the rename did not happen


def test_reports_and_baseline_written_keep_the_exit_status(pytester):
    result = _run(pytester, "--violin-report=out", "--violin-save-baseline=base.json")
    assert result.ret == pytest.ExitCode.OK
    assert (pytester.path / "out" / "report.html").is_file()
    assert (pytester.path / "base.json").is_file()
