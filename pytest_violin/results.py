"""The one result model: a sample's :class:`SampleResult`, its (de)serializer and the aggregation.

A result travels as JSON on the item's ``TestReport`` (``violin_result``), so an xdist controller collects
every worker's results as a single process does; :class:`ResultsStore` keeps them in collection order and
:func:`aggregate` makes the rows (per suite, task and variation, like the paper's tables) that the terminal,
the files, the gate and the baseline read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace

from .errors import InvalidArgumentError
from .verdict import Outcome

__all__ = ["AggregateRow", "NO_IMAGE_VALUE", "Outcome", "ResultsStore", "SampleResult", "aggregate",
           "combine_repeats", "error_result", "generation_failure_result", "sample_value", "score_generation"]

#: What a judged sample without an image (none given, or refused) counts for on every metric and in every
#: mean: the worst distance, as the gate counts it. Samples whose outcome is ``error`` (not judged) are left
#: out.
NO_IMAGE_VALUE = 1.0


#: Typed fields that results.json keeps under ``extra`` (its documented layout).
_IN_EXTRA = ("diagnosis", "diagnosis_error", "adapter", "definition")


@dataclass
class SampleResult:
    """Everything known about one sample after its test ran.

    ``metrics`` (with ``mean``) is the mean over repeats, empty without an image; ``repeats`` / ``spread`` /
    ``worst`` are per repeat, their population std and max; ``failed`` names the metrics over their limit
    (``generation`` or ``refused`` without an image); ``generations`` counts adapter calls (what a paid API
    bills), ``cache_hits`` the images from the cache; ``original_size`` is the answer's ``[w, h]`` when it was
    resized; ``definition`` is the sample's digest, ``adapter`` the model's identity, ``diagnosis`` the
    findings of what a failing answer did; ``message`` is the failure text shown by the test (never
    serialized); ``extra`` holds small JSON-able data of other plugins (thumbnails, ...).
    """

    sample_id: str
    suite: str = ""
    task: str = ""
    variation: str = ""
    prompt: str = ""
    metrics: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    failed: list = field(default_factory=list)
    outcome: Outcome = Outcome.PASSED
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
    definition: str | None = None
    adapter: str | None = None
    diagnosis: list | None = None
    diagnosis_error: str | None = None
    message: str = ""

    def __post_init__(self):
        self.outcome = Outcome(self.outcome)

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED

    @property
    def value(self) -> float:
        """What the sample counts for in a mean (:func:`sample_value`)."""
        return sample_value(self.metrics)

    def to_dict(self) -> dict:
        """The results.json record (containers shallow-copied; typed extras under ``extra``)."""
        out = {}
        for name in _SERIALIZED:
            value = getattr(self, name)
            if isinstance(value, dict):
                value = {k: (dict(v) if isinstance(v, dict) else v) for k, v in value.items()}
            elif isinstance(value, list):
                value = [dict(v) if isinstance(v, dict) else v for v in value]
            out[name] = value
        out["outcome"] = self.outcome.value
        typed = {k: getattr(self, k) for k in _IN_EXTRA if getattr(self, k) is not None}
        out["extra"] = {**typed, **out["extra"]}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=False, default=_jsonable)

    @classmethod
    def from_dict(cls, data: Mapping) -> "SampleResult":
        """Read a results.json record or a baseline sample entry; unknown keys go to ``extra``."""
        known = {k: v for k, v in data.items() if k in _SERIALIZED}
        if "sample_id" not in known:
            known["sample_id"] = str(data.get("id"))
        if known.get("variation") is None:
            known["variation"] = ""
        known.setdefault("outcome", Outcome.FAILED if data.get("failed") else Outcome.PASSED)
        extra = dict(known.pop("extra", None) or {})
        typed = {k: extra.pop(k) for k in _IN_EXTRA if k in extra}
        if data.get("definition"):
            typed["definition"] = data["definition"]
        extra.update((k, v) for k, v in data.items() if k not in _SERIALIZED and k not in ("id", "definition"))
        return cls(**known, **typed, extra=extra)

    @classmethod
    def from_json(cls, text: str) -> "SampleResult":
        return cls.from_dict(json.loads(text))

    def baseline_entry(self) -> dict:
        """What a baseline keeps of the sample (docs/gating.md)."""
        metrics = {str(k): float(v) for k, v in self.metrics.items()}
        if metrics and "mean" not in metrics:
            metrics["mean"] = sample_value(metrics)
        return {
            "id": self.sample_id, "task": str(self.task), "variation": self.variation,
            "outcome": self.outcome.value, "failed": [str(x) for x in self.failed],
            "error": self.error or None, "seed": self.seed, "definition": self.definition,
            "metrics": metrics,
            "repeats": [{str(k): float(v) for k, v in (rep or {}).items()} for rep in self.repeats],
        }


_SERIALIZED = tuple(f.name for f in fields(SampleResult) if f.name not in (*_IN_EXTRA, "message"))


def as_result(obj) -> SampleResult:
    """A :class:`SampleResult` as is; a record (results.json or baseline entry) parsed."""
    if isinstance(obj, SampleResult):
        return obj
    if isinstance(obj, Mapping):
        return SampleResult.from_dict(obj)
    raise InvalidArgumentError(f"a sample result must be a SampleResult or a mapping; got {type(obj).__name__}")


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
    """``(mean, spread, worst)`` per metric over repeats: the mean, population std and max."""
    if not per_repeat:
        return {}, {}, {}
    n = len(per_repeat)
    mean, spread, worst = {}, {}, {}
    for key in per_repeat[0]:
        vals = [float(r[key]) for r in per_repeat]
        m = sum(vals) / n
        mean[key] = m
        spread[key] = math.sqrt(sum((v - m) ** 2 for v in vals) / n)
        worst[key] = max(vals)
    return mean, spread, worst


def sample_value(metrics: Mapping) -> float:
    """A judged sample's value in a mean: its ``mean`` (else the mean of its metrics; 1.0 if not
    finite), :data:`NO_IMAGE_VALUE` when it has no metrics (no image, or refused)."""
    if not metrics:
        return NO_IMAGE_VALUE
    value = metrics.get("mean")
    if value is None:
        vals = [float(x) for k, x in metrics.items() if k != "mean"]
        value = sum(vals) / len(vals) if vals else 1.0
    value = float(value)
    return value if math.isfinite(value) else 1.0


# --------------------------------------------------------------------------- aggregation


@dataclass(frozen=True)
class AggregateRow:
    """Means of one (suite, task, variation) group, or of a whole task (``variation=None``).

    ``means``: metric -> mean over the judged samples (every outcome but ``error``), a sample without an image
    counting :data:`NO_IMAGE_VALUE`; ``mean`` is the mean of the per-sample means; ``None`` where no sample
    was judged. ``errors``, ``refused`` and ``no_image`` (failed without an image, refusals apart) count
    samples by how they ended.
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
        return self.variation is None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["metric_names"] = list(self.metric_names)
        return d

    @classmethod
    def from_baseline_dict(cls, d: Mapping) -> "AggregateRow":
        """Read back :meth:`baseline_dict` (a row of a file's ``aggregates``)."""
        metrics = dict(d.get("metrics") or {})
        return cls(suite="", task=str(d["task"]), variation=d.get("variation"),
                   metric_names=tuple(k for k in metrics if k != "mean"), means=metrics,
                   pass_rate=float(d["pass_rate"]), count=int(d["n"]), errors=int(d.get("errors") or 0),
                   passed=int(d.get("passed") or 0), refused=int(d.get("refused") or 0),
                   no_image=int(d.get("no_image") or 0))

    def baseline_dict(self) -> dict:
        """The row in the layout of the baseline's and results.json's ``aggregates``."""
        return {"task": self.task, "variation": self.variation, "n": self.count, "passed": self.passed,
                "failed": self.count - self.passed, "errors": self.errors, "refused": self.refused,
                "no_image": self.no_image, "pass_rate": self.pass_rate,
                "metrics": {k: v for k, v in self.means.items() if k == "mean" or v is not None}}


def aggregate(records) -> list[AggregateRow]:
    """Rows per (suite, task, variation), then each task's row, in order of first appearance.

    ``records``: :class:`SampleResult` objects or their records (:func:`as_result`).
    """
    tasks: dict[tuple, dict] = {}
    for r in map(as_result, records):
        tasks.setdefault((r.suite, r.task), {}).setdefault(r.variation, []).append(r)
    rows = []
    for (suite, task), variations in tasks.items():
        everyone = [m for ms in variations.values() for m in ms]
        names = _metric_names(everyone)  # a variation without any image still gets the task's columns
        for variation, members in variations.items():
            rows.append(_aggregate_group(suite, task, variation, members, names))
        rows.append(_aggregate_group(suite, task, None, everyone, names))
    return rows


def aggregate_records(records) -> dict:
    """:func:`aggregate` in the files' layout: ``{"tasks": [...], "variations": [...]}``, sorted."""
    rows = aggregate(records)
    tasks = sorted((r.baseline_dict() for r in rows if r.is_total), key=lambda d: d["task"])
    variations = sorted((r.baseline_dict() for r in rows if not r.is_total),
                        key=lambda d: (d["task"], d["variation"]))
    return {"tasks": tasks, "variations": variations}


def _metric_names(members: list[SampleResult]) -> list:
    """A group's metrics in order of first appearance; a sample without an image names its
    task's metrics by its limits, so a task where no sample had an image still has columns."""
    return list(dict.fromkeys(key for m in members for key in m.metrics or (m.limits if m.outcome.judged else ())
                              if key != "mean"))


def _aggregate_group(suite, task, variation, members: list[SampleResult], names) -> AggregateRow:
    judged = [m for m in members if m.outcome.judged]
    means = {}
    for key in names:
        vals = [float(m.metrics[key]) if m.metrics else NO_IMAGE_VALUE
                for m in judged if key in m.metrics or not m.metrics]
        means[key] = sum(vals) / len(vals) if vals else None
    means["mean"] = sum(m.value for m in judged) / len(judged) if judged else None
    count = {o: sum(1 for m in members if m.outcome is o) for o in Outcome}
    return AggregateRow(
        suite=suite, task=task, variation=variation, metric_names=tuple(names), means=means,
        pass_rate=count[Outcome.PASSED] / len(members), count=len(members), errors=count[Outcome.ERROR],
        passed=count[Outcome.PASSED], refused=count[Outcome.REFUSED],
        no_image=sum(1 for m in members if m.outcome is Outcome.FAILED and not m.metrics),
    )


class ResultsStore:
    """The results of a session, in collection order; a result for a sample id already
    present replaces it (a re-run of the same item)."""

    def __init__(self):
        self._by_id: dict[str, SampleResult] = {}

    def add(self, result: SampleResult) -> None:
        self._by_id[result.sample_id] = result

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self):
        return iter(self.results)

    def __contains__(self, sample_id) -> bool:
        return sample_id in self._by_id

    def get(self, sample_id: str) -> SampleResult | None:
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
        return {"results": [r.to_dict() for r in self.results],
                "aggregates": [a.to_dict() for a in self.aggregate(totals=True)]}


# --------------------------------------------------------------------------- a sample's result


def _base_result(sample, settings, generation, *, index: int, outcome: Outcome) -> SampleResult:
    from .models.request import derive_seed

    return SampleResult(
        sample_id=sample.id, suite=str(getattr(sample, "suite", "") or ""), task=sample.task,
        variation=str(getattr(sample, "variation", "") or ""), prompt=sample.prompt,
        seed=derive_seed(settings.seed, sample.id, 0), index=index, pass_rule=settings.pass_rule,
        outcome=outcome, seconds=float(getattr(generation, "seconds", 0.0) or 0.0),
        generations=int(getattr(generation, "attempts", 0) or 0),
    )


def generation_failure_result(sample, generation, settings, *, index: int = 0) -> SampleResult:
    """A sample whose model gave no image: ``failed``, or ``refused`` when the provider declined
    (moderation, a safety filter, text without an image)."""
    from .errors import GenerationRefused

    refused = isinstance(generation.error, GenerationRefused)
    result = _base_result(sample, settings, generation, index=index,
                          outcome=Outcome.REFUSED if refused else Outcome.FAILED)
    result.failed = ["refused" if refused else "generation"]
    result.error = str(generation.error)
    what = "the model refused to make the image" if refused else "the model gave no image"
    result.message = (f"violin sample {sample.id} failed: {what}\n\ngeneration error: {result.error}\n\n"
                      f"prompt:    {sample.prompt}\nsample id: {sample.id}")
    return result


def error_result(sample, generation, settings, *, index: int = 0, reason: str) -> SampleResult:
    """A sample that could not be judged (``error``): no metrics, no score, ``reason`` in ``error``."""
    result = _base_result(sample, settings, generation, index=index, outcome=Outcome.ERROR)
    result.error = reason
    result.message = f"violin sample {sample.id}: {reason} (not scored: not the model's failure)"
    return result


def score_generation(sample, generation, settings, limits, *, index: int = 0):
    """Score a :class:`~pytest_violin.execution.runner.Generation` and judge it.

    ``settings`` gives ``profile``, ``pass_rule`` and ``seed``; ``limits`` are keyed ``"task.metric"``.
    Returns ``(result, images)``; ``result.message`` tells a failure.
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

    result = _base_result(sample, settings, generation, index=index, outcome=Outcome.PASSED)
    result.cached = bool(generation.cached)
    result.cache_hits = max(0, len(generation.images) - result.generations)
    per_repeat = []
    original = list(generation.original_size) if getattr(generation, "original_size", None) else None
    for image in generation.images:
        m = sample.score(image, profile=settings.profile)
        per_repeat.append(m.to_dict())
        if original is None and m.info.get("resized"):
            original = list(m.info.get("original_size") or ()) or None
    result.metrics, result.spread, result.worst = combine_repeats(per_repeat)
    result.repeats = per_repeat
    result.original_size = original
    result.limits = limits_for_task(limits, sample.task, [k for k in result.metrics if k != "mean"])
    several = len(per_repeat) > 1
    judged = result.worst if settings.pass_rule == "worst" and several else result.metrics
    notes = []
    if several:
        basis = "worst repeat (max per metric)" if settings.pass_rule == "worst" else "mean"
        notes.append(f"note: {len(per_repeat)} repeats, judged on the {basis}")
    if original is not None:
        notes.append(f"note: the {original[0]}x{original[1]} image was resized to "
                     f"{sample.width}x{sample.height}")
    verdict = judge(sample, judged, result.limits, notes=notes)
    result.failed = verdict.failed
    if not verdict.passed:  # diagnosed: a help, never the verdict (an error is one line)
        from .diagnosis import diagnose_failure

        result.outcome = Outcome.FAILED
        found, result.diagnosis_error = diagnose_failure(sample, generation.images, per_repeat)
        if result.diagnosis_error is None:
            result.diagnosis = found.to_json()
            verdict = replace(verdict, diagnosis=tuple(found.texts()))
        result.message = verdict.message()
    return result, list(generation.images)
