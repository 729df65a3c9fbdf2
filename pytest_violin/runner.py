"""Generate images ahead of the tests that need them.

pytest runs items one after another, but model endpoints have latency.
:class:`Runner` generates images for the samples of *this process* in a
bounded thread pool, in the order declared with :meth:`Runner.plan`, while
the tests score earlier images. A test waits only for its own sample
(:meth:`Runner.get`). At most ``2 * concurrency`` generations are submitted
and not yet consumed, so memory stays flat however large the suite is.

Every failure of an adapter becomes a
:class:`~pytest_violin.errors.GenerationError` with a redacted one-line
reason; a failed sample never stops the run.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from ._fs import atomic_write
from .errors import GenerationError

__all__ = ["Generation", "Runner", "output_path"]


def _redact(text: str) -> str:
    try:
        from .secrets import redact
    except ImportError:  # pragma: no cover - secrets module always ships
        return text
    return redact(text)


@dataclass
class Generation:
    """The outcome of generating the images of one sample.

    Attributes
    ----------
    images : list of numpy.ndarray
        RGB uint8 images, one per repeat (empty on error).
    error : GenerationError or None
        Why no image came (message already redacted).
    seconds : float
        Wall time of the generation (all repeats).
    attempts : int
        Adapter calls made (cache hits excluded).
    cached : bool
        Whether every image came from the cache.
    """

    images: list = field(default_factory=list)
    error: GenerationError | None = None
    seconds: float = 0.0
    attempts: int = 0
    cached: bool = False


def output_path(root, sample_id: str, repeat: int = 0) -> Path:
    """Where ``--violin-save-outputs`` / ``dir:`` keep an image.

    ``ROOT/<sample id>.png`` for repeat 0, ``ROOT/<sample id>.r<k>.png``
    for repeat ``k > 0``.
    """
    suffix = ".png" if repeat == 0 else f".r{int(repeat)}.png"
    return Path(root) / (sample_id + suffix)


class Runner:
    """Prefetching image generation for one process.

    Parameters
    ----------
    adapter : ModelAdapter
        The model.
    concurrency : int, optional
        Threads generating at once (>= 1).
    cache : ImageCache, optional
        Disk cache (``key``, ``get``, ``put``); skipped for adapters whose
        ``cacheable`` attribute is False.
    base_seed : int, optional
        The run seed; per-sample seeds are derived from it.
    repeats : int, optional
        Images per sample (>= 1).
    save_outputs : path-like, optional
        Directory where every image is written as ``<sample id>.png``.
    """

    def __init__(self, adapter, *, concurrency: int = 4, cache=None, base_seed: int = 0,
                 repeats: int = 1, save_outputs=None):
        if int(concurrency) < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        if int(repeats) < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats!r}")
        self.adapter = adapter
        self.concurrency = int(concurrency)
        self.cache = cache if getattr(adapter, "cacheable", True) else None
        self.base_seed = int(base_seed)
        self.repeats = int(repeats)
        self.save_outputs = None if save_outputs is None else Path(save_outputs)
        self.window = 2 * self.concurrency
        # A sample's ground truth is rendered when its image is generated and
        # again when it is scored, up to ``window`` samples later (plus the
        # xdist look-ahead): keep that many renders (bounded, see RenderCache).
        from .suite.sample import RENDER_CACHE

        RENDER_CACHE.ensure_capacity(self.window + 8)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._plan: list = []
        self._plan_pos: dict[str, list[int]] = {}
        self._next = 0
        self._futures: dict[str, tuple[int, Future]] = {}
        self._closed = False
        self.generated = 0  # generations started (for tests and benchmarks)

    # -- planning -------------------------------------------------------
    def plan(self, samples) -> None:
        """Declare the order in which this process will need ``samples``.

        Replaces the previous plan; samples already submitted stay. Prefetch
        starts at once, bounded by ``2 * concurrency`` unconsumed results.
        """
        self._plan = [s for s in samples if s.id not in self._futures]
        # a sample may be planned more than once (a ``violin::`` item and a
        # user test of the same sample): keep every position, in order
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
            if sample.id not in self._futures:  # a repeated plan entry already in flight
                self._futures[sample.id] = (self._next, self._submit(sample))
            self._next += 1

    def _submit(self, sample) -> Future:
        if self._closed:
            raise RuntimeError("runner is closed")
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="violin-gen")
        self.generated += 1
        return self._pool.submit(self._generate, sample)

    # -- consuming ------------------------------------------------------
    def get(self, sample) -> Generation:
        """Block until the images of ``sample`` are ready and return them.

        A sample that was not planned (or not yet submitted) is submitted
        at once. Consuming a planned sample drops prefetched results of
        samples planned *before* it that were never asked for (deselected
        or skipped), so they do not occupy the window.
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
        gen = future.result()
        self._fill()
        return gen

    def generate_now(self, sample) -> Generation:
        """Generate ``sample`` in the calling thread (no prefetch)."""
        return self._generate(sample)

    def close(self) -> None:
        """Cancel pending prefetches and stop the threads."""
        self._closed = True
        for _, fut in self._futures.values():
            fut.cancel()
        self._futures.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    # -- work (in pool threads) ----------------------------------------
    def _generate(self, sample) -> Generation:
        from .imaging import as_rgb8
        from .models.request import GenerationRequest, derive_seed

        start = time.perf_counter()
        images = []
        attempts = 0
        cached = True
        identity = getattr(self.adapter, "identity", type(self.adapter).__name__)
        try:
            first = None
            for repeat in range(self.repeats):
                if first is None:
                    request = first = GenerationRequest.from_sample(
                        sample, base_seed=self.base_seed, repeat=repeat)
                else:  # same (lazily rendered) input images, another seed
                    request = replace(first, seed=derive_seed(self.base_seed, sample.id, repeat),
                                      repeat=repeat)
                key = None
                image = None
                if self.cache is not None:
                    try:
                        key = self.cache.key(identity, request)
                        image = self.cache.get(key)
                    except Exception:  # a broken cache never fails a sample
                        key, image = None, None
                if image is None:
                    cached = False
                    attempts += 1
                    output = self.adapter.generate(request)
                    image = as_rgb8(output)
                    if key is not None:
                        try:
                            self.cache.put(key, image)
                        except Exception:
                            pass
                if self.save_outputs is not None:
                    from .imaging import encode_png

                    atomic_write(output_path(self.save_outputs, sample.id, repeat), encode_png(image))
                images.append(image)
        except GenerationError as exc:
            err = GenerationError(_redact(exc.reason), attempts=exc.attempts, status=exc.status)
            return Generation([], err, time.perf_counter() - start, attempts, False)
        except Exception as exc:
            kind = type(exc).__name__
            text = str(exc).strip().splitlines()
            reason = f"{kind}: {text[0] if text else ''}".rstrip(": ")
            if getattr(exc, "__module__", "").startswith("pytest_violin") and "InvalidImage" in kind:
                reason = f"model returned something that is not an image: {text[0] if text else kind}"
            err = GenerationError(_redact(reason[:2000]))
            return Generation([], err, time.perf_counter() - start, attempts, False)
        return Generation(images, None, time.perf_counter() - start, attempts, cached and bool(images))
