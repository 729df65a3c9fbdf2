"""The report folder of a run: ``results.json``, ``thumbnails.json``, ``summary.md`` and ``report.html``.

Written by ``--violin-report=DIR`` and by
:meth:`pytest_violin.evaluation.EvaluationRun.save`: one writer, so the
command line's ``compare``, the baseline gate and every reader accept either.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ReportsNotWritten
from .json_report import THUMBNAILS_FILE

__all__ = ["PASSING_THUMBNAILS_PER_VARIATION", "REPORT_FILES", "ReportsNotWritten", "attach_thumbnails",
           "write_report_folder"]

#: Passing samples per (task, variation) and process whose generated image is
#: shown in the HTML report. Every failing sample gets its thumbnails; a
#: passing one looks like its expected image by definition, so a few examples
#: per variation show what the model draws without paying for thousands.
PASSING_THUMBNAILS_PER_VARIATION = 12


#: The files of a report folder, in the order they are written.
REPORT_FILES = ("results.json", THUMBNAILS_FILE, "summary.md", "report.html")


def write_report_folder(folder, results, *, metadata, comparison=None, aggregates=None,
                        runs_comparison=None) -> tuple:
    """Write the four report files of ``results`` into ``folder`` (created if missing).

    Parameters
    ----------
    folder : path-like
    results : list
        Sample records (plain dicts, :func:`~.json_report.records_of`).
    metadata : Mapping
        The run's facts (the baseline's metadata, ``interrupted``, usage...).
    comparison : Comparison, optional
        The baseline gate's verdict.
    aggregates : Mapping, optional
        The baseline layout's aggregates (computed from ``results`` when omitted).
    runs_comparison : compare.model.Comparison, optional
        A side-by-side comparison with other runs.

    Returns
    -------
    tuple of str
        The names written (:data:`REPORT_FILES`).

    Raises
    ------
    ReportsNotWritten
        A file could not be written. Every file is written atomically, so
        each is whole; the earlier run's files this run did not replace are
        removed (a folder holding this run's results.json beside the last
        run's report.html would pass for this run's reports), and the message
        says what was written and removed.
    """
    from .html import write_html
    from .json_report import write_results_json, write_thumbnails_json
    from .markdown import write_summary

    folder = Path(folder)
    kwargs = {"metadata": metadata, "comparison": comparison, "aggregates": aggregates}
    written: list = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_results_json(folder / "results.json", results, **kwargs)
        written.append("results.json")
        write_thumbnails_json(folder / THUMBNAILS_FILE, results)
        written.append(THUMBNAILS_FILE)
        write_summary(folder / "summary.md", results, runs_comparison=runs_comparison, **kwargs)
        written.append("summary.md")
        write_html(folder / "report.html", results, runs_comparison=runs_comparison, **kwargs)
        written.append("report.html")
    except OSError as exc:
        raise ReportsNotWritten(f"{exc}; {_drop_stale(folder, written)}") from exc
    return tuple(written)


def _drop_stale(folder: Path, written) -> str:
    """Remove the earlier run's report files this run did not replace; say what happened."""
    missing = [n for n in REPORT_FILES if n not in written]
    removed, kept = [], []
    for name in missing:
        path = folder / name
        try:
            if path.is_file():
                path.unlink()
                removed.append(name)
        except OSError:
            kept.append(name)
    parts = ["not written: " + ", ".join(missing)]
    if written:
        parts.append("written: " + ", ".join(written))
    if removed:
        parts.append("the earlier run's " + ", ".join(removed) + " removed (not this run's)")
    if kept:
        parts.append("the earlier run's " + ", ".join(kept) + " could NOT be removed: they are "
                     "not this run's")
    return "; ".join(parts)


def attach_thumbnails(result, sample, images, shown: dict, *,
                      per_variation: int = PASSING_THUMBNAILS_PER_VARIATION) -> None:
    """Put the report's thumbnails of one scored sample into ``result.extra["thumbnails"]``.

    Every failing sample gets them; passing ones only up to ``per_variation``
    per (task, variation), counted in ``shown`` (the caller's, one per run).
    The ground truth is rendered again only for failures: a passing sample's
    difference is near black, and rendering costs more than everything else
    the report does (see docs/reports.md). A thumbnail never fails a sample:
    what went wrong goes to ``extra["thumbnails_error"]``.
    """
    if result.passed:
        group = (sample.task, getattr(sample, "variation", None))
        if shown.get(group, 0) >= per_variation:
            return
        shown[group] = shown.get(group, 0) + 1
    try:
        from .thumbnails import make_thumbnails

        expected = sample.expected() if not result.passed else None
        # the mask task's source image and mask beside expected and generated
        inputs = getattr(sample, "inputs", ()) if expected is not None else ()
        result.extra["thumbnails"] = make_thumbnails(expected, images[0] if images else None, inputs=inputs)
    except Exception as exc:
        result.extra["thumbnails_error"] = f"{type(exc).__name__}: {exc}"
