import json
import math

import pytest

from hypothesis import given, settings, strategies as st

from pytest_violin.results import ResultsStore, SampleResult, combine_repeats


def _result(i, task="color", variation="v1", passed=True, **metrics):
    metrics = metrics or {"a": 0.1 * i, "b": 0.2}
    metrics["mean"] = sum(metrics.values()) / len(metrics)
    return SampleResult(sample_id=f"{task}/{variation}/s{i}", suite="violin", task=task,
                        variation=variation, metrics=metrics, index=i,
                        outcome="passed" if passed else "failed")


def test_json_round_trip_keeps_every_field():
    r = _result(3)
    r.repeats = [{"a": 0.1, "mean": 0.1}]
    r.extra = {"thumb": "abc"}
    r.original_size = [640, 480]
    back = SampleResult.from_json(r.to_json())
    assert back == r
    assert json.loads(r.to_json())["sample_id"] == "color/v1/s3"


def test_unknown_keys_go_to_extra():
    d = _result(1).to_dict()
    d["future_field"] = 7
    assert SampleResult.from_dict(d).extra["future_field"] == 7


def test_store_orders_by_suite_position_and_replaces():
    store = ResultsStore()
    for i in (5, 1, 3):
        store.add(_result(i))
    store.add(_result(1, passed=False))
    assert [r.index for r in store.results] == [1, 3, 5]
    assert len(store) == 3 and not store.get("color/v1/s1").passed


def test_aggregate_means_pass_rate_and_totals():
    store = ResultsStore()
    store.add(_result(0, a=0.0, b=0.4))
    store.add(_result(1, a=0.2, b=0.2, passed=False))
    store.add(_result(2, variation="v2", a=0.5, b=0.5))
    err = SampleResult(sample_id="color/v2/s9", suite="violin", task="color", variation="v2",
                       outcome="error", error="boom", index=9)
    store.add(err)
    rows = store.aggregate(totals=True)
    by = {(r.variation): r for r in rows}
    assert by["v1"].means["a"] == pytest.approx(0.1) and by["v1"].means["b"] == pytest.approx(0.3)
    assert by["v1"].means["mean"] == pytest.approx(0.2) and by["v1"].pass_rate == 0.5 and by["v1"].count == 2
    assert by["v2"].count == 2 and by["v2"].errors == 1 and by["v2"].means["a"] == 0.5
    assert by[None].count == 4 and by[None].pass_rate == 0.5 and by[None].is_total
    assert [r.variation for r in rows] == ["v1", "v2", None]
    assert [r.variation for r in store.aggregate()] == ["v1", "v2"]


def test_one_aggregation_for_the_summary_and_the_baseline():
    # the terminal summary and results.json / the baseline read the same rows:
    # they cannot disagree on means, counts or groups without a scored sample
    from pytest_violin.gating import aggregate_records
    from pytest_violin.report.json_report import records_of

    store = ResultsStore()
    store.add(_result(0, a=0.0, b=0.4))
    store.add(_result(1, variation="v2", a=0.5, b=0.5))
    store.add(SampleResult(sample_id="color/v3/s9", suite="violin", task="color", variation="v3",
                           outcome="failed", error="boom", index=9))
    rows = store.aggregate(totals=True)
    agg = aggregate_records(records_of(store.results))
    for row in rows:
        bucket = agg["tasks"] if row.is_total else agg["variations"]
        twin = next(e for e in bucket if e["variation"] == row.variation)
        assert twin["n"] == row.count and twin["errors"] == row.errors
        assert twin["metrics"]["mean"] == row.means["mean"]
    v3 = next(r for r in rows if r.variation == "v3")
    assert v3.means == {"a": 1.0, "b": 1.0, "mean": 1.0} and v3.no_image == 1  # as the gate counts it


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1), min_size=2, max_size=2), min_size=1, max_size=6))
def test_combine_repeats(values):
    reps = [{"x": a, "y": b} for a, b in values]
    mean, spread, worst = combine_repeats(reps)
    for key, col in (("x", [a for a, _ in values]), ("y", [b for _, b in values])):
        assert math.isclose(mean[key], sum(col) / len(col), abs_tol=1e-12)
        assert worst[key] == max(col)
        assert spread[key] >= 0
        assert min(col) - 1e-12 <= mean[key] <= max(col) + 1e-12


def _no_image(i, task="color", variation="v1", outcome="failed"):
    return SampleResult(sample_id=f"{task}/{variation}/n{i}", suite="violin", task=task,
                        variation=variation, outcome=outcome, error="no image", index=100 + i)


def test_a_missing_image_counts_one_in_every_mean_as_in_the_gate():
    """One rule: a judged sample without an image counts 1.0 on every metric and in the mean
    (the issue: 'mean 0.000' at a 16.7% pass rate, while the gate counted 1.0); errors stay out."""
    from pytest_violin.gating import compare, build_baseline

    store = ResultsStore()
    store.add(_result(0, a=0.0, b=0.0))                       # passed, perfect
    for i in range(3):
        store.add(_no_image(i))                               # the model gave no image
    store.add(_no_image(7, outcome="refused"))                # the provider refused
    store.add(SampleResult(sample_id="color/v1/e", suite="violin", task="color", variation="v1",
                           outcome="error", error="no answer", index=200))  # not judged
    (row,) = [r for r in store.aggregate() if r.variation == "v1"]
    assert row.count == 6 and row.no_image == 3 and row.refused == 1 and row.errors == 1
    assert row.means["a"] == row.means["b"] == row.means["mean"] == pytest.approx(4 / 5)
    assert row.pass_rate == pytest.approx(1 / 6)
    # the gate's group value over the same samples is the table's mean
    base = build_baseline([_result(i, a=0.0, b=0.0) for i in range(1)] + [
        SampleResult(sample_id=f"color/v1/n{i}", suite="violin", task="color", variation="v1",
                     metrics={"a": 0.0, "b": 0.0, "mean": 0.0}, index=100 + i) for i in (0, 1, 2, 7)],
        suite="violin", profile="violin", seed=0, adapter="oracle")
    now = build_baseline(store.results, suite="violin", profile="violin", seed=0, adapter="m")
    (group,) = [g for g in compare(base, now).groups if g.variation == "v1"]
    assert group.mean.new == pytest.approx(row.means["mean"]) and group.n == 5
    # the metric deltas are those of the samples with an image on both sides; the samples
    # without one are counted apart, with their causes (causes before numbers)
    assert group.metric_deltas["a"][1] == 0.0 and group.imaged_n == 1
    assert group.no_image == 4 and dict(group.no_image_causes)["refused"] == 1
    assert now["aggregates"]["variations"][0]["metrics"]["mean"] == pytest.approx(row.means["mean"])


def test_a_variation_without_any_image_gets_the_task_columns():
    store = ResultsStore()
    store.add(_result(0, variation="v1", a=0.2, b=0.4))
    store.add(_no_image(0, variation="v2"))
    rows = {r.variation: r for r in store.aggregate(totals=True)}
    assert rows["v2"].metric_names == ("a", "b") and rows["v2"].means == {"a": 1.0, "b": 1.0, "mean": 1.0}
    assert rows[None].means["a"] == pytest.approx(0.6) and rows[None].means["mean"] == pytest.approx(0.65)


def test_a_task_without_any_image_still_has_its_metric_columns_at_one():
    """No sample of the task had an image: its limits name its metrics, each counting 1.0."""
    store = ResultsStore()
    for i in range(2):
        r = _no_image(i, task="shape", variation="circle")
        r.limits = {"iou": 0.1, "dist": 0.02, "mean": 0.05}
        store.add(r)
    store.add(SampleResult(sample_id="shape/circle/e", suite="violin", task="shape", variation="circle",
                           outcome="error", error="no answer", limits={"bogus": 1.0}, index=300))
    (row,) = [r for r in store.aggregate() if r.task == "shape"]
    assert row.metric_names == ("iou", "dist")  # an error names nothing
    assert row.means == {"iou": 1.0, "dist": 1.0, "mean": 1.0}


def test_outcome_is_the_string_files_hold_and_names_what_is_accepted():
    import json

    from pytest_violin.errors import InvalidArgumentError
    from pytest_violin.results import Outcome

    r = SampleResult.from_json(SampleResult("a", outcome="refused").to_json())
    assert r.outcome is Outcome.REFUSED and r.outcome.failing and r.outcome.judged
    assert json.loads(r.to_json())["outcome"] == "refused" and f"{r.outcome}" == "refused"
    with pytest.raises(InvalidArgumentError, match="'skipped'.*passed, failed, refused, error"):
        SampleResult("b", outcome="skipped")


def test_typed_fields_travel_under_extra_and_the_message_stays_home():
    r = SampleResult("a", definition="d" * 32, adapter="m", diagnosis=[{"kind": "k", "text": "t"}],
                     message="the failure text", extra={"thumbnails": {}})
    data = r.to_dict()
    assert data["extra"] == {"diagnosis": [{"kind": "k", "text": "t"}], "adapter": "m", "definition": "d" * 32,
                             "thumbnails": {}}
    assert "message" not in data and "definition" not in data
    back = SampleResult.from_dict(data)
    assert (back.definition, back.adapter, back.diagnosis, back.extra, back.message) == (
        "d" * 32, "m", [{"kind": "k", "text": "t"}], {"thumbnails": {}}, "")
