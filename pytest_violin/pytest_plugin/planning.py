"""What a run is about to do, counted before the first generation.

A model behind a paid API costs money per image: the plugin states the plan
(adapter, suite, samples, repeats, generations to make, cache hits already
on disk) before it starts, and ``--violin-max-calls`` refuses a run that
would make more uncached generations than the team allows. With
``--violin-price=USD`` (per image) the plan states the estimated cost of the
uncached generations, and ``--violin-max-cost=USD`` refuses a run whose
estimate exceeds it.

The default ``--violin-max-calls`` applies to adapters that bill
(:func:`adapter_bills`: an adapter's ``bills`` attribute, else ``network``; a
run with ``--violin-price`` always); a self-hosted server (``comfyui``,
``a1111``, ``http`` to a loopback address) and local adapters have no default
limit. The plan line says which applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..execution.budget import COST_TOLERANCE as _TOLERANCE
from ..execution.budget import adapter_bills
from ..report.text import format_usd

__all__ = ["Plan", "adapter_bills", "call_cap", "calls_note", "cost_limit_message", "estimated_cost",
           "format_usd", "plan_generations", "reruns_note"]

@dataclass(frozen=True)
class Plan:
    """The generations a run will make.

    Attributes
    ----------
    adapter : str
        The adapter's (secret-free) identity.
    suite : str
        ``--violin-suite``.
    samples : int
        Distinct samples that will be generated.
    repeats : int
        Images per sample.
    cached : int
        Of ``samples * repeats`` images, those already in the cache.
    price : float or None
        ``--violin-price``: estimated USD per generated image (None: not given).
    """

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
        return estimated_cost(self.uncached, self.price)

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


def call_cap(state) -> tuple[int | None, str]:
    """The calls this run may make at run time, and the option that says so.

    ``--violin-max-calls`` (or its default where the adapter bills,
    :func:`adapter_bills`), and the calls ``--violin-max-cost`` affords at
    ``--violin-price`` when that is fewer (:func:`pytest_violin.execution.budget.call_cap`).
    Every call counts: reruns, repeats, prefetched samples, the
    ``violin_generate`` fixture and direct ``violin_model.generate`` calls
    (:mod:`pytest_violin.execution.usage`).

    Returns
    -------
    tuple of (int or None, str)
        The cap (None: none) and its words for messages, e.g.
        ``"--violin-max-calls=20"``.
    """
    from ..execution.budget import call_cap as cap

    s = state.settings
    bills = state.bills if hasattr(state, "bills") else bool(getattr(state, "network", False))
    return cap(s.max_calls, given=s.max_calls_given, bills=bills, price=s.price, max_cost=s.max_cost)


def reruns_note(config, *, cached: bool) -> str:
    """How reruns are counted, for the plan line; ``""`` without pytest-rerunfailures' ``--reruns``.

    Parameters
    ----------
    config : pytest.Config
    cached : bool
        Whether the generation cache is on.
    """
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


def estimated_cost(generations: int, price: float | None) -> float | None:
    """``generations * price`` in USD, None when there is no price.

    Parameters
    ----------
    generations : int
        Images asked of the model (cache hits cost nothing).
    price : float or None
        USD per image (``--violin-price``).

    Returns
    -------
    float or None
    """
    if price is None:
        return None
    return float(generations) * float(price)


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


def plan_generations(state, samples, *, price: float | None = None) -> Plan:
    """Count the generations of ``samples`` under the run's settings.

    Parameters
    ----------
    state : ViolinState
        The run state (settings, adapter identity, cache).
    samples : iterable of Sample
        The samples this process (or, under xdist, the run) will need; a
        sample planned twice counts once.
    price : float, optional
        ``--violin-price`` (USD per image) for the cost estimate.

    Returns
    -------
    Plan
    """
    s = state.settings
    unique = list({sample.id: sample for sample in samples}.values())
    cached = sum(cached_repeats(state, unique).values())
    return Plan(adapter=str(state.identity or s.model), suite=str(s.suite), samples=len(unique),
                repeats=int(s.repeats), cached=cached, price=price)


def cached_repeats(state, samples) -> dict:
    """Sample id -> how many of its ``--violin-repeats`` images the cache holds (0 when none).

    Parameters
    ----------
    state : ViolinState
        The run state (settings, adapter identity, cache).
    samples : iterable of Sample
        Distinct samples.

    Returns
    -------
    dict
        Only samples with at least one cached image are listed. An empty or
        disabled cache costs nothing; otherwise a key needs the request's input
        images (rendered for mask samples, ~1 ms each).
    """
    s = state.settings
    samples = list(samples)
    # the sequential gate's order and the plan line both ask, before anything is generated: the
    # answers are kept until the runner starts (ViolinState.get_runner ends the memo)
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
