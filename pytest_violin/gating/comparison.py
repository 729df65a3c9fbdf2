"""Compare a run with a baseline, per task and per (task, variation)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

import numpy as np

from .policy import (DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, DEFAULT_MAX_REGRESSION, DEFAULT_RESAMPLES,
                     MIN_SHARED, above_margin)
from .baseline import _sample_entry
from .records import _mean, _value, as_record
from .delta import Comparison, GroupDelta, selection_text
from .statistics import _group_seed, paired_bootstrap
from ..errors import InvalidArgumentError

__all__ = ["Comparison", "GroupDelta", "compare", "no_image_cause", "selection_text"]



def _verdict(lo: float, hi: float, margin: float) -> str:
    """``regressed`` when the lower bound of a worsening is above ``margin``, ``improved``
    when the upper bound is below ``-margin``, else ``unchanged`` (ties: :func:`above_margin`)."""
    if above_margin(lo, margin):
        return "regressed"
    if above_margin(-hi, margin):
        return "improved"
    return "unchanged"


def _metric(rec: Mapping, name: str):
    """One metric of a sample record: None when it has no image or lacks that metric."""
    value = (rec.get("metrics") or {}).get(name)
    return None if value is None else float(value)


def _samples_by_id(doc_or_records) -> dict:
    if isinstance(doc_or_records, Mapping) and "samples" in doc_or_records:
        items = doc_or_records["samples"]
    else:
        items = [_sample_entry(as_record(r)) for r in doc_or_records]
    return {s["id"]: s for s in items}


def _imaged(rec: Mapping) -> bool:
    return bool(rec.get("metrics"))


#: The longest cause of a missing image kept (the error's first line).
_CAUSE_CHARS = 120


def no_image_cause(rec: Mapping) -> str:
    """Why a judged sample has no image: ``refused``, or its error's first line (cut), or
    ``no image in the answer``."""
    if rec.get("outcome") == "refused":
        return "refused"
    error = str(rec.get("error") or "").strip()
    if not error:
        return "no image in the answer"
    line = error.splitlines()[0].strip()
    return line if len(line) <= _CAUSE_CHARS else line[:_CAUSE_CHARS - 1] + "…"


def _failing(rec: Mapping) -> bool:
    return rec.get("outcome") in ("failed", "refused")


def _too_few(shared_by_task: Mapping, in_run: Mapping) -> tuple:
    """The tasks the gate cannot decide (see :attr:`Comparison.too_few`)."""
    out = []
    for task in sorted(in_run):
        shared, total = int(shared_by_task.get(task, 0)), int(in_run[task])
        if shared == 0 and task not in shared_by_task:
            continue  # a task the baseline lacks: its samples are judged by their limits
        if shared < MIN_SHARED or 2 * shared < total:
            out.append((task, shared, total))
    return tuple(out)


def compare(baseline: Mapping, current, *, max_regression: float = DEFAULT_MAX_REGRESSION,
            max_pass_drop: float = DEFAULT_MAX_PASS_DROP, alpha: float = DEFAULT_ALPHA,
            resamples: int = DEFAULT_RESAMPLES, seed: int = 0, baseline_path: str | None = None,
            population: Mapping | None = None, allow_mismatch: bool = False) -> Comparison:
    """Compare a run with a baseline: did the model get worse?

    Parameters
    ----------
    baseline : Mapping
        A baseline document (:func:`read_baseline`).
    current : Mapping or iterable
        The current run: a baseline document (:func:`build_baseline`) or its
        sample results.
    max_regression : float, optional
        The margin of the mean metric and of the refusal rate (default
        :data:`DEFAULT_MAX_REGRESSION`).
    max_pass_drop : float, optional
        The margin of the pass rate (default :data:`DEFAULT_MAX_PASS_DROP`).
    alpha : float, optional
        The family's error rate (default :data:`DEFAULT_ALPHA`): each side of each
        statistic's interval is at ``alpha / tests``, ``tests`` being three per group.
    resamples, seed : optional
        Bootstrap settings; the seed is mixed with the group and statistic, so each has
        its own reproducible stream.
    baseline_path : str, optional
        Recorded in the result for reports.
    population : Mapping, optional
        Task -> ``(shared, in_run)`` to judge the overlap on (a sequential gate's
        population, whose unneeded samples were not generated); by default the
        samples compared and the run's samples of each task.
    allow_mismatch : bool, optional
        Decide tasks that share too few samples with the baseline anyway.

    Returns
    -------
    Comparison
        For each task and (task, variation), the paired bootstrap bounds of the model's
        expected worsening on three statistics (the mean metric, the pass rate, the
        refusal rate). A statistic *regresses* when its lower bound is above its margin and
        *improves* when its upper bound is below minus the margin. The bootstrap over
        samples measures a stochastic model's run-to-run variation along with the
        samples' spread (each paired difference holds both draws' noise), and the
        family of every group and statistic is held at ``alpha`` (Bonferroni).
    """
    for name, value in (("max_regression", max_regression), ("max_pass_drop", max_pass_drop)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1):
            raise InvalidArgumentError(f"{name} must be a number in [0, 1], got {value!r}")
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha < 1):
        raise InvalidArgumentError(f"alpha must be a number in (0, 1), got {alpha!r}")
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

    tests = 3 * sum(1 for ids in keys.values() if ids)
    # each side of each of the family's intervals at alpha / tests (Bonferroni)
    confidence = 1.0 - 2.0 * alpha / max(1, tests)
    groups = []
    for (task, var), ids in sorted(keys.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None, kv[0][1] or "")):
        label = task if var is None else f"{task}/{var}"
        if not ids:
            groups.append(GroupDelta(task, var, 0, math.nan, math.nan, math.nan, math.nan, math.nan,
                                     "not-compared"))
            continue

        def paired(o, nw, key):
            o, nw = np.asarray(o, dtype=np.float64), np.asarray(nw, dtype=np.float64)
            lo, hi = paired_bootstrap(o, nw, resamples=resamples, confidence=confidence,
                                      seed=_group_seed(seed, label + key))
            return float(o.mean()), float(nw.mean()), float(nw.mean() - o.mean()), lo, hi

        o_mean, n_mean, delta, lo, hi = paired([_value(old[i]) for i in ids], [_value(new[i]) for i in ids], "")
        # the pass rate's test is on the share failing (a worsening is a rise, as for the others)
        f_old, f_new, f_delta, f_lo, f_hi = paired([_failing(old[i]) for i in ids],
                                                   [_failing(new[i]) for i in ids], "#failing")
        r_old, r_new, r_delta, r_lo, r_hi = paired([old[i].get("outcome") == "refused" for i in ids],
                                                   [new[i].get("outcome") == "refused" for i in ids],
                                                   "#refused")
        imaged = [i for i in ids if _imaged(old[i]) and _imaged(new[i])]
        lost = [i for i in ids if _imaged(old[i]) and not _imaged(new[i])]
        causes = Counter(no_image_cause(new[i]) for i in lost)
        names = []
        for i in imaged:
            for side in (old, new):
                for k in (side[i].get("metrics") or {}):
                    if k != "mean" and k not in names:
                        names.append(k)
        metric_deltas = {}
        for k in names:
            pairs = [(a, b) for a, b in ((_metric(old[i], k), _metric(new[i], k)) for i in imaged)
                     if a is not None and b is not None]
            a = _mean([p[0] for p in pairs])
            b = _mean([p[1] for p in pairs])
            metric_deltas[k] = (a, b, b - a)
        groups.append(GroupDelta(
            task, var, len(ids), o_mean, n_mean, delta, lo, hi, _verdict(lo, hi, max_regression),
            metric_deltas,
            newly_failing=tuple(i for i in ids if not _failing(old[i]) and _failing(new[i])),
            newly_passing=tuple(i for i in ids if _failing(old[i]) and not _failing(new[i])),
            still_failing=sum(1 for i in ids if _failing(old[i]) and _failing(new[i])),
            passed_old=1.0 - f_old, passed_new=1.0 - f_new, passed_delta=-f_delta,
            passed_ci_low=-f_hi, passed_ci_high=-f_lo, passed_status=_verdict(f_lo, f_hi, max_pass_drop),
            refused_old=r_old, refused_new=r_new, refused_delta=r_delta, refused_ci_low=r_lo,
            refused_ci_high=r_hi, refused_status=_verdict(r_lo, r_hi, max_regression),
            newly_refused=tuple(i for i in ids if new[i].get("outcome") == "refused"
                                and old[i].get("outcome") != "refused"),
            no_image=len(lost), no_image_causes=tuple(causes.most_common()),
            imaged_n=len(imaged),
            imaged_delta=(_mean([_value(new[i]) for i in imaged]) - _mean([_value(old[i]) for i in imaged]))
            if imaged else math.nan,
        ))

    if population is None:
        shared_by_task = Counter(str(new[i].get("task")) for i in shared)
        in_run = Counter(str(s.get("task")) for s in new.values())
        for task in {str(s.get("task")) for s in old.values()} & set(in_run):
            shared_by_task.setdefault(task, 0)
    else:
        shared_by_task = {t: int(v[0]) for t, v in population.items()}
        in_run = {t: int(v[1]) for t, v in population.items()}
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
        max_pass_drop=float(max_pass_drop),
        alpha=float(alpha),
        tests=tests,
        too_few=_too_few(shared_by_task, in_run),
        allow_mismatch=bool(allow_mismatch),
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
