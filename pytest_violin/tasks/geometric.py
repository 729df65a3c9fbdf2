"""The families scored on regions: shape (spec kind ``shape``: one solid circle, square or triangle),
mask (``mask``: the input image kept where the mask is white, pure black elsewhere), and the violin-extra area
ratio (``ratio``), border (``border``) and dot counting (``dots``).

The extra ones are measured by :mod:`pytest_violin.metrics.geometric`. Border and counting have no default
limits of their own: every metric and the mean get :data:`~pytest_violin.tasks.base.DEFAULT_EXTRA_LIMIT`; the
area ratio reuses the color limits (docs/thresholds.md).
"""

from __future__ import annotations

from . import color
from .base import TaskFamily, color_words, pct, plain_color

__all__ = ["BORDER", "COUNT", "MASK", "MASK_LIMITS", "MASK_METRICS", "ORIENTATIONS", "RATIO", "RATIO_LIMITS",
           "SHAPE", "SHAPE_LIMITS", "SHAPE_METRICS"]

SHAPE_METRICS = ("iou", "dist", "size", "shape", "purity")

#: docs/thresholds.md: JPEG, sensor noise and a 2% offset pass; 5% of the width fails.
SHAPE_LIMITS = {"iou": 0.15, "dist": 0.015, "size": 0.10, "shape": 0.02, "purity": 0.05, "mean": 0.06}


def _render_shape(spec, width: int, height: int):
    """The shape in its bounding box ``bbox`` on ``bg``."""
    from ..suite.drawing import render_shape

    return render_shape(spec["shape"], spec["bbox"], width, height, spec["fg"], spec["bg"])


def _score_shape(sample, image, profile: str):
    """Shape metrics against the rendered ground truth."""
    from ..metrics.shape import shape_metrics

    return shape_metrics(image, sample.expected(), profile=profile)


def _describe_shape(sample) -> str | None:
    """``a white circle, diameter 25% of the width (128x128 px box at x=0, y=192), ...``."""
    spec = sample.spec
    if spec.get("kind") != "shape":
        return None
    x0, y0, bw, bh = (int(v) for v in spec["bbox"])
    if spec.get("anchor"):
        where = f"anchored {spec['anchor']}"
    elif spec.get("center") is not None:
        where = f"centred at ({pct(spec['center'][0])}, {pct(spec['center'][1])})"
    else:
        where = ""
    measure = "diameter" if spec["shape"] == "circle" else "side"
    size = spec.get("size")
    size_words = f", {measure} {pct(float(size))} of the width" if size is not None else ""
    text = (f"a {plain_color(spec['fg'])} {spec['shape']}{size_words} "
            f"({bw}x{bh} px box at x={x0}, y={y0})")
    if where:
        text += f", {where}"
    return f"{text}, on {plain_color(spec['bg'])}"


SHAPE = TaskFamily(
    name="shape", metric_names=SHAPE_METRICS, default_limits=SHAPE_LIMITS,
    kinds=("shape",), render=_render_shape, score=_score_shape, describe=_describe_shape,
    strict_thresholds=True,
)


#: Inputs: the source photograph and the mask (white = keep), both rendered from the spec (``photo``,
#: ``lift``, ``mask_kind``, ``mask_seed``).
MASK_METRICS = ("iou", "dist", "biou", "leak", "edge")

#: docs/thresholds.md: JPEG q90 passes; a 1% mask shift, a feathered edge or a gray (not black) masked area
#: fails.
MASK_LIMITS = {"iou": 0.02, "dist": 0.01, "biou": 0.10, "leak": 0.02, "edge": 0.05, "mean": 0.03}


def _render_mask(spec, width: int, height: int):
    """The source photograph with the masked pixels made pure black."""
    from ..suite.drawing import apply_mask, render_mask_inputs

    source, keep = render_mask_inputs(spec, width, height)
    return apply_mask(source, keep)


def _mask_inputs(spec, width: int, height: int) -> tuple:
    """``(source, mask_rgb)``: the photograph and the mask as black/white RGB."""
    from ..suite.drawing import mask_to_rgb, render_mask_inputs

    source, keep = render_mask_inputs(spec, width, height)
    return (source, mask_to_rgb(keep))


def _score_mask(sample, image, profile: str):
    """Mask metrics against the rendered ground truth."""
    from ..metrics.mask import mask_metrics

    return mask_metrics(image, sample.expected(), profile=profile)


def _keep_mask(sample):
    import numpy as np

    inputs = sample.inputs
    if len(inputs) < 2:
        return None
    return np.asarray(inputs[1])[:, :, 0] >= 128


def _describe_mask(sample) -> str:
    """``the input image with the N pixels (x%) where the mask is 0 made pure black, ...``."""
    keep = _keep_mask(sample)
    if keep is not None:
        black = int((~keep).sum())
        return (f"the input image with the {black} pixels ({pct(black / keep.size)}) "
                f"where the mask is 0 made pure black, the rest unchanged")
    return "the input image, pure black where the mask is 0"


MASK = TaskFamily(
    name="mask", metric_names=MASK_METRICS, default_limits=MASK_LIMITS,
    kinds=("mask",), render=_render_mask, score=_score_mask, describe=_describe_mask, inputs=_mask_inputs,
    strict_thresholds=True, costly_render=True,
)


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
