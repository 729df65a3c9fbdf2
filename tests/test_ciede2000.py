"""CIEDE2000: the Sharma 2005 table, skimage agreement, broadcasting, errors."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.color import deltaE_ciede2000

from pytest_violin.metrics import ciede2000
from pytest_violin.metrics.ciede2000 import chroma_hue_terms, lightness_term_sq

DATA = Path(__file__).parent / "data" / "ciede2000_sharma2005.tsv"


def _sharma_rows():
    lines = [ln for ln in DATA.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    header, body = lines[0].split("\t"), lines[1:]
    assert header == ["L1", "a1", "b1", "L2", "a2", "b2", "dE00"]
    return np.array([[float(v) for v in ln.split("\t")] for ln in body])


SHARMA = _sharma_rows()


def test_sharma_table_has_34_pairs():
    assert SHARMA.shape == (34, 7)


@pytest.mark.parametrize("i", range(34))
def test_sharma_pair(i):
    row = SHARMA[i]
    assert float(ciede2000(row[:3], row[3:6])) == pytest.approx(row[6], abs=1e-4)


def test_sharma_pairs_vectorized_and_symmetric():
    d = ciede2000(SHARMA[:, :3], SHARMA[:, 3:6])
    np.testing.assert_allclose(d, SHARMA[:, 6], atol=1e-4)
    np.testing.assert_allclose(ciede2000(SHARMA[:, 3:6], SHARMA[:, :3]), d, atol=1e-12)


def _random_lab(rng, n):
    lab = np.column_stack([rng.uniform(0, 100, n), rng.uniform(-128, 127, (n, 2))])
    return lab


def test_matches_skimage_on_random_and_degenerate_inputs():
    rng = np.random.default_rng(2005)
    a, b = _random_lab(rng, 20000), _random_lab(rng, 20000)
    b[:500] = a[:500]                                   # identical colours
    b[500:1000, 1:] = 0.0                               # neutral second colour
    a[1000:1500, 1:] = 0.0                              # neutral first colour
    b[1500:2000] = a[1500:2000] + rng.normal(0, 1e-3, (500, 3))  # tiny differences
    a[2000:2500, 1:] = -b[2000:2500, 1:]                # opposite hues
    a[2500:3000, 2] = 0.0                               # on the a* axis
    ints = np.round(a), np.round(b)                     # integer (8-bit-like) values
    for x, y in [(a, b), ints]:
        np.testing.assert_allclose(ciede2000(x, y), deltaE_ciede2000(x, y), rtol=0, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-128, 128, allow_nan=False), min_size=6, max_size=6),
       st.floats(0, 100))
def test_matches_skimage_property(ab, lightness):
    lab1 = np.array([lightness, ab[0], ab[1]])
    lab2 = np.array([100 - lightness, ab[2], ab[3]])
    assert float(ciede2000(lab1, lab2)) == pytest.approx(
        float(deltaE_ciede2000(lab1, lab2)), abs=1e-9)


def test_broadcasts_image_against_one_colour():
    rng = np.random.default_rng(1)
    img = _random_lab(rng, 60).reshape(3, 4, 5, 3)
    ref = np.array([52.0, 10.0, -20.0])
    out = ciede2000(img, ref)
    assert out.shape == (3, 4, 5) and out.dtype == np.float64
    np.testing.assert_allclose(out, deltaE_ciede2000(img, np.broadcast_to(ref, img.shape)),
                               atol=1e-9)
    assert ciede2000(ref, ref).shape == ()
    assert float(ciede2000(ref, ref)) == 0.0


def test_split_terms_recombine():
    rng = np.random.default_rng(3)
    a, b = _random_lab(rng, 100), _random_lab(rng, 100)
    d2 = lightness_term_sq(a[:, 0], b[:, 0]) + chroma_hue_terms(a[:, 1], a[:, 2], b[:, 1], b[:, 2])
    np.testing.assert_allclose(np.sqrt(np.maximum(d2, 0)), ciede2000(a, b), atol=1e-12)


@pytest.mark.parametrize("bad", [np.zeros((4, 2)), np.zeros(()), np.zeros((2, 4))])
def test_rejects_wrong_last_axis(bad):
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\).*got shape"):
        ciede2000(bad, np.zeros(3))


def test_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 3\).*do not broadcast"):
        ciede2000(np.zeros((2, 3)), np.zeros((4, 3)))
