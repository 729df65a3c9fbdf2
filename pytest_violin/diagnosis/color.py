"""Colour diagnoses: what a colour block, split or range answer did instead.

Every block (region of one expected colour) is decomposed: the answer's
error against the expected colour, ``e = answer - colour``, is fitted per
channel by ``a + b_u u + b_v v + k (r^2 - mean r^2)`` over the block's
ordinary pixels (``u, v`` the position as a fraction of the block's side,
``r`` the distance from its centre), on a subsampled grid (least squares,
:func:`numpy.linalg.lstsq`). The constant is a uniform colour change
(``wrong_color``), the linear terms a ``gradient``, the radial term a
``vignette``, what is left ``noise`` or ``texture``; pixels far from the fit
are ``objects`` (text, watermarks, added things: OpenCV connected
components). Each finding's weight is the share of the image's squared RGB
error it accounts for, so findings order by how much they explain.

Layouts with several blocks are checked first for ``swapped_blocks`` (a
permutation of the requested colours fits much better) and two-colour
splits for ``wrong_split`` (the orientation and position of the border
between the two colours, from the pixel classes of
:func:`pytest_violin.metrics.geometric.nearer_first`).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import cv2
import numpy as np

from ..metrics._lab import float_lab
from ..metrics.ciede2000 import ciede2000
from ..metrics.geometric import nearer_first
from ..suite.colors import ISCC_NBS_COLORS, format_color
from .model import Finding

__all__ = ["WRONG_COLOR_DE", "GRADIENT_MIN_LEVELS", "VIGNETTE_MIN_LEVELS", "NOISE_MIN_STD",
           "OBJECT_DEVIATION", "OBJECT_MIN_SHARE", "SPLIT_MIN_SHARE", "FIT_GRID",
           "nearest_name", "delta_e", "color_change", "block_findings", "split_finding",
           "swap_finding", "GRAY_WEIGHTS"]

#: CIEDE2000 from which a block's colour counts as changed: an exact answer
#: gives 0 and a one-level rounding of one channel about 0.3; the colour
#: metric's own limit (lab_00 0.03) is 3.
WRONG_COLOR_DE = 1.0
#: Gray levels a linear trend must change across a block to be a gradient
#: (an exact answer: 0; the metric limit sd 0.025 allows ~11 levels).
GRADIENT_MIN_LEVELS = 3.0
#: Gray levels between the centre and the corners that make a vignette.
VIGNETTE_MIN_LEVELS = 3.0
#: Standard deviation (gray levels) of what the smooth fit leaves that is
#: noise or texture; the integer rounding of a smooth gradient leaves ~0.3.
NOISE_MIN_STD = 1.5
#: Largest channel deviation from the fit (levels) of an object pixel: far
#: above noise and rounding, below any visible mark.
OBJECT_DEVIATION = 40.0
#: Share of a block that object pixels must cover (0.05%: 131 px of 512x512).
OBJECT_MIN_SHARE = 0.0005
#: Components smaller than this many pixels are noise, not objects.
OBJECT_MIN_PIXELS = 4
#: Departure of a split's position (share of the side) reported as wrong_split (1%).
SPLIT_MIN_SHARE = 0.01
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
    d = ciede2000(_iscc_lab(), _lab(rgb)[None, :])
    return ISCC_NBS_COLORS[int(np.argmin(d))].phrase


def _hex(rgb) -> str:
    return format_color(tuple(int(v) for v in np.clip(np.rint(rgb), 0, 255)), "hex")


def delta_e(found, requested) -> float:
    """CIEDE2000 between two colours (rounded to 8-bit codes first)."""
    return float(ciede2000(_lab(found)[None, :], _lab(requested)[None, :])[0])


def color_change(found, requested) -> dict:
    """The numbers of a colour change: hex and names, CIEDE2000, ``dL``, ``dC``, hue shift.

    ``dL`` and ``dC`` are CIE Lab lightness and chroma differences (found
    minus requested); ``hue_shift_deg`` the signed hue-angle difference in
    degrees (None when either colour is nearly gray, chroma < 5); ``levels``
    the mean RGB channel difference.
    """
    lab_f, lab_r = _lab(found), _lab(requested)
    de = float(ciede2000(lab_f[None, :], lab_r[None, :])[0])
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


def _objects(dev_max: np.ndarray):
    """Object pixels (0/255) and their connected components' stats."""
    mask = (dev_max > OBJECT_DEVIATION).astype(np.uint8)
    if not mask.any():
        return mask, np.zeros((0, 5), np.int32)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    keep = np.flatnonzero(stats[1:, cv2.CC_STAT_AREA] >= OBJECT_MIN_PIXELS) + 1
    if keep.size < n - 1:
        mask = np.isin(labels, keep).astype(np.uint8)
    return mask, stats[keep]


def block_findings(block: np.ndarray, color, *, where: str, origin=(0, 0),
                   explained=None) -> tuple:
    """Findings of one block against its expected colour.

    Parameters
    ----------
    block : ndarray
        The answer's pixels of the block, ``(h, w, 3)`` uint8.
    color : (r, g, b)
        The expected colour; a callable ``color(found) -> (r, g, b)`` gives
        it from the found colour instead (a colour range: the nearest
        in-range colour).
    where : str
        The block's name in the texts (``"image"``, ``"left half"``).
    origin : (x, y)
        The block's top-left corner in the image (bounding boxes are in
        image pixels).
    explained : ndarray of bool, optional
        Pixels another finding already explains; left out here.

    Returns
    -------
    tuple
        ``(findings, energies)``: the findings with their squared-error
        energy as ``weight`` (not yet shares), and the block's total energy.
    """
    hh, ww = block.shape[:2]
    ordinary = np.ones((hh, ww), bool) if explained is None else ~explained
    if not callable(color) and explained is None:
        want = np.asarray(color, np.uint8)
        if cv2.countNonZero(cv2.inRange(np.ascontiguousarray(block), want, want)) == hh * ww:
            return [], 0.0  # the exact block: nothing to find, no error
    f = block.astype(np.float32)
    sub = f[::4, ::4][ordinary[::4, ::4]] if ordinary[::4, ::4].any() else f.reshape(-1, 3)
    median = np.median(sub, axis=0)
    target = np.asarray(color(median) if callable(color) else color, np.float32)
    err = f - target
    # pass 1: object candidates far from the median; pass 2: far from the smooth fit
    rough = np.abs(f - median).max(axis=2) > OBJECT_DEVIATION
    step_y, step_x = max(1, hh // FIT_GRID), max(1, ww // FIT_GRID)
    ys, xs = np.mgrid[0:hh:step_y, 0:ww:step_x]
    use = (ordinary & ~rough)[::step_y, ::step_x]
    if use.sum() < 8:
        use = np.ones_like(use)
    u, v, q = _design(hh, ww, ys[use], xs[use])
    design = np.stack([np.ones_like(u), u, v, q], axis=1)
    coef, *_ = np.linalg.lstsq(design, err[::step_y, ::step_x][use].astype(np.float64), rcond=None)
    coef = coef.astype(np.float32)
    # the fit is separable: a + b_v v + k v^2 (rows) plus b_u u + k (u^2 - 1/6) (columns)
    uu = ((np.arange(ww, dtype=np.float32) + 0.5) / ww - 0.5)[:, None]
    vv = ((np.arange(hh, dtype=np.float32) + 0.5) / hh - 0.5)[:, None]
    lin_rows, lin_cols = vv * coef[2], uu * coef[1]
    rad_rows, rad_cols = vv * vv * coef[3], (uu * uu - np.float32(1 / 6)) * coef[3]
    resid = err - (coef[0] + lin_rows + rad_rows)[:, None, :] - (lin_cols + rad_cols)[None, :, :]
    obj_mask, stats = _objects(np.abs(resid).max(axis=2))
    obj = obj_mask.astype(bool) & ordinary
    inl = ordinary & ~obj
    n_in = max(int(inl.sum()), 1)
    # energies of the smooth terms over the whole block (their share of the ordinary pixels)
    frac = n_in / float(hh * ww)
    lin_energy = frac * (ww * float(np.sum(lin_rows ** 2)) + hh * float(np.sum(lin_cols ** 2)))
    radial = (rad_rows[:, None, :] + rad_cols[None, :, :])
    rad_energy = frac * float(np.sum(radial ** 2))
    findings = []
    # uniform colour change
    found = target + coef[0]
    if delta_e(found, target) >= WRONG_COLOR_DE:
        numbers = color_change(found, target)
        findings.append(Finding(
            "wrong_color",
            f"{where}: {numbers['found']} ({numbers['found_name']}) instead of "
            f"{numbers['requested']} ({numbers['requested_name']}), CIEDE2000 "
            f"{numbers['ciede2000']:.1f}, {_direction_words(numbers)}",
            {**numbers, "where": where}, float(np.sum(coef[0] ** 2)) * n_in))
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
    # vignette: centre vs corners (r^2 from 0 to 1/2)
    corner = float(GRAY_WEIGHTS @ coef[3]) * 0.5
    if abs(corner) >= VIGNETTE_MIN_LEVELS:
        findings.append(Finding(
            "vignette",
            f"{where}: vignette, corners {abs(corner):.1f} gray levels "
            f"{'lighter' if corner > 0 else 'darker'} than the centre",
            {"where": where, "corner_levels": corner}, rad_energy))
    # noise / texture: what the smooth fit leaves on ordinary pixels
    g_res = resid @ GRAY_WEIGHTS.astype(np.float32)
    amp = float(np.std(g_res[inl])) if inl.any() else 0.0
    if amp >= NOISE_MIN_STD:
        blurred = cv2.blur(g_res, (5, 5))
        correlated = float(np.std(blurred[inl])) / amp
        kind = "texture" if correlated >= 0.5 else "noise"
        findings.append(Finding(
            kind, f"{where}: {kind}, amplitude {amp:.1f} gray levels (std)",
            {"where": where, "amplitude": amp, "correlation": correlated},
            float(np.sum((resid ** 2)[inl]))))
    # objects
    share = float(obj.sum()) / (hh * ww)
    if share >= OBJECT_MIN_SHARE:
        ys_o, xs_o = np.nonzero(obj)
        x0, y0 = int(xs_o.min()) + origin[0], int(ys_o.min()) + origin[1]
        bbox = [x0, y0, int(xs_o.max() - xs_o.min() + 1), int(ys_o.max() - ys_o.min() + 1)]
        findings.append(Finding(
            "objects",
            f"{where}: {len(stats)} object region(s) covering {100 * share:.2f}% of it, "
            f"bounding box x={bbox[0]}, y={bbox[1]}, {bbox[2]}x{bbox[3]} px",
            {"where": where, "share": share, "regions": int(len(stats)), "bbox": bbox},
            float(np.sum((err ** 2)[obj]))))
    total = float(np.sum((err ** 2)[ordinary]))
    return findings, total


def swap_finding(medians, colors, names) -> tuple:
    """``(finding or None, permutation)``: whether the blocks hold the requested
    colours in another order (a permutation fits with < half the identity's error)."""
    m = np.asarray(medians, float)
    c = np.asarray(colors, float)
    n = len(c)
    cost = lambda perm: float(sum(np.sum((m[i] - c[p]) ** 2) for i, p in enumerate(perm)))
    ident = tuple(range(n))
    best = min(itertools.permutations(range(n)), key=cost)
    base = cost(ident)
    if best == ident or base <= 0 or cost(best) >= 0.5 * base \
            or all(np.array_equal(c[i], c[p]) for i, p in enumerate(best)):
        return None, ident
    moved = [f"{names[i]} has the colour of the {names[p]}" for i, p in enumerate(best) if i != p]
    return Finding("swapped_blocks", "swapped blocks: " + "; ".join(moved),
                   {"permutation": list(best), "blocks": list(names)},
                   base - cost(best)), best


def split_finding(image, colors, orientation: str, split: int):
    """``(finding or None, misplaced)``: the border between two colours found vs requested.

    ``misplaced`` (bool array) marks the pixels of the other colour's side
    when the split is wrong, so block findings leave them out.
    """
    h, w = image.shape[:2]
    first = nearer_first(image, colors[0], colors[1])
    cols, rows = first.mean(axis=0), first.mean(axis=1)
    found_orient = "vertical" if np.var(cols) >= np.var(rows) else "horizontal"
    side = w if found_orient == "vertical" else h
    profile = cols if found_orient == "vertical" else rows
    pos = float(profile.sum())  # first colour assumed on the left / top
    side_req = w if orientation == "vertical" else h
    expected = np.zeros((h, w), bool)
    if orientation == "vertical":
        expected[:, :split] = True
    else:
        expected[:split, :] = True
    misplaced = first != expected
    off = abs(pos / side - split / side_req)
    if found_orient == orientation and (off < SPLIT_MIN_SHARE or abs(pos - split) < 2):
        return None, None
    diff = np.sum((np.asarray(colors[0], float) - np.asarray(colors[1], float)) ** 2)
    numbers = {"orientation": found_orient, "requested_orientation": orientation,
               "position_pct": 100.0 * pos / side, "requested_pct": 100.0 * split / side_req,
               "position_px": pos, "requested_px": int(split)}
    text = (f"split {found_orient} at {numbers['position_pct']:.1f}% instead of "
            f"{orientation} at {numbers['requested_pct']:.1f}%")
    return Finding("wrong_split", text, numbers, float(misplaced.sum()) * diff), misplaced


_BLOCK_NAMES = {"single": ("image",), "vertical": ("left half", "right half"),
                "horizontal": ("top half", "bottom half"),
                "quad": ("top-left quadrant", "top-right quadrant", "bottom-left quadrant",
                         "bottom-right quadrant")}


def _shares(findings, total: float) -> list:
    total = max(total, 1e-9)
    return [Finding(f.kind, f.text, f.numbers, min(float(f.weight) / total, 1.0)) for f in findings]


def diagnose_regions(image, boxes, colors, names, *, split=None, swap=False, target=None) -> list:
    """Findings of an image made of rectangular single-colour regions.

    Parameters
    ----------
    image : ndarray
        The answer, RGB uint8, of the sample's size.
    boxes : sequence of (x0, y0, w, h)
        The regions.
    colors : sequence of (r, g, b)
        The expected colour of each region.
    names : sequence of str
        The regions' names in the texts.
    split : (orientation, position), optional
        For two regions split at ``position`` px: check ``wrong_split``.
    swap : bool
        Check ``swapped_blocks`` first.
    target : callable, optional
        ``target(found) -> colour`` replaces the expected colour (ranges).
    """
    findings, total = [], 0.0
    colors = [tuple(int(v) for v in c) for c in colors]
    misplaced = None
    if swap and len(boxes) > 1:
        medians = [np.median(image[y:y + h:4, x:x + w:4].reshape(-1, 3), axis=0)
                   for x, y, w, h in boxes]
        found, perm = swap_finding(medians, colors, names)
        if found is not None:
            findings.append(found)
            total += found.weight
            colors = [colors[p] for p in perm]
            split = None
    if split is not None and len(boxes) == 2 and colors[0] != colors[1]:
        found, misplaced = split_finding(image, colors, split[0], int(split[1]))
        if found is not None:
            findings.append(found)
            total += found.weight
    for (x, y, w, h), color, name in zip(boxes, colors, names):
        explained = None if misplaced is None else misplaced[y:y + h, x:x + w]
        more, energy = block_findings(image[y:y + h, x:x + w], target or color, where=name,
                                      origin=(x, y), explained=explained)
        findings.extend(more)
        total += energy
    return _shares(findings, total)


def diagnose_color(sample, image, expected) -> list:
    """Findings of a colour-task answer (blocks in a layout, or a colour range)."""
    from ..suite.geometry import block_boxes

    h, w = image.shape[:2]
    spec = sample.spec
    if spec.get("kind") == "fuzzy":
        lo = np.minimum(np.asarray(spec["low"]), np.asarray(spec["high"]))
        hi = np.maximum(np.asarray(spec["low"]), np.asarray(spec["high"]))
        return diagnose_regions(image, [(0, 0, w, h)], [expected[0, 0]], ["image"],
                                target=lambda found: np.clip(np.rint(found), lo, hi))
    layout = sample.layout or spec.get("layout") or "single"
    if layout not in _BLOCK_NAMES:
        layout = "single"
    boxes = block_boxes(layout, w, h)
    colors = [expected[y, x] for x, y, _, _ in boxes]
    split = None
    if layout == "vertical":
        split = ("vertical", w // 2)
    elif layout == "horizontal":
        split = ("horizontal", h // 2)
    return diagnose_regions(image, boxes, colors, _BLOCK_NAMES[layout], split=split,
                            swap=len(boxes) > 1)


def diagnose_ratio(sample, image, expected) -> list:
    """Findings of an area-ratio answer: the split, then each region's colour."""
    h, w = image.shape[:2]
    spec = sample.spec
    orientation, split = spec["orientation"], int(spec["split"])
    colors = [tuple(spec["colors"][0]), tuple(spec["colors"][1])]
    if orientation == "vertical":
        boxes, names = [(0, 0, split, h), (split, 0, w - split, h)], ["left part", "right part"]
    else:
        boxes, names = [(0, 0, w, split), (0, split, w, h - split)], ["top part", "bottom part"]
    boxes = [b for b in boxes if b[2] > 0 and b[3] > 0]
    if len(boxes) < 2:
        return diagnose_regions(image, boxes, colors[:1], names[:1])
    return diagnose_regions(image, boxes, colors, names, split=(orientation, split))
