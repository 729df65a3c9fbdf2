"""Manifests: export a suite to ``manifest.jsonl`` + PNGs, and load one back (with a text progress bar).

Layout of an export folder::

    OUT_DIR/manifest.jsonl                  one JSON object per line and sample
    OUT_DIR/expected/<sample id>.png        ground truth
    OUT_DIR/inputs/<sample id>/image.png    mask task: source image
    OUT_DIR/inputs/<sample id>/mask.png     mask task: the mask (white = keep)

Each line holds ``id, suite, task, variation, prompt, width, height, layout, control, metric_names, spec``
(see :meth:`Sample.to_manifest`) plus ``expected`` and ``inputs``: paths relative to the manifest's folder.
Loaded samples read their ground truth and inputs from those files; a line without ``expected`` must have a
spec that can be rendered.

A manifest is read as untrusted input: every path must resolve (symlinks followed) to a regular, non-empty
file inside the manifest's folder; the image header of each file is read when the manifest loads (a recognised
format, the sample's size, within the image limits of :mod:`pytest_violin.imaging`); ``width`` and ``height``
lie in ``1..MAX_SIDE``; a line holds at most :data:`MAX_LINE_BYTES` bytes.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import time
from pathlib import Path

from .. import tasks
from .._fs import atomic_write
from ..errors import InvalidImageError, ManifestError, SampleIdError, SuiteError
from ..imaging import MAX_PIXELS, encode_png, file_kind, probe_image_file
from .sample import LAYOUTS, TASKS, Sample

__all__ = ["MANIFEST_NAME", "MAX_SIDE", "MAX_LINE_BYTES", "ProgressBar", "export_samples", "load_manifest",
           "manifest_path"]

MANIFEST_NAME = "manifest.jsonl"
#: Largest ``width`` or ``height`` of a manifest sample: 8192, so that a sample's images stay within the
#: 64-megapixel limit of :data:`pytest_violin.imaging.MAX_PIXELS`.
MAX_SIDE = math.isqrt(MAX_PIXELS)
#: Longest manifest line, in bytes (1 MiB; an exported line is < 2 KiB).
MAX_LINE_BYTES = 1024 * 1024

#: Spec kinds whose ground truth a manifest may leave out (rendered instead).
RENDERABLE_KINDS = tasks.renderable_kinds()
_INPUT_NAMES = {"mask": ("image", "mask")}


def manifest_path(path) -> Path:
    """``path`` itself if it is a file, else ``path / manifest.jsonl``."""
    p = Path(path)
    return p / MANIFEST_NAME if p.is_dir() else p


def _write(path: Path, data: bytes) -> None:
    # atomic: a new file renamed over the name, so a symlink already in the output folder is replaced, never
    # written through
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)


def export_samples(samples, out_dir, *, progress: bool = True, stream=None,
                   compression: int = 1) -> Path:
    """Write a manifest and the PNGs of ``samples`` into ``out_dir``; return the manifest file.

    Streams: one sample is rendered, written and dropped at a time, so memory stays flat whatever the suite
    size. ``out_dir`` is created if missing (an existing manifest there is overwritten); ``progress`` shows a
    text progress bar on ``stream`` (default stderr; a list of samples gives it its total); ``compression`` is
    the PNG zlib level 0-9.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    total = len(samples) if hasattr(samples, "__len__") else 0
    bar = ProgressBar(total, stream=stream, label="export") if progress else None
    target = out / MANIFEST_NAME
    tmp = out / (MANIFEST_NAME + ".part")
    seen = set()
    with open(tmp, "w", encoding="utf-8") as fh:
        for sample in samples:
            if sample.id in seen:
                raise SuiteError(f"duplicate sample id {sample.id!r}; ids must be unique "
                                 f"within an export")
            seen.add(sample.id)
            record = sample.to_manifest()
            rel = f"expected/{sample.id}.png"
            _write(out / rel, encode_png(sample.expected(), compression=compression))
            record["expected"] = rel
            inputs = []
            images = sample.inputs
            names = _INPUT_NAMES.get(sample.task, ())
            for k, img in enumerate(images):
                name = names[k] if k < len(names) else f"input{k}"
                rel_in = f"inputs/{sample.id}/{name}.png"
                _write(out / rel_in, encode_png(img, compression=compression))
                inputs.append(rel_in)
            del images
            record["inputs"] = inputs
            fh.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            if bar is not None:
                bar.update()
    os.replace(tmp, target)
    if bar is not None:
        bar.close()
    return target


_FIELD_TYPES = {
    "id": str, "suite": str, "task": str, "variation": str, "prompt": str,
    "width": int, "height": int,
}


def _check(record, name, kind, where, *, required=True):
    if name not in record:
        if required:
            raise ManifestError(f"missing required field {name!r}", field=name, **where)
        return None
    value = record[name]
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        if not ok:
            raise ManifestError(f"{name} must be a positive integer, got {value!r}", field=name,
                                **where)
        if value > MAX_SIDE:
            raise ManifestError(f"{name} {value} is out of the accepted range 1..{MAX_SIDE} "
                                f"(images are limited to {MAX_PIXELS} pixels)", field=name,
                                **where)
    elif not isinstance(value, kind):
        raise ManifestError(f"{name} must be a {kind.__name__}, got {value!r}", field=name,
                            **where)
    return value


def _resolve(base: str, rel, field, where, size) -> str:
    """The real path of ``rel``: a regular, non-empty image file inside ``base``.

    ``base`` is the manifest folder's real path. Symlinks are followed (``os.path.realpath``) and the target
    must still lie inside ``base``; directories, FIFOs, devices, sockets and empty files (``/proc`` files read
    as empty) are refused, and so is a file whose image header is not of a recognised format, of ``size``
    (``(width, height)``), or within the image limits. Nothing but the header is read, and no message quotes
    the file's content.
    """
    if not isinstance(rel, str) or not rel or os.path.isabs(rel) or ".." in Path(rel).parts:
        raise ManifestError(f"{field} path {rel!r} must be a relative path inside the "
                            f"manifest folder", field=field, **where)
    real = os.path.realpath(os.path.join(base, rel))
    if os.path.commonpath([base, real]) != base or real == base:
        raise ManifestError(f"{field} path {rel!r} resolves to {real!r}, outside the manifest "
                            f"folder {base!r}; files (and symlinks) must stay inside it",
                            field=field, **where)
    try:
        info = os.stat(real)
    except FileNotFoundError:
        raise ManifestError(f"{field} file {real!r} does not exist", field=field,
                            **where) from None
    except OSError as exc:
        raise ManifestError(f"{field} file {real!r} cannot be read ({exc.strerror})",
                            field=field, **where) from None
    if not stat.S_ISREG(info.st_mode):
        raise ManifestError(f"{field} path {real!r} is {file_kind(info.st_mode)}; accepted: a "
                            f"regular PNG/JPEG/WebP file", field=field, **where)
    if info.st_size == 0:
        raise ManifestError(f"{field} file {real!r} is empty (0 bytes); accepted: a PNG/JPEG/"
                            f"WebP file", field=field, **where)
    try:
        found = probe_image_file(real)
    except InvalidImageError as exc:
        reason = getattr(exc, "problem", str(exc))
        raise ManifestError(f"{field} file {real!r} is not a usable image ({reason})",
                            field=field, **where) from None
    if tuple(found) != tuple(size):
        raise ManifestError(f"{field} image {real!r} is {found[0]}x{found[1]}, but the sample "
                            f"is {size[0]}x{size[1]} (width x height)", field=field, **where)
    return real


def _sample_from_record(record, base: str, where, default_suite: str) -> Sample:
    if not isinstance(record, dict):
        raise ManifestError(f"each line must be a JSON object, got {type(record).__name__}",
                            **where)
    values = {}
    for name, kind in _FIELD_TYPES.items():
        values[name] = _check(record, name, kind, where,
                              required=name not in ("suite", "variation"))
    try:
        from .ids import validate_sample_id

        validate_sample_id(values["id"])
    except SampleIdError as exc:
        raise ManifestError(str(exc), field="id", **where) from None
    if values["task"] not in TASKS:
        raise ManifestError(f"unknown task {values['task']!r}; accepted: {', '.join(TASKS)}",
                            field="task", **where)
    if not values["prompt"].strip():
        raise ManifestError("prompt must not be empty", field="prompt", **where)
    layout = record.get("layout")
    if layout is not None and layout not in LAYOUTS:
        raise ManifestError(f"unknown layout {layout!r}; accepted: {', '.join(LAYOUTS)} or null",
                            field="layout", **where)
    control = record.get("control")
    if control is not None and not isinstance(control, str):
        raise ManifestError(f"control must be a sample id or null, got {control!r}",
                            field="control", **where)
    spec = record.get("spec", {})
    if not isinstance(spec, dict):
        raise ManifestError(f"spec must be a JSON object, got {spec!r}", field="spec", **where)
    metric_names = record.get("metric_names") or ()
    if not isinstance(metric_names, list) or not all(isinstance(m, str) for m in metric_names):
        if metric_names != ():
            raise ManifestError(f"metric_names must be a list of strings, got {metric_names!r}",
                                field="metric_names", **where)
    files = _files(record, base, where, (values["width"], values["height"]), values["task"], spec)
    try:
        return Sample(values["id"], values["suite"] or default_suite, values["task"],
                      values["variation"] or "default", values["prompt"], values["width"],
                      values["height"], layout=layout, spec=spec, control=control,
                      metric_names=tuple(metric_names), files=files or None)
    except SuiteError as exc:
        raise ManifestError(str(exc), **where) from None


def _files(record, base: str, where, size, task: str, spec: dict) -> dict:
    """The expected and input files of a record, each checked; a sample needs one or a renderable spec."""
    files = {}
    if record.get("expected") is not None:
        files["expected"] = _resolve(base, record["expected"], "expected", where, size)
    inputs = record.get("inputs") or []
    if not isinstance(inputs, list):
        raise ManifestError(f"inputs must be a list of paths, got {inputs!r}", field="inputs",
                            **where)
    if inputs:
        files["inputs"] = [_resolve(base, p, "inputs", where, size) for p in inputs]
    if "expected" not in files:
        kind = spec.get("kind")
        if kind not in RENDERABLE_KINDS or (kind == "mask" and "photo" not in spec):
            raise ManifestError(f"no 'expected' file and spec kind {kind!r} cannot be rendered; "
                                f"give an expected PNG or a spec of kind "
                                f"{', '.join(RENDERABLE_KINDS)}", field="expected", **where)
    if task == "mask" and "inputs" not in files and "photo" not in spec:
        raise ManifestError("a mask sample needs 'inputs' (image and mask PNGs) or a "
                            "renderable spec", field="inputs", **where)
    return files


def load_manifest(path) -> list:
    """The samples of ``manifest.jsonl`` (or the folder holding it), in file order.

    Ground truth and inputs are read from the PNG files. A :class:`~pytest_violin.errors.ManifestError` names
    the file, 1-based line and field at fault: invalid JSON, a missing or mistyped field, a width or height
    outside ``1..MAX_SIDE``, an invalid id, a duplicate id, a missing PNG, a path that leaves the manifest
    folder (through ``..`` or a symlink), a directory, FIFO, device or empty file, an image file that is not
    an image of the sample's size (header only; the message never quotes a file's content), an over-long line,
    or a control that names no sample of the manifest.
    """
    mpath = manifest_path(path)
    if not mpath.is_file():
        raise ManifestError(f"no manifest at {str(mpath)!r}", path=mpath)
    base = mpath.parent
    real_base = os.path.realpath(base)
    samples, lines = [], {}
    default_suite = base.name or "manifest"
    with open(mpath, "rb") as fh:
        for lineno, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), 1):
            where = {"path": mpath, "line": lineno}
            if len(raw) > MAX_LINE_BYTES and not (len(raw) == MAX_LINE_BYTES + 1
                                                  and raw.endswith(b"\n")):
                raise ManifestError(f"line longer than {MAX_LINE_BYTES} bytes; accepted: one "
                                    f"JSON object of at most {MAX_LINE_BYTES} bytes per line",
                                    **where)
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise ManifestError(f"not UTF-8 text ({exc.reason} at byte {exc.start + 1})",
                                    **where) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ManifestError(f"invalid JSON ({exc.msg} at column {exc.colno})",
                                    **where) from None
            sample = _sample_from_record(record, real_base, where, default_suite)
            if sample.id in lines:
                raise ManifestError(f"duplicate id {sample.id!r} (first on line "
                                    f"{lines[sample.id]})", field="id", **where)
            lines[sample.id] = lineno
            samples.append(sample)
    for s in samples:
        if s.control is not None and s.control not in lines:
            raise ManifestError(f"control {s.control!r} names no sample of this manifest",
                                path=mpath, line=lines[s.id], field="control")
    if not samples:
        raise ManifestError("the manifest holds no sample", path=mpath)
    return samples


# ---------------------------------------------------------------- progress (export, official data, dir: runs)


class ProgressBar:
    """``label [#######.......] 123/7745  1.6%  12.3/s`` on one line of ``stream`` (default stderr).

    On a terminal the line is redrawn at most 10 times a second; when the stream is not a terminal (CI logs)
    one line is written per 10 %. ``width`` is the bar's width in characters.
    """

    def __init__(self, total: int, stream=None, label: str = "", width: int = 30):
        self.total = max(0, int(total))
        self.stream = sys.stderr if stream is None else stream
        self.label = label
        self.width = width
        self.done = 0
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._last_decile = -1
        try:
            self._tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self._tty = False

    def _line(self) -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        rate = self.done / elapsed
        bar = "#" * filled + "." * (self.width - filled)
        prefix = f"{self.label} " if self.label else ""
        return f"{prefix}[{bar}] {self.done}/{self.total} {frac * 100:5.1f}% {rate:7.1f}/s"

    def update(self, n: int = 1) -> None:
        """Advance by ``n`` steps and redraw if it is time to."""
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        now = time.perf_counter()
        if self._tty:
            if now - self._last_draw >= 0.1 or self.done >= self.total:
                self.stream.write("\r" + self._line())
                self.stream.flush()
                self._last_draw = now
        else:
            decile = int(10 * self.done / self.total) if self.total else 10
            if decile != self._last_decile:
                self._last_decile = decile
                self.stream.write(self._line() + "\n")
                self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self._tty:
            self.stream.write("\r" + self._line() + "\n")
        elif self._last_decile != 10 and self.total:
            self.stream.write(self._line() + "\n")
        self.stream.flush()
