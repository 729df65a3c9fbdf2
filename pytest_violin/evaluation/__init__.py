"""Evaluate a model from Python: notebooks and training loops.

:func:`evaluate` runs a suite against a model (a spec string, an adapter, or
any callable taking a request) on the plugin's own code path (the runner,
the cache, the call cap, the judging of each sample, the report writers) and
returns an :class:`EvaluationRun`: the paper's tables, per-task means and pass
rates, ``scalars()`` for experiment trackers, ``save(DIR)`` (a
``--violin-report`` folder plus a baseline) and ``compare(baseline)`` (the
gate's verdict). :func:`trend` lays several runs side by side in the order
given (checkpoints, releases).
"""

from __future__ import annotations

from .api import evaluate
from .run import EvaluationRun, trend

__all__ = ["EvaluationRun", "evaluate", "trend"]
