"""CIEDE2000 as the Violin reference computes it: float32, portably.

The reference metric (``color_metric.py``, ``calc_lab_ciede``) converts the
8-bit OpenCV Lab codes to **float32** (``L*100/255``, ``a-128``, ``b-128``)
and calls ``skimage.color.deltaE_ciede2000``, which keeps float32 for most
of the formula. Two things follow:

* **Branch decisions.** CIEDE2000 wraps the hue difference when
  ``|h2 - h1| > pi`` and shifts the mean hue by ``+-2 pi`` when it does
  (the sign from ``h1 + h2 < 2 pi``). When the answer's hue is exactly
  opposite the expected one (or its mirror image about the ``a*`` axis) the
  exact difference (sum) *is* ``pi`` (``2 pi``), so the branch depends on
  the last bit of the float32 hue angles; the branches differ by up to ~32
  dE00 per pixel. The float64 formula takes the other branch for many such
  pairs (e.g. expected ``#2E8B57`` against ``(245, 0, 217)``: 82.56 in the
  reference, 50.09 in float64).
* **Rounding.** float32 hue angles carry ~2.4e-7 rad of rounding, which the
  hue term multiplies by up to ``2 sqrt(C1 C2) ~ 250``: the reference's
  per-pixel values differ from float64 by up to ~1.2e-4 dE00 (1.2e-6 of
  ``lab_00`` for a one-colour answer).

The reference's float32 angles come from numpy's float32 ``arctan2``. The
published numbers (and ``tests/data/violin-golden``) come from numpy's
portable loop, which calls the C library's ``atan2f``: glibc's, the fdlibm
algorithm. numpy builds that dispatch float32 ``arctan2`` to AVX-512 code,
and other C libraries, round differently and take the other branch for
about 10% of the exactly opposite code pairs: the reference itself is not
portable there.

This module computes the reference's arithmetic step by step on every
platform: the same float32 operations in the same order (with numpy 2's
promotion rules, under which parts of the hue weighting are float64), with
an ``atan2f`` written here in float32 arithmetic (:func:`atan2f`,
bit-identical to glibc's) and the other float32 functions correctly
rounded. It agrees with the reference to float32 rounding of its
transcendental functions (~1e-5 dE00) and takes the same branch for every
pair of 8-bit codes (checked exhaustively over all exactly opposite and
mirrored pairs in ``tests/test_ciede2000.py``; away from those ties the
branch is the same in any precision: two code vectors that are not exactly
opposite or mirrored are at least ``1 / 231**2 ~ 1.9e-5`` rad from it).

The formula is split like :mod:`.ciede2000`: a lightness part that depends
on the two ``L*`` only and a chroma/hue part that depends on the ``a*``,
``b*`` only, so the colour metrics can build lookup tables from them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["atan2f", "lightness_sq32", "chroma_hue32", "ciede2000_32"]

_F = np.float32


def _bits(word: int) -> np.float32:
    return np.array([word], dtype=np.uint32).view(np.float32)[0]


# fdlibm's float atan constants, as shipped in glibc (flt-32/s_atanf.c);
# glibc rounds the first odd coefficient up (0x3eaaaaab, fdlibm 0x3eaaaaaa).
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


def _atanf_nonneg(x: np.ndarray) -> np.ndarray:
    """``atanf`` of finite float32 ``x >= 0``: argument reduction to one of
    five intervals, then an odd polynomial split into two Horner chains."""
    ix = x.view(np.uint32)
    r = np.empty_like(x)
    which = np.full(x.shape, -1, dtype=np.int8)
    small = ix < 0x3EE00000                        # |x| < 7/16
    k0 = ~small & (ix < 0x3F300000)                # < 11/16
    k1 = ~small & ~k0 & (ix < 0x3F980000)          # < 19/16
    k2 = ~small & ~k0 & ~k1 & (ix < 0x401C0000)    # < 39/16
    k3 = ~(small | k0 | k1 | k2)
    r[small] = x[small]
    r[k0] = (_F(2.0) * x[k0] - _ONE) / (x[k0] + _F(2.0))
    r[k1] = (x[k1] - _ONE) / (x[k1] + _ONE)
    r[k2] = (x[k2] - _F(1.5)) / (_F(1.5) * x[k2] + _ONE)
    r[k3] = _F(-1.0) / x[k3]
    for k, sel in enumerate((k0, k1, k2, k3)):
        which[sel] = k
    z = r * r
    w = z * z
    s1 = _AT[10]
    for c in (_AT[8], _AT[6], _AT[4], _AT[2], _AT[0]):
        s1 = s1 * w + c
    s1 = s1 * z
    s2 = _AT[9]
    for c in (_AT[7], _AT[5], _AT[3], _AT[1]):
        s2 = s2 * w + c
    s2 = s2 * w
    t = r * (s1 + s2)
    out = r - t
    for k in range(4):
        sel = which == k
        out[sel] = _ATAN_HI[k] - ((t[sel] - _ATAN_LO[k]) - r[sel])
    huge = ix >= 0x4C000000                        # |x| >= 2**25: pi/2
    out[huge] = _ATAN_HI[3] + _ATAN_LO[3]
    tiny = ix < 0x31000000                         # |x| < 2**-29: x
    out[tiny] = x[tiny]
    return out


def atan2f(y, x) -> np.ndarray:
    """float32 ``atan2(y, x)`` rounded exactly as glibc's ``atan2f`` (fdlibm).

    Parameters
    ----------
    y, x : array_like
        Finite values, converted to float32 and broadcast.

    Returns
    -------
    numpy.ndarray
        float32 angles in ``[-pi, pi]``, bit-identical to the C library
        function of the platform the Violin reference values come from.
    """
    y, x = np.broadcast_arrays(np.asarray(y, dtype=np.float32), np.asarray(x, dtype=np.float32))
    hx = x.view(np.int32).astype(np.int64)
    hy = y.view(np.int32).astype(np.int64)
    ix, iy = hx & 0x7FFFFFFF, hy & 0x7FFFFFFF
    x_neg, y_neg = hx < 0, hy < 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.abs(y / x)
    z = _atanf_nonneg(np.where(np.isfinite(q), q, _F(0.0)).astype(np.float32))
    k = (iy - ix) >> 23
    z = np.where(k > 60, _PI_O_2 + _F(0.5) * _PI_LO, z)
    z = np.where(x_neg & (k < -60), _F(0.0), z)
    out = np.where(x_neg, np.where(y_neg, (z - _PI_LO) - _PI, _PI - (z - _PI_LO)),
                   np.where(y_neg, -z, z))
    out = np.where(iy == 0, np.where(x_neg, np.where(y_neg, -_PI, _PI), y), out)
    out = np.where((ix == 0) & (iy != 0), np.where(y_neg, -_PI_O_2, _PI_O_2), out)
    unit = hx == 0x3F800000                        # x == 1: atanf(y)
    if unit.any():
        ay = _atanf_nonneg(np.abs(y[unit]))
        out[unit] = np.where(y_neg[unit], -ay, ay)
    return out.astype(np.float32)


def _hypotf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # glibc's hypotf: the double square root of the double sum of squares,
    # rounded to float.
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.sqrt(a * a + b * b).astype(np.float32)


def _round32(x) -> np.ndarray:
    """Round float64 values to float32 (a correctly rounded float32 result
    when ``x`` is the float64 value of a transcendental function)."""
    return np.asarray(x, dtype=np.float64).astype(np.float32)


_RAD2DEG32 = _F(180.0) / _F(np.pi)
_DEG30, _DEG6, _DEG63 = np.deg2rad(30.0), np.deg2rad(6.0), np.deg2rad(63.0)


def lightness_sq32(L_gen, L_ref) -> np.ndarray:
    """The reference's squared lightness term ``(dL / S_L)**2``.

    Parameters
    ----------
    L_gen, L_ref : array_like
        ``L*`` of the generated and the expected colour (float32 values,
        e.g. ``code * 100 / 255`` in float32); broadcast together.

    Returns
    -------
    numpy.ndarray
        float64 holding the float32 value the reference computes.
    """
    L1, L2 = (np.asarray(v, dtype=np.float32) for v in (L_gen, L_ref))
    lbar = _F(0.5) * (L1 + L2)
    tmp = np.square(lbar - _F(50.0))
    sl = _ONE + _F(0.015) * tmp / np.sqrt(_F(20.0) + tmp)
    term = (L2 - L1) / sl
    return np.square(term).astype(np.float64)


def chroma_hue32(a_gen, b_gen, a_ref, b_ref) -> np.ndarray:
    """The reference's chroma, hue and rotation part of CIEDE2000 squared.

    That is ``C_term**2 + H_term**2 + R_term`` of
    ``skimage.color.deltaE_ciede2000(lab_gen, lab_ref)`` on float32 input,
    with the reference's hue decisions; see the module notes.

    Parameters
    ----------
    a_gen, b_gen, a_ref, b_ref : array_like
        ``a*``, ``b*`` of the generated and the expected colour (float32
        values, e.g. 8-bit code minus 128); broadcast together.

    Returns
    -------
    numpy.ndarray
        float64 array of the broadcast shape.
    """
    a1, b1, a2, b2 = np.broadcast_arrays(*(np.asarray(v, dtype=np.float32)
                                           for v in (a_gen, b_gen, a_ref, b_ref)))
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
    dh_term = _F(2.0) * np.sqrt(cc) * _round32(np.sin((dh / _F(2.0)).astype(np.float64)))

    wrap = ~zero & (np.abs(h_diff) > _PI32)
    hbar = np.where(wrap & (h_sum < _TWO_PI32), h_sum + _TWO_PI32,
                    np.where(wrap, h_sum - _TWO_PI32, h_sum))
    hbar = (np.where(zero, hbar * _F(2.0), hbar) * _F(0.5)).astype(np.float32)

    # numpy 2 promotion: the terms shifted by np.deg2rad (a float64 scalar)
    # are float64, cos(2 Hbar) and the rotation's exponent are float32.
    h64 = hbar.astype(np.float64)
    cos2 = _round32(np.cos((_F(2.0) * hbar).astype(np.float64)))
    t = (1.0 - 0.17 * np.cos(h64 - _DEG30)
         + (_F(0.24) * cos2).astype(np.float64)
         + 0.32 * np.cos((_F(3.0) * hbar).astype(np.float64) + _DEG6)
         - 0.20 * np.cos((_F(4.0) * hbar).astype(np.float64) - _DEG63))
    sh = 1.0 + (_F(0.015) * cbar_p).astype(np.float64) * t
    h_term = dh_term.astype(np.float64) / sh

    c7p = _round32(cbar_p.astype(np.float64) ** 7)
    rc = _F(2.0) * np.sqrt(c7p / (c7p + _F(25.0**7)))
    x = (hbar * _RAD2DEG32 - _F(275.0)) / _F(25.0)
    decay = _round32(np.exp(-np.square(x).astype(np.float64)))
    dtheta = _DEG30 * decay.astype(np.float64)
    c64 = c_term.astype(np.float64)
    r_term = -np.sin(2.0 * dtheta) * rc.astype(np.float64) * c64 * h_term
    return np.square(c_term).astype(np.float64) + h_term * h_term + r_term


def ciede2000_32(lab_gen, lab_ref) -> np.ndarray:
    """CIEDE2000 as the reference computes it, per pixel.

    Parameters
    ----------
    lab_gen, lab_ref : array_like
        ``(..., 3)`` float32-exact CIE Lab values (from 8-bit OpenCV codes:
        ``L*100/255``, ``a-128``, ``b-128`` in float32), broadcast together;
        the generated colour first, as the reference passes them.

    Returns
    -------
    numpy.ndarray
        float64 dE00 of the broadcast shape without the last axis.
    """
    g = np.asarray(lab_gen, dtype=np.float32)
    r = np.asarray(lab_ref, dtype=np.float32)
    d2 = lightness_sq32(g[..., 0], r[..., 0]) + chroma_hue32(g[..., 1], g[..., 2],
                                                             r[..., 1], r[..., 2])
    return np.sqrt(np.maximum(d2, 0.0))
