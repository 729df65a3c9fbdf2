"""Failure modes per task and run: which way the failing samples failed, and what changed.

A failing sample counts by the first finding of its diagnosis (the rule of
:func:`pytest_violin.diagnosis.summary.failure_modes`, which this module calls): per task and run the share of
failing samples whose diagnosis starts with each kind, and for every run after the first the change against
the first in percentage points, so a comparison of two model versions says which failure mode grew ("gradient
61% -> 20%, -41 points").

A run that recorded no diagnosis (a results.json written before diagnoses existed, a baseline file) says ``no
diagnoses`` instead of a share: an absent diagnosis is not a sample without defects. The failure-mode table is
built by :func:`build_modes` (called by :func:`pytest_violin.compare.table.build`) and rendered by
:func:`table_cells` as a :class:`~pytest_violin.report._tables.Table` that every format escapes its own way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..diagnosis.summary import failure_modes

__all__ = ["MAX_ROWS", "RunModes", "TaskModes", "build_modes", "table_cells"]

#: Kinds listed per task (those with the largest share in any run); the rest are "other".
MAX_ROWS = 6

NO_DIAGNOSES = "no diagnoses"
NO_FINDINGS = "no findings"
NO_FAILING = "none failing"


@dataclass(frozen=True)
class RunModes:
    """One run's failure modes of one task."""

    label: str
    #: Failing samples of the task.
    failing: int
    #: Of them, those whose record holds a diagnosis (with or without findings).
    recorded: int
    #: Of them, those with at least one finding: the shares' denominator.
    diagnosed: int
    #: Kind -> share of ``diagnosed`` whose first finding has that kind.
    shares: dict = field(default_factory=dict)
    #: Kind -> the more common direction (``lighter``, ``smaller``...) where it has one.
    ways: dict = field(default_factory=dict)

    @property
    def status(self) -> str | None:
        """None when the shares mean something, else why not (``no diagnoses`` ...)."""
        if not self.failing:
            return NO_FAILING
        if not self.recorded:
            return NO_DIAGNOSES
        if not self.diagnosed:
            return NO_FINDINGS
        return None


@dataclass(frozen=True)
class TaskModes:
    """The failure modes of one task in every run, kinds ordered by their largest share."""

    task: str
    kinds: tuple
    runs: tuple

    def change(self, kind: str, index: int) -> float | None:
        """Share of ``kind`` in run ``index`` minus the first run's, in points (None if unknown)."""
        first, other = self.runs[0], self.runs[index]
        if first.status or other.status:
            return None
        return 100.0 * (other.shares.get(kind, 0.0) - first.shares.get(kind, 0.0))


def build_modes(runs, selected=None) -> list:
    """The failure-mode table of ``runs``: one :class:`TaskModes` per task with a failing sample
    in some run (first-seen order), empty when no run has one.

    ``selected`` maps a run's label to the records compared (the shared samples); default every record of each
    run.
    """
    per_run = []
    for run in runs:
        records = list((selected or {}).get(run.label, run.records.values()))
        per_run.append((run.label, {t.task: t for t in failure_modes(records)}))
    tasks = list(dict.fromkeys(task for _, modes in per_run for task in modes))
    out = []
    for task in tasks:
        cells = []
        for label, modes in per_run:
            t = modes.get(task)
            if t is None:
                cells.append(RunModes(label, 0, 0, 0))
                continue
            cells.append(RunModes(label, t.failing, t.recorded, t.diagnosed, {k: s for k, s, _ in t.modes},
                                  {k: w for k, _, w in t.modes if w}))
        best: dict = {}
        for cell in cells:
            for kind, share in cell.shares.items():
                best[kind] = max(best.get(kind, 0.0), share)
        kinds = tuple(sorted(best, key=lambda k: -best[k]))
        out.append(TaskModes(task, kinds, tuple(cells)))
    return out


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _points(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:+.0f}" if round(value) else "0"


def _count_cell(cell: RunModes) -> str:
    if cell.status in (NO_FAILING, None) and cell.diagnosed == cell.failing:
        return str(cell.failing)
    if cell.status == NO_DIAGNOSES:
        return f"{cell.failing}, {NO_DIAGNOSES}"
    return f"{cell.failing} ({cell.diagnosed} with a finding)"


def table_cells(modes) -> tuple[list, list]:
    """``(header, rows)`` of plain-text cells (every format escapes them).

    One block per task: a ``failing`` row (the count, and how many have a finding or that none was recorded),
    then one row per kind (share, with the direction where it has one; ``-`` where the run has no shares) and
    the change against the first run in points; kinds past :data:`MAX_ROWS` are summed as ``other``.
    """
    if not modes:
        return [], []
    labels = [c.label for c in modes[0].runs]
    header = ["task", "kind", *labels, *(f"{b} - {labels[0]} (points)" for b in labels[1:])]
    rows = []
    for tm in modes:
        rows.append([tm.task, "failing", *(_count_cell(c) for c in tm.runs), *([""] * (len(labels) - 1))])
        shown, rest = tm.kinds[:MAX_ROWS], tm.kinds[MAX_ROWS:]
        for kind in shown:
            cells = []
            for c in tm.runs:
                if c.status:
                    cells.append("-")
                else:
                    way = c.ways.get(kind) if kind in c.shares else None
                    cells.append(_pct(c.shares.get(kind, 0.0)) + (f" {way}" if way else ""))
            rows.append([tm.task, kind, *cells,
                         *(_points(tm.change(kind, i)) for i in range(1, len(labels)))])
        if rest:
            other = [None if c.status else sum(c.shares.get(k, 0.0) for k in rest) for c in tm.runs]
            changes = ["-" if other[0] is None or o is None else _points(100 * (o - other[0]))
                       for o in other[1:]]
            rows.append([tm.task, "other", *("-" if o is None else _pct(o) for o in other), *changes])
    return header, rows


TITLE = "failure modes (first finding of each failing sample's diagnosis; docs/diagnoses.md)"
NONE_RECORDED = ("failure modes: no diagnoses (no run recorded any: results.json from before "
                 "diagnoses, or a baseline file)")
