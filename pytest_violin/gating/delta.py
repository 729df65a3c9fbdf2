"""What :func:`~.comparison.compare` finds: one :class:`GroupDelta` per task and (task, variation),
and the :class:`Comparison` that holds them with the facts of the two runs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .policy import DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP

__all__ = ["Comparison", "GroupDelta", "selection_text"]


@dataclass(frozen=True)
class GroupDelta:
    """The comparison of one task or (task, variation) between two runs.

    Three paired statistics are tested, each against its margin: the mean metric
    (``max_regression``), the pass rate (``max_pass_drop``) and the refusal rate
    (``max_regression``). Each interval is a one-sided bound at the family's level on each
    side (``alpha`` split over every group and statistic, see :func:`compare`).

    Attributes
    ----------
    task : str
    variation : str or None
        ``None`` for the whole task.
    n : int
        Samples compared (shared by both runs, same definition, judged on both sides).
    old, new, delta : float
        Mean of the ``mean`` metric in the baseline and now; ``new - old``.
    ci_low, ci_high : float
        Paired bootstrap bounds of the expected ``delta``.
    status : str
        Of the mean metric: ``regressed`` (the lower bound is above the margin),
        ``improved`` (the upper bound is below minus the margin), ``unchanged`` or
        ``not-compared``.
    metric_deltas : dict
        Metric name -> ``(old, new, delta)`` over the samples with an image on both sides.
    newly_failing, newly_passing : tuple of str
        Shared sample ids within their limits in one run and not in the other.
    still_failing : int
        Known failures: shared samples over their limits in both runs.
    passed_old, passed_new, passed_delta, passed_ci_low, passed_ci_high : float
        The pass rate (share of the samples within their limits), ``new - old`` and its bounds.
    passed_status : str
        ``regressed`` when the pass rate is shown to fall by more than ``max_pass_drop``,
        ``improved`` symmetrically, else ``unchanged`` (``not-compared`` without samples).
    refused_old, refused_new, refused_delta, refused_ci_low, refused_ci_high : float
        The refusal rate (share of ``"refused"`` outcomes), ``new - old`` and its bounds.
    refused_status : str
        ``regressed`` when the refusal rate is shown to rise by more than ``max_regression``,
        ``improved`` symmetrically, else ``unchanged``.
    newly_refused : tuple of str
        Shared sample ids refused now and not in the baseline.
    no_image : int
        Shared samples without an image now (none given, or refused) that had one in the
        baseline: each counts 1.0, the cause of a worsening before any metric.
    no_image_causes : tuple of (str, int)
        Their causes (the error's first line, or ``refused``), most frequent first.
    imaged_n : int
        Shared samples with an image on both sides.
    imaged_delta : float
        The mean metric's ``new - old`` over those samples alone.
    """

    task: str
    variation: str | None
    n: int
    old: float
    new: float
    delta: float
    ci_low: float
    ci_high: float
    status: str
    metric_deltas: dict = field(default_factory=dict)
    newly_failing: tuple = ()
    newly_passing: tuple = ()
    still_failing: int = 0
    passed_old: float = math.nan
    passed_new: float = math.nan
    passed_delta: float = math.nan
    passed_ci_low: float = math.nan
    passed_ci_high: float = math.nan
    passed_status: str = "not-compared"
    refused_old: float = math.nan
    refused_new: float = math.nan
    refused_delta: float = math.nan
    refused_ci_low: float = math.nan
    refused_ci_high: float = math.nan
    refused_status: str = "not-compared"
    newly_refused: tuple = ()
    no_image: int = 0
    no_image_causes: tuple = ()
    imaged_n: int = 0
    imaged_delta: float = math.nan

    @property
    def label(self) -> str:
        """``task`` or ``task/variation``."""
        return self.task if self.variation is None else f"{self.task}/{self.variation}"

    @property
    def statuses(self) -> dict:
        """Statistic -> status: ``mean``, ``pass_rate``, ``refusal_rate``."""
        return {"mean": self.status, "pass_rate": self.passed_status, "refusal_rate": self.refused_status}

    @property
    def regressed(self) -> tuple:
        """The statistics that regressed (empty when none did)."""
        return tuple(k for k, v in self.statuses.items() if v == "regressed")

    @property
    def improved(self) -> tuple:
        """The statistics that improved, when none regressed."""
        return () if self.regressed else tuple(k for k, v in self.statuses.items() if v == "improved")

    def to_dict(self) -> dict:
        """JSON-able form."""
        f = _finite_or_none
        return {
            "task": self.task, "variation": self.variation, "n": self.n,
            "old": f(self.old), "new": f(self.new), "delta": f(self.delta),
            "ci": [f(self.ci_low), f(self.ci_high)],
            "status": self.status,
            "regressed": list(self.regressed),
            "metric_deltas": {k: [f(x) for x in v] for k, v in self.metric_deltas.items()},
            "newly_failing": list(self.newly_failing), "newly_passing": list(self.newly_passing),
            "still_failing": self.still_failing,
            "pass_rate": {
                "old": f(self.passed_old), "new": f(self.passed_new), "delta": f(self.passed_delta),
                "ci": [f(self.passed_ci_low), f(self.passed_ci_high)], "status": self.passed_status,
            },
            "refusals": {
                "old": f(self.refused_old), "new": f(self.refused_new), "delta": f(self.refused_delta),
                "ci": [f(self.refused_ci_low), f(self.refused_ci_high)],
                "status": self.refused_status, "newly_refused": list(self.newly_refused),
            },
            "no_image": {"count": self.no_image, "causes": [list(c) for c in self.no_image_causes],
                         "imaged": self.imaged_n, "imaged_delta": f(self.imaged_delta)},
        }


def _finite_or_none(x):
    return float(x) if x is not None and math.isfinite(float(x)) else None


@dataclass(frozen=True)
class Comparison:
    """Everything :func:`compare` found.

    Attributes
    ----------
    groups : tuple of GroupDelta
        Task rows then (task, variation) rows, sorted.
    max_regression, max_pass_drop : float
        The margins of the mean metric (and the refusal rate) and of the pass rate.
    alpha : float
        The family's error rate; ``tests`` bounds share it (each side of each interval at
        ``alpha / tests``).
    tests : int
        Statistics tested: three per compared group.
    too_few : tuple of (str, int, int)
        Tasks the gate cannot decide: ``(task, shared, in_run)`` where fewer than
        :data:`~.policy.MIN_SHARED` comparable samples, or fewer than half of the run's
        samples of the task, are in the baseline (another seed, suite or a narrow selection).
    allow_mismatch : bool
        ``--violin-allow-mismatch``: decide those tasks anyway.
    errored : tuple of str
        Shared ids that ended in an error (outcome ``"error"``) in this run:
        not comparable, never scored; the gate is not green while there is one.
    errored_in_baseline : tuple of str
        Shared ids that ended in an error in the baseline only: not
        comparable, reported, not failing (this run did its part).
    missing : tuple of str
        Baseline samples the current run does not have.
    added : tuple of str
        Current samples the baseline does not have.
    changed : tuple of str
        Shared ids whose definition digest differs (not compared).
    fingerprint_changed : bool
    old_fingerprint, new_fingerprint : str
    metadata_changes : dict
        Metadata field -> ``(baseline, current)`` for suite, profile, seed,
        adapter and package version differences.
    baseline_samples, current_samples : int
        Samples in the baseline and in this run.
    """

    groups: tuple
    max_regression: float
    max_pass_drop: float = DEFAULT_MAX_PASS_DROP
    alpha: float = DEFAULT_ALPHA
    tests: int = 0
    too_few: tuple = ()
    allow_mismatch: bool = False
    errored: tuple = ()
    errored_in_baseline: tuple = ()
    missing: tuple = ()
    added: tuple = ()
    changed: tuple = ()
    fingerprint_changed: bool = False
    old_fingerprint: str = ""
    new_fingerprint: str = ""
    metadata_changes: dict = field(default_factory=dict)
    baseline_path: str | None = None
    baseline_samples: int = 0
    current_samples: int = 0
    #: Why the baseline samples this run lacks were not run, when it is not a selection: e.g.
    #: "the sequential gate (--violin-sequential) did not need" (read by :func:`selection_text`).
    unrun_reason: str = ""
    #: ``"sequential"`` when --violin-sequential decided the gate (its verdict is then
    #: :attr:`sequential_regressions`, the groups it showed regressed); else ``"fixed-sample"``.
    decided_by: str = "fixed-sample"
    sequential_regressions: tuple = ()

    @property
    def selection(self) -> bool:
        """True when this run holds part of the baseline's samples, none redefined and none
        added: a ``-k`` / ``--deselect`` / ``--lf`` (or narrower) selection of an unchanged
        suite, which is why the fingerprints differ; not a changed suite."""
        return bool(self.missing) and not self.added and not self.changed

    @property
    def regressions(self) -> tuple:
        """Groups whose mean metric regressed (``status == "regressed"``)."""
        return tuple(g for g in self.groups if g.status == "regressed")

    @property
    def pass_regressions(self) -> tuple:
        """Groups whose pass rate fell credibly by more than ``max_pass_drop``."""
        return tuple(g for g in self.groups if g.passed_status == "regressed")

    @property
    def refusal_regressions(self) -> tuple:
        """Groups whose refusal rate rose credibly (``refused_status == "regressed"``)."""
        return tuple(g for g in self.groups if g.refused_status == "regressed")

    @property
    def regressed_groups(self) -> tuple:
        """Groups with any statistic regressed (the fixed-sample verdict)."""
        return tuple(g for g in self.groups if g.regressed)

    @property
    def improvements(self) -> tuple:
        """Groups with a statistic improved and none regressed."""
        return tuple(g for g in self.groups if g.improved)

    @property
    def newly_passing(self) -> tuple:
        """Known failures of the baseline within their limits now (task rows only, so once each)."""
        return tuple(i for g in self.groups if g.variation is None for i in g.newly_passing)

    @property
    def compared(self) -> int:
        """Samples compared (shared, same definition, no error on either side)."""
        return sum(g.n for g in self.groups if g.variation is None)

    @property
    def undecidable(self) -> bool:
        """True when a task shares too few samples with the baseline to be decided
        (:attr:`too_few`) and ``--violin-allow-mismatch`` was not given."""
        return bool(self.too_few) and not self.allow_mismatch

    @property
    def ok(self) -> bool:
        """True when samples were compared, enough of them to decide, none ended in an error,
        and nothing regressed (no statistic of any group; with a decided sequential gate, no
        group it showed regressed)."""
        if self.compared == 0 or self.errored or self.undecidable:
            return False
        if self.decided_by == "sequential":
            return not self.sequential_regressions
        return not self.regressed_groups

    def to_dict(self) -> dict:
        """JSON-able form (embedded in results.json)."""
        sequential = self.decided_by == "sequential"
        # "regressions": every group the fixed-sample rule shows worse, on any statistic
        fixed = {"regressions": [g.label for g in self.regressed_groups],
                 "mean_regressions": [g.label for g in self.regressions],
                 "pass_rate_regressions": [g.label for g in self.pass_regressions],
                 "refusal_regressions": [g.label for g in self.refusal_regressions]}
        return {
            "baseline": self.baseline_path,
            "max_regression": self.max_regression,
            "max_pass_drop": self.max_pass_drop,
            "alpha": self.alpha,
            "tests": self.tests,
            "ok": self.ok,
            "compared": self.compared,
            "too_few": [{"task": t, "shared": s, "in_run": n} for t, s, n in self.too_few],
            "allow_mismatch": self.allow_mismatch,
            "errored": list(self.errored),
            "errored_in_baseline": list(self.errored_in_baseline),
            "decided_by": self.decided_by,
            "regressions": list(self.sequential_regressions) if sequential else fixed["regressions"],
            "mean_regressions": [] if sequential else fixed["mean_regressions"],
            "pass_rate_regressions": [] if sequential else fixed["pass_rate_regressions"],
            "refusal_regressions": [] if sequential else fixed["refusal_regressions"],
            # what the fixed-sample rule says of the samples a sequential gate generated (for
            # information: a prefix the gate stopped; not the verdict)
            **({"fixed_sample": fixed} if sequential else {}),
            "improvements": [g.label for g in self.improvements],
            "newly_passing": list(self.newly_passing),
            "groups": [g.to_dict() for g in self.groups],
            "missing": list(self.missing), "added": list(self.added), "changed": list(self.changed),
            "fingerprint_changed": self.fingerprint_changed,
            "selection": ({"selected": self.baseline_samples - len(self.missing), "of": self.baseline_samples}
                          if self.selection else None),
            "old_fingerprint": self.old_fingerprint, "new_fingerprint": self.new_fingerprint,
            "metadata_changes": {k: list(v) for k, v in self.metadata_changes.items()},
        }


def selection_text(comparison) -> str | None:
    """The one sentence every report gives a selection (:attr:`Comparison.selection`), else None."""
    if not getattr(comparison, "selection", False):
        return None
    total = comparison.baseline_samples
    selected = total - len(comparison.missing)
    if getattr(comparison, "unrun_reason", ""):
        return f"{selected} of {total} baseline samples ran: {comparison.unrun_reason} the other {len(comparison.missing)}"
    return (f"{selected} of {total} baseline samples selected (a -k, --deselect, --lf or narrower "
            f"selection; the suite is unchanged): the gate compared the selected samples only, "
            f"{len(comparison.missing)} were not run")
