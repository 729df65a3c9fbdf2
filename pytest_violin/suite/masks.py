"""Binary masks of the mask task, generated from a seed.

``True`` = keep the source pixel, ``False`` = the answer must be pure black.

Kinds:

* ``inpaint``: one interior, object-like blob (a union of 2-4 rotated
  ellipses that all contain one common point, so the blob is star-shaped
  and has no hole);
* ``outpaint``: bands along one side, two adjacent sides (an L) or three
  sides (a U) of the image, never all four (no closed frame);
* ``random``: one to three thick free-form strokes (random walks with
  bounded turning).

Whatever the kind, every kept pixel enclosed by black is finally turned
black (each black region is replaced by its filled outer contour), so no
black region ever encloses kept pixels: the mask metrics' "largest outer
contour, filled" is then exactly a black region of the ground truth.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from ..errors import SuiteError

__all__ = ["MASK_KINDS", "SIDES", "generate_mask", "fill_enclosed", "mask_to_rgb", "paint_ellipse", "paint_band",
           "paint_stroke", "walk"]

#: Mask kinds, in suite order.
MASK_KINDS = ("inpaint", "outpaint", "random")
#: The sides of an ``outpaint`` band, in order: consecutive sides are adjacent.
SIDES = ("left", "top", "right", "bottom")


def fill_enclosed(black: np.ndarray) -> np.ndarray:
    """Fill every hole of every black region: ``(H, W)`` uint8, 1 = blacked out, each region
    replaced by its filled outer contour.
    """
    contours, _ = cv2.findContours(black, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    out = black.copy()
    if contours:
        cv2.drawContours(out, contours, -1, 1, thickness=cv2.FILLED)
    return out


# the strokes every mask is drawn with (the suite's seeded masks and the hypothesis strategies')


def paint_ellipse(black: np.ndarray, x: float, y: float, a: float, b: float, angle: float) -> None:
    """Mark the filled ellipse at ``(x, y)`` with half axes ``a``, ``b`` (each at least 1 px)."""
    cv2.ellipse(black, (int(round(x)), int(round(y))), (max(1, int(round(a))), max(1, int(round(b)))),
                angle, 0, 360, 1, thickness=cv2.FILLED)


def paint_band(black: np.ndarray, side: str, frac: float) -> None:
    """Mark the band along ``side`` that is ``frac`` of the width (left, right) or height deep."""
    h, w = black.shape[:2]
    d = max(1, int(round(frac * (w if side in ("left", "right") else h))))
    if side == "left":
        black[:, :d] = 1
    elif side == "right":
        black[:, w - d:] = 1
    elif side == "top":
        black[:d, :] = 1
    else:
        black[h - d:, :] = 1


def walk(x: float, y: float, heading: float, step: float, w: int, h: int) -> tuple:
    """One step of a stroke's random walk, kept inside the image."""
    return (min(max(x + step * math.cos(heading), 0.0), w - 1.0),
            min(max(y + step * math.sin(heading), 0.0), h - 1.0))


def paint_stroke(black: np.ndarray, pts, thickness: float) -> None:
    """Mark the polyline through ``pts``, ``thickness`` pixels wide (at least 1)."""
    poly = np.round(np.array(pts)).astype(np.int32).reshape(-1, 1, 2)
    cv2.polylines(black, [poly], False, 1, thickness=max(1, int(round(thickness))), lineType=cv2.LINE_8)


def _inpaint(rng, black, w, h):
    s = min(w, h)
    cx = rng.uniform(0.35, 0.65) * w
    cy = rng.uniform(0.35, 0.65) * h
    for _ in range(int(rng.integers(2, 5))):
        a = rng.uniform(0.06, 0.2) * s
        b = rng.uniform(0.06, 0.2) * s
        r = rng.uniform(0.0, 0.5) * min(a, b)
        t = rng.uniform(0.0, 2 * math.pi)
        ex, ey = cx + r * math.cos(t), cy + r * math.sin(t)
        angle = rng.uniform(0.0, 180.0)
        paint_ellipse(black, ex, ey, a, b, angle)


def _outpaint(rng, black, w, h):
    n = int(rng.integers(1, 4))
    start = int(rng.integers(0, 4))
    for side in [SIDES[(start + i) % 4] for i in range(n)]:  # consecutive = adjacent sides
        paint_band(black, side, rng.uniform(0.1, 0.35))


def _random(rng, black, w, h):
    s = min(w, h)
    for _ in range(int(rng.integers(1, 4))):
        x, y = rng.uniform(0.1, 0.9) * w, rng.uniform(0.1, 0.9) * h
        heading = rng.uniform(0.0, 2 * math.pi)
        pts = [(x, y)]
        for _ in range(int(rng.integers(3, 7))):
            heading += rng.uniform(-1.0, 1.0)
            step = rng.uniform(0.08, 0.22) * s
            x, y = walk(x, y, heading, step, w, h)
            pts.append((x, y))
        paint_stroke(black, pts, rng.uniform(0.025, 0.07) * s)


_KINDS = {"inpaint": _inpaint, "outpaint": _outpaint, "random": _random}


def generate_mask(kind: str, seed: int, width: int, height: int) -> np.ndarray:
    """One mask of ``kind`` (see the module docstring), ``(height, width)`` bool, True = keep.

    ``seed`` seeds a numpy ``Generator`` (PCG64), so the mask is the same in every process.
    """
    fn = _KINDS.get(kind)
    if fn is None:
        raise SuiteError(f"unknown mask kind {kind!r}; accepted: {', '.join(MASK_KINDS)}")
    rng = np.random.default_rng(int(seed))
    black = np.zeros((int(height), int(width)), np.uint8)
    fn(rng, black, int(width), int(height))
    black = fill_enclosed(black)
    return black == 0


def mask_to_rgb(keep: np.ndarray) -> np.ndarray:
    """A keep-mask as the black/white RGB uint8 image given to models (white = keep)."""
    gray = keep.view(np.uint8) * np.uint8(255) if keep.dtype == bool else \
        np.where(keep, np.uint8(255), np.uint8(0))
    return cv2.cvtColor(np.ascontiguousarray(gray), cv2.COLOR_GRAY2RGB)
