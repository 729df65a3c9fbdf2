"""Explicit paths narrow a run: the built-in items are collected only when asked for."""

import pytest

TEAM_TEST = "def test_brand():\n    pass\n"


@pytest.fixture
def project(pytester):
    pytester.makepyfile(test_brand=TEAM_TEST)
    pytester.makeini("[pytest]\nviolin_model = oracle\nviolin_limit = 3\n")
    return pytester


def _collected(result):
    return [line for line in result.stdout.lines if "::" in line and not line.startswith(("=", " "))]


def test_no_path_runs_builtin_selection_and_team_tests(project):
    result = project.runpytest("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=4)


def test_a_file_path_runs_that_file_only(project):
    # an ini model and limit choose *which* built-in items run, never *whether*
    result = project.runpytest("test_brand.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["violin: built-in samples not collected: paths on the command line*"])


def test_the_rootdir_as_path_still_runs_everything(project):
    result = project.runpytest(str(project.path), "-q")
    result.assert_outcomes(passed=4)


def test_testpaths_as_path_still_runs_everything(pytester):
    pytester.mkdir("tests")
    pytester.path.joinpath("tests", "test_brand.py").write_text(TEAM_TEST)
    pytester.makeini("[pytest]\nviolin_model = oracle\nviolin_limit = 2\ntestpaths = tests\n")
    result = pytester.runpytest("tests", "-q")
    result.assert_outcomes(passed=3)


@pytest.mark.parametrize("option", ["--violin-limit=2", "--violin-tasks=shape", "--violin-suite=violin-extra"])
def test_selection_on_the_command_line_adds_the_suite_to_a_path(project, option):
    extra = ["--violin-limit=2"] if option != "--violin-limit=2" else []
    result = project.runpytest("test_brand.py", option, *extra, "-q")
    result.assert_outcomes(passed=3)


def test_violin_node_ids_select_single_samples(project):
    ids = [line.split("violin::")[1] for line in
           project.runpytest("--collect-only", "-q").stdout.lines if line.startswith("violin::")]
    assert len(ids) == 3
    result = project.runpytest(f"violin::{ids[1]}", "-q")
    result.assert_outcomes(passed=1)
    # beside a file, and outside the ini limit's selection
    other = project.runpytest("--violin-limit=50", "--collect-only", "-q").stdout.lines
    far = [line.split("violin::")[1] for line in other if line.startswith("violin::")][-1]
    assert far not in ids
    result = project.runpytest("test_brand.py", f"violin::{far}", "-q")
    result.assert_outcomes(passed=2)
    result = project.runpytest("test_brand.py", "violin", "-q")
    result.assert_outcomes(passed=4)


def test_unknown_violin_node_id_is_a_usage_error(project):
    result = project.runpytest("violin::color/v9/nope/t00")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "violin::color/v9/nope/t00" in result.stderr.str()


def test_keyword_and_deselect_still_apply(project):
    ids = [line.split("violin::")[1] for line in
           project.runpytest("--collect-only", "-q").stdout.lines if line.startswith("violin::")]
    result = project.runpytest("-q", f"--deselect=violin::{ids[0]}")
    result.assert_outcomes(passed=3, deselected=1)


@pytest.mark.slow  # two workers start: seconds
def test_path_scoping_under_xdist(project):
    pytest.importorskip("xdist")
    # workers get the same command line and reach the same decision
    result = project.runpytest("test_brand.py", "-n", "2", "-q")
    result.assert_outcomes(passed=1)


def test_a_project_folder_called_violin_is_a_path(project):
    folder = project.mkdir("violin")
    folder.joinpath("test_in_folder.py").write_text(TEAM_TEST)
    result = project.runpytest("violin", "-q")
    result.assert_outcomes(passed=1)
