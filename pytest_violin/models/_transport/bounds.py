"""What bounds one attempt and one sample: the deadline, the byte caps, the rate and the samples in flight.

* :class:`Attempt` and its watchdog: requests' ``timeout`` bounds each socket operation, not the whole answer
  (a server sending a byte a second keeps a read alive for ever), and urllib3's ``Timeout(total=)`` does not
  bound a trickling body; so one daemon thread shuts an attempt's socket down at its deadline or on cancel,
  seeing the sockets through urllib3's connection and pool classes (:class:`WatchedAdapter`).
* :func:`read_body`: refused before more than ``limit`` bytes are held (``Content-Length``, then while
  streaming, after decompression); gzip and deflate are decoded here with :mod:`zlib`'s ``max_length`` (raw
  bytes read, ``decode_content=False``) so a bomb stops one piece past the limit with every supported urllib3.
  Answers over :data:`LARGE_ANSWER_BYTES` share one process-wide budget (:data:`LARGE_ANSWER_BUDGET`), each in
  an anonymous memory map.
* :class:`RateLimiter` (``--violin-rate``): request starts spaced ``1/rate`` apart, per process (with ``-n N``
  divide the rate by N); downloads from another origin take no token. :class:`AdaptiveLimit`: samples in
  flight, lowered on a 429 to the others then in flight and grown by ``1/limit`` per success up to
  ``--violin-concurrency``.
* :func:`sample_scope`: one sample's requests share one time budget, a large answer's reservation and one
  place of the limit.
"""

from __future__ import annotations

import contextlib
import mmap
import re
import socket
import threading
import time
import zlib
from typing import Iterator

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from ...errors import GenerationCancelled, ModelSpecError
from .answers import truncate


#: Longest wait between two looks of the watchdog (and of slot waits) at deadlines and cancel.
WATCH_POLL = 0.05
#: Seconds the watchdog thread stays idle before it ends (the next attempt starts another).
WATCH_IDLE_EXIT = 1.0

#: The transport's per-thread state: ``attempt`` (the attempt in flight, here), ``large`` (the bytes
#: :mod:`.body`'s budget reserved), ``sent``, ``budget_end``, ``depth`` and ``slot`` (:mod:`.client`'s sample
#: scope).
state = threading.local()
_local = state


class _Stopped(Exception):
    """Internal: the attempt's deadline passed or the run was cancelled."""


def _kill(conn) -> None:
    # http.client drops ``conn.sock`` once a "Connection: close" answer owns the socket: the one kept at
    # connect time is still the one being read
    sock = getattr(conn, "sock", None) or getattr(conn, "_violin_sock", None)
    if sock is None:
        return
    # the plain socket's shutdown, also for TLS sockets: a blocked read in another thread ends at once
    with contextlib.suppress(OSError, TypeError, ValueError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class Attempt:
    """One attempt's deadline, cancel event and connections."""

    __slots__ = ("deadline", "cancel", "conns", "fired", "done", "_lock")

    def __init__(self, deadline: float, cancel: threading.Event | None):
        self.deadline = deadline
        self.cancel = cancel
        self.conns: list = []
        self.fired: str | None = None
        self.done = False
        self._lock = threading.Lock()

    def add(self, conn) -> None:
        # requests follows redirects one hop at a time and gives each hop's connection back to the pool before
        # the next: only the newest connection belongs to this attempt
        with self._lock:
            self.conns = [conn]
            if self.fired:
                _kill(conn)

    def fire(self, why: str) -> None:
        # under the lock: once finish() returned, the connections (back in the pool, maybe serving another
        # thread) are never touched
        with self._lock:
            if self.fired or self.done:
                return
            self.fired = why
            for conn in self.conns:
                _kill(conn)

    def finish(self) -> None:
        """The answer is read: the watchdog must leave its connections alone."""
        with self._lock:
            self.done = True

    def poll(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            self.fire("cancel")
        elif time.monotonic() >= self.deadline:
            self.fire("deadline")

    def check(self) -> None:
        """Raise :class:`_Stopped` when the deadline passed or the run was cancelled."""
        self.poll()
        if self.fired:
            raise _Stopped(self.fired)


class _Watchdog:
    """One daemon thread that ends attempts at their deadline or on cancel."""

    def __init__(self):
        self._active: set[Attempt] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, attempt: Attempt) -> None:
        with self._cond:
            self._active.add(attempt)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="violin-http-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()

    def remove(self, attempt: Attempt) -> None:
        with self._cond:
            self._active.discard(attempt)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._active:
                    # idle: the thread ends, so a finished or interrupted run leaves none behind;
                    # add() starts a new one (the check and the exit are under the same lock)
                    if not self._cond.wait(WATCH_IDLE_EXIT) and not self._active:
                        self._thread = None
                        return
                attempts = list(self._active)
                wait = min(a.deadline for a in attempts) - time.monotonic()
                if wait > 0:
                    self._cond.wait(min(wait, WATCH_POLL))
            for attempt in attempts:
                attempt.poll()
                if attempt.fired:
                    self.remove(attempt)


WATCHDOG = _Watchdog()


def _watch(conn) -> None:
    attempt = getattr(state, "attempt", None)
    if attempt is not None:
        attempt.add(conn)


class _Watched:
    """Mixin for urllib3 connections: the attempt's watchdog sees their socket."""

    def connect(self):
        super().connect()
        self._violin_sock = self.sock

    def request(self, *args, **kwargs):
        _watch(self)
        return super().request(*args, **kwargs)

    if hasattr(HTTPConnection, "request_chunked"):  # urllib3 1.26
        def request_chunked(self, *args, **kwargs):
            _watch(self)
            return super().request_chunked(*args, **kwargs)


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOL_CLASSES = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class WatchedAdapter(HTTPAdapter):
    """An :class:`HTTPAdapter` whose connections the watchdog can shut down."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOL_CLASSES)

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = dict(_POOL_CLASSES)
        return manager


#: Largest answer accepted by default, in bytes after decompression (``--violin-max-answer-mb``); far above
#: any real image answer.
DEFAULT_MAX_ANSWER_BYTES = 64 * 2**20

#: Bytes read from a non-2xx answer: enough for the server's message.
ERROR_BODY_BYTES = 64 * 1024

#: Answers larger than this are read and decoded within :data:`LARGE_ANSWER_BUDGET`, so concurrency does not
#: multiply their memory.
LARGE_ANSWER_BYTES = 4 * 2**20

#: Bytes of large answers a process reads and decodes at once: each reserves its ``Content-Length`` (the
#: answer cap when the length is unknown or compressed) from the first byte read to the end of its sample,
#: decoding included. One answer near the default cap at a time (two of them, with the decode of one, made a
#: run at concurrency 32 peak near 1 GB), sixteen of 4 MiB.
LARGE_ANSWER_BUDGET = DEFAULT_MAX_ANSWER_BYTES

#: Encodings asked for and decoded (with a bound on the decoded size).
ACCEPT_ENCODING = "gzip, deflate"

_CHUNK = 1 << 16
_PIECE = 1 << 20  # largest piece one decompression step produces


class _BodyTooLarge(Exception):
    """Internal: ``(bytes, announced)``."""


class _Body:
    """The bytes of one answer while it is read: pieces, then past :data:`LARGE_ANSWER_BYTES` one anonymous
    memory map given back to the system when closed (64 KiB pieces freed by many threads stay in glibc's
    per-thread arenas, and the peak would grow with the concurrency).
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

        A few kilobytes of a gzip bomb decode to gigabytes: the caller checks its limit between pieces, so no
        more than one piece past it is held.
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

        A cancel of the run ends the wait (:class:`_Stopped`). The time spent waiting moves the attempt's
        deadline on: the endpoint's time-out measures the endpoint, not this process's queue for memory.
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
    """Reserve ``nbytes`` of the large-answer budget for this thread's sample, until :func:`release_large`;
    a thread holding less gives it back before it waits, so it never waits holding part of the budget.
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

    ``cut``: stop quietly at the limit (error bodies, read for their message); otherwise a larger body raises
    :class:`_BodyTooLarge` before more than ``limit`` bytes are held.
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
    try:
        _stream(body, response.raw, decoder, attempt, limit=limit, cut=cut, expected=expected)
        if attempt.fired:  # a body ended by the watchdog is no answer
            raise _Stopped(attempt.fired)
        return body.getvalue()
    finally:
        body.close()


def _stream(body: _Body, raw, decoder: _Decoder, attempt: Attempt, *, limit: int, cut: bool,
            expected: int) -> None:
    """Decode ``raw`` into ``body``; a ``cut`` body ends quietly at the limit or at a bad encoding."""
    total = 0
    while True:
        attempt.check()
        data = raw.read(_CHUNK, decode_content=False)
        if not data:
            return
        try:
            for out in decoder.feed(data):
                total += len(out)
                if total > limit:
                    if cut:
                        body.append(out[: len(out) - (total - limit)])
                        return
                    raise _BodyTooLarge(total, False)
                if total > LARGE_ANSWER_BYTES and not cut:
                    hold_large(attempt, max(expected, total))
                body.append(out)
        except _BadEncoding:
            if cut:
                return
            raise


_RATE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*/\s*(s|sec|second|min|minute)\s*$", re.IGNORECASE)
_UNIT = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0}
#: Largest accepted rate, in requests per second.
MAX_RATE = 100_000.0
_TICK = 0.05  # longest wait between checks of the cancel event and the deadline


def parse_rate(value) -> float:
    """``"N/s"`` or ``"N/min"`` (or a number of requests per second) as requests per second.

    Raises :class:`ModelSpecError`: for anything else, naming the value and the accepted forms.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        rate = float(value)
    else:
        match = _RATE.match(str(value))
        if not match:
            raise ModelSpecError(
                f"rate {str(value)[:40]!r} is invalid; accepted: N/s or N/min with N > 0, e.g. 5/s or 300/min")
        rate = float(match.group(1)) / _UNIT[match.group(2).lower()]
    if not (0 < rate <= MAX_RATE):
        raise ModelSpecError(
            f"rate {value!r} is invalid; accepted: more than 0 and at most {MAX_RATE:g} requests per second")
    return rate


class RateLimiter:
    """Request starts at most ``rate`` per second, evenly spaced, for all threads (``clock`` for tests)."""

    def __init__(self, rate: float, *, clock=time.monotonic):
        self.rate = float(rate)
        self.interval = 1.0 / self.rate
        self._clock = clock
        self._next = -float("inf")  # when the next request may start
        self._lock = threading.Lock()
        self.waited = 0.0  # total seconds threads waited for a token (for reports and benchmarks)

    def reserve(self, deadline: float) -> float | None:
        """Book the next start; return how long to wait, or None when it falls after ``deadline``."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            if start > deadline:
                return None
            self._next = start + self.interval
            self.waited += start - now
            return start - now

    def take(self, cancel: threading.Event, deadline: float) -> bool:
        """Wait for a token; False when ``deadline`` would pass first or the run is cancelled."""
        wait = self.reserve(deadline)
        if wait is None:
            return False
        if wait > 0 and cancel.wait(wait):
            return False
        return not cancel.is_set()


class AdaptiveLimit:
    """Samples in flight: at most ``maximum``, lowered on 429 and grown back on success.

    * ``maximum``: ``--violin-concurrency``: the limit never exceeds it.
    """

    def __init__(self, maximum: int):
        self.maximum = max(1, int(maximum))
        self.limit = float(self.maximum)
        self.active = 0
        self.overloads = 0  # 429 answers seen
        self.lowest = float(self.maximum)
        self._urgent = 0  # samples waiting to retry after a 429 (they go first)
        self._cond = threading.Condition()

    def acquire(self, cancel: threading.Event, deadline: float | None = None, *, urgent: bool = False) -> bool:
        """Take a place; False when the run is cancelled or ``deadline`` passes first.

        ``urgent``: a sample that gave its place back on a 429 and whose time budget is running; it goes
        before samples that have not started.
        """
        with self._cond:
            if urgent:
                self._urgent += 1
            try:
                while self.active >= max(1, int(self.limit)) or (not urgent and self._urgent):
                    if cancel.is_set():
                        return False
                    left = _TICK if deadline is None else min(_TICK, deadline - time.monotonic())
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                if cancel.is_set():
                    return False
                self.active += 1
                return True
            finally:
                if urgent:
                    self._urgent -= 1

    def release(self) -> None:
        """Give a place back."""
        with self._cond:
            self.active = max(0, self.active - 1)
            self._cond.notify_all()  # an urgent waiter must not miss it

    def overloaded(self) -> None:
        """A sample holding a place got 429: the endpoint holds no more than the others in flight."""
        with self._cond:
            self.overloads += 1
            self.limit = max(1.0, min(self.limit, float(self.active - 1)))
            self.lowest = min(self.lowest, self.limit)

    def succeeded(self) -> None:
        """A sample ended without error: one more place per round of samples."""
        with self._cond:
            if self.limit < self.maximum:
                self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
                self._cond.notify_all()


def renew_budget(budget: float) -> None:
    """Start this thread's sample budget (``budget`` seconds) again, inside a sample."""
    if getattr(_local, "budget_end", None) is not None:
        _local.budget_end = time.monotonic() + budget


def budget_left(budget: float) -> float:
    """Seconds left in this thread's sample budget (``budget``, a whole one, outside a sample)."""
    end = getattr(_local, "budget_end", None)
    return budget if end is None else end - time.monotonic()


@contextlib.contextmanager
def sample_scope(limit: AdaptiveLimit | None, cancel: threading.Event, budget: float) -> Iterator[None]:
    """The scope of one sample's requests (see :meth:`.client.HttpClient.sample`).

    The outermost scope waits, before its budget starts, for a place in ``limit`` (while as many samples as it
    allows are in flight) and gives it back at the end; a sample that ends without error lets the limit grow.
    """
    outer = getattr(_local, "budget_end", None)
    holder = None
    if outer is None and limit is not None:
        if not limit.acquire(cancel):
            raise GenerationCancelled("sample cancelled before it started: the run was interrupted")
        holder = limit
        _local.slot = limit
    if outer is None:
        _local.budget_end = time.monotonic() + budget
    _local.depth = getattr(_local, "depth", 0) + 1
    ok = False
    try:
        yield
        ok = True
    finally:
        _local.depth -= 1
        if outer is None:
            _local.budget_end = None
        if _local.depth == 0:
            release_large()
        if holder is not None:
            if getattr(_local, "slot", None) is holder:
                holder.release()
            _local.slot = None
            if ok:
                holder.succeeded()
