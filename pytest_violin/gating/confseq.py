"""An anytime-valid confidence sequence for the mean of a finite population of paired differences.

What is implemented
-------------------
The betting confidence sequence for sampling *without replacement* of
Waudby-Smith & Ramdas, "Confidence sequences for sampling without
replacement" (NeurIPS 2020, section 3), with the approximate-GRAPA bets of
Waudby-Smith & Ramdas, "Estimating means of bounded random variables by
betting" (JRSS-B 86(1), 2024, section 5.3), one-sided on each side:

* the population is ``N`` paired differences ``d = new - old`` in
  ``[low, high]``, mapped to ``y = (d - low) / (high - low)`` in [0, 1]. Metrics
  are in [0, 1], so ``d`` is in [-1, 1]; the baseline values are known, so a
  group whose worst baseline value is ``b_max`` and best ``b_min`` has every
  ``d`` in ``[-b_max, 1 - b_min]`` (against a perfect baseline, [0, 1]): a
  narrower range lets the bets be larger, which is what makes a regression
  against a good baseline show after a few samples;
* ``known`` of them may be known exactly before the stream starts (cached
  images: free, scored first); the rest, ``M`` values, arrive one at a time
  in a uniformly random order (a seeded permutation);
* for a candidate population mean ``m`` of ``d``, the remaining values must
  average ``c_t(m) = (M * m_R - S_{t-1}) / (M - t + 1)`` (``m_R`` the mean the
  stream needs, ``S`` what it has shown): under the hypothesis, ``y_t`` has
  that conditional mean, so the capital
  ``K+_t(m) = prod_i (1 + l_i (y_i - c_i(m)))`` (``l_i >= 0`` chosen from the
  past only) is a non-negative supermartingale whenever the true mean is
  ``<= m``, and ``K-_t(m) = prod_i (1 + l_i (c_i(m) - y_i))`` whenever it is
  ``>= m``. Ville's inequality: ``P(sup_t K+_t(m) >= 1/alpha) <= alpha``, at
  every look, with any stopping rule;
* the confidence sequence is every ``m`` of a grid (``GRID`` points plus the
  gate's margin) not yet rejected, intersected over time (once rejected a
  value stays rejected) and with what the values already seen prove
  (the unseen ones lie in ``[low, high]``). When the stream is exhausted the interval
  is the exact mean.

So the lower bound (from ``K+`` at level ``alpha_low``) and the upper bound
(from ``K-`` at ``alpha_high``) are each valid at every look; the gate
(:mod:`.sequential`) splits its error rate over its groups (Bonferroni).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["GRID", "BET_CAP", "MeanSequence"]

#: Candidate means of ``d`` tested at once, spread over ``[low, high]`` (the
#: gate's margin is added): a resolution of 0.001 on [-1, 1].
GRID = 2001

#: The largest bet, as a share of what keeps the capital non-negative
#: (WSR 2024 truncate at ``c / m`` with ``c`` in [1/2, 3/4]; with a
#: variance-adaptive bet a larger ``c`` only matters when the stream barely
#: varies, where it is what lets a zero difference be certified early).
BET_CAP = 0.9


def _check_alpha(name: str, value) -> float:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1):
        raise InvalidArgumentError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


class MeanSequence:
    """Confidence sequence for the mean paired difference of one group.

    Parameters
    ----------
    size : int
        Members of the population (>= 1): samples in both the run and the
        baseline, same definition, judged in the baseline.
    margin : float
        The gate's margin (added to the grid, so the decisions are exact).
    alpha_low, alpha_high : float
        Error rates of the lower and the upper bound, each in (0, 1).
    known : sequence of float, optional
        Differences known before the stream starts (cached images).
    low, high : float, optional
        Bounds every difference of the population lies in (default -1 and 1;
        ``high - low >= 1`` since metrics span [0, 1]).

    Notes
    -----
    :meth:`add` takes the stream's values in the order they were drawn; the
    caller keeps that order (the gate buffers answers that arrive early).
    """

    def __init__(self, size: int, margin: float, *, alpha_low: float, alpha_high: float,
                 known=(), low: float = -1.0, high: float = 1.0):
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise InvalidArgumentError(f"size must be an int >= 1, got {size!r}")
        if not (isinstance(margin, (int, float)) and math.isfinite(margin) and -1 <= margin <= 1):
            raise InvalidArgumentError(f"margin must be a finite number in [-1, 1], got {margin!r}")
        self.alpha_low = _check_alpha("alpha_low", alpha_low)
        self.alpha_high = _check_alpha("alpha_high", alpha_high)
        if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and -1 <= low <= 0
                and 0 < high <= 1 and high - low >= 1 - 1e-12):
            raise InvalidArgumentError(f"low and high must bound the differences: -1 <= low <= 0 < high "
                                       f"<= 1 with high - low >= 1, got low={low!r}, high={high!r}")
        self.low, self.high = float(low), float(high)
        known = np.asarray(list(known), dtype=np.float64)
        if known.size > size or (known.size and not np.all((known >= low - 1e-12) & (known <= high + 1e-12))):
            raise InvalidArgumentError(
                f"known must hold at most size={size} differences in [{low:g}, {high:g}], got "
                f"{known.size} values")
        self.size = size
        self.margin = float(margin)
        points = max(3, int(round((self.high - self.low) / 2.0 * (GRID - 1))) + 1)
        self.grid = np.unique(np.concatenate([np.linspace(self.low, self.high, points), [self.margin]]))
        self._known_sum = float(known.sum())
        self.remaining = size - int(known.size)  # M: the values still to stream
        self.seen = 0
        self._sum_y = 0.0  # S: what the stream has shown (y scale)
        # the stream's target mean for each candidate m (y scale); outside [0, 1] the
        # hypothesis is decided by what is known alone
        if self.remaining:
            m_r = (size * self.grid - self._known_sum) / self.remaining
            self._target = (m_r - self.low) / (self.high - self.low)
        else:
            self._target = np.zeros_like(self.grid)
        self._log_up = np.zeros_like(self.grid)    # log K+ (evidence: mean > m)
        self._log_down = np.zeros_like(self.grid)  # log K- (evidence: mean < m)
        self._above = np.zeros(self.grid.shape, dtype=bool)  # rejected: the mean is > m
        self._below = np.zeros(self.grid.shape, dtype=bool)  # rejected: the mean is < m
        # the plug-in variance of WSR 2024 (5.3), with a prior of 1/4 (the largest variance)
        self._mu_hat = 0.5
        self._var_sum = 0.25
        self._update_certain()

    # -- the stream -------------------------------------------------------
    def add(self, d: float) -> None:
        """Take the next value of the stream (a difference in ``[low, high]``)."""
        d = float(d)
        if not (math.isfinite(d) and self.low - 1e-9 <= d <= self.high + 1e-9):
            raise InvalidArgumentError(f"a paired difference must be a finite number in "
                                       f"[{self.low:g}, {self.high:g}], got {d!r}")
        d = min(self.high, max(self.low, d))
        if self.seen >= self.remaining:
            raise InvalidArgumentError(f"the stream holds {self.remaining} values; a value past them was added")
        y = (d - self.low) / (self.high - self.low)
        left = self.remaining - self.seen  # values not yet seen, this one included
        c = (self.remaining * self._target - self._sum_y) / left  # conditional mean under each m
        live = (c > 0.0) & (c < 1.0)
        t = self.seen + 1
        var = self._var_sum / t
        # the mean so far against each candidate, shrunk toward the candidate itself (one pseudo
        # value at c, so the first bet is 0): a fixed prior of 1/2 (WSR) would bet the wrong way
        # for dozens of samples when the differences sit at one end of their range (d = 0
        # against a perfect baseline is y = 0)
        gap = (self._sum_y - self.seen * c) / t
        # aGRAPA: l = gap / (var + gap^2), truncated to [0, BET_CAP / c] on the
        # upper side and [0, BET_CAP / (1 - c)] on the lower side, so every factor stays > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            bet = gap / (var + gap * gap)
            up = np.clip(bet, 0.0, np.where(live, BET_CAP / np.maximum(c, 1e-12), 0.0))
            down = np.clip(-bet, 0.0, np.where(live, BET_CAP / np.maximum(1.0 - c, 1e-12), 0.0))
            self._log_up += np.where(live, np.log1p(up * (y - c)), 0.0)
            self._log_down += np.where(live, np.log1p(down * (c - y)), 0.0)
        self._above |= self._log_up >= math.log(1.0 / self.alpha_low)
        self._below |= self._log_down >= math.log(1.0 / self.alpha_high)
        self.seen = t
        self._sum_y += y
        self._var_sum += (y - self._mu_hat) ** 2
        self._mu_hat = self._sum_y / t  # the plain mean of what was seen (1/2 before anything)
        self._update_certain()

    def _update_certain(self) -> None:
        """Reject what the values already seen prove: the unseen ones lie in ``[low, high]``."""
        unseen = self.remaining - self.seen
        span = self.high - self.low
        shown = self._known_sum + (span * self._sum_y + self.low * self.seen)  # sum of d seen so far
        low = (shown + self.low * unseen) / self.size
        high = (shown + self.high * unseen) / self.size
        self._above |= self.grid < low - 1e-12
        self._below |= self.grid > high + 1e-12
        self._exact = (shown / self.size) if unseen == 0 else None

    # -- what is known ------------------------------------------------------
    @property
    def exhausted(self) -> bool:
        """True when every member has been seen (the mean is known exactly)."""
        return self.seen >= self.remaining

    @property
    def interval(self) -> tuple:
        """``(low, high)``: the mean is above ``low`` (at ``1 - alpha_low``) and below ``high``
        (at ``1 - alpha_high``), at this look and every later one; exact when exhausted."""
        if self._exact is not None:
            return (self._exact, self._exact)
        grid = self.grid
        # the lowest grid value not rejected from below, the highest not rejected from above
        open_low = np.flatnonzero(~self._above)
        open_high = np.flatnonzero(~self._below)
        low = grid[open_low[0] - 1] if open_low.size and open_low[0] > 0 else (
            self.low if open_low.size else self.high)
        high = grid[open_high[-1] + 1] if open_high.size and open_high[-1] + 1 < grid.size else (
            self.high if open_high.size else self.low)
        return (float(low), float(max(high, low)))

    @property
    def above_margin(self) -> bool:
        """True when the mean is shown to be above the margin (every value up to it rejected)."""
        if self._exact is not None:
            return self._exact > self.margin
        upto = self.grid <= self.margin
        return bool(np.all(self._above[upto]))

    @property
    def below_margin(self) -> bool:
        """True when the mean is shown to be at or below the margin (every value above it rejected)."""
        if self._exact is not None:
            return self._exact <= self.margin
        beyond = self.grid > self.margin
        at = self.grid == self.margin
        return bool(np.all(self._below[beyond]) and np.all(self._below[at]))
