"""gating.plan and ``python -m pytest_violin plan``: what each group needs before a run is paid."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_gating import baseline_of, make_records

from pytest_violin.__main__ import main
from pytest_violin.gating import compare
from pytest_violin.gating.plan import plan


def _noisy(values, sd, seed):
    rng = np.random.default_rng(seed)
    return np.clip(values + rng.normal(0.0, sd, values.size), 0.0, 1.0)


def test_without_noise_measured_the_plan_is_a_steady_models_floor():
    rows = plan(baseline_of(make_records(np.full(300, 0.1))))
    by = {r.label: r for r in rows}
    # make_records' mask has one variation: it is its task's, not a group of its own
    assert set(by) == {"color", "color/v1", "color/v2", "mask", "shape", "shape/circle", "shape/square"}
    assert all(r.source == "none" and r.repeats is None for r in rows)
    assert by["color/v1"].needed["mean"] == 30 and by["color/v1"].needed["pass_rate"] == 52
    assert by["color/v1"].guardrails == ("mean", "pass_rate")  # 60 samples: refusals tested for harm alone
    assert by["color/v1"].decidable


def test_a_run_of_the_model_gives_the_noise_and_the_plan_agrees_with_the_gate():
    base = np.random.default_rng(1).random(1000) * 0.3
    old = baseline_of(make_records(base))
    rerun = baseline_of(make_records(_noisy(base, 0.12, 2)))
    rows = {r.label: r for r in plan(old, rerun)}
    comparison = compare(old, rerun)
    for g in comparison.groups:
        if g.variation is None or g.task != "mask":
            assert rows[g.label].needed["mean"] == g.mean.planned and rows[g.label].source == "run"
    # 200 samples a variation at that noise: the mean cannot be shown within 0.01, and the plan says so,
    # with the repeats that would bring it within the suite
    circle = rows["shape/circle"]
    assert not circle.decidable and circle.needed["mean"] > circle.size
    assert circle.repeats == pytest.approx(circle.needed["mean"] / circle.size, abs=1)
    assert {g.label for g in comparison.not_shown_groups} >= {"shape/circle"}


def test_the_baselines_repeats_give_the_noise_of_one_run():
    recs = make_records(np.full(300, 0.2))
    rng = np.random.default_rng(5)
    for r in recs:
        draws = np.clip(0.2 + rng.normal(0.0, 0.1, 4), 0, 1)
        r["repeats"] = [{"a": float(v), "b": float(v), "mean": float(v)} for v in draws]
    rows = {r.label: r for r in plan(baseline_of(recs, extra_metadata={"repeats": 4}))}
    color = rows["color"]
    assert color.source == "repeats"
    # one repeat's sd 0.1, four a run, both runs drawing: a paired sd near 0.1 * sqrt(2 / 4)
    expected = ((1.6449 + 0.8416) * 0.1 * (2 / 4) ** 0.5 / 0.01) ** 2
    assert color.needed["mean"] == pytest.approx(expected, rel=0.2)


def test_the_command_plans_and_refuses_a_bad_baseline(tmp_path, capsys):
    path = tmp_path / "base.json"
    path.write_text(json.dumps(baseline_of(make_records(np.full(300, 0.1)))))
    assert main(["plan", "--baseline", str(path)]) == 0
    out = capsys.readouterr().out
    assert "color/v1" in out and "needs mean 30, pass rate 52" in out and "decidable" in out
    assert main(["plan", "--baseline", str(tmp_path / "missing.json")]) == 4
    assert "missing.json" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        main(["plan", "--baseline", str(path), "--power", "1"])
    assert stopped.value.code == 4
    assert "'1'" in capsys.readouterr().err
