"""The HTTP client the network adapters share: :class:`HttpClient`, its session and its options.

The session never reads the environment and keeps credentials home: every request, redirect hops included,
passes :func:`.origins.guard` with the prepared URL in ``send`` (response hooks run too late to keep a header
from a host). Bounds are in docs/models.md ("Timeouts and retries", "Limits").

Job APIs (:func:`poll_job`): the one polling loop the adapters share honours the provider's hints
(``Retry-After``, an interval in the body), backs off up to a cap, stays in the sample's budget and stops at
once on cancel, cancelling the remote job where the provider allows it. Queue time is not generation time:
while the job waits in the server's queue (:attr:`JobStates.queued`) the budget is held back, the whole wait
bounded by ``wait_limit`` (:data:`QUEUE_WAIT_FACTOR` x the budget). A job the server no longer knows ends
after :data:`VANISHED_POLLS` polls in a row. Both, and a job over its budget, are
:class:`~pytest_violin.errors.GenerationUnjudged`: an error, not the model's failure.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import requests

from ... import __version__
from ...errors import (GenerationCancelled, GenerationError, GenerationRefused, GenerationUnjudged, ModelSpecError,
                       ServerCrashed)
from ...redaction import install_log_redaction, redact, redact_url
from .answers import HttpResult, load_json
from .bounds import (ACCEPT_ENCODING, AdaptiveLimit, DEFAULT_MAX_ANSWER_BYTES, RateLimiter, WatchedAdapter,
                     budget_left, parse_rate, renew_budget, sample_scope, state as _local)
from .origins import (EnvironmentSettings, Origins, PUBLIC_HEADERS, UrlRefused, guard, origin_or_none,
                      parse_headers, resolve)
from .retries import SAMPLE_BUDGET_FACTOR, Request, RetryPolicy, parse_retry_after


USER_AGENT = f"pytest-violin/{__version__}"


class _Session(requests.Session):
    """A session that never reads the environment (``trust_env`` off: :class:`EnvironmentSettings` instead)
    and keeps credentials home: off a redirect that leaves the origin, and off any request to an origin the
    user did not name (:meth:`send`).
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
        # the one place every request passes, redirect hops included, with the URL requests connects with:
        # refused URLs never leave, and an origin not named gets no credential of ours
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
            # requests reads a redirect's whole body before following it, outside the answer's byte cap and
            # decoding limits: nothing of it is needed. Closed unread, its connection is dropped, not pooled
            # with the body still in it.
            resp.close()
            resp._content, resp._content_consumed = b"", True
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
        start = origin_or_none(response.request.url)
        if start is None or start != origin_or_none(prepared_request.url):
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
    """A session whose pool keeps ``concurrency`` connections (plus two for downloads) per host.

    urllib3's retries are off (:class:`HttpClient` retries) and ``env`` (proxies, CA bundle, netrc) is
    captured now when not given: call it in the main thread.
    """
    size = max(int(concurrency), 1) + 2
    session = _Session(env if env is not None else EnvironmentSettings.capture())
    adapter = WatchedAdapter(pool_connections=4, pool_maxsize=size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = USER_AGENT
    session.headers["Accept-Encoding"] = ACCEPT_ENCODING
    if headers:
        session.headers.update(headers)
        session.credential_headers |= {n for n in headers if n.lower() not in PUBLIC_HEADERS}
    # urllib3 logs every request line at DEBUG ("POST /gen?key=... HTTP/1.1"): redact records of the HTTP
    # stack before any handler sees them
    install_log_redaction()
    return session


def thread_requests() -> int:
    """Requests every :class:`HttpClient` has sent from the calling thread so far (read around a
    ``generate``, it tells whether the call sent anything)."""
    return getattr(_local, "sent", 0)


def _no_auth(request):
    return request


class HttpClient:
    """A session plus the retry loop (:class:`~.retries.Request`), shared by one adapter's threads.

    * ``timeout``: a deadline for each whole attempt, body included (not a per-read timeout); one sample
      (:meth:`sample`), or one :meth:`request` outside a sample, spends at most :attr:`sample_budget` in all
      attempts and retry waits.
    * ``cancel``: the run's cancel event; once set no attempt or retry starts, waits end and attempts in
      flight are aborted (:class:`~pytest_violin.errors.GenerationCancelled`).
    * ``rate``: request starts per second for the process (:class:`~.bounds.RateLimiter`); ``adaptive``:
      samples in flight follow an :class:`~.bounds.AdaptiveLimit`.
    * ``origins``, ``domains``: the URLs (and a provider's own ``https`` domains) the user named; without them
      the client learns the origins it sends credentials to.

    Credentials (``auth``, ``Authorization``, ``Cookie`` and every configured header but ``Accept``,
    ``Content-Type`` and the like) go only to those origins: a redirect elsewhere drops them, and an image URL
    on another host (OpenAI's blob storage) is fetched without them.
    """

    def __init__(self, *, concurrency: int = 4, headers: Mapping[str, str] | None = None, timeout: float = 120.0,
                 policy: RetryPolicy | None = None, auth: tuple[str, str] | None = None,
                 max_bytes: int = DEFAULT_MAX_ANSWER_BYTES, cancel: threading.Event | None = None,
                 env: EnvironmentSettings | None = None, rate: float | None = None, adaptive: bool = True,
                 origins=(), domains=()):
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
        """Start this thread's sample budget again (its job waited in the server's queue until now)."""
        renew_budget(self.sample_budget)

    def budget_left(self) -> float:
        """Seconds left in this thread's sample budget (a whole budget outside a sample)."""
        return budget_left(self.sample_budget)

    def sample(self) -> contextlib.AbstractContextManager:
        """Scope of one sample's requests (the adapters' ``generate``): :func:`.bounds.sample_scope`."""
        return sample_scope(self.limit, self.cancel, self.sample_budget)

    def count_request(self, *, retry: bool) -> None:
        """Count one request sent (``retry``: it repeats a failed attempt; the run's totals count them apart)."""
        with self._lock:
            self.requests_sent += 1
            if retry:
                self.retries_sent += 1

    def request(self, method: str, url: str, *, what: str = "request", **kwargs) -> HttpResult:
        """Send a request, retrying transient failures; return the 2xx result.

        ``what`` names it in messages ("POST", "image download"); bodies in ``kwargs`` must be re-sendable
        (bytes, not open files). Raises :class:`GenerationError` with a one-line redacted reason, the last
        status and the attempts, or :class:`GenerationCancelled`.
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
        """Keyword arguments of :meth:`request` that send ``url`` (read from an answer) no credentials,
        unless its origin is one this client sends requests to (``{}`` then)."""
        if origin_or_none(url) in self._origins:
            return {}
        return {"headers": dict.fromkeys(self._credential_headers), "auth": _no_auth}

    def fetch(self, url: str) -> bytes:
        """GET ``url`` with the same session and retries, credentials only for a known origin; the body."""
        # None drops a session header; _no_auth: neither the session's Basic auth nor ~/.netrc
        kwargs = self.anonymous(url)
        return self.request("GET", url, what="image download", **kwargs).content

    def close(self) -> None:
        """Close the session and its pooled connections (idempotent)."""
        self._closed = True
        self.session.close()


def client_from_options(options, *, auth: tuple[str, str] | None = None,
                        headers: Mapping[str, str] | None = None, origins=(), domains=()) -> HttpClient:
    """An :class:`HttpClient` for :class:`~pytest_violin.models.AdapterOptions`, its numbers checked.

    ``headers`` (the adapter's own) come first, ``options.headers`` (expanded, registered as secrets) win;
    ``options.extra`` may set ``backoff_base``, ``backoff_cap``, ``retry_after_cap`` (seconds) and ``rate``
    (``--violin-rate``). Raises :class:`ModelSpecError` for malformed headers, an unset ``${ENV}`` variable or
    bad numbers. Reads the environment: call it in the main thread.
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
    return HttpClient(rate=parse_rate(rate) if rate is not None else None, concurrency=concurrency,
                      headers=merged, timeout=getattr(options, "timeout", 120.0),
                      policy=RetryPolicy(retries=retries, **knobs), auth=auth,
                      max_bytes=getattr(options, "max_answer_bytes", DEFAULT_MAX_ANSWER_BYTES),
                      cancel=getattr(options, "cancel", None), origins=origins, domains=domains)


#: The overall wait limit of a job (queue and run) in sample budgets.
QUEUE_WAIT_FACTOR = 5.0

#: Polls in a row in a :attr:`JobStates.vanished` state after which the job is lost.
VANISHED_POLLS = 3


@dataclass(frozen=True)
class JobStates:
    """How to read a provider's job status (states compare case-insensitively).

    * ``done``, ``failed``, ``refused``: terminal states; ``refused`` ones (moderation) end as
      :class:`~pytest_violin.errors.GenerationRefused`.
    * ``state_of(body)``, ``message_of(body)``, ``interval_of(body)``: a status answer's state, the provider's
      reason for a failure, a suggested wait in seconds.
    * ``queued``: a job still waiting in the server's queue: the sample's budget starts when it leaves them.
    * ``vanished``: the server does not know the job (any more).
    * ``broken``: failures that are the server's fault (ComfyUI's ``execution_error``: CUDA out of memory):
      :class:`~pytest_violin.errors.ServerCrashed`, an error, never a score.
    """

    done: frozenset
    failed: frozenset = frozenset()
    broken: frozenset = frozenset()
    refused: frozenset = frozenset()
    state_of: Callable[[Mapping], str] = lambda body: str(body.get("status", ""))
    message_of: Callable[[Mapping], str] | None = None
    interval_of: Callable[[Mapping], float | None] | None = None
    queued: frozenset = frozenset()
    vanished: frozenset = frozenset()


def _lower(values) -> frozenset:
    return frozenset(str(v).lower() for v in values)


def poll_job(client: HttpClient, url: str, states: JobStates, *, what: str = "job",
             first_wait: float = 0.5, max_wait: float = 5.0, method: str = "GET",
             body: Any = None, cancel_job: Callable[[], None] | None = None,
             request_kwargs: Mapping[str, Any] | None = None, with_answer: bool = False,
             fetch: Callable[[], tuple] | None = None, wait_limit: float | None = None):
    """Poll ``url`` until the job reaches a terminal state; return the last status answer.

    Call it inside ``with client.sample():`` so the whole job shares the sample's budget.

    * ``first_wait``, ``max_wait``: seconds before the first poll and the cap of the doubling wait between
      polls; a ``Retry-After`` header or an interval in the body wins, within ``[0.05, max_wait]``.
    * ``method``, ``body``: ``POST`` with a JSON ``body`` for APIs that poll that way.
    * ``cancel_job``: called (best effort) when the run is cancelled while the job runs.
    * ``request_kwargs``: of each status request (``client.anonymous(url)`` for a host the user did not name).
    * ``with_answer``: return ``(status, HttpResult)``, the last answer too.
    * ``fetch``: ``fetch() -> (status dict, HttpResult)`` instead of one request to ``url`` (ComfyUI: its
      history, then its queue).
    * ``wait_limit``: seconds the whole job may take; default :data:`QUEUE_WAIT_FACTOR` x the budget.

    Raises :class:`GenerationRefused` for a refused state, :class:`GenerationError` for a failed state or an
    answer that is not a JSON object, :class:`GenerationUnjudged` when the budget or the wait limit is spent
    or the job vanished, :class:`GenerationCancelled` when the run was interrupted (after ``cancel_job``).
    """
    done, queued, vanished = _lower(states.done), _lower(states.queued), _lower(states.vanished)
    wait = first_wait
    budget = client.sample_budget
    started = time.monotonic()
    limit = float(wait_limit) if wait_limit is not None else QUEUE_WAIT_FACTOR * budget
    run_deadline = started + max(0.0, client.budget_left())  # the sample's budget, as the client counts it
    in_queue = 0.0  # seconds the job was seen waiting in the server's queue
    gone = 0
    was_queued = False
    shown = redact_url(url)
    if fetch is None:
        def fetch():
            return _fetch_status(client, url, what, shown, method, body, request_kwargs)
    while True:
        deadline = min(run_deadline, started + limit)
        if client.cancel.wait(max(0.0, min(wait, deadline - time.monotonic()))) or client.cancel.is_set():
            cancel_quietly(cancel_job)
            raise GenerationCancelled(f"{what} at {shown} cancelled: the run was interrupted")
        if time.monotonic() >= deadline - 0.05:
            # one last look (and the image download, if it finished) before the time-out
            client.renew_budget()
        try:
            status, answer = fetch()
        except GenerationCancelled:  # interrupted during a poll: the remote job is cancelled too
            cancel_quietly(cancel_job)
            raise
        if not isinstance(status, dict):
            raise GenerationError(f"{what} status at {shown} is not a JSON object")
        state = str(states.state_of(status) or "").lower()
        now = time.monotonic()
        if state in queued or was_queued:
            # queue time is not generation time: the budget starts when the job is first seen out of the queue
            # (up to one poll interval late: in its favour)
            in_queue = now - started
            run_deadline = now + budget
            client.renew_budget()
        was_queued = state in queued
        gone = gone + 1 if state in vanished else 0
        if gone >= VANISHED_POLLS:
            raise GenerationUnjudged(
                f"{what} at {shown} vanished: the server no longer knows it ({state!r} in {gone} polls in a row: "
                f"deleted from its queue by another client, or the server restarted)")
        if state in done:
            return (status, answer) if with_answer else status
        _raise_if_failed(states, state, status, what)
        if time.monotonic() >= min(run_deadline, started + limit):
            cancel_quietly(cancel_job)
            queue_note = f", after {in_queue:.0f} s in the server's queue" if in_queue >= 0.5 else ""
            if run_deadline <= started + limit:
                raise GenerationUnjudged(f"{what} at {shown} timed out: it did not finish within {budget:g} s "
                                         f"of running (2 x --violin-timeout){queue_note}")
            raise GenerationUnjudged(f"{what} at {shown} timed out: it did not finish within the overall wait "
                                     f"limit of {limit:g} s{queue_note} (lower --violin-concurrency or raise "
                                     f"--violin-timeout)")
        wait = _next_wait(answer, states, status, wait, first_wait, max_wait)


def _fetch_status(client: HttpClient, url: str, what: str, shown: str, method: str, body: Any,
                  request_kwargs: Mapping[str, Any] | None) -> tuple:
    if method == "GET":
        answer = client.request("GET", url, what=f"{what} status", **dict(request_kwargs or {}))
    else:
        answer = client.post_json(url, body, what=f"{what} status")
    try:
        return load_json(answer.content), answer  # nesting bounded
    except (UnicodeDecodeError, ValueError):
        raise GenerationError(f"{what} status at {shown} is not JSON") from None


def _raise_if_failed(states: JobStates, state: str, status: Mapping, what: str) -> None:
    refused, broken = state in _lower(states.refused), state in _lower(states.broken)
    if refused or broken or state in _lower(states.failed):
        message = states.message_of(status) if states.message_of else ""
        text = redact(f"{what} {state}" + (f": {str(message)[:300]}" if message else ""))
        raise (GenerationRefused if refused else ServerCrashed if broken else GenerationError)(text)


def _next_wait(answer, states: JobStates, status: Mapping, wait: float, first_wait: float,
               max_wait: float) -> float:
    """The provider's hint (``Retry-After``, an interval in the body) within bounds, else doubling."""
    hint = parse_retry_after(answer.headers.get("Retry-After"))
    if hint is None and states.interval_of is not None:
        try:
            hint = states.interval_of(status)
        except (TypeError, ValueError):
            hint = None
    if hint is not None:
        return min(max(float(hint), 0.05), max_wait)
    return min(max(wait, first_wait) * 2.0, max_wait)


def cancel_quietly(cancel_job) -> None:
    """Call ``cancel_job`` (when given), whatever it raises: the run is stopping anyway."""
    if cancel_job is not None:
        with contextlib.suppress(Exception):
            cancel_job()
