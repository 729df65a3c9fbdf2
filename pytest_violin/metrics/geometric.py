"""Metrics of the violin-extra tasks: area ratio, pixel border, dot counting.

Each metric is a distance in ``[0, 1]``; 0.0 = exact obedience. Pixels are first classified to the nearer
(Euclidean RGB) of the two colors the sample uses, so the metrics work for any color pair, not only white on
black.

* :func:`ratio_metrics`: ``ratio`` = ``|r_gen - r| / max(r, 1 - r)`` where ``r`` is the expected share of the
  first color and ``r_gen`` the share of pixels nearer to it; plus the five color metrics computed on each of
  the two expected regions as single-color images and averaged.
* :func:`border_metrics`: for every row (left/right sides) and column (top/bottom sides) of the middle half of
  each side, the run length of border-color pixels from the edge. ``thickness`` = mean over the four sides of
  ``min(|median run - t| / t, 1)``; ``spread`` = mean over the sides of ``min(std(runs) / t, 1)`` (uneven or
  wavy borders); ``rgb_ed`` = mean per-pixel RGB distance to the ground truth / 441.67.
* :func:`count_metrics`: 8-connected components of dot-color pixels. ``count`` = ``min(|n_gen - n| / n, 1)``;
  ``size`` = mean over components of ``min(|area / dot^2 - 1|, 1)`` (1.0 if no component is found).

``fg`` and ``bg`` are the shape and background colors (white on black by default); border and counting accept
``profile`` for a uniform interface, both profiles computing the same.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..errors import InvalidArgumentError
from ..imaging import as_rgb8, check_same_size
from ._common import Metrics, check_profile

__all__ = ["ratio_metrics", "border_metrics", "count_metrics", "nearer_first"]

_RGB_MAX = float(np.sqrt(3 * 255.0 ** 2))


def nearer_first(image: np.ndarray, first, second) -> np.ndarray:
    """Boolean map: pixel nearer (Euclidean RGB) to ``first`` than to ``second``.

    Ties go to ``second``.
    """
    # |x - a|^2 < |x - b|^2  <=>  2 x.(b - a) < |b|^2 - |a|^2  (exact in integers)
    a = np.asarray(first, np.int64)
    b = np.asarray(second, np.int64)
    d = (b - a).astype(np.float32)
    proj = image.reshape(-1, 3).astype(np.float32) @ d
    limit = float((b * b).sum() - (a * a).sum()) / 2.0
    return (proj < limit).reshape(image.shape[:2])


def _rgb_ed(image, expected) -> float:
    diff = image.astype(np.float32) - expected.astype(np.float32)
    dist = np.sqrt((diff * diff).sum(axis=2))
    return float(min(dist.mean() / _RGB_MAX, 1.0))


def ratio_metrics(image, expected, *, orientation: str, split: int, colors,
                  profile: str = "violin") -> Metrics:
    """``ratio, rgb_ed, lab_00, sd, ced, hf`` (task ``ratio``) of an area-ratio split image.

    ``orientation`` ``vertical`` puts the first of the two ``colors`` on the left ``split`` columns,
    ``horizontal`` on the top ``split`` rows (``1 .. W-1`` or ``1 .. H-1`` pixels); ``profile`` is passed to
    :func:`pytest_violin.metrics.color_metrics`.
    """
    from . import color as _color  # metrics engineer's module

    check_profile(profile)
    img, exp = as_rgb8(image), as_rgb8(expected)
    check_same_size(img, exp)
    h, w = img.shape[:2]
    extent = w if orientation == "vertical" else h
    if orientation not in ("vertical", "horizontal"):
        raise InvalidArgumentError(f"orientation {orientation!r}; accepted: vertical, horizontal")
    if not 0 < int(split) < extent:
        raise InvalidArgumentError(f"split {split!r} must lie strictly between 0 and {extent}")
    r = int(split) / extent
    share = float(nearer_first(img, colors[0], colors[1]).mean())
    values = {"ratio": min(abs(share - r) / max(r, 1.0 - r), 1.0)}
    if orientation == "vertical":
        parts = ((img[:, :split], exp[:, :split]), (img[:, split:], exp[:, split:]))
    else:
        parts = ((img[:split], exp[:split]), (img[split:], exp[split:]))
    per = [_color.color_metrics(np.ascontiguousarray(a), np.ascontiguousarray(b),
                                layout="single", profile=profile) for a, b in parts]
    for name in per[0]:
        values[name] = sum(m[name] for m in per) / len(per)
    return Metrics(values, task="ratio", profile=profile,
                   info={"share": share, "expected_share": r})


def _runs(fg: np.ndarray) -> np.ndarray:
    """Length of the leading run of True in each row of ``fg``."""
    n = fg.shape[1]
    first_false = np.argmin(fg, axis=1)
    return np.where(fg.all(axis=1), n, first_false)


def border_metrics(image, expected, *, thickness: int, fg=(255, 255, 255), bg=(0, 0, 0),
                   profile: str = "violin") -> Metrics:
    """``thickness, spread, rgb_ed`` (task ``border``) of a border of ``fg`` on ``bg``.

    ``thickness`` is the requested width in pixels (at least 1).
    """
    check_profile(profile)
    img, exp = as_rgb8(image), as_rgb8(expected)
    check_same_size(img, exp)
    t = int(thickness)
    if t < 1:
        raise InvalidArgumentError(f"thickness {thickness!r} must be at least 1 pixel")
    h, w = img.shape[:2]
    border = nearer_first(img, fg, bg)
    # Measure along the middle half of each side, far from the corners, so a border thicker than requested
    # does not turn corner lines into full runs.
    rows = slice(h // 4, h - h // 4)
    cols = slice(w // 4, w - w // 4)
    sides = {
        "left": _runs(border[rows, :]),
        "right": _runs(border[rows, ::-1]),
        "top": _runs(border[:, cols].T),
        "bottom": _runs(border[::-1, cols].T),
    }
    thick, spread, measured = [], [], {}
    for name, runs in sides.items():
        med = float(np.median(runs))
        measured[name] = med
        thick.append(min(abs(med - t) / t, 1.0))
        spread.append(min(float(np.std(runs)) / t, 1.0))
    values = {
        "thickness": float(np.mean(thick)),
        "spread": float(np.mean(spread)),
        "rgb_ed": _rgb_ed(img, exp),
    }
    return Metrics(values, task="border", profile=profile, info={"measured": measured})


def count_metrics(image, *, count: int, dot: int, fg=(255, 255, 255), bg=(0, 0, 0),
                  profile: str = "violin") -> Metrics:
    """``count, size`` (task ``count``) of "exactly ``count`` dots of ``dot`` x ``dot`` pixels".

    ``count`` and ``dot`` are at least 1; ``info["found"]`` is the number of dots found.
    """
    check_profile(profile)
    if int(count) < 1 or int(dot) < 1:
        raise InvalidArgumentError(f"count {count!r} and dot {dot!r} must be positive")
    img = as_rgb8(image)
    fgmask = nearer_first(img, fg, bg).astype(np.uint8)
    n, _, stats, _ = cv2.connectedComponentsWithStats(fgmask, connectivity=8)
    areas = stats[1:, cv2.CC_STAT_AREA].astype(np.float64)
    found = int(n - 1)
    values = {
        "count": min(abs(found - int(count)) / int(count), 1.0),
        "size": float(np.minimum(np.abs(areas / float(dot * dot) - 1.0), 1.0).mean())
        if found else 1.0,
    }
    return Metrics(values, task="count", profile=profile, info={"found": found})
