"""Where a local model runs: one GPU per pytest-xdist worker (``device=auto``).

Internal to the models package. :func:`auto_device` is a pure function of the
visible CUDA device count, this worker's number and the run's worker count;
:func:`xdist_worker` reads those from the plugin's adapter options or from
the variables pytest-xdist sets in its workers; :func:`cuda_device_count`
asks torch (``CUDA_VISIBLE_DEVICES`` applied).
"""

from __future__ import annotations

import os

from ..errors import ModelSpecError

__all__ = ["auto_device", "cuda_device_count", "xdist_worker"]


def cuda_device_count(torch) -> int:
    """CUDA devices this process sees (``CUDA_VISIBLE_DEVICES`` already applied by torch)."""
    try:
        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except Exception:  # a broken driver: no device to use
        return 0


def _physical(index: int, visible: str | None) -> str:
    """What ``cuda:index`` is on the machine: its ``CUDA_VISIBLE_DEVICES`` entry, when set."""
    entries = [e.strip() for e in (visible or "").split(",") if e.strip()]
    if visible is None or index >= len(entries):
        return ""
    return f" (CUDA_VISIBLE_DEVICES entry {entries[index]!r})"


def auto_device(*, cuda_count: int, worker: int | None = None, workers: int | None = None,
                oversubscribe: bool = False, visible: str | None = None) -> tuple[str, list[str]]:
    """The device ``device=auto`` means here, and a line per worker saying which has which.

    Parameters
    ----------
    cuda_count : int
        CUDA devices visible to this process (:func:`cuda_device_count`).
    worker : int, optional
        This pytest-xdist worker's number (``gw3`` -> 3); None outside a worker.
    workers : int, optional
        How many xdist workers the run has; None (or 0) without xdist.
    oversubscribe : bool
        ``?oversubscribe=1``: more workers than GPUs share them (worker k on
        GPU k mod the count) instead of being refused.
    visible : str, optional
        ``CUDA_VISIBLE_DEVICES`` as set (named in the lines).

    Returns
    -------
    tuple of (str, list of str)
        This process's device (``cuda:K``, or ``cpu`` without a CUDA device),
        and one line per worker (or one for a single process).

    Raises
    ------
    ModelSpecError
        More workers than GPUs without ``oversubscribe``: each worker loads
        the whole pipeline onto its device.
    """
    if cuda_count <= 0:
        return "cpu", ["device=auto: no CUDA device visible; every process generates on the cpu"]
    if not workers:
        return "cuda:0", [f"device=auto: cuda:0{_physical(0, visible)}, the first of {cuda_count} "
                          f"visible CUDA device(s)"]
    if workers > cuda_count and not oversubscribe:
        raise ModelSpecError(
            f"diffusers: device=auto with {workers} xdist workers but {cuda_count} CUDA device(s) "
            f"visible{f' (CUDA_VISIBLE_DEVICES={visible!r})' if visible is not None else ''}: each "
            f"worker loads the pipeline onto a GPU of its own; accepted: -n {cuda_count} or fewer, "
            f"or ?oversubscribe=1 to share the GPUs (worker k on GPU k mod {cuda_count})")
    lines = [f"device=auto: gw{k} -> cuda:{k % cuda_count}{_physical(k % cuda_count, visible)}"
             for k in range(workers)]
    if workers > cuda_count:
        lines.append(f"device=auto: {workers} workers share {cuda_count} GPU(s) (?oversubscribe=1)")
    device = "cuda:0" if worker is None else f"cuda:{worker % cuda_count}"
    return device, lines


def xdist_worker(options) -> tuple[int | None, int | None]:
    """``(this worker's number, the run's worker count)`` under pytest-xdist, else ``(None, None)``.

    From ``options.extra["xdist"]`` (the plugin's; in the controller the
    count alone; None: no xdist), else from the variables pytest-xdist sets in its workers
    (``PYTEST_XDIST_WORKER=gw3``, ``PYTEST_XDIST_WORKER_COUNT``).
    """
    extra = getattr(options, "extra", None) or {}
    given = extra.get("xdist")
    if given:
        name, count = given
    elif "xdist" in extra:  # the plugin says: no pytest-xdist in this run (whatever the environment)
        return None, None
    else:
        name, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    worker = None
    if isinstance(name, str) and name.startswith("gw") and name[2:].isdigit():
        worker = int(name[2:])
    try:
        workers = int(count) if count is not None else None
    except (TypeError, ValueError):
        workers = None
    return worker, workers if workers and workers > 0 else None
