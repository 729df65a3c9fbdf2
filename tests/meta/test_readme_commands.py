"""The README's two commands work pasted into one shell; the example installs pytest-violin
from its repository.

The commands are read from README.md with the same helper ``.ci/run`` uses
(``.ci/readme_commands.py``), and run by bash with a stand-in ``python`` on
``PATH`` that records where and how it was called: the shell logic is tested
without installing anything (CI installs for real, in a new virtual
environment).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "example_suite" / ".github" / "workflows" / "obedience.yml"
BASH = shutil.which("bash")

pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

#: The project's test command, as the brief of the CI gives it.
TEST_COMMAND = "python -m pip install -e '.[test]' && python -m pytest -n 2"

#: A stand-in ``python``: appends {"cwd", "args"} to $CALLS, exits $FAKE_STATUS (default 0).
FAKE_PYTHON = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["CALLS"], "a") as fh:
    fh.write(json.dumps({{"cwd": os.getcwd(), "args": sys.argv[1:]}}) + "\\n")
sys.exit(int(os.environ.get("FAKE_STATUS", "0")))
"""


def _load_helper():
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


helper = _load_helper()


@pytest.fixture
def clone(tmp_path):
    """A directory laid out like a clone (root and example_suite/) and a recording ``python``."""
    root = tmp_path / "clone"
    (root / "example_suite").mkdir(parents=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    return root, bindir, tmp_path / "calls.jsonl"


def _bash(script: str, clone, **env) -> tuple[subprocess.CompletedProcess, list]:
    root, bindir, calls = clone
    full_env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "CALLS": str(calls),
                "HOME": str(root), **env}
    result = subprocess.run([BASH, "--noprofile", "--norc", "-c", script], cwd=root, env=full_env,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    recorded = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return result, [(Path(c["cwd"]).relative_to(root).as_posix(), c["args"]) for c in recorded]


README_CALLS = [
    (".", ["-m", "pip", "install", "-e", "."]),
    ("example_suite", ["-m", "pytest"]),
    (".", ["-m", "pip", "install", "-e", ".[test]"]),
    (".", ["-m", "pytest", "-n", "2"]),
]


def test_readme_has_the_two_commands_and_the_second_is_the_test_command():
    blocks = helper.readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 2
    assert blocks[1] == TEST_COMMAND


def test_readme_commands_pasted_into_one_shell_run_where_they_should(clone):
    """Pasted as-is (no guard): the example runs in example_suite/, the tests in the root."""
    blocks = helper.readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    result, calls = _bash("\n".join(blocks) + "\n", clone)
    assert result.returncode == 0, result.stderr
    assert calls == README_CALLS


def test_ci_script_of_the_readme_commands_passes_and_stops_at_a_failure(clone):
    blocks = helper.readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    result, calls = _bash(helper.paste_script(blocks), clone)
    assert result.returncode == 0, result.stderr
    assert calls == README_CALLS
    clone[2].unlink()
    result, calls = _bash(helper.paste_script(blocks), clone, FAKE_STATUS="3")
    assert result.returncode == 3 and calls == README_CALLS[:1]  # pip failed: nothing else ran


def test_ci_script_refuses_a_command_that_leaves_the_shell_elsewhere(clone):
    # the README's old first command: the second then installed example_suite/ (UNKNOWN-0.0.0)
    old = ["python -m pip install -e . && cd example_suite && python -m pytest", TEST_COMMAND]
    result, calls = _bash(helper.paste_script(old), clone)
    assert result.returncode == 1
    assert "README command 1 left the shell" in result.stderr
    assert calls == README_CALLS[:2]


@pytest.mark.parametrize("readme, count", [
    ("# x\n\n## Quick start\n\n```bash\npytest\n```\n", None),
    ("## Two commands\n\n```bash\na\n```\n\n## Next\n\n```bash\nb\n```\n", 1),
    ("## Two commands\n\n```bash\na\n```\n```bash\nb\n```\n```bash\nc\n```\n", 3),
])
def test_a_malformed_command_section_is_refused(readme, count):
    with pytest.raises(helper.ReadmeCommandsError) as info:
        helper.readme_commands(readme)
    assert ("no '## Two commands'" in str(info.value)) if count is None else \
        (f"holds {count} bash blocks" in str(info.value))


def test_ci_runs_the_readme_commands_from_the_readme():
    run = (ROOT / ".ci" / "run").read_text()
    assert ".ci/readme_commands.py --script" in run
    assert "-m venv" in run and "constraints-min.txt" in run


# ---------------------------------------------------------------- the example's install
def _install_step():
    yaml = pytest.importorskip("yaml")
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["obedience"]["steps"]
    (step,) = [s for s in steps if "pip install" in s.get("run", "")]
    return step


def test_workflow_installs_pytest_violin_from_its_git_repository(clone):
    step = _install_step()
    env = {k: "" if "${{" in str(v) else str(v) for k, v in step.get("env", {}).items()}
    # unset: the job fails at once, saying what to set; nothing is installed from an index
    result, calls = _bash(step["run"], clone, **env)
    assert result.returncode == 1 and calls == []
    assert "::error::" in result.stdout and "PYTEST_VIOLIN_GIT" in result.stdout
    # set: pip gets a direct reference to the repository, never a bare package name
    env["PYTEST_VIOLIN_GIT"] = "https://example.invalid/org/pytest-violin@v0.1.0"
    result, calls = _bash(step["run"], clone, **env)
    assert result.returncode == 0, result.stderr
    assert calls == [(".", ["-m", "pip", "install",
                            "pytest-violin[test] @ git+https://example.invalid/org/pytest-violin@v0.1.0"])]


def test_the_workflow_requirement_names_this_project_and_its_test_extra():
    """What the workflow hands pip is this project (not an UNKNOWN one) with the test extra."""
    from packaging.requirements import Requirement

    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    step = _install_step()
    line = next(part for part in step["run"].splitlines() if "pip install" in part)
    text = line.split("pip install", 1)[1].strip().strip('"').replace(
        "${PYTEST_VIOLIN_GIT}", "https://example.invalid/org/pytest-violin@v0.1.0")
    req = Requirement(text)
    assert req.name == project["name"] == "pytest-violin"
    assert req.extras == {"test"} and "test" in project["optional-dependencies"]
    assert req.url == "git+https://example.invalid/org/pytest-violin@v0.1.0"
