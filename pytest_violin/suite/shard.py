"""Split a selection of samples into N disjoint shards, one per CI machine.

``--violin-shard=K/N`` runs part K of N (the convention of Playwright's and
Jest's ``--shard``). The split is a pure function of the sample ids and
their (task, variation), so every machine, Python version and xdist worker
computes the same parts without talking to the others:

* samples are grouped into *units* (a probe control with its probes, as in
  :func:`pytest_violin.suite.select.select_stratified`: a probe is read
  against its control, so both run in the same shard);
* units are grouped by the (task, variation) of their head, the groups taken
  in sorted order; inside a group the units are ordered by a BLAKE2 hash of
  their id (never Python's salted ``hash()``);
* units are dealt round-robin over the shards, continuing from one group to
  the next, so every shard holds a near-equal share of every task and
  variation (its own summary means something) and the shards' sizes differ
  by at most one unit per group.

The N parts are disjoint and their union is the selection; each part keeps
the selection's order.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass

from ..errors import InvalidArgumentError

__all__ = ["MAX_SHARDS", "Shard", "parse_shard", "select_shard", "selection_digest"]

#: Most shards a run may be split into.
MAX_SHARDS = 1024

_ACCEPTED = f"K/N with integers 1 <= K <= N <= {MAX_SHARDS}, e.g. 2/4"


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (1-based) of ``total``."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def parse_shard(text) -> Shard:
    """``"K/N"`` as a :class:`Shard`.

    Raises
    ------
    InvalidArgumentError
        Anything but two ASCII integers with ``1 <= K <= N <= MAX_SHARDS``;
        the message names the value and the accepted form.
    """
    raw = str(text).strip()
    shown = repr(raw[:40] + ("..." if len(raw) > 40 else ""))
    match = re.fullmatch(r"([0-9]{1,5})\s*/\s*([0-9]{1,5})", raw)
    if match is None:
        raise InvalidArgumentError(f"{shown} is not of the form K/N; accepted: {_ACCEPTED}")
    index, total = int(match.group(1)), int(match.group(2))
    if total < 1 or total > MAX_SHARDS:
        raise InvalidArgumentError(f"{shown}: N={total} is out of range; accepted: {_ACCEPTED}")
    if index < 1 or index > total:
        raise InvalidArgumentError(f"{shown}: K={index} is not a part of {total} (parts are "
                                   f"numbered 1 to {total}); accepted: {_ACCEPTED}")
    return Shard(index, total)


def _units(samples) -> "OrderedDict[str, list]":
    ids = {s.id for s in samples}
    units: OrderedDict[str, list] = OrderedDict()
    for s in samples:
        control = getattr(s, "control", None)
        root = control if (control is not None and control in ids) else s.id
        units.setdefault(root, []).append(s)
    return units


def _unit_key(uid: str) -> bytes:
    return hashlib.blake2b(uid.encode("utf-8", "surrogatepass"), digest_size=16,
                           person=b"violin-shard").digest()


def select_shard(samples, shard: Shard) -> list:
    """Part ``shard`` of ``samples`` (module docstring), in their order.

    Parameters
    ----------
    samples : sequence of Sample
        The selection (after ``--violin-tasks``, ``--violin-limit``, named ids).
    shard : Shard

    Returns
    -------
    list of Sample
    """
    samples = list(samples)
    if shard.total == 1:
        return samples
    units = _units(samples)
    groups: dict = {}
    for uid, members in units.items():
        head = next(m for m in members if m.id == uid) if members[0].id != uid else members[0]
        key = (str(head.task), str(getattr(head, "variation", None)))
        groups.setdefault(key, []).append(uid)
    chosen: set = set()
    dealt = 0  # units dealt so far: the next group starts on the shard after the last one
    want = shard.index - 1
    for key in sorted(groups):
        ordered = sorted(groups[key], key=_unit_key)
        for position, uid in enumerate(ordered):
            if (dealt + position) % shard.total == want:
                chosen.update(m.id for m in units[uid])
        dealt += len(ordered)
    return [s for s in samples if s.id in chosen]


def selection_digest(samples) -> str:
    """A digest of the selection's sample ids (order-free): equal in every shard of one run."""
    h = hashlib.blake2b(digest_size=16)
    for sid in sorted(s.id for s in samples):
        h.update(sid.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return "blake2b:" + h.hexdigest()
