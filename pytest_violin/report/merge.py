"""Merge the report folders of a sharded run (``--violin-shard=K/N``) into one run.

``python -m pytest_violin merge RUN... --output DIR`` reads each shard's
``results.json`` (and ``thumbnails.json`` when present) and writes the
``results.json``, ``report.html``, ``summary.md`` and ``thumbnails.json``
one unsharded run would have written (and its baseline with
``--save-baseline``). It refuses, naming the offending folder and value:

* a folder that is not a shard's report (no ``shard`` record in its
  ``results.json``: it ran without ``--violin-shard``);
* shards of different runs: another suite, selection (``--violin-tasks``,
  ``--violin-limit``, named samples), seed, profile, repeats, pass rule,
  adapter, official data or package version, or other limits for a task
  (``--violin-threshold``);
* a missing or duplicated shard, or shards of different N;
* a sample present in two shards.

Every file read comes from outside (a CI artifact): each must be a regular
file (not a link) directly inside its folder, is refused by its size before
it is read, and every record is checked before it is used.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from .._fs import json_from_bytes
from ..errors import InvalidArgumentError
from ..gating import build_baseline
from ..gating.policy import OUTCOMES
from ..suite.shard import MAX_SHARDS
from .json_report import RESULTS_FORMAT, RESULTS_SCHEMA_VERSION, THUMBNAILS_FILE
from .text import is_image_data_uri, printable

__all__ = ["MAX_RESULTS_BYTES", "MAX_THUMBNAILS_BYTES", "Merged", "ShardRun", "load_results",
           "load_shard", "merge_shards", "run_baseline", "with_thumbnails", "write_merged", "write_reports"]

#: Largest results.json read (a full 7,745-sample run writes ~10 MB).
MAX_RESULTS_BYTES = 256 * 2**20
#: Largest thumbnails.json read (the plugin writes at most ~35 MB of data URIs).
MAX_THUMBNAILS_BYTES = 64 * 2**20
#: Most sample records accepted from one file.
MAX_SAMPLES = 1_000_000
#: Largest sum of the shards' results.json files (the full suite's 4 shards: ~40 MB).
MAX_TOTAL_BYTES = 1024 * 2**20
#: Thumbnails read over all shards, at most (the merged report embeds 35 MB): the shards past
#: it are merged without theirs.
MAX_TOTAL_THUMBNAILS = 160 * 2**20

#: Run facts that every shard of one run shares (results.json ``metadata``).
SHARED_FACTS = ("suite", "profile", "seed", "repeats", "pass_rule", "adapter", "package_version",
                "dataset", "price")
#: What each fact is called in messages (the option that sets it).
_FACT_WORDS = {"suite": "suite (--violin-suite)", "profile": "profile (--violin-profile)",
               "seed": "seed (--violin-seed)", "repeats": "repeats (--violin-repeats)",
               "pass_rule": "pass rule (--violin-pass-rule)", "adapter": "model (--violin-model)",
               "package_version": "pytest-violin version", "dataset": "official data",
               "price": "price (--violin-price)"}
_SHOWN = 80
_PROMPT_MAX = 4000
_ERROR_MAX = 2000
_ID_MAX = 400


def _show(value) -> str:
    """A value for a message: a string quoted, anything else as JSON; cut and made printable."""
    if isinstance(value, str):
        return repr(printable(value if len(value) <= _SHOWN else value[:_SHOWN] + "..."))
    text = printable(json.dumps(value, sort_keys=True, default=str))
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _where(spec) -> str:
    """A path for a message: its end (what tells shards apart) when it is long."""
    text = printable(str(spec))
    return text if len(text) <= _SHOWN else "..." + text[-_SHOWN:]


# --------------------------------------------------------------------------- reading


def _read_file(path: Path, what: str, limit: int) -> bytes:
    """The bytes of ``path``: a regular file, not a link, at most ``limit`` bytes."""
    from .._fs import read_option_bytes

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise InvalidArgumentError(f"{what}: {str(path)!r} does not exist") from None
    except OSError as exc:
        raise InvalidArgumentError(f"{what}: {str(path)!r} cannot be looked at "
                                   f"({exc.strerror or exc})") from None
    if stat.S_ISLNK(info.st_mode):
        raise InvalidArgumentError(f"{what}: {str(path)!r} is a symbolic link; accepted: a regular "
                                   f"file inside the report folder")
    return read_option_bytes(path, what=what, limit=limit)


def _results_path(spec) -> tuple[Path, Path]:
    """``(folder, results.json)`` of a report folder or of a results.json path."""
    path = Path(spec)
    if path.is_dir():
        return path, path / "results.json"
    if path.name == "results.json" or path.is_file():
        return path.parent, path
    raise InvalidArgumentError(f"{str(spec)!r}: no such report folder or results.json; accepted: a "
                               f"--violin-report folder (or its results.json)")


def _number(value) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(float(value)))


def _check_record(path, raw) -> dict:
    """One sample record, its fields checked and its long texts cut."""
    if not isinstance(raw, dict):
        raise InvalidArgumentError(f"{path}: every sample must be an object, got {type(raw).__name__}")
    sid = raw.get("sample_id", raw.get("id"))
    if not isinstance(sid, str) or not sid or len(sid) > _ID_MAX:
        raise InvalidArgumentError(f"{path}: a sample has no usable 'sample_id' (got {_show(sid)}); "
                                   f"accepted: a string of at most {_ID_MAX} characters")
    task, variation = raw.get("task"), raw.get("variation")
    if not isinstance(task, str) or not task or len(task) > 100:
        raise InvalidArgumentError(f"{path}: sample {_show(sid)}: 'task' {_show(task)} is not a task name")
    if variation is not None and (not isinstance(variation, str) or len(variation) > 100):
        raise InvalidArgumentError(f"{path}: sample {_show(sid)}: 'variation' {_show(variation)} is "
                                   f"not a variation name")
    outcome = raw.get("outcome")
    if outcome not in OUTCOMES:
        raise InvalidArgumentError(f"{path}: sample {_show(sid)}: outcome {_show(outcome)} is not one "
                                   f"of {', '.join(OUTCOMES)}")
    _check_numbers(path, sid, raw)
    if raw.get("extra") is not None and not isinstance(raw.get("extra"), dict):
        raise InvalidArgumentError(f"{path}: sample {_show(sid)}: 'extra' must be an object")
    index = raw.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise InvalidArgumentError(f"{path}: sample {_show(sid)}: 'index' {_show(index)} is not an integer")
    rec = dict(raw)
    rec["sample_id"] = sid
    rec.pop("id", None)
    for key, cap in (("prompt", _PROMPT_MAX), ("error", _ERROR_MAX)):
        if rec.get(key) is not None:
            rec[key] = str(rec[key])[:cap]
    return rec


def _metric_map(values) -> bool:
    return isinstance(values, dict) and len(values) <= 64 and all(
        isinstance(k, str) and len(k) <= 40 and (v is None or _number(v)) for k, v in values.items())


def _check_numbers(path, sid, raw) -> None:
    """A record's metrics, limits and repeats map metric names to numbers; its lists are lists."""
    for key in ("metrics", "limits"):
        if raw.get(key) is not None and not _metric_map(raw.get(key)):
            raise InvalidArgumentError(f"{path}: sample {_show(sid)}: {key!r} must map metric names to "
                                       f"numbers")
    for key in ("repeats", "failed"):
        if raw.get(key) is not None and not isinstance(raw.get(key), list):
            raise InvalidArgumentError(f"{path}: sample {_show(sid)}: {key!r} must be a list")
    if not all(_metric_map(rep) for rep in raw.get("repeats") or ()):
        raise InvalidArgumentError(f"{path}: sample {_show(sid)}: a repeat must map metric names to numbers")


def load_results(spec, *, what: str = "RUN") -> tuple[Path, dict]:
    """``(folder, results.json document)`` of a report folder, every record checked.

    Raises
    ------
    InvalidArgumentError
        A missing, linked, oversized or unreadable file, a document of another
        format, a malformed record; the message names the file.
    """
    folder, path = _results_path(spec)
    doc = json_from_bytes(_read_file(path, what, MAX_RESULTS_BYTES), path)
    if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise InvalidArgumentError(f"{path}: format {_show(found)} is not {RESULTS_FORMAT!r} (the "
                                   f"results.json of --violin-report)")
    if doc.get("schema_version") != RESULTS_SCHEMA_VERSION:
        raise InvalidArgumentError(f"{path}: schema_version {_show(doc.get('schema_version'))} is not "
                                   f"{RESULTS_SCHEMA_VERSION}; accepted: a results.json of this version "
                                   f"of pytest-violin")
    if not isinstance(doc.get("metadata"), dict):
        raise InvalidArgumentError(f"{path}: 'metadata' must be an object")
    samples = doc.get("samples")
    if not isinstance(samples, list) or len(samples) > MAX_SAMPLES:
        raise InvalidArgumentError(f"{path}: 'samples' must be a list of at most {MAX_SAMPLES:,} records")
    doc["samples"] = [_check_record(path, raw) for raw in samples]
    return folder, doc


class ShardRun:
    """One shard's report: where it is, what it is, its records and thumbnails."""

    def __init__(self, spec, folder: Path, meta: dict, records: list, thumbnails: dict):
        self.spec = str(spec)
        self.folder = folder
        self.meta = meta
        self.records = records
        self.thumbnails = thumbnails
        shard = meta["shard"]
        self.index, self.total = shard["index"], shard["total"]

    @property
    def name(self) -> str:
        """``shard 2/4 (reports/shard-2)`` for messages."""
        return f"shard {self.index}/{self.total} ({_where(self.spec)})"


def _check_shard_record(path, shard) -> dict:
    ok = (isinstance(shard, dict) and all(_number(shard.get(k)) and isinstance(shard.get(k), int)
                                          for k in ("index", "total", "selected"))
          and isinstance(shard.get("digest"), str) and len(shard["digest"]) <= 100)
    if not ok:
        raise InvalidArgumentError(f"{path}: its 'shard' record {_show(shard)} is malformed; accepted: "
                                   f"index, total, selected (integers) and digest, as --violin-shard "
                                   f"writes them")
    # the total sizes the list of missing parts: checked here, before anything is built from it
    if not 1 <= shard["index"] <= shard["total"] <= MAX_SHARDS:
        raise InvalidArgumentError(f"{path}: its 'shard' record is malformed: part {_show(shard['index'])} "
                                   f"of {_show(shard['total'])} is out of range; accepted: part K of N "
                                   f"with integers 1 <= K <= N <= {MAX_SHARDS}, as --violin-shard "
                                   f"writes them")
    return shard


def _load_thumbnails(folder: Path) -> dict:
    path = folder / THUMBNAILS_FILE
    if not os.path.lexists(path):
        return {}
    doc = json_from_bytes(_read_file(path, "thumbnails", MAX_THUMBNAILS_BYTES), path)
    thumbs = doc.get("thumbnails") if isinstance(doc, dict) else None
    if not isinstance(thumbs, dict):
        raise InvalidArgumentError(f"{path}: 'thumbnails' must be an object")
    out = {}
    for sid, uris in thumbs.items():
        if isinstance(uris, dict):
            clean = {k: v for k, v in uris.items()
                     if k in ("expected", "generated", "diff") and is_image_data_uri(v)}
            if clean:
                out[str(sid)] = clean
    return out


def load_shard(spec, *, thumbnails: bool = True) -> ShardRun:
    """One shard's report folder (or results.json), checked (module docstring); ``thumbnails``:
    read its thumbnails.json too."""
    folder, doc = load_results(spec)
    meta = doc["metadata"]
    if "shard" not in meta:
        raise InvalidArgumentError(f"{_where(spec)}: its results.json has no shard record: that "
                                   f"run was not split (--violin-shard=K/N); accepted: the --violin-report "
                                   f"folders of the N shards of one run")
    meta["shard"] = _check_shard_record(folder / "results.json", meta["shard"])
    return ShardRun(spec, folder, meta, doc["samples"], _load_thumbnails(folder) if thumbnails else {})


# --------------------------------------------------------------------------- checking and merging


def _size(path: Path) -> int:
    """Bytes of ``path`` as ``lstat`` says (0 when it is missing: the reader names the problem)."""
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _check_same_run(shards: list) -> None:
    first = shards[0]
    for other in shards[1:]:
        for fact in SHARED_FACTS:
            a, b = first.meta.get(fact), other.meta.get(fact)
            if a != b:
                raise InvalidArgumentError(
                    f"{other.name} is not a part of the same run as {first.name}: its "
                    f"{_FACT_WORDS[fact]} is {_show(b)}, not {_show(a)}; accepted: the shards of one "
                    f"run, made with the same options and version")
        for key, words in (("total", "split into"), ("selected", "selected from"), ("digest", "selected")):
            a, b = first.meta["shard"][key], other.meta["shard"][key]
            if a != b:
                what = (f"is one of {b} parts, not {a}" if key == "total" else
                        f"is a part of a selection of {b} samples, not {a}" if key == "selected" else
                        "is a part of another selection of samples (--violin-tasks, --violin-limit, "
                        "--violin-suite or named samples differ)")
                raise InvalidArgumentError(f"{other.name} {what} ({first.name}); accepted: the shards "
                                           f"of one run")
    limits: dict = {}
    for shard in shards:
        for rec in shard.records:
            own = rec.get("limits")
            if not own:
                continue
            seen = limits.setdefault(rec["task"], (shard, own))
            if seen[1] != own:
                diff = sorted(k for k in set(own) | set(seen[1]) if own.get(k) != seen[1].get(k))[:3]
                raise InvalidArgumentError(
                    f"{shard.name} scores task {_show(rec['task'])} with other limits than "
                    f"{seen[0].name} ({', '.join(f'{k} {seen[1].get(k)} vs {own.get(k)}' for k in diff)}): "
                    f"another --violin-threshold or --violin-profile; accepted: shards scored alike")


def _check_parts(shards: list) -> None:
    total = shards[0].total
    by_index: dict = {}
    for shard in shards:
        if shard.index in by_index:
            raise InvalidArgumentError(f"shard {shard.index}/{total} is given twice: "
                                       f"{_where(by_index[shard.index].spec)} and "
                                       f"{_where(shard.spec)}; accepted: each of the "
                                       f"{total} shards once")
        by_index[shard.index] = shard
    missing = [k for k in range(1, total + 1) if k not in by_index]
    if missing:
        given = ", ".join(f"{k}/{total}" for k in sorted(by_index))
        raise InvalidArgumentError(
            f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{k}/{total}' for k in missing[:10])}"
            f"{' ...' if len(missing) > 10 else ''} "
            f"{'are' if len(missing) > 1 else 'is'} missing (given: {given}); accepted: the report "
            f"folders of all {total} shards")


class Merged:
    """The merged run: its records (in the unsharded run's order), metadata and baseline."""

    def __init__(self, records: list, metadata: dict, baseline: dict, notes: list):
        self.records = records
        self.metadata = metadata
        self.baseline = baseline
        self.notes = notes


#: Counters summed over the shards (the rest of the metadata is shared or recomputed).
_SUMMED = ("generations", "cache_hits", "retries", "calls_refused")


def merge_shards(specs) -> Merged:
    """Load, check and merge the shards' reports (module docstring).

    Parameters
    ----------
    specs : sequence of str or os.PathLike
        Report folders (or their results.json), one per shard, in any order.

    Raises
    ------
    InvalidArgumentError
        Anything the module docstring lists; the message names the shard.
    """
    specs = list(specs)
    if not specs:
        raise InvalidArgumentError("no shard given; accepted: the report folders of the N shards")
    sizes = [_size(_results_path(spec)[1]) for spec in specs]
    if sum(sizes) > MAX_TOTAL_BYTES:
        raise InvalidArgumentError(f"the {len(specs)} results.json files hold {sum(sizes):,} bytes, more than "
                                   f"the limit of {MAX_TOTAL_BYTES:,}; accepted: the shards of one run")
    loaded, thumbs = [], 0
    for spec in specs:
        folder = _results_path(spec)[0]
        shard = load_shard(spec, thumbnails=thumbs + _size(folder / THUMBNAILS_FILE) <= MAX_TOTAL_THUMBNAILS)
        thumbs += _size(folder / THUMBNAILS_FILE) if shard.thumbnails else 0
        loaded.append(shard)
    shards = sorted(loaded, key=lambda s: s.index)
    _check_parts(shards)
    _check_same_run(shards)
    owner: dict = {}
    records = []
    for shard in shards:
        for rec in shard.records:
            sid = rec["sample_id"]
            if sid in owner:
                where = "twice in " + shard.name if owner[sid] is shard else (
                    f"in {owner[sid].name} and in {shard.name}")
                raise InvalidArgumentError(f"sample {_show(sid)} is {where}; accepted: shards of one "
                                           f"run, whose samples are disjoint")
            owner[sid] = shard
            thumbs = shard.thumbnails.get(sid)
            if thumbs:
                rec = {**rec, "extra": {**(rec.get("extra") or {}), "thumbnails": thumbs}}
            records.append(rec)
    records.sort(key=lambda r: (r.get("index", 0), r["sample_id"]))
    first = shards[0]
    notes = []
    interrupted = [s for s in shards if s.meta.get("interrupted")]
    selected = first.meta["shard"]["selected"]
    if len(records) != selected:
        notes.append(f"the merged run holds {len(records)} of the {selected} samples selected "
                     f"(a shard stopped early, or -k / a path left some out)")
    if interrupted:
        notes.append("interrupted: " + ", ".join(s.name for s in interrupted))
    meta = {k: first.meta[k] for k in SHARED_FACTS if k in first.meta}
    baseline = run_baseline(records, meta)
    meta["fingerprint"] = baseline["metadata"]["fingerprint"]
    meta["interrupted"] = bool(interrupted)
    stops = [f"{s.name}: {s.meta['stop_reason']}" for s in interrupted if s.meta.get("stop_reason")]
    if stops:
        meta["stop_reason"] = "; ".join(printable(str(x))[:300] for x in stops)
    for key in _SUMMED:
        values = [s.meta.get(key) for s in shards]
        if all(_number(v) for v in values):
            meta[key] = int(sum(values))
    if meta.get("price") is not None and _number(meta.get("price")) and "generations" in meta:
        meta["estimated_cost"] = meta["generations"] * float(meta["price"])
    meta["shards"] = {"total": first.total, "selected": selected, "digest": first.meta["shard"]["digest"]}
    return Merged(records, meta, baseline, notes)


def run_baseline(records, meta: Mapping) -> dict:
    """The baseline document of a run's records and metadata (the plugin's ``build_baseline`` call)."""
    extra = {k: meta[k] for k in ("repeats", "pass_rule", "dataset") if k in meta}
    return build_baseline(records, suite=str(meta.get("suite")), profile=str(meta.get("profile")),
                          seed=int(meta.get("seed") or 0), adapter=str(meta.get("adapter") or "unknown"),
                          package_version=None if meta.get("package_version") is None
                          else str(meta["package_version"]), extra_metadata=extra)


def write_reports(output, records, *, metadata, aggregates, comparison=None,
                  step_summary: bool = True) -> list[str]:
    """Write a run's results.json, thumbnails.json, summary.md and report.html into ``output``.

    ``comparison``: the gate's, shown in every report as a run with ``--violin-baseline``
    shows it; ``step_summary=False``: summary.md is not appended to ``$GITHUB_STEP_SUMMARY``.
    """
    from .html import write_html
    from .json_report import write_results_json, write_thumbnails_json
    from .markdown import write_summary

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    kwargs = {"metadata": metadata, "comparison": comparison, "aggregates": aggregates}
    write_results_json(out / "results.json", records, **kwargs)
    write_thumbnails_json(out / THUMBNAILS_FILE, records)
    if step_summary:
        write_summary(out / "summary.md", records, **kwargs)
    else:  # the same file, not appended to $GITHUB_STEP_SUMMARY
        from .._fs import atomic_write
        from .markdown import render_markdown

        atomic_write(out / "summary.md", render_markdown(records, **kwargs))
    write_html(out / "report.html", records, **kwargs)
    return [str(out / n) for n in ("results.json", "report.html", "summary.md", THUMBNAILS_FILE)]


def with_thumbnails(records, folder) -> list:
    """``records`` with the thumbnails ``folder/thumbnails.json`` holds for them (checked, bounded)."""
    thumbs = _load_thumbnails(Path(folder))
    return [{**r, "extra": {**(r.get("extra") or {}), "thumbnails": thumbs[r["sample_id"]]}}
            if r["sample_id"] in thumbs else r for r in records]


def write_merged(merged: Merged, output, *, save_baseline=None, step_summary: bool = True) -> list[str]:
    """Write the merged run's reports into ``output`` (and its baseline); the files written."""
    from ..gating import write_baseline

    written = write_reports(output, merged.records, metadata=merged.metadata,
                            aggregates=merged.baseline["aggregates"], step_summary=step_summary)
    if save_baseline is not None:
        write_baseline(save_baseline, merged.baseline)
        written.append(str(save_baseline))
    return written
