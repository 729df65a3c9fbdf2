"""Colour diagnoses: what a colour block, split or range answer did instead.

Every block (region of one expected colour) is decomposed: the answer's error against the expected colour, ``e
= answer - colour``, is fitted per channel by ``a + b_u u + b_v v + k (r^2 - mean r^2)`` over the block's
ordinary pixels (``u, v`` the position as a fraction of the block's side, ``r`` the distance from its centre),
on a subsampled grid (least squares, :func:`numpy.linalg.lstsq`). The constant is a uniform colour change
(``wrong_color``), the linear terms a ``gradient``, the radial term a ``vignette``, what is left ``noise`` or
``texture``; pixels far from the fit are ``objects`` (text, watermarks, added things: OpenCV connected
components). Each finding's weight is the squared RGB error it accounts for (:mod:`.blocks` makes it a share
of the image's), so findings order by how much they explain.
"""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from ..metrics._common import float_lab
from ..metrics.ciede2000 import ciede2000
from ..suite.colors import ISCC_NBS_COLORS, format_color
from .model import Finding

__all__ = ["WRONG_COLOR_DE", "GRADIENT_MIN_LEVELS", "VIGNETTE_MIN_LEVELS", "NOISE_MIN_STD",
           "OBJECT_DEVIATION", "OBJECT_MIN_SHARE", "FIT_GRID", "GRAY_WEIGHTS",
           "nearest_name", "delta_e", "color_change", "block_findings"]

#: CIEDE2000 from which a block's colour counts as changed: an exact answer gives 0 and a one-level rounding
#: of one channel about 0.3; the colour metric's own limit (lab_00 0.03) is 3.
WRONG_COLOR_DE = 1.0
#: Gray levels a linear trend must change across a block to be a gradient (an exact answer: 0; the metric
#: limit sd 0.025 allows ~11 levels).
GRADIENT_MIN_LEVELS = 3.0
#: Gray levels between the centre and the corners that make a vignette.
VIGNETTE_MIN_LEVELS = 3.0
#: Standard deviation (gray levels) of what the smooth fit leaves that is noise or texture; the integer
#: rounding of a smooth gradient leaves ~0.3.
NOISE_MIN_STD = 1.5
#: Largest channel deviation from the fit (levels) of an object pixel: far above noise and rounding, below any
#: visible mark.
OBJECT_DEVIATION = 40.0
#: Share of a block that object pixels must cover (0.05%: 131 px of 512x512).
OBJECT_MIN_SHARE = 0.0005
#: Components smaller than this many pixels are noise, not objects.
OBJECT_MIN_PIXELS = 4
#: Points per side of the grid the smooth fit is computed on.
FIT_GRID = 64
#: OpenCV's RGB -> gray weights (the metrics' gray).
GRAY_WEIGHTS = np.array([0.299, 0.587, 0.114])


@lru_cache(maxsize=1)
def _iscc_lab():
    rgb = np.array([c.rgb for c in ISCC_NBS_COLORS], np.uint8).reshape(-1, 1, 3)
    return float_lab(rgb).reshape(-1, 3)


def _lab(rgb) -> np.ndarray:
    px = np.clip(np.rint(np.asarray(rgb, np.float64)), 0, 255).astype(np.uint8).reshape(1, 1, 3)
    return float_lab(px).reshape(3)


def nearest_name(rgb) -> str:
    """The ISCC-NBS Level-2 name nearest to ``rgb`` in CIEDE2000 (lower case)."""
    return _nearest_name(tuple(int(v) for v in np.clip(np.rint(np.asarray(rgb, np.float64)), 0, 255)))


@lru_cache(maxsize=1024)
def _nearest_name(rgb: tuple) -> str:
    d = ciede2000(_iscc_lab(), _lab(rgb)[None, :])
    return ISCC_NBS_COLORS[int(np.argmin(d))].phrase


def _hex(rgb) -> str:
    return format_color(tuple(int(v) for v in np.clip(np.rint(rgb), 0, 255)), "hex")


def delta_e(found, requested) -> float:
    """CIEDE2000 between two colours (rounded to 8-bit codes first)."""
    return float(ciede2000(_lab(found)[None, :], _lab(requested)[None, :])[0])


def color_change(found, requested, de: float | None = None) -> dict:
    """The numbers of a colour change: hex and names, CIEDE2000, ``dL``, ``dC``, hue shift.

    ``dL`` and ``dC`` are CIE Lab lightness and chroma differences (found minus requested); ``hue_shift_deg``
    the signed hue-angle difference in degrees (None when either colour is nearly gray, chroma < 5);
    ``levels`` the mean RGB channel difference. ``de``: their :func:`delta_e` when the caller has it already
    (not computed twice).
    """
    lab_f, lab_r = _lab(found), _lab(requested)
    de = float(ciede2000(lab_f[None, :], lab_r[None, :])[0]) if de is None else float(de)
    c_f, c_r = math.hypot(lab_f[1], lab_f[2]), math.hypot(lab_r[1], lab_r[2])
    hue = None
    if c_f >= 5.0 and c_r >= 5.0:
        h = math.degrees(math.atan2(lab_f[2], lab_f[1]) - math.atan2(lab_r[2], lab_r[1]))
        hue = (h + 180.0) % 360.0 - 180.0
    return {"found": _hex(found), "found_name": nearest_name(found),
            "requested": _hex(requested), "requested_name": nearest_name(requested),
            "ciede2000": de, "dL": float(lab_f[0] - lab_r[0]), "dC": c_f - c_r,
            "hue_shift_deg": hue,
            "levels": float(np.mean(np.asarray(found, float) - np.asarray(requested, float)))}


def _direction_words(n: dict) -> str:
    words = []
    if abs(n["dL"]) >= 0.5:
        words.append(f"{'lighter' if n['dL'] > 0 else 'darker'} (dL {n['dL']:+.1f})")
    if abs(n["dC"]) >= 0.5:
        words.append(f"{'more' if n['dC'] > 0 else 'less'} saturated (dC {n['dC']:+.1f})")
    if n["hue_shift_deg"] is not None and abs(n["hue_shift_deg"]) >= 1.0:
        words.append(f"hue {n['hue_shift_deg']:+.0f} deg")
    return ", ".join(words) or "changed"


def _design(hh: int, ww: int, ys, xs):
    u = (xs + 0.5) / ww - 0.5
    v = (ys + 0.5) / hh - 0.5
    r2 = u * u + v * v
    return u, v, r2 - (1.0 / 6.0)  # mean of u^2 + v^2 over the unit square is 1/6


def _least_squares(design: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The least-squares coefficients: the normal equations (5x faster than an SVD on
    4,096 x 4), or ``lstsq`` where they are singular (a block one pixel wide has u = 0)."""
    try:
        return np.linalg.solve(design.T @ design, design.T @ values)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(design, values, rcond=None)[0]


def _objects(far: np.ndarray):
    """Object pixels (0/1 uint8) of a deviation map and their connected components' stats."""
    mask = cv2.threshold(far, OBJECT_DEVIATION, 1, cv2.THRESH_BINARY)[1]
    if not cv2.countNonZero(mask):
        return mask, np.zeros((0, 5), np.int32)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    keep = np.flatnonzero(stats[1:, cv2.CC_STAT_AREA] >= OBJECT_MIN_PIXELS) + 1
    if keep.size < n - 1:
        lut = np.zeros(n, np.uint8)
        lut[keep] = 1
        mask = lut[labels]
    return mask, stats[keep]


def block_findings(block: np.ndarray, color, *, where: str, origin=(0, 0),
                   explained=None) -> tuple:
    """``(findings, energy)`` of one block, ``(h, w, 3)`` uint8, against its expected ``color``.

    ``color`` is an ``(r, g, b)`` or a callable ``color(found) -> (r, g, b)`` that gives it from the found
    colour (a colour range: the nearest in-range colour). ``where`` names the block in the texts (``"image"``,
    ``"left half"``), ``origin`` is its top-left corner (bounding boxes are in image pixels), ``explained``
    the pixels another finding already explains (left out here). Each finding's ``weight`` is its
    squared-error energy (not yet a share); ``energy`` is the block's total.
    """
    hh, ww = block.shape[:2]
    block = np.ascontiguousarray(block)
    ordinary = None if explained is None else (~explained).astype(np.uint8)
    if not callable(color) and explained is None:
        want = np.asarray(color, np.uint8)
        if cv2.countNonZero(cv2.inRange(block, want, want)) == hh * ww:
            return [], 0.0  # the exact block: nothing to find, no error
    # the smooth fit on a subsampled grid, without the pixels far from its median
    step_y, step_x = max(1, hh // FIT_GRID), max(1, ww // FIT_GRID)
    grid = block[::step_y, ::step_x].astype(np.float32)
    sub = grid.reshape(-1, 3)
    if ordinary is not None and ordinary[::step_y, ::step_x].any():
        sub = sub[ordinary[::step_y, ::step_x].reshape(-1) > 0]
    median = np.median(sub, axis=0)
    target = np.rint(np.asarray(color(median) if callable(color) else color, np.float64))
    use = np.abs(grid - median).max(axis=2) <= OBJECT_DEVIATION
    if ordinary is not None:
        use &= ordinary[::step_y, ::step_x] > 0
    if use.sum() < 8:
        use = np.ones_like(use)
    ys, xs = np.nonzero(use)
    u, v, q = _design(hh, ww, ys * step_y, xs * step_x)
    design = np.stack([np.ones_like(u), u, v, q], axis=1)
    coef = _least_squares(design, (grid[use] - target).astype(np.float64))
    coef = coef.astype(np.float32)
    # the fit is separable: a + b_v v + k v^2 (rows) plus b_u u + k (u^2 - 1/6) (columns)
    uu = ((np.arange(ww, dtype=np.float32) + 0.5) / ww - 0.5)[:, None]
    vv = ((np.arange(hh, dtype=np.float32) + 0.5) / hh - 0.5)[:, None]
    lin_rows, lin_cols = vv * coef[2], uu * coef[1]
    rad_rows, rad_cols = vv * vv * coef[3], (uu * uu - np.float32(1 / 6)) * coef[3]
    rows = target.astype(np.float32) + coef[0] + lin_rows + rad_rows  # (hh, 3)
    cols = np.ascontiguousarray((lin_cols + rad_cols).T)  # (3, ww)
    # one plane per channel, merged: numpy's broadcast over a last axis of 3 is 5x slower
    fitted = cv2.merge([rows[:, c:c + 1] + cols[c][None, :] for c in range(3)])
    np.clip(fitted, 0.0, 255.0, out=fitted)
    # objects: pixels far from the fit (largest channel difference), as components
    planes = cv2.split(cv2.absdiff(block, cv2.convertScaleAbs(fitted)))
    far = cv2.max(cv2.max(planes[0], planes[1]), planes[2])
    obj, stats = _objects(far)
    if ordinary is not None:
        obj = cv2.bitwise_and(obj, ordinary)
    inl = cv2.compare(obj, 0, cv2.CMP_EQ)
    if ordinary is not None:
        inl = cv2.bitwise_and(inl, ordinary * 255)
    n_in = max(cv2.countNonZero(inl), 1)
    # energies (sums of squared RGB error against the expected colour)
    want = cv2.merge([np.full((hh, ww), v, np.uint8) for v in target.astype(np.uint8)])
    total = cv2.norm(block, want, cv2.NORM_L2SQR, mask=ordinary)
    obj_energy = cv2.norm(block, want, cv2.NORM_L2SQR, mask=obj) if cv2.countNonZero(obj) else 0.0
    frac = n_in / float(hh * ww)
    lin_energy = frac * (ww * float(np.sum(lin_rows ** 2)) + hh * float(np.sum(lin_cols ** 2)))
    # sum over pixels of (row term + column term)^2, per channel, without the (hh, ww, 3) array
    rad_energy = frac * float(np.sum(ww * np.sum(rad_rows ** 2, axis=0) + hh * np.sum(rad_cols ** 2, axis=0)
                                     + 2.0 * rad_rows.sum(axis=0) * rad_cols.sum(axis=0)))
    off_energy = float(np.sum(coef[0] ** 2)) * n_in
    rest_energy = max(total - obj_energy - off_energy - lin_energy - rad_energy, 0.0)
    target = target.astype(np.float32)
    findings = []
    # uniform colour change vignette: centre vs corners (r^2 from 0 to 1/2); with one, the colour is the
    # centre's
    corner = float(GRAY_WEIGHTS @ coef[3]) * 0.5
    offset = coef[0] - coef[3] / 6.0 if abs(corner) >= VIGNETTE_MIN_LEVELS else coef[0]
    found = target + offset
    de = delta_e(found, target)
    if de >= WRONG_COLOR_DE:
        off_energy = float(np.sum(offset ** 2)) * n_in
        numbers = color_change(found, target, de)
        findings.append(Finding(
            "wrong_color",
            f"{where}: {numbers['found']} ({numbers['found_name']}) instead of "
            f"{numbers['requested']} ({numbers['requested_name']}), CIEDE2000 "
            f"{numbers['ciede2000']:.1f}, {_direction_words(numbers)}",
            {**numbers, "where": where}, off_energy))
    # gradient (gray levels across the block along each axis)
    gu, gv = float(GRAY_WEIGHTS @ coef[1]), float(GRAY_WEIGHTS @ coef[2])
    change = math.hypot(gu, gv)
    if change >= GRADIENT_MIN_LEVELS:
        if abs(gv) >= 2 * abs(gu):
            orient, toward = "vertical", ("bottom" if gv > 0 else "top")
        elif abs(gu) >= 2 * abs(gv):
            orient, toward = "horizontal", ("right" if gu > 0 else "left")
        else:
            orient = "diagonal"
            toward = ("bottom" if gv > 0 else "top") + "-" + ("right" if gu > 0 else "left")
        angle = math.degrees(math.atan2(gv, gu))
        findings.append(Finding(
            "gradient",
            f"{where}: {orient} gradient, {change:.1f} gray levels lighter toward the {toward}",
            {"where": where, "orientation": orient, "toward": toward, "levels": change,
             "levels_x": gu, "levels_y": gv, "angle_deg": angle},
            lin_energy))
    if abs(corner) >= VIGNETTE_MIN_LEVELS:
        findings.append(Finding(
            "vignette",
            f"{where}: vignette, corners {abs(corner):.1f} gray levels "
            f"{'lighter' if corner > 0 else 'darker'} than the centre",
            {"where": where, "corner_levels": corner},
            rad_energy + n_in * float(np.sum((coef[3] / 6.0) ** 2))))  # uncentred: from the centre
    # noise / texture: what the smooth fit leaves on ordinary pixels
    g_res = cv2.cvtColor(block, cv2.COLOR_RGB2GRAY).astype(np.float32)
    g_res -= cv2.cvtColor(fitted, cv2.COLOR_RGB2GRAY)
    amp = float(cv2.meanStdDev(g_res, mask=inl)[1][0, 0])
    if amp >= NOISE_MIN_STD:
        correlated = float(cv2.meanStdDev(cv2.blur(g_res, (5, 5)), mask=inl)[1][0, 0]) / amp
        kind = "texture" if correlated >= 0.5 else "noise"
        findings.append(Finding(
            kind, f"{where}: {kind}, amplitude {amp:.1f} gray levels (std)",
            {"where": where, "amplitude": amp, "correlation": correlated}, rest_energy))
    # objects
    share = cv2.countNonZero(obj) / float(hh * ww)
    if share >= OBJECT_MIN_SHARE:
        x0, y0, bw, bh = cv2.boundingRect(obj)
        bbox = [x0 + origin[0], y0 + origin[1], bw, bh]
        findings.append(Finding(
            "objects",
            f"{where}: {len(stats)} object region(s) covering {100 * share:.2f}% of it, "
            f"bounding box x={bbox[0]}, y={bbox[1]}, {bbox[2]}x{bbox[3]} px",
            {"where": where, "share": share, "regions": int(len(stats)), "bbox": bbox},
            obj_energy))
    return findings, total
