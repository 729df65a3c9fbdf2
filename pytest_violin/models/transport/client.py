"""The HTTP client the model adapters share: :class:`HttpClient` composes the transport's pieces.

:class:`HttpClient` (one per adapter, shared by its threads) sends requests
through :meth:`~HttpClient.request`, whose attempts and waits run on
tenacity (:mod:`.retries`: :class:`~.retries.Request`), over the pieces
(each one job, see README "Layout"): :mod:`.session` (the requests session;
:mod:`.environment`: proxies, CA, netrc read once; :mod:`.origins`: where
credentials may go; :mod:`.credentials`: headers, ``${ENV}``),
:mod:`.deadline` (one attempt's deadline, its watchdog), :mod:`.body` (byte
limit, content decoding, the large-answer budget), :mod:`.outcomes` (why an
attempt failed, whether to retry, setup error or the model's failure),
:mod:`.limits` (``--violin-rate``, samples in flight, one sample's scope and
budget), :mod:`.result` (:class:`HttpResult`).
:func:`client_from_options` builds a client from
:class:`~pytest_violin.models.AdapterOptions` (checked in :mod:`.client_options`).

Bounds (docs/models.md, "Timeouts and retries" and "Limits"): the timeout is
a deadline for the whole attempt, one sample spends at most
:data:`SAMPLE_BUDGET_FACTOR` times it in all attempts and retry waits, an
answer over ``max_answer_bytes`` is refused before reading past the limit,
and the run's cancel event ends waits and in-flight attempts at once
(:class:`~pytest_violin.errors.GenerationCancelled`). Every failure is a
:class:`~pytest_violin.errors.GenerationError` with a one-line, redacted
reason, the HTTP status and the number of attempts. The pieces' names that
adapters and tests import from here stay importable from here.
"""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any, Mapping

from ...errors import GenerationError, ModelSpecError
from ...redaction import redact_url
from .body import (ACCEPT_ENCODING, DEFAULT_MAX_ANSWER_BYTES, ERROR_BODY_BYTES, LARGE_ANSWER_BYTES,
                   LARGE_ANSWER_BUDGET, MAX_BODY_BYTES)
from .client_options import client_settings
from .deadline import state as _local
from .environment import EnvironmentSettings
from .limits import AdaptiveLimit, RateLimiter, budget_left, parse_rate, renew_budget, sample_scope
from .origins import UrlRefused, guard, origin_or_none
from .outcomes import is_transient_status, parse_retry_after
from .result import HttpResult
from .retries import SAMPLE_BUDGET_FACTOR, Request, RetryPolicy
from .session import USER_AGENT, make_session

# its own: HttpClient, client_from_options, SAMPLE_BUDGET_FACTOR, thread_requests; the rest as before the split
__all__ = [
    "ACCEPT_ENCODING", "DEFAULT_MAX_ANSWER_BYTES", "ERROR_BODY_BYTES", "LARGE_ANSWER_BYTES",
    "LARGE_ANSWER_BUDGET", "MAX_BODY_BYTES", "SAMPLE_BUDGET_FACTOR", "USER_AGENT", "EnvironmentSettings",
    "HttpClient", "HttpResult", "RetryPolicy", "client_from_options", "is_transient_status",
    "make_session", "parse_retry_after", "thread_requests",
]

def thread_requests() -> int:
    """Requests every :class:`HttpClient` has sent from the calling thread so far.

    A caller that reads it before and after an adapter's ``generate`` learns
    whether that call sent anything (the run's call count gives back a call
    cancelled before its first request).
    """
    return getattr(_local, "sent", 0)


def _no_auth(request):
    return request


class HttpClient:
    """A session plus the retry loop (:class:`~.retries.Request`), shared by one adapter's threads.

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
        renew_budget(self.sample_budget)

    def budget_left(self) -> float:
        """Seconds left in this thread's sample budget (a whole budget outside a sample)."""
        return budget_left(self.sample_budget)

    def sample(self) -> contextlib.AbstractContextManager:
        """Scope of one sample's requests (the adapters' ``generate``): one time budget
        (:attr:`sample_budget`) for all of them, a large answer's reservation kept to the end, and
        a place among the samples in flight (:func:`.limits.sample_scope`)."""
        return sample_scope(self.limit, self.cancel, self.sample_budget)

    def count_request(self, *, retry: bool) -> None:
        """Count one request sent (``retry``: it repeats a failed attempt; the run's totals count them apart)."""
        with self._lock:
            self.requests_sent += 1
            if retry:
                self.retries_sent += 1

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
            self._origins.add(origin_or_none(url))
        # --violin-rate counts requests to the provider, not downloads from another host (a CDN)
        return Request(self, method, url, what, kwargs, limited=origin_or_none(url) in self._origins,
                       in_sample=getattr(_local, "depth", 0) > 0).run()

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
        if origin_or_none(url) in self._origins:
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
    ``headers`` are adapter-specific headers added first (the configured ones
    win). ``options.extra`` may set ``backoff_base``, ``backoff_cap`` and
    ``retry_after_cap`` (seconds) for the retry policy, and ``rate``
    (``--violin-rate``: ``"N/s"``, ``"N/min"`` or requests per second). The
    environment's proxy, CA bundle and netrc settings are read here, once (call
    it in the main thread). ``origins`` and ``domains``: what the user named
    (see :class:`HttpClient`). Raises :class:`ModelSpecError` for malformed
    headers, an unset ``${ENV}`` variable or bad numbers (:mod:`.client_options`).
    """
    return HttpClient(**client_settings(options, auth=auth, headers=headers, origins=origins, domains=domains))
