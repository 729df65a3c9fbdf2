"""``diffusers:PATH_OR_ID``: a local Hugging Face diffusers pipeline (docs/models.md, "Local diffusers pipeline").

Optional: needs ``pip install 'pytest-violin[diffusers]'``; this module imports without torch or diffusers and
the factory raises :class:`~pytest_violin.errors.ModelSpecError` with the install hint. Weights load once,
from local files only. From the loaded pipeline ``AutoPipelineFor*.from_pipe`` builds one pipeline per kind of
request (:data:`KINDS`: ``text2image``, ``image2image``, ``inpaint`` with the mask inverted, as diffusers
repaints white), usable only when its ``__call__`` *names* the parameters a request needs (``**kwargs`` would
drop an image). Calls are serialised (one pipeline is not thread-safe), and the libraries' progress bars, logs
and warnings are kept out of the output.

``device=auto`` puts pytest-xdist worker ``gwK`` on ``cuda:K mod G``, G the CUDA devices visible
(``CUDA_VISIBLE_DEVICES`` respected), refuses more workers than GPUs unless ``oversubscribe=1``, and takes the
first GPU or the cpu in one process (:mod:`._devices`; the session header says which worker has which).
``batch=B`` draws up to B compatible samples (same kind, task and size) in one call, each with its own
``torch.Generator`` (:mod:`pytest_violin.execution.batching`). Neither is part of the identity (the cache key).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import GenerationCancelled, GenerationError, InvalidArgumentError, ModelSpecError
from ..imaging import as_rgb8
from ..redaction import redact
from .registry import format_params, split_params
from .request import GenerationRequest

__all__ = ["DTYPES", "DiffusersAdapter", "INSTALL_HINT", "KINDS", "build_pipelines", "check_device",
           "create", "import_backend", "load_pipeline", "named_parameters", "one_line", "quiet",
           "request_kind"]


INSTALL_HINT = "pip install 'pytest-violin[diffusers]'"

#: the ``dtype=`` values accepted
DTYPES = ("float32", "float16", "bfloat16")

_LIBRARIES = ("diffusers", "transformers")


def import_backend():
    try:
        torch = importlib.import_module("torch")
        diffusers = importlib.import_module("diffusers")
    except ImportError as exc:
        raise ModelSpecError(
            f"diffusers: the optional dependencies are not installed ({exc.name or exc}); "
            f"install them with: {INSTALL_HINT}"
        ) from None
    return torch, diffusers


def one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@contextlib.contextmanager
def quiet(*, python_warnings: bool = True):
    """Keep diffusers' and transformers' progress bars, logs and warnings out of the output.

    Sets both libraries' log verbosity to ERROR and turns their progress bars off for the duration, then
    restores what was set before.

    * ``python_warnings``: also ignore Python warnings (``warnings.catch_warnings``, which is process-wide:
      use it only while no test runs, e.g. when loading).
    """
    saved = []
    for name in _LIBRARIES:
        try:
            log = importlib.import_module(f"{name}.utils.logging")
        except ImportError:
            continue
        saved.append((log, log.get_verbosity(), log.is_progress_bar_enabled()))
        log.set_verbosity_error()
        log.disable_progress_bar()
    try:
        if python_warnings:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        else:
            yield
    finally:
        for log, verbosity, bars in saved:
            log.set_verbosity(verbosity)
            if bars:
                log.enable_progress_bar()


def load_pipeline(source: str, *, dtype: str | None = None, device: str = "cpu"):
    """Load a pipeline from a local path or the local hub cache, quietly; :class:`ModelSpecError` when it cannot."""
    torch, diffusers = import_backend()
    kwargs: dict[str, Any] = {"local_files_only": True}
    if dtype:
        kwargs["torch_dtype"] = getattr(torch, dtype)
    with quiet():
        try:
            pipe = diffusers.DiffusionPipeline.from_pretrained(source, **kwargs)
        except Exception as exc:  # OSError, ValueError, EnvironmentError ...
            raise ModelSpecError(
                f"diffusers: could not load a pipeline from {source!r} with local_files_only=True "
                f"({type(exc).__name__}: {one_line(exc)}); give a saved pipeline directory or a "
                "hub id that is already in the local cache"
            ) from None
        try:
            pipe = pipe.to(device)
        except Exception as exc:  # RuntimeError, AssertionError (torch not compiled with CUDA) ...
            raise ModelSpecError(
                f"diffusers: device={device!r}: the pipeline cannot be moved there "
                f"({type(exc).__name__}: {one_line(exc)}); accepted: a device this machine has, e.g. cpu"
            ) from None
    return pipe


def check_device(torch, device: str) -> str:
    """Check that ``device`` names a torch device this machine has; :class:`ModelSpecError` naming it."""
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise ModelSpecError(
            f"diffusers: device={device!r} is not a torch device; accepted: cpu, cuda, cuda:N, mps"
        ) from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ModelSpecError(
                f"diffusers: device={device!r} but this machine has no CUDA device "
                "(torch.cuda.is_available() is False); accepted here: cpu")
        if dev.index is not None and dev.index >= count:
            raise ModelSpecError(
                f"diffusers: device={device!r} but this machine has {count} CUDA device(s); "
                f"accepted: cuda:0 to cuda:{count - 1}, cpu")
    elif dev.type == "meta":
        raise ModelSpecError(f"diffusers: device={device!r} holds no weights; accepted: cpu, cuda, cuda:N, mps")
    elif dev.type != "cpu":  # mps, xpu, ...: ask the backend where torch has one
        backend = getattr(torch.backends, dev.type, None) or getattr(torch, dev.type, None)
        available = getattr(backend, "is_available", None)
        if callable(available) and not available():
            raise ModelSpecError(
                f"diffusers: device={device!r} but this machine has no {dev.type} device; accepted here: cpu")
    return str(dev)


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

    A ``**kwargs`` parameter accepts a name without using it, so it does not count as accepting anything.
    """
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    skip = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return frozenset(p.name for p in params if p.kind not in skip and p.name != "self")


def request_kind(request: GenerationRequest) -> str:
    """The kind of pipeline ``request`` needs: ``text2image``, ``image2image`` or ``inpaint``.

    Raises :class:`GenerationError`: for input images the adapter has no way to use (a mask request without
    exactly a source image and a mask, or several images for another task): they are never dropped silently.
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
    """Sends each request to the pipeline of its kind.

    * ``pipelines``: ``kind -> pipeline`` for the kinds served, ``kind -> str`` (why not) for the others.
    * ``call_kwargs``: passed to the pipelines whose ``__call__`` names them; one named by none is a
      :class:`ModelSpecError`.
    * ``cancel``: no new generation starts once set, and a running one stops at its next step where the
      pipeline takes ``callback_on_step_end``.
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
        self._release = release  # gives the device's cached memory back once the pipelines are dropped
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
        """``(kind, pipeline)`` for ``request``; :class:`GenerationError` naming the kind the folder cannot serve."""
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

    def _stop_when_cancelled(self, pipe, step, timestep, callback_kwargs):
        if self.cancel is not None and self.cancel.is_set():
            raise GenerationCancelled("diffusers: run interrupted")
        return callback_kwargs

    def generate(self, request: GenerationRequest):
        """Run the pipeline of the request's kind; return RGB uint8."""
        kind, pipe = self.pipeline_for(request)
        return as_rgb8(_first_image(self._call(pipe, self.call_arguments(request, kind))))

    def batch_key(self, request: GenerationRequest) -> tuple:
        """Requests with equal keys run in one pipeline call: same kind, task and size."""
        try:
            kind = request_kind(request)
        except GenerationError:
            kind = None  # fails alone, in generate_batch
        return (kind, request.task, int(request.width), int(request.height))

    def generate_batch(self, requests) -> list:
        """One pipeline call for ``requests`` (one :meth:`batch_key`); one image per request. Each keeps its
        own generator (a list, one per prompt): a sample's image is the one ``batch=1`` gives it."""
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

    def _call(self, pipe, kwargs):
        """One pipeline call, serialised and quiet; what it raises as a one-line GenerationError."""
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
        """Drop the pipelines (frees memory once nothing else holds them) and give the device's cached
        memory back (the xdist controller closes its adapter before the workers load theirs)."""
        self.pipelines = {}
        if self._release is not None:
            try:
                self._release()
            except Exception:  # freeing memory must never fail a run
                pass

    def __repr__(self) -> str:
        return f"DiffusersAdapter({self.identity!r}, kinds={self.kinds()})"


def _inpaint_only(pipe) -> bool:
    """Whether the denoiser takes latents + mask + masked image (an inpainting checkpoint)."""
    denoiser = getattr(pipe, "unet", None) or getattr(pipe, "transformer", None)
    vae = getattr(pipe, "vae", None)
    try:
        return int(denoiser.config.in_channels) == 2 * int(vae.config.latent_channels) + 1
    except (AttributeError, TypeError, ValueError):
        return False


def build_pipelines(pipe, diffusers=None) -> dict:
    """One pipeline per kind from ``pipe``'s components: ``kind -> pipeline``, or ``kind -> str`` (why not)."""
    if diffusers is None:
        diffusers = importlib.import_module("diffusers")
    source = type(pipe).__name__
    out: dict[str, Any] = {}
    for kind, (auto_name, needs, _words) in KINDS.items():
        if kind != "inpaint" and _inpaint_only(pipe):
            out[kind] = (f"{source} holds an inpainting checkpoint (its denoiser takes the mask and "
                         "masked image as input channels), which cannot run without a mask")
            continue
        try:
            built = getattr(diffusers, auto_name).from_pipe(pipe)
        except Exception as exc:  # ValueError: no linked pipeline; missing components
            if _mapped(pipe) or (kind == "text2image" and _requires(pipe, "image")):
                out[kind] = f"{auto_name}.from_pipe({source}) failed: {one_line(exc)}"
                continue
            built = pipe  # a class diffusers does not map: judged by the parameters it names
        missing = [n for n in needs if n not in named_parameters(built.__call__)]
        if missing:
            out[kind] = (f"{type(built).__name__}.__call__ does not name "
                         f"{', '.join(m + '=' for m in missing)}")
            continue
        if hasattr(built, "set_progress_bar_config"):
            built.set_progress_bar_config(disable=True)
        out[kind] = built
    return out


def _mapped(pipe) -> bool:
    """Whether diffusers' AutoPipeline knows ``pipe``'s class (True when that cannot be told)."""
    try:
        from diffusers.pipelines.auto_pipeline import _get_model
    except ImportError:
        return True
    return _get_model(type(pipe).__name__) is not None


def _requires(pipe, name: str) -> bool:
    """Whether ``pipe.__call__`` has a parameter ``name`` without a default."""
    try:
        param = inspect.signature(pipe.__call__).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return param is not None and param.default is inspect.Parameter.empty


def create(target: str, options) -> DiffusersAdapter:
    """Factory for ``diffusers:PATH_OR_ID[?steps=N&device=D&dtype=T&name=value...]``."""
    source, params = split_params((target or "").strip(), what="diffusers")
    if not source:
        raise ModelSpecError("diffusers: no pipeline given; accepted: diffusers:PATH_OR_ID")
    device = str(params.pop("device", "cpu"))
    oversubscribe = _flag(params.pop("oversubscribe", "0"), "oversubscribe")
    batch = _batch(params.pop("batch", "1"))
    dtype = params.pop("dtype", None)
    if dtype is not None and dtype not in DTYPES:
        raise ModelSpecError(f"diffusers: dtype={dtype!r} is not one of {', '.join(DTYPES)}")
    if "steps" in params:
        params["num_inference_steps"] = params.pop("steps")
    torch, diffusers = import_backend()
    placement: list[str] = []
    if device == "auto":
        from ._devices import auto_device, cuda_device_count, xdist_worker

        worker, workers = xdist_worker(options)
        device, placement = auto_device(cuda_count=cuda_device_count(torch), worker=worker, workers=workers,
                                        oversubscribe=oversubscribe,
                                        visible=os.environ.get("CUDA_VISIBLE_DEVICES"))
    device = check_device(torch, device)
    path = Path(source)
    if not path.is_absolute() and (options.spec_base / path).exists():
        path = options.spec_base / path
    location = str(path.resolve()) if path.exists() else source
    pipe = load_pipeline(location, dtype=dtype, device=device)
    with quiet():
        pipelines = build_pipelines(pipe, diffusers)

    def make_generator(seed: int):
        return torch.Generator(device=device).manual_seed(seed)

    shown = dict(params)
    if dtype:
        shown["dtype"] = dtype
    adapter = DiffusersAdapter(
        pipelines, f"diffusers:{location}{format_params(shown)}", make_generator=make_generator,
        call_kwargs=params, source=type(pipe).__name__, cancel=getattr(options, "cancel", None),
        release=_releaser(torch, device),
    )
    adapter.device, adapter.placement, adapter.batch_size = device, tuple(placement), batch
    return adapter


def _releaser(torch, device: str):
    """What gives a CUDA device's cached memory back once the pipelines are dropped."""
    if not device.startswith("cuda"):
        return None

    def release():
        import gc

        gc.collect()
        with torch.cuda.device(device):
            torch.cuda.empty_cache()

    return release


#: Largest ``batch=``: images one pipeline call draws.
MAX_BATCH = 64


def _batch(value) -> int:
    text = str(value).strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_BATCH:
        raise ModelSpecError(f"diffusers: batch={one_line(value, 40)!r}; accepted: an integer from 1 to "
                             f"{MAX_BATCH} (images per pipeline call)")
    return int(text)


def _flag(value, name: str) -> bool:
    text = str(value).strip().lower()
    if text in ("1", "true", "yes"):
        return True
    if text in ("0", "false", "no"):
        return False
    raise ModelSpecError(f"diffusers: {name}={one_line(value, 40)!r}; accepted: 1 or 0")
