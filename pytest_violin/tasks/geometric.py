"""The violin-extra families: area ratio (spec kind ``ratio``), border (``border``), dot counting (``dots``).

Each is measured by :mod:`pytest_violin.metrics.geometric`. Border and
counting have no default limits of their own: every metric and the mean get
:data:`~pytest_violin.tasks.base.DEFAULT_EXTRA_LIMIT`; the area ratio reuses
the color limits (docs/thresholds.md).
"""

from __future__ import annotations

from . import color
from .base import TaskFamily, color_words, pct

__all__ = ["BORDER", "COUNT", "ORIENTATIONS", "RATIO", "RATIO_LIMITS"]

#: ``vertical`` = left|right, ``horizontal`` = top/bottom.
ORIENTATIONS = ("vertical", "horizontal")

RATIO_LIMITS = {"ratio": 0.02, **color.LIMITS}


def _render_ratio(spec, width: int, height: int):
    """The first color up to pixel ``split``, the second after it."""
    from ..suite.drawing import render_ratio

    return render_ratio(spec["orientation"], spec["split"], spec["colors"], width, height)


def _score_ratio(sample, image, profile: str):
    """The share of the first color, and the color metrics of each region."""
    from ..metrics.geometric import ratio_metrics

    spec = sample.spec
    return ratio_metrics(image, sample.expected(), orientation=spec["orientation"],
                         split=spec["split"], colors=spec["colors"], profile=profile)


def _describe_ratio(sample) -> str | None:
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


RATIO = TaskFamily(
    name="ratio", metric_names=("ratio",) + color.METRICS, default_limits=RATIO_LIMITS,
    kinds=("ratio",), render=_render_ratio, score=_score_ratio, describe=_describe_ratio,
    score_kinds=("ratio",), scores_any_kind=False,
)


def _render_border(spec, width: int, height: int):
    """The frame of ``thickness`` pixels in ``fg`` on ``bg``."""
    from ..suite.drawing import render_border

    return render_border(spec["thickness"], width, height, spec["fg"], spec["bg"])


def _score_border(sample, image, profile: str):
    """Thickness and evenness of the four sides, and the RGB distance."""
    from ..metrics.geometric import border_metrics

    spec = sample.spec
    return border_metrics(image, sample.expected(), thickness=spec["thickness"],
                          fg=spec["fg"], bg=spec["bg"], profile=profile)


BORDER = TaskFamily(
    name="border", metric_names=("thickness", "spread", "rgb_ed"),
    kinds=("border",), render=_render_border, score=_score_border,
    score_kinds=("border",), scores_any_kind=False,
)


def _render_dots(spec, width: int, height: int):
    """``count`` square dots of ``dot`` pixels in ``fg`` at their ``positions`` on ``bg``."""
    from ..suite.drawing import render_dots

    return render_dots(spec["positions"], spec["dot"], width, height, spec["fg"], spec["bg"])


def _score_dots(sample, image, profile: str):
    """How far the number of dots and their sizes are from the spec."""
    from ..metrics.geometric import count_metrics

    spec = sample.spec
    return count_metrics(image, count=spec["count"], dot=spec["dot"], fg=spec["fg"],
                         bg=spec["bg"], profile=profile)


COUNT = TaskFamily(
    name="count", metric_names=("count", "size"),
    kinds=("dots",), render=_render_dots, score=_score_dots,
    score_kinds=("dots",), scores_any_kind=False,
)
