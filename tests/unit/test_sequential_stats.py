"""The sequential gate's logic (:mod:`pytest_violin.gating.sequential`): population, order, the
three statistics per task and variation, decisions, no pytest run.

The confidence sequence itself is tests/unit/test_sequential_confseq.py; the plugin wiring is
tests/plugin/test_sequential_plugin.py; the error rates over many runs of a suite-sized population are
benchmarks/bench_sequential.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pytest_violin.errors import InvalidArgumentError
from pytest_violin.gating.evidence import MIN_TESTED
from pytest_violin.gating.sequential import (LOOKS, SUCCESS_FLOOR, Member, SequentialGate, population,
                                           sequential_order)
from _stats import binomial_upper

MARGIN = 0.01
#: the built-in violin suite's color and shape groups
SUITE = [("color", "v1", 435), ("color", "v2", 1160),
         ("shape", "circle", 250), ("shape", "square", 250), ("shape", "triangle", 250)]
TOTAL = sum(n for *_, n in SUITE)
LIMIT = 0.06  # a sample passes when its mean metric is at most this (the simulations' limit)


def _outcome(value: float) -> str:
    return "passed" if value <= LIMIT else "failed"


def _build(old, new, *, seed=0, sizes=SUITE):
    """members, the gate's order and the new values; ``old(rng, n)``, ``new(rng, old, label)`` give arrays."""
    rng = np.random.default_rng(seed)
    members, values = {}, {}
    for task, var, n in sizes:
        o = np.asarray(old(rng, n), dtype=float)
        v = np.clip(np.asarray(new(rng, o, f"{task}/{var}"), dtype=float), 0, 1)
        for i in range(n):
            sid = f"{task}/{var}/{i:04d}"
            members[sid] = Member(sid, task, var, float(o[i]), _outcome(o[i]))
            values[sid] = float(v[i])
    strata = {sid: m.task for sid, m in members.items()}  # as the plugin: stratified by task
    return members, sequential_order(list(members), strata, seed=seed), values


def _run(members, order, values, *, alpha=0.05, outcome=_outcome, **kwargs):
    """The plugin's loop: the gate's order, skipping what it does not need, until it finishes."""
    gate = SequentialGate(members, order, margin=MARGIN, alpha=alpha, **kwargs)
    generated = 0
    for sid in order:
        if gate.finished is not None:
            break
        if gate.needed(sid):
            gate.add(sid, values[sid], outcome(values[sid]) if callable(outcome) else outcome[sid])
            generated += 1
    return gate, generated


def _zeros(rng, n):
    return np.zeros(n)


def _same(rng, o, label):
    return o.copy()


def _realistic(rng, n):
    """Mean metrics of a fair model: mostly near 0, 15% failures spread over the middle."""
    return np.where(rng.random(n) < 0.15, rng.beta(2, 6, n), rng.beta(1.5, 60, n))


# -- argument validation ------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, shown", [
    ({"alpha": 0}, "0"), ({"alpha": 1}, "1"), ({"alpha": 0.6}, "0.6"), ({"alpha": True}, "True"),
    ({"alpha": "0.05"}, "'0.05'"),
    ({"margin": -0.01}, "-0.01"), ({"margin": 1.5}, "1.5"), ({"margin": float("nan")}, "nan"),
    ({"max_pass_drop": -0.1}, "-0.1"), ({"max_pass_drop": "x"}, "'x'"),
    ({"max_refusal_rise": -0.2}, "-0.2"), ({"max_refusal_rise": 2}, "2"),
])
def test_gate_refuses_bad_arguments_naming_the_value(kwargs, shown):
    members = {"a": Member("a", "color", None, 0.0)}
    args = {"margin": MARGIN, **kwargs}
    with pytest.raises(InvalidArgumentError) as info:
        SequentialGate(members, ["a"], **args)
    assert shown in str(info.value)


# -- the groups and their statistics --------------------------------------------------------------


def test_every_task_and_variation_is_a_group_with_three_statistics_and_alpha_is_split_over_all():
    members, order, _ = _build(_zeros, _same, sizes=SUITE)
    gate = SequentialGate(members, order, margin=MARGIN, alpha=0.05)
    assert sorted(g.label for g in gate.groups) == sorted(
        ["color", "shape", "color/v1", "color/v2", "shape/circle", "shape/square", "shape/triangle"])
    assert all(set(g.sequences) == {"mean", "fail", "refusal"} for g in gate.groups)
    assert gate.alpha_low == gate.alpha_high == pytest.approx(0.05 / (7 * 3))
    one = SequentialGate(*_build(_zeros, _same, sizes=[("color", "v1", 10)])[:2], margin=MARGIN)
    assert [g.role for g in one.groups] == ["task"]  # a task of one variation: no variation group


def test_an_identical_model_is_shown_within_when_its_groups_are_large_enough():
    """Two variations of 1,200: each is within at its 25% look (300 samples); the task (2,400, a
    guardrail of its refusal rate) at its 50% look, 1,200 samples: half the population is generated."""
    sizes = [("color", "v1", 1200), ("color", "v2", 1200)]
    members, order, values = _build(_realistic, _same, sizes=sizes)
    gate, generated = _run(members, order, values)
    assert gate.verdict == "within-margin", gate.finished
    assert {g.status for g in gate.groups} == {"within"}
    assert generated <= 0.55 * 2400
    by = {g.label: g for g in gate.groups}
    assert by["color/v1"].used == by["color/v2"].used == 300
    assert by["color"].within["refusal"] == 1200  # the refusal rate is the last guardrail shown
    for g in gate.groups:
        for seq in g.sequences.values():
            low, high = seq.interval
            assert low <= 0.0 <= high


def test_groups_too_small_to_be_shown_within_end_not_shown_after_their_last_sample():
    """A stochastic model (half of its answers redrawn) on the suite's groups: the large groups are
    shown within, some small ones (shape/triangle's 250) cannot be shown within 0.01 on their samples:
    their samples run out, or a futility look stops them first; the gate names them and ends not shown,
    nothing regressed."""
    members, order, values = _build(
        _realistic, lambda rng, o, label: np.where(rng.random(o.size) < 0.5, _realistic(rng, o.size), o))
    gate, generated = _run(members, order, values)
    assert gate.verdict == "not-shown" and gate.finished is not None
    assert not gate.regressed and not gate.undecided
    not_shown = [g for g in gate.groups if g.status == "not-shown"]
    assert "shape/triangle" in {g.label for g in not_shown}
    assert any(g.status == "within" for g in gate.groups)
    for g in not_shown:
        assert g.label in gate.finished
        if g.futile:  # stopped at a futility look, before its end
            assert g.used in g.futility_looks and g.used < len(g.members)
        else:
            assert g.ended and g.used == g.looks[-1]  # judged at its last look, on every sample


def test_a_clear_regression_is_decided_early():
    """Against the oracle (0 everywhere), 10% of answers failing at 0.2-0.8: mean d about 0.05."""
    members, order, values = _build(
        _zeros, lambda rng, o, label: np.where(rng.random(o.size) < 0.1, rng.uniform(0.2, 0.8, o.size),
                                               rng.uniform(0.0, 0.01, o.size)))
    gate, generated = _run(members, order, values)
    assert gate.verdict == "regressed"
    assert generated < 0.2 * TOTAL
    assert gate.regressed and "regression" in gate.finished


def test_a_task_shown_within_does_not_end_the_watch_on_its_variations():
    """The task (v2 large and unchanged) is shown within first (its 25% look); v1, a twentieth of it
    and 0.03 worse, keeps its samples needed until it is shown regressed itself."""
    sizes = [("color", "v1", 300), ("color", "v2", 6000)]
    members, order, values = _build(_zeros, lambda rng, o, label: o + (0.03 if label == "color/v1" else 0.0),
                                    sizes=sizes)
    gate = SequentialGate(members, order, margin=MARGIN, max_pass_drop=1.0)
    by = {g.label: g for g in gate.groups}
    task, v2 = by["color"], by["color/v2"]
    seen_task_decided = seen_only_v1 = False
    for sid in order:
        if gate.finished is not None:
            break
        if task.status == "within":
            seen_task_decided = True
            if sid.startswith("color/v1/"):
                assert gate.needed(sid)
            if v2.status == "within":
                seen_only_v1 = True
                assert gate.needed(sid) == sid.startswith("color/v1/")
        if gate.needed(sid):
            gate.add(sid, values[sid], "passed")
    assert seen_task_decided and seen_only_v1
    assert gate.verdict == "regressed" and gate.regressed == ["color/v1"]


def test_a_rising_fail_rate_alone_is_a_regression():
    """20% of the passing samples now just over their limit: the fail rate rises by about 17
    points while the mean metric moves by about 0.006, under its margin."""
    sizes = [("color", None, 1200)]

    def new(rng, o, label):
        return np.where((o <= LIMIT) & (rng.random(o.size) < 0.2), LIMIT + 0.001, o)

    members, order, values = _build(_realistic, new, sizes=sizes)
    gate, _ = _run(members, order, values)
    assert gate.verdict == "regressed", gate.to_dict(total=1200)["groups"]
    stats = gate.to_dict(total=1200)["groups"][0]["statistics"]
    assert stats["fail"]["above"] and not stats["mean"]["above"]
    # the same stream with the fail rate's margin at 1 is not a regression of the fail rate
    gate, _ = _run(members, order, values, max_pass_drop=1.0)
    assert not gate.to_dict(total=1200)["groups"][0]["statistics"]["fail"]["above"]


def test_a_4_percent_refusal_rate_on_a_task_is_a_regression():
    sizes = [("shape", "circle", 250), ("shape", "square", 250), ("shape", "triangle", 250)]
    members, order, values = _build(_zeros, _same, sizes=sizes)
    refused = set(sorted(members)[::25])  # 30 of 750: 4%
    outcome = {sid: "refused" if sid in refused else "passed" for sid in members}
    values = {sid: 1.0 if sid in refused else v for sid, v in values.items()}
    gate, _ = _run(members, order, values, outcome=outcome)
    assert gate.verdict == "regressed", gate.finished


def test_the_same_refusals_as_the_baseline_are_no_regression_of_the_refusal_rate():
    sizes = [("color", None, 2000)]
    rng = np.random.default_rng(3)
    refused = rng.random(2000) < 0.05
    members = {f"c{i}": Member(f"c{i}", "color", None, 1.0 if r else 0.0, "refused" if r else "passed")
               for i, r in enumerate(refused)}
    order = sequential_order(list(members), {k: "color" for k in members}, seed=0)
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order:
        if gate.finished:
            break
        same = members[sid]
        gate.add(sid, same.old, same.old_outcome)
    assert gate.verdict == "within-margin"  # d = 0 on every statistic
    group = gate.groups[0]
    # 0 of 500 refusals differing rules out a 1-point rise only at the 50% look (1,000 samples)
    assert group.within == {"mean": 500, "fail": 500, "refusal": 1000} and not group.sequences["refusal"].above_margin
    assert sizes


def test_every_difference_on_the_margin_in_floating_point_is_neither_regressed_nor_within():
    """Every d = 0.03 - 0.02 = 0.009999999999999998: at the margin by the one tie rule; never
    called regressed, and never within either (non-inferiority needs the bound below the margin):
    the group is not shown (the ordinary gate says the same), at its first futility look, since no
    further sample can move a bound that sits on the margin."""
    members = {f"s{i}": Member(f"s{i}", "color", None, 0.02) for i in range(400)}
    order = sequential_order(list(members), {k: "color" for k in members}, seed=0)
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order:
        gate.add(sid, 0.03, "passed")
    assert gate.verdict == "not-shown" and not gate.regressed
    group = gate.groups[0]
    assert group.status == "not-shown" and group.futile and group.used == 100 and "mean" not in group.within
    assert not group.within  # stopped before the first look for "within" (300 samples)


def test_a_margin_of_1_is_accepted_and_nothing_regresses_on_it():
    members, order, values = _build(_zeros, lambda rng, o, label: np.ones(o.size), sizes=[("color", None, 30)])
    # every value 1.0 against 0 (d = 1): not above a margin of 1; the fail rate still watched
    gate = SequentialGate(members, order, margin=1.0, max_pass_drop=0.05)
    for sid in order:
        gate.add(sid, 1.0, "failed")
        if gate.finished:
            break
    stats = gate.to_dict(total=30)["groups"][0]["statistics"]
    assert gate.verdict == "regressed" and stats["fail"]["above"]
    assert not stats["mean"]["above"] and stats["mean"]["below"] and stats["refusal"]["below"]
    # both margins at 1: nothing can regress, but every d = 1 is at the margin, never shown within it
    gate = SequentialGate(members, order, margin=1.0, max_pass_drop=1.0)
    for sid in order:
        gate.add(sid, 1.0, "failed")
    assert gate.verdict == "not-shown" and not gate.regressed and gate.used == 30
    # a model half as bad is within, at the group's only look (its last sample: 30 < the floor)
    gate = SequentialGate(members, order, margin=1.0, max_pass_drop=1.0)
    gate.add(order[0], 0.5, "passed")
    assert gate.verdict == "undecided" and gate.finished is None  # no look on the first value
    for sid in order[1:]:
        gate.add(sid, 0.5, "passed")
    assert gate.verdict == "within-margin" and gate.groups[0].decided_at == 30


def test_errors_are_skipped_and_the_gate_still_decides():
    sizes = [("color", None, 200)]
    members, order, values = _build(_zeros, lambda rng, o, label: o + 0.3, sizes=sizes)
    errors = set(order[::7])
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order:
        gate.add(sid, None if sid in errors else values[sid], "error" if sid in errors else "failed")
        if gate.finished:
            break
    assert gate.verdict == "regressed"
    group = gate.groups[0]
    assert group.errors >= 1 and gate.used == group.used


def test_errors_only_a_group_is_never_shown_within():
    members, order, _ = _build(_zeros, _same, sizes=[("color", None, 5), ("shape", None, 5)])
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order:
        gate.add(sid, None if sid.startswith("color") else 0.0)
    by = {g.label: g for g in gate.groups}
    assert gate.verdict == "not-shown" and "color" in gate.finished
    assert by["color"].status == "not-shown" and by["color"].used == 0 and by["color"].errors == 5
    assert by["shape"].status == "not-shown" and not by["shape"].looks  # 5 < MIN_TESTED: no look
    assert gate.used == 5  # the shape values, no error counted


def test_values_enter_in_the_gate_order_whatever_order_they_arrive_in():
    members, order, values = _build(_zeros, lambda rng, o, label: o + 0.3, sizes=[("color", None, 40)])
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order[1:10]:
        gate.add(sid, values[sid], "failed")
    assert gate.used == 0 and gate.groups[0].used == 0  # the first has not arrived: the rest wait
    gate.add(order[0], values[order[0]], "failed")
    assert gate.used == 10 or gate.finished


def test_cached_values_come_first_in_each_stream():
    members, order, values = _build(_zeros, lambda rng, o, label: o + 0.3, sizes=[("color", None, 40)])
    cached = set(sorted(members)[:20])
    order = sequential_order(list(members), {k: "color" for k in members}, seed=0, cached=cached)
    assert set(order[:20]) == cached
    gate = SequentialGate(members, order, cached=cached, margin=MARGIN)
    assert gate.groups[0].members[:20] == order[:20]
    assert gate.to_dict(total=40)["cached"] == 20


def test_a_crashed_workers_samples_go_to_the_end_of_the_stream_instead_of_stalling_it():
    members, order, values = _build(_zeros, lambda rng, o, label: o + 0.3, sizes=[("color", None, 60)])
    gate = SequentialGate(members, order, margin=MARGIN)
    held = order[1:3]  # handed to a worker that died: xdist hands them out again at the very end
    for sid in [order[0], *order[3:6]]:
        gate.add(sid, values[sid], "failed")
    assert gate.used == 1  # waiting for order[1]
    assert gate.defer_stalled(slack=4) == []  # 3 later ones arrived: still in flight, perhaps
    gate.add(order[6], values[order[6]], "failed")
    moved = gate.defer_stalled(slack=4)
    assert moved == held and gate.used == 5
    assert gate.groups[0].members[-2:] == held
    for sid in order[7:]:
        if gate.finished:
            break
        gate.add(sid, values[sid], "failed")
    assert gate.verdict == "regressed"


def test_deferring_a_stream_whose_every_member_is_missing_ends():
    members, order, _ = _build(_zeros, _same, sizes=[("color", "a", 10), ("color", "b", 10)])
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order:
        if sid.startswith("color/a/"):
            gate.add(sid, 0.0)
    gate.defer_stalled(slack=0)  # every member of b is missing: each moved once, then it stops
    assert {g.label: g.next for g in gate.groups}["color/b"] == 0


# -- needed, done, finished, stop, to_dict ------------------------------------------------------


def test_needed_done_and_finished():
    sizes = [("color", None, 800), ("shape", None, 800)]
    members, order, values = _build(_zeros, _same, sizes=sizes)
    gate = SequentialGate(members, order, margin=MARGIN, max_pass_drop=0.05)
    color = [s for s in order if s.startswith("color")]
    shape = [s for s in order if s.startswith("shape")]
    assert gate.needed(color[0]) and gate.needed(shape[0]) and not gate.needed("not-a-member")
    fed = 0
    while ("color", None) not in gate.done():
        gate.add(color[fed], 0.0)
        fed += 1
        assert fed < 800
    assert gate.used == fed and not gate.needed(color[fed]) and gate.needed(shape[0])
    assert gate.finished is None and gate.verdict == "undecided"
    assert fed == gate.groups[0].decided_at and fed in gate.groups[0].looks  # at a planned look
    gate.add(color[fed], 0.5)  # an answer that arrives anyway does not change a decided group
    assert gate.groups[0].status == "within"
    for sid in shape:
        if gate.finished is not None:
            break
        gate.add(sid, 0.0)
    assert gate.verdict == "within-margin" and not any(gate.needed(s) for s in order)
    used, finished = gate.used, gate.finished
    gate.add(shape[-1], 1.0)  # ignored once finished
    gate.stop("budget spent")  # no effect once finished
    assert gate.used == used and gate.verdict == "within-margin" and gate.finished == finished


def test_stop_ends_the_gate_undecided():
    """gate.stop() (the budget, errors, an interruption) leaves the verdict and the open groups
    undecided, not "not-shown": the run's rule (gating/decide.py) then counts them not shown."""
    members, order, _ = _build(_zeros, _same, sizes=[("color", "v1", 400), ("color", "v2", 400)])
    gate = SequentialGate(members, order, margin=MARGIN)
    v1 = [sid for sid in order if sid.startswith("color/v1/")]
    for sid in v1[:300]:
        gate.add(sid, 0.0)
    assert {g.label: g.status for g in gate.groups}["color/v1"] == "within"  # its 75% look
    gate.stop("budget spent: 300 calls")
    assert gate.finished == "budget spent: 300 calls" and gate.verdict == "undecided"
    assert not gate.needed(order[-1]) and not gate.needed(v1[300])
    out = gate.to_dict(total=800)
    assert out["verdict"] == "undecided"
    assert {g["group"]: g["status"] for g in out["groups"]} == {
        "color": "undecided", "color/v1": "within", "color/v2": "undecided"}
    gate.add(v1[300], 0.0)  # ignored once stopped
    assert gate.used == 300 and gate.verdict == "undecided"


def test_a_gate_without_members_is_finished():
    gate = SequentialGate({}, ["a", "b"], margin=MARGIN)
    assert gate.finished is not None and gate.verdict == "undecided" and not gate.needed("a")


def test_to_dict_is_json_and_holds_the_numbers():
    members, order, values = _build(_zeros, lambda rng, o, label: o + 0.3,
                                    sizes=[("color", "v1", 100), ("color", "v2", 300)])
    gate, generated = _run(members, order, values)
    out = gate.to_dict(total=500, generated=generated, price=0.04, repeats=2)
    assert json.loads(json.dumps(out)) == out
    assert out["verdict"] == gate.verdict == "regressed"
    assert out["used"] == gate.used == generated
    assert out["total"] == 500 and out["population"] == 400 and out["cached"] == 0
    assert out["samples_not_generated"] == 500 - generated
    assert out["generations_saved"] == 2 * (500 - generated)
    assert out["usd_saved"] == pytest.approx(round(2 * (500 - generated) * 0.04, 2))
    assert out["alpha_per_group"] == {"low": pytest.approx(0.05 / 9), "high": pytest.approx(0.05 / 9)}
    assert out["margins"] == {"mean": MARGIN, "fail": 0.05, "refusal": MARGIN}
    assert out["looks"] == list(LOOKS) and out["success_floor"] == SUCCESS_FLOOR
    by = {g["group"]: g for g in out["groups"]}
    assert set(by) == {"color", "color/v1", "color/v2"}
    regressed = [g for g in out["groups"] if g["status"] == "regressed"]
    assert regressed and all(g["decided_after"] == generated for g in regressed)
    for g in regressed:
        assert any(s["above"] and s["interval"][0] > s["margin"] for s in g["statistics"].values())
        assert all(s["within_after"] is None for s in g["statistics"].values())
        assert g["interval"] == g["statistics"]["mean"]["interval"]  # the mean's, as before
    # the refusal rate is a guardrail of the task (400 >= 3 / 0.01) alone, never of a variation
    assert by["color"]["statistics"]["refusal"]["guardrail"] is True
    assert by["color/v1"]["statistics"]["refusal"]["guardrail"] is False
    assert all(by[k]["statistics"][s]["guardrail"] for k in by for s in ("mean", "fail"))
    assert by["color/v1"]["looks"] == [100] and by["color/v2"]["looks"] == [300]
    assert by["color"]["looks"] == [300, 400]
    assert by["color/v1"]["used"] + by["color/v2"]["used"] == generated
    assert "generations_saved" not in gate.to_dict(total=500)


# -- "within the margin": the planned looks -----------------------------------------------------


@pytest.mark.parametrize("size, looks", [
    (29, ()), (30, (30,)), (250, (250,)), (299, (299,)), (300, (300,)), (400, (300, 400)),
    (599, (450, 599)), (1200, (300, 600, 900, 1200)),
])
def test_the_looks_are_shares_of_the_group_none_before_the_floor_but_the_last(size, looks):
    """LOOKS of the group's samples, none before SUCCESS_FLOOR but the last; none at all for a
    group of fewer than MIN_TESTED."""
    members, order, _ = _build(_zeros, _same, sizes=[("color", None, size)])
    gate = SequentialGate(members, order, margin=MARGIN)
    group = gate.groups[0]
    assert group.looks == looks
    assert len(group.critical) == len(looks)
    assert all(n >= SUCCESS_FLOOR for n in looks[:-1]) and (size < MIN_TESTED or looks[-1] == size)
    # O'Brien-Fleming-like: stricter early, and the critical values fall look by look
    assert list(group.critical) == sorted(group.critical, reverse=True)


def test_a_group_below_the_success_floor_is_judged_only_at_its_last_sample():
    """A variation of 250 (< SUCCESS_FLOOR): an identical model is not within on 249 samples, it is
    at its one look, its 250th. Its task (500) looks at 375 and 500: the mean and fail rate are within
    at 375, the refusal rate (a guardrail of a task this size) only at 500."""
    sizes = [("shape", "circle", 250), ("shape", "square", 250)]
    members, order, values = _build(_zeros, _same, sizes=sizes)
    gate = SequentialGate(members, order, margin=MARGIN)
    by = {g.label: g for g in gate.groups}
    circle = by["shape/circle"]
    assert circle.looks == (250,) and by["shape"].looks == (375, 500)
    for sid in order:
        if gate.finished is not None:
            break
        gate.add(sid, values[sid], "passed")
        if circle.used < 250:
            assert circle.status == "undecided" and not circle.within, circle.used
    assert circle.status == "within" and circle.within == {"mean": 250, "fail": 250}
    assert by["shape"].within == {"mean": 375, "fail": 375, "refusal": 500}
    assert gate.verdict == "within-margin" and gate.used == 500


@pytest.mark.parametrize("refusal_margin, within_at", [(0.05, 300), (None, 900)])
def test_an_identical_model_on_1200_samples_needs_only_its_first_looks(refusal_margin, within_at):
    """A task of 1,200, the same answers as its baseline: within at its 25% look (300) when its margins
    allow it; the later samples are not needed. With the default refusal margin (0.01) no refusal on
    300 or 600 samples cannot rule out a 1-point rise at those looks' critical values: 900."""
    members, order, values = _build(_realistic, _same, sizes=[("color", None, 1200)])
    gate, generated = _run(members, order, values, max_refusal_rise=refusal_margin)
    group = gate.groups[0]
    assert gate.verdict == "within-margin", gate.finished
    assert generated == gate.used == group.used == within_at == group.decided_at
    assert group.within["mean"] == group.within["fail"] == 300 and group.within["refusal"] == within_at
    assert not any(gate.needed(sid) for sid in order)
    assert gate.to_dict(total=1200, generated=generated)["samples_not_generated"] == 1200 - within_at


def test_a_task_too_small_for_the_refusal_guardrail_is_within_without_its_refusal_rate_shown():
    """A task of 250 (< 3 / 0.01): its refusal rate is tested for harm alone. No refusal on either
    side of 250 samples cannot rule out a rise of 1 point (its bound is above 0.01), yet the task is
    within; one of 300 has the guardrail, and there the same 0 refusals show it within."""
    for size, guardrail in ((250, False), (300, True)):
        members, order, values = _build(_zeros, _same, sizes=[("shape", None, size)])
        gate, generated = _run(members, order, values)
        assert gate.verdict == "within-margin" and generated == size, (size, gate.finished)
        refusal = gate.to_dict(total=size)["groups"][0]["statistics"]["refusal"]
        assert refusal["guardrail"] is guardrail
        if guardrail:
            assert refusal["within_after"] == size and refusal["ruled_out_above"] < MARGIN
        else:
            assert refusal["within_after"] is None and refusal["ruled_out_above"] > MARGIN


def test_a_regression_is_shown_at_once_whatever_the_looks():
    """Harm is anytime: a group of 1,200 clearly worse regresses long before its first look (300)."""
    members, order, values = _build(_zeros, lambda rng, o, label: o + 0.3, sizes=[("color", None, 1200)])
    gate, generated = _run(members, order, values)
    assert gate.verdict == "regressed" and generated < SUCCESS_FLOOR
    assert not gate.groups[0].within


def test_an_error_does_not_cost_a_group_its_last_look():
    """A group of 250 with one error: 249 values, the same as the baseline's. The last look is planned
    at the group's size, which its values never reach; it is taken when its stream ends, so the group is
    within as the same group without the error is."""
    members, order, _ = _build(_zeros, _same, sizes=[("color", None, 250)])
    gate = SequentialGate(members, order, margin=MARGIN)
    for i, sid in enumerate(order):
        gate.add(sid, None if i == 0 else 0.0, "error" if i == 0 else "passed")
    assert gate.groups[0].used == 249 and gate.groups[0].ended
    assert gate.verdict == "within-margin", (gate.groups[0].status, gate.groups[0].last_bounds)


# -- the population ---------------------------------------------------------------------------


def test_population_pairs_the_samples_of_the_baseline_and_keeps_their_outcome():
    baseline = {"samples": [
        {"id": "a", "task": "color", "outcome": "passed", "metrics": {"mean": 0.1}, "definition": "d1"},
        {"id": "b", "task": "color", "outcome": "error", "metrics": {}},
        {"id": "c", "task": "color", "outcome": "failed", "metrics": {"x": 0.2, "y": 0.4}, "definition": "d3"},
        {"id": "d", "task": "color", "outcome": "refused", "metrics": {}},
        "not a mapping",
    ]}
    run = [("a", "color", "v1", "d1"), ("b", "color", "v1", None), ("c", "color", None, "other"),
           ("d", "color", "v2", None), ("e", "color", "v1", None)]
    members = population(baseline, run)
    assert set(members) == {"a", "d"}  # b ended in an error there, c is redefined, e is new
    assert members["a"] == Member("a", "color", "v1", 0.1, "passed")
    assert members["d"].old == 1.0 and members["d"].old_failed and members["d"].old_refused


# -- the order ---------------------------------------------------------------------------------


def _ids():
    ids, groups = [], {}
    for task, var, n in SUITE:
        for i in range(n):
            sid = f"{task}/{var}/{i:04d}"
            ids.append(sid)
            groups[sid] = f"{task}/{var}"
    return ids, groups


def test_order_is_deterministic_per_seed_and_differs_across_seeds():
    ids, groups = _ids()
    a = sequential_order(ids, groups, seed=3)
    assert sequential_order(ids, groups, seed=3) == a
    assert sorted(a) == sorted(ids)
    b = sequential_order(ids, groups, seed=4)
    assert b != a
    assert sum(x == y for x, y in zip(a, b)) < 0.05 * len(ids)


def test_order_does_not_depend_on_the_order_ids_are_given_in():
    ids, groups = _ids()
    assert sequential_order(list(reversed(ids)), groups, seed=9) == sequential_order(ids, groups, seed=9)


def test_order_puts_cached_first_and_the_samples_outside_the_population_last():
    ids, groups = _ids()
    outside = ["mask/x/1", "mask/x/0", "zz"]
    cached = {ids[5], ids[900], ids[2000], "zz"}  # "zz" is outside: it stays with the outside ones
    order = sequential_order(outside[:1] + ids + outside[1:], groups, seed=1, cached=cached)
    assert set(order[:3]) == {ids[5], ids[900], ids[2000]}
    assert order[-3:] == outside  # in their given order
    assert len(order) == len(ids) + 3


@pytest.mark.parametrize("seed", [0, 1, 2, 17])
def test_every_group_is_drawn_from_the_start_in_proportion_to_its_size(seed):
    ids, groups = _ids()
    order = sequential_order(ids, groups, seed=seed)
    for share in (0.02, 0.05, 0.1):
        head = order[:int(share * len(ids))]
        for task, var, n in SUITE:
            count = sum(1 for sid in head if groups[sid] == f"{task}/{var}")
            assert abs(count - len(head) * n / len(ids)) <= 2.0, (share, task, var, count)
    # and within a group the order is a shuffle, not the ids' order
    v1 = [sid for sid in order if groups[sid] == "color/v1"]
    assert v1 != sorted(v1)


@pytest.mark.parametrize("seed", [0, 1, 2, 17])
def test_stratified_by_task_every_variation_still_shows_in_the_first_tenth(seed):
    """The plugin's strata are the tasks; a variation is a random part of its task, so it shows
    from the start too, in proportion up to the draw (a generous 4-sigma band, fixed seeds)."""
    ids, groups = _ids()
    order = sequential_order(ids, {sid: sid.split("/")[0] for sid in ids}, seed=seed)
    head = order[:len(ids) // 10]
    for task, var, n in SUITE:
        task_share = sum(m for t, _, m in SUITE if t == task) / len(ids)
        in_task = sum(1 for sid in head if sid.startswith(task + "/"))
        assert abs(in_task - len(head) * task_share) <= 2.0
        count = sum(1 for sid in head if groups[sid] == f"{task}/{var}")
        expect = len(head) * n / len(ids)
        assert abs(count - expect) <= 4 * math.sqrt(expect) and count > 0, (task, var, count, expect)


# -- needed, task_done, finished, stop, to_dict ------------------------------------------------


@pytest.mark.slow  # many simulated gates: seconds
def test_an_unchanged_stochastic_model_is_rarely_called_regressed():
    """A model that redraws half of its answers between runs, gated against one of its runs: the
    expected difference is 0 on every statistic, the realised one is not. 25 fixed seeds: at
    most what alpha allows (the realised mean, which a without-replacement sequence converges
    to, is over the margin in about a fifth of these runs)."""
    sizes = [("color", "v1", 300), ("color", "v2", 300)]
    regressed = 0
    for seed in range(25):
        members, order, values = _build(
            _realistic, lambda rng, o, label: np.where(rng.random(o.size) < 0.5, _realistic(rng, o.size), o),
            sizes=sizes, seed=seed)
        gate, _ = _run(members, order, values)
        regressed += gate.verdict == "regressed"
    assert regressed <= binomial_upper(25, 0.05, 1e-3)



def test_the_margin_tie_gets_the_same_verdict_from_both_gates():
    """Every d = 0.03 - 0.02: the ordinary gate's comparison and the sequential gate (fed the same
    samples to their end) both say not regressed and not shown within (the worsening is at the
    margin, not below it): not shown, not green."""
    from pytest_violin.gating import build_baseline, compare

    def doc(value):
        records = [{"id": f"color/v1/{i:03d}", "sample_id": f"color/v1/{i:03d}", "task": "color",
                    "variation": "v1", "outcome": "passed", "metrics": {"mean": value}} for i in range(60)]
        return build_baseline(records, suite="violin", profile="violin", seed=0, adapter="x")

    old, new = doc(0.02), doc(0.03)
    ordinary = compare(old, new, max_regression=MARGIN)
    assert ordinary.outcome == "not-shown" and not ordinary.ok and not ordinary.regressions
    assert compare(old, new, max_regression=MARGIN, accept_not_shown=True).ok
    members = population(old, [(s["id"], "color", "v1", None) for s in new["samples"]])
    assert len(members) == 60
    order = sequential_order(list(members), {k: "color" for k in members}, seed=0)
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order:
        gate.add(sid, 0.03, "passed")
    assert gate.verdict == "not-shown" and not gate.regressed


def test_a_group_too_noisy_for_its_samples_stops_for_futility_and_is_never_within():
    """An unchanged model whose every answer is half the range off, either way (paired sd 0.5; about 15,500
    samples would show it within 0.01), on a group of 1,200: at a futility look it cannot be shown within by
    its end and nothing heads for a regression; it stops there, not shown, the rest not needed."""
    rng = np.random.default_rng(4)
    members = {f"s{i:04d}": Member(f"s{i:04d}", "color", None, 0.5) for i in range(1200)}
    order = sequential_order(list(members), {k: "color" for k in members}, seed=0)
    signs = rng.permutation(np.repeat([-1.0, 1.0], 600))  # the expected difference, and the realised one, 0
    gate = SequentialGate(members, order, margin=MARGIN, max_pass_drop=1.0, max_refusal_rise=1.0)
    generated = 0
    for sid, sign in zip(order, signs):
        if gate.finished is not None:
            break
        gate.add(sid, 0.5 + 0.5 * sign, "passed")
        generated += 1
    group = gate.groups[0]
    assert gate.verdict == "not-shown" and group.futile and "mean" not in group.within
    assert generated == group.decided_at < 1200 and generated in group.futility_looks


def test_a_group_heading_for_a_regression_is_not_stopped_for_futility():
    """The same noise around +0.05 (5 margins worse): "within" is out of reach at the first look, but a
    regression is within reach, so the group goes on until the harm test shows it."""
    rng = np.random.default_rng(4)
    members = {f"s{i:04d}": Member(f"s{i:04d}", "color", None, 0.4) for i in range(1200)}
    order = sequential_order(list(members), {k: "color" for k in members}, seed=0)
    gate = SequentialGate(members, order, margin=MARGIN, max_pass_drop=1.0, max_refusal_rise=1.0)
    for sid, e in zip(order, rng.normal(0.05, 0.2, len(order))):
        if gate.finished is not None:
            break
        gate.add(sid, min(1.0, max(0.0, 0.4 + e)), "passed")
    assert gate.verdict == "regressed" and not gate.groups[0].futile
