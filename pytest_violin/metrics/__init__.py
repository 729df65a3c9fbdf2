"""Violin obedience metrics: pure functions, arrays in, :class:`Metrics` out.

All metrics are distances normalized to ``[0, 1]``; 0.0 is perfect obedience. Two profiles: ``violin``
(default) reproduces the published reference numbers case for case (to 1e-6, including the reference's float32
CIEDE2000), ``strict`` fixes their documented weaknesses. See ``docs/metrics.md`` for every formula and
parameter.

Every metric function reads its images with :func:`pytest_violin.as_rgb8` (the generated image first, the
ground truth of the same size second) and raises a ``ValueError`` for an unknown profile or layout, images of
different sizes (:class:`~pytest_violin.errors.ImageSizeMismatchError`) or an input ``as_rgb8`` refuses.
"""

from __future__ import annotations

from .._lazy import lazy_names
# eager: the submodule's name is also the function's, which must win
from .ciede2000 import ciede2000, ciede2000_to_color

_HOMES = {
    "LAYOUTS": "_common", "rgb_to_lab": "_common", "PROFILES": "_common", "Metrics": "_common",
    "check_profile": "_common", "COLOR_METRICS": "color", "color_metrics": "color", "MASK_METRICS": "mask",
    "mask_metrics": "mask",
    "SHAPE_METRICS": "shape", "shape_metrics": "shape",
}

__all__ = ["Metrics", "PROFILES", "LAYOUTS", "COLOR_METRICS", "SHAPE_METRICS", "MASK_METRICS",
           "color_metrics", "shape_metrics", "mask_metrics", "ciede2000", "ciede2000_to_color",
           "rgb_to_lab", "check_profile"]


# one task's metrics load without the others' (a color sample imports no shape or mask code)
__getattr__, __dir__ = lazy_names(globals(), _HOMES)
