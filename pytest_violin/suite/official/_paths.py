"""Paths from outside stay inside their folder (symlinks followed); text from them is shown cut.

A dataset is hostile until bounded: a metadata CSV may be a symlink to ``/proc/self/environ`` (a ``git clone``
of someone's dataset repository), a file name or a header cell may hold terminal escape codes, an ``id`` cell
may be megabytes long. :func:`regular_inside` is the one test a file passes before a byte of it is read, and
:func:`shown` is how any string that came from a dataset enters a message.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ...errors import ManifestError
from ...redaction import redact
from ...report.text import printable

__all__ = ["inside", "regular_inside", "require_inside", "shown", "shown_path", "quoted_path", "MAX_SHOWN",
           "MAX_PATH_SHOWN"]

#: Characters of a value from a dataset (a cell, a file name, a header) shown in a message.
MAX_SHOWN = 120
#: Characters of a path shown in a message (a dataset's own file names are part of it).
MAX_PATH_SHOWN = 400


def inside(path, folder) -> bool:
    """Whether ``path`` resolves (symlinks followed) to ``folder`` or below it."""
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, base]) == base


def regular_inside(path, folder) -> str | None:
    """None when ``path`` resolves to a regular file inside ``folder``, else why not.

    Symlinks are followed, so a link that stays inside (a Hugging Face cache snapshot's link to its
    ``blobs/``, with ``folder`` the repository's cache folder) is accepted, and one that leaves it
    (``/proc/self/environ``, a ``.env`` beside the clone) is refused before it is opened.
    """
    if not inside(path, folder):
        return f"resolves outside {quoted_path(os.path.realpath(folder))}"
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    return None if stat.S_ISREG(mode) else "is not a regular file"


def require_inside(path, root, what: str) -> None:
    """Raise a :class:`ManifestError` naming ``what`` unless :func:`regular_inside` accepts ``path``."""
    why = regular_inside(path, root)
    if why is not None:
        raise ManifestError(f"{what} {why}; expected a regular file inside {shown_path(root)} (a symlink "
                            f"out of the dataset is not followed)", path=shown_path(path))


def shown(value, limit: int = MAX_SHOWN) -> str:
    """``value`` (``str()`` of a cell, a file name, a path or a header from a dataset) as one quoted line.

    Printable (control characters as ``\\xNN`` escapes, newlines and tabs too) and redacted (a registered
    secret masked); past ``limit`` characters it ends ``...`` with its length.

    Examples
    --------
    >>> shown("id\\x1b[2J")
    "'id\\\\x1b[2J'"
    """
    text = os.fspath(value) if isinstance(value, Path) else str(value)
    more = len(text) - limit
    if more > 0:
        text = text[:limit]
    text = printable(redact(text)).replace("\n", "\\n").replace("\t", "\\t")
    return f"'{text}'" + (f"... ({limit + more:,} characters)" if more > 0 else "")


def shown_path(path, limit: int = MAX_PATH_SHOWN) -> str:
    """A path for a message: as :func:`shown`, without the quotes (a file name may be hostile)."""
    text = os.fspath(path) if isinstance(path, os.PathLike) else str(path)
    if len(text) <= limit and text.isprintable():
        return text
    out = shown(text, limit)
    return out[1:out.rindex("'")] + out[out.rindex("'") + 1:]


def quoted_path(path) -> str:
    """A path for a message, quoted: :func:`shown` with :data:`MAX_PATH_SHOWN` characters."""
    return shown(path, MAX_PATH_SHOWN)
