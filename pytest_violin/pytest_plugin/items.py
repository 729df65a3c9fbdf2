"""Violin samples as pytest items.

One :class:`ViolinItem` per sample, under one :class:`ViolinSuite`
collector whose node id is ``violin``; item node ids are
``violin::<sample id>`` (e.g. ``violin::color/v1/pink/t03``), so ``-k``,
``--deselect``, ``--lf`` and the usual reporting work.
"""

from __future__ import annotations

import warnings

import pytest

from ..errors import ViolinFailure, ViolinWarning
from ..report.text import printable
from ..results import error_result, score_generation

__all__ = ["RESULT_KEY", "ViolinSuite", "ViolinItem", "make_items"]


class ViolinSuite(pytest.Collector):
    """The parent node of every Violin item (node id ``violin``)."""

    def collect(self):  # pragma: no cover - items are created directly by make_items
        return []

    def reportinfo(self):
        return self.path, None, "violin"


#: ``item.stash`` key: ``(phase, result JSON)`` of the item's sample, attached
#: to the report of that phase (``setup`` for an error, ``call`` otherwise).
RESULT_KEY = pytest.StashKey[tuple]()


class ViolinItem(pytest.Item):
    """One Violin sample as a test.

    ``setup`` asks the session's runner for the sample's images and scores
    them; ``runtest`` fails with a metric table when a metric is over its
    limit, unless a baseline is given and holds the sample: then it is an
    xfail, a known failure (over its limits there too) or a new one (within
    them there), and the gate (``violin::gate``) decides whether the model
    got worse. Anything that keeps a sample from being judged (an unexpected
    exception while generating or scoring it: a bug, a broken expected image,
    a full disk) is raised in ``setup``, so pytest reports the item as an
    *error*, with one line naming the exception, and the result's outcome is
    ``"error"``: never the model's failure, never a score.
    """

    def __init__(self, *, sample, index: int, **kwargs):
        super().__init__(**kwargs)
        self.violin_sample = sample
        self.violin_index = index
        self.extra_keyword_matches.update(
            k for k in (sample.task, getattr(sample, "variation", None), getattr(sample, "suite", None)) if k
        )
        self._violin_result = None

    def setup(self):
        from .state import get_state

        state = get_state(self.config)
        sample = self.violin_sample
        runner = state.get_runner()
        from .sequential import skip_reason

        unneeded = skip_reason(self.config, sample)
        if unneeded is not None and runner.withdraw(sample):
            pytest.skip(unneeded)  # nothing was sent for it: not run, never passed
        generation = runner.get(sample)
        take = getattr(state.adapter, "take_notices", None)
        for note in take() if callable(take) else ():  # found in a generation thread: said here, once
            # recorded as pytest's warnings plugin records one (the first item's setup may run
            # outside its catch_warnings: a warnings.warn there goes to the captured stderr)
            message = warnings.WarningMessage(ViolinWarning(printable(note)), ViolinWarning, __file__, 0)
            self.ihook.pytest_warning_recorded.call_historic(kwargs=dict(
                warning_message=message, when="runtest", nodeid=self.nodeid, location=None))
        if generation.capped:
            from .sequential import spend

            if spend(self, generation.fault):  # the sequential gate ends undecided at the cap
                pytest.skip(f"not generated: {printable(generation.fault)}")
        stop = runner.unreachable or runner.setup_stop
        if stop is not None and not self.session.shouldstop:
            # pytest stops after this item; thousands of identical failures would
            # cost minutes and say nothing more (see docs/plugin.md, "A dead endpoint";
            # the same for the first samples all ending in one setup error)
            self.session.shouldstop = f"violin: {printable(stop)}; the run stops here"
        if generation.fault is not None:
            result, images = error_result(sample, generation, state.settings, index=self.violin_index,
                                          reason=f"error while generating: {generation.fault}"), []
        else:  # an unjudged generation error (no answer, setup, time-out) ends as an error there
            try:
                result, images = score_generation(sample, generation, state.settings, state.limits,
                                                  index=self.violin_index)
            except Exception as exc:  # a broken expected image or spec: not the model's fault
                from ..execution.runner import exception_line

                result, images = error_result(sample, generation, state.settings, index=self.violin_index,
                                              reason=f"error while scoring: {exception_line(exc)}"), []
        del generation
        result.extra["adapter"] = state.identity
        self.config.hook.pytest_violin_sample_scored(
            config=self.config, sample=sample, images=images, result=result)
        del images
        message = result.extra.pop("_message", None) or f"violin sample {sample.id} {result.outcome}"
        rerun = int(getattr(self, "execution_count", 1) or 1) - 1  # set by pytest-rerunfailures
        if rerun > 0 and result.cached:
            # a rerun reuses the image (no model call) and so scores the same image again
            result.extra["rerun_from_cache"] = rerun
            message += (f"\n\nnote: rerun {rerun}: the image came from the cache, no model call was made; "
                        f"the rerun scores the same image (--violin-no-cache makes a rerun call the model again)")
        for name, value in result.metrics.items():
            self.user_properties.append((f"violin.{name}", round(float(value), 6)))
        if result.error is not None:
            self.user_properties.append(("violin.error", result.error))
        known = None
        if result.outcome in ("failed", "refused"):  # against a baseline: known, new, or a failure
            from .gate import GATE_KEY
            from .known_failures import failure_context

            gate = self.config.stash.get(GATE_KEY, None)
            known = failure_context(gate.baseline_index if gate is not None else None, sample.id,
                                    result.extra.get("definition"), result.metrics.get("mean"))
        self._violin_result = (result.outcome, message, known)
        if result.outcome == "error":
            self.stash[RESULT_KEY] = ("setup", result.to_json())
            pytest.fail(printable(message), pytrace=False)
        self.stash[RESULT_KEY] = ("call", result.to_json())

    def runtest(self):
        outcome, message, known = self._violin_result
        if outcome != "passed" and known is not None:
            # with a baseline, a sample over its limits fails the run only through the gate
            pytest.xfail(printable(f"{known}\n{message}"))
        if outcome != "passed":
            raise ViolinFailure(message)

    def teardown(self):
        self._violin_result = None

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ViolinFailure):
            return printable(str(excinfo.value))
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        # a line number (0: the samples have no source line): pytest's skip and xfail markers
        # point their reports at it, and a None there is an INTERNALERROR
        return self.path, 0, f"violin::{printable(self.violin_sample.id)}"


def make_items(session, samples, *, positions=None) -> list[ViolinItem]:
    """Build the collector and one item per sample (in suite order).

    ``positions`` (sample id -> index) numbers the samples of a shard by their place in the
    whole selection, as an unsharded run numbers them.
    """
    parent = ViolinSuite.from_parent(session, name="violin", nodeid="violin", path=session.config.rootpath)
    items = []
    for index, sample in enumerate(samples):
        items.append(ViolinItem.from_parent(
            parent, name=sample.id, nodeid=f"violin::{sample.id}", sample=sample,
            index=index if positions is None else positions.get(sample.id, index)))
    return items
