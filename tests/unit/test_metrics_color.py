"""Colour metrics: exact zero for perfect answers, agreement with the plain
definitions, known values, edge cases and errors."""

import math

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_violin.errors import ImageSizeMismatchError
from pytest_violin.metrics import (COLOR_METRICS, LAYOUTS, PROFILES, Metrics, color_metrics,
                                   rgb_to_lab)
from pytest_violin.metrics._reference import plain_color_metrics, plain_hf
from pytest_violin.metrics.color import _CH_TABLES, _hf

YELLOWISH = (217, 180, 81)
COLORS = [(217, 180, 81), (114, 103, 44), (0, 0, 0), (255, 255, 255), (10, 200, 30),
          (128, 0, 128)]


def blocks_image(h, w, layout, colors):
    """An expected image for ``layout``: each block one colour."""
    img = np.zeros((h, w, 3), np.uint8)
    hh, hw = h // 2, w // 2
    if layout == "single":
        img[:] = colors[0]
    elif layout == "vertical":
        img[:, :hw], img[:, hw:] = colors[0], colors[1]
    elif layout == "horizontal":
        img[:hh], img[hh:] = colors[0], colors[1]
    else:
        img[:hh, :hw], img[:hh, hw:] = colors[0], colors[1]
        img[hh:, :hw], img[hh:, hw:] = colors[2], colors[3]
    return img


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("size", [(64, 64), (33, 50), (2, 2)])
def test_perfect_answer_scores_exactly_zero(layout, profile, size):
    for shift in range(3):
        colors = COLORS[shift:] + COLORS[:shift]
        exp = blocks_image(*size, layout, colors)
        m = color_metrics(exp, exp.copy(), layout=layout, profile=profile)
        assert isinstance(m, Metrics) and m.task == "color" and m.profile == profile
        assert tuple(m) == COLOR_METRICS
        assert all(v == 0.0 for v in m.values()), m
        assert m.mean == 0.0


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_fast_path_equals_plain_definitions(layout, profile):
    rng = np.random.default_rng(11)
    exp = blocks_image(48, 40, layout, COLORS)
    noise = rng.integers(0, 256, exp.shape, dtype=np.uint8)
    near = exp.copy()
    near[rng.random(exp.shape[:2]) < 0.05] = (220, 178, 85)
    smooth = cv2.GaussianBlur(noise, (0, 0), 4)
    for gen in (noise, near, smooth, exp):
        fast = color_metrics(gen, exp, layout=layout, profile=profile)
        plain = plain_color_metrics(gen, exp, layout=layout, profile=profile)
        for k in COLOR_METRICS:
            assert fast[k] == pytest.approx(plain[k], abs=1e-9), k


@settings(max_examples=25, deadline=None)
@given(gen=hnp.arrays(np.uint8, hnp.array_shapes(min_dims=3, max_dims=3, min_side=2, max_side=24)
                      .map(lambda s: (s[0], s[1], 3))),
       data=st.data())
def test_fast_equals_plain_property(gen, data):
    layout = data.draw(st.sampled_from(LAYOUTS))
    profile = data.draw(st.sampled_from(PROFILES))
    uniform_expected = data.draw(st.booleans())
    if uniform_expected:
        exp = blocks_image(gen.shape[0], gen.shape[1], layout, COLORS)
    else:
        exp = data.draw(hnp.arrays(np.uint8, gen.shape))
    if data.draw(st.booleans()):
        _CH_TABLES.clear()
    fast = color_metrics(gen, exp, layout=layout, profile=profile)
    plain = plain_color_metrics(gen, exp, layout=layout, profile=profile)
    for k in COLOR_METRICS:
        assert fast[k] == pytest.approx(plain[k], abs=1e-9), k


def test_known_values_for_a_uniform_shift():
    exp = np.full((16, 16, 3), YELLOWISH, np.uint8)
    gen = np.full((16, 16, 3), (227, 170, 81), np.uint8)
    m = color_metrics(gen, exp)
    assert m["rgb_ed"] == pytest.approx(math.sqrt(200) / 441.67, rel=1e-12)
    lab = rgb_to_lab(np.stack([exp[:1, :1], gen[:1, :1]]).reshape(1, 2, 3))
    from skimage.color import deltaE_ciede2000
    assert m["lab_00"] == pytest.approx(float(deltaE_ciede2000(lab[0, 0], lab[0, 1])) / 100)
    assert m["sd"] == 0.0 and m["ced"] == 0.0 and m["hf"] == 0.0


def test_sd_of_two_level_image():
    exp = np.zeros((8, 8, 3), np.uint8)
    gen = exp.copy()
    gen[:, :4] = 200  # every channel: half 0, half 200 -> std 100
    assert color_metrics(gen, exp)["sd"] == pytest.approx(100 / 127.5)


def test_ced_counts_canny_edges():
    gen = np.zeros((32, 32, 3), np.uint8)
    gen[:, 16:] = 255
    edges = cv2.Canny(cv2.cvtColor(gen, cv2.COLOR_RGB2GRAY), 20, 60)
    m = color_metrics(gen, np.zeros_like(gen))
    assert m["ced"] == pytest.approx(np.count_nonzero(edges) / 1024) and m["ced"] > 0


def test_multi_block_scores_each_block_alone():
    # A perfect vertical answer has a hard edge in the middle: scored as one
    # block it has edges and high frequencies, per block it has none.
    exp = blocks_image(32, 32, "vertical", [(0, 0, 0), (255, 255, 255)])
    assert color_metrics(exp, exp, layout="vertical").mean == 0.0
    single = color_metrics(exp, exp, layout="single")
    assert single["ced"] > 0 and single["hf"] > 0 and single["sd"] > 0


def test_blocks_are_averaged():
    exp = blocks_image(20, 20, "horizontal", [(0, 0, 0), (0, 0, 0)])
    gen = exp.copy()
    gen[10:] = (30, 40, 0)  # bottom block off by 50 in RGB, top perfect
    assert color_metrics(gen, exp, layout="horizontal")["rgb_ed"] == pytest.approx(50 / 441.67 / 2)


def test_strict_sees_what_8bit_lab_quantizes_away():
    exp = np.full((8, 8, 3), (172, 172, 172), np.uint8)
    gen = np.full((8, 8, 3), (173, 173, 173), np.uint8)
    lab = rgb_to_lab(np.concatenate([exp[:1, :1], gen[:1, :1]], axis=1))
    assert np.array_equal(lab[0, 0], lab[0, 1])  # same 8-bit Lab code
    assert color_metrics(gen, exp)["lab_00"] == 0.0
    assert color_metrics(gen, exp, profile="strict")["lab_00"] > 0.0


def test_rgb_to_lab_profiles():
    rgb = np.array([[[255, 255, 255], [0, 0, 0], [255, 0, 0]]], np.uint8)
    v, s = rgb_to_lab(rgb), rgb_to_lab(rgb, profile="strict")
    assert v.shape == s.shape == (1, 3, 3) and v.dtype == s.dtype == np.float64
    np.testing.assert_allclose(v[0, :2, 0], [100, 0], atol=1e-9)
    np.testing.assert_allclose(s[0, 2], [53.24, 80.09, 67.20], atol=0.01)
    np.testing.assert_allclose(v[0, 2], s[0, 2], atol=1.0)  # 8-bit quantization error
    with pytest.raises(ValueError, match="unknown metric profile 'cie'"):
        rgb_to_lab(rgb, profile="cie")


# ------------------------------------------------------------ hf edge cases

@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (6, 1), (2, 2), (5, 9), (64, 48)])
def test_hf_matches_plain_fft_on_any_block_shape(shape):
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    g = rng.integers(0, 256, shape, dtype=np.uint8)
    assert _hf(g) == pytest.approx(plain_hf(g), abs=1e-12)


def test_hf_zero_total_power_and_constant_blocks():
    assert _hf(np.zeros((16, 16), np.uint8)) == 0.0
    assert _hf(np.full((16, 16), 77, np.uint8)) == 0.0
    assert _hf(np.full((1, 1), 200, np.uint8)) == 0.0


def test_hf_of_checkerboard_is_all_high_frequency():
    g = (np.indices((32, 32)).sum(axis=0) % 2 * 255).astype(np.uint8)
    # half the power is the DC term (mean 127.5), half at the Nyquist corner
    assert _hf(g) == pytest.approx(0.5)


# ------------------------------------------------------------ errors and inputs

def test_accepts_any_as_rgb8_input(tmp_path):
    from PIL import Image

    exp = np.full((8, 8, 3), YELLOWISH, np.uint8)
    path = tmp_path / "e.png"
    Image.fromarray(exp).save(path)
    base = color_metrics(exp, exp)
    assert color_metrics(Image.fromarray(exp), path) == base
    assert color_metrics(exp / 255.0, path.read_bytes()) == base


def test_size_mismatch_names_both_shapes():
    a, b = np.zeros((8, 8, 3), np.uint8), np.zeros((8, 9, 3), np.uint8)
    with pytest.raises(ImageSizeMismatchError, match=r"\(8, 8, 3\).*\(8, 9, 3\)"):
        color_metrics(a, b)
    with pytest.raises(ValueError):
        color_metrics(a, b)


def test_unknown_layout_and_profile():
    a = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match=r"'diagonal'.*single, vertical, horizontal, quad"):
        color_metrics(a, a, layout="diagonal")
    with pytest.raises(ValueError, match=r"'loose'.*violin, strict"):
        color_metrics(a, a, profile="loose")


@pytest.mark.parametrize("layout,shape", [("vertical", (4, 1)), ("horizontal", (1, 4)),
                                          ("quad", (1, 4)), ("quad", (4, 1))])
def test_image_too_small_for_layout(layout, shape):
    a = np.zeros(shape + (3,), np.uint8)
    with pytest.raises(ValueError, match=rf"too small for layout '{layout}'"):
        color_metrics(a, a, layout=layout)


def test_partly_filled_table_gets_the_missing_codes():
    # The per-colour table is filled lazily: a second answer with codes the
    # first did not have must not read unfilled entries.
    _CH_TABLES.clear()
    exp = np.full((32, 32, 3), YELLOWISH, np.uint8)
    rng = np.random.default_rng(5)
    first = np.clip(exp.astype(int) + rng.integers(-3, 4, exp.shape), 0, 255).astype(np.uint8)
    second = rng.integers(0, 256, exp.shape, dtype=np.uint8)
    for gen in (first, second, first):
        fast = color_metrics(gen, exp)["lab_00"]
        assert math.isfinite(fast)
        assert fast == pytest.approx(plain_color_metrics(gen, exp)["lab_00"], abs=1e-9)
