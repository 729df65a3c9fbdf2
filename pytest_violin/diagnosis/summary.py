"""Failure modes per task: how often each kind is a failing sample's first finding.

Reads result records (``results.json`` samples, or :meth:`pytest_violin.results.SampleResult.to_dict` output)
whose ``extra.diagnosis`` the run recorded, so a run summary (or a comparison of two model versions) says
which failure mode dominates and which changed: ``color (41 failing): 61% gradient, 22% wrong_color (mostly
lighter)``. Every failing sample is counted, with a finding or not, so a task whose failures the diagnosers
cannot name says so: ``mask (37 failing, 1 with a finding): 100% feathered_edge``.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple
from ..verdict import Outcome

__all__ = ["TaskFailures", "FailureModes", "failure_modes", "failure_mode_lines", "failing_words",
           "first_findings", "slim_diagnosis", "MAX_KINDS"]

#: Kinds listed per task (the rest are summed as "other").
MAX_KINDS = 4
#: Characters of a kind kept by :func:`slim_diagnosis` (the longest built-in kind has 14).
KIND_CHARS = 40


def _direction(finding: dict) -> str | None:
    if "direction" in finding:  # a slim finding (slim_diagnosis) carries its direction
        way = finding["direction"]
        return way if isinstance(way, str) else None
    numbers = finding.get("numbers") or {}
    if finding.get("kind") == "wrong_color" and isinstance(numbers.get("dL"), (int, float)):
        return "lighter" if numbers["dL"] > 0 else "darker"
    if finding.get("kind") == "scale" and isinstance(numbers.get("scale"), (int, float)):
        return "larger" if numbers["scale"] > 1 else "smaller"
    return None


def slim_diagnosis(findings, interned: dict | None = None) -> list | None:
    """What :func:`failure_modes` reads of a recorded diagnosis, small and shared.

    ``[{"kind", "direction"}]`` of the first finding (``direction`` left out when it has none), ``[]`` for a
    diagnosis without findings, ``None`` when ``findings`` is not a recorded diagnosis (a list). Equal results
    are one object per ``interned`` dict, so a comparison loading 1,000,000 failing records keeps a handful of
    them.
    """
    if not isinstance(findings, list):
        return None
    if not findings:
        return []
    first = findings[0] if isinstance(findings[0], dict) else {}
    kind, way = str(first.get("kind", "?"))[:KIND_CHARS], _direction(first)
    key = (slim_diagnosis, kind, way)  # no key read from a file equals it (a shared dict)
    if interned is not None and key in interned:
        return interned[key]
    slim = [{"kind": kind} if way is None else {"kind": kind, "direction": way}]
    if interned is not None:
        interned[key] = slim
    return slim


class TaskFailures(NamedTuple):
    """The failing samples of one task, as :func:`first_findings` counts them."""

    #: Failing samples.
    failing: int
    #: Of them, those whose record holds a diagnosis (a list, with findings or not).
    recorded: int
    #: The first finding (a dict) of each one with at least one finding.
    firsts: list


class FailureModes(NamedTuple):
    """One task's failure modes (:func:`failure_modes`)."""

    task: str
    failing: int
    recorded: int
    #: Failing samples with at least one finding: the shares' denominator.
    diagnosed: int
    #: ``(kind, share, direction or None)``, largest share first.
    modes: list


def first_findings(records) -> dict:
    """Task -> :class:`TaskFailures` of its failing records (first-seen order).

    The rule every failure-mode count uses: a failing sample counts by its diagnosis' first finding (the one
    that explains most); one diagnosed without a finding, or not diagnosed (an error while diagnosing, a
    record written before diagnoses), counts as failing without a finding; a passing sample does not count.
    """
    counts: dict = {}
    for rec in records:
        if not isinstance(rec, dict) or rec.get("outcome") != Outcome.FAILED:
            continue
        task = str(rec.get("task", ""))
        failing, recorded, firsts = counts.get(task, (0, 0, []))
        extra = rec.get("extra")
        findings = extra.get("diagnosis") if isinstance(extra, dict) else None
        if isinstance(findings, list):
            recorded += 1
            if findings:
                firsts.append(findings[0] if isinstance(findings[0], dict) else {})
        counts[task] = (failing + 1, recorded, firsts)
    return {task: TaskFailures(*row) for task, row in counts.items()}


def failure_modes(records) -> list:
    """Per task with a failing record, in first-seen order: a :class:`FailureModes`.

    A kind's ``share`` is the fraction of the failing samples with a finding whose first finding has that
    kind; ``direction`` the more common of lighter/darker (``wrong_color``) or larger/smaller (``scale``)
    among those.
    """
    out = []
    for task, counted in first_findings(records).items():
        items = counted.firsts
        counts = Counter(str(f.get("kind", "?")) for f in items)
        modes = []
        for kind, n in counts.most_common():
            ways = Counter(d for f in items if f.get("kind") == kind and (d := _direction(f)))
            modes.append((kind, n / len(items), ways.most_common(1)[0][0] if ways else None))
        out.append(FailureModes(task, counted.failing, counted.recorded, len(items), modes))
    return out


def failing_words(failing: int, recorded: int, diagnosed: int) -> str:
    """``37 failing``, then how many have a finding when not all do.

    ``37 failing`` (all with a finding), ``37 failing, 1 with a finding``, ``36 failing, none with a
    finding``, ``36 failing, no diagnosis recorded``.
    """
    if diagnosed == failing:
        return f"{failing} failing"
    if diagnosed:
        return f"{failing} failing, {diagnosed} with a finding"
    return f"{failing} failing, {'none with a finding' if recorded else 'no diagnosis recorded'}"


def failure_mode_lines(records) -> list:
    """One line per task with a failing sample, when any failing sample was diagnosed.

    ``color (41 failing): 61% gradient, 22% wrong_color (mostly lighter)``; ``mask (37 failing, 1 with a
    finding): 100% feathered_edge`` (the shares are of the one with a finding); ``mask (36 failing, none with
    a finding)``. No line at all when no failing record holds a diagnosis.
    """
    tasks = failure_modes(records)
    if not any(t.recorded for t in tasks):
        return []
    lines = []
    for t in tasks:
        parts = [f"{100 * share:.0f}% {kind}" + (f" (mostly {way})" if way else "")
                 for kind, share, way in t.modes[:MAX_KINDS]]
        rest = sum(share for _, share, _ in t.modes[MAX_KINDS:])
        if rest:
            parts.append(f"{100 * rest:.0f}% other")
        head = f"{t.task} ({failing_words(t.failing, t.recorded, t.diagnosed)})"
        lines.append(f"{head}: {', '.join(parts)}" if parts else head)
    return lines
