"""``report.html``: one self-contained page a person opens after a CI run.

The page has no external resources at all (a Content-Security-Policy forbids
them, and only the page's own inline script, pinned by its SHA-256, may run):
summary tables per task and variation, inline SVG bar charts of the metric
means, the regression gate's verdict when a baseline was given, and one row
per sample (failures first) with expected / generated / difference
thumbnails and filters (failures only, by outcome, by task, by text).

Every string that comes from prompts, manifests, model servers or the
environment goes through :func:`html.escape`.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from pathlib import Path

from ..gating import aggregate_records
from .._fs import atomic_write
from .json_report import failures_first, fmt, fmt_signed, metric_names, records_of, usage_text
from .svg import bar_chart, color_scale
from .text import is_image_data_uri

__all__ = ["DEFAULT_THUMBNAIL_BUDGET", "render_html", "write_html"]

#: Bytes of thumbnail data URIs embedded at most; samples past the budget
#: (passes come last) are listed without pictures. Keeps 7,745 samples of
#: a real model's noisy images well under 50 MB.
DEFAULT_THUMBNAIL_BUDGET = 35_000_000


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1240px;padding:16px;color:#222}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:24px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:4px 0 12px}th,td{border:1px solid #ddd;padding:3px 7px;vertical-align:top}
th{background:#f4f4f4;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:600;background:#fafafa}
tr.reg td{background:#fde2e1}tr.imp td{background:#e3f6e6}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;font-weight:600}
.pass{background:#d9f2dd;color:#17692a}.fail{background:#fbd9d7;color:#a1190f}.err{background:#5b0d07;color:#fff}
.newfail{background:#ffe08a;color:#5a4200}.ref{background:#e6dcf7;color:#4b2a8a}
.banner{padding:10px 14px;border-radius:6px;margin:10px 0;font-weight:600}
.banner.bad{background:#fbd9d7;color:#7d1208;border:1px solid #e08b84}
.banner.good{background:#d9f2dd;color:#17692a;border:1px solid #8cc79a}
.banner.warn{background:#fff3c4;color:#5a4200;border:1px solid #e2c767}
.facts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:6px 0 10px}.facts b{color:#666;font-weight:400}
.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{background:#fff;border:1px solid #eee}svg .grid{stroke:#e5e5e5}svg .ax{font-size:10px;fill:#555}
svg .ct{font-size:12px;font-weight:600;fill:#222}
.scalebox{display:flex;align-items:center;gap:10px;margin:4px 0 8px;font-size:12px;color:#555}
#filters{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid #ddd;z-index:1}
#filters label{margin-right:14px}
table.samples td.th img{width:72px;height:auto;image-rendering:pixelated;margin-right:2px;border:1px solid #ccc}
table.samples td.th figure{display:inline-block;margin:0 2px;text-align:center;font-size:10px;color:#666}
table.samples td.prompt{max-width:330px;word-wrap:break-word}
table.samples td.m{font-size:12px;white-space:nowrap}.over{color:#a1190f;font-weight:700}
.dg{font-size:12px;max-width:320px}.dg div{margin-bottom:3px}
.errmsg{color:#a1190f;font-size:12px;white-space:pre-wrap;word-break:break-word}
code{font-size:12px}.muted{color:#777}
"""

_JS = """
(function(){
var fo=document.getElementById('f-fail'),ft=document.getElementById('f-task'),fq=document.getElementById('f-text'),
fx=document.getElementById('f-outcome'),cnt=document.getElementById('f-count'),rows=document.querySelectorAll('tr.s'),
fk=document.getElementById('f-kind');
function apply(){var onlyFail=fo.checked,task=ft.value,oc=fx.value,q=fq.value.toLowerCase(),kind=fk?fk.value:'',shown=0;
for(var i=0;i<rows.length;i++){var r=rows[i],ok=true;
if(onlyFail&&r.getAttribute('data-outcome')==='passed')ok=false;
if(ok&&oc&&r.getAttribute('data-outcome')!==oc)ok=false;
if(ok&&task&&r.getAttribute('data-task')!==task)ok=false;
if(ok&&kind&&(' '+(r.getAttribute('data-kinds')||'')+' ').indexOf(' '+kind+' ')<0)ok=false;
if(ok&&q&&r.textContent.toLowerCase().indexOf(q)<0)ok=false;
r.style.display=ok?'':'none';if(ok)shown++;}
cnt.textContent=shown+' of '+rows.length+' samples shown';}
fo.addEventListener('change',apply);ft.addEventListener('change',apply);if(fk)fk.addEventListener('change',apply);fx.addEventListener('change',apply);fq.addEventListener('input',apply);apply();
})();
"""


def _e(text) -> str:
    return escape(str(text), quote=True)


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
    return ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")


def _meta_table(meta, records) -> str:
    passed = sum(1 for r in records if r.get("outcome") == "passed")
    errors = sum(1 for r in records if r.get("outcome") == "error")
    refused = sum(1 for r in records if r.get("outcome") == "refused")
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
    return ('<div class="facts">' + "".join(
        f"<span><b>{_e(k)}</b> <code>{_e(v)}</code></span>" for k, v in rows) + "</div>")



def _id_list(ids, shown: int = 20) -> str:
    """The first ``shown`` sample ids as code, then how many more there are."""
    text = " ".join(f"<code>{_e(i)}</code>" for i in ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")

def _gate_html(comparison) -> str:
    from .gate_words import cause_line, group_rows, headline, ratchet_line, rule_line, too_few_line

    # a decided sequential gate gave the verdict (its own section): the facts only here
    sequential = getattr(comparison, "decided_by", "") == "sequential"
    out = ['<h2 id="gate">' + ("Baseline" if sequential else "Regression gate") + "</h2>"]
    if sequential:
        if comparison.too_few:
            out.append(f'<div class="banner bad">{_e(too_few_line(comparison))}</div>')
    else:
        text, level = headline(comparison)
        out.append(f'<div class="banner {level}">{_e(text)}</div>')
        out.append(f'<p class="muted">{_e(rule_line(comparison)[0].upper() + rule_line(comparison)[1:])}.</p>')
        if comparison.too_few and comparison.allow_mismatch:
            out.append(f'<div class="banner warn">{_e(too_few_line(comparison))}</div>')
        ratchet = ratchet_line(comparison)
        if ratchet:
            out.append(f'<div class="banner good">{_e(ratchet[0].upper() + ratchet[1:])}.</div>')
    from ..gating.comparison import selection_text

    selection = selection_text(comparison)  # -k and friends: a selection, not a changed suite
    if selection:
        out.append(f'<div class="banner">{_e(selection[0].upper() + selection[1:])}.</div>')
    elif comparison.fingerprint_changed:
        out.append(f'<div class="banner warn">The suite definition changed since the baseline: '
                   f'{len(comparison.changed)} redefined sample(s) were not compared.</div>')
    for key, (a, b) in comparison.metadata_changes.items():
        out.append(f'<div class="banner warn">{_e(key)} changed: <code>{_e(a)}</code> &rarr; '
                   f'<code>{_e(b)}</code></div>')
    for which, title, cls in (("regressed", "Regressions", "reg"), ("improved", "Improvements", "imp")):
        found = [] if sequential else group_rows(comparison, which=which)
        if not found:
            continue
        out.append(f"<h3>{title}</h3>")
        causes = [(g, cause_line(g)) for g, _ in found if which == "regressed" and cause_line(g)]
        if causes:  # causes before numbers: the samples without an image now
            out.append("<ul>" + "".join(f"<li><b>{_e(g.label)}</b>: {_e(c)}</li>" for g, c in causes) + "</ul>")
        out.append("<table><tr><th>group</th><th>statistic</th><th>n</th><th>old</th><th>new</th>"
                   "<th>delta</th><th>bounds</th><th>worst metric deltas</th><th>newly failing</th></tr>")
        for g, rows in found:
            md = sorted(g.metric_deltas.items(), key=lambda kv: -abs(kv[1][2]))[:3]
            mtxt = ", ".join(f"{_e(k)} {fmt_signed(v[2])}" for k, v in md)
            nf = _id_list(g.newly_failing)
            for r in rows:
                out.append(f'<tr class="{cls}"><td>{_e(g.label)}</td><td>{_e(r.statistic)}</td>'
                           f'<td class="n">{r.n}</td><td class="n">{_e(r.old)}</td><td class="n">{_e(r.new)}</td>'
                           f'<td class="n">{_e(r.delta)}</td><td class="n">{_e(r.bounds)}</td>'
                           f"<td>{mtxt}</td><td>{nf or '-'}</td></tr>")
        out.append("</table>")
    for title, ids in (("Missing from this run", () if selection else comparison.missing),
                       ("Not in the baseline", comparison.added),
                       ("Redefined since the baseline (not compared)", comparison.changed)):
        if ids:
            shown = " ".join(f"<code>{_e(i)}</code>" for i in ids[:50])
            more = f" and {len(ids) - 50} more" if len(ids) > 50 else ""
            out.append(f"<p><b>{_e(title)} ({len(ids)}):</b> {shown}{more}</p>")
    return "\n".join(out)


def _summary_html(agg, groups, marks=None) -> str:
    out = ['<h2 id="summary">Summary</h2>']
    charts = []
    for task_row in agg.get("tasks", []):
        task = task_row["task"]
        rows = [r for r in agg.get("variations", []) if r["task"] == task]
        names = metric_names([task_row, *rows])
        head = "".join(f"<th>{_e(n)}</th>" for n in names)
        delta_head = "<th>&Delta; mean</th><th>bounds</th>" if groups else ""
        with_refused = any(r.get("refused") for r in agg.get("tasks", []))
        with_no_image = any(r.get("no_image") for r in agg.get("tasks", []))
        refused_head = ("<th>no image</th>" if with_no_image else "") + ("<th>refused</th>" if with_refused else "")
        out.append(f"<h3>{_e(task)}</h3><table><tr><th>variation</th><th>n</th><th>pass rate</th>"
                   f"{refused_head}{head}{delta_head}</tr>")
        for row, label, cls in [*((r, r["variation"] or "-", "") for r in rows), (task_row, "all", "total")]:
            g = groups.get((task, row["variation"]))
            status = (" regressed" if g.regressed else " improved" if g.improved else "") if g is not None else ""
            if marks is not None:  # a decided sequential gate: red only what it showed regressed
                status = " regressed" if (task, row["variation"]) in marks else ""
            classes = (cls + (" reg" if status == " regressed" else " imp" if status == " improved" else "")).strip()
            cells = "".join(f'<td class="n">{fmt(row["metrics"].get(n))}</td>' for n in names)
            if groups:
                if g is None or g.status == "not-compared":
                    cells += '<td colspan="2" class="muted">not compared</td>'
                else:
                    cells += (f'<td class="n">{fmt_signed(g.delta)}</td>'
                              f'<td class="n">[{fmt_signed(g.ci_low)}, {fmt_signed(g.ci_high)}]</td>')
            refused_cell = (f'<td class="n">{int(row.get("no_image") or 0)}</td>' if with_no_image else "") + (
                f'<td class="n">{int(row.get("refused") or 0)}</td>' if with_refused else "")
            out.append(f'<tr class="{classes}"><td>{_e(label)}</td><td class="n">{row["n"]}</td>'
                       f'<td class="n">{100 * row["pass_rate"]:.1f}%</td>{refused_cell}{cells}</tr>')
        out.append("</table>")
        without = sum(int(task_row.get(k) or 0) for k in ("errors", "no_image", "refused"))
        if without >= task_row["n"]:  # no image to chart: say so instead of drawing empty bars
            charts.append(f'<p class="muted nochart">{_e(task)}: no sample produced an image '
                          f'({_e(_without_text(task_row))}), so there is no chart.</p>')
            continue
        series = [(r["variation"] or "-", r["metrics"]) for r in rows] or [("all", task_row["metrics"])]
        regressed = [r["variation"] or "-" for r in rows
                     if ((task, r["variation"]) in marks if marks is not None else
                         groups.get((task, r["variation"])) is not None
                         and groups[(task, r["variation"])].regressed)]
        width = max(340, min(1200, 60 + len(names) * (24 + 10 * len(series))))
        charts.append(bar_chart(names, series, title=f"{task}: metric means (lower is better)",
                                width=width, height=230 + 16 * ((len(series) + 3) // 4),
                                highlight=regressed))
    if any(r.get("no_image") or r.get("refused") for r in agg.get("tasks", [])):
        from .terminal import NO_IMAGE_NOTE

        out.append(f'<p class="muted">{_e(NO_IMAGE_NOTE[0].upper() + NO_IMAGE_NOTE[1:])}.</p>')
    out.append('<h2 id="charts">Metric means</h2><div class="charts">' + "".join(charts) + "</div>")
    return "\n".join(out)


def _without_text(row) -> str:
    parts = [f"{int(row.get(k) or 0)} {what}" for k, what in
             (("no_image", "without an image"), ("refused", "refused"), ("errors", "errors")) if row.get(k)]
    return ", ".join(parts) or f"{row['n']} samples"


#: The thumbnails of a sample, in display order, and their captions.
_THUMB_ORDER = (("source", "source"), ("mask", "mask"), ("expected", "expected"),
                ("generated", "generated"), ("diff", "difference"))


def _scale_html() -> str:
    """The legend of the difference heat maps: the colour bar and its numeric range."""
    from .thumbnails import HEATMAP_TICKS, heatmap_position, heatmap_scale

    bar = color_scale(heatmap_scale(), [(heatmap_position(t), str(t)) for t in HEATMAP_TICKS],
                      title="difference |generated - expected|, 0-255 (mean of R, G, B)", width=380)
    return (f'<div class="scalebox" id="diff-scale">{bar}<span>difference heat map: black = identical, '
            "yellow = a full-range difference of 255; square-root scale, so small differences "
            "stay visible</span></div>")


def _thumbs(rec, budget) -> tuple[str, int]:
    thumbs = (rec.get("extra") or {}).get("thumbnails") or {}
    if not isinstance(thumbs, dict) or not thumbs:
        return "", 0
    uris = [(caption, thumbs.get(k)) for k, caption in _THUMB_ORDER]
    uris = [(k, u) for k, u in uris if is_image_data_uri(u)]
    size = sum(len(u) for _, u in uris)
    if not uris or size > budget:
        return "", 0
    figs = "".join(f'<figure><img src="{u}" alt="{k}"><figcaption>{k}</figcaption></figure>'
                   for k, u in uris)
    return figs, size


def _sample_row(rec, budget, newly_failing) -> tuple[str, int]:
    sid = rec.get("sample_id") or rec.get("id")
    outcome = rec.get("outcome", "failed")
    if outcome == "error":
        badge = '<span class="badge err">error</span>'
    elif outcome == "passed":
        badge = '<span class="badge pass">passed</span>'
    elif outcome == "refused":
        badge = '<span class="badge ref">refused</span>'
    else:
        badge = '<span class="badge fail">failed</span>'
    if sid in newly_failing:
        badge += ' <span class="badge newfail">newly failing</span>'
    thumbs, used = _thumbs(rec, budget)
    failed = set(rec.get("failed") or [])
    limits = rec.get("limits") or {}
    metrics = rec.get("metrics") or {}
    mparts = []
    for k, v in metrics.items():
        lim = limits.get(k)
        text = f"{_e(k)} {fmt(v)}" + (f" / {fmt(lim)}" if lim is not None else "")
        mparts.append(f'<span class="over">{text}</span>' if k in failed else text)
    mhtml = "<br>".join(mparts)
    spread = rec.get("spread") or {}
    if rec.get("repeats") and len(rec["repeats"]) > 1 and "mean" in spread:
        mhtml += (f'<br><span class="muted">{len(rec["repeats"])} repeats, spread {fmt(spread["mean"])}, '
                  f'worst {fmt((rec.get("worst") or {}).get("mean"))}</span>')
    err = f'<div class="errmsg">{_e(rec["error"])}</div>' if rec.get("error") else ""
    size = rec.get("original_size")
    note = (f'<div class="muted">resized from {_e(size[0])}x{_e(size[1])}</div>'
            if isinstance(size, (list, tuple)) and len(size) == 2 else "")
    findings = [f for f in (rec.get("extra") or {}).get("diagnosis") or [] if isinstance(f, dict)]
    kinds = " ".join(dict.fromkeys(str(f.get("kind", "")) for f in findings))
    diag = "".join(f'<div><b>{_e(f.get("kind", ""))}</b> {_e(f.get("text", ""))}</div>' for f in findings)
    html = (f'<tr class="s" data-task="{_e(rec.get("task", ""))}" data-outcome="{_e(outcome)}" '
            f'data-kinds="{_e(kinds)}">'
            f"<td>{badge}</td><td><code>{_e(sid)}</code><div class=\"muted\">{_e(rec.get('variation') or '')}"
            f"</div></td><td class=\"prompt\">{_e(rec.get('prompt', ''))}{err}{note}</td>"
            f'<td class="th">{thumbs}</td><td class="m">{mhtml}</td><td class="dg">{diag}</td></tr>')
    return html, used


def render_html(results, *, metadata=None, comparison=None, aggregates=None,
                thumbnail_budget: int = DEFAULT_THUMBNAIL_BUDGET, runs_comparison=None) -> str:
    """Render the report page.

    Parameters
    ----------
    results : iterable
        Sample results (with ``extra["thumbnails"]`` data URIs when they were
        computed).
    metadata : Mapping, optional
        Run facts shown at the top (suite, adapter, profile, seed, ...).
    comparison : Comparison, optional
        The baseline comparison: adds the gate section and highlights
        regressed rows and newly failing samples.
    aggregates : Mapping, optional
        Precomputed :func:`pytest_violin.gating.aggregate_records`.
    thumbnail_budget : int, optional
        Most bytes of thumbnails to embed (failures get theirs first).
    runs_comparison : pytest_violin.compare.model.Comparison, optional
        ``--violin-compare``: this run beside other runs (and the paper),
        shown after the summary.

    Returns
    -------
    str
        The complete HTML document.
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
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{_csp()}">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>pytest-violin report: {_e(meta.get('suite', 'violin'))}</title>",
             f"<style>{_CSS}</style></head><body>",
             "<h1>pytest-violin report</h1>", _meta_table(meta, records)]
    if meta.get("interrupted"):
        parts.append('<div class="banner warn">The run was interrupted: this report covers only the '
                     'samples that ran.</div>')
    from .sequential import sequential_html

    parts.append(sequential_html(meta.get("sequential")))  # --violin-sequential: what decided
    if comparison is not None:  # after a decided sequential gate: the facts only
        parts.append(_gate_html(comparison))
    from .sequential import regressed_groups

    marks = (regressed_groups(meta.get("sequential"))
             if getattr(comparison, "decided_by", "") == "sequential" else None)
    parts.append(_summary_html(agg, groups, marks))
    if runs_comparison is not None:
        from ..compare.html import comparison_section

        parts.append(comparison_section(runs_comparison))

    tasks = sorted({str(r.get("task", "")) for r in records})
    options = "".join(f'<option value="{_e(t)}">{_e(t)}</option>' for t in tasks)
    parts.append('<h2 id="samples">Samples</h2>'
                 '<div id="filters"><label><input type="checkbox" id="f-fail"> failures only</label>'
                 '<label>outcome <select id="f-outcome"><option value="">all</option>'
                 + "".join(f'<option value="{o}">{o}</option>' for o in ("passed", "failed", "refused", "error"))
                 + '</select></label>'
                 f'<label>task <select id="f-task"><option value="">all</option>{options}</select></label>'
                 + _kind_filter(records) +
                 '<label>search <input type="search" id="f-text" size="28"></label>'
                 '<span id="f-count" class="muted"></span></div>'
                 + (_scale_html() if _any_diff(records) else "") +
                 '<table class="samples"><tr><th>outcome</th><th>sample</th><th>prompt</th>'
                 '<th>(inputs /) expected / generated / difference</th><th>metric value / limit</th>'
                 '<th>diagnosis</th></tr>')
    budget = int(thumbnail_budget)
    skipped = 0
    rows = []
    for rec in failures_first(records):
        html, used = _sample_row(rec, budget, newly_failing)
        if not used and (rec.get("extra") or {}).get("thumbnails"):
            skipped += 1
        budget -= used
        rows.append(html)
    parts.extend(rows)
    parts.append("</table>")
    if skipped:
        parts.append(f'<p class="muted">{skipped} sample(s) shown without thumbnails: the report keeps '
                     f"at most {thumbnail_budget:,} bytes of pictures, failures first.</p>")
    parts.append(f"<script>{_JS}</script></body></html>\n")
    return "\n".join(parts)


def _kind_filter(records) -> str:
    """A select of the diagnosis kinds the records hold (docs/diagnoses.md); none without any."""
    kinds = sorted({str(f.get("kind", "")) for r in records
                    for f in (r.get("extra") or {}).get("diagnosis") or [] if isinstance(f, dict)})
    if not kinds:
        return ""
    options = "".join(f'<option value="{_e(k)}">{_e(k)}</option>' for k in kinds)
    return f'<label>diagnosis <select id="f-kind"><option value="">all</option>{options}</select></label>'


def _any_diff(records) -> bool:
    return any(is_image_data_uri(((r.get("extra") or {}).get("thumbnails") or {}).get("diff"))
               for r in records)


def write_html(path, results, **kwargs) -> Path:
    """Write :func:`render_html` to ``path`` atomically (keyword arguments are passed on)."""
    return atomic_write(path, render_html(results, **kwargs))
