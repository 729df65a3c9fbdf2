"""Hypothesis strategies for writing your own obedience tests.

Every strategy takes keyword-only arguments, validates them when it is called (not when it is drawn from) and
raises :class:`hypothesis.errors.InvalidArgument` naming the argument and its value. All of them are composed
from hypothesis's own strategies, so a failing example shrinks:

* colors shrink toward the 29 named ISCC-NBS Level-2 colors, the darkest first (ISCC-NBS "Black",
  ``#2B292B``); a color that must not be a named one shrinks channel by channel toward pure black ``(0, 0,
  0)``;
* split ratios shrink toward 0.5 (the balanced split a model defaults to);
* shape placements shrink toward a circle of the smallest size at the canvas centre (the ``center`` anchor);
* masks shrink toward one small blob / one band / one short stroke (any kind: the band on the left side);
* samples shrink through all of the above, and toward prompt template 0.

Examples
--------
A property test against your model is one decorator and two lines::

    from hypothesis import given
    from pytest_violin import assert_obeys
    from pytest_violin.strategies import shape_samples

    @given(sample=shape_samples())
    def test_shapes(sample, violin_generate):
        assert_obeys(violin_generate(sample), sample)
"""

from __future__ import annotations

from ._colors import NOTATIONS, colors, hex_colors, named_colors, rgb_colors
from ._geometry import ANCHORS, SHAPES, ShapePlacement, shape_placements, split_ratios
from ._masks import MASK_KINDS, masks, source_images
from ._samples import block_samples, color_samples, mask_samples, ratio_samples, shape_samples

__all__ = ["NOTATIONS", "MASK_KINDS", "SHAPES", "ANCHORS", "ShapePlacement", "named_colors", "rgb_colors",
           "hex_colors", "colors", "split_ratios", "shape_placements", "masks", "source_images", "color_samples",
           "block_samples", "ratio_samples", "shape_samples", "mask_samples"]
