"""Dispatch from a sample to the metric functions of its task."""

from __future__ import annotations

import numpy as np

from ..errors import SuiteError

__all__ = ["score_image", "fuzzy_target"]


def fuzzy_target(image: np.ndarray, low, high) -> np.ndarray:
    """The nearest in-range color of every pixel (per-channel clamp).

    For a range given as two corners of an RGB box, clamping each channel
    is the nearest point of the box in Euclidean RGB, so the precision
    metrics measured against this target are distances to the range, and
    any in-range solid color scores 0.
    """
    lo = np.minimum(np.asarray(low, np.uint8), np.asarray(high, np.uint8))
    hi = np.maximum(np.asarray(low, np.uint8), np.asarray(high, np.uint8))
    return np.clip(image, lo, hi).astype(np.uint8)


def score_image(sample, image: np.ndarray, profile: str):
    """Score an RGB uint8 image of the sample's size (see :meth:`Sample.score`)."""
    from ..metrics import extra
    from ..metrics.color import color_metrics

    spec = sample.spec
    kind = spec.get("kind")
    if kind == "fuzzy":
        target = fuzzy_target(image, spec["low"], spec["high"])
        return color_metrics(image, target, layout="single", profile=profile)
    if kind == "ratio":
        return extra.ratio_metrics(image, sample.expected(), orientation=spec["orientation"],
                                   split=spec["split"], colors=spec["colors"], profile=profile)
    if kind == "border":
        return extra.border_metrics(image, sample.expected(), thickness=spec["thickness"],
                                    fg=spec["fg"], bg=spec["bg"], profile=profile)
    if kind == "dots":
        return extra.count_metrics(image, count=spec["count"], dot=spec["dot"], fg=spec["fg"],
                                   bg=spec["bg"], profile=profile)
    task = sample.task
    if task == "color":
        return color_metrics(image, sample.expected(), layout=sample.layout or "single",
                             profile=profile)
    if task == "shape":
        from ..metrics.shape import shape_metrics

        return shape_metrics(image, sample.expected(), profile=profile)
    if task == "mask":
        from ..metrics.mask import mask_metrics

        return mask_metrics(image, sample.expected(), profile=profile)
    raise SuiteError(f"sample {sample.id!r}: no metric for task {task!r} with spec kind "
                     f"{kind!r}; ratio, border and count samples need spec kind ratio, "
                     f"border or dots")
