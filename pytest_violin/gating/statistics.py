"""The paired bootstrap behind every regression verdict."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from .policy import DEFAULT_RESAMPLES
from ..errors import InvalidArgumentError

__all__ = ["paired_bootstrap"]



def _group_seed(seed: int, key: str) -> list[int]:
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return [int(seed) & 0xFFFFFFFF, int.from_bytes(digest, "big")]


def paired_bootstrap(old, new, *, resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95,
                     seed: int | Sequence[int] = 0) -> tuple[float, float]:
    """Percentile interval of ``mean(new - old)`` by a paired bootstrap.

    Samples (pairs) are drawn with replacement; the pairing keeps the
    per-sample difficulty out of the noise, so a model that is exactly as
    good on average is not flagged.

    Parameters
    ----------
    old, new : array_like of float
        Per-sample values of the same samples in the same order.
    resamples : int, optional
        Number of bootstrap resamples (default 2,000).
    confidence : float, optional
        Two-sided coverage of the interval (default 0.95).
    seed : int or sequence of int, optional
        Seed of the NumPy generator: same inputs and seed, same interval.

    Returns
    -------
    (float, float)
        Lower and upper bound. ``(nan, nan)`` for no pairs.

    Raises
    ------
    ValueError
        Different lengths, ``resamples < 1`` or ``confidence`` outside (0, 1).
    """
    d = np.asarray(new, dtype=np.float64) - np.asarray(old, dtype=np.float64)
    if np.asarray(old).shape != np.asarray(new).shape or d.ndim != 1:
        raise InvalidArgumentError(f"old and new must be 1-d and of one length; got shapes "
                         f"{np.asarray(old).shape} and {np.asarray(new).shape}")
    if int(resamples) < 1:
        raise InvalidArgumentError(f"resamples must be >= 1, got {resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"confidence must lie in (0, 1), got {confidence!r}")
    n = d.size
    if n == 0:
        return (float("nan"), float("nan"))
    if n == 1 or np.all(d == d[0]):
        return (float(d[0]), float(d[0]))
    rng = np.random.default_rng(seed)
    values, counts = np.unique(d, return_counts=True)
    if values.size <= _FEW_VALUES:
        # few distinct differences (pass/fail and refusal indicators): how often each value is
        # drawn is multinomial, the same distribution as drawing the pairs, at a cost per
        # resample of the distinct values instead of the pairs
        drawn = rng.multinomial(n, counts / n, size=int(resamples))
        means = drawn @ values / n
    else:
        means = _resampled_means(rng, d, int(resamples))
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


#: At most this many distinct differences take the multinomial path of :func:`paired_bootstrap`.
_FEW_VALUES = 16


def _resampled_means(rng, d, resamples: int):
    n = d.size
    means = np.empty(resamples, dtype=np.float64)
    chunk = max(1, 2_000_000 // n)  # bounded memory: ~16 MB of indices per block
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = d[idx].mean(axis=1)
    return means
