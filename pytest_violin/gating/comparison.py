"""Compare a run with a baseline, per task and per (task, variation): did the model get worse?

:func:`compare` finds one :class:`GroupDelta` per group, each with three paired statistics (:class:`Stat`: the
mean metric, the pass rate, the refusal rate) tested against their margins by a paired bootstrap
(:func:`paired_bootstrap`), and the :class:`Comparison` that holds them with the facts of the two runs.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError
from ..results import Outcome, SampleResult, as_result
from .evidence import DEFAULT_POWER, MIN_TESTED, classify, paired_rate, planned_size, rate_bound, rate_planned_size
from .policy import (DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, DEFAULT_MAX_REFUSAL_RISE, DEFAULT_MAX_REGRESSION,
                     DEFAULT_RESAMPLES, MIN_SHARED, check_alpha, check_power, refusal_guardrail)

__all__ = ["Comparison", "GroupDelta", "Stat", "compare", "no_image_cause", "paired_bootstrap", "selection_text",
           "too_few"]


# --------------------------------------------------------------------------- the paired bootstrap


def _group_seed(seed: int, key: str) -> list[int]:
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return [int(seed) & 0xFFFFFFFF, int.from_bytes(digest, "big")]


#: At most this many distinct differences take the multinomial path of :func:`paired_bootstrap`.
_FEW_VALUES = 16


def _differences(old, new) -> np.ndarray:
    d = np.asarray(new, dtype=np.float64) - np.asarray(old, dtype=np.float64)
    if np.asarray(old).shape != np.asarray(new).shape or d.ndim != 1:
        raise InvalidArgumentError(f"old and new must be 1-d and of one length; got shapes "
                                   f"{np.asarray(old).shape} and {np.asarray(new).shape}")
    return d


def _bootstrap_means(d: np.ndarray, resamples: int, seed) -> np.ndarray:
    """``resamples`` means of ``d`` drawn with replacement (``d`` not constant, at least 2 values)."""
    n = d.size
    rng = np.random.default_rng(seed)
    values, counts = np.unique(d, return_counts=True)
    if values.size <= _FEW_VALUES:
        # few distinct differences: how often each value is drawn is multinomial, the same distribution as
        # drawing the pairs, at a cost per resample of the distinct values instead of the pairs
        return rng.multinomial(n, counts / n, size=int(resamples)) @ values / n
    means = np.empty(int(resamples), dtype=np.float64)
    chunk = max(1, 2_000_000 // n)  # bounded memory: ~16 MB of indices per block
    for start in range(0, int(resamples), chunk):
        stop = min(int(resamples), start + chunk)
        means[start:stop] = d[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return means


def paired_bootstrap(old, new, *, resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95,
                     seed: int | Sequence[int] = 0) -> tuple[float, float]:
    """Percentile interval of ``mean(new - old)`` by a paired bootstrap.

    Pairs are drawn with replacement; the pairing keeps the per-sample difficulty out of the noise. Same
    inputs and seed, same interval; ``(nan, nan)`` for no pairs. Raises :class:`InvalidArgumentError` for
    different lengths, ``resamples < 1`` or ``confidence`` outside (0, 1).
    """
    d = _differences(old, new)
    if int(resamples) < 1:
        raise InvalidArgumentError(f"resamples must be >= 1, got {resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"confidence must lie in (0, 1), got {confidence!r}")
    if d.size == 0:
        return (float("nan"), float("nan"))
    if d.size == 1 or np.all(d == d[0]):
        return (float(d[0]), float(d[0]))
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(_bootstrap_means(d, int(resamples), seed), [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


# --------------------------------------------------------------------------- what compare finds


def _finite_or_none(x):
    return float(x) if x is not None and math.isfinite(float(x)) else None


@dataclass(frozen=True)
class Stat:
    """One paired statistic of a group (:mod:`.evidence`).

    ``old`` / ``new``: the baseline's and this run's value, ``delta`` = ``new - old``; ``ci_low`` / ``ci_high``
    bound the expected ``delta`` at ``1 - alpha / tests`` on each side (the harm and improvement tests);
    ``bound`` is the largest expected *worsening* not ruled out at ``1 - alpha`` (the non-inferiority test:
    the statistic is ``within`` its margin when ``bound`` is below it). For the pass rate the values are pass
    shares and ``delta`` their change, while ``bound`` and ``margin`` are a *fall*. ``n`` pairs, ``sd`` the
    per-sample standard deviation of the worsening, ``planned`` the pairs that would show an unchanged model
    within the margin at the run's power (None when none can), ``guardrail`` whether green needs it
    within, ``status`` one of :data:`~.evidence.STATUSES`.
    """

    old: float = math.nan
    new: float = math.nan
    delta: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    status: str = "not-compared"
    bound: float = math.nan
    margin: float = math.nan
    n: int = 0
    sd: float = math.nan
    planned: int | None = None
    guardrail: bool = True

    def to_dict(self) -> dict:
        f = _finite_or_none
        return {"old": f(self.old), "new": f(self.new), "delta": f(self.delta),
                "ci": [f(self.ci_low), f(self.ci_high)], "status": self.status,
                "ruled_out_above": f(self.bound), "margin": f(self.margin), "n": self.n, "sd": f(self.sd),
                "planned": self.planned, "guardrail": self.guardrail}


@dataclass(frozen=True)
class GroupDelta:
    """One task (``variation=None``) or (task, variation) compared between two runs.

    ``n`` samples are compared (shared, same definition, judged on both sides); ``mean`` is the mean metric
    (margin ``max_regression``), ``pass_rate`` the share within their limits (``max_pass_drop``),
    ``refusal_rate`` the share refused (``max_regression``). ``metric_deltas``: metric -> ``(old, new,
    delta)`` over the samples with an image on both sides. ``no_image`` counts shared samples without an image
    now that had one in the baseline (each counts 1.0), ``no_image_causes`` their ``(cause, count)`` most
    frequent first; ``imaged_delta`` is the mean metric's change over the ``imaged_n`` samples with an image
    on both sides.
    """

    task: str
    variation: str | None
    n: int
    mean: Stat = Stat()
    pass_rate: Stat = Stat()
    refusal_rate: Stat = Stat()
    metric_deltas: dict = field(default_factory=dict)
    newly_failing: tuple = ()
    newly_passing: tuple = ()
    still_failing: int = 0
    newly_refused: tuple = ()
    no_image: int = 0
    no_image_causes: tuple = ()
    imaged_n: int = 0
    imaged_delta: float = math.nan

    @property
    def label(self) -> str:
        return self.task if self.variation is None else f"{self.task}/{self.variation}"

    @property
    def statuses(self) -> dict:
        """Statistic -> status: ``mean``, ``pass_rate``, ``refusal_rate``."""
        return {"mean": self.mean.status, "pass_rate": self.pass_rate.status,
                "refusal_rate": self.refusal_rate.status}

    @property
    def regressed(self) -> tuple:
        return tuple(k for k, v in self.statuses.items() if v == "regressed")

    @property
    def improved(self) -> tuple:
        """The statistics that improved, when none regressed."""
        return () if self.regressed else tuple(k for k, v in self.statuses.items() if v == "improved")

    @property
    def not_shown(self) -> tuple:
        """The guardrails neither shown within their margin nor regressed."""
        return tuple(k for k, v in self.statuses.items() if v == "not-shown")

    @property
    def stats(self) -> dict:
        """Statistic key -> :class:`Stat`."""
        return {"mean": self.mean, "pass_rate": self.pass_rate, "refusal_rate": self.refusal_rate}

    @property
    def outcome(self) -> str:
        """``regressed`` (a statistic shown worse than its margin), ``within`` (every guardrail shown within
        its margin), ``not-shown`` (neither), ``not-compared`` (no samples)."""
        if not self.n:
            return "not-compared"
        if self.regressed:
            return "regressed"
        return "not-shown" if self.not_shown else "within"

    def to_dict(self) -> dict:
        f = _finite_or_none
        mean = self.mean.to_dict()
        return {
            "task": self.task, "variation": self.variation, "n": self.n,
            "old": mean["old"], "new": mean["new"], "delta": mean["delta"], "ci": mean["ci"],
            "status": self.mean.status, "regressed": list(self.regressed), "outcome": self.outcome,
            "not_shown": list(self.not_shown), "mean": mean,
            "metric_deltas": {k: [f(x) for x in v] for k, v in self.metric_deltas.items()},
            "newly_failing": list(self.newly_failing), "newly_passing": list(self.newly_passing),
            "still_failing": self.still_failing,
            "pass_rate": self.pass_rate.to_dict(),
            "refusals": {**self.refusal_rate.to_dict(), "newly_refused": list(self.newly_refused)},
            "no_image": {"count": self.no_image, "causes": [list(c) for c in self.no_image_causes],
                         "imaged": self.imaged_n, "imaged_delta": f(self.imaged_delta)},
        }


@dataclass(frozen=True)
class Comparison:
    """Everything :func:`compare` found.

    ``groups``: task rows then (task, variation) rows, sorted. ``tests``: statistics tested (three per
    compared group), each side of each interval at ``alpha / tests``. ``too_few``: ``(task, shared, in_run)``
    of the tasks the gate cannot decide (fewer than :data:`~.policy.MIN_SHARED` comparable samples, or fewer
    than half the run's, in the baseline). ``errored``: shared ids that ended in an error now (the gate is not
    green while there is one); ``errored_in_baseline``: in the baseline only (reported). ``missing`` /
    ``added``: ids on one side only; ``changed``: shared ids redefined (not compared). ``metadata_changes``:
    field -> ``(baseline, current)``.
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
    #: Why the baseline samples this run lacks were not run, when it is not a selection: e.g. "the sequential
    #: gate (--violin-sequential) did not need" (read by :func:`selection_text`).
    unrun_reason: str = ""
    #: ``"sequential"`` when --violin-sequential decided the gate (its verdict is then
    #: :attr:`sequential_regressions`, the groups it showed regressed); else ``"fixed-sample"``.
    decided_by: str = "fixed-sample"
    sequential_regressions: tuple = ()
    #: The refusal rate's margin (``--violin-max-refusal-rise``), the power the planned sizes are for
    #: (``--violin-power``), and whether a run with guardrails not shown passes (``--violin-accept-not-shown``).
    max_refusal_rise: float = DEFAULT_MAX_REFUSAL_RISE
    power: float = DEFAULT_POWER
    accept_not_shown: bool = False
    #: A sequential gate's groups shown within their margins (its verdict for them).
    sequential_within: tuple | None = None

    @property
    def selection(self) -> bool:
        """True when this run holds part of the baseline's samples, none redefined and none
        added: a ``-k`` / ``--deselect`` / ``--lf`` selection of an unchanged suite."""
        return bool(self.missing) and not self.added and not self.changed

    def _with(self, statistic: str) -> tuple:
        return tuple(g for g in self.groups if getattr(g, statistic).status == "regressed")

    @property
    def regressions(self) -> tuple:
        """Groups whose mean metric regressed."""
        return self._with("mean")

    @property
    def refusal_regressions(self) -> tuple:
        return self._with("refusal_rate")

    @property
    def regressed_groups(self) -> tuple:
        """Groups with any statistic regressed (the fixed-sample verdict)."""
        return tuple(g for g in self.groups if g.regressed)

    @property
    def improvements(self) -> tuple:
        return tuple(g for g in self.groups if g.improved)

    @property
    def not_shown_groups(self) -> tuple:
        """Compared groups with a guardrail neither within its margin nor regressed (with a decided
        sequential gate: the groups it did not show within)."""
        if self.decided_by == "sequential" and self.sequential_within is not None:
            within = set(self.sequential_within)
            variations = Counter(g.task for g in self.groups if g.variation is not None)
            # the sequential gate watches a task's one variation through its task
            return tuple(g for g in self.groups if g.n and g.label not in within
                         and not (g.variation is not None and variations[g.task] == 1 and g.task in within)
                         and g.label not in self.sequential_regressions)
        return tuple(g for g in self.groups if g.outcome == "not-shown")

    @property
    def outcome(self) -> str:
        """The run's outcome: ``regressed``, ``errored`` (a sample ended in an error), ``not-decided``
        (nothing or too little compared), ``not-shown`` (a guardrail neither within nor regressed),
        ``within-margin`` (every guardrail of every group shown within its margin)."""
        sequential = self.decided_by == "sequential"
        if (self.sequential_regressions if sequential else self.regressed_groups):
            return "regressed"
        if self.errored:
            return "errored"
        if self.compared == 0 or self.undecidable:
            return "not-decided"
        return "not-shown" if self.not_shown_groups else "within-margin"

    @property
    def newly_passing(self) -> tuple:
        """Known failures of the baseline within their limits now (task rows only, so once each)."""
        return tuple(i for g in self.groups if g.variation is None for i in g.newly_passing)

    @property
    def compared(self) -> int:
        return sum(g.n for g in self.groups if g.variation is None)

    @property
    def undecidable(self) -> bool:
        """A task shares too few samples with the baseline and --violin-allow-mismatch is off."""
        return bool(self.too_few) and not self.allow_mismatch

    @property
    def ok(self) -> bool:
        """Green: every guardrail shown within its margin (or, with ``accept_not_shown``, nothing
        regressed), none ended in an error, enough compared."""
        outcome = self.outcome
        return outcome == "within-margin" or (outcome == "not-shown" and self.accept_not_shown)

    def to_dict(self) -> dict:
        """JSON-able form (embedded in results.json)."""
        sequential = self.decided_by == "sequential"
        # "regressions": every group the fixed-sample rule shows worse, on any statistic
        fixed = {"regressions": [g.label for g in self.regressed_groups],
                 "mean_regressions": [g.label for g in self.regressions],
                 "pass_rate_regressions": [g.label for g in self._with("pass_rate")],
                 "refusal_regressions": [g.label for g in self.refusal_regressions]}
        return {
            "baseline": self.baseline_path, "max_regression": self.max_regression,
            "max_pass_drop": self.max_pass_drop, "max_refusal_rise": self.max_refusal_rise,
            "alpha": self.alpha, "power": self.power, "tests": self.tests, "ok": self.ok,
            "outcome": self.outcome, "accept_not_shown": self.accept_not_shown,
            "not_shown": [g.label for g in self.not_shown_groups],
            "compared": self.compared,
            "too_few": [{"task": t, "shared": s, "in_run": n} for t, s, n in self.too_few],
            "allow_mismatch": self.allow_mismatch, "errored": list(self.errored),
            "errored_in_baseline": list(self.errored_in_baseline), "decided_by": self.decided_by,
            "regressions": list(self.sequential_regressions) if sequential else fixed["regressions"],
            **{k: [] if sequential else fixed[k]
               for k in ("mean_regressions", "pass_rate_regressions", "refusal_regressions")},
            # what the fixed-sample rule says of the samples a sequential gate generated (for information: a
            # prefix the gate stopped; not the verdict)
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


# --------------------------------------------------------------------------- compare


#: The longest cause of a missing image kept (the error's first line).
_CAUSE_CHARS = 120


def no_image_cause(rec) -> str:
    """Why a judged sample has no image: ``refused``, its error's first line (cut), or
    ``no image in the answer``."""
    rec = as_result(rec)
    if rec.outcome is Outcome.REFUSED:
        return "refused"
    error = str(rec.error or "").strip()
    if not error:
        return "no image in the answer"
    line = error.splitlines()[0].strip()
    return line if len(line) <= _CAUSE_CHARS else line[:_CAUSE_CHARS - 1] + "…"


def _mean(values) -> float:
    return float(sum(values) / len(values)) if values else float("nan")


def _by_id(doc_or_records) -> dict[str, SampleResult]:
    if isinstance(doc_or_records, Mapping) and "samples" in doc_or_records:
        doc_or_records = doc_or_records["samples"]
    return {r.sample_id: r for r in map(as_result, doc_or_records)}


def too_few(shared_by_task: Mapping, in_run: Mapping, baseline_tasks=()) -> tuple:
    """The tasks the gate cannot decide (see :attr:`Comparison.too_few`): ``shared_by_task`` / ``in_run`` task ->
    comparable samples shared with the baseline / samples in the run; a task of ``baseline_tasks`` that shares
    none counts as sharing 0 (too few), a task the baseline lacks is judged by its samples' limits."""
    shared_by_task = dict(shared_by_task)
    for task in set(baseline_tasks) & set(in_run):
        shared_by_task.setdefault(task, 0)
    out = []
    for task in sorted(in_run):
        shared, total = int(shared_by_task.get(task, 0)), int(in_run[task])
        if shared == 0 and task not in shared_by_task:
            continue  # a task the baseline lacks: its samples are judged by their limits
        if shared < MIN_SHARED or 2 * shared < total:
            out.append((task, shared, total))
    return tuple(out)


@dataclass(frozen=True)
class _Rule:
    """How every group is tested (:mod:`.evidence`): the margins, the error rates, the bootstrap's settings."""

    max_regression: float
    max_pass_drop: float
    max_refusal_rise: float
    alpha: float
    tests: int
    power: float
    resamples: int
    seed: int

    @property
    def alpha_each(self) -> float:
        """The harm and improvement tests' error rate: ``alpha`` split over every group and statistic."""
        return self.alpha / max(1, self.tests)

    def mean_stat(self, old, new, key: str) -> Stat:
        """The mean metric of a group: the paired bootstrap's quantiles at the harm, improvement and
        non-inferiority levels (one set of resamples)."""
        margin = self.max_regression
        d = _differences(old, new)
        n = int(d.size)
        if n >= 2 and not np.all(d == d[0]):
            means = _bootstrap_means(d, self.resamples, _group_seed(self.seed, key))
            lo, hi, bound = (float(q) for q in np.quantile(
                means, [self.alpha_each, 1.0 - self.alpha_each, 1.0 - self.alpha]))
        else:
            lo = hi = bound = float(d[0])
        sd = float(d.std(ddof=1)) if n >= 2 else math.nan
        status = classify(harm_low=lo, high=hi, bound=bound, margin=margin, tested=n >= MIN_TESTED)
        mean = float(d.mean())
        return Stat(float(np.mean(old)), float(np.mean(new)), mean, lo, hi, status, bound, margin, n, sd,
                    planned_size(sd if n >= 2 else 0.0, margin, alpha=self.alpha, power=self.power), True)

    def rate_stat(self, old_bad, new_bad, margin: float, *, pass_rate: bool = False,
                  guardrail: bool = True) -> Stat:
        """A rate of a group (failing or refused, 1 = bad): Tango's score bounds of the paired difference,
        which stay honest when no pair differs. ``pass_rate`` reports the shares passing instead."""
        pairs = list(zip(map(bool, old_bad), map(bool, new_bad)))
        n = len(pairs)
        worse = sum(1 for o, nw in pairs if nw and not o)
        better = sum(1 for o, nw in pairs if o and not nw)
        lo = rate_bound(worse, better, n, alpha=self.alpha_each, side="lower")
        hi = rate_bound(worse, better, n, alpha=self.alpha_each, side="upper")
        bound = rate_bound(worse, better, n, alpha=self.alpha, side="upper")
        discordant = (worse + better) / n
        sd = paired_rate(worse, better, n)[1] if n >= 2 else math.nan
        status = classify(harm_low=lo, high=hi, bound=bound, margin=margin, guardrail=guardrail,
                          tested=n >= MIN_TESTED)
        planned = rate_planned_size(discordant, margin, alpha=self.alpha, power=self.power)
        old_share = sum(o for o, _ in pairs) / n
        new_share = sum(nw for _, nw in pairs) / n
        if pass_rate:  # tested on the share failing, reported as the share passing
            return Stat(1.0 - old_share, 1.0 - new_share, old_share - new_share, -hi, -lo, status, bound,
                        margin, n, sd, planned, guardrail)
        return Stat(old_share, new_share, new_share - old_share, lo, hi, status, bound, margin, n, sd, planned,
                    guardrail)

    def group(self, task, var, ids, old: dict, new: dict) -> GroupDelta:
        if not ids:
            return GroupDelta(task, var, 0)
        label = task if var is None else f"{task}/{var}"
        a, b = [old[i] for i in ids], [new[i] for i in ids]
        refused = [(x.outcome is Outcome.REFUSED, y.outcome is Outcome.REFUSED) for x, y in zip(a, b)]
        imaged = [(x, y) for x, y in zip(a, b) if x.metrics and y.metrics]
        lost = [y for x, y in zip(a, b) if x.metrics and not y.metrics]
        return GroupDelta(
            task, var, len(ids),
            mean=self.mean_stat([x.value for x in a], [y.value for y in b], label),
            pass_rate=self.rate_stat([x.outcome.failing for x in a], [y.outcome.failing for y in b],
                                     self.max_pass_drop, pass_rate=True),
            refusal_rate=self.rate_stat([r[0] for r in refused], [r[1] for r in refused], self.max_refusal_rise,
                                        guardrail=refusal_guardrail(var is None, len(ids),
                                                                    self.max_refusal_rise)),
            metric_deltas=_metric_deltas(imaged),
            newly_failing=tuple(i for i, x, y in zip(ids, a, b) if not x.outcome.failing and y.outcome.failing),
            newly_passing=tuple(i for i, x, y in zip(ids, a, b) if x.outcome.failing and not y.outcome.failing),
            still_failing=sum(1 for x, y in zip(a, b) if x.outcome.failing and y.outcome.failing),
            newly_refused=tuple(i for i, r in zip(ids, refused) if r[1] and not r[0]),
            no_image=len(lost), no_image_causes=tuple(Counter(map(no_image_cause, lost)).most_common()),
            imaged_n=len(imaged),
            imaged_delta=(_mean([y.value for _, y in imaged]) - _mean([x.value for x, _ in imaged])
                          if imaged else math.nan),
        )


def _metric_deltas(imaged: list) -> dict:
    names = dict.fromkeys(k for pair in imaged for r in pair for k in r.metrics if k != "mean")
    out = {}
    for k in names:
        pairs = [(x.metrics[k], y.metrics[k]) for x, y in imaged if k in x.metrics and k in y.metrics]
        a, b = _mean([float(p[0]) for p in pairs]), _mean([float(p[1]) for p in pairs])
        out[k] = (a, b, b - a)
    return out


def _check_margins(max_regression, max_pass_drop, alpha, max_refusal_rise, power) -> None:
    for name, value in (("max_regression", max_regression), ("max_pass_drop", max_pass_drop),
                        ("max_refusal_rise", max_refusal_rise)):
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and 0 <= value <= 1):
            raise InvalidArgumentError(f"{name} must be a number in [0, 1], got {value!r}")
    check_alpha(alpha)
    check_power(power)


def _sort_shared(old: dict, new: dict) -> tuple:
    """``(changed, errored, errored_before, shared)`` ids of the samples both runs hold."""
    changed, errored, errored_before, shared = [], [], [], []
    for sid in sorted(set(old) & set(new)):
        a, b = old[sid].definition, new[sid].definition
        if a and b and a != b:
            changed.append(sid)
        elif new[sid].outcome is Outcome.ERROR:
            errored.append(sid)
        elif old[sid].outcome is Outcome.ERROR:
            errored_before.append(sid)
        else:
            shared.append(sid)
    return changed, errored, errored_before, shared


def _groups(old: dict, new: dict, shared: list) -> dict:
    """(task, variation or None) -> shared ids; groups on one side only appear with no ids."""
    keys: dict[tuple, list] = {}
    for side in (old, new):
        for s in side.values():
            keys.setdefault((str(s.task), None), [])
            keys.setdefault((str(s.task), s.variation), [])
    for sid in shared:
        s = new[sid]
        keys[(str(s.task), None)].append(sid)
        keys[(str(s.task), s.variation)].append(sid)
    return keys


def _metadata(doc) -> dict:
    return doc.get("metadata", {}) if isinstance(doc, Mapping) and "metadata" in doc else {}


def compare(baseline: Mapping, current, *, max_regression: float = DEFAULT_MAX_REGRESSION,
            max_pass_drop: float = DEFAULT_MAX_PASS_DROP, alpha: float = DEFAULT_ALPHA,
            resamples: int = DEFAULT_RESAMPLES, seed: int = 0, baseline_path: str | None = None,
            population: Mapping | None = None, allow_mismatch: bool = False,
            max_refusal_rise: float | None = None, power: float = DEFAULT_POWER,
            accept_not_shown: bool = False) -> Comparison:
    """Compare a run with a baseline (:func:`read_baseline`): is the model within its margins?

    ``current`` is a baseline document (:func:`build_baseline`) or the run's results. Per task and variation,
    each statistic (the mean metric, margin ``max_regression``; the pass rate, ``max_pass_drop``; the refusal
    rate, ``max_refusal_rise``, ``max_regression`` when None) is *within* its margin when its upper bound at
    ``1 - alpha`` is below it, *regressed* when its lower bound at ``1 - alpha / tests`` is above it, and *not
    shown* otherwise (:mod:`.evidence`); the run is green (:attr:`Comparison.ok`) only when every guardrail of
    every group is within, or nothing regressed and ``accept_not_shown``. Not-shown statistics carry the
    samples that would show an unchanged model within at ``power``. ``population`` (task -> ``(shared,
    in_run)``, a sequential gate's) is what the overlap is judged on instead of the samples compared;
    ``allow_mismatch`` decides tasks that share too few samples.
    """
    if max_refusal_rise is None:
        max_refusal_rise = max_regression
    _check_margins(max_regression, max_pass_drop, alpha, max_refusal_rise, power)
    old, new = _by_id(baseline), _by_id(current)
    changed, errored, errored_before, shared = _sort_shared(old, new)
    keys = _groups(old, new, shared)
    tests = 3 * sum(1 for ids in keys.values() if ids)
    rule = _Rule(float(max_regression), float(max_pass_drop), float(max_refusal_rise), float(alpha), tests,
                 float(power), resamples, seed)
    order = sorted(keys.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None, kv[0][1] or ""))
    groups = tuple(rule.group(task, var, ids, old, new) for (task, var), ids in order)
    if population is None:
        few = too_few(Counter(str(new[i].task) for i in shared), Counter(str(s.task) for s in new.values()),
                      {str(s.task) for s in old.values()})
    else:
        few = too_few({t: int(v[0]) for t, v in population.items()}, {t: int(v[1]) for t, v in population.items()})
    old_meta, new_meta = _metadata(baseline), _metadata(current)
    old_fp, new_fp = str(old_meta.get("fingerprint", "")), str(new_meta.get("fingerprint", ""))
    meta_changes = {k: (old_meta[k], new_meta[k])
                    for k in ("suite", "profile", "seed", "adapter", "package_version", "repeats", "pass_rule")
                    if k in old_meta and k in new_meta and old_meta[k] != new_meta[k]}
    return Comparison(
        groups=groups, max_regression=float(max_regression), max_pass_drop=float(max_pass_drop),
        alpha=float(alpha), tests=tests, too_few=few,
        allow_mismatch=bool(allow_mismatch), errored=tuple(errored), errored_in_baseline=tuple(errored_before),
        missing=tuple(sorted(set(old) - set(new))), added=tuple(sorted(set(new) - set(old))),
        changed=tuple(changed), fingerprint_changed=bool(old_fp and new_fp and old_fp != new_fp),
        old_fingerprint=old_fp, new_fingerprint=new_fp, metadata_changes=meta_changes,
        baseline_path=baseline_path, baseline_samples=len(old), current_samples=len(new),
        max_refusal_rise=float(max_refusal_rise), power=float(power), accept_not_shown=bool(accept_not_shown),
    )
