"""The sequential gate's statistics: the confidence sequence and the gate's logic (no pytest run).

:mod:`pytest_violin.gating.confseq` (the betting confidence sequence for
sampling without replacement) and :mod:`pytest_violin.gating.sequential`
(population, order, decisions). The plugin wiring is
tests/test_sequential_plugin.py; the error rates over many runs of a
suite-sized population are benchmarks/bench_sequential.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pytest_violin.errors import InvalidArgumentError, ViolinError
from pytest_violin.gating.confseq import MeanSequence
from pytest_violin.gating.sequential import Member, SequentialGate, population, sequential_order

MARGIN = 0.01
#: the built-in violin suite's color and shape groups
SUITE = [("color", "v1", 435), ("color", "v2", 1160),
         ("shape", "circle", 250), ("shape", "square", 250), ("shape", "triangle", 250)]
TOTAL = sum(n for *_, n in SUITE)


def _build(old, new, *, seed=0, sizes=SUITE):
    """members, the gate's order and the new values; ``old(rng, n)``, ``new(rng, old)`` give arrays."""
    rng = np.random.default_rng(seed)
    members, values = {}, {}
    for task, var, n in sizes:
        o = np.asarray(old(rng, n), dtype=float)
        v = np.asarray(new(rng, o), dtype=float)
        for i in range(n):
            sid = f"{task}/{var}/{i:04d}"
            members[sid] = Member(sid, task, var, float(o[i]))
            values[sid] = float(v[i])
    strata = {sid: m.task for sid, m in members.items()}  # as the plugin: stratified by task
    return members, sequential_order(list(members), strata, seed=seed), values


def _run(members, order, values, *, alpha=0.05):
    """The plugin's loop: the gate's order, skipping what it does not need, until it finishes."""
    gate = SequentialGate(members, order, margin=MARGIN, alpha=alpha)
    generated = 0
    for sid in order:
        if gate.finished is not None:
            break
        if gate.needed(sid):
            gate.add(sid, values[sid])
            generated += 1
    return gate, generated


def _zeros(rng, n_or_old):
    """Zeros: a baseline of the oracle (given a size), or a new model as good (given the old values)."""
    return np.zeros(np.shape(n_or_old) if isinstance(n_or_old, np.ndarray) else n_or_old)


def _realistic(rng, n):
    """Mean metrics of a fair model: mostly near 0, 15% failures spread over the middle."""
    return np.where(rng.random(n) < 0.15, rng.beta(2, 6, n), rng.beta(1.5, 60, n))


# -- argument validation ------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, shown", [
    ({"size": 0}, "0"), ({"size": -3}, "-3"), ({"size": 2.5}, "2.5"), ({"size": True}, "True"),
    ({"margin": float("nan")}, "nan"), ({"margin": 1.5}, "1.5"), ({"margin": "0.01"}, "'0.01'"),
    ({"alpha_low": 0}, "0"), ({"alpha_low": 1.0}, "1.0"), ({"alpha_high": True}, "True"),
    ({"alpha_high": "0.05"}, "'0.05'"), ({"alpha_low": float("nan")}, "nan"),
    ({"known": [0.1, 2.0]}, "2"), ({"size": 2, "known": [0, 0, 0]}, "3"),
])
def test_sequence_refuses_bad_arguments_naming_the_value(kwargs, shown):
    args = {"size": 10, "margin": MARGIN, "alpha_low": 0.05, "alpha_high": 0.05, **kwargs}
    size, margin = args.pop("size"), args.pop("margin")
    with pytest.raises(InvalidArgumentError) as info:
        MeanSequence(size, margin, **args)
    assert shown in str(info.value)
    assert isinstance(info.value, ViolinError)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1.5, -1.01])
def test_sequence_refuses_a_value_outside_the_range(value):
    seq = MeanSequence(3, MARGIN, alpha_low=0.05, alpha_high=0.05)
    with pytest.raises(InvalidArgumentError) as info:
        seq.add(value)
    assert repr(float(value)) in str(info.value)
    assert seq.seen == 0


def test_sequence_refuses_a_value_past_the_population():
    seq = MeanSequence(2, MARGIN, alpha_low=0.05, alpha_high=0.05, known=[0.0])
    seq.add(0.0)
    with pytest.raises(InvalidArgumentError) as info:
        seq.add(0.0)
    assert "1" in str(info.value)


@pytest.mark.parametrize("kwargs, shown", [
    ({"alpha": 0}, "0"), ({"alpha": 1}, "1"), ({"alpha": True}, "True"), ({"alpha": "0.05"}, "'0.05'"),
    ({"margin": -0.01}, "-0.01"), ({"margin": 1.0}, "1.0"), ({"margin": float("nan")}, "nan"),
])
def test_gate_refuses_bad_arguments_naming_the_value(kwargs, shown):
    members = {"a": Member("a", "color", None, 0.0)}
    args = {"margin": MARGIN, **kwargs}
    with pytest.raises(InvalidArgumentError) as info:
        SequentialGate(members, ["a"], **args)
    assert shown in str(info.value)


# -- the confidence sequence ------------------------------------------------------------------


def _population(rng, kind: int, n: int) -> np.ndarray:
    """Small populations of paired differences, skewed both ways, flat, and two-point."""
    tail = np.where(rng.random(n) < 0.1, rng.uniform(0.3, 1.0, n), rng.uniform(-0.02, 0.02, n))
    return [tail, -tail, rng.uniform(-1, 1, n), np.where(rng.random(n) < 0.5, -0.4, 0.6)][kind % 4]


def _binomial_upper(n: int, p: float, tail: float = 1e-6) -> int:
    """The smallest k with P(Binomial(n, p) > k) < tail."""
    total = 0.0
    for k in range(n + 1):
        total += math.comb(n, k) * p ** k * (1 - p) ** (n - k)
        if 1.0 - total < tail:
            return k
    return n


def test_interval_holds_the_true_mean_at_every_look_in_at_least_1_minus_alpha_of_runs():
    """300 fixed seeds: a population of 30 (four shapes), a random order, every look checked."""
    runs, size, alpha = 300, 30, 0.1
    missed_low = missed_high = 0
    widths_half, widths_end = [], []
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        values = _population(rng, seed, size)
        mean = float(values.mean())
        seq = MeanSequence(size, MARGIN, alpha_low=alpha, alpha_high=alpha)
        low_wrong = high_wrong = False
        for t, d in enumerate(rng.permutation(values), start=1):
            seq.add(float(d))
            low, high = seq.interval
            assert low <= high
            low_wrong |= low > mean + 1e-9
            high_wrong |= high < mean - 1e-9
            if t == size // 2:
                widths_half.append(high - low)
            if t == size - 1:
                widths_end.append(high - low)
        missed_low += low_wrong
        missed_high += high_wrong
    bound = _binomial_upper(runs, alpha)
    assert missed_low <= bound and missed_high <= bound, (missed_low, missed_high, bound)
    # and it is a real interval that shrinks, not [-1, 1] for ever: without replacement, one value
    # before the end the mean is known within 2/size
    assert np.median(widths_half) < 1.5
    assert max(widths_end) <= 2.0 / size + 2.5e-3  # and a grid step each side


@pytest.mark.parametrize("values, known", [
    ([0.3, -0.1, 0.5, -0.3, 0.9], ()),
    ([0.0, 0.0, 0.0, 0.0, 0.0, 0.8, 0.0], ()),
    ([-0.6, 0.2, 0.1, 0.0, 0.4], (0.5, -0.2)),
])
def test_the_capital_at_the_true_mean_is_a_martingale_over_every_order(values, known):
    """The heart of anytime validity, exactly: over all orders of a small population, the mean
    capital of each side's bet at the true mean is 1 at every look (white box: the log capitals),
    so Ville's inequality bounds the chance that it ever reaches 1/alpha."""
    import itertools

    mean = (sum(values) + sum(known)) / (len(values) + len(known))
    capital_up = np.zeros(len(values))
    capital_down = np.zeros(len(values))
    moved = 0.0
    orders = sorted(set(itertools.permutations(values)))  # each distinct order equally likely
    for order in orders:
        seq = MeanSequence(len(values) + len(known), mean, alpha_low=0.05, alpha_high=0.05, known=known)
        at = int(np.flatnonzero(seq.grid == mean)[0])  # the margin is on the grid: put it at the mean
        for t, d in enumerate(order):
            seq.add(d)
            capital_up[t] += math.exp(seq._log_up[at])
            capital_down[t] += math.exp(seq._log_down[at])
            moved = max(moved, abs(seq._log_up[at]), abs(seq._log_down[at]))
    assert moved > 0.05  # the bets are not all zero
    np.testing.assert_allclose(capital_up / len(orders), 1.0, atol=1e-9)
    np.testing.assert_allclose(capital_down / len(orders), 1.0, atol=1e-9)


def test_a_sequence_at_a_loose_level_misses_more_often_than_at_a_strict_one():
    """The level is used: alpha 0.5 misses more runs than alpha 0.01 on the same streams."""
    misses = {}
    for alpha in (0.01, 0.5):
        count = 0
        for seed in range(60):
            rng = np.random.default_rng(1000 + seed)
            values = _population(rng, seed, 30)
            mean = float(values.mean())
            seq = MeanSequence(30, MARGIN, alpha_low=alpha, alpha_high=alpha)
            wrong = False
            for d in rng.permutation(values):
                seq.add(float(d))
                low, high = seq.interval
                wrong |= low > mean + 1e-9 or high < mean - 1e-9
            count += wrong
        misses[alpha] = count
    assert misses[0.01] <= 3
    assert misses[0.5] > misses[0.01]


def test_exhausting_the_stream_gives_the_exact_mean_and_decides():
    rng = np.random.default_rng(7)
    for values, regressed in ((rng.uniform(-0.05, 0.1, 25) + 0.0, None), (np.full(25, 0.02), True),
                              (np.full(25, 0.0), False)):
        seq = MeanSequence(values.size, MARGIN, alpha_low=0.05, alpha_high=0.05)
        for d in values[:-1]:
            seq.add(float(d))
        assert not seq.exhausted
        seq.add(float(values[-1]))
        assert seq.exhausted
        low, high = seq.interval
        assert low == pytest.approx(values.mean(), abs=1e-12) and high == low
        expect = bool(values.mean() > MARGIN) if regressed is None else regressed
        assert seq.above_margin is expect
        assert seq.below_margin is (not expect)


@pytest.mark.parametrize("margin", [0.0, 0.25])
def test_a_mean_exactly_at_the_margin_is_not_regressed(margin):
    """The rule is "regressed above the margin": a population whose exact mean is the margin passes."""
    values = [margin + 0.5, margin - 0.5] * 6
    seq = MeanSequence(len(values), margin, alpha_low=0.05, alpha_high=0.05)
    for d in values:
        assert not seq.above_margin
        seq.add(d)
    assert seq.interval == (margin, margin)
    assert seq.below_margin and not seq.above_margin


def test_known_values_enter_exactly():
    # all known: decided at once, the exact mean
    known = [0.3, -0.1, 0.05, 0.0, 0.2]
    seq = MeanSequence(5, MARGIN, alpha_low=0.05, alpha_high=0.05, known=known)
    assert seq.exhausted and seq.seen == 0
    assert seq.interval == (pytest.approx(0.09, abs=1e-12), pytest.approx(0.09, abs=1e-12))
    assert seq.above_margin and not seq.below_margin
    # nine of ten known: the mean is within 1/10 of what they show, before any draw
    seq = MeanSequence(10, MARGIN, alpha_low=0.05, alpha_high=0.05, known=[0.5] * 9)
    low, high = seq.interval
    assert 0.35 - 2e-3 <= low and high <= 0.55 + 2e-3
    assert seq.above_margin  # at least 0.35: shown above the margin by what is known alone
    seq.add(-1.0)
    assert seq.interval == (pytest.approx(0.35), pytest.approx(0.35))


def test_gate_with_every_member_cached_decides_when_the_last_cached_value_arrives():
    members, order, values = _build(_realistic, lambda rng, o: o + 0.0, sizes=[("color", None, 30)])
    gate = SequentialGate(members, order, cached=set(members), margin=MARGIN)
    assert gate.order[:30] == order[:30]
    for sid in order[:-1]:
        gate.add(sid, values[sid])
        assert gate.finished is None
    gate.add(order[-1], values[order[-1]])
    assert gate.verdict == "not-regressed"
    assert gate.used == 30
    assert gate.groups[0].sequence.interval == (pytest.approx(0.0, abs=1e-12), pytest.approx(0.0, abs=1e-12))


def test_cached_values_count_before_the_stream():
    # a task far worse than the margin, half of it cached
    members, order, values = _build(_zeros, lambda rng, o: np.full(o.size, 0.3), sizes=[("color", None, 40)])
    cached = set(order[:20])
    order = sequential_order(list(members), {k: "color/None" for k in members}, seed=0, cached=cached)
    assert set(order[:20]) == cached
    gate = SequentialGate(members, order, cached=cached, margin=MARGIN)
    for sid in order[:19]:
        gate.add(sid, values[sid])
    assert gate.used == 0 and gate.groups[0].sequence is None  # waits for every cached value
    gate.add(order[19], values[order[19]])
    assert gate.used == 20
    seq = gate.groups[0].sequence
    assert seq.size == 40 and seq.remaining == 20 and seq.seen == 0  # known, not drawn
    taken = 20
    while gate.finished is None:
        gate.add(order[taken], values[order[taken]])
        taken += 1
    assert gate.verdict == "regressed"
    assert taken < 40  # decided before the stream is exhausted


# -- the gate on suite-sized populations ------------------------------------------------------


def test_an_identical_model_is_certified_not_regressed_well_before_exhaustion():
    members, order, values = _build(_realistic, lambda rng, o: o.copy())
    gate, generated = _run(members, order, values)
    assert gate.verdict == "not-regressed"
    assert generated == gate.used
    assert generated < 0.35 * TOTAL  # issue 25: the same model as its own baseline, under 35%
    for g in gate.groups:
        if g.role == "decide":
            low, high = g.sequence.interval
            assert low <= 0.0 <= high <= MARGIN


def test_a_clear_regression_is_decided_early():
    """Against the oracle (0 everywhere), 10% of answers failing at 0.2-0.8: mean d about 0.05."""
    members, order, values = _build(
        _zeros, lambda rng, o: np.where(rng.random(o.size) < 0.1, rng.uniform(0.2, 0.8, o.size),
                                        rng.uniform(0.0, 0.01, o.size)))
    gate, generated = _run(members, order, values)
    assert gate.verdict == "regressed"
    assert generated < 0.2 * TOTAL  # issue 25: under 20% of the color and shape samples
    assert gate.regressed and "regression" in gate.finished


def test_a_regressed_variation_fails_the_gate_while_its_task_is_fine():
    sizes = [("color", "v1", 150), ("color", "v2", 600)]
    members, order, values = _build(
        _zeros, lambda rng, o: np.full(o.size, 0.3 if o.size == 150 else 0.0), sizes=sizes)
    gate, _ = _run(members, order, values)
    assert gate.verdict == "regressed"
    assert gate.regressed == ["color/v1"]


def test_errors_shrink_the_population_and_the_gate_still_decides():
    sizes = [("color", None, 60)]
    members, order, values = _build(_realistic, lambda rng, o: o + 0.002, sizes=sizes)
    errors = set(order[::7])  # one in seven ended in an error
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order:
        gate.add(sid, None if sid in errors else values[sid])
    assert gate.finished is not None and gate.verdict in ("regressed", "not-regressed")
    kept = [s for s in order if s not in errors]
    assert gate.used <= len(kept)
    assert gate.groups[0].sequence.size == len(kept)  # the errors left the population


def test_errors_only_a_task_is_never_called_decided():
    members, order, _ = _build(_zeros, _zeros, sizes=[("color", None, 5), ("shape", None, 5)])
    gate = SequentialGate(members, order, margin=MARGIN)
    for sid in order:
        gate.add(sid, None if sid.startswith("color") else 0.0)
    assert not gate.task_done("color")
    assert gate.verdict == "undecided"
    assert gate.used == 5  # the shape values, no error counted


def test_errors_leave_the_exact_mean_of_the_rest():
    """20 members, 5 errors; the margin at the mean of the other 15 (undecidable before the end)."""
    members, order, values = _build(_zeros, lambda rng, o: rng.uniform(0.3, 0.7, o.size),
                                    sizes=[("color", None, 20)])
    errors = set(order[3:8])
    kept = np.array([values[s] for s in order if s not in errors])
    gate = SequentialGate(members, order, margin=float(kept.mean()), alpha=0.05)
    for sid in order[:8]:
        gate.add(sid, None if sid in errors else values[sid])
    assert gate.finished is None and gate.used == 3
    assert gate.groups[0].sequence.size == 15 and gate.groups[0].sequence.seen == 3  # replayed
    for sid in order[8:]:
        gate.add(sid, values[sid])
    seq = gate.groups[0].sequence
    assert seq.exhausted and gate.used == 15
    assert seq.interval[0] == pytest.approx(kept.mean(), abs=1e-12)
    assert gate.verdict in ("not-regressed", "regressed")


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


def test_needed_task_done_and_finished():
    sizes = [("color", None, 200), ("shape", None, 200)]
    members, order, values = _build(_zeros, _zeros, sizes=sizes)
    gate = SequentialGate(members, order, margin=MARGIN)
    color = [s for s in order if s.startswith("color")]
    shape = [s for s in order if s.startswith("shape")]
    assert gate.needed(color[0]) and gate.needed(shape[0])
    assert not gate.needed("not-a-member")
    fed = 0
    while not gate.task_done("color"):
        gate.add(color[fed], 0.0)
        fed += 1
    assert fed < 200
    assert gate.used == fed
    assert not gate.needed(color[fed]) and gate.needed(shape[0])
    assert not gate.task_done("shape") and gate.finished is None and gate.verdict == "undecided"
    gate.add(color[fed], 0.5)  # an answer that arrives anyway does not change a decided task
    assert gate.groups[0].status == "not-regressed"
    for sid in shape:
        if gate.finished is not None:
            break
        gate.add(sid, 0.0)
    assert gate.verdict == "not-regressed" and gate.task_done("shape")
    assert not any(gate.needed(s) for s in order)
    used = gate.used
    gate.add(shape[-1], 1.0)  # ignored once finished
    gate.stop("budget spent")  # no effect once finished
    assert gate.used == used and gate.verdict == "not-regressed"
    assert gate.finished == "every task is shown not to have regressed"


def test_stop_ends_the_gate_undecided():
    members, order, _ = _build(_zeros, _zeros, sizes=[("color", None, 50)])
    gate = SequentialGate(members, order, margin=MARGIN)
    gate.add(order[0], 0.0)
    gate.stop("budget spent: 1 call")
    assert gate.finished == "budget spent: 1 call" and gate.verdict == "undecided"
    assert not gate.needed(order[1])


def test_a_gate_without_members_is_finished():
    gate = SequentialGate({}, ["a", "b"], margin=MARGIN)
    assert gate.finished is not None and gate.verdict == "undecided" and not gate.needed("a")


def test_alpha_is_split_over_groups_and_tasks():
    members, order, _ = _build(_zeros, _zeros, sizes=SUITE)
    gate = SequentialGate(members, order, margin=MARGIN, alpha=0.05)
    assert len(gate.groups) == 7  # 2 tasks, 5 variations
    assert gate.alpha_low == pytest.approx(0.05 / 7) and gate.alpha_high == pytest.approx(0.05 / 2)
    roles = sorted((g.role, g.label) for g in gate.groups)
    assert [r for r, _ in roles].count("decide") == 2
    # a task of one variation has no watch group
    one = SequentialGate(*_build(_zeros, _zeros, sizes=[("color", "v1", 10)])[:2], margin=MARGIN)
    assert [g.role for g in one.groups] == ["decide"]


def test_to_dict_is_json_and_holds_the_numbers():
    members, order, values = _build(_realistic, lambda rng, o: o.copy(),
                                    sizes=[("color", "v1", 100), ("color", "v2", 300)])
    gate, generated = _run(members, order, values)
    out = gate.to_dict(total=500, generated=generated, price=0.04, repeats=2)
    again = json.loads(json.dumps(out))
    assert again == out
    assert out["verdict"] == gate.verdict == "not-regressed"
    assert out["used"] == gate.used == generated
    assert out["total"] == 500 and out["population"] == 400 and out["cached"] == 0
    assert out["samples_not_generated"] == 500 - generated
    assert out["generations_saved"] == 2 * (500 - generated)
    assert out["usd_saved"] == pytest.approx(round(2 * (500 - generated) * 0.04, 2))
    assert out["alpha_per_group"] == {"low": pytest.approx(0.05 / 3), "high": pytest.approx(0.05)}
    by = {g["group"]: g for g in out["groups"]}
    assert set(by) == {"color", "color/v1", "color/v2"}
    assert by["color"]["status"] == "not-regressed" and by["color"]["decided_after"] == generated
    assert by["color"]["size"] == 400 and by["color"]["used"] == generated
    low, high = by["color"]["interval"]
    assert low <= 0.0 <= high <= MARGIN
    assert by["color/v1"]["used"] + by["color/v2"]["used"] == generated
    assert "generations_saved" not in gate.to_dict(total=500)


# -- the population ---------------------------------------------------------------------------


def test_population_pairs_the_samples_of_the_baseline():
    baseline = {"samples": [
        {"id": "a", "task": "color", "outcome": "pass", "metrics": {"mean": 0.1}, "definition": "d1"},
        {"id": "b", "task": "color", "outcome": "error", "metrics": {}},
        {"id": "c", "task": "color", "outcome": "fail", "metrics": {"x": 0.2, "y": 0.4}, "definition": "d3"},
        {"id": "d", "task": "color", "outcome": "fail", "metrics": {}},
        "not a mapping",
    ]}
    run = [("a", "color", "v1", "d1"), ("b", "color", "v1", None), ("c", "color", None, "other"),
           ("d", "color", "v2", None), ("e", "color", "v1", None)]
    members = population(baseline, run)
    assert set(members) == {"a", "d"}  # b ended in an error there, c is redefined, e is new
    assert members["a"] == Member("a", "color", "v1", 0.1)
    assert members["d"].old == 1.0  # no image or a refusal counts as the worst
