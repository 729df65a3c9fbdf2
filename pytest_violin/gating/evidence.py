"""The gate's evidence about one paired statistic: its bounds, its outcome and the samples it needs.

Small pure functions, no pytest and no run. A statistic is a mean of per-sample paired differences ``d = new -
old`` (a *worsening* is ``d > 0``): the mean metric's (values in [-1, 1]), and the fail and refusal
indicators' (in {-1, 0, 1}). Each gets three one-sided tests against its margin ``m`` (docs/gating.md):

* **within the margin** (non-inferiority, a guardrail): H0 ``E[d] >= m`` rejected when the upper bound at
  ``1 - alpha`` is below ``m``. Every guardrail at ``alpha`` itself, no split: the run is green only when
  all of them are rejected (an intersection-union test), so its chance of passing a model worse by the
  margin on any one of them is at most ``alpha``;
* **regressed** (harm): H0 ``E[d] <= m`` rejected when the lower bound at ``1 - alpha / tests`` is above
  ``m`` (Bonferroni over every group and statistic: red means shown worse, whatever the other groups do);
* **improved**: the upper bound at ``1 - alpha / tests`` below ``-m`` (the ratchet).

Rates use Tango's asymptotic score interval for a difference of paired proportions (Tango 1998, *Stat Med*
17:891; recommended by Fagerland, Lydersen & Laake 2014, *Stat Med* 33:2850), which does not
collapse to a point when no pair differs; the mean metric uses the paired bootstrap
(:func:`~.comparison.paired_bootstrap`), which needs :data:`MIN_TESTED` samples to mean anything.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from ..errors import InvalidArgumentError
from .policy import above_margin

__all__ = ["DEFAULT_POWER", "HSD_GAMMA", "MIN_TESTED", "SPENDING", "STATUSES", "classify", "group_sequential_bounds",
           "normal_cdf", "normal_z", "paired_rate", "planned_size", "rate_bound", "rate_planned_size", "spent"]

#: The fewest paired samples a group's statistics are tested on: below it the bootstrap of the mean metric
#: (each resample a handful of values) has no stated error rate, and one sample moves a rate by more than
#: any margin. Such a group is *not shown*, with its planned size, never decided either way.
MIN_TESTED = 30

#: The power :func:`planned_size` plans for (``--violin-power``): the chance that a model that did not change
#: is shown within the margin.
DEFAULT_POWER = 0.8

#: A statistic's outcome: ``regressed`` (shown worse than its margin), ``improved`` (shown better by more than
#: it; also within it), ``within`` (shown within it), ``not-shown`` (neither), ``harm-only`` (a statistic
#: that is not a guardrail of its group: tested for harm alone, never "within"), ``not-compared`` (no samples).
STATUSES = ("regressed", "improved", "within", "not-shown", "harm-only", "not-compared")

_NORMAL = NormalDist()


def normal_z(alpha: float) -> float:
    """The standard normal quantile at ``1 - alpha`` (one-sided critical value)."""
    return _NORMAL.inv_cdf(1.0 - float(alpha))


def normal_cdf(x: float) -> float:
    """The standard normal distribution function at ``x``."""
    return _NORMAL.cdf(float(x))


def paired_rate(worse: int, better: int, n: int) -> tuple[float, float]:
    """``(estimate, sd)`` of a rate's paired difference from its ``worse`` (0 -> 1) and ``better`` (1 -> 0)
    pairs among ``n`` (at least 2): the mean of ``d`` in {-1, 0, 1} and its sample standard deviation."""
    estimate = (worse - better) / n
    return estimate, math.sqrt(max(0.0, (worse + better) / n - estimate * estimate) * n / (n - 1))


def classify(*, harm_low: float, high: float, bound: float, margin: float, guardrail: bool = True,
             tested: bool = True) -> str:
    """A statistic's status (:data:`STATUSES`) from its harm lower bound, its improvement upper bound
    ``high`` (both at ``1 - alpha / tests``) and its non-inferiority bound (at ``1 - alpha``); ties go by
    :func:`~.policy.above_margin`. ``tested=False`` (too few samples) is ``not-shown``."""
    if not guardrail and not tested:
        return "harm-only"  # no guardrail of its group: nothing to show within, and too few to test harm
    if not tested:
        return "not-shown"
    if above_margin(harm_low, margin):
        return "regressed"
    if not guardrail:
        return "harm-only"
    if above_margin(-high, margin):
        return "improved"
    # within: H0 "worsening >= margin" rejected, so the bound must be below the margin, not at it
    return "within" if above_margin(margin, bound) else "not-shown"


# --------------------------------------------------------------------------- rates: Tango's score interval


def _tango_z(delta: float, worse: int, better: int, n: int) -> float:
    """Tango's score statistic of H0 ``E[d] = delta`` for ``worse`` pairs (0 -> 1), ``better`` pairs
    (1 -> 0) among ``n``: decreasing in ``delta``. The variance uses the maximum-likelihood estimate of
    the better pairs' share under H0 (the positive root of Tango's quadratic)."""
    a = 2.0 * n
    b = -worse - better + (2.0 * n - worse + better) * delta
    c = -better * delta * (1.0 - delta)
    p_better = (-b + math.sqrt(max(0.0, b * b - 4.0 * a * c))) / (2.0 * a)
    variance = n * (2.0 * p_better + delta * (1.0 - delta))
    diff = worse - better - n * delta
    if variance <= 0.0:
        return math.copysign(math.inf, diff) if diff else 0.0
    return diff / math.sqrt(variance)


def rate_bound(worse: int, better: int, n: int, *, alpha: float, side: str) -> float:
    """One-sided Tango score bound of the expected paired difference of two proportions at ``1 - alpha``:
    ``side="upper"`` (the worsening is below it) or ``"lower"`` (above it). ``worse`` pairs went 0 -> 1,
    ``better`` ones 1 -> 0, out of ``n`` pairs. With no pair different it is not 0 but about
    ``z^2 / (n + z^2)``: no change seen on ``n`` samples rules out only changes above that."""
    worse, better, n = int(worse), int(better), int(n)
    if n < 1 or worse < 0 or better < 0 or worse + better > n:
        raise InvalidArgumentError(f"need 0 <= worse + better <= n with n >= 1, got worse={worse}, "
                                   f"better={better}, n={n}")
    if side not in ("upper", "lower"):
        raise InvalidArgumentError(f"side must be 'upper' or 'lower', got {side!r}")
    if not 0.0 < alpha < 1.0:
        raise InvalidArgumentError(f"alpha must lie in (0, 1), got {alpha!r}")
    z = normal_z(alpha)
    estimate = (worse - better) / n
    if side == "upper":
        if estimate >= 1.0:
            return 1.0
        lo, hi = estimate, 1.0   # z(lo) >= 0 > -z: the bound is where the statistic falls to -z
        target = -z
    else:
        if estimate <= -1.0:
            return -1.0
        lo, hi = -1.0, estimate
        target = z
    for _ in range(64):  # bisection to well below the 1e-9 tie tolerance
        mid = 0.5 * (lo + hi)
        above = _tango_z(mid, worse, better, n) > target
        lo, hi = (mid, hi) if above else (lo, mid)
    return 0.5 * (lo + hi)


# --------------------------------------------------------------------------- planning


def planned_size(sd: float, margin: float, *, alpha: float, power: float = DEFAULT_POWER,
                 floor: int = MIN_TESTED) -> int | None:
    """Paired samples for the non-inferiority test at ``alpha`` to show a statistic whose expected
    worsening is 0 within ``margin`` with probability ``power``, given the per-sample ``sd`` of ``d``
    (normal approximation: ``((z_alpha + z_power) sd / margin)^2``), at least ``floor``; None when no
    number of samples can (a margin of 0)."""
    if not (margin > 0.0 and math.isfinite(sd)):
        return None
    need = ((normal_z(alpha) + normal_z(1.0 - power)) * max(0.0, sd) / margin) ** 2
    return max(int(floor), int(math.ceil(need)))


def rate_planned_size(discordant: float, margin: float, *, alpha: float, power: float = DEFAULT_POWER,
                      floor: int = MIN_TESTED) -> int | None:
    """:func:`planned_size` of a rate whose pairs differ with probability ``discordant`` (the variance of
    ``d`` when nothing changed), and at least what the score bound needs when no pair differs (``z^2 (1 -
    m) / m``)."""
    if not margin > 0.0:
        return None
    z = normal_z(alpha)
    none_differ = int(math.ceil(z * z * (1.0 - margin) / margin))
    need = planned_size(math.sqrt(max(0.0, float(discordant))), margin, alpha=alpha, power=power, floor=floor)
    return max(none_differ, need or 0, int(floor))


# --------------------------------------------------------------------------- group-sequential boundaries


#: The spending functions :func:`spent` knows: ``"hsd"``, Hwang, Shih & DeCani (1990) with ``gamma = -4``, the
#: gate's (an O'Brien-Fleming-like shape that spends a little more early: gsDesign's default upper bound), and
#: ``"obrien-fleming"``, Lan & DeMets (1983).
SPENDING = ("hsd", "obrien-fleming")

#: The Hwang-Shih-DeCani shape parameter of the gate's spending.
HSD_GAMMA = -4.0


def spent(t: float, alpha: float, spending: str = "hsd") -> float:
    """The error rate spent by information fraction ``t``, ``alpha`` at ``t = 1``: ``alpha (1 - e^{-gamma t})
    / (1 - e^{-gamma})`` (``"hsd"``) or ``2 - 2 Phi(z_{alpha/2} / sqrt(t))`` (``"obrien-fleming"``, one-sided);
    both spend almost nothing early, so the last look keeps nearly all of ``alpha``."""
    if spending not in SPENDING:
        raise InvalidArgumentError(f"spending must be one of {', '.join(SPENDING)}, got {spending!r}")
    if t <= 0.0:
        return 0.0
    t = min(1.0, float(t))
    if spending == "hsd":
        return alpha * (1.0 - math.exp(-HSD_GAMMA * t)) / (1.0 - math.exp(-HSD_GAMMA))
    return 2.0 - 2.0 * _NORMAL.cdf(normal_z(alpha / 2.0) / math.sqrt(t))


_STEP = 0.01   # the grid of the Brownian motion's values (standard deviations of W(1))
_REACH = 10.0  # the grid spans [-_REACH, _REACH]
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _upper_tail(x: np.ndarray) -> np.ndarray:
    """``1 - Phi(x)`` elementwise, exact (no SciPy)."""
    return 0.5 * _erfc(x / math.sqrt(2.0)).astype(np.float64)


@lru_cache(maxsize=256)
def group_sequential_bounds(fractions: tuple, alpha: float, spending: str = "hsd") -> tuple:
    """Critical values ``c_k`` of a one-sided group-sequential test at looks ``fractions`` (increasing, in
    (0, 1], the share of the group's samples seen) with :func:`spent` spending: under H0 the chance that
    ``Z_k >= c_k`` at some look is ``alpha`` (``spent(t_K)`` when the last look is before 1), each look
    spending its increment of ``spending``. ``Z_k`` is the standardised sum at look ``k``, a Brownian motion at ``t_k``
    (independent increments); the crossing probabilities are integrated numerically on a grid (the
    recursion of Armitage, McPherson & Rowe 1969)."""
    ts = [float(t) for t in fractions]
    if not ts or any(not 0.0 < t <= 1.0 for t in ts) or any(b <= a for a, b in zip(ts, ts[1:])):
        raise InvalidArgumentError(f"fractions must increase within (0, 1], got {fractions!r}")
    x = np.arange(-_REACH, _REACH + _STEP / 2, _STEP)
    density = None   # sub-density of W(t_k) on the paths that have not crossed, on the grid x
    previous_t, previous_spent, bounds = 0.0, 0.0, []
    for t in ts:
        sd = math.sqrt(t - previous_t)
        target = spent(t, alpha, spending) - previous_spent
        if density is None:
            def cross(c):
                return float(_upper_tail(np.array([c]))[0])
            step_density = np.exp(-0.5 * (x / sd) ** 2) / (sd * math.sqrt(2.0 * math.pi))
        else:
            def cross(c, t=t, sd=sd, density=density):
                return float(np.sum(density * _upper_tail((c * math.sqrt(t) - x) / sd)) * _STEP)
            half = int(math.ceil(8.0 * sd / _STEP))  # a symmetric kernel of odd length keeps "same" centred
            kernel_x = np.arange(-half, half + 1) * _STEP
            kernel = np.exp(-0.5 * (kernel_x / sd) ** 2) / (sd * math.sqrt(2.0 * math.pi)) * _STEP
            step_density = np.convolve(density, kernel, mode="same")
        lo, hi = 0.0, 12.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if cross(mid) > target else (lo, mid)
        c = 0.5 * (lo + hi)
        bounds.append(c)
        # the paths below the boundary go on; the grid cell the boundary cuts counts in proportion
        density = step_density * np.clip((c * math.sqrt(t) - x) / _STEP + 0.5, 0.0, 1.0)
        previous_t, previous_spent = t, spent(t, alpha, spending)
    return tuple(bounds)
