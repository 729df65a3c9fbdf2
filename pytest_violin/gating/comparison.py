"""Compare a run with a baseline, per task and per (task, variation)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .policy import DEFAULT_MAX_REGRESSION, DEFAULT_RESAMPLES
from .baseline import _sample_entry
from .records import _mean, _value, as_record
from ..results import NO_IMAGE_VALUE
from .statistics import _group_seed, paired_bootstrap
from ..errors import InvalidArgumentError

__all__ = ["Comparison", "GroupDelta", "compare", "selection_text"]



@dataclass(frozen=True)
class GroupDelta:
    """The comparison of one task or (task, variation) between two runs.

    Attributes
    ----------
    task : str
    variation : str or None
        ``None`` for the whole task.
    n : int
        Samples compared (shared by both runs, same definition).
    old, new, delta : float
        Mean of the ``mean`` metric in the baseline and now; ``new - old``.
    ci_low, ci_high : float
        Paired bootstrap interval of ``delta``.
    status : str
        ``regressed``, ``improved``, ``unchanged`` or ``not-compared``.
    metric_deltas : dict
        Metric name -> ``(old, new, delta)`` for every metric both runs have.
    newly_failing, newly_passing : tuple of str
        Shared sample ids whose outcome flipped.
    refused_old, refused_new, refused_delta : float
        Refusal rate (share of the shared samples whose outcome is
        ``"refused"``) in the baseline and now; ``new - old``.
    refused_ci_low, refused_ci_high : float
        Paired bootstrap interval of ``refused_delta`` (over the samples'
        0/1 refusal indicators).
    refused_status : str
        ``regressed`` when the refusal rate rose by more than
        ``max_regression`` and the interval lies above 0, ``improved``
        symmetrically, else ``unchanged`` (``not-compared`` without samples).
    newly_refused : tuple of str
        Shared sample ids refused now and not in the baseline.
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
    refused_old: float = math.nan
    refused_new: float = math.nan
    refused_delta: float = math.nan
    refused_ci_low: float = math.nan
    refused_ci_high: float = math.nan
    refused_status: str = "not-compared"
    newly_refused: tuple = ()

    @property
    def label(self) -> str:
        """``task`` or ``task/variation``."""
        return self.task if self.variation is None else f"{self.task}/{self.variation}"

    def to_dict(self) -> dict:
        """JSON-able form."""
        return {
            "task": self.task, "variation": self.variation, "n": self.n,
            "old": _finite_or_none(self.old), "new": _finite_or_none(self.new),
            "delta": _finite_or_none(self.delta),
            "ci": [_finite_or_none(self.ci_low), _finite_or_none(self.ci_high)],
            "status": self.status,
            "metric_deltas": {k: [_finite_or_none(x) for x in v] for k, v in self.metric_deltas.items()},
            "newly_failing": list(self.newly_failing), "newly_passing": list(self.newly_passing),
            "refusals": {
                "old": _finite_or_none(self.refused_old), "new": _finite_or_none(self.refused_new),
                "delta": _finite_or_none(self.refused_delta),
                "ci": [_finite_or_none(self.refused_ci_low), _finite_or_none(self.refused_ci_high)],
                "status": self.refused_status, "newly_refused": list(self.newly_refused),
            },
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
    max_regression : float
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
        """Groups whose status is ``regressed``."""
        return tuple(g for g in self.groups if g.status == "regressed")

    @property
    def refusal_regressions(self) -> tuple:
        """Groups whose refusal rate rose credibly (``refused_status == "regressed"``)."""
        return tuple(g for g in self.groups if g.refused_status == "regressed")

    @property
    def improvements(self) -> tuple:
        """Groups whose status is ``improved``."""
        return tuple(g for g in self.groups if g.status == "improved")

    @property
    def compared(self) -> int:
        """Samples compared (shared, same definition, no error on either side)."""
        return sum(g.n for g in self.groups if g.variation is None)

    @property
    def ok(self) -> bool:
        """True when samples were compared, none ended in an error, and nothing regressed
        (neither a mean metric nor a refusal rate; with a decided sequential gate, no group it
        showed regressed)."""
        if self.decided_by == "sequential":
            return not self.sequential_regressions and not self.errored and self.compared > 0
        return (not self.regressions and not self.refusal_regressions and not self.errored
                and self.compared > 0)

    def to_dict(self) -> dict:
        """JSON-able form (embedded in results.json)."""
        return {
            "baseline": self.baseline_path,
            "max_regression": self.max_regression,
            "ok": self.ok,
            "compared": self.compared,
            "errored": list(self.errored),
            "errored_in_baseline": list(self.errored_in_baseline),
            "decided_by": self.decided_by,
            "regressions": (list(self.sequential_regressions) if self.decided_by == "sequential"
                            else [g.label for g in self.regressions]),
            "refusal_regressions": ([] if self.decided_by == "sequential"
                                    else [g.label for g in self.refusal_regressions]),
            # what the fixed-sample rule says of the samples a sequential gate generated (for
            # information: a prefix the gate stopped; not the verdict)
            **({"fixed_sample": {"regressions": [g.label for g in self.regressions],
                                 "refusal_regressions": [g.label for g in self.refusal_regressions]}}
               if self.decided_by == "sequential" else {}),
            "improvements": [g.label for g in self.improvements],
            "groups": [g.to_dict() for g in self.groups],
            "missing": list(self.missing), "added": list(self.added), "changed": list(self.changed),
            "fingerprint_changed": self.fingerprint_changed,
            "selection": ({"selected": self.baseline_samples - len(self.missing), "of": self.baseline_samples}
                          if self.selection else None),
            "old_fingerprint": self.old_fingerprint, "new_fingerprint": self.new_fingerprint,
            "metadata_changes": {k: list(v) for k, v in self.metadata_changes.items()},
        }


def _verdict(delta: float, lo: float, hi: float, max_regression: float) -> str:
    """``regressed``, ``improved`` or ``unchanged``: worse (better) by more than
    ``max_regression`` with the interval wholly above (below) zero."""
    if delta > max_regression and lo > 0:
        return "regressed"
    if delta < -max_regression and hi < 0:
        return "improved"
    return "unchanged"


def _metric(rec: Mapping, name: str):
    """One metric of a sample record: 1.0 when it has no image, None when it lacks that metric."""
    metrics = rec.get("metrics") or {}
    if not metrics:
        return NO_IMAGE_VALUE
    value = metrics.get(name)
    return None if value is None else float(value)


def _samples_by_id(doc_or_records) -> dict:
    if isinstance(doc_or_records, Mapping) and "samples" in doc_or_records:
        items = doc_or_records["samples"]
    else:
        items = [_sample_entry(as_record(r)) for r in doc_or_records]
    return {s["id"]: s for s in items}


def compare(baseline: Mapping, current, *, max_regression: float = DEFAULT_MAX_REGRESSION,
            resamples: int = DEFAULT_RESAMPLES, seed: int = 0, confidence: float = 0.95,
            baseline_path: str | None = None) -> Comparison:
    """Compare a run with a baseline.

    Parameters
    ----------
    baseline : Mapping
        A baseline document (:func:`read_baseline`).
    current : Mapping or iterable
        The current run: a baseline document (:func:`build_baseline`) or its
        sample results.
    max_regression : float, optional
        Smallest absolute worsening of a group's mean metric that can count
        as a regression (default :data:`DEFAULT_MAX_REGRESSION`).
    resamples, seed, confidence : optional
        Bootstrap settings; the seed is mixed with the group name, so every
        group has its own reproducible stream (and the refusal rate its own).
    baseline_path : str, optional
        Recorded in the result for reports.

    Returns
    -------
    Comparison
        A group *regresses* when ``delta > max_regression`` and the lower
        bound of the paired bootstrap interval is above zero; it *improves*
        when ``delta < -max_regression`` and the upper bound is below zero.
        The same rule, applied to the samples' 0/1 refusal indicators, gives
        each group's ``refused_status``: a rising refusal rate is a
        regression of its own (:attr:`Comparison.refusal_regressions`).
    """
    if not (isinstance(max_regression, (int, float)) and math.isfinite(max_regression)
            and max_regression >= 0):
        raise InvalidArgumentError(f"max_regression must be a finite number >= 0, got {max_regression!r}")
    old = _samples_by_id(baseline)
    new = _samples_by_id(current)
    missing = tuple(sorted(set(old) - set(new)))
    added = tuple(sorted(set(new) - set(old)))
    changed, errored, errored_before, shared = [], [], [], []
    for sid in sorted(set(old) & set(new)):
        a, b = old[sid].get("definition"), new[sid].get("definition")
        if a and b and a != b:
            changed.append(sid)
        elif new[sid].get("outcome") == "error":
            errored.append(sid)
        elif old[sid].get("outcome") == "error":
            errored_before.append(sid)
        else:
            shared.append(sid)

    keys: dict[tuple, list] = {}
    for sid in shared:
        s = new[sid]
        task = str(s.get("task"))
        var = s.get("variation")
        keys.setdefault((task, None), []).append(sid)
        keys.setdefault((task, "" if var is None else str(var)), []).append(sid)
    # Groups that exist only on one side still appear, as "not-compared".
    for side in (old, new):
        for s in side.values():
            task = str(s.get("task"))
            var = s.get("variation")
            keys.setdefault((task, None), [])
            keys.setdefault((task, "" if var is None else str(var)), [])

    groups = []
    for (task, var), ids in sorted(keys.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None, kv[0][1] or "")):
        label = task if var is None else f"{task}/{var}"
        if not ids:
            groups.append(GroupDelta(task, var, 0, math.nan, math.nan, math.nan, math.nan, math.nan,
                                     "not-compared"))
            continue
        o = np.array([_value(old[i]) for i in ids])
        nw = np.array([_value(new[i]) for i in ids])
        o_mean, n_mean = float(o.mean()), float(nw.mean())
        delta = n_mean - o_mean
        lo, hi = paired_bootstrap(o, nw, resamples=resamples, confidence=confidence,
                                  seed=_group_seed(seed, label))
        status = _verdict(delta, lo, hi, max_regression)
        o_ref = np.array([old[i].get("outcome") == "refused" for i in ids], dtype=np.float64)
        n_ref = np.array([new[i].get("outcome") == "refused" for i in ids], dtype=np.float64)
        r_delta = float(n_ref.mean() - o_ref.mean())
        r_lo, r_hi = paired_bootstrap(o_ref, n_ref, resamples=resamples, confidence=confidence,
                                      seed=_group_seed(seed, label + "#refused"))
        refusals = dict(refused_old=float(o_ref.mean()), refused_new=float(n_ref.mean()),
                        refused_delta=r_delta, refused_ci_low=r_lo, refused_ci_high=r_hi,
                        refused_status=_verdict(r_delta, r_lo, r_hi, max_regression),
                        newly_refused=tuple(i for i, a, b in zip(ids, o_ref, n_ref) if b and not a))
        # the per-metric deltas follow the rule of the tables: a sample without an
        # image counts 1.0 on every metric, like its mean in ``old``/``new`` above
        names = []
        for i in ids:
            for side in (old, new):
                for k in (side[i].get("metrics") or {}):
                    if k != "mean" and k not in names:
                        names.append(k)
        metric_deltas = {}
        for k in names:
            pairs = [(a, b) for a, b in ((_metric(old[i], k), _metric(new[i], k)) for i in ids)
                     if a is not None and b is not None]
            a = _mean([p[0] for p in pairs])
            b = _mean([p[1] for p in pairs])
            metric_deltas[k] = (a, b, b - a)
        newly_failing = tuple(i for i in ids if old[i].get("outcome") == "passed"
                              and new[i].get("outcome") in ("failed", "refused"))
        newly_passing = tuple(i for i in ids if old[i].get("outcome") in ("failed", "refused")
                              and new[i].get("outcome") == "passed")
        groups.append(GroupDelta(task, var, len(ids), o_mean, n_mean, delta, lo, hi, status,
                                 metric_deltas, newly_failing, newly_passing, **refusals))

    old_meta = baseline.get("metadata", {}) if isinstance(baseline, Mapping) else {}
    new_meta = current.get("metadata", {}) if isinstance(current, Mapping) and "metadata" in current else {}
    old_fp = str(old_meta.get("fingerprint", ""))
    new_fp = str(new_meta.get("fingerprint", ""))
    meta_changes = {}
    for k in ("suite", "profile", "seed", "adapter", "package_version", "repeats", "pass_rule"):
        if k in old_meta and k in new_meta and old_meta[k] != new_meta[k]:
            meta_changes[k] = (old_meta[k], new_meta[k])
    return Comparison(
        groups=tuple(groups),
        max_regression=float(max_regression),
        errored=tuple(errored),
        errored_in_baseline=tuple(errored_before),
        missing=missing,
        added=added,
        changed=tuple(changed),
        fingerprint_changed=bool(old_fp and new_fp and old_fp != new_fp),
        old_fingerprint=old_fp,
        new_fingerprint=new_fp,
        metadata_changes=meta_changes,
        baseline_path=baseline_path,
        baseline_samples=len(old),
        current_samples=len(new),
    )


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
