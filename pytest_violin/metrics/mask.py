"""Mask obedience metrics: ``iou, dist, biou, leak, edge`` (paper Eq. 7-9, 15)."""

from __future__ import annotations

import cv2
import numpy as np

from ._common import (KERNEL3, Metrics, centroid, centroid_distance, check_profile, clip01, gray,
                      largest_filled, prepare_pair, region_iou_distance)

__all__ = ["MASK_METRICS", "mask_metrics", "BLACK_THRESHOLD", "BAND_ITERATIONS",
           "CORE_ITERATIONS", "ZONE_ITERATIONS"]

#: Metric names of the mask task, in display order.
MASK_METRICS = ("iou", "dist", "biou", "leak", "edge")
#: A pixel is blacked out when its OpenCV gray level is at most this (the reference's ``cv2.threshold(gray,
#: 30, 255, THRESH_BINARY_INV)``).
BLACK_THRESHOLD = 30
#: 3x3 erosions that leave the inner part of a region (band = region - that).
BAND_ITERATIONS = 5
#: 3x3 erosions of the expected region that give the leak core.
CORE_ITERATIONS = 3
#: 3x3 dilations of the expected region's Canny edges that give the edge zone.
ZONE_ITERATIONS = 2


def black_region(gray_image: np.ndarray) -> np.ndarray:
    """0/255 region of pixels with gray level ``<=`` :data:`BLACK_THRESHOLD`.

    ``THRESH_BINARY_INV`` keeps the pixels *not above* the threshold, so a pixel of gray exactly 30 is black,
    as in the reference (``mask_metric.py``, ``Mask_metrics_from_img_bgr``).
    """
    _, out = cv2.threshold(gray_image, BLACK_THRESHOLD, 255, cv2.THRESH_BINARY_INV)
    return out


def boundary_band(region: np.ndarray) -> np.ndarray:
    """The region minus its erosion by a 3x3 kernel applied 5 times."""
    return cv2.subtract(region, cv2.erode(region, KERNEL3, iterations=BAND_ITERATIONS))


def mean_gradient(gray_image: np.ndarray, zone: np.ndarray, *, crop: bool = True) -> float:
    """Mean 3x3 Sobel gradient magnitude of ``gray_image`` inside ``zone``.

    With ``crop`` the Sobel filters run only on the zone's bounding box grown by one pixel, which gives the
    same values as filtering the whole image (every zone pixel keeps its real neighbours; at the image border
    the reflection is the same).
    """
    if crop:
        x, y, w, h = cv2.boundingRect(zone)
        H, W = zone.shape
        y0, y1 = max(y - 1, 0), min(y + h + 1, H)
        x0, x1 = max(x - 1, 0), min(x + w + 1, W)
        gray_image = gray_image[y0:y1, x0:x1]
        zone = zone[y0:y1, x0:x1]
    gx = cv2.Sobel(gray_image, cv2.CV_64F, 1, 0, ksize=3)
    gy = cv2.Sobel(gray_image, cv2.CV_64F, 0, 1, ksize=3)
    return cv2.mean(cv2.magnitude(gx, gy), mask=zone)[0]


def mask_metrics(image, expected, *, profile: str = "violin") -> Metrics:
    """Score a masking answer (an image with a blacked-out region).

    Parameters
    ----------
    image, expected : image-like
        The generated image and the ground truth (the source image with the masked region pure black).
    profile : {"violin", "strict"}
        ``violin`` reproduces the reference numbers: each image's black region (gray <= 30) is reduced to its
        largest external contour, filled. ``strict`` uses the thresholded regions as they are, so a
        frame-shaped region stays a frame and stray dark pixels count.

    Returns
    -------
    Metrics
        ``iou, dist, biou, leak, edge`` in ``[0, 1]``, task ``"mask"``.

    Notes
    -----
    * ``iou``, ``dist``: as for shapes, on the black regions.
    * ``biou`` (Eq. 7): ``1 - IoU`` of the boundary bands (region minus its 5-times 3x3 erosion); 0.0 when
      both bands are empty.
    * ``leak`` (Eq. 8): mean gray / 255 of the generated image inside the expected region eroded 3 times by
      3x3 (the whole region if that is empty); 0.0 when the expected region is empty.
    * ``edge`` (Eq. 9): ``max(0, 1 - g_gen / g_gt)`` clipped, with ``g`` the mean 3x3 Sobel magnitude inside
      the zone ``dilate(Canny(expected region, 100, 200), 3x3, 2 times)``; 0.0 when the zone is empty or
      ``g_gt < 1``.

    A masked *photo* can miss 0.0 against itself under ``violin``: natural pixels of gray 30 or darker join
    the black region, and a filled contour that encloses kept pixels makes ``leak`` positive. See
    docs/metrics.md.
    """
    check_profile(profile)
    gen, exp = prepare_pair(image, expected)
    h, w = gen.shape[:2]
    g_gray, e_gray = gray(gen), gray(exp)
    g_reg, t_reg = black_region(g_gray), black_region(e_gray)
    if profile == "violin":
        g_reg, t_reg = largest_filled(g_reg), largest_filled(t_reg)

    _, c_gen = centroid(g_reg)
    a_gt, c_gt = centroid(t_reg)
    iou = region_iou_distance(g_reg, t_reg)
    dist = centroid_distance(c_gen, c_gt, h, w, both_empty=1.0 if profile == "violin" else 0.0)
    biou = region_iou_distance(boundary_band(g_reg), boundary_band(t_reg))

    if a_gt == 0:
        leak = 0.0
    else:
        core = cv2.erode(t_reg, KERNEL3, iterations=CORE_ITERATIONS)
        if cv2.countNonZero(core) == 0:
            core = t_reg
        leak = cv2.mean(g_gray, mask=core)[0] / 255.0

    zone = cv2.dilate(cv2.Canny(t_reg, 100, 200), KERNEL3, iterations=ZONE_ITERATIONS)
    edge = 0.0
    if cv2.countNonZero(zone):
        g_gt = mean_gradient(e_gray, zone)
        if g_gt >= 1.0:
            edge = max(0.0, 1.0 - mean_gradient(g_gray, zone) / g_gt)
    values = {"iou": iou, "dist": dist, "biou": biou, "leak": leak, "edge": edge}
    return Metrics({k: clip01(values[k]) for k in MASK_METRICS}, task="mask", profile=profile)
