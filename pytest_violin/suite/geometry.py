"""Shape geometry: where a shape of a given size and alignment goes.

Everything here is arithmetic on integers; no pixels are touched. The
result is stored in the sample spec so rendering and checking never have to
re-derive it.
"""

from __future__ import annotations

import math

from ..errors import SuiteError

__all__ = ["SHAPES", "ANCHORS", "shape_extent", "place_bbox", "block_boxes"]

#: Shapes of the geometric task.
SHAPES = ("circle", "square", "triangle")

#: Named alignments: name -> (horizontal, vertical) placement of the bounding box.
ANCHORS = {
    "left-center": ("left", "center"),
    "right-center": ("right", "center"),
    "top-center": ("center", "top"),
    "bottom-center": ("center", "bottom"),
    "center": ("center", "center"),
    "top-left": ("left", "top"),
    "top-right": ("right", "top"),
    "bottom-left": ("left", "bottom"),
    "bottom-right": ("right", "bottom"),
}


def shape_extent(shape: str, size: float, width: int) -> tuple:
    """Bounding-box size ``(bw, bh)`` in pixels of a shape of ``size`` (a fraction of ``width``).

    ``size`` is a circle's diameter, a square's or upright equilateral
    triangle's side: ``bw = max(1, round(size * width))``; ``bh = bw`` except for
    the triangle, whose height is ``max(1, round(bw * sqrt(3) / 2))``.
    """
    if shape not in SHAPES:
        raise SuiteError(f"unknown shape {shape!r}; accepted: {', '.join(SHAPES)}")
    size = float(size)
    if not 0.0 < size <= 1.0:
        raise SuiteError(f"shape size {size!r} must be a fraction of the width in (0, 1]")
    bw = max(1, int(round(size * width)))
    bh = max(1, int(round(bw * math.sqrt(3) / 2))) if shape == "triangle" else bw
    return bw, bh


def place_bbox(bw: int, bh: int, width: int, height: int, *, anchor=None, center=None) -> tuple:
    """``(x0, y0, bw, bh)``: a ``bw`` x ``bh`` box placed in the image by a named anchor or a center.

    ``anchor`` is one of :data:`ANCHORS`: ``left`` puts the box on the left
    edge (x0 = 0), ``right`` on the right edge, ``center`` at
    ``(width - bw) // 2`` (likewise vertically); ``center`` ``(fx, fy)`` puts the
    box centre at fractions of the width and height. Both or neither given, an
    unknown anchor or a box that does not fit is a
    :class:`~pytest_violin.errors.SuiteError`.
    """
    if (anchor is None) == (center is None):
        raise SuiteError("give exactly one of anchor (e.g. 'left-center') or center=(fx, fy)")
    if bw > width or bh > height:
        raise SuiteError(f"a {bw}x{bh} shape does not fit in a {width}x{height} image")
    if anchor is not None:
        if anchor not in ANCHORS:
            raise SuiteError(f"unknown anchor {anchor!r}; accepted: {', '.join(ANCHORS)}")
        hpos, vpos = ANCHORS[anchor]
        x0 = {"left": 0, "center": (width - bw) // 2, "right": width - bw}[hpos]
        y0 = {"top": 0, "center": (height - bh) // 2, "bottom": height - bh}[vpos]
        return (x0, y0, bw, bh)
    try:
        fx, fy = (float(v) for v in center)
    except (TypeError, ValueError):
        raise SuiteError(f"center {center!r} must be a pair of fractions (fx, fy)") from None
    x0 = int(math.floor(fx * width - bw / 2.0 + 0.5))
    y0 = int(math.floor(fy * height - bh / 2.0 + 0.5))
    if x0 < 0 or y0 < 0 or x0 + bw > width or y0 + bh > height:
        raise SuiteError(f"a {bw}x{bh} shape centred at {center!r} does not fit in a "
                         f"{width}x{height} image")
    return (x0, y0, bw, bh)


def block_boxes(layout: str, width: int, height: int) -> tuple:
    """The ``(x0, y0, w, h)`` boxes of a block layout, in reading order.

    ``vertical`` = left | right halves split at ``width // 2``;
    ``horizontal`` = top / bottom halves split at ``height // 2``;
    ``quad`` = 2x2 (top-left, top-right, bottom-left, bottom-right);
    ``single`` = the whole image.
    """
    hw, hh = width // 2, height // 2
    if layout == "single":
        return ((0, 0, width, height),)
    if layout == "vertical":
        return ((0, 0, hw, height), (hw, 0, width - hw, height))
    if layout == "horizontal":
        return ((0, 0, width, hh), (0, hh, width, height - hh))
    if layout == "quad":
        return ((0, 0, hw, hh), (hw, 0, width - hw, hh),
                (0, hh, hw, height - hh), (hw, hh, width - hw, height - hh))
    raise SuiteError(f"unknown layout {layout!r}; accepted: single, vertical, horizontal, quad")
