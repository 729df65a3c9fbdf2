"""An anytime-valid confidence sequence for the expected value of an i.i.d. stream of paired differences.

The betting confidence sequence of Waudby-Smith & Ramdas, "Estimating means of bounded random variables by
betting" (JRSS-B 86(1), 2024), with their approximate-GRAPA bets (section 5.3), one-sided on each side. The
differences ``d = new - old`` lie in ``[low, high]`` (``[-b_max, 1 - b_min]`` for a group whose baseline
values span ``[b_min, b_max]``: a narrower range lets the bets be larger) and are mapped to ``y = (d - low) /
(high - low)``. For a candidate mean ``m`` (``c`` on the y scale) the capital ``K+_t(m) = prod_i (1 + l_i (y_i
- c))``, with ``l_i >= 0`` chosen from the past only, is a non-negative supermartingale whenever ``E[d] <= m``
(``K-`` likewise with ``c - y_i``), so by Ville's inequality ``P(sup_t K+_t(m) >= 1/alpha) <= alpha`` at every
look, with any stopping rule. The sequence is every ``m`` of a grid (``GRID`` points plus the decision points
at the margin) not yet rejected, intersected over time. The target is the *expected* ``E[d]``, not the
realised mean of one run: a without-replacement sequence fails an unchanged model that redraws some of its
answers far more often than ``alpha`` (docs/gating.md).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidArgumentError
from .policy import TIE_TOLERANCE, above_margin

__all__ = ["GRID", "BET_CAP", "MeanSequence"]

#: Candidate means of ``d`` tested at once, spread over ``[low, high]`` (the decision points at the margin are
#: added): a resolution of 0.001 on [-1, 1].
GRID = 2001

#: The largest bet, as a share of what keeps the capital non-negative (WSR 2024 truncate at ``c / m`` with
#: ``c`` in [1/2, 3/4]; with a variance-adaptive bet a larger ``c`` only matters when the stream barely
#: varies, where it is what lets a zero difference be certified early).
BET_CAP = 0.9


def _check_alpha(name: str, value) -> float:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1):
        raise InvalidArgumentError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


class MeanSequence:
    """Confidence sequence for the expected paired difference of one group and statistic.

    ``margin`` is the gate's margin for it, in [0, 1] (``margin + TIE_TOLERANCE`` and ``margin + 2 *
    TIE_TOLERANCE`` are on the grid, so the decisions follow :func:`~.policy.above_margin` exactly);
    ``alpha_low`` / ``alpha_high`` the error rates of the lower / upper bound, in (0, 1); every difference lies
    in [``low``, ``high``] (``-1 <= low <= 0 < high <= 1``, ``high - low >= 1``: metrics span [0, 1]).
    :meth:`add` takes the values in the order they were drawn (the gate buffers answers that arrive early).
    """

    def __init__(self, margin: float, *, alpha_low: float, alpha_high: float,
                 low: float = -1.0, high: float = 1.0):
        if not (isinstance(margin, (int, float)) and not isinstance(margin, bool) and math.isfinite(margin)
                and 0 <= margin <= 1):
            raise InvalidArgumentError(f"margin must be a finite number in [0, 1], got {margin!r}")
        self.alpha_low = _check_alpha("alpha_low", alpha_low)
        self.alpha_high = _check_alpha("alpha_high", alpha_high)
        if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and -1 <= low <= 0
                and 0 < high <= 1 and high - low >= 1 - 1e-12):
            raise InvalidArgumentError(f"low and high must bound the differences: -1 <= low <= 0 < high "
                                       f"<= 1 with high - low >= 1, got low={low!r}, high={high!r}")
        self.low, self.high = float(low), float(high)
        self.margin = float(margin)
        points = max(3, int(round((self.high - self.low) / 2.0 * (GRID - 1))) + 1)
        decision = [m for m in (self.margin, self.margin + TIE_TOLERANCE, self.margin + 2 * TIE_TOLERANCE)
                    if self.low <= m <= self.high]
        self.grid = np.unique(np.concatenate([np.linspace(self.low, self.high, points), decision]))
        self._c = (self.grid - self.low) / (self.high - self.low)  # each candidate on the y scale
        self.seen = 0
        self._sum_y = 0.0
        self._log_up = np.zeros_like(self.grid)    # log K+ (evidence: the mean is > m)
        self._log_down = np.zeros_like(self.grid)  # log K- (evidence: the mean is < m)
        self._above = np.zeros(self.grid.shape, dtype=bool)  # rejected: the mean is > m
        self._below = np.zeros(self.grid.shape, dtype=bool)  # rejected: the mean is < m
        # the plug-in variance of WSR 2024 (5.3), with a prior of 1/4 (the largest variance)
        self._mu_hat = 0.5
        self._var_sum = 0.25

    # -- the stream -------------------------------------------------------
    def add(self, d: float) -> None:
        """Take the next value of the stream (a difference in ``[low, high]``)."""
        d = float(d)
        if not (math.isfinite(d) and self.low - 1e-9 <= d <= self.high + 1e-9):
            raise InvalidArgumentError(f"a paired difference must be a finite number in "
                                       f"[{self.low:g}, {self.high:g}], got {d!r}")
        d = min(self.high, max(self.low, d))
        y = (d - self.low) / (self.high - self.low)
        c = self._c
        live = (c > 0.0) & (c < 1.0)
        t = self.seen + 1
        var = self._var_sum / t
        # the mean so far against each candidate, shrunk toward the candidate itself (one pseudo value at c,
        # so the first bet is 0): a fixed prior of 1/2 (WSR) would bet the wrong way for dozens of samples
        # when the differences sit at one end of their range (d = 0 against a perfect baseline is y = 0)
        gap = (self._sum_y - self.seen * c) / t
        # aGRAPA: l = gap / (var + gap^2), truncated to [0, BET_CAP / c] on the upper side and [0, BET_CAP /
        # (1 - c)] on the lower side, so every factor stays > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            bet = gap / (var + gap * gap)
            up = np.clip(bet, 0.0, np.where(live, BET_CAP / np.maximum(c, 1e-12), 0.0))
            down = np.clip(-bet, 0.0, np.where(live, BET_CAP / np.maximum(1.0 - c, 1e-12), 0.0))
            self._log_up += np.where(live, np.log1p(up * (y - c)), 0.0)
            self._log_down += np.where(live, np.log1p(down * (c - y)), 0.0)
        self._above |= self._log_up >= math.log(1.0 / self.alpha_low)
        self._below |= self._log_down >= math.log(1.0 / self.alpha_high)
        # the ends of the range: a mean of `low` means every value is `low`, so one value above it rejects it
        # for sure (and alike at `high`)
        self._above |= (c <= 0.0) & (y > 1e-12)
        self._below |= (c >= 1.0) & (y < 1.0 - 1e-12)
        self.seen = t
        self._sum_y += y
        self._var_sum += (y - self._mu_hat) ** 2
        self._mu_hat = self._sum_y / t  # the plain mean of what was seen (1/2 before anything)

    # -- what is known ------------------------------------------------------
    @property
    def mean(self) -> float | None:
        """The plain mean of the values seen (None before any): a point estimate, not a bound."""
        if not self.seen:
            return None
        return self.low + (self.high - self.low) * self._sum_y / self.seen

    @property
    def interval(self) -> tuple:
        """``(low, high)``: the expected difference is above ``low`` (at ``1 - alpha_low``) and
        below ``high`` (at ``1 - alpha_high``), at this look and every later one."""
        grid = self.grid
        # the highest grid value rejected with every one below it, the lowest rejected with every one above it
        open_low = np.flatnonzero(~self._above)
        open_high = np.flatnonzero(~self._below)
        low = grid[open_low[0] - 1] if open_low.size and open_low[0] > 0 else (
            self.low if open_low.size else self.high)
        high = grid[open_high[-1] + 1] if open_high.size and open_high[-1] + 1 < grid.size else (
            self.high if open_high.size else self.low)
        return (float(low), float(max(high, low)))

    @property
    def above_margin(self) -> bool:
        """True when the expected difference is shown to be above the margin (tie rule of
        :func:`~.policy.above_margin`: the lower bound must exceed it by more than the tolerance)."""
        return above_margin(self.interval[0], self.margin)

    @property
    def below_margin(self) -> bool:
        """True when the expected difference is shown to be at or below the margin (the upper bound
        is not above it, by the same rule)."""
        return not above_margin(self.interval[1], self.margin)
