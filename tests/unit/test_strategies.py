"""Tests of pytest_violin.strategies: validation, well-formed draws, shrinking."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import find as _find
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from skimage.measure import label


def find(strategy, condition, *, explain=False):
    """``hypothesis.find``, derandomized: a shrink result must not depend on the run's seed.

    Without the explain phase, which runs after shrinking only to report which
    parts of the minimal example may vary (most of the time a find spends).
    ``explain=True`` keeps it, where the oldest hypothesis allowed (6.119)
    needs it to reach the minimal example (``masks()`` of any kind).
    """
    phases = tuple(p for p in Phase if explain or p is not Phase.explain)
    return _find(strategy, condition, settings=settings(derandomize=True, database=None, phases=phases))

from pytest_violin import strategies as S
from pytest_violin.hypothesis_profiles import PROFILE_NAME, VIOLIN_MAX_EXAMPLES, register_profiles
from pytest_violin.suite.colors import ISCC_NBS_COLORS, format_color, parse_color
from pytest_violin.suite.drawing import shape_extent

NAMED = {c.rgb for c in ISCC_NBS_COLORS}
FAST = settings(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SMALL = dict(width=24, height=16)


# ---------------------------------------------------------------- validation
BAD_ARGUMENTS = [
    (S.rgb_colors, {"named": "yes"}, "'yes'"),
    (S.hex_colors, {"named": 1}, "1"),
    (S.colors, {"notation": "cmyk"}, "'cmyk'"),
    (S.colors, {"notation": "HEX"}, "'HEX'"),
    (S.colors, {"named": None}, "None"),
    (S.split_ratios, {"min_value": 0.0}, "0.0"),
    (S.split_ratios, {"max_value": 1.0}, "1.0"),
    (S.split_ratios, {"min_value": float("nan")}, "nan"),
    (S.split_ratios, {"min_value": 0.7, "max_value": 0.3}, "0.3"),
    (S.split_ratios, {"step": 0}, "0"),
    (S.split_ratios, {"min_value": 0.301, "max_value": 0.302, "step": 0.01}, "0.301"),
    (S.split_ratios, {"min_value": True}, "True"),
    (S.shape_placements, {"width": 0}, "0"),
    (S.shape_placements, {"height": 12.5}, "12.5"),
    (S.shape_placements, {"shapes": ("hexagon",)}, "('hexagon',)"),
    (S.shape_placements, {"shapes": ()}, "()"),
    (S.shape_placements, {"shapes": "circle"}, "'circle'"),
    (S.shape_placements, {"min_size": 0}, "0"),
    (S.shape_placements, {"max_size": 1.5}, "1.5"),
    (S.shape_placements, {"min_size": 0.4, "max_size": 0.2}, "0.2"),
    (S.shape_placements, {"width": 100, "height": 20, "max_size": 0.5}, "0.5"),
    (S.shape_placements, {"anchors": ("middle",)}, "('middle',)"),
    (S.shape_placements, {"anchors": None, "centers": False}, "False"),
    (S.shape_placements, {"centers": "yes"}, "'yes'"),
    (S.masks, {"width": 8}, "8"),
    (S.masks, {"height": -64}, "-64"),
    (S.masks, {"kind": "frame"}, "'frame'"),
    (S.masks, {"dtype": np.float32}, "float32"),
    (S.source_images, {"width": "64"}, "'64'"),
    (S.color_samples, {"notation": "lab"}, "'lab'"),
    (S.color_samples, {"template": -1}, "-1"),
    (S.color_samples, {"notation": "hex", "template": 6}, "6"),
    (S.color_samples, {"width": 0}, "0"),
    (S.block_samples, {"layout": "diagonal"}, "'diagonal'"),
    (S.block_samples, {"layout": "quad", "template": 2}, "2"),
    (S.ratio_samples, {"orientation": "diagonal"}, "'diagonal'"),
    (S.ratio_samples, {"min_value": 2}, "2"),
    (S.shape_samples, {"shapes": ("oval",)}, "('oval',)"),
    (S.shape_samples, {"template": 10}, "10"),
    (S.mask_samples, {"kind": "outline"}, "'outline'"),
    (S.mask_samples, {"images": [np.zeros((4, 4, 3))]}, "array("),
    (S.mask_samples, {"template": "0"}, "'0'"),
]


@pytest.mark.parametrize(("factory", "kwargs", "shown"), BAD_ARGUMENTS,
                         ids=[f"{f.__name__}-{'-'.join(k)}" for f, k, _ in BAD_ARGUMENTS])
def test_bad_arguments_raise_invalid_argument_naming_the_value(factory, kwargs, shown):
    with pytest.raises(InvalidArgument) as info:
        factory(**kwargs)  # validation happens at call time, before any draw
    message = str(info.value)
    assert shown in message
    assert any(f"{name}=" in message for name in kwargs)


def test_strategy_vocabulary_matches_the_suite():
    from pytest_violin.suite import drawing as geometry, drawing as masks

    assert set(S.ANCHORS) == set(geometry.ANCHORS)
    assert S.SHAPES == geometry.SHAPES
    assert S.MASK_KINDS == masks.MASK_KINDS


def test_strategy_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        S.split_ratios(0.1, 0.9)  # type: ignore[misc]
    with pytest.raises(TypeError):
        S.masks(64, 64)  # type: ignore[misc]


# ---------------------------------------------------------------- colors
@FAST
@given(rgb=S.rgb_colors())
def test_rgb_colors_are_8bit_triples(rgb):
    assert len(rgb) == 3 and all(isinstance(c, int) and 0 <= c <= 255 for c in rgb)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), notation=st.sampled_from(S.NOTATIONS))
def test_colors_parse_back_exactly_in_their_notation(data, notation):
    text = data.draw(S.colors(notation=notation))
    rgb = parse_color(text)
    assert format_color(rgb, notation) == text
    if notation == "name":
        assert rgb in NAMED
    if notation == "hex":
        assert text.startswith("#") and len(text) == 7 and text == text.upper()


@FAST
@given(text=S.colors())
def test_any_notation_colors_parse(text):
    parse_color(text)


def test_colors_shrink_to_the_darkest_named_color():
    darkest = min(NAMED, key=lambda c: (0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2], c))
    assert find(S.rgb_colors(), lambda c: True) == darkest == (43, 41, 43)
    assert find(S.colors(), lambda c: True) == "#2B292B"
    assert find(S.colors(notation="name"), lambda c: True) == "black"


def test_colors_that_are_not_named_shrink_to_pure_black():
    assert find(S.rgb_colors(), lambda c: c not in NAMED) == (0, 0, 0)
    assert find(S.hex_colors(named=False), lambda c: True) == "#000000"
    # a channel constraint shrinks the other channels to 0
    assert find(S.rgb_colors(named=False), lambda c: c[2] >= 100) == (0, 0, 100)


def test_a_failing_color_shrinks_to_a_minimal_example_of_its_branch():
    # rgb_colors() = one_of(named colors, any rgb): the shrinker keeps the branch it
    # found a failure in and minimizes there, so the result is either a named color
    # or the plain color with every unconstrained channel at 0, never a random one.
    found = find(S.rgb_colors(), lambda c: c[0] > 200)
    assert found[0] > 200
    assert found in NAMED or found == (201, 0, 0)


# ---------------------------------------------------------------- ratios
@FAST
@given(data=st.data(), lo=st.integers(1, 98), span=st.integers(0, 98))
def test_split_ratios_stay_in_bounds_on_the_grid(data, lo, span):
    lo_v, hi_v = lo / 100, min(99, lo + span) / 100
    r = data.draw(S.split_ratios(min_value=lo_v, max_value=hi_v))
    assert lo_v - 1e-9 <= r <= hi_v + 1e-9
    assert abs(r / 0.005 - round(r / 0.005)) < 1e-6


def test_split_ratios_shrink_toward_one_half():
    assert find(S.split_ratios(), lambda r: True) == 0.5
    assert find(S.split_ratios(), lambda r: r < 0.4) == 0.395
    assert find(S.split_ratios(), lambda r: r > 0.7) == 0.705
    assert find(S.split_ratios(min_value=0.6, max_value=0.9), lambda r: True) == 0.6
    assert find(S.split_ratios(min_value=0.1, max_value=0.3, step=0.01), lambda r: True) == 0.3


# ---------------------------------------------------------------- placements
@settings(max_examples=40, deadline=None)
@given(data=st.data(), width=st.integers(16, 96), height=st.integers(16, 96))
def test_shape_placements_always_fit_the_canvas(data, width, height):
    max_size = min(0.5, math.floor(100 * height / width) / 100)
    p = data.draw(S.shape_placements(width=width, height=height, max_size=max_size))
    assert p.shape in S.SHAPES and 0.05 <= p.size <= max_size
    assert (p.anchor is None) != (p.center is None)
    bw, bh = shape_extent(p.shape, p.size, width)
    if p.center is not None:
        fx, fy = p.center
        x0 = math.floor(fx * width - bw / 2 + 0.5)
        y0 = math.floor(fy * height - bh / 2 + 0.5)
        assert 0 <= x0 and x0 + bw <= width and 0 <= y0 and y0 + bh <= height
    else:
        assert p.anchor in S.ANCHORS and bw <= width and bh <= height


def test_shape_placements_shrink_to_a_small_centred_circle():
    assert find(S.shape_placements(), lambda p: True) == S.ShapePlacement("circle", 0.05,
                                                                          "center", None)
    right = find(S.shape_placements(anchors=None), lambda p: p.center[0] > 0.7)
    assert right == S.ShapePlacement("circle", 0.05, None, (0.71, 0.5))
    big = find(S.shape_placements(shapes=("square", "triangle")), lambda p: p.size >= 0.3)
    assert big == S.ShapePlacement("square", 0.3, "center", None)


# ---------------------------------------------------------------- masks
def _enclosed_keep(keep: np.ndarray) -> int:
    """Kept pixels in a 4-connected kept component that does not touch the border."""
    labels = label(keep, connectivity=1)
    border = set(np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]])))
    inside = [lab for lab in np.unique(labels) if lab and lab not in border]
    return int(np.isin(labels, inside).sum())


@settings(max_examples=30, deadline=None)
@given(data=st.data(), kind=st.sampled_from(S.MASK_KINDS), width=st.integers(16, 48),
       height=st.integers(16, 48))
def test_masks_are_well_formed(data, kind, width, height):
    m = data.draw(S.masks(width=width, height=height, kind=kind))
    assert m.shape == (height, width) and m.dtype == bool
    assert m.any() and not m.all()
    assert _enclosed_keep(m) == 0
    black = ~m
    touches = black[0].any() or black[-1].any() or black[:, 0].any() or black[:, -1].any()
    if kind == "inpaint":
        assert not touches  # an interior blob
    if kind == "outpaint":
        assert touches
        # one to three sides, never a closed frame: some edge keeps its middle pixel
        mids = (m[0, width // 2], m[-1, width // 2], m[height // 2, 0], m[height // 2, -1])
        assert any(mids) and not all(mids)


@FAST
@given(m=S.masks(dtype=np.uint8))
def test_uint8_masks_hold_zeros_and_ones(m):
    assert m.dtype == np.uint8 and set(np.unique(m)) == {0, 1}


def test_masks_shrink_to_simple_ones():
    band = find(S.masks(kind="outpaint"), lambda m: True)
    expected = np.ones((64, 64), bool)
    expected[:, :6] = False  # one band, left side, 10% of 64 px
    assert np.array_equal(band, expected)
    blob = find(S.masks(kind="inpaint"), lambda m: True)
    assert (~blob).sum() < 0.05 * blob.size  # one small ellipse
    # any kind: the band has the shortest description, so it is the simplest mask
    assert np.array_equal(find(S.masks(), lambda m: True, explain=True), expected)


# ---------------------------------------------------------------- samples
def _scores_zero(sample):
    expected = sample.expected()
    assert expected.shape == (sample.height, sample.width, 3)
    metrics = sample.score(expected)
    assert set(metrics) == set(sample.metric_names)
    assert all(v == 0.0 for v in metrics.values()), metrics
    return metrics


@FAST
@given(sample=S.color_samples(**SMALL))
def test_color_samples_score_zero_against_their_ground_truth(sample):
    _scores_zero(sample)
    assert sample.task == "color" and sample.layout == "single"
    (rgb,) = sample.spec["colors"]
    assert (sample.expected() == np.array(rgb, np.uint8)).all()


@FAST
@given(sample=S.block_samples(**SMALL))
def test_block_samples_score_zero_against_their_ground_truth(sample):
    _scores_zero(sample)
    assert sample.layout in ("vertical", "horizontal", "quad")
    assert len({tuple(c) for c in sample.spec["colors"]}) == len(sample.spec["colors"])


@FAST
@given(sample=S.ratio_samples(**SMALL))
def test_ratio_samples_score_zero_against_their_ground_truth(sample):
    _scores_zero(sample)
    assert sample.task == "ratio"


@FAST
@given(sample=S.shape_samples(width=48, height=40, max_size=0.5))
def test_shape_samples_score_zero_against_their_ground_truth(sample):
    _scores_zero(sample)
    assert sample.task == "shape"


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(sample=S.mask_samples(width=32, height=32))
def test_mask_samples_score_zero_in_both_profiles(sample):
    _scores_zero(sample)
    strict = sample.score(sample.expected(), profile="strict")
    assert all(v == 0.0 for v in strict.values()), strict
    source, mask_rgb = sample.inputs
    keep = mask_rgb[:, :, 0] == 255
    assert (sample.expected()[~keep] == 0).all()
    assert np.array_equal(sample.expected()[keep], source[keep])
    assert (source >= 30).all()  # above the mask metrics' black threshold


@FAST
@given(image=S.source_images(width=20, height=12))
def test_source_images_are_lifted_rgb(image):
    assert image.shape == (12, 20, 3) and image.dtype == np.uint8 and image.min() >= 40


def test_samples_shrink_to_the_simplest_prompt():
    sample = find(S.color_samples(**SMALL), lambda s: True)
    assert sample.spec["colors"] == ((43, 41, 43),) and "#2B292B" in sample.prompt
    shape = find(S.shape_samples(**SMALL, max_size=0.6), lambda s: True)
    assert shape.spec["shape"] == "circle" and shape.spec["anchor"] == "center"
    ratio = find(S.ratio_samples(**SMALL), lambda s: True)
    assert ratio.spec["ratio"] == 0.5


# ---------------------------------------------------------------- profile
def test_violin_hypothesis_profile():
    register_profiles()
    profile = settings.get_profile(PROFILE_NAME)
    assert profile.deadline is None
    assert profile.max_examples == VIOLIN_MAX_EXAMPLES
    assert HealthCheck.too_slow in profile.suppress_health_check
    assert profile.database is not None
    assert Phase.shrink in profile.phases and Phase.reuse in profile.phases
    assert getattr(Phase, "explain", None) not in profile.phases


# ---------------------------------------------------------------- this suite's CI profile
@pytest.mark.parametrize("value, expected", [("true", True), ("1", True), ("yes", True),
                                             ("", False), ("0", False), ("false", False),
                                             ("False", False), (None, False)])
def test_ci_is_detected_from_the_environment(value, expected):
    from conftest import _running_in_ci

    assert _running_in_ci({} if value is None else {"CI": value}) is expected


def test_ci_runs_the_property_tests_derandomized_and_bounded(request):
    from conftest import CI_MAX_EXAMPLES, CI_PROFILE, _running_in_ci

    profile = settings.get_profile(CI_PROFILE)
    assert profile.derandomize is True and profile.database is None and profile.deadline is None
    assert profile.max_examples == CI_MAX_EXAMPLES <= 100
    if _running_in_ci() and not request.config.getoption("hypothesis_profile", default=None):
        current = settings.default
        assert current.derandomize is True and current.max_examples == CI_MAX_EXAMPLES
