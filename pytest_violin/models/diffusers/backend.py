"""Loading a diffusers pipeline: the optional imports, quiet libraries, the device, the weights.

Everything here runs once, when the ``diffusers:`` spec is resolved:
:func:`import_backend` imports torch and diffusers (or raises the install
hint), :func:`check_device` checks the device this machine has,
:func:`load_pipeline` loads the weights from local files only, and
:func:`quiet` keeps the libraries' progress bars, logs and warnings out of
the output (also around each generation).
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from typing import Any

from ...errors import ModelSpecError

__all__ = ["INSTALL_HINT", "DTYPES", "check_device", "import_backend", "load_pipeline", "one_line", "quiet"]

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

    Sets both libraries' log verbosity to ERROR and turns their progress
    bars off for the duration, then restores what was set before.

    Parameters
    ----------
    python_warnings : bool
        Also ignore Python warnings (``warnings.catch_warnings``, which is
        process-wide: use it only while no test runs, e.g. when loading).
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
    """Load a diffusers pipeline from a local path or the local hub cache, quietly.

    Parameters
    ----------
    source : str
        Directory of a saved pipeline, or a hub id already cached.
    dtype : str, optional
        ``float32``, ``float16`` or ``bfloat16``.
    device : str
        Torch device, already checked with :func:`check_device`.

    Raises
    ------
    ModelSpecError
        When the extra is not installed, the pipeline cannot be loaded, or
        it cannot be moved to ``device``.
    """
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
    """Check that ``device`` names a torch device this machine has.

    Raises
    ------
    ModelSpecError
        Naming the value: a string torch does not read as a device, or a
        CUDA/MPS device this machine does not have.
    """
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

