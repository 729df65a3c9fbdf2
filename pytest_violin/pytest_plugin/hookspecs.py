"""Hooks pytest-violin offers to other plugins.

Registered with ``pluginmanager.add_hookspecs`` in ``pytest_addhooks``.
Implement them in a ``conftest.py`` or a plugin module.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_violin_sample_scored", "pytest_violin_session_results"]


@pytest.hookspec()
def pytest_violin_sample_scored(config, sample, images, result):
    """Called after one sample was scored, in the process that ran its test.

    Parameters
    ----------
    config : pytest.Config
        The config of that process (an xdist worker's config in a
        distributed run).
    sample : Sample
        The sample.
    images : list of numpy.ndarray
        The generated RGB uint8 images, one per repeat (empty when the
        generation failed). Do not keep references: memory must stay flat.
    result : SampleResult
        The result; an implementation may put small JSON-able data (e.g. a
        thumbnail as base64 PNG) into ``result.extra``. It travels to the
        controller with the test report.
    """


@pytest.hookspec()
def pytest_violin_session_results(config, store):
    """Called once, on the controller, at session finish, before the summary.

    Parameters
    ----------
    config : pytest.Config
        The controller's config.
    store : ResultsStore
        Every sample's result of the run, in collection order.
    """
