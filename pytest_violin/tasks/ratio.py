"""The area-ratio family: two colors split at a given share of the width or height (spec kind ``ratio``)."""

from __future__ import annotations

from . import color
from ._words import color_words, pct
from .base import TaskFamily

__all__ = ["FAMILY", "ORIENTATIONS", "METRICS", "LIMITS"]

#: ``vertical`` = left|right, ``horizontal`` = top/bottom.
ORIENTATIONS = ("vertical", "horizontal")

METRICS = ("ratio",) + color.METRICS

#: The area-ratio task reuses the color limits (docs/thresholds.md).
LIMITS = {"ratio": 0.02, **color.LIMITS}


def render(spec, width: int, height: int):
    """The first color up to pixel ``split``, the second after it."""
    from ..suite.drawing import render_ratio

    return render_ratio(spec["orientation"], spec["split"], spec["colors"], width, height)


def score(sample, image, profile: str):
    """The share of the first color, and the color metrics of each region."""
    from ..metrics.geometric import ratio_metrics

    spec = sample.spec
    return ratio_metrics(image, sample.expected(), orientation=spec["orientation"],
                         split=spec["split"], colors=spec["colors"], profile=profile)


def describe(sample) -> str | None:
    """``left 31.5% of the width (161 px) #0000FF, the rest #FF0000``."""
    spec = sample.spec
    if spec.get("kind") != "ratio":
        return None
    cols = [color_words(c) for c in spec["colors"]]
    split = int(spec["split"])
    if spec["orientation"] == "vertical":
        return (f"left {pct(split / sample.width)} of the width ({split} px) {cols[0]}, "
                f"the rest {cols[1]}")
    return (f"top {pct(split / sample.height)} of the height ({split} px) {cols[0]}, "
            f"the rest {cols[1]}")


FAMILY = TaskFamily(
    name="ratio", metric_names=METRICS, default_limits=LIMITS,
    kinds=("ratio",), render=render, score=score, describe=describe,
    score_kinds=("ratio",), scores_any_kind=False,
)
