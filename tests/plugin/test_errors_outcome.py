"""Every planned sample ends passed, failed or error; an error is never the model's score."""

from __future__ import annotations

import json

import pytest

from pytest_violin.gating import build_baseline, compare

TASKS = "--violin-tasks=shape"
LIMIT = "--violin-limit=6"

CONFTEST = '''
import os

from pytest_violin.suite.sample import Sample

_original = Sample.score


def pytest_configure(config):
    # one sample's ground truth cannot be rendered: scoring raises
    target = os.environ.get("VIOLIN_BROKEN_ID")

    def score(self, image, **kw):
        if self.id == target:
            raise ValueError("expected image unreadable: " + "x" * 5000)
        return _original(self, image, **kw)

    Sample.score = score


def pytest_unconfigure(config):
    Sample.score = _original
'''

MODELS = '''
def bug(request):
    """An adapter bug on one sample (not the model failing)."""
    import os
    if request.sample_id == os.environ.get("VIOLIN_BUG_ID"):
        raise KeyError("PYTEST_CURRENT_TEST")
    return request.sample.expected()


class BuggyAdapter:
    identity = "test:buggy"

    def generate(self, request):
        return bug(request)
'''


def _ids(pytester):
    out = pytester.runpytest("--violin-model=oracle", TASKS, LIMIT, "--collect-only", "-q").stdout.lines
    return [line.split("violin::")[1] for line in out if line.startswith("violin::")]


def test_scoring_error_is_an_error_with_one_line_and_in_every_artifact(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST)
    target = _ids(pytester)[2]
    monkeypatch.setenv("VIOLIN_BROKEN_ID", target)
    result = pytester.runpytest("--violin-model=oracle", TASKS, LIMIT, "--violin-report=rep",
                                "--violin-save-baseline=base.json", "--junitxml=j.xml", "-p", "no:randomly")
    result.assert_outcomes(passed=5, errors=1)
    out = result.stdout.str()
    assert f"ERROR at setup of violin::{target}" in out
    assert "error while scoring: ValueError" in out
    assert "x" * 400 not in out and "Traceback" not in out
    results = json.loads((pytester.path / "rep" / "results.json").read_text())
    by_id = {r["sample_id"]: r for r in results["samples"]}
    assert len(by_id) == 6 and by_id[target]["outcome"] == "error"
    assert by_id[target]["metrics"] == {}
    base = json.loads((pytester.path / "base.json").read_text())
    entry = {s["id"]: s for s in base["samples"]}[target]
    assert entry["outcome"] == "error" and entry["metrics"] == {}


def test_adapter_bug_is_a_pytest_error_not_a_model_failure(pytester, monkeypatch):
    pytester.makepyfile(violin_models=MODELS)
    target = _ids(pytester)[1]
    monkeypatch.setenv("VIOLIN_BUG_ID", target)
    # a python: model is the user's own code: what it raises is the model's failure
    as_model = pytester.runpytest("--violin-model=python:violin_models:bug", TASKS, LIMIT)
    as_model.assert_outcomes(passed=5, failed=1)
    # an adapter's bug (an exception that is not a GenerationError) is the tool's:
    # a pytest error naming the exception, outcome "error", never a score
    pytester.makepyfile(violin_plugin=(
        "import violin_models\n"
        "def create(target, options):\n"
        "    return violin_models.BuggyAdapter()\n"))
    pytester.makeconftest(
        "from importlib.metadata import EntryPoint\n"
        "from pytest_violin.models import registry\n"
        "_orig = registry._entry_point_factories\n"
        "registry._entry_point_factories = lambda: {'buggy': EntryPoint("
        "'buggy', 'violin_plugin:create', 'pytest_violin.models')}\n"
        "def pytest_unconfigure(config):\n"
        "    registry._entry_point_factories = _orig\n")
    result = pytester.runpytest("--violin-model=buggy:x", TASKS, LIMIT, "--violin-report=rep",
                                "-p", "no:randomly")
    result.assert_outcomes(passed=5, errors=1)
    assert "error while generating: KeyError" in result.stdout.str()
    results = json.loads((pytester.path / "rep" / "results.json").read_text())
    outcome = {r["sample_id"]: r["outcome"] for r in results["samples"]}
    assert outcome[target] == "error"


def test_gate_does_not_compare_errors_and_does_not_pass_silently():
    def rec(i, outcome="passed", metrics=None):
        return {"id": f"shape/circle/s{i}", "task": "shape", "variation": "circle", "outcome": outcome,
                "metrics": {"iou": 0.0, "mean": 0.0} if metrics is None else metrics,
                "extra": {"definition": f"d{i}"}}

    base = build_baseline([rec(i) for i in range(5)], suite="violin", profile="violin", seed=0,
                          adapter="oracle")
    errored = build_baseline([rec(i) for i in range(4)] + [rec(4, "error", {})], suite="violin",
                             profile="violin", seed=0, adapter="oracle")
    cmp = compare(base, errored)
    assert cmp.errored == ("shape/circle/s4",) and cmp.compared == 4
    assert not cmp.regressions and not cmp.ok
    # the error is not scored as 1.0: the group mean stays 0
    task_row = [g for g in cmp.groups if g.variation is None][0]
    assert task_row.mean.new == 0.0 and task_row.n == 4


def test_baseline_sharing_no_sample_is_an_error(pytester):
    ok = pytester.runpytest("--violin-model=oracle", "--violin-suite=violin-extra", "--violin-limit=4",
                            "--violin-save-baseline=extra.json", "-p", "no:cacheprovider")
    assert ok.ret == 0
    result = pytester.runpytest("--violin-model=oracle", TASKS, LIMIT, "--violin-baseline=extra.json",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no regression" not in result.stdout.str()


def test_baseline_not_compared_when_a_path_runs_no_violin_sample(pytester):
    pytester.makepyfile(test_team="def test_team():\n    pass\n")
    assert pytester.runpytest("--violin-model=oracle", TASKS, LIMIT, "--violin-save-baseline=b.json",
                              "-p", "no:cacheprovider").ret == 0
    pytester.makeini("[pytest]\nviolin_model = oracle\nviolin_baseline = b.json\n")
    result = pytester.runpytest("test_team.py", "-p", "no:cacheprovider")
    assert result.ret == 0
    result.assert_outcomes(passed=1)
