"""The baseline file: build, validate, write and read it."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from .._fs import atomic_write
from ..errors import BaselineError
from ..results import Outcome, _jsonable, aggregate_records, as_result
from .records import suite_fingerprint

__all__ = ["BASELINE_FORMAT", "SCHEMA_VERSION", "build_baseline", "dataset_change",
           "dumps_baseline", "read_baseline", "validate_baseline", "write_baseline"]

BASELINE_FORMAT = "pytest-violin-baseline"
SCHEMA_VERSION = 1

#: Largest baseline file read, in bytes (one of the full 7,745-sample suite is ~3 MB: 384 B a sample).
MAX_BASELINE_BYTES = 64 * 2**20

_TOP_FIELDS = ("format", "schema_version", "metadata", "aggregates", "samples")
_META_FIELDS = {"suite": str, "fingerprint": str, "profile": str, "seed": int, "package_version": str,
                "adapter": str, "created": str}

def build_baseline(results: Iterable, *, suite: str, profile: str, seed: int, adapter: str,
                   fingerprint: str | None = None, package_version: str | None = None,
                   created: str | None = None, extra_metadata: Mapping | None = None) -> dict:
    """The baseline document (docs/gating.md) of a run's ``results`` (results or records).

    ``adapter`` is the adapter's identity (free of secrets); ``fingerprint`` defaults to
    :func:`suite_fingerprint` of the results' definitions; ``created`` (now by default) is the only field that
    differs between two identical runs; ``extra_metadata`` adds JSON-able facts (``repeats``, ``pass_rule``,
    ...). Samples are sorted by id, so the document does not depend on how the run was distributed.
    """
    samples = sorted((as_result(r).baseline_entry() for r in results), key=lambda s: s["id"])
    ids = [s["id"] for s in samples]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[0]
        raise BaselineError(f"sample id {dup!r} occurs more than once in the results")
    if fingerprint is None:
        fingerprint = suite_fingerprint((s["id"], s["definition"] or "") for s in samples)
    if package_version is None:
        from .. import __version__ as package_version
    if created is None:
        created = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    meta = {"suite": str(suite), "fingerprint": str(fingerprint), "profile": str(profile), "seed": int(seed),
            "package_version": str(package_version), "adapter": str(adapter), "created": str(created)}
    for k, v in (extra_metadata or {}).items():
        meta.setdefault(str(k), v)
    return {"format": BASELINE_FORMAT, "schema_version": SCHEMA_VERSION, "metadata": meta,
            "aggregates": aggregate_records(samples), "samples": samples}


def _dataset_identity(meta: Mapping):
    """``(kind, value)`` naming the data of a run: the official data's revision or sha256."""
    data = meta.get("dataset")
    if not isinstance(data, Mapping):
        return None
    for key in ("sha256", "revision", "key"):  # a hub snapshot has its parquet's sha256 too
        if data.get(key):
            return key, str(data[key]), data.get("rows")
    return None


def dataset_change(old_meta: Mapping, new_meta: Mapping) -> str | None:
    """One line when two runs' metadata name different data (official data), else None.

    A baseline of the built-in suite against a run on the official data (or the other way round), or two
    official runs on other revisions / files, are named, never compared silently.
    """
    old, new = _dataset_identity(old_meta), _dataset_identity(new_meta)
    if old == new:
        return None

    def name(ident, meta):
        if ident is None:
            return f"suite {meta.get('suite', '?')!r} (not the official data)"
        kind, value, rows = ident
        return f"official data {kind} {value[:16]} ({rows} rows)"

    return (f"baseline and run are on different data: baseline {name(old, old_meta)}, run "
            f"{name(new, new_meta)}; their per-sample comparison covers only the ids both hold")


def dumps_baseline(baseline: Mapping) -> str:
    """Serialise a baseline deterministically (sorted keys, one sample per line)."""
    head = {k: baseline[k] for k in _TOP_FIELDS if k != "samples"}
    head_text = json.dumps(head, sort_keys=True, indent=1, default=_jsonable, allow_nan=False)
    lines = [json.dumps(s, sort_keys=True, default=_jsonable, allow_nan=False)
             for s in baseline.get("samples", [])]
    body = ",\n  ".join(lines)
    # Splice the samples array in by hand: readable diffs, one sample per line.
    return head_text[:-2] + ',\n "samples": [\n  ' + body + "\n ]\n}\n" if lines else (
        head_text[:-2] + ',\n "samples": []\n}\n')


def write_baseline(path, baseline: Mapping) -> Path:
    """Validate ``baseline`` and write it atomically (parents created); :class:`BaselineError`
    when it is invalid or cannot be written."""
    path = Path(path)
    validate_baseline(baseline, source=str(path))
    try:
        text = dumps_baseline(baseline)
    except ValueError as exc:  # NaN / infinity
        raise BaselineError(f"{path}: baseline contains a non-finite number ({exc})") from exc
    try:
        atomic_write(path, text, fsync=True)
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write baseline ({exc})") from exc
    return path


def read_baseline(path) -> dict:
    """Read and validate a baseline file; :class:`BaselineError` names the file and the field
    (missing file, invalid JSON, unknown format or schema version, a field of the wrong type)."""
    from .._fs import read_option_json

    path = Path(path)
    if not os.path.lexists(path):
        raise BaselineError(f"{path}: baseline file does not exist "
                            "(write one with --violin-save-baseline=PATH)")
    # a regular file of at most MAX_BASELINE_BYTES, nested at most 64 deep: a FIFO, /dev/zero or a 2 GB file
    # is refused with one line, never read
    doc = read_option_json(path, what="baseline", limit=MAX_BASELINE_BYTES, error=BaselineError)
    validate_baseline(doc, source=str(path))
    return doc


def _bad(source, fieldname, problem) -> BaselineError:
    return BaselineError(f"{source}: field {fieldname!r}: {problem}")


def validate_baseline(doc, *, source: str = "<baseline>") -> None:
    """Check a baseline document; raise :class:`BaselineError` naming ``source`` and the field."""
    if not isinstance(doc, Mapping):
        raise BaselineError(f"{source}: expected a JSON object, got {type(doc).__name__}")
    if doc.get("format") != BASELINE_FORMAT:
        raise _bad(source, "format", f"expected {BASELINE_FORMAT!r}, got {doc.get('format')!r} "
                   "(is this a pytest-violin baseline file?)")
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise _bad(source, "schema_version", f"unsupported version {version!r}; this pytest-violin "
                   f"reads version {SCHEMA_VERSION} (re-create the baseline with --violin-save-baseline)")
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping):
        raise _bad(source, "metadata", "expected an object")
    for name, typ in _META_FIELDS.items():
        v = meta.get(name)
        if not isinstance(v, typ) or isinstance(v, bool):
            raise _bad(source, f"metadata.{name}", f"expected {typ.__name__}, got {v!r}")
    if not isinstance(doc.get("aggregates"), Mapping):
        raise _bad(source, "aggregates", "expected an object")
    samples = doc.get("samples")
    if not isinstance(samples, list):
        raise _bad(source, "samples", "expected a list")
    seen: set = set()
    for i, s in enumerate(samples):
        _check_sample(source, f"samples[{i}]", s, seen)


def _check_sample(source, where, s, seen: set) -> None:
    if not isinstance(s, Mapping):
        raise _bad(source, where, "expected an object")
    sid = s.get("id")
    if not isinstance(sid, str) or not sid:
        raise _bad(source, f"{where}.id", f"expected a non-empty string, got {sid!r}")
    if sid in seen:
        raise _bad(source, f"{where}.id", f"duplicate sample id {sid!r}")
    seen.add(sid)
    if not isinstance(s.get("task"), str):
        raise _bad(source, f"{where}.task", f"expected a string, got {s.get('task')!r}")
    if s.get("outcome") not in _OUTCOMES:
        raise _bad(source, f"{where}.outcome",
                   f"expected one of {', '.join(map(repr, _OUTCOMES))}, got {s.get('outcome')!r}")
    metrics = s.get("metrics")
    if not isinstance(metrics, Mapping):
        raise _bad(source, f"{where}.metrics", "expected an object of metric name -> number")
    _check_numbers(source, f"{where}.metrics", metrics)
    reps = s.get("repeats", [])
    if not isinstance(reps, list):
        raise _bad(source, f"{where}.repeats", "expected a list")
    for j, rep in enumerate(reps):
        if not isinstance(rep, Mapping):
            raise _bad(source, f"{where}.repeats[{j}]", "expected an object")
        _check_numbers(source, f"{where}.repeats[{j}]", rep)


_OUTCOMES = tuple(o.value for o in Outcome)


def _check_numbers(source, where, values: Mapping) -> None:
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _bad(source, f"{where}.{k}", f"expected a number, got {type(v).__name__} {v!r}")
        if not math.isfinite(float(v)):
            raise _bad(source, f"{where}.{k}", f"expected a finite number, got {v!r}")
