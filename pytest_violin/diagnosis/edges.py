"""Blurred block boundaries: the transition between two adjacent blocks wider than a pixel.

For every pair of blocks of a layout that share an edge (the two halves, the four quadrants, the two parts of
an area ratio), the answer's pixels across the edge are projected on the line between the two expected colours
(0 = the first block's colour, 1 = the second's); the median over the edge's length gives a profile, and its
10% to 90% rise over ``0.8 * width`` pixels is the width (a linear ramp's 10-90% rise is 0.8 of its width; an
exact step measures 1 px, a Gaussian blur of sigma s about 3.2 s). A boundary wider than :data:`BLUR_MIN_PX`
is a ``blurred_edge`` finding, and its band is handed to the block findings as explained: without it, a
blurred boundary's pixels, far from each block's colour, read as ``objects``.
"""

from __future__ import annotations

import numpy as np

from .model import Finding

__all__ = ["BLUR_MIN_PX", "EDGE_BAND_PX", "MIN_CONTRAST", "shared_edges", "edge_profile_width",
           "blurred_edges"]

#: Transition width (px) reported as blurred; an exact step measures 1 px (the mask's feathered-edge
#: threshold, measured the same way).
BLUR_MIN_PX = 2.5
#: Pixels read on each side of an edge.
EDGE_BAND_PX = 16
#: Smallest RGB distance between the two colours whose edge is measured: below it one level of noise moves the
#: profile by more than 2%.
MIN_CONTRAST = 48.0
#: The profile's ends must lie within this of 0 and 1 (a transition between these two colours, not something
#: else across the edge).
END_TOLERANCE = 0.25


def shared_edges(boxes) -> list:
    """``(i, j, axis, position, start, stop)`` of each pair of boxes sharing an edge.

    ``axis`` 1: a vertical edge at column ``position`` (``i`` left of ``j``), rows ``start:stop``; ``axis`` 0:
    a horizontal edge at row ``position`` (``i`` above ``j``), columns ``start:stop``.
    """
    out = []
    for i, (xi, yi, wi, hi) in enumerate(boxes):
        for j, (xj, yj, wj, hj) in enumerate(boxes):
            if xi + wi == xj and max(yi, yj) < min(yi + hi, yj + hj):
                out.append((i, j, 1, xj, max(yi, yj), min(yi + hi, yj + hj)))
            if yi + hi == yj and max(xi, xj) < min(xi + wi, xj + wj):
                out.append((i, j, 0, yj, max(xi, xj), min(xi + wi, xj + wj)))
    return out


def edge_profile_width(profile: np.ndarray, positions: np.ndarray) -> float:
    """Width (px) of the 0 -> 1 rise of ``profile`` at pixel-centre ``positions``: 10-90% over 0.8."""
    rising = np.maximum.accumulate(profile)  # monotone, so each level is crossed once
    lo, hi = np.interp([0.1, 0.9], rising + np.arange(rising.size) * 1e-9, positions)
    return float(hi - lo) / 0.8


def blurred_edges(image, boxes, colors, names) -> tuple:
    """``(findings, explained)`` for the shared edges of ``boxes`` (of ``colors``, named ``names``).

    ``findings`` carry their squared RGB error (the band's, against the expected colours) as weight;
    ``explained`` (bool, image-sized, or None) marks the bands of the blurred edges.
    """
    h, w = image.shape[:2]
    findings, explained = [], None
    for i, j, axis, pos, start, stop in shared_edges(boxes):
        c0, c1 = np.asarray(colors[i], np.float32), np.asarray(colors[j], np.float32)
        d = c1 - c0
        if float(np.linalg.norm(d)) < MIN_CONTRAST:
            continue
        extent = w if axis == 1 else h
        lo, hi = max(pos - EDGE_BAND_PX, 0), min(pos + EDGE_BAND_PX, extent)
        # the edge's length, less a band at each end (another edge may cross there)
        s0, s1 = start + EDGE_BAND_PX, stop - EDGE_BAND_PX
        if s1 - s0 < 8 or hi - lo < 6:
            continue
        strip = image[s0:s1, lo:hi] if axis == 1 else image[lo:hi, s0:s1].transpose(1, 0, 2)
        t = (strip.astype(np.float32) - c0) @ d / float(d @ d)
        profile = np.median(t, axis=0)
        if profile[:3].mean() > END_TOLERANCE or profile[-3:].mean() < 1.0 - END_TOLERANCE:
            continue
        positions = np.arange(lo, hi) + 0.5 - pos
        width = edge_profile_width(profile, positions)
        if width < BLUR_MIN_PX:
            continue
        band = np.zeros((h, w), bool)
        half = int(np.ceil(width))
        if axis == 1:
            band[start:stop, max(pos - half, 0):min(pos + half, w)] = True
        else:
            band[max(pos - half, 0):min(pos + half, h), start:stop] = True
        want = np.empty((h, w, 3), np.float32)
        if axis == 1:
            want[:, :pos], want[:, pos:] = c0, c1
        else:
            want[:pos], want[pos:] = c0, c1
        energy = float(np.sum((image[band].astype(np.float32) - want[band]) ** 2))
        where = f"{names[i]} / {names[j]}"
        findings.append(Finding(
            "blurred_edge", f"{where}: edge blurred over {width:.1f} px",
            {"where": where, "width_px": width, "orientation": "vertical" if axis == 1 else "horizontal",
             "position_px": int(pos)}, energy))
        explained = band if explained is None else explained | band
    return findings, explained
