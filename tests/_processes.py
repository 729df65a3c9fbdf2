"""Process helpers shared by the interrupt tests and benchmarks/bench_robustness.py."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["alive_in_group"]


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
