"""HTTP plumbing shared by the model adapters.

* :func:`make_session`: one :class:`requests.Session` per adapter with a
  connection pool sized by the concurrency and no urllib3 retries.
* :func:`parse_headers`: ``--violin-header`` values with ``${ENV}``
  expansion; every credential-like value is registered as a secret.
* :class:`RetryPolicy` and :class:`HttpClient`: our own retry loop
  (urllib3's ``Retry`` does not retry ``POST`` by default) with
  exponential backoff and full jitter on connection errors, timeouts, 408,
  429 and 5xx, honouring ``Retry-After`` (seconds or an HTTP date, capped).
  Other 4xx answers are final.
* :func:`image_from_response`: raw image bytes, JSON with base64 or a URL
  at a known place or at a dotted response path, data URIs.

Every failure is a :class:`~pytest_violin.errors.GenerationError` with a
one-line, redacted reason, the HTTP status and the number of attempts.
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import parse_qsl, unquote, unquote_to_bytes, urljoin, urlsplit, urlunsplit

import numpy as np
import requests
from requests.adapters import HTTPAdapter

from . import __version__
from .errors import GenerationError, InvalidImageError, ModelSpecError
from .imaging import MAX_PIXELS, decode_image
from .secrets import redact, redact_url, register_secret

__all__ = [
    "DEFAULT_IMAGE_PATHS",
    "MAX_BODY_BYTES",
    "MESSAGE_LIMIT",
    "HttpClient",
    "HttpResult",
    "RetryPolicy",
    "check_url",
    "client_from_options",
    "coerce",
    "format_params",
    "parse_switch",
    "split_params",
    "expand_env",
    "image_from_response",
    "image_from_value",
    "is_transient_status",
    "make_session",
    "parse_headers",
    "parse_response_path",
    "parse_retry_after",
    "server_message",
    "truncate",
]

log = logging.getLogger("pytest_violin.http")

#: Largest response body read, in bytes (a base64 64-megapixel PNG fits).
MAX_BODY_BYTES = 512 * 1024 * 1024

#: Server messages in failure reasons are cut to this many characters.
MESSAGE_LIMIT = 200

#: Where a JSON answer is searched for an image when no response path is set.
DEFAULT_IMAGE_PATHS = (
    ("image",),
    ("images", 0),
    ("data", 0, "b64_json"),
    ("data", 0, "url"),
    ("url",),
    ("b64_json",),
    ("output", 0),
    ("output",),
)

USER_AGENT = f"pytest-violin/{__version__}"

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_PUBLIC_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "content-type", "content-encoding", "user-agent"}
)
_IMAGE_MAGIC = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"II*\x00",
    b"MM\x00*",
)


# --------------------------------------------------------------------------- text


def truncate(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Collapse whitespace to single spaces and cut ``text`` to ``limit`` chars."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: max(limit - 3, 0)].rstrip() + "..."
    return text


# ------------------------------------------------------------------------ headers


def expand_env(value: str, *, what: str = "value", environ: Mapping[str, str] | None = None) -> str:
    """Replace ``${NAME}`` references in ``value`` by environment variables.

    Parameters
    ----------
    value : str
        Text such as ``"Bearer ${HF_TOKEN}"``.
    what : str, optional
        What the value is, for the error message.
    environ : Mapping, optional
        The environment (default :data:`os.environ`).

    Returns
    -------
    str
        The expanded text. Expanded values are registered as secrets.

    Raises
    ------
    ModelSpecError
        When a referenced variable is not set; the message names the
        variable, never a value.
    """
    env = os.environ if environ is None else environ

    def sub(match: re.Match) -> str:
        name = match.group(1)
        if name not in env:
            raise ModelSpecError(
                f"{what} references environment variable {name!r}, which is not set; "
                f"export it or remove the ${{{name}}} reference"
            )
        register_secret(env[name])
        return env[name]

    return _ENV_REF.sub(sub, value)


def _split_header(item) -> tuple[str, str]:
    if isinstance(item, str):
        name, sep, value = item.partition(":")
        if not sep:
            raise ModelSpecError(f"header {truncate(redact(item), 60)!r} is not of the form 'Name: value'")
        return name.strip(), value.strip()
    try:
        name, value = item
    except (TypeError, ValueError):
        raise ModelSpecError(
            f"header {type(item).__name__} is neither 'Name: value' nor a (name, value) pair"
        ) from None
    return str(name).strip(), str(value).strip()


def parse_headers(headers: Iterable, *, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Turn configured headers into a dict, expanding ``${ENV}`` references.

    Parameters
    ----------
    headers : iterable of str or (str, str)
        ``"Name: value"`` strings or ``(name, value)`` pairs.
    environ : Mapping, optional
        The environment for ``${NAME}`` references.

    Returns
    -------
    dict
        Header name -> expanded value. Every value (except those of
        ``Accept``, ``Content-Type``, ``User-Agent`` and similar) is
        registered as a secret, and so is the credential part of
        ``Bearer TOKEN`` style values.

    Raises
    ------
    ModelSpecError
        For a malformed header or an unset environment variable.
    """
    out: dict[str, str] = {}
    for item in headers or ():
        name, raw = _split_header(item)
        if not _HEADER_NAME.match(name):
            raise ModelSpecError(f"invalid HTTP header name {name!r}; accepted: letters, digits and -")
        value = expand_env(raw, what=f"header {name!r}", environ=environ)
        if "\n" in value or "\r" in value:
            raise ModelSpecError(f"header {name!r} has a line break in its value")
        if name.lower() not in _PUBLIC_HEADERS or value != raw:
            register_secret(value)
            scheme, _, credential = value.partition(" ")
            if credential and scheme.isalpha():
                register_secret(credential)
        out[name] = value
    return out


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


def _looks_html(body: bytes, content_type: str) -> bool:
    if content_type in ("text/html", "application/xhtml+xml"):
        return True
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body"))


def _html_title(text: str) -> str:
    match = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    if match and match.group(1).strip():
        return match.group(1).strip()
    match = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.IGNORECASE | re.DOTALL)
    if match:
        return re.sub(r"<[^>]+>", "", match.group(1)).strip()
    return ""


def _json_message(obj: Any, depth: int = 0) -> str | None:
    if depth > 4:
        return None
    if isinstance(obj, str):
        return obj or None
    if isinstance(obj, list):
        for item in obj[:3]:
            found = _json_message(item, depth + 1)
            if found:
                return found
        return None
    if isinstance(obj, dict):
        for key in ("error", "message", "detail", "errors", "msg", "reason", "title", "description"):
            if key in obj:
                found = _json_message(obj[key], depth + 1)
                if found:
                    code = obj.get("code") if key == "message" else None
                    return f"{found} [{code}]" if isinstance(code, str) and code else found
    return None


def server_message(content: bytes, content_type: str = "", limit: int = MESSAGE_LIMIT) -> str:
    """The server's error message in a response body, on one short line.

    JSON ``error`` / ``message`` / ``detail`` fields are preferred; an HTML
    page is described by its title; plain text is taken as is. The result
    is redacted and truncated to ``limit`` characters.
    """
    if not content:
        return "empty body"
    text = content[:65536].decode("utf-8", "replace")
    if _looks_html(content, content_type):
        title = _html_title(text)
        return truncate(redact(f"HTML page{': ' + title if title else ''}"), limit)
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if obj is not None:
            found = _json_message(obj)
            if found:
                return truncate(redact(found), limit)
    return truncate(redact(stripped), limit)


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
        """GET ``url`` with the same session and retries; return the body."""
        return self.request("GET", url, what="image download").content

    def close(self) -> None:
        """Close the session and its pooled connections (idempotent)."""
        self._closed = True
        self.session.close()


# ----------------------------------------------------------------------- decoding


def parse_response_path(path: str) -> tuple:
    """Split a response path such as ``data.0.b64_json`` or ``data[0].url``.

    Returns
    -------
    tuple
        Keys (str) and list indices (int).

    Raises
    ------
    ModelSpecError
        For an empty path or an empty segment.
    """
    if not isinstance(path, str) or not path.strip():
        raise ModelSpecError(f"empty response path {path!r}; example: data.0.b64_json")
    normal = re.sub(r"\[(\d+)\]", r".\1", path.strip())
    parts = normal.split(".")
    if any(not p for p in parts):
        raise ModelSpecError(
            f"response path {path!r} has an empty segment; accepted: dotted keys and "
            "indices such as data.0.b64_json or output[0]"
        )
    return tuple(int(p) if p.isdigit() else p for p in parts)


def _format_path(parts: tuple) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def _walk(obj: Any, parts: tuple) -> tuple[bool, Any, str]:
    """(found, value, where it stopped)."""
    cur = obj
    for i, part in enumerate(parts):
        if isinstance(cur, dict):
            key = str(part)
            if key not in cur:
                return False, None, _format_path(parts[: i + 1])
            cur = cur[key]
        elif isinstance(cur, list) and isinstance(part, int):
            if part >= len(cur):
                return False, None, _format_path(parts[: i + 1])
            cur = cur[part]
        else:
            return False, None, _format_path(parts[: i + 1])
    return True, cur, _format_path(parts)


def _image_error(exc: InvalidImageError) -> str:
    text = str(exc)
    return text.split(": got ", 1)[0]


def _decode(data: bytes, where: str, max_pixels: int) -> np.ndarray:
    try:
        return decode_image(data, max_pixels=max_pixels)
    except InvalidImageError as exc:
        raise _ValueFail(f"{where}: {_image_error(exc)}") from None


class _ValueFail(Exception):
    """Internal: a response that does not hold a usable image."""


_DATA_URI = re.compile(r"^data:([^,;]*)((?:;[^,;]*)*),(.*)$", re.DOTALL)
_B64_CHARS = re.compile(r"^[A-Za-z0-9+/_\-=\s]+$")


def image_from_value(
    value: Any,
    *,
    where: str = "value",
    fetch: Callable[[str], bytes] | None = None,
    base_url: str | None = None,
    max_pixels: int = MAX_PIXELS,
) -> np.ndarray:
    """Decode one JSON value holding an image.

    Parameters
    ----------
    value : str or list
        Base64 image bytes, a ``data:`` URI, or an http(s) URL (fetched with
        ``fetch``); a list is taken for its first element.
    where : str
        The JSON path of the value, for messages.
    fetch : callable, optional
        ``fetch(url) -> bytes``; URLs are refused without it.
    base_url : str, optional
        Relative URLs (``/files/1.png``) resolve against it.
    max_pixels : int
        Pixel limit (decompression bombs).

    Raises
    ------
    GenerationError
        When the value is not an image.
    """
    try:
        return _image_from_value(value, where, fetch, base_url, max_pixels)
    except _ValueFail as exc:
        raise GenerationError(redact(str(exc))) from None


def _image_from_value(value, where, fetch, base_url, max_pixels) -> np.ndarray:
    if isinstance(value, list):
        if not value:
            raise _ValueFail(f"{where} is an empty list")
        return _image_from_value(value[0], f"{where}[0]", fetch, base_url, max_pixels)
    if not isinstance(value, str):
        raise _ValueFail(f"{where} is a JSON {type(value).__name__}, not an image string")
    text = value.strip()
    if not text:
        raise _ValueFail(f"{where} is an empty string")
    match = _DATA_URI.match(text) if text.startswith("data:") else None
    if match:
        params = match.group(2).lower()
        payload = match.group(3)
        if ";base64" in params:
            data = _b64(payload, f"{where} (data URI)")
        else:
            data = unquote_to_bytes(payload)
        return _decode(data, f"{where} (data URI)", max_pixels)
    if text.startswith(("http://", "https://")) or (text.startswith("/") and base_url):
        if fetch is None:
            raise _ValueFail(f"{where} is a URL but URLs cannot be fetched here")
        url = urljoin(base_url, text) if base_url else text
        return _decode(fetch(url), f"image downloaded from {redact_url(url)}", max_pixels)
    if _B64_CHARS.match(text[:4096]):
        return _decode(_b64(text, where), where, max_pixels)
    raise _ValueFail(
        f"{where} is a string that is neither base64 image data, a data: URI nor an "
        f"http(s) URL (starts with {truncate(text, 40)!r})"
    )


def _b64(text: str, where: str) -> bytes:
    compact = "".join(text.split()).replace("-", "+").replace("_", "/")
    compact += "=" * (-len(compact) % 4)
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise _ValueFail(f"{where} is not valid base64") from None


def _is_image_bytes(body: bytes, content_type: str) -> bool:
    if content_type.startswith("image/"):
        return True
    if body.startswith(_IMAGE_MAGIC):
        return True
    return body[:4] == b"RIFF" and body[8:12] == b"WEBP"


def image_from_response(
    result: HttpResult,
    *,
    response_path: str | tuple | None = None,
    fetch: Callable[[str], bytes] | None = None,
    max_pixels: int = MAX_PIXELS,
) -> np.ndarray:
    """Find and decode the image in a successful HTTP response.

    Parameters
    ----------
    result : HttpResult
        The response.
    response_path : str or tuple, optional
        Where the image is in a JSON body (``data.0.b64_json``,
        ``output.0``). Without it, raw image bodies are decoded and JSON is
        searched at :data:`DEFAULT_IMAGE_PATHS`.
    fetch : callable, optional
        ``fetch(url) -> bytes`` for answers that hold a URL.
    max_pixels : int
        Pixel limit.

    Returns
    -------
    numpy.ndarray
        RGB uint8 (any size: the scorer resizes).

    Raises
    ------
    GenerationError
        One line: what the body was instead of an image, with the status and
        attempts of ``result``.
    """
    try:
        return _image_from_response(result, response_path, fetch, max_pixels)
    except _ValueFail as exc:
        raise GenerationError(
            truncate(redact(str(exc)), 2 * MESSAGE_LIMIT + 120),
            attempts=result.attempts,
            status=result.status,
        ) from None
    except GenerationError as exc:  # a failed image download
        raise GenerationError(exc.reason, attempts=result.attempts, status=exc.status) from None


def _image_from_response(result: HttpResult, response_path, fetch, max_pixels) -> np.ndarray:
    body = result.content
    ctype = result.content_type
    origin = f"response from {redact_url(result.url)} (HTTP {result.status}"
    origin += f", {ctype})" if ctype else ")"
    if not body:
        raise _ValueFail(f"{origin} has an empty body (0 bytes), not an image")
    if _is_image_bytes(body, ctype):
        return _decode(body, origin, max_pixels)
    if _looks_html(body, ctype):
        raise _ValueFail(
            f"{origin} is an HTML page, not an image: {server_message(body, ctype)}"
        )
    text = body.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        if _B64_CHARS.match(text[:4096]) and len(text) >= 16:
            return _decode(_b64(text, origin), f"{origin} base64 body", max_pixels)
        raise _ValueFail(
            f"{origin} is neither an image nor JSON ({len(body)} bytes starting with "
            f"{truncate(text, 40)!r})"
        ) from None
    kwargs = dict(fetch=fetch, base_url=result.url, max_pixels=max_pixels)
    if response_path is not None:
        parts = parse_response_path(response_path) if isinstance(response_path, str) else tuple(response_path)
        found, value, stop = _walk(obj, parts)
        if not found:
            raise _ValueFail(
                f"{origin}: JSON has no {stop!r} (response path {_format_path(parts)!r}; "
                f"{_json_summary(obj)})"
            )
        return _image_from_value(value, _format_path(parts), **kwargs)
    for parts in DEFAULT_IMAGE_PATHS:
        found, value, _ = _walk(obj, parts)
        if found and value not in (None, "", []):
            return _image_from_value(value, _format_path(parts), **kwargs)
    accepted = ", ".join(_format_path(p) for p in DEFAULT_IMAGE_PATHS[:5])
    message = _json_message(obj) if isinstance(obj, (dict, list)) else None
    said = f"; server said: {truncate(message)}" if message else ""
    raise _ValueFail(
        f"{origin}: JSON without an image ({_json_summary(obj)}; looked at {accepted}; "
        f"set --violin-response-path){said}"
    )


def _json_summary(obj: Any) -> str:
    if isinstance(obj, dict):
        keys = list(obj)[:8]
        more = ", ..." if len(obj) > 8 else ""
        return "top-level keys: " + ", ".join(repr(k) for k in keys) + more
    if isinstance(obj, list):
        return f"a list of {len(obj)} item{'s' if len(obj) != 1 else ''}"
    return f"a JSON {type(obj).__name__}"


# ----------------------------------------------------------------------- factories

_SECRET_QUERY = re.compile(r"key|token|secret|password|passwd|sig|auth|credential", re.IGNORECASE)


def _register_userinfo(text: str) -> None:
    # before any validation, so even an error about a malformed URL is clean
    authority = text.split("://", 1)[-1].split("/", 1)[0]
    if "@" in authority:
        userinfo = authority.rsplit("@", 1)[0]
        user, _, password = userinfo.partition(":")
        register_secret(unquote(password))
        register_secret(password)
        register_secret(f"{unquote(user)}:{unquote(password)}")


def check_url(url: str, *, what: str = "URL") -> tuple[str, tuple[str, str] | None]:
    """Validate an endpoint URL and take the credentials out of it.

    Parameters
    ----------
    url : str
        ``http(s)://[user:password@]host[:port]/path[?query]``.
    what : str
        What the URL is for, for the error message.

    Returns
    -------
    (str, tuple or None)
        The URL without ``user:password@`` and the ``(user, password)``
        pair for HTTP Basic auth (both registered as secrets), or ``None``.
        Query values whose names look like credentials (``key``,
        ``token``, ``sig`` ...) are registered as secrets too.

    Raises
    ------
    ModelSpecError
        For a URL that is not http(s) or has no host.
    """
    text = (url or "").strip()
    _register_userinfo(text)
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ModelSpecError(f"{what} {redact_url(text)!r} is malformed ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ModelSpecError(
            f"{what} {redact_url(text)!r} is not an http:// or https:// URL with a host; "
            "example: http://127.0.0.1:8000/generate"
        )
    auth = None
    if parts.username is not None or parts.password is not None:
        user = unquote(parts.username or "")
        password = unquote(parts.password or "")
        register_secret(password)
        register_secret(f"{user}:{password}")
        auth = (user, password)
        netloc = parts.netloc.rsplit("@", 1)[1]
        text = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_QUERY.search(name):
            register_secret(value)
    return text, auth


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


# ------------------------------------------------------------- target parameters


def coerce(value: str):
    """``"20"`` -> 20, ``"7.5"`` -> 7.5, ``"true"``/``"false"`` -> bool, else the text."""
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def split_params(target: str, *, what: str) -> tuple[str, dict]:
    """Split ``"name?a=1&b=x"`` into ``("name", {"a": 1, "b": "x"})``.

    Raises
    ------
    ModelSpecError
        For a malformed or repeated parameter.
    """
    head, sep, query = target.partition("?")
    params: dict = {}
    if sep:
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            raise ModelSpecError(
                f"{what}: parameters {query!r} are not of the form name=value&name=value"
            ) from None
        for name, value in pairs:
            if name in params:
                raise ModelSpecError(f"{what}: parameter {name!r} is given twice")
            params[name] = coerce(value)
    return head, params


def parse_switch(value, *, name: str, what: str, allowed=("auto",)) -> object:
    """Read an on/off switch: True/False or one of ``allowed`` strings."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "on", "true", "yes"):
        return True
    if text in ("0", "off", "false", "no"):
        return False
    if text in allowed:
        return text
    raise ModelSpecError(
        f"{what}: {name}={value!r} is not a switch; accepted: on, off" + "".join(f", {a}" for a in allowed)
    )


def format_params(params: dict) -> str:
    """``?a=1&b=x`` for identities (sorted; empty for no parameters)."""
    if not params:
        return ""
    return "?" + "&".join(f"{k}={params[k]}" for k in sorted(params))
