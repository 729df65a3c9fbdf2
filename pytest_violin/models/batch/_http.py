"""What the batch APIs share (internal): JSON calls through the adapter's client, streamed downloads.

A batch's answers can be far larger than one synchronous answer (every
image of the batch, base64): :func:`stream_to` writes them to a file as they
arrive, under a byte cap, through the adapter's own session (so the key
still goes only to the provider's origin), never holding them in memory.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from ...errors import GenerationCancelled, GenerationError
from ...redaction import redact, redact_url
from .._transport.answers import load_json, server_message, truncate
from .._transport.retries import error_class

__all__ = ["ATTEMPTS", "create_once", "get_json", "json_of", "post_json", "stream_to"]

#: Attempts of one streamed download (a batch's answers stay available: a retry costs nothing).
ATTEMPTS = 3
_CHUNK = 1 << 16


def json_of(result, what: str) -> dict:
    """The JSON object of an :class:`~.._transport.answers.HttpResult`, or a GenerationError naming ``what``."""
    try:
        obj = load_json(result.content)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise GenerationError(f"{what}: the answer of {redact_url(result.url)} is not a JSON object "
                              f"({len(result.content)} bytes)", status=result.status)
    return obj


def get_json(client, url: str, what: str) -> dict:
    return json_of(client.request("GET", url, what=what), what)


def post_json(client, url: str, body, what: str) -> dict:
    return json_of(client.post_json(url, body, what=what), what)


def create_once(client, send, find):
    """``(send's result, None)`` or ``(None, id)``: a batch create that is never sent twice for one batch.

    The client's own retries would send again a create whose answer was lost
    (a second batch, paid twice): here each attempt is sent once (``send(once)``
    with a copy of ``client`` that does not retry); a 429 is tried again after
    a wait, an attempt without an answer (or a 5xx) only after ``find()``
    shows no batch with this run's tag (and when it shows one, its id is the
    answer).
    """
    once = copy.copy(client)
    once.policy = replace(client.policy, retries=0)
    retries = client.policy.retries
    for attempt in range(retries + 1):
        try:
            return send(once), None
        except GenerationError as exc:
            unsure = exc.transport or (exc.status or 0) >= 500
            if unsure:
                found = find()
                if found is not None:
                    return None, found
            if attempt >= retries or not (unsure or exc.status == 429) or client.cancel.wait(
                    client.policy.delay(attempt)):
                raise
    raise GenerationError("batch create: no attempt left")  # not reached: the loop returns or raises


def stream_to(client, url: str, sink, *, max_bytes: int, what: str) -> int:
    """GET ``url`` into ``sink`` (a binary file), at most ``max_bytes``; return the bytes written.

    Retried (from the start, ``sink`` truncated) after a failure without an
    answer or a 5xx/429; another error answer raises at once with the
    server's message.
    """
    last: GenerationError | None = None
    for attempt in range(1, ATTEMPTS + 1):
        if client.cancel.is_set():
            raise GenerationCancelled(f"{what}: cancelled: the run was interrupted", attempts=attempt - 1)
        sink.seek(0)
        sink.truncate()
        try:
            with client.session.get(url, stream=True, timeout=(client.timeout, client.timeout)) as response:
                client.count_request(retry=attempt > 1)
                status = int(response.status_code)
                if status >= 400:
                    body = response.raw.read(4096, decode_content=True) or b""
                    message = server_message(body, response.headers.get("Content-Type", ""))
                    error = error_class(status)(f"{what} {redact_url(url)}: HTTP {status}: {message}",
                                                attempts=attempt, status=status)
                    if status < 500 and status != 429:
                        raise error
                    last = error
                else:
                    written = 0
                    for chunk in response.iter_content(_CHUNK):
                        written += len(chunk)
                        if written > max_bytes:
                            raise GenerationError(f"{what} {redact_url(url)}: more than {max_bytes} bytes; "
                                                  f"accepted: at most {max_bytes}", attempts=attempt,
                                                  status=status)
                        sink.write(chunk)
                        if client.cancel.is_set():
                            raise GenerationCancelled(f"{what}: cancelled: the run was interrupted",
                                                      attempts=attempt)
                    sink.flush()
                    return written
        except GenerationError:
            raise
        except Exception as exc:  # no answer (connection, time-out): tried again
            last = GenerationError(truncate(redact(f"{what} {redact_url(url)}: {type(exc).__name__}: {exc}")),
                                   attempts=attempt, transport=True)
        if client.cancel.wait(min(2.0 ** attempt, 10.0) * 0.1):
            break
    raise last if last is not None else GenerationCancelled(f"{what}: cancelled", attempts=0)
