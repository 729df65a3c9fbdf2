"""Shared test helpers: tiny fake samples that follow the ``Sample`` interface.

Hypothesis: with ``CI`` set (as ``.ci/run`` runs), every property test of this
suite runs under the ``violin-ci`` profile: derandomized (the same examples on
every run and machine, so a red CI is a real failure, never a lucky draw), no
example database, no deadline (the CI machine is shared) and at most
:data:`CI_MAX_EXAMPLES` examples (tests that set ``max_examples`` themselves
keep theirs). Locally the default profile draws fresh examples; choose the CI
one with ``pytest --hypothesis-profile=violin-ci``.

Every run ends with a list of its 10 slowest tests (``tests/_slowest.py``),
so a test that makes the default run longer is seen the day it lands.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import settings

from pytest_violin.imaging import as_rgb8, resize_rgb8
from pytest_violin.metrics import Metrics

# every run of these tests ends with its 10 slowest (tests/_slowest.py), so growth is seen
from _slowest import pytest_configure  # noqa: E402,F401

#: Name of this suite's derandomized hypothesis profile.
CI_PROFILE = "violin-ci"

#: Examples per property test under :data:`CI_PROFILE` (hypothesis's default is 100).
CI_MAX_EXAMPLES = 50


def _running_in_ci(environ=os.environ) -> bool:
    """Whether ``CI`` is set to anything but an empty or false-like value."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


settings.register_profile(CI_PROFILE, derandomize=True, database=None, deadline=None,
                          max_examples=CI_MAX_EXAMPLES)
if _running_in_ci():
    # --hypothesis-profile, applied by hypothesis's plugin after this import, still wins
    settings.load_profile(CI_PROFILE)



@pytest.fixture
def hypothesis_profile_kept():
    """Put this process's hypothesis profile back after the test.

    An in-process pytester run that loads a profile (``--hypothesis-profile``, a
    conftest's ``settings.load_profile``) changes the settings of the whole
    worker; without this, the later property tests of that worker would run
    under it instead of :data:`CI_PROFILE`.
    """
    outer = settings.default
    try:
        yield
    finally:
        settings.register_profile("violin-tests-outer", outer)
        settings.load_profile("violin-tests-outer")

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


@pytest.fixture(scope="session", autouse=True)
def _import_heavy_modules_once():
    """Render and score one sample of every task family before any pytester run.

    pytester's in-process runs drop the modules first imported during a run,
    and extension modules (numpy.fft, scikit-image's, OpenCV's) cannot be
    imported twice in one process: import everything a run may need here,
    outside the runs, so no test depends on which test ran first.
    """
    import hypothesis  # noqa: F401
    import requests  # noqa: F401

    import pytest_violin.models.http  # noqa: F401
    # the modules many runs load lazily (the adapters of most runs, the report folder, the batch
    # path): imported once here, not assertion-rewritten again by every run that loads them
    import pytest_violin.models.batch._openai  # noqa: F401
    import pytest_violin.models.oracle  # noqa: F401
    import pytest_violin.models.python  # noqa: F401
    import pytest_violin.pytest_plugin._batch  # noqa: F401
    import pytest_violin.report.folder  # noqa: F401
    from pytest_violin.models.request import GenerationRequest
    from pytest_violin.suite import load_suite

    for name in ("violin", "violin-extra"):
        for sample in load_suite(name):
            if sample.task in _seen:
                continue
            _seen.add(sample.task)
            sample.score(sample.expected(), profile="violin")
            sample.score(sample.expected(), profile="strict")
            list(GenerationRequest.from_sample(sample, base_seed=0).images)


_seen: set = set()


#: Every test of tests/e2e is an end-to-end run (whole pytest sessions, processes, the example
#: project): marked ``e2e``, left out of the default run and run in CI's own e2e step
#: (``python -m pytest -n 2 -m "slow or e2e"``), so the default run stays short.
E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e")


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if os.path.dirname(str(item.path)) == E2E:
            item.add_marker(pytest.mark.e2e)
