"""A trend: task means and pass rates across runs, in the order given (checkpoints, releases).

``python -m pytest_violin trend RUN...`` and :func:`pytest_violin.evaluation.trend`
build a :class:`Trend` from loaded runs (:class:`~.model.Run`): each run's
records aggregated by the package's one aggregation
(:func:`pytest_violin.results.aggregate`: a sample without an image counts
1.0, errors are left out of the means), one row per task and per (task,
variation), one value per run. Each run counts on its own samples; where the
runs hold different samples, a note says so. When every run is on the
official data, the paper's models are reference lines (:mod:`.paper`).

Outputs: text, Markdown and CSV (:meth:`Trend.text`, :meth:`Trend.markdown`,
:meth:`Trend.csv`), and a self-contained HTML page with an inline SVG chart
per task (:meth:`Trend.write_html`), under the other pages' content-security
policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidArgumentError
from ..report._tables import Raw, Table, csv_text, markdown_lines, text_lines
from .formats import _csv_text, _md

__all__ = ["Trend", "TrendRow", "build_trend"]


@dataclass(frozen=True)
class TrendRow:
    """One task (``variation`` None) or one (task, variation) across the runs.

    ``means``, ``pass_rates`` and ``counts`` hold one value per run, in the
    runs' order; ``None`` (and count 0) where the run has no such sample, or
    no judged one for the mean.
    """

    task: str
    variation: str | None
    means: tuple
    pass_rates: tuple
    counts: tuple

    @property
    def name(self) -> str:
        """``task`` or ``task/variation``."""
        return self.task if self.variation is None else f"{self.task}/{self.variation or '-'}"


@dataclass
class Trend:
    """The rows of a trend and what is needed to show them.

    Attributes
    ----------
    labels : list of str
        The runs' labels, in order.
    rows : list of TrendRow
        Per task: its variations, then the task's row.
    references : dict
        ``(task, variation or None) -> [(model, mean), ...]``: the paper's
        published means, when the runs are on the official data.
    notes : list of str
        What the reader must know (different samples, reference lines).
    """

    labels: list
    rows: list
    references: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def tasks(self) -> list:
        """Tasks in order of first appearance."""
        return list(dict.fromkeys(r.task for r in self.rows))

    def row(self, task: str, variation: str | None = None) -> TrendRow | None:
        """The row of ``task`` (``variation`` None) or of one of its variations."""
        return next((r for r in self.rows if r.task == task and r.variation == variation), None)

    def _table(self, task: str, esc) -> Table:
        rows = [r for r in self.rows if r.task == task]
        variations = [r for r in rows if r.variation is not None]
        header = ["run", "n", "mean", "pass", *(f"{r.variation or '-'} mean" for r in variations)]
        cells = []
        for i, label in enumerate(self.labels):
            total = rows[-1]
            cells.append([label, str(total.counts[i]), _num(total.means[i]), _pct(total.pass_rates[i]),
                          *(_num(r.means[i]) for r in variations)])
        for model, value in self.references.get((task, None), ()):
            cells.append([Raw(esc(model) + " (paper)"), "", _num(value), "", *("" for _ in variations)])
        return Table.make(header, cells, left=1)

    def text(self) -> str:
        """Plain text: one table per task, a row per run."""
        out = [f"Violin trend over {len(self.labels)} run(s)"]
        out += [f"note: {n}" for n in self.notes]
        for task in self.tasks:
            out += ["", f"{task}:", *text_lines(self._table(task, str), indent="  ")]
        return "\n".join(out) + "\n"

    def markdown(self) -> str:
        """Markdown: one table per task, a row per run."""
        out = ["## Violin trend", ""]
        if self.notes:
            out += [f"- {_md(n)}" for n in self.notes] + [""]
        for task in self.tasks:
            out += [f"### {_md(task)}", "", *markdown_lines(self._table(task, _md), esc=_md), ""]
        return "\n".join(out)

    def csv(self) -> str:
        """CSV, one line per run and row: ``position, run, task, variation, samples, mean, pass_rate``."""
        header = ["position", "run", "task", "variation", "samples", "mean", "pass_rate"]
        lines = ([i, label, r.task, "" if r.variation is None else r.variation, r.counts[i],
                  "" if r.means[i] is None else r.means[i], "" if r.pass_rates[i] is None else r.pass_rates[i]]
                 for r in self.rows for i, label in enumerate(self.labels))
        return csv_text(Table.make(header, lines), esc=_csv_text)

    def html(self) -> str:
        """The self-contained HTML page (inline SVG charts, the pages' content-security policy)."""
        from ..report._pages import render_page
        from ..report._svg import PALETTE, line_chart

        charts = []
        for task in self.tasks:
            rows = [r for r in self.rows if r.task == task]
            ordered = [rows[-1], *rows[:-1]]  # the task first, then its variations
            series = [(_series_name(r), r.means) for r in ordered]
            references = [(f"{model} (paper, {_series_name_of(task, variation)})", value)
                          for (t, variation), found in self.references.items() if t == task
                          for model, value in found]
            charts.append({
                "task": task,
                "mean": _markup(line_chart(self.labels, series, title=f"{task}: mean metric (lower is better)",
                                           references=references)),
                "pass": _markup(line_chart(self.labels, [(_series_name(r), r.pass_rates) for r in ordered],
                                           title=f"{task}: pass rate", y_max=1.0)),
                "references": references,
            })
        return render_page("trend.html.j2", script_name="trend.js", page_class="trend",
                           title=" \u2192 ".join(self.labels)[:200], labels=self.labels, notes=self.notes,
                           charts=charts, tables=[(task, self._table(task, str)) for task in self.tasks],
                           palette=PALETTE)

    def write_html(self, path) -> Path:
        """Write :meth:`html` to ``path`` atomically."""
        from .._fs import atomic_write

        return atomic_write(path, self.html())


def _markup(svg: str):
    from ..report._pages import Markup

    return Markup(svg)  # svg.py escapes every label it writes


def _series_name(row: TrendRow) -> str:
    return "(all)" if row.variation is None else (row.variation or "-")


def _series_name_of(task: str, variation) -> str:
    return task if variation is None else f"{task}/{variation}"


def _num(value) -> str:
    from ..report.json_report import fmt

    return fmt(value)


def _pct(value) -> str:
    from ..report.json_report import fmt_pct

    return fmt_pct(value)


def build_trend(runs, *, paper: bool | None = None) -> Trend:
    """The :class:`Trend` of ``runs`` (compare :class:`~.model.Run` objects) in the order given.

    Parameters
    ----------
    runs : sequence of Run
        At least one; labels are made unique (``A``, ``A #2``) as ``compare`` does.
    paper : bool, optional
        The paper's models as reference lines: by default when every run is
        on the official data; True adds them anyway (with a note), False never.
    """
    from ..results import aggregate
    from .paper import _on_official_data
    from .table import _unique_labels

    runs = list(runs)
    if not runs:
        raise InvalidArgumentError("trend needs at least one RUN, got none")
    _unique_labels(runs)
    per_run = []
    order: list = []
    for run in runs:
        found = {}
        for row in aggregate(run.records.values()):
            key = (row.task, row.variation)
            found[key] = row
            if key not in order:
                order.append(key)
        per_run.append(found)
    # a task whose samples have no variation has one variation row, "", the same as its total
    lone = {task for task, _ in order if {v for t, v in order if t == task} == {"", None}}
    keys = [(t, v) for t, v in order if not (t in lone and v == "")]
    keys.sort(key=lambda k: ([t for t, _ in order].index(k[0]), k[1] is None))
    rows = []
    for task, variation in keys:
        cells = [found.get((task, variation)) for found in per_run]
        rows.append(TrendRow(task=task, variation=variation,
                             means=tuple(None if c is None else c.means.get("mean") for c in cells),
                             pass_rates=tuple(None if c is None else c.pass_rate for c in cells),
                             counts=tuple(0 if c is None else c.count for c in cells)))
    notes = []
    held = [set(run.records) for run in runs]
    if any(h != held[0] for h in held[1:]):
        notes.append("the runs hold different samples: each value is its run's own samples (n)")
    official = all(_on_official_data(run) for run in runs)
    references = {}
    if paper or (paper is None and official):
        references = _references(rows)
        if references:
            notes.append("dashed lines: the paper's published means (Tables 1-3, 7) on the official data"
                         + ("" if official else "; these runs are not all on the official data, so the "
                            "lines are indicative only"))
    return Trend(labels=[run.label for run in runs], rows=rows, references=references, notes=notes)


def _references(rows) -> dict:
    from .paper import published_rows

    shown = {(r.task, r.variation) for r in rows}
    out: dict = {}
    for p in published_rows():
        mean = p.metrics.get("mean")
        if mean is not None and (p.task, p.variation) in shown:
            out.setdefault((p.task, p.variation), []).append((p.model, float(mean)))
    return out
