"""Baselines and regression gating (pure functions, no pytest).

Names load on first use, so importing the constants costs nothing.

A *baseline* freezes one run: every sample's metric values, the aggregates and the facts that say whether two
runs are comparable (docs/gating.md). :func:`compare` decides per task and per (task, variation) whether the
model is *shown within its margins*, *shown worse* or neither on the samples both runs share; samples on one
side only, or redefined, are listed, never compared. :mod:`.plan` says how many samples each group needs.

The functions take :class:`~pytest_violin.results.SampleResult` objects or their records.
"""

from __future__ import annotations

from .._lazy import lazy_names

_HOMES = {
    "DEFAULT_MAX_REGRESSION": "policy", "DEFAULT_RESAMPLES": "policy", "ERROR_VALUE": "policy",
    "OUTCOMES": "policy", "DEFAULT_ALPHA": "policy", "DEFAULT_MAX_PASS_DROP": "policy", "MIN_SHARED": "policy",
    "sample_digest": "records", "suite_fingerprint": "records", "aggregate_records": "pytest_violin.results",
    "BASELINE_FORMAT": "baseline", "SCHEMA_VERSION": "baseline", "build_baseline": "baseline",
    "dumps_baseline": "baseline", "write_baseline": "baseline", "read_baseline": "baseline",
    "validate_baseline": "baseline",
    "paired_bootstrap": "comparison", "GroupDelta": "comparison", "Stat": "comparison",
    "Comparison": "comparison", "compare": "comparison",
    "GateLimits": "decide", "GateVerdict": "decide", "decide": "decide",
}

__all__ = sorted(_HOMES)


__getattr__, __dir__ = lazy_names(globals(), _HOMES)
