"""The run summary's tables as data: what summary.md and report.html both show.

One table per task (rows = its variations, then the task's own row, as the paper's Tables 1-3), with the
no-image and refused columns wherever the run has any, and the gate's group of each row when a baseline was
given. The formats render it: :mod:`~pytest_violin.report.markdown` through
:mod:`~pytest_violin.report._tables`, report.html through its template.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..results import AggregateRow

__all__ = ["SummaryRow", "TaskTable", "task_tables"]


@dataclass(frozen=True)
class SummaryRow:
    """One row: a variation's :class:`~pytest_violin.results.AggregateRow`, or the task's
    (``total``) labelled ``all``; ``group`` is the gate's group of the row (None without a
    baseline or when the baseline lacks it)."""

    label: str
    total: bool
    row: AggregateRow
    group: object = None
    #: a decided sequential gate's verdict on the row (True: it showed the group regressed); None when the
    #: fixed-sample comparison's statuses apply
    marked: bool | None = None

    @property
    def compared(self) -> bool:
        return self.group is not None and self.group.mean.status != "not-compared"

    @property
    def status(self) -> str:
        """``regressed``, ``improved`` or ``""``."""
        if self.marked is not None:  # red only what the sequential gate showed regressed
            return "regressed" if self.marked else ""
        g = self.group
        return "" if g is None else "regressed" if g.regressed else "improved" if g.improved else ""


@dataclass(frozen=True)
class TaskTable:
    """A task's table: its metric columns (``mean`` last), its rows, the columns shown;
    ``aggregate`` and ``variations`` are its rows' aggregates (for charts)."""

    task: str
    names: tuple
    rows: tuple
    no_image: bool
    refused: bool
    baseline: bool
    aggregate: AggregateRow
    variations: tuple


def task_tables(agg, groups, marks=None) -> list[TaskTable]:
    """The tables of ``agg`` (:func:`pytest_violin.results.aggregate_records`).

    ``groups`` maps ``(task, variation)`` to the gate's group (empty without a baseline; then the tables have
    no difference column); ``marks``, the ``(task, variation)`` a decided sequential gate showed regressed
    (None otherwise).
    """
    tasks = [AggregateRow.from_baseline_dict(r) for r in agg.get("tasks", [])]
    variations = [AggregateRow.from_baseline_dict(r) for r in agg.get("variations", [])]
    no_image = any(r.no_image for r in tasks)
    refused = any(r.refused for r in tasks)
    out = []
    for task_row in tasks:
        task = task_row.task
        rows = [r for r in variations if r.task == task]
        names = [n for r in (task_row, *rows) for n in r.metric_names]
        out.append(TaskTable(
            task, (*dict.fromkeys(names), "mean"),
            tuple(_row(r, r.variation or "-", False, groups.get((task, r.variation)), marks) for r in rows)
            + (_row(task_row, "all", True, groups.get((task, task_row.variation)), marks),),
            no_image, refused, bool(groups), task_row, tuple(rows)))
    return out


def _row(row: AggregateRow, label, total, group, marks) -> SummaryRow:
    marked = None if marks is None else (row.task, row.variation) in marks
    return SummaryRow(label, total, row, group, marked)
