"""Baselines and regression gating (pure functions, no pytest).

A *baseline* is a JSON document that freezes one run: every sample's metric
values (and all its repeats), aggregates per task and per (task, variation),
and the facts needed to judge whether two runs are comparable (suite name
and fingerprint, metric profile, seed, package version, adapter identity).

:func:`compare` decides, per task and per (task, variation), whether the
current run is *credibly worse* than the baseline: the mean of the ``mean``
metric over the samples both runs share must worsen by more than
``max_regression`` **and** the 95% paired bootstrap interval of that
worsening must lie entirely above zero. Samples present on one side only,
and samples whose definition changed, are listed and left out of the
arithmetic, never silently compared.

The functions take *sample records*: plain mappings as produced by
``SampleResult.to_json()`` (or any object with a ``to_json`` method).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._fs import atomic_write
from .errors import BaselineError
from .results import _sample_mean, aggregate

__all__ = [
    "BASELINE_FORMAT",
    "SCHEMA_VERSION",
    "DEFAULT_MAX_REGRESSION",
    "DEFAULT_RESAMPLES",
    "ERROR_VALUE",
    "as_record",
    "sample_digest",
    "suite_fingerprint",
    "aggregate_records",
    "build_baseline",
    "dumps_baseline",
    "write_baseline",
    "read_baseline",
    "validate_baseline",
    "paired_bootstrap",
    "GroupDelta",
    "Comparison",
    "compare",
    "comparison_lines",
]

BASELINE_FORMAT = "pytest-violin-baseline"
SCHEMA_VERSION = 1

#: Default ``--violin-max-regression``: an absolute worsening of the mean
#: metric (distances in [0, 1]). Justified in docs/gating.md.
DEFAULT_MAX_REGRESSION = 0.01

#: Bootstrap resamples used by :func:`compare`.
DEFAULT_RESAMPLES = 2000

#: The distance a sample counts for when it produced no metrics (the model
#: raised, timed out or returned garbage): the worst possible value.
ERROR_VALUE = 1.0

#: A sample's outcomes: ``error`` (the tool or the environment failed, not the
#: model) is recorded but never compared or scored.
OUTCOMES = ("passed", "failed", "error")

_TOP_FIELDS = ("format", "schema_version", "metadata", "aggregates", "samples")
_META_FIELDS = {
    "suite": str,
    "fingerprint": str,
    "profile": str,
    "seed": int,
    "package_version": str,
    "adapter": str,
    "created": str,
}


# --------------------------------------------------------------------------- records


def as_record(result) -> dict:
    """Return a plain dict for a sample result.

    Parameters
    ----------
    result : SampleResult or Mapping
        A ``SampleResult`` (``to_dict()`` or ``to_json()``), or a
        mapping with at least ``sample_id`` (or ``id``), ``task`` and
        ``metrics``.

    Returns
    -------
    dict
        A shallow copy; ``id`` is filled from ``sample_id`` when missing.
    """
    if hasattr(result, "to_dict") and not isinstance(result, Mapping):
        data = result.to_dict()
    elif hasattr(result, "to_json") and not isinstance(result, Mapping):
        data = result.to_json()
        if isinstance(data, str):
            data = json.loads(data)
    else:
        data = result
    if not isinstance(data, Mapping):
        raise TypeError(f"a sample result must be a mapping or have to_json(); got {type(result).__name__}")
    rec = dict(data)
    if "id" not in rec and "sample_id" in rec:
        rec["id"] = rec["sample_id"]
    if "sample_id" not in rec and "id" in rec:
        rec["sample_id"] = rec["id"]
    return rec


def _value(rec: Mapping) -> float:
    """A record's mean metric, :data:`ERROR_VALUE` when it has no metrics (the model gave no image)."""
    metrics = rec.get("metrics") or {}
    return _sample_mean(metrics) if metrics else ERROR_VALUE


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      default=_json_default).encode()


def _json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def sample_digest(manifest: Mapping) -> str:
    """A short stable digest of one sample's definition.

    Parameters
    ----------
    manifest : Mapping
        ``Sample.to_manifest()``.

    Returns
    -------
    str
        32 hex digits (BLAKE2b-128 of the canonical JSON).
    """
    return hashlib.blake2b(_canonical(manifest), digest_size=16).hexdigest()


def suite_fingerprint(items: Iterable) -> str:
    """Fingerprint the definition of a selection of samples.

    Parameters
    ----------
    items : iterable
        Either ``Sample.to_manifest()`` mappings (each with an ``id``), or
        ``(sample_id, digest)`` pairs from :func:`sample_digest`. Order does
        not matter.

    Returns
    -------
    str
        ``"blake2b:"`` followed by 32 hex digits; equal for equal selections
        regardless of order or of how the run was split over processes.
    """
    pairs = []
    for item in items:
        if isinstance(item, Mapping):
            pairs.append((str(item.get("id")), sample_digest(item)))
        else:
            sid, digest = item
            pairs.append((str(sid), str(digest)))
    pairs.sort()
    h = hashlib.blake2b(digest_size=16)
    for sid, digest in pairs:
        h.update(f"{sid}\x00{digest}\n".encode())
    return "blake2b:" + h.hexdigest()


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else float("nan")


def aggregate_records(records: Iterable[Mapping]) -> dict:
    """The run's aggregation (:func:`pytest_violin.results.aggregate`) in the baseline's layout.

    Parameters
    ----------
    records : iterable of Mapping
        Sample records (see :func:`as_record`).

    Returns
    -------
    dict
        ``{"tasks": [row, ...], "variations": [row, ...]}`` where a row has
        ``task``, ``variation`` (``None`` in task rows), ``n``, ``passed``,
        ``failed``, ``errors``, ``pass_rate`` and ``metrics`` (name -> mean
        over the samples that have it; ``mean`` is null where no sample was
        scored). Rows are sorted by task then variation.
    """
    tasks, variations = [], []
    for row in aggregate(records):
        entry = {
            "task": row.task,
            "variation": row.variation,
            "n": row.count,
            "passed": row.passed,
            "failed": row.count - row.passed,
            "errors": row.errors,
            "pass_rate": row.pass_rate,
            "metrics": {k: v for k, v in row.means.items() if k == "mean" or v is not None},
        }
        (tasks if row.is_total else variations).append(entry)
    tasks.sort(key=lambda r: r["task"])
    variations.sort(key=lambda r: (r["task"], r["variation"]))
    return {"tasks": tasks, "variations": variations}


# --------------------------------------------------------------------------- baseline file


def _sample_entry(rec: Mapping) -> dict:
    metrics = {str(k): float(v) for k, v in (rec.get("metrics") or {}).items()}
    if metrics and "mean" not in metrics:
        metrics["mean"] = _value({"metrics": metrics})
    repeats = [
        {str(k): float(v) for k, v in (rep or {}).items()} for rep in (rec.get("repeats") or [])
    ]
    extra = rec.get("extra") or {}
    definition = rec.get("definition") or extra.get("definition")
    return {
        "id": str(rec["id"]),
        "task": str(rec.get("task")),
        "variation": None if rec.get("variation") is None else str(rec.get("variation")),
        "outcome": str(rec.get("outcome", "passed" if not rec.get("failed") else "failed")),
        "failed": [str(x) for x in (rec.get("failed") or [])],
        "error": None if rec.get("error") in (None, "") else str(rec.get("error")),
        "seed": rec.get("seed"),
        "definition": None if definition is None else str(definition),
        "metrics": metrics,
        "repeats": repeats,
    }


def build_baseline(results: Iterable, *, suite: str, profile: str, seed: int, adapter: str,
                   fingerprint: str | None = None, package_version: str | None = None,
                   created: str | None = None, extra_metadata: Mapping | None = None) -> dict:
    """Build a baseline document from the results of a run.

    Parameters
    ----------
    results : iterable
        Sample results (``SampleResult`` objects or records).
    suite : str
        Suite name or manifest path as given to ``--violin-suite``.
    profile : str
        Metric profile of the run.
    seed : int
        ``--violin-seed`` of the run.
    adapter : str
        The adapter's ``identity`` (already free of secrets).
    fingerprint : str, optional
        Suite fingerprint; by default computed from the records'
        ``definition`` digests (``extra["definition"]``) with
        :func:`suite_fingerprint`.
    package_version : str, optional
        Defaults to ``pytest_violin.__version__``.
    created : str, optional
        ISO 8601 UTC timestamp; defaults to now. The only field that differs
        between two identical runs.
    extra_metadata : Mapping, optional
        More JSON-able metadata (``repeats``, ``pass_rule``, ...).

    Returns
    -------
    dict
        The baseline document (see docs/gating.md). Samples are sorted by id,
        so the document does not depend on how the run was distributed.
    """
    samples = sorted((_sample_entry(as_record(r)) for r in results), key=lambda s: s["id"])
    ids = [s["id"] for s in samples]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[0]
        raise BaselineError(f"sample id {dup!r} occurs more than once in the results")
    if fingerprint is None:
        fingerprint = suite_fingerprint((s["id"], s["definition"] or "") for s in samples)
    if package_version is None:
        from . import __version__ as package_version
    if created is None:
        created = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    meta = {
        "suite": str(suite),
        "fingerprint": str(fingerprint),
        "profile": str(profile),
        "seed": int(seed),
        "package_version": str(package_version),
        "adapter": str(adapter),
        "created": str(created),
    }
    for k, v in (extra_metadata or {}).items():
        meta.setdefault(str(k), v)
    return {
        "format": BASELINE_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "metadata": meta,
        "aggregates": aggregate_records(samples),
        "samples": samples,
    }


def dumps_baseline(baseline: Mapping) -> str:
    """Serialise a baseline deterministically (sorted keys, one sample per line)."""
    head = {k: baseline[k] for k in _TOP_FIELDS if k != "samples"}
    head_text = json.dumps(head, sort_keys=True, indent=1, default=_json_default, allow_nan=False)
    lines = [json.dumps(s, sort_keys=True, default=_json_default, allow_nan=False)
             for s in baseline.get("samples", [])]
    body = ",\n  ".join(lines)
    # Splice the samples array in by hand: readable diffs, one sample per line.
    return head_text[:-2] + ',\n "samples": [\n  ' + body + "\n ]\n}\n" if lines else (
        head_text[:-2] + ',\n "samples": []\n}\n')


def write_baseline(path, baseline: Mapping) -> Path:
    """Write a baseline file atomically (temporary file, then ``os.replace``).

    Parameters
    ----------
    path : str or os.PathLike
        Destination; parent directories are created.
    baseline : Mapping
        A document from :func:`build_baseline`; validated first.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    BaselineError
        The document is invalid or the file cannot be written.
    """
    path = Path(path)
    validate_baseline(baseline, source=str(path))
    try:
        text = dumps_baseline(baseline)
    except ValueError as exc:  # NaN / infinity
        raise BaselineError(f"{path}: baseline contains a non-finite number ({exc})") from exc
    _atomic_write_text(path, text)
    return path


def _atomic_write_text(path: Path, text: str) -> None:
    try:
        atomic_write(path, text, fsync=True)
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write baseline ({exc})") from exc


def read_baseline(path) -> dict:
    """Read and validate a baseline file.

    Parameters
    ----------
    path : str or os.PathLike
        The file written by :func:`write_baseline`.

    Returns
    -------
    dict
        The validated document.

    Raises
    ------
    BaselineError
        Missing file, invalid JSON, unknown format or schema version, or a
        field of the wrong type; the message names the file and the field.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file does not exist "
                            "(write one with --violin-save-baseline=PATH)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read baseline ({exc})") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    validate_baseline(doc, source=str(path))
    return doc


def _bad(source, fieldname, problem) -> BaselineError:
    return BaselineError(f"{source}: field {fieldname!r}: {problem}")


def _check_number(source, fieldname, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _bad(source, fieldname, f"expected a number, got {type(v).__name__} {v!r}")
    if not math.isfinite(float(v)):
        raise _bad(source, fieldname, f"expected a finite number, got {v!r}")


def validate_baseline(doc, *, source: str = "<baseline>") -> None:
    """Check a baseline document; raise :class:`BaselineError` naming the field.

    Parameters
    ----------
    doc : object
        The parsed JSON.
    source : str, optional
        The file name used in messages.
    """
    if not isinstance(doc, Mapping):
        raise BaselineError(f"{source}: expected a JSON object, got {type(doc).__name__}")
    if doc.get("format") != BASELINE_FORMAT:
        raise _bad(source, "format", f"expected {BASELINE_FORMAT!r}, got {doc.get('format')!r} "
                   "(is this a pytest-violin baseline file?)")
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise _bad(source, "schema_version", f"unsupported version {version!r}; this pytest-violin "
                   f"reads version {SCHEMA_VERSION} (re-create the baseline with --violin-save-baseline)")
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping):
        raise _bad(source, "metadata", "expected an object")
    for name, typ in _META_FIELDS.items():
        v = meta.get(name)
        if not isinstance(v, typ) or isinstance(v, bool):
            raise _bad(source, f"metadata.{name}", f"expected {typ.__name__}, got {v!r}")
    if not isinstance(doc.get("aggregates"), Mapping):
        raise _bad(source, "aggregates", "expected an object")
    samples = doc.get("samples")
    if not isinstance(samples, list):
        raise _bad(source, "samples", "expected a list")
    seen = set()
    for i, s in enumerate(samples):
        where = f"samples[{i}]"
        if not isinstance(s, Mapping):
            raise _bad(source, where, "expected an object")
        sid = s.get("id")
        if not isinstance(sid, str) or not sid:
            raise _bad(source, f"{where}.id", f"expected a non-empty string, got {sid!r}")
        if sid in seen:
            raise _bad(source, f"{where}.id", f"duplicate sample id {sid!r}")
        seen.add(sid)
        if not isinstance(s.get("task"), str):
            raise _bad(source, f"{where}.task", f"expected a string, got {s.get('task')!r}")
        if s.get("outcome") not in OUTCOMES:
            raise _bad(source, f"{where}.outcome",
                       f"expected one of {', '.join(map(repr, OUTCOMES))}, got {s.get('outcome')!r}")
        metrics = s.get("metrics")
        if not isinstance(metrics, Mapping):
            raise _bad(source, f"{where}.metrics", "expected an object of metric name -> number")
        for k, v in metrics.items():
            _check_number(source, f"{where}.metrics.{k}", v)
        reps = s.get("repeats", [])
        if not isinstance(reps, list):
            raise _bad(source, f"{where}.repeats", "expected a list")
        for j, rep in enumerate(reps):
            if not isinstance(rep, Mapping):
                raise _bad(source, f"{where}.repeats[{j}]", "expected an object")
            for k, v in rep.items():
                _check_number(source, f"{where}.repeats[{j}].{k}", v)


# --------------------------------------------------------------------------- statistics


def _group_seed(seed: int, key: str) -> list[int]:
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return [int(seed) & 0xFFFFFFFF, int.from_bytes(digest, "big")]


def paired_bootstrap(old, new, *, resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95,
                     seed: int | Sequence[int] = 0) -> tuple[float, float]:
    """Percentile interval of ``mean(new - old)`` by a paired bootstrap.

    Samples (pairs) are drawn with replacement; the pairing keeps the
    per-sample difficulty out of the noise, so a model that is exactly as
    good on average is not flagged.

    Parameters
    ----------
    old, new : array_like of float
        Per-sample values of the same samples in the same order.
    resamples : int, optional
        Number of bootstrap resamples (default 2,000).
    confidence : float, optional
        Two-sided coverage of the interval (default 0.95).
    seed : int or sequence of int, optional
        Seed of the NumPy generator: same inputs and seed, same interval.

    Returns
    -------
    (float, float)
        Lower and upper bound. ``(nan, nan)`` for no pairs.

    Raises
    ------
    ValueError
        Different lengths, ``resamples < 1`` or ``confidence`` outside (0, 1).
    """
    d = np.asarray(new, dtype=np.float64) - np.asarray(old, dtype=np.float64)
    if np.asarray(old).shape != np.asarray(new).shape or d.ndim != 1:
        raise ValueError(f"old and new must be 1-d and of one length; got shapes "
                         f"{np.asarray(old).shape} and {np.asarray(new).shape}")
    if int(resamples) < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    n = d.size
    if n == 0:
        return (float("nan"), float("nan"))
    if n == 1 or np.all(d == d[0]):
        return (float(d[0]), float(d[0]))
    rng = np.random.default_rng(seed)
    means = np.empty(int(resamples), dtype=np.float64)
    chunk = max(1, 2_000_000 // n)  # bounded memory: ~16 MB of indices per block
    for start in range(0, int(resamples), chunk):
        stop = min(int(resamples), start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = d[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class GroupDelta:
    """The comparison of one task or (task, variation) between two runs.

    Attributes
    ----------
    task : str
    variation : str or None
        ``None`` for the whole task.
    n : int
        Samples compared (shared by both runs, same definition).
    old, new, delta : float
        Mean of the ``mean`` metric in the baseline and now; ``new - old``.
    ci_low, ci_high : float
        Paired bootstrap interval of ``delta``.
    status : str
        ``regressed``, ``improved``, ``unchanged`` or ``not-compared``.
    metric_deltas : dict
        Metric name -> ``(old, new, delta)`` for every metric both runs have.
    newly_failing, newly_passing : tuple of str
        Shared sample ids whose outcome flipped.
    """

    task: str
    variation: str | None
    n: int
    old: float
    new: float
    delta: float
    ci_low: float
    ci_high: float
    status: str
    metric_deltas: dict = field(default_factory=dict)
    newly_failing: tuple = ()
    newly_passing: tuple = ()

    @property
    def label(self) -> str:
        """``task`` or ``task/variation``."""
        return self.task if self.variation is None else f"{self.task}/{self.variation}"

    def to_dict(self) -> dict:
        """JSON-able form."""
        return {
            "task": self.task, "variation": self.variation, "n": self.n,
            "old": _finite_or_none(self.old), "new": _finite_or_none(self.new),
            "delta": _finite_or_none(self.delta),
            "ci": [_finite_or_none(self.ci_low), _finite_or_none(self.ci_high)],
            "status": self.status,
            "metric_deltas": {k: [_finite_or_none(x) for x in v] for k, v in self.metric_deltas.items()},
            "newly_failing": list(self.newly_failing), "newly_passing": list(self.newly_passing),
        }


def _finite_or_none(x):
    return float(x) if x is not None and math.isfinite(float(x)) else None


@dataclass(frozen=True)
class Comparison:
    """Everything :func:`compare` found.

    Attributes
    ----------
    groups : tuple of GroupDelta
        Task rows then (task, variation) rows, sorted.
    max_regression : float
    errored : tuple of str
        Shared ids that ended in an error (outcome ``"error"``) on either
        side: not comparable, never scored.
    missing : tuple of str
        Baseline samples the current run does not have.
    added : tuple of str
        Current samples the baseline does not have.
    changed : tuple of str
        Shared ids whose definition digest differs (not compared).
    fingerprint_changed : bool
    old_fingerprint, new_fingerprint : str
    metadata_changes : dict
        Metadata field -> ``(baseline, current)`` for suite, profile, seed,
        adapter and package version differences.
    """

    groups: tuple
    max_regression: float
    errored: tuple = ()
    missing: tuple = ()
    added: tuple = ()
    changed: tuple = ()
    fingerprint_changed: bool = False
    old_fingerprint: str = ""
    new_fingerprint: str = ""
    metadata_changes: dict = field(default_factory=dict)
    baseline_path: str | None = None

    @property
    def regressions(self) -> tuple:
        """Groups whose status is ``regressed``."""
        return tuple(g for g in self.groups if g.status == "regressed")

    @property
    def improvements(self) -> tuple:
        """Groups whose status is ``improved``."""
        return tuple(g for g in self.groups if g.status == "improved")

    @property
    def compared(self) -> int:
        """Samples compared (shared, same definition, no error on either side)."""
        return sum(g.n for g in self.groups if g.variation is None)

    @property
    def ok(self) -> bool:
        """True when samples were compared, none ended in an error, and nothing regressed."""
        return not self.regressions and not self.errored and self.compared > 0

    def to_dict(self) -> dict:
        """JSON-able form (embedded in results.json)."""
        return {
            "baseline": self.baseline_path,
            "max_regression": self.max_regression,
            "ok": self.ok,
            "compared": self.compared,
            "errored": list(self.errored),
            "regressions": [g.label for g in self.regressions],
            "improvements": [g.label for g in self.improvements],
            "groups": [g.to_dict() for g in self.groups],
            "missing": list(self.missing), "added": list(self.added), "changed": list(self.changed),
            "fingerprint_changed": self.fingerprint_changed,
            "old_fingerprint": self.old_fingerprint, "new_fingerprint": self.new_fingerprint,
            "metadata_changes": {k: list(v) for k, v in self.metadata_changes.items()},
        }


def _samples_by_id(doc_or_records) -> dict:
    if isinstance(doc_or_records, Mapping) and "samples" in doc_or_records:
        items = doc_or_records["samples"]
    else:
        items = [_sample_entry(as_record(r)) for r in doc_or_records]
    return {s["id"]: s for s in items}


def compare(baseline: Mapping, current, *, max_regression: float = DEFAULT_MAX_REGRESSION,
            resamples: int = DEFAULT_RESAMPLES, seed: int = 0, confidence: float = 0.95,
            baseline_path: str | None = None) -> Comparison:
    """Compare a run with a baseline.

    Parameters
    ----------
    baseline : Mapping
        A baseline document (:func:`read_baseline`).
    current : Mapping or iterable
        The current run: a baseline document (:func:`build_baseline`) or its
        sample results.
    max_regression : float, optional
        Smallest absolute worsening of a group's mean metric that can count
        as a regression (default :data:`DEFAULT_MAX_REGRESSION`).
    resamples, seed, confidence : optional
        Bootstrap settings; the seed is mixed with the group name, so every
        group has its own reproducible stream.
    baseline_path : str, optional
        Recorded in the result for reports.

    Returns
    -------
    Comparison
        A group *regresses* when ``delta > max_regression`` and the lower
        bound of the paired bootstrap interval is above zero; it *improves*
        when ``delta < -max_regression`` and the upper bound is below zero.
    """
    if not (isinstance(max_regression, (int, float)) and math.isfinite(max_regression)
            and max_regression >= 0):
        raise ValueError(f"max_regression must be a finite number >= 0, got {max_regression!r}")
    old = _samples_by_id(baseline)
    new = _samples_by_id(current)
    missing = tuple(sorted(set(old) - set(new)))
    added = tuple(sorted(set(new) - set(old)))
    changed, errored, shared = [], [], []
    for sid in sorted(set(old) & set(new)):
        a, b = old[sid].get("definition"), new[sid].get("definition")
        if a and b and a != b:
            changed.append(sid)
        elif "error" in (old[sid].get("outcome"), new[sid].get("outcome")):
            errored.append(sid)
        else:
            shared.append(sid)

    keys: dict[tuple, list] = {}
    for sid in shared:
        s = new[sid]
        task = str(s.get("task"))
        var = s.get("variation")
        keys.setdefault((task, None), []).append(sid)
        keys.setdefault((task, "" if var is None else str(var)), []).append(sid)
    # Groups that exist only on one side still appear, as "not-compared".
    for side in (old, new):
        for s in side.values():
            task = str(s.get("task"))
            var = s.get("variation")
            keys.setdefault((task, None), [])
            keys.setdefault((task, "" if var is None else str(var)), [])

    groups = []
    for (task, var), ids in sorted(keys.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None, kv[0][1] or "")):
        label = task if var is None else f"{task}/{var}"
        if not ids:
            groups.append(GroupDelta(task, var, 0, math.nan, math.nan, math.nan, math.nan, math.nan,
                                     "not-compared"))
            continue
        o = np.array([_value(old[i]) for i in ids])
        nw = np.array([_value(new[i]) for i in ids])
        o_mean, n_mean = float(o.mean()), float(nw.mean())
        delta = n_mean - o_mean
        lo, hi = paired_bootstrap(o, nw, resamples=resamples, confidence=confidence,
                                  seed=_group_seed(seed, label))
        if delta > max_regression and lo > 0:
            status = "regressed"
        elif delta < -max_regression and hi < 0:
            status = "improved"
        else:
            status = "unchanged"
        names = []
        for i in ids:
            for k in (old[i].get("metrics") or {}):
                if k != "mean" and k not in names and k in (new[i].get("metrics") or {}):
                    names.append(k)
        metric_deltas = {}
        for k in names:
            pairs = [(old[i]["metrics"][k], new[i]["metrics"][k]) for i in ids
                     if k in (old[i].get("metrics") or {}) and k in (new[i].get("metrics") or {})]
            a = _mean([p[0] for p in pairs])
            b = _mean([p[1] for p in pairs])
            metric_deltas[k] = (a, b, b - a)
        newly_failing = tuple(i for i in ids if old[i].get("outcome") == "passed"
                              and new[i].get("outcome") == "failed")
        newly_passing = tuple(i for i in ids if old[i].get("outcome") == "failed"
                              and new[i].get("outcome") == "passed")
        groups.append(GroupDelta(task, var, len(ids), o_mean, n_mean, delta, lo, hi, status,
                                 metric_deltas, newly_failing, newly_passing))

    old_meta = baseline.get("metadata", {}) if isinstance(baseline, Mapping) else {}
    new_meta = current.get("metadata", {}) if isinstance(current, Mapping) and "metadata" in current else {}
    old_fp = str(old_meta.get("fingerprint", ""))
    new_fp = str(new_meta.get("fingerprint", ""))
    meta_changes = {}
    for k in ("suite", "profile", "seed", "adapter", "package_version", "repeats", "pass_rule"):
        if k in old_meta and k in new_meta and old_meta[k] != new_meta[k]:
            meta_changes[k] = (old_meta[k], new_meta[k])
    return Comparison(
        groups=tuple(groups),
        max_regression=float(max_regression),
        errored=tuple(errored),
        missing=missing,
        added=added,
        changed=tuple(changed),
        fingerprint_changed=bool(old_fp and new_fp and old_fp != new_fp),
        old_fingerprint=old_fp,
        new_fingerprint=new_fp,
        metadata_changes=meta_changes,
        baseline_path=baseline_path,
    )


def _f(x, signed=False) -> str:
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    return f"{float(x):+.4f}" if signed else f"{float(x):.4f}"


def comparison_lines(comparison: Comparison, *, max_ids: int = 10) -> list[tuple[str, str]]:
    """Plain-text lines describing a comparison, for the terminal.

    Parameters
    ----------
    comparison : Comparison
        The result of :func:`compare`.
    max_ids : int, optional
        Sample ids listed per group / list before "and N more".

    Returns
    -------
    list of (str, str)
        ``(text, level)`` with level ``bad``, ``good``, ``warn`` or ``info``.
    """
    def ids(items):
        items = list(items)
        text = ", ".join(items[:max_ids])
        return text + (f" and {len(items) - max_ids} more" if len(items) > max_ids else "")

    out = []
    where = f" {comparison.baseline_path}" if comparison.baseline_path else ""
    regs, imps = comparison.regressions, comparison.improvements
    if regs:
        out.append((f"FAILED: {len(regs)} regression(s) against baseline{where}: "
                    + ", ".join(g.label for g in regs), "bad"))
    elif comparison.compared == 0:
        out.append((f"FAILED: this run shares no comparable sample with baseline{where}: nothing was "
                    f"compared (another suite, selection or seed?)", "bad"))
    elif comparison.errored:
        out.append((f"FAILED: {len(comparison.errored)} sample(s) of baseline{where} ended in an error "
                    f"and could not be compared: {ids(comparison.errored)}", "bad"))
    else:
        out.append((f"no regression against baseline{where} ({comparison.compared} samples compared)",
                    "good"))
    out.append((f"rule: mean worsens by more than {comparison.max_regression:g} and the 95% paired "
                "bootstrap interval lies above 0", "info"))
    for title, items, level in (("regressed", regs, "bad"), ("improved", imps, "good")):
        for g in items:
            out.append((f"  {title:9s} {g.label:<28s} old {_f(g.old)}  new {_f(g.new)}  "
                        f"delta {_f(g.delta, True)}  95% CI [{_f(g.ci_low, True)}, {_f(g.ci_high, True)}]"
                        f"  n={g.n}", level))
            worst = sorted(g.metric_deltas.items(), key=lambda kv: -kv[1][2])[:3]
            if worst and title == "regressed":
                out.append(("            worst metrics: " + ", ".join(
                    f"{k} {_f(v[2], True)}" for k, v in worst), "info"))
            if g.newly_failing:
                out.append((f"            newly failing ({len(g.newly_failing)}): {ids(g.newly_failing)}",
                            level))
    if comparison.fingerprint_changed:
        out.append((f"suite fingerprint changed: {comparison.old_fingerprint} -> "
                    f"{comparison.new_fingerprint}", "warn"))
    for title, items in (("missing from this run", comparison.missing),
                         ("not in the baseline", comparison.added),
                         ("redefined since the baseline, not compared", comparison.changed)):
        if items:
            out.append((f"{len(items)} sample(s) {title}: {ids(items)}", "warn"))
    for key, (a, b) in comparison.metadata_changes.items():
        out.append((f"{key} differs: baseline {a!r}, this run {b!r}", "warn"))
    return out
