"""The paper's published rows (Tables 1, 2, 3 and 7), from package data.

``pytest_violin/data/paper_tables.json`` is a transcription of the Violin paper (``violin-paper.txt``); every
row keeps the line it was read from in ``source`` (``violin-paper.txt:LINE``). Metric names are the package's
(:data:`~pytest_violin.metrics.COLOR_METRICS`, ``SHAPE_METRICS``, ``MASK_METRICS``) plus ``mean``, the paper's
per-task mean column.

* Table 1, pure color (task ``color``): the paper prints only its ``Var-1`` group, so the rows have variation
  ``v1``.
* Table 2, image mask (task ``mask``) and Table 3, geometric shape (task ``shape``): no variation groups;
  variation ``None`` is the task's row. The paper's captions swap the mean columns' labels (Table 2 prints
  ``shape-mean``, Table 3 ``mask-mean``); the values are read by their metric columns, so each row's ``mean``
  is the mean of its own task.
* Table 7, Violin-Absolute-Color (task ``absolute``): variations ``v1`` to ``v4``, ``v5-zh`` / ``v5-fr`` (the
  paper's ``Var-5(C)`` / ``Var-5(F)``) and ``v6-rgb`` / ``v6-hsl`` (``Var-6(rgb)`` / ``Var-6(hsl)``), matching
  the ``language`` and ``notation`` of the ``violin-absolute`` suite's samples.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from importlib import resources

from ..errors import InternalError, InvalidArgumentError
from ..metrics import COLOR_METRICS, MASK_METRICS, SHAPE_METRICS
from .model import PublishedRow

__all__ = ["DATA_FILE", "TABLES", "TASK_METRICS", "published_rows", "rows_from_data",
           "comparability_notes", "dataset_differences", "PAPER_SAMPLES", "PAPER_DATASET"]

#: Where the paper's rows were measured (its Appendix D.1 and the authors' README).
PAPER_SAMPLES = ("the official Violin samples (Hugging Face dataset Perkzi/VIOLIN: 7,745 "
                 "samples at 512x512, the mask task on 1,800 BrushNet photographs)")

#: The published dataset's identity, as far as it is published. The paper states the samples per task
#: (``violin-paper.txt:306``: 435 colour var-1, 1,160 var-2, 750 shapes, 1,800 per mask type); no SHA-256 of
#: ``violin-test.parquet`` is published in the paper, the authors' README or a dataset card we could read, so
#: ``sha256`` is None and the counts are what a run's data is checked against. Set ``sha256`` (the LFS object
#: id of the hub's ``violin-test.parquet``) to check the file itself.
PAPER_DATASET = {
    "per_task": {"color/v1": 435, "color/v2": 1160, "shape": 750, "mask/inpainting": 1800,
                 "mask/outpainting": 1800, "mask/random": 1800},
    "samples": 7745,
    "sha256": None,
    "source": "violin-paper.txt:306",
}


def _on_official_data(run) -> bool:
    data = (run.metadata or {}).get("dataset")
    return isinstance(data, dict) and bool(data.get("revision") or data.get("sha256")
                                           or data.get("key"))


def dataset_differences(data: dict) -> list:
    """How a run's official data (its ``metadata["dataset"]``) differs from :data:`PAPER_DATASET`.

    ``"color/v1 2 of 435"`` for each task whose count differs, and ``"sha256 ... (published ...)"`` when a
    published hash is known and no file of the run's data has it; empty when it matches.
    """
    per = data.get("per_task") if isinstance(data.get("per_task"), dict) else {}
    out = []
    for group, want in PAPER_DATASET["per_task"].items():
        got = per.get(group, 0)
        if got != want:
            out.append(f"{group} {got:,} of {want:,}")
    extra = sorted(set(per) - set(PAPER_DATASET["per_task"]))
    out += [f"{group} {per[group]} not in the paper" for group in extra[:3]]
    published = PAPER_DATASET["sha256"]
    if published:
        hashes = {str(f.get("sha256")) for f in data.get("files") or () if isinstance(f, dict)}
        hashes.add(str(data.get("sha256")))
        if published not in hashes:
            out.append(f"sha256 {str(data.get('sha256') or 'unknown')[:12]} (published "
                       f"{published[:12]})")
    return out


def _run_note(run) -> list:
    meta = run.metadata or {}
    lines = []
    if not _on_official_data(run):
        lines.append(f"run {run.label} did not use the paper's samples (suite "
                     f"{meta.get('suite') or '?'!r}: other photos, masks, prompts, colour pairs "
                     f"and shape placements); its numbers beside the paper's are indicative only")
    else:
        data = meta["dataset"]
        ident = str(data.get("revision") or data.get("sha256") or data.get("key"))[:12]
        what = f"{data.get('repo') or data.get('source')}, {ident}"
        differs = dataset_differences(data)
        scored = len(run.records or ())
        if differs:
            lines.append(f"run {run.label}: on data in the official format that is not the "
                         f"paper's dataset ({what}; samples per task: {', '.join(differs[:8])}; "
                         f"the paper's counts from {PAPER_DATASET['source']}); its numbers beside "
                         f"the paper's are indicative only")
        elif scored and scored < PAPER_DATASET["samples"]:
            lines.append(f"run {run.label}: on a subset of the official data ({what}: "
                         f"{scored:,} of its {PAPER_DATASET['samples']:,} samples scored); its "
                         f"numbers beside the paper's are indicative only")
        else:
            checked = ("its sha256" if PAPER_DATASET["sha256"] else
                       "no sha256 of the dataset is published: its samples per task were checked")
            lines.append(f"run {run.label}: on the official data ({what}, "
                         f"{data.get('samples', '?')} samples, as the paper's counts "
                         f"({PAPER_DATASET['source']}); {checked})")
    profile = meta.get("profile")
    if profile and profile != "violin":
        lines.append(f"run {run.label} used --violin-profile={profile}: only 'violin' reads and "
                     f"scores as the reference scripts do, so its numbers are not comparable "
                     f"with the paper's")
    return lines


def comparability_notes(comparison) -> list:
    """Lines saying where the paper's rows and each run were measured (empty without paper rows).

    The paper's rows come from :data:`PAPER_SAMPLES`. A run is said to be on the official data only when its
    data's identity matches :data:`PAPER_DATASET` (the samples per task; the sha256 when one is published) and
    it scored all of it; a run on any other suite or data (the built-in ``violin`` suite generates its own
    photos, masks, prompts, colour pairs and shape placements; a hand-made parquet in the official format), on
    a subset, or under a profile other than ``violin`` is said to be so, its numbers beside the paper's
    indicative only.
    """
    if not any(r.published for r in comparison.rows):
        return []
    lines = [f"paper rows: published values, measured on {PAPER_SAMPLES}"]
    for run in comparison.runs:
        lines += _run_note(run)
    return lines

#: The package data file, relative to the ``pytest_violin`` package.
DATA_FILE = "data/paper_tables.json"

#: Table -> its task, in the paper's order.
TABLES = {"Table 1": "color", "Table 2": "mask", "Table 3": "shape", "Table 7": "absolute"}

#: Task -> the metric names a published row of it holds (``mean`` comes on top).
TASK_METRICS = {"color": COLOR_METRICS, "mask": MASK_METRICS, "shape": SHAPE_METRICS,
                "absolute": COLOR_METRICS}

#: Variation groups each table may hold (``None``: the task's row).
_VARIATIONS = {
    "Table 1": ("v1", "v2"),
    "Table 2": (None,),
    "Table 3": (None,),
    "Table 7": ("v1", "v2", "v3", "v4", "v5-zh", "v5-fr", "v6-rgb", "v6-hsl"),
}
_ROW_KEYS = ("table", "task", "variation", "model", "metrics", "source")
_SOURCE = re.compile(r"violin-paper\.txt:[1-9][0-9]{0,5}")
_MAX_ROWS = 1000


def _fail(where: str, what: str, value, accepted: str):
    raise InvalidArgumentError(f"{where}: {what} {value!r} is not accepted; expected {accepted}")


def _row(index: int, record) -> PublishedRow:
    """One validated row from its JSON record."""
    where = f"paper table row {index}"
    if not isinstance(record, dict):
        _fail(where, "record", type(record).__name__, "an object")
    keys = set(record)
    if keys != set(_ROW_KEYS):
        _fail(where, "keys", sorted(keys), f"exactly {list(_ROW_KEYS)}")
    table = record["table"]
    if table not in TABLES:
        _fail(where, "table", table, f"one of {list(TABLES)}")
    task = record["task"]
    if task != TABLES[table]:
        _fail(where, "task", task, f"{TABLES[table]!r} for {table}")
    variation = record["variation"]
    if variation not in _VARIATIONS[table]:
        _fail(where, "variation", variation, f"one of {list(_VARIATIONS[table])} for {table}")
    model = record["model"]
    if not isinstance(model, str) or not model.strip() or len(model) > 100:
        _fail(where, "model", model, "a non-empty name of at most 100 characters")
    source = record["source"]
    if not isinstance(source, str) or not _SOURCE.fullmatch(source):
        _fail(where, "source", source, "'violin-paper.txt:LINE'")
    metrics = record["metrics"]
    names = (*TASK_METRICS[task], "mean")
    if not isinstance(metrics, dict) or set(metrics) != set(names):
        got = sorted(metrics) if isinstance(metrics, dict) else metrics
        _fail(where, "metrics", got, f"exactly {list(names)} for task {task!r}")
    for name in names:
        value = metrics[name]
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or not 0.0 <= value <= 1.0):
            _fail(where, f"metric {name!r} value", value, "a number in [0, 1]")
    return PublishedRow(model=model, table=table, task=task, variation=variation,
                        metrics={name: float(metrics[name]) for name in names}, source=source)


def rows_from_data(data) -> list[PublishedRow]:
    """The rows of the parsed data file, in file order, validated.

    ``data`` is an object whose ``rows`` is a list of records with ``table``, ``task``, ``variation``,
    ``model``, ``metrics``, ``source``. A malformed record (the message names the row, the value and what is
    accepted) or two records for one table x model x variation raise
    :class:`~pytest_violin.errors.InvalidArgumentError`.
    """
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        _fail("paper tables", "data", type(data).__name__, "an object with a list 'rows'")
    records = data["rows"]
    if not 0 < len(records) <= _MAX_ROWS:
        _fail("paper tables", "row count", len(records), f"1 to {_MAX_ROWS}")
    rows, seen = [], {}
    for index, record in enumerate(records):
        row = _row(index, record)
        key = (row.table, row.model, row.variation)
        if key in seen:
            _fail(f"paper table row {index}", "duplicate of row", seen[key],
                  "one row per table x model x variation")
        seen[key] = index
        rows.append(row)
    return rows


@functools.lru_cache(maxsize=1)
def _packaged_rows() -> tuple:
    """The package data's rows, read and validated once."""
    try:
        text = resources.files("pytest_violin").joinpath(DATA_FILE).read_text("utf-8")
        return tuple(rows_from_data(json.loads(text)))
    except (OSError, ValueError) as exc:  # InvalidArgumentError is a ValueError
        raise InternalError(f"pytest_violin/{DATA_FILE} is missing or corrupt ({exc}); "
                            "reinstall pytest-violin, or report it") from exc


def _table_name(value) -> str:
    """``"Table 1"`` from ``1``, ``"1"``, ``"table 1"`` or ``"Table 1"``."""
    accepted = f"one of {list(TABLES)} (or their numbers)"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        _fail("published_rows", "table", value, accepted)
    text = str(value).strip()
    name = "Table " + (text[5:].strip() if text.lower().startswith("table") else text)
    if name not in TABLES:
        _fail("published_rows", "table", value, accepted)
    return name


def published_rows(tables=None) -> list[PublishedRow]:
    """The paper's published rows from the package data, in the paper's order (table, then row).

    ``tables`` keeps ``"Table 1"``, ``"Table 2"``, ``"Table 3"``, ``"Table 7"`` (or their numbers; one or
    several; None: all). A table that is not transcribed is an
    :class:`~pytest_violin.errors.InvalidArgumentError`; package data that is missing or does not validate an
    :class:`~pytest_violin.errors.InternalError`.

    Examples
    --------
    >>> rows = published_rows([3])
    >>> rows[0].model, rows[0].task, rows[0].metrics["iou"], rows[0].source
    ('FLUX.1', 'shape', 0.725, 'violin-paper.txt:190')
    """
    if tables is None:
        wanted = set(TABLES)
    else:
        items = [tables] if isinstance(tables, (int, str)) else tables
        try:
            items = list(items)
        except TypeError:
            _fail("published_rows", "tables", tables,
                  f"None, a table or an iterable of tables from {list(TABLES)} (or their numbers)")
        wanted = {_table_name(item) for item in items}
    # Fresh metric dicts: a caller editing one cannot change the cached rows.
    return [dataclasses.replace(row, metrics=dict(row.metrics))
            for row in _packaged_rows() if row.table in wanted]
