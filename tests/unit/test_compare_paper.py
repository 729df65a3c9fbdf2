"""The paper's published rows: package data transcribed from violin-paper.txt.

The excerpts below are copied verbatim (tabs included) from
``violin-paper.txt`` with their line numbers, so the checks do not read the
shared reference folder.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from pytest_violin.compare import paper
from pytest_violin.compare.model import PublishedRow
from pytest_violin.compare.paper import TASK_METRICS, published_rows, rows_from_data
from pytest_violin.errors import InternalError, InvalidArgumentError, ViolinError

#: Header lines of the four tables, verbatim.
HEADERS = {
    158: "Var\tModels\trgb-ed\tlab-00\tsd\tced\thf\tgray!15color-mean",
    169: "Models\tiou\tbiou\tleak\tedge\tdist\tgray!15shape-mean",
    189: "Models\tiou\tsize\tshape\tpurity\tdist\tgray!15mask-mean",
    455: "Var\tModels\trgb-ed\tlab-00\tsd\tced\thf\tgray!15color-mean",
}

#: line -> (header line, variation of the group it sits in, the line verbatim).
EXCERPTS = {
    159: (158, "v1", "Var-1\tFLUX.1\t0.206\t0.167\t0.064\t0.006\t0.016\tgray!150.091"),
    165: (158, "v1", "\tGPT-Image-2\t0.137\t0.083\t0.006\t0.000\t0.031\tgray!150.051"),
    170: (169, None, "FLUX.2\t0.848\t0.948\t0.438\t0.131\t0.197\tgray!150.512"),
    173: (169, None, "GPT-Image-2\t0.096\t0.398\t0.087\t0.186\t0.023\tgray!150.158"),
    190: (189, None, "FLUX.1\t0.725\t0.703\t0.167\t0.172\t0.267\tgray!150.407"),
    196: (189, None, "GPT-Image-2\t0.317\t0.278\t0.003\t0.038\t0.033\tgray!150.134"),
    456: (455, "v1", "Var-1\tSANA\t0.288\t0.331\t0.232\t0.028\t0.030\tgray!150.182"),
    477: (455, "v5-zh", "\tJanus-Pro-1.5\t0.340\t0.373\t0.468\t0.025\t0.013\tgray!150.244"),
    479: (455, "v5-zh", "\tQwen-Image\t0.145\t0.178\t0.081\t0.005\t0.013\tgray!150.084"),
    491: (455, "v6-hsl", "Var-6(hsl)\tSANA\t0.339\t0.387\t0.335\t0.052\t0.027\tgray!150.228"),
    495: (455, "v6-hsl", "\tOmniGen2\t0.374\t0.394\t0.103\t0.034\t0.003\tgray!150.182"),
}

#: The paper's printed column names -> the package's metric names.
PRINTED = {"rgb-ed": "rgb_ed", "lab-00": "lab_00", "sd": "sd", "ced": "ced", "hf": "hf",
           "iou": "iou", "biou": "biou", "leak": "leak", "edge": "edge", "dist": "dist",
           "size": "size", "shape": "shape", "purity": "purity"}

#: Rows whose printed mean is not the mean of their printed metrics to rounding
#: (the paper's own numbers; kept as printed).
PAPER_MEAN_OFF = {("Table 1", "Z-Image", "v1"), ("Table 1", "Qwen-Image", "v1")}


def _by_source():
    return {row.source: row for row in published_rows()}


def _packaged_data():
    text = resources.files("pytest_violin").joinpath(paper.DATA_FILE).read_text("utf-8")
    return json.loads(text)


def test_rows_have_the_shared_type_and_the_task_metrics():
    rows = published_rows()
    assert len(rows) == 7 + 4 + 7 + 8 * 5
    for row in rows:
        assert isinstance(row, PublishedRow)
        assert list(row.metrics) == [*TASK_METRICS[row.task], "mean"]
        assert all(isinstance(v, float) and 0 <= v <= 1 for v in row.metrics.values())
        assert row.source.startswith("violin-paper.txt:")
    assert len({row.source for row in rows}) == len(rows)
    keys = Counter((row.table, row.model, row.variation) for row in rows)
    assert max(keys.values()) == 1


def test_every_table_is_present_with_its_groups():
    rows = published_rows()
    assert Counter(row.table for row in rows) == {"Table 1": 7, "Table 2": 4, "Table 3": 7,
                                                   "Table 7": 40}
    assert {row.task for row in rows if row.table == "Table 1"} == {"color"}
    assert {row.variation for row in rows if row.table == "Table 1"} == {"v1"}
    assert {row.variation for row in rows if row.table in ("Table 2", "Table 3")} == {None}
    table7 = [row for row in rows if row.table == "Table 7"]
    assert {row.task for row in table7} == {"absolute"}
    assert Counter(row.variation for row in table7) == {
        v: 5 for v in ("v1", "v2", "v3", "v4", "v5-zh", "v5-fr", "v6-rgb", "v6-hsl")}
    assert {row.model for row in table7} == {"SANA", "Janus-Pro-1.5", "FLUX.1", "Qwen-Image",
                                             "OmniGen2"}
    # Paper order: tables in order, rows in printed (line) order.
    lines = [int(row.source.split(":")[1]) for row in rows]
    assert lines == sorted(lines)


@pytest.mark.parametrize("line", sorted(EXCERPTS))
def test_values_match_the_paper_line(line):
    header_line, variation, text = EXCERPTS[line]
    header = HEADERS[header_line].split("\t")
    cells = text.split("\t")
    if header[0] == "Var":
        header, cells = header[1:], cells[1:]
    row = _by_source()[f"violin-paper.txt:{line}"]
    assert row.model == cells[0]
    assert row.variation == variation
    for name, cell in zip(header[1:-1], cells[1:-1]):
        assert row.metrics[PRINTED[name]] == float(cell), name
    assert row.metrics["mean"] == float(cells[-1].removeprefix("gray!15"))


def test_swapped_mean_captions_are_read_by_metric_columns():
    """Table 2 (mask) prints "shape-mean", Table 3 (shape) "mask-mean"."""
    assert HEADERS[169].endswith("shape-mean") and HEADERS[189].endswith("mask-mean")
    rows = _by_source()
    mask = rows["violin-paper.txt:170"]
    assert (mask.table, mask.task, mask.model) == ("Table 2", "mask", "FLUX.2")
    assert {"biou", "leak", "edge"} <= set(mask.metrics)
    # The printed mean is the mean of the row's own (mask) metric columns.
    assert mask.metrics["mean"] == pytest.approx(
        sum(mask.metrics[m] for m in TASK_METRICS["mask"]) / 5, abs=6e-4)
    shape = rows["violin-paper.txt:191"]
    assert (shape.table, shape.task, shape.model) == ("Table 3", "shape", "FLUX.2")
    assert {"size", "shape", "purity"} <= set(shape.metrics)
    assert (mask.metrics["mean"], shape.metrics["mean"]) == (0.512, 0.304)
    data = _packaged_data()
    assert data["tables"]["Table 2"]["printed_mean_label"] == "shape-mean"
    assert data["tables"]["Table 3"]["printed_mean_label"] == "mask-mean"


def test_printed_means_agree_with_their_metrics_except_two_paper_rows():
    off = set()
    for row in published_rows():
        average = sum(row.metrics[m] for m in TASK_METRICS[row.task]) / 5
        if abs(row.metrics["mean"] - average) > 1.2e-3:
            off.add((row.table, row.model, row.variation))
    assert off == PAPER_MEAN_OFF


@pytest.mark.parametrize("tables, expected", [
    ([2], {"Table 2"}), ("Table 7", {"Table 7"}), (3, {"Table 3"}), (("table 1", "2"),
                                                                      {"Table 1", "Table 2"}),
    ([], set()), (None, {"Table 1", "Table 2", "Table 3", "Table 7"}),
])
def test_tables_filter(tables, expected):
    assert {row.table for row in published_rows(tables)} == expected


@pytest.mark.parametrize("tables", [[4], "Table 9", [True], 2.0, ["x"]])
def test_unknown_table_is_an_error_naming_it(tables):
    with pytest.raises(InvalidArgumentError) as info:
        published_rows(tables)
    assert "Table 1" in str(info.value)


def test_returned_rows_do_not_share_the_cache():
    first = published_rows([1])
    first[0].metrics["mean"] = 0.999
    first.clear()
    assert published_rows([1])[0].metrics["mean"] == 0.091


def _mutated(edit):
    data = copy.deepcopy(_packaged_data())
    edit(data)
    return data


@pytest.mark.parametrize("edit, named", [
    (lambda d: d["rows"][0]["metrics"].pop("hf"), "hf"),
    (lambda d: d["rows"][0]["metrics"].update(purity=0.1), "purity"),
    (lambda d: d["rows"][0]["metrics"].update(sd=1.5), "1.5"),
    (lambda d: d["rows"][0]["metrics"].update(sd="0.1"), "'0.1'"),
    (lambda d: d["rows"][0]["metrics"].update(sd=float("nan")), "nan"),
    (lambda d: d["rows"][0].update(table="Table 5"), "Table 5"),
    (lambda d: d["rows"][0].update(task="shape"), "shape"),
    (lambda d: d["rows"][0].update(variation="v9"), "v9"),
    (lambda d: d["rows"][0].update(source="paper.txt:1"), "paper.txt:1"),
    (lambda d: d["rows"][0].update(model=""), "''"),
    (lambda d: d["rows"][0].pop("source"), "source"),
    (lambda d: d["rows"].append(copy.deepcopy(d["rows"][1])), "duplicate"),
    (lambda d: d.update(rows={}), "rows"),
    (lambda d: d.update(rows=[]), "row count"),
])
def test_invalid_data_is_refused_naming_the_value(edit, named):
    with pytest.raises(InvalidArgumentError) as info:
        rows_from_data(_mutated(edit))
    assert named in str(info.value)
    assert "expected" in str(info.value)


def test_missing_package_data_is_an_internal_error(monkeypatch):
    paper._packaged_rows.cache_clear()
    monkeypatch.setattr(paper, "DATA_FILE", "data/no_such_paper_tables.json")
    try:
        with pytest.raises(InternalError) as info:
            published_rows()
        assert "no_such_paper_tables.json" in str(info.value)
        assert isinstance(info.value, ViolinError)
    finally:
        paper._packaged_rows.cache_clear()


def test_data_ships_as_package_data():
    root = Path(paper.__file__).parents[2]
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():  # installed from a wheel: the file is there or the tests fail
        pytest.skip("not a source checkout")
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    globs = tomllib.loads(pyproject.read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    assert any(Path(paper.DATA_FILE).match(g) for g in globs["pytest_violin"])


# ------------------------------------------------------------------ what the paper's rows sit beside
def _official_run(per_task, *, scored=None, profile="violin", label="mine"):
    from pytest_violin.compare.model import Run

    total = sum(per_task.values())
    records = {f"official/x/id_{i}": {"task": "color", "variation": "v1", "outcome": "passed",
                                      "metrics": {"rgb_ed": 0.1, "lab_00": 0.1, "sd": 0.0,
                                                  "ced": 0.0, "hf": 0.0, "mean": 0.04}}
               for i in range(total if scored is None else scored)}
    dataset = {"form": "parquet", "source": "VIOLIN/violin-test.parquet", "sha256": "ab" * 32,
               "rows": total, "samples": total, "per_task": dict(per_task)}
    return Run(label=label, source="x", kind="results", records=records,
               metadata={"suite": "VIOLIN/violin-test.parquet", "profile": profile,
                         "dataset": dataset})


def _notes(*runs):
    from pytest_violin.compare.paper import comparability_notes
    from pytest_violin.compare.table import build

    return comparability_notes(build(list(runs), paper=published_rows()))


def test_a_hand_made_parquet_in_the_official_form_is_not_called_the_official_data():
    notes = _notes(_official_run({"color/v1": 4, "color/v2": 3, "shape": 3}))
    line = next(n for n in notes if n.startswith("run mine"))
    assert "not the paper's dataset" in line and "indicative only" in line
    assert "color/v1 4 of 435" in line and "mask/random 0 of 1,800" in line
    assert paper.PAPER_DATASET["source"] in line
    assert not any("on the official data" in n for n in notes)


def test_the_published_counts_are_the_paper_s_and_a_match_says_what_was_checked():
    counts = paper.PAPER_DATASET["per_task"]
    assert sum(counts.values()) == paper.PAPER_DATASET["samples"] == 7745
    assert paper.PAPER_DATASET["source"] == "violin-paper.txt:306"
    notes = _notes(_official_run(counts))
    line = next(n for n in notes if n.startswith("run mine"))
    assert "on the official data" in line and "7745 samples" in line
    assert ("sha256" in line) and ("checked" in line)
    subset = _notes(_official_run(counts, scored=100))
    line = next(n for n in subset if n.startswith("run mine"))
    assert "subset" in line and "100 of its 7,745" in line and "indicative only" in line


def test_a_published_sha256_is_compared_when_there_is_one(monkeypatch):
    counts = paper.PAPER_DATASET["per_task"]
    monkeypatch.setitem(paper.PAPER_DATASET, "sha256", "cd" * 32)
    line = next(n for n in _notes(_official_run(counts)) if n.startswith("run mine"))
    assert "not the paper's dataset" in line and "sha256 abababababab" in line


def test_a_strict_run_beside_the_paper_s_rows_is_warned():
    counts = paper.PAPER_DATASET["per_task"]
    notes = _notes(_official_run(counts, profile="strict"))
    assert any("--violin-profile=strict" in n and "not comparable" in n for n in notes)
    assert not any("--violin-profile" in n for n in _notes(_official_run(counts)))
