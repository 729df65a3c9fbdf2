"""The rows of an official dataset, from the parquet (extracted once) or a converted folder.

Both give :class:`Row` objects naming files in the converter's layout (``data/Task_*``); the parquet's images
are written there once, into a folder of the official-data cache named by the parquet's SHA-256, one row at a
time (memory holds one record batch).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..._fs import atomic_write
from ...errors import ManifestError
from ._paths import quoted_path, inside, regular_inside, shown, shown_path
from .parquet import iter_rows
from .schema import (MASK_TYPES, RAW_FOLDER, TASK_NUMBERS, group_of, gt_folder, parse_number)

__all__ = ["Row", "parquet_rows", "folder_rows", "data_dir_of"]

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass
class Row:
    """One official sample before what is read from its images."""

    where: str            # "FILE row N" or the ground-truth file
    group: str            # color/v1, color/v2, shape, mask/<type>
    number: int
    prompt: str | None    # the parquet's prompt column, when it has one
    gt: Path
    photo: Path | None = None
    mask: Path | None = None


def _ext(data: bytes) -> str:
    return ".jpg" if data[:3] == b"\xff\xd8\xff" else ".png"


def _write(path: Path, data) -> None:
    """Write (atomically: two processes may extract the same file) bytes or a file's copy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, Path):
        data = data.read_bytes()
    atomic_write(path, data)


def parquet_rows(parquet: Path, data: Path, skipped: dict, seen: dict | None = None):
    """Yield the :class:`Row` of every parquet row, writing its images under ``data``.

    Rows without ``task`` and ``variation`` are skipped (as the authors' converter skips them) and counted in
    ``skipped``. ``seen`` (group, id -> where) is shared by the files of one dataset: an id in two files is
    refused, naming both, before the second one's images are written over the first one's.
    """
    seen = {} if seen is None else seen
    for n, rec in iter_rows(parquet):
        where = f"{shown_path(parquet)} row {n}"
        task = rec.get("task")
        if task is None:
            task = rec.get("variation")
        if task is None:
            skipped["no task or variation"] = skipped.get("no task or variation", 0) + 1
            continue
        task_no = parse_number(task)
        if task_no not in TASK_NUMBERS:
            raise ManifestError(f"unknown task {shown(task)}; expected 1 (color var-1), 2 (color "
                                f"var-2), 3 (geometric) or 4 (image mask)", path=where,
                                field="task")
        number = parse_number(rec.get("id"))
        if number is None:
            raise ManifestError(f"id {shown(rec.get('id'))} is not an official id; expected id_N",
                                path=where, field="id")
        mask_type = str(rec.get("mask_type") or "").strip() or "inpainting"
        if task_no == 4 and mask_type not in MASK_TYPES:
            raise ManifestError(f"unknown mask_type {shown(mask_type)}; expected "
                                f"{', '.join(MASK_TYPES)}", path=where, field="mask_type")
        group = group_of(task_no, mask_type)
        if (group, number) in seen:
            raise ManifestError(f"id_{number} of {group} occurs twice: first in "
                                f"{seen[(group, number)]} (ids are compared as numbers: id_5 "
                                f"and id_05 are one id); expected each id once in the dataset",
                                path=where, field="id")
        seen[(group, number)] = where
        gt = rec.get("ground_truth")
        if not gt:
            raise ManifestError(f"id_{number}: no ground_truth image; expected an image struct "
                                f"{{'bytes': ...}}", path=where, field="ground_truth")
        gt_path = data / gt_folder(group) / f"id_{number}.png"
        _write(gt_path, gt)
        row = Row(where, group, number, (rec.get("prompt") or None), gt_path)
        if task_no == 4:
            image_id = str(rec.get("image_id") or "").strip() or f"id_{number}"
            if not _SAFE_NAME.fullmatch(image_id) or ".." in image_id:
                raise ManifestError(f"image_id {shown(image_id)} is not a plain file name; "
                                    f"expected letters, digits, '.', '_' or '-'", path=where,
                                    field="image_id")
            photo, mask = rec.get("image1_path"), rec.get("image2_path")
            for name, value in (("image1_path", photo), ("image2_path", mask)):
                if not value:
                    raise ManifestError(f"id_{number}: no {name} image; expected the mask task's "
                                        f"{'photo' if name == 'image1_path' else 'mask'}",
                                        path=where, field=name)
            ext = _ext(photo) if isinstance(photo, bytes) else (photo.suffix or ".png")
            row.photo = data / RAW_FOLDER / "images" / f"{image_id}{ext}"
            row.mask = data / RAW_FOLDER / f"{mask_type}_mask" / f"{image_id}.png"
            _write(row.photo, photo)
            _write(row.mask, mask)
        yield row


def data_dir_of(root: Path) -> Path | None:
    """The folder holding ``Task_*`` of a converted dataset (``root/data`` or ``root``)."""
    for cand in (root / "data", root):
        if cand.is_dir() and any(p.name.startswith("Task_") and p.is_dir() for p in cand.iterdir()):
            return cand
    return None


_GT_NAME = re.compile(r"id_(\d{1,9})\.(?:png|jpe?g|webp)", re.IGNORECASE)


def _groups(data: Path):
    from .schema import GT_FOLDERS

    for group, folder in GT_FOLDERS.items():
        if (data / folder).is_dir():
            yield group, data / folder
    for mt in MASK_TYPES:
        if (data / "Task_Image_Mask" / mt).is_dir():
            yield f"mask/{mt}", data / "Task_Image_Mask" / mt


def _input_path(value: str | None, root: Path, data: Path, fallback: Path | None, where, field):
    """A metadata CSV's image path resolved inside the dataset folder."""
    candidates = []
    if value:
        text = value.replace("\\", "/")
        if RAW_FOLDER + "/" in text:
            candidates.append(data / text[text.index(RAW_FOLDER):])
        if not os.path.isabs(text):
            candidates += [root / text, data / text]
        candidates.append(fallback.parent / Path(text).name if fallback is not None else None)
    elif fallback is not None:
        candidates.append(fallback)
    for cand in candidates:
        if cand is not None and cand.is_file():
            if not inside(cand, root):
                raise ManifestError(f"{field} {shown(value)} resolves outside the dataset folder "
                                    f"{quoted_path(root)}", path=where, field=field)
            return cand.resolve()
    if not value:
        raise ManifestError(f"no {field} for this id; expected the mask task's "
                            f"{'photo' if field == 'image1_path' else 'mask'} path (a file under "
                            f"{RAW_FOLDER}/) in the metadata CSV", path=where, field=field)
    raise ManifestError(f"{field} {shown(value)}: no such image in the dataset folder "
                        f"{quoted_path(root)}; expected a file under {RAW_FOLDER}/", path=where,
                        field=field)


def _ground_truths(folder: Path, root: Path, skipped: dict) -> list:
    """``[(number, path)]`` of the ``id_N`` images of ``folder``, each id once.

    ``id_5.png``, ``id_05.png``, ``id_5.jpg`` and ``id_5.PNG`` are all id 5: two of them are refused, naming
    both, rather than one silently chosen.
    """
    found = {}
    for entry in os.scandir(folder):
        m = _GT_NAME.fullmatch(entry.name)
        if m is None:
            if entry.is_file():
                key = f"not an id_N image file in {folder.name}/"
                skipped[key] = skipped.get(key, 0) + 1
            continue
        path = Path(entry.path)
        why = regular_inside(path, root)
        if why is not None:
            raise ManifestError(f"ground truth {why}; expected a regular image file inside the "
                                f"dataset folder (a symlink out of it is not followed)",
                                path=shown_path(path))
        number = int(m.group(1))
        if number in found:
            first, second = sorted([found[number], path])
            raise ManifestError(f"id_{number} has two ground truths: {shown_path(first)} and "
                                f"{shown_path(second)} (ids are compared as numbers, whatever "
                                f"the zero-padding, extension or case); expected one file per "
                                f"id", path=shown_path(folder))
        found[number] = path
    return sorted(found.items())


def folder_rows(root: Path, data: Path, meta, skipped: dict):
    """Yield the :class:`Row` of every ``id_N`` ground truth of a converted folder."""
    for group, folder in _groups(data):
        for number, path in _ground_truths(folder, root, skipped):
            row = Row(shown_path(path), group, number, None, path.resolve())
            if group.startswith("mask/"):
                info = meta.lookup(group, number) or {}
                where = f"{meta.file_of(group)} id {number}"
                mt = group.split("/", 1)[1]
                row.photo = _input_path(info.get("image1_path"), root, data, None, where,
                                        "image1_path")
                row.mask = _input_path(info.get("image2_path"), root, data,
                                       data / RAW_FOLDER / f"{mt}_mask" / f"{row.photo.stem}.png",
                                       where, "image2_path")
            yield row
