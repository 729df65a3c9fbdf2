"""The body of an answer: its byte limit, its content decoding, and the large-answer slots.

* :func:`read_body`: the decoded body of a streamed :class:`requests.Response`,
  refused before more than ``limit`` bytes are held (``Content-Length``
  first, then while streaming, after decompression), or cut quietly at the
  limit for error bodies (read only as far as a message needs:
  :data:`ERROR_BODY_BYTES`). The attempt's deadline (:mod:`.deadline`) is
  checked between chunks.
* :class:`_Decoder`: ``gzip`` / ``deflate`` decoding whose output per step is
  bounded (a gzip bomb is stopped one piece past the limit).
* Answers over :data:`LARGE_ANSWER_BYTES` are read and decoded at most
  :data:`LARGE_ANSWER_SLOTS` at a time per process (:func:`hold_large`,
  :func:`release_large`), in one anonymous memory map each (:class:`_Body`).

Why hand-written: requests and urllib3 have no limit on an answer's size,
and the bound on what one decoding step may produce must hold with every
urllib3 release the project supports (1.26 and 2.x), so the raw bytes are
read (``decode_content=False``) and :mod:`zlib`'s ``max_length`` bounds each
step here.
"""

from __future__ import annotations

import mmap
import threading
import zlib
from typing import Iterator

import requests

from .deadline import WATCH_POLL, Attempt, _Stopped
from .deadline import state as _local
from .text import truncate

__all__ = ["ACCEPT_ENCODING", "DEFAULT_MAX_ANSWER_BYTES", "ERROR_BODY_BYTES", "LARGE_ANSWER_BYTES",
           "LARGE_ANSWER_SLOTS", "MAX_BODY_BYTES", "hold_large", "read_body", "release_large"]

#: Largest answer accepted by default, in bytes after decompression
#: (``--violin-max-answer-mb``); far above any real image answer.
DEFAULT_MAX_ANSWER_BYTES = 64 * 2**20

#: Former name of :data:`DEFAULT_MAX_ANSWER_BYTES`.
MAX_BODY_BYTES = DEFAULT_MAX_ANSWER_BYTES

#: Bytes read from a non-2xx answer: enough for the server's message.
ERROR_BODY_BYTES = 64 * 1024

#: Answers larger than this are read and decoded :data:`LARGE_ANSWER_SLOTS`
#: at a time per process, so concurrency does not multiply their memory.
LARGE_ANSWER_BYTES = 4 * 2**20

#: How many large answers a process reads and decodes at once.
LARGE_ANSWER_SLOTS = 2

#: Encodings asked for and decoded (with a bound on the decoded size).
ACCEPT_ENCODING = "gzip, deflate"

_CHUNK = 1 << 16
_PIECE = 1 << 20  # largest piece one decompression step produces


class _BodyTooLarge(Exception):
    """Internal: ``(bytes, announced)``."""


class _Body:
    """The bytes of one answer while it is read.

    Small answers are a list of pieces. Past :data:`LARGE_ANSWER_BYTES`
    they move to one anonymous memory map of ``limit`` bytes (only the
    pages written are resident), given back to the system when closed:
    thousands of 64 KiB pieces freed by many threads would stay in glibc's
    per-thread arenas, and the peak would grow with the concurrency even
    though only :data:`LARGE_ANSWER_SLOTS` large answers are held at once.
    """

    __slots__ = ("limit", "pieces", "size", "map")

    def __init__(self, limit: int):
        self.limit = limit
        self.pieces: list[bytes] = []
        self.size = 0
        self.map: mmap.mmap | None = None

    def append(self, data: bytes) -> None:
        if self.map is None and self.size + len(data) > LARGE_ANSWER_BYTES:
            self.map = mmap.mmap(-1, max(self.limit, 1))
            for piece in self.pieces:
                self.map.write(piece)
            self.pieces = []
        if self.map is not None:
            self.map.write(data)
        else:
            self.pieces.append(data)
        self.size += len(data)

    def getvalue(self) -> bytes:
        if self.map is None:
            return b"".join(self.pieces)
        return self.map[: self.size]

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
            self.map = None
        self.pieces = []


class _Enough(Exception):
    """Internal: an error body was read as far as its message needs."""


class _BadEncoding(Exception):
    """Internal: ``(message, transient)``."""


class _Decoder:
    """Content-Encoding decoding whose output per call is bounded."""

    def __init__(self, encoding: str | None):
        enc = (encoding or "").strip().lower()
        self.encoding = enc
        self._first = True
        if enc in ("", "identity"):
            self._zlib = None
        elif enc in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS)
        else:
            raise _BadEncoding(
                f"answer uses Content-Encoding {truncate(enc, 40)!r}; accepted: gzip, deflate, identity",
                False,
            )

    @property
    def identity(self) -> bool:
        return self._zlib is None

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of ``data``, in pieces of at most :data:`_PIECE` bytes.

        A few kilobytes of a gzip bomb decode to gigabytes: the caller checks
        its limit between pieces, so no more than one piece past it is held.
        """
        if self._zlib is None:
            yield data
            return
        pending = data
        while True:
            try:
                out = self._zlib.decompress(pending, _PIECE)
            except zlib.error:
                if self._first and self.encoding == "deflate":  # raw deflate without zlib header
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._first = False
                    yield from self.feed(data)
                    return
                raise _BadEncoding(
                    f"answer could not be decompressed ({self.encoding} data is corrupt)", True
                ) from None
            self._first = False
            if out:
                yield out
            pending = self._zlib.unconsumed_tail
            if not pending and len(out) < _PIECE:
                return


# ------------------------------------------------------------------ large answers

_LARGE = threading.BoundedSemaphore(LARGE_ANSWER_SLOTS)


def hold_large(attempt: Attempt) -> None:
    """Take one of the process's large-answer slots (once per thread)."""
    if getattr(_local, "large", False):
        return
    while not _LARGE.acquire(timeout=WATCH_POLL):
        attempt.check()
    _local.large = True


def release_large() -> None:
    if getattr(_local, "large", False):
        _local.large = False
        _LARGE.release()



# ------------------------------------------------------------------------ reading


def read_body(response: requests.Response, attempt: Attempt, *, limit: int, cut: bool) -> bytes:
    """The decoded body, at most ``limit`` bytes.

    ``cut``: stop quietly at the limit (error bodies, read for their
    message); otherwise a larger body raises :class:`_BodyTooLarge`
    before more than ``limit`` bytes are held.
    """
    try:
        decoder = _Decoder(response.headers.get("Content-Encoding"))
    except _BadEncoding:
        if cut:
            return b""
        raise
    length = (response.headers.get("Content-Length") or "").strip()
    if not cut and length.isdigit() and decoder.identity:
        if int(length) > limit:
            raise _BodyTooLarge(int(length), True)
        if int(length) > LARGE_ANSWER_BYTES:
            hold_large(attempt)
    body = _Body(limit)
    total = 0
    raw = response.raw
    try:
        while True:
            attempt.check()
            data = raw.read(_CHUNK, decode_content=False)
            if not data:
                break
            try:
                for out in decoder.feed(data):
                    total += len(out)
                    if total > limit:
                        if cut:
                            body.append(out[: len(out) - (total - limit)])
                            raise _Enough()
                        raise _BodyTooLarge(total, False)
                    if total > LARGE_ANSWER_BYTES and not cut:
                        hold_large(attempt)
                    body.append(out)
            except _BadEncoding:
                if cut:
                    break
                raise
            except _Enough:
                break
        if attempt.fired:  # a body ended by the watchdog is no answer
            raise _Stopped(attempt.fired)
        return body.getvalue()
    finally:
        body.close()
