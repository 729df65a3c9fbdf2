"""The shape family: one solid circle, square or triangle at a size and place (spec kind ``shape``)."""

from __future__ import annotations

from .base import TaskFamily, pct, plain_color

__all__ = ["FAMILY", "METRICS", "LIMITS"]

METRICS = ("iou", "dist", "size", "shape", "purity")

#: docs/thresholds.md: JPEG, sensor noise and a 2% offset pass; 5% of the width fails.
LIMITS = {"iou": 0.15, "dist": 0.015, "size": 0.10, "shape": 0.02, "purity": 0.05, "mean": 0.06}


def render(spec, width: int, height: int):
    """The shape in its bounding box ``bbox`` on ``bg``."""
    from ..suite.drawing import render_shape

    return render_shape(spec["shape"], spec["bbox"], width, height, spec["fg"], spec["bg"])


def score(sample, image, profile: str):
    """Shape metrics against the rendered ground truth."""
    from ..metrics.shape import shape_metrics

    return shape_metrics(image, sample.expected(), profile=profile)


def describe(sample) -> str | None:
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


FAMILY = TaskFamily(
    name="shape", metric_names=METRICS, default_limits=LIMITS,
    kinds=("shape",), render=render, score=score, describe=describe,
    strict_thresholds=True,
)
