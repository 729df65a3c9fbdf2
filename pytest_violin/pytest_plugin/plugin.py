"""pytest plugin entry point (``pytest11: violin``).

Without a configured model (``--violin-model`` or the ``violin_model`` ini
key) this module changes nothing in a pytest run: it declares its options,
its marker and its fixtures, and imports nothing heavy (numpy, OpenCV, the
suite) until a hook actually needs it. All run state lives in
``config.stash`` (see :mod:`pytest_violin.pytest_plugin.state`).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from ..report.text import printable
from ..results import SampleResult
from .state import STATE_KEY, dataset_lines, get_state, redact

# Hooks and options only: the parsed options live in settings.py, the run
# state (adapter, runner, samples, results) in state.py.

def pytest_addoption(parser):
    from .options import add_options

    add_options(parser)


def pytest_addhooks(pluginmanager):
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)
    if not pluginmanager.has_plugin("pytest_violin.pytest_plugin.fixtures"):
        pluginmanager.import_plugin("pytest_violin.pytest_plugin.fixtures")
    if not pluginmanager.has_plugin("pytest_violin.pytest_plugin.gate"):
        pluginmanager.import_plugin("pytest_violin.pytest_plugin.gate")



# --------------------------------------------------------------------------- configure
@pytest.hookimpl(tryfirst=True)  # before hypothesis's plugin loads --hypothesis-profile
def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "violin(tasks=None, limit=None, thresholds=None): select the Violin samples that the "
        "violin_sample fixture is parametrized over, and the limits violin_check applies",
    )
    state = get_state(config)  # parses and validates every option (UsageError on bad values)
    # Ctrl-C, SIGTERM and xdist workers, per session (see signals.py)
    from .signals import register as register_signals

    register_signals(config, state)
    if (state.settings.model or "hypothesis" in sys.modules
            or config.getoption("hypothesis_profile", None) == "violin"):
        # the "violin" settings profile for model-backed property tests; hypothesis
        # is not imported for runs that use neither it nor a model
        from ..hypothesis_profiles import load_for_model_run, register_profiles

        register_profiles()
        if state.settings.model and load_for_model_run(config.getoption("hypothesis_profile", None)):
            # model-backed property tests get the violin settings without a flag
            # (restored at unconfigure); --hypothesis-profile or a conftest's choice wins
            config.add_cleanup(_restore_hypothesis_profile)
    if not state.is_worker:
        config.pluginmanager.register(_ResultsCollector(state.store), "violin-results-collector")
    if not state.settings.model:
        return
    from .attachments import register as register_attachments

    register_attachments(config)  # failing items' images in pytest-html / Allure, when active
    state.use_profile_reader()  # profile violin reads every image file as cv2.imread does
    from ..errors import ThresholdError
    from ..thresholds import build_limits, parse_thresholds

    adapter = state.resolve_adapter(state.settings.model)
    state.identity = redact(str(getattr(adapter, "identity", state.settings.model)))
    state.network = bool(getattr(adapter, "network", False))
    state.placement = tuple(str(line) for line in getattr(adapter, "placement", ()) or ())
    from .planning import adapter_bills

    state.bills = adapter_bills(adapter, price=state.settings.price)
    _cap_calls(config, state)
    state.cacheable = bool(getattr(adapter, "cacheable", True))
    if state.is_xdist_controller:
        # the controller does not collect: it learns the plan from the first worker
        config.pluginmanager.register(_XdistControllerHooks(state), "violin-xdist-controller")
        # the spec is validated; the workers build their own adapters
        close = getattr(adapter, "close", None)
        if callable(close):
            close()
    else:
        state.adapter = state.counted(adapter)  # every call counted and capped where it is made
    state.scope = builtin_scope(config)
    named = state.scope.ids - {""} if state.scope.ids is not None else set()
    if named:
        # violin::ID names a sample whatever the ini selection (tasks, limit) says
        everything = state.load(None, None)
        unknown = sorted(named - {s.id for s in everything})
        if unknown:
            raise pytest.UsageError(
                f"violin::{printable(unknown[0])} is not a sample of suite {state.settings.suite!r}; "
                f"accepted: 'violin' or 'violin::ID' with an id that "
                f"'pytest --violin-model=oracle --collect-only -q' lists")
        chosen = named if "" not in state.scope.ids else named | {
            s.id for s in state.load(state.settings.tasks, state.settings.limit)}
        state.samples = [s for s in everything if s.id in chosen]
    elif state.scope.collect:
        state.samples = state.load(state.settings.tasks, state.settings.limit)
    else:
        state.samples = []
    state.samples = state.take_shard(state.samples, record=True)  # --violin-shard=K/N
    state.index = {s.id: i for i, s in enumerate(state.samples)}
    try:
        overrides = parse_thresholds(state.settings.thresholds, state.metric_table())
    except ThresholdError:
        # a threshold (e.g. from the ini file) may name a task of the suite that
        # --violin-tasks or a small --violin-limit left out of this run
        try:
            overrides = parse_thresholds(state.settings.thresholds,
                                         state.metric_table(state.load(None, None)))
        except ThresholdError as exc:
            raise pytest.UsageError(f"--violin-threshold: {exc}") from None
    state.limits = build_limits(overrides)


def _cap_calls(config, state) -> None:
    """Cap the calls this process makes (``--violin-max-calls``, ``--violin-max-cost``).

    An xdist worker shares the cap with the other workers through the claim
    folder the controller named in ``workerinput`` (see
    :class:`pytest_violin.execution.usage.SharedCalls`).
    """
    from .planning import call_cap

    state.usage.set_limit(*call_cap(state))
    folder = (getattr(config, "workerinput", None) or {}).get("violin_calls_dir")
    if folder and state.usage.limit is not None:
        from ..execution.usage import SharedCalls

        state.usage.shared = SharedCalls(folder)


class BuiltinScope(NamedTuple):
    """Whether this run collects the built-in ``violin::`` items, and which.

    Attributes
    ----------
    collect : bool
        Collect the built-in selection.
    ids : frozenset of str or None
        Only these sample ids (``""``: all of them), from ``violin`` /
        ``violin::ID`` arguments; None when none was given.
    reason : str
        Why, for the terminal header.
    """

    collect: bool
    ids: frozenset | None
    reason: str


#: Command-line options that ask for the built-in suite even beside a path.
_SELECTING_OPTIONS = ("--violin-suite", "--violin-tasks", "--violin-limit")


def builtin_scope(config) -> BuiltinScope:
    """Decide whether the built-in items run, following pytest's rule that paths narrow a run.

    They run when the command line names no file or directory (or only the
    rootdir or the ini ``testpaths``), when it gives ``--violin-suite``,
    ``--violin-tasks`` or ``--violin-limit`` itself (ini values choose *which*
    items, never *whether*), or when it names ``violin`` / ``violin::ID``.
    ``violin`` arguments are taken out of ``config.args``, so pytest does not
    look for a file of that name. Workers of pytest-xdist receive the same
    command line and reach the same decision.
    """
    given = [str(a) for a in config.invocation_params.args]
    asked = any(a == opt or a.startswith(opt + "=") for a in given for opt in _SELECTING_OPTIONS)
    ids = None
    invocation = Path(config.invocation_params.dir)
    roots = {Path(config.rootpath).resolve()}
    roots.update((Path(config.rootpath) / tp).resolve() for tp in config.getini("testpaths") or ())
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        rest = []
        for arg in config.args:
            if arg == "violin" and (invocation / "violin").exists():
                rest.append(arg)  # a file or folder of the project called "violin": pytest's
            elif arg == "violin" or arg.startswith("violin::"):
                ids = set() if ids is None else ids
                ids.add(arg.partition("::")[2])
            else:
                rest.append(arg)
        if ids is not None:
            config.args[:] = rest
            return BuiltinScope(True, frozenset(ids), "violin:: items named on the command line")
        paths = {Path(invocation, a.split("::")[0]).resolve() for a in rest}
        if paths and not paths <= roots:
            if asked:
                return BuiltinScope(True, None, "selected on the command line beside the paths")
            return BuiltinScope(False, None, "paths on the command line narrow the run to them; "
                                "add --violin-limit/--violin-tasks/--violin-suite or 'violin' to run the suite too")
    return BuiltinScope(True, None, "no path on the command line")


# Ctrl-C and SIGTERM: signals.SessionSignals, one per config. The first one
# sets that session's cancel event (no new request, retry or poll starts; the
# generations in flight are abandoned, daemon threads) and the reports are still
# written for what finished; a second one ends the process at once.


def _restore_hypothesis_profile():
    from ..hypothesis_profiles import restore_profile

    restore_profile()


def pytest_unconfigure(config):
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()


def pytest_report_header(config):
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.settings.model:
        return None
    s = state.settings
    n = len(state.samples or ())
    line = (f"violin: model={redact(s.model)} suite={s.suite} samples={n} profile={s.profile} "
            f"seed={s.seed} repeats={s.repeats}")
    if state.shard_meta is not None:
        line += f" shard={s.shard} (of {state.shard_meta['selected']} selected)"
    lines = [line, *dataset_lines(state), *(f"violin: {redact(p)}" for p in state.placement)]  # the official data: rows per task, skipped and why
    if state.scope is not None and not state.scope.collect:
        return lines + [f"violin: built-in samples not collected: {state.scope.reason}"]
    return lines


# --------------------------------------------------------------------------- collection
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.settings.model or not state.samples:
        return
    from .items import make_items

    new_items = make_items(session, state.samples, positions=state.positions)
    items.extend(new_items)
    # tell the terminal (and --lf bookkeeping) about them, like a collected module
    session.ihook.pytest_collectreport(
        report=pytest.CollectReport("violin", "passed", None, new_items))


def pytest_collection_finish(session):
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if (state is None or not state.settings.model or state.is_worker or state.is_xdist_controller
            or config.option.collectonly):
        return
    samples = [s for s in map(_planned_sample, session.items) if s is not None]
    announce_plan(config, state, samples)


class _XdistControllerHooks:
    """pytest-xdist hooks of the controller (registered only when xdist runs)."""

    def __init__(self, state):
        self.state = state
        self.announced = False
        self.calls_dir = None

    def pytest_configure_node(self, node):
        # the workers share the run's call cap through one folder of claims
        if self.state.usage.limit is None:
            return
        if self.calls_dir is None:
            import shutil
            import tempfile

            self.calls_dir = tempfile.mkdtemp(prefix="violin-calls-")
            self.state.config.add_cleanup(lambda: shutil.rmtree(self.calls_dir, ignore_errors=True))
        node.workerinput["violin_calls_dir"] = self.calls_dir

    def pytest_testnodedown(self, node, error):
        # what the worker counted (config.workeroutput, sent when it finished)
        self.state.usage.add_worker((getattr(node, "workeroutput", None) or {}).get("violin_usage"))


    def pytest_xdist_node_collection_finished(self, node, ids):
        if self.announced or self.state.config.option.collectonly:
            return
        self.announced = True
        # built-in items are "violin::<id>"; tests parametrized over violin_sample end in
        # "[<id>]" (see pytest_generate_tests); hypothesis tests cannot be counted ahead
        by_id = {s.id: s for s in self.state.load(None, None)}
        samples = []
        for nodeid in ids:
            if nodeid.startswith("violin::"):
                sample = by_id.get(nodeid[len("violin::"):])
            elif nodeid.endswith("]") and "[" in nodeid:
                sample = by_id.get(nodeid[nodeid.index("[") + 1:-1])
            else:
                sample = None
            if sample is not None:
                samples.append(sample)
        announce_plan(self.state.config, self.state, samples)


def announce_plan(config, state, samples, *, note: str = "") -> None:
    """Print the plan before the first generation; refuse a run over ``--violin-max-calls``
    or ``--violin-max-cost``.

    Raises
    ------
    pytest.UsageError
        When the uncached generations exceed the limit, or their estimated
        cost (``--violin-price``) exceeds ``--violin-max-cost`` (exit code 4).
    """
    from .planning import calls_note, cost_limit_message, plan_generations

    price, max_cost = state.settings.price, state.settings.max_cost
    plan = plan_generations(state, samples, price=price)
    limit = state.settings.max_calls
    bills = state.bills or price is not None
    if not state.settings.max_calls_given and bills:
        from .options import DEFAULT_NETWORK_MAX_CALLS

        limit = DEFAULT_NETWORK_MAX_CALLS
    from dataclasses import replace

    from .planning import reruns_note

    plan = replace(plan, reruns=reruns_note(config, cached=state.make_cache() is not None))
    plan = replace(plan, calls=calls_note(limit, given=state.settings.max_calls_given, bills=bills,
                                          network=state.network))
    if state.admit is not None:  # --violin-sequential: the caps end the gate, they refuse no run
        from .sequential import plan_note

        note, limit, max_cost = note + plan_note(limit, max_cost, config), None, None
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"violin plan: {plan.describe()}{note}")
    if limit is not None and plan.uncached > limit:
        raise pytest.UsageError(
            f"--violin-max-calls={limit}: this run plans {plan.uncached} uncached generations with "
            f"{plan.adapter} ({plan.samples} samples x {plan.repeats} repeats, {plan.cached} cached), "
            f"more than the limit; narrow it (--violin-limit=N, --violin-tasks=..., -k, a path) or "
            f"raise the limit (--violin-max-calls=N, 'none' for no limit)")
    too_dear = None if max_cost is None else cost_limit_message(plan, max_cost)
    if too_dear is not None:
        raise pytest.UsageError(too_dear)


def pytest_generate_tests(metafunc):
    if "violin_sample" not in metafunc.fixturenames:
        return
    from .fixtures import marker_selection

    state = get_state(metafunc.config)
    tasks, limit, _ = marker_selection(metafunc.definition, state)
    samples = state.take_shard(state.load(tasks, limit))
    metafunc.parametrize("violin_sample", samples, ids=[s.id for s in samples])


# --------------------------------------------------------------------------- running
def _planned_sample(item):
    sample = getattr(item, "violin_sample", None)
    if sample is not None:
        return sample
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "violin_generate" in getattr(item, "fixturenames", ()):
        value = callspec.params.get("violin_sample")
        # a shard may leave a test no sample: pytest then parametrizes it with NOTSET (skipped)
        return value if hasattr(value, "task") else None
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    state = session.config.stash.get(STATE_KEY, None)
    if state is None or state.is_worker or session.config.option.collectonly:
        return None
    samples = [s for s in map(_planned_sample, session.items) if s is not None]
    if samples:
        state.get_runner().plan(samples)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    state = item.config.stash.get(STATE_KEY, None)
    if state is None or not state.is_worker:
        return None
    # xdist worker: plan only items this worker has been given (see docs/plugin.md)
    window = [item, nextitem]
    dist = getattr(item.config.option, "dist", "load")
    if dist != "worksteal":
        queue = _worker_queue(state)
        if queue is not None:
            items = item.session.items
            # 2 x concurrency (2 x threads once a batching runner exists), never building one here
            runner = state.runner
            runner_window = (runner.window if runner is not None else 2 * state.settings.concurrency) + 2
            with queue.lock() as pending:
                head = list(itertools.islice(pending, runner_window))
            window.extend(items[i] for i in head if isinstance(i, int) and 0 <= i < len(items))
    samples = [s for s in map(_planned_sample, (w for w in window if w is not None)) if s is not None]
    if samples:
        state.get_runner().plan(samples)
    return None


def _worker_queue(state):
    if state.interactor is None:
        for plugin in state.config.pluginmanager.get_plugins():
            if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "torun"):
                state.interactor = plugin
                break
        else:
            state.interactor = False
    if not state.interactor:
        return None
    queue = getattr(state.interactor, "torun", None)
    return queue if hasattr(queue, "lock") else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    from .items import RESULT_KEY

    entry = item.stash.get(RESULT_KEY, None)
    if entry is not None and entry[0] == call.when:
        del item.stash[RESULT_KEY]
        outcome.get_result().violin_result = entry[1]
    state = item.config.stash.get(STATE_KEY, None)
    capped = state.usage.capped if state is not None else None
    sequential = state is not None and state.admit is not None  # the gate skips the rest itself
    if capped is not None and not item.session.shouldstop and not sequential:
        # a call past --violin-max-calls / --violin-max-cost was refused: stop here
        item.session.shouldstop = f"violin: {capped}; the run stops here"


class _ResultsCollector:
    """Fills the results store from reports (registered per config, not in workers)."""

    def __init__(self, store):
        self.store = store

    def pytest_runtest_logreport(self, report):
        text = getattr(report, "violin_result", None)
        if text and report.when in ("setup", "call"):
            self.store.add(SampleResult.from_json(text))


#: Seconds the end of a stopped run (``-x``, a cap) waits for calls in flight to end,
#: so the totals count what the server received; none after Ctrl-C.
_SETTLE_SECONDS = 5.0


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    stopped = (int(exitstatus) == int(pytest.ExitCode.INTERRUPTED) or bool(session.shouldstop)
               or bool(session.shouldfail) or state.cancel.is_set())
    if state.runner is not None:
        # after Ctrl-C or -x nothing waits for the generations still in flight
        state.runner.close(wait=not stopped)
        if stopped:
            state.cancel.set()
    if int(exitstatus) != int(pytest.ExitCode.INTERRUPTED):
        # the calls abandoned after -x end at once (cancelled): count them as they end
        state.usage.settle(_SETTLE_SECONDS)
    if hasattr(config, "workerinput") and hasattr(config, "workeroutput"):
        config.workeroutput["violin_usage"] = state.usage.snapshot(local=True)
    if hasattr(config, "workerinput"):
        return
    if len(state.store) or state.settings.model:
        config.hook.pytest_violin_session_results(config=config, store=state.store)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):
        return
    state = config.stash.get(STATE_KEY, None)
    if state is None or not len(state.store):
        return
    from ..report.terminal import write_summary

    write_summary(terminalreporter, state.store, settings=state.settings, price=state.settings.price,
                  usage=state.usage.snapshot() if state.settings.model else None)
