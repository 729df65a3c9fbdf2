"""What a sample over its limits is against the baseline: a known failure, a new one, or a failure.

With a baseline, a sample that fails its limits is a pytest xfail when the baseline holds it
(same definition, judged there): a *known failure* when it was over its limits there too, a
*new failure* when it was within them. The run then fails only through the gate
(``violin::gate``), which tests whether the model got worse. The baseline's outcomes reach
pytest-xdist workers through ``workerinput``.
"""

from __future__ import annotations

import pytest

from ..results import Outcome

__all__ = ["INDEX_INPUT", "SendIndex", "baseline_index", "failure_context"]

#: ``workerinput`` key: the baseline's outcomes (:func:`baseline_index`).
INDEX_INPUT = "violin_baseline_outcomes"


def baseline_index(doc) -> dict:
    """Sample id -> ``(outcome, definition, mean)`` of a baseline document."""
    from ..results import sample_value

    return {str(r["id"]): (str(r.get("outcome")), r.get("definition"), float(sample_value(r.get("metrics") or {})))
            for r in doc.get("samples") or ()}


class SendIndex:
    """xdist controller: every worker gets the baseline's outcomes (registered only with xdist)."""

    def __init__(self, index: dict):
        self.index = {k: list(v) for k, v in index.items()}

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput[INDEX_INPUT] = self.index


def failure_context(index, sample_id: str, definition, mean) -> str | None:
    """What a sample over its limits is against the baseline (``index``: :func:`baseline_index`,
    None without a baseline), or None when it is no known or new failure (no baseline, not in it, redefined, or an error there): then it fails.

    ``known failure``: over its limits in the baseline too; ``new failure``: within them there.
    Either is a pytest xfail: the run fails only when the gate shows the model got worse.
    """
    entry = None if not index else index.get(str(sample_id))
    if entry is None:
        return None
    outcome, old_definition, old_mean = entry
    outcome = Outcome(outcome)
    if not outcome.judged or (definition and old_definition and definition != old_definition):
        return None
    now = "" if mean is None else f"mean {float(mean):.4f} now, "
    if outcome.failing:
        return (f"known failure: over its limits in the baseline too ({now}{old_mean:.4f} in the "
                f"baseline); the gate judges whether the model got worse")
    return (f"new failure: within its limits in the baseline ({now}{old_mean:.4f} in the baseline); "
            f"the gate judges whether the model got worse")
