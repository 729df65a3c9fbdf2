"""Build the paper-layout comparison of runs (and published rows)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import InvalidArgumentError
from ..gating.statistics import paired_bootstrap
from ..results import aggregate, sample_value
from .model import ComparedRow, Comparison, PairDelta

__all__ = ["MISMATCH_KEYS", "build"]

#: Metadata that must agree between compared runs (unless ``allow_mismatch``).
MISMATCH_KEYS = ("fingerprint", "profile", "package_version")


def build(runs, *, paper=(), all_samples: bool = False, allow_mismatch: bool = False,
          resamples: int = 2000, seed: int = 0) -> Comparison:
    """Compare ``runs`` in the paper's layout.

    Parameters
    ----------
    runs : list of Run
        At least one run (labels made unique here: ``A``, ``A #2``).
    paper : iterable of PublishedRow, optional
        Published rows shown as reference (only tasks some run holds; all of
        them when no run is given a task they cover).
    all_samples : bool, optional
        Compare every run on all its samples instead of only the samples
        every run holds.
    allow_mismatch : bool, optional
        Compare runs whose suite fingerprint, profile or package version
        differ (the differences are listed in ``mismatches``).
    resamples : int, optional
        Bootstrap resamples of each pairwise interval.
    seed : int, optional
        Seed of the bootstrap.

    Returns
    -------
    Comparison

    Raises
    ------
    InvalidArgumentError
        No run, or runs that differ (without ``allow_mismatch``), or runs
        that share no sample.
    """
    runs = list(runs)
    if not runs:
        raise InvalidArgumentError("compare needs at least one RUN, got none")
    _unique_labels(runs)
    mismatches = _mismatches(runs)
    if mismatches and not allow_mismatch:
        raise InvalidArgumentError("runs differ and are not compared (pass --allow-mismatch to "
                                   "compare them anyway): " + "; ".join(mismatches))
    shared_ids = set(runs[0].records)
    for run in runs[1:]:
        shared_ids &= set(run.records)
    dropped, reasons = {}, {}
    if not all_samples:
        if len(runs) > 1 and not shared_ids:
            raise InvalidArgumentError(
                "the runs share no sample id ("
                + ", ".join(f"{r.label}: {len(r.records)}" for r in runs)
                + " samples); pass --all-samples to compare each on its own samples")
        for run in runs:
            extra = len(run.records) - len(shared_ids)
            dropped[run.label] = extra
            if extra:
                missing = [o.label for o in runs
                           if o is not run and len(set(run.records) - set(o.records))]
                reasons[run.label] = ("not held by " + ", ".join(missing)) if missing else ""
    rows: list = []
    selected = {}
    for run in runs:
        recs = [rec for sid, rec in run.records.items() if all_samples or sid in shared_ids]
        selected[run.label] = recs
        rows.extend(_run_rows(run.label, recs))
    task_order = _ordered(r.task for r in rows)
    published = [p for p in paper if p.task in task_order] or (list(paper) if not rows else [])
    rows.extend(ComparedRow(label=p.model, task=p.task, variation=p.variation,
                            metrics={k: v for k, v in p.metrics.items() if k != "mean"},
                            mean=p.metrics.get("mean"), pass_rate=None, n=None, published=True)
                for p in published)
    rows = _layout(rows)
    pairs = _pairs(runs, all_samples, shared_ids, resamples, seed)
    return Comparison(runs=runs, rows=rows, pairs=pairs, dropped=dropped,
                      shared=len(shared_ids), mismatches=mismatches if allow_mismatch else [],
                      all_samples=bool(all_samples), dropped_reasons=reasons)


def _unique_labels(runs) -> None:
    seen: dict = {}
    for run in runs:
        base = run.label
        seen[base] = seen.get(base, 0) + 1
        if seen[base] > 1:
            run.label = f"{base} #{seen[base]}"


def _mismatches(runs) -> list:
    out = []
    first = runs[0]
    for key in MISMATCH_KEYS:
        values = {r.label: r.metadata.get(key) for r in runs}
        known = {v for v in values.values() if v is not None}
        if len(known) > 1:
            shown = ", ".join(f"{label}: {str(v)[:40]}" for label, v in values.items())
            out.append(f"{key.replace('_', ' ')} differs ({shown})")
    del first
    return out


def _ordered(items) -> list:
    return list(dict.fromkeys(items))


def _run_rows(label, records) -> list:
    out = []
    for agg in aggregate(records):
        means = dict(agg.means)
        mean = means.pop("mean", None)
        out.append(ComparedRow(label=label, task=agg.task, variation=agg.variation,
                               metrics=means, mean=mean, pass_rate=agg.pass_rate, n=agg.count))
    return out


def _layout(rows) -> list:
    """Group by task (first seen), then variation (first seen, task total last), runs first."""
    tasks = _ordered(r.task for r in rows)
    out = []
    for task in tasks:
        mine = [r for r in rows if r.task == task]
        variations = _ordered(r.variation for r in mine if r.variation is not None)
        for var in [*variations, None]:
            group = [r for r in mine if r.variation == var]
            out.extend([r for r in group if not r.published] + [r for r in group if r.published])
    return out


def _sample_mean(rec) -> float | None:
    """A sample's value in a pairwise delta, by the rule of the tables and the gate
    (:func:`pytest_violin.results.sample_value`): None for an error (not judged),
    1.0 for a sample without an image (no metrics: failed without one, or refused)."""
    if rec.get("outcome") == "error":
        return None
    if not rec.get("metrics"):
        return sample_value({})
    m = (rec.get("metrics") or {}).get("mean")
    if m is None or not math.isfinite(float(m)):
        return None
    return float(m)


def _pairs(runs, all_samples, shared_ids, resamples, seed) -> list:
    out = []
    for i, j in itertools.combinations(range(len(runs)), 2):
        a, b = runs[i], runs[j]
        common = [sid for sid in a.records if sid in b.records]
        tasks = _ordered(a.records[sid].get("task") for sid in common)
        for t_index, task in enumerate(tasks):
            old, new = [], []
            for sid in common:
                ra, rb = a.records[sid], b.records[sid]
                if ra.get("task") != task:
                    continue
                va, vb = _sample_mean(ra), _sample_mean(rb)
                if va is not None and vb is not None:
                    old.append(va)
                    new.append(vb)
            if not old:
                continue
            lo, hi = paired_bootstrap(old, new, resamples=resamples, seed=[int(seed), i, j, t_index])
            delta = float(np.mean(np.asarray(new) - np.asarray(old)))
            out.append(PairDelta(a=a.label, b=b.label, task=task, n=len(old), delta=delta,
                                 ci_low=lo, ci_high=hi))
    return out
