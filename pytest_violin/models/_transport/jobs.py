"""Job APIs: submit, poll until a terminal state, then fetch the result: :func:`poll_job`.

The one polling loop the adapters share honours the provider's hints
(``Retry-After``, an interval in the body), backs off up to a cap, stays in
the sample's budget and stops at once on cancel, cancelling the remote job
where the provider allows it. Queue time is not generation time: while the
job waits in the server's queue (:attr:`JobStates.queued`) the budget is held
back, the whole wait bounded by ``wait_limit`` (:data:`QUEUE_WAIT_FACTOR` x
the budget). A job the server no longer knows ends after
:data:`VANISHED_POLLS` polls in a row. Both, and a job over its budget, are
:class:`~pytest_violin.errors.GenerationUnjudged`: an error, not the model's
failure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...errors import (GenerationCancelled, GenerationError, GenerationRefused, GenerationUnjudged,
                       ServerCrashed)
from ...redaction import redact, redact_url
from .answers import load_json
from .client import HttpClient
from .retries import parse_retry_after


#: The overall wait limit of a job (queue and run) in sample budgets.
QUEUE_WAIT_FACTOR = 5.0

#: Polls in a row in a :attr:`JobStates.vanished` state after which the job is lost.
VANISHED_POLLS = 3


@dataclass(frozen=True)
class JobStates:
    """How to read a provider's job status (states compare case-insensitively).

    * ``done``, ``failed``, ``refused``: terminal states; ``refused`` ones (moderation) end as
      :class:`~pytest_violin.errors.GenerationRefused`.
    * ``state_of(body)``, ``message_of(body)``, ``interval_of(body)``: a status answer's state, the
      provider's reason for a failure, a suggested wait in seconds.
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
            _cancel_quietly(cancel_job)
            raise GenerationCancelled(f"{what} at {shown} cancelled: the run was interrupted")
        if time.monotonic() >= deadline - 0.05:
            # one last look (and the image download, if it finished) before the time-out
            client.renew_budget()
        try:
            status, answer = fetch()
        except GenerationCancelled:  # interrupted during a poll: the remote job is cancelled too
            _cancel_quietly(cancel_job)
            raise
        if not isinstance(status, dict):
            raise GenerationError(f"{what} status at {shown} is not a JSON object")
        state = str(states.state_of(status) or "").lower()
        now = time.monotonic()
        if state in queued or was_queued:
            # queue time is not generation time: the budget starts when the job is
            # first seen out of the queue (up to one poll interval late: in its favour)
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
            _cancel_quietly(cancel_job)
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


def _cancel_quietly(cancel_job) -> None:
    if cancel_job is None:
        return
    try:
        cancel_job()
    except Exception:  # best effort: the run is stopping anyway
        pass
