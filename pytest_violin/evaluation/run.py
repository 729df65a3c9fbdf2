"""The result of :func:`~.api.evaluate`: tables, numbers for trackers, files, the gate's verdict.

Everything here reads the run's :class:`~pytest_violin.results.SampleResult`
records through the package's one aggregation (:func:`pytest_violin.results.aggregate`),
its one baseline builder (:func:`pytest_violin.gating.build_baseline`), the
gate's comparison (:func:`pytest_violin.gating.compare`), the report writers
(:func:`pytest_violin.report.folder.write_report_folder`) and the comparison
tables (:mod:`pytest_violin.compare`): a run saved here is read by
``python -m pytest_violin compare`` and gated by ``--violin-baseline`` exactly
as a pytest run's.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import InvalidArgumentError

__all__ = ["EvaluationRun", "trend"]

#: The baseline file :meth:`EvaluationRun.save` writes beside the reports.
BASELINE_FILE = "baseline.json"


class EvaluationRun:
    """One evaluation: its samples' results, how it ended, and views of them.

    Attributes
    ----------
    label : str
        Its name in tables and trends.
    results : list of SampleResult
        One per sample judged, in suite order: ``metrics``, ``limits``,
        ``failed``, ``outcome`` (an :class:`~pytest_violin.results.Outcome`),
        ``error``, ``diagnosis``, ``message``...
    metadata : dict
        ``suite``, ``profile``, ``seed``, ``repeats``, ``pass_rule``,
        ``adapter``, ``package_version`` (and ``dataset`` on the official data).
    interrupted : bool
        The run stopped before its last sample; ``stop_reason`` says why.
    usage : dict
        ``calls``, ``cache_hits``, ``retries``, ``refused``.
    seconds : float
        Wall time of the generations and judging.
    """

    def __init__(self, results, *, metadata: dict, label: str | None = None,
                 interrupted: bool = False, stop_reason: str | None = None, usage=None, seconds: float = 0.0,
                 price: float | None = None, shard: dict | None = None):
        self.results = list(results)
        #: ``evaluate(shard="K/N")``: which part of which selection (results.json's ``shard`` record)
        self.shard = dict(shard) if shard else None
        self.metadata = dict(metadata)
        self.label = str(label or self.metadata.get("adapter") or "run")
        self.interrupted = bool(interrupted)
        self.stop_reason = stop_reason
        self.usage = dict(usage or {})
        self.seconds = float(seconds)
        self.price = price

    @classmethod
    def _from_session(cls, session, store, *, suite, dataset=None, shard=None) -> "EvaluationRun":
        from .. import __version__

        metadata = {
            **({"dataset": dataset} if dataset else {}),
            "suite": str(suite), "profile": session.settings.profile, "seed": int(session.settings.seed),
            "repeats": int(session.repeats), "pass_rule": session.settings.pass_rule,
            "adapter": session.identity, "package_version": __version__,
        }
        return cls(store.results, metadata=metadata, label=session.label,
                   interrupted=session.interrupted, stop_reason=session.stop_reason,
                   usage=session.usage.snapshot(), seconds=session.seconds, price=session.price, shard=shard)

    # ------------------------------------------------------------------ numbers
    def __len__(self) -> int:
        return len(self.results)

    @property
    def rows(self) -> list:
        """:class:`~pytest_violin.results.AggregateRow` per (task, variation), then each task's row."""
        from ..results import aggregate

        return aggregate(self.results)

    def _keyed(self, attribute: str) -> dict:
        out = {}
        for row in self.rows:
            key = row.task if row.is_total else f"{row.task}/{row.variation or '-'}"
            out[key] = row.means.get("mean") if attribute == "mean" else row.pass_rate
        return out

    @property
    def means(self) -> dict:
        """``{"color": 0.08, "color/v1": 0.07, ...}``: the mean metric per task and per variation
        (a sample without an image counts 1.0; errors are left out; None where nothing was judged)."""
        return self._keyed("mean")

    @property
    def pass_rates(self) -> dict:
        """``{"color": 0.9, "color/v1": 0.95, ...}``: passed samples / samples, per task and variation."""
        return self._keyed("pass_rate")

    @property
    def passed(self) -> int:
        """Samples that passed."""
        return sum(1 for r in self.results if r.passed)

    def message(self, sample_id: str) -> str | None:
        """The failure text of a sample (its metric table and diagnosis), as pytest shows it."""
        found = next((r for r in self.results if r.sample_id == sample_id), None)
        return (found.message or None) if found is not None else None

    def diagnoses(self) -> dict:
        """Sample id -> the one-line findings of each failing sample's diagnosis."""
        return {r.sample_id: [str(f.get("text", "")) for f in r.diagnosis if isinstance(f, dict)]
                for r in self.results if r.diagnosis}

    def scalars(self, prefix: str = "violin") -> dict:
        """A flat dict of floats for experiment trackers (W&B, TensorBoard, MLflow).

        ``{prefix}/{task}/mean``, ``{prefix}/{task}/pass_rate``, each metric
        ``{prefix}/{task}/{metric}``, the same per variation
        (``{prefix}/{task}/{variation}/mean``), and the run's
        ``{prefix}/mean``, ``{prefix}/pass_rate``, ``{prefix}/error_rate``.
        Values that do not exist (every sample of a group errored) are left out.
        """
        from ..results import aggregate

        out: dict = {}

        def put(key, value):
            if value is not None and math.isfinite(float(value)):
                out[f"{prefix}/{key}"] = float(value)

        for row in self.rows:
            base = row.task if row.is_total else f"{row.task}/{row.variation or '-'}"
            put(f"{base}/mean", row.means.get("mean"))
            put(f"{base}/pass_rate", row.pass_rate)
            for name in row.metric_names:
                put(f"{base}/{name}", row.means.get(name))
        everything = [dict(r.to_dict(), task="all", variation="") for r in self.results]
        if everything:
            total = aggregate(everything)[-1]
            put("mean", total.means.get("mean"))
            put("pass_rate", total.pass_rate)
            put("error_rate", total.errors / total.count)
        return out

    # ------------------------------------------------------------------ tables
    def to_run(self, label: str | None = None):
        """This run as a :class:`pytest_violin.compare.model.Run` (for ``compare`` and trends)."""
        from ..compare.runs import run_from_results

        return run_from_results(self._document(), label=label or self.label, source=f"<evaluate: {self.label}>")

    def table(self, format: str = "text", *, paper: bool = False) -> str:  # noqa: A002 (the CLI's word)
        """The run's tables in the paper's layout, per task: ``"text"``, ``"markdown"``, ``"latex"`` or
        ``"csv"``; ``paper=True`` adds the paper's published rows."""
        from ..compare.formats import render
        from ..compare.table import build

        formats = {"text": "terminal", "markdown": "md", "md": "md", "latex": "latex", "csv": "csv"}
        if format not in formats:
            raise InvalidArgumentError(f"format={format!r}: accepted: 'text', 'markdown', 'latex', 'csv'")
        published = ()
        if paper:
            from ..compare.paper import published_rows

            published = published_rows()
        return render(build([self.to_run()], paper=published), formats[format])

    def _repr_markdown_(self) -> str:  # a notebook shows the tables
        return self.table("markdown")

    def __repr__(self) -> str:
        state = f", stopped: {self.stop_reason}" if self.interrupted else ""
        return (f"EvaluationRun({self.label!r}: {len(self.results)} samples, {self.passed} passed, "
                f"mean {self.scalars().get('violin/mean', float('nan')):.3f}{state})")

    # ------------------------------------------------------------------ files and the gate
    def baseline(self) -> dict:
        """The run as a baseline document (what ``--violin-save-baseline`` writes)."""
        from ..gating import build_baseline
        from ..report.json_report import records_of

        meta = dict(self.metadata)
        extra = {"repeats": meta.pop("repeats"), "pass_rule": meta.pop("pass_rule")}
        if "dataset" in meta:
            extra["dataset"] = meta.pop("dataset")
        meta.pop("package_version", None)
        return build_baseline(records_of(self.results), extra_metadata=extra, **meta)

    def _report_metadata(self, current) -> dict:
        from ..report.json_report import records_of, run_usage

        meta = dict(current["metadata"])
        meta["label"] = self.label  # what compare and trend name the saved run by
        meta["interrupted"] = self.interrupted
        if self.interrupted:
            meta["stop_reason"] = self.stop_reason
        meta.update(run_usage(records_of(self.results), price=self.price, counted=self.usage or None))
        if self.shard:
            meta["shard"] = dict(self.shard)  # which part of which selection: merge checks them
        return meta

    def _document(self) -> dict:
        from ..report.json_report import build_results, records_of

        current = self.baseline()
        return build_results(records_of(self.results), metadata=self._report_metadata(current),
                             aggregates=current["aggregates"])

    def save(self, folder, *, baseline=None) -> Path:
        """Write ``results.json``, ``thumbnails.json``, ``summary.md`` and ``report.html`` into
        ``folder`` (as ``--violin-report`` does) and the run's baseline as ``baseline.json``.

        ``python -m pytest_violin compare FOLDER`` (and ``trend``) reads the folder, naming it by :attr:`label`,
        ``--violin-baseline=FOLDER/baseline.json`` gates a later run on it.
        ``baseline``: a baseline to compare with (as :meth:`compare` takes it), whose verdict the reports show.
        A baseline of an interrupted run or of a shard is not written (it would gate on a subset).
        """
        from ..gating import write_baseline
        from ..report.folder import write_report_folder
        from ..report.json_report import records_of

        folder = Path(folder)
        current = self.baseline()
        comparison = None if baseline is None else self.compare(baseline).comparison
        meta = self._report_metadata(current)
        if baseline is not None:
            meta["baseline"] = str(baseline) if isinstance(baseline, (str, Path)) else "<in memory>"
        write_report_folder(folder, records_of(self.results), metadata=meta, comparison=comparison,
                            aggregates=current["aggregates"])
        target = folder / BASELINE_FILE
        if not self.interrupted and self.results and not self.shard:  # a part gates nothing
            write_baseline(target, current)
        elif target.is_file():
            target.unlink()  # an earlier run's, not this one's
        return folder

    def compare(self, baseline, *, max_regression: float | None = None, max_pass_drop: float | None = None,
                alpha: float | None = None, allow_mismatch: bool = False, max_refusal_rise: float | None = None,
                power: float | None = None, accept_not_shown: bool = False):
        """The gate's verdict on this run against ``baseline`` (a baseline file, a folder :meth:`save`
        wrote, a baseline document, or another :class:`EvaluationRun`).

        The gate's own decision (:func:`pytest_violin.gating.decide.decide`, the rules of
        ``--violin-baseline``, its margins, error rate and power by default): a
        :class:`~pytest_violin.gating.decide.GateVerdict` whose ``ok`` is True only when every task and
        variation is shown within its margins (or, ``accept_not_shown``, nothing regressed);
        ``comparison`` holds the groups' evidence and outcome, ``messages`` what the reports say beside
        them (the data changed).
        """
        from ..gating.decide import GateLimits, decide
        from ..report.json_report import records_of

        given = {"max_regression": max_regression, "max_pass_drop": max_pass_drop, "alpha": alpha,
                 "max_refusal_rise": max_refusal_rise, "power": power}
        limits = GateLimits(allow_mismatch=allow_mismatch, accept_not_shown=accept_not_shown,
                            **{k: v for k, v in given.items() if v is not None})
        doc, label = _baseline_document(baseline)
        return decide(doc, records_of(self.results), self.baseline(), limits=limits, baseline_label=label,
                      interrupted=self.interrupted)


def _baseline_document(baseline) -> tuple:
    """``(baseline document, its name)`` of what :meth:`EvaluationRun.compare` accepts."""
    from ..gating import read_baseline
    from ..gating.baseline import validate_baseline

    if isinstance(baseline, EvaluationRun):
        return baseline.baseline(), baseline.label
    if isinstance(baseline, dict):
        validate_baseline(baseline, source="<baseline>")
        return baseline, "<baseline>"
    if isinstance(baseline, (str, Path)):
        path = Path(baseline)
        if path.is_dir():
            path = path / BASELINE_FILE
        return read_baseline(path), str(path)
    raise InvalidArgumentError(f"baseline={type(baseline).__name__}: accepted: a baseline file, a folder "
                               f"EvaluationRun.save wrote, a baseline document or an EvaluationRun")


def trend(runs, *, labels=None, paper: bool | None = None):
    """Task means and pass rates across ``runs`` in the order given (checkpoints, releases).

    ``runs``: :class:`EvaluationRun` objects, folders or files ``compare``
    reads, or :class:`~pytest_violin.compare.model.Run` objects. Returns a
    :class:`~pytest_violin.compare.trend.Trend` (``markdown()``, ``csv()``,
    ``text()``, ``write_html(path)``); ``paper``: the paper's models as
    reference lines (default: when every run is on the official data).
    """
    from ..compare.model import Run
    from ..compare.runs import load_run
    from ..compare.trend import build_trend

    runs = list(runs)
    labels = list(labels or ())
    if len(labels) > len(runs):
        raise InvalidArgumentError(f"labels: {len(labels)} given for {len(runs)} runs")
    labels += [None] * (len(runs) - len(labels))
    loaded = []
    for run, label in zip(runs, labels):
        if isinstance(run, EvaluationRun):
            loaded.append(run.to_run(label))
        elif isinstance(run, Run):
            loaded.append(run)
        elif isinstance(run, (str, Path)):
            loaded.append(load_run(str(run), label=label))
        else:
            raise InvalidArgumentError(f"runs: {type(run).__name__} is not a run; accepted: EvaluationRun, "
                                       f"a report folder, results.json or baseline file, or a compare Run")
    return build_trend(loaded, paper=paper)
