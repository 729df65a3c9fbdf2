"""The border family: a frame of ``thickness`` pixels along all four edges (spec kind ``border``).

No default limits of its own: every metric and the mean get
:data:`~pytest_violin.tasks.base.DEFAULT_EXTRA_LIMIT`.
"""

from __future__ import annotations

from .base import TaskFamily

__all__ = ["FAMILY", "METRICS"]

METRICS = ("thickness", "spread", "rgb_ed")


def render(spec, width: int, height: int):
    """The frame in ``fg`` on ``bg``."""
    from ..suite.drawing import render_border

    return render_border(spec["thickness"], width, height, spec["fg"], spec["bg"])


def score(sample, image, profile: str):
    """Thickness and evenness of the four sides, and the RGB distance."""
    from ..metrics.geometric import border_metrics

    spec = sample.spec
    return border_metrics(image, sample.expected(), thickness=spec["thickness"],
                          fg=spec["fg"], bg=spec["bg"], profile=profile)


FAMILY = TaskFamily(
    name="border", metric_names=METRICS,
    kinds=("border",), render=render, score=score,
    score_kinds=("border",), scores_any_kind=False,
)
