"""Process helpers shared by the interrupt tests and benchmarks/bench_robustness.py."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["alive_in_group", "run_hanging_model"]

#: A ``python:`` model whose every call waits for ever (``python:hanging_model:generate``).
HANGING_MODEL = '''
    import threading

    NEVER = threading.Event()

    def generate(request):
        NEVER.wait()
'''


def run_hanging_model(pytester, *args):
    """A session of ``python:hanging_model:generate`` with ``args``, in its own process: the hanging calls are
    abandoned daemon threads, which end with it."""
    pytester.makepyfile(hanging_model=HANGING_MODEL)
    return pytester.runpytest_subprocess("--violin-model=python:hanging_model:generate", "--violin-tasks=color",
                                         "-p", "no:cacheprovider", *args, timeout=240)


def alive_in_group(pgid: int) -> list[int]:
    """Pids of the process group ``pgid`` that still run (zombies excluded); Linux ``/proc``."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry))
    return alive
