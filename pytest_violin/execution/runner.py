"""Generate images ahead of the tests that need them.

:class:`Runner` generates the images of *this process's* samples in a bounded thread pool, in the order
declared with :meth:`Runner.plan`, while the tests score earlier images; a test waits only for its own sample
(:meth:`Runner.get`). At most ``2 * concurrency`` generations are submitted and not yet consumed, so memory
stays flat.

What the model did wrong (a :class:`~pytest_violin.errors.GenerationError`, an answer that is not an image) is
``Generation.error`` with a redacted reason: the model failed that sample. Anything else (a bug, a full disk)
is ``Generation.fault``: a pytest *error*, never the model's failure, never a score in a baseline. A failed
sample never stops the run.

The ``cancel`` event (shared with the adapters through :class:`~pytest_violin.models.AdapterOptions`) stops
new requests, retries and polls; :meth:`Runner.close` with ``wait=False`` abandons what is in flight (daemon
threads).

One rule stops calling the adapter, failing the remaining samples at once (:attr:`Runner.stop_reason`):
samples in a row ending in failures of one cause, with no image in between. A failure's cause is its class
and the first line of its reason, URLs cut to their host (a job's own URL names the job, not the cause);
every failure with no answer at all (``transport``) is one cause, the endpoint. How long a row must be:

* no answer at all: ``dead_after`` samples spanning ``dead_window`` seconds (a dead endpoint,
  :attr:`Runner.unreachable`);
* a :class:`~pytest_violin.errors.SetupError` or :class:`~pytest_violin.errors.GenerationCrashed` on the run's
  first samples, before any image: ``setup_after`` (:attr:`Runner.setup_stop`);
* any other failure (a time-out, a job the server lost or failed, a crash after an image, an HTTP 4xx/5xx after
  the retries, an answer that is not an image): ``repeat_after`` and more than ``concurrency`` (the
  generations in flight at once fail together in a server's restart: one event, not a repeat).

A refusal (the model's verdict, which the gate measures), a cancel, a pending batch, a batch's failures (its
requests were sent and paid at once: stopping saves nothing, and an expired batch is one event) and, after
the first
samples, a failure refused before any request left (it costs nothing: a task the workflow cannot serve) count
in no row. A
failure with no answer neither extends nor breaks a row of answered failures, and the other way round; a
different cause breaks a row of answered failures. A sample's
``attempts`` count the adapter calls that reached the server (:func:`~.usage.sent_marker`). The cache key uses
the adapter's ``cache_identity()`` where it has one, so a swapped checkpoint is a cache miss.
"""

from __future__ import annotations

import queue
import re
import signal
import threading
import time
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._fs import atomic_write
from .._threads import carried
from .cache import cache_identity
from .usage import CallLimitReached, sent_marker
from ..errors import (BatchPending, GenerationCancelled, GenerationCrashed, GenerationError, GenerationRefused,
                      GenerationUnjudged, InternalError, InvalidArgumentError, InvalidImageError, SetupError)
from ..redaction import redact as _redact

__all__ = ["DEAD_AFTER", "DEAD_WINDOW", "REPEAT_AFTER", "SETUP_AFTER", "SIGNAL_SLICE", "DaemonPool", "Generation", "Runner",
           "exception_line", "wait_for"]

#: Seconds the main thread waits for a future at a time (see :func:`wait_for`).
SIGNAL_SLICE = 0.2

#: The signals the run handles in its main thread (pytest_plugin/signals.py).
_MAIN_THREAD_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def wait_for(future: Future):
    """``future.result()``, waited for in slices of :data:`SIGNAL_SLICE` seconds.

    The kernel may hand a process's SIGINT to any of its threads; Python then runs the handler in the main
    thread, but only when that thread next runs Python code, and a lock wait without a time-out never returns
    to it. So a Ctrl-C taken by a generation thread left the main thread waiting for a generation stuck in a
    socket read (on a loaded machine, about one run in five).
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

    :class:`concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits, so one
    generation stuck in a socket read holds up the end of an interrupted run; daemon threads do not.
    """

    def __init__(self, workers: int, name: str):
        self._workers = int(workers)
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        self._queue.put((future, carried(fn), args))  # in the submitter's context: its run's reader
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
        """Stop the threads once their work is done; ``wait``: join them, at most ``timeout`` seconds in all
        (None: as long as they take). True when every thread has ended."""
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
            for thread in self._threads:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)


#: Consecutive transport failures (no answer at all) after which the runner stops calling the adapter for the
#: rest of the run ...
DEAD_AFTER = 10
#: ... provided they span at least this many seconds: the failures of the generations in flight during a short
#: restart of a server arrive together and are no dead endpoint.
DEAD_WINDOW = 10.0
#: Samples in a row ending in the same setup error (or the same crash), before any image, after which the
#: runner stops calling the adapter.
SETUP_AFTER = 5
#: Samples in a row ending in any other failure of one cause (a time-out on every prompt, a gateway's 5xx),
#: with no image in between, after which the runner stops calling the adapter: a run of 4 generations at once
#: (the default concurrency) then stops having sent at most 9 requests, and a model's failures of one sample
#: in three, or of a few hard prompts in a row, stop nothing.
REPEAT_AFTER = 6

#: A URL in an error's first line: only its scheme and host say something of the cause.
_URL = re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s?#]+)[^\s]*", re.IGNORECASE)


def exception_line(exc: BaseException, limit: int = 300) -> str:
    """``Type: first line`` of an exception, redacted, then cut."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    text = _redact(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cause(error: GenerationError) -> tuple[str, str]:
    """``(class name, first line of the reason)``: what makes two failures the same; URLs are cut to their host
    (a job's URL names the job, which every sample has its own of)."""
    lines = str(error.reason).strip().splitlines()
    return type(error).__name__, _URL.sub(r"\1", lines[0].strip() if lines else "")


def _counted(error: GenerationError) -> bool:
    """Whether ``error`` counts towards a row of failures: not the model's refusal, not a cancel, not a
    batch still running, not a batch's (``shared``: its requests were all sent and paid at once, and a
    batch that failed or expired ends every request it held together)."""
    return not (isinstance(error, (GenerationRefused, GenerationCancelled, BatchPending))
                or getattr(error, "shared", False))


@dataclass
class Generation:
    """The images of one sample (one per repeat, :class:`~pytest_violin.imaging.RGB8`, already
    resized to the sample's size; the answer's size in ``original_size`` when it differed), or why there are
    none: ``error`` (the model's, redacted) or ``fault`` (a bug or the environment, one redacted line;
    ``capped`` when the run's call cap refused the call). ``attempts`` counts adapter calls (cache hits
    excluded); ``cached``: every image came from
    the cache."""

    images: list = field(default_factory=list)
    error: GenerationError | None = None
    fault: str | None = None
    seconds: float = 0.0
    attempts: int = 0
    cached: bool = False
    original_size: tuple | None = None
    capped: bool = False


class Runner:
    """Prefetching image generation for one process.

    ``concurrency`` threads generate at once (fewer when the adapter declares ``max_concurrency``); ``cache``
    (skipped for adapters that are not ``cacheable``) keys images by the adapter's identity and the request;
    per-sample seeds derive from ``base_seed``; ``repeats`` images per sample; ``save_outputs`` writes every
    image as ``<sample id>.png``; ``cancel`` is the event the adapters watch; ``usage`` (a
    :class:`~.usage.CallCounter`) counts the images served from the cache.
    """

    def __init__(self, adapter, *, concurrency: int = 4, cache=None, base_seed: int = 0,
                 repeats: int = 1, save_outputs=None, cancel: threading.Event | None = None,
                 dead_after: int = DEAD_AFTER, dead_window: float = DEAD_WINDOW, repeat_after: int = REPEAT_AFTER,
                 usage=None):
        if int(concurrency) < 1:
            raise InvalidArgumentError(f"concurrency must be >= 1, got {concurrency!r}")
        if int(repeats) < 1:
            raise InvalidArgumentError(f"repeats must be >= 1, got {repeats!r}")
        self.adapter = adapter
        # an adapter that can serve fewer requests at once (a local pipeline behind a lock declares
        # ``max_concurrency``) gets no more threads than that: queued samples then wait in the pool's queue,
        # not inside ``generate``, so ``seconds`` measures generation; the prefetch window still follows
        # ``concurrency``
        limit = getattr(adapter, "max_concurrency", None)
        self.concurrency = int(concurrency) if not limit else max(1, min(int(concurrency), int(limit)))
        self.cancel = cancel if cancel is not None else threading.Event()
        # an adapter taking several requests a call (batching.py): threads to fill a batch or two
        self._batcher = None
        if callable(getattr(getattr(adapter, "wrapped", adapter), "generate_batch", None)):
            from .batching import Batcher
            self._batcher = Batcher.for_adapter(adapter, threads=self.concurrency, cancel=self.cancel)
        if self._batcher is not None:
            self.concurrency = self._batcher.threads
        self.cache = cache if getattr(adapter, "cacheable", True) else None
        self.base_seed = int(base_seed)
        self.repeats = int(repeats)
        self.save_outputs = None if save_outputs is None else Path(save_outputs)
        self.window = 2 * max(int(concurrency), self.concurrency)
        # A sample's ground truth is rendered when its image is generated and again when it is scored, up to
        # ``window`` samples later (plus the xdist look-ahead): keep that many renders (bounded, see
        # RenderCache).
        from ..suite.sample import RENDER_CACHE

        RENDER_CACHE.ensure_capacity(self.window + 8)
        self.dead_after = int(dead_after)
        self.dead_window = float(dead_window)
        self.setup_after = SETUP_AFTER
        self.repeat_after = int(repeat_after)
        if self.repeat_after < 1:
            raise InvalidArgumentError(f"repeat_after must be >= 1, got {repeat_after!r}")
        self._transport_failures = 0
        self._first_failure = 0.0
        self._streak = 0  # answered failures of one cause in a row
        self._streak_cause: tuple | None = None
        self._stop: tuple[str, str] | None = None  # (kind: dead, setup or repeat; why)
        self._answered = False  # an image was made
        self._cache_identity: list = []  # [value] once asked (cache_identity may call the server)
        self._pool: DaemonPool | None = None
        self._warm: set = set()
        self._lock = threading.Lock()
        self._identity_lock = threading.Lock()
        self._plan: list = []
        self._plan_pos: dict[str, list[int]] = {}
        self._next = 0
        self._futures: dict[str, tuple[int, Future]] = {}
        self._closed = False
        self.generated = 0  # generations started (for tests and benchmarks)
        self.usage = usage  # the run's CallCounter: cache hits counted here (calls: CountingAdapter)
        #: ``admit(sample_id) -> bool``: whether a planned sample may still be prefetched (the sequential
        #: gate's say; None admits every sample)
        self.admit = None

    # -- planning -------------------------------------------------------
    def plan(self, samples) -> None:
        """Declare the order in which this process will need ``samples``.

        Replaces the previous plan; samples already submitted stay. Prefetch starts at once, bounded by ``2 *
        concurrency`` unconsumed results.
        """
        self._plan = [s for s in samples if s.id not in self._futures]
        # a sample may be planned more than once (a ``violin::`` item and a user test of the same sample):
        # keep every position, in order
        positions: dict[str, list[int]] = {}
        for i, s in enumerate(self._plan):
            positions.setdefault(s.id, []).append(i)
        self._plan_pos = positions
        self._next = 0
        # re-number pending futures so they are never seen as stale
        self._futures = {k: (-1, f) for k, (_, f) in self._futures.items()}
        self._fill()

    def _fill(self) -> None:
        while len(self._futures) < self.window and self._next < len(self._plan):
            sample = self._plan[self._next]
            if self.admit is not None and not self.admit(sample.id):
                pass  # no longer needed: never prefetched
            elif sample.id not in self._futures:  # a repeated plan entry already in flight
                self._futures[sample.id] = (self._next, self._submit(sample))
            self._next += 1

    def _submit(self, sample) -> Future:
        if self._closed:
            raise InternalError("runner is closed: no generation can start after close()")
        if self._pool is None:
            self._pool = DaemonPool(self.concurrency, "violin-gen")
        if sample.task not in self._warm:
            self._warm_up(sample)
        self.generated += 1
        return self._pool.submit(self._generate, sample)

    def _warm_up(self, sample) -> None:
        """Import, in the calling (main) thread, what generating ``sample``'s task imports lazily.

        CPython 3.11.0-3.11.7 shares the AST constructor's recursion counter between threads (cpython
        gh-106905): a module that calls ``ast.parse`` while it is imported in a generation thread
        (scikit-image's lazy loader, ``numpy.ma``) can make pytest's own ``ast.parse``, formatting a failure
        in the main thread, raise ``SystemError`` (an INTERNALERROR). Rendering one sample of each task here,
        once, imports all of it first.
        """
        self._warm.add(sample.task)
        try:
            import numpy.ma  # noqa: F401  (imports inspect machinery that parses source)

            from ..imaging import as_rgb8, encode_png
            from ..models.request import GenerationRequest

            request = GenerationRequest.from_sample(sample, base_seed=self.base_seed, repeat=0)
            list(request.images)
            as_rgb8(encode_png(sample.expected()[:8, :8]))  # the codec's imports, not its time
        except Exception:  # the generation itself will report whatever is wrong
            pass

    # -- consuming ------------------------------------------------------
    def get(self, sample) -> Generation:
        """Block until the images of ``sample`` are ready and return them.

        A sample that was not planned (or not yet submitted) is submitted at once. Consuming a planned sample
        drops prefetched results of samples planned *before* it that were never asked for (deselected or
        skipped), so they do not occupy the window.
        """
        entry = self._futures.pop(sample.id, None)
        positions = self._plan_pos.get(sample.id)
        pos = positions.pop(0) if positions else None
        if pos is not None:
            if pos >= self._next:
                self._next = pos + 1
            stale = [k for k, (p, _) in self._futures.items() if 0 <= p < pos]
            for k in stale:
                _, fut = self._futures.pop(k)
                fut.cancel()
        if entry is None:
            future = self._submit(sample)
        else:
            future = entry[1]
        self._fill()
        gen = wait_for(future)  # in slices: a signal another thread took still reaches pytest
        self._fill()
        return gen

    def withdraw(self, sample) -> bool:
        """Take ``sample`` out of the prefetch; True when nothing was sent for it.

        False when its generation is running or done (it was paid for: consume it with :meth:`get`); True when
        it was never submitted, its queued submission was cancelled before a thread took it, or it ended
        having sent nothing (no attempt, no image: a batch request the gate no longer needed before its wave
        was submitted).
        """
        entry = self._futures.get(sample.id)
        if entry is None:
            return True
        future = entry[1]
        if future.cancel() or (future.done() and not future.result().attempts and not future.result().images):
            self._futures.pop(sample.id, None)
            self._fill()
            return True
        return False

    def drop_unadmitted(self) -> int:
        """Cancel the queued prefetches :attr:`admit` no longer admits; return how many."""
        if self.admit is None:
            return 0
        dropped = 0
        for key, (_, fut) in list(self._futures.items()):
            if not self.admit(key) and fut.cancel():
                self._futures.pop(key, None)
                dropped += 1
        return dropped

    def generate_now(self, sample) -> Generation:
        """Generate ``sample`` in the calling thread (no prefetch)."""
        return self._generate(sample)

    @property
    def stop_reason(self) -> str | None:
        """Why the runner stopped calling the adapter (see the module docstring), or None while it has not."""
        return None if self._stop is None else self._stop[1]

    @property
    def unreachable(self) -> str | None:
        """Why the endpoint counts as dead, or None while it is not."""
        return self._stopped("dead")

    @property
    def setup_stop(self) -> str | None:
        """``setup error after N samples: <reason>`` once the first samples all
        ended in the same setup error (``the same error in the first N samples,
        before any image: <reason>`` for a crash; see the module docstring), else None."""
        return self._stopped("setup")

    def _stopped(self, kind: str) -> str | None:
        stop = self._stop
        return stop[1] if stop is not None and stop[0] == kind else None

    def close(self, *, wait: bool = True, timeout: float | None = None) -> bool:
        """Cancel pending prefetches and stop the threads; True when every thread has ended.

        Parameters
        ----------
        wait : bool, optional
            Wait for generations in flight (a normal end). ``False`` after an interrupt: the cancel event is
            set, so adapters start no new request or retry, and the threads still in flight are abandoned.
        timeout : float, optional
            With ``wait``: the most seconds to wait for them (an interrupted run sets :attr:`cancel` first, so
            the generations end at once).
        """
        self._closed = True
        if not wait:
            self.cancel.set()
        for _, fut in self._futures.values():
            fut.cancel()
        self._futures.clear()
        ended = True
        if self._pool is not None:
            ended = self._pool.shutdown(wait=wait, timeout=timeout)
            self._pool = None
        return ended

    # -- work (in pool threads) ----------------------------------------
    def _note(self, error: GenerationError | None, sent: bool = True) -> None:
        """Count how an adapter call ended (None: an image) in the rows of the stop rule; ``sent``: a request
        left (a failure refused before one left costs nothing and counts only on the run's first samples)."""
        with self._lock:
            if error is None:
                self._transport_failures = self._streak = 0
                self._answered = True
                return
            if self._stop is not None or not _counted(error):
                return
            if error.transport:
                self._note_transport(error)
                return
            first = not self._answered and isinstance(error, (SetupError, GenerationCrashed))
            if not sent and not first:
                return
            cause = _cause(error)
            if cause != self._streak_cause:
                self._streak_cause, self._streak = cause, 0
            self._streak += 1
            n, why = self._streak, _redact(error.reason)
            if first and n >= self.setup_after:
                self._stop = ("setup", f"setup error after {n} samples: {why}" if isinstance(error, SetupError)
                              else f"the same error in the first {n} samples, before any image: {why}")
            elif n >= max(self.repeat_after, self.concurrency + 1):
                self._stop = ("repeat", f"the same failure on {n} samples in a row, no image in between: "
                                        f"{exception_line(error)}")

    def _note_transport(self, error: GenerationError) -> None:
        now = time.monotonic()
        if self._transport_failures == 0:
            self._first_failure = now
        self._transport_failures += 1
        if self._transport_failures >= self.dead_after and now - self._first_failure >= self.dead_window:
            self._stop = ("dead", f"endpoint unreachable after {self._transport_failures} consecutive "
                                  f"failures in {now - self._first_failure:.0f} s: {error.reason}")

    def _key_identity(self, identity: str) -> str | None:
        # its own lock: the first thread asks the server (cache_identity may make HTTP calls) while the others
        # wait for the answer, without holding up _note
        with self._identity_lock:
            if not self._cache_identity:
                self._cache_identity.append(cache_identity(self.adapter, identity))
            return self._cache_identity[0]

    def _generate(self, sample) -> Generation:
        from ..models.request import GenerationRequest, derive_seed

        start = time.perf_counter()
        gen = Generation(cached=True)
        # the model's own class names an adapter without an identity, not the counting wrapper's
        identity = getattr(self.adapter, "identity", type(getattr(self.adapter, "wrapped", self.adapter)).__name__)
        try:
            first = None
            for repeat in range(self.repeats):
                if first is None:
                    request = first = GenerationRequest.from_sample(sample, base_seed=self.base_seed, repeat=repeat)
                else:  # same (lazily rendered) input images, another seed
                    request = replace(first, seed=derive_seed(self.base_seed, sample.id, repeat), repeat=repeat)
                image = self._image(sample, request, identity, gen)
                if self.save_outputs is not None:
                    from ..imaging import encode_png
                    from ..models.directory import output_path

                    atomic_write(output_path(self.save_outputs, sample.id, repeat), encode_png(image))
                gen.images.append(image)
        except GenerationError as error:
            return Generation([], error.remade(text=_redact), None, time.perf_counter() - start, gen.attempts, False)
        except CallLimitReached as exc:  # nothing was sent: the cap refused the call
            return Generation([], None, exception_line(exc), time.perf_counter() - start, gen.attempts - 1,
                              False, capped=True)
        except Exception as exc:  # a bug or an environment fault, not the model's failure
            return Generation([], None, exception_line(exc), time.perf_counter() - start, gen.attempts, False)
        gen.seconds = time.perf_counter() - start
        gen.cached = gen.cached and bool(gen.images)
        return gen

    def _image(self, sample, request, identity: str, gen: Generation):
        """One image of ``sample``: from the cache, else from the adapter (counted in ``gen``)."""
        key = image = None
        if self.cache is not None:
            try:
                keyed = self._key_identity(identity)
                if keyed is not None:
                    key = self.cache.key(keyed, request)
                    image = self.cache.get(key)
            except Exception:  # a broken cache never fails a sample
                key, image = None, None
            if image is not None:
                from ..imaging import RGB8

                if self.usage is not None:
                    self.usage.hit()
                return RGB8.trusted(image)
        gen.cached = False
        image = self._call(sample, request, gen)
        if key is not None:
            try:
                self.cache.put(key, image)
            except Exception:  # a full or read-only cache never fails a sample
                pass
        return image

    def _call(self, sample, request, gen: Generation):
        """Ask the adapter; the answer is validated here, once (:class:`~pytest_violin.imaging.RGB8`)."""
        from ..imaging import RGB8, as_rgb8, resize_rgb8

        if self.cancel.is_set():
            raise GenerationCancelled("cancelled: the run was interrupted")
        stop = self._stop
        if stop is not None:  # not the model's failure: the sample was never asked for
            kind, why = stop
            if kind == "dead":
                raise GenerationError(why, transport=True)
            raise (SetupError if kind == "setup" else GenerationUnjudged)(why)
        gen.attempts += 1
        sent = sent_marker(self.adapter)
        try:
            output = (self._batcher or self.adapter).generate(request)
        except GenerationError as exc:
            left = sent(exc)
            if not left:  # refused before a request left: no generation made
                gen.attempts -= 1
            self._note(exc, left)
            raise
        try:
            image = as_rgb8(output)
        except InvalidImageError as exc:
            error = GenerationError(f"model returned something that is not an image: {exception_line(exc)}")
            self._note(error)
            raise error from None
        self._note(None)
        del output
        if image.shape[:2] != (sample.height, sample.width):
            gen.original_size = gen.original_size or (int(image.shape[1]), int(image.shape[0]))
            image = resize_rgb8(image, sample.width, sample.height)
        return RGB8.trusted(image)
