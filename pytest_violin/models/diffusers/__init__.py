"""``diffusers:PATH_OR_ID``: a local Hugging Face diffusers pipeline.

Optional: needs ``pip install 'pytest-violin[diffusers]'`` (torch,
diffusers, transformers). This module imports without them; the factory
raises :class:`~pytest_violin.errors.ModelSpecError` with the install hint.

Weights are loaded once with ``local_files_only=True``: a path to a saved
pipeline, or a hub id already in the local Hugging Face cache; nothing is
downloaded during a test run. Parameters as a suffix:
``diffusers:./my-pipeline?steps=20&guidance_scale=5&device=cuda&dtype=float16``
(``steps`` is ``num_inference_steps``; other names go to every pipeline
whose ``__call__`` names them, and a name no pipeline names is a usage
error).

``device=auto`` puts each pytest-xdist worker on a GPU of its own: worker
``gwK`` on ``cuda:K mod G``, G the CUDA devices visible (``CUDA_VISIBLE_DEVICES``
is respected: ``cuda:0`` is its first entry); more workers than GPUs are
refused unless ``oversubscribe=1`` lets them share. A single process takes
the first GPU, or the cpu where there is none. The session header says
which worker has which device.

``batch=B`` draws up to B compatible samples (same kind of request, task and
size) in one pipeline call, each with its own ``torch.Generator``, so a
sample's image does not depend on its neighbours; the cache, the call count
and Ctrl-C stay per sample (:mod:`pytest_violin.execution.batching`).

One folder serves the whole suite. From the loaded pipeline the adapter
builds, with diffusers' ``AutoPipelineFor*.from_pipe`` (same components,
no second load), one pipeline per kind of request:

* ``text2image`` (``AutoPipelineForText2Image``): requests without input
  images, called with ``prompt``, ``width``, ``height``, ``generator``;
* ``image2image`` (``AutoPipelineForImage2Image``): requests with one input
  image (not the mask task), which goes as ``image=``;
* ``inpaint`` (``AutoPipelineForInpainting``): mask requests (source image
  and mask), the source as ``image=`` and the mask, inverted (diffusers
  repaints white; the task changes the black part), as ``mask_image=``.

A kind is usable only if its pipeline's ``__call__`` *names* the
parameters the request needs (``**kwargs`` accepts nothing: Stable
Diffusion's text-to-image pipeline has ``**kwargs`` and would drop an
image). A request whose kind the folder cannot serve fails with one line
naming the kind of pipeline it needs; input images are always used or the
sample fails. Each request uses ``torch.Generator(device).manual_seed(seed)``.
Calls are serialised with a lock (one pipeline is not safe to run from
several threads); :attr:`DiffusersAdapter.max_concurrency` says so to the
runner. diffusers' and transformers' progress bars, log messages and
warnings are kept out of the output while loading and generating.

The pieces: :mod:`.backend` (optional imports, quiet libraries, device,
loading), :mod:`.adapter` (request kinds and the adapter); this module
builds the pipeline of each kind from the loaded one and holds the factory.
"""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path
from typing import Any

from ...errors import ModelSpecError
from .._params import format_params, split_params
from .adapter import KINDS, DiffusersAdapter, named_parameters, request_kind
from .._devices import auto_device, cuda_device_count, xdist_worker
from .backend import DTYPES, INSTALL_HINT, check_device, import_backend, load_pipeline, one_line, quiet

__all__ = [
    "INSTALL_HINT",
    "KINDS",
    "DiffusersAdapter",
    "build_pipelines",
    "check_device",
    "create",
    "load_pipeline",
    "named_parameters",
    "quiet",
    "request_kind",
]


def _inpaint_only(pipe) -> bool:
    """Whether the denoiser takes latents + mask + masked image (an inpainting checkpoint)."""
    denoiser = getattr(pipe, "unet", None) or getattr(pipe, "transformer", None)
    vae = getattr(pipe, "vae", None)
    try:
        return int(denoiser.config.in_channels) == 2 * int(vae.config.latent_channels) + 1
    except (AttributeError, TypeError, ValueError):
        return False


def build_pipelines(pipe, diffusers=None) -> dict:
    """One pipeline per kind, built from ``pipe``'s components, or why there is none.

    Parameters
    ----------
    pipe : DiffusionPipeline
        The loaded pipeline.
    diffusers : module, optional
        The diffusers module (imported when omitted).

    Returns
    -------
    dict
        ``kind -> pipeline`` for the kinds the folder serves and
        ``kind -> str`` (one-line reason) for the others.
    """
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
    """Factory for ``diffusers:PATH_OR_ID[?steps=N&device=D&dtype=T&name=value...]``.

    Raises
    ------
    ModelSpecError
        Without the ``diffusers`` extra (with the install hint), for an
        empty target, a bad dtype or device, a pipeline that cannot be
        loaded from local files, a folder that serves no kind of request,
        or a suffix parameter no pipeline names.
    """
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
    adapter.device = device
    adapter.placement = tuple(placement)
    adapter.batch_size = batch
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
