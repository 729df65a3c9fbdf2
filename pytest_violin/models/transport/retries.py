"""When to retry and how long to wait: :func:`is_transient_status`, :func:`parse_retry_after`, :class:`RetryPolicy`.

Connection errors, time-outs, 408, 429 and 5xx are retried with exponential
backoff and full jitter, or after the server's ``Retry-After`` (seconds or
an HTTP date, capped); other 4xx answers are final. The loop itself is
:meth:`.client.HttpClient.request`.

Why not urllib3's ``Retry``: it does not retry ``POST`` by default (every
generation is one), its backoff has no full jitter, and it knows neither the
sample's budget that spans all attempts and waits nor the run's cancel
event. Its ``Retry.parse_retry_after`` reads only whole seconds and reads a
date without a zone (``asctime`` form, ``-0000``) as the machine's local time
(:func:`email.utils.mktime_tz`), where HTTP dates are GMT; so the header is
read here with :func:`email.utils.parsedate_to_datetime`, and fractions of a
second are kept.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import random
import time
from dataclasses import dataclass
from typing import Callable

from ...errors import ModelSpecError

__all__ = ["RetryPolicy", "is_transient_status", "parse_retry_after"]


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
class RetryPolicy:
    """How often and how long to wait between attempts.

    Parameters
    ----------
    retries : int
        Retries after the first attempt (so ``retries + 1`` attempts at most).
    backoff_base : float
        Seconds; the n-th retry waits a uniform random time in
        ``[0, min(backoff_cap, backoff_base * 2**n)]`` ("full jitter").
    backoff_cap : float
        Longest backoff in seconds.
    retry_after_cap : float
        Longest wait a server's ``Retry-After`` can impose, in seconds.
    sleep : callable, optional
        ``sleep(seconds)``, injectable for tests; by default the client
        waits on the run's cancel event, so an interrupt ends the wait.
    rng : callable
        ``rng() -> float in [0, 1)``; injectable for tests.
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
        """Seconds to wait before retry number ``retry_index`` (0-based).

        A server's ``Retry-After`` wins (capped at ``retry_after_cap``);
        otherwise exponential backoff with full jitter.
        """
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap)
        ceiling = min(self.backoff_cap, self.backoff_base * (2.0**retry_index))
        return ceiling * self.rng()
