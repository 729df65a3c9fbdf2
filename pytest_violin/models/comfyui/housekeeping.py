"""What the adapter leaves on a ComfyUI server: nothing in its queue, nothing in its history.

Every prompt this run queues is taken off the server when its sample ends,
whatever the outcome: a prompt still waiting is deleted from the queue, one
still running (a time-out, Ctrl-C) is interrupted, and its history entry is
deleted (``POST /history`` with ``delete``) once it exists. ComfyUI writes a
prompt's entry in the same step that takes it out of ``queue_running``, so an
interrupted prompt's entry appears only when the interrupt lands: a prompt
still in the queue when its sample ends stays on the :class:`Ledger`, and a
later sample's end (or :meth:`Ledger.close`, at the end of the run) deletes
its entry once ``GET /queue`` no longer lists it.

All of it is best effort and bounded: these requests go through the client's
session, once each (the client refuses requests once the run is cancelled,
and its retries and the sample's budget belong to the sample's own requests),
each group within one deadline that the transport's watchdog enforces (a
server that never answers, or trickles a byte a second, cannot hold a sample
or a stopping run). A failure never fails the sample.
"""

from __future__ import annotations

import json
import threading
import time

from ...errors import GenerationCancelled
from .._transport.bounds import WATCHDOG, Attempt, state as _transport_state
from .answers import queue_position

__all__ = ["CANCEL_TIMEOUT", "CLOSE_DEADLINE", "FORGET_DEADLINE", "QUEUE_BYTES", "Ledger", "bounded"]

#: Seconds one of these requests may take (each is also bounded by its group's deadline).
CANCEL_TIMEOUT = 3.0

#: Seconds a sample's end may wait for its interrupted prompt to leave the
#: queue before its history entry is deleted; past it, a later sample or the
#: run's end deletes it.
FORGET_DEADLINE = 4.0

#: Seconds the run's end may wait for the prompts still queued or running to leave the queue.
CLOSE_DEADLINE = 5.0

#: Bytes of a ``GET /queue`` answer read here.
QUEUE_BYTES = 2**20

#: Seconds between two looks at the queue while waiting for a prompt to leave it.
QUEUE_LOOK = 0.1


def bounded(seconds: float, steps, what: str, *, each: float = CANCEL_TIMEOUT) -> None:
    """Run ``steps(limit)`` within ``seconds``; ``limit()`` is the ``timeout=`` of each request
    (at most ``each`` seconds).

    ``limit()`` raises :class:`~pytest_violin.errors.GenerationCancelled`
    once the deadline passed; the watchdog shuts down a socket still open then.
    """
    attempt = Attempt(time.monotonic() + seconds, None)
    outer = getattr(_transport_state, "attempt", None)
    _transport_state.attempt = attempt  # the watchdog sees these requests' sockets
    WATCHDOG.add(attempt)

    def limit():
        left = attempt.deadline - time.monotonic()
        if left <= 0 or attempt.fired:
            raise GenerationCancelled(f"comfyui: {what} passed its deadline of {seconds:g} s")
        return (min(each, left), min(each, left))

    try:
        steps(limit)
    finally:
        attempt.finish()
        WATCHDOG.remove(attempt)
        _transport_state.attempt = outer


class Ledger:
    """The prompts one adapter queued whose history entries are not yet deleted.

    * ``session``: the client's session (its credentials and watched connections).
    * ``keep``: ``?history=keep``: entries stay; prompts are still cancelled.
    """

    def __init__(self, base_url: str, session, *, keep: bool = False):
        self.base_url = base_url
        self.session = session
        self.keep = keep
        #: set when the server answers 404 (or 405) to ``GET /queue``: a proxy, a hosted API
        self.no_queue = False
        self._lock = threading.Lock()
        self._left: set[str] = set()  # samples ended, entries not yet deleted
        self._unsure: set[str] = set()  # deleted once without GET /queue: once more at the end

    def read_queue(self, limit):
        """``GET /queue`` as a dict; None for a server without it (or an answer that is not JSON)."""
        if self.no_queue:
            return None
        answer = self.session.get(f"{self.base_url}/queue", timeout=limit(), stream=True)
        try:
            if answer.status_code in (404, 405):
                self.no_queue = True
                return None
            if not answer.ok:
                return None
            try:
                queue = json.loads(answer.raw.read(QUEUE_BYTES, decode_content=True))
            except ValueError:
                return None
        finally:
            answer.close()
        return queue if isinstance(queue, dict) else None

    # -- one prompt ------------------------------------------------------------------------
    def cancel_steps(self, prompt_id: str, limit) -> None:
        """Delete ``prompt_id`` from the queue and interrupt it if it runs (see :meth:`cancel`)."""
        self.session.post(f"{self.base_url}/queue", json={"delete": [prompt_id]}, timeout=limit())
        # /interrupt stops whatever runs now on servers that ignore the prompt_id:
        # send it only while this prompt is the running one (a server without
        # GET /queue cannot say: nothing is interrupted there)
        if queue_position(self.read_queue(limit), prompt_id) == "running":
            self.session.post(f"{self.base_url}/interrupt", json={"prompt_id": prompt_id}, timeout=limit())

    def cancel(self, prompt_id: str, deadline: float) -> None:
        """:meth:`cancel_steps` within ``deadline`` seconds, all of it."""
        bounded(deadline, lambda limit: self.cancel_steps(prompt_id, limit), f"the cancel of prompt {prompt_id}")

    def forget(self, prompt_id: str, *, ended: bool, wait: float = FORGET_DEADLINE) -> None:
        """``prompt_id``'s sample ended: delete its history entry, and those of earlier samples
        that are out of the queue by now; never raises.

        * ``ended``: the prompt's history entry was seen (it has left the queue).
        * ``wait``: seconds to wait for a prompt still in the queue (interrupted, not yet stopped) to leave
          it; 0: one look.
        """
        if self.keep:
            return
        with self._lock:
            self._left.add(prompt_id)
        try:
            bounded(max(wait, 0.0) + CANCEL_TIMEOUT, lambda limit: self._delete_gone(
                limit, ended={prompt_id} if ended else set(), wait=wait), "the history delete")
        except Exception:  # best effort: never the sample's failure
            pass

    def close(self, live=(), cancel: bool = False) -> None:
        """At the run's end: cancel ``live`` prompts (samples abandoned in flight) when
        ``cancel``, then delete every entry left, waiting up to :data:`CLOSE_DEADLINE`
        for prompts still in the queue; never raises."""
        live = list(live)
        with self._lock:
            if not self.keep:
                self._left.update(live)
            todo = bool(self._left or self._unsure)
        if not (todo or (cancel and live)):
            return

        def steps(limit):
            if cancel:
                for prompt_id in live:
                    self.cancel_steps(prompt_id, limit)
            if not self.keep:
                self._delete_gone(limit, ended=set(), wait=CLOSE_DEADLINE, final=True)

        try:
            bounded(CLOSE_DEADLINE + CANCEL_TIMEOUT, steps, "the run's history delete")
        except Exception:  # best effort: the run is ending anyway
            pass

    def pending(self) -> set:
        """Prompts whose entries are not yet deleted (for tests and the docs)."""
        with self._lock:
            return self._left | self._unsure

    def _delete_gone(self, limit, *, ended: set, wait: float, final: bool = False) -> None:
        end = time.monotonic() + wait
        while True:
            with self._lock:
                left = set(self._left) | (self._unsure if final else set())
            if not left:
                return
            gone = left & ended
            queue = self.read_queue(limit) if left - gone else None
            if queue is not None:
                gone |= {p for p in left - gone if queue_position(queue, p) == "absent"}
            elif left - gone:
                # without GET /queue nothing says when an interrupted prompt's entry
                # exists: delete now, and once more at the run's end
                with self._lock:
                    self._unsure |= left - gone
                    self._left -= left - gone
                if final and time.monotonic() + QUEUE_LOOK <= end:
                    time.sleep(min(1.0, max(0.0, end - time.monotonic())))  # let an interrupt land
                gone = left
            self.session.post(f"{self.base_url}/history", json={"delete": sorted(gone)}, timeout=limit())
            with self._lock:
                self._left -= gone
                if final or queue is not None:
                    self._unsure -= gone
            if not (left - gone) or time.monotonic() + QUEUE_LOOK > end:
                return
            time.sleep(QUEUE_LOOK)
