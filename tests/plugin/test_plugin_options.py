"""Every bad --violin-* value ends as a usage error naming the value and the accepted forms."""

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest

from pytest_violin.suite import export_samples, load_suite

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
    (["--violin-model=oracle", "--violin-concurrency=0"], ["concurrency", "from 1 to 256"]),
    (["--violin-model=oracle", "--violin-profile=loose"], ["loose", "violin, strict"]),
    (["--violin-model=oracle", "--violin-pass-rule=best"], ["best", "mean, worst"]),
    (["--violin-model=oracle", "--violin-repeats=-2"], ["repeats", "from 1 to 64"]),
    (["--violin-model=oracle", "--violin-seed=x"], ["seed", "integer"]),
    (["--violin-model=oracle", "--violin-timeout=0"], ["timeout", "> 0"]),
    (["--violin-model=oracle", "--violin-retries=-1"], ["retries", "from 0 to 100"]),
    (["--violin-model=oracle", "--violin-header=NoColonHere"], ["NoColonHere", "Name: value"]),
    (["--violin-model=oracle", "--violin-request-template=nofile.json"], ["nofile.json"]),
    # bounds: an absurd value is refused at once, never a hang or an OverflowError per sample
    (["--violin-model=oracle", "--violin-concurrency=100000000"], ["100000000", "from 1 to 256"]),
    (["--violin-model=oracle", "--violin-timeout=1e300"], ["1e300", "<= 86400"]),
    (["--violin-model=oracle", "--violin-retries=1000"], ["1000", "from 0 to 100"]),
    (["--violin-model=oracle", "--violin-max-calls=-1"], ["max-calls", "integer >= 0"]),
    (["--violin-model=oracle", "--violin-max-answer-mb=0"], ["max-answer-mb", "from 1 to 1024"]),
    (["--violin-model=oracle", "--violin-repeats=100000"], ["100000", "from 1 to 64"]),
    (["--violin-model=oracle", "--violin-limit=\u0663"], ["limit", "integer"]),  # an Arabic-Indic 3
    # the gate's margins and power
    (["--violin-model=oracle", "--violin-max-refusal-rise=2"], ["'2'", "<= 1"]),
    (["--violin-model=oracle", "--violin-power=1"], ["'1'", ">= 0.5 and < 1"]),
    (["--violin-model=oracle", "--violin-power=0.3"], ["'0.3'", ">= 0.5 and < 1"]),
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


@pytest.mark.slow  # a pytest run in a process of its own: CI's e2e step
def test_no_model_does_not_import_heavy_modules(pytester):
    pytester.makepyfile(
        "import sys\n"
        "def test_light():\n"
        "    heavy = [m for m in ('cv2', 'skimage', 'pytest_violin.suite', 'pytest_violin.metrics') "
        "if m in sys.modules]\n"
        "    assert heavy == []\n")
    result = pytester.runpytest_subprocess("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=1)


def test_cache_dir_that_is_a_file_is_a_usage_error(pytester):
    pytester.path.joinpath("afile").write_text("x")
    result = pytester.runpytest("--violin-model=oracle", "--violin-cache-dir=afile")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "afile" in result.stderr.str() and "directory" in result.stderr.str()


def test_bad_ini_boolean_names_the_ini_key(pytester):
    pytester.makeini("[pytest]\nviolin_model = oracle\nviolin_no_cache = maybe\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "violin_no_cache" in result.stderr.str() and "maybe" in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


def test_header_without_colon_is_not_echoed(pytester):
    result = pytester.runpytest("--violin-model=oracle", "--violin-header=Authorization Bearer s3cr3t-planted")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stderr.str() + result.stdout.str()
    assert "s3cr3t" not in out and "Authorization" in out


@pytest.mark.parametrize("spec", ["htp://alice:pw-planted-9@example.invalid/gen",
                                  "http//alice:pw-planted-9@example.invalid/gen",
                                  "alice:pw-planted-9@example.invalid/gen",
                                  "a1111:http//alice:pw-planted-9@example.invalid"])
def test_mistyped_scheme_does_not_print_the_url_password(pytester, spec):
    result = pytester.runpytest(f"--violin-model={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stderr.str() + result.stdout.str()
    assert "pw-planted-9" not in out and "example.invalid" in out


def test_tasks_as_a_toml_list_needs_no_deprecated_ini_type(pytester):
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nviolin_model = "oracle"\nviolin_tasks = ["color", "shape"]\n'
        'violin_limit = "4"\n')
    result = pytester.runpytest("-W", "error::pytest.PytestDeprecationWarning", "--collect-only", "-q")
    assert result.ret == 0
    ids = [line for line in result.stdout.lines if line.startswith("violin::")]
    assert ids and {i.split("::")[1].split("/")[0] for i in ids} <= {"color", "shape"}


def test_export_folder_named_in_ini_is_relative_to_the_ini_file(pytester, monkeypatch):
    samples = load_suite("violin-extra", limit=2)
    export_samples(samples, pytester.path / "myexport", progress=False)
    pytester.makeini("[pytest]\nviolin_model = oracle\nviolin_suite = myexport\n")
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)  # pytest run from a subdirectory finds the same files
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*2 passed*"])


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
