"""gating.decide: the gate's verdict and the session's exit status, without pytest."""

from __future__ import annotations

import numpy as np
from test_gating import baseline_of, make_records

from pytest_violin.gating.decide import (
    EXIT_REGRESSED,
    EXIT_UNDECIDED,
    GateLimits,
    decide,
)


def _worse_color(n=300):
    base = np.random.default_rng(3).random(n) * 0.2
    old = make_records(base)
    worse = base.copy()
    color = [i for i, r in enumerate(old) if r["task"] == "color"]
    worse[color] += 0.1
    return old, make_records(worse)


def test_a_regression_fails_a_green_session_and_keeps_a_red_status():
    old, new = _worse_color()
    verdict = decide(baseline_of(old), new, baseline_of(new), baseline_label="base.json")
    assert not verdict.ok and verdict.comparison.baseline_path == "base.json"
    assert {g.label for g in verdict.comparison.regressed_groups} >= {"color"}
    assert verdict.exit_status(0) == EXIT_REGRESSED
    assert verdict.exit_status(EXIT_REGRESSED, others_failed=True) == EXIT_REGRESSED
    assert verdict.exit_status(2) == 2  # an interrupted session keeps its own status


def test_the_same_run_passes_and_leaves_the_status_alone():
    recs = make_records(np.random.default_rng(0).random(300) * 0.3)
    verdict = decide(baseline_of(recs), recs, baseline_of(recs), limits=GateLimits(max_regression=0.05))
    assert verdict.ok and verdict.messages == ()
    assert verdict.exit_status(0) == 0 and verdict.exit_status(1) == 1


def test_no_shared_sample_is_undecided_unless_other_tests_failed_or_it_was_interrupted():
    old = make_records(np.random.default_rng(0).random(30) * 0.3)
    new = make_records(np.random.default_rng(1).random(30) * 0.3, definition="other")
    verdict = decide(baseline_of(old), new, baseline_of(new))
    assert not verdict.ok and verdict.comparison.compared == 0
    assert verdict.exit_status(0) == EXIT_UNDECIDED
    assert verdict.exit_status(1, others_failed=True) == 1
    interrupted = decide(baseline_of(old), new, baseline_of(new), interrupted=True)
    assert interrupted.exit_status(0) == EXIT_REGRESSED
    assert interrupted.comparison.unrun_reason == "the run was interrupted before"


def test_no_sample_is_a_message_not_a_comparison():
    old = make_records(np.random.default_rng(0).random(10) * 0.3)
    verdict = decide(baseline_of(old), [], baseline_of([]), baseline_label="b.json")
    assert verdict.comparison is None and verdict.ok and verdict.exit_status(0) == 0
    assert len(verdict.messages) == 1 and "b.json" in verdict.messages[0]


def test_a_decided_sequential_summary_decides_the_comparison():
    old, new = _worse_color()
    summary = {"verdict": "regressed", "groups": [{"group": "color", "status": "regressed"}]}
    verdict = decide(baseline_of(old), new, baseline_of(new), sequential=summary)
    assert verdict.comparison.decided_by == "sequential"
    assert verdict.comparison.sequential_regressions == ("color",)
