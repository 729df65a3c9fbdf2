"""The deadline of one attempt: a watchdog thread ends it when it passes or the run is cancelled.

requests' ``timeout`` bounds each socket operation, not the whole answer: a
server that sends one byte a second keeps a read alive for ever. So every
attempt is an :class:`Attempt` (its deadline, the run's cancel event and the
connections it uses) watched by one daemon thread (:class:`_Watchdog`) that
shuts the socket down at the deadline or on cancel; a blocked read in the
generation thread then ends at once. The body reader calls
:meth:`Attempt.check` between chunks.

Why hand-written: neither requests nor urllib3 has a deadline for a whole
answer (urllib3's ``Timeout(total=)`` bounds connecting plus the wait for a
read, and a trickling body keeps every read short), nor a cancel; requests'
hooks run once an answer has arrived, not while it is read. The
watchdog sees the sockets through urllib3's documented extension points:
connection classes (``ConnectionCls`` of a pool) and the pool classes of a
pool manager (``pool_classes_by_scheme``), mounted by :class:`WatchedAdapter`.
"""

from __future__ import annotations

import socket
import threading
import time

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = ["WATCH_POLL", "WATCHDOG", "Attempt", "WatchedAdapter", "state"]

#: Longest wait between two looks of the watchdog (and of slot waits) at deadlines and cancel.
WATCH_POLL = 0.05

#: The transport's per-thread state: ``attempt`` (the attempt in flight,
#: here), ``large`` (the bytes :mod:`.body`'s budget reserved), ``sent``, ``budget_end``,
#: ``depth`` and ``slot`` (:mod:`.client`'s sample scope).
state = threading.local()


class _Stopped(Exception):
    """Internal: the attempt's deadline passed or the run was cancelled."""


def _kill(conn) -> None:
    # http.client drops ``conn.sock`` once a "Connection: close" answer owns
    # the socket: the one kept at connect time is still the one being read
    sock = getattr(conn, "sock", None) or getattr(conn, "_violin_sock", None)
    if sock is None:
        return
    try:
        # the plain socket's shutdown, also for TLS sockets: a blocked read in
        # another thread ends at once
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, TypeError, ValueError):
        pass


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
        # requests follows redirects one hop at a time and gives each hop's
        # connection back to the pool before the next: only the newest
        # connection belongs to this attempt
        with self._lock:
            self.conns = [conn]
            if self.fired:
                _kill(conn)

    def fire(self, why: str) -> None:
        # under the lock: once finish() returned, the connections (back in
        # the pool, maybe serving another thread) are never touched
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
                    self._cond.wait()
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

