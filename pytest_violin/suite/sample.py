"""The :class:`Sample`: one instruction, its inputs and its one exact answer."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .. import tasks
from ..errors import InvalidArgumentError, InvalidImageError, SuiteError
from ..imaging import as_rgb8, current_reader, resize_rgb8
from ..tasks import color as _color_family
from .drawing import apply_mask
from .ids import validate_sample_id

__all__ = ["Sample", "TASKS", "LAYOUTS", "default_metric_names", "RenderCache", "RENDER_CACHE",
           "FrozenMap", "freeze", "thaw", "canonical_json"]

#: Tasks a sample can have (the built-in task families; families registered later are accepted too, see
#: :func:`pytest_violin.tasks.task_names`).
TASKS = tasks.task_names()
#: Layouts of color samples.
LAYOUTS = _color_family.LAYOUTS


# read-only, JSON-able containers for sample specs


class FrozenMap(dict):
    """A ``dict`` that refuses every mutation (so ``json.dumps`` still works).

    Values are frozen recursively by :func:`freeze`: nested dicts become ``FrozenMap`` and lists become
    tuples.
    """

    __slots__ = ()

    def _readonly(self, *args, **kwargs):
        raise InvalidArgumentError("sample specs are read-only; build a new sample instead")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly

    def __ior__(self, other):
        self._readonly()

    def __hash__(self):
        return hash(canonical_json(self))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (FrozenMap, (dict(self),))

    def __repr__(self):
        return f"FrozenMap({dict.__repr__(self)})"


_SCALARS = (str, int, float, bool, type(None))


def freeze(value):
    """Deep-freeze JSON-like data: dict -> FrozenMap, list/tuple -> tuple."""
    kind = type(value)
    if kind in _SCALARS or kind is FrozenMap:
        return value
    if isinstance(value, dict):
        return FrozenMap({str(k): (v if type(v) in _SCALARS else freeze(v))
                          for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        if all(type(v) in _SCALARS for v in value):
            return tuple(value)
        return tuple(freeze(v) for v in value)
    return value


def thaw(value):
    """Inverse of :func:`freeze`: plain dicts and lists (JSON round-trip form)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def canonical_json(value) -> str:
    """Compact JSON with sorted keys: a stable text form of spec data."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class RenderCache:
    """A small per-process LRU of rendered ground truths.

    A run asks for one sample's ground truth several times in a row (the oracle renders it,
    :meth:`Sample.score` renders it again, a report may want it once more), and for mask samples and exported
    suites that is the expensive part (cropping and resizing a photo, decoding a PNG). The cache keeps the
    last ``maxsize`` renders, keyed by the identity of the :class:`Sample` object (the entry holds the sample,
    so the key cannot be reused while it lives) and the calling run's image reader (a photo or a manifest's
    file reads as that run's profile says, and runs of both profiles may share a sample), stored read-only;
    :meth:`Sample.expected` returns a fresh writable copy, so callers can never alter a shared array. Bounded,
    so nothing is held for the whole suite: ``maxsize`` images of at most ``width * height * 3`` bytes each.
    """

    def __init__(self, maxsize: int = 16):
        self.maxsize = int(maxsize)
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, sample):
        """The cached read-only render of ``sample`` or ``None``."""
        key = (id(sample), current_reader())
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] is not sample:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, sample, image: np.ndarray) -> np.ndarray:
        """Store ``image`` (made read-only) as the render of ``sample``; return it."""
        image.setflags(write=False)
        if self.maxsize <= 0:
            return image
        key = (id(sample), current_reader())
        with self._lock:
            self._entries[key] = (sample, image)
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return image

    def ensure_capacity(self, size: int, *, limit: int = 64) -> None:
        """Grow ``maxsize`` to at least ``size`` (never above ``limit``)."""
        with self._lock:
            self.maxsize = max(self.maxsize, min(int(size), int(limit)))

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


#: The process-wide cache behind :meth:`Sample.expected`.
RENDER_CACHE = RenderCache()


def default_metric_names(task: str) -> tuple:
    """The metric names a task's score returns (its family's, see :mod:`pytest_violin.tasks`)."""
    return tasks.metric_names(task)


@dataclass(frozen=True, eq=False, slots=True)
class Sample:
    """One Violin sample: a prompt, its input images and its ground truth.

    Samples are immutable, hashable and cheap: no pixel is held; the ground truth is returned by
    :meth:`expected` as a new array on each call (the last few expensive renders are kept in the bounded
    process-wide :data:`RENDER_CACHE`, not on the sample).

    Parameters
    ----------
    id : str
        Stable, path-like id (``color/v1/yellowish-pink/t07``).
    suite : str
        Suite name.
    task : str
        The name of a task family (:data:`TASKS`, or one registered since).
    variation : str
        E.g. ``v1``, ``circle``, ``inpaint``.
    prompt : str
        The instruction given to the model.
    width, height : int
        Image size in pixels.
    layout : str or None
        Block layout of color samples, else None.
    spec : mapping
        JSON-able description that fully defines the ground truth (frozen).
    control : str or None
        Id of the control sample of a probe (same suite), else None.
    metric_names : tuple of str
        Names of the metrics :meth:`score` returns.
    """

    id: str
    suite: str
    task: str
    variation: str
    prompt: str
    width: int
    height: int
    layout: str | None = None
    spec: FrozenMap = field(default_factory=FrozenMap)
    control: str | None = None
    metric_names: tuple = ()
    files: FrozenMap | None = field(default=None, repr=False)
    payload: tuple | None = field(default=None, repr=False)

    def __post_init__(self):
        validate_sample_id(self.id)
        if tasks.find_family(self.task) is None:
            raise SuiteError(f"sample {self.id!r}: unknown task {self.task!r}; "
                             f"accepted: {', '.join(tasks.task_names())}")
        for name in ("width", "height"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise SuiteError(f"sample {self.id!r}: {name} {value!r} must be a positive integer")
        if self.layout is not None and self.layout not in LAYOUTS:
            raise SuiteError(f"sample {self.id!r}: unknown layout {self.layout!r}; "
                             f"accepted: {', '.join(LAYOUTS)} or None")
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise SuiteError(f"sample {self.id!r}: prompt must be a non-empty string")
        if not isinstance(self.spec, FrozenMap):
            object.__setattr__(self, "spec", freeze(dict(self.spec)))
        if not self.metric_names:
            object.__setattr__(self, "metric_names", default_metric_names(self.task))
        else:
            object.__setattr__(self, "metric_names", tuple(self.metric_names))
        if self.files is not None and not isinstance(self.files, FrozenMap):
            object.__setattr__(self, "files", freeze(dict(self.files)))

    # identity -----------------------------------------------------------
    def _key(self):
        return (self.id, self.suite, self.task, self.variation, self.prompt, self.width,
                self.height, self.layout, self.spec, self.control, self.metric_names)

    def __eq__(self, other):
        if not isinstance(other, Sample):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash((self.suite, self.id))

    # pixels -------------------------------------------------------------
    @property
    def inputs(self) -> tuple:
        """Input images (RGB uint8), rendered or loaded on each access.

        ``(source_image, mask_as_black_white_rgb)`` for mask samples (white = keep), ``()`` for generation
        tasks.
        """
        if self.files is not None and self.files.get("inputs"):
            return tuple(self._read_file(p, "input image") for p in self.files["inputs"])
        if self.payload is not None:
            from .drawing import mask_to_rgb

            source, keep = self.payload
            return (source.copy(), mask_to_rgb(keep))
        return tasks.render_inputs(self.spec, self.width, self.height)

    def expected(self) -> np.ndarray:
        """The ground-truth image, ``(height, width, 3)`` uint8, rendered on demand.

        Always a new writable array. Expensive ground truths (mask samples cropped from a photo, exported
        suites read from PNG) come from a small bounded LRU of recent renders (:data:`RENDER_CACHE`), copied.
        """
        if not self._costly_render():
            return self._render_expected()
        cached = RENDER_CACHE.get(self)
        if cached is None:
            cached = RENDER_CACHE.put(self, self._render_expected())
        return cached.copy()

    def _costly_render(self) -> bool:
        if self.files is not None and self.files.get("expected"):
            return True
        return self.payload is None and tasks.costly_render(self.spec)

    def _render_expected(self) -> np.ndarray:
        if self.files is not None and self.files.get("expected"):
            return self._read_file(self.files["expected"], "expected image")
        if self.payload is not None:
            source, keep = self.payload
            return apply_mask(source, keep)
        return tasks.render(self.spec, self.width, self.height)

    def _read_file(self, path, what: str) -> np.ndarray:
        """Decode a manifest file: one line naming the sample and file on failure."""
        try:
            # an official sample's files are read as the reference reads them (spec "reader")
            return as_rgb8(path, reader=self.spec.get("reader"))
        except InvalidImageError as exc:
            reason = getattr(exc, "problem", str(exc))
            raise InvalidImageError(f"sample {self.id!r}: {what} {str(path)!r} is not a usable "
                                    f"image ({reason})") from None

    def score(self, image, *, profile: str = "violin"):
        """Score a generated image (resized to ``(width, height)`` first when it has another size).

        Returns the :class:`~pytest_violin.metrics.Metrics` named by :attr:`metric_names`; their ``info``
        holds ``original_size`` ``(w, h)``, ``resized`` and ``sample_id``.
        """

        # profile "violin" reads an answer as the reference scripts do (cv2.imread)
        img = as_rgb8(image, reader="opencv" if profile == "violin" else None)
        h, w = img.shape[:2]
        resized = (w, h) != (self.width, self.height)
        if resized:
            img = resize_rgb8(img, self.width, self.height)
        metrics = tasks.score(self, img, profile)
        return metrics.with_info(original_size=(int(w), int(h)), resized=resized,
                                 sample_id=self.id)

    # serialization ------------------------------------------------------
    def to_manifest(self) -> dict:
        """The sample as a plain JSON-able dict (one manifest line, without file paths)."""
        return {
            "id": self.id,
            "suite": self.suite,
            "task": self.task,
            "variation": self.variation,
            "prompt": self.prompt,
            "width": int(self.width),
            "height": int(self.height),
            "layout": self.layout,
            "control": self.control,
            "metric_names": list(self.metric_names),
            "spec": thaw(self.spec),
        }
