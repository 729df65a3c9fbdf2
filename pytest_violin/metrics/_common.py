"""Helpers shared by the colour, shape and mask metrics.

Regions (the shape and mask metrics) are ``uint8`` images with 0 outside and 255 inside.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from ..errors import InternalError, InvalidArgumentError
from ..imaging import as_rgb8, check_same_size

__all__ = ["LAYOUTS", "check_layout", "prepare_pair", "gray", "clip01", "split_blocks",
           "mean_channel_std", "largest_filled", "region_iou_distance", "centroid", "centroid_distance",
           "KERNEL3"]

#: Colour layouts: ``single`` block, ``vertical`` = left|right halves,
#: ``horizontal`` = top/bottom halves, ``quad`` = 2x2 quadrants.
LAYOUTS = ("single", "vertical", "horizontal", "quad")

# Smallest (height, width) each layout can split into non-empty blocks.
_MIN_SIZE = {"single": (1, 1), "vertical": (1, 2), "horizontal": (2, 1), "quad": (2, 2)}


def check_layout(layout: str) -> str:
    """Return ``layout`` if known, else raise ``ValueError`` naming the accepted ones."""
    if layout not in LAYOUTS:
        raise InvalidArgumentError(f"unknown color layout {layout!r}; accepted: {', '.join(LAYOUTS)}")
    return layout


def prepare_pair(image, expected) -> tuple[np.ndarray, np.ndarray]:
    """Convert both images with ``as_rgb8`` and check they have one size."""
    img = as_rgb8(image)
    exp = as_rgb8(expected)
    check_same_size(img, exp)
    return img, exp


def gray(rgb: np.ndarray) -> np.ndarray:
    """OpenCV grayscale (``0.299 R + 0.587 G + 0.114 B``, rounded) as uint8."""
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)


_LEVELS = np.arange(256, dtype=np.float64)


def mean_channel_std(rgb: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Mean over R, G, B of the population standard deviation of the pixels.

    Computed from exact per-channel histograms, so a one-colour region
    gives exactly 0.0 (``cv2.meanStdDev`` leaves ~1e-8 of rounding).
    ``mask`` (uint8, nonzero = inside) restricts the pixels; an empty
    selection gives 0.0.
    """
    n = rgb.shape[0] * rgb.shape[1] if mask is None else cv2.countNonZero(mask)
    if n == 0:
        return 0.0
    if mask is not None:
        # Only the mask's bounding box holds selected pixels: same counts,
        # fewer pixels to visit (a shape covers a fraction of its image).
        x, y, w, h = cv2.boundingRect(mask)
        rgb, mask = rgb[y:y + h, x:x + w], mask[y:y + h, x:x + w]
    total = 0.0
    for c in range(3):
        if n < 2**24:  # calcHist counts in float32: exact below 2**24
            counts = cv2.calcHist([rgb], [c], mask, [256], [0, 256]).ravel().astype(np.float64)
        else:
            chan = rgb[:, :, c] if mask is None else rgb[:, :, c][mask > 0]
            counts = np.bincount(chan.ravel(), minlength=256).astype(np.float64)
        mean = counts @ _LEVELS / n
        total += np.sqrt(counts @ (_LEVELS - mean) ** 2 / n)
    return total / 3.0


def clip01(value: float) -> float:
    """Clip to ``[0, 1]`` as a Python float (NaN is a bug, so it raises)."""
    v = float(value)
    if math.isnan(v):
        raise InternalError("metric computation produced NaN")
    return 0.0 if v < 0.0 else 1.0 if v > 1.0 else v


def split_blocks(height: int, width: int, layout: str) -> list[tuple[slice, slice]]:
    """The ``(rows, cols)`` slices of each block of ``layout``, split at ``height // 2`` and ``width // 2``.

    The second half gets the odd row or column; an image too small to give
    every block a pixel is a ``ValueError``.
    """
    check_layout(layout)
    min_h, min_w = _MIN_SIZE[layout]
    if height < min_h or width < min_w:
        raise InvalidArgumentError(
            f"an image of {width}x{height} pixels is too small for layout {layout!r}; "
            f"it needs at least {min_w}x{min_h}")
    full = slice(None)
    top, bottom = slice(0, height // 2), slice(height // 2, height)
    left, right = slice(0, width // 2), slice(width // 2, width)
    if layout == "single":
        return [(full, full)]
    if layout == "vertical":
        return [(full, left), (full, right)]
    if layout == "horizontal":
        return [(top, full), (bottom, full)]
    return [(top, left), (top, right), (bottom, left), (bottom, right)]


# ---------------------------------------------------------------- binary regions

#: The 3x3 structuring element of every erosion and dilation.
KERNEL3 = np.ones((3, 3), dtype=np.uint8)


def largest_filled(region: np.ndarray) -> np.ndarray:
    """Keep the largest external contour of ``region``, filled.

    ``cv2.findContours(RETR_EXTERNAL, CHAIN_APPROX_SIMPLE)``, the largest by
    ``cv2.contourArea`` (the first one on ties), drawn with
    ``thickness=-1``. Holes inside it are filled; everything else is
    dropped. An empty region stays empty.
    """
    contours, _ = cv2.findContours(region, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    out = np.zeros_like(region)
    if contours:
        biggest = max(contours, key=cv2.contourArea)
        cv2.drawContours(out, [biggest], -1, 255, thickness=-1)
    return out


def region_iou_distance(a: np.ndarray, b: np.ndarray) -> float:
    """``1 - |a & b| / |a | b|``; 0.0 when both regions are empty."""
    union = cv2.countNonZero(cv2.bitwise_or(a, b))
    if union == 0:
        return 0.0
    inter = cv2.countNonZero(cv2.bitwise_and(a, b))
    return 1.0 - inter / union


def centroid(region: np.ndarray):
    """``(area, (x, y))`` of a region from its binary moments; ``(0, None)`` if empty.

    Equal, bit for bit, to ``cv2.moments(region, binaryImage=True)``'s
    ``m00`` and ``(m10 / m00, m01 / m00)``, about 10x faster: for a binary
    image those moments are integer sums (OpenCV accumulates them exactly),
    so they are computed here from the row and column pixel counts in
    integer arithmetic, without the second- and third-order moments.
    """
    ones = cv2.threshold(region, 0, 1, cv2.THRESH_BINARY)[1]
    cols = cv2.reduce(ones, 0, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel().astype(np.int64)
    m00 = int(cols.sum())
    if m00 == 0:
        return 0.0, None
    rows = cv2.reduce(ones, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel().astype(np.int64)
    m10 = int(cols @ np.arange(cols.size, dtype=np.int64))
    m01 = int(rows @ np.arange(rows.size, dtype=np.int64))
    area = float(m00)
    return area, (float(m10) / area, float(m01) / area)


def centroid_distance(c_gen, c_gt, height: int, width: int, *, both_empty: float) -> float:
    """Centroid distance over the image diagonal, clipped to 1.

    1.0 when exactly one centroid is missing; ``both_empty`` when both are.
    """
    if c_gen is None and c_gt is None:
        return both_empty
    if c_gen is None or c_gt is None:
        return 1.0
    d = math.hypot(c_gen[0] - c_gt[0], c_gen[1] - c_gt[1]) / math.hypot(width, height)
    return min(d, 1.0)
