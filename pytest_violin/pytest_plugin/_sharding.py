"""``--violin-shard``: what a shard's run says about its baseline and its gate.

A shard does not decide the gate: N gates, each on a part of the evidence and
each at the error rate, would fail an unchanged model N times as often. With
``--violin-baseline`` a shard still tells known failures from new ones (xfail);
``python -m pytest_violin merge`` and ``gate`` decide the whole run.
"""

from __future__ import annotations

__all__ = ["baseline_note", "gate_note"]


def gate_note(baseline, meta: dict) -> str:
    """Why a shard's run does not compare with ``baseline``."""
    return (f"baseline {baseline} not compared in shard {meta['index']}/{meta['total']}: the gate "
            f"decides the whole run once its shards are merged (python -m pytest_violin merge, then gate)")


def baseline_note(meta: dict) -> str:
    """What a baseline saved by a shard's run holds."""
    return (f"that baseline is shard {meta['index']}/{meta['total']}'s only; 'python -m pytest_violin "
            f"merge --save-baseline' writes the whole run's from the shards' reports")
