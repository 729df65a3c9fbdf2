"""``summary.md``: the summary tables in Markdown (and the GitHub step summary)."""

from __future__ import annotations

import os
from pathlib import Path

from ..results import Outcome, aggregate_records
from .._fs import atomic_write
from .json_report import fmt, fmt_signed, records_of, usage_text
from ._gate_words import id_list
from ._tables import Raw, Table, markdown_lines
from .text import printable
from ._view import task_tables

__all__ = ["render_markdown", "write_summary", "md_escape"]


def md_escape(text) -> str:
    """Make ``text`` safe inside a Markdown table cell (no HTML, no pipes, one line, and
    printable: ESC, BEL, NUL... shown as ``\\xNN``). With :func:`_code`, the one
    place this module formats text from outside (a variation or task name, an id)."""
    s = printable(text)
    for a, b in (("\\", "\\\\"), ("|", "\\|"), ("<", "&lt;"), (">", "&gt;"), ("`", "\\`"),
                 ("*", "\\*"), ("_", "\\_"), ("[", "\\["), ("]", "\\]")):
        s = s.replace(a, b)
    return " ".join(s.split())


def _code(text) -> str:
    """``text`` as an inline code span (backticks replaced, one line, printable)."""
    return "`" + " ".join(printable(text).replace("`", "'").split()) + "`"


def render_markdown(results, *, metadata=None, comparison=None, aggregates=None,
                    runs_comparison=None) -> str:
    """The run summary as GitHub-flavoured Markdown: run facts (``metadata``), one table per
    task like the paper's, the gate's verdict with ``comparison``, and ``runs_comparison``
    (``--violin-compare``: this run side by side with others) appended."""
    records = records_of(results, keep_thumbnails=False)
    agg = aggregates if aggregates is not None else aggregate_records(records)
    meta = dict(metadata or {})
    passed, refused, errors = (sum(1 for r in records if r.get("outcome") == o)
                               for o in (Outcome.PASSED, Outcome.REFUSED, Outcome.ERROR))
    lines = ["## pytest-violin results", ""]
    # an error (a time-out, a setup error, a crash) was never judged: not a failure; a failing sample the
    # baseline holds is pytest's xfail, and is named as pytest names it
    xfailed = _xfailed(comparison)
    facts = [f"{len(records)} samples", f"{passed} passed", f"{len(records) - passed - errors - xfailed} failed"]
    if xfailed:
        facts.append(f"{xfailed} xfailed (over their limits, compared with the baseline: the gate judges them)")
    if refused:
        facts.append(f"{refused} refused by the model")
    if errors:
        facts.append(f"{errors} error{'s' if errors != 1 else ''} (not judged: not the model's failure)")
    for key in ("suite", "adapter", "profile", "seed"):
        if key in meta:
            facts.append(f"{key} {_code(meta[key])}")
    lines.append(" · ".join(facts))
    usage = usage_text(meta)
    if usage:
        lines += ["", usage[0].upper() + usage[1:] + "."]
    if meta.get("interrupted"):
        lines += ["", "**The run was interrupted; these results cover only the samples that ran.**"]
    lines.append("")

    groups = {}
    from ._sequential import regressed_groups, sequential_markdown

    lines += sequential_markdown(meta.get("sequential"))  # --violin-sequential: what decided
    if comparison is not None:
        groups = {(g.task, g.variation): g for g in comparison.groups}
        lines += _gate_section(comparison)  # after a decided sequential gate: the facts only
    marks = (regressed_groups(meta.get("sequential"))  # a decided sequential gate: its verdict marks
             if getattr(comparison, "decided_by", "") == "sequential" else None)
    for t in task_tables(agg, groups, marks):
        head = ["Variation", "n", "pass rate", *(["no image"] if t.no_image else []),
                *(["refused"] if t.refused else []), *t.names, *(["Δ mean vs baseline"] if t.baseline else [])]
        body = [[Raw("**all**") if r.total else r.label, str(r.row.count), f"{100 * r.row.pass_rate:.1f}%",
                 *([str(r.row.no_image)] if t.no_image else []), *([str(r.row.refused)] if t.refused else []),
                 *(fmt(r.row.means.get(n)) for n in t.names), *([_delta(r)] if t.baseline else [])]
                for r in t.rows]
        lines += [f"### {md_escape(t.task)}", "", *markdown_lines(Table.make(head, body), esc=md_escape), ""]
    from ..diagnosis.summary import failure_mode_lines

    modes = failure_mode_lines(records)
    if modes:  # the first finding of each failing sample's diagnosis (docs/diagnoses.md)
        lines += ["### Failure modes", "", *(f"- {md_escape(m)}" for m in modes), ""]
    from ..diagnosis.probes import probe_lines

    probes = probe_lines(records)
    if probes:  # the paper's three observations, measured (docs/diagnoses.md)
        lines += ["### Probe readings", "", *(f"- {md_escape(p)}" for p in probes), ""]
    if any(r.get("no_image") or r.get("refused") for r in agg.get("tasks", [])):
        from .terminal import NO_IMAGE_NOTE

        lines += [NO_IMAGE_NOTE[0].upper() + NO_IMAGE_NOTE[1:] + ".", ""]
    if runs_comparison is not None:
        from ..compare.formats import markdown_section

        lines += [markdown_section(runs_comparison), ""]
    return "\n".join(lines).rstrip() + "\n"


def _xfailed(comparison) -> int:
    """Samples over their limits that the baseline holds, judged there with the same definition: those the
    plugin reports as xfailed (docs/gating.md, "Known failures"), which are the failing samples the gate
    compared (each once: its task's row)."""
    if comparison is None:
        return 0
    return sum(len(g.newly_failing) + g.still_failing for g in comparison.groups if g.variation is None)


def _delta(row) -> str:
    """The Δ-mean cell: the difference, marked where the gate found the group worse or better."""
    if not row.compared:
        return "not compared"
    return fmt_signed(row.group.mean.delta) + {"regressed": " ❌ regressed", "improved": " ✅ improved"}.get(row.status, "")


def _gate_section(comparison) -> list[str]:
    from ._gate_words import (EVIDENCE_HEAD, cause_line, evidence_rows, group_rows, headline, not_compared,
                              ratchet_line, rule_line, too_few_line)

    # a decided sequential gate gave the verdict (its own section): the facts only here
    sequential = getattr(comparison, "decided_by", "") == "sequential"
    lines = ["### Baseline" if sequential else "### Regression gate", ""]
    if sequential:
        if comparison.errored:
            lines += [f"**FAILED: {len(comparison.errored)} sample(s) ended in an error** and could not "
                      f"be compared with the baseline.", ""]
        if comparison.too_few:
            lines += [md_escape(too_few_line(comparison)), ""]
    else:
        text, level = headline(comparison)
        lines += [f"**{md_escape(text)}**" if level == "bad" else md_escape(text), "",
                  md_escape(rule_line(comparison)[0].upper() + rule_line(comparison)[1:]) + ".", ""]
        if comparison.too_few and comparison.allow_mismatch:
            lines += [md_escape(too_few_line(comparison)), ""]
        rows = evidence_rows(comparison)
        if rows:  # what each group ruled out, and what a group not shown needs
            lines += ["What each group ruled out:", "",
                      *markdown_lines(Table(EVIDENCE_HEAD, tuple(tuple(md_escape(str(c)) for c in r) for r in rows),
                                            "llrlll"), esc=str), ""]
    for which, title in (("regressed", "Regressions"), ("improved", "Improvements")):
        found = [] if sequential else group_rows(comparison, which=which)
        if not found:
            continue
        causes = [f"- **{md_escape(g.label)}**: {md_escape(cause_line(g))}" for g, _ in found
                  if which == "regressed" and cause_line(g)]
        if causes:  # causes before numbers: the samples without an image now
            lines += ["Samples without an image:", "", *causes, ""]
        # the numbers are the gate's own text (gate_words); the label and the ids are escaped here
        table = Table(("group", "statistic", "n", "old", "new", "delta", "bounds", "newly failing"),
                      tuple((md_escape(g.label), r.statistic, r.n, r.old, r.new, r.delta, r.bounds,
                             id_list(g.newly_failing, _code) or "-") for g, rows in found for r in rows), "llrrrrll")
        lines += [f"{title}:", "", *markdown_lines(table, esc=str), ""]
    ratchet = None if sequential else ratchet_line(comparison)
    if ratchet:
        lines += [md_escape(ratchet[0].upper() + ratchet[1:]) + ".", ""]
    from ..gating.comparison import selection_text

    selection = selection_text(comparison)  # -k and friends: a selection, not a changed suite
    if selection:
        lines += [md_escape(selection[0].upper() + selection[1:]) + ".", ""]
    elif comparison.fingerprint_changed:
        lines += ["**The suite definition changed since the baseline** "
                  f"({len(comparison.changed)} sample(s) redefined and not compared).", ""]
    for title, ids in not_compared(comparison, selection):
        lines += [f"{title} ({len(ids)}): {id_list(ids, _code)}", ""]
    for key, (a, b) in comparison.metadata_changes.items():
        lines += [f"Note: {md_escape(key)} changed from {_code(a)} to {_code(b)}.", ""]
    return lines


def write_summary(path, results, **kwargs) -> Path:
    """Write ``summary.md`` (:func:`render_markdown` of ``kwargs``) and append it to ``$GITHUB_STEP_SUMMARY``
    (nothing when unset or empty)."""
    text = render_markdown(results, **kwargs)
    out = atomic_write(path, text)
    target = os.environ.get("GITHUB_STEP_SUMMARY", "")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return out
