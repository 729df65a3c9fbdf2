"""Atomic file writes shared by the cache, the runner, baselines and reports, and the one
bounded reader of files named by options (templates, workflows, baselines).

:func:`read_option_file` is how every file a user names in an option is read: it opens without blocking (a
FIFO never hangs the session), refuses anything that is not a regular file (``/dev/zero``, a directory, a
socket), refuses a file larger than its limit by its size before reading it (a 2 GB file is never read), and
reads at most ``limit + 1`` bytes (a file that grows meanwhile). :func:`load_json_text` parses JSON after
checking its nesting depth, so a 100,000-deep document is refused with one line instead of a RecursionError.
"""

from __future__ import annotations

import json
import os
import re
import stat
from contextlib import suppress
from pathlib import Path

from .errors import InvalidArgumentError

__all__ = ["DEFAULT_JSON_DEPTH", "atomic_write", "file_kind", "json_depth", "json_from_bytes", "load_json_text",
           "read_option_bytes", "read_option_file", "read_option_json"]

#: Deepest JSON nesting accepted from an option file (a ComfyUI workflow is ~4 deep).
DEFAULT_JSON_DEPTH = 64

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a non-regular file is, from its ``st_mode``: ``"a FIFO"``, ``"a directory"``, ..."""
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def read_option_bytes(path, *, what: str, limit: int, error=InvalidArgumentError) -> bytes:
    """The bytes of the regular file ``path`` an option names, at most ``limit`` of them.

    Else ``error`` (a :class:`~pytest_violin.errors.ViolinError` subclass its caller turns into a usage
    error), naming ``what`` (the option, e.g. ``"--violin-workflow"``), the path and the limit: a missing or
    unreadable path, something that is not a regular file (never opened for reading in a way that blocks), a
    file over ``limit`` bytes (refused by its size, not read).
    """
    shown = f"{what}: {str(path)!r}"
    accepted = f"accepted: a regular file of at most {int(limit):,} bytes"
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        fd = os.open(os.fspath(path), flags)
    except FileNotFoundError:
        raise error(f"{shown} does not exist; {accepted}") from None
    except OSError as exc:
        raise error(f"{shown} cannot be opened ({exc.strerror or exc}); {accepted}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{shown} is {file_kind(info.st_mode)}; {accepted}")
        if info.st_size > limit:
            raise error(f"{shown} is {info.st_size:,} bytes, larger than the limit of "
                        f"{int(limit):,} bytes; {accepted}")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"{shown} cannot be read ({exc.strerror or exc}); {accepted}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise error(f"{shown} grew over the limit of {int(limit):,} bytes while read; {accepted}")
    return b"".join(chunks)


def read_option_file(path, *, what: str, limit: int, error=InvalidArgumentError) -> str:
    """:func:`read_option_bytes` decoded as UTF-8 (a BOM is dropped), or ``error``."""
    data = read_option_bytes(path, what=what, limit=limit, error=error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{what}: {str(path)!r} is not UTF-8 text (byte {exc.start}); accepted: "
                    f"a UTF-8 text file") from None


# A JSON string: quote, then runs of ordinary characters and escapes (linear, no backtracking blow-up).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(text: str) -> int:
    """Deepest nesting of ``[`` / ``{`` in JSON ``text`` (brackets inside strings do not count).

    Linear in the text, without recursion: it can measure what :func:`json.loads` cannot parse.
    """
    brackets = _JSON_STRING.sub("", text).encode("utf-8", "surrogatepass").translate(
        None, _NOT_BRACKETS)
    depth = deepest = 0
    # runs of openers and closers: one comparison per run, not per character
    for run in re.finditer(rb"[\[{]+|[\]}]+", brackets):
        n = run.end() - run.start()
        if brackets[run.start()] in b"[{":
            depth += n
            deepest = max(deepest, depth)
        else:
            depth -= n
    return deepest


def load_json_text(text: str, *, what: str, path, max_depth: int = DEFAULT_JSON_DEPTH,
                   error=InvalidArgumentError):
    """Parse ``text`` (read from ``path`` for ``what``) refusing nesting deeper than ``max_depth``."""
    shown = f"{what}: {str(path)!r}"
    depth = json_depth(text)
    if depth > max_depth:
        raise error(f"{shown} nests JSON {depth:,} levels deep, over the limit of {max_depth}; "
                    f"accepted: JSON nested at most {max_depth} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{shown}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
                    f"{exc.msg})") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise error(f"{shown} nests JSON too deeply; accepted: at most {max_depth} levels") from None


def read_option_json(path, *, what: str, limit: int, max_depth: int = DEFAULT_JSON_DEPTH,
                     error=InvalidArgumentError):
    """The JSON document in the option file ``path``: bounded in bytes and depth, or ``error``."""
    text = read_option_file(path, what=what, limit=limit, error=error)
    return load_json_text(text, what=what, path=path, max_depth=max_depth, error=error)


#: Attempts at a fresh temporary name before giving up (each is 64 random bits).
_TEMP_NAME_ATTEMPTS = 16

#: File mode requested for new files; the process umask is taken off it by the operating system, exactly as
#: for ``open(path, "w")``.
_NEW_FILE_MODE = 0o666


def _create_temp(directory: Path, name: str) -> tuple[int, Path]:
    """A new, empty temporary file in ``directory`` (the destination's: the rename stays on
    one file system): an open write-only descriptor and its path.

    Unlike :func:`tempfile.mkstemp` (always ``0600``), the file is created with mode ``0666`` less the umask,
    so the final file has the permissions any other file the user writes gets; ``O_EXCL`` keeps it our own
    file.
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

    The content goes to a temporary file in the destination's directory, which then replaces ``path`` with
    :func:`os.replace`: readers (and concurrent pytest-xdist workers) see the old file or the new one, never a
    partial one. The temporary file is removed on any failure. The file gets the permissions the process umask
    gives a new file (``0644`` under the usual umask ``022``), as with any file the user writes. Parent
    directories are created; text is written as UTF-8 with ``\\n`` line ends; ``fsync`` flushes the file to
    disk before the rename (for files that must survive a crash, such as baselines). Returns ``path``.
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
        with suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def json_from_bytes(data: bytes, path):
    """Parse a JSON file's bytes (any UTF encoding JSON allows); the bytes are dropped once decoded,
    so a large file is held once as text while it is parsed. ``path`` names the file in the error."""
    # ValueError: bad bytes or JSON, and an integer longer than int() converts (Python's digit limit)
    try:
        text = data.decode(json.detect_encoding(data), "surrogatepass")
        del data
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        where = (f" (line {exc.lineno}, column {exc.colno}: {exc.msg})" if isinstance(exc, json.JSONDecodeError)
                 else "" if isinstance(exc, (UnicodeDecodeError, RecursionError)) else " (a number too long)")
        raise InvalidArgumentError(f"{path}: not valid JSON{where}") from None
