"""Generations through a provider's batch API (``--violin-batch``): submit, wait, collect, answer.

:class:`BatchDriver` takes the run's uncached requests (in the order the
tests need them), packs them into as few batches as the provider's limits
allow (:class:`~pytest_violin.models.batch.BatchLimits`: requests and bytes
a batch, one endpoint a batch), records each batch durably *before* it is
submitted (:mod:`._batch_store`), polls the batches in one background thread
(the progress comes from the provider's own counts), downloads each finished
batch's answers to a file beside the record and hands every answer to the
runner as it arrives. :class:`~._batch_answers.BatchAnswers` is the adapter the
:class:`~.runner.Runner` calls instead of the model: its ``generate`` returns
the batch's answer for the request, decoded by the adapter's own rules
(:meth:`~pytest_violin.models.batch.BatchApi.answer`), so a batch run's
outcomes are those of a synchronous run of the same answers.

Never paid twice: a request already in a recorded batch is collected from
it, never submitted again; a record without a batch id (a run killed between
the upload and the provider's answer) is looked up by its tag. Requests a
batch never ran (it expired, was cancelled, failed validation, or its output
lacks them) end as errors that say so and leave the record, so the next run
submits them again; the completed ones are used, and what the provider
billed as completed is counted once.

The wait: until every batch this run needs has finished, at most ``wait``
seconds; then (or after an interrupt) the requests still in a running batch
end as :class:`~pytest_violin.errors.BatchPending` and the batches keep
running: the same command collects them.

Waves (the sequential gate, :func:`~._batch_answers.wave_size`): the next wave
only once the last one was scored (:meth:`BatchDriver.settled`), of the
samples the gate still admits and those the runner already asked for.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from dataclasses import dataclass

from .._threads import carried
from ..errors import BatchPending, GenerationCancelled, GenerationError, GenerationUnjudged
from ..redaction import redact
from ._batch_answers import (MIN_WAVE, WAVE_SHARES, RedactedLines, bar, duration_text, index_answers, pack,
                             read_answer, wave_size)
from ._batch_store import COLLECTED, SUBMITTED, SUBMITTING, BatchRecord, BatchStore
from .usage import CallLimitReached

__all__ = ["MIN_WAVE", "WAVE_SHARES", "BatchDriver", "Entry"]

POLL_MIN, POLL_MAX = 0.05, 30.0  # seconds to the next poll: the first, then 1.5 times longer up to this


def _shared(error: BaseException) -> BaseException:
    """``error``, marked as one of a batch's: every request of a wave was submitted and paid at once, so
    failures that repeat across them are one event to the runner's stop rule, which stops paying for
    requests not yet sent (:func:`~.runner._counted`)."""
    error.shared = True
    return error


@dataclass(frozen=True)
class Entry:
    """One request of the run: its cache key, its sample and the request itself."""

    key: str
    sample_id: str
    label: str
    request: object


class BatchDriver:
    """The batches of one run (see the module docstring).

    Parameters
    ----------
    api : BatchApi
    store : BatchStore
    wait : float
        Seconds to wait for the batches before ending the run with what is pending.
    cancel : threading.Event
        The run's cancel event (an interrupt stops the waiting).
    usage : CallCounter, optional
        The run's call counter: the cap applies before submission, and the
        provider's completed count is added once per batch.
    note : callable, optional
        ``note(line)``: one line for the terminal (a submission, the progress, a failure).
    max_answer_bytes : int
        The largest single answer line read.
    admit : callable, optional
        ``admit(sample_id) -> bool``: the sequential gate's say (waves only).
    waves : bool
        Submit in waves (see :func:`wave_size`).
    """

    def __init__(self, api, store: BatchStore, *, wait: float, cancel: threading.Event, usage=None,
                 note=None, max_answer_bytes: int = 64 * 2**20, admit=None, waves: bool = False,
                 poll_max: float = POLL_MAX):
        self.api, self.store = api, store
        self.wait = float(wait)
        self.cancel = cancel
        self.usage = usage
        self.note = note or (lambda line: None)
        self.max_answer_bytes = int(max_answer_bytes)
        self.admit = admit
        self.waves = bool(waves)
        self.poll_max = float(poll_max)
        self._cond = threading.Condition()
        self._entries: dict[str, Entry] = {}
        self._todo: list[str] = []  # keys not in any batch, in the order the tests need them
        self._where: dict[str, BatchRecord] = {}
        self._ready: dict[str, object] = {}  # key -> _batch_answers.Ready or an exception
        self._requested: set = set()
        self._consumed: set = set()
        self._wave: set = set()  # sample ids of the last wave, not yet scored
        self._waves_done = self._wave_total = self._wave_submitted = 0
        self._thread: threading.Thread | None = None
        self._deadline = None
        self._stopped: str | None = None  # why the waiting ended (then every pending key raises)
        self.submitted = 0  # batches this run submitted
        self.billed = 0  # requests the provider completed, counted by this run

    # -- set-up (main thread) --------------------------------------------------------
    def plan(self, entries) -> None:
        """Take the run's uncached requests; resolve the records of earlier runs."""
        records = self.store.load()
        for record in list(records):
            if record.state == SUBMITTING:
                self._resolve_unnamed(record)
        by_id: dict[str, BatchRecord] = {}
        for record in self.store.records:
            for key in record.requests.values():
                by_id[key] = record
        for entry in entries:
            if entry.key in self._entries:
                continue
            self._entries[entry.key] = entry
            record = by_id.get(entry.key)
            if record is None:
                self._todo.append(entry.key)
                continue
            self._where[entry.key] = record
            if record.state == SUBMITTING:  # the provider could not be asked: neither paid again nor waited for
                self._ready[entry.key] = BatchPending(
                    f"in batch {record.tag}, which may have been created (the provider could not be asked); "
                    f"run the same command again to collect or submit it")
        resumed = {id(r): r for r in self._where.values() if r.state != SUBMITTING}
        for record in resumed.values():
            self.note(f"violin batch: collecting {record.id or record.tag} submitted earlier "
                      f"({len(record.requests)} requests; nothing is submitted again)")

    def _resolve_unnamed(self, record: BatchRecord) -> None:
        """A batch recorded but never named: ask the provider whether it was created."""
        try:
            found = self.api.find(record.tag)
        except GenerationError as exc:
            self.note(f"violin batch: cannot tell whether batch {record.tag} was created "
                      f"({redact(exc.reason)}); its requests wait for the next run")
            return  # kept: its requests are neither submitted again nor answered
        if found is None:
            self.store.remove(record)  # never created: its requests are submitted again
        else:
            record.id, record.state = found, SUBMITTED
            self.store.save()

    @property
    def planned(self) -> int:
        """Requests of this run not in any recorded batch (to submit)."""
        return len(self._todo)

    def start(self, deadline_from: float | None = None) -> None:
        """Start the background thread (submission, polling, collection)."""
        base = time.monotonic() if deadline_from is None else deadline_from
        self._deadline = base + self.wait
        self._spawn()

    def _spawn(self) -> None:
        with self._cond:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=carried(self._run), name="violin-batch", daemon=True)
            self._thread.start()

    # -- answers (runner threads) -----------------------------------------------------
    def knows(self, key: str) -> bool:
        """Whether ``key`` is one of this run's batch requests."""
        return key in self._entries

    def answer(self, key: str):
        """The answer for ``key``: an image-like value, or raise the request's error."""
        with self._cond:
            self._requested.add(key)
            self._cond.notify_all()
            if key in self._todo and self._stopped is None:
                self._spawn()  # a wave the loop ended without (the gate had decided)
            while key not in self._ready:
                if self.cancel.is_set() and self._stopped is None:
                    self._stopped = "the run was interrupted"
                if self._stopped is not None:
                    self._ready[key] = self._pending_error(key)
                    break
                self._cond.wait(0.2)
            found = self._ready[key]
        if isinstance(found, BaseException):
            with self._cond:
                self._consumed.add(key)
            raise _shared(found)
        out = read_answer(self.api, found)
        with self._cond:
            self._consumed.add(key)
        if isinstance(out, BaseException):
            raise _shared(out)
        return out

    def _pending_error(self, key: str) -> BaseException:
        record = self._where.get(key)
        if record is None:
            if "interrupted" in str(self._stopped):
                return GenerationCancelled("cancelled: the run was interrupted", attempts=0)
            return BatchPending(f"not submitted: {self._stopped} before its wave; run the same command "
                                f"again to go on")
        return BatchPending(f"pending in batch {record.id or record.tag} ({record.provider_state or 'submitted'}, "
                            f"{record.completed}/{record.total or len(record.requests)} completed): "
                            f"{self._stopped}; run the same command again to collect it (nothing is "
                            f"submitted twice)")

    def settled(self, sample_id: str) -> None:
        """A sample was scored (or skipped): the gate has seen it (waves)."""
        with self._cond:
            self._wave.discard(sample_id)
            self._cond.notify_all()

    # -- the background thread ----------------------------------------------------------
    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # a bug here must not hang the tests waiting for answers
            with self._cond:
                self._stopped = f"the batch driver failed: {type(exc).__name__}: {redact(str(exc))[:200]}"
                self._cond.notify_all()

    def _loop(self) -> None:
        interval, next_poll = POLL_MIN, 0.0
        while True:
            if self.cancel.is_set():
                self._stop("the run was interrupted")
                return
            self._submit_next()
            running = self._running()
            if not running and not self._waiting_todo():
                return
            now = time.monotonic()
            if running and now >= next_poll:
                for record in running:
                    self._poll(record)
                next_poll, interval = now + interval, min(interval * 1.5, self.poll_max)
                continue
            if now >= self._deadline and running:
                self._stop(f"--violin-batch-wait={duration_text(self.wait)} ended")
                return
            with self._cond:  # woken early by a scored sample (the next wave) or an interrupt
                self._cond.wait(max(0.01, min(next_poll, self._deadline) - now))

    def _stop(self, why: str) -> None:
        with self._cond:
            self._stopped = why
            self._cond.notify_all()

    def _running(self) -> list:
        with self._cond:
            seen, out = set(), []
            for key, record in self._where.items():
                if record.state != COLLECTED and key not in self._ready and id(record) not in seen:
                    seen.add(id(record))
                    out.append(record)
            return out

    def _waiting_todo(self) -> bool:
        """Whether requests remain that this run will still submit."""
        with self._cond:
            if not self._todo:
                return False
            if not self.waves:
                return True
            return any(self._wanted(key) for key in self._todo)

    def _wanted(self, key: str) -> bool:
        return self.admit is None or self.admit(self._entries[key].sample_id)

    # -- submission ----------------------------------------------------------------------
    def _submit_next(self) -> None:
        with self._cond:
            if not self._todo:
                return
            if self.waves:
                if self._wave or self._running():
                    return  # the gate looks at the last wave first
                wanted = [k for k in self._todo if self._wanted(k)]
                for key in self._todo:  # asked for before the gate decided: never sent, so not paid
                    if key in self._requested and key not in self._ready and not self._wanted(key):
                        self._ready[key] = GenerationCancelled("not submitted: the sequential gate no longer "
                                                               "needs it", attempts=0)
                self._cond.notify_all()
                asked = [k for k in wanted if k in self._requested]
                rest = [k for k in wanted if k not in self._requested]
                if not self._waves_done:
                    self._wave_total = len(self._todo)
                size = wave_size(self._wave_total, self._waves_done, self._wave_submitted)
                if self._waves_done + 1 >= len(WAVE_SHARES):
                    size = len(wanted)  # the last wave: whatever the gate still wants
                keys = asked + rest[:max(0, size - len(asked))]
            else:
                keys = list(self._todo)
            if not keys:
                return
            taken = set(keys)
            self._todo = [k for k in self._todo if k not in taken]
            if self.waves:
                self._wave = {self._entries[k].sample_id for k in keys}
                self._waves_done += 1
                self._wave_submitted += len(keys)
        keys = self._cap(keys)
        for group, chunk in self._chunks(keys):
            self._submit(group, chunk)

    def _cap(self, keys: list) -> list:
        """The keys the call cap still allows; the others end capped, nothing sent for them."""
        usage = self.usage
        if usage is None or usage.limit is None:
            return keys
        allowed = max(0, usage.limit - usage.snapshot()["calls"] - self._reserved())
        if len(keys) <= allowed:
            return keys
        why = (f"{usage.limit_text or 'the call limit'}: {len(keys)} requests to submit, "
               f"{allowed} allowed; the rest are not submitted")
        self.note(f"violin batch: {why}")
        with self._cond:
            for key in keys[allowed:]:
                self._ready[key] = CallLimitReached(why)
            self._cond.notify_all()
        return keys[:allowed]

    def _reserved(self) -> int:
        """Requests this run submitted whose bill is not counted yet."""
        with self._cond:
            return sum(len(r.requests) for r in {id(r): r for r in self._where.values()}.values()
                       if not r.billed)

    def _chunks(self, keys: list):
        """``(group, [(key, custom_id, line)])`` within the provider's limits, in order."""
        groups: dict[str, list] = {}
        for key in keys:
            entry = self._entries[key]
            custom_id = key[:40]
            try:
                group, line = self.api.encode(custom_id, entry.request)
            except Exception as exc:  # a request that cannot be encoded fails alone
                with self._cond:
                    self._ready[key] = GenerationUnjudged(f"the batch request could not be written: "
                                                          f"{type(exc).__name__}: {redact(str(exc))[:200]}")
                    self._cond.notify_all()
                continue
            groups.setdefault(group, []).append((key, custom_id, line))
        for group, items in groups.items():
            for chunk in pack(items, self.api.limits):
                yield group, chunk

    def _submit(self, group: str, chunk: list) -> None:
        tag = f"violin-{uuid.uuid4().hex[:20]}"
        record = BatchRecord(tag=tag, group=group, requests={cid: key for key, cid, _ in chunk},
                             samples={cid: self._entries[key].label for key, cid, _ in chunk},
                             created=time.time(), total=len(chunk))
        self.store.add(record)  # recorded (synced) before anything leaves
        with self._cond:
            for key, _, _ in chunk:
                self._where[key] = record
        lines = [line for _, _, line in chunk]
        try:
            record.id = self.api.submit(group, lines, tag=tag)
        except GenerationError as exc:
            del lines
            if exc.transport:  # the answer was lost: the batch may exist
                try:
                    record.id = self.api.find(tag)
                except GenerationError:
                    record.id = None
                    self.note(f"violin batch: submitting {len(chunk)} requests failed without an answer "
                              f"({redact(exc.reason)}); whether batch {tag} exists is checked by the next run")
                    self._fail(chunk, BatchPending(f"batch {tag} may have been created ({redact(exc.reason)}); "
                                                   f"run the same command again to collect or submit it"))
                    return
            if record.id is None:
                self.store.remove(record)  # nothing was created: its requests are submitted again
                self.note(f"violin batch: {len(chunk)} requests not submitted: {redact(exc.reason)}")
                self._fail(chunk, GenerationUnjudged(f"not submitted to the {self.api.name}: "
                                                     f"{redact(exc.reason)}; run again to submit it"))
                return
        del lines
        record.state = SUBMITTED
        self.store.save()
        self.submitted += 1
        self.note(f"violin batch: submitted {record.id} ({len(chunk)} requests, {group})")

    def _fail(self, chunk: list, error: BaseException) -> None:
        with self._cond:
            for key, _, _ in chunk:
                self._ready[key] = error
            self._cond.notify_all()

    # -- polling and collection -------------------------------------------------------------
    def _poll(self, record: BatchRecord) -> None:
        if record.id is None:
            return
        try:
            status = self.api.status(record.id)
        except GenerationError as exc:
            self.note(f"violin batch: polling {record.id} failed ({redact(exc.reason)}); trying again")
            return
        changed = (status.provider_state, status.completed, status.failed) != (
            record.provider_state, record.completed, record.failed)
        record.provider_state, record.completed, record.failed = (status.provider_state, status.completed,
                                                                  status.failed)
        record.total = status.total or record.total
        record.reason = status.reason
        if changed:
            self.note(f"violin batch {bar(status)} {status.describe()}")
        if status.done:
            self._collect(record, status)

    def _collect(self, record: BatchRecord, status) -> None:
        path = self.store.answers_path(record)
        part = path.with_name(path.name + ".part")
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(part, "wb") as fh:
                sink = RedactedLines(fh, self.max_answer_bytes)
                self.api.download(status, sink, max_bytes=max(1, len(record.requests)) * self.max_answer_bytes)
                sink.close()
            os.replace(part, path)
        except (GenerationError, OSError) as exc:
            self.note(f"violin batch: downloading the answers of {record.id} failed "
                      f"({redact(getattr(exc, 'reason', str(exc)))}); trying again")
            try:
                part.unlink()
            except OSError:
                pass
            return
        index = index_answers(path, self.max_answer_bytes)
        if not record.billed:
            record.billed = True
            # a provider's count past the requests this batch holds is no bill: at most one each
            billed = min(status.completed, len(record.requests))
            self.billed += billed
            if self.usage is not None:
                self.usage.billed(billed)
        record.state = COLLECTED
        dropped = {}
        why = status.reason or status.provider_state
        for custom_id, key in list(record.requests.items()):
            if custom_id in index:
                continue
            dropped[custom_id] = key
            if status.state == "completed":
                error = GenerationUnjudged(f"batch {record.id} completed without an answer for this "
                                           f"request; submitted again by the next run")
            else:
                error = GenerationUnjudged(f"not run: batch {record.id} ended {status.provider_state}"
                                           f"{': ' + why if why != status.provider_state else ''} after "
                                           f"{status.completed}/{status.total} completed; submitted again "
                                           f"by the next run")
            with self._cond:
                self._ready.setdefault(key, error)
        for custom_id in dropped:  # the next run submits them again
            del record.requests[custom_id]
            record.samples.pop(custom_id, None)
        self.store.save()
        if status.state != "completed" or dropped:
            never = max(0, status.total - status.completed - status.failed) if status.total else len(dropped)
            self.note(f"violin batch: {record.id} ended {status.provider_state}"
                      f"{' (' + why + ')' if why != status.provider_state else ''} with "
                      f"{status.completed}/{status.total} completed; {max(never, len(dropped))} requests "
                      f"unanswered end as errors (not the model's failures) and the next run submits them again")
        repeated = [c for c in record.requests if isinstance(index.get(c), BaseException)]
        if repeated:
            self.note(f"violin batch: {record.id} answered {len(repeated)} requests more than once; they end as "
                      f"errors (no answer of theirs is used) and the next run submits them again")
        with self._cond:
            for custom_id, ready in index.items():
                key = record.requests.get(custom_id)
                if key is not None:
                    self._ready.setdefault(key, ready)
            self._cond.notify_all()

    # -- the end ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop waiting; drop the records whose every answer this run used (and their files)."""
        self._stop(self._stopped or "the run ended")
        for record in {id(r): r for r in self._where.values()}.values():
            if record.state == COLLECTED and all(k in self._consumed or k not in self._entries
                                                 for k in record.requests.values()):
                self.store.remove(record)

    def pending(self) -> list:
        """The batches still running (records), for the status line and the reports."""
        kept = {id(r) for r in self.store.records}
        return [r for r in {id(r): r for r in self._where.values()}.values()
                if r.state != COLLECTED and id(r) in kept]

    @property
    def stopped(self) -> str | None:
        return self._stopped
