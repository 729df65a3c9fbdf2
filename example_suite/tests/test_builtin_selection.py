"""Built-in Violin samples, selected per test with the ``violin`` marker.

The plugin also collects the selection configured in ``pyproject.toml``
(``violin_tasks`` / ``violin_limit``) as ``violin::<sample id>`` items on its
own; the tests below add focused checks with their own selection and limits.
"""

from __future__ import annotations

import pytest

from pytest_violin import assert_obeys


@pytest.mark.violin(tasks="color", limit=6)
def test_named_colors_within_team_limits(violin_sample, violin_generate, violin_limits):
    assert_obeys(violin_generate(violin_sample), violin_sample, thresholds=violin_limits)


@pytest.mark.violin(tasks="shape", limit=6, thresholds={"shape.dist": 0.01})
def test_shapes_are_placed_precisely(violin_sample, violin_generate, violin_check):
    # violin_check applies the marker's limits on top of the configured ones
    violin_check(violin_sample, violin_generate(violin_sample))


@pytest.mark.violin(tasks="mask", limit=3)
def test_masks_leak_nothing(violin_sample, violin_generate):
    assert_obeys(violin_generate(violin_sample), violin_sample, leak=0.01)
