"""Refusals are their own outcome: counted apart everywhere, and a rising refusal rate fails the gate."""

from __future__ import annotations

import re

import json

import pytest

from pytest_violin.gating import aggregate_records, build_baseline, compare
from pytest_violin.report.html import render_html
from pytest_violin.report.markdown import render_markdown
from pytest_violin.report.terminal import comparison_lines

# --------------------------------------------------------------------------- the gate (unit)


def _records(n, refused_ids=(), failed_ids=(), task="color", variation="v1"):
    """``n`` samples of one variation: refused ones and failed ones (no image) have no metrics."""
    recs = []
    for i in range(n):
        sid = f"{task}/{variation}/s{i:03d}"
        rec = {"sample_id": sid, "suite": "violin", "task": task, "variation": variation,
               "prompt": "p", "metrics": {"a": 0.0, "mean": 0.0}, "outcome": "passed", "error": None,
               "extra": {"definition": f"d{i}"}}
        if i in refused_ids or i in failed_ids:
            refused = i in refused_ids
            rec.update(metrics={}, outcome="refused" if refused else "failed",
                       error="content moderated" if refused else "HTTP 500")
        recs.append(rec)
    return recs


def _baseline(records):
    return build_baseline(records, suite="violin", profile="violin", seed=0, adapter="m",
                          created="2025-01-01T00:00:00+00:00")


def test_rising_refusal_rate_is_a_regression_of_its_own():
    # the baseline failed 12 of 40 samples without an image, the candidate refuses the same
    # 12: the mean metric (1.0 for both) does not move, the refusal rate goes 0% -> 30%
    old = _baseline(_records(40, failed_ids=range(12)))
    new = _baseline(_records(40, refused_ids=range(12)))
    c = compare(old, new)
    group = {g.label: g for g in c.groups}["color/v1"]
    assert group.mean.status == "within" and group.mean.delta == 0
    assert group.refusal_rate.status == "regressed"
    assert group.refusal_rate.old == 0 and group.refusal_rate.new == pytest.approx(0.3)
    assert group.refusal_rate.ci_low > 0
    assert len(group.newly_refused) == 12
    assert [g.label for g in c.refusal_regressions] == ["color", "color/v1"]
    assert not c.regressions and not c.ok
    doc = c.to_dict()
    assert doc["ok"] is False and doc["refusal_regressions"] == ["color", "color/v1"]
    assert doc["groups"][0]["refusals"]["status"] == "regressed"
    text = "\n".join(t for t, _ in comparison_lines(c))
    assert "color (refusal rate), color/v1 (refusal rate)" in text.splitlines()[0]
    assert re.search(r"refusal rate\s+old\s+0\.0%\s+new\s+30\.0%", text)
    md = render_markdown(new["samples"], comparison=c)
    assert "color/v1 (refusal rate)" in md and "| color/v1 | refusal rate |" in md
    html = render_html(new["samples"], comparison=c)
    assert "color/v1 (refusal rate)" in html and "<td>refusal rate</td>" in html


def test_one_more_refusal_is_not_a_credible_regression():
    # one sample out of 40 refused: 2.5 points, but the interval reaches below 0
    old = _baseline(_records(40))
    new = _baseline(_records(40, refused_ids={7}))
    c = compare(old, new)
    group = {g.label: g for g in c.groups}["color/v1"]
    assert group.refusal_rate.delta == pytest.approx(0.025) and group.refusal_rate.ci_low < 0
    # 40 samples cannot rule out a rise of 1 point: the refusal rate is tested for harm alone there
    assert group.refusal_rate.status == "harm-only" and not group.refusal_rate.guardrail
    assert not c.refusal_regressions


def test_the_refusal_rate_is_a_guardrail_of_a_large_task_only():
    """A task of at least 3 / margin samples must show its refusal rate within the margin; a smaller
    group, or a variation, tests it for harm alone (no refusal on either side of 40 samples rules out only
    a rise above about 6 points)."""
    small = compare(_baseline(_records(40)), _baseline(_records(40)))
    assert {g.refusal_rate.status for g in small.groups} == {"harm-only"}
    large = compare(_baseline(_records(400)), _baseline(_records(400)))
    statuses = {g.label: g.refusal_rate.status for g in large.groups}
    assert statuses == {"color": "within", "color/v1": "harm-only"}
    assert large.ok
    # a rise of 0.8 points on 400 samples is not shown within a 1-point margin, nor regressed
    rise = compare(_baseline(_records(400)), _baseline(_records(400, refused_ids=range(3))))
    task = {g.label: g for g in rise.groups}["color"]
    assert task.refusal_rate.status == "not-shown" and task.refusal_rate.planned > 400
    assert not rise.ok and rise.outcome == "not-shown"


def test_falling_refusal_rate_is_an_improvement_and_passes():
    c = compare(_baseline(_records(400, refused_ids=range(120))), _baseline(_records(400)))
    assert {g.label: g.refusal_rate.status for g in c.groups} == {"color": "improved", "color/v1": "harm-only"}
    assert c.ok


def test_aggregates_count_refusals_apart():
    agg = aggregate_records(_records(10, refused_ids={1, 2}, failed_ids={3}))
    row = agg["variations"][0]
    assert row["refused"] == 2 and row["errors"] == 0 and row["passed"] == 7 and row["failed"] == 3
    assert agg["tasks"][0]["refused"] == 2
    # the baseline keeps them
    assert _baseline(_records(10, refused_ids={1}))["aggregates"]["tasks"][0]["refused"] == 1


# --------------------------------------------------------------------------- end to end

#: A python: model that draws the expected image, refuses every shape sample and one colour sample.
MODEL = """
from pytest_violin.errors import GenerationRefused

REFUSE = {refuse!r}

class Model:
    cacheable = False

    def generate(self, request):
        sample = request.sample
        if sample.task in REFUSE or sample.id in REFUSE:
            raise GenerationRefused("IMAGE_SAFETY: the provider declined")
        return sample.expected()
"""


def _model(pytester, refuse=()):
    pytester.makepyfile(violin_models=MODEL.format(refuse=set(refuse) or set()))


ARGS = ("--violin-model=python:violin_models:Model", "--violin-tasks=color,shape", "--violin-limit=12",
        "-p", "no:cacheprovider", "-p", "no:randomly")
#: A selection whose groups are large enough for the gate's tests (at least 30 samples each).
GATED = ("--violin-model=python:violin_models:Model", "--violin-tasks=color,shape", "--violin-limit=200",
         "-p", "no:cacheprovider", "-p", "no:randomly")


def test_refusals_end_to_end_in_the_terminal_and_every_report(pytester):
    _model(pytester, refuse={"shape"})
    result = pytester.runpytest(*ARGS, "--violin-report=rep")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    doc = json.loads((pytester.path / "rep" / "results.json").read_text())
    refused = [s for s in doc["samples"] if s["outcome"] == "refused"]
    shapes = [s for s in doc["samples"] if s["task"] == "shape"]
    assert refused and refused == shapes
    assert all(s["failed"] == ["refused"] and s["metrics"] == {} for s in refused)
    assert doc["metadata"]["refused"] == len(refused)
    tasks = {r["task"]: r for r in doc["aggregates"]["tasks"]}
    assert tasks["shape"]["refused"] == len(shapes) and tasks["color"]["refused"] == 0
    assert f"({len(shapes)} refused)" in out and f"{len(shapes)} refused by the model" in out
    # refusals fail obedience: pytest counts them as failures, never retried (one call each)
    result.assert_outcomes(passed=12 - len(shapes), failed=len(shapes))
    assert doc["metadata"]["generations"] == 12
    md = (pytester.path / "rep" / "summary.md").read_text()
    assert f"{len(shapes)} refused by the model" in md and "| refused |" in md
    html = (pytester.path / "rep" / "report.html").read_text()
    assert html.count('<span class="badge ref">refused</span>') == len(shapes)
    assert 'id="f-outcome"' in html and '<option value="refused">refused</option>' in html
    assert "<th>refused</th>" in html


def test_the_gate_fails_when_the_model_starts_refusing(pytester):
    _model(pytester)
    saved = pytester.runpytest(*GATED, "--violin-save-baseline=base.json")
    assert saved.ret == 0
    base = json.loads((pytester.path / "base.json").read_text())
    assert all(row["refused"] == 0 for row in base["aggregates"]["tasks"])
    _model(pytester, refuse={"shape"})
    result = pytester.runpytest(*GATED, "--violin-baseline=base.json", "--violin-report=rep")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "shape (mean metric, pass rate, refusal rate)" in out
    assert "refused (" in out  # the cause before the numbers: no image, because refused
    shapes = sum(1 for s in base["samples"] if s["task"] == "shape")
    result.assert_outcomes(passed=200 - shapes, xfailed=shapes, failed=1)  # the new refusals; violin::gate
    comparison = json.loads((pytester.path / "rep" / "results.json").read_text())["comparison"]
    assert "shape" in comparison["refusal_regressions"] and comparison["ok"] is False
