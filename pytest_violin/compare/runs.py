"""Load a RUN to compare: a report folder / ``results.json``, a baseline file, or ``dir:``.

Everything read here comes from outside: JSON files are size-capped before they are parsed, every error names
the file, and a ``dir:`` folder is read only at the paths :func:`pytest_violin.models.directory.output_path`
gives for the suite's sample ids (never outside the folder).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError, ViolinError

if TYPE_CHECKING:
    from .model import Run

__all__ = ["MAX_JSON_BYTES", "MAX_SAMPLES", "load_run", "run_from_results"]

#: Largest results.json / baseline accepted (a full 7,745-sample run is ~10 MB).
MAX_JSON_BYTES = 256 * 1024 * 1024
#: Most sample records accepted from one run.
MAX_SAMPLES = 1_000_000

_RESULTS_FORMAT = "pytest-violin-results"
_BASELINE_FORMAT = "pytest-violin-baseline"
_LABEL_MAX = 80


def load_run(spec: str, *, label: str | None = None, suite=None, progress=None) -> Run:
    """Load one run to compare.

    ``spec`` is a report folder (holding ``results.json``), a ``results.json``, a baseline file
    (``--violin-save-baseline``), or ``dir:FOLDER`` of images saved by ``--violin-save-outputs``, scored here
    with ``Sample.score``: that needs ``suite``, a suite name or manifest path (``load_suite``) or the loaded
    samples, and shows ``progress`` on stderr (True) or on a stream. ``label`` is shown in the tables (default
    the adapter recorded in the run; for ``dir:`` the folder name).

    An unknown or unreadable spec, a file too large or a document of another format is an
    :class:`~pytest_violin.errors.InvalidArgumentError` naming the file; a baseline that does not validate a
    :class:`~pytest_violin.errors.BaselineError`.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgumentError(f"RUN must be a non-empty path or 'dir:FOLDER', got {spec!r}")
    if spec.startswith("dir:"):
        return _load_dir(spec, label=label, suite=suite, progress=progress)
    path = Path(spec)
    if path.is_dir():
        inner = path / "results.json"
        if not inner.is_file():
            raise InvalidArgumentError(
                f"{spec}: folder has no results.json; a RUN is a --violin-report folder, a "
                f"results.json, a baseline file, or 'dir:FOLDER' of saved images with --suite")
        path = inner
    if not path.is_file():
        raise InvalidArgumentError(f"{spec}: no such file or folder; a RUN is a --violin-report "
                                   f"folder, a results.json, a baseline file, or 'dir:FOLDER'")
    doc = _read_json(path)
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if fmt == _RESULTS_FORMAT:
        return _from_file(path, doc, label, "results")
    if fmt == _BASELINE_FORMAT:
        from ..gating.baseline import validate_baseline

        validate_baseline(doc, source=str(path))
        return _from_file(path, doc, label, "baseline")
    raise InvalidArgumentError(f"{path}: format {str(fmt)[:60]!r} is neither {_RESULTS_FORMAT!r} "
                               f"(results.json of --violin-report) nor {_BASELINE_FORMAT!r} "
                               f"(--violin-save-baseline)")


def _read_json(path: Path):
    """Parse ``path`` after checking its size (a hostile file cannot exhaust memory).

    Read with :func:`pytest_violin._fs.read_option_bytes` (a regular file only, refused by its size before it
    is read); the bytes are dropped once decoded, so a 250 MB results.json is held once as text while it is
    parsed.
    """
    from .._fs import json_from_bytes, read_option_bytes

    return json_from_bytes(read_option_bytes(path, what="RUN", limit=MAX_JSON_BYTES), path)


def _text(value, limit: int = 200) -> str | None:
    if value is None:
        return None
    return str(value)[:limit]


#: Metric values and names kept per record, at most.
_MAX_METRICS = 64
_METRIC_NAME_MAX = 40
_PROMPT_MAX = 4000
_ERROR_MAX = 500


def _metrics(path, sid, raw) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidArgumentError(f"{path}: sample {sid!r}: 'metrics' must be an object, "
                                   f"got {type(raw).__name__}")
    # fast path (every record pytest-violin writes): a small dict of finite floats under short names is kept
    # as parsed; ``v - v == 0.0`` is False for inf and NaN
    if type(raw) is dict and len(raw) <= _MAX_METRICS:
        for k, v in raw.items():
            if type(v) is not float or v - v != 0.0 or len(k) > _METRIC_NAME_MAX:
                break
        else:
            return raw
    out = {}
    for k, v in itertools.islice(raw.items(), _MAX_METRICS):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            continue  # None/NaN: not scored
        out[str(k)[:_METRIC_NAME_MAX]] = float(v)
    return out


def _failed(raw, interned: dict) -> tuple:
    """The metric names over their limit, as a shared tuple (most records hold the same few)."""
    if not raw or type(raw) is not list:
        return ()
    key = tuple(raw[:_MAX_METRICS])
    try:
        return interned[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable name (a list, an object): shown as text
        key = tuple(str(k) for k in key)
    names = tuple(str(k)[:_METRIC_NAME_MAX] for k in key)
    return interned.setdefault(key, interned.setdefault(names, names))


def _clean_thumbnails(thumbs) -> dict:
    """The ``expected``, ``generated`` and ``diff`` thumbnails of ``thumbs`` that are image data URIs."""
    from ..report.text import is_image_data_uri

    if not isinstance(thumbs, Mapping):
        return {}
    return {k: v for k, v in thumbs.items() if k in ("expected", "generated", "diff") and is_image_data_uri(v)}


def _short(value, limit: int, interned: dict) -> str:
    """``value`` as text of at most ``limit`` characters, one shared object per distinct value."""
    text = (value if type(value) is str else str(value))[:limit]
    return interned.setdefault(text, text)


def _record(path, raw, id_key: str, suite: str, interned: dict) -> tuple[str, dict]:
    """The fields a comparison uses, checked and cut (``interned`` shares repeated strings).

    Only these are kept (a results.json record also holds limits, repeats, timings...): 1,000,000 records must
    fit in memory. The common case (what pytest-violin writes) takes the fast paths: type checks, no copies.
    """
    from ..diagnosis.summary import slim_diagnosis
    from ..verdict import Outcome

    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise InvalidArgumentError(f"{path}: every sample must be an object, got "
                                   f"{type(raw).__name__}")
    get = raw.get
    sid = get(id_key)
    if sid is None:
        sid = get("id")
    if not isinstance(sid, str) or not sid or len(sid) > 400:
        raise InvalidArgumentError(f"{path}: a sample has no usable {id_key!r} (got "
                                   f"{str(sid)[:60]!r}); expected a sample id string")
    task = get("task")
    if not isinstance(task, str) or not task:
        raise InvalidArgumentError(f"{path}: sample {sid!r}: 'task' must be a string")
    own_suite, variation, outcome = get("suite"), get("variation"), get("outcome")
    # five keys in the common case (a passed sample): the smallest dict CPython makes; the sample id is the
    # key of Run.records, and an empty "failed" is left out
    rec = {"task": _short(task, 40, interned),
           "suite": suite if own_suite is None or own_suite == "" else _short(own_suite, 200, interned),
           "variation": None if variation is None else _short(variation, 60, interned),
           "outcome": _short(outcome, 20, interned) if outcome else
                      (Outcome.FAILED.value if get("failed") else Outcome.PASSED.value),
           "metrics": _metrics(path, sid, get("metrics"))}
    failed = _failed(get("failed"), interned)
    if failed:
        rec["failed"] = failed
    prompt, error, extra = get("prompt"), get("error"), get("extra")
    if prompt is not None:
        rec["prompt"] = str(prompt)[:_PROMPT_MAX]
    if error is not None:
        rec["error"] = str(error)[:_ERROR_MAX]
    if extra:
        clean = _clean_thumbnails(extra.get("thumbnails") if isinstance(extra, Mapping) else None)
        kept = {"thumbnails": clean} if clean else None
        # the first finding of a diagnosis, for the failure-mode table (compare/modes.py)
        found = slim_diagnosis(extra.get("diagnosis"), interned) if isinstance(extra, Mapping) else None
        if found is not None:  # without thumbnails one shared {"diagnosis": ...} per distinct one
            kept = {**kept, "diagnosis": found} if kept else interned.setdefault(
                (slim_diagnosis, id(found)), {"diagnosis": found})
        if kept is not None:
            rec["extra"] = kept
    return sid, rec


def _records(path, samples, id_key, suite) -> tuple:
    """``(sample id -> record, the definition digests or None)`` of a run's sample list."""
    if not isinstance(samples, list):
        raise InvalidArgumentError(f"{path}: 'samples' must be a list")
    if len(samples) > MAX_SAMPLES:
        raise InvalidArgumentError(f"{path}: {len(samples):,} samples; at most {MAX_SAMPLES:,} "
                                   f"accepted")
    interned: dict = {}
    out: dict = {}
    digests: bytearray | None = bytearray()
    for i, raw in enumerate(samples):
        sid, rec = _record(path, raw, id_key, suite, interned)
        if sid in out:
            raise InvalidArgumentError(f"{path}: sample id {sid!r} occurs more than once")
        out[sid] = rec
        if digests is not None:
            digests = _add_digest(digests, raw)
        samples[i] = None  # the parsed record is not needed any more: memory stays flat
    return out, (bytes(digests) if digests is not None else None)


def _add_digest(digests: bytearray, raw) -> bytearray | None:
    """``digests`` with the record's definition digest (16 bytes) added; None when it has none.

    A baseline keeps it as ``definition``, a results.json as ``extra.definition``
    (:func:`pytest_violin.gating.records.sample_definition`, 32 hex digits).
    """
    extra = raw.get("extra")
    digest = raw.get("definition") or (extra.get("definition") if isinstance(extra, Mapping) else None)
    if type(digest) is not str or len(digest) != 32:
        return None
    try:
        digests += bytes.fromhex(digest)
    except ValueError:
        return None
    return digests


def _label(label, meta, fallback) -> str:
    if label is not None:
        if not str(label).strip():
            raise InvalidArgumentError(f"--label must not be empty, got {label!r}")
        return str(label)[:_LABEL_MAX]
    for key in ("label", "adapter"):  # evaluate(label=...) records its run's name
        named = meta.get(key)
        if isinstance(named, str) and named.strip() and named != "unknown":
            return named[:_LABEL_MAX]
    return str(fallback)[:_LABEL_MAX]


def _meta(path, doc) -> dict:
    meta = doc.get("metadata") or {}
    if not isinstance(meta, Mapping):
        raise InvalidArgumentError(f"{path}: 'metadata' must be an object")
    return {str(k)[:60]: v for k, v in list(meta.items())[:200]}


def _from_file(path: Path, doc, label, kind: str) -> Run:
    """A results.json (``kind="results"``, with its thumbnails file) or a baseline as a Run."""
    from ..report.json_report import THUMBNAILS_FILE

    results = kind == "results"
    fallback = (path.parent.name or path.name) if results else path.stem
    return _run(path, doc, label, kind, fallback, path.parent / THUMBNAILS_FILE if results else None)


def run_from_results(doc, *, label: str, source: str) -> Run:
    """A :class:`Run` of a results.json document held in memory (an evaluation not saved yet).

    The records are read as a file's are (the same fields, cut the same way); ``doc`` is consumed (its
    sample list is emptied as it is read).
    """
    return _run(source, doc, label, "results", source, None)


def _run(source, doc, label, kind: str, fallback: str, thumbnails: Path | None) -> Run:
    from .model import Run

    meta = _meta(source, doc)
    suite = _text(meta.get("suite")) or ""
    records, digests = _records(source, doc.get("samples"), "sample_id" if kind == "results" else "id", suite)
    if thumbnails is not None:
        _attach_thumbnails(thumbnails, records)
    return Run(label=_label(label, meta, fallback), source=str(source), kind=kind, metadata=meta,
               records=records, digests=digests)


def _attach_thumbnails(path: Path, records: dict) -> None:
    """Give the records the thumbnails ``--violin-report`` wrote beside results.json (for the gallery).

    Optional and bounded: a missing, oversized or malformed file leaves the records as they are; only
    ``data:image/png;base64`` strings are taken.
    """
    if not path.is_file():
        return
    try:
        doc = _read_json(path)
    except InvalidArgumentError:
        return
    thumbs = doc.get("thumbnails") if isinstance(doc, dict) else None
    if not isinstance(thumbs, dict):
        return
    for sid, uris in thumbs.items():
        rec = records.get(sid)
        clean = _clean_thumbnails(uris) if rec is not None and isinstance(uris, dict) else None
        if clean:  # a new dict: a record's extra may be shared with others (_record)
            extra = rec.get("extra")
            rec["extra"] = {**(extra if isinstance(extra, dict) else {}), "thumbnails": clean}


# --------------------------------------------------------------------------- dir:


def _load_dir(spec: str, *, label, suite, progress) -> Run:
    from .model import Run

    root = Path(spec[4:])
    if not spec[4:] or not root.is_dir():
        raise InvalidArgumentError(f"{spec}: {str(root)!r} is not a folder of saved images "
                                   f"(the layout of --violin-save-outputs)")
    if suite is None:
        raise InvalidArgumentError(f"{spec}: a 'dir:' run needs --suite (the suite its images "
                                   f"were generated for) to be scored")
    if isinstance(suite, str):
        from ..suite import load_suite

        suite_name, samples = suite, load_suite(suite)
    else:
        samples = list(suite)
        suite_name = samples[0].suite if samples else ""
    records = _score_dir(root, samples, progress)
    from .. import __version__
    from ..gating.records import sample_digest, suite_fingerprint

    held = {s.id: sample_digest(s.to_manifest()) for s in samples if s.id in records}
    meta = {"suite": str(suite_name), "profile": "violin", "adapter": spec,
            "package_version": __version__, "fingerprint": suite_fingerprint(held.items()),
            "samples": len(records)}
    return Run(label=_label(label, {}, root.name or spec), source=spec, kind="dir",
               metadata=meta, records=records, digests=b"".join(bytes.fromhex(held[sid]) for sid in records))


def _score_dir(root: Path, samples, progress) -> dict:
    """Score every saved image of ``samples`` under ``root``; samples without one are left out."""
    from ..diagnosis import diagnose_failure
    from ..diagnosis.summary import slim_diagnosis
    from ..models.directory import saved_image
    from ..thresholds import build_limits, limits_for_task
    from ..verdict import Outcome, evaluate

    limits = build_limits()
    resolved = root.resolve()
    slim: dict = {}
    bar = None
    if progress:
        from ..suite.manifest import ProgressBar

        bar = ProgressBar(len(samples), stream=None if progress is True else progress, label="score")
    records: dict = {}
    try:
        for sample in samples:
            path = saved_image(root, sample.id)  # also the authors' id_000123.png layout
            if bar is not None:
                bar.update()
            if not path.is_file() or not path.resolve().is_relative_to(resolved):
                continue
            base = {"id": sample.id, "suite": sample.suite, "task": sample.task,
                    "variation": sample.variation, "prompt": sample.prompt}
            try:
                metrics = sample.score(path)  # profile violin: read as cv2.imread reads it
            except ViolinError as exc:
                records[sample.id] = {**base, "outcome": Outcome.ERROR.value, "metrics": {},
                                      "error": f"{path}: {exc}"[:300], "failed": []}
                continue
            rows = evaluate(metrics, limits_for_task(limits, sample.task, metrics.keys()))
            failed = [r.metric for r in rows if not r.ok]
            values = {k: float(v) for k, v in metrics.items()}
            values["mean"] = float(metrics.mean)
            records[sample.id] = {**base, "outcome": (Outcome.FAILED if failed else Outcome.PASSED).value,
                                  "metrics": values, "failed": failed, "error": None}
            if failed:  # diagnosed as the plugin diagnoses a failing sample (about one more score)
                found, _ = diagnose_failure(sample, [path], [values])
                if found is not None:
                    records[sample.id]["extra"] = {"diagnosis": slim_diagnosis(found.to_json(), slim)}
    finally:
        if bar is not None:
            bar.close()
    return records

