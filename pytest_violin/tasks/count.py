"""The dot-counting family: ``count`` square dots of ``dot`` pixels (spec kind ``dots``).

No default limits of its own: every metric and the mean get
:data:`~pytest_violin.tasks.base.DEFAULT_EXTRA_LIMIT`.
"""

from __future__ import annotations

from .base import TaskFamily

__all__ = ["FAMILY", "METRICS"]

METRICS = ("count", "size")


def render(spec, width: int, height: int):
    """The dots in ``fg`` at their ``positions`` on ``bg``."""
    from ..suite.drawing import render_dots

    return render_dots(spec["positions"], spec["dot"], width, height, spec["fg"], spec["bg"])


def score(sample, image, profile: str):
    """How far the number of dots and their sizes are from the spec."""
    from ..metrics.geometric import count_metrics

    spec = sample.spec
    return count_metrics(image, count=spec["count"], dot=spec["dot"], fg=spec["fg"],
                         bg=spec["bg"], profile=profile)


FAMILY = TaskFamily(
    name="count", metric_names=METRICS,
    kinds=("dots",), render=render, score=score,
    score_kinds=("dots",), scores_any_kind=False,
)
