"""The official data through the plugin: the oracle passes, wrong answers score as the reference.

The held-out mini dataset (``make_rows(seed=3)``) was never run through the
plugin while this was written; ``tests/data/official-reference/reference.json``
holds the numbers the authors' reference scripts give on its answer files
(how they were produced: its ``source``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow.parquet")  # the hub extra; the minimum-versions step lacks it

import _official_data as od  # noqa: E402

REFERENCE = json.loads((Path(__file__).parents[1] / "data" / "official-reference" /
                        "reference.json").read_text())
SEED = REFERENCE["seed"]
TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The held-out dataset as a parquet (+ metadata), a converted folder and a hub cache, once."""
    root = tmp_path_factory.mktemp("official")
    rows = od.make_rows(SEED)
    parquet = od.write_parquet(root / "VIOLIN" / "violin-test.parquet", rows, row_group_size=5)
    od.write_metadata(root / "VIOLIN" / "metadata", rows)
    od.write_converted(root / "benchmark", rows)
    od.write_hub_cache(root / "hf" / "hub", "Perkzi/VIOLIN", parquet, root / "VIOLIN" / "metadata")
    for model, make in (("wrong", od.wrong_answer), ("rgba", od.rgba_answer)):
        od.write_answers(root / "answers" / model, rows, model, make)
    od.write_answers(root / "unpadded", rows, "wrong", od.wrong_answer, padded=False)
    return root


@pytest.fixture
def data(pytester, monkeypatch, made):
    """``made``'s folders linked into the pytester folder; the extraction cache is shared."""
    monkeypatch.setenv("VIOLIN_OFFICIAL_CACHE", str(made / "official-cache"))
    for name in ("VIOLIN", "benchmark", "hf", "answers", "unpadded"):
        (pytester.path / name).symlink_to(made / name)
    return made


def _results(pytester, name="rep"):
    return json.loads((pytester.path / name / "results.json").read_text())


@pytest.mark.parametrize("form", ["VIOLIN/violin-test.parquet", "benchmark", "hf:Perkzi/VIOLIN"])
def test_the_oracle_passes_every_sample_of_every_form(pytester, data, monkeypatch, form):
    if form.startswith("hf:"):
        pytest.importorskip("huggingface_hub")
        monkeypatch.setenv("HF_HUB_CACHE", str(data / "hf" / "hub"))
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = pytester.runpytest("--violin-model=oracle", f"--violin-suite={form}",
                                "--violin-report=rep", "-p", "no:randomly")
    result.assert_outcomes(passed=13)
    result.stdout.fnmatch_lines(["violin: official data * 13 rows, 13 samples loaded: color/v1 2, "
                                 "color/v2 2, shape 3, mask/inpainting 2, mask/outpainting 2, "
                                 "mask/random 2"])
    meta = _results(pytester)["metadata"]
    assert meta["dataset"]["rows"] == 13 and meta["dataset"]["samples"] == 13
    assert meta["dataset"]["form"] == {"V": "parquet", "b": "folder", "h": "hub"}[form[0]]


@pytest.mark.parametrize("model", ["wrong", "rgba"])
def test_wrong_and_rgba_answers_score_as_the_reference_scripts_score_them(pytester, data, model):
    result = pytester.runpytest(f"--violin-model=dir:answers/{model}",
                                "--violin-suite=VIOLIN/violin-test.parquet", "--violin-report=rep",
                                "-p", "no:randomly")
    result.assert_outcomes(failed=13)
    got = {s["sample_id"]: s["metrics"] for s in _results(pytester)["samples"]}
    expected = REFERENCE["models"][model]
    assert set(got) == set(expected)
    for sid, metrics in expected.items():
        assert set(got[sid]) == set(metrics), sid
        for name, value in metrics.items():
            assert abs(got[sid][name] - value) <= TOLERANCE, (sid, name, got[sid][name], value)


def test_strict_reads_the_rgba_answer_its_own_way(pytester, data):
    pytester.runpytest("--violin-model=dir:answers/rgba", "--violin-suite=VIOLIN/violin-test.parquet",
                       "--violin-report=rep", "--violin-profile=strict", "--violin-tasks=color")
    got = {s["sample_id"]: s["metrics"] for s in _results(pytester)["samples"]}
    ref = REFERENCE["models"]["rgba"]
    # composited over black, not alpha dropped: the left half is black, not (250, 250, 250)
    assert all(abs(got[sid]["rgb_ed"] - ref[sid]["rgb_ed"]) > 0.01 for sid in got)


def test_unpadded_answer_names_are_found_too(pytester, data):
    pytester.runpytest("--violin-model=dir:unpadded", "--violin-suite=benchmark",
                       "--violin-report=rep", "--violin-tasks=shape")
    got = {s["sample_id"]: s["metrics"] for s in _results(pytester)["samples"]}
    assert len(got) == 3
    for sid, metrics in got.items():
        assert abs(metrics["mean"] - REFERENCE["models"]["wrong"][sid]["mean"]) <= TOLERANCE


def test_the_data_identity_is_in_the_baseline_and_other_data_is_named(pytester, data):
    pytester.runpytest("--violin-model=oracle", "--violin-suite=VIOLIN/violin-test.parquet",
                       "--violin-save-baseline=official.json")
    doc = json.loads((pytester.path / "official.json").read_text())
    sha = od.hashlib.sha256((data / "VIOLIN" / "violin-test.parquet").read_bytes())
    assert doc["metadata"]["dataset"]["sha256"] == sha.hexdigest()
    pytester.runpytest("--violin-model=oracle", "--violin-limit=6", "--violin-save-baseline=builtin.json")
    # refused before the first generation (exit 4), the other data named
    result = pytester.runpytest("--violin-model=oracle", "--violin-suite=VIOLIN/violin-test.parquet",
                                "--violin-baseline=builtin.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*baseline and run are on different data: baseline suite 'violin' "
                                 "(not the official data), run official data sha256 "
                                 f"{sha.hexdigest()[:16]} (13 rows)*"])


def test_metadata_elsewhere_and_a_bad_metadata_option(pytester, data):
    import shutil

    (pytester.path / "VIOLIN").unlink()
    (pytester.path / "VIOLIN").mkdir()
    shutil.copy(data / "VIOLIN" / "violin-test.parquet", pytester.path / "VIOLIN")
    shutil.copytree(data / "VIOLIN" / "metadata", pytester.path / "prompts")
    result = pytester.runpytest("--violin-model=oracle", "--violin-suite=VIOLIN/violin-test.parquet",
                                "--violin-metadata=prompts")
    result.assert_outcomes(passed=13)
    result = pytester.runpytest("--violin-model=oracle", "--violin-suite=VIOLIN/violin-test.parquet",
                                "--violin-metadata=nowhere")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--violin-metadata='nowhere'*is not a directory*"])
    result = pytester.runpytest("--violin-model=oracle", "--violin-suite=VIOLIN/violin-test.parquet")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--violin-suite='VIOLIN/violin-test.parquet'*no prompt for id_1*"])


def test_offline_and_not_cached_is_a_usage_error(pytester, monkeypatch):
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(pytester.path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = pytester.runpytest("--violin-model=oracle", "--violin-suite=hf:Perkzi/VIOLIN")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*hf:Perkzi/VIOLIN*not in the Hugging Face cache*HF_HUB_OFFLINE*"])


def test_a_missing_extra_is_a_usage_error_naming_it(pytester, data, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    result = pytester.runpytest("--violin-model=oracle", "--violin-suite=VIOLIN/violin-test.parquet")
    assert result.ret == 4
    line = next(x for x in result.stderr.lines if "needs pyarrow" in x)  # one line
    assert "--violin-suite='VIOLIN/violin-test.parquet'" in line
    assert "pip install 'pytest-violin[hub]'" in line


def test_paper_rows_say_where_they_were_measured_and_a_builtin_run_that_it_was_not(pytester, data):
    result = pytester.runpytest("--violin-model=oracle", "--violin-limit=6", "--violin-compare=paper",
                                "--violin-report=builtin")
    result.stdout.fnmatch_lines(["*paper rows: published values, measured on the official Violin "
                                 "samples (Hugging Face dataset Perkzi/VIOLIN*",
                                 "*run oracle did not use the paper's samples (suite 'violin'*"])
    summary = (pytester.path / "builtin" / "summary.md").read_text()
    html = (pytester.path / "builtin" / "report.html").read_text()
    assert "did not use the paper&#x27;s samples" in html or "did not use the paper's samples" in html
    assert "run oracle did not use the paper's samples" in summary.replace("\\", "")
    result = pytester.runpytest("--violin-model=oracle", "--violin-suite=VIOLIN/violin-test.parquet",
                                "--violin-compare=paper")
    # 13 rows in the official format are not the paper's 7,745: the identity decides, not the form
    result.stdout.fnmatch_lines(["*run oracle: on data in the official format that is not the "
                                 "paper's dataset (*color/v1 2 of 435*"])
    result.stdout.no_fnmatch_line("*did not use the paper's samples*")
    result.stdout.no_fnmatch_line("*on the official data*")


def test_latex_states_it_under_every_table(tmp_path):
    from pytest_violin.compare.formats import render
    from pytest_violin.compare.model import Run
    from pytest_violin.compare.paper import published_rows
    from pytest_violin.compare.table import build

    records = {f"color/v1/x/t{i}": {"task": "color", "variation": "v1", "outcome": "passed",
                                    "metrics": {"rgb_ed": 0.1, "lab_00": 0.1, "sd": 0.0, "ced": 0.0,
                                                "hf": 0.0, "mean": 0.04}} for i in range(3)}
    run = Run(label="mine", source="x", kind="results", metadata={"suite": "violin"},
              records=records)
    text = render(build([run], paper=published_rows()), "latex")
    assert text.count("did not use the paper's samples") >= 1
    assert r"\par\footnotesize $^\dagger$ paper rows: published values" in text


@pytest.mark.slow  # two worker processes: ~30 s on a busy 2-core machine
def test_under_xdist_the_controller_records_and_prints_the_data_too(pytester, data):
    pytest.importorskip("xdist")
    result = pytester.runpytest_subprocess("--violin-model=oracle", "-n", "2", "-p", "no:randomly",
                                           "--violin-suite=VIOLIN/violin-test.parquet",
                                           "--violin-report=rep")
    result.assert_outcomes(passed=13)
    result.stdout.fnmatch_lines(["violin: official data * 13 rows, 13 samples loaded*"])
    assert _results(pytester)["metadata"]["dataset"]["per_task"]["mask/random"] == 2


def test_compare_scores_a_folder_of_the_authors_answers_as_the_reference(pytester, data, monkeypatch):
    from pytest_violin.compare.runs import load_run

    monkeypatch.chdir(pytester.path)
    run = load_run("dir:answers/rgba", suite="VIOLIN/violin-test.parquet")
    expected = REFERENCE["models"]["rgba"]
    assert set(run.records) == set(expected)
    for sid, rec in run.records.items():
        for name, value in expected[sid].items():
            assert abs(rec["metrics"][name] - value) <= TOLERANCE, (sid, name)
