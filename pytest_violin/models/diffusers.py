"""``diffusers:PATH_OR_ID``: a local Hugging Face diffusers pipeline.

Optional: needs ``pip install 'pytest-violin[diffusers]'`` (torch,
diffusers, transformers). This module imports without them; the factory
raises :class:`~pytest_violin.errors.ModelSpecError` with the install hint.

Weights are loaded with ``local_files_only=True``: a path to a saved
pipeline, or a hub id already in the local Hugging Face cache; nothing is
downloaded during a test run. Parameters as a suffix:
``diffusers:./my-pipeline?steps=20&guidance_scale=5&device=cuda&dtype=float16``
(``steps`` is ``num_inference_steps``; other names are passed to the
pipeline call as they are).

Each request uses ``torch.Generator(device).manual_seed(request.seed)``.
Text-only samples call ``pipe(prompt=..., width=..., height=...)``; samples
with input images pass the source as ``image=`` when the pipeline takes
it, and for the mask task the mask, inverted (diffusers repaints the white
part; the task changes the black part), as ``mask_image=`` when the
pipeline takes it. Calls are serialised with a lock: one pipeline is not
safe to run from several threads.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import GenerationError, ModelSpecError
from ..imaging import as_rgb8
from ..secrets import redact
from ._params import format_params, split_params
from .request import GenerationRequest

__all__ = ["INSTALL_HINT", "DiffusersAdapter", "create", "load_pipeline"]

INSTALL_HINT = "pip install 'pytest-violin[diffusers]'"

_DTYPES = ("float32", "float16", "bfloat16")


def _import_backend():
    try:
        torch = importlib.import_module("torch")
        diffusers = importlib.import_module("diffusers")
    except ImportError as exc:
        raise ModelSpecError(
            f"diffusers: the optional dependencies are not installed ({exc.name or exc}); "
            f"install them with: {INSTALL_HINT}"
        ) from None
    return torch, diffusers


def load_pipeline(source: str, *, dtype: str | None = None, device: str = "cpu"):
    """Load a diffusers pipeline from a local path or the local hub cache.

    Parameters
    ----------
    source : str
        Directory of a saved pipeline, or a hub id already cached.
    dtype : str, optional
        ``float32``, ``float16`` or ``bfloat16``.
    device : str
        Torch device.

    Raises
    ------
    ModelSpecError
        When the extra is not installed or the pipeline cannot be loaded.
    """
    torch, diffusers = _import_backend()
    kwargs: dict[str, Any] = {"local_files_only": True}
    if dtype:
        kwargs["torch_dtype"] = getattr(torch, dtype)
    try:
        pipe = diffusers.DiffusionPipeline.from_pretrained(source, **kwargs)
    except Exception as exc:  # OSError, ValueError, EnvironmentError ...
        raise ModelSpecError(
            f"diffusers: could not load a pipeline from {source!r} with local_files_only=True "
            f"({type(exc).__name__}: {str(exc)[:200]}); give a saved pipeline directory or a "
            "hub id that is already in the local cache"
        ) from None
    pipe = pipe.to(device)
    if hasattr(pipe, "set_progress_bar_config"):
        pipe.set_progress_bar_config(disable=True)
    return pipe


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
    """Runs a diffusers pipeline object (see the module docstring).

    Parameters
    ----------
    pipeline : callable
        A diffusers pipeline (or anything called the same way).
    identity : str
        Secret-free identity, e.g. ``diffusers:/models/sd-tiny``.
    make_generator : callable
        ``make_generator(seed) -> generator`` passed as ``generator=``.
    call_kwargs : dict
        Extra keyword arguments for every call (``num_inference_steps``...).
    """

    cacheable = True

    def __init__(self, pipeline: Callable, identity: str, *, make_generator: Callable[[int], Any],
                 call_kwargs: dict | None = None):
        self.pipeline = pipeline
        self.identity = identity
        self.make_generator = make_generator
        self.call_kwargs = dict(call_kwargs or {})
        self._lock = threading.Lock()
        try:
            self._accepts = set(inspect.signature(pipeline.__call__).parameters)
        except (TypeError, ValueError):
            self._accepts = set()

    def _takes(self, name: str) -> bool:
        return name in self._accepts or "kwargs" in self._accepts

    def call_arguments(self, request: GenerationRequest) -> dict:
        """Keyword arguments of the pipeline call for ``request``."""
        from PIL import Image

        kwargs: dict[str, Any] = {
            "prompt": request.prompt,
            "width": int(request.width),
            "height": int(request.height),
            "generator": self.make_generator(int(request.seed)),
        }
        if request.images and self._takes("image"):
            kwargs["image"] = Image.fromarray(as_rgb8(request.images[0]))
            if request.task == "mask" and len(request.images) >= 2 and self._takes("mask_image"):
                mask = as_rgb8(request.images[1])
                kwargs["mask_image"] = Image.fromarray(255 - mask)
        kwargs.update(self.call_kwargs)
        return kwargs

    def generate(self, request: GenerationRequest):
        """Run the pipeline for ``request``; return RGB uint8."""
        kwargs = self.call_arguments(request)
        try:
            with self._lock:
                output = self.pipeline(**kwargs)
        except GenerationError:
            raise
        except Exception as exc:
            raise GenerationError(
                redact(f"diffusers pipeline failed: {type(exc).__name__}: {str(exc)[:200]}"), attempts=1
            ) from exc
        return as_rgb8(_first_image(output))

    def close(self) -> None:
        """Drop the pipeline (frees memory once nothing else holds it)."""
        self.pipeline = None

    def __repr__(self) -> str:
        return f"DiffusersAdapter({self.identity!r})"


def create(target: str, options) -> DiffusersAdapter:
    """Factory for ``diffusers:PATH_OR_ID[?steps=N&device=D&dtype=T&name=value...]``.

    Raises
    ------
    ModelSpecError
        Without the ``diffusers`` extra (with the install hint), for an
        empty target, a bad dtype, or a pipeline that cannot be loaded from
        local files.
    """
    source, params = split_params((target or "").strip(), what="diffusers")
    if not source:
        raise ModelSpecError("diffusers: no pipeline given; accepted: diffusers:PATH_OR_ID")
    device = str(params.pop("device", "cpu"))
    dtype = params.pop("dtype", None)
    if dtype is not None and dtype not in _DTYPES:
        raise ModelSpecError(f"diffusers: dtype={dtype!r} is not one of {', '.join(_DTYPES)}")
    if "steps" in params:
        params["num_inference_steps"] = params.pop("steps")
    torch, _ = _import_backend()
    path = Path(source)
    if not path.is_absolute() and (options.spec_base / path).exists():
        path = options.spec_base / path
    location = str(path.resolve()) if path.exists() else source
    pipe = load_pipeline(location, dtype=dtype, device=device)

    def make_generator(seed: int):
        return torch.Generator(device=device).manual_seed(seed)

    shown = dict(params)
    if dtype:
        shown["dtype"] = dtype
    return DiffusersAdapter(
        pipe, f"diffusers:{location}{format_params(shown)}", make_generator=make_generator,
        call_kwargs=params,
    )
