"""``python -m pytest_violin compare`` and ``--violin-compare``: loading, building, rendering.

Two real local runs are made once per module (the oracle, and a noisy
``python:`` model) with ``--violin-report``; the tests compare them.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import sys

import pytest

from pytest_violin.__main__ import main
from pytest_violin.compare import runs as runs_mod
from pytest_violin.compare.formats import render
from pytest_violin.compare.runs import load_run
from pytest_violin.compare.table import build
from pytest_violin.errors import InvalidArgumentError, ViolinError

LIMIT = "--violin-limit=12"

MODELS = '''
import numpy as np


def noisy(request):
    """The expected image plus seeded noise: a little worse than the oracle."""
    img = request.sample.expected().astype(np.int16)
    rng = np.random.default_rng(sum(map(ord, request.sample_id)))
    return np.clip(img + rng.integers(-30, 31, img.shape), 0, 255).astype(np.uint8)
'''


def _pytest(cwd, *args):
    """One real plugin run in ``cwd``, in this process (a subprocess paid 3-10 s of start-up).

    As pytester's in-process runs do: from ``cwd`` with it first on ``sys.path``;
    afterwards the modules imported from ``cwd`` are dropped and the outer
    ``conftest`` module, the path and the working directory are put back.
    """
    before_path, before_conftest = list(sys.path), sys.modules.get("conftest")
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        mp.delenv("PYTEST_ADDOPTS", raising=False)
        mp.setattr(sys, "stdout", out)
        try:
            # no:unraisableexception: its gc.collect() at the end costs ~0.5 s in this big process
            code = pytest.main(["-p", "no:cacheprovider", "-q", "-p", "no:randomly", "-p", "no:xdist",
                                "-p", "no:unraisableexception", f"--rootdir={cwd}", LIMIT, *args])
        finally:
            sys.path[:] = before_path
            for name, mod in list(sys.modules.items()):
                if str(getattr(mod, "__file__", None) or "").startswith(str(cwd)):
                    del sys.modules[name]
            if before_conftest is not None:
                sys.modules["conftest"] = before_conftest
    assert code in (0, 1), out.getvalue()[-3000:]
    return out.getvalue()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Folder with ``oracle/`` and ``noisy/`` report folders and ``noisy.json`` baseline."""
    root = tmp_path_factory.mktemp("runs")
    (root / "violin_models.py").write_text(MODELS)
    (root / "conftest.py").write_text("")
    _pytest(root, "--violin-model=oracle", "--violin-report=oracle")
    _pytest(root, "--violin-model=python:violin_models:noisy", "--violin-report=noisy",
            "--violin-save-baseline=noisy.json")
    return root


@pytest.fixture
def two(made):
    return [load_run(str(made / "oracle")), load_run(str(made / "noisy" / "results.json"))]


def _copy_results(made, tmp_path, name, edit):
    doc = json.loads((made / "noisy" / "results.json").read_text())
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


# --------------------------------------------------------------------------- loading


def test_a_report_folder_a_results_json_and_a_baseline_load_with_their_adapter_label(made):
    oracle = load_run(str(made / "oracle"))
    noisy = load_run(str(made / "noisy" / "results.json"))
    base = load_run(str(made / "noisy.json"), label="prod")
    assert (oracle.label, oracle.kind, len(oracle.records)) == ("oracle", "results", 12)
    assert noisy.label == "python:violin_models:noisy"
    assert (base.label, base.kind) == ("prod", "baseline")
    assert set(base.records) == set(noisy.records)
    assert oracle.metadata["fingerprint"] == base.metadata["fingerprint"]


def test_bad_runs_are_refused_naming_the_file(made, tmp_path, monkeypatch):
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    (tmp_path / "empty").mkdir()
    for spec, needle in [(tmp_path / "bad.json", "not valid JSON"),
                         (tmp_path / "other.json", "neither"),
                         (tmp_path / "empty", "no results.json"),
                         (tmp_path / "missing", "no such file"),
                         (f"dir:{tmp_path / 'empty'}", "needs --suite")]:
        with pytest.raises(ViolinError, match=needle) as info:
            load_run(str(spec))
        assert str(spec).removeprefix("dir:") in str(info.value)
    no_id = _copy_results(made, tmp_path, "noid.json", lambda d: d["samples"][0].pop("sample_id"))
    with pytest.raises(InvalidArgumentError, match="sample_id"):
        load_run(str(no_id))
    monkeypatch.setattr(runs_mod, "MAX_JSON_BYTES", 1000)
    with pytest.raises(InvalidArgumentError, match="larger than") as info:
        load_run(str(made / "oracle"))
    assert "results.json" in str(info.value)


def test_a_dir_run_is_scored_on_the_fly_with_a_progress_bar(tmp_path):
    from pytest_violin.imaging import encode_png
    from pytest_violin.models.directory import output_path
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", tasks=["color", "shape"], limit=6)
    for s in samples[:4]:  # two samples have no saved image: left out of the run
        path = output_path(tmp_path / "imgs", s.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode_png(s.expected()))
    bar = io.StringIO()
    run = load_run(f"dir:{tmp_path / 'imgs'}", suite=samples, progress=bar)
    assert (run.kind, run.label, len(run.records)) == ("dir", "imgs", 4)
    assert all(r["outcome"] == "passed" and r["metrics"]["mean"] == 0 for r in run.records.values())
    assert "6/6" in bar.getvalue().replace(" ", "")


# --------------------------------------------------------------------------- building


def test_rows_follow_the_paper_layout_with_pass_rate_n_and_pairwise_intervals(two):
    comp = build(two, resamples=200)
    assert comp.shared == 12 and comp.dropped == {r.label: 0 for r in two}
    tasks = list(dict.fromkeys(r.task for r in comp.rows))
    for task in tasks:
        rows = [r for r in comp.rows if r.task == task]
        assert rows[-1].variation is None  # the task's row closes its block
        assert {r.label for r in rows} == {r.label for r in two}
    total = [r for r in comp.rows if r.variation is None and r.label == "oracle"]
    assert sum(r.n for r in total) == 12 and all(r.pass_rate == 1.0 for r in total)
    assert {p.task for p in comp.pairs} == set(tasks)
    for p in comp.pairs:  # noisy minus oracle: worse (positive), stated as significant
        assert (p.a, p.b) == ("oracle", "python:violin_models:noisy")
        assert p.delta > 0 and p.ci_low <= p.delta <= p.ci_high


def test_a_run_against_itself_is_stated_not_significant(made):
    runs = [load_run(str(made / "oracle"), label="a"), load_run(str(made / "oracle"), label="b|c")]
    comp = build(runs, resamples=50)
    assert comp.pairs and not any(p.significant for p in comp.pairs)
    md = render(comp, "md")
    assert "b\\|c - a on color mean: +0.000 [+0.000, +0.000]" in md
    assert md.count("not significant") == len(comp.pairs)


def test_only_shared_samples_are_compared_and_the_dropped_ones_are_stated(made, two, tmp_path):
    short = _copy_results(made, tmp_path, "short.json", lambda d: d["samples"].__delitem__(slice(0, 3)))
    runs = [two[0], load_run(str(short), label="short")]
    comp = build(runs, resamples=100)
    assert comp.shared == 9 and comp.dropped == {"oracle": 3, "short": 0}
    assert comp.dropped_reasons["oracle"] == "not held by short"
    text = render(comp, "md")
    assert "oracle: 3 samples dropped (not held by short)" in text
    every = build(runs, all_samples=True, resamples=100)
    assert sum(r.n for r in every.rows if r.label == "oracle" and r.variation is None) == 12


def test_a_run_of_another_profile_is_refused_unless_allowed(made, two, tmp_path):
    strict = _copy_results(made, tmp_path, "strict.json",
                           lambda d: d["metadata"].__setitem__("profile", "strict"))
    runs = [two[0], load_run(str(strict), label="strict run")]
    with pytest.raises(InvalidArgumentError, match="profile differs") as info:
        build(runs)
    assert "strict" in str(info.value) and "--allow-mismatch" in str(info.value)
    comp = build(runs, allow_mismatch=True, resamples=100)
    assert any("profile" in m for m in comp.mismatches)
    assert "warning: profile differs" in render(comp, "terminal")


def _subset(made, tmp_path, name, keep, edit=None):
    """The noisy run's results.json cut to its first ``keep`` samples, with the fingerprint the
    plugin writes for a run holding only those (a sequential gate's, a selection's)."""
    from pytest_violin.gating.records import suite_fingerprint

    def cut(doc):
        del doc["samples"][keep:]
        if edit is not None:
            edit(doc["samples"])
        doc["metadata"]["fingerprint"] = suite_fingerprint(
            (r["sample_id"], r["extra"].get("definition", "")) for r in doc["samples"])

    return _copy_results(made, tmp_path, name, cut)


def test_a_run_of_a_subset_of_the_samples_is_compared_on_the_shared_ones(made, two, tmp_path, capsys):
    full = two[1]
    sub = load_run(str(_subset(made, tmp_path, "seq.json", 5)), label="seq")
    assert sub.metadata["fingerprint"] != full.metadata["fingerprint"]
    comp = build([full, sub], resamples=50)
    assert comp.shared == 5 and not comp.mismatches
    (note,) = comp.notes
    assert "seq holds a subset of the samples of python:violin_models:noisy" in note
    assert "the 5 samples they share are defined alike, so those are compared" in note
    for fmt in ("terminal", "md"):
        assert "holds a subset" in render(comp, fmt)
    assert main(["compare", str(made / "noisy"), str(tmp_path / "seq.json"), "--label", "full",
                 "--label", "seq"]) == 0
    out = capsys.readouterr().out
    assert "seq holds a subset of the samples of full" in out and "full: 7 samples dropped" in out
    # a baseline file holds the same definitions (its samples' "definition")
    base = load_run(str(made / "noisy.json"), label="base")
    assert build([base, sub], resamples=50).notes


def test_a_subset_whose_samples_are_defined_differently_is_still_refused(made, two, tmp_path):
    def redefine(samples):
        samples[2]["extra"]["definition"] = "0" * 32

    changed = load_run(str(_subset(made, tmp_path, "changed.json", 5, redefine)), label="changed")
    with pytest.raises(InvalidArgumentError, match="fingerprint differs") as info:
        build([two[1], changed])
    assert "1 of the 5 samples the runs share are defined differently" in str(info.value)

    def forget(samples):
        for r in samples:
            r["extra"].pop("definition")

    bare = load_run(str(_subset(made, tmp_path, "bare.json", 5, forget)), label="bare")
    with pytest.raises(InvalidArgumentError, match="bare records no sample definitions"):
        build([two[1], bare])


# --------------------------------------------------------------------------- formats


def test_markdown_tables_are_well_formed(two):
    text = render(build(two, resamples=100), "md")
    tables = re.findall(r"(?:^\|.*\|$\n?)+", text, flags=re.M)
    assert len(tables) == 3 + 1  # one per task, then the failure modes (compare/modes.py)
    for table in tables:
        lines = table.strip().splitlines()
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in lines}
        assert len(widths) == 1, table
        assert re.fullmatch(r"\|---\|---\|(---:\|)+", lines[1])
    assert "Pairwise differences" in text and "oracle better" in text


def _latex_tables(text):
    return re.findall(r"\\midrule\n(.*?)\\bottomrule", text, flags=re.S)


def test_latex_is_balanced_one_row_per_run_and_bold_on_the_column_minimum(two):
    comp = build(two, resamples=100)
    text = render(comp, "latex")
    stack = []
    for kind, env in re.findall(r"\\(begin|end)\{(\w+)\}", text):
        if kind == "begin":
            stack.append(env)
        else:
            assert stack and stack.pop() == env
    assert not stack
    # one per task, then the failure modes (compare/modes.py; tests/unit/test_compare_modes.py)
    assert text.count(r"\toprule") == text.count(r"\bottomrule") == 3 + 1
    for body in _latex_tables(text)[:3]:
        rows = [line.removesuffix(r" \\").split(" & ") for line in body.strip().splitlines()]
        assert sorted(r[0] for r in rows) == sorted(_tex_label(r.label) for r in two)
        for c in range(1, len(rows[0]) - 2):  # pass rate and n are not ranked
            values = [float(re.sub(r"\\textbf\{(.*)\}", r"\1", r[c])) for r in rows]
            bold = [r[c].startswith(r"\textbf{") for r in rows]
            assert bold == [v == min(values) for v in values]


def _tex_label(label):
    return label.replace("_", r"\_")


def test_csv_parses_to_one_line_per_row(two):
    comp = build(two, resamples=100)
    parsed = list(csv.DictReader(io.StringIO(render(comp, "csv"))))
    assert len(parsed) == len(comp.rows)
    assert {p["label"] for p in parsed} == {r.label for r in two}
    assert all(0.0 <= float(p["mean"]) for p in parsed)


def test_labels_from_outside_are_escaped_in_every_format(two):
    two[1].label = "=cmd|x & 5% $_\x1b[2J"
    comp = build(two, resamples=50)
    md = render(comp, "md")
    assert "\x1b" not in md and r"=cmd\|x" in md
    tex = render(comp, "latex")
    assert r"=cmd|x \& 5\% \$\_" in tex and "\x1b" not in tex
    cells = {row["label"] for row in csv.DictReader(io.StringIO(render(comp, "csv")))}
    assert "'=cmd|x & 5% $_\\x1b[2J" in cells
    with pytest.raises(InvalidArgumentError, match="terminal"):
        render(comp, "pdf")


# --------------------------------------------------------------------------- command line


def test_cli_writes_every_format(made, tmp_path, capsys):
    args = ["compare", str(made / "oracle"), str(made / "noisy"), "--label", "A", "--label", "B"]
    assert main(args) == 0
    assert "Violin comparison of 2 run(s)" in capsys.readouterr().out
    assert main([*args, "--format", "csv", "--output", str(tmp_path / "c.csv")]) == 0
    assert {r["label"] for r in csv.DictReader((tmp_path / "c.csv").open())} == {"A", "B"}
    # bad input and bad arguments are one thing, a usage error: exit 4, as pytest's
    assert main(["compare", str(made / "oracle"), str(tmp_path / "nope")]) == 4
    assert "nope" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main([*args, "--label", "C"])
    assert info.value.code == 4
    with pytest.raises(SystemExit) as info:
        main([*args, "--format", "html"])
    assert info.value.code == 4
    err = capsys.readouterr().err
    # the compare command's own usage, not the top-level one
    assert err.startswith("usage: python -m pytest_violin compare ") and "--output" in err
    assert "{export,list,sheet,compare}" not in err


def test_violin_compare_prints_the_comparison_and_adds_it_to_summary_md(made, pytester):
    pytester.makepyfile(violin_models=MODELS)
    shutil.copytree(made / "oracle", pytester.path / "prod")
    result = pytester.runpytest("--violin-model=python:violin_models:noisy", LIMIT,
                                "--violin-compare=prod", "--violin-report=out",
                                "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*violin comparison*", "*oracle better*"])
    summary = (pytester.path / "out" / "summary.md").read_text()
    assert "## Comparison with other runs" in summary and "| oracle |" in summary
    bad = pytester.runpytest("--violin-model=oracle", LIMIT, "--violin-compare=missing",
                             "-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


# --------------------------------------------------------------------------- the paper (last)


def test_paper_rows_join_the_tables_without_pass_rate(made, capsys):
    paper = pytest.importorskip("pytest_violin.compare.paper")
    rows = paper.published_rows()
    comp = build([load_run(str(made / "oracle"))], paper=rows, resamples=50)
    published = [r for r in comp.rows if r.published]
    assert published and all(r.pass_rate is None and r.n is None for r in published)
    assert {r.task for r in published} <= {"color", "shape", "mask"}
    text = render(comp, "latex")
    for body in _latex_tables(text):
        names = [line.split(" & ")[0] for line in body.strip().splitlines()]
        assert len(names) == len(set(names))  # one row per run or published model
    assert main(["compare", str(made / "oracle"), str(made / "noisy"), "--paper",
                 "--format", "md"]) == 0
    assert "*(paper)*" in capsys.readouterr().out


# --------------------------------------------------------------------------- scale


def _lean_results(path, n, *, seed=0, extra=None):
    """A results.json of ``n`` records holding what compare reads (as the benchmark writes)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    samples = []
    for i in range(n):
        m = {"rgb_ed": float(rng.random() / 5), "lab_00": float(rng.random() / 5)}
        m["mean"] = (m["rgb_ed"] + m["lab_00"]) / 2
        rec = {"sample_id": f"color/v{i % 3}/c/t{i}", "task": "color", "variation": f"v{i % 3}",
               "metrics": m, "failed": ["rgb_ed"] if m["rgb_ed"] > 0.15 else [],
               "outcome": "failed" if m["rgb_ed"] > 0.15 else "passed"}
        rec.update(extra or {})
        samples.append(rec)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": "pytest-violin-results", "metadata": {"adapter": path.parent.name},
                                "samples": samples}))
    return path


def test_loaded_records_keep_only_what_compare_uses(tmp_path):
    path = _lean_results(tmp_path / "a" / "results.json", 4,
                         extra={"limits": {"rgb_ed": 0.15}, "repeats": [{"rgb_ed": 0.1}],
                                "seconds": 1.5, "prompt": "p" * 10_000})
    run = load_run(str(path))
    rec = next(iter(run.records.values()))
    assert set(rec) <= {"task", "suite", "variation", "outcome", "metrics", "failed", "prompt",
                        "error", "extra"}
    assert len(rec["prompt"]) <= runs_mod._PROMPT_MAX
    assert "records=" not in repr(run)  # a Run of 1,000,000 records is never formatted whole


def test_hostile_record_fields_are_cut_or_refused_never_a_crash(tmp_path):
    path = _lean_results(tmp_path / "a" / "results.json", 3,
                         extra={"failed": [{"a": 1}, ["x"], 5], "metrics": {"m": True, "n": "1",
                                                                             "k" * 100: 0.5}})
    rec = next(iter(load_run(str(path)).records.values()))
    assert all(isinstance(f, str) for f in rec["failed"])
    assert rec["metrics"] == {"k" * 40: 0.5}  # booleans and strings are not scored; names cut
    odd = _lean_results(tmp_path / "b" / "results.json", 2, extra={"failed": 5})
    assert "failed" not in next(iter(load_run(str(odd)).records.values()))


def test_more_samples_than_the_bound_are_refused(tmp_path, monkeypatch):
    path = _lean_results(tmp_path / "a" / "results.json", 5)
    monkeypatch.setattr(runs_mod, "MAX_SAMPLES", 4)
    with pytest.raises(InvalidArgumentError, match="5 samples; at most 4"):
        load_run(str(path))


def test_large_pair_counts_use_the_normal_interval_close_to_the_bootstrap(tmp_path, monkeypatch):
    from pytest_violin.compare import table as table_mod

    a = load_run(str(_lean_results(tmp_path / "a" / "results.json", 3000, seed=1)))
    b = load_run(str(_lean_results(tmp_path / "b" / "results.json", 3000, seed=2)))
    boot = build([a, b], resamples=2000).pairs[0]
    monkeypatch.setattr(table_mod, "BOOTSTRAP_MAX_PAIRS", 100)
    normal = build([a, b], resamples=2000).pairs[0]
    assert normal.n == boot.n == 3000 and normal.delta == pytest.approx(boot.delta)
    half = (boot.ci_high - boot.ci_low) / 2
    assert normal.ci_low == pytest.approx(boot.ci_low, abs=0.1 * half)
    assert normal.ci_high == pytest.approx(boot.ci_high, abs=0.1 * half)
    assert normal.ci_low < normal.delta < normal.ci_high


def test_the_gallery_orders_disagreements_then_failures_then_passes(tmp_path):
    from pytest_violin.compare.html import _sample_ids, render_html

    a = load_run(str(_lean_results(tmp_path / "a" / "results.json", 60, seed=3)))
    b = load_run(str(_lean_results(tmp_path / "b" / "results.json", 60, seed=4)))
    del b.records[next(iter(b.records))]
    assert _sample_ids([a, b], False) == [sid for sid in a.records if sid in b.records]
    page = render_html(build([a, b], resamples=50), render_limit=0, max_samples=10)
    states = re.findall(r'data-disagree="(\d)" data-fail="(\d)"', page)
    assert len(states) == 10
    keys = [(d != "1", f != "1") for d, f in states]
    assert keys == sorted(keys)
    assert "49 more sample(s) not shown" in page
