"""Diagnoses of the extra geometric tasks: border thickness per side and dots found.

(The area-ratio task is a two-colour split: :func:`.color.diagnose_ratio`.)
Both reuse the metrics' own measurements
(:func:`pytest_violin.metrics.geometric.border_metrics` reports the median
run of border pixels per side, :func:`~pytest_violin.metrics.geometric.count_metrics`
the 8-connected components it counts), so a finding's numbers are the
numbers the metric was computed from.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..metrics.geometric import border_metrics, count_metrics
from .model import Finding
from .shape import nearer

__all__ = ["THICKNESS_MIN_PX", "DOT_SIZE_MIN", "diagnose_border", "diagnose_count"]

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
