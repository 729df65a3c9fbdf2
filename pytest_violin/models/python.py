"""The ``python:MODULE:ATTR`` model: a callable from the user's own code (docs/models.md).

``ATTR`` is ``f(request) -> image``, an object with ``generate(request)``, or a class with such a method; the
module is imported with the rootdir, the invocation directory and the test directories on ``sys.path``. Images
are cached only with ``cacheable = True`` (the key cannot see code edits). What it raises decides the outcome:
:class:`~pytest_violin.errors.GenerationRefused` refused, :class:`~pytest_violin.errors.GenerationUnjudged` an
error, another :class:`~pytest_violin.errors.GenerationError` failed; any other exception is a
:class:`~pytest_violin.errors.GenerationCrashed` (failed, with the traceback's last frames; the same crash on
the first samples stops the run). So is an answer that is not an image (``None``, text, floats outside
``[0, 1]``): glue code that returns the wrong thing is as broken as glue code that raises.

Each call runs in a daemon thread and is waited for at most ``timeout`` seconds (``--violin-timeout``,
``evaluate(timeout=...)``): a call past it is a :class:`~pytest_violin.errors.GenerationUnjudged` (an error,
never scored) and is abandoned, still running until it returns, since a Python thread cannot be stopped.

An object may also draw several requests in one call: ``generate_batch(requests) -> list`` (one image per
request, in order) with ``batch_size`` (the most it takes, 1 to 256) and optionally ``batch_key(request)``;
the runner then groups compatible samples, each keeping its own seed (:mod:`pytest_violin.execution.batching`).
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
import traceback
from pathlib import Path

from .._threads import carried
from ..errors import (GenerationCancelled, GenerationCrashed, GenerationError, GenerationUnjudged, InvalidImageError,
                      ModelSpecError)

__all__ = ["TRACEBACK_FRAMES", "PythonAdapter", "create", "crash_reason"]

#: Innermost frames of a ``python:`` model's traceback shown in the sample's message.
TRACEBACK_FRAMES = 3

#: Seconds the caller waits for a call at a time: a signal or the cancel event is seen between slices.
_WAIT_SLICE = 0.2

_FORM = "python:MODULE:ATTR (e.g. python:my_models:generate or python:pkg.mod:Model)"


class PythonAdapter:
    """Wrap a user callable, or an object with ``generate``, as a model adapter.

    ``timeout``: the most seconds one call is waited for (None: as long as it takes); ``cancel``: the run's
    cancel event, which ends the wait at once.
    """

    def __init__(self, target: str, obj, *, timeout: float | None = None, cancel: threading.Event | None = None):
        self.identity = f"python:{target}"
        self._obj = obj
        self.timeout = None if timeout is None else float(timeout)
        self._cancel = cancel
        gen = getattr(obj, "generate", None)
        self._fn = gen if callable(gen) else obj
        self.cacheable = bool(getattr(obj, "cacheable", False))
        batch = getattr(obj, "generate_batch", None)
        self._batch_fn = batch if callable(batch) and not isinstance(obj, type) else None
        self.batch_size = None
        if self._batch_fn is not None:
            size = getattr(obj, "batch_size", None)
            if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 256:
                raise ModelSpecError(f"python:{target}: generate_batch needs a batch_size, the most "
                                     f"requests one call takes; got {size!r}; accepted: an integer "
                                     f"from 1 to 256")
            self.batch_size = size
            key = getattr(obj, "batch_key", None)
            if callable(key):
                self.batch_key = key

    def generate(self, request):
        """Call the user's function and return its image as an RGB uint8 array.

        A :class:`~pytest_violin.errors.GenerationError` passes as it is; any other exception, and an answer
        that is not an image, becomes a :class:`~pytest_violin.errors.GenerationCrashed`
        (:func:`crash_reason`, :func:`_not_an_image`); a call past ``timeout`` a
        :class:`~pytest_violin.errors.GenerationUnjudged`.
        """
        return self._image(self._bounded(self._fn, request))

    def generate_batch(self, requests) -> list:
        """Call the object's ``generate_batch`` (exceptions, answers and the time-out as :meth:`generate` treats
        them; the call as a whole gets ``timeout``); an element that is not an image is that request's
        :class:`~pytest_violin.errors.GenerationCrashed`."""
        if self._batch_fn is None:
            raise ModelSpecError(f"{self.identity} has no generate_batch")
        outputs = self._bounded(self._batch_fn, list(requests))
        try:
            outputs = list(outputs)
        except TypeError:
            return outputs  # no list at all: the batcher names it
        images = []
        for output in outputs:
            try:
                images.append(output if isinstance(output, BaseException) else self._image(output))
            except GenerationCrashed as exc:
                images.append(exc)
        return images

    def _bounded(self, fn, arg):
        """``fn(arg)`` (:meth:`_guarded`) in a daemon thread, waited for at most :attr:`timeout` seconds."""
        if self.timeout is None:
            return self._guarded(fn, arg)
        done = threading.Event()
        answer: list = []

        def call():
            try:
                answer.append((True, self._guarded(fn, arg)))
            except BaseException as exc:  # handed to the waiting caller
                answer.append((False, exc))
            finally:
                done.set()

        threading.Thread(target=carried(call), daemon=True, name="violin-python-call").start()
        deadline = time.monotonic() + self.timeout
        # in slices: a signal taken by another thread reaches the main thread, and Ctrl-C ends the wait
        while not done.wait(min(_WAIT_SLICE, max(0.0, deadline - time.monotonic()))):
            if self._cancel is not None and self._cancel.is_set():
                raise GenerationCancelled("cancelled: the run was interrupted")
            if time.monotonic() >= deadline:
                raise GenerationUnjudged(
                    f"timed out: {self.identity} did not return within {self.timeout:g} s (--violin-timeout, "
                    f"evaluate(timeout=...)); the call goes on in the background until it returns")
        ok, value = answer[0]
        if not ok:
            raise value
        return value

    @staticmethod
    def _guarded(fn, arg):
        """``fn(arg)``; an exception other than a :class:`~pytest_violin.errors.GenerationError` becomes a
        :class:`~pytest_violin.errors.GenerationCrashed`."""
        try:
            return fn(arg)
        except GenerationError:
            raise
        except Exception as exc:
            raise GenerationCrashed(crash_reason(exc, skip=1)) from exc

    def _image(self, output):
        """``output`` as an RGB uint8 array, or a :class:`~pytest_violin.errors.GenerationCrashed` naming what it
        is (:func:`~pytest_violin.imaging.as_rgb8` decides what is an image)."""
        from ..imaging import ACCEPTED_INPUTS, as_rgb8

        try:
            return as_rgb8(output)
        except InvalidImageError as exc:
            raise GenerationCrashed(f"{self.identity} returned {_not_an_image(output, exc)}, not an image; "
                                    f"accepted: {ACCEPTED_INPUTS}") from None

    def close(self) -> None:
        """Call the object's ``close()`` if it has one."""
        close = getattr(self._obj, "close", None)
        if callable(close) and not isinstance(self._obj, type):
            close()


def crash_reason(exc: BaseException, *, skip: int = 0, frames: int = TRACEBACK_FRAMES) -> str:
    """``exc`` on one line: its type, first line and innermost ``frames`` (outer ``skip`` left out):
    ``Type: first line; traceback (most recent call last): FILE:LINE in FUNC: CODE > ...``.
    """
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    stack = traceback.extract_tb(exc.__traceback__)[skip:][-frames:]
    if not stack:
        return text
    shown = []
    for frame in stack:
        where = "/".join(Path(frame.filename).parts[-2:])
        code = " ".join((frame.line or "").split())
        code = code if len(code) <= 80 else code[:77] + "..."
        shown.append(f"{where}:{frame.lineno} in {frame.name}" + (f": {code}" if code else ""))
    return f"{text}; traceback (most recent call last): " + " > ".join(shown)


def _not_an_image(output, exc: InvalidImageError) -> str:
    """What ``output`` is, in words that stay the same from sample to sample (neither its size nor its exact
    values), so the same wrong answer on the first samples stops the run as the same exception does."""
    import numpy as np

    problem = getattr(exc, "problem", None) or "not an image"
    if output is None:
        return "None"
    if not isinstance(output, np.ndarray):
        kind = type(output)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        return f"a value of type {name} ({problem})"
    dtype, ndim = output.dtype, output.ndim
    if output.size == 0:
        return f"an empty array of {dtype}"
    if ndim not in (2, 3):
        return f"a {ndim}-D array of {dtype}"
    if ndim == 3 and output.shape[2] not in (1, 3, 4):
        return f"an array of {dtype} with {output.shape[2]} channels"
    if dtype.kind == "f" and not np.isfinite(output).all():
        return f"an array of {dtype} with NaN or infinite values"
    if dtype.kind == "f" and (output.min() < 0 or output.max() > 1):
        low, high = float(output.min()), float(output.max())
        return f"an array of {dtype} with values in [{-_scale(-low) if low < 0 else 0}, {_scale(high)}]"
    if dtype.kind != "f" and dtype not in (np.uint8, np.uint16, np.bool_):
        return f"an array of {dtype}"
    return f"an array of {dtype} ({problem})"


def _scale(value: float):
    """The smallest of 0, 1, 255 and 65535 at least ``value`` (``value`` itself above them all)."""
    for scale in (0, 1, 255, 65535):
        if value <= scale:
            return scale
    return float(f"{value:.6g}")


def _search_paths(options) -> list[str]:
    paths = []
    extra = dict(getattr(options, "extra", {}) or {})
    for p in (getattr(options, "rootdir", None), *extra.get("python_paths", ())):
        if p is not None:
            paths.append(str(Path(p).resolve()))
    paths.append(str(Path.cwd()))
    return paths


def _names_the_module(exc: ModuleNotFoundError, module_name: str) -> bool:
    """Whether ``exc`` (raised importing ``module_name``) says the module itself or a parent is missing."""
    missing = exc.name
    if not missing:
        return True
    return module_name == missing or module_name.startswith(missing + ".")


def _where(exc: BaseException) -> str:
    """`` at FILE:LINE`` of the innermost frame outside importlib, or ``""``."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen ") and "importlib" not in Path(f.filename).parts]
    if not frames:
        return ""
    return f" at {frames[-1].filename}:{frames[-1].lineno}"


def create(target: str, options=None) -> PythonAdapter:
    """Factory for ``python:MODULE:ATTR``; a failing import inside the module is named in the error."""
    module_name, sep, attr = (target or "").partition(":")
    module_name, attr = module_name.strip(), attr.strip()
    if not sep or not module_name or not attr:
        raise ModelSpecError(f"model spec 'python:{target}' is malformed; accepted: {_FORM}")
    for p in reversed(_search_paths(options)):
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if _names_the_module(exc, module_name):
            raise ModelSpecError(
                f"model spec 'python:{target}': module {module_name!r} not found ({exc}); "
                f"searched the rootdir, the current directory and the test directories; "
                f"accepted: {_FORM}"
            ) from None
        # the module exists; an import inside it failed (e.g. torch not installed)
        raise ModelSpecError(
            f"model spec 'python:{target}': importing {module_name!r} failed{_where(exc)}: "
            f"it imports {exc.name!r}, which is not installed ({type(exc).__name__}: {exc}); "
            f"accepted: a module whose own imports succeed"
        ) from None
    except Exception as exc:
        raise ModelSpecError(
            f"model spec 'python:{target}': importing {module_name!r} failed{_where(exc)}: "
            f"{type(exc).__name__}: {exc}; accepted: a module that imports without error"
        ) from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ModelSpecError(
                f"model spec 'python:{target}': module {module_name!r} has no attribute {attr!r}; "
                f"accepted: {_FORM}"
            )
        obj = getattr(obj, part)
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:
            raise ModelSpecError(
                f"model spec 'python:{target}': {attr} could not be instantiated without "
                f"arguments: {type(exc).__name__}: {exc}"
            ) from None
    if not callable(getattr(obj, "generate", None)) and not callable(obj):
        raise ModelSpecError(
            f"model spec 'python:{target}': {attr!r} is a {type(obj).__name__}, neither callable "
            f"nor an object with a generate(request) method; accepted: {_FORM}"
        )
    return PythonAdapter(target, obj, timeout=getattr(options, "timeout", None),
                         cancel=getattr(options, "cancel", None))
