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

from ..report.text import format_usd

__all__ = ["Plan", "adapter_bills", "call_cap", "calls_note", "cost_limit_message", "estimated_cost",
           "format_usd", "plan_generations", "reruns_note"]

#: Relative slack of the cost comparison (binary floats: 3 x 0.1 > 0.3).
_TOLERANCE = 1e-9


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
    ``--violin-price`` when that is fewer. Every call counts: reruns, repeats,
    prefetched samples, the ``violin_generate`` fixture and direct
    ``violin_model.generate`` calls (:mod:`pytest_violin.execution.usage`).

    Returns
    -------
    tuple of (int or None, str)
        The cap (None: none) and its words for messages, e.g.
        ``"--violin-max-calls=20"``.
    """
    s = state.settings
    limit, text = s.max_calls, (f"--violin-max-calls={s.max_calls}" if s.max_calls is not None else "")
    bills = state.bills if hasattr(state, "bills") else bool(getattr(state, "network", False))
    from .batch import run_price

    price = run_price(state) if hasattr(state, "config") else s.price  # a batch run pays the batch price
    if not s.max_calls_given and (bills or s.price is not None):
        from .options import DEFAULT_NETWORK_MAX_CALLS

        limit = DEFAULT_NETWORK_MAX_CALLS
        text = f"the default --violin-max-calls={limit} of an adapter that bills"
    if s.max_cost is not None and price:
        affordable = math.floor(s.max_cost / price * (1 + _TOLERANCE))
        if limit is None or affordable < limit:
            limit = affordable
            text = (f"--violin-max-cost={s.max_cost:g} ({affordable} calls at {format_usd(price)} "
                    f"per image)")
    return limit, text


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


def adapter_bills(adapter, *, price: float | None = None) -> bool:
    """Whether calls to ``adapter`` may cost money, so the default ``--violin-max-calls`` applies.

    An adapter says so with a ``bills`` attribute (True for the providers'
    APIs, False for self-hosted servers); without one, an adapter that calls
    a network service (``network = True``) is taken to bill. A run with a
    ``--violin-price`` bills whatever the adapter says.
    """
    if price is not None:
        return True
    declared = getattr(adapter, "bills", None)
    if declared is not None:
        return bool(declared)
    return bool(getattr(adapter, "network", False))


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
    from ..models.request import GenerationRequest, derive_seed

    s = state.settings
    samples = list(samples)
    # the sequential gate's order and the plan line both ask, before anything is generated: the
    # answers are kept until the runner starts (ViolinState.get_runner ends the memo)
    memo = getattr(state, "cache_lookups", None)
    todo = [sample for sample in samples if memo is None or sample.id not in memo]
    cache = state.make_cache() if todo else None
    found: dict = {}
    if cache is not None and not cache.is_empty():
        from ..execution.runner import cache_identity

        identity = state.identity or s.model
        if state.adapter is not None:  # what the server reports of its models (see cache_identity)
            identity = cache_identity(state.adapter, identity)
        for sample in todo if identity is not None else ():
            request = GenerationRequest.from_sample(sample, base_seed=s.seed, repeat=0)
            for repeat in range(s.repeats):
                if repeat:
                    request = replace(request, seed=derive_seed(s.seed, sample.id, repeat), repeat=repeat)
                try:
                    if cache.contains(cache.key(identity, request)):
                        found[sample.id] = found.get(sample.id, 0) + 1
                except Exception:  # an unreadable cache entry counts as a generation to make
                    pass
    if memo is None:
        return found
    memo.update((sample.id, found.get(sample.id, 0)) for sample in todo)
    return {sample.id: memo[sample.id] for sample in samples if memo[sample.id]}
