"""The comparison as one self-contained HTML page, and as a section of ``report.html``.

The page has no external resources at all (a Content-Security-Policy forbids them, and only the page's own
inline script, pinned by its SHA-256, may run): the comparison tables in the paper's layout (task x variation
rows, one line per run or published model, metric columns, the mean of means, pass rate and n), the pairwise
paired-bootstrap statements, inline SVG bar charts per task with one bar per run and metric, and a gallery:
one row per sample, the expected image and each run's image side by side with its metric values, filterable by
task, variation, failures and "runs disagree", failures first.

The page is rendered by ``report/templates/compare.html.j2`` and the section by ``comparison.html.j2``
(:mod:`pytest_violin.report._pages`: autoescape on, so every string read from runs, prompts, labels, sample
ids, paths and metadata, is escaped where the template writes it); thumbnails are embedded only when they are
``data:image/png|jpeg;base64`` URIs and only up to a byte budget.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from .._fs import atomic_write
from ..report.json_report import finite, fmt, fmt_pct, metric_names
from ..report._pages import BADGES, Markup, render_page
from ..report._svg import PALETTE, bar_chart
from ..report.text import is_image_data_uri
from ..results import Outcome

__all__ = ["DEFAULT_MAX_SAMPLES", "DEFAULT_RENDER_LIMIT", "DEFAULT_THUMBNAIL_BUDGET", "comparison_section", "render_html",
           "write_html"]

#: Bytes of thumbnail data URIs embedded at most (the report's budget); samples past it (passes and agreements
#: come last) show placeholders.
DEFAULT_THUMBNAIL_BUDGET = 35_000_000

#: Gallery rows at most (a full suite is 7,745 samples).
DEFAULT_MAX_SAMPLES = 20_000

#: Gallery rows (disagreements and failures first) whose missing pictures are made here: the expected image
#: rendered from the built-in suite the run names, and a ``dir:`` run's saved image read from its folder.
#: results.json carries no thumbnails (``--violin-report`` drops them), so without this the gallery of report
#: folders would be placeholders only. About 1.5 ms per expected image and a few ms per saved image.
DEFAULT_RENDER_LIMIT = 500


# --------------------------------------------------------------------------- tables


def _row_metrics(row) -> dict:
    return {**(row.metrics or {}), "mean": row.mean}


def _task_table(task: str, rows: list) -> dict:
    """One task's table: a block of rows per variation (the task's total last), the best value bold."""
    names = metric_names([{"metrics": r.metrics or {}} for r in rows])
    variations = [v for v in dict.fromkeys(r.variation for r in rows) if v is not None]
    groups = [*variations, None] if any(r.variation is None for r in rows) else variations
    out = []
    for variation in groups:
        members = [r for r in rows if r.variation == variation]
        best = {}
        for n in names:
            vals = [v for v in (finite(_row_metrics(r).get(n)) for r in members) if v is not None]
            if len(vals) > 1:
                best[n] = min(vals)
        for i, r in enumerate(members):
            vals = {n: finite(_row_metrics(r).get(n)) for n in names}
            out.append({
                "css": " ".join(c for c in ("pub" if r.published else "", "total" if variation is None else "",
                                            "gstart" if i == 0 else "") if c),
                "variation": ("all" if variation is None else variation) if i == 0 else "",
                "label": r.label, "published": r.published,
                "cells": [(fmt(v), v is not None and v == best.get(n)) for n, v in vals.items()],
                "pass_rate": fmt_pct(r.pass_rate) if r.pass_rate is not None else "-",
                "n": r.n if r.n is not None else "-"})
    return {"task": task, "names": names, "with_runs": any(not r.published for r in rows), "rows": out}


def _modes(modes) -> dict | None:
    """The failure-mode table (:mod:`.modes`), or why there is none; None without failing samples."""
    from .modes import NONE_RECORDED, table_cells

    if not modes:
        return None
    if not any(c.recorded for tm in modes for c in tm.runs):
        return {"header": None, "none": NONE_RECORDED.split(": ", 1)[1]}
    header, rows = table_cells(modes)
    return {"header": header, "rows": rows}


def _charts(comparison) -> Markup:
    charts = []
    run_rows = [r for r in comparison.rows if not r.published and r.variation is None]
    for task in dict.fromkeys(r.task for r in run_rows):
        rows = [r for r in run_rows if r.task == task]
        names = metric_names([{"metrics": r.metrics or {}} for r in rows])
        series = [(r.label, {k: finite(v) for k, v in _row_metrics(r).items()}) for r in rows]
        width = max(340, min(1200, 60 + len(names) * (24 + 12 * len(series))))
        charts.append(Markup(bar_chart(names, series, title=f"{task}: metric means per run (lower is better)",
                                       width=width, height=230 + 16 * ((len(series) + 3) // 4))))
    return Markup("").join(charts)


def comparison_section(comparison, *, heading: str = "Comparison with other runs") -> str:
    """The comparison's tables, pairwise statements and charts as an escaped HTML fragment.

    A ``<section id="violin-compare">`` under an ``<h2>`` ``heading``, used by :func:`render_html` and
    embedded in ``report.html`` for ``--violin-compare``. It holds no script, so it fits any page whose CSP
    allows inline styles and ``data:`` images.
    """
    from .paper import comparability_notes

    banners = [("warn", m) for m in comparison.mismatches or ()]
    banners += [("", m) for m in comparison.notes]
    # where the paper's rows and each run were measured
    banners += [("warn" if "did not use" in m else "", m) for m in comparability_notes(comparison)]
    labels = [r.label for r in comparison.runs]
    facts = [("runs", ", ".join(labels) or "-")]
    if comparison.all_samples:
        facts.append(("samples", "all samples of every run (--all-samples)"))
    else:
        facts.append(("samples compared", f"{int(comparison.shared)} (held by every run)"))
    dropped = {k: v for k, v in (comparison.dropped or {}).items() if v}
    reasons = comparison.dropped_reasons
    if dropped:
        facts.append(("dropped (another run lacks them)",
                      ", ".join(f"{k}: {int(v)}" + (f" ({reasons[k]})" if reasons.get(k) else "")
                                for k, v in dropped.items())))
    tables = [_task_table(task, [r for r in comparison.rows if r.task == task])
              for task in dict.fromkeys(r.task for r in comparison.rows)]
    return Markup(render_page("comparison.html.j2", heading=heading, banners=banners, run_facts=facts,
                              tables=tables, modes=_modes(comparison.modes),
                              pairs=comparison.pairs, charts=_charts(comparison)).rstrip("\n"))


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
    for name in dict.fromkeys(str((run.metadata or {}).get("suite") or "") for run in runs):
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


def _sample_ids(runs, all_samples: bool) -> list:
    if all_samples or not runs:
        return list(dict.fromkeys(sid for run in runs for sid in (run.records or {})))
    # held by every run: in the first run's order (one pass, no list of every id first)
    others = [run.records or {} for run in runs[1:]]
    return [sid for sid in (runs[0].records or {}) if all(sid in o for o in others)]


def _sample_state(sid, runs) -> tuple[bool, bool]:
    """(any run did not pass, runs disagree: one passed and another did not)."""
    failing = passed = False
    for run in runs:
        rec = run.records.get(sid)
        if rec is not None:
            if rec.get("outcome") == Outcome.PASSED:
                passed = True
            else:
                failing = True
    return failing, failing and passed


def _gallery_row(sid, runs, budget: int, sample=None, render: bool = False) -> tuple[dict, int, int]:
    """One gallery row, the bytes of pictures it embeds, and its placeholders for missing pictures."""
    held = [run.records.get(sid) for run in runs]
    first = next(r for r in held if r is not None)
    failing, disagree = _sample_state(sid, runs)
    used = without = 0
    expected = next((u for u in (_thumb(r, "expected") for r in held if r) if u), None)
    if expected is None and render and sample is not None:
        expected = _rendered_expected(sample)
    if expected and len(expected) <= budget:
        used += len(expected)
    else:
        expected, without = None, 1
    cells = []
    for run, rec in zip(runs, held):
        if rec is None:
            cells.append(None)
            continue
        uri = _thumb(rec, "generated") or (_saved_image(run, sid) if render else None)
        if uri and used + len(uri) <= budget:
            used += len(uri)
        else:
            uri, without = None, without + 1
        failed = set(rec.get("failed") or [])
        outcome = rec.get("outcome", "failed")
        cells.append(SimpleNamespace(
            uri=uri, alt=run.label, outcome=outcome, badge=BADGES.get(outcome, "fail"),
            # (after a line break, "name value", over its limit)
            metrics=[(i > 0, f"{k} {fmt(v)}", k in failed) for i, (k, v) in enumerate((rec.get("metrics") or {}).items())],
            error=str(rec["error"])[:500] if rec.get("error") else None))
    row = SimpleNamespace(id=sid, task=first.get("task", ""), variation=first.get("variation") or "",
                          disagree=disagree, failing=failing, prompt=first.get("prompt", ""),
                          expected=expected, cells=cells)
    return row, used, without


def _gallery(comparison, runs, budget: int, max_samples: int, render_limit: int) -> dict:
    ids = _sample_ids(runs, bool(comparison.all_samples))
    # failures first: disagreements, then samples a run fails, then passes (a stable partition in one pass:
    # linear in the samples, which may be 1,000,000)
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
    left = int(budget)
    without = 0
    rows = []
    samples = _suite_samples(runs) if render_limit > 0 else {}
    for i, sid in enumerate(ids[:max_samples]):
        row, used, missing = _gallery_row(sid, runs, left, samples.get(sid), i < render_limit)
        left -= used
        without += missing
        rows.append(row)
    return {"total": len(ids), "disagreeing": n_dis, "tasks": sorted(task_set),
            "variations": sorted(variation_set - {""}), "rows": rows, "left": left, "without": without,
            "max_samples": max_samples, "render_limit": int(render_limit), "budget": int(budget)}


def render_html(comparison, runs=None, *, thumbnail_budget: int = DEFAULT_THUMBNAIL_BUDGET,
                max_samples: int = DEFAULT_MAX_SAMPLES, render_limit: int = DEFAULT_RENDER_LIMIT) -> str:
    """The complete HTML document of the comparison page.

    ``runs`` (default ``comparison.runs``) fill the gallery: only samples every run holds unless
    ``comparison.all_samples``, at most ``max_samples`` rows. At most ``thumbnail_budget`` bytes of thumbnail
    data URIs are embedded (disagreements and failures get theirs first; the rest show placeholders). For the
    first ``render_limit`` rows, pictures the records lack are made here: the expected image from the built-in
    suite the run names, a ``dir:`` run's image from its folder (0: never).
    """
    runs = list(comparison.runs if runs is None else runs)
    title = " vs ".join(run.label for run in runs) or "comparison"
    return render_page("compare.html.j2", script_name="compare.js", page_class="compare", title=title[:200],
                       runs=runs, palette=PALETTE, section=comparison_section(comparison, heading="Tables"),
                       **_gallery(comparison, runs, int(thumbnail_budget), int(max_samples), int(render_limit)))


def write_html(path, comparison, runs=None, **kwargs) -> Path:
    """Write :func:`render_html` to ``path`` atomically (keyword arguments are passed on)."""
    return atomic_write(path, render_html(comparison, runs, **kwargs))
