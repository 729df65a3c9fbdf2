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

__all__ = ["ciede2000", "ciede2000_to_color"]

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
