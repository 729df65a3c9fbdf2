"""The sequential gate: decide a release from the first samples of a random order.

Pure logic, no pytest (the plugin wiring is :mod:`pytest_violin.pytest_plugin.sequential`).

The groups
----------
Every task is a *decision* group; every (task, variation) of a task with more
than one variation is a *watch* group. The run's population is the samples it
shares with the baseline (same definition, judged in the baseline); a sample's
value is its paired difference ``d = new - old`` of the mean metric (1.0 for
no image or a refusal, the rule of :func:`~pytest_violin.gating.compare`).
Each group holds a :class:`~.confseq.MeanSequence` for the mean of ``d`` over
its members, anytime-valid.

The decision
------------
* *regressed* as soon as any group's lower bound is above the margin (a task,
  or a variation within one): the gate fails, nothing more is needed;
* a task is *not regressed* once its upper bound is at or below the margin:
  its remaining samples are not generated;
* the gate *passes* when every task is not regressed.

Error rates (Bonferroni, at every look, with this stopping rule): the
chance that any group is called regressed while its true mean is at or below
the margin is at most ``alpha`` (each lower bound at ``alpha / groups``); the
chance that any task is called not regressed while its true mean is above the
margin is at most ``alpha`` (each upper bound at ``alpha / tasks``). A
variation's regression is caught when it shows before its task is decided; the
task's guarantee is about its mean (docs/gating.md).

The order
---------
:func:`sequential_order`: the samples with a cached image first (they are
free, and their values enter the test exactly, not as a draw), then every
stratum's members in a seeded random permutation, the strata interleaved so
that each is drawn from the start in proportion to its size; the samples
outside the population last (they are never needed). Values enter each
group's sequence in that order, whatever order the answers arrive in.

The strata must be the decision groups (the tasks): the confidence sequence
needs each next value to be equally likely any of the group's remaining ones,
which a stratified order *within* a group breaks (its next value would come
from a chosen stratum, whose mean may differ). A variation, a part of its
task, then comes in random order too, so it also shows from the start.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from .confseq import MeanSequence

__all__ = ["DEFAULT_ALPHA", "Member", "SequentialGate", "population", "sequential_order"]

#: The gate's error rate (``violin_alpha``): at most 5% of runs of an
#: unchanged model fail, at most 5% of clearly worse ones pass.
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class Member:
    """One sample of the gate's population: its group and its baseline value."""

    id: str
    task: str
    variation: str | None
    old: float


def population(baseline: Mapping, samples) -> dict:
    """The samples of this run that the gate can pair with the baseline.

    Parameters
    ----------
    baseline : Mapping
        A baseline document (:func:`~pytest_violin.gating.read_baseline`).
    samples : iterable of (id, task, variation, definition)
        The run's samples; ``definition`` is the sample's digest (None when
        unknown: then any baseline definition matches).

    Returns
    -------
    dict
        Sample id -> :class:`Member`, for the samples present in the
        baseline with the same definition and not ended in an error there.
    """
    from .records import _value

    old = {str(s["id"]): s for s in baseline.get("samples") or () if isinstance(s, Mapping)}
    out = {}
    for sid, task, variation, definition in samples:
        rec = old.get(str(sid))
        if rec is None or rec.get("outcome") == "error":
            continue
        if definition and rec.get("definition") and rec.get("definition") != definition:
            continue
        # clipped to [0, 1] as the new values are (the reader checks only that metrics are finite)
        out[str(sid)] = Member(str(sid), str(task), None if variation is None else str(variation),
                               min(1.0, max(0.0, float(_value(rec)))))
    return out


def _rank(seed: int, sid: str) -> float:
    digest = hashlib.sha256(f"violin-sequential:{int(seed)}:{sid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


def sequential_order(ids, groups: Mapping, *, seed: int, cached=()) -> list:
    """The order in which the sequential gate generates ``ids``.

    Parameters
    ----------
    ids : iterable of str
        Every sample of the run.
    groups : Mapping
        Sample id -> stratum (the task: see the module docstring) for the
        population; ids outside it go last, in their given order.
    seed : int
        The run's seed: the same seed gives the same order on every machine
        and every xdist worker.
    cached : collection of str, optional
        Ids whose images are cached: first, in the same seeded order.

    Returns
    -------
    list of str
    """
    ids = list(ids)
    cached = set(cached)
    by_group: dict = {}
    for sid in ids:
        if sid in groups:
            by_group.setdefault(groups[sid], []).append(sid)
    key = {}
    for label, members in by_group.items():
        # a seeded permutation of the group, spread evenly over [0, 1): position k of n
        # sits at (k + u) / n, so every group is drawn from the start, in proportion
        members.sort(key=lambda sid: _rank(seed, sid))
        n = len(members)
        for k, sid in enumerate(members):
            key[sid] = (k + _rank(seed + 1, sid)) / n
    inside = [sid for sid in ids if sid in key]
    inside.sort(key=lambda sid: (sid not in cached, key[sid]))
    return inside + [sid for sid in ids if sid not in key]


class _Group:
    def __init__(self, label: str, task: str, variation, members: list, role: str):
        self.label, self.task, self.variation, self.role = label, task, variation, role
        self.members = members  # ids in the gate's order
        self.status = "undecided"
        self.sequence: MeanSequence | None = None
        self.decided_at: int | None = None  # samples the whole gate had taken when this group decided

    def to_dict(self) -> dict:
        seq = self.sequence
        low, high = seq.interval if seq is not None else (-1.0, 1.0)
        seen = 0 if seq is None else seq.seen + (seq.size - seq.remaining)
        return {"group": self.label, "task": self.task, "variation": self.variation, "role": self.role,
                "status": self.status, "size": len(self.members), "used": seen,
                "interval": [round(low, 6), round(high, 6)], "decided_after": self.decided_at}


class SequentialGate:
    """The state of one sequential gate (see the module docstring).

    Parameters
    ----------
    members : Mapping
        :func:`population`'s result.
    order : sequence of str
        :func:`sequential_order`'s result (ids outside ``members`` are ignored).
    cached : collection of str
        Ids whose values enter as known (they lead the order).
    margin : float
        ``--violin-max-regression``.
    alpha : float, optional
        The error rate (default :data:`DEFAULT_ALPHA`).
    """

    def __init__(self, members: Mapping, order, *, cached=(), margin: float, alpha: float = DEFAULT_ALPHA):
        if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha < 1):
            raise InvalidArgumentError(f"alpha must be a number in (0, 1), got {alpha!r}")
        if not (isinstance(margin, (int, float)) and math.isfinite(margin) and 0 <= margin < 1):
            raise InvalidArgumentError(f"margin must be a finite number in [0, 1), got {margin!r}")
        self.members = dict(members)
        self.order = [sid for sid in order if sid in self.members]
        self.position = {sid: i for i, sid in enumerate(self.order)}
        self.cached = {sid for sid in cached if sid in self.members}
        self.margin = float(margin)
        self.alpha = float(alpha)
        tasks: dict = {}
        variations: dict = {}
        for sid in self.order:
            m = self.members[sid]
            tasks.setdefault(m.task, []).append(sid)
            variations.setdefault((m.task, m.variation), []).append(sid)
        self.groups: list = [_Group(t, t, None, ids, "decide") for t, ids in tasks.items()]
        per_task: dict = {}
        for (task, _), ids in variations.items():
            per_task[task] = per_task.get(task, 0) + 1
        for (task, var), ids in variations.items():
            if per_task[task] > 1:
                self.groups.append(_Group(f"{task}/{var}", task, var, ids, "watch"))
        self.alpha_low = self.alpha / max(1, len(self.groups))
        self.alpha_high = self.alpha / max(1, len(tasks))
        self._of: dict = {}  # sample id -> its groups
        for g in self.groups:
            for sid in g.members:
                self._of.setdefault(sid, []).append(g)
        self._values: dict = {}   # id -> d (arrived), None for an error
        self._next: dict = {id(g): 0 for g in self.groups}  # next member of the stream to feed
        self.used = 0             # population samples whose value entered the decision
        self._fed: set = set()    # their ids (an answer that arrived early waits for its turn)
        self.finished: str | None = None  # why no more samples are needed
        self.verdict = "undecided"
        if not self.groups:
            self.finished = "no sample of this run is in the baseline"

    # -- input -------------------------------------------------------------
    def add(self, sample_id: str, value: float | None) -> None:
        """Take one sample's result: its mean metric, or None for an error (left out of the population).

        Ignored once the gate has finished, and for ids outside the population.
        """
        sid = str(sample_id)
        if self.finished is not None or sid not in self.members or sid in self._values:
            return
        if value is None:
            d = None
        else:
            d = min(1.0, max(0.0, float(value))) - self.members[sid].old
        self._values[sid] = d
        for g in self._of.get(sid, ()):
            self._advance(g)
        self._decide()

    def _advance(self, g: _Group) -> None:
        """Feed ``g``'s sequence the values that arrived, in the gate's order.

        An error leaves its sample out of the population (errors are taken not to depend on
        how good the answer would have been): the sequence is rebuilt without it and the
        values fed so far replayed, as if it had never been a member.
        """
        if g.status != "undecided":
            return
        if g.sequence is None:
            known = [sid for sid in g.members if sid in self.cached]
            if any(sid not in self._values for sid in known):
                return  # the cached values lead the order: wait for all of them
            g.known = [self._values[sid] for sid in known if self._values[sid] is not None]
            self._fed.update(sid for sid in known if self._values[sid] is not None)
            g.size = len(g.members) - sum(1 for sid in known if self._values[sid] is None)
            g.stream = [sid for sid in g.members if sid not in self.cached]
            g.fed = []
            if g.size < 1:
                return
            g.sequence = self._sequence(g)
        i = self._next[id(g)]
        dropped = False  # errors in a row are replayed once, not once each
        while i < len(g.stream) and g.stream[i] in self._values:
            d = self._values[g.stream[i]]
            i += 1
            if d is None:
                g.size -= 1
                dropped = True
                continue
            if dropped:
                self._rebuild(g)
                dropped = False
            if g.sequence is not None:
                g.sequence.add(d)
                g.fed.append(d)
                self._fed.add(g.stream[i - 1])
        if dropped:
            self._rebuild(g)
        self._next[id(g)] = i

    def _rebuild(self, g: _Group) -> None:
        """``g``'s sequence over its population as it now is, the values fed so far replayed."""
        g.sequence = self._sequence(g) if g.size >= 1 else None
        if g.sequence is not None:
            for value in g.fed:
                g.sequence.add(value)

    def _sequence(self, g: _Group) -> MeanSequence:
        # every new value is in [0, 1], so d = new - old is in [-max old, 1 - min old]
        olds = [self.members[sid].old for sid in g.members]
        # a baseline of 1.0 everywhere (refused, no image) leaves d <= 0: the range [-1, 0] is
        # widened by a hair (MeanSequence needs high > 0), and the group is decided at once
        return MeanSequence(g.size, self.margin, alpha_low=self.alpha_low, alpha_high=self.alpha_high,
                            known=g.known, low=-max(olds), high=max(1.0 - min(olds), 1e-6))

    def _decide(self) -> None:
        self.used = len(self._fed)
        for g in self.groups:
            seq = g.sequence
            if g.status != "undecided" or seq is None:
                continue
            if seq.above_margin:
                g.status, g.decided_at = "regressed", self.used
            elif (g.role == "decide" or seq.exhausted) and seq.below_margin:
                # a watch group only once its mean is known exactly (its upper bounds are not in
                # the error budget); it changes no decision, only what the reports say of it
                g.status, g.decided_at = "not-regressed", self.used
        if any(g.status == "regressed" for g in self.groups):
            self.verdict = "regressed"
            self.finished = f"a regression is shown ({', '.join(self.regressed)})"
        elif all(g.status == "not-regressed" for g in self.groups if g.role == "decide"):
            self.verdict = "not-regressed"
            self.finished = "every task is shown not to have regressed"

    def stop(self, reason: str) -> None:
        """End the gate undecided (the budget is spent, the run was interrupted)."""
        if self.finished is None:
            self.finished = str(reason)

    # -- output ------------------------------------------------------------
    @property
    def regressed(self) -> list:
        return [g.label for g in self.groups if g.status == "regressed"]

    def needed(self, sample_id: str) -> bool:
        """Whether generating ``sample_id`` can still change the decision."""
        if self.finished is not None:
            return False
        m = self.members.get(str(sample_id))
        if m is None:
            return False
        return any(g.status == "undecided" for g in self._of.get(m.id, ()) if g.role == "decide")

    def task_done(self, task: str) -> bool:
        """True when ``task`` is decided (its samples are no longer needed)."""
        return any(g.role == "decide" and g.task == task and g.status != "undecided" for g in self.groups)

    def to_dict(self, *, total: int, generated: int | None = None, price: float | None = None,
                repeats: int = 1) -> dict:
        """JSON-able summary: verdict, samples used of ``total``, groups and what was saved."""
        saved = None if generated is None else max(0, total - generated)
        out = {"verdict": self.verdict, "finished": self.finished, "alpha": self.alpha,
               "margin": self.margin, "population": len(self.members), "used": self.used,
               "total": int(total), "cached": len(self.cached),
               "alpha_per_group": {"low": self.alpha_low, "high": self.alpha_high},
               "groups": [g.to_dict() for g in self.groups],
               "method": "betting confidence sequence, sampling without replacement "
                         "(Waudby-Smith & Ramdas 2020; aGRAPA bets, 2024)"}
        if saved is not None:
            out["samples_not_generated"] = saved
            out["generations_saved"] = saved * int(repeats)
            if price is not None:
                out["usd_saved"] = round(saved * int(repeats) * float(price), 2)
        return out

