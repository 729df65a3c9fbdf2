"""Sample records: what a baseline keeps of each sample, its digest, the suite fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence

from ..results import _jsonable, aggregate, sample_value
from ..errors import InvalidArgumentError

__all__ = ["aggregate_records", "as_record", "sample_definition", "sample_digest", "suite_fingerprint"]



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
        raise InvalidArgumentError(f"a sample result must be a mapping or have to_json(); got {type(result).__name__}")
    rec = dict(data)
    if "id" not in rec and "sample_id" in rec:
        rec["id"] = rec["sample_id"]
    if "sample_id" not in rec and "id" in rec:
        rec["sample_id"] = rec["id"]
    return rec


def _value(rec: Mapping) -> float:
    """A record's mean metric, :data:`~.policy.ERROR_VALUE` (1.0) when it has no metrics (the model
    gave no image, or refused): :func:`pytest_violin.results.sample_value`, the rule of every table."""
    return sample_value(rec.get("metrics") or {})


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      default=_jsonable).encode()


def sample_definition(sample) -> str:
    """The definition digest of a Sample (:func:`sample_digest` of its manifest)."""
    to_manifest = getattr(sample, "to_manifest", None)
    if callable(to_manifest):
        manifest = to_manifest()
    else:  # pragma: no cover - every Sample has to_manifest
        manifest = {k: getattr(sample, k, None) for k in ("id", "task", "prompt", "width", "height")}
        manifest["spec"] = dict(getattr(sample, "spec", {}) or {})
    return sample_digest(manifest)


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
        ``failed`` (not passed: refusals and errors included), ``errors``,
        ``refused`` (the provider declined), ``no_image`` (failed without an
        image), ``pass_rate`` and ``metrics`` (name -> mean over the judged
        samples, a sample without an image counting 1.0 as in the gate;
        ``mean`` is null where no sample was judged). Rows are sorted by task
        then variation.
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
            "refused": row.refused,
            "no_image": row.no_image,
            "pass_rate": row.pass_rate,
            "metrics": {k: v for k, v in row.means.items() if k == "mean" or v is not None},
        }
        (tasks if row.is_total else variations).append(entry)
    tasks.sort(key=lambda r: r["task"])
    variations.sort(key=lambda r: (r["task"], r["variation"]))
    return {"tasks": tasks, "variations": variations}
