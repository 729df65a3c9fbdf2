"""One sample's scope: its time budget across all attempts, and its place among the samples in flight.

:func:`sample_scope` is :meth:`.client.HttpClient.sample`: the requests an
adapter's ``generate`` makes inside it share one budget (``budget_end`` in
the thread's state, read by the client's retry loop), a large answer keeps
its reservation (:mod:`.body`) until the scope ends, and the outermost scope holds
one place of the client's :class:`~.limits.AdaptiveLimit`.
:func:`renew_budget` starts the budget again after a job waited in a queue
(:mod:`.jobs`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

from ...errors import GenerationCancelled
from .body import release_large
from .deadline import state as _local
from .limits import AdaptiveLimit

__all__ = ["budget_left", "renew_budget", "sample_scope"]


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

