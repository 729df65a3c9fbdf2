"""pytest hooks for baselines, regression gating and report files.

Registered by :mod:`pytest_violin.pytest_plugin.plugin` (``pluginmanager.import_plugin``).
Options (each also an ini key of the same name with ``_`` for ``-``):

``--violin-save-baseline=PATH``
    write the run's baseline (controller only, after the run, atomically).
``--violin-baseline=PATH``
    compare the run with a baseline; credible regressions fail the session.
``--violin-max-regression=FLOAT``
    smallest worsening of a mean metric that counts (default 0.01).
``--violin-report=DIR``
    write ``results.json``, ``report.html`` and ``summary.md`` into DIR.

The pure logic is in :mod:`pytest_violin.gating` and
:mod:`pytest_violin.report`; this module only wires it to pytest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from .compare_runs import build_runs_comparison, load_compare_runs
from .known_failures import INDEX_INPUT, SendIndex, baseline_index
from .settings import GateSettings, ViolinSettings, parse_gate_settings
from .sharding import baseline_note, gate_note, shard_meta
from .state import STATE_KEY

__all__ = ["GATE_KEY", "GateSettings", "GateState", "PASSING_THUMBNAILS_PER_VARIATION",
           "parse_gate_settings"]

#: Passing samples per (task, variation) and process whose generated image is
#: shown in the HTML report. Every failing sample gets its thumbnails; a
#: passing one looks like its expected image by definition, so a few examples
#: per variation show what the model draws without paying for thousands.
PASSING_THUMBNAILS_PER_VARIATION = 12

@dataclass
class GateState:
    """What the gate learns during one session (its options are the frozen :class:`GateSettings`)."""

    settings: GateSettings
    baseline_doc: dict | None = None
    #: sample id -> ``(outcome, definition, mean)`` in the baseline: what a failing sample is
    #: (known, new) in every process (the controller sends it to xdist workers)
    baseline_index: dict | None = None
    #: ``(records, baseline document)`` of this run once the comparison is made (at the end of
    #: the test loop, or at the session's end after an interruption)
    decided: tuple | None = None
    gate_failed: bool = False  # violin::gate was reported failed (its text is in FAILURES)
    comparison: object = None
    exitstatus: int | None = None
    interrupted: bool = False
    session: object = None
    messages: list = field(default_factory=list)
    passing_thumbnails: dict = field(default_factory=dict)
    compare_runs: list = field(default_factory=list)  # --violin-compare: loaded Runs
    compare_paper: bool = False  # --violin-compare=paper
    runs_comparison: object = None  # compare.model.Comparison of this run and compare_runs
    sequential: dict | None = None  # --violin-sequential: the gate's summary (gating.sequential)

    # the options, read through the state for brevity
    save_baseline = property(lambda self: self.settings.save_baseline)
    baseline = property(lambda self: self.settings.baseline)
    baseline_label = property(lambda self: self.settings.baseline_label)
    max_regression = property(lambda self: self.settings.max_regression)
    report = property(lambda self: self.settings.report)
    active = property(lambda self: self.settings.active or bool(self.compare_runs or self.compare_paper))


GATE_KEY = pytest.StashKey[GateState]()

#: Node id of the gate's own test, reported after the last sample (its failure is the gate's).
GATE_NODEID = "violin::gate"


def _new_state(config) -> GateState:
    state = GateState(parse_gate_settings(config))
    worker = getattr(config, "workerinput", None)
    if state.baseline is not None and worker is None:
        from ..errors import BaselineError
        from ..gating import read_baseline

        try:
            state.baseline_doc = read_baseline(state.baseline)
        except BaselineError as exc:
            raise pytest.UsageError(f"--violin-baseline={state.baseline_label!r}: {exc}") from None
        state.baseline_index = baseline_index(state.baseline_doc)
    elif worker is not None and worker.get(INDEX_INPUT) is not None:
        state.baseline_index = {str(k): tuple(v) for k, v in worker[INDEX_INPUT].items()}
    if worker is None:
        load_compare_runs(config, state)
    return state


def _settings(config) -> GateState | None:
    return config.stash.get(GATE_KEY, None)


def pytest_configure(config):
    config.stash[GATE_KEY] = state = _new_state(config)
    if state.baseline_index and config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(SendIndex(state.baseline_index), "violin-gate-index")
    if state.settings.sequential:  # the samples in a seeded order, no more once decided (sequential.py)
        from .sequential import register

        register(config, state)


# --------------------------------------------------------------------------- per sample (any process)


def pytest_violin_sample_scored(config, sample, images, result):
    s = _settings(config)
    if s is None or not s.active:
        return
    from ..gating.records import sample_definition

    result.extra["definition"] = sample_definition(sample)
    if hasattr(config, "workerinput"):
        identity = _adapter_identity(config)
        if identity:
            result.extra["adapter"] = identity
    if s.report is not None:
        from ..report.thumbnails import make_thumbnails

        if result.outcome == "passed":
            group = (sample.task, getattr(sample, "variation", None))
            shown = s.passing_thumbnails.get(group, 0)
            if shown >= PASSING_THUMBNAILS_PER_VARIATION:
                return
            s.passing_thumbnails[group] = shown + 1
        try:
            # The ground truth is rendered again only for failures: a passing
            # sample's difference is near black, and rendering costs more
            # than everything else the report does (see docs/reports.md).
            expected = sample.expected() if result.outcome != "passed" else None
            # the mask task's source image and mask beside expected and generated
            inputs = getattr(sample, "inputs", ()) if expected is not None else ()
            result.extra["thumbnails"] = make_thumbnails(expected, images[0] if images else None,
                                                         inputs=inputs)
        except Exception as exc:  # a thumbnail must never fail a test
            result.extra["thumbnails_error"] = f"{type(exc).__name__}: {exc}"


def _adapter_identity(config) -> str | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    return state.identity or None


# --------------------------------------------------------------------------- session end (controller)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Remember how the session ended before the results hook runs."""
    s = _settings(session.config)
    if s is None:
        return
    s.session = session
    s.exitstatus = int(exitstatus)
    s.interrupted = (int(exitstatus) == int(pytest.ExitCode.INTERRUPTED)
                     or bool(session.shouldstop) or bool(session.shouldfail))


def _run_metadata(config, store, s: GateState) -> dict:
    state = config.stash.get(STATE_KEY, None)
    settings = state.settings if state is not None else ViolinSettings()
    identity = _adapter_identity(config)
    if identity is None:
        for r in store.results:
            identity = (r.extra or {}).get("adapter")
            if identity:
                break
    if identity is None and settings.model:
        from ..redaction import redact

        identity = redact(settings.model)
    from .. import __version__

    from .state import official_dataset

    dataset = official_dataset(state)
    return {
        **({"dataset": dataset} if dataset else {}),
        "suite": str(settings.suite),
        "profile": str(settings.profile),
        "seed": int(settings.seed),
        "repeats": int(settings.repeats),
        "pass_rule": str(settings.pass_rule),
        "adapter": str(identity or "unknown"),
        "package_version": __version__,
    }


def _decide(config, store) -> tuple:
    """Make this run's comparison (once): ``(results, current)``, ``s.comparison`` set.

    Called at the end of the test loop, so that the gate's verdict is a test report of its own
    (:func:`_report_gate`), and again at the session's end (a no-op then, unless the loop was
    interrupted before it).
    """
    s = _settings(config)
    if s.decided:
        return s.decided
    from ..report.json_report import records_of
    from ..gating import build_baseline, compare

    results = records_of(store.results)  # plain dicts, converted once for every writer
    meta = _run_metadata(config, store, s)
    extra = {"repeats": meta.pop("repeats"), "pass_rule": meta.pop("pass_rule")}
    if "dataset" in meta:  # the official data's identity, kept in the baseline too
        extra["dataset"] = meta.pop("dataset")
    from .sequential import get_run

    run = get_run(config)
    if run is not None and run.gate is not None:  # what decided, its intervals, what it saved
        state = config.stash.get(STATE_KEY, None)
        s.sequential = extra["sequential"] = run.summary(price=state.settings.price if state else None)
    current = build_baseline(results, extra_metadata=extra, **meta)
    s.decided = (results, current)
    if (s.compare_runs or s.compare_paper) and results:
        build_runs_comparison(s, results, current)
    if s.baseline_doc is not None and not results:
        # e.g. `pytest tests/test_brand.py`: a path narrowed the run to the team's own tests
        s.messages.append(f"baseline {s.baseline_label or s.baseline} not compared: no Violin sample "
                          f"ran in this session")
    elif s.baseline_doc is not None and shard_meta(config):  # the merged run is gated (sharding.py)
        s.messages.append(gate_note(s.baseline_label or s.baseline, shard_meta(config)))
    elif s.baseline_doc is not None:
        settings = s.settings
        s.comparison = compare(s.baseline_doc, current, max_regression=settings.max_regression,
                               max_pass_drop=settings.max_pass_drop, alpha=settings.alpha,
                               allow_mismatch=settings.allow_mismatch,
                               population=_population(run, results, s.baseline_doc),
                               baseline_path=s.baseline_label or str(s.baseline))
        _sequential_verdict(s)
        from ..gating.baseline import dataset_change

        changed = dataset_change(s.baseline_doc.get("metadata", {}), current["metadata"])
        if changed:
            s.messages.append(changed)
    return results, current


def _population(run, results, baseline):
    """A sequential run's overlap with the baseline, per task the baseline has: ``(in the
    population, in the run)`` (the samples the gate did not need count, they were not
    generated); None otherwise. A task the baseline lacks is judged by its limits."""
    if run is None or run.gate is None:
        return None
    from collections import Counter

    members = run.gate.members
    shared = Counter(m.task for m in members.values())
    in_run = Counter(shared)
    in_run.update(str(r.get("task")) for r in results if str(r.get("id")) not in members)
    known = {str(r.get("task")) for r in baseline.get("samples") or ()}
    return {task: (shared.get(task, 0), n) for task, n in in_run.items() if task in known}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    """After the last sample (and every xdist worker's report): the gate decides, and its
    verdict is reported as the test ``violin::gate``, so pytest's summary, JUnit, pytest-html and
    a CI system's test view show a regression as a failed test (as pytest-mypy's status item)."""
    outcome = yield
    config = session.config
    s = _settings(config)
    if (s is None or s.baseline_doc is None or hasattr(config, "workerinput") or outcome.excinfo is not None
            or config.option.collectonly or session.shouldstop or session.shouldfail):
        return
    state = config.stash.get(STATE_KEY, None)
    if state is None or not len(state.store):
        return
    _decide(config, state.store)
    if s.comparison is not None:
        _report_gate(session, s)


def _report_gate(session, s: GateState) -> None:
    from ..report.sequential import sequential_lines
    from ..report.terminal import comparison_lines
    from ..report.text import printable

    lines = sequential_lines(s.sequential) + comparison_lines(s.comparison)
    text = printable("\n".join(line for line, _ in lines))
    location = (GATE_NODEID.partition("::")[0], 0, GATE_NODEID)
    ok = s.comparison.ok
    report = pytest.TestReport(
        nodeid=GATE_NODEID, location=location, keywords={"violin": 1}, when="call",
        outcome="passed" if ok else "failed", longrepr=None if ok else text,
        # a green gate's words reach JUnit's system-out and -rP; a red one's are its failure
        sections=[("violin regression gate", text)] if ok else [],
        duration=0.0, user_properties=[("violin.gate", "passed" if ok else "failed")])
    s.gate_failed = not ok
    session.testscollected += 1  # the gate is one more test: the progress stays at 100%
    hook = session.config.hook
    hook.pytest_runtest_logstart(nodeid=GATE_NODEID, location=location)
    hook.pytest_runtest_logreport(report=report)
    hook.pytest_runtest_logfinish(nodeid=GATE_NODEID, location=location)


def pytest_violin_session_results(config, store):
    s = _settings(config)
    if s is None or not s.active:
        return
    from ..errors import BaselineError
    from ..gating import write_baseline

    results, current = _decide(config, store)
    if s.comparison is not None:
        _fail_on_regressions(s)
    if s.save_baseline is not None:
        if s.interrupted:
            s.messages.append(f"baseline NOT written to {s.save_baseline}: the run was interrupted "
                              f"({len(results)} samples ran); a partial baseline would gate on a subset")
        elif not results:
            s.messages.append(f"baseline NOT written to {s.save_baseline}: no Violin sample ran")
        else:
            try:
                write_baseline(s.save_baseline, current)
                s.messages.append(f"baseline of {len(results)} samples written to {s.save_baseline}")
                if shard_meta(config):
                    s.messages.append(baseline_note(shard_meta(config)))
                if s.sequential is not None and s.sequential.get("samples_not_generated"):
                    s.messages.append(f"that baseline is a sequential run's: the "
                                      f"{s.sequential['samples_not_generated']} samples the gate did not "
                                      f"need are not in it; gate later runs against a full run's baseline")
            except BaselineError as exc:
                from pathlib import Path

                kept = (f"; the file at {s.save_baseline} is an EARLIER run's baseline (not replaced)"
                        if Path(s.save_baseline).is_file() else "")
                s.messages.append(f"baseline NOT written: {exc}{kept}; the session fails")
                _fail_unwritten(s)
    if s.report is not None:
        state = config.stash.get(STATE_KEY, None)
        _write_reports(s, results, current, price=state.settings.price if state is not None else None,
                       counted=state.usage.snapshot() if state is not None and state.settings.model else None,
                       shard=shard_meta(config))


def _write_reports(s: GateState, results, current, *, price=None, counted=None, shard=None) -> None:
    from ..report.html import write_html
    from ..report.json_report import THUMBNAILS_FILE, write_results_json, write_thumbnails_json
    from ..report.markdown import write_summary

    meta = dict(current["metadata"])
    meta["interrupted"] = s.interrupted
    if s.interrupted:
        from .signals import stop_reason

        meta["stop_reason"] = stop_reason(s.session)
    if s.baseline is not None:
        meta["baseline"] = s.baseline_label or str(s.baseline)
    # what the run cost: generations made (cache hits apart) and, with
    # --violin-price, their estimated cost; not in the baseline (a re-run
    # from the cache costs nothing and must give the same baseline)
    from ..report.json_report import run_usage

    # counted: the calls made, where they were made (reruns, -x, repeats, fixtures)
    meta.update(run_usage(results, price=price, counted=counted))
    if shard is not None:
        meta["shard"] = dict(shard)  # which part of which selection: merge checks them
    kwargs = {"metadata": meta, "comparison": s.comparison, "aggregates": current["aggregates"]}
    written: list = []
    try:
        s.report.mkdir(parents=True, exist_ok=True)
        write_results_json(s.report / "results.json", results, **kwargs)
        written.append("results.json")
        write_thumbnails_json(s.report / THUMBNAILS_FILE, results)
        written.append(THUMBNAILS_FILE)
        write_summary(s.report / "summary.md", results, runs_comparison=s.runs_comparison, **kwargs)
        written.append("summary.md")
        write_html(s.report / "report.html", results, runs_comparison=s.runs_comparison, **kwargs)
        s.messages.append(f"reports written to {s.report} (results.json, report.html, summary.md, "
                          f"{THUMBNAILS_FILE})")
    except OSError as exc:
        s.messages.append(f"reports NOT written to {s.report}: {exc}; "
                          + _drop_stale_reports(s.report, written, THUMBNAILS_FILE)
                          + "; the session fails")
        _fail_unwritten(s)


def _drop_stale_reports(folder, written, thumbnails_file: str) -> str:
    """Remove the earlier run's report files this run did not replace; say what happened.

    Every file is written atomically, so each is whole, but a folder holding
    this run's results.json beside the last run's report.html (or only the last
    run's files) would pass for this run's reports.
    """
    names = ("results.json", thumbnails_file, "summary.md", "report.html")
    missing = [n for n in names if n not in written]
    removed, kept = [], []
    for name in missing:
        path = folder / name
        try:
            if path.is_file():
                path.unlink()
                removed.append(name)
        except OSError:
            kept.append(name)
    parts = ["not written: " + ", ".join(missing)]
    if written:
        parts.append("written: " + ", ".join(written))
    if removed:
        parts.append("the earlier run's " + ", ".join(removed) + " removed (not this run's)")
    if kept:
        parts.append("the earlier run's " + ", ".join(kept) + " could NOT be removed: they are "
                     "not this run's")
    return "; ".join(parts)


def _fail_unwritten(s: GateState) -> None:
    """A report or baseline that could not be written fails an otherwise green session (exit 1):
    a gate whose evidence is missing must not pass."""
    session = s.session
    if session is not None and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _sequential_verdict(s: GateState) -> None:
    """Put what the run's end says into the comparison: who decided (a decided sequential gate's
    verdict is the gate's), and why the baseline samples this run lacks were not run."""
    from dataclasses import replace

    from ..report.sequential import decided

    seq, changes = s.sequential, {}
    if decided(seq):
        changes["decided_by"] = "sequential"
        changes["sequential_regressions"] = tuple(g["group"] for g in seq.get("groups", ())
                                                  if g.get("status") == "regressed")
    if s.interrupted:
        changes["unrun_reason"] = "the run was interrupted before"
    elif decided(seq):
        changes["unrun_reason"] = "the sequential gate (--violin-sequential) did not need"
    elif seq is not None:
        changes["unrun_reason"] = f"the sequential gate ended undecided ({seq.get('finished')}) before"
    if changes:
        s.comparison = replace(s.comparison, **changes)


def _fail_on_regressions(s: GateState) -> None:
    """Make an otherwise green session exit non-zero when the gate is not green.

    A regression, or a baseline sample that ended in an error, fails the
    session (exit 1); a baseline that shares no comparable sample with the run,
    or too few to decide (:attr:`Comparison.too_few`), is a usage error (exit 4).
    """
    session = s.session
    if session is None or s.comparison is None or s.comparison.ok:
        return
    c = s.comparison
    # a regression shown on few samples is shown (the error rate holds at any size); only a
    # gate that found none on too few samples cannot say "not worse"
    undecided = (c.compared == 0 or c.undecidable) and not c.regressed_groups and not (
        c.decided_by == "sequential" and c.sequential_regressions)
    # ... and exit 4 says so, unless tests of the team's own failed too (they keep exit 1)
    others_failed = session.testsfailed > (1 if s.gate_failed else 0)
    if undecided and not c.errored and not s.interrupted and not others_failed:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    elif session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    s = _settings(config)
    if s is not None and s.runs_comparison is not None and not hasattr(config, "workerinput"):
        from ..compare.formats import render

        terminalreporter.section("violin comparison")
        for line in render(s.runs_comparison, "terminal").splitlines():
            terminalreporter.write_line(line)
    if s is None or hasattr(config, "workerinput") or not (s.comparison is not None or s.messages):
        return
    from ..report.terminal import comparison_lines

    terminalreporter.section("violin regression gate" if s.comparison is not None else "violin reports")
    styles = {"bad": {"red": True, "bold": True}, "good": {"green": True}, "warn": {"yellow": True},
              "info": {}}
    from ..report.sequential import sequential_lines

    if s.gate_failed and config.option.tbstyle != "no":
        # the verdict and its table are the failure of violin::gate, shown above
        lines = [(f"FAILED: see {GATE_NODEID} above", "bad")]
    else:
        lines = sequential_lines(s.sequential)
        if s.comparison is not None:  # a decided sequential gate: the facts only, not a second verdict
            lines += comparison_lines(s.comparison)
    lines += [(m, "info") for m in s.messages]
    from ..report.text import printable

    for text, level in lines:
        terminalreporter.write_line(printable(text), **styles.get(level, {}))
