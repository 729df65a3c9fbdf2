"""``report.html``: one self-contained page a person opens after a CI run.

The page has no external resources at all (a Content-Security-Policy forbids them, and only the page's own
inline script, pinned by its SHA-256, may run): summary tables per task and variation, inline SVG bar charts
of the metric means, the regression gate's verdict when a baseline was given, and one row per sample (failures
first) with expected / generated / difference thumbnails and filters (failures only, by outcome, by task, by
text).

The page is rendered by ``templates/report.html.j2`` (:mod:`._pages`: autoescape on, so every string that
comes from prompts, manifests, model servers or the environment is escaped where the template writes it); this
module gathers what it shows.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from ..results import Outcome, aggregate_records
from .._fs import atomic_write
from .json_report import failures_first, fmt, records_of, usage_text
from ._pages import Markup, badge, capital, render_page
from ._svg import bar_chart, color_scale
from .text import is_image_data_uri
from ._view import task_tables

__all__ = ["DEFAULT_THUMBNAIL_BUDGET", "render_html", "write_html"]

#: Bytes of thumbnail data URIs embedded at most; samples past the budget (passes come last) are listed
#: without pictures. Keeps 7,745 samples of a real model's noisy images well under 50 MB.
DEFAULT_THUMBNAIL_BUDGET = 35_000_000


def _run_facts(meta, records) -> list:
    passed, errors, refused = (sum(1 for r in records if r.get("outcome") == o)
                               for o in (Outcome.PASSED, Outcome.ERROR, Outcome.REFUSED))
    failed = len(records) - passed - errors - refused
    rows = [("samples", f"{len(records)} ({passed} passed, {failed} failed, {refused} refused, "
                        f"{errors} errors)")]
    usage = usage_text(meta)
    if usage:
        rows.append(("generations", usage))
    for key in ("suite", "adapter", "profile", "seed", "repeats", "pass_rule", "fingerprint",
                "package_version", "created", "baseline"):
        if meta.get(key) not in (None, ""):
            rows.append((key, meta[key]))
    return rows


def _gate_view(comparison) -> dict:
    """What the gate section (``templates/gate.html.j2``) shows, in its order."""
    from ..gating.comparison import selection_text
    from ._gate_words import (EVIDENCE_HEAD, cause_line, evidence_rows, group_rows, headline, not_compared,
                              ratchet_line, rule_line, too_few_line)

    # a decided sequential gate gave the verdict (its own section): the facts only here
    sequential = getattr(comparison, "decided_by", "") == "sequential"
    evidence = [] if sequential else evidence_rows(comparison)
    lines = []  # (tag, class, text)
    if sequential:
        if comparison.too_few:
            lines.append(("div", "banner bad", too_few_line(comparison)))
    else:
        text, level = headline(comparison)
        lines += [("div", f"banner {level}", text), ("p", "muted", capital(rule_line(comparison)) + ".")]
        if comparison.too_few and comparison.allow_mismatch:
            lines.append(("div", "banner warn", too_few_line(comparison)))
        ratchet = ratchet_line(comparison)
        if ratchet:
            lines.append(("div", "banner good", capital(ratchet) + "."))
    selection = selection_text(comparison)  # -k and friends: a selection, not a changed suite
    if selection:
        lines.append(("div", "banner", capital(selection) + "."))
    elif comparison.fingerprint_changed:
        lines.append(("div", "banner warn", f"The suite definition changed since the baseline: "
                                            f"{len(comparison.changed)} redefined sample(s) were not compared."))
    sections = []
    for which, title, css in (("regressed", "Regressions", "reg"), ("improved", "Improvements", "imp")):
        found = [] if sequential else group_rows(comparison, which=which)
        if found:
            # causes before numbers: the samples without an image now
            causes = [(g.label, cause_line(g)) for g, _ in found if which == "regressed" and cause_line(g)]
            sections.append((title, css, causes, [
                (g, rows, sorted(((k, v[2]) for k, v in g.metric_deltas.items()), key=lambda kv: -abs(kv[1]))[:3])
                for g, rows in found]))
    return {"sequential": sequential, "lines": lines, "metadata_changes": list(comparison.metadata_changes.items()),
            "sections": sections, "lists": not_compared(comparison, selection),
            "evidence_head": EVIDENCE_HEAD, "evidence": evidence}


def _charts(tables) -> list:
    """Per task a bar chart of the metric means (regressed variations highlighted), or,
    where no sample produced an image, ``(None, task, what they gave instead)``."""
    charts = []
    for t in tables:
        task_row = t.aggregate
        if task_row.errors + task_row.no_image + task_row.refused >= task_row.count:
            charts.append((None, t.task, _without_text(task_row)))  # no image to chart: say so
            continue
        series = [(r.variation or "-", r.means) for r in t.variations] or [("all", task_row.means)]
        regressed = [r.label for r in t.rows if not r.total and r.status == "regressed"]
        width = max(340, min(1200, 60 + len(t.names) * (24 + 10 * len(series))))
        charts.append((Markup(bar_chart(list(t.names), series, title=f"{t.task}: metric means (lower is better)",
                                        width=width, height=230 + 16 * ((len(series) + 3) // 4),
                                        highlight=regressed)), t.task, ""))
    return charts


def _without_text(row) -> str:
    parts = [f"{n} {what}" for n, what in
             ((row.no_image, "without an image"), (row.refused, "refused"), (row.errors, "errors")) if n]
    return ", ".join(parts) or f"{row.count} samples"


#: The thumbnails of a sample, in display order, and their captions.
_THUMB_ORDER = (("source", "source"), ("mask", "mask"), ("expected", "expected"),
                ("generated", "generated"), ("diff", "difference"))


def _scale() -> Markup:
    """The colour bar of the difference heat maps and its numeric range."""
    from .thumbnails import HEATMAP_TICKS, heatmap_position, heatmap_scale

    return Markup(color_scale(heatmap_scale(), [(heatmap_position(t), str(t)) for t in HEATMAP_TICKS],
                              title="difference |generated - expected|, 0-255 (mean of R, G, B)", width=380))


def _thumbs(rec, budget) -> tuple[list, int]:
    thumbs = (rec.get("extra") or {}).get("thumbnails") or {}
    if not isinstance(thumbs, dict) or not thumbs:
        return [], 0
    uris = [(caption, thumbs.get(k)) for k, caption in _THUMB_ORDER]
    uris = [(k, u) for k, u in uris if is_image_data_uri(u)]
    size = sum(len(u) for _, u in uris)
    if not uris or size > budget:
        return [], 0
    return uris, size


def _sample(rec, thumbs, newly_failing) -> SimpleNamespace:
    """One row of the samples table (``templates/report.html.j2``)."""
    sid = rec.get("sample_id") or rec.get("id")
    outcome = rec.get("outcome", "failed")
    failed = set(rec.get("failed") or [])
    limits = rec.get("limits") or {}
    spread = rec.get("spread") or {}
    size = rec.get("original_size")
    findings = [f for f in (rec.get("extra") or {}).get("diagnosis") or [] if isinstance(f, dict)]
    return SimpleNamespace(
        id=sid, task=rec.get("task", ""), outcome=outcome,
        badge=badge(outcome),
        newly_failing=sid in newly_failing, variation=rec.get("variation") or "",
        prompt=rec.get("prompt", ""), error=rec.get("error"), thumbs=thumbs,
        resized=size if isinstance(size, (list, tuple)) and len(size) == 2 else None,
        # (after a line break, "name value / limit", over its limit)
        metrics=[(i > 0, f"{k} {fmt(v)}" + (f" / {fmt(limits[k])}" if limits.get(k) is not None else ""), k in failed)
                 for i, (k, v) in enumerate((rec.get("metrics") or {}).items())],
        spread=((len(rec["repeats"]), spread["mean"], (rec.get("worst") or {}).get("mean"))
                if rec.get("repeats") and len(rec["repeats"]) > 1 and "mean" in spread else None),
        kinds=" ".join(dict.fromkeys(str(f.get("kind", "")) for f in findings)),
        findings=[(f.get("kind", ""), f.get("text", "")) for f in findings])


def render_html(results, *, metadata=None, comparison=None, aggregates=None,
                thumbnail_budget: int = DEFAULT_THUMBNAIL_BUDGET, runs_comparison=None) -> str:
    """The complete HTML report page.

    ``results`` carry ``extra["thumbnails"]`` data URIs when they were computed (at most ``thumbnail_budget``
    bytes are embedded, failures first); ``metadata`` are the run facts shown at the top; ``comparison`` adds
    the gate section and highlights regressed rows and newly failing samples; ``runs_comparison``
    (``--violin-compare``) follows the summary.
    """
    records = records_of(results)
    agg = aggregates if aggregates is not None else aggregate_records(records)
    meta = dict(metadata or {})
    groups = {}
    newly_failing = set()
    if comparison is not None:
        groups = {(g.task, g.variation): g for g in comparison.groups}
        for g in comparison.groups:
            if g.variation is None:
                newly_failing.update(g.newly_failing)
    from ._sequential import regressed_groups, sequential_html
    from .terminal import NO_IMAGE_NOTE

    marks = (regressed_groups(meta.get("sequential"))
             if getattr(comparison, "decided_by", "") == "sequential" else None)
    tables = task_tables(agg, groups, marks)
    section = ""
    if runs_comparison is not None:
        from ..compare.html import comparison_section

        section = comparison_section(runs_comparison)
    budget = int(thumbnail_budget)
    skipped = 0
    samples = []
    for rec in failures_first(records):
        thumbs, used = _thumbs(rec, budget)
        if not used and (rec.get("extra") or {}).get("thumbnails"):
            skipped += 1
        budget -= used
        samples.append(_sample(rec, thumbs, newly_failing))
    return render_page(
        "report.html.j2", script_name="report.js", page_class="report", suite=meta.get("suite", "violin"),
        run_facts=_run_facts(meta, records), interrupted=meta.get("interrupted"),
        # --violin-sequential: what decided; after a decided sequential gate the gate shows the facts only
        sequential=Markup(sequential_html(meta.get("sequential"))),
        gate=_gate_view(comparison) if comparison is not None else None, tables=tables,
        no_image_note=NO_IMAGE_NOTE if any(r.get("no_image") or r.get("refused") for r in agg.get("tasks", []))
        else None, charts=_charts(tables), comparison=Markup(section),
        tasks=sorted({str(r.get("task", "")) for r in records}), kinds=_kinds(records),
        scale=_scale() if any(is_image_data_uri(((r.get("extra") or {}).get("thumbnails") or {}).get("diff"))
                              for r in records) else None, samples=samples, skipped=skipped,
        budget=thumbnail_budget)


def _kinds(records) -> list:
    """The diagnosis kinds the records hold (docs/diagnoses.md), for the filter; none without any."""
    return sorted({str(f.get("kind", "")) for r in records
                   for f in (r.get("extra") or {}).get("diagnosis") or [] if isinstance(f, dict)})


def write_html(path, results, **kwargs) -> Path:
    """Write :func:`render_html` to ``path`` atomically (keyword arguments are passed on)."""
    return atomic_write(path, render_html(results, **kwargs))
