"""Drive generations against one URL in a fresh process; print its peak RSS.

Usage: ``python _memory_driver.py URL KIND,KIND,... CONCURRENCY [ADDRESS_SPACE_LIMIT]``

One sample per KIND (its id is ``KIND/N``, so the server can answer by
kind), all planned at once through the real :class:`Runner`. Prints one
JSON line: ``{"peak_rss": bytes, "outcomes": {sample id: "ok" or reason}}``
(the peak of this process alone: :func:`_peak_rss`).
Only APIs that exist in older versions are used, so the same script
measures a checkout from before a fix. ``ADDRESS_SPACE_LIMIT`` (bytes)
caps the process with RLIMIT_AS so a runaway answer cannot take the
machine down (it then fails with MemoryError).
"""

from __future__ import annotations

import json
import resource
import sys
from dataclasses import dataclass


@dataclass
class _Sample:
    id: str
    prompt: str = "p"
    width: int = 8
    height: int = 8
    task: str = "color"
    inputs: tuple = ()


def _peak_rss() -> int:
    """This process's peak resident memory, in bytes.

    Linux: ``VmHWM`` of ``/proc/self/status``, the high-water mark of this
    program's own memory. Not ``ru_maxrss``: Linux carries it over from the
    parent across fork and exec, so a driver started by a test process that
    holds 600 MB of answers would report at least that.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def main(argv) -> int:
    url, kinds, concurrency = argv[1], argv[2].split(","), int(argv[3])
    if len(argv) > 4 and int(argv[4]):
        limit = int(argv[4])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from pytest_violin.models import AdapterOptions, resolve_model
    from pytest_violin.execution.runner import Runner

    samples = [_Sample(id=f"{kind}/{i}") for i, kind in enumerate(kinds)]
    adapter = resolve_model(url, AdapterOptions(concurrency=concurrency, retries=0, timeout=60.0))
    runner = Runner(adapter, concurrency=concurrency)
    runner.plan(samples)
    outcomes = {}
    for sample in samples:
        gen = runner.get(sample)
        outcomes[sample.id] = "ok" if gen.error is None else str(gen.error)[:300]
    runner.close()
    adapter.close()
    peak = _peak_rss()
    import pytest_violin

    print(json.dumps({"peak_rss": peak, "outcomes": outcomes, "package": pytest_violin.__file__}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
