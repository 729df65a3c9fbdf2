"""Ground-truth rendering: pure functions from a sample spec to pixels.

Every function returns a new ``(height, width, 3)`` uint8 RGB array and
depends on nothing but its arguments (and, for masks, the cached base
photographs). The drawing primitives live in
:mod:`pytest_violin.suite.drawing` (re-exported here); which primitive
draws which spec kind is each task family's business
(:mod:`pytest_violin.tasks`).
"""

from __future__ import annotations

import numpy as np

from .. import tasks
from .drawing import __all__ as _drawing_names
from .drawing import (apply_mask, render_blocks, render_border, render_dots, render_mask_inputs,  # noqa: F401
                      render_ratio, render_shape, shape_pixels)

# the drawing primitives under their old names, then what this module adds
__all__ = [*_drawing_names, "render_spec", "render_inputs", "RENDERABLE_KINDS"]

#: Spec kinds :func:`render_spec` can render (those of the built-in task
#: families; :func:`pytest_violin.tasks.renderable_kinds` includes families
#: registered later).
RENDERABLE_KINDS = tasks.renderable_kinds()


def render_spec(spec, width: int, height: int) -> np.ndarray:
    """Render the ground truth of any renderable spec.

    Parameters
    ----------
    spec : mapping
        A sample spec whose ``kind`` is in :data:`RENDERABLE_KINDS` (or
        rendered by a family registered since).
    width, height : int
        Image size.

    Returns
    -------
    numpy.ndarray
        ``(height, width, 3)`` uint8 RGB.

    Raises
    ------
    SuiteError
        For a kind no task family renders.
    """
    return tasks.render(spec, int(width), int(height))


def render_inputs(spec, width: int, height: int) -> tuple:
    """Input images of a spec: ``(source, mask_rgb)`` for masks, ``()`` otherwise."""
    return tasks.render_inputs(spec, width, height)
