"""Mask metrics: perfect answers for well-formed masks, the masked-photo
pitfall, known values, edge cases."""

import cv2
import numpy as np
import pytest

from pytest_violin.errors import ImageSizeMismatchError
from pytest_violin.metrics import MASK_METRICS, PROFILES, mask_metrics
from pytest_violin.metrics.mask import black_region, boundary_band, mean_gradient


def photo(h=128, w=128, seed=0, low=40):
    """A textured stand-in for a photo with every gray level >= ``low``."""
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), (0, 0), 2)
    img = cv2.normalize(img, None, low, 255, cv2.NORM_MINMAX)
    return img


def masked(img, region):
    out = img.copy()
    out[region > 0] = 0
    return out


def region(h, w, kind, seed=0):
    """Mask regions like the suite's: inpaint blobs, outpaint sides, strokes."""
    rng = np.random.default_rng(seed)
    r = np.zeros((h, w), np.uint8)
    if kind == "inpaint-ellipse":
        cv2.ellipse(r, (w // 2, h // 2), (w // 5, h // 7), 30, 0, 360, 255, -1)
    elif kind == "inpaint-polygon":
        pts = rng.integers([w // 4, h // 4], [3 * w // 4, 3 * h // 4], (7, 2))
        cv2.fillPoly(r, [cv2.convexHull(pts.astype(np.int32))], 255)
    elif kind == "outpaint-left":
        r[:, : w // 3] = 255
    elif kind == "outpaint-bottom":
        r[2 * h // 3:, :] = 255
    elif kind == "outpaint-corner":
        r[: h // 2, w // 2:] = 255
    elif kind == "stroke":  # left to right, so it never closes a loop
        xs = np.linspace(10, w - 10, 5)
        ys = rng.integers(10, h - 10, 5)
        pts = np.column_stack([xs, ys]).astype(np.int32)
        cv2.polylines(r, [pts], False, 255, thickness=max(h, w) // 12)
    elif kind == "loop":  # a closed stroke: encloses kept pixels
        cv2.circle(r, (w // 2, h // 2), min(h, w) // 3, 255, thickness=max(h, w) // 12)
    else:
        raise AssertionError(kind)
    return r


KINDS = ["inpaint-ellipse", "inpaint-polygon", "outpaint-left", "outpaint-bottom",
         "outpaint-corner", "stroke"]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("h,w,seed", [(128, 128, 0), (96, 160, 1), (512, 512, 2)])
def test_perfect_answer_scores_exactly_zero(kind, profile, h, w, seed):
    exp = masked(photo(h, w, seed), region(h, w, kind, seed))
    m = mask_metrics(exp.copy(), exp, profile=profile)
    assert m.task == "mask" and tuple(m) == MASK_METRICS
    assert all(v == 0.0 for v in m.values()), (kind, m)


def test_unmasked_answer_is_penalized():
    img = photo()
    exp = masked(img, region(128, 128, "inpaint-ellipse"))
    m = mask_metrics(img, exp)
    assert m["iou"] == 1.0 and m["dist"] == 1.0 and m["biou"] == 1.0
    assert m["leak"] > 0.15 and m["edge"] > 0.5


def test_leak_is_the_mean_gray_in_the_core():
    img = photo()
    r = region(128, 128, "inpaint-ellipse")
    exp = masked(img, r)
    gen = exp.copy()
    gen[r > 0] = 100
    assert mask_metrics(gen, exp)["leak"] == pytest.approx(100 / 255)
    gen[r > 0] = 20  # still "black" (< 30) but not zero
    m = mask_metrics(gen, exp)
    assert m["iou"] == 0.0 and m["leak"] == pytest.approx(20 / 255)


def test_leak_falls_back_to_the_whole_region_when_erosion_is_empty():
    img = photo()
    r = np.zeros((128, 128), np.uint8)
    r[60:65, 20:100] = 255  # 5 px tall: three 3x3 erosions leave nothing
    exp = masked(img, r)
    gen = exp.copy()
    gen[r > 0] = 51
    assert mask_metrics(gen, exp)["leak"] == pytest.approx(51 / 255)


def test_shifted_mask_hurts_iou_dist_biou():
    img = photo()
    exp = masked(img, region(128, 128, "inpaint-ellipse"))
    gen = masked(img, np.roll(region(128, 128, "inpaint-ellipse"), 6, axis=1))
    m = mask_metrics(gen, exp)
    assert m["dist"] == pytest.approx(6 / np.hypot(128, 128), rel=1e-6)
    assert 0 < m["iou"] < m["biou"] <= 1


def test_empty_expected_region():
    img = photo()
    violin, strict = mask_metrics(img, img), mask_metrics(img, img, profile="strict")
    assert dict(violin) == {"iou": 0.0, "dist": 1.0, "biou": 0.0, "leak": 0.0, "edge": 0.0}
    assert strict.mean == 0.0


def test_all_black_answer_to_a_partial_mask():
    exp = masked(photo(), region(128, 128, "outpaint-left"))
    m = mask_metrics(np.zeros_like(exp), exp)
    assert m["iou"] == pytest.approx(1 - 1 / 3, abs=0.01)
    assert m["leak"] == 0.0
    assert m["edge"] == 1.0  # no gradient at all where the mask edge should be


# ------------------------------------------------------------ documented pitfalls

def test_pitfall_dark_natural_pixels_join_the_black_region():
    img = photo()
    r = region(128, 128, "inpaint-ellipse")
    img[58:70, 20:50] = 20  # natural dark patch touching the mask (gray 20 < 30)
    exp = masked(img, r)
    assert cv2.countNonZero(black_region(cv2.cvtColor(exp, cv2.COLOR_RGB2GRAY))) > \
        cv2.countNonZero(r)
    for profile in PROFILES:
        m = mask_metrics(exp, exp, profile=profile)
        assert m["iou"] == 0.0 and m["leak"] > 0.0, profile  # the answer is perfect, yet


def test_pitfall_frame_region_fills_to_the_whole_image_in_violin_only():
    img = photo()
    r = np.full((128, 128), 255, np.uint8)
    r[20:-20, 20:-20] = 0  # a 20 px frame: an outpaint mask
    exp = masked(img, r)
    violin = mask_metrics(exp, exp)
    assert violin["leak"] > 0.1  # kept pixels inside the filled contour count as leak
    assert mask_metrics(exp, exp, profile="strict").mean == 0.0


def test_pitfall_looped_stroke_encloses_kept_pixels():
    exp = masked(photo(), region(128, 128, "loop"))
    assert mask_metrics(exp, exp)["leak"] > 0.1
    assert mask_metrics(exp, exp, profile="strict").mean == 0.0


# ------------------------------------------------------------ helpers and errors

def test_boundary_band_width():
    r = np.zeros((64, 64), np.uint8)
    r[10:50, 10:50] = 255
    band = boundary_band(r)
    assert cv2.countNonZero(band) == 40 * 40 - 30 * 30


def test_mean_gradient_crop_equals_full_image():
    rng = np.random.default_rng(3)
    g = rng.integers(0, 256, (80, 90), dtype=np.uint8)
    for y0, x0 in [(0, 0), (30, 40), (70, 80), (0, 85)]:
        zone = np.zeros_like(g)
        zone[y0:y0 + 10, x0:x0 + 10] = 255
        assert mean_gradient(g, zone) == pytest.approx(mean_gradient(g, zone, crop=False),
                                                      rel=1e-12)


def test_errors():
    with pytest.raises(ImageSizeMismatchError, match=r"\(128, 128, 3\).*\(128, 127, 3\)"):
        mask_metrics(photo(), photo()[:, :127])
    with pytest.raises(ValueError, match="unknown metric profile"):
        mask_metrics(photo(), photo(), profile="VIOLIN")


@pytest.mark.parametrize("profile", PROFILES)
def test_gray_30_is_black_as_in_the_reference(profile):
    # The reference thresholds with cv2.threshold(gray, 30, 255,
    # THRESH_BINARY_INV): gray <= 30 is black, 31 is not.
    levels = np.arange(256, dtype=np.uint8).reshape(16, 16)
    black = black_region(levels)
    assert np.array_equal(black > 0, levels <= 30)
    exp = masked(photo(), region(128, 128, "inpaint-ellipse"))
    inside = region(128, 128, "inpaint-ellipse") > 0
    for level, hit in ((30, True), (31, False)):
        gen = exp.copy()
        gen[inside] = level
        m = mask_metrics(gen, exp, profile=profile)
        if hit:
            assert m["iou"] == m["dist"] == m["biou"] == 0.0, (level, dict(m))
        else:
            assert m["iou"] == 1.0, (level, dict(m))
