"""The terminal summary: one table per suite and task, rows per variation.

Laid out like the paper's Tables 1-3: metric columns, the mean column, then the pass rate and the sample
count.
"""

from __future__ import annotations


from ..results import Outcome
from ._gate_words import id_list, where
from ._tables import Table, text_lines
from .json_report import fmt_signed
from .text import printable

__all__ = ["NO_IMAGE_NOTE", "comparison_lines", "format_summary", "write_summary"]

#: Said under the tables wherever a sample has no image: how the means count it
#: (:data:`pytest_violin.results.NO_IMAGE_VALUE`), the same in every report.
NO_IMAGE_NOTE = ("means: a sample without an image (no image, refused) counts 1.0 on every metric, "
                 "as the regression gate counts it; errors are not judged and left out")


def _fmt(value) -> str:
    if value is None:  # no scored sample in the group
        return "-"
    return f"{value:.3f}"


def _diagnosis_lines(results) -> list:
    """The failure modes and the probe readings (docs/diagnoses.md); diagnosis loads only when either is due."""
    lines = []
    failed = [r.to_dict() for r in results if r.outcome is Outcome.FAILED]
    if failed:
        from ..diagnosis.summary import failure_mode_lines

        modes = failure_mode_lines(failed)
        if modes:
            lines += ["", "failure modes:", *(f"  {m}" for m in modes)]
    if any(r.suite == "violin-probes" for r in results):  # diagnosis.probes.PROBES_SUITE
        from ..diagnosis.probes import PROBES_SUITE, probe_lines

        probes = probe_lines([r.to_dict() for r in results if r.suite == PROBES_SUITE])
        if probes:
            lines += ["", f"probe readings ({PROBES_SUITE}):", *(f"  {p}" for p in probes)]
    return lines


def format_summary(store, *, settings=None, price=None, usage=None) -> list[str]:
    """The lines (no newlines) of ``store``'s aggregate tables, headed by the model, profile and
    seed of ``settings``; with ``price`` the estimated cost; ``usage`` is the run's call counts
    (:meth:`pytest_violin.execution.usage.CallCounter.snapshot`), what the totals and
    the cost are computed from when given."""
    rows = store.aggregate(totals=True)
    lines: list[str] = []
    if settings is not None and settings.model:
        from ..redaction import redact

        extra = f", repeats={settings.repeats} ({settings.pass_rule})" if settings.repeats > 1 else ""
        lines.append(f"model {redact(settings.model)}, profile {settings.profile}, seed {settings.seed}{extra}")
    groups: dict[tuple, list] = {}
    for row in rows:
        groups.setdefault((row.suite, row.task), []).append(row)
    for members in groups.values():  # a task's own row only where it has several variations
        if len(members) == 2:
            members.pop()
    for (suite, task), members in groups.items():
        names = list(dict.fromkeys(n for row in members for n in row.metric_names))
        body = []
        for row in members:
            label = "all" if row.is_total else (row.variation or "-")
            errors = "".join(f" ({n} {what})" for n, what in (
                (getattr(row, "no_image", 0), "no image"), (row.refused, "refused"), (row.errors, "err")) if n)
            body.append([label, *(_fmt(row.means.get(n)) for n in names),
                         _fmt(row.means.get("mean")), f"{100 * row.pass_rate:.1f}%",
                         f"{row.count}{errors}"])
        table = Table.make(["variation", *names, f"{task}-mean", "pass", "n"], body)
        lines += ["", f"{suite} / {task}", *text_lines(table, rule=True)]
    total = len(store)
    passed = sum(1 for r in store.results if r.passed)
    lines += _diagnosis_lines(store.results)
    if any(getattr(row, "no_image", 0) or row.refused for row in rows):
        lines.append("")
        lines.append(NO_IMAGE_NOTE)
    lines.append("")
    errors, refused = (sum(1 for r in store.results if r.outcome is o) for o in (Outcome.ERROR, Outcome.REFUSED))
    tail = f", {refused} refused by the model" if refused else ""
    tail += f", {errors} ended in an error (not scored: not the model's failure)" if errors else ""
    lines.append(f"{passed}/{total} samples passed ({100 * passed / total:.1f}%){tail}" if total
                 else "no samples")
    if total:
        from .json_report import run_usage, usage_text

        # usage: the calls counted where they were made (reruns, -x, repeats, fixtures;
        # pytest_violin.execution.usage), else the records' own counts
        usage = run_usage(store.results, price=price, counted=usage)
        if usage["generations"] or usage["cache_hits"] or price is not None:
            lines.append(usage_text(usage))
    return lines


def write_summary(terminalreporter, store, *, settings=None, price=None, usage=None) -> None:
    """Write the Violin section of the terminal summary."""
    terminalreporter.write_sep("=", "violin summary")
    for text in format_summary(store, settings=settings, price=price, usage=usage):
        terminalreporter.write_line(printable(text))


# --------------------------------------------------------------------------- the gate's verdict


def _group_lines(g, rows, which: str, level: str) -> list[tuple[str, str]]:
    """A regressed or improved group: causes before numbers, its statistics, what moved."""
    from ._gate_words import cause_line

    out = [(f"  {which:9s} {g.label}  (n={g.n})", level)]
    cause = cause_line(g)
    if cause and which == "regressed":
        out.append((f"            {cause}", "bad"))
    out += [(f"            {r.statistic:<13s} old {r.old:>7s}  new {r.new:>7s}  delta {r.delta}  bounds {r.bounds}",
             level) for r in rows]
    if which != "regressed":
        return out
    worst = sorted(g.metric_deltas.items(), key=lambda kv: -kv[1][2])[:3]
    if worst:
        out.append((f"            worst metrics ({g.imaged_n} with an image on both sides): "
                    + ", ".join(f"{k} {fmt_signed(v[2], 4)}" for k, v in worst), "info"))
    if g.newly_failing:
        out.append((f"            newly failing ({len(g.newly_failing)}): {id_list(g.newly_failing)}", level))
    if g.newly_refused and "refusal_rate" in g.regressed:
        out.append((f"            newly refused ({len(g.newly_refused)}): {id_list(g.newly_refused)}", level))
    return out


def comparison_lines(comparison, *, judged: bool = True) -> list[tuple[str, str]]:
    """``(text, level)`` lines of a comparison for the terminal (level ``bad``, ``good``,
    ``warn`` or ``info``); at most 10 sample ids per list before "and N more". Not ``judged``
    (a run stopped before its end): the facts without a verdict or a ratchet."""
    from ._gate_words import evidence_lines, group_rows, headline, ratchet_line, rule_line, too_few_line

    out = []
    # a decided sequential gate gave the verdict (report/sequential.py): the facts only here
    sequential = getattr(comparison, "decided_by", "") == "sequential"
    if not sequential:
        out += [headline(comparison)] if judged else []
        out += [(rule_line(comparison), "info")]
        out += [("  " + line, level) for line, level in evidence_lines(comparison)]
        for which, level in (("regressed", "bad"), ("improved", "good")):
            for g, rows in group_rows(comparison, which=which):
                out += _group_lines(g, rows, which, level)
        ratchet = ratchet_line(comparison) if judged else None
        if ratchet:
            out.append((ratchet, "good"))
    elif comparison.errored:
        out.append((f"FAILED: {len(comparison.errored)} sample(s) of this run ended in an error and could "
                    f"not be compared with baseline{where(comparison)}: {id_list(comparison.errored)}", "bad"))
    if sequential and comparison.too_few:
        out.append((too_few_line(comparison), "bad" if comparison.undecidable else "warn"))
    elif comparison.too_few and comparison.allow_mismatch:
        out.append((too_few_line(comparison), "warn"))
    from ..gating.comparison import selection_text

    selection = selection_text(comparison)  # -k and friends: a selection, not a changed suite
    if selection:
        out.append((selection, "info"))
    elif comparison.fingerprint_changed:
        out.append((f"suite fingerprint changed: {comparison.old_fingerprint} -> "
                    f"{comparison.new_fingerprint}", "warn"))
    for title, items in (("ended in an error in the baseline, not compared", comparison.errored_in_baseline),
                         ("missing from this run", () if selection else comparison.missing),
                         ("not in the baseline", comparison.added),
                         ("redefined since the baseline, not compared", comparison.changed)):
        if items:
            out.append((f"{len(items)} sample(s) {title}: {id_list(items)}", "warn"))
    for key, (a, b) in comparison.metadata_changes.items():
        out.append((f"{key} differs: baseline {a!r}, this run {b!r}", "warn"))
    return out
