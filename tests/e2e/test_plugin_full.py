"""The full violin suite with the oracle passes (the README's main command)."""

import pytest


@pytest.mark.slow
def test_full_violin_suite_with_oracle_passes(pytester):
    result = pytester.runpytest_subprocess("--violin-model=oracle", "-n", "2", "-q", "-p", "no:randomly",
                                           timeout=600)
    result.assert_outcomes(passed=7745)
    assert result.stdout.str().count("violin summary") == 1
