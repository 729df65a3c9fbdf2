"""``--violin-compare``: this run side by side with earlier runs (and the paper's rows)."""

from __future__ import annotations

import pytest

__all__ = ["build_runs_comparison", "load_compare_runs"]


def load_compare_runs(config, state) -> None:
    """Load every ``--violin-compare=RUN`` now: a bad RUN is a usage error before any sample runs."""
    from ..compare.runs import load_run
    from ..errors import ViolinError

    for spec in state.settings.compare:
        if spec == "paper":
            state.compare_paper = True
            continue
        path = spec if spec.startswith("dir:") else str(config.invocation_params.dir / spec)
        try:
            state.compare_runs.append(load_run(path))
        except ViolinError as exc:
            raise pytest.UsageError(f"--violin-compare={spec!r}: {exc}") from None


def build_runs_comparison(s, results, current) -> None:
    """This run (labelled by its adapter) side by side with the ``--violin-compare`` runs."""
    from ..compare.model import Run
    from ..compare.table import build
    from ..errors import ViolinError

    meta = dict(current["metadata"])
    this = Run(label=str(meta.get("adapter") or "this run"), source="this run", kind="results",
               metadata=meta, records={str(r["sample_id"]): r for r in results})
    paper = ()
    if s.compare_paper:
        from ..compare.paper import published_rows

        paper = published_rows()
    try:
        s.runs_comparison = build([this, *s.compare_runs], paper=paper)
    except ViolinError as exc:
        s.messages.append(f"comparison with --violin-compare runs NOT made: {exc}")
