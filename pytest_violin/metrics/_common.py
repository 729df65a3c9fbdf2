"""Helpers shared by the colour, shape and mask metrics."""

from __future__ import annotations

import math

import cv2
import numpy as np

from ..errors import InternalError, InvalidArgumentError
from ..imaging import as_rgb8, check_same_size

__all__ = ["LAYOUTS", "check_layout", "prepare_pair", "gray", "clip01", "split_blocks",
           "mean_channel_std"]

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
    """Return the ``(rows, cols)`` slices of each block of ``layout``.

    Blocks split at ``height // 2`` and ``width // 2``; the second half
    gets the odd row or column.

    Raises
    ------
    ValueError
        If the image is too small to give every block a pixel.
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
