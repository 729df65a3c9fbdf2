"""Failure modes per task: how often each kind is a failing sample's first finding.

Reads result records (``results.json`` samples, or
:meth:`pytest_violin.results.SampleResult.to_dict` output) whose
``extra.diagnosis`` the run recorded, so a run summary (or a comparison of
two model versions) says which failure mode dominates and which changed:
``color (41 failing): 61% gradient, 22% wrong_color (mostly lighter)``.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["failure_modes", "failure_mode_lines", "MAX_KINDS"]

#: Kinds listed per task (the rest are summed as "other").
MAX_KINDS = 4


def _direction(finding: dict) -> str | None:
    numbers = finding.get("numbers") or {}
    if finding.get("kind") == "wrong_color" and isinstance(numbers.get("dL"), (int, float)):
        return "lighter" if numbers["dL"] > 0 else "darker"
    if finding.get("kind") == "scale" and isinstance(numbers.get("scale"), (int, float)):
        return "larger" if numbers["scale"] > 1 else "smaller"
    return None


def failure_modes(records) -> list:
    """Per task, in first-seen order: ``(task, diagnosed, [(kind, share, direction or None)])``.

    ``diagnosed`` counts the failing samples with at least one finding; a
    kind's ``share`` is the fraction of them whose first finding has that
    kind; ``direction`` the more common of lighter/darker (``wrong_color``)
    or larger/smaller (``scale``) among those.
    """
    firsts: dict = {}
    for rec in records:
        findings = (rec.get("extra") or {}).get("diagnosis") if isinstance(rec, dict) else None
        if rec.get("outcome") != "failed" or not findings or not isinstance(findings, list):
            continue
        first = findings[0] if isinstance(findings[0], dict) else {}
        firsts.setdefault(str(rec.get("task", "")), []).append(first)
    out = []
    for task, items in firsts.items():
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
