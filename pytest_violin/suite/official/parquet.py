"""Stream the rows of ``violin-test.parquet`` with pyarrow, one row at a time, every byte bounded.

Only the columns the suite needs are read, one row per record batch (``ParquetFile.iter_batches``), so memory
holds one row's cells whatever the file's size. pyarrow comes with the ``hub`` extra: ``pip install
'pytest-violin[hub]'``.

Two sizes are bounded, because they differ by any factor: the *encoded* size (what the footer states, what
pyarrow holds of a column chunk while it decodes it) and the *decoded* size (what the cells are once read:
dictionary or run-length encoding turns 33 KB of file into gigabytes of repeated cells). The footer's encoded
size of every row group is checked against :data:`MAX_ROW_GROUP_BYTES` before a row is read; the decoded bytes
are counted as they arrive, per cell (:data:`~.schema.MAX_CELL_BYTES` for an image,
:data:`~.schema.MAX_PROMPT_CHARS` for a prompt, :data:`~.schema.MAX_TEXT_CELL_CHARS` for the other text), per
row group (:data:`MAX_ROW_GROUP_DECODED`), per column (:data:`MAX_COLUMN_DECODED`) and for the whole file
(:data:`MAX_EXPANSION` times its size, plus :data:`EXPANSION_SLACK`): the images are extracted into the
official-data cache, so this last bound is the cache's size for one file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ...errors import ManifestError, SuiteError
from ._paths import quoted_path, regular_inside, shown, shown_path
from .schema import IMAGE_COLUMNS, MAX_CELL_BYTES, MAX_PROMPT_CHARS, MAX_TEXT_CELL_CHARS

__all__ = ["require_pyarrow", "iter_rows", "sha256_file", "EXTRA_HINT", "BATCH_ROWS",
           "MAX_ROW_GROUP_BYTES", "MAX_ROW_GROUP_DECODED", "MAX_COLUMN_DECODED",
           "MAX_EXPANSION", "EXPANSION_SLACK", "check_row_groups"]

EXTRA_HINT = "pip install 'pytest-violin[hub]'"
#: Rows per record batch: one. A cell may be up to :data:`~.schema.MAX_CELL_BYTES` decoded, and its size is
#: known only once it is decoded; one row of three image columns is the most memory holds (batches of 16 rows
#: held 16 times as much).
BATCH_ROWS = 1
#: Largest encoded size of one row group (of the columns read, as the footer states it), in bytes: 256 MiB.
#: pyarrow holds a column chunk while it decodes its pages, and a decoded cell is at most a page. The
#: ``datasets`` library writes image datasets in row groups of 100 rows (~70 MB of 512x512 PNGs).
MAX_ROW_GROUP_BYTES = 256 << 20
#: Largest decoded size of one row group (every column read), in bytes: 1 GiB.
MAX_ROW_GROUP_DECODED = 1 << 30
#: Largest decoded size of one column over the whole file, in bytes: 8 GiB for an image column (the official
#: data is a few GB in all), 64 MiB for a text column (7,745 prompts of at most MAX_PROMPT_CHARS characters
#: are 31 MB).
MAX_COLUMN_DECODED = {"image": 8 << 30, "text": 64 << 20}
#: The decoded cells of a file may be at most this many times its size (plus :data:`EXPANSION_SLACK`): images
#: are stored compressed already (PNG, JPEG), so a file that decodes to much more than it is repeats cells,
#: the shape of a decompression bomb.
MAX_EXPANSION = 4
#: Decoded bytes allowed on top of :data:`MAX_EXPANSION` times the file's size: 64 MiB.
EXPANSION_SLACK = 64 << 20
_WANTED = ("task", "variation", "id", "mask_type", "image_id", "prompt", *IMAGE_COLUMNS)


def require_pyarrow():
    """``pyarrow.parquet``, or a SuiteError naming the extra to install."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise SuiteError(f"reading the official Violin parquet needs pyarrow: {EXTRA_HINT}") from None
    return pq


def sha256_file(path) -> str:
    """The SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_row_groups(pf, path, columns) -> None:
    """Refuse a row group whose encoded size (of ``columns``) is over :data:`MAX_ROW_GROUP_BYTES`.

    The size is read from the footer: the ``total_uncompressed_size`` of every column chunk read, summed, and
    never less than the row group's own ``total_byte_size`` where every column is read. It is the size of the
    pages, not of the cells they decode to (:class:`_Budget` counts those). The
    :class:`~pytest_violin.errors.ManifestError` names the file, the row group, its size and the cap.
    """
    wanted = set(columns)
    footer = pf.metadata
    every = wanted >= set(pf.schema_arrow.names)
    for index in range(footer.num_row_groups):
        group = footer.row_group(index)
        size = group.total_byte_size if every else 0
        chunks = 0
        for j in range(group.num_columns):
            chunk = group.column(j)
            if chunk.path_in_schema.split(".", 1)[0] in wanted:
                chunks += chunk.total_uncompressed_size
        size = max(size, chunks)
        if size > MAX_ROW_GROUP_BYTES or size < 0:
            raise ManifestError(f"row group {index} ({group.num_rows} rows) is {size:,} bytes "
                                f"encoded, over the cap of {MAX_ROW_GROUP_BYTES:,} bytes per row "
                                f"group; expected row groups of at most that size (re-write the "
                                f"file with pyarrow.parquet.write_table(..., row_group_size=100))",
                                path=shown_path(path))


class _Budget:
    """The decoded bytes of one file, counted per row group, per column and in all.

    Every cell is counted before it is converted to a Python object or written anywhere; the first count over
    its cap is a one-line error.
    """

    def __init__(self, path: Path, file_size: int):
        self.path = path
        self.total_cap = MAX_EXPANSION * file_size + EXPANSION_SLACK
        self.total = 0
        self.group = 0
        self.columns = {}

    def new_row_group(self) -> None:
        self.group = 0

    def add(self, column: str, size: int, where: dict, index: int) -> None:
        kind = "image" if column in IMAGE_COLUMNS else "text"
        self.columns[column] = self.columns.get(column, 0) + size
        self.group += size
        self.total += size
        for count, cap, what in (
                (self.columns[column], MAX_COLUMN_DECODED[kind], f"column {column!r}"),
                (self.group, MAX_ROW_GROUP_DECODED, f"row group {index}"),
                (self.total, self.total_cap,
                 f"the file (at most {MAX_EXPANSION}x its size plus {EXPANSION_SLACK:,} bytes; "
                 f"more is repeated cells, a decompression bomb)")):
            if count > cap:
                raise ManifestError(f"{what} decodes to over {cap:,} bytes (dictionary or "
                                    f"run-length encoding repeats cells the file stores once); "
                                    f"expected the official data, whose images are stored "
                                    f"once each", **where)


def _cell_bytes(value, column: str, where: dict, base: Path):
    """The encoded image of one cell: ``{"bytes": b, "path": p}`` struct, bytes or a path."""
    if value is None:
        return None
    if isinstance(value, dict):
        data = value.get("bytes")
        if data:
            return bytes(data)
        value = value.get("path")
        if not value:
            return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        # a path, relative to the parquet's folder, that must stay inside it
        why = regular_inside(base / value, base)
        if why is not None:
            raise ManifestError(f"{column} path {shown(value)} {why}; expected image bytes or a "
                                f"regular file inside {quoted_path(base)}", **where)
        real = (base / value).resolve()
        if real.stat().st_size > MAX_CELL_BYTES:
            raise ManifestError(f"{column} path {shown(value)} is over {MAX_CELL_BYTES:,} bytes; "
                                f"expected an image file of at most that size", **where)
        return real
    raise ManifestError(f"{column} is a {type(value).__name__}; expected an image struct "
                        f"{{'bytes': ...}}, bytes or a path", **where)


def _cell_size(array, column: str) -> tuple[int, int]:
    """``(decoded bytes, longest value)`` of one column of a one-row batch, before conversion.

    An image struct counts its ``bytes`` and ``path`` children; a number counts its width.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = [array]
    if pa.types.is_struct(array.type):
        parts = [array.field(i) for i in range(array.type.num_fields)]
    size = longest = 0
    for part in parts:
        if pa.types.is_dictionary(part.type):
            part = part.dictionary_decode()
        if pa.types.is_binary(part.type) or pa.types.is_string(part.type) or \
                pa.types.is_large_binary(part.type) or pa.types.is_large_string(part.type):
            lengths = pc.binary_length(part)
            n = int(pc.sum(lengths).as_py() or 0)
            longest = max(longest, int(pc.max(lengths).as_py() or 0))
        else:
            n = part.nbytes
            longest = max(longest, n)
        size += n
    return size, longest


def _cell_cap(column: str) -> tuple[int, str]:
    if column in IMAGE_COLUMNS:
        return MAX_CELL_BYTES, "bytes"
    if column == "prompt":  # a character is at most 4 bytes of UTF-8: refused by bytes first
        return 4 * MAX_PROMPT_CHARS, "bytes"
    return 4 * MAX_TEXT_CELL_CHARS, "bytes"


def _open(path: Path, pq):
    try:
        return pq.ParquetFile(str(path), pre_buffer=False)  # no read-ahead of whole row groups
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ManifestError(f"not a readable parquet file ({type(exc).__name__}: "
                            f"{shown(first, 160)})", path=shown_path(path)) from None


def iter_rows(path):
    """Yield ``(row_number, record)`` for every row (0-based), streaming.

    ``record`` holds the scalar columns and, for each image column, the encoded bytes (or a resolved path) or
    None. pyarrow missing is a :class:`~pytest_violin.errors.SuiteError`; a
    :class:`~pytest_violin.errors.ManifestError` refuses what is not a regular file or not a parquet file, one
    without a ``task``/``variation``, ``id`` or ``ground_truth`` column, a row group over
    :data:`MAX_ROW_GROUP_BYTES` encoded (before any row is read), a cell, row group, column or file over its
    decoded cap.
    """
    pq = require_pyarrow()
    path = Path(path)
    try:
        file_size = os.stat(path).st_size
    except OSError as exc:
        raise ManifestError(f"cannot be read ({exc.strerror or exc})",
                            path=shown_path(path)) from None
    pf = _open(path, pq)
    names = set(pf.schema_arrow.names)
    found = ", ".join(shown(n, 40) for n in sorted(names)[:20]) + (
        f" and {len(names) - 20} more" if len(names) > 20 else "")
    if "task" not in names and "variation" not in names:
        raise ManifestError(f"column 'task' (or 'variation') is missing; expected the official "
                            f"columns task, id, mask_type, image_id, ground_truth, image1_path, "
                            f"image2_path (found: {found})", path=shown_path(path))
    for need in ("id", "ground_truth"):
        if need not in names:
            raise ManifestError(f"column {need!r} is missing; expected the official columns "
                                f"(found: {found})", path=shown_path(path))
    columns = [c for c in _WANTED if c in names]
    check_row_groups(pf, path, columns)
    budget = _Budget(path, file_size)
    base = path.parent
    row = 0
    for index in range(pf.metadata.num_row_groups):
        budget.new_row_group()
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[index], columns=columns,
                                     use_threads=False):
            for c in columns:  # every cell's decoded size before any becomes a Python object
                where = {"path": f"{shown_path(path)} row {row}", "field": c}
                size, longest = _cell_size(batch.column(c), c)
                cap, unit = _cell_cap(c)
                if longest > cap:
                    raise ManifestError(f"a cell of {longest:,} {unit}, over the limit of "
                                        f"{cap:,} {unit} for {c!r}", **where)
                budget.add(c, size, where, index)
            data = {c: batch.column(c).to_pylist() for c in columns}
            for i in range(batch.num_rows):
                record = {}
                for c in columns:
                    value = data[c][i]
                    where = {"path": f"{shown_path(path)} row {row}", "field": c}
                    if c in IMAGE_COLUMNS:
                        value = _cell_bytes(value, c, where, base)
                        if isinstance(value, Path):  # a file beside the parquet is copied too
                            budget.add(c, value.stat().st_size, where, index)
                    elif c == "prompt" and isinstance(value, str) \
                            and len(value) > MAX_PROMPT_CHARS:
                        raise ManifestError(f"a prompt of {len(value):,} characters, over the "
                                            f"limit of {MAX_PROMPT_CHARS:,}", **where)
                    record[c] = value
                yield row, record
                row += 1
            del data, batch
