"""The sequential gate: decide a release from the first samples of a random order.

Pure logic, no pytest (the plugin wiring is :mod:`pytest_violin.pytest_plugin._sequential`); docs/gating.md
("The sequential gate") is the full account. Every task, and every (task, variation) of a task with several,
is a group watching three paired statistics of the samples it shares with the baseline (:data:`STATISTICS`:
the mean metric, the fail rate, the refusal rate). Two tests run on each:

* **harm**, at every sample: an anytime-valid :class:`~._confseq.MeanSequence` for the *expected* value, its
  lower bound at ``alpha / (3 groups)`` (Bonferroni): a group is regressed as soon as one is above its margin;
* **within the margin**, at planned looks (:data:`LOOKS` of the group's samples, none before
  :data:`SUCCESS_FLOOR` but the last): a group-sequential non-inferiority test of each guardrail at
  ``alpha`` (:func:`~.evidence.group_sequential_bounds`, O'Brien-Fleming-like spending: Hwang-Shih-DeCani,
  gamma -4); a guardrail shown within stays within, and a group is within once every guardrail is (the refusal
  rate is a guardrail only of a task large enough, :func:`~.policy.refusal_guardrail`);
* **futility**, at the same shares (on 30 samples or more): a group that can reasonably end neither within
  nor regressed stops (:data:`FUTILITY`).

A group whose samples ran out, or that stopped for futility, is *not shown*. The gate fails as soon as a group regressed, passes when every
group is within, and otherwise ends not shown (every comparison by :func:`~.policy.above_margin`). Samples
ending in an error are left out.

The strata of :func:`sequential_order` must be the tasks: each next value of a group must be a random draw of
the group, which an order stratified *within* a task breaks.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from ..results import Outcome, sample_value
from ._confseq import MeanSequence
from .evidence import MIN_TESTED, group_sequential_bounds, normal_cdf, normal_z, paired_rate, rate_bound
from .policy import (DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, TIE_TOLERANCE, above_margin, check_alpha,
                     refusal_guardrail)

__all__ = ["DEFAULT_ALPHA", "LOOKS", "STATISTICS", "SUCCESS_FLOOR", "Member", "SequentialGate", "population",
           "sequential_order"]

#: The paired statistics every group watches, in the order the reports show them.
STATISTICS = ("mean", "fail", "refusal")

#: The shares of a group's samples at which its guardrails are tested for "within the margin".
LOOKS = (0.25, 0.5, 0.75, 1.0)

#: A group stops, not shown, at a look (before its last) where the chance that it is shown within by its last
#: sample, its remaining samples like those seen, is below this (conditional power), and nothing is heading
#: above a margin: a model too noisy for its samples need not pay for them all.
FUTILITY = 0.1

#: No look before the last one on fewer samples than this: a regression carried by a few samples (2% of the
#: triangles 1 margin worse) is missing from a short prefix, whose small spread then looks like evidence.
SUCCESS_FLOOR = 300


@dataclass(frozen=True)
class Member:
    """One sample of the gate's population: its group, its baseline value and outcome."""

    id: str
    task: str
    variation: str | None
    old: float
    old_outcome: Outcome = Outcome.PASSED

    @property
    def old_failed(self) -> bool:
        return Outcome(self.old_outcome) is not Outcome.PASSED

    @property
    def old_refused(self) -> bool:
        return Outcome(self.old_outcome) is Outcome.REFUSED


def population(baseline: Mapping, samples) -> dict:
    """Sample id -> :class:`Member` of the run's ``samples`` (``(id, task, variation,
    definition)``; a None definition matches any) that the baseline holds with the same
    definition and not ended in an error there."""
    old = {str(s["id"]): s for s in baseline.get("samples") or () if isinstance(s, Mapping)}
    out = {}
    for sid, task, variation, definition in samples:
        rec = old.get(str(sid))
        if rec is None or rec.get("outcome") == Outcome.ERROR:
            continue
        if definition and rec.get("definition") and rec.get("definition") != definition:
            continue
        # clipped to [0, 1] as the new values are (the reader checks only that metrics are finite)
        out[str(sid)] = Member(str(sid), str(task), None if variation is None else str(variation),
                               min(1.0, max(0.0, float(sample_value(rec.get("metrics") or {})))),
                               Outcome(rec.get("outcome") or Outcome.FAILED))
    return out


def _rank(seed: int, sid: str) -> float:
    digest = hashlib.sha256(f"violin-sequential:{int(seed)}:{sid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


def sequential_order(ids, groups: Mapping, *, seed: int, cached=()) -> list:
    """The order in which the sequential gate generates ``ids``: the ``cached`` ones first,
    then the population (``groups``: id -> stratum, the task) in a ``seed``-ed order that is
    the same on every machine and xdist worker, then the ids outside it as given."""
    ids = list(ids)
    cached = set(cached)
    by_group: dict = {}
    for sid in ids:
        if sid in groups:
            by_group.setdefault(groups[sid], []).append(sid)
    key = {}
    for label, members in by_group.items():
        # a seeded permutation of the group, spread evenly over [0, 1): position k of n sits at (k + u) / n,
        # so every group is drawn from the start, in proportion
        members.sort(key=lambda sid: _rank(seed, sid))
        n = len(members)
        for k, sid in enumerate(members):
            key[sid] = (k + _rank(seed + 1, sid)) / n
    inside = [sid for sid in ids if sid in key]
    inside.sort(key=lambda sid: (sid not in cached, key[sid]))
    return inside + [sid for sid in ids if sid not in key]


def _ranges(olds: list) -> dict:
    """Each statistic's range of ``d`` in a group, from its baseline members (the new side of a
    pair is anything in [0, 1] / {0, 1}). A range that is all <= 0 (the baseline at the worst everywhere) is
    widened by a hair above 0, as :class:`MeanSequence` needs ``high > 0``: the
    group's upper bound is then at once below any margin."""
    values = [m.old for m in olds]
    failed = [m.old_failed for m in olds]
    refused = [m.old_refused for m in olds]
    return {"mean": (-max(values), max(1.0 - min(values), 1e-6)),
            "fail": (-1.0 if any(failed) else 0.0, 1.0 if not all(failed) else 1e-6),
            "refusal": (-1.0 if any(refused) else 0.0, 1.0 if not all(refused) else 1e-6)}


class _Group:
    def __init__(self, label: str, task: str, variation, members: list, role: str):
        self.label, self.task, self.variation, self.role = label, task, variation, role
        self.members = members  # ids in the gate's order (the cached ones lead)
        self.status = "undecided"
        self.sequences: dict = {}  # statistic -> MeanSequence
        self.next = 0              # the next member of the stream to feed
        self.used = 0              # values fed (errors are not)
        self.errors = 0
        self.decided_at: int | None = None  # samples the whole gate had taken when this group decided
        self.guardrails: tuple = ()  # the statistics that must be shown within (set by the gate)
        self.within: dict = {}       # statistic -> the look (samples used) at which it was shown within
        self.looks: tuple = ()       # samples used at each look
        self.critical: tuple = ()    # the looks' critical values
        self.sums = [0.0, 0.0]       # the mean metric's d: sum and sum of squares
        self.counts = {"fail": [0, 0], "refusal": [0, 0]}  # (worse, better) pairs of each rate
        self.last_bounds: dict = {}  # statistic -> the non-inferiority bound at the latest look
        self.looked_last = False     # the last look was taken
        self.futility_looks: tuple = ()  # samples used at each look for futility
        self.futile = False          # it cannot reasonably be shown within: not shown, stopped
        self.harm_z = math.inf       # the harm test's critical value (set by the gate), for futility

    @property
    def ended(self) -> bool:
        """Every member's result has entered (or left as an error): the stream is over."""
        return self.next >= len(self.members)

    def to_dict(self, margins: dict) -> dict:
        stats = {}
        for name in STATISTICS:
            seq = self.sequences.get(name)
            low, high = seq.interval if seq is not None and seq.seen else (None, None)
            estimate = seq.mean if seq is not None else None
            stats[name] = {"interval": None if low is None else [round(low, 6), round(high, 6)],
                           "estimate": None if estimate is None else round(estimate, 6),
                           "margin": margins[name],
                           "above": bool(seq is not None and seq.seen and seq.above_margin),
                           "below": bool(seq is not None and seq.seen and seq.below_margin)}
        mean = stats["mean"]["interval"] or [None, None]
        for name in STATISTICS:
            bound = self.last_bounds.get(name)
            stats[name].update(guardrail=name in self.guardrails, within_after=self.within.get(name),
                               ruled_out_above=None if bound is None else round(bound, 6))
        return {"group": self.label, "task": self.task, "variation": self.variation, "role": self.role,
                "status": self.status, "size": len(self.members), "used": self.used, "errors": self.errors,
                "interval": mean, "statistics": stats, "decided_after": self.decided_at,
                "ended": self.ended, "looks": list(self.looks), "futile": self.futile}

    def take(self, values) -> None:
        """Count one sample's three differences for the looks."""
        d, fail, refusal = values
        self.sums[0] += d
        self.sums[1] += d * d
        for name, x in (("fail", fail), ("refusal", refusal)):
            if x > 0:
                self.counts[name][0] += 1
            elif x < 0:
                self.counts[name][1] += 1

    def _estimate(self, name: str) -> tuple:
        """``(mean, sd)`` of a statistic's paired differences so far (``used`` >= 2)."""
        n = self.used
        if name == "mean":
            mean = self.sums[0] / n
            return mean, math.sqrt(max(0.0, (self.sums[1] - n * mean * mean) / (n - 1)))
        return paired_rate(*self.counts[name], n)

    def look(self, margins: dict, *, last: bool = False) -> None:
        """At a planned look: each guardrail not yet within is tested at the look's critical value.
        ``last``: the stream ended short of its last look (errors left it), which is taken now."""
        if not last and self.used in self.futility_looks:
            self.futile = self._futile(margins)
        if last:
            if not self.looks or self.looked_last or self.used < MIN_TESTED:
                return
            c = self.critical[-1]
        elif self.used in self.looks:
            c = self.critical[self.looks.index(self.used)]
        else:
            return
        self.looked_last = self.looked_last or last or self.used == self.looks[-1]
        n = self.used
        for name in STATISTICS:
            if n < 2:
                break
            if name == "mean":
                mean, sd = self._estimate(name)
                bound = mean + c * sd / math.sqrt(n)
            else:
                worse, better = self.counts[name]
                bound = rate_bound(worse, better, n, alpha=1.0 - normal_cdf(c), side="upper")
            self.last_bounds[name] = bound
            if name in self.guardrails and name not in self.within and above_margin(margins[name], bound):
                self.within[name] = n

    def _futile(self, margins: dict) -> bool:
        """Whether, at this look, the group can reasonably end neither within nor regressed: a guardrail
        whose conditional power to be shown within by its last look (the rest of the stream like what came
        so far) is under :data:`FUTILITY`, while no statistic's conditional power to be shown above its
        margin (at the harm test's level, :attr:`harm_z`, a fixed-sample approximation that favours going on)
        reaches it either. Stopping for futility never calls a group within, so the error rate of "within"
        is not spent; it spares a noisy model's run the samples that could not make it green."""
        n, size, c = self.used, len(self.members), self.critical[-1]
        estimates = {name: self._estimate(name) for name in STATISTICS}

        def reach(gap: float, sd: float) -> float:
            spread = sd * math.sqrt(size - n) / size
            if spread <= 0:  # nothing varies: the bound stays where it is (ties by the one rule)
                return 1.0 if gap > TIE_TOLERANCE else 0.0
            return normal_cdf(gap / spread)

        for name, (mean, sd) in estimates.items():
            if reach(mean - margins[name] - self.harm_z * sd / math.sqrt(size), sd) >= FUTILITY:
                return False  # a regression is within reach: the harm test goes on
        for name in self.guardrails:
            if name in self.within:
                continue
            mean, sd = estimates[name]
            if name != "mean":
                sd = max(sd, c / math.sqrt(size))  # a rate's score bound is about c^2 / N with nothing changed
            if reach(margins[name] - c * sd / math.sqrt(size) - mean, sd) < FUTILITY:
                return True
        return False


class SequentialGate:
    """The state of one sequential gate over ``members`` (:func:`population`) in ``order``
    (:func:`sequential_order`); ``margin`` is the mean metric's, ``max_pass_drop`` the fail rate's,
    ``max_refusal_rise`` the refusal rate's (``margin`` when None); ``alpha`` is the error rate of the harm
    tests over every group and statistic, and of each guardrail's test for "within".
    """

    def __init__(self, members: Mapping, order, *, cached=(), margin: float,
                 max_pass_drop: float = DEFAULT_MAX_PASS_DROP, alpha: float = DEFAULT_ALPHA,
                 max_refusal_rise: float | None = None):
        check_alpha(alpha)
        if max_refusal_rise is None:
            max_refusal_rise = margin
        for name, value in (("margin", margin), ("max_pass_drop", max_pass_drop),
                            ("max_refusal_rise", max_refusal_rise)):
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and 0 <= value <= 1):
                raise InvalidArgumentError(f"{name} must be a finite number in [0, 1], got {value!r}")
        self.members = dict(members)
        self.order = [sid for sid in order if sid in self.members]
        self.cached = {sid for sid in cached if sid in self.members}
        self.margin = float(margin)
        self.margins = {"mean": self.margin, "fail": float(max_pass_drop), "refusal": float(max_refusal_rise)}
        self.alpha = float(alpha)
        tasks: dict = {}
        variations: dict = {}
        for sid in self.order:
            m = self.members[sid]
            tasks.setdefault(m.task, []).append(sid)
            variations.setdefault((m.task, m.variation), []).append(sid)
        per_task: dict = {}
        for (task, _), ids in variations.items():
            per_task[task] = per_task.get(task, 0) + 1
        self.groups: list = []  # each task, then its variations (as the reports list them)
        for t in sorted(tasks):
            self.groups.append(_Group(t, t, None, tasks[t], "task"))
            for (task, var) in sorted((k for k in variations if k[0] == t and per_task[t] > 1),
                                      key=lambda k: str(k[1])):
                self.groups.append(_Group(f"{task}/{var}", task, var, variations[(task, var)], "variation"))
        # Bonferroni over every group and statistic, each side
        self.alpha_low = self.alpha_high = self.alpha / max(1, len(self.groups) * len(STATISTICS))
        for g in self.groups:
            for name, (low, high) in _ranges([self.members[sid] for sid in g.members]).items():
                g.sequences[name] = MeanSequence(self.margins[name], alpha_low=self.alpha_low,
                                                 alpha_high=self.alpha_high, low=low, high=high)
            self._plan(g)
        self._of: dict = {}  # sample id -> its groups
        for g in self.groups:
            for sid in g.members:
                self._of.setdefault(sid, []).append(g)
        self._pairs = {(m.task, m.variation): self._of[sid] for sid, m in self.members.items()}
        self._position = {sid: i for i, sid in enumerate(self.order)}
        self._arrived: list = []  # positions in the order of the samples arrived, sorted
        self._values: dict = {}   # id -> (d mean, d fail, d refusal) once arrived, None for an error
        self._fed: set = set()    # ids whose values entered a decision
        self.used = 0             # their count
        self.finished: str | None = None  # why no more samples are needed
        self.verdict = "undecided"
        if not self.groups:
            self.finished = "no sample of this run is in the baseline"

    def _plan(self, g: _Group) -> None:
        """The group's guardrails and looks: each share of :data:`LOOKS` of its samples, on at least
        :data:`SUCCESS_FLOOR` of them but the last, with their critical values at ``alpha``. A group of
        fewer than :data:`~.evidence.MIN_TESTED` samples has no look: it cannot be shown within."""
        size = len(g.members)
        g.guardrails = ("mean", "fail") + (
            ("refusal",) if refusal_guardrail(g.role == "task", size, self.margins["refusal"]) else ())
        g.harm_z = normal_z(self.alpha_low)
        if size < MIN_TESTED:
            return
        looks = sorted({min(size, math.ceil(t * size - TIE_TOLERANCE)) for t in LOOKS
                        if t >= 1.0 or t * size >= SUCCESS_FLOOR})
        g.looks = tuple(looks)
        # futility may look before the floor: stopping for it never calls a group within
        g.futility_looks = tuple(sorted({math.ceil(t * size - TIE_TOLERANCE) for t in LOOKS[:-1]}
                                        & set(range(MIN_TESTED, size))))
        g.critical = group_sequential_bounds(tuple(n / size for n in looks), self.alpha)

    # -- input -------------------------------------------------------------
    def add(self, sample_id: str, value: float | None, outcome: Outcome = Outcome.PASSED) -> None:
        """Take one sample's result: its mean metric and outcome, or None (or outcome ``error``)
        for an error (left out of the population).

        Ignored once the gate has finished, and for ids outside the population.
        """
        sid = str(sample_id)
        if self.finished is not None or sid not in self.members or sid in self._values:
            return
        bisect.insort(self._arrived, self._position[sid])
        outcome = Outcome(outcome)
        if value is None or outcome is Outcome.ERROR:
            self._values[sid] = None
        else:
            m = self.members[sid]
            new = min(1.0, max(0.0, float(value)))
            self._values[sid] = (new - m.old, float(outcome is not Outcome.PASSED) - float(m.old_failed),
                                 float(outcome is Outcome.REFUSED) - float(m.old_refused))
        for g in self._of.get(sid, ()):
            self._advance(g)
        self._decide()

    def _advance(self, g: _Group) -> None:
        """Feed ``g``'s sequences the values that arrived, in the gate's order (an answer that
        arrives early waits for its turn; an error is skipped)."""
        while g.next < len(g.members) and g.members[g.next] in self._values:
            sid = g.members[g.next]
            g.next += 1
            values = self._values[sid]
            if values is None:
                g.errors += 1
                continue
            if g.status != "undecided":
                continue  # decided: what arrives anyway changes nothing
            for name, d in zip(STATISTICS, values):
                g.sequences[name].add(d)
            g.take(values)
            g.used += 1
            g.look(self.margins)
            self._fed.add(sid)
        if g.ended and g.status == "undecided":
            g.look(self.margins, last=True)

    def _decide(self) -> None:
        self.used = len(self._fed)
        for g in self.groups:
            if g.status != "undecided":
                continue
            if g.used and any(s.above_margin for s in g.sequences.values()):
                g.status, g.decided_at = "regressed", self.used
            elif g.used and all(name in g.within for name in g.guardrails):
                g.status, g.decided_at = "within", self.used
            elif g.ended or g.futile:
                g.status, g.decided_at = "not-shown", self.used
        if any(g.status == "regressed" for g in self.groups):
            self.verdict = "regressed"
            self.finished = f"a regression is shown ({', '.join(self.regressed)})"
        elif all(g.status == "within" for g in self.groups):
            self.verdict = "within-margin"
            self.finished = "every task and variation is shown within its margins"
        elif all(g.status != "undecided" for g in self.groups):
            self.verdict = "not-shown"
            open_ = [g.label for g in self.groups if g.status == "not-shown"]
            their = "its" if len(open_) == 1 else "their"
            self.finished = (f"{', '.join(open_)} could not be shown within the margins on {their} samples (ran "
                             f"out, or stopped where the rest could not change that)")

    def defer_stalled(self, slack: int) -> list:
        """Move each group's next member to the end of its stream while it has not arrived and at
        least ``slack`` later samples of the gate's order have; returns the members moved.

        For a crashed xdist worker: the samples it held are handed out again only after every other sample, so
        a stream waiting for them would stall until the end of the suite. A sample still in flight on a live
        worker arrives within a few later ones (``slack`` is more than the workers hold), so only the stranded
        ones move; which those are depends on
        the crash, not on their values, so each next value stays a random draw of its group."""
        position, arrived = self._position, self._arrived
        moved: list = []
        for g in self.groups:
            tried: set = set()
            while g.next < len(g.members):
                head = g.members[g.next]
                if head in self._values or head in tried:
                    break
                if len(arrived) - bisect.bisect_right(arrived, position[head]) < slack:
                    break
                tried.add(head)
                g.members.append(g.members.pop(g.next))
                moved.append(head)
                self._advance(g)
        if moved:
            self._decide()
        return sorted(set(moved), key=position.get)

    def stop(self, reason: str) -> None:
        """End the gate undecided (the budget is spent, the run was interrupted)."""
        if self.finished is None:
            self.finished = str(reason)

    # -- output ------------------------------------------------------------
    @property
    def regressed(self) -> list:
        return [g.label for g in self.groups if g.status == "regressed"]

    @property
    def undecided(self) -> list:
        return [g.label for g in self.groups if g.status == "undecided"]

    def needed(self, sample_id: str) -> bool:
        """Whether generating ``sample_id`` can still change the decision: any of its groups is undecided."""
        if self.finished is not None:
            return False
        return any(g.status == "undecided" for g in self._of.get(str(sample_id), ()))

    def done(self) -> list:
        """``(task, variation)`` pairs whose samples are no longer needed (every group of them decided)."""
        return sorted((k for k, groups in self._pairs.items() if all(g.status != "undecided" for g in groups)),
                      key=lambda k: (k[0], str(k[1])))

    def to_dict(self, *, total: int, generated: int | None = None, price: float | None = None,
                repeats: int = 1) -> dict:
        """JSON-able summary: verdict, samples used of ``total``, groups and what was saved."""
        saved = None if generated is None else max(0, total - generated)
        out = {"verdict": self.verdict, "finished": self.finished, "alpha": self.alpha,
               "looks": list(LOOKS), "success_floor": SUCCESS_FLOOR,
               "margin": self.margin, "margins": dict(self.margins), "statistics": list(STATISTICS),
               "population": len(self.members), "used": self.used,
               "total": int(total), "cached": len(self.cached),
               "alpha_per_group": {"low": self.alpha_low, "high": self.alpha_high},
               "groups": [g.to_dict(self.margins) for g in self.groups],
               "method": "harm: betting confidence sequence of the expected paired difference, i.i.d. "
                         "(Waudby-Smith & Ramdas 2024, aGRAPA bets), Bonferroni over groups x statistics; "
                         "within: group-sequential non-inferiority test of each guardrail at alpha, "
                         "Hwang-Shih-DeCani spending, gamma -4"}
        if saved is not None:
            out["samples_not_generated"] = saved
            out["generations_saved"] = saved * int(repeats)
            if price is not None:
                out["usd_saved"] = round(saved * int(repeats) * float(price), 2)
        return out
