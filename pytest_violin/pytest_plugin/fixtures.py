"""Fixtures for users' own tests (registered by the plugin).

``violin_model``
    The session's model adapter (``oracle`` when no model is configured).
``violin_sample``
    Parametrized over the selected samples: the configured selection, or the
    one of the test's ``@pytest.mark.violin(tasks=..., limit=...)`` marker.
``violin_generate``
    ``sample -> RGB uint8 image`` through the session's runner, cache and
    concurrency (raises :class:`~pytest_violin.errors.GenerationError`). Every
    call it makes is counted in the run's totals and capped by
    ``--violin-max-calls`` / ``--violin-max-cost``, like the built-in items'
    (and so is every ``violin_model.generate`` call).
``violin_limits``
    Session scoped: the run's limits (defaults, ini, command line), keyed
    ``"task.metric"``; usable in hypothesis tests.
``violin_thresholds``
    The limits in force for the test (options, ini and marker), keyed
    ``"task.metric"``.
``violin_check``
    ``check(sample, image) -> Metrics``: scores and fails the test with the
    metric table when a metric is over its limit; with a baseline that holds
    the sample, a known or new failure is an xfail instead (docs/gating.md).
"""

from __future__ import annotations

import pytest

__all__ = [
    "marker_selection",
    "violin_model",
    "violin_sample",
    "violin_generate",
    "violin_limits",
    "violin_thresholds",
    "violin_check",
]

_MARKER_FORM = ("@pytest.mark.violin(tasks='color,shape' or ['color'], limit=N, "
                "thresholds={'color.sd': 0.02} or ['color.sd=0.02'])")


def marker_selection(node, state):
    """Return ``(tasks, limit, thresholds)`` for ``node``: its marker over the options."""
    tasks, limit, thresholds = state.settings.tasks, state.settings.limit, None
    marker = node.get_closest_marker("violin") if node is not None else None
    if marker is None:
        return tasks, limit, thresholds
    unknown = set(marker.kwargs) - {"tasks", "limit", "thresholds"}
    if marker.args or unknown:
        raise pytest.UsageError(
            f"{node.nodeid}: bad violin marker arguments {marker.args!r} {sorted(unknown)!r}; "
            f"accepted: {_MARKER_FORM}")
    if marker.kwargs.get("tasks") is not None:
        raw = marker.kwargs["tasks"]
        parts = raw.split(",") if isinstance(raw, str) else list(raw)
        tasks = tuple(str(t).strip().lower() for t in parts if str(t).strip()) or None
    if marker.kwargs.get("limit") is not None:
        raw = marker.kwargs["limit"]
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
            raise pytest.UsageError(
                f"{node.nodeid}: violin marker limit={raw!r}; accepted: an integer >= 1")
        limit = raw
    thresholds = marker.kwargs.get("thresholds")
    return tasks, limit, thresholds


def _state(request):
    from .state import get_state

    return get_state(request.config)


@pytest.fixture(scope="session")
def violin_model(request):
    """The session's model adapter (``--violin-model``, default ``oracle``)."""
    return _state(request).get_adapter()


@pytest.fixture
def violin_sample(request):
    """One Violin sample; the plugin parametrizes this over the selection."""
    raise pytest.UsageError(  # pragma: no cover - always parametrized by pytest_generate_tests
        "violin_sample is parametrized by pytest-violin; request it from a test function")


@pytest.fixture(scope="session")
def violin_generate(request):
    """A function ``sample -> image`` using the session's runner and cache."""
    state = _state(request)

    def generate(sample):
        __tracebackhide__ = True
        generation = state.get_runner().get(sample)
        if generation.error is not None:
            raise generation.error
        if generation.fault is not None:
            # not the model's failure: a call refused at --violin-max-calls, a bug, a full disk
            pytest.fail(f"violin_generate({sample.id}): error while generating: {generation.fault}",
                        pytrace=False)
        return generation.images[0]

    return generate


def _limits(state, marker_thresholds=None):
    from ..errors import ThresholdError
    from ..thresholds import build_limits, parse_thresholds

    try:
        base = parse_thresholds(state.settings.thresholds, None)
        extra = parse_thresholds(marker_thresholds, None)
        _check_builtin_metrics({**base, **extra})
    except ThresholdError as exc:
        pytest.fail(f"bad violin thresholds: {exc}", pytrace=False)
    return build_limits(base, extra)


def _check_builtin_metrics(limits) -> None:
    """Refuse a limit on a metric the built-in task does not have (a typo never applies)."""
    from ..errors import ThresholdError
    from ..thresholds import KNOWN_METRICS

    for key in limits:
        task, _, metric = key.partition(".")
        names = KNOWN_METRICS.get(task)
        if names is not None and metric != "mean" and metric not in names:
            raise ThresholdError(
                f"threshold {key!r} names unknown metric {metric!r} of task {task!r}; "
                f"known: {', '.join((*names, 'mean'))}")


@pytest.fixture(scope="session")
def violin_limits(request):
    """The run's limits (defaults, ini, command line), keyed ``"task.metric"``.

    Session scoped, so hypothesis ``@given`` tests can use it; the
    ``violin`` marker's thresholds are not applied (see
    ``violin_thresholds``).
    """
    return _limits(_state(request))


@pytest.fixture
def violin_thresholds(request):
    """Limits in force for this test (defaults, ini, command line, marker)."""
    state = _state(request)
    _, _, marker_thresholds = marker_selection(request.node, state)
    return _limits(state, marker_thresholds)


def _xfail_if_in_baseline(config, sample, metrics, verdict) -> None:
    """With a baseline that holds ``sample``, a failure is a known or new failure: an xfail, as
    for the built-in items (docs/gating.md); the gate decides whether the model got worse."""
    from .gate import GATE_KEY
    from .known_failures import failure_context

    gate = config.stash.get(GATE_KEY, None)
    if gate is None or not gate.baseline_index:
        return
    from ..gating.records import sample_definition
    from ..report.text import printable

    known = failure_context(gate.baseline_index, sample.id, sample_definition(sample), metrics.mean)
    if known is not None:
        pytest.xfail(printable(f"{known}\n{verdict.message()}"))


@pytest.fixture
def violin_check(request, violin_thresholds):
    """``check(sample, image) -> Metrics``: score and assert with the metric table."""
    from ..thresholds import limits_for_task
    from ..verdict import judge

    profile = _state(request).settings.profile

    def check(sample, image, *, profile: str = profile):
        __tracebackhide__ = True
        metrics = sample.score(image, profile=profile)
        verdict = judge(sample, metrics, limits_for_task(violin_thresholds, sample.task, list(metrics)))
        for row in verdict.rows:
            request.node.user_properties.append((f"violin.{row.metric}", round(row.value, 6)))
        if not verdict.passed:
            _xfail_if_in_baseline(request.config, sample, metrics, verdict)
        verdict.check()
        return metrics

    return check
