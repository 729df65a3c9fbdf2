"""Violin samples as pytest items.

One :class:`ViolinItem` per sample, under one :class:`ViolinSuite`
collector whose node id is ``violin``; item node ids are
``violin::<sample id>`` (e.g. ``violin::color/v1/pink/t03``), so ``-k``,
``--deselect``, ``--lf`` and the usual reporting work.
"""

from __future__ import annotations

import pytest

from ..report.text import printable
from ..results import SampleResult
from ..errors import ViolinFailure
from ..thresholds import limits_for_task
from ..verdict import judge

__all__ = ["RESULT_KEY", "ViolinSuite", "ViolinItem", "make_items", "score_generation",
           "generation_failure_result", "error_result"]


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
    limit. Anything that keeps a sample from being judged (an unexpected
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
        generation = runner.get(sample)
        if runner.unreachable is not None and not self.session.shouldstop:
            # pytest stops after this item; thousands of identical failures would
            # cost minutes and say nothing more (see docs/plugin.md, "A dead endpoint")
            self.session.shouldstop = f"violin: {printable(runner.unreachable)}; the run stops here"
        if generation.fault is not None:
            result, images = error_result(sample, generation, state.settings, index=self.violin_index,
                                          reason=f"error while generating: {generation.fault}"), []
        else:
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
        for name, value in result.metrics.items():
            self.user_properties.append((f"violin.{name}", round(float(value), 6)))
        if result.error is not None:
            self.user_properties.append(("violin.error", result.error))
        self._violin_result = (result.outcome, message)
        if result.outcome == "error":
            self.stash[RESULT_KEY] = ("setup", result.to_json())
            pytest.fail(printable(message), pytrace=False)
        self.stash[RESULT_KEY] = ("call", result.to_json())

    def runtest(self):
        outcome, message = self._violin_result
        if outcome != "passed":
            raise ViolinFailure(message)

    def teardown(self):
        self._violin_result = None

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ViolinFailure):
            return printable(str(excinfo.value))
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"violin::{printable(self.violin_sample.id)}"


def make_items(session, samples) -> list[ViolinItem]:
    """Build the collector and one item per sample (in suite order)."""
    parent = ViolinSuite.from_parent(session, name="violin", nodeid="violin", path=session.config.rootpath)
    items = []
    for index, sample in enumerate(samples):
        items.append(ViolinItem.from_parent(
            parent, name=sample.id, nodeid=f"violin::{sample.id}", sample=sample, index=index))
    return items


def _base_result(sample, settings, *, index: int) -> SampleResult:
    from ..models.request import derive_seed

    return SampleResult(
        sample_id=sample.id, suite=str(getattr(sample, "suite", "") or ""), task=sample.task,
        variation=str(getattr(sample, "variation", "") or ""), prompt=sample.prompt,
        seed=derive_seed(settings.seed, sample.id, 0), index=index, pass_rule=settings.pass_rule,
    )


def generation_failure_result(sample, generation, settings, *, index: int = 0) -> SampleResult:
    """The result of a sample whose model gave no image."""
    result = _base_result(sample, settings, index=index)
    result.outcome = "failed"
    result.failed = ["generation"]
    result.error = str(generation.error)
    result.seconds = float(generation.seconds)
    result.extra["_message"] = (
        f"violin sample {sample.id} failed: the model gave no image\n\n"
        f"generation error: {result.error}\n\nprompt:    {sample.prompt}\nsample id: {sample.id}"
    )
    return result


def error_result(sample, generation, settings, *, index: int = 0, reason: str) -> SampleResult:
    """The result of a sample that could not be judged (outcome ``"error"``).

    Not the model's failure: no metrics, no score, ``reason`` in ``error``.
    """
    result = _base_result(sample, settings, index=index)
    result.outcome = "error"
    result.error = reason
    result.seconds = float(getattr(generation, "seconds", 0.0) or 0.0)
    result.extra["_message"] = f"violin sample {sample.id}: {reason} (not scored: not the model's failure)"
    return result


def score_generation(sample, generation, settings, limits, *, index: int = 0):
    """Score a :class:`~pytest_violin.execution.runner.Generation` and judge it.

    Parameters
    ----------
    sample : Sample
        The sample.
    generation : Generation
        Its images (one per repeat) or error.
    settings : ViolinSettings
        ``profile``, ``pass_rule`` and ``seed`` are used.
    limits : Mapping[str, float]
        All limits keyed ``"task.metric"``.
    index : int, optional
        Position in the suite (stored in the result).

    Returns
    -------
    tuple of (SampleResult, list)
        The result (a failure message in ``result.extra["_message"]`` when
        it failed) and the images.
    """
    if generation.error is not None or not generation.images:
        return generation_failure_result(sample, generation, settings, index=index), []
    from ..results import combine_repeats

    result = _base_result(sample, settings, index=index)
    result.seconds = float(generation.seconds)
    result.cached = bool(generation.cached)
    per_repeat = []
    original = list(generation.original_size) if getattr(generation, "original_size", None) else None
    for image in generation.images:
        m = sample.score(image, profile=settings.profile)
        per_repeat.append(m.to_dict())
        if original is None and m.info.get("resized"):
            original = list(m.info.get("original_size") or ()) or None
    mean, spread, worst = combine_repeats(per_repeat)
    result.metrics = mean
    result.repeats = per_repeat
    result.spread = spread
    result.worst = worst
    result.original_size = original
    applied = limits_for_task(limits, sample.task, [k for k in mean if k != "mean"])
    result.limits = applied
    judged = worst if settings.pass_rule == "worst" and len(per_repeat) > 1 else mean
    notes = []
    if len(per_repeat) > 1:
        basis = "worst repeat (max per metric)" if settings.pass_rule == "worst" else "mean"
        notes.append(f"note: {len(per_repeat)} repeats, judged on the {basis}")
    if original is not None:
        notes.append(f"note: the {original[0]}x{original[1]} image was resized to "
                     f"{sample.width}x{sample.height}")
    verdict = judge(sample, judged, applied, notes=notes)
    result.failed = verdict.failed
    result.outcome = "passed" if verdict.passed else "failed"
    if not verdict.passed:
        result.extra["_message"] = verdict.message()
    return result, list(generation.images)
