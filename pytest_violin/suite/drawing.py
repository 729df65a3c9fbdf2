"""The ground-truth pixels: shape geometry, base photographs, masks and drawing primitives.

Everything is a pure function of a few numbers (and, for masks, the cached base photographs): the geometry is
integer arithmetic stored in the sample spec, the drawing functions return a new ``(height, width, 3)`` uint8
RGB array (or fill one in place). The task families (:mod:`pytest_violin.tasks`) draw their ground truths with
these.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import cv2
import numpy as np

from ..errors import SuiteError
from ..imaging import as_rgb8, current_reader

__all__ = ["SHAPES", "ANCHORS", "shape_extent", "place_bbox", "block_boxes", "SKIMAGE_PHOTOS", "LIFT",
           "WORKING_SIDE", "PHOTO_EXTENSIONS", "photos_dir_from_env", "list_photo_dir", "load_photo", "lift_dark",
           "base_image", "MASK_KINDS", "SIDES", "generate_mask", "fill_enclosed", "mask_to_rgb", "paint_ellipse",
           "paint_band", "paint_stroke", "walk", "contact_sheet", "render_blocks", "render_ratio", "render_shape",
           "shape_pixels", "render_border", "render_dots", "render_mask_inputs", "apply_mask"]


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

    ``size`` is a circle's diameter, a square's or upright equilateral triangle's side: ``bw = max(1,
    round(size * width))``; ``bh = bw`` except for the triangle, whose height is ``max(1, round(bw * sqrt(3) /
    2))``.
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

    ``anchor`` is one of :data:`ANCHORS`: ``left`` puts the box on the left edge (x0 = 0), ``right`` on the
    right edge, ``center`` at ``(width - bw) // 2`` (likewise vertically); ``center`` ``(fx, fy)`` puts the
    box centre at fractions of the width and height. Both or neither given, an unknown anchor or a box that
    does not fit is a :class:`~pytest_violin.errors.SuiteError`.
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

    ``vertical`` = left | right halves split at ``width // 2``; ``horizontal`` = top / bottom halves split at
    ``height // 2``; ``quad`` = 2x2 (top-left, top-right, bottom-left, bottom-right); ``single`` = the whole
    image.
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


#: Base photographs of the mask task by default: scikit-image's bundled ones (they load offline); a folder of
#: one's own with ``load_suite("violin", photos_dir=...)`` or ``VIOLIN_PHOTOS_DIR``.
SKIMAGE_PHOTOS = (
    "astronaut", "chelsea", "coffee", "rocket", "immunohistochemistry",
    "hubble_deep_field", "stereo_motorcycle", "cat", "retina", "colorwheel",
    "camera", "coins",
)

#: Lowest channel value of a kept pixel in a mask base image (:func:`lift_dark`): safely above the mask
#: metrics' black threshold (gray 30 or darker).
LIFT = 40

#: File extensions read from a user photo folder.
PHOTO_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff")


def photos_dir_from_env():
    """The ``VIOLIN_PHOTOS_DIR`` environment variable as a Path, or None."""
    value = os.environ.get("VIOLIN_PHOTOS_DIR", "").strip()
    return Path(value) if value else None


def list_photo_dir(folder) -> tuple:
    """Sorted image file names in ``folder`` (none opened); a :class:`~pytest_violin.errors.SuiteError`
    when it does not exist or holds no image file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise SuiteError(f"photos_dir {str(folder)!r} is not a directory")
    names = tuple(sorted(p.name for p in folder.iterdir()
                         if p.is_file() and p.suffix.lower() in PHOTO_EXTENSIONS))
    if not names:
        raise SuiteError(f"photos_dir {str(folder)!r} holds no image "
                         f"(accepted extensions: {', '.join(PHOTO_EXTENSIONS)})")
    return names


#: Photos are cached with their short side reduced to at most this many pixels (area averaging, once per
#: process), so every crop is resized by a factor below 2 and rendering stays fast.
WORKING_SIDE = 768


def _working(img: np.ndarray) -> np.ndarray:
    h, w = img.shape[:2]
    short = min(h, w)
    if short > WORKING_SIDE:
        f = WORKING_SIDE / short
        img = cv2.resize(img, (max(1, int(round(w * f))), max(1, int(round(h * f)))),
                         interpolation=cv2.INTER_AREA)
    out = np.ascontiguousarray(img)
    out.setflags(write=False)
    return out


# the photo caches are keyed by the reader too: runs of both profiles in one process read a photo
# each as its own reader does (a file's alpha, its 16 bits), never as the first run to load it did


@functools.lru_cache(maxsize=None)
def _skimage_photo(name: str, reader: str) -> np.ndarray:
    import skimage.data

    loader = getattr(skimage.data, name, None)
    if name not in SKIMAGE_PHOTOS or loader is None:
        raise SuiteError(f"unknown scikit-image photo {name!r}; accepted: {', '.join(SKIMAGE_PHOTOS)}")
    img = loader()
    if isinstance(img, tuple):  # stereo_motorcycle returns (left, right, disparity)
        img = img[0]
    return _working(as_rgb8(np.ascontiguousarray(img), reader=reader))


@functools.lru_cache(maxsize=32)
def _file_photo(path: str, reader: str) -> np.ndarray:
    return _working(as_rgb8(path, reader=reader))


@functools.lru_cache(maxsize=64)
def _lifted(source: str, name: str, folder, lift: int, reader: str) -> np.ndarray:
    out = lift_dark(load_photo(source, name, folder, reader=reader), lift)
    out.setflags(write=False)
    return out


def load_photo(source: str, name: str, folder=None, *, reader: str | None = None) -> np.ndarray:
    """Load (and cache per process) one photograph as read-only RGB uint8.

    ``source`` is ``"skimage"`` (``name`` is a scikit-image data name) or ``"dir"`` (``name`` is a file name
    inside ``folder``). The cached copy has its short side reduced to :data:`WORKING_SIDE`. ``reader``: the image
    reader (default: the calling run's, :func:`~pytest_violin.imaging.current_reader`).
    """
    if source == "skimage":
        return _skimage_photo(name, reader or current_reader())
    if source == "dir":
        if folder is None:
            raise SuiteError(f"photo {name!r} comes from a folder but no folder is given")
        return _file_photo(str(Path(folder) / name), reader or current_reader())
    raise SuiteError(f"unknown photo source {source!r}; accepted: skimage, dir")


def lift_dark(image: np.ndarray, lift: int = LIFT) -> np.ndarray:
    """Map the channel values ``0..255`` of RGB uint8 ``image`` linearly onto ``lift..255`` (a new array)."""
    lift = int(lift)
    if lift <= 0:
        return np.array(image, dtype=np.uint8, copy=True)
    lut = (lift + (np.arange(256) * (255 - lift) + 127) // 255).astype(np.uint8)
    return cv2.LUT(np.ascontiguousarray(image, dtype=np.uint8), lut)


def base_image(photo: dict, width: int, height: int, lift: int = LIFT) -> np.ndarray:
    """Render one ``(height, width, 3)`` uint8 base image from its ``photo`` spec.

    The spec holds ``source``, ``name``, optional ``folder``; ``zoom`` (>= 1: the crop is the largest
    ``width:height`` window divided by ``zoom``), ``fx``, ``fy`` in ``[0, 1]`` (where the window sits within
    the slack) and ``flip`` (mirror left-right); dark tones are lifted by :func:`lift_dark`.
    """
    # Lifting the cached photo once equals lifting every crop: resizing only takes convex combinations of
    # pixels, which stay >= lift.
    src = _lifted(photo["source"], photo["name"], photo.get("folder"), int(lift), current_reader())
    sh, sw = src.shape[:2]
    aspect = width / height
    cw = min(float(sw), sh * aspect) / float(photo.get("zoom", 1.0))
    ch = cw / aspect
    cw_i, ch_i = max(1, int(round(cw))), max(1, int(round(ch)))
    cw_i, ch_i = min(cw_i, sw), min(ch_i, sh)
    x0 = int(round(float(photo.get("fx", 0.5)) * (sw - cw_i)))
    y0 = int(round(float(photo.get("fy", 0.5)) * (sh - ch_i)))
    crop = src[y0:y0 + ch_i, x0:x0 + cw_i]
    interp = cv2.INTER_AREA if cw_i >= 2 * width else cv2.INTER_LINEAR
    out = cv2.resize(crop, (width, height), interpolation=interp)
    if photo.get("flip"):
        out = cv2.flip(out, 1)
    return out


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
    """One mask of ``kind``, ``(height, width)`` bool: True = keep the source pixel, False = pure black.

    ``inpaint``: one interior blob, a union of 2-4 rotated ellipses sharing a point (star-shaped, no hole);
    ``outpaint``: bands along one side, two adjacent sides or three, never all four; ``random``: one to three
    thick strokes (random walks with bounded turning). Every kept pixel enclosed by black then turns black
    (:func:`fill_enclosed`), so the mask metrics' "largest outer contour, filled" is exactly a black region of
    the ground truth. ``seed`` seeds a numpy ``Generator`` (PCG64): the same mask in every process.
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

    A pixel belongs to the shape when its centre does: circle of diameter ``bw``; the full square; an upright
    triangle whose row ``r`` spans the pixels whose centres lie within ``a + (bw/2 - a) * r / (bh - 1)`` of
    the vertical axis, with ``a`` = 0.5 (odd ``bw``: a one-pixel apex) or 1 (even ``bw``: a two-pixel apex),
    so the patch is left-right symmetric and touches all four sides of its box.
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

    Each image is rendered one at a time and shrunk into a ``tile``-pixel square above a caption band
    ``label_height`` pixels high.
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
