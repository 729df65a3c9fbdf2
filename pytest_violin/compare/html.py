"""The comparison as one self-contained HTML page, and as a section of ``report.html``.

The page has no external resources at all (a Content-Security-Policy forbids
them, and only the page's own inline script, pinned by its SHA-256, may run):
the comparison tables in the paper's layout (task x variation rows, one line
per run or published model, metric columns, the mean of means, pass rate and
n), the pairwise paired-bootstrap statements, inline SVG bar charts per task
with one bar per run and metric, and a gallery: one row per sample, the
expected image and each run's image side by side with its metric values,
filterable by task, variation, failures and "runs disagree", failures first.

Every string read from runs (prompts, labels, sample ids, paths, metadata)
goes through :func:`html.escape`; thumbnails are embedded only when they are
``data:image/png|jpeg;base64`` URIs and only up to a byte budget.
"""

from __future__ import annotations

import base64
import hashlib
import math
from html import escape
from pathlib import Path

from .._fs import atomic_write
from ..report.json_report import fmt, fmt_pct, fmt_signed, metric_names
from ..report.svg import PALETTE, bar_chart
from ..report.text import is_image_data_uri

__all__ = ["DEFAULT_MAX_SAMPLES", "DEFAULT_RENDER_LIMIT", "DEFAULT_THUMBNAIL_BUDGET", "comparison_section", "render_html",
           "write_html"]

#: Bytes of thumbnail data URIs embedded at most (the report's budget);
#: samples past it (passes and agreements come last) show placeholders.
DEFAULT_THUMBNAIL_BUDGET = 35_000_000

#: Gallery rows at most (a full suite is 7,745 samples).
DEFAULT_MAX_SAMPLES = 20_000

#: Gallery rows (disagreements and failures first) whose missing pictures are
#: made here: the expected image rendered from the built-in suite the run
#: names, and a ``dir:`` run's saved image read from its folder.
#: results.json carries no thumbnails (``--violin-report`` drops them), so
#: without this the gallery of report folders would be placeholders only.
#: About 1.5 ms per expected image and a few ms per saved image.
DEFAULT_RENDER_LIMIT = 500


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1400px;padding:16px;color:#222}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:24px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:4px 0 12px}th,td{border:1px solid #ddd;padding:3px 7px;vertical-align:top}
th{background:#f4f4f4;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{background:#f2f2f2}tr.pub td{color:#555;font-style:italic}
tr.gstart td{border-top:2px solid #bbb}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;font-weight:600}
.pass{background:#d9f2dd;color:#17692a}.fail{background:#fbd9d7;color:#a1190f}.err{background:#5b0d07;color:#fff}
.ref{background:#e6dcf7;color:#4b2a8a}.dis{background:#ffe08a;color:#5a4200}.paper{background:#e8e8e8;color:#444}
.banner{padding:10px 14px;border-radius:6px;margin:10px 0;font-weight:600}
.banner.warn{background:#fff3c4;color:#5a4200;border:1px solid #e2c767}
.facts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:6px 0 10px}.facts b{color:#666;font-weight:400}
.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{background:#fff;border:1px solid #eee}svg .grid{stroke:#e5e5e5}svg .ax{font-size:10px;fill:#555}
svg .ct{font-size:12px;font-weight:600;fill:#222}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px}
#filters{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid #ddd;z-index:1}
#filters label{margin-right:14px}
table.gallery td.img{text-align:center;min-width:100px}
table.gallery img{width:96px;height:auto;image-rendering:pixelated;border:1px solid #ccc}
table.gallery .ph{display:inline-block;width:96px;height:96px;line-height:96px;border:1px dashed #bbb;color:#999;font-size:11px}
table.gallery td.prompt{max-width:260px;word-wrap:break-word;font-size:12px}
table.gallery .m{font-size:11px;white-space:nowrap;text-align:left}.over{color:#a1190f;font-weight:700}
.errmsg{color:#a1190f;font-size:11px;white-space:pre-wrap;word-break:break-word;max-width:200px}
code{font-size:12px}.muted{color:#777}.ns{color:#777}
"""

_JS = """
(function(){
var ft=document.getElementById('f-task'),fv=document.getElementById('f-var'),fd=document.getElementById('f-dis'),
ff=document.getElementById('f-fail'),cnt=document.getElementById('f-count'),rows=document.querySelectorAll('tr.s');
function apply(){var task=ft.value,v=fv.value,dis=fd.checked,fail=ff.checked,shown=0;
for(var i=0;i<rows.length;i++){var r=rows[i],ok=true;
if(task&&r.getAttribute('data-task')!==task)ok=false;
if(ok&&v&&r.getAttribute('data-variation')!==v)ok=false;
if(ok&&dis&&r.getAttribute('data-disagree')!=='1')ok=false;
if(ok&&fail&&r.getAttribute('data-fail')!=='1')ok=false;
r.style.display=ok?'':'none';if(ok)shown++;}
cnt.textContent=shown+' of '+rows.length+' samples shown';}
ft.addEventListener('change',apply);fv.addEventListener('change',apply);fd.addEventListener('change',apply);
ff.addEventListener('change',apply);apply();
})();
"""


def _e(text) -> str:
    return escape(str(text), quote=True)


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
    return ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")


def _num(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _order(values) -> list:
    """Distinct values in first-seen order (None kept); linear (a dict keeps the order)."""
    return list(dict.fromkeys(values))


# --------------------------------------------------------------------------- tables


def _row_metrics(row) -> dict:
    return {**(row.metrics or {}), "mean": row.mean}


def _task_table(task: str, rows: list) -> str:
    names = metric_names([{"metrics": r.metrics or {}} for r in rows])
    variations = [v for v in _order(r.variation for r in rows) if v is not None]
    groups = [*variations, None] if any(r.variation is None for r in rows) else variations
    with_runs = any(not r.published for r in rows)
    head = "".join(f"<th>{_e(n)}</th>" for n in names)
    extra_head = "<th>pass rate</th><th>n</th>" if with_runs else ""
    out = [f'<h3>{_e(task)}</h3><table class="cmp"><tr><th>variation</th><th>run / model</th>'
           f"{head}{extra_head}</tr>"]
    for variation in groups:
        members = [r for r in rows if r.variation == variation]
        best = {}
        for n in names:
            vals = [v for v in (_num(_row_metrics(r).get(n)) for r in members) if v is not None]
            if len(vals) > 1:
                best[n] = min(vals)
        for i, r in enumerate(members):
            vals = _row_metrics(r)
            cells = []
            for n in names:
                v = _num(vals.get(n))
                text = fmt(v)
                cells.append(f'<td class="n">{"<b>" + text + "</b>" if v is not None and v == best.get(n) else text}</td>')
            if with_runs:
                cells.append(f'<td class="n">{fmt_pct(r.pass_rate) if r.pass_rate is not None else "-"}</td>'
                             f'<td class="n">{r.n if r.n is not None else "-"}</td>')
            classes = " ".join(c for c in ("pub" if r.published else "",
                                           "total" if variation is None else "",
                                           "gstart" if i == 0 else "") if c)
            tag = ' <span class="badge paper">paper</span>' if r.published else ""
            vlabel = _e(variation) if variation is not None else "all"
            out.append(f'<tr class="{classes}"><td>{vlabel if i == 0 else ""}</td>'
                       f"<td>{_e(r.label)}{tag}</td>{''.join(cells)}</tr>")
    out.append("</table>")
    return "\n".join(out)


def _pairs_table(pairs) -> str:
    if not pairs:
        return ""
    out = ['<h3>Pairwise differences (B minus A, task mean of means; lower is better)</h3>'
           '<table class="pairs"><tr><th>task</th><th>A</th><th>B</th><th>n</th><th>B &minus; A</th>'
           '<th>95% CI</th><th>verdict</th></tr>']
    for p in pairs:
        if p.significant:
            better, worse = (p.b, p.a) if p.delta < 0 else (p.a, p.b)
            verdict = f"{_e(better)} beats {_e(worse)}"
        else:
            verdict = '<span class="ns">not significant</span>'
        out.append(f"<tr><td>{_e(p.task)}</td><td>{_e(p.a)}</td><td>{_e(p.b)}</td>"
                   f'<td class="n">{int(p.n)}</td><td class="n">{fmt_signed(p.delta)}</td>'
                   f'<td class="n">[{fmt_signed(p.ci_low)}, {fmt_signed(p.ci_high)}]</td>'
                   f"<td>{verdict}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _charts(comparison) -> str:
    charts = []
    run_rows = [r for r in comparison.rows if not r.published and r.variation is None]
    for task in _order(r.task for r in run_rows):
        rows = [r for r in run_rows if r.task == task]
        names = metric_names([{"metrics": r.metrics or {}} for r in rows])
        series = [(r.label, {k: _num(v) for k, v in _row_metrics(r).items()}) for r in rows]
        width = max(340, min(1200, 60 + len(names) * (24 + 12 * len(series))))
        charts.append(bar_chart(names, series, title=f"{task}: metric means per run (lower is better)",
                                width=width, height=230 + 16 * ((len(series) + 3) // 4)))
    if not charts:
        return ""
    return '<h3>Metric means per run</h3><div class="charts">' + "".join(charts) + "</div>"


def comparison_section(comparison, *, heading: str = "Comparison with other runs") -> str:
    """The comparison's tables, pairwise statements and charts as an HTML fragment.

    Used by :func:`render_html` and embedded in ``report.html`` for
    ``--violin-compare``. It holds no script, so it fits any page whose
    CSP allows inline styles and ``data:`` images.

    Parameters
    ----------
    comparison : pytest_violin.compare.model.Comparison
        What to show.
    heading : str, optional
        The section's ``<h2>`` text.

    Returns
    -------
    str
        Escaped HTML (``<section id="violin-compare">``).
    """
    out = [f'<section id="violin-compare"><h2>{_e(heading)}</h2>']
    for m in comparison.mismatches or ():
        out.append(f'<div class="banner warn">{_e(m)}</div>')
    for m in getattr(comparison, "notes", None) or ():
        out.append(f'<div class="banner">{_e(m)}</div>')
    from .paper import comparability_notes

    for m in comparability_notes(comparison):  # where the paper's rows and each run were measured
        out.append(f'<div class="banner{" warn" if "did not use" in m else ""}">{_e(m)}</div>')
    # (never ``getattr(r, "label", str(r))``: the default is built first, the repr of 1M records)
    labels = [r.label if hasattr(r, "label") else str(r) for r in comparison.runs or ()]
    facts = [("runs", ", ".join(labels) or "-")]
    if comparison.all_samples:
        facts.append(("samples", "all samples of every run (--all-samples)"))
    else:
        facts.append(("samples compared", f"{int(comparison.shared)} (held by every run)"))
    dropped = {k: v for k, v in (comparison.dropped or {}).items() if v}
    reasons = getattr(comparison, "dropped_reasons", None) or {}
    if dropped:
        facts.append(("dropped (another run lacks them)",
                      ", ".join(f"{k}: {int(v)}" + (f" ({reasons[k]})" if reasons.get(k) else "")
                                for k, v in dropped.items())))
    out.append('<div class="facts">' + "".join(
        f"<span><b>{_e(k)}</b> <code>{_e(v)}</code></span>" for k, v in facts) + "</div>")
    for task in _order(r.task for r in comparison.rows):
        out.append(_task_table(task, [r for r in comparison.rows if r.task == task]))
    from .modes import html_section

    out.append(html_section(getattr(comparison, "modes", ()), _e))
    out.append(_pairs_table(comparison.pairs))
    out.append(_charts(comparison))
    out.append("</section>")
    return "\n".join(p for p in out if p)


# --------------------------------------------------------------------------- gallery


def _thumb(rec, key) -> str | None:
    thumbs = ((rec or {}).get("extra") or {}).get("thumbnails") if isinstance(rec, dict) else None
    if not isinstance(thumbs, dict):
        return None
    uri = thumbs.get(key)
    return uri if is_image_data_uri(uri) else None


def _suite_samples(runs) -> dict:
    """Sample id -> Sample of the built-in suites the runs name (never a path read from a run)."""
    from ..errors import ViolinError
    from ..suite import SUITES, load_suite

    out: dict = {}
    for name in _order(str((run.metadata or {}).get("suite") or "") for run in runs):
        if name in SUITES:
            try:
                out.update((sample.id, sample) for sample in load_suite(name))
            except ViolinError:
                continue
    return out


def _rendered_expected(sample) -> str | None:
    from ..errors import ViolinError
    from ..report.thumbnails import data_uri, thumbnail

    try:
        return data_uri(thumbnail(sample.expected()))
    except (ViolinError, ValueError):
        return None


def _saved_image(run, sid) -> str | None:
    """Thumbnail of a ``dir:`` run's saved image of ``sid`` (inside its folder only)."""
    from ..errors import ViolinError
    from ..imaging import as_rgb8
    from ..models.directory import output_path
    from ..report.thumbnails import data_uri, thumbnail

    if run.kind != "dir" or not str(run.source).startswith("dir:"):
        return None
    root = Path(str(run.source)[4:])
    try:
        path = output_path(root, sid)
        if not path.is_file() or not path.resolve().is_relative_to(root.resolve()):
            return None
        return data_uri(thumbnail(as_rgb8(path)))
    except (ViolinError, OSError, ValueError):
        return None


def _badge(outcome) -> str:
    cls = {"passed": "pass", "error": "err", "refused": "ref"}.get(outcome, "fail")
    return f'<span class="badge {cls}">{_e(outcome)}</span>'


def _metrics_html(rec) -> str:
    failed = set(rec.get("failed") or [])
    parts = []
    for k, v in (rec.get("metrics") or {}).items():
        text = f"{_e(k)} {fmt(v)}"
        parts.append(f'<span class="over">{text}</span>' if k in failed else text)
    return "<br>".join(parts)


def _sample_ids(runs, all_samples: bool) -> list:
    if all_samples or not runs:
        return _order(sid for run in runs for sid in (run.records or {}))
    # held by every run: in the first run's order (one pass, no list of every id first)
    others = [run.records or {} for run in runs[1:]]
    return [sid for sid in (runs[0].records or {}) if all(sid in o for o in others)]


def _sample_state(sid, runs) -> tuple[bool, bool]:
    """(any run did not pass, runs disagree: one passed and another did not)."""
    failing = passed = False
    for run in runs:
        rec = run.records.get(sid)
        if rec is not None:
            if rec.get("outcome", "failed") == "passed":
                passed = True
            else:
                failing = True
    return failing, failing and passed


def _gallery_row(sid, runs, budget: int, sample=None, render: bool = False) -> tuple[str, int]:
    held = [run.records.get(sid) for run in runs]
    first = next(r for r in held if r is not None)
    failing, disagree = _sample_state(sid, runs)
    used = 0
    expected = next((u for u in (_thumb(r, "expected") for r in held if r) if u), None)
    if expected is None and render and sample is not None:
        expected = _rendered_expected(sample)
    cells = []
    if expected and len(expected) <= budget:
        used += len(expected)
        cells.append(f'<td class="img"><img src="{expected}" alt="expected"></td>')
    else:
        cells.append('<td class="img"><span class="ph">no image</span></td>')
    for run, rec in zip(runs, held):
        if rec is None:
            cells.append('<td class="img"><span class="ph">not in run</span><div class="muted">-</div></td>')
            continue
        uri = _thumb(rec, "generated") or (_saved_image(run, sid) if render else None)
        if uri and used + len(uri) <= budget:
            used += len(uri)
            pic = f'<img src="{uri}" alt="{_e(run.label)}">'
        else:
            pic = '<span class="ph">no image</span>'
        err = f'<div class="errmsg">{_e(str(rec["error"])[:500])}</div>' if rec.get("error") else ""
        cells.append(f'<td class="img">{pic}<div>{_badge(rec.get("outcome", "failed"))}</div>'
                     f'<div class="m">{_metrics_html(rec)}</div>{err}</td>')
    dis = ' <span class="badge dis">runs disagree</span>' if disagree else ""
    variation = first.get("variation") or ""
    html = (f'<tr class="s" data-task="{_e(first.get("task", ""))}" data-variation="{_e(variation)}" '
            f'data-disagree="{int(disagree)}" data-fail="{int(failing)}">'
            f'<td><code>{_e(sid)}</code>{dis}<div class="muted">{_e(first.get("task", ""))} / '
            f'{_e(variation or "-")}</div></td><td class="prompt">{_e(first.get("prompt", ""))}</td>'
            + "".join(cells) + "</tr>")
    return html, used


def _gallery(comparison, runs, budget: int, max_samples: int, render_limit: int) -> str:
    ids = _sample_ids(runs, bool(comparison.all_samples))
    # failures first: disagreements, then samples a run fails, then passes (a stable
    # partition in one pass: linear in the samples, which may be 1,000,000)
    buckets: tuple = ([], [], [])
    task_set, variation_set = set(), set()
    for sid in ids:
        failing, disagree = _sample_state(sid, runs)
        buckets[0 if disagree else 1 if failing else 2].append(sid)
        first = next(run.records[sid] for run in runs if sid in run.records)
        task_set.add(str(first.get("task", "")))
        variation_set.add(str(first.get("variation") or ""))
    n_dis = len(buckets[0])
    ids = [*buckets[0], *buckets[1], *buckets[2]]
    del buckets
    tasks = sorted(task_set)
    variations = sorted(variation_set - {""})
    t_opts = "".join(f'<option value="{_e(t)}">{_e(t)}</option>' for t in tasks)
    v_opts = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in variations)
    heads = "".join(f'<th><span class="swatch" style="background:{PALETTE[i % len(PALETTE)]}"></span>'
                    f"{_e(run.label)}</th>" for i, run in enumerate(runs))
    out = [f'<h2 id="gallery">Samples ({len(ids)}, {n_dis} where the runs disagree)</h2>',
           '<div id="filters">'
           f'<label>task <select id="f-task"><option value="">all</option>{t_opts}</select></label>'
           f'<label>variation <select id="f-var"><option value="">all</option>{v_opts}</select></label>'
           '<label><input type="checkbox" id="f-dis"> runs disagree</label>'
           '<label><input type="checkbox" id="f-fail"> failures only</label>'
           '<span id="f-count" class="muted"></span></div>',
           f'<table class="gallery"><tr><th>sample</th><th>prompt</th><th>expected</th>{heads}</tr>']
    left = int(budget)
    without = 0
    samples = _suite_samples(runs) if render_limit > 0 else {}
    for i, sid in enumerate(ids[:max_samples]):
        html, used = _gallery_row(sid, runs, left, samples.get(sid), i < render_limit)
        left -= used
        without += html.count('class="ph">no image<')
        out.append(html)
    out.append("</table>")
    if len(ids) > max_samples:
        out.append(f'<p class="muted">{len(ids) - max_samples} more sample(s) not shown: the page '
                   f"lists at most {max_samples:,}, failures and disagreements first.</p>")
    if left <= 0 or without:
        out.append(f'<p class="muted">{without} picture(s) shown as placeholders: the run carries '
                   f"no thumbnail (results.json keeps none) and the row is past the first "
                   f"{int(render_limit):,} whose pictures are made here, or the page keeps at most "
                   f"{int(budget):,} bytes of pictures, disagreements and failures first.</p>")
    return "\n".join(out)


def _run_facts(runs) -> str:
    out = ['<table class="runs"><tr><th>run</th><th>kind</th><th>source</th><th>samples</th>'
           "<th>suite</th><th>adapter</th><th>profile</th><th>package version</th></tr>"]
    for i, run in enumerate(runs):
        meta = run.metadata or {}
        cells = "".join(f"<td>{_e(meta.get(k, '') or '')}</td>"
                        for k in ("suite", "adapter", "profile", "package_version"))
        out.append(f'<tr><td><span class="swatch" style="background:{PALETTE[i % len(PALETTE)]}"></span>'
                   f"{_e(run.label)}</td><td>{_e(run.kind)}</td><td><code>{_e(run.source)}</code></td>"
                   f'<td class="n">{len(run.records or {})}</td>{cells}</tr>')
    out.append("</table>")
    return "\n".join(out)


def render_html(comparison, runs=None, *, thumbnail_budget: int = DEFAULT_THUMBNAIL_BUDGET,
                max_samples: int = DEFAULT_MAX_SAMPLES, render_limit: int = DEFAULT_RENDER_LIMIT) -> str:
    """Render the comparison page.

    Parameters
    ----------
    comparison : pytest_violin.compare.model.Comparison
        Tables, pairwise statements, dropped counts and mismatches.
    runs : sequence of pytest_violin.compare.model.Run, optional
        The runs whose records fill the gallery (default ``comparison.runs``).
        Only samples every run holds are listed unless ``comparison.all_samples``.
    thumbnail_budget : int, optional
        Most bytes of thumbnail data URIs to embed (disagreements and failures
        get theirs first); the rest show placeholders.
    max_samples : int, optional
        Most gallery rows.
    render_limit : int, optional
        For the first ``render_limit`` gallery rows, pictures the records
        lack are made here: the expected image from the built-in suite the
        run names, a ``dir:`` run's image from its folder (0: never).

    Returns
    -------
    str
        The complete HTML document.
    """
    runs = list(comparison.runs if runs is None else runs)
    title = " vs ".join(run.label for run in runs) or "comparison"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{_csp()}">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>pytest-violin compare: {_e(title[:200])}</title>",
             f"<style>{_CSS}</style></head><body>",
             "<h1>pytest-violin comparison</h1>", _run_facts(runs),
             comparison_section(comparison, heading="Tables"),
             _gallery(comparison, runs, int(thumbnail_budget), int(max_samples), int(render_limit)),
             f"<script>{_JS}</script></body></html>\n"]
    return "\n".join(parts)


def write_html(path, comparison, runs=None, **kwargs) -> Path:
    """Write :func:`render_html` to ``path`` atomically (keyword arguments are passed on)."""
    return atomic_write(path, render_html(comparison, runs, **kwargs))
