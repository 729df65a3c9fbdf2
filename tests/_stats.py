"""Statistics helpers the gate's tests share."""

from __future__ import annotations

import math

__all__ = ["binomial_upper"]


def binomial_upper(n: int, p: float, tail: float = 1e-6) -> int:
    """The smallest k with P(Binomial(n, p) > k) < tail: how many of n runs may fail by chance
    when each fails with probability p, before a test calls it a broken guarantee."""
    total = 0.0
    for k in range(n + 1):
        total += math.comb(n, k) * p ** k * (1 - p) ** (n - k)
        if 1.0 - total < tail:
            return k
    return n
