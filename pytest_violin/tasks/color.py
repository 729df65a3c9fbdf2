"""The color family: uniform color blocks (Violin v1/v2, hex codes, quadrants, fuzzy ranges).

Spec kinds: ``blocks`` (``layout``, one color per block) and ``fuzzy`` (any one color inside the RGB box
``low``..``high``; ``colors[0]`` is its centre, drawn as the ground truth).
"""

from __future__ import annotations

from .base import TaskFamily, color_words

__all__ = ["FAMILY", "LAYOUTS", "BLOCK_COUNTS", "METRICS", "LIMITS", "fuzzy_target"]

#: Block layouts of color samples and their number of blocks.
BLOCK_COUNTS = {"single": 1, "vertical": 2, "horizontal": 2, "quad": 4}
#: Layouts of color samples.
LAYOUTS = tuple(BLOCK_COUNTS)

METRICS = ("rgb_ed", "lab_00", "sd", "ced", "hf")

#: Justified, with the numbers the metrics give on synthetic cases, in docs/thresholds.md: a CIEDE2000 of 2.3
#: (one just-noticeable difference) passes; a 16-level gradient, a watermark or a neighbouring ISCC-NBS color
#: fails.
LIMITS = {"rgb_ed": 0.045, "lab_00": 0.03, "sd": 0.025, "ced": 0.005, "hf": 0.005, "mean": 0.02}


def fuzzy_target(image, low, high):
    """The nearest in-range color of every pixel (per-channel clamp).

    For a range given as two corners of an RGB box, clamping each channel is the nearest point of the box in
    Euclidean RGB, so the precision metrics measured against this target are distances to the range, and any
    in-range solid color scores 0.
    """
    import numpy as np

    lo = np.minimum(np.asarray(low, np.uint8), np.asarray(high, np.uint8))
    hi = np.maximum(np.asarray(low, np.uint8), np.asarray(high, np.uint8))
    return np.clip(image, lo, hi).astype(np.uint8)


def render(spec, width: int, height: int):
    """Blocks in their layout; a fuzzy range as its centre color."""
    from ..suite.drawing import render_blocks

    if spec["kind"] == "fuzzy":
        return render_blocks("single", [spec["colors"][0]], width, height)
    return render_blocks(spec["layout"], spec["colors"], width, height)


def score(sample, image, profile: str):
    """Color metrics against the blocks, or against the nearest in-range color."""
    from ..metrics.color import color_metrics

    spec = sample.spec
    if spec.get("kind") == "fuzzy":
        target = fuzzy_target(image, spec["low"], spec["high"])
        return color_metrics(image, target, layout="single", profile=profile)
    return color_metrics(image, sample.expected(), layout=sample.layout or "single",
                         profile=profile)


def describe(sample) -> str | None:
    """``left half #E68697 (pink), right half #3B74C0 (blue)`` (blocks only)."""
    spec = sample.spec
    if spec.get("kind") != "blocks":
        return None
    cols = [color_words(c) for c in spec["colors"]]
    layout = spec.get("layout", "single")
    if layout == "single":
        return f"one uniform color {cols[0]}"
    if layout == "vertical":
        return f"left half {cols[0]}, right half {cols[1]}"
    if layout == "horizontal":
        return f"top half {cols[0]}, bottom half {cols[1]}"
    if layout == "quad":
        return (f"quadrants top-left {cols[0]}, top-right {cols[1]}, "
                f"bottom-left {cols[2]}, bottom-right {cols[3]}")
    return None


FAMILY = TaskFamily(
    name="color", metric_names=METRICS, default_limits=LIMITS,
    kinds=("blocks", "fuzzy"), render=render, score=score, describe=describe,
    score_kinds=("fuzzy",), strict_thresholds=True,
)
