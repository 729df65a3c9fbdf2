"""The gate's decision: one run against its baseline, as a pure function.

:func:`decide` takes the run's sample records, the run as a baseline document
(:func:`~.baseline.build_baseline`), the baseline it is held against and the gate's limits, and returns a
:class:`GateVerdict`: the groups' deltas (a :class:`~.comparison.Comparison`), the lines the reports print
beside them, and :meth:`GateVerdict.exit_status`, the session's exit status once the gate has spoken. The
pytest plugin only calls it and renders the verdict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .baseline import dataset_change
from .comparison import Comparison, compare
from .policy import DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, DEFAULT_MAX_REGRESSION

__all__ = ["EXIT_REGRESSED", "EXIT_UNDECIDED", "GateLimits", "GateVerdict", "decide", "sequential_decided"]

#: The session's exit status when the gate is red (pytest's ``TESTS_FAILED``).
EXIT_REGRESSED = 1
#: ... when the gate could not decide and nothing else failed (pytest's ``USAGE_ERROR``).
EXIT_UNDECIDED = 4


@dataclass(frozen=True)
class GateLimits:
    """The margins and the error rate the gate decides with (``--violin-max-regression``,
    ``--violin-max-pass-drop``, ``--violin-alpha``, ``--violin-allow-mismatch``)."""

    max_regression: float = DEFAULT_MAX_REGRESSION
    max_pass_drop: float = DEFAULT_MAX_PASS_DROP
    alpha: float = DEFAULT_ALPHA
    allow_mismatch: bool = False


@dataclass(frozen=True)
class GateVerdict:
    """What the gate decided about one run.

    Attributes
    ----------
    comparison : Comparison or None
        The groups' deltas; None when nothing was compared (no sample ran).
    messages : tuple of str
        What the reports say beside the table (nothing compared, the dataset changed).
    interrupted : bool
        The run ended before its last sample.
    """

    comparison: Comparison | None
    messages: tuple = ()
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        """True unless a comparison was made and is not green."""
        return self.comparison is None or self.comparison.ok

    def exit_status(self, current: int, *, others_failed: bool = False) -> int:
        """The session's exit status given its status without the gate (``current``).

        A regression, or a baseline sample that ended in an error, fails the session (:data:`EXIT_REGRESSED`);
        a baseline that shares no comparable sample with the run, or too few to decide
        (:attr:`Comparison.too_few`), is a usage error (:data:`EXIT_UNDECIDED`) unless tests of the team's own
        failed too (``others_failed``, they keep their exit status) or the run was interrupted.
        """
        c = self.comparison
        if c is None or c.ok:
            return current
        # a regression shown on few samples is shown (the error rate holds at any size); only a gate that
        # found none on too few samples cannot say "not worse"
        undecided = (c.compared == 0 or c.undecidable) and not c.regressed_groups and not (
            c.decided_by == "sequential" and c.sequential_regressions)
        if undecided and not c.errored and not self.interrupted and not others_failed:
            return EXIT_UNDECIDED
        return EXIT_REGRESSED if current == 0 else current


def sequential_decided(summary) -> bool:
    """True when a sequential gate's summary holds a verdict (it then decides the session)."""
    return isinstance(summary, Mapping) and summary.get("verdict") in ("regressed", "not-regressed")


def decide(baseline: Mapping, results: Sequence[Mapping], current: Mapping, *,
           limits: GateLimits = GateLimits(), baseline_label: str = "", sequential: Mapping | None = None,
           members: Mapping | None = None, interrupted: bool = False) -> GateVerdict:
    """Hold a run against its baseline: ``baseline`` and ``current`` are baseline documents
    (:func:`~.baseline.read_baseline`, :func:`~.baseline.build_baseline` of ``results``, the run's
    sample records); ``baseline_label`` names the baseline in the words; a decided ``sequential``
    summary's verdict is the gate's, ``members`` its population (sample id ->
    :class:`~.sequential.Member`); ``interrupted`` says the run ended before its last sample."""
    if not results:
        # e.g. `pytest tests/test_brand.py`: a path narrowed the run to the team's own tests
        unrun = f"baseline {baseline_label} not compared: no Violin sample ran in this session"
        return GateVerdict(None, (unrun,), interrupted)
    comparison = compare(baseline, current, max_regression=limits.max_regression,
                         max_pass_drop=limits.max_pass_drop, alpha=limits.alpha,
                         allow_mismatch=limits.allow_mismatch,
                         population=_population(members, results, baseline),
                         baseline_path=baseline_label)
    comparison = _sequential_verdict(comparison, sequential, interrupted)
    changed = dataset_change(baseline.get("metadata", {}), current["metadata"])
    return GateVerdict(comparison, (changed,) if changed else (), interrupted)


def _population(members: Mapping | None, results: Sequence[Mapping], baseline: Mapping):
    """A sequential run's overlap with the baseline, per task the baseline has: ``(in the
    population, in the run)`` (the samples the gate did not need count, they were not
    generated); None otherwise. A task the baseline lacks is judged by its limits."""
    if members is None:
        return None
    shared = Counter(m.task for m in members.values())
    in_run = Counter(shared)
    in_run.update(str(r.get("task")) for r in results if str(r.get("sample_id")) not in members)
    known = {str(r.get("task")) for r in baseline.get("samples") or ()}
    return {task: (shared.get(task, 0), n) for task, n in in_run.items() if task in known}


def _sequential_verdict(comparison: Comparison, seq: Mapping | None, interrupted: bool) -> Comparison:
    """Put what the run's end says into the comparison: who decided (a decided sequential gate's
    verdict is the gate's), and why the baseline samples this run lacks were not run."""
    changes: dict = {}
    if sequential_decided(seq):
        changes["decided_by"] = "sequential"
        changes["sequential_regressions"] = tuple(g["group"] for g in seq.get("groups", ())
                                                  if g.get("status") == "regressed")
    if interrupted:
        changes["unrun_reason"] = "the run was interrupted before"
    elif sequential_decided(seq):
        changes["unrun_reason"] = "the sequential gate (--violin-sequential) did not need"
    elif seq is not None:
        changes["unrun_reason"] = f"the sequential gate ended undecided ({seq.get('finished')}) before"
    return replace(comparison, **changes) if changes else comparison
