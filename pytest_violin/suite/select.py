"""Deterministic, stratified selection of a subset of a suite.

``limit=N`` must still touch every task and variation (and spread colors,
shapes, photos) in a small smoke run, and ``seed`` picks another subset.

Algorithm: samples are grouped into *units* (a probe control together with
all of its probes, otherwise one sample). Units are grouped by ``(task,
variation)`` and, inside a group, into buckets by a *stratum* (first color,
anchor, photo, ...). Every list is shuffled by a stable hash of ``(seed,
id)``; buckets are interleaved round-robin, then groups are interleaved
round-robin; units are taken in that order while they fit into ``N``. The
result keeps suite order. A probe is never selected without its control.
"""

from __future__ import annotations

from collections import OrderedDict

from ..errors import SuiteError
from .ids import stable_seed

__all__ = ["stratum", "select_stratified", "filter_tasks"]


def stratum(sample) -> str:
    """The key that spreads a selection inside one (task, variation) group."""
    spec = sample.spec
    kind = spec.get("kind")
    if kind in ("blocks", "fuzzy", "ratio") and spec.get("colors"):
        return str(tuple(spec["colors"][0]))
    if kind == "shape":
        return f"{spec.get('anchor')}/{spec.get('size')}"
    if kind == "mask" and "photo" in spec:
        return str(spec["photo"].get("name"))
    if kind == "border":
        return str(spec.get("thickness"))
    if kind == "dots":
        return str(spec.get("count"))
    return sample.id.rsplit("/", 1)[0]


def _interleave(lists):
    """Round-robin merge: first items of every list, then second items, ..."""
    out = []
    longest = max((len(lst) for lst in lists), default=0)
    for i in range(longest):
        for lst in lists:
            if i < len(lst):
                out.append(lst[i])
    return out


def filter_tasks(samples, tasks, suite_name="suite") -> list:
    """Keep the samples whose task is in ``tasks`` (a name or an iterable of names)."""
    if tasks is None:
        return list(samples)
    wanted = (tasks,) if isinstance(tasks, str) else tuple(tasks)
    present = sorted({s.task for s in samples})
    unknown = [t for t in wanted if t not in present]
    if unknown:
        raise SuiteError(f"{suite_name} has no task {', '.join(map(repr, unknown))}; "
                         f"its tasks are: {', '.join(present)}")
    keep = set(wanted)
    return [s for s in samples if s.task in keep]


def select_stratified(samples, limit, seed: int = 0) -> list:
    """A stratified, deterministic subset of at most ``limit`` samples, in suite order.

    Exactly ``limit`` samples (fewer only when the suite has fewer; None or
    ``>= len(samples)``: all of them); ``seed`` changes which subset is drawn.
    Where no whole unit (a control with all its probes) fits the room left, a
    control comes with as many of its probes as fit.
    """
    samples = list(samples)
    if limit is None:
        return samples
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise SuiteError(f"limit {limit!r} must be a positive integer or None")
    if limit >= len(samples):
        return samples
    index = {s.id: i for i, s in enumerate(samples)}
    units = OrderedDict()
    for s in samples:
        root = s.control if (s.control is not None and s.control in index) else s.id
        units.setdefault(root, []).append(s)

    def key(uid):
        return stable_seed("select", seed, uid)

    groups = OrderedDict()
    for uid, members in units.items():
        head = samples[index[uid]]
        groups.setdefault((head.task, head.variation), {}).setdefault(stratum(head), []).append(uid)
    ordered_groups = []
    for gkey in sorted(groups, key=lambda g: stable_seed("group", seed, *g)):
        buckets = groups[gkey]
        blists = [sorted(b, key=key) for _, b in sorted(buckets.items(),
                                                        key=lambda kv: stable_seed("b", seed, kv[0]))]
        ordered_groups.append(_interleave(blists))
    chosen, total = [], 0
    order = _interleave(ordered_groups)
    for uid in order:
        size = len(units[uid])
        if total + size <= limit:
            chosen.extend(units[uid])
            total += size
        if total >= limit:
            break
    if total < limit:
        # no whole unit fits the room left (e.g. limit=1 in a suite of probes):
        # fill it with controls, each with as many of its probes as fit
        taken = {s.id for s in chosen}
        for uid in order:
            if uid in taken:
                continue
            members = sorted(units[uid], key=lambda s: (s.id != uid, index[s.id]))
            part = members[: limit - total]
            chosen.extend(part)
            total += len(part)
            if total >= limit:
                break
    return sorted(chosen, key=lambda s: index[s.id])
