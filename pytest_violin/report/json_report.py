"""``results.json``: every sample's result and the aggregates of a run.

The schema is documented in docs/reports.md. This module also holds the small helpers (records, ordering,
number formats, atomic writes) that the Markdown and HTML writers share.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path

from .._fs import atomic_write
from ..results import Outcome, aggregate_records, as_result

__all__ = ["RESULTS_FORMAT", "RESULTS_SCHEMA_VERSION", "THUMBNAILS_FILE", "build_results", "failures_first",
           "finite", "fmt", "fmt_pct", "fmt_signed", "metric_names", "records_of", "run_usage", "usage_text",
           "write_results_json", "write_thumbnails_json"]

RESULTS_FORMAT = "pytest-violin-results"
RESULTS_SCHEMA_VERSION = 1

# Keys of ``SampleResult.extra`` that are report plumbing, not results.
_PLUMBING = ("thumbnails",)


# --------------------------------------------------------------------------- shared helpers


def records_of(results, *, keep_thumbnails: bool = True) -> list[dict]:
    """The results.json records of ``results`` (results or records), in order; without
    ``extra["thumbnails"]`` unless ``keep_thumbnails`` (the HTML needs them, results.json not)."""
    out = []
    for r in results:
        rec = as_result(r).to_dict()
        if not keep_thumbnails and any(k in rec["extra"] for k in _PLUMBING):
            rec["extra"] = {k: v for k, v in rec["extra"].items() if k not in _PLUMBING}
        out.append(rec)
    return out


def metric_names(rows) -> list[str]:
    """Metric names of ``rows`` (mappings with ``metrics``) in first-seen order, ``mean`` last."""
    return [*dict.fromkeys(k for row in rows for k in (row.get("metrics") or {}) if k != "mean"), "mean"]


def finite(value) -> float | None:
    """``value`` as a finite float; None for None, a bool, what is no number, NaN and infinity."""
    if value is None or isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def fmt(value, digits: int = 3) -> str:
    """A number with ``digits`` decimals (the paper's tables use 3); ``n/a`` otherwise."""
    v = finite(value)
    return "n/a" if v is None else f"{v:.{digits}f}"


def fmt_signed(value, digits: int = 3) -> str:
    """Like :func:`fmt` with an explicit ``+`` sign."""
    text = fmt(value, digits)
    return text if text == "n/a" or text.startswith("-") else "+" + text


def fmt_pct(value) -> str:
    """A rate in ``[0, 1]`` as a percentage with one decimal (``12.5%``); ``n/a`` otherwise."""
    text = fmt(None if value is None or isinstance(value, bool) else 100 * float(value), 1)
    return text if text == "n/a" else text + "%"


def failures_first(records) -> list[dict]:
    """Errors, then other failures, then passes; stable within each group."""
    def key(item):
        i, rec = item
        if rec.get("error"):
            return (0, i)
        return (1 if rec.get("outcome") != Outcome.PASSED else 2, i)
    return [rec for _, rec in sorted(enumerate(records), key=key)]


def run_usage(records, *, price=None, counted=None) -> dict:
    """``generations`` (model calls made; HTTP retries not among them), ``cache_hits``,
    ``price`` and ``estimated_cost`` (``generations * price``; None without a price) of a run's records
    (``generations``, ``cache_hits``).

    ``counted``: the calls counted where they were made
    (:meth:`pytest_violin.execution.usage.CallCounter.snapshot`: reruns, samples prefetched before ``-x``
    stopped the run, repeats and fixture calls included; a record holds only the last run of its sample): the
    totals are then these, plus ``retries`` and ``calls_refused`` (at the cap).
    """
    extra = {}
    if counted is not None:
        made, hits = _count(counted.get("calls")), _count(counted.get("cache_hits"))
        extra = {"retries": _count(counted.get("retries")), "calls_refused": _count(counted.get("refused"))}
    else:
        typed = [as_result(r) for r in records]
        made = sum(_count(r.generations) for r in typed)
        hits = sum(_count(r.cache_hits) for r in typed)
    cost = None if price is None else float(made) * float(price)
    return {"generations": made, "cache_hits": hits,
            "price": None if price is None else float(price), "estimated_cost": cost, **extra}


def _count(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0
    return max(0, int(value))


def usage_text(meta) -> str | None:
    """``"12 generations made, 3 from the cache, estimated cost $0.48 at $0.04 per image"``.

    None when ``meta`` has no ``generations`` count.
    """
    from .text import format_usd

    if not isinstance(meta.get("generations"), int):
        return None
    text = f"{meta['generations']} generations made, {meta.get('cache_hits', 0)} from the cache"
    if isinstance(meta.get("retries"), int) and meta["retries"]:
        text += f", {meta['retries']} retries (counted apart)"
    if isinstance(meta.get("calls_refused"), int) and meta["calls_refused"]:
        text += f", {meta['calls_refused']} calls refused at the call limit"
    if meta.get("price") is not None:
        text += (f", estimated cost {format_usd(meta.get('estimated_cost'))} at "
                 f"{format_usd(meta['price'])} per image")
    return text


def _clean(obj):
    """Replace non-finite floats by None so the output is strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


# --------------------------------------------------------------------------- results.json


def build_results(results, *, metadata=None, comparison=None, aggregates=None) -> dict:
    """The ``results.json`` document: ``format``, ``schema_version``, ``metadata`` (run facts
    and counts), ``aggregates`` (precomputed :func:`~pytest_violin.results.aggregate_records` or computed),
    ``comparison`` (the gate's, or None) and ``samples``; strict JSON (no NaN).
    """
    records = records_of(results, keep_thumbnails=False)
    meta = dict(metadata or {})
    meta.setdefault("created", _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat())
    meta["samples"] = len(records)
    meta["passed"] = sum(1 for r in records if r.get("outcome") == Outcome.PASSED)
    meta["failed"] = len(records) - meta["passed"]
    # outcome "error" only, as the aggregates and every other report count it: a refusal or a failed
    # generation also carries an error message, but it is the model's failure, judged and scored
    meta["errors"] = sum(1 for r in records if r.get("outcome") == Outcome.ERROR)
    meta["refused"] = sum(1 for r in records if r.get("outcome") == Outcome.REFUSED)
    for key, value in run_usage(records, price=meta.get("price")).items():
        meta.setdefault(key, value)
    if comparison is not None and hasattr(comparison, "to_dict"):
        comparison = comparison.to_dict()
    return _clean({
        "format": RESULTS_FORMAT,
        "schema_version": RESULTS_SCHEMA_VERSION,
        "metadata": meta,
        "aggregates": aggregates if aggregates is not None else aggregate_records(records),
        "comparison": comparison,
        "samples": records,
    })


def write_results_json(path, results, **kwargs) -> Path:
    """Write :func:`build_results` to ``path`` atomically (keyword arguments are passed on)."""
    doc = build_results(results, **kwargs)
    # compact separators keep json's C encoder (an indent falls back to pure Python)
    return atomic_write(path, json.dumps(doc, separators=(",", ":"), allow_nan=False) + "\n")


#: File name of the thumbnails written beside results.json.
THUMBNAILS_FILE = "thumbnails.json"

#: Bytes of thumbnail data URIs written at most (the HTML report's budget).
THUMBNAILS_BUDGET = 35_000_000


def write_thumbnails_json(path, results, *, budget: int = THUMBNAILS_BUDGET) -> Path:
    """Write the samples' thumbnails (``{sample_id: {"expected", "generated", "diff"}}``) to ``path``.

    results.json leaves them out (they are plumbing for the HTML); a comparison of report folders (``python -m
    pytest_violin compare``) reads them from here for its gallery. Failures first; samples past ``budget``
    bytes of data URIs are left out.
    """
    records = records_of(results, keep_thumbnails=True)
    records.sort(key=lambda r: r.get("outcome") == Outcome.PASSED)
    out, used = {}, 0
    for rec in records:
        thumbs = (rec.get("extra") or {}).get("thumbnails")
        if not isinstance(thumbs, dict) or not thumbs:
            continue
        uris = {k: v for k, v in thumbs.items() if k in ("expected", "generated", "diff") and isinstance(v, str)}
        size = sum(len(v) for v in uris.values())
        if not uris or used + size > budget:
            continue
        out[str(rec.get("sample_id") or rec.get("id"))] = uris
        used += size
    return atomic_write(path, json.dumps({"format": "pytest-violin-thumbnails", "thumbnails": out},
                                         separators=(",", ":")))
