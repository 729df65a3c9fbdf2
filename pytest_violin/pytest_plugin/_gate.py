"""The regression gate, the baseline and the report files of one run: a part of the session."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..report.text import printable
from ._options import GateSettings

if TYPE_CHECKING:
    from ..compare.model import Comparison as RunsComparison
    from ..compare.model import Run
    from ..gating.decide import GateVerdict

__all__ = ["GATE_NODEID", "INDEX_INPUT", "GateState"]


#: Node id of the gate's own test, reported after the last sample (its failure is the gate's).
GATE_NODEID = "violin::gate"

#: ``workerinput`` key: the baseline's outcomes (:meth:`GateState.index_of`), sent to xdist workers.
INDEX_INPUT = "violin_baseline_outcomes"

_STYLES = {"bad": {"red": True, "bold": True}, "good": {"green": True}, "warn": {"yellow": True}, "info": {}}


@dataclass(eq=False)
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
    verdict: GateVerdict | None = None  # the gate's decision (gating.decide)
    gate_failed: bool = False  # violin::gate was reported failed (its text is in FAILURES)
    interrupted: bool = False
    #: built-in samples the run planned (the early check counted them): a stopped run says it is not judged
    planned: int = 0
    #: why a stopped run is not judged (violin::gate reported skipped); None when it ran to its end
    not_judged: str | None = None
    messages: list = field(default_factory=list)
    passing_thumbnails: dict = field(default_factory=dict)
    compare_runs: list[Run] = field(default_factory=list)  # --violin-compare: loaded runs
    compare_paper: bool = False  # --violin-compare=paper
    runs_comparison: RunsComparison | None = None  # this run beside compare_runs
    sequential: dict | None = None  # --violin-sequential: the gate's summary (gating.sequential)

    @classmethod
    def load(cls, config, settings: GateSettings) -> GateState:
        """The gate of ``config``: its baseline read (the controller's, or the outcomes an xdist
        worker was sent) and its ``--violin-compare`` runs loaded; a bad file is a usage error."""
        state = cls(settings)
        worker = getattr(config, "workerinput", None)
        if settings.baseline is not None and worker is None:
            from ..errors import BaselineError
            from ..gating import read_baseline
            try:
                state.baseline_doc = read_baseline(settings.baseline)
            except BaselineError as exc:
                raise pytest.UsageError(f"--violin-baseline={settings.baseline_label!r}: {exc}") from None
            state.baseline_index = state.index_of(state.baseline_doc)
        elif worker is not None and worker.get(INDEX_INPUT) is not None:
            state.baseline_index = {str(k): tuple(v) for k, v in worker[INDEX_INPUT].items()}
        if worker is None:
            state._load_compare_runs(config)
        return state

    @staticmethod
    def index_of(doc) -> dict:
        """Sample id -> ``(outcome, definition, mean)`` of a baseline document."""
        from ..results import sample_value
        return {str(r["id"]): (str(r.get("outcome")), r.get("definition"),
                               float(sample_value(r.get("metrics") or {})))
                for r in doc.get("samples") or ()}

    def _load_compare_runs(self, config) -> None:
        """Load every ``--violin-compare=RUN`` now: a bad RUN is a usage error before any sample runs."""
        if not self.settings.compare:
            return
        from ..compare.runs import load_run
        from ..errors import ViolinError
        for spec in self.settings.compare:
            if spec == "paper":
                self.compare_paper = True
                continue
            path = spec if spec.startswith("dir:") else str(config.invocation_params.dir / spec)
            try:
                self.compare_runs.append(load_run(path))
            except ViolinError as exc:
                raise pytest.UsageError(f"--violin-compare={spec!r}: {exc}") from None

    def check_comparable(self, vs, samples) -> None:
        """Refuse, before the first generation, a baseline this run's built-in ``samples`` cannot be
        compared with (a usage error, as the gate's verdict would be after every paid generation): another
        suite, profile or seed, or too few comparable shared samples (docs/gating.md, "Enough overlap to
        decide"); ``--violin-allow-mismatch`` lets all but an empty overlap through, to be decided."""
        samples = list({s.id: s for s in samples}.values())
        self.planned = len(samples)
        doc = self.baseline_doc
        if doc is None or vs.shard_meta or not samples:  # a shard is gated once merged (_sharding.py)
            return
        from collections import Counter

        from ..gating.comparison import too_few as too_few_tasks
        from ..gating.records import sample_definition
        from ..gating.sequential import population
        from ..report._gate_words import mismatch_line
        meta, s = doc.get("metadata") or {}, vs.settings
        differences = [(key, meta[key], now) for key, now in
                       (("suite", str(s.suite)), ("profile", str(s.profile)), ("seed", int(s.seed)))
                       if key in meta and meta[key] != now]
        definitions = {x.id: sample_definition(x) for x in samples}
        members = population(doc, ((x.id, x.task, getattr(x, "variation", None), definitions[x.id])
                                   for x in samples))
        too_few = too_few_tasks(Counter(m.task for m in members.values()), Counter(str(x.task) for x in samples),
                                {str(r.get("task")) for r in doc.get("samples") or ()})
        if members and (self.settings.allow_mismatch or not (differences or too_few)):
            return
        fingerprints = None
        old = {str(r.get("id")): r.get("definition") for r in doc.get("samples") or ()}
        if any(sid not in old or old[sid] not in (None, "", definition) for sid, definition in definitions.items()):
            from ..gating.records import suite_fingerprint
            fingerprints = (str(meta.get("fingerprint", "")), suite_fingerprint(definitions.items()))
        from ..gating.baseline import dataset_change
        raise pytest.UsageError(mismatch_line(
            self._label(), differences=differences, too_few=too_few,
            nothing_shared=0 if members else len(samples), fingerprints=fingerprints,
            data=dataset_change(meta, vs.run_metadata())))

    @property
    def active(self) -> bool:
        """True when the run has a baseline, a report or a comparison to make."""
        return self.settings.active or bool(self.compare_runs or self.compare_paper)

    def worker_input(self) -> dict:
        """What an xdist worker is sent: the baseline's outcomes (known and new failures)."""
        if not self.baseline_index:
            return {}
        return {INDEX_INPUT: {k: list(v) for k, v in self.baseline_index.items()}}

    # ----------------------------------------------------------------------- per sample (any process)
    def sample_scored(self, vs, sample, images, result) -> None:
        """Put what the files and the gate need into ``result.extra``: the sample's definition,
        the adapter (xdist workers) and the report's thumbnails."""
        if not self.active:
            return
        from ..gating.records import sample_definition
        result.definition = sample_definition(sample)
        if vs.is_worker and vs.identity:
            result.adapter = vs.identity
        if self.settings.report is not None:
            from ..report.folder import attach_thumbnails

            attach_thumbnails(result, sample, images, self.passing_thumbnails)

    def known_failure(self, sample_id: str, definition, mean) -> str | None:
        """``known failure`` or ``new failure`` text of a sample over its limits; None: it fails."""
        entry = None if not self.baseline_index else self.baseline_index.get(str(sample_id))
        if entry is None:
            return None
        from ..results import Outcome
        outcome, old_definition, old_mean = entry
        outcome = Outcome(outcome)
        if not outcome.judged or (definition and old_definition and definition != old_definition):
            return None
        now = "" if mean is None else f"mean {float(mean):.4f} now, "
        if outcome.failing:
            return (f"known failure: over its limits in the baseline too ({now}{old_mean:.4f} in the "
                    f"baseline); the gate judges whether the model got worse")
        return (f"new failure: within its limits in the baseline ({now}{old_mean:.4f} in the baseline); "
                f"the gate judges whether the model got worse")

    # ----------------------------------------------------------------------- session end (controller)
    def decide(self, vs) -> tuple:
        """Make this run's comparison (once): ``(results, current)``, :attr:`verdict` set."""
        if self.decided:
            return self.decided
        from ..gating import build_baseline
        from ..gating.decide import GateLimits, decide
        from ..report.json_report import records_of
        results = records_of(vs.store.results)  # plain dicts, converted once for every writer
        meta = vs.run_metadata()
        extra = {"repeats": meta.pop("repeats"), "pass_rule": meta.pop("pass_rule")}
        if "dataset" in meta:  # the official data's identity, kept in the baseline too
            extra["dataset"] = meta.pop("dataset")
        run = vs.sequential
        members = None
        if run is not None and run.gate is not None:  # what decided, its intervals, what it saved
            self.sequential = extra["sequential"] = run.summary(price=vs.settings.price)
            members = run.gate.members
        current = build_baseline(results, extra_metadata=extra, **meta)
        self.decided = (results, current)
        if (self.compare_runs or self.compare_paper) and results:
            self._build_runs_comparison(results, current)
        if self.baseline_doc is not None and vs.shard_meta:  # the merged run is gated (_sharding.py)
            from ._sharding import gate_note
            self.messages.append(gate_note(self._label(), vs.shard_meta))
        elif self.baseline_doc is not None:
            s = self.settings
            self.verdict = decide(self.baseline_doc, results, current, limits=GateLimits(
                max_regression=s.max_regression, max_pass_drop=s.max_pass_drop,
                alpha=s.alpha, allow_mismatch=s.allow_mismatch, max_refusal_rise=s.max_refusal_rise,
                power=s.power, accept_not_shown=s.accept_not_shown),
                baseline_label=self._label(), sequential=self.sequential, members=members,
                interrupted=self.interrupted)
            self.messages.extend(self.verdict.messages)
        return results, current

    def _label(self) -> str:
        return self.settings.baseline_label or str(self.settings.baseline)

    @property
    def comparison(self):
        """The groups' deltas of :attr:`verdict` (None before the gate decided, or with nothing compared)."""
        return None if self.verdict is None else self.verdict.comparison

    def _build_runs_comparison(self, results, current) -> None:
        """This run (labelled by its adapter) side by side with the ``--violin-compare`` runs."""
        from ..compare.model import Run
        from ..compare.table import build
        from ..errors import ViolinError
        meta = dict(current["metadata"])
        this = Run(label=str(meta.get("adapter") or "this run"), source="this run", kind="results",
                   metadata=meta, records={str(r["sample_id"]): r for r in results})
        paper = ()
        if self.compare_paper:
            from ..compare.paper import published_rows
            paper = published_rows()
        try:
            self.runs_comparison = build([this, *self.compare_runs], paper=paper)
        except ViolinError as exc:
            self.messages.append(f"comparison with --violin-compare runs NOT made: {exc}")

    def report_gate(self, session) -> None:
        """Report the verdict as the test ``violin::gate``, so pytest's summary, JUnit, pytest-html
        and a CI system's test view show it as one test (as pytest-mypy's status item): the call's outcome
        the gate's, its properties the outcome and the headline."""
        from ..report._gate_words import headline
        from ..report._sequential import sequential_lines
        from ..report.terminal import comparison_lines
        comparison = self.comparison
        lines = sequential_lines(self.sequential) + comparison_lines(comparison)
        text = printable("\n".join(line for line, _ in lines))
        ok = comparison.ok
        verdict = printable((lines[0][0] if self.sequential else headline(comparison)[0]) if lines else "")
        properties = [("violin.gate", "passed" if ok else "failed"), ("violin.gate.outcome", comparison.outcome),
                      ("violin.gate.verdict", verdict)]
        self.gate_failed = not ok
        # a green gate's words reach JUnit's system-out and -rP; a red one's are its failure
        _report_gate_item(session, "passed" if ok else "failed", None if ok else text,
                          [("violin regression gate", text)] if ok else [], properties)

    def report_not_judged(self, session, reason: str) -> None:
        """Report ``violin::gate`` of a run stopped before its end by ``reason``: skipped (pytest's outcome,
        which leaves the exit status pytest's), its reason ``not judged: <reason>``."""
        from ..report._gate_words import not_judged, not_judged_line
        self.not_judged = printable(reason)
        properties = [("violin.gate", "not judged"), ("violin.gate.outcome", "not-judged"),
                      ("violin.gate.verdict", not_judged_line(self.not_judged))]
        _report_gate_item(session, "skipped", (GATE_NODEID.partition("::")[0], 1, not_judged(self.not_judged)),
                          (), properties)

    def finish(self, vs, session) -> None:
        """At the session's end: the exit status the verdict sets, the baseline and the reports."""
        if not self.active:
            return
        results, current = self.decide(vs)
        if self.verdict is not None and self.not_judged is None:  # a stopped run keeps pytest's status
            others_failed = session.testsfailed > (1 if self.gate_failed else 0)
            status = self.verdict.exit_status(int(session.exitstatus), others_failed=others_failed)
            if status != int(session.exitstatus):
                session.exitstatus = pytest.ExitCode(status)
        if self.settings.save_baseline is not None:
            self._save_baseline(session, results, current, shard=vs.shard_meta)
        if self.settings.report is not None:
            self._write_reports(vs, session, results, current)

    def _save_baseline(self, session, results, current, *, shard=None) -> None:
        from ..errors import BaselineError
        from ..gating import write_baseline
        path = self.settings.save_baseline
        if self.interrupted:
            self.messages.append(f"baseline NOT written to {path}: the run was interrupted "
                                 f"({len(results)} samples ran); a partial baseline would gate on a subset")
            return
        if not results:
            self.messages.append(f"baseline NOT written to {path}: no Violin sample ran")
            return
        try:
            write_baseline(path, current)
        except BaselineError as exc:
            kept = (f"; the file at {path} is an EARLIER run's baseline (not replaced)"
                    if Path(path).is_file() else "")
            self.messages.append(f"baseline NOT written: {exc}{kept}; the session fails")
            _fail_unwritten(session)
            return
        self.messages.append(f"baseline of {len(results)} samples written to {path}")
        if shard:
            from ._sharding import baseline_note
            self.messages.append(baseline_note(shard))
        if self.sequential is not None and self.sequential.get("samples_not_generated"):
            self.messages.append(f"that baseline is a sequential run's: the "
                                 f"{self.sequential['samples_not_generated']} samples the gate did not "
                                 f"need are not in it; gate later runs against a full run's baseline")

    def _write_reports(self, vs, session, results, current) -> None:
        from ..report.folder import ReportsNotWritten, write_report_folder
        from ..report.json_report import run_usage
        from ._signals import stop_reason
        folder = self.settings.report
        meta = dict(current["metadata"])
        meta["interrupted"] = self.interrupted
        if self.interrupted:
            meta["stop_reason"] = stop_reason(session)
        if self.settings.baseline is not None:
            meta["baseline"] = self._label()
        # what the run cost: generations made (cache hits apart) and, with --violin-price, their estimated cost; not
        # in the baseline (a re-run from the cache costs nothing and must give the same baseline); counted: the
        # calls made, where they were made (reruns, -x, repeats, fixtures)
        meta.update(run_usage(results, price=vs.run_price(), counted=vs.usage.snapshot()))
        if vs.batch is not None:  # --violin-batch: the service, the discount, what the provider completed, pending
            from ._batch import report_section
            meta["batch"] = report_section(vs)
        if vs.shard_meta:
            meta["shard"] = dict(vs.shard_meta)  # which part of which selection: merge checks them
        try:
            written = write_report_folder(folder, results, metadata=meta, comparison=self.comparison,
                                          aggregates=current["aggregates"], runs_comparison=self.runs_comparison)
            self.messages.append(f"reports written to {folder} ({', '.join(written)})")
        except ReportsNotWritten as exc:
            self.messages.append(f"reports NOT written to {folder}: {exc}; the session fails")
            _fail_unwritten(session)

    def terminal_summary(self, terminalreporter, config) -> None:
        """The ``violin comparison`` and ``violin regression gate`` sections (controller)."""
        if self.runs_comparison is not None:
            from ..compare.formats import render
            terminalreporter.section("violin comparison")
            for line in render(self.runs_comparison, "terminal").splitlines():
                terminalreporter.write_line(line)
        comparison = self.comparison
        if not (comparison is not None or self.messages or self.not_judged is not None):
            return
        from ..report._sequential import sequential_lines
        from ..report.terminal import comparison_lines
        gated = comparison is not None or self.not_judged is not None
        terminalreporter.section("violin regression gate" if gated else "violin reports")
        if self.gate_failed and config.option.tbstyle != "no":
            # the verdict and its table are the failure of violin::gate, shown above
            lines = [(f"FAILED: see {GATE_NODEID} above", "bad")]
        else:
            lines = []
            if self.not_judged is not None:
                from ..report._gate_words import not_judged_line
                lines.append((not_judged_line(self.not_judged), "warn"))
            lines += sequential_lines(self.sequential)
            if comparison is not None:  # a decided sequential gate: the facts only, not a second verdict
                lines += comparison_lines(comparison, judged=self.not_judged is None)
        lines += [(m, "info") for m in self.messages]
        for text, level in lines:
            terminalreporter.write_line(printable(text), **_STYLES.get(level, {}))


def _report_gate_item(session, outcome: str, longrepr, sections, properties) -> None:
    """Report ``violin::gate`` as one test with the call's ``outcome``: a setup, a call and a teardown report, as a
    test's are (JUnit writes a test's properties and pytest-html records it at its teardown)."""
    location = (GATE_NODEID.partition("::")[0], 0, GATE_NODEID)

    def report(when, outcome, longrepr=None, sections=()):
        return pytest.TestReport(
            nodeid=GATE_NODEID, location=location, keywords={"violin": 1}, when=when, outcome=outcome,
            longrepr=longrepr, sections=list(sections), duration=0.0, user_properties=properties)

    session.testscollected += 1  # the gate is one more test: the progress stays at 100%
    hook = session.config.hook
    hook.pytest_runtest_logstart(nodeid=GATE_NODEID, location=location)
    hook.pytest_runtest_logreport(report=report("setup", "passed"))
    hook.pytest_runtest_logreport(report=report("call", outcome, longrepr, sections))
    hook.pytest_runtest_logreport(report=report("teardown", "passed"))
    hook.pytest_runtest_logfinish(nodeid=GATE_NODEID, location=location)


def _fail_unwritten(session) -> None:
    """A report or baseline that could not be written fails an otherwise green session (exit 1):
    a gate whose evidence is missing must not pass."""
    if session is not None and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
