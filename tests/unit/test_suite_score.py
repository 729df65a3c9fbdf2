"""Scoring: the ground truth of every sample scores exactly 0.0, in both profiles."""

import numpy as np
import pytest

from pytest_violin.metrics import Metrics
from pytest_violin.suite import SUITES, load_suite
from pytest_violin.suite.builtin.absolute import fuzzy_range

# A stratified subset touching every task and variation of every suite
# (benchmarks/bench_suite.py --score scores every sample of every suite).
LIMITS = {"violin": 40, "violin-absolute": 18, "violin-extra": 16, "violin-probes": 16}
CASES = [s for name in SUITES for s in load_suite(name, limit=LIMITS[name], seed=11)]


def test_subset_covers_every_task_and_variation():
    for name in SUITES:
        want = {(s.task, s.variation) for s in load_suite(name)}
        got = {(s.task, s.variation) for s in CASES if s.suite == name}
        assert want == got, name


@pytest.mark.parametrize("profile", ["violin", "strict"])
@pytest.mark.parametrize("sample", CASES, ids=lambda s: s.id)
def test_ground_truth_scores_zero(sample, profile):
    m = sample.score(sample.expected(), profile=profile)
    assert isinstance(m, Metrics)
    assert tuple(m) == sample.metric_names
    assert all(v == 0.0 for v in m.values()), dict(m)
    assert m.info["resized"] is False and m.info["original_size"] == (sample.width, sample.height)


def test_other_size_is_resized_and_recorded():
    s = next(x for x in CASES if x.task == "shape")
    big = np.repeat(np.repeat(s.expected(), 2, axis=0), 2, axis=1)
    m = s.score(big)
    assert m.info["resized"] is True and m.info["original_size"] == (2 * s.width, 2 * s.height)
    assert m["iou"] < 0.05


def test_wrong_answers_score_worse_than_zero():
    for s in CASES[::7]:
        exp = s.expected()
        wrong = np.full_like(exp, 128)
        wrong[::7, ::5] = 17
        m = s.score(wrong)
        assert m.mean > 0.0, s.id
        assert all(0.0 <= v <= 1.0 for v in m.values())


def test_fuzzy_accepts_any_solid_color_in_range_only():
    s = next(x for x in load_suite("violin-absolute") if x.variation == "v4")
    low, high = fuzzy_range(tuple(s.spec["colors"][0]))
    assert list(low) == list(s.spec["low"]) and list(high) == list(s.spec["high"])
    inside = np.full((s.height, s.width, 3), low, np.uint8)
    m = s.score(inside)
    assert m["rgb_ed"] == 0.0 and m["lab_00"] == 0.0 and m.mean == 0.0
    outside = np.full((s.height, s.width, 3), [min(255, v + 40) for v in high], np.uint8)
    assert s.score(outside)["rgb_ed"] > 0.0
