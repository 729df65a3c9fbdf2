"""HTTP client shared by the model adapters: session, deadlines, limits and the retry loop.

* :func:`make_session`: one :class:`requests.Session` per adapter with a
  connection pool sized by the concurrency, no urllib3 retries, and what the
  environment decides (proxies, ``no_proxy``, CA bundle, ``~/.netrc``)
  resolved once, when it is built (see :class:`EnvironmentSettings`):
  generation threads never read ``os.environ``.
* :class:`RetryPolicy` and :class:`HttpClient`: our own retry loop
  (urllib3's ``Retry`` does not retry ``POST`` by default) with
  exponential backoff and full jitter on connection errors, timeouts, 408,
  429 and 5xx, honouring ``Retry-After`` (seconds or an HTTP date, capped).
  Other 4xx answers are final.
* :func:`client_from_options`: an :class:`HttpClient` from
  :class:`~pytest_violin.models.AdapterOptions`.
* :mod:`~pytest_violin.models.transport.limits`: ``--violin-rate`` (a
  token bucket on request starts shared by the process's threads) and the
  adaptive limit on samples in flight (lowered on 429, grown on success),
  both held by each :class:`HttpClient`.

Bounds (see docs/models.md, "Timeouts and retries" and "Limits"):

* time: the timeout is a deadline for the whole attempt (connecting,
  headers and body; a watchdog thread shuts the socket down when it passes),
  and one sample spends at most :data:`SAMPLE_BUDGET_FACTOR` times the
  timeout across all its attempts and retry waits;
* bytes: an answer over ``max_answer_bytes`` (after decompression; default
  :data:`DEFAULT_MAX_ANSWER_BYTES`) is refused before reading past the
  limit (``Content-Length`` first, then while streaming); error bodies are
  read only as far as a message needs (:data:`ERROR_BODY_BYTES`); answers
  over :data:`LARGE_ANSWER_BYTES` are read and decoded at most
  :data:`LARGE_ANSWER_SLOTS` at a time per process;
* interrupts: the run's cancel event stops new attempts and retry waits at
  once and aborts in-flight attempts (:class:`GenerationCancelled`).

Headers, ``${ENV}`` expansion and URL credentials are in
:mod:`pytest_violin.models.transport.credentials`; finding the image in an answer is in
:mod:`pytest_violin.models.transport.decode`.

Every failure is a :class:`~pytest_violin.errors.GenerationError` with a
one-line, redacted reason, the HTTP status and the number of attempts.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import email.utils
import json
import logging
import mmap
import netrc as _netrc
import os
import random
import socket
import threading
import time
import urllib.request
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from ... import __version__
from .credentials import PUBLIC_HEADERS, parse_headers
from .decode import MESSAGE_LIMIT, server_message, truncate
from .limits import AdaptiveLimit, RateLimiter, parse_rate
from .origins import Origins, UrlRefused, guard, origin_or_none, resolve
from ...errors import GenerationCancelled, GenerationError, GenerationUnjudged, ModelSpecError
from .outcomes import error_class
from ...redaction import install_log_redaction, redact, redact_url, register_secret

__all__ = [
    "DEFAULT_MAX_ANSWER_BYTES",
    "ERROR_BODY_BYTES",
    "LARGE_ANSWER_BYTES",
    "LARGE_ANSWER_SLOTS",
    "MAX_BODY_BYTES",
    "SAMPLE_BUDGET_FACTOR",
    "EnvironmentSettings",
    "HttpClient",
    "HttpResult",
    "RetryPolicy",
    "client_from_options",
    "is_transient_status",
    "make_session",
    "parse_retry_after",
    "thread_requests",
]

log = logging.getLogger("pytest_violin.http")

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

#: One sample spends at most this many times the timeout in all its
#: attempts and retry waits together.
SAMPLE_BUDGET_FACTOR = 2

#: Encodings asked for and decoded (with a bound on the decoded size).
ACCEPT_ENCODING = "gzip, deflate"

USER_AGENT = f"pytest-violin/{__version__}"

_CHUNK = 1 << 16
_PIECE = 1 << 20  # largest piece one decompression step produces
_WATCH_POLL = 0.05


# ------------------------------------------------------------------ environment


def _register_url_password(url: str | None) -> None:
    if not url or "@" not in url:
        return
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        register_secret(parts.password)
        if parts.username and parts.password:
            register_secret(f"{parts.username}:{parts.password}", public_prefix=len(parts.username) + 1)
    except ValueError:
        pass


def _ipv4_in(host: str, entry: str) -> bool:
    from requests.utils import address_in_network, is_ipv4_address, is_valid_cidr

    if not is_ipv4_address(host):
        return False
    if is_valid_cidr(entry):
        return address_in_network(host, entry)
    return host == entry


@dataclass(frozen=True)
class EnvironmentSettings:
    """What the environment decides for HTTP, read once (never per request).

    requests with ``trust_env=True`` reads proxies, ``no_proxy``, the CA
    bundle and ``~/.netrc`` from ``os.environ`` on every request, in the
    generation threads, while pytest rewrites ``PYTEST_CURRENT_TEST`` in
    the main thread: iterating a mapping that changes size raises. The
    session is built with ``trust_env=False`` and these settings instead.

    Attributes
    ----------
    proxies : Mapping
        ``urllib.request.getproxies()`` at build time (``http``, ``https``,
        ``all``; ``no`` is the ``no_proxy`` list).
    ca_bundle : str or None
        ``REQUESTS_CA_BUNDLE`` or else ``CURL_CA_BUNDLE``.
    netrc : netrc.netrc or None
        The parsed ``NETRC`` / ``~/.netrc`` file; its passwords are
        registered as secrets.
    """

    proxies: Mapping[str, str] = field(default_factory=dict)
    ca_bundle: str | None = None
    netrc: Any = None

    @classmethod
    def capture(cls, environ: Mapping[str, str] | None = None) -> "EnvironmentSettings":
        """Read the settings from ``environ`` (default: the process environment).

        Call it in the main thread before generation threads start.
        """
        env = dict(os.environ if environ is None else environ)
        if environ is None:
            proxies = dict(urllib.request.getproxies())
        else:
            proxies = {}
            for name, value in env.items():
                low = name.lower()
                if value and low.endswith("_proxy"):
                    proxies[low[:-6]] = value
            for name, value in env.items():  # lower case wins, as in urllib
                if value and name.endswith("_proxy"):
                    proxies[name[:-6]] = value
        for value in proxies.values():
            _register_url_password(value)
        ca_bundle = env.get("REQUESTS_CA_BUNDLE") or env.get("CURL_CA_BUNDLE") or None
        return cls(proxies=proxies, ca_bundle=ca_bundle, netrc=_read_netrc(env))

    def bypass(self, url: str) -> bool:
        """Whether ``url`` is in ``no_proxy`` (requests' rules, no environment read)."""
        no_proxy = self.proxies.get("no")
        if not no_proxy:
            return False
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError:
            return False
        if not host:
            return False
        entries = [e for e in no_proxy.replace(" ", "").split(",") if e]
        host_port = f"{host}:{port}" if port else host
        for entry in entries:
            if _ipv4_in(host, entry) or host.endswith(entry) or host_port.endswith(entry):
                return True
        return bool(urllib.request.proxy_bypass_environment(host, {"no": no_proxy}))

    def proxies_for(self, url: str) -> dict[str, str]:
        """The ``proxies`` argument for a request to ``url``."""
        if not self.proxies or self.bypass(url):
            return {}
        scheme = urlsplit(url).scheme.lower()
        proxy = self.proxies.get(scheme) or self.proxies.get("all")
        return {scheme: proxy} if proxy else {}

    def netrc_auth(self, url: str) -> tuple[str, str] | None:
        """``(login, password)`` of the netrc entry for the host of ``url``."""
        if self.netrc is None:
            return None
        try:
            host = urlsplit(url).hostname
        except ValueError:
            return None
        if not host:
            return None
        entry = self.netrc.authenticators(host)
        if not entry:
            return None
        login = entry[0] or entry[1]
        return (login or "", entry[2] or "")


def _read_netrc(env: Mapping[str, str]):
    candidates = [env["NETRC"]] if env.get("NETRC") else ["~/.netrc", "~/_netrc"]
    for name in candidates:
        try:
            path = os.path.expanduser(name)
        except KeyError:  # no home directory
            return None
        if not os.path.isfile(path):
            continue
        try:
            parsed = _netrc.netrc(path)
        except (_netrc.NetrcParseError, OSError, UnicodeDecodeError):
            return None
        for login, account, password in parsed.hosts.values():
            register_secret(password)
            if login and password:
                register_secret(f"{login}:{password}", public_prefix=len(login) + 1)
        return parsed
    return None


# --------------------------------------------------------------------- watchdog


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


class _Attempt:
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
        self._active: set[_Attempt] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, attempt: _Attempt) -> None:
        with self._cond:
            self._active.add(attempt)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="violin-http-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()

    def remove(self, attempt: _Attempt) -> None:
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
                    self._cond.wait(min(wait, _WATCH_POLL))
            for attempt in attempts:
                attempt.poll()
                if attempt.fired:
                    self.remove(attempt)


_WATCHDOG = _Watchdog()
_local = threading.local()

def thread_requests() -> int:
    """Requests every :class:`HttpClient` has sent from the calling thread so far.

    A caller that reads it before and after an adapter's ``generate`` learns
    whether that call sent anything (the run's call count gives back a call
    cancelled before its first request).
    """
    return getattr(_local, "sent", 0)


def _watch(conn) -> None:
    attempt = getattr(_local, "attempt", None)
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


class _WatchedAdapter(HTTPAdapter):
    """An :class:`HTTPAdapter` whose connections the watchdog can shut down."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOL_CLASSES)

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = dict(_POOL_CLASSES)
        return manager


# ---------------------------------------------------------------------- session


def _origin(url: str):
    """``(scheme, host, port)`` of ``url`` by :mod:`.origins`' rule; ``None`` for a refused URL."""
    return origin_or_none(url)


class _Session(requests.Session):
    """A session that never reads the environment and keeps credentials home.

    * Proxies, CA bundle and netrc come from :class:`EnvironmentSettings`
      captured when it was built (``trust_env`` is off).
    * On a redirect that leaves the origin (scheme, host, port), every
      credential header (``Authorization``, ``Proxy-Authorization``,
      ``Cookie`` and each configured header but ``Accept``,
      ``Content-Type`` and the like) and Basic auth are dropped.
    * Every request it sends, redirect hops included, passes
      :func:`.origins.guard` with the prepared URL (see :meth:`send`).
    """

    def __init__(self, env: EnvironmentSettings):
        super().__init__()
        self.trust_env = False
        self.env = env
        self.origins = Origins()  # the HttpClient names (or learns) them
        self.credential_headers: set[str] = {"Authorization", "Proxy-Authorization", "Cookie"}
        if env.ca_bundle:
            self.verify = env.ca_bundle

    def request(self, method, url, *args, **kwargs):  # noqa: D102 - requests API
        if kwargs.get("proxies") is None:
            kwargs["proxies"] = self.env.proxies_for(url)
        if self.auth is None and kwargs.get("auth") is None and "Authorization" not in self.headers:
            netrc_auth = self.env.netrc_auth(url)
            if netrc_auth is not None:
                kwargs["auth"] = netrc_auth
        return super().request(method, url, *args, **kwargs)

    def send(self, request, **kwargs):  # noqa: D102 - requests API
        # the one place every request passes, redirect hops included, with the
        # URL requests connects with: refused URLs never leave, and an origin
        # not named gets no credential of ours
        origin = guard(request.url, self.origins, body=None)
        if self.origins and origin not in self.origins:
            self._drop_credentials(request)
            guard(request.url, self.origins, body=request.body)
        return super().send(request, **kwargs)

    def get_redirect_target(self, resp):  # noqa: D102 - requests API
        target = super().get_redirect_target(resp)
        if target is not None:
            try:  # as the server wrote it: requests decodes %31 in a host and drops tabs later
                resolve(target, resp.url, what="redirect to")
            except UrlRefused:
                resp.close()
                raise
        return target

    def _drop_credentials(self, request) -> None:
        from requests.auth import _basic_auth_str
        from ...redaction import contains_secret

        netrc_auth = self.env.netrc_auth(request.url)
        netrc_header = _basic_auth_str(*netrc_auth) if netrc_auth else None
        drop = {name.lower() for name in self.credential_headers}
        for name in list(request.headers):
            value = request.headers[name]
            if value == netrc_header and name.lower() == "authorization":
                continue  # the user's own ~/.netrc entry for this very host
            if name.lower() in drop or contains_secret(str(value)):
                del request.headers[name]

    def rebuild_auth(self, prepared_request, response):  # noqa: D102 - requests API
        original = response.request.url
        if _origin(original) is None or _origin(original) != _origin(prepared_request.url):
            drop = {name.lower() for name in self.credential_headers}
            for name in [n for n in prepared_request.headers if n.lower() in drop]:
                del prepared_request.headers[name]
            new_auth = self.env.netrc_auth(prepared_request.url)
            if new_auth is not None:
                prepared_request.prepare_auth(new_auth)

    def rebuild_proxies(self, prepared_request, proxies):  # noqa: D102 - requests API
        prepared_request.headers.pop("Proxy-Authorization", None)
        return self.env.proxies_for(prepared_request.url)


def make_session(concurrency: int = 4, headers: Mapping[str, str] | None = None, *,
                 env: EnvironmentSettings | None = None) -> requests.Session:
    """A :class:`requests.Session` whose pool holds ``concurrency`` connections.

    Parameters
    ----------
    concurrency : int
        Requests the runner keeps in flight; the pool keeps that many
        connections (plus slack for image downloads) alive per host.
    headers : Mapping, optional
        Headers sent with every request.
    env : EnvironmentSettings, optional
        Proxies, CA bundle and netrc (default: captured now, from
        ``os.environ``; call this in the main thread).

    Returns
    -------
    requests.Session
        With urllib3 retries disabled (:class:`HttpClient` retries) and
        ``trust_env`` off.
    """
    size = max(int(concurrency), 1) + 2
    session = _Session(env if env is not None else EnvironmentSettings.capture())
    adapter = _WatchedAdapter(pool_connections=4, pool_maxsize=size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = USER_AGENT
    session.headers["Accept-Encoding"] = ACCEPT_ENCODING
    if headers:
        session.headers.update(headers)
        session.credential_headers |= {n for n in headers if n.lower() not in PUBLIC_HEADERS}
    # urllib3 logs every request line at DEBUG ("POST /gen?key=... HTTP/1.1"):
    # redact records of the HTTP stack before any handler sees them
    install_log_redaction()
    return session


# ------------------------------------------------------------------------ retries


def is_transient_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying (408, 429 and 5xx)."""
    return status in (408, 429) or 500 <= status <= 599


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header.

    Parameters
    ----------
    value : str or None
        Delta seconds (``"3"``, ``"1.5"``) or an HTTP date.
    now : float, optional
        The current POSIX time (default :func:`time.time`).

    Returns
    -------
    float or None
        Non-negative seconds, or ``None`` for a missing or unreadable value.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        if when.tzinfo is None:
            # asctime dates ("Sun Nov  6 08:49:37 1994") and "-0000" carry no
            # zone; HTTP dates are always GMT, never the machine's local time
            when = when.replace(tzinfo=_dt.timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN / inf
        return None
    return max(seconds, 0.0)


@dataclass
class RetryPolicy:
    """How often and how long to wait between attempts.

    Parameters
    ----------
    retries : int
        Retries after the first attempt (so ``retries + 1`` attempts at most).
    backoff_base : float
        Seconds; the n-th retry waits a uniform random time in
        ``[0, min(backoff_cap, backoff_base * 2**n)]`` ("full jitter").
    backoff_cap : float
        Longest backoff in seconds.
    retry_after_cap : float
        Longest wait a server's ``Retry-After`` can impose, in seconds.
    sleep : callable, optional
        ``sleep(seconds)``, injectable for tests; by default the client
        waits on the run's cancel event, so an interrupt ends the wait.
    rng : callable
        ``rng() -> float in [0, 1)``; injectable for tests.
    """

    retries: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    retry_after_cap: float = 60.0
    sleep: Callable[[float], None] | None = None
    rng: Callable[[], float] = random.random

    def __post_init__(self):
        if int(self.retries) != self.retries or self.retries < 0:
            raise ModelSpecError(f"retries must be an integer >= 0, got {self.retries!r}")
        self.retries = int(self.retries)

    def delay(self, retry_index: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry_index`` (0-based).

        A server's ``Retry-After`` wins (capped at ``retry_after_cap``);
        otherwise exponential backoff with full jitter.
        """
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap)
        ceiling = min(self.backoff_cap, self.backoff_base * (2.0**retry_index))
        return ceiling * self.rng()


# ----------------------------------------------------------------------- results


@dataclass
class HttpResult:
    """A successful (2xx) HTTP exchange, body fully read.

    Attributes
    ----------
    status : int
    headers : Mapping
        Case-insensitive response headers.
    content : bytes
        The body, decompressed (at most ``max_answer_bytes``).
    url : str
        The final URL (after redirects).
    attempts : int
        Attempts it took.
    """

    status: int
    headers: Mapping[str, str]
    content: bytes
    url: str
    attempts: int = 1
    elapsed: float = field(default=0.0)

    @property
    def content_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()


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


def _describe_exception(exc: BaseException) -> str:
    text = str(exc)
    checks = (
        ("Connection refused", "connection refused"),
        ("RemoteDisconnected", "server closed the connection without a response"),
        ("without response", "server closed the connection without a response"),
        ("Connection reset", "connection reset by the server"),
        ("IncompleteRead", "connection broken in the middle of the response"),
        ("Connection broken", "connection broken in the middle of the response"),
        ("Name or service not known", "host name could not be resolved"),
        ("getaddrinfo", "host name could not be resolved"),
        ("CERTIFICATE_VERIFY_FAILED", "TLS certificate verification failed"),
    )
    for needle, message in checks:
        if needle in text:
            return message
    return truncate(redact(f"{type(exc).__name__}: {text}"), MESSAGE_LIMIT)


def _is_read_timeout(exc: BaseException) -> bool:
    # requests wraps a read timeout met while streaming the body in a
    # ConnectionError around urllib3's ReadTimeoutError.
    from urllib3.exceptions import ReadTimeoutError

    return isinstance(exc, ReadTimeoutError) or any(
        isinstance(a, ReadTimeoutError) for a in getattr(exc, "args", ())
    )


# ------------------------------------------------------------------ large answers

_LARGE = threading.BoundedSemaphore(LARGE_ANSWER_SLOTS)


def _hold_large(attempt: _Attempt) -> None:
    """Take one of the process's large-answer slots (once per thread)."""
    if getattr(_local, "large", False):
        return
    while not _LARGE.acquire(timeout=_WATCH_POLL):
        attempt.check()
    _local.large = True


def _release_large() -> None:
    if getattr(_local, "large", False):
        _local.large = False
        _LARGE.release()


# ------------------------------------------------------------------------ client


def _no_auth(request):
    return request


class HttpClient:
    """A session plus the retry loop, shared by one adapter's threads.

    Parameters
    ----------
    concurrency : int
        Pool size (see :func:`make_session`).
    headers : Mapping, optional
        Already-expanded headers sent with every request.
    timeout : float
        Seconds allowed for each attempt: connecting, and reading the whole
        answer, body included (a deadline, not a per-read timeout). One
        sample (see :meth:`sample`) or one :meth:`request` outside a sample
        spends at most ``SAMPLE_BUDGET_FACTOR * timeout`` in all attempts
        and retry waits.
    policy : RetryPolicy, optional
        Retries and backoff (default: 3 retries).
    auth : tuple, optional
        ``(user, password)`` for HTTP Basic auth (register it as a secret).
    max_bytes : int
        Largest answer accepted, after decompression.
    cancel : threading.Event, optional
        The run's cancel event: once set, no attempt or retry starts,
        waits end and in-flight attempts are aborted
        (:class:`~pytest_violin.errors.GenerationCancelled`).
    env : EnvironmentSettings, optional
        Proxies, CA bundle and netrc (default: captured when the client is
        built).
    rate : float, optional
        Request starts per second for all threads of the process
        (``--violin-rate``, see :class:`~.limits.RateLimiter`); no cap
        when None.
    adaptive : bool
        Samples in flight follow an :class:`~.limits.AdaptiveLimit`
        (lowered on 429, grown back on success, at most ``concurrency``).
    origins, domains : iterable of str
        The URLs (and a provider's own ``https`` domains) the user named:
        only they get credentials, and a URL that carries a registered
        secret goes nowhere else (:mod:`.origins`). Without them the
        client learns the origins of the requests it sends with
        credentials.

    Notes
    -----
    Credentials (``auth``, ``Authorization``, ``Cookie`` and every
    configured header other than ``Accept``, ``Content-Type`` and the like)
    go only to the origins (scheme, host, port) the adapter itself sends
    requests to. A redirect to another origin drops them, and an image URL
    in an answer that points elsewhere (OpenAI's answers point to blob
    storage, say) is fetched with the same session and retries but without
    them: a token is never handed to a third party.
    """

    def __init__(
        self,
        *,
        concurrency: int = 4,
        headers: Mapping[str, str] | None = None,
        timeout: float = 120.0,
        policy: RetryPolicy | None = None,
        auth: tuple[str, str] | None = None,
        max_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        cancel: threading.Event | None = None,
        env: EnvironmentSettings | None = None,
        rate: float | None = None,
        adaptive: bool = True,
        origins=(),
        domains=(),
    ):
        if isinstance(timeout, bool) or not (isinstance(timeout, (int, float)) and 0 < timeout < 1e9):
            raise ModelSpecError(f"timeout must be a number of seconds > 0 and < 1e9, got {timeout!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ModelSpecError(f"max_answer_bytes must be an integer >= 1, got {max_bytes!r}")
        self.timeout = float(timeout)
        self.policy = policy or RetryPolicy()
        self.max_bytes = int(max_bytes)
        self.cancel = cancel if cancel is not None else threading.Event()
        self.session = make_session(concurrency, headers, env=env)
        if auth is not None:
            self.session.auth = auth
        self._credential_headers = set(self.session.credential_headers)
        self._origins = self.session.origins
        self._origins.name(origins, domains)
        self._closed = False
        self._lock = threading.Lock()
        self.requests_sent = 0
        self.retries_sent = 0  # requests that repeat a failed attempt (the run's totals count them apart)
        self.rate_limiter = RateLimiter(parse_rate(rate)) if rate is not None else None
        self.limit = AdaptiveLimit(concurrency) if adaptive else None

    # -- budgets --------------------------------------------------------------
    @property
    def sample_budget(self) -> float:
        """Seconds one sample may spend in attempts and retry waits."""
        return SAMPLE_BUDGET_FACTOR * self.timeout

    def renew_budget(self) -> None:
        """Start this thread's sample budget again: its job waited in the server's
        queue until now (see :func:`~.jobs.poll_job`; queue time is not generation time)."""
        if getattr(_local, "budget_end", None) is not None:
            _local.budget_end = time.monotonic() + self.sample_budget

    def budget_left(self) -> float:
        """Seconds left in this thread's sample budget (a whole budget outside a sample)."""
        end = getattr(_local, "budget_end", None)
        return self.sample_budget if end is None else end - time.monotonic()

    @contextlib.contextmanager
    def sample(self) -> Iterator[None]:
        """Scope of one sample's requests (the adapters' ``generate``).

        Every request inside shares one time budget
        (:attr:`sample_budget`), and a large answer keeps its slot until
        the scope ends, so it is decoded inside the bound too.

        The outermost scope also takes a place in the client's
        :class:`~.limits.AdaptiveLimit` (waiting, before the budget starts,
        while as many samples as the limit allows are in flight) and gives
        it back at the end; a sample that ends without error lets the
        limit grow.
        """
        outer = getattr(_local, "budget_end", None)
        holder = None
        if outer is None and self.limit is not None:
            if not self.limit.acquire(self.cancel):
                raise GenerationCancelled("sample cancelled before it started: the run was interrupted")
            holder = self.limit
            _local.slot = self.limit
        if outer is None:
            _local.budget_end = time.monotonic() + self.sample_budget
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
                _release_large()
            if holder is not None:
                if getattr(_local, "slot", None) is holder:
                    holder.release()
                _local.slot = None
                if ok:
                    holder.succeeded()

    # -- reading ------------------------------------------------------------
    def _read_body(self, response: requests.Response, attempt: _Attempt, *, limit: int, cut: bool) -> bytes:
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
                _hold_large(attempt)
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
                            _hold_large(attempt)
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

    def _fail(self, what, shown_url, reason, attempts, status, transport, *, cls=None,
              body: bytes = b"") -> GenerationError:
        # SetupError for a status that says the request itself is invalid (transport.outcomes);
        # ``body``: the error answer (at most ERROR_BODY_BYTES), for adapters that read more of it
        error = (cls or error_class(status, transport))(
            truncate(redact(f"{what} {shown_url} failed: {reason}"), 2 * MESSAGE_LIMIT + 120),
            attempts=attempts,
            status=status,
            transport=transport,
        )
        error.body = body
        return error

    def _cancelled(self, what, shown_url, attempts, status=None) -> GenerationCancelled:
        return GenerationCancelled(
            f"{what} {shown_url} cancelled: the run was interrupted", attempts=attempts, status=status
        )

    def _wait(self, seconds: float) -> bool:
        """Wait before a retry; False when the run was cancelled meanwhile."""
        if self.policy.sleep is not None:
            self.policy.sleep(seconds)
            return not self.cancel.is_set()
        return not self.cancel.wait(seconds)

    # -- the loop -----------------------------------------------------------
    def request(self, method: str, url: str, *, what: str = "request", **kwargs) -> HttpResult:
        """Send a request, retrying transient failures; return the 2xx result.

        Parameters
        ----------
        method, url : str
            As for :meth:`requests.Session.request`.
        what : str
            Short description for failure messages ("POST", "image download").
        **kwargs
            ``json=``, ``data=``, ``files=`` ... (bodies must be re-sendable:
            bytes, not open files).

        Raises
        ------
        GenerationError
            With a one-line redacted reason, the last status and attempts
            (``transport=True`` when no answer came at all).
        GenerationCancelled
            When the run's cancel event is set.
        """
        shown_url = redact_url(url)
        if self._closed:
            raise GenerationError(f"{what} {shown_url}: the HTTP client is closed", attempts=0)
        try:
            guard(url, self._origins)  # refused URLs never leave (sent again by the session's send)
        except UrlRefused as exc:
            raise UrlRefused(f"{what}: {exc.reason}") from None
        if (method.upper() != "GET" or what != "image download") and kwargs.get("auth") is not _no_auth:
            self._origins.add(_origin(url))
        # --violin-rate counts requests to the provider, not downloads from another host (a CDN)
        limited = _origin(url) in self._origins
        in_sample = getattr(_local, "depth", 0) > 0
        budget_end = getattr(_local, "budget_end", None) if in_sample else None
        if budget_end is None:
            budget_end = time.monotonic() + self.sample_budget
        attempts = 0
        status: int | None = None
        while True:
            if self.cancel.is_set():
                _release_large()
                raise self._cancelled(what, shown_url, attempts, status)
            if self.rate_limiter is not None and limited:
                if not self.rate_limiter.take(self.cancel, budget_end):
                    _release_large()
                    if self.cancel.is_set():
                        raise self._cancelled(what, shown_url, attempts, status)
                    raise self._fail(
                        what, shown_url,
                        f"--violin-rate ({self.rate_limiter.rate:g} requests/s) leaves no time in the "
                        f"sample's budget of {self.sample_budget:g} s ({SAMPLE_BUDGET_FACTOR} x the timeout)",
                        attempts, status, False, cls=GenerationUnjudged,
                    )
            start = time.monotonic()
            allowed = min(self.timeout, budget_end - start)
            if allowed <= 0:
                _release_large()
                raise self._fail(
                    what, shown_url,
                    f"no time left in the sample's budget of {self.sample_budget:g} s "
                    f"({SAMPLE_BUDGET_FACTOR} x the timeout)",
                    attempts, status, False, cls=GenerationUnjudged,
                )
            attempts += 1
            status = None
            retry_after: float | None = None
            transient = True
            transport = False
            failure: BaseException | None = None
            attempt = _Attempt(start + allowed, self.cancel)
            with self._lock:
                self.requests_sent += 1
                if attempts > 1:
                    self.retries_sent += 1
            _local.sent = getattr(_local, "sent", 0) + 1
            _local.attempt = attempt
            _WATCHDOG.add(attempt)
            try:
                attempt.check()
                response = self.session.request(
                    method, url, timeout=(allowed, allowed), stream=True, **kwargs
                )
                try:
                    status = response.status_code
                    ok = 200 <= status < 300
                    body = self._read_body(
                        response, attempt, limit=self.max_bytes if ok else ERROR_BODY_BYTES, cut=not ok
                    )
                finally:
                    attempt.finish()  # before the connection goes back to the pool
                    response.close()
            except Exception as exc:  # classified below
                failure = exc
            finally:
                attempt.finish()
                _local.attempt = None
                _WATCHDOG.remove(attempt)
            if failure is None and 200 <= status < 300:
                if not in_sample:
                    _release_large()
                return HttpResult(
                    status=status,
                    headers=response.headers,
                    content=body,
                    url=response.url or url,
                    attempts=attempts,
                    elapsed=time.monotonic() - start,
                )
            _release_large()
            if failure is not None and attempt.fired == "cancel":
                raise self._cancelled(what, shown_url, attempts, status)
            if failure is None:
                ctype = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                reason = f"HTTP {status} {response.reason or ''}".rstrip()
                reason += f": {server_message(body, ctype)}"
                transient = is_transient_status(status)
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            elif attempt.fired == "deadline" or isinstance(failure, requests.Timeout) or _is_read_timeout(failure):
                if allowed >= self.timeout:
                    reason = f"timed out after {self.timeout:g} s"
                else:
                    reason = (f"timed out after {allowed:.2f} s, the rest of the sample's budget of "
                              f"{self.sample_budget:g} s")
                if status is not None:
                    reason += " reading the response"
                transport = True
            elif isinstance(failure, _BodyTooLarge):
                size, announced = failure.args
                reason = (
                    f"answer over the limit of {self.max_bytes} bytes "
                    f"({'Content-Length ' if announced else 'more than '}{size if announced else self.max_bytes} bytes; "
                    "raise --violin-max-answer-mb if the image really is that large)"
                )
                transient = False
            elif isinstance(failure, _BadEncoding):
                reason, transient = failure.args
            elif isinstance(failure, UrlRefused):  # a redirect to a refused URL (the session's send)
                raise UrlRefused(f"{what} {shown_url}: {failure.reason}", attempts=attempts,
                                 status=status) from None
            elif isinstance(failure, requests.exceptions.ContentDecodingError):
                reason = f"answer could not be decompressed ({_describe_exception(failure)})"
            elif isinstance(failure, (requests.ConnectionError, requests.exceptions.ChunkedEncodingError)):
                reason = _describe_exception(failure)
                transport = status is None
            elif isinstance(failure, requests.RequestException):  # invalid URL, too many redirects, ...
                reason = _describe_exception(failure)
                transient = False
            elif isinstance(failure, (urllib3.exceptions.HTTPError, OSError)):  # while streaming the body
                reason = _describe_exception(failure)
                transport = status is None
            else:
                raise failure
            if not transient or attempts > self.policy.retries:
                raise self._fail(what, shown_url, reason, attempts, status, transport,
                                 body=body if failure is None else b"")
            cap = self.policy.retry_after_cap
            if retry_after is not None and retry_after > cap:
                raise self._fail(
                    what, shown_url,
                    f"{reason}; the server asks to retry after {retry_after:g} s, longer than the "
                    f"longest wait of {cap:g} s",
                    attempts, status, transport,
                )
            wait = self.policy.delay(attempts - 1, retry_after)
            left = budget_end - time.monotonic()
            if wait >= left:
                raise self._fail(
                    what, shown_url,
                    f"{reason}; no time left for a retry in the sample's budget of "
                    f"{self.sample_budget:g} s ({SAMPLE_BUDGET_FACTOR} x the timeout)",
                    attempts, status, transport,
                )
            log.info(
                "%s %s: %s; retry %d of %d in %.2f s",
                what,
                shown_url,
                redact(reason),
                attempts,
                self.policy.retries,
                wait,
            )
            slot = getattr(_local, "slot", None)
            if status == 429 and slot is not None and slot is self.limit:
                # the endpoint is full: fewer samples in flight, and this one queues again
                slot.overloaded()
                slot.release()
                _local.slot = None
            if wait > 0 and not self._wait(wait):
                raise self._cancelled(what, shown_url, attempts, status)
            if status == 429 and slot is not None and slot is self.limit:
                if not slot.acquire(self.cancel, budget_end, urgent=True):
                    if self.cancel.is_set():
                        raise self._cancelled(what, shown_url, attempts, status)
                    raise self._fail(
                        what, shown_url,
                        f"{reason}; no place among the samples in flight within the sample's budget of "
                        f"{self.sample_budget:g} s",
                        attempts, status, transport, cls=GenerationUnjudged,
                    )
                _local.slot = slot

    def post_json(self, url: str, body: Any, *, what: str = "POST") -> HttpResult:
        """POST ``body`` as JSON (see :meth:`request`)."""
        data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        return self.request(
            "POST", url, what=what, data=data, headers={"Content-Type": "application/json"}
        )

    def anonymous(self, url: str) -> dict:
        """Keyword arguments of :meth:`request` that send ``url`` no credentials, unless its
        origin is one this client sends requests to (``{}`` then).

        For URLs read from an answer (a job's status URL): a credential
        never goes to a host the user did not name.
        """
        if _origin(url) in self._origins:
            return {}
        return {"headers": dict.fromkeys(self._credential_headers), "auth": _no_auth}

    def fetch(self, url: str) -> bytes:
        """GET ``url`` with the same session and retries; return the body.

        Credentials are sent only when ``url`` has the origin of a request
        this client made before (see the class notes).
        """
        # None drops a session header; _no_auth: neither the session's Basic auth nor ~/.netrc
        kwargs = self.anonymous(url)
        return self.request("GET", url, what="image download", **kwargs).content

    def close(self) -> None:
        """Close the session and its pooled connections (idempotent)."""
        self._closed = True
        self.session.close()


def client_from_options(options, *, auth: tuple[str, str] | None = None,
                        headers: Mapping[str, str] | None = None, origins=(), domains=()) -> HttpClient:
    """Build an :class:`HttpClient` from :class:`~pytest_violin.models.AdapterOptions`.

    ``options.headers`` are expanded (``${ENV}``) and registered as secrets;
    ``headers`` are adapter-specific headers added first (the configured
    ones win). ``options.extra`` may set ``backoff_base``, ``backoff_cap``
    and ``retry_after_cap`` (seconds) for the retry policy, and ``rate``
    (``--violin-rate``: ``"N/s"``, ``"N/min"`` or requests per second) for
    the process's request starts. The
    environment's proxy, CA bundle and netrc settings are read here, once
    (call it in the main thread). ``origins`` and ``domains``: what the user
    named (see :class:`HttpClient`).

    Raises
    ------
    ModelSpecError
        For malformed headers, an unset ``${ENV}`` variable or bad numbers.
    """
    merged = dict(headers or {})
    merged.update(parse_headers(getattr(options, "headers", ()) or ()))
    if auth is not None and any(name.lower() == "authorization" for name in merged):
        auth = None  # a configured Authorization header wins over URL credentials
    extra = getattr(options, "extra", None) or {}
    knobs = {}
    for key in ("backoff_base", "backoff_cap", "retry_after_cap"):
        if key in extra:
            try:
                knobs[key] = float(extra[key])
            except (TypeError, ValueError):
                raise ModelSpecError(f"option {key!r} must be a number of seconds, got {extra[key]!r}") from None
            if knobs[key] < 0:
                raise ModelSpecError(f"option {key!r} must be >= 0, got {extra[key]!r}")
    retries = getattr(options, "retries", 3)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ModelSpecError(f"retries must be an integer >= 0, got {retries!r}")
    concurrency = getattr(options, "concurrency", 4)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ModelSpecError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    rate = extra.get("rate")
    return HttpClient(
        rate=parse_rate(rate) if rate is not None else None,
        concurrency=concurrency,
        headers=merged,
        timeout=getattr(options, "timeout", 120.0),
        policy=RetryPolicy(retries=retries, **knobs),
        auth=auth,
        max_bytes=getattr(options, "max_answer_bytes", DEFAULT_MAX_ANSWER_BYTES),
        cancel=getattr(options, "cancel", None),
        origins=origins,
        domains=domains,
    )
