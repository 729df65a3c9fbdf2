"""Property tests: fresh colors, ratios, placements and masks on every run.

Hypothesis draws new cases each run (10 per test under the ``violin``
profile, see conftest.py), shrinks a failure to the simplest case that still
fails (toward black, a 50% split, a small centred circle) and keeps it in
``.hypothesis/`` so the next run, or the next CI run that restores that
directory, tries it first. Pin a case for good with ``@example``.
"""

from __future__ import annotations

from hypothesis import example, given

from pytest_violin import assert_obeys
from pytest_violin.strategies import (color_samples, mask_samples, ratio_samples,
                                      shape_samples)
from pytest_violin.suite import color_sample, ratio_sample

SIZE = 256


@given(sample=color_samples(width=SIZE, height=SIZE))
@example(sample=color_sample("#7F6129", notation="hex", width=SIZE, height=SIZE))  # olive brown
def test_any_color_in_any_notation(sample, violin_generate, violin_limits):
    assert_obeys(violin_generate(sample), sample, thresholds=violin_limits)


@given(sample=ratio_samples(min_value=0.1, max_value=0.9, width=SIZE, height=SIZE))
@example(sample=ratio_sample(0.315, ["#0000FF", "#FF0000"], width=SIZE, height=SIZE))
def test_unusual_split_ratios(sample, violin_generate, violin_limits):
    # the paper's "aesthetic inertia": models drift toward a 50/50 split
    assert_obeys(violin_generate(sample), sample, thresholds=violin_limits)


@given(sample=shape_samples(width=SIZE, height=SIZE, min_size=0.1, max_size=0.4))
def test_shape_placements(sample, violin_generate, violin_limits):
    assert_obeys(violin_generate(sample), sample, thresholds=violin_limits)


@given(sample=mask_samples(width=128, height=128))
def test_masks_of_every_kind(sample, violin_generate, violin_limits):
    assert_obeys(violin_generate(sample), sample, thresholds=violin_limits)
