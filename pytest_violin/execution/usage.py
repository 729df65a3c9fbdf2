"""Count every call made to the model, where it is made, and refuse calls past the cap.

What a paid API bills is the calls it receives, whatever pytest does around them: a rerun
(pytest-rerunfailures), a prefetched sample that ``-x`` never reached, a repeat, the ``violin_generate``
fixture, a hypothesis test calling ``violin_model.generate`` directly. So the count is kept at the adapter's
door: :class:`CountingAdapter` wraps the session's adapter and every ``generate`` goes through
:meth:`CallCounter.reserve` first. The runner adds the images it served from the cache
(:meth:`CallCounter.hit`).

The cap (``--violin-max-calls``, its default for adapters that bill, and the calls ``--violin-max-cost``
affords at ``--violin-price``) holds at run time: a call past it is refused with :class:`CallLimitReached`
before anything is sent. Under pytest-xdist every worker counts its own calls (the controller sums what the
workers report at their end, ``config.workeroutput``), and the cap is shared through a folder of claim files
(:class:`SharedCalls`): claiming a call is creating file ``N`` with ``O_CREAT | O_EXCL``, atomic across
processes, so N workers together make at most the cap's calls.

A call that ended before sending anything (the run was interrupted:
:class:`~pytest_violin.errors.GenerationCancelled` with zero attempts; an HTTP adapter that refused the
request before its first request, such as a ComfyUI workflow without the ``{image}`` a sample needs) is given
back, so the count is the calls the server received (:func:`sent_marker`). Retries of an HTTP attempt (a 5xx,
a 429, a time-out) are requests too; they are counted apart (``retries``): the adapter's HTTP client counts
them.
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

from ..errors import GenerationCancelled, GenerationError, ViolinError
from ..report.text import format_usd

__all__ = ["COST_TOLERANCE", "CallCounter", "CallLimitReached", "CountingAdapter",
           "DEFAULT_BILLED_MAX_CALLS", "SharedCalls", "adapter_bills", "call_cap", "sent_marker"]


class CallLimitReached(ViolinError, RuntimeError):
    """A model call was refused: the run has made as many calls as its cap allows.

    Not the model's failure: the sample ends as an error and the session stops.
    """


class SharedCalls:
    """Claims of calls shared by the processes of one run (an xdist run's workers).

    Parameters
    ----------
    root : path-like
        An existing folder all processes see (the controller creates it).
    """

    def __init__(self, root):
        self.root = Path(root)
        self._next = 0  # claims below this one are taken (by us or another process)

    def claim(self, limit: int) -> bool:
        """Claim one call; False when ``limit`` calls are claimed already."""
        k = self._next
        while k < limit:
            try:
                fd = os.open(self.root / str(k), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                k += 1
                continue
            os.close(fd)
            self._next = k + 1
            return True
        self._next = k
        return False


class CallCounter:
    """The calls of one process: made, served from the cache, refused; the cap.

    Thread-safe: the runner's threads and the test thread count at once.
    """

    def __init__(self):
        self._lock = threading.Condition()
        self.calls = 0
        self.cache_hits = 0
        self.refused = 0
        self.limit: int | None = None
        self.limit_text = ""
        self.shared: SharedCalls | None = None
        self.capped: str | None = None
        self._in_flight = 0
        self._adapters: list = []
        self._workers: list[dict] = []

    def set_limit(self, limit: int | None, text: str = "") -> None:
        """Cap this run at ``limit`` calls (None: no cap); ``text`` names the option, for messages."""
        with self._lock:
            self.limit = None if limit is None else max(0, int(limit))
            self.limit_text = text

    def reserve(self) -> None:
        """Count one call about to be made; raise :class:`CallLimitReached` past the cap."""
        with self._lock:
            if self.limit is not None:
                allowed = self.calls < self.limit
                if allowed and self.shared is not None:
                    allowed = self.shared.claim(self.limit)
                if not allowed:
                    self.refused += 1
                    if self.capped is None:
                        self.capped = (f"{self.limit_text or 'the call limit'} reached: {self.limit} "
                                       f"calls made, no further call is made")
                    raise CallLimitReached(self.capped)
            self.calls += 1
            self._in_flight += 1

    def done(self, *, sent: bool = True) -> None:
        """A reserved call ended; ``sent=False``: it sent nothing and is not counted."""
        with self._lock:
            self._in_flight -= 1
            if not sent:
                self.calls -= 1
            self._lock.notify_all()

    def billed(self, n: int) -> None:
        """Count ``n`` generations a provider's batch completed (billed; made without a call here)."""
        with self._lock:
            self.calls += max(0, int(n))

    def hit(self, n: int = 1) -> None:
        """Count ``n`` images served from the cache (no call)."""
        with self._lock:
            self.cache_hits += int(n)

    def settle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the calls in flight to end; True when none is left."""
        deadline = time.monotonic() + max(0.0, float(timeout))
        with self._lock:
            while self._in_flight > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True

    def watch(self, adapter) -> None:
        """Read ``adapter``'s HTTP retries (``adapter.client.retries_sent``) in :meth:`snapshot`."""
        with self._lock:
            self._adapters.append(adapter)

    def add_worker(self, snapshot) -> None:
        """Add what a pytest-xdist worker counted (its :meth:`snapshot`)."""
        if isinstance(snapshot, dict):
            with self._lock:
                self._workers.append(dict(snapshot))

    def snapshot(self, *, local: bool = False) -> dict:
        """``calls``, ``cache_hits``, ``retries``, ``refused``: this process's, plus its workers' unless ``local``."""
        with self._lock:
            retries = 0
            for adapter in self._adapters:
                client = getattr(adapter, "client", None)
                value = getattr(client, "retries_sent", 0)
                retries += value if isinstance(value, int) and not isinstance(value, bool) else 0
            out = {"calls": self.calls, "cache_hits": self.cache_hits, "retries": retries,
                   "refused": self.refused}
            if not local:
                for worker in self._workers:
                    for key in out:
                        value = worker.get(key, 0)
                        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                            out[key] += value
            return out


def sent_marker(adapter):
    """Call before ``adapter.generate``; returns ``sent(exc) -> bool``: whether the call that
    raised ``exc`` reached the server.

    An HTTP adapter (one with a ``client`` that counts ``requests_sent``): whether its client sent a request
    from this thread since. Another adapter (a local model, a ``python:`` callable) ran the model: True,
    unless it was cancelled before any attempt (:class:`~pytest_violin.errors.GenerationCancelled` with zero
    ``attempts``).
    """
    if hasattr(getattr(adapter, "client", None), "requests_sent"):
        from ..models._transport.client import thread_requests

        before = thread_requests()
        return lambda exc: thread_requests() > before
    return lambda exc: not (isinstance(exc, GenerationCancelled) and exc.attempts == 0)


class CountingAdapter:
    """``adapter`` with every ``generate`` counted (and capped) by ``counter``.

    Every other attribute is the adapter's own (``identity``, ``cacheable``, ``network``, ``close``
    ...).
    """

    def __init__(self, adapter, counter: CallCounter):
        self.__dict__["_violin_adapter"] = adapter
        self.__dict__["_violin_counter"] = counter
        counter.watch(adapter)

    @property
    def wrapped(self):
        """The adapter itself."""
        return self._violin_adapter

    def generate(self, request):
        counter = self._violin_counter
        adapter = self._violin_adapter
        reached = sent_marker(adapter)
        counter.reserve()
        sent = True
        try:
            return adapter.generate(request)
        except GenerationError as exc:
            # ended before its first request (cancelled, refused by the adapter itself): nothing reached the
            # server
            sent = reached(exc)
            raise
        finally:
            counter.done(sent=sent)

    def generate_batch(self, requests):
        """The adapter's ``generate_batch`` with each request counted as one call (and capped):
        a request past the cap gets its :class:`CallLimitReached` in its place in the list, the
        others go to the adapter (:mod:`pytest_violin.execution.batching`)."""
        counter = self._violin_counter
        adapter = self._violin_adapter
        out: list = [None] * len(requests)
        admitted = []
        for i in range(len(requests)):
            try:
                counter.reserve()
                admitted.append(i)
            except CallLimitReached as exc:
                out[i] = exc
        if not admitted:
            return out
        reached = sent_marker(adapter)
        sent = True
        try:
            images = list(adapter.generate_batch([requests[i] for i in admitted]))
        except GenerationError as exc:
            sent = reached(exc)
            raise
        finally:
            for _ in admitted:
                counter.done(sent=sent)
        if len(images) != len(admitted):
            return images  # the batcher names the miscount
        for i, image in zip(admitted, images):
            out[i] = image
        return out

    def __getattr__(self, name):
        return getattr(self.__dict__["_violin_adapter"], name)

    def __setattr__(self, name, value):
        setattr(self._violin_adapter, name, value)

    def __repr__(self) -> str:
        return f"CountingAdapter({self._violin_adapter!r})"

# ------------------------------------------------------------------ the cap
# How many model calls a run may make: the cap every runner of the suite applies.
#
# The plugin's ``--violin-max-calls`` / ``--violin-max-cost`` / ``--violin-price``
# and :func:`pytest_violin.evaluation.evaluate`'s ``max_calls`` / ``max_cost`` /
# ``price`` give the same cap (:func:`call_cap`), held at run time by
# :class:`CallCounter`. An adapter that bills gets a default cap
# (:data:`DEFAULT_BILLED_MAX_CALLS`, :func:`adapter_bills`); a self-hosted server
# (``comfyui``, ``a1111``, ``http`` to a loopback address) and local adapters have
# none.

#: The calls a run with an adapter that bills may make unless told otherwise.
DEFAULT_BILLED_MAX_CALLS = 2000

#: Relative slack of the cost comparison (binary floats: 3 x 0.1 > 0.3).
COST_TOLERANCE = 1e-9


def adapter_bills(adapter, *, price: float | None = None) -> bool:
    """Whether calls to ``adapter`` may cost money, so the default cap applies.

    An adapter says so with a ``bills`` attribute (True for the providers'
    APIs, False for self-hosted servers); without one, an adapter that calls
    a network service (``network = True``) is taken to bill. A run with a
    price bills whatever the adapter says.
    """
    if price is not None:
        return True
    declared = getattr(adapter, "bills", None)
    if declared is not None:
        return bool(declared)
    return bool(getattr(adapter, "network", False))


def call_cap(max_calls: int | None, *, given: bool, bills: bool, price: float | None = None,
             max_cost: float | None = None, names=("--violin-max-calls", "--violin-max-cost")) -> tuple:
    """The calls a run may make, and the words that say which setting decided.

    Parameters
    ----------
    max_calls : int or None
        The cap asked for; None with ``given`` means "no cap".
    given : bool
        Whether ``max_calls`` was given at all (else the default applies where the adapter bills).
    bills : bool
        :func:`adapter_bills` of the run's adapter.
    price, max_cost : float, optional
        USD per image and the most the run may cost: the cap is lowered to the calls
        ``max_cost`` affords at ``price``.
    names : tuple of (str, str)
        How the caller names the call cap and the cost cap, for messages.

    Returns
    -------
    tuple of (int or None, str)
        The cap (None: none) and its words, e.g. ``"--violin-max-calls=20"``.
    """
    calls_name, cost_name = names
    limit, text = max_calls, (f"{calls_name}={max_calls}" if max_calls is not None else "")
    if not given and (bills or price is not None):
        limit = DEFAULT_BILLED_MAX_CALLS
        text = f"the default {calls_name}={limit} of an adapter that bills"
    if max_cost is not None and price:
        affordable = math.floor(max_cost / price * (1 + COST_TOLERANCE))
        if limit is None or affordable < limit:
            limit = affordable
            text = f"{cost_name}={max_cost:g} ({affordable} calls at {format_usd(price)} per image)"
    return limit, text
