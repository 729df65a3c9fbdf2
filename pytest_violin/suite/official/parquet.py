"""Stream the rows of ``violin-test.parquet`` with pyarrow, one record batch at a time.

Only the columns the suite needs are read, in batches of
:data:`BATCH_ROWS` rows (``ParquetFile.iter_batches``), so memory holds one
batch of images whatever the file's size. pyarrow comes with the ``hub``
extra: ``pip install 'pytest-violin[hub]'``.

pyarrow holds a row group's column chunk whole while it decodes it, so the
decoded size of every row group (of the columns read), as the footer states
it, is checked against :data:`MAX_ROW_GROUP_BYTES` before the first row is
read: a file whose row groups are too large is refused, not half extracted.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ...errors import ManifestError, SuiteError
from .schema import IMAGE_COLUMNS, MAX_CELL_BYTES

__all__ = ["require_pyarrow", "iter_rows", "sha256_file", "EXTRA_HINT", "BATCH_ROWS",
           "MAX_ROW_GROUP_BYTES", "check_row_groups"]

EXTRA_HINT = "pip install 'pytest-violin[hub]'"
#: Rows per record batch read from the parquet: 16 rows of 512x512 photos, masks and
#: ground truths are ~8 MB of PNG (memory then follows the file's row groups, not its size).
BATCH_ROWS = 16
#: Largest decoded size of one row group (of the columns read), in bytes: 1 GiB. The
#: ``datasets`` library writes image datasets in row groups of 100 rows (~70 MB of
#: 512x512 PNGs); a row group is held whole while it is decoded, so a larger one is refused.
MAX_ROW_GROUP_BYTES = 1 << 30
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
    """Refuse a row group whose decoded size (of ``columns``) is over :data:`MAX_ROW_GROUP_BYTES`.

    The size is read from the footer: the ``total_uncompressed_size`` of every
    column chunk read, summed, and never less than the row group's own
    ``total_byte_size`` where every column is read.

    Raises
    ------
    ManifestError
        One line naming the file, the row group, its size and the cap.
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
            raise ManifestError(f"row group {index} ({group.num_rows} rows) decodes to {size:,} "
                                f"bytes, over the cap of {MAX_ROW_GROUP_BYTES:,} bytes per row "
                                f"group; expected row groups of at most that size (re-write the "
                                f"file with pyarrow.parquet.write_table(..., row_group_size=100))",
                                path=path)


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
        real = (base / value).resolve()
        if base.resolve() not in real.parents:
            raise ManifestError(f"{column} path {value!r} leaves the parquet's folder; expected "
                                f"image bytes or a path inside {str(base)!r}", **where)
        if not real.is_file() or real.stat().st_size > MAX_CELL_BYTES:
            raise ManifestError(f"{column} path {value!r} is no file of at most {MAX_CELL_BYTES} "
                                f"bytes inside {str(base)!r}", **where)
        return real
    raise ManifestError(f"{column} is a {type(value).__name__}; expected an image struct "
                        f"{{'bytes': ...}}, bytes or a path", **where)


def iter_rows(path):
    """Yield ``(row_number, record)`` for every row (0-based), streaming.

    ``record`` holds the scalar columns and, for each image column, the
    encoded bytes (or a resolved path) or None.

    Raises
    ------
    SuiteError
        pyarrow is missing.
    ManifestError
        Not a parquet file, no ``task``/``variation`` or ``id`` or
        ``ground_truth`` column, a row group over :data:`MAX_ROW_GROUP_BYTES`
        decoded (refused before any row is read), an image cell over
        :data:`MAX_CELL_BYTES`.
    """
    pq = require_pyarrow()
    path = Path(path)
    try:
        pf = pq.ParquetFile(str(path), pre_buffer=False)  # no read-ahead of whole row groups
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
        raise ManifestError(f"not a readable parquet file ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:160] if str(exc) else ''})",
                            path=path) from None
    names = set(pf.schema_arrow.names)
    if "task" not in names and "variation" not in names:
        raise ManifestError(f"column 'task' (or 'variation') is missing; expected the official "
                            f"columns task, id, mask_type, image_id, ground_truth, image1_path, "
                            f"image2_path (found: {', '.join(sorted(names))})", path=path)
    for need in ("id", "ground_truth"):
        if need not in names:
            raise ManifestError(f"column {need!r} is missing; expected the official columns "
                                f"(found: {', '.join(sorted(names))})", path=path)
    columns = [c for c in _WANTED if c in names]
    check_row_groups(pf, path, columns)
    base = path.parent
    row = 0
    for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=columns, use_threads=False):
        data = {c: batch.column(c).to_pylist() for c in columns}
        for i in range(batch.num_rows):
            record = {}
            for c in columns:
                value = data[c][i]
                if c in IMAGE_COLUMNS:
                    value = _cell_bytes(value, c, {"path": f"{path} row {row}", "field": c}, base)
                    if isinstance(value, bytes) and len(value) > MAX_CELL_BYTES:
                        raise ManifestError(f"image of {len(value)} bytes is over the limit of "
                                            f"{MAX_CELL_BYTES} bytes", path=f"{path} row {row}",
                                            field=c)
                record[c] = value
            yield row, record
            row += 1
        del data, batch
