"""Unit tests of pytest_violin.gating: baseline files, fingerprints, bootstrap, comparison."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.errors import BaselineError
from pytest_violin.report.terminal import comparison_lines
from pytest_violin.gating import (
    BASELINE_FORMAT,
    ERROR_VALUE,
    SCHEMA_VERSION,
    aggregate_records,
    build_baseline,
    compare,
    dumps_baseline,
    paired_bootstrap,
    read_baseline,
    sample_digest,
    suite_fingerprint,
    write_baseline,
)

TASKS = {"color": ("v1", "v2"), "shape": ("circle", "square"), "mask": ("inpaint",)}


def make_records(values, *, outcome=None, definition="d"):
    """One record per value, spread over tasks and variations; ids are stable."""
    recs = []
    combos = [(t, v) for t, vs in TASKS.items() for v in vs]
    for i, value in enumerate(values):
        task, var = combos[i % len(combos)]
        metrics = {"a": float(value), "b": float(value), "mean": float(value)}
        recs.append({
            "sample_id": f"{task}/{var}/s{i:04d}", "suite": "violin", "task": task, "variation": var,
            "prompt": f"prompt {i}", "metrics": metrics,
            "outcome": outcome(i, value) if outcome else ("passed" if value < 0.5 else "failed"),
            "error": None, "repeats": [metrics], "extra": {"definition": f"{definition}{i}"},
        })
    return recs


def baseline_of(records, **kw):
    args = dict(suite="violin", profile="violin", seed=0, adapter="oracle", created="2025-01-01T00:00:00+00:00")
    args.update(kw)
    return build_baseline(records, **args)


# --------------------------------------------------------------------------- fingerprints


@settings(max_examples=25, deadline=None)
@given(st.permutations(list(range(8))))
def test_fingerprint_ignores_order(perm):
    manifests = [{"id": f"color/v1/c/t{i}", "spec": {"rgb": [i, 2, 3]}, "prompt": f"p{i}"} for i in range(8)]
    shuffled = [manifests[i] for i in perm]
    assert suite_fingerprint(shuffled) == suite_fingerprint(manifests)


def test_fingerprint_changes_with_any_definition_change():
    manifests = [{"id": f"s{i}", "spec": {"rgb": [i, 2, 3]}, "prompt": f"p{i}"} for i in range(5)]
    base = suite_fingerprint(manifests)
    changed = [dict(m) for m in manifests]
    changed[3] = {**changed[3], "spec": {"rgb": [3, 2, 4]}}
    assert suite_fingerprint(changed) != base
    assert suite_fingerprint(manifests[:-1]) != base
    # the pair form gives the same value as the manifest form
    assert suite_fingerprint((m["id"], sample_digest(m)) for m in manifests) == base


def test_sample_digest_is_key_order_independent():
    assert sample_digest({"a": 1, "b": [1, 2]}) == sample_digest({"b": [1, 2], "a": 1})
    assert sample_digest({"a": 1}) != sample_digest({"a": 2})


# --------------------------------------------------------------------------- baseline documents


@settings(max_examples=20, deadline=None)
@given(st.permutations(list(range(10))))
def test_baseline_text_does_not_depend_on_result_order(perm):
    recs = make_records([i / 20 for i in range(10)])
    a = dumps_baseline(baseline_of(recs))
    b = dumps_baseline(baseline_of([recs[i] for i in perm]))
    assert a == b
    ids = [s["id"] for s in json.loads(a)["samples"]]
    assert ids == sorted(ids)


def test_baseline_contents(tmp_path):
    recs = make_records([0.1, 0.2, 0.3, 0.7])
    recs[1]["repeats"] = [{"a": 0.1, "mean": 0.1}, {"a": 0.3, "mean": 0.3}]
    doc = baseline_of(recs, extra_metadata={"repeats": 2})
    assert doc["format"] == BASELINE_FORMAT and doc["schema_version"] == SCHEMA_VERSION
    meta = doc["metadata"]
    assert {meta[k] for k in ("suite", "profile", "adapter")} == {"violin", "oracle"}
    assert meta["repeats"] == 2 and meta["package_version"]
    assert meta["fingerprint"] == suite_fingerprint((r["sample_id"], r["extra"]["definition"]) for r in recs)
    by_id = {s["id"]: s for s in doc["samples"]}
    assert by_id[recs[1]["sample_id"]]["repeats"][1]["a"] == 0.3
    task_rows = {r["task"]: r for r in doc["aggregates"]["tasks"]}
    expected_color = np.mean([r["metrics"]["mean"] for r in recs if r["task"] == "color"])
    assert task_rows["color"]["metrics"]["mean"] == pytest.approx(expected_color)
    path = write_baseline(tmp_path / "sub" / "base.json", doc)
    assert read_baseline(path) == json.loads(json.dumps(doc))
    assert os.listdir(tmp_path / "sub") == ["base.json"]  # no temporary file left behind


def test_write_baseline_replaces_atomically(tmp_path):
    path = tmp_path / "b.json"
    write_baseline(path, baseline_of(make_records([0.1])))
    write_baseline(path, baseline_of(make_records([0.1, 0.2])))
    assert len(read_baseline(path)["samples"]) == 2
    assert sorted(os.listdir(tmp_path)) == ["b.json"]


def test_duplicate_ids_are_refused():
    recs = make_records([0.1, 0.2])
    recs[1]["sample_id"] = recs[0]["sample_id"]
    with pytest.raises(BaselineError, match="more than once"):
        baseline_of(recs)


def _corrupt(doc, how):
    doc = json.loads(json.dumps(doc))
    if how == "format":
        doc["format"] = "something-else"
    elif how == "schema_version":
        doc["schema_version"] = 99
    elif how == "metadata.seed":
        doc["metadata"]["seed"] = "zero"
    elif how == "samples[1].metrics.a":
        doc["samples"][1]["metrics"]["a"] = "bad"
    elif how == "samples[0].outcome":
        doc["samples"][0]["outcome"] = "maybe"
    elif how == "samples[1].id":
        doc["samples"][1]["id"] = doc["samples"][0]["id"]
    elif how == "samples":
        doc["samples"] = {}
    return doc


@pytest.mark.parametrize("field", ["format", "schema_version", "metadata.seed", "samples[1].metrics.a",
                                   "samples[0].outcome", "samples[1].id", "samples"])
def test_read_baseline_names_file_and_field(tmp_path, field):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(_corrupt(baseline_of(make_records([0.1, 0.2, 0.3])), field)))
    with pytest.raises(BaselineError) as info:
        read_baseline(path)
    assert str(path) in str(info.value) and repr(field) in str(info.value)


def test_read_baseline_missing_and_not_json(tmp_path):
    with pytest.raises(BaselineError, match="does not exist"):
        read_baseline(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(BaselineError, match=r"bad\.json'?: not valid JSON \(line 1"):
        read_baseline(bad)


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    old = rng.random(200)
    new = old + rng.normal(0.02, 0.05, 200)
    a = paired_bootstrap(old, new, seed=7)
    assert a == paired_bootstrap(old, new, seed=7)
    assert a != paired_bootstrap(old, new, seed=8)
    mean = float(np.mean(new - old))
    assert a[0] < mean < a[1]
    # width is about 2 * 1.96 * sd / sqrt(n)
    expected = 2 * 1.96 * np.std(new - old) / np.sqrt(200)
    assert (a[1] - a[0]) == pytest.approx(expected, rel=0.2)


def test_bootstrap_is_paired():
    """Large per-sample differences in difficulty do not widen a paired interval."""
    old = np.linspace(0, 1, 100)
    new = old + 0.01
    assert paired_bootstrap(old, new) == pytest.approx((0.01, 0.01))


@pytest.mark.parametrize("kwargs", [{"resamples": 0}, {"confidence": 1.0}, {"confidence": 0}])
def test_bootstrap_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        paired_bootstrap([0.1, 0.2], [0.2, 0.3], **kwargs)


def test_bootstrap_rejects_unpaired_input():
    with pytest.raises(ValueError, match="one length"):
        paired_bootstrap([0.1, 0.2], [0.2])


# --------------------------------------------------------------------------- comparison


def test_identical_runs_do_not_regress():
    recs = make_records(np.random.default_rng(0).random(300) * 0.3)  # 60 a variation: the rates can be shown
    c = compare(baseline_of(recs), baseline_of(recs))
    assert c.ok and c.outcome == "within-margin" and not c.improvements and not c.missing and not c.added
    assert all(g.mean.delta == 0 for g in c.groups)


def test_degradation_regresses_and_names_groups():
    rng = np.random.default_rng(3)
    base = rng.random(300) * 0.2
    old = make_records(base)
    worse = base.copy()
    color = [i for i, r in enumerate(old) if r["task"] == "color"]
    worse[color] += 0.1 + rng.random(len(color)) * 0.02
    new = make_records(worse)
    c = compare(baseline_of(old), baseline_of(new))
    labels = {g.label for g in c.regressions}
    assert {"color", "color/v1", "color/v2"} == labels
    g = next(g for g in c.regressions if g.label == "color")
    assert g.mean.delta == pytest.approx(float(np.mean(worse[color] - base[color])))
    assert 0 < g.mean.ci_low <= g.mean.delta <= g.mean.ci_high
    assert set(g.metric_deltas) == {"a", "b"}
    assert g.newly_failing == tuple(r["sample_id"] for r in new
                                    if r["task"] == "color" and r["outcome"] == "failed"
                                    and old[new.index(r)]["outcome"] == "passed")
    text = "\n".join(t for t, _ in comparison_lines(c))
    assert "FAILED" in text and "color/v1" in text and "shape" not in text.split("rule:")[0]
    assert c.to_dict()["regressions"] == [g.label for g in c.regressions]


def test_improvement_is_reported_not_failed():
    base = np.full(300, 0.3)
    c = compare(baseline_of(make_records(base)), baseline_of(make_records(base - 0.1)))
    assert c.ok and {g.label for g in c.improvements} >= {"color", "shape", "mask"}


@pytest.mark.parametrize("max_regression", [0.0, 0.01])
def test_zero_mean_noise_is_never_a_regression_across_20_seeds(max_regression):
    """A noisy model with the same mean: per-sample values differ, the mean does not."""
    rng = np.random.default_rng(11)
    base = 0.2 + rng.random(300) * 0.1
    noise = rng.normal(0, 0.05, base.size)
    for task_idx in (np.arange(base.size) % 5 == k for k in range(5)):  # zero mean per group
        noise[task_idx] -= noise[task_idx].mean()
    old, new = baseline_of(make_records(base)), baseline_of(make_records(base + noise))
    assert any(abs(a["metrics"]["mean"] - b["metrics"]["mean"]) > 0.05
               for a, b in zip(old["samples"], new["samples"]))
    for seed in range(20):
        c = compare(old, new, seed=seed, max_regression=max_regression)
        assert not c.regressed_groups, [g.to_dict() for g in c.regressions]
        assert not c.improvements
        for g in c.groups:
            assert g.mean.ci_low < 0 < g.mean.ci_high


def test_one_outlier_is_not_credible_even_above_the_threshold():
    base = np.full(100, 0.1)
    worse = base.copy()
    worse[0] = 0.9  # one sample of color/v1 got much worse
    c = compare(baseline_of(make_records(base)), baseline_of(make_records(worse)))
    g = next(g for g in c.groups if g.label == "color/v1")
    assert g.mean.delta > 0.01 and g.mean.ci_low == 0.0
    assert not c.regressed_groups
    # nor is it shown within the margin: it stays "not shown"
    assert g.outcome == "not-shown" and not c.ok


def test_errors_count_as_worst_value():
    base = make_records(np.full(200, 0.1))
    new = make_records(np.full(200, 0.1))
    for r in new:
        if r["task"] == "mask":
            r.update(metrics={}, repeats=[], outcome="failed", error="timeout")
    c = compare(baseline_of(base), baseline_of(new))
    g = next(g for g in c.groups if g.label == "mask")
    assert g.mean.new == ERROR_VALUE and g.mean.status == "regressed"
    assert set(g.newly_failing) == {r["sample_id"] for r in new if r["task"] == "mask"}


def test_missing_added_and_redefined_samples_are_reported_not_compared():
    old = make_records(np.full(110, 0.1))
    new = make_records(np.full(110, 0.1))
    new[2]["extra"]["definition"] = "changed"
    new[2]["metrics"] = {"a": 1.0, "b": 1.0, "mean": 1.0}  # would regress if it were compared
    removed = new.pop(5)
    extra = make_records(np.full(111, 0.1))[110]
    new.append(extra)
    old_doc, new_doc = baseline_of(old), baseline_of(new)
    c = compare(old_doc, new_doc)
    assert c.missing == (removed["sample_id"],)
    assert c.added == (extra["sample_id"],)
    assert c.changed == (new[2]["sample_id"],)
    assert c.fingerprint_changed
    assert not c.regressed_groups and not c.errored
    task = next(g for g in c.groups if g.label == new[2]["task"])
    assert task.n == sum(1 for r in old if r["task"] == task.task) - 1 - (removed["task"] == task.task)
    text = "\n".join(t for t, _ in comparison_lines(c))
    assert "missing from this run" in text and "fingerprint changed" in text


def test_metadata_changes_are_reported():
    recs = make_records([0.1, 0.2])
    c = compare(baseline_of(recs), baseline_of(recs, profile="strict", adapter="http://x"))
    assert c.metadata_changes == {"profile": ("violin", "strict"), "adapter": ("oracle", "http://x")}


def test_compare_rejects_bad_threshold():
    recs = make_records([0.1])
    with pytest.raises(ValueError, match="max_regression"):
        compare(baseline_of(recs), baseline_of(recs), max_regression=-1)


@pytest.mark.parametrize("alpha", [0, 0.6, 1, True, "0.05"])
def test_compare_takes_the_error_rates_the_options_take(alpha):
    # (0, 0.5], as --violin-alpha and `gate --alpha`: past one half an interval has no width left
    recs = make_records([0.1])
    assert compare(baseline_of(recs), baseline_of(recs), alpha=0.5).alpha == 0.5
    with pytest.raises(ValueError) as info:
        compare(baseline_of(recs), baseline_of(recs), alpha=alpha)
    assert repr(alpha) in str(info.value) and "(0, 0.5]" in str(info.value)


def test_aggregate_rows_match_manual_means():
    recs = make_records([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    recs[0].update(metrics={}, error="boom", outcome="error")
    agg = aggregate_records([dict(r, id=r["sample_id"]) for r in recs])
    color = next(r for r in agg["tasks"] if r["task"] == "color")
    members = [r for r in recs if r["task"] == "color"]
    scored = [r["metrics"]["mean"] for r in members if r["metrics"]]
    assert color["n"] == len(members) and color["errors"] == 1
    assert color["metrics"]["mean"] == pytest.approx(np.mean(scored))
    assert color["pass_rate"] == pytest.approx(sum(r["outcome"] == "passed" for r in members) / len(members))


def test_group_without_any_scored_sample_aggregates_to_null_not_nan():
    """Every sample of a variation errored: its mean is null and the baseline still writes; a
    variation whose model gave no image counts 1.0 on every metric, as the gate counts it."""
    import json as _json

    from pytest_violin.gating import aggregate_records

    records = [
        {"sample_id": "color/v1/a", "task": "color", "variation": "v1", "outcome": "failed",
         "error": "HTTP 500", "metrics": {}},
        {"sample_id": "color/v2/a", "task": "color", "variation": "v2", "outcome": "passed",
         "error": None, "metrics": {"sd": 0.0, "mean": 0.0}},
        {"sample_id": "color/v3/a", "task": "color", "variation": "v3", "outcome": "error",
         "error": "no answer", "metrics": {}},
    ]
    agg = aggregate_records(records)
    v1, v3 = (next(r for r in agg["variations"] if r["variation"] == v) for v in ("v1", "v3"))
    assert v1["metrics"] == {"sd": 1.0, "mean": 1.0} and v1["no_image"] == 1
    assert v1["errors"] == 0 and v1["failed"] == 1  # the model gave no image: failed, not an error
    assert v3["metrics"]["mean"] is None and v3["errors"] == 1
    _json.dumps(agg, allow_nan=False)  # strict JSON: no NaN anywhere


def test_a_task_is_decided_only_on_enough_shared_samples():
    """Fewer than MIN_SHARED comparable samples in a task the baseline has, or fewer than half of
    the run's, is not green (too_few); a task the baseline lacks is judged by its limits instead."""
    from pytest_violin.gating import MIN_SHARED

    base = make_records(np.full(300, 0.1))
    c = compare(baseline_of(base), baseline_of(base))
    assert c.too_few == () and c.ok
    # another seed: the same tasks, other samples but a few
    few = [dict(r, sample_id=r["sample_id"] + "-other") if i >= 10 else r for i, r in enumerate(base)]
    few = few[:100]
    c = compare(baseline_of(base), baseline_of(few))
    assert {t for t, _, _ in c.too_few} == {"color", "shape", "mask"} and not c.ok and c.undecidable
    assert all(shared < MIN_SHARED for _, shared, _ in c.too_few)
    assert compare(baseline_of(base), baseline_of(few), allow_mismatch=True).outcome == "not-shown"
    # a task only this run has is not the baseline's to decide
    extra = make_records(np.full(100, 0.1)) + [dict(r, sample_id="count/" + r["sample_id"], task="count")
                                               for r in make_records(np.full(5, 0.1))]
    assert compare(baseline_of(base), baseline_of(extra)).too_few == ()
    # a sequential run's population stands in for the samples compared
    pop = compare(baseline_of(base), baseline_of(base[:30]), population={"color": (40, 40), "shape": (5, 40)})
    assert pop.too_few == (("shape", 5, 40),)


def test_the_ratchet_is_offered_by_a_green_gate_only():
    from pytest_violin.report._gate_words import ratchet_line

    base = np.full(300, 0.3)
    green = compare(baseline_of(make_records(base)), baseline_of(make_records(base - 0.1)),
                    baseline_path="baselines/violin.json")
    line = ratchet_line(green)
    assert green.ok and line and "improved: color (mean metric)" in line and "baselines/violin.json" in line
    # the same improvement on too few samples: not shown, so no new baseline is suggested
    small = compare(baseline_of(make_records(base[:100])), baseline_of(make_records(base[:100] - 0.1)))
    assert small.outcome == "not-shown" and ratchet_line(small) is None
