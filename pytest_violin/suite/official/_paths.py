"""Paths from outside must stay inside their folder (symlinks followed)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["inside"]


def inside(path, folder) -> bool:
    """Whether ``path`` resolves (symlinks followed) to ``folder`` or below it."""
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, base]) == base
