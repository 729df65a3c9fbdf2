"""Pass/fail limits for Violin metrics.

Every task has a default limit on each of its metrics and on their mean, keyed ``"task.metric"`` and
``"task.mean"`` (docs/thresholds.md justifies every number). Overrides come from ``--violin-threshold``
(repeatable), the ``violin_thresholds`` ini key and the ``violin`` marker, as strings ``"color.sd=0.02"`` or
mappings. A sample passes when every metric that has a limit is ``<=`` it: that comparison is the verdict's
(:mod:`pytest_violin.verdict`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from .errors import ThresholdError
from .tasks import DEFAULT_EXTRA_LIMIT, builtin_families, default_limits, find_family, known_metrics

__all__ = ["DEFAULT_EXTRA_LIMIT", "DEFAULT_LIMITS", "KNOWN_METRICS", "build_limits", "limits_for_task",
           "parse_threshold", "parse_thresholds"]

#: Metric names of the tasks whose threshold keys are checked (the built-in families with
#: ``strict_thresholds``: color, shape, mask), in display order.
KNOWN_METRICS: dict[str, tuple[str, ...]] = known_metrics(builtin_families())

#: Default limits (distances in [0, 1]; a value <= its limit passes) of the built-in task families, keyed
#: ``"task.metric"`` and ``"task.mean"``: declared by each family (``pytest_violin/tasks/<family>.py``),
#: justified in docs/thresholds.md. ``DEFAULT_EXTRA_LIMIT`` is the limit of a metric of a non-strict task
#: without its own.
DEFAULT_LIMITS: dict[str, float] = default_limits(builtin_families())

_FORMS = "'TASK.METRIC=VALUE' or 'TASK.mean=VALUE' with VALUE a number in [0, 1] (e.g. color.sd=0.02)"


def _check_value(raw, source: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ThresholdError(f"threshold {source!r}: value {raw!r} is not a number; accepted: {_FORMS}") from None
    if math.isnan(value) or value < 0.0 or value > 1.0:
        raise ThresholdError(f"threshold {source!r}: value {value!r} is outside [0, 1]; accepted: {_FORMS}")
    return value


def _check_key(key: str, source: str, metrics: Mapping[str, Iterable[str]] | None) -> str:
    task, dot, metric = key.strip().partition(".")
    task, metric = task.strip().lower(), metric.strip().lower()
    if not dot or not task or not metric:
        raise ThresholdError(f"malformed threshold {source!r}; accepted: {_FORMS}")
    if metrics is not None:
        if task not in metrics:
            raise ThresholdError(f"threshold {source!r} names unknown task {task!r}; "
                                 f"known tasks: {', '.join(sorted(metrics))}; accepted: {_FORMS}")
        names = tuple(metrics[task])
        if metric != "mean" and metric not in names:
            raise ThresholdError(f"threshold {source!r} names unknown metric {metric!r} of task {task!r}; "
                                 f"known: {', '.join((*names, 'mean'))}")
    return f"{task}.{metric}"


def parse_threshold(text: str, metrics: Mapping[str, Iterable[str]] | None = None) -> tuple[str, float]:
    """``(key, limit)`` of one override ``"task.metric=value"`` (e.g. ``"shape.mean=0.1"``).

    With ``metrics`` (known metric names per task), unknown tasks and metrics are refused. Raises
    :class:`ThresholdError` for a malformed override, a value that is not a number in ``[0, 1]``, or an
    unknown task or metric.
    """
    if not isinstance(text, str):
        raise ThresholdError(f"threshold {text!r} is not a string; accepted: {_FORMS}")
    key, eq, raw = text.partition("=")
    if not eq:
        raise ThresholdError(f"malformed threshold {text!r} (no '='); accepted: {_FORMS}")
    return _check_key(key, text, metrics), _check_value(raw.strip(), text)


def parse_thresholds(overrides, metrics: Mapping[str, Iterable[str]] | None = None) -> dict[str, float]:
    """``"task.metric"`` -> limit of many overrides: strings or a mapping key -> value.

    Later entries win; blank strings and ``#`` comments are skipped (ini line lists).
    """
    out: dict[str, float] = {}
    if overrides is None:
        return out
    if isinstance(overrides, str):
        overrides = [overrides]
    if isinstance(overrides, Mapping):
        for key, raw in overrides.items():
            source = f"{key}={raw}"
            out[_check_key(str(key), source, metrics)] = _check_value(raw, source)
        return out
    for text in overrides:
        if isinstance(text, str) and (not text.strip() or text.strip().startswith("#")):
            continue
        key, value = parse_threshold(text.strip() if isinstance(text, str) else text, metrics)
        out[key] = value
    return out


def build_limits(*override_sets: Mapping[str, float], defaults: Mapping[str, float] | None = None) -> dict[str, float]:
    """``defaults`` (:data:`DEFAULT_LIMITS`) merged with parsed override sets, later sets winning."""
    limits = dict(DEFAULT_LIMITS if defaults is None else defaults)
    for overrides in override_sets:
        limits.update(overrides or {})
    return limits


def limits_for_task(limits: Mapping[str, float], task: str, metric_names: Iterable[str]) -> dict[str, float]:
    """The limits of one sample keyed by bare metric name, in metric order, ``mean`` last.

    ``limits`` are keyed ``"task.metric"``; a metric of a task without a built-in default gets
    :data:`DEFAULT_EXTRA_LIMIT`.
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
