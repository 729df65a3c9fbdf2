"""CIEDE2000 colour difference (Sharma, Wu & Dalal 2005), vectorized.

The formula is split into a lightness part that depends only on the two ``L*`` values and a chroma/hue part
that depends only on the ``a*``/``b*`` values. :func:`ciede2000` adds them; the colour metrics use the two
parts separately to build small lookup tables when one side is a single colour (see
:mod:`pytest_violin.metrics.color`).

Conventions follow ``skimage.color.deltaE_ciede2000`` (hue angles in ``[0, 2*pi)``; the hue difference and the
mean hue of a pair with a zero chroma are handled as in Sharma et al., note 1), with ``kL = kC = kH = 1``.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["ciede2000", "ciede2000_to_color", "atan2f", "lightness_sq32", "chroma_hue32", "ciede2000_32"]

_TWO_PI = 2.0 * np.pi
_25_POW_7 = 25.0**7
_DEG30 = np.deg2rad(30.0)
_DEG6 = np.deg2rad(6.0)
_DEG63 = np.deg2rad(63.0)
_COS30, _SIN30 = np.cos(_DEG30), np.sin(_DEG30)
_COS6, _SIN6 = np.cos(_DEG6), np.sin(_DEG6)
_COS63, _SIN63 = np.cos(_DEG63), np.sin(_DEG63)
_RAD2DEG = 180.0 / np.pi


def lightness_term_sq(L1, L2) -> np.ndarray:
    """The float64 squared lightness term ``(dL' / S_L)**2`` of CIE ``L*`` values ``L1``, ``L2`` (broadcast)."""
    L1 = np.asarray(L1, dtype=np.float64)
    L2 = np.asarray(L2, dtype=np.float64)
    lbar = 0.5 * (L1 + L2)
    tmp = (lbar - 50.0) ** 2
    sl = 1.0 + 0.015 * tmp / np.sqrt(20.0 + tmp)
    return ((L2 - L1) / sl) ** 2


def _hue_2pi(x, y):
    """``arctan2(y, x)`` mapped to ``[0, 2 pi)``.

    ``numpy.arctan2`` itself (not a faster ``arctan(y / x)``): hue pairs exactly 180 degrees apart, like
    Sharma's pair 7.1792, sit on the branch cut, and only the same rounding gives the same branch.
    """
    t = np.arctan2(y, x)
    return np.where(t < 0.0, t + _TWO_PI, t)


def _pow7(x):
    x2 = x * x
    return x2 * x2 * x2 * x


#: Elements per chunk: keeps the ~40 temporaries of the formula near the cache (2048 to 65536 measured on
#: 512x512 noise: 16384 is the fastest).
CHUNK = 16384


def chroma_hue_terms(a1, b1, a2, b2) -> np.ndarray:
    """The chroma, hue and rotation part of CIEDE2000 squared, float64 of the broadcast shape.

    That is ``(dC'/S_C)**2 + (dH'/S_H)**2 + R_T (dC'/S_C)(dH'/S_H)``, which depends on the ``a*``/``b*``
    coordinates only; ``ciede2000 = sqrt(max(lightness_term_sq + this, 0))``. Large inputs are processed in
    chunks of :data:`CHUNK` elements for cache locality.
    """
    args = [np.asarray(v, dtype=np.float64) for v in (a1, b1, a2, b2)]
    shape = np.broadcast_shapes(*(a.shape for a in args))
    n = int(np.prod(shape))
    if n <= CHUNK:
        return np.broadcast_to(_chroma_hue_kernel(*args), shape).copy()
    # Single values stay scalars (the kernel broadcasts); the rest are flattened to the broadcast shape and
    # walked in chunks.
    flat = [float(a.reshape(-1)[0]) if a.size == 1 else np.broadcast_to(a, shape).reshape(-1)
            for a in args]
    out = np.empty(n, dtype=np.float64)
    for start in range(0, n, CHUNK):
        stop = start + CHUNK
        out[start:stop] = _chroma_hue_kernel(
            *(f if isinstance(f, float) else f[start:stop] for f in flat))
    return out.reshape(shape)


def ref_primes(a1, b1, c2ab):
    """The first colour's terms that depend only on the second's ``C*ab``.

    Returns ``(scale, c1, h1)``: ``1 + G``, the primed chroma and hue of ``(a1, b1)``. When the first colour
    is fixed, these depend on the second colour only through its chroma, so callers can compute them once per
    distinct chroma.
    """
    cbar = 0.5 * (np.sqrt(a1 * a1 + b1 * b1) + c2ab)
    c7 = _pow7(cbar)
    scale = 1.0 + 0.5 * (1.0 - np.sqrt(c7 / (c7 + _25_POW_7)))
    a1p = a1 * scale
    c1 = np.sqrt(a1p * a1p + b1 * b1)
    return scale, c1, _hue_2pi(a1p, b1)


def _chroma_hue_kernel(a1, b1, a2, b2) -> np.ndarray:
    """:func:`chroma_hue_terms` on arrays that broadcast, without chunking."""
    scale, c1, h1 = ref_primes(a1, b1, np.sqrt(a2 * a2 + b2 * b2))
    return chroma_hue_from_primes(a2, b2, scale, c1, h1)


def chroma_hue_from_primes(a2, b2, scale, c1, h1) -> np.ndarray:
    """The chroma/hue part of CIEDE2000 given :func:`ref_primes` of colour 1.

    Written for speed: chromas with ``sqrt`` instead of ``hypot``, powers by multiplication, and ``cos(k h) /
    sin(k h)`` for k = 2, 3, 4 by the multiple-angle identities, so the only transcendental calls are the
    ``arctan2`` of each hue, one ``cos``/``sin`` pair of the mean hue, one ``sin`` of the half hue difference,
    one ``exp`` and one ``sin`` of the rotation.
    """
    a2p = a2 * scale
    c2 = np.sqrt(a2p * a2p + b2 * b2)
    h2 = _hue_2pi(a2p, b2)

    cbar_p = 0.5 * (c1 + c2)
    c_term = (c2 - c1) / (1.0 + 0.045 * cbar_p)

    h_diff = h2 - h1
    h_sum = h1 + h2
    cc = c1 * c2
    zero = cc == 0.0
    # Hue difference wrapped to [-pi, pi]; 0 when either chroma is 0.
    dh = np.where(h_diff > np.pi, h_diff - _TWO_PI,
                  np.where(h_diff < -np.pi, h_diff + _TWO_PI, h_diff))
    dh = np.where(zero, 0.0, dh)
    dh_term = 2.0 * np.sqrt(cc) * np.sin(0.5 * dh)

    # Mean hue in [0, 2 pi) (the sum itself when either chroma is 0).
    wrap = np.abs(h_diff) > np.pi
    hbar = 0.5 * np.where(zero, 2.0 * h_sum,
                          np.where(wrap, np.where(h_sum < _TWO_PI, h_sum + _TWO_PI,
                                                  h_sum - _TWO_PI), h_sum))

    cos1 = np.cos(hbar)
    sin1 = np.sin(hbar)
    cos2 = 2.0 * cos1 * cos1 - 1.0
    sin2 = 2.0 * sin1 * cos1
    cos3 = cos1 * cos2 - sin1 * sin2
    sin3 = sin1 * cos2 + cos1 * sin2
    cos4 = 2.0 * cos2 * cos2 - 1.0
    sin4 = 2.0 * sin2 * cos2
    t = (1.0
         - 0.17 * (cos1 * _COS30 + sin1 * _SIN30)
         + 0.24 * cos2
         + 0.32 * (cos3 * _COS6 - sin3 * _SIN6)
         - 0.20 * (cos4 * _COS63 + sin4 * _SIN63))
    h_term = dh_term / (1.0 + 0.015 * cbar_p * t)

    c7p = _pow7(cbar_p)
    rc = 2.0 * np.sqrt(c7p / (c7p + _25_POW_7))
    x = (hbar * _RAD2DEG - 275.0) / 25.0
    # exp(-746) is already 0.0; the cap only avoids the slow denormal path.
    dtheta = _DEG30 * np.exp(-np.minimum(x * x, 746.0))
    r_term = -np.sin(2.0 * dtheta) * rc * c_term * h_term
    return c_term * c_term + h_term * h_term + r_term


def ciede2000(lab1, lab2) -> np.ndarray:
    """CIEDE2000 colour difference between two arrays of CIE Lab colours.

    Parameters
    ----------
    lab1, lab2 : array_like
        Arrays of shape ``(..., 3)`` holding ``L*`` (0-100), ``a*`` and ``b*``; they broadcast against each
        other (e.g. an image against a single colour).

    Returns
    -------
    numpy.ndarray
        float64 array of the broadcast shape without the last axis (a 0-d
        array for two single colours). ``kL = kC = kH = 1``.

    Raises
    ------
    ValueError
        If either last axis is not of length 3 or the shapes do not broadcast.

    Notes
    -----
    Sharma, Wu & Dalal (2005), "The CIEDE2000 color-difference formula: implementation notes, supplementary
    test data, and mathematical observations", Color Res. Appl. 30(1). Matches their 34 test pairs to 1e-4 and
    ``skimage.color.deltaE_ciede2000`` to about 1e-12.

    Examples
    --------
    >>> float(ciede2000([50, 2.6772, -79.7751], [50, 0, -82.7485])).__round__(4)
    2.0425
    """
    lab1 = np.asarray(lab1, dtype=np.float64)
    lab2 = np.asarray(lab2, dtype=np.float64)
    for name, lab in (("lab1", lab1), ("lab2", lab2)):
        if lab.ndim == 0 or lab.shape[-1] != 3:
            raise InvalidArgumentError(
                f"{name} must have shape (..., 3) holding L*, a*, b*; got shape {lab.shape}")
    try:
        np.broadcast_shapes(lab1.shape, lab2.shape)
    except ValueError:
        raise InvalidArgumentError(
            f"lab1 shape {lab1.shape} and lab2 shape {lab2.shape} do not broadcast") from None
    d2 = lightness_term_sq(lab1[..., 0], lab2[..., 0]) + chroma_hue_terms(
        lab1[..., 1], lab1[..., 2], lab2[..., 1], lab2[..., 2])
    return np.sqrt(np.maximum(d2, 0.0))


# Coefficients of the hue weighting T(h) = A(cos h) + sin h * B(cos h): the cosine terms as Chebyshev
# polynomials T_k(c), the sine terms as sin h * U_{k-1}(c), expanded in powers of c (highest first, for
# Horner).
def _t_polynomials():
    c30, s30 = np.cos(_DEG30), np.sin(_DEG30)
    c6, s6 = np.cos(_DEG6), np.sin(_DEG6)
    c63, s63 = np.cos(_DEG63), np.sin(_DEG63)
    cheb = np.polynomial.chebyshev
    tk = [cheb.cheb2poly([0] * k + [1]) for k in range(5)]          # T_k, low to high
    uk = [np.array([1.0]), np.array([0.0, 2.0]), np.array([-1.0, 0.0, 4.0]),
          np.array([0.0, -4.0, 0.0, 8.0])]                        # U_0 .. U_3
    a = np.zeros(5)
    a[:1] += 1.0
    a[:2] += -0.17 * c30 * tk[1]
    a[:3] += 0.24 * tk[2]
    a[:4] += 0.32 * c6 * tk[3]
    a[:5] += -0.20 * c63 * tk[4]
    # sin(k h + phi) terms: -0.17 sin30 sin h, -0.32 sin6 sin 3h, -0.20 sin63 sin 4h
    b = np.zeros(4)
    b[:1] += -0.17 * s30 * uk[0]
    b[:3] += -0.32 * s6 * uk[2]
    b[:4] += -0.20 * s63 * uk[3]
    return tuple(a[::-1]), tuple(b[::-1])


_T_A, _T_B = _t_polynomials()


def _horner(coeffs, x):
    acc = coeffs[0] * x
    acc += coeffs[1]
    for c in coeffs[2:]:
        acc *= x
        acc += c
    return acc


def ciede2000_to_color(lab, ref) -> np.ndarray:
    """CIEDE2000 between each colour of ``lab`` (``(..., 3)`` CIE Lab) and one colour ``ref`` (``(3,)``).

    float64 of ``lab``'s shape without the last axis: the same values as ``ciede2000(ref, lab)`` (to ~1e-12),
    about twice as fast: trigonometry only where the formula needs an angle. The hue difference term comes
    from the dot and cross products of the primed ``(a', b)`` vectors (``dH'**2 = 2 (C1' C2' - dot)``, written
    ``2 cross**2 / (C1' C2' + dot)`` when that cancels; its sign is the cross product's), and the mean hue's
    direction is the bisector of the two unit vectors, so ``T`` is a polynomial in its cosine and sine; one
    ``arctan2`` of the bisector gives the angle the rotation term needs. Pairs whose mean hue is (nearly) a
    branch decision of the formula (hues within ~1e-6 rad of opposite, mean hue within ~1e-9 rad of 0) go
    through :func:`chroma_hue_terms`. Other shapes are a ``ValueError``.
    """
    lab = np.asarray(lab, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if lab.ndim == 0 or lab.shape[-1] != 3:
        raise InvalidArgumentError(f"lab must have shape (..., 3) holding L*, a*, b*; got shape {lab.shape}")
    if ref.shape != (3,):
        raise InvalidArgumentError(f"ref must be one colour of shape (3,); got shape {ref.shape}")
    return ciede2000_planes_to_color(lab[..., 0], lab[..., 1], lab[..., 2], ref)


def ciede2000_planes_to_color(L, a, b, ref) -> np.ndarray:
    """:func:`ciede2000_to_color` of Lab given as three arrays ``L, a, b``
    of one shape (no checks: the colour metrics' internal entry)."""
    shape = np.shape(L)
    planes = [np.ascontiguousarray(v, dtype=np.float64).reshape(-1) for v in (L, a, b)]
    n = planes[0].size
    out = np.empty(n, dtype=np.float64)
    L1, a1, b1 = (float(v) for v in ref)
    for start in range(0, n, CHUNK):
        sl = slice(start, start + CHUNK)
        out[sl] = _to_color_kernel(L1, a1, b1, planes[0][sl], planes[1][sl], planes[2][sl])
    return out.reshape(shape)


def _to_color_kernel(L1: float, a1: float, b1: float, L2, a2, b2) -> np.ndarray:
    # Lightness.
    lbar = L2 + L1
    lbar *= 0.5
    lbar -= 50.0
    lbar *= lbar
    sl = 20.0 + lbar
    np.sqrt(sl, out=sl)
    np.divide(lbar, sl, out=sl)
    sl *= 0.015
    sl += 1.0
    d2 = L2 - L1
    d2 /= sl
    d2 *= d2
    # 1 + G from the mean chroma.
    c1ab = np.hypot(a1, b1)
    c2ab = a2 * a2
    c2ab += b2 * b2
    np.sqrt(c2ab, out=c2ab)
    cbar = c2ab + c1ab
    cbar *= 0.5
    c7 = _pow7(cbar)
    scale = c7 + _25_POW_7
    np.divide(c7, scale, out=scale)
    np.sqrt(scale, out=scale)
    scale *= -0.5
    scale += 1.5
    # Primed chromas and the dot and cross products of (a', b).
    a1p = scale * a1
    a2p = scale * a2
    c1 = a1p * a1p
    c1 += b1 * b1
    np.sqrt(c1, out=c1)
    c2 = a2p * a2p
    c2 += b2 * b2
    np.sqrt(c2, out=c2)
    cbar_p = c1 + c2
    cbar_p *= 0.5
    c_term = c2 - c1
    c_term /= 1.0 + 0.045 * cbar_p
    dot = a1p * a2p
    dot += b1 * b2
    cross = a1p * b2
    cross -= a2p * b1
    cc = c1 * c2
    # dH'^2 = 2 (C1'C2' - dot) = 2 cross^2 / (C1'C2' + dot), the stable one.
    with np.errstate(divide="ignore", invalid="ignore"):
        dh2 = np.where(dot > 0.0, cross * cross / (cc + dot), cc - dot)
    dh2 *= 2.0
    np.sqrt(dh2, out=dh2)
    h_term = np.copysign(dh2, cross, out=dh2)
    # Mean hue direction: bisector of the unit vectors (c2 u1 + c1 u2), or the non-neutral colour's direction
    # when one chroma is 0.
    bx = a1p * c2
    bx += a2p * c1
    by = b1 * c2
    by += b2 * c1
    if c1ab == 0.0:
        bx, by = a2p, b2 + 0.0 * bx
    else:
        neutral = c2 == 0.0
        if neutral.any():
            bx[neutral] = a1p[neutral]
            by[neutral] = b1
    norm = bx * bx
    norm += by * by
    np.sqrt(norm, out=norm)
    if norm.all():
        cos1 = bx / norm
        sin1 = by / norm
    else:  # both colours neutral: mean hue 0
        with np.errstate(divide="ignore", invalid="ignore"):
            cos1 = np.where(norm > 0.0, bx / norm, 1.0)
            sin1 = np.where(norm > 0.0, by / norm, 0.0)
    t = _horner(_T_B, cos1)
    t *= sin1
    t += _horner(_T_A, cos1)
    t *= cbar_p
    t *= 0.015
    t += 1.0
    h_term /= t
    # Rotation term, from the mean hue angle in [0, 2 pi).
    hbar = np.arctan2(by, bx)
    hbar[hbar < 0.0] += _TWO_PI
    hbar *= _RAD2DEG / 25.0
    hbar -= 11.0                                    # 275 / 25
    hbar *= hbar
    np.minimum(hbar, 746.0, out=hbar)               # exp(-746) is 0.0 already
    np.negative(hbar, out=hbar)
    np.exp(hbar, out=hbar)
    hbar *= 2.0 * _DEG30
    # sin(z) rounds to z below 1e-8 (z**2 / 6 < 2**-53): call the (scalar, slow) float64 sine only where the
    # mean hue is near 275 degrees.
    np.sin(hbar, out=hbar, where=hbar > 1e-8)
    c7 = _pow7(cbar_p)
    rc = c7 + _25_POW_7
    np.divide(c7, rc, out=rc)
    np.sqrt(rc, out=rc)
    rc *= -2.0
    rc *= hbar
    rc *= c_term
    rc *= h_term
    d2 += c_term * c_term
    d2 += h_term * h_term
    d2 += rc
    # Where the mean hue is (nearly) a branch decision of the formula, hues (nearly) opposite (the bisector
    # vanishes: its direction would be rounding) or a mean hue at 0 = 360 degrees (where the rotation term
    # jumps), take the formula's own arithmetic.
    tie = (norm <= 1e-6 * cc) | ((np.abs(by) <= 1e-9 * norm) & (bx > 0.0))
    tie &= cc > 0.0
    if tie.any():
        d2[tie] = lightness_term_sq(L1, L2[tie]) + chroma_hue_terms(a1, b1, a2[tie], b2[tie])
    np.maximum(d2, 0.0, out=d2)
    return np.sqrt(d2, out=d2)


# CIEDE2000 as the Violin reference computes it: float32, portably.
#
# The reference metric (``color_metric.py``, ``calc_lab_ciede``) converts the 8-bit OpenCV Lab codes to
# **float32** (``L*100/255``, ``a-128``, ``b-128``) and calls ``skimage.color.deltaE_ciede2000``, which keeps
# float32 for most of the formula. Two things follow:
#
# * **Branch decisions.** CIEDE2000 wraps the hue difference when ``|h2 - h1| > pi`` and shifts the mean hue by
#   ``+-2 pi`` when it does (the sign from ``h1 + h2 < 2 pi``). When the answer's hue is exactly opposite the
#   expected one (or its mirror image about the ``a*`` axis) the exact difference (sum) *is* ``pi`` (``2 pi``),
#   so the branch depends on the last bit of the float32 hue angles; the branches differ by up to ~32 dE00 per
#   pixel. The float64 formula takes the other branch for many such pairs (e.g. expected ``#2E8B57`` against
#   ``(245, 0, 217)``: 82.56 in the reference, 50.09 in float64).
# * **Rounding.** float32 hue angles carry ~2.4e-7 rad of rounding, which the hue term multiplies by up to ``2
#   sqrt(C1 C2) ~ 250``: the reference's per-pixel values differ from float64 by up to ~1.2e-4 dE00 (1.2e-6 of
#   ``lab_00`` for a one-colour answer).
#
# The reference's float32 angles come from numpy's float32 ``arctan2``. The published numbers (and
# ``tests/data/violin-golden``) come from numpy's portable loop, which calls the C library's ``atan2f``:
# glibc's, the fdlibm algorithm. numpy builds that dispatch float32 ``arctan2`` to AVX-512 code, and other C
# libraries, round differently and take the other branch for about 10% of the exactly opposite code pairs: the
# reference itself is not portable there. Nor across numpy versions: under numpy 1's value-based casting ``c7 +
# 25**7`` (a Python int beyond int32) is float64, so skimage computes in float64 from ``G`` on; the published
# values follow numpy 2.
#
# This module computes the reference's arithmetic step by step on every platform: the same float32 operations in
# the same order (with numpy 2's promotion rules, under which parts of the hue weighting are float64), with an
# ``atan2f`` written here in float32 arithmetic (:func:`atan2f`, bit-identical to glibc's) and the other float32
# functions correctly rounded. It agrees with the reference to float32 rounding of its transcendental functions
# (~1e-5 dE00) and takes the same branch for every pair of 8-bit codes (checked exhaustively over all exactly
# opposite and mirrored pairs in ``tests/unit/test_ciede2000.py``; away from those ties the branch is the same
# in any precision: two code vectors that are not exactly opposite or mirrored are at least ``1 / 231**2 ~
# 1.9e-5`` rad from it).
#
# The formula is split like the float64 formula above: a lightness part that depends on the two ``L*`` only and a
# chroma/hue part that depends on the ``a*``, ``b*`` only, so the colour metrics can build lookup tables from
# them.


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
