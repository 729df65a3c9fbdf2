"""Every bad --violin-* value ends as a usage error naming the value and the accepted forms."""

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest

BAD = [
    (["--violin-model=nosuchscheme:x"], ["nosuchscheme", "accepted"]),
    (["--violin-model=dir:does-not-exist"], ["does-not-exist", "dir:PATH"]),
    (["--violin-model=python:no_such_mod_q:f"], ["no_such_mod_q", "python:MODULE:ATTR"]),
    (["--violin-model=oracle", "--violin-tasks=color,paint"], ["paint", "color"]),
    (["--violin-model=oracle", "--violin-threshold=color.sd=abc"], ["color.sd=abc", "TASK.METRIC=VALUE"]),
    (["--violin-model=oracle", "--violin-threshold=color.nope=1"], ["nope", "rgb_ed"]),
    (["--violin-model=oracle", "--violin-threshold=colorsd"], ["colorsd", "TASK.METRIC=VALUE"]),
    (["--violin-model=oracle", "--violin-suite=no-such-suite"], ["no-such-suite"]),
    (["--violin-model=oracle", "--violin-suite=missing/manifest.jsonl"], ["missing/manifest.jsonl"]),
    (["--violin-model=oracle", "--violin-limit=ten"], ["'ten'", "integer"]),
    (["--violin-model=oracle", "--violin-limit=0"], ["'0'", "integer >= 1"]),
    (["--violin-model=oracle", "--violin-concurrency=0"], ["concurrency", "integer >= 1"]),
    (["--violin-model=oracle", "--violin-profile=loose"], ["loose", "violin, strict"]),
    (["--violin-model=oracle", "--violin-pass-rule=best"], ["best", "mean, worst"]),
    (["--violin-model=oracle", "--violin-repeats=-2"], ["repeats", "integer >= 1"]),
    (["--violin-model=oracle", "--violin-seed=x"], ["seed", "integer"]),
    (["--violin-model=oracle", "--violin-timeout=0"], ["timeout", "> 0"]),
    (["--violin-model=oracle", "--violin-retries=-1"], ["retries", "integer >= 0"]),
    (["--violin-model=oracle", "--violin-header=NoColonHere"], ["NoColonHere", "Name: value"]),
    (["--violin-model=oracle", "--violin-request-template=nofile.json"], ["nofile.json"]),
]


@pytest.mark.parametrize("args, fragments", BAD, ids=[" ".join(a[-1:]) for a, _ in BAD])
def test_bad_option_is_a_usage_error(pytester, args, fragments):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ERROR:" in err and "Traceback" not in err + result.stdout.str()
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_bad_ini_value_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\nviolin_model = oracle\nviolin_limit = many\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "many" in result.stderr.str()


def test_header_value_is_not_echoed(pytester):
    result = pytester.runpytest("--violin-model=oracle", "--violin-header=Bad Name: topsecretvalue")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "topsecretvalue" not in result.stderr.str() + result.stdout.str()


def test_no_model_changes_nothing(pytester):
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1)
    assert "violin" not in result.stdout.str()


def test_no_model_does_not_import_heavy_modules(pytester):
    pytester.makepyfile(
        "import sys\n"
        "def test_light():\n"
        "    heavy = [m for m in ('cv2', 'skimage', 'pytest_violin.suite', 'pytest_violin.metrics') "
        "if m in sys.modules]\n"
        "    assert heavy == []\n")
    result = pytester.runpytest_subprocess("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
