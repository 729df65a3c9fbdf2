"""Shape metrics: perfect answers, known values, profile differences, edge cases."""

import math

import cv2
import numpy as np
import pytest

from pytest_violin.errors import ImageSizeMismatchError
from pytest_violin.metrics import PROFILES, SHAPE_METRICS, shape_metrics


def canvas(h=128, w=128):
    return np.zeros((h, w, 3), np.uint8)


def circle(d, h=128, w=128, x=0, color=(255, 255, 255)):
    """Solid circle of diameter ``d``, bounding box at column ``x``, vertically centred."""
    img = canvas(h, w)
    r = d // 2
    cv2.circle(img, (x + r, h // 2), r, color, thickness=-1, lineType=cv2.LINE_8)
    return img


def square(s, h=128, w=128, x=0, color=(255, 255, 255)):
    img = canvas(h, w)
    y = (h - s) // 2
    img[y:y + s, x:x + s] = color
    return img


def triangle(s, h=128, w=128, x=0, color=(255, 255, 255)):
    """Upright equilateral triangle of side ``s``."""
    img = canvas(h, w)
    th = s * math.sqrt(3) / 2
    y0 = (h - th) / 2
    pts = np.array([[x + s / 2, y0], [x, y0 + th], [x + s, y0 + th]])
    cv2.fillPoly(img, [np.round(pts).astype(np.int32)], color, lineType=cv2.LINE_8)
    return img


KINDS = {"circle": circle, "square": square, "triangle": triangle}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("size,x,dims", [(26, 0, (128, 128)), (25, 40, (128, 128)),
                                         (3, 0, (128, 128)), (102, 0, (512, 512)),
                                         (40, 77, (96, 160))])
def test_perfect_answer_scores_exactly_zero(kind, size, x, dims, profile):
    exp = KINDS[kind](size, *dims, x=x)
    m = shape_metrics(exp.copy(), exp, profile=profile)
    assert m.task == "shape" and tuple(m) == SHAPE_METRICS
    assert all(v == 0.0 for v in m.values()), m


@pytest.mark.parametrize("profile", PROFILES)
def test_coloured_shape_on_black_is_perfect_too(profile):
    exp = circle(40, color=(200, 30, 220))  # gray 111 < 127: not a shape at all
    assert shape_metrics(exp, exp, profile=profile)["iou"] == 0.0
    exp = circle(40, color=(250, 240, 130))
    assert all(v == 0.0 for v in shape_metrics(exp, exp, profile=profile).values())


def test_empty_answer():
    exp = circle(30)
    for profile in PROFILES:
        m = shape_metrics(canvas(), exp, profile=profile)
        assert dict(m) == {"iou": 1.0, "dist": 1.0, "size": 1.0, "shape": 1.0, "purity": 0.0}


def test_empty_target():
    assert shape_metrics(circle(30), canvas())["size"] == 1.0
    violin = shape_metrics(canvas(), canvas())
    strict = shape_metrics(canvas(), canvas(), profile="strict")
    assert dict(violin) == {"iou": 0.0, "dist": 1.0, "size": 0.0, "shape": 0.0, "purity": 0.0}
    assert strict.mean == 0.0


def test_translation_changes_iou_and_dist_only():
    exp = square(20)
    gen = np.roll(exp, 10, axis=1)
    m = shape_metrics(gen, exp)
    assert m["dist"] == pytest.approx(10 / math.hypot(128, 128))
    assert m["iou"] == pytest.approx(1 - 200 / 600)
    assert m["size"] == 0.0 and m["shape"] == pytest.approx(0.0, abs=1e-12)


def test_size_is_relative_area_error():
    exp = square(20)
    assert shape_metrics(square(10), exp)["size"] == pytest.approx(0.75)
    assert shape_metrics(square(40), exp)["size"] == 1.0  # 3.0, clipped


def test_hu_moments_circle_vs_square_profiles():
    exp = circle(102, 512, 512)
    gen = square(102, 512, 512)
    violin = shape_metrics(gen, exp)["shape"]
    strict = shape_metrics(gen, exp, profile="strict")["shape"]
    # intensity-weighted (0/255) moments hide the difference; binary ones do not
    assert violin == pytest.approx(0.002, abs=0.001)
    assert strict == pytest.approx(0.032, abs=0.003)


def test_violin_keeps_largest_contour_filled_strict_uses_region_as_is():
    exp = circle(40)
    stray = exp.copy()
    stray[5:8, 120:123] = 255  # a speck far away
    ring = exp.copy()
    cv2.circle(ring, (20, 64), 10, (0, 0, 0), -1)  # a hole
    assert shape_metrics(stray, exp).mean == 0.0
    violin_ring = shape_metrics(ring, exp)
    # the filled contour covers the hole: only purity (black pixels inside) sees it
    assert [violin_ring[k] for k in ("iou", "dist", "size", "shape")] == [0.0] * 4
    assert violin_ring["purity"] > 0.5
    for gen in (stray, ring):
        strict = shape_metrics(gen, exp, profile="strict")
        assert strict["iou"] > 0 and strict["size"] > 0


def test_purity_is_the_mean_channel_std_inside_the_shape():
    rng = np.random.default_rng(5)
    exp = square(30)
    gen = exp.copy()
    inside = gen[:, :, 0] > 0
    gen[inside] = rng.integers(200, 256, (inside.sum(), 3))
    want = np.mean([gen[inside][:, c].astype(float).std() for c in range(3)]) / 128
    assert shape_metrics(gen, exp)["purity"] == pytest.approx(want, rel=1e-9)
    assert shape_metrics(gen, exp)["iou"] == 0.0


def test_errors():
    with pytest.raises(ImageSizeMismatchError, match=r"\(128, 128, 3\).*\(64, 128, 3\)"):
        shape_metrics(canvas(), canvas(64))
    with pytest.raises(ValueError, match="unknown metric profile 'exact'"):
        shape_metrics(canvas(), canvas(), profile="exact")
    with pytest.raises(ValueError, match="accepted"):
        shape_metrics("not-a-file.png", canvas())
