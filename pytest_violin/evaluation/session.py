"""The loop of one :func:`~.api.evaluate` run: plan, generate, judge, collect.

What a pytest session does for the ``violin::`` items, minus pytest: the
runner prefetches in the suite's order, each sample is judged as the item
judges it (:func:`~pytest_violin.judging.judge_generation`), its definition
digest and thumbnails are recorded as the gate's hook records them, and the
run stops where the plugin stops a session (samples in a row failing the
same way: the runner's stop rule; the call cap).
"""

from __future__ import annotations

import time
import warnings

from ..errors import ViolinWarning
from ..execution.usage import adapter_bills, call_cap
from ..execution.usage import CallCounter, CallLimitReached, CountingAdapter
from ..judging import JudgeSettings, judge_generation
from ..results import ResultsStore

__all__ = ["INTERRUPT_GRACE", "Session"]

#: Seconds a stopped or interrupted run waits for its generation threads to end
#: (the cancel event is set first, so adapters end their calls at once).
INTERRUPT_GRACE = 4.0

#: How the call cap's settings are named in evaluate()'s messages.
_CAP_NAMES = ("max_calls", "max_cost")


class Session:
    """One evaluation's state: the counted adapter, its runner, the results and how the run ended."""

    def __init__(self, adapter, *, samples, limits, cancel, seed, repeats, profile, pass_rule, concurrency,
                 cache, save_outputs, thumbnails, max_calls, price, max_cost, label):
        from ..redaction import redact_userinfo

        self.samples = samples
        self.limits = limits
        self.cancel = cancel
        self.settings = JudgeSettings(profile=profile, pass_rule=pass_rule, seed=seed)
        self.repeats = repeats
        self.concurrency = concurrency
        self.cache = cache
        self.save_outputs = save_outputs
        self.thumbnails = thumbnails
        self.price = price
        self.label = label
        # the runner keys the cache with the adapter's own identity; messages and results show it redacted
        self._identity = getattr(adapter, "identity", type(adapter).__name__)
        self.identity = redact_userinfo(str(self._identity))
        self.usage = CallCounter()
        bills = adapter_bills(adapter, price=price)
        self.usage.set_limit(*call_cap(None if max_calls == "default" else max_calls,
                                       given=max_calls != "default", bills=bills, price=price,
                                       max_cost=max_cost, names=_CAP_NAMES))
        self.adapter = CountingAdapter(adapter, self.usage)
        self._shown: dict = {}  # passing samples given thumbnails, per (task, variation)
        self.stop_reason: str | None = None
        self.interrupted = False
        self.seconds = 0.0

    def _refuse_over_cap(self) -> None:
        """Refuse a run that plans more uncached generations than its cap, before any call."""
        limit = self.usage.limit
        if limit is None:
            return
        from ..execution.cache import cache_identity, cached_counts

        planned = len(self.samples) * self.repeats
        if planned <= limit:
            return
        cached = 0
        if self.cache is not None and not self.cache.is_empty():
            identity = cache_identity(self.adapter, self._identity)
            cached = sum(cached_counts(self.cache, identity, self.samples, seed=self.settings.seed,
                                       repeats=self.repeats).values())
        if planned - cached > limit:
            raise CallLimitReached(
                f"{self.usage.limit_text}: this run plans {planned - cached} uncached generations with "
                f"{self.identity} ({len(self.samples)} samples x {self.repeats} repeats, {cached} cached), "
                f"more than the limit; narrow it (limit=N, tasks=[...]) or raise it (max_calls=N, "
                f"max_calls=None for no limit)")

    def run(self, *, progress=None) -> ResultsStore:
        """Generate and judge every sample; the results (also those judged before an interrupt)."""
        from ..imaging import reader_for, restore_reader, use_reader

        # profile violin reads every image file as the reference does (cv2.imread), as the plugin does; set in
        # this thread's context, which the runner's threads copy, so a run in another thread keeps its own
        # reader; before the cache is looked up, as its keys hold the reader
        token = use_reader(reader_for(self.settings.profile))
        try:
            self._refuse_over_cap()
            return self._generate_and_judge(progress)
        finally:
            restore_reader(token)

    def _generate_and_judge(self, progress) -> ResultsStore:
        from ..execution.runner import Runner

        store = ResultsStore()
        runner = Runner(self.adapter, concurrency=self.concurrency, cache=self.cache,
                        base_seed=self.settings.seed, repeats=self.repeats, save_outputs=self.save_outputs,
                        cancel=self.cancel, usage=self.usage)
        start = time.perf_counter()
        try:
            runner.plan(self.samples)
            for index, sample in enumerate(self.samples):
                result = self._judge(runner, sample, index)
                store.add(result)
                if progress is not None:
                    progress.update(1)
                stop = runner.stop_reason or self.usage.capped
                if stop is not None:
                    self.stop_reason = stop
                    self.interrupted = True
                    warnings.warn(ViolinWarning(f"the run stops after {len(store)} of {len(self.samples)} "
                                                f"samples: {stop}"), stacklevel=4)
                    break
        except KeyboardInterrupt:
            self.interrupted = True
            self.stop_reason = "interrupted (Ctrl-C)"
            raise
        finally:
            self.seconds = time.perf_counter() - start
            if self.interrupted:  # no new request, retry or poll; the transport shuts its sockets
                self.cancel.set()
            runner.close(wait=True, timeout=INTERRUPT_GRACE if self.interrupted else None)
            if progress is not None:
                progress.close()
        return store

    def _judge(self, runner, sample, index):
        from ..gating.records import sample_definition

        generation = runner.get(sample)
        take = getattr(self.adapter, "take_notices", None)
        for note in take() if callable(take) else ():  # found in a generation thread: said here, once
            warnings.warn(ViolinWarning(note), stacklevel=5)
        result, images = judge_generation(sample, generation, self.settings, self.limits, index=index)
        del generation
        result.adapter = self.identity
        result.definition = sample_definition(sample)
        if self.thumbnails:
            from ..report.folder import attach_thumbnails

            attach_thumbnails(result, sample, images, self._shown)
        return result
