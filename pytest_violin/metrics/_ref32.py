"""CIEDE2000 as the Violin reference computes it: float32, portably.

The reference metric (``color_metric.py``, ``calc_lab_ciede``) converts the 8-bit OpenCV Lab codes to
**float32** (``L*100/255``, ``a-128``, ``b-128``) and calls ``skimage.color.deltaE_ciede2000``, which keeps
float32 for most of the formula. Two things follow:

* **Branch decisions.** CIEDE2000 wraps the hue difference when ``|h2 - h1| > pi`` and shifts the mean hue by
  ``+-2 pi`` when it does (the sign from ``h1 + h2 < 2 pi``). When the answer's hue is exactly opposite the
  expected one (or its mirror image about the ``a*`` axis) the exact difference (sum) *is* ``pi`` (``2 pi``),
  so the branch depends on the last bit of the float32 hue angles; the branches differ by up to ~32 dE00 per
  pixel. The float64 formula takes the other branch for many such pairs (e.g. expected ``#2E8B57`` against
  ``(245, 0, 217)``: 82.56 in the reference, 50.09 in float64).
* **Rounding.** float32 hue angles carry ~2.4e-7 rad of rounding, which the hue term multiplies by up to ``2
  sqrt(C1 C2) ~ 250``: the reference's per-pixel values differ from float64 by up to ~1.2e-4 dE00 (1.2e-6 of
  ``lab_00`` for a one-colour answer).

The reference's float32 angles come from numpy's float32 ``arctan2``. The published numbers (and
``tests/data/violin-golden``) come from numpy's portable loop, which calls the C library's ``atan2f``:
glibc's, the fdlibm algorithm. numpy builds that dispatch float32 ``arctan2`` to AVX-512 code, and other C
libraries, round differently and take the other branch for about 10% of the exactly opposite code pairs: the
reference itself is not portable there. Nor across numpy versions: under numpy 1's value-based casting ``c7 +
25**7`` (a Python int beyond int32) is float64, so skimage computes in float64 from ``G`` on; the published
values follow numpy 2.

This module computes the reference's arithmetic step by step on every platform: the same float32 operations in
the same order (with numpy 2's promotion rules, under which parts of the hue weighting are float64), with an
``atan2f`` written here in float32 arithmetic (:func:`atan2f`, bit-identical to glibc's) and the other float32
functions correctly rounded. It agrees with the reference to float32 rounding of its transcendental functions
(~1e-5 dE00) and takes the same branch for every pair of 8-bit codes (checked exhaustively over all exactly
opposite and mirrored pairs in ``tests/unit/test_ciede2000.py``; away from those ties the branch is the same
in any precision: two code vectors that are not exactly opposite or mirrored are at least ``1 / 231**2 ~
1.9e-5`` rad from it).

The formula is split like :mod:`.ciede2000`: a lightness part that depends on the two ``L*`` only and a
chroma/hue part that depends on the ``a*``, ``b*`` only, so the colour metrics can build lookup tables from
them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["atan2f", "lightness_sq32", "chroma_hue32", "ciede2000_32"]

_F = np.float32


def _bits(word: int) -> np.float32:
    return np.array([word], dtype=np.uint32).view(np.float32)[0]


# fdlibm's float atan constants, as shipped in glibc (flt-32/s_atanf.c); glibc rounds the first odd
# coefficient up (0x3eaaaaab, fdlibm 0x3eaaaaaa).
_ATAN_HI = [_bits(w) for w in (0x3EED6338, 0x3F490FDA, 0x3F7B985E, 0x3FC90FDA)]
_ATAN_LO = [_bits(w) for w in (0x31AC3769, 0x33222168, 0x33140FB4, 0x33A22168)]
_AT = [_bits(w) for w in (0x3EAAAAAB, 0xBE4CCCCD, 0x3E124925, 0xBDE38E38, 0x3DBA2E6E,
                          0xBD9D8795, 0x3D886B35, 0xBD6EF16B, 0x3D4BDA59, 0xBD15A221,
                          0x3C8569D7)]
_PI = _bits(0x40490FDB)
_PI_LO = _bits(0xB3BBBD2E)
_PI_O_2 = _bits(0x3FC90FDB)
_TWO_PI32 = _F(2.0 * np.pi)
_PI32 = _F(np.pi)
_ONE = _F(1.0)


# atanf's argument reduction, branch-free: per interval of |x| (bounds on the float bits), r = (NUM_A x +
# NUM_B) / (DEN_A x + DEN_B), which rounds exactly as fdlibm's expressions (x; (2x-1)/(2+x); (x-1)/(x+1);
# (x-1.5)/(1+1.5x); -1/x), and the result is HI - ((r * poly - LO) - r) (HI = LO = 0 for the first interval
# gives r - r * poly).
_BOUNDS = np.array([0x3EE00000, 0x3F300000, 0x3F980000, 0x401C0000], dtype=np.uint32)
_NUM_A = np.array([1.0, 2.0, 1.0, 1.0, 0.0], dtype=np.float32)
_NUM_B = np.array([0.0, -1.0, -1.0, -1.5, -1.0], dtype=np.float32)
_DEN_A = np.array([0.0, 1.0, 1.0, 1.5, 1.0], dtype=np.float32)
_DEN_B = np.array([1.0, 2.0, 1.0, 1.0, 0.0], dtype=np.float32)
_HI = np.array([0.0] + _ATAN_HI, dtype=np.float32)
_LO = np.array([0.0] + _ATAN_LO, dtype=np.float32)


def _atanf_nonneg(x: np.ndarray) -> np.ndarray:
    """``atanf`` of finite float32 ``x >= 0``: argument reduction to one of
    five intervals, then an odd polynomial split into two Horner chains."""
    ix = x.view(np.uint32)
    which = np.searchsorted(_BOUNDS, ix, side="right")
    # (x = +inf: 0 * inf is NaN in the reduction; the |x| >= 2**25 rule below replaces it, as fdlibm returns
    # pi/2 there before reducing.)
    r = (_NUM_A[which] * x + _NUM_B[which]) / (_DEN_A[which] * x + _DEN_B[which])
    z = r * r
    w = z * z
    s1 = _AT[10] * w + _AT[8]
    for c in (_AT[6], _AT[4], _AT[2], _AT[0]):
        s1 *= w
        s1 += c
    s1 *= z
    s2 = _AT[9] * w + _AT[7]
    for c in (_AT[5], _AT[3], _AT[1]):
        s2 *= w
        s2 += c
    s2 *= w
    s1 += s2
    s1 *= r                                        # t = r * (s1 + s2)
    s1 -= _LO[which]
    s1 -= r
    out = _HI[which] - s1
    out = np.where(ix >= 0x4C000000, _ATAN_HI[3] + _ATAN_LO[3], out)   # |x| >= 2**25
    return np.where(ix < 0x31000000, x, out)                            # |x| < 2**-29


def atan2f(y, x) -> np.ndarray:
    """float32 ``atan2(y, x)`` (finite values, broadcast) rounded exactly as glibc's ``atan2f`` (fdlibm).

    fdlibm's ``atan2f``: ``atanf(|y / x|)`` placed in the quadrant of ``(x, y)`` as ``z``, ``-z``, ``pi - (z -
    pi_lo)`` or ``(z - pi_lo) - pi``; ``+-pi`` for ``y == 0, x < 0`` and ``+-pi/2`` for ``x == 0``. (Its
    shortcuts for ``x == 1`` and for ``|y / x|`` beyond ``2**+-60`` give the same floats as the general path,
    so they are not repeated here.) The angles, in ``[-pi, pi]``, are bit-identical to the C library function
    of the platform the Violin reference values come from.
    """
    y, x = np.broadcast_arrays(np.asarray(y, dtype=np.float32), np.asarray(x, dtype=np.float32))
    x_neg, y_neg = np.signbit(x), np.signbit(y)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # |y / x| is +inf for x == 0 (atanf gives pi/2) and NaN for 0 / 0 (replaced below); the reduction's 0
        # * inf is NaN too, then replaced.
        z = _atanf_nonneg(np.abs(y / x))
    out = np.where(x_neg, np.where(y_neg, (z - _PI_LO) - _PI, _PI - (z - _PI_LO)),
                   np.where(y_neg, -z, z))
    out = np.where(x == 0.0, np.where(y_neg, -_PI_O_2, _PI_O_2), out)
    out = np.where(y == 0.0, np.where(x_neg, np.where(y_neg, -_PI, _PI), y), out)
    return out.astype(np.float32, copy=False)


def _hypotf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # glibc's hypotf: the double square root of the double sum of squares, rounded to float.
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.sqrt(a * a + b * b).astype(np.float32)


def _round32(x) -> np.ndarray:
    """Round float64 values to float32 (a correctly rounded float32 result
    when ``x`` is the float64 value of a transcendental function)."""
    return np.asarray(x, dtype=np.float64).astype(np.float32)


_RAD2DEG32 = _F(180.0) / _F(np.pi)
_DEG30, _DEG6, _DEG63 = np.deg2rad(30.0), np.deg2rad(6.0), np.deg2rad(63.0)


def lightness_sq32(L_gen, L_ref) -> np.ndarray:
    """The reference's squared lightness term ``(dL / S_L)**2``, its float32 value as float64.

    ``L_gen``, ``L_ref``: ``L*`` of the generated and the expected colour (float32 values, e.g. ``code * 100 /
    255`` in float32), broadcast together.
    """
    L1, L2 = (np.asarray(v, dtype=np.float32) for v in (L_gen, L_ref))
    lbar = _F(0.5) * (L1 + L2)
    tmp = np.square(lbar - _F(50.0))
    sl = _ONE + _F(0.015) * tmp / np.sqrt(_F(20.0) + tmp)
    term = (L2 - L1) / sl
    return np.square(term).astype(np.float64)


def chroma_hue32(a_gen, b_gen, a_ref, b_ref) -> np.ndarray:
    """The reference's chroma, hue and rotation part of CIEDE2000 squared (float64, broadcast).

    That is ``C_term**2 + H_term**2 + R_term`` of ``skimage.color.deltaE_ciede2000(lab_gen, lab_ref)`` on
    float32 input, with the reference's hue decisions (see the module notes), from ``a*``, ``b*`` of the
    generated and the expected colour (float32 values, e.g. 8-bit code minus 128).
    """
    # (Not broadcast up front: a single expected colour stays a scalar.)
    a1, b1, a2, b2 = (np.asarray(v, dtype=np.float32) for v in (a_gen, b_gen, a_ref, b_ref))
    # 1 + G from the mean chroma, all float32 (Cbar**7 is a float32 power).
    cbar = _F(0.5) * (_hypotf(a1, b1) + _hypotf(a2, b2))
    c7 = _round32(cbar.astype(np.float64) ** 7)
    scale = _ONE + _F(0.5) * (_ONE - np.sqrt(c7 / (c7 + _F(25.0**7))))
    polar = []
    for a, b in ((a1, b1), (a2, b2)):
        ap = a * scale
        t = atan2f(b, ap).astype(np.float64)
        # ``t += where(t < 0, 2 pi, 0)``: a double addition stored in float32.
        polar.append((_hypotf(ap, b), _round32(np.where(t < 0.0, t + 2.0 * np.pi, t))))
    (c1, h1), (c2, h2) = polar

    cbar_p = _F(0.5) * (c1 + c2)
    c_term = (c2 - c1) / (_ONE + _F(0.045) * cbar_p)

    h_diff = h2 - h1
    h_sum = h1 + h2
    cc = c1 * c2
    zero = cc == 0.0
    dh = np.where(h_diff > _PI32, h_diff - _TWO_PI32,
                  np.where(h_diff < -_PI32, h_diff + _TWO_PI32, h_diff))
    dh = np.where(zero, _F(0.0), dh).astype(np.float32)
    dh_term = _F(2.0) * np.sqrt(cc) * np.sin(dh / _F(2.0))

    wrap = ~zero & (np.abs(h_diff) > _PI32)
    hbar = np.where(wrap & (h_sum < _TWO_PI32), h_sum + _TWO_PI32,
                    np.where(wrap, h_sum - _TWO_PI32, h_sum))
    hbar = (np.where(zero, hbar * _F(2.0), hbar) * _F(0.5)).astype(np.float32)

    # numpy 2 promotion: the terms shifted by np.deg2rad (a float64 scalar) are float64, cos(2 Hbar), sin(dH /
    # 2) and the rotation's exponent are float32 (numpy's float32 functions: their last bit can differ between
    # builds, as the reference's own does; the effect is ~1e-5 dE00).
    h64 = hbar.astype(np.float64)
    cos2 = np.cos(_F(2.0) * hbar)
    t = (1.0 - 0.17 * np.cos(h64 - _DEG30)
         + (_F(0.24) * cos2).astype(np.float64)
         + 0.32 * np.cos((_F(3.0) * hbar).astype(np.float64) + _DEG6)
         - 0.20 * np.cos((_F(4.0) * hbar).astype(np.float64) - _DEG63))
    sh = 1.0 + (_F(0.015) * cbar_p).astype(np.float64) * t
    h_term = dh_term.astype(np.float64) / sh

    c7p = _round32(cbar_p.astype(np.float64) ** 7)
    rc = _F(2.0) * np.sqrt(c7p / (c7p + _F(25.0**7)))
    x = (hbar * _RAD2DEG32 - _F(275.0)) / _F(25.0)
    # exp(-80) ~ 1.8e-35: the cap keeps float32 denormals (slow, and with no effect on the float32 sum) out of
    # the rotation term
    decay = np.exp(-np.minimum(np.square(x), _F(80.0)))
    rot = (2.0 * _DEG30) * decay.astype(np.float64)
    # sin(z) rounds to z below 1e-8: the (slow) float64 sine only near 275 deg
    np.sin(rot, out=rot, where=rot > 1e-8)
    r_term = -rot * rc.astype(np.float64) * c_term.astype(np.float64) * h_term
    out = np.square(c_term).astype(np.float64) + h_term * h_term + r_term
    return np.broadcast_to(out, np.broadcast_shapes(a1.shape, b1.shape, a2.shape,
                                                    b2.shape)).astype(np.float64, copy=False)


def ciede2000_32(lab_gen, lab_ref) -> np.ndarray:
    """CIEDE2000 as the reference computes it, per pixel (float64, the last axis dropped).

    ``lab_gen``, ``lab_ref``: ``(..., 3)`` float32-exact CIE Lab values (from 8-bit OpenCV codes:
    ``L*100/255``, ``a-128``, ``b-128`` in float32), broadcast together; the generated colour first, as the
    reference passes them.
    """
    g = np.asarray(lab_gen, dtype=np.float32)
    r = np.asarray(lab_ref, dtype=np.float32)
    d2 = lightness_sq32(g[..., 0], r[..., 0]) + chroma_hue32(g[..., 1], g[..., 2],
                                                             r[..., 1], r[..., 2])
    return np.sqrt(np.maximum(d2, 0.0))
