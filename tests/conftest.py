"""Shared test helpers: tiny fake samples that follow the ``Sample`` interface."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from pytest_violin.imaging import as_rgb8, resize_rgb8
from pytest_violin.metrics import Metrics


@dataclass(frozen=True, eq=False)
class FakeSample:
    """A solid-color sample: metrics are absolute channel errors in [0, 1]."""

    id: str
    color: tuple = (200, 40, 40)
    task: str = "color"
    suite: str = "fake"
    variation: str = "v1"
    width: int = 8
    height: int = 8
    prompt: str = "a pure red image"
    layout: str = "single"
    control: str | None = None
    spec: dict = field(default_factory=dict)
    inputs: tuple = ()
    metric_names: tuple = ("r", "g", "b")

    def expected(self):
        out = np.empty((self.height, self.width, 3), np.uint8)
        out[:] = self.color
        return out

    def score(self, image, *, profile="violin"):
        img = as_rgb8(image)
        info = {}
        if img.shape[:2] != (self.height, self.width):
            info = {"original_size": (img.shape[1], img.shape[0]), "resized": True}
            img = resize_rgb8(img, self.width, self.height)
        err = np.abs(img.astype(float) - np.array(self.color, float)).mean(axis=(0, 1)) / 255.0
        return Metrics(dict(zip(self.metric_names, err)), task=self.task, profile=profile, info=info)


@pytest.fixture
def fake_samples():
    return [FakeSample(id=f"color/v1/red/t{i:02d}") for i in range(6)]
