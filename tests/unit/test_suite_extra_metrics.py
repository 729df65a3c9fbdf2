"""Metrics of the violin-extra tasks: ratio, border, count."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.metrics.geometric import (border_metrics, count_metrics, nearer_first,
                                         ratio_metrics)
from pytest_violin.suite.drawing import render_border, render_dots, render_ratio

BLUE, RED = (0, 0, 255), (255, 0, 0)


@settings(max_examples=25, deadline=None)
@given(split=st.integers(5, 95), off=st.integers(-40, 40))
def test_ratio_error_grows_with_the_boundary_offset(split, off):
    w = h = 100
    exp = render_ratio("vertical", split, [BLUE, RED], w, h)
    got_split = min(max(split + off, 0), w)
    img = render_ratio("vertical", got_split, [BLUE, RED], w, h) if 0 < got_split < w else \
        np.full((h, w, 3), BLUE if got_split >= w else RED, np.uint8)
    m = ratio_metrics(img, exp, orientation="vertical", split=split, colors=[BLUE, RED])
    r = split / w
    assert m["ratio"] == pytest.approx(min(abs(got_split / w - r) / max(r, 1 - r), 1.0))
    assert all(0.0 <= v <= 1.0 for v in m.values())
    if off == 0:
        assert m.mean == 0.0


def test_ratio_50_50_answer_to_a_13_percent_request_is_penalised():
    exp = render_ratio("vertical", 13, [BLUE, RED], 100, 60)
    half = render_ratio("vertical", 50, [BLUE, RED], 100, 60)
    m = ratio_metrics(half, exp, orientation="vertical", split=13, colors=[BLUE, RED])
    assert m["ratio"] == pytest.approx(0.37 / 0.87)
    # region 1 exact; region 2 has 37 of its 87 columns blue instead of red
    wrong = 37 / 87 * np.sqrt(2 * 255.0 ** 2) / np.sqrt(3 * 255.0 ** 2)
    assert m["rgb_ed"] == pytest.approx(wrong / 2, rel=1e-3)


@pytest.mark.parametrize("t, got", [(20, 20), (20, 10), (20, 30), (4, 8), (10, 0)])
def test_border_thickness_error(t, got):
    exp = render_border(t, 200, 160)
    img = render_border(got, 200, 160) if got else np.zeros((160, 200, 3), np.uint8)
    m = border_metrics(img, exp, thickness=t)
    assert m["thickness"] == pytest.approx(min(abs(got - t) / t, 1.0))
    assert m["spread"] == 0.0
    assert (m["rgb_ed"] == 0.0) == (got == t)


def test_border_uneven_sides_raise_spread():
    exp = render_border(10, 120, 120)
    img = exp.copy()
    img[10:60, 10:20] = 255  # left side twice as thick on half its length
    m = border_metrics(img, exp, thickness=10)
    assert m["spread"] > 0.1 and 0.0 < m["thickness"] <= 1.0


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 12), found=st.integers(0, 20))
def test_count_error(n, found):
    positions = [[8 + 16 * (k % 8), 8 + 16 * (k // 8)] for k in range(found)]
    img = render_dots(positions, 4, 160, 64)
    m = count_metrics(img, count=n, dot=4)
    assert m.info["found"] == found
    assert m["count"] == pytest.approx(min(abs(found - n) / n, 1.0))
    assert m["size"] == (0.0 if found else 1.0)


def test_count_size_error_for_bigger_dots():
    img = render_dots([[10, 10], [40, 40]], 8, 64, 64)
    m = count_metrics(img, count=2, dot=4)
    assert m["count"] == 0.0 and m["size"] == 1.0


@settings(max_examples=30, deadline=None)
@given(st.tuples(*(st.integers(0, 255),) * 3), st.tuples(*(st.integers(0, 255),) * 3))
def test_nearer_first_matches_a_direct_distance(a, b):
    rng = np.random.default_rng(sum(a) + sum(b))
    img = rng.integers(0, 256, (16, 16, 3), np.uint8)
    x = img.astype(np.int64)
    da = ((x - a) ** 2).sum(axis=2)
    db = ((x - b) ** 2).sum(axis=2)
    assert np.array_equal(nearer_first(img, a, b), da < db)
