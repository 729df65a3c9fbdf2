"""Batched generation: the runner's threads hand their requests to one batch call.

A local pipeline fills a GPU by drawing several prompts in one call. An
adapter says it can with two attributes:

* ``batch_size``: the most requests one call takes (``diffusers:...?batch=B``;
  a ``python:`` model's object declares it);
* ``generate_batch(requests) -> list``: one image per request, in order (an
  element may be a :class:`~pytest_violin.errors.GenerationError` instance:
  that request alone failed); raising fails every request of the batch;

and optionally ``batch_key(request)``: requests with equal keys may share a
call (default: the same task, size and number of input images).

The runner stays per sample: each of its threads still looks up the cache,
renders the inputs, checks the cancel event and counts its sample, then calls
:meth:`Batcher.generate` instead of the adapter's ``generate``. There the
request waits, with the compatible requests of other threads, until the
group is full, until every thread is waiting (no more can come), or for at
most :data:`LINGER` seconds; the thread that completes the group (or whose
wait ends) makes the call and hands each thread its own image or error.
Seeds stay per request (an adapter makes one generator per request), so a
sample's image does not depend on its neighbours in the batch; the cache,
the call count and cap (one call per request,
:meth:`pytest_violin.execution.usage.CountingAdapter.generate_batch`) and
Ctrl-C (no batch starts once the cancel event is set) work per sample.
"""

from __future__ import annotations

import copy
import threading
import time

from ..errors import GenerationCancelled, GenerationCrashed, GenerationError, InvalidArgumentError

__all__ = ["LINGER", "MAX_BATCH", "Batcher", "batch_key"]

#: Longest wait, in seconds, for a partial batch to fill (a generation takes seconds).
LINGER = 0.05
#: Largest batch accepted.
MAX_BATCH = 256


def batch_key(request) -> tuple:
    """Requests with equal keys may share a batch: same task, size and number of input images."""
    return (request.task, int(request.width), int(request.height), len(request.images))


class _Slot:
    __slots__ = ("request", "taken", "done", "result", "error")

    def __init__(self, request):
        self.request = request
        self.taken = self.done = False
        self.result = self.error = None


class Batcher:
    """Gathers the requests of the runner's threads into ``adapter.generate_batch`` calls.

    Parameters
    ----------
    adapter : object
        Has ``generate_batch`` and ``batch_size`` (through a counting wrapper too).
    size : int
        Most requests per call.
    threads : int
        Threads that call :meth:`generate` (the runner's pool): when all of
        them wait, a partial batch goes at once.
    cancel : threading.Event, optional
        Once set, no batch starts.
    linger : float, optional
        Longest wait for a partial batch (default :data:`LINGER`).
    """

    def __init__(self, adapter, size: int, *, threads: int, cancel: threading.Event | None = None,
                 linger: float = LINGER):
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BATCH:
            raise InvalidArgumentError(f"batch size {size!r}; accepted: an integer from 1 to {MAX_BATCH}")
        self.adapter = adapter
        self.size = size
        self.threads = max(int(threads), 1)
        self.cancel = cancel if cancel is not None else threading.Event()
        self.linger = float(linger)
        key = getattr(adapter, "batch_key", None)
        self._key = key if callable(key) else batch_key
        self._cond = threading.Condition()
        self._groups: dict = {}
        self._waiting = 0
        self.calls = 0  # batch calls made (for tests and benchmarks)

    @classmethod
    def for_adapter(cls, adapter, *, threads: int, cancel=None):
        """A batcher when ``adapter`` declares ``batch_size > 1`` and ``generate_batch``, else None.

        ``threads`` is the runner's thread count; the batcher asks for at
        least ``2 * batch_size`` (:attr:`threads`), so one batch gathers while
        another runs.
        """
        inner = getattr(adapter, "wrapped", adapter)
        size = getattr(inner, "batch_size", None)
        if not callable(getattr(inner, "generate_batch", None)) or size in (None, 1):
            return None
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BATCH:
            raise InvalidArgumentError(f"{type(inner).__name__}.batch_size is {size!r}; accepted: an "
                                       f"integer from 1 to {MAX_BATCH}")
        return cls(adapter, size, threads=max(int(threads), 2 * size), cancel=cancel)

    def generate(self, request):
        """The image of ``request``, made in a batch (raises what its request raised)."""
        slot = _Slot(request)
        key = self._key(request)
        with self._cond:
            group = self._groups.setdefault(key, [])
            group.append(slot)
            self._waiting += 1
            self._cond.notify_all()
            deadline = time.monotonic() + self.linger
            while not slot.taken:
                left = deadline - time.monotonic()
                if len(group) >= self.size or self._waiting >= self.threads or left <= 0:
                    batch = self._take(key, group)
                    break
                self._cond.wait(left)
            else:
                batch = None  # another thread's batch holds this request
                while not slot.done:
                    self._cond.wait()
        if batch is not None:
            self._run(batch)
        if slot.error is not None:
            raise slot.error
        return slot.result

    def _take(self, key, group) -> list:
        """Take ``group`` out of the waiting ones (the lock is held)."""
        if self._groups.get(key) is group:
            del self._groups[key]
        for s in group:
            s.taken = True
        self._waiting -= len(group)
        return list(group)

    def _run(self, batch: list) -> None:
        """Make one call for ``batch`` and hand each slot its image or error."""
        try:
            if self.cancel.is_set():
                raise GenerationCancelled("cancelled: the run was interrupted")
            self.calls += 1
            outputs = self.adapter.generate_batch([s.request for s in batch])
            outputs = list(outputs) if outputs is not None else []
            if len(outputs) != len(batch):
                raise GenerationCrashed(f"{type(getattr(self.adapter, 'wrapped', self.adapter)).__name__}"
                                        f".generate_batch returned {len(outputs)} images for "
                                        f"{len(batch)} requests; accepted: one per request, in order")
            for s, out in zip(batch, outputs):
                if isinstance(out, BaseException):
                    s.error = out
                else:
                    s.result = out
        except BaseException as exc:  # every request of the batch gets it, each its own copy
            for s in batch:
                s.error = copy.copy(exc) if isinstance(exc, GenerationError) else exc
        finally:
            with self._cond:
                for s in batch:
                    s.done = True
                self._cond.notify_all()
