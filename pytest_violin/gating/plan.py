"""Plan a gated run before it is paid: how many samples each group needs to be shown within its margins.

:func:`plan` reads a baseline and, where there is one, a run of the model to gate (a rerun of the model in
production, or an earlier candidate: its paired noise against the baseline is the noise the next run will
have), and gives each task and variation the samples its statistics need at the margins, ``alpha`` and
``power`` of the gate (:func:`~.evidence.planned_size`). Without such a run, a baseline recorded with
``--violin-repeats`` gives the mean metric's noise from the spread of its repeats; without either, the plan
is a deterministic model's (nothing differs between two runs of an unchanged model), a floor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .evidence import DEFAULT_POWER, planned_size, rate_planned_size
from .policy import (DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, DEFAULT_MAX_REFUSAL_RISE, DEFAULT_MAX_REGRESSION,
                     refusal_guardrail)

__all__ = ["SOURCES", "PlanRow", "plan"]

#: Where a plan's noise comes from.
SOURCES = {"run": "the paired differences of the given run", "repeats": "the spread of the baseline's repeats",
           "none": "no noise measured: a deterministic model's floor"}


@dataclass(frozen=True)
class PlanRow:
    """One group's plan: ``size`` samples in the baseline; ``needed`` statistic -> samples (None: no
    number can), ``guardrail`` the statistics green needs within; ``repeats``: the ``--violin-repeats`` (on
    the baseline and the run) that would bring every need within ``size``, None when the noise is not the
    model's own or 64 repeats do not."""

    label: str
    size: int
    needed: dict
    guardrails: tuple
    source: str
    repeats: int | None = None

    @property
    def decidable(self) -> bool:
        """Whether the group's own samples suffice for every guardrail."""
        return all(self.needed.get(k) is not None and self.needed[k] <= self.size for k in self.guardrails)


def _groups(baseline: Mapping) -> dict:
    out: dict = {}
    for s in baseline.get("samples") or ():
        if not isinstance(s, Mapping) or s.get("outcome") == "error":
            continue
        out.setdefault((str(s.get("task")), None), []).append(s)
        out.setdefault((str(s.get("task")), s.get("variation")), []).append(s)
    return out


def _repeat_sd(samples) -> float | None:
    """The mean metric's paired sd between two runs of an unchanged model, from the baseline's repeats: the
    per-sample variance of one repeat, twice (both runs draw), over the repeats a run takes."""
    variances, counts = [], []
    for s in samples:
        values = [float(r["mean"]) for r in s.get("repeats") or () if isinstance(r, Mapping) and "mean" in r]
        if len(values) >= 2:
            m = sum(values) / len(values)
            variances.append(sum((v - m) ** 2 for v in values) / (len(values) - 1))
            counts.append(len(values))
    if not variances:
        return None
    return math.sqrt(2.0 * (sum(variances) / len(variances)) / (sum(counts) / len(counts)))


def _repeats_for(needed: dict, guardrails: tuple, size: int, current: int) -> int | None:
    """The repeats (both sides) that bring every need within ``size``, when the noise is the model's own."""
    worst = max((needed[k] for k in guardrails if needed.get(k)), default=0)
    if worst <= size:
        return current
    repeats = math.ceil(current * worst / size)
    return repeats if repeats <= 64 else None


def plan(baseline: Mapping, run=None, *, max_regression: float = DEFAULT_MAX_REGRESSION,
         max_pass_drop: float = DEFAULT_MAX_PASS_DROP, max_refusal_rise: float = DEFAULT_MAX_REFUSAL_RISE,
         alpha: float = DEFAULT_ALPHA, power: float = DEFAULT_POWER) -> list[PlanRow]:
    """One :class:`PlanRow` per task and variation of ``baseline`` (a baseline document); ``run`` (a run's
    records or baseline document) measures the noise (:func:`~.comparison.compare`'s per-statistic sd)."""
    from .comparison import compare

    measured = {}
    if run is not None:
        comparison = compare(baseline, run, max_regression=max_regression, max_pass_drop=max_pass_drop,
                             max_refusal_rise=max_refusal_rise, alpha=alpha, power=power, allow_mismatch=True)
        measured = {(g.task, g.variation): g for g in comparison.groups if g.n >= 2}
    repeats = int((baseline.get("metadata") or {}).get("repeats") or 1)
    groups = _groups(baseline)
    rows = []
    for (task, variation), samples in sorted(groups.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        if variation is not None and sum(1 for t, v in groups if t == task and v is not None) < 2:
            continue  # a task's one variation is its task
        size = len(samples)
        label = task if variation is None else f"{task}/{variation}"
        guardrails = ("mean", "pass_rate") + (
            ("refusal_rate",) if refusal_guardrail(variation is None, size, max_refusal_rise) else ())
        g = measured.get((task, variation))
        if g is not None:
            needed = {k: st.planned for k, st in g.stats.items()}
            source = "run"
        else:
            sd = _repeat_sd(samples)
            source = "repeats" if sd is not None else "none"
            needed = {"mean": planned_size(sd or 0.0, max_regression, alpha=alpha, power=power),
                      "pass_rate": rate_planned_size(0.0, max_pass_drop, alpha=alpha, power=power),
                      "refusal_rate": rate_planned_size(0.0, max_refusal_rise, alpha=alpha, power=power)}
        rows.append(PlanRow(label, size, needed, guardrails, source,
                            _repeats_for(needed, guardrails, size, repeats) if source != "none" else None))
    return rows

