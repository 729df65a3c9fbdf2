"""Regression tests for bugs found in review (each fails without its fix)."""

from __future__ import annotations

import threading
import time

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import numpy as np
import pytest

from pytest_violin.errors import ManifestError, SampleIdError
from pytest_violin.execution.runner import Runner
from pytest_violin.suite import export_samples, load_manifest, load_suite
from pytest_violin.suite.ids import validate_sample_id


# --------------------------------------------------------------------------- sample ids
@pytest.mark.parametrize("bad", ["color/v1/pink/t07\n", "color\n/v1", "a/b\n"])
def test_sample_id_with_trailing_newline_is_refused(bad):
    # ``$`` in the segment pattern matched before a trailing newline, so ids
    # that become broken file names (and ids in manifests) were accepted
    with pytest.raises(SampleIdError):
        validate_sample_id(bad)


# --------------------------------------------------------------------------- settings
def test_bad_bool_ini_value_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\nviolin_model = oracle\nviolin_limit = 2\nviolin_no_cache = maybe\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "violin_no_cache" in err and "maybe" in err
    assert "Traceback" not in err + result.stdout.str()
    assert "INTERNALERROR" not in err + result.stdout.str()


def test_export_folder_named_in_ini_is_relative_to_the_ini_file(pytester, monkeypatch):
    samples = load_suite("violin-extra", limit=2)
    export_samples(samples, pytester.path / "myexport", progress=False)
    pytester.makeini("[pytest]\nviolin_model = oracle\nviolin_suite = myexport\n")
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)  # pytest run from a subdirectory finds the same files
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*2 passed*"])


# --------------------------------------------------------------------------- manifests
def test_manifest_that_is_not_utf8_names_file_and_line(tmp_path):
    samples = load_suite("violin-extra", limit=2)
    path = export_samples(samples, tmp_path / "m", progress=False)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1].replace(b'"prompt":"', b'"prompt":"\xff'))
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert info.value.line == 2
    assert f"{path}:2" in str(info.value)


def test_manifest_with_utf8_bom_loads(tmp_path):
    samples = load_suite("violin-extra", limit=2)
    path = export_samples(samples, tmp_path / "m", progress=False)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [s.id for s in load_manifest(path)] == [s.id for s in samples]


# --------------------------------------------------------------------------- runner
class _CountingModel:
    identity = "counting"
    cacheable = False

    def __init__(self):
        self.calls = []
        self._lock = threading.Lock()

    def generate(self, request):
        with self._lock:
            self.calls.append(request.sample_id)
        time.sleep(0.02)
        return np.zeros((request.height, request.width, 3), np.uint8)


def test_sample_planned_twice_does_not_drop_the_prefetch_in_between():
    # A violin:: item and a user test (violin_sample + violin_generate) of the
    # same sample put it twice in the plan. Consuming the first occurrence
    # used to cancel every prefetch up to the second one, so the samples in
    # between were generated again (paid model calls) and without prefetch.
    a, b, c, d = load_suite("violin-extra", limit=4)
    model = _CountingModel()
    runner = Runner(model, concurrency=2)
    try:
        order = [a, b, c, a, d]
        runner.plan(order)
        time.sleep(0.3)  # let the prefetch finish
        for sample in order:
            gen = runner.get(sample)
            assert gen.error is None and len(gen.images) == 1
    finally:
        runner.close()
    assert sorted(model.calls) == sorted(s.id for s in order), model.calls
    assert runner.generated == len(order)


# --------------------------------------------------------------------------- thresholds
INI_THRESHOLDS = ("[pytest]\nviolin_model = oracle\nviolin_suite = violin-extra\n"
                  "violin_thresholds =\n    count.count=0.01\n    border.mean=0.04\n")


@pytest.mark.parametrize("args", [["--violin-tasks=ratio"], ["--violin-limit=1"]])
def test_ini_threshold_of_a_task_left_out_of_the_run_is_not_an_error(pytester, args):
    # the team's ini names every task of its suite; narrowing one run with
    # --violin-tasks or a small --violin-limit must not turn that into a usage error
    pytester.makeini(INI_THRESHOLDS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--violin-limit=2", *args)
    assert result.ret == 0, result.stderr.str()


def test_threshold_of_a_task_not_in_the_suite_is_still_refused(pytester):
    pytester.makeini(INI_THRESHOLDS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--violin-tasks=ratio",
                                "--violin-threshold=paint.sd=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "paint" in result.stderr.str()
    result = pytester.runpytest("-p", "no:cacheprovider", "--violin-tasks=ratio",
                                "--violin-threshold=count.nope=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "nope" in result.stderr.str()


def test_marker_threshold_with_a_misspelt_metric_fails_the_test(pytester):
    # {"shape.dst": 0.0} used to be accepted and never applied: the test
    # passed whatever the model drew
    pytester.makepyfile(test_m='''
import pytest
@pytest.mark.violin(tasks="shape", limit=1, thresholds={"shape.dst": 0.0})
def test_typo(violin_sample, violin_generate, violin_check):
    violin_check(violin_sample, violin_generate(violin_sample))

@pytest.mark.violin(tasks="shape", limit=1, thresholds={"shape.dist": 0.01, "ratio.ratio": 0.01})
def test_good(violin_sample, violin_generate, violin_check):
    violin_check(violin_sample, violin_generate(violin_sample))
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*bad violin thresholds*shape.dst*unknown metric*dst*"])


def test_tasks_as_a_toml_list_in_pyproject(pytester):
    # violin_thresholds is a TOML list in pyproject.toml; violin_tasks written the
    # same way used to become the tasks "['ratio'" and "'count']"
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nviolin_model = "oracle"\nviolin_suite = "violin-extra"\n'
        'violin_tasks = ["ratio", "count"]\nviolin_limit = 4\n')
    result = pytester.runpytest("-p", "no:cacheprovider", "--co", "-q")
    assert result.ret == 0, result.stderr.str()
    ids = [line for line in result.stdout.lines if line.startswith("violin::")]
    assert len(ids) == 4
    assert all(i.startswith(("violin::extra/ratio/", "violin::extra/count/")) for i in ids), ids


def test_record_then_replay_from_a_subdirectory(pytester, monkeypatch):
    """`--violin-save-outputs=DIR` then `dir:DIR` work as a pair wherever pytest starts."""
    pytester.makeini("[pytest]\n")
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    args = ("-p", "no:cacheprovider", "--rootdir", str(pytester.path), "-c", str(pytester.path / "tox.ini"))
    first = pytester.runpytest("--violin-model=oracle", "--violin-limit=3", "--violin-save-outputs=rec", *args)
    first.assert_outcomes(passed=3)
    assert len(list((sub / "rec").rglob("*.png"))) == 3
    second = pytester.runpytest("--violin-model=dir:rec", "--violin-limit=3", *args)
    second.assert_outcomes(passed=3)
