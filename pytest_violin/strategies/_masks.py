"""Masks and source images of the mask task.

Masks shrink toward one small blob (``inpaint``), one band (``outpaint``) or one short stroke (``random``);
any kind: the band on the left side. Every mask is well formed as in the suite. Source images are crops of the
photographs bundled with scikit-image, lifted as the suite's are.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from ..suite import drawing as _masks
from ._checks import check, check_canvas, check_choice
from ._geometry import grid_around_half

#: Mask kinds (as in the ``violin`` suite).
MASK_KINDS = _masks.MASK_KINDS


def _draw_inpaint(draw, black: np.ndarray, w: int, h: int) -> None:
    s = min(w, h)
    cx = draw(st.integers(35, 65)) / 100.0 * w
    cy = draw(st.integers(35, 65)) / 100.0 * h
    for _ in range(draw(st.integers(1, 3))):
        a = draw(st.integers(6, 20)) / 100.0 * s
        b = draw(st.integers(6, 20)) / 100.0 * s
        angle = draw(st.integers(0, 179))
        # offset of the ellipse centre within half its smaller axis keeps the common point (cx, cy) inside
        # every ellipse: the union is star-shaped.
        r = draw(st.integers(0, 50)) / 100.0 * min(a, b)
        t = math.radians(draw(st.integers(0, 359)))
        _masks.paint_ellipse(black, cx + r * math.cos(t), cy + r * math.sin(t), a, b, angle)


def _draw_outpaint(draw, black: np.ndarray, w: int, h: int) -> None:
    n = draw(st.integers(1, 3))
    start = draw(st.integers(0, 3))
    for side in (_masks.SIDES[(start + i) % 4] for i in range(n)):  # adjacent sides: never a frame
        _masks.paint_band(black, side, draw(st.integers(10, 35)) / 100.0)


def _draw_random(draw, black: np.ndarray, w: int, h: int) -> None:
    s = min(w, h)
    for _ in range(draw(st.integers(1, 3))):
        x = draw(st.integers(10, 90)) / 100.0 * w
        y = draw(st.integers(10, 90)) / 100.0 * h
        heading = math.radians(draw(st.integers(0, 359)))
        pts = [(x, y)]
        for _ in range(draw(st.integers(1, 5))):
            heading += math.radians(draw(st.integers(-57, 57)))  # bounded turning
            step = draw(st.integers(8, 22)) / 100.0 * s
            x, y = _masks.walk(x, y, heading, step, w, h)
            pts.append((x, y))
        _masks.paint_stroke(black, pts, draw(st.integers(25, 70)) / 1000.0 * s)


_MASK_DRAWERS = {"inpaint": _draw_inpaint, "outpaint": _draw_outpaint, "random": _draw_random}


def masks(*, width: int = 64, height: int = 64, kind: str | None = None,
          dtype=bool) -> st.SearchStrategy:
    """Binary keep-masks of the mask task, ``(height, width)`` arrays (True / 1 = keep, False / 0 = black).

    The size is 16..4096 pixels a side (default 64 x 64; masks scale, so tests rarely need the suite's 512);
    ``dtype`` is ``bool`` or ``uint8`` (0 and 1). ``kind`` ``inpaint`` is one interior star-shaped blob of 1-3
    ellipses; ``outpaint`` bands along one to three adjacent sides (never a closed frame); ``random`` one to
    three thick strokes with bounded turning; None (default): any kind, shrinking toward the simplest mask,
    one band of 10% on the left side. Every mask is well formed as in the suite: at least one kept and one
    black pixel, and no black region encloses kept pixels (enclosed kept pixels are blacked out), so its
    ground truth scores 0.0 in both metric profiles.
    """
    width, height = check_canvas(width, height, 16)
    check_choice("kind", kind, MASK_KINDS, allow_none=True)
    check(dtype in (bool, np.bool_, np.uint8), "dtype", dtype, "bool or numpy.uint8")
    as_bool = dtype in (bool, np.bool_)
    return kind_and_mask(width, height, kind).map(
        lambda pair: pair[1] if as_bool else pair[1].astype(np.uint8))


def kind_and_mask(width: int, height: int, kind: str | None) -> st.SearchStrategy:
    """``(kind, keep)`` pairs; arguments already validated."""
    kinds = MASK_KINDS if kind is None else (kind,)

    @st.composite
    def pair(draw):
        from ..suite.drawing import fill_enclosed

        chosen = draw(st.sampled_from(kinds))
        black = np.zeros((height, width), np.uint8)
        _MASK_DRAWERS[chosen](draw, black, width, height)
        keep = fill_enclosed(black) == 0
        return chosen, keep

    return pair().filter(lambda p: bool(p[1].any()) and not bool(p[1].all()))


def source_images(*, width: int = 64, height: int = 64) -> st.SearchStrategy:
    """Natural ``(height, width, 3)`` uint8 source images for the mask task (default 64 x 64).

    Each image is a crop (zoom 1-2x, position, optional mirror) of one of the photographs bundled with
    scikit-image, lifted so every channel is at least 40 (above the mask metrics' black threshold), exactly as
    the suite's base images; shrinks toward the first photo, uncropped, centred, not mirrored.
    """
    width, height = check_canvas(width, height, 8)
    from ..suite.drawing import SKIMAGE_PHOTOS, base_image

    spec = st.fixed_dictionaries({
        "source": st.just("skimage"),
        "name": st.sampled_from(SKIMAGE_PHOTOS),
        "zoom": st.integers(100, 200).map(lambda z: z / 100.0),
        "fx": grid_around_half(0.0, 1.0, 0.05),
        "fy": grid_around_half(0.0, 1.0, 0.05),
        "flip": st.booleans(),
    })
    return spec.map(lambda photo: base_image(photo, width, height))
