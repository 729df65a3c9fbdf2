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
from .evidence import DEFAULT_POWER
from .policy import DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, DEFAULT_MAX_REFUSAL_RISE, DEFAULT_MAX_REGRESSION

__all__ = ["EXIT_NOT_SHOWN", "EXIT_REGRESSED", "EXIT_UNDECIDED", "GateLimits", "GateVerdict", "decide",
           "sequential_decided"]

#: The session's exit status when the gate is red (pytest's ``TESTS_FAILED``).
EXIT_REGRESSED = 1
#: ... when a guardrail was neither shown within its margin nor regressed: not green, so a failed test too
#: (``--violin-accept-not-shown`` passes it, and says so).
EXIT_NOT_SHOWN = 1
#: ... when the gate could not decide and nothing else failed (pytest's ``USAGE_ERROR``).
EXIT_UNDECIDED = 4


@dataclass(frozen=True)
class GateLimits:
    """The margins and the error rate the gate decides with (``--violin-max-regression``,
    ``--violin-max-pass-drop``, ``--violin-max-refusal-rise``, ``--violin-alpha``, ``--violin-power``,
    ``--violin-allow-mismatch``, ``--violin-accept-not-shown``)."""

    max_regression: float = DEFAULT_MAX_REGRESSION
    max_pass_drop: float = DEFAULT_MAX_PASS_DROP
    alpha: float = DEFAULT_ALPHA
    allow_mismatch: bool = False
    max_refusal_rise: float = DEFAULT_MAX_REFUSAL_RISE
    power: float = DEFAULT_POWER
    accept_not_shown: bool = False


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

        A regression, or a baseline sample that ended in an error, fails the session (:data:`EXIT_REGRESSED`),
        and so does a guardrail not shown within its margin (:data:`EXIT_NOT_SHOWN`, unless accepted); a
        baseline that shares no comparable sample with the run, or too few to decide
        (:attr:`Comparison.too_few`), is a usage error (:data:`EXIT_UNDECIDED`) unless tests of the team's own
        failed too (``others_failed``, they keep their exit status) or the run was interrupted.
        """
        c = self.comparison
        if c is None or c.ok:
            return current
        if c.outcome == "not-decided" and not self.interrupted and not others_failed:
            return EXIT_UNDECIDED
        failed = EXIT_NOT_SHOWN if c.outcome == "not-shown" else EXIT_REGRESSED
        return failed if current == 0 else current


#: A sequential gate's verdicts that decide the session (an ``undecided`` one was stopped before the end).
SEQUENTIAL_VERDICTS = ("regressed", "within-margin", "not-shown")


def sequential_decided(summary) -> bool:
    """True when a sequential gate's summary holds a verdict (it then decides the session)."""
    return isinstance(summary, Mapping) and summary.get("verdict") in SEQUENTIAL_VERDICTS


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
                         allow_mismatch=limits.allow_mismatch, max_refusal_rise=limits.max_refusal_rise,
                         power=limits.power, accept_not_shown=limits.accept_not_shown,
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
    if isinstance(seq, Mapping) and seq.get("groups") is not None:
        # the sequential gate's verdicts are the run's, stopped early or not: its looks spent the error rate
        # of "within", so the fixed-sample test may not look again at the same samples; a group it left
        # undecided (the budget, an interruption) is not shown
        groups = [g for g in seq.get("groups", ()) if isinstance(g, Mapping)]
        changes["decided_by"] = "sequential"
        changes["sequential_regressions"] = tuple(g["group"] for g in groups if g.get("status") == "regressed")
        changes["sequential_within"] = tuple(g["group"] for g in groups if g.get("status") == "within")
    if interrupted:
        changes["unrun_reason"] = "the run was interrupted before"
    elif sequential_decided(seq):
        changes["unrun_reason"] = "the sequential gate (--violin-sequential) did not need"
    elif seq is not None:
        changes["unrun_reason"] = f"the sequential gate stopped ({seq.get('finished')}) before"
    return replace(comparison, **changes) if changes else comparison
