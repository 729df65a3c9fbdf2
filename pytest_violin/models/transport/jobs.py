"""Job APIs: submit, poll until a terminal state, then fetch the result.

Most hosted image models answer *later*: a submit returns a job id or a
polling URL, the job moves through states, and a terminal state carries a
result URL (or a failure). :func:`poll_job` is the one polling loop the
adapters share: it honours the provider's hints (``Retry-After``, a
suggested interval in the body), backs off exponentially up to a cap,
stays inside the sample's time budget (``--violin-timeout``, see
:meth:`~pytest_violin.models.transport.client.HttpClient.sample`), and stops
at once when the run is cancelled (Ctrl-C), after cancelling the remote job
where the provider allows it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...errors import GenerationCancelled, GenerationError, GenerationRefused
from ...redaction import redact, redact_url
from .client import HttpClient, parse_retry_after
from .decode import load_json

__all__ = ["JobStates", "poll_job"]


@dataclass(frozen=True)
class JobStates:
    """How to read a provider's job status.

    Attributes
    ----------
    done, failed, refused : frozenset of str
        Terminal states (compared case-insensitively). ``refused`` states
        (moderation) end as :class:`~pytest_violin.errors.GenerationRefused`.
    state_of : callable
        ``state_of(body) -> str``: the state of a status answer (a dict).
    message_of : callable, optional
        ``message_of(body) -> str``: the provider's reason, for failures.
    interval_of : callable, optional
        ``interval_of(body) -> float | None``: a suggested wait in seconds.
    """

    done: frozenset
    failed: frozenset = frozenset()
    refused: frozenset = frozenset()
    state_of: Callable[[Mapping], str] = lambda body: str(body.get("status", ""))
    message_of: Callable[[Mapping], str] | None = None
    interval_of: Callable[[Mapping], float | None] | None = None


def _lower(values) -> frozenset:
    return frozenset(str(v).lower() for v in values)


def poll_job(client: HttpClient, url: str, states: JobStates, *, what: str = "job",
             first_wait: float = 0.5, max_wait: float = 5.0, method: str = "GET",
             body: Any = None, cancel_job: Callable[[], None] | None = None,
             request_kwargs: Mapping[str, Any] | None = None, with_answer: bool = False):
    """Poll ``url`` until the job reaches a terminal state; return the last status answer.

    Parameters
    ----------
    client : HttpClient
        The adapter's client (retries, deadlines, size caps, redirects);
        call this inside ``with client.sample():`` so the whole job shares
        the sample's time budget.
    url : str
        The status URL.
    states : JobStates
        How to read the answers.
    what : str
        Named in messages ("BFL job", ...).
    first_wait, max_wait : float
        Seconds before the first poll and the cap of the exponential
        backoff (doubling) between polls; a ``Retry-After`` header or a
        suggested interval in the body wins, within ``[0.05, max_wait]``.
    method, body
        ``POST`` with a JSON ``body`` for APIs that poll that way.
    cancel_job : callable, optional
        Called (best effort) when the run is cancelled while the job runs.
    request_kwargs : Mapping, optional
        Extra arguments of each status request (``client.anonymous(url)``
        for a status URL on a host the user did not name).
    with_answer : bool
        Return ``(status, HttpResult)``: the last answer too (its URL and
        headers), e.g. to read the image from it.

    Raises
    ------
    GenerationRefused
        A refused state (moderation).
    GenerationError
        A failed state, an answer that is not a JSON object, or the
        sample's time budget spent.
    GenerationCancelled
        The run was interrupted (after ``cancel_job``).
    """
    done, failed, refused = _lower(states.done), _lower(states.failed), _lower(states.refused)
    wait = first_wait
    deadline = time.monotonic() + client.sample_budget
    shown = redact_url(url)
    while True:
        if client.cancel.wait(max(0.0, min(wait, deadline - time.monotonic()))) or client.cancel.is_set():
            _cancel_quietly(cancel_job)
            raise GenerationCancelled(f"{what} at {shown} cancelled: the run was interrupted")
        if time.monotonic() >= deadline:
            _cancel_quietly(cancel_job)
            raise GenerationError(f"{what} at {shown} did not finish within {client.sample_budget:g} s "
                                  f"(2 x --violin-timeout)")
        try:
            if method == "GET":
                answer = client.request("GET", url, what=f"{what} status", **dict(request_kwargs or {}))
            else:
                answer = client.post_json(url, body, what=f"{what} status")
        except GenerationCancelled:  # interrupted during a poll: the remote job is cancelled too
            _cancel_quietly(cancel_job)
            raise
        try:
            status = load_json(answer.content)  # nesting bounded
        except (UnicodeDecodeError, ValueError):
            raise GenerationError(f"{what} status at {shown} is not JSON") from None
        if not isinstance(status, dict):
            raise GenerationError(f"{what} status at {shown} is not a JSON object")
        state = str(states.state_of(status) or "").lower()
        if state in done:
            return (status, answer) if with_answer else status
        if state in refused or state in failed:
            message = states.message_of(status) if states.message_of else ""
            text = redact(f"{what} {state}" + (f": {str(message)[:300]}" if message else ""))
            raise (GenerationRefused if state in refused else GenerationError)(text)
        hint = parse_retry_after(answer.headers.get("Retry-After"))
        if hint is None and states.interval_of is not None:
            try:
                hint = states.interval_of(status)
            except (TypeError, ValueError):
                hint = None
        if hint is not None:
            wait = min(max(float(hint), 0.05), max_wait)
        else:
            wait = min(max(wait, first_wait) * 2.0, max_wait)


def _cancel_quietly(cancel_job) -> None:
    if cancel_job is None:
        return
    try:
        cancel_job()
    except Exception:  # best effort: the run is stopping anyway
        pass
