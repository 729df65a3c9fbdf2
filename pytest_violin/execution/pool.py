"""The runner's threads: daemon threads running submitted callables as futures."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future

__all__ = ["DaemonPool"]


class DaemonPool:
    """A fixed set of daemon threads running submitted callables as futures.

    :class:`concurrent.futures.ThreadPoolExecutor` joins its threads when the
    interpreter exits, so one generation stuck in a socket read holds up the
    end of an interrupted run; daemon threads do not.
    """

    def __init__(self, workers: int, name: str):
        self._workers = int(workers)
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        self._queue.put((future, fn, args))
        if len(self._threads) < self._workers:  # threads start lazily, up to ``workers``
            thread = threading.Thread(target=self._work, daemon=True,
                                      name=f"{self._name}-{len(self._threads)}")
            self._threads.append(thread)
            thread.start()
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # delivered to the waiting test
                    future.set_exception(exc)
            del item, future, fn, args

    def shutdown(self, *, wait: bool) -> None:
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            for thread in self._threads:
                thread.join()
