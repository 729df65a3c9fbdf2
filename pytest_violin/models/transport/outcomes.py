"""What an attempt's result means: retried or final, the model's outcome or the request's error.

* :func:`answer_failure` reads a non-2xx answer (its status, the server's
  message, ``Retry-After``: :func:`parse_retry_after`);
  :func:`exception_failure` names what went wrong when no usable answer
  came (refused connection, time-out, a body over the limit, bad content
  encoding, ...). Each gives a :class:`Failure` on one redacted line that
  the retry loop (:mod:`.retries`) acts on: ``transient`` failures
  (connection errors, time-outs, 408, 429 and 5xx:
  :func:`is_transient_status`) are retried, ``transport`` ones had no
  answer at all.
* :data:`SETUP_STATUSES` (400, 401, 403, 404, 422) say the request itself is
  invalid (a bad key, a wrong URL, a body the API rejects): the HTTP client
  raises :class:`~pytest_violin.errors.SetupError` for them, with the server's
  reason. An adapter whose provider answers a *sample's* prompt with one of
  them (a moderation 400) turns that into
  :class:`~pytest_violin.errors.GenerationRefused` first (:func:`refusal_or`),
  so a refusal stays that sample's outcome.
* :func:`is_loopback` tells a server on this machine (self-hosted: calls cost
  nothing, see ``adapter_bills`` in the plugin's planning).

The table of outcomes per adapter is in docs/models.md ("Failure, refusal or
error"). Why ``Retry-After`` is read here and not by urllib3's
``Retry.parse_retry_after``: that one reads only whole seconds and reads a
date without a zone (``asctime`` form, ``-0000``) as the machine's local time
(:func:`email.utils.mktime_tz`), where HTTP dates are GMT; so the header is
read with :func:`email.utils.parsedate_to_datetime`, and fractions of a
second are kept.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import ipaddress
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

import requests
import urllib3

from ...errors import GenerationError, GenerationRefused, SetupError
from ...redaction import redact
from .body import _BadEncoding, _BodyTooLarge
from .origins import UrlRefused
from .text import MESSAGE_LIMIT, server_message, truncate

__all__ = ["SETUP_STATUSES", "Failure", "answer_failure", "error_class", "exception_failure",
           "is_loopback", "is_transient_status", "parse_retry_after", "refusal_or"]

#: HTTP statuses that mean the request itself is invalid (not retried).
SETUP_STATUSES = frozenset({400, 401, 403, 404, 422})


def error_class(status: int | None, transport: bool = False) -> type:
    """The error class of a final HTTP failure: SetupError for :data:`SETUP_STATUSES`."""
    if not transport and status in SETUP_STATUSES:
        return SetupError
    return GenerationError


def refusal_or(exc: GenerationError, is_refusal: Callable[[GenerationError], bool]) -> GenerationError:
    """``exc`` as a :class:`GenerationRefused` when ``is_refusal(exc)``, else ``exc``.

    For providers that answer a refused prompt with a 400 or 422: the
    refusal is that sample's outcome, not a setup error of the run.
    """
    if isinstance(exc, GenerationRefused) or not is_refusal(exc):
        return exc
    return GenerationRefused(exc.reason, attempts=exc.attempts, status=exc.status)


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    try:
        host = (urlsplit(url).hostname or "").strip("[]").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
class Failure:
    """One failed attempt: its reason, and what the retry loop makes of it."""

    reason: str
    transient: bool = True
    transport: bool = False
    retry_after: float | None = None
    #: the sample cannot be judged from it (a redirect loop, an invalid URL): an error, not a score
    unjudged: bool = False


def answer_failure(response: requests.Response, status: int, body: bytes) -> Failure:
    """A non-2xx answer: ``HTTP 503 Service Unavailable: <the server's message>``."""
    ctype = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    reason = f"HTTP {status} {response.reason or ''}".rstrip()
    reason += f": {server_message(body, ctype)}"
    return Failure(reason, transient=is_transient_status(status),
                   retry_after=parse_retry_after(response.headers.get("Retry-After")))


def exception_failure(failure: BaseException, *, fired: str | None, status: int | None, allowed: float,
                      timeout: float, sample_budget: float, max_bytes: int) -> Failure | None:
    """What ``failure`` (raised while sending or reading) means; None for what is not ours to explain
    (a :class:`~.origins.UrlRefused` redirect, a bug), which the caller raises.

    ``fired``: what ended the attempt (``"deadline"``), ``status``: the
    answer's status when the failure came while reading its body,
    ``allowed``: the seconds this attempt had (less than ``timeout`` when
    the sample's budget ran short).
    """
    if fired == "deadline" or isinstance(failure, requests.Timeout) or _is_read_timeout(failure):
        if allowed >= timeout:
            reason = f"timed out after {timeout:g} s"
        else:
            reason = (f"timed out after {allowed:.2f} s, the rest of the sample's budget of "
                      f"{sample_budget:g} s")
        if status is not None:
            reason += " reading the response"
        return Failure(reason, transport=True)
    if isinstance(failure, _BodyTooLarge):
        size, announced = failure.args
        return Failure(
            f"answer over the limit of {max_bytes} bytes "
            f"({'Content-Length ' if announced else 'more than '}{size if announced else max_bytes} bytes; "
            "raise --violin-max-answer-mb if the image really is that large)",
            transient=False,
        )
    if isinstance(failure, _BadEncoding):
        reason, transient = failure.args
        return Failure(reason, transient=transient)
    if isinstance(failure, UrlRefused):  # a redirect to a refused URL (the session's send)
        return None
    if isinstance(failure, requests.exceptions.ContentDecodingError):
        return Failure(f"answer could not be decompressed ({_describe_exception(failure)})")
    if isinstance(failure, (requests.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        return Failure(_describe_exception(failure), transport=status is None)
    if isinstance(failure, requests.RequestException):  # invalid URL, too many redirects, ...
        return Failure(_describe_exception(failure), transient=False, unjudged=True)
    if isinstance(failure, (urllib3.exceptions.HTTPError, OSError)):  # while streaming the body
        return Failure(_describe_exception(failure), transport=status is None)
    return None


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

