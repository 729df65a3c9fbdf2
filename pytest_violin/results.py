"""Per-sample results and their aggregation.

Each Violin item produces one :class:`SampleResult`; it travels as JSON on
the item's ``TestReport`` (attribute ``violin_result``) so that the
controller of an xdist run collects every worker's results exactly like a
single process does. :class:`ResultsStore` keeps them in collection order
and aggregates them per (suite, task, variation) like the paper's tables.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace

from .errors import InvalidArgumentError

__all__ = ["AggregateRow", "NO_IMAGE_VALUE", "ResultsStore", "SampleResult", "aggregate", "combine_repeats",
           "error_result", "generation_failure_result", "sample_value", "score_generation"]

#: What a judged sample without an image (none given, or refused) counts for on every
#: metric and in every mean: the worst distance, as the gate counts it, in every report
#: that reads these means. Samples with outcome ``"error"`` (not judged) are left out.
NO_IMAGE_VALUE = 1.0


@dataclass
class SampleResult:
    """Everything known about one sample after its test ran.

    Attributes
    ----------
    sample_id, suite, task, variation, prompt : str
        Identify the sample (``variation`` may be ``""``).
    metrics : dict
        Metric name -> value, including ``"mean"``; the mean over repeats.
        Empty when generation failed.
    limits : dict
        Metric name -> limit that applied.
    failed : list of str
        Metrics over their limit (``["generation"]`` when no image came).
    outcome : str
        ``"passed"``, ``"failed"``, ``"refused"`` (the provider declined) or
        ``"error"`` (not judged).
    error : str or None
        The (redacted) generation error.
    seconds : float
        Wall time of generation.
    cached : bool
        Whether every image came from the cache.
    generations : int
        Images asked of the model for this sample (adapter calls; cache hits
        excluded): what a paid API bills.
    cache_hits : int
        Images of this sample that came from the cache.
    seed : int
        The seed of repeat 0.
    repeats : list of dict
        Per-repeat metric dicts (with ``"mean"``).
    spread : dict
        Per-metric population standard deviation over repeats.
    worst : dict
        Per-metric maximum over repeats.
    original_size : list or None
        ``[width, height]`` of the generated image when it had to be resized.
    index : int
        Position of the sample in the loaded suite (sort key).
    pass_rule : str
        ``"mean"`` or ``"worst"``.
    extra : dict
        Small JSON-able data from other plugins (thumbnails, ...).
    """

    sample_id: str
    suite: str = ""
    task: str = ""
    variation: str = ""
    prompt: str = ""
    metrics: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    failed: list = field(default_factory=list)
    outcome: str = "passed"
    error: str | None = None
    seconds: float = 0.0
    cached: bool = False
    generations: int = 0
    cache_hits: int = 0
    seed: int = 0
    repeats: list = field(default_factory=list)
    spread: dict = field(default_factory=dict)
    worst: dict = field(default_factory=dict)
    original_size: list | None = None
    index: int = 0
    pass_rule: str = "mean"
    extra: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when the outcome is ``"passed"``."""
        return self.outcome == "passed"

    def to_dict(self) -> dict:
        """A plain JSON-able dict (containers are shallow-copied)."""
        out = {}
        for name in _FIELD_NAMES:
            value = getattr(self, name)
            if isinstance(value, dict):
                value = {k: (dict(v) if isinstance(v, dict) else v) for k, v in value.items()}
            elif isinstance(value, list):
                value = [dict(v) if isinstance(v, dict) else v for v in value]
            out[name] = value
        return out

    def to_json(self) -> str:
        """Serialize to a compact JSON string."""
        return json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=False, default=_jsonable)

    @classmethod
    def from_dict(cls, data: dict) -> "SampleResult":
        """Build from :meth:`to_dict` output; unknown keys go to ``extra``."""
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in data.items() if k in names}
        unknown = {k: v for k, v in data.items() if k not in names}
        result = cls(**known)
        if unknown:
            result.extra = {**result.extra, **unknown}
        return result

    @classmethod
    def from_json(cls, text: str) -> "SampleResult":
        """Parse :meth:`to_json` output."""
        return cls.from_dict(json.loads(text))


_FIELD_NAMES = tuple(f.name for f in fields(SampleResult))


def _jsonable(obj):
    import numpy as np  # here, not at import: the plugin imports this module in every pytest run

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, Mapping):
        return dict(obj)
    raise InvalidArgumentError(f"{type(obj).__name__} is not JSON serializable; accepted: numbers, "
                               f"strings, lists, mappings and numpy values")


def combine_repeats(per_repeat: list[dict]) -> tuple[dict, dict, dict]:
    """Mean, spread (population std) and worst (max) per metric over repeats.

    Parameters
    ----------
    per_repeat : list of dict
        Metric dicts of the same keys, one per repeat.

    Returns
    -------
    tuple of dict
        ``(mean, spread, worst)``; the ``mean`` key of each is recomputed
        from that dict's metric values for ``mean`` and ``worst`` (the
        worst of the per-repeat means is kept for ``worst["mean"]``).
    """
    if not per_repeat:
        return {}, {}, {}
    keys = list(per_repeat[0])
    n = len(per_repeat)
    mean, spread, worst = {}, {}, {}
    for key in keys:
        vals = [float(r[key]) for r in per_repeat]
        m = sum(vals) / n
        mean[key] = m
        spread[key] = math.sqrt(sum((v - m) ** 2 for v in vals) / n)
        worst[key] = max(vals)
    return mean, spread, worst


@dataclass(frozen=True)
class AggregateRow:
    """Means of one (suite, task, variation) group, or of a whole task.

    The one aggregation of a run: the terminal summary, ``results.json``,
    ``summary.md``, ``report.html`` and the baseline all read these rows
    (see :func:`aggregate`).

    Attributes
    ----------
    suite, task : str
        The group.
    variation : str or None
        The variation (``""`` when the samples have none); ``None`` for the
        row of the whole task.
    metric_names : tuple of str
        The metrics, in order of first appearance.
    means : dict
        Metric name -> mean over the group's judged samples (every outcome
        but ``"error"``); a sample without an image (failed without one, or
        refused) counts :data:`NO_IMAGE_VALUE` (1.0) on every metric, as the
        gate counts it. ``"mean"`` is the mean of the per-sample means.
        ``None`` where no sample was judged (every one errored): never NaN.
    pass_rate : float
        Passed samples / samples.
    count : int
        Samples in the group.
    errors : int
        Samples whose outcome is ``"error"`` (not judged: no answer from the
        endpoint, or a fault of pytest-violin): they are not in the means.
    passed : int
        Passed samples.
    refused : int
        Samples the provider refused to draw (outcome ``"refused"``): they
        fail, have no metrics, and count 1.0 in the means.
    no_image : int
        Samples that failed because the model gave no image (outcome
        ``"failed"`` without metrics; refusals apart): they count 1.0 in the means.
    """

    suite: str
    task: str
    variation: str | None
    metric_names: tuple
    means: dict
    pass_rate: float
    count: int
    errors: int
    passed: int = 0
    refused: int = 0
    no_image: int = 0

    @property
    def is_total(self) -> bool:
        """True for the row of a whole task."""
        return self.variation is None

    def to_dict(self) -> dict:
        """A plain JSON-able dict."""
        d = asdict(self)
        d["metric_names"] = list(self.metric_names)
        return d


def _view(record) -> tuple:
    """``(suite, task, variation, metrics, outcome, error, limits)`` of a SampleResult or a record dict."""
    if isinstance(record, Mapping):
        var = record.get("variation")
        return (str(record.get("suite") or ""), str(record.get("task")), "" if var is None else str(var),
                record.get("metrics") or {}, record.get("outcome"), record.get("error"),
                record.get("limits") or {})
    return (record.suite, record.task, record.variation or "", record.metrics or {}, record.outcome,
            record.error, record.limits or {})


def aggregate(records) -> list[AggregateRow]:
    """Aggregate sample results per (suite, task, variation) and per (suite, task).

    Parameters
    ----------
    records : iterable
        :class:`SampleResult` objects or their record dicts (``suite``,
        ``task``, ``variation``, ``metrics``, ``outcome``, ``error``).

    Returns
    -------
    list of AggregateRow
        Tasks in order of first appearance; within a task its variations in
        order of first appearance, then the task's row (``variation=None``).
    """
    views = [_view(r) for r in records]
    tasks: dict[tuple, dict] = {}
    for v in views:
        tasks.setdefault((v[0], v[1]), {}).setdefault(v[2], []).append(v)
    rows = []
    for (suite, task), variations in tasks.items():
        everyone = [m for ms in variations.values() for m in ms]
        names = _metric_names(everyone)  # a variation without any image still gets the task's columns
        for variation, members in variations.items():
            rows.append(_aggregate_group(suite, task, variation, members, names))
        rows.append(_aggregate_group(suite, task, None, everyone, names))
    return rows


class ResultsStore:
    """The results of a session, in collection order.

    Adding a result for a sample id that is already present replaces it
    (a re-run of the same item).
    """

    def __init__(self):
        self._by_id: dict[str, SampleResult] = {}

    def add(self, result: SampleResult) -> None:
        """Add (or replace) the result of one sample."""
        self._by_id[result.sample_id] = result

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self):
        return iter(self.results)

    def __contains__(self, sample_id) -> bool:
        return sample_id in self._by_id

    def get(self, sample_id: str) -> SampleResult | None:
        """The result of ``sample_id`` or None."""
        return self._by_id.get(sample_id)

    @property
    def results(self) -> list[SampleResult]:
        """All results sorted by suite position (collection order)."""
        return sorted(self._by_id.values(), key=lambda r: (r.suite, r.index, r.sample_id))

    def aggregate(self, *, totals: bool = False) -> list[AggregateRow]:
        """:func:`aggregate` of the results, with the task rows when ``totals``."""
        rows = aggregate(self.results)
        return rows if totals else [r for r in rows if not r.is_total]

    def to_dict(self) -> dict:
        """Results and aggregates as one JSON-able dict."""
        return {
            "results": [r.to_dict() for r in self.results],
            "aggregates": [a.to_dict() for a in self.aggregate(totals=True)],
        }


def _metric_names(members) -> list:
    """The metrics of a group, in order of first appearance; a sample without an image names its
    task's metrics by its limits, so a task where no sample had an image still has its columns."""
    names: list[str] = []
    for m in members:
        for key in m[3] or (m[6] if m[4] != "error" else ()):
            if key != "mean" and key not in names:
                names.append(key)
    return names


def _aggregate_group(suite, task, variation, members, names) -> AggregateRow:
    judged = [m for m in members if m[4] != "error"]
    means = {}
    for key in names:
        vals = [float(m[3][key]) if m[3] else NO_IMAGE_VALUE for m in judged if key in m[3] or not m[3]]
        means[key] = sum(vals) / len(vals) if vals else None
    per_sample = [sample_value(m[3]) for m in judged]
    means["mean"] = sum(per_sample) / len(per_sample) if per_sample else None
    passed = sum(1 for m in members if m[4] == "passed")
    return AggregateRow(
        suite=suite, task=task, variation=variation, metric_names=tuple(names), means=means,
        pass_rate=passed / len(members), count=len(members),
        errors=sum(1 for m in members if m[4] == "error"), passed=passed,
        refused=sum(1 for m in members if m[4] == "refused"),
        no_image=sum(1 for m in members if m[4] == "failed" and not m[3]),
    )


def sample_value(metrics: Mapping) -> float:
    """The value a judged sample counts for in a mean: its mean metric, :data:`NO_IMAGE_VALUE`
    (1.0, the worst) when it has no metrics (no image, or refused). The gate uses the same."""
    return _sample_mean(metrics) if metrics else NO_IMAGE_VALUE


def _sample_mean(metrics: Mapping) -> float:
    """A sample's mean metric: its ``mean``, else the mean of its metrics (worst, 1.0, if not finite)."""
    value = metrics.get("mean")
    if value is None:
        vals = [float(x) for k, x in metrics.items() if k != "mean"]
        value = sum(vals) / len(vals) if vals else 1.0
    value = float(value)
    return value if math.isfinite(value) else 1.0


# --------------------------------------------------------------------------- a sample's result


def _base_result(sample, settings, *, index: int) -> SampleResult:
    from .models.request import derive_seed

    return SampleResult(
        sample_id=sample.id, suite=str(getattr(sample, "suite", "") or ""), task=sample.task,
        variation=str(getattr(sample, "variation", "") or ""), prompt=sample.prompt,
        seed=derive_seed(settings.seed, sample.id, 0), index=index, pass_rule=settings.pass_rule,
    )


def generation_failure_result(sample, generation, settings, *, index: int = 0) -> SampleResult:
    """The result of a sample whose model gave no image (outcome ``"failed"``, or ``"refused"``
    when the provider declined: moderation, a safety filter, text without an image)."""
    from .errors import GenerationRefused

    refused = isinstance(generation.error, GenerationRefused)
    result = _base_result(sample, settings, index=index)
    result.outcome = "refused" if refused else "failed"
    result.failed = ["refused" if refused else "generation"]
    result.error = str(generation.error)
    result.seconds = float(generation.seconds)
    result.generations = int(getattr(generation, "attempts", 0) or 0)
    what = "the model refused to make the image" if refused else "the model gave no image"
    result.extra["_message"] = (
        f"violin sample {sample.id} failed: {what}\n\n"
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
    result.generations = int(getattr(generation, "attempts", 0) or 0)
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
    from .thresholds import limits_for_task

    if generation.error is not None and generation.error.unjudged:  # no answer, setup, time-out, cancel
        what = "no answer from the model endpoint: " if generation.error.transport else ""
        return error_result(sample, generation, settings, index=index, reason=f"{what}{generation.error}"), []
    if generation.error is not None or not generation.images:
        result = generation_failure_result(sample, generation, settings, index=index)
        names = tuple(getattr(sample, "metric_names", ()) or ())
        if names:  # the limits it failed to meet; they also name its metrics in the tables
            result.limits = limits_for_task(limits, sample.task, names)
        return result, []
    from .verdict import judge

    result = _base_result(sample, settings, index=index)
    result.seconds = float(generation.seconds)
    result.cached = bool(generation.cached)
    result.generations = int(getattr(generation, "attempts", 0) or 0)
    result.cache_hits = max(0, len(generation.images) - result.generations)
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
    if not verdict.passed:  # diagnosed: a help, never the verdict (an error is one line)
        from .diagnosis import diagnose_failure

        found, error = diagnose_failure(sample, generation.images, per_repeat)
        if error is None:
            result.extra["diagnosis"] = found.to_json()
            verdict = replace(verdict, diagnosis=tuple(found.texts()))
        else:
            result.extra["diagnosis_error"] = error
        result.extra["_message"] = verdict.message()
    return result, list(generation.images)
