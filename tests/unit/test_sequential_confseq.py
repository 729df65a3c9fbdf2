"""The sequential gate's confidence sequence (:mod:`pytest_violin.gating._confseq`): the betting
confidence sequence for the expected value of an i.i.d. stream, no pytest run.

The gate's logic is tests/unit/test_sequential_stats.py; the error rates over many runs of a
suite-sized population are benchmarks/bench_sequential.py.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pytest_violin.errors import InvalidArgumentError, ViolinError
from pytest_violin.gating._confseq import MeanSequence
from pytest_violin.gating.policy import TIE_TOLERANCE
from _stats import binomial_upper

MARGIN = 0.01


@pytest.mark.parametrize("kwargs, shown", [
    ({"margin": float("nan")}, "nan"), ({"margin": 1.5}, "1.5"), ({"margin": "0.01"}, "'0.01'"),
    ({"margin": -0.01}, "-0.01"), ({"margin": True}, "True"),
    ({"alpha_low": 0}, "0"), ({"alpha_low": 1.0}, "1.0"), ({"alpha_high": True}, "True"),
    ({"alpha_high": "0.05"}, "'0.05'"), ({"alpha_low": float("nan")}, "nan"),
    ({"low": 0.5}, "0.5"), ({"high": 0.0}, "0.0"), ({"low": -0.2, "high": 0.5}, "-0.2"),
])
def test_sequence_refuses_bad_arguments_naming_the_value(kwargs, shown):
    args = {"margin": MARGIN, "alpha_low": 0.05, "alpha_high": 0.05, **kwargs}
    margin = args.pop("margin")
    with pytest.raises(InvalidArgumentError) as info:
        MeanSequence(margin, **args)
    assert shown in str(info.value)
    assert isinstance(info.value, ViolinError)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1.5, -1.01])
def test_sequence_refuses_a_value_outside_the_range(value):
    seq = MeanSequence(MARGIN, alpha_low=0.05, alpha_high=0.05)
    with pytest.raises(InvalidArgumentError) as info:
        seq.add(value)
    assert repr(float(value)) in str(info.value)
    assert seq.seen == 0


def _draw(rng, kind: int, n: int) -> tuple:
    """i.i.d. streams of paired differences with a known expected value: skewed both ways, flat,
    two-point, and a stochastic model's noise (a third of the answers redrawn)."""
    if kind % 5 == 0:
        tail = rng.random(n) < 0.1
        return np.where(tail, rng.uniform(0.3, 1.0, n), rng.uniform(-0.02, 0.02, n)), 0.1 * 0.65
    if kind % 5 == 1:
        tail = rng.random(n) < 0.1
        return -np.where(tail, rng.uniform(0.3, 1.0, n), rng.uniform(-0.02, 0.02, n)), -0.1 * 0.65
    if kind % 5 == 2:
        return rng.uniform(-1, 1, n), 0.0
    if kind % 5 == 3:
        return np.where(rng.random(n) < 0.5, -0.4, 0.6), 0.1
    redraw = rng.random(n) < 1 / 3  # new - old of two runs of one stochastic model: mean 0
    return np.where(redraw, rng.beta(2, 6, n) - rng.beta(2, 6, n), 0.0), 0.0


def test_interval_holds_the_expected_value_at_every_look_in_at_least_1_minus_alpha_of_runs():
    """300 fixed seeds, 60 i.i.d. draws each (five shapes), every look checked."""
    runs, size, alpha = 300, 60, 0.1
    missed_low = missed_high = 0
    widths = []
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        values, mean = _draw(rng, seed, size)
        seq = MeanSequence(MARGIN, alpha_low=alpha, alpha_high=alpha)
        low_wrong = high_wrong = False
        for d in values:
            seq.add(float(d))
            low, high = seq.interval
            assert low <= high
            low_wrong |= low > mean + 1e-9
            high_wrong |= high < mean - 1e-9
        widths.append(seq.interval[1] - seq.interval[0])
        missed_low += low_wrong
        missed_high += high_wrong
    bound = binomial_upper(runs, alpha)
    assert missed_low <= bound and missed_high <= bound, (missed_low, missed_high, bound)
    # a real interval that shrinks, not [-1, 1] for ever
    assert np.median(widths) < 1.0


def test_the_interval_never_collapses_to_the_realised_mean():
    """An i.i.d. stream's interval is about the expected value: however many values were seen
    (here 2,000, all 0), the next one is still a draw, so the interval keeps a width."""
    seq = MeanSequence(MARGIN, alpha_low=0.05, alpha_high=0.05, low=0.0, high=1.0)
    for _ in range(2000):
        seq.add(0.0)
    low, high = seq.interval
    assert low == 0.0 and 0.0 < high < MARGIN
    assert seq.below_margin and not seq.above_margin


@pytest.mark.parametrize("support, probs", [
    ((-0.4, 0.6), (0.5, 0.5)),
    ((0.0, 0.8), (6 / 7, 1 / 7)),
    ((-0.6, 0.0, 0.4), (0.2, 0.5, 0.3)),
])
def test_the_capital_at_the_expected_value_is_a_martingale(support, probs):
    """The heart of anytime validity, exactly: over every sequence of 6 i.i.d. draws, weighted by
    its probability, the mean capital of each side's bet at the expected value is 1 at every
    look (white box: the log capitals), so Ville's inequality bounds the chance that it ever
    reaches 1/alpha."""
    mean = float(np.dot(support, probs))
    looks = 6
    up, down = np.zeros(looks), np.zeros(looks)
    moved = 0.0
    for seq_values in itertools.product(range(len(support)), repeat=looks):
        weight = math.prod(probs[i] for i in seq_values)
        seq = MeanSequence(MARGIN, alpha_low=0.05, alpha_high=0.05)
        at = int(np.argmin(np.abs(seq.grid - mean)))
        seq.grid[at] = mean  # the candidate exactly at the expected value
        seq._c[at] = (mean - seq.low) / (seq.high - seq.low)
        for t, i in enumerate(seq_values):
            seq.add(support[i])
            up[t] += weight * math.exp(seq._log_up[at])
            down[t] += weight * math.exp(seq._log_down[at])
            moved = max(moved, abs(seq._log_up[at]), abs(seq._log_down[at]))
    assert moved > 0.05  # the bets are not all zero
    np.testing.assert_allclose(up, 1.0, atol=1e-9)
    np.testing.assert_allclose(down, 1.0, atol=1e-9)


def test_a_sequence_at_a_loose_level_misses_more_often_than_at_a_strict_one():
    misses = {}
    for alpha in (0.01, 0.5):
        count = 0
        for seed in range(60):
            rng = np.random.default_rng(1000 + seed)
            values, mean = _draw(rng, seed, 40)
            seq = MeanSequence(MARGIN, alpha_low=alpha, alpha_high=alpha)
            wrong = False
            for d in values:
                seq.add(float(d))
                low, high = seq.interval
                wrong |= low > mean + 1e-9 or high < mean - 1e-9
            count += wrong
        misses[alpha] = count
    assert misses[0.01] <= 3
    assert misses[0.5] > misses[0.01]


def test_a_difference_on_the_margin_in_floating_point_is_never_above_it():
    """Every d = 0.03 - 0.02 (0.009999999999999998): the lower bound never passes the margin
    (the tie rule of gating.policy.above_margin), however long the stream."""
    d = 0.03 - 0.02
    seq = MeanSequence(MARGIN, alpha_low=0.05, alpha_high=0.05, low=-0.02, high=0.98)
    for _ in range(3000):
        seq.add(d)
        assert not seq.above_margin
    low, high = seq.interval
    assert low <= MARGIN + TIE_TOLERANCE and not seq.above_margin


def test_decisions_follow_the_tie_rule_at_the_decision_points():
    seq = MeanSequence(MARGIN, alpha_low=0.05, alpha_high=0.05)
    assert {MARGIN, MARGIN + TIE_TOLERANCE, MARGIN + 2 * TIE_TOLERANCE} <= set(seq.grid.tolist())
    # white box: rejecting every candidate up to the margin + tolerance is not enough to regress
    seq._above[seq.grid <= MARGIN + TIE_TOLERANCE] = True
    assert seq.interval[0] == pytest.approx(MARGIN + TIE_TOLERANCE) and not seq.above_margin
    seq._above[seq.grid <= MARGIN + 2 * TIE_TOLERANCE] = True
    assert seq.above_margin
    # and an upper bound at margin + tolerance is at the margin: not regressed
    seq = MeanSequence(MARGIN, alpha_low=0.05, alpha_high=0.05)
    seq._below[seq.grid >= MARGIN + TIE_TOLERANCE] = True
    assert seq.interval[1] == pytest.approx(MARGIN + TIE_TOLERANCE) and seq.below_margin
    seq = MeanSequence(MARGIN, alpha_low=0.05, alpha_high=0.05)
    seq._below[seq.grid >= MARGIN + 2 * TIE_TOLERANCE] = True
    assert not seq.below_margin


@pytest.mark.parametrize("margin", [1.0, 0.5])
def test_a_margin_at_or_above_the_range_is_decided_not_regressed_at_once(margin):
    """--violin-max-regression=1: no expected difference can be above it."""
    seq = MeanSequence(margin, alpha_low=0.05, alpha_high=0.05, low=-0.5, high=0.5)
    seq.add(0.5)
    assert seq.below_margin and not seq.above_margin


def test_the_ends_of_the_range_are_rejected_by_one_value_inside():
    seq = MeanSequence(MARGIN, alpha_low=0.05, alpha_high=0.05, low=0.0, high=1.0)
    seq.add(0.3)
    assert seq._above[0] and seq._below[-1]  # a mean of 0 (all 0) or 1 (all 1) is disproved
    assert seq.mean == pytest.approx(0.3)
