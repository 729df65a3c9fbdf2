"""Failure modes per task: how often each kind is a failing sample's first finding.

Reads result records (``results.json`` samples, or
:meth:`pytest_violin.results.SampleResult.to_dict` output) whose
``extra.diagnosis`` the run recorded, so a run summary (or a comparison of
two model versions) says which failure mode dominates and which changed:
``color (41 failing): 61% gradient, 22% wrong_color (mostly lighter)``.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["failure_modes", "failure_mode_lines", "first_findings", "slim_diagnosis", "MAX_KINDS"]

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

    ``[{"kind", "direction"}]`` of the first finding (``direction`` left out
    when it has none), ``[]`` for a diagnosis without findings, ``None`` when
    ``findings`` is not a recorded diagnosis (a list). Equal results are one
    object per ``interned`` dict, so a comparison loading 1,000,000 failing
    records keeps a handful of them.
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


def first_findings(records) -> dict:
    """Task -> the first finding (a dict) of each failing record whose diagnosis has one.

    The rule every failure-mode table uses: a failing sample counts by its
    diagnosis' first finding (the one that explains most); a passing sample,
    one not diagnosed, or one diagnosed without a finding does not count.
    """
    firsts: dict = {}
    for rec in records:
        findings = (rec.get("extra") or {}).get("diagnosis") if isinstance(rec, dict) else None
        if rec.get("outcome") != "failed" or not findings or not isinstance(findings, list):
            continue
        first = findings[0] if isinstance(findings[0], dict) else {}
        firsts.setdefault(str(rec.get("task", "")), []).append(first)
    return firsts


def failure_modes(records) -> list:
    """Per task, in first-seen order: ``(task, diagnosed, [(kind, share, direction or None)])``.

    ``diagnosed`` counts the failing samples with at least one finding; a
    kind's ``share`` is the fraction of them whose first finding has that
    kind; ``direction`` the more common of lighter/darker (``wrong_color``)
    or larger/smaller (``scale``) among those.
    """
    out = []
    for task, items in first_findings(records).items():
        counts = Counter(str(f.get("kind", "?")) for f in items)
        modes = []
        for kind, n in counts.most_common():
            ways = Counter(d for f in items if f.get("kind") == kind and (d := _direction(f)))
            modes.append((kind, n / len(items), ways.most_common(1)[0][0] if ways else None))
        out.append((task, len(items), modes))
    return out


def failure_mode_lines(records) -> list:
    """One line per task: ``color (41 failing): 61% gradient, 22% wrong_color (mostly lighter)``."""
    lines = []
    for task, n, modes in failure_modes(records):
        parts = [f"{100 * share:.0f}% {kind}" + (f" (mostly {way})" if way else "")
                 for kind, share, way in modes[:MAX_KINDS]]
        rest = sum(share for _, share, _ in modes[MAX_KINDS:])
        if rest:
            parts.append(f"{100 * rest:.0f}% other")
        lines.append(f"{task} ({n} failing): {', '.join(parts)}")
    return lines
