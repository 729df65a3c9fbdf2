"""What an attempt's failure means, and the retry loop on tenacity.

* :func:`answer_failure` / :func:`exception_failure`: a :class:`Failure` on one redacted line; transient ones
  (connection errors, time-outs, 408, 429, 5xx) are retried. :data:`SETUP_STATUSES` make a
  :class:`~pytest_violin.errors.SetupError`, unless an adapter turns a sample's refusal into
  :class:`~pytest_violin.errors.GenerationRefused` (:func:`refusal_or`). ``Retry-After`` is read with
  :func:`email.utils.parsedate_to_datetime` (urllib3's reads dates without a zone as local time and drops
  fractions).
* :class:`Request`: one request's attempts on :class:`tenacity.Retrying`; the wait is ``Retry-After`` (up to
  its cap) or full-jitter exponential backoff, the stop is the retries made, a ``Retry-After`` over its cap or
  the sample's budget (:data:`SAMPLE_BUDGET_FACTOR` x the timeout), the sleep is the run's cancel event.
  urllib3's ``Retry`` does not retry ``POST``, has no full jitter, and knows neither the budget nor the
  cancel.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import ipaddress
import logging
import random
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

import requests
import tenacity
import urllib3

from ...errors import (GenerationCancelled, GenerationError, GenerationRefused, GenerationUnjudged,
                       ModelSpecError, SetupError)
from ...redaction import redact, redact_url
from .answers import HttpResult, MESSAGE_LIMIT, server_message, truncate
from .bounds import (Attempt, ERROR_BODY_BYTES, WATCHDOG, _BadEncoding, _BodyTooLarge, read_body,
                     release_large, state as _local)
from .origins import UrlRefused


#: HTTP statuses that mean the request itself is invalid (not retried).
SETUP_STATUSES = frozenset({400, 401, 403, 404, 422})


def error_class(status: int | None, transport: bool = False) -> type:
    """The error class of a final HTTP failure: SetupError for :data:`SETUP_STATUSES`."""
    if not transport and status in SETUP_STATUSES:
        return SetupError
    return GenerationError


def refusal_or(exc: GenerationError, is_refusal: Callable[[GenerationError], bool]) -> GenerationError:
    """``exc`` as a :class:`GenerationRefused` when ``is_refusal(exc)`` (a refused prompt's 400), else ``exc``."""
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
    """Non-negative seconds a ``Retry-After`` value (delta seconds or an HTTP date) asks for; None when unreadable."""
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
            # asctime dates ("Sun Nov  6 08:49:37 1994") and "-0000" carry no zone; HTTP dates are always GMT,
            # never the machine's local time
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

    ``fired``: what ended the attempt (``"deadline"``), ``status``: the answer's status when the failure came
    while reading its body, ``allowed``: the seconds this attempt had (less than ``timeout`` when the sample's
    budget ran short).
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
    # requests wraps a read timeout met while streaming the body in a ConnectionError around urllib3's
    # ReadTimeoutError.
    from urllib3.exceptions import ReadTimeoutError

    return isinstance(exc, ReadTimeoutError) or any(
        isinstance(a, ReadTimeoutError) for a in getattr(exc, "args", ())
    )


log = logging.getLogger("pytest_violin.http")

#: One sample spends at most this many times the timeout in all its attempts and retry waits together.
SAMPLE_BUDGET_FACTOR = 2


@dataclass
class RetryPolicy:
    """How often and how long to wait between attempts.

    The n-th retry waits a uniform random time in ``[0, min(backoff_cap, backoff_base * 2**n)]`` (full
    jitter); a server's ``Retry-After`` wins up to ``retry_after_cap``. ``sleep`` and ``rng`` are for tests
    (by default the client waits on the run's cancel event).
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
        """Seconds before retry number ``retry_index`` (0-based): ``Retry-After`` (capped), else full jitter."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap)
        ceiling = min(self.backoff_cap, self.backoff_base * (2.0**retry_index))
        return ceiling * self.rng()


def send_once(session: requests.Session, method: str, url: str, attempt: Attempt, *, allowed: float,
              max_bytes: int, kwargs: dict) -> tuple[requests.Response | None, bytes, Exception | None]:
    """``(response, body, failure)``: the response (None when none came), the body read, what failed."""
    _local.attempt = attempt
    WATCHDOG.add(attempt)
    response = None
    try:
        attempt.check()
        response = session.request(method, url, timeout=(allowed, allowed), stream=True, **kwargs)
        try:
            ok = 200 <= response.status_code < 300
            body = read_body(response, attempt, limit=max_bytes if ok else ERROR_BODY_BYTES, cut=not ok)
        finally:
            attempt.finish()  # before the connection goes back to the pool
            response.close()
    except Exception as exc:  # classified by the caller (.outcomes)
        return response, b"", exc
    finally:
        attempt.finish()
        _local.attempt = None
        WATCHDOG.remove(attempt)
    return response, body, None


class _Transient(Exception):
    """Internal: an attempt failed in a way another attempt may cure (tenacity's cue to retry)."""

    def __init__(self, found: Failure, body: bytes):
        super().__init__(found.reason)
        self.found = found
        self.body = body  # the error answer (at most ERROR_BODY_BYTES), for adapters that read more of it


def _transient(retry_state: tenacity.RetryCallState) -> _Transient:
    return retry_state.outcome.exception()


class Request:
    """One :meth:`.client.HttpClient.request`: its attempts, waits and failures on :class:`tenacity.Retrying`.

    ``client`` is not imported here (the client imports this module); ``limited``: the origin is the
    provider's (``--violin-rate`` counts it); ``in_sample``: it shares the sample's budget.
    """

    def __init__(self, client, method: str, url: str, what: str, kwargs: dict, *,
                 limited: bool, in_sample: bool):
        self.client, self.method, self.url, self.what, self.kwargs = client, method, url, what, kwargs
        self.shown_url = redact_url(url)
        self.limited, self.in_sample = limited, in_sample
        budget_end = getattr(_local, "budget_end", None) if in_sample else None
        self.budget_end = time.monotonic() + client.sample_budget if budget_end is None else budget_end
        self.attempts = 0  # attempts sent (tenacity also counts one that ends before it is sent)
        self.status: int | None = None
        self._waits: dict[int, float] = {}  # per attempt: tenacity asks both wait and stop for it
        self._requeue: tuple | None = None  # (place, failure) given back for a 429's wait

    def run(self) -> HttpResult:
        """The 2xx result; raises the last failure (see :meth:`.client.HttpClient.request`)."""
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Transient),
            stop=tenacity.stop_any(tenacity.stop_after_attempt(self.client.policy.retries + 1),
                                   self._wait_over_cap, self._wait_past_budget),
            wait=self._wait, sleep=self._sleep, before_sleep=self._before_sleep,
            retry_error_callback=self._give_up,
        )
        return retrying(self._attempt)

    # -- one attempt --------------------------------------------------------
    def _attempt(self) -> HttpResult:
        client = self.client
        start, allowed = self._time_for_attempt()
        self.attempts += 1
        attempt = Attempt(start + allowed, client.cancel)
        client.count_request(retry=self.attempts > 1)
        _local.sent = getattr(_local, "sent", 0) + 1
        response, body, failure = send_once(client.session, self.method, self.url, attempt, allowed=allowed,
                                            max_bytes=client.max_bytes, kwargs=self.kwargs)
        self.status = None if response is None else response.status_code
        if failure is None and 200 <= self.status < 300:
            if not self.in_sample:
                release_large()
            return HttpResult(status=self.status, headers=response.headers, content=body,
                              url=response.url or self.url, attempts=self.attempts,
                              elapsed=time.monotonic() - start)
        release_large()
        if failure is not None and attempt.fired == "cancel":
            raise self._cancelled()
        if failure is None:
            found = answer_failure(response, self.status, body)
        else:
            body = b""
            found = self._explain(failure, attempt, allowed)
        if not found.transient:
            raise self._final(found, body)
        raise _Transient(found, body)

    def _time_for_attempt(self) -> tuple[float, float]:
        """``(start, seconds allowed)`` of the next attempt; raises when the run or the budget says no."""
        client = self.client
        if client.cancel.is_set():
            release_large()
            raise self._cancelled()
        if client.rate_limiter is not None and self.limited:
            if not client.rate_limiter.take(client.cancel, self.budget_end):
                release_large()
                self._out_of_time(f"--violin-rate ({client.rate_limiter.rate:g} requests/s) leaves no time "
                                  f"in the sample's budget of {self._budget()}")
        start = time.monotonic()
        allowed = min(client.timeout, self.budget_end - start)
        if allowed <= 0:
            release_large()
            raise self._fail(f"no time left in the sample's budget of {self._budget()}", False,
                             cls=GenerationUnjudged)
        return start, allowed

    def _explain(self, failure: Exception, attempt: Attempt, allowed: float) -> Failure:
        """The :class:`~.outcomes.Failure` of an attempt that raised ``failure``; raises what is not ours."""
        client = self.client
        found = exception_failure(failure, fired=attempt.fired, status=self.status, allowed=allowed,
                                  timeout=client.timeout, sample_budget=client.sample_budget,
                                  max_bytes=client.max_bytes)
        if found is None and isinstance(failure, UrlRefused):  # a redirect to a refused URL
            raise UrlRefused(f"{self.what} {self.shown_url}: {failure.reason}", attempts=self.attempts,
                             status=self.status) from None
        if found is None:
            raise failure
        return found

    # -- tenacity's parts ---------------------------------------------------
    def _wait(self, retry_state: tenacity.RetryCallState) -> float:
        """Seconds before the next attempt (drawn once per attempt)."""
        number = retry_state.attempt_number
        if number not in self._waits:
            self._waits[number] = self.client.policy.delay(number - 1, _transient(retry_state).found.retry_after)
        return self._waits[number]

    def _wait_over_cap(self, retry_state: tenacity.RetryCallState) -> bool:
        retry_after = _transient(retry_state).found.retry_after
        return retry_after is not None and retry_after > self.client.policy.retry_after_cap

    def _wait_past_budget(self, retry_state: tenacity.RetryCallState) -> bool:
        return self._wait(retry_state) >= self.budget_end - time.monotonic()

    def _give_up(self, retry_state: tenacity.RetryCallState) -> None:
        """Raise the failure that stopped the loop, saying which stop it was."""
        last = _transient(retry_state)
        found, policy = last.found, self.client.policy
        if self.attempts > policy.retries:
            raise self._final(found, last.body)
        if self._wait_over_cap(retry_state):
            raise self._fail(f"{found.reason}; the server asks to retry after {found.retry_after:g} s, longer "
                             f"than the longest wait of {policy.retry_after_cap:g} s", found.transport)
        raise self._fail(f"{found.reason}; no time left for a retry in the sample's budget of {self._budget()}",
                         found.transport)

    def _before_sleep(self, retry_state: tenacity.RetryCallState) -> None:
        found = _transient(retry_state).found
        log.info("%s %s: %s; retry %d of %d in %.2f s", self.what, self.shown_url, redact(found.reason),
                 self.attempts, self.client.policy.retries, self._wait(retry_state))
        slot = getattr(_local, "slot", None)
        if self.status == 429 and slot is not None and slot is self.client.limit:
            # the endpoint is full: fewer samples in flight, and this one queues again after the wait
            slot.overloaded()
            slot.release()
            _local.slot = None
            self._requeue = (slot, found)

    def _sleep(self, seconds: float) -> None:
        """Wait for the next attempt on the run's cancel event, then for a place again after a 429."""
        client = self.client
        if seconds > 0:
            if client.policy.sleep is not None:
                client.policy.sleep(seconds)
            else:
                client.cancel.wait(seconds)
            if client.cancel.is_set():
                raise self._cancelled()
        if self._requeue is not None:
            (slot, found), self._requeue = self._requeue, None
            if not slot.acquire(client.cancel, self.budget_end, urgent=True):
                self._out_of_time(f"{found.reason}; no place among the samples in flight within the "
                                  f"sample's budget of {client.sample_budget:g} s", found.transport)
            _local.slot = slot

    # -- failures -----------------------------------------------------------
    def _budget(self) -> str:
        return f"{self.client.sample_budget:g} s ({SAMPLE_BUDGET_FACTOR} x the timeout)"

    def _fail(self, reason: str, transport: bool, *, cls=None, body: bytes = b"") -> GenerationError:
        # SetupError for a status that says the request itself is invalid (.outcomes.error_class)
        error = (cls or error_class(self.status, transport))(
            truncate(redact(f"{self.what} {self.shown_url} failed: {reason}"), 2 * MESSAGE_LIMIT + 120),
            attempts=self.attempts, status=self.status, transport=transport)
        error.body = body
        return error

    def _final(self, found: Failure, body: bytes) -> GenerationError:
        return self._fail(found.reason, found.transport, cls=GenerationUnjudged if found.unjudged else None,
                          body=body)

    def _cancelled(self) -> GenerationCancelled:
        return GenerationCancelled(f"{self.what} {self.shown_url} cancelled: the run was interrupted",
                                   attempts=self.attempts, status=self.status)

    def _out_of_time(self, reason: str, transport: bool = False) -> None:
        """Raise for a wait that ended without its turn: cancelled, or a time-out (never scored)."""
        if self.client.cancel.is_set():
            raise self._cancelled()
        raise self._fail(reason, transport, cls=GenerationUnjudged)
