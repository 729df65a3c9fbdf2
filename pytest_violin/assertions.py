"""Obedience assertions for your own tests.

Each assertion scores an image (anything :func:`pytest_violin.as_rgb8` accepts) against an exact ground truth,
compares every metric with its limit and either returns the :class:`~pytest_violin.metrics.Metrics` or raises
an :class:`AssertionError` whose message is the metric table (metric | value | limit | result) followed by
what was expected, in words::

    image does not obey: left half #E68697 (pink), right half #3B74C0 (blue)
    over the limit: sd, hf

    metric | value  | limit  | result
    -------+--------+--------+-------
    rgb_ed | 0.0100 | 0.0400 | pass
    ...

Limits are keyword arguments named after the task's metrics plus ``mean`` (``assert_pure_color(img, "#D9B451",
sd=0.01, mean=0.02)``); ``None`` removes a limit. Unspecified limits come from ``thresholds=`` (a mapping
keyed ``"task.metric"``, such as the plugin's ``violin_thresholds`` fixture, which includes the ini and
``--violin-threshold`` overrides) or else the plugin's per-task defaults
(:data:`pytest_violin.thresholds.DEFAULT_LIMITS`). An unknown limit name raises :class:`TypeError` listing the
accepted ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from .imaging import as_rgb8
from .metrics import check_profile
from .errors import InvalidArgumentError

__all__ = ["assert_obeys", "assert_pure_color", "assert_blocks", "assert_shape", "assert_masked",
           "describe_sample", "resolve_limits"]

from .tasks.color import BLOCK_COUNTS as _LAYOUT_COUNTS  # noqa: E402  layout -> blocks


# ---------------------------------------------------------------- limits
def resolve_limits(task: str, metric_names: Sequence[str], limits: Mapping[str, object],
                   thresholds: Mapping[str, float] | None = None) -> dict:
    """Metric name -> limit, for the metrics of ``metric_names`` that have one.

    The task's base limits (``thresholds``, keyed ``"task.metric"``, e.g. the plugin's ``violin_thresholds``
    fixture; default :data:`pytest_violin.thresholds.DEFAULT_LIMITS`) updated by ``limits``, overrides by bare
    metric name or ``mean`` (``None`` removes a limit). A name that is neither a metric nor ``mean`` is a
    ``TypeError``; a limit that is not a number in ``[0, 1]`` (or None) a ``ValueError``.
    """
    from .thresholds import DEFAULT_LIMITS, limits_for_task

    accepted = (*metric_names, "mean")
    unknown = [name for name in limits if name not in accepted]
    if unknown:
        raise InvalidArgumentError(
            f"unknown limit{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(n) for n in unknown)} for a {task} sample; "
            f"accepted keyword limits: {', '.join(accepted)}")
    if thresholds is not None and not isinstance(thresholds, Mapping):
        raise InvalidArgumentError(f"thresholds={thresholds!r} must be a mapping 'task.metric' -> limit "
                        f"(e.g. the violin_thresholds fixture) or None")
    out = limits_for_task(DEFAULT_LIMITS if thresholds is None else thresholds, task, metric_names)
    for name, value in limits.items():
        if value is None:
            out.pop(name, None)
            continue
        ok = (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
              and math.isfinite(float(value)) and 0.0 <= float(value) <= 1.0)
        if not ok:
            raise InvalidArgumentError(f"limit {name}={value!r} is invalid: expected a number in [0, 1] "
                             f"(metrics are distances, 0 = exact) or None for no limit")
        out[name] = float(value)
    return out


# ---------------------------------------------------------------- words
def describe_sample(sample) -> str:
    """A sample's ground truth in one line of words (``"left half #E68697 (pink), right half
    #3B74C0 (blue)"``): its task family's description (:func:`pytest_violin.tasks.describe`), else the prompt.
    """
    from .tasks import describe

    return describe(sample)


# ---------------------------------------------------------------- verdict
def _self_score_note(sample, profile: str) -> str:
    """A note when the ground truth does not score 0.0 against itself."""
    own = sample.score(sample.expected(), profile=profile)
    off = {k: v for k, v in own.items() if v > 0.0}
    if not off:
        return ""
    values = ", ".join(f"{k}={v:.4f}" for k, v in off.items())
    return (f"note: the exact answer itself scores {values}: kept pixels darker than the mask "
            f"metrics' black threshold (gray 30 or darker) or enclosed by black count as black; brighten "
            f"the source's dark tones (pytest_violin.suite.drawing.lift_dark) before asking the "
            f"model, as the suite does")


def _verdict(metrics, sample, limits: Mapping, *, what: str, show_prompt: bool, thresholds=None):
    __tracebackhide__ = True
    from .verdict import judge

    applied = resolve_limits(metrics.task, tuple(metrics), limits, thresholds)
    notes = []
    info = metrics.info
    if info.get("resized"):
        ow, oh = info.get("original_size", ("?", "?"))
        notes.append(f"note: the {ow}x{oh} image was resized to {sample.width}x{sample.height}")
    verdict = judge(sample, metrics, applied, notes=notes, asked=what)
    if not verdict.passed and sample.task == "mask":
        note = _self_score_note(sample, metrics.profile)
        if note:
            verdict = judge(sample, metrics, applied, notes=[*notes, note], asked=what)
    verdict.check(show_prompt=show_prompt)
    return metrics


def _image_size(image) -> tuple:
    rgb = as_rgb8(image)
    return rgb, int(rgb.shape[1]), int(rgb.shape[0])


def assert_obeys(image, sample, *, profile: str = "violin",
                 thresholds: Mapping | None = None, **limits):
    """Assert that ``image`` obeys ``sample`` (any task, any suite).

    Parameters
    ----------
    image : image-like
        Anything :func:`pytest_violin.as_rgb8` accepts; another size is resized to the sample's size first
        (noted in the message).
    sample : Sample
        The sample, e.g. drawn by a :mod:`pytest_violin.strategies` strategy or from
        :func:`pytest_violin.load_suite`.
    profile : {"violin", "strict"}, optional
        Metric profile.
    thresholds : Mapping[str, float], optional
        Base limits keyed ``"task.metric"``, e.g. the plugin's ``violin_thresholds`` fixture (ini and
        ``--violin-threshold`` overrides included); default: the plugin's default limits.
    **limits : float or None
        Per-metric limits (and ``mean``) overriding the base limits.

    Returns
    -------
    Metrics
        The sample's metrics, when every metric is within its limit.

    Raises
    ------
    AssertionError
        With the metric table, the sample described in words, its prompt and id.
    TypeError
        For an unknown limit name (the message lists the accepted names).
    """
    __tracebackhide__ = True
    return _check_sample(image, sample, profile, limits, thresholds, show_prompt=True)


def _parse_colors(colors, count: int, layout: str) -> list:
    from .suite.colors import parse_color

    if isinstance(colors, str) or not isinstance(colors, Sequence):
        raise InvalidArgumentError(f"colors={colors!r} must be a sequence of {count} colors for layout "
                        f"{layout!r}")
    if len(colors) != count:
        raise InvalidArgumentError(f"layout {layout!r} needs {count} colors, got {len(colors)}: {colors!r}")
    return [parse_color(c) for c in colors]


def assert_pure_color(image, color, *, profile: str = "violin",
                      thresholds: Mapping | None = None, **limits):
    """Assert that ``image`` is one uniform ``color``; returns the color metrics.

    ``color`` is in any notation :func:`pytest_violin.parse_color` reads (``"#D9B451"``, ``"rgb(217, 180,
    81)"``, ``"hsl(43, 64%, 58%)"``, ``"yellow"``, ``(217, 180, 81)``); ``profile``, ``thresholds`` and the
    limits (``rgb_ed``, ``lab_00``, ``sd``, ``ced``, ``hf``, ``mean``) are as for :func:`assert_obeys`.
    """
    __tracebackhide__ = True
    return assert_blocks(image, "single", [color], profile=profile, thresholds=thresholds,
                         **limits)


def assert_blocks(image, layout: str, colors, *, profile: str = "violin",
                  thresholds: Mapping | None = None, **limits):
    """Assert that ``image`` is made of uniform color blocks; returns the color metrics.

    ``layout`` is ``single``, ``vertical`` (left | right halves), ``horizontal`` (top / bottom) or ``quad`` (2
    x 2 in reading order); ``colors`` holds one color per block in any notation (a ``ValueError`` for an
    unknown layout or the wrong number). The metrics are per block, averaged as the task defines; the rest is
    as for :func:`assert_pure_color`.
    """
    __tracebackhide__ = True
    from .suite.builders import block_sample, color_sample

    if layout not in _LAYOUT_COUNTS:
        raise InvalidArgumentError(f"unknown layout {layout!r}; accepted: {', '.join(_LAYOUT_COUNTS)}")
    rgbs = _parse_colors(colors, _LAYOUT_COUNTS[layout], layout)
    rgb, w, h = _image_size(image)
    if layout == "single":
        sample = color_sample(rgbs[0], notation="hex", width=w, height=h)
    else:
        sample = block_sample(layout, rgbs, notation="hex", width=w, height=h)
    return _check_sample(rgb, sample, profile, limits, thresholds)


def _check_sample(image, sample, profile, limits, thresholds, *, show_prompt: bool = False):
    """Score ``image`` against ``sample`` and raise the verdict's message unless it passes.

    ``show_prompt``: end the message with the prompt and sample id (a suite sample) or with the size (the
    ad-hoc sample an ``assert_*`` built).
    """
    __tracebackhide__ = True
    check_profile(profile)
    resolve_limits(sample.task, sample.metric_names, limits, thresholds)  # fail fast on bad names
    metrics = sample.score(image, profile=profile)
    return _verdict(metrics, sample, limits, what=describe_sample(sample), show_prompt=show_prompt,
                    thresholds=thresholds)


def assert_shape(image, shape: str, size: float, position, *, profile: str = "violin",
                 thresholds: Mapping | None = None, **limits):
    """Assert that ``image`` is one solid white shape on black, where it should be.

    Returns the shape metrics. ``shape`` is ``circle`` (``size`` = diameter), ``square`` (axis-aligned) or
    ``triangle`` (upright equilateral; ``size`` = side length), ``size`` a fraction of the image width in
    ``(0, 1]``; ``position`` a named alignment of the bounding box (``"center"``, ``"left-center"``,
    ``"top-right"``, ...) or the centre ``(fx, fy)`` as fractions of the width and height. ``profile``,
    ``thresholds`` and the limits (``iou``, ``dist``, ``size``, ``shape``, ``purity``, ``mean``) are as for
    :func:`assert_obeys`.
    """
    __tracebackhide__ = True
    from .suite.builders import shape_sample

    rgb, w, h = _image_size(image)
    if isinstance(position, str):
        sample = shape_sample(shape, size, anchor=position, width=w, height=h)
    else:
        sample = shape_sample(shape, size, center=tuple(position), width=w, height=h)
    return _check_sample(rgb, sample, profile, limits, thresholds)


def assert_masked(output, image, mask, *, profile: str = "violin",
                  thresholds: Mapping | None = None, **limits):
    """Assert that ``output`` is ``image`` with every pixel where ``mask`` is 0 made black.

    ``mask`` is the keep-mask: a ``bool`` array (True = keep), a 0/1 integer array, or a black/white image
    (white = keep, gray >= 128), of the size of ``image`` (else a ``ValueError``). Returns the mask metrics;
    ``profile``, ``thresholds`` and the limits (``iou``, ``dist``, ``biou``, ``leak``, ``edge``, ``mean``) are
    as for :func:`assert_obeys`.

    The ground truth is the exact rule (``image`` where the mask keeps, ``(0, 0, 0)`` elsewhere), with no
    lift. The mask metrics find black by thresholding (gray 30 or darker), so a source whose *kept* pixels are
    that dark, or a mask whose black encloses kept pixels, cannot score 0.0 even for an exact answer (the
    failure message then says so). Give the model sources with their dark tones lifted, as the suite does
    (:func:`pytest_violin.suite.drawing.lift_dark`), and use :func:`pytest_violin.strategies.masks` for
    well-formed masks.
    """
    __tracebackhide__ = True
    from .suite.builders import mask_sample

    source = as_rgb8(image)
    keep = _as_keep(mask)
    if keep.shape != source.shape[:2]:
        from .errors import ImageSizeMismatchError

        raise ImageSizeMismatchError(
            f"mask of size {keep.shape[1]}x{keep.shape[0]} does not match the image of size "
            f"{source.shape[1]}x{source.shape[0]}")
    sample = mask_sample(source, keep, well_formed=False)
    return _check_sample(as_rgb8(output), sample, profile, limits, thresholds)


def _as_keep(mask) -> np.ndarray:
    """A keep-mask from a bool / 0-1 array or a black-and-white image."""
    if isinstance(mask, np.ndarray) and mask.ndim == 2:
        if mask.dtype == np.bool_:
            return mask
        if np.issubdtype(mask.dtype, np.integer) and mask.size and int(mask.max()) <= 1 \
                and int(mask.min()) >= 0:
            return mask.astype(bool)
    gray = as_rgb8(mask).astype(np.uint16).sum(axis=2)
    return gray >= 3 * 128
