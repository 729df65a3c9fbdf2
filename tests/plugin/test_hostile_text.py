"""Text from outside (a results.json, a manifest) reaches terminals, Markdown and CSV printable.

A hostile run file or manifest carries ESC / CSI sequences, BEL, NUL and C1
controls in its labels, tasks, variations and metric names, and spreadsheet
formulas (``=HYPERLINK(...)``, ``+``, ``-``, ``@``) in names that become CSV
header cells. Every output of ``python -m pytest_violin compare`` and of
``--violin-compare`` / ``--violin-report`` must show them as text: no raw
control character (tab and newline aside) and no CSV cell that starts a
formula.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from pytest_violin.__main__ import main
from pytest_violin.compare.formats import render
from pytest_violin.compare.runs import load_run
from pytest_violin.compare.table import build
from pytest_violin.report.markdown import render_markdown

#: Clear screen, set the window title (OSC ... BEL), NUL, a C1 CSI, DEL, a bidi override.
HOSTILE = "\x1b[2J\x1b]0;owned\x07\x00\x9b31m\x7f\u202e"
#: What must never reach an output: C0 controls but tab and newline, DEL, C1.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")
#: Metric names that are formulas in a spreadsheet (CSV header cells).
FORMULAS = ('=HYPERLINK("http://evil.example/","click")', "+1+1", "-2+3", "@SUM(A1:A9)")


def _hostile_metrics(i: int) -> dict:
    metrics = {name: 0.05 + 0.01 * (k + i % 3) for k, name in enumerate(FORMULAS)}
    metrics["rgb" + HOSTILE] = 0.1
    metrics["mean"] = 0.08
    return metrics


def _results(path, ids, *, adapter="evil" + HOSTILE, task="color", variation="v1" + HOSTILE):
    """A results.json whose every piece of text is hostile."""
    doc = {"format": "pytest-violin-results", "schema_version": 1,
           "metadata": {"suite": "violin", "adapter": adapter},
           "samples": [{"sample_id": sid, "task": task, "variation": variation,
                        "prompt": "paint" + HOSTILE, "metrics": _hostile_metrics(i),
                        "outcome": "passed" if i % 2 else "failed",
                        "failed": [] if i % 2 else [FORMULAS[0]], "error": None}
                       for i, sid in enumerate(ids)]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _assert_printable(text: str, where: str) -> None:
    found = RAW_CONTROL.findall(text)
    assert not found, f"{where}: raw control characters {found!r} in the output"


def _assert_no_formula_cells(text: str) -> None:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows and len(rows) > 1
    header = rows[0]
    assert any(h.startswith("'=HYPERLINK") for h in header)  # the name is kept, as text
    for h in header:
        assert h[:1] not in ("=", "+", "-", "@"), f"header cell {h!r} is a formula"
    for row in rows[1:]:
        for i in (0, 2, 3):  # label, task, variation: text cells
            assert row[i][:1] not in ("=", "+", "-", "@"), f"data cell {row[i]!r} is a formula"


@pytest.fixture
def hostile_runs(tmp_path):
    ids = [f"color/v1/pink/t{i:02d}" for i in range(1, 9)]
    a = _results(tmp_path / "a" / "results.json", ids)
    b = _results(tmp_path / "b" / "results.json", ids, adapter="=cmd|' /C calc'!A0" + HOSTILE,
                 task="@task" + HOSTILE, variation="+v" + HOSTILE)
    return a, b


@pytest.mark.parametrize("fmt", ["terminal", "md", "csv", "latex"])
def test_compare_cli_prints_hostile_runs_as_text(hostile_runs, fmt, capsys):
    a, b = hostile_runs
    assert main(["compare", str(a.parent), str(b.parent), "--format", fmt, "--all-samples",
                 "--allow-mismatch"]) == 0
    out = capsys.readouterr().out
    _assert_printable(out, fmt)
    assert "\\x1b[2J" in out or "x1b" in out  # shown, not dropped
    if fmt == "csv":
        _assert_no_formula_cells(out)


def test_every_format_of_a_comparison_is_printable(hostile_runs):
    a, b = hostile_runs
    runs = [load_run(str(a)), load_run(str(b), label="label" + HOSTILE)]
    comparison = build(runs, all_samples=True, allow_mismatch=True, resamples=20)
    for fmt in ("terminal", "md", "csv", "latex"):
        _assert_printable(render(comparison, fmt), fmt)
    _assert_no_formula_cells(render(comparison, "csv"))


def test_mismatch_notes_and_errors_are_printable(tmp_path):
    ids = ["color/v1/pink/t01", "color/v1/pink/t02"]
    a = _results(tmp_path / "a" / "results.json", ids)
    b = _results(tmp_path / "b" / "results.json", ids)
    for path, value in ((a, "fp" + HOSTILE), (b, ["unhashable", HOSTILE])):
        doc = json.loads(path.read_text())
        doc["metadata"]["fingerprint"] = value
        path.write_text(json.dumps(doc))
    runs = [load_run(str(a)), load_run(str(b))]
    comparison = build(runs, allow_mismatch=True, resamples=20)
    assert comparison.mismatches
    for note in comparison.mismatches:
        _assert_printable(note, "mismatch note")
    _assert_printable(render(comparison, "terminal"), "terminal")
    with pytest.raises(Exception) as info:
        build([load_run(str(a)), load_run(str(b))], resamples=20)
    _assert_printable(str(info.value), "error message")


def test_summary_md_shows_a_hostile_variation_as_text():
    records = [{"id": f"color/x/t{i}", "sample_id": f"color/x/t{i}", "suite": "violin" + HOSTILE,
                "task": "color" + HOSTILE, "variation": "v1" + HOSTILE,
                "metrics": {"rgb_ed": 0.1, "=HYPERLINK(1)" + HOSTILE: 0.2, "mean": 0.15},
                "outcome": "passed", "failed": [], "error": None} for i in range(3)]
    text = render_markdown(records, metadata={"suite": "s" + HOSTILE, "adapter": "a" + HOSTILE})
    _assert_printable(text, "summary.md")
    assert "v1\\\\x1b" in text  # printable's escape, its backslash escaped for Markdown


@pytest.fixture
def hostile_manifest(tmp_path):
    """A 3-sample manifest of the built-in suite whose variation names are hostile."""
    folder = tmp_path / "manifest"
    assert main(["export", str(folder), "--suite", "violin", "--limit", "3", "--no-progress"]) == 0
    path = folder / "manifest.jsonl"
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        rec["variation"] = rec["variation"] + HOSTILE
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, [json.loads(line)["id"] for line in lines]


def test_violin_compare_and_summary_md_of_a_hostile_manifest_are_printable(
        hostile_manifest, pytester, tmp_path):
    manifest, ids = hostile_manifest
    other = _results(tmp_path / "other" / "results.json", ids)
    result = pytester.runpytest(f"--violin-suite={manifest}", "--violin-model=oracle",
                                f"--violin-compare={other.parent}", "--violin-report=out",
                                "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "violin comparison" in out
    _assert_printable(out, "terminal")
    summary = (pytester.path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "Comparison with other runs" in summary
    _assert_printable(summary, "summary.md")
