"""End-to-end tests of the gate plugin with pytester: baselines, gating, reports, xdist."""

from __future__ import annotations

import json
import re

import pytest

from pytest_violin.thresholds import KNOWN_METRICS

LIMIT = "--violin-limit=60"  # 12 per variation: every task shares over MIN_SHARED samples
GATED = "--violin-limit=300"  # 60 per variation: every group large enough for the gate's tests
TASKS = "--violin-tasks=color,shape"

MODELS = '''
import numpy as np


def degraded(request):
    """Every colour shifted by 40 levels: clearly worse, same layout."""
    img = request.sample.expected().astype(np.int16)
    return np.clip(img + 40, 0, 255).astype(np.uint8)


def flaky(request):
    """Fails the absolute limits for shapes only (stops -x runs early)."""
    img = request.sample.expected()
    if request.task == "shape":
        return 255 - img
    return img


def crash(request):
    """An endpoint that stops answering at the first shape: those samples end in an error."""
    if request.task == "shape":
        raise ConnectionError("the endpoint went away")
    return request.sample.expected()


def interrupt(request):
    """Like pressing Ctrl-C when the first shape is generated."""
    if request.task == "shape":
        raise KeyboardInterrupt
    return request.sample.expected()
'''

# Every limit at 1.0: the absolute thresholds pass everything, so the exit
# code is the gate's alone.
LOOSE = [f"--violin-threshold={task}.{m}=1" for task, ms in KNOWN_METRICS.items()
         if task in ("color", "shape") for m in (*ms, "mean")]


@pytest.fixture
def project(pytester):
    pytester.makepyfile(violin_models=MODELS)
    return pytester


def _baseline(project, name="base.json", *extra, limit=LIMIT):
    result = project.runpytest("--violin-model=oracle", limit, TASKS, f"--violin-save-baseline={name}",
                               "-p", "no:cacheprovider", *extra)
    assert result.ret == 0, result.stdout.str()
    return project.path / name


def test_oracle_passes_against_itself_and_a_degraded_model_fails(project):
    path = _baseline(project, limit=GATED)
    doc = json.loads(path.read_text())
    assert len(doc["samples"]) == 300 and doc["metadata"]["adapter"] == "oracle"
    assert {s["task"] for s in doc["samples"]} == {"color", "shape"}
    assert all(s["definition"] for s in doc["samples"])

    same = project.runpytest("--violin-model=oracle", GATED, TASKS, "--violin-baseline=base.json",
                             "-p", "no:cacheprovider")
    assert same.ret == 0
    same.stdout.fnmatch_lines(["*violin regression gate*",
                               "PASSED: every task and variation shown within its margins against baseline*",
                               "*within*color/v1 n=60: mean +0.0000, ruled out above +0.0000; pass rate*"])
    same.assert_outcomes(passed=301)  # the samples and violin::gate

    worse = project.runpytest("--violin-model=python:violin_models:degraded", GATED, TASKS,
                              "--violin-baseline=base.json", "-p", "no:cacheprovider", *LOOSE)
    out = worse.stdout.str()
    worse.assert_outcomes(passed=300, failed=1)  # the absolute limits pass, violin::gate fails ...
    assert worse.ret == 1  # ... and the session
    regressed = re.search(r"FAILED: the model got worse against baseline \S+: (.*)", out).group(1)
    assert "color (mean metric)" in regressed
    assert re.search(r"regressed color\s+\(n=120\)\n\s+mean metric\s+old\s+0\.0000\s+new\s+0\.\d+\s+delta "
                     r"\+0\.\d+\s+bounds \[\+", out)
    assert "FAILED violin::gate" in out


def test_a_selection_too_small_for_the_gate_is_not_shown_and_says_what_it_needs(project):
    """60 samples: variations of 12, below the 30 a test needs; nothing regressed, nothing shown within:
    the gate is not green (exit 1), names each group with the samples it needs, and
    --violin-accept-not-shown passes it, saying so."""
    _baseline(project)
    small = project.runpytest("--violin-model=oracle", LIMIT, TASKS, "--violin-baseline=base.json",
                              "-p", "no:cacheprovider", "--violin-report=rep")
    assert small.ret == 1
    small.assert_outcomes(passed=60, failed=1)
    out = small.stdout.str()
    assert "NOT SHOWN: nothing regressed against baseline" in out
    assert re.search(r"not shown\s+shape/triangle n=12: mean .*\[too few to test: 12, a test needs 30; ~30 needed\]", out)
    gate = json.loads((project.path / "rep" / "results.json").read_text())["comparison"]
    assert gate["outcome"] == "not-shown" and gate["ok"] is False and "shape/triangle" in gate["not_shown"]
    triangle = next(g for g in gate["groups"] if g["task"] == "shape" and g["variation"] == "triangle")
    assert triangle["outcome"] == "not-shown" and triangle["pass_rate"]["planned"] >= 52
    assert triangle["mean"]["ruled_out_above"] is not None
    md = (project.path / "rep" / "summary.md").read_text()
    assert "What each group ruled out" in md and "too few to test" in md
    accepted = project.runpytest("--violin-model=oracle", LIMIT, TASKS, "--violin-baseline=base.json",
                                 "-p", "no:cacheprovider", "--violin-accept-not-shown")
    assert accepted.ret == 0
    accepted.stdout.fnmatch_lines(["PASSED WITH --violin-accept-not-shown: nothing regressed*NOT SHOWN*"])


@pytest.mark.slow  # two workers start: seconds
def test_xdist_writes_the_same_baseline(project):
    single = _baseline(project, "single.json")
    result = project.runpytest_subprocess("--violin-model=oracle", LIMIT, TASKS, "-n", "2",
                                          "--violin-save-baseline=multi.json", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    a, b = single.read_text(), (project.path / "multi.json").read_text()
    created = re.compile(r'"created": "[^"]*"')
    assert created.sub("", a) == created.sub("", b)
    assert a != ""


def test_reports_escape_a_script_prompt_from_a_manifest(project):
    from pytest_violin.suite import load_suite

    sample = load_suite("violin", tasks=("color",), limit=1)[0]
    manifest = dict(sample.to_manifest())
    manifest["prompt"] = '<script>alert("pwned")</script> a pure color image'
    manifest["id"] = "custom/evil/s1"
    project.path.joinpath("manifest.jsonl").write_text(json.dumps(manifest) + "\n")
    result = project.runpytest("--violin-model=oracle", "--violin-suite=manifest.jsonl",
                               "--violin-report=out", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    html = (project.path / "out" / "report.html").read_text()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in html
    assert html.count('alt="generated"') == 1  # a passing sample: its generated thumbnail
    doc = json.loads((project.path / "out" / "results.json").read_text())
    assert doc["samples"][0]["prompt"] == manifest["prompt"]
    assert "<script>" not in (project.path / "out" / "summary.md").read_text()


@pytest.mark.parametrize("model, stop, code", [
    ("flaky", "-x", pytest.ExitCode.TESTS_FAILED),
    ("interrupt", "--violin-concurrency=1", pytest.ExitCode.INTERRUPTED),
])
def test_interrupted_run_writes_reports_but_no_baseline(project, monkeypatch, model, stop, code):
    step = project.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = project.runpytest(f"--violin-model=python:violin_models:{model}", LIMIT, TASKS, stop,
                               "--violin-report=out", "--violin-save-baseline=base.json",
                               "-p", "no:cacheprovider", no_reraise_ctrlc=True)
    assert result.ret == code
    doc = json.loads((project.path / "out" / "results.json").read_text())
    assert doc["metadata"]["interrupted"] is True
    assert 1 <= len(doc["samples"]) < 60
    assert {s["task"] for s in doc["samples"][:-1]} == {"color"}
    assert "interrupted" in (project.path / "out" / "report.html").read_text()
    assert not (project.path / "base.json").exists()
    result.stdout.fnmatch_lines(["*baseline NOT written*interrupted*"])
    assert "## pytest-violin results" in step.read_text()


def test_ini_keys(project):
    project.makeini("[pytest]\nviolin_report = ini-report\nviolin_max_regression = 0.5\n")
    result = project.runpytest("--violin-model=oracle", "--violin-limit=2", TASKS, "-p", "no:cacheprovider")
    assert result.ret == 0
    assert (project.path / "ini-report" / "report.html").exists()


@pytest.mark.parametrize("args, needle", [
    (["--violin-max-regression=abc"], "--violin-max-regression: 'abc' is invalid"),
    (["--violin-max-regression=-0.1"], "accepted: a number >= 0 and <= 1"),
    (["--violin-max-regression=nan"], "--violin-max-regression: 'nan' is invalid"),
    (["--violin-baseline=missing.json"], "does not exist"),
    (["--violin-baseline=broken.json"], "field 'schema_version'"),
    (["--violin-report=afile.txt"], "is a file"),
    (["--violin-save-baseline=adir"], "is a directory"),
])
def test_bad_values_are_usage_errors(project, args, needle):
    project.path.joinpath("broken.json").write_text(json.dumps({"format": "pytest-violin-baseline"}))
    project.path.joinpath("afile.txt").write_text("x")
    project.path.joinpath("adir").mkdir()
    result = project.runpytest(*args)  # checked at configure time, with or without a model
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert needle in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_ordinary_runs_are_untouched(pytester):
    pytester.makepyfile("def test_x():\n    assert True\n")
    result = pytester.runpytest("--violin-report=out", "-p", "no:cacheprovider")
    assert result.ret == 0
    assert not (pytester.path / "out").exists()


def test_passing_samples_get_a_few_thumbnails_per_variation(project):
    """Failures always get thumbnails; passes only the first few per (task, variation)."""
    from collections import Counter

    from pytest_violin.report.folder import PASSING_THUMBNAILS_PER_VARIATION as quota

    result = project.runpytest("--violin-model=oracle", "--violin-tasks=color", "--violin-limit=40",
                               "--violin-report=out", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    doc = json.loads((project.path / "out" / "results.json").read_text())
    per_variation = Counter(s["variation"] for s in doc["samples"])
    assert max(per_variation.values()) > quota  # the quota is exercised
    html = (project.path / "out" / "report.html").read_text()
    assert html.count('alt="generated"') == sum(min(quota, n) for n in per_variation.values())


def test_a_known_failure_is_reported_by_its_words_not_a_python_traceback(project):
    # against a baseline most samples of a real model are known failures: their reports carry the
    # sample's message (pytest would format a traceback of its own frames for every one of them)
    args = ["--violin-model=python:violin_models:flaky", "--violin-limit=12", TASKS, "-p", "no:cacheprovider"]
    assert project.runpytest(*args, "--violin-save-baseline=flaky.json").ret == 1  # its shapes fail
    # 12 samples decide no gate (refused before the run without the flag): the subject here is the items' words
    reports = project.inline_run(*args, "--violin-baseline=flaky.json",
                                 "--violin-allow-mismatch").getreports("pytest_runtest_logreport")
    known = [r for r in reports if hasattr(r, "wasxfail")]
    assert known and all(r.nodeid.startswith("violin::shape/") for r in known)
    for report in known:
        assert isinstance(report.longrepr, str) and "known failure" in report.longrepr, report.longrepr


def test_the_summary_names_known_failures_as_pytest_does(project):
    # the baseline fails every shape (recorded without a baseline: they fail, exit 1); the same model gated
    # against it: pytest xfails them, and summary.md says so in pytest's words
    recorded = project.runpytest("--violin-model=python:violin_models:flaky", LIMIT, TASKS,
                                 "--violin-save-baseline=base.json", "-p", "no:cacheprovider")
    assert recorded.ret == 1 and (project.path / "base.json").is_file()
    # (60 samples: too few to show a group within, which this test is not about)
    gated = project.runpytest("--violin-model=python:violin_models:flaky", LIMIT, TASKS,
                              "--violin-baseline=base.json", "--violin-report=rep", "-p", "no:cacheprovider",
                              "--violin-accept-not-shown")
    assert gated.ret == 0, gated.stdout.str()[-2000:]
    outcomes = gated.parseoutcomes()
    assert outcomes.get("xfailed", 0) > 0 and "failed" not in outcomes  # violin::gate passed
    facts = (project.path / "rep" / "summary.md").read_text().split("\n\n")[1]
    said = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|xfailed)\b", facts)}
    assert said == {"passed": outcomes["passed"] - 1, "failed": 0, "xfailed": outcomes["xfailed"]}, facts


def _gate_case(path):
    """``(child tags, properties)`` of violin::gate's testcase in a JUnit file."""
    import xml.etree.ElementTree as ET

    for case in ET.parse(path).getroot().iter("testcase"):
        if (case.get("classname"), case.get("name")) == ("violin", "gate"):
            return [c.tag for c in case], {p.get("name"): p.get("value") for p in case.iter("property")}
    raise AssertionError(f"no violin::gate testcase in {path}")


def _html_results(path):
    """Node id -> results of a pytest-html 4 report (its ``data-jsonblob``)."""
    import html

    blob = re.search(r'data-jsonblob="([^"]*)"', path.read_text()).group(1)
    return {k: [r.get("result") for r in v] for k, v in json.loads(html.unescape(blob))["tests"].items()}


def test_junit_and_pytest_html_carry_the_gates_outcome(project):
    """violin::gate is reported as a test is (setup, call, teardown): JUnit holds its outcome and verdict
    as properties, green or not, and pytest-html lists it, failed when the gate is not green."""
    _baseline(project, limit=GATED)
    green = project.runpytest("--violin-model=oracle", GATED, TASKS, "--violin-baseline=base.json",
                              "-p", "no:cacheprovider", "--junitxml=green.xml", "--html=green.html")
    assert green.ret == 0
    tags, props = _gate_case(project.path / "green.xml")
    assert "failure" not in tags and props["violin.gate"] == "passed"
    assert props["violin.gate.outcome"] == "within-margin" and props["violin.gate.verdict"].startswith("PASSED")
    assert _html_results(project.path / "green.html")["violin::gate"] == ["Passed"]

    small = project.runpytest("--violin-model=oracle", LIMIT, TASKS, "--violin-baseline=base.json",
                              "--violin-allow-mismatch", "-p", "no:cacheprovider", "--junitxml=small.xml",
                              "--html=small.html")
    assert small.ret == 1
    tags, props = _gate_case(project.path / "small.xml")
    assert "failure" in tags and props["violin.gate.outcome"] == "not-shown"
    assert props["violin.gate.verdict"].startswith("NOT SHOWN")
    assert _html_results(project.path / "small.html")["violin::gate"] == ["Failed"]


COUNTING = '''
from pathlib import Path


def generate(request):
    """The oracle's image, each call written down: a run refused before its first generation makes none."""
    with open(Path(__file__).with_name("calls.txt"), "a") as calls:
        calls.write(request.sample.id + "\\n")
    return request.sample.expected()
'''


def _calls(project) -> int:
    path = project.path / "calls.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("args, named, flag", [
    (["--violin-seed=7"], ["seed", "7"], True),
    (["--violin-profile=strict"], ["profile", "strict"], True),
    (["--violin-limit=10"], ["color shares", "shape shares", "20"], True),
    (["--violin-suite=manifest.jsonl", "--violin-tasks=color"], ["suite", "manifest.jsonl"], False),  # nothing shared: no option helps
    (["--violin-tasks=mask"], ["none of this run's"], False),
])
def test_a_baseline_that_cannot_be_compared_is_refused_before_the_first_generation(project, args, named, flag):
    from pytest_violin.suite import load_suite

    _baseline(project)
    sample = load_suite("violin", tasks=("color",), limit=1)[0]
    project.path.joinpath("manifest.jsonl").write_text(json.dumps({**sample.to_manifest(), "id": "own/s1"}) + "\n")
    project.makepyfile(counting=COUNTING)
    command = ["--violin-model=python:counting:generate", LIMIT, TASKS, "--violin-baseline=base.json",
               "-p", "no:cacheprovider", *args]
    result = project.runpytest(*command)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert _calls(project) == 0
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "base.json" in errors[0], result.stderr.str()
    assert all(word in errors[0] for word in named), errors[0]
    assert ("--violin-allow-mismatch" in errors[0]) is flag
    allowed = project.runpytest(*command, "--violin-allow-mismatch")
    if flag:  # the flag decides on what both hold, after the generations, as without the early check
        assert allowed.ret != pytest.ExitCode.USAGE_ERROR and _calls(project) > 0, allowed.stdout.str()
    else:
        assert allowed.ret == pytest.ExitCode.USAGE_ERROR and _calls(project) == 0


@pytest.mark.parametrize("model, stop, code", [
    ("oracle", "-x", pytest.ExitCode.TESTS_FAILED),
    ("oracle", "--maxfail=1", pytest.ExitCode.TESTS_FAILED),
    ("crash", "--violin-concurrency=1", pytest.ExitCode.INTERRUPTED),  # the runner's stop rule
    ("interrupt", "--violin-concurrency=1", pytest.ExitCode.INTERRUPTED),  # Ctrl-C
])
def test_a_stopped_run_reports_the_gate_not_judged(project, model, stop, code):
    """-x, --maxfail, the runner's stop rule and Ctrl-C end a gated run early: violin::gate is skipped in the
    terminal and JUnit, its reason "not judged: <what stopped the run>", and the exit status stays pytest's."""
    _baseline(project)
    if model == "oracle":  # a team's test that fails before the samples run
        project.makepyfile(test_team="def test_brand():\n    assert False\n")
    spec = "oracle" if model == "oracle" else f"python:violin_models:{model}"
    result = project.runpytest(f"--violin-model={spec}", LIMIT, TASKS, stop,
                               "--violin-baseline=base.json", "--junitxml=junit.xml", "-rs", "-p", "no:cacheprovider",
                               no_reraise_ctrlc=True)
    assert result.ret == code, result.stdout.str()
    import xml.etree.ElementTree as ET

    case = next(c for c in ET.parse(project.path / "junit.xml").getroot().iter("testcase")
                if (c.get("classname"), c.get("name")) == ("violin", "gate"))
    skipped = case.find("skipped")
    assert skipped is not None and case.find("failure") is None
    reason = skipped.get("message")
    assert reason.startswith("not judged: ") and len(reason) > len("not judged: "), reason
    _, props = _gate_case(project.path / "junit.xml")
    assert props["violin.gate"] == "not judged" and props["violin.gate.verdict"].startswith("NOT JUDGED: ")
    out = result.stdout.lines
    section = out.index(next(line for line in out if "violin regression gate" in line))
    assert out[section + 1].startswith("NOT JUDGED: ") and reason[len("not judged: "):] in out[section + 1]
    assert not any(line.startswith(("PASSED: ", "FAILED: ", "NOT DECIDED", "NOT SHOWN", "ratchet:"))
                   for line in out[section:])
