"""What a run is about to do, counted before the first generation.

A model behind a paid API costs money per image: the plugin states the plan
(adapter, suite, samples, repeats, generations to make, cache hits already
on disk) before it starts, and ``--violin-max-calls`` refuses a run that
would make more uncached generations than the team allows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["Plan", "plan_generations"]


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
    """

    adapter: str
    suite: str
    samples: int
    repeats: int
    cached: int

    @property
    def generations(self) -> int:
        """Images the run needs."""
        return self.samples * self.repeats

    @property
    def uncached(self) -> int:
        """Images the model will be asked for."""
        return self.generations - self.cached

    def describe(self) -> str:
        """One line for the terminal."""
        return (f"adapter {self.adapter}, suite {self.suite}, {self.samples} samples x "
                f"{self.repeats} repeat{'s' if self.repeats != 1 else ''} = {self.generations} "
                f"generations, {self.cached} in the cache, {self.uncached} to make")


def plan_generations(state, samples) -> Plan:
    """Count the generations of ``samples`` under the run's settings.

    Parameters
    ----------
    state : ViolinState
        The run state (settings, adapter identity, cache).
    samples : iterable of Sample
        The samples this process (or, under xdist, the run) will need; a
        sample planned twice counts once.

    Returns
    -------
    Plan
    """
    from ..models.request import GenerationRequest, derive_seed

    s = state.settings
    unique = list({sample.id: sample for sample in samples}.values())
    cached = 0
    cache = state.make_cache() if unique else None
    # a key needs the request's input images (rendered for mask samples, ~1 ms
    # each): look them up only when the cache holds anything at all
    if cache is not None and not cache.is_empty():
        identity = state.identity or s.model
        for sample in unique:
            request = GenerationRequest.from_sample(sample, base_seed=s.seed, repeat=0)
            for repeat in range(s.repeats):
                if repeat:
                    request = replace(request, seed=derive_seed(s.seed, sample.id, repeat), repeat=repeat)
                try:
                    if cache.contains(cache.key(identity, request)):
                        cached += 1
                except Exception:  # an unreadable cache entry counts as a generation to make
                    pass
    return Plan(adapter=str(state.identity or s.model), suite=str(s.suite), samples=len(unique),
                repeats=int(s.repeats), cached=cached)
