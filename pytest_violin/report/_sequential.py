"""The sequential gate's words: terminal lines and a summary.md section.

Both read the gate's summary (``metadata["sequential"]`` of results.json, made by
:meth:`pytest_violin.gating.sequential.SequentialGate.to_dict`).
"""

from __future__ import annotations

from collections.abc import Mapping

import math

from ._tables import Table, markdown_lines

__all__ = ["regressed_groups", "sequential_html", "sequential_lines", "sequential_markdown"]

_STATUS = {"regressed": "REGRESSED", "within": "within", "not-shown": "not shown", "undecided": "undecided"}


def regressed_groups(summary) -> set:
    """``(task, variation)`` of the groups the gate showed regressed (variation None: the task row)."""
    if not isinstance(summary, Mapping):
        return set()
    return {(g.get("task"), g.get("variation")) for g in summary.get("groups", ()) if isinstance(g, Mapping)
            and g.get("status") == "regressed"}


def _headline(summary: Mapping) -> tuple:
    used, total = summary.get("used", 0), summary.get("total", 0)
    share = f" ({used / total:.0%})" if total else ""
    verdict = summary.get("verdict")
    if verdict == "regressed":
        return (f"FAILED: sequential gate: a regression is shown after {used} of {total} samples{share}: "
                f"{', '.join(g['group'] for g in summary.get('groups', ()) if g.get('status') == 'regressed')}",
                "bad")
    if verdict == "within-margin":
        return (f"PASSED: sequential gate: every task and variation shown within its margins after {used} of "
                f"{total} samples{share}", "good")
    if verdict == "not-shown":
        return (f"NOT SHOWN: sequential gate: nothing regressed, but {summary.get('finished')} (after {used} "
                f"of {total} samples{share}); a green gate needs every task and variation shown within", "bad")
    return (f"NOT SHOWN: sequential gate stopped after {used} of {total} samples{share}: "
            f"{summary.get('finished')}; the groups it had not shown within are not shown", "bad")


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


#: The statistics in the order shown, with their words.
_NAMES = (("mean", "mean"), ("fail", "fail rate"), ("refusal", "refusal rate"))


def _decimals(margin) -> int:
    """3 decimals (the bounds' resolution, 0.001), more when the margin needs them to show."""
    if not isinstance(margin, (int, float)):
        return 3
    return next((n for n in range(3, 7) if abs(round(margin, n) - margin) < 1e-12), 6)


def _bound(value: float, places: int, up: bool) -> str:
    """A bound rounded outward (a lower bound down, an upper one up), so the printed interval
    holds the computed one; a value within the gate's tie tolerance of a printed step is that
    step (the rule of gating.policy.above_margin); never "-0.000"."""
    scale = 10 ** places
    x = value * scale
    step = math.ceil(x - 1e-6) if up else math.floor(x + 1e-6)
    return f"{step / scale + 0.0:+.{places}f}"


def _interval(stat: Mapping | None, margin=None) -> str:
    """One statistic's interval of its expected paired difference, as every format prints it:
    open, because the claims are strict (the expected difference is above the lower bound and
    below the upper one)."""
    bounds = (stat or {}).get("interval")
    if not bounds or bounds[0] is None:
        return "(no value yet)"
    places = _decimals((stat or {}).get("margin", margin))
    return f"({_bound(bounds[0], places, False)}, {_bound(bounds[1], places, True)})"


def _stats(g: Mapping) -> dict:
    """A group's statistics (summaries of older runs held only the mean's interval)."""
    stats = g.get("statistics")
    if isinstance(stats, Mapping):
        return stats
    return {"mean": {"interval": g.get("interval")}}


def _cause(g: Mapping) -> str:
    """Which statistics decided a regressed group."""
    if g.get("status") != "regressed":
        return ""
    above = [words for key, words in _NAMES if (_stats(g).get(key) or {}).get("above")]
    return f" ({', '.join(above)} above its margin)" if above else ""


def _ruled_out(stats: Mapping) -> str:
    """``ruled out: mean above +0.006, fail rate above +0.021``: each guardrail's bound at its latest look."""
    parts = []
    for key, words in _NAMES:
        st = stats.get(key) or {}
        if st.get("ruled_out_above") is None:
            continue
        mark = "" if st.get("guardrail", True) else " (harm test only)"
        places = _decimals(st.get("margin"))
        parts.append(f"{words} above {_bound(st['ruled_out_above'], places, True)}{mark}")
    return f"; ruled out: {', '.join(parts)}" if parts else ""


def _group_line(g: Mapping) -> str:
    stats = _stats(g)
    shown = "  ".join(f"{words} {_interval(stats.get(key))}" for key, words in _NAMES if key in stats)
    after = f", decided after {g['decided_after']}" if g.get("decided_after") is not None else ""
    return (f"{g.get('group', '?'):<24s} {_STATUS.get(g.get('status'), g.get('status')):<14s}{_cause(g)} "
            f"{shown}  used {g.get('used', 0)} of {g.get('size', 0)}{after}{_ruled_out(stats)}")


def _rule(summary: Mapping) -> str:
    margins = summary.get("margins") or {"mean": summary.get("margin", 0)}
    shown = ", ".join(f"{words} {margins[key]:g}" for key, words in _NAMES if key in margins)
    looks = ", ".join(f"{100 * t:g}%" for t in summary.get("looks") or ())
    return (f"rule: per task and variation, regressed as soon as the anytime-valid lower bound of a "
            f"statistic's expected paired difference (new - old) is above its margin (error rate "
            f"{summary.get('alpha', 0.05):g} over all of them together; intervals are open: the difference is "
            f"above the first number and below the second); within its margins once each guardrail is shown "
            f"below its margin at a planned look ({looks} of its samples, none before "
            f"{summary.get('success_floor', '-')} but the last; each guardrail at error rate "
            f"{summary.get('alpha', 0.05):g}); not shown when its samples ran out (margins: {shown}; "
            f"{summary.get('method', '')})")


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
    out.append((_rule(summary), "info"))
    for g in summary.get("groups", ()):
        level = "bad" if g.get("status") == "regressed" else "info"
        out.append(("  " + _group_line(g), level))
    return out


_HEAD = ("group", "status", "mean", "fail rate", "refusal rate", "used", "of", "decided after")


def _rows(summary: Mapping):
    """``(cells, regressed)`` of each group, the cells as :data:`_HEAD` names them."""
    for g in summary.get("groups", ()):
        stats = _stats(g)
        after = "" if g.get("decided_after") is None else str(int(g["decided_after"]))
        yield ((str(g.get("group")), f"{_STATUS.get(g.get('status'), g.get('status'))}{_cause(g)}",
                *(_interval(stats.get(key)) for key, _ in _NAMES), str(int(g.get("used", 0))),
                str(int(g.get("size", 0))), after), g.get("status") == "regressed")


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
    lines += [_rule(summary)[0].upper() + _rule(summary)[1:] + ".", ""]
    # a group's name may be a manifest's variation name
    table = Table.make(_HEAD, (cells for cells, _ in _rows(summary)), left=5)
    return lines + markdown_lines(table, esc=lambda s: s.replace("|", "\\|").replace("\n", " ")) + [""]


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
        out.append(f"<p>{escape(saved[0].upper() + saved[1:])}.</p>")
    out.append(f"<p>{escape(_rule(summary)[0].upper() + _rule(summary)[1:])}.</p>")
    if _outside(summary):
        out.append(f'<div class="banner warn">{escape(_outside(summary))}.</div>')
    out.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in _HEAD) + "</tr>")
    out += [("<tr class=\"reg\">" if regressed else "<tr>") + "".join(f"<td>{escape(c)}</td>" for c in cells)
            + "</tr>" for cells, regressed in _rows(summary)]
    return "\n".join(out) + "</table>"
