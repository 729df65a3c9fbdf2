"""Hypothesis strategies for writing your own obedience tests.

Every strategy takes keyword-only arguments, validates them when it is
called (not when it is drawn from) and raises
:class:`hypothesis.errors.InvalidArgument` naming the argument and its
value. All of them are composed from hypothesis's own strategies, so a
failing example shrinks:

* colors shrink toward the 29 named ISCC-NBS Level-2 colors, the darkest
  first (ISCC-NBS "Black", ``#2B292B``); a color that must not be a named
  one shrinks channel by channel toward pure black ``(0, 0, 0)``;
* split ratios shrink toward 0.5 (the balanced split a model defaults to);
* shape placements shrink toward a circle of the smallest size at the
  canvas centre (the ``center`` anchor);
* masks shrink toward one small blob / one band / one short stroke (any
  kind: the band on the left side);
* samples shrink through all of the above, and toward prompt template 0.

Examples
--------
A property test against your model is one decorator and two lines::

    from hypothesis import given
    from pytest_violin import assert_obeys
    from pytest_violin.testing.strategies import shape_samples

    @given(sample=shape_samples())
    def test_shapes(sample, violin_generate):
        assert_obeys(violin_generate(sample), sample)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import cv2
import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..suite import geometry as _geometry
from ..suite import masks as _masks
from ..tasks import color as _color_family
from ..tasks import ratio as _ratio_family

__all__ = [
    "NOTATIONS",
    "MASK_KINDS",
    "SHAPES",
    "ANCHORS",
    "ShapePlacement",
    "named_colors",
    "rgb_colors",
    "hex_colors",
    "colors",
    "split_ratios",
    "shape_placements",
    "masks",
    "source_images",
    "color_samples",
    "block_samples",
    "ratio_samples",
    "shape_samples",
    "mask_samples",
]

#: Color notations :func:`colors` can write (``None`` there means any).
NOTATIONS = ("hex", "rgb", "hsl", "name")
#: Mask kinds (as in the ``violin`` suite).
MASK_KINDS = _masks.MASK_KINDS
#: Shape kinds of the geometric task.
SHAPES = _geometry.SHAPES
#: Named alignments of a shape's bounding box, simplest first (the centre,
#: then the rest in the order :data:`pytest_violin.suite.geometry.ANCHORS` lists them).
ANCHORS = ("center", *(name for name in _geometry.ANCHORS if name != "center"))
#: Multi-block layouts of the color family and their number of blocks.
_BLOCKS = {name: n for name, n in _color_family.BLOCK_COUNTS.items() if n > 1}
_LAYOUTS = tuple(_BLOCKS)
_ORIENTATIONS = _ratio_family.ORIENTATIONS
#: Largest canvas side the sample strategies accept (the suite's 1024 plus room).
_MAX_SIDE = 4096


class ShapePlacement(NamedTuple):
    """A shape and where it goes, as drawn by :func:`shape_placements`.

    Attributes
    ----------
    shape : str
        ``circle``, ``square`` or ``triangle``.
    size : float
        Diameter or side length as a fraction of the canvas width.
    anchor : str or None
        A named alignment (``left-center``, ...), or None when ``center``
        is given.
    center : tuple of float or None
        ``(fx, fy)``: the bounding-box centre as fractions of the width and
        height, or None when ``anchor`` is given.
    """

    shape: str
    size: float
    anchor: str | None
    center: tuple | None

    @property
    def position(self):
        """The anchor name or the center pair (what ``assert_shape`` takes)."""
        return self.anchor if self.anchor is not None else self.center


# ---------------------------------------------------------------- validation
def _fmt(value) -> str:
    return repr(value)


def _check(ok: bool, name: str, value, expected: str) -> None:
    """Raise InvalidArgument ``name=value`` unless ``ok``."""
    if not ok:
        raise InvalidArgument(f"{name}={_fmt(value)} is invalid: expected {expected}")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
            and math.isfinite(float(value)))


def _check_side(name: str, value, minimum: int = 1) -> int:
    _check(_is_int(value) and minimum <= value <= _MAX_SIDE, name, value,
           f"an integer number of pixels in {minimum}..{_MAX_SIDE}")
    return int(value)


def _check_choice(name: str, value, choices: Sequence, allow_none: bool = False) -> None:
    accepted = ", ".join(repr(c) for c in choices) + (" or None" if allow_none else "")
    _check((value is None and allow_none) or (isinstance(value, str) and value in choices),
           name, value, f"one of {accepted}")


def _check_subset(name: str, value, choices: Sequence) -> tuple:
    accepted = ", ".join(repr(c) for c in choices)
    ok = (isinstance(value, (tuple, list)) and len(value) > 0
          and all(isinstance(v, str) and v in choices for v in value)
          and len(set(value)) == len(value))
    _check(ok, name, value, f"a non-empty sequence of distinct values from {accepted}")
    return tuple(value)


def _check_bool(name: str, value) -> bool:
    _check(isinstance(value, bool), name, value, "True or False")
    return value


def _check_strategy_or_none(name: str, value) -> None:
    _check(value is None or isinstance(value, st.SearchStrategy), name, value,
           "a hypothesis strategy or None")


# ---------------------------------------------------------------- colors
def _iscc():
    from ..suite.colors import ISCC_NBS_COLORS

    return ISCC_NBS_COLORS


def _named_rgbs() -> tuple:
    """The 29 named colors' RGB tuples, darkest first (Rec. 601 luma)."""
    return tuple(sorted((c.rgb for c in _iscc()),
                        key=lambda rgb: (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2], rgb)))


def named_colors() -> st.SearchStrategy:
    """One of the 29 ISCC-NBS Level-2 colors, as an ``(r, g, b)`` tuple.

    Shrinks toward the darkest (ISCC-NBS "Black", ``(43, 41, 43)``); the
    order is by luma, so a failure shrinks to the darkest named color that
    still fails.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Tuples of three ints in ``0..255``.
    """
    return st.sampled_from(_named_rgbs())


def rgb_colors(*, named: bool = True) -> st.SearchStrategy:
    """Any 8-bit color as an ``(r, g, b)`` tuple of ints.

    Parameters
    ----------
    named : bool, optional
        If True (the default), draw from the 29 ISCC-NBS colors part of the
        time; a trivially failing example shrinks to the darkest of them, and
        an arbitrary color shrinks channel by channel toward ``(0, 0, 0)``
        (the shrinker stays in the branch where it found the failure). If False, only the uniform
        channel strategy (shrinks to pure black).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Tuples of three ints in ``0..255``.

    Raises
    ------
    hypothesis.errors.InvalidArgument
        If ``named`` is not a bool.
    """
    _check_bool("named", named)
    channel = st.integers(min_value=0, max_value=255)
    anything = st.tuples(channel, channel, channel)
    if not named:
        return anything
    return st.one_of(named_colors(), anything)


def _format(rgb, notation: str) -> str:
    from ..suite.colors import format_color

    return format_color(rgb, notation)


def hex_colors(*, named: bool = True) -> st.SearchStrategy:
    """Colors written ``#RRGGBB`` (upper case), shrinking as :func:`rgb_colors`.

    Parameters
    ----------
    named : bool, optional
        See :func:`rgb_colors`.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Strings such as ``"#D9B451"``.
    """
    return rgb_colors(named=named).map(lambda rgb: _format(rgb, "hex"))


def colors(*, notation: str | None = None, named: bool = True) -> st.SearchStrategy:
    """Color strings in one notation, or in any of them.

    Parameters
    ----------
    notation : {"hex", "rgb", "hsl", "name"} or None, optional
        ``hex`` -> ``#D9B451``; ``rgb`` -> ``rgb(217, 180, 81)``; ``hsl`` ->
        the shortest ``hsl(...)`` that parses back to the exact 8-bit color;
        ``name`` -> an ISCC-NBS Level-2 name such as ``"yellowish pink"``
        (only the 29 named colors). None (the default): any notation,
        shrinking toward ``hex``.
    named : bool, optional
        See :func:`rgb_colors` (ignored for ``notation="name"``).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Strings that :func:`pytest_violin.parse_color` reads back exactly.

    Raises
    ------
    hypothesis.errors.InvalidArgument
        For an unknown notation or a non-bool ``named``.
    """
    _check_choice("notation", notation, NOTATIONS, allow_none=True)
    _check_bool("named", named)
    if notation == "name":
        return named_colors().map(lambda rgb: _format(rgb, "name"))
    if notation is not None:
        return rgb_colors(named=named).map(lambda rgb: _format(rgb, notation))

    @st.composite
    def any_notation(draw):
        rgb = draw(rgb_colors(named=named))
        return _format(rgb, draw(_notations_for([rgb])))

    return any_notation()


def _notations_for(rgbs) -> st.SearchStrategy:
    """Notations that can write every color of ``rgbs``, hex first."""
    named = set(_named_rgbs())
    if all(tuple(c) in named for c in rgbs):
        return st.sampled_from(NOTATIONS)
    return st.sampled_from(NOTATIONS[:3])


# ---------------------------------------------------------------- ratios
def _grid_around_half(lo: float, hi: float, step: float) -> st.SearchStrategy:
    """Multiples of ``step`` in ``[lo, hi]``, shrinking toward the one nearest 0.5."""
    k_lo = math.ceil(lo / step - 1e-9)
    k_hi = math.floor(hi / step + 1e-9)
    k_mid = min(max(int(round(0.5 / step)), k_lo), k_hi)
    decimals = max(0, -math.floor(math.log10(step))) + 3
    return st.integers(min_value=k_lo - k_mid, max_value=k_hi - k_mid).map(
        lambda d: round((k_mid + d) * step, decimals))


def split_ratios(*, min_value: float = 0.05, max_value: float = 0.95,
                 step: float = 0.005) -> st.SearchStrategy:
    """Area ratios for two-region layouts (the first region's share).

    Parameters
    ----------
    min_value, max_value : float, optional
        Bounds, ``0 < min_value <= max_value < 1``.
    step : float, optional
        Resolution of the drawn ratios (default 0.005, i.e. half a percent,
        so ``0.315`` can be drawn; prompts state ratios as percentages).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Floats in ``[min_value, max_value]`` on the ``step`` grid, shrinking
        toward 0.5 (or the grid point nearest 0.5 inside the bounds).

    Raises
    ------
    hypothesis.errors.InvalidArgument
        For bounds outside ``(0, 1)``, ``min_value > max_value``, a step
        outside ``(0, 0.5]``, or bounds with no grid point between them.
    """
    _check(_is_real(min_value) and 0.0 < min_value < 1.0, "min_value", min_value,
           "a number strictly between 0 and 1")
    _check(_is_real(max_value) and 0.0 < max_value < 1.0, "max_value", max_value,
           "a number strictly between 0 and 1")
    _check(min_value <= max_value, "max_value", max_value,
           f"a number >= min_value={min_value!r}")
    _check(_is_real(step) and 0.0 < step <= 0.5, "step", step, "a number in (0, 0.5]")
    if math.floor(max_value / step + 1e-9) < math.ceil(min_value / step - 1e-9):
        raise InvalidArgument(f"min_value={min_value!r}, max_value={max_value!r} contain no "
                              f"multiple of step={step!r}; widen the bounds or use a finer step")
    return _grid_around_half(float(min_value), float(max_value), float(step))


# ---------------------------------------------------------------- shapes
def _bbox_px(shape: str, size: float, width: int) -> tuple:
    from ..suite.geometry import shape_extent

    return shape_extent(shape, size, width)


def _centers(shape: str, size: float, width: int, height: int, step: float) -> st.SearchStrategy:
    """Center fractions on the ``step`` grid whose box fits, shrinking to the middle."""
    from ..suite.geometry import place_bbox

    bw, bh = _bbox_px(shape, size, width)

    def fits(fx: float, fy: float) -> bool:
        try:
            place_bbox(bw, bh, width, height, center=(fx, fy))
        except ValueError:
            return False
        return True

    def axis(length: int, extent: int) -> st.SearchStrategy:
        half = extent / 2.0 / length
        lo, hi = half, 1.0 - half
        if hi < lo:  # pragma: no cover - guarded by the size bound
            lo = hi = 0.5
        return _grid_around_half(lo, hi, step) if math.ceil(lo / step - 1e-9) <= \
            math.floor(hi / step + 1e-9) else st.just(0.5)

    return (st.tuples(axis(width, bw), axis(height, bh))
            .filter(lambda c: fits(*c)))


def shape_placements(*, width: int = 512, height: int = 512, shapes: Sequence[str] = SHAPES,
                     min_size: float = 0.05, max_size: float = 0.5,
                     anchors: Sequence[str] | None = ANCHORS,
                     centers: bool = True, step: float = 0.01) -> st.SearchStrategy:
    """A shape kind, a size and a position that always fit in the canvas.

    Parameters
    ----------
    width, height : int, optional
        The canvas the placement must fit (default 512 x 512).
    shapes : sequence of str, optional
        Allowed kinds among ``circle``, ``square``, ``triangle``; shrinks
        toward the first.
    min_size, max_size : float, optional
        Size bounds as fractions of the width (whole percents are drawn,
        shrinking toward ``min_size``). The shape must fit vertically too,
        so ``max_size * width`` may not exceed the height.
    anchors : sequence of str or None, optional
        Allowed named alignments (see :data:`ANCHORS`; shrinks toward the
        first); None or empty for centers only.
    centers : bool, optional
        Also draw free positions: the bounding-box centre as fractions of
        the width and height on the ``step`` grid, always far enough from
        the edges that the whole shape is inside the canvas.
    step : float, optional
        Grid of the center fractions (default 0.01, one percent).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        :class:`ShapePlacement` tuples ``(shape, size, anchor, center)``.

    Raises
    ------
    hypothesis.errors.InvalidArgument
        For unknown shapes or anchors, sizes outside ``(0, 1]`` or in the
        wrong order, a size that cannot fit the canvas height, or neither
        anchors nor centers allowed.
    """
    width = _check_side("width", width, 8)
    height = _check_side("height", height, 8)
    shapes = _check_subset("shapes", shapes, SHAPES)
    _check(_is_real(min_size) and 0.0 < min_size <= 1.0, "min_size", min_size,
           "a fraction of the width in (0, 1]")
    _check(_is_real(max_size) and 0.0 < max_size <= 1.0, "max_size", max_size,
           "a fraction of the width in (0, 1]")
    _check(min_size <= max_size, "max_size", max_size, f"a size >= min_size={min_size!r}")
    lo_pct, hi_pct = math.ceil(min_size * 100 - 1e-9), math.floor(max_size * 100 + 1e-9)
    _check(lo_pct <= hi_pct, "max_size", max_size,
           f"bounds that contain a whole percent (min_size={min_size!r})")
    _check(hi_pct / 100.0 * width * (math.sqrt(3) / 2 if shapes == ("triangle",) else 1.0)
           <= height + 1e-9, "max_size", max_size,
           f"a size whose shape fits the {width}x{height} canvas height "
           f"(at most {height / width:.3f} of the width)")
    if anchors is None:
        anchors = ()
    if anchors:
        anchors = _check_subset("anchors", anchors, ANCHORS)
    else:
        _check(isinstance(anchors, (tuple, list)), "anchors", anchors,
               "a sequence of anchor names or None")
    _check_bool("centers", centers)
    _check(bool(anchors) or centers, "centers", centers,
           "True when anchors is empty (no position could be drawn)")
    _check(_is_real(step) and 0.0 < step <= 0.5, "step", step, "a number in (0, 0.5]")

    @st.composite
    def placement(draw):
        shape = draw(st.sampled_from(shapes))
        size = draw(st.integers(min_value=lo_pct, max_value=hi_pct)) / 100.0
        options = []
        if anchors:
            options.append(st.sampled_from(anchors).map(lambda a: (a, None)))
        if centers:
            options.append(_centers(shape, size, width, height, step).map(lambda c: (None, c)))
        anchor, center = draw(st.one_of(*options))
        return ShapePlacement(shape, size, anchor, center)

    return placement()


# ---------------------------------------------------------------- masks
def _draw_inpaint(draw, black: np.ndarray, w: int, h: int) -> None:
    s = min(w, h)
    cx = draw(st.integers(35, 65)) / 100.0 * w
    cy = draw(st.integers(35, 65)) / 100.0 * h
    for _ in range(draw(st.integers(1, 3))):
        a = draw(st.integers(6, 20)) / 100.0 * s
        b = draw(st.integers(6, 20)) / 100.0 * s
        angle = draw(st.integers(0, 179))
        # offset of the ellipse centre within half its smaller axis keeps the
        # common point (cx, cy) inside every ellipse: the union is star-shaped.
        r = draw(st.integers(0, 50)) / 100.0 * min(a, b)
        t = math.radians(draw(st.integers(0, 359)))
        centre = (int(round(cx + r * math.cos(t))), int(round(cy + r * math.sin(t))))
        cv2.ellipse(black, centre, (max(1, int(round(a))), max(1, int(round(b)))), angle,
                    0, 360, 1, thickness=cv2.FILLED)


def _draw_outpaint(draw, black: np.ndarray, w: int, h: int) -> None:
    sides = ("left", "top", "right", "bottom")
    n = draw(st.integers(1, 3))
    start = draw(st.integers(0, 3))
    for side in (sides[(start + i) % 4] for i in range(n)):  # adjacent sides: never a frame
        frac = draw(st.integers(10, 35)) / 100.0
        if side in ("left", "right"):
            d = max(1, int(round(frac * w)))
            if side == "left":
                black[:, :d] = 1
            else:
                black[:, w - d:] = 1
        else:
            d = max(1, int(round(frac * h)))
            if side == "top":
                black[:d, :] = 1
            else:
                black[h - d:, :] = 1


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
            x = min(max(x + step * math.cos(heading), 0.0), w - 1.0)
            y = min(max(y + step * math.sin(heading), 0.0), h - 1.0)
            pts.append((x, y))
        thickness = max(1, int(round(draw(st.integers(25, 70)) / 1000.0 * s)))
        poly = np.round(np.array(pts)).astype(np.int32).reshape(-1, 1, 2)
        cv2.polylines(black, [poly], False, 1, thickness=thickness, lineType=cv2.LINE_8)


_MASK_DRAWERS = {"inpaint": _draw_inpaint, "outpaint": _draw_outpaint, "random": _draw_random}


def masks(*, width: int = 64, height: int = 64, kind: str | None = None,
          dtype=bool) -> st.SearchStrategy:
    """Binary keep-masks of the mask task (True / 1 = keep, False / 0 = black).

    Parameters
    ----------
    width, height : int, optional
        Mask size in pixels, at least 16 (default 64 x 64; masks scale, so
        tests rarely need the suite's 512).
    kind : {"inpaint", "outpaint", "random"} or None, optional
        ``inpaint``: one interior star-shaped blob of 1-3 ellipses;
        ``outpaint``: bands along one to three adjacent sides (never a
        closed frame); ``random``: one to three thick strokes with bounded
        turning. None (default): any kind, shrinking toward the simplest
        mask, one band of 10% on the left side.
    dtype : {bool, numpy.uint8}, optional
        ``bool`` or ``uint8`` with values 0 and 1.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        ``(height, width)`` arrays. Every mask is well formed as in the
        suite: at least one kept and one black pixel, and no black region
        encloses kept pixels (enclosed kept pixels are blacked out), so its
        ground truth scores 0.0 in both metric profiles.

    Raises
    ------
    hypothesis.errors.InvalidArgument
        For sizes outside ``16..4096``, an unknown kind or dtype.
    """
    width = _check_side("width", width, 16)
    height = _check_side("height", height, 16)
    _check_choice("kind", kind, MASK_KINDS, allow_none=True)
    _check(dtype in (bool, np.bool_, np.uint8), "dtype", dtype, "bool or numpy.uint8")
    as_bool = dtype in (bool, np.bool_)
    return _kind_and_mask(width, height, kind).map(
        lambda pair: pair[1] if as_bool else pair[1].astype(np.uint8))


def _kind_and_mask(width: int, height: int, kind: str | None) -> st.SearchStrategy:
    """``(kind, keep)`` pairs; arguments already validated."""
    kinds = MASK_KINDS if kind is None else (kind,)

    @st.composite
    def pair(draw):
        from ..suite.masks import fill_enclosed

        chosen = draw(st.sampled_from(kinds))
        black = np.zeros((height, width), np.uint8)
        _MASK_DRAWERS[chosen](draw, black, width, height)
        keep = fill_enclosed(black) == 0
        return chosen, keep

    return pair().filter(lambda p: bool(p[1].any()) and not bool(p[1].all()))


def source_images(*, width: int = 64, height: int = 64) -> st.SearchStrategy:
    """Natural source images for the mask task: crops of scikit-image photos.

    Each image is a crop (zoom 1-2x, position, optional mirror) of one of
    the photographs bundled with scikit-image, lifted so every channel is
    at least 40 (above the mask metrics' black threshold), exactly as the
    suite's base images.

    Parameters
    ----------
    width, height : int, optional
        Image size (default 64 x 64).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        ``(height, width, 3)`` uint8 RGB arrays; shrinks toward the first
        photo, uncropped, centred, not mirrored.
    """
    width = _check_side("width", width, 8)
    height = _check_side("height", height, 8)
    from ..suite.photos import SKIMAGE_PHOTOS, base_image

    spec = st.fixed_dictionaries({
        "source": st.just("skimage"),
        "name": st.sampled_from(SKIMAGE_PHOTOS),
        "zoom": st.integers(100, 200).map(lambda z: z / 100.0),
        "fx": _grid_around_half(0.0, 1.0, 0.05),
        "fy": _grid_around_half(0.0, 1.0, 0.05),
        "flip": st.booleans(),
    })
    return spec.map(lambda photo: base_image(photo, width, height))


# ---------------------------------------------------------------- samples
def _builders():
    from ..suite import builders

    return builders


def _template_count(task: str, variant=None) -> int:
    """Number of prompt templates the builder of ``task`` accepts for ``variant``."""
    from ..suite import prompts

    if task == "color":
        return len(prompts.COLOR_TEMPLATES if variant == "name" else prompts.CODE_TEMPLATES)
    if task == "blocks":
        if variant == "quad":
            return len(prompts.QUAD_TEMPLATES)
        return sum(1 for lay, _ in prompts.BLOCK_TEMPLATES if lay == variant)
    if task == "ratio":
        return len(prompts.RATIO_TEMPLATES[variant])
    if task == "shape":
        return len(prompts.SHAPE_TEMPLATES)
    return len(prompts.MASK_TEMPLATES)


def _templates(task: str, variant, template) -> st.SearchStrategy:
    if template is not None:
        return st.just(int(template))
    return st.integers(min_value=0, max_value=_template_count(task, variant) - 1)


def _check_template(template, task: str, variants) -> None:
    """A fixed template must exist for every variant that can be drawn."""
    _check(template is None or (_is_int(template) and template >= 0), "template", template,
           "a non-negative integer or None (any template)")
    if template is None:
        return
    limit = min(_template_count(task, v) for v in variants)
    _check(template < limit, "template", template,
           f"a template index in 0..{limit - 1} for these {task} samples, or None")


def _check_notation_any(notation) -> None:
    _check_choice("notation", notation, NOTATIONS, allow_none=True)


def _colors_for(notation) -> st.SearchStrategy:
    """RGB tuples a notation can express (``name``: the 29 named colors)."""
    return named_colors() if notation == "name" else rgb_colors()


def color_samples(*, notation: str | None = None, width: int = 512, height: int = 512,
                  template: int | None = None) -> st.SearchStrategy:
    """Single-color samples: "a pure #D9B451 image", built by ``color_sample``.

    Parameters
    ----------
    notation : {"hex", "rgb", "hsl", "name"} or None, optional
        How the color is written in the prompt; None draws the notation too
        (shrinking toward hex).
    width, height : int, optional
        Image size (default 512 x 512, the suite's size).
    template : int or None, optional
        A fixed prompt template, or None to draw one (shrinking toward 0).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        :class:`pytest_violin.Sample` objects with task ``color``.
    """
    _check_notation_any(notation)
    width = _check_side("width", width)
    height = _check_side("height", height)
    _check_template(template, "color", NOTATIONS if notation is None else (notation,))

    @st.composite
    def sample(draw):
        rgb = draw(_colors_for(notation))
        note = notation or draw(_notations_for([rgb]))
        tmpl = draw(_templates("color", note, template))
        return _builders().color_sample(rgb, notation=note, width=width, height=height,
                                        template=tmpl)

    return sample()


def block_samples(*, layout: str | None = None, notation: str | None = None,
                  width: int = 512, height: int = 512,
                  template: int | None = None) -> st.SearchStrategy:
    """Multi-block color samples: halves or quadrants, each a named color.

    Parameters
    ----------
    layout : {"vertical", "horizontal", "quad"} or None, optional
        ``vertical`` = left | right halves, ``horizontal`` = top / bottom,
        ``quad`` = 2 x 2 in reading order; None draws one (shrinking toward
        ``vertical``).
    notation : {"hex", "rgb", "hsl", "name"} or None, optional
        How the colors are written; None draws one.
    width, height : int, optional
        Image size (at least 2 x 2).
    template : int or None, optional
        A fixed prompt template, or None to draw one.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        :class:`pytest_violin.Sample` objects with task ``color`` whose
        blocks have pairwise distinct colors.
    """
    _check_choice("layout", layout, _LAYOUTS, allow_none=True)
    _check_notation_any(notation)
    width = _check_side("width", width, 2)
    height = _check_side("height", height, 2)
    _check_template(template, "blocks", _LAYOUTS if layout is None else (layout,))

    @st.composite
    def sample(draw):
        lay = draw(st.sampled_from(_LAYOUTS) if layout is None else st.just(layout))
        cols = draw(st.lists(_colors_for(notation), min_size=_BLOCKS[lay],
                             max_size=_BLOCKS[lay], unique=True))
        note = notation or draw(_notations_for(cols))
        tmpl = draw(_templates("blocks", lay, template))
        return _builders().block_sample(lay, cols, notation=note, width=width, height=height,
                                     template=tmpl)

    return sample()


def ratio_samples(*, orientation: str | None = None, min_value: float = 0.05,
                  max_value: float = 0.95, notation: str | None = None, width: int = 512,
                  height: int = 512, template: int | None = None) -> st.SearchStrategy:
    """Area-ratio samples: "the left 31.5% pure blue, the rest pure red".

    Parameters
    ----------
    orientation : {"vertical", "horizontal"} or None, optional
        ``vertical`` splits left | right, ``horizontal`` top / bottom; None
        draws one.
    min_value, max_value : float, optional
        Bounds of the first region's share (see :func:`split_ratios`);
        the ratio shrinks toward 0.5.
    notation : {"hex", "rgb", "hsl", "name"} or None, optional
        How the colors are written; None draws one.
    width, height : int, optional
        Image size.
    template : int or None, optional
        A fixed prompt template, or None to draw one.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        :class:`pytest_violin.Sample` objects with task ``ratio``.
    """
    _check_choice("orientation", orientation, _ORIENTATIONS, allow_none=True)
    ratios = split_ratios(min_value=min_value, max_value=max_value)
    _check_notation_any(notation)
    width = _check_side("width", width, 2)
    height = _check_side("height", height, 2)
    _check_template(template, "ratio", _ORIENTATIONS if orientation is None else (orientation,))

    @st.composite
    def sample(draw):
        ori = draw(st.sampled_from(_ORIENTATIONS) if orientation is None else st.just(orientation))
        ratio = draw(ratios)
        cols = draw(st.lists(_colors_for(notation), min_size=2, max_size=2, unique=True))
        note = notation or draw(_notations_for(cols))
        tmpl = draw(_templates("ratio", ori, template))
        return _builders().ratio_sample(ratio, cols, orientation=ori, notation=note, width=width,
                                     height=height, template=tmpl)

    return sample()


def shape_samples(*, width: int = 512, height: int = 512, shapes: Sequence[str] = SHAPES,
                  min_size: float = 0.05, max_size: float = 0.5,
                  anchors: Sequence[str] | None = ANCHORS, centers: bool = True,
                  template: int | None = None) -> st.SearchStrategy:
    """Shape samples: a solid white shape on black, placed as drawn by :func:`shape_placements`.

    Parameters
    ----------
    width, height, shapes, min_size, max_size, anchors, centers
        See :func:`shape_placements`.
    template : int or None, optional
        A fixed prompt template, or None to draw one.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        :class:`pytest_violin.Sample` objects with task ``shape``.
    """
    placements = shape_placements(width=width, height=height, shapes=shapes, min_size=min_size,
                                  max_size=max_size, anchors=anchors, centers=centers)
    _check_template(template, "shape", (None,))

    @st.composite
    def sample(draw):
        p = draw(placements)
        tmpl = draw(_templates("shape", None, template))
        return _builders().shape_sample(p.shape, p.size, anchor=p.anchor, center=p.center,
                                     width=width, height=height, template=tmpl)

    return sample()


def mask_samples(*, width: int = 64, height: int = 64, kind: str | None = None,
                 images: st.SearchStrategy | None = None,
                 template: int | None = None) -> st.SearchStrategy:
    """Mask samples: an image, a keep-mask and "black out every pixel where the mask is 0".

    Parameters
    ----------
    width, height : int, optional
        Image size (default 64 x 64).
    kind : {"inpaint", "outpaint", "random"} or None, optional
        See :func:`masks`.
    images : hypothesis strategy or None, optional
        Source images of ``(height, width)``; default :func:`source_images`.
        Keep their darkest pixels above the mask metrics' black threshold
        (gray 30 or darker), or the ground truth cannot score 0.
    template : int or None, optional
        A fixed prompt template, or None to draw one.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        :class:`pytest_violin.Sample` objects with task ``mask``.
    """
    masks(width=width, height=height, kind=kind)  # validates the arguments
    pairs = _kind_and_mask(int(width), int(height), kind)
    _check_strategy_or_none("images", images)
    _check_template(template, "mask", (None,))
    sources = source_images(width=width, height=height) if images is None else images

    @st.composite
    def sample(draw):
        image = draw(sources)
        chosen, keep = draw(pairs)
        tmpl = draw(_templates("mask", None, template))
        return _builders().mask_sample(image, keep, kind=chosen, template=tmpl)

    return sample()

