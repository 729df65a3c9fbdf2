"""Dispatch from a sample to the metric functions of its task (see :mod:`pytest_violin.tasks`)."""

from __future__ import annotations

import numpy as np

from .. import tasks
from ..tasks.color import fuzzy_target

__all__ = ["score_image", "fuzzy_target"]


def score_image(sample, image: np.ndarray, profile: str):
    """Score an RGB uint8 image of the sample's size (see :meth:`Sample.score`).

    The sample's task family scores it (:func:`pytest_violin.tasks.score`).
    """
    return tasks.score(sample, image, profile)
