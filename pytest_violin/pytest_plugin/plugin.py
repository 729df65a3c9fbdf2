"""pytest plugin entry point (``pytest11: violin``): options, marker, fixtures."""

from __future__ import annotations

import sys

import pytest

from ..report.text import printable
from ._options import parse_gate_settings, parse_settings
from ._session import SESSION_KEY, ViolinSession, session_of

__all__ = ["violin_check", "violin_generate", "violin_limits", "violin_model", "violin_sample",
           "violin_thresholds"]


def pytest_addoption(parser):
    from ._options import add_options
    add_options(parser)


def pytest_addhooks(pluginmanager):
    from . import (
        hookspecs,  # for other plugins: the package's own code calls its parts directly
    )

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)  # before hypothesis's plugin loads --hypothesis-profile
def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "violin(tasks=None, limit=None, thresholds=None): select the Violin samples that the "
        "violin_sample fixture is parametrized over, and the limits violin_check applies",
    )
    # every option parsed and validated now (UsageError on bad values), with a model or without
    settings = parse_settings(config)
    session = ViolinSession(config, settings, parse_gate_settings(config))
    config.stash[SESSION_KEY] = session
    if settings.model or "hypothesis" in sys.modules or config.getoption("hypothesis_profile", None) == "violin":
        # the "violin" settings profile for model-backed property tests; hypothesis
        # is not imported for runs that use neither it nor a model
        from ..hypothesis_profiles import (
            load_for_model_run,
            register_profiles,
            restore_profile,
        )

        register_profiles()
        if settings.model and load_for_model_run(config.getoption("hypothesis_profile", None)):
            # model-backed property tests get the violin settings without a flag
            # (restored at unconfigure); --hypothesis-profile or a conftest's choice wins
            config.add_cleanup(restore_profile)
    if not settings.model:
        config.add_cleanup(session.close)  # the fixtures' oracle, when a test used one
        return
    # registered first: its pytest_unconfigure restores what start() set up, also after a usage error
    config.pluginmanager.register(session, "violin-session")
    session.start()


def pytest_generate_tests(metafunc):
    if "violin_sample" not in metafunc.fixturenames:
        return
    session = session_of(metafunc.config)
    tasks, limit, _ = marker_selection(metafunc.definition, session)
    samples = session.take_shard(session.load(tasks, limit))
    metafunc.parametrize("violin_sample", samples, ids=[s.id for s in samples])


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


@pytest.fixture(scope="session")
def violin_model(request):
    """The session's model adapter (``--violin-model``, default ``oracle``)."""
    return session_of(request.config).get_adapter()


@pytest.fixture
def violin_sample(request):
    """One Violin sample; the plugin parametrizes this over the selection."""
    raise pytest.UsageError(  # pragma: no cover - always parametrized by pytest_generate_tests
        "violin_sample is parametrized by pytest-violin; request it from a test function")


@pytest.fixture(scope="session")
def violin_generate(request):
    """A function ``sample -> image`` using the session's runner and cache."""
    state = session_of(request.config)

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
    """The run's limits (defaults, ini, command line), keyed ``"task.metric"``."""
    return _limits(session_of(request.config))


@pytest.fixture
def violin_thresholds(request):
    """Limits in force for this test (defaults, ini, command line, marker)."""
    state = session_of(request.config)
    _, _, marker_thresholds = marker_selection(request.node, state)
    return _limits(state, marker_thresholds)


def _xfail_if_in_baseline(config, sample, metrics, verdict) -> None:
    """With a baseline that holds ``sample``, a failure is a known or new failure: an xfail, as
    for the built-in items (docs/gating.md); the gate decides whether the model got worse."""
    from ..gating.records import sample_definition
    known = session_of(config).gate.known_failure(sample.id, sample_definition(sample), metrics.mean)
    if known is not None:
        pytest.xfail(printable(f"{known}\n{verdict.message()}"))


@pytest.fixture
def violin_check(request, violin_thresholds):
    """``check(sample, image) -> Metrics``: score and assert with the metric table."""
    from ..thresholds import limits_for_task
    from ..verdict import judge
    profile = session_of(request.config).settings.profile

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
