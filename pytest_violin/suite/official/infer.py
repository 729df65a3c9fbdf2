"""What the official data does not state in a column, read from the ground truth.

* the var-2 split: exactly the reference's rule (``color_metric.py``, ``auto_infer_split``: the largest colour
  step along the middle row against the middle column; left|right when the row's is larger, else top/bottom),
  so scores equal the reference case for case; a ground truth with no step or with steps both ways is *noted*
  (it is ambiguous: the reference's rule still decides), and so is a prompt that names the other split;
* the shape class: from the prompt when it names exactly one of circle, square, triangle, else from the ground
  truth's filled fraction of its bounding box (square ~1, circle ~pi/4, triangle ~1/2);
* the stored mask's polarity: where the photo is not dark, the ground truth is black where the mask is black
  (white = keep, the prompts' "1 = keep") or where it is white (inverted); anything else contradicts the
  ground truth.
"""

from __future__ import annotations

import re

import cv2
import numpy as np

__all__ = ["split_of", "prompt_split", "shape_class", "prompt_shape", "mask_polarity",
           "SHAPES"]

SHAPES = ("circle", "square", "triangle")


def split_of(gt_rgb: np.ndarray) -> tuple[str, str | None]:
    """``("vertical" | "horizontal", note)`` by the reference's rule; note None when clear."""
    h, w = gt_rgb.shape[:2]
    row = gt_rgb[h // 2, :, :].astype(np.float32)
    col = gt_rgb[:, w // 2, :].astype(np.float32)
    dx = float(np.max(np.linalg.norm(np.diff(row, axis=0), axis=1))) if w > 1 else 0.0
    dy = float(np.max(np.linalg.norm(np.diff(col, axis=0), axis=1))) if h > 1 else 0.0
    layout = "vertical" if dx > dy else "horizontal"
    if dx == 0.0 and dy == 0.0:
        return layout, "var-2 ground truth has no colour step (ambiguous split)"
    if dx > 0.0 and dy > 0.0:
        return layout, "var-2 ground truth has colour steps both ways (ambiguous split)"
    return layout, None


def prompt_split(prompt: str) -> str | None:
    """The split a prompt names (left/right -> vertical, top/bottom -> horizontal), or None."""
    low = prompt.lower()
    lr = bool(re.search(r"\b(left|right)\b", low))
    tb = bool(re.search(r"\b(top|bottom|upper|lower)\b", low))
    if lr == tb:
        return None
    return "vertical" if lr else "horizontal"


def prompt_shape(prompt: str) -> str | None:
    """The one shape class a prompt names, or None (none or several)."""
    found = {s for s in SHAPES if re.search(rf"\b{s}s?\b", prompt.lower())}
    return found.pop() if len(found) == 1 else None


def shape_class(gt_rgb: np.ndarray) -> str | None:
    """circle / square / triangle from the ground truth (white shape on black), or None."""
    gray = cv2.cvtColor(gt_rgb, cv2.COLOR_RGB2GRAY)
    _, binary = cv2.threshold(gray, 127, 255, cv2.THRESH_BINARY)
    contours, _ = cv2.findContours(binary, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        return None
    biggest = max(contours, key=cv2.contourArea)
    x, y, bw, bh = cv2.boundingRect(biggest)
    if bw < 4 or bh < 4:
        return None
    fill = cv2.countNonZero(binary[y:y + bh, x:x + bw]) / float(bw * bh)
    if fill >= 0.92:
        return "square"
    if 0.70 <= fill <= 0.86:
        return "circle"
    if 0.38 <= fill <= 0.62:
        return "triangle"
    return None


def mask_polarity(photo_rgb: np.ndarray, mask_rgb: np.ndarray, gt_rgb: np.ndarray) -> str:
    """``"white-keep"``, ``"black-keep"``, ``"unreadable"`` or ``"contradicts"``.

    Only pixels where the photo's gray level is above 30 (the reference's black threshold) tell: there a kept
    pixel stays bright in the ground truth and a masked one turns black. ``unreadable``: the mask is one
    colour, or no telling pixel lies on one of its sides.
    """
    photo = cv2.cvtColor(photo_rgb, cv2.COLOR_RGB2GRAY) > 30
    white = cv2.cvtColor(mask_rgb, cv2.COLOR_RGB2GRAY) >= 128
    black_gt = cv2.cvtColor(gt_rgb, cv2.COLOR_RGB2GRAY) <= 30
    on_white, on_black = photo & white, photo & ~white
    if not on_white.any() or not on_black.any():
        return "unreadable"
    gt_black_on_white = float(black_gt[on_white].mean())
    gt_black_on_black = float(black_gt[on_black].mean())
    if gt_black_on_black >= 0.9 and gt_black_on_white <= 0.1:
        return "white-keep"
    if gt_black_on_white >= 0.9 and gt_black_on_black <= 0.1:
        return "black-keep"
    return "contradicts"
