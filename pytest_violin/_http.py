"""HTTP client shared by the model adapters: session, timeouts and the retry loop.

* :func:`make_session`: one :class:`requests.Session` per adapter with a
  connection pool sized by the concurrency and no urllib3 retries.
* :class:`RetryPolicy` and :class:`HttpClient`: our own retry loop
  (urllib3's ``Retry`` does not retry ``POST`` by default) with
  exponential backoff and full jitter on connection errors, timeouts, 408,
  429 and 5xx, honouring ``Retry-After`` (seconds or an HTTP date, capped).
  Other 4xx answers are final.
* :func:`client_from_options`: an :class:`HttpClient` from
  :class:`~pytest_violin.models.AdapterOptions`.

Headers, ``${ENV}`` expansion and URL credentials are in
:mod:`pytest_violin._credentials`; finding the image in an answer is in
:mod:`pytest_violin._decode`.

Every failure is a :class:`~pytest_violin.errors.GenerationError` with a
one-line, redacted reason, the HTTP status and the number of attempts.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import json
import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter

from . import __version__
from ._credentials import PUBLIC_HEADERS, parse_headers
from ._decode import MESSAGE_LIMIT, server_message, truncate
from .errors import GenerationError, ModelSpecError
from .secrets import install_log_redaction, redact, redact_url

__all__ = [
    "MAX_BODY_BYTES",
    "HttpClient",
    "HttpResult",
    "RetryPolicy",
    "client_from_options",
    "is_transient_status",
    "make_session",
    "parse_retry_after",
]

log = logging.getLogger("pytest_violin.http")

#: Largest response body read, in bytes (a base64 64-megapixel PNG fits).
MAX_BODY_BYTES = 512 * 1024 * 1024

USER_AGENT = f"pytest-violin/{__version__}"


# ------------------------------------------------------------------------ session


def make_session(concurrency: int = 4, headers: Mapping[str, str] | None = None) -> requests.Session:
    """A :class:`requests.Session` whose pool holds ``concurrency`` connections.

    Parameters
    ----------
    concurrency : int
        Requests the runner keeps in flight; the pool keeps that many
        connections (plus slack for image downloads) alive per host.
    headers : Mapping, optional
        Headers sent with every request.

    Returns
    -------
    requests.Session
        With urllib3 retries disabled (:class:`HttpClient` retries).
    """
    size = max(int(concurrency), 1) + 2
    session = requests.Session()
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = USER_AGENT
    session.trust_env = True
    if headers:
        session.headers.update(headers)
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
    sleep : callable
        ``sleep(seconds)``; injectable for tests.
    rng : callable
        ``rng() -> float in [0, 1)``; injectable for tests.
    """

    retries: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    retry_after_cap: float = 60.0
    sleep: Callable[[float], None] = time.sleep
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
    pass


class _Deadline(Exception):
    pass


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

    return any(isinstance(a, ReadTimeoutError) for a in getattr(exc, "args", ()))


# ------------------------------------------------------------------------ client


def _origin(url: str) -> tuple:
    """``(scheme, host, port)`` of ``url``, default ports filled in."""
    try:
        parts = urlsplit(str(url))
        scheme = parts.scheme.lower()
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
        return (scheme, (parts.hostname or "").lower(), port)
    except ValueError:
        return ("", str(url), None)


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
        body.
    policy : RetryPolicy, optional
        Retries and backoff (default: 3 retries).
    auth : tuple, optional
        ``(user, password)`` for HTTP Basic auth (register it as a secret).
    max_bytes : int
        Largest body accepted.

    Notes
    -----
    Credentials (``auth``, ``Authorization`` and every configured header
    other than ``Accept``, ``Content-Type`` and the like) go only to the
    origins (scheme, host, port) the adapter itself sends requests to. An
    image URL in an answer that points elsewhere (OpenAI's answers point to
    blob storage, say) is fetched with the same session and retries but
    without them: a token is never handed to a third party.
    """

    def __init__(
        self,
        *,
        concurrency: int = 4,
        headers: Mapping[str, str] | None = None,
        timeout: float = 120.0,
        policy: RetryPolicy | None = None,
        auth: tuple[str, str] | None = None,
        max_bytes: int = MAX_BODY_BYTES,
    ):
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ModelSpecError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        self.timeout = float(timeout)
        self.policy = policy or RetryPolicy()
        self.max_bytes = int(max_bytes)
        self.session = make_session(concurrency, headers)
        if auth is not None:
            self.session.auth = auth
        self._credential_headers = {"Authorization"} | {
            name for name in (headers or {}) if name.lower() not in PUBLIC_HEADERS
        }
        self._origins: set[tuple] = set()
        self._closed = False
        self._lock = threading.Lock()
        self.requests_sent = 0

    # -- reading ------------------------------------------------------------
    def _read_body(self, response: requests.Response, deadline: float) -> bytes:
        length = response.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > self.max_bytes:
            raise _BodyTooLarge(int(length))
        chunks = []
        total = 0
        for chunk in response.iter_content(chunk_size=1 << 16):
            total += len(chunk)
            if total > self.max_bytes:
                raise _BodyTooLarge(total)
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise _Deadline()
        return b"".join(chunks)

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
            With a one-line redacted reason, the last status and attempts.
        """
        if self._closed:
            raise GenerationError(f"{what} {redact_url(url)}: the HTTP client is closed", attempts=0)
        attempts = 0
        shown_url = redact_url(url)
        if method.upper() != "GET" or what != "image download":
            self._origins.add(_origin(url))
        while True:
            attempts += 1
            status: int | None = None
            retry_after: float | None = None
            transient = True
            start = time.monotonic()
            try:
                with self._lock:
                    self.requests_sent += 1
                response = self.session.request(
                    method, url, timeout=(self.timeout, self.timeout), stream=True, **kwargs
                )
                try:
                    status = response.status_code
                    body = self._read_body(response, start + self.timeout)
                finally:
                    response.close()
            except _Deadline:
                reason = f"timed out after {self.timeout:g} s reading the response"
            except _BodyTooLarge as exc:
                reason = f"response body over the limit of {self.max_bytes} bytes ({exc.args[0]} bytes)"
                transient = False
            except requests.Timeout:
                reason = f"timed out after {self.timeout:g} s"
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                if _is_read_timeout(exc):
                    reason = f"timed out after {self.timeout:g} s"
                else:
                    reason = _describe_exception(exc)
            except requests.exceptions.ContentDecodingError as exc:
                reason = f"response could not be decompressed ({_describe_exception(exc)})"
            except requests.RequestException as exc:  # invalid URL, too many redirects, ...
                reason = _describe_exception(exc)
                transient = False
            else:
                if 200 <= status < 300:
                    return HttpResult(
                        status=status,
                        headers=response.headers,
                        content=body,
                        url=response.url or url,
                        attempts=attempts,
                        elapsed=time.monotonic() - start,
                    )
                ctype = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                reason = f"HTTP {status} {response.reason or ''}".rstrip()
                reason += f": {server_message(body, ctype)}"
                transient = is_transient_status(status)
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if not transient or attempts > self.policy.retries:
                raise GenerationError(
                    truncate(redact(f"{what} {shown_url} failed: {reason}"), 2 * MESSAGE_LIMIT + 120),
                    attempts=attempts,
                    status=status,
                )
            wait = self.policy.delay(attempts - 1, retry_after)
            log.info(
                "%s %s: %s; retry %d of %d in %.2f s",
                what,
                shown_url,
                redact(reason),
                attempts,
                self.policy.retries,
                wait,
            )
            if wait > 0:
                self.policy.sleep(wait)

    def post_json(self, url: str, body: Any, *, what: str = "POST") -> HttpResult:
        """POST ``body`` as JSON (see :meth:`request`)."""
        data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        return self.request(
            "POST", url, what=what, data=data, headers={"Content-Type": "application/json"}
        )

    def fetch(self, url: str) -> bytes:
        """GET ``url`` with the same session and retries; return the body.

        Credentials are sent only when ``url`` has the origin of a request
        this client made before (see the class notes).
        """
        kwargs: dict[str, Any] = {}
        if _origin(url) not in self._origins:
            kwargs["headers"] = dict.fromkeys(self._credential_headers)  # None drops a session header
            kwargs["auth"] = _no_auth  # neither the session's Basic auth nor ~/.netrc
        return self.request("GET", url, what="image download", **kwargs).content

    def close(self) -> None:
        """Close the session and its pooled connections (idempotent)."""
        self._closed = True
        self.session.close()


def client_from_options(options, *, auth: tuple[str, str] | None = None,
                        headers: Mapping[str, str] | None = None) -> HttpClient:
    """Build an :class:`HttpClient` from :class:`~pytest_violin.models.AdapterOptions`.

    ``options.headers`` are expanded (``${ENV}``) and registered as secrets;
    ``headers`` are adapter-specific headers added first (the configured
    ones win). ``options.extra`` may set ``backoff_base``, ``backoff_cap``
    and ``retry_after_cap`` (seconds) for the retry policy.

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
    return HttpClient(
        concurrency=concurrency,
        headers=merged,
        timeout=getattr(options, "timeout", 120.0),
        policy=RetryPolicy(retries=retries, **knobs),
        auth=auth,
    )

