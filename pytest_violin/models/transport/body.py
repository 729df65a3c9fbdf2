"""The body of an answer: its byte limit, its content decoding, and the large-answer budget.

* :func:`read_body`: the decoded body of a streamed :class:`requests.Response`,
  refused before more than ``limit`` bytes are held (``Content-Length``
  first, then while streaming, after decompression), or cut quietly at the
  limit for error bodies (read only as far as a message needs:
  :data:`ERROR_BODY_BYTES`). The attempt's deadline (:mod:`.deadline`) is
  checked between chunks.
* :class:`_Decoder`: ``gzip`` / ``deflate`` decoding whose output per step is
  bounded (a gzip bomb is stopped one piece past the limit).
* Answers over :data:`LARGE_ANSWER_BYTES` are read and decoded within one
  process-wide byte budget, :data:`LARGE_ANSWER_BUDGET` (:func:`hold_large`,
  :func:`release_large`), in one anonymous memory map each (:class:`_Body`):
  many answers of a few megabytes at once, the largest the cap allows one
  at a time, whatever ``--violin-concurrency``.

Why hand-written: requests and urllib3 have no limit on an answer's size,
and the bound on what one decoding step may produce must hold with every
urllib3 release the project supports (1.26 and 2.x), so the raw bytes are
read (``decode_content=False``) and :mod:`zlib`'s ``max_length`` bounds each
step here.
"""

from __future__ import annotations

import mmap
import threading
import time
import zlib
from typing import Iterator

import requests

from .deadline import WATCH_POLL, Attempt, _Stopped
from .deadline import state as _local
from .text import truncate

__all__ = ["ACCEPT_ENCODING", "DEFAULT_MAX_ANSWER_BYTES", "ERROR_BODY_BYTES", "LARGE_ANSWER_BYTES",
           "LARGE_ANSWER_BUDGET", "MAX_BODY_BYTES", "hold_large", "read_body", "release_large"]

#: Largest answer accepted by default, in bytes after decompression
#: (``--violin-max-answer-mb``); far above any real image answer.
DEFAULT_MAX_ANSWER_BYTES = 64 * 2**20

#: Former name of :data:`DEFAULT_MAX_ANSWER_BYTES`.
MAX_BODY_BYTES = DEFAULT_MAX_ANSWER_BYTES

#: Bytes read from a non-2xx answer: enough for the server's message.
ERROR_BODY_BYTES = 64 * 1024

#: Answers larger than this are read and decoded within :data:`LARGE_ANSWER_BUDGET`,
#: so concurrency does not multiply their memory.
LARGE_ANSWER_BYTES = 4 * 2**20

#: Bytes of large answers a process reads and decodes at once: each reserves its
#: ``Content-Length`` (the answer cap when the length is unknown or compressed)
#: from the first byte read to the end of its sample, decoding included. One
#: answer near the default cap at a time (two of them, with the decode of one,
#: made a run at concurrency 32 peak near 1 GB), sixteen of 4 MiB.
LARGE_ANSWER_BUDGET = DEFAULT_MAX_ANSWER_BYTES

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
    though :data:`LARGE_ANSWER_BUDGET` bounds the large answers held at once.
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

class _AnswerBudget:
    """Bytes of large answers held at once in the process (a counting semaphore in bytes).

    A reservation over the whole budget is cut to it: that answer is held alone.
    """

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.used = 0
        self.peak = 0  # most ever reserved at once (for tests)
        self._cond = threading.Condition()

    def acquire(self, nbytes: int, attempt: Attempt) -> int:
        """Reserve ``nbytes`` (cut to the capacity); wait while it is taken.

        A cancel of the run ends the wait (:class:`_Stopped`). The time spent
        waiting moves the attempt's deadline on: the endpoint's time-out
        measures the endpoint, not this process's queue for memory.
        """
        n = max(1, min(int(nbytes), self.capacity))
        with self._cond:
            last = time.monotonic()
            while self.used + n > self.capacity:
                self._cond.wait(WATCH_POLL)
                now = time.monotonic()
                # moved on while waiting, a look of the watchdog ahead (it reads the deadline anew)
                attempt.deadline = max(attempt.deadline + now - last, now + 2 * WATCH_POLL)
                last = now
                if attempt.cancel is not None and attempt.cancel.is_set():
                    attempt.check()  # fires "cancel" and raises
            self.used += n
            self.peak = max(self.peak, self.used)
        return n

    def release(self, nbytes: int) -> None:
        with self._cond:
            self.used -= nbytes
            self._cond.notify_all()


_LARGE = _AnswerBudget(LARGE_ANSWER_BUDGET)


def hold_large(attempt: Attempt, nbytes: int) -> None:
    """Reserve ``nbytes`` of the process's large-answer budget for this thread's sample.

    Held until :func:`release_large` (the end of the sample). A thread that
    holds less than ``nbytes`` (a small submit answer, then a large image
    download) gives its reservation back and waits for the larger one, so it
    never waits while holding part of the budget.
    """
    held = getattr(_local, "large", 0)
    if held >= min(int(nbytes), _LARGE.capacity):
        return
    release_large()
    _local.large = _LARGE.acquire(nbytes, attempt)


def release_large() -> None:
    held = getattr(_local, "large", 0)
    if held:
        _local.large = 0
        _LARGE.release(held)


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
    # what this answer may hold: its length, or the cap when unknown or compressed
    expected = int(length) if length.isdigit() and decoder.identity else limit
    if not cut and length.isdigit() and decoder.identity:
        if int(length) > limit:
            raise _BodyTooLarge(int(length), True)
        if int(length) > LARGE_ANSWER_BYTES:
            hold_large(attempt, expected)
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
                        hold_large(attempt, max(expected, total))
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
