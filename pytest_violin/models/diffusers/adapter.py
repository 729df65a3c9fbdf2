"""The diffusers adapter: from a request to the pipeline of its kind and its call arguments.

:func:`request_kind` says which kind of pipeline a request needs
(``text2image``, ``image2image`` or ``inpaint``, the keys of :data:`KINDS`);
:class:`DiffusersAdapter` holds one pipeline per kind (built by
:func:`pytest_violin.models.diffusers.build_pipelines`), maps a request to
the keyword arguments its pipeline names, and runs one generation at a
time. Nothing here imports torch or diffusers: any callable with a
pipeline's signature serves (the tests' fakes do).
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Callable, Mapping

import numpy as np

from ...errors import GenerationCancelled, GenerationError, InvalidArgumentError, ModelSpecError
from ...imaging import as_rgb8
from ...redaction import redact
from ..request import GenerationRequest
from .backend import one_line, quiet

__all__ = ["KINDS", "DiffusersAdapter", "named_parameters", "request_kind"]

#: kind -> (diffusers auto class, parameters its ``__call__`` must name, words for messages)
KINDS: Mapping[str, tuple[str, tuple[str, ...], str]] = {
    "text2image": ("AutoPipelineForText2Image", ("prompt", "generator"), "a text-to-image pipeline"),
    "image2image": ("AutoPipelineForImage2Image", ("prompt", "image", "generator"),
                    "an image-to-image pipeline"),
    "inpaint": ("AutoPipelineForInpainting", ("prompt", "image", "mask_image", "generator"),
                "an inpainting pipeline"),
}

#: call arguments the adapter sets per request; not accepted as suffix parameters
_PER_REQUEST = ("prompt", "width", "height", "generator", "image", "mask_image")


def named_parameters(fn) -> frozenset:
    """The parameter names ``fn`` declares, without ``*args`` and ``**kwargs``.

    A ``**kwargs`` parameter accepts a name without using it, so it does not
    count as accepting anything.
    """
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    skip = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return frozenset(p.name for p in params if p.kind not in skip and p.name != "self")


def request_kind(request: GenerationRequest) -> str:
    """The kind of pipeline ``request`` needs: ``text2image``, ``image2image`` or ``inpaint``.

    Raises
    ------
    GenerationError
        For input images the adapter has no way to use (a mask request
        without exactly a source image and a mask, or several images for
        another task): they are never dropped silently.
    """
    count = len(request.images)
    if request.task == "mask":
        if count != 2:
            raise GenerationError(
                f"diffusers: a mask sample needs 2 input images (source and mask), got {count}")
        return "inpaint"
    if count == 0:
        return "text2image"
    if count == 1:
        return "image2image"
    raise GenerationError(
        f"diffusers: {request.task} sample with {count} input images; the adapter sends at most one "
        "(image-to-image) or a source and a mask (mask task)")


def _first_image(output) -> Any:
    images = getattr(output, "images", None)
    if images is None and isinstance(output, (tuple, list)) and output:
        images = output[0]
    if images is None:
        images = output
    if isinstance(images, (list, tuple)):
        if not images:
            raise GenerationError("the pipeline returned no image")
        return images[0]
    if isinstance(images, np.ndarray) and images.ndim == 4:
        return images[0]
    return images


class DiffusersAdapter:
    """Sends each request to the pipeline of its kind (see the module docstring).

    Parameters
    ----------
    pipelines : mapping
        ``kind -> pipeline`` (a diffusers pipeline, or anything called the
        same way) for the kinds served, and ``kind -> str`` (why not) for
        the others; kinds are the keys of :data:`KINDS`. A missing kind
        is not served.
    identity : str
        Secret-free identity, e.g. ``diffusers:/models/sd-tiny``.
    make_generator : callable
        ``make_generator(seed) -> generator`` passed as ``generator=``.
    call_kwargs : dict, optional
        Extra keyword arguments, each passed to the pipelines whose
        ``__call__`` names it (``num_inference_steps``...).
    source : str, optional
        What was loaded, for messages (the pipeline class name).
    cancel : threading.Event, optional
        Set when the run is interrupted: no new generation starts, and a
        running one stops at its next step where the pipeline takes
        ``callback_on_step_end``.
    release : callable, optional
        Called by :meth:`close` once the pipelines are dropped (gives the
        device's cached memory back).

    Raises
    ------
    ModelSpecError
        When no kind is served, or a call parameter is named by none of the
        pipelines or is one the adapter sets per request.
    """

    cacheable = True
    #: one generation at a time: the runner need not run more threads than this
    max_concurrency = 1
    #: requests per pipeline call (``?batch=B``); above 1 the runner batches (execution/batching.py)
    batch_size = 1

    def __init__(self, pipelines: Mapping[str, Any], identity: str, *, make_generator: Callable[[int], Any],
                 call_kwargs: dict | None = None, source: str | None = None,
                 cancel: threading.Event | None = None, release: Callable[[], None] | None = None):
        unknown = sorted(set(pipelines) - set(KINDS))
        if unknown:
            raise InvalidArgumentError(f"unknown pipeline kinds {unknown}; accepted: {', '.join(KINDS)}")
        self.pipelines = {k: v for k, v in pipelines.items() if not isinstance(v, str)}
        self.reasons = {k: v for k, v in pipelines.items() if isinstance(v, str)}
        self.identity = identity
        self.make_generator = make_generator
        self.call_kwargs = dict(call_kwargs or {})
        self.source = source or next((type(p).__name__ for p in self.pipelines.values()), "the pipeline")
        self.cancel = cancel
        self._release = release
        self._lock = threading.Lock()
        self._names = {k: named_parameters(p.__call__) for k, p in self.pipelines.items()}
        if not self.pipelines:
            why = "; ".join(f"{k}: {r}" for k, r in self.reasons.items())
            raise ModelSpecError(
                f"diffusers: {self.source} serves none of {', '.join(KINDS)}" + (f" ({why})" if why else ""))
        fixed = sorted(set(self.call_kwargs) & set(_PER_REQUEST))
        if fixed:
            raise ModelSpecError(
                f"diffusers: parameter {fixed[0]!r} is set by the adapter for each sample; "
                "accepted: other parameters of the pipeline call, e.g. steps, guidance_scale, strength")
        known = frozenset().union(*self._names.values())
        for name in self.call_kwargs:
            if name not in known:
                accepted = ", ".join(sorted(known - set(_PER_REQUEST)))
                raise ModelSpecError(
                    f"diffusers: parameter {name!r} is not named by "
                    f"{' or '.join(sorted({type(p).__name__ for p in self.pipelines.values()}))}"
                    f".__call__; accepted: steps, {accepted}")

    def kinds(self) -> tuple[str, ...]:
        """The kinds of request this adapter serves."""
        return tuple(k for k in KINDS if k in self.pipelines)

    def pipeline_for(self, request: GenerationRequest):
        """``(kind, pipeline)`` for ``request``.

        Raises
        ------
        GenerationError
            One line naming the kind of pipeline the request needs when the
            folder cannot serve it.
        """
        kind = request_kind(request)
        pipe = self.pipelines.get(kind)
        if pipe is None:
            words = KINDS[kind][2]
            reason = self.reasons.get(kind, "not built")
            what = "text-only" if kind == "text2image" else f"{request.task} (with input images)"
            raise GenerationError(one_line(
                f"diffusers: {what} samples need {words} ({KINDS[kind][0]}); "
                f"{self.source} cannot provide one: {reason}", 400))
        return kind, pipe

    def call_arguments(self, request: GenerationRequest, kind: str | None = None) -> dict:
        """Keyword arguments of the pipeline call for ``request``."""
        from PIL import Image

        if kind is None:
            kind = request_kind(request)
        names = self._names[kind]
        kwargs: dict[str, Any] = {"prompt": request.prompt,
                                  "generator": self.make_generator(int(request.seed))}
        for name, value in (("width", int(request.width)), ("height", int(request.height))):
            if name in names:
                kwargs[name] = value
        if kind in ("image2image", "inpaint"):
            kwargs["image"] = Image.fromarray(as_rgb8(request.images[0]))
        if kind == "inpaint":
            mask = as_rgb8(request.images[1])
            kwargs["mask_image"] = Image.fromarray(255 - mask).convert("L")
        for name, value in self.call_kwargs.items():
            if name in names:
                kwargs[name] = value
        if self.cancel is not None and "callback_on_step_end" in names and "callback_on_step_end" not in kwargs:
            kwargs["callback_on_step_end"] = self._stop_when_cancelled
        return kwargs

    def batch_key(self, request: GenerationRequest) -> tuple:
        """Requests with equal keys run in one pipeline call: same kind, task and size."""
        try:
            kind = request_kind(request)
        except GenerationError:
            kind = None  # fails alone, in generate_batch
        return (kind, request.task, int(request.width), int(request.height))

    def generate_batch(self, requests) -> list:
        """Run one pipeline call for ``requests`` (one :meth:`batch_key`); one image per request.

        Each request keeps its own ``torch.Generator`` (a list of generators, one per prompt),
        so a sample's image is the one ``batch=1`` gives it, whatever its neighbours.
        """
        requests = list(requests)
        if len(requests) == 1:
            return [self.generate(requests[0])]
        kind, pipe = self.pipeline_for(requests[0])
        calls = [self.call_arguments(r, kind) for r in requests]
        kwargs = dict(calls[0])
        for name in ("prompt", "generator", "image", "mask_image"):
            if name in kwargs:
                kwargs[name] = [c[name] for c in calls]
        output = self._call(pipe, kwargs)
        images = getattr(output, "images", None)
        if images is None and isinstance(output, (tuple, list)) and output:
            images = output[0]
        images = list(images) if images is not None else []
        if len(images) != len(requests):
            raise GenerationError(f"diffusers {type(pipe).__name__} returned {len(images)} images for a "
                                  f"batch of {len(requests)} prompts")
        return [as_rgb8(image) for image in images]

    def _stop_when_cancelled(self, pipe, step, timestep, callback_kwargs):
        if self.cancel is not None and self.cancel.is_set():
            raise GenerationCancelled("diffusers: run interrupted")
        return callback_kwargs

    def generate(self, request: GenerationRequest):
        """Run the pipeline of the request's kind; return RGB uint8."""
        kind, pipe = self.pipeline_for(request)
        return as_rgb8(_first_image(self._call(pipe, self.call_arguments(request, kind))))

    def _call(self, pipe, kwargs):
        """One pipeline call, serialised, quiet; what it raises as a one-line GenerationError."""
        try:
            with self._lock:
                if self.cancel is not None and self.cancel.is_set():
                    raise GenerationCancelled("diffusers: run interrupted")
                with quiet(python_warnings=False):
                    return pipe(**kwargs)
        except GenerationError:
            raise
        except Exception as exc:
            raise GenerationError(
                redact(f"diffusers {type(pipe).__name__} failed: {type(exc).__name__}: {one_line(exc)}"),
                attempts=1,
            ) from exc

    def close(self) -> None:
        """Drop the pipelines (frees memory once nothing else holds them) and give the device's
        cached memory back (the xdist controller closes its adapter before the workers load)."""
        self.pipelines = {}
        if self._release is not None:
            try:
                self._release()
            except Exception:  # freeing memory must never fail a run
                pass

    def __repr__(self) -> str:
        return f"DiffusersAdapter({self.identity!r}, kinds={self.kinds()})"
