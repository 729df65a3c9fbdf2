"""gating.evidence: the bounds, outcomes and planned sizes of one paired statistic, checked against
published values, an independent computation and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_violin.errors import InvalidArgumentError
from pytest_violin.gating.evidence import (
    MIN_TESTED,
    classify,
    group_sequential_bounds,
    normal_z,
    planned_size,
    rate_bound,
    rate_planned_size,
    spent,
)

# --------------------------------------------------------------------------- Tango's score interval


@pytest.mark.parametrize("worse, better, n, low, high", [
    # the paired 2x2 examples of Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables"
    # (2017), chapter 8: airway hyper-responsiveness (Bentur et al. 2009, n12 = 1, n21 = 7 of 21) and
    # complete response (Cavo et al. 2012, n12 = 6, n21 = 16 of 161); Tango's asymptotic score 95% CIs
    (1, 7, 21, -0.517, -0.026),
    (6, 16, 161, -0.124, -0.005),
])
def test_tangos_interval_gives_the_published_bounds(worse, better, n, low, high):
    assert rate_bound(worse, better, n, alpha=0.025, side="lower") == pytest.approx(low, abs=6e-4)
    assert rate_bound(worse, better, n, alpha=0.025, side="upper") == pytest.approx(high, abs=6e-4)


def _score_by_brute_force(delta, worse, better, n):
    """Tango's statistic with the constrained maximum-likelihood estimate found numerically (a fine grid
    of the better pairs' share), not by the closed form the module uses."""
    lo, hi = max(0.0, -delta) + 1e-12, (1.0 - delta) / 2.0 - 1e-12
    grid = np.linspace(lo, hi, 200_001)
    with np.errstate(divide="ignore"):
        loglik = (worse * np.log(grid + delta) + better * np.log(grid)
                  + (n - worse - better) * np.log(1.0 - 2.0 * grid - delta))
    p = grid[np.argmax(loglik)]
    return (worse - better - n * delta) / math.sqrt(n * (2.0 * p + delta * (1.0 - delta)))


@pytest.mark.parametrize("worse, better, n", [(3, 1, 40), (0, 5, 60), (12, 0, 40), (7, 7, 100)])
def test_the_bound_is_where_the_score_statistic_reaches_its_critical_value(worse, better, n):
    z = normal_z(0.05)
    up = rate_bound(worse, better, n, alpha=0.05, side="upper")
    down = rate_bound(worse, better, n, alpha=0.05, side="lower")
    assert down < (worse - better) / n < up
    assert _score_by_brute_force(up, worse, better, n) == pytest.approx(-z, abs=2e-3)
    assert _score_by_brute_force(down, worse, better, n) == pytest.approx(z, abs=2e-3)


def test_no_pair_changed_rules_out_only_what_n_samples_can():
    """The bound does not collapse to 0: no change seen on n pairs rules out about z^2 / (n + z^2)."""
    z = normal_z(0.05)
    for n in (12, 60, 435):
        assert rate_bound(0, 0, n, alpha=0.05, side="upper") == pytest.approx(z * z / (n + z * z), rel=1e-6)
    # 52 pairs show a pass rate within 5 points, 51 do not; 268 a refusal rate within 1 point
    assert rate_bound(0, 0, 52, alpha=0.05, side="upper") < 0.05 < rate_bound(0, 0, 51, alpha=0.05, side="upper")
    assert rate_bound(0, 0, 268, alpha=0.05, side="upper") < 0.01 < rate_bound(0, 0, 266, alpha=0.05, side="upper")


def test_the_one_sided_upper_bound_covers_at_its_level():
    """Simulated: pairs whose worsening is exactly 2 points with 10% discordant, 400 pairs; the upper bound
    at 95% lies below the truth in about 5% of draws (Tango's interval is close to nominal)."""
    rng = np.random.default_rng(7)
    p_worse, p_better, n = 0.06, 0.04, 400
    draws = rng.multinomial(n, [p_worse, p_better, 1 - p_worse - p_better], size=2000)
    missed = sum(rate_bound(int(w), int(b), n, alpha=0.05, side="upper") < p_worse - p_better
                 for w, b, _ in draws)
    assert 0.025 < missed / len(draws) < 0.075


@pytest.mark.parametrize("kwargs", [dict(worse=3, better=0, n=2), dict(worse=-1, better=0, n=5),
                                    dict(worse=0, better=0, n=0)])
def test_impossible_counts_are_refused_naming_them(kwargs):
    with pytest.raises(InvalidArgumentError, match="worse="):
        rate_bound(alpha=0.05, side="upper", **kwargs)


def test_a_bad_side_or_alpha_is_refused():
    with pytest.raises(InvalidArgumentError, match="'middle'"):
        rate_bound(1, 1, 10, alpha=0.05, side="middle")
    with pytest.raises(InvalidArgumentError, match="1.5"):
        rate_bound(1, 1, 10, alpha=1.5, side="upper")


# --------------------------------------------------------------------------- the outcome of a statistic


def test_the_three_outcomes_and_their_ties():
    m = 0.01
    assert classify(harm_low=0.02, high=0.05, bound=0.04, margin=m) == "regressed"
    assert classify(harm_low=-0.01, high=0.008, bound=0.005, margin=m) == "within"
    assert classify(harm_low=-0.03, high=-0.02, bound=-0.021, margin=m) == "improved"
    assert classify(harm_low=-0.01, high=0.03, bound=0.02, margin=m) == "not-shown"
    # a bound at the margin (within the tie tolerance) is neither within nor regressed
    assert classify(harm_low=0.0, high=0.02, bound=m, margin=m) == "not-shown"
    assert classify(harm_low=m, high=0.02, bound=0.015, margin=m) == "not-shown"
    # a statistic that is no guardrail is tested for harm alone; too few samples decide nothing
    assert classify(harm_low=-0.01, high=0.0, bound=0.0, margin=m, guardrail=False) == "harm-only"
    assert classify(harm_low=0.5, high=0.6, bound=0.6, margin=m, tested=False) == "not-shown"
    assert classify(harm_low=0.5, high=0.6, bound=0.6, margin=m, guardrail=False, tested=False) == "harm-only"


# --------------------------------------------------------------------------- planned sizes


def test_planned_sizes_follow_the_normal_approximation_with_their_floors():
    z = normal_z(0.05) + normal_z(0.2)
    assert planned_size(0.1, 0.01, alpha=0.05) == math.ceil((z * 0.1 / 0.01) ** 2)
    assert planned_size(0.0, 0.01, alpha=0.05) == MIN_TESTED  # nothing varies: the floor
    assert planned_size(0.1, 0.0, alpha=0.05) is None  # a margin of 0: no number of samples
    assert planned_size(0.1, 0.01, alpha=0.05, power=0.9) > planned_size(0.1, 0.01, alpha=0.05)
    assert rate_planned_size(0.0, 0.05, alpha=0.05) == 52
    assert rate_planned_size(0.0, 0.01, alpha=0.05) == 268
    assert rate_planned_size(0.2, 0.05, alpha=0.05) == math.ceil(z * z * 0.2 / 0.05 ** 2)


def test_a_planned_size_gives_the_planned_power():
    """Simulated: an unchanged model whose paired differences have sd 0.08 on its planned size is shown
    within 0.01 (normal bound at 95%) in about 80% of draws."""
    rng = np.random.default_rng(3)
    n = planned_size(0.08, 0.01, alpha=0.05)
    d = rng.normal(0.0, 0.08, size=(2000, n))
    bound = d.mean(axis=1) + normal_z(0.05) * d.std(axis=1, ddof=1) / math.sqrt(n)
    assert 0.76 < float(np.mean(bound < 0.01)) < 0.84


# --------------------------------------------------------------------------- group-sequential boundaries


def test_the_boundaries_match_gsdesign():
    # gsDesign's one-sided designs at alpha 0.025: Lan-DeMets O'Brien-Fleming spending, 4 equally spaced looks,
    # and its default, Hwang-Shih-DeCani gamma -4, 3 looks
    assert group_sequential_bounds((0.25, 0.5, 0.75, 1.0), 0.025, "obrien-fleming") == pytest.approx(
        (4.3326, 2.9631, 2.3590, 2.0141), abs=2e-4)
    assert group_sequential_bounds((1 / 3, 2 / 3, 1.0), 0.025) == pytest.approx((3.0107, 2.5465, 1.9992), abs=2e-4)
    # one look is the fixed-sample test
    assert group_sequential_bounds((1.0,), 0.05) == pytest.approx((normal_z(0.05),), abs=1e-6)


def test_the_boundaries_spend_alpha_as_designed():
    """Simulated Brownian motion under H0: the share of paths crossing at each look is the spending
    function's increment."""
    looks = (0.3, 0.6, 1.0)
    bounds = group_sequential_bounds(looks, 0.05)
    rng = np.random.default_rng(11)
    steps = rng.normal(size=(400_000, 3)) * np.sqrt(np.diff((0.0,) + looks))
    z = np.cumsum(steps, axis=1) / np.sqrt(looks)
    crossed = z >= np.array(bounds)
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    spends = np.diff([0.0] + [spent(t, 0.05) for t in looks])
    for k, want in enumerate(spends):
        assert float(np.mean(first == k)) == pytest.approx(want, abs=1e-3)
    assert float(np.mean(first >= 0)) == pytest.approx(0.05, abs=1.5e-3)


def test_bad_looks_and_spending_are_refused():
    with pytest.raises(InvalidArgumentError, match="fractions"):
        group_sequential_bounds((0.5, 0.4), 0.05)
    with pytest.raises(InvalidArgumentError, match="fractions"):
        group_sequential_bounds((0.0, 1.0), 0.05)
    with pytest.raises(InvalidArgumentError, match="'pocock'"):
        spent(0.5, 0.05, "pocock")
