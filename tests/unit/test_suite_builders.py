"""Builders: one sample from parameters, same Sample class as the suites."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.errors import ImageSizeMismatchError, InvalidColorError, SuiteError
from pytest_violin.suite import (Sample, block_sample, color_sample, load_suite, mask_sample,
                                 ratio_sample, shape_sample)

rgb_st = st.tuples(*(st.integers(0, 255),) * 3)


def test_color_sample_id_prompt_and_pixels():
    s = color_sample("#D9B451")
    assert isinstance(s, Sample) and type(s) is type(load_suite("violin", limit=1)[0])
    assert s.id == "custom/color/d9b451" and s.task == "color" and s.layout == "single"
    assert "#D9B451" in s.prompt
    assert (s.expected().reshape(-1, 3) == (217, 180, 81)).all()
    named = color_sample("yellow", notation="name", template=3)
    assert "yellow" in named.prompt and named.id == "custom/color/d9b451/name/t3"
    assert color_sample("rgb(217, 180, 81)", notation="rgb").id.endswith("/rgb")
    with pytest.raises(InvalidColorError):
        color_sample("#123", notation="name")
    with pytest.raises(SuiteError, match="0..5"):
        color_sample("#123456", template=6)


@settings(max_examples=30, deadline=None)
@given(rgb=rgb_st, notation=st.sampled_from(["hex", "rgb", "hsl"]),
       w=st.integers(4, 64), h=st.integers(4, 64))
def test_color_sample_renders_exactly_what_the_prompt_says(rgb, notation, w, h):
    from pytest_violin.suite import format_color, parse_color

    s = color_sample(rgb, notation=notation, width=w, height=h)
    code = format_color(rgb, notation)
    assert code in s.prompt
    img = s.expected()
    assert img.shape == (h, w, 3)
    assert (img.reshape(-1, 3) == parse_color(code)).all()


@settings(max_examples=30, deadline=None)
@given(layout=st.sampled_from(["vertical", "horizontal", "quad"]), colors=st.lists(rgb_st,
       min_size=4, max_size=4), w=st.integers(2, 50), h=st.integers(2, 50),
       template=st.integers(0, 1))
def test_block_sample_quadrants_in_reading_order(layout, colors, w, h, template):
    n = 4 if layout == "quad" else 2
    s = block_sample(layout, colors[:n], width=w, height=h, template=template)
    img = s.expected()
    corners = {"tl": img[0, 0], "tr": img[0, -1], "bl": img[-1, 0], "br": img[-1, -1]}
    if layout == "quad":
        assert [tuple(corners[k]) for k in ("tl", "tr", "bl", "br")] == [tuple(c) for c in colors]
    elif layout == "vertical":
        assert tuple(corners["tl"]) == colors[0] == tuple(corners["bl"])
        assert tuple(corners["tr"]) == colors[1]
    else:
        assert tuple(corners["tl"]) == colors[0] == tuple(corners["tr"])
        assert tuple(corners["bl"]) == colors[1]
    assert s.layout == layout


def test_block_sample_errors():
    with pytest.raises(SuiteError, match="needs 4 colors"):
        block_sample("quad", ["#000000", "#ffffff"])
    with pytest.raises(SuiteError, match="unknown block layout"):
        block_sample("diagonal", ["#000000", "#ffffff"])


@settings(max_examples=30, deadline=None)
@given(ratio=st.floats(0.05, 0.95), orientation=st.sampled_from(["vertical", "horizontal"]),
       w=st.integers(40, 120), h=st.integers(40, 120))
def test_ratio_sample_splits_at_the_stated_share(ratio, orientation, w, h):
    s = ratio_sample(ratio, ["#0000FF", "#FF0000"], orientation=orientation, width=w, height=h)
    img = s.expected()
    blue = (img == (0, 0, 255)).all(axis=2).mean()
    extent = w if orientation == "vertical" else h
    assert abs(blue - ratio) <= 0.5 / extent + 1e-9
    assert s.task == "ratio" and s.spec["split"] == round(ratio * extent)


def test_ratio_sample_rejects_degenerate_ratios():
    for bad in (0.0, 1.0, 0.0005, 0.9995):
        with pytest.raises(SuiteError):
            ratio_sample(bad, ["#000000", "#ffffff"])


def test_shape_sample_defaults_and_errors():
    s = shape_sample("circle", 0.2, anchor="left-center")
    assert s.id == "custom/shape/circle/s0.2/left-center"
    assert "20%" in s.prompt and "left edge" in s.prompt
    assert shape_sample("square", 0.1).spec["anchor"] == "center"
    with pytest.raises(SuiteError, match="does not fit"):
        shape_sample("square", 0.5, center=(0.1, 0.5))
    with pytest.raises(SuiteError, match="unknown anchor"):
        shape_sample("square", 0.5, anchor="middle")
    with pytest.raises(SuiteError, match="unknown shape"):
        shape_sample("hexagon", 0.5)


def test_mask_sample_is_well_formed_and_scores_zero():
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (64, 80, 3), np.uint8)
    image[:10] = 0  # very dark rows that would join the black region unlifted
    mask = np.ones((64, 80), np.uint8)
    mask[20:40, 20:40] = 0
    mask[28:32, 28:32] = 1  # a kept hole enclosed by black: filled by well_formed
    s = mask_sample(image, mask * 255, kind="inpaint")
    src, mrgb = s.inputs
    assert src.min() >= 40
    keep = mrgb[:, :, 0] == 255
    assert not keep[28:32, 28:32].any() and keep.sum() == 64 * 80 - 400
    exp = s.expected()
    assert np.array_equal(exp, np.where(keep[:, :, None], src, 0))
    for profile in ("violin", "strict"):
        assert s.score(exp, profile=profile).mean == 0.0
    assert s.id.startswith("custom/mask/inpaint/")
    assert s.id == mask_sample(image, mask.astype(bool), kind="inpaint").id
    raw = mask_sample(image, mask, kind="inpaint", well_formed=False)
    assert raw.inputs[0].min() == 0 and raw.id != s.id
    with pytest.raises(ImageSizeMismatchError):
        mask_sample(image, mask[:10])
    with pytest.raises(SuiteError, match="unknown mask kind"):
        mask_sample(image, mask, kind="blur")
