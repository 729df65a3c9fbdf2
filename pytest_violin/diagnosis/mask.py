"""Mask diagnoses: what the answer did with the masked and the kept regions.

Read against the sample's inputs (the source photo and the keep mask) and the metrics' black threshold (gray
<= 30, :data:`pytest_violin.metrics.mask.BLACK_THRESHOLD`):

* ``inverted_mask``: the kept region is black and the masked one is not;
* ``mask_offset``: the black region is the requested one moved by ``(dx, dy)`` (its per-column and per-row
  pixel counts best aligned, accepted when the move halves the IoU loss);
* ``gray_fill`` / ``leak``: the masked area is not black, uniformly (one gray level) or not (the photo or
  something else shows through); a dark gray (up to gray 30) is black for the regions but not for ``leak``,
  the mean gray there, nor for ``edge``, so from :data:`DARK_FILL_MIN_GRAY` on it is named as well ("dark gray
  12");
* ``feathered_edge``: the transition across the mask's border is wider than a pixel: the answer's gray over
  the source's, binned by the signed distance to the border (``cv2.distanceTransform``), rises from 10% to 90%
  over ``0.8 * width`` pixels (a linear ramp's 10-90% rise);
* ``blacked_out``: most of the kept region is black where the source is not (an all-black answer);
* ``altered_kept``: the kept region changed (PSNR against the source; of what is not blacked out).

Weights are shares of the masked (or, for ``altered_kept``, the kept) area each finding accounts for.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from ..metrics._common import gray, region_iou_distance
from ..metrics.mask import BLACK_THRESHOLD
from ..tasks.geometric import MASK_LIMITS as LIMITS
from .model import Finding

__all__ = ["LEAK_MIN_SHARE", "GRAY_FILL_STD", "DARK_FILL_MIN_GRAY", "FEATHER_MIN_PX", "OFFSET_MIN_PX",
           "OFFSET_MAX_PX", "ALTERED_PSNR_DB", "INVERTED_SHARE", "BLACKED_OUT_SHARE", "diagnose_mask", "edge_width"]

#: Share of the masked core that is not black reported as a leak (1%).
LEAK_MIN_SHARE = 0.01
#: Largest gray standard deviation of a non-black masked area that is one gray fill.
GRAY_FILL_STD = 6.0
#: Mean gray of a masked core that is black by the threshold (<= 30) but not black enough: the first level the
#: default ``mask.leak`` limit (the mean gray / 255 there) fails, 6 for a limit of 0.02. The exact answers of
#: 200 mask samples re-encoded as JPEG q90 stay below it (no finding).
DARK_FILL_MIN_GRAY = math.floor(LIMITS["leak"] * 255) + 1
#: Transition width (px) reported as a feathered edge; an exact answer's step measures 1 px.
FEATHER_MIN_PX = 2.5
#: Shift of the black region (px, either axis) reported as mask_offset.
OFFSET_MIN_PX = 1.5
#: Share of soft edge pixels (neither black nor the source) of a feathered edge.
SOFT_SHARE = 0.2
#: Moves up to this size (px) of a soft edge are read as a feather instead.
SOFT_MOVE_PX = 4.0
#: Largest change of the black area (share) of a moved mask (a leak or a gray fill loses most of it; a move
#: what leaves or enters the frame: up to ~45% for the small blobs along the frame of some random masks).
MOVED_AREA_CHANGE = 0.6
#: Largest shift (px) of the black region searched for, per axis.
OFFSET_MAX_PX = 64
#: PSNR (dB) of the kept region below which it counts as altered: an exact answer is identical (infinite), a
#: JPEG q90 re-encode of a photo ~38-42 dB.
ALTERED_PSNR_DB = 35.0
#: Share of both regions the wrong way round that makes an inverted mask.
INVERTED_SHARE = 0.5
#: Share of the kept region black (where the source is not) that is blacked out: an all-black answer gives 1,
#: an exact one 0.
BLACKED_OUT_SHARE = 0.5
#: Pixels of the masked region further than this from the border form its core.
CORE_PX = 3.0
#: Kept pixels further than this from the border are compared with the source.
KEPT_CORE_PX = 8.0
#: Band (px each side) of the border the feather profile is read in.
EDGE_BAND_PX = 12
#: Source pixels darker than this give no reliable answer/source ratio.
EDGE_MIN_SOURCE_GRAY = 40


def edge_width(g_answer, g_source, signed) -> float | None:
    """Width in pixels of the transition from black to the source across the border.

    ``signed`` is the distance to the border (positive in the kept region, pixel centres at +-0.5,
    +-1.5, ...). ``None`` when the band has too few usable pixels.
    """
    band = (np.abs(signed) <= EDGE_BAND_PX) & (g_source >= EDGE_MIN_SOURCE_GRAY)
    if band.sum() < 50:
        return None
    d = signed[band]
    alpha = np.clip(g_answer[band].astype(np.float64) / g_source[band], 0.0, 1.5)
    bins = np.floor(d).astype(np.int64)
    centres, profile = [], []
    for b in range(-EDGE_BAND_PX, EDGE_BAND_PX):
        sel = bins == b
        if sel.sum() >= 5:
            centres.append(b + 0.5)
            profile.append(float(np.median(alpha[sel])))
    if len(centres) < 4:
        return None
    prof = np.maximum.accumulate(np.asarray(profile))
    low, high = prof[0], prof[-1]
    if high - low < 0.3:
        return None
    # from the masked side's level to the kept side's (a gray or leaking masked side too)
    prof = (prof - low) / (high - low)
    lo = np.interp(0.1, prof + np.arange(prof.size) * 1e-9, centres)
    hi = np.interp(0.9, prof + np.arange(prof.size) * 1e-9, centres)
    return float(hi - lo) / 0.8


def _profile_shift(want: np.ndarray, got: np.ndarray, axis: int) -> int:
    """The shift (px) of ``got`` against ``want`` along one axis (0: x, 1: y).

    The regions' pixel counts per column (x) or row (y) are compared at every shift up to
    :data:`OFFSET_MAX_PX` (the profile's ends repeated, as a region that touches the frame keeps touching it),
    smallest absolute difference first, the smaller shift on ties. An axis along which the region does not
    change (a full-height strip moved up) gives 0.
    """
    pw = want.sum(axis=axis, dtype=np.int64).astype(np.float64)
    pg = got.sum(axis=axis, dtype=np.int64).astype(np.float64)
    reach = min(OFFSET_MAX_PX, pw.size - 1)
    padded = np.pad(pw, reach, mode="edge")
    lags = np.arange(-reach, reach + 1)
    costs = [float(np.abs(pg - padded[reach - lag:reach - lag + pw.size]).sum()) for lag in lags]
    order = np.lexsort((np.abs(lags), np.asarray(costs)))
    return int(lags[order[0]])


def _soft_share(g_answer, g_source, signed) -> float:
    """Share of the pixels within 3 px of the border whose answer is neither
    black nor the source (answer / source gray in (0.2, 0.8)): high for a
    feathered edge, ~0 for a sharp one, moved or not."""
    band = (np.abs(signed) <= 3.0) & (g_source >= EDGE_MIN_SOURCE_GRAY)
    if not band.any():
        return 0.0
    alpha = g_answer[band].astype(np.float32) / g_source[band]
    return float(((alpha > 0.2) & (alpha < 0.8)).mean())


def _psnr(a, b, mask) -> float:
    """PSNR (dB) of ``a`` against ``b`` over the 0/255 ``mask``."""
    count = cv2.countNonZero(mask)
    mse = cv2.norm(a, b, cv2.NORM_L2SQR, mask=mask) / (3.0 * count) if count else 0.0
    return math.inf if mse == 0 else 10.0 * math.log10(255.0 ** 2 / mse)


def _fill_findings(g_core) -> tuple:
    """``(fill level or None, findings)`` of the masked core's gray levels.

    Not black (above gray 30) on :data:`LEAK_MIN_SHARE` of it: a ``gray_fill`` when one level (std <=
    :data:`GRAY_FILL_STD`), else a ``leak``. Black by the threshold but with a mean gray of at least
    :data:`DARK_FILL_MIN_GRAY`: the same two kinds, said as dark gray. The level is returned for a uniform
    fill only.
    """
    lit = g_core > BLACK_THRESHOLD
    share = float(lit.mean())
    std, median = float(np.std(g_core)), float(np.median(g_core))
    if share >= LEAK_MIN_SHARE:
        if share >= 0.9 and std <= GRAY_FILL_STD:
            return median, [Finding("gray_fill", f"masked area filled with gray {median:.0f} instead of black",
                                    {"gray": median, "std": std, "share": share}, share)]
        level = float(g_core[lit].mean())
        return None, [Finding("leak", f"{100 * share:.1f}% of the masked area is not black (mean gray "
                                      f"{level:.0f} there)", {"share": share, "mean_gray": level}, share)]
    mean = float(g_core.mean())
    if mean < DARK_FILL_MIN_GRAY:
        return None, []
    dark = float((g_core >= DARK_FILL_MIN_GRAY).mean())
    why = f"black for the region (gray <= {BLACK_THRESHOLD}), not for leak and edge"
    if std <= GRAY_FILL_STD:
        return median, [Finding("gray_fill", f"masked area filled with dark gray {median:.0f} instead of black: "
                                             f"{why}", {"gray": median, "std": std, "share": dark}, dark)]
    return None, [Finding("leak", f"{100 * dark:.1f}% of the masked area is dark gray, not black (mean gray "
                                  f"{mean:.0f}; {why})", {"share": dark, "mean_gray": mean}, dark)]


def diagnose_mask(sample, image, expected) -> list:
    """Findings of a masking answer (needs the sample's inputs: source and mask)."""
    inputs = sample.inputs
    if len(inputs) < 2:
        return []
    source, mask_rgb = inputs[0], inputs[1]
    keep = (mask_rgb[:, :, 0] >= 128).astype(np.uint8)
    masked = 1 - keep
    n_masked = int(masked.sum())
    if n_masked == 0:
        return []
    g_ans, g_src = gray(image), gray(source)
    black = (g_ans <= BLACK_THRESHOLD).astype(np.uint8)
    in_keep = cv2.distanceTransform(keep, cv2.DIST_L2, 5)
    in_masked = cv2.distanceTransform(masked, cv2.DIST_L2, 5)
    signed = np.where(keep > 0, in_keep - 0.5, 0.5 - in_masked)
    findings = []
    n_keep = int(keep.sum())
    kept_black = float((black & keep).sum()) / max(n_keep, 1)
    masked_lit = 1.0 - float((black & masked).sum()) / n_masked
    if n_keep and kept_black >= INVERTED_SHARE and masked_lit >= INVERTED_SHARE:
        return [Finding("inverted_mask",
                        f"mask inverted: {100 * kept_black:.0f}% of the kept region is black and "
                        f"{100 * masked_lit:.0f}% of the masked region is not",
                        {"kept_black_share": kept_black, "masked_not_black_share": masked_lit}, 1.0)]
    # the kept region black where the source is not (an exact answer keeps the source's own blacks)
    lit_keep = keep & (g_src > BLACK_THRESHOLD)
    blacked = float((black & lit_keep).sum()) / max(int(lit_keep.sum()), 1)
    if blacked >= BLACKED_OUT_SHARE:
        whole = " (the whole image is black)" if masked_lit < LEAK_MIN_SHARE and blacked >= 0.99 else ""
        findings.append(Finding(
            "blacked_out", f"kept region blacked out: {100 * blacked:.0f}% of it is black where the "
                           f"source is not{whole}", {"share": blacked, "masked_not_black_share": masked_lit},
            blacked))
    dx = dy = 0.0
    want_black = (gray(expected) <= BLACK_THRESHOLD).astype(np.uint8)
    loss0 = region_iou_distance(black, want_black)
    n_black, n_want = int(black.sum()), int(want_black.sum())
    if loss0 >= 0.01 and abs(n_black - n_want) <= MOVED_AREA_CHANGE * n_want:  # a move keeps the area
        dx, dy = float(_profile_shift(want_black, black, 0)), float(_profile_shift(want_black, black, 1))
        h, w = keep.shape
        # a region that touches the frame keeps touching it when it moves
        moved = cv2.warpAffine(want_black, np.float64([[1, 0, dx], [0, 1, dy]]), (w, h),
                               flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
        loss1 = region_iou_distance(black, moved)
        # a small "move" of a soft edge is a feather (a region along the frame shrinks like a move)
        soft = max(abs(dx), abs(dy)) <= SOFT_MOVE_PX and _soft_share(g_ans, g_src, signed) >= SOFT_SHARE
        if max(abs(dx), abs(dy)) >= OFFSET_MIN_PX and loss1 <= 0.5 * loss0 and not soft:
            findings.append(Finding(
                "mask_offset", f"masked region off by dx={dx:+.0f} px, dy={dy:+.0f} px",
                {"dx": dx, "dy": dy, "dx_pct": 100 * dx / w, "dy_pct": 100 * dy / h},
                max(loss0 - loss1, 0.0)))
        else:
            dx = dy = 0.0
    shift = math.ceil(max(abs(dx), abs(dy)))
    core = in_masked > CORE_PX + shift
    if not core.any():
        core = masked > 0
    fill, found = _fill_findings(g_ans[core])
    findings += found
    if not shift:
        # a uniform fill's level removed, the masked side reads black again: only the edge's shape is left
        g_edge = g_ans if fill is None else np.where(masked > 0, np.clip(g_ans - fill, 0, 255), g_ans)
        width = edge_width(g_edge, g_src, signed)
        if width is not None and width >= FEATHER_MIN_PX:
            band = np.abs(signed) <= width / 2.0
            findings.append(Finding(
                "feathered_edge", f"feathered mask edge, {width:.1f} px wide",
                {"width_px": width}, min(float((band & (masked > 0)).sum()) / n_masked, 1.0)))
    kept_core = cv2.compare(in_keep, KEPT_CORE_PX + shift, cv2.CMP_GT)
    if findings and findings[0].kind == "blacked_out":  # altered: what is not blacked out
        kept_core = cv2.bitwise_and(kept_core, cv2.compare(black, 0, cv2.CMP_EQ))
    if cv2.countNonZero(kept_core):
        psnr = _psnr(image, source, kept_core)
        if psnr < ALTERED_PSNR_DB:
            diff = np.abs(image.astype(np.int16) - source.astype(np.int16)).max(axis=2)[kept_core > 0]
            changed = float((diff > 10).mean())
            findings.append(Finding(
                "altered_kept", f"kept region altered: PSNR {psnr:.1f} dB against the source, "
                                f"{100 * changed:.0f}% of it changed by more than 10 levels",
                {"psnr_db": psnr, "changed_share": changed}, changed))
    return findings
