"""One pass over the official rows: check every file, read what no column states, index it.

The pass (:func:`build_index`) reads each ground truth's header (the image bounds of
:mod:`pytest_violin.imaging` apply), hashes it, and decodes it (as ``cv2.imread`` does) where the var-2 split,
the shape class or the mask polarity must be read from it. Its result, one JSON line per sample plus a
summary, is kept in the official-data cache under a key of the data's identity, so later runs load in
milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import cv2

from ...errors import InvalidImageError, ManifestError
from ...imaging import as_rgb8, encode_png, probe_image_file
from ._paths import quoted_path
from .infer import mask_polarity, prompt_shape, prompt_split, shape_class, split_of
from .schema import MAX_CELL_BYTES, MASK_VARIATIONS

__all__ = ["INDEX_VERSION", "build_index", "cache_root"]

#: Bump when what the index holds or how it is inferred changes.
INDEX_VERSION = 1


def cache_root() -> Path:
    """``$VIOLIN_OFFICIAL_CACHE``, else ``$XDG_CACHE_HOME/pytest-violin/official`` (``~/.cache``)."""
    if os.environ.get("VIOLIN_OFFICIAL_CACHE"):
        return Path(os.environ["VIOLIN_OFFICIAL_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-violin" / "official"


def _read(path: Path, what: str, where: str):
    try:
        size = path.stat().st_size
        if size > MAX_CELL_BYTES:
            raise InvalidImageError(f"{size} bytes, over the limit of {MAX_CELL_BYTES}")
        return as_rgb8(path, reader="opencv")
    except (InvalidImageError, OSError) as exc:
        reason = getattr(exc, "problem", None) or str(exc)
        raise ManifestError(f"{what} {quoted_path(path)} is not a usable image ({reason}); "
                            f"expected a PNG, JPEG or WebP image within the image limits",
                            path=where) from None


def _probe(path: Path, what: str, where: str):
    try:
        return probe_image_file(path)
    except InvalidImageError as exc:
        reason = getattr(exc, "problem", str(exc))
        raise ManifestError(f"{what} {quoted_path(path)} is not a usable image ({reason}); "
                            f"expected a PNG, JPEG or WebP image within the image limits",
                            path=where) from None


def _sha(path: Path, where: str) -> str:
    """The short SHA-256 of a ground-truth file of at most :data:`MAX_CELL_BYTES`, in blocks.

    Its header was probed, but a valid header may be followed by any number of bytes no decoder reads: the
    size is checked before a byte is hashed.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_CELL_BYTES:
            raise ManifestError(f"ground truth {quoted_path(path)} is {size:,} bytes, over the "
                                f"limit of {MAX_CELL_BYTES:,} bytes per image file; expected a "
                                f"PNG, JPEG or WebP image within the image limits", path=where)
        read = 0
        for block in iter(lambda: fh.read(1 << 20), b""):
            read += len(block)
            if read > MAX_CELL_BYTES:  # grew while read
                raise ManifestError(f"ground truth {quoted_path(path)} grew over the limit of "
                                    f"{MAX_CELL_BYTES:,} bytes while read", path=where)
            digest.update(block)
    return digest.hexdigest()[:16]


def _resized(img, w, h, interp):
    return img if img.shape[:2] == (h, w) else cv2.resize(img, (w, h), interpolation=interp)


def _record(row, meta, norm_dir: Path, notes: dict):
    """The index record of one row, or ``(None, reason)`` for a row reported apart."""
    entry = meta.lookup(row.group, row.number)
    prompt = row.prompt or (entry or {}).get("prompt")
    if not prompt:
        raise ManifestError(f"no prompt for id_{row.number} ({row.group}): expected a row "
                            f"'{row.number}, <prompt>' in {meta.file_of(row.group)} (or a "
                            f"'prompt' column in the parquet)", path=row.where, field="prompt")
    width, height = _probe(row.gt, "ground truth", row.where)
    rec = {"group": row.group, "number": row.number, "prompt": prompt, "w": width, "h": height,
           "expected": str(row.gt), "inputs": [], "sha": _sha(row.gt, row.where), "layout": None,
           "notes": []}

    def note(text):
        rec["notes"].append(text)
        notes[text] = notes.get(text, 0) + 1

    task = row.group.split("/", 1)[0]
    if row.group == "color/v1":
        rec.update(task="color", variation="v1", layout="single")
    elif row.group == "color/v2":
        gt = _read(row.gt, "ground truth", row.where)
        layout, why = split_of(gt)
        if why:
            note(f"{why}: the reference's rule gives "
                 f"{'left|right' if layout == 'vertical' else 'top/bottom'}")
        said = prompt_split(prompt)
        if said is not None and said != layout:
            note("var-2 prompt names the other split than the ground truth shows "
                 "(the ground truth decides, as in the reference)")
        rec.update(task="color", variation="v2", layout=layout)
    elif task == "shape":
        cls = prompt_shape(prompt)
        if cls is None:
            cls = shape_class(_read(row.gt, "ground truth", row.where))
            if cls is None:
                note("shape class not readable from the prompt or the ground truth")
                cls = "unclassified"
            else:
                note("shape class read from the ground truth (the prompt names none)")
        rec.update(task="shape", variation=cls)
    else:
        mt = row.group.split("/", 1)[1]
        rec.update(task="mask", variation=MASK_VARIATIONS[mt])
        gt = _read(row.gt, "ground truth", row.where)
        photo = _read(row.photo, "image1_path (photo)", row.where)
        mask = _read(row.mask, "image2_path (mask)", row.where)
        if photo.shape[:2] != gt.shape[:2] or mask.shape[:2] != gt.shape[:2]:
            note("mask-task inputs of another size than the ground truth (sent as stored)")
        polarity = mask_polarity(_resized(photo, width, height, cv2.INTER_AREA),
                                 _resized(mask, width, height, cv2.INTER_NEAREST), gt)
        mask_path = row.mask
        if polarity == "contradicts":
            return None, "mask contradicts the ground truth (neither white nor black = keep)"
        if polarity == "unreadable":
            note("mask polarity not readable (one-colour mask or dark photo): sent as stored")
        elif polarity == "black-keep":
            note("stored mask is black = keep: inverted to the plugin's white = keep")
            mask_path = norm_dir / mt / f"id_{row.number}.png"
            mask_path.parent.mkdir(parents=True, exist_ok=True)
            mask_path.write_bytes(encode_png(255 - mask))
        rec["inputs"] = [str(row.photo), str(mask_path)]
        rec["polarity"] = polarity
    del row
    return rec, None


def build_index(rows, meta, norm_dir: Path, skipped: dict, progress=None):
    """``(records, notes)`` for every row (skipped rows counted in ``skipped``)."""
    records, notes = [], {}
    for row in rows:
        rec, reason = _record(row, meta, norm_dir, notes)
        if rec is None:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            records.append(rec)
        if progress is not None:
            progress.update()
    listed = 0
    for group, ids in meta.rows.items():
        have = {r["number"] for r in records if r["group"] == group}
        listed += len(set(ids) - have)
    if listed:
        skipped["metadata ids without a ground-truth image"] = listed
    return records, notes


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.part")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
