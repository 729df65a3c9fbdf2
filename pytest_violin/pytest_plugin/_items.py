"""The built-in Violin samples: which of them run, and as pytest items."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import NamedTuple

import pytest

from ..errors import ViolinFailure, ViolinWarning
from ..report.text import printable
from ..judging import judge_generation
from ..results import Outcome
from ._options import resolve_path

__all__ = ["RESULT_KEY", "BuiltinScope", "ViolinItem", "ViolinSuite", "builtin_scope", "dataset_lines", "load_suite",
           "is_violin", "make_items", "official_dataset"]


class ViolinSuite(pytest.Collector):
    """The parent node of every Violin item (node id ``violin``)."""

    def collect(self):  # pragma: no cover - items are created directly by make_items
        return []

    def reportinfo(self):
        return self.path, None, "violin"


#: ``item.stash`` key: ``(phase, result JSON)`` of the item's sample, attached
#: to the report of that phase (``setup`` for an error, ``call`` otherwise).
RESULT_KEY = pytest.StashKey[tuple]()


class ViolinItem(pytest.Item):
    """One Violin sample as a test."""

    def __init__(self, *, sample, index: int, violin_session, **kwargs):
        super().__init__(**kwargs)
        self.violin_session = violin_session
        self.violin_sample = sample
        self.violin_index = index
        self.extra_keyword_matches.update(
            k for k in (sample.task, getattr(sample, "variation", None), getattr(sample, "suite", None)) if k
        )
        self._violin_result = None

    def setup(self):
        state = self.violin_session
        sample = self.violin_sample
        runner = state.get_runner()
        sequential = state.sequential
        unneeded = sequential.skip_reason(sample) if sequential is not None else None
        if unneeded is not None and runner.withdraw(sample):
            pytest.skip(unneeded)  # nothing was sent for it: not run, never passed
        generation = runner.get(sample)
        take = getattr(state.adapter, "take_notices", None)
        for note in take() if callable(take) else ():  # found in a generation thread: said here, once
            # recorded as pytest's warnings plugin records one (the first item's setup may run
            # outside its catch_warnings: a warnings.warn there goes to the captured stderr)
            message = warnings.WarningMessage(ViolinWarning(printable(note)), ViolinWarning, __file__, 0)
            self.ihook.pytest_warning_recorded.call_historic(kwargs=dict(
                warning_message=message, when="runtest", nodeid=self.nodeid, location=None))
        if generation.capped and sequential is not None:  # the sequential gate ends undecided at the cap
            sequential.spend(self, generation.fault)
            pytest.skip(f"not generated: {printable(generation.fault)}")
        stop = runner.stop_reason
        if stop is not None and not self.session.shouldstop:
            # pytest stops after this item; thousands of identical failures would cost minutes and say nothing more
            # (docs/plugin.md, "Stopping a run that fails the same way")
            self.session.shouldstop = f"violin: {printable(stop)}; the run stops here"
        result, images = judge_generation(sample, generation, state.settings, state.limits, index=self.violin_index)
        del generation
        result.adapter = state.identity
        state.gate.sample_scored(state, sample, images, result)
        self.config.hook.pytest_violin_sample_scored(  # other plugins' (attachments among them)
            config=self.config, sample=sample, images=images, result=result)
        del images
        message = result.message or f"violin sample {sample.id} {result.outcome}"
        rerun = int(getattr(self, "execution_count", 1) or 1) - 1  # set by pytest-rerunfailures
        if rerun > 0 and result.cached:
            # a rerun reuses the image (no model call) and so scores the same image again
            result.extra["rerun_from_cache"] = rerun
            message += (f"\n\nnote: rerun {rerun}: the image came from the cache, no model call was made; "
                        f"the rerun scores the same image (--violin-no-cache makes a rerun call the model again)")
        for name, value in result.metrics.items():
            self.user_properties.append((f"violin.{name}", round(float(value), 6)))
        if result.error is not None:
            self.user_properties.append(("violin.error", result.error))
        known = None
        if result.outcome.failing:  # against a baseline: known, new, or a failure
            known = state.gate.known_failure(sample.id, result.definition, result.metrics.get("mean"))
        self._violin_result = (result.outcome, message, known)
        if result.outcome is Outcome.ERROR:
            self.stash[RESULT_KEY] = ("setup", result.to_json())
            pytest.fail(printable(message), pytrace=False)
        self.stash[RESULT_KEY] = ("call", result.to_json())

    def runtest(self):
        outcome, message, known = self._violin_result
        if outcome is not Outcome.PASSED and known is not None:
            # with a baseline, a sample over its limits fails the run only through the gate
            pytest.xfail(printable(f"{known}\n{message}"))
        if outcome is not Outcome.PASSED:
            raise ViolinFailure(message)

    def teardown(self):
        self._violin_result = None

    def repr_failure(self, excinfo, style=None):
        # pytest formats a traceback for an xfail too (about 0.1 s, reading the source of every
        # frame) and then shows only its reason: against a baseline most samples of a real model
        # are known failures, so that would be most of a run's time
        if isinstance(excinfo.value, (ViolinFailure, pytest.xfail.Exception)):
            return printable(str(excinfo.value))
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        # a line number (0: the samples have no source line): pytest's skip and xfail markers
        # point their reports at it, and a None there is an INTERNALERROR
        return self.path, 0, f"violin::{printable(self.violin_sample.id)}"


def is_violin(item) -> bool:
    """A built-in ``violin::`` item (the fixtures' tests are not ordered by the sequential gate)."""
    return getattr(item, "violin_sample", None) is not None and item.nodeid.startswith("violin::")


def make_items(session, vs) -> list[ViolinItem]:
    """Build the collector and one item per sample of ``vs`` (the run's session; in suite order); a
    shard's samples are numbered by their place in the whole selection, as one run numbers them."""
    samples, positions = vs.samples, vs.positions or {}
    parent = ViolinSuite.from_parent(session, name="violin", nodeid="violin", path=session.config.rootpath)
    items = []
    for index, sample in enumerate(samples):
        items.append(ViolinItem.from_parent(
            parent, name=sample.id, nodeid=f"violin::{sample.id}", sample=sample,
            index=positions.get(sample.id, index), violin_session=vs))
    return items


class BuiltinScope(NamedTuple):
    """Whether this run collects the built-in ``violin::`` items, and which."""

    collect: bool
    ids: frozenset | None
    reason: str


#: Command-line options that ask for the built-in suite even beside a path.
_SELECTING_OPTIONS = ("--violin-suite", "--violin-tasks", "--violin-limit")


def builtin_scope(config) -> BuiltinScope:
    """Decide whether the built-in items run, following pytest's rule that paths narrow a run."""
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


def load_suite(settings, tasks, limit, config):
    """Load a selection of the configured suite; a bad suite, task or file is a usage error."""
    from ..errors import SuiteError
    from ..suite import SUITES, load_suite as load
    name = settings.suite
    target = name
    candidate = resolve_path(config, name, from_ini=settings.suite_from_ini)
    # any name that is not a built-in suite is a path: relative to the ini
    # file when it comes from there (an export folder has no '/' in its name)
    if name not in SUITES and candidate.exists():
        target = str(candidate)
    try:
        return load(target, tasks=tasks, limit=limit, seed=settings.seed,
                          metadata=settings.metadata)
    except (SuiteError, ValueError, OSError) as exc:
        opt = f"--violin-suite={name!r}"
        if tasks:
            opt += f" --violin-tasks={','.join(tasks)!r}"
        if limit is not None:
            opt += f" --violin-limit={limit}"
        raise pytest.UsageError(f"{opt}: {exc}") from None


def official_dataset(state) -> dict | None:
    """What the run's official data is (``load_suite(...).dataset``), or None for other suites."""
    from ..suite import SUITES
    if state is None or state.settings.suite in SUITES:
        return None
    found = getattr(state.samples, "dataset", None)
    if found:
        return found
    from ..suite.official import is_official_source
    name = state.settings.suite
    if not (name.startswith("hf:") or is_official_source(
            resolve_path(state.config, name, from_ini=state.settings.suite_from_ini))):
        return None  # a manifest: not loaded again just to learn it is none
    try:
        return getattr(state.load(None, None), "dataset", None) or None
    except pytest.UsageError:
        return None


def dataset_lines(state) -> list:
    """``violin: official data ...`` lines: what the official data loaded (none for other suites)."""
    dataset = official_dataset(state)
    if not dataset:
        return []
    from ..suite.official import describe_dataset
    return [f"violin: {text}" for text in describe_dataset(dataset)]
