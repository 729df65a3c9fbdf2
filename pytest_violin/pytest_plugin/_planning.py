"""What a run is about to do, counted before the first generation."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from ..execution.usage import COST_TOLERANCE as _TOLERANCE
from ..execution.usage import DEFAULT_BILLED_MAX_CALLS, adapter_bills
from ..report.text import format_usd

__all__ = ["Plan", "adapter_bills", "announce_plan", "call_cap", "calls_note", "cost_limit_message", "format_usd",
           "reruns_note"]

@dataclass(frozen=True)
class Plan:
    """The generations a run will make."""

    adapter: str
    suite: str
    samples: int
    repeats: int
    cached: int
    price: float | None = None
    #: how reruns (pytest-rerunfailures) are counted, when they may happen (see :func:`reruns_note`)
    reruns: str = ""
    #: which ``--violin-max-calls`` applies, e.g. ``bills: at most 2000 calls`` (see :func:`calls_note`)
    calls: str = ""

    @property
    def generations(self) -> int:
        """Images the run needs."""
        return self.samples * self.repeats

    @property
    def uncached(self) -> int:
        """Images the model will be asked for."""
        return self.generations - self.cached

    @property
    def estimated_cost(self) -> float | None:
        """USD of the uncached generations at :attr:`price`; None without a price."""
        return None if self.price is None else float(self.uncached) * float(self.price)

    def describe(self) -> str:
        """One line for the terminal."""
        calls = f" ({self.calls})" if self.calls else ""
        line = (f"adapter {self.adapter}{calls}, suite {self.suite}, {self.samples} samples x "
                f"{self.repeats} repeat{'s' if self.repeats != 1 else ''} = {self.generations} "
                f"generations, {self.cached} in the cache, {self.uncached} to make")
        if self.price is not None:
            line += (f", estimated cost {format_usd(self.estimated_cost)} "
                     f"at {format_usd(self.price)} per image")
        if self.reruns:
            line += f"; {self.reruns}"
        return line


def _max_calls(vs) -> int | None:
    """``--violin-max-calls``, or its default where the adapter bills (:func:`adapter_bills`)."""
    s = vs.settings
    return DEFAULT_BILLED_MAX_CALLS if not s.max_calls_given and vs.bills else s.max_calls


def call_cap(vs) -> tuple[int | None, str]:
    """The calls this run may make at run time, and the option that says so (docs/plugin.md): the one
    rule :func:`pytest_violin.execution.usage.call_cap`, which evaluate() applies too."""
    from ..execution.usage import call_cap as cap

    s = vs.settings
    # a batch run pays the batch price
    return cap(s.max_calls, given=s.max_calls_given, bills=vs.bills, price=vs.run_price(), max_cost=s.max_cost)


def reruns_note(config, *, cached: bool) -> str:
    """How reruns are counted, for the plan line; ``""`` without pytest-rerunfailures' ``--reruns``."""
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return ""
    reruns = config.getoption("reruns", None) or 0
    if not isinstance(reruns, int) or reruns <= 0:  # @pytest.mark.flaky reruns are counted alike
        return ""
    what = f"--reruns={reruns}"
    if cached:
        return (f"reruns ({what}): a rerun of a violin:: item scores its cached image again, no call "
                f"(a generation that failed is made again and counted); calls are capped, not items")
    return (f"reruns ({what}): each rerun of a failing item calls the model again and is counted and "
            f"capped as a call")


def calls_note(limit: int | None, *, given: bool, bills: bool, network: bool) -> str:
    """The plan line's words for the ``--violin-max-calls`` that applies."""
    if given:
        return "no call limit (--violin-max-calls=none)" if limit is None else \
            f"at most {limit} calls (--violin-max-calls)"
    if bills:
        return f"bills: at most {limit} calls by default"
    return "self-hosted: no call limit by default" if network else "local: no call limit"


def cost_limit_message(plan: Plan, max_cost: float) -> str | None:
    """Why ``plan`` may not start under ``--violin-max-cost=max_cost``; None when it may."""
    cost = plan.estimated_cost
    # a relative tolerance: 3 images at $0.10 (0.30000000000000004) fit a $0.30 budget
    if cost is None or cost <= max_cost * (1 + _TOLERANCE):
        return None
    # the most uncached generations the budget allows at this price
    affordable = math.floor(max_cost / plan.price * (1 + _TOLERANCE)) if plan.price else plan.uncached
    return (f"--violin-max-cost={max_cost:g}: this run plans {plan.uncached} uncached generations with "
            f"{plan.adapter} at {format_usd(plan.price)} per image, an estimated {format_usd(cost)}, "
            f"more than the limit of {format_usd(max_cost)}; narrow it to at most {affordable} "
            f"uncached generations (--violin-limit=N, --violin-tasks=..., --violin-repeats=K, -k, a path) "
            f"or raise the limit (--violin-max-cost=USD)")


def cached_repeats(state, samples) -> dict:
    """Sample id -> how many of its ``--violin-repeats`` images the cache holds (0 when none)."""
    s = state.settings
    samples = list(samples)
    # the sequential gate's order and the plan line both ask, before anything is generated: the
    # answers are kept until the runner starts (ViolinSession.get_runner ends the memo)
    memo = getattr(state, "cache_lookups", None)
    todo = [sample for sample in samples if memo is None or sample.id not in memo]
    cache = state.make_cache() if todo else None
    if cache is not None and cache.is_empty():
        cache = None  # nothing to find, and cache_identity may ask the server
    from ..execution.cache import cache_identity, cached_counts

    identity = state.identity or s.model
    if cache is not None and state.adapter is not None:  # what the server reports of its models
        identity = cache_identity(state.adapter, identity)
    found = cached_counts(cache, identity, todo, seed=s.seed, repeats=s.repeats)
    if memo is None:
        return found
    memo.update((sample.id, found.get(sample.id, 0)) for sample in todo)
    return {sample.id: memo[sample.id] for sample in samples if memo[sample.id]}


def announce_plan(vs, samples) -> None:
    """Print the plan before the first generation; refuse a run over --violin-max-calls / --violin-max-cost."""
    config, s = vs.config, vs.settings
    note = ""
    if vs.batch_discount is not None:  # a batch run: its discount named
        from ._batch import price_note
        note = price_note(vs)
    max_cost, limit = s.max_cost, _max_calls(vs)
    unique = list({sample.id: sample for sample in samples}.values())
    plan = Plan(adapter=str(vs.identity or s.model), suite=str(s.suite), samples=len(unique),
                repeats=int(s.repeats), cached=sum(cached_repeats(vs, unique).values()), price=vs.run_price(),
                reruns=reruns_note(config, cached=vs.make_cache() is not None),
                calls=calls_note(limit, given=s.max_calls_given, bills=vs.bills, network=vs.network))
    if vs.sequential is not None:  # --violin-sequential: the caps end the gate, they refuse no run
        note, limit, max_cost = note + plan_note(limit, max_cost, config), None, None
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"violin plan: {plan.describe()}{note}")
    if limit is not None and plan.uncached > limit:
        raise pytest.UsageError(
            f"--violin-max-calls={limit}: this run plans {plan.uncached} uncached generations with "
            f"{plan.adapter} ({plan.samples} samples x {plan.repeats} repeats, {plan.cached} cached), "
            f"more than the limit; narrow it (--violin-limit=N, --violin-tasks=..., -k, a path) or "
            f"raise the limit (--violin-max-calls=N, 'none' for no limit)")
    too_dear = None if max_cost is None else cost_limit_message(plan, max_cost)
    if too_dear is not None:
        raise pytest.UsageError(too_dear)


#: Why a sequential run hands the samples out one at a time under ``-n`` (for the plan line).
ONE_BY_ONE = ("under -n the samples are handed to the workers one at a time (--maxschedchunk=1), "
              "so they run in the gate's order")


def plan_note(limit, max_cost, config=None) -> str:
    """The plan line's words for a sequential run: what ends it early, what caps it."""
    caps = []
    if limit is not None:
        caps.append(f"{limit} calls")
    if max_cost is not None:
        caps.append(f"${max_cost:g}")
    budget = (f"; the budget ({' / '.join(caps)}) ends it undecided" if caps else "")
    dist = getattr(getattr(config, "option", None), "dist", "no")
    if dist == "load" and getattr(config.option, "maxschedchunk", None) == 1:
        budget += "; " + ONE_BY_ONE
    elif dist not in ("no", "load", None):
        budget += (f"; --dist {dist} hands the samples out in blocks: workers may answer samples the "
                   f"gate cannot use yet (--dist load is the one that keeps its order)")
    return (f"; sequential: samples in a seeded random order, no more generated once the gate "
            f"decides{budget}")
