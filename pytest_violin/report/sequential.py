"""The sequential gate's words: terminal lines and a summary.md section.

Both read the gate's summary (``metadata["sequential"]`` of results.json, made by
:meth:`pytest_violin.gating.sequential.SequentialGate.to_dict`).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["decided", "sequential_html", "sequential_lines", "sequential_markdown"]

_STATUS = {"regressed": "REGRESSED", "not-regressed": "not regressed", "undecided": "undecided"}


def decided(summary) -> bool:
    """True when the sequential gate reached a verdict (it then decides the session)."""
    return isinstance(summary, Mapping) and summary.get("verdict") in ("regressed", "not-regressed")


def _headline(summary: Mapping) -> tuple:
    used, total = summary.get("used", 0), summary.get("total", 0)
    share = f" ({used / total:.0%})" if total else ""
    verdict = summary.get("verdict")
    if verdict == "regressed":
        return (f"FAILED: sequential gate: a regression is shown after {used} of {total} samples{share}: "
                f"{', '.join(g['group'] for g in summary.get('groups', ()) if g.get('status') == 'regressed')}",
                "bad")
    if verdict == "not-regressed":
        return (f"sequential gate: no regression, every task decided after {used} of {total} "
                f"samples{share}", "good")
    return (f"sequential gate undecided after {used} of {total} samples{share}: {summary.get('finished')}; "
            f"the fixed-sample rule below judges the samples generated", "warn")


def _outside(summary: Mapping) -> str | None:
    n = summary.get("not_in_baseline")
    if not n:
        return None
    return (f"{n} samples of this run are not in the baseline (or were redefined, or ended in an "
            f"error there): they ran as ordinary tests, judged by their limits, not by the gate")


def _saved(summary: Mapping) -> str | None:
    n = summary.get("samples_not_generated")
    if n is None:
        return None
    text = f"{n} samples not generated ({summary.get('generations_saved', n)} generations saved"
    if summary.get("usd_saved") is not None:
        text += f", about ${summary['usd_saved']:,.2f} at --violin-price"
    return text + ")"


def _interval(g: Mapping) -> str:
    """A group's interval of the mean difference, as every format prints it."""
    low, high = g.get("interval") or (None, None)
    return "[n/a]" if low is None else f"[{low:+.4f}, {high:+.4f}]"


def _group_line(g: Mapping) -> str:
    interval = _interval(g)
    role = "" if g.get("role") == "decide" else " (watch)"
    after = f", decided after {g['decided_after']}" if g.get("decided_after") is not None else ""
    return (f"{g.get('group', '?'):<24s} {_STATUS.get(g.get('status'), g.get('status')):<14s} "
            f"mean difference in {interval}  used {g.get('used', 0)} of {g.get('size', 0)}{role}{after}")


def sequential_lines(summary) -> list:
    """``(text, level)`` lines for the terminal (levels as :func:`~.terminal.comparison_lines`)."""
    if not isinstance(summary, Mapping):
        return []
    out = [_headline(summary)]
    saved = _saved(summary)
    if saved:
        out.append((saved, "info"))
    if _outside(summary):
        out.append((_outside(summary), "warn"))
    out.append((f"rule: anytime-valid {1 - summary.get('alpha', 0.05):.0%} confidence sequences of the "
                f"mean paired difference (margin {summary.get('margin', 0):g}; {summary.get('method', '')})",
                "info"))
    for g in summary.get("groups", ()):
        level = "bad" if g.get("status") == "regressed" else "info"
        out.append(("  " + _group_line(g), level))
    return out


def sequential_markdown(summary) -> list:
    """summary.md lines (a heading, the verdict, one table row per group); none without a summary."""
    if not isinstance(summary, Mapping):
        return []
    text, _ = _headline(summary)
    lines = ["### Sequential gate", "", f"**{text}**", ""]
    saved = _saved(summary)
    if saved:
        lines += [saved[0].upper() + saved[1:] + ".", ""]
    if _outside(summary):
        lines += [_outside(summary)[0].upper() + _outside(summary)[1:] + ".", ""]
    lines += [f"Margin {summary.get('margin', 0):g}, error rate {summary.get('alpha', 0.05):g} "
              f"(Bonferroni over the groups); {summary.get('method', '')}.", "",
              "| group | role | status | interval of the mean difference | used | of | decided after |",
              "|---|---|---|---|---:|---:|---:|"]
    for g in summary.get("groups", ()):
        interval = _interval(g)
        after = "" if g.get("decided_after") is None else str(g["decided_after"])
        group = str(g.get("group")).replace("|", "\\|").replace("\n", " ")  # a manifest's variation name
        lines.append(f"| {group} | {g.get('role')} | {_STATUS.get(g.get('status'), g.get('status'))} "
                     f"| {interval} | {g.get('used', 0)} | {g.get('size', 0)} | {after} |")
    return lines + [""]


def sequential_html(summary) -> str:
    """report.html's section: the verdict as a banner, what was saved, one table row per group."""
    if not isinstance(summary, Mapping):
        return ""
    from html import escape

    text, level = _headline(summary)
    css = {"bad": "bad", "good": "good", "warn": "warn"}.get(level, "")
    out = ['<h2 id="sequential">Sequential gate</h2>', f'<div class="banner {css}">{escape(text)}</div>']
    saved = _saved(summary)
    if saved:
        out.append(f"<p>{escape(saved[0].upper() + saved[1:])}. Margin {summary.get('margin', 0):g}, "
                   f"error rate {summary.get('alpha', 0.05):g}; {escape(str(summary.get('method', '')))}.</p>")
    if _outside(summary):
        out.append(f'<div class="banner warn">{escape(_outside(summary))}.</div>')
    out.append("<table><tr><th>group</th><th>role</th><th>status</th><th>interval of the mean "
               "difference</th><th>used</th><th>of</th><th>decided after</th></tr>")
    for g in summary.get("groups", ()):
        interval = _interval(g)
        after = "" if g.get("decided_after") is None else str(g["decided_after"])
        status = _STATUS.get(g.get("status"), g.get("status"))
        out.append(f"<tr><td>{escape(str(g.get('group')))}</td><td>{escape(str(g.get('role')))}</td>"
                   f"<td>{escape(str(status))}</td><td>{interval}</td><td>{int(g.get('used', 0))}</td>"
                   f"<td>{int(g.get('size', 0))}</td><td>{after}</td></tr>")
    return "\n".join(out) + "</table>"
