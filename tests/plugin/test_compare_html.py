"""The comparison page (pytest_violin.compare.html) and its section in report.html."""

from __future__ import annotations

import base64
import hashlib
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pytest_violin.compare.html import comparison_section, render_html, write_html
from pytest_violin.compare.model import ComparedRow, Comparison, PairDelta, PublishedRow, Run
from pytest_violin.report.html import render_html as render_report
from pytest_violin.report.thumbnails import make_thumbnails

EVIL = '<script>alert("x")</script>'


@pytest.fixture(scope="module")
def thumbs():
    exp = np.zeros((64, 48, 3), np.uint8)
    exp[:] = (217, 180, 81)
    gen = exp.copy()
    gen[10:30] = (0, 0, 0)
    return make_thumbnails(exp, gen)


def rec(sid, task, variation, outcome, value, thumbs=None, prompt=None):
    return {"sample_id": sid, "task": task, "variation": variation, "outcome": outcome,
            "prompt": prompt or f"prompt of {sid}", "metrics": {"iou": value, "mean": value},
            "failed": [] if outcome == "passed" else ["iou"], "error": None,
            "extra": {"thumbnails": thumbs} if thumbs else {}}


def make_runs(thumbs, *, hostile=False):
    ids = [("color/v1/s0", "color", "v1"), ("color/v1/s1", "color", "v1"),
           ("shape/circle/s0", "shape", "circle"), ("shape/square/s0", "shape", "square")]
    a = Run("model-a", "a/results.json", "results", {"suite": "violin", "adapter": "a"},
            {s: rec(s, t, v, "passed", 0.1, thumbs) for s, t, v in ids})
    b_out = {"color/v1/s0": "passed", "color/v1/s1": "failed", "shape/circle/s0": "passed",
             "shape/square/s0": "passed"}
    # run b has no thumbnails for the shapes
    b = Run(EVIL if hostile else "model-b", "b/results.json", "results", {"suite": "violin"},
            {s: rec(s, t, v, b_out[s], 0.3, thumbs if t == "color" else None,
                    prompt=EVIL if hostile and s == "color/v1/s1" else None) for s, t, v in ids})
    return [a, b]


def make_comparison(runs):
    rows = []
    for run in runs:
        for task, var in (("color", "v1"), ("color", None), ("shape", "circle"), ("shape", "square"),
                          ("shape", None)):
            v = 0.1 if run.label == "model-a" else 0.3
            rows.append(ComparedRow(run.label, task, var, {"iou": v}, v, 0.75, 2))
    pub = PublishedRow("Paper-Model", "Table 3", "shape", None, {"iou": 0.05, "mean": 0.05},
                       "violin-paper.txt:180")
    rows.append(ComparedRow(pub.model, pub.task, pub.variation, {"iou": 0.05}, 0.05, None, None,
                            published=True))
    pairs = [PairDelta(runs[0].label, runs[1].label, "color", 2, 0.2, 0.1, 0.3),
             PairDelta(runs[0].label, runs[1].label, "shape", 2, 0.2, -0.1, 0.5)]
    return Comparison(runs=runs, rows=rows, pairs=pairs, dropped={runs[1].label: 3}, shared=4,
                      mismatches=[f"profile differs: {EVIL}"])


def test_page_structure_tables_charts_gallery(thumbs, tmp_path):
    runs = make_runs(thumbs)
    path = write_html(tmp_path / "compare.html", make_comparison(runs), runs)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    # paper layout: one table per task, task total row, published row marked, best value bold
    assert html.count('<table class="cmp">') == 2
    assert html.count('<span class="badge paper">paper</span>') == 1
    assert "<b>0.050</b>" in html and "<b>0.100</b>" in html
    # B minus A = +0.2 with an interval above 0: A (lower is better) beats B on color only
    assert html.count("model-a beats model-b") == 1 and "model-b beats model-a" not in html
    assert "not significant" in html and "model-b: 3" in html
    # one chart per task, one bar per run and metric, each a well-formed SVG
    svgs = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    assert len(svgs) == 2
    for svg in svgs:
        root = ET.fromstring(svg)
        bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.find(
            "{http://www.w3.org/2000/svg}title") is not None] or [r for r in root.iter("rect")
                                                                 if r.find("title") is not None]
        assert len(bars) == 2 * 2  # (iou, mean) x 2 runs
    # gallery: one row per sample, disagreement first, expected + one cell per run
    rows = re.findall(r'<tr class="s"[^>]*>.*?</tr>', html, flags=re.S)
    assert len(rows) == 4
    assert 'data-disagree="1"' in rows[0] and "color/v1/s1" in rows[0]
    assert all('data-disagree="0"' in r for r in rows[1:])
    assert all(r.count('<td class="img">') == 3 for r in rows)
    # run b has no shape thumbnails: placeholders in those rows, pictures elsewhere
    shape_rows = [r for r in rows if 'data-task="shape"' in r]
    assert all(r.count("<img") == 2 and 'class="ph">no image<' in r for r in shape_rows)
    assert all(r.count("<img") == 3 for r in rows if 'data-task="color"' in r)


def test_filters_present(thumbs):
    runs = make_runs(thumbs)
    html = render_html(make_comparison(runs), runs)
    for fid in ("f-task", "f-var", "f-dis", "f-fail"):
        assert f'id="{fid}"' in html
    assert '<option value="shape">shape</option>' in html
    assert '<option value="circle">circle</option>' in html and '<option value="v1">v1</option>' in html
    assert re.search(r'data-task="shape" data-variation="square"', html)


def test_hostile_label_prompt_and_mismatch_are_escaped(thumbs):
    runs = make_runs(thumbs, hostile=True)
    runs[0].records["color/v1/s0"]["extra"] = {"thumbnails": {"expected": "javascript:alert(1)",
                                                              "generated": 'data:image/png;base64,"><i>x'}}
    runs[0].metadata["adapter"] = "<b>model</b>"
    html = render_html(make_comparison(runs), runs)
    assert "<script>alert" not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<b>model</b>" not in html and "javascript:" not in html and '"><i>x' not in html
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html and "default-src 'none'" in html


def test_size_is_bounded_by_thumbnail_budget_and_row_cap(thumbs):
    runs = make_runs(thumbs)
    comparison = make_comparison(runs)
    full = render_html(comparison, runs)
    one = len(thumbs["expected"]) + len(thumbs["generated"])
    small = render_html(comparison, runs, thumbnail_budget=one + len(thumbs["generated"]))
    rows = re.findall(r'<tr class="s"[^>]*>.*?</tr>', small, flags=re.S)
    # the disagreement (first row) keeps its three pictures, the others fall back to placeholders
    assert rows[0].count("<img") == 3 and all("<img" not in r for r in rows[1:])
    assert "shown as placeholders" in small and len(small) < len(full)
    capped = render_html(comparison, runs, max_samples=1)
    assert len(re.findall(r'<tr class="s"', capped)) == 1 and "3 more sample(s) not shown" in capped


def test_only_shared_samples_unless_all_samples(thumbs):
    runs = make_runs(thumbs)
    runs[1].records.pop("shape/square/s0")
    comparison = make_comparison(runs)
    assert "shape/square/s0" not in render_html(comparison, runs)
    comparison.all_samples = True
    html = render_html(comparison, runs)
    assert "shape/square/s0" in html and 'class="ph">not in run<' in html


def test_section_in_report_html(thumbs):
    runs = make_runs(thumbs)
    records = list(runs[0].records.values())
    plain = render_report(records)
    assert 'id="violin-compare"' not in plain
    html = render_report(records, runs_comparison=make_comparison(runs))
    section = comparison_section(make_comparison(runs))
    assert section in html and "<script" not in section
    assert html.count("<script>") == 1 and "&lt;script&gt;" in section


def test_end_to_end_from_results_json_through_load_run_and_build(thumbs, tmp_path):
    from pytest_violin.compare.paper import published_rows
    from pytest_violin.compare.runs import load_run
    from pytest_violin.compare.table import build
    from pytest_violin.report.json_report import write_results_json

    def color(i, value, outcome):
        m = {"rgb_ed": value, "lab_00": value, "sd": value, "ced": value, "hf": value, "mean": value}
        return {"sample_id": f"color/v1/s{i}", "suite": "violin", "task": "color", "variation": "v1",
                "prompt": f"{EVIL} {i}", "metrics": m, "failed": [] if outcome == "passed" else ["sd"],
                "outcome": outcome, "error": None, "extra": {"thumbnails": thumbs}}

    meta = {"suite": "violin", "profile": "violin", "package_version": "1", "fingerprint": "f"}
    write_results_json(tmp_path / "a" / "results.json", [color(i, 0.05, "passed") for i in range(6)],
                       metadata={**meta, "adapter": "model-a"})
    write_results_json(tmp_path / "b" / "results.json",
                       [color(i, 0.2 + 0.01 * i, "failed" if i % 2 else "passed") for i in range(5)],
                       metadata={**meta, "adapter": EVIL})
    runs = [load_run(str(tmp_path / "a")), load_run(str(tmp_path / "b" / "results.json"))]
    comparison = build(runs, paper=published_rows(), resamples=200)
    html = write_html(tmp_path / "compare.html", comparison, runs).read_text(encoding="utf-8")
    assert "<script>alert" not in html and "model-a" in html
    assert '<span class="badge paper">paper</span>' in html  # Table 1 rows beside the runs
    assert "model-a beats" in html  # a is better on every sample: significant
    rows = re.findall(r'<tr class="s"[^>]*>.*?</tr>', html, flags=re.S)
    assert len(rows) == 5  # the sample b lacks is left out
    assert [('data-disagree="1"' in r) for r in rows] == [True, True, False, False, False]
    # results.json drops the thumbnails: the gallery shows placeholders, not broken images
    assert "<img" not in html and html.count('class="ph">no image<') == 5 * 3


def test_missing_pictures_are_made_for_the_first_rows(tmp_path):
    """results.json keeps no thumbnails: the expected image comes from the built-in suite the run
    names, a dir: run's image from its folder (never through a link out of it)."""
    import cv2

    from pytest_violin.models.directory import output_path
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", limit=4)
    folder = tmp_path / "saved"
    for s in samples[:2]:
        path = output_path(folder, s.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(path), s.expected()[:, :, ::-1])
    outside = tmp_path / "outside.png"
    cv2.imwrite(str(outside), samples[2].expected()[:, :, ::-1])
    link = output_path(folder, samples[2].id)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)

    def recs(outcome):
        return {s.id: {"sample_id": s.id, "task": s.task, "variation": s.variation, "outcome": outcome,
                       "prompt": s.prompt, "metrics": {"mean": 0.1}, "failed": []} for s in samples}

    runs = [Run("report", "r/results.json", "results", {"suite": "violin"}, recs("passed")),
            Run("saved", f"dir:{folder}", "dir", {"suite": "violin"}, recs("failed"))]
    comparison = Comparison(runs=runs, rows=[], shared=4)
    html = render_html(comparison, runs)
    rows = re.findall(r'<tr class="s"[^>]*>.*?</tr>', html, flags=re.S)
    assert [r.count('alt="expected"') for r in rows] == [1, 1, 1, 1]
    assert [r.count('alt="saved"') for r in rows] == [1, 1, 0, 0]  # no picture through the link
    assert render_html(comparison, runs, render_limit=0).count("<img") == 0
    assert render_html(comparison, runs, render_limit=1).count("<img") == 2
    # a suite named by the run that is not a built-in one is never loaded
    for run in runs:
        run.metadata["suite"] = str(tmp_path)
    assert render_html(comparison, runs).count('alt="expected"') == 0


CHROMIUM = next((p for p in map(__import__("shutil").which, ("chromium", "chromium-browser")) if p), None)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_page_runs_in_headless_chromium_without_console_errors(thumbs, tmp_path):
    import subprocess

    runs = make_runs(thumbs, hostile=True)
    page = write_html(tmp_path / "compare.html", make_comparison(runs), runs)
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the pinned script ran (it fills the counter), and nothing was blocked or thrown
    assert "4 of 4 samples shown" in proc.stdout
    assert ":CONSOLE" not in proc.stderr, proc.stderr[-2000:]


def test_report_folders_bring_their_thumbnails_to_the_gallery(pytester):
    # results.json leaves thumbnails out; --violin-report writes them beside it
    # (thumbnails.json), and load_run gives them back to the records
    from pytest_violin.compare.runs import load_run

    pytester.makepyfile(noisy_model=(
        "import numpy as np\n"
        "def generate(request):\n"
        "    img = request.sample.expected().astype(np.int16)\n"
        "    return np.clip(img + 40, 0, 255).astype(np.uint8)\n"))
    pytester.runpytest("--violin-model=python:noisy_model:generate", "--violin-tasks=color",
                       "--violin-limit=4", "--violin-report=rep", "-p", "no:cacheprovider")
    assert (pytester.path / "rep" / "thumbnails.json").is_file()
    run = load_run(str(pytester.path / "rep"))
    thumbs = [r["extra"]["thumbnails"] for r in run.records.values() if (r.get("extra") or {}).get("thumbnails")]
    assert len(thumbs) == 4 and all(t["generated"].startswith("data:image/png;base64,") for t in thumbs)
