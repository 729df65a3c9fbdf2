"""Atomic file writes shared by the cache, the runner, baselines and reports."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["atomic_write"]


#: Attempts at a fresh temporary name before giving up (each is 64 random bits).
_TEMP_NAME_ATTEMPTS = 16

#: File mode requested for new files; the process umask is taken off it by the
#: operating system, exactly as for ``open(path, "w")``.
_NEW_FILE_MODE = 0o666


def _create_temp(directory: Path, name: str) -> tuple[int, Path]:
    """Create and open a new, empty temporary file next to ``name``.

    Unlike :func:`tempfile.mkstemp` (always ``0600``), the file is created
    with mode ``0666`` less the umask, so the final file has the permissions
    any other file the user writes gets; ``O_EXCL`` keeps it our own file.

    Parameters
    ----------
    directory : pathlib.Path
        Where the file is created (the destination's directory, so that the
        rename stays on one file system).
    name : str
        The destination's file name, part of the temporary name.

    Returns
    -------
    tuple of (int, pathlib.Path)
        An open write-only descriptor and the temporary file's path.

    Raises
    ------
    FileExistsError
        When :data:`_TEMP_NAME_ATTEMPTS` random names were all taken.
    OSError
        When the directory cannot be written.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    for _ in range(_TEMP_NAME_ATTEMPTS):
        tmp = directory / f".{name}.{os.urandom(8).hex()}.tmp"
        try:
            return os.open(tmp, flags, _NEW_FILE_MODE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name for {name!r} in {str(directory)!r} "
                          f"after {_TEMP_NAME_ATTEMPTS} attempts")


def atomic_write(path, data, *, fsync: bool = False) -> Path:
    """Write text (UTF-8) or bytes to ``path`` atomically.

    The content goes to a temporary file in the destination's directory,
    which then replaces ``path`` with :func:`os.replace`: readers (and
    concurrent pytest-xdist workers) see the old file or the new one, never
    a partial one. The temporary file is removed on any failure. The file
    gets the permissions the process umask gives a new file (``0644``
    under the usual umask ``022``), as with any file the user writes.

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
    fd, tmp = _create_temp(path.parent, path.name)
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
