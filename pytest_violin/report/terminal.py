"""The terminal summary: one table per suite and task, rows per variation.

Laid out like the paper's Tables 1-3: metric columns, the mean column,
then the pass rate and the sample count.
"""

from __future__ import annotations

from .text import printable

__all__ = ["format_summary", "write_summary"]


def _fmt(value) -> str:
    if value is None:  # no scored sample in the group
        return "-"
    return f"{value:.3f}"


def format_summary(store, *, settings=None) -> list[str]:
    """Render the aggregate tables of ``store`` as lines of text.

    Parameters
    ----------
    store : ResultsStore
        The run's results.
    settings : ViolinSettings, optional
        Adds model, profile and seed to the heading.

    Returns
    -------
    list of str
        Lines, without trailing newlines.
    """
    rows = store.aggregate(totals=True)
    lines: list[str] = []
    if settings is not None and settings.model:
        from ..secrets import redact

        extra = f", repeats={settings.repeats} ({settings.pass_rule})" if settings.repeats > 1 else ""
        lines.append(f"model {redact(settings.model)}, profile {settings.profile}, seed {settings.seed}{extra}")
    groups: dict[tuple, list] = {}
    for row in rows:
        groups.setdefault((row.suite, row.task), []).append(row)
    for members in groups.values():  # a task's own row only where it has several variations
        if len(members) == 2:
            members.pop()
    for (suite, task), members in groups.items():
        names = []
        for row in members:
            for n in row.metric_names:
                if n not in names:
                    names.append(n)
        header = ["variation", *names, f"{task}-mean", "pass", "n"]
        body = []
        for row in members:
            label = "all" if row.is_total else (row.variation or "-")
            errors = f" ({row.errors} err)" if row.errors else ""
            body.append([label, *(_fmt(row.means.get(n)) for n in names),
                         _fmt(row.means.get("mean")), f"{100 * row.pass_rate:.1f}%",
                         f"{row.count}{errors}"])
        widths = [max(len(r[i]) for r in (header, *body)) for i in range(len(header))]

        def line(cells):
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        lines.append("")
        lines.append(f"{suite} / {task}")
        lines.append(line(header))
        lines.append("  ".join("-" * w for w in widths))
        lines.extend(line(r) for r in body)
    total = len(store)
    passed = sum(1 for r in store.results if r.passed)
    lines.append("")
    errors = sum(1 for r in store.results if r.outcome == "error")
    tail = f", {errors} ended in an error (not scored: not the model's failure)" if errors else ""
    lines.append(f"{passed}/{total} samples passed ({100 * passed / total:.1f}%){tail}" if total
                 else "no samples")
    return lines


def write_summary(terminalreporter, store, *, settings=None) -> None:
    """Write the Violin section of the terminal summary."""
    terminalreporter.write_sep("=", "violin summary")
    for text in format_summary(store, settings=settings):
        terminalreporter.write_line(printable(text))
