"""Shape diagnoses: where, how big and what the answer drew instead of the requested shape.

The answer's foreground is the pixels nearer (RGB) to the requested shape colour than to the background
(:func:`pytest_violin.metrics.geometric.nearer_first`, as the extra tasks classify), split into 8-connected
components (``cv2.connectedComponentsWithStats``); the largest is the shape. Its class comes from its outer
contour (``cv2.approxPolyDP`` vertices, circularity ``4 pi A / P^2``, fill of ``cv2.minAreaRect``), its place
and size from its moments (or bounding box when it is another class than requested).

Weights decompose the shape's IoU loss ``1 - IoU``: the offset explains what moving the shape back by ``(-dx,
-dy)`` recovers, the scale what scaling it back recovers after that; a wrong class explains the whole loss.

The border and dot-counting tasks are diagnosed here too, from the metrics' own measurements
(:func:`~pytest_violin.metrics.geometric.border_metrics` reports the median run of border pixels per side,
:func:`~pytest_violin.metrics.geometric.count_metrics` the 8-connected components it counts), so a finding's
numbers are the numbers the metric was computed from.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from ..metrics._common import largest_filled, region_iou_distance
from ..metrics.geometric import border_metrics, count_metrics
from .color import color_change, delta_e
from .model import Finding

__all__ = ["OFFSET_MIN_PX", "SCALE_MIN", "ROTATION_MIN_DEG", "HOLE_MIN_SHARE",
           "EXTRA_MIN_SHARE", "WRONG_COLORS_DE", "THICKNESS_MIN_PX", "DOT_SIZE_MIN", "classify",
           "diagnose_shape", "diagnose_border", "diagnose_count"]

#: Centre offset (px, either axis) reported: an exact answer is off by 0 and the rounding of a box's place by
#: at most 0.5.
OFFSET_MIN_PX = 1.5
#: Departure of the linear size ratio from 1 reported (3%: one pixel of a 33 px shape).
SCALE_MIN = 0.03
#: Rotation (degrees) of a square or triangle reported; the digital contour of an upright shape fits within ~1
#: degree.
ROTATION_MIN_DEG = 3.0
#: Share of the filled outline that is background inside it (an outline only).
HOLE_MIN_SHARE = 0.05
#: Area of further components, as a share of the requested shape's, reported.
EXTRA_MIN_SHARE = 0.01
#: CIEDE2000 of the shape or background colour reported (the shape metrics binarize at gray 127, so small
#: colour changes do not fail them).
WRONG_COLORS_DE = 3.0
#: Components below this many pixels are specks, not shapes.
MIN_COMPONENT_PX = 4
#: Largest standard deviation (levels, any channel) of an answer that is one uniform colour, so no shape at
#: all: the smallest shape of the suites (10% of the side, 0.8% of the image) gives about 22, JPEG noise about
#: 1.
UNIFORM_MAX_STD = 2.0


def classify(region: np.ndarray) -> str:
    """``circle``, ``square``, ``triangle`` or ``other`` for a 0/255 region's outer contour."""
    contours, _ = cv2.findContours(region, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if not contours:
        return "other"
    cnt = max(contours, key=cv2.contourArea)
    area, perim = cv2.contourArea(cnt), cv2.arcLength(cnt, True)
    if area <= 0 or perim <= 0:
        return "other"
    approx = cv2.approxPolyDP(cnt, 0.04 * perim, True)
    (_, (rw, rh), _) = cv2.minAreaRect(cnt)
    fill = area / max(rw * rh, 1e-9)
    circularity = 4 * math.pi * area / perim ** 2
    if len(approx) == 3:
        return "triangle"
    if len(approx) == 4 and fill > 0.85 and 0.8 <= rw / max(rh, 1e-9) <= 1.25:
        return "square"
    if len(approx) > 4 and circularity > 0.8 and abs(fill - math.pi / 4) < 0.08:
        return "circle"
    return "other"


def _rotation(region: np.ndarray, cls: str):
    """Rotation in degrees of a square (mod 90) or triangle (mod 120), else None."""
    contours, _ = cv2.findContours(region, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    cnt = max(contours, key=cv2.contourArea)
    if cls == "square":
        angle = cv2.minAreaRect(cnt)[2]
        return (angle + 45.0) % 90.0 - 45.0
    if cls == "triangle":
        pts = cv2.approxPolyDP(cnt, 0.04 * cv2.arcLength(cnt, True), True).reshape(-1, 2)
        centre = pts.mean(axis=0)
        # the apex of an upright triangle points straight up (-90 deg in image coordinates)
        angles = [math.degrees(math.atan2(p[1] - centre[1], p[0] - centre[0])) + 90.0 for p in pts]
        return min(((a + 60.0) % 120.0 - 60.0 for a in angles), key=abs)
    return None


def nearer(image: np.ndarray, first, second) -> np.ndarray:
    """0/1 uint8 map of the pixels nearer (RGB) to ``first`` than to ``second``.

    The test of :func:`pytest_violin.metrics.geometric.nearer_first` (``2 x.(b - a) < |b|^2 -
    |a|^2``) as one ``cv2.transform``.
    """
    a = np.asarray(first, np.float64)
    b = np.asarray(second, np.float64)
    proj = cv2.transform(image.astype(np.float32), (b - a).reshape(1, 3))
    limit = float((b * b).sum() - (a * a).sum()) / 2.0
    return (proj < limit).view(np.uint8)


def _moments(region: np.ndarray):
    m = cv2.moments(region, binaryImage=True)
    if m["m00"] == 0:
        return 0.0, None
    return m["m00"], (m["m10"] / m["m00"], m["m01"] / m["m00"])


def _warp(region, matrix):
    h, w = region.shape
    return cv2.warpAffine(region, np.asarray(matrix, np.float64), (w, h), flags=cv2.INTER_NEAREST)


def _uniform_findings(spec, colour, bg, a_exp) -> list:
    """An answer of one colour: ``missing_shape`` (with that colour) and, where it is not
    the background's, ``wrong_colors`` of the background."""
    change = color_change(colour, bg)
    findings = [Finding("missing_shape", f"no shape: the whole image is one colour, {change['found']} "
                        f"({change['found_name']}) (requested a {spec.get('shape', 'shape')} of "
                        f"{int(a_exp)} px)", {"found": 0, "requested": 1, "uniform": change["found"],
                                               "uniform_name": change["found_name"]}, 1.0)]
    if change["ciede2000"] >= WRONG_COLORS_DE:
        findings.append(_wrong_colors("background", change))
    return findings


def _wrong_colors(part: str, change: dict) -> Finding:
    return Finding("wrong_colors", f"{part} colour {change['found']} ({change['found_name']}) instead "
                                   f"of {change['requested']}, CIEDE2000 {change['ciede2000']:.1f}",
                   {"part": part, **change}, change["ciede2000"] / 100.0)


def diagnose_shape(sample, image, expected) -> list:
    """Findings of a shape answer against its rendered ground truth."""
    spec = sample.spec
    h, w = image.shape[:2]
    fg = tuple(int(v) for v in spec.get("fg", (255, 255, 255)))
    bg = tuple(int(v) for v in spec.get("bg", (0, 0, 0)))
    target = nearer(expected, fg, bg) * 255
    fgmask = nearer(image, fg, bg)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(fgmask, connectivity=8)
    areas = stats[1:, cv2.CC_STAT_AREA]
    a_exp, c_exp = _moments(target)
    if a_exp == 0:
        return []
    mean, std = cv2.meanStdDev(image)
    if float(std.max()) <= UNIFORM_MAX_STD:  # one colour: no shape (not the whole frame as one)
        return _uniform_findings(spec, tuple(float(v) for v in mean.ravel()), bg, a_exp)
    big = [i + 1 for i in np.argsort(-areas) if areas[i] >= MIN_COMPONENT_PX]
    if not big:
        return [Finding("missing_shape", f"no shape found (requested a {spec.get('shape', 'shape')} "
                        f"of {int(a_exp)} px)", {"found": 0, "requested": 1}, 1.0)]
    findings = []
    main = (labels == big[0]).astype(np.uint8) * 255
    filled = largest_filled(main)
    requested = spec.get("shape") or classify(target)
    cls, cls_exp = classify(filled), classify(target)
    same = cls == cls_exp
    loss0 = region_iou_distance(filled, target)
    if same:
        a_gen, c_gen = _moments(filled)
        scale = math.sqrt(a_gen / a_exp)
    else:
        x, y, bw, bh = cv2.boundingRect(filled)
        tx, ty, tw, th = cv2.boundingRect(target)
        c_gen, c_exp = (x + bw / 2.0, y + bh / 2.0), (tx + tw / 2.0, ty + th / 2.0)
        scale = bw / tw
        findings.append(Finding(
            "wrong_shape", (f"a {cls}" if cls != "other" else "another shape") + f" instead of a {requested}",
            {"found": cls, "requested": requested}, loss0))
    dx, dy = c_gen[0] - c_exp[0], c_gen[1] - c_exp[1]
    back = _warp(filled, [[1, 0, -dx], [0, 1, -dy]])
    loss1 = region_iou_distance(back, target)
    if max(abs(dx), abs(dy)) >= OFFSET_MIN_PX:
        findings.append(Finding(
            "offset", f"shape off by dx={dx:+.0f} px ({100 * dx / w:+.1f}% of the width), "
                      f"dy={dy:+.0f} px ({100 * dy / h:+.1f}% of the height)",
            {"dx": dx, "dy": dy, "dx_pct": 100 * dx / w, "dy_pct": 100 * dy / h,
             "found_center": list(c_gen), "requested_center": list(c_exp)},
            max(loss0 - loss1, 0.0)))
    if abs(scale - 1.0) >= SCALE_MIN:
        s = 1.0 / scale
        cx, cy = c_exp
        loss2 = region_iou_distance(_warp(back, [[s, 0, cx * (1 - s)], [0, s, cy * (1 - s)]]), target)
        findings.append(Finding(
            "scale", f"shape {scale:.2f}x the requested size",
            {"scale": scale}, max(loss1 - loss2, 0.0)))
    else:
        loss2 = loss1
    if same and cls in ("square", "triangle"):
        rot = _rotation(filled, cls)
        if rot is not None and abs(rot) >= ROTATION_MIN_DEG:
            findings.append(Finding("rotated", f"{cls} rotated by {rot:+.0f} deg",
                                    {"degrees": rot}, loss2))
    holes = cv2.countNonZero(cv2.subtract(filled, main)) / max(cv2.countNonZero(filled), 1)
    if holes >= HOLE_MIN_SHARE:
        findings.append(Finding("not_filled", f"shape not filled: {100 * holes:.0f}% of it "
                                "is background (an outline)", {"hole_share": holes}, holes))
    extra = [i for i in big[1:] if areas[i - 1] >= EXTRA_MIN_SHARE * a_exp]
    if extra:
        area = float(sum(areas[i - 1] for i in extra))
        findings.append(Finding(
            "extra_shapes", f"{len(extra)} extra shape(s) besides the main one, "
                            f"{100 * area / a_exp:.1f}% of the requested area",
            {"count": len(extra), "area_share": area / a_exp},
            area / (a_exp + area)))
    outside = cv2.compare(fgmask, 0, cv2.CMP_EQ)
    for part, mask, want in (("shape", main, fg), ("background", outside, bg)):
        if cv2.countNonZero(mask) < MIN_COMPONENT_PX:
            continue
        found = cv2.mean(image, mask=mask)[:3]
        de = delta_e(found, want)
        if de >= WRONG_COLORS_DE:
            findings.append(_wrong_colors(part, color_change(found, want, de)))
    return findings


#: Departure (px) of a side's median border run reported; an exact answer's is 0.
THICKNESS_MIN_PX = 1.0
#: Departure of the mean dot side from the requested one reported (as a share, 10%).
DOT_SIZE_MIN = 0.10


def diagnose_border(sample, image, expected) -> list:
    """``wrong_thickness``: the border's median thickness on each side vs the requested one."""
    spec = sample.spec
    t = int(spec["thickness"])
    m = border_metrics(image, expected, thickness=t, fg=spec["fg"], bg=spec["bg"])
    sides = {k: float(v) for k, v in m.info["measured"].items()}
    off = {k: v - t for k, v in sides.items()}
    if max(abs(v) for v in off.values()) < THICKNESS_MIN_PX:
        return []
    words = ", ".join(f"{k} {v:.0f}" for k, v in sides.items())
    return [Finding("wrong_thickness", f"border {words} px instead of {t} px",
                    {"requested": t, **sides},
                    min(float(np.mean([abs(v) for v in off.values()])) / t, 1.0))]


def diagnose_count(sample, image, expected) -> list:
    """``wrong_count`` (dots found vs requested) and ``dot_size`` (their mean side)."""
    spec = sample.spec
    count, dot = int(spec["count"]), int(spec["dot"])
    m = count_metrics(image, count=count, dot=dot, fg=spec["fg"], bg=spec["bg"])
    found = int(m.info["found"])
    findings = []
    if found != count:
        findings.append(Finding("wrong_count", f"{found} dots found instead of {count}",
                                {"found": found, "requested": count},
                                min(abs(found - count) / count, 1.0)))
    if found:
        fgmask = nearer(image, spec["fg"], spec["bg"])
        _, _, stats, _ = cv2.connectedComponentsWithStats(fgmask, connectivity=8)
        side = float(np.sqrt(np.median(stats[1:, cv2.CC_STAT_AREA])))
        if abs(side / dot - 1.0) >= DOT_SIZE_MIN:
            findings.append(Finding("dot_size", f"dots {side:.1f} px wide instead of {dot} px",
                                    {"side_px": side, "requested_px": dot},
                                    min(abs(side / dot - 1.0), 1.0) / 2))
    return findings
