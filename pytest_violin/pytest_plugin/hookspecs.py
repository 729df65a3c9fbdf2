"""Hooks pytest-violin offers to other plugins (implement them in a ``conftest.py`` or a plugin).

Registered with ``pluginmanager.add_hookspecs`` in ``pytest_addhooks``; docs/plugin.md, "Hooks for
other plugins".
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_violin_sample_scored", "pytest_violin_session_results"]


@pytest.hookspec()
def pytest_violin_sample_scored(config, sample, images, result):
    """Called after one sample was scored, in the process that ran its test (an xdist worker's ``config``).

    ``images`` are the generated RGB uint8 arrays, one per repeat (empty when the generation failed;
    keep no reference: memory must stay flat). ``result`` is the :class:`~pytest_violin.results.SampleResult`;
    small JSON-able data put into ``result.extra`` travels to the controller with the test report.
    """


@pytest.hookspec()
def pytest_violin_session_results(config, store):
    """Called once, on the controller, at session finish, before the summary, with the
    :class:`~pytest_violin.results.ResultsStore` of every sample's result in collection order."""
