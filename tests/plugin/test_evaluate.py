"""evaluate(): the plugin's code path from Python, its run object, save/compare/trend, Ctrl-C."""

from __future__ import annotations

import json
import subprocess
import textwrap
import threading

import numpy as np
import pytest

from pytest_violin.errors import InvalidArgumentError, ModelSpecError
from pytest_violin.evaluation import EvaluationRun, evaluate, trend
from pytest_violin.execution.usage import CallLimitReached
from pytest_violin.results import Outcome

WRONG_COLORS = textwrap.dedent("""
    import numpy as np

    def generate(request):
        # the expected picture with its colour channels reversed: right layout, wrong colours
        return np.ascontiguousarray(request.sample.expected()[..., ::-1])
""")


def _noisy(offset):
    """A checkpoint: the expected image brightened by ``offset`` (0: perfect)."""
    def generate(request):
        image = request.sample.expected().astype(np.int16)
        return np.clip(image + offset, 0, 255).astype(np.uint8)
    return generate


def _results_by_id(folder):
    doc = json.loads((folder / "results.json").read_text())
    return {r["sample_id"]: r for r in doc["samples"]}


def test_a_callable_gives_the_plugins_metrics_and_diagnoses(pytester):
    pytester.makepyfile(wrong_colors=WRONG_COLORS)
    pytester.syspathinsert()
    result = pytester.runpytest("--violin-model=python:wrong_colors:generate", "--violin-tasks=color,shape",
                                "--violin-limit=8", "--violin-report=rep", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3, passed=5)  # the shapes keep their colour; every colour sample fails
    plugin = _results_by_id(pytester.path / "rep")

    import wrong_colors

    run = evaluate(wrong_colors.generate, tasks=["color", "shape"], limit=8, progress=False)
    assert [r.sample_id for r in run.results] == list(plugin)
    for mine in run.results:
        theirs = plugin[mine.sample_id]
        assert (mine.outcome, mine.failed, mine.limits) == (theirs["outcome"], theirs["failed"], theirs["limits"])
        assert mine.metrics == pytest.approx(theirs["metrics"], abs=1e-12)
        assert mine.diagnosis == theirs["extra"].get("diagnosis")
        assert mine.definition == theirs["extra"]["definition"]
    diagnosed = run.diagnoses()
    assert sorted(diagnosed) == sorted(k for k, r in plugin.items() if r["extra"].get("diagnosis"))
    assert all(texts and all(texts) for texts in diagnosed.values())
    failing = next(r.sample_id for r in run.results if r.outcome is Outcome.FAILED)
    assert failing in run.message(failing) and "CIEDE2000" in run.message(failing)
    assert run.pass_rates["color"] == 0.0 and run.pass_rates["shape"] == 1.0


@pytest.fixture(scope="module")
def oracle_run():
    return evaluate("oracle", limit=200, progress=False)


def test_oracle_passes_every_sample_and_its_numbers_are_named_for_trackers(oracle_run):
    run = oracle_run
    assert len(run) == 200 and run.passed == 200 and not run.interrupted
    scalars = run.scalars()
    assert all(isinstance(v, float) for v in scalars.values())
    for task in ("color", "shape", "mask"):
        assert scalars[f"violin/{task}/mean"] == 0.0 and scalars[f"violin/{task}/pass_rate"] == 1.0
    assert scalars["violin/pass_rate"] == 1.0 and scalars["violin/error_rate"] == 0.0
    assert "violin/color/v1/mean" in scalars and "violin/mask/inpaint/iou" in scalars
    assert run.means["color"] == 0.0 and run.pass_rates["color/v2"] == 1.0
    text, markdown = run.table(), run.table("markdown")
    assert "color:" in text and "(all)" in text and "100.0%" in text
    assert "### color" in markdown and "| v1 | oracle |" in markdown
    assert "(paper)" in run.table("markdown", paper=True)
    with pytest.raises(InvalidArgumentError, match="format='html'"):
        run.table("html")


def test_a_saved_run_is_read_by_compare_and_gates_the_plugin(oracle_run, pytester, tmp_path):
    from pytest_violin.__main__ import main

    folder = oracle_run.save(tmp_path / "evaluated")
    assert {p.name for p in folder.iterdir()} == {"results.json", "thumbnails.json", "summary.md",
                                                  "report.html", "baseline.json"}
    # the plugin on the same samples, its report beside the evaluation's
    # (200 samples: variations of about 25, too few to be shown within the margins; accepted, and said)
    result = pytester.runpytest("--violin-model=oracle", "--violin-limit=200", "-p", "no:cacheprovider",
                                f"--violin-baseline={folder / 'baseline.json'}", "--violin-report=rep",
                                "--violin-accept-not-shown")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*violin regression gate*", "PASSED WITH --violin-accept-not-shown*"])
    gate = json.loads((pytester.path / "rep" / "results.json").read_text())["comparison"]
    assert gate["ok"] is True and gate["compared"] == 200
    assert gate["outcome"] == "not-shown" and gate["accept_not_shown"] is True and gate["not_shown"]
    out = tmp_path / "compare.md"
    assert main(["compare", str(folder), str(pytester.path / "rep"), "--format", "md",
                 "--output", str(out)]) == 0
    assert "200 samples held by every run compared" in out.read_text()


def test_shards_saved_by_evaluate_merge_into_the_whole_run(tmp_path):
    """evaluate(shard="K/N") on four machines (or GPUs), merged: the run evaluate() makes whole."""
    from pytest_violin.__main__ import main

    model = _noisy(6)  # an imperfect model: failures and passes in every part
    whole = evaluate(model, limit=60, progress=False, cache=False)
    parts = [evaluate(model, limit=60, progress=False, cache=False, shard=f"{k}/4") for k in range(1, 5)]
    assert all(len(p) for p in parts) and sum(map(len, parts)) == 60
    folders = [p.save(tmp_path / f"part-{k}") for k, p in enumerate(parts, 1)]
    assert not any((f / "baseline.json").exists() for f in folders)  # a part gates nothing
    whole.save(tmp_path / "whole")
    merged = tmp_path / "merged"
    assert main(["merge", *map(str, reversed(folders)), "--output", str(merged), "--no-step-summary",
                 "--save-baseline", str(tmp_path / "merged-baseline.json")]) == 0
    got, want = _results_by_id(merged), _results_by_id(tmp_path / "whole")
    assert got.keys() == want.keys()
    for sid, rec in want.items():
        assert got[sid]["outcome"] == rec["outcome"] and got[sid]["metrics"] == rec["metrics"]
    # the merged baseline gates the whole run as the whole run's own baseline does
    by_merged, by_whole = whole.compare(tmp_path / "merged-baseline.json"), whole.compare(whole)
    assert by_merged.exit_status(0) == by_whole.exit_status(0)
    assert ([(g.task, g.variation, g.mean.status, g.pass_rate.status) for g in by_merged.comparison.groups]
            == [(g.task, g.variation, g.mean.status, g.pass_rate.status) for g in by_whole.comparison.groups])
    with pytest.raises(InvalidArgumentError, match="shard="):
        evaluate(model, limit=6, progress=False, shard="5/4")


def test_compare_uses_the_gates_rules(oracle_run, tmp_path):
    oracle_run.save(tmp_path / "base")
    worse = evaluate(_noisy(60), limit=200, progress=False)
    verdict = worse.compare(tmp_path / "base")  # the gate's own decision (gating.decide)
    assert verdict.ok is False and "color" in {g.task for g in verdict.comparison.regressed_groups}
    assert verdict.exit_status(0) == 1
    # the same answers: nothing regressed, but 200 samples (variations of about 25) show nothing within
    same = oracle_run.compare(oracle_run)
    assert same.ok is False and same.comparison.outcome == "not-shown" and same.exit_status(0) == 1
    assert oracle_run.compare(tmp_path / "base" / "baseline.json", accept_not_shown=True).ok is True
    with pytest.raises(InvalidArgumentError, match="baseline=int"):
        worse.compare(3)


def test_checkpoints_with_less_error_trend_down(tmp_path):
    runs = [evaluate(_noisy(offset), tasks="color", limit=12, progress=False, label=f"step {i}")
            for i, offset in enumerate((90, 60, 35, 15, 0))]
    means = [r.scalars()["violin/color/mean"] for r in runs]
    assert means == sorted(means, reverse=True) and len(set(means)) == 5 and means[-1] == 0.0
    for i, run in enumerate(runs):
        run.save(tmp_path / f"ckpt{i}")
    shown = trend(runs)
    assert list(shown.row("color").means) == pytest.approx(means)
    page = shown.write_html(tmp_path / "trend.html").read_text()
    # the task line's markers, left to right: "(all) @ step i = value"
    import re

    points = [float(v) for v in re.findall(r"<title>\(all\) @ step \d = ([0-9.]+)</title>", page)[:5]]
    assert points == sorted(points, reverse=True) and len(set(points)) == 5
    # the command line reads the saved folders in the order given
    from pytest_violin.__main__ import main

    out = tmp_path / "trend.csv"
    assert main(["trend", *(str(tmp_path / f"ckpt{i}") for i in range(5)), "--format", "csv",
                 "--output", str(out)]) == 0
    rows = [line.split(",") for line in out.read_text().splitlines()[1:]]
    task_means = [float(r[5]) for r in rows if r[2] == "color" and r[3] == ""]
    assert task_means == pytest.approx(means)


def test_the_label_given_to_evaluate_names_the_saved_run_in_the_trend(tmp_path):
    from pytest_violin.__main__ import main
    from pytest_violin.compare.runs import load_run

    generate = _noisy(0)  # one callable for every checkpoint, as in a training loop
    for step in (1000, 2000):
        evaluate(generate, tasks="color", limit=4, progress=False, label=f"ckpt-{step}").save(tmp_path / str(step))
    assert load_run(str(tmp_path / "1000")).label == "ckpt-1000"
    assert trend([tmp_path / "1000", tmp_path / "2000"]).labels == ["ckpt-1000", "ckpt-2000"]
    out = tmp_path / "trend.csv"
    assert main(["trend", str(tmp_path / "1000"), str(tmp_path / "2000"), "--format", "csv",
                 "--output", str(out)]) == 0
    shown = {line.split(",")[1] for line in out.read_text().splitlines()[1:]}
    assert shown == {"ckpt-1000", "ckpt-2000"}
    # --label still wins over the saved one
    assert load_run(str(tmp_path / "1000"), label="first").label == "first"


def test_trend_command_line_errors(tmp_path, capsys):
    from pytest_violin.__main__ import EXIT_USAGE, main

    assert main(["trend", str(tmp_path / "nothing")]) == EXIT_USAGE
    assert "no such file or folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["trend", str(tmp_path), "--format", "html"])
    assert info.value.code == EXIT_USAGE


def test_bad_arguments_name_the_value():
    with pytest.raises(InvalidArgumentError, match="repeats=0"):
        evaluate("oracle", repeats=0)
    with pytest.raises(InvalidArgumentError, match="profile='loose'"):
        evaluate("oracle", profile="loose")
    with pytest.raises(ModelSpecError, match="model=42"):
        evaluate(42, limit=1)
    with pytest.raises(InvalidArgumentError, match="max_cost=1 needs price"):
        evaluate("oracle", max_cost=1)
    with pytest.raises(ModelSpecError) as info:
        evaluate("nosuchscheme://alice:s3cret@example.com/x", limit=1)
    assert "s3cret" not in str(info.value) and "nosuchscheme" in str(info.value)


@pytest.mark.parametrize("name", ["concurrency", "retries", "repeats", "timeout", "price", "max_cost", "seed",
                                  "limit", "max_calls"])
def test_bounded_arguments_accept_what_the_plugins_options_accept(name):
    from pytest_violin.execution.bounds import RUN_BOUNDS
    from pytest_violin.pytest_plugin._options import OPTIONS

    bound = RUN_BOUNDS[name]
    option = next(o for o in OPTIONS if o.name == name)
    highest = bound.high if bound.high is not None else 10**30
    # one past either end: refused by both, each naming the value and the same accepted range
    for value in ([bound.low - 1] if bound.integer else [-1.0]) + ([bound.high * 10**6] if bound.high else []):
        plugin = pytest.raises(Exception, option.convert, str(value))
        with pytest.raises(InvalidArgumentError) as info:
            evaluate("oracle", **{"limit": 1, "progress": False, "cache": False, "price": 1.0, name: value})
        assert f"{name}={value!r}" in str(info.value) and bound.accepted in str(info.value)
        assert bound.accepted in str(plugin.value)
    assert option.convert(str(highest)) == highest and bound.holds(highest)


@pytest.mark.parametrize("name, value", [("concurrency", 10**8), ("retries", 10**6), ("repeats", 10**6),
                                         ("seed", 10**5000), ("max_calls", 10**5000), ("timeout", 10**400)],
                         ids=["concurrency", "retries", "repeats", "seed", "max_calls", "timeout"])
def test_an_argument_past_its_bound_is_refused_before_any_generation(name, value):
    assert len(_refused(name, value)) < 300


def _refused(name, value) -> str:
    """The message of evaluate()'s refusal of ``name=value``, made before any generation."""
    calls = []
    with pytest.raises(InvalidArgumentError, match=f"^{name}=") as info:
        evaluate(calls.append, **{"limit": 1, "progress": False, "cache": False, name: value})
    assert not calls and "accepted" in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("name, value", [
    ("suite", None), ("suite", 3), ("tasks", 3), ("thresholds", 3), ("cache", 3), ("headers", 3),
    ("headers", [("Name",)]), ("headers", [(1, 2)]), ("save_outputs", b"out"), ("metadata", 3),
    ("photos_dir", 3.5), ("thumbnails", "yes"), ("progress", None), ("profile", ["violin"]),
    ("pass_rule", None), ("label", 3), ("limit", "10"), ("seed", 1.5), ("max_calls", "none")])
def test_an_argument_of_the_wrong_kind_is_an_invalid_argument_naming_it(name, value):
    assert repr(value)[:20] in _refused(name, value)


class _PaidModel:
    """An adapter of a paid API: every call would cost money."""

    identity = "paid-test"
    bills = True

    def __init__(self):
        self.calls = 0

    def generate(self, request):
        self.calls += 1
        return request.sample.expected()


def test_a_run_over_the_call_cap_is_refused_before_any_call():
    model = _PaidModel()
    with pytest.raises(CallLimitReached, match="max_calls=3.*plans 6 uncached"):
        evaluate(model, tasks="color", limit=6, max_calls=3, progress=False, cache=False)
    assert model.calls == 0
    assert evaluate(model, tasks="color", limit=3, max_calls=3, progress=False, cache=False).passed == 3
    assert model.calls == 3


def test_an_unreachable_endpoint_ends_the_run_as_errors_not_failures():
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there: connection refused
    run = evaluate(f"http://127.0.0.1:{port}/generate", tasks="color", limit=3, progress=False, cache=False,
                   retries=0, timeout=5)
    assert [r.outcome for r in run.results] == ["error"] * 3
    assert run.scalars().get("violin/error_rate") == 1.0 and "violin/color/mean" not in run.scalars()


def test_a_plain_adapter_object_is_used_as_it_is_and_not_closed():
    class Adapter:
        identity = "mine"
        cacheable = False
        closed = False

        def generate(self, request):
            return request.sample.expected()

        def close(self):
            self.closed = True

    adapter = Adapter()
    run = evaluate(adapter, tasks="shape", limit=3, progress=False)
    assert isinstance(run, EvaluationRun) and run.label == "mine" and run.passed == 3
    assert adapter.closed is False
    assert "EvaluationRun('mine': 3 samples, 3 passed" in repr(run)
    assert run._repr_markdown_().startswith("## Violin comparison")


def _hostile_runs(tmp_path):
    """Two saved runs whose labels are markup and a formula."""
    from pytest_violin.compare.runs import load_run

    folders = []
    for i, offset in enumerate((40, 0)):
        folders.append(evaluate(_noisy(offset), tasks="color,shape", limit=6, progress=False).save(tmp_path / f"r{i}"))
    labels = ["<script>alert(1)</script>", "=HYPERLINK(\"x\")"]
    return [load_run(str(f), label=label) for f, label in zip(folders, labels)]


def test_trend_outputs_escape_what_they_show(tmp_path):
    from pytest_violin.compare.trend import build_trend

    shown = build_trend(_hostile_runs(tmp_path))
    page = shown.html()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the page's own, pinned by the content-security policy
    assert "script-src 'sha256-" in page and "default-src 'none'" in page
    assert "'=HYPERLINK" in shown.csv() and "\\<script\\>" in shown.markdown()
    assert shown.references == {}  # not on the official data: no paper lines unless asked
    with_paper = build_trend(_hostile_runs(tmp_path / "again"), paper=True)
    assert with_paper.references and any("indicative only" in n for n in with_paper.notes)
    assert 'stroke-dasharray="4 3"' in with_paper.html()


def test_line_chart_breaks_at_missing_values_and_escapes_labels():
    from pytest_violin.report._svg import line_chart

    svg = line_chart(["a", "<b>", "c", "d"], [("task", [0.4, None, 0.2, 0.1]), ("v&1", [0.3, 0.3, 0.3, 0.3])],
                     title="t<", references=[("model", 0.25)])
    assert svg.count("<polyline") == 2  # "task" has one run of two points after the gap, "v&1" one line
    assert "&lt;b&gt;" in svg and "v&amp;1" in svg and "t&lt;" in svg
    assert svg.count("<circle") == 7 and "model = 0.250" in svg


CHROMIUM = next((p for p in map(__import__("shutil").which, ("chromium", "chromium-browser")) if p), None)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_trend_page_runs_in_headless_chromium_without_console_errors(tmp_path):
    from pytest_violin.compare.trend import build_trend

    page = build_trend(_hostile_runs(tmp_path)).write_html(tmp_path / "trend.html")
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the pinned script ran (it fills the counter), and nothing was blocked or thrown
    assert "of 14 lines shown (4 task lines)" in proc.stdout
    assert ":CONSOLE" not in proc.stderr, proc.stderr[-2000:]


def test_the_same_crash_on_the_first_samples_stops_the_run_as_the_plugin_stops_a_session(tmp_path):
    from pytest_violin.errors import ViolinWarning

    def broken(request):
        raise KeyError("steps")  # glue code that fails on every call

    with pytest.warns(ViolinWarning, match="the run stops after"):
        run = evaluate(broken, tasks="color", limit=40, progress=False, concurrency=1)
    assert run.interrupted and "the same error in the first 5 samples" in run.stop_reason
    assert 1 <= len(run) < 40 and all(r.outcome == "failed" for r in run.results)  # prefetch: it knows early
    assert "KeyError" in run.results[0].error
    folder = run.save(tmp_path / "stopped")
    # a partial run is no baseline: it would gate later runs on a subset
    assert not (folder / "baseline.json").exists()
    meta = json.loads((folder / "results.json").read_text())["metadata"]
    assert meta["interrupted"] is True and "the same error" in meta["stop_reason"]


def test_runs_on_the_official_data_get_the_papers_models_as_reference_lines(tmp_path, monkeypatch):
    import _official_data as od  # tests/_official_data.py

    monkeypatch.setenv("VIOLIN_OFFICIAL_CACHE", str(tmp_path / "cache"))
    od.write_converted(tmp_path / "benchmark", od.make_rows(3))
    runs = [evaluate(model, suite=str(tmp_path / "benchmark"), progress=False, label=label)
            for model, label in (("oracle", "A"), (_noisy(30), "B"))]
    assert runs[0].metadata["dataset"]["samples"] == len(runs[0]) == 13
    shown = trend(runs)
    assert shown.references and all(task in ("color", "shape", "mask") for task, _ in shown.references)
    assert any("published means" in n for n in shown.notes)
    assert "(paper)" in shown.markdown() and 'stroke-dasharray="4 3"' in shown.html()
    assert trend(runs, paper=False).references == {}


def test_a_callable_that_never_returns_is_an_error_after_the_timeout_and_the_run_ends():
    release, ended, box = threading.Event(), threading.Event(), []

    def hang(request):
        release.wait()

    def run():
        try:
            box.append(evaluate(hang, tasks="color", limit=2, progress=False, concurrency=1, timeout=0.3,
                                cache=False))
        finally:
            ended.set()

    threading.Thread(target=run, daemon=True).start()
    try:
        assert ended.wait(120), "evaluate() did not end"
    finally:
        release.set()  # the abandoned calls return
    run = box[0]
    assert len(run) == 2 and all(r.outcome is Outcome.ERROR for r in run.results)
    assert all("did not return within 0.3 s" in r.error for r in run.results), run.results[0].error
