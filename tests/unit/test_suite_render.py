"""Every ground truth checked pixel-exactly against its spec, independently of the renderer.

The checks count pixels and find bounding boxes with numpy; they never call
the rendering functions.
"""

import math

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import ndimage

from pytest_violin.suite import SUITES, load_suite, shape_sample
from pytest_violin.suite.drawing import ANCHORS

SUBSET = {"violin": 90, "violin-absolute": 40, "violin-extra": 84, "violin-probes": 40}


def _subset():
    out = []
    for name in SUITES:
        out.extend(load_suite(name, limit=SUBSET[name], seed=7))
    return out


def _all_channels(img, value):
    """Pixels equal to ``value`` (a gray level or an RGB triple): ``(img == value).all(axis=2)``, faster."""
    r, g, b = (value, value, value) if isinstance(value, int) else value
    return (img[..., 0] == r) & (img[..., 1] == g) & (img[..., 2] == b)


def check_blocks(s, img):
    h, w = img.shape[:2]
    colors = [tuple(c) for c in s.spec["colors"]]
    layout = s.spec["layout"]
    cuts_x = [0, w // 2, w] if layout in ("vertical", "quad") else [0, w]
    cuts_y = [0, h // 2, h] if layout in ("horizontal", "quad") else [0, h]
    k = 0
    for y in range(len(cuts_y) - 1):
        for x in range(len(cuts_x) - 1):
            region = img[cuts_y[y]:cuts_y[y + 1], cuts_x[x]:cuts_x[x + 1]]
            assert (region.reshape(-1, 3) == colors[k]).all(), (s.id, k)
            k += 1
    assert k == len(colors)


def check_ratio(s, img):
    spec = s.spec
    first, second = (tuple(c) for c in spec["colors"])
    h, w = img.shape[:2]
    along = w if spec["orientation"] == "vertical" else h
    assert spec["split"] == round(spec["ratio"] * along)
    expected_first = spec["split"] * (h if spec["orientation"] == "vertical" else w)
    # the pixel counts of each color are these two and nothing else
    is_first, is_second = _all_channels(img, first), _all_channels(img, second)
    assert first != second and (is_first | is_second).all()
    assert (int(is_first.sum()), int(is_second.sum())) == (expected_first, w * h - expected_first)
    line = img[0, :] if spec["orientation"] == "vertical" else img[:, 0]
    assert (line[: spec["split"]] == first).all() and (line[spec["split"]:] == second).all()


def check_shape(s, img):
    spec = s.spec
    h, w = img.shape[:2]
    white = _all_channels(img, 255)
    assert white.any() and (white | _all_channels(img, 0)).all() and not white.all()  # both, nothing else
    ys, xs = np.nonzero(white)
    x0, y0, x1, y1 = xs.min(), ys.min(), xs.max() + 1, ys.max() + 1
    bw, bh = x1 - x0, y1 - y0
    assert [x0, y0, bw, bh] == list(spec["bbox"])
    side = round(spec["size"] * w)
    assert bw == side
    area = int(white.sum())
    if spec["shape"] == "square":
        assert bh == side and area == side * side
    elif spec["shape"] == "circle":
        assert bh == side
        assert abs(area - math.pi * side * side / 4) <= 2.0 * side + 4
    else:
        assert bh == round(side * math.sqrt(3) / 2)
        assert abs(area - side * bh / 2) <= 1.5 * side + bh + 4
        rows = white[y0:y1, x0:x1].sum(axis=1)
        assert (np.diff(rows) >= 0).all()  # widens downwards: upright
    patch = white[y0:y1, x0:x1]
    assert np.array_equal(patch, patch[:, ::-1])  # left-right symmetric
    anchor = spec["anchor"]
    hpos, vpos = ANCHORS[anchor]
    gaps = {"left": x0, "right": w - x1, "top": y0, "bottom": h - y1}
    if hpos == "center":
        assert abs(gaps["left"] - gaps["right"]) <= 1
    else:
        assert gaps[hpos] == 0
    if vpos == "center":
        assert abs(gaps["top"] - gaps["bottom"]) <= 1
    else:
        assert gaps[vpos] == 0


def check_border(s, img):
    t = s.spec["thickness"]
    h, w = img.shape[:2]
    white = _all_channels(img, 255)
    black = _all_channels(img, 0)
    assert (white | black).all()
    assert int(black.sum()) == (w - 2 * t) * (h - 2 * t)
    mid_row, mid_col = white[h // 2], white[:, w // 2]
    assert mid_row[:t].all() and not mid_row[t] and mid_row[w - t:].all() and not mid_row[w - t - 1]
    assert mid_col[:t].all() and not mid_col[t]


def check_dots(s, img):
    spec = s.spec
    white = _all_channels(img, 255)
    assert (white | _all_channels(img, 0)).all()
    labels, n = ndimage.label(white, structure=np.ones((3, 3)))
    assert n == spec["count"]
    sizes = ndimage.sum(white, labels, range(1, n + 1))
    assert (np.asarray(sizes) == spec["dot"] ** 2).all()
    for obj in ndimage.find_objects(labels):
        assert obj[0].stop - obj[0].start == spec["dot"] == obj[1].stop - obj[1].start


def check_mask(s, img):
    source, mask = s.inputs
    assert source.shape == mask.shape == img.shape
    assert set(np.unique(mask)) <= {0, 255}
    assert (mask == mask[:, :, :1]).all()
    keep = mask[:, :, 0] == 255
    assert np.array_equal(img, np.where(keep[:, :, None], source, 0))
    assert source.min() >= 40  # lifted: every kept channel above the black threshold
    gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    assert (gray[keep] >= 30).all() and (gray[~keep] == 0).all()
    black = ~keep
    assert black.any() and keep.any()
    assert np.array_equal(ndimage.binary_fill_holes(black), black)  # nothing enclosed
    edges = {"top": black[0], "bottom": black[-1], "left": black[:, 0], "right": black[:, -1]}
    full_sides = [k for k, v in edges.items() if v.all()]
    kind = s.spec["mask_kind"]
    if kind == "inpaint":
        assert not any(v.any() for v in edges.values())
        assert ndimage.label(black)[1] == 1
    elif kind == "outpaint":
        assert 1 <= len(full_sides) <= 3
        assert ndimage.label(black, structure=np.ones((3, 3)))[1] == 1


CHECKS = {"blocks": check_blocks, "fuzzy": check_blocks, "ratio": check_ratio,
          "shape": check_shape, "border": check_border, "dots": check_dots, "mask": check_mask}


def test_every_ground_truth_matches_its_spec():
    seen = set()
    for s in _subset():
        img = s.expected()
        assert img.shape == (s.height, s.width, 3) and img.dtype == np.uint8
        spec = dict(s.spec)
        if spec["kind"] == "fuzzy":
            spec["layout"] = "single"
            low, high = np.array(spec["low"]), np.array(spec["high"])
            assert (low <= spec["colors"][0]).all() and (np.array(spec["colors"][0]) <= high).all()
        CHECKS[spec["kind"]](_Spec(s, spec), img)
        seen.add(spec["kind"] if spec["kind"] != "mask" else spec["mask_kind"])
    assert seen >= {"blocks", "fuzzy", "ratio", "shape", "border", "dots", "inpaint",
                    "outpaint", "random"}


class _Spec:
    def __init__(self, sample, spec):
        self._s, self.spec = sample, spec

    def __getattr__(self, name):
        return getattr(self._s, name)


@settings(max_examples=40, deadline=None)
@given(shape=st.sampled_from(["circle", "square", "triangle"]),
       size=st.floats(0.02, 0.6), anchor=st.sampled_from(sorted(ANCHORS)),
       width=st.integers(40, 160), extra_h=st.integers(0, 60))
def test_builder_shapes_at_any_size_and_anchor(shape, size, anchor, width, extra_h):
    height = int(width * 0.9) + extra_h
    s = shape_sample(shape, size, anchor=anchor, width=width, height=height)
    check_shape(s, s.expected())


@settings(max_examples=25, deadline=None)
@given(size=st.floats(0.05, 0.3), fx=st.floats(0.3, 0.7), fy=st.floats(0.3, 0.7))
def test_builder_shape_centered_at_fractions(size, fx, fy):
    s = shape_sample("circle", size, center=(fx, fy), width=100, height=100)
    white = _all_channels(s.expected(), 255)
    ys, xs = np.nonzero(white)
    assert abs((xs.min() + xs.max() + 1) / 2 - fx * 100) <= 1.0
    assert abs((ys.min() + ys.max() + 1) / 2 - fy * 100) <= 1.0
