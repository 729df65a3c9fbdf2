"""compare's failure-mode table: kinds per task and run, and the change in points."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from pytest_violin.__main__ import main
from pytest_violin.compare import modes as modes_mod
from pytest_violin.compare.formats import render
from pytest_violin.compare.html import render_html
from pytest_violin.compare.runs import load_run
from pytest_violin.compare.table import build


def _finding(kind, **numbers):
    return {"kind": kind, "text": f"{kind} found", "numbers": numbers}


def _results(path, samples, adapter):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": "pytest-violin-results", "metadata": {"adapter": adapter},
                                "samples": samples}))
    return str(path)


def _rec(sid, task, failed, diagnosis=None):
    m = {"rgb_ed": 0.3 if failed else 0.0, "mean": 0.3 if failed else 0.0}
    rec = {"sample_id": sid, "task": task, "variation": "v1", "metrics": m,
           "failed": ["rgb_ed"] if failed else [], "outcome": "failed" if failed else "passed"}
    if diagnosis is not None:
        rec["extra"] = {"diagnosis": diagnosis, "thumbnails": {"generated": "data:text/html,x"}}
    return rec


def _run(tmp_path, name, kinds, *, task="color", passing=2, diagnosed=True):
    """A results.json whose failing samples' diagnoses start with ``kinds`` (None: no finding)."""
    samples = [_rec(f"{task}/v1/p{i}", task, False) for i in range(passing)]
    for i, kind in enumerate(kinds):
        if kind is None:
            diagnosis = []
        elif kind == "wrong_color+":
            diagnosis = [_finding("wrong_color", dL=3.0), _finding("noise")]
        elif kind == "wrong_color-":
            diagnosis = [_finding("wrong_color", dL=-3.0)]
        else:
            diagnosis = [_finding(kind), _finding("wrong_color", dL=1.0)]
        samples.append(_rec(f"{task}/v1/f{i}", task, True, diagnosis if diagnosed else None))
    return load_run(_results(tmp_path / name / "results.json", samples, name))


def _cell(rows, task, kind, column):
    for r in rows:
        if r[0] == task and r[1] == kind:
            return r[column]
    raise AssertionError(f"no row {task}/{kind} in {rows}")


def test_shares_per_kind_and_run_and_the_change_in_points(tmp_path):
    a = _run(tmp_path, "A", ["gradient"] * 3 + ["wrong_color+"])          # 75% / 25% lighter
    b = _run(tmp_path, "B", ["gradient"] + ["wrong_color-"] * 3 + [None])  # of 4 with a finding
    comp = build([a, b], resamples=50, all_samples=True)
    (color,) = comp.modes
    assert [c.failing for c in color.runs] == [4, 5] and [c.diagnosed for c in color.runs] == [4, 4]
    assert color.kinds == ("gradient", "wrong_color")
    assert color.change("gradient", 1) == pytest.approx(-50.0)
    assert color.change("wrong_color", 1) == pytest.approx(50.0)
    header, rows = modes_mod.table_cells(comp.modes)
    assert header == ["task", "kind", "A", "B", "B - A (points)"]
    assert _cell(rows, "color", "failing", 2) == "4"
    assert _cell(rows, "color", "failing", 3) == "5 (4 with a finding)"
    assert _cell(rows, "color", "gradient", 2) == "75%" and _cell(rows, "color", "gradient", 3) == "25%"
    assert _cell(rows, "color", "gradient", 4) == "-50"
    # the direction of the kind's first findings, per run
    assert _cell(rows, "color", "wrong_color", 2) == "25% lighter"
    assert _cell(rows, "color", "wrong_color", 3) == "75% darker"
    assert _cell(rows, "color", "wrong_color", 4) == "+50"


def test_the_run_summary_rule_is_the_one_used(tmp_path):
    """The shares are failure_mode_lines' shares of the same records (one rule, one home)."""
    from pytest_violin.diagnosis.summary import failure_modes

    kinds = ["gradient", "objects", "objects", "noise", "wrong_color-"]
    a = _run(tmp_path, "A", kinds)
    raw = json.loads((tmp_path / "A" / "results.json").read_text())["samples"]
    (expected,) = failure_modes(raw)
    (color,) = build([a], resamples=50).modes
    cell = color.runs[0]
    assert (cell.failing, cell.recorded, cell.diagnosed) == (expected.failing, expected.recorded,
                                                            expected.diagnosed)
    assert {k: s for k, s, _ in expected.modes} == cell.shares


def test_a_run_without_diagnoses_says_so_and_gets_no_change(tmp_path):
    a = _run(tmp_path, "old", ["gradient"] * 3, diagnosed=False)
    b = _run(tmp_path, "new", ["gradient", "objects", "objects"])
    comp = build([a, b], resamples=50)
    (color,) = comp.modes
    assert color.runs[0].status == modes_mod.NO_DIAGNOSES and color.runs[1].status is None
    _, rows = modes_mod.table_cells(comp.modes)
    assert _cell(rows, "color", "failing", 2) == "3, no diagnoses"
    assert _cell(rows, "color", "objects", 2) == "-" and _cell(rows, "color", "objects", 4) == "-"
    assert _cell(rows, "color", "objects", 3) == "67%"
    text = render(comp, "terminal")
    assert "3, no diagnoses" in text and "67%" in text


def test_no_run_with_diagnoses_gives_one_honest_line(tmp_path):
    a = _run(tmp_path, "A", ["gradient"] * 2, diagnosed=False)
    b = _run(tmp_path, "B", ["gradient"], diagnosed=False)
    comp = build([a, b], resamples=50)
    for fmt in ("terminal", "md", "latex"):
        assert "no diagnoses" in render(comp, fmt).lower()
    assert modes_mod.table_cells(comp.modes)[1]  # the table exists, the formats say none was recorded
    assert "%" not in render(comp, "terminal").split("failure modes")[1].split("pairwise")[0]


def test_a_run_without_failing_samples_adds_no_table(tmp_path):
    a = _run(tmp_path, "A", [])
    comp = build([a, a.__class__(label="B", source="x", kind="results", records=dict(a.records))],
                 resamples=50)
    assert comp.modes == [] and "failure modes" not in render(comp, "terminal")


def test_only_the_shared_samples_count(tmp_path):
    a = _run(tmp_path, "A", ["gradient", "objects"])
    b = _run(tmp_path, "B", ["gradient", "objects", "noise"])  # f2 is not held by A
    (color,) = build([a, b], resamples=50).modes
    assert [c.failing for c in color.runs] == [2, 2] and "noise" not in color.kinds
    (everything,) = build([a, b], resamples=50, all_samples=True).modes
    assert everything.runs[1].failing == 3


def test_more_kinds_than_the_rows_are_summed_as_other(tmp_path, monkeypatch):
    monkeypatch.setattr(modes_mod, "MAX_ROWS", 2)
    a = _run(tmp_path, "A", ["gradient", "gradient", "objects", "noise", "texture"])
    _, rows = modes_mod.table_cells(build([a], resamples=50).modes)
    assert [r[1] for r in rows] == ["failing", "gradient", "objects", "other"]
    assert _cell(rows, "color", "other", 2) == "40%"


def test_loaded_diagnoses_are_small_and_shared(tmp_path):
    a = _run(tmp_path, "A", ["gradient"] * 5 + ["wrong_color+"] * 2)
    slims = [r["extra"]["diagnosis"] for r in a.records.values() if r["outcome"] == "failed"]
    assert slims[0] is slims[4] and slims[5] is slims[6] and slims[0] is not slims[5]
    assert slims[5] == [{"kind": "wrong_color", "direction": "lighter"}]
    # the thumbnails rule is unchanged: only image data URIs are kept
    assert "thumbnails" not in a.records["color/v1/f0"]["extra"]
    # records without thumbnails share one extra dict per distinct diagnosis
    assert a.records["color/v1/f0"]["extra"] is a.records["color/v1/f4"]["extra"]


def test_thumbnails_attached_later_stay_with_their_own_record(tmp_path):
    """thumbnails.json beside results.json: attached to one record, not to those sharing its extra."""
    a = _run(tmp_path, "A", ["gradient"] * 3)
    png = "data:image/png;base64,iVBORw0KGgo="
    (tmp_path / "A" / "thumbnails.json").write_text(json.dumps(
        {"thumbnails": {"color/v1/f1": {"generated": png}}}))
    run = load_run(str(tmp_path / "A"))
    assert run.records["color/v1/f1"]["extra"]["thumbnails"] == {"generated": png}
    assert run.records["color/v1/f1"]["extra"]["diagnosis"] == [{"kind": "gradient"}]
    assert "thumbnails" not in run.records["color/v1/f0"]["extra"]
    assert "thumbnails" not in run.records["color/v1/f2"]["extra"]
    assert len(a.records) == len(run.records)


def test_hostile_diagnoses_are_cut_and_escaped(tmp_path):
    kind = "<script>x</script>|`" + "k" * 100
    samples = [_rec("color/v1/f0", "color", True, [{"kind": kind, "numbers": "bad"}]),
               _rec("color/v1/f1", "color", True, "not a list"),
               _rec("color/v1/f2", "color", True, [5, {"kind": "gradient"}])]
    run = load_run(_results(tmp_path / "h" / "results.json", samples, "h"))
    (color,) = build([run], resamples=50).modes
    assert color.runs[0].recorded == 2 and all(len(k) <= 40 for k in color.kinds)
    page = render_html(build([run], resamples=50))
    assert "<script>x" not in page and "&lt;script&gt;x" in page
    md = render(build([run], resamples=50), "md")
    table = [line for line in md.splitlines() if line.startswith("| color")]
    assert table and all(len(re.findall(r"(?<!\\)\|", line)) == 4 for line in table)


def test_every_format_carries_the_table(tmp_path):
    a = _run(tmp_path, "A", ["gradient"] * 3 + ["wrong_color+"])
    b = _run(tmp_path, "B", ["gradient"] + ["wrong_color-"] * 3)
    comp = build([a, b], resamples=50)
    term = render(comp, "terminal")
    assert re.search(r"color\s+gradient\s+75%\s+25%\s+-50", term)
    md = render(comp, "md")
    assert "### Failure modes" in md and "| color | gradient | 75% | 25% | -50 |" in md
    tex = render(comp, "latex")
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") >= 2
    assert "color & gradient & 75\\% & 25\\% & -50" in tex
    page = render_html(comp)
    assert '<table class="modes">' in page and "<td>gradient</td>" in page


def test_the_command_line_prints_it(tmp_path, capsys):
    _run(tmp_path, "A", ["gradient"] * 2)
    _run(tmp_path, "B", ["objects"] * 2)
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "B")]) == 0
    out = capsys.readouterr().out
    assert "failure modes" in out and re.search(r"color\s+objects\s+0%\s+100%\s+\+100", out)


def test_a_dir_run_is_diagnosed_where_it_fails(tmp_path):
    """compare scores a dir: run itself; its failing samples get the plugin's diagnosis."""
    from pytest_violin.imaging import encode_png
    from pytest_violin.models.directory import output_path
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", tasks=["color"], limit=3)
    for i, s in enumerate(samples):
        img = s.expected().astype(np.int16)
        if i:  # a 60-level vertical gradient: fails, diagnosed as one
            img += np.linspace(-30, 30, s.height).astype(np.int16)[:, None, None]
        path = output_path(tmp_path / "imgs", s.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode_png(np.clip(img, 0, 255).astype(np.uint8)))
    run = load_run(f"dir:{tmp_path / 'imgs'}", suite=samples)
    outcomes = [run.records[s.id]["outcome"] for s in samples]
    assert outcomes == ["passed", "failed", "failed"]
    assert "extra" not in run.records[samples[0].id]
    (color,) = build([run], resamples=50).modes
    assert color.runs[0].failing == 2 and color.runs[0].shares == {"gradient": 1.0}
