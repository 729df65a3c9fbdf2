"""Render a :class:`~pytest_violin.compare.model.Comparison`: terminal, Markdown, LaTeX, CSV.

Every metric is an error (lower is better), as in the paper; the LaTeX table sets the best (smallest) value of
each column in bold. Labels, tasks, variations, metric names and run facts come from outside (a results.json,
a manifest): each format passes every one of them through its one escape (``_line`` for the terminal, ``_md``,
``_tex``, ``_csv_text``), each built on :func:`~pytest_violin.report.text.printable`.
"""

from __future__ import annotations

import re

from ..errors import InvalidArgumentError
from ..report.json_report import finite, fmt, fmt_pct, fmt_signed
from ..report._tables import Raw, Table, csv_text, latex_lines, markdown_lines, text_lines
from ..report.text import printable
from . import modes as _modes

__all__ = ["FORMATS", "render", "task_metrics"]

FORMATS = ("terminal", "md", "latex", "csv")


def render(comparison, fmt_name: str) -> str:
    """The comparison (:func:`pytest_violin.compare.table.build`) as text in ``fmt_name``, one of
    :data:`FORMATS` (``html`` is :func:`pytest_violin.compare.html.write_html`).
    """
    try:
        renderer = _RENDERERS[fmt_name]
    except (KeyError, TypeError):
        raise InvalidArgumentError(f"format {fmt_name!r} is not one of {', '.join(FORMATS)} "
                                   f"(html is written with --format html --output FILE)") from None
    return renderer(comparison)


# --------------------------------------------------------------------------- shared


def task_metrics(rows) -> list:
    """Metric names of ``rows`` (one task's rows) in first-seen order."""
    return list(dict.fromkeys(k for row in rows for k in row.metrics))


def _tasks(comparison) -> list:
    return list(dict.fromkeys(r.task for r in comparison.rows))


def _line(text) -> str:
    """Outside text as one printable terminal line: control characters escaped
    (:func:`~pytest_violin.report.text.printable`), line breaks and tabs as spaces.
    Every label, task, variation and metric name of the terminal table goes through it."""
    return printable(text).replace("\n", " ").replace("\t", " ")


def _notes(comparison) -> list:
    """Plain-text lines shown above a table: mismatches, dropped samples."""
    from .paper import comparability_notes

    lines = [f"warning: {_line(m)}" for m in comparison.mismatches]
    lines += [_line(n) for n in comparison.notes]
    lines += [printable(n) for n in comparability_notes(comparison)]
    if comparison.all_samples:
        lines.append("all samples of every run compared (--all-samples): runs may differ in "
                     "the samples behind each mean")
    elif len(comparison.runs) > 1:
        lines.append(f"{comparison.shared} samples held by every run compared")
        reasons = comparison.dropped_reasons
        for label, n in comparison.dropped.items():
            if n:
                why = reasons.get(label) or "not held by every other run"
                lines.append(f"{_line(label)}: {n} samples dropped ({_line(why)})")
    return lines


def _pair_lines(comparison, esc=_line) -> list:
    """``"B - A on shape mean: -0.012 [-0.020, -0.004] (...), B better"`` (lower is better).

    ``esc`` escapes the labels and task for the output format.
    """
    out = []
    for p in comparison.pairs:
        if not p.significant:
            verdict = "not significant"
        else:
            verdict = f"{esc(p.b)} better" if p.delta < 0 else f"{esc(p.a)} better"
        out.append(f"{esc(p.b)} - {esc(p.a)} on {esc(p.task)} mean: "
                   f"{fmt_signed(p.delta)} [{fmt_signed(p.ci_low)}, {fmt_signed(p.ci_high)}] "
                   f"(95% paired bootstrap, n={p.n}), {verdict}")
    return out


def _cells(row, metrics) -> list:
    return ([fmt(row.metrics.get(m)) for m in metrics] + [fmt(row.mean)]
            + ["-" if row.pass_rate is None else fmt_pct(row.pass_rate),
               "-" if row.n is None else str(row.n)])


def _task_tables(comparison, paper_label):
    """``(task, Table)`` per task: one row per run or published model of each variation.

    ``paper_label`` makes the label cell of a published row (each format marks it its way).
    """
    for task in _tasks(comparison):
        rows = [r for r in comparison.rows if r.task == task]
        metrics = task_metrics(rows)
        yield task, Table.make(["variation", "run", *metrics, "mean", "pass", "n"],
                               (["(all)" if r.variation is None else (r.variation or "-"),
                                 paper_label(r.label) if r.published else r.label, *_cells(r, metrics)]
                                for r in rows), left=2)


def _modes_table(modes, left: int = 2) -> Table:
    header, rows = _modes.table_cells(modes)
    return Table.make(header, rows, left=left)


def _modes_recorded(modes) -> bool:
    return any(c.recorded for tm in modes for c in tm.runs)


# --------------------------------------------------------------------------- terminal


def _terminal(comparison) -> str:
    out = [f"Violin comparison of {len(comparison.runs)} run(s)"]
    out.extend(_notes(comparison))
    for task, table in _task_tables(comparison, lambda label: label + " (paper)"):
        out += ["", f"{_line(task)}:", *text_lines(table, esc=_line, indent="  ")]
    modes = comparison.modes
    if modes and not _modes_recorded(modes):
        out += ["", _modes.NONE_RECORDED]
    elif modes:
        out += ["", _modes.TITLE + ":",
                *text_lines(_modes_table(modes, left=2 + len(modes[0].runs)), esc=_line, indent="  ")]
    pairs = _pair_lines(comparison)
    if pairs:
        out.append("")
        out.append("pairwise differences of task means (lower is better):")
        out.extend("  " + p for p in pairs)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- Markdown

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~])")


def _md(text) -> str:
    return _MD_SPECIAL.sub(r"\\\1", printable(text)).replace("\n", " ")


def _markdown(comparison, *, heading: str = "## Violin comparison") -> str:
    out = [heading, ""]
    notes = _notes(comparison)
    if notes:
        out.extend(f"- {_md(n)}" for n in notes)
        out.append("")
    for task, table in _task_tables(comparison, lambda label: Raw(_md(label) + " *(paper)*")):
        out += [f"### {_md(task)}", "", *markdown_lines(table, esc=_md), ""]
    modes = comparison.modes
    if modes and not _modes_recorded(modes):
        out += [_md(_modes.NONE_RECORDED[0].upper() + _modes.NONE_RECORDED[1:]) + ".", ""]
    elif modes:
        out += ["### Failure modes", "",
                "Share of failing samples whose diagnosis starts with each kind (docs/diagnoses.md).", "",
                *markdown_lines(_modes_table(modes), esc=_md), ""]
    pairs = _pair_lines(comparison, _md)
    if pairs:
        out.append("Pairwise differences of task means (lower is better):")
        out.append("")
        out.extend(f"- {p}" for p in pairs)
        out.append("")
    return "\n".join(out)


def markdown_section(comparison) -> str:
    """The Markdown comparison under a ``##`` heading, for ``summary.md``."""
    return _markdown(comparison, heading="## Comparison with other runs")


# --------------------------------------------------------------------------- LaTeX

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex(text) -> str:
    return "".join(_TEX.get(ch, ch) for ch in printable(text).replace("\n", " "))


def _latex_task(task, rows, footer=()) -> list:
    """One table per task: one row per run / published model, the task's metric columns
    (its ``(all)`` row, else its first variation) then one mean column per variation."""
    labels = list(dict.fromkeys((r.label, r.published) for r in rows))
    variations = list(dict.fromkeys(r.variation for r in rows if r.variation is not None))
    metrics = task_metrics(rows)
    columns = [*metrics, "mean", *(f"{v} mean" for v in variations), "pass", "n"]
    table = []
    for label, published in labels:
        mine = {r.variation: r for r in rows if r.label == label and r.published == published}
        main = mine.get(None) or (mine[variations[0]] if variations and variations[0] in mine
                                  else next(iter(mine.values())))
        values = ([finite(main.metrics.get(m)) for m in metrics] + [finite(main.mean)]
                  + [finite(mine[v].mean) if v in mine else None for v in variations]
                  + [finite(main.pass_rate), main.n])
        table.append((label, published, values))
    n_best = len(metrics) + 1 + len(variations)  # pass rate and n are not ranked
    best = []
    for c in range(n_best):
        col = [vals[c] for _, _, vals in table if vals[c] is not None]
        best.append(min(col) if col else None)
    body = []
    for label, published, values in table:
        cells = []
        for c, v in enumerate(values):
            if c == len(values) - 1:
                cells.append("--" if v is None else str(int(v)))
            elif c == len(values) - 2:
                cells.append("--" if v is None else fmt_pct(v))
            elif v is None:
                cells.append("--")
            else:
                text = fmt(v)
                bold = best[c] is not None and float(text) == float(fmt(best[c]))
                cells.append(Raw(r"\textbf{" + text + "}") if bold else text)
        body.append([Raw(_tex(label) + (r"$^\dagger$" if published else "")), *cells])
    return latex_lines(Table.make(["Model", *columns], body), esc=_tex,
                       caption="Violin comparison: " + _tex(task) + " (lower is better).", footer=footer)


def _latex(comparison) -> str:
    out = ["% Violin comparison (pytest-violin); needs \\usepackage{booktabs}",
           "% rows marked $^\\dagger$ are published values of the paper"]
    out.extend("% " + _tex(n) for n in _notes(comparison))
    from .paper import comparability_notes

    said = comparability_notes(comparison)
    for task in _tasks(comparison):
        out.append("")
        # the comparability notes are printed under the table, not only in a comment
        footer = [r"\par\footnotesize $^\dagger$ " + "; ".join(_tex(n) for n in said) + "."] if said else []
        out.extend(_latex_task(task, [r for r in comparison.rows if r.task == task], footer))
    modes = comparison.modes
    if modes and not _modes_recorded(modes):
        out += ["", "% " + _tex(_modes.NONE_RECORDED)]
    elif modes:
        table = _modes_table(modes)
        tasks = [r[0] for r in table.rows]
        out += ["", *latex_lines(
            table, esc=_tex, midrule_before={i for i in range(1, len(tasks)) if tasks[i] != tasks[i - 1]},
            caption="Failure modes: share of failing samples whose diagnosis starts with each kind.")]
    pairs = _pair_lines(comparison, _tex)
    if pairs:
        out.append("")
        out.extend("% " + p for p in pairs)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- CSV


def _csv(comparison) -> str:
    metrics = task_metrics(comparison.rows)
    # header cells too: a metric name is outside text (``=HYPERLINK(...)`` must stay text)
    header = ["label", "published", "task", "variation", *metrics, "mean", "pass_rate", "n"]
    rows = ([r.label, int(r.published), r.task, "" if r.variation is None else r.variation,
             *("" if finite(r.metrics.get(m)) is None else finite(r.metrics.get(m)) for m in metrics),
             "" if finite(r.mean) is None else finite(r.mean),
             "" if r.pass_rate is None else float(r.pass_rate), "" if r.n is None else int(r.n)]
            for r in comparison.rows)
    return csv_text(Table.make(header, rows), esc=_csv_text)


def _csv_text(text) -> str:
    """Printable, and never a spreadsheet formula (``=``, ``+``, ``-``, ``@`` prefixed by ``'``).

    The one rule of every text cell of the CSV (header and data); a leading tab or carriage return (OWASP's
    list of formula starts) is treated the same.
    """
    s = printable(text)
    return "'" + s if s[:1] in _FORMULA_STARTS else s


_FORMULA_STARTS = frozenset("=+-@\t\r")


_RENDERERS = {"terminal": _terminal, "md": _markdown, "latex": _latex, "csv": _csv}
