"""One attempt: send a request and read its body under the attempt's deadline.

:func:`send_once` registers the :class:`~.deadline.Attempt` with the
watchdog, sends with ``stream=True`` and reads the body with its limit
(:func:`.body.read_body`: the whole answer for a 2xx, as much of an error
answer as its message needs). It never raises for what went wrong: the
failure comes back for the client's retry loop to classify
(:mod:`.failures`).
"""

from __future__ import annotations

import requests

from .body import ERROR_BODY_BYTES, read_body
from .deadline import WATCHDOG, Attempt
from .deadline import state as _local

__all__ = ["send_once"]


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
    except Exception as exc:  # classified by the caller (.failures)
        return response, b"", exc
    finally:
        attempt.finish()
        _local.attempt = None
        WATCHDOG.remove(attempt)
    return response, body, None
