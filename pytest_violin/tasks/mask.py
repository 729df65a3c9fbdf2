"""The mask family: keep the input image where the mask is white, pure black elsewhere (spec kind ``mask``).

Its inputs are the source photograph and the mask (white = keep); both
are rendered from the spec (``photo``, ``lift``, ``mask_kind``,
``mask_seed``).
"""

from __future__ import annotations

from .base import TaskFamily, pct

__all__ = ["FAMILY", "METRICS", "LIMITS"]

METRICS = ("iou", "dist", "biou", "leak", "edge")

#: docs/thresholds.md: JPEG q90 passes; a 1% mask shift, a feathered edge or
#: a gray (not black) masked area fails.
LIMITS = {"iou": 0.02, "dist": 0.01, "biou": 0.10, "leak": 0.02, "edge": 0.05, "mean": 0.03}


def render(spec, width: int, height: int):
    """The source photograph with the masked pixels made pure black."""
    from ..suite.drawing import apply_mask, render_mask_inputs

    source, keep = render_mask_inputs(spec, width, height)
    return apply_mask(source, keep)


def inputs(spec, width: int, height: int) -> tuple:
    """``(source, mask_rgb)``: the photograph and the mask as black/white RGB."""
    from ..suite.drawing import render_mask_inputs
    from ..suite.masks import mask_to_rgb

    source, keep = render_mask_inputs(spec, width, height)
    return (source, mask_to_rgb(keep))


def score(sample, image, profile: str):
    """Mask metrics against the rendered ground truth."""
    from ..metrics.mask import mask_metrics

    return mask_metrics(image, sample.expected(), profile=profile)


def _keep_mask(sample):
    import numpy as np

    inputs = sample.inputs
    if len(inputs) < 2:
        return None
    return np.asarray(inputs[1])[:, :, 0] >= 128


def describe(sample) -> str:
    """``the input image with the N pixels (x%) where the mask is 0 made pure black, ...``."""
    keep = _keep_mask(sample)
    if keep is not None:
        black = int((~keep).sum())
        return (f"the input image with the {black} pixels ({pct(black / keep.size)}) "
                f"where the mask is 0 made pure black, the rest unchanged")
    return "the input image, pure black where the mask is 0"


FAMILY = TaskFamily(
    name="mask", metric_names=METRICS, default_limits=LIMITS,
    kinds=("mask",), render=render, score=score, describe=describe, inputs=inputs,
    strict_thresholds=True, costly_render=True,
)
