"""The gate's constants: light, so that option declarations can import them."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_REGRESSION", "DEFAULT_RESAMPLES", "ERROR_VALUE", "OUTCOMES"]

#: Default ``--violin-max-regression``: an absolute worsening of the mean
#: metric (distances in [0, 1]). Justified in docs/gating.md.
DEFAULT_MAX_REGRESSION = 0.01

#: Bootstrap resamples used by :func:`~pytest_violin.gating.compare`.
DEFAULT_RESAMPLES = 2000

from ..results import NO_IMAGE_VALUE

#: The distance a judged sample without metrics counts for (no image, or a
#: refusal): the worst possible value, the one rule of :mod:`pytest_violin.results`.
ERROR_VALUE = NO_IMAGE_VALUE

#: A sample's outcomes: ``refused`` (the provider declined) fails and scores
#: like ``failed``; ``error`` (the tool or the environment failed, not the
#: model) is recorded but never compared or scored.
OUTCOMES = ("passed", "failed", "refused", "error")
