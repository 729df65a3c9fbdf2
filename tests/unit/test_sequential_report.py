"""The sequential gate's words and numbers (:mod:`pytest_violin.report._sequential`): exact, no
pytest run. The plugin-level reports are tests/plugin/test_sequential_plugin.py."""

from __future__ import annotations

from pytest_violin.gating.policy import TIE_TOLERANCE
from pytest_violin.report._sequential import (
    _bound,
    regressed_groups,
    sequential_html,
    sequential_lines,
    sequential_markdown,
)

MARGIN = 0.01


def _stat(low, high, margin=MARGIN, above=False, below=False):
    return {"interval": [low, high], "estimate": None, "margin": margin, "above": above, "below": below}


def _summary():
    regressed = {"mean": _stat(MARGIN + 2 * TIE_TOLERANCE, 0.04, above=True),
                 "fail": _stat(-0.02, 0.3), "refusal": _stat(0.0, 0.2)}
    undecided = {"mean": _stat(-0.0000004, 0.0124), "fail": _stat(-0.1, 0.1), "refusal": _stat(0.0, 0.05)}
    fine = {"mean": _stat(-0.003, MARGIN + TIE_TOLERANCE, below=True), "fail": _stat(-0.01, 0.05, 0.05, below=True),
            "refusal": _stat(0.0, 0.0099, below=True)}
    groups = [
        {"group": "shape", "task": "shape", "variation": None, "role": "task", "status": "undecided",
         "size": 750, "used": 750, "interval": undecided["mean"]["interval"], "statistics": undecided,
         "decided_after": None},
        {"group": "shape/triangle", "task": "shape", "variation": "triangle", "role": "variation",
         "status": "regressed", "size": 250, "used": 80, "interval": regressed["mean"]["interval"],
         "statistics": regressed, "decided_after": 300},
        {"group": "color", "task": "color", "variation": None, "role": "task", "status": "not-regressed",
         "size": 400, "used": 300, "interval": fine["mean"]["interval"], "statistics": fine,
         "decided_after": 280},
    ]
    return {"verdict": "regressed", "finished": "a regression is shown (shape/triangle)", "alpha": 0.05,
            "margin": MARGIN, "margins": {"mean": MARGIN, "fail": 0.05, "refusal": MARGIN},
            "used": 300, "total": 1000, "groups": groups, "method": "m"}


def test_bounds_are_rounded_outward_and_never_negative_zero():
    assert _bound(-0.0000004, 3, up=False) == "-0.001"  # a lower bound below 0 is not shown as 0
    assert _bound(0.0, 3, up=False) == "+0.000" and _bound(-0.0, 3, up=True) == "+0.000"
    assert _bound(0.0124, 3, up=True) == "+0.013" and _bound(0.0124, 3, up=False) == "+0.012"
    # a bound within the tie tolerance of a step is that step, by the gate's one tie rule
    assert _bound(MARGIN + TIE_TOLERANCE, 3, up=True) == "+0.010"
    assert _bound(MARGIN + 2 * TIE_TOLERANCE, 3, up=False) == "+0.010"


def test_every_format_prints_each_statistic_exactly_and_explains_itself():
    text = "\n".join(line for line, _ in sequential_lines(_summary()))
    md = "\n".join(sequential_markdown(_summary()))
    html = sequential_html(_summary())
    for out in (text, md, html):
        assert "watch" not in out and "-0.000" not in out and "+0.0100" not in out
        assert "(+0.010, +0.040)" in out  # the regressed group: above 0.010, open interval
        assert "(-0.001, +0.013)" in out  # the undecided one, outward
        assert "(+0.000, +0.010)" in out  # not regressed: the refusal rate's upper bound at the margin
        assert "mean above its margin" in out
    assert "above the first number and below the second" in text
    assert "| fail rate |" in md


def test_only_the_groups_the_gate_showed_regressed_are_marked():
    lines = sequential_lines(_summary())
    bad = [line for line, level in lines if level == "bad" and line.startswith("  ")]
    assert len(bad) == 1 and "shape/triangle" in bad[0]
    html = sequential_html(_summary())
    assert html.count('class="reg"') == 1
    assert regressed_groups(_summary()) == {("shape", "triangle")}
    assert regressed_groups(None) == set()


def test_a_summary_of_an_older_run_without_statistics_still_prints():
    summary = _summary()
    for g in summary["groups"]:
        del g["statistics"]
    text = "\n".join(line for line, _ in sequential_lines(summary))
    assert "mean (" in text and "fail rate" not in text.split("rule:")[0]
