"""Request-rate cap and adaptive concurrency shared by one HTTP client's threads.

* :class:`RateLimiter` (``--violin-rate=N/s`` or ``N/min``): a token bucket
  holding one token, i.e. request starts spaced at least ``1/rate`` apart
  (the "virtual scheduling" form of the generic cell rate algorithm, a
  token bucket of depth one). Every attempt a client starts (submits,
  polls, retries, downloads from the provider's own host) takes a token;
  image downloads from another origin (signed CDN URLs) do not. It is
  shared by the threads of one process: with ``pytest -n N`` each worker
  has its own bucket, so the run as a whole starts up to ``N * rate``
  requests; divide the rate by ``N``.
* :class:`AdaptiveLimit`: how many samples may be in flight at once. It
  starts at ``--violin-concurrency``; an answer ``429 Too Many Requests``
  lowers it to the number of *other* samples then in flight (what the
  endpoint evidently accepts), and the sample that got the 429 gives its
  place back and queues again before its retry. Each sample that ends
  without an error raises the limit by ``1/limit`` (one more per "round"
  of samples), up to ``--violin-concurrency``: the limit settles just
  around the endpoint's capacity without the user guessing it.
* :func:`sample_scope` (:meth:`.client.HttpClient.sample`): one sample's
  scope. The requests an adapter's ``generate`` makes inside it share one
  time budget (``budget_end`` in the thread's state, read by the retry loop
  in :mod:`.retries`), a large answer keeps its reservation (:mod:`.body`) until
  the scope ends, and the outermost scope holds one place of the client's
  :class:`AdaptiveLimit`. :func:`renew_budget` starts the budget again after
  a job waited in a queue (:mod:`.jobs`).

The first two are plain, lock-protected state machines with no thread of their own;
waits end at once when the run's cancel event is set.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from typing import Iterator

from ...errors import GenerationCancelled, ModelSpecError
from .body import release_large
from .deadline import state as _local

__all__ = ["AdaptiveLimit", "RateLimiter", "budget_left", "parse_rate", "renew_budget", "sample_scope"]

_RATE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*/\s*(s|sec|second|min|minute)\s*$", re.IGNORECASE)
_UNIT = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0}
#: Largest accepted rate, in requests per second.
MAX_RATE = 100_000.0
_TICK = 0.05  # longest wait between checks of the cancel event and the deadline


def parse_rate(value) -> float:
    """``"N/s"`` or ``"N/min"`` (or a number of requests per second) as requests per second.

    Raises
    ------
    ModelSpecError
        For anything else, naming the value and the accepted forms.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        rate = float(value)
    else:
        match = _RATE.match(str(value))
        if not match:
            raise ModelSpecError(
                f"rate {str(value)[:40]!r} is invalid; accepted: N/s or N/min with N > 0, e.g. 5/s or 300/min")
        rate = float(match.group(1)) / _UNIT[match.group(2).lower()]
    if not (0 < rate <= MAX_RATE):
        raise ModelSpecError(
            f"rate {value!r} is invalid; accepted: more than 0 and at most {MAX_RATE:g} requests per second")
    return rate


class RateLimiter:
    """Request starts at most ``rate`` per second, evenly spaced, for all threads.

    Parameters
    ----------
    rate : float
        Requests per second (> 0).
    clock : callable
        Monotonic seconds; injectable for tests.
    """

    def __init__(self, rate: float, *, clock=time.monotonic):
        self.rate = float(rate)
        self.interval = 1.0 / self.rate
        self._clock = clock
        self._next = -float("inf")  # when the next request may start
        self._lock = threading.Lock()
        self.waited = 0.0  # total seconds threads waited for a token (for reports and benchmarks)

    def reserve(self, deadline: float) -> float | None:
        """Book the next start; return how long to wait, or None when it falls after ``deadline``."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            if start > deadline:
                return None
            self._next = start + self.interval
            self.waited += start - now
            return start - now

    def take(self, cancel: threading.Event, deadline: float) -> bool:
        """Wait for a token; False when ``deadline`` would pass first or the run is cancelled."""
        wait = self.reserve(deadline)
        if wait is None:
            return False
        if wait > 0 and cancel.wait(wait):
            return False
        return not cancel.is_set()


class AdaptiveLimit:
    """Samples in flight: at most ``maximum``, lowered on 429 and grown back on success.

    Parameters
    ----------
    maximum : int
        ``--violin-concurrency``: the limit never exceeds it.
    """

    def __init__(self, maximum: int):
        self.maximum = max(1, int(maximum))
        self.limit = float(self.maximum)
        self.active = 0
        self.overloads = 0  # 429 answers seen
        self.lowest = float(self.maximum)
        self._urgent = 0  # samples waiting to retry after a 429 (they go first)
        self._cond = threading.Condition()

    def acquire(self, cancel: threading.Event, deadline: float | None = None, *, urgent: bool = False) -> bool:
        """Take a place; False when the run is cancelled or ``deadline`` passes first.

        ``urgent``: a sample that gave its place back on a 429 and whose
        time budget is running; it goes before samples that have not
        started.
        """
        with self._cond:
            if urgent:
                self._urgent += 1
            try:
                while self.active >= max(1, int(self.limit)) or (not urgent and self._urgent):
                    if cancel.is_set():
                        return False
                    left = _TICK if deadline is None else min(_TICK, deadline - time.monotonic())
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                if cancel.is_set():
                    return False
                self.active += 1
                return True
            finally:
                if urgent:
                    self._urgent -= 1

    def release(self) -> None:
        """Give a place back."""
        with self._cond:
            self.active = max(0, self.active - 1)
            self._cond.notify_all()  # an urgent waiter must not miss it

    def overloaded(self) -> None:
        """A sample holding a place got 429: the endpoint holds no more than the others in flight."""
        with self._cond:
            self.overloads += 1
            self.limit = max(1.0, min(self.limit, float(self.active - 1)))
            self.lowest = min(self.lowest, self.limit)

    def succeeded(self) -> None:
        """A sample ended without error: one more place per round of samples."""
        with self._cond:
            if self.limit < self.maximum:
                self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
                self._cond.notify_all()


def renew_budget(budget: float) -> None:
    """Start this thread's sample budget (``budget`` seconds) again, inside a sample."""
    if getattr(_local, "budget_end", None) is not None:
        _local.budget_end = time.monotonic() + budget


def budget_left(budget: float) -> float:
    """Seconds left in this thread's sample budget (``budget``, a whole one, outside a sample)."""
    end = getattr(_local, "budget_end", None)
    return budget if end is None else end - time.monotonic()


@contextlib.contextmanager
def sample_scope(limit: AdaptiveLimit | None, cancel: threading.Event, budget: float) -> Iterator[None]:
    """The scope of one sample's requests (see :meth:`.client.HttpClient.sample`).

    The outermost scope waits, before its budget starts, for a place in
    ``limit`` (while as many samples as it allows are in flight) and gives it
    back at the end; a sample that ends without error lets the limit grow.
    """
    outer = getattr(_local, "budget_end", None)
    holder = None
    if outer is None and limit is not None:
        if not limit.acquire(cancel):
            raise GenerationCancelled("sample cancelled before it started: the run was interrupted")
        holder = limit
        _local.slot = limit
    if outer is None:
        _local.budget_end = time.monotonic() + budget
    _local.depth = getattr(_local, "depth", 0) + 1
    ok = False
    try:
        yield
        ok = True
    finally:
        _local.depth -= 1
        if outer is None:
            _local.budget_end = None
        if _local.depth == 0:
            release_large()
        if holder is not None:
            if getattr(_local, "slot", None) is holder:
                holder.release()
            _local.slot = None
            if ok:
                holder.succeeded()

