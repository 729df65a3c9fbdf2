"""Which answers are the model's, which are the request's: the classification every adapter shares.

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
error").
"""

from __future__ import annotations

import ipaddress
from typing import Callable
from urllib.parse import urlsplit

from ...errors import GenerationError, GenerationRefused, SetupError

__all__ = ["SETUP_STATUSES", "error_class", "is_loopback", "refusal_or"]

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
