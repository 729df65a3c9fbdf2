"""The sequential gate in pytest runs (``--violin-sequential``): order, stop, skips, budget, xdist, reports.

The statistics themselves are tested in tests/unit/test_sequential_stats.py; the
simulated error rates are benchmarks/bench_sequential.py.
"""

from __future__ import annotations

import json

import pytest

from pytest_violin.thresholds import KNOWN_METRICS

MODELS = '''
import numpy as np


def degraded(request):
    """Every colour shifted by 40 levels: clearly worse, same layout."""
    img = request.sample.expected().astype(np.int16)
    return np.clip(img + 40, 0, 255).astype(np.uint8)


def slightly(request):
    """One level lighter: a difference far below the margin, never decided in a few samples."""
    img = request.sample.expected().astype(np.int16)
    return np.clip(img + 1, 0, 255).astype(np.uint8)


FAIL_EVERY = int(__import__("os").environ.get("VIOLIN_TEST_FAIL_EVERY", "40"))


def unjudged_sometimes(request):
    """A time-out (an error, never a score) for one shape sample in FAIL_EVERY, else the exact answer."""
    from pytest_violin.errors import GenerationUnjudged

    if request.task == "shape" and sum(map(ord, request.sample_id)) % FAIL_EVERY == 0:
        raise GenerationUnjudged("timed out (test)")
    return request.sample.expected()


def triangle_off(request):
    """Every triangle 2 pixels to the right, one in seven 3 pixels: shape-mean about +0.016 on
    triangles (1.6 times the default margin), every other answer exact."""
    img = request.sample.expected()
    if request.task == "shape" and request.sample.variation == "triangle":
        img = np.roll(img, 3 if sum(map(ord, request.sample_id)) % 7 == 0 else 2, axis=1)
    return img


def refuse_some_shapes(request):
    """Refuses one shape sample in 25 (4%), else the exact answer."""
    from pytest_violin.errors import GenerationRefused

    if request.task == "shape" and sum(map(ord, request.sample_id)) % 25 == 0:
        raise GenerationRefused("not this one (test)")
    return request.sample.expected()


def crash_once(request):
    """The exact answer; the process dies on the sample named by VIOLIN_TEST_CRASH, the first time
    (an xdist worker crash: xdist hands the samples the worker held to the others at the end)."""
    import os

    marker = os.environ.get("VIOLIN_TEST_CRASH_MARKER", "")
    if request.sample_id == os.environ.get("VIOLIN_TEST_CRASH") and marker and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(3)
    return request.sample.expected()


class Cached:
    """The exact answer, cacheable (the cache may serve it)."""

    cacheable = True
    identity = "python:violin_models:Cached"

    def generate(self, request):
        return request.sample.expected()
'''

TASKS = "--violin-tasks=color,shape"
LIMIT = "--violin-limit=300"
# wide margins: a model a little off (the crash test's errors aside) is still shown within them on the
# 60 samples of a variation, judged at its only look (its last sample: 60 < SUCCESS_FLOOR)
WIDE = ["--violin-max-regression=0.2", "--violin-max-pass-drop=0.2"]
# every limit at 1.0: the exit code is the gate's alone
LOOSE = [f"--violin-threshold={task}.{m}=1" for task, ms in KNOWN_METRICS.items()
         if task in ("color", "shape") for m in (*ms, "mean")]


_BASELINE: dict = {}  # the oracle's baseline, made once per process (deterministic)


@pytest.fixture
def project(pytester):
    pytester.makepyfile(violin_models=MODELS)
    if "text" not in _BASELINE:
        result = pytester.runpytest("--violin-model=oracle", LIMIT, TASKS, "--violin-save-baseline=base.json",
                                    "-p", "no:cacheprovider", "-q")
        assert result.ret == 0, result.stdout.str()
        _BASELINE["text"] = (pytester.path / "base.json").read_text()
    (pytester.path / "base.json").write_text(_BASELINE["text"])
    return pytester


def _sequential(project, model, *extra, report="out", runner=None):
    run = runner or project.runpytest
    return run(f"--violin-model={model}", LIMIT, TASKS, "--violin-baseline=base.json",
               "--violin-sequential", f"--violin-report={report}", "-p", "no:cacheprovider", "-rs",
               *LOOSE, *extra)


def _summary(project, report="out"):
    doc = json.loads((project.path / report / "results.json").read_text())
    return doc, doc["metadata"]["sequential"]


def test_a_clear_regression_fails_after_a_few_samples_and_skips_the_rest(project):
    result = _sequential(project, "python:violin_models:degraded")
    assert result.ret == 1, result.stdout.str()
    doc, seq = _summary(project)
    outcomes = result.parseoutcomes()
    assert seq["verdict"] == "regressed" and seq["total"] == 300
    assert 0 < seq["used"] < 0.6 * seq["total"]
    assert outcomes["skipped"] == seq["samples_not_generated"] > 0
    assert len(doc["samples"]) == seq["total"] - seq["samples_not_generated"]
    assert any(g["status"] == "regressed" and g["interval"][0] >= seq["margin"] for g in seq["groups"])
    out = result.stdout.str()
    assert f"gate decided after {seq['used']} of 300 samples" in out  # the skip reason
    assert "sequential gate" in out.lower()
    md = (project.path / "out" / "summary.md").read_text()
    assert "### Sequential gate" in md and "REGRESSED" in md
    html = (project.path / "out" / "report.html").read_text()
    assert 'id="sequential"' in html and "REGRESSED" in html
    # the summary table marks only what the gate showed regressed (not the groups it left undecided)
    import re

    shown = {(g["task"], g["variation"]) for g in seq["groups"] if g["status"] == "regressed"}
    table = html.split('id="summary"')[1]
    for task_html in table.split("<h3>")[1:]:
        task = task_html.split("</h3>")[0]
        for classes, label in re.findall(r'<tr class="([^"]*)"><td>([^<]*)</td>', task_html):
            key = (task, None if label == "all" else label)
            assert ("reg" in classes.split()) == (key in shown), (key, classes)


@pytest.mark.slow  # 800 samples through the plugin: the e2e sequential test shows the same on the suite
def test_the_same_model_passes_and_nothing_is_reported_as_passed_that_did_not_run(project):
    """800 colour samples (400 per variation, >= SUCCESS_FLOOR): the same model is shown within at
    the default margins at planned looks before the end, so the rest is skipped, never passed."""
    project.runpytest("--violin-model=oracle", "--violin-limit=800", "--violin-tasks=color",
                      "--violin-save-baseline=color800.json", "-p", "no:cacheprovider", "-q")
    result = project.runpytest("--violin-model=oracle", "--violin-limit=800", "--violin-tasks=color",
                               "--violin-baseline=color800.json", "--violin-sequential", "--violin-report=out",
                               "-p", "no:cacheprovider", "-rs", *LOOSE)
    assert result.ret == 0, result.stdout.str()
    doc, seq = _summary(project)
    assert seq["verdict"] == "within-margin" and seq["total"] == 800
    assert all(g["status"] == "within" for g in seq["groups"])
    assert {g["role"] for g in seq["groups"]} == {"task", "variation"}
    for g in seq["groups"]:  # shown within at a planned look, not at the end of its stream
        assert g["used"] in g["looks"] and g["used"] < g["size"], g
    assert doc["comparison"]["ok"] is True and doc["comparison"]["decided_by"] == "sequential"
    assert doc["comparison"]["outcome"] == "within-margin" and not doc["comparison"]["not_shown"]
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) == seq["samples_not_generated"] > 0
    # only what was generated passed, and violin::gate
    assert outcomes.get("passed", 0) == len(doc["samples"]) + 1
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) == 801
    assert "PASSED" in result.stdout.str()


def test_groups_too_small_to_be_shown_within_are_not_shown_and_the_run_is_not_green(project):
    """100 samples: 20 per variation, fewer than MIN_TESTED (30): no look, so the same model cannot be
    shown within; the gate ends not shown after the last sample, violin::gate fails (exit 1) unless
    --violin-accept-not-shown. No fixed-sample rule judges these groups in its place."""
    small = "--violin-limit=100"
    project.runpytest("--violin-model=oracle", small, TASKS, "--violin-save-baseline=small.json",
                      "-p", "no:cacheprovider", "-q")
    args = ("--violin-model=oracle", small, TASKS, "--violin-baseline=small.json", "--violin-sequential",
            "--violin-report=out", "-p", "no:cacheprovider", *LOOSE)
    result = project.runpytest(*args)
    doc, seq = _summary(project)
    assert seq["verdict"] == "not-shown", seq["finished"]
    assert len(doc["samples"]) == 100 and result.ret == 1, result.stdout.str()
    variations = [g for g in seq["groups"] if g["role"] == "variation"]
    assert variations and all(g["status"] == "not-shown" and g["used"] == g["size"] < 30 and not g["looks"]
                              for g in variations)
    assert not any(g["status"] == "regressed" for g in seq["groups"])
    comparison = doc["comparison"]
    assert comparison["decided_by"] == "sequential" and comparison["ok"] is False
    assert comparison["outcome"] == "not-shown" and not comparison["regressions"]
    assert {g["group"] for g in variations} <= set(comparison["not_shown"])
    out = result.stdout.str()
    assert "NOT SHOWN" in out and "FAILED violin::gate" in out.replace("FAILED: ", "")
    assert "(watch)" not in out and "-0.000" not in out
    accepted = project.runpytest(*args, "--violin-accept-not-shown")
    assert accepted.ret == 0, accepted.stdout.str()
    doc, _ = _summary(project)
    assert doc["comparison"]["ok"] is True and doc["comparison"]["outcome"] == "not-shown"


def test_the_order_is_seeded_stratified_and_the_same_for_the_same_seed(project):
    def order(*extra):
        result = project.runpytest("--violin-model=oracle", LIMIT, TASKS, "--violin-baseline=base.json",
                                   "--violin-sequential", "--collect-only", "-q", "-p", "no:cacheprovider",
                                   *extra)
        assert result.ret == 0, result.stdout.str()
        return [line for line in result.outlines if line.startswith("violin::")]

    first, again, other = order(), order(), order("--violin-seed=7")
    assert first == again and first != other
    head = first[:30]  # both tasks, several variations, from the start
    assert {x.split("::")[1].split("/")[0] for x in head} == {"color", "shape"}
    assert len({"/".join(x.split("::")[1].split("/")[:2]) for x in head}) >= 4
    plain = project.runpytest("--violin-model=oracle", LIMIT, TASKS, "--collect-only", "-q",
                              "-p", "no:cacheprovider")
    assert [line for line in plain.outlines if line.startswith("violin::")] != first  # suite order


def test_the_budget_stops_the_gate_undecided_skips_instead_of_erroring_and_is_not_green(project):
    """A gate stopped by gate.stop() (the budget) keeps the verdict "undecided"; its open groups are
    not shown, so the run fails with NOT SHOWN (exit 1), never handed to the fixed-sample rule
    (which would pass the 25 samples made: a +1 shift is no regression); --violin-accept-not-shown
    passes it, nothing having regressed."""
    args = ("python:violin_models:slightly", "--violin-max-calls=25", "--violin-concurrency=1")
    result = _sequential(project, *args)
    doc, seq = _summary(project)
    assert seq["verdict"] == "undecided" and seq["finished"].startswith("budget spent")
    assert all(g["status"] == "undecided" for g in seq["groups"])
    assert all(s["outcome"] != "error" for s in doc["samples"])  # the cap is no error
    outcomes = result.parseoutcomes()
    assert outcomes.get("error", 0) == 0 and outcomes["skipped"] >= 300 - 25
    comparison = doc["comparison"]
    assert comparison["decided_by"] == "sequential" and comparison["ok"] is False
    assert comparison["outcome"] == "not-shown" and not comparison["regressions"]
    assert set(comparison["not_shown"]) >= {"color", "shape"}
    assert result.ret == 1 and outcomes.get("failed") == 1, result.stdout.str()  # violin::gate
    assert "NOT SHOWN" in result.stdout.str()
    accepted = _sequential(project, *args, "--violin-accept-not-shown")
    assert accepted.ret == 0, accepted.stdout.str()


def test_cached_images_are_used_first_and_enter_exactly(project):
    # an earlier ordinary run cached every shape image (not a random subset: -k chose them)
    warm = project.runpytest("--violin-model=python:violin_models:Cached", LIMIT, TASKS, "-k", "shape",
                             "-p", "no:cacheprovider", "-q")
    assert warm.ret == 0, warm.stdout.str()
    shapes = warm.parseoutcomes()["passed"]
    order = project.runpytest("--violin-model=python:violin_models:Cached", LIMIT, TASKS,
                              "--violin-baseline=base.json", "--violin-sequential", "--collect-only", "-q",
                              "-p", "no:cacheprovider")
    ids = [line for line in order.outlines if line.startswith("violin::")]
    assert all(x.startswith("violin::shape/") for x in ids[:shapes])  # the cached lead the order
    assert not ids[shapes].startswith("violin::shape/") or shapes == len(ids)
    result = _sequential(project, "python:violin_models:Cached")
    assert result.ret == 0, result.stdout.str()
    _, seq = _summary(project)
    assert seq["cached"] == shapes
    shape = next(g for g in seq["groups"] if g["group"] == "shape")
    # the cached values lead the stream: the task is shown within on them (its one look, 180 < the
    # floor), before any shape is paid for
    assert shape["status"] == "within" and shape["used"] <= shapes


def test_usage_errors(project):
    alone = project.runpytest("--violin-model=oracle", "--violin-sequential", "-p", "no:cacheprovider")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    assert "--violin-baseline" in alone.stderr.str()
    no_model = project.runpytest("--violin-sequential", "--violin-baseline=base.json", "-p", "no:cacheprovider")
    assert no_model.ret == pytest.ExitCode.USAGE_ERROR
    bad = project.runpytest("--violin-model=oracle", "--violin-baseline=base.json", "--violin-sequential",
                            "--violin-alpha=0.9", "-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "0.9" in bad.stderr.str()


def test_ini_key_turns_it_on(project):
    project.makeini("[pytest]\nviolin_sequential = true\nviolin_baseline = base.json\n")
    result = project.runpytest("--violin-model=python:violin_models:degraded", LIMIT, TASKS,
                               "--violin-report=out", "-p", "no:cacheprovider", *LOOSE)
    assert result.ret == 1
    _, seq = _summary(project)
    assert seq["verdict"] == "regressed"


@pytest.mark.slow  # two xdist workers start in a pytester run
def test_xdist_the_controller_decides_and_the_workers_stop(project):
    result = _sequential(project, "python:violin_models:degraded", "-n", "2",
                         runner=project.runpytest_subprocess)
    assert result.ret == 1, result.stdout.str()
    doc, seq = _summary(project)
    assert seq["verdict"] == "regressed"
    outcomes = result.parseoutcomes()
    assert outcomes["skipped"] > 0.3 * 300
    assert len(doc["samples"]) + outcomes["skipped"] == 300
    # one sample at a time to the workers (--maxschedchunk=1): few answers the gate could not use
    assert len(doc["samples"]) <= seq["used"] + 12
    assert "--maxschedchunk=1" in result.stdout.str()


def test_errors_leave_the_population_the_gate_still_decides_and_is_not_green(project):
    result = _sequential(project, "python:violin_models:unjudged_sometimes", *WIDE)
    doc, seq = _summary(project)
    errors = [s for s in doc["samples"] if s["outcome"] == "error"]
    status = {g["group"]: g for g in seq["groups"]}
    assert errors and seq["verdict"] in ("within-margin", "not-shown"), seq["finished"]
    assert all(g["status"] == "within" for label, g in status.items() if label.startswith("color"))
    # a shape group is decided too, never left undecided or called regressed by its errors (one with an
    # error takes its last look when its stream ends)
    assert all(g["status"] == "within" and g["ended"] for g in status.values())
    assert doc["comparison"]["ok"] is False  # results.json agrees with the exit code
    assert doc["comparison"]["outcome"] == "errored"
    assert result.ret == 1  # an error keeps the gate from green, as in the ordinary gate
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", outcomes.get("error")) == len(errors)


def test_many_errors_stop_the_gate_it_says_why_and_is_not_green(project, monkeypatch):
    monkeypatch.setenv("VIOLIN_TEST_FAIL_EVERY", "7")  # one shape sample in seven times out
    result = _sequential(project, "python:violin_models:unjudged_sometimes")
    doc, seq = _summary(project)
    errors = [s for s in doc["samples"] if s["outcome"] == "error"]
    assert seq["verdict"] == "undecided" and "ended in an error" in seq["finished"]
    assert 10 < len(errors) < 20  # stopped soon after the limit, not at the end of the suite
    assert result.ret == 1 and result.parseoutcomes()["skipped"] > 0


# -- every check of the ordinary gate ------------------------------------------------------------


@pytest.mark.slow  # two runs of 300 samples; the fixed-sample rule on undecided groups runs by default above
def test_a_triangle_only_regression_of_1_6_margins_fails(project):
    """Triangles alone +0.016 (1.6 times the margin): the triangle group is watched until it is
    decided itself; 60 triangles may not show it regressed anytime-valid, but they cannot show it
    within either: not shown, so the gate (the sequential one's verdict, no fixed-sample fallback)
    fails it."""
    ordinary = project.runpytest("--violin-model=python:violin_models:triangle_off", LIMIT, TASKS,
                                 "--violin-baseline=base.json", "--violin-report=plain", "-p",
                                 "no:cacheprovider", *LOOSE)
    plain = json.loads((project.path / "plain" / "results.json").read_text())["comparison"]
    assert plain["ok"] is False and "shape/triangle" in plain["regressions"], ordinary.stdout.str()
    result = _sequential(project, "python:violin_models:triangle_off")
    doc, seq = _summary(project)
    triangle = next(g for g in seq["groups"] if g["group"] == "shape/triangle")
    assert triangle["status"] in ("regressed", "not-shown") and triangle["used"] == triangle["size"]
    assert seq["verdict"] in ("regressed", "not-shown")
    comparison = doc["comparison"]
    assert comparison["ok"] is False and comparison["decided_by"] == "sequential"
    assert "shape/triangle" in comparison["regressions"] + comparison["not_shown"]
    assert result.ret == 1, result.stdout.str()


@pytest.mark.slow  # 2 x 600 samples
def test_a_4_percent_refusal_rate_on_shapes_fails_with_results_json_not_ok(project):
    # 600 shape samples: a 4% refusal rate is shown above the 1-point margin at alpha / 21
    shapes = ("--violin-tasks=shape", "--violin-limit=600")
    project.runpytest("--violin-model=oracle", *shapes, "--violin-save-baseline=shapes.json", "-p",
                      "no:cacheprovider", "-q")
    result = project.runpytest("--violin-model=python:violin_models:refuse_some_shapes", *shapes,
                               "--violin-baseline=shapes.json", "--violin-sequential", "--violin-report=out",
                               "-p", "no:cacheprovider", *LOOSE)
    doc, seq = _summary(project)
    refused = [s for s in doc["samples"] if s["outcome"] == "refused"]
    assert refused and seq["verdict"] in ("regressed", "not-shown")
    assert doc["comparison"]["ok"] is False and result.ret == 1, result.stdout.str()
    assert "FAILED violin::gate" in result.stdout.str()


@pytest.mark.parametrize("options", [["--violin-max-regression=1"],
                                     ["--violin-max-regression=1", "--violin-max-pass-drop=1"]])
def test_a_margin_of_1_works_under_the_sequential_gate(project, options):
    result = _sequential(project, "python:violin_models:degraded", *options)
    assert result.ret in (0, 1), result.stdout.str()  # never an INTERNALERROR
    _, seq = _summary(project)
    assert seq["margins"]["mean"] == 1.0
    if len(options) == 2:  # nothing can regress, and each group is within at its one look (its last sample)
        assert seq["verdict"] == "within-margin" and result.ret == 0
        assert all(g["status"] == "within" and g["used"] == g["size"] for g in seq["groups"])


@pytest.mark.slow  # two xdist workers start
def test_minus_x_under_xdist_is_reported_as_a_stop_after_failures_not_ctrl_c(project):
    # against a baseline a sample over its limits is an xfail: an error is what stops -x
    result = project.runpytest_subprocess("--violin-model=python:violin_models:unjudged_sometimes", LIMIT,
                                          TASKS, "--violin-baseline=base.json", "--violin-sequential",
                                          "--violin-report=out", "-p", "no:cacheprovider", "-n", "2", "-x")
    doc, seq = _summary(project)
    meta = doc["metadata"]
    assert meta["interrupted"] is True, result.stdout.str()
    assert "stopping after" in meta["stop_reason"] and "Ctrl-C" not in meta["stop_reason"]
    assert seq["verdict"] == "undecided" and "stopping after" in seq["finished"]


@pytest.mark.slow  # two xdist workers, one killed and replaced: over 10 s on 2 cores
def test_a_crashed_worker_is_an_error_of_its_sample_and_does_not_stall_the_gate(project, monkeypatch):
    order = project.runpytest("--violin-model=oracle", LIMIT, TASKS, "--violin-baseline=base.json",
                              "--violin-sequential", "--collect-only", "-q", "-p", "no:cacheprovider")
    ids = [line.split("::", 1)[1] for line in order.outlines if line.startswith("violin::")]
    monkeypatch.setenv("VIOLIN_TEST_CRASH", ids[3])  # early: the samples it held are early ones too
    monkeypatch.setenv("VIOLIN_TEST_CRASH_MARKER", str(project.path / "crashed"))
    result = _sequential(project, "python:violin_models:crash_once", "-n", "2", *WIDE,
                         runner=project.runpytest_subprocess)
    assert (project.path / "crashed").exists()
    doc, seq = _summary(project)
    # xdist names the item it was running (the crash may come from a prefetch of the next one)
    crashed = [s for s in doc["samples"] if s["outcome"] == "error" and "crashed" in (s.get("error") or "")]
    assert len(crashed) == 1, result.stdout.str()
    # not regressed (its group is "not-shown" today: the error costs it its only look, at its size; see
    # tests/unit/test_sequential_stats.py::test_an_error_does_not_cost_a_group_its_last_look)
    assert seq["verdict"] in ("within-margin", "not-shown") and not any(
        g["status"] == "regressed" for g in seq["groups"]), seq["finished"]
    without = _sequential(project, "oracle", "-n", "2", *WIDE, report="plain", runner=project.runpytest_subprocess)
    assert without.ret == 0
    _, plain = _summary(project, "plain")
    assert seq["used"] <= plain["used"] + 40, (seq["used"], plain["used"])  # not every sample
    assert doc["comparison"]["ok"] is False and result.ret != 0  # the error keeps it from green
