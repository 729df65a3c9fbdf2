"""Where things go: split ratios and shape placements that always fit the canvas.

Split ratios shrink toward 0.5 (the balanced split a model defaults to); shape placements shrink toward a
circle of the smallest size at the canvas centre (the ``center`` anchor). :func:`grid_around_half` is the grid
both (and the photo crops of the mask strategies) draw from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..suite import drawing as _geometry
from ._checks import check, check_bool, check_canvas, check_subset, is_real

#: Shape kinds of the geometric task.
SHAPES = _geometry.SHAPES
#: Named alignments of a shape's bounding box, simplest first (the centre, then the rest in the order
#: :data:`pytest_violin.suite.drawing.ANCHORS` lists them).
ANCHORS = ("center", *(name for name in _geometry.ANCHORS if name != "center"))


class ShapePlacement(NamedTuple):
    """A shape and where it goes, as drawn by :func:`shape_placements`.

    Attributes
    ----------
    shape : str
        ``circle``, ``square`` or ``triangle``.
    size : float
        Diameter or side length as a fraction of the canvas width.
    anchor : str or None
        A named alignment (``left-center``, ...), or None when ``center`` is given.
    center : tuple of float or None
        ``(fx, fy)``: the bounding-box centre as fractions of the width and height, or None when ``anchor`` is
        given.
    """

    shape: str
    size: float
    anchor: str | None
    center: tuple | None

    @property
    def position(self):
        """The anchor name or the center pair (what ``assert_shape`` takes)."""
        return self.anchor if self.anchor is not None else self.center


# ---------------------------------------------------------------- ratios
def grid_around_half(lo: float, hi: float, step: float) -> st.SearchStrategy:
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

    Floats in ``[min_value, max_value]`` (``0 < min_value <= max_value < 1``) on the ``step`` grid (default
    0.005, half a percent, so ``0.315`` can be drawn; prompts state ratios as percentages, ``step`` in ``(0,
    0.5]``), shrinking toward 0.5 (or the grid point nearest 0.5 inside the bounds); bounds with no grid point
    between them are refused.
    """
    check(is_real(min_value) and 0.0 < min_value < 1.0, "min_value", min_value,
          "a number strictly between 0 and 1")
    check(is_real(max_value) and 0.0 < max_value < 1.0, "max_value", max_value,
          "a number strictly between 0 and 1")
    check(min_value <= max_value, "max_value", max_value,
          f"a number >= min_value={min_value!r}")
    check(is_real(step) and 0.0 < step <= 0.5, "step", step, "a number in (0, 0.5]")
    if math.floor(max_value / step + 1e-9) < math.ceil(min_value / step - 1e-9):
        raise InvalidArgument(f"min_value={min_value!r}, max_value={max_value!r} contain no "
                              f"multiple of step={step!r}; widen the bounds or use a finer step")
    return grid_around_half(float(min_value), float(max_value), float(step))


# ---------------------------------------------------------------- shapes
def _bbox_px(shape: str, size: float, width: int) -> tuple:
    from ..suite.drawing import shape_extent

    return shape_extent(shape, size, width)


def _centers(shape: str, size: float, width: int, height: int, step: float) -> st.SearchStrategy:
    """Center fractions on the ``step`` grid whose box fits, shrinking to the middle."""
    from ..suite.drawing import place_bbox

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
        return grid_around_half(lo, hi, step) if math.ceil(lo / step - 1e-9) <= \
            math.floor(hi / step + 1e-9) else st.just(0.5)

    return (st.tuples(axis(width, bw), axis(height, bh))
            .filter(lambda c: fits(*c)))


def shape_placements(*, width: int = 512, height: int = 512, shapes: Sequence[str] = SHAPES,
                     min_size: float = 0.05, max_size: float = 0.5,
                     anchors: Sequence[str] | None = ANCHORS,
                     centers: bool = True, step: float = 0.01) -> st.SearchStrategy:
    """:class:`ShapePlacement` tuples ``(shape, size, anchor, center)`` that always fit the canvas.

    ``shapes`` are the allowed kinds among ``circle``, ``square``, ``triangle`` (shrinks toward the first).
    ``min_size`` and ``max_size`` bound the size as a fraction of the width (whole percents are drawn,
    shrinking toward ``min_size``); the shape must fit vertically too, so ``max_size * width`` may not exceed
    the height. ``anchors`` are the allowed named alignments (see :data:`ANCHORS`; shrinks toward the first;
    None or empty for centers only); ``centers`` also draws free positions: the bounding-box centre as
    fractions of the width and height on the ``step`` grid (default one percent), always far enough from the
    edges that the whole shape is inside the canvas. At least one of the two must be allowed.
    """
    width, height = check_canvas(width, height, 8)
    shapes = check_subset("shapes", shapes, SHAPES)
    check(is_real(min_size) and 0.0 < min_size <= 1.0, "min_size", min_size,
          "a fraction of the width in (0, 1]")
    check(is_real(max_size) and 0.0 < max_size <= 1.0, "max_size", max_size,
          "a fraction of the width in (0, 1]")
    check(min_size <= max_size, "max_size", max_size, f"a size >= min_size={min_size!r}")
    lo_pct, hi_pct = math.ceil(min_size * 100 - 1e-9), math.floor(max_size * 100 + 1e-9)
    check(lo_pct <= hi_pct, "max_size", max_size,
          f"bounds that contain a whole percent (min_size={min_size!r})")
    check(hi_pct / 100.0 * width * (math.sqrt(3) / 2 if shapes == ("triangle",) else 1.0)
          <= height + 1e-9, "max_size", max_size,
          f"a size whose shape fits the {width}x{height} canvas height "
          f"(at most {height / width:.3f} of the width)")
    if anchors is None:
        anchors = ()
    if anchors:
        anchors = check_subset("anchors", anchors, ANCHORS)
    else:
        check(isinstance(anchors, (tuple, list)), "anchors", anchors,
              "a sequence of anchor names or None")
    check_bool("centers", centers)
    check(bool(anchors) or centers, "centers", centers,
          "True when anchors is empty (no position could be drawn)")
    check(is_real(step) and 0.0 < step <= 0.5, "step", step, "a number in (0, 0.5]")

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
