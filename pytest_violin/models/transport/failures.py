"""Why an attempt failed, on one redacted line, and whether another attempt may help.

:func:`answer_failure` reads a non-2xx answer (its status, the server's
message, ``Retry-After``); :func:`exception_failure` names what went wrong
when no usable answer came (refused connection, time-out, a body over the
limit, bad content encoding, ...). Each gives a :class:`Failure` that the
client's retry loop (:meth:`.client.HttpClient.request`) acts on:
``transient`` failures are retried, ``transport`` ones had no answer at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import requests
import urllib3

from ...redaction import redact
from .body import _BadEncoding, _BodyTooLarge
from .origins import UrlRefused
from .retries import is_transient_status, parse_retry_after
from .text import MESSAGE_LIMIT, server_message, truncate

__all__ = ["Failure", "answer_failure", "exception_failure"]


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

