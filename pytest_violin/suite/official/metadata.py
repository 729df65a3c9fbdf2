"""The official metadata CSVs: prompts (and the mask task's image paths) by id.

The authors' generation scripts read ``metadata/Task_Color_Var1_metadata.csv``,
``Task_Color_Var2_metadata.csv``, ``Task_Geometric_metadata.csv`` and
``Task_Image_Mask_<mask_type>_metadata.csv`` with the columns ``id, prompt`` (the mask files add
``image1_path, image2_path``); ``Variation_1`` / ``Variation_2`` / ``Variation_3`` spellings and any
``*Geometric*metadata*.csv`` are accepted too. Ids are ``123``, ``id_123`` or ``id_000123``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..._fs import read_option_bytes
from ...errors import ManifestError
from ._paths import require_inside, shown, shown_path
from .schema import MASK_TYPES, MAX_PROMPT_CHARS, metadata_name, parse_number

__all__ = ["Metadata", "classify", "read_metadata", "MAX_CSV_BYTES"]

#: Largest metadata CSV read, in bytes (16 MiB; the official files are < 2 MiB).
MAX_CSV_BYTES = 16 * 1024 * 1024
#: What a header cell must look like to be echoed in an error: a file whose first line is not a row of column
#: names (a ``.env``, an environment dump) is not echoed at all.
_COLUMN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ ().-]{0,39}")
_MAX_COLUMNS_SHOWN = 12


def classify(name: str) -> str | None:
    """The group a metadata file name belongs to, or None."""
    low = name.lower()
    if not low.endswith(".csv") or "metadata" not in low:
        return None
    m = re.search(r"image_?mask_?(" + "|".join(MASK_TYPES) + ")", low)
    if m:
        return f"mask/{m.group(1)}"
    if re.search(r"var(?:iation)?_?1(?!\d)", low):
        return "color/v1"
    if re.search(r"var(?:iation)?_?2(?!\d)", low):
        return "color/v2"
    if "geometric" in low or re.search(r"variation_?3(?!\d)", low):
        return "shape"
    return None


@dataclass
class Metadata:
    """What the metadata folder says, by group and id number."""

    folder: Path | None = None
    files: dict = field(default_factory=dict)        # group -> Path
    rows: dict = field(default_factory=dict)         # group -> {number: {"prompt", "image1_path", ...}}
    ignored: list = field(default_factory=list)      # csv files of no known group
    digest: str = ""

    def lookup(self, group: str, number: int):
        """The row of ``group`` and id ``number`` or None."""
        return self.rows.get(group, {}).get(number)

    def file_of(self, group: str) -> str:
        """The metadata CSV of ``group``: the file read, or the one looked for and why it is not."""
        f = self.files.get(group)
        if f is not None:
            return shown_path(f)
        name = metadata_name(group)
        if self.folder is None:
            return (f"metadata/{name} (no metadata folder beside the data; give it with "
                    f"--violin-metadata=DIR)")
        return f"{shown_path(self.folder / name)} (no such file, nor another name for {group})"


def _header(columns: list) -> str:
    """The header cells for an error, only when they look like column names (else their count)."""
    if columns and len(columns) <= _MAX_COLUMNS_SHOWN and all(
            _COLUMN_NAME.fullmatch(c) for c in columns):
        return ", ".join(shown(c, 40) for c in columns)
    if not columns:
        return "no header"
    return (f"{len(columns)} cells that are not column names, not shown: the first line is no "
            f"CSV header")


def _read_one(path: Path, group: str, raw: bytes) -> dict:
    """The rows of one metadata CSV whose bytes ``raw`` were read (once, bounded) from ``path``."""
    where = shown_path(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"not UTF-8 text ({exc.reason} at byte {exc.start + 1}); expected a "
                            f"UTF-8 CSV with the columns id, prompt", path=where) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    need = ["id", "prompt"] + (["image1_path", "image2_path"] if group.startswith("mask/") else [])
    try:
        columns = [c.strip() for c in (reader.fieldnames or [])]
    except csv.Error:  # e.g. a NUL byte on Python 3.10: nothing of the line is shown
        columns = ["\0"] * (_MAX_COLUMNS_SHOWN + 1)
    missing = [c for c in need[:2] if c not in columns]
    if missing:
        raise ManifestError(f"column {missing[0]!r} is missing; expected the columns "
                            f"{', '.join(need)} (found: {_header(columns)})", path=where, line=1)
    out = {}
    try:
        for line_no, raw_row in enumerate(reader, 2):
            row = {(k or "").strip(): (v or "") for k, v in raw_row.items() if k is not None}
            number = parse_number(row.get("id"))
            if number is None:
                raise ManifestError(f"id {shown(row.get('id'))} is not an official id; expected N "
                                    f"or id_N", path=where, line=line_no, field="id")
            if number in out:
                raise ManifestError(f"id {number} is listed twice (first on line "
                                    f"{out[number]['line']}; ids are compared as numbers: "
                                    f"5, id_5 and id_05 are one id)", path=where, line=line_no,
                                    field="id")
            prompt = row.get("prompt", "").strip()
            if not prompt:
                raise ManifestError(f"id {number}: empty prompt; expected the instruction text",
                                    path=where, line=line_no, field="prompt")
            if len(prompt) > MAX_PROMPT_CHARS:
                raise ManifestError(f"id {number}: a prompt of {len(prompt):,} characters, over "
                                    f"the limit of {MAX_PROMPT_CHARS:,}; expected the instruction "
                                    f"text", path=where, line=line_no, field="prompt")
            out[number] = {"prompt": prompt, "line": line_no,
                           "image1_path": row.get("image1_path", "").strip() or None,
                           "image2_path": row.get("image2_path", "").strip() or None}
    except csv.Error as exc:
        raise ManifestError(f"malformed CSV ({shown(exc)})", path=where,
                            line=reader.line_num) from None
    return out


def read_metadata(folder, root=None) -> Metadata:
    """Read every recognised ``*metadata*.csv`` of ``folder`` (None: no metadata).

    Parameters
    ----------
    folder : path or None
        The metadata folder.
    root : path, optional
        The folder every CSV must resolve into, symlinks followed (default: ``folder``): the dataset's folder,
        or a hub repository's cache folder, whose snapshot files are links into its ``blobs/``.

    Raises
    ------
    ManifestError
        One line naming the file, the line and what was expected: a CSV that resolves outside ``root`` or is
        no regular file (refused before it is opened), a missing column, an id that is no official id, an id
        listed twice, an empty prompt, two files for one group, a file that is not UTF-8 CSV, a file over
        :data:`MAX_CSV_BYTES` (refused by its size, never read whole).
    """
    meta = Metadata(folder=None if folder is None else Path(folder))
    if folder is None:
        return meta
    base = Path(folder)
    if not base.is_dir():
        raise ManifestError("metadata folder does not exist; expected a folder of *metadata*.csv "
                            "files (--violin-metadata=DIR)", path=shown_path(base))
    root = base if root is None else Path(root)
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(base.iterdir()):
        if path.suffix.lower() != ".csv":
            continue
        group = classify(path.name)
        if group is None:
            meta.ignored.append(path.name)
            continue
        require_inside(path, root, "metadata CSV")
        if group in meta.files:
            raise ManifestError(f"a second metadata file for {group} (the first is "
                                f"{shown(meta.files[group].name)}); expected one file per task",
                                path=shown_path(path))
        meta.files[group] = path
        # read once, at most MAX_CSV_BYTES (by its size before reading, and while reading), from the resolved
        # path that was checked: the rows and the digest come from the same bytes
        raw = read_option_bytes(os.path.realpath(path), what=f"metadata CSV {shown_path(path)}",
                                limit=MAX_CSV_BYTES, error=ManifestError)
        meta.rows[group] = _read_one(path, group, raw)
        digest.update(path.name.encode("utf-8", "surrogateescape") + b"\0"
                      + hashlib.sha256(raw).digest())
    meta.digest = digest.hexdigest()
    return meta
