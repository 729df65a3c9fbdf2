"""Build the paper-layout comparison of runs (and published rows)."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np

from ..errors import InvalidArgumentError
from ..gating.comparison import paired_bootstrap
from ..report.text import printable
from ..results import Outcome, aggregate, sample_value
from .model import ComparedRow, Comparison, PairDelta

__all__ = ["MISMATCH_KEYS", "build"]

#: Metadata that must agree between compared runs (unless ``allow_mismatch``).
MISMATCH_KEYS = ("fingerprint", "profile", "package_version")


def build(runs, *, paper=(), all_samples: bool = False, allow_mismatch: bool = False,
          resamples: int = 2000, seed: int = 0) -> Comparison:
    """Compare ``runs`` (at least one; labels made unique here: ``A``, ``A #2``) in the paper's layout.

    ``paper`` rows are shown as reference (only tasks some run holds; all of them when no run is given).
    ``all_samples`` compares every run on all its samples instead of only the samples every run holds;
    ``allow_mismatch`` compares runs whose suite fingerprint, profile or package version differ (the
    differences are listed in ``mismatches``). ``resamples`` and ``seed`` are those of the pairwise bootstrap
    intervals.

    No run, runs that differ (without ``allow_mismatch``) or runs that share no sample are an
    :class:`~pytest_violin.errors.InvalidArgumentError`.
    """
    runs = list(runs)
    if not runs:
        raise InvalidArgumentError("compare needs at least one RUN, got none")
    _unique_labels(runs)
    shared_ids = set(runs[0].records)
    for run in runs[1:]:
        shared_ids &= set(run.records)
    found = _mismatches(runs)
    notes = []
    if "fingerprint" in found:  # one suite, different samples held: not a mismatch
        note, why = _held_samples(runs, shared_ids, all_samples)
        if note:
            del found["fingerprint"]
            notes.append(note)
        else:
            found["fingerprint"] += why
    mismatches = list(found.values())
    if mismatches and not allow_mismatch:
        raise InvalidArgumentError("runs differ and are not compared (pass --allow-mismatch to "
                                   "compare them anyway): " + "; ".join(mismatches))
    dropped, reasons = {}, {}
    if not all_samples:
        if len(runs) > 1 and not shared_ids:
            raise InvalidArgumentError(
                "the runs share no sample id ("
                + ", ".join(f"{_shown(r.label)}: {len(r.records)}" for r in runs)
                + " samples); pass --all-samples to compare each on its own samples")
        for run in runs:
            extra = len(run.records) - len(shared_ids)
            dropped[run.label] = extra
            if extra:
                missing = [o.label for o in runs
                           if o is not run and any(sid not in o.records for sid in run.records)]
                reasons[run.label] = ("not held by " + ", ".join(map(_shown, missing))
                                      if missing else "")
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
    from .modes import build_modes

    return Comparison(runs=runs, rows=rows, pairs=pairs, dropped=dropped,
                      shared=len(shared_ids), mismatches=mismatches if allow_mismatch else [], notes=notes,
                      all_samples=bool(all_samples), dropped_reasons=reasons,
                      modes=build_modes(runs, selected))


def _unique_labels(runs) -> None:
    seen: dict = {}
    for run in runs:
        base = run.label
        seen[base] = seen.get(base, 0) + 1
        if seen[base] > 1:
            run.label = f"{base} #{seen[base]}"


def _mismatches(runs) -> dict:
    """Key of :data:`MISMATCH_KEYS` -> what differs, of the keys whose recorded values differ."""
    out = {}
    for key in MISMATCH_KEYS:
        values = {r.label: r.metadata.get(key) for r in runs}
        known = {str(v) for v in values.values() if v is not None}  # a list/dict from a file too
        if len(known) > 1:
            shown = ", ".join(f"{_shown(label)}: {_shown(v, 40)}" for label, v in values.items())
            out[key] = f"{key.replace('_', ' ')} differs ({shown})"
    return out


def _held_samples(runs, shared_ids, all_samples: bool) -> tuple:
    """Whether differing suite fingerprints only say that the runs hold different samples.

    The fingerprint covers the samples a run holds, so a sequential gate's run, a ``--violin-limit`` or a
    ``-k`` selection differs from the full run of the same suite. Returns ``(note, "")`` when every run
    recorded the definitions of the samples they share and those agree, else ``(None, why)`` with why the
    difference stands (added to the mismatch's message).
    """
    if not shared_ids:
        return None, ""
    first = None
    for run in runs:
        defs = run.definitions(shared_ids)
        if defs is None:
            return None, (f"; {_shown(run.label)} records no sample definitions, so its "
                          f"{len(shared_ids):,} samples shared with the other runs could not be checked "
                          f"to be the same samples")
        if first is None:
            first = defs
            continue
        differ = sorted(sid for sid in shared_ids if defs[sid] != first[sid])
        if differ:
            return None, (f"; {len(differ):,} of the {len(shared_ids):,} samples the runs share are "
                          f"defined differently (e.g. {_shown(differ[0])!r}): a changed suite")
    larger = [r for r in runs if len(r.records) > len(shared_ids)]
    if not larger:  # the same samples, defined alike: the recorded fingerprints do not match them
        return None, "; the runs hold the same samples, defined alike: a recorded fingerprint does not match them"
    subsets = [_shown(r.label) for r in runs if len(r.records) == len(shared_ids)]
    held = ", ".join(f"{_shown(r.label)}: {len(r.records):,}" for r in runs)
    which = (f"{', '.join(subsets)} {'holds' if len(subsets) == 1 else 'hold'} a subset of the samples of "
             f"{', '.join(_shown(r.label) for r in larger)} (a sequential gate, --violin-limit or a "
             f"selection)" if subsets else "they overlap")
    what = "each run is compared on all its samples (--all-samples)" if all_samples else "those are compared"
    return (f"the suite fingerprints differ only because the runs hold different samples of one suite "
            f"({held}): {which}, and the {len(shared_ids):,} samples they share are defined alike, so "
            f"{what}"), ""


def _shown(text, limit: int = 80) -> str:
    """Outside text (a label, a recorded value) in a message or note: cut, then made printable.

    The one place this module formats text read from runs; the renderers escape it again for their format.
    """
    return printable(str(text)[:limit])


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
    if rec.get("outcome") == Outcome.ERROR:
        return None
    if not rec.get("metrics"):
        return sample_value({})
    m = (rec.get("metrics") or {}).get("mean")
    if m is None or isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m):
        return None
    return float(m)


#: Pairs above which a task's interval is the normal approximation of the paired bootstrap (mean difference +-
#: z * s / sqrt(n)) instead of the bootstrap itself, whose cost is resamples x n (2,000 x 333,333 pairs took
#: 19 s per task on 2 shared cores). At this n the bootstrap distribution of a mean is normal to within its
#: own Monte Carlo error at 2,000 resamples (the skewness term of the percentile interval is O(1/sqrt(n)):
#: under a hundredth of the standard error here, against ~6% for the resampling).
BOOTSTRAP_MAX_PAIRS = 100_000


def _interval(old, new, *, resamples: int, seed) -> tuple[float, float, float]:
    """(mean of new - old, 95% low, 95% high)."""
    d = np.asarray(new, dtype=np.float64) - np.asarray(old, dtype=np.float64)
    delta = float(d.mean())
    if d.size <= BOOTSTRAP_MAX_PAIRS:
        lo, hi = paired_bootstrap(old, new, resamples=resamples, seed=seed)
        return delta, lo, hi
    half = _Z95 * float(d.std(ddof=1)) / math.sqrt(d.size)
    return delta, delta - half, delta + half


_Z95 = NormalDist().inv_cdf(0.975)


def _pairs(runs, all_samples, shared_ids, resamples, seed) -> list:
    out = []
    for i, j in itertools.combinations(range(len(runs)), 2):
        a, b = runs[i], runs[j]
        # one pass over the samples both hold: per task (in first-seen order) the paired sample means,
        # skipping samples without a mean in either run
        by_task: dict = {}
        b_records = b.records
        for sid, ra in a.records.items():
            rb = b_records.get(sid)
            if rb is None:
                continue
            pair = by_task.get(ra.get("task"))
            if pair is None:
                pair = by_task[ra.get("task")] = ([], [])
            va, vb = _sample_mean(ra), _sample_mean(rb)
            if va is not None and vb is not None:
                pair[0].append(va)
                pair[1].append(vb)
        for t_index, (task, (old, new)) in enumerate(by_task.items()):
            if not old:
                continue
            delta, lo, hi = _interval(old, new, resamples=resamples,
                                      seed=[int(seed), i, j, t_index])
            out.append(PairDelta(a=a.label, b=b.label, task=task, n=len(old), delta=delta,
                                 ci_low=lo, ci_high=hi))
    return out
