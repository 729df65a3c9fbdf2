"""Unit tests of the report writers: results.json, summary.md, report.html, thumbnails, SVG."""

from __future__ import annotations

import base64
import csv
import io
import hashlib
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.gating import build_baseline, compare
from pytest_violin.imaging import as_rgb8
from pytest_violin.report.html import render_html, write_html
from pytest_violin.report.json_report import build_results, failures_first, write_results_json
from pytest_violin.report.markdown import md_escape, render_markdown, write_summary
from pytest_violin.report._svg import bar_chart
from pytest_violin.report.thumbnails import data_uri, diff_heatmap, make_thumbnails, thumbnail

EVIL = '<script>alert("x")</script>'


def record(i, task="color", variation="v1", value=0.1, outcome="passed", prompt=None, thumbs=None,
           error=None):
    metrics = {} if error else {"rgb_ed": value, "sd": value / 2, "mean": value * 0.75}
    return {
        "sample_id": f"{task}/{variation}/s{i:03d}", "suite": "violin", "task": task,
        "variation": variation, "prompt": prompt or f"a pure color image {i}", "metrics": metrics,
        "limits": {"rgb_ed": 0.2, "sd": 0.1, "mean": 0.15}, "failed": [] if outcome == "passed" else ["rgb_ed"],
        "outcome": outcome, "error": error, "seconds": 0.01, "cached": False, "seed": i,
        "repeats": [metrics] if metrics else [], "spread": {}, "worst": {}, "original_size": None,
        "extra": {"thumbnails": thumbs} if thumbs else {},
    }


@pytest.fixture(scope="module")
def thumbs():
    exp = np.zeros((64, 48, 3), np.uint8)
    exp[:] = (217, 180, 81)
    gen = exp.copy()
    gen[10:30] = (0, 0, 0)
    return make_thumbnails(exp, gen)


def runs(thumbs):
    recs = [record(i, value=0.05, thumbs=thumbs) for i in range(4)]
    recs += [record(10 + i, task="shape", variation="circle", value=0.4, outcome="failed", thumbs=thumbs)
             for i in range(3)]
    recs.append(record(20, task="mask", variation="inpaint", outcome="failed", error="HTTP 500: <b>oops</b>"))
    return recs


# --------------------------------------------------------------------------- thumbnails


def _decode(uri):
    head, payload = uri.split(",", 1)
    assert head in ("data:image/png;base64", "data:image/jpeg;base64")
    return as_rgb8(base64.b64decode(payload))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(8, 128))
def test_thumbnail_keeps_aspect_and_bounds(h, w, size):
    out = thumbnail(np.zeros((h, w, 3), np.uint8), size)
    assert max(out.shape[:2]) <= max(size, 1)
    assert max(out.shape[:2]) == min(size, max(h, w))
    if min(h, w) * size >= 4 * max(h, w):  # aspect ratio survives rounding when not tiny
        assert abs(out.shape[1] / out.shape[0] - w / h) <= 0.35 * w / h


def test_diff_heatmap_is_dark_when_equal_and_bright_where_different():
    exp = np.full((40, 40, 3), 120, np.uint8)
    same = diff_heatmap(exp, exp, 20)
    assert same.max() <= 5
    gen = exp.copy()
    gen[:, 20:] = 255 - gen[:, 20:]
    heat = diff_heatmap(gen, exp, 20).astype(int).sum(axis=2)
    assert heat[:, 12:].mean() > heat[:, :8].mean() + 100
    # a generated image of another size is resized to the expected size first
    big = np.kron(gen, np.ones((2, 2, 1), np.uint8))
    assert diff_heatmap(big, exp, 20).shape == heat.shape + (3,)


def test_data_uri_round_trips_and_picks_a_small_format():
    flat = np.full((96, 96, 3), 60, np.uint8)
    uri = data_uri(flat)
    assert uri.startswith("data:image/png;base64,") and len(uri) < 0.03 * flat.size  # 27 kB raw
    assert np.array_equal(_decode(uri), flat)
    noisy = np.random.default_rng(0).integers(0, 255, (96, 96, 3), dtype=np.uint8)
    uri = data_uri(noisy)
    assert uri.startswith("data:image/jpeg;base64,") and len(uri) < 0.5 * noisy.size
    assert np.abs(_decode(uri).astype(int) - noisy).mean() < 60


def test_make_thumbnails_subsets():
    img = np.zeros((200, 100, 3), np.uint8)
    assert set(make_thumbnails(img, None)) == {"expected"}
    passing = make_thumbnails(None, img)  # what the plugin stores for a passing sample
    assert set(passing) == {"generated"} and _decode(passing["generated"]).shape == (96, 48, 3)


# --------------------------------------------------------------------------- SVG


def test_bar_chart_is_valid_svg_with_proportional_bars():
    svg = bar_chart(["a", "b"], [("v<1>", {"a": 0.2, "b": 0.4}), ("v2", {"a": float("nan")})], title=EVIL)
    root = ET.fromstring(svg)  # well-formed XML, labels escaped
    assert "<script>" not in svg
    rects = [r for r in root.iter() if r.tag.endswith("rect") and r.find("./title") is not None]
    assert len(rects) == 2  # NaN draws no bar
    heights = {r.find("./title").text.split(" = ")[0]: float(r.get("height")) for r in rects}
    assert heights["v<1> b"] == pytest.approx(2 * heights["v<1> a"], rel=0.02)


# --------------------------------------------------------------------------- results.json


def test_results_json_schema_and_strictness(tmp_path, thumbs):
    recs = runs(thumbs)
    recs[0]["metrics"]["sd"] = float("nan")
    path = write_results_json(tmp_path / "results.json", recs, metadata={"suite": "violin"})
    doc = json.loads(path.read_text())  # strict JSON: NaN became null
    assert doc["format"] == "pytest-violin-results" and doc["schema_version"] == 1
    assert [s["sample_id"] for s in doc["samples"]] == [r["sample_id"] for r in recs]
    assert doc["samples"][0]["metrics"]["sd"] is None
    assert all("thumbnails" not in s["extra"] for s in doc["samples"])
    # the mask sample failed without an image: the model's failure, not an error
    assert doc["metadata"]["samples"] == len(recs) and doc["metadata"]["errors"] == 0
    assert doc["metadata"]["failed"] == 4
    tasks = {r["task"]: r for r in doc["aggregates"]["tasks"]}
    assert tasks["shape"]["pass_rate"] == 0 and tasks["color"]["pass_rate"] == 1
    assert doc["comparison"] is None
    assert "NaN" not in path.read_text()


# --------------------------------------------------------------------------- markdown


def test_results_json_counts_as_errors_what_every_report_counts_as_errors(tmp_path):
    from pytest_violin.report.html import render_html
    from pytest_violin.results import Outcome, aggregate_records

    judged = [record(1), record(2, outcome=Outcome.REFUSED, error="refused: the provider's safety filter"),
              record(3, outcome=Outcome.FAILED, error="no image in the answer")]
    broken = record(4, outcome=Outcome.ERROR, error="connection refused")

    def errors(records):
        doc = build_results(records)
        rows = aggregate_records(records)["tasks"]
        # results.json, its aggregates and summary.md say the same number
        assert doc["metadata"]["errors"] == sum(row["errors"] for row in rows)
        summary = render_markdown(records)
        html = render_html(records)
        said = doc["metadata"]["errors"]
        assert (f"{said} error" in summary) == bool(said) and f"{said} errors" in html
        return said

    assert errors(judged) == 0
    assert errors([*judged, broken]) == 1


def test_markdown_tables(tmp_path, monkeypatch, thumbs):
    recs = runs(thumbs)
    recs[0]["variation"] = "v|1"
    text = render_markdown(recs, metadata={"suite": "violin", "adapter": "py`thon"})
    assert "### color" in text and "### shape" in text and "| **all** |" in text
    for line in text.splitlines():
        if line.startswith("|") and "v\\|1" in line:
            assert len(re.split(r"(?<!\\)\|", line)) == len(re.split(r"(?<!\\)\|", text.split("### color")[1]
                                                                     .splitlines()[2]))
    assert "py'thon" in text
    summary = tmp_path / "step_summary.md"
    summary.write_text("previous\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    write_summary(tmp_path / "summary.md", recs)
    assert summary.read_text().startswith("previous\n## pytest-violin results")
    assert (tmp_path / "summary.md").read_text() in summary.read_text()


def test_md_escape_neutralises_markup():
    assert md_escape("a|b <i>\n*x*") == "a\\|b &lt;i&gt; \\*x\\*"


def gated_runs(thumbs):
    """:func:`runs` and 60 more colour samples: a group large enough for the gate's tests (30)."""
    return runs(thumbs) + [record(100 + i, value=0.05) for i in range(60)]


def test_markdown_gate_section(thumbs):
    recs = gated_runs(thumbs)
    worse = [dict(r, metrics={k: v + 0.3 for k, v in r["metrics"].items()}, outcome="failed")
             if r["task"] == "color" else r for r in recs]
    args = dict(suite="violin", profile="violin", seed=0, adapter="oracle")
    c = compare(build_baseline(recs, **args), build_baseline(worse, **args), baseline_path="base.json")
    text = render_markdown(worse, comparison=c)
    assert "**FAILED: the model got worse" in text and "| color |" in text and "❌ regressed" in text
    assert "| color | mean metric |" in text and "| color/v1 | mean metric |" in text
    # what each group ruled out, the groups too small to test named with what they need
    assert "What each group ruled out:" in text and "| shape | not shown | 3 |" in text
    assert "too few to test: 3, a test needs 30" in text


# --------------------------------------------------------------------------- HTML


def test_html_escapes_everything_and_loads_nothing(thumbs):
    recs = runs(thumbs)
    recs[0]["prompt"] = EVIL
    recs[1]["variation"] = '"><img src=x onerror=alert(1)>'
    html = render_html(recs, metadata={"suite": EVIL, "adapter": "<b>model</b>"})
    assert "<script>alert" not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "<b>oops</b>" not in html and "<b>model</b>" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "http://" not in html and "https://" not in html
    # exactly one script, pinned by the CSP hash
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html


def test_html_lists_failures_first_with_filters(thumbs):
    recs = runs(thumbs)
    html = render_html(recs)
    order = re.findall(r'<tr class="s" data-task="(\w+)" data-outcome="(\w+)"', html)
    assert order[0] == ("mask", "failed")  # the error comes first
    assert [o for _, o in order] == sorted((o for _, o in order), key=lambda o: o == "passed")
    assert 'id="f-fail"' in html and '<option value="shape">shape</option>' in html
    assert html.count('alt="difference"') == 7
    assert [r["sample_id"] for r in failures_first(recs)][0] == recs[-1]["sample_id"]


def test_html_thumbnail_budget_keeps_failures(thumbs):
    recs = runs(thumbs)
    one = sum(len(v) for v in thumbs.values())
    html = render_html(recs, thumbnail_budget=3 * one)
    rows = re.findall(r'<tr class="s".*?</tr>', html, flags=re.S)
    with_pics = [("data-outcome=\"failed\"" in r) for r in rows if "<img" in r]
    assert with_pics == [True, True, True]
    assert "shown without thumbnails" in html


def test_html_drops_foreign_uris(thumbs):
    recs = [record(0, thumbs={"expected": "javascript:alert(1)", "generated": thumbs["generated"]})]
    html = render_html(recs)
    assert "javascript:" not in html and thumbs["generated"] in html


def test_html_highlights_regressions(tmp_path, thumbs):
    recs = gated_runs(thumbs)
    worse = [dict(r, metrics={k: v + 0.3 for k, v in r["metrics"].items()}, outcome="failed")
             if r["task"] == "color" else r for r in recs]
    args = dict(suite="violin", profile="violin", seed=0, adapter="oracle")
    c = compare(build_baseline(recs, **args), build_baseline(worse, **args), baseline_path=EVIL)
    path = write_html(tmp_path / "report.html", worse, comparison=c)
    html = path.read_text()
    assert "FAILED: the model got worse" in html and html.count('<tr class="reg">') >= 2
    assert "<th>newly failing</th>" in html and f"<code>{worse[0]['sample_id']}</code>" in html
    assert "What each group ruled out" in html and "<td>REGRESSED</td>" in html
    assert '<tr class=" reg">' not in html and "<script>alert" not in html
    assert build_results(worse, comparison=c)["comparison"]["regressions"] == ["color", "color/v1"]


# --------------------------------------------------------------------------- one rule, scales, inputs


def test_the_heat_map_scale_matches_the_heat_map_colours():
    from pytest_violin.report.thumbnails import heatmap_position, heatmap_scale

    stops = heatmap_scale(16)
    assert stops[0][0] == 0.0 and stops[-1][0] == 1.0
    # the colour a difference of d levels gets in diff_heatmap is the bar's colour at sqrt(d/255)
    for d in (0, 16, 64, 255):
        exp = np.zeros((8, 8, 3), np.uint8)
        heat = diff_heatmap(np.full((8, 8, 3), d, np.uint8), exp, 8)[0, 0]
        pos = heatmap_position(d)
        nearest = min(stops, key=lambda s: abs(s[0] - pos))
        assert abs(nearest[0] - pos) <= 1 / 30 or d in (0, 255)
        bar = np.array([int(nearest[1][i:i + 2], 16) for i in (1, 3, 5)])
        assert np.abs(bar - heat.astype(int)).max() <= 40, (d, bar, heat)
    assert heatmap_position(0) == 0.0 and heatmap_position(255) == 1.0 and heatmap_position(64) == pytest.approx(0.501, abs=1e-3)


def test_report_html_has_a_scale_for_its_difference_maps(thumbs):
    html = render_html(runs(thumbs))
    (scale,) = re.findall(r'<div class="scalebox" id="diff-scale">(.*?)</div>', html, flags=re.S)
    svg = ET.fromstring(scale[:scale.index("</svg>") + 6])
    ns = "{http://www.w3.org/2000/svg}"
    stops = svg.findall(f".//{ns}stop") or svg.findall(".//stop")
    assert len(stops) >= 8
    labels = [t.text for t in svg.iter() if t.tag.endswith("text")]
    assert labels[1:] == ["0", "4", "16", "64", "128", "255"]  # after the title: the numeric range
    # no difference map on the page: no scale either
    plain = render_html([record(i) for i in range(3)])
    assert 'id="diff-scale"' not in plain


def test_mask_samples_show_source_and_mask_beside_expected_and_generated():
    src = np.random.default_rng(0).integers(0, 255, (40, 40, 3), dtype=np.uint8)
    mask = np.zeros((40, 40, 3), np.uint8)
    mask[:, 20:] = 255
    exp = src.copy()
    exp[:, :20] = 0
    thumbs = make_thumbnails(exp, src, inputs=(src, mask))
    assert list(thumbs) == ["source", "mask", "expected", "generated", "diff"]
    html = render_html([record(1, task="mask", variation="inpaint", outcome="failed", thumbs=thumbs)])
    row = re.search(r'<td class="th">(.*?)</td>', html, flags=re.S).group(1)
    assert re.findall(r'alt="([^"]+)"', row) == ["source", "mask", "expected", "generated", "difference"]
    assert (_decode(thumbs["mask"]).max(axis=2) > 128).mean() == pytest.approx(0.5, abs=0.05)


def test_a_task_without_any_image_gets_a_line_not_an_empty_chart(thumbs):
    recs = [record(i, value=0.05, thumbs=thumbs) for i in range(3)]
    recs += [record(10 + i, task="mask", variation="inpaint", outcome="failed", error="HTTP 500")
             for i in range(4)]
    html = render_html(recs)
    charts = html[html.index('id="charts"'):html.index('id="samples"')]
    assert charts.count('<svg class="chart"') == 1 and "color: metric means" in charts
    assert "mask: no sample produced an image (4 without an image), so there is no chart." in charts


def _no_image_run():
    """1 passing sample of 6: the others gave no image (never 'mean 0.000')."""
    recs = [record(0, value=0.0)]
    recs += [record(i, outcome="failed", error="HTTP 500") for i in range(1, 5)]
    recs.append(record(5, outcome="refused", error="moderation"))
    return recs


def test_every_report_counts_a_missing_image_as_the_gate_does():
    from pytest_violin.gating import aggregate_records
    from pytest_violin.report.terminal import NO_IMAGE_NOTE, format_summary
    from pytest_violin.results import ResultsStore, SampleResult

    recs = _no_image_run()
    expected_mean = 5 / 6  # five samples count 1.0, one counts 0.0
    agg = aggregate_records(recs)
    (row,) = agg["variations"]
    assert row["metrics"]["mean"] == pytest.approx(expected_mean) and row["no_image"] == 4
    assert row["metrics"]["rgb_ed"] == pytest.approx(expected_mean)
    # results.json aggregates, summary.md, report.html and the terminal say the same number
    doc = build_results(recs, metadata={"suite": "violin"})
    assert doc["aggregates"]["variations"][0]["metrics"]["mean"] == pytest.approx(expected_mean)
    md = render_markdown(recs)
    assert "| v1 | 6 | 16.7% | 4 | 1 | 0.833 | 0.833 | 0.833 |" in md
    assert NO_IMAGE_NOTE[1:] in md
    html = render_html(recs)
    assert "<th>no image</th><th>refused</th>" in html and html.count('<td class="n">0.833</td>') >= 3
    store = ResultsStore()
    for r in recs:
        store.add(SampleResult.from_dict({k: v for k, v in r.items() if k != "extra"}))
    text = "\n".join(format_summary(store))
    assert "0.833" in text and "0.000" not in text.split("all")[0].split("v1", 1)[1]
    assert "6 (4 no image) (1 refused)" in text and NO_IMAGE_NOTE in text
    # the gate's value of the same samples is the tables' mean
    base = build_baseline([record(i, value=0.0) for i in range(6)], suite="violin", profile="violin",
                          seed=0, adapter="a")
    now = build_baseline(recs, suite="violin", profile="violin", seed=0, adapter="b")
    (group,) = [g for g in compare(base, now).groups if g.variation == "v1"]
    assert group.mean.new == pytest.approx(expected_mean)


def test_a_k_selection_is_described_as_a_selection_not_as_a_changed_suite():
    from pytest_violin.report.terminal import comparison_lines

    full = [dict(record(i), extra={"definition": f"d{i}"}) for i in range(8)]
    base = build_baseline(full, suite="violin", profile="violin", seed=0, adapter="a")
    now = build_baseline(full[:3], suite="violin", profile="violin", seed=0, adapter="a")
    cmp = compare(base, now)
    assert cmp.fingerprint_changed and cmp.selection
    assert cmp.to_dict()["selection"] == {"selected": 3, "of": 8}
    text = "\n".join(t for t, _ in comparison_lines(cmp))
    assert "3 of 8 baseline samples selected" in text
    assert "fingerprint changed" not in text and "missing from this run" not in text
    md, html = render_markdown(now["samples"], comparison=cmp), render_html(now["samples"], comparison=cmp)
    for page in (md, html):
        assert "3 of 8 baseline samples selected" in page
        assert "definition changed" not in page and "Missing from this run" not in page
    # a redefined sample is a changed suite, not a selection
    redefined = [dict(r, extra={"definition": "new"}) if i == 0 else r for i, r in enumerate(full[:3])]
    cmp2 = compare(base, build_baseline(redefined, suite="violin", profile="violin", seed=0, adapter="a"))
    assert cmp2.fingerprint_changed and not cmp2.selection
    assert any("fingerprint changed" in t for t, _ in comparison_lines(cmp2))


def _legend_boxes(svg_text):
    from pytest_violin.report._svg import text_width

    boxes = []
    for x, y, text in re.findall(r'<g class="lg">.*?<text x="([\d.]+)" y="([\d.]+)" class="ax">([^<]*)</text>',
                                 svg_text):
        boxes.append((float(x), float(y), float(x) + text_width(text), text))
    return boxes


def test_chart_legends_wrap_and_never_overlap_long_labels():
    names = ["openai:gpt-image-1 (api.openai.com/v1)", "oracle", "python:acme.models.release_candidate:generate",
             "W" * 300, "gemini:gemini-2.5-flash-image-preview", "bfl:flux-pro-1.1-ultra"]
    series = [(n, {"a": 0.1 * (i + 1), "b": 0.2}) for i, n in enumerate(names)]
    svg_text = bar_chart(["a", "b"], series, title="t", width=420, height=230)
    width = int(re.search(r'width="(\d+)"', svg_text).group(1))
    height = int(re.search(r'height="(\d+)"', svg_text).group(1))
    boxes = _legend_boxes(svg_text)
    assert len(boxes) == len(names)
    for x0, y, x1, _ in boxes:
        assert x1 <= width and y <= height - 4
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[1] != b[1] or a[2] + 4 <= b[0] or b[2] + 4 <= a[0], (a, b)
    assert "\u2026" in boxes[3][3]  # cut to the row, the full name in its tooltip
    assert f"<title>{'W' * 300}</title>" in svg_text


CHROMIUM = next((p for p in map(__import__("shutil").which, ("chromium", "chromium-browser")) if p), None)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_legend_labels_do_not_overlap_as_a_browser_draws_them(tmp_path):
    """The legend's width estimate holds in a real browser: every label box ends before the next
    one on its row starts, and inside the chart (measured with getBBox in headless Chromium)."""
    import subprocess

    names = ["openai:gpt-image-1 (api.openai.com/v1)", "WWWWWWWWWWWWWWWWWWWWWWWW", "oracle",
             "python:acme.models.release_candidate_2026_12:generate", "MMMM" * 40, "gemini:gemini-2.5"]
    svg_text = bar_chart(["a", "b"], [(n, {"a": 0.1, "b": 0.2}) for n in names], title="t",
                         width=520, height=230)
    page = tmp_path / "legend.html"
    page.write_text(
        "<!DOCTYPE html><html><head><style>body{font:14px system-ui,sans-serif}"
        "svg .ax{font-size:10px}</style></head><body>" + svg_text + """
<pre id="out"></pre><script>
var svg=document.querySelector('svg'),w=svg.getAttribute('width')*1,boxes=[],bad=[];
document.querySelectorAll('g.lg text').forEach(function(t){var b=t.getBBox();boxes.push([b.x,b.y,b.x+b.width,t.textContent]);});
boxes.forEach(function(a,i){if(a[2]>w)bad.push('outside:'+a[3]);
 boxes.slice(i+1).forEach(function(b){if(a[1]===b[1]&&a[2]>b[0]-14&&b[2]>a[0]-14)bad.push(a[3]+' / '+b[3]);});});
document.getElementById('out').textContent='RESULT '+boxes.length+' '+JSON.stringify(bad);
</script></body></html>""", encoding="utf-8")
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r"RESULT (\d+) (\[.*?\])", proc.stdout)
    assert found, proc.stdout[-2000:]
    assert int(found.group(1)) == len(names) and json.loads(found.group(2).replace("&quot;", '"')) == []


# --------------------------------------------------------------------------- one table, one stylesheet


def test_one_table_renders_as_terminal_markdown_latex_and_csv():
    from pytest_violin.report._tables import Raw, Table, csv_text, latex_lines, markdown_lines, text_lines

    table = Table.make(["name", "value", "n"], [["a|b", "0.5", 3], [Raw("**all**"), "-0.25", 10]])
    assert text_lines(table, rule=True, indent="  ") == [
        "  name     value   n", "  -------  -----  --", "  a|b        0.5   3", "  **all**  -0.25  10"]
    # every text cell through the format's escape, but a Raw cell
    assert markdown_lines(table, esc=md_escape) == [
        "| name | value | n |", "|---|---:|---:|", "| a\\|b | 0.5 | 3 |", "| **all** | -0.25 | 10 |"]
    tex = latex_lines(table, esc=lambda s: s.replace("|", r"\textbar{}"), caption="C.", footer=["% f"],
                      midrule_before={1})
    assert tex[:8] == [r"\begin{table}[t]", r"\centering", r"\small", r"\caption{C.}", r"\begin{tabular}{lrr}",
                       r"\toprule", r"name & value & n \\", r"\midrule"]
    assert tex[8:] == [r"a\textbar{}b & 0.5 & 3 \\", r"\midrule", r"**all** & -0.25 & 10 \\", r"\bottomrule",
                       r"\end{tabular}", "% f", r"\end{table}"]
    # numbers that are not text are written as they are: a negative float is no formula
    rows = list(csv.reader(io.StringIO(csv_text(Table.make(["label", "mean"], [["=1+1", -0.25]]),
                                                esc=lambda s: "'" + s if s[:1] == "=" else s))))
    assert rows == [["label", "mean"], ["'=1+1", "-0.25"]]


def test_both_pages_share_one_stylesheet_and_pin_their_own_script(thumbs):
    from pytest_violin.compare.html import render_html as render_compare
    from pytest_violin.compare.model import ComparedRow, Comparison, Run

    run = Run("model-a", "a/results.json", "results", {"suite": "violin"},
              {r["sample_id"]: r for r in runs(thumbs)})
    comparison = Comparison(runs=[run], rows=[ComparedRow("model-a", "color", None, {"rgb_ed": 0.1}, 0.1, 1.0, 4)],
                            pairs=[], dropped={}, shared=8, mismatches=[])
    pages = [render_html(runs(thumbs), runs_comparison=comparison), render_compare(comparison)]
    styles = [re.findall(r"<style>(.*?)</style>", page, flags=re.S) for page in pages]
    assert len(styles[0]) == len(styles[1]) == 1 and styles[0] == styles[1] and "table.gallery" in styles[0][0]
    scripts = [re.findall(r"<script>(.*?)</script>", page, flags=re.S) for page in pages]
    assert len(scripts[0]) == len(scripts[1]) == 1 and scripts[0] != scripts[1]
    for page, (script,) in zip(pages, scripts):
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert re.findall(r"script-src '([^']+)'", page) == [f"sha256-{digest}"]


def test_every_template_is_package_data():
    """A non-editable install has what the pages are rendered from (pyproject's package-data globs)."""
    import fnmatch
    from pathlib import Path

    import pytest_violin

    tomllib = pytest.importorskip("tomllib")
    root = Path(pytest_violin.__file__).parent
    pyproject = root.parent / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("an installed copy: no pyproject.toml beside it")
    globs = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]["pytest_violin"]
    files = [p.relative_to(root).as_posix() for p in (root / "report" / "templates").rglob("*") if p.is_file()]
    assert {"report/templates/base.html.j2", "report/templates/violin.css"} <= set(files)
    assert [f for f in files if not any(fnmatch.fnmatchcase(f, g) for g in globs)] == []
