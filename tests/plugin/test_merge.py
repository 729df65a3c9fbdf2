"""``python -m pytest_violin merge`` and ``gate``: shards put back together equal one run."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from pytest_violin.__main__ import main
from pytest_violin.thresholds import KNOWN_METRICS

MODELS = '''
import numpy as np


def degraded(request):
    """Colours shifted by 40 levels, shapes drawn as expected: color regresses, shape does not."""
    img = request.sample.expected()
    if request.task == "color":
        return np.clip(img.astype(np.int16) + 40, 0, 255).astype(np.uint8)
    return img
'''

SELECTION = ["--violin-limit=60", "--violin-tasks=color,shape", "-p", "no:cacheprovider"]
# the absolute limits of color pass everything but the mean: some samples fail, some pass
LOOSE = [f"--violin-threshold=color.{m}=1" for m in KNOWN_METRICS["color"]]


def _run(pytester, *args):
    return pytester.runpytest(*SELECTION, *args)


def _cli(*argv, capsys):
    capsys.readouterr()  # what the in-process pytest runs printed before
    status = main([str(a) for a in argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def _samples(folder):
    doc = json.loads((folder / "results.json").read_text())
    return {s["sample_id"]: (s["outcome"], s["metrics"], s["failed"], s["index"]) for s in doc["samples"]}, doc


@pytest.fixture
def sharded(pytester):
    pytester.makepyfile(violin_models=MODELS)
    assert _run(pytester, "--violin-model=oracle", "--violin-save-baseline=base.json").ret == 0
    model = "--violin-model=python:violin_models:degraded"
    whole = _run(pytester, model, *LOOSE, "--violin-report=whole", "--violin-baseline=base.json")
    # the shards use the baseline as a CI job does: its failures are known or new (xfail), and
    # the gate waits for the merged run
    shards = [_run(pytester, model, *LOOSE, f"--violin-shard={k}/4", f"--violin-report=shard{k}",
                   "--violin-baseline=base.json") for k in (1, 2, 3, 4)]
    for k, shard in enumerate(shards, 1):
        assert shard.ret == 0, shard.stdout.str()
        shard.stdout.fnmatch_lines([f"baseline base.json not compared in shard {k}/4: the gate decides "
                                    f"the whole run once its shards are merged*"])
        assert "violin::gate" not in shard.stdout.str()
    return pytester, whole, shards


@pytest.mark.slow  # whole sessions in processes: CI's e2e step
def test_four_shards_merged_equal_one_run(sharded, capsys, monkeypatch):
    pytester, whole, shards = sharded
    root = pytester.path
    step_summary = root / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    assert whole.ret == 1  # the gate fails: color got worse
    outs = [json.loads((root / f"shard{k}" / "results.json").read_text())["metadata"] for k in (1, 2, 3, 4)]
    assert [m["shard"]["index"] for m in outs] == [1, 2, 3, 4] and {m["shard"]["selected"] for m in outs} == {60}
    assert all(13 <= m["samples"] <= 17 for m in outs)  # stratified quarters of 60

    status, out, err = _cli("merge", *(root / f"shard{k}" for k in (4, 2, 1, 3)), "--output", root / "merged",
                            "--save-baseline", root / "merged.json", capsys=capsys)
    assert status == 0, err
    assert "merged 4 shards: 60 samples" in out
    merged, doc = _samples(root / "merged")
    one, one_doc = _samples(root / "whole")
    assert merged == one  # ids, outcomes, metrics, failed metrics and order in the selection
    assert [s["sample_id"] for s in doc["samples"]] == [s["sample_id"] for s in one_doc["samples"]]
    assert doc["aggregates"] == one_doc["aggregates"]
    for key in ("suite", "profile", "seed", "repeats", "pass_rule", "adapter", "fingerprint", "samples",
                "passed", "failed", "errors", "generations"):
        assert doc["metadata"][key] == one_doc["metadata"][key], key
    assert 0 < doc["metadata"]["failed"] < 60
    assert {"report.html", "summary.md", "thumbnails.json"} <= {p.name for p in (root / "merged").iterdir()}
    assert "<html" in (root / "merged" / "report.html").read_text()[:500].lower()

    # the merged baseline is the one run's (but for its creation time)
    mb = json.loads((root / "merged.json").read_text())
    wb_run = _run(pytester, "--violin-model=python:violin_models:degraded", *LOOSE,
                  "--violin-save-baseline=whole.json")
    assert wb_run.ret == 1  # the failing color samples; the baseline is written all the same
    wb = json.loads((root / "whole.json").read_text())
    for d in (mb, wb):
        d["metadata"].pop("created")
    assert mb == wb

    # the gate decides the merged run as the plugin decided the one run: exit 1, and the same verdict (on 60
    # samples, groups of 12-24 are too few to be shown either way: not shown, the same groups named)
    status, out, err = _cli("gate", root / "merged", "--baseline", root / "base.json", capsys=capsys)
    assert status == 1, err
    verdict = re.compile(r"NOT SHOWN: nothing regressed against baseline \S+, but these were not shown within "
                         r"their margins: (.*?); a green gate needs")
    named = verdict.search(out).group(1)
    assert named.startswith("color (") and named == verdict.search(whole.stdout.str()).group(1)
    # --report: the merged run's reports with the gate's verdict, as one run's with a baseline
    status, out, _ = _cli("gate", root / "merged", "--baseline", root / "base.json", "--report",
                          root / "gated", capsys=capsys)
    assert status == 1 and "reports with the gate's verdict written to" in out
    # the job's summary: the merged run's (merge), then the gated one's (gate --report); with
    # --no-step-summary only the gate's
    assert step_summary.read_text().count("# ") >= 2
    step_summary.unlink()
    assert main(["merge", *(str(root / f"shard{k}") for k in (1, 2, 3, 4)), "--output", str(root / "quiet"),
                 "--no-step-summary"]) == 0
    assert not step_summary.exists() and (root / "quiet" / "summary.md").is_file()
    gated = json.loads((root / "gated" / "results.json").read_text())
    one_gate = one_doc["comparison"]
    assert gated["comparison"]["regressions"] == one_gate["regressions"] and not gated["comparison"]["ok"]
    assert gated["comparison"]["groups"] == one_gate["groups"]
    assert [s["sample_id"] for s in gated["samples"]] == [s["sample_id"] for s in one_doc["samples"]]
    assert "regress" in (root / "gated" / "summary.md").read_text().lower()
    assert (root / "gated" / "thumbnails.json").read_text() == (root / "merged" / "thumbnails.json").read_text()
    # against itself nothing regressed: on 60 samples that passes only when the team accepts "not shown"
    status, out, _ = _cli("gate", root / "merged", "--baseline", root / "merged.json", capsys=capsys)
    assert status == 1 and out.startswith("NOT SHOWN: nothing regressed")
    status, out, _ = _cli("gate", root / "merged", "--baseline", root / "merged.json", "--accept-not-shown",
                          capsys=capsys)
    assert status == 0 and out.startswith("PASSED WITH --violin-accept-not-shown")


def test_merge_refuses_what_is_not_one_run(sharded, capsys, tmp_path, monkeypatch):
    pytester, _, _ = sharded
    root = pytester.path
    shards = [root / f"shard{k}" for k in (1, 2, 3, 4)]

    def refused(*argv):
        status, out, err = _cli("merge", *argv, "--output", tmp_path / "out", capsys=capsys)
        assert status == 4, (out, err)
        assert not (tmp_path / "out" / "results.json").exists()
        return err

    err = refused(*shards[:3])
    assert "shard 4/4 is missing (given: 1/4, 2/4, 3/4)" in err
    err = refused(*shards, shards[1])
    assert "shard 2/4 is given twice" in err and err.count("shard2") == 2
    err = refused(root / "whole", *shards[1:])
    assert "no shard record" in err and "whole" in err

    # a shard of another run: another seed, other limits, another selection
    other = _run(pytester, "--violin-model=oracle", "--violin-seed=3", "--violin-shard=2/4",
                 "--violin-report=seed3")
    assert other.ret == 0
    err = refused(shards[0], root / "seed3", *shards[2:])
    assert "seed (--violin-seed) is 3, not 0" in err and "seed3" in err
    strict = _run(pytester, "--violin-model=python:violin_models:degraded", "--violin-shard=2/4",
                  "--violin-report=strict")
    assert strict.ret == 1
    err = refused(shards[0], root / "strict", *shards[2:])
    assert "other limits" in err and "task 'color'" in err
    narrow = pytester.runpytest("--violin-limit=40", "--violin-tasks=color,shape", "-p", "no:cacheprovider",
                                "--violin-model=python:violin_models:degraded", *LOOSE,
                                "--violin-shard=2/4", "--violin-report=narrow")
    assert narrow.ret == 1  # its failing color samples
    err = refused(shards[0], root / "narrow", *shards[2:])
    assert "selection of 40 samples, not 60" in err

    # overlapping samples: shard 2's results.json claiming shard 3's samples too
    doc = json.loads((shards[1] / "results.json").read_text())
    doc["samples"] += json.loads((shards[2] / "results.json").read_text())["samples"][:1]
    fake = tmp_path / "overlap"
    fake.mkdir()
    (fake / "results.json").write_text(json.dumps(doc))
    err = refused(shards[0], fake, *shards[2:])
    assert "is in shard 2/4" in err and "and in shard 3/4" in err

    _hostile_folders(shards, capsys, tmp_path, monkeypatch)
    _gate_usage_errors(root, capsys, tmp_path)


def _hostile_folders(shards, capsys, tmp_path, monkeypatch):
    def refused(folder, *words):
        status, _, err = _cli("merge", shards[0], folder, *shards[2:], "--output", tmp_path / "out",
                              capsys=capsys)
        assert status == 4 and all(w in err for w in words), err

    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(shards[1] / "results.json", linked / "results.json")
    refused(linked, "symbolic link")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text("{not json")
    refused(bad, "not valid JSON")
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "results.json")
    refused(fifo, "results.json")  # not a regular file: refused, never opened to block
    import pytest_violin.report.merge as merge

    monkeypatch.setattr(merge, "MAX_RESULTS_BYTES", 1000)
    refused(shards[1], "larger than the limit of 1,000 bytes")
    monkeypatch.undo()
    monkeypatch.setattr(merge, "MAX_TOTAL_BYTES", 2000)
    refused(shards[1], "results.json files hold", "more than the limit of 2,000")
    monkeypatch.undo()
    # thumbnails past the total read are left out, the merge goes on
    monkeypatch.setattr(merge, "MAX_TOTAL_THUMBNAILS", 1)
    merged = merge.merge_shards(shards)
    assert len(merged.records) == 60 and not any("thumbnails" in (r.get("extra") or {}) for r in merged.records)
    monkeypatch.undo()
    wrong = tmp_path / "wrong"
    shutil.copytree(shards[1], wrong)
    doc = json.loads((wrong / "results.json").read_text())
    doc["samples"][0]["metrics"] = {"mean": "0.1; DROP"}
    (wrong / "results.json").write_text(json.dumps(doc))
    refused(wrong, "must map metric names to numbers")
    doc["samples"][0]["metrics"] = {}
    doc["metadata"]["shard"]["index"] = 9
    (wrong / "results.json").write_text(json.dumps(doc))
    refused(wrong, "'shard' record", "malformed")


def _gate_usage_errors(root, capsys, tmp_path):
    status, _, err = _cli("gate", root / "shard1", "--baseline", tmp_path / "none.json", capsys=capsys)
    assert status == 4 and "none.json" in err
    with pytest.raises(SystemExit) as info:
        main(["gate", str(root / "shard1"), "--baseline", str(root / "base.json"), "--alpha", "2"])
    assert info.value.code == 4 and "'2'" in capsys.readouterr().err
    # one shard against its own model's baseline: no regression shown, but too few samples per
    # task to say "not worse": exit 4, as the plugin's session
    assert main(["merge", *(str(root / f"shard{k}") for k in (1, 2, 3, 4)), "--output", str(tmp_path / "m"),
                 "--save-baseline", str(tmp_path / "same.json")]) == 0
    status, out, _ = _cli("gate", root / "shard1", "--baseline", tmp_path / "same.json", capsys=capsys)
    assert status == 4 and out.startswith("NOT DECIDED")


def _claimed_shard(folder, index, total):
    """A report folder whose results.json claims to be part ``index`` of ``total`` (no sample)."""
    from pytest_violin.report.json_report import RESULTS_FORMAT, RESULTS_SCHEMA_VERSION

    folder.mkdir()
    shard = f'{{"index": {index}, "total": {total}, "selected": 1, "digest": "d"}}'
    (folder / "results.json").write_text(
        f'{{"format": "{RESULTS_FORMAT}", "schema_version": {RESULTS_SCHEMA_VERSION}, '
        f'"metadata": {{"suite": "violin", "shard": {shard}}}, "samples": []}}')
    return folder


# the numbers as results.json's text holds them; the longest is past what Python's int() converts.
# named: what the one line says (None: the accepted range, up to MAX_SHARDS)
@pytest.mark.parametrize("index, total, named", [
    ("1", "1" + "0" * 9, None), ("2000", "1" + "0" * 9, None), ("1025", "1025", None), ("0", "4", None),
    ("1", "1" + "0" * 5000, "not valid JSON")], ids=["1e9", "2000-of-1e9", "1025", "0-of-4", "1e5000"])
def test_merge_refuses_a_shard_number_out_of_range_before_building_anything(tmp_path, capsys, index, total,
                                                                            named):
    import tracemalloc

    from pytest_violin.suite.shard import MAX_SHARDS

    named = named or f"<= {MAX_SHARDS}"
    claimed = _claimed_shard(tmp_path / "claimed", index, total)
    tracemalloc.start()
    try:
        status, out, err = _cli("merge", claimed, "--output", tmp_path / "out", capsys=capsys)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert status == 4, (out, err)
    assert len(err.splitlines()) == 1 and "claimed" in err and named in err
    assert peak < 64 * 2**20  # no list of the claimed parts was built
    assert not (tmp_path / "out").exists()


def test_merge_interrupted_says_so_in_one_line_and_exits_130(tmp_path, capsys, monkeypatch):
    import pytest_violin.report.merge as merge

    reached = []

    def interrupted(specs):
        reached.append(list(specs))
        raise KeyboardInterrupt

    monkeypatch.setattr(merge, "merge_shards", interrupted)
    try:
        status, out, err = _cli("merge", tmp_path / "shard1", "--output", tmp_path / "out", capsys=capsys)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C left main() as a KeyboardInterrupt (a traceback)")
    assert reached and status == 130
    assert len(err.splitlines()) == 1 and "merge" in err and "Traceback" not in err + out
