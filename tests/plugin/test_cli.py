"""``python -m pytest_violin export|list|sheet``, and its output into a closed pipe."""

import json
import os
import subprocess
import sys

import pytest

from pytest_violin.__main__ import EXIT_PIPE, main
from pytest_violin.suite import load_suite


def test_list_prints_counts_per_task_and_variation(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "7745 samples" in out
    rows = {tuple(line.split()[:2]): int(line.split()[2]) for line in out.splitlines()[2:]}
    assert rows[("color", "v1")] == 435 and rows[("color", "v2")] == 1160
    assert rows[("shape", "(all)")] == 750 and rows[("mask", "random")] == 1800


def test_list_other_suite_and_tasks(capsys):
    assert main(["list", "--suite", "violin-extra", "--tasks", "count"]) == 0
    out = capsys.readouterr().out
    assert "20 samples" in out and "dot4" in out and "ratio" not in out


@pytest.mark.parametrize("argv", [
    ["list", "--suite", "nope"], ["list", "--limit", "0"], ["list", "--limit", "x"],
    ["list", "--tasks", "poetry"], ["export"], ["frobnicate"],
    ["export", "out", "--compression", "12"], ["list", "--photos-dir", "/no/such/dir"],
])
def test_bad_options_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 4  # pytest's usage error, the CLI's documented status
    err = capsys.readouterr().err
    assert "usage:" in err
    if argv[0] in ("list", "export"):  # the sub-command's usage, also for errors found after parsing
        assert err.startswith(f"usage: python -m pytest_violin {argv[0]} ")


def test_input_that_does_not_load_is_a_usage_error_and_a_failed_write_is_not(tmp_path, capsys):
    bad = tmp_path / "manifest.jsonl"
    bad.write_text("{not json\n")
    assert main(["list", "--suite", str(bad)]) == 4
    assert str(bad) in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    # the output cannot be written (its folder is a file): the command failed, exit 1
    assert main(["sheet", str(blocker / "sheet.png"), "--limit", "2"]) == 1
    assert capsys.readouterr().err.startswith("error: ")


def test_export_writes_manifest_pngs_and_progress(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", str(out), "--suite", "violin", "--limit", "6", "--seed", "4"]) == 0
    captured = capsys.readouterr()
    assert "6/6" in captured.err and "[" in captured.err
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert len(lines) == 6
    for line in lines:
        rec = json.loads(line)
        assert (out / rec["expected"]).is_file()
    assert [s.id for s in load_suite(out)] == [s.id for s in load_suite("violin", limit=6,
                                                                          seed=4)]


def test_module_entry_point_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest_violin", "list", "--suite",
                           "violin-probes"], capture_output=True, text=True)
    assert proc.returncode == 0 and "235 samples" in proc.stdout
    sheet = tmp_path / "sheet.png"
    proc = subprocess.run([sys.executable, "-m", "pytest_violin", "sheet", str(sheet), "--suite",
                           "violin-extra", "--limit", "6"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    from pytest_violin.imaging import as_rgb8

    assert as_rgb8(sheet).shape[0] > 100


def _into_a_closed_pipe(*args):
    """``python -m pytest_violin ARGS`` writing into a pipe whose reader is gone before its first byte (what
    ``| head`` does once it has its lines): every write meets a broken pipe."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "pytest_violin", *args], stdout=write, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, timeout=300)
    finally:
        os.close(write)


@pytest.fixture(scope="module")
def gated_run(tmp_path_factory):
    """A saved oracle run and its own baseline: a gate that decides, and passes."""
    from pytest_violin import evaluate

    folder = tmp_path_factory.mktemp("gated")
    evaluate("oracle", tasks="color", limit=40, progress=False, cache=False).save(folder)
    return folder


def test_the_gate_into_a_closed_pipe_exits_141_without_a_traceback(gated_run):
    args = ("gate", str(gated_run), "--baseline", str(gated_run / "baseline.json"))
    whole = subprocess.run([sys.executable, "-m", "pytest_violin", *args], capture_output=True, text=True,
                           timeout=300)
    assert whole.returncode == 0 and whole.stdout, whole.stderr  # it has lines to write
    cut = _into_a_closed_pipe(*args)
    assert cut.returncode == EXIT_PIPE == 141
    assert cut.stderr == ""  # no traceback, no "Exception ignored", no error line


@pytest.mark.parametrize("args", [("list", "--suite", "violin"), ("trend", "{run}", "--format", "md")],
                         ids=["list", "trend"])
def test_every_command_into_a_closed_pipe_exits_141_quietly(args, gated_run):
    cut = _into_a_closed_pipe(*(a.format(run=gated_run) for a in args))
    assert (cut.returncode, cut.stderr) == (EXIT_PIPE, "")
