"""Violin obedience metrics: pure functions, arrays in, :class:`Metrics` out.

All metrics are distances normalized to ``[0, 1]``; 0.0 is perfect
obedience. Two profiles: ``violin`` (default) reproduces the published
reference numbers case for case (to 1e-6, including the reference's float32
CIEDE2000), ``strict`` fixes their documented weaknesses. See
``docs/metrics.md`` for every formula and parameter.

Every metric function reads its images with :func:`pytest_violin.as_rgb8`
(the generated image first, the ground truth of the same size second) and
raises a ``ValueError`` for an unknown profile or layout, images of
different sizes (:class:`~pytest_violin.errors.ImageSizeMismatchError`) or
an input ``as_rgb8`` refuses.
"""

from ._common import LAYOUTS
from ._lab import rgb_to_lab
from ._types import PROFILES, Metrics, check_profile
from .ciede2000 import ciede2000, ciede2000_to_color
from .color import COLOR_METRICS, color_metrics
from .mask import MASK_METRICS, mask_metrics
from .shape import SHAPE_METRICS, shape_metrics

__all__ = ["Metrics", "PROFILES", "LAYOUTS", "COLOR_METRICS", "SHAPE_METRICS", "MASK_METRICS",
           "color_metrics", "shape_metrics", "mask_metrics", "ciede2000", "ciede2000_to_color",
           "rgb_to_lab", "check_profile"]
