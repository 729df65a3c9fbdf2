"""Atomic file writes shared by the cache, the runner, baselines and reports."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write"]


def atomic_write(path, data, *, fsync: bool = False) -> Path:
    """Write text (UTF-8) or bytes to ``path`` atomically.

    The content goes to a temporary file in the destination's directory,
    which then replaces ``path`` with :func:`os.replace`: readers (and
    concurrent pytest-xdist workers) see the old file or the new one, never
    a partial one. The temporary file is removed on any failure.

    Parameters
    ----------
    path : str or os.PathLike
        Destination; parent directories are created.
    data : str or bytes
        Content; text is written as UTF-8 with ``\\n`` line ends.
    fsync : bool, optional
        Flush the file to disk before the rename (for files that must
        survive a crash, such as baselines).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    OSError
        When the directory or the file cannot be written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
