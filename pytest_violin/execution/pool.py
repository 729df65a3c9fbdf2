"""The runner's threads: daemon threads running submitted callables as futures."""

from __future__ import annotations

import queue
import signal
import threading
import time
from concurrent.futures import Future, TimeoutError as FutureTimeout

__all__ = ["SIGNAL_SLICE", "DaemonPool", "wait_for"]

#: Seconds the main thread waits for a future at a time (see :func:`wait_for`).
SIGNAL_SLICE = 0.2

#: The signals the run handles in its main thread (pytest_plugin/signals.py).
_MAIN_THREAD_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def wait_for(future: Future):
    """``future.result()``, waited for in slices of :data:`SIGNAL_SLICE` seconds.

    The kernel may hand a process's SIGINT to any of its threads; Python then runs
    the handler in the main thread, but only when that thread next runs Python
    code, and a lock wait without a time-out never returns to it. So a Ctrl-C
    taken by a generation thread left the main thread waiting for a generation
    stuck in a socket read (on a loaded machine, about one run in five).
    """
    while True:
        try:
            return future.result(timeout=SIGNAL_SLICE)
        except FutureTimeout:
            continue


def _main_thread_takes_signals() -> None:
    """Block the run's signals in this (pool) thread, so the kernel delivers them to the main
    thread, which handles them (POSIX; elsewhere signals go to the main thread anyway)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, _MAIN_THREAD_SIGNALS)


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
        _main_thread_takes_signals()
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

    def shutdown(self, *, wait: bool, timeout: float | None = None) -> bool:
        """Stop the threads once their work is done; ``wait``: join them, at most ``timeout`` seconds
        in all (None: as long as they take). True when every thread has ended."""
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
            for thread in self._threads:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)
