"""Drawing primitives: pure functions from a few numbers to pixels.

Every function returns a new ``(height, width, 3)`` uint8 RGB array (or
fills one in place) and depends on nothing but its arguments (and, for
masks, the cached base photographs). The task families
(:mod:`pytest_violin.tasks`) draw their ground truths with these.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..errors import SuiteError
from .geometry import block_boxes
from .masks import generate_mask
from .photos import base_image

__all__ = ["contact_sheet", "render_blocks", "render_ratio", "render_shape", "shape_pixels",
           "render_border", "render_dots", "render_mask_inputs", "apply_mask"]


def _color(color) -> tuple:
    return tuple(int(v) for v in color)


def _fill(out: np.ndarray, x0: int, y0: int, bw: int, bh: int, color) -> None:
    """Fill a box in place (OpenCV: far faster than numpy's 3-channel broadcast)."""
    if bw > 0 and bh > 0:
        cv2.rectangle(out, (int(x0), int(y0)), (int(x0 + bw - 1), int(y0 + bh - 1)),
                      _color(color), thickness=-1)


def _canvas(width: int, height: int, color) -> np.ndarray:
    out = np.empty((int(height), int(width), 3), np.uint8)
    _fill(out, 0, 0, int(width), int(height), color)
    return out


def render_blocks(layout: str, colors, width: int, height: int) -> np.ndarray:
    """Uniform color blocks in ``layout``, one color per block in reading order.

    The layouts are those of :func:`~pytest_violin.suite.geometry.block_boxes`.
    """
    boxes = block_boxes(layout, width, height)
    if len(colors) != len(boxes):
        raise SuiteError(f"layout {layout!r} needs {len(boxes)} colors, got {len(colors)}")
    out = np.empty((int(height), int(width), 3), np.uint8)
    for (x0, y0, bw, bh), color in zip(boxes, colors):
        _fill(out, x0, y0, bw, bh, color)
    return out


def render_ratio(orientation: str, split: int, colors, width: int, height: int) -> np.ndarray:
    """Two regions split at pixel ``split``: ``vertical`` = left|right, ``horizontal`` = top/bottom."""
    out = _canvas(width, height, colors[1])
    if orientation == "vertical":
        _fill(out, 0, 0, int(split), int(height), colors[0])
    elif orientation == "horizontal":
        _fill(out, 0, 0, int(width), int(split), colors[0])
    else:
        raise SuiteError(f"unknown orientation {orientation!r}; accepted: vertical, horizontal")
    return out


def shape_pixels(shape: str, bw: int, bh: int) -> np.ndarray:
    """Boolean ``(bh, bw)`` patch of a shape filling its bounding box.

    A pixel belongs to the shape when its centre does: circle of diameter
    ``bw``; the full square; an upright triangle whose row ``r`` spans the
    pixels whose centres lie within ``a + (bw/2 - a) * r / (bh - 1)`` of the
    vertical axis, with ``a`` = 0.5 (odd ``bw``: a one-pixel apex) or 1
    (even ``bw``: a two-pixel apex), so the patch is left-right symmetric
    and touches all four sides of its box.
    """
    if shape == "square":
        return np.ones((bh, bw), bool)
    xs = np.arange(bw) + 0.5 - bw / 2.0
    if shape == "circle":
        ys = np.arange(bh) + 0.5 - bh / 2.0
        r = bw / 2.0
        return (xs[None, :] ** 2 + ys[:, None] ** 2) <= r * r
    if shape == "triangle":
        apex = 0.5 if bw % 2 else 1.0
        t = np.arange(bh) / max(1, bh - 1)
        half = apex + (bw / 2.0 - apex) * t
        return np.abs(xs)[None, :] <= half[:, None] + 1e-9
    raise SuiteError(f"unknown shape {shape!r}; accepted: circle, square, triangle")


def render_shape(shape: str, bbox, width: int, height: int, fg=(255, 255, 255),
                 bg=(0, 0, 0)) -> np.ndarray:
    """A solid shape in its bounding box ``(x0, y0, bw, bh)`` on a uniform background."""
    x0, y0, bw, bh = (int(v) for v in bbox)
    out = _canvas(width, height, bg)
    patch = shape_pixels(shape, bw, bh).view(np.uint8)
    solid = _canvas(bw, bh, fg)
    cv2.copyTo(solid, patch, out[y0:y0 + bh, x0:x0 + bw])
    return out


def render_border(thickness: int, width: int, height: int, fg=(255, 255, 255),
                  bg=(0, 0, 0)) -> np.ndarray:
    """A frame of ``thickness`` pixels along all four edges."""
    t = int(thickness)
    out = _canvas(width, height, fg)
    if 2 * t < width and 2 * t < height:
        _fill(out, t, t, width - 2 * t, height - 2 * t, bg)
    return out


def render_dots(positions, dot: int, width: int, height: int, fg=(255, 255, 255),
                bg=(0, 0, 0)) -> np.ndarray:
    """Square dots of ``dot`` x ``dot`` pixels with top-left corners at ``positions``."""
    out = _canvas(width, height, bg)
    for x, y in positions:
        _fill(out, int(x), int(y), int(dot), int(dot), fg)
    return out


def render_mask_inputs(spec, width: int, height: int) -> tuple:
    """``(source_image, keep_mask)`` of a suite mask sample spec."""
    source = base_image(spec["photo"], width, height, spec.get("lift", 40))
    keep = generate_mask(spec["mask_kind"], spec["mask_seed"], width, height)
    return source, keep


def apply_mask(source: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The mask rule: keep pixels where ``keep`` is True, pure black elsewhere."""
    return cv2.bitwise_and(source, source, mask=keep.view(np.uint8))


def contact_sheet(samples, *, columns: int = 10, tile: int = 160, label_height: int = 44) -> np.ndarray:
    """A grid (``columns`` wide) of the samples' expected images as RGB uint8, each captioned with its id.

    Each image is rendered one at a time and shrunk into a ``tile``-pixel square
    above a caption band ``label_height`` pixels high.
    """
    samples = list(samples)
    rows = max(1, -(-len(samples) // columns))
    cell_h = tile + label_height
    sheet = np.full((rows * cell_h, columns * tile, 3), 255, np.uint8)
    for k, s in enumerate(samples):
        r, c = divmod(k, columns)
        img = s.expected()
        h, w = img.shape[:2]
        scale = tile / max(h, w)
        thumb = cv2.resize(img, (max(1, int(w * scale)), max(1, int(h * scale))),
                           interpolation=cv2.INTER_AREA)
        th, tw = thumb.shape[:2]
        y0, x0 = r * cell_h, c * tile
        sheet[y0:y0 + th, x0:x0 + tw] = thumb
        cv2.rectangle(sheet, (x0, y0), (x0 + tile - 1, y0 + tile - 1), (128, 128, 128), 1)
        text = s.id
        per_line = max(8, tile // 8)
        lines = [text[i:i + per_line] for i in range(0, len(text), per_line)][:3]
        for j, line in enumerate(lines):
            cv2.putText(sheet, line, (x0 + 2, y0 + tile + 11 + 12 * j), cv2.FONT_HERSHEY_PLAIN,
                        0.75, (0, 0, 0), 1, cv2.LINE_AA)
    return sheet
