"""Violin obedience metrics: pure functions, arrays in, :class:`Metrics` out.

All metrics are distances normalized to ``[0, 1]``; 0.0 is perfect
obedience. See ``docs/metrics.md`` for every formula and parameter.
"""

from ._types import PROFILES, Metrics

__all__ = ["Metrics", "PROFILES"]
