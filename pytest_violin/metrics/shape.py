"""Shape obedience metrics: ``iou, dist, size, shape, purity`` (paper Eq. 10-14)."""

from __future__ import annotations

import cv2
import numpy as np

from ._common import (Metrics, centroid, centroid_distance, check_profile, clip01, gray, largest_filled,
                      mean_channel_std, prepare_pair, region_iou_distance)

__all__ = ["SHAPE_METRICS", "shape_metrics", "SHAPE_THRESHOLD", "PURITY_NORM"]

#: Metric names of the shape task, in display order.
SHAPE_METRICS = ("iou", "dist", "size", "shape", "purity")
#: A pixel belongs to the shape when its OpenCV gray level is above this.
SHAPE_THRESHOLD = 127
#: Normalizer of the in-shape colour standard deviation.
PURITY_NORM = 128.0


def _binarize(rgb: np.ndarray) -> np.ndarray:
    _, out = cv2.threshold(gray(rgb), SHAPE_THRESHOLD, 255, cv2.THRESH_BINARY)
    return out


def _hu_distance(gen: np.ndarray, gt: np.ndarray, profile: str) -> float:
    """``cv2.matchShapes`` I1 between two 0/255 regions.

    ``violin`` passes the 0/255 images (moments weighted by intensity 255); ``strict`` passes 0/1 images, i.e.
    binary moments.
    """
    if profile == "strict":
        gen = (gen > 0).astype(np.uint8)
        gt = (gt > 0).astype(np.uint8)
    return cv2.matchShapes(gen, gt, cv2.CONTOURS_MATCH_I1, 0.0)


def shape_metrics(image, expected, *, profile: str = "violin") -> Metrics:
    """Score a shape answer (a white shape on black) against its expected image.

    Parameters
    ----------
    image, expected : image-like
        The generated image and the ground truth.
    profile : {"violin", "strict"}
        ``violin`` reproduces the reference numbers: the generated region is the largest external contour of
        ``gray > 127``, filled, and Hu moments are intensity-weighted (0/255 images). ``strict`` uses the
        thresholded region as it is (stray blobs and holes count) and binary Hu moments.

    Returns
    -------
    Metrics
        ``iou, dist, size, shape, purity`` in ``[0, 1]``, task ``"shape"``.

    Notes
    -----
    * ``iou``: ``1 - |G & T| / |G | T|`` (0 when both are empty).
    * ``dist`` (Eq. 11): centroid distance / image diagonal, clipped; 1.0 if exactly one region is empty; both
      empty: 1.0 (violin), 0.0 (strict).
    * ``size`` (Eq. 12): ``|area_G / area_T - 1|`` clipped, areas in pixels; with an empty target, 1.0 if
      anything was generated else 0.0.
    * ``shape`` (Eq. 13): ``cv2.matchShapes(G, T, CONTOURS_MATCH_I1)`` clipped; 1.0 if exactly one region is
      empty, 0.0 if both are.
    * ``purity`` (Eq. 14): mean over R, G, B of the standard deviation of the generated pixels inside ``G``, /
      128, clipped; 0.0 if ``G`` is empty.
    """
    check_profile(profile)
    gen, exp = prepare_pair(image, expected)
    h, w = gen.shape[:2]
    g_bin = _binarize(gen)
    g_reg = largest_filled(g_bin) if profile == "violin" else g_bin
    t_reg = _binarize(exp)

    a_gen, c_gen = centroid(g_reg)
    a_gt, c_gt = centroid(t_reg)
    iou = region_iou_distance(g_reg, t_reg)
    dist = centroid_distance(c_gen, c_gt, h, w, both_empty=1.0 if profile == "violin" else 0.0)
    if a_gt == 0:
        size = 1.0 if a_gen > 0 else 0.0
    else:
        size = abs(a_gen / a_gt - 1.0)
    if a_gen == 0 or a_gt == 0:
        shape = 0.0 if a_gen == a_gt else 1.0
    else:
        shape = _hu_distance(g_reg, t_reg, profile)
    purity = mean_channel_std(gen, g_reg) / PURITY_NORM
    values = {"iou": iou, "dist": dist, "size": size, "shape": shape, "purity": purity}
    return Metrics({k: clip01(values[k]) for k in SHAPE_METRICS}, task="shape", profile=profile)
