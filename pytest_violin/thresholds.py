"""Pass/fail limits for Violin metrics.

Every task has a default limit on each of its metrics and on their mean,
keyed ``"task.metric"`` and ``"task.mean"`` (see ``docs/thresholds.md`` for
the justification of every number). Overrides come from
``--violin-threshold`` (repeatable), the ``violin_thresholds`` ini key and
the ``violin`` marker, as strings ``"color.sd=0.02"`` or mappings.

A sample passes when every metric that has a limit is ``<=`` its limit:
that comparison, its rows and their table are the verdict's
(:mod:`pytest_violin.verdict`, which imports nothing of this module);
``Row``, ``evaluate``, ``format_table`` and ``failure_message`` are
re-exported here under their old names.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from .errors import ThresholdError, ViolinFailure
from .tasks import DEFAULT_EXTRA_LIMIT, builtin_families, default_limits, find_family, known_metrics
from .verdict import Row, evaluate, failure_message, format_table

__all__ = [
    "KNOWN_METRICS",
    "DEFAULT_LIMITS",
    "DEFAULT_EXTRA_LIMIT",
    "Row",
    "ViolinFailure",
    "parse_threshold",
    "parse_thresholds",
    "build_limits",
    "limits_for_task",
    "evaluate",
    "format_table",
    "failure_message",
]

#: Metric names of the tasks whose threshold keys are checked (the built-in
#: families with ``strict_thresholds``: color, shape, mask), in display order.
#: A view of :mod:`pytest_violin.tasks`, taken at import.
KNOWN_METRICS: dict[str, tuple[str, ...]] = known_metrics(builtin_families())

#: Default limits (distances in [0, 1]; a value <= its limit passes) of the
#: built-in task families, keyed ``"task.metric"`` and ``"task.mean"``.
#: Declared by each family (``pytest_violin/tasks/<family>.py``) and
#: justified, with the numbers the metrics give on synthetic cases, in
#: docs/thresholds.md. A view of :mod:`pytest_violin.tasks`, taken at import.
DEFAULT_LIMITS: dict[str, float] = default_limits(builtin_families())
# DEFAULT_EXTRA_LIMIT (imported above from pytest_violin.tasks.base): the limit of
# a metric of a non-strict task without a default of its own (the violin-extra
# border and count tasks, third-party suites), and of their mean.

_FORMS = "'TASK.METRIC=VALUE' or 'TASK.mean=VALUE' with VALUE a number in [0, 1] (e.g. color.sd=0.02)"


def _check_value(key: str, raw, source: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ThresholdError(
            f"threshold {source!r}: value {raw!r} is not a number; accepted: {_FORMS}"
        ) from None
    if math.isnan(value) or value < 0.0 or value > 1.0:
        raise ThresholdError(
            f"threshold {source!r}: value {value!r} is outside [0, 1]; accepted: {_FORMS}"
        )
    return value


def _check_key(key: str, source: str, metrics: Mapping[str, Iterable[str]] | None) -> str:
    task, dot, metric = key.strip().partition(".")
    task, metric = task.strip().lower(), metric.strip().lower()
    if not dot or not task or not metric:
        raise ThresholdError(f"malformed threshold {source!r}; accepted: {_FORMS}")
    if metrics is not None:
        if task not in metrics:
            raise ThresholdError(
                f"threshold {source!r} names unknown task {task!r}; "
                f"known tasks: {', '.join(sorted(metrics))}; accepted: {_FORMS}"
            )
        names = tuple(metrics[task])
        if metric != "mean" and metric not in names:
            raise ThresholdError(
                f"threshold {source!r} names unknown metric {metric!r} of task {task!r}; "
                f"known: {', '.join((*names, 'mean'))}"
            )
    return f"{task}.{metric}"


def parse_threshold(text: str, metrics: Mapping[str, Iterable[str]] | None = None) -> tuple[str, float]:
    """Parse one override ``"task.metric=value"``.

    Parameters
    ----------
    text : str
        The override, e.g. ``"color.sd=0.02"`` or ``"shape.mean=0.1"``.
    metrics : Mapping[str, Iterable[str]], optional
        Known metric names per task; when given, unknown tasks and metrics
        are refused.

    Returns
    -------
    tuple of (str, float)
        The normalized key and the limit.

    Raises
    ------
    ThresholdError
        For a malformed override, a value that is not a number in
        ``[0, 1]``, or an unknown task or metric.
    """
    if not isinstance(text, str):
        raise ThresholdError(f"threshold {text!r} is not a string; accepted: {_FORMS}")
    key, eq, raw = text.partition("=")
    if not eq:
        raise ThresholdError(f"malformed threshold {text!r} (no '='); accepted: {_FORMS}")
    key = _check_key(key, text, metrics)
    return key, _check_value(key, raw.strip(), text)


def parse_thresholds(overrides, metrics: Mapping[str, Iterable[str]] | None = None) -> dict[str, float]:
    """Parse many overrides: an iterable of strings or a mapping key -> value.

    Later entries win. Blank strings and ``#`` comments are skipped (ini
    line lists).

    Parameters
    ----------
    overrides : Iterable[str] or Mapping[str, float] or None
        The overrides.
    metrics : Mapping[str, Iterable[str]], optional
        Known metric names per task (see :func:`parse_threshold`).

    Returns
    -------
    dict
        Normalized ``"task.metric"`` -> limit.
    """
    out: dict[str, float] = {}
    if overrides is None:
        return out
    if isinstance(overrides, str):
        overrides = [overrides]
    if isinstance(overrides, Mapping):
        for key, raw in overrides.items():
            source = f"{key}={raw}"
            norm = _check_key(str(key), source, metrics)
            out[norm] = _check_value(norm, raw, source)
        return out
    for text in overrides:
        if isinstance(text, str) and (not text.strip() or text.strip().startswith("#")):
            continue
        key, value = parse_threshold(text.strip() if isinstance(text, str) else text, metrics)
        out[key] = value
    return out


def build_limits(*override_sets: Mapping[str, float], defaults: Mapping[str, float] | None = None) -> dict[str, float]:
    """Merge defaults and override sets (later sets win).

    Parameters
    ----------
    *override_sets : Mapping[str, float]
        Parsed overrides, lowest priority first.
    defaults : Mapping[str, float], optional
        Starting limits (default :data:`DEFAULT_LIMITS`).

    Returns
    -------
    dict
        ``"task.metric"`` -> limit.
    """
    limits = dict(DEFAULT_LIMITS if defaults is None else defaults)
    for overrides in override_sets:
        limits.update(overrides or {})
    return limits


def limits_for_task(limits: Mapping[str, float], task: str, metric_names: Iterable[str]) -> dict[str, float]:
    """The limits that apply to one sample, keyed by bare metric name.

    A metric of a task without a built-in default gets
    :data:`DEFAULT_EXTRA_LIMIT`.

    Parameters
    ----------
    limits : Mapping[str, float]
        All limits, keyed ``"task.metric"``.
    task : str
        The sample's task.
    metric_names : Iterable[str]
        The metrics the sample's score returns.

    Returns
    -------
    dict
        metric name (and ``"mean"``) -> limit, in metric order, mean last.
    """
    family = find_family(task)
    builtin = family is not None and family.strict_thresholds
    out: dict[str, float] = {}
    for name in (*metric_names, "mean"):
        key = f"{task}.{name}"
        if key in limits:
            out[name] = float(limits[key])
        elif not builtin:
            out[name] = DEFAULT_EXTRA_LIMIT
    return out
