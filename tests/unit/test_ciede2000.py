"""CIEDE2000: the Sharma 2005 table, skimage agreement, broadcasting, errors."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.color import deltaE_ciede2000

from pytest_violin.metrics import ciede2000
from pytest_violin.metrics.ciede2000 import chroma_hue_terms, lightness_term_sq

DATA = Path(__file__).parents[1] / "data" / "ciede2000_sharma2005.tsv"


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


# ------------------------------------------------------------ one colour (strict)

from pytest_violin.metrics.ciede2000 import ciede2000_to_color  # noqa: E402


def _near_branch_inputs(rng, ref, n=600):
    lab = _random_lab(rng, 20 * n)
    k = rng.uniform(0.1, 2.0, (n, 1))
    lab[:n, 1:] = -ref[1:] * k                                   # exactly opposite
    lab[n:2 * n, 1:] = -ref[1:] * k + rng.normal(0, 1e-7, (n, 2))  # nearly opposite
    lab[2 * n:3 * n, 1:] = ref[1:] * [1, -1] * k                 # mirrored
    lab[3 * n:4 * n, 1:] = 0.0                                   # neutral
    lab[4 * n:5 * n] = ref + rng.normal(0, 1e-4, (n, 3))         # tiny differences
    lab[5 * n:6 * n, 2] = 0.0                                    # on the a* axis
    lab[6 * n:7 * n] = ref
    return lab


@pytest.mark.parametrize("ref", [[52.0, 10.0, -20.0], [60.0, 0.0, 0.0], [30.0, -40.0, 0.0],
                                 [70.0, 0.0, 30.0], [50.0, 20.0, 0.0], [41.0, -3.0, -7.0]])
def test_to_color_equals_the_general_formula(ref):
    ref = np.array(ref)
    rng = np.random.default_rng(int(abs(ref).sum()))
    lab = _near_branch_inputs(rng, ref)
    for x in (lab, np.round(lab)):
        np.testing.assert_allclose(ciede2000_to_color(x, ref), ciede2000(ref, x), rtol=0,
                                   atol=1e-9)


def test_to_color_matches_skimage_on_colours_of_8bit_rgb():
    from skimage.color import rgb2lab

    rng = np.random.default_rng(8)
    rgb = rng.integers(0, 256, (1, 200_000, 3), dtype=np.uint8)
    lab = rgb2lab(rgb)[0]
    for ref_rgb in [(217, 180, 81), (0, 0, 0), (128, 128, 128), (46, 139, 87), (255, 0, 255)]:
        ref = rgb2lab(np.uint8([[ref_rgb]]))[0, 0]
        want = deltaE_ciede2000(np.broadcast_to(ref, lab.shape), lab)
        np.testing.assert_allclose(ciede2000_to_color(lab, ref), want, rtol=0, atol=1e-9)


def test_to_color_sharma_pairs_and_shapes():
    for row in SHARMA:
        assert float(ciede2000_to_color(row[3:6], row[:3])) == pytest.approx(row[6], abs=1e-4)
    out = ciede2000_to_color(np.zeros((2, 5, 3)), np.array([50.0, 1.0, 1.0]))
    assert out.shape == (2, 5) and out.dtype == np.float64
    with pytest.raises(ValueError, match=r"ref must be one colour of shape \(3,\); got shape"):
        ciede2000_to_color(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\).*got shape \(2, 4\)"):
        ciede2000_to_color(np.zeros((2, 4)), np.zeros(3))


# ------------------------------------------------------------ the reference's float32 formula

from pytest_violin.metrics.ciede2000 import atan2f, ciede2000_32  # noqa: E402


def _codes_to_lab32(codes):
    lab = codes.astype(np.float32)
    lab[:, 0] = lab[:, 0] * np.float32(100.0) / np.float32(255.0)
    lab[:, 1:] -= np.float32(128.0)
    return lab


def _tie(gen, ref):
    """Exactly opposite or mirrored (a, b) codes: the float32 branch points."""
    ga, gb = gen[:, 1].astype(np.int64) - 128, gen[:, 2].astype(np.int64) - 128
    ra, rb = ref[:, 1].astype(np.int64) - 128, ref[:, 2].astype(np.int64) - 128
    opposite = (ga * rb - gb * ra == 0) & (ga * ra + gb * rb < 0)
    mirror = (ga * rb + gb * ra == 0) & (ga * ra - gb * rb > 0)
    return opposite | mirror


def test_float32_formula_matches_skimage_float32_away_from_ties():
    # In this process skimage's float32 hue decisions at ties follow this
    # machine's arctan2 (tests/unit/test_reference_conformance.py checks them on
    # the reference's); everywhere else the two agree to float32 rounding.
    rng = np.random.default_rng(32)
    gen = rng.integers(0, 256, (400_000, 3), dtype=np.uint8)
    ref = rng.integers(0, 256, (400_000, 3), dtype=np.uint8)
    keep = ~_tie(gen, ref)
    g, r = _codes_to_lab32(gen[keep]), _codes_to_lab32(ref[keep])
    want = deltaE_ciede2000(g, r)
    assert want.dtype == np.float32
    # float32 rounding: the hue angles' ~2.4e-7 rad, times up to ~250, and a
    # few ulps of this machine's float32 sin/cos (AVX-512 code where present)
    np.testing.assert_allclose(ciede2000_32(g, r), want, rtol=0, atol=2e-4)


def test_float32_formula_differs_from_float64_at_a_tie():
    # expected #2E8B57 (codes 132, 88, 148) against (245, 0, 217) (144, 220, 82)
    gen = _codes_to_lab32(np.array([[144, 220, 82]]))
    ref = _codes_to_lab32(np.array([[132, 88, 148]]))
    assert float(ciede2000_32(gen, ref)[0]) == pytest.approx(82.5584, abs=1e-3)
    assert float(ciede2000(ref.astype(np.float64), gen.astype(np.float64))[0]) != pytest.approx(
        82.5584, abs=1.0)


def test_atan2f_is_the_c_library_function_where_that_is_fdlibm():
    import ctypes
    import ctypes.util
    import platform

    libc, version = platform.libc_ver()
    if libc != "glibc" or tuple(int(v) for v in version.split(".")[:2]) >= (2, 41):
        pytest.skip(f"the C library here ({libc} {version}) does not use fdlibm's atan2f")
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.atan2f.restype = ctypes.c_float
    libm.atan2f.argtypes = [ctypes.c_float, ctypes.c_float]
    rng = np.random.default_rng(41)
    y = np.concatenate([rng.integers(-128, 128, 4000).astype(np.float32),
                        (rng.standard_normal(4000) * 60).astype(np.float32),
                        np.float32([0.0, -0.0, 1.0, -1.0, 5.0, 0.0])])
    scaled = rng.integers(-128, 128, 4000) * rng.uniform(1, 1.5, 4000)
    x = np.concatenate([scaled.astype(np.float32),
                        (rng.standard_normal(4000) * 60).astype(np.float32),
                        np.float32([-3.0, -3.0, 1.0, 1.0, 0.0, 0.0])])
    signs = np.where(rng.random((2, 3000)) < 0.5, -1, 1).astype(np.float32)
    anywhere = rng.integers(0, 0x7F800000, (2, 3000)).astype(np.uint32).view(np.float32) * signs
    y = np.concatenate([y, anywhere[0], np.float32([0.0, -0.0, 3.0, -3.0, 1e38])])
    x = np.concatenate([x, anywhere[1], np.float32([-0.0, -0.0, 0.0, -0.0, 1e-38])])
    want = np.array([libm.atan2f(float(a), float(b)) for a, b in zip(y, x)], np.float32)
    np.testing.assert_array_equal(atan2f(y, x).view(np.uint32), want.view(np.uint32))


# The child of the test below: prints, as JSON, whether numpy dispatches to AVX-512 here, the
# project's lab_00 and per-pixel value of the tie example, and what numpy's own float32 arctan2
# path (the reference's skimage call) gives for the same pixel.
_DISPATCH_CHILD = r"""
import json
import numpy as np
from skimage.color import deltaE_ciede2000
try:
    from numpy._core._multiarray_umath import __cpu_features__ as features
except ImportError:  # numpy < 2
    from numpy.core._multiarray_umath import __cpu_features__ as features
from pytest_violin.metrics import color_metrics
from pytest_violin.metrics._common import lab8_to_cie32
from pytest_violin.metrics.ciede2000 import ciede2000_32

exp = np.full((16, 16, 3), (0x2E, 0x8B, 0x57), np.uint8)
gen = np.full((16, 16, 3), (0xF5, 0x00, 0xD9), np.uint8)
g, r = lab8_to_cie32(np.array([[144, 220, 82]])), lab8_to_cie32(np.array([[132, 88, 148]]))
print(json.dumps({
    "avx512": bool(features.get("AVX512F")) and any(features.get(k) for k in ("X86_V4", "AVX512_SKX")),
    "lab_00": color_metrics(gen, exp)["lab_00"],
    "ref32": float(ciede2000_32(g, r)[0]),
    "numpy_arctan2_path": float(deltaE_ciede2000(g, r)[0]),
}))
"""


def _avx512_off_env():
    """This environment with numpy's AVX-512 dispatch turned off.

    Only names this numpy dispatches to *and* this CPU has (numpy refuses to
    disable what it does not know or what is not there, depending on its
    version): e.g. ``X86_V4 AVX512_ICL`` on an AVX-512 machine, none elsewhere.
    """
    import os

    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    names = [f for f in __cpu_dispatch__
             if ("AVX512" in f or f == "X86_V4") and __cpu_features__.get(f)]
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    if names:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(names)
    return env, names


@pytest.mark.slow  # two Python processes: CI's e2e step
def test_the_tie_example_is_the_same_with_numpy_avx512_dispatch_on_and_off(record_property):
    """#2E8B57 expected, #F500D9 answered: an exactly opposite hue. numpy's float32 arctan2 takes
    AVX-512 code where the CPU has it, and the reference's own call (skimage on float32 Lab) then
    gives 50.09 instead of 82.56; the project's value is 82.56 either way (its own atan2f)."""
    import json
    import os
    import subprocess
    import sys

    off_env, names = _avx512_off_env()
    on_env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    on, off = ({**json.loads(subprocess.run([sys.executable, "-c", _DISPATCH_CHILD], env=env,
                                            capture_output=True, text=True, check=True,
                                            timeout=300).stdout), "disabled": disabled}
               for env, disabled in ((on_env, ""), (off_env, " ".join(names))))
    record_property("avx512_dispatch_on", on)
    record_property("avx512_dispatch_off", off)
    assert not off["avx512"]
    # the project's function: one value, with and without AVX-512
    # the same branch on both sides: equal to the last few bits (a mean of the image's pixels may
    # be summed in another order by another SIMD width), 32 units away from the other branch
    assert on["lab_00"] == pytest.approx(off["lab_00"], rel=1e-12, abs=0)
    assert off["lab_00"] == pytest.approx(0.8256, abs=1e-4)
    assert on["ref32"] == pytest.approx(off["ref32"], rel=1e-12, abs=0)
    assert off["ref32"] == pytest.approx(82.5584, abs=1e-3)
    # numpy's own path, where turning the dispatch off changes it (numpy 2 on an AVX-512 CPU):
    # the portable loop (glibc's atan2f) gives the reference's value and AVX-512 the other
    # branch, so a project value computed through numpy's arctan2 would differ between the two
    # children, which this test would catch. Elsewhere (no AVX-512, or an older numpy whose
    # arctan2 does not follow these dispatch names) both children take one branch.
    if on["numpy_arctan2_path"] != pytest.approx(off["numpy_arctan2_path"], abs=1e-3):
        assert on["avx512"]
        assert off["numpy_arctan2_path"] == pytest.approx(82.5584, abs=1e-3)
        assert on["numpy_arctan2_path"] == pytest.approx(50.09, abs=0.01)
